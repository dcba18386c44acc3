"""cuda_venv_repair refuses, before any change, wheels that would overwrite another wheel's files (stand-ins, Ansible).

Sources: a find-links folder, and a PEP 503 simple index served on 127.0.0.1 by ``python -m http.server`` (started
and stopped by the fixture below).
"""

import os
import re
import subprocess
import sys

import pytest

from scenario_tools import ROOT, run_module
from tests.standin import build_extra_wheels, build_scenario

from ansible_collections.gpuops.cuda_venv.tests.support.tree_digest import tree_digest

CACHE = os.environ.get("CUDA_VENV_STANDIN_CACHE", os.path.join(ROOT, "build", "standin-cache"))
CU13_CUDNN = "nvidia-cudnn-cu13==9.24.0.43"
CUDNN_PATHS = ["nvidia/cudnn/lib/libcudnn.so.9", "nvidia/cudnn/lib/libcudnn_adv.so.9", "nvidia/cudnn/lib/libcudnn_cnn.so.9",
               "nvidia/cudnn/lib/libcudnn_engines_precompiled.so.9", "nvidia/cudnn/lib/libcudnn_engines_runtime_compiled.so.9",
               "nvidia/cudnn/lib/libcudnn_graph.so.9", "nvidia/cudnn/lib/libcudnn_heuristic.so.9",
               "nvidia/cudnn/lib/libcudnn_ops.so.9", "nvidia/cudnn/include/cudnn.h", "nvidia/cudnn/include/cudnn_adv.h"]
TOKEN = "t0ken-never-shown"


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    """One healthy cu12 venv for the refusals (none of them may change it) and the extra wheels."""
    dest = tmp_path_factory.mktemp("guard")
    info = build_scenario("healthy-cu12", dest / "healthy", cache=CACHE)
    extra = build_extra_wheels(["nvidia-cudnn-cu13", "sglang-kernel", "toy-kernels-cu12"], dest / "extra", CACHE)
    return info, extra


