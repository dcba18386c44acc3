# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stand-in CUDA stacks: tiny real wheels that install and fail like torch's CUDA wheels.

Test support for gpuops.cuda_venv: not part of the collection's API.

Every distribution of the real torch 2.9.1+cu128 and 2.14.1+cu130 venvs (data/, trimmed from
measured layouts) becomes a wheel with the same name, version, Requires-Dist and ELF files
(paths, SONAME, DT_NEEDED, DT_RPATH/DT_RUNPATH), compiled by gcc; real pip installs them into
real venvs, and the real dynamic loader fails with the real messages. CLI:
``python -m tests.standin list | scenario NAME DEST [--cache DIR] | wheelhouse STACK DEST``.
"""

from ._layout import STACKS, StandinError
from ._probe import ProbeResult, probe_torch
from ._scenarios import SCENARIOS, ScenarioInfo, advance_scenario, build_scenario, lineage
from ._venv import Completed, make_venv, pip, pip_install, pip_uninstall, site_packages
from ._wheelhouse import build_extra_wheels, build_wheelhouse

__all__ = [
    "SCENARIOS", "STACKS", "Completed", "ProbeResult", "ScenarioInfo", "StandinError", "advance_scenario",
    "build_extra_wheels", "build_scenario", "build_wheelhouse", "lineage", "make_venv", "pip", "pip_install",
    "pip_uninstall", "probe_torch", "site_packages",
]
