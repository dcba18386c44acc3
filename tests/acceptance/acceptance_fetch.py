# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The acceptance wheelhouse: real torch stacks fetched once with pip as this machine configures it, then reused.

Acceptance-test support for gpuops.cuda_venv: not part of the collection's API.
Run from the repository root: ``python tests/acceptance/acceptance_fetch.py`` (``make acceptance`` does).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import List, Tuple

ROOT = Path(__file__).resolve().parents[2]
GB = 1000 ** 3
PYTHON_VERSION = "3.11"  # the version this machine's pip configuration serves torch 2.14.1 for


class AcceptanceError(Exception):
    """The acceptance run cannot go on; the message says what to do."""


class NotEnoughDisk(AcceptanceError):
    """The file system of the cache has too little free space for the next step."""


@dataclass(frozen=True)
class Group:
    """One ``pip download`` (with dependencies): a name, its requirements, and its approximate size."""

    name: str
    requirements: Tuple[str, ...]
    approx_bytes: int
    description: str


GROUPS = (
    Group("torch-2.9.1-cu12", ("torch==2.9.1",), int(4.1 * GB), "torch 2.9.1 with its CUDA 12 wheels"),
    Group("incident-cu13", ("nvidia-cudnn-cu13==9.24.0.43", "nvidia-cusparselt-cu13==0.8.1", "nvidia-nccl-cu13==2.30.7",
                            "nvidia-nvshmem-cu13==3.4.5"), int(1.5 * GB), "the four CUDA 13 wheels of the incident"),
    Group("torch-2.14.1-cu13", ("torch==2.14.1",), int(2.0 * GB), "torch 2.14.1 with its CUDA 13 stack"),
    Group("sglang-kernel-0.4.10", ("sglang-kernel==0.4.10",), int(0.4 * GB),
          "the consumer the incident's SGLang install brought (it requires torch 2.14.1): the guard refuses it"),
    Group("neighbours-cu12", ("torch==2.9.1", "torchvision==0.24.1", "torchaudio==2.9.1", "jax[cuda12]==0.10.2",
                              "cupy-cuda12x==14.2.0"), int(0.8 * GB),
          "torchvision, torchaudio, jax[cuda12] and cupy-cuda12x resolved with torch 2.9.1: a researcher's multi-framework venv"),
)
APPROX_TOTAL_GB = 8.8


def enabled() -> bool:
    """CUDA_VENV_ACCEPTANCE=1 opts in (make acceptance sets it): without it the tests skip."""
    return os.environ.get("CUDA_VENV_ACCEPTANCE", "") not in ("", "0", "no", "false")


def cache_root() -> Path:
    """CUDA_VENV_ACCEPTANCE_CACHE, default build/acceptance-cache: wheelhouse, uv cache, scenario venvs."""
    return Path(os.environ.get("CUDA_VENV_ACCEPTANCE_CACHE") or ROOT / "build" / "acceptance-cache").resolve()


def wheelhouse() -> Path:
    return cache_root() / "wheelhouse"


def _stamp(group: Group) -> Path:
    return wheelhouse() / ".fetched" / (group.name + ".json")


