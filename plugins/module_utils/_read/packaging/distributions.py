# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read installed distributions (dist-info, egg-info) and their RECORD files from site-packages.

Private to the gpuops.cuda_venv collection: not a public API.

Spec: https://packaging.python.org/en/latest/specifications/recording-installed-packages/
Reading never fails on one bad distribution: what could not be read is kept,
worded exactly, in ``Distribution.problems``.
"""

from __future__ import annotations

import csv
import hashlib
import os
import re
from dataclasses import dataclass, replace
from typing import NamedTuple, Optional

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import canonical_name
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.venv_paths import VenvError, confine, confine_folder

_MIB = 1024 * 1024
METADATA_LIMIT = _MIB
RECORD_LIMIT = 64 * _MIB
_SMALL_LIMIT = 64 * 1024
_SIZE = re.compile(r"^[0-9]+$")
_ALGORITHMS = frozenset(hashlib.algorithms_available)


DIST_INFO_FILES = ("METADATA", "RECORD", "INSTALLER", "REQUESTED", "direct_url.json")  # what read_dist_info reads


class RecordEntry(NamedTuple):
    """One RECORD row: the path as written, its hash (urlsafe base64, no padding) and size. A named tuple: a venv
    has tens of thousands, made in half the time of a frozen dataclass's."""

    path: str
    algorithm: Optional[str]
    digest: Optional[str]
    size: Optional[int]


@dataclass(frozen=True)
class Distribution:
    """One installed distribution as its metadata folder describes it."""

    name: str
    key: str
    version: str
    dist_info: str
    site_packages: str
    installer: Optional[str]
    requested: bool
    direct_url: bool
    requires_dist: tuple
    entries: tuple
    problems: tuple

    @property
    def label(self) -> str:
        return ("%s %s" % (self.name, self.version)).strip()


def label_key(label: str) -> str:
    """The key of the distribution a label ("name version", see Distribution.label) names."""
    return canonical_name(label.split(" ", 1)[0])


@dataclass(frozen=True)
class Metadata:
    """The Name, Version and Requires-Dist headers of METADATA (or PKG-INFO); None where a header is absent or unreadable."""

    name: Optional[str] = None
    version: Optional[str] = None
    requires_dist: tuple = ()


def read_distributions(site_packages_dirs, dist_info_reader=None) -> list:
    """Every *.dist-info and *.egg-info in the given dirs, duplicates kept, sorted by (key, version, path).
    ``dist_info_reader``: read_dist_info's contract (a read index's answers from an earlier run); default read_dist_info."""
    read_one = dist_info_reader or read_dist_info
    dists = []
    for site in site_packages_dirs:
        try:
            names = sorted(os.listdir(site))
        except OSError as exc:
            raise VenvError("cannot list %s: %s; check its permissions" % (site, exc.strerror or exc)) from None
        for name in names:
            path = os.path.join(site, name)
            if name.endswith(".dist-info") and os.path.isdir(path):
                dists.append(read_one(path, site))
            elif name.endswith(".egg-info"):
                dists.append(_read_egg_info(path, site))
    return sorted(dists, key=lambda d: (d.key, d.version, d.dist_info))


def entry_location(dist: Distribution, entry: RecordEntry, venv_root: str, cache: Optional[dict] = None) -> tuple:
    """(absolute path, None) for a RECORD entry, or (None, problem) when it would leave the venv.

    Entries are relative to site-packages (scripts come as ../../../bin/x).
    PEP 376 allows absolute entries; they are kept only when inside the venv.
    ``cache``: see confine(); pass one dict for a pass over many entries.
    """
    location = confine(os.path.join(dist.site_packages, entry.path), venv_root, cache) if entry.path else None
    if location is None:
        return None, "RECORD entry '%s' leaves the venv" % entry.path
    return location, None


def locate_entries(dists, venv_root: str, real: Optional[dict] = None) -> dict:
    """{dist_info: [(entry, absolute path or None, problem or None), ...]} in RECORD order: entry_location()
    for every entry of every distribution, each directory normalised and confined once (one pass shares it).
    ``real``: a dict that keeps each folder's real path (venv_layout.real_path's memo), for a caller that resolves more."""
    root = os.path.normpath(os.path.abspath(venv_root))
    real = {} if real is None else real  # path -> realpath, shared with entry_location's cache
    by_site: dict = {}  # site-packages -> {RECORD dirname: confined absolute folder and "/", or None}
    located = {}
    for dist in dists:
        rows = []
        folders = by_site.setdefault(dist.site_packages, {})
        for entry in dist.entries:
            head, _sep, name = entry.path.rpartition("/")
            if name in ("", ".", ".."):
                rows.append((entry,) + entry_location(dist, entry, root, real))
                continue
            folder = folders.get(head, "")
            if folder == "":
                folder = folders[head] = _slashed(confine_folder(os.path.join(root, dist.site_packages, head), root, real))
            if folder is None:
                rows.append((entry, None, "RECORD entry '%s' leaves the venv" % entry.path))
            else:
                rows.append((entry, folder + name, None))
        located[dist.dist_info] = rows
    return located


