# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Import the stand-in torch inside a venv the way a careful probe does: ``python -I`` in an empty cwd.

Test support for gpuops.cuda_venv: not part of the collection's API.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from typing import Optional

from ._venv import run, venv_python

# Prints what the imported torch reports and which shared objects the process mapped.
PROBE = r"""
import json
import torch

maps = set()
with open("/proc/self/maps") as f:
    for line in f:
        fields = line.split(None, 5)
        if len(fields) == 6 and ".so" in fields[5]:
            maps.add(fields[5].strip())
print(json.dumps({
    "torch": torch.__version__,
    "cuda": torch.version.cuda,
    "cudnn": torch.backends.cudnn.version(),
    "nccl": list(torch.cuda.nccl.version()),
    "cuda_available": torch.cuda.is_available(),
    "loaded": sorted(maps),
}))
"""


@dataclass(frozen=True)
class ProbeResult:
    """rc, output, the JSON report when the import worked, else the last stderr line."""

    rc: int
    stdout: str
    stderr: str
    report: Optional[dict]
    error: Optional[str]


def probe_torch(venv, ld_library_path=None, timeout: float = 120) -> ProbeResult:
    """Run PROBE with the venv's python, ``-I``, from a fresh empty directory."""
    env = {"LD_LIBRARY_PATH": str(ld_library_path)} if ld_library_path else None
    with tempfile.TemporaryDirectory(prefix="standin-probe-cwd-") as cwd:
        done = run([venv_python(venv), "-I", "-c", PROBE], check=False, cwd=cwd, env=env, timeout=timeout)
    if done.rc == 0:
        return ProbeResult(done.rc, done.stdout, done.stderr, json.loads(done.stdout.strip().splitlines()[-1]), None)
    lines = done.stderr.strip().splitlines()
    return ProbeResult(done.rc, done.stdout, done.stderr, None, lines[-1] if lines else None)
