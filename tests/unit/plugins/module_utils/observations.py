# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build ``Observations`` records from small literal data, so diagnose() and make_plan() run as pure functions.

Everything is made of the engine's own records (Distribution/RecordEntry, FileState/Conflict,
RequirementEdge, LoadResult/Resolution/LoadedObject, ProbeResult, ElfInfo), shaped the way
``observe.observe`` shapes them from a real venv:

- distributions are sorted by (key, version, dist-info) like ``read_distributions``; each gets a
  METADATA entry (hashed) and a RECORD entry (no hash) beside the files given;
- ``missing``/``modified`` name distributions (key or label) and their files (``ALL``: every
  file outside the dist-info); a missing file is not on disk, so it is no shared object either;
- conflicts are the paths listed by two or more distributions, owners in distribution order,
  ``on_disk`` "none" when the path is missing, else what ``on_disk`` says (default None: unknown);
- CUDA majors (``CudaMajor``) come from ``observe._major_of``, requirements from ``requirements.closure`` with
  a Linux x86_64 CPython 3.12 marker environment, unless given.

Paths given as relative are relative to site-packages (``SITE``); the venv root ``ROOT`` does
not exist on disk, so ``os.path.realpath`` leaves every path as written.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read import observe
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import canonical_name
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.distributions import Distribution, RecordEntry
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.elf import EM_X86_64, ET_DYN, ElfInfo
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.loader import (
    VIA_MISSING, VIA_RPATH, LoadedObject, LoaderConfig, LoadResult, Resolution)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.host.gpu import GpuDevice, GpuFacts
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import FactsOptions, Observations, SharedObject, UnsafeEntry
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.probe import InterpreterInfo, ProbeResult
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.record_check import Conflict, FileState
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.requirements import closure
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import VenvLayout

ROOT = "/venvs/train"
SITE = ROOT + "/lib/python3.12/site-packages"
PYTHON = ROOT + "/bin/python"
ALL = "all"
NOT_FOUND = "cannot open shared object file: No such file or directory"
LINUX = '; platform_system == "Linux" and platform_machine == "x86_64"'
MARKER_ENV = {
    "implementation_name": "cpython", "implementation_version": "3.12.3", "os_name": "posix",
    "platform_machine": "x86_64", "platform_release": "6.8.0", "platform_system": "Linux",
    "platform_version": "#1 SMP", "python_full_version": "3.12.3", "platform_python_implementation": "CPython",
    "python_version": "3.12", "sys_platform": "linux",
}


def sp(path: str) -> str:
    """``path`` made absolute under site-packages (absolute paths are kept)."""
    return path if path.startswith("/") else SITE + "/" + path


def digest_of(data: bytes) -> str:
    """sha256 as RECORD writes it: urlsafe base64 without padding."""
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode("ascii").rstrip("=")


def same(path: str, data: bytes = b"") -> RecordEntry:
    """An entry with these exact bytes: two distributions listing it list the same hash."""
    return RecordEntry(path, "sha256", digest_of(data), len(data))


def pyc(path: str) -> RecordEntry:
    """A bytecode cache as pip records it: no hash, no size."""
    return RecordEntry(path, None, None, None)


def dist(name: str, version: str, files=(), requires=(), problems=(), installer="pip") -> Distribution:
    """A distribution in site-packages; ``files`` are paths (distinct bytes per distribution) or RecordEntry."""
    folder = "%s-%s.dist-info" % (re.sub(r"[-_.]+", "_", name), version)
    entries = []
    for item in files:
        if isinstance(item, RecordEntry):
            entries.append(item)
        else:
            data = ("%s %s: %s" % (name, version, item)).encode()
            entries.append(RecordEntry(item, "sha256", digest_of(data), len(data)))
    entries.append(same(folder + "/METADATA", ("Name: %s\nVersion: %s\n" % (name, version)).encode()))
    entries.append(RecordEntry(folder + "/RECORD", None, None, None))
    return Distribution(name=name, key=canonical_name(name), version=version, dist_info=SITE + "/" + folder,
                        site_packages=SITE, installer=installer, requested=False, direct_url=False,
                        requires_dist=tuple(requires), entries=tuple(entries), problems=tuple(problems))


