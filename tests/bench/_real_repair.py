# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The incident's repair on real wheels: the repair tables again, on real contaminated and gutted torch 2.9.1 venvs.

Benchmark support for gpuops.cuda_venv: not part of the collection's API.

It reuses what ``make acceptance`` fetched (its wheelhouse and uv cache, CUDA_VENV_ACCEPTANCE_CACHE): the venv is
built as the acceptance tests build their ``contaminated`` scenario (a torch 2.9.1 copy from uv's cache, then real
pip installs the four cu13 wheels over it). Without that wheelhouse the part says so and measures nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

from ._repair_suite import REAL_NOOP_GOAL, RepairBench

TITLE = "Repair of the incident on real wheels (torch 2.9.1 cu12 + the four real cu13 wheels, fresh copy each run)"
# scenario of tests/acceptance/acceptance_venvs.py: what its table says it is
STATES = (("contaminated", "the four real cu13 wheels installed over torch 2.9.1's cu12 ones"),
          ("gutted", "then the four cu13 wheels uninstalled, deleting the cu12 files at their paths"))


def _acceptance(repo: Path):
    folder = str(repo / "tests" / "acceptance")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    import acceptance_fetch  # pylint: disable=import-outside-toplevel,import-error
    import acceptance_venvs  # pylint: disable=import-outside-toplevel,import-error
    return acceptance_fetch, acceptance_venvs


def wheelhouse(repo: Path) -> Optional[Path]:
    """make acceptance's wheelhouse when it holds torch 2.9.1, else None."""
    fetch, _venvs = _acceptance(repo)
    found = fetch.wheelhouse()
    return found if found.is_dir() and any(found.glob("torch-2.9.1-*.whl")) else None


def prepare(repo: Path, work: Path, uv: Optional[str], runs: int, log=print) -> List[RepairBench]:
    """Build the real broken venvs in ``work`` (minutes, from uv's warm cache); none without the wheelhouse."""
    links = wheelhouse(repo)
    if links is None:
        return []
    fetch, venvs = _acceptance(repo)
    benches = []
    for state, description in STATES:
        venv = work / ("real-" + state)
        log("bench: building the real %s venv from %s" % (state, links))
        venvs.build_scenario(state, venv)
        # Everything CUDA 13 in it: the cu13 wheels and what they pulled in (torch 2.9.1's own are all -cu12).
        remove = tuple(sorted(name for name in venvs.distributions(venv) if name.startswith("nvidia-")
                              and not name.endswith("-cu12")))
        benches.append(RepairBench(
            venv, (links,), uv, runs, str(repo), work, title="%s: `%s` (%s)" % (TITLE, state, description),
            remove=remove, hardlink_copies=True, python=fetch.find_python(), rebuild=not benches,
            noop_goal=REAL_NOOP_GOAL, facts_reused=True,
            exposure_title="Imports during the repair on real wheels: `%s` (%s)" % (state, description)))
    return benches
