# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for contaminants.belonging: a contaminant needs evidence; the neighbours of a multi-framework venv stay."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.contaminants import (
    Evidence, _anchor_build_allowed, anchor_cuda_major, belonging, identical_everywhere, replaced_by_declaration)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.diagnose import diagnose
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import DesiredState, make_plan
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.distributions import RecordEntry
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.record_check import Conflict
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.requirements import pinned_edges
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


# --- the judgement kept, names and versions compared by value -------------------------------------------------------

def declared(obs, *pins):
    """``obs`` as a repair that declared ``pins`` ((name, version) as its installer resolved them) sees it."""
    return replace(obs, options=replace(obs.options, declared=tuple(pins)))


def test_the_judgement_is_kept_for_the_same_observations_only_never_for_an_equal_copy():
    """mutation: `is` -> `==` in belonging (an equal copy would get the judgement of another object)."""
    obs = multi()
    first = belonging(obs)
    assert belonging(obs) is first
    copy = replace(obs)
    assert copy == obs and copy is not obs
    again = belonging(copy)
    assert again is not first and again == first


def test_requirements_on_other_names_are_no_conflict_and_do_not_hide_a_bundled_build():
    """A consumer requiring numpy<2 (sorts before torch) and triton<3 (after it), both installed at other versions,
    and shipping its own libcudart: only the bundled build is evidence.
    mutations: `==` -> `<=`, `>=`, `is not` in _belonging (the anchor's requirements and what imports it first)."""
    bundled = dist("sgl-kernel", "0.3.9", [same("sgl_kernel/lib/libcudart.so.12", b"cudart 12.4")],
                   ["numpy<2", "triton<3"])
    triton = dist("triton", "3.5.0", ["triton/__init__.py"])
    obs = O.healthy(add=[bundled, NUMPY, triton], elves=dict(O.stack_elves(), **{
        "sgl_kernel/lib/libcudart.so.12": elf("libcudart.so.12")}))
    assert [(c.dist.key, [e.kind for e in c.evidence]) for c in belonging(obs).contaminants.values()] == [
        ("sgl-kernel", ["ships_other_build"])]


@pytest.mark.parametrize("installed, root, requirer, text", [
    ("2.9.1", "torch==2.9.1", KERNEL, "requires torch==2.14.1; torch 2.9.1 is installed"),
    ("2.9.1", "torch==2.14.1", VISION, "requires torch (==2.9.1); torch 2.14.1 is declared"),
    ("2.14.1", "torch==2.9.1", replace(KERNEL, requires_dist=('torch==2.14.1; platform_system == "Linux"',)),
     "requires torch==2.14.1; torch 2.9.1 is declared"),
], ids=["pin-equal-to-installed", "pin-above-installed", "pin-below-installed-marker"])
def test_a_requirement_conflict_says_whether_the_anchor_version_is_installed_or_declared(installed, root, requirer, text):
    """The declared pin is parsed from the root requirement: equal to the installed version, it is the installed one;
    the requirement is quoted without its marker.
    mutations: `==` -> `is`, `<=`, `>=` in _requirement_conflicts ("2.14.1" sorts before "2.9.1" as a string);
    split(";", 0), `[0]` -> `[-1]` there."""
    obs = O.build([O.torch_cu12(installed)] + O.cu12_support() + O.cu12_colliding() + NEIGHBOURS + [requirer],
                  elves=dict(O.stack_elves(), **NEIGHBOUR_ELVES), import_graph=O.torch_graph(), roots=(root,))
    judged = {c.dist.key: c.evidence for c in belonging(obs).contaminants.values()}
    assert judged[requirer.key] == (Evidence("requirement_conflict", text),)


