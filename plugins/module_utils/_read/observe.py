# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Gather everything observable about a venv into one ``Observations`` record.

Private to the gpuops.cuda_venv collection: not a public API.

This is the only facts code with effects (it reads the disk and runs the venv's interpreter,
``ldconfig -p`` and ``ld.so --help`` through the runner); deciding what is wrong is
``_decide/diagnose.py``'s job and shaping the result is ``_decide/facts_report.py``'s.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import glob
import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core import cuda_knowledge as cuda
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import is_shared_object
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.distributions import (
    Distribution, entry_location, locate_entries, read_distributions)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.elf import ElfError, ElfInfo, read_elf
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.host.gpu import GpuFacts, gpu_facts
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.guard_state import GuardState, read_guard
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.install_times import InstallStamp, read_stamps
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.lock_file import Lock, ParsedLock, select
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.locked_bytes import BytesCheck, check_locked_bytes
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.host.performance_state import PerformanceReading, read_performance
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.loader import (
    LoaderConfig, LoadResult, Resolution, build_config, simulate_load)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.read_index import DirectReader, ReadIndex, load_index
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.probe import (
    InterpreterInfo, ProbeResult, probe_import, query_interpreter)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.record_check import (
    Conflict, FileState, PendingCheck, find_conflicts, listed_paths, start_check_all, usable_cpus)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.requirements import (
    RequirementEdge, closure, marker_env_fallback, pinned_edges)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import Runner, clean_env
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.runtime_routes import resolve_others
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.scripts import ScriptCheck, check_scripts
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.shadowing import Shadowed, find_shadowed
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.venv_paths import real_path
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import VenvLayout, read_layout
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.wheel_sources import SourceReading, WheelSources


@dataclass(frozen=True)
class FactsOptions:
    """What the user asked the facts engine to look at."""

    path: str
    anchor: str = "torch"
    probe: bool = True
    probe_reuse: bool = True  # with read_index: the last probe's result when nothing it depended on changed
    verify: str = "size"
    ld_library_path: Tuple[str, ...] = ()
    probe_timeout: float = 120.0
    gpu: bool = True
    roots: Tuple[str, ...] = ()  # extra requirements declared beside the anchor (the repair's packages)
    pycache: Optional[str] = None  # where the import probe may cache bytecode (the repair's); None: it writes none
    probe_loader_only: bool = False  # the repair's light test: the probe loads the anchor's compiled parts only
    judged_as: Optional[str] = None  # the root the venv is judged at when not its own: a swap's copy, the live venv's
    wheel_sources: WheelSources = WheelSources()  # read only for a residue's source versions (CONTAMINATION_SOURCE)
    performance: bool = False  # read what can make it slow (_read/host/performance_state.py): the facts module's
    gpu_archs: Tuple[str, ...] = ()  # compute capabilities ("9.0") the kernels are judged for instead of NVML's
    read_index: bool = False  # reuse and keep what was read from each ELF file (_read/read_index.py): the facts module's
    declared: Tuple[Tuple[str, str], ...] = ()  # the repair's declared state as its installer resolved it, when its
    # anchor is not the installed one ((name, version) pairs, _install/resolve.py): the requirements are these pins
    lock: Optional[ParsedLock] = None  # the user's lock (_read/packaging/lock_file.py): the declared state is what it selects
    lock_extras: Tuple[str, ...] = ()  # the lock's extras and dependency groups asked for (None: its default groups)
    lock_groups: Optional[Tuple[str, ...]] = None
    hash_distributions: Tuple[str, ...] = ()  # keys of distributions whose files are hashed whatever verify says: what the
    # repair installed, hashed beside the import that tests its plan's last batch (outcome.recheck_touched reuses them)


@dataclass(frozen=True)
class SharedObject:
    """A shared object (or extension/executable) a distribution installs."""

    path: str  # absolute, as listed (not symlink-resolved)
    relpath: str  # as written in RECORD
    owner: Distribution
    elf: Optional[ElfInfo]
    error: Optional[str]


@dataclass(frozen=True)
class CudaMajor:
    """The CUDA major a distribution is built for (None: no evidence of one) and the evidence that tells it
    ("name", "install path", "soname libcublas.so.13", "version", "dependency nvidia-cudnn-cu12", "links against CUDA
    12"; None with no major)."""

    major: Optional[int] = None
    evidence: Optional[str] = None


