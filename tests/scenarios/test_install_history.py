"""The install history and CONTAMINATION_SOURCE on venvs built as users build them: real pip and real uv in
sequence on stand-in wheels, offline; cuda_venv_facts through Ansible.

Each run is separated from the next by a pause longer than the grouping gap (_decide/history.GAP), as a person's
commands are; runs closer than that merge (docs/FINDINGS.md).
"""

import os
import shutil
import subprocess
import sys
import time

import pytest

from scenario_tools import ROOT, run_module
from tests.support.local_servers import MetadataIndex
from tests.standin import build_extra_wheels, build_wheelhouse
from tests.standin._venv import create_uv_venv, make_venv, pip_install, uv_install

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.history import GAP
from ansible_collections.gpuops.cuda_venv.tests.support.wheel_helpers import make_wheel

TORCH_TAG = "py3-none-any"  # the stand-in torch wheels
CACHE = os.environ.get("CUDA_VENV_STANDIN_CACHE", os.path.join(ROOT, "build", "standin-cache"))


@pytest.fixture(scope="module")
def wheels(tmp_path_factory):
    """(cu12 wheelhouse, cu13 wheelhouse, extras): the stand-in stacks, sglang-kernel 0.3.21 (requires the cu13
    cuDNN) and sglang-kernel 0.4.10, which requires torch==2.14.1 as the real one does (../shared/FACTS.md §8)."""
    base = tmp_path_factory.mktemp("wheels")
    extras = build_extra_wheels(["sglang-kernel"], base / "extras", cache=CACHE)
    make_wheel(str(extras), "sglang-kernel", "0.4.10", {"sglang_kernel/__init__.py": b""}, requires=["torch==2.14.1"])
    return (build_wheelhouse("cu128", base / "cu12", cache=CACHE), build_wheelhouse("cu130", base / "cu13", cache=CACHE),
            extras)


def pause():
    time.sleep(GAP + 0.5)


def facts(tmp_path, venv, **sources):
    """cuda_venv_facts (no probe, no GPU) with the wheel-source options ``sources``."""
    rc, result, output = run_module(tmp_path, "cuda_venv_facts", dict(path=str(venv), probe=False, gpu=False, **sources))
    assert rc == 0, output
    return result["ansible_facts"]["cuda_venv"]


def sources(result):
    return [f for f in result["findings"] if f["code"] == "CONTAMINATION_SOURCE"]


def names(labels):
    """Canonical names of "NAME VERSION" labels (or wheel file names' first part)."""
    return sorted(label.split(" ")[0].lower().replace("_", "-") for label in labels)


@pytest.fixture(scope="module")
def pip_venv(tmp_path_factory, wheels):
    """pip only: the venv, torch 2.9.1, then sglang-kernel 0.3.21 (which pulls the CUDA 13 cuDNN)."""
    cu12, cu13, extras = wheels
    venv = make_venv(tmp_path_factory.mktemp("pip") / "venv")
    pause()
    pip_install(venv, ["torch==2.9.1"], [cu12])
    pause()
    pip_install(venv, ["sglang-kernel==0.3.21"], [cu13, extras])
    return venv


