# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the facts read from each ELF file and each dist-info folder (and the sha256 of each locked wheel at hand, and
the RECORD digest of each conflicting file an import loaded), kept between runs and keyed by the identity of the files
read.

Private to the gpuops.cuda_venv collection: not a public API.

A fleet diagnoses every venv on every pass; an unchanged venv must not cost every ELF header, every ``.nv_fatbin`` and
every RECORD again. An entry is reused only when each file's identity (device, inode, size, mtime, ctime) is the one
recorded (docs/CUDA_NOTES.md, File identity and racy reads; a dist-info's: the folder's and that of each file read_dist_info reads, or that it is absent): an
installer unlinks or renames (new inode), an edit in place changes mtime and ctime, and ctime cannot be set back. As git
does with racy entries, a file changed in the second the run that wrote the index began, or later, is read again: a
write later in that second, or while the run read the file, could keep mtime and ctime (the kernel's clock for them is
coarse). The index is JSON (never code: it lives in a folder of the venv), in the venv's
state folder; one that is corrupt, of another format, written by another version of the collection (whose readers may
answer otherwise) or for another venv (a copied state folder) is ignored and replaced. Only successful reads are kept:
an unreadable or invalid file is read, and fails, every time.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import time
from typing import Callable, Dict, Optional

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.collection import VERSION
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.record_hash import file_hexdigest
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.distributions import (
    DIST_INFO_FILES, Distribution, RecordEntry, read_dist_info)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.elf import ElfInfo, read_elf
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.fatbin import Kernels, read_kernels
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.record_check import hash_files
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.probe import CheckResult, ProbeResult

INDEX_NAME = "read-index.json"
# 1: racy from the second the index was written; 2: from the second its run began; 3: dist-info folders too, and each
# entry's identity a list of files' (1.1.0 development); 4: the last import probe and what it depended on; 5: the sha256 of
# each locked wheel at hand; 6: the RECORD digest of each conflicting file the import loaded
FORMAT = 6
_KINDS = ("elf", "kernels", "dists", "wheels", "digests")
_SECOND = 10 ** 9
_ELF_FIELDS = ("elf_class", "little_endian", "machine", "osabi", "elf_type", "soname", "needed", "rpath", "runpath")
_KERNEL_FIELDS = ("sass", "ptx", "section_size", "containers", "entries", "flags", "problem", "elsewhere", "empty")
_DIST_FIELDS = ("name", "key", "version", "installer", "requested", "direct_url", "requires_dist", "problems")


class DirectReader:
    """A read index's ``elf``, ``kernels`` and ``dist_info`` without the index (``read_index: false``): every file read,
    nothing kept."""

    elf = staticmethod(read_elf)
    kernels = staticmethod(read_kernels)
    dist_info = staticmethod(read_dist_info)

    @staticmethod
    def wheel_sha256(path: str) -> str:
        """A locked wheel's sha256, read once per identity in this process: a repair observes the venv before and
        after each batch, and a torch stack's wheels are about 5 GB to hash each time. A wheel changed in the second
        of the question or later is hashed again, as the read index's racy rule has it."""
        stamp = _stamp(path)
        if stamp is None or _newest([stamp]) >= time.time_ns() // _SECOND * _SECOND:
            return file_hexdigest(path)
        return _remembered_sha256(path, tuple(stamp))

    @staticmethod
    def record_digests(wanted: dict, digests: dict, workers: Optional[int] = None) -> set:
        """ReadIndex.record_digests without the index: every file hashed."""
        return hash_files(wanted, digests, workers)


def index_path(state_dir: str) -> str:
    return os.path.join(state_dir, INDEX_NAME)


