"""Fuzz the readers of untrusted bytes: RECORD, METADATA and dist-info names (read_distributions, entry_location,
check_all), ELF files (read_elf, read_elf_ident) and their .nv_fatbin (read_kernels).

Contract: dist-info reading never raises; every problem is recorded in ``Distribution.problems`` (each non-blank
RECORD line gives an entry or a problem naming its line). ELF reading returns an ElfInfo or raises ElfError or
OSError, nothing else.

``make test`` runs CUDA_VENV_FUZZ_EXAMPLES (default 100) examples per test; ``make fuzz`` runs many more and keeps
Hypothesis' example database in build/hypothesis so a failure replays.
"""

import os
import struct
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir
from hypothesis.database import DirectoryBasedExampleDatabase

from reliability_tools import ROOT

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.distributions import (
    RECORD_LIMIT, entry_location, read_distributions)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.elf import ElfError, ElfInfo, read_elf, read_elf_ident
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.fatbin import Kernels, read_kernels
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.record_check import check_all
from ansible_collections.gpuops.cuda_venv.tests.support.elf_helpers import GCC, build_so, synthetic_elf
from ansible_collections.gpuops.cuda_venv.tests.support.fatbin_helpers import PTX, SASS, build_fatbin_so, fatbin_bytes

EXAMPLES = int(os.environ.get("CUDA_VENV_FUZZ_EXAMPLES", "100"))
HOME = os.path.join(ROOT, "build", "hypothesis")
set_hypothesis_home_dir(HOME)  # Hypothesis' caches go to build/, not .hypothesis/ in the working directory
FUZZ = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
    database=DirectoryBasedExampleDatabase(os.path.join(HOME, "examples")) if EXAMPLES > 1000 else None,
)

# --- dist-info --------------------------------------------------------------------------------------------

PATHS = st.one_of(
    st.sampled_from(["pkg/__init__.py", "pkg/lib/libx.so.1", "../../../bin/tool", "/etc/passwd", "../../../../../../etc/passwd",
                     "pkg/../../outside", "pkg/./x", "", ".", "..", "pkg/", "link/x", "pkg-1.0.dist-info/RECORD",
                     "a,b", 'q"uote', "caf\u00e9.py", "\udce9.py", "nul\x00byte", "back\\slash"]),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=40),
)
HASHES = st.one_of(
    st.sampled_from(["", "sha256=", "sha256=AAAA", "md5", "=abc", "sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU",
                     "sha999=abc", "sha256==", "sha256=a=b"]),
    st.text(max_size=20),
)
SIZES = st.one_of(st.sampled_from(["", "0", "5", "-1", "1e3", " 7", "99999999999999999999", "0x10"]), st.text(max_size=8))


def _csv_field(text):
    return '"%s"' % text.replace('"', '""') if any(c in text for c in ',"\r\n') else text


ROW = st.builds(lambda p, h, s, extra: ",".join(_csv_field(x) for x in [p, h, s] + extra),
                PATHS, HASHES, SIZES, st.lists(st.text(max_size=5), max_size=2))
RECORD_TEXT = st.lists(st.one_of(ROW, st.text(max_size=60), st.just(""), st.just('"unterminated')), max_size=12)
RECORD_BYTES = st.one_of(
    RECORD_TEXT.map(lambda lines: "\n".join(lines).encode("utf-8", "surrogatepass")),
    st.binary(max_size=400),
    RECORD_TEXT.map(lambda lines: "\r\n".join(lines).encode("utf-8", "surrogatepass") + b"\xff\xfe"),
)


def _site_with(tmp, folder="fuzz-1.0.dist-info", record=None, metadata=None):
    site = os.path.join(tmp, "venv", "lib", "python3.12", "site-packages")
    dist_info = os.path.join(site, folder)
    os.makedirs(dist_info)
    os.makedirs(os.path.join(site, "pkg", "lib"))
    with open(os.path.join(site, "pkg", "__init__.py"), "wb") as handle:
        handle.write(b"")
    if record is not None:
        with open(os.path.join(dist_info, "RECORD"), "wb") as handle:
            handle.write(record)
    if metadata is not None:
        with open(os.path.join(dist_info, "METADATA"), "wb") as handle:
            handle.write(metadata)
    return os.path.join(tmp, "venv"), site


