# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The venv's install history: its distributions grouped into the installer runs that wrote them.

Private to the gpuops.cuda_venv collection: not a public API.

Pure: a function of the distributions and the span each install wrote (``_read/packaging/install_times.py``). The rule
(docs/FINDINGS.md, CONTAMINATION_SOURCE), on the spans sorted by their start:
- a run writes without a pause: where nothing was written for longer than ``IDLE``, a new stretch of writing
  starts (a person's next command, a script's next step after a resolve);
- one run is one installer: a stretch is cut where the installer changes, when the installers take turns at
  most twice (``MAX_STRETCHES``: a script's ``python -m venv``, then ``uv pip install``, then ``pip install``),
  each handing over at least ``HANDOVER`` after the other stopped writing (a process start);
- otherwise the stretch is "unknown": installers taking turns more often, or handing over quicker than a process
  starts, or writing at once (spans that overlap), or two of pip's distributions written at once (pip writes one
  after another): times a copy reset, or runs too close to tell apart; several distributions with one identical
  whole-second time (set by a tool: touch, tar, a copy with a fixed time); a span the reader could not trust (a
  stretch holding one whose times are out of order is unknown as a whole).
Transactions come oldest first; those of unknown time last, one per installer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.install_times import iso_time
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import Observations

IDLE = 1.0  # seconds with nothing written that end a stretch of writing (a run); measured: docs/FINDINGS.md
HANDOVER = 0.05  # seconds at least between two installers' runs: the next one starts a process and resolves first
OVERLAP = 0.02  # seconds two of pip's spans may share (a coarse clock's tick) and still be one after the other
MAX_STRETCHES = 3  # stretches of one installer a stretch of writing may hold and still be runs told apart
SEQUENTIAL = frozenset(("pip",))  # installers that write one distribution after another
UNKNOWN = "unknown"
BY_NAME = frozenset(("pip",))  # installers whose REQUESTED marks only what was asked for by name
# What REQUESTED means, per installer (measured with pip 25 and uv 0.13; astral-sh/uv#13278).
REQUESTED_MEANS = {
    "pip": "asked for by name: pip writes REQUESTED only for what its command line named",
    "uv": "installed by uv; uv marks every distribution requested",
}


@dataclass(frozen=True)
class Transaction:
    """One installer run, as far as the times tell."""

    number: int  # 1 = oldest
    time: Optional[float]  # the first file written; None: unknown
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
            "requested_means": requested_means(self.installer),
            "requested_by_name": self.installer in BY_NAME,
        }
        if self.end is not None and self.time is not None:
            result["duration"] = round(self.end - self.time, 3)
        if self.reason:
            result["reason"] = self.reason
        return result


def requested_means(installer: str) -> str:
    """What a REQUESTED marker written by ``installer`` says."""
    return REQUESTED_MEANS.get(installer, "written by %s, which may mark what it was not asked for by name" % installer)


def asked_by_name(dist) -> bool:
    """Whether ``dist`` was asked for by name: only pip's REQUESTED says so (uv marks every distribution)."""
    return bool(dist.requested) and dist.installer in BY_NAME


def transactions(dists, stamps) -> List[Transaction]:
    """The transactions, oldest first, those of unknown time last."""
    known, unknown, untrusted = [], [], {}
    for dist in dists:
        stamp = stamps.get(dist.dist_info)
        if stamp is None or stamp.time is None:
            unknown.append((dist, stamp.problem if stamp is not None and stamp.problem else "no install time"))
        else:
            known.append((stamp.time, stamp.until, dist))
            if stamp.problem:  # times out of order: they place it, but its stretch cannot be told apart
                untrusted[dist.dist_info] = stamp.problem
    known.sort(key=lambda item: (item[0], item[1], item[2].key))
    runs = []
    for stretch in _stretches_of_writing(known):
        by_installer = _by_installer(stretch)
        turns = _taking_turns(stretch, by_installer) if len(by_installer) > MAX_STRETCHES else None
        why = next((untrusted[d.dist_info] for _s, _e, d in stretch if d.dist_info in untrusted), None)
        why = why or _same_second(stretch) or _at_once(stretch) or turns
        if why:
            unknown.extend((dist, why) for _s, _e, dist in stretch)
        else:
            runs.extend(by_installer)
    result = [Transaction(n, run[0][0], max(e for _s, e, _d in run), _installer(run[0][2]), tuple(d for _s, _e, d in run))
              for n, run in enumerate(runs, 1)]
    grouped: dict = {}
    for dist, why in unknown:
        grouped.setdefault(_installer(dist), []).append((dist, why))
    for installer, items in sorted(grouped.items()):
        reasons = []
        for _dist, why in items:
            if why not in reasons:
                reasons.append(why)
        result.append(Transaction(len(result) + 1, None, None, installer,
                                  tuple(sorted((d for d, _w in items), key=lambda d: d.key)), "; ".join(reasons)))
    return result


