# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build (and cache) wheelhouses of stand-in wheels: one per stack, plus extra wheels.

Test support for gpuops.cuda_venv: not part of the collection's API.

A cache entry is ``<cache>/<stack>-<key>/`` where the key hashes the builder's sources and data
(BUILD_INPUTS), so editing them rebuilds; entries appear by atomic rename, under a lock.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence

from ._elf import build_elf_files
from ._files import wheel_files
from ._layout import STACKS, DistSpec, StackSpec, StandinError, load_stack, normalize
from ._wheel import wheel_filename, write_wheel

PACKAGE_DIR = Path(__file__).resolve().parent
_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
# What the wheels are made of; the cache key hashes these (scenario or CLI edits keep the cache).
BUILD_INPUTS = ("_layout.py", "_elf.py", "_files.py", "_wheel.py", "_wheelhouse.py", "data", "payload")


def source_key() -> str:
    """Hash of the builder's sources and data: edits to them rebuild the cached wheelhouses."""
    digest = hashlib.sha256()
    for name in BUILD_INPUTS:
        top = PACKAGE_DIR / name
        for path in sorted([top] if top.is_file() else top.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(path.relative_to(PACKAGE_DIR).as_posix().encode() + b"\0")
                digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def build_wheelhouse(stack: str, dest, cache=None) -> Path:
    """Write the stand-in wheels of every distribution of ``stack`` (cu128, cu130) into ``dest``."""
    if stack not in STACKS:
        raise StandinError("unknown stack %r: use one of %s" % (stack, ", ".join(STACKS)))
    return _wheels_of(load_stack(stack), None, Path(dest), cache)


def build_extra_wheels(names: Iterable[str], dest, cache=None, with_requirements: bool = True) -> Path:
    """Write the wheels of ``names`` (cu130 layout distributions or extras.json ones) into ``dest``.

    With ``with_requirements`` the unconditional requirements of each (e.g. nvidia-cublas for
    nvidia-cudnn-cu13) come along, so ``pip install NAME`` resolves from ``dest`` alone.
    """
    stacks = {"extras": load_stack("extras"), "cu130": load_stack("cu130")}
    chosen: Dict[str, List[DistSpec]] = {"extras": [], "cu130": []}
    for name in names:
        where = _stack_of(name, stacks)
        todo = [stacks[where].dist(name)]
        while todo:
            dist = todo.pop()
            if dist.key in {d.key for d in chosen[where]}:
                continue
            chosen[where].append(dist)
            if with_requirements:
                todo += _plain_requirements(dist, stacks[where])
    dest = Path(dest)
    for where, dists in chosen.items():
        if dists:
            _wheels_of(stacks[where], dists, dest, cache)
    return dest


def _stack_of(name: str, stacks: Dict[str, StackSpec]) -> str:
    for where, spec in stacks.items():
        if normalize(name) in {d.key for d in spec.distributions}:
            return where
    raise StandinError("no stand-in for %r: extra wheels come from the cu130 layout or data/extras.json" % name)


def _plain_requirements(dist: DistSpec, stack: StackSpec) -> List[DistSpec]:
    """Requirements without an extra marker that the same stack provides."""
    keys = {d.key for d in stack.distributions}
    out = []
    for req in dist.requires_dist:
        match = _REQ_NAME.match(req)
        if match and "extra" not in req.partition(";")[2] and normalize(match.group(1)) in keys:
            out.append(stack.dist(match.group(1)))
    return out


def _wheels_of(stack: StackSpec, only: Optional[Sequence[DistSpec]], dest: Path, cache) -> Path:
    """Copy the wheels of ``only`` (default: all) of ``stack`` into ``dest``, building as needed."""
    dest.mkdir(parents=True, exist_ok=True)
    wanted = list(only) if only is not None else list(stack.distributions)
    if cache is None:
        with tempfile.TemporaryDirectory(prefix="standin-") as tmp:
            source = _build(stack, Path(tmp))
            _copy(source, wanted, dest)
    else:
        _copy(_cached(stack, Path(cache)), wanted, dest)
    return dest


def _copy(source: Path, dists: Sequence[DistSpec], dest: Path) -> None:
    for dist in dists:
        shutil.copyfile(source / wheel_filename(dist), dest / wheel_filename(dist))


def _build(stack: StackSpec, workdir: Path) -> Path:
    """Build every wheel of ``stack`` into ``workdir``/wheels."""
    built = build_elf_files(stack.distributions, workdir / "elf")
    out = workdir / "wheels"
    out.mkdir()
    for dist in stack.distributions:
        write_wheel(out, dist, wheel_files(stack, dist, built))
    return out


def _cached(stack: StackSpec, cache: Path) -> Path:
    """The cache entry of ``stack``, built first if missing; a lock keeps parallel builders to one build."""
    entry = cache / ("%s-%s" % (stack.name, source_key()))
    if entry.is_dir():
        return entry
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / (".%s.lock" % stack.name), "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if entry.is_dir():  # built by another process while this one waited
            return entry
        tmp = Path(tempfile.mkdtemp(prefix=".build-%s-" % stack.name, dir=str(cache)))
        try:
            os.rename(_build(stack, tmp), entry)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        for old in cache.glob(stack.name + "-*"):
            if old != entry and old.is_dir():
                shutil.rmtree(old, ignore_errors=True)
    return entry
