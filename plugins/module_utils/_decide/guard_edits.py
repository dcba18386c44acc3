# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The guard's edits of a user's files, as pure text: where each insertion goes, and how it comes out again.

Private to the gpuops.cuda_venv collection: not a public API.

Every edit is a list of insertions ``(offset, text)`` into the file's text without the guard; removing each
inserted text once gives that text back exactly. Each inserted text names the guard's constraints file (or, in
uv.toml, the venv), so it is found again even after the user edited the rest of the file.
"""

from __future__ import annotations

import configparser
import json
import re
from typing import List, Optional, Sequence, Tuple

MARK = "cuda_venv guard"
Insertion = Tuple[int, str]

# A path that pip's whitespace-split config values and the shells' quoting carry unchanged.
_SAFE_PATH = re.compile(r"^/[A-Za-z0-9_./+@:,=-]+$")
_SECTION = re.compile(r"^\s*\[([^\]]+)\]\s*$")
_UV_BLOCK = re.compile(r"^# %s of (.*) \(guard: false removes it\)$" % MARK, re.MULTILINE)
_UV_KEY = re.compile(r"^\s*constraint-dependencies\s*=", re.MULTILINE)


class GuardEditError(ValueError):
    """A file the guard cannot edit safely (the message names it and why)."""


def check_path(path: str) -> None:
    if not _SAFE_PATH.match(path):
        raise GuardEditError("the guard's constraints file %r must be an absolute path without spaces, quotes or shell "
                             "characters (pip splits its config values on whitespace)" % path)


def apply(text: str, insertions: Sequence[Insertion]) -> str:
    for offset, inserted in sorted(insertions, reverse=True):
        text = text[:offset] + inserted + text[offset:]
    return text


def undo(text: str, inserted: Sequence[str]) -> Tuple[str, List[str]]:
    """``text`` with each of ``inserted`` removed once; and those that were not found (edited away by hand)."""
    missing = []
    for piece in inserted:
        at = text.find(piece)
        if at < 0:
            missing.append(piece)
        else:
            text = text[:at] + text[at + len(piece):]
    return text, missing


def _lines_with_offsets(text: str):
    offset = 0
    for line in text.splitlines(True):
        yield offset, line
        offset += len(line)


def _at_end(text: str, block: str) -> Insertion:
    return len(text), ("\n" if text and not text.endswith("\n") else "") + block


def pip_conf_insertions(text: str, path: str) -> List[Insertion]:
    """``[install] constraint`` naming ``path`` added to a pip.conf's text (empty: no file), keeping the user's own
    constraint files (pip reads the value as a whitespace-separated list, and [install] overrides [global])."""
    check_path(path)
    parser = configparser.RawConfigParser()
    try:
        parser.read_string(text)
    except configparser.Error as exc:
        raise GuardEditError("pip.conf cannot be parsed: %s" % exc) from None
    own = parser.get("install", "constraint") if parser.has_option("install", "constraint") else None
    inherited = parser.get("global", "constraint").split() if parser.has_option("global", "constraint") else []
    line = "# %s (guard: false removes this)\nconstraint = %s\n" % (MARK, " ".join(inherited + [path]))
    section, key_end = None, None
    for offset, raw in _lines_with_offsets(text):
        match = _SECTION.match(raw)
        if match:
            if section == "install" and key_end is None:
                break
            section = match.group(1).strip()
            if section == "install" and own is None:
                return [(offset + len(raw), line if raw.endswith("\n") else "\n" + line)]
            continue
        if section != "install" or own is None:
            continue
        if re.match(r"^constraint\s*[=:]", raw, re.IGNORECASE):
            key_end = offset + len(raw)
        elif key_end is not None and raw[:1] in (" ", "\t") and raw.strip():
            key_end = offset + len(raw)  # a continuation line of the value
        elif key_end is not None:
            break
    if key_end is not None:
        ending = "" if text[:key_end].endswith("\n") else "\n"
        return [(key_end, "%s    %s\n" % (ending, path))]
    return [_at_end(text, ("\n" if text else "") + "[install]\n" + line)]


# Per shell: the line after which the deactivate part goes, that part, and the part appended at the end.
_SH_DEACTIVATE = (
    "    # >>> {mark} >>>\n"
    "    if [ -n \"${{_CUDA_VENV_GUARD_ACTIVE:-}}\" ] ; then\n"
    "        if [ -n \"${{_CUDA_VENV_OLD_UV_CONSTRAINT+x}}\" ] ; then\n"
    "            UV_CONSTRAINT=\"$_CUDA_VENV_OLD_UV_CONSTRAINT\" ; export UV_CONSTRAINT ; unset _CUDA_VENV_OLD_UV_CONSTRAINT\n"
    "        else\n"
    "            unset UV_CONSTRAINT\n"
    "        fi\n"
    "        unset _CUDA_VENV_GUARD_ACTIVE\n"
    "    fi\n"
    "    # <<< {mark} <<<\n")
_SH_END = (
    "# >>> {mark}: uv honours these constraints ({path}) >>>\n"
    "if [ -n \"${{UV_CONSTRAINT+x}}\" ] ; then _CUDA_VENV_OLD_UV_CONSTRAINT=\"$UV_CONSTRAINT\" ; fi\n"
    "UV_CONSTRAINT=\"${{UV_CONSTRAINT:+$UV_CONSTRAINT }}{path}\"\n"
    "export UV_CONSTRAINT\n"
    "_CUDA_VENV_GUARD_ACTIVE=1\n"
    "# <<< {mark} <<<\n")
_FISH_DEACTIVATE = (
    "    # >>> {mark} >>>\n"
    "    if set -q _CUDA_VENV_GUARD_ACTIVE\n"
    "        if set -q _CUDA_VENV_OLD_UV_CONSTRAINT\n"
    "            set -gx UV_CONSTRAINT $_CUDA_VENV_OLD_UV_CONSTRAINT\n"
    "            set -e _CUDA_VENV_OLD_UV_CONSTRAINT\n"
    "        else\n"
    "            set -e UV_CONSTRAINT\n"
    "        end\n"
    "        set -e _CUDA_VENV_GUARD_ACTIVE\n"
    "    end\n"
    "    # <<< {mark} <<<\n")
_FISH_END = (
    "# >>> {mark}: uv honours these constraints ({path}) >>>\n"
    "if set -q UV_CONSTRAINT\n"
    "    set -gx _CUDA_VENV_OLD_UV_CONSTRAINT $UV_CONSTRAINT\n"
    "    set -gx UV_CONSTRAINT \"$UV_CONSTRAINT {path}\"\n"
    "else\n"
    "    set -gx UV_CONSTRAINT {path}\n"
    "end\n"
    "set -gx _CUDA_VENV_GUARD_ACTIVE 1\n"
    "# <<< {mark} <<<\n")
# csh: deactivate is one alias; the guard's part goes first inside its quotes.
_CSH_DEACTIVATE = ("test $?_CUDA_VENV_GUARD_ACTIVE != 0 && unsetenv UV_CONSTRAINT && unset _CUDA_VENV_GUARD_ACTIVE; "
                   "test $?_CUDA_VENV_OLD_UV_CONSTRAINT != 0 && setenv UV_CONSTRAINT \"$_CUDA_VENV_OLD_UV_CONSTRAINT\" && "
                   "unset _CUDA_VENV_OLD_UV_CONSTRAINT; ")
_CSH_END = (
    "# >>> {mark}: uv honours these constraints ({path}) >>>\n"
    "if ($?UV_CONSTRAINT) then\n"
    "    set _CUDA_VENV_OLD_UV_CONSTRAINT=\"$UV_CONSTRAINT\"\n"
    "    setenv UV_CONSTRAINT \"${{UV_CONSTRAINT}} {path}\"\n"
    "else\n"
    "    setenv UV_CONSTRAINT \"{path}\"\n"
    "endif\n"
    "set _CUDA_VENV_GUARD_ACTIVE=1\n"
    "# <<< {mark} <<<\n")
# nushell: the activate module's export-env; ``deactivate`` (overlay hide) restores the environment itself.
_NU_ENV = ("    # {mark}: uv honours these constraints\n"
           "    $env.UV_CONSTRAINT = (if 'UV_CONSTRAINT' in $env {{ $'($env.UV_CONSTRAINT) {path}' }} else {{ '{path}' }})\n")

_DEACTIVATE_LINE = {
    "sh": re.compile(r"^deactivate\s*\(\)\s*\{\s*$"),
    "fish": re.compile(r"^function deactivate\b.*$"),
    "nu": re.compile(r"^export-env\s*\{\s*$"),  # the module's own, not one inside a nested module
}


def activate_insertions(text: str, shell: str, path: str) -> List[Insertion]:
    """``UV_CONSTRAINT`` naming ``path`` exported by an activate script of ``shell`` and undone by its deactivate
    (a previous value comes back). GuardEditError when the script's deactivate cannot be found."""
    check_path(path)
    fields = dict(mark=MARK, path=path)
    if shell == "csh":
        at = text.find("alias deactivate '")
        if at < 0:
            raise GuardEditError("no \"alias deactivate '\" line")
        return [(at + len("alias deactivate '"), _CSH_DEACTIVATE), _at_end(text, _CSH_END.format(**fields))]
    for offset, raw in _lines_with_offsets(text):
        if _DEACTIVATE_LINE[shell].match(raw.rstrip("\n")) and raw.endswith("\n"):
            after = offset + len(raw)
            if shell == "nu":
                return [(after, _NU_ENV.format(**fields))]
            part, end = (_SH_DEACTIVATE, _SH_END) if shell == "sh" else (_FISH_DEACTIVATE, _FISH_END)
            return [(after, part.format(**fields)), _at_end(text, end.format(**fields))]
    raise GuardEditError("no line %r" % _DEACTIVATE_LINE[shell].pattern)


def uv_config_insertions(text: str, root: str, constraints: Sequence[str]) -> List[Insertion]:
    """Top-level ``constraint-dependencies`` for the venv ``root``, put first in a uv.toml's text (top-level keys
    come before any table). GuardEditError when the file sets the key itself or holds another venv's guard."""
    other = owner_of_uv_block(text)
    if other is not None and other != root:
        raise GuardEditError("it holds the guard of another venv, %s: uv would constrain every venv of this user or "
                             "host the same way" % other)
    if _UV_KEY.search(text):
        raise GuardEditError("it sets constraint-dependencies itself")
    body = "".join("    %s,\n" % json.dumps(c) for c in constraints)
    return [(0, "# %s of %s (guard: false removes it)\nconstraint-dependencies = [\n%s]\n" % (MARK, root, body))]


def owner_of_uv_block(text: str) -> Optional[str]:
    """The venv whose guard a uv.toml holds, if any."""
    match = _UV_BLOCK.search(text)
    return match.group(1) if match else None
