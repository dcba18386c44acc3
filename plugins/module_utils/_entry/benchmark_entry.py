# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cuda_venv_benchmark module's entry: its argument spec and its params made into a BenchmarkRequest.

Private to the gpuops.cuda_venv collection: not a public API.

The request checks itself (``BenchmarkRequest.problems``); the options' documentation is the module's DOCUMENTATION.
"""

from __future__ import annotations

from dataclasses import fields

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._options import shared
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._verify.benchmark import BenchmarkRequest, BenchmarkSpec

# The benchmark's sizes and judging default to the engine's.
_SIZES = BenchmarkSpec()
_JUDGING = BenchmarkRequest(path="")


def measuring(min_ratio: float) -> dict:
    """What a benchmark measures and how it judges: the benchmark module's options, and the repair's ``benchmark``."""
    return dict(
        matmul_size=dict(type="int", default=_SIZES.matmul_size),
        matmul_iterations=dict(type="int", default=_SIZES.matmul_iterations),
        warmup_iterations=dict(type="int", default=_SIZES.warmup_iterations),
        copy_mib=dict(type="int", default=_SIZES.copy_mib),
        copy_iterations=dict(type="int", default=_SIZES.copy_iterations),
        device=dict(type="int", default=_SIZES.device),
        command=dict(type="list", elements="str", default=[]),
        command_regex=dict(type="str"),
        command_timeout=dict(type="float", default=600),
        min_ratio=dict(type="float", default=min_ratio),
        repeats=dict(type="int", default=_JUDGING.repeats),
        noise=dict(type="float", default=_JUDGING.noise),
        timeout=dict(type="float", default=600),
    )


def benchmark_arguments() -> dict:
    """AnsibleModule's keyword arguments for cuda_venv_benchmark."""
    spec = dict(
        **shared("path"),
        **measuring(_JUDGING.min_ratio),
        baseline=dict(type="dict"),
        baseline_path=dict(type="path"),
        save_path=dict(type="path"),
        require_gpu=dict(type="bool", default=False),
        **shared("ld_library_path"),
    )
    return dict(argument_spec=spec, supports_check_mode=True, mutually_exclusive=[("baseline", "baseline_path")])


def benchmark_request(params: dict, check_mode: bool = False) -> BenchmarkRequest:
    """The request the benchmark module's params make (and the repair's ``benchmark`` option, completed)."""
    spec = BenchmarkSpec(**{f.name: params[f.name] for f in fields(BenchmarkSpec)})
    return BenchmarkRequest(path=params["path"], spec=spec, command=tuple(params["command"]), command_regex=params["command_regex"],
                            command_timeout=params["command_timeout"], baseline=params["baseline"],
                            baseline_path=params["baseline_path"], save_path=params["save_path"], min_ratio=params["min_ratio"],
                            repeats=params["repeats"], noise=params["noise"], require_gpu=params["require_gpu"],
                            timeout=params["timeout"], ld_library_path=tuple(params["ld_library_path"]), check_mode=check_mode)