def test_the_anchor_is_judged_at_its_root_pin_when_the_pin_names_it_by_the_very_same_string():
    """mutation: `==` -> `is not` in _judged_versions (a root pin whose name is the anchor's own string ignored)."""
    anchor = "torch"
    dists = [O.torch_cu12("2.14.1"), KERNEL]
    obs = build(dists, anchor=anchor, requirements=pinned_edges([(anchor, "2.9.1")], dists))
    assert obs.requirements[0].name is obs.options.anchor
    assert [(c.dist.key, c.why) for c in belonging(obs).contaminants.values()] == [
        ("sglang-kernel", "requires torch==2.14.1; torch 2.9.1 is declared")]


def test_a_declared_anchor_version_that_is_no_pep_440_version_is_no_evidence():
    """mutation: `is False` -> `<= False` in _requirement_conflicts (a version that cannot be compared raised)."""
    obs = declared(multi(add=[KERNEL]), ("torch", "2.9.1-custom_build"))
    judged = belonging(obs)
    assert judged.contaminants == {} and "sglang-kernel" in [n.dist.key for n in judged.neighbours]


def test_replaced_by_declaration_compares_versions_by_value():
    """torch pinned at 2.14.0 (sorts before 2.9.1 as a string), filelock at 3.9.0 (after 3.20.0), the CUDA runtime at
    its installed version (an equal string made apart), numpy not installed.
    mutations: `!=` -> `==`, `<`, `<=`, `>`, `>=`, `is`, `is not` in replaced_by_declaration."""
    obs = declared(O.healthy(), ("torch", "2.14.0"), ("filelock", "3.9.0"),
                   ("nvidia-cuda-runtime-cu12", "".join(["12.8", ".90"])), ("numpy", "2.4.6"))
    assert replaced_by_declaration(obs) == {"torch", "filelock"}


# --- the anchor's CUDA major ----------------------------------------------------------------------------------------

def test_the_declared_anchors_local_version_label_gives_the_major_before_what_its_wheels_name():
    """mutations: `is not None` -> `is None`, `not` added, `[0]` -> `[1]`/`[-1]`, split(".", 0) in anchor_cuda_major."""
    obs = declared(O.healthy(), ("torch", "2.9.1+cu130"), ("nvidia-cudnn-cu12", "9.10.2.21"))
    assert anchor_cuda_major(obs) == 13


def test_without_a_label_the_declared_anchors_major_is_the_one_most_of_its_cuda_wheels_name():
    """cuda-bindings and cuda-python are versioned by their CUDA major; torch, numpy and networkx are not (their
    2.x says nothing); nvidia-cudnn-cu12 names 12 once.
    mutations: `or` -> `and`, `is not None` -> `is None`, `not` added in anchor_cuda_major; split(".", 0), `[0]` ->
    `[1]`/`[-1]`, `not` added, `and` -> `or` in _version_major."""
    obs = declared(O.healthy(), ("torch", "2.14.0"), ("numpy", "2.4.6"), ("networkx", "2.8.8"),
                   ("cuda-bindings", "13.0.3"), ("cuda-python", "13.0.3"), ("nvidia-cudnn-cu12", "9.10.2.21"))
    assert anchor_cuda_major(obs) == 13


def test_no_anchor_installed_and_none_declared_has_no_major_though_a_later_name_has_one():
    """mutation: `==` -> `>=` in anchor_cuda_major (torchaudio sorts after torch)."""
    obs = build([AUDIO], elves={"torchaudio/lib/_torchaudio.so": NEIGHBOUR_ELVES["torchaudio/lib/_torchaudio.so"]})
    assert obs.cuda_major(AUDIO.dist_info).major == 12
    assert anchor_cuda_major(obs) is None


@pytest.mark.parametrize("specifier, allowed", [("==12.19.9", True), (">=12.20", False), ("==12.0.10", False)])
def test_the_anchors_build_is_looked_for_from_a_0_0_to_a_19_9(specifier, allowed):
    """mutations: range(20) -> range(19)/range(21), range(10) -> range(9)/range(11) in _anchor_build_allowed."""
    assert _anchor_build_allowed("cuda-python", [specifier], 12) is allowed


# --- wheels with several builds, and their flavours -----------------------------------------------------------------

