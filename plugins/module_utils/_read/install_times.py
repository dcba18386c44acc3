# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""When each distribution was installed: the times of what the installer itself writes into its dist-info.

Private to the gpuops.cuda_venv collection: not a public API.

Measured with pip 25 and uv 0.13 (docs/FINDINGS.md, CONTAMINATION_SOURCE): both write INSTALLER and RECORD
fresh at install (one link, the install's time); uv hard-links METADATA, WHEEL and every package file from
its cache, so their mtime is the cache's and their ctime moves whenever another venv links them. INSTALLER
is written once and never rewritten (a repair's RECORD trim rewrites RECORD), so its mtime is the install
time; RECORD's, then the folder's, stand in when it is missing. Costs two stat calls per dist-info.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Dict, Optional

# RECORD written more than this before INSTALLER: the times are out of order (installers write INSTALLER first).
_ORDER_SLACK = 1.0


@dataclass(frozen=True)
class InstallStamp:
    """The install time of one distribution as its dist-info tells it."""

    time: Optional[float]  # seconds since the epoch; None when nothing tells it
    evidence: str  # "INSTALLER mtime", "RECORD mtime", "dist-info folder mtime", "egg-info mtime" or ""
    problem: Optional[str] = None  # why the time cannot be trusted (then time is None)
    size: int = 0  # bytes RECORD lists: how long writing them may take


def read_stamps(dists, now: Optional[float] = None) -> Dict[str, InstallStamp]:
    """{dist_info: InstallStamp} for every distribution; ``now``: this host's clock (a time after it is a jump)."""
    now = time.time() if now is None else now
    return {dist.dist_info: _stamp(dist, now) for dist in dists}


def _stamp(dist, now: float) -> InstallStamp:
    size = sum(entry.size or 0 for entry in dist.entries)
    if not dist.dist_info.endswith(".dist-info"):
        found = _mtime(dist.dist_info)
        return _checked(found, "egg-info mtime", None, size, now)
    installer = _mtime(os.path.join(dist.dist_info, "INSTALLER"))
    record = _mtime(os.path.join(dist.dist_info, "RECORD"))
    if installer is not None:
        return _checked(installer, "INSTALLER mtime", record, size, now)
    if record is not None:
        return _checked(record, "RECORD mtime", None, size, now)
    return _checked(_mtime(dist.dist_info), "dist-info folder mtime", None, size, now)


def _checked(found: Optional[float], evidence: str, record: Optional[float], size: int, now: float) -> InstallStamp:
    if found is None:
        return InstallStamp(None, "", "no INSTALLER, RECORD or folder time can be read", size)
    if found > now + 300:
        return InstallStamp(None, evidence, "%s is %s, after this host's clock (%s): a clock jumped" % (
            evidence, iso_time(found), iso_time(now)), size)
    if record is not None and record < found - _ORDER_SLACK:
        return InstallStamp(None, evidence, "RECORD (%s) is older than INSTALLER (%s), which installers write first: "
                            "the times are out of order" % (iso_time(record), iso_time(found)), size)
    return InstallStamp(found, evidence, None, size)


def _mtime(path: str) -> Optional[float]:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def iso_time(seconds: float) -> str:
    """ISO 8601 in UTC, to the millisecond: 2026-12-03T18:47:38.123Z."""
    whole = int(seconds // 1)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + ".%03dZ" % int((seconds - whole) * 1000)
