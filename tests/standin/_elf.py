# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build the stand-in ELF files of a set of distributions: gcc compiles, ld links in dependency order.

Test support for gpuops.cuda_venv: not part of the collection's API.

Each file gets its layout's SONAME, DT_NEEDED (same order), and DT_RPATH or DT_RUNPATH verbatim.
A needed soname the set provides is linked against that stand-in (built in an earlier wave); a
system soname against the machine's copy, dropped if the linker has none; any other one
(libcuda.so.1, libmpi.so.40 ...) against a throwaway stub that is never shipped, so the real
loader cannot find it. payload/standin.c is compiled once per option set; each file costs one
``ld`` run, which adds the file's identity blob and its exported identity alias.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import subprocess
import sysconfig
import tempfile
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from ._layout import SYSTEM_SONAMES, DistSpec, ElfSpec, StandinError

PAYLOAD = Path(__file__).resolve().parent / "payload"
TEMPLATE = PAYLOAD / "standin.c"
EXPORTS_MAP = PAYLOAD / "exports.map"
LIMITED_API = "0x03090000"
DYNAMIC_LINKER = "/lib64/ld-linux-x86-64.so.2"
_EXPORT_MACROS = {
    "cudnnGetVersion": "STANDIN_CUDNN_VERSION",
    "ncclGetVersion": "STANDIN_NCCL_VERSION",
    "cudaRuntimeGetVersion": "STANDIN_CUDART_VERSION",
}
_CFLAGS = ("-c", "-O0", "-fPIC", "-fno-stack-protector")
_LDFLAGS = ("-m", "elf_x86_64", "--hash-style=gnu", "--build-id", "--eh-frame-hdr", "-z", "noexecstack", "-s")

Unit = Tuple[DistSpec, ElfSpec]
Job = Tuple[List[str], Optional[Path]]  # argv, cwd


def identity(dist: DistSpec, spec: ElfSpec) -> str:
    """What ``cuda_venv_standin_identity_<path>()`` of the stand-in returns."""
    return "%s %s %s" % (dist.name, dist.version, spec.path)


def identity_symbol(path: str) -> str:
    """Per-file symbol name: one shared name would resolve to the first library loaded."""
    return "cuda_venv_standin_identity_" + re.sub(r"\W", "_", path)


def jobs() -> int:
    """Processes at once: twice the cores, since each run spends much of its time starting up."""
    return 2 * (os.cpu_count() or 1)


def build_elf_files(dists: Sequence[DistSpec], workdir: Path) -> Dict[Tuple[str, str], Path]:
    """Build every ELF file of ``dists`` under ``workdir``; return {(dist key, path): built file}."""
    if platform.machine() != "x86_64":
        raise StandinError("the stand-in stacks are x86_64 builds (like the layouts); this machine is %s" % platform.machine())
    units = [(d, e) for d in dists for e in d.elf_files]
    providers = _providers(units)
    available = system_sonames_available()
    stubs = sorted({n for unit in units for n in unit[1].needed if n not in providers and n not in SYSTEM_SONAMES})
    for sub in ("obj", "stubs", "units"):
        (workdir / sub).mkdir(parents=True, exist_ok=True)
    objects = {key: workdir / "obj" / ("k%d.o" % i) for i, key in enumerate(sorted({_macros(d, e) for d, e in units}))}
    empty = workdir / "obj" / "empty.o"
    built: Dict[Tuple[str, str], Path] = {}
    with ThreadPoolExecutor(max_workers=jobs()) as pool:
        _run_all(pool, [(["gcc", *_CFLAGS, "-o", str(out), str(TEMPLATE), *key], None) for key, out in objects.items()]
                 + [(["gcc", *_CFLAGS, "-o", str(empty), "-x", "c", os.devnull], None)])
        _run_all(pool, [([_ld(), *_LDFLAGS, "-shared", "-o", str(workdir / "stubs" / n), "-soname", n, str(empty)], None)
                        for n in stubs])
        for wave in _waves(units, providers):
            batch = []
            for dist, spec in wave:
                out = built[(dist.key, spec.path)] = workdir / "tree" / dist.key / spec.path
                argv = _link_argv(dist, spec, out, objects[_macros(dist, spec)], providers, available, workdir)
                batch.append((argv, _unit_dir(dist, spec, out, workdir / "units" / str(len(built)))))
            _run_all(pool, batch)
            for dist, spec in wave:
                _expose_for_linking(dist, spec, built[(dist.key, spec.path)], workdir)
    return built


