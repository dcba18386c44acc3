"""The modules through Ansible on venvs as users have them: moved by hand, made by uv, patched by hand.

Repair what is broken and nothing else: a moved venv's rewritten console scripts are not damage, a uv-made venv
(no pip) is repaired with uv found where users keep it, and a user's edit outside the CUDA stack is left alone.
"""

import os
import re
import shutil
import subprocess
import sys

import pytest

from scenario_tools import ROOT, codes, run_module, subjects
from tests.standin import build_scenario

from ansible_collections.gpuops.cuda_venv.tests.support.tree_digest import tree_digest

CACHE = os.environ.get("CUDA_VENV_STANDIN_CACHE", os.path.join(ROOT, "build", "standin-cache"))
# No uv on PATH: a uv-made venv's repair must find it where the issue says (here: beside the modules' Python).
BARE_PATH = {"PATH": "/usr/local/bin:/usr/bin:/bin"}


def move(info, dest, rewrite):
    """Copy the venv to ``dest`` as people do: ``cp -a``, then ``rewrite`` "nothing", "shebangs" (the console
    scripts' first lines) or "everything" (every text file of bin/ and pyvenv.cfg, as relocation tools do)."""
    old, new = str(info.venv), str(dest)
    subprocess.run(["cp", "-a", old, new], check=True)
    targets = []
    if rewrite != "nothing":
        for name in sorted(os.listdir(os.path.join(new, "bin"))):
            path = os.path.join(new, "bin", name)
            if os.path.isfile(path) and not os.path.islink(path):
                targets.append(path)
    if rewrite == "everything":
        targets.append(os.path.join(new, "pyvenv.cfg"))
    for path in targets:
        with open(path, "rb") as handle:
            data = handle.read()
        if rewrite == "shebangs":
            if not data.startswith(b"#!"):
                continue
            line, sep, body = data.partition(b"\n")
            data = line.replace(old.encode(), new.encode()) + sep + body
        else:
            data = data.replace(old.encode(), new.encode())
        with open(path, "wb") as handle:
            handle.write(data)
    return new


def repair(tmp_path, info, venv=None, check=False, env=None, **extra):
    links = [str(info.wheelhouse)] + ([str(info.extra_wheelhouse)] if info.extra_wheelhouse else [])
    args = dict(path=str(venv or info.venv), find_links=links, no_index=True)
    args.update(extra)
    return run_module(tmp_path, "cuda_venv_repair", args, check=check, env=env)


def facts(tmp_path, venv):
    rc, result, output = run_module(tmp_path, "cuda_venv_facts", dict(path=str(venv)))
    assert rc == 0, output
    return result["ansible_facts"]["cuda_venv"]


def finding(found, code):
    matches = [f for f in found["findings"] if f["code"] == code]
    assert len(matches) == 1, found["findings"]
    return matches[0]


@pytest.mark.parametrize("rewrite", ["shebangs", "everything"])
def test_moved_healthy_venv_is_healthy_and_its_repair_runs_no_installer(tmp_path, rewrite):
    info = build_scenario("healthy-cu12", tmp_path / "built", cache=CACHE)
    venv = move(info, tmp_path / "moved", rewrite)
    found = facts(tmp_path, venv)
    assert codes(found, "error") == [] and found["healthy"] is True
    assert "RECORD_MODIFIED_FILES" not in codes(found)
    moved = finding(found, "VENV_MOVED")
    assert moved["severity"] == "info"
    assert {"../../../bin/pip", "../../../bin/pip3"} <= set(moved["details"]["scripts"])
    # pyvenv.cfg's command line names the former path unless a tool rewrote it too
    assert moved["details"]["former_roots"] == ([str(info.venv)] if rewrite == "shebangs" else [])
    digest = tree_digest(venv)
    for check in (True, False):
        rc, result, output = repair(tmp_path, info, venv=venv, check=check, backend="pip")
        assert rc == 0, output
        assert (result["changed"], result["plan"]["batches"], result["batches"]) == (False, [], [])
    assert result["backend"] is None  # no installer was even started
    assert tree_digest(venv) == digest


@pytest.mark.parametrize("rewrite", ["shebangs", "everything"])
def test_moved_gutted_venv_is_swapped_in_repaired_and_the_next_run_changes_nothing(tmp_path, rewrite):
    """The default strategy (auto: swap) judges the copy as the venv it becomes: torch's bin/torchrun names the live
    venv's interpreter there, and is still only relocated (no RECORD_MODIFIED_FILES torch), with or without a trace
    of the former place."""
    info = build_scenario("gutted", tmp_path / "built", cache=CACHE)
    venv = move(info, tmp_path / "moved", rewrite)
    rc, result, output = repair(tmp_path, info, venv=venv, backend="pip")
    assert rc == 0, output
    assert result["changed"] is True and result["healthy"] is True, result["summary"]
    assert result["strategy"] == "swap" and {b["result"] for b in result["batches"]} == {"committed"}, result["batches"]
    assert [(f["code"], f["subject"]) for f in result["findings"] if f["code"] == "VENV_MOVED"] == [("VENV_MOVED", venv)]
    with open(os.path.join(venv, "bin", "torchrun"), "rb") as handle:
        assert handle.readline().startswith(b"#!" + venv.encode() + b"/bin/python")
    reinstalled = sorted(a["name"] for b in result["plan"]["batches"] for a in b["actions"] if a["action"] == "reinstall")
    assert reinstalled == ["nvidia-cudnn-cu12", "nvidia-cusparselt-cu12", "nvidia-nccl-cu12", "nvidia-nvshmem-cu12"]
    for check in (True, False):
        rc, again, output = repair(tmp_path, info, venv=venv, check=check, backend="pip")
        assert rc == 0 and again["changed"] is False and again["plan"]["batches"] == [], output


