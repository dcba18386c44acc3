# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a venv's jobs get variables that slow CUDA work (``_core/slow_env.py``): its activate scripts.

Private to the gpuops.cuda_venv collection: not a public API.

bash/zsh ``bin/activate`` (``export NAME=value``, or ``NAME=value`` then ``export NAME``), fish ``activate.fish``
(``set -gx NAME value``) and csh ``activate.csh`` (``setenv NAME value``). Only the table's names are read; a
running process's environment is ``venv_processes``'s.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from typing import List

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.slow_env import NAMES

ACTIVATE_SCRIPTS = ("bin/activate", "bin/activate.fish", "bin/activate.csh")
_MAX_SCRIPT = 1 << 20
_NAME = "(?P<name>%s)" % "|".join(NAMES)
_ASSIGNMENTS = (
    re.compile(r"^\s*(?:export\s+)?%s=(?P<value>.*)$" % _NAME),
    re.compile(r"^\s*set\s+(?:-[a-zA-Z]+\s+)*%s(?:\s+(?P<value>.*))?$" % _NAME),
    re.compile(r"^\s*setenv\s+%s(?:\s+(?P<value>.*))?$" % _NAME),
)


@dataclass(frozen=True)
class EnvSetting:
    """One assignment of a table variable: in which file (relative to the venv) and line, to which value."""

    source: str
    line: int
    name: str
    value: str


def activate_settings(root: str) -> List[EnvSetting]:
    """The table's variables the venv's activate scripts set, in file and line order; unreadable files are skipped."""
    found = []
    for rel in ACTIVATE_SCRIPTS:
        try:
            with open(os.path.join(root, rel), "rb") as handle:
                text = handle.read(_MAX_SCRIPT).decode("utf-8", "replace")
        except OSError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for pattern in _ASSIGNMENTS:
                match = pattern.match(line)
                if match:
                    found.append(EnvSetting(rel, number, match.group("name"), _unquote(match.group("value") or "")))
                    break
    return found


def _unquote(text: str) -> str:
    """The value a shell assigns for a simple word or a quoted one; a trailing comment or ``;`` is dropped."""
    try:
        words = shlex.split(text, comments=True)
    except ValueError:
        return text.strip()
    return words[0].rstrip(";") if words else ""
