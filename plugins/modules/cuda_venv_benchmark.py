#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cuda_venv_benchmark
short_description: Measure a CUDA venv's GPU throughput and compare it with a baseline
version_added: "1.0.0"
description:
  - Runs a short benchmark in the venv's own interpreter (a subprocess with C(-I), an empty working directory, a clean
    environment and a timeout) - a bf16 matmul in TFLOP/s and a device-to-device copy in GB/s (bytes read plus bytes
    written), timed with CUDA events, warm-up iterations excluded - and optionally O(command), whose throughput is read
    from its output by O(command_regex).
  - Compares each metric with a baseline (O(baseline), for example the registered result of a run before a repair, or
    O(baseline_path)) and fails when one is below O(min_ratio) of it, saying by how much.
  - Without a GPU, or when torch.cuda.is_available() is false, the task is skipped with the reason, unless
    O(require_gpu=true). When torch does not import at all, the venv is broken and the module fails.
author:
  - gpuops.cuda_venv contributors (@gpuops)
extends_documentation_fragment:
  - gpuops.cuda_venv.attributes
attributes:
  check_mode:
    support: full
    details: Measures and compares as usual; O(save_path) is not written.
  diff_mode:
    support: none
requirements:
  - torch in the venv; a CUDA GPU to measure anything
options:
  path:
    description: Absolute path of the venv's root (the directory that holds C(pyvenv.cfg)).
    type: path
    required: true
  matmul_size:
    description: Side n of the square bf16 matrices; each multiply counts 2 n^3 operations.
    type: int
    default: 8192
  matmul_iterations:
    description: Timed multiplies.
    type: int
    default: 50
  warmup_iterations:
    description: Untimed multiplies and copies before each timed run.
    type: int
    default: 5
  copy_mib:
    description: MiB per device-to-device copy.
    type: int
    default: 1024
  copy_iterations:
    description: Timed copies.
    type: int
    default: 20
  device:
    description: CUDA device index.
    type: int
    default: 0
  command:
    description:
      - A workload of your own (for example a short training step) as an argv list, no shell, with absolute paths such
        as C(/opt/venvs/train/bin/python). It runs after the built-in measurements, from an empty directory with a
        clean environment; its throughput is read from its output with O(command_regex).
    type: list
    elements: str
    default: []
  command_regex:
    description:
      - Regular expression (Python syntax) whose last match in the command's output (stdout then stderr, last 4000
        characters) captures the throughput, in its only group or a group named C(value).
      - "For example, the regex 'throughput: ([0-9.]+) samples/s' reads 1234.5 from 'throughput: 1234.5 samples/s'.
        Required with O(command)."
    type: str
  command_timeout:
    description: Seconds the command may take.
    type: float
    default: 600
  baseline:
    description:
      - The baseline - the registered result of an earlier run of this module, a stored record (as O(save_path)
        writes), or a bare C(metrics) dictionary. A skipped result has no metrics and compares nothing.
    type: dict
  baseline_path:
    description: A JSON file written by O(save_path) on the managed node, used as the baseline.
    type: path
  save_path:
    description: Write this run's metrics, device, versions and sizes as JSON here (a baseline for later runs).
    type: path
  min_ratio:
    description: Fail when a metric is below this fraction of its baseline.
    type: float
    default: 0.95
  require_gpu:
    description: Fail instead of skipping when there is no GPU or torch.cuda.is_available() is false.
    type: bool
    default: false
  timeout:
    description: Seconds the built-in measurements may take.
    type: float
    default: 600
  ld_library_path:
    description: The C(LD_LIBRARY_PATH) the workload runs with (directories).
    type: list
    elements: path
    default: []
notes:
  - The module itself needs only the Python standard library on the managed node.
  - An H200 reaches about 770-800 TFLOP/s on the default matmul and about 4.3 TB/s on the copy.
seealso:
  - module: gpuops.cuda_venv.cuda_venv_repair
"""

EXAMPLES = r"""
- name: Record a baseline before a change
  gpuops.cuda_venv.cuda_venv_benchmark:
    path: /opt/venvs/train
  register: before

