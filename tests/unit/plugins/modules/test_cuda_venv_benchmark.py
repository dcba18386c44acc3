# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the cuda_venv_benchmark module's main(): real venvs; the GPU only as a fake torch on disk (``_mocked_gpu``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpuops.cuda_venv.plugins.modules import cuda_venv_benchmark
from tests.standin import build_scenario

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
CACHE = os.environ.get("CUDA_VENV_STANDIN_CACHE", os.path.join(ROOT, "build", "standin-cache"))

# A torch that "has" a GPU: each matmul costs MATMUL_MS and each copy COPY_MS of CUDA-event time, so the
# metrics are exact; Event.record() snapshots the op counters, so warm-up steps outside the events do not count.
FAKE_TORCH = '''
import os

__version__ = "2.9.1+cu128"
bfloat16 = "bfloat16"
uint8 = "uint8"
_COUNT = {"matmul": 0, "copy": 0}
_COST = {"matmul": float(os.environ.get("FAKE_MATMUL_MS", "%(matmul_ms)s")), "copy": %(copy_ms)s}


class version:
    cuda = "12.8"


class _Tensor:
    def copy_(self, other):
        _COUNT["copy"] += 1
        return self


def device(kind, index):
    return (kind, index)


def randn(*shape, **kwargs):
    return _Tensor()


def empty(*shape, **kwargs):
    return _Tensor()


def empty_like(tensor):
    return _Tensor()


def matmul(a, b, out=None):
    _COUNT["matmul"] += 1
    return out


class _Props:
    name = "Fake H200"
    major = 9
    minor = 0
    total_memory = 150 * 1024 * 1024 * 1024


class cuda:
    @staticmethod
    def is_available():
        return True

    @staticmethod
    def device_count():
        return 1

    @staticmethod
    def set_device(dev):
        pass

    @staticmethod
    def synchronize(dev=None):
        pass

    @staticmethod
    def get_device_properties(dev):
        return _Props()

    class Event:
        def __init__(self, enable_timing=False):
            self.counts = None

        def record(self):
            self.counts = dict(_COUNT)

        def synchronize(self):
            pass

        def elapsed_time(self, end):
            return sum((end.counts[op] - self.counts[op]) * _COST[op] for op in _COST)
'''


