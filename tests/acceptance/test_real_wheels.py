"""Acceptance on real torch wheels: every incident state diagnosed and repaired, the way the stand-ins are.

Opt-in (about 8.0 GB of wheels, cached): ``make acceptance``, or CUDA_VENV_ACCEPTANCE=1 with pytest.
The findings expected here are exactly those of tests/scenarios/test_facts_scenarios.py on the stand-ins.
"""

import json
import os
import subprocess

import pytest

from acceptance_fetch import GROUPS, cache_root, enabled, fetched, wheelhouse
from acceptance_table import summarize_findings
from acceptance_venvs import (
    CONTAMINANTS, CUDNN, SCENARIOS, distributions, probe_torch, record_mismatches, run, scenario, site_packages,
    uv_executable)

from tests.scenarios.scenario_tools import codes, subjects, system_provides

pytestmark = pytest.mark.skipif(not enabled(), reason="opt-in: real torch wheels (about 8.0 GB); run `make acceptance`")

# (scenario, test) -> what the engine gets wrong on real wheels: xfail(strict=True) until the engine is fixed.
KNOWN_DISCREPANCIES = {}
# None today. The last one ("contaminated", "test_runtime_library_mismatches") went when the probe began asking the
# loaded libnccl.so.2 for its version (ncclGetVersion) instead of torch.cuda.nccl.version(), the NCCL torch was built with.


CU12_LABELS = ["nvidia-cudnn-cu12 9.10.2.21", "nvidia-cusparselt-cu12 0.7.1", "nvidia-nccl-cu12 2.27.5",
               "nvidia-nvshmem-cu12 3.3.20"]
CU12_COLLIDING = [label.split()[0] for label in CU12_LABELS]
CU13_COLLIDING = ["nvidia-cudnn-cu13", "nvidia-cusparselt-cu13", "nvidia-nccl-cu13", "nvidia-nvshmem-cu13"]


def excerpt(facts, *wanted):
    """The findings of the wanted codes (all when none named) and the probe: what a failure message shows."""
    rows = [{k: f.get(k) for k in ("code", "severity", "subject", "details")} for f in facts["findings"]
            if not wanted or f["code"] in wanted]
    return json.dumps({"findings": rows, "probe": facts.get("probe")}, indent=1, sort_keys=True, default=str)[:6000]


def check_healthy(facts, stack):
    assert codes(facts, "error") == [], excerpt(facts)
    assert facts["healthy"] is True
    assert facts["probe"]["ok"] is True
    assert str(facts["probe"]["versions"]["cudnn"]) == str(CUDNN[stack])
    assert [c["path"] for c in facts["conflicts"] if not c["identical"]] == []


def check_contaminated(facts):
    assert facts["probe"]["ok"] is True, excerpt(facts)
    assert subjects(facts, "FILE_OWNERSHIP_CONFLICT") == [
        "nvidia-cudnn-cu12 9.10.2.21 & nvidia-cudnn-cu13 9.24.0.43",
        "nvidia-cusparselt-cu12 0.7.1 & nvidia-cusparselt-cu13 0.8.1",
        "nvidia-nccl-cu12 2.27.5 & nvidia-nccl-cu13 2.30.7",
        "nvidia-nvshmem-cu12 3.3.20 & nvidia-nvshmem-cu13 3.4.5",
    ], excerpt(facts, "FILE_OWNERSHIP_CONFLICT")
    assert subjects(facts, "CUDA_MAJOR_MIXED") == ["12,13"], excerpt(facts, "CUDA_MAJOR_MIXED")
    # nvidia-cudnn-cu13 requires nvidia-cublas (CUDA 13), which requires nvidia-cuda-nvrtc: pip pulled them in
    assert subjects(facts, "CUDA_DIST_UNREQUIRED") == sorted(CU13_COLLIDING + ["nvidia-cublas", "nvidia-cuda-nvrtc"]), \
        excerpt(facts, "CUDA_DIST_UNREQUIRED")
    cudnn = [f for f in facts["findings"] if f["code"] == "RUNTIME_LIBRARY_MISMATCH" and f["subject"] == "cudnn"][0]
    assert (str(cudnn["details"]["reported"]), str(cudnn["details"]["expected"])) == ("92400", "91002")
    assert facts["healthy"] is False


