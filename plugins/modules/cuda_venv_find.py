#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cuda_venv_find
short_description: Find every venv on a host that holds a CUDA stack, and the ones running processes use
version_added: "1.1.0"
description:
  - Walks O(roots) and lists each venv (a folder with C(pyvenv.cfg)) whose C(site-packages) holds torch, jax, cupy or
    any C(nvidia-*) or C(cuda-*) wheel (but C(nvidia-ml-py), NVML's bindings, alone); and each such C(site-packages)
    or C(dist-packages) folder outside a venv (C(pip install --user) into C(~/.local), a system-wide install), with
    RV(venvs[].kind) V(user) or V(system).
  - With O(processes), also the venvs that running processes use now (their executable, their first two arguments,
    their mapped files, from C(/proc)), even outside O(roots).
  - Reads names only - C(pyvenv.cfg), the C(*.dist-info) folder names, the anchor's C(INSTALLER) and each
    distribution's C(RECORD) (for the size). Starts no process, never follows a symlink (a root that is one is
    resolved once), never walks into a venv or a C(site-packages) folder, and skips the mount points of pseudo and
    network filesystems (C(/proc/self/mountinfo)). Roots that do not exist or are a loop of symlinks, folders it cannot
    read, a venv removed while read are RV(notes), never a failure; a symlink loop inside a root is never entered.
  - Runs with the node's own Python (3.9 or later), standard library only, like M(gpuops.cuda_venv.cuda_venv_preflight).
    Changes nothing, but for the collection's own compiled code in the node user's cache (see the notes).
author:
  - gpuops.cuda_venv contributors (@gpuops)
