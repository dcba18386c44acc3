# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for facts_entry: the facts module's params made into FactsOptions, each bad one named."""

from __future__ import annotations

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._entry.facts_entry import facts_arguments, facts_options
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import FactsOptions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.wheel_sources import WheelSources

PARAMS = dict(path="/v", anchor="jax", probe=False, probe_timeout=30.0, verify="hash", ld_library_path=["/usr/local/cuda/lib64"],
              gpu=False, find_links=["/wh"], index_url=None, extra_index_urls=[], no_index=True, gpu_archs=["8.0", "12.1"],
              read_index=False, lock=None, lock_content=None, lock_extras=[], lock_groups=None, export_lock=None)


def test_facts_options_take_every_param():
    assert facts_options(PARAMS) == FactsOptions(path="/v", anchor="jax", probe=False, verify="hash",
                                                 ld_library_path=("/usr/local/cuda/lib64",), probe_timeout=30.0, gpu=False,
                                                 wheel_sources=WheelSources(find_links=("/wh",), no_index=True),
                                                 performance=True, gpu_archs=("8.0", "12.1"), read_index=False,
                                                 probe_reuse=False)


@pytest.mark.parametrize("value, probe, reuse", [
    (True, True, True), ("yes", True, True), ("on", True, True), ("always", True, False), ("Always", True, False),
    (False, False, False), ("no", False, False), (0, False, False)])
def test_probe_true_reuses_the_last_import_always_imports_every_run_false_never(value, probe, reuse):
    options = facts_options(dict(PARAMS, probe=value))
    assert (options.probe, options.probe_reuse) == (probe, reuse)


def test_facts_options_name_every_bad_param():
    with pytest.raises(CudaVenvError) as caught:
        facts_options(dict(PARAMS, probe="sometimes", probe_timeout=0.0, ld_library_path=["lib", "/ok"], index_url="https://h/simple",
                           gpu_archs=["9.0", "sm_90", "90"]))
    assert str(caught.value) == ("ld_library_path entry 'lib' is not an absolute folder path; "
                                 "probe must be true, false or always, got 'sometimes'; "
                                 "probe_timeout must be positive, got 0.0; gpu_archs: 'sm_90' is not a compute capability such as "
                                 "'8.0' or '9.0'; gpu_archs: '90' is not a compute capability such as '8.0' or '9.0'; "
                                 "wheel sources set no_index together with "
                                 "index_url or extra_index_urls: keep one of them")
    assert caught.value.result == {}


def test_the_params_the_spec_gives_by_default_make_the_engines_defaults():
    params = {key: spec.get("default") for key, spec in facts_arguments()["argument_spec"].items()}
    assert facts_options(dict(params, path="/v")) == FactsOptions(path="/v", probe_timeout=120, performance=True,
                                                                  read_index=True)
