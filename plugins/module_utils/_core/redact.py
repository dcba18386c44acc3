# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Remove credentials from command lines and installer output.

Private to the gpuops.cuda_venv collection: not a public API.

Index URLs often carry a token (``https://user:TOKEN@host/simple``). Every
string the engine reports (argv, stdout, stderr, error messages) goes through
``redact`` so that such a token never reaches a result, a log or a diff.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Iterable, Sequence

MASK = "***"

# scheme://userinfo@ : the userinfo runs up to the last "@" before the first
# "/", "?", "#" or whitespace of the authority (RFC 3986, section 3.2.1).
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/?#\s]+@")


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with URL userinfo masked and every exact secret string replaced.

    ``https://user:token@host/`` becomes ``https://***@host/``; longer secrets
    are replaced first so that a secret containing another is masked whole.
    """
    if not text:
        return text
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return _USERINFO.sub(lambda m: m.group(1) + MASK + "@", text)


def redact_argv(argv: Sequence[str], secrets: Iterable[str] = ()) -> tuple:
    """Each argument of ``argv`` redacted, as a tuple."""
    secrets = tuple(secrets)
    return tuple(redact(str(arg), secrets) for arg in argv)


def redact_result(result, secrets: Iterable[str] = ()):
    """A copy of a ``CommandResult`` with argv, stdout and stderr redacted."""
    secrets = tuple(secrets)
    return dataclasses.replace(
        result,
        argv=redact_argv(result.argv, secrets),
        stdout=redact(result.stdout, secrets),
        stderr=redact(result.stderr, secrets),
    )