def test_script_whose_interpreter_is_gone_is_a_warning_with_the_fix(tmp_path):
    info = build_scenario("healthy-cu12", tmp_path / "built", cache=CACHE)
    venv = move(info, tmp_path / "moved", "nothing")
    shutil.rmtree(str(info.venv))
    found = facts(tmp_path, venv)
    assert codes(found, "error") == []
    with open(os.path.join(venv, "bin", "pip"), encoding="utf-8") as handle:
        gone = handle.readline()[2:].strip()  # pip writes the interpreter it ran with: bin/python3.X
    assert os.path.dirname(gone) == os.path.join(str(info.venv), "bin")
    with open(os.path.join(venv, "bin", "torchrun"), encoding="utf-8") as handle:
        torchrun = handle.readline()[2:].strip()  # the stand-in torch's console script, written by the build's pip
    # One warning per interpreter gone (pip's scripts name bin/python3.X, torch's the one its installer ran with).
    warnings = {f["subject"]: f for f in found["findings"] if f["code"] == "SCRIPT_INTERPRETER_MISSING"}
    assert sorted(warnings) == sorted({gone, torchrun})
    assert [w["details"]["scripts"] for s, w in warnings.items() if s != gone] in ([], [["bin/torchrun"]])
    warning = warnings[gone]
    assert (warning["severity"], warning["subject"]) == ("warning", gone)
    assert {"bin/pip", "bin/pip3"} <= set(warning["details"]["scripts"])
    assert warning["fix"].startswith("Point their shebangs at this venv: sed -i '1s|^#!%s|#!%s/bin/python|' "
                                     % (gone, venv))


@pytest.mark.parametrize("name", ["contaminated", "gutted"])
def test_uv_made_venv_is_repaired_with_uv_found_beside_the_modules_python(tmp_path, name):
    info = build_scenario(name, tmp_path / "built", cache=CACHE, installer="uv")
    site = str(next((info.venv / "lib").glob("python*/site-packages")))
    assert not [d for d in os.listdir(site) if d.startswith("pip-")]  # uv venv: no pip
    rc, planned, output = repair(tmp_path, info, check=True, env=BARE_PATH)
    assert rc == 0 and planned["changed"] is True, output
    rc, result, output = repair(tmp_path, info, env=BARE_PATH)
    assert rc == 0, output
    assert (result["backend"], result["healthy"]) == ("uv", True), result["summary"]
    uninstall = result["batches"][-1]["commands"][0]["argv"] if name == "contaminated" else None
    if uninstall:
        assert uninstall[1:3] == ["pip", "uninstall"] and os.path.basename(uninstall[0]) == "uv"
    assert codes(facts(tmp_path, info.venv), "error") == []
    assert not [d for d in os.listdir(site) if d.startswith("pip-")]  # pip never installed into the venv
    rc, again, output = repair(tmp_path, info, env=BARE_PATH)
    assert rc == 0 and again["changed"] is False and again["batches"] == [], output


def test_user_edit_outside_the_cuda_stack_is_info_left_alone_unless_asked(tmp_path):
    info = build_scenario("healthy-cu12", tmp_path / "built", cache=CACHE)
    edited = next((info.venv / "lib").glob("python*/site-packages/jinja2/__init__.py"))
    original = edited.read_bytes()
    hotfix = original + b"\n# local hot-fix\n"
    edited.write_bytes(hotfix)
    found = facts(tmp_path, info.venv)
    assert found["healthy"] is True
    warning = finding(found, "RECORD_MODIFIED_FILES")
    assert (warning["severity"], warning["subject"]) == ("info", "Jinja2 3.1.6")
    assert warning["details"]["modified"] == ["jinja2/__init__.py"]
    assert warning["fix"] == ("To revert them: pip install --force-reinstall --no-deps 'Jinja2==3.1.6' (or "
                              "cuda_venv_repair with revert_edits: true).")
    for check in (True, False):
        rc, result, output = repair(tmp_path, info, check=check, backend="pip")
        assert rc == 0 and result["changed"] is False and result["plan"]["batches"] == [], output
    assert edited.read_bytes() == hotfix
    rc, planned, output = repair(tmp_path, info, check=True, backend="pip", revert_edits=True)
    assert rc == 0, output
    assert [(a["action"], a["name"]) for b in planned["plan"]["batches"] for a in b["actions"]] == [
        ("reinstall", "jinja2")]
    assert edited.read_bytes() == hotfix
    rc, result, output = repair(tmp_path, info, backend="pip", revert_edits=True)
    assert rc == 0 and result["changed"] is True and result["verified"] == {"jinja2": "ok"}, output
    assert edited.read_bytes() == original


