# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The opt-in real torch venv (about 5.6 GB): built once with pip as the machine configures it, then cached.

Benchmark support for gpuops.cuda_venv: not part of the collection's API.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Optional

REQUIREMENT = "torch==2.14.1"
PYTHON_NAME = "python3.11"
STAMP = "bench-complete.txt"  # written last: a venv without it is a broken build and is rebuilt


class RealVenvError(Exception):
    """The real venv cannot be built."""


def cache_root(repo: Path) -> Path:
    """CUDA_VENV_BENCH_CACHE, default build/bench-cache."""
    return Path(os.environ.get("CUDA_VENV_BENCH_CACHE") or repo / "build" / "bench-cache").resolve()


def venv_dir(repo: Path) -> Path:
    return cache_root(repo) / ("real-" + REQUIREMENT.replace("==", "-")) / "venv"


def cached(repo: Path) -> Optional[Path]:
    """The cached real venv, or None when it was never built (or its build did not finish)."""
    venv = venv_dir(repo)
    return venv if (venv / STAMP).is_file() else None


def wanted() -> bool:
    """CUDA_VENV_BENCH_REAL=1 asks the bench to build the real venv when it is not cached."""
    return os.environ.get("CUDA_VENV_BENCH_REAL", "") not in ("", "0", "no", "false")


def find_python() -> str:
    """CUDA_VENV_BENCH_PYTHON, else python3.11 on PATH, else pyenv's python3.11."""
    explicit = os.environ.get("CUDA_VENV_BENCH_PYTHON")
    if explicit:
        return explicit
    found = shutil.which(PYTHON_NAME)
    if found:
        return found
    pyenv = shutil.which("pyenv")
    if pyenv:
        proc = subprocess.run([pyenv, "which", PYTHON_NAME], capture_output=True, text=True, check=False)
        if proc.returncode == 0 and proc.stdout.strip():
            return proc.stdout.strip()
    raise RealVenvError("no %s found on PATH or through pyenv: set CUDA_VENV_BENCH_PYTHON to one" % PYTHON_NAME)


def build(repo: Path, log=print) -> Path:
    """``python3.11 -m venv`` then ``pip install torch==2.14.1`` with pip's own configuration; returns the venv."""
    venv = venv_dir(repo)
    if cached(repo):
        return venv
    if venv.exists():
        shutil.rmtree(venv)
    venv.parent.mkdir(parents=True, exist_ok=True)
    python = find_python()
    started = time.monotonic()
    steps = ([python, "-m", "venv", str(venv)],
             [str(venv / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check", REQUIREMENT])
    for argv in steps:
        log("bench: " + " ".join(argv))
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RealVenvError("%s failed (rc %d):\n%s%s" % (
                " ".join(argv), proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:]))
    freeze = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "freeze", "--all"], capture_output=True,
                            text=True, check=True).stdout
    (venv / STAMP).write_text("built in %.0f s with %s\n%s" % (time.monotonic() - started, python, freeze))
    return venv