def check_gutted(facts):
    assert subjects(facts, "RECORD_MISSING_FILES") == CU12_LABELS, excerpt(facts, "RECORD_MISSING_FILES")
    unresolved = subjects(facts, "SONAME_UNRESOLVED", "error")
    for soname in ("libcudnn.so.9", "libcusparseLt.so.0", "libnccl.so.2", "libnvshmem_host.so.3"):
        assert soname in unresolved, excerpt(facts, "SONAME_UNRESOLVED")
    cudnn = [f for f in facts["findings"] if f["subject"] == "libcudnn.so.9" and f["severity"] == "error"][0]
    assert "nvidia-cudnn-cu12 9.10.2.21 (nvidia/cudnn/lib/libcudnn.so.9, missing on disk)" in cudnn["details"]["providers"]
    failed = [f for f in facts["findings"] if f["code"] == "IMPORT_FAILED"]
    assert [f["details"]["error"] for f in failed] == [
        "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory"], excerpt(facts, "IMPORT_FAILED")
    assert facts["probe"]["error"] == failed[0]["details"]["error"]


def check_partial_restore(facts):
    unresolved = subjects(facts, "SONAME_UNRESOLVED", "error")
    assert "libcudnn.so.9" not in unresolved, excerpt(facts, "SONAME_UNRESOLVED")
    assert {"libcusparseLt.so.0", "libnccl.so.2", "libnvshmem_host.so.3"} <= set(unresolved), excerpt(facts, "SONAME_UNRESOLVED")
    assert "IMPORT_FAILED" in codes(facts), excerpt(facts)
    assert facts["probe"]["error"] == \
        "ImportError: libcusparseLt.so.0: cannot open shared object file: No such file or directory", excerpt(facts, "IMPORT_FAILED")


def check_curand_removed(facts):
    missing = [f for f in facts["findings"] if f["code"] == "REQUIREMENT_MISSING"]
    assert [f["subject"] for f in missing] == ["nvidia-curand"], excerpt(facts, "REQUIREMENT_MISSING")
    assert "cuda-toolkit[" in missing[0]["message"]
    if system_provides("libcurand.so.10"):
        assert "libcurand.so.10" in subjects(facts, "SONAME_SYSTEM_FALLBACK"), excerpt(facts)
    else:
        assert "libcurand.so.10" in subjects(facts, "SONAME_UNRESOLVED", "error"), excerpt(facts, "SONAME_UNRESOLVED")


def check_truncated_nccl(facts):
    assert subjects(facts, "RECORD_MODIFIED_FILES") == ["nvidia-nccl-cu12 2.27.5"], excerpt(facts, "RECORD_MODIFIED_FILES")
    assert facts["probe"]["error"].endswith("libnccl.so.2: file too short"), excerpt(facts, "IMPORT_FAILED")
    assert "IMPORT_FAILED" in codes(facts, "error")


def check_moved_healthy(facts):
    check_healthy(facts, "cu12")
    moved = [f for f in facts["findings"] if f["code"] == "VENV_MOVED"]
    assert [f["severity"] for f in moved] == ["info"], excerpt(facts)
    assert "../../../bin/torchrun" in moved[0]["details"]["scripts"], excerpt(facts, "VENV_MOVED")
    assert "RECORD_MODIFIED_FILES" not in codes(facts), excerpt(facts, "RECORD_MODIFIED_FILES")


