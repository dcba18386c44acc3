# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build tiny ELF objects for the ELF reader and loader tests, and ask the real loader about them.

``build_so`` compiles a shared object with gcc whose DT_NEEDED holds exactly the
given names (throw-away stub libraries are linked and deleted), with DT_RPATH
(--disable-new-dtags) or DT_RUNPATH (--enable-new-dtags) or both (a retagged
DT_AUXILIARY entry, since ld never writes both). ``synthetic_elf`` writes a
minimal ELF of any class and byte order by hand. ``real_load`` runs the real
dynamic loader (ctypes.CDLL in a child interpreter) and reports what it mapped.
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from functools import lru_cache

import pytest

GCC = shutil.which("gcc")
READELF = shutil.which("readelf")
requires_gcc = pytest.mark.skipif(GCC is None, reason="gcc is not installed")
DT_RUNPATH = 29
DT_AUXILIARY = 0x7FFFFFFD


def _gcc(args, cwd):
    proc = subprocess.run([GCC] + list(args), cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError("gcc %s failed:\n%s" % (" ".join(args), proc.stderr))


# Compiling is the slow part: each object file, stub and finished library is built once
# per test session in this folder, then copied where a test wants it.
_BUILT = {}
_SESSION = []
_NUMBERS = itertools.count()


def _session_dir():
    if not _SESSION:
        _SESSION.append(tempfile.mkdtemp(prefix="gpuops-elf-"))
        atexit.register(shutil.rmtree, _SESSION[0], True)
    return _SESSION[0]


def _cached(key, make):
    """Build ``key`` once into the session folder with ``make(output_path)``; return the path."""
    if key not in _BUILT:
        out = os.path.join(_session_dir(), "%d.%s" % (next(_NUMBERS), "o" if key[0] == "object" else "so"))
        make(out)
        _BUILT[key] = out
    return _BUILT[key]


def _object(m32, pad_bytes):
    """The one compiled object every library links: a function and an optional padding array."""
    def make(out):
        source = out + ".c"
        with open(source, "w") as handle:
            handle.write("int gpuops_function(void) { return 1; }\n")
            if pad_bytes:
                handle.write("__attribute__((used)) const char gpuops_pad[%d] = {1};\n" % pad_bytes)
        _gcc((["-m32"] if m32 else []) + ["-c", "-fPIC", "-o", out, source], _session_dir())
    return _cached(("object", m32, pad_bytes), make)


def _link(out, m32, pad_bytes, args):
    # -nostdlib: no start files and no libc, so DT_NEEDED holds exactly what the test asked for.
    _gcc((["-m32"] if m32 else []) + ["-shared", "-nostdlib", "-o", out, _object(m32, pad_bytes)] + args,
         _session_dir())


def build_so(path, *, soname=None, needed=(), rpath=None, runpath=None, m32=False, pad_bytes=0):
    """Build a shared object with gcc at ``path``; return ``path`` as a string.

    ``needed`` are the exact DT_NEEDED strings (any text, "$ORIGIN/x.so" too),
    made by linking stub libraries with those sonames; ``pad_bytes`` adds a
    read-only array of that size, placed before the dynamic section in the file.
    """
    needed = tuple(needed)

    def make(out):
        stubs = [_cached(("stub", name, m32), lambda stub, name=name: _link(stub, m32, 0, ["-Wl,-soname," + name]))
                 for name in needed]
        args = ["-Wl,-soname," + soname] if soname else []
        if rpath is not None:
            args += ["-Wl,--disable-new-dtags", "-Wl,-rpath," + rpath]
            if runpath is not None:
                args.append("-Wl,--auxiliary," + runpath)
        elif runpath is not None:
            args += ["-Wl,--enable-new-dtags", "-Wl,-rpath," + runpath]
        _link(out, m32, pad_bytes, args + ["-Wl,--no-as-needed"] + stubs)
        if rpath is not None and runpath is not None:
            retag_dynamic(out, DT_AUXILIARY, DT_RUNPATH)

    built = _cached(("library", soname, needed, rpath, runpath, m32, pad_bytes), make)
    path = os.fspath(path)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    shutil.copyfile(built, path)
    return path


def build_program(path, *, rpath=None):
    """Compile an executable that dlopens each argument in turn, then prints /proc/self/maps.

    Each failed dlopen prints ``ERR <dlerror()>`` and the next one is tried.
    """
    path = os.fspath(path)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gpuops-elf-") as scratch:
        source = os.path.join(scratch, "main.c")
        with open(source, "w") as handle:
            handle.write(
                "#include <dlfcn.h>\n#include <stdio.h>\n"
                "int main(int argc, char **argv) {\n"
                "  for (int i = 1; i < argc; i++)\n"
                "    if (!dlopen(argv[i], RTLD_NOW)) printf(\"ERR %s\\n\", dlerror());\n"
                "  FILE *maps = fopen(\"/proc/self/maps\", \"r\"); char line[4096];\n"
                "  while (fgets(line, sizeof line, maps)) fputs(line, stdout);\n"
                "  return 0;\n}\n")
        args = ["-o", path, source, "-ldl"]
        if rpath is not None:
            args += ["-Wl,--disable-new-dtags", "-Wl,-rpath," + rpath]
        _gcc(args, scratch)
    return path


@lru_cache(maxsize=None)
def m32_unsupported_reason():
    """None when ``gcc -m32`` builds shared objects here, else why not."""
    if GCC is None:
        return "gcc is not installed"
    with tempfile.TemporaryDirectory(prefix="gpuops-elf-") as scratch:
        try:
            build_so(os.path.join(scratch, "libprobe.so"), m32=True)
        except RuntimeError as exc:
            return "gcc -m32 cannot build shared objects here: %s" % str(exc).splitlines()[-1]
    return None


def retag_dynamic(path, old_tag, new_tag):
    """Rewrite the tag of the first ``old_tag`` entry of the dynamic section (located with pyelftools)."""
    from elftools.elf.elffile import ELFFile  # test-only dependency

    with open(path, "rb") as handle:
        elf = ELFFile(handle)
        section = elf.get_section_by_name(".dynamic")
        offset, entsize = section["sh_offset"], section["sh_entsize"]
        order = "<" if elf.little_endian else ">"
        fmt = order + ("qQ" if elf.elfclass == 64 else "iI")
        handle.seek(offset)
        raw = handle.read(section["sh_size"])
    tags = [tag for tag, _value in struct.iter_unpack(fmt, raw)]
    with open(path, "r+b") as handle:
        handle.seek(offset + tags.index(old_tag) * entsize)
        handle.write(struct.pack(fmt[:2], new_tag))


def dynamic_offset(path):
    """File offset of the dynamic section (pyelftools)."""
    from elftools.elf.elffile import ELFFile  # test-only dependency

    with open(path, "rb") as handle:
        return ELFFile(handle).get_section_by_name(".dynamic")["sh_offset"]


def readelf_dynamic(path):
    """SONAME, NEEDED, RPATH, RUNPATH as ``readelf -d`` prints them."""
    out = subprocess.run([READELF, "-d", "-W", path], capture_output=True, text=True, check=True).stdout
    found = {"soname": None, "needed": [], "rpath": None, "runpath": None}
    for line in out.splitlines():
        for tag in ("NEEDED", "SONAME", "RPATH", "RUNPATH"):
            marker = "(%s)" % tag
            if marker in line:
                value = line[line.index("[", line.index(marker)) + 1:line.rindex("]")]
                if tag == "NEEDED":
                    found["needed"].append(value)
                else:
                    found[tag.lower()] = value
    found["needed"] = tuple(found["needed"])
    return found


def pyelftools_dynamic(path):
    """SONAME, NEEDED, RPATH, RUNPATH as pyelftools reads them (through the PT_DYNAMIC segment)."""
    from elftools.elf.elffile import ELFFile  # test-only dependency

    found = {"soname": None, "needed": [], "rpath": None, "runpath": None}
    with open(path, "rb") as handle:
        for segment in ELFFile(handle).iter_segments():
            if segment["p_type"] != "PT_DYNAMIC":
                continue
            for tag in segment.iter_tags():
                kind = tag.entry.d_tag
                if kind == "DT_NEEDED":
                    found["needed"].append(tag.needed)
                elif kind in ("DT_SONAME", "DT_RPATH", "DT_RUNPATH"):
                    found[kind[3:].lower()] = getattr(tag, kind[3:].lower())
    found["needed"] = tuple(found["needed"])
    return found


def synthetic_elf(elf_class=64, little_endian=True, machine=62, elf_type=3, soname=None, needed=(),
                  rpath=None, runpath=None, dynamic=True, osabi=0):
    """A minimal ELF (no sections): one PT_LOAD over the whole file at 0x10000, and PT_DYNAMIC."""
    order = "<" if little_endian else ">"
    ehsize, phsize, dynsize = (64, 56, 16) if elf_class == 64 else (52, 32, 8)
    strtab = b"\0"
    offsets = {}
    for text in (soname,) + tuple(needed) + (rpath, runpath):
        if text is not None and text not in offsets:
            offsets[text] = len(strtab)
            strtab += text.encode() + b"\0"
    entries = [(1, offsets[n]) for n in needed]
    entries += [(tag, offsets[v]) for tag, v in ((14, soname), (15, rpath), (29, runpath)) if v is not None]
    phnum = 2 if dynamic else 1
    dyn_off = ehsize + phnum * phsize
    str_off = dyn_off + (len(entries) + 3) * dynsize
    entries += [(5, 0x10000 + str_off), (10, len(strtab)), (0, 0)]
    total = str_off + len(strtab)
    ident = b"\x7fELF" + bytes([1 if elf_class == 32 else 2, 1 if little_endian else 2, 1, osabi]) + bytes(8)
    word = "Q" if elf_class == 64 else "I"
    header = ident + struct.pack(order + "HHI" + word * 3 + "IHHHHHH", elf_type, machine, 1, 0, ehsize, 0, 0,
                                 ehsize, phsize, phnum, 0, 0, 0)
    segments = [(1, 0, 0x10000, total)] + ([(2, dyn_off, 0x10000 + dyn_off, (len(entries)) * dynsize)] if dynamic else [])
    phdrs = b""
    for p_type, p_offset, p_vaddr, p_filesz in segments:
        if elf_class == 64:
            phdrs += struct.pack(order + "IIQQQQQQ", p_type, 4, p_offset, p_vaddr, p_vaddr, p_filesz, p_filesz, 8)
        else:
            phdrs += struct.pack(order + "IIIIIIII", p_type, p_offset, p_vaddr, p_vaddr, p_filesz, p_filesz, 4, 4)
    body = b"".join(struct.pack(order + ("qQ" if elf_class == 64 else "iI"), tag, value) for tag, value in entries)
    data = header + phdrs + (body if dynamic else b"")
    data += bytes(str_off - len(data)) if dynamic else b""
    return data + (strtab if dynamic else b"")


_CHILD = r"""
import ctypes, json, sys
errors = []
for path in sys.argv[1:]:
    try:
        ctypes.CDLL(path)
    except OSError as exc:
        errors.append(str(exc))
mapped = set()
with open("/proc/self/maps") as maps:
    for line in maps:
        fields = line.split(None, 5)
        if len(fields) == 6 and fields[5].startswith("/"):
            mapped.add(fields[5].rstrip("\n"))
print(json.dumps({"errors": errors, "mapped": sorted(mapped)}))
"""


def _clean_env(extra):
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    env.update(extra or {})
    return env


def real_load(paths, *, env=None, cwd=None):
    """dlopen each of ``paths`` with the real loader (ctypes.CDLL, RTLD_NOW); return (error texts, mapped files).

    A failed dlopen does not stop the next one. LD_LIBRARY_PATH and LD_PRELOAD
    are removed unless ``env`` sets them.
    """
    proc = subprocess.run([sys.executable, "-I", "-c", _CHILD] + [os.fspath(p) for p in paths],
                          capture_output=True, text=True, env=_clean_env(env), cwd=cwd, check=True)
    result = json.loads(proc.stdout)
    return result["errors"], set(result["mapped"])


def run_program(program, paths, *, env=None, cwd=None):
    """Run a ``build_program`` executable; return (error texts, mapped files)."""
    proc = subprocess.run([program] + [os.fspath(p) for p in paths], capture_output=True, text=True,
                          env=_clean_env(env), cwd=cwd, check=True)
    errors, mapped = [], set()
    for line in proc.stdout.splitlines():
        fields = line.split(None, 5)
        if line.startswith("ERR "):
            errors.append(line[4:])
        elif len(fields) == 6 and fields[5].startswith("/"):
            mapped.add(fields[5])
    return errors, mapped


def under(root, paths):
    """The real paths among ``paths`` that lie under ``root``."""
    root = os.path.realpath(os.fspath(root)) + "/"
    return {os.path.realpath(p) for p in paths if os.path.realpath(p).startswith(root)}
