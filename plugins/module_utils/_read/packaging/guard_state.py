# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a venv's guard is on disk: its record in the state folder, and the files that honour it.

Private to the gpuops.cuda_venv collection: not a public API.

The guard (``_act/venv_guard.py`` writes it, ``_decide/guard.py`` computes it) is a constraints file in
``VENV/.cuda_venv/guard/``, named by the venv's ``pip.conf`` (pip reads ``sys.prefix/pip.conf``), exported as
``UV_CONSTRAINT`` by its activate scripts, and optionally written into uv's user or system ``uv.toml``
(``constraint-dependencies``). ``manifest.json`` records every insertion made into a user's file, so that
``guard: false`` undoes exactly those, and the originals kept in ``originals/``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Dict, Mapping, Optional, Tuple

GUARD_DIR = "guard"  # under the venv's state folder (.cuda_venv)
CONSTRAINTS_NAME = "constraints.txt"
MANIFEST_NAME = "manifest.json"
ORIGINALS_DIR = "originals"
PIP_CONF = "pip.conf"
# The activate scripts a venv may have (venv, virtualenv, uv), relative to the venv root; their shell.
ACTIVATE_SCRIPTS = (("bin/activate", "sh"), ("bin/activate.fish", "fish"), ("bin/activate.csh", "csh"),
                    ("bin/activate.nu", "nu"))
UV_CONFIG_KINDS = ("none", "user", "system")


@dataclass(frozen=True)
class GuardState:
    """The guard as found: ``manifest`` is None when the venv has none. ``texts``: the current bytes (decoded) of
    every file the manifest names, None where the file is missing; ``constraints_text`` the constraints file's."""

    manifest: Optional[dict]
    constraints_text: Optional[str] = None
    texts: Dict[str, Optional[str]] = field(default_factory=dict)
    problem: Optional[str] = None  # the manifest cannot be read


def guard_dir_of(state_dir: str) -> str:
    return os.path.join(state_dir, GUARD_DIR)


def read_text(path: str) -> Optional[str]:
    """A file's text (UTF-8, undecodable bytes escaped), None when it does not exist (or a file is in place of a
    folder of its path)."""
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "surrogateescape")
    except (FileNotFoundError, NotADirectoryError):
        return None


def read_guard(state_dir: str) -> GuardState:
    """The guard recorded in ``state_dir`` (the venv's .cuda_venv) and the current text of the files it edited."""
    folder = guard_dir_of(state_dir)
    raw = read_text(os.path.join(folder, MANIFEST_NAME))
    if raw is None:
        return GuardState(manifest=None)
    try:
        manifest = json.loads(raw)
        files = manifest["files"]
        if not isinstance(files, dict):
            raise ValueError("files is not a mapping")
    except (ValueError, KeyError, TypeError) as exc:
        return GuardState(manifest=None, problem="%s cannot be read: %s" % (os.path.join(folder, MANIFEST_NAME), exc))
    texts = {path: read_text(path) for path in files}
    return GuardState(manifest=manifest, constraints_text=read_text(manifest.get("constraints_file", "")), texts=texts)


def uv_config_path(kind: str, environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """uv's own user or system ``uv.toml`` as uv finds it (docs.astral.sh/uv/concepts/configuration-files):
    user ``$XDG_CONFIG_HOME/uv/uv.toml``, else ``~/.config/uv/uv.toml``; system the first existing
    ``DIR/uv/uv.toml`` of ``$XDG_CONFIG_DIRS`` (default ``/etc/xdg``), else ``/etc/uv/uv.toml``. None for "none"."""
    env = os.environ if environ is None else environ
    if kind == "user":
        base = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
        return os.path.join(base, "uv", "uv.toml")
    if kind == "system":
        for folder in (env.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(":"):
            if folder and os.path.isfile(os.path.join(folder, "uv", "uv.toml")):
                return os.path.join(folder, "uv", "uv.toml")
        return "/etc/uv/uv.toml"
    return None


def existing_activate_scripts(root: str) -> Tuple[Tuple[str, str], ...]:
    """(path, shell) of each activate script the venv has."""
    return tuple((os.path.join(root, rel), shell) for rel, shell in ACTIVATE_SCRIPTS
                 if os.path.isfile(os.path.join(root, rel)) and not os.path.islink(os.path.join(root, rel)))
