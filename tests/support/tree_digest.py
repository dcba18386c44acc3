# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test helpers for the transaction layer: a venv-like tree, every kind of change to it, its digest.

``tree_state`` reads a whole tree (bytes and metadata of every directory, file
and symlink) independently of the code under test; equal states mean a
byte-identical tree. ``tree_digest`` hashes that state into one string.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import sys

STATE_DIR_NAME = ".cuda_venv"
SITE = "lib/python3.12/site-packages"
# Distinct, nanosecond-exact mtimes: a restore that loses precision shows up.
BASE_MTIME_NS = 1767225600123456789


def tree_state(root, exclude=(STATE_DIR_NAME,)):
    """{relative path: (type, st_mode, uid, gid, size, mtime_ns, symlink target, sha256[, link group])}; "." is the root.

    Files also carry their link group: the first path (sorted) sharing their inode in the tree.

    Directory sizes are left out: they grow with entries and never shrink, so no restore can repeat them.
    """
    state = {".": _describe(root, os.lstat(root))}
    pending = [("", root)]
    while pending:
        prefix, directory = pending.pop()
        for name in sorted(os.listdir(directory)):
            rel = prefix + name
            if rel in exclude:
                continue
            path = os.path.join(directory, name)
            st = os.lstat(path)
            state[rel] = _describe(path, st)
            if stat.S_ISDIR(st.st_mode):
                pending.append((rel + "/", path))
    # Which files share an inode inside the tree: the first path of each file's link group.
    groups = {}
    for rel in sorted(state):
        if state[rel][0] == "f":
            st = os.lstat(root if rel == "." else os.path.join(root, rel))
            groups.setdefault((st.st_dev, st.st_ino), rel)
            state[rel] += (groups[(st.st_dev, st.st_ino)],)
    return state


def tree_digest(root, exclude=(STATE_DIR_NAME,)):
    rows = sorted((os.fsencode(rel).hex(), value) for rel, value in tree_state(root, exclude).items())
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()


