# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for facts_report: the shape of ansible_facts.cuda_venv from literal Observations."""

from __future__ import annotations

from dataclasses import replace

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.diagnose import diagnose
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.facts_report import report
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils import observations as O
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils.observations import (
    GLOBAL_DEPS, GUTTED_ERROR, ROOT, SITE, TORCH_C, TORCH_CUDA, found)

KEYS = ["path", "anchor", "verify", "python", "site_packages", "distributions", "conflicts", "sonames", "unresolved",
        "fallbacks", "import_graph", "requirements", "probe", "gpu", "guard", "history", "contaminants", "neighbours",
        "performance", "lock", "read_index", "findings", "healthy", "summary"]


def facts(obs):
    return report(obs, diagnose(obs))


def row(rows, **match):
    picked = [r for r in rows if all(r[k] == v for k, v in match.items())]
    assert len(picked) == 1, rows
    return picked[0]


def test_report_keys_and_header():
    result = facts(O.gutted())
    assert list(result) == KEYS
    assert (result["path"], result["anchor"], result["verify"]) == (ROOT, "torch", "size")
    assert result["python"] == {"executable": O.PYTHON, "version": "3.12.3", "implementation": "cpython", "ok": True,
                                "error": None}
    assert result["site_packages"] == [SITE]


def test_gutted_distribution_rows():
    rows = facts(O.gutted())["distributions"]
    assert [r["name"] for r in rows] == ["filelock", "nvidia-cublas-cu12", "nvidia-cuda-runtime-cu12", "nvidia-cudnn-cu12",
                                         "nvidia-cusparselt-cu12", "nvidia-nccl-cu12", "nvidia-nvshmem-cu12", "torch"]
    assert row(rows, name="nvidia-cudnn-cu12") == {
        "name": "nvidia-cudnn-cu12", "version": "9.10.2.21", "dist_info": SITE + "/nvidia_cudnn_cu12-9.10.2.21.dist-info",
        "installer": "pip", "requested": False, "cuda_major": 12, "cuda_major_evidence": "name", "files": 4,
        "missing_count": 2, "modified_count": 0,
        "missing": ["nvidia/cudnn/include/cudnn.h", "nvidia/cudnn/lib/libcudnn.so.9"], "modified": [], "problems": []}
    assert (row(rows, name="torch")["cuda_major"], row(rows, name="torch")["cuda_major_evidence"]) == (
        12, "dependency nvidia-cuda-runtime-cu12")
    assert (row(rows, name="filelock")["cuda_major"], row(rows, name="filelock")["cuda_major_evidence"]) == (None, None)


