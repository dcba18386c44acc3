"""cuda_venv_repair through Ansible on stand-in CUDA venvs: plan, apply, idempotence, rollback, recovery."""

import json
import os
import sys
import threading
import time

import pytest

from scenario_tools import ROOT, codes, run_module
from tests.standin import build_scenario

from ansible_collections.gpuops.cuda_venv.tests.support.tree_digest import tree_digest

CACHE = os.environ.get("CUDA_VENV_STANDIN_CACHE", os.path.join(ROOT, "build", "standin-cache"))


def fresh(tmp_path, name):
    """A scenario built for this test alone (repairs change it)."""
    return build_scenario(name, tmp_path / name, cache=CACHE)


def repair_args(info, **extra):
    links = [str(info.wheelhouse)] + ([str(info.extra_wheelhouse)] if info.extra_wheelhouse else [])
    args = dict(path=str(info.venv), find_links=links, no_index=True, backend="pip")
    args.update(extra)
    return args


def actions(plan):
    return [(b["batch"], a["action"], a["name"]) for b in plan["batches"] for a in b["actions"]]


def repair(tmp_path, info, check=False, diff=False, **extra):
    rc, result, output = run_module(tmp_path, "cuda_venv_repair", repair_args(info, **extra), check=check, diff=diff)
    return rc, result, output


def facts(tmp_path, info):
    rc, result, output = run_module(tmp_path, "cuda_venv_facts", dict(path=str(info.venv)))
    assert rc == 0, output
    return result["ansible_facts"]["cuda_venv"]


def test_contaminated_removes_cu13_first_then_reinstalls_cu12(tmp_path):
    info = fresh(tmp_path, "contaminated")
    digest = tree_digest(str(info.venv))
    rc, planned, output = repair(tmp_path, info, check=True, diff=True)
    assert rc == 0, output
    assert planned["changed"] is True
    assert tree_digest(str(info.venv)) == digest  # check mode touches nothing, not even a state dir
    assert not os.path.exists(os.path.join(str(info.venv), ".cuda_venv"))
    colliding = actions(planned["plan"])[-8:]
    assert colliding == [
        (2, "remove", "nvidia-cudnn-cu13"), (2, "remove", "nvidia-cusparselt-cu13"),
        (2, "remove", "nvidia-nccl-cu13"), (2, "remove", "nvidia-nvshmem-cu13"),
        (2, "reinstall", "nvidia-cudnn-cu12"), (2, "reinstall", "nvidia-cusparselt-cu12"),
        (2, "reinstall", "nvidia-nccl-cu12"), (2, "reinstall", "nvidia-nvshmem-cu12"),
    ]
    assert "\n-nvidia-cudnn-cu13==9.24.0.43\n" in output  # the diff, printed by Ansible
    assert "\n-# conflict: nvidia/cudnn/lib/libcudnn.so.9\n" in output

    rc, result, output = repair(tmp_path, info)
    assert rc == 0, output
    assert result["changed"] is True and result["healthy"] is True
    assert actions(result["plan"]) == actions(planned["plan"])
    batch2 = result["batches"][1]["commands"]
    assert batch2[0]["argv"][-5:] == ["--", "nvidia-cudnn-cu13", "nvidia-cusparselt-cu13", "nvidia-nccl-cu13", "nvidia-nvshmem-cu13"]
    assert batch2[0]["argv"][3:5] == ["pip", "uninstall"]
    assert batch2[1]["argv"][3:5] == ["pip", "install"] and "--force-reinstall" in batch2[1]["argv"]
    assert batch2[1]["argv"][-4:] == ["nvidia-cudnn-cu12==9.10.2.21", "nvidia-cusparselt-cu12==0.7.1",
                                      "nvidia-nccl-cu12==2.27.5", "nvidia-nvshmem-cu12==3.3.20"]
    reinstalled = ("nvidia-cudnn-cu12", "nvidia-cusparselt-cu12", "nvidia-nccl-cu12", "nvidia-nvshmem-cu12")
    assert result["verified"] == {k: "ok" for k in reinstalled}
    after = facts(tmp_path, info)
    assert codes(after, "error") == [] and after["probe"]["versions"]["cudnn"] == 91002
    assert not any(d["name"].endswith("-cu13") for d in after["distributions"])
    site = [d for d in after["distributions"] if d["name"] == "nvidia-cudnn-cu12"][0]["dist_info"]
    assert not os.path.exists(os.path.join(site, "direct_url.json"))  # installed by name, not by path

    rc, again, output = repair(tmp_path, info)
    assert rc == 0, output
    assert again["changed"] is False and again["batches"] == []


