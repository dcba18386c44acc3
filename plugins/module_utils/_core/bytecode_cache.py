# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The compiled code of this collection's module_utils, kept on the managed node between module runs.

Private to the gpuops.cuda_venv collection: not a public API.

Ansible sends a module and the module_utils it imports as a zip (AnsiballZ). Python's zipimport compiles every
source file of it on every run, twice (once to name the file, once to run it), and writes the bytecode nowhere: for
this collection's module_utils (about 500 KB of Python) that was 0.17 s of the facts module's 0.74 s on an unchanged
venv, run on a two-core node. ``enable()``, called by each module before it imports the rest, puts a finder first
on ``sys.meta_path`` that, for this collection's module_utils loaded from such a zip only, keeps each file's
compiled code in a folder of the node's user and reads it from there on the next run, as Python's own
``__pycache__`` does for files on disk.

- Where: ``sys.pycache_prefix`` (``PYTHONPYCACHEPREFIX``) when set, else ``$XDG_CACHE_HOME``, else ``~/.cache``;
  then ``gpuops-cuda_venv/<the interpreter's cache tag>``. The folder is made mode 0700 and used only while it is a
  real folder of the running user that no one else can write; an entry is read only when it is a regular file of
  the running user (``O_NOFOLLOW``). Anything else: the source is compiled as zipimport does, nothing is written.
- An entry is named by the SHA-256 of the interpreter's magic number and optimization level, the file's path in the
  zip and its source, and holds the SHA-256 of its code before the code: a changed source is another entry, a torn
  or altered one is compiled again and rewritten. Entries are written by rename, never in place; on a run's first
  write, those older than ``STALE_DAYS`` (another version's) are removed.
- ``PYTHONDONTWRITEBYTECODE`` writes nothing, not even the folder (entries already there are still read), as for
  Python's own cache; ``CUDA_VENV_BYTECODE_CACHE=off`` (the task's ``environment``) neither reads nor writes.
- Files on disk (ansible-test, the unit tests, a module run from an exploded AnsiballZ) are left to Python's own
  import: ``enable()`` does nothing unless this file itself was loaded from a zip.
- ansible-core's own module_utils (``ansible.module_utils.basic`` and what it imports, about 0.1 s of compiling per
  run) are imported by the AnsiballZ wrapper before the module's first line runs, so ``enable()`` comes too late for
  them. The role's tools venv therefore holds a copy of this file and a ``.pth`` file that calls ``enable_at_start()``
  when its Python starts (site.py runs it; ``-S`` skips it): the finder is then in place before the wrapper imports
  anything, for both ``ansible.module_utils`` and this collection's module_utils (CACHED).
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import marshal
import os
import stat
import sys
import tempfile
import time
import zipimport
from typing import Optional

# The modules a finder caches when they come from a zip: this collection's module_utils (named in full: the tools venv's
# copy of this file has another name) and ansible-core's, which AnsiballZ sends alike.
CACHED = ("ansible_collections.gpuops.cuda_venv.plugins.module_utils.", "ansible.module_utils.")
SWITCH = "CUDA_VENV_BYTECODE_CACHE"
STALE_DAYS = 30
_DIGEST = 32  # bytes of SHA-256 before the marshalled code
_PRUNED: set = set()  # the folders whose stale entries this run removed


def enable() -> None:
    """Put the cache's finder first on ``sys.meta_path`` when this collection's module_utils come from a zip and
    the cache folder can be trusted; otherwise do nothing. Never raises: a node without a usable folder compiles."""
    if isinstance(globals().get("__loader__"), zipimport.zipimporter):
        enable_at_start()


def enable_at_start() -> None:
    """enable() for a Python that has not imported a module yet: the tools venv's ``.pth`` file calls it, from a copy
    of this file on disk. Does nothing when the switch is off, a finder (of either copy) is already there, or the
    folder cannot be trusted."""
    if os.environ.get(SWITCH, "").strip().lower() in ("off", "0", "false", "no"):
        return
    if any(getattr(finder, "caches_ansiballz_code", False) for finder in sys.meta_path):
        return
    folder = trusted_folder(cache_folder())
    if folder is not None:
        sys.meta_path.insert(0, _CacheFinder(folder))


def cache_folder() -> Optional[str]:
    """Where this interpreter's entries live (see the module's text), or None when it has no cache tag or the base
    folder is not an absolute path."""
    tag = sys.implementation.cache_tag
    if not tag:
        return None
    base = sys.pycache_prefix or os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if not os.path.isabs(base):
        return None  # a relative XDG_CACHE_HOME is invalid (XDG Base Directory); HOME unset leaves "~"
    return os.path.join(base, "gpuops-cuda_venv", tag)