def test_a_wheel_named_for_another_major_that_carries_the_anchors_build_too_is_a_neighbour():
    """tensorrt-cu13's plugins are named _cu12 and _cu13; twin-kernel-cu13's library links against libcudart.so.12.
    mutations: `|` -> `-`, `^` in _builds_of; `is not None` -> `is None`, `not` added in _run_time_choices."""
    tensorrt = dist("tensorrt-cu13", "10.13.0", ["tensorrt/plugin_cu12.so", "tensorrt/plugin_cu13.so"])
    twin = dist("twin-kernel-cu13", "1.0", ["twin_kernel/ops.so"])
    judged = belonging(O.healthy(add=[tensorrt, twin], elves=dict(O.stack_elves(), **{
        "twin_kernel/ops.so": elf(None, ["libcudart.so.12"])})))
    assert judged.contaminants == {}
    assert [(n.dist.key, n.why) for n in judged.neighbours] == [
        ("tensorrt-cu13", "a CUDA consumer that carries builds for CUDA 12 and 13 (CUDA 12 selects plugin_cu12.so); "
                          "nothing on disk proves it wrong for this venv"),
        ("twin-kernel-cu13", "a CUDA consumer that carries builds for CUDA 12 and 13 (the build is chosen at run time); "
                             "nothing on disk proves it wrong for this venv")]


def test_a_build_whose_file_another_wheel_also_lists_does_not_count():
    """tensorrt-cu13's only CUDA 12 plugin is a path tensorrt-cu12 lists too: its bytes may be the other's.
    mutations: either loop of _run_time_choices' shared paths never run."""
    plugin = "tensorrt/plugin_cu12.so"
    judged = belonging(O.healthy(add=[dist("tensorrt-cu12", "10.13.0", [plugin]),
                                      dist("tensorrt-cu13", "10.13.0", [plugin, "tensorrt/__init__.py"])]))
    assert judged.run_time_choices == {}
    assert [(c.dist.key, [e.kind for e in c.evidence]) for c in judged.contaminants.values()] == [
        ("tensorrt-cu13", ["other_major"])]
    assert [n.dist.key for n in judged.neighbours] == ["tensorrt-cu12"]


def test_a_flavour_that_carries_the_anchors_build_itself_says_so():
    """mutation: `or` -> `and` before name_major in _run_time_choices (its own choice replaced by its parent's)."""
    dsl = dist("nvidia-cutlass-dsl", "4.8.0", ["cutlass/__init__.py"],
               ["nvidia-cutlass-dsl-libs-cu12==4.8.0", "nvidia-cutlass-dsl-libs-cu13==4.8.0"])
    libs = dist("nvidia-cutlass-dsl-libs-cu13", "4.8.0", ["cutlass/_mlir/_mlir_libs/_mlir_cu12.so"])
    judged = belonging(O.healthy(add=[dsl, LIBS_12, libs]))
    assert judged.run_time_choices[libs.dist_info] == "carries builds for CUDA 12 and 13 (CUDA 12 selects _mlir_cu12.so)"


def test_a_consumer_of_unknown_major_does_not_end_the_search_for_wheels_with_several_builds():
    """deepspeed (a known consumer, no major) sorts before torch-memory-saver.
    mutation: `continue` -> `break` in _run_time_choices."""
    speed = dist("deepspeed", "0.18.0", ["deepspeed/__init__.py"])
    judged = belonging(multi(add=[SAVER, speed], elves=SAVER_ELVES))
    assert judged.contaminants == {}
    assert judged.run_time_choices == {SAVER.dist_info: "carries builds for CUDA 12 and 13 (CUDA 12 selects "
                                                        "torch_memory_saver_hook_mode_preload_cu12.abi3.so)"}


