"""Acceptance on real torch wheels (issue 39): a real torch 2.9.1 venv against the lock uv writes for it, offline from
the wheelhouse. Matched with every locked wheel's bytes compared; then the incident's contamination found as drift and
repaired to the lock with hash checking; the venv exported as a lock equal to uv's own.

Opt-in with the rest of the suite (``make acceptance``); the venv lives beside uv's cache and is removed after.
"""

import time

import pytest

from acceptance_fetch import enabled, wheelhouse
from acceptance_venvs import CONTAMINANTS, build_copy, contaminate, probe_torch, project, remove_tree, run, uv_executable

from tests.scenarios.scenario_tools import run_module

pytestmark = pytest.mark.skipif(not enabled(), reason="opt-in: real torch wheels (about 8.0 GB); run `make acceptance`")


@pytest.fixture(scope="module")
def locked(runs_dir):
    """(venv, its pylock.toml, workdir): a real torch 2.9.1 venv and the lock uv writes for torch==2.9.1."""
    workdir = runs_dir / "lock"
    venv = workdir / "venv"
    build_copy("cu12", venv)
    lock, wanted = workdir / "pylock.toml", workdir / "requirements.in"
    wanted.write_text("torch==2.9.1\n", encoding="utf-8")
    run([uv_executable(), "pip", "compile", "--no-config", "--python", venv / "bin" / "python", "--no-index", "--find-links",
         wheelhouse(), "--format", "pylock.toml", "-o", lock, wanted])
    yield venv, lock, workdir
    remove_tree(workdir)


def module(workdir, name, args, check=False):
    home = workdir / ("ansible-%s-%d" % (name, time.monotonic_ns()))
    home.mkdir()
    started = time.monotonic()
    rc, result, output = run_module(home, name, args, check=check)
    assert rc == 0, output[-4000:]
    return result, time.monotonic() - started


def facts(venv, lock, workdir, **more):
    args = dict(path=str(venv), lock=str(lock), find_links=[str(wheelhouse())], gpu=False, **more)
    result, seconds = module(workdir, "cuda_venv_facts", args)
    return result["ansible_facts"]["cuda_venv"], seconds


def test_the_real_venv_matches_its_lock_with_every_locked_wheels_bytes_compared(locked):
    venv, lock, workdir = locked
    found, seconds = facts(venv, lock, workdir)
    assert found["healthy"] is True and found["lock"]["matches"] is True, found["summary"]
    checks = found["lock"]["bytes"]
    assert len(checks) == found["lock"]["packages"] and all(c.get("differing") == 0 for c in checks), checks
    assert sum(c["compared"] for c in checks) > 1000
    again, reused = facts(venv, lock, workdir)
    assert again["lock"] == found["lock"]
    print("facts with the lock: %.1f s (every locked wheel hashed and its RECORD compared), %.1f s the next run (the "
          "wheels' sha256 from the read index)" % (seconds, reused))


def test_the_venv_exported_is_the_lock_uv_writes(locked):
    venv, lock, workdir = locked
    dest = workdir / "pylock.exported.toml"
    result, seconds = module(workdir, "cuda_venv_facts", dict(path=str(venv), gpu=False, probe=False, export_lock=str(dest),
                                                              find_links=[str(wheelhouse())], no_index=True))
    exported = result["ansible_facts"]["cuda_venv"]["exported_lock"]
    # what python -m venv put in (pip, and setuptools before Python 3.12): not in the wheelhouse at those versions
    assert {p.split("==")[0] for p in exported["not_locked"]} <= {"pip", "setuptools"} and exported["not_locked"]
    assert exported["packages"] == facts(venv, lock, workdir)[0]["lock"]["packages"]
    assert facts(venv, dest, workdir)[0]["lock"]["matches"] is True
    print("export_lock: %.1f s for %d packages" % (seconds, exported["packages"]))


def test_the_incident_is_drift_from_the_lock_and_the_repair_converges_to_it(locked):
    venv, lock, workdir = locked
    contaminate(venv)
    found, _seconds = facts(venv, lock, workdir)
    extra = sorted(d["distribution"] for d in found["lock"]["drift"] if d["kind"] == "extra")
    assert set(project(c) for c in CONTAMINANTS) <= set(extra), found["lock"]["drift"]
    assert [d for d in found["lock"]["drift"] if d["kind"] != "extra"] == []  # the cu12 wheels' RECORDs are untouched
    assert found["healthy"] is False  # FILE_OWNERSHIP_CONFLICT, the overwritten cu12 files
    args = dict(path=str(venv), lock=str(lock), find_links=[str(wheelhouse())], no_index=True, backend="pip", prune="all")
    result, seconds = module(workdir, "cuda_venv_repair", args)
    removed = sorted(a["name"] for b in result["plan"]["batches"] for a in b["actions"] if a["action"] == "remove")
    assert removed == extra
    hashed = [c["argv"] for b in result["batches"] for c in b["commands"] if "--require-hashes" in c["argv"]]
    assert hashed, result["batches"]
    after, _seconds = facts(venv, lock, workdir)
    assert after["healthy"] is True and after["lock"]["matches"] is True, after["summary"]
    assert probe_torch(venv, workdir)["cudnn"] == 91002
    print("repair to the lock (prune: all): %.1f s, %d batches" % (seconds, len(result["plan"]["batches"])))
