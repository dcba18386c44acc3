# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    """The note every module that runs the collection's Python on the node carries (module_utils/_core/bytecode_cache.py)."""

    DOCUMENTATION = r"""
options: {}
notes:
  - Keeps the compiled code of the collection's own Python (about 1 MB) on the managed node, in
    C(gpuops-cuda_venv/<interpreter tag>) under C(PYTHONPYCACHEPREFIX), C($XDG_CACHE_HOME) or C(~/.cache), so that
    the next run does not compile it again (Ansible sends it as a zip, which Python compiles on every run; about
    0.17 s of a run on a two-core node). Only a folder of the running user that no one else can write is used, mode
    0700; an entry is named by its source's SHA-256 and checked before use. Set C(CUDA_VENV_BYTECODE_CACHE=off)
    (the task's C(environment)) to neither read nor write it; C(PYTHONDONTWRITEBYTECODE) writes nothing.
"""
