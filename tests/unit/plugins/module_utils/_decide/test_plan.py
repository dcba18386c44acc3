# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for plan.make_plan: the repair as a pure function of Observations built from literal data."""

from __future__ import annotations

import json
import os
from dataclasses import replace

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.contaminants import Evidence
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide import findings as F
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.diagnose import diagnose
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.findings import Finding
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.lock_drift import BYTES
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import (
    Action, Batch, Completion, DesiredState, Plan, PlanError, complete_plan, make_plan, predicted_inventory)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.lock_file import Lock, LockedPackage
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.locked_bytes import BytesCheck
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.record_check import Conflict
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.requirements import pinned_edges
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils import observations as O
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils.observations import (
    TORCH_CUDA, build, dist, elf, found, same)

COLLIDE = "remove colliding wheels, then reinstall what they overwrote or deleted"
CU13 = ["nvidia-cudnn-cu13", "nvidia-cusparselt-cu13", "nvidia-nccl-cu13", "nvidia-nvshmem-cu13"]
CU12_PINS = ["nvidia-cudnn-cu12==9.10.2.21", "nvidia-cusparselt-cu12==0.7.1", "nvidia-nccl-cu12==2.27.5",
             "nvidia-nvshmem-cu12==3.3.20"]
OTHER_MAJOR = "built for CUDA 13 (by its %s) beside a CUDA 12 torch"
TWIN = OTHER_MAJOR % "name" + "; installs 2 path(s) that %s also installs, e.g. %s, %s"


def pruned(text):
    return "contaminant (prune: cuda): " + text


WHY_CUBLAS_13 = pruned(OTHER_MAJOR % "install path")
WHY_CUDNN_13 = pruned(TWIN % ("nvidia-cudnn-cu12 9.10.2.21", "nvidia/cudnn/lib/libcudnn.so.9", "nvidia/cudnn/include/cudnn.h"))
WHY_SPARSELT_13 = pruned(TWIN % ("nvidia-cusparselt-cu12 0.7.1", "nvidia/cusparselt/lib/libcusparseLt.so.0",
                                 "nvidia/cusparselt/include/cusparselt.h"))
WHY_NCCL_13 = pruned(TWIN % ("nvidia-nccl-cu12 2.27.5", "nvidia/nccl/lib/libnccl.so.2", "nvidia/nccl/include/nccl.h"))
WHY_NVSHMEM_13 = pruned(TWIN % ("nvidia-nvshmem-cu12 3.3.20", "nvidia/nvshmem/lib/libnvshmem_host.so.3",
                                "nvidia/nvshmem/include/nvshmem.h"))


def plan_of(obs, **desired):
    return make_plan(obs, diagnose(obs), DesiredState(**desired))


def steps(plan):
    return [(b.number, a.kind, a.requirement) for b in plan.batches for a in b.actions]


def removals(plan):
    """The names the plan removes, in plan order (as the repair walks it)."""
    return [a.name for b in plan.batches for a in b.actions if a.kind == "remove"]


def as_read(text):
    """``text`` as a JSON reader returns it (a task's arguments, a plan read back): equal, but not the same object."""
    read = json.loads(json.dumps(text))
    assert read == text and read is not text
    return read


# --- the incident ------------------------------------------------------------------------------------------------

def test_contaminated_removes_what_nothing_needs_then_cu13_before_the_cu12_reinstalls():
    plan = plan_of(O.contaminated())
    assert plan == Plan(batches=(
        Batch(1, "remove contaminants nothing kept needs", (
            Action("remove", "nvidia-cublas", "nvidia-cublas", WHY_CUBLAS_13, evidence=(
                Evidence("other_major", OTHER_MAJOR % "install path"),)),), ("CUDA_DIST_UNREQUIRED",)),
        Batch(2, COLLIDE, (
            Action("remove", "nvidia-cudnn-cu13", "nvidia-cudnn-cu13", WHY_CUDNN_13, evidence=_evidence(WHY_CUDNN_13)),
            Action("remove", "nvidia-cusparselt-cu13", "nvidia-cusparselt-cu13", WHY_SPARSELT_13, evidence=_evidence(WHY_SPARSELT_13)),
            Action("remove", "nvidia-nccl-cu13", "nvidia-nccl-cu13", WHY_NCCL_13, evidence=_evidence(WHY_NCCL_13)),
            Action("remove", "nvidia-nvshmem-cu13", "nvidia-nvshmem-cu13", WHY_NVSHMEM_13, evidence=_evidence(WHY_NVSHMEM_13)),
            Action("reinstall", "nvidia-cudnn-cu12", "nvidia-cudnn-cu12==9.10.2.21",
                   "runs another library version (RUNTIME_LIBRARY_MISMATCH)"),
            Action("reinstall", "nvidia-cusparselt-cu12", "nvidia-cusparselt-cu12==0.7.1",
                   "co-owner of paths nvidia-cusparselt-cu13 removes"),
            Action("reinstall", "nvidia-nccl-cu12", "nvidia-nccl-cu12==2.27.5",
                   "runs another library version (RUNTIME_LIBRARY_MISMATCH)"),
            Action("reinstall", "nvidia-nvshmem-cu12", "nvidia-nvshmem-cu12==3.3.20",
                   "co-owner of paths nvidia-nvshmem-cu13 removes"),
        ), ("CUDA_DIST_UNREQUIRED", "CUDA_MAJOR_MIXED", "FILE_OWNERSHIP_CONFLICT", "RUNTIME_LIBRARY_MISMATCH")),
    ), unfixable=())


def _evidence(reason):
    """The two Evidence a colliding cu13 twin's reason joins."""
    major, collides = reason[len(pruned("")):].split("; ")
    return (Evidence("other_major", major), Evidence("collides", collides))


def test_contaminated_plan_as_dict_names_the_evidence_of_each_removal():
    assert plan_of(O.contaminated()).as_dict()["batches"][0] == {
        "batch": 1, "title": "remove contaminants nothing kept needs",
        "actions": [{"action": "remove", "name": "nvidia-cublas", "requirement": "nvidia-cublas", "reason": WHY_CUBLAS_13,
                     "evidence": [{"kind": "other_major", "text": OTHER_MAJOR % "install path"}]}],
        "answers": ["CUDA_DIST_UNREQUIRED"]}


def test_contaminated_in_hash_mode_reinstalls_the_overwritten_wheels_for_that_reason():
    modified = {label: ["nvidia/%s/lib/%s" % (fam, lib)] for label, (fam, _a, _b, lib) in zip(O.CU12_LABELS, O.FAMILIES)}
    batch = plan_of(O.contaminated(verify="hash", modified=modified)).batches[1]
    assert [(a.kind, a.name, a.reason) for a in batch.actions][4:] == [
        ("reinstall", "nvidia-cudnn-cu12", "1 file(s) modified (RECORD_MODIFIED_FILES)"),
        ("reinstall", "nvidia-cusparselt-cu12", "1 file(s) modified (RECORD_MODIFIED_FILES)"),
        ("reinstall", "nvidia-nccl-cu12", "1 file(s) modified (RECORD_MODIFIED_FILES)"),
        ("reinstall", "nvidia-nvshmem-cu12", "1 file(s) modified (RECORD_MODIFIED_FILES)"),
    ]
    assert "RECORD_MODIFIED_FILES" in batch.answers


