# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for loader: the ld.so search model, checked against the real loader on gcc-built objects.

Every object here has a "libgpo_" name that no system cache knows, LD_LIBRARY_PATH
is cleared for the real loader, and the model gets a cache built in the test,
so a system CUDA (or anything else in the machine's ld.so.cache) cannot interfere.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.elf import EM_AARCH64, host_identity, read_elf
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.loader import (
    LoadedObject, LoadError, LoaderConfig, Resolution, build_config, default_dirs_fallback, expand_tokens,
    lib_token_for, parse_ld_so_help, parse_ld_so_hwcaps, parse_ld_so_platform, parse_ldconfig_p,
    resolve_object, simulate_load, split_ld_library_path, split_path)
from ansible_collections.gpuops.cuda_venv.tests.support.elf_helpers import (
    build_program, build_so, real_load, requires_gcc, run_program, synthetic_elf, under)

NOT_FOUND = "cannot open shared object file: No such file or directory"
HOST = host_identity()


def _config(**changes):
    values = dict(ld_library_path=(), cache={}, default_dirs=(), lib_token="lib/x86_64-linux-gnu",
                  platform_token="x86_64")
    values.update(changes)
    return LoaderConfig(**values)


def _lib(directory, soname, **kwargs):
    return build_so(os.path.join(str(directory), soname), soname=soname, **kwargs)


def _agree_with_real_loader(root, entries, result, env=None):
    """The model's loaded set (under root) and errors equal what ld.so really does."""
    errors, mapped = real_load(entries, env=env)
    assert under(root, mapped) == under(root, result.order)
    firsts = {}
    for error in result.errors:
        firsts.setdefault(error.entry, error.message)
    assert errors == [firsts[e] for e in entries if e in firsts]


# ---------------------------------------------------------------- RPATH / RUNPATH semantics

@requires_gcc
def test_rpath_is_inherited_down_the_chain(tmp_path):
    _lib(tmp_path / "dir1", "libgpo_c.so.1")
    _lib(tmp_path / "dir2", "libgpo_b.so.1", needed=("libgpo_c.so.1",))
    a = _lib(tmp_path / "app", "libgpo_a.so.1", needed=("libgpo_b.so.1",), rpath="$ORIGIN/../dir1:$ORIGIN/../dir2")
    result = simulate_load([a], _config())
    app = str(tmp_path / "app")
    b, c = app + "/../dir2/libgpo_b.so.1", app + "/../dir1/libgpo_c.so.1"
    assert result.order == [a, b, c]
    assert result.resolutions == {
        a: [Resolution("libgpo_b.so.1", b, "rpath", None, (app + "/../dir1", app + "/../dir2"))],
        b: [Resolution("libgpo_c.so.1", c, "rpath", None, (app + "/../dir1",))],
        c: [],
    }
    assert result.objects[c] == LoadedObject(c, read_elf(c), b)
    assert result.errors == [] and result.unloaded == []
    _agree_with_real_loader(tmp_path, [a], result)


@requires_gcc
def test_runpath_is_not_inherited(tmp_path):
    _lib(tmp_path / "dir1", "libgpo_c.so.1")
    _lib(tmp_path / "dir2", "libgpo_b.so.1", needed=("libgpo_c.so.1",))
    a = _lib(tmp_path / "app", "libgpo_a.so.1", needed=("libgpo_b.so.1",), runpath="$ORIGIN/../dir1:$ORIGIN/../dir2")
    default = str(tmp_path / "default")
    result = simulate_load([a], _config(default_dirs=(default,)))
    b = str(tmp_path / "app") + "/../dir2/libgpo_b.so.1"
    assert result.resolutions[b] == [
        Resolution("libgpo_c.so.1", None, "missing", "libgpo_c.so.1: " + NOT_FOUND, (default,))]
    assert result.errors == [LoadError(a, b, "libgpo_c.so.1", "libgpo_c.so.1: " + NOT_FOUND)]
    assert result.order == [] and result.unloaded == [a, b]  # dlopen unloads what a failed call loaded
    _agree_with_real_loader(tmp_path, [a], result)


@requires_gcc
def test_rpath_is_ignored_when_runpath_is_present(tmp_path):
    _lib(tmp_path / "r", "libgpo_b.so.1")
    a = _lib(tmp_path / "app", "libgpo_a.so.1", needed=("libgpo_b.so.1",), rpath="$ORIGIN/../r",
             runpath="$ORIGIN/../u")
    assert (read_elf(a).rpath, read_elf(a).runpath) == ("$ORIGIN/../r", "$ORIGIN/../u")
    result = simulate_load([a], _config())
    assert result.resolutions[a] == [Resolution("libgpo_b.so.1", None, "missing", "libgpo_b.so.1: " + NOT_FOUND,
                                                (str(tmp_path / "app") + "/../u",))]
    _agree_with_real_loader(tmp_path, [a], result)
    _lib(tmp_path / "u", "libgpo_b.so.1")
    result = simulate_load([a], _config())
    assert [(r.via, r.path) for r in result.resolutions[a]] == [
        ("runpath", str(tmp_path / "app") + "/../u/libgpo_b.so.1")]
    _agree_with_real_loader(tmp_path, [a], result)


@requires_gcc
def test_a_link_with_runpath_adds_nothing_but_the_chain_goes_on(tmp_path):
    """A (RPATH dir1) -> B (RUNPATH elsewhere) -> C (no paths) -> D: D comes from A's RPATH."""
    _lib(tmp_path / "dir1", "libgpo_d.so.1")
    _lib(tmp_path / "dir1", "libgpo_c.so.1", needed=("libgpo_d.so.1",))
    _lib(tmp_path / "dir2", "libgpo_b.so.1", needed=("libgpo_c.so.1",), runpath="$ORIGIN/../dir1")
    a = _lib(tmp_path / "app", "libgpo_a.so.1", needed=("libgpo_b.so.1",), rpath="$ORIGIN/../dir2:$ORIGIN/../dir1")
    result = simulate_load([a], _config())
    c = str(tmp_path / "app") + "/../dir2/../dir1/libgpo_c.so.1"
    assert [(r.soname, r.via) for r in result.resolutions[c]] == [("libgpo_d.so.1", "rpath")]
    _agree_with_real_loader(tmp_path, [a], result)


# ---------------------------------------------------------------- search order

def _place(tmp_path, where, name="libgpo_x.so.1"):
    """Build one library and copy it into the directories named in ``where``."""
    source = _lib(tmp_path / "src", name)
    dirs = {step: str(tmp_path / step) for step in ("rpath", "ld_library_path", "runpath", "cache", "default")}
    for step in where:
        os.makedirs(dirs[step], exist_ok=True)
        shutil.copy(source, os.path.join(dirs[step], name))
    config = _config(ld_library_path=(dirs["ld_library_path"],), default_dirs=(dirs["default"],),
                     cache={name: (os.path.join(dirs["cache"], name),)})
    return dirs, config


@requires_gcc
@pytest.mark.parametrize("where, via", [
    (("rpath", "ld_library_path", "cache", "default"), "rpath"),
    (("ld_library_path", "cache", "default"), "ld_library_path"),
    (("cache", "default"), "cache"),
    (("default",), "default"),
    ((), "missing"),
])
def test_search_order_for_an_object_with_rpath(tmp_path, where, via):
    dirs, config = _place(tmp_path, where)
    a = _lib(tmp_path / "app", "libgpo_a.so.1", needed=("libgpo_x.so.1",), rpath="$ORIGIN/../rpath")
    result = simulate_load([a], config)
    (resolution,) = result.resolutions[a]
    assert resolution.via == via
    rpath_dir = str(tmp_path / "app") + "/../rpath"
    expected_path = {"rpath": rpath_dir}.get(via, dirs.get(via))
    assert resolution.path == (expected_path + "/libgpo_x.so.1" if via != "missing" else None)
    if via in ("rpath", "ld_library_path", "missing"):  # what the real loader can be pointed at
        _agree_with_real_loader(tmp_path, [a], result, env={"LD_LIBRARY_PATH": dirs["ld_library_path"]})


@requires_gcc
@pytest.mark.parametrize("where, via", [
    (("ld_library_path", "runpath", "cache", "default"), "ld_library_path"),
    (("runpath", "cache", "default"), "runpath"),
    (("cache", "default"), "cache"),
    (("default",), "default"),
])
def test_search_order_for_an_object_with_runpath(tmp_path, where, via):
    dirs, config = _place(tmp_path, where)
    a = _lib(tmp_path / "app", "libgpo_a.so.1", needed=("libgpo_x.so.1",), runpath="$ORIGIN/../runpath")
    result = simulate_load([a], config)
    (resolution,) = result.resolutions[a]
    expected_dir = str(tmp_path / "app") + "/../runpath" if via == "runpath" else dirs[via]
    assert (resolution.via, resolution.path) == (via, expected_dir + "/libgpo_x.so.1")
    if via in ("ld_library_path", "runpath"):
        _agree_with_real_loader(tmp_path, [a], result, env={"LD_LIBRARY_PATH": dirs["ld_library_path"]})


@requires_gcc
def test_searched_lists_directories_in_order_once(tmp_path):
    a = _lib(tmp_path / "app", "libgpo_a.so.1", needed=("libgpo_x.so.1",), rpath="$ORIGIN/r1::$ORIGIN/r1/:$LIB/q")
    config = _config(ld_library_path=(str(tmp_path / "llp"), str(tmp_path / "app") + "/r1"),
                     default_dirs=("/nonexistent/gpuops",))
    (resolution,) = resolve_object(a, read_elf(a), config)
    app = str(tmp_path / "app")
    assert resolution == Resolution("libgpo_x.so.1", None, "missing", "libgpo_x.so.1: " + NOT_FOUND,
                                    (app + "/r1", "", "lib/x86_64-linux-gnu/q", str(tmp_path / "llp"),
                                     "/nonexistent/gpuops"))


@requires_gcc
def test_cache_uses_its_first_entry_only(tmp_path):
    good = _lib(tmp_path / "good", "libgpo_x.so.1")
    a = _lib(tmp_path / "app", "libgpo_a.so.1", needed=("libgpo_x.so.1",))
    config = _config(cache={"libgpo_x.so.1": (str(tmp_path / "stale/libgpo_x.so.1"), good)})
    assert resolve_object(a, read_elf(a), config)[0].via == "missing"
    config = _config(cache={"libgpo_x.so.1": (good, str(tmp_path / "stale/libgpo_x.so.1"))})
    assert resolve_object(a, read_elf(a), config)[0] == Resolution("libgpo_x.so.1", good, "cache", None, ())


@requires_gcc
def test_program_rpath_ends_the_chain(tmp_path):
    program = build_program(str(tmp_path / "bin" / "prog"), rpath="$ORIGIN/../exelib")
    _lib(tmp_path / "exelib", "libgpo_e.so.1")
    a = _lib(tmp_path / "app", "libgpo_a.so.1", needed=("libgpo_e.so.1",))
    r = _lib(tmp_path / "app", "libgpo_r.so.1", needed=("libgpo_e.so.1",), runpath="$ORIGIN")
    result = simulate_load([a, r], _config(), executable=program)
    exe_dir = str(tmp_path / "bin")
    assert result.order[0] == program
    assert result.resolutions[a] == [
        Resolution("libgpo_e.so.1", exe_dir + "/../exelib/libgpo_e.so.1", "rpath", None, (exe_dir + "/../exelib",))]
    # A RUNPATH in the requester switches off every RPATH, the program's too: but libgpo_e is loaded by now.
    assert [res.via for res in result.resolutions[r]] == ["loaded"]
    errors, mapped = run_program(program, [a, r])
    assert errors == [] and under(tmp_path, mapped) == under(tmp_path, result.order)
    result = simulate_load([r], _config(), executable=program)
    assert result.errors == [LoadError(r, r, "libgpo_e.so.1", "libgpo_e.so.1: " + NOT_FOUND)]
    errors, mapped = run_program(program, [r])
    assert errors == ["libgpo_e.so.1: " + NOT_FOUND] and under(tmp_path, mapped) == under(tmp_path, result.order)


# ---------------------------------------------------------------- tokens and paths

@pytest.mark.parametrize("entry, expected", [
    ("$ORIGIN/../../nvidia/cudnn/lib", "/v/torch/lib/../../nvidia/cudnn/lib"),
    ("${ORIGIN}/x", "/v/torch/lib/x"),
    ("$ORIGIN", "/v/torch/lib"),
    ("$ORIGINAL/x", "$ORIGINAL/x"),  # not a token: followed by an identifier character
    ("${ORIGIN/x", "${ORIGIN/x"),
    ("/opt/$LIB/x", "/opt/lib/x86_64-linux-gnu/x"),
    ("/opt/${LIB}/$PLATFORM/${PLATFORM}", "/opt/lib/x86_64-linux-gnu/x86_64/x86_64"),
    ("$FOO/lib", "$FOO/lib"),
    ("/usr/lib", "/usr/lib"),
])
def test_expand_tokens(entry, expected):
    assert expand_tokens(entry, "/v/torch/lib", _config()) == expected


def test_expand_tokens_without_a_value_discards_the_entry():
    assert expand_tokens("$ORIGIN/x", None, _config()) is None
    assert expand_tokens("/opt/$LIB", "/o", _config(lib_token="")) is None
    assert expand_tokens("/opt/${PLATFORM}", "/o", _config(platform_token="")) is None


def test_split_path_and_ld_library_path():
    assert split_path("$ORIGIN::/x") == ("$ORIGIN", "", "/x")
    assert split_path("/a;/b") == ("/a;/b",)
    assert split_ld_library_path("/a;/b::/c") == ("/a", "/b", "", "/c")
    assert split_ld_library_path("") == ()
    assert split_ld_library_path(None) == ()


@requires_gcc
def test_origin_paths_stay_as_the_loader_builds_them(tmp_path):
    _lib(tmp_path / "nvidia/cudnn/lib", "libgpo_cudnn.so.9")
    ext = _lib(tmp_path / "torch/lib", "libgpo_torch.so", needed=("libgpo_cudnn.so.9",),
               rpath="$ORIGIN/../../nvidia/cudnn/lib/")
    (resolution,) = resolve_object(ext, read_elf(ext), _config())
    assert resolution.path == str(tmp_path / "torch/lib") + "/../../nvidia/cudnn/lib/libgpo_cudnn.so.9"


@requires_gcc
def test_needed_with_a_slash_is_opened_directly(tmp_path):
    _lib(tmp_path / "app/sub", "libgpo_d.so")
    a = _lib(tmp_path / "app", "libgpo_a.so.1", needed=("$ORIGIN/sub/libgpo_d.so",))
    result = simulate_load([a], _config())
    direct = str(tmp_path / "app") + "/sub/libgpo_d.so"
    assert result.resolutions[a] == [Resolution("$ORIGIN/sub/libgpo_d.so", direct, "direct", None, ())]
    _agree_with_real_loader(tmp_path, [a], result)
    os.remove(direct)
    result = simulate_load([a], _config())
    assert result.errors == [LoadError(a, a, "$ORIGIN/sub/libgpo_d.so", direct + ": " + NOT_FOUND)]
    _agree_with_real_loader(tmp_path, [a], result)


@requires_gcc
def test_hwcaps_subdirectory_comes_before_its_directory(tmp_path):
    plain = _lib(tmp_path / "lib", "libgpo_h.so.1")
    os.makedirs(str(tmp_path / "lib/glibc-hwcaps/x86-64-v2"))
    better = str(tmp_path / "lib/glibc-hwcaps/x86-64-v2/libgpo_h.so.1")
    shutil.copy(plain, better)
    a = _lib(tmp_path / "app", "libgpo_a.so.1", needed=("libgpo_h.so.1",), rpath=str(tmp_path / "lib"))
    config = _config(hwcaps_subdirs=("glibc-hwcaps/x86-64-v3", "glibc-hwcaps/x86-64-v2"))
    result = simulate_load([a], config)
    assert [(r.path, r.searched) for r in result.resolutions[a]] == [(better, (str(tmp_path / "lib"),))]
    assert simulate_load([a], _config()).resolutions[a][0].path == plain
    if "glibc-hwcaps/x86-64-v2" in _host_ld_so_hwcaps():
        _agree_with_real_loader(tmp_path, [a], result)


def _host_ld_so_hwcaps():
    ld_so = "/lib64/ld-linux-x86-64.so.2"
    if HOST != (64, True, 62) or not os.path.exists(ld_so):
        return ()
    proc = subprocess.run([ld_so, "--help"], capture_output=True, text=True, check=False)
    return parse_ld_so_hwcaps(proc.stdout)


# ---------------------------------------------------------------- what is already loaded

@requires_gcc
def test_loaded_and_preloaded_objects_answer_by_name(tmp_path):
    a = _lib(tmp_path / "app", "libgpo_a.so.1", needed=("libgpo_b.so.1",))
    b = _lib(tmp_path / "elsewhere", "libgpo_b.so.1")
    loaded = simulate_load([b, a], _config())  # b, loaded by an earlier entry point, answers to its soname
    assert loaded.order == [b, a]
    assert loaded.resolutions[a] == [Resolution("libgpo_b.so.1", b, "loaded", None, ())]
    preloaded = simulate_load([a], _config(), preloaded={"libgpo_b.so.1": "/elsewhere/libgpo_b.so.1"})
    assert preloaded.order == [a]
    assert preloaded.resolutions[a] == [Resolution("libgpo_b.so.1", "/elsewhere/libgpo_b.so.1", "preload", None, ())]


@requires_gcc
def test_second_entry_point_reuses_the_library_loaded_by_soname(tmp_path):
    """The file name differs from the SONAME: a later NEEDED of the SONAME still matches, as in glibc."""
    build_so(str(tmp_path / "one/libgpo_s.so"), soname="libgpo_s.so.1")
    _lib(tmp_path / "two", "libgpo_s.so.1")
    e1 = _lib(tmp_path / "app", "libgpo_e1.so", needed=("libgpo_s.so",), rpath="$ORIGIN/../one")
    e2 = _lib(tmp_path / "app", "libgpo_e2.so", needed=("libgpo_s.so.1",), rpath="$ORIGIN/../two")
    result = simulate_load([e1, e2], _config())
    first = str(tmp_path / "app") + "/../one/libgpo_s.so"
    assert result.resolutions[e2] == [Resolution("libgpo_s.so.1", first, "loaded", None, ())]
    assert result.order == [e1, first, e2]
    _agree_with_real_loader(tmp_path, [e1, e2], result)


@requires_gcc
def test_one_file_under_two_names_is_loaded_once(tmp_path):
    real = build_so(str(tmp_path / "x/libgpo_f.so.1"), soname="libgpo_fx.so")
    os.makedirs(str(tmp_path / "y"))
    os.symlink(real, str(tmp_path / "y/libgpo_f2.so"))
    e1 = _lib(tmp_path / "app", "libgpo_e1.so", needed=("libgpo_f.so.1",), rpath=str(tmp_path / "x"))
    e2 = _lib(tmp_path / "app", "libgpo_e2.so", needed=("libgpo_f2.so",), rpath=str(tmp_path / "y"))
    result = simulate_load([e1, e2], _config())
    assert result.order == [e1, real, e2]
    assert result.resolutions[e2] == [Resolution("libgpo_f2.so", real, "rpath", None, (str(tmp_path / "y"),))]
    _agree_with_real_loader(tmp_path, [e1, e2], result)


# ---------------------------------------------------------------- bad candidates

def _patched(source, target, offset, fmt, value):
    data = bytearray(open(source, "rb").read())
    struct.pack_into(fmt, data, offset, value)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "wb") as handle:
        handle.write(bytes(data))