def test_a_flavour_is_chosen_by_the_first_parent_carrying_both_majors_among_others():
    """nvidia-cutlass-dsl carries CUDA 11, 12 and 13 (its cu11 flavour under an extra), nvidia-cutlass-kernels 12 and
    13; both require the cu13 flavour, which names the first; the cu12 flavour, of the anchor's major, is no choice.
    mutations: `<=` -> `==`, `>=` in _run_time_choices (a parent carrying a third major); `break` -> `continue`
    (the last parent named); `or` -> `and` (the anchor's own flavour listed)."""
    dsl = dist("nvidia-cutlass-dsl", "4.8.0", ["cutlass/__init__.py"], [
        "nvidia-cutlass-dsl-libs-cu12==4.8.0", "nvidia-cutlass-dsl-libs-cu13==4.8.0",
        'nvidia-cutlass-dsl-libs-cu11==4.8.0; extra == "cu11"'])
    kernels = dist("nvidia-cutlass-kernels", "1.0", ["cutlass_kernels/__init__.py"],
                   ["nvidia-cutlass-dsl-libs-cu12==4.8.0", "nvidia-cutlass-dsl-libs-cu13==4.8.0"])
    judged = belonging(O.healthy(add=[dsl, kernels, LIBS_12, LIBS_13]))
    assert judged.contaminants == {}
    assert judged.run_time_choices == {
        dsl.dist_info: "carries builds for CUDA 11, 12 and 13 (the build is chosen at run time)",
        kernels.dist_info: "carries builds for CUDA 12 and 13 (the build is chosen at run time)",
        LIBS_13.dist_info: "the CUDA 13 flavour of nvidia-cutlass-dsl 4.8.0, which carries builds for CUDA 11, 12 and 13 "
                           "and picks one at run time"}


def test_a_flavour_whose_parent_lacks_the_anchors_build_is_a_contaminant():
    """mutations: `<=` -> `is not`, `and` -> `or` in _run_time_choices."""
    dsl = dist("nvidia-cutlass-dsl", "4.8.0", ["cutlass/__init__.py"], ["nvidia-cutlass-dsl-libs-cu13==4.8.0"])
    judged = belonging(O.healthy(add=[dsl, LIBS_13]))
    assert judged.run_time_choices == {}
    assert [(c.dist.key, [e.kind for e in c.evidence]) for c in judged.contaminants.values()] == [
        ("nvidia-cutlass-dsl", ["other_major"]), ("nvidia-cutlass-dsl-libs-cu13", ["other_major"])]


def test_majors_above_256_compare_by_value():
    """CUDA "400" (cu4000) beside a torch of that major: its flavour of 300 is a choice, its own no mix, no choice.
    Python keeps one object per small int only: 400 and 300 computed twice are two objects.
    mutations: `!=` -> `is not` in _belonging; `==` -> `<=`, `is`, `!=` -> `is not` in _run_time_choices."""
    torch = dist("torch", "9.0.0", ["torch/__init__.py"], ["nvidia-cuda-runtime-cu4000"])
    dsl = dist("nvidia-cutlass-dsl", "9.0.0", ["cutlass/__init__.py"],
               ["nvidia-cutlass-dsl-libs-cu4000==9.0.0", "nvidia-cutlass-dsl-libs-cu3000==9.0.0"])
    own = dist("nvidia-cutlass-dsl-libs-cu4000", "9.0.0", ["cutlass/_mlir/_mlir_libs/cu400/_mlir.so"])
    lower = dist("nvidia-cutlass-dsl-libs-cu3000", "9.0.0", ["cutlass/_mlir/_mlir_libs/cu300/_mlir.so"])
    judged = belonging(build([torch, dsl, own, lower]))
    assert anchor_cuda_major(build([torch])) == 400
    assert judged.contaminants == {}
    assert judged.run_time_choices == {
        dsl.dist_info: "carries builds for CUDA 300 and 400 (the build is chosen at run time)",
        lower.dist_info: "the CUDA 300 flavour of nvidia-cutlass-dsl 9.0.0, which carries builds for CUDA 300 and 400 "
                         "and picks one at run time"}


# --- harmless consumers ---------------------------------------------------------------------------------------------