def test_batch_size_one_gives_each_unit_its_batch_removal_before_reinstall():
    plan = plan_of(O.contaminated(), batch_size=1)
    assert [(b.number, b.title) for b in plan.batches] == [(1, "remove contaminants nothing kept needs")] + [
        (n, COLLIDE) for n in (2, 3, 4, 5)]
    assert steps(plan) == [(1, "remove", "nvidia-cublas")] + [
        step for n, (gone, pin) in enumerate(zip(CU13, CU12_PINS), 2) for step in ((n, "remove", gone), (n, "reinstall", pin))]


def test_batch_size_two_keeps_removals_of_a_chunk_before_its_reinstalls():
    plan = plan_of(O.contaminated(), batch_size=2)
    assert steps(plan)[1:] == [
        (2, "remove", CU13[0]), (2, "remove", CU13[1]), (2, "reinstall", CU12_PINS[0]), (2, "reinstall", CU12_PINS[1]),
        (3, "remove", CU13[2]), (3, "remove", CU13[3]), (3, "reinstall", CU12_PINS[2]), (3, "reinstall", CU12_PINS[3])]


def test_gutted_reinstalls_the_four_metadata_only_wheels_by_name_and_version():
    plan = plan_of(O.gutted())
    assert [(b.number, b.title, b.answers) for b in plan.batches] == [
        (1, COLLIDE, ("IMPORT_FAILED", "RECORD_MISSING_FILES", "SONAME_UNRESOLVED"))]
    assert [(a.kind, a.requirement, a.reason) for a in plan.batches[0].actions] == [
        ("reinstall", "nvidia-cudnn-cu12==9.10.2.21", "2 file(s) missing (RECORD_MISSING_FILES)"),
        ("reinstall", "nvidia-cusparselt-cu12==0.7.1", "2 file(s) missing (RECORD_MISSING_FILES)"),
        ("reinstall", "nvidia-nccl-cu12==2.27.5", "2 file(s) missing (RECORD_MISSING_FILES)"),
        ("reinstall", "nvidia-nvshmem-cu12==3.3.20", "3 file(s) missing (RECORD_MISSING_FILES)"),
    ]


def test_healthy_venv_gives_an_empty_plan():
    plan = plan_of(O.healthy())
    assert plan == Plan((), ())
    assert plan.empty is True
    assert plan.as_dict() == {"batches": [], "unfixable": []}


# --- the desired state ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["nvidia-cudnn-cu12", "NVIDIA_cuDNN.cu12", "torch"])
def test_removing_a_declared_distribution_is_refused(name):
    with pytest.raises(PlanError) as caught:
        plan_of(O.healthy(), remove=(name,))
    assert str(caught.value) == "cannot remove %s: torch requires it (it is in the declared set)" % name


def test_remove_names_a_distribution_explicitly_and_ignores_absent_ones():
    obs = O.healthy(add=[dist("requests", "2.32.5", ["requests/__init__.py"])])
    assert steps(plan_of(obs, remove=("Requests", "not-installed"))) == [(1, "remove", "requests")]
    assert plan_of(obs, remove=("requests",)).batches[0].actions[0].reason == "listed in remove"


def test_prune_none_removes_nothing_it_was_not_told_to():
    plan = plan_of(O.contaminated(), prune="none")
    assert removals(plan) == []
    assert steps(plan) == [(1, "reinstall", "nvidia-cudnn-cu12==9.10.2.21"), (1, "reinstall", "nvidia-nccl-cu12==2.27.5")]


def test_prune_none_with_remove():
    assert removals(plan_of(O.contaminated(), prune="none", remove=("nvidia-cublas", "nvidia-cudnn-cu13"))) == [
        "nvidia-cublas", "nvidia-cudnn-cu13"]


def test_a_removal_that_breaks_a_kept_requirement_is_refused_before_anything_runs():
    with pytest.raises(PlanError) as caught:
        plan_of(O.contaminated(), prune="none", remove=("nvidia-cublas",))
    assert str(caught.value) == (
        "the repair would remove what a kept distribution requires: nvidia-cudnn-cu13 9.24.0.43 requires "
        "nvidia-cublas; name those in remove too, or keep what they require")


SERVER = [dist("my-server", "1.0", ["my_server/__init__.py"], ["my-kernels[jit]"]),
          dist("my-kernels", "2.0", ["my_kernels/__init__.py"], ['ninja==1.13.0; extra == "jit"']),
          dist("ninja", "1.13.0", ["ninja/__init__.py"])]


def test_a_removal_an_extra_of_a_kept_distribution_requires_is_refused_naming_the_distribution_and_the_bare_requirement():
    """Mutation guarded: the numbers of the `split("[", 1)[0]` and `split(";", 1)[0]` that make the refusal's pairs
    (the parent named with its extra, not found among the installed, or the requirement with its marker)."""
    with pytest.raises(PlanError) as caught:
        plan_of(O.healthy(add=SERVER), remove=("ninja",))
    assert str(caught.value) == (
        "the repair would remove what a kept distribution requires: my-kernels 2.0 requires ninja==1.13.0; name those "
        "in remove too, or keep what they require")


def test_what_an_extra_of_a_removed_distribution_requires_may_go_with_it():
    """my-kernels and ninja removed: only the kept my-server is named (my-kernels[jit] goes with my-kernels, so its
    ninja breaks nothing that stays); with my-server removed too, nothing is.

    Mutation guarded: the numbers of `split("[", 1)[0]` in _refuse_broken_requirements' cut (my-kernels[jit], gone,
    would count as kept)."""
    with pytest.raises(PlanError) as caught:
        plan_of(O.healthy(add=SERVER), remove=("my-kernels", "ninja"))
    assert str(caught.value) == (
        "the repair would remove what a kept distribution requires: my-server 1.0 requires my-kernels[jit]; name "
        "those in remove too, or keep what they require")
    assert removals(plan_of(O.healthy(add=SERVER), remove=("my-server", "my-kernels", "ninja"))) == [
        "my-kernels", "my-server", "ninja"]


