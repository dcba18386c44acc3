# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for benchmark_entry: the benchmark module's params made into one BenchmarkRequest."""

from __future__ import annotations

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._entry.benchmark_entry import benchmark_arguments, benchmark_request
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._verify import benchmark as B


def test_the_request_takes_every_param():
    params = dict(path="/v", matmul_size=1000, matmul_iterations=10, warmup_iterations=3, copy_mib=100, copy_iterations=4, device=1,
                  command=["/v/bin/python", "step.py"], command_regex="x ([0-9]+)", command_timeout=60.0, baseline=None,
                  baseline_path="/b.json", save_path="/s.json", min_ratio=0.9, repeats=5, noise=0.03, require_gpu=True, timeout=30.0,
                  ld_library_path=["/usr/local/cuda/lib64"])
    assert benchmark_request(params, check_mode=True) == B.BenchmarkRequest(
        path="/v", spec=B.BenchmarkSpec(1000, 10, 3, 100, 4, 1), command=("/v/bin/python", "step.py"), command_regex="x ([0-9]+)",
        command_timeout=60.0, baseline=None, baseline_path="/b.json", save_path="/s.json", min_ratio=0.9, repeats=5, noise=0.03,
        require_gpu=True,
        timeout=30.0, ld_library_path=("/usr/local/cuda/lib64",), check_mode=True)


def test_the_params_the_spec_gives_by_default_make_the_engines_defaults():
    params = {key: spec.get("default") for key, spec in benchmark_arguments()["argument_spec"].items()}
    assert benchmark_request(dict(params, path="/v")) == B.BenchmarkRequest(path="/v")
