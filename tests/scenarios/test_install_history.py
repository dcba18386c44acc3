"""The install history and CONTAMINATION_SOURCE on venvs built as users build them: real pip and real uv in
sequence on stand-in wheels, offline; cuda_venv_facts through Ansible.

Commands come 1.5 to 3 s apart, as a person's do (a run ends after _decide/history.IDLE with nothing written:
docs/FINDINGS.md). Large stand-ins (torch and triton swollen by hundreds of MB of zeros, a wheel of 2 MB of
Python) make pip write and byte-compile for seconds while uv links them at once (the former rule, which allowed a gap
by RECORD size, merged the CUDA 13 attempt with the revert and split pip's one install). Every venv is removed after its
tests.
"""

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import time
import zipfile

import pytest

from scenario_tools import ROOT, run_module
from tests.support.local_servers import MetadataIndex
from tests.standin import build_extra_wheels, build_wheelhouse
from tests.standin._venv import create_uv_venv, make_venv, pip_install, uv_install

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.history import IDLE
from ansible_collections.gpuops.cuda_venv.tests.support.wheel_helpers import make_wheel

TORCH_TAG = "py3-none-any"  # the stand-in torch wheels
CACHE = os.environ.get("CUDA_VENV_STANDIN_CACHE", os.path.join(ROOT, "build", "standin-cache"))
TORCH_MB = 200  # the real torch wheels install 4-6 GB; what matters is that pip takes seconds and uv does not
LIB_MB = 100  # triton's
CU13_FOUR = ["nvidia-cudnn-cu13==9.24.0.43", "nvidia-cusparselt-cu13==0.8.1", "nvidia-nccl-cu13==2.30.7",
             "nvidia-nvshmem-cu13==3.4.5"]  # the incident's four (docs/ACCEPTANCE.md, incident-cu13)
CU12_FOUR = ["nvidia-cudnn-cu12==9.10.2.21", "nvidia-cusparselt-cu12==0.7.1", "nvidia-nccl-cu12==2.27.5",
             "nvidia-nvshmem-cu12==3.3.20"]
UV_MEANS = "installed by uv; uv marks every distribution requested"
PIP_MEANS = "asked for by name: pip writes REQUESTED only for what its command line named"


def _digest(hashed):
    return "sha256=" + base64.urlsafe_b64encode(hashed.digest()).rstrip(b"=").decode()


def heavy_python(folder):
    """bigpy 1.0: 2 MB of generated Python and a few bytes else, so that pip byte-compiles it for seconds."""
    code = "".join("def f%d(x):\n    return [x * %d for _ in range(3)]\n" % (i, i) for i in range(40000)).encode()
    make_wheel(folder, "bigpy", "1.0", {"bigpy/__init__.py": b"", "bigpy/generated.py": code})
    return folder