- name: Compare after the change; fail below 95 %
  gpuops.cuda_venv.cuda_venv_benchmark:
    path: /opt/venvs/train
    baseline: "{{ before }}"

- name: A training step's own throughput, compared with a stored baseline
  gpuops.cuda_venv.cuda_venv_benchmark:
    path: /opt/venvs/train
    command: [/opt/venvs/train/bin/python, /opt/jobs/step.py, --steps, "20"]
    command_regex: 'throughput: ([0-9.]+) samples/s'
    baseline_path: /var/lib/gpuops/train-baseline.json
    min_ratio: 0.9
"""

RETURN = r"""
metrics:
  description: C(matmul_tflops), C(copy_gbps) and, with O(command), C(command_throughput); empty when skipped.
  returned: always
  type: dict
  sample: {"matmul_tflops": 781.4, "copy_gbps": 4301.7}
device:
  description: C(index), C(name), C(capability), C(memory_mib) of the measured device.
  returned: always
  type: dict
versions:
  description: torch and CUDA versions the venv reports.
  returned: always
  type: dict
spec:
  description: The sizes and iterations used.
  returned: always
  type: dict
baseline:
  description: The baseline metrics compared with (empty when there were none).
  returned: always
  type: dict
comparison:
  description: Per metric C(metric), C(value), C(baseline), C(ratio) (value / baseline) and C(ok).
  returned: always
  type: list
  elements: dict
regressions:
  description: One sentence per metric below O(min_ratio) of its baseline.
  returned: always
  type: list
  elements: str
