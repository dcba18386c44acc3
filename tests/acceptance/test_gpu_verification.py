"""The verification on a real GPU (issue 30): repeats, the noise band, a real slowdown seen, a swap's copy measured
side by side with the live venv.

Opt-in, on a machine with a CUDA GPU: CUDA_VENV_GPU_VENV=/path/to/a/torch/venv (torch sees the GPU), then
``build/tools/bin/python -m pytest -p no:cacheprovider -n 0 -v -s tests/acceptance/test_gpu_verification.py``.
Prints every figure (runs, medians, spreads, ratios, bands) for the closing note. The side-by-side test makes a
hard-linked copy of the venv beside it (same file system) and removes it.
"""

import os
import shutil
import subprocess
import tempfile

import pytest

from tests.scenarios.scenario_tools import run_module

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import SubprocessRunner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._verify.benchmark import BenchmarkRequest
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._verify.side_by_side import SWAP_MIN_RATIO, side_by_side

VENV = os.environ.get("CUDA_VENV_GPU_VENV", "")
pytestmark = pytest.mark.skipif(not VENV, reason="CUDA_VENV_GPU_VENV (a torch venv on a machine with a GPU) is not set")

# Many small kernels: each waits for the previous one under CUDA_LAUNCH_BLOCKING=1 (measured on an H200: 0.484 of the baseline, docs/ACCEPTANCE.md).
STEP = """
import time
import torch
x = torch.randn(512, 512, device="cuda", dtype=torch.bfloat16)
warm = time.perf_counter()
while time.perf_counter() - warm < 1.0:  # a second of work first: the clocks leave idle (345 MHz) before timing
    y = x @ x
torch.cuda.synchronize()
start = time.perf_counter()
for _ in range(20000):
    y = (x @ x).relu_()
torch.cuda.synchronize()
print("tokens/s: %.1f" % (20000 * 512 / (time.perf_counter() - start)))
"""
REGEX = r"tokens/s: ([0-9.]+)"


def step(tmp_path):
    path = tmp_path / "step.py"
    path.write_text(STEP, encoding="utf-8")
    return str(path)


def test_repeats_report_runs_medians_and_spreads_and_a_second_run_is_within_noise(tmp_path):
    python = os.path.join(VENV, "bin", "python")
    args = {"path": VENV, "repeats": 3, "require_gpu": True, "command": [python, step(tmp_path)], "command_regex": REGEX}
    rc, first, output = run_module(tmp_path / "a", "cuda_venv_benchmark", args)
    assert rc == 0, output[-4000:]
    print("first: runs %s, medians %s, spreads %s" % (first["runs"], first["metrics"], first["spread"]))
    assert sorted(first["runs"]) == ["command_throughput", "copy_gbps", "matmul_tflops"]
    assert all(len(values) == 3 for values in first["runs"].values())
    rc, second, output = run_module(tmp_path / "b", "cuda_venv_benchmark", dict(args, baseline=first))
    print("second: %s" % second["summary"])
    assert rc == 0, output[-4000:]
    assert [row["verdict"] for row in second["comparison"]] != [] and all(row["ok"] for row in second["comparison"])


def test_launch_blocking_in_the_jobs_environment_is_seen_as_slower(tmp_path):
    python = os.path.join(VENV, "bin", "python")
    args = {"path": VENV, "repeats": 3, "require_gpu": True, "matmul_iterations": 10, "copy_iterations": 5,
            "command": [python, step(tmp_path)], "command_regex": REGEX}
    rc, plain, output = run_module(tmp_path / "a", "cuda_venv_benchmark", args)
    assert rc == 0, output[-4000:]
    blocking = dict(args, command=["/usr/bin/env", "CUDA_LAUNCH_BLOCKING=1", python, step(tmp_path)], baseline=plain)
    rc, slow, output = run_module(tmp_path / "b", "cuda_venv_benchmark", blocking)
    row = [r for r in slow["comparison"] if r["metric"] == "command_throughput"][0]
    print("CUDA_LAUNCH_BLOCKING=1: %s runs %s against %s: ratio %.3f, band %.3f, %s" % (
        row["metric"], slow["runs"]["command_throughput"], plain["runs"]["command_throughput"], row["ratio"], row["band"],
        row["verdict"]))
    assert rc != 0 and row["verdict"] == "slower", output[-4000:]


def test_a_copy_of_the_venv_measured_side_by_side_is_within_noise(tmp_path):
    parent = os.path.dirname(os.path.abspath(VENV))
    scratch = tempfile.mkdtemp(prefix=".gpu-verification-", dir=parent)
    copy = os.path.join(scratch, "copy")
    try:
        subprocess.run(["cp", "-al", "--", VENV, copy], check=True)
        request = BenchmarkRequest(path=VENV, min_ratio=SWAP_MIN_RATIO, command=(os.path.join(VENV, "bin", "python"), step(tmp_path)),
                                   command_regex=REGEX)
        copy_command = (os.path.join(copy, "bin", "python"), step(tmp_path))
        report = side_by_side(request, os.path.abspath(VENV), copy, copy_command, SubprocessRunner())
    finally:
        shutil.rmtree(scratch)
    print("side by side: %s" % report["summary"])
    for row in report["comparison"]:
        print("  %s: live %s, copy %s, ratio %.3f, band %.3f, %s" % (
            row["metric"], report["live"]["runs"][row["metric"]], report["copy"]["runs"][row["metric"]], row["ratio"], row["band"],
            row["verdict"]))
    assert report["status"] == "compared" and len(report["comparison"]) == 3
    assert report["kept_live"] is False, report["regressions"]