def _unit_dir(dist: DistSpec, spec: ElfSpec, out: Path, unit_dir: Path) -> Path:
    """The directory ld runs in for one file: it holds the file's identity blob, named "identity"."""
    out.parent.mkdir(parents=True, exist_ok=True)
    unit_dir.mkdir()
    (unit_dir / "identity").write_bytes(_identity_blob(dist, spec))
    return unit_dir


def _identity_blob(dist: DistSpec, spec: ElfSpec) -> bytes:
    """NUL-terminated identity, padded by a per-file amount so sizes differ between builds."""
    ident = identity(dist, spec).encode()
    pad = 1 + int(hashlib.sha256(ident).hexdigest()[:8], 16) % 4093
    return ident + b"\0" * pad


def _macros(dist: DistSpec, spec: ElfSpec) -> Tuple[str, ...]:
    """The -D options this file's object needs (files sharing them share one compiled object)."""
    flags = []
    for symbol, value in spec.exports:
        if symbol not in _EXPORT_MACROS:
            raise StandinError("%s of %s: cannot export %r; known: %s"
                               % (spec.path, dist.name, symbol, ", ".join(sorted(_EXPORT_MACROS))))
        flags.append("-D%s=%d" % (_EXPORT_MACROS[symbol], value))
    if spec.python_module:
        module = spec.path.split(".", 1)[0].replace("/", ".")
        flags += ["-DSTANDIN_PYMODULE=" + spec.python_module, '-DSTANDIN_PYMODULE_NAME="%s"' % module,
                  "-DPy_LIMITED_API=" + LIMITED_API, "-I" + python_include()]
    if spec.is_executable:
        flags.append("-DSTANDIN_EXECUTABLE")
    return tuple(flags)


def _link_argv(dist: DistSpec, spec: ElfSpec, out: Path, obj: Path, providers: Dict[str, List[Unit]],
               available: frozenset, workdir: Path) -> List[str]:
    argv = [_ld(), *_LDFLAGS, "-o", str(out)]
    if spec.is_executable:
        argv += ["-pie", "-dynamic-linker", DYNAMIC_LINKER]
    else:
        argv += ["-shared", "--version-script=" + str(EXPORTS_MAP),
                 "--defsym=%s=standin_identity" % identity_symbol(spec.path)]
    if spec.soname:
        argv += ["-soname", spec.soname]
    if spec.rpath is not None:
        argv += ["--disable-new-dtags", "-rpath", spec.rpath]
    elif spec.runpath is not None:
        argv += ["--enable-new-dtags", "-rpath", spec.runpath]
    stub_dir = str(workdir / "stubs")
    argv += [str(obj), "--format=binary", "identity", "--format=default", "--no-as-needed",
             "-L" + stub_dir, "-rpath-link=" + stub_dir]
    for name in spec.needed:
        if name in providers:
            link_dir = str(_link_dir(workdir, *_provider(dist, name, providers)))
            argv += ["-L" + link_dir, "-rpath-link=" + link_dir, "-l:" + name]
        elif name not in SYSTEM_SONAMES or name in available:
            argv.append("-l:" + name)
    return argv


def _providers(units: List[Unit]) -> Dict[str, List[Unit]]:
    """soname -> the files providing it, one named like the soname first."""
    by_soname: Dict[str, List[Unit]] = {}
    for dist, spec in units:
        if spec.soname:
            by_soname.setdefault(spec.soname, []).append((dist, spec))
    for soname, candidates in by_soname.items():
        candidates.sort(key=lambda u, s=soname: u[1].path.rsplit("/", 1)[-1] != s)
    return by_soname