def test_prune_all_removes_everything_undeclared_but_the_installer_seed():
    seed = [dist(n, v, ["%s/__init__.py" % n]) for n, v in (("pip", "25.2"), ("setuptools", "80.9.0"), ("wheel", "0.45.1"), ("uv", "0.9.5"))]
    obs = O.healthy(add=seed + [dist("requests", "2.32.5", ["requests/__init__.py"]),
                                dist("sgl-kernel", "0.3.9", ["sgl_kernel/__init__.py"])])
    assert removals(plan_of(obs, prune="all")) == ["requests", "sgl-kernel"]
    assert plan_of(obs, prune="all").batches[0].actions[0].reason == "not in the declared set (prune: all)"
    assert removals(plan_of(obs, prune="cuda")) == []  # a known CUDA consumer, but nothing proves it wrong here
    assert removals(plan_of(obs, prune="none")) == []


def test_prune_read_from_the_task_arguments_is_compared_by_value():
    """Mutation guarded: `==` -> `is` in _removals (prune "none" or "all" as the module reads it, an equal string but
    not the literal, would prune as "cuda")."""
    seed = [dist("pip", "25.2", ["pip/__init__.py"]), dist("requests", "2.32.5", ["requests/__init__.py"])]
    assert removals(plan_of(O.healthy(add=seed), prune=as_read("all"))) == ["requests"]
    assert removals(plan_of(O.contaminated(), prune=as_read("none"))) == []


def test_packages_join_the_declared_set():
    obs = O.healthy(add=[dist("sgl-kernel", "0.3.9", ["sgl_kernel/__init__.py"])], roots=("sgl-kernel==0.3.9",))
    assert plan_of(obs).empty


# --- requirements -------------------------------------------------------------------------------------------------

TOOLKIT = O.TOOLKIT_13
TORCH_13 = dist("torch", "2.14.1", ["torch/__init__.py"],
                ['cuda-toolkit[cublas,curand]==13.0.3; platform_system == "Linux"', "filelock"])
CUBLAS_13 = dist("nvidia-cublas", "13.1.1.3", ["nvidia/cu13/lib/libcublas.so.13"])
FILELOCK = dist("filelock", "3.20.0", ["filelock/__init__.py"])


def test_requirement_missing_through_extras_is_installed_without_marker_and_extras():
    plan = plan_of(build([TORCH_13, TOOLKIT, CUBLAS_13, FILELOCK]))
    assert plan == Plan((Batch(1, "install missing or mismatched requirements", (
        Action("install", "nvidia-curand", "nvidia-curand==10.4.0.35.*", "required by cuda-toolkit[cublas,curand], not installed"),
    ), ("REQUIREMENT_MISSING",)),), ())


def test_missing_requirement_with_extras_installs_the_bare_distribution():
    plan = plan_of(build([TORCH_13, FILELOCK]))
    assert [(a.kind, a.name, a.requirement, a.reason) for a in plan.batches[0].actions] == [
        ("install", "cuda-toolkit", "cuda-toolkit==13.0.3", "required by torch, not installed")]


def test_mismatched_requirement_is_installed_at_the_required_version():
    torch = dist("torch", "2.9.1", ["torch/__init__.py"], ["nvidia-nccl-cu12==2.27.5" + O.LINUX])
    nccl = dist("nvidia-nccl-cu12", "2.26.2", ["nvidia/nccl/lib/libnccl.so.2"])
    plan = plan_of(build([torch, nccl]))
    assert [(a.kind, a.requirement, a.reason) for a in plan.batches[0].actions] == [
        ("install", "nvidia-nccl-cu12==2.27.5", "2.26.2 installed, torch requires nvidia-nccl-cu12==2.27.5")]
    assert plan.batches[0].answers == ("REQUIREMENT_VERSION_MISMATCH",)


RUNTIME = "cuda/bindings/runtime.cpython-312-x86_64-linux-gnu.so"
TORCH_BINDINGS = dist("torch", "2.14.1", ["torch/__init__.py"], ["cuda-bindings==13.0.3", "cuda-python==13.0.3"])


def test_an_install_over_a_version_that_shares_loadable_paths_is_one_unit_removal_reinstall_install():
    """cuda-python 12.6 installed over cuda-bindings 13 (the same runtime module), torch requiring cuda-python 13:
    the installer's uninstall of 12.6 would delete cuda-bindings' file, so the old one is removed, cuda-bindings
    reinstalled, then the new one installed, in one batch.

    Mutation guarded: `|` -> `-` in make_plan's co-owners, in _replacing a loop that never runs, `not` deleted or
    added, `&` -> `-`, and in _units' swapped unit every `-` and `+` changed (co-owners, follow-ups, taken)."""
    bindings = dist("cuda-bindings", "13.0.3", [RUNTIME, "cuda/bindings/__init__.py"])
    python = dist("cuda-python", "12.6.2.post1", [RUNTIME, "cuda/__init__.py"])
    assert plan_of(build([TORCH_BINDINGS, bindings, python])) == Plan((Batch(1, COLLIDE, (
        Action("remove", "cuda-python", "cuda-python", "replaced by cuda-python==13.0.3: the installer's uninstall would "
               "delete the paths it shares"),
        Action("reinstall", "cuda-bindings", "cuda-bindings==13.0.3", "co-owner of paths cuda-python removes"),
        Action("install", "cuda-python", "cuda-python==13.0.3", "12.6.2.post1 installed, torch requires cuda-python==13.0.3"),
    ), ("CUDA_MAJOR_MIXED", "FILE_OWNERSHIP_CONFLICT")),), ())


@pytest.mark.parametrize("common_path", [same("cuda/bindings/_version.py"), "cuda/bindings/LICENSE"],
                         ids=["identical", "not-loadable"])
def test_an_install_over_a_version_sharing_only_identical_or_unloadable_paths_is_a_plain_install(common_path):
    """Mutation guarded: `and` -> `or` in _replacing (a shared path with the same bytes everywhere, or one nothing
    loads, would make the install a unit)."""
    bindings = dist("cuda-bindings", "13.0.3", [common_path, "cuda/bindings/__init__.py"])
    python = dist("cuda-python", "12.6.2.post1", [common_path, "cuda/__init__.py"])
    assert steps(plan_of(build([TORCH_BINDINGS, bindings, python]))) == [(1, "install", "cuda-python==13.0.3")]


def test_installs_are_chunked_by_batch_size():
    torch = dist("torch", "2.9.1", ["torch/__init__.py"], ["a==1", "b==1", "c==1"])
    assert steps(plan_of(build([torch]), batch_size=2)) == [(1, "install", "a==1"), (1, "install", "b==1"), (2, "install", "c==1")]


def test_a_missing_package_root_is_installed_at_its_pin():
    obs = build([dist("torch", "2.9.1", ["torch/__init__.py"])], roots=("sgl-kernel==0.3.9",))
    assert steps(plan_of(obs)) == [(1, "install", "sgl-kernel==0.3.9")]
    assert plan_of(obs).batches[0].answers == ("REQUIREMENT_MISSING",)