def check_moved_gutted(facts, venv, former):
    """Gutted as gutted-in-place is, and moved: torch's and triton's console scripts only relocated, the former
    place known (``former``) or not (everything rewritten)."""
    check_gutted(facts)
    moved = [f for f in facts["findings"] if f["code"] == "VENV_MOVED"]
    assert [(f["severity"], f["subject"]) for f in moved] == [("info", str(venv))], excerpt(facts, "VENV_MOVED")
    assert {"../../../bin/torchrun", "../../../bin/proton"} <= set(moved[0]["details"]["scripts"]), excerpt(facts, "VENV_MOVED")
    assert moved[0]["details"]["former_roots"] == former, excerpt(facts, "VENV_MOVED")
    assert "RECORD_MODIFIED_FILES" not in codes(facts), excerpt(facts, "RECORD_MODIFIED_FILES")


def group_names(group):
    """Canonical names of the wheels a wheelhouse group fetched: what an install of its requirements brings."""
    stamp = fetched([g for g in GROUPS if g.name == group][0])
    return sorted(f.split("-", 1)[0].lower().replace("_", "-") for f in stamp["files"])


def names(labels):
    return sorted(label.split(" ")[0].lower().replace("_", "-").replace(".", "-") for label in labels)


def check_history(facts):
    """The build's three installer runs (acceptance_venvs.build_copy, then contaminate), back to back: ensurepip
    (python -m venv), uv (torch 2.9.1's stack, REQUESTED on every dist-info as uv 0.13 writes it), pip (the four cu13
    wheels, requested, and the two CUDA 13 wheels nvidia-cudnn-cu13 pulled in). Returns the history."""
    history = facts["history"]
    assert [(t["number"], t["installer"]) for t in history] == [(1, "pip"), (2, "uv"), (3, "pip")], \
        json.dumps(history, indent=1)[:6000]
    assert history[0]["time"] < history[1]["time"] < history[2]["time"] and "reason" not in history[2], history
    assert "pip" in names(history[0]["distributions"]) and set(names(history[0]["distributions"])) <= {"pip", "setuptools"}
    assert history[0]["requested"] == history[0]["distributions"]
    assert names(history[1]["distributions"]) == group_names("torch-2.9.1-cu12")
    assert history[1]["requested"] == history[1]["distributions"]
    return history


def check_contaminated_source(facts):
    """The source: pip's run of `pip install` with the four cu13 wheels (transaction 3); each of the four is a root
    asked for by name, nvidia-cudnn-cu13 also of the nvidia-cublas and nvidia-cuda-nvrtc it pulled in."""
    history = check_history(facts)
    assert names(history[2]["distributions"]) == group_names("incident-cu13")
    assert sorted(history[2]["requested"]) == [c.replace("==", " ") for c in CONTAMINANTS]
    [source] = [f for f in facts["findings"] if f["code"] == "CONTAMINATION_SOURCE"]
    details = source["details"]
    assert (source["severity"], source["subject"], details["transaction"], details["installer"], details["time"]) == (
        "warning", "transaction 3", 3, "pip", history[2]["time"]), excerpt(facts, "CONTAMINATION_SOURCE")
    assert details["contaminants"] == sorted(history[2]["distributions"])
    assert [(r["distribution"], r["requested"], r["installer"], r["transaction"], r["chain"]) for r in details["roots"]] == [
        ("nvidia-cudnn-cu13 9.24.0.43", True, "pip", 3, ["nvidia-cublas", "nvidia-cuda-nvrtc"])] + [
        (c.replace("==", " "), True, "pip", 3, []) for c in CONTAMINANTS[1:]], excerpt(facts, "CONTAMINATION_SOURCE")
    assert details["residue"] == []
    assert ("their root is nvidia-cudnn-cu13 9.24.0.43, requested with pip at %s, which requires nvidia-cublas -> "
            "nvidia-cuda-nvrtc" % history[2]["time"]) in source["message"], source["message"]


