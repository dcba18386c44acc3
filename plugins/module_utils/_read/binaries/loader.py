# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Model glibc's ld.so library search: which file each DT_NEEDED entry loads, or why none does.

Private to the gpuops.cuda_venv collection: not a public API.

Follows ``_dl_map_object`` in glibc's elf/dl-load.c (see ``man ld.so``; docs/CUDA_NOTES.md, Loader rules). For a
NEEDED name without a slash: an object already loaded under that name or SONAME;
else, when the requesting object has no DT_RUNPATH, the DT_RPATH of the
requester, of its loader and on up the chain of loaders, then of the
executable; then LD_LIBRARY_PATH; then the requester's own DT_RUNPATH (never
inherited); then ld.so.cache; then the default directories. A candidate of the
other ELF class or another machine is skipped; any other bad file stops the
search with the loader's message.

Paths are kept as the loader builds them ("$ORIGIN/../x" gives "/dir/../x/lib.so",
never normalised): that string is what the loader's error messages show.
Not modelled: the current directory (an empty or relative search path entry is
listed in ``searched`` but never resolves), legacy hwcaps subdirectories, hwcaps
entries of ld.so.cache, DF_1_NODEFLIB, LD_PRELOAD, secure-mode rules.
"""

from __future__ import annotations

import errno
import os
import re
from dataclasses import dataclass, field, replace
from typing import Callable, Dict, List, Mapping, Optional, Sequence

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.elf import (
    EM_386,
    EM_AARCH64,
    EM_PPC64,
    EM_S390,
    EM_X86_64,
    ET_DYN,
    ET_EXEC,
    ElfError,
    ElfInfo,
    host_identity,
    read_elf,
)

VIA_LOADED = "loaded"
VIA_PRELOAD = "preload"
VIA_DIRECT = "direct"
VIA_RPATH = "rpath"
VIA_LD_LIBRARY_PATH = "ld_library_path"
VIA_RUNPATH = "runpath"
VIA_CACHE = "cache"
VIA_DEFAULT = "default"
VIA_MISSING = "missing"

_NOT_FOUND = "cannot open shared object file: No such file or directory"
_DST = re.compile(r"\$(?:\{(ORIGIN|PLATFORM|LIB)\}|(ORIGIN|PLATFORM|LIB)(?![A-Za-z0-9_]))")
_OSABI_OK = (0, 3)  # ELFOSABI_SYSV, ELFOSABI_GNU: what glibc accepts on Linux


@dataclass(frozen=True)
class LoaderConfig:
    """Everything about the process and system the search depends on.

    ``ld_library_path`` holds raw entries (tokens unexpanded, "" kept);
    ``cache`` maps a soname to its ld.so.cache paths for the host's class and
    machine (the first one is used, as ld.so does); ``hwcaps_subdirs`` (e.g.
    "glibc-hwcaps/x86-64-v3") are tried inside every directory before the
    directory itself; ``host`` is (elf_class, little_endian, machine), None for
    the running interpreter's.
    """

    ld_library_path: tuple = ()
    cache: Mapping[str, tuple] = field(default_factory=dict)
    default_dirs: tuple = ()
    lib_token: str = ""
    platform_token: str = ""
    hwcaps_subdirs: tuple = ()
    host: Optional[tuple] = None


@dataclass(frozen=True)
class Resolution:
    """How one NEEDED name resolved.

    ``via`` names the step that decided (VIA_*); ``path`` is the file used, or
    the bad file that stopped the search (then ``error`` is set too);
    ``error`` is the loader's message; ``searched`` lists the directories
    tried, in order ("" is the current directory).
    """

    soname: str
    path: Optional[str]
    via: str
    error: Optional[str]
    searched: tuple


@dataclass
class LoadedObject:
    """An object in the simulated process; ``loader`` is the path of the object that needed it."""

    path: str
    elf: ElfInfo
    loader: Optional[str]


@dataclass(frozen=True)
class LoadError:
    """A load failure: ``requester`` needed ``name`` (None: ``entry`` itself could not be opened)."""

    entry: str
    requester: Optional[str]
    name: str
    message: str


@dataclass
class LoadResult:
    """The simulated process after ``simulate_load``.

    ``order`` lists the paths loaded and still loaded; ``objects`` and
    ``resolutions`` cover every object visited, including those ``unloaded``
    again because the dlopen that brought them in failed (as dlopen does).
    The first error of each entry point is the one dlopen would raise; the
    search goes on past it to report every missing library.
    """

    order: list
    objects: dict
    resolutions: dict
    errors: list
    unloaded: list = field(default_factory=list)


# ---------------------------------------------------------------- configuration

_LDCONFIG_LINE = re.compile(r"^\s+(\S+) \(([^)]*)\) => (.+?)\s*$")
# The arch flag ldconfig prints for the host's default cache entries (glibc elf/cache.c).
_CACHE_ARCH = {
    (64, EM_X86_64): "x86-64",
    (32, EM_X86_64): "x32",
    (32, EM_386): "",
    (64, EM_AARCH64): "AArch64",
    (64, EM_PPC64): "64bit",
    (64, EM_S390): "64bit",
}
_TRIPLETS = {
    EM_X86_64: "x86_64-linux-gnu",
    EM_AARCH64: "aarch64-linux-gnu",
    EM_386: "i386-linux-gnu",
    EM_PPC64: "powerpc64le-linux-gnu",
    EM_S390: "s390x-linux-gnu",
}
_PLATFORMS = {EM_X86_64: "x86_64", EM_AARCH64: "aarch64", EM_386: "i686"}


def parse_ldconfig_p(text: str, elf_class: int = 64, machine: int = EM_X86_64) -> Dict[str, tuple]:
    """Map soname -> paths from ``ldconfig -p`` output, keeping the host's entries in order.

    Entries with a hwcap annotation are left out (ld.so picks them by CPU
    features); an unknown (class, machine) keeps every libc6 entry.
    """
    want = _CACHE_ARCH.get((elf_class, machine))
    cache: Dict[str, tuple] = {}
    for line in text.splitlines():
        match = _LDCONFIG_LINE.match(line)
        if not match:
            continue
        name, flags, path = match.groups()
        parts = [part.strip() for part in flags.split(",")]
        if any(part.startswith("hwcap:") for part in parts[1:]):
            continue
        arch = ",".join(part for part in parts[1:] if not part.startswith("OS ABI:"))
        ok = (parts[0] == "ELF" and not arch) or (parts[0] == "libc6" and (want is None or arch == want))
        if ok:
            cache[name] = cache.get(name, ()) + (path,)
    return cache


def parse_ld_so_help(text: str) -> tuple:
    """The default directories from ``ld.so --help`` (glibc >= 2.33), in search order."""
    found = re.findall(r"^\s+(/\S*) \(system search path\)\s*$", text, re.MULTILINE)
    return tuple(found)


def parse_ld_so_hwcaps(text: str) -> tuple:
    """The searched glibc-hwcaps subdirectories from ``ld.so --help``, best first."""
    section = re.search(r"^Subdirectories of glibc-hwcaps directories.*?:\n((?:[ \t]+\S.*\n?)*)", text, re.MULTILINE)
    if not section:
        return ()
    names = re.findall(r"^\s+(\S+) \(([^)]*)\)", section.group(1), re.MULTILINE)
    return tuple("glibc-hwcaps/" + name for name, notes in names if "searched" in notes)


def parse_ld_so_platform(text: str) -> Optional[str]:
    """The $PLATFORM value from ``ld.so --help`` (glibc < 2.37 prints it as AT_PLATFORM)."""
    match = re.search(r"^\s+(\S+) \(AT_PLATFORM[;)]", text, re.MULTILINE)
    return match.group(1) if match else None


def default_dirs_fallback(machine: int) -> tuple:
    """Default directories when ``ld.so --help`` does not list them: Debian multiarch, then lib64, then lib."""
    triplet = _TRIPLETS.get(machine)
    multiarch = ("/lib/" + triplet, "/usr/lib/" + triplet) if triplet else ()
    return multiarch + ("/lib64", "/usr/lib64", "/lib", "/usr/lib")


def lib_token_for(default_dirs: Sequence[str]) -> str:
    """Guess $LIB from the first default directory: lib/x86_64-linux-gnu (Debian), lib64 (Fedora), lib (Arch)."""
    if not default_dirs:
        return ""
    first = default_dirs[0]
    if first.startswith("/usr/"):
        first = first[len("/usr"):]
    return first.strip("/")


def split_path(value: str) -> tuple:
    """Split a DT_RPATH/DT_RUNPATH value on ":"; an empty element (the current directory) stays ""."""
    return tuple(value.split(":"))


def split_ld_library_path(value: Optional[str]) -> tuple:
    """Split LD_LIBRARY_PATH as ld.so does: on ":" and ";", nothing at all when unset or empty."""
    return tuple(re.split(r"[:;]", value)) if value else ()


def build_config(
    *,
    ldconfig_p: Optional[str] = None,
    ld_so_help: Optional[str] = None,
    ld_library_path=None,
    host: Optional[tuple] = None,
) -> LoaderConfig:
    """A LoaderConfig from collected command outputs (None: not available).

    ``ld_library_path`` is the variable's value (a string, split as ld.so does)
    or its entries already split; ``host`` defaults to the running interpreter's.
    """
    if isinstance(ld_library_path, str) or ld_library_path is None:
        ld_library_path = split_ld_library_path(ld_library_path)
    host = tuple(host) if host else host_identity()
    elf_class, _little, machine = host
    dirs = parse_ld_so_help(ld_so_help) if ld_so_help else ()
    dirs = dirs or default_dirs_fallback(machine)
    return LoaderConfig(
        ld_library_path=tuple(ld_library_path),
        cache=parse_ldconfig_p(ldconfig_p, elf_class, machine) if ldconfig_p else {},
        default_dirs=dirs,
        lib_token=lib_token_for(dirs),
        platform_token=(parse_ld_so_platform(ld_so_help) if ld_so_help else None) or _PLATFORMS.get(machine, ""),
        hwcaps_subdirs=parse_ld_so_hwcaps(ld_so_help) if ld_so_help else (),
        host=host,
    )


# ---------------------------------------------------------------- search

def expand_tokens(entry: str, origin: Optional[str], config: LoaderConfig) -> Optional[str]:
    """Expand $ORIGIN, $LIB, $PLATFORM (and the ${...} forms); None when a token has no value."""
    values = {"ORIGIN": origin, "LIB": config.lib_token, "PLATFORM": config.platform_token}
    unknown = []

    def substitute(match) -> str:
        value = values[match.group(1) or match.group(2)]
        if not value:
            unknown.append(match.group(0))
            return ""
        return value

    expanded = _DST.sub(substitute, entry)
    return None if unknown else expanded


def _search_dirs(entries: Sequence[str], origin: Optional[str], config: LoaderConfig) -> List[str]:
    """Expanded directories of one search path, as glibc's fillin_rpath builds them."""
    dirs: List[str] = []
    for entry in entries:
        directory = entry
        if entry:
            directory = expand_tokens(entry, origin, config) or ""
            if not directory:
                continue
            directory = directory.rstrip("/") or "/"
        if directory not in dirs:
            dirs.append(directory)
    return dirs


