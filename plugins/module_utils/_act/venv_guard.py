# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Install, renew or remove a venv's install guard (see _read/packaging/guard_state.py for where it lives).

Private to the gpuops.cuda_venv collection: not a public API.

Called by ``repair`` under the venv's lock once the venv is healthy: in place at the end, on a swap's copy before
the exchange (the files then name the venv's own path). Every file is replaced by rename (``_core/durable.py``),
never written in place: a pip.conf or an activate script may be a hard link (a swap's copy shares the live one's).
The manifest records each insertion made into a user's file and the file as it was, so that ``guard: false``
gives the file back byte for byte (or, when the user edited it since, removes exactly the guard's lines).
Order: constraints file, manifest, then the user's files; removal the reverse. A run killed between two steps
leaves a state the next run completes (an insertion not found is inserted again; one found is not doubled).
"""

from __future__ import annotations

import hashlib
import json
import dataclasses
import os
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.durable import make_dirs, replace_file, rewrite_file
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.findings import is_healthy
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.guard import constraints_text, guard_constraints, guard_facts
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.guard_edits import (
    GuardEditError, activate_insertions, apply, pip_conf_insertions, undo, uv_config_insertions)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.guard_state import (
    CONSTRAINTS_NAME, MANIFEST_NAME, PIP_CONF, existing_activate_scripts, guard_dir_of, read_guard, read_text, uv_config_path)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import state_dir_of
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import Observations

MANIFEST_VERSION = 1
NEW_FILE_MODE = 0o644


class GuardError(CudaVenvError):
    """The guard cannot be written as asked (a file it would edit, a uv config another venv's guard holds)."""


@dataclass(frozen=True)
class GuardOptions:
    enabled: bool = False
    uv_config: str = "none"  # none | user | system
    environ: Optional[Mapping[str, str]] = None  # where uv's user config is found (None: os.environ)


@dataclass
class GuardChange:
    """What ``settle`` would do (check mode) or did: each file's text before and after (None: absent)."""

    files: Dict[str, tuple] = field(default_factory=dict)  # path -> (before, after)
    skipped: List[str] = field(default_factory=list)  # activate scripts left alone, and why

    @property
    def changed(self) -> bool:
        return any(before != after for before, after in self.files.values())

    def diff(self) -> List[dict]:
        return [{"before_header": path, "after_header": path, "before": before or "", "after": after or ""}
                for path, (before, after) in sorted(self.files.items()) if before != after]

    def as_dict(self) -> dict:
        return {"changed": sorted(p for p, (b, a) in self.files.items() if b != a), "skipped": self.skipped}


def settle(options: GuardOptions, obs: Observations, target: str, root: str, check_mode: bool = False) -> GuardChange:
    """Make the guard of the venv ``root`` what ``options`` ask, from ``obs`` (the venv as it ends), writing into
    ``target`` (``root`` itself, or a swap's copy that becomes it): renewed when enabled, removed when not.

    The guard found is read from ``root``'s state folder; its manifest names ``root``'s paths."""
    found = read_guard(state_dir_of(root))
    old = found.manifest or {"files": {}}
    old_files = old.get("files", {})
    folder = guard_dir_of(state_dir_of(target))
    named_folder = guard_dir_of(state_dir_of(root))
    constraints_path = os.path.join(named_folder, CONSTRAINTS_NAME)
    change = GuardChange()
    files = {}  # recorded (root-named) path -> (target path, new text or None, record or None)

    def moved(path):
        return target + path[len(root):] if path.startswith(root + "/") else path

    if options.enabled:
        constraints = guard_constraints(obs)
        if not constraints:
            raise GuardError("cannot guard %s: its anchor %s is not installed" % (root, obs.options.anchor))
        wanted = [(os.path.join(root, PIP_CONF), "pip_conf")]
        wanted += [(os.path.join(root, os.path.relpath(p, target)), "activate:" + shell)
                   for p, shell in existing_activate_scripts(target)]
        uv_path = uv_config_path(options.uv_config, options.environ)
        if uv_path:
            wanted.append((uv_path, "uv_config"))
        for path, kind in wanted:
            try:
                files[path] = _edited(path, moved(path), kind, old_files.get(path), constraints_path, root, constraints)
            except GuardEditError as exc:
                if kind.startswith("activate"):
                    change.skipped.append("%s: %s" % (path, exc))
                    continue
                raise GuardError("cannot guard %s: %s: %s" % (root, path, exc)) from None
        manifest = {"version": MANIFEST_VERSION, "root": root, "constraints_file": constraints_path,
                    "constraints": list(constraints), "files": dict((p, f[2]) for p, f in files.items())}
        own = [(os.path.join(folder, CONSTRAINTS_NAME), constraints_text(root, constraints)),
               (os.path.join(folder, MANIFEST_NAME), json.dumps(manifest, indent=1, sort_keys=True) + "\n")]
    else:
        own = [(os.path.join(folder, CONSTRAINTS_NAME), None), (os.path.join(folder, MANIFEST_NAME), None)]
    for path, record in old_files.items():
        if path not in files:
            files[path] = (moved(path), _restored(read_text(moved(path)), record), None)
    for path, text in own:
        change.files[path] = (read_text(path), text)
    for path, (where, text, _record) in files.items():
        change.files[where] = (read_text(where), text)
    if not check_mode:
        _write(change, folder, options.enabled)
    return change


def _edited(path, where, kind, record, constraints_path, root, constraints):
    """(target path, new text, manifest record) of one user's file with the guard's lines."""
    current = read_text(where)
    clean = undo(current, record["inserted"])[0] if record and current is not None else current
    base = clean or ""
    if kind == "pip_conf":
        insertions = pip_conf_insertions(base, constraints_path)
    elif kind == "uv_config":
        insertions = uv_config_insertions(base, root, constraints)
    elif current is None:
        raise GuardEditError("missing")
    else:
        insertions = activate_insertions(base, kind.split(":", 1)[1], constraints_path)
    text = apply(base, insertions)
    original = record["original"] if record else current
    return where, text, {"kind": kind, "inserted": [t for _o, t in insertions], "original": original,
                         "written_sha256": _sha(text)}


def _restored(current: Optional[str], record: dict) -> Optional[str]:
    """A user's file without the guard: as it was, when nobody touched it since; else without the guard's lines."""
    if current is None:
        return None
    if _sha(current) == record.get("written_sha256"):
        return record.get("original")
    return undo(current, record.get("inserted", []))[0]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def _write(change: GuardChange, folder: str, enabled: bool) -> None:
    own = [p for p in change.files if os.path.dirname(p) == folder]
    own.sort(key=lambda p: os.path.basename(p) != CONSTRAINTS_NAME)  # constraints, then the manifest
    users = [p for p in change.files if p not in own]
    order = own + users if enabled else users + own[::-1]
    if enabled:
        make_dirs(folder, 0o700)
    for path in order:
        before, after = change.files[path]
        if before == after:
            continue
        if after is None:
            os.unlink(path)
        elif before is None:
            if os.path.dirname(path) != folder:
                make_dirs(os.path.dirname(path), 0o755)
            replace_file(path, after.encode("utf-8", "surrogateescape"), NEW_FILE_MODE)
        else:
            rewrite_file(path, after.encode("utf-8", "surrogateescape"))
    if not enabled and os.path.isdir(folder) and not os.listdir(folder):
        os.rmdir(folder)


def settle_guard(options, obs: Observations, target: str, root: str, findings, check_mode: bool = False):
    """The guard settled for the venv ``root`` as ``obs`` shows it (written into ``target``): renewed when asked
    for and the venv is healthy, removed when not asked for, left as it is on an unhealthy venv. Returns the
    change and ``obs`` with the guard as it is now."""
    guard = options.guard
    if guard.enabled and not is_healthy(findings):
        return GuardSkipped("the venv is not healthy: the guard was left as it was"), obs
    change = settle(guard, obs, target, root, check_mode=check_mode)
    if check_mode or target != root:
        return change, obs
    return change, dataclasses.replace(obs, guard=read_guard(state_dir_of(root)))


class GuardSkipped:
    """No guard change, and why."""

    changed = False

    def __init__(self, reason: str):
        self.reason = reason

    def diff(self):
        return []

    def as_dict(self):
        return {"changed": [], "skipped": [self.reason]}


def with_guard(result: dict, change, obs: Observations, diff: bool) -> dict:
    """``result`` with the guard's part: RV(guard) (the guard ``obs`` found, and the files this run changed or, in
    check mode, would change), and those files' diffs after the inventory's."""
    result["guard"] = dict(guard_facts(obs.guard, obs), **change.as_dict())
    if diff and change.diff():
        result["diff"] = [result["diff"]] + change.diff() if "diff" in result else change.diff()
    return result


def lift_uv_config(root: str) -> Optional[dict]:
    """Take the guard's lines out of uv's config for the repair's own uv runs (uv has no per-call override of
    ``constraint-dependencies`` that keeps the user's other settings); returns what ``put_back_uv_config``
    needs, None when the guard holds no uv config."""
    state_dir = state_dir_of(root)
    manifest = read_guard(state_dir).manifest
    if not manifest:
        return None
    for path, record in manifest["files"].items():
        if record.get("kind") == "uv_config":
            current = read_text(path)
            if current is None:
                return None
            clean, missing = undo(current, record["inserted"])
            if not missing:
                rewrite_file(path, clean.encode("utf-8", "surrogateescape"))
            return {"path": path, "text": current}
    return None


def put_back_uv_config(lifted: Optional[dict]) -> None:
    """After a repair that failed (the venv is as it was, and so is its guard): uv's config as it was lifted."""
    if lifted and read_text(lifted["path"]) is not None:
        rewrite_file(lifted["path"], lifted["text"].encode("utf-8", "surrogateescape"))