def _read_one(site):
    dists = read_distributions([site])
    assert len(dists) == 1
    dist = dists[0]
    assert all(isinstance(p, str) and p for p in dist.problems)
    assert isinstance(dist.name, str) and isinstance(dist.version, str)
    return dist


@FUZZ
@given(record=RECORD_BYTES)
def test_record_reading_never_raises_and_accounts_for_every_line(record):
    with tempfile.TemporaryDirectory() as tmp:
        root, site = _site_with(tmp, record=record, metadata=b"Name: fuzz\nVersion: 1.0\n")
        dist = _read_one(site)
        text = record.decode("utf-8", "surrogateescape")
        lines = [n for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        line_problems = {int(p.split()[2].rstrip(":")) for p in dist.problems if p.startswith("RECORD line ")}
        # Every non-blank line gave an entry, or a problem that names it and keeps the entry out.
        dropped = {n for n in line_problems if any(p.startswith("RECORD line %d: " % n) and ("bad CSV" in p or "empty path" in p or "NUL byte" in p)
                                                   for p in dist.problems)}
        assert len(dist.entries) + len(dropped) == len(lines)
        assert all(isinstance(e.path, str) and e.path for e in dist.entries)
        assert all(e.size is None or e.size >= 0 for e in dist.entries)
        cache = {}
        for entry in dist.entries:
            location, problem = entry_location(dist, entry, root, cache)
            if location is None:
                assert "leaves the venv" in problem
            else:
                assert location.startswith(root + os.sep)
        check_all([dist], root, "hash", workers=1)


METADATA_BYTES = st.one_of(
    st.binary(max_size=300),
    st.builds(lambda headers, body: ("".join("%s: %s\n" % h for h in headers) + "\n" + body).encode("utf-8", "surrogatepass"),
              st.lists(st.tuples(st.sampled_from(["Name", "Version", "Requires-Dist", "name", "VERSION", "X-Odd", "Name "]),
                                 st.text(max_size=30)), max_size=6),
              st.text(max_size=50)),
    st.builds(lambda name, raw: b"Name: " + name + b"\nVersion: 1\n\t" + raw, st.binary(max_size=20), st.binary(max_size=40)),
)


@FUZZ
@given(metadata=METADATA_BYTES, folder=st.one_of(
    st.just("fuzz-1.0.dist-info"),
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"), min_size=1, max_size=20).map(
        lambda s: s + ".dist-info")))
def test_metadata_and_folder_names_never_raise(metadata, folder):
    if folder in (".dist-info",):
        folder = "x.dist-info"
    with tempfile.TemporaryDirectory() as tmp:
        _root, site = _site_with(tmp, folder=folder, record=b"pkg/__init__.py,,0\n", metadata=metadata)
        dist = _read_one(site)
        try:
            metadata.decode("utf-8")
        except UnicodeDecodeError:
            assert "METADATA is not UTF-8" in dist.problems


def test_huge_record_is_cut_and_reported(tmp_path):
    """Just past the 64 MiB limit, in rows of about 64 KiB (a thousand rows parse in well under a second; the
    size, not the row count, is what the limit is about). The row length does not divide the limit, so the cut
    falls inside a row: that row is dropped, every row before it is read whole."""
    line = b"pkg/" + b"x" * (64 * 1024 - 12) + b".py,,0\n"
    assert RECORD_LIMIT % len(line) != 0
    rows = RECORD_LIMIT // len(line) + 1
    _root, site = _site_with(str(tmp_path), record=line * rows, metadata=b"Name: fuzz\nVersion: 1.0\n")
    dist = _read_one(site)
    assert dist.problems == ("RECORD larger than 64 MiB: read the first 64 MiB",)
    assert len(dist.entries) == rows - 1 == 1024
    assert {entry.path for entry in dist.entries} == {line.split(b",", maxsplit=1)[0].decode()}


