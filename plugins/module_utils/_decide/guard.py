# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The venv's guard, decided from what is installed: its constraints, and whether the guard found still holds.

Private to the gpuops.cuda_venv collection: not a public API.

The constraints: the anchor pinned ``==`` its installed version, each CUDA wheel of its requirement closure pinned
``==``, and each colliding family member of the other CUDA major refused (``NAME<0``). pip and uv refuse, with
their own resolver message, any install that would move one of them (docs/REPAIR.md, the install guard).
"""

from __future__ import annotations

from collections import Counter
from typing import Dict, List, Optional, Sequence, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core import cuda_knowledge as cuda
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import canonical_name
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide import findings as F
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.findings import Finding
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.guard_edits import undo
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import Observations

HOW_TO_CHANGE = ("to change what the guard holds, declare it (the anchor's version in packages) and run the repair "
                 "again, or run it with guard: false")


def guard_constraints(obs: Observations) -> Tuple[str, ...]:
    """The constraints that keep the venv as it is (empty when the anchor is not installed)."""
    by_key = dict((d.key, d) for d in obs.distributions)
    anchor_key = canonical_name(obs.options.anchor)
    anchor = by_key.get(anchor_key)
    if anchor is None:
        return ()
    pins = {}
    for edge in obs.requirements:
        key = canonical_name(edge.name)
        dist = by_key.get(key)
        if dist is not None and key != anchor_key and (cuda.is_cuda_distribution(key) or cuda.colliding_partner(key)):
            pins[key] = dist.version
    lines = ["%s==%s" % (anchor_key, anchor.version)] + ["%s==%s" % item for item in sorted(pins.items())]
    major = _anchor_major(obs, anchor, pins)
    if major is not None:
        lines.extend("%s<0" % key for pair in cuda.COLLIDING_FAMILIES for key in pair if cuda.name_major(key) != major)
    return tuple(lines)


def _anchor_major(obs: Observations, anchor, pins: Dict[str, str]) -> Optional[int]:
    major = obs.cuda_major(anchor.dist_info).major
    if major is not None:
        return major
    named = Counter(m for m in (cuda.name_major(key) for key in pins) if m is not None)
    return named.most_common(1)[0][0] if named else None


def constraints_text(root: str, constraints: Sequence[str]) -> str:
    """The constraints file: a header saying what it is and how to change it, then one constraint a line."""
    return ("# %s: the guard of %s, written by gpuops.cuda_venv.cuda_venv_repair.\n"
            "# pip (this venv's pip.conf) and uv (UV_CONSTRAINT of its activate scripts) honour it;\n"
            "# %s.\n%s") % ("cuda_venv guard", root, HOW_TO_CHANGE, "".join(c + "\n" for c in constraints))


def guard_problems(state, obs: Observations) -> List[str]:
    """Why the guard found (``state``: _read/packaging/guard_state.GuardState) no longer holds: installs made round it,
    a constraints file or an edit of a user's file changed or removed by hand. Empty when it holds (or is absent)."""
    if state is None:
        return []
    if state.problem:
        return [state.problem]
    manifest = state.manifest
    if manifest is None:
        return []
    problems = []
    constraints = list(manifest.get("constraints", []))
    if state.constraints_text is None:
        problems.append("the constraints file %s was removed" % manifest.get("constraints_file"))
    elif state.constraints_text != constraints_text(manifest.get("root", ""), constraints):
        problems.append("the constraints file %s was edited" % manifest.get("constraints_file"))
    installed = dict((d.key, d.version) for d in obs.distributions)
    for line in constraints:
        name, _sep, version = line.partition("==")
        if line.endswith("<0"):
            name = line[:-2]
            if name in installed:
                problems.append("%s %s is installed although the guard refuses it" % (name, installed[name]))
        elif installed.get(name) != version:
            problems.append("%s is %s, the guard pins %s" % (name, installed.get(name, "not installed"), version))
    for path, record in sorted(manifest["files"].items()):
        text = state.texts.get(path)
        if text is None:
            problems.append("%s, which the guard edited, was removed" % path)
        elif undo(text, record.get("inserted", []))[1]:
            problems.append("the guard's lines in %s were edited or removed" % path)
    return problems


def guard_facts(state, obs: Observations) -> dict:
    """``ansible_facts.cuda_venv.guard``."""
    manifest = state.manifest if state is not None else None
    if manifest is None:
        return {"active": False, "constraints": [], "constraints_file": None,
                "honoured_by": {"pip": False, "uv_activated": [], "uv_config": None},
                "problems": [state.problem] if state is not None and state.problem else []}
    problems = guard_problems(state, obs)
    kept = [path for path, record in manifest["files"].items()
            if state.texts.get(path) is not None and not undo(state.texts[path], record.get("inserted", []))[1]]
    kinds = dict((path, record.get("kind")) for path, record in manifest["files"].items())
    return {
        "active": state.constraints_text is not None,
        "constraints": list(manifest.get("constraints", [])),
        "constraints_file": manifest.get("constraints_file"),
        "honoured_by": {
            "pip": any(kinds[p] == "pip_conf" for p in kept),
            "uv_activated": sorted(p for p in kept if str(kinds[p]).startswith("activate")),
            "uv_config": next((p for p in kept if kinds[p] == "uv_config"), None),
        },
        "problems": problems,
    }


def guard_findings(obs: Observations) -> List[Finding]:
    """GUARD_STALE: a guard is there and no longer matches the venv or its own files."""
    state = getattr(obs, "guard", None)
    problems = guard_problems(state, obs)
    if not problems:
        return []
    return [Finding(F.GUARD_STALE, F.WARNING, obs.layout.root,
                    "The venv's install guard no longer holds: %s." % "; ".join(problems),
                    "Run cuda_venv_repair with guard: true to renew it from what is installed (or guard: false to "
                    "remove it); %s." % HOW_TO_CHANGE, {"problems": problems})]
