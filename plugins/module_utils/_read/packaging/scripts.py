# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Console scripts of moved venvs: a shebang rewritten to the venv's new path is not damage.

Private to the gpuops.cuda_venv collection: not a public API.

pip and uv write each console script as ``#!<venv>/bin/python`` followed by a launcher, and record its hash
and size *with* that shebang. People move a venv by copying it and rewriting the shebangs (relocation tools
do the same), so every script then differs from RECORD although nothing is damaged. A script counts as
relocated when its first line names an interpreter of this venv and the rest of it is the file RECORD
describes:
- exactly, when the venv's former location is known (``pyvenv.cfg``'s ``command`` line, or ``VIRTUAL_ENV``
  in an activate script that was not rewritten): the file with the former path put back in its shebang has
  RECORD's size (and, when hashing, RECORD's hash);
- otherwise, when the distribution declares the script as an entry point (so the installer generated it) and
  the size RECORD gives leaves room for a shebang line.
Everything else about RECORD stays as strict as it is.

A swap's copy is judged as the venv it becomes (``judged_as``: the live venv's root): its scripts name the live
venv's interpreter, which stands for the copy's own, and the live root is not a former place.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.record_hash import record_digest

# A console script is a few hundred bytes; anything larger is not a generated launcher.
_SCRIPT_LIMIT = 64 * 1024
_SHEBANG_MIN = len(b"#!/python\n")
_SHEBANG_MAX = 4096
_ACTIVATE = re.compile(r"""^\s*(?:export\s+)?VIRTUAL_ENV=["']?(/[^"'\n]*?)["']?\s*$""", re.M)


@dataclass(frozen=True)
class ScriptCheck:
    """The venv's console scripts: those relocated (dist_info -> RECORD paths) and those whose interpreter is
    gone (dist label, script path, interpreter); ``former_roots``: where the venv lived before, when known."""

    relocated: Dict[str, Tuple[str, ...]]
    interpreter_missing: Tuple[Tuple[str, str, str], ...]
    former_roots: Tuple[str, ...]


def check_scripts(dists, layout, locations: dict, file_states: dict, judged_as: Optional[str] = None):
    """(file_states without the relocated scripts in ``modified``, ScriptCheck).

    ``locations``: what locate_entries() returned; ``file_states``: what check_all() returned for the same dists;
    ``judged_as``: the root the venv is judged at when it is not its own (a swap's copy: the live venv's).
    """
    bin_dir = os.path.join(layout.root, "bin")
    in_bin = bin_dir + "/"
    root = judged_as or layout.root
    former = former_roots(layout, judged_as)
    relocated: Dict[str, Tuple[str, ...]] = {}
    missing: List[Tuple[str, str, str]] = []
    states = dict(file_states)
    for dist in dists:
        state = states.get(dist.dist_info)
        modified = set(state.modified) if state else set()
        declared = None
        moved = []
        for entry, loc, _problem in locations.get(dist.dist_info, ()):
            if loc is None or not loc.startswith(in_bin) or "/" in loc[len(in_bin):]:
                continue
            data = _read_script(loc)
            if data is None:
                continue
            line, body = _split_shebang(data)
            interpreter = _interpreter(line)
            if interpreter is None:
                continue
            on_disk = _on_disk(interpreter, root, layout.root)
            if not os.path.exists(on_disk):
                missing.append((dist.label, os.path.relpath(loc, layout.root), interpreter))
            if entry.path not in modified or not _names_this_venv(on_disk, bin_dir):
                continue
            if declared is None:
                declared = {_unversioned(name) for name in entry_point_scripts(dist)}
            if _shebang_only(entry, line, body, root, former, _unversioned(os.path.basename(loc)) in declared):
                moved.append(entry.path)
        if moved:
            relocated[dist.dist_info] = tuple(moved)
            states[dist.dist_info] = _without(state, moved)
    return states, ScriptCheck(relocated, tuple(missing), former)