@requires_gcc
def test_wrong_class_and_wrong_machine_candidates_are_skipped(tmp_path):
    good = _lib(tmp_path / "d64", "libgpo_w.so.1")
    os.makedirs(str(tmp_path / "d32"))
    with open(str(tmp_path / "d32/libgpo_w.so.1"), "wb") as handle:
        handle.write(synthetic_elf(32, True, 3, soname="libgpo_w.so.1"))
    _patched(good, str(tmp_path / "arm/libgpo_w.so.1"), 18, "<H", EM_AARCH64)
    a = _lib(tmp_path / "app", "libgpo_a.so.1", needed=("libgpo_w.so.1",), rpath="%s/d32:%s/arm:%s/d64" % ((tmp_path,) * 3))
    result = simulate_load([a], _config())
    assert [(r.path, r.via, r.error) for r in result.resolutions[a]] == [(good, "rpath", None)]
    _agree_with_real_loader(tmp_path, [a], result)
    os.remove(good)
    result = simulate_load([a], _config())
    assert result.errors[0].message == "libgpo_w.so.1: wrong ELF class: ELFCLASS32"
    _agree_with_real_loader(tmp_path, [a], result)
    os.remove(str(tmp_path / "d32/libgpo_w.so.1"))
    result = simulate_load([a], _config())
    assert result.errors[0].message == "libgpo_w.so.1: " + NOT_FOUND
    _agree_with_real_loader(tmp_path, [a], result)


