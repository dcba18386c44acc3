# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for contaminants.belonging: a contaminant needs evidence; the neighbours of a multi-framework venv stay."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.contaminants import (
    Evidence, belonging, identical_everywhere)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.diagnose import diagnose
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import DesiredState, make_plan
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.distributions import RecordEntry
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.record_check import Conflict
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils import observations as O
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils.observations import (
    build, dist, elf, pyc, same)

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


def multi(add=(), elves=None, **extra):
    return O.healthy(add=NEIGHBOURS + list(add), elves=dict(O.stack_elves(), **NEIGHBOUR_ELVES, **(elves or {})), **extra)


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


def test_a_bundled_copy_in_a_distribution_that_imports_the_anchor_first_is_no_evidence():
    """torchvision.libs/libcudart.e8e8b82a.so.12 keeps the soname libcudart.so.12 (the real layout), but torchvision
    imports torch first: torch's copy is loaded by then and the bundled one serves torchvision alone."""
    vision = dist("torchvision", "0.24.1", [same("torchvision.libs/libcudart.e8e8b82a.so.12", b"cudart 12.8 vendored"),
                                            "torchvision/_C.so"], ["torch (==2.9.1)"])
    obs = O.healthy(add=[vision], elves=dict(O.stack_elves(), **{
        "torchvision.libs/libcudart.e8e8b82a.so.12": elf("libcudart.so.12"),
        "torchvision/_C.so": elf(None, ["libcudart.so.12", "libtorch.so"])}))
    assert belonging(obs).contaminants == {}
    assert [n.dist.key for n in belonging(obs).neighbours] == ["torchvision"]


def test_a_copy_with_the_same_bytes_is_no_evidence():
    cudart = "nvidia/cuda_runtime/lib/libcudart.so.12"
    runtime = [d for d in O.cu12_support() if d.key == "nvidia-cuda-runtime-cu12"][0]
    same_bytes = [e for e in runtime.entries if e.path == cudart][0]
    copy = dist("copies-cudart", "1.0", [RecordEntry("copies_cudart/lib/libcudart.so.12", same_bytes.algorithm,
                                                     same_bytes.digest, same_bytes.size)])
    obs = O.healthy(add=[copy], elves=dict(O.stack_elves(), **{"copies_cudart/lib/libcudart.so.12": elf("libcudart.so.12")}))
    assert belonging(obs).contaminants == {}


def test_an_application_requiring_a_contaminant_is_kept_and_holds_it():
    """The application the user installed (nothing requires it) is never removed for a dependency: it holds it."""
    server = dist("sglang", "0.5.0", ["sglang/__init__.py"], ["sglang-kernel==0.4.10"])
    judged = belonging(multi(add=[KERNEL, server]))
    assert {c.dist.key: ([e.kind for e in c.evidence], c.held_by) for c in judged.contaminants.values()} == {
        "sglang-kernel": (["requirement_conflict"], ("sglang 0.5.0",))}
    assert "sglang" in [n.dist.key for n in judged.neighbours] and judged.removable() == {}
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


# --- the LLM-serving stacks: wheels with several CUDA builds, stray shared files, applications ---------------------

SAVER = dist("torch-memory-saver", "0.0.9", ["torch_memory_saver/__init__.py",
                                             "torch_memory_saver_hook_mode_preload_cu12.abi3.so",
                                             "torch_memory_saver_hook_mode_preload_cu13.abi3.so"])
SAVER_ELVES = {"torch_memory_saver_hook_mode_preload_cu12.abi3.so": elf(None, ["libcudart.so.12", "libc.so.6"]),
               "torch_memory_saver_hook_mode_preload_cu13.abi3.so": elf(None, ["libcudart.so.13", "libc.so.6"])}
CUTLASS = dist("nvidia-cutlass-dsl", "4.8.0", ["cutlass/__init__.py"],
               ["nvidia-cutlass-dsl-libs-cu12==4.8.0", 'nvidia-cutlass-dsl-libs-cu13==4.8.0; extra == "cu13"'])