def _provider(dist: DistSpec, soname: str, providers: Dict[str, List[Unit]]) -> Unit:
    """The stand-in to link against: preferably one from the same distribution."""
    candidates = providers[soname]
    for unit in candidates:
        if unit[0].key == dist.key:
            return unit
    return candidates[0]


def _link_dir(workdir: Path, dist: DistSpec, spec: ElfSpec) -> Path:
    return workdir / "link" / dist.key / spec.path.replace("/", "__")


def _expose_for_linking(dist: DistSpec, spec: ElfSpec, built: Path, workdir: Path) -> None:
    """ld finds -l:<soname> by file name, and real files may be named otherwise (libcupti.so)."""
    if spec.soname:
        link_dir = _link_dir(workdir, dist, spec)
        link_dir.mkdir(parents=True, exist_ok=True)
        (link_dir / spec.soname).symlink_to(built)


def _waves(units: List[Unit], providers: Dict[str, List[Unit]]) -> List[List[Unit]]:
    """Group units so that each one's stack-provided dependencies are built in an earlier group."""
    level: Dict[Tuple[str, str], int] = {}

    def visit(unit: Unit, path: Tuple[Tuple[str, str], ...]) -> int:
        key = (unit[0].key, unit[1].path)
        if key in level:
            return level[key]
        if key in path:
            raise StandinError("dependency cycle among stand-in libraries: " + " -> ".join(k[1] for k in path + (key,)))
        deps = [_provider(unit[0], n, providers) for n in unit[1].needed if n in providers]
        level[key] = 1 + max([visit(d, path + (key,)) for d in deps if (d[0].key, d[1].path) != key], default=-1)
        return level[key]

    for unit in units:
        visit(unit, ())
    waves: List[List[Unit]] = [[] for dummy in range(1 + max(level.values(), default=-1))]
    for unit in units:
        waves[level[(unit[0].key, unit[1].path)]].append(unit)
    return waves


def _run_all(pool: ThreadPoolExecutor, batch: List[Job]) -> None:
    for (argv, dummy), proc in zip(batch, pool.map(_run, batch)):
        if proc.returncode != 0:
            raise StandinError("%s failed (rc %d) building %s:\n%s\n%s"
                               % (argv[0], proc.returncode, argv[argv.index("-o") + 1], " ".join(argv), proc.stderr))


def _run(job: Job) -> subprocess.CompletedProcess:
    argv, cwd = job
    try:
        return subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ, LC_ALL="C"), check=False)
    except FileNotFoundError as exc:
        raise StandinError("cannot run %s: %s; building stand-ins needs gcc and binutils" % (argv[0], exc)) from exc


@lru_cache(maxsize=None)
def _ld() -> str:
    """The linker gcc itself uses."""
    return _run((["gcc", "-print-prog-name=ld"], None)).stdout.strip() or "ld"


@lru_cache(maxsize=None)
def python_include() -> str:
    """Python.h of the building interpreter; one stable-ABI build serves every CPython >= 3.9."""
    include = sysconfig.get_paths()["include"]
    if not os.path.exists(os.path.join(include, "Python.h")):
        raise StandinError("no Python.h in %s: install this Python's development headers to build torch/_C" % include)
    return include


@lru_cache(maxsize=None)
def system_sonames_available() -> frozenset:
    """The SYSTEM_SONAMES the linker finds on this machine (one probe link each)."""
    with tempfile.TemporaryDirectory(prefix="standin-probe-") as tmp:
        empty = os.path.join(tmp, "empty.o")
        compiled = _run((["gcc", *_CFLAGS, "-o", empty, "-x", "c", os.devnull], None))
        if compiled.returncode != 0:
            raise StandinError("gcc cannot compile an empty file: %s" % compiled.stderr)
        jobs_ = [([_ld(), *_LDFLAGS, "-shared", "-o", os.path.join(tmp, "p%d.so" % i), empty, "--no-as-needed", "-l:" + n], None)
                 for i, n in enumerate(SYSTEM_SONAMES)]
        with ThreadPoolExecutor(max_workers=jobs()) as pool:
            results = list(pool.map(_run, jobs_))
    return frozenset(name for name, proc in zip(SYSTEM_SONAMES, results) if proc.returncode == 0)
