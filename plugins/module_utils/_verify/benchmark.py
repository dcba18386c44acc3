# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Measure a venv's GPU throughput in its own interpreter and compare it with a baseline.

Private to the gpuops.cuda_venv collection: not a public API.

The measurement runs as a subprocess of the venv's interpreter, like the import
probe (_read/probe.py): ``-I -B``, a fresh empty working directory, a clean
environment and a timeout.  It times a bf16 matmul (TFLOP/s, 2 n^3 per
multiply) and a device-to-device copy (GB/s, bytes read plus bytes written)
with CUDA events, warm-up iterations excluded; optionally a user command's
throughput is read from its output by a regex.  Each measurement runs
``repeats`` times; the medians are compared with the baseline and judged in a
noise band (judge.py).  Without a GPU the built-in measurements are skipped and
the user's command still runs.  ``benchmark(request, runner)`` is the whole of
the cuda_venv_benchmark module.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.durable import replace_file
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import REPORT_PRELUDE, Runner, clean_env, marker_report
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.probe import library_path_env, library_path_problems, run_check
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import read_layout
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._verify.judge import (
    METRICS, UNITS, MetricComparison, check_tolerance, compare, judged, medians, noise_notes, number, spreads)

MARKER = "CUDA_VENV_BENCHMARK "

# Statuses the script reports.
MEASURED = "measured"
NO_GPU = "no_gpu"
IMPORT_FAILED = "import_failed"
ERROR = "error"

# Characters of the script's stderr quoted when it dies without a report.
_TAIL = 2000

BENCHMARK_SCRIPT = REPORT_PRELUDE + r'''
MIB = 1024 * 1024


def emit(report):
    report_and_exit(''' + repr(MARKER) + r''', report, 0)


def timed(torch, device, step, warmup, iterations):
    # Seconds for `iterations` steps, timed by CUDA events after `warmup` untimed steps.
    for _ in range(warmup):
        step()
    torch.cuda.synchronize(device)
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iterations):
        step()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1000.0


def measure(torch, device, spec, metrics):
    n = spec["matmul_size"]
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    c = torch.empty(n, n, device=device, dtype=torch.bfloat16)
    seconds = timed(torch, device, lambda: torch.matmul(a, b, out=c), spec["warmup_iterations"], spec["matmul_iterations"])
    if seconds <= 0:
        raise RuntimeError("CUDA events timed the matmul at %r s" % seconds)
    metrics["matmul_tflops"] = 2.0 * n * n * n * spec["matmul_iterations"] / seconds / 1e12
    del a, b, c
    nbytes = spec["copy_mib"] * MIB
    src = torch.empty(nbytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    seconds = timed(torch, device, lambda: dst.copy_(src), spec["warmup_iterations"], spec["copy_iterations"])
    if seconds <= 0:
        raise RuntimeError("CUDA events timed the copy at %r s" % seconds)
    metrics["copy_gbps"] = 2.0 * nbytes * spec["copy_iterations"] / seconds / 1e9


def main():
    spec = json.loads(sys.argv[1])
    report = {"status": None, "reason": None, "metrics": {}, "device": {}, "versions": {}}
    try:
        import torch
    except BaseException as exc:
        report.update(status="import_failed", reason="import torch failed: " + exception_line(exc))
        emit(report)
    report["versions"] = {"torch": str(getattr(torch, "__version__", None)),
                          "cuda": getattr(getattr(torch, "version", None), "cuda", None)}
    try:
        available = bool(torch.cuda.is_available())
        count = int(torch.cuda.device_count()) if available else 0
    except BaseException as exc:
        report.update(status="no_gpu", reason="torch.cuda raised " + exception_line(exc))
        emit(report)
    if not available:
        report.update(status="no_gpu", reason="torch.cuda.is_available() is False (torch %s, CUDA %s)" % (
            report["versions"]["torch"], report["versions"]["cuda"]))
        emit(report)
    if spec["device"] >= count:
        report.update(status="error", reason="device %d does not exist: torch sees %d CUDA device(s)" % (spec["device"], count))
        emit(report)
    try:
        device = torch.device("cuda", spec["device"])
        torch.cuda.set_device(device)
        props = torch.cuda.get_device_properties(device)
        report["device"] = {"index": spec["device"], "name": str(props.name),
                            "capability": "%d.%d" % (props.major, props.minor),
                            "memory_mib": int(props.total_memory) // MIB}
        measure(torch, device, spec, report["metrics"])
    except BaseException as exc:
        report.update(status="error", reason="benchmark failed: " + exception_line(exc))
        emit(report)
    report["status"] = "measured"
    emit(report)


main()
'''


