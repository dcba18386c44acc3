# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for benchmark: report parsing, regex extraction, baselines, comparison, and real script runs without a GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._verify import benchmark as B
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._verify import judge as J
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import SubprocessRunner, clean_env

from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils.recording_runner import RecordingRunner, reply


def venv_with_torch(tmp_path, init_source=None):
    """A real venv (no pip); with ``init_source``, a ``torch`` package whose __init__.py is that source."""
    root = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = str(root / "bin" / "python")
    if init_source is not None:
        purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 capture_output=True, text=True, check=True).stdout.strip()
        os.makedirs(os.path.join(purelib, "torch"))
        with open(os.path.join(purelib, "torch", "__init__.py"), "w", encoding="utf-8") as handle:
            handle.write(init_source)
    return python


# --- the script's report -------------------------------------------------------------------------------------------

def test_parse_report_takes_the_last_marker_line_and_ignores_noise():
    stdout = "noise\nCUDA_VENV_BENCHMARK {\"status\": \"error\"}\nmore noise CUDA_VENV_BENCHMARK {}\n" \
             "CUDA_VENV_BENCHMARK {\"status\": \"measured\", \"metrics\": {\"copy_gbps\": 1.5}}\ntrailing"
    assert B.parse_report(stdout) == {"status": "measured", "metrics": {"copy_gbps": 1.5}}


@pytest.mark.parametrize("stdout", ["", "no marker\n", "CUDA_VENV_BENCHMARK {not json\n", "CUDA_VENV_BENCHMARK [1, 2]\n"])
def test_parse_report_without_a_readable_report(stdout):
    assert B.parse_report(stdout) is None


def test_measurement_of_a_full_report():
    report = {"status": "measured", "reason": None, "metrics": {"matmul_tflops": 781, "copy_gbps": 4301.5},
              "device": {"name": "NVIDIA H200"}, "versions": {"torch": "2.9.1+cu128", "cuda": "12.8"}}
    assert B.measurement_of(report) == B.Measurement("measured", None, {"matmul_tflops": 781.0, "copy_gbps": 4301.5},
                                                     {"name": "NVIDIA H200"}, {"torch": "2.9.1+cu128", "cuda": "12.8"})


@pytest.mark.parametrize("report, reason", [
    ({"status": "fine"}, "benchmark reported an unknown status 'fine'"),
    ({"status": "measured", "metrics": {"matmul_tflops": "fast"}}, "benchmark reported metric 'matmul_tflops' = 'fast': not a known number"),
    ({"status": "measured", "metrics": {"copy_gbps": True}}, "benchmark reported metric 'copy_gbps' = True: not a known number"),
    ({"status": "measured", "metrics": {"flops": 1.0}}, "benchmark reported metric 'flops' = 1.0: not a known number"),
])
def test_measurement_of_a_bad_report_is_an_error(report, reason):
    assert B.measurement_of(report) == B.Measurement("error", reason, {}, {}, {})


# --- the user command's throughput ---------------------------------------------------------------------------------

OUTPUT = "step 1 throughput: 1,180.5 samples/s\nstep 2 throughput: 1,234.5 samples/s\ndone\n"


def test_extract_throughput_takes_the_last_match_of_the_only_group():
    assert B.extract_throughput(OUTPUT, r"throughput: ([0-9.,]+) samples/s") == 1234.5


def test_extract_throughput_with_a_named_group_among_others():
    assert B.extract_throughput(OUTPUT, r"step (\d+) throughput: (?P<value>[0-9.,]+)") == 1234.5


def test_extract_throughput_when_nothing_matches_quotes_the_last_lines():
    with pytest.raises(B.BenchmarkError) as info:
        B.extract_throughput(OUTPUT + "\n\n", r"tokens/s: ([0-9.]+)")
    assert str(info.value) == ("command_regex 'tokens/s: ([0-9.]+)' matched nothing in the command's output; its last lines: "
                               "step 1 throughput: 1,180.5 samples/s | step 2 throughput: 1,234.5 samples/s | done")


def test_extract_throughput_of_empty_output():
    with pytest.raises(B.BenchmarkError, match=r"matched nothing in the command's output; its last lines: \(no output\)$"):
        B.extract_throughput("", r"x ([0-9]+)")


