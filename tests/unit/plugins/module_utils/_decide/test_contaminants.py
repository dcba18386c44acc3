# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for contaminants.belonging: a contaminant needs evidence; the neighbours of a multi-framework venv stay."""

from __future__ import annotations

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.contaminants import (
    Evidence, belonging, identical_everywhere)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.diagnose import diagnose
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import DesiredState, make_plan
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.record_check import Conflict
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils import observations as O
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils.observations import (
    build, dist, elf, found, pyc, same)

# What torchvision, torchaudio, jax[cuda12] and cupy-cuda12x add to a torch 2.9.1 venv (layouts/neighbours-cu12.json)
VISION = dist("torchvision", "0.24.1", ["torchvision/_C.so"], ["numpy", "torch (==2.9.1)", "scipy ; extra == 'scipy'"])
AUDIO = dist("torchaudio", "2.9.1", ["torchaudio/lib/_torchaudio.so"], ["torch==2.9.1"])
JAX = dist("jax", "0.10.2", ["jax/__init__.py"],
           ["jaxlib<=0.10.2,>=0.10.1", 'jax-cuda12-plugin[with-cuda]<=0.10.2,>=0.10.2; extra == "cuda12"'])
JAXLIB = dist("jaxlib", "0.10.2", ["jaxlib/__init__.py"], ["numpy>=2.0"])
PLUGIN = dist("jax-cuda12-plugin", "0.10.2", ["jax_cuda12_plugin/__init__.py"], [
    "jax-cuda12-pjrt==0.10.2", 'nvidia-cuda-nvcc-cu12>=12.6.85; sys_platform == "linux" and extra == "with-cuda"',
    'nvidia-cudnn-cu12<10.0,>=9.8; sys_platform == "linux" and extra == "with-cuda"'])
PJRT = dist("jax-cuda12-pjrt", "0.10.2", ["jax_plugins/xla_cuda12/xla_cuda_plugin.so"])
NVCC = dist("nvidia-cuda-nvcc-cu12", "12.9.86", ["nvidia/cuda_nvcc/bin/ptxas"])
CUPY = dist("cupy-cuda12x", "14.2.0", ["cupy/_core/core.so"], ["numpy<2.6,>=2.0", "cuda-pathfinder==1.*,>=1.3.4"])
PATHFINDER = dist("cuda-pathfinder", "1.9.1", ["cuda/pathfinder/__init__.py"])
NUMPY = dist("numpy", "2.4.6", ["numpy/__init__.py"])
NEIGHBOURS = [VISION, AUDIO, JAX, JAXLIB, PLUGIN, PJRT, NVCC, CUPY, PATHFINDER, NUMPY]
NEIGHBOUR_ELVES = {"torchvision/_C.so": elf(None, ["libc10.so", "libtorch.so", "libcudart.so.12"]),
                   "torchaudio/lib/_torchaudio.so": elf(None, ["libtorch.so", "libcudart.so.12"]),
                   "cupy/_core/core.so": elf(None, ["libcublas.so.12", "libcudart.so.12"])}
KERNEL = dist("sglang-kernel", "0.4.10", ["sglang_kernel/__init__.py"], ["torch==2.14.1"])


def multi(add=(), **extra):
    return O.healthy(add=NEIGHBOURS + list(add), elves=dict(O.stack_elves(), **NEIGHBOUR_ELVES), **extra)


def test_a_healthy_multi_framework_venv_has_neighbours_and_no_contaminant():
    judged = belonging(multi())
    assert judged.contaminants == {}
    assert [n.as_dict() for n in judged.neighbours] == [
        {"distribution": "cupy-cuda12x 14.2.0", "cuda_major": 12, "kind": "consumer",
         "why": "a CUDA 12 consumer; nothing on disk proves it wrong for this venv"},
        {"distribution": "jax-cuda12-pjrt 0.10.2", "cuda_major": 12, "kind": "consumer",
         "why": "a CUDA 12 consumer; nothing on disk proves it wrong for this venv"},
        {"distribution": "jax-cuda12-plugin 0.10.2", "cuda_major": 12, "kind": "consumer",
         "why": "a CUDA 12 consumer; nothing on disk proves it wrong for this venv"},
        {"distribution": "nvidia-cuda-nvcc-cu12 12.9.86", "cuda_major": 12, "kind": "library",
         "why": "a CUDA 12 wheel; nothing on disk proves it wrong for this venv"},
        {"distribution": "torchaudio 2.9.1", "cuda_major": 12, "kind": "consumer",
         "why": "a CUDA 12 consumer requiring torch==2.9.1 (torch 2.9.1); nothing on disk proves it wrong for this venv"},
        {"distribution": "torchvision 0.24.1", "cuda_major": 12, "kind": "consumer",
         "why": "a CUDA 12 consumer requiring torch (==2.9.1) (torch 2.9.1); nothing on disk proves it wrong for this "
                "venv"}]
    findings = diagnose(multi())
    assert [f.code for f in findings if f.severity != "info"] == []
    assert make_plan(multi(), findings, DesiredState()).empty