def test_conflict_and_missing_files_messages_lead_with_the_shared_libraries(tmp_path):
    info = build_scenario("contaminated", tmp_path / "built", cache=CACHE)
    found = facts(tmp_path, info.venv)
    conflict = [f for f in found["findings"] if f["code"] == "FILE_OWNERSHIP_CONFLICT"
                and f["subject"] == "nvidia-cudnn-cu12 9.10.2.21 & nvidia-cudnn-cu13 9.24.0.43"][0]
    assert conflict["message"].startswith(
        "nvidia-cudnn-cu12 9.10.2.21 and nvidia-cudnn-cu13 9.24.0.43 list the same ")
    libraries = conflict["message"].split("shared librar", 1)[1].split(";", 1)[0]
    assert "libcudnn.so.9" in libraries
    assert subjects(found, "FILE_OWNERSHIP_CONFLICT", "error")


# What each real installer says when the wheelhouse lacks a wheel (its last lines, as the batch message keeps them;
# the stand-in venvs are made with this Python).
def words_of(message):
    """A failure message's words: uv wraps its report to a width it picks from its surroundings, and prints the
    "Using Python ... environment at" line only sometimes; the words of what it says stay the same."""
    message = re.sub(r"Using Python [0-9.]+ environment at: \S+ \| ", "", message)
    return " ".join(message.replace(" | ", " ").split())


INSTALLER_NOT_FOUND = {
    "pip": "ERROR: Could not find a version that satisfies the requirement nvidia-nccl-cu12==2.27.5 (from versions: "
           "none) | ERROR: No matching distribution found for nvidia-nccl-cu12==2.27.5",
    "uv": "Using Python %(python)s environment at: %(venv)s | error: No solution found when resolving dependencies |   "
          "cause: Because nvidia-nccl-cu12 was not found in the provided package locations and you require "
          "nvidia-nccl-cu12==2.27.5, we can conclude that your requirements are unsatisfiable.",
}


@pytest.mark.parametrize("backend", ["pip", "uv"])
def test_a_wheel_missing_from_the_sources_is_unfixable_and_the_independent_batches_still_run(tmp_path, backend):
    """In place; with strategy swap the whole repair fails on its copy instead (the venv is left as it was). Each
    installer's own not-found words are read (installers' _NOT_FOUND patterns)."""
    info = build_scenario("gutted", tmp_path / "built", cache=CACHE)
    wheelhouse = tmp_path / "wheelhouse-without-nccl"
    shutil.copytree(str(info.wheelhouse), str(wheelhouse))
    for wheel in wheelhouse.glob("nvidia_nccl_cu12-*.whl"):
        wheel.unlink()
    args = dict(path=str(info.venv), find_links=[str(wheelhouse)], no_index=True, backend=backend, batch_size=1)
    if backend == "uv":
        args["uv_executable"] = os.path.join(os.path.dirname(sys.executable), "uv")  # the tools venv's pinned uv
    digest = tree_digest(str(info.venv))
    rc, on_copy, output = run_module(tmp_path, "cuda_venv_repair", dict(args, strategy="swap"))
    assert rc != 0 and on_copy["strategy"] == "swap", output
    assert on_copy["msg"].endswith("; unfixable: nvidia-nccl-cu12==2.27.5 not found in the wheel sources (find-links %s; "
                                   "no index)" % wheelhouse), on_copy["msg"]
    assert on_copy["batches"][-1]["result"] == "rolled back" and tree_digest(str(info.venv)) == digest
    rc, result, output = run_module(tmp_path, "cuda_venv_repair", dict(args, strategy="in_place"))
    assert rc != 0, output
    planned = {b["batch"]: [a["name"] for a in b["actions"]] for b in result["plan"]["batches"]}
    [nccl] = [number for number, names in planned.items() if names == ["nvidia-nccl-cu12"]]
    said = INSTALLER_NOT_FOUND[backend] % {"python": "%d.%d.%d" % sys.version_info[:3], "venv": info.venv}
    assert words_of(result["msg"]) == words_of(
        "batch %d: reinstall failed: %s; unfixable: nvidia-nccl-cu12==2.27.5 not found in the wheel sources (find-links "
        "%s; no index); the other batches ran" % (nccl, said, wheelhouse))
    assert [(b["batch"], b["result"]) for b in result["batches"]] == [
        (number, "rolled back" if number == nccl else "committed") for number in sorted(planned)]
    assert result["plan"]["unfixable"] == [result["msg"][:-len("; the other batches ran")]]
    assert result["verified"] == {"nvidia-cudnn-cu12": "ok", "nvidia-cusparselt-cu12": "ok", "nvidia-nvshmem-cu12": "ok"}
    after = facts(tmp_path, info.venv)
    assert subjects(after, "RECORD_MISSING_FILES", "error") == ["nvidia-nccl-cu12 2.27.5"]