def test_a_consumer_of_another_major_with_other_evidence_is_not_harmless():
    """cupy-cuda13x requires another torch ("requirement_conflict" sorts after "other_major"); jax-cuda13-plugin
    overwrites a module of jaxlib ("collides" sorts before it).
    mutations: `!=` -> `<`, `>` in _harmless."""
    cupy = dist("cupy-cuda13x", "14.2.0", ["cupy/_core/core.so"], ["torch>=2.10"])
    plugin = dist("jax-cuda13-plugin", "0.10.2", ["jax_cuda13_plugin/__init__.py", "jaxlib/__init__.py"])
    judged = belonging(O.healthy(add=[cupy, plugin, JAXLIB]))
    assert {c.dist.key: ([e.kind for e in c.evidence], c.harmless) for c in judged.contaminants.values()} == {
        "cupy-cuda13x": (["other_major", "requirement_conflict"], ""),
        "jax-cuda13-plugin": (["other_major", "collides"], "")}
    assert sorted(c.dist.key for c in judged.removable().values()) == ["cupy-cuda13x", "jax-cuda13-plugin"]


def test_a_harmless_consumer_names_its_twin_only_when_its_name_carries_the_major():
    """flash-attn links against libcudart.so.13 (no major in its name); cupy-cuda11x's twin sorts after it;
    kernels-cuda13-py313 writes 13 twice, the CUDA one first.
    mutations: `!=` -> `<`, `<=` in _harmless; count=1 -> 0, 2 in _harmless."""
    flash = dist("flash-attn", "2.8.3", ["flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so"])
    cupy = dist("cupy-cuda11x", "14.2.0", ["cupy/_core/core.so"])
    kernels = dist("kernels-cuda13-py313", "1.0", ["kernels/ops.so"])
    judged = belonging(O.healthy(add=[flash, cupy, kernels], elves=dict(O.stack_elves(), **{
        "flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so": elf(None, ["libcudart.so.13"])})))
    text = "its CUDA %d code cannot load beside a CUDA 12 torch, its CPU code works; install its CUDA 12 build%s to use the GPU"
    assert {c.dist.key: c.harmless for c in judged.contaminants.values()} == {
        "cupy-cuda11x": text % (11, " (cupy-cuda12x)"), "flash-attn": text % (13, ""),
        "kernels-cuda13-py313": text % (13, " (kernels-cuda12-py313)")}
    assert judged.removable() == {}


# --- requirements through chains and extras -------------------------------------------------------------------------

def test_a_chain_whose_head_sorts_first_needs_a_second_pass_to_reach_it():
    """my-app -> deepspeed -> flashinfer-python -> sglang-kernel: deepspeed is judged before flashinfer-python is one.
    mutation: `changed = True` -> False in _propagate."""
    infer = dist("flashinfer-python", "0.7.2", ["flashinfer/__init__.py"], ["sglang-kernel==0.4.10"])
    speed = dist("deepspeed", "0.18.0", ["deepspeed/__init__.py"], ["flashinfer-python"])
    app = dist("my-app", "1.0", ["my_app/__init__.py"], ["deepspeed"], installer="uv")
    judged = belonging(multi(add=[KERNEL, infer, speed, app]))
    assert {c.dist.key: ([e.kind for e in c.evidence], c.held_by) for c in judged.contaminants.values()} == {
        "deepspeed": (["requires_contaminant"], ("my-app 1.0",)),
        "flashinfer-python": (["requires_contaminant"], ("deepspeed 0.18.0",)),
        "sglang-kernel": (["requirement_conflict"], ("flashinfer-python 0.7.2",))}


def test_a_contaminant_required_under_an_extra_a_kept_distribution_asks_for_is_held():
    """mutation: `if edge.extras` -> `if not edge.extras` in extra_askers."""
    tool = dist("my-tool", "1.0", ["my_tool/__init__.py"], ['sglang-kernel==0.4.10; extra == "gpu"'])
    app = dist("my-app", "1.0", ["my_app/__init__.py"], ["my-tool[gpu]"], installer="uv")
    judged = belonging(multi(add=[KERNEL, tool, app]))
    assert [(c.dist.key, c.held_by) for c in judged.contaminants.values()] == [("sglang-kernel", ("my-tool 1.0",))]
    assert judged.removable() == {}