def test_extract_throughput_capture_that_is_not_a_number():
    with pytest.raises(B.BenchmarkError) as info:
        B.extract_throughput("rate: n/a\n", r"rate: (\S+)")
    assert str(info.value) == "command_regex 'rate: (\\\\S+)' captured 'n/a', which is not a number"


@pytest.mark.parametrize("pattern, message", [
    (r"rate: ([0-9", "command_regex 'rate: ([0-9' is not a valid regular expression: "),
    (r"rate: [0-9.]+", "command_regex 'rate: [0-9.]+' must capture the number in one group, or in a group named 'value'; it has 0 groups"),
    (r"(\w+): ([0-9.]+)", "command_regex '(\\\\w+): ([0-9.]+)' must capture the number in one group, or in a group named 'value'; it has 2 groups"),
])
def test_compile_throughput_regex_rejects(pattern, message):
    with pytest.raises(B.BenchmarkError) as info:
        B.compile_throughput_regex(pattern)
    assert str(info.value).startswith(message)


# --- baselines and comparison --------------------------------------------------------------------------------------

RESULT = {"changed": False, "metrics": {"matmul_tflops": 780.0, "copy_gbps": 4300.0}, "device": {"name": "NVIDIA H200"},
          "spec": B.BenchmarkSpec().as_dict(), "summary": "..."}


def test_baseline_metrics_of_a_result_a_stored_record_and_a_bare_dict():
    assert B.baseline_metrics(RESULT) == {"matmul_tflops": 780.0, "copy_gbps": 4300.0}
    assert B.baseline_metrics({"metrics": {"command_throughput": 12, "future_metric": 3}}) == {"command_throughput": 12.0}
    assert B.baseline_metrics({"matmul_tflops": 700, "copy_gbps": None}) == {"matmul_tflops": 700.0}


@pytest.mark.parametrize("baseline", [
    None, {},
    {"changed": False, "skipped": True, "false_condition": "x", "skip_reason": "Conditional result was False"},
    {"skipped": True, "msg": "skipped: torch.cuda.is_available() is False", "metrics": {}},
])
def test_baseline_metrics_of_nothing_or_a_skipped_run(baseline):
    assert B.baseline_metrics(baseline) == {}


@pytest.mark.parametrize("baseline, message", [
    ([780.0], "baseline must be a dict (a benchmark result or its metrics), got list"),
    ({"metrics": [1]}, "baseline metrics must be a dict, got list"),
    ({"tflops": 780.0}, "baseline metric 'tflops' is unknown: known metrics are matmul_tflops, copy_gbps, command_throughput"),
    ({"matmul_tflops": 0}, "baseline metric matmul_tflops = 0 is not a positive number"),
    ({"metrics": {"copy_gbps": "4300"}}, "baseline metric copy_gbps = '4300' is not a positive number"),
])
def test_baseline_metrics_rejects(baseline, message):
    with pytest.raises(B.BenchmarkError) as info:
        B.baseline_metrics(baseline)
    assert str(info.value) == message


def test_baseline_runs_of_a_record_with_runs_and_of_bare_metrics():
    record = {"metrics": {"matmul_tflops": 780.0, "copy_gbps": 4300.0}, "runs": {"matmul_tflops": [770, 780.0, 790.0]}}
    assert B.baseline_runs(record) == {"matmul_tflops": [770.0, 780.0, 790.0], "copy_gbps": [4300.0]}
    assert B.baseline_runs({"command_throughput": 12}) == {"command_throughput": [12.0]}
    assert B.baseline_runs({"skipped": True, "metrics": {}, "runs": {}}) == {}


@pytest.mark.parametrize("baseline, message", [
    ({"metrics": {"copy_gbps": 1.0}, "runs": [1.0]}, "baseline runs must be a dict of lists, got list"),
    ({"metrics": {"copy_gbps": 1.0}, "runs": {"copy_gbps": []}}, "baseline runs of copy_gbps = [] are not a list of positive numbers"),
    ({"metrics": {"copy_gbps": 1.0}, "runs": {"copy_gbps": [1.0, -2]}},
     "baseline runs of copy_gbps = [1.0, -2] are not a list of positive numbers"),
])
def test_baseline_runs_rejects(baseline, message):
    with pytest.raises(B.BenchmarkError) as info:
        B.baseline_runs(baseline)
    assert str(info.value) == message