def swollen(src, dest, megabytes):
    """The stand-in wheelhouse ``src`` copied to ``dest``, the wheels named in ``megabytes`` ({file name prefix: MB})
    swollen by that many megabytes of zeros in one shared object, second in the wheel (its first file stays small, as
    wheel builders order them), RECORD rewritten: as large as the real wheels, deflated to a few hundred KB."""
    os.makedirs(dest)
    for name in sorted(os.listdir(str(src))):
        size = next((mb for prefix, mb in megabytes.items() if name.startswith(prefix + "-")), None)
        if size is None:
            shutil.copy(os.path.join(str(src), name), dest)
            continue
        with zipfile.ZipFile(os.path.join(str(src), name)) as original, \
                zipfile.ZipFile(os.path.join(dest, name), "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
            members = original.infolist()
            record = next(m.filename for m in members if m.filename.endswith(".dist-info/RECORD"))
            top = members[0].filename.split("/", 1)[0]
            hashed, chunk = hashlib.sha256(), bytes(1 << 20)
            for number, member in enumerate(m for m in members if m.filename != record):
                archive.writestr(member.filename, original.read(member))
                if number == 0:
                    with archive.open(top + "/lib/libswollen.so", "w", force_zip64=True) as handle:
                        for _megabyte in range(size):
                            handle.write(chunk)
                            hashed.update(chunk)
            row = "%s/lib/libswollen.so,%s,%d\n" % (top, _digest(hashed), size << 20)
            archive.writestr(record, original.read(record).decode() + row)
    return dest


@pytest.fixture(scope="module")
def wheels(tmp_path_factory):
    """(cu12 wheelhouse, cu13 wheelhouse, extras, heavy): the stand-in stacks, sglang-kernel 0.3.21 (requires the cu13
    cuDNN) and sglang-kernel 0.4.10, which requires torch==2.14.1 as the real one does (docs/FINDINGS.md), and
    (cu12, cu13, bigpy): the stacks with torch at TORCH_MB and triton at LIB_MB, and the compile-heavy wheel. The
    cu12 cuDNN stays small: reinstalled later, its first install leaves a hole no file fills (docs/FINDINGS.md)."""
    base = tmp_path_factory.mktemp("wheels")
    extras = build_extra_wheels(["sglang-kernel"], base / "extras", cache=CACHE)
    make_wheel(str(extras), "sglang-kernel", "0.4.10", {"sglang_kernel/__init__.py": b""}, requires=["torch==2.14.1"])
    cu12, cu13 = build_wheelhouse("cu128", base / "cu12", cache=CACHE), build_wheelhouse("cu130", base / "cu13", cache=CACHE)
    heavy = (swollen(cu12, str(base / "cu12-heavy"), {"torch": TORCH_MB, "triton": LIB_MB}),
             swollen(cu13, str(base / "cu13-heavy"), {"torch": TORCH_MB, "triton": LIB_MB}), heavy_python(str(base / "bigpy")))
    yield cu12, cu13, extras, heavy
    shutil.rmtree(str(base))


def pause(seconds=1.5):
    """A person's pause between two commands: longer than IDLE."""
    assert seconds > IDLE
    time.sleep(seconds)


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


def labels(wheelhouse, but=()):
    """"NAME VERSION" of every wheel in ``wheelhouse`` (as the facts label them), less those in ``but``."""
    found = set()
    for wheel in os.listdir(str(wheelhouse)):
        name, version = wheel.split("-")[:2]
        found.add("%s %s" % (name.lower().replace("_", "-"), version))
    return sorted(found - set(but))


def lowered(history):
    """[(number, installer, sorted "name version" with canonical names)] of a history."""
    return [(t["number"], t["installer"], sorted(" ".join((n.lower().replace("_", "-"), v)) for n, v in
                                                 (d.split(" ") for d in t["distributions"]))) for t in history]


@pytest.fixture(scope="module")
def pip_venv(tmp_path_factory, wheels):
    """pip only: the venv, torch 2.9.1, then sglang-kernel 0.3.21 (which pulls the CUDA 13 cuDNN)."""
    cu12, cu13, extras, _heavy = wheels
    venv = make_venv(tmp_path_factory.mktemp("pip") / "venv")
    pause()
    pip_install(venv, ["torch==2.9.1"], [cu12])
    pause()
    pip_install(venv, ["sglang-kernel==0.3.21"], [cu13, extras])
    yield venv
    shutil.rmtree(str(venv.parent))


def test_pip_consumer_brings_the_other_major_then_a_no_deps_consumer_leaves_it_behind(tmp_path, wheels, pip_venv):
    cu12, _cu13, extras, _heavy = wheels
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
    cu12, cu13, extras, _heavy = wheels
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
    yield venv
    shutil.rmtree(str(venv.parent))


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


def _slow_copy(src, dst):
    time.sleep(0.02)
    return shutil.copy(src, dst)


def test_a_copy_that_reset_the_times_gives_unknown_and_names_candidates_without_claiming_one(tmp_path, reverted, pip_venv):
    """``cp -r`` writes every file again in directory order: uv's and pip's folders taking turns, each of pip's
    distributions written in pieces (its package, then its dist-info, others between): no run can be told."""
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(reverted), str(copy)], check=True)
    result = facts(tmp_path, copy)
    assert [(t["number"], t["time"], t["installer"]) for t in result["history"]] == [(1, "unknown", "pip"), (2, "unknown", "uv")]
    # which sign of the copy shows first depends on its timing: equal runs taking turns, or a file after INSTALLER
    assert "reset" in result["history"][0]["reason"], result["history"][0]["reason"]
    [source] = sources(result)
    details = source["details"]
    assert (details["time"], details["transaction"], details["candidates"]) == ("unknown", 1, ["sglang-kernel 0.4.10"])
    assert "the history cannot tell which install brought them. A candidate for " in source["message"]
    assert "their root is" not in source["message"]
    shutil.rmtree(str(copy))
    # One installer only. A copy writes the files in directory order, as ``cp -r`` does; spaced 20 ms apart (a copy of
    # a real venv takes minutes): a small venv copied within one 10 ms tick of the clock would show no order at all.
    shutil.copytree(str(pip_venv), str(copy), symlinks=True, copy_function=_slow_copy)
    history = facts(tmp_path, copy)["history"]
    assert [(t["number"], t["time"], t["installer"]) for t in history] == [(1, "unknown", "pip")]
    assert "reset" in history[0]["reason"] and "copy" in history[0]["reason"], history[0]["reason"]
    shutil.rmtree(str(copy))