@pytest.fixture(scope="module")
def index(healthy, tmp_path_factory):
    """http://TOKEN@127.0.0.1:PORT/simple: a PEP 503 tree of the stack's and the extra wheels, served for this module."""
    info, extra = healthy
    tree = tmp_path_factory.mktemp("index")
    projects = {}
    for folder in (info.wheelhouse, extra):
        for wheel in sorted(os.listdir(str(folder))):
            os.link(os.path.join(str(folder), wheel), str(tree / wheel))
            projects.setdefault(re.sub(r"[-_.]+", "-", wheel.split("-")[0]).lower(), []).append(wheel)
    for project, wheels in projects.items():
        (tree / "simple" / project).mkdir(parents=True)
        (tree / "simple" / project / "index.html").write_text(
            "".join('<a href="../../%s">%s</a>\n' % (w, w) for w in wheels), encoding="utf-8")
    server = subprocess.Popen([sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1"], cwd=str(tree),
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        port = re.search(r"port (\d+)", server.stdout.readline()).group(1)
        yield "http://user:%s@127.0.0.1:%s/simple" % (TOKEN, port)
    finally:
        server.terminate()
        server.wait(timeout=30)


def repair(tmp_path, info, extra, check=False, **args):
    args = dict(dict(path=str(info.venv), find_links=[str(info.wheelhouse), str(extra)], no_index=True, backend="pip"), **args)
    return run_module(tmp_path, "cuda_venv_repair", args, check=check)


def refused(result):
    return [(f["code"], f["subject"]) for f in result.get("refused", [])]


def test_cu13_cudnn_into_the_cu12_venv_is_refused_in_check_and_normal_mode(tmp_path, healthy):
    info, extra = healthy
    untouched, files = tree_digest(str(info.venv), exclude=()), tree_digest(str(info.venv))
    assert not (info.venv / ".cuda_venv").exists()
    for check in (True, False):
        rc, result, output = repair(tmp_path, info, extra, check=check, packages=[CU13_CUDNN])
        assert rc != 0, output
        assert refused(result) == [("INSTALL_WOULD_OVERWRITE", "nvidia-cudnn-cu13 9.24.0.43"),
                                   ("INSTALL_CUDA_MAJOR_MISMATCH", "nvidia-cudnn-cu13 9.24.0.43")]
        overwrite = result["refused"][0]
        assert overwrite["details"]["paths"] == CUDNN_PATHS  # shared objects first
        assert overwrite["details"]["owners"] == {"nvidia-cudnn-cu12 9.10.2.21": CUDNN_PATHS}
        assert result["msg"].startswith("refused before any change: nvidia-cudnn-cu13 9.24.0.43 "
                                        "(nvidia_cudnn_cu13-9.24.0.43-py3-none-any.whl, declared")
        assert [f["code"] for f in result["findings"]][:2] == ["INSTALL_WOULD_OVERWRITE", "INSTALL_CUDA_MAJOR_MISMATCH"]
        assert result["batches"] == [] and result["changed"] is False
        if check:  # not even the state directory
            assert tree_digest(str(info.venv), exclude=()) == untouched
    assert tree_digest(str(info.venv)) == files  # byte-identical; the normal run keeps its lock in .cuda_venv


def test_index_source_refuses_the_same_and_never_shows_its_token(tmp_path, healthy, index):
    info, extra = healthy
    untouched = tree_digest(str(info.venv))
    rc, result, output = repair(tmp_path, info, extra, check=True, packages=[CU13_CUDNN], find_links=[], no_index=False,
                                index_url=index)
    assert rc != 0, output
    assert refused(result)[0] == ("INSTALL_WOULD_OVERWRITE", "nvidia-cudnn-cu13 9.24.0.43")
    assert TOKEN not in output
    assert tree_digest(str(info.venv)) == untouched  # the downloads are gone again


def test_cu12_cudnn_out_of_the_declared_set_is_a_planned_replacement(tmp_path, healthy):
    info, extra = healthy
    untouched = tree_digest(str(info.venv))
    # The declared set without the cu12 cuDNN: an anchor that does not require it, nothing pruned; torch requires it,
    # so torch is named in remove too (a removal that breaks what stays is refused before anything runs).
    rc, result, output = repair(tmp_path, info, extra, check=True, packages=[CU13_CUDNN], anchor="sympy", prune="none",
                                remove=["nvidia-cudnn-cu12"])
    assert rc != 0 and result["msg"] == ("the repair would remove what a kept distribution requires: torch 2.9.1 requires "
                                         "nvidia-cudnn-cu12==9.10.2.21; name those in remove too, or keep what they require")
    rc, result, output = repair(tmp_path, info, extra, check=True, packages=[CU13_CUDNN], anchor="sympy", prune="none",
                                remove=["nvidia-cudnn-cu12", "torch"])
    assert rc == 0, output
    actions = [(a["action"], a["name"], a["reason"]) for b in result["plan"]["batches"] for a in b["actions"]]
    assert actions == [("remove", "torch", "listed in remove"), ("remove", "nvidia-cudnn-cu12", "listed in remove"),
                       ("install", "nvidia-cudnn-cu13", "declared (anchor or packages), not installed; replaces 10 file(s) "
                        "of nvidia-cudnn-cu12 9.10.2.21, removed before it")]
    assert "refused" not in result
    assert tree_digest(str(info.venv)) == untouched


def test_consumer_whose_dependencies_collide_is_refused(tmp_path, healthy, index):
    info, extra = healthy
    untouched = tree_digest(str(info.venv))
    rc, result, output = repair(tmp_path, info, extra, packages=["sglang-kernel"], with_dependencies=True, find_links=[],
                                no_index=False, index_url=index)
    assert rc != 0, output
    assert refused(result) == [
        ("INSTALL_WOULD_OVERWRITE", "nvidia-cudnn-cu13 9.24.0.43"),
        ("INSTALL_CUDA_MAJOR_MISMATCH", "sglang-kernel 0.3.21"),  # then its dependencies, in pip's order
        ("INSTALL_CUDA_MAJOR_MISMATCH", "nvidia-cudnn-cu13 9.24.0.43"),
        ("INSTALL_CUDA_MAJOR_MISMATCH", "nvidia-cublas 13.1.1.3"),
        ("INSTALL_CUDA_MAJOR_MISMATCH", "nvidia-cuda-nvrtc 13.0.88"),
    ]
    assert result["refused"][0]["details"]["requirement"] == CU13_CUDNN
    assert "dependency of sglang-kernel, resolved by pip" in result["refused"][0]["message"]
    assert TOKEN not in output
    assert tree_digest(str(info.venv)) == untouched


def test_consumer_whose_dependencies_collide_with_nothing_is_installed(tmp_path):
    info = build_scenario("healthy-cu12", tmp_path / "healthy", cache=CACHE)
    extra = build_extra_wheels(["toy-kernels-cu12"], tmp_path / "extra", CACHE)
    rc, result, output = repair(tmp_path, info, extra, packages=["toy-kernels-cu12"], with_dependencies=True)
    assert rc == 0, output
    assert [(a["action"], a["requirement"]) for b in result["plan"]["batches"] for a in b["actions"]] == [
        ("install", "toy-kernels-cu12"), ("install", "toy-kernels-common==1.0.0")]
    assert result["batches"][0]["commands"][0]["argv"][-3:] == ["--", "toy-kernels-cu12", "toy-kernels-common==1.0.0"]
    assert result["changed"] is True and result["healthy"] is True
    assert result["verified"] == {"toy-kernels-cu12": "ok", "toy-kernels-common": "ok"}
