# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the objects the anchor's import does not load find their libraries in a real process (docs/FINDINGS.md, SONAME_UNRESOLVED).

Private to the gpuops.cuda_venv collection: not a public API.

Three routes besides an object's own search path, each taken only where the object's distribution says it takes it:
- the anchor's import: a distribution that requires the anchor imports it first (torchvision), and so does an
  object that needs a library only the anchor ships (torchaudio 2.11 lists no torch requirement, yet its extensions
  need libtorch.so, which nothing but torch's import can have loaded), so the sonames that import loaded
  (libtorch.so, libc10.so, libcudart.so.12) are already in the process, and ld.so matches a loaded soname before any
  search (VIA_ANCHOR_IMPORT);
- cuda-pathfinder: a distribution that requires cuda-pathfinder (cupy) has it load the CUDA libraries it needs by
  full path from the venv's nvidia wheels first (site-packages before the system), so a CUDA soname an nvidia
  wheel provides resolves to that file (VIA_PATHFINDER);
- its own package: a soname found nowhere that a file of the same distribution is named after (torchaudio's
  libtorchaudio.so, libctc_prefix_decoder.so) is loaded by that package's Python code by full path before the
  extension that needs it (torch.ops.load_library, ctypes), VIA_OWN_PACKAGE.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Dict, List, Optional

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core import cuda_knowledge as cuda
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.loader import VIA_LOADED, resolve_object
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.elf import read_elf
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.venv_paths import real_path
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.requirements import closure

VIA_ANCHOR_IMPORT = "anchor_import"
VIA_PATHFINDER = "cuda_pathfinder"
VIA_OWN_PACKAGE = "own_package"
PATHFINDER = "cuda-pathfinder"


def resolve_others(objects: dict, import_graph, loader, anchor: str, marker_env: dict, reader=read_elf) -> Dict[str, list]:
    """{path: [Resolution]} for every shared object the anchor's import does not load (``objects``: observe's; ``reader``:
    read_elf, or a read index's)."""
    real: Dict[str, str] = {}  # real_path's memo: each folder resolved once
    loaded_paths = {real_path(os.path.abspath(p), real) for p in import_graph.objects} if import_graph else set()
    after_anchor = _loaded_sonames(objects, import_graph)
    from_wheels = _nvidia_wheel_files(objects)
    own_files = _files_by_owner(objects)
    anchors_own = {o.elf.soname for o in objects.values() if o.owner.key == anchor and o.elf is not None and o.elf.soname}
    routes: Dict[str, tuple] = {}
    resolved: Dict[str, list] = {}
    for path, obj in objects.items():
        if obj.elf is None or real_path(os.path.abspath(path), real) in loaded_paths:
            continue
        owner = obj.owner
        if owner.dist_info not in routes:
            names = _own_requirement_names(owner, marker_env)
            routes[owner.dist_info] = (anchor in names and owner.key != anchor, PATHFINDER in names)
        imports_anchor, uses_pathfinder = routes[owner.dist_info]
        imports_anchor = imports_anchor or bool(anchors_own.intersection(obj.elf.needed))
        results = resolve_object(path, obj.elf, loader, reader, loaded=after_anchor if imports_anchor else None)
        results = [replace(r, via=VIA_ANCHOR_IMPORT) if r.via == VIA_LOADED else r for r in results]
        if uses_pathfinder:
            results = [_through_pathfinder(r, from_wheels) for r in results]
        resolved[path] = [_from_own_package(r, own_files.get(owner.dist_info, {})) for r in results]
    return resolved


def _loaded_sonames(objects: dict, import_graph) -> Dict[str, str]:
    """soname -> path of what the anchor's import loaded (and kept loaded)."""
    if import_graph is None:
        return {}
    found: Dict[str, str] = {}
    unloaded = set(import_graph.unloaded)
    for path in import_graph.order:
        loaded = import_graph.objects.get(path)
        if path not in unloaded and loaded is not None:
            found.setdefault(loaded.elf.soname or os.path.basename(path), path)
    return found


def _nvidia_wheel_files(objects: dict) -> Dict[str, str]:
    """basename -> path of the CUDA libraries the venv's nvidia wheels install (nvidia/<component>/lib/...)."""
    found: Dict[str, str] = {}
    for path in sorted(objects):
        obj = objects[path]
        if obj.relpath.startswith("nvidia/") and "/lib/" in obj.relpath and cuda.is_cuda_soname(os.path.basename(path)):
            found.setdefault(os.path.basename(path), path)
    return found


def _files_by_owner(objects: dict) -> Dict[str, Dict[str, str]]:
    """dist_info -> {basename: path} of the shared objects each distribution installs."""
    found: Dict[str, Dict[str, str]] = {}
    for path in sorted(objects):
        found.setdefault(objects[path].owner.dist_info, {}).setdefault(os.path.basename(path), path)
    return found


def _from_own_package(resolution, own: Dict[str, str]):
    path = own.get(resolution.soname) if resolution.path is None else None
    if path is None:
        return resolution
    return replace(resolution, path=path, via=VIA_OWN_PACKAGE, error=None, searched=())


def _through_pathfinder(resolution, from_wheels: Dict[str, str]):
    path: Optional[str] = from_wheels.get(resolution.soname)
    if path is None or not cuda.is_cuda_soname(resolution.soname):
        return resolution
    return replace(resolution, path=path, via=VIA_PATHFINDER, error=None, searched=())


def _own_requirement_names(dist, marker_env: dict) -> List[str]:
    wanted = [r for r in dist.requires_dist if "extra" not in r.partition(";")[2]]
    return [e.name for e in closure(wanted, [], marker_env) if e.name] if wanted else []
