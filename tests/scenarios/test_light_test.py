"""The swap's light test between batches (the real loader on torch's compiled parts) against the import itself.

Stand-in venvs: real ELF files, the real dynamic loader, the stand-in torch's __init__ that loads its libraries as the
real one does (tests/standin/payload/torch).
"""

import os
import shutil

import pytest

from scenario_tools import ROOT, run_module
from tests.standin import build_scenario

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.probe import probe_import
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import SubprocessRunner
from ansible_collections.gpuops.cuda_venv.tests.support.tree_digest import tree_digest

CACHE = os.environ.get("CUDA_VENV_STANDIN_CACHE", os.path.join(ROOT, "build", "standin-cache"))


def both(venv):
    python = str(venv / "bin" / "python")
    return (probe_import(python, "torch", SubprocessRunner()),
            probe_import(python, "torch", SubprocessRunner(), loader_only=True))


@pytest.mark.parametrize("name, error", [
    ("healthy-cu12", None),
    ("contaminated", None),
    ("gutted", "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory"),
    ("partial-restore", "ImportError: libcusparseLt.so.0: cannot open shared object file: No such file or directory"),
    ("curand-removed", "ImportError: libcurand.so.10: cannot open shared object file: No such file or directory"),
    ("truncated-nccl", "ImportError: {site}/torch/lib/../../nvidia/nccl/lib/libnccl.so.2: file too short"),
])
def test_the_loader_test_says_what_the_import_says(tmp_path, name, error):
    info = build_scenario(name, tmp_path / name, cache=CACHE)
    full, light = both(info.venv)
    site = str(next(info.venv.glob("lib/python3.*/site-packages")))
    assert light.loader_only is True and full.loader_only is False
    assert (light.ok, light.error) == (full.ok, full.error) == (error is None, error and error.format(site=site))
    if error is None:  # what the mapped cuDNN and NCCL say of themselves: what torch reports
        assert light.versions == {"cudnn": full.versions["cudnn"], "nccl": full.versions["nccl"]}
        assert {p for p in light.loaded if "/nvidia/" in p} <= {p for p in full.loaded if "/nvidia/" in p}
        assert any(p.endswith("/nvidia/cudnn/lib/libcudnn.so.9") for p in light.loaded), light.loaded


def move_cuda_runtime_beside(venv):
    """nvidia/cuda_runtime moved to a folder a .pth file puts on sys.path: libtorch_global_deps.so no longer finds
    libcudart.so.12 through its RPATH, and torch's own fallback (preloading from sys.path) still does."""
    site = next(venv.glob("lib/python3.*/site-packages"))
    beside = venv / "beside"
    (beside / "nvidia").mkdir(parents=True)
    shutil.move(str(site / "nvidia" / "cuda_runtime"), str(beside / "nvidia" / "cuda_runtime"))
    (site / "beside.pth").write_text(str(beside) + "\n")


def test_where_torch_preload_rescues_the_import_the_loader_test_fails_so_the_import_decides(tmp_path):
    info = build_scenario("contaminated", tmp_path / "contaminated", cache=CACHE)
    move_cuda_runtime_beside(info.venv)
    full, light = both(info.venv)
    assert full.ok is True and full.error is None
    assert light.ok is False and light.error == "OSError: libcudart.so.12: cannot open shared object file: No such file or directory"


def repair(tmp_path, info, strategy, **extra):
    links = [str(info.wheelhouse), str(info.extra_wheelhouse)]
    args = dict(path=str(info.venv), find_links=links, no_index=True, backend="pip", strategy=strategy, **extra)
    return run_module(tmp_path, "cuda_venv_repair", args)


@pytest.mark.parametrize("strategy, tests", [
    ("swap", ["facts + loader", "facts + import"]),
    ("in_place", ["facts + import", "facts + import"]),
])
def test_the_light_test_runs_between_batches_on_the_copy_only(tmp_path, strategy, tests):
    info = build_scenario("contaminated", tmp_path / "contaminated", cache=CACHE)
    rc, result, output = repair(tmp_path, info, strategy)
    assert rc == 0 and result["healthy"] is True and result["strategy"] == strategy, output
    assert [b["test"] for b in result["batches"]] == tests
    assert [b["result"] for b in result["batches"]] == ["committed", "committed"]


def test_a_failed_light_test_is_judged_by_the_import(tmp_path):
    info = build_scenario("contaminated", tmp_path / "contaminated", cache=CACHE)
    move_cuda_runtime_beside(info.venv)
    rc, result, output = repair(tmp_path, info, "swap")
    assert rc == 0 and result["healthy"] is True and result["strategy"] == "swap", output
    # batches 1 and 2 failed the light test (no libcudart.so.12 through the RPATH) and passed the import: committed
    assert [(b["test"], b["result"]) for b in result["batches"]] == [("facts + import", "committed")] * 3


CUDNN_IS = "import sys, torch; sys.exit(0 if torch.backends.cudnn.version() == %d else 3)"


@pytest.mark.parametrize("strategy", ["swap", "in_place"])
def test_a_repair_that_breaks_the_users_check_is_not_kept(tmp_path, strategy):
    """probe_command passes on the contaminated venv (cuDNN 9.24 of the cu13 wheel) and fails once repaired: with
    swap the copy's full test is compared with the live venv's (the light tests before it run no probe_command)."""
    info = build_scenario("contaminated", tmp_path / "contaminated", cache=CACHE)
    digest = tree_digest(str(info.venv))
    check = [str(info.venv / "bin" / "python"), "-c", CUDNN_IS % 92400]
    rc, result, output = repair(tmp_path, info, strategy, probe_command=check)
    assert rc != 0, output
    # the check ran on what batch 2 left: the venv in place, the copy beside it with swap
    tested = info.venv if strategy == "in_place" else info.venv.parent / ".venv.cuda_venv" / "next"
    assert result["msg"].startswith("batch 2: the test after it failed: probe_command failed: check command "
                                    "%s/bin/python exited with code 3" % tested), result["msg"]
    assert [b["result"] for b in result["batches"]] == ["committed", "rolled back"]
    if strategy == "swap":  # the copy was discarded: the venv is as it was (in place, batch 1 stays committed)
        assert tree_digest(str(info.venv)) == digest


def test_a_check_that_failed_before_may_fail_after_and_the_swap_goes_on(tmp_path):
    info = build_scenario("contaminated", tmp_path / "contaminated", cache=CACHE)
    check = [str(info.venv / "bin" / "python"), "-c", CUDNN_IS % 1]  # fails on the live venv and on the copy
    rc, result, output = repair(tmp_path, info, "swap", probe_command=check)
    assert rc == 0 and result["strategy"] == "swap" and result["healthy"] is True, output
    assert [(b["test"], b["result"]) for b in result["batches"]] == [
        ("facts + loader", "committed"), ("facts + import + probe_command", "committed")]
