# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    """Options several modules share; their specs are SHARED in plugins/module_utils/_options.py."""

    # Every module that works on a venv.
    DOCUMENTATION = r"""
options:
  path:
    description: Absolute path of the venv's root (the directory that holds C(pyvenv.cfg)).
    type: path
    required: true
  ld_library_path:
    description:
      - The C(LD_LIBRARY_PATH) the workload runs with, as a list of absolute directories.
      - The loader model resolves with it, and every process the module starts in the venv to test or measure it (the
        import probe, a command of your own, the benchmark) runs with it; the module's own environment is never used
        for this.
    type: list
    elements: path
    default: []
"""

    # The modules that diagnose the venv (facts, and the repair before and after each batch).
    DIAGNOSIS = r"""
options:
  anchor:
    description:
      - The distribution whose requirement closure, shared objects and import define what the venv must provide. The
        repair declares its closure and keeps its CUDA wheels.
    type: str
    default: torch
  verify:
    description:
      - How files are checked against C(RECORD).
      - C(size) checks that every listed file exists and has the listed size.
      - C(hash) also compares the sha256 of every file (reads every byte; uses all cores).
      - The repair checks so while planning; the wheels it installed or reinstalled are always hashed after it.
    type: str
    choices: [size, hash]
    default: size
"""