def _origin(obj: "LoadedObject") -> str:
    return os.path.dirname(obj.path) or "."


def _join(directory: str, name: str) -> str:
    return directory + name if directory.endswith("/") else directory + "/" + name


def _verify(path: str, reader: Callable, host: tuple):
    """Decide about one candidate as glibc's open_verify does.

    Returns (info, skipped_other_class, error): info for a usable file; all
    None/False for a file to skip; error (the loader's message) to stop at.
    """
    if not os.path.isfile(path):
        return None, False, None
    try:
        info = reader(path)
        header, reason = info, None
    except ElfError as exc:
        header, reason = exc.header, exc.reason
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.EACCES):
            return None, False, None
        return None, False, "%s: cannot open shared object file: %s" % (path, exc.strerror)
    elf_class, little_endian, machine = host
    if header is None:
        return None, False, "%s: %s" % (path, reason)
    if header.elf_class != elf_class:
        return None, True, None
    if header.little_endian != little_endian:
        return None, False, "%s: ELF file data encoding not %s-endian" % (path, "little" if little_endian else "big")
    if header.osabi not in _OSABI_OK:
        return None, False, "%s: ELF file OS ABI invalid" % path
    if header.machine != machine:
        return None, False, None
    if header.elf_type not in (ET_EXEC, ET_DYN):
        return None, False, "%s: only ET_DYN and ET_EXEC can be loaded" % path
    if reason is not None:
        return None, False, "%s: %s" % (path, reason)
    return info, False, None