def test_load_baseline_reads_what_was_stored(tmp_path):
    measured = B.Measurement("measured", None, {}, {"name": "NVIDIA H200"}, {"torch": "2.9.1"})
    series = B.Series("/opt/venvs/train/bin/python", measurement=measured, runs={"matmul_tflops": [790.0, 770.0, 780.0]})
    record = B.stored_record(series, B.BenchmarkSpec(matmul_size=4096), "/opt/venvs/train")
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    assert B.load_baseline(str(path)) == {
        "venv": "/opt/venvs/train", "metrics": {"matmul_tflops": 780.0}, "runs": {"matmul_tflops": [790.0, 770.0, 780.0]},
        "device": {"name": "NVIDIA H200"},
        "versions": {"torch": "2.9.1"},
        "spec": {"matmul_size": 4096, "matmul_iterations": 50, "warmup_iterations": 5, "copy_mib": 1024, "copy_iterations": 20, "device": 0}}


def test_load_baseline_errors_name_the_file(tmp_path):
    missing = str(tmp_path / "missing.json")
    with pytest.raises(B.BenchmarkError, match="^baseline_path %s cannot be read: No such file or directory$" % missing):
        B.load_baseline(missing)
    bad = tmp_path / "bad.json"
    bad.write_text("{", encoding="utf-8")
    with pytest.raises(B.BenchmarkError, match="^baseline_path %s is not JSON: " % bad):
        B.load_baseline(str(bad))
    listed = tmp_path / "list.json"
    listed.write_text("[]", encoding="utf-8")
    with pytest.raises(B.BenchmarkError, match="^baseline_path %s holds list, not a JSON object with 'metrics'$" % listed):
        B.load_baseline(str(listed))


def test_mismatches_name_another_device_and_other_sizes():
    current = {"device": {"name": "NVIDIA H100 80GB HBM3"}, "spec": dict(B.BenchmarkSpec().as_dict(), matmul_size=4096, device=1)}
    assert B.mismatches(current, RESULT) == ["the baseline was measured on NVIDIA H200, this run on NVIDIA H100 80GB HBM3",
                                             "the baseline used matmul_size=8192, this run 4096"]
    assert B.mismatches({"device": {}, "spec": {}}, {}) == []


def test_summary_line_with_medians_ratios_verdicts_and_bands():
    rows = J.compare({"matmul_tflops": [781.44], "copy_gbps": [4301.7]}, {"matmul_tflops": [780.0]}, 0.95, 0.02)[0]
    assert B.summary({"matmul_tflops": 781.44, "copy_gbps": 4301.7}, "NVIDIA H200", rows, "compared with the baseline") == (
        "NVIDIA H200: matmul_tflops 781.4 TFLOP/s (1.002x baseline, within noise, band 2.0%), copy_gbps 4301.7 GB/s; "
        "compared with the baseline")
    assert B.summary({"command_throughput": 3.25}, "GPU", [], "no baseline to compare with") == (
        "GPU: command_throughput 3.25 /s; no baseline to compare with")


def test_spec_problems_name_each_field():
    spec = B.BenchmarkSpec(matmul_size=0, matmul_iterations=-1, warmup_iterations=-1, copy_mib=0, copy_iterations=0, device=-2)
    assert spec.problems() == ["matmul_size must be >= 1, got 0", "matmul_iterations must be >= 1, got -1", "copy_mib must be >= 1, got 0",
                               "copy_iterations must be >= 1, got 0", "warmup_iterations must be >= 0, got -1", "device must be >= 0, got -2"]
    with pytest.raises(B.BenchmarkError, match="^matmul_size must be >= 1, got 0; "):
        B.run_benchmark("/venv/bin/python", spec, RecordingRunner())


# --- running the script --------------------------------------------------------------------------------------------

