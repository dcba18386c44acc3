# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for repair_entry: the repair module's params checked (each bad value named) and made into one repair."""

from __future__ import annotations

import os

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import SubprocessRunner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._entry.repair_entry import (
    repair_arguments, repair_from_params, request_problems, swap_benchmark)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act import swap
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.journal import Journal
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import swap_dir_of
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._verify.benchmark import BenchmarkRequest

NAME_RULE = "letters, digits, '.', '_' and '-' only"
ARGUMENT_SPEC = repair_arguments()["argument_spec"]


def params(**overrides):
    """Module params as AnsibleModule hands them to main(): every default, numbers converted to their types."""
    values = {key: spec.get("default") for key, spec in ARGUMENT_SPEC.items()}
    for key, spec in ARGUMENT_SPEC.items():
        if spec["type"] == "float" and values[key] is not None:
            values[key] = float(values[key])
    values["path"] = "/venvs/train"
    values.update(overrides)
    return values


# --- request_problems --------------------------------------------------------------------------------------------

def test_defaults_are_valid():
    assert request_problems(params()) == []


@pytest.mark.parametrize("overrides, problems", [
    (dict(batch_size=0), ["batch_size must be >= 1, got 0"]),
    (dict(batch_size=-3), ["batch_size must be >= 1, got -3"]),
    (dict(batch=0), ["batch must be >= 1, got 0"]),
    (dict(lock_timeout=-1.0), ["lock_timeout must be >= 0, got -1.0"]),
    (dict(probe_timeout=0.0), ["probe_timeout must be positive, got 0.0"]),
    (dict(installer_timeout=-5.0), ["installer_timeout must be positive, got -5.0"]),
    (dict(remove=["a;b"]), ["invalid distribution name 'a;b': " + NAME_RULE]),
    (dict(remove=["$(x)"]), ["invalid distribution name '$(x)': " + NAME_RULE]),
    (dict(remove=["-e"]), ["invalid distribution name '-e': " + NAME_RULE]),  # never an installer option
    (dict(remove=["sgl-kernel", "x y"]), ["invalid distribution name 'x y': " + NAME_RULE]),
    (dict(packages=["torch==="]),
     ["invalid requirement 'torch===': Expected semicolon (after name with no version specifier) or end"]),
    (dict(anchor="my anchor"), ["invalid distribution name 'my anchor': " + NAME_RULE]),
    (dict(batch_size=0, batch=0, probe_timeout=0.0, lock_timeout=-1.0, remove=["a;b"], anchor="t t", packages=["torch==="]),
     ["batch_size must be >= 1, got 0", "batch must be >= 1, got 0", "probe_timeout must be positive, got 0.0",
      "lock_timeout must be >= 0, got -1.0", "invalid distribution name 'a;b': " + NAME_RULE,
      "invalid distribution name 't t': " + NAME_RULE,
      "invalid requirement 'torch===': Expected semicolon (after name with no version specifier) or end"]),
])
def test_validate_names_each_bad_option(overrides, problems):
    assert request_problems(params(**overrides)) == problems


def test_verify_before_swap_needs_a_copy_and_a_sound_benchmark():
    sub = {name: spec.get("default") for name, spec in ARGUMENT_SPEC["benchmark"]["options"].items()}
    assert request_problems(params(verify_before_swap=True, strategy="in_place")) == [
        "verify_before_swap needs strategy swap or auto: in place there is no copy to benchmark"]
    assert request_problems(params(verify_before_swap=True, benchmark=dict(sub, repeats=0, command=["/bin/true"]))) == [
        "benchmark: repeats must be >= 1, got 0",
        "benchmark: command_regex is required with command: it reads the throughput from the command's output"]
    assert request_problems(params(verify_before_swap=True)) == []
    assert swap_benchmark(params(benchmark=dict(sub, command=["/venvs/train/bin/python", "/opt/step.py"], command_regex="x (1)"),
                                 ld_library_path=["/usr/local/cuda/lib64"])) == BenchmarkRequest(
        path="/venvs/train", command=("/venvs/train/bin/python", "/opt/step.py"), command_regex="x (1)", min_ratio=1.0,
        ld_library_path=("/usr/local/cuda/lib64",))
    assert swap_benchmark(params()) == BenchmarkRequest(path="/venvs/train", min_ratio=1.0)


@pytest.mark.parametrize("overrides", [
    dict(batch_size=1, batch=1, lock_timeout=0.0),
    dict(remove=["sgl-kernel", "flash_attn", "ruamel.yaml", "A1"], anchor="vllm"),
    dict(packages=["torch==2.9.1", 'nvidia-cudnn-cu12==9.10.2.21; platform_system == "Linux"',
                   "cuda-toolkit[cublas,curand]==13.0.3"]),
])
def test_valid_options(overrides):
    assert request_problems(params(**overrides)) == []


# --- repair_from_params -------------------------------------------------------------------------------------------

def test_bad_params_fail_before_anything_is_read(tmp_path):
    with pytest.raises(CudaVenvError) as caught:
        repair_from_params(params(path=str(tmp_path / "absent"), batch_size=0, remove=["a;b"]), SubprocessRunner())
    assert str(caught.value) == "batch_size must be >= 1, got 0; invalid distribution name 'a;b': " + NAME_RULE
    assert caught.value.result == {}


def test_an_error_never_carries_a_secret_of_the_wheel_sources(tmp_path):
    with pytest.raises(CudaVenvError) as caught:
        repair_from_params(params(path=str(tmp_path / "p4ss"), index_url="https://u:p4ss@host.invalid/simple"),
                           SubprocessRunner(), check_mode=True)
    assert str(caught.value) == "path %s does not exist" % (tmp_path / "***")


def test_facts_need_check_mode_or_plan_only(tmp_path):
    absent = tmp_path / "absent"
    with pytest.raises(CudaVenvError) as caught:
        repair_from_params(params(path=str(absent), facts=True), SubprocessRunner())
    assert str(caught.value) == ("facts=true needs check mode or plan_only=true: a real run's facts are the diagnosis "
                                 "after it (cuda_venv_facts)")
    for check_mode, plan_only in ((True, False), (False, True), (True, True)):
        with pytest.raises(CudaVenvError) as caught:
            repair_from_params(params(path=str(absent), facts=True, plan_only=plan_only), SubprocessRunner(), check_mode=check_mode)
        assert str(caught.value) == "path %s does not exist" % absent  # past the options' check: the venv is read


def test_plan_only_leaves_an_exchange_killed_between_its_renames_as_it_is(tmp_path):
    """A real run completes the missing venv path from the swap journal first; the plan that changes nothing does not
    (mutation: plan_only dropped from the condition around finish_missing_root)."""
    live = tmp_path / "venv"
    swap_dir = swap_dir_of(str(live))
    os.makedirs(os.path.join(swap_dir, "next"))
    live.mkdir()
    journal = Journal(swap_dir, run="r1")
    journal.append("swap", batch=None, step="exchange", other=os.path.join(swap_dir, "next"), live_inode=[0, 0], copy_inode=[0, 0])
    os.rename(str(live), os.path.join(swap_dir, swap.EXCHANGE_TMP))
    with pytest.raises(CudaVenvError) as caught:
        repair_from_params(params(path=str(live), plan_only=True, facts=True), SubprocessRunner())
    assert str(caught.value) == "path %s does not exist" % live
    assert not os.path.lexists(str(live)) and os.path.isdir(os.path.join(swap_dir, swap.EXCHANGE_TMP))