def elf(soname=None, needed=(), rpath=None, runpath=None) -> ElfInfo:
    """An x86_64 shared object's loader facts."""
    return ElfInfo(elf_class=64, little_endian=True, machine=EM_X86_64, osabi=0, elf_type=ET_DYN, soname=soname,
                   needed=tuple(needed), rpath=rpath, runpath=runpath)


def found(soname: str, path: str, via: str = VIA_RPATH) -> Resolution:
    """``soname`` resolved to ``path`` (relative: in site-packages) by step ``via``."""
    return Resolution(soname, sp(path), via, None, ())


def unresolved(soname: str) -> Resolution:
    """``soname`` found nowhere."""
    return Resolution(soname, None, VIA_MISSING, None, ())


def bad(soname: str, path: str, error: str) -> Resolution:
    """``soname`` found at ``path``, which the loader refuses with ``error``."""
    return Resolution(soname, sp(path), VIA_RPATH, error, ())


def probe_ok(versions=None, loaded=()) -> ProbeResult:
    """The anchor imported; ``loaded`` paths (relative: in site-packages) were mapped."""
    return ProbeResult(ran=True, ok=True, error=None, traceback=None, returncode=0, timed_out=False, signal=None,
                       loaded=tuple(sp(p) for p in loaded), versions=dict(versions or {}), duration=1.25)


def probe_failed(error: str, traceback=None, returncode=1, timed_out=False, signal=None) -> ProbeResult:
    """The anchor did not import; ``error`` is the exception line Python printed."""
    return ProbeResult(ran=True, ok=False, error=error, traceback=traceback, returncode=returncode,
                       timed_out=timed_out, signal=signal, loaded=(), versions={}, duration=0.5)


def device(name: str = "NVIDIA H100 80GB HBM3", compute_capability: str = "9.0", index: int = 0,
           memory_total_mib: int = 81559) -> GpuDevice:
    """One GPU as NVML reports it."""
    return GpuDevice(index=index, name=name, uuid="GPU-%08d-0000-0000-0000-000000000000" % index,
                     memory_total_mib=memory_total_mib, compute_capability=compute_capability)


def gpu(max_cuda: str, driver: str = "550.54.15", devices=None) -> GpuFacts:
    """NVML facts of a host whose driver supports CUDA up to ``max_cuda``; ``devices``: its GPUs (one H100 unless given)."""
    major, minor = max_cuda.split(".")
    return GpuFacts(available=True, reason=None, driver_version=driver,
                    cuda_driver_version=int(major) * 1000 + int(minor) * 10, max_cuda=max_cuda,
                    devices=tuple(devices) if devices is not None else (device(),))


NO_GPU = GpuFacts(available=False, reason="NVML not found")


def interpreter(ok: bool = True, error=None) -> InterpreterInfo:
    if not ok:
        return InterpreterInfo(False, PYTHON, None, None, None, None, (), {}, error or "exec failed")
    return InterpreterInfo(True, PYTHON, "3.12.3", "cpython", SITE, SITE,
                           ("/usr/lib/python312.zip", "/usr/lib/python3.12", SITE), dict(MARKER_ENV), None)


def build(dists, *, anchor="torch", roots=(), missing=None, modified=None, on_disk=None, elves=None,
          import_graph=None, other=None, requirements=None, probe=None, gpu=None, verify="size",
          interp=None, unsafe=(), entry_points=None, preloaded=None, probe_timeout=120.0) -> Observations:
    """The Observations of a venv holding ``dists``.

    ``missing``/``modified``: {key or label: ALL or [paths]}; ``on_disk``: {path: label};
    ``elves``: {relpath: ElfInfo or an error text}; ``import_graph``/``other``: {object relpath: [Resolution]},
    the import graph in load order; ``unsafe``: [(key, entry path, problem)].
    """
    dists = sorted(dists, key=lambda d: (d.key, d.version, d.dist_info))
    file_states = _file_states(dists, missing or {}, modified or {})
    gone = {e for d in dists for e in file_states[d.dist_info].missing}
    objects = _objects(dists, elves or {}, gone)
    options = FactsOptions(path=ROOT, anchor=anchor, probe=probe is not None, verify=verify,
                           probe_timeout=probe_timeout, gpu=gpu is not None, roots=tuple(roots))
    graph = _load_result(import_graph, objects) if import_graph is not None else None
    return Observations(
        options=options,
        layout=VenvLayout(root=ROOT, python=PYTHON, config={"version": "3.12.3"}, version="3.12.3",
                          include_system_site_packages=False, site_packages=(SITE,)),
        interpreter=interp or interpreter(),
        site_packages=(SITE,),
        distributions=dists,
        file_states=file_states,
        conflicts=_conflicts(dists, gone, on_disk or {}),
        majors={d.dist_info: observe._major_of(d, objects) for d in dists},
        objects=objects,
        unsafe_entries=[UnsafeEntry(_one(dists, key), path, problem) for key, path, problem in unsafe],
        loader=LoaderConfig(),
        entry_points=tuple(sp(p) for p in entry_points) if entry_points is not None else
        tuple(sp(p) for p in list(import_graph or {})[:1]),
        preloaded=dict(preloaded or {}),
        import_graph=graph,
        other_resolutions={sp(p): list(r) for p, r in (other or {}).items()},
        requirements=list(requirements) if requirements is not None else
        closure((anchor,) + tuple(roots), dists, MARKER_ENV),
        probe=probe,
        gpu=gpu,
        owner_index=_owner_index(dists),
    )


