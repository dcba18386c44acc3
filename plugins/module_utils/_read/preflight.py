# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a repair needs from the node before it starts, read in one pass (the preflight module).

Private to the gpuops.cuda_venv collection: not a public API.

Runs on the node's own Python before the modules' tools venv exists: the standard library only. The venv's
``pyvenv.cfg``, whether it has pip, the local wheelhouses, the URL sources' answers (through ``fetch``, the module's
``fetch_url``: proxies, certificates and timeouts as Ansible's own), and the tools venv's marker: the requirements it
was filled with, written after its install, so that a run finds it ready without starting pip.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.redact import redact
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.venv_paths import local_path

# Beside bin/python in the tools venv: the requirements it holds, one per line.
TOOLS_MARKER = "gpuops-cuda-venv-requirements.txt"

# fetch(url) -> (HTTP status, or -1 when there was no answer; the reason in words)
Fetch = Callable[[str], Tuple[int, str]]


@dataclass(frozen=True)
class Preflight:
    venv: bool  # PATH/pyvenv.cfg is a file
    venv_has_pip: bool
    missing_wheelhouses: List[str] = field(default_factory=list)
    silent_sources: List[str] = field(default_factory=list)  # "URL (why)", userinfo masked
    tools_marker: Optional[str] = None
    tools_installed: Optional[List[str]] = None  # the marker's lines; None: no marker, or no usable python beside it

    def as_dict(self) -> dict:
        return {"venv": self.venv, "venv_has_pip": self.venv_has_pip, "missing_wheelhouses": self.missing_wheelhouses,
                "silent_sources": self.silent_sources, "tools_marker": self.tools_marker,
                "tools_installed": self.tools_installed}


def url_sources(find_links: Sequence[str], index_url: Optional[str], extra_index_urls: Sequence[str]) -> List[str]:
    """The sources an installer reaches over the network: the indexes, then the remote find-links."""
    return ([index_url] if index_url else []) + list(extra_index_urls) + [link for link in find_links if local_path(link) is None]


def preflight(path: str, find_links: Sequence[str], urls: Sequence[str], fetch: Fetch,
              tools_venv: Optional[str] = None) -> Preflight:
    """Read everything at once; never fails on what it finds (the caller words the problems)."""
    missing = [link for link in find_links if local_path(link) is not None and not os.path.isdir(local_path(link))]
    silent = []
    for url in urls:
        status, why = fetch(url)
        if status != 200:
            silent.append("%s (%s)" % (redact(url), "HTTP %d" % status if status > 0 else redact(why)))
    marker = os.path.join(tools_venv, TOOLS_MARKER) if tools_venv else None
    return Preflight(venv=os.path.isfile(os.path.join(path, "pyvenv.cfg")), venv_has_pip=_has_pip(path),
                     missing_wheelhouses=missing, silent_sources=silent, tools_marker=marker,
                     tools_installed=_marker_lines(tools_venv, marker) if tools_venv else None)


def _has_pip(path: str) -> bool:
    """pip's dist-info in one of the venv's site-packages (lib/pythonX.Y, lib64 where it is a folder of its own)."""
    return bool(glob.glob(os.path.join(glob.escape(path), "lib*", "*", "site-packages", "pip-*.dist-info")))


def _marker_lines(tools_venv: str, marker: str) -> Optional[List[str]]:
    if not os.access(os.path.join(tools_venv, "bin", "python"), os.X_OK):
        return None
    try:
        with open(marker, encoding="utf-8") as handle:
            return [line.strip() for line in handle if line.strip()]
    except (OSError, UnicodeDecodeError):
        return None