def trusted_folder(folder: Optional[str]) -> Optional[str]:
    """``folder``, made mode 0700 when missing (unless no bytecode may be written), if it is a real folder of this
    user that no one else can write (a symlink fails the last test: its mode is always 0777)."""
    if folder is None:
        return None
    try:
        if not sys.dont_write_bytecode:
            os.makedirs(folder, mode=0o700, exist_ok=True)
        info = os.lstat(folder)
    except OSError:
        return None
    if info.st_uid != os.geteuid() or info.st_mode & 0o022:
        return None
    return folder


class _CacheFinder(importlib.abc.MetaPathFinder):
    """Finds the CACHED modules in a zip and gives them the caching loader; packages, modules outside a zip and all
    other names are left to the next finders. It does not ask zipimport for the spec: zipimport's ``get_filename``
    compiles the source just to name it, a second compile per module."""

    caches_ansiballz_code = True  # how enable_at_start() knows a finder of the other copy of this file

    def __init__(self, folder: str):
        self.folder = folder

    def find_spec(self, fullname, path, target=None):
        parent, _dot, leaf = fullname.rpartition(".")
        if not fullname.startswith(CACHED) or not path:
            return None
        package = sys.modules.get(parent)
        importer = getattr(getattr(package, "__spec__", None), "loader", None)
        if not isinstance(importer, zipimport.zipimporter):
            return None
        for folder in path:
            if _zip_data(importer, os.path.join(folder, leaf, "__init__.py")) is not None:
                return None  # a package: zipimport's
            origin = os.path.join(folder, leaf + ".py")
            source = _zip_data(importer, origin)
            if source is not None:
                spec = importlib.machinery.ModuleSpec(fullname, _CachingLoader(importer, origin, source, self.folder),
                                                      origin=origin)
                spec.has_location = True
                return spec
        return None


def _zip_data(importer: zipimport.zipimporter, path: str) -> Optional[bytes]:
    """The bytes of ``path`` (a path that starts with the zip's own) in the importer's zip, or None when it holds no
    such file."""
    try:
        return importer.get_data(path)
    except OSError:
        return None


class _CachingLoader(importlib.abc.Loader):
    """Loads one module from the zip, its code from the cache folder when an entry matches its source."""

    def __init__(self, zip_loader: zipimport.zipimporter, origin: str, source: bytes, folder: str):
        self.zip_loader, self.origin, self.source, self.folder = zip_loader, origin, source, folder
        # the file's path inside the zip: the same in every run, unlike the zip's own temporary path
        self.inner = os.path.relpath(origin, zip_loader.archive)

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        exec(self.get_code(module.__name__), module.__dict__)  # pylint: disable=exec-used

    def get_source(self, fullname: str) -> str:
        return importlib.util.decode_source(self.source)

    def get_code(self, fullname: str):
        source = self.source
        level = b"%d\0" % sys.flags.optimize  # python -O strips asserts: its code is another entry, as its .opt-1.pyc
        path = self.inner.encode("utf-8") + b"\0"
        key = hashlib.sha256(importlib.util.MAGIC_NUMBER + level + path + source).hexdigest()
        entry = os.path.join(self.folder, key)
        code = read_entry(entry)
        if code is None:
            code = compile(source, self.inner, "exec", dont_inherit=True)
            if not sys.dont_write_bytecode:
                write_entry(self.folder, entry, code)
        return code


def read_entry(entry: str):
    """The code an entry holds, or None when it is missing, not a regular file of this user, or not intact (its
    digest does not match: an empty or torn file included)."""
    try:
        fd = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # a FIFO must not hang the module
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read()
    except OSError:
        return None
    finally:
        os.close(fd)
    payload = data[_DIGEST:]
    if hashlib.sha256(payload).digest() != data[:_DIGEST]:
        return None
    try:
        return marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return None


def write_entry(folder: str, entry: str, code) -> None:
    """Write an entry by rename (a reader sees the old one or the whole new one), then remove stale entries.
    A failure (a full disk, a read-only home) leaves the cache as it was: the code was compiled anyway."""
    payload = marshal.dumps(code)
    try:
        fd, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(hashlib.sha256(payload).digest() + payload)
            os.replace(temporary, entry)
        except OSError:
            os.unlink(temporary)
            raise
        if folder not in _PRUNED:
            _PRUNED.add(folder)
            _remove_stale(folder)
    except OSError:
        pass


def _remove_stale(folder: str) -> None:
    """Remove entries (and torn temporaries) not written for STALE_DAYS: another version's code, or a file's that
    changed since. One still in use is simply compiled and written again on its next miss."""
    limit = time.time() - STALE_DAYS * 86400
    with os.scandir(folder) as entries:
        for item in entries:
            try:
                if item.is_file(follow_symlinks=False) and item.stat(follow_symlinks=False).st_mtime < limit:
                    os.unlink(item.path)
            except OSError:
                pass