def _not_found(name: str, other_class: bool, host: tuple) -> str:
    if other_class:
        return "%s: wrong ELF class: ELFCLASS%d" % (name, 32 if host[0] == 64 else 64)
    return "%s: %s" % (name, _NOT_FOUND)


class _Search:
    """One search for one name: walks directories, remembers what it tried."""

    def __init__(self, name: str, config: LoaderConfig, host: tuple, reader: Callable) -> None:
        self.name = name
        self.config = config
        self.host = host
        self.reader = reader
        self.searched: List[str] = []
        self.other_class = False

    def candidate(self, path: str, via: str):
        """(Resolution, info) when ``path`` ends the search, else None."""
        info, other_class, error = _verify(path, self.reader, self.host)
        self.other_class |= other_class
        if error is not None:
            return Resolution(self.name, path, via, error, tuple(self.searched)), None
        if info is None:
            return None
        return Resolution(self.name, path, via, None, tuple(self.searched)), info

    def dirs(self, directories: Sequence[str], via: str):
        for directory in directories:
            if directory in self.searched:
                continue
            self.searched.append(directory)
            if not directory.startswith("/"):
                continue  # relative to the process's current directory: not modelled
            bases = [_join(directory, sub) for sub in self.config.hwcaps_subdirs] + [directory]
            for base in bases:
                found = self.candidate(_join(base, self.name), via)
                if found:
                    return found
        return None

    def missing(self):
        error = _not_found(self.name, self.other_class, self.host)
        return Resolution(self.name, None, VIA_MISSING, error, tuple(self.searched)), None


