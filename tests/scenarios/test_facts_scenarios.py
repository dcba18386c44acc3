"""cuda_venv_facts through Ansible on stand-in CUDA venvs: every incident state, normal and check mode."""

import subprocess

import pytest

from scenario_tools import codes, run_module, subjects, system_provides

CU12_COLLIDING = ["nvidia-cudnn-cu12", "nvidia-cusparselt-cu12", "nvidia-nccl-cu12", "nvidia-nvshmem-cu12"]
CU13_COLLIDING = ["nvidia-cudnn-cu13", "nvidia-cusparselt-cu13", "nvidia-nccl-cu13", "nvidia-nvshmem-cu13"]
CU12_LABELS = ["nvidia-cudnn-cu12 9.10.2.21", "nvidia-cusparselt-cu12 0.7.1", "nvidia-nccl-cu12 2.27.5",
               "nvidia-nvshmem-cu12 3.3.20"]


def facts_of(tmp_path, venv, check=False, **args):
    rc, result, output = run_module(tmp_path, "cuda_venv_facts", dict(path=str(venv), **args), check=check)
    assert rc == 0, output
    assert result["changed"] is False
    return result["ansible_facts"]["cuda_venv"]


@pytest.mark.parametrize("check", [False, True], ids=["normal", "check"])
@pytest.mark.parametrize("name, cudnn", [("healthy-cu12", "91002"), ("healthy-cu13", "92400")])
def test_healthy_stacks_have_no_error(tmp_path, standin, name, cudnn, check):
    facts = facts_of(tmp_path, standin(name).venv, check=check)
    assert codes(facts, "error") == []
    assert facts["healthy"] is True
    assert facts["probe"]["ok"] is True
    assert str(facts["probe"]["versions"]["cudnn"]) == cudnn
    assert [c["path"] for c in facts["conflicts"] if not c["identical"]] == []


def test_healthy_cu13_majors_come_from_paths_and_versions(tmp_path, standin):
    facts = facts_of(tmp_path, standin("healthy-cu13").venv)
    majors = {d["name"]: (d["cuda_major"], d["cuda_major_evidence"]) for d in facts["distributions"]}
    assert majors["nvidia-cudnn-cu13"] == (13, "name")
    assert majors["nvidia-cusparse"] == (13, "install path")  # version 12.6.3.3, yet CUDA 13
    assert majors["nvidia-cublas"][0] == 13
    assert majors["cuda-toolkit"] == (13, "version")


def test_contaminated_runs_cu13_libraries_under_cu12_torch(tmp_path, standin):
    facts = facts_of(tmp_path, standin("contaminated").venv)
    assert facts["probe"]["ok"] is True
    assert "FILE_OWNERSHIP_CONFLICT" in codes(facts, "error")
    assert subjects(facts, "FILE_OWNERSHIP_CONFLICT") == [
        "nvidia-cudnn-cu12 9.10.2.21 & nvidia-cudnn-cu13 9.24.0.43",
        "nvidia-cusparselt-cu12 0.7.1 & nvidia-cusparselt-cu13 0.8.1",
        "nvidia-nccl-cu12 2.27.5 & nvidia-nccl-cu13 2.30.7",
        "nvidia-nvshmem-cu12 3.3.20 & nvidia-nvshmem-cu13 3.4.5",
    ]
    assert subjects(facts, "CUDA_MAJOR_MIXED") == ["12,13"]
    # cudnn-cu13 requires nvidia-cublas (CUDA 13), which requires nvidia-cuda-nvrtc: pulled in with it
    assert subjects(facts, "CUDA_DIST_UNREQUIRED") == sorted(CU13_COLLIDING + ["nvidia-cublas", "nvidia-cuda-nvrtc"])
    assert subjects(facts, "RUNTIME_LIBRARY_MISMATCH", "error") == ["cudnn", "nccl"]
    mismatch = [f for f in facts["findings"] if f["code"] == "RUNTIME_LIBRARY_MISMATCH" and f["subject"] == "cudnn"][0]
    assert mismatch["details"]["reported"] == "92400" and mismatch["details"]["expected"] == "91002"
    assert facts["healthy"] is False