class ReadIndex:
    """The index of one venv (``root``): ``elf``, ``kernels`` and ``dist_info`` have the contracts of ``read_elf``,
    ``read_kernels`` and ``read_dist_info``, answered from the index when the files are the ones it recorded."""

    def __init__(self, root: str, recorded: Optional[dict] = None, started_ns: int = 0, ignored: Optional[str] = None,
                 probe: Optional[dict] = None):
        self.root = root
        self._probe_recorded = probe  # the last probe: key, paths, identity, at, value (and its decoded result)
        self._probe_kept: Optional[dict] = None
        self.ignored = ignored  # why the index found was not used; None: none found, or used
        self._recorded = recorded or {kind: {} for kind in _KINDS}  # kind -> path -> (identity, stored, decoded)
        self._racy_from = started_ns // _SECOND * _SECOND
        self._started_ns = time.time_ns()  # before this run reads any file
        self._kept: Dict[str, dict] = {kind: {} for kind in _KINDS}
        self.reused = 0
        self.read = 0
        self.saved = False  # kept for the next run (_act/facts.py)
        self.note: Optional[str] = None  # why it was not

    def elf(self, path: str) -> ElfInfo:
        return self._answer("elf", path, _identity(path, ()), lambda: read_elf(path), _elf_value)

    def kernels(self, path: str) -> Optional[Kernels]:
        return self._answer("kernels", path, _identity(path, ()), lambda: read_kernels(path), _kernels_value)

    def dist_info(self, path: str, site: str) -> Distribution:
        found = self._answer("dists", path, _identity(path, DIST_INFO_FILES), lambda: read_dist_info(path, site), _dist_value)
        return found if isinstance(found, Distribution) else Distribution(dist_info=path, site_packages=site, **found)

    def wheel_sha256(self, path: str) -> str:
        """The sha256 (hex) of a locked wheel at hand (``_read/packaging/locked_bytes.py``): a torch wheel is read
        whole, about 2 s, so an unchanged one is answered from the index."""
        return self._answer("wheels", path, _identity(path, ()), lambda: file_hexdigest(path), str)

    def record_digests(self, wanted: dict, digests: dict, workers: Optional[int] = None) -> set:
        """Fill ``digests`` ({(path, algorithm): digest as RECORD writes it}) for ``wanted`` ({(path, algorithm):
        size}, the conflicting files an import loaded): from the index where the file's identity is the one recorded
        and not racy, the others hashed on ``workers`` CPUs (record_check.hash_files; default every one) and kept
        with the identity they had before they were read. The keys that could not be read. Hash mode never asks: it
        hashes every file."""
        todo, before = {}, {}
        for key, size in wanted.items():
            path, algorithm = key
            if key in digests:
                continue
            identity = _identity(path, ())
            entry = self._recorded["digests"].get(path)
            same = identity is not None and entry is not None and entry[0] == identity and entry[2][0] == algorithm
            if same and _newest(identity) < self._racy_from:
                self.reused += 1
                self._kept["digests"][path] = [identity, entry[1]]
                digests[key] = entry[2][1]
                continue
            todo[key], before[key] = size, identity
        failed = hash_files(todo, digests, workers)
        for (path, algorithm), identity in before.items():
            if identity is not None and (path, algorithm) not in failed:
                self.read += 1
                self._kept["digests"][path] = [identity, [algorithm, digests[(path, algorithm)]]]
        return failed

    def probe(self, key: dict, paths, run: Callable[[], ProbeResult], reuse: bool = True) -> ProbeResult:
        """The last import probe's result, ``reused_from`` its time, when it was made with this ``key`` (what was
        asked, the driver) and every file it depended on (``paths``, then what it loaded and imported) has the identity
        recorded, none of them racy; else (or without ``reuse``) ``run()``'s, kept with the identity of those files as
        they are after it."""
        recorded = self._probe_recorded
        if reuse and recorded is not None and recorded["key"] == key:
            identity = [_stamp(path) for path in recorded["paths"]]
            if identity == recorded["identity"] and _newest(identity) < self._racy_from:
                self._probe_kept = {k: recorded[k] for k in ("key", "paths", "identity", "at", "value")}
                return dataclasses.replace(recorded["result"], reused_from=recorded["at"])
        result = run()
        if result.timed_out or result.signal or not result.ran:  # an answer of this moment's load, not of the venv
            self._probe_kept = None
            return result
        depends = sorted(set(paths) | set(result.loaded) | set(result.sources))
        self._probe_kept = {"key": key, "paths": depends, "identity": [_stamp(path) for path in depends],
                            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self._started_ns / _SECOND)),
                            "value": dataclasses.asdict(result)}
        return result

    def _answer(self, kind: str, path: str, identity: Optional[list], read: Callable, encode: Callable):
        """The decoded entry of ``path`` when ``identity`` is the one recorded and not racy, else ``read()`` (kept,
        ``encode``d, unless it raises)."""
        if identity is None:
            return read()  # the reader says what is wrong with it, as without an index
        entry = self._recorded[kind].get(path)
        if entry is not None and entry[0] == identity and _newest(identity) < self._racy_from:
            self.reused += 1
            self._kept[kind][path] = [identity, entry[1]]
            return entry[2]
        value = read()
        self.read += 1
        self._kept[kind][path] = [identity, encode(value)]
        return value

    def as_json(self) -> bytes:
        """What ``save`` writes: the entries this run used or read (a removed file's leave the index)."""
        return json.dumps(dict(self._kept, format=FORMAT, version=VERSION, root=self.root, started_ns=self._started_ns,
                               probe=self._probe_kept), separators=(",", ":"), sort_keys=True).encode("utf-8")

    @property
    def changed(self) -> bool:
        """Whether the index to keep differs from the one found: a file read, or one the run no longer asked for."""
        probe_changed = self._probe_kept is not None and (self._probe_recorded is None or any(
            self._probe_kept[k] != self._probe_recorded[k] for k in ("key", "paths", "identity", "at")))
        return probe_changed or self.read > 0 or any(set(self._kept[kind]) != set(self._recorded[kind]) for kind in self._kept)

    def facts(self) -> dict:
        return {"reused": self.reused, "read": self.read, "ignored": self.ignored, "saved": self.saved, "note": self.note}