def test_equal_times_give_unknown(tmp_path, reverted, pip_venv):
    for name, venv, expected in (("mixed", reverted, [("unknown", "pip"), ("unknown", "uv")]),
                                 ("pip", pip_venv, [("unknown", "pip")])):
        copy = tmp_path / name
        subprocess.run(["cp", "-a", str(venv), str(copy)], check=True)
        subprocess.run(["find", str(copy), "-exec", "touch", "-h", "-d", "@1780000000", "{}", "+"], check=True)
        history = facts(tmp_path, copy)["history"]
        assert [(t["time"], t["installer"]) for t in history] == expected
        shutil.rmtree(str(copy))
    assert history[0]["reason"].endswith("carry the same whole-second time 2026-05-28T20:26:40.000Z: set by a tool "
                                         "(a copy, an archive), not written by an installer")


def test_a_script_running_venv_uv_and_pip_back_to_back_makes_three_transactions(tmp_path, wheels):
    """As the acceptance build does (no pause): python -m venv, uv pip install torch, pip install the consumer. The
    installer changes: each installer's stretch is a run, however close (uv came 0.2 s after ensurepip on the real
    venv)."""
    cu12, cu13, extras, _heavy = wheels
    venv = tmp_path / "venv"
    make_venv(venv)
    uv_install(venv, ["torch==2.9.1"], [cu12], "--cache-dir", str(tmp_path / "uv-cache"))
    pip_install(venv, ["sglang-kernel==0.3.21"], [cu13, extras])
    result = facts(tmp_path, venv)
    shutil.rmtree(str(venv))
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
    cu12, cu13, _extras, _heavy = wheels
    venv = make_venv(tmp_path_factory.mktemp("anchor") / "venv")
    pause()
    pip_install(venv, ["torch==2.9.1"], [cu12])
    pause()
    pip_install(venv, ["torch==2.14.1"], [cu13])
    pause()
    pip_install(venv, ["torch==2.9.1"], [cu12])
    yield venv
    shutil.rmtree(str(venv.parent))


def test_the_configured_wheelhouse_names_the_torch_version_that_left_the_residue(tmp_path, wheels, anchor_reverted):
    cu12, cu13, _extras, _heavy = wheels
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
    cu12, cu13, _extras, _heavy = wheels
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


@pytest.fixture(scope="module")
def uv_incident(tmp_path_factory, wheels):
    """The incident's uv history, commands a second or two apart: a uv venv, ``uv pip install torch==2.9.1 bigpy``,
    ``uv pip install torch==2.14.1`` (the CUDA 13 attempt), ``uv pip install torch==2.9.1`` (the revert)."""
    _cu12, _cu13, _extras, (cu12, cu13, bigpy) = wheels
    base = tmp_path_factory.mktemp("uv-incident")
    venv, cache = base / "venv", ("--cache-dir", str(base / "uv-cache"))
    create_uv_venv(venv)
    uv_install(venv, ["torch==2.9.1", "bigpy"], [cu12, bigpy], *cache)
    pause(1.5)
    uv_install(venv, ["torch==2.14.1"], [cu13], *cache)
    pause(2)
    uv_install(venv, ["torch==2.9.1"], [cu12], *cache)
    yield venv
    shutil.rmtree(str(base))