def test_a_missing_package_root_says_it_was_declared():
    obs = build([dist("torch", "2.9.1", ["torch/__init__.py"])], roots=("sgl-kernel==0.3.9",))
    assert not plan_of(obs).batches[0].actions[0].reason.startswith("required by , ")


def test_a_missing_anchor_pinned_in_packages_is_installed_at_the_pin():
    obs = build([FILELOCK], roots=("torch==2.9.1",))
    assert steps(plan_of(obs)) == [(1, "install", "torch==2.9.1")]


def test_a_missing_unpinned_anchor_is_not_installed_blindly():
    """No version to install: the plan installs nothing and tells the user how to declare one."""
    plan = plan_of(build([FILELOCK]))
    assert steps(plan) == []
    assert plan.unfixable == ("the anchor torch is not installed: declare the version to install in packages, "
                              "for example torch==2.9.1",)


def test_another_declared_anchor_is_installed_first_in_its_batch_whatever_the_order_of_its_pins():
    """The declared state as the installer resolved it (one pin per name, in the resolution's order, names as read):
    the new torch goes first, the other installs after it in their order.

    Mutation guarded: `!=` -> `==`, `<`, `<=`, `>`, `>=`, `is`, `is not` in make_plan's sort of the installs (a name
    before or after "torch" would move, or torch would go last)."""
    installed = [dist("torch", "2.9.1", ["torch/__init__.py"])]
    pins = [tuple(as_read(pin).split("==")) for pin in ("triton==3.5.0", "filelock==3.20.0", "torch==2.14.1")]
    obs = build(installed, requirements=pinned_edges(pins, installed))
    assert steps(plan_of(obs)) == [(1, "install", "torch==2.14.1"), (1, "install", "triton==3.5.0"),
                                   (1, "install", "filelock==3.20.0")]


# --- a lock ------------------------------------------------------------------------------------------------------

def _locked_with_drift():
    """The healthy venv against a pylock.toml that leaves out extra-tool (extra), locks cuBLAS lower (version) and
    numpy (missing), and whose filelock wheel has other bytes than the installed RECORD's (bytes)."""
    obs = O.healthy(add=[dist("extra-tool", "1.0", ["extra_tool/__init__.py"])])
    pins = dict({d.key: d.version for d in obs.distributions if d.key != "extra-tool"},
                **{"nvidia-cublas-cu12": "12.8.3.14", "numpy": "2.3.5"})
    lock = Lock("pylock.toml", "pylock", tuple(LockedPackage(name, version, (), None, "packages[%d]" % i)
                                               for i, (name, version) in enumerate(sorted(pins.items()))))
    return replace(obs, lock=lock, requirements=pinned_edges(lock.pins(), obs.distributions), lock_bytes={
        "filelock": BytesCheck("filelock", "/wh/filelock-3.20.0-py3-none-any.whl", 3, ("filelock/__init__.py",), 1)})


LOCK_REPAIR = [("reinstall", "filelock==3.20.0", "installed from other bytes than the locked wheel's (LOCK_DRIFT)"),
               ("install", "numpy==2.3.5", "locked at 2.3.5 by pylock.toml, not installed"),
               ("install", "nvidia-cublas-cu12==12.8.3.14", "locked at 12.8.3.14 by pylock.toml, installed 12.8.4.1")]


def test_a_lock_reinstalls_only_the_wheel_of_other_bytes_and_prune_all_removes_what_it_leaves_out():
    """Mutation guarded: `==` -> `!=`, `<`, `>`, `>=` (and `!=` -> `is not`) in _damaged's `details["kind"] == BYTES`
    (the extra or the other version would be reinstalled, or the other bytes not), and every `+` changed in
    _removals' "lock " + its name."""
    obs = _locked_with_drift()
    plan = plan_of(obs)
    assert [(b.number, b.answers) for b in plan.batches] == [(1, ("LOCK_DRIFT",)), (2, ("LOCK_DRIFT",))]
    assert [(a.kind, a.requirement, a.reason) for b in plan.batches for a in b.actions] == LOCK_REPAIR
    pruned = plan_of(obs, prune="all")
    assert [(a.kind, a.requirement, a.reason) for b in pruned.batches for a in b.actions] == [
        ("remove", "extra-tool", "not in the lock pylock.toml (prune: all)")] + LOCK_REPAIR


# --- sole providers (invariant 3) ---------------------------------------------------------------------------------

CURAND_LIB, CUFILE_LIB, TWIN_LIB = "nvidia/curand/lib/libcurand.so.10", "nvidia/cufile/lib/libcufile.so.0", "nvidia/cu13/lib/libcurand.so.10"
CURAND_12 = dist("nvidia-curand-cu12", "10.3.9.90", [CURAND_LIB])


def _curand_replaced(twin=None, graph=None):
    """torch loads libcurand.so.10 from a wheel outside the declared set (``graph``: another import graph).

    ``twin``: None, the declared nvidia-curand is not installed; "present": it is, with its library;
    "missing": it is, but its files are gone.
    """
    torch = dist("torch", "2.14.1", ["torch/__init__.py", O.TORCH_C, TORCH_CUDA], ["nvidia-curand==10.4.0.35"])
    cufile = dist("nvidia-cufile-cu12", "1.13.1.3", [CUFILE_LIB])
    dists = [torch, CURAND_12, cufile]
    # torch links libcudart.so.13: a CUDA 13 build, so the two cu12 wheels are of the other major (the evidence)
    elves = {O.TORCH_C: elf(None, ["libtorch_cuda.so"]), TORCH_CUDA: elf("libtorch_cuda.so", ["libcurand.so.10", "libcudart.so.13"]),
             CURAND_LIB: elf("libcurand.so.10"), CUFILE_LIB: elf("libcufile.so.0")}
    if twin:
        dists.append(dist("nvidia-curand", "10.4.0.35", [TWIN_LIB]))
        elves[TWIN_LIB] = elf(os.path.basename(TWIN_LIB))  # as read from the file: not the graph's str object
    graph = graph or {TORCH_CUDA: [found("libcurand.so.10", CURAND_LIB)], CURAND_LIB: []}
    return build(dists, elves=elves, import_graph=graph, missing={"nvidia-curand": O.ALL} if twin == "missing" else None)


def test_the_sole_provider_of_a_soname_a_kept_object_loads_goes_last():
    plan = plan_of(_curand_replaced())
    assert [(b.number, b.title, [(a.kind, a.requirement) for a in b.actions]) for b in plan.batches] == [
        (1, "remove contaminants nothing kept needs", [("remove", "nvidia-cufile-cu12")]),
        (2, "install missing or mismatched requirements", [("install", "nvidia-curand==10.4.0.35")]),
        (3, "remove former sole providers, now replaced", [("remove", "nvidia-curand-cu12")]),
    ]