def test_gutted_unresolved_import_graph_probe_and_verdict():
    obs = O.gutted()
    result = facts(obs)
    assert result["unresolved"] == [
        {"object": "torch/lib/libtorch_cuda.so", "distribution": "torch 2.9.1", "soname": soname,
         "loaded_at_import": True, "error": None} for soname in O.COLLIDING_SONAMES]
    graph = result["import_graph"]
    assert {k: graph[k] for k in ("entry_points", "preloaded", "objects")} == {
        "entry_points": [GLOBAL_DEPS], "preloaded": {},
        "objects": [GLOBAL_DEPS, TORCH_C, TORCH_CUDA, "nvidia/cuda_runtime/lib/libcudart.so.12",
                    "nvidia/cublas/lib/libcublas.so.12"]}
    # nodes: every object visited and every file a needed name resolved to, with its owners (for the HTML report)
    torch = {"owners": ["torch 2.9.1"], "cuda_major": 12, "loaded": True}
    assert graph["nodes"] == [
        dict(torch, path=GLOBAL_DEPS), dict(torch, path=TORCH_C), dict(torch, path=TORCH_CUDA),
        {"path": "nvidia/cuda_runtime/lib/libcudart.so.12", "owners": ["nvidia-cuda-runtime-cu12 12.8.90"],
         "cuda_major": 12, "loaded": True},
        {"path": "nvidia/cublas/lib/libcublas.so.12", "owners": ["nvidia-cublas-cu12 12.8.4.1"], "cuda_major": 12,
         "loaded": True},
        {"path": "/lib/x86_64-linux-gnu/libm.so.6", "owners": [], "cuda_major": None, "loaded": False},
        {"path": "/lib/x86_64-linux-gnu/libc.so.6", "owners": [], "cuda_major": None, "loaded": False}]
    # edges: one per DT_NEEDED entry of each visited object, as the loader model resolved it
    assert [e for e in graph["edges"] if e["object"] == TORCH_CUDA] == [
        {"object": TORCH_CUDA, "soname": "libcudart.so.12", "resolved": "nvidia/cuda_runtime/lib/libcudart.so.12",
         "via": "rpath", "error": None},
        {"object": TORCH_CUDA, "soname": "libcublas.so.12", "resolved": "nvidia/cublas/lib/libcublas.so.12",
         "via": "rpath", "error": None}] + [
        {"object": TORCH_CUDA, "soname": soname, "resolved": None, "via": "missing", "error": None}
        for soname in O.COLLIDING_SONAMES] + [
        {"object": TORCH_CUDA, "soname": "libm.so.6", "resolved": "/lib/x86_64-linux-gnu/libm.so.6", "via": "cache",
         "error": None}]
    assert [(e["object"], e["soname"]) for e in graph["edges"] if e["object"] != TORCH_CUDA] == [
        (GLOBAL_DEPS, "libcudart.so.12"), (GLOBAL_DEPS, "libm.so.6"), (TORCH_C, "libtorch_cuda.so"), (TORCH_C, "libc.so.6")]
    assert result["probe"] == {
        "ran": True, "ok": False, "error": GUTTED_ERROR, "traceback": obs.probe.traceback, "returncode": 1,
        "timed_out": False, "signal": None, "loaded": [], "versions": {}, "duration": 0.5, "reused": False, "reused_from": None}
    assert result["findings"] == [f.as_dict() for f in diagnose(obs)]
    assert result["healthy"] is False
    assert result["summary"] == "broken: 9 error(s): RECORD_MISSING_FILES, SONAME_UNRESOLVED, IMPORT_FAILED"
    assert result["gpu"] == {"available": False, "reason": "not gathered (gpu: false)"}


def test_healthy_report():
    result = facts(O.healthy(gpu=O.gpu("13.0", driver="580.65.06")))
    assert result["healthy"] is True and result["summary"] == "healthy"
    assert result["conflicts"] == [{"path": "nvidia/__init__.py", "owners": ["nvidia-cublas-cu12 12.8.4.1",
                                                                             "nvidia-cuda-runtime-cu12 12.8.90"],
                                    "on_disk": None, "identical": True}]
    assert result["unresolved"] == [{"object": "nvidia/nvshmem/lib/nvshmem_bootstrap_mpi.so.3",
                                     "distribution": "nvidia-nvshmem-cu12 3.3.20", "soname": "libmpi.so.40",
                                     "loaded_at_import": False, "error": None}]
    assert result["fallbacks"] == []
    assert result["gpu"] == {
        "available": True, "reason": None, "driver_version": "580.65.06", "cuda_driver_version": 13000, "max_cuda": "13.0",
        "devices": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-00000000-0000-0000-0000-000000000000",
                     "memory_total_mib": 81559, "compute_capability": "9.0"}], "pynvml_installed": True}
    assert result["probe"]["versions"] == {"torch": "2.9.1", "cuda": "12.8", "cudnn": 91002, "nccl": "2.27.5"}
    assert list(result["sonames"]) == sorted(result["sonames"])
    assert result["sonames"]["libnccl.so.2"] == [
        {"distribution": "nvidia-nccl-cu12 2.27.5", "path": "nvidia/nccl/lib/libnccl.so.2", "cuda_major": 12}]
    assert "nvshmem_bootstrap_mpi.so.3" in result["sonames"]


def test_requirement_rows():
    rows = facts(O.healthy())["requirements"]
    assert rows[0] == {"requirement": "torch", "name": "torch", "extras": [], "specifier": "", "required_by": "",
                       "chain": [], "installed": "2.9.1", "satisfied": True}
    assert row(rows, name="nvidia-cublas-cu12", required_by="nvidia-cudnn-cu12") == {
        "requirement": "nvidia-cublas-cu12", "name": "nvidia-cublas-cu12", "extras": [], "specifier": "",
        "required_by": "nvidia-cudnn-cu12", "chain": ["torch", "nvidia-cudnn-cu12"], "installed": "12.8.4.1",
        "satisfied": True}