class BenchmarkError(CudaVenvError, ValueError):
    """Bad input (options, baseline, regex) or output that cannot be read; the message names it."""


@dataclass(frozen=True)
class BenchmarkSpec:
    """What to measure: matmul size and iterations, copy size and iterations, warm-up, device index."""

    matmul_size: int = 8192
    matmul_iterations: int = 50
    warmup_iterations: int = 5
    copy_mib: int = 1024
    copy_iterations: int = 20
    device: int = 0

    def as_dict(self) -> dict:
        return {"matmul_size": self.matmul_size, "matmul_iterations": self.matmul_iterations,
                "warmup_iterations": self.warmup_iterations, "copy_mib": self.copy_mib,
                "copy_iterations": self.copy_iterations, "device": self.device}

    def problems(self) -> List[str]:
        """Each bad field, named with its value."""
        found = []
        for name in ("matmul_size", "matmul_iterations", "copy_mib", "copy_iterations"):
            if getattr(self, name) < 1:
                found.append("%s must be >= 1, got %d" % (name, getattr(self, name)))
        for name in ("warmup_iterations", "device"):
            if getattr(self, name) < 0:
                found.append("%s must be >= 0, got %d" % (name, getattr(self, name)))
        return found


@dataclass(frozen=True)
class Measurement:
    """What the script reported: status (measured, no_gpu, import_failed, error), why, metrics, device, versions."""

    status: str
    reason: Optional[str]
    metrics: dict
    device: dict
    versions: dict


@dataclass(frozen=True)
class BenchmarkRequest:
    """What the module was asked: the venv, what to measure, a command of the user's, the baseline, where to save."""

    path: str
    spec: BenchmarkSpec = field(default_factory=BenchmarkSpec)
    command: Tuple[str, ...] = ()
    command_regex: Optional[str] = None
    command_timeout: float = 600.0
    baseline: Optional[dict] = None  # a result, a stored record or bare metrics; exclusive with baseline_path
    baseline_path: Optional[str] = None
    save_path: Optional[str] = None
    min_ratio: float = 0.95
    repeats: int = 3
    noise: float = 0.02
    require_gpu: bool = False
    timeout: float = 600.0
    ld_library_path: Tuple[str, ...] = ()
    check_mode: bool = False  # measure and compare, write nothing

    def problems(self) -> List[str]:
        """Every problem with the request, each naming the bad value."""
        found = self.spec.problems()
        for key in ("timeout", "command_timeout"):
            if getattr(self, key) <= 0:
                found.append("%s must be positive, got %s" % (key, getattr(self, key)))
        if self.repeats < 1:
            found.append("repeats must be >= 1, got %d" % self.repeats)
        found.extend(check_tolerance(self.min_ratio, self.noise))
        if self.command and not self.command_regex:
            found.append("command_regex is required with command: it reads the throughput from the command's output")
        if self.command_regex and not self.command:
            found.append("command_regex is given but command is empty")
        if self.command_regex:
            try:
                compile_throughput_regex(self.command_regex)
            except BenchmarkError as exc:
                found.append(str(exc))
        found.extend(library_path_problems(self.ld_library_path))
        return found


@dataclass(frozen=True)
class BenchmarkOutcome:
    """What the module reports: ``result``; ``failed`` or ``skipped`` with ``msg``; ``warnings`` to show either way."""

    result: dict
    failed: bool = False
    skipped: bool = False
    msg: Optional[str] = None
    warnings: Tuple[str, ...] = ()


