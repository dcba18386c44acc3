# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for venv_paths: the confinement rule, memoised real paths, find-links entries as local paths."""

from __future__ import annotations

import os

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.venv_paths import confine, local_path, real_path


@pytest.fixture
def jail(tmp_path):
    root = str(tmp_path / "venv")
    outside = str(tmp_path / "outside")
    os.makedirs(root + "/lib/site")
    os.makedirs(outside)
    os.symlink(outside, root + "/lib/site/evil")
    os.symlink(root + "/lib", root + "/inner")
    os.symlink(outside + "/f", root + "/lib/link-out")
    return root


@pytest.mark.parametrize("path, expected", [
    ("lib/site/a.py", "{r}/lib/site/a.py"),
    ("{r}/lib/site/../../bin/x", "{r}/bin/x"),
    ("lib/site/../../../etc/passwd", None),
    ("/etc/passwd", None),
    ("{r}", None),
    ("{r}-other/x", None),
    ("lib/site/evil/x.so", None),
    ("lib/site/evil/../ok.py", None),  # the kernel (and pip, and uv) follow evil before ..: outside
    ("inner/site/a.py", "{r}/inner/site/a.py"),
    ("lib/link-out", "{r}/lib/link-out"),
])
def test_confine(jail, path, expected):
    assert confine(path.format(r=jail), jail) == (expected.format(r=jail) if expected else None)


def test_confine_root_behind_symlink(tmp_path, jail):
    link = str(tmp_path / "link")
    os.symlink(jail, link)
    assert confine(link + "/lib/site/a.py", link) == link + "/lib/site/a.py"
    assert confine(link + "/lib/site/evil/a.py", link) is None


def test_real_path_agrees_with_realpath_and_resolves_each_folder_once(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f").write_text("x")
    (tmp_path / "elsewhere").mkdir()
    os.symlink(str(tmp_path / "elsewhere"), str(tmp_path / "a" / "link"))
    os.symlink("b/f", str(tmp_path / "a" / "file-link"))
    os.symlink("loop", str(tmp_path / "a" / "loop"))
    cache = {}
    paths = [str(tmp_path / p) for p in ("a/b/f", "a/b/absent", "a/link/x", "a/file-link", "a/loop", "a/b/../link/y",
                                         "a/./b/f", "a/b/")]
    assert [real_path(p, cache) for p in paths] == [os.path.realpath(p) for p in paths]
    assert cache[str(tmp_path / "a" / "b")] == os.path.realpath(str(tmp_path / "a" / "b"))


@pytest.mark.parametrize("link, expected", [
    ("/srv/wheels", "/srv/wheels"),
    ("wheels", "wheels"),
    ("file:///srv/my%20wheels", "/srv/my wheels"),
    ("file://localhost/srv/w", "/srv/w"),
    ("file://other-host/srv/w", None),
    ("https://example.invalid/simple", None),
])
def test_local_path(link, expected):
    assert local_path(link) == expected