def _zero_bytes(good, bad):
    open(bad, "wb").close()


def _text(good, bad):
    with open(bad, "w") as handle:
        handle.write("this text is long enough for a whole ELF header, yet it is not one\n")


def _big_endian(good, bad):
    _patched(good, bad, 5, "B", 2)


def _relocatable(good, bad):
    _patched(good, bad, 16, "<H", 1)


def _bad_osabi(good, bad):
    _patched(good, bad, 7, "B", 9)


@requires_gcc
@pytest.mark.parametrize("make_bad, reason", [
    (_zero_bytes, "file too short"),
    (_text, "invalid ELF header"),
    (_big_endian, "ELF file data encoding not little-endian"),
    (_relocatable, "only ET_DYN and ET_EXEC can be loaded"),
    (_bad_osabi, "ELF file OS ABI invalid"),
])
def test_an_invalid_candidate_stops_the_search(tmp_path, make_bad, reason):
    if HOST[1] is not True:
        pytest.skip("the byte-order case is written for little-endian hosts")
    good = _lib(tmp_path / "good", "libgpo_n.so.2")
    bad = str(tmp_path / "bad/libgpo_n.so.2")
    os.makedirs(os.path.dirname(bad), exist_ok=True)
    make_bad(good, bad)
    a = _lib(tmp_path / "app", "libgpo_a.so.1", needed=("libgpo_n.so.2",), rpath="%s/bad:%s/good" % (tmp_path, tmp_path))
    result = simulate_load([a], _config())
    message = "%s: %s" % (bad, reason)
    assert result.resolutions[a] == [Resolution("libgpo_n.so.2", bad, "rpath", message, (str(tmp_path / "bad"),))]
    assert result.errors == [LoadError(a, a, "libgpo_n.so.2", message)]
    _agree_with_real_loader(tmp_path, [a], result)


