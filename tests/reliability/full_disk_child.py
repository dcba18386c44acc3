"""Inside a private mount namespace (run under ``unshare --mount``): a small tmpfs holds a copy of a venv,
a repair runs while the test fills that filesystem at a chosen crash point, and the outcome is written as JSON.

Usage: ``unshare --mount --propagation private -- python full_disk_child.py SPEC.json`` where SPEC holds
{"mount": dir, "size": "64m", "scenario": ScenarioInfo.as_dict(), "fill_at": "NAME@N", "leave": bytes,
 "work": dir outside the mount, "out": result path outside the mount}.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

from reliability_tools import clone, repair_args, run_child, state_differences, state_rows
from tests.standin import ScenarioInfo


def main():
    spec = json.loads(Path(sys.argv[1]).read_text())
    mount = spec["mount"]
    os.makedirs(mount, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s" % spec["size"], "tmpfs", mount],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        Path(spec["out"]).write_text(json.dumps({"skip": "mount -t tmpfs failed: %s" % done.stderr.strip()}))
        return
    data = spec["scenario"]
    info = ScenarioInfo(data["name"], data["stack"], Path(data["venv"]), Path(data["wheelhouse"]),
                        Path(data["extra_wheelhouse"]) if data["extra_wheelhouse"] else None, None, (), "")
    info = clone(info, Path(mount) / "copy")
    filler = os.path.join(mount, "filler")
    run = run_child(spec["work"], "cuda_venv_repair", repair_args(info), capture=("batch.begun",),
                    fill={"at": spec["fill_at"], "path": filler, "leave": spec["leave"]})
    filled = os.path.exists(filler)
    if filled:
        os.unlink(filler)  # room again: the next run can finish the repair
    begun = run.captured("batch.begun")
    outcome = {"rc": run.rc, "msg": run.result.get("msg"), "stderr": run.stderr[-3000:], "filled": filled,
               "batches": run.result.get("batches"),
               "changed_since_batch_start": state_differences(state_rows(info.venv), run.states[begun[-1]]) if begun else None}
    if spec.get("then_repair"):
        again = run_child(spec["work"] + "-again", "cuda_venv_repair", repair_args(info))
        outcome["again"] = {"rc": again.rc, "healthy": again.result.get("healthy"), "recovered": again.result.get("recovered"),
                            "msg": again.result.get("msg")}
    Path(spec["out"]).write_text(json.dumps(outcome))


if __name__ == "__main__":
    main()