LIBS_12 = dist("nvidia-cutlass-dsl-libs-cu12", "4.8.0", ["cutlass/_mlir/_mlir_libs/cu12/_mlir.so"])
LIBS_13 = dist("nvidia-cutlass-dsl-libs-cu13", "4.8.0", ["cutlass/_mlir/_mlir_libs/cu13/_mlir.so"])
SERVER = dist("sglang", "0.5.23", ["sglang/__init__.py"], ["nvidia-cutlass-dsl[cu13]==4.8.0", "torch-memory-saver"])


def test_a_wheel_with_builds_for_two_majors_is_a_neighbour_and_says_which_build_the_anchor_selects():
    judged = belonging(multi(add=[SAVER], elves=SAVER_ELVES))
    assert judged.contaminants == {}
    (saver,) = [n.as_dict() for n in judged.neighbours if n.dist.key == "torch-memory-saver"]
    assert saver["why"] == ("a CUDA consumer that carries builds for CUDA 12 and 13 (CUDA 12 selects "
                            "torch_memory_saver_hook_mode_preload_cu12.abi3.so); nothing on disk proves it wrong for "
                            "this venv")


def test_a_wheel_with_builds_for_other_majors_only_is_still_evidence():
    old = dist("old-saver", "0.0.1", ["old_saver_cu11.so", "old_saver_cu13.so"])
    judged = belonging(O.healthy(add=[old], elves=dict(O.stack_elves(), **{
        "old_saver_cu11.so": elf(None, ["libcudart.so.11.0"]), "old_saver_cu13.so": elf(None, ["libcudart.so.13"])})))
    assert [(c.dist.key, [e.kind for e in c.evidence]) for c in judged.contaminants.values()] == [
        ("old-saver", ["other_major"])]


def test_the_flavour_a_multi_build_wheel_requires_is_no_mix_and_an_orphan_flavour_is_a_contaminant():
    obs = multi(add=[SERVER, CUTLASS, LIBS_12, LIBS_13, SAVER], elves=SAVER_ELVES)
    judged = belonging(obs)
    assert judged.contaminants == {}
    assert judged.run_time_choices[LIBS_13.dist_info] == (
        "the CUDA 13 flavour of nvidia-cutlass-dsl 4.8.0, which carries builds for CUDA 12 and 13 and picks one at "
        "run time")
    assert [f.code for f in diagnose(obs) if f.severity != "info"] == []
    assert make_plan(obs, diagnose(obs), DesiredState()).empty
    orphan = multi(add=[LIBS_13])
    assert [(c.dist.key, [e.kind for e in c.evidence]) for c in belonging(orphan).contaminants.values()] == [
        ("nvidia-cutlass-dsl-libs-cu13", ["other_major"])]
    assert "CUDA_MAJOR_MIXED" in [f.code for f in diagnose(orphan)]


def test_a_stray_top_level_file_two_wheels_ship_is_a_warning_and_never_a_removal():
    flashinfer = dist("flashinfer-python", "0.7.2", ["flashinfer/__init__.py", same("build_backend.py", b"# one\n")],
                      ["torch"])
    dlpack = dist("torch-c-dlpack-ext", "0.1.5", ["torch_c_dlpack_ext/__init__.py", same("build_backend.py", b"# two\n")])
    obs = multi(add=[flashinfer, dlpack], modified={"flashinfer-python": ["build_backend.py"]},
                on_disk={"build_backend.py": "torch-c-dlpack-ext 0.1.5"})
    assert belonging(obs).contaminants == {}
    findings = diagnose(obs)
    assert [(f.severity, f.code, f.subject) for f in findings if f.severity != "info"] == [
        ("warning", "FILE_OWNERSHIP_CONFLICT", "flashinfer-python 0.7.2 & torch-c-dlpack-ext 0.1.5")]
    assert [(f.severity, f.code) for f in findings if f.code == "RECORD_MODIFIED_FILES"] == [
        ("info", "RECORD_MODIFIED_FILES")]
    assert make_plan(obs, findings, DesiredState()).empty
    asked = make_plan(obs, findings, DesiredState(revert_edits=True))
    assert [(a.kind, a.requirement) for b in asked.batches for a in b.actions] == [
        ("reinstall", "flashinfer-python==0.7.2")]


