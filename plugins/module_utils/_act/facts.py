# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The facts module's one call, and the facts a repair's check returns: observe, diagnose, read the wheel sources
for a contamination's residue, report.

Private to the gpuops.cuda_venv collection: not a public API.

Here, among the effects, because it runs the observation (processes, the disk) and may read the wheel sources over
the network; the diagnosis and the report's shape stay pure in ``_decide``.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Optional

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.venv_lock import ensure_state_dir
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.durable import replace_file
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import Runner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.contamination_source import residue_candidates, with_source_versions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.diagnose import diagnose
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.facts_report import report
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import FactsOptions, Observations, observe
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.read_index import index_path
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.wheel_sources import read_offers


def gather_facts(options: FactsOptions, runner: Runner, keep_index: bool = True, export_to: Optional[str] = None) -> dict:
    """Observe, diagnose and report: the whole facts module in one call. With ``options.read_index``, what was read
    is kept for the next run unless ``keep_index`` is false (check mode writes nothing). ``export_to``: the venv as it
    is written there as a pylock.toml (``_install/lock_export.py``; not in check mode), reported as
    ``exported_lock``."""
    obs = observe(options, runner)
    if obs.read_index is not None and obs.read_index.changed and keep_index:
        keep_read_index(obs)
    facts = facts_of(obs)
    if export_to is not None:
        # imported only here: the installers it runs are nothing the facts of every other run need
        from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.lock_export import export_lock  # pylint: disable=import-outside-toplevel
        facts["exported_lock"] = export_lock(obs.distributions, obs.layout.python, export_to, runner,
                                             options.wheel_sources, check_mode=not keep_index).as_dict()
    return facts


def keep_read_index(obs: Observations) -> None:
    """Write the observation's read index into the venv's state folder; a failure (a read-only venv) is a note.
    An index that did not change is not written again. Only the venv's owner creates its state folder: root diagnosing
    a user's venv must not leave a folder there that the user's own repair cannot write."""
    index = obs.read_index
    try:
        owner = os.stat(obs.layout.root).st_uid
        if owner != os.geteuid() and not os.path.isdir(obs.layout.state_dir):
            index.note = "not kept: %s has no state folder and belongs to uid %d, who alone creates it" % (
                obs.layout.root, owner)
            return
        ensure_state_dir(obs.layout.state_dir)
        replace_file(index_path(obs.layout.state_dir), index.as_json())
        index.saved = True
    except OSError as exc:
        index.note = "not kept in %s: %s" % (index_path(obs.layout.state_dir), exc.strerror or exc)


def facts_of(obs: Observations) -> dict:
    """Diagnose and report one observation (the facts module's, or the repair's check with ``facts``). The wheel
    sources are read only when they are given and a CONTAMINATION_SOURCE holds residue, and only for its candidates."""
    findings = diagnose(obs)
    sources = obs.options.wheel_sources
    names = residue_candidates(obs, findings) if sources.find_links or sources.indexes() else []
    if names:
        obs = replace(obs, source_reading=read_offers(sources, names))
        findings = with_source_versions(obs, findings)
    return report(obs, findings)
