# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which distributions the CUDA repair may reinstall: the scope of "repair what is broken and nothing else".

Private to the gpuops.cuda_venv collection: not a public API.

Pure: reads the ``Observations`` record only. The diagnosis (severity of RECORD findings) and the plan (what is
force-reinstalled) both ask here, so they never disagree. In scope:
- every owner of a path another wheel also lists (the conflicts say who overwrote or deleted what);
- a wheel of a known colliding family (cuDNN, cuSPARSELt, NCCL, NVSHMEM cu12/cu13): its twin's uninstall
  deletes its files even when the twin is gone by now;
- the anchor, and every distribution owning a shared object its import loads or needs;
- CUDA wheels and their known consumers.
Outside it, a file that differs from RECORD and that no other wheel wrote is the user's business (a hand-edited
model library): a warning, reinstalled only when the user asks (``revert_edits``). So is a file two wheels list
that nothing loads at run time (``inert_paths``: a stray top-level ``build_backend.py``): which copy is on disk
changes nothing for CUDA.
"""

from __future__ import annotations

import os
from typing import Dict, Iterable, Set

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core import cuda_knowledge as cuda
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import is_loadable
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.distributions import label_key
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import Observations


def cuda_scope(obs: Observations) -> Dict[str, str]:
    """canonical name -> why the CUDA repair may reinstall it."""
    scope: Dict[str, str] = {}
    keys = {dist.key for dist in obs.distributions}
    for conflict in obs.conflicts:
        for label in conflict.owners if is_loadable(conflict.path) else ():
            scope.setdefault(label_key(label), "shares paths with another wheel")
    for key in keys:
        if cuda.colliding_partner(key):
            scope.setdefault(key, "installs the same paths as %s" % cuda.colliding_partner(key))
    scope.setdefault(obs.options.anchor, "the anchor")
    for path in _import_paths(obs):
        for owner in obs.owners_of(path):
            scope.setdefault(owner.key, "owns %s, which import %s loads or needs" % (
                os.path.basename(path), obs.options.anchor))
    for soname in _unresolved_sonames(obs):
        for dist in obs.distributions:
            if any(os.path.basename(e.path) == soname for e in dist.entries):
                scope.setdefault(dist.key, "should provide %s, which import %s needs" % (soname, obs.options.anchor))
    for dist in obs.distributions:
        major = obs.cuda_major(dist.dist_info).major
        if dist.key in cuda.KNOWN_CUDA_CONSUMERS:
            scope.setdefault(dist.key, "a CUDA consumer")
        elif cuda.is_cuda_distribution(dist.key) or major is not None:
            scope.setdefault(dist.key, "a CUDA wheel")
    return {key: why for key, why in scope.items() if key in keys}


def inert_paths(obs: Observations) -> Set[str]:
    """Paths two or more wheels list that nothing loads at run time (``names.is_loadable``)."""
    return {c.path for c in obs.conflicts if not is_loadable(c.path)}


def only_inert(paths: Iterable[str], inert: Set[str]) -> bool:
    """True when every one of ``paths`` (a wheel's missing or modified files) is an inert shared path."""
    paths = set(paths)
    return bool(paths) and paths <= inert


def _import_paths(obs: Observations):
    graph = obs.import_graph
    if graph is None:
        return
    yield from graph.objects
    for resolutions in graph.resolutions.values():
        for res in resolutions:
            if res.path is not None:
                yield res.path


def _unresolved_sonames(obs: Observations):
    graph = obs.import_graph
    if graph is None:
        return set()
    return {res.soname for resolutions in graph.resolutions.values() for res in resolutions
            if res.path is None or res.error}
