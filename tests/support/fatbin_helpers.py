# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build ``.nv_fatbin`` sections in the real container format (docs/FINDINGS.md, KERNELS_MISSING) and shared objects carrying
them, compiled by gcc: the kernels reader's and the performance rules' test objects.

``fatbin_bytes`` writes containers of entries (kind, arch, flags, payload size); ``build_fatbin_so`` compiles a
C array holding those bytes into the section ``.nv_fatbin`` of a real shared object; ``add_fatbin_section`` adds a
large one with objcopy.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
import tempfile

from ansible_collections.gpuops.cuda_venv.tests.support.elf_helpers import GCC, build_so

OBJCOPY = shutil.which("objcopy")

PTX = 1
SASS = 2
MAGIC = 0xBA55ED50
ENTRY_HEADER = 64


def entry_bytes(kind: int, arch: int, flags: int = 0x11, payload: int = 24) -> bytes:
    """One entry: its 64-byte header (kind, version, header size, payload size; arch at 28, flags at 40), then
    ``payload`` bytes."""
    head = bytearray(ENTRY_HEADER)
    struct.pack_into("<HHIQ", head, 0, kind, 0x0101, ENTRY_HEADER, payload)
    struct.pack_into("<I", head, 28, arch)
    struct.pack_into("<I", head, 40, flags)
    return bytes(head) + bytes((arch + i) % 251 for i in range(payload))


def container_bytes(entries) -> bytes:
    """One container: its 16-byte header and the entries, each (kind, arch[, flags[, payload]])."""
    body = b"".join(entry_bytes(*entry) for entry in entries)
    return struct.pack("<IHHQ", MAGIC, 1, 16, len(body)) + body


def fatbin_bytes(*containers) -> bytes:
    """Containers one after another, each a list of entries."""
    return b"".join(container_bytes(entries) for entries in containers)


def build_fatbin_so(path, fatbin: bytes, soname=None) -> str:
    """Compile a shared object at ``path`` whose ``.nv_fatbin`` section holds exactly ``fatbin``; return the path."""
    path = os.fspath(path)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gpuops-fatbin-") as scratch:
        source = os.path.join(scratch, "kernels.c")
        with open(source, "w") as handle:
            handle.write("__attribute__((section(\".nv_fatbin\"), used, aligned(8)))\n")
            handle.write("const unsigned char gpuops_fatbin_%s[%d] = {%s};\n" % (
                hashlib.sha256(fatbin).hexdigest()[:8], len(fatbin), ",".join(str(b) for b in fatbin)))
            handle.write("int gpuops_kernel_host(void) { return 1; }\n")
        out = os.path.join(scratch, "lib.so")
        args = [GCC, "-shared", "-fPIC", "-nostdlib", "-o", out, source] + (["-Wl,-soname," + soname] if soname else [])
        proc = subprocess.run(args, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError("gcc failed:\n%s" % proc.stderr)
        shutil.copyfile(out, path)
    return path


def add_fatbin_section(path, fatbin: bytes, soname="libbig.so") -> str:
    """A gcc-built shared object at ``path`` given a ``.nv_fatbin`` section of ``fatbin`` by objcopy --add-section (for
    sections too large to compile as a C array); return the path."""
    path = os.fspath(path)
    plain = build_so(path + ".plain", soname=soname)
    with tempfile.TemporaryDirectory(prefix="gpuops-fatbin-") as scratch:
        data = os.path.join(scratch, "fatbin.bin")
        with open(data, "wb") as handle:
            handle.write(fatbin)
        subprocess.run([OBJCOPY, "--add-section", ".nv_fatbin=" + data, "--set-section-flags", ".nv_fatbin=alloc,readonly",
                        plain, path], check=True, capture_output=True)
    os.unlink(plain)
    return path