def check_gutted_source(facts):
    """After `pip uninstall` of the four: pip's run holds the two CUDA 13 wheels they pulled in, which nothing
    installed requires: the residue of an install that was undone."""
    history = check_history(facts)
    assert (names(history[2]["distributions"]), history[2]["requested"]) == (["nvidia-cublas", "nvidia-cuda-nvrtc"], [])
    [source] = [f for f in facts["findings"] if f["code"] == "CONTAMINATION_SOURCE"]
    details = source["details"]
    assert (source["severity"], source["subject"], details["transaction"], details["installer"], details["time"]) == (
        "warning", "transaction 3", 3, "pip", history[2]["time"]), excerpt(facts, "CONTAMINATION_SOURCE")
    assert (details["contaminants"], details["roots"], details["residue"]) == (
        sorted(history[2]["distributions"]), [], sorted(history[2]["distributions"])), excerpt(facts, "CONTAMINATION_SOURCE")
    assert ("were installed by pip at %s (transaction 3). Nothing installed today requires them: the residue of an "
            "install that was undone." % history[2]["time"]) in source["message"], source["message"]


# What torchvision, torchaudio, jax[cuda12] and cupy-cuda12x bring beside torch 2.9.1: never a finding, never removed.
NEIGHBOURS = ["cupy-cuda12x", "jax-cuda12-pjrt", "jax-cuda12-plugin", "nvidia-cuda-nvcc-cu12", "torchaudio", "torchvision"]
NEIGHBOUR_VERSIONS = {"torchvision": "0.24.1", "torchaudio": "2.9.1", "jax": "0.10.2", "jaxlib": "0.10.2",
                      "jax-cuda12-plugin": "0.10.2", "jax-cuda12-pjrt": "0.10.2", "cupy-cuda12x": "14.2.0"}
NEIGHBOUR_IMPORT = "import torch, torchvision, torchaudio, jax; print(torchvision.__version__, jax.__version__)"


def check_neighbours(facts):
    assert sorted(n["distribution"].split(" ")[0] for n in facts["neighbours"]) == NEIGHBOURS, excerpt(facts)
    assert not set(NEIGHBOURS) & {c["distribution"].split(" ")[0] for c in facts["contaminants"]}


def check_multi_healthy(facts):
    check_healthy(facts, "cu12-multi")
    assert [(f["severity"], f["code"], f["subject"]) for f in facts["findings"] if f["severity"] != "info"] == [], \
        excerpt(facts)
    check_neighbours(facts)


def check_multi_cascade(facts):
    assert subjects(facts, "REQUIREMENT_MISSING") == ["nvidia-cudnn-cu12", "nvidia-cusparselt-cu12"], excerpt(facts)
    assert facts["probe"]["ok"] is False and "libcudnn.so.9" in facts["probe"]["error"], excerpt(facts)
    assert codes(facts, "warning") == [], excerpt(facts)
    check_neighbours(facts)


FINDINGS = {
    "healthy-cu12": lambda facts: check_healthy(facts, "cu12"),
    "healthy-cu13": lambda facts: check_healthy(facts, "cu13"),
    "contaminated": lambda facts: (check_contaminated(facts), check_contaminated_source(facts)),
    "gutted": lambda facts: (check_gutted(facts), check_gutted_source(facts)),
    "partial-restore": check_partial_restore,
    "curand-removed": check_curand_removed,
    "truncated-nccl": check_truncated_nccl,
    "moved-healthy-cu12": check_moved_healthy,
    "moved-gutted": lambda facts, venv: check_moved_gutted(facts, venv, [str(venv) + "-before-move"]),
    "moved-rewritten-gutted": lambda facts, venv: check_moved_gutted(facts, venv, []),
    "uv-contaminated": check_contaminated,
    "uv-gutted": check_gutted,
    "multi-healthy-cu12": check_multi_healthy,
    "multi-contaminated": lambda facts: (check_contaminated(facts), check_neighbours(facts)),
    "multi-cascade": check_multi_cascade,
}

