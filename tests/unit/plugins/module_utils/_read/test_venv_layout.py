# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for venv_layout: pyvenv.cfg, site-packages discovery, the state and swap folders."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.venv_paths import VenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import VenvLayout, read_layout, state_dir_of, swap_dir_of

VENV_CFG = "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.12.1\nexecutable = /usr/bin/python3.12\n"


def make_venv_tree(root, cfg=VENV_CFG, pythons=("python3.12",), lib64_link=True):
    """A venv-shaped tree: pyvenv.cfg, bin/, lib/pythonX.Y/site-packages, lib64 -> lib."""
    os.makedirs(os.path.join(root, "bin"))
    for name in pythons:
        os.makedirs(os.path.join(root, "lib", name, "site-packages"))
    if lib64_link:
        os.symlink("lib", os.path.join(root, "lib64"))
    with open(os.path.join(root, "pyvenv.cfg"), "w") as handle:
        handle.write(cfg)
    return root


def test_read_layout_venv_tree(tmp_path):
    root = make_venv_tree(str(tmp_path / "venv"))
    assert read_layout(root + "/") == VenvLayout(
        root=root,
        python=root + "/bin/python",
        config={"home": "/usr/bin", "include-system-site-packages": "false", "version": "3.12.1", "executable": "/usr/bin/python3.12"},
        version="3.12.1",
        include_system_site_packages=False,
        site_packages=(root + "/lib/python3.12/site-packages",),
    )


def test_read_layout_virtualenv_cfg_and_real_lib64(tmp_path):
    cfg = "home = /opt/py/bin\nimplementation = CPython\nversion_info = 3.11.7.final.0\nInclude-System-Site-Packages = True\n"
    root = make_venv_tree(str(tmp_path / "venv"), cfg=cfg, pythons=("python3.11", "python3.12"), lib64_link=False)
    os.makedirs(os.path.join(root, "lib64", "python3.11", "site-packages"))
    layout = read_layout(root)
    assert layout.version == "3.11.7"
    assert layout.include_system_site_packages is True
    assert layout.config["include-system-site-packages"] == "True"
    assert layout.site_packages == (
        root + "/lib/python3.11/site-packages",
        root + "/lib/python3.12/site-packages",
        root + "/lib64/python3.11/site-packages",
    )


def test_read_layout_keeps_symlinked_root(tmp_path):
    real = make_venv_tree(str(tmp_path / "real"))
    link = str(tmp_path / "link")
    os.symlink(real, link)
    layout = read_layout(link + "/./")
    assert layout.root == link
    assert layout.site_packages == (link + "/lib/python3.12/site-packages",)


def test_read_layout_without_version(tmp_path):
    root = make_venv_tree(str(tmp_path / "v"), cfg="home = /usr/bin\n")
    assert read_layout(root).version is None
    assert read_layout(root).include_system_site_packages is False


@pytest.mark.parametrize("build, message", [
    (lambda p: None, "path {p} does not exist"),
    (lambda p: open(p, "w").close(), "path {p} is not a directory"),
    (os.mkdir, "path {p} is not a venv: no pyvenv.cfg"),
    (lambda p: os.makedirs(p + "/pyvenv.cfg"), "path {p} is not a venv: cannot read pyvenv.cfg: Is a directory"),
    (lambda p: os.mkdir(p) or open(p + "/pyvenv.cfg", "wb").write(b"home = \xff\n"), "path {p} is not a venv: pyvenv.cfg is not UTF-8"),
    (lambda p: os.mkdir(p) or open(p + "/pyvenv.cfg", "wb").write(b"x" * 70000), "path {p} is not a venv: pyvenv.cfg is larger than 64 KiB"),
])
def test_read_layout_errors(tmp_path, build, message):
    path = str(tmp_path / "v")
    build(path)
    with pytest.raises(VenvError) as err:
        read_layout(path)
    assert str(err.value) == message.format(p=path)


def test_read_layout_relative_path():
    with pytest.raises(VenvError) as err:
        read_layout("venv")
    assert str(err.value) == "path must be absolute: venv"


def test_read_layout_real_venv(tmp_path):
    root = str(tmp_path / "real")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", root], check=True)
    layout = read_layout(root)
    short = "python%d.%d" % sys.version_info[:2]
    assert layout.root == root
    assert layout.version == platform.python_version()
    assert layout.include_system_site_packages is False
    assert layout.site_packages == (os.path.join(root, "lib", short, "site-packages"),)
    assert os.access(layout.python, os.X_OK)


def test_state_dir_lives_in_the_venv():
    assert state_dir_of("/venvs/train") == "/venvs/train/.cuda_venv"


def test_swap_dir_is_beside_the_venv():
    assert swap_dir_of("/opt/venvs/train") == "/opt/venvs/.train.cuda_venv"
    assert swap_dir_of("/opt/venvs/train/") == "/opt/venvs/.train.cuda_venv"


def test_a_layout_names_the_state_and_swap_folders_of_its_root(tmp_path):
    layout = read_layout(make_venv_tree(str(tmp_path / "train")) + "/")
    assert (layout.state_dir, layout.swap_dir) == (str(tmp_path / "train" / ".cuda_venv"), str(tmp_path / ".train.cuda_venv"))
