# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A module's process ends without the interpreter's last garbage collection.

Private to the gpuops.cuda_venv collection: not a public API.

When a Python process ends, the interpreter runs one more full garbage collection over every object still alive
(Python 3.7 and later do it even with the collector disabled). A module holds what it read of the venv until it
exits: an entry, a stat and a path for each of a torch venv's 20,000 files, and ansible-core's own objects. On the
real torch venv that last walk took 0.02-0.04 s of the facts module's 0.6 s on a two-core node, every run, for no
result: the process's memory is given back whole when it ends.

``skip_last_collection()``, called by each module before its work, has ``gc.freeze()`` run at exit (``atexit``
runs before that collection): every object is moved where the collector no longer looks, and the walk finds
nothing. What this gives up is the finalizer (``__del__``) of an object that only a reference cycle keeps alive at
exit: this collection's code closes its files with ``with`` blocks and waits for its children and threads, the
interpreter flushes standard output and standard error itself, and ``atexit`` handlers (ansible-core's removal of
its temporary folders among them) run as before.
"""

from __future__ import annotations

import atexit
import gc


def skip_last_collection() -> None:
    """Freeze every object when the process exits, so that the interpreter's last collection walks none. Registered
    once however often it is called (the unit tests run many modules' main() in one process)."""
    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)
