# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""When each distribution was installed: the span from the first to the last file its install wrote.

Private to the gpuops.cuda_venv collection: not a public API.

Measured with pip 25 and uv 0.13 (docs/FINDINGS.md, CONTAMINATION_SOURCE):
- pip writes every file fresh, one distribution after another: the package files, then it byte-compiles, then
  INSTALLER, REQUESTED, direct_url.json, and RECORD last. Its span runs from the oldest of its files to the
  newest of those it writes last. A file does not count when it cannot be this install's: a ``.pyc`` (a cache
  Python rewrites), a path another distribution's RECORD also lists (the last writer's time), a size other than
  RECORD's, a time after the install's end (a hand edit, a moved venv's rewritten script).
- uv links the package files, METADATA and WHEEL from its cache: they keep the cache's time (often an earlier
  run's). Only what it writes at install carries the install's time: INSTALLER, REQUESTED, direct_url.json,
  uv_cache.json, RECORD and the dist-info folder. Any installer but pip is read that way.
The times come from the RECORD check's stats (``record_check.check_all(stats=...)``): no file is stat'ed twice.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Dict, Optional

FUTURE_SLACK = 300.0  # seconds a time may lie after this host's clock (another host's clock wrote it) before it is a jump
_ORDER_SLACK = 1.0  # RECORD written more than this before INSTALLER: the times are out of order (RECORD comes last)
OWN_FILES = ("INSTALLER", "REQUESTED", "direct_url.json", "uv_cache.json", "RECORD")  # written at install, by name
WRITES_EVERY_FILE = frozenset(("pip",))  # installers whose package files carry the install's time


@dataclass(frozen=True)
class InstallStamp:
    """The install of one distribution as its files tell it: from ``time`` to ``end``."""

    time: Optional[float]  # seconds since the epoch of the first file it wrote; None when nothing tells it
    evidence: str  # what the times were read from
    problem: Optional[str] = None  # why the time cannot be trusted (then time is None)
    end: Optional[float] = None  # the last file it wrote (None: ``time``)

    @property
    def until(self) -> Optional[float]:
        return self.time if self.end is None else self.end


def read_stamps(dists, locations: dict, stats: Optional[dict] = None, now: Optional[float] = None) -> Dict[str, InstallStamp]:
    """{dist_info: InstallStamp} for every distribution. ``locations``: ``locate_entries(dists, root)``; ``stats``:
    {absolute path: os.stat_result, None (absent) or OSError}, as ``check_all`` filled it (paths not in it are
    stat'ed into it); ``now``: this host's clock (a time after it is a jump)."""
    now = time.time() if now is None else now
    stats = {} if stats is None else stats
    listed: Dict[str, int] = {}
    for rows in locations.values():
        for _entry, loc, _problem in rows:
            if loc is not None:
                listed[loc] = listed.get(loc, 0) + 1
    return {dist.dist_info: _stamp(dist, locations.get(dist.dist_info, []), listed, stats, now) for dist in dists}


def _stamp(dist, rows, listed, stats, now) -> InstallStamp:
    if not dist.dist_info.endswith(".dist-info"):
        folder = _mtime(dist.dist_info, stats)
        return _checked(folder, folder, "egg-info mtime", None, now)
    folder_name = os.path.basename(dist.dist_info)
    own = {}
    for entry, loc, _problem in rows:
        head, _sep, name = entry.path.rpartition("/")
        if head == folder_name and name in OWN_FILES and loc is not None:
            own[name] = loc
    own_times = {name: _mtime(own.get(name) or os.path.join(dist.dist_info, name), stats) for name in OWN_FILES}
    own_times = {name: t for name, t in own_times.items() if t is not None}
    folder_time = _mtime(dist.dist_info, stats)
    if folder_time is not None:
        own_times["folder"] = folder_time
    if not own_times:
        return InstallStamp(None, "", "no INSTALLER, RECORD or dist-info folder time can be read")
    start, end = min(own_times.values()), max(own_times.values())
    evidence = "the files %s writes into its dist-info" % (dist.installer or "its installer")
    if dist.installer in WRITES_EVERY_FILE:
        written = [t for t in (_written(entry, loc, listed, stats) for entry, loc, _p in rows) if t is not None]
        start = min([t for t in written if t <= end + _ORDER_SLACK] + [start])
        evidence = "every file pip wrote"
    return _checked(start, end, evidence, own_times.get("INSTALLER"), now, own_times.get("RECORD"))


def _written(entry, loc, listed, stats) -> Optional[float]:
    """The mtime of a file this install wrote, or None when it may be another writer's."""
    if loc is None or listed.get(loc, 0) != 1 or entry.path.endswith(".pyc"):
        return None
    found = _stat(loc, stats)
    if found is None or isinstance(found, OSError) or (entry.size is not None and found.st_size != entry.size):
        return None
    return found.st_mtime


def _checked(start, end, evidence, installer, now, record=None) -> InstallStamp:
    if start is None:
        return InstallStamp(None, "", "no %s can be read" % evidence)
    if end > now + FUTURE_SLACK:
        return InstallStamp(None, evidence, "the install's last write (%s) is at %s, after this host's clock (%s): a clock jumped" % (
            evidence, iso_time(end), iso_time(now)))
    if record is not None and installer is not None and record < installer - _ORDER_SLACK:
        return InstallStamp(None, evidence, "RECORD (%s) is older than INSTALLER (%s), which installers write first: "
                            "the times are out of order" % (iso_time(record), iso_time(installer)))
    return InstallStamp(start, evidence, None, end)


def _stat(path: str, stats: dict):
    if path not in stats:
        try:
            stats[path] = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            stats[path] = None
        except OSError as exc:
            stats[path] = exc
    return stats[path]


def _mtime(path: str, stats: dict) -> Optional[float]:
    found = _stat(path, stats)
    return None if found is None or isinstance(found, OSError) else found.st_mtime


def iso_time(seconds: float) -> str:
    """ISO 8601 in UTC, to the millisecond: 2026-12-03T18:47:38.123Z."""
    whole = int(seconds // 1)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + ".%03dZ" % int((seconds - whole) * 1000)