def test_a_provider_with_a_kept_twin_goes_at_once():
    """Mutation guarded: `!=` -> `is not` in _provided_by_kept (the twin's soname, read from its file, is an equal
    string, not the import graph's), and `!=` -> `>` (torch's _C, kept, has no soname to compare)."""
    plan = plan_of(_curand_replaced("present"))
    assert [(b.number, b.title, [(a.kind, a.requirement) for a in b.actions]) for b in plan.batches] == [
        (1, "remove contaminants nothing kept needs", [("remove", "nvidia-cufile-cu12"), ("remove", "nvidia-curand-cu12")])]


def test_a_provider_whose_twin_is_missing_on_disk_goes_after_the_twin_is_reinstalled():
    order = [(a.kind, a.name) for b in plan_of(_curand_replaced("missing")).batches for a in b.actions]
    assert order.index(("reinstall", "nvidia-curand")) < order.index(("remove", "nvidia-curand-cu12"))


def test_only_what_a_kept_object_needs_makes_its_sole_provider_wait():
    """The removed libcurand (first in the graph) needs libcufile; kept libtorch_cuda needs libcurand: cufile goes
    at once, curand-cu12 last.

    Mutation guarded in _needed_sonames_by_kept: `not` added to `if owners` (what only a removed object needs would
    count) and `continue` -> `break` (libtorch_cuda, after the removed object, would not count)."""
    graph = {CURAND_LIB: [found("libcufile.so.0", CUFILE_LIB)], TORCH_CUDA: [found("libcurand.so.10", CURAND_LIB)], CUFILE_LIB: []}
    assert steps(plan_of(_curand_replaced(graph=graph))) == [
        (1, "remove", "nvidia-cufile-cu12"), (2, "install", "nvidia-curand==10.4.0.35"), (3, "remove", "nvidia-curand-cu12")]


def test_a_removal_provides_only_its_own_sonames():
    """torch needs libcufile here, not libcurand: cufile-cu12 goes last, curand-cu12 (sorting after it) at once.

    Mutation guarded: `o.owner.key == key` -> `<=` in _split_sole_providers (curand-cu12 would provide cufile's
    libcufile.so.0 too)."""
    graph = {TORCH_CUDA: [found("libcufile.so.0", CUFILE_LIB)], CUFILE_LIB: []}
    assert steps(plan_of(_curand_replaced(graph=graph))) == [
        (1, "remove", "nvidia-curand-cu12"), (2, "install", "nvidia-curand==10.4.0.35"), (3, "remove", "nvidia-cufile-cu12")]


def test_the_sole_provider_named_in_remove_goes_last():
    """Mutation guarded: `o.owner.key == key` -> `is` in _split_sole_providers (the key remove names is an equal
    string, not the distribution's own: it would provide nothing and go at once)."""
    assert steps(plan_of(_curand_replaced(), prune="none", remove=("nvidia-curand-cu12",))) == [
        (1, "install", "nvidia-curand==10.4.0.35"), (2, "remove", "nvidia-curand-cu12")]


def test_a_colliding_partner_is_installed_after_the_removal_it_collides_with():
    """The incident after `pip uninstall nvidia-cudnn-cu12`: torch runs cu13's libcudnn.so.9 at the shared path."""
    dists = [O.torch_cu12()] + O.cu12_support() + [d for d in O.cu12_colliding() if d.key != "nvidia-cudnn-cu12"]
    dists += [d for d in O.cu13_colliding() if d.key == "nvidia-cudnn-cu13"]
    obs = build(dists, elves=O.stack_elves(), import_graph=O.torch_graph(), probe=O.probe_ok({"cudnn": 92400}))
    order = [(a.kind, a.name) for b in plan_of(obs).batches for a in b.actions]
    assert ("remove", "nvidia-cudnn-cu13") in order
    last_cu12 = max(i for i, (_kind, name) in enumerate(order) if name == "nvidia-cudnn-cu12")
    assert order.index(("remove", "nvidia-cudnn-cu13")) < last_cu12


# --- inventory ----------------------------------------------------------------------------------------------------

def test_predicted_inventory_after_the_contaminated_plan():
    obs = O.contaminated()
    before = {d.key: d.version for d in obs.distributions}
    after = predicted_inventory(before, plan_of(obs))
    assert after == {
        "filelock": "3.20.0", "nvidia-cublas-cu12": "12.8.4.1", "nvidia-cuda-runtime-cu12": "12.8.90",
        "nvidia-cudnn-cu12": "9.10.2.21", "nvidia-cusparselt-cu12": "0.7.1", "nvidia-nccl-cu12": "2.27.5",
        "nvidia-nvshmem-cu12": "3.3.20", "torch": "2.9.1"}
    assert list(after) == sorted(after)


def test_predicted_inventory_of_installs():
    plan = Plan((Batch(1, "t", (Action("install", "nvidia-curand", "nvidia-curand==10.4.0.35.*", "r"),
                                Action("install", "nvidia-nccl-cu12", "nvidia-nccl-cu12==2.27.5", "r"),
                                Action("remove", "absent", "absent", "r")), ()),), ())
    assert predicted_inventory({"nvidia-nccl-cu12": "2.26.2", "torch": "2.9.1"}, plan) == {
        "nvidia-curand": "10.4.0.35", "nvidia-nccl-cu12": "2.27.5", "torch": "2.9.1"}


def test_predicted_inventory_of_an_unpinned_install_has_no_version():
    plan = Plan((Batch(1, "t", (Action("install", "filelock", "filelock", "r"),
                                Action("install", "numpy", "numpy>=1.26", "r")), ()),), ())
    assert predicted_inventory({}, plan) == {"filelock": None, "numpy": None}


def test_removals_are_in_plan_order():
    assert removals(plan_of(O.contaminated())) == ["nvidia-cublas"] + CU13


# --- RECORD paths leaving the venv: never deleted, never written --------------------------------------------

ESCAPES = [("evil", "../../../../outside/victim.txt", "RECORD entry '../../../../outside/victim.txt' leaves the venv"),
           ("evil", "link/victim.txt", "RECORD entry 'link/victim.txt' leaves the venv")]


def test_a_removal_with_paths_outside_the_venv_first_cuts_them_from_its_record():
    obs = O.healthy(add=[dist("evil", "1.0", ["evil/__init__.py"])], unsafe=ESCAPES)
    action = plan_of(obs, prune="all").batches[0].actions[0]
    assert (action.kind, action.name, action.outside) == ("remove", "evil", ("../../../../outside/victim.txt", "link/victim.txt"))
    assert action.record.endswith("/evil-1.0.dist-info/RECORD")
    assert action.as_dict()["outside"] == ["../../../../outside/victim.txt", "link/victim.txt"]
    assert action.reason == "not in the declared set (prune: all); RECORD first cut to the paths inside the venv"


