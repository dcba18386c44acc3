"""The user's lock as the declared state, through Ansible on a stand-in torch venv (issue 39): a pylock.toml written
by uv and a hash-pinned requirements file; every kind of drift found, the repair converging to the lock with hash
checking, a bad lock refused before anything changes, and a venv exported as a lock that pip and uv reinstall."""

import json
import os
import subprocess
import sys

import pytest
from scenario_tools import ROOT, run_module, subjects
from tests.standin import build_scenario

from ansible_collections.gpuops.cuda_venv.tests.support.tree_digest import tree_digest
from ansible_collections.gpuops.cuda_venv.tests.support.wheel_helpers import make_wheel

CACHE = os.environ.get("CUDA_VENV_STANDIN_CACHE", os.path.join(ROOT, "build", "standin-cache"))
UV = os.path.join(os.path.dirname(sys.executable), "uv")  # the tools venv's pinned uv
HERMETIC = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
HERMETIC.update(PIP_CONFIG_FILE=os.devnull, UV_NO_CONFIG="1")


def sh(*argv, data=None, env=None):
    proc = subprocess.run([str(a) for a in argv], input=data, capture_output=True, text=True, env=env or HERMETIC,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def installed(python):
    out = sh(python, "-m", "pip", "list", "--format=json")
    return {p["name"].lower().replace("_", "-"): p["version"] for p in json.loads(out)}


def uv_lock(info, dest, fmt):
    """What a user types: uv pip compile of torch for the venv's interpreter, from the wheelhouse, hashes in."""
    args = [UV, "pip", "compile", "--python", info.python, "--no-index", "--find-links", info.wheelhouse, "-o", dest, "-"]
    args += ["--format", "pylock.toml"] if fmt == "pylock" else ["--generate-hashes"]
    sh(*args, data="torch==2.9.1\n")
    return str(dest)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    info = build_scenario("healthy-cu12", tmp_path_factory.mktemp("lock") / "healthy", cache=CACHE)
    return info


def facts(tmp_path, info, lock, **more):
    args = dict(path=str(info.venv), gpu=False, lock=lock, find_links=[str(info.wheelhouse)], **more)
    rc, result, output = run_module(tmp_path, "cuda_venv_facts", args)
    assert rc == 0, output
    return result["ansible_facts"]["cuda_venv"]


def repair(tmp_path, info, lock, check=False, **more):
    args = dict(dict(path=str(info.venv), lock=lock, find_links=[str(info.wheelhouse)], no_index=True, backend="pip"), **more)
    rc, result, output = run_module(tmp_path, "cuda_venv_repair", args, check=check)
    assert rc == 0, output
    return result


def drift(found):
    return sorted((d["distribution"], d["kind"]) for d in found["lock"]["drift"])


def test_a_venv_built_from_its_lock_matches_it_and_every_locked_wheel_is_the_installed_bytes(tmp_path, built):
    lock = uv_lock(built, tmp_path / "pylock.toml", "pylock")
    found = facts(tmp_path, built, lock)
    assert found["healthy"] is True
    assert found["lock"]["matches"] is True and found["lock"]["drift"] == []
    locked = set(installed(built.python)) - {"pip"}  # uv locks torch's closure: every distribution but pip
    assert found["lock"]["packages"] == len(locked) and found["lock"]["hashed"] is True
    assert {b["distribution"] for b in found["lock"]["bytes"]} == locked
    assert all(b["differing"] == 0 and b["compared"] > 0 for b in found["lock"]["bytes"])


def test_each_kind_of_drift_is_found_and_the_repair_converges_to_the_lock_with_hash_checking(tmp_path):
    info = build_scenario("healthy-cu12", tmp_path / "drifted", cache=CACHE)
    lock = uv_lock(info, tmp_path / "pylock.toml", "pylock")
    other = tmp_path / "other"
    make_wheel(str(other), "mpmath", "1.4.0", {"mpmath/__init__.py": b"VERSION = '1.4.0'\n"})
    make_wheel(str(other), "sympy", "1.14.0", {"sympy/__init__.py": b"LOCAL_BUILD = True\n"})  # same version, other bytes
    make_wheel(str(other), "extra-tool", "1.0", {"extra_tool/__init__.py": b""})
    pip = [info.python, "-m", "pip", "install", "--no-deps", "--no-index", "--find-links", other]
    sh(*pip, "mpmath==1.4.0", "extra-tool==1.0")
    sh(*pip, "--force-reinstall", "sympy==1.14.0")
    sh(info.python, "-m", "pip", "uninstall", "--yes", "networkx")

    found = facts(tmp_path, info, lock)
    assert drift(found) == [("extra-tool", "extra"), ("mpmath", "version"), ("networkx", "missing"), ("sympy", "bytes")]
    assert found["healthy"] is False
    assert subjects(found, "LOCK_DRIFT", "error") == ["mpmath", "networkx", "sympy"]
    assert subjects(found, "LOCK_DRIFT", "warning") == ["extra-tool"]
    assert "REQUIREMENT_MISSING" not in {f["code"] for f in found["findings"]}

    planned = repair(tmp_path, info, lock, check=True)
    actions = sorted((a["action"], a["requirement"]) for b in planned["plan"]["batches"] for a in b["actions"])
    assert actions == [("install", "mpmath==1.3.0"), ("install", "networkx==3.6.1"), ("reinstall", "sympy==1.14.0")]
    reasons = {a["name"]: a["reason"] for b in planned["plan"]["batches"] for a in b["actions"]}
    assert reasons["mpmath"] == "locked at 1.3.0 by %s, installed 1.4.0" % lock
    assert reasons["networkx"] == "locked at 3.6.1 by %s, not installed" % lock

    result = repair(tmp_path, info, lock)
    assert result["changed"] is True
    argv = [c["argv"] for b in result["batches"] for c in b["commands"] if "--require-hashes" in c["argv"]]
    assert len(argv) == 2 and all(a[-3:-1] == ["--require-hashes", "-r"] for a in argv), result["batches"]
    assert [a for a in argv if "--force-reinstall" in a] == argv[:1]  # sympy's reinstall, then the two installs
    after = facts(tmp_path, info, lock)
    assert drift(after) == [("extra-tool", "extra")] and after["healthy"] is True
    pruned = repair(tmp_path, info, lock, prune="all")
    assert [(a["action"], a["name"], a["reason"]) for b in pruned["plan"]["batches"] for a in b["actions"]] == [
        ("remove", "extra-tool", "not in the lock %s (prune: all)" % lock)]
    assert facts(tmp_path, info, lock)["lock"]["matches"] is True
    again = repair(tmp_path, info, lock, prune="all")
    assert again["changed"] is False and again["plan"]["batches"] == []


def test_a_hash_pinned_requirements_file_is_a_lock_and_a_wheel_of_other_bytes_is_refused(tmp_path):
    info = build_scenario("healthy-cu12", tmp_path / "reqs", cache=CACHE)
    lock = uv_lock(info, tmp_path / "requirements.txt", "requirements")
    sh(info.python, "-m", "pip", "uninstall", "--yes", "mpmath")
    assert drift(facts(tmp_path, info, lock)) == [("mpmath", "missing")]
    tampered = tmp_path / "tampered"
    make_wheel(str(tampered), "mpmath", "1.3.0", {"mpmath/__init__.py": b"TAMPERED = True\n"})
    digest = tree_digest(str(info.venv))
    args = dict(path=str(info.venv), lock=lock, find_links=[str(tampered)], no_index=True, backend="pip")
    rc, result, output = run_module(tmp_path, "cuda_venv_repair", args)
    assert rc != 0 and "THESE PACKAGES DO NOT MATCH THE HASHES" in output, output
    assert tree_digest(str(info.venv)) == digest
    repaired = repair(tmp_path, info, lock)
    assert repaired["changed"] is True and facts(tmp_path, info, lock)["lock"]["matches"] is True


@pytest.mark.parametrize("name, text, expected", [
    ("pylock.toml", "lock-version = '1.0'\ncreated-by = 'x'\npackages = [\n", "is not valid TOML"),
    ("pylock.toml", "lock-version = '1.0'\ncreated-by = 'x'\nrequires-python = '>=3.99'\npackages = []\n",
     "does not fit this venv"),
    ("pylock.toml", "lock-version = '1.0'\ncreated-by = 'x'\n[[packages]]\nname = 'torch'\nversion = '2.9.1'\n",
     "Exactly one of vcs, directory, archive must be set"),
    ("requirements.txt", "torch==2.9.1\nnumpy>=2\n", "line 2: 'numpy>=2' is not pinned to one version with =="),
    ("requirements.txt", "--index-url https://example.invalid/simple\ntorch==2.9.1\n", "line 1: installer option"),
])
def test_a_bad_lock_is_refused_naming_the_file_and_where_and_nothing_changes(tmp_path, built, name, text, expected):
    lock = tmp_path / name
    lock.write_text(text)
    digest = tree_digest(str(built.venv))
    for module in ("cuda_venv_facts", "cuda_venv_repair"):
        rc, result, output = run_module(tmp_path, module, dict(path=str(built.venv), lock=str(lock), gpu=False)
                                        if module == "cuda_venv_facts" else dict(path=str(built.venv), lock=str(lock)))
        assert rc != 0, output
        assert str(lock) in result["msg"] and expected in result["msg"], result["msg"]
    assert tree_digest(str(built.venv)) == digest


def test_a_venv_exported_as_a_lock_is_reinstalled_the_same_by_uv_pip_sync_and_by_pip(tmp_path, built):
    dest = tmp_path / "pylock.toml"
    rc, result, output = run_module(tmp_path, "cuda_venv_facts", dict(
        path=str(built.venv), gpu=False, export_lock=str(dest), find_links=[str(built.wheelhouse)], no_index=True))
    assert rc == 0, output
    exported = result["ansible_facts"]["cuda_venv"]["exported_lock"]
    assert result["changed"] is True and exported["path"] == str(dest)
    want = installed(built.python)
    missing = sorted(n for n in exported["not_locked"])
    assert missing == ["pip==%s" % want["pip"]]  # the wheelhouse has no pip wheel: named, not locked
    assert exported["packages"] == len(want) - 1
    rc, again, output = run_module(tmp_path, "cuda_venv_facts", dict(
        path=str(built.venv), gpu=False, export_lock=str(dest), find_links=[str(built.wheelhouse)], no_index=True))
    assert rc == 0 and again["changed"] is False, output
    found = facts(tmp_path, built, str(dest))
    assert found["lock"]["matches"] is True

    uv_venv = tmp_path / "by-uv"
    sh(UV, "venv", "--python", built.python, uv_venv)
    sh(UV, "pip", "sync", "--python", uv_venv / "bin" / "python", "--no-index", "--find-links", built.wheelhouse, dest)
    by_uv = json.loads(sh(UV, "pip", "list", "--python", uv_venv / "bin" / "python", "--format", "json"))
    assert {p["name"].lower().replace("_", "-"): p["version"] for p in by_uv} == {k: v for k, v in want.items() if k != "pip"}

    pip_venv = tmp_path / "by-pip"
    sh(built.python, "-m", "venv", pip_venv)
    python = pip_venv / "bin" / "python"
    # pip installs from a pylock.toml since 26 (experimental): from the index, as this machine's pip configures it
    sh(python, "-m", "pip", "install", "--quiet", "pip==26.3", env=dict(os.environ))
    sh(python, "-m", "pip", "install", "--no-index", "--find-links", built.wheelhouse, "-r", dest)
    assert {k: v for k, v in installed(python).items() if k != "pip"} == {k: v for k, v in want.items() if k != "pip"}


def test_a_venv_made_by_uv_converges_to_its_lock_through_uvs_own_hash_checking(tmp_path):
    info = build_scenario("healthy-cu12", tmp_path / "by-uv", cache=CACHE, installer="uv")
    lock = uv_lock(info, tmp_path / "requirements.txt", "requirements")
    local = tmp_path / "local"
    make_wheel(str(local), "sympy", "1.14.0", {"sympy/__init__.py": b"LOCAL_BUILD = True\n"})
    uv = [UV, "pip", "--quiet"]
    sh(*uv, "uninstall", "--python", info.python, "mpmath")
    sh(*uv, "install", "--python", info.python, "--no-deps", "--reinstall-package", "sympy", "--no-index", "--find-links",
       local, "sympy==1.14.0")
    assert drift(facts(tmp_path, info, lock)) == [("mpmath", "missing"), ("sympy", "bytes")]
    result = repair(tmp_path, info, lock, backend="uv")
    installs = [c["argv"] for b in result["batches"] for c in b["commands"] if c["argv"][:3] == [UV, "pip", "install"]]
    assert installs and all(a[-3:-1] == ["--require-hashes", "-r"] for a in installs), result["batches"]
    assert facts(tmp_path, info, lock)["lock"]["matches"] is True
