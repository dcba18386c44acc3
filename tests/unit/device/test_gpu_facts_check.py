# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for tests/device/gpu_facts_check.py on a stand-in venv with no GPU: the script as the lead runs it (a child
interpreter, the collection on PYTHONPATH), NVML absent, and with an interpreter that lacks packaging."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import make_dist
from ansible_collections.gpuops.cuda_venv.tests.support.elf_helpers import requires_gcc
from ansible_collections.gpuops.cuda_venv.tests.support.fatbin_helpers import PTX, SASS, build_fatbin_so, fatbin_bytes

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SCRIPT = os.path.join(ROOT, "tests", "device", "gpu_facts_check.py")
COLLECTIONS = os.path.join(ROOT, "build", "collections")


@pytest.fixture
def venv(tmp_path):
    """A real venv holding a 'torch' whose libtorch_cuda.so (gcc-built) carries sm_80 and sm_90 SASS and compute_90 PTX,
    and an activate script that sets CUDA_LAUNCH_BLOCKING=1."""
    root = tmp_path / "train"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    site = next(root.glob("lib/python3*/site-packages"))
    lib = build_fatbin_so(tmp_path / "libtorch_cuda.so", fatbin_bytes([(SASS, 80), (SASS, 90), (PTX, 90)]), soname="libtorch_cuda.so")
    with open(lib, "rb") as handle:
        make_dist(str(site), "torch", "2.9.1", files={"torch/__init__.py": b"", "torch/lib/libtorch_cuda.so": handle.read()})
    with open(root / "bin" / "activate", "a") as handle:
        handle.write("\nexport CUDA_LAUNCH_BLOCKING=1\n")
    return root


def _run(python, *args):
    env = dict(os.environ, PYTHONPATH=COLLECTIONS)
    proc = subprocess.run([python, SCRIPT] + list(args), capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    return proc.returncode, json.loads(proc.stdout), proc.stderr


@requires_gcc
def test_the_check_on_a_stand_in_venv_without_a_gpu(venv):
    rc, out, err = _run(sys.executable, str(venv), "--gpu-archs", "8.6,10.0", "--no-probe")
    assert rc == 0, err
    assert out["libraries"] == {"packaging": True, "pynvml": True, "elftools": True}
    assert out["gpu"]["available"] is False and out["gpu"]["reason"].startswith("NVML could not be initialised")
    perf = out["performance"]
    assert [t["compute_capability"] for t in perf["targets"]] == ["8.6", "10.0"]
    assert perf["extensions"] == [{
        "path": "torch/lib/libtorch_cuda.so", "distribution": "torch 2.9.1", "sass": ["sm_80", "sm_90"], "ptx": ["compute_90"],
        "verdicts": {"8.6": "sass", "10.0": "ptx"}, "flags": {"compute_90": ["0x11"], "sm_80": ["0x11"], "sm_90": ["0x11"]},
        "entries": 3, "containers": 1, "section_size": perf["extensions"][0]["section_size"], "problem": None, "error": None}]
    assert perf["environment"]["activate"][0]["name"] == "CUDA_LAUNCH_BLOCKING" and perf["gpus"] == []
    assert out["findings"]["KERNELS_PTX_ONLY"] == {"warning": 1} and out["findings"]["ENV_SLOWS_CUDA"] == {"warning": 1}
    assert [(f["code"], f["subject"]) for f in out["performance_findings"]] == [
        ("KERNELS_PTX_ONLY", "torch/lib/libtorch_cuda.so"), ("ENV_SLOWS_CUDA", "CUDA_LAUNCH_BLOCKING=1")]
    assert set(out["timings"]) == {"facts_s", "probe_s", "performance_s"} and out["torch"] is None


@requires_gcc
def test_an_interpreter_with_the_standard_library_only_is_told_what_is_missing(venv):
    """The venv's own python has no packaging: the script says so, exit 2, no traceback."""
    rc, out, _err = _run(str(venv / "bin" / "python"), str(venv))
    assert rc == 2
    assert out["libraries"] == {"packaging": False, "pynvml": False, "elftools": False}
    assert out["error"].startswith("packaging is not importable")
