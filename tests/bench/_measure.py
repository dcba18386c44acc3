# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Time child processes (wall clock) and read their peak memory (ru_maxrss from wait4), as medians of runs.

Each command runs under _launch.py, which times and reaps it: see there why.

Benchmark support for gpuops.cuda_venv: not part of the collection's API.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Callable, Iterable, List, Mapping, Optional, Sequence, Tuple


class BenchError(Exception):
    """A measured command failed: the figure would be meaningless."""


@dataclass(frozen=True)
class Step:
    """One command of a measured sequence; ``ok_rcs`` are the exit codes that count as success."""

    argv: Tuple[str, ...]
    env: Optional[Mapping[str, str]] = None
    cwd: Optional[str] = None
    ok_rcs: Tuple[int, ...] = (0,)
    stdin: Optional[str] = None  # a file fed to the command's standard input


@dataclass(frozen=True)
class Sample:
    """One run of a sequence: its wall time, the largest ru_maxrss among its commands (KiB), its CPU time."""

    seconds: float
    peak_kib: int
    cpu_seconds: float = 0.0  # user + system of the commands and their reaped descendants


@dataclass(frozen=True)
class Measurement:
    """Several runs of one sequence."""

    samples: Tuple[Sample, ...]

    @property
    def median(self) -> float:
        return statistics.median(s.seconds for s in self.samples)

    @property
    def median_cpu(self) -> float:
        return statistics.median(s.cpu_seconds for s in self.samples)

    @property
    def runs(self) -> int:
        return len(self.samples)

    @property
    def peak_mib(self) -> float:
        return max(s.peak_kib for s in self.samples) / 1024.0


_LAUNCHER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_launch.py")


@dataclass(frozen=True)
class Usage:
    """What the launcher reports for one command: wall seconds, peak RSS (KiB), user + system CPU seconds."""

    seconds: float
    maxrss_kib: int
    cpu_seconds: float


def run_step(step: Step) -> Tuple[Usage, str]:
    """Run one command through the launcher (see _launch.py); its Usage and the tail of its output."""
    stdin = open(step.stdin, "rb") if step.stdin else subprocess.DEVNULL  # pylint: disable=consider-using-with
    handle, report = tempfile.mkstemp(prefix="bench-usage-")
    os.close(handle)
    try:
        argv = [sys.executable, "-I", "-S", _LAUNCHER, report] + list(step.argv)
        proc = subprocess.run(argv, env=dict(step.env) if step.env is not None else None, cwd=step.cwd, stdin=stdin,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
        with open(report, encoding="ascii") as text:
            fields = text.read().split()
    finally:
        os.unlink(report)
        if step.stdin:
            stdin.close()
    tail = proc.stdout.decode("utf-8", "replace")[-3000:]
    if proc.returncode not in step.ok_rcs or len(fields) != 3:
        raise BenchError("rc %d from %s\n%s" % (proc.returncode, " ".join(step.argv), tail))
    return Usage(float(fields[0]), int(fields[1]), float(fields[2])), tail


def run_sequence(steps: Sequence[Step]) -> Sample:
    """Run ``steps`` one after the other; the sample is their summed times and their largest peak."""
    total, peak, cpu = 0.0, 0, 0.0
    for step in steps:
        usage, _tail = run_step(step)
        total += usage.seconds
        peak = max(peak, usage.maxrss_kib)
        cpu += usage.cpu_seconds
    return Sample(total, peak, cpu)


def measure(steps: Callable[[], Iterable[Step]], runs: int, prepare: Optional[Callable[[], None]] = None,
            warmup: bool = False) -> Measurement:
    """``runs`` samples of the sequence ``steps()``; ``prepare()`` runs untimed before each (a fresh copy)."""
    if warmup:
        if prepare:
            prepare()
        run_sequence(list(steps()))
    samples: List[Sample] = []
    for _run in range(runs):
        if prepare:
            prepare()
        samples.append(run_sequence(list(steps())))
    return Measurement(tuple(samples))


def measure_in_turn(sequences: Sequence[Callable[[], Iterable[Step]]], runs: int, warmup: bool = False) -> List[Measurement]:
    """``runs`` samples of each of ``sequences``, one of each in turn per round: figures that are subtracted from
    each other share the machine's drift, which series taken minutes apart do not."""
    if warmup:
        for steps in sequences:
            run_sequence(list(steps()))
    samples: List[List[Sample]] = [[] for _steps in sequences]
    for _run in range(runs):
        for found, steps in zip(samples, sequences):
            found.append(run_sequence(list(steps())))
    return [Measurement(tuple(found)) for found in samples]


def fixed(seconds: float, runs: int) -> Measurement:
    """A figure computed rather than run (the SHA-256 limit): no process, no memory."""
    return Measurement(tuple(Sample(seconds, 0) for _run in range(runs)))
