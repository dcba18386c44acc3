# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A small launcher that runs one command and reports its wall time and rusage: peak memory not inflated by ours.

Benchmark support for gpuops.cuda_venv: not part of the collection's API.
``python -I -S _launch.py REPORT ARGV...``: forks, execs ARGV (inheriting cwd, environment and standard streams),
reaps it with wait4 and writes "seconds maxrss_kib cpu_seconds" to REPORT; exits with its exit code.

Why: Linux carries a process's peak RSS across exec, and a child forked (or vforked) from the bench process
starts with the bench's own peak. A child of this small interpreter starts with this interpreter's few MiB.
"""

import os
import sys
import time


def main(argv):
    report, command = argv[1], argv[2:]
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(command[0], command)
        finally:
            os._exit(127)
    _pid, status, usage = os.wait4(pid, 0)
    seconds = time.perf_counter() - started
    with open(report, "w", encoding="ascii") as handle:
        handle.write("%.6f %d %.6f\n" % (seconds, usage.ru_maxrss, usage.ru_utime + usage.ru_stime))
    return os.waitstatus_to_exitcode(status) % 256


if __name__ == "__main__":
    sys.exit(main(sys.argv))