NO_CUDA_MAJOR = CudaMajor()


@dataclass(frozen=True)
class UnsafeEntry:
    """A RECORD entry that resolves outside the venv: never read, deleted or written."""

    dist: Distribution
    path: str  # the entry's path as RECORD writes it
    problem: str  # why it is refused, as a sentence


@dataclass
class Observations:
    """Everything gathered about one venv; input of the diagnosis."""

    options: FactsOptions
    layout: VenvLayout
    interpreter: InterpreterInfo
    site_packages: Tuple[str, ...]
    distributions: List[Distribution]
    file_states: Dict[str, FileState]
    conflicts: List[Conflict]
    majors: Dict[str, CudaMajor]  # dist_info -> its CUDA major
    objects: Dict[str, SharedObject]
    unsafe_entries: List[UnsafeEntry]
    loader: LoaderConfig
    entry_points: Tuple[str, ...]
    preloaded: Dict[str, str]
    import_graph: Optional[LoadResult]
    other_resolutions: Dict[str, List[Resolution]]
    requirements: List[RequirementEdge]
    probe: Optional[ProbeResult]
    gpu: Optional[GpuFacts]  # None: not gathered (options.gpu False)
    owner_index: Mapping = field(default_factory=dict)  # {real path: [owners]}: a dict, or ListedOwners
    scripts: Optional[ScriptCheck] = None  # console scripts relocated or pointing at a missing interpreter
    shadowed: Dict[str, Shadowed] = field(default_factory=dict)  # sonames the venv has that LD_LIBRARY_PATH takes over
    digests: Dict[tuple, str] = field(default_factory=dict, repr=False)  # (path, algorithm) -> hashed
    static_conflicts: Optional[List[Conflict]] = field(default=None, repr=False)  # before the probe's say
    guard: Optional[GuardState] = None  # the install guard as found (_read/packaging/guard_state.py)
    stamps: Dict[str, InstallStamp] = field(default_factory=dict)  # dist_info -> when it was installed
    # what the configured wheel sources offer of the residue's candidates (_read/packaging/wheel_sources.py); None: not read
    source_reading: Optional[SourceReading] = None
    performance: Optional[PerformanceReading] = None  # options.performance: kernels, jobs' environment, processes
    lock: Optional[Lock] = None  # what options.lock selects for this venv
    lock_bytes: Dict[str, BytesCheck] = field(default_factory=dict)  # locked name -> installed from the locked bytes?
    read_index: Optional[ReadIndex] = field(default=None, repr=False)  # options.read_index: what it reused and read
    resolved: Dict[str, str] = field(default_factory=dict, repr=False, compare=False)  # real_path's memo

    def cuda_major(self, dist_info: str) -> CudaMajor:
        """The CUDA major of the distribution at ``dist_info``; NO_CUDA_MAJOR for one not read."""
        return self.majors.get(dist_info, NO_CUDA_MAJOR)

    def owners_of(self, path: str) -> List[Distribution]:
        """Distributions whose RECORD lists ``path`` (compared by real path)."""
        return self.owner_index.get(self.real_path(path), [])

    def real_path(self, path: str) -> str:
        """os.path.realpath(path), each folder resolved once per observation (the rules ask for hundreds)."""
        return real_path(os.path.abspath(path), self.resolved)

    def relpath(self, path: str) -> str:
        """A path as a person reads it: relative to its site-packages, else to the venv, else absolute."""
        for base in self.site_packages:
            if path.startswith(base.rstrip("/") + "/"):
                return os.path.relpath(path, base)
        if path.startswith(self.layout.root.rstrip("/") + "/"):
            return os.path.relpath(path, self.layout.root)
        return path


def observe(options: FactsOptions, runner: Runner, loader: Optional[LoaderConfig] = None,
            layout: Optional[VenvLayout] = None) -> Observations:
    """Read the venv and its environment. Raises VenvError for a path that is not a venv.

    The import probe, when asked for, runs beside the reading of the disk (its own process) and is joined
    last. ``loader``: the node's loader configuration when the caller already has it (see loader_config).
    ``layout``: the venv's layout when the caller has read it (the repair's request); one of another path than
    ``options.path`` (a swap's copy) is not taken, that path's is read.
    """
    with _no_cycle_collection():
        return _observe(options, runner, loader, layout)