def load_index(state_dir: str, root: str) -> ReadIndex:
    """The index in ``state_dir`` for the venv ``root``; an empty one (saying why) when it is absent, unreadable,
    corrupt, of another format or another venv's."""
    try:
        with open(index_path(state_dir), "rb") as handle:
            data = json.loads(handle.read().decode("utf-8"))
    except FileNotFoundError:
        return ReadIndex(root)
    except (OSError, ValueError) as exc:
        return ReadIndex(root, ignored="unreadable or not JSON: %s" % (getattr(exc, "strerror", None) or exc))
    recorded = _decoded(data, root)
    if isinstance(recorded, str):
        return ReadIndex(root, ignored=recorded)
    return ReadIndex(root, recorded, data["started_ns"], probe=_probe_record(data.get("probe")))


def _decoded(data, root: str):
    """{kind: {path: (identity, stored, decoded)}} of a valid index, else why it is not one (a str)."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return "another format than %d" % FORMAT
    if data.get("version") != VERSION:
        return "written by another version of the collection (%s)" % (data.get("version"),)
    if data.get("root") != root:
        return "written for another venv (%s)" % (data.get("root"),)
    if not isinstance(data.get("started_ns"), int):
        return "no time its run began"
    recorded: Dict[str, dict] = {}
    for kind, decode in (("elf", _elf_info), ("kernels", _kernels_of), ("dists", _dist_fields), ("wheels", _sha256),
                         ("digests", _record_digest)):
        entries = data.get(kind)
        if not isinstance(entries, dict):
            return "no %s entries" % kind
        recorded[kind] = {}
        for path, entry in entries.items():
            try:
                ok = len(entry) == 2 and _valid_identity(entry[0])
                value = decode(entry[1]) if ok else _INVALID
            except (TypeError, ValueError, KeyError):
                value = _INVALID
            if value is _INVALID:
                return "a corrupt %s entry for %s" % (kind, path)
            recorded[kind][path] = (entry[0], entry[1], value)
    return recorded


_INVALID = object()


@functools.lru_cache(maxsize=256)
def _remembered_sha256(path: str, _stamp_then: tuple) -> str:
    return file_hexdigest(path)


def _sha256(value) -> str:
    if not (isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)):
        raise ValueError("not a sha256 hex digest")
    return value


def _record_digest(value) -> list:
    """[algorithm, digest as RECORD writes it (urlsafe base64, no padding)]."""
    shaped = isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) and v for v in value)
    if not shaped or not set(value[1]) <= _URLSAFE_BASE64:
        raise ValueError("not a RECORD digest")
    return value


_URLSAFE_BASE64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def _probe_record(value) -> Optional[dict]:
    """The recorded probe with its result decoded; None when absent or not one (the probe then runs)."""
    try:
        shapes = (isinstance(value["key"], dict), isinstance(value["at"], str), isinstance(value["paths"], list),
                  len(value["paths"]) == len(value["identity"]), all(isinstance(p, str) for p in value["paths"]),
                  all(stamp is None or _valid_stamp(stamp) for stamp in value["identity"]))
        if not all(shapes):
            return None
        fields = dict(value["value"])
        check = fields.pop("check", None)
        result = ProbeResult(**dict(fields, loaded=tuple(fields["loaded"]), sources=tuple(fields["sources"]),
                                    check=CheckResult(**dict(check, argv=tuple(check["argv"]))) if check else None))
    except (KeyError, TypeError, ValueError):
        return None
    return dict(value, result=result)


def _stamp(path: str) -> Optional[list]:
    """[device, inode, size, mtime_ns, ctime_ns] of ``path``, or None when it is absent or cannot be stat'ed."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _identity(path: str, inside: tuple) -> Optional[list]:
    """[stamp of ``path``] and, for each name of ``inside``, the stamp of that file in it or None where it is absent;
    a stamp is [device, inode, size, mtime_ns, ctime_ns]. None when ``path``, or a file that is there, cannot be
    stat'ed: it is read, not answered."""
    found = []
    for name in ("",) + inside:
        try:
            st = os.stat(os.path.join(path, name) if name else path)
        except (FileNotFoundError, NotADirectoryError):
            if not name:
                return None
            found.append(None)
            continue
        except OSError:
            return None
        found.append([st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns])
    return found


