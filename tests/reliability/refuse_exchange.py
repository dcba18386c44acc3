# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``python refuse_exchange.py COMMAND...``: run COMMAND where the kernel refuses renameat2(RENAME_EXCHANGE).

Test support for gpuops.cuda_venv: not part of the collection's API.

A seccomp filter (inherited by every process COMMAND starts) answers EINVAL to renameat2 with RENAME_EXCHANGE in its
flags, as a filesystem without exchange support does; every other call, plain renames included, goes through. So
the swap's fallback, two renames under the journal, runs on the real kernel. x86_64 only (syscall numbers differ).
"""

import ctypes
import errno
import os
import platform
import struct
import sys

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
AUDIT_ARCH_X86_64 = 0xC000003E
NR_RENAMEAT2 = 316
RENAME_EXCHANGE = 2
ARG4_LOW = 16 + 8 * 4  # offsetof(struct seccomp_data, args[4]), its low 32 bits (little endian)
LD_ABS, JEQ, JSET, RET = 0x20, 0x15, 0x45, 0x06
RET_ERRNO, RET_ALLOW = 0x00050000, 0x7FFF0000

PROGRAM = [
    (LD_ABS, 0, 0, 4),  # the architecture
    (JEQ, 0, 5, AUDIT_ARCH_X86_64),
    (LD_ABS, 0, 0, 0),  # the system call number
    (JEQ, 0, 3, NR_RENAMEAT2),
    (LD_ABS, 0, 0, ARG4_LOW),  # renameat2's flags
    (JSET, 0, 1, RENAME_EXCHANGE),
    (RET, 0, 0, RET_ERRNO | errno.EINVAL),
    (RET, 0, 0, RET_ALLOW),
]


def refuse_exchange():
    if platform.machine() != "x86_64":
        raise SystemExit("refuse_exchange.py: x86_64 only, this is %s" % platform.machine())
    code = b"".join(struct.pack("HBBI", *op) for op in PROGRAM)
    filters = ctypes.create_string_buffer(code)

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
    program = Program(len(PROGRAM), ctypes.addressof(filters))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or \
            libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(program), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "seccomp filter not installed: %s" % os.strerror(ctypes.get_errno()))


if __name__ == "__main__":
    refuse_exchange()
    os.execvp(sys.argv[1], sys.argv[1:])