@contextlib.contextmanager
def _no_cycle_collection():
    """The cyclic garbage collector off while the venv is read: the reading makes tens of thousands of tuples and
    strings (no cycles), and the collector walked them some 45 times in a run (9 ms of the 0.2 s an unchanged venv
    costs). Reference counting still frees what is dropped; the collector's setting is put back after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _observe(options: FactsOptions, runner: Runner, loader: Optional[LoaderConfig], layout: Optional[VenvLayout]) -> Observations:
    if layout is None or layout.root != os.path.normpath(options.path):
        layout = read_layout(options.path)
    with ThreadPoolExecutor(max_workers=1) as background:
        # a child Python, the loader's configuration (ldconfig -p, ld.so --help), then the import probe (its own
        # process), one after the other: the disk is read meanwhile
        asking = background.submit(query_interpreter, layout.python, runner)
        configuring = background.submit(loader_config, runner, options.ld_library_path) if loader is None else None
        index = load_index(layout.state_dir, layout.root) if options.read_index else None
        reader = index or DirectReader()
        dists = read_distributions(layout.site_packages, reader.dist_info)
        probed = module = import_name(options.anchor, dists)
        probing = background.submit(_probe_if_usable, options, layout, probed, runner, asking, index) if options.probe else None
        files = _read_files(options, layout, dists, reader)
        interpreter = asking.result()
        site_packages = _site_packages(layout, interpreter)
        if site_packages != layout.site_packages:  # the interpreter's purelib or platlib is another folder
            files.checking.result()  # its hashing ends before the reading starts again
            files = _read_files(options, layout, read_distributions(site_packages, reader.dist_info), reader)
            module = import_name(options.anchor, files.dists)
        loader = loader if configuring is None else configuring.result()
        obs = _read_rest(options, layout, interpreter, site_packages, module, loader, reader, index, files)
        ahead = _digests_ahead(obs, reader) if probing is not None and not probing.done() else {}
        probe = probing.result() if probing is not None else None
    if probe is not None and module != probed:
        probe = _probe_if_usable(options, layout, module, runner, asking, index)
    return add_probe(obs, probe, ahead=ahead) if probe is not None else obs


def _digests_ahead(obs: Observations, reader) -> dict:
    """While the import probe runs: the digests of the conflicting files the simulated load of the anchor maps (what
    the probe will most likely load), on the CPUs the probe leaves; add_probe takes those of the files it did load,
    and hashes only the rest."""
    predicted = {os.path.realpath(path) for path in (obs.import_graph.order if obs.import_graph is not None else ())}
    _wanted, sizes = _loaded_conflict_files(obs.distributions, obs.layout.root, obs.conflicts, predicted)
    digests: dict = {}
    if sizes:
        reader.record_digests(sizes, digests, workers=max(1, usable_cpus() - 1))
    return digests


def _probe_if_usable(options, layout, module, runner, asking, index: Optional[ReadIndex]) -> Optional[ProbeResult]:
    """The import probe of ``module``, once the interpreter query (``asking``) said the interpreter runs; else None.
    With the read index and ``probe_reuse``, the last probe's result when nothing it depended on changed."""
    if not asking.result().ok:
        return None

    def run():
        return probe_import(layout.python, module, runner, pycache=options.pycache, ld_library_path=options.ld_library_path,
                            timeout=options.probe_timeout, loader_only=options.probe_loader_only)
    if index is None:
        return run()
    key, paths = probe_inputs(options, layout, module)
    return index.probe(key, paths, run, reuse=options.probe_reuse)


def probe_inputs(options: FactsOptions, layout: VenvLayout, module: str):
    """(what the probe is asked and the driver it meets, the files whose identity it depends on besides what it loads
    and imports): the interpreter, pyvenv.cfg, the site-packages folders and their ``.pth`` files, the folders of
    LD_LIBRARY_PATH, the loader's cache and preload list (docs/CUDA_NOTES.md, Loader rules)."""
    paths = [os.path.realpath(layout.python), os.path.join(layout.root, "pyvenv.cfg"), "/etc/ld.so.cache", "/etc/ld.so.preload"]
    for site in layout.site_packages:
        paths.append(site)
        try:
            paths.extend(os.path.join(site, name) for name in sorted(os.listdir(site)) if name.endswith(".pth"))
        except OSError:
            pass
    paths.extend(options.ld_library_path)
    key = {"anchor": module, "python": layout.python, "ld_library_path": list(options.ld_library_path),
           "loader_only": options.probe_loader_only, "driver": _driver()}
    return key, paths