def test_a_chain_of_requirements_to_a_contaminant_is_held_from_the_application_down():
    """my-app (nothing requires it) -> sglang -> sglang-kernel (requires another torch): nothing is removed."""
    server = dist("sglang", "0.5.0", ["sglang/__init__.py"], ["sglang-kernel==0.4.10"])
    app = dist("my-app", "1.0", ["my_app/__init__.py"], ["sglang"], installer="uv")
    judged = belonging(multi(add=[KERNEL, server, app]))
    assert {c.dist.key: ([e.kind for e in c.evidence], c.held_by) for c in judged.contaminants.values()} == {
        "sglang": (["requires_contaminant"], ("my-app 1.0",)),
        "sglang-kernel": (["requirement_conflict"], ("sglang 0.5.0",))}
    assert judged.removable() == {}


def test_a_consumer_of_another_major_that_harms_nothing_is_kept_with_a_warning_naming_the_build_to_install():
    runtime = dist("cupy-cuda13x", "14.2.0", ["cupy/_core/core.so"], ["numpy"])
    obs = O.healthy(add=[runtime], elves=dict(O.stack_elves(), **{"cupy/_core/core.so": elf(None, ["libcudart.so.13"])}))
    (contaminant,) = belonging(obs).contaminants.values()
    assert contaminant.harmless == ("its CUDA 13 code cannot load beside a CUDA 12 torch, its CPU code works; install "
                                    "its CUDA 12 build (cupy-cuda12x) to use the GPU")
    assert belonging(obs).removable() == {}
    finding = [f for f in diagnose(obs) if f.code == "CUDA_DIST_UNREQUIRED"][0]
    assert finding.severity == "warning" and finding.details["harmless"] == contaminant.harmless
    assert make_plan(obs, diagnose(obs), DesiredState()).empty
    for desired in (DesiredState(remove=("cupy-cuda13x",)), DesiredState(prune="all")):
        assert "cupy-cuda13x" in [a.name for b in make_plan(obs, diagnose(obs), desired).batches for a in b.actions]


def test_a_held_wheel_of_another_major_colliding_with_the_stack_is_left_with_the_replacement_named():
    """vLLM's venv: cuda-python 12.6.2.post1 installed over cuda-bindings 13.5.0 (the same paths), flashinfer-python
    requiring cuda-python>=12.0: vllm and flashinfer stay, cuda-python is held and neither is reinstalled."""
    runtime = "cuda/bindings/runtime.cpython-312-x86_64-linux-gnu.so"
    torch13 = dist("torch", "2.14.0+cu130", ["torch/__init__.py", "torch/lib/libtorch_cuda.so"],
                   ['cuda-bindings<14,>=13.0.3; platform_system == "Linux"'])
    bindings = dist("cuda-bindings", "13.5.0", [same(runtime, b"13.5.0"), "cuda/bindings/__init__.py"])
    python = dist("cuda-python", "12.6.2.post1", [same(runtime, b"12.6.2")], installer="uv")
    flashinfer = dist("flashinfer-python", "0.7.2.post1", ["flashinfer/__init__.py"], ["cuda-python>=12.0", "torch"],
                      installer="uv")
    server = dist("vllm", "0.33.0", ["vllm/__init__.py"], ["flashinfer-python==0.7.2.post1", "torch==2.14.0"],
                  installer="uv")

    def vllm_venv(roots=()):
        return build([torch13, bindings, python, flashinfer, server], on_disk={runtime: "cuda-python 12.6.2.post1"},
                     modified={"cuda-bindings": [runtime]}, roots=roots,
                     elves={"torch/lib/libtorch_cuda.so": elf("libtorch_cuda.so", ["libcudart.so.13"]),
                            runtime: elf(None, ["libcudart.so.13"])})
    obs = vllm_venv()
    (contaminant,) = belonging(obs).contaminants.values()
    assert (contaminant.dist.key, [e.kind for e in contaminant.evidence], contaminant.held_by, contaminant.replacement) == (
        "cuda-python", ["other_major", "collides"], ("flashinfer-python 0.7.2.post1",), "cuda-python>=12.0,==13.*")
    findings = diagnose(obs)
    assert not [f for f in findings if f.severity != "info" and f.subject.split(" ", 1)[0] in ("vllm", "flashinfer-python")]
    plan = make_plan(obs, findings, DesiredState())
    assert plan.batches == ()
    assert plan.unfixable == (
        "cuda-python 12.6.2.post1 and cuda-bindings 13.5.0 list the same 1 path(s) (e.g. %s) and cuda-python is kept "
        "because flashinfer-python 0.7.2.post1 requires it: reinstalling either overwrites the other, so neither is; "
        "declare 'cuda-python>=12.0,==13.*' in packages (the anchor's build, which flashinfer-python 0.7.2.post1 "
        "allows)" % runtime,)
    # The replacement declared: cuda-python goes first, cuda-bindings' files come back, then the CUDA 13 cuda-python
    declared = vllm_venv(roots=("cuda-python>=12.0,==13.*",))
    plan = make_plan(declared, diagnose(declared), DesiredState(packages=("cuda-python>=12.0,==13.*",)))
    assert [[(a.kind, a.requirement) for a in b.actions] for b in plan.batches] == [
        [("remove", "cuda-python"), ("reinstall", "cuda-bindings==13.5.0"), ("install", "cuda-python==13.*,>=12.0")]]


