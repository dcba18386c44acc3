# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cuda_venv_facts module's entry: its argument spec and its params checked and made into FactsOptions.

Private to the gpuops.cuda_venv collection: not a public API.

The options' documentation is the module's DOCUMENTATION and plugins/doc_fragments/venv.py.
"""

from __future__ import annotations

from typing import Optional

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.performance import compute_capability_problems
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._options import LOCK_OPTIONS, WHEEL_SOURCES, lock_of, shared
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import FactsOptions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.probe import library_path_problems
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.wheel_sources import WheelSources, WheelSourcesError

# probe_timeout: the repair's is longer (_entry/repair_entry.py): it also bounds probe_command, a check of the user's own.
FACTS_PROBE_TIMEOUT = 120


def facts_arguments() -> dict:
    """AnsibleModule's keyword arguments for cuda_venv_facts."""
    spec = dict(
        **shared("path", "anchor"),
        probe=dict(type="raw", default=True),  # true, false or always (probe_mode)
        probe_timeout=dict(type="float", default=FACTS_PROBE_TIMEOUT),
        **shared("verify", "ld_library_path"),
        gpu=dict(type="bool", default=True),
        read_index=dict(type="bool", default=True),
        **shared(*WHEEL_SOURCES),
        **shared("gpu_archs"),
        **shared(*LOCK_OPTIONS),
        export_lock=dict(type="path"),
    )
    return dict(argument_spec=spec, supports_check_mode=True)


def facts_options(params: dict) -> FactsOptions:
    """The FactsOptions the facts module's params make; CudaVenvError names each bad one."""
    problems = library_path_problems(params["ld_library_path"])
    probe = probe_mode(params["probe"])
    if probe is None:
        problems.append("probe must be true, false or always, got %r" % (params["probe"],))
    if params["probe_timeout"] <= 0:
        problems.append("probe_timeout must be positive, got %s" % params["probe_timeout"])
    problems.extend(compute_capability_problems(params["gpu_archs"]))
    try:
        sources = WheelSources(find_links=tuple(params["find_links"]), index_url=params["index_url"],
                               extra_index_urls=tuple(params["extra_index_urls"]), no_index=params["no_index"])
    except WheelSourcesError as exc:
        problems.append(str(exc))
    lock = None
    try:
        lock = lock_of(params)
    except CudaVenvError as exc:
        problems.append(str(exc))
    if problems:
        raise CudaVenvError("; ".join(problems))
    return FactsOptions(lock=lock, lock_extras=tuple(params["lock_extras"]),
                        lock_groups=None if params["lock_groups"] is None else tuple(params["lock_groups"]),
                        path=params["path"], anchor=params["anchor"], probe=probe != "false", probe_reuse=probe == "true",
                        verify=params["verify"],
                        ld_library_path=tuple(params["ld_library_path"]), probe_timeout=params["probe_timeout"], gpu=params["gpu"],
                        wheel_sources=sources, performance=True, gpu_archs=tuple(params["gpu_archs"]),
                        read_index=params["read_index"])


def probe_mode(value) -> Optional[str]:
    """``probe`` as "true" (the import, or the last one's result when nothing it depended on changed), "false" or
    "always" (the import every run); None for anything else. Booleans as Ansible reads them (yes, on, 1, ...)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value).strip().lower() if isinstance(value, (str, int)) else None
    if text == "always":
        return text
    return "true" if text in _TRUE else "false" if text in _FALSE else None


_TRUE = frozenset(("true", "yes", "on", "y", "t", "1"))
_FALSE = frozenset(("false", "no", "off", "n", "f", "0"))
