# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for judge: medians, spreads, the noise band and the verdict of each metric."""

from __future__ import annotations

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._verify import judge as J


def test_median_of_odd_and_even_counts_and_of_nothing():
    assert J.median([3.0, 1.0, 2.0]) == 2.0
    assert J.median([4.0, 1.0, 2.0, 3.0]) == 2.5
    with pytest.raises(J.JudgeError, match="^no runs to take the median of$"):
        J.median([])


def test_spread_is_the_range_over_the_median():
    assert J.spread([764.7, 751.8, 760.0]) == pytest.approx((764.7 - 751.8) / 760.0)
    assert J.spread([5.0]) == 0.0


@pytest.mark.parametrize("ratio, band, min_ratio, verdict", [
    (1.03, 0.02, 0.95, J.FASTER),
    (1.02, 0.02, 0.95, J.WITHIN_NOISE),
    (0.98, 0.02, 0.95, J.WITHIN_NOISE),
    (0.97, 0.02, 0.95, J.SLOWER_WITHIN_TOLERANCE),
    (0.95, 0.02, 0.95, J.SLOWER_WITHIN_TOLERANCE),
    (0.94, 0.02, 0.95, J.SLOWER),
    (0.94, 0.08, 0.95, J.WITHIN_NOISE),  # below min_ratio, but the runs cannot tell it from noise
    (0.97, 0.02, 1.0, J.SLOWER),  # min_ratio 1: any drop beyond the band
])
def test_verdict(ratio, band, min_ratio, verdict):
    assert J.verdict(ratio, band, min_ratio) == verdict


def test_compare_judges_medians_in_the_widest_band_and_names_each_failure():
    runs = {"matmul_tflops": [700.0, 702.0, 704.0], "copy_gbps": [4300.0, 4100.0, 4200.0], "command_throughput": [99.0]}
    baseline = {"matmul_tflops": [780.0], "copy_gbps": [4000.0, 4010.0, 3990.0]}
    rows, regressions = J.compare(runs, baseline, 0.95, 0.02)
    assert [row.as_dict() for row in rows] == [
        {"metric": "matmul_tflops", "value": 702.0, "baseline": 780.0, "ratio": 0.9, "band": 0.02, "verdict": "slower", "ok": False},
        {"metric": "copy_gbps", "value": 4200.0, "baseline": 4000.0, "ratio": 1.05, "band": pytest.approx(200.0 / 4200.0),
         "verdict": "faster", "ok": True},
    ]
    assert regressions == ["matmul_tflops 702.0 is 0.900 of the baseline 780.0: 10.0% slower (min_ratio 0.95, noise band 2.0%)"]


def test_compare_takes_the_baselines_spread_and_compares_nothing_without_a_baseline():
    rows, regressions = J.compare({"copy_gbps": [93.0]}, {"copy_gbps": [90.0, 100.0, 110.0]}, 0.95, 0.02)
    assert (rows[0].band, rows[0].verdict, regressions) == (0.2, J.WITHIN_NOISE, [])
    assert J.noise_notes(rows, 0.95) == [
        "copy_gbps: the noise band 20.0% is wider than the tolerance 5.0% (min_ratio 0.95); take more repeats or longer runs"]
    assert J.compare({"copy_gbps": [95.0]}, {}, 0.95, 0.02) == ([], [])


def test_compare_rejects_a_bad_tolerance_or_noise():
    with pytest.raises(J.JudgeError) as info:
        J.compare({}, {}, 0, -0.1)
    assert str(info.value) == ("min_ratio must be positive, got 0; "
                               "noise must be at least 0 and below 1 (a fraction: 0.02 is 2%), got -0.1")
