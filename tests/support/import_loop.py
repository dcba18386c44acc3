# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a venv's users see while it changes: ``import torch`` started back to back from an empty folder.

Test and benchmark support for gpuops.cuda_venv (issue 11's measure of the outage an in-place repair causes): not
part of the collection's API.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from typing import Iterator, List, Tuple

# Seconds the loop runs alone before the watched work starts and after it ends: imports at the edges count too.
MARGIN = 1.0


def import_once(python: str, workdir: str) -> Tuple[int, str]:
    """(exit code, the last line of stderr when it failed) of one ``python -I -c 'import torch'`` in ``workdir``."""
    proc = subprocess.run([python, "-I", "-c", "import torch"], cwd=workdir, capture_output=True, text=True,
                          env={"PATH": os.environ.get("PATH", ""), "LC_ALL": "C.UTF-8"}, check=False)
    last = proc.stderr.strip().splitlines()[-1:] if proc.returncode else []
    return proc.returncode, last[0] if last else ""


@contextlib.contextmanager
def import_loop(python: str, workdir: str, margin: float = MARGIN) -> Iterator[List[Tuple[int, str]]]:
    """Imports one after the other from ``margin`` seconds before the block to ``margin`` seconds after it; yields
    the list that receives each one's (exit code, error line)."""
    stop, seen = threading.Event(), []

    def loop() -> None:
        while not stop.is_set():
            seen.append(import_once(python, workdir))
    thread = threading.Thread(target=loop)
    thread.start()
    try:
        time.sleep(margin)
        yield seen
        time.sleep(margin)
    finally:
        stop.set()
        thread.join()