def test_the_incident_over_a_multi_framework_venv_removes_the_cu13_wheels_and_keeps_every_neighbour():
    contaminated = O.contaminated(add=NEIGHBOURS, elves=dict(O.stack_elves(), **NEIGHBOUR_ELVES,
                                                             **{"nvidia/cu13/lib/libcublas.so.13": elf("libcublas.so.13")}))
    plan = make_plan(contaminated, diagnose(contaminated), DesiredState())
    removed = sorted(a.name for b in plan.batches for a in b.actions if a.kind == "remove")
    assert removed == ["nvidia-cublas", "nvidia-cudnn-cu13", "nvidia-cusparselt-cu13", "nvidia-nccl-cu13",
                       "nvidia-nvshmem-cu13"]
    assert all(a.evidence for b in plan.batches for a in b.actions if a.kind == "remove")


def test_a_consumer_requiring_another_anchor_is_one_judged_at_the_declared_pin():
    judged = belonging(multi(add=[KERNEL]))
    assert [(c.dist.key, c.evidence) for c in judged.contaminants.values()] == [
        ("sglang-kernel", (Evidence("requirement_conflict", "requires torch==2.14.1; torch 2.9.1 is installed"),))]
    # torch 2.14.1 installed over 2.9.1, the repair declaring torch==2.9.1: torchvision is judged at the pin, and stays
    upgraded = O.healthy(add=NEIGHBOURS, elves=dict(O.stack_elves(), **NEIGHBOUR_ELVES), roots=("torch==2.9.1",))
    upgraded.distributions[[d.key for d in upgraded.distributions].index("torch")] = dist(
        "torch", "2.14.1", ["torch/__init__.py"], ["filelock"])
    assert "torchvision" not in {c.dist.key for c in belonging(upgraded).contaminants.values()}


def test_a_consumer_shipping_another_build_of_a_library_the_anchor_loads_is_one():
    bundled = dist("sgl-kernel", "0.3.9", [same("sgl_kernel/lib/libcudart.so.12", b"cudart 12.4"),
                                           "sgl_kernel/common_ops.abi3.so"])
    obs = O.healthy(add=[bundled], elves=dict(O.stack_elves(), **{
        "sgl_kernel/lib/libcudart.so.12": elf("libcudart.so.12"),
        "sgl_kernel/common_ops.abi3.so": elf(None, ["libcudart.so.12"], runpath="$ORIGIN/lib")}))
    (contaminant,) = belonging(obs).contaminants.values()
    assert contaminant.evidence == (Evidence(
        "ships_other_build", "ships its own libcudart.so.12 (sgl_kernel/lib/libcudart.so.12), another build than the "
        "libcudart.so.12 that import torch loads (nvidia/cuda_runtime/lib/libcudart.so.12 of nvidia-cuda-runtime-cu12 "
        "12.8.90): whichever is imported first serves both"),)


def test_a_copy_with_the_same_bytes_is_no_evidence():
    cudart = "nvidia/cuda_runtime/lib/libcudart.so.12"
    runtime = [d for d in O.cu12_support() if d.key == "nvidia-cuda-runtime-cu12"][0]
    same_bytes = [e for e in runtime.entries if e.path == cudart][0]
    copy = dist("copies-cudart", "1.0", ["copies_cudart/lib/libcudart.so.12"])
    copy = copy.__class__(**dict(copy.__dict__, entries=tuple(
        e.__class__(**dict(e.__dict__, algorithm=same_bytes.algorithm, digest=same_bytes.digest, size=same_bytes.size))
        if e.path.endswith(".so.12") else e for e in copy.entries)))
    obs = O.healthy(add=[copy], elves=dict(O.stack_elves(), **{"copies_cudart/lib/libcudart.so.12": elf("libcudart.so.12")}))
    assert belonging(obs).contaminants == {}


