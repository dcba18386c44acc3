# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for _options: each module's spec (its entry in _entry/) from the shared entries, choices from the engine, no default shared."""

from __future__ import annotations

from ansible_collections.gpuops.cuda_venv.plugins.module_utils import _options
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.swap import STRATEGIES
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.base_options import BASE, find_arguments, preflight_arguments
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import PRUNE_MODES
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._entry.benchmark_entry import benchmark_arguments
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._entry.facts_entry import facts_arguments
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._entry.repair_entry import repair_arguments
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.installers import BACKEND_KINDS
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.record_check import MODES

FACTS = facts_arguments()["argument_spec"]
REPAIR = repair_arguments()["argument_spec"]
BENCHMARK = benchmark_arguments()["argument_spec"]
PREFLIGHT = preflight_arguments()["argument_spec"]
FIND = find_arguments(("/a", "/b"))["argument_spec"]
SPECS = (FACTS, REPAIR, BENCHMARK, PREFLIGHT, FIND)


def test_shared_options_have_one_spec_everywhere_but_probe_timeout_and_probe():
    for spec in SPECS:
        for name in set(spec) & set(_options.SHARED):
            assert spec[name] == _options.SHARED[name], name
    assert set(BASE) <= set(_options.SHARED)
    taken_twice = {name for spec in SPECS for name in spec if sum(name in other for other in SPECS) > 1}
    assert set(_options.SHARED) == taken_twice - {"probe_timeout", "probe"}
    assert (FACTS["probe_timeout"]["default"], REPAIR["probe_timeout"]["default"]) == (120, 300)
    assert (FACTS["probe"], REPAIR["probe"]) == (dict(type="raw", default=True), dict(type="bool", default=True))


def test_choices_are_the_engines():
    assert FACTS["verify"]["choices"] == REPAIR["verify"]["choices"] == list(MODES)
    assert REPAIR["prune"]["choices"] == list(PRUNE_MODES)
    assert REPAIR["backend"]["choices"] == list(BACKEND_KINDS)
    assert REPAIR["strategy"]["choices"] == list(STRATEGIES)


def test_no_two_specs_share_a_default_list():
    FACTS["ld_library_path"]["default"].append("/changed")
    try:
        assert facts_arguments()["argument_spec"]["ld_library_path"]["default"] == []
        assert REPAIR["ld_library_path"]["default"] == BENCHMARK["ld_library_path"]["default"] == []
    finally:
        FACTS["ld_library_path"]["default"].remove("/changed")


def test_module_keyword_arguments():
    assert benchmark_arguments()["mutually_exclusive"] == [("baseline", "baseline_path")]
    for arguments in (facts_arguments, repair_arguments, benchmark_arguments,
                      preflight_arguments, lambda: find_arguments(())):
        assert arguments()["supports_check_mode"] is True
    assert FIND == {"roots": dict(type="list", elements="path", default=["/a", "/b"]),
                    "processes": dict(type="bool", default=True), "paths": dict(type="list", elements="str", default=[])}
    assert list(FACTS) == ["path", "anchor", "probe", "probe_timeout", "verify", "ld_library_path", "gpu", "read_index",
                           "find_links", "index_url", "extra_index_urls", "no_index", "gpu_archs", "lock", "lock_content",
                           "lock_extras", "lock_groups", "export_lock"]


def test_wheel_sources_are_one_spec_and_index_urls_never_logged():
    for spec in (FACTS, REPAIR):
        assert {name: spec[name] for name in _options.WHEEL_SOURCES} == {
            "find_links": dict(type="list", elements="str", default=[]),
            "index_url": dict(type="str", no_log=True),
            "extra_index_urls": dict(type="list", elements="str", default=[], no_log=True),
            "no_index": dict(type="bool", default=False)}


def test_the_repairs_benchmark_measures_as_the_benchmark_module_but_keeps_out_any_drop():
    suboptions = REPAIR["benchmark"]["options"]
    assert REPAIR["verify_before_swap"] == dict(type="bool", default=False)
    assert {name: spec for name, spec in suboptions.items() if name != "min_ratio"} == {
        name: BENCHMARK[name] for name in suboptions if name != "min_ratio"}
    assert (suboptions["min_ratio"]["default"], BENCHMARK["min_ratio"]["default"]) == (1.0, 0.95)
    assert (BENCHMARK["repeats"]["default"], BENCHMARK["noise"]["default"]) == (3, 0.02)