@requires_gcc
def test_entry_point_errors_are_recorded(tmp_path):
    empty = str(tmp_path / "_C.cpython-312-x86_64-linux-gnu.so")
    open(empty, "wb").close()
    absent = str(tmp_path / "absent.so")
    result = simulate_load([empty, absent], _config())
    assert result.errors == [LoadError(empty, None, empty, empty + ": file too short"),
                             LoadError(absent, None, absent, absent + ": " + NOT_FOUND)]
    assert result.order == [] and result.resolutions == {}
    _agree_with_real_loader(tmp_path, [empty, absent], result)


# ---------------------------------------------------------------- whole graphs

def _three_levels(root):
    site = root / "site-packages"
    _lib(site / "nvidia/bot/lib", "libgpo_bot.so.3")
    _lib(site / "nvidia/mid/lib", "libgpo_mid.so.2", needed=("libgpo_bot.so.3",), runpath="$ORIGIN:$ORIGIN/../../bot/lib")
    _lib(site / "pkg/lib", "libgpo_side.so.1")
    _lib(site / "pkg/lib", "libgpo_top.so.1", needed=("libgpo_mid.so.2", "libgpo_side.so.1"),
         runpath="$ORIGIN/../../nvidia/mid/lib:$ORIGIN")
    ext = build_so(str(site / "pkg/_ext.cpython-312-x86_64-linux-gnu.so"), needed=("libgpo_top.so.1",),
                   rpath="$ORIGIN/lib")
    return site, ext