# --- requirements and collisions that prove nothing ---------------------------------------------------------------

def test_a_requirement_behind_an_extra_nobody_asked_for_is_no_evidence():
    """Mutation guarded: an extra's requirement counted as if it applied (the neighbour would be removed)."""
    tool = dist("torch-tool", "1.0", ["torch_tool/ext.so"], ['torch==2.14.1; extra == "old"', "torch"])
    judged = belonging(O.healthy(add=[tool], elves=dict(O.stack_elves(), **{"torch_tool/ext.so": elf(None, ["libcudart.so.12"])})))
    assert judged.contaminants == {} and [n.dist.key for n in judged.neighbours] == ["torch-tool"]


def test_a_chain_of_two_dependencies_to_a_contaminant_makes_both_contaminants_held_by_the_application():
    """Mutation guarded: requires_contaminant propagated one step only (sglang, two steps away, would stay clean)."""
    infer = dist("flashinfer-python", "0.7.2", ["flashinfer/__init__.py"], ["sglang-kernel==0.4.10"])
    server = dist("sglang", "0.5.0", ["sglang/__init__.py"], ["flashinfer-python"])
    app = dist("my-app", "1.0", ["my_app/__init__.py"], ["sglang"], installer="uv")
    judged = belonging(multi(add=[KERNEL, infer, server, app]))
    assert {c.dist.key: ([e.kind for e in c.evidence], c.held_by) for c in judged.contaminants.values()} == {
        "flashinfer-python": (["requires_contaminant"], ("sglang 0.5.0",)),
        "sglang": (["requires_contaminant"], ("my-app 1.0",)),
        "sglang-kernel": (["requirement_conflict"], ("flashinfer-python 0.7.2",))}
    assert judged.removable() == {}


def test_a_requirement_on_an_anchor_version_that_is_no_pep_440_version_is_no_evidence():
    """Mutation guarded: a requirement that cannot be compared counted as a conflict."""
    custom = replace(O.torch_cu12(), version="2.4.6-custom_build")
    tool = dist("torch-tool", "1.0", ["torch_tool/ext.so"], ["torch>=2.0"])
    obs = O.build([custom] + O.cu12_support() + O.cu12_colliding() + [tool],
                  elves=dict(O.stack_elves(), **{"torch_tool/ext.so": elf(None, ["libcudart.so.12"])}))
    assert belonging(obs).contaminants == {}


def test_two_candidates_sharing_a_library_is_no_evidence_against_either():
    """Mutation guarded: a collision between two candidates counted, though neither collides with what is kept."""
    so = "jax_plugins/xla_cuda12/xla_cuda_plugin.so"
    fork = dist("jax-cuda12-pjrt-nightly", "0.10.3", [same(so, b"nightly")])  # PJRT (a neighbour) lists it too
    obs = multi(add=[fork], on_disk={so: "jax-cuda12-pjrt-nightly 0.10.3"})
    assert [c.owners for c in obs.conflicts if c.path == so] == [("jax-cuda12-pjrt 0.10.2", "jax-cuda12-pjrt-nightly 0.10.3")]
    judged = belonging(obs)
    assert not any(e.kind == "collides" for c in judged.contaminants.values() for e in c.evidence)