# The plan: (action, name) in order, as on the stand-ins (tests/scenarios/test_repair_scenarios.py); only the
# actions named here are compared, in the order they appear.
PLAN = {
    "healthy-cu12": [],
    "healthy-cu13": [],
    "contaminated": [("remove", n) for n in CU13_COLLIDING] + [("reinstall", n) for n in CU12_COLLIDING],
    "gutted": [("reinstall", n) for n in CU12_COLLIDING],
    "partial-restore": [("remove", "nvidia-cudnn-cu13")] + [("reinstall", n) for n in CU12_COLLIDING],
    "curand-removed": [("install", "nvidia-curand")],
    "truncated-nccl": [("reinstall", "nvidia-nccl-cu12")],
    "moved-healthy-cu12": [],
    "moved-gutted": [("reinstall", n) for n in CU12_COLLIDING],
    "moved-rewritten-gutted": [("reinstall", n) for n in CU12_COLLIDING],
    "uv-contaminated": [("remove", n) for n in CU13_COLLIDING] + [("reinstall", n) for n in CU12_COLLIDING],
    "uv-gutted": [("reinstall", n) for n in CU12_COLLIDING],
    "multi-healthy-cu12": [],
    "multi-contaminated": [("remove", n) for n in CU13_COLLIDING] + [("reinstall", n) for n in CU12_COLLIDING],
    "multi-cascade": [("install", "nvidia-cudnn-cu12"), ("install", "nvidia-cusparselt-cu12")],
}


# Subjects of RUNTIME_LIBRARY_MISMATCH (error): the libraries torch runs that are not the declared wheels'.
RUNTIME_MISMATCHES = {"contaminated": ["cudnn", "nccl"], "uv-contaminated": ["cudnn", "nccl"],
                      "multi-contaminated": ["cudnn", "nccl"]}


def planned(result):
    return [(a["action"], a["name"]) for b in result["plan"]["batches"] for a in b["actions"]]


def test_facts_report_the_incident_state(real):
    facts = real.facts()
    real.row.findings = summarize_findings(facts)
    if scenario(real.name).moved and scenario(real.name).steps:
        FINDINGS[real.name](facts, real.venv)
    else:
        FINDINGS[real.name](facts)


def test_runtime_library_mismatches(real):
    facts = real.facts()
    assert subjects(facts, "RUNTIME_LIBRARY_MISMATCH", "error") == RUNTIME_MISMATCHES.get(real.name, []), \
        excerpt(facts, "RUNTIME_LIBRARY_MISMATCH")


def test_repair_converges(real):
    rc, result, output = real.repair()
    assert rc == 0, output[-6000:]
    assert result["healthy"] is True, json.dumps(result.get("findings"), indent=1)[:6000]
    assert result["changed"] is ("healthy" not in real.name)


def test_plan_is_ordered_as_on_the_standins(real):
    _rc, result, _output = real.repair()
    expected = PLAN[real.name]
    named = [step for step in planned(result) if step in expected]
    assert named == expected, json.dumps(result["plan"], indent=1)[:6000]
    batches = {b["batch"] for b in result["plan"]["batches"] for a in b["actions"] if (a["action"], a["name"]) in expected}
    assert len(batches) <= 1, "the removals and reinstalls of one collision are split over batches %s" % sorted(batches)
    if not expected:
        assert planned(result) == []


def test_torch_imports_with_the_pinned_cudnn(real, tmp_path):
    real.repair()
    probe = probe_torch(real.venv, tmp_path / "empty")
    assert probe["ok"] is True, probe
    assert probe["cudnn"] == CUDNN[scenario(real.name).stack]
    assert probe["torch"].startswith({"cu12": "2.9.1", "cu13": "2.14.1", "cu12-multi": "2.9.1"}[scenario(real.name).stack])


def test_touched_distributions_match_their_record(real):
    _rc, result, _output = real.repair()
    installed = distributions(real.venv)
    touched = sorted({name for _action, name in planned(result)} & set(installed))
    assert {name: record_mismatches(real.venv, installed[name]) for name in touched} == {name: [] for name in touched}
    assert result.get("verified", {}) == {name: "ok" for name in result.get("verified", {})}