def test_contaminated_hash_mode_names_the_overwriter(tmp_path, standin):
    facts = facts_of(tmp_path, standin("contaminated").venv, verify="hash")
    assert subjects(facts, "RECORD_MODIFIED_FILES") == CU12_LABELS
    on_disk = {c["path"]: c["on_disk"] for c in facts["conflicts"]}
    assert on_disk["nvidia/cudnn/lib/libcudnn.so.9"] == "nvidia-cudnn-cu13 9.24.0.43"


@pytest.mark.parametrize("check", [False, True], ids=["normal", "check"])
def test_gutted_venv_names_every_missing_library_and_its_wheel(tmp_path, standin, check):
    facts = facts_of(tmp_path, standin("gutted").venv, check=check)
    assert subjects(facts, "RECORD_MISSING_FILES") == CU12_LABELS
    unresolved = subjects(facts, "SONAME_UNRESOLVED", "error")
    for soname in ("libcudnn.so.9", "libcusparseLt.so.0", "libnccl.so.2", "libnvshmem_host.so.3"):
        assert soname in unresolved
    cudnn = [f for f in facts["findings"] if f["subject"] == "libcudnn.so.9" and f["severity"] == "error"][0]
    assert "nvidia-cudnn-cu12 9.10.2.21 (nvidia/cudnn/lib/libcudnn.so.9, missing on disk)" in cudnn["details"]["providers"]
    failed = [f for f in facts["findings"] if f["code"] == "IMPORT_FAILED"][0]
    assert failed["details"]["error"] == "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory"
    assert facts["probe"]["error"] == failed["details"]["error"]


def test_partial_restore_lists_the_remaining_libraries_at_once(tmp_path, standin):
    facts = facts_of(tmp_path, standin("partial-restore").venv)
    unresolved = subjects(facts, "SONAME_UNRESOLVED", "error")
    assert "libcudnn.so.9" not in unresolved
    assert {"libcusparseLt.so.0", "libnccl.so.2", "libnvshmem_host.so.3"} <= set(unresolved)
    assert "IMPORT_FAILED" in codes(facts)


def test_curand_removed_is_missing_through_cuda_toolkit_extras(tmp_path, standin):
    facts = facts_of(tmp_path, standin("curand-removed").venv)
    missing = [f for f in facts["findings"] if f["code"] == "REQUIREMENT_MISSING"]
    assert [f["subject"] for f in missing] == ["nvidia-curand"]
    assert "cuda-toolkit[" in missing[0]["message"]
    if system_provides("libcurand.so.10"):
        assert "libcurand.so.10" in subjects(facts, "SONAME_SYSTEM_FALLBACK")
    else:
        assert "libcurand.so.10" in subjects(facts, "SONAME_UNRESOLVED", "error")


def test_truncated_library_is_modified_and_too_short(tmp_path, standin):
    facts = facts_of(tmp_path, standin("truncated-nccl").venv)
    assert subjects(facts, "RECORD_MODIFIED_FILES") == ["nvidia-nccl-cu12 2.27.5"]
    assert facts["probe"]["error"].endswith("libnccl.so.2: file too short")
    assert "IMPORT_FAILED" in codes(facts, "error")


def test_a_consumer_shipping_another_build_of_torchs_cudart_is_a_contaminant_with_that_evidence(tmp_path, standin):
    facts = facts_of(tmp_path, standin("consumer").venv)
    assert subjects(facts, "CUDA_DIST_UNREQUIRED") == ["sgl-kernel"]
    assert [(c["distribution"], [e["kind"] for e in c["evidence"]]) for c in facts["contaminants"]] == [
        ("sgl-kernel 0.3.9", ["ships_other_build"])]
    assert facts["healthy"] is True  # a warning: the venv works


def test_library_found_only_on_ld_library_path_is_a_fallback(tmp_path, standin):
    info = standin("system-fallback")
    facts = facts_of(tmp_path, info.venv, ld_library_path=[str(info.ld_library_path)])
    assert "libcurand.so.10" in subjects(facts, "SONAME_SYSTEM_FALLBACK", "warning")
    assert subjects(facts, "RECORD_MISSING_FILES") == ["nvidia-curand-cu12 10.3.9.90"]
    row = [r for r in facts["fallbacks"] if r["soname"] == "libcurand.so.10"][0]
    assert row["via"] == "ld_library_path"