@requires_gcc
def test_simulate_load_of_a_three_level_graph_matches_the_real_loader(tmp_path):
    site, ext = _three_levels(tmp_path)
    result = simulate_load([ext], _config())
    pkg = str(site / "pkg")
    top, side = pkg + "/lib/libgpo_top.so.1", pkg + "/lib/libgpo_side.so.1"
    mid = pkg + "/lib/../../nvidia/mid/lib/libgpo_mid.so.2"
    bot = pkg + "/lib/../../nvidia/mid/lib/../../bot/lib/libgpo_bot.so.3"
    assert result.order == [ext, top, mid, side, bot]
    assert [(r.soname, r.via) for path in result.order for r in result.resolutions[path]] == [
        ("libgpo_top.so.1", "rpath"), ("libgpo_mid.so.2", "runpath"), ("libgpo_side.so.1", "runpath"),
        ("libgpo_bot.so.3", "runpath")]
    assert result.errors == []
    _agree_with_real_loader(tmp_path, [ext], result)


@requires_gcc
def test_simulate_load_reports_a_missing_library_like_the_real_loader(tmp_path):
    site, ext = _three_levels(tmp_path)
    os.remove(str(site / "nvidia/bot/lib/libgpo_bot.so.3"))
    result = simulate_load([ext], _config())
    mid = str(site / "pkg") + "/lib/../../nvidia/mid/lib/libgpo_mid.so.2"
    assert result.errors == [LoadError(ext, mid, "libgpo_bot.so.3", "libgpo_bot.so.3: " + NOT_FOUND)]
    assert result.order == [] and len(result.unloaded) == 4
    errors, _mapped = real_load([ext])
    assert errors == ["libgpo_bot.so.3: " + NOT_FOUND]
    _agree_with_real_loader(tmp_path, [ext], result)