def test_run_benchmark_argv_cwd_env_and_timeout():
    runner = RecordingRunner([reply(stdout='CUDA_VENV_BENCHMARK {"status": "no_gpu", "reason": "none here"}\n')])
    spec = B.BenchmarkSpec(matmul_size=256, matmul_iterations=3)
    measured = B.run_benchmark("/opt/venvs/train/bin/python", spec, runner, ld_library_path=["/usr/local/cuda/lib64", "/x"], timeout=42.0)
    assert measured == B.Measurement("no_gpu", "none here", {}, {}, {})
    [call] = runner.calls
    assert call.argv == ("/opt/venvs/train/bin/python", "-I", "-B", "-c", B.BENCHMARK_SCRIPT,
                         '{"copy_iterations": 20, "copy_mib": 1024, "device": 0, "matmul_iterations": 3, "matmul_size": 256, '
                         '"warmup_iterations": 5}')
    assert call.env == clean_env({"LD_LIBRARY_PATH": "/usr/local/cuda/lib64:/x"})
    assert call.timeout == 42.0
    assert os.path.basename(call.cwd).startswith("cuda_venv_benchmark_") and not os.path.exists(call.cwd)


def test_run_benchmark_timed_out_and_died():
    spec = B.BenchmarkSpec()
    runner = RecordingRunner([reply(rc=-9, stderr="warming up\n", timed_out=True), reply(rc=-6, stderr="")])
    assert B.run_benchmark("/v/bin/python", spec, runner, timeout=5) == B.Measurement(
        "error", "benchmark in /v/bin/python did not finish within 5 s; its process group was killed: warming up", {}, {}, {})
    assert B.run_benchmark("/v/bin/python", spec, runner) == B.Measurement(
        "error", "benchmark in /v/bin/python exited with code -6 and no report", {}, {}, {})


def test_script_in_a_real_venv_without_torch(tmp_path):
    python = venv_with_torch(tmp_path)
    measured = B.run_benchmark(python, B.BenchmarkSpec(), SubprocessRunner())
    assert measured == B.Measurement("import_failed", "import torch failed: ModuleNotFoundError: No module named 'torch'", {}, {}, {})


def test_script_in_a_real_venv_whose_torch_crashes(tmp_path):
    python = venv_with_torch(tmp_path, "import os\nprint('loading libcudnn', flush=True)\nos.abort()\n")
    measured = B.run_benchmark(python, B.BenchmarkSpec(), SubprocessRunner())
    assert measured == B.Measurement("error", "benchmark in %s exited with code -6 and no report" % python, {}, {}, {})


def test_script_in_a_real_venv_whose_cuda_query_raises(tmp_path):
    source = ("__version__ = '2.9.1+cu128'\n"
              "class version:\n    cuda = '12.8'\n"
              "class cuda:\n    @staticmethod\n    def is_available():\n        raise RuntimeError('CUDA driver initialization failed')\n")
    measured = B.run_benchmark(venv_with_torch(tmp_path, source), B.BenchmarkSpec(), SubprocessRunner())
    assert measured == B.Measurement("no_gpu", "torch.cuda raised RuntimeError: CUDA driver initialization failed", {}, {},
                                     {"torch": "2.9.1+cu128", "cuda": "12.8"})


# --- the module's one call: benchmark(request, runner) -----------------------------------------------------------

NO_GPU_TORCH = ("__version__ = '2.9.1+cu128'\n"
                "class version:\n    cuda = '12.8'\n"
                "class cuda:\n    @staticmethod\n    def is_available():\n        return False\n")
NO_GPU_REASON = "torch.cuda.is_available() is False (torch 2.9.1+cu128, CUDA 12.8)"


def venv_root(python):
    return os.path.dirname(os.path.dirname(python))


def empty_result(**changes):
    result = {"changed": False, "metrics": {}, "runs": {}, "spread": {}, "repeats": 3, "noise": 0.02, "device": {}, "versions": {},
              "spec": B.BenchmarkSpec().as_dict(), "baseline": {}, "comparison": [], "regressions": [], "notes": [], "summary": "",
              "saved": None}
    result.update(changes)
    return result


