# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the figures were measured on: cores, CPU, memory, Python, installers, date and the command.

Benchmark support for gpuops.cuda_venv: not part of the collection's API.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
from typing import List, Optional

from ._sha import cores


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gib() -> str:
    try:
        with open("/proc/meminfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    return "%.0f GiB" % (int(line.split()[1]) / 2**20)
    except OSError:
        pass
    return "unknown"


def _version(argv: List[str]) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30)
    except OSError:
        return "not found"
    return (proc.stdout or proc.stderr).strip().splitlines()[0] if proc.returncode == 0 else "not found"


def command_line() -> str:
    """``make bench`` when make started us, and the exact Python command either way."""
    own = "python -m tests.bench" + "".join(" " + arg for arg in sys.argv[1:])
    return "make bench (%s)" % own if os.environ.get("MAKELEVEL") else own


def header(uv: Optional[str], runs: int, heavy_runs: int) -> str:
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "## cuda_venv bench",
        "",
        "- date: %s" % now,
        "- machine: %d cores (%s), %s RAM, %s %s" % (
            cores(), _cpu_model(), _memory_gib(), platform.system(), platform.release()),
        "- python: %s %s (the engine's children and the venvs it generates)" % (
            platform.python_implementation(), platform.python_version()),
        "- installers: %s, %s" % (_version([sys.executable, "-m", "pip", "--version"]).split(" from ")[0],
                                  _version([uv, "--version"]) if uv else "uv not found"),
        "- command: `%s`" % command_line(),
        "- figures: wall-clock medians of %d runs (stand-in venv, repair) or %d runs (generated and real venvs), page "
        "cache warm (one untimed pass first); peak MiB = ru_maxrss of the command (the largest process of its tree, "
        "from wait4 in a small launcher, tests/bench/_launch.py)" % (runs, heavy_runs),
    ]
    return "\n".join(lines) + "\n"