def test_only_wheels_of_the_stack_major_remain(real):
    real.repair()
    names = sorted(distributions(real.venv))
    if scenario(real.name).stack.startswith("cu12"):
        # cuda-pathfinder (cupy's requirement) is built for no CUDA major: it finds the wheels' libraries
        assert [n for n in names if n.startswith(("nvidia-", "cuda-")) and not n.endswith("-cu12")
                and n != "cuda-pathfinder"] == []
        # pip's uninstall leaves the emptied nvidia/cu13/ folder (it removes only the folders holding the files)
        assert [str(p) for p in (site_packages(real.venv) / "nvidia" / "cu13").rglob("*") if not p.is_dir()] == []
    else:
        assert [n for n in names if n.endswith("-cu12")] == []


def test_every_removal_is_a_contaminant_with_evidence_and_every_neighbour_stays(real):
    """Issue 28: the repair removes only what a finding proves wrong; neighbours keep their versions and import."""
    facts = real.facts()
    _rc, result, _output = real.repair()
    proven = {c["distribution"].split(" ")[0] for c in facts["contaminants"] if c["evidence"]}
    removals = [a for b in result["plan"]["batches"] for a in b["actions"] if a["action"] == "remove"]
    real.row.unproven_removals = len([a for a in removals if a["name"] not in proven])
    assert [a["name"] for a in removals if a["name"] not in proven or not a.get("evidence")] == []
    if scenario(real.name).stack != "cu12-multi":
        return
    installed = distributions(real.venv)
    assert {name: installed[name].name[:-len(".dist-info")].rsplit("-", 1)[1] for name in NEIGHBOUR_VERSIONS} \
        == NEIGHBOUR_VERSIONS
    done = run([real.venv / "bin" / "python", "-I", "-c", NEIGHBOUR_IMPORT], cwd=real.workdir, check=False, timeout=600)
    assert done.rc == 0, done.output[-3000:]


def test_second_run_changes_nothing(real):
    real.repair()
    rc, again, output = real.repair("second")
    assert rc == 0, output[-6000:]
    assert (again["changed"], again["batches"]) == (False, []), json.dumps(again.get("plan"), indent=1)[:6000]


@pytest.mark.parametrize("real", [s.name for s in SCENARIOS if s.moved and s.steps], indirect=True)
def test_default_strategy_swaps_the_moved_venv_in(real):
    """The module's default strategy (auto) swaps a moved venv in: the copy is judged as the venv it becomes, so its
    relocated console scripts are no damage there (before: every batch rolled back with RECORD_MODIFIED_FILES)."""
    rc, result, output = real.repair()
    assert rc == 0, output[-6000:]
    assert result["strategy"] == "swap", result.get("strategy_reason")
    assert [b["result"] for b in result["batches"]] == ["committed"] * len(result["plan"]["batches"]), \
        json.dumps(result["batches"], indent=1, default=str)[:6000]
    assert result["batches"] and result["healthy"] is True
    assert codes(result, "error") == [], json.dumps(result["findings"], indent=1)[:6000]
    assert subjects(result, "VENV_MOVED") == [str(real.venv)]
    with open(real.venv / "bin" / "torchrun", "rb") as handle:  # the live venv's own script, its new path kept
        assert handle.readline().startswith(b"#!" + str(real.venv).encode() + b"/bin/python")
    rc, again, output = real.repair("second")
    assert rc == 0, output[-6000:]
    assert (again["changed"], again["strategy"], again["batches"]) == (False, None, []), json.dumps(again.get("plan"))[:6000]


def tree_metadata(venv):
    """{path: (mode, size, mtime_ns, inode)} of every entry but the state directory: any write by an installer shows
    (pip writes new inodes), without hashing 6.7 GB."""
    state = {}
    for path in sorted(venv.rglob("*")):
        rel = path.relative_to(venv)
        if rel.parts[0] != ".cuda_venv":
            st = path.lstat()
            state[str(rel)] = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino)
    return state