def test_request_problems_name_each_bad_value_in_order():
    request = B.BenchmarkRequest(path="/v", spec=B.BenchmarkSpec(copy_mib=0), timeout=0, command_timeout=-1.0, min_ratio=0,
                                 repeats=0, noise=1.0, command_regex="(a)(b)", ld_library_path=("lib", "/a:/b", "/ok"))
    assert request.problems() == [
        "copy_mib must be >= 1, got 0", "timeout must be positive, got 0", "command_timeout must be positive, got -1.0",
        "repeats must be >= 1, got 0", "min_ratio must be positive, got 0",
        "noise must be at least 0 and below 1 (a fraction: 0.02 is 2%), got 1.0", "command_regex is given but command is empty",
        "command_regex '(a)(b)' must capture the number in one group, or in a group named 'value'; it has 2 groups",
        "ld_library_path entry 'lib' is not an absolute folder path", "ld_library_path entry '/a:/b' is not an absolute folder path"]
    assert B.BenchmarkRequest(path="/v", command=("/bin/true",)).problems() == [
        "command_regex is required with command: it reads the throughput from the command's output"]
    assert B.BenchmarkRequest(path="/v").problems() == []


def test_benchmark_of_a_bad_request_fails_with_every_problem_and_no_result():
    runner = RecordingRunner()
    outcome = B.benchmark(B.BenchmarkRequest(path="/nonexistent", min_ratio=0), runner)
    assert outcome == B.BenchmarkOutcome({}, failed=True, msg="min_ratio must be positive, got 0")
    assert runner.calls == []


def test_benchmark_of_a_folder_that_is_not_a_venv(tmp_path):
    outcome = B.benchmark(B.BenchmarkRequest(path=str(tmp_path)), RecordingRunner())
    assert outcome == B.BenchmarkOutcome(empty_result(), failed=True, msg="path %s is not a venv: no pyvenv.cfg" % tmp_path)


def test_benchmark_with_an_unreadable_baseline_path_runs_nothing(tmp_path):
    root = venv_root(venv_with_torch(tmp_path))
    runner = RecordingRunner()
    outcome = B.benchmark(B.BenchmarkRequest(path=root, baseline_path=str(tmp_path / "absent.json")), runner)
    assert outcome == B.BenchmarkOutcome(empty_result(), failed=True, msg="baseline_path %s cannot be read: No such file or directory"
                                         % (tmp_path / "absent.json"))
    assert runner.calls == []


def test_benchmark_in_a_real_venv_without_torch_fails_as_broken(tmp_path):
    root = venv_root(venv_with_torch(tmp_path))
    outcome = B.benchmark(B.BenchmarkRequest(path=root), SubprocessRunner())
    assert outcome == B.BenchmarkOutcome(empty_result(), failed=True, msg=(
        "import torch failed: ModuleNotFoundError: No module named 'torch' in %s: the venv is broken; "
        "diagnose it with gpuops.cuda_venv.cuda_venv_facts" % root))


def test_benchmark_without_a_gpu_skips_with_the_reason_and_saves_nothing(tmp_path):
    root = venv_root(venv_with_torch(tmp_path, NO_GPU_TORCH))
    save_path = str(tmp_path / "baseline.json")
    request = B.BenchmarkRequest(path=root, baseline={"matmul_tflops": 780.0}, save_path=save_path)
    runner = RecordingRunner(passthrough=True)
    outcome = B.benchmark(request, runner)
    assert outcome == B.BenchmarkOutcome(empty_result(versions={"torch": "2.9.1+cu128", "cuda": "12.8"}, baseline={"matmul_tflops": 780.0},
                                                      summary="skipped: " + NO_GPU_REASON), skipped=True, msg="skipped: " + NO_GPU_REASON)
    assert not os.path.exists(save_path)
    assert len(runner.calls) == 1  # no GPU: the built-in measurement is not repeated