def _driver() -> list:
    """What of the GPU driver a probe's answer depends on: its version text and the device nodes."""
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8", errors="replace") as handle:
            version = handle.read(4096)
    except OSError:
        version = None
    try:
        nodes = sorted(name for name in os.listdir("/dev") if name.startswith("nvidia"))
    except OSError:
        nodes = []
    return [version, nodes]


@dataclass(frozen=True)
class _Files:
    """What the distributions' files say, read before the interpreter's answer is needed (_read_files); in hash mode
    the hashing goes on meanwhile (``checking``), and what needs its digests is read last (_checked)."""

    dists: list
    locations: dict
    checking: PendingCheck
    listing: tuple
    owner_index: Mapping
    unsafe: List[UnsafeEntry]
    objects: dict
    majors: Dict[str, CudaMajor]
    digests: dict
    stamps: dict
    real: dict


def _read_files(options, layout, dists, reader) -> _Files:
    digests: dict = {}
    stats: dict = {}
    links: set = set()
    real: Dict[str, str] = {}  # each folder's real path, resolved once for the locations and the owner index
    locations = locate_entries(dists, layout.root, real)
    checking = start_check_all(dists, layout.root, options.verify, digests=digests, locations=locations, stats=stats,
                               links=links, also_hash=frozenset(options.hash_distributions))
    listing = listed_paths(dists, locations)
    owner_index, unsafe = _index_owners(dists, locations, links, listing, real)
    objects = _scan_objects(dists, locations, reader.elf)
    majors = {d.dist_info: _major_of(d, objects) for d in dists}
    stamps = read_stamps(dists, locations, stats, shared=listing[1])
    return _Files(dists, locations, checking, listing, owner_index, unsafe, objects, majors, digests, stamps, real)


def _checked(options, layout, files: _Files) -> tuple:
    """(file states, console scripts, conflicts): what waits for the RECORD check's hashing."""
    file_states, scripts = check_scripts(files.dists, layout, files.locations, files.checking.result(),
                                         options.judged_as)
    conflicts = find_conflicts(files.dists, layout.root, digests=files.digests, shared=files.listing[1])
    return file_states, scripts, conflicts


def _read_rest(options, layout, interpreter, site_packages, module, loader, reader, index, files: _Files) -> Observations:
    """What needs the interpreter's answer: the import's loading, the other objects' routes, the requirements; then
    the GPU and what can make the venv slow."""
    objects, dists = files.objects, files.dists
    sys_path = interpreter.sys_path if interpreter.ok else site_packages
    entry_points = _entry_points(options.anchor, module, site_packages)
    import_graph, preloaded = _import_graph(options.anchor, entry_points, loader, interpreter, sys_path, reader.elf)
    marker_env = interpreter.marker_env if interpreter.ok else marker_env_fallback(layout.version)
    other = resolve_others(objects, import_graph, loader, options.anchor, marker_env, reader.elf)
    shadowed = find_shadowed(each_resolution(import_graph, other), layout.root, _files_by_name(objects))
    lock = select(options.lock, marker_env, marker_env.get("python_version") or layout.version, options.lock_extras,
                  options.lock_groups) if options.lock is not None else None
    pins = lock.pins() if lock is not None else options.declared
    requirements = pinned_edges(pins, dists) if pins or lock is not None else \
        closure((options.anchor,) + tuple(options.roots), dists, marker_env)
    gpu = gpu_facts(with_state=options.performance) if options.gpu else None
    states = gpu.states if gpu is not None else None
    if states is not None:
        gpu = dataclasses.replace(gpu, states=None)  # the states are the performance reading's
    performance = read_performance(layout.root, [p for p, o in objects.items() if o.elf is not None],
                                   tuple(states or ()), reader.kernels) if options.performance else None
    file_states, scripts, conflicts = _checked(options, layout, files)
    return Observations(
        options=options, layout=layout, interpreter=interpreter,
        site_packages=site_packages, distributions=dists, file_states=file_states, conflicts=conflicts,
        majors=files.majors, objects=objects, unsafe_entries=files.unsafe, loader=loader, entry_points=entry_points,
        preloaded=preloaded, import_graph=import_graph, other_resolutions=other, requirements=requirements,
        probe=None, gpu=gpu, owner_index=files.owner_index, digests=files.digests, scripts=scripts,
        shadowed=shadowed, guard=read_guard(layout.state_dir), stamps=files.stamps, performance=performance,
        read_index=index, resolved=files.real, lock=lock,
        lock_bytes=check_locked_bytes(lock, dists, options.wheel_sources.find_links, reader.wheel_sha256)
        if lock is not None else {})


