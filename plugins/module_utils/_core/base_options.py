# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The option specs no engine part shapes: the venv's path and the wheel sources, the preflight and find modules' specs.

Private to the gpuops.cuda_venv collection: not a public API.

Apart from ``_options.py`` (which builds the other modules' specs from ``BASE`` and the engine's constants) because
cuda_venv_preflight and cuda_venv_find run on the node's own Python before the modules' tools venv exists: their
payloads pack nothing but this and their standard-library readers (``_read/preflight.py``, ``_read/venv_find.py``).
"""

from __future__ import annotations

import copy

# Each with its one spec, wherever a module takes it.
BASE = dict(
    path=dict(type="path", required=True),
    find_links=dict(type="list", elements="str", default=[]),
    index_url=dict(type="str", no_log=True),
    extra_index_urls=dict(type="list", elements="str", default=[], no_log=True),
)


def copies(table: dict, *names) -> dict:
    """Fresh copies of the entries of ``table`` named (a default list is never shared between two specs)."""
    return {name: copy.deepcopy(table[name]) for name in names}


def preflight_arguments() -> dict:
    """AnsibleModule's keyword arguments for cuda_venv_preflight."""
    spec = dict(
        **copies(BASE, "path", "find_links", "index_url", "extra_index_urls"),
        check_sources=dict(type="bool", default=True),
        url_timeout=dict(type="float", default=30),
        validate_certs=dict(type="bool", default=True),
        tools_venv=dict(type="path"),
    )
    return dict(argument_spec=spec, supports_check_mode=True)


def find_arguments(default_roots) -> dict:
    """AnsibleModule's keyword arguments for cuda_venv_find (also the node's own Python: no engine part shapes it)."""
    spec = dict(
        roots=dict(type="list", elements="path", default=list(default_roots)),
        processes=dict(type="bool", default=True),
        paths=dict(type="list", elements="str", default=[]),
    )
    return dict(argument_spec=spec, supports_check_mode=True)