@pytest.mark.parametrize("real", ["healthy-cu12"], indirect=True)
def test_install_of_the_cu13_cudnn_into_the_cu12_venv_is_refused(real):
    """The incident's first step, asked of the module: refused before anything is installed, nothing changed."""
    before = tree_metadata(real.venv)
    cu12_paths = [line.split(",", 1)[0] for line in
                  (distributions(real.venv)["nvidia-cudnn-cu12"] / "RECORD").read_text(encoding="utf-8").splitlines()]
    args = {"path": str(real.venv), "find_links": [str(wheelhouse())], "no_index": True, "backend": "pip",
            "packages": [CONTAMINANTS[0]]}
    for key, check in (("refuse-check", True), ("refuse", False)):
        rc, result, output, _seconds = real.module(key, "cuda_venv_repair", args, check=check)
        assert rc != 0, output[-6000:]
        assert [(f["code"], f["subject"]) for f in result["refused"]] == [
            ("INSTALL_WOULD_OVERWRITE", "nvidia-cudnn-cu13 9.24.0.43"),
            ("INSTALL_CUDA_MAJOR_MISMATCH", "nvidia-cudnn-cu13 9.24.0.43")], json.dumps(result.get("refused"))[:6000]
        paths = result["refused"][0]["details"]["paths"]
        assert "nvidia/cudnn/lib/libcudnn.so.9" in paths and set(paths) <= set(cu12_paths), paths
        shared = [p.endswith(".so.9") for p in paths]
        assert shared == sorted(shared, reverse=True), paths  # shared objects first
        assert list(result["refused"][0]["details"]["owners"]) == ["nvidia-cudnn-cu12 9.10.2.21"]
        assert result["batches"] == [] and result["changed"] is False
        assert tree_metadata(real.venv) == before
    assert "nvidia-cudnn-cu13" not in distributions(real.venv)


@pytest.mark.parametrize("real", ["healthy-cu12"], indirect=True)
def test_guarded_venv_refuses_the_real_sglang_kernel_through_pip_and_activated_uv(real):
    """The incident's cause, tried again on the guarded venv: the installers refuse it themselves, nothing changed."""
    args = {"path": str(real.venv), "find_links": [str(wheelhouse())], "no_index": True, "backend": "pip", "guard": True}
    rc, result, output, _seconds = real.module("guard", "cuda_venv_repair", args)
    assert rc == 0 and result["changed"] is True, output[-6000:]
    guard = result["guard"]
    assert guard["active"] is True and guard["constraints"][0] == "torch==2.9.1", json.dumps(guard)[:3000]
    assert "nvidia-cudnn-cu12==9.10.2.21" in guard["constraints"] and "nvidia-cudnn-cu13<0" in guard["constraints"]
    before = tree_metadata(real.venv)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_", "PYTHON", "VIRTUAL_ENV"))}
    env["UV_CACHE_DIR"] = str(cache_root() / "uv")
    sources = ["--no-index", "--find-links", str(wheelhouse())]
    pip = subprocess.run([str(real.venv / "bin" / "python"), "-m", "pip", "install"] + sources + ["sglang-kernel==0.4.10"],
                         env=env, capture_output=True, text=True, timeout=1800, check=False)
    assert pip.returncode == 1 and "ResolutionImpossible" in pip.stderr, (pip.stdout + pip.stderr)[-6000:]
    assert "The user requested (constraint) torch==2.9.1" in pip.stdout + pip.stderr, (pip.stdout + pip.stderr)[-6000:]
    assert tree_metadata(real.venv) == before
    uv = subprocess.run(["bash", "-c", 'source "$1/bin/activate" && "$2" pip install "${@:3}" sglang-kernel==0.4.10',
                         "bash", str(real.venv), uv_executable()] + sources,
                        env=env, capture_output=True, text=True, timeout=1800, check=False)
    assert uv.returncode == 1 and "torch==2.14.1 and torch==2.9.1" in uv.stderr, (uv.stdout + uv.stderr)[-6000:]
    lock = real.venv / ".lock"  # uv's lock file in the root of any environment it installs into
    if ".lock" not in before and lock.exists():
        lock.unlink()
    assert tree_metadata(real.venv) == before
    assert "sglang-kernel" not in distributions(real.venv)
