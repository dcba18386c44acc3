# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a venv's users see while it is repaired: ``import torch`` started back to back during one run of a fix.

Benchmark support for gpuops.cuda_venv: not part of the collection's API.

One extra, untimed run of a row's steps inside tests.support.import_loop (``VENV/bin/python -I -c 'import torch'`` from an
empty folder, one after the other, from before the first step to after the last). The loop competes with the fix for
the cores: that is why it is not a timed run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, List, Optional, Sequence, Tuple

from tests.support.import_loop import import_loop, import_once

from ._measure import Step, run_sequence


@dataclass(frozen=True)
class Exposure:
    """One row: imports started during the fix, how many failed, and their distinct last error lines."""

    key: str
    what: str
    started: int
    failed: int
    errors: Tuple[str, ...]
    imported_before: bool  # the venv imported before the fix: only then is a failure the fix's doing
    max_failed: Optional[int] = None  # the goal, when the row has one

    @property
    def met(self) -> Optional[bool]:
        if self.max_failed is None or not self.imported_before:
            return None
        return self.failed <= self.max_failed


@dataclass
class ExposureTable:
    title: str
    notes: List[str] = field(default_factory=list)
    rows: List[Exposure] = field(default_factory=list)

    def misses(self) -> List[str]:
        line = "%s: %s: %d of %d imports failed; goal at most %d"
        return [line % (self.title, r.what, r.failed, r.started, r.max_failed) for r in self.rows if r.met is False]

    def markdown(self) -> str:
        lines = ["### " + self.title, ""] + list(self.notes) + ([""] if self.notes else [])
        lines.append("| what | imported before? | imports started | failed | their errors | goal | met? |")
        lines.append("|---|---|---:|---:|---|---|---|")
        for r in self.rows:
            goal = "-" if r.max_failed is None else "<= %d failed" % r.max_failed
            met = "-" if r.met is None else ("yes" if r.met else "**no**")
            errors = "; ".join("`%s`" % e.replace("|", "/") for e in r.errors) or "-"
            lines.append("| %s | %s | %d | %d | %s | %s | %s |" % (
                r.what, "yes" if r.imported_before else "no", r.started, r.failed, errors, goal, met))
        return "\n".join(lines) + "\n"


def observe(key: str, what: str, venv: Path, workdir: Path, steps: Sequence[Step],
            prepare: Optional[Callable[[], None]], max_failed: Optional[int] = None) -> Exposure:
    """The import loop during one run of ``steps`` on a fresh ``venv``."""
    if prepare:
        prepare()
    workdir.mkdir(parents=True, exist_ok=True)
    python = str(venv / "bin" / "python")
    imported_before = import_once(python, str(workdir))[0] == 0
    with import_loop(python, str(workdir)) as seen:
        run_sequence(list(steps))
    failures = [error for rc, error in seen if rc != 0]
    return Exposure(key, what, len(seen), len(failures), tuple(sorted(set(failures))), imported_before, max_failed)