def benchmark(request: BenchmarkRequest, runner: Runner) -> BenchmarkOutcome:
    """The whole benchmark module: check the request, measure ``repeats`` times, compare, save the record."""
    problems = request.problems()
    if problems:
        return BenchmarkOutcome({}, failed=True, msg="; ".join(problems))
    result = {"changed": False, "metrics": {}, "runs": {}, "spread": {}, "repeats": request.repeats, "noise": request.noise,
              "device": {}, "versions": {}, "spec": request.spec.as_dict(), "baseline": {}, "comparison": [], "regressions": [],
              "notes": [], "summary": "", "saved": None}
    try:
        layout = read_layout(request.path)
        baseline_record = load_baseline(request.baseline_path) if request.baseline_path else request.baseline or {}
        result["baseline"] = baseline_metrics(baseline_record)
        base_runs = baseline_runs(baseline_record)
        series = Series(venv_python(layout.root), request.command)
        problem = measure(series, request, runner)
    except CudaVenvError as exc:
        return BenchmarkOutcome(result, failed=True, msg=str(exc))
    measured = series.measurement
    result.update(device=measured.device, versions=measured.versions, runs=series.runs, metrics=medians(series.runs),
                  spread=spreads(series.runs))
    if series.command_run is not None:
        result["command"] = series.command_run
    if problem:
        return BenchmarkOutcome(result, failed=True, msg=problem)
    if measured.status == NO_GPU and not request.command:
        result["summary"] = "skipped: %s" % measured.reason
        return BenchmarkOutcome(result, skipped=True, msg=result["summary"])
    metrics = result["metrics"]
    rows, regressions = compare(series.runs, base_runs, request.min_ratio, request.noise)
    notes = mismatches({"device": measured.device, "spec": request.spec.as_dict()}, baseline_record) if rows else []
    notes += noise_notes(rows, request.min_ratio)
    result.update(comparison=[row.as_dict() for row in rows], regressions=regressions, notes=notes)
    result["summary"] = summary(metrics, series.head(), rows, "compared with the baseline" if rows else no_baseline_note(baseline_record))
    if request.save_path:
        try:
            result["changed"] = save_record(request.save_path, stored_record(series, request.spec, layout.root), request.check_mode)
        except BenchmarkError as exc:
            return BenchmarkOutcome(result, failed=True, msg=str(exc), warnings=tuple(notes))
        result["saved"] = request.save_path
    if regressions:
        return BenchmarkOutcome(result, failed=True, msg="slower than the baseline: %s" % "; ".join(regressions), warnings=tuple(notes))
    return BenchmarkOutcome(result, warnings=tuple(notes))


@dataclass
class Series:
    """Every run in one venv: the built-in benchmark's last report, each metric's values, the command's last run."""

    python: str
    command: Tuple[str, ...] = ()
    measurement: Optional[Measurement] = None
    runs: Dict[str, List[float]] = field(default_factory=dict)
    command_run: Optional[dict] = None

    @property
    def builtin_on(self) -> bool:
        """The built-in measurements run until one says there is no GPU."""
        return self.measurement is None or self.measurement.status == MEASURED

    def head(self) -> str:
        """What the summary starts with: the device, or why the built-in measurements were skipped."""
        if self.measurement is not None and self.measurement.status == NO_GPU:
            return "built-in benchmark skipped (%s)" % self.measurement.reason
        return (self.measurement.device if self.measurement else {}).get("name") or "GPU"


def measure(series: Series, request: BenchmarkRequest, runner: Runner) -> Optional[str]:
    """``request.repeats`` rounds into ``series``; the first failure (a sentence), or None."""
    for _round in range(request.repeats):
        if not series.builtin_on and not series.command:
            break
        problem = measure_once(series, request, runner)
        if problem:
            return problem
    return None


def measure_once(series: Series, request: BenchmarkRequest, runner: Runner) -> Optional[str]:
    """One run of the built-in measurements (while there is a GPU) and of the command; the failure, or None."""
    if series.builtin_on:
        measured = series.measurement = run_benchmark(series.python, request.spec, runner,
                                                      ld_library_path=request.ld_library_path, timeout=request.timeout)
        if measured.status == NO_GPU and request.require_gpu:
            return "no GPU to benchmark (require_gpu is true): %s" % measured.reason
        if measured.status == IMPORT_FAILED:
            return "%s in %s: the venv is broken; diagnose it with gpuops.cuda_venv.cuda_venv_facts" % (
                measured.reason, os.path.dirname(os.path.dirname(series.python)))
        if measured.status == ERROR:
            return measured.reason
        for name, value in measured.metrics.items():
            series.runs.setdefault(name, []).append(value)
    if series.command:
        check = run_check(list(series.command), runner, ld_library_path=request.ld_library_path, timeout=request.command_timeout)
        series.command_run = {"argv": list(check.argv), "rc": check.returncode, "output": check.output}
        if not check.ok:
            return "command failed: %s" % check.error
        try:
            series.runs.setdefault("command_throughput", []).append(extract_throughput(check.output, request.command_regex))
        except BenchmarkError as exc:
            return str(exc)
    return None


