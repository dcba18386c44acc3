# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The acceptance run's table: one row per real venv scenario, in Markdown.

Acceptance-test support for gpuops.cuda_venv: not part of the collection's API.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parents[2]


def results_dir() -> Path:
    """CUDA_VENV_ACCEPTANCE_RESULTS, default build/acceptance-results: the table and every module result (JSON)."""
    return Path(os.environ.get("CUDA_VENV_ACCEPTANCE_RESULTS") or ROOT / "build" / "acceptance-results")


def save_result(name: str, value) -> None:
    """``value`` as JSON into the results folder, kept after the venvs are gone."""
    results_dir().mkdir(parents=True, exist_ok=True)
    (results_dir() / name).write_text(json.dumps(value, indent=1, sort_keys=True, default=str), encoding="utf-8")


HEADER = ("scenario", "venv built s", "findings (errors)", "batches (actions)", "strategy", "facts s", "repair s", "second run s",
          "unproven removals", "result")


@dataclass
class Row:
    """What one scenario measured; filled in as its tests run."""

    scenario: str
    build_seconds: float = 0.0
    findings: str = ""
    batches: str = ""
    strategy: str = ""  # the repair's (swap, in_place, swap_back); "-" when it had nothing to repair
    facts_seconds: Optional[float] = None
    repair_seconds: Optional[float] = None
    second_seconds: Optional[float] = None
    unproven_removals: Optional[int] = None  # removals no CUDA_DIST_UNREQUIRED evidence proves wrong (issue 28: 0)
    outcomes: Dict[str, str] = field(default_factory=dict)  # test name -> passed, failed, xfailed, ...

    def result(self) -> str:
        bad = sorted(t for t, o in self.outcomes.items() if o not in ("passed", "xfailed"))
        known = sorted(t for t, o in self.outcomes.items() if o == "xfailed")
        if bad:
            return "FAILED: " + ", ".join(bad)
        if known:
            return "pass, known discrepancies: " + ", ".join(known)
        return "pass" if self.outcomes else "not run"

    def cells(self) -> List[str]:
        def seconds(value):
            return "-" if value is None else "%.1f" % value
        return [self.scenario, seconds(self.build_seconds), self.findings or "-", self.batches or "-", self.strategy or "-",
                seconds(self.facts_seconds), seconds(self.repair_seconds), seconds(self.second_seconds),
                "-" if self.unproven_removals is None else str(self.unproven_removals), self.result()]


def summarize_findings(facts: dict) -> str:
    """Error findings as ``CODE xN`` (``none`` when there are none), warnings counted after them."""
    errors = Counter(f["code"] for f in facts.get("findings", []) if f["severity"] == "error")
    warnings = sum(1 for f in facts.get("findings", []) if f["severity"] == "warning")
    text = ", ".join(code + (" x%d" % n if n > 1 else "") for code, n in sorted(errors.items())) or "none"
    return text + ("; %d warning%s" % (warnings, "s" if warnings > 1 else "") if warnings else "")


def summarize_batches(result: dict) -> str:
    batches = result.get("batches") or []
    actions = sum(len(b.get("actions", [])) for b in (result.get("plan") or {}).get("batches", []))
    return "%d (%d)" % (len(batches), actions)


def markdown(rows: List[Row], extra: str = "", header=None) -> str:
    """The table (``header``: its columns, HEADER by default) with a line saying when and where it was measured."""
    header = header or HEADER
    lines = ["Measured %s on %s, %d cores, Python %s (controller); %s" % (
        datetime.date.today().isoformat(), platform.machine(), os.cpu_count() or 0, platform.python_version(), extra),
        "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines.extend("| " + " | ".join(row.cells()) + " |" for row in rows)
    return "\n".join(lines) + "\n"


SERVING_HEADER = ("serving venv", "venv built s", "imports before repair", "findings (errors)",
                  "warnings/errors on legitimate packages", "repair: removals / batches (actions)",
                  "removals breaking a working import", "healthy after repair", "declared torch==2.9.1", "facts s",
                  "repair s", "result")


@dataclass
class ServingRow(Row):
    """What one real LLM-serving venv (tests/acceptance/test_serving_stacks.py) measured."""

    imports_before: str = ""  # the modules that import before any repair (no GPU here: some fail already)
    legitimate_flagged: Optional[int] = None  # warning/error findings naming a distribution the application required
    legitimate_detail: str = ""  # their codes and names
    removals: Optional[int] = None  # the real repair's removals
    broken_imports: str = ""  # imports that worked before the repair and fail after, with the removals
    after_repair: str = ""  # healthy, or failed and why
    declared: str = "-"  # the repair with packages: [torch==2.9.1] (sglang-over-cu12 only)

    def cells(self) -> List[str]:
        def seconds(value):
            return "-" if value is None else "%.1f" % value
        flagged = "-" if self.legitimate_flagged is None else str(self.legitimate_flagged)
        if self.legitimate_detail:
            flagged += " (%s)" % self.legitimate_detail
        removals = "-" if self.removals is None else "%d / %s" % (self.removals, self.batches or "-")
        return [self.scenario, seconds(self.build_seconds), self.imports_before or "-", self.findings or "-", flagged,
                removals, self.broken_imports or ("0" if self.after_repair else "-"), self.after_repair or "-",
                self.declared or "-", seconds(self.facts_seconds), seconds(self.repair_seconds), self.result()]


def serving_markdown(rows: List[ServingRow], extra: str = "") -> str:
    """The serving venvs' table, with the line saying when and where it was measured."""
    return markdown(rows, extra, SERVING_HEADER)