def each_resolution(import_graph, other):
    """(requester, Resolution, at_import): the import graph's first, then the other objects'."""
    for by_object, at_import in ((import_graph.resolutions if import_graph else {}, True), (other, False)):
        for path, resolutions in sorted(by_object.items()):
            for res in resolutions:
                yield path, res, at_import


def _files_by_name(objects) -> Dict[str, Tuple[str, ...]]:
    names: Dict[str, List[str]] = {}
    for path in objects:
        names.setdefault(os.path.basename(path), []).append(path)
    return {name: tuple(sorted(paths)) for name, paths in names.items()}


def add_probe(obs: Observations, probe: ProbeResult, index: Optional[ReadIndex] = None,
              ahead: Optional[dict] = None) -> Observations:
    """``obs`` (read without a probe) with the import probe's result: conflicts then also say whose bytes
    the process loaded (their digests from ``index``, else from ``obs``'s read index, where the files did not change;
    or from ``ahead``, hashed while the probe ran)."""
    reader = index or obs.read_index or DirectReader()
    conflicts = _whose_bytes_were_loaded(obs.distributions, obs.layout.root, obs.conflicts, probe, dict(obs.digests),
                                         reader, ahead or {})
    return dataclasses.replace(obs, probe=probe, conflicts=conflicts, static_conflicts=obs.conflicts)


def probe_venv(obs: Observations, runner: Runner, loader_only: bool = False, reuse: bool = False) -> Observations:
    """``obs`` with an import probe run now (the venv unchanged since ``obs`` was read); ``loader_only``: the light
    test (see probe_import). ``reuse``: the result the venv's read index keeps (an earlier cuda_venv_facts run's), when
    nothing that import depended on changed (ReadIndex.probe); the index is only read."""
    options = dataclasses.replace(obs.options, probe_loader_only=loader_only)
    module = import_name(options.anchor, obs.distributions)

    def run():
        return probe_import(obs.layout.python, module, runner, ld_library_path=options.ld_library_path,
                            timeout=options.probe_timeout, pycache=options.pycache, loader_only=loader_only)
    if not reuse:
        return add_probe(obs, run())
    key, paths = probe_inputs(options, obs.layout, module)
    index = load_index(obs.layout.state_dir, obs.layout.root)
    return add_probe(obs, index.probe(key, paths, run), index)


def without_probe(obs: Observations) -> Observations:
    """What observe() without the probe would have returned for the same venv state."""
    options = dataclasses.replace(obs.options, probe=False)
    if obs.probe is None:
        return dataclasses.replace(obs, options=options)
    return dataclasses.replace(obs, options=options, probe=None, conflicts=obs.static_conflicts, static_conflicts=None)


def import_name(anchor: str, dists: List[Distribution]) -> str:
    """The module importing the anchor distribution means: its top-level package (ansible-core -> ansible)."""
    key = anchor.lower().replace("_", "-")
    for dist in dists:
        if dist.key != key:
            continue
        tops = []
        for entry in dist.entries:
            if not entry.path.endswith("/__init__.py"):
                continue
            head, sep, _rest = entry.path.partition("/")
            if sep and not head.endswith((".dist-info", ".data")) and not head.startswith(".") and head not in tops \
                    and entry.path == head + "/__init__.py":
                tops.append(head)
        if tops:
            preferred = anchor.replace("-", "_")
            return preferred if preferred in tops else tops[0]
    return anchor.replace("-", "_")


def _site_packages(layout: VenvLayout, interpreter: InterpreterInfo) -> Tuple[str, ...]:
    """Every site-packages dir of the venv: what is on disk plus the interpreter's purelib/platlib."""
    dirs = list(layout.site_packages)
    seen = {os.path.realpath(d) for d in dirs}
    root = os.path.realpath(layout.root)
    for extra in (interpreter.purelib, interpreter.platlib) if interpreter.ok else ():
        if not extra or not os.path.isdir(extra):
            continue
        real = os.path.realpath(extra)
        if real not in seen and (real + "/").startswith(root + "/"):
            dirs.append(extra)
            seen.add(real)
    return tuple(dirs)


