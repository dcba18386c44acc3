# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cuda_venv_repair module's entry: its argument spec, and its params made into one repair: checked, the venv's
layout read once, turned into RepairOptions, run, secrets kept out.

Private to the gpuops.cuda_venv collection: not a public API.

The options' documentation is the module's DOCUMENTATION and plugins/doc_fragments/venv.py.
"""

from __future__ import annotations

import dataclasses
import re
from typing import List

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.venv_guard import GuardOptions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.repair import repair
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.run import RepairOptions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.swap import IN_PLACE, STRATEGIES, finish_missing_root
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import DISTRIBUTION_NAME
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.redact import redact
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import Runner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.performance import compute_capability_problems
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import PRUNE_MODES, DesiredState
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._entry.benchmark_entry import benchmark_request, measuring
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.install_guard import InstallCheck
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.installers import (
    BACKEND_KINDS, WheelSources, recorded_installer, select_backend)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._options import LOCK_OPTIONS, WHEEL_SOURCES, lock_of, shared
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.guard_state import UV_CONFIG_KINDS
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import FactsOptions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.probe import library_path_problems
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.requirements import parse_requirement
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import read_layout
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._verify.benchmark import BenchmarkRequest
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._verify.side_by_side import SWAP_MIN_RATIO

# What remove and anchor may hold: a distribution name, never an installer option or a shell word.
_NAME = re.compile(r"^%s$" % DISTRIBUTION_NAME)
# probe_timeout: longer than the facts' (_entry/facts_entry.py): it also bounds probe_command, a check of the user's own.
REPAIR_PROBE_TIMEOUT = 300


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
        probe=dict(type="bool", default=True),
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
        plan_only=dict(type="bool", default=False),
        **shared("gpu_archs"),
        **shared(*LOCK_OPTIONS),
    )
    return dict(argument_spec=spec, supports_check_mode=True)


def request_problems(params: dict) -> List[str]:
    """Every problem with the params, each naming the bad value."""
    problems = []
    for key in ("batch_size", "batch"):
        if params[key] is not None and params[key] < 1:
            problems.append("%s must be >= 1, got %d" % (key, params[key]))
    for key in ("probe_timeout", "installer_timeout"):
        if params[key] <= 0:
            problems.append("%s must be positive, got %s" % (key, params[key]))
    problems.extend(library_path_problems(params["ld_library_path"]))
    if params["keep_previous"] < 0:
        problems.append("keep_previous must be >= 0, got %d" % params["keep_previous"])
    if params["lock_timeout"] < 0:
        problems.append("lock_timeout must be >= 0, got %s" % params["lock_timeout"])
    for name in params["remove"] + [params["anchor"]]:
        if not _NAME.match(name):
            problems.append("invalid distribution name %r: letters, digits, '.', '_' and '-' only" % name)
    if params["verify_before_swap"] and params["strategy"] == IN_PLACE:
        problems.append("verify_before_swap needs strategy swap or auto: in place there is no copy to benchmark")
    if params["verify_before_swap"]:
        problems.extend("benchmark: %s" % p for p in swap_benchmark(params).problems())
    if params["guard_uv_config"] != "none" and not params["guard"]:
        problems.append("guard_uv_config=%s needs guard=true" % params["guard_uv_config"])
    problems.extend(compute_capability_problems(params["gpu_archs"]))
    for text in params["packages"]:
        try:
            parse_requirement(text)
        except ValueError as exc:
            problems.append(str(exc))
    if params["lock"] is not None and params["packages"]:
        problems.append("packages and lock are two declared states: give the packages in the lock, or drop lock")
    return problems


def swap_benchmark(params: dict) -> BenchmarkRequest:
    """What verify_before_swap measures: the ``benchmark`` option (the engine's defaults when not given) on the live venv."""
    if not params["benchmark"]:
        return BenchmarkRequest(path=params["path"], ld_library_path=tuple(params["ld_library_path"]), min_ratio=SWAP_MIN_RATIO)
    return benchmark_request(dict(params["benchmark"], path=params["path"], ld_library_path=params["ld_library_path"],
                                  baseline=None, baseline_path=None, save_path=None, require_gpu=False))


def repair_from_params(params: dict, runner: Runner, check_mode: bool = False, diff: bool = False) -> dict:
    """The whole repair module: the repair's result, or CudaVenvError (partial result in ``result``), secrets redacted.

    A venv path that is missing because a swap was killed between its two renames is completed first (not in
    check mode); the installer backend is chosen once the venv has been observed.
    """
    problems = request_problems(params)
    if params["facts"] and not (check_mode or params["plan_only"]):
        problems.append("facts=true needs check mode or plan_only=true: a real run's facts are the diagnosis after it "
                        "(cuda_venv_facts)")
    lock = None
    try:
        lock = lock_of(params)
    except CudaVenvError as exc:
        problems.append(str(exc))
    if problems:
        raise CudaVenvError("; ".join(problems))
    secrets = tuple(s for s in [params["index_url"]] + params["extra_index_urls"] if s)
    try:
        sources = WheelSources(find_links=tuple(params["find_links"]), index_url=params["index_url"],
                               extra_index_urls=tuple(params["extra_index_urls"]), no_index=params["no_index"])
        secrets = secrets + tuple(sources.secrets())
        if not (check_mode or params["plan_only"]):
            finish_missing_root(params["path"])
        layout = read_layout(params["path"])

        def make_backend(observed):
            locked = observed.lock
            found = dataclasses.replace(sources, find_links=sources.find_links + locked.wheel_folders()) if locked else sources
            return select_backend(params["backend"], layout.python, runner, found,
                                  uv_path=params["uv_executable"], timeout=params["installer_timeout"],
                                  recorded=recorded_installer(observed.distributions),
                                  has_pip=any(d.key == "pip" for d in observed.distributions), lock=locked)
        options = RepairOptions(
            facts=FactsOptions(path=layout.root, anchor=params["anchor"], verify=params["verify"],
                               ld_library_path=tuple(params["ld_library_path"]), probe_timeout=params["probe_timeout"],
                               roots=tuple(params["packages"]), wheel_sources=sources, gpu_archs=tuple(params["gpu_archs"]),
                               lock=lock, lock_extras=tuple(params["lock_extras"]),
                               lock_groups=None if params["lock_groups"] is None else tuple(params["lock_groups"])),
            desired=DesiredState(packages=tuple(params["packages"]), remove=tuple(params["remove"]),
                                 prune=params["prune"], batch_size=params["batch_size"],
                                 revert_edits=params["revert_edits"]),
            probe=params["probe"], probe_command=tuple(params["probe_command"]), batch=params["batch"],
            lock_timeout=params["lock_timeout"], check_mode=check_mode or params["plan_only"], diff=diff,
            keep_index=params["plan_only"] and not check_mode,
            install_check=InstallCheck(sources, tuple(params["packages"]), params["with_dependencies"],
                                       tuple(params["gpu_archs"])),
            strategy=params["strategy"], keep_previous=params["keep_previous"], swap_back=params["swap_back"],
            guard=GuardOptions(enabled=params["guard"], uv_config=params["guard_uv_config"]), report_facts=params["facts"],
            verify_before_swap=swap_benchmark(dict(params, path=layout.root)) if params["verify_before_swap"] else None)
        return repair(options, layout, make_backend, runner, secrets)
    except CudaVenvError as exc:
        raise CudaVenvError(redact(str(exc), secrets), exc.result) from None