def _one(dists, name):
    matches = [d for d in dists if name in (d.key, d.label)]
    if len(matches) != 1:
        raise ValueError("the test names %r, which matches %d distributions" % (name, len(matches)))
    return matches[0]


def _payload(dist):
    return [e.path for e in dist.entries if ".dist-info/" not in e.path and not (e.digest is None and e.path.endswith(".pyc"))]


def _file_states(dists, missing, modified):
    for name in list(missing) + list(modified):
        _one(dists, name)
    states = {}
    for d in dists:
        lost = _pick(d, missing)
        changed = [p for p in _pick(d, modified) if p not in lost]
        states[d.dist_info] = FileState(missing=tuple(lost), modified=tuple(changed), unsafe=(),
                                        checked=len(d.entries), hashed_bytes=0)
    return states


def _pick(d, table):
    wanted = table.get(d.key, table.get(d.label, ()))
    listed = [e.path for e in d.entries]
    if wanted == ALL:
        return _payload(d)
    for path in wanted:
        if path not in listed:
            raise ValueError("%s does not list %s" % (d.label, path))
    return [p for p in listed if p in wanted]


def _objects(dists, elves, gone):
    objects = {}
    for relpath, info in elves.items():
        owners = [d for d in dists if any(e.path == relpath for e in d.entries)]
        if not owners:
            raise ValueError("no distribution lists %s" % relpath)
        if relpath in gone:
            continue  # observe() only reads files that exist
        error = info if isinstance(info, str) else None
        objects[sp(relpath)] = SharedObject(sp(relpath), relpath, owners[0], None if error else info, error)
    return objects


def _conflicts(dists, gone, on_disk):
    owners = {}
    for d in dists:
        for e in d.entries:
            labels = owners.setdefault(e.path, [])
            if d.label not in labels:
                labels.append(d.label)
    return [Conflict(path, tuple(labels), "none" if path in gone else on_disk.get(path))
            for path, labels in sorted(owners.items(), key=lambda item: sp(item[0])) if len(labels) > 1]


def _load_result(import_graph, objects):
    order = [sp(p) for p in import_graph]
    loaded = {}
    for path in order:
        obj = objects.get(path)
        loaded[path] = LoadedObject(path, obj.elf if obj and obj.elf else elf(os.path.basename(path)), None)
    return LoadResult(order=order, objects=loaded, resolutions={sp(p): list(r) for p, r in import_graph.items()},
                      errors=[])


def _owner_index(dists):
    index = {}
    for d in dists:
        for e in d.entries:
            index.setdefault(os.path.realpath(sp(e.path)), []).append(d)
    return index


# --- the torch 2.9.1 (CUDA 12.8) stack of the incident, trimmed to what the rules look at -------------------

TORCH_C = "torch/_C.cpython-312-x86_64-linux-gnu.so"
TORCH_CUDA = "torch/lib/libtorch_cuda.so"
GLOBAL_DEPS = "torch/lib/libtorch_global_deps.so"
CU12_LABELS = ["nvidia-cudnn-cu12 9.10.2.21", "nvidia-cusparselt-cu12 0.7.1", "nvidia-nccl-cu12 2.27.5",
               "nvidia-nvshmem-cu12 3.3.20"]