@pytest.mark.parametrize("name", ["gutted", "partial-restore", "curand-removed", "truncated-nccl", "consumer"])
def test_every_incident_state_repairs_to_healthy_and_stays(tmp_path, name):
    info = fresh(tmp_path, name)
    rc, planned, output = repair(tmp_path, info, check=True)
    assert rc == 0 and planned["changed"] is True, output
    rc, result, output = repair(tmp_path, info)
    assert rc == 0, output
    assert result["changed"] is True and result["healthy"] is True, result["summary"]
    assert codes(facts(tmp_path, info), "error") == []
    rc, again, output = repair(tmp_path, info)
    assert rc == 0 and again["changed"] is False and again["batches"] == [], output


def test_gutted_reinstalls_cu12_wheels_by_name(tmp_path):
    info = fresh(tmp_path, "gutted")
    rc, result, output = repair(tmp_path, info)
    assert rc == 0, output
    reinstalled = [a["name"] for b in result["plan"]["batches"] for a in b["actions"] if a["action"] == "reinstall"]
    assert sorted(reinstalled) == ["nvidia-cudnn-cu12", "nvidia-cusparselt-cu12", "nvidia-nccl-cu12", "nvidia-nvshmem-cu12"]
    assert facts(tmp_path, info)["probe"]["ok"] is True


def test_uv_backend_gives_the_same_result(tmp_path):
    info = fresh(tmp_path, "contaminated")
    uv = os.path.join(os.path.dirname(sys.executable), "uv")  # the tools venv's pinned uv
    rc, result, output = repair(tmp_path, info, backend="uv", uv_executable=uv)
    assert rc == 0, output
    assert result["backend"] == "uv" and result["healthy"] is True
    assert result["batches"][1]["commands"][0]["argv"][:3] == [uv, "pip", "uninstall"]
    assert codes(facts(tmp_path, info), "error") == []


def test_failed_probe_in_second_batch_restores_it_byte_for_byte(tmp_path):
    info = fresh(tmp_path, "contaminated")
    rc, result, output = repair(tmp_path, info, batch=1)
    assert rc == 0 and [b["batch"] for b in result["batches"]] == [1], output
    before_second = tree_digest(str(info.venv))
    counter = tmp_path / "probe-count"
    check = [sys.executable, "-c",
             "import sys; p=sys.argv[1]; n=int(open(p).read()) if __import__('os').path.exists(p) else 0; "
             "open(p,'w').write(str(n+1)); sys.exit('user check failed on call %d' % (n+1) if n >= 1 else 0)",
             str(counter)]
    # in place: the baseline runs the check (call 1), batch 2's test fails it (call 2) and restores the batch; a swap
    # tests the venv as found with the light test, without the check (test_light_test.py)
    rc, result, output = repair(tmp_path, info, probe_command=check, strategy="in_place")
    assert rc != 0
    assert "the test after it failed: probe_command failed" in result["msg"]
    assert result["batches"][0]["result"] == "rolled back"
    assert tree_digest(str(info.venv)) == before_second


def test_absent_version_fails_the_install_and_rolls_back(tmp_path):
    info = fresh(tmp_path, "curand-removed")
    digest = tree_digest(str(info.venv))
    rc, result, output = repair(tmp_path, info, find_links=[str(tmp_path)])  # a wheelhouse without the wheel
    assert rc != 0
    assert "install failed" in result["msg"] and "nvidia-curand" in result["msg"]
    assert tree_digest(str(info.venv)) == digest


def test_unreachable_index_never_shows_its_credentials(tmp_path):
    info = fresh(tmp_path, "curand-removed")
    digest = tree_digest(str(info.venv))
    secret = "s3cr3t-t0ken"
    args = repair_args(info, no_index=False, find_links=[], index_url="http://user:%s@127.0.0.1:9/simple" % secret,
                       installer_timeout=60)
    rc, result, output = run_module(tmp_path, "cuda_venv_repair", args)
    assert rc != 0
    assert secret not in output and secret not in str(result)
    assert tree_digest(str(info.venv)) == digest


@pytest.mark.parametrize("point", ["batch.snapshot_taken", "snapshot.link@20", "repair.after-remove",
                                   "repair.after-reinstall", "repair.before-commit"])
def test_killed_run_is_recovered_by_the_next(tmp_path, point, monkeypatch):
    info = fresh(tmp_path, "contaminated")
    monkeypatch.setenv("CUDA_VENV_CRASH_AT", point)
    rc, result, output = repair(tmp_path, info, batch=2)
    assert rc != 0
    monkeypatch.delenv("CUDA_VENV_CRASH_AT")
    rc, result, output = repair(tmp_path, info)
    assert rc == 0, output
    assert result["recovered"] is not None and result["recovered"]["batch"] == 2
    assert result["healthy"] is True
    assert codes(facts(tmp_path, info), "error") == []


GATED_UV = """#!/bin/sh
# The real uv, held at its first `uv pip ...` (inside the lock) until the test creates the file GATE.
if [ "$1" = pip ]; then
  n=0
  while [ ! -e '{gate}' ] && [ $n -lt 1200 ]; do sleep 0.1; n=$((n + 1)); done
fi
exec '{uv}' "$@"
"""


