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

    # The modules that take the user's wheel sources (the repair installs from them; the facts read them).
    WHEEL_SOURCES = r"""
options:
  find_links:
    description:
      - Folders of wheels, wheel files or URLs of pages listing wheels (C(--find-links)).
      - M(gpuops.cuda_venv.cuda_venv_repair) installs from them by name, never by file path.
      - M(gpuops.cuda_venv.cuda_venv_facts) reads them only when a C(CONTAMINATION_SOURCE) finding holds a residue
        (contaminants nothing installed requires), and only for its candidates, to name the version that requires it.
    type: list
    elements: str
    default: []
  index_url:
    description:
      - Base URL of a package index (C(--index-url)). May carry credentials; never shown in results.
      - Without it, M(gpuops.cuda_venv.cuda_venv_repair) installs from the index its installer's configuration names
        (unless O(no_index)).
      - M(gpuops.cuda_venv.cuda_venv_facts) reads only the indexes given here and in O(extra_index_urls), never the
        node's pip configuration nor PyPI by default, through their simple API (PEP 691 JSON or PEP 503 HTML), and
        never downloads a whole wheel (a version's requirements only where the index serves its metadata apart, PEP
        658); a source that cannot be read is named in the finding, never fatal.
    type: str
  extra_index_urls:
    description: Extra index URLs (C(--extra-index-url)). May carry credentials; never shown in results.
    type: list
    elements: str
    default: []
  no_index:
    description: Ignore package indexes; use O(find_links) only.
    type: bool
    default: false
"""
