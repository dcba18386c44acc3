# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for wheel_paths: the paths a wheel writes (its RECORD, schemes, generated scripts) and the wheel an installer
picks; small wheels built here."""

from __future__ import annotations

import os

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.wheel_paths import (
    WheelError, pick_wheel, read_wheel)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.wheel_tags import supported_tags
from ansible_collections.gpuops.cuda_venv.tests.support.wheel_helpers import make_wheel


def test_read_wheel_maps_every_scheme_and_the_generated_scripts(tmp_path):
    wheel = make_wheel(str(tmp_path), "demo", "1.0", files={
        "demo/__init__.py": b"x = 1\n", "demo-1.0.data/scripts/demo-tool": b"#!python\n",
        "demo-1.0.data/data/share/demo.txt": b"d", "demo-1.0.data/headers/demo.h": b"h",
        "demo-1.0.data/purelib/demo_extra.py": b"y = 2\n"}, entry_points=b"[console_scripts]\ndemo = demo:main\n")
    root, site = "/venvs/v", "/venvs/v/lib/python3.12/site-packages"
    found = read_wheel(wheel, root, site, "3.12")
    assert (found.name, found.key, found.version, found.problems) == ("demo", "demo", "1.0", ())
    assert sorted(p.target for p in found.paths) == sorted([
        site + "/demo/__init__.py", root + "/bin/demo-tool", root + "/share/demo.txt",
        root + "/include/site/python3.12/demo/demo.h", site + "/demo_extra.py", root + "/bin/demo",
        site + "/demo-1.0.dist-info/METADATA", site + "/demo-1.0.dist-info/WHEEL",
        site + "/demo-1.0.dist-info/entry_points.txt", site + "/demo-1.0.dist-info/RECORD"])
    script = [p for p in found.paths if p.target == root + "/bin/demo"][0]
    assert (script.record, script.digest) == ("entry point script demo", None)


def test_read_wheel_reports_paths_leaving_the_venv(tmp_path):
    record = b"../../../../etc/evil,sha256=x,1\ndemo/__init__.py,,\n"
    wheel = make_wheel(str(tmp_path), "demo", "1.0", files={"demo/__init__.py": b""}, record=record)
    found = read_wheel(wheel, "/venvs/v", "/venvs/v/lib/python3.12/site-packages", "3.12")
    assert found.problems == ("RECORD entry '../../../../etc/evil' leaves the venv",)
    assert [p.record for p in found.paths] == ["demo/__init__.py"]


def test_pick_wheel_takes_the_highest_allowed_version_with_a_supported_tag(tmp_path):
    folder = str(tmp_path)
    for version in ("1.0", "1.2", "2.0rc1"):
        make_wheel(folder, "demo", version)
    make_wheel(folder, "demo", "1.5", tag="cp27-cp27mu-manylinux1_x86_64")  # never for Python 3
    tags = supported_tags("3.12")
    assert os.path.basename(pick_wheel("demo", [folder], tags)) == "demo-1.2-py3-none-any.whl"
    assert os.path.basename(pick_wheel("Demo<1.2", [folder], tags)) == "demo-1.0-py3-none-any.whl"
    assert os.path.basename(pick_wheel("demo>=2.0rc1", [folder], tags)) == "demo-2.0rc1-py3-none-any.whl"
    assert pick_wheel("demo==1.5", [folder], tags) is None
    assert pick_wheel("other", [folder, str(tmp_path / "absent")], tags) is None


def test_a_file_that_is_not_a_wheel_is_a_wheel_error(tmp_path):
    bad = tmp_path / "demo-1.0-py3-none-any.whl"
    bad.write_bytes(b"not a zip")
    with pytest.raises(WheelError) as caught:
        read_wheel(str(bad), "/venvs/v", "/venvs/v/lib/python3.12/site-packages", "3.12")
    assert isinstance(caught.value, CudaVenvError)
    assert str(caught.value) == "cannot read wheel %s: File is not a zip file" % bad