def former_roots(layout, judged_as: Optional[str] = None) -> Tuple[str, ...]:
    """Where the venv lived before it was moved, as far as its own files say; () when they name only its root
    (or ``judged_as``, the root it is judged at)."""
    found = []
    command = layout.config.get("command", "")
    paths = [part for part in command.split() if part.startswith("/")]
    if len(paths) > 1:  # "/usr/bin/python3 -m venv /old/path": the last absolute path is the venv
        found.append(paths[-1])
    for name in ("activate", "activate.fish", "activate.csh"):
        try:
            with open(os.path.join(layout.root, "bin", name), encoding="utf-8", errors="replace") as handle:
                text = handle.read(_SCRIPT_LIMIT)
        except OSError:
            continue
        found.extend(match.group(1) for match in _ACTIVATE.finditer(text))
    own = {os.path.normpath(layout.root), os.path.normpath(judged_as or layout.root)}
    return tuple(dict.fromkeys(os.path.normpath(p) for p in found if os.path.normpath(p) not in own))


def entry_point_scripts(dist) -> frozenset:
    """The console and GUI script names the distribution's entry_points.txt declares."""
    try:
        with open(os.path.join(dist.dist_info, "entry_points.txt"), encoding="utf-8", errors="replace") as handle:
            text = handle.read(_SCRIPT_LIMIT)
    except OSError:
        return frozenset()
    names, section = set(), None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
        elif section in ("console_scripts", "gui_scripts") and "=" in line:
            names.add(line.split("=", 1)[0].strip())
    return frozenset(names)


def _unversioned(name: str) -> str:
    """A script name without its Python version suffix: pip writes pip3.13 beside the pip and pip3 it declares."""
    return re.sub(r"[0-9.]+$", "", name) or name


def _read_script(path: str) -> Optional[bytes]:
    try:
        with open(path, "rb") as handle:
            data = handle.read(_SCRIPT_LIMIT + 1)
    except OSError:
        return None
    return data if len(data) <= _SCRIPT_LIMIT and data.startswith(b"#!") else None


def _split_shebang(data: bytes) -> Tuple[bytes, bytes]:
    end = data.find(b"\n")
    return (data, b"") if end < 0 else (data[:end + 1], data[end + 1:])


def _interpreter(line: bytes) -> Optional[str]:
    """The absolute interpreter a ``#!`` line names (``/usr/bin/env`` lines name none)."""
    try:
        words = line[2:].decode("utf-8").split()
    except UnicodeDecodeError:
        return None
    if not words or not words[0].startswith("/") or os.path.basename(words[0]) == "env":
        return None
    return words[0]


def _on_disk(path: str, root: str, disk_root: str) -> str:
    """``path`` under the venv judged at ``root`` as it lies on disk (under ``disk_root``); any other unchanged."""
    if root != disk_root and path.startswith(root.rstrip("/") + "/"):
        return os.path.join(disk_root, path[len(root.rstrip("/")) + 1:])
    return path


def _names_this_venv(interpreter: str, bin_dir: str) -> bool:
    if not os.path.basename(interpreter).startswith("python") or not os.path.exists(interpreter):
        return False
    folder = os.path.dirname(os.path.normpath(interpreter))
    return folder == bin_dir or os.path.realpath(folder) == os.path.realpath(bin_dir)


def _shebang_only(entry, line: bytes, body: bytes, root: str, former: Tuple[str, ...], declared: bool) -> bool:
    """True when the script is RECORD's file but for its shebang line (see the module's docstring)."""
    current = root.encode("utf-8")
    for old in former:
        candidate = line.replace(current, old.encode("utf-8"), 1) + body
        if entry.size is not None and len(candidate) != entry.size:
            continue
        if entry.digest is None or _digest(candidate, entry.algorithm) == entry.digest:
            return True
    if former or not declared or entry.size is None:  # a known former place allows no guess
        return False
    return _SHEBANG_MIN <= entry.size - len(body) <= _SHEBANG_MAX


def _digest(data: bytes, algorithm: Optional[str]) -> Optional[str]:
    if algorithm not in hashlib.algorithms_available:
        return None
    return record_digest(hashlib.new(algorithm, data))


def _without(state, moved: List[str]):
    gone = set(moved)
    return dataclasses.replace(state, modified=tuple(p for p in state.modified if p not in gone))
