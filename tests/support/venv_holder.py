# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A long-running process on a venv, as a job or a service is: the venv's python holding a shared object (ctypes).

``start_holder`` starts it as a daemon (its parent shell exits, so it is no child of the test: the facts leave their
own children out) with the environment given, waits until the library is mapped, and returns (pid, command line).
``stop_holders`` kills the ones started, by pid.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time

HOLD = "import ctypes, sys, time; ctypes.CDLL(sys.argv[1]); open(sys.argv[2], 'w').close(); time.sleep(300)"


def start_holder(python: str, library: str, env: dict, started: list):
    """Start ``python`` holding ``library``; append its pid to ``started``; return (pid, its command line)."""
    folder = tempfile.mkdtemp(prefix="gpuops-holder-")  # its working folder: "ready" keeps its command line short
    argv = [python, "-c", HOLD, library, "ready"]
    out = subprocess.run(["sh", "-c", '"$@" </dev/null >/dev/null 2>&1 & echo $!', "sh"] + argv,
                         capture_output=True, text=True, env=env, cwd=folder, check=True)
    pid = int(out.stdout.split()[-1])
    started.append(pid)
    ready = os.path.join(folder, "ready")
    for _wait in range(400):
        if os.path.exists(ready):
            os.unlink(ready)
            return pid, " ".join(argv)
        time.sleep(0.025)
    raise AssertionError("the holder %d did not start" % pid)


def stop_holders(started: list) -> None:
    for pid in started:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