def test_what_requires_a_contaminant_is_one_and_a_kept_application_holds_it():
    server = dist("sglang", "0.5.0", ["sglang/__init__.py"], ["sglang-kernel==0.4.10"])
    judged = belonging(multi(add=[KERNEL, server]))
    assert {c.dist.key: [e.kind for e in c.evidence] for c in judged.contaminants.values()} == {
        "sglang": ["requires_contaminant"], "sglang-kernel": ["requirement_conflict"]}
    app = dist("my-app", "1.0", ["my_app/__init__.py"], ["sglang-kernel"])
    held = belonging(multi(add=[KERNEL, app]))
    assert [(c.dist.key, c.held_by) for c in held.contaminants.values()] == [("sglang-kernel", ("my-app 1.0",))]
    assert held.removable() == {}
    obs = multi(add=[KERNEL, app])
    findings = diagnose(obs)
    assert [a.name for b in make_plan(obs, findings, DesiredState()).batches for a in b.actions] == []
    plan = make_plan(obs, findings, DesiredState(remove=("sglang-kernel", "my-app")))
    assert sorted(a.name for b in plan.batches for a in b.actions) == ["my-app", "sglang-kernel"]


def test_no_anchor_no_judgement():
    assert belonging(build([PLUGIN, NVCC])) == belonging(build([]))
    assert belonging(build([PLUGIN, NVCC])).neighbours == ()


# --- identical files ----------------------------------------------------------------------------------------------

def table(findings):
    return [(f.severity, f.code, f.subject) for f in findings]


def test_identical_everywhere_suppresses_the_conflict():
    """The empty nvidia/__init__.py every cu12 wheel ships (same hash), and a hashless .pyc: no finding."""
    dists = [dist("nvidia-a-cu12", "1.0", [same("nvidia/__init__.py"), pyc("nvidia/__pycache__/__init__.cpython-312.pyc")]),
             dist("nvidia-b-cu12", "1.0", [same("nvidia/__init__.py"), pyc("nvidia/__pycache__/__init__.cpython-312.pyc")]),
             dist("torch", "2.9.1", ["torch/__init__.py"], ["nvidia-a-cu12", "nvidia-b-cu12"])]
    obs = build(dists)
    assert [c.path for c in obs.conflicts] == ["nvidia/__init__.py", "nvidia/__pycache__/__init__.cpython-312.pyc"]
    assert [identical_everywhere(obs, c) for c in obs.conflicts] == [True, True]
    assert table(diagnose(obs)) == []


@pytest.mark.parametrize("entries", [
    [same("nvidia/__init__.py"), same("nvidia/__init__.py", b"# not empty\n")],  # two hashes
    [pyc("nvidia/x.py"), pyc("nvidia/x.py")],  # no hash and not bytecode: unknown bytes
], ids=["different-hashes", "hashless-source"])
def test_conflicts_that_are_not_identical_are_reported(entries):
    dists = [dist("nvidia-a-cu12", "1.0", [entries[0]]), dist("nvidia-b-cu12", "1.0", [entries[1]]),
             dist("torch", "2.9.1", ["torch/__init__.py"], ["nvidia-a-cu12", "nvidia-b-cu12"])]
    obs = build(dists)
    assert identical_everywhere(obs, obs.conflicts[0]) is False
    assert table(diagnose(obs)) == [("error", "FILE_OWNERSHIP_CONFLICT", "nvidia-a-cu12 1.0 & nvidia-b-cu12 1.0")]


def test_identical_everywhere_only_compares_the_conflicts_owners():
    obs = build([dist("a", "1", [same("p.py")]), dist("b", "1", [same("p.py")]), dist("c", "1", [same("p.py", b"x")])])
    assert identical_everywhere(obs, Conflict("p.py", ("a 1", "b 1"), None)) is True
    assert identical_everywhere(obs, Conflict("p.py", ("a 1", "b 1", "c 1"), None)) is False