def test_a_record_of_exactly_the_limit_is_read_whole(tmp_path):
    line = b"pkg/" + b"x" * (64 * 1024 - 12) + b".py,,0\n"
    pad = RECORD_LIMIT - (RECORD_LIMIT // len(line)) * len(line)
    last = b"pkg/" + b"y" * (pad - 11) + b".py,,0\n"
    record = line * (RECORD_LIMIT // len(line)) + last
    assert len(record) == RECORD_LIMIT
    _root, site = _site_with(str(tmp_path), record=record, metadata=b"Name: fuzz\nVersion: 1.0\n")
    dist = _read_one(site)
    assert dist.problems == ()
    assert len(dist.entries) == RECORD_LIMIT // len(line) + 1
    assert dist.entries[-1].path == last.split(b",", maxsplit=1)[0].decode()


# --- ELF --------------------------------------------------------------------------------------------------

_BASES = []


def elf_bases():
    """Real objects to mutate: a gcc-built library (when gcc exists) and hand-made ELFs of each class and order."""
    if not _BASES:
        if GCC:
            path = os.path.join(tempfile.mkdtemp(prefix="gpuops-fuzz-"), "libbase.so.1")
            build_so(path, soname="libbase.so.1", needed=("libm.so.6", "libdl.so.2"), runpath="$ORIGIN/../lib")
            with open(path, "rb") as handle:
                _BASES.append(handle.read())
        _BASES.extend([
            synthetic_elf(soname="libs.so.1", needed=("liba.so.1", "libb.so.2"), rpath="$ORIGIN"),
            synthetic_elf(elf_class=32, machine=3, soname="libs32.so.1", needed=("libc.so.6",)),
            synthetic_elf(little_endian=False, machine=22, soname="libbig.so.1", runpath="/x"),
        ])
    return _BASES


def _check_elf(path):
    try:
        info = read_elf(path)
    except (ElfError, OSError):
        pass
    else:
        assert isinstance(info, ElfInfo)
        assert all(isinstance(n, str) for n in info.needed)
        assert info.soname is None or isinstance(info.soname, str)
    try:
        read_elf_ident(path)
    except (ElfError, OSError):
        pass


MUTATIONS = st.lists(st.tuples(st.integers(min_value=0, max_value=1 << 16), st.integers(min_value=0, max_value=255)),
                     max_size=12)


@FUZZ
@given(base=st.integers(min_value=0, max_value=3), mutations=MUTATIONS, near_header=st.booleans(),
       cut=st.one_of(st.none(), st.integers(min_value=0, max_value=1 << 16)),
       words=st.lists(st.tuples(st.integers(min_value=0, max_value=512), st.sampled_from([0, 1, 0x7FFFFFFF, 0xFFFFFFFF])),
                      max_size=4))
def test_mutated_elf_files_give_elf_error_or_oserror_only(base, mutations, near_header, cut, words):
    bases = elf_bases()
    data = bytearray(bases[base % len(bases)])
    for offset, value in mutations:
        data[(offset % 256 if near_header else offset) % len(data)] = value
    for offset, value in words:  # header and program-header fields set to extreme values
        position = min(offset, len(data) - 4)
        data[position:position + 4] = value.to_bytes(4, "little")
    if cut is not None:
        data = data[:cut % (len(data) + 1)]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "lib.so")
        with open(path, "wb") as handle:
            handle.write(bytes(data))
        _check_elf(path)


@FUZZ
@given(data=st.one_of(st.binary(max_size=600), st.binary(max_size=600).map(lambda b: b"\x7fELF" + b),
                      st.builds(lambda c, d, rest: b"\x7fELF" + bytes([c, d, 1, 0]) + bytes(8) + rest,
                                st.integers(0, 3), st.integers(0, 3), st.binary(min_size=0, max_size=200))))
def test_random_bytes_give_elf_error_or_oserror_only(data):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "lib.so")
        with open(path, "wb") as handle:
            handle.write(data)
        _check_elf(path)


