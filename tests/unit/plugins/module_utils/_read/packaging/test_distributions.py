# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for distributions: dist-info/egg-info reading, RECORD parsing, entry confinement.

Its helpers make_dist() and make_wheel() are in tests/support/dist_helpers.py.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.distributions import (
    _common_entry,
    _record_entry,
    Distribution,
    RecordEntry,
    entry_location,
    label_key,
    locate_entries,
    read_distributions,
)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.venv_paths import VenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import read_layout
from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import b64_sha256, make_dist, make_wheel, metadata_bytes, pip


@pytest.fixture
def site(tmp_path):
    path = tmp_path / "venv" / "lib" / "python3.12" / "site-packages"
    path.mkdir(parents=True)
    (tmp_path / "venv" / "pyvenv.cfg").write_text("version = 3.12.1\n")
    return str(path)


@pytest.fixture
def root(site):
    return os.path.dirname(os.path.dirname(os.path.dirname(site)))


def test_label_key():
    assert label_key("Typing__Extensions.x-Y 4.12.2") == "typing-extensions-x-y"
    assert label_key("nvidia-cudnn-cu12 9.10.2.21 (planned in this run)") == "nvidia-cudnn-cu12"
    assert label_key("torch") == "torch"


def test_read_dist_info(site):
    so = b"\x7fELF cudnn 9.10.2.21"
    info = make_dist(site, "nvidia-cudnn-cu12", "9.10.2.21", {"nvidia/cudnn/lib/libcudnn.so.9": so},
                     requires=["nvidia-cublas-cu12"], requested=True)
    with open(info + "/direct_url.json", "w") as handle:
        handle.write('{"url": "file:///w/x.whl"}')
    meta = metadata_bytes("nvidia-cudnn-cu12", "9.10.2.21", ["nvidia-cublas-cu12"])
    (dist,) = read_distributions([site])
    assert dist == Distribution(
        name="nvidia-cudnn-cu12",
        key="nvidia-cudnn-cu12",
        version="9.10.2.21",
        dist_info=info,
        site_packages=site,
        installer="pip",
        requested=True,
        direct_url=True,
        requires_dist=("nvidia-cublas-cu12",),
        entries=(
            RecordEntry("nvidia/cudnn/lib/libcudnn.so.9", "sha256", b64_sha256(so), len(so)),
            RecordEntry("nvidia_cudnn_cu12-9.10.2.21.dist-info/METADATA", "sha256", b64_sha256(meta), len(meta)),
            RecordEntry("nvidia_cudnn_cu12-9.10.2.21.dist-info/INSTALLER", "sha256", b64_sha256(b"pip\n"), 4),
            RecordEntry("nvidia_cudnn_cu12-9.10.2.21.dist-info/REQUESTED", "sha256", b64_sha256(b""), 0),
            RecordEntry("nvidia_cudnn_cu12-9.10.2.21.dist-info/RECORD", None, None, None),
        ),
        problems=(),
    )
    assert dist.label == "nvidia-cudnn-cu12 9.10.2.21"


def test_duplicates_kept_and_sorted(tmp_path, site):
    other = str(tmp_path / "venv" / "lib64" / "python3.12" / "site-packages")
    os.makedirs(other)
    make_dist(site, "nvidia-cudnn-cu12", "9.10.2.21")
    make_dist(site, "nvidia_cudnn_cu12", "9.1.0.70", installer=None)
    make_dist(other, "Nvidia.Cudnn-CU12", "9.10.2.21")
    make_dist(site, "aaa", "1")
    dists = read_distributions([site, other])
    assert [(d.key, d.version, d.dist_info) for d in dists] == [
        ("aaa", "1", site + "/aaa-1.dist-info"),
        ("nvidia-cudnn-cu12", "9.1.0.70", site + "/nvidia_cudnn_cu12-9.1.0.70.dist-info"),
        ("nvidia-cudnn-cu12", "9.10.2.21", site + "/nvidia_cudnn_cu12-9.10.2.21.dist-info"),
        ("nvidia-cudnn-cu12", "9.10.2.21", other + "/Nvidia_Cudnn_CU12-9.10.2.21.dist-info"),
    ]
    assert [d.installer for d in dists] == ["pip", None, "pip", "pip"]
    assert dists[3].name == "Nvidia.Cudnn-CU12"


def test_record_problems(site):
    record = (
        "good.py,sha256=abc,3\n"
        "\n"
        '"bad"x,sha256=abc,3\n'
        "no-hash.py,sha256,3\n"
        "padded.py,sha256=abc==,3\n"
        "odd-size.py,,x\n"
        "four.py,,1,extra\n"
        ",sha256=abc,3\n"
        "md.py,nohash=abc,1\n"
        "short.py\n"
    )
    make_dist(site, "demo", "1.0", record=record.encode())
    (dist,) = read_distributions([site])
    assert dist.problems == (
        "RECORD line 3: bad CSV: ',' expected after '\"'",
        "RECORD line 4: bad hash 'sha256'",
        "RECORD line 6: bad size 'x'",
        "RECORD line 7: 4 fields, expected 3",
        "RECORD line 8: empty path",
        "RECORD line 9: unknown hash algorithm 'nohash': file not verified by hash",
    )
    assert dist.entries == (
        RecordEntry("good.py", "sha256", "abc", 3),
        RecordEntry("no-hash.py", None, None, 3),
        RecordEntry("padded.py", "sha256", "abc", 3),
        RecordEntry("odd-size.py", None, None, None),
        RecordEntry("four.py", None, None, 1),
        RecordEntry("md.py", "nohash", "abc", 1),
        RecordEntry("short.py", None, None, None),
    )