def _newest(identity: list) -> int:
    return max((max(stamp[3], stamp[4]) for stamp in identity if stamp is not None), default=0)


def _valid_identity(identity) -> bool:
    return isinstance(identity, list) and bool(identity) and identity[0] is not None and all(
        stamp is None or _valid_stamp(stamp) for stamp in identity)


def _valid_stamp(stamp) -> bool:
    return isinstance(stamp, list) and len(stamp) == 5 and all(isinstance(n, int) for n in stamp)


def _elf_value(info: ElfInfo) -> list:
    return [getattr(info, name) for name in _ELF_FIELDS]


def _elf_info(value):
    if not isinstance(value, list) or len(value) != len(_ELF_FIELDS):
        return _INVALID
    fields = dict(zip(_ELF_FIELDS, value))
    if not all(isinstance(fields[k], int) for k in ("elf_class", "machine", "osabi", "elf_type")) \
            or not isinstance(fields["needed"], list) or not all(isinstance(n, str) for n in fields["needed"]) \
            or not all(fields[k] is None or isinstance(fields[k], str) for k in ("soname", "rpath", "runpath")):
        return _INVALID
    return ElfInfo(**dict(fields, little_endian=bool(fields["little_endian"]), needed=tuple(fields["needed"])))


def _kernels_value(kernels: Optional[Kernels]):
    if kernels is None:
        return None
    return {name: getattr(kernels, name) for name in _KERNEL_FIELDS}


def _kernels_of(value):
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != set(_KERNEL_FIELDS) or not isinstance(value["flags"], dict) \
            or not all(isinstance(a, int) for a in value["sass"] + value["ptx"]) \
            or not all(isinstance(value[k], int) for k in ("section_size", "containers", "entries", "elsewhere", "empty")):
        return _INVALID
    return Kernels(**dict(value, sass=tuple(value["sass"]), ptx=tuple(value["ptx"]),
                          flags={k: tuple(v) for k, v in value["flags"].items()}))


def _dist_value(dist: Distribution) -> dict:
    value = {name: getattr(dist, name) for name in _DIST_FIELDS}
    value["entries"] = [[e.path for e in dist.entries], [e.algorithm for e in dist.entries],
                        [e.digest for e in dist.entries], [e.size for e in dist.entries]]
    return value


_record_entry = functools.partial(tuple.__new__, RecordEntry)  # RecordEntry(*row) in C: a venv has tens of thousands
_STR_OR_NONE = frozenset((str, type(None)))
_INT_OR_NONE = frozenset((int, type(None)))


def _dist_fields(value):
    """Distribution's fields less the folder and its site-packages (dist_info() adds them), or _INVALID."""
    if not isinstance(value, dict) or set(value) != set(_DIST_FIELDS) | {"entries"}:
        return _INVALID
    texts = [value[k] for k in ("name", "key", "version")]
    lists = [value[k] for k in ("requires_dist", "problems")]
    columns = value["entries"]
    if not all(isinstance(t, str) for t in texts) or not isinstance(value["installer"], (str, type(None))) \
            or not all(isinstance(value[k], bool) for k in ("requested", "direct_url")) \
            or not all(isinstance(v, list) and all(isinstance(t, str) for t in v) for v in lists) \
            or not isinstance(columns, list) or len(columns) != 4 or not all(isinstance(c, list) for c in columns) \
            or len({len(c) for c in columns}) != 1 or not set(map(type, columns[0])) <= {str} \
            or not set(map(type, columns[1])) <= _STR_OR_NONE or not set(map(type, columns[2])) <= _STR_OR_NONE \
            or not set(map(type, columns[3])) <= _INT_OR_NONE:
        return _INVALID
    fields = {k: value[k] for k in _DIST_FIELDS}
    fields.update(requires_dist=tuple(fields["requires_dist"]), problems=tuple(fields["problems"]),
                  entries=tuple(map(_record_entry, zip(*columns))))
    return fields