def make_venv(tmp_path, torch_source=None):
    root = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    if torch_source is not None:
        purelib = subprocess.run([str(root / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 capture_output=True, text=True, check=True).stdout.strip()
        os.makedirs(os.path.join(purelib, "torch"))
        with open(os.path.join(purelib, "torch", "__init__.py"), "w", encoding="utf-8") as handle:
            handle.write(torch_source)
    return str(root)


def fake_gpu_venv(tmp_path, matmul_ms=2.0, copy_ms=1.0):
    return make_venv(tmp_path, FAKE_TORCH % {"matmul_ms": matmul_ms, "copy_ms": copy_ms})


def run_main(args, capsys, check_mode=False):
    """main() with these module args; returns (failed, result)."""
    if check_mode:
        args = dict(args, _ansible_check_mode=True)
    with patch_module_args(args), pytest.raises(SystemExit) as info:
        cuda_venv_benchmark.main()
    result = json.loads(capsys.readouterr().out)
    assert (info.value.code != 0) == bool(result.get("failed"))
    return bool(result.get("failed")), result


SMALL = dict(matmul_size=1000, matmul_iterations=10, warmup_iterations=3, copy_mib=100, copy_iterations=4)
# 2 * 1000^3 * 10 / (10 * 2 ms) / 1e12 and 2 * 100 MiB * 4 / (4 * 1 ms) / 1e9
MATMUL_TFLOPS = 2e9 * 10 / 0.020 / 1e12
COPY_GBPS = 2.0 * 100 * 1024 * 1024 * 4 / 0.004 / 1e9


def test_options_are_validated_together(capsys):
    failed, result = run_main(dict(path="/nonexistent", matmul_size=0, min_ratio=0, command=["/bin/true"],
                                   ld_library_path=["lib"]), capsys)
    assert failed
    assert result["msg"] == ("matmul_size must be >= 1, got 0; min_ratio must be positive, got 0.0; "
                             "command_regex is required with command: it reads the throughput from the command's output; "
                             "ld_library_path entry 'lib' is not an absolute folder path")


def test_baseline_and_baseline_path_are_exclusive(capsys):
    failed, result = run_main(dict(path="/x", baseline={}, baseline_path="/b.json"), capsys)
    assert failed and result["msg"] == "parameters are mutually exclusive: baseline|baseline_path"


def test_not_a_venv(tmp_path, capsys):
    failed, result = run_main(dict(path=str(tmp_path)), capsys)
    assert failed and result["msg"] == "path %s is not a venv: no pyvenv.cfg" % tmp_path


def test_venv_without_torch_fails_as_broken(tmp_path, capsys):
    root = make_venv(tmp_path)
    failed, result = run_main(dict(path=root), capsys)
    assert failed
    assert result["msg"] == ("import torch failed: ModuleNotFoundError: No module named 'torch' in %s: the venv is broken; "
                             "diagnose it with gpuops.cuda_venv.cuda_venv_facts" % root)
    assert result["metrics"] == {} and result["comparison"] == []


@pytest.fixture(scope="module")
def standin_venv(tmp_path_factory):
    """A stand-in torch 2.9.1+cu128 venv: imports, and torch.cuda.is_available() is False (no GPU here or there)."""
    return build_scenario("healthy-cu12", tmp_path_factory.mktemp("healthy"), cache=CACHE).venv


@pytest.mark.slow
def test_no_gpu_is_skipped_with_the_reason(standin_venv, capsys):
    failed, result = run_main(dict(path=str(standin_venv), baseline={"matmul_tflops": 780.0}), capsys)
    assert not failed
    assert result["skipped"] is True
    assert result["msg"] == result["summary"] == "skipped: torch.cuda.is_available() is False (torch 2.9.1+cu128, CUDA 12.8)"
    assert result["versions"] == {"torch": "2.9.1+cu128", "cuda": "12.8"}
    assert result["metrics"] == {} and result["comparison"] == [] and result["changed"] is False
    assert result["baseline"] == {"matmul_tflops": 780.0}


@pytest.mark.slow
def test_no_gpu_fails_when_a_gpu_is_required(standin_venv, capsys):
    failed, result = run_main(dict(path=str(standin_venv), require_gpu=True), capsys)
    assert failed
    assert result["msg"] == ("no GPU to benchmark (require_gpu is true): torch.cuda.is_available() is False "
                             "(torch 2.9.1+cu128, CUDA 12.8)")


def test_measures_with_cuda_events_excluding_warmup_mocked_gpu(tmp_path, capsys):
    failed, result = run_main(dict(path=fake_gpu_venv(tmp_path), **SMALL), capsys)
    assert not failed, result
    assert result["metrics"] == {"matmul_tflops": pytest.approx(MATMUL_TFLOPS, rel=1e-12),
                                 "copy_gbps": pytest.approx(COPY_GBPS, rel=1e-12)}
    assert result["device"] == {"index": 0, "name": "Fake H200", "capability": "9.0", "memory_mib": 150 * 1024}
    assert result["spec"] == dict(SMALL, device=0)
    assert result["comparison"] == [] and result["baseline"] == {}
    assert result["summary"] == "Fake H200: matmul_tflops 1.00 TFLOP/s, copy_gbps 209.7 GB/s; no baseline to compare with"
    assert "skipped" not in result and result["changed"] is False


def test_slower_than_the_baseline_fails_and_says_by_how_much_mocked_gpu(tmp_path, capsys):
    baseline = {"metrics": {"matmul_tflops": MATMUL_TFLOPS / 0.8, "copy_gbps": COPY_GBPS}}
    failed, result = run_main(dict(path=fake_gpu_venv(tmp_path), baseline=baseline, **SMALL), capsys)
    assert failed
    assert result["msg"] == "slower than the baseline: matmul_tflops 1.00 is 0.800 of the baseline 1.25: 20.0% slower (min_ratio 0.95, noise band 2.0%)"
    assert [(row["metric"], row["ok"]) for row in result["comparison"]] == [("matmul_tflops", False), ("copy_gbps", True)]
    assert result["comparison"][0]["ratio"] == pytest.approx(0.8, rel=1e-12)


def test_within_min_ratio_passes_mocked_gpu(tmp_path, capsys):
    baseline = {"matmul_tflops": MATMUL_TFLOPS / 0.8}
    failed, result = run_main(dict(path=fake_gpu_venv(tmp_path), baseline=baseline, min_ratio=0.75, **SMALL), capsys)
    assert not failed, result
    assert result["summary"] == ("Fake H200: matmul_tflops 1.00 TFLOP/s (0.800x baseline, slower, within min_ratio, band 2.0%), "
                                 "copy_gbps 209.7 GB/s; compared with the baseline")


def test_a_skipped_baseline_compares_nothing_mocked_gpu(tmp_path, capsys):
    baseline = {"changed": False, "skipped": True, "msg": "skipped: torch.cuda.is_available() is False (torch 2.9.1, CUDA 12.8)",
                "metrics": {}}
    failed, result = run_main(dict(path=fake_gpu_venv(tmp_path), baseline=baseline, **SMALL), capsys)
    assert not failed, result
    assert result["summary"].endswith("; no baseline to compare with (the baseline run was skipped: "
                                      "skipped: torch.cuda.is_available() is False (torch 2.9.1, CUDA 12.8))")


def test_user_command_throughput_saved_and_compared_mocked_gpu(tmp_path, capsys):
    root = fake_gpu_venv(tmp_path)
    step = tmp_path / "step.py"
    step.write_text("import os\nprint('step 1: 90.0 samples/s')\nprint('step 2: 120.5 samples/s')\n"
                    "print('cwd empty:', os.listdir('.') == [])\n", encoding="utf-8")
    save_path = str(tmp_path / "baseline.json")
    args = dict(path=root, command=[os.path.join(root, "bin", "python"), str(step)],
                command_regex=r"step \d+: ([0-9.]+) samples/s", save_path=save_path, **SMALL)

    failed, result = run_main(args, capsys, check_mode=True)
    assert not failed and result["changed"] is True and not os.path.exists(save_path)

    failed, result = run_main(args, capsys)
    assert not failed, result
    assert result["metrics"]["command_throughput"] == 120.5
    assert result["command"]["rc"] == 0 and "cwd empty: True" in result["command"]["output"]
    assert result["changed"] is True and result["saved"] == save_path
    with open(save_path, encoding="utf-8") as handle:
        stored = json.load(handle)
    assert stored == {"venv": root, "metrics": result["metrics"], "runs": result["runs"], "device": result["device"],
                      "versions": result["versions"], "spec": dict(SMALL, device=0)}
    assert result["runs"]["command_throughput"] == [120.5, 120.5, 120.5]

    step.write_text("print('step 1: 100.0 samples/s')\n", encoding="utf-8")
    failed, result = run_main(dict(args, save_path=None, baseline_path=save_path), capsys)
    assert failed
    assert result["msg"] == ("slower than the baseline: command_throughput 100.0 is 0.830 of the baseline 120.5: "
                             "17.0% slower (min_ratio 0.95, noise band 2.0%)")


def test_user_command_that_fails_or_prints_no_number_mocked_gpu(tmp_path, capsys):
    root = fake_gpu_venv(tmp_path)
    python = os.path.join(root, "bin", "python")
    failed, result = run_main(dict(path=root, command=[python, "-c", "import sys; sys.exit(3)"], command_regex="x ([0-9]+)", **SMALL),
                              capsys)
    assert failed and result["msg"] == "command failed: check command %s exited with code 3" % python
    assert result["metrics"] == {"matmul_tflops": pytest.approx(MATMUL_TFLOPS), "copy_gbps": pytest.approx(COPY_GBPS)}
    failed, result = run_main(dict(path=root, command=[python, "-c", "print('loss 0.5')"], command_regex="x ([0-9]+)", **SMALL), capsys)
    assert failed and result["msg"] == "command_regex 'x ([0-9]+)' matched nothing in the command's output; its last lines: loss 0.5"


def test_baseline_on_another_device_warns_mocked_gpu(tmp_path, capsys):
    baseline = {"metrics": {"copy_gbps": COPY_GBPS}, "device": {"name": "NVIDIA H100"}, "spec": dict(SMALL, copy_mib=200, device=0)}
    failed, result = run_main(dict(path=fake_gpu_venv(tmp_path), baseline=baseline, **SMALL), capsys)
    assert not failed, result
    assert result["notes"] == ["the baseline was measured on NVIDIA H100, this run on Fake H200",
                               "the baseline used copy_mib=200, this run 100"]


def throughput_script(tmp_path, values):
    """A real workload whose n-th run prints ``tokens/s: values[n]`` (the run count kept in a file beside it)."""
    script = tmp_path / "step.py"
    script.write_text("import pathlib\nvalues = %r\np = pathlib.Path(%r)\nn = int(p.read_text()) if p.exists() else 0\n"
                      "p.write_text(str(n + 1))\nprint('tokens/s: %%s' %% values[n])\n" % (values, str(tmp_path / "runs")),
                      encoding="utf-8")
    return str(script)


def test_repeats_report_every_run_the_median_and_the_spread_mocked_gpu(tmp_path, capsys):
    root = fake_gpu_venv(tmp_path)
    args = dict(path=root, command=[os.path.join(root, "bin", "python"), throughput_script(tmp_path, [100, 98, 101, 99, 100])],
                command_regex=r"tokens/s: ([0-9.]+)", repeats=5, baseline={"command_throughput": 90.0}, **SMALL)
    failed, result = run_main(args, capsys)
    assert not failed, result
    assert result["repeats"] == 5 and result["noise"] == 0.02
    assert result["runs"]["command_throughput"] == [100.0, 98.0, 101.0, 99.0, 100.0]
    assert result["runs"]["matmul_tflops"] == [pytest.approx(MATMUL_TFLOPS)] * 5
    assert result["metrics"]["command_throughput"] == 100.0
    assert result["spread"]["command_throughput"] == pytest.approx(0.03) and result["spread"]["matmul_tflops"] == 0.0
    assert result["comparison"] == [{"metric": "command_throughput", "value": 100.0, "baseline": 90.0, "ratio": pytest.approx(100 / 90.0),
                                     "band": pytest.approx(4 * 1.4826 / 100.0),
                                     "band_why": "4 x the ratio's deviation: the repeats' deviation 1.5% here (5 runs), 0.0% in "
                                                 "the baseline (1 run)", "verdict": "faster", "ok": True}]


def test_a_drop_inside_a_wide_noise_band_is_within_noise_not_a_failure_mocked_gpu(tmp_path, capsys):
    # Runs 100, 80, 120: their median absolute deviation is 20 (a deviation of 29.7%, a band of 118.6%); 0.833 of a
    # 120 baseline is below min_ratio 0.95 but inside the band.
    root = fake_gpu_venv(tmp_path)
    args = dict(path=root, command=[os.path.join(root, "bin", "python"), throughput_script(tmp_path, [100, 80, 120])],
                command_regex=r"tokens/s: ([0-9.]+)", baseline={"command_throughput": 120.0}, **SMALL)
    failed, result = run_main(args, capsys)
    assert not failed, result
    [row] = result["comparison"]
    assert (row["verdict"], row["band"], row["ok"]) == ("within noise", pytest.approx(4 * 1.4826 * 0.2), True)
    assert result["notes"] == ["command_throughput: the noise band 118.6% is wider than the tolerance 5.0% (min_ratio 0.95); "
                               "take more repeats or longer runs"]


def test_a_drop_beyond_the_band_and_the_tolerance_fails_mocked_gpu(tmp_path, capsys):
    root = fake_gpu_venv(tmp_path)
    baseline = {"metrics": {"command_throughput": 120.0}, "runs": {"command_throughput": [119.0, 120.0, 121.0]}}
    args = dict(path=root, command=[os.path.join(root, "bin", "python"), throughput_script(tmp_path, [100, 99, 101])],
                command_regex=r"tokens/s: ([0-9.]+)", baseline=baseline, **SMALL)
    failed, result = run_main(args, capsys)
    assert failed
    assert result["msg"] == ("slower than the baseline: command_throughput 100.0 is 0.833 of the baseline 120.0: 16.7% slower "
                             "(min_ratio 0.95, noise band 7.7%)")
    assert result["comparison"][0]["verdict"] == "slower"


def test_bad_repeats_and_noise_are_named(capsys):
    failed, result = run_main(dict(path="/nonexistent", repeats=0, noise=2.0), capsys)
    assert failed
    assert result["msg"] == "repeats must be >= 1, got 0; noise must be at least 0 and below 1 (a fraction: 0.02 is 2%), got 2.0"
