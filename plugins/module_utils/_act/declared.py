# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The declared state a repair converges to, as the venv's installer resolves it.

Private to the gpuops.cuda_venv collection: not a public API.

Two cases need the installer's resolution (its wheels' metadata from the user's sources), not the installed
metadata:
- ``packages`` names another anchor than the installed one (``torch==2.9.1`` over an installed 2.14.1): the
  closure, the CUDA major and the contaminants are the declared anchor's;
- a contaminant is held (a kept distribution requires it) and has a replacement both allow
  (``contaminants.Contaminant.replacement``: cuda-python 12.6 over cuda-bindings 13 in vLLM's venv, held by
  flashinfer's ``cuda-python>=12.0``: ``cuda-python>=12.0,==13.*``): the replacements are resolved with the
  declared packages (or the installed anchor's own version), so that the installer picks versions that go together.
Two dry runs of the installer, with its own configuration and the module's wheel sources
(``_install/wheel_fetch.py``): the whole closure, and what installing it over this venv changes. A distribution of
the closure keeps its installed version unless the second changes it, as the installer itself would. The pins go
into the run's facts options (``FactsOptions.declared``): every observation of the run (the plan, each batch's
test, the re-plans, the verdict after) is judged against them. When the declared packages cannot be resolved the
run fails before anything changed; when only the replacements cannot, they are left out (and the plan says why
the pair stays).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import List, Optional, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.contaminants import belonging
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.wheel_fetch import resolve, resolve_closure
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.requirements import pinned_edges
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import Observations


@dataclass(frozen=True)
class Declared:
    """The declared state: every distribution the request needs, at the version the repair converges to."""

    request: Tuple[str, ...]  # what the installer was asked to resolve
    pins: Tuple[Tuple[str, str], ...]  # (canonical name, version), sorted
    installer: str
    note: str = ""  # replacements left out, and why

    def as_dict(self) -> dict:
        found = {"request": list(self.request), "pins": ["%s==%s" % pin for pin in self.pins],
                 "resolved_by": self.installer}
        if self.note:
            found["note"] = self.note
        return found


def with_declared(run, obs: Observations) -> Tuple[object, object, Optional[Declared]]:
    """(the run with the declared pins in its facts options, ``obs`` judged against the declared state, the
    resolution) when one is needed (see the module's doc); (``run``, ``obs``, None) otherwise. Starts the installer
    only when needed."""
    if not needs_resolution(obs, run.options.desired.packages):
        return run, obs, None
    packages = list(run.options.desired.packages) if another_anchor(obs) else []
    declared, judged = None, obs
    if packages:
        declared = _resolve(run, obs, packages)
        judged = _judged(obs, declared)
    replacements = _replacements(judged)
    if not replacements:
        return _pinned(run, declared), judged, declared
    base = packages or _installed_anchor(obs)
    try:
        declared = _resolve(run, obs, base + replacements)
    except CudaVenvError:  # FetchError, or no installer: each replacement on its own, those the installer can meet
        kept, refused = [], []
        for replacement in replacements:
            try:
                declared = _resolve(run, obs, base + kept + [replacement])
                kept.append(replacement)
            except CudaVenvError as exc:
                refused.append("%s (%s)" % (replacement, str(exc).rsplit(": ", 1)[-1].strip()))
        if not kept:
            declared = declared and dataclasses.replace(declared, note=_left_out(refused))
            return _pinned(run, declared), judged, declared
        declared = dataclasses.replace(declared, note=_left_out(refused))
    return _pinned(run, declared), _judged(obs, declared), declared


def needs_resolution(obs: Observations, packages) -> bool:
    """Whether with_declared asks the installer: not when the declared state is resolved already or is the user's
    lock (its pins are the declared state); else when ``packages`` name another anchor or a held contaminant has a
    replacement."""
    if obs.options.declared or obs.lock is not None:
        return False
    return bool(packages and another_anchor(obs)) or bool(_replacements(obs))


def _left_out(refused) -> str:
    return "replacements the installer cannot resolve with the rest, left out: %s" % "; ".join(refused) if refused else ""


def another_anchor(obs: Observations) -> bool:
    """True when a declared requirement of the anchor is not met by the installed anchor."""
    anchor = [e for e in obs.requirements if e.name == obs.options.anchor and not e.required_by]
    return any(edge.installed is not None and not edge.satisfied for edge in anchor)


def _replacements(obs: Observations) -> List[str]:
    return sorted(c.replacement for c in belonging(obs).contaminants.values() if c.held_by and c.replacement)


def _installed_anchor(obs: Observations) -> List[str]:
    return ["%s==%s" % (d.name, d.version) for d in obs.distributions if d.key == obs.options.anchor][:1]


def _resolve(run, obs: Observations, request: List[str]) -> Declared:
    backend = run.backend
    if backend is None:
        raise CudaVenvError("no installer can resolve the declared state (%s)" % ", ".join(request))
    installed = {}
    for dist in obs.distributions:
        installed.setdefault(dist.key, dist.version)
    changes = dict(resolve(backend, request, run.options.check_mode, run.secrets))
    closure = resolve_closure(backend, request, run.options.check_mode, run.secrets)
    return Declared(tuple(request), tuple(sorted((name, changes.get(name) or installed.get(name) or version)
                                                 for name, version in closure)), backend.name)


def _judged(obs: Observations, declared: Declared):
    return dataclasses.replace(obs, options=dataclasses.replace(obs.options, declared=declared.pins),
                               requirements=pinned_edges(declared.pins, obs.distributions))


def _pinned(run, declared: Optional[Declared]):
    """``run`` with the declared pins in its facts options: every observation of the run is judged against them."""
    if declared is None:
        return run
    return dataclasses.replace(run, options=dataclasses.replace(
        run.options, facts=dataclasses.replace(run.options.facts, declared=declared.pins)))