extends_documentation_fragment:
  - gpuops.cuda_venv.attributes
  - gpuops.cuda_venv.compiled_code
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
options:
  roots:
    description:
      - Absolute folders to walk. The default covers root's and users' homes (project C(.venv) folders, C(~/venvs),
        C(~/.local)), services (C(/opt/<service>/.venv), C(/srv)), C(/usr/local) (images' system-wide installs),
        C(/var/lib), and the C(/data) and C(/workspace) folders GPU images mount. A root inside another is walked
        once.
    type: list
    elements: path
    default: [/root, /home, /opt, /srv, /usr/local, /var/lib, /data, /workspace]
  processes:
    description: Also list the venvs running processes use now (from C(/proc)), wherever they are.
    type: bool
    default: true
  paths:
    description:
      - Only the venvs (and site folders) whose path matches one of these shell globs, matched on the whole path as
        Python's C(fnmatch) does (V(*) also matches C(/)), for example V(/opt/*/.venv) or V(/home/*). Empty, every one.
    type: list
    elements: str
    default: []
seealso:
  - module: gpuops.cuda_venv.cuda_venv_facts
"""

EXAMPLES = r"""
- name: Find the CUDA venvs of the host
  gpuops.cuda_venv.cuda_venv_find:
  register: found

- name: Diagnose each
  gpuops.cuda_venv.cuda_venv_facts:
    path: "{{ item.path }}"
  loop: "{{ found.venvs | selectattr('kind', 'equalto', 'venv') | list }}"

- name: Only the services' venvs
  gpuops.cuda_venv.cuda_venv_find:
    roots: [/opt, /srv]
    processes: false
"""

RETURN = r"""
venvs:
  description: Each venv or site folder holding a CUDA stack, by path.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The venv's root (the folder of C(pyvenv.cfg)), or the site folder.
      type: str
    kind:
      description: V(venv); outside a venv V(user) (C(~/.local/lib/pythonX.Y/site-packages)) or V(system).
      type: str
    interpreter:
      description: The venv's C(bin/python); null for a site folder.
      type: str
    base_interpreter:
      description: The interpreter the venv was made from (C(pyvenv.cfg)'s C(executable), else where C(bin/python) leads).
      type: str
    python_version:
      description: From C(pyvenv.cfg) (C(version) or C(version_info)); for a site folder, from its C(pythonX.Y) folder.
      type: str
    anchor:
      description: The first of torch, jax, cupy (its distribution's name, e.g. V(cupy-cuda12x)) installed.
      type: str
    anchor_version:
      description: Its version from its C(dist-info) folder's name.
      type: str
    cuda_major:
      description: The anchor's CUDA major (torch's C(+cuNNN), jax's C(jax-cudaNN-plugin), cupy's name), else the one
        major every CUDA distribution agrees on, else null.
      type: int
    cuda_majors:
      description: Every CUDA major the CUDA distributions' names and versions tell; two means a contaminated venv.
      type: list
      elements: int
    installer:
      description: The C(INSTALLER) of the anchor (else the first CUDA distribution), e.g. V(pip) or V(uv).
      type: str
    size:
      description: Bytes the distributions' C(RECORD) files list (what the installers wrote).
      type: int
    last_install:
      description: The newest C(dist-info) folder's modification time, UTC, ISO 8601.
      type: str
    distributions:
      description: How many C(dist-info) folders.
      type: int
    cuda_distributions:
      description: The C(nvidia-*), C(cuda-*), C(cupy-cuda*) and C(jax-cuda*) distributions.
      type: list
      elements: str
    processes:
      description: The ids of the processes running from it now.
      type: list
      elements: int
    found_by:
      description: V(walk) (under O(roots)) or V(process) (only through C(/proc)).
      type: str
    generations:
      description:
        - The previous generations a swapped repair kept of this venv (M(gpuops.cuda_venv.cuda_venv_repair)'s
          O(gpuops.cuda_venv.cuda_venv_repair#module:keep_previous), what O(gpuops.cuda_venv.cuda_venv_repair#module:swap_back)
          returns to) - C(count), C(newest) (its run id), C(newest_time) (when the repair that kept it began, UTC, from its run id) and C(size) (bytes
          their RECORD files list; they share most files with the venv by hard links). V(null) when there is none.
        - The collection's own state is never listed as a venv - these generations, a swap's copy, a venv's snapshots
          - nor walked; a root or a running process inside it is a note.
      type: dict
  sample:
    - path: /opt/train/.venv
      kind: venv
      interpreter: /opt/train/.venv/bin/python
      base_interpreter: /usr/bin/python3.12
      python_version: 3.12.3
      anchor: torch
      anchor_version: 2.9.1+cu128
      cuda_major: 12
      cuda_majors: [12, 13]
      installer: uv
      size: 6700000000
      last_install: "2026-03-01T10:00:00Z"
      distributions: 44
      cuda_distributions: [nvidia-cudnn-cu12, nvidia-cudnn-cu13]
      processes: [4242]
      found_by: walk
      generations: {count: 1, newest: 20261205T162637Z-1385-6722, newest_time: "2026-12-05T16:26:37Z", size: 6812345678}
notes:
  description: What was skipped or could not be read (a missing root, an unreadable folder, a venv removed while read,
    a pseudo or network filesystem, the collection's own repair state).
  returned: always
  type: list
  elements: str
scanned_dirs:
  description: How many folders the walk listed.
  returned: always
  type: int
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.bytecode_cache import enable as enable_bytecode_cache

enable_bytecode_cache()  # first: the collection's code imported below is then compiled once per node, not per run

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.process_end import skip_last_collection
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.base_options import find_arguments
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_find import DEFAULT_ROOTS, find_venvs


def main():
    skip_last_collection()  # the process's exit walks none of what the module read
    module = AnsibleModule(**find_arguments(DEFAULT_ROOTS))
    roots = module.params["roots"]
    relative = [root for root in roots if not root.startswith("/")]
    if relative:
        module.fail_json(msg="roots must be absolute folders, got %s" % ", ".join("'%s'" % r for r in relative))
    found = find_venvs(roots, processes=module.params["processes"], paths=module.params["paths"])
    module.exit_json(changed=False, **found.as_dict())


if __name__ == "__main__":
    main()