def _index_owners(dists: List[Distribution], locations: dict, links: set, listing: tuple, real: dict):
    """{real path: owners} (real paths match what the loader reports) and the entries leaving the venv. ``links``: the
    located paths that are symlinks (check_all's); any other resolves as its folder's real path and its name.
    ``listing``: listed_paths()'s; when no folder and no entry resolves elsewhere (most venvs) it is the index.
    ``real``: real_path's memo, as locate_entries() filled it."""
    unsafe = [UnsafeEntry(dist, entry.path, problem) for dist in dists for entry, path, problem in locations[dist.dist_info]
              if path is None]
    first, shared = listing
    folders = {path.rpartition("/")[0] or "/" for path in first}
    if not links and all(real_path(folder, real) == folder for folder in folders):
        return ListedOwners(first, shared), unsafe
    index: Dict[str, List[Distribution]] = {}
    for dist in dists:
        for _entry, path, _problem in locations[dist.dist_info]:
            if path is None:
                continue
            if path in links:
                found = real_path(path, real)
            else:
                folder, _sep, name = path.rpartition("/")
                found = real_path(folder or "/", real).rstrip("/") + "/" + name
            owners = index.setdefault(found, [])
            if not owners or owners[-1] is not dist:
                owners.append(dist)
    return index, unsafe


class ListedOwners(Mapping):
    """{path: owners} answered from listed_paths()'s two maps, without a list per path made in advance: the owner
    index of a venv where no folder and no entry resolves elsewhere (a venv has tens of thousands of paths; the rules
    ask for hundreds)."""

    def __init__(self, first: dict, shared: dict):
        self._first = first
        self._shared = shared

    def __getitem__(self, path: str) -> List[Distribution]:
        pairs = self._shared.get(path)
        return [self._first[path][0]] if pairs is None else [dist for dist, _entry in pairs]

    def __iter__(self):
        return iter(self._first)

    def __len__(self) -> int:
        return len(self._first)


def _whose_bytes_were_loaded(dists, root, conflicts, probe, digests, reader, ahead: dict):
    """Hash only the conflicting files the probe mapped, to say whose bytes the process runs (on every CPU: the probe
    has ended, and a repair waits for this answer); ``reader``: a read index answers an unchanged file's digest;
    ``ahead``: digests taken while the probe ran, of which only the mapped files' count."""
    loaded = {os.path.realpath(p) for p in probe.loaded}
    wanted, sizes = _loaded_conflict_files(dists, root, conflicts, loaded)
    digests.update((key, ahead[key]) for key in sizes if key in ahead)
    reader.record_digests(sizes, digests)
    return find_conflicts(dists, root, digests=digests) if wanted else conflicts


def _loaded_conflict_files(dists, root, conflicts, loaded: set):
    """(the RECORD keys (path, algorithm) of the conflicting files whose owner is unknown and whose real path is in
    ``loaded``, {key: size} of those still there)."""
    unknown_paths = {c.path for c in conflicts if c.on_disk is None}
    wanted = set()
    if unknown_paths and loaded:
        for dist in dists:
            for entry in dist.entries:
                if entry.digest and entry.path in unknown_paths:
                    path, _problem = entry_location(dist, entry, root)
                    if path and os.path.realpath(path) in loaded:
                        wanted.add((path, entry.algorithm or "sha256"))
    sizes = {}
    for key in wanted:
        try:
            sizes[key] = os.stat(key[0]).st_size
        except OSError:
            continue  # gone: no digest, as an unreadable file has none
    return wanted, sizes


def _scan_objects(dists: List[Distribution], locations: dict, reader=read_elf) -> Dict[str, SharedObject]:
    """Read the ELF headers and dynamic section of every shared object the distributions own (with ``reader``:
    read_elf, or a read index's)."""
    objects: Dict[str, SharedObject] = {}
    for dist in dists:
        for entry, path, _problem in locations[dist.dist_info]:
            if path is None or ".so" not in entry.path or not is_shared_object(entry.path):
                continue
            if path in objects or not os.path.isfile(path):
                continue
            try:
                info, error = reader(path), None
            except ElfError as exc:
                info, error = None, str(exc)
            except OSError as exc:
                info, error = None, exc.strerror or str(exc)
            objects[path] = SharedObject(path, entry.path, dist, info, error)
    return objects