def test_an_ordinary_removal_has_no_record_to_cut():
    obs = O.healthy(add=[dist("evil", "1.0", ["evil/__init__.py"])])
    action = plan_of(obs, prune="all").batches[0].actions[0]
    assert (action.record, action.outside) == (None, ())
    assert "outside" not in action.as_dict()


def test_a_damaged_wheel_whose_paths_leave_the_venv_is_never_reinstalled():
    unsafe = [("nvidia-cudnn-cu12", "nvidia/cudnn/include/cudnn.h",
               "RECORD entry 'nvidia/cudnn/include/cudnn.h' leaves the venv")]
    plan = plan_of(O.gutted(unsafe=unsafe))
    assert [a.requirement for b in plan.batches for a in b.actions] == CU12_PINS[1:]
    assert plan.unfixable == (
        "nvidia-cudnn-cu12 9.10.2.21 is not reinstalled: 1 of its RECORD paths leave the venv (RECORD_PATH_OUTSIDE_VENV), "
        "so the installer would write outside it, e.g. nvidia/cudnn/include/cudnn.h; fix those paths (a symlink "
        "leaving the venv?), then run again",)


def test_a_co_owner_whose_paths_leave_the_venv_is_not_reinstalled_after_a_removal():
    """Mutation guarded: the "never rewritten" refusal blind to the co-owners of a collision (a co-owner whose RECORD
    leaves the venv would be reinstalled, and the installer would write outside it)."""
    unsafe = [("nvidia-nccl-cu12", "nvidia/nccl/include/nccl.h", "RECORD entry 'nvidia/nccl/include/nccl.h' leaves the venv")]
    plan = plan_of(O.contaminated(unsafe=unsafe))
    assert "nvidia-nccl-cu12==2.27.5" not in [a.requirement for b in plan.batches for a in b.actions]
    assert "nvidia-nccl-cu13" in removals(plan)
    assert [u.split(" is not")[0] for u in plan.unfixable] == ["nvidia-nccl-cu12 2.27.5"]


def test_a_co_owner_nothing_else_damaged_whose_paths_leave_the_venv_is_not_reinstalled_and_its_first_escape_is_named():
    """cuSPARSELt cu12 is reinstalled only as a co-owner of what cusparselt-cu13 removes (nothing reports it damaged).

    Mutation guarded: `if co_owners` -> `if not co_owners` in _never_rewritten (only the damaged wheels checked), and
    `outside[key][0]` -> `[-1]` (the message's example)."""
    unsafe = [("nvidia-cusparselt-cu12", path, "RECORD entry '%s' leaves the venv" % path)
              for path in ("../../../../etc/ld.so.conf.d/cusparselt.conf", "../../../../usr/lib/libcusparseLt.so.0")]
    plan = plan_of(O.contaminated(unsafe=unsafe))
    assert "nvidia-cusparselt-cu12==0.7.1" not in [a.requirement for b in plan.batches for a in b.actions]
    assert "nvidia-cusparselt-cu13" in removals(plan)
    assert plan.unfixable == (
        "nvidia-cusparselt-cu12 0.7.1 is not reinstalled: 2 of its RECORD paths leave the venv (RECORD_PATH_OUTSIDE_VENV), "
        "so the installer would write outside it, e.g. ../../../../etc/ld.so.conf.d/cusparselt.conf; fix those paths (a "
        "symlink leaving the venv?), then run again",)


# --- a kept contaminant that collides: neither side is reinstalled -------------------------------------------------

HELD_KERNEL = dist("sgl-kernel", "0.3.9", ["sgl_kernel/__init__.py"], ["nvidia-cublas-cu12", "nvidia-cudnn-cu13"], installer="uv")
HELD_STEPS = [(1, "remove", "nvidia-cusparselt-cu13"), (1, "remove", "nvidia-nccl-cu13"), (1, "remove", "nvidia-nvshmem-cu13"),
              (1, "reinstall", "nvidia-cusparselt-cu12==0.7.1"), (1, "reinstall", "nvidia-nccl-cu12==2.27.5"),
              (1, "reinstall", "nvidia-nvshmem-cu12==3.3.20")]
HELD_WHY = ("nvidia-cudnn-cu13 9.24.0.43 and nvidia-cudnn-cu12 9.10.2.21 list the same 2 path(s) (e.g. "
            "nvidia/cudnn/lib/libcudnn.so.9) and nvidia-cudnn-cu13 is kept because sgl-kernel 0.3.9 requires it: "
            "reinstalling either overwrites the other, so neither is; name it in remove with sgl-kernel 0.3.9")


def test_a_held_cu13_twin_and_the_cu12_wheel_it_overwrote_are_both_left_with_why():
    """sgl-kernel (a CUDA 12 consumer nothing requires: kept) requires nvidia-cudnn-cu13, which collides with
    nvidia-cudnn-cu12: the other cu13 twins go, cuDNN's stay apart (reinstalling either overwrites the other).

    Mutation guarded in _without_kept_collisions: `or` -> `and` in what is kept, a loop that never runs, `!=` ->
    `==`, `is`, `>`, `>=`, `<=` and `not` added (the other owner sorts before the held label), `not pairs` changed,
    the replacement's test negated, the example path's sort and index, and `== 1` changed (one holder: "requires")."""
    plan = plan_of(O.contaminated(add=[HELD_KERNEL]))
    assert steps(plan) == HELD_STEPS
    assert plan.unfixable == (HELD_WHY,)


def test_a_held_wheel_installed_twice_is_not_said_to_collide_with_itself():
    """nvidia-cublas (held by nvidia-cudnn-cu13) has a second dist-info: observe lists its paths as a conflict of
    two owners of the same label, each its own string. Nothing changes.

    Mutation guarded: `!=` -> `is not` in _without_kept_collisions (the label paired with its equal twin)."""
    label = "nvidia-cublas 13.1.1.3"
    obs = O.contaminated(add=[HELD_KERNEL, replace(O.cublas_cu13(), dist_info=O.SITE + "/nvidia-cublas-13.1.1.3.dist-info")])
    obs = replace(obs, conflicts=obs.conflicts + [Conflict("nvidia/cu13/lib/libcublas.so.13", (label, as_read(label)), None)])
    plan = plan_of(obs)
    assert steps(plan) == HELD_STEPS
    assert plan.unfixable == (HELD_WHY,)