COLLIDING_SONAMES = ["libcudnn.so.9", "libcusparseLt.so.0", "libnccl.so.2", "libnvshmem_host.so.3"]
# family folder, cu12 version, cu13 version, the library every torch build loads from it
FAMILIES = (
    ("cudnn", "9.10.2.21", "9.24.0.43", "libcudnn.so.9"),
    ("cusparselt", "0.7.1", "0.8.1", "libcusparseLt.so.0"),
    ("nccl", "2.27.5", "2.30.7", "libnccl.so.2"),
    ("nvshmem", "3.3.20", "3.4.5", "libnvshmem_host.so.3"),
)


def torch_cu12(version="2.9.1", extra_requires=()):
    requires = ["filelock", "nvidia-cuda-runtime-cu12==12.8.90" + LINUX, "nvidia-cublas-cu12==12.8.4.1" + LINUX]
    requires += ["nvidia-%s-cu12==%s%s" % (family, cu12, LINUX) for family, cu12, _cu13, _lib in FAMILIES]
    return dist("torch", version, ["torch/__init__.py", TORCH_C, GLOBAL_DEPS, TORCH_CUDA],
                requires + list(extra_requires))


def cu12_support():
    """The cu12 wheels nothing collides with, plus a pure-Python requirement of torch."""
    return [
        dist("filelock", "3.20.0", ["filelock/__init__.py"]),
        dist("nvidia-cuda-runtime-cu12", "12.8.90", [same("nvidia/__init__.py"), "nvidia/cuda_runtime/lib/libcudart.so.12"]),
        dist("nvidia-cublas-cu12", "12.8.4.1", [same("nvidia/__init__.py"), "nvidia/cublas/lib/libcublas.so.12"]),
    ]


def cu12_colliding():
    """cuDNN, cuSPARSELt, NCCL and NVSHMEM for CUDA 12 (nvshmem with its optional MPI bootstrap plugin)."""
    dists = []
    for family, cu12, _cu13, lib in FAMILIES:
        files = ["nvidia/%s/include/%s.h" % (family, family), "nvidia/%s/lib/%s" % (family, lib)]
        if family == "nvshmem":
            files.append("nvidia/nvshmem/lib/nvshmem_bootstrap_mpi.so.3")
        dists.append(dist("nvidia-%s-cu12" % family, cu12, files,
                          ["nvidia-cublas-cu12"] if family == "cudnn" else []))
    return dists


def cu13_colliding():
    """Their CUDA 13 builds: the same paths (cudnn-cu13 requires the CUDA 13 cuBLAS)."""
    return [dist("nvidia-%s-cu13" % family, cu13,
                 ["nvidia/%s/include/%s.h" % (family, family), "nvidia/%s/lib/%s" % (family, lib)],
                 ["nvidia-cublas"] if family == "cudnn" else [])
            for family, _cu12, cu13, lib in FAMILIES]


def cublas_cu13():
    """What nvidia-cudnn-cu13 pulled in: the CUDA 13 cuBLAS (in nvidia/cu13/lib)."""
    return dist("nvidia-cublas", "13.1.1.3", ["nvidia/cu13/lib/libcublas.so.13"])


def stack_elves():
    """ELF facts of every shared object of the stack above."""
    table = {
        TORCH_C: elf(None, ["libtorch_cuda.so", "libc.so.6"], rpath="$ORIGIN/../../nvidia/cudnn/lib:$ORIGIN/lib"),
        GLOBAL_DEPS: elf("libtorch_global_deps.so", ["libcudart.so.12", "libm.so.6"]),
        TORCH_CUDA: elf("libtorch_cuda.so", ["libcudart.so.12", "libcublas.so.12"] + COLLIDING_SONAMES + ["libm.so.6"]),
        "nvidia/cuda_runtime/lib/libcudart.so.12": elf("libcudart.so.12"),
        "nvidia/cublas/lib/libcublas.so.12": elf("libcublas.so.12", runpath="$ORIGIN"),
        "nvidia/nvshmem/lib/nvshmem_bootstrap_mpi.so.3": elf("nvshmem_bootstrap_mpi.so.3", ["libmpi.so.40"]),
    }
    for family, _cu12, _cu13, lib in FAMILIES:
        table["nvidia/%s/lib/%s" % (family, lib)] = elf(lib, ["libm.so.6"])
    return table


