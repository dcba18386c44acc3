# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The repair module's params made into one repair: checked, turned into RepairOptions, run, secrets kept out.

Private to the gpuops.cuda_venv collection: not a public API.

The params are those of the argument spec in plugins/module_utils/_options.py (``repair_arguments``).
"""

from __future__ import annotations

import re
from typing import List

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.venv_guard import GuardOptions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.repair import RepairOptions, repair
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.swap import IN_PLACE, finish_missing_root
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import DISTRIBUTION_NAME
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.redact import redact
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import Runner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import DesiredState
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.install_guard import InstallCheck
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.installers import WheelSources, recorded_installer, select_backend
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import FactsOptions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.probe import library_path_problems
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.requirements import parse_requirement
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import read_layout
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._verify.benchmark import BenchmarkRequest
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._verify.side_by_side import SWAP_MIN_RATIO

# What remove and anchor may hold: a distribution name, never an installer option or a shell word.
_NAME = re.compile(r"^%s$" % DISTRIBUTION_NAME)


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
    for text in params["packages"]:
        try:
            parse_requirement(text)
        except ValueError as exc:
            problems.append(str(exc))
    return problems


def swap_benchmark(params: dict) -> BenchmarkRequest:
    """What verify_before_swap measures: the ``benchmark`` option (the engine's defaults when not given) on the live venv."""
    if not params["benchmark"]:
        return BenchmarkRequest(path=params["path"], ld_library_path=tuple(params["ld_library_path"]), min_ratio=SWAP_MIN_RATIO)
    return BenchmarkRequest.from_params(dict(params["benchmark"], path=params["path"], ld_library_path=params["ld_library_path"],
                                             baseline=None, baseline_path=None, save_path=None, require_gpu=False))


def repair_from_params(params: dict, runner: Runner, check_mode: bool = False, diff: bool = False) -> dict:
    """The whole repair module: the repair's result, or CudaVenvError (partial result in ``result``), secrets redacted.

    A venv path that is missing because a swap was killed between its two renames is completed first (not in
    check mode); the installer backend is chosen once the venv has been observed.
    """
    problems = request_problems(params)
    if params["facts"] and not check_mode:
        problems.append("facts=true needs check mode: a real run's facts are the diagnosis after it (cuda_venv_facts)")
    if problems:
        raise CudaVenvError("; ".join(problems))
    secrets = tuple(s for s in [params["index_url"]] + params["extra_index_urls"] if s)
    try:
        sources = WheelSources(find_links=tuple(params["find_links"]), index_url=params["index_url"],
                               extra_index_urls=tuple(params["extra_index_urls"]), no_index=params["no_index"])
        secrets = secrets + tuple(sources.secrets())
        if not check_mode:
            finish_missing_root(params["path"])
        layout = read_layout(params["path"])

        def make_backend(observed):
            return select_backend(params["backend"], layout.python, runner, sources,
                                  uv_path=params["uv_executable"], timeout=params["installer_timeout"],
                                  recorded=recorded_installer(observed.distributions),
                                  has_pip=any(d.key == "pip" for d in observed.distributions))
        options = RepairOptions(
            facts=FactsOptions(path=layout.root, anchor=params["anchor"], verify=params["verify"],
                               ld_library_path=tuple(params["ld_library_path"]), probe_timeout=params["probe_timeout"],
                               roots=tuple(params["packages"]), wheel_sources=sources),
            desired=DesiredState(packages=tuple(params["packages"]), remove=tuple(params["remove"]),
                                 prune=params["prune"], batch_size=params["batch_size"],
                                 revert_edits=params["revert_edits"]),
            probe=params["probe"], probe_command=tuple(params["probe_command"]), batch=params["batch"],
            lock_timeout=params["lock_timeout"], check_mode=check_mode, diff=diff,
            install_check=InstallCheck(sources, tuple(params["packages"]), params["with_dependencies"]),
            strategy=params["strategy"], keep_previous=params["keep_previous"], swap_back=params["swap_back"],
            guard=GuardOptions(enabled=params["guard"], uv_config=params["guard_uv_config"]), report_facts=params["facts"],
            verify_before_swap=swap_benchmark(dict(params, path=layout.root)) if params["verify_before_swap"] else None)
        return repair(options, layout, make_backend, runner, secrets)
    except CudaVenvError as exc:
        raise CudaVenvError(redact(str(exc), secrets), exc.result) from None
