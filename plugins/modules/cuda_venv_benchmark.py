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
  - Runs each measurement O(repeats) times and reports every run, the median and the spread (max - min over the
    median).
  - Compares each metric's median with a baseline (O(baseline), for example the registered result of a run before a
    repair, or O(baseline_path)) and judges it in a noise band that the measurements give - 4 times the ratio's
    relative standard deviation, estimated from each side's repeats (1.4826 times their median absolute deviation, so
    one outlier does not widen it), never narrower than O(noise). A metric fails when it is below O(min_ratio) of its
    baseline and below the band, saying by how much; a drop inside the band is reported as C(within noise), never
    failed. Each comparison says the band and why (C(band_why)).
  - Without a GPU, or when torch.cuda.is_available() is false, the built-in measurements are skipped with the reason,
    unless O(require_gpu=true); O(command) still runs O(repeats) times and is compared, and without a command the task
    is skipped. When torch does not import at all, the venv is broken and the module fails.
author:
  - gpuops.cuda_venv contributors (@gpuops)
extends_documentation_fragment:
  - gpuops.cuda_venv.attributes
  - gpuops.cuda_venv.compiled_code
  - gpuops.cuda_venv.venv
attributes:
  check_mode:
    support: full
    details: Measures and compares as usual; O(save_path) is not written.
  diff_mode:
    support: none
requirements:
  - torch in the venv; a CUDA GPU to measure anything
options:
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
        as C(/opt/venvs/train/bin/python). It runs after the built-in measurements (with or without a GPU), from an
        empty directory with a clean environment; its throughput is read from its output with O(command_regex).
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
    description: Seconds the command may take, per run.
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
    description: Write this run's metrics (medians), runs, device, versions and sizes as JSON here (a baseline for later runs).
    type: path
  min_ratio:
    description: Fail when a metric's median is below this fraction of its baseline's and below the noise band.
    type: float
    default: 0.95
  repeats:
    description: Runs of each measurement (the built-in ones and O(command)); each metric's median is compared.
    type: int
    default: 3
  noise:
    description:
      - The narrowest noise band, a fraction - 0.02 is 2%, the run-to-run variation measured on an H200 for the
        matmul and for a training step's tokens/s. The band is widened to 4 times the ratio's relative standard
        deviation that both sides' repeats give (on an H200, two back-to-back sets of three matmul runs of an
        unchanged venv had medians 5.9% apart, a band of about 7.6% there).
    type: float
    default: 0.02
  require_gpu:
    description: Fail instead of skipping when there is no GPU or torch.cuda.is_available() is false.
    type: bool
    default: false
  timeout:
    description: Seconds the built-in measurements may take, per run.
    type: float
    default: 600
notes:
  - The module itself needs only the Python standard library on the managed node.
  - An H200 reaches about 750-800 TFLOP/s on the default matmul and about 4.2 TB/s on the copy; two runs of the matmul
    differed by 1.7%, two runs of a training step by 1.4%.
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

- name: A training step's own throughput, five runs each, compared with a stored baseline
  gpuops.cuda_venv.cuda_venv_benchmark:
    path: /opt/venvs/train
    command: [/opt/venvs/train/bin/python, /opt/jobs/step.py, --steps, "20"]
    command_regex: 'throughput: ([0-9.]+) samples/s'
    baseline_path: /var/lib/gpuops/train-baseline.json
    min_ratio: 0.9
    repeats: 5
"""

RETURN = r"""
metrics:
  description: The median of each metric's runs - C(matmul_tflops), C(copy_gbps) and, with O(command), C(command_throughput); empty when skipped.
  returned: always
  type: dict
  sample: {"matmul_tflops": 781.4, "copy_gbps": 4301.7}
runs:
  description: Every run's value of each metric, in the order measured.
  returned: always
  type: dict
  sample: {"matmul_tflops": [764.7, 751.8, 760.2]}
spread:
  description: Per metric, (max - min) / median of its runs.
  returned: always
  type: dict
repeats:
  description: O(repeats) as used.
  returned: always
  type: int
noise:
  description: O(noise) as used, the narrowest band.
  returned: always
  type: float
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
  description:
    - Per metric C(metric), C(value) and C(baseline) (medians), C(ratio) (value / baseline), C(band) (the noise band it
      was judged in), C(band_why) (the floor, or 4 times the ratio's deviation, with each side's deviation and runs),
      C(verdict) (V(faster), V(within noise), V(slower, within min_ratio), V(slower)) and C(ok).
  returned: always
  type: list
  elements: dict
regressions:
  description: One sentence per metric below O(min_ratio) of its baseline and below the noise band.
  returned: always
  type: list
  elements: str
notes:
  description: Why a comparison may mislead (another device, other sizes than the baseline's, a noise band wider than the tolerance).
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
  description: The command's C(argv), its return code C(rc) and the last 4000 characters of its C(output), of its last run.
  returned: when O(command) is given and ran
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.bytecode_cache import enable as enable_bytecode_cache

enable_bytecode_cache()  # first: the collection's code imported below is then compiled once per node, not per run

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.process_end import skip_last_collection
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import SubprocessRunner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._entry.benchmark_entry import benchmark_arguments, benchmark_request
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._verify.benchmark import benchmark


def main():
    skip_last_collection()  # the process's exit walks none of what the module read
    module = AnsibleModule(**benchmark_arguments())
    outcome = benchmark(benchmark_request(module.params, module.check_mode), SubprocessRunner())
    for note in outcome.warnings:
        module.warn(note)
    if outcome.failed:
        module.fail_json(msg=outcome.msg, **outcome.result)
    if outcome.skipped:
        module.exit_json(skipped=True, msg=outcome.msg, **outcome.result)
    module.exit_json(**outcome.result)


if __name__ == "__main__":
    main()