@requires_gcc
def test_a_failed_entry_point_is_unloaded_and_the_next_searches_afresh(tmp_path):
    _lib(tmp_path / "lib", "libgpo_ok.so.1")
    e1 = _lib(tmp_path / "app", "libgpo_e1.so", needed=("libgpo_ok.so.1", "libgpo_gone.so.1"), rpath="$ORIGIN/../lib")
    e2 = _lib(tmp_path / "app", "libgpo_e2.so", needed=("libgpo_ok.so.1",), rpath=str(tmp_path / "lib"))
    result = simulate_load([e1, e2], _config())
    ok_via_e1 = str(tmp_path / "app") + "/../lib/libgpo_ok.so.1"
    ok_via_e2 = str(tmp_path / "lib/libgpo_ok.so.1")
    assert result.unloaded == [e1, ok_via_e1]
    assert result.order == [e2, ok_via_e2]
    assert result.resolutions[e2] == [Resolution("libgpo_ok.so.1", ok_via_e2, "rpath", None, (str(tmp_path / "lib"),))]
    _agree_with_real_loader(tmp_path, [e1, e2], result)


@requires_gcc
def test_resolve_object_uses_only_its_own_paths(tmp_path):
    _lib(tmp_path / "dir1", "libgpo_c.so.1")
    b = _lib(tmp_path / "dir2", "libgpo_b.so.1", needed=("libgpo_c.so.1",))
    assert resolve_object(b, read_elf(b), _config()) == [
        Resolution("libgpo_c.so.1", None, "missing", "libgpo_c.so.1: " + NOT_FOUND, ())]
    b = _lib(tmp_path / "dir3", "libgpo_b.so.1", needed=("libgpo_c.so.1",), runpath="$ORIGIN/../dir1")
    assert resolve_object(b, read_elf(b), _config()) == [Resolution(
        "libgpo_c.so.1", str(tmp_path / "dir3") + "/../dir1/libgpo_c.so.1", "runpath", None,
        (str(tmp_path / "dir3") + "/../dir1",))]


