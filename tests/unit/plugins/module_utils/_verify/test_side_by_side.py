# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for side_by_side: two real venvs without a GPU, a real command whose throughput depends on the venv it runs in."""

from __future__ import annotations

import os
import subprocess
import sys

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._verify import side_by_side as S
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._verify.benchmark import BenchmarkRequest

from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils.recording_runner import RecordingRunner

NO_GPU_TORCH = ("__version__ = '2.9.1+cu128'\n"
                "class version:\n    cuda = '12.8'\n"
                "class cuda:\n    @staticmethod\n    def is_available():\n        return False\n")
NO_GPU_REASON = "torch.cuda.is_available() is False (torch 2.9.1+cu128, CUDA 12.8)"
# The workload: tokens/s read from a marker file inside the venv that runs it.
STEP = "import sys\nprint('tokens/s: ' + open(sys.prefix + '/speed.txt').read().strip())\n"
REGEX = r"tokens/s: ([0-9.]+)"


def venv(tmp_path, name, speed=None, torch=True):
    root = tmp_path / name
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    if torch:
        purelib = subprocess.run([str(root / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 capture_output=True, text=True, check=True).stdout.strip()
        os.makedirs(os.path.join(purelib, "torch"))
        with open(os.path.join(purelib, "torch", "__init__.py"), "w", encoding="utf-8") as handle:
            handle.write(NO_GPU_TORCH)
    if speed is not None:
        (root / "speed.txt").write_text(speed, encoding="utf-8")
    return str(root)


def compare(tmp_path, live, copy, **request):
    step = tmp_path / "step.py"
    step.write_text(STEP, encoding="utf-8")
    if "command" not in request:
        request.update(command=(os.path.join(live, "bin", "python"), str(step)), command_regex=REGEX)
    request = BenchmarkRequest(path=live, min_ratio=S.SWAP_MIN_RATIO, **request)
    copy_command = tuple(a.replace(live, copy) for a in request.command)
    runner = RecordingRunner(passthrough=True)
    return S.side_by_side(request, live, copy, copy_command, runner), runner


def test_runs_alternate_and_a_slower_copy_keeps_the_live_venv(tmp_path):
    live, copy = venv(tmp_path, "live", "1000"), venv(tmp_path, "copy", "900")
    report, runner = compare(tmp_path, live, copy)
    # one built-in run each (no GPU), then the command: live, copy, live, copy, live, copy
    assert [c.argv[0] for c in runner.calls] == [os.path.join(v, "bin", "python") for v in [live, live, copy, copy] + [live, copy] * 2]
    assert report["status"] == S.COMPARED and report["kept_live"] is True
    assert report["live"]["runs"] == {"command_throughput": [1000.0] * 3}
    assert report["copy"]["runs"] == {"command_throughput": [900.0] * 3}
    assert report["comparison"] == [{"metric": "command_throughput", "value": 900.0, "baseline": 1000.0, "ratio": 0.9, "band": 0.02,
                                     "band_why": "the floor noise=0.02, wider than 4 x the ratio's deviation (the repeats' "
                                                 "deviation 0.0% here (3 runs), 0.0% in the baseline (3 runs))",
                                     "verdict": "slower", "ok": False}]
    assert report["regressions"] == ["command_throughput 900.0 is 0.900 of the baseline 1000.0: 10.0% slower (min_ratio 1, noise band 2.0%)"]
    assert report["summary"] == "the repaired copy is slower than the live venv: " + report["regressions"][0]
    assert report["builtin_skipped"] == NO_GPU_REASON


def test_a_copy_as_fast_within_noise_goes_in(tmp_path):
    live, copy = venv(tmp_path, "live", "1000"), venv(tmp_path, "copy", "990")
    report, _runner = compare(tmp_path, live, copy)
    assert (report["status"], report["kept_live"], report["comparison"][0]["verdict"]) == (S.COMPARED, False, "within noise")
    assert report["summary"] == ("built-in benchmark skipped (%s): command_throughput 990.0 /s (0.990x baseline, within noise, band 2.0%%); "
                                 "the copy against the live venv" % NO_GPU_REASON)


def test_without_a_gpu_or_a_command_nothing_is_compared(tmp_path):
    live, copy = venv(tmp_path, "live"), venv(tmp_path, "copy")
    report, runner = compare(tmp_path, live, copy, command=())
    assert len(runner.calls) == 2
    assert (report["status"], report["kept_live"]) == (S.SKIPPED, False)
    assert report["reason"] == "no GPU (%s) and no benchmark command: nothing to compare" % NO_GPU_REASON


def test_a_live_venv_that_cannot_be_measured_leaves_nothing_to_compare(tmp_path):
    live, copy = venv(tmp_path, "live", torch=False), venv(tmp_path, "copy", "1000")
    report, runner = compare(tmp_path, live, copy)
    assert (report["status"], report["kept_live"]) == (S.LIVE_UNMEASURED, False)
    assert report["reason"] == ("the live venv could not be benchmarked (import torch failed: ModuleNotFoundError: No module named 'torch' "
                                "in %s: the venv is broken; diagnose it with gpuops.cuda_venv.cuda_venv_facts): nothing to compare" % live)
    assert [c.argv[0] for c in runner.calls].count(os.path.join(live, "bin", "python")) == 1  # not measured again


def test_a_copy_whose_command_fails_keeps_the_live_venv(tmp_path):
    live, copy = venv(tmp_path, "live", "1000"), venv(tmp_path, "copy")  # the copy has no speed.txt: the step fails
    report, _runner = compare(tmp_path, live, copy)
    assert (report["status"], report["kept_live"]) == (S.COPY_FAILED, True)
    assert report["reason"].startswith("the copy could not be benchmarked: command failed: check command %s exited with code 1: "
                                       % os.path.join(copy, "bin", "python")), report["reason"]
    assert report["reason"].endswith("FileNotFoundError: [Errno 2] No such file or directory: '%s/speed.txt'" % copy)
    assert report["summary"] == report["reason"]
