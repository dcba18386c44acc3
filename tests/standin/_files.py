# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The files a stand-in wheel holds besides its ELF files: Python sources and a header or two.

Test support for gpuops.cuda_venv: not part of the collection's API.

torch and sgl_kernel Python files come from payload/<path>.in; nvidia/**/__init__.py are empty
as in the real cu12 wheels; every other Python file just names its stand-in. A distribution's
entry_points.txt comes from payload/entry_points/<name>.txt (torch: its real console script, torchrun),
so pip and uv write console scripts into bin/ as they do for the real wheel.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Dict, Tuple

from ._layout import DistSpec, StackSpec
from ._wheel import dist_info_dir

PAYLOAD = Path(__file__).resolve().parent / "payload"


def python_file(stack: StackSpec, dist: DistSpec, path: str) -> bytes:
    template = PAYLOAD / (path + ".in")
    if template.is_file():
        text = template.read_text(encoding="utf-8")
        for key, value in (("@TORCH_VERSION@", stack.torch_version), ("@CUDA_VERSION@", stack.cuda),
                           ("@VERSION@", dist.version)):
            text = text.replace(key, value)
        return text.encode("utf-8")
    if path.startswith("nvidia/"):
        return b""
    return ('"""Stand-in for %s %s built by tests.standin; not the real project."""\n\n__version__ = "%s"\n'
            % (dist.name, dist.version, dist.version)).encode("utf-8")


def data_file(dist: DistSpec, path: str) -> bytes:
    """A line naming the file, padded by a per-version amount: namesakes of two versions differ in size."""
    text = "stand-in for %s of %s %s (tests.standin)\n" % (path, dist.name, dist.version)
    return (text + "." * (1 + int(hashlib.sha256(text.encode()).hexdigest()[:4], 16) % 97) + "\n").encode("utf-8")


def wheel_files(stack: StackSpec, dist: DistSpec, elf_built: Dict[Tuple[str, str], Path]) -> Dict[str, Tuple[bytes, bool]]:
    """Everything the wheel of ``dist`` installs: {path: (content, executable)}."""
    files = {p: (python_file(stack, dist, p), False) for p in dist.python_files}
    files.update({p: (data_file(dist, p), False) for p in dist.data_files})
    for spec in dist.elf_files:
        files[spec.path] = (elf_built[(dist.key, spec.path)].read_bytes(), True)
    entry_points = PAYLOAD / "entry_points" / (dist.key + ".txt")
    if entry_points.is_file():
        files[dist_info_dir(dist) + "/entry_points.txt"] = (entry_points.read_bytes(), False)
    return files
