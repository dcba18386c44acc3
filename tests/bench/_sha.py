# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The machine's SHA-256 limit: hashlib throughput on one core and on every core, measured now.

Benchmark support for gpuops.cuda_venv: not part of the collection's API.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from dataclasses import dataclass

BUFFER = 16 * 1024 * 1024


@dataclass(frozen=True)
class Throughput:
    """Bytes per second of hashlib.sha256 on an in-memory buffer (no I/O): one thread, and ``threads`` at once."""

    one_core: float
    all_cores: float
    threads: int

    def limit_seconds(self, total_bytes: int) -> float:
        """The least time ``total_bytes`` can be hashed in with every core busy: the SHA-256 limit."""
        return total_bytes / self.all_cores

    def describe(self) -> str:
        return "hashlib sha256: %.0f MB/s on one core, %.0f MB/s with %d threads (%.2fx)" % (
            self.one_core / 1e6, self.all_cores / 1e6, self.threads, self.all_cores / self.one_core)


def cores() -> int:
    """CPUs this process may run on."""
    return len(os.sched_getaffinity(0))


def _spin(data: memoryview, seconds: float, out: list) -> None:
    digest = hashlib.sha256()
    done = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        digest.update(data)  # releases the GIL: threads hash in parallel
        done += len(data)
    out.append(done / (time.perf_counter() - started))


def measure_throughput(seconds: float = 1.0) -> Throughput:
    """hashlib.sha256 on one thread, then on one thread per core; the best of three tries each."""
    data = memoryview(os.urandom(BUFFER))
    count = cores()
    best_one = best_all = 0.0
    for _try in range(3):
        out: list = []
        _spin(data, seconds / 3, out)
        best_one = max(best_one, out[0])
        out = []
        threads = [threading.Thread(target=_spin, args=(data, seconds / 3, out)) for _n in range(count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        best_all = max(best_all, sum(out))
    return Throughput(best_one, best_all, count)
