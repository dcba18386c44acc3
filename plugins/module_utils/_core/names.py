# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The naming rules every reader shares: distribution names and shared-object file names.

Private to the gpuops.cuda_venv collection: not a public API.

- A distribution's key is its PEP 503 normalised name (https://packaging.python.org/en/latest/specifications/name-normalization/):
  packaging's ``canonicalize_name`` where packaging is importable, else the same rule written here.
- A distribution name as PEP 508 allows it: letters and digits at both ends, ``.``, ``_`` and ``-`` inside.
- A shared object is named ``x.so`` or ``x.so.N[.N...]`` (``libcudnn.so.9``, ``_C.abi3.so``): what the loader maps.
"""

from __future__ import annotations

import re

try:
    from packaging.utils import canonicalize_name
except ImportError:
    canonicalize_name = None

# A regular-expression fragment, unanchored: callers anchor it as they match (a whole name, a requirement's head).
DISTRIBUTION_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"

# Matched against the last path part; the import probe's script (run in the venv's interpreter) gets the same text.
SHARED_OBJECT_NAME = r"^[^/]+\.so(\.[0-9]+)*$"

# The installer itself and the build basics a venv is made with: never pruned by prune=all, never a lock's extra
# (locks leave them out).
VENV_SEED = frozenset(("pip", "setuptools", "wheel", "uv"))
_SEPARATORS = re.compile(r"[-_.]+")
_SHARED_OBJECT = re.compile(SHARED_OBJECT_NAME)


def pep503_name(name: str) -> str:
    """The PEP 503 rule itself (what canonical_name uses without packaging): runs of ``-_.`` become ``-``, lower case."""
    return _SEPARATORS.sub("-", name).lower()


def canonical_name(name: str) -> str:
    """PEP 503 normalised project name: "Typing__Extensions.x-Y" -> "typing-extensions-x-y"."""
    if canonicalize_name is None:
        return pep503_name(name)
    return str(canonicalize_name(name))


def is_shared_object(path: str) -> bool:
    """True for x.so, x.so.9, x.so.9.1.2, x.cpython-312-x86_64-linux-gnu.so, x.abi3.so (the last path part)."""
    return bool(_SHARED_OBJECT.match(path.rsplit("/", 1)[-1]))


def is_loadable(path: str) -> bool:
    """True for a path (relative to site-packages) that a running process can load: a shared object, a module of
    a package (``cuda/bindings/runtime.py``), a top-level ``.pth`` file (the site module runs it at start). A
    top-level stray module (``build_backend.py``, a packaging slip two wheels share), a licence, a header or a
    script outside site-packages is not."""
    if is_shared_object(path):
        return True
    folder, _sep, base = path.rpartition("/")
    if base.endswith(".pth"):
        return not folder
    package = folder[:-len("__pycache__")].rstrip("/") if folder.endswith("__pycache__") else folder
    return base.endswith((".py", ".pyc")) and bool(package) and not package.startswith("..") \
        and not package.split("/", 1)[0].endswith((".dist-info", ".data"))