def _resolve(needed, requester, chain, config, host, reader, loaded, preload_paths, executable):
    """Resolve one NEEDED name; return (Resolution, ElfInfo of a newly found file or None)."""
    name = needed
    if "$" in needed and requester is not None:  # dl-deps.c expands tokens in NEEDED names too
        name = expand_tokens(needed, _origin(requester), config)
        if name is None:
            error = "%s: empty dynamic string token substitution" % needed
            return Resolution(needed, None, VIA_MISSING, error, ()), None
    resolution, info = _lookup(name, requester, chain, config, host, reader, loaded, preload_paths, executable)
    return (replace(resolution, soname=needed) if name != needed else resolution), info


def _search_steps(requester, chain, config, executable) -> list:
    """The (via, directories) lists searched before the cache, in glibc's order."""
    exe_origin = os.path.dirname(executable.path) if executable is not None else None
    steps = []
    if requester is None or requester.elf.runpath is None:
        # DT_RPATH of the requester, of its loader and on up; a link with DT_RUNPATH adds nothing
        # (glibc drops an object's RPATH when it has a RUNPATH) but the walk goes on.
        did_executable = False
        for obj in ([requester] if requester is not None else []) + list(chain):
            if obj.elf.runpath is None and obj.elf.rpath is not None:
                steps.append((VIA_RPATH, _search_dirs(split_path(obj.elf.rpath), _origin(obj), config)))
                did_executable |= executable is not None and obj.path == executable.path
        exe = executable
        if exe is not None and not did_executable and exe.elf.runpath is None and exe.elf.rpath is not None:
            steps.append((VIA_RPATH, _search_dirs(split_path(exe.elf.rpath), exe_origin, config)))
    steps.append((VIA_LD_LIBRARY_PATH, _search_dirs(config.ld_library_path, exe_origin, config)))
    if requester is not None and requester.elf.runpath is not None:
        steps.append((VIA_RUNPATH, _search_dirs(split_path(requester.elf.runpath), _origin(requester), config)))
    return steps