def test_a_cu12_twin_two_applications_hold_in_a_cuda_13_venv_is_left_with_the_cu13_wheel_it_overwrote():
    """The held label sorts before the other owner's; two holders ("require").

    Mutation guarded in _without_kept_collisions: `!=` -> `<`, `<=`, `>=` (pairs whose other owner sorts after the
    held label), and `== 1` -> `>= 1`."""
    lib, header = "nvidia/cudnn/lib/libcudnn.so.9", "nvidia/cudnn/include/cudnn.h"
    torch = dist("torch", "2.14.1", ["torch/__init__.py", TORCH_CUDA], ["nvidia-cudnn-cu13==9.24.0.43"])
    apps = [dist(name, "1.0", ["%s/__init__.py" % name.replace("-", "_")], ["nvidia-cudnn-cu13", "nvidia-cudnn-cu12"],
                 installer="uv") for name in ("my-app", "my-tool")]
    obs = build([torch, dist("nvidia-cudnn-cu13", "9.24.0.43", [header, lib]), dist("nvidia-cudnn-cu12", "9.10.2.21", [header, lib])]
                + apps, modified={"nvidia-cudnn-cu13": [lib]},
                elves={TORCH_CUDA: elf("libtorch_cuda.so", ["libcudart.so.13", "libcudnn.so.9"]), lib: elf("libcudnn.so.9")})
    assert plan_of(obs) == Plan((), (
        "nvidia-cudnn-cu12 9.10.2.21 and nvidia-cudnn-cu13 9.24.0.43 list the same 2 path(s) (e.g. "
        "nvidia/cudnn/lib/libcudnn.so.9) and nvidia-cudnn-cu12 is kept because my-app 1.0, my-tool 1.0 require it: "
        "reinstalling either overwrites the other, so neither is; name it in remove with my-app 1.0, my-tool 1.0",))


def test_a_harmless_cu13_build_over_its_cu12_twin_is_left_saying_why_it_is_kept_and_how_to_remove_it():
    """cupy-cuda13x installed over cupy-cuda12x beside a CUDA 12 torch: both are candidates (a path shared between
    candidates is no evidence), nothing requires cupy-cuda13x, so it is kept as harmless and the pair stays apart. The
    reason says so (it said "kept because  require it", with no holder), and naming it in remove fixes the pair."""
    paths = ["cupy/__init__.py", "cupy/_core/core.cpython-311-x86_64-linux-gnu.so"]
    obs = O.healthy(add=[dist("cupy-cuda12x", "14.2.0", paths), dist("cupy-cuda13x", "14.2.0", paths)],
                    modified={"cupy-cuda12x": paths})
    assert plan_of(obs) == Plan((), (
        "cupy-cuda13x 14.2.0 and cupy-cuda12x 14.2.0 list the same 2 path(s) (e.g. cupy/__init__.py) and cupy-cuda13x "
        "is kept as harmless (its CUDA 13 code cannot load beside a CUDA 12 torch, its CPU code works; install its "
        "CUDA 12 build (cupy-cuda12x) to use the GPU): reinstalling either overwrites the other, so neither is; name it "
        "in remove to remove it and reinstall cupy-cuda12x 14.2.0",))
    assert steps(plan_of(obs, remove=("cupy-cuda13x",))) == [(1, "remove", "cupy-cuda13x"), (1, "reinstall", "cupy-cuda12x==14.2.0")]


# --- repair what is broken and nothing else ------------------------------------------------------------------------

def test_a_hand_edit_outside_the_cuda_stack_is_left_alone_and_reverted_only_when_asked():
    jinja = dist("Jinja2", "3.1.6", ["jinja2/__init__.py"])
    obs = O.healthy(add=[jinja], modified={"jinja2": ["jinja2/__init__.py"]})
    assert plan_of(obs) == Plan((), ())
    assert steps(plan_of(obs, revert_edits=True)) == [(1, "reinstall", "Jinja2==3.1.6")]


def test_a_damaged_cuda_wheel_is_reinstalled_without_being_asked():
    obs = O.healthy(modified={"nvidia-nccl-cu12": ["nvidia/nccl/lib/libnccl.so.2"]})
    assert steps(plan_of(obs)) == [(1, "reinstall", "nvidia-nccl-cu12==2.27.5")]


def test_the_anchors_own_edited_files_are_reinstalled():
    obs = O.healthy(modified={"torch": ["torch/__init__.py"]})
    assert steps(plan_of(obs)) == [(1, "reinstall", "torch==2.9.1")]


def test_a_cuda_wheel_whose_only_difference_is_a_shared_file_nothing_loads_is_reverted_only_when_asked():
    """nvidia-cuda-nvrtc-cu12 overwrote the stray build_backend.py cupti lists too (it sorts before NCCL, damaged).

    Mutation guarded: `is not None` -> `is None` and `if scope` -> `if not scope` in _damaged (the inert paths ignored
    by default, or kept under revert_edits), and `continue` -> `break` after only_inert (NCCL, after cupti, would not
    be reinstalled)."""
    cupti = dist("nvidia-cuda-cupti-cu12", "12.8.90", ["build_backend.py", "nvidia/cuda_cupti/lib/libcupti.so.12"])
    nvrtc = dist("nvidia-cuda-nvrtc-cu12", "12.8.93", ["build_backend.py", "nvidia/cuda_nvrtc/lib/libnvrtc.so.12"])
    obs = O.healthy(add=[cupti, nvrtc], modified={"nvidia-cuda-cupti-cu12": ["build_backend.py"],
                                                  "nvidia-nccl-cu12": ["nvidia/nccl/lib/libnccl.so.2"]})
    assert steps(plan_of(obs)) == [(1, "reinstall", "nvidia-nccl-cu12==2.27.5")]
    assert steps(plan_of(obs, revert_edits=True)) == [(1, "reinstall", "nvidia-cuda-cupti-cu12==12.8.90"),
                                                      (1, "reinstall", "nvidia-nccl-cu12==2.27.5")]


def test_a_distribution_whose_files_were_not_checked_is_not_judged():
    """No file state for torch (its files not read): nothing to reinstall, and no error.

    Mutation guarded: the first `or` -> `and` in _damaged's skip (torch, in the CUDA scope, would be judged on a
    missing state)."""
    obs = O.healthy()
    unchecked = replace(obs, file_states={k: v for k, v in obs.file_states.items() if not k.endswith("/torch-2.9.1.dist-info")})
    assert make_plan(unchecked, diagnose(obs), DesiredState()) == Plan((), ())


@pytest.mark.parametrize("code", [F.INSTALL_WOULD_OVERWRITE, F.SONAME_SHADOWED])
def test_only_a_runtime_library_mismatch_naming_a_distribution_reinstalls_it(code):
    """Other findings name a distribution in their details too (sorting before and after RUNTIME_LIBRARY_MISMATCH):
    none asks for a reinstall.

    Mutation guarded: `==` -> `<=`, `>=` and `and` -> `or` in _damaged's RUNTIME_LIBRARY_MISMATCH test."""
    obs = O.healthy()
    other = Finding(code, F.ERROR, "nvidia-nccl-cu12 2.27.5", "m", None, {"distribution": "nvidia-nccl-cu12"})
    assert make_plan(obs, diagnose(obs) + [other], DesiredState()) == Plan((), ())
    mismatch = replace(other, code=F.RUNTIME_LIBRARY_MISMATCH)
    assert steps(make_plan(obs, diagnose(obs) + [mismatch], DesiredState())) == [(1, "reinstall", "nvidia-nccl-cu12==2.27.5")]


