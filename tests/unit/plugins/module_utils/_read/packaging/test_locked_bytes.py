# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for locked_bytes: an installed RECORD against the RECORD inside the locked wheel, where it is at hand."""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import zipfile

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.distributions import read_distributions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.lock_file import (
    Lock, LockedPackage, LockedWheel)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging import locked_bytes
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.locked_bytes import BytesCheck, check_locked_bytes
from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import make_dist
from ansible_collections.gpuops.cuda_venv.tests.support.wheel_helpers import make_wheel, record_hash

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


def test_a_wheel_of_another_file_name_is_not_the_locked_one(tmp_path):
    """Mutations caught: ``filename == package.wheel.filename`` to ``<=``, ``>=`` and ``is not`` in _is_locked_wheel
    (wheels of the same name sorting before and after the locked file name would be taken for it)."""
    _wheel, dists = setup(tmp_path)
    other = tmp_path / "other"
    make_wheel(str(other), "demo", "0.9", files=dict(FILES))
    make_wheel(str(other), "demo", "1.1", files=dict(FILES))
    assert check_locked_bytes(lock_of(("sha256:" + "0" * 64,)), dists, [str(other)])["demo"].unchecked == (
        "no locked wheel at hand (the lock's location, the local find_links)")


def test_a_requirements_lock_takes_no_wheel_of_an_earlier_name_or_version(tmp_path):
    """Mutations caught: ``==`` to ``<=`` on the name and on the version in _is_locked_wheel (a wheel of a name or a
    version sorting before the pinned one would be a candidate)."""
    _wheel, dists = setup(tmp_path)
    other = tmp_path / "other"
    make_wheel(str(other), "demo", "0.9", files=dict(FILES))
    make_wheel(str(other), "aaa", "1.0", files=dict(FILES))
    lock = Lock("r.txt", "requirements", (LockedPackage("demo", "1.0", ("sha256:" + "0" * 64,), None, "line 1"),))
    assert check_locked_bytes(lock, dists, [str(other)])["demo"].unchecked == (
        "no locked wheel at hand (the lock's location, the local find_links)")


def test_an_installed_version_below_the_locked_one_is_not_compared(tmp_path):
    """Mutation caught: ``package.version != dist.version`` to ``<`` in check_locked_bytes (an older installed
    version would be compared with the newer locked wheel)."""
    wheel, dists = setup(tmp_path, version="0.9")
    assert check_locked_bytes(lock_of((sha256(wheel),)), dists, [os.path.dirname(wheel)]) == {}


def test_two_wheels_at_hand_that_are_not_the_locked_one_name_the_first(tmp_path):
    """Mutations caught: ``candidates[0]`` to ``candidates[1]`` and ``candidates[-1]`` in _check's message (the lock's
    own location comes first)."""
    wheel, dists = setup(tmp_path)
    own = tmp_path / "own"
    own_wheel = make_wheel(str(own), "demo", "1.0", files=dict(FILES))
    check = check_locked_bytes(lock_of(("sha256:" + "0" * 64,), location=own_wheel), dists, [os.path.dirname(wheel)])
    assert check["demo"].unchecked == "the wheel at hand (%s) is not the locked one: its sha256 is not the lock's" % own_wheel


def _wheel_with(tmp_path, members):
    """A wheel file named as the locked one holding exactly ``members`` ({name: bytes})."""
    folder = tmp_path / "crafted"
    folder.mkdir()
    path = str(folder / "demo-1.0-py3-none-any.whl")
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def test_a_wheel_with_no_record_or_two_is_not_read(tmp_path):
    """Mutations caught: ``len(names) != 1`` to ``<`` (two RECORDs, the first one read) and to ``>`` (none: an
    IndexError out of the module) in _wheel_record; ValueError taken out of _compare's handled errors."""
    _wheel, dists = setup(tmp_path)
    record = b"demo/__init__.py,,\n"
    for members, count in (({"demo/__init__.py": b"VALUE = 1\n"}, 0),
                           ({"demo-1.0.dist-info/RECORD": record, "demo_old-1.0.dist-info/RECORD": record}, 2)):
        shutil.rmtree(str(tmp_path / "crafted"), ignore_errors=True)
        path = _wheel_with(tmp_path, members)
        check = check_locked_bytes(lock_of((sha256(path),)), dists, [os.path.dirname(path)])["demo"]
        assert check.unchecked == "the locked wheel %s cannot be read: it has %d .dist-info/RECORD files" % (path, count)


def test_a_record_nested_deeper_than_the_wheels_root_is_not_its_own(tmp_path):
    """Mutation caught: ``n.count("/") == 1`` to ``>=`` in _wheel_record (a vendored package's dist-info inside the
    wheel would count as a second RECORD). ``<=`` is equivalent: a ``.dist-info/RECORD`` path has a slash."""
    files = dict(FILES, **{"demo/_vendor/dep-2.0.dist-info/RECORD": b"dep/__init__.py,,\n"})
    wheel, dists = setup(tmp_path, installed_files=files)
    os.remove(wheel)
    wheel = make_wheel(os.path.dirname(wheel), "demo", "1.0", files=files)
    check = check_locked_bytes(lock_of((sha256(wheel),)), read_distributions([str(tmp_path / "site")]),
                               [os.path.dirname(wheel)])["demo"]
    assert (check.unchecked, check.compared, check.count) == ("", 5, 0)