def test_fallback_rows_list_every_cuda_soname_resolved_outside_the_venv():
    graph = O.torch_graph()
    graph[TORCH_CUDA] = graph[TORCH_CUDA] + [found("libcurand.so.10", "/usr/local/cuda/lib64/libcurand.so.10", "cache"),
                                             found("libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "cache")]
    other = {"nvidia/nvshmem/lib/nvshmem_bootstrap_mpi.so.3": [
        found("libcudart.so.12", "/usr/local/cuda/lib64/libcudart.so.12", "ld_library_path")]}
    assert facts(O.healthy(import_graph=graph, other=other))["fallbacks"] == [
        {"object": "torch/lib/libtorch_cuda.so", "soname": "libcuda.so.1",
         "resolved": "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "via": "cache", "loaded_at_import": True},
        {"object": "nvidia/nvshmem/lib/nvshmem_bootstrap_mpi.so.3", "soname": "libcudart.so.12",
         "resolved": "/usr/local/cuda/lib64/libcudart.so.12", "via": "ld_library_path", "loaded_at_import": False},
        {"object": "torch/lib/libtorch_cuda.so", "soname": "libcurand.so.10",
         "resolved": "/usr/local/cuda/lib64/libcurand.so.10", "via": "cache", "loaded_at_import": True},
    ]


def test_probe_not_run():
    disabled = O.healthy(probe=None)
    assert facts(disabled)["probe"] == {"ran": False, "ok": None, "reason": "disabled (probe: false)"}
    broken = O.healthy(probe=None, interp=O.interpreter(False, "exec format error"))
    broken.options = replace(broken.options, probe=True)
    result = facts(broken)
    assert result["probe"] == {"ran": False, "ok": None, "reason": "the venv's interpreter cannot run"}
    assert result["python"] == {"executable": O.PYTHON, "version": "3.12.3", "implementation": None, "ok": False,
                                "error": "exec format error"}  # the version pyvenv.cfg records


def test_python_executable_and_version_fall_back_to_the_layout():
    obs = O.healthy(interp=replace(O.interpreter(), executable="", version=None))
    obs.layout = replace(obs.layout, version="3.12.1")
    assert facts(obs)["python"] == {"executable": O.PYTHON, "version": "3.12.1", "implementation": "cpython", "ok": True,
                                    "error": None}


def test_contaminated_conflicts_say_whose_bytes_are_on_disk():
    conflicts = facts(O.contaminated())["conflicts"]
    assert row(conflicts, path="nvidia/cudnn/lib/libcudnn.so.9") == {
        "path": "nvidia/cudnn/lib/libcudnn.so.9", "owners": ["nvidia-cudnn-cu12 9.10.2.21", "nvidia-cudnn-cu13 9.24.0.43"],
        "on_disk": "nvidia-cudnn-cu13 9.24.0.43", "identical": False}
    assert row(conflicts, path="nvidia/cudnn/include/cudnn.h")["on_disk"] is None


def test_loaded_library_names_the_distribution_whose_bytes_were_loaded():
    loaded = facts(O.contaminated())["probe"]["loaded"]
    assert row(loaded, path=SITE + "/nvidia/cudnn/lib/libcudnn.so.9")["distribution"] == "nvidia-cudnn-cu13 9.24.0.43"


def test_loaded_library_of_one_owner_and_of_none():
    probe = O.probe_ok({"cudnn": 91002}, loaded=["nvidia/nccl/lib/libnccl.so.2", "/lib/x86_64-linux-gnu/libm.so.6"])
    assert facts(O.healthy(probe=probe))["probe"]["loaded"] == [  # by path: /proc/self/maps's order changes
        {"path": "/lib/x86_64-linux-gnu/libm.so.6", "distribution": None},
        {"path": SITE + "/nvidia/nccl/lib/libnccl.so.2", "distribution": "nvidia-nccl-cu12 2.27.5"}]
