# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for plan.make_plan: the repair as a pure function of Observations built from literal data."""

from __future__ import annotations

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.contaminants import Evidence
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.diagnose import diagnose
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import (
    Action, Batch, Completion, DesiredState, Plan, PlanError, complete_plan, make_plan, predicted_inventory)
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils import observations as O
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils.observations import (
    TORCH_CUDA, build, dist, elf, found)

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


def test_prune_all_removes_everything_undeclared_but_the_installer_seed():
    seed = [dist(n, v, ["%s/__init__.py" % n]) for n, v in (("pip", "25.2"), ("setuptools", "80.9.0"), ("wheel", "0.45.1"), ("uv", "0.9.5"))]
    obs = O.healthy(add=seed + [dist("requests", "2.32.5", ["requests/__init__.py"]),
                                dist("sgl-kernel", "0.3.9", ["sgl_kernel/__init__.py"])])
    assert removals(plan_of(obs, prune="all")) == ["requests", "sgl-kernel"]
    assert plan_of(obs, prune="all").batches[0].actions[0].reason == "not in the declared set (prune: all)"
    assert removals(plan_of(obs, prune="cuda")) == []  # a known CUDA consumer, but nothing proves it wrong here
    assert removals(plan_of(obs, prune="none")) == []


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


# --- sole providers (invariant 3) ---------------------------------------------------------------------------------

CURAND_12 = dist("nvidia-curand-cu12", "10.3.9.90", ["nvidia/curand/lib/libcurand.so.10"])


def _curand_replaced(twin=None):
    """torch loads libcurand.so.10 from a wheel outside the declared set.

    ``twin``: None, the declared nvidia-curand is not installed; "present": it is, with its library;
    "missing": it is, but its files are gone.
    """
    torch = dist("torch", "2.14.1", ["torch/__init__.py", TORCH_CUDA], ["nvidia-curand==10.4.0.35"])
    cufile = dist("nvidia-cufile-cu12", "1.13.1.3", ["nvidia/cufile/lib/libcufile.so.0"])
    dists = [torch, CURAND_12, cufile]
    # torch links libcudart.so.13: a CUDA 13 build, so the two cu12 wheels are of the other major (the evidence)
    elves = {TORCH_CUDA: elf("libtorch_cuda.so", ["libcurand.so.10", "libcudart.so.13"]),
             "nvidia/curand/lib/libcurand.so.10": elf("libcurand.so.10"),
             "nvidia/cufile/lib/libcufile.so.0": elf("libcufile.so.0")}
    if twin:
        dists.append(dist("nvidia-curand", "10.4.0.35", ["nvidia/cu13/lib/libcurand.so.10"]))
        elves["nvidia/cu13/lib/libcurand.so.10"] = elf("libcurand.so.10")
    graph = {TORCH_CUDA: [found("libcurand.so.10", "nvidia/curand/lib/libcurand.so.10")], "nvidia/curand/lib/libcurand.so.10": []}
    return build(dists, elves=elves, import_graph=graph, missing={"nvidia-curand": O.ALL} if twin == "missing" else None)


def test_the_sole_provider_of_a_soname_a_kept_object_loads_goes_last():
    plan = plan_of(_curand_replaced())
    assert [(b.number, b.title, [(a.kind, a.requirement) for a in b.actions]) for b in plan.batches] == [
        (1, "remove contaminants nothing kept needs", [("remove", "nvidia-cufile-cu12")]),
        (2, "install missing or mismatched requirements", [("install", "nvidia-curand==10.4.0.35")]),
        (3, "remove former sole providers, now replaced", [("remove", "nvidia-curand-cu12")]),
    ]


def test_a_provider_with_a_kept_twin_goes_at_once():
    plan = plan_of(_curand_replaced("present"))
    assert [(b.number, b.title, [(a.kind, a.requirement) for a in b.actions]) for b in plan.batches] == [
        (1, "remove contaminants nothing kept needs", [("remove", "nvidia-cufile-cu12"), ("remove", "nvidia-curand-cu12")])]


def test_a_provider_whose_twin_is_missing_on_disk_goes_after_the_twin_is_reinstalled():
    order = [(a.kind, a.name) for b in plan_of(_curand_replaced("missing")).batches for a in b.actions]
    assert order.index(("reinstall", "nvidia-curand")) < order.index(("remove", "nvidia-curand-cu12"))


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
