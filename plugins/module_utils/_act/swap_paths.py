# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Make what installers wrote into a venv's copy name the live venv, byte for byte as an in-place install would.

Private to the gpuops.cuda_venv collection: not a public API.

pip and uv embed the interpreter's path in what they write: console scripts start with
``#!COPY/bin/python`` (or, when that line would pass 127 bytes, the ``#!/bin/sh`` launcher of distlib and
uv), and pip's bytecode (``__pycache__/*.pyc``) holds each source's absolute path. Only files with a new
inode (written since the copy was made) are looked at. Scripts get the live path (in the simple form when
it fits, as the installer would have chosen) and their RECORD rows the new sha256 and size; bytecode is
compiled again by the venv's own interpreter with the live path as its file name (``py_compile``, as
pip's ``compileall`` does). Every file is replaced by rename, never written in place.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
from typing import Dict, FrozenSet, List, Optional, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.durable import rewrite_file
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import Runner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import clean_env
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.snapshot import scan_tree

SCRIPTS_DIR = "bin/"
MAX_SCRIPT = 1 << 20
MAX_SHEBANG = 127  # Linux: distlib (pip) and uv switch to the /bin/sh launcher above it
_SH_FIRST = b"#!/bin/sh"
_SH_EXEC = b"'''exec' "
_SH_ARGS = b' "$0" "$@"'
_SH_END = b"' '''"
# Runs in the venv's interpreter: bytecode is specific to its version. stdin: [[pyc, live source path], ...].
_RECOMPILE = (
    "import importlib.util, json, py_compile, sys\n"
    "for cfile, dfile in json.load(sys.stdin):\n"
    "    name = cfile.rsplit('/', 1)[-1]\n"
    "    level = int(name.split('.opt-')[1][0]) if '.opt-' in name else 0\n"
    "    py_compile.compile(importlib.util.source_from_cache(cfile), cfile=cfile, dfile=dfile, doraise=True,"
    " optimize=level)\n"
)


class RewriteError(CudaVenvError):
    """The copy's installer-written paths cannot be made to name the live venv."""


def rewrite_copy_paths(copy_root: str, live_root: str, known: FrozenSet[Tuple[int, int]], python: str, runner: Runner,
                       exclude: Tuple[str, ...] = (), timeout: float = 300) -> List[str]:
    """Rewrite the new files of ``copy_root`` that name it; returns their paths relative to the root.

    ``known``: (dev, inode) of every file the copy was made with; ``python``: the copy's interpreter.
    """
    entries = scan_tree(copy_root, exclude)
    new = sorted(rel for rel, entry in entries.items() if entry.type == "f" and (entry.dev, entry.ino) not in known)
    old, fresh = os.fsencode(copy_root) + b"/", os.fsencode(live_root) + b"/"
    scripts = {}  # type: Dict[str, Tuple[str, int]]
    pycs = []
    for rel in new:
        path = copy_root + "/" + rel
        if rel.startswith(SCRIPTS_DIR) and entries[rel].size <= MAX_SCRIPT:
            data = _read(path)
            fixed = fixed_script(data, old, fresh)
            if fixed is not None:
                rewrite_file(path, fixed)
                scripts[rel] = (_record_hash(fixed), len(fixed))
        elif rel.endswith(".pyc") and old in _read(path):
            pycs.append(rel)
    if pycs:
        _recompile(copy_root, live_root, pycs, python, runner, timeout)
    if scripts:
        for rel in new:
            if rel.endswith(".dist-info/RECORD"):
                _fix_record(copy_root, rel, scripts)
    return sorted(list(scripts) + pycs)


def fixed_script(data: bytes, old: bytes, new: bytes) -> Optional[bytes]:
    """The script with the interpreter path ``old...`` in its first lines made ``new...``; None when it has none."""
    lines = data.split(b"\n", 3)
    head = lines[:3]
    if not any(old in line for line in head):
        return None
    head = [line.replace(old, new) for line in head]
    if len(head) == 3 and head[0] == _SH_FIRST and head[1].startswith(_SH_EXEC) and head[1].endswith(_SH_ARGS) \
            and head[2] == _SH_END:
        executable = head[1][len(_SH_EXEC):-len(_SH_ARGS)]
        if executable[:1] in (b'"', b"'") and executable[-1:] == executable[:1]:
            executable = executable[1:-1]
        if b" " not in executable and len(executable) + 3 <= MAX_SHEBANG:
            # The shorter live path fits a plain shebang: what the installer writes for it.
            return b"\n".join([b"#!" + executable] + lines[3:])
    return b"\n".join(head + lines[3:])


def _recompile(copy_root, live_root, pycs, python, runner: Runner, timeout) -> None:
    jobs = [[copy_root + "/" + rel, live_root + "/" + _source_of(rel)] for rel in pycs]
    result = runner.run([python, "-I", "-c", _RECOMPILE], data=json.dumps(jobs), env=clean_env(), timeout=timeout,
                        cwd=os.path.dirname(copy_root))
    if not result.ok:
        raise RewriteError("cannot compile the bytecode of the venv's copy again for its live path: %s" % (
            (result.stderr or result.stdout).strip().splitlines()[-1:] or ["exit code %d" % result.rc])[0])


def _source_of(pyc_rel: str) -> str:
    """``pkg/__pycache__/mod.cpython-312.pyc`` -> ``pkg/mod.py`` (PEP 3147)."""
    folder, name = pyc_rel.rsplit("/", 1) if "/" in pyc_rel else ("", pyc_rel)
    parent = folder[:-len("__pycache__")].rstrip("/") if folder.endswith("__pycache__") else folder
    stem = name.split(".", 1)[0]
    return (parent + "/" if parent else "") + stem + ".py"


def _fix_record(copy_root: str, rel: str, scripts: Dict[str, Tuple[str, int]]) -> None:
    """Set the hash and size of the rewritten scripts' rows in one RECORD; other rows keep their bytes."""
    path = copy_root + "/" + rel
    site = os.path.dirname(os.path.dirname(path))
    data = _read(path)
    out, changed = [], False
    for line in data.splitlines(True):
        body = line.rstrip(b"\r\n")
        ending = line[len(body):]
        try:
            row = next(csv.reader(io.StringIO(body.decode("utf-8"))))
        except (StopIteration, UnicodeDecodeError, csv.Error):
            row = []
        target = os.path.relpath(os.path.normpath(os.path.join(site, row[0])), copy_root) if row else None
        if target in scripts:
            digest, size = scripts[target]
            buffer = io.StringIO()
            csv.writer(buffer, lineterminator="").writerow([row[0], digest, size])
            line = buffer.getvalue().encode("utf-8") + ending
            changed = True
        out.append(line)
    if changed:
        rewrite_file(path, b"".join(out))


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()