@pytest.mark.parametrize("kind", ["directory", "dangling-symlink", "symlink-loop"])
def test_non_files_give_oserror_or_elf_error(tmp_path, kind):
    path = tmp_path / "lib.so"
    if kind == "directory":
        path.mkdir()
    elif kind == "dangling-symlink":
        path.symlink_to(tmp_path / "absent")
    else:
        path.symlink_to(path)
    _check_elf(str(path))


# --- the bugs the fuzzers found, pinned ----------------------------------------------------------------------

@pytest.mark.parametrize("field", ["e_phoff", "p_offset"])
def test_offsets_beyond_any_file_are_an_elf_error(tmp_path, field):
    data = bytearray(synthetic_elf(soname="libx.so.1"))
    where = 32 if field == "e_phoff" else 64 + 56 + 8  # ELF64 header; PT_DYNAMIC is the second program header
    data[where:where + 8] = struct.pack("<Q", 1 << 63)
    path = tmp_path / "libx.so.1"
    path.write_bytes(bytes(data))
    with pytest.raises(ElfError):
        read_elf(str(path))


def test_record_path_with_a_nul_byte_is_a_problem_not_a_crash(tmp_path):
    root, site = _site_with(str(tmp_path), record=b"pkg/__init__.py,,0\npkg/\x00evil,,\n", metadata=b"Name: fuzz\nVersion: 1.0\n")
    dist = _read_one(site)
    check_all([dist], root, "hash", workers=1)
    assert any("RECORD line 2" in p for p in dist.problems)


# --- .nv_fatbin (the kernels reader) ----------------------------------------------------------------------

_FATBIN_BASE = []


def _fatbin_base():
    """A gcc-built object with a real .nv_fatbin (two containers, SASS and PTX): (bytes, section offset, size)."""
    if not _FATBIN_BASE:
        section = fatbin_bytes([(SASS, 80), (SASS, 90, 0x100011)], [(PTX, 90), (SASS, 100)])
        path = build_fatbin_so(os.path.join(tempfile.mkdtemp(prefix="gpuops-fuzz-"), "libk.so"), section)
        with open(path, "rb") as handle:
            data = handle.read()
        _FATBIN_BASE.append((data, data.index(section[:16]), len(section)))
    return _FATBIN_BASE[0]


@pytest.mark.skipif(GCC is None, reason="gcc is not installed")
@FUZZ
@given(mutations=MUTATIONS, in_section=st.booleans(), cut=st.one_of(st.none(), st.integers(min_value=0, max_value=1 << 16)),
       words=st.lists(st.tuples(st.integers(min_value=0, max_value=1 << 16),
                                st.sampled_from([0, 1, 16, 0x7FFFFFFF, 0xFFFFFFFF, 1 << 62, (1 << 63) - 1, (1 << 64) - 1])),
                      max_size=4))
def test_mutated_fatbin_objects_give_kernels_none_or_elf_error_only(mutations, in_section, cut, words):
    """read_kernels returns Kernels or None, or raises ElfError or OSError; section and header fields at extremes."""
    base, start, size = _fatbin_base()
    data = bytearray(base)
    for offset, value in mutations:
        data[(start + offset % size if in_section else offset) % len(data)] = value
    for offset, value in words:  # 64-bit fields (sizes, offsets) set to extreme values, in the section or anywhere
        position = min(start + offset % size if in_section else offset, len(data) - 8)
        data[position:position + 8] = value.to_bytes(8, "little")
    if cut is not None:
        data = data[:cut % (len(data) + 1)]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "libk.so")
        with open(path, "wb") as handle:
            handle.write(bytes(data))
        try:
            found = read_kernels(path)
        except (ElfError, OSError):
            return
        assert found is None or isinstance(found, Kernels)
