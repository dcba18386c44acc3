# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A venv as it is, written out as a ``pylock.toml`` (the facts module's ``export_lock``).

Private to the gpuops.cuda_venv collection: not a public API.

Every installed distribution, pinned to its installed version, is locked by uv (``uv pip compile --format
pylock.toml --no-deps`` for the venv's interpreter, with the module's wheel sources and uv's own configuration): each
package gets its wheels' file names, URLs and sha256 from the sources, as uv writes any lock. A distribution the
sources do not offer at its installed version (a local build, a package from a source no longer given) cannot be
locked: it is left out of ``packages`` and named in the lock's ``[tool.gpuops-cuda-venv] not-locked`` table (PEP
751 leaves ``tool`` tables to tools) and in the result. The file is read back with the lock reader before it is
written (``_read/packaging/lock_file.py``), and written atomically, only when its text changes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import List, Optional, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.durable import replace_file
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import canonical_name
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.redact import redact
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import Runner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.installers import (
    UvBackend, find_uv, installer_env, source_args)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.lock_file import LockError, parse_lock
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.wheel_sources import WheelSources

TOOL_TABLE = "tool.gpuops-cuda-venv"
_ROUNDS = 8  # uv names what it cannot find a few at a time: at most this many runs


class ExportError(CudaVenvError):
    """The venv could not be written out as a lock (message names the file or the command)."""


@dataclass(frozen=True)
class Exported:
    path: str
    packages: int
    not_locked: Tuple[str, ...]  # name==version the sources do not offer
    changed: bool
    text: str

    def as_dict(self) -> dict:
        return {"path": self.path, "packages": self.packages, "not_locked": list(self.not_locked),
                "changed": self.changed, "content": self.text}


def export_lock(dists, python: str, dest: str, runner: Runner, sources: WheelSources, check_mode: bool,
                uv: Optional[str] = None, timeout: float = 600) -> Exported:
    """Lock every distribution of ``dists`` at its installed version into ``dest`` (not written in check mode)."""
    uv = uv or find_uv(python)
    if uv is None:
        raise ExportError("export_lock needs uv (uv pip compile writes the lock): none found beside the venv's or "
                          "the module's Python, nor on PATH")
    pins = sorted({"%s==%s" % (d.name, d.version) for d in dists}, key=str.lower)
    text, missing = _compile(UvBackend(uv, python, runner, sources, timeout), pins, sources)
    if missing:
        text += "\n[%s]\nnot-locked = [%s]\n" % (TOOL_TABLE, ", ".join('"%s"' % p for p in missing))
    try:
        lock = parse_lock(os.path.basename(dest) if os.path.basename(dest).startswith("pylock.") else "pylock.toml", text)
    except LockError as exc:
        raise ExportError("the lock uv wrote for %s does not read back: %s" % (dest, exc)) from None
    changed = _read(dest) != text
    if changed and not check_mode:
        try:
            replace_file(dest, text.encode("utf-8"), 0o644)
        except OSError as exc:
            raise ExportError("export_lock %s cannot be written: %s" % (dest, exc.strerror or exc)) from None
    return Exported(dest, len(lock.pylock.packages), tuple(missing), changed, text)


def _compile(backend: UvBackend, pins: List[str], sources: WheelSources) -> Tuple[str, List[str]]:
    argv = [backend.uv, "pip", "compile", "--python", backend.python, "--format", "pylock.toml", "--no-deps",
            "--no-header", "--no-annotate", "--quiet"] + source_args(sources, uv=True) + ["-"]
    todo, missing = list(pins), []
    for _round in range(_ROUNDS):
        if not todo:
            raise ExportError("no distribution of the venv is offered by the wheel sources (%s)" % ", ".join(missing[:8]))
        result = backend.runner.run(argv, env=installer_env(backend.environ), timeout=backend.timeout,
                                    data="".join(p + "\n" for p in todo))
        if result.ok:
            return result.stdout, missing
        absent = set(backend.not_found(result))
        gone = [p for p in todo if canonical_name(p.split("==", 1)[0]) in absent]
        if not gone:
            detail = (result.stderr or result.stdout).strip().splitlines()
            raise ExportError(redact("uv pip compile failed: %s" % (" | ".join(detail[-3:]) or "rc=%d" % result.rc),
                                     sources.secrets()))
        missing += gone
        todo = [p for p in todo if p not in gone]
    raise ExportError("uv pip compile kept finding distributions the wheel sources lack (%s)" % ", ".join(missing[:8]))


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None