def run_benchmark(python: str, spec: BenchmarkSpec, runner: Runner, *, ld_library_path: Sequence[str] = (),
                  timeout: float = 600.0) -> Measurement:
    """Run the benchmark script with the venv's ``python``; a process that dies without a report is an error."""
    problems = spec.problems()
    if problems:
        raise BenchmarkError("; ".join(problems))
    extra = library_path_env(ld_library_path)
    argv = [python, "-I", "-B", "-c", BENCHMARK_SCRIPT, json.dumps(spec.as_dict(), sort_keys=True)]
    workdir = tempfile.mkdtemp(prefix="cuda_venv_benchmark_")
    try:
        result = runner.run(argv, cwd=workdir, env=clean_env(extra), timeout=timeout)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report = parse_report(result.stdout)
    if report is None:
        if result.timed_out:
            why = "did not finish within %g s; its process group was killed" % timeout
        else:
            why = "exited with code %d and no report" % result.rc
        tail = result.stderr.strip()[-_TAIL:]
        return Measurement(ERROR, "benchmark in %s %s%s" % (python, why, ": " + tail if tail else ""), {}, {}, {})
    return measurement_of(report)


def parse_report(stdout: str) -> Optional[dict]:
    """The last ``CUDA_VENV_BENCHMARK {json}`` line's object, or None when there is none."""
    return marker_report(stdout, MARKER)


def measurement_of(report: dict) -> Measurement:
    """A Measurement from the script's report; unknown statuses and non-numeric metrics are errors."""
    status = report.get("status")
    if status not in (MEASURED, NO_GPU, IMPORT_FAILED, ERROR):
        return Measurement(ERROR, "benchmark reported an unknown status %r" % (status,), {}, {}, {})
    metrics = {}
    for name, value in (report.get("metrics") or {}).items():
        if name not in UNITS or isinstance(value, bool) or not isinstance(value, (int, float)):
            return Measurement(ERROR, "benchmark reported metric %r = %r: not a known number" % (name, value), {}, {}, {})
        metrics[name] = float(value)
    return Measurement(status, report.get("reason"), metrics, dict(report.get("device") or {}),
                       dict(report.get("versions") or {}))


def compile_throughput_regex(pattern: str):
    """The compiled regex; it must have one group or a group named ``value`` (the number)."""
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise BenchmarkError("command_regex %r is not a valid regular expression: %s" % (pattern, exc)) from None
    if "value" not in regex.groupindex and regex.groups != 1:
        raise BenchmarkError("command_regex %r must capture the number in one group, or in a group named 'value'; it has %d groups"
                             % (pattern, regex.groups))
    return regex


def extract_throughput(output: str, pattern: str) -> float:
    """The number captured by the LAST match of ``pattern`` in ``output`` (thousands separators allowed)."""
    regex = compile_throughput_regex(pattern)
    matches = list(regex.finditer(output))
    if not matches:
        lines = [line for line in output.strip().splitlines() if line.strip()]
        tail = " | ".join(lines[-3:]) if lines else "(no output)"
        raise BenchmarkError("command_regex %r matched nothing in the command's output; its last lines: %s" % (pattern, tail))
    last = matches[-1]
    text = last.group("value") if "value" in regex.groupindex else last.group(1)
    try:
        return float((text or "").replace(",", "").replace("_", ""))
    except ValueError:
        raise BenchmarkError("command_regex %r captured %r, which is not a number" % (pattern, text)) from None


def baseline_metrics(baseline: Optional[dict]) -> Dict[str, float]:
    """The metrics of a baseline: a benchmark result or stored file ({"metrics": {...}}), or a bare metrics dict.

    A skipped baseline (no GPU, or a task skipped by ``when``) has none: {}.
    """
    if not baseline:
        return {}
    if not isinstance(baseline, dict):
        raise BenchmarkError("baseline must be a dict (a benchmark result or its metrics), got %s" % type(baseline).__name__)
    record = "metrics" in baseline
    if not record and baseline.get("skipped"):
        return {}
    source = baseline["metrics"] if record else baseline
    if not isinstance(source or {}, dict):
        raise BenchmarkError("baseline metrics must be a dict, got %s" % type(source).__name__)
    metrics = {}
    for name, value in (source or {}).items():
        if name not in UNITS:
            if record:
                continue
            raise BenchmarkError("baseline metric %r is unknown: known metrics are %s" % (name, ", ".join(UNITS)))
        if value is None:
            continue
        if not _positive(value):
            raise BenchmarkError("baseline metric %s = %r is not a positive number" % (name, value))
        metrics[name] = float(value)
    return metrics


