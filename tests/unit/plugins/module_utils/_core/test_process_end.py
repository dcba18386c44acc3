# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for process_end: a real child Python's exit, with and without skip_last_collection."""

from __future__ import annotations

import subprocess
import sys

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core import process_end

# A reference cycle whose finalizer says when the collector freed it. The collector is off, so only the
# interpreter's last collection at exit can free it; atexit handlers registered before and after say that they ran.
CHILD = """
import atexit, gc, importlib.util, sys
spec = importlib.util.spec_from_file_location("process_end", sys.argv[2])
process_end = importlib.util.module_from_spec(spec)
spec.loader.exec_module(process_end)
skip_last_collection = process_end.skip_last_collection

class Cycle:
    def __del__(self):
        sys.stdout.write("cycle freed\\n")

gc.disable()
cycle = Cycle()
cycle.itself = cycle
del cycle
atexit.register(sys.stdout.write, "registered before\\n")
if sys.argv[1] == "skip":
    skip_last_collection()
    skip_last_collection()  # as a second module run in one process calls it
atexit.register(sys.stdout.write, "registered after\\n")
sys.stdout.write("done\\n")
"""


def exit_of(mode: str) -> list:
    """The child's output; it loads process_end.py from its file (the module imports the standard library only)."""
    proc = subprocess.run([sys.executable, "-c", CHILD, mode, process_end.__file__], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_without_it_the_interpreter_collects_at_exit():
    """What the module avoids: the last collection walks what is alive and runs the cycle's finalizer."""
    assert exit_of("plain") == ["done", "registered after", "registered before", "cycle freed"]


def test_the_last_collection_walks_nothing_and_every_atexit_handler_still_runs():
    assert exit_of("skip") == ["done", "registered after", "registered before"]