def test_pip_consumer_brings_the_other_major_then_a_no_deps_consumer_leaves_it_behind(tmp_path, wheels, pip_venv):
    cu12, _cu13, extras = wheels
    venv = tmp_path / "venv"
    subprocess.run(["cp", "-a", str(pip_venv), str(venv)], check=True)  # keeps the times
    result = facts(tmp_path, venv)
    history = result["history"]
    # 1: ensurepip at the venv's creation; 2: torch's stack; 3: the consumer and the CUDA 13 wheels it pulled.
    assert [(t["number"], t["installer"]) for t in history] == [(1, "pip"), (2, "pip"), (3, "pip")]
    assert names(history[0]["distributions"]) == ["pip"] and history[0]["requested"] == history[0]["distributions"]
    assert "nvidia-cudnn-cu12 9.10.2.21" in history[1]["distributions"] and history[1]["requested"] == ["torch 2.9.1"]
    assert names(history[1]["distributions"]) == names(
        [wheel.split("-", 1)[0] for wheel in os.listdir(str(cu12))])
    assert names(history[2]["distributions"]) == ["nvidia-cublas", "nvidia-cuda-nvrtc", "nvidia-cudnn-cu13", "sglang-kernel"]
    assert history[2]["requested"] == ["sglang-kernel 0.3.21"]
    assert history[0]["time"] < history[1]["time"] < history[2]["time"] and history[2]["time"].endswith("Z")
    [source] = sources(result)
    details = source["details"]
    assert (source["severity"], source["subject"], details["transaction"], details["installer"]) == (
        "warning", "transaction 3", 3, "pip")
    assert names(details["contaminants"]) == ["nvidia-cublas", "nvidia-cuda-nvrtc", "nvidia-cudnn-cu13", "sglang-kernel"]
    assert [(r["distribution"], r["requested"], r["transaction"]) for r in details["roots"]] == [
        ("sglang-kernel 0.3.21", True, 3)]
    assert details["roots"][0]["chain"][0] == "nvidia-cudnn-cu13==9.24.0.43"
    assert details["residue"] == []
    assert "their root is sglang-kernel 0.3.21, requested with pip at %s, which requires nvidia-cudnn-cu13==9.24.0.43" % (
        history[2]["time"]) in source["message"]

    pause()
    pip_install(venv, ["sglang-kernel==0.4.10"], [extras], "--no-deps")
    result = facts(tmp_path, venv)
    history = result["history"]
    assert [names(t["distributions"]) for t in history[2:]] == [
        ["nvidia-cublas", "nvidia-cuda-nvrtc", "nvidia-cudnn-cu13"], ["sglang-kernel"]]
    assert history[3]["requested"] == history[3]["distributions"] == ["sglang-kernel 0.4.10"]
    by_tx = {f["details"]["transaction"]: f for f in sources(result)}
    assert sorted(by_tx) == [3, 4]
    residue = by_tx[3]["details"]
    assert residue["roots"] == [] and names(residue["residue"]) == ["nvidia-cublas", "nvidia-cuda-nvrtc", "nvidia-cudnn-cu13"]
    assert residue["unsatisfied"] == [{"distribution": "sglang-kernel 0.4.10", "requirement": "torch==2.14.1",
                                       "installed": "2.9.1"}]
    assert ". Nothing installed today requires them: the residue of an install that was undone" in by_tx[3]["message"]
    assert "sglang-kernel 0.4.10, requested with pip at %s, requires torch==2.14.1 (installed: torch 2.9.1)" % (
        history[3]["time"]) in by_tx[3]["message"]
    assert [(r["distribution"], r["chain"]) for r in by_tx[4]["details"]["roots"]] == [("sglang-kernel 0.4.10", [])]


@pytest.fixture(scope="module")
def reverted(tmp_path_factory, wheels):
    """uv: torch 2.9.1; pip: sglang-kernel 0.4.10 (pulls torch 2.14.1 and CUDA 13); uv: torch 2.9.1 again."""
    cu12, cu13, extras = wheels
    venv = tmp_path_factory.mktemp("reverted") / "venv"
    env_cache = str(venv.parent / "uv-cache")
    os.environ["UV_CACHE_DIR"] = env_cache
    try:
        create_uv_venv(venv)
        uv_install(venv, ["torch==2.9.1"], [cu12])
        pause()
        # the uv venv holds no pip: pip from outside, pointed at it (pip --python), as users do
        subprocess.run([sys.executable, "-m", "pip", "--isolated",
                        "--python", str(venv / "bin" / "python"), "install", "--quiet", "--no-index", "--find-links",
                        str(cu13), "--find-links", str(extras), "sglang-kernel==0.4.10"], check=True)
        pause()
        uv_install(venv, ["torch==2.9.1"], [cu12])
    finally:
        os.environ.pop("UV_CACHE_DIR", None)
    return venv


