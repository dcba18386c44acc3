# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The files the facts engine hashes: every regular file a RECORD lists with a hash, once.

Benchmark support for gpuops.cuda_venv: not part of the collection's API.
"""

from __future__ import annotations

import csv
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import List


@dataclass(frozen=True)
class FileSet:
    """The hashed files of a venv: NUL-separated list on disk (for xargs and the hash child), count, bytes."""

    list_path: Path
    count: int
    total_bytes: int
    distributions: int
    top_folders: tuple = ()  # ((folder, bytes), ...), largest first

    def describe(self) -> str:
        shares = ", ".join("%s/ %.0f%%" % (name, 100.0 * size / self.total_bytes)
                           for name, size in self.top_folders[:3] if size >= self.total_bytes / 10)
        return "%d distributions, %d RECORD-listed files with a hash, %.1f MiB%s" % (
            self.distributions, self.count, self.total_bytes / 2**20, " (%s)" % shares if shares else "")


def site_packages(venv: Path) -> Path:
    found = sorted(Path(venv).glob("lib/python*/site-packages"))
    if len(found) != 1:
        raise ValueError("%s: expected one lib/python*/site-packages, found %d" % (venv, len(found)))
    return found[0]


def record_files(venv: Path, list_path: Path) -> FileSet:
    """Write the list of ``venv``'s RECORD-listed, hashed, regular files to ``list_path``."""
    site = site_packages(venv)
    seen, paths, total, dists, folders = set(), [], 0, 0, {}
    for record in sorted(site.glob("*.dist-info/RECORD")):
        dists += 1
        with open(record, newline="", encoding="utf-8") as handle:
            for fields in csv.reader(handle):
                if len(fields) < 2 or not fields[1]:
                    continue
                path = os.path.normpath(os.path.join(site, fields[0]))
                if path in seen:
                    continue
                seen.add(path)
                try:
                    info = os.stat(path)
                except OSError:
                    continue
                if stat.S_ISREG(info.st_mode):
                    paths.append(path)
                    total += info.st_size
                    top = os.path.relpath(path, site).split(os.sep, 1)[0]
                    folders[top] = folders.get(top, 0) + info.st_size
    _write_list(list_path, paths)
    top_folders = tuple(sorted(folders.items(), key=lambda item: -item[1]))
    return FileSet(list_path, len(paths), total, dists, top_folders)


def _write_list(list_path: Path, paths: List[str]) -> None:
    list_path.parent.mkdir(parents=True, exist_ok=True)
    with open(list_path, "wb") as handle:
        for path in paths:
            handle.write(path.encode() + b"\0")
