# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stand-in stacks as data: trimmed real wheel layouts read from tests/standin/data.

Test support for gpuops.cuda_venv: not part of the collection's API.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Optional, Tuple

DATA_DIR = Path(__file__).resolve().parent / "data"

# Sonames the build links against the machine's own copy (dropped when the linker has none);
# every other soname no stack provides gets a throwaway stub that is never shipped.
SYSTEM_SONAMES = (
    "libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1", "libutil.so.1",
    "libgcc_s.so.1", "libstdc++.so.6", "libz.so.1", "ld-linux-x86-64.so.2",
)


class StandinError(Exception):
    """Bad input to the stand-in builder (unknown stack, scenario or distribution)."""


@dataclass(frozen=True)
class ElfSpec:
    """One ELF file a distribution installs, as measured on the real wheel."""

    path: str
    soname: Optional[str]
    needed: Tuple[str, ...]
    rpath: Optional[str]
    runpath: Optional[str]
    exports: Tuple[Tuple[str, int], ...] = ()
    python_module: Optional[str] = None
    layout_path: Optional[str] = None

    @property
    def is_executable(self) -> bool:
        """Programs (torch/bin/protoc, triton's ptxas): no soname and no .so in the name."""
        return self.soname is None and ".so" not in self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class DistSpec:
    """One distribution of a stack: what its stand-in wheel must declare and install."""

    name: str
    version: str
    requires_dist: Tuple[str, ...]
    elf_files: Tuple[ElfSpec, ...]
    python_files: Tuple[str, ...]
    data_files: Tuple[str, ...]

    @property
    def key(self) -> str:
        """The normalized project name (PEP 503), e.g. ``jinja2`` for Jinja2."""
        return normalize(self.name)


@dataclass(frozen=True)
class StackSpec:
    """A torch build and the distributions of its healthy venv."""

    name: str
    torch_version: str
    cuda: str
    distributions: Tuple[DistSpec, ...]

    def dist(self, name: str) -> DistSpec:
        key = normalize(name)
        for dist in self.distributions:
            if dist.key == key:
                return dist
        raise StandinError("distribution %r is not in stack %s; known: %s"
                           % (name, self.name, ", ".join(d.name for d in self.distributions)))


STACK_FILES = {
    "cu128": "torch-2.9.1-cu128.json",
    "cu130": "torch-2.14.1-cu130.json",
    "extras": "extras.json",
}
# Stacks of several layouts: the torch stack, then what its neighbours (torchvision, torchaudio, jax, cupy) add.
STACK_PARTS = {
    "cu128-multi": ("cu128", "neighbours-cu12.json"),
}
STACKS = ("cu128", "cu130", "cu128-multi")


def normalize(name: str) -> str:
    """PEP 503 name normalization."""
    return re.sub(r"[-_.]+", "-", name).lower()


def load_stack(name: str) -> StackSpec:
    """Read data/<layout>.json for ``cu128``, ``cu130`` or ``extras``; ``cu128-multi``: cu128 and its neighbours."""
    if name in STACK_PARTS:
        base, added = STACK_PARTS[name]
        stack = load_stack(base)
        raw = json.loads((DATA_DIR / added).read_text(encoding="utf-8"))
        return StackSpec(name=name, torch_version=stack.torch_version, cuda=stack.cuda,
                         distributions=stack.distributions + tuple(_dist(d) for d in raw["distributions"]))
    if name not in STACK_FILES:
        raise StandinError("unknown stack %r: use one of %s" % (name, ", ".join(sorted(STACK_FILES))))
    raw = json.loads((DATA_DIR / STACK_FILES[name]).read_text(encoding="utf-8"))
    return StackSpec(
        name=name,
        torch_version=raw["torch_version"],
        cuda=raw["cuda"],
        distributions=tuple(_dist(d) for d in raw["distributions"]),
    )


def _dist(raw: Dict) -> DistSpec:
    return DistSpec(
        name=raw["name"],
        version=raw["version"],
        requires_dist=tuple(raw["requires_dist"]),
        elf_files=tuple(
            ElfSpec(
                path=e["path"],
                soname=e["soname"],
                needed=tuple(e["needed"]),
                rpath=e["rpath"],
                runpath=e["runpath"],
                exports=tuple(sorted((k, int(v)) for k, v in e.get("exports", {}).items())),
                python_module=e.get("python_module"),
                layout_path=e.get("layout_path"),
            )
            for e in raw["elf_files"]
        ),
        python_files=tuple(raw["python_files"]),
        data_files=tuple(raw["data_files"]),
    )