def _slashed(folder: Optional[str]) -> Optional[str]:
    return folder if folder is None or folder.endswith("/") else folder + "/"


def read_dist_info(path: str, site: str) -> Distribution:
    """The distribution the dist-info folder ``path`` in ``site`` describes: its METADATA, RECORD and INSTALLER, and
    whether REQUESTED and direct_url.json are there (DIST_INFO_FILES: what it reads)."""
    problems = []
    headers = _read_metadata(os.path.join(path, "METADATA"), "METADATA", problems)
    entries = _read_record(os.path.join(path, "RECORD"), problems)
    installer = _read_small(os.path.join(path, "INSTALLER"))
    return _build(
        path, site, headers, entries, problems,
        installer=installer.strip().splitlines()[0] if installer and installer.strip() else None,
        requested=os.path.isfile(os.path.join(path, "REQUESTED")),
        direct_url=os.path.isfile(os.path.join(path, "direct_url.json")),
    )


def _read_egg_info(path: str, site: str) -> Distribution:
    """setuptools' legacy folder (or single PKG-INFO file): no RECORD, no hashes."""
    problems = ["egg-info: no RECORD"]
    if not os.path.isdir(path):
        headers = _read_metadata(path, "PKG-INFO", problems)
        return _build(path, site, headers, (), problems + ["installed-files.txt is missing"])
    headers = _read_metadata(os.path.join(path, "PKG-INFO"), "PKG-INFO", problems)
    if headers is not None and not headers.requires_dist:
        requires = _read_small(os.path.join(path, "requires.txt"))
        headers = replace(headers, requires_dist=tuple(_requires_txt(requires or "")))
    listing = _read_small(os.path.join(path, "installed-files.txt"), limit=RECORD_LIMIT)
    if listing is None:
        problems.append("installed-files.txt is missing")
    # installed-files.txt is relative to the egg-info folder; make it relative to site-packages like RECORD.
    base = os.path.basename(path)
    entries = tuple(
        RecordEntry(os.path.normpath(os.path.join(base, line.strip())), None, None, None)
        for line in (listing or "").splitlines() if line.strip() and "\x00" not in line
    )
    return _build(path, site, headers, entries, problems)


def _build(path, site, headers, entries, problems, installer=None, requested=False, direct_url=False) -> Distribution:
    folder_name, folder_version = _from_folder(os.path.basename(path))
    headers = headers or Metadata()
    name = headers.name or folder_name
    return Distribution(
        name=name,
        key=canonical_name(name),
        version=headers.version or folder_version,
        dist_info=path,
        site_packages=site,
        installer=installer,
        requested=requested,
        direct_url=direct_url,
        requires_dist=headers.requires_dist,
        entries=tuple(entries),
        problems=tuple(problems),
    )


def _from_folder(folder: str) -> tuple:
    """("name", "version") from "name-version.dist-info" or "name-version-py3.9.egg-info"."""
    stem = folder.rsplit(".", 1)[0]
    parts = stem.split("-")
    if len(parts) >= 3 and parts[-1].startswith("py"):
        parts = parts[:-1]
    if len(parts) < 2:
        return stem, ""
    return "-".join(parts[:-1]), parts[-1]


