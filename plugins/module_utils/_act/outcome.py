# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a repair reports: the module's result dictionary, the failure that carries a partial one, the hash check
of every wheel a repair wrote.

Private to the gpuops.cuda_venv collection: not a public API.
"""

from __future__ import annotations

from typing import Dict, Optional

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.diagnose import diagnose
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.findings import ERROR, Finding, is_healthy, summarize
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import Plan
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.record_check import check_all
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import Observations


_NAMED = 4  # error findings a failure message names


class RepairFailed(CudaVenvError):
    """A batch failed and was restored; carries the partial result."""


def still_unhealthy(findings, changed: bool) -> Optional[str]:
    """Why a run that leaves these findings (Finding, or the result's dictionaries) failed; None when they are
    healthy: a repair never reports success on a venv its own verdict calls broken."""
    errors = [f for f in (f.as_dict() if isinstance(f, Finding) else f for f in findings) if f["severity"] == ERROR]
    if not errors:
        return None
    named = "; ".join("%s (%s)" % (f["code"], f["subject"]) for f in errors[:_NAMED])
    more = " and %d more" % (len(errors) - _NAMED) if len(errors) > _NAMED else ""
    if changed:
        return "the venv is still unhealthy after the repair: %s%s" % (named, more)
    return "the venv is unhealthy and nothing the repair may do answers it: %s%s" % (named, more)


def inventory(obs: Observations) -> Dict[str, str]:
    """name -> version, as installed."""
    return dict(sorted((d.key, d.version) for d in obs.distributions))


def file_state(obs: Observations) -> Dict[str, dict]:
    """Per damaged distribution: its missing/modified counts; plus the conflicting paths."""
    state = {}
    for dist in obs.distributions:
        check = obs.file_states.get(dist.dist_info)
        if check and (check.missing or check.modified):
            state[dist.key] = {"missing": len(check.missing), "modified": len(check.modified)}
    return {"damaged": state, "conflicts": sorted(c.path for c in obs.conflicts)}


def result(run, after, plan: Plan, changed=None, failed=False, probe_obs=None, verified=None, findings=None) -> dict:
    """The module's result of ``run`` (batches.Run: what it asked, the venv it found, what it executed and touched,
    its backend) that left ``after``. ``findings``: the diagnosis of ``probe_obs`` (else ``after``) when the caller
    has it already."""
    if findings is None:
        findings = diagnose(probe_obs if probe_obs is not None else after)
    progress = run.progress
    inv_before, inv_after = inventory(run.before), inventory(after)
    files_before, files_after = file_state(run.before), file_state(after)
    if changed is None:
        changed = inv_before != inv_after or files_before != files_after
    found = {
        "changed": bool(changed),
        "plan": plan.as_dict(),
        "batches": progress.executed,
        "recovered": run.recovered,
        "healthy": is_healthy(findings),
        "findings": [f.as_dict() for f in findings],
        "summary": summarize(findings),
        "backend": run.installer.name,
        "verified": {} if failed else verified if verified is not None else recheck_touched(after, progress.touched),
    }
    if run.options.diff:
        found["diff"] = {"before": diff_side(inv_before, files_before), "after": diff_side(inv_after, files_after)}
    return found


def recheck_touched(obs: Observations, touched) -> dict:
    """sha256 of every file of every reinstalled or installed distribution against its RECORD (the result's
    ``verified``; not the ``verify`` option, which says how the facts check RECORD). ``obs`` is the venv as the
    repair left it: the digests its reading took (``hash_distributions``, the last batch's) are reused."""
    dists = [dist for dist in obs.distributions if dist.key in touched]
    # a share per usable CPU, largest files first; what obs hashed already is not hashed again
    states = check_all(dists, obs.layout.root, "hash", digests=dict(obs.digests))
    verdict = {}
    for dist in dists:
        state = states[dist.dist_info]
        verdict[dist.key] = "ok" if not (state.missing or state.modified) else "%d missing, %d modified" % (
            len(state.missing), len(state.modified))
    return verdict


def diff_side(inv: Dict[str, str], files: dict) -> str:
    """One side of the module's diff: the inventory, then the damaged distributions and the conflicts as comments."""
    lines = [name if version is None else "%s==%s" % (name, version) for name, version in sorted(inv.items())]
    for key, counts in sorted(files["damaged"].items()):
        lines.append("# %s: %d missing, %d modified" % (key, counts["missing"], counts["modified"]))
    for path in files["conflicts"]:
        lines.append("# conflict: %s" % path)
    return "\n".join(lines) + "\n"