notes:
  description: Why a comparison may mislead (another device, other sizes than the baseline's).
  returned: always
  type: list
  elements: str
summary:
  description: One line, or the reason the measurement was skipped.
  returned: always
  type: str
saved:
  description: The O(save_path) written, or null.
  returned: always
  type: str
command:
  description: The command's C(argv), its return code C(rc) and the last 4000 characters of its C(output).
  returned: when O(command) is given and the GPU measurements ran
  type: dict
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._verify.benchmark import (
    IMPORT_FAILED, MEASURED, NO_GPU, BenchmarkError, BenchmarkSpec, baseline_metrics, compare, compile_throughput_regex,
    extract_throughput, load_baseline, mismatches, run_benchmark, stored_record, summary, venv_python)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.probe import run_check
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import SubprocessRunner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import read_layout

ARGUMENT_SPEC = dict(
    path=dict(type="path", required=True),
    matmul_size=dict(type="int", default=8192),
    matmul_iterations=dict(type="int", default=50),
    warmup_iterations=dict(type="int", default=5),
    copy_mib=dict(type="int", default=1024),
    copy_iterations=dict(type="int", default=20),
    device=dict(type="int", default=0),
    command=dict(type="list", elements="str", default=[]),
    command_regex=dict(type="str"),
    command_timeout=dict(type="float", default=600),
    baseline=dict(type="dict"),
    baseline_path=dict(type="path"),
    save_path=dict(type="path"),
    min_ratio=dict(type="float", default=0.95),
    require_gpu=dict(type="bool", default=False),
    timeout=dict(type="float", default=600),
    ld_library_path=dict(type="list", elements="path", default=[]),
)


def spec_of(params) -> BenchmarkSpec:
    return BenchmarkSpec(matmul_size=params["matmul_size"], matmul_iterations=params["matmul_iterations"],
                         warmup_iterations=params["warmup_iterations"], copy_mib=params["copy_mib"],
                         copy_iterations=params["copy_iterations"], device=params["device"])


def validate(params) -> list:
    """Every problem with the options, each naming the bad value."""
    problems = spec_of(params).problems()
    for key in ("timeout", "command_timeout", "min_ratio"):
        if params[key] <= 0:
            problems.append("%s must be positive, got %s" % (key, params[key]))
    if params["command"] and not params["command_regex"]:
        problems.append("command_regex is required with command: it reads the throughput from the command's output")
    if params["command_regex"] and not params["command"]:
        problems.append("command_regex is given but command is empty")
    if params["command_regex"]:
        try:
            compile_throughput_regex(params["command_regex"])
        except BenchmarkError as exc:
            problems.append(str(exc))
    for folder in params["ld_library_path"]:
        if ":" in folder or not os.path.isabs(folder):
            problems.append("ld_library_path entry %r is not an absolute folder path" % folder)
    return problems


def empty_result(spec: BenchmarkSpec) -> dict:
    return {"changed": False, "metrics": {}, "device": {}, "versions": {}, "spec": spec.as_dict(), "baseline": {},
            "comparison": [], "regressions": [], "notes": [], "summary": "", "saved": None}


def read_baseline(params) -> dict:
    """The baseline record (possibly empty) from O(baseline) or O(baseline_path)."""
    if params["baseline_path"]:
        return load_baseline(params["baseline_path"])
    return params["baseline"] or {}


def save(path: str, record: dict, check_mode: bool) -> bool:
    """Write ``record`` as JSON to ``path`` unless it already holds exactly that; True when it changes."""
    text = json.dumps(record, indent=1, sort_keys=True) + "\n"
    try:
        with open(path, "r", encoding="utf-8") as handle:
            if handle.read() == text:
                return False
    except OSError:
        pass
    if not check_mode:
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    return True


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True,
                           mutually_exclusive=[("baseline", "baseline_path")])
    params = module.params
    problems = validate(params)
    if problems:
        module.fail_json(msg="; ".join(problems))
    spec = spec_of(params)
    result = empty_result(spec)
    runner = SubprocessRunner()
    try:
        layout = read_layout(params["path"])
        baseline_record = read_baseline(params)
        result["baseline"] = baseline_metrics(baseline_record)
        measured = run_benchmark(venv_python(layout.root), spec, runner, ld_library_path=params["ld_library_path"],
                                 timeout=params["timeout"])
    except CudaVenvError as exc:
        module.fail_json(msg=str(exc), **result)
    result.update(device=measured.device, versions=measured.versions)
    if measured.status == NO_GPU:
        result["summary"] = "skipped: %s" % measured.reason
        if params["require_gpu"]:
            module.fail_json(msg="no GPU to benchmark (require_gpu is true): %s" % measured.reason, **result)
        module.exit_json(skipped=True, msg=result["summary"], **result)
    if measured.status == IMPORT_FAILED:
        module.fail_json(msg="%s in %s: the venv is broken; diagnose it with gpuops.cuda_venv.cuda_venv_facts"
                         % (measured.reason, layout.root), **result)
    if measured.status != MEASURED:
        module.fail_json(msg=measured.reason, **result)
    metrics = result["metrics"] = dict(measured.metrics)
    if params["command"]:
        check = run_check(params["command"], runner, ld_library_path=params["ld_library_path"],
                          timeout=params["command_timeout"])
        result["command"] = {"argv": list(check.argv), "rc": check.returncode, "output": check.output}
        if not check.ok:
            module.fail_json(msg="command failed: %s" % check.error, **result)
        try:
            metrics["command_throughput"] = extract_throughput(check.output, params["command_regex"])
        except BenchmarkError as exc:
            module.fail_json(msg=str(exc), **result)
    rows, regressions = compare(metrics, result["baseline"], params["min_ratio"])
    current = {"device": measured.device, "spec": spec.as_dict()}
    result.update(comparison=[row.as_dict() for row in rows], regressions=regressions,
                  notes=mismatches(current, baseline_record) if rows else [])
    for note in result["notes"]:
        module.warn(note)
    note = "compared with the baseline" if rows else _no_baseline(baseline_record)
    result["summary"] = summary(metrics, measured.device, rows, note)
    if params["save_path"]:
        result["changed"] = save(params["save_path"], stored_record(metrics, measured, spec, layout.root), module.check_mode)
        result["saved"] = params["save_path"]
    if regressions:
        module.fail_json(msg="slower than the baseline: %s" % "; ".join(regressions), **result)
    module.exit_json(**result)


def _no_baseline(record: dict) -> str:
    if record.get("skipped"):
        return "no baseline to compare with (the baseline run was skipped: %s)" % (
            record.get("msg") or record.get("skip_reason") or "no reason given")
    return "no baseline to compare with"


if __name__ == "__main__":
    main()
