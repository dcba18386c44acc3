"""Why a healthy venv is slow, through Ansible: the facts' performance part and the repair's kernel check.

A real venv (no pip) holds a 'torch' 2.14.1 whose gcc-built libtorch_cuda.so carries a real ``.nv_fatbin`` with the
architectures measured on the real wheels (sm_75 to sm_121, no PTX); no GPU here, so ``gpu_archs`` names the GPUs.
"""

import os
import shutil
import subprocess
import sys

import pytest

from scenario_tools import codes, run_module, subjects

from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import make_dist
from ansible_collections.gpuops.cuda_venv.tests.support.elf_helpers import requires_gcc
from ansible_collections.gpuops.cuda_venv.tests.support.fatbin_helpers import SASS, build_fatbin_so, fatbin_bytes
from ansible_collections.gpuops.cuda_venv.tests.support.tree_digest import tree_digest
from ansible_collections.gpuops.cuda_venv.tests.support.venv_holder import start_holder, stop_holders
from ansible_collections.gpuops.cuda_venv.tests.support.wheel_helpers import make_wheel

TORCH_2141 = fatbin_bytes([(SASS, arch) for arch in (75, 80, 86, 90, 100, 103, 120)], [(SASS, 121)])
FLASH_OPS = fatbin_bytes([(SASS, 80), (SASS, 86), (SASS, 90, 0x100011)])
LIBRARY = "torch/lib/libtorch_cuda.so"

pytestmark = requires_gcc


@pytest.fixture
def venv(tmp_path):
    path = tmp_path / "train"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    site = next(path.glob("lib/python3*/site-packages"))
    lib = build_fatbin_so(tmp_path / "libtorch_cuda.so", TORCH_2141, soname="libtorch_cuda.so")
    with open(lib, "rb") as handle:
        make_dist(str(site), "torch", "2.14.1", files={"torch/__init__.py": b"", LIBRARY: handle.read()})
    with open(path / "bin" / "activate", "a") as handle:
        handle.write("\nexport CUDA_LAUNCH_BLOCKING=1\n")
    return path, site


@pytest.fixture
def holders():
    started = []
    yield started
    stop_holders(started)