@pytest.mark.parametrize("line, common", [
    # what pip and uv write: hashed payload, unhashed RECORD and .pyc, a script above site-packages, padding kept
    ("torch/__init__.py,sha256=Zm9vYmFy_-0,1234", True),
    ("torch-2.9.1.dist-info/RECORD,,", True),
    ("../../../bin/torchrun,sha256=YWJj==,229", True),
    ("nvidia/cu13/lib/libcudart.so.13,sha512=QUJD,0", True),
    (" é/ünïcode path.py,md5=eHl6,", True),
    ("a.py,sha256=abc=def,1", True),
    ("b.py,sha256=,2", False),
    ("c.py,nohash=abc,3", False),
    ("d.py,,x", False),
    ("d.py,,٣", False),  # a digit, but not an ASCII one
    ("e.py,,1,extra", False),
    ("e.py,sha256", False),
    (",sha256=abc,1", False),
    ("nul\x00.py,,", False),
])
def test_a_common_record_line_is_read_as_the_full_reading_reads_it(line, common):
    """The fast reading of a common RECORD line gives the full reading's entry; any other line is left to the full
    reading, which says what is wrong with it."""
    row = line.split(",")
    problems = []
    full = _record_entry(row, 1, problems)
    assert _common_entry(row) == (full if common else None)
    assert (problems == []) == common


def test_record_missing_and_not_utf8(site):
    info = make_dist(site, "demo", "1.0")
    os.unlink(info + "/RECORD")
    make_dist(site, "latin", "2.0", record=b"caf\xe9.py,,\n")
    missing, latin = read_distributions([site])
    assert (missing.problems, missing.entries) == (("RECORD is missing",), ())
    assert latin.problems == ("RECORD is not UTF-8",)
    # surrogateescape: the path gives back the exact bytes on disk.
    assert [os.fsencode(e.path) for e in latin.entries] == [b"caf\xe9.py"]