def test_an_extra_asked_for_only_by_a_contaminant_holds_nothing():
    """cupy-cuda13x asks for jax-cuda13-plugin[tools], whose requirements ask for my-tool[gpu], which requires
    sglang-kernel: both asking nodes are contaminants, so the kernel is held by nobody (cupy-cuda13x, which requires a
    contaminant, is not harmless; jax-cuda13-plugin is).
    mutations: split("[", 0), `[0]` -> `[-1]` in extra_askers (the asker "jax-cuda13-plugin[tools]" kept)."""
    cupy = dist("cupy-cuda13x", "14.2.0", ["cupy/_core/core.so"], ["jax-cuda13-plugin[tools]"])
    plugin = dist("jax-cuda13-plugin", "0.10.2", ["jax_cuda13_plugin/__init__.py"], ['my-tool[gpu]; extra == "tools"'])
    tool = dist("my-tool", "1.0", ["my_tool/__init__.py"], ['sglang-kernel==0.4.10; extra == "gpu"'])
    judged = belonging(O.healthy(add=[cupy, plugin, tool, KERNEL]))
    assert {c.dist.key: c.held_by for c in judged.contaminants.values()} == {
        "cupy-cuda13x": (), "jax-cuda13-plugin": (), "sglang-kernel": ()}
    assert sorted(c.dist.key for c in judged.removable().values()) == ["cupy-cuda13x", "sglang-kernel"]


# --- collisions and other builds ------------------------------------------------------------------------------------

def test_a_collision_with_a_kept_wheel_whose_name_sorts_after_is_evidence_and_shows_libraries_first():
    """nvidia-cudnn-cu11 (sorts before the kept cu12) lists cuDNN's header and library; the identical
    nvidia/__init__.py conflict comes first.
    mutations: `!=` -> `<`, `<=`, `not` deleted, `continue` -> `break` in _collisions."""
    cudnn11 = dist("nvidia-cudnn-cu11", "9.1.0.70", ["nvidia/cudnn/include/cudnn.h", "nvidia/cudnn/lib/libcudnn.so.9"])
    (contaminant,) = belonging(O.healthy(add=[cudnn11])).contaminants.values()
    assert contaminant.evidence[1:] == (Evidence(
        "collides", "installs 2 path(s) that nvidia-cudnn-cu12 9.10.2.21 also installs, e.g. "
                    "nvidia/cudnn/lib/libcudnn.so.9, nvidia/cudnn/include/cudnn.h"),)
    assert [e.kind for e in contaminant.evidence] == ["other_major", "collides"]


def test_another_build_is_evidence_whatever_names_and_digests_sort_beside_libraries_outside_the_venv():
    """flash-attn sorts before nvidia-cuda-runtime-cu12, its copy's digest before the loaded one's; the import also
    loads libm from /lib (no object of the venv).
    mutations: `!=` -> `<`, `<=`, `and` -> `or` (each) in _other_builds' loaded; `!=` -> `>` on the RECORD bytes."""
    flash = dist("flash-attn", "2.8.3", [same("flash_attn/lib/libcudart.so.12", b"cudart 12.6")])
    graph = dict(O.torch_graph(), **{"/lib/x86_64-linux-gnu/libm.so.6": []})
    obs = O.healthy(add=[flash], import_graph=graph, elves=dict(O.stack_elves(), **{
        "flash_attn/lib/libcudart.so.12": elf("libcudart.so.12")}))
    assert O.digest_of(b"cudart 12.6") < [e.digest for e in O.cu12_support()[1].entries if e.path.endswith(".so.12")][0]
    (contaminant,) = belonging(obs).contaminants.values()
    assert (contaminant.dist.key, [e.kind for e in contaminant.evidence]) == ("flash-attn", ["ships_other_build"])