def _lookup(name, requester, chain, config, host, reader, loaded, preload_paths, executable):
    """_dl_map_object for an expanded name: loaded objects, a direct path, or the search."""
    if name in loaded:
        path = loaded[name]
        return Resolution(name, path, VIA_PRELOAD if path in preload_paths else VIA_LOADED, None, ()), None
    search = _Search(name, config, host, reader)
    if "/" in name:
        found = search.candidate(name, VIA_DIRECT)
        if found:
            return found
        return Resolution(name, None, VIA_MISSING, _not_found(name, search.other_class, host), ()), None
    for via, directories in _search_steps(requester, chain, config, executable):
        found = search.dirs(directories, via)
        if found:
            return found
    cached = config.cache.get(name)
    if cached:  # ld.so takes the cache's first entry for the host; a file it cannot use falls through
        found = search.candidate(cached[0], VIA_CACHE)
        if found:
            return found
    return search.dirs(config.default_dirs, VIA_DEFAULT) or search.missing()


def _host(config: LoaderConfig) -> tuple:
    return tuple(config.host) if config.host else host_identity()


def resolve_object(path: str, elf: ElfInfo, config: LoaderConfig, read_elf: Callable[[str], ElfInfo] = read_elf,
                   loaded: Optional[Mapping[str, str]] = None) -> list:
    """Resolve each NEEDED of an object outside the import graph: own RPATH/RUNPATH only; ``loaded`` (soname -> path)
    is what the process already has when the object is loaded, which ld.so matches first (VIA_LOADED)."""
    obj = LoadedObject(path, elf, None)
    host = _host(config)
    return [_resolve(name, obj, (), config, host, read_elf, dict(loaded or {}), set(), None)[0] for name in elf.needed]


# ---------------------------------------------------------------- simulation

def _file_id(path: str):
    """The identity ld.so compares to notice one file reached by two names."""
    try:
        stat = os.stat(path)
    except OSError:
        return path
    return (stat.st_dev, stat.st_ino)


