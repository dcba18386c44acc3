# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run commands as argv lists, never through a shell.

Private to the gpuops.cuda_venv collection: not a public API.

Every process the engine starts goes through a ``Runner`` so tests can record
the exact argv and modules can keep one place for timeouts and environments.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from dataclasses import dataclass
from typing import Mapping, Optional, Protocol, Sequence

# Pinned locale so that parsed tool output does not depend on the node's settings.
C_LOCALE = {"LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}


@dataclass(frozen=True)
class CommandResult:
    """What one command did."""

    argv: tuple
    rc: int
    stdout: str
    stderr: str
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.timed_out


class Runner(Protocol):
    """What the engine needs to start a process: the seam tests record argv through."""

    def run(self, argv: Sequence[str], *, cwd: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
            timeout: Optional[float] = None, data: Optional[str] = None, pass_fds: Sequence[int] = ()) -> CommandResult:
        """Run ``argv`` (never through a shell) and say what it did; a command that cannot start is rc 127."""


@dataclass
class SubprocessRunner:
    """Run argv lists with subprocess; kill the whole process group on timeout."""

    default_timeout: Optional[float] = None

    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Optional[str] = None,
        env: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = None,
        data: Optional[str] = None,
        pass_fds: Sequence[int] = (),
    ) -> CommandResult:
        """``pass_fds``: descriptors the child inherits (the venv lock, so an orphaned installer keeps it)."""
        argv = tuple(str(a) for a in argv)
        limit = timeout if timeout is not None else self.default_timeout
        try:
            # Not AnsibleModule.run_command: the engine runs without a module (tests, filters) and needs
            # timeouts that kill the whole process group.
            proc = subprocess.Popen(  # pylint: disable=ansible-bad-function
                argv,
                cwd=cwd,
                env=dict(env) if env is not None else None,
                stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                pass_fds=tuple(pass_fds),
            )
        except OSError as exc:
            return CommandResult(argv, 127, "", "%s: %s" % (argv[0], exc.strerror or exc))
        try:
            out, err = proc.communicate(input=data.encode() if data is not None else None, timeout=limit)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            out, err = proc.communicate()
            return CommandResult(argv, -signal.SIGKILL, _text(out), _text(err), timed_out=True)
        return CommandResult(argv, proc.returncode, _text(out), _text(err))


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _text(raw: Optional[bytes]) -> str:
    return (raw or b"").decode("utf-8", errors="replace")


def clean_env(extra: Optional[Mapping[str, str]] = None) -> dict:
    """A minimal environment: PATH, HOME and a pinned locale, plus ``extra``.

    Nothing from PYTHON*, LD_* or the caller's working state leaks into probes.
    """
    env = {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/")}
    env.update(C_LOCALE)
    if extra:
        env.update(extra)
    return env


# The writing side of marker_report, shared by the scripts run in a venv's interpreter (the import probe, the
# benchmark): the text they start with. ``report_and_exit(marker, report, code)`` prints the report on a private copy
# of stdout (the import may replace or close sys.stdout), flushes, and ends the process without interpreter shutdown:
# a library's exit handlers (CUDA teardown) must not change the answer.
REPORT_PRELUDE = r'''
import json
import os
import sys

REPORT_FD = os.dup(1)


def exception_line(exc):
    # The last line Python prints for an uncaught exception ("Type: message").
    cls = type(exc)
    name = cls.__qualname__
    if cls.__module__ not in ("builtins", "__main__"):
        name = cls.__module__ + "." + name
    if isinstance(exc, SyntaxError) and exc.msg is not None:
        text = str(exc.msg)
    else:
        try:
            text = str(exc)
        except Exception:
            text = "<exception str() failed>"
    return name + ": " + text if text else name


def report_and_exit(marker, report, code):
    data = ("\n" + marker + json.dumps(report) + "\n").encode("utf-8")
    while data:
        data = data[os.write(REPORT_FD, data):]
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    os._exit(code)
'''


def marker_report(stdout: str, marker: str) -> Optional[dict]:
    """The JSON object on the last ``marker`` line a child script printed, or None (it died first)."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(marker):
            try:
                report = json.loads(line[len(marker):])
            except ValueError:
                return None
            return report if isinstance(report, dict) else None
    return None
