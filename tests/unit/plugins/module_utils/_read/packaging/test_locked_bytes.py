# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for locked_bytes: an installed RECORD against the RECORD inside the locked wheel, where it is at hand."""

from __future__ import annotations

import hashlib
import os

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.distributions import read_distributions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.lock_file import (
    Lock, LockedPackage, LockedWheel)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.locked_bytes import BytesCheck, check_locked_bytes
from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import make_dist
from ansible_collections.gpuops.cuda_venv.tests.support.wheel_helpers import make_wheel

FILES = {"demo/__init__.py": b"VALUE = 1\n", "demo/lib/libdemo.so.1": b"\x7fELF demo"}
WHEEL = b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def sha256(path):
    with open(path, "rb") as handle:
        return "sha256:" + hashlib.sha256(handle.read()).hexdigest()


def setup(tmp_path, installed_files=None, version="1.0"):
    wheelhouse = tmp_path / "wheelhouse"
    wheel = make_wheel(str(wheelhouse), "demo", "1.0", files=dict(FILES))
    site = str(tmp_path / "site")
    installed = dict(FILES if installed_files is None else installed_files, **{"demo-%s.dist-info/WHEEL" % version: WHEEL})
    make_dist(site, "demo", version, files=installed)  # as an installer copies them
    return wheel, read_distributions([site])


def lock_of(hashes, wheel_name="demo-1.0-py3-none-any.whl", location=""):
    return Lock("pylock.toml", "pylock", (LockedPackage("demo", "1.0", hashes, LockedWheel(wheel_name, location, hashes),
                                                        "packages[0]"),))


def test_installed_from_the_locked_wheel_its_files_are_the_wheels(tmp_path):
    wheel, dists = setup(tmp_path)
    checks = check_locked_bytes(lock_of((sha256(wheel),)), dists, [os.path.dirname(wheel)])
    # its two files, METADATA and WHEEL; not RECORD nor INSTALLER, which the installer writes
    assert checks == {"demo": BytesCheck("demo", wheel, 4, (), 0)}


def test_a_file_of_other_bytes_is_named(tmp_path):
    wheel, dists = setup(tmp_path, dict(FILES, **{"demo/__init__.py": b"VALUE = 2\n"}))
    check = check_locked_bytes(lock_of((sha256(wheel),)), dists, [os.path.dirname(wheel)])["demo"]
    assert (check.count, check.differing) == (1, ("demo/__init__.py",))
    assert check.as_dict() == {"distribution": "demo", "wheel": wheel, "compared": 4, "differing": 1,
                               "examples": ["demo/__init__.py"]}


def test_the_locks_own_location_is_used_without_find_links(tmp_path):
    wheel, dists = setup(tmp_path)
    check = check_locked_bytes(lock_of((sha256(wheel),), location=wheel), dists, [])["demo"]
    assert (check.wheel, check.unchecked) == (wheel, "")


def test_nothing_is_compared_without_the_locked_bytes_at_hand(tmp_path):
    wheel, dists = setup(tmp_path)
    folder = [os.path.dirname(wheel)]
    other = "sha256:" + "0" * 64
    assert check_locked_bytes(lock_of((other,)), dists, folder)["demo"].unchecked == (
        "the wheel at hand (%s) is not the locked one: its sha256 is not the lock's" % wheel)
    assert check_locked_bytes(lock_of((sha256(wheel),)), dists, [str(tmp_path / "empty")])["demo"].as_dict() == {
        "distribution": "demo", "unchecked": "no locked wheel at hand (the lock's location, the local find_links)"}
    assert check_locked_bytes(lock_of(("sha512:" + "0" * 128,)), dists, folder)["demo"].unchecked == (
        "the lock pins no sha256 for it")
    assert check_locked_bytes(lock_of((sha256(wheel),)), dists, ["https://example.invalid/simple"])["demo"].unchecked


def test_another_installed_version_is_not_compared(tmp_path):
    wheel, dists = setup(tmp_path, version="2.0")
    assert check_locked_bytes(lock_of((sha256(wheel),)), dists, [os.path.dirname(wheel)]) == {}


def test_a_requirements_lock_finds_any_wheel_of_the_name_and_version(tmp_path):
    wheel, dists = setup(tmp_path)
    lock = Lock("r.txt", "requirements", (LockedPackage("demo", "1.0", (sha256(wheel),), None, "line 1"),))
    assert check_locked_bytes(lock, dists, [os.path.dirname(wheel)])["demo"].wheel == wheel


def test_folders_that_cannot_be_listed_and_distributions_not_locked_are_passed_over(tmp_path):
    """Mutations caught: ``continue`` to ``break`` in check_locked_bytes and in _candidates."""
    wheel, dists = setup(tmp_path)
    make_dist(str(tmp_path / "site"), "aaa-first", "1.0")  # sorted before demo, not locked
    dists = read_distributions([str(tmp_path / "site")])
    checks = check_locked_bytes(lock_of((sha256(wheel),)), dists, [str(tmp_path / "absent"), os.path.dirname(wheel)])
    assert list(checks) == ["demo"] and checks["demo"].wheel == wheel


def test_only_a_wheel_of_the_locked_name_and_version_is_a_candidate(tmp_path):
    """Mutations caught: ``and`` to ``or`` in _is_locked_wheel, ``return False`` to ``return True`` for a file that is
    not a wheel's name."""
    _wheel, dists = setup(tmp_path)
    other = tmp_path / "other"
    make_wheel(str(other), "demo", "2.0", files=dict(FILES))
    make_wheel(str(other), "other", "1.0", files=dict(FILES))
    (other / "junk.whl").write_bytes(b"not a wheel")
    lock = Lock("r.txt", "requirements", (LockedPackage("demo", "1.0", ("sha256:" + "0" * 64,), None, "line 1"),))
    assert check_locked_bytes(lock, dists, [str(other)])["demo"].unchecked == (
        "no locked wheel at hand (the lock's location, the local find_links)")


def test_the_files_an_installer_moves_or_writes_are_not_compared(tmp_path):
    """Mutation caught: ``return True`` to ``return False`` for a ``.data`` path in _generated (a script moved to
    bin/ and its shebang rewritten would be other bytes)."""
    wheelhouse = tmp_path / "wheelhouse"
    wheel = make_wheel(str(wheelhouse), "demo", "1.0", files=dict(FILES, **{"demo-1.0.data/scripts/demo-tool": b"#!python\n"}))
    site = str(tmp_path / "venv" / "lib" / "python3.12" / "site-packages")  # ../../../bin: the venv's bin
    make_dist(site, "demo", "1.0", files=dict(FILES, **{"demo-1.0.dist-info/WHEEL": WHEEL,
                                                        "../../../bin/demo-tool": b"#!/venv/bin/python\n"}))
    assert (tmp_path / "venv" / "bin" / "demo-tool").is_file()
    check = check_locked_bytes(lock_of((sha256(wheel),)), read_distributions([site]), [str(wheelhouse)])["demo"]
    assert (check.compared, check.count) == (4, 0)
