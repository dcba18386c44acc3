# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The venv's install history: its distributions grouped into the installer runs that wrote them.

Private to the gpuops.cuda_venv collection: not a public API.

Pure: a function of the distributions and their install stamps (``_read/install_times.py``). The rule
(docs/FINDINGS.md, CONTAMINATION_SOURCE):
- one run writes its dist-info folders one after another; the gap before the next one is at most the time
  writing that distribution's bytes takes: ``GAP`` plus its RECORD size at ``RATE``. A longer gap starts a
  new run;
- one run is one installer: within a window, each stretch of one installer is a run when the installers
  take turns at most twice (``MAX_STRETCHES``: a script's ``python -m venv``, then ``uv pip install``, then
  ``pip install``; measured 0.16 to 0.2 s between the first two on the real torch venv), each handing over after
  at least ``HANDOVER`` (a process start). More turns, or a handover quicker than that, are times that cannot be
  told apart (a copy that reset them, in directory order): "unknown";
- several distributions with one identical whole-second time were set by a tool (touch, tar, a copy with a
  fixed time), not written by an installer: "unknown";
- a stamp the reader could not trust (a time after the clock, RECORD before INSTALLER): "unknown".
Transactions come oldest first; those of unknown time last, one per installer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.install_times import iso_time

GAP = 1.0  # seconds between two dist-info folders of one run, beyond the time their bytes take
RATE = 10 * 1024 * 1024  # bytes per second a slow disk unpacks and byte-compiles
UNKNOWN = "unknown"
MAX_STRETCHES = 3  # stretches of one installer a window may hold and still be runs told apart
HANDOVER = 0.05  # seconds at least between two installers' runs: the next one starts a process and resolves first


@dataclass(frozen=True)
class Transaction:
    """One installer run, as far as the times tell."""

    number: int  # 1 = oldest
    time: Optional[float]  # the first dist-info written; None: unknown
    end: Optional[float]
    installer: str
    members: tuple  # Distribution, in the order they were written
    reason: Optional[str] = None  # why the time is unknown

    def as_dict(self) -> dict:
        result = {
            "number": self.number,
            "time": iso_time(self.time) if self.time is not None else UNKNOWN,
            "installer": self.installer,
            "distributions": [d.label for d in self.members],
            "requested": [d.label for d in self.members if d.requested],
        }
        if self.end is not None and self.time is not None:
            result["duration"] = round(self.end - self.time, 3)
        if self.reason:
            result["reason"] = self.reason
        return result


def transactions(dists, stamps) -> List[Transaction]:
    """The transactions, oldest first, those of unknown time last."""
    known, unknown = [], []
    for dist in dists:
        stamp = stamps.get(dist.dist_info)
        if stamp is None or stamp.time is None:
            unknown.append((dist, stamp.problem if stamp is not None and stamp.problem else "no install time"))
        else:
            known.append((stamp.time, dist, stamp.size))
    known.sort(key=lambda item: (item[0], item[1].key))
    runs = []
    for window in _windows(known):
        stretches = _stretches(window)
        why = _same_second(window) or (_interleaved(window) if len(stretches) > MAX_STRETCHES or _handed_over_at_once(stretches)
                                       else None)
        if why:
            unknown.extend((dist, why) for _t, dist, _s in window)
        else:
            runs.extend(stretches)
    result = [Transaction(n, w[0][0], w[-1][0], _installer(w[0][1]), tuple(d for _t, d, _s in w))
              for n, w in enumerate(runs, 1)]
    by_installer: dict = {}
    for dist, why in unknown:
        by_installer.setdefault(_installer(dist), []).append((dist, why))
    for installer, items in sorted(by_installer.items()):
        reasons = []
        for _dist, why in items:
            if why not in reasons:
                reasons.append(why)
        result.append(Transaction(len(result) + 1, None, None, installer,
                                  tuple(sorted((d for d, _w in items), key=lambda d: d.key)), "; ".join(reasons)))
    return result


def history_of(obs) -> List[Transaction]:
    """The transactions of an ``Observations`` record (empty when its stamps were not read)."""
    return transactions(obs.distributions, obs.stamps) if obs.stamps else []


def transaction_of(history: List[Transaction], dist) -> Optional[Transaction]:
    for transaction in history:
        if any(member.dist_info == dist.dist_info for member in transaction.members):
            return transaction
    return None


def _windows(known):
    window = []
    for item in known:
        if window and item[0] - window[-1][0] > GAP + item[2] / RATE:
            yield window
            window = []
        window.append(item)
    if window:
        yield window


def _stretches(window) -> list:
    """The window cut at each change of installer."""
    stretches: list = []
    for item in window:
        if stretches and _installer(stretches[-1][-1][1]) == _installer(item[1]):
            stretches[-1].append(item)
        else:
            stretches.append([item])
    return stretches


def _handed_over_at_once(stretches) -> bool:
    """Two installers' folders closer than a process start (``HANDOVER``): one copy wrote both, not two runs."""
    return any(later[0][0] - earlier[-1][0] < HANDOVER for earlier, later in zip(stretches, stretches[1:]))


def _interleaved(window) -> str:
    installers = sorted({_installer(dist) for _t, dist, _s in window})
    return ("%s wrote dist-info folders within one window (%s to %s), taking turns %d times; one run is one "
            "installer: the times were reset (a copy?) or the runs came too close to tell apart" % (
                " and ".join(installers), iso_time(window[0][0]), iso_time(window[-1][0]), len(_stretches(window)) - 1))


def _same_second(window) -> Optional[str]:
    times = {t for t, _d, _s in window}
    if len(window) > 1 and len(times) == 1 and float(window[0][0]).is_integer():
        return "%d dist-info folders carry the same whole-second time %s: set by a tool (a copy, an archive), " \
               "not written by an installer" % (len(window), iso_time(window[0][0]))
    return None


def _installer(dist) -> str:
    return dist.installer or UNKNOWN