def test_a_record_at_the_size_limit_is_read_and_one_byte_more_is_not(tmp_path, monkeypatch):
    """Mutations caught: ``info.file_size > RECORD_LIMIT`` to ``==``, ``>=`` and ``is`` in _wheel_record."""
    wheel, dists = setup(tmp_path)
    with zipfile.ZipFile(wheel) as archive:
        size = archive.getinfo("demo-1.0.dist-info/RECORD").file_size
    assert size > 256  # not one of the small ints CPython shares: ``is`` cannot pass for ``==``
    monkeypatch.setattr(locked_bytes, "RECORD_LIMIT", size)
    assert check_locked_bytes(lock_of((sha256(wheel),)), dists, [os.path.dirname(wheel)])["demo"].unchecked == ""
    monkeypatch.setattr(locked_bytes, "RECORD_LIMIT", size - 1)
    assert check_locked_bytes(lock_of((sha256(wheel),)), dists, [os.path.dirname(wheel)])["demo"].unchecked == (
        "the locked wheel %s cannot be read: its RECORD is larger than %d bytes" % (wheel, size - 1))


def test_a_locked_wheel_that_cannot_be_read_is_named_not_raised(tmp_path):
    """Mutations caught: OSError (the wheel removed once its digest was taken), zipfile.BadZipFile (not a zip) and
    zlib.error (a corrupt RECORD stream) each taken out of _compare's handled errors."""
    wheel, dists = setup(tmp_path)
    digest = sha256(wheel)

    def removed_after_hashing(path):
        os.remove(path)
        return digest[len("sha256:"):]
    check = check_locked_bytes(lock_of((digest,)), dists, [os.path.dirname(wheel)], sha256=removed_after_hashing)["demo"]
    assert check.unchecked.startswith("the locked wheel %s cannot be read: [Errno 2] No such file or directory" % wheel)

    junk = _wheel_with(tmp_path, {})
    with open(junk, "wb") as handle:
        handle.write(b"not a zip at all")
    check = check_locked_bytes(lock_of((sha256(junk),)), dists, [os.path.dirname(junk)])["demo"]
    assert check.unchecked == "the locked wheel %s cannot be read: File is not a zip file" % junk

    deflated = make_wheel(str(tmp_path / "deflated"), "demo", "1.0", files=dict(FILES), compression=zipfile.ZIP_DEFLATED)
    with zipfile.ZipFile(deflated) as archive:
        info = archive.getinfo("demo-1.0.dist-info/RECORD")
    with open(deflated, "r+b") as handle:
        handle.seek(info.header_offset + 26)
        name_length, extra_length = struct.unpack("<HH", handle.read(4))
        handle.seek(info.header_offset + 30 + name_length + extra_length)
        handle.write(b"\xff")  # a deflate block of the reserved type 3
    check = check_locked_bytes(lock_of((sha256(deflated),)), dists, [os.path.dirname(deflated)])["demo"]
    assert check.unchecked.startswith("the locked wheel %s cannot be read: Error -3 while decompressing data" % deflated)


def test_other_bytes_are_named_whichever_way_their_digests_sort(tmp_path):
    """Mutation caught: ``installed.get(e.path) != (algorithm, digest)`` to ``>`` in _compare (only the files whose
    installed digest sorts after the wheel's would be named)."""
    def digest(data):
        return record_hash(data).partition("=")[2]

    wheel_value = FILES["demo/__init__.py"]
    variants = [b"VALUE = %d\n" % n for n in range(2, 40)]
    lower = next(v for v in variants if digest(v) < digest(wheel_value))
    higher = next(v for v in variants if digest(v) > digest(wheel_value))
    files = dict(FILES, **{"demo/a.py": wheel_value, "demo/b.py": wheel_value})
    wheel, _dists = setup(tmp_path)
    os.remove(wheel)
    wheel = make_wheel(os.path.dirname(wheel), "demo", "1.0", files=files)
    installed = dict(files, **{"demo/a.py": lower, "demo/b.py": higher, "demo-1.0.dist-info/WHEEL": WHEEL})
    make_dist(str(tmp_path / "site2"), "demo", "1.0", files=installed)
    check = check_locked_bytes(lock_of((sha256(wheel),)), read_distributions([str(tmp_path / "site2")]),
                               [os.path.dirname(wheel)])["demo"]
    assert (check.count, check.differing) == (2, ("demo/a.py", "demo/b.py"))


def test_a_folder_named_as_the_locked_wheel_is_no_candidate(tmp_path):
    """Mutation caught: ``and`` to ``or`` in _candidates (a folder of the locked wheel's name, not in the lock's own
    location, would be hashed: IsADirectoryError out of the module)."""
    _wheel, dists = setup(tmp_path)
    odd = tmp_path / "odd"
    (odd / "demo-1.0-py3-none-any.whl").mkdir(parents=True)
    assert check_locked_bytes(lock_of(("sha256:" + "0" * 64,)), dists, [str(odd)])["demo"].unchecked == (
        "no locked wheel at hand (the lock's location, the local find_links)")
