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


def test_compare_judges_medians_in_the_band_the_repeats_give_and_names_each_failure():
    runs = {"matmul_tflops": [700.0, 702.0, 704.0], "copy_gbps": [4300.0, 4100.0, 4200.0], "command_throughput": [99.0]}
    baseline = {"matmul_tflops": [780.0], "copy_gbps": [4000.0, 4020.0, 4000.0]}
    rows, regressions = J.compare(runs, baseline, 0.95, 0.02)
    assert [row.as_dict() for row in rows] == [
        {"metric": "matmul_tflops", "value": 702.0, "baseline": 780.0, "ratio": 0.9, "band": 0.02,
         "band_why": "the floor noise=0.02, wider than 4 x the ratio's deviation (the repeats' deviation 0.4% here (3 runs), "
                     "0.0% in the baseline (1 run))", "verdict": "slower", "ok": False},
        {"metric": "copy_gbps", "value": 4200.0, "baseline": 4000.0, "ratio": 1.05, "band": pytest.approx(4 * 1.4826 * 100 / 4200),
         "band_why": "4 x the ratio's deviation: the repeats' deviation 3.5% here (3 runs), 0.0% in the baseline (3 runs)",
         "verdict": "within noise", "ok": True},
    ]
    assert regressions == ["matmul_tflops 702.0 is 0.900 of the baseline 780.0: 10.0% slower (min_ratio 0.95, noise band 2.0%)"]


def test_compare_takes_the_baselines_spread_and_compares_nothing_without_a_baseline():
    rows, regressions = J.compare({"copy_gbps": [93.0]}, {"copy_gbps": [90.0, 100.0, 110.0]}, 0.95, 0.02)
    assert (rows[0].band, rows[0].verdict, regressions) == (pytest.approx(4 * 0.14826), J.WITHIN_NOISE, [])
    assert J.noise_notes(rows, 0.95) == [
        "copy_gbps: the noise band 59.3% is wider than the tolerance 5.0% (min_ratio 0.95); take more repeats or longer runs"]
    assert J.compare({"copy_gbps": [95.0]}, {}, 0.95, 0.02) == ([], [])


# Recorded on an H200 (docs/ACCEPTANCE.md): the live venv and its hard-linked copy, three matmul runs each (TFLOP/s);
# and two back-to-back sets of the unchanged venv whose medians were 781.9 then 735.9 (5.9% apart), their runs not
# kept: the recorded sets' shapes scaled to those medians.
H200_LIVE = [756.4, 747.0, 773.5]
H200_COPY = [743.9, 737.9, 746.2]
H200_FIRST = [v * 781.9 / 756.4 for v in H200_LIVE]
H200_SECOND = [v * 735.9 / 743.9 for v in H200_COPY]


@pytest.mark.parametrize("runs, baseline, verdict", [
    (H200_COPY, H200_LIVE, J.WITHIN_NOISE),  # the copy against the live venv, as recorded
    (H200_SECOND, H200_FIRST, J.WITHIN_NOISE),  # an unchanged venv whose medians differ by 5.9%: passes
    ([900.0, 891.0, 909.0], [1000.0, 990.0, 1010.0], J.SLOWER),  # a steady 10% drop, 1% spread: caught
    ([900.0, 905.0, 895.0, 902.0, 600.0], [1000.0, 1005.0, 995.0, 1002.0, 998.0], J.SLOWER),  # one outlier in five
    ([1001.0, 999.0, 1003.0, 700.0, 997.0], [1000.0, 1005.0, 995.0, 1002.0, 998.0], J.WITHIN_NOISE),  # the same, unchanged
], ids=["h200-copy", "h200-back-to-back", "steady-10pct-drop", "drop-with-an-outlier", "unchanged-with-an-outlier"])
def test_the_band_follows_the_repeats_spread_and_one_outlier_does_not_widen_it(runs, baseline, verdict):
    [row], _regressions = J.compare({"matmul_tflops": runs}, {"matmul_tflops": baseline}, 0.95, 0.02)
    assert row.verdict == verdict, row
    if verdict == J.SLOWER:
        assert row.band < 0.09 and row.band_why.startswith("4 x the ratio's deviation")
    assert J.relative_sigma([1000.0, 1005.0, 995.0, 1002.0, 600.0]) == pytest.approx(1.4826 * 5 / 1000.0)


def test_compare_rejects_a_bad_tolerance_or_noise():
    with pytest.raises(J.JudgeError) as info:
        J.compare({}, {}, 0, -0.1)
    assert str(info.value) == ("min_ratio must be positive, got 0; "
                               "noise must be at least 0 and below 1 (a fraction: 0.02 is 2%), got -0.1")
