# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Turn a measured real layout (shared/layouts/*.json) into the trimmed data the builder reads.

Test support for gpuops.cuda_venv: not part of the collection's API.

Kept: name, version, Requires-Dist verbatim, every ELF file (path, SONAME, DT_NEEDED, DT_RPATH,
DT_RUNPATH); chosen: a few python files and at most two other files per distribution. Added:
the version symbols a library exports (cudnnGetVersion ...) and torch's Python files.
Run ``python -m tests.standin import-layout SRC DEST`` to refresh data/ from a new layout.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional

from ._layout import normalize

# The real torch/_C is a cpython-3XX extension; the stand-in one uses the stable ABI so one
# wheel imports on every CPython >= 3.9.
TORCH_C = "torch/_C.abi3.so"
TORCH_PYTHON_FILES = (
    "torch/__init__.py",
    "torch/_standin.py",
    "torch/version.py",
    "torch/backends/__init__.py",
    "torch/backends/cudnn/__init__.py",
    "torch/cuda/__init__.py",
    "torch/cuda/nccl.py",
)
# Top-level python files where the project name does not say it.
_PYTHON_FILES = {
    "typing-extensions": ["typing_extensions.py"],
    "cuda-bindings": ["cuda/bindings/__init__.py"],
    "cuda-pathfinder": ["cuda/pathfinder/__init__.py"],
    "numpy": ["numpy/__init__.py"],
    "scipy": ["scipy/__init__.py"],
    "torchvision": ["torchvision/__init__.py"],
    "jax-cuda12-pjrt": ["jax_plugins/xla_cuda12/__init__.py"],
}
# Distributions whose ELF files need nothing of CUDA, only libraries they bundle: left out (neighbours-cu12.json).
_NO_ELF = frozenset(("numpy", "scipy", "pillow", "ml-dtypes", "jaxlib"))
_SKIP_SUFFIXES = (".pth", ".exe", ".py")


def trim_layout(raw: Dict, torch_version: str, cuda: str) -> Dict:
    """Return the trimmed data for one layout (everything but ``pip``)."""
    dists = [_trim_dist(d) for d in raw["distributions"] if normalize(d["name"]) != "pip"]
    return {
        "comment": "Trimmed from a measured real venv layout by tests.standin import-layout%s." % (
            " (ELF files of %s left out: they need nothing of CUDA)" % ", ".join(sorted(_NO_ELF))
            if any(normalize(d["name"]) in _NO_ELF for d in raw["distributions"]) else ""),
        "torch_version": torch_version,
        "cuda": cuda,
        "distributions": dists,
    }


def _trim_dist(raw: Dict) -> Dict:
    name = raw["name"]
    elf_files = [] if normalize(name) in _NO_ELF else [_trim_elf(name, raw["version"], e) for e in raw["elf_files"]]
    return {
        "name": name,
        "version": raw["version"],
        "requires_dist": list(raw["requires_dist"]),
        "elf_files": elf_files,
        "python_files": _python_files(raw),
        "data_files": [p for p in raw["other_files_examples"] if not p.endswith(_SKIP_SUFFIXES)][:2],
    }


def _trim_elf(dist: str, version: str, raw: Dict) -> Dict:
    elf = raw["elf"]
    out = {
        "path": raw["path"],
        "soname": elf["soname"],
        "needed": list(elf["needed"]),
        "rpath": elf["rpath"],
        "runpath": elf["runpath"],
    }
    if normalize(dist) == "torch" and re.match(r"torch/_C\.cpython-[^/]*\.so$", raw["path"]):
        out["layout_path"] = raw["path"]
        out["path"] = TORCH_C
        out["python_module"] = "_C"
    exports = version_exports(elf["soname"], version)
    if exports:
        out["exports"] = exports
    return out


def version_exports(soname: Optional[str], version: str) -> Dict[str, int]:
    """The identity symbols a real library of this soname exports, valued from its version."""
    parts = [int(p) for p in re.findall(r"\d+", version)[:3]] + [0, 0, 0]
    if soname == "libcudnn.so.9":
        return {"cudnnGetVersion": parts[0] * 10000 + parts[1] * 100 + parts[2]}
    if soname == "libnccl.so.2":
        return {"ncclGetVersion": parts[0] * 10000 + parts[1] * 100 + parts[2]}
    if soname is not None and soname.startswith("libcudart.so."):
        return {"cudaRuntimeGetVersion": parts[0] * 1000 + parts[1] * 10}
    return {}


def _python_files(raw: Dict) -> List[str]:
    count = raw["python_files_count"]
    key = normalize(raw["name"])
    if count == 0:
        return []
    if key == "torch":
        return list(TORCH_PYTHON_FILES)
    if key in _PYTHON_FILES:
        return _PYTHON_FILES[key][:count]
    paths = [e["path"] for e in raw["elf_files"]] + list(raw["other_files_examples"])
    tops = [p.split("/")[:2] for p in paths if "/" in p]
    if tops and tops[0][0] == "nvidia":
        # nvidia-*-cu12 wheels all ship nvidia/__init__.py and one per component folder.
        folder = "nvidia/" + tops[0][1]
        return ["nvidia/__init__.py", folder + "/__init__.py", folder + "/include/__init__.py",
                folder + "/lib/__init__.py"][:count]
    top = tops[0][0] if tops else key.replace("-", "_")
    return [top + "/__init__.py"]
