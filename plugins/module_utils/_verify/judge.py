# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Judge repeated measurements against a baseline: medians, spreads, the noise band, a verdict per metric.

Private to the gpuops.cuda_venv collection: not a public API.

Every metric is "higher is better". Each side of a comparison is the median of its runs; the ratio is the
median over the baseline's. The noise band comes from the measurements themselves: each side's repeats give their
relative standard deviation, estimated robustly (1.4826 x the median absolute deviation over the median, so that
one outlier among five repeats does not widen it), the ratio's is the root of the sum of both squares, and the
band is ``K`` (4) times that, never narrower than the declared ``noise`` (the floor: about 2% run to run on an H200).
K is 4, not 3: on an H200 the medians of two back-to-back sets of an unchanged venv drift further apart than each
set's repeats spread (5.9%: 781.9 then 735.9 TFLOP/s, where recorded sets of three deviate by 0.5% and 1.8%), so
the band is about 7.6% there, where a fixed 2% called it a regression; a steady 10% drop whose repeats deviate by
1.5% gets a band of about 8.4% and is caught. A metric fails only when it is below ``min_ratio`` of
its baseline AND below the band: a drop the runs cannot tell from noise is reported "within noise", never failed.
Each comparison says the band it used and why (``band_why``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError

# Metric name -> unit, in report order.
METRICS = (("matmul_tflops", "TFLOP/s"), ("copy_gbps", "GB/s"), ("command_throughput", "/s"))
UNITS = dict(METRICS)

K = 4.0  # the band is K standard deviations of the ratio, as the repeats estimate it (see above why 4)
_MAD_TO_SIGMA = 1.4826  # the median absolute deviation of normal noise is 0.6745 of its standard deviation

# Verdicts, one per compared metric.
FASTER = "faster"
WITHIN_NOISE = "within noise"
SLOWER_WITHIN_TOLERANCE = "slower, within min_ratio"
SLOWER = "slower"


class JudgeError(CudaVenvError, ValueError):
    """Bad tolerance or noise; the message names it."""


def median(values: Sequence[float]) -> float:
    """The middle value (the mean of the two middle ones for an even count)."""
    ordered = sorted(values)
    if not ordered:
        raise JudgeError("no runs to take the median of")
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2.0


def spread(values: Sequence[float]) -> float:
    """(max - min) / median of the runs: 0.0 for one run."""
    return (max(values) - min(values)) / median(values) if len(values) > 1 else 0.0


def relative_sigma(values: Sequence[float]) -> float:
    """The runs' relative standard deviation, robust to one outlier: 1.4826 x their median absolute deviation over
    their median; 0.0 for one run."""
    if len(values) < 2:
        return 0.0
    middle = median(values)
    return _MAD_TO_SIGMA * median([abs(v - middle) for v in values]) / middle


def band_of(runs: Sequence[float], baseline_runs: Sequence[float], noise: float) -> Tuple[float, str]:
    """(the noise band, why): K times the ratio's relative standard deviation from both sides' repeats, or the
    floor ``noise`` when that is wider."""
    here, there = relative_sigma(runs), relative_sigma(baseline_runs)
    measured = K * math.sqrt(here * here + there * there)
    spreads_text = "the repeats' deviation %.1f%% here (%s), %.1f%% in the baseline (%s)" % (
        here * 100.0, _runs(runs), there * 100.0, _runs(baseline_runs))
    if measured > noise:
        return measured, "%g x the ratio's deviation: %s" % (K, spreads_text)
    return noise, "the floor noise=%g, wider than %g x the ratio's deviation (%s)" % (noise, K, spreads_text)


def _runs(values: Sequence[float]) -> str:
    return "1 run" if len(values) == 1 else "%d runs" % len(values)


def medians(runs: Dict[str, List[float]]) -> Dict[str, float]:
    return dict((name, median(values)) for name, values in runs.items() if values)


def spreads(runs: Dict[str, List[float]]) -> Dict[str, float]:
    return dict((name, spread(values)) for name, values in runs.items() if values)


@dataclass(frozen=True)
class MetricComparison:
    """One metric against its baseline: medians, ratio = value / baseline, the band it was judged in, the verdict."""

    metric: str
    value: float
    baseline: float
    ratio: float
    band: float
    verdict: str
    band_why: str = ""

    @property
    def ok(self) -> bool:
        return self.verdict != SLOWER

    def as_dict(self) -> dict:
        return {"metric": self.metric, "value": self.value, "baseline": self.baseline, "ratio": self.ratio,
                "band": self.band, "band_why": self.band_why, "verdict": self.verdict, "ok": self.ok}

    def regression(self, min_ratio: float) -> str:
        return "%s %s is %.3f of the baseline %s: %.1f%% slower (min_ratio %g, noise band %.1f%%)" % (
            self.metric, number(self.value), self.ratio, number(self.baseline), (1.0 - self.ratio) * 100.0, min_ratio,
            self.band * 100.0)


def check_tolerance(min_ratio: float, noise: float) -> List[str]:
    """Each bad value, named."""
    found = []
    if min_ratio <= 0:
        found.append("min_ratio must be positive, got %s" % min_ratio)
    if not 0 <= noise < 1:
        found.append("noise must be at least 0 and below 1 (a fraction: 0.02 is 2%%), got %s" % noise)
    return found


def verdict(ratio: float, band: float, min_ratio: float) -> str:
    """The rule: within the band is noise; below it, slower, failed only below ``min_ratio`` too."""
    if ratio > 1.0 + band:
        return FASTER
    if ratio >= 1.0 - band:
        return WITHIN_NOISE
    return SLOWER_WITHIN_TOLERANCE if ratio >= min_ratio else SLOWER


def compare(runs: Dict[str, List[float]], baseline_runs: Dict[str, List[float]], min_ratio: float,
            noise: float) -> Tuple[List[MetricComparison], List[str]]:
    """Each metric with runs on both sides, in report order, and a sentence per metric that failed."""
    problems = check_tolerance(min_ratio, noise)
    if problems:
        raise JudgeError("; ".join(problems))
    rows = []
    for name, _unit in METRICS:
        if runs.get(name) and baseline_runs.get(name):
            value, base = median(runs[name]), median(baseline_runs[name])
            band, why = band_of(runs[name], baseline_runs[name], noise)
            ratio = value / base
            rows.append(MetricComparison(name, value, base, ratio, band, verdict(ratio, band, min_ratio), why))
    return rows, [row.regression(min_ratio) for row in rows if not row.ok]


def noise_notes(rows: Sequence[MetricComparison], min_ratio: float) -> List[str]:
    """Where the band is wider than the tolerance: a drop of that size cannot be told from noise."""
    return ["%s: the noise band %.1f%% is wider than the tolerance %.1f%% (min_ratio %g); take more repeats or longer runs"
            % (row.metric, row.band * 100.0, (1.0 - min_ratio) * 100.0, min_ratio)
            for row in rows if 1.0 - row.band < min_ratio]


def judged(row: MetricComparison) -> str:
    """The ratio and verdict as the summary shows them, e.g. ``0.990x baseline, within noise, band 2.0%``."""
    return "%.3fx baseline, %s, band %.1f%%" % (row.ratio, row.verdict, row.band * 100.0)


def number(value: float) -> str:
    if abs(value) >= 10:
        return "%.1f" % value
    return "%.2f" % value if abs(value) >= 1 else "%.3g" % value