def torch_graph(colliding=None):
    """torch's import: _C, then libtorch_cuda and the CUDA libraries; ``colliding`` maps soname -> Resolution."""
    colliding = colliding or {}
    graph = {
        GLOBAL_DEPS: [found("libcudart.so.12", "nvidia/cuda_runtime/lib/libcudart.so.12"),
                      found("libm.so.6", "/lib/x86_64-linux-gnu/libm.so.6", "cache")],
        TORCH_C: [found("libtorch_cuda.so", TORCH_CUDA), found("libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6", "cache")],
        TORCH_CUDA: [found("libcudart.so.12", "nvidia/cuda_runtime/lib/libcudart.so.12"),
                     found("libcublas.so.12", "nvidia/cublas/lib/libcublas.so.12")]
        + [colliding.get(lib, found(lib, "nvidia/%s/lib/%s" % (family, lib))) for family, _a, _b, lib in FAMILIES]
        + [found("libm.so.6", "/lib/x86_64-linux-gnu/libm.so.6", "cache")],
        "nvidia/cuda_runtime/lib/libcudart.so.12": [],
        "nvidia/cublas/lib/libcublas.so.12": [],
    }
    for family, _cu12, _cu13, lib in FAMILIES:
        if lib not in colliding:
            graph["nvidia/%s/lib/%s" % (family, lib)] = [found("libm.so.6", "/lib/x86_64-linux-gnu/libm.so.6", "cache")]
    return graph


MPI_PLUGIN = {"nvidia/nvshmem/lib/nvshmem_bootstrap_mpi.so.3": [unresolved("libmpi.so.40")]}
GUTTED_ERROR = "ImportError: libcudnn.so.9: %s" % NOT_FOUND


def healthy(add=(), **extra):
    """The torch 2.9.1 venv as installed: imports, runs cuDNN 9.10.2 and NCCL 2.27.5; ``add``: more distributions."""
    args = dict(elves=stack_elves(), import_graph=torch_graph(), other=MPI_PLUGIN,
                probe=probe_ok({"torch": "2.9.1", "cuda": "12.8", "cudnn": 91002, "nccl": "2.27.5"}))
    args.update(extra)
    return build([torch_cu12()] + cu12_support() + cu12_colliding() + list(add), **args)


def gutted(add=(), **extra):
    """After pip uninstall of the cu13 wheels: the four cu12 wheels are metadata-only and import fails."""
    args = dict(missing={label: ALL for label in CU12_LABELS}, elves=stack_elves(),
                import_graph=torch_graph({lib: unresolved(lib) for lib in COLLIDING_SONAMES}), other={},
                probe=probe_failed(GUTTED_ERROR, 'Traceback (most recent call last):\n  File "<string>", line 1\n'
                                   + GUTTED_ERROR + "\n"))
    args.update(extra)
    return build([torch_cu12()] + cu12_support() + cu12_colliding() + list(add), **args)


def contaminated(add=(), **extra):
    """After pip install of the cu13 wheels into the cu12 venv: cu13 bytes at the cu12 paths; import works."""
    on_disk = {"nvidia/%s/lib/%s" % (family, lib): "nvidia-%s-cu13 %s" % (family, cu13)
               for family, _cu12, cu13, lib in FAMILIES}
    elves = dict(stack_elves(), **{"nvidia/cu13/lib/libcublas.so.13": elf("libcublas.so.13", runpath="$ORIGIN")})
    args = dict(elves=elves, import_graph=torch_graph(), other=MPI_PLUGIN, on_disk=on_disk,
                probe=probe_ok({"torch": "2.9.1", "cuda": "12.8", "cudnn": 92400, "nccl": "2.30.7"},
                               loaded=list(on_disk)))
    args.update(extra)
    return build([torch_cu12()] + cu12_support() + cu12_colliding() + cu13_colliding() + [cublas_cu13()] + list(add),
                 **args)


# CUDA 13: the file-less meta-package whose extras select the toolkit wheels (two of them here)
TOOLKIT_13 = dist("cuda-toolkit", "13.0.3", [],
                  ['nvidia-curand==10.4.0.35.*; extra == "curand"', 'nvidia-cublas==13.1.1.3.*; extra == "cublas"'])
