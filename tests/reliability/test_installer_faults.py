"""The installer fails under the repair: the disk fills up, or the index accepts and never answers.
Either way the batch is rolled back byte for byte and the message says why."""

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from ansible_collections.gpuops.cuda_venv.tests.support.local_servers import SilentServer
from reliability_tools import COLLECTIONS, ROOT, child_env, repair_args, run_child, state_differences, state_rows

HERE = os.path.dirname(os.path.abspath(__file__))
UNSHARE = ["unshare", "--mount", "--propagation", "private", "--"]


def namespaces_reason():
    """Why a private mount namespace with a tmpfs cannot be had here, or None."""
    if not shutil.which("unshare"):
        return "unshare is not installed"
    probe = subprocess.run(UNSHARE + ["sh", "-c", "d=$(mktemp -d) && mount -t tmpfs -o size=1m tmpfs $d && umount $d && rmdir $d"],
                           capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        return "this sandbox forbids a private mount namespace with a tmpfs: %s" % (probe.stderr.strip() or probe.returncode)
    return None


@pytest.mark.parametrize("fill_at, leave, then_repair", [
    ("batch.snapshot_taken@2", 0, True),  # full while pip writes the reinstalled wheels
    ("batch.snapshot_taken@2", 64 * 1024, False),  # a little room: pip still runs out
    ("batch.begun@2", 0, False),  # full before the snapshot's manifest is written
], ids=["full-during-install", "almost-full-during-install", "full-before-snapshot"])
def test_full_disk_rolls_back_with_a_clear_error(tmp_path, bank, fill_at, leave, then_repair):
    reason = namespaces_reason()
    if reason:
        pytest.skip(reason)
    spec = {"mount": str(tmp_path / "mnt"), "size": "64m", "scenario": bank("gutted").as_dict(), "fill_at": fill_at,
            "leave": leave, "work": str(tmp_path / "work"), "out": str(tmp_path / "outcome.json"),
            "then_repair": then_repair}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    env = child_env({"PYTHONPATH": os.pathsep.join([HERE, COLLECTIONS, ROOT])})
    proc = subprocess.run(UNSHARE + [sys.executable, os.path.join(HERE, "full_disk_child.py"), str(tmp_path / "spec.json")],
                          env=env, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    outcome = json.loads((tmp_path / "outcome.json").read_text())
    if "skip" in outcome:
        pytest.skip(outcome["skip"])
    assert outcome["filled"] is True
    assert outcome["rc"] != 0 and "Traceback" not in outcome["stderr"], outcome
    assert "No space left on device" in outcome["msg"], outcome["msg"]
    assert outcome["msg"].startswith("batch 2: reinstall failed") or outcome["msg"].startswith("cannot snapshot")
    assert outcome["changed_since_batch_start"] == []  # batch 1 committed, batch 2 undone: bytes and metadata
    if then_repair:
        assert outcome["again"]["rc"] == 0 and outcome["again"]["healthy"] is True, outcome["again"]


def _processes_using(path):
    """PIDs whose command line mentions ``path`` (the venv's python, pip run from it)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                cmdline = handle.read().decode("utf-8", "replace")
        except OSError:
            continue
        if str(path) in cmdline and "module_child.py" not in cmdline:
            found.append(int(pid))
    return found


def test_an_index_that_never_answers_times_out_and_changes_nothing(tmp_path, fresh):
    info = fresh("curand-removed")
    before = state_rows(info.venv)
    with SilentServer() as server:
        # 12 s: room for pip to start and connect on a loaded machine (5 s was not, in CI), below pip's own 15 s
        # read timeout, so the module's timeout is what ends it
        args = repair_args(info, find_links=[], no_index=False, index_url="http://127.0.0.1:%d/simple" % server.port,
                           installer_timeout=12)
        run = run_child(tmp_path / "run", "cuda_venv_repair", args)
        assert server.accepted >= 1  # pip did connect and wait
        deadline = time.monotonic() + 60
        while not server.all_closed() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert server.all_closed(), "a killed installer still holds a connection"
    assert run.rc != 0 and "Traceback" not in run.stderr, run.output[-3000:]
    # the install guard fetches the wheel first (pip download): its timeout refuses the plan before any change
    assert run.result["msg"] == (
        "refused before any change: the paths the plan's wheels write cannot be known: %s -I -m pip download failed "
        "before anything was installed: timed out" % (info.venv / "bin" / "python")), run.result["msg"]
    assert run.result["batches"] == []
    assert state_differences(state_rows(info.venv), before) == []
    assert _processes_using(info.venv) == []