def test_another_build_is_evidence_against_its_owner_only():
    """bitsandbytes and xformers (known consumers, no library of their own) sort around sgl-kernel, which ships its
    own libcudart.
    mutations: `==` -> `<=`, `>=`, `and` -> `or` (each) in _other_builds' own objects."""
    bundled = dist("sgl-kernel", "0.3.9", [same("sgl_kernel/lib/libcudart.so.12", b"cudart 12.4")])
    bits = dist("bitsandbytes", "0.48.0", ["bitsandbytes/__init__.py"])
    xformers = dist("xformers", "0.0.33", ["xformers/__init__.py"])
    judged = belonging(O.healthy(add=[bundled, bits, xformers], elves=dict(O.stack_elves(), **{
        "sgl_kernel/lib/libcudart.so.12": elf("libcudart.so.12")})))
    assert [(c.dist.key, [e.kind for e in c.evidence]) for c in judged.contaminants.values()] == [
        ("sgl-kernel", ["ships_other_build"])]
    assert [n.dist.key for n in judged.neighbours] == ["bitsandbytes", "xformers"]


def test_a_library_of_another_install_of_the_same_distribution_is_no_other_build():
    """Two dist-infos of sgl-kernel (a stale 0.3.8 beside 0.3.9, keys equal strings made apart): the anchor's import
    loads 0.3.9's libsgl.so; 0.3.8's own libsgl.so is no build of another distribution.
    mutation: `!=` -> `is not` in _other_builds."""
    new = dist("sgl-kernel", "0.3.9", ["sgl_kernel/lib/libsgl.so"])
    old = replace(dist("sgl-kernel", "0.3.8", ["sgl_kernel/lib.old/libsgl.so"]), key="".join(["sgl-", "kernel"]))
    obs = O.healthy(add=[new, old], import_graph=dict(O.torch_graph(), **{"sgl_kernel/lib/libsgl.so": []}),
                    elves=dict(O.stack_elves(), **{"sgl_kernel/lib/libsgl.so": elf("libsgl.so"),
                                                   "sgl_kernel/lib.old/libsgl.so": elf("libsgl.so")}))
    assert new.key == old.key and new.key is not old.key
    assert belonging(obs).contaminants == {}


def test_a_copy_with_the_same_bytes_is_no_evidence_whatever_else_its_record_lists_first():
    """The copy's RECORD lists a path that sorts after the library first, and the object's path is an equal string
    made apart from the RECORD's.
    mutations: `==` -> `>=`, `is` in _record_bytes."""
    cudart = "nvidia/cuda_runtime/lib/libcudart.so.12"
    same_bytes = [e for e in O.cu12_support()[1].entries if e.path == cudart][0]
    copy = dist("copies-cudart", "1.0", ["copies_cudart/zz_notes.txt", RecordEntry(
        "copies_cudart/lib/libcudart.so.12", same_bytes.algorithm, same_bytes.digest, same_bytes.size)])
    obs = O.healthy(add=[copy], elves=dict(O.stack_elves(), **{
        "".join(["copies_cudart/lib/", "libcudart.so.12"]): elf("libcudart.so.12")}))
    assert belonging(obs).contaminants == {}


# --- identical files, by value --------------------------------------------------------------------------------------

def test_identical_everywhere_compares_paths_by_value():
    """mutation: `==` -> `is` in identical_everywhere (only the owner whose string the conflict holds compared)."""
    obs = build([dist("a", "1", [same("p.py")]), dist("b", "1", [same("".join(["p", ".py"]), b"x")])])
    assert identical_everywhere(obs, obs.conflicts[0]) is False


def test_a_conflict_its_owners_do_not_list_is_not_identical():
    """mutation: `!=` -> `>` in identical_everywhere (no digest at all)."""
    obs = build([dist("a", "1", [same("p.py")]), dist("b", "1", [same("p.py")])])
    assert identical_everywhere(obs, Conflict("q.py", ("a 1", "b 1"), None)) is False