def test_findings_read_back_are_compared_by_value():
    """Findings whose code, severity and kind are equal strings, not the constants of findings.py and lock_drift.py:
    the mismatch and the other bytes still reinstall, and an info finding is still no answer of its batch.

    Mutation guarded: `==` -> `is` in _damaged's RUNTIME_LIBRARY_MISMATCH and LOCK_DRIFT tests (code and kind),
    `!=` -> `is not` in make_plan's codes."""
    obs = O.healthy()
    findings = [Finding(as_read(F.RUNTIME_LIBRARY_MISMATCH), as_read(F.ERROR), "nccl", "m", None, {"distribution": "nvidia-nccl-cu12"}),
                Finding(as_read(F.LOCK_DRIFT), as_read(F.ERROR), "filelock", "m", None, {"kind": as_read(BYTES)}),
                Finding(as_read(F.FILE_OWNERSHIP_CONFLICT), as_read(F.INFO), "nvidia/nccl/include/nccl.h", "m")]
    assert make_plan(obs, findings, DesiredState()) == Plan((Batch(1, COLLIDE, (
        Action("reinstall", "filelock", "filelock==3.20.0", "installed from other bytes than the locked wheel's (LOCK_DRIFT)"),
        Action("reinstall", "nvidia-nccl-cu12", "nvidia-nccl-cu12==2.27.5", "runs another library version (RUNTIME_LIBRARY_MISMATCH)"),
    ), ("LOCK_DRIFT", "RUNTIME_LIBRARY_MISMATCH")),), ())


def test_the_records_a_swap_trims_are_the_copys():
    live, copy = "/venvs/train", "/venvs/.train.cuda_venv/next"
    evil = Action("remove", "evil", "evil", "not required", record=live + "/lib/python3.12/site-packages/evil-1.0.dist-info/RECORD",
                  outside=("../../../../outside/victim.txt",))
    torch = Action("reinstall", "torch", "torch==2.9.1", "files missing")
    plan = Plan(batches=(Batch(1, "remove", (evil,), ()), Batch(2, "reinstall", (torch,), ())), unfixable=())
    moved = complete_plan(plan, Completion(copy=(live, copy)))
    assert moved.batches[0].actions == (Action("remove", "evil", "evil", "not required",
                                               record=copy + "/lib/python3.12/site-packages/evil-1.0.dist-info/RECORD",
                                               outside=("../../../../outside/victim.txt",)),)
    assert moved.batches[1] == plan.batches[1]
    assert plan.batches[0].actions[0].record.startswith(live + "/")  # the live plan, as reported, is unchanged


def test_completion_puts_the_guards_dependencies_after_their_install_and_says_what_each_install_replaces():
    torch = Action("install", "torch", "torch==2.9.1", "declared")
    dep = Action("install", "nvidia-nccl-cu12", "nvidia-nccl-cu12==2.27.5", "dependency of torch, resolved by uv")
    gone = Action("remove", "nvidia-nccl-cu13", "nvidia-nccl-cu13", "not required")
    plan = Plan(batches=(Batch(1, "one", (gone, torch), ()),), unfixable=())
    done = complete_plan(plan, Completion(dependencies=(("torch", (dep,)),),
                                          replaced=(("nvidia-nccl-cu12", (("nvidia-nccl-cu13 2.28.9", 2),)),),
                                          unchecked=("torch",)))
    assert done.batches[0].actions == (
        gone,
        Action("install", "torch", "torch==2.9.1", "declared; no wheel of it in the wheel sources: not checked, its batch "
               "will be unfixable"),
        Action("install", "nvidia-nccl-cu12", "nvidia-nccl-cu12==2.27.5", "dependency of torch, resolved by uv; replaces "
               "2 file(s) of nvidia-nccl-cu13 2.28.9, removed before it"))
    assert plan.batches[0].actions == (gone, torch)  # the plan given is not changed
    assert complete_plan(plan, Completion()) == plan


def test_completion_with_a_copy_leaves_a_removal_without_a_record_to_cut_as_it_is():
    """Mutation guarded: `and` -> `or` in explained (a removal with no RECORD to cut, or a plan run without a copy,
    would have its record rewritten)."""
    gone = Action("remove", "requests", "requests", "listed in remove")
    evil = Action("remove", "evil", "evil", "not required", record="/venvs/train/evil-1.0.dist-info/RECORD", outside=("../x",))
    plan = Plan(batches=(Batch(1, "remove", (gone,), ()),), unfixable=())
    assert complete_plan(plan, Completion(copy=("/venvs/train", "/venvs/.train.cuda_venv/next"))) == plan
    assert complete_plan(Plan((Batch(1, "remove", (evil,), ()),), ()), Completion()).batches[0].actions == (evil,)


def test_completion_puts_the_dependencies_after_the_install_only_not_after_the_removal_of_that_name():
    """A replaced cuda-python: its removal, then its install, followed by what the guard resolved for it.

    Mutation guarded: `==` -> `>=` in completed ("remove" sorts after "install": the removal would be followed by the
    install's dependencies too)."""
    gone = Action("remove", "cuda-python", "cuda-python", "replaced by cuda-python==13.*")
    new = Action("install", "cuda-python", "cuda-python==13.*", "declared")
    dep = Action("install", "cuda-pathfinder", "cuda-pathfinder==1.3.2", "dependency of cuda-python, resolved by uv")
    plan = Plan(batches=(Batch(1, "one", (gone, new), ()),), unfixable=())
    done = complete_plan(plan, Completion(dependencies=(("cuda-python", (dep,)),)))
    assert done.batches[0].actions == (gone, new, dep)


def test_completion_compares_the_kinds_of_a_plan_read_back_by_value():
    """Mutation guarded: `==` -> `is` in explained and in completed (an action whose kind is an equal string, not the
    literal itself, would be neither moved to the copy nor followed by its dependencies)."""
    live, copy = "/venvs/train", "/venvs/.train.cuda_venv/next"
    evil = Action(as_read("remove"), "evil", "evil", "not required", record=live + "/evil-1.0.dist-info/RECORD", outside=("../x",))
    torch = Action(as_read("install"), "torch", "torch==2.9.1", "declared")
    dep = Action("install", "filelock", "filelock==3.20.0", "dependency of torch, resolved by uv")
    plan = Plan(batches=(Batch(1, "one", (evil, torch), ()),), unfixable=())
    done = complete_plan(plan, Completion(dependencies=(("torch", (dep,)),), copy=(live, copy)))
    assert done.batches[0].actions == (
        Action("remove", "evil", "evil", "not required", record=copy + "/evil-1.0.dist-info/RECORD", outside=("../x",)),
        torch, dep)