def _major_of(dist: Distribution, objects: Dict[str, SharedObject]) -> CudaMajor:
    owned = [o for o in objects.values() if o.owner is dist and o.elf is not None]
    provided = [o.elf.soname for o in owned if o.elf.soname]
    major, evidence = cuda.cuda_major(dist.key, dist.version, [e.path for e in dist.entries], provided, dist.requires_dist)
    if major is None and (dist.key in cuda.KNOWN_CUDA_CONSUMERS or owned):
        needed = cuda.needed_major(n for o in owned for n in o.elf.needed)
        if needed is not None:
            return CudaMajor(needed, "links against CUDA %d" % needed)
    return CudaMajor(major, evidence)


def loader_config(runner: Runner, ld_library_path: Tuple[str, ...]) -> LoaderConfig:
    """The node's loader: its cache (``ldconfig -p``) and search path (``ld.so --help``), as ld.so reports them."""
    ldconfig_p = ld_so_help = None
    ldconfig = _first_executable(("ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig"))
    if ldconfig:
        result = runner.run([ldconfig, "-p"], env=clean_env(), timeout=30)
        ldconfig_p = result.stdout if result.ok else None
    for ld_so in sorted(glob.glob("/lib64/ld-linux*.so*") + glob.glob("/lib/ld-linux*.so*"))[:1]:
        result = runner.run([ld_so, "--help"], env=clean_env(), timeout=30)
        ld_so_help = result.stdout if result.ok else None
    return build_config(ldconfig_p=ldconfig_p, ld_so_help=ld_so_help, ld_library_path=tuple(ld_library_path))


def _first_executable(candidates) -> Optional[str]:
    for candidate in candidates:
        if "/" not in candidate:
            for directory in os.environ.get("PATH", "").split(os.pathsep):
                path = os.path.join(directory, candidate)
                if directory and os.access(path, os.X_OK):
                    return path
        elif os.access(candidate, os.X_OK):
            return candidate
    return None


def _entry_points(anchor: str, module: str, site_packages: Tuple[str, ...]) -> Tuple[str, ...]:
    """The objects importing the anchor loads first, in order: its package's own extension modules."""
    patterns = cuda.ANCHOR_ENTRY_POINTS.get(anchor)
    found = []
    for base in site_packages:
        if patterns:
            for pattern in patterns:
                found.extend(sorted(glob.glob(os.path.join(base, pattern))))
        else:
            package = os.path.join(base, module)
            found.extend(sorted(p for p in glob.glob(os.path.join(package, "*.so")) if os.path.isfile(p)))
    return tuple(found)


def _import_graph(anchor, entry_points, loader, interpreter, sys_path, reader=read_elf):
    """Simulate the import's loading, including torch's preload of nvidia/*/lib when its first load fails."""
    if not entry_points:
        return None, {}
    executable = interpreter.executable if interpreter.ok else None
    preloaded: Dict[str, str] = {}
    if anchor == "torch" and _missing_cuda(simulate_load(entry_points[:1], loader, executable=executable, read_elf=reader)):
        preloaded = torch_preload(sys_path, reader)
    return simulate_load(entry_points, loader, executable=executable, preloaded=preloaded, read_elf=reader), preloaded


def _missing_cuda(result: LoadResult) -> bool:
    """True when a CUDA library could not be found (what makes torch preload nvidia/*/lib)."""
    return any(r.path is None and cuda.is_cuda_soname(r.soname)
               for resolutions in result.resolutions.values() for r in resolutions)


def torch_preload(sys_path, reader=read_elf) -> Dict[str, str]:
    """What torch's _preload_cuda_deps would load: first match of each library over sys.path (each read with
    ``reader``: read_elf, or a read index's)."""
    preloaded: Dict[str, str] = {}
    for folder, pattern in cuda.TORCH_PRELOAD:
        for entry in sys_path:
            candidates = []
            for sub in (folder,) + cuda.TORCH_PRELOAD_SHARED_FOLDERS:
                candidates.extend(sorted(glob.glob(os.path.join(entry or ".", "nvidia", sub, "lib", pattern))))
            hit = _first_loadable(candidates, reader)
            if hit:
                preloaded[hit[0]] = hit[1]
                break
    return preloaded


def _first_loadable(candidates, reader) -> Optional[Tuple[str, str]]:
    for path in candidates:
        try:
            info = reader(path)
        except (ElfError, OSError):
            continue
        return (info.soname or os.path.basename(path)), path
    return None
