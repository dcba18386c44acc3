# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``python -m tests.standin`` and the layout trimming behind ``import-layout``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.standin import SCENARIOS
from tests.standin._trim import version_exports

ROOT = Path(__file__).resolve().parents[3]
CACHE = ROOT / "build" / "standin-cache"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tests.standin", *args], cwd=str(ROOT), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, check=False)


def test_list_names_every_scenario_with_its_stack_and_parent():
    done = cli("list")
    assert done.returncode == 0, done.stderr
    rows = [line.split()[:4] for line in done.stdout.splitlines()]
    assert [r[0] for r in rows] == list(SCENARIOS) == [
        "healthy-cu12", "healthy-cu13", "contaminated", "gutted", "partial-restore", "curand-removed",
        "truncated-nccl", "consumer", "system-fallback", "healthy-multi-cu12", "multi-contaminated", "multi-cascade"]
    assert rows[3][:4] == ["gutted", "cu128", "after", "contaminated"]


def test_unknown_scenario_is_a_usage_error(tmp_path):
    done = cli("scenario", "sick", str(tmp_path))
    assert done.returncode == 2
    assert "argument name: invalid choice: 'sick'" in done.stderr
    assert not list(tmp_path.iterdir())


def test_wheelhouse_command_copies_a_stack(tmp_path):
    done = cli("wheelhouse", "cu128", str(tmp_path / "wh"), "--cache", str(CACHE))
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"26 wheels in %s \(\d+\.\d\d s\)\n" % re.escape(str(tmp_path / "wh")), done.stdout)


RAW = {
    "python_tag": "cp311",
    "platform": "manylinux_2_28_x86_64",
    "distributions": [
        {"name": "pip", "version": "23.2.1", "requires_dist": [], "elf_files": [], "other_files_count": 9,
         "other_files_examples": [], "python_files_count": 9},
        {"name": "typing_extensions", "version": "4.16.0", "requires_dist": [], "elf_files": [],
         "other_files_count": 1, "other_files_examples": [], "python_files_count": 1},
        {"name": "nvidia-nccl-cu12", "version": "2.27.5", "requires_dist": [], "python_files_count": 4,
         "other_files_count": 6, "other_files_examples": ["nvidia/nccl/include/nccl.h", "nvidia/x.pth", "nvidia/nccl/a.h",
                                                          "nvidia/nccl/b.h"],
         "elf_files": [{"path": "nvidia/nccl/lib/libnccl.so.2", "size": 9, "elf": {
             "soname": "libnccl.so.2", "needed": ["libc.so.6"], "rpath": None, "runpath": None}}]},
        {"name": "torch", "version": "2.9.1", "requires_dist": ["filelock"], "python_files_count": 2000,
         "other_files_count": 10, "other_files_examples": [], "elf_files": [
             {"path": "torch/_C.cpython-311-x86_64-linux-gnu.so", "size": 9, "elf": {
                 "soname": None, "needed": ["libtorch_python.so"], "rpath": "$ORIGIN/lib", "runpath": None}}]},
    ],
}


def test_import_layout_trims_a_measured_layout(tmp_path):
    src = tmp_path / "torch-2.9.1-cu128.json"
    src.write_text(json.dumps(RAW))
    done = cli("import-layout", str(src), str(tmp_path / "out.json"))
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "out.json").read_text()) == {
        "comment": "Trimmed from a measured real venv layout by tests.standin import-layout.",
        "torch_version": "2.9.1+cu128",
        "cuda": "12.8",
        "distributions": [
            {"name": "typing_extensions", "version": "4.16.0", "requires_dist": [], "elf_files": [],
             "python_files": ["typing_extensions.py"], "data_files": []},
            {"name": "nvidia-nccl-cu12", "version": "2.27.5", "requires_dist": [],
             "elf_files": [{"path": "nvidia/nccl/lib/libnccl.so.2", "soname": "libnccl.so.2", "needed": ["libc.so.6"],
                            "rpath": None, "runpath": None, "exports": {"ncclGetVersion": 22705}}],
             "python_files": ["nvidia/__init__.py", "nvidia/nccl/__init__.py", "nvidia/nccl/include/__init__.py",
                              "nvidia/nccl/lib/__init__.py"],
             "data_files": ["nvidia/nccl/include/nccl.h", "nvidia/nccl/a.h"]},
            {"name": "torch", "version": "2.9.1", "requires_dist": ["filelock"],
             "elf_files": [{"path": "torch/_C.abi3.so", "soname": None, "needed": ["libtorch_python.so"],
                            "rpath": "$ORIGIN/lib", "runpath": None, "python_module": "_C",
                            "layout_path": "torch/_C.cpython-311-x86_64-linux-gnu.so"}],
             "python_files": ["torch/__init__.py", "torch/_standin.py", "torch/version.py", "torch/backends/__init__.py",
                              "torch/backends/cudnn/__init__.py", "torch/cuda/__init__.py", "torch/cuda/nccl.py"],
             "data_files": []},
        ],
    }


def test_import_layout_needs_versions_it_cannot_read_from_the_name(tmp_path):
    src = tmp_path / "layout.json"
    src.write_text(json.dumps(RAW))
    done = cli("import-layout", str(src), str(tmp_path / "out.json"))
    assert (done.returncode, done.stderr) == (
        1, "error: %s: name it torch-VERSION-cuNNN.json or pass --torch-version and --cuda\n" % src)


@pytest.mark.parametrize("soname, version, exports", [
    ("libcudnn.so.9", "9.10.2.21", {"cudnnGetVersion": 91002}),
    ("libcudnn.so.9", "9.24.0.43", {"cudnnGetVersion": 92400}),
    ("libnccl.so.2", "2.27.5", {"ncclGetVersion": 22705}),
    ("libnccl.so.2", "2.30.7", {"ncclGetVersion": 23007}),
    ("libcudart.so.12", "12.8.90", {"cudaRuntimeGetVersion": 12080}),
    ("libcudart.so.13", "13.0.96", {"cudaRuntimeGetVersion": 13000}),
    ("libcublas.so.12", "12.8.4.1", {}),
    (None, "2.9.1", {}),
])
def test_version_exports_follow_the_real_encodings(soname, version, exports):
    assert version_exports(soname, version) == exports