def fetched(group: Group) -> dict:
    """The group's stamp when every file it lists is in the wheelhouse with its size, else {}."""
    try:
        stamp = json.loads(_stamp(group).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    for name, size in stamp["files"].items():
        path = wheelhouse() / name
        if not path.is_file() or path.stat().st_size != size:
            return {}
    return stamp


@functools.lru_cache(maxsize=None)
def find_python(version: str = PYTHON_VERSION, variable: str = "CUDA_VENV_ACCEPTANCE_PYTHON") -> str:
    """The interpreter ``variable`` names, else a working python``version`` on PATH or from pyenv
    (scripts/find_python.sh); it must have venv and ensurepip."""
    explicit = os.environ.get(variable)
    if explicit:
        argv = [explicit, "-c", "import sys, venv, ensurepip; print(sys.executable); print('%d.%d' % sys.version_info[:2])"]
    else:
        argv = [str(ROOT / "scripts" / "find_python.sh"), version]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
    lines = proc.stdout.splitlines()
    if proc.returncode != 0 or not lines or (explicit and lines[-1] != version):
        why = (proc.stderr or proc.stdout).strip() or "rc %d" % proc.returncode
        raise AcceptanceError("no working Python %s with venv support (%s): install one (pyenv install %s) or set "
                              "%s to one" % (version, why, version, variable))
    return lines[0]


def free_bytes(path: Path) -> int:
    """Free bytes on the file system that holds ``path`` (or its nearest existing parent)."""
    while not path.exists():
        path = path.parent
    return shutil.disk_usage(str(path)).free


def require_free(path: Path, needed: int, what: str) -> None:
    """Refuse, naming the numbers and the way out, when ``path``'s file system has less than ``needed`` free."""
    free = free_bytes(path)
    if free < needed:
        raise NotEnoughDisk("not enough disk for %s: %.1f GB free under %s, %.1f GB needed; free some space or set "
                            "CUDA_VENV_ACCEPTANCE_CACHE to a directory on a larger file system"
                            % (what, free / GB, path, needed / GB))


def _saved_files(output: str) -> List[str]:
    """The wheel file names pip reports as saved or already there (pip download's own lines)."""
    names = []
    for line in output.splitlines():
        line = line.strip()
        for prefix in ("Saved ", "File was already downloaded "):
            if line.startswith(prefix) and line.endswith(".whl"):
                names.append(os.path.basename(line[len(prefix):]))
    return names


def download(python: str, group: Group, log=print) -> dict:
    """``python -m pip download --only-binary :all: -d WHEELHOUSE REQS`` with pip's configuration; writes the stamp."""
    dest = wheelhouse()
    dest.mkdir(parents=True, exist_ok=True)
    before = {p.name: p.stat().st_size for p in dest.glob("*.whl")}
    argv = [python, "-m", "pip", "download", "--only-binary", ":all:", "--progress-bar", "off", "--dest", str(dest),
            *group.requirements]
    log("acceptance: " + " ".join(argv))
    started = time.monotonic()
    output = []
    with subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          cwd=str(dest)) as proc:
        for line in proc.stdout:
            output.append(line)
            log("  " + line.rstrip())
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        raise AcceptanceError("pip download of %s failed (rc %d): see the pip output above; pip runs with this "
                              "machine's configuration (pip config list)" % (group.name, proc.returncode))
    appeared = {p.name for p in dest.glob("*.whl")} - set(before)
    names = sorted(set(_saved_files("".join(output))) | appeared)
    files = {name: (dest / name).stat().st_size for name in names}
    new_bytes = sum(size for name, size in files.items() if name not in before)
    stamp = {"group": group.name, "requirements": list(group.requirements), "files": files,
             "downloaded_bytes": new_bytes, "seconds": round(seconds, 1)}
    _stamp(group).parent.mkdir(exist_ok=True)
    _stamp(group).write_text(json.dumps(stamp, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    log("acceptance: %s: %d wheels, %.2f GB new in %.0f s (%.0f MB/s)"
        % (group.name, len(files), new_bytes / GB, seconds, new_bytes / 1e6 / max(seconds, 0.1)))
    return stamp


def ensure_wheelhouse(log=print) -> Path:
    """Download every group not fetched yet (saying how much first); returns the wheelhouse."""
    missing = [g for g in GROUPS if not fetched(g)]
    if not missing:
        log("acceptance: wheelhouse complete in %s, nothing to download" % wheelhouse())
        return wheelhouse()
    needed = sum(g.approx_bytes for g in missing)
    log("acceptance: about %.1f GB of wheels to download (the whole wheelhouse is about %.1f GB) into %s:"
        % (needed / GB, APPROX_TOTAL_GB, wheelhouse()))
    for group in missing:
        log("  %s: %s (%s)" % (group.name, group.description, " ".join(group.requirements)))
    require_free(wheelhouse(), needed + 2 * GB, "the wheelhouse")
    python = find_python()
    for group in missing:
        download(python, group, log)
    return wheelhouse()


def main() -> int:
    try:
        ensure_wheelhouse()
    except AcceptanceError as exc:
        print("acceptance: %s" % exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