def test_uv_runs_a_second_apart_are_three_transactions_the_cuda_13_attempt_its_own(tmp_path, wheels, uv_incident):
    cu12, cu13, _extras, _heavy = wheels
    result = facts(tmp_path, uv_incident)
    history = result["history"]
    first = labels(cu12) + ["bigpy 1.0"]
    assert lowered(history) == [
        # torch 2.14.1 asks for a newer setuptools; the revert reinstalls torch and triton only
        (1, "uv", sorted(set(first) - {"setuptools 65.5.0", "torch 2.9.1", "triton 3.5.1"})),
        (2, "uv", labels(cu13, but=first + ["torch 2.14.1", "triton 3.8.0"])),
        (3, "uv", ["torch 2.9.1", "triton 3.5.1"])], history
    assert history[0]["time"] < history[1]["time"] < history[2]["time"]
    assert all(t["requested"] == t["distributions"] and t["requested_means"] == UV_MEANS for t in history)
    [source] = sources(result)
    details = source["details"]
    assert (details["transaction"], details["installer"], details["time"], details["roots"], details["candidates"]) == (
        2, "uv", history[1]["time"], [], [])
    assert details["replaced_later"] == [{"distribution": "torch 2.9.1", "time": history[2]["time"], "transaction": 3},
                                         {"distribution": "triton 3.5.1", "time": history[2]["time"], "transaction": 3}]
    assert ("Nothing installed today requires them: asked for by name or the residue of an install that was undone "
            "(installed by uv; uv marks every distribution requested: REQUESTED cannot tell)") in source["message"]


@pytest.fixture(scope="module")
def pip_fixes(tmp_path_factory, wheels):
    """pip, commands 1.5 to 3 s apart: the venv; torch 2.9.1 with its stack and bigpy in one install; the CUDA 13
    four; the CUDA 12 four force-reinstalled (the wrong-order fix: the CUDA 13 four still installed); then the cu12
    cuDNN alone (a partial fix)."""
    _cu12, _cu13, _extras, (cu12, cu13, bigpy) = wheels
    venv = make_venv(tmp_path_factory.mktemp("pip-fixes") / "venv")
    pause(1.5)
    pip_install(venv, ["torch==2.9.1", "bigpy"], [cu12, bigpy])
    pause(3)
    pip_install(venv, CU13_FOUR, [cu13])
    pause(2)
    pip_install(venv, CU12_FOUR, [cu12], "--force-reinstall", "--no-deps")
    pause(1.5)
    pip_install(venv, CU12_FOUR[:1], [cu12], "--force-reinstall", "--no-deps")
    yield venv
    shutil.rmtree(str(venv.parent))


def test_pip_runs_seconds_apart_are_their_own_transactions_and_one_long_install_is_one(tmp_path, wheels, pip_fixes):
    cu12, _cu13, _extras, _heavy = wheels
    history = facts(tmp_path, pip_fixes)["history"]
    four13 = [r.replace("==", " ") for r in CU13_FOUR]
    four12 = [r.replace("==", " ") for r in CU12_FOUR]
    assert lowered(history) == [
        (1, "pip", [label for label in lowered(history)[0][2] if label.split(" ")[0] in ("pip", "setuptools")]),
        (2, "pip", sorted(set(labels(cu12) + ["bigpy 1.0"]) - set(four12))),
        (3, "pip", sorted(four13 + ["nvidia-cublas 13.1.1.3", "nvidia-cuda-nvrtc 13.0.88"])),
        (4, "pip", sorted(four12[1:])),
        (5, "pip", four12[:1])], history
    assert names(history[0]["distributions"])[-1] == "pip"
    assert [sorted(t["requested"]) for t in history[1:]] == [["bigpy 1.0", "torch 2.9.1"], four13, four12[1:], four12[:1]]
    assert all(t["requested_means"] == PIP_MEANS for t in history)
    assert [t["time"] for t in history] == sorted(t["time"] for t in history)
    assert history[1]["duration"] > 1  # pip wrote and byte-compiled for seconds: one run