def _describe(path, st):
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        return ("l", mode, st.st_uid, st.st_gid, st.st_size, st.st_mtime_ns, os.readlink(path), None)
    if stat.S_ISDIR(mode):
        return ("d", mode, st.st_uid, st.st_gid, None, st.st_mtime_ns, None, None)
    with open(path, "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()
    return ("f", mode, st.st_uid, st.st_gid, st.st_size, st.st_mtime_ns, None, digest)


def write(path, data, mode=0o644):
    """A new file (new inode) at ``path``, the way installers write."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "wb") as handle:
        handle.write(data)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def build_sample_tree(root):
    """A small venv-like tree with every kind of entry; every mtime set to a distinct ns value."""
    site = os.path.join(root, SITE)
    write(os.path.join(root, "pyvenv.cfg"), b"home = /usr/bin\nversion = 3.12.1\n")
    write(os.path.join(root, "bin", "pip"), b"#!/bin/sh\nexit 0\n", 0o755)
    os.symlink("/usr/bin/python3.12", os.path.join(root, "bin", "python"))
    os.symlink("python", os.path.join(root, "bin", "python3"))
    write(os.path.join(site, "torch", "__init__.py"), b"import torch._C\n")
    write(os.path.join(site, "torch", "lib", "libtorch.so"), b"\x7fELF" + bytes(range(256)) * 4, 0o755)
    os.link(os.path.join(site, "torch", "lib", "libtorch.so"), os.path.join(site, "torch", "lib", "libtorch_alias.so"))
    write(os.path.join(site, "nvidia", "cu13", "lib", "libcudart.so.13"), b"\x7fELF cudart 13", 0o755)
    os.symlink("libcudart.so.13", os.path.join(site, "nvidia", "cu13", "lib", "libcudart.so"))
    write(os.path.join(site, "torch-2.9.1.dist-info", "RECORD"), b"torch/__init__.py,sha256=x,16\n")
    write(os.path.join(site, "torch-2.9.1.dist-info", "METADATA"), b"Name: torch\nVersion: 2.9.1\n")
    write(os.path.join(site, "readonly.txt"), b"read only\n", 0o444)
    write(os.path.join(site, os.fsdecode(b"caf\xe9.txt")), b"not utf-8 name\n")
    os.makedirs(os.path.join(site, "empty"))
    os.makedirs(os.path.join(site, "sealed", "inner"))
    write(os.path.join(site, "sealed", "inner", "data.bin"), b"sealed")
    os.chmod(os.path.join(site, "sealed"), 0o555)
    if os.geteuid() == 0:
        os.lchown(os.path.join(site, "torch", "__init__.py"), 1234, 2345)
    _set_mtimes(root)


def _set_mtimes(root):
    paths = [root]
    for directory, dirs, files in os.walk(root):
        paths.extend(os.path.join(directory, name) for name in sorted(dirs + files))
    # Children first, so that setting a child's time cannot matter to its directory.
    for number, path in sorted(enumerate(paths), key=lambda item: -item[1].count(os.sep)):
        os.utime(path, ns=(BASE_MTIME_NS, BASE_MTIME_NS + number * 1001), follow_symlinks=False)


def _site(root, *parts):
    return os.path.join(root, SITE, *parts)


def replace_content(root):
    write(_site(root, "torch", "__init__.py"), b"import torch._C  # patched\n")


def rewrite_like_pip(root):
    """pip unlinks, then writes a new file: the in-tree hard link to the old inode survives."""
    path = _site(root, "torch", "lib", "libtorch.so")
    os.unlink(path)
    with open(path, "wb") as handle:
        handle.write(b"\x7fELF new torch")


def delete_file(root):
    os.unlink(_site(root, "nvidia", "cu13", "lib", "libcudart.so.13"))


def add_file(root):
    write(_site(root, "extra.py"), b"x = 1\n")


def add_dir(root):
    write(_site(root, "newpkg", "sub", "x.so"), b"\x7fELF new")
    os.symlink("sub/x.so", _site(root, "newpkg", "x.so"))


def remove_dir(root):
    shutil.rmtree(_site(root, "torch-2.9.1.dist-info"))


def change_modes(root):
    os.chmod(os.path.join(root, "bin", "pip"), 0o700)
    os.chmod(os.path.join(root, "lib"), 0o700)
    os.chmod(_site(root, "readonly.txt"), 0o666)


def retarget_symlink(root):
    os.unlink(_site(root, "nvidia", "cu13", "lib", "libcudart.so"))
    os.symlink("libcudart.so.12", _site(root, "nvidia", "cu13", "lib", "libcudart.so"))


def swap_file_and_dir(root):
    """A file becomes a directory and a directory becomes a file."""
    os.unlink(_site(root, "readonly.txt"))
    write(_site(root, "readonly.txt", "inside"), b"now a dir")
    os.rmdir(_site(root, "empty"))
    write(_site(root, "empty"), b"now a file")


def touch_and_chown(root):
    os.utime(os.path.join(root, "pyvenv.cfg"), ns=(1, 2))
    os.utime(_site(root, "torch"), ns=(1, 2))
    if os.geteuid() == 0:
        os.lchown(_site(root, "torch", "__init__.py"), 0, 0)
        os.lchown(os.path.join(root, "bin", "python"), 4321, 4321)


def change_sealed_dir(root):
    """Changes inside a read-only directory."""
    sealed = _site(root, "sealed", "inner")
    os.chmod(_site(root, "sealed"), 0o755)
    os.unlink(os.path.join(sealed, "data.bin"))
    os.rename(sealed, _site(root, "sealed", "moved"))


MODIFICATIONS = (
    replace_content,
    rewrite_like_pip,
    delete_file,
    add_file,
    add_dir,
    remove_dir,
    change_modes,
    retarget_symlink,
    swap_file_and_dir,
    touch_and_chown,
    change_sealed_dir,
)


def modify_tree(root, after_each=None):
    """Apply every modification in turn; ``after_each()`` runs after each one (a crash point)."""
    for modification in MODIFICATIONS:
        modification(root)
        if after_each is not None:
            after_each()


def child_env(**extra):
    """Environment for a child ``sys.executable`` that imports this collection as the tests do."""
    env = dict(os.environ)
    env.pop("CUDA_VENV_CRASH_AT", None)
    env["PYTHONPATH"] = os.pathsep.join(path for path in sys.path if path)
    env.update(extra)
    return env