def history_of(obs: Observations) -> List[Transaction]:
    """The transactions of an ``Observations`` record (empty when its stamps were not read)."""
    return transactions(obs.distributions, obs.stamps) if obs.stamps else []


def transaction_of(history: List[Transaction], dist) -> Optional[Transaction]:
    for transaction in history:
        if any(member.dist_info == dist.dist_info for member in transaction.members):
            return transaction
    return None


def _stretches_of_writing(known):
    """The spans cut where nothing was written for longer than ``IDLE``."""
    stretch, until = [], None
    for item in known:
        if stretch and item[0] - until > IDLE:
            yield stretch
            stretch, until = [], None
        stretch.append(item)
        until = item[1] if until is None else max(until, item[1])
    if stretch:
        yield stretch


def _by_installer(stretch) -> list:
    """The stretch cut at each change of installer."""
    runs: list = []
    for item in stretch:
        if runs and _installer(runs[-1][-1][2]) == _installer(item[2]):
            runs[-1].append(item)
        else:
            runs.append([item])
    return runs


def _at_once(stretch) -> Optional[str]:
    """Two installers writing less than ``HANDOVER`` apart (or at once), or two of pip's distributions at once."""
    until: dict = {}  # installer -> (end of its latest span, that distribution)
    for start, end, dist in stretch:
        mine = _installer(dist)
        for other, (other_end, other_dist) in until.items():
            if other != mine and start - other_end < HANDOVER:
                gap = start - other_end
                when = ("%.3f s after %s wrote %s" % (gap, other, other_dist.label) if gap >= 0 else
                        "%.3f s before %s finished writing %s" % (-gap, other, other_dist.label))
                return ("%s wrote %s %s (%s): quicker than a process starts, one copy wrote both (the times were reset) "
                        "or two installers ran at once" % (mine, dist.label, when, iso_time(start)))
            if other == mine and mine in SEQUENTIAL and start < other_end - OVERLAP:
                return ("%s wrote %s and %s at once (%s), and it writes one distribution after another: the times were "
                        "reset (a copy?) or two of its runs ran at once" % (mine, other_dist.label, dist.label, iso_time(start)))
        if mine not in until or end >= until[mine][0]:
            until[mine] = (end, dist)
    return None


def _taking_turns(stretch, by_installer) -> str:
    installers = sorted({_installer(dist) for _s, _e, dist in stretch})
    return ("%s wrote without a pause (%s to %s), taking turns %d times; one run is one installer: the times were "
            "reset (a copy?) or the runs came too close to tell apart" % (
                " and ".join(installers), iso_time(stretch[0][0]), iso_time(max(e for _s, e, _d in stretch)),
                len(by_installer) - 1))


def _same_second(stretch) -> Optional[str]:
    times = {t for s, e, _d in stretch for t in (s, e)}
    if len(stretch) > 1 and len(times) == 1 and float(stretch[0][0]).is_integer():
        return "%d dist-info folders carry the same whole-second time %s: set by a tool (a copy, an archive), " \
               "not written by an installer" % (len(stretch), iso_time(stretch[0][0]))
    return None


def _installer(dist) -> str:
    return dist.installer or UNKNOWN
