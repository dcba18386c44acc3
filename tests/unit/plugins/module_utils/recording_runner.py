# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Runner test double that records every call and answers with canned results.

With ``passthrough=True`` it records each call, then really runs it through
``SubprocessRunner``, so a test can pin the exact argv of a real install.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import CommandResult, SubprocessRunner


@dataclass(frozen=True)
class RecordedCall:
    """One call to ``run``, as the code under test made it."""

    argv: tuple
    cwd: Optional[str]
    env: Optional[dict]
    timeout: Optional[float]
    data: Optional[str]
    pass_fds: Tuple[int, ...] = ()


class RecordingRunner:
    """Record calls; answer from ``replies`` in order (default: rc 0, no output), or run them for real."""

    def __init__(self, replies: Sequence[CommandResult] = (), passthrough: bool = False, inner=None):
        self.calls = []
        self.replies = list(replies)
        self.passthrough = passthrough
        self.inner = inner or SubprocessRunner()

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
        argv = tuple(str(a) for a in argv)
        self.calls.append(RecordedCall(argv, cwd, dict(env) if env is not None else None, timeout, data, tuple(pass_fds)))
        if self.passthrough:
            return self.inner.run(argv, cwd=cwd, env=env, timeout=timeout, data=data, pass_fds=pass_fds)
        if self.replies:
            reply = self.replies.pop(0)
            return CommandResult(argv, reply.rc, reply.stdout, reply.stderr, reply.timed_out)
        return CommandResult(argv, 0, "", "")

    @property
    def argvs(self) -> list:
        """The argv of every call, in order."""
        return [call.argv for call in self.calls]


def reply(rc: int = 0, stdout: str = "", stderr: str = "", timed_out: bool = False) -> CommandResult:
    """A canned result; its argv is replaced by the argv of the call it answers."""
    return CommandResult((), rc, stdout, stderr, timed_out)