def _read_metadata(path: str, what: str, problems: list) -> Optional[Metadata]:
    """Name, Version and Requires-Dist headers, or None when the file cannot be read at all."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(METADATA_LIMIT + 1)
    except FileNotFoundError:
        problems.append("%s is missing" % what)
        return None
    except OSError as exc:
        problems.append("%s is unreadable: %s" % (what, exc.strerror or exc))
        return None
    return parse_metadata(raw, what, problems)


def parse_metadata(raw: bytes, what: str, problems: list) -> Metadata:
    """Name, Version and Requires-Dist headers of METADATA (or PKG-INFO) bytes."""
    if len(raw) > METADATA_LIMIT:
        problems.append("%s larger than 1 MiB: read the first 1 MiB" % what)
        raw = raw[:METADATA_LIMIT]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        # Name and Version are ASCII in practice; a stray byte in a description must not hide them.
        problems.append("%s is not UTF-8" % what)
        text = raw.decode("utf-8", errors="replace")
    # imported here: an unchanged venv's METADATA is answered from the read index
    from email.parser import Parser  # pylint: disable=import-outside-toplevel
    message = Parser().parsestr(text, headersonly=True)
    found = {}
    for key in ("name", "version"):
        value = _unfold(message.get(key) or "")
        if value and "\ufffd" not in value:
            found[key] = value
    return Metadata(requires_dist=tuple(_unfold(v) for v in message.get_all("Requires-Dist") or ()), **found)


def _unfold(value) -> str:
    return re.sub(r"\s*\n\s*", " ", str(value)).strip()


def _read_small(path: str, limit: int = _SMALL_LIMIT) -> Optional[str]:
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", errors="replace")
    except OSError:
        return None


def _requires_txt(text: str) -> list:
    """setuptools' requires.txt ("[extra:marker]" sections) as Requires-Dist strings."""
    result = []
    extra, marker = "", ""
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            extra, _sep, marker = line[1:-1].partition(":")
            continue
        conditions = ["(%s)" % marker] if marker else []
        if extra:
            conditions.append('extra == "%s"' % extra)
        result.append("%s; %s" % (line, " and ".join(conditions)) if conditions else line)
    return result


def _read_record(path: str, problems: list) -> tuple:
    try:
        with open(path, "rb") as handle:
            raw = handle.read(RECORD_LIMIT + 1)
    except FileNotFoundError:
        problems.append("RECORD is missing")
        return ()
    except OSError as exc:
        problems.append("RECORD is unreadable: %s" % (exc.strerror or exc))
        return ()
    return parse_record(raw, problems)


def parse_record(raw: bytes, problems: list) -> tuple:
    """The RecordEntry rows of a RECORD's bytes (an installed one, or one read from a wheel); what is wrong with
    it goes to ``problems``, worded with its line number."""
    if len(raw) > RECORD_LIMIT:
        problems.append("RECORD larger than 64 MiB: read the first 64 MiB")
        raw = raw[:RECORD_LIMIT].rsplit(b"\n", 1)[0]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        # surrogateescape keeps the exact on-disk bytes of such paths (os.fsencode gives them back).
        problems.append("RECORD is not UTF-8")
        text = raw.decode("utf-8", errors="surrogateescape")
    entries = []
    # One line at a time: an error names its line and the rest is still read. Paths never hold newlines.
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            # without a quote, CSV is a split on commas (the common line: no path of a wheel needs quoting)
            row = line.split(",") if '"' not in line else next(csv.reader([line], strict=True))
        except csv.Error as exc:
            problems.append("RECORD line %d: bad CSV: %s" % (number, exc))
            continue
        entry = _common_entry(row) or _record_entry(row, number, problems)
        if entry is not None:
            entries.append(entry)
    return tuple(entries)


def _common_entry(row: list) -> Optional[RecordEntry]:
    """The entry of a row with nothing to say about it (three fields, a known hash or none, a size or none), else
    None: _record_entry then reads it and says what is wrong."""
    if len(row) != 3:
        return None
    path, hash_, size = row
    if not path or "\x00" in path or (size and not (size.isascii() and size.isdigit())):
        return None
    if not hash_:
        return RecordEntry(path, None, None, int(size) if size else None)
    algorithm, sep, digest = hash_.partition("=")
    digest = digest.rstrip("=")
    if not sep or not digest or algorithm not in _ALGORITHMS:
        return None
    return RecordEntry(path, algorithm, digest, int(size) if size else None)


def _record_entry(row: list, number: int, problems: list) -> Optional[RecordEntry]:
    if len(row) > 3:
        problems.append("RECORD line %d: %d fields, expected 3" % (number, len(row)))
    path, hash_, size = (list(row) + ["", ""])[:3]
    if not path:
        problems.append("RECORD line %d: empty path" % number)
        return None
    if "\x00" in path:
        problems.append("RECORD line %d: path contains a NUL byte: %r (ignored)" % (number, path))
        return None
    algorithm, digest = None, None
    if hash_:
        algorithm, sep, digest = hash_.partition("=")
        if not sep or not algorithm or not digest.rstrip("="):
            problems.append("RECORD line %d: bad hash %r" % (number, hash_))
            algorithm, digest = None, None
        else:
            digest = digest.rstrip("=")
            if algorithm not in hashlib.algorithms_available:
                problems.append("RECORD line %d: unknown hash algorithm %r: file not verified by hash" % (number, algorithm))
    value = None
    if size:
        if _SIZE.match(size):
            value = int(size)
        else:
            problems.append("RECORD line %d: bad size %r" % (number, size))
    return RecordEntry(path, algorithm, digest, value)