def test_a_revert_of_the_anchor_leaves_the_residue_of_a_pip_install_in_a_uv_venv(tmp_path, reverted):
    result = facts(tmp_path, reverted)
    history = result["history"]
    assert [(t["number"], t["installer"]) for t in history] == [(1, "uv"), (2, "pip"), (3, "uv")]
    assert names(history[2]["distributions"]) == ["torch", "triton"]
    assert "torch 2.9.1" not in history[0]["distributions"] and "nvidia-cudnn-cu12 9.10.2.21" in history[0]["distributions"]
    assert "sglang-kernel 0.4.10" in history[1]["distributions"] and "cuda-toolkit 13.0.3.0" in history[1]["distributions"]
    assert history[1]["requested"] == ["sglang-kernel 0.4.10"]
    # uv 0.13 writes REQUESTED into every dist-info it installs.
    assert history[2]["requested"] == history[2]["distributions"]
    [source] = sources(result)
    details = source["details"]
    assert (details["transaction"], details["installer"], details["time"]) == (2, "pip", history[1]["time"])
    assert [r["distribution"] for r in details["roots"]] == ["sglang-kernel 0.4.10"]
    assert "nvidia-cudnn-cu13 9.24.0.43" in details["residue"] and "cuda-toolkit 13.0.3.0" in details["residue"]
    assert details["replaced_later"] == [{"distribution": "torch 2.9.1", "time": history[2]["time"], "transaction": 3},
                                         {"distribution": "triton 3.5.1", "time": history[2]["time"], "transaction": 3}]
    assert details["unsatisfied"] == [{"distribution": "sglang-kernel 0.4.10", "requirement": "torch==2.14.1",
                                       "installed": "2.9.1"}]
    assert "torch 2.9.1 reinstalled at %s" % history[2]["time"] in source["message"]


def test_a_moved_venv_keeps_its_history(tmp_path, reverted):
    before = facts(tmp_path, reverted)["history"]
    moved = tmp_path / "moved"
    shutil.move(str(reverted), str(moved))
    try:
        assert facts(tmp_path, moved)["history"] == before
    finally:
        shutil.move(str(moved), str(reverted))


def test_a_copy_that_reset_the_times_gives_unknown(tmp_path, reverted):
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(reverted), str(copy)], check=True)
    result = facts(tmp_path, copy)
    assert [(t["time"], t["installer"]) for t in result["history"]] == [("unknown", "pip"), ("unknown", "uv")]
    assert "pip and uv wrote dist-info folders within one window" in result["history"][0]["reason"]
    [source] = sources(result)
    assert source["details"]["time"] == "unknown" and "whose time is unknown" in source["message"]


def test_equal_times_give_unknown(tmp_path, reverted, pip_venv):
    for name, venv, expected in (("mixed", reverted, [("unknown", "pip"), ("unknown", "uv")]),
                                 ("pip", pip_venv, [("unknown", "pip")])):
        copy = tmp_path / name
        subprocess.run(["cp", "-a", str(venv), str(copy)], check=True)
        subprocess.run(["find", str(copy), "-exec", "touch", "-h", "-d", "@1780000000", "{}", "+"], check=True)
        history = facts(tmp_path, copy)["history"]
        assert [(t["time"], t["installer"]) for t in history] == expected
    assert history[0]["reason"].endswith("carry the same whole-second time 2026-05-28T20:26:40.000Z: set by a tool "
                                         "(a copy, an archive), not written by an installer")


def test_a_script_running_venv_uv_and_pip_back_to_back_makes_three_transactions(tmp_path, wheels):
    """As the acceptance build does (no pause): python -m venv, uv pip install torch, pip install the consumer. The
    three runs share one window (uv came 0.2 s after ensurepip on the real venv): each installer's stretch is a run."""
    cu12, cu13, extras = wheels
    venv = tmp_path / "venv"
    os.environ["UV_CACHE_DIR"] = str(tmp_path / "uv-cache")
    try:
        make_venv(venv)
        uv_install(venv, ["torch==2.9.1"], [cu12])
        pip_install(venv, ["sglang-kernel==0.3.21"], [cu13, extras])
    finally:
        os.environ.pop("UV_CACHE_DIR", None)
    result = facts(tmp_path, venv)
    history = result["history"]
    assert [(t["number"], t["installer"]) for t in history] == [(1, "pip"), (2, "uv"), (3, "pip")], history
    assert names(history[0]["distributions"]) == ["pip"] and "torch 2.9.1" in history[1]["distributions"]
    assert names(history[2]["distributions"]) == ["nvidia-cublas", "nvidia-cuda-nvrtc", "nvidia-cudnn-cu13", "sglang-kernel"]
    assert history[0]["time"] < history[1]["time"] < history[2]["time"]
    [source] = sources(result)
    assert (source["details"]["transaction"], source["details"]["installer"], source["details"]["time"]) == (
        3, "pip", history[2]["time"])
    assert "their root is sglang-kernel 0.3.21, requested with pip at %s" % history[2]["time"] in source["message"]


