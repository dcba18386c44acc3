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
      - C(hash) also compares the sha256 of every file. It reads every byte, on every CPU the module may run on. With
        256 MiB or more per CPU, child Pythons of the module's interpreter hash, while the module reads the rest of
        the venv. A child maps each file of 1 MiB or more, 64 MiB at a time (Linux C(MAP_POPULATE), Python 3.10 and
        later), instead of copying it. A file truncated while it is mapped ends only that child. What a child did not
        answer (it could not start, or it ended), the module hashes itself, by reading.
      - The repair checks so while planning; the wheels it installed or reinstalled are always hashed, beside the
        test of its plan's last batch.
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

    # The modules that take the user's lock as the declared state (facts and repair).
    LOCK = r"""
options:
  lock:
    description:
      - The user's lock, the declared state instead of O(gpuops.cuda_venv.cuda_venv_repair#module:packages) and the
        anchor's closure. A C(pylock.toml) or C(pylock.NAME.toml) (PEP 751, as C(pip lock), C(uv pip compile --format
        pylock.toml) and C(uv export) write it; another C(*.toml) name is read as one too), or, under any other name, a
        requirements file with every line pinned
        with C(==) and, as C(pip-compile --generate-hashes) or C(uv pip compile --generate-hashes) write it, C(--hash)
        on every line.
      - A path on the managed node, unless O(lock_content) holds the file's text (read on the controller, as the role's
        C(venv_repair_lock) does); it then only names the file in messages and tells the two formats apart.
      - The packages the lock selects for the venv's own interpreter and platform (C(requires-python), C(environments),
        each package's marker with O(lock_extras) and O(lock_groups), the wheel whose tags the venv installs) are the
        declared set. Each difference is a C(LOCK_DRIFT) finding (kinds missing, version, bytes, extra); the repair
        installs missing and other versions, and reinstalls other bytes, in the installer's hash-checking mode
        (C(--require-hashes)) with the lock's hashes, from the wheel sources and the folders of the wheels the lock
        names by path or C(file://) URL.
      - Installed distributions not in the lock stay with O(gpuops.cuda_venv.cuda_venv_repair#module:prune=cuda)
        unless the CUDA-stack rules prove them wrong; O(gpuops.cuda_venv.cuda_venv_repair#module:prune=all) removes
        them, as C(uv pip sync) would (never pip, setuptools, wheel or uv).
      - A file that is not valid, a lock for another Python or platform, a package from a direct source or without a
        version, an unpinned line, an installer option line, hashes on some lines only - each is an error naming the
        file and the line or key, before anything is read from the venv or changed.
      - Reading a C(pylock.toml) needs Python >= 3.11 (C(tomllib)) or C(tomli) where the module runs.
    type: str
    version_added: "1.2.0"
  lock_content:
    description:
      - The text of the lock O(lock) names, read on the controller (C(lookup('file', ...))); relative wheel paths of a
        C(pylock.toml) are then not looked for on the node.
    type: str
    version_added: "1.2.0"
  lock_extras:
    description: The extras of a C(pylock.toml) to select (its C(extras) must declare them).
    type: list
    elements: str
    default: []
    version_added: "1.2.0"
  lock_groups:
    description:
      - The dependency groups of a C(pylock.toml) to select (its C(dependency-groups) must declare them).
      - Not given, the lock's C(default-groups).
    type: list
    elements: str
    version_added: "1.2.0"
"""