# ---------------------------------------------------------------- configuration from the system's tools

LDCONFIG_P = """\
1234 libs found in cache `/etc/ld.so.cache'
\tlibz.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libz.so.1
\tlibz.so.1 (libc6) => /lib/i386-linux-gnu/libz.so.1
\tlibz.so.1 (libc6,x32) => /libx32/libz.so.1
\tlibcudart.so.13 (libc6,x86-64) => /usr/local/cuda-13.0/lib/libcudart.so.13
\tlibcudart.so.13 (libc6,x86-64) => /usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13
\tlibcudart.so.12 (libc6,x86-64) => /usr/local/cuda-12.8/targets/x86_64-linux/lib/libcudart.so.12
\tlibcrypto.so.3 (libc6,x86-64, hwcap: "x86-64-v3") => /usr/lib/x86_64-linux-gnu/glibc-hwcaps/x86-64-v3/libcrypto.so.3
\tlibcrypto.so.3 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcrypto.so.3
\tlibc.so.6 (libc6,x86-64, OS ABI: Linux 3.2.0) => /lib/x86_64-linux-gnu/libc.so.6
\tlibfoo.so.1 (libc6,AArch64) => /lib/aarch64-linux-gnu/libfoo.so.1
\tlibold.so.2 (ELF) => /usr/lib/libold.so.2
Cache generated by: ldconfig (GNU libc) stable release version 2.36
"""


def test_parse_ldconfig_p_keeps_the_hosts_entries_in_order():
    assert parse_ldconfig_p(LDCONFIG_P) == {
        "libz.so.1": ("/lib/x86_64-linux-gnu/libz.so.1",),
        "libcudart.so.13": ("/usr/local/cuda-13.0/lib/libcudart.so.13",
                            "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13"),
        "libcudart.so.12": ("/usr/local/cuda-12.8/targets/x86_64-linux/lib/libcudart.so.12",),
        "libcrypto.so.3": ("/lib/x86_64-linux-gnu/libcrypto.so.3",),
        "libc.so.6": ("/lib/x86_64-linux-gnu/libc.so.6",),
        "libold.so.2": ("/usr/lib/libold.so.2",),
    }
    assert parse_ldconfig_p(LDCONFIG_P, 32, 3) == {
        "libz.so.1": ("/lib/i386-linux-gnu/libz.so.1",), "libold.so.2": ("/usr/lib/libold.so.2",)}
    assert parse_ldconfig_p(LDCONFIG_P, 64, EM_AARCH64) == {
        "libfoo.so.1": ("/lib/aarch64-linux-gnu/libfoo.so.1",), "libold.so.2": ("/usr/lib/libold.so.2",)}
    assert parse_ldconfig_p("") == {}


