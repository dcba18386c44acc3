#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cuda_venv_preflight
short_description: Check a venv, its wheel sources and the modules' tools venv before a repair, in one call
version_added: "1.1.0"
description:
  - Reads, in one call on the node, what a repair needs before it starts - whether O(path) is a venv (its
    C(pyvenv.cfg)) and has pip, which local wheelhouses of O(find_links) are missing, which URL sources (O(index_url),
    O(extra_index_urls), remote O(find_links)) do not answer HTTP 200 to a GET, and the requirements the tools venv
    O(tools_venv) was filled with (its marker file), so that a run finds it ready without starting pip.
  - Never fails on what it finds; the caller says what is wrong (the C(venv_repair) role fails with one message
    naming every problem). Fails only on bad input.
  - Runs with the node's own Python, standard library only - it is what runs before the other modules' Python
    exists. Changes nothing, but for the collection's own compiled code in the node user's cache (see the notes).
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
  path:
    description: The venv's root, the directory holding C(pyvenv.cfg); an absolute path.
    type: path
    required: true
  find_links:
    description:
      - Wheel sources as the repair module takes them - local folders (or C(file://) URLs) are checked to exist,
        remote URLs to answer.
    type: list
    elements: str
    default: []
  index_url:
    description: An index URL, checked to answer (it may carry credentials; they never show in the result).
    type: str
  extra_index_urls:
    description: More index URLs, each checked to answer.
    type: list
    elements: str
    default: []
  check_sources:
    description: Check the wheel sources; V(false) reports none missing or silent without looking.
    type: bool
    default: true
  url_timeout:
    description: Seconds each URL source has to answer.
    type: float
    default: 30
  validate_certs:
    description: Verify the URL sources' TLS certificates.
    type: bool
    default: true
  tools_venv:
    description:
      - The venv the collection's modules run with. When set, RV(tools_installed) reports the requirements recorded
        in its marker file RV(tools_marker), or null when there is no marker or no usable C(bin/python).
    type: path
seealso:
  - module: gpuops.cuda_venv.cuda_venv_repair
"""

EXAMPLES = r"""
- name: Check the venv and its wheel sources
  gpuops.cuda_venv.cuda_venv_preflight:
    path: /opt/venvs/train
    find_links: [/srv/wheelhouse]
    index_url: "{{ vault_private_index }}"
  register: preflight

- name: Say what is missing
  ansible.builtin.fail:
    msg: "missing wheelhouses: {{ preflight.missing_wheelhouses | join(', ') }}"
  when: preflight.missing_wheelhouses | length > 0
"""

RETURN = r"""
venv:
  description: True when O(path) holds C(pyvenv.cfg).
  returned: always
  type: bool
venv_has_pip:
  description: True when one of the venv's C(site-packages) holds pip's C(dist-info).
  returned: always
  type: bool
missing_wheelhouses:
  description: The local O(find_links) entries that are not a folder.
  returned: always
  type: list
  elements: str
silent_sources:
  description: Each URL source that did not answer HTTP 200, with the status or the reason, credentials masked.
  returned: always
  type: list
  elements: str
  sample: ["https://***@pypi.example.org/simple (HTTP 401)"]
tools_marker:
  description: The tools venv's marker file (written by the role once its install succeeded); null without O(tools_venv).
  returned: always
  type: str
tools_installed:
  description: The marker's requirement lines; null when there is no marker or the tools venv has no usable Python.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.bytecode_cache import enable as enable_bytecode_cache

enable_bytecode_cache()  # first: the collection's code imported below is then compiled once per node, not per run

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.process_end import skip_last_collection
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.base_options import preflight_arguments
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.preflight import preflight, url_sources


def main():
    skip_last_collection()  # the process's exit walks none of what the module read
    module = AnsibleModule(**preflight_arguments())
    params = module.params
    if not params["path"].startswith("/"):
        module.fail_json(msg="path must be the absolute path of the venv's root, got '%s'" % params["path"])
    if params["url_timeout"] <= 0:
        module.fail_json(msg="url_timeout must be positive, got %s" % params["url_timeout"])

    def fetch(url):
        from ansible.module_utils.urls import fetch_url  # pylint: disable=import-outside-toplevel  # 40 ms, only for URLs
        response, info = fetch_url(module, url, method="GET", timeout=params["url_timeout"])
        if response is not None:
            response.close()
        return info.get("status", -1), info.get("msg", "")

    check = params["check_sources"]
    found = preflight(params["path"], params["find_links"] if check else [],
                      url_sources(params["find_links"], params["index_url"], params["extra_index_urls"]) if check else [],
                      fetch, tools_venv=params["tools_venv"])
    module.exit_json(changed=False, **found.as_dict())


if __name__ == "__main__":
    main()
