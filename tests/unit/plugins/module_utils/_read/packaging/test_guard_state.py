# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import os

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.guard_state import read_guard, uv_config_path


def test_uv_config_paths_as_uv_finds_them(tmp_path):
    assert uv_config_path("none", {}) is None
    assert uv_config_path("user", {"XDG_CONFIG_HOME": "/x"}) == "/x/uv/uv.toml"
    assert uv_config_path("user", {}) == os.path.join(os.path.expanduser("~"), ".config", "uv", "uv.toml")
    (tmp_path / "b" / "uv").mkdir(parents=True)
    (tmp_path / "b" / "uv" / "uv.toml").write_text("")
    dirs = "%s:%s" % (tmp_path / "a", tmp_path / "b")
    assert uv_config_path("system", {"XDG_CONFIG_DIRS": dirs}) == str(tmp_path / "b" / "uv" / "uv.toml")
    assert uv_config_path("system", {"XDG_CONFIG_DIRS": str(tmp_path / "a")}) == "/etc/uv/uv.toml"


def test_no_guard_and_an_unreadable_manifest(tmp_path):
    assert read_guard(str(tmp_path)).manifest is None and read_guard(str(tmp_path)).problem is None
    (tmp_path / "guard").mkdir()
    (tmp_path / "guard" / "manifest.json").write_text("{")
    found = read_guard(str(tmp_path))
    assert found.manifest is None and found.problem.startswith("%s/guard/manifest.json cannot be read" % tmp_path)