def test_benchmark_without_a_gpu_still_runs_the_command_each_repeat(tmp_path):
    python = venv_with_torch(tmp_path, NO_GPU_TORCH)
    root = venv_root(python)
    counter = tmp_path / "count"
    step = tmp_path / "step.py"
    # A real workload: each run prints one more than the last (the first run is 100 tokens/s).
    step.write_text("import pathlib\np = pathlib.Path(%r)\nn = int(p.read_text()) if p.exists() else 99\np.write_text(str(n + 1))\n"
                    "print('tokens/s: %%d' %% (n + 1))\n" % str(counter), encoding="utf-8")
    request = B.BenchmarkRequest(path=root, command=(python, str(step)), command_regex=r"tokens/s: (\d+)",
                                 baseline={"metrics": {"command_throughput": 100.0}, "runs": {"command_throughput": [99.0, 100.0, 101.0]}})
    runner = RecordingRunner(passthrough=True)
    outcome = B.benchmark(request, runner)
    assert not outcome.failed and not outcome.skipped, outcome
    result = outcome.result
    assert len(runner.calls) == 4  # one built-in run (no GPU), three command runs
    assert result["runs"] == {"command_throughput": [100.0, 101.0, 102.0]}
    assert result["metrics"] == {"command_throughput": 101.0}
    assert result["spread"] == {"command_throughput": pytest.approx(2.0 / 101.0)}
    sigma = 1.4826 / 101.0, 1.4826 / 100.0  # each side's repeats one apart: their median absolute deviation is 1
    assert result["comparison"] == [{"metric": "command_throughput", "value": 101.0, "baseline": 100.0, "ratio": 1.01,
                                     "band": pytest.approx(4 * (sigma[0] ** 2 + sigma[1] ** 2) ** 0.5),
                                     "band_why": "4 x the ratio's deviation: the repeats' deviation 1.5% here (3 runs), "
                                                 "1.5% in the baseline (3 runs)", "verdict": "within noise", "ok": True}]
    assert result["summary"] == ("built-in benchmark skipped (%s): command_throughput 101.0 /s (1.010x baseline, within noise, "
                                 "band 8.3%%); compared with the baseline" % NO_GPU_REASON)


def test_benchmark_without_a_gpu_fails_when_one_is_required(tmp_path):
    root = venv_root(venv_with_torch(tmp_path, NO_GPU_TORCH))
    outcome = B.benchmark(B.BenchmarkRequest(path=root, require_gpu=True), SubprocessRunner())
    assert outcome == B.BenchmarkOutcome(empty_result(versions={"torch": "2.9.1+cu128", "cuda": "12.8"}),
                                         failed=True, msg="no GPU to benchmark (require_gpu is true): " + NO_GPU_REASON)


def test_no_baseline_note_says_why_nothing_was_compared():
    assert B.no_baseline_note({}) == "no baseline to compare with"
    assert B.no_baseline_note({"skipped": True, "msg": "skipped: no GPU"}) == (
        "no baseline to compare with (the baseline run was skipped: skipped: no GPU)")
    assert B.no_baseline_note({"skipped": True, "skip_reason": "Conditional result was False"}) == (
        "no baseline to compare with (the baseline run was skipped: Conditional result was False)")
    assert B.no_baseline_note({"skipped": True}) == "no baseline to compare with (the baseline run was skipped: no reason given)"


# --- the saved record ----------------------------------------------------------------------------------------------

def test_save_record_writes_durably_once_and_never_in_check_mode(tmp_path):
    path = str(tmp_path / "baseline.json")
    record = {"metrics": {"copy_gbps": 4301.7}, "venv": "/v"}
    assert B.save_record(path, record, check_mode=True) is True and os.listdir(str(tmp_path)) == []
    assert B.save_record(path, record, check_mode=False) is True
    with open(path, encoding="utf-8") as handle:
        assert handle.read() == '{\n "metrics": {\n  "copy_gbps": 4301.7\n },\n "venv": "/v"\n}\n'
    mask = os.umask(0o022)
    os.umask(mask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~mask
    assert B.save_record(path, record, check_mode=False) is False
    assert B.save_record(path, record, check_mode=True) is False
    assert B.save_record(path, dict(record, venv="/w"), check_mode=True) is True
    assert B.save_record(path, dict(record, venv="/w"), check_mode=False) is True
    assert os.listdir(str(tmp_path)) == ["baseline.json"]  # no temporary file left beside it
    with open(path, encoding="utf-8") as handle:
        assert json.load(handle)["venv"] == "/w"


def test_save_record_into_a_missing_folder_names_it(tmp_path):
    path = str(tmp_path / "absent" / "baseline.json")
    with pytest.raises(B.BenchmarkError) as caught:
        B.save_record(path, {}, check_mode=False)
    assert str(caught.value) == "save_path %s cannot be written: No such file or directory" % path