class _Process:
    """The simulated process: loaded objects, the names they answer to, the program."""

    def __init__(self, config: LoaderConfig, reader: Callable, preloaded: Mapping[str, str]) -> None:
        self.config = config
        self.reader = reader
        self.host = _host(config)
        self.result = LoadResult([], {}, {}, [])
        self.names: Dict[str, str] = {}
        self.ids: Dict[object, str] = {}
        self.executable: Optional[LoadedObject] = None
        self.preload_paths = set(preloaded.values())
        for name, path in preloaded.items():
            self.names.setdefault(name, path)
            self.names.setdefault(path, path)
            self.ids.setdefault(_file_id(path), path)

    def add(self, obj: LoadedObject, name: str) -> None:
        self.result.order.append(obj.path)
        self.result.objects[obj.path] = obj
        for alias in (name, obj.path, obj.elf.soname):
            if alias:
                self.names.setdefault(alias, obj.path)
        self.ids.setdefault(_file_id(obj.path), obj.path)

    def chain(self, obj: LoadedObject) -> List[LoadedObject]:
        found, seen = [], {obj.path}
        while obj.loader is not None and obj.loader not in seen:
            obj = self.result.objects[obj.loader]
            seen.add(obj.path)
            found.append(obj)
        return found

    def resolve(self, name: str, requester: Optional[LoadedObject]):
        chain = self.chain(requester) if requester is not None else []
        return _resolve(name, requester, chain, self.config, self.host, self.reader, self.names,
                        self.preload_paths, self.executable)

    def load_new(self, name: str, resolution: Resolution, info: Optional[ElfInfo], requester):
        """Add a freshly found file unless it is a loaded file under another name; return it or None."""
        if info is None:
            return None, resolution
        existing = self.ids.get(_file_id(resolution.path))
        if existing is not None:
            self.names.setdefault(name, existing)
            return None, replace(resolution, path=existing)
        obj = LoadedObject(resolution.path, info, requester.path if requester is not None else None)
        self.add(obj, name)
        return obj, resolution

    def walk(self, queue: List[LoadedObject], entry: Optional[str], report: bool = True) -> List[LoadError]:
        """Load dependencies breadth-first, as _dl_map_object_deps does; return the failures."""
        errors = []
        while queue:
            obj = queue.pop(0)
            resolutions = []
            for name in obj.elf.needed:
                resolution, info = self.resolve(name, obj)
                new, resolution = self.load_new(name, resolution, info, obj)
                if new is not None:
                    queue.append(new)
                if resolution.error is not None:
                    errors.append(LoadError(entry or obj.path, obj.path, name, resolution.error))
                resolutions.append(resolution)
            if report:
                self.result.resolutions[obj.path] = resolutions
        return errors

    def load_executable(self, path: str) -> None:
        """Load the program and its dependencies (in ``order``, answering to their names).

        The program runs, so failures to model its own dependencies are
        tolerated and neither they nor its resolutions are reported.
        """
        try:
            info = self.reader(path)
        except (ElfError, OSError):
            return
        if not self.config.host:  # the process being modelled is the program's, not ours
            self.host = (info.elf_class, info.little_endian, info.machine)
        real = os.path.realpath(path)
        self.executable = LoadedObject(real, info, None)
        self.add(self.executable, path)
        self.walk([self.executable], None, report=False)

    def dlopen(self, entry: str) -> None:
        mark = len(self.result.order)
        resolution, info = self.resolve(entry, None)
        first, resolution = self.load_new(entry, resolution, info, None)
        if resolution.error is not None:
            self.result.errors.append(LoadError(entry, None, entry, resolution.error))
            return
        errors = self.walk([first], entry) if first is not None else []
        if errors:
            self.result.errors.extend(errors)
            self.unload(mark)

    def unload(self, mark: int) -> None:
        """Forget the objects loaded since ``mark`` (a failed dlopen unloads what it loaded)."""
        gone = set(self.result.order[mark:])
        self.result.unloaded.extend(self.result.order[mark:])
        del self.result.order[mark:]
        self.names = {name: path for name, path in self.names.items() if path not in gone}
        self.ids = {key: path for key, path in self.ids.items() if path not in gone}


def simulate_load(
    entry_points: Sequence[str],
    config: LoaderConfig,
    *,
    executable: Optional[str] = None,
    preloaded: Optional[Mapping[str, str]] = None,
    read_elf: Callable[[str], ElfInfo] = read_elf,
) -> LoadResult:
    """Load ``entry_points`` in order as dlopen would, each with its dependencies breadth-first.

    ``executable`` (the interpreter) is loaded first with its dependencies (not
    reported in ``resolutions``; without ``config.host`` its class and machine
    are the host's) and its RPATH ends every RPATH chain. ``preloaded`` maps
    sonames to paths of objects already in the process (taken as they are, not
    read). Unreadable or invalid objects become ``LoadError``s, never exceptions.
    """
    process = _Process(config, read_elf, preloaded or {})
    if executable:
        process.load_executable(executable)
    for entry in entry_points:
        process.dlopen(entry)
    return process.result