def test_optional_plugins_are_info_not_errors(tmp_path, standin):
    facts = facts_of(tmp_path, standin("healthy-cu12").venv)
    info = [f for f in facts["findings"] if f["code"] == "SONAME_UNRESOLVED" and f["severity"] == "info"]
    transports = [f for f in info if f["subject"] == "optional transports"]
    assert len(transports) == 1 and "libmpi.so.40" in transports[0]["details"]["sonames"]
    assert subjects(facts, "SONAME_UNRESOLVED", "error") == []


def other_cudnn_build(folder, version="9.24.0"):
    """A directory as a system cuDNN install leaves it: libcudnn_graph.so.VERSION (another build, compiled here with
    the soname) and the soname's link to it; ``version`` None: the soname's file alone, as a copied wheel folder."""
    folder.mkdir()
    source = folder / "graph.c"
    source.write_text("int cudnnGraphVersion(void) { return 92400; }\n")
    real = folder / ("libcudnn_graph.so." + (version or "9"))
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libcudnn_graph.so.9", "-o", str(real), str(source)], check=True)
    source.unlink()
    if version:
        (folder / "libcudnn_graph.so.9").symlink_to(real.name)
    return folder


@pytest.mark.parametrize("version, theirs, builds", [
    ("9.24.0", "9.24.0", "9.24.0 on LD_LIBRARY_PATH"),
    (None, "version unknown", "version unknown on LD_LIBRARY_PATH; their bytes differ"),  # a copied folder: no name tells
], ids=["versioned", "unknown-version"])
def test_a_cudnn_library_of_another_build_first_on_ld_library_path_is_shadowing_the_venvs(tmp_path, standin, version, theirs,
                                                                                          builds):
    """cuDNN's sub-libraries search LD_LIBRARY_PATH before their DT_RUNPATH: the venv's libcudnn_graph.so.9 is
    passed over for another build: an error naming both copies and the entry to drop, whether or not
    anything on disk tells the other copy's version (its bytes differ: cuDNN's libraries must come from one build)."""
    info = standin("healthy-cu12")
    other = other_cudnn_build(tmp_path / "cudnn-other", version=version)
    facts = facts_of(tmp_path, info.venv, ld_library_path=[str(other)])
    assert "libcudnn_graph.so.9" not in subjects(facts, "SONAME_SYSTEM_FALLBACK")
    shadowed = [f for f in facts["findings"] if f["code"] == "SONAME_SHADOWED"]
    assert [(f["severity"], f["subject"]) for f in shadowed] == [("error", "libcudnn_graph.so.9")]
    assert shadowed[0]["message"] == (
        "libcudnn_graph.so.9 (cuDNN) is in the venv (nvidia/cudnn/lib/libcudnn_graph.so.9 of nvidia-cudnn-cu12 "
        "9.10.2.21) but LD_LIBRARY_PATH comes first: the loader takes %s/libcudnn_graph.so.9 (%s) for "
        "nvidia/cudnn/lib/libcudnn_adv.so.9 (nvidia-cudnn-cu12 9.10.2.21). Two builds of cuDNN in one process "
        "(9.10.2.21 in the venv, %s): a mixed cuDNN fails with SUBLIBRARY_VERSION_MISMATCH at "
        "the first convolution or falls back silently to slower kernels." % (other, theirs, builds))
    assert (shadowed[0]["details"]["resolved_version"], shadowed[0]["details"]["same_bytes"]) == (version, False)
    assert shadowed[0]["fix"] == (
        "Drop %s from LD_LIBRARY_PATH for this venv's processes (and from the ld_library_path option): the venv's own "
        "libcudnn_graph.so.9 is then found through its requester's DT_RUNPATH." % other)
    assert facts["healthy"] is False
    assert codes(facts, "error") == ["SONAME_SHADOWED"]