def _lock_holder(lock, deadline):
    """The holder record the running repair wrote into its lock file (written once it holds the flock)."""
    while time.monotonic() < deadline:
        try:
            with open(lock) as handle:
                return json.loads(handle.read())
        except (OSError, ValueError):
            time.sleep(0.1)
    raise AssertionError("the first run never took the lock %s" % lock)


def test_two_runs_never_interleave(tmp_path):
    """The first run holds the lock (its installer waits at a gate): the second, with lock_timeout 0, is refused
    at once with the holder's pid and changes nothing; one with a lock_timeout waits, then finds a healthy venv."""
    info = fresh(tmp_path, "contaminated")
    gate, uv = tmp_path / "gate", tmp_path / "gated-uv"
    real_uv = os.path.join(os.path.dirname(sys.executable), "uv")  # the tools venv's pinned uv
    uv.write_text(GATED_UV.format(gate=gate, uv=real_uv))
    uv.chmod(0o755)
    results = {}
    for key in ("a", "b", "c"):
        (tmp_path / key).mkdir()
    first = threading.Thread(target=lambda: results.update(a=repair(tmp_path / "a", info, backend="uv", uv_executable=str(uv))))
    first.start()
    try:
        holder = _lock_holder(info.venv / ".cuda_venv" / "lock", time.monotonic() + 120)
        digest = tree_digest(str(info.venv))
        rc, refused, output = repair(tmp_path / "b", info, lock_timeout=0)
        assert rc != 0, output
        assert refused["msg"] == "venv %s is being repaired by pid %d on %s since %s; retry later or raise lock_timeout" % (
            info.venv, holder["pid"], holder["host"], holder["since"])
        assert tree_digest(str(info.venv)) == digest
        waiter = threading.Thread(target=lambda: results.update(c=repair(tmp_path / "c", info, lock_timeout=300)))
        waiter.start()
    finally:
        gate.touch()
        first.join()
    waiter.join()
    rc, result, output = results["a"]
    assert rc == 0 and result["changed"] is True and result["healthy"] is True, output
    rc, result, output = results["c"]
    assert rc == 0 and result["changed"] is False and result["batches"] == [], output
    assert codes(facts(tmp_path, info), "error") == []


def test_bad_options_change_nothing(tmp_path):
    info = fresh(tmp_path, "curand-removed")
    digest = tree_digest(str(info.venv))
    for args, message in [
        (dict(batch_size=0), "batch_size must be >= 1"),
        (dict(remove=["sglang; rm -rf /"]), "invalid distribution name"),
        (dict(packages=["torch==="]), "invalid requirement"),
        (dict(remove=["nvidia-cublas"]), "cannot remove nvidia-cublas: torch requires it"),
        (dict(backend="uv", uv_executable=str(tmp_path / "no-uv")), "does not exist or is not executable"),
        (dict(find_links=[], no_index=True, index_url="http://127.0.0.1:9/simple"), "no_index"),
    ]:
        rc, result, output = repair(tmp_path, info, **args)
        assert rc != 0 and message in result["msg"], output
    rc, result, output = run_module(tmp_path, "cuda_venv_repair", dict(path="relative/venv"))
    assert rc != 0 and "must be absolute" in result["msg"]
    assert tree_digest(str(info.venv)) == digest


def test_healthy_venv_is_a_no_op_that_starts_no_installer(tmp_path):
    info = fresh(tmp_path, "healthy-cu12")
    digest = tree_digest(str(info.venv))
    rc, result, output = repair(tmp_path, info, backend="uv", uv_executable=str(tmp_path / "no-uv-here"))
    assert rc == 0, output  # the unusable backend is never built: no installer runs on a healthy venv
    assert result["changed"] is False and result["batches"] == [] and result["backend"] is None
    assert tree_digest(str(info.venv)) == digest


def test_library_outside_the_venv_is_brought_back(tmp_path):
    info = fresh(tmp_path, "system-fallback")
    rc, result, output = repair(tmp_path, info, ld_library_path=[str(info.ld_library_path)])
    assert rc == 0, output
    assert [a["name"] for b in result["plan"]["batches"] for a in b["actions"]] == ["nvidia-curand-cu12"]
    assert result["verified"] == {"nvidia-curand-cu12": "ok"}


def test_probe_timeout_rolls_back_with_a_clear_message(tmp_path):
    info = fresh(tmp_path, "gutted")
    digest = tree_digest(str(info.venv))
    counter = tmp_path / "calls"
    slow_after_first = [sys.executable, "-c",
                        "import os, sys, time; p = sys.argv[1]; first = not os.path.exists(p); open(p, 'a').write('x'); "
                        "time.sleep(0 if first else 30)", str(counter)]
    rc, result, output = repair(tmp_path, info, probe_command=slow_after_first, probe_timeout=2)
    assert rc != 0
    assert "probe_command failed" in result["msg"] and "did not finish within 2 s" in result["msg"], result["msg"]
    assert tree_digest(str(info.venv)) == digest