def test_metadata_not_utf8_keeps_headers(site):
    make_dist(site, "demo", "1.0", metadata=b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nSummary: caf\xe9\nRequires-Dist: x>1\n")
    (dist,) = read_distributions([site])
    assert (dist.name, dist.version, dist.requires_dist, dist.problems) == ("demo", "1.0", ("x>1",), ("METADATA is not UTF-8",))


def test_metadata_unusable_falls_back_to_folder(site):
    make_dist(site, "Bad.Name", "3.0", metadata=b"Metadata-Version: 2.1\nName: b\xe4d\n")
    info = make_dist(site, "gone", "4.0rc1")
    os.unlink(info + "/METADATA")
    bad, gone = read_distributions([site])
    assert (bad.name, bad.key, bad.version, bad.problems) == ("Bad_Name", "bad-name", "3.0", ("METADATA is not UTF-8",))
    assert (gone.name, gone.version, gone.requires_dist, gone.problems) == ("gone", "4.0rc1", (), ("METADATA is missing",))


def test_metadata_huge_is_read_bounded(site):
    text = b"Metadata-Version: 2.1\nName: big\nVersion: 1.0\nRequires-Dist: a\n Folded-On ; extra == 'x'\n\n" + b"d" * (2 * 1024 * 1024)
    make_dist(site, "big", "1.0", metadata=text)
    (dist,) = read_distributions([site])
    assert (dist.name, dist.version, dist.requires_dist) == ("big", "1.0", ("a Folded-On ; extra == 'x'",))
    assert dist.problems == ("METADATA larger than 1 MiB: read the first 1 MiB",)


def test_egg_info(site):
    egg = os.path.join(site, "legacy_pkg-0.5-py3.12.egg-info")
    os.makedirs(egg)
    with open(egg + "/PKG-INFO", "w") as handle:
        handle.write("Metadata-Version: 1.1\nName: legacy-pkg\nVersion: 0.5\n")
    with open(egg + "/installed-files.txt", "w") as handle:
        handle.write("../legacy/__init__.py\nPKG-INFO\n\n../../../../bin/legacy\n")
    with open(egg + "/requires.txt", "w") as handle:
        handle.write("six>=1\n\n[:python_version < \"3.10\"]\ntomli\n\n[test]\npytest\n")
    with open(os.path.join(site, "distutils_thing-1.0-py3.12.egg-info"), "w") as handle:
        handle.write("Metadata-Version: 1.0\nName: distutils-thing\nVersion: 1.0\n")
    thing, legacy = read_distributions([site])
    assert (legacy.name, legacy.version) == ("legacy-pkg", "0.5")
    assert legacy.entries == (
        RecordEntry("legacy/__init__.py", None, None, None),
        RecordEntry("legacy_pkg-0.5-py3.12.egg-info/PKG-INFO", None, None, None),
        RecordEntry("../../../bin/legacy", None, None, None),
    )
    assert legacy.requires_dist == ("six>=1", 'tomli; (python_version < "3.10")', 'pytest; extra == "test"')
    assert legacy.problems == ("egg-info: no RECORD",)
    assert (thing.name, thing.version, thing.entries) == ("distutils-thing", "1.0", ())
    assert thing.problems == ("egg-info: no RECORD", "installed-files.txt is missing")


def test_unlistable_site_packages(tmp_path):
    with pytest.raises(VenvError) as err:
        read_distributions([str(tmp_path / "nope")])
    assert str(err.value) == "cannot list %s: No such file or directory; check its permissions" % (tmp_path / "nope")


@pytest.mark.parametrize("written, expected", [
    ("nvidia/cudnn/lib/libcudnn.so.9", ("{s}/nvidia/cudnn/lib/libcudnn.so.9", None)),
    ("../../../bin/demo", ("{r}/bin/demo", None)),
    ("{r}/bin/abs-inside", ("{r}/bin/abs-inside", None)),
    ("../../../../etc/passwd", (None, "RECORD entry '../../../../etc/passwd' leaves the venv")),
    ("/etc/passwd", (None, "RECORD entry '/etc/passwd' leaves the venv")),
    ("evil/x.so", (None, "RECORD entry 'evil/x.so' leaves the venv")),
    ("evil/../fine.py", (None, "RECORD entry 'evil/../fine.py' leaves the venv")),  # evil is followed first
])
def test_entry_location(tmp_path, site, root, written, expected):
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(str(outside), site + "/evil")
    make_dist(site, "demo", "1.0")
    (dist,) = read_distributions([site])
    entry = RecordEntry(written.format(r=root), None, None, None)
    location, problem = expected
    assert entry_location(dist, entry, root) == (location.format(s=site, r=root) if location else None, problem)


def test_real_pip_install(tmp_path):
    """What the real pip writes: INSTALLER, REQUESTED, direct_url.json, scripts under ../../../bin."""
    pytest.importorskip("pip")
    wheels = str(tmp_path / "wheels")
    os.makedirs(wheels)
    make_wheel(wheels, "demo-pkg", "1.0", {"demo_pkg/__init__.py": b"def main():\n    return 0\n"}, scripts=["demo = demo_pkg:main"])
    by_path = make_wheel(wheels, "nvidia-cudnn-cu12", "9.10.2.21", {"nvidia/cudnn/lib/libcudnn.so.9": b"\x7fELF cu12"})
    venv = str(tmp_path / "venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    pip(venv, "install", "--no-index", "--find-links", wheels, "demo-pkg")
    pip(venv, "install", "--no-index", "--no-deps", by_path)
    layout = read_layout(venv)
    demo, cudnn = read_distributions(layout.site_packages)
    assert (demo.label, demo.installer, demo.requested, demo.direct_url, demo.problems) == ("demo-pkg 1.0", "pip", True, False, ())
    assert (cudnn.label, cudnn.direct_url) == ("nvidia-cudnn-cu12 9.10.2.21", True)
    locations = dict((e.path, entry_location(demo, e, venv)[0]) for e in demo.entries)
    assert locations["../../../bin/demo"] == venv + "/bin/demo"
    assert os.path.isfile(locations["../../../bin/demo"])
    pyc = [e for e in demo.entries if e.path.endswith(".pyc")]
    assert [(e.algorithm, e.digest, e.size) for e in pyc] == [(None, None, None)]


def test_locate_entries_agrees_with_entry_location_for_every_kind_of_entry(tmp_path):
    root = tmp_path / "venv"
    site = root / "lib" / "python3.12" / "site-packages"
    (site / "pkg" / "sub").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(str(outside), str(site / "link"))
    os.symlink("pkg", str(site / "inner-link"))
    paths = ["pkg/__init__.py", "pkg/sub/x.so", "pkg/./y", "pkg/../pkg/z", "pkg/..", "pkg/.", "pkg/", "../../../bin/tool",
             "../../../../outside/victim", "../../../../venv/escape-and-back", str(outside / "abs"), str(site / "pkg" / "abs"),
             "link/victim", "link/../pkg/w", "inner-link/v", "top.py"]
    folder = make_dist(str(site), "odd", "1.0", files={"pkg/__init__.py": b""})
    with open(os.path.join(folder, "RECORD"), "a") as handle:
        handle.write("".join("%s,,\n" % p for p in paths))
    [dist] = read_distributions([str(site)])
    located = locate_entries([dist], str(root))[dist.dist_info]
    assert [row[0] for row in located] == list(dist.entries)
    assert [row[1:] for row in located] == [entry_location(dist, entry, str(root)) for entry in dist.entries]
    # leaving: ../outside, the absolute outside path, link/victim, link/../pkg/w (the kernel follows link first)
    assert [row[0].path for row in located if row[1] is None] == [
        "../../../../outside/victim", str(outside / "abs"), "link/victim", "link/../pkg/w"]