LD_SO_HELP_2_36 = """\
Usage: /lib64/ld-linux-x86-64.so.2 [OPTION]... EXECUTABLE-FILE [ARGS-FOR-PROGRAM...]
You have invoked 'ld.so', the program interpreter for dynamically-linked
ELF programs.

  --list                list all dependencies and how they are resolved
  --help                display this help and exit

This program interpreter self-identifies as: /lib64/ld-linux-x86-64.so.2

Shared library search path:
  (libraries located via /etc/ld.so.cache)
  /lib/x86_64-linux-gnu (system search path)
  /usr/lib/x86_64-linux-gnu (system search path)
  /lib (system search path)
  /usr/lib (system search path)

Subdirectories of glibc-hwcaps directories, in priority order:
  x86-64-v4
  x86-64-v3 (supported, searched)
  x86-64-v2 (supported, searched)

Legacy HWCAP subdirectories under library search path directories:
  x86_64 (AT_PLATFORM; supported, searched)
  tls (supported, searched)
  avx512_1
  x86_64 (supported, searched)
"""

LD_SO_HELP_FEDORA = """\
Shared library search path:
  (libraries located via /etc/ld.so.cache)
  /lib64 (system search path)
  /usr/lib64 (system search path)

Subdirectories of glibc-hwcaps directories, in priority order:
  x86-64-v4 (supported, searched)
  x86-64-v3 (supported, searched)
  x86-64-v2 (supported, searched)
"""


def test_parse_ld_so_help():
    assert parse_ld_so_help(LD_SO_HELP_2_36) == (
        "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib")
    assert parse_ld_so_hwcaps(LD_SO_HELP_2_36) == ("glibc-hwcaps/x86-64-v3", "glibc-hwcaps/x86-64-v2")
    assert parse_ld_so_platform(LD_SO_HELP_2_36) == "x86_64"
    assert parse_ld_so_help(LD_SO_HELP_FEDORA) == ("/lib64", "/usr/lib64")
    assert parse_ld_so_platform(LD_SO_HELP_FEDORA) is None
    assert parse_ld_so_help("ld.so (GNU libc) stable release version 2.31.\n") == ()


def test_default_dirs_fallback_and_lib_token():
    assert default_dirs_fallback(62) == (
        "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib")
    assert default_dirs_fallback(EM_AARCH64)[:2] == ("/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu")
    assert default_dirs_fallback(9999) == ("/lib64", "/usr/lib64", "/lib", "/usr/lib")
    assert lib_token_for(("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu")) == "lib/x86_64-linux-gnu"
    assert lib_token_for(("/lib64", "/usr/lib64")) == "lib64"
    assert lib_token_for(("/usr/lib",)) == "lib"
    assert lib_token_for(()) == ""


def test_build_config_from_command_outputs():
    assert build_config(ldconfig_p=LDCONFIG_P, ld_so_help=LD_SO_HELP_2_36, ld_library_path="/a::/b",
                        host=(64, True, 62)) == LoaderConfig(
        ld_library_path=("/a", "", "/b"),
        cache=parse_ldconfig_p(LDCONFIG_P),
        default_dirs=("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib"),
        lib_token="lib/x86_64-linux-gnu", platform_token="x86_64",
        hwcaps_subdirs=("glibc-hwcaps/x86-64-v3", "glibc-hwcaps/x86-64-v2"), host=(64, True, 62))
    bare = build_config(ld_library_path=("/x",), host=(64, True, EM_AARCH64))
    assert bare == LoaderConfig(ld_library_path=("/x",), cache={}, default_dirs=default_dirs_fallback(EM_AARCH64),
                                lib_token="lib/aarch64-linux-gnu", platform_token="aarch64", hwcaps_subdirs=(),
                                host=(64, True, EM_AARCH64))


def test_lib_token_matches_this_hosts_loader(tmp_path):
    """$LIB as the real ld.so expands it equals what build_config derives from ``ld.so --help``."""
    ld_so = "/lib64/ld-linux-x86-64.so.2"
    if HOST != (64, True, 62) or not os.path.exists(ld_so) or shutil.which("gcc") is None:
        pytest.skip("needs an x86_64 glibc host with gcc")
    config = build_config(ld_so_help=subprocess.run([ld_so, "--help"], capture_output=True, text=True, check=True).stdout)
    target = tmp_path / "app" / config.lib_token / config.platform_token
    _lib(target, "libgpo_t.so.1")
    a = _lib(tmp_path / "app", "libgpo_a.so.1", needed=("libgpo_t.so.1",), rpath="$ORIGIN/$LIB/$PLATFORM")
    result = simulate_load([a], LoaderConfig(lib_token=config.lib_token, platform_token=config.platform_token))
    assert result.resolutions[a][0].via == "rpath"
    _agree_with_real_loader(tmp_path, [a], result)
