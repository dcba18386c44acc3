# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The modules' argument specs, built from one entry per option; choices are the engine's own constants.

Private to the gpuops.cuda_venv collection: not a public API.

Flat in module_utils because it sits above every group: a face's options name what the engine offers.
Their documentation is plugins/doc_fragments/venv.py (the shared ones) and each module's DOCUMENTATION.
"""

from __future__ import annotations

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.swap import STRATEGIES
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.base_options import BASE, copies
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import PRUNE_MODES
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.installers import BACKEND_KINDS
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.guard_state import UV_CONFIG_KINDS
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.record_check import MODES as VERIFY_MODES
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._verify.benchmark import BenchmarkRequest, BenchmarkSpec
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._verify.side_by_side import SWAP_MIN_RATIO

# probe_timeout: the repair's also bounds probe_command, a check of the user's own (a training step), so it is longer.
FACTS_PROBE_TIMEOUT = 120
REPAIR_PROBE_TIMEOUT = 300
# The benchmark's sizes default to the engine's.
_SIZES = BenchmarkSpec()
_JUDGING = BenchmarkRequest(path="")

# Options more than one module takes, each with its one spec (those no engine part shapes in _core/base_options.py).
SHARED = dict(
    BASE,
    anchor=dict(type="str", default="torch"),
    probe=dict(type="bool", default=True),
    verify=dict(type="str", choices=list(VERIFY_MODES), default="size"),
    ld_library_path=dict(type="list", elements="path", default=[]),
    no_index=dict(type="bool", default=False),
    gpu_archs=dict(type="list", elements="str", default=[]),
)
WHEEL_SOURCES = ("find_links", "index_url", "extra_index_urls", "no_index")


def shared(*names) -> dict:
    """Fresh copies of the ``SHARED`` entries named (a default list is never shared between two specs)."""
    return copies(SHARED, *names)


def facts_arguments() -> dict:
    """AnsibleModule's keyword arguments for cuda_venv_facts."""
    spec = dict(
        **shared("path", "anchor", "probe"),
        probe_timeout=dict(type="float", default=FACTS_PROBE_TIMEOUT),
        **shared("verify", "ld_library_path"),
        gpu=dict(type="bool", default=True),
        **shared(*WHEEL_SOURCES),
        **shared("gpu_archs"),
    )
    return dict(argument_spec=spec, supports_check_mode=True)


def repair_arguments() -> dict:
    """AnsibleModule's keyword arguments for cuda_venv_repair."""
    spec = dict(
        **shared("path", "anchor"),
        packages=dict(type="list", elements="str", default=[]),
        remove=dict(type="list", elements="str", default=[]),
        prune=dict(type="str", choices=list(PRUNE_MODES), default="cuda"),
        revert_edits=dict(type="bool", default=False),
        **shared(*WHEEL_SOURCES),
        with_dependencies=dict(type="bool", default=False),
        backend=dict(type="str", choices=list(BACKEND_KINDS), default="auto"),
        uv_executable=dict(type="path"),
        batch_size=dict(type="int", default=4),
        batch=dict(type="int"),
        **shared("probe"),
        probe_command=dict(type="list", elements="str", default=[]),
        probe_timeout=dict(type="float", default=REPAIR_PROBE_TIMEOUT),
        installer_timeout=dict(type="float", default=3600),
        lock_timeout=dict(type="float", default=0),
        **shared("verify", "ld_library_path"),
        strategy=dict(type="str", choices=list(STRATEGIES), default="auto"),
        keep_previous=dict(type="int", default=1),
        swap_back=dict(type="bool", default=False),
        verify_before_swap=dict(type="bool", default=False),
        benchmark=dict(type="dict", options=measuring(SWAP_MIN_RATIO)),
        guard=dict(type="bool", default=False),
        guard_uv_config=dict(type="str", choices=list(UV_CONFIG_KINDS), default="none"),
        facts=dict(type="bool", default=False),
        **shared("gpu_archs"),
    )
    return dict(argument_spec=spec, supports_check_mode=True)


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