@pytest.fixture(scope="module")
def anchor_reverted(tmp_path_factory, wheels):
    """pip only: torch 2.9.1 (CUDA 12), torch 2.14.1 (CUDA 13) over it, then `pip install torch==2.9.1` again."""
    cu12, cu13, _extras = wheels
    venv = make_venv(tmp_path_factory.mktemp("anchor") / "venv")
    pause()
    pip_install(venv, ["torch==2.9.1"], [cu12])
    pause()
    pip_install(venv, ["torch==2.14.1"], [cu13])
    pause()
    pip_install(venv, ["torch==2.9.1"], [cu12])
    return venv


def test_the_configured_wheelhouse_names_the_torch_version_that_left_the_residue(tmp_path, wheels, anchor_reverted):
    cu12, cu13, _extras = wheels
    plain = facts(tmp_path, anchor_reverted)
    [before] = sources(plain)
    assert before["details"]["transaction"] == 3 and before["details"]["roots"] == []
    assert (before["details"]["source_versions"], before["details"]["source_failures"]) == ([], [])
    result = facts(tmp_path, anchor_reverted, find_links=[str(cu12), str(cu13)], no_index=True)
    [source] = sources(result)
    details = source["details"]
    [offered] = details["source_versions"]
    assert (offered["name"], offered["version"], offered["source"]) == ("torch", "2.14.1", str(cu13))
    assert offered["requires"] == [
        "cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvtx]==13.0.3",
        "cuda-bindings<14,>=13.0.3", "nvidia-cudnn-cu13==9.24.0.43", "nvidia-cusparselt-cu13==0.8.1",
        "nvidia-nccl-cu13==2.30.7", "nvidia-nvshmem-cu13==3.4.5"]
    assert sorted(offered["reaches"]) == sorted(details["residue"])  # every CUDA 13 wheel it left
    undone = "the residue of an install that was undone"
    assert source["message"] == before["message"].replace(undone, undone + (
        "; torch 2.14.1 in %s requires cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,"
        "nvrtc,nvtx]==13.0.3, cuda-bindings<14,>=13.0.3, nvidia-cudnn-cu13==9.24.0.43, nvidia-cusparselt-cu13==0.8.1, ... "
        "(reaching %d of them; torch 2.9.1 is installed now)" % (cu13, len(details["residue"]))))
    assert "; distributions that were gone or replaced later: torch 2.9.1 reinstalled at %s" % (
        result["history"][3]["time"]) in source["message"]


def test_an_index_is_asked_only_for_a_residue_and_one_that_fails_is_named(tmp_path, wheels, anchor_reverted, pip_venv):
    cu12, cu13, _extras = wheels
    with MetadataIndex([cu12, cu13]) as index:
        url = "http://127.0.0.1:%d/simple" % index.port
        [rooted] = sources(facts(tmp_path, pip_venv, index_url=url))  # its contaminants have a root: no residue
        assert rooted["details"]["residue"] == [] and index.requests == []
        [source] = sources(facts(tmp_path, anchor_reverted, index_url=url))
        # the anchor and triton, both reinstalled after the residue: their pages and each version's metadata
        assert sorted(path for path, _authorized in index.requests) == [
            "/files/%s-%s.whl.metadata" % (dist, TORCH_TAG)
            for dist in ("torch-2.14.1", "torch-2.9.1", "triton-3.5.1", "triton-3.8.0")] + [
            "/simple/torch/", "/simple/triton/"]
    label = "index 127.0.0.1:%d" % index.port  # index URLs are no_log: Ansible would mask the URL itself
    assert [(o["version"], o["source"]) for o in source["details"]["source_versions"]] == [("2.14.1", label)]
    assert "; torch 2.14.1 in %s requires cuda-toolkit[" % label in source["message"]
    [failed] = sources(facts(tmp_path, anchor_reverted, index_url=url))  # the server is gone
    assert failed["details"]["source_versions"] == [] and [f["source"] for f in failed["details"]["source_failures"]] == [label]
    assert "; the wheel source %s could not be read (" % label in failed["message"]
