# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""When each distribution was installed: the span from the first to the last file its install wrote.

Private to the gpuops.cuda_venv collection: not a public API.

Measured with pip 25 and uv 0.13 (docs/CUDA_NOTES.md, What pip and uv record; docs/FINDINGS.md, CONTAMINATION_SOURCE):
- pip writes every file fresh, one distribution after another: the package files, then it byte-compiles, then
  INSTALLER, REQUESTED, direct_url.json, and RECORD last. Its span runs from the oldest of its files to the
  newest of those it writes last. A file does not count when it cannot be this install's: a ``.pyc`` (a cache
  Python rewrites), a path another distribution's RECORD also lists unless this one was installed last (the last
  writer's time), a size other than RECORD's, a time more than a second after the install's end (a hand edit, a
  rewritten script). A file written after INSTALLER within that second puts the times out of order: a copy wrote
  the package after the dist-info (the span is kept, with the problem).
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

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.record_check import listed_paths

FUTURE_SLACK = 300.0  # seconds a time may lie after this host's clock (another host's clock wrote it) before it is a jump
_ORDER_SLACK = 1.0  # RECORD written more than this before INSTALLER: the times are out of order (RECORD comes last)
_TICK = 0.01  # seconds of a coarse clock: a file pip wrote before INSTALLER may carry INSTALLER's tick
OWN_FILES = ("INSTALLER", "REQUESTED", "direct_url.json", "uv_cache.json", "RECORD")  # written at install, by name
WRITES_EVERY_FILE = frozenset(("pip",))  # installers whose package files carry the install's time


@dataclass(frozen=True)
class InstallStamp:
    """The install of one distribution as its files tell it: from ``time`` to ``end``."""

    time: Optional[float]  # seconds since the epoch of the first file it wrote; None when nothing tells it
    evidence: str  # what the times were read from
    problem: Optional[str] = None  # why the times cannot be trusted: time is None, or kept where they are out of order
    end: Optional[float] = None  # the last file it wrote (None: ``time``)

    @property
    def until(self) -> Optional[float]:
        return self.time if self.end is None else self.end


def read_stamps(dists, locations: dict, stats: Optional[dict] = None, now: Optional[float] = None,
                shared: Optional[dict] = None) -> Dict[str, InstallStamp]:
    """{dist_info: InstallStamp} for every distribution. ``locations``: ``locate_entries(dists, root)``; ``stats``:
    {absolute path: os.stat_result, None (absent) or OSError}, as ``check_all`` filled it (paths not in it are
    stat'ed into it); ``now``: this host's clock (a time after it is a jump); ``shared``: the second half of
    ``listed_paths(dists, locations)``, when the caller has it."""
    now = time.time() if now is None else now
    stats = {} if stats is None else stats
    own = {dist.dist_info: _own_times(dist, stats) for dist in dists}
    if shared is None:
        shared = listed_paths(dists, locations)[1]
    shared = {loc: [dist.dist_info for dist, _entry in pairs] for loc, pairs in shared.items()}
    ends = {key: max(times.values()) for key, times in own.items() if times}
    return {dist.dist_info: _stamp(dist, own[dist.dist_info], locations.get(dist.dist_info, []), shared, ends, stats, now)
            for dist in dists}


def _own_times(dist, stats) -> Dict[str, float]:
    """{name: mtime} of what the installer writes into the dist-info by name, and of the folder ("folder"); the paths
    are those check_all stat'ed when RECORD lists them (the dist-info's own folder and the name)."""
    if not dist.dist_info.endswith(".dist-info"):
        folder = _mtime(dist.dist_info, stats)
        return {} if folder is None else {"folder": folder}
    found = {name: _mtime(os.path.join(dist.dist_info, name), stats) for name in OWN_FILES}
    found["folder"] = _mtime(dist.dist_info, stats)
    return {name: t for name, t in found.items() if t is not None}


def _stamp(dist, own, rows, shared, ends, stats, now) -> InstallStamp:
    if not dist.dist_info.endswith(".dist-info"):
        return _checked(own.get("folder"), own.get("folder"), "egg-info mtime", None, now)
    if not own:
        return InstallStamp(None, "", "no INSTALLER, RECORD or dist-info folder time can be read")
    start, end = min(own.values()), max(own.values())
    evidence = "the files %s writes into its dist-info" % (dist.installer or "its installer")
    after = None
    if dist.installer in WRITES_EVERY_FILE:
        written = _written(dist, rows, shared, ends, stats)
        limit = end + _ORDER_SLACK
        start = min([t for t, _path in written if t <= limit] + [start])
        evidence = "every file pip wrote"
        installer = own.get("INSTALLER")
        # a file written after INSTALLER (by more than a tick) and no later than the install's end
        low = limit if installer is None else installer + _TICK  # no INSTALLER: nothing is late
        late = [path for t, path in written if low < t <= limit and path.rpartition("/")[2] not in OWN_FILES]
        after = late[0] if late else None
    stamp = _checked(start, end, evidence, own.get("INSTALLER"), now, own.get("RECORD"))
    if after is not None and stamp.problem is None:
        return InstallStamp(start, evidence, "%s was written after INSTALLER (%s), which pip writes after every file: the "
                            "times are out of order (a copy reset them?)" % (after, iso_time(own["INSTALLER"])), end)
    return stamp


def _written(dist, rows, shared, ends, stats) -> list:
    """(mtime, RECORD path) of each file this install wrote, in RECORD order, less those whose time tells nothing: a
    ``.pyc``, a file missing or of another size, and a path other distributions list too (``shared``) unless this
    one was installed last (its writer)."""
    mine = ends.get(dist.dist_info)
    written = []
    for entry, loc, _problem in rows:
        path = entry.path
        if loc is None or path.endswith(".pyc"):
            continue
        others = shared.get(loc)
        if others and (mine is None or any(ends.get(o, mine) > mine for o in others)):
            continue
        found = stats[loc] if loc in stats else _stat(loc, stats)
        if found is not None and not isinstance(found, OSError) and (entry.size is None or found.st_size == entry.size):
            written.append((found.st_mtime, path))
    return written


def _checked(start, end, evidence, installer, now, record=None) -> InstallStamp:
    if start is None:
        return InstallStamp(None, "", "no %s can be read" % evidence)
    if end > now + FUTURE_SLACK:
        return InstallStamp(None, evidence, "the install's last write (%s) is at %s, after this host's clock (%s): a clock jumped" % (
            evidence, iso_time(end), iso_time(now)))
    if record is not None and installer is not None and record < installer - _ORDER_SLACK:
        return InstallStamp(start, evidence, "RECORD (%s) is older than INSTALLER (%s), which installers write first: "
                            "the times are out of order" % (iso_time(record), iso_time(installer)), end)
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