def baseline_runs(baseline: Optional[dict]) -> Dict[str, List[float]]:
    """Each baseline metric's runs: those a result or stored record lists under ``runs``, else its one value."""
    metrics = baseline_metrics(baseline)
    listed = (baseline or {}).get("runs") if "metrics" in (baseline or {}) else None
    if not isinstance(listed or {}, dict):
        raise BenchmarkError("baseline runs must be a dict of lists, got %s" % type(listed).__name__)
    runs = {}
    for name, value in metrics.items():
        values = (listed or {}).get(name)
        if values is None:
            runs[name] = [value]
        elif isinstance(values, list) and values and all(_positive(v) for v in values):
            runs[name] = [float(v) for v in values]
        else:
            raise BenchmarkError("baseline runs of %s = %r are not a list of positive numbers" % (name, values))
    return runs


def _positive(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and value > 0


def load_baseline(path: str) -> dict:
    """A stored baseline (the JSON that ``save_path`` writes)."""
    try:
        with open(path, "r", encoding="utf-8") as handle:
            data = json.load(handle)
    except OSError as exc:
        raise BenchmarkError("baseline_path %s cannot be read: %s" % (path, exc.strerror or exc)) from None
    except ValueError as exc:
        raise BenchmarkError("baseline_path %s is not JSON: %s" % (path, exc)) from None
    if not isinstance(data, dict):
        raise BenchmarkError("baseline_path %s holds %s, not a JSON object with 'metrics'" % (path, type(data).__name__))
    return data


def mismatches(current: dict, baseline: dict) -> List[str]:
    """Why a comparison may mislead: another device or other benchmark sizes than the baseline's."""
    notes = []
    name, old_name = (current.get("device") or {}).get("name"), (baseline.get("device") or {}).get("name")
    if name and old_name and name != old_name:
        notes.append("the baseline was measured on %s, this run on %s" % (old_name, name))
    spec, old_spec = current.get("spec") or {}, baseline.get("spec") or {}
    for key in sorted(set(spec) & set(old_spec)):
        if key != "device" and spec[key] != old_spec[key]:
            notes.append("the baseline used %s=%s, this run %s" % (key, old_spec[key], spec[key]))
    return notes


def stored_record(series: Series, spec: BenchmarkSpec, venv: str) -> dict:
    """What ``save_path`` holds: the medians (the command's included), every run, and what was measured, where and how."""
    measured = series.measurement
    return {"venv": venv, "metrics": medians(series.runs), "runs": dict(series.runs), "device": dict(measured.device),
            "versions": dict(measured.versions), "spec": spec.as_dict()}


def summary(metrics: Dict[str, float], head: str, rows: Sequence[MetricComparison], baseline_note: str) -> str:
    """One line: the device, each metric's median with its unit and, when compared, its ratio, verdict and band."""
    compared = {row.metric: row for row in rows}
    parts = []
    for name, unit in METRICS:
        if name in metrics:
            text = "%s %s %s" % (name, number(metrics[name]), unit)
            if name in compared:
                text += " (%s)" % judged(compared[name])
            parts.append(text)
    return "%s: %s; %s" % (head, ", ".join(parts), baseline_note)


def venv_python(root: str) -> str:
    """The venv's interpreter path (not resolved: its bin/python link is what makes it that venv)."""
    return os.path.join(root, "bin", "python")


def no_baseline_note(record: dict) -> str:
    """What the summary says when nothing was compared: there was no baseline, or the baseline run was skipped."""
    if record.get("skipped"):
        return "no baseline to compare with (the baseline run was skipped: %s)" % (
            record.get("msg") or record.get("skip_reason") or "no reason given")
    return "no baseline to compare with"


def save_record(path: str, record: dict, check_mode: bool) -> bool:
    """Make ``path`` hold ``record`` as JSON unless it already holds exactly that; True when it changes (or would)."""
    data = (json.dumps(record, indent=1, sort_keys=True) + "\n").encode("utf-8")
    try:
        with open(path, "rb") as handle:
            if handle.read() == data:
                return False
    except OSError:
        pass
    if not check_mode:
        try:
            replace_file(path, data, mode=0o666 & ~_umask())
        except OSError as exc:
            raise BenchmarkError("save_path %s cannot be written: %s" % (path, exc.strerror or exc)) from None
    return True


def _umask() -> int:
    """The process's umask (a new file's bits, as open() would give them)."""
    mask = os.umask(0o077)
    os.umask(mask)
    return mask
