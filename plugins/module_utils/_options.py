# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options more than one module takes, each with its one spec; each module's entry (``_entry/<name>_entry.py``) builds
its argument spec from them.

Private to the gpuops.cuda_venv collection: not a public API.

Their documentation is plugins/doc_fragments/venv.py (the shared ones) and each module's DOCUMENTATION.
"""

from __future__ import annotations

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.base_options import BASE, copies
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.lock_file import LockError, load_lock
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.record_check import MODES as VERIFY_MODES

# Options more than one module takes, each with its one spec (those no engine part shapes in _core/base_options.py).
SHARED = dict(
    BASE,
    anchor=dict(type="str", default="torch"),
    verify=dict(type="str", choices=list(VERIFY_MODES), default="size"),
    ld_library_path=dict(type="list", elements="path", default=[]),
    no_index=dict(type="bool", default=False),
    gpu_archs=dict(type="list", elements="str", default=[]),
    lock=dict(type="str"),
    lock_content=dict(type="str"),
    lock_extras=dict(type="list", elements="str", default=[]),
    lock_groups=dict(type="list", elements="str"),
)
LOCK_OPTIONS = ("lock", "lock_content", "lock_extras", "lock_groups")
WHEEL_SOURCES = ("find_links", "index_url", "extra_index_urls", "no_index")


def shared(*names) -> dict:
    """Fresh copies of the ``SHARED`` entries named (a default list is never shared between two specs)."""
    return copies(SHARED, *names)


def lock_of(params: dict):
    """The parsed lock the lock options name (``_read/packaging/lock_file.py``), or None; LockError (a CudaVenvError)
    naming the file, the line or key, or the option."""
    if params["lock"] is None:
        if params["lock_content"] is not None or params["lock_extras"] or params["lock_groups"] is not None:
            raise LockError("lock_content, lock_extras and lock_groups need lock (the lock's file name)")
        return None
    return load_lock(params["lock"], params["lock_content"])
