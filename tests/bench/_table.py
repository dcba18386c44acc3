# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rows, goals and the Markdown tables the bench prints.

Benchmark support for gpuops.cuda_venv: not part of the collection's API.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional

from ._measure import Measurement

COLUMNS = ("what", "median s", "runs", "ratio vs anchor", "peak MiB", "goal", "met?")


@dataclass(frozen=True)
class Goal:
    """At most ``max_ratio`` times the row's anchor, or at most ``max_seconds``."""

    max_ratio: Optional[float] = None
    max_seconds: Optional[float] = None

    def text(self, anchor: Optional[str]) -> str:
        if self.max_ratio is not None:
            return "<= %gx %s" % (self.max_ratio, anchor)
        return "< %g s" % self.max_seconds

    def met(self, seconds: float, ratio: Optional[float]) -> bool:
        if self.max_ratio is not None:
            return ratio is not None and ratio <= self.max_ratio
        return seconds < self.max_seconds


@dataclass(frozen=True)
class Row:
    key: str
    what: str
    measurement: Measurement
    anchor: Optional[str] = None  # key of the row this one is compared with
    goal: Optional[Goal] = None
    label: Optional[str] = None  # short name used where another row is compared with this one

    @property
    def short(self) -> str:
        return self.label or self.what


@dataclass
class Table:
    title: str
    notes: List[str] = field(default_factory=list)
    rows: List[Row] = field(default_factory=list)

    def add(self, key: str, what: str, measurement: Measurement, anchor: Optional[str] = None,
            goal: Optional[Goal] = None, label: Optional[str] = None) -> Row:
        row = Row(key, what, measurement, anchor, goal, label)
        self.rows.append(row)
        return row

    def row(self, key: str) -> Row:
        for row in self.rows:
            if row.key == key:
                return row
        raise KeyError(key)

    def ratio(self, row: Row) -> Optional[float]:
        if row.anchor is None:
            return None
        base = self.row(row.anchor).measurement.median
        return row.measurement.median / base if base > 0 else None

    def misses(self) -> List[str]:
        """The goals not met, one line each."""
        found = []
        for row in self.rows:
            if row.goal and not row.goal.met(row.measurement.median, self.ratio(row)):
                cells = self._cells(row)
                found.append("%s: %s: %s s, %s; goal %s" % (self.title, row.what, cells[1], cells[3], cells[5]))
        return found

    def markdown(self) -> str:
        lines = ["### " + self.title, ""]
        lines += list(self.notes) + ([""] if self.notes else [])
        lines.append("| " + " | ".join(COLUMNS) + " |")
        lines.append("|" + "|".join(["---"] + ["---:"] * 4 + ["---", "---"]) + "|")
        for row in self.rows:
            lines.append("| " + " | ".join(self._cells(row)) + " |")
        return "\n".join(lines) + "\n"

    def _cells(self, row: Row) -> List[str]:
        m = row.measurement
        ratio = self.ratio(row)
        anchor = self.row(row.anchor).short if row.anchor else None
        if row.anchor is None:
            ratio_text = "-"
        elif ratio is None:
            ratio_text = "n/a"
        else:
            ratio_text = "%.2fx %s" % (ratio, anchor)
        goal = row.goal.text(anchor) if row.goal else "-"
        met = ("yes" if row.goal.met(m.median, ratio) else "**no**") if row.goal else "-"
        peak = "%.0f" % m.peak_mib if m.peak_mib else "-"
        return [row.what, _seconds(m.median), str(m.runs), ratio_text, peak, goal, met]


def _seconds(value: float) -> str:
    return "%.3f" % value if value < 10 else "%.1f" % value
