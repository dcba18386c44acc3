"""Run one module of the collection in this process, as Ansible's AnsiballZ wrapper would, with test hooks.

Usage: ``python module_child.py SPEC.json`` with ROOT and build/collections on PYTHONPATH.
SPEC: {"module": "cuda_venv_repair", "args": {...}, "check": false,
       "crash_at": "NAME[@N]" or null,     # CUDA_VENV_CRASH_AT for this run (SIGKILL there)
       "events": path or null,              # every crash point reached: one JSON line each, written before any kill
       "capture": {"root": venv, "dir": d, "at": [names], "end": bool} or null,
                                            # tree_state of the venv at those points (before a kill there) and at exit
       "fill": {"at": "NAME[@N]", "path": file, "leave": bytes} or null,  # fill path's filesystem there
       "trace_lock": bool}                  # log lock.acquired / lock.released events too

Nothing of the module is replaced: the hooks observe its crash points (``crash_points._hits`` is swapped
for a dict that logs each count it stores, which ``crash_point`` does before deciding to kill) and the
lock's acquire/release. The module prints its JSON result on stdout and exits as under Ansible.
"""

import json
import os
import runpy
import sys
import time

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core import crash_points
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act import venv_lock
from ansible_collections.gpuops.cuda_venv.tests.support.tree_digest import tree_state

PACKAGE = "ansible_collections.gpuops.cuda_venv.plugins.modules."
# A value no crash point has: crash_point() counts every hit but never fires.
NO_CRASH = "never-fires"


class Hooks:
    def __init__(self, spec):
        self.events = spec.get("events")
        self.capture = spec.get("capture") or {}
        self.fill = spec.get("fill")
        self.seq = 0

    def event(self, name, count):
        self.seq += 1
        if self.events:
            line = json.dumps({"seq": self.seq, "name": name, "n": count, "pid": os.getpid(), "t": time.time()})
            fd = os.open(self.events, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, (line + "\n").encode())
            finally:
                os.close(fd)
        if name in self.capture.get("at", ()):
            self.save("%04d-%s@%d" % (self.seq, name, count))
        if self.fill and self.fill["at"] in (name, "%s@%d" % (name, count)):
            fill_filesystem(self.fill["path"], self.fill["leave"])

    def save(self, label):
        state = tree_state(self.capture["root"])
        path = os.path.join(self.capture["dir"], label + ".json")
        with open(path + ".tmp", "w") as handle:
            json.dump(sorted((os.fsencode(k).hex(), v) for k, v in state.items()), handle)
        os.replace(path + ".tmp", path)


def fill_filesystem(path, leave):
    """Write ``path`` until its filesystem has at most ``leave`` bytes free."""
    with open(path, "ab") as handle:
        while True:
            st = os.statvfs(os.path.dirname(path))
            free = st.f_bavail * st.f_frsize
            if free <= leave:
                break
            try:
                handle.write(b"\0" * min(free - leave, 1 << 20))
                handle.flush()
            except OSError:
                break


class RecordingHits(dict):
    """``crash_points._hits``: each stored count is an event."""

    hooks = None

    def __setitem__(self, key, value):
        self.hooks.event(key, value)
        super().__setitem__(key, value)


def trace_lock(hooks):
    acquire, release = venv_lock.VenvLock.acquire, venv_lock.VenvLock.release

    def traced_acquire(self):
        result = acquire(self)
        hooks.event("lock.acquired", 1)
        return result

    def traced_release(self):
        if self.held:
            hooks.event("lock.released", 1)
        return release(self)
    venv_lock.VenvLock.acquire, venv_lock.VenvLock.release = traced_acquire, traced_release


def main():
    with open(sys.argv[1]) as handle:
        spec = json.load(handle)
    hooks = Hooks(spec)
    RecordingHits.hooks = hooks
    crash_points._hits = RecordingHits()
    os.environ[crash_points.ENV_VAR] = spec.get("crash_at") or NO_CRASH
    if spec.get("trace_lock"):
        trace_lock(hooks)
    args = dict(spec["args"])
    if spec.get("check"):
        args["_ansible_check_mode"] = True
    args_file = sys.argv[1] + ".args"
    with open(args_file, "w") as handle:
        json.dump({"ANSIBLE_MODULE_ARGS": args}, handle)
    sys.argv = [spec["module"], args_file]
    try:
        runpy.run_module(PACKAGE + spec["module"], run_name="__main__", alter_sys=True)
    finally:
        if hooks.capture.get("end"):
            hooks.save("%04d-end" % (hooks.seq + 1))


if __name__ == "__main__":
    main()