def test_facts_name_the_missing_kernels_the_slow_variable_and_the_process_to_restart(tmp_path, venv, holders):
    path, site = venv
    library = str(site / LIBRARY)
    pid, cmdline = start_holder(str(path / "bin" / "python"), library, {"PATH": os.environ["PATH"], "NCCL_P2P_DISABLE": "1"},
                                holders)
    fresh = library + ".new"
    shutil.copyfile(library, fresh)
    os.replace(fresh, library)  # a reinstall in place: the running job keeps the old file
    rc, result, output = run_module(tmp_path, "cuda_venv_facts", {"path": str(path), "probe": False, "gpu_archs": ["7.0", "9.0"]})
    assert rc == 0, output
    facts = result["ansible_facts"]["cuda_venv"]
    assert codes(facts, "error") == ["KERNELS_MISSING"] and facts["healthy"] is False
    assert subjects(facts, "KERNELS_MISSING") == [LIBRARY]
    assert subjects(facts, "ENV_SLOWS_CUDA") == ["CUDA_LAUNCH_BLOCKING=1", "NCCL_P2P_DISABLE=1"]
    assert subjects(facts, "RESTART_NEEDED") == ["pid %d" % pid]
    perf = facts["performance"]
    assert [(e["path"], e["sass"], e["ptx"], e["verdicts"]) for e in perf["kernels"]["extensions"]] == [
        (LIBRARY, ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_103", "sm_120", "sm_121"], [], {"7.0": "none", "9.0": "sass"})]
    assert perf["restart_needed"] == [{"pid": pid, "cmdline": cmdline, "stale": [library + " (deleted)"], "reasons": ["deleted"]}]


def test_a_bad_gpu_arch_is_refused_by_name(tmp_path, venv):
    path, _site = venv
    rc, result, output = run_module(tmp_path, "cuda_venv_facts", {"path": str(path), "gpu_archs": ["sm_90"]})
    assert rc != 0, output
    assert result["msg"] == "gpu_archs: 'sm_90' is not a compute capability such as '8.0' or '9.0'"


def test_the_repair_refuses_a_declared_wheel_without_a_kernel_for_the_gpu(tmp_path, venv):
    path, _site = venv
    lib = build_fatbin_so(tmp_path / "flash_ops.abi3.so", FLASH_OPS)
    with open(lib, "rb") as handle:
        make_wheel(str(tmp_path / "wh"), "sglang-kernel", "0.4.10", files={"sgl_kernel/flash_ops.abi3.so": handle.read()})
    args = {"path": str(path), "packages": ["sglang-kernel==0.4.10"], "find_links": [str(tmp_path / "wh")], "no_index": True,
            "backend": "pip", "gpu_archs": ["10.0"]}
    untouched = tree_digest(str(path))
    for check in (True, False):
        rc, result, output = run_module(tmp_path, "cuda_venv_repair", args, check=check)
        assert rc != 0, output
        assert [(f["code"], f["subject"]) for f in result["refused"]] == [("INSTALL_NO_KERNEL", "sglang-kernel 0.4.10")]
        assert result["msg"] == (
            "refused before any change: sglang-kernel 0.4.10 (sglang_kernel-0.4.10-py3-none-any.whl): "
            "sgl_kernel/flash_ops.abi3.so has no kernel for compute capability 10.0: it carries SASS for sm_80, sm_86, "
            "sm_90, no PTX.")
        assert result["batches"] == [] and result["changed"] is False
        assert tree_digest(str(path)) == untouched
    rc, result, output = run_module(tmp_path, "cuda_venv_repair", dict(args, gpu_archs=["9.0"]), check=True)
    assert rc == 0, output
    assert [[a["name"] for a in b["actions"]] for b in result["plan"]["batches"]] == [["sglang-kernel"]]


@pytest.mark.parametrize("strategy, reason", [("in_place", "deleted"), ("swap", "previous generation")])
def test_the_repair_names_the_processes_to_restart(tmp_path, holders, strategy, reason):
    """A job holds toy's library; toy's library is damaged; the repair reinstalls it: in place the job's mapping is
    deleted, by swap it moved to the previous generation. Either way the result names the job to restart."""
    uv = os.path.join(os.path.dirname(sys.executable), "uv")
    path = tmp_path / "train"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    lib = build_fatbin_so(tmp_path / "libtoy.so", FLASH_OPS, soname="libtoy.so")
    with open(lib, "rb") as handle:
        make_wheel(str(tmp_path / "wh"), "toy", "1.0", files={"toy/__init__.py": b"", "toy/libtoy.so": handle.read()})
    env = dict(os.environ, UV_CACHE_DIR=str(tmp_path / "uv-cache"), UV_LINK_MODE="copy")
    subprocess.run([uv, "pip", "install", "--python", str(path / "bin" / "python"), "--no-index", "--find-links",
                    str(tmp_path / "wh"), "toy==1.0"], check=True, env=env, capture_output=True)
    library = str(next(path.glob("lib/python3*/site-packages")) / "toy" / "libtoy.so")
    pid, cmdline = start_holder(str(path / "bin" / "python"), library, {"PATH": os.environ["PATH"]}, holders)
    with open(library, "ab") as handle:
        handle.write(b"damage")  # in place: the job keeps its mapping, RECORD's size no longer matches
    args = {"path": str(path), "anchor": "toy", "find_links": [str(tmp_path / "wh")], "no_index": True, "backend": "uv",
            "uv_executable": uv, "strategy": strategy}
    rc, result, output = run_module(tmp_path, "cuda_venv_repair", args, env={"UV_CACHE_DIR": str(tmp_path / "uv-cache")})
    assert rc == 0 and result["changed"] is True, output
    assert result["strategy"] == strategy
    [row] = result["restart_needed"]
    assert (row["pid"], row["cmdline"], row["reasons"]) == (pid, cmdline, [reason])
    assert len(row["stale"]) == 1 and row["stale"][0].endswith("/toy/libtoy.so" + (" (deleted)" if reason == "deleted" else ""))
