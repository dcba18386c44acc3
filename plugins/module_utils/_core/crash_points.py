# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Named fault-injection points: SIGKILL this process where a test asks for it.

Private to the gpuops.cuda_venv collection: not a public API.

Code that must survive a crash calls ``crash_point("restore.replace")`` at the
places worth testing. Normally that does nothing. When the environment variable
``CUDA_VENV_CRASH_AT`` names the point, the process kills itself with SIGKILL,
exactly as the OOM killer or a lost connection would: no cleanup, no finally.

Syntax: a comma-separated list of ``NAME`` or ``NAME@N``; ``NAME@N`` fires on
the N-th time the point is reached in this process (default: the first).
"""

from __future__ import annotations

import os
import signal

ENV_VAR = "CUDA_VENV_CRASH_AT"

_hits: dict[str, int] = {}


def crash_point(name: str) -> None:
    """SIGKILL this process if ``CUDA_VENV_CRASH_AT`` names ``name`` (for its current hit)."""
    spec = os.environ.get(ENV_VAR)
    if not spec:
        return
    count = _hits.get(name, 0) + 1
    _hits[name] = count
    for item in spec.split(","):
        wanted, _sep, nth = item.strip().partition("@")
        if wanted == name and count == (int(nth) if nth else 1):
            os.kill(os.getpid(), signal.SIGKILL)
