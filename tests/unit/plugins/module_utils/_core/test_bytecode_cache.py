# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for bytecode_cache: a real zip laid out as AnsiballZ lays out a payload, imported by a child Python through
real zipimport. The cache is proved read by an entry replaced with other code (its value shows up), and refused by
the same entry showing nothing."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
import zipfile

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core import bytecode_cache
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.bytecode_cache import read_entry, write_entry

MODULE_UTILS = os.path.dirname(os.path.dirname(os.path.abspath(bytecode_cache.__file__)))
INNER = "ansible_collections/gpuops/cuda_venv/plugins/module_utils"
TARGET = INNER + "/_core/zz_target.py"
SOURCE = "VALUE = %d\n\n\ndef read():\n    return VALUE\n"
ANSIBLE_TARGET = "ansible/module_utils/zz_basic.py"
# As the tools venv's .pth file starts it: the copy of bytecode_cache.py on disk under another name, before any import
# from the zip; then ansible-core's module_utils (AnsiballZ's wrapper imports them first), then the module's own enable().
CHILD_AT_START = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("gpuops_cuda_venv_bytecode_cache", sys.argv[2])
copy = importlib.util.module_from_spec(spec)
spec.loader.exec_module(copy)
copy.enable_at_start()
sys.path.insert(0, sys.argv[1])
from ansible.module_utils import zz_basic
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.bytecode_cache import enable
enable()
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core import zz_target
print(json.dumps({"ansible": [type(zz_basic.__spec__.loader).__name__, zz_basic.read()],
                  "target": [type(zz_target.__spec__.loader).__name__, zz_target.read()],
                  "finders": sum(1 for f in sys.meta_path if getattr(f, "caches_ansiballz_code", False))}))
"""
CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.bytecode_cache import enable
enable()
enable()  # a second module of the same run: still one finder
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core import zz_target
from other import zz_other
print(json.dumps({"loader": type(zz_target.__spec__.loader).__name__, "value": zz_target.read(),
                  "other": type(zz_other.__spec__.loader).__name__,
                  "finders": [type(f).__name__ for f in sys.meta_path].count("_CacheFinder"),
                  "file": zz_target.__file__, "filename": zz_target.read.__code__.co_filename}))
"""


def payload(path, value=1, package_value=None, ansible_value=None):
    """A zip holding what AnsiballZ would for a module importing _core.zz_target: every package's __init__.py,
    bytecode_cache.py as the collection has it, and the target; a module outside the collection (other.zz_other);
    with ``package_value``, a package of the target's name beside it; with ``ansible_value``, ansible-core's
    module_utils package holding ANSIBLE_TARGET."""
    with zipfile.ZipFile(str(path), "w") as archive:
        parts = INNER.split("/")
        for depth in range(1, len(parts) + 1):
            archive.writestr("/".join(parts[:depth]) + "/__init__.py", "")
        archive.writestr(INNER + "/_core/__init__.py", "")
        archive.write(os.path.join(MODULE_UTILS, "_core", "bytecode_cache.py"), INNER + "/_core/bytecode_cache.py")
        archive.writestr(TARGET, SOURCE % value)
        archive.writestr("other/__init__.py", "")
        archive.writestr("other/zz_other.py", SOURCE % 0)
        if package_value is not None:
            archive.writestr(TARGET[:-3] + "/__init__.py", SOURCE % package_value)
        if ansible_value is not None:
            archive.writestr("ansible/__init__.py", "")
            archive.writestr("ansible/module_utils/__init__.py", "")
            archive.writestr(ANSIBLE_TARGET, SOURCE % ansible_value)
    return path


def run_child(tmp_path, zip_path, flags=(), program=CHILD, arguments=(), **env):
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "CUDA_VENV_", "XDG_"))}
    environ.update({"XDG_CACHE_HOME": str(tmp_path / "xdg")}, **env)
    proc = subprocess.run([sys.executable] + list(flags) + ["-c", program, str(zip_path)] + list(arguments), env=environ,
                          cwd=str(tmp_path), capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def folder_of(tmp_path):
    return tmp_path / "xdg" / "gpuops-cuda_venv" / sys.implementation.cache_tag


def entries(tmp_path):
    folder = folder_of(tmp_path)
    return sorted(name for name in os.listdir(str(folder))) if folder.is_dir() else []


def replaced_by(tmp_path, value):
    """The one entry, rewritten to hold the code of another value: what a run shows when it reads the entry."""
    [name] = entries(tmp_path)
    write_entry(str(folder_of(tmp_path)), str(folder_of(tmp_path) / name), compile(SOURCE % value, TARGET, "exec"))
    return folder_of(tmp_path) / name


def test_the_first_run_compiles_and_keeps_one_entry_the_next_run_executes_that_entry(tmp_path):
    zip_path = payload(tmp_path / "payload.zip")
    first = run_child(tmp_path, zip_path)
    assert (first["loader"], first["value"], first["filename"], first["other"]) == ("_CachingLoader", 1, TARGET, "zipimporter")
    assert first["finders"] == 1
    assert first["file"] == str(zip_path / TARGET)  # __file__ as zipimport sets it
    [name] = entries(tmp_path)
    assert len(name) == 64 and int(name, 16) >= 0
    assert stat.S_IMODE(os.stat(str(folder_of(tmp_path))).st_mode) == 0o700
    assert read_entry(str(folder_of(tmp_path) / name)).co_filename == TARGET

    replaced_by(tmp_path, 2)
    assert run_child(tmp_path, zip_path)["value"] == 2


def test_started_before_ansiballz_imports_it_also_keeps_ansible_core_s_module_utils(tmp_path):
    zip_path = payload(tmp_path / "payload.zip", ansible_value=3)
    on_disk = tmp_path / "site" / "gpuops_cuda_venv_bytecode_cache.py"  # the tools venv's copy
    on_disk.parent.mkdir()
    shutil.copyfile(os.path.join(MODULE_UTILS, "_core", "bytecode_cache.py"), str(on_disk))
    first = run_child(tmp_path, zip_path, program=CHILD_AT_START, arguments=[str(on_disk)])
    assert first == {"ansible": ["_CachingLoader", 3], "target": ["_CachingLoader", 1], "finders": 1}
    kept = {read_entry(str(folder_of(tmp_path) / name)).co_filename: name for name in entries(tmp_path)}
    assert sorted(kept) == [ANSIBLE_TARGET, INNER + "/_core/bytecode_cache.py", TARGET]  # the module's own copy too

    folder = str(folder_of(tmp_path))
    write_entry(folder, os.path.join(folder, kept[ANSIBLE_TARGET]), compile(SOURCE % 4, ANSIBLE_TARGET, "exec"))
    again = run_child(tmp_path, zip_path, program=CHILD_AT_START, arguments=[str(on_disk)])
    assert again == {"ansible": ["_CachingLoader", 4], "target": ["_CachingLoader", 1], "finders": 1}

    off = run_child(tmp_path, zip_path, program=CHILD_AT_START, arguments=[str(on_disk)], CUDA_VENV_BYTECODE_CACHE="off")
    assert off == {"ansible": ["zipimporter", 3], "target": ["zipimporter", 1], "finders": 0}


def test_without_the_early_start_ansible_core_s_module_utils_are_left_to_zipimport(tmp_path):
    imported = run_child(tmp_path, payload(tmp_path / "payload.zip", ansible_value=3), program=CHILD_AT_START.replace(
        "copy.enable_at_start()", ""), arguments=[os.path.join(MODULE_UTILS, "_core", "bytecode_cache.py")])
    assert imported == {"ansible": ["zipimporter", 3], "target": ["_CachingLoader", 1], "finders": 1}


def test_a_changed_source_is_another_entry_and_the_old_one_stays(tmp_path):
    run_child(tmp_path, payload(tmp_path / "one.zip", 1))
    [old] = entries(tmp_path)
    assert run_child(tmp_path, payload(tmp_path / "three.zip", 3))["value"] == 3
    assert old in entries(tmp_path) and len(entries(tmp_path)) == 2


def test_code_compiled_without_asserts_is_another_entry(tmp_path):
    zip_path = payload(tmp_path / "payload.zip")
    run_child(tmp_path, zip_path)
    replaced_by(tmp_path, 2)
    assert run_child(tmp_path, zip_path, flags=("-O",))["value"] == 1
    assert len(entries(tmp_path)) == 2


def test_a_torn_or_altered_entry_is_compiled_again_and_rewritten(tmp_path):
    zip_path = payload(tmp_path / "payload.zip")
    run_child(tmp_path, zip_path)
    entry = replaced_by(tmp_path, 2)
    digest = entry.read_bytes()[:32]
    replaced_by(tmp_path, 5)
    entry.write_bytes(digest + entry.read_bytes()[32:])  # code that loads, under another code's digest
    assert run_child(tmp_path, zip_path)["value"] == 1
    assert read_entry(str(entry)) is not None and run_child(tmp_path, zip_path)["value"] == 1
    entry.write_bytes(entry.read_bytes()[:-7])  # torn
    assert run_child(tmp_path, zip_path)["value"] == 1 and read_entry(str(entry)) is not None
    entry.write_bytes(b"")
    assert run_child(tmp_path, zip_path)["value"] == 1 and read_entry(str(entry)) is not None


def test_a_package_of_the_same_name_wins_as_in_python_s_own_import(tmp_path):
    imported = run_child(tmp_path, payload(tmp_path / "payload.zip", package_value=7))
    assert (imported["loader"], imported["value"], entries(tmp_path)) == ("zipimporter", 7, [])


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_an_entry_that_is_no_regular_file_is_not_read_and_does_not_hang(tmp_path, kind):
    zip_path = payload(tmp_path / "payload.zip")
    run_child(tmp_path, zip_path)
    [name] = entries(tmp_path)
    entry = folder_of(tmp_path) / name
    entry.unlink()
    entry.mkdir() if kind == "folder" else os.mkfifo(str(entry))
    assert run_child(tmp_path, zip_path)["value"] == 1
    assert entries(tmp_path) == [name]
    assert entry.is_dir() if kind == "folder" else entry.is_file()  # a rename cannot replace a folder, a FIFO it can


def test_a_symlinked_entry_is_not_followed(tmp_path):
    zip_path = payload(tmp_path / "payload.zip")
    run_child(tmp_path, zip_path)
    entry = replaced_by(tmp_path, 2)
    elsewhere = tmp_path / "elsewhere"
    os.rename(str(entry), str(elsewhere))
    os.symlink(str(elsewhere), str(entry))
    assert run_child(tmp_path, zip_path, PYTHONDONTWRITEBYTECODE="1")["value"] == 1
    assert entry.is_symlink()


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")
def test_an_entry_of_another_user_is_not_read(tmp_path):
    zip_path = payload(tmp_path / "payload.zip")
    run_child(tmp_path, zip_path)
    entry = replaced_by(tmp_path, 2)
    os.chown(str(entry), 65534, 65534)
    assert run_child(tmp_path, zip_path, PYTHONDONTWRITEBYTECODE="1")["value"] == 1


@pytest.mark.parametrize("mode", [0o770, 0o702])
def test_a_folder_others_can_write_is_neither_read_nor_written(tmp_path, mode):
    zip_path = payload(tmp_path / "payload.zip")
    run_child(tmp_path, zip_path)
    entry = replaced_by(tmp_path, 2)
    os.chmod(str(folder_of(tmp_path)), mode)
    assert run_child(tmp_path, zip_path)["value"] == 1
    os.unlink(str(entry))
    assert run_child(tmp_path, zip_path)["value"] == 1 and entries(tmp_path) == []


def test_a_symlinked_folder_is_not_used(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    folder_of(tmp_path).parent.mkdir(parents=True)
    os.symlink(str(elsewhere), str(folder_of(tmp_path)))
    assert run_child(tmp_path, payload(tmp_path / "payload.zip"))["value"] == 1
    assert os.listdir(str(elsewhere)) == []


def test_dont_write_bytecode_writes_nothing_but_reads_what_is_there(tmp_path):
    zip_path = payload(tmp_path / "payload.zip")
    assert run_child(tmp_path, zip_path, PYTHONDONTWRITEBYTECODE="1")["loader"] == "zipimporter"
    assert not folder_of(tmp_path).exists()
    run_child(tmp_path, zip_path)
    replaced_by(tmp_path, 2)
    assert run_child(tmp_path, zip_path, PYTHONDONTWRITEBYTECODE="1")["value"] == 2


def test_the_switch_off_neither_reads_nor_writes_and_leaves_zipimport_in_charge(tmp_path):
    zip_path = payload(tmp_path / "payload.zip")
    off = run_child(tmp_path, zip_path, CUDA_VENV_BYTECODE_CACHE="off")
    assert (off["loader"], off["value"], off["filename"]) == ("zipimporter", 1, str(zip_path / TARGET))
    assert not folder_of(tmp_path).exists()
    run_child(tmp_path, zip_path)
    replaced_by(tmp_path, 2)
    assert run_child(tmp_path, zip_path, CUDA_VENV_BYTECODE_CACHE="off")["value"] == 1


def test_the_pycache_prefix_is_where_python_was_told_to_keep_bytecode(tmp_path):
    prefix = tmp_path / "prefix"
    run_child(tmp_path, payload(tmp_path / "payload.zip"), PYTHONPYCACHEPREFIX=str(prefix))
    assert len(os.listdir(str(prefix / "gpuops-cuda_venv" / sys.implementation.cache_tag))) == 1
    assert entries(tmp_path) == []


def test_a_write_removes_the_entries_older_than_the_stale_limit_only(tmp_path):
    folder = folder_of(tmp_path)
    folder.mkdir(parents=True, mode=0o700)
    now = time.time()
    for name, days in (("stale", bytecode_cache.STALE_DAYS + 1), ("recent", bytecode_cache.STALE_DAYS - 1)):
        (folder / name).write_bytes(b"x")
        os.utime(str(folder / name), (now - days * 86400, now - days * 86400))
    run_child(tmp_path, payload(tmp_path / "payload.zip"))
    assert "stale" not in entries(tmp_path) and "recent" in entries(tmp_path) and len(entries(tmp_path)) == 2


def test_files_on_disk_are_left_to_python(monkeypatch):
    before = list(sys.meta_path)
    monkeypatch.setenv("XDG_CACHE_HOME", "/nonexistent")
    bytecode_cache.enable()
    assert sys.meta_path == before


def test_a_relative_cache_home_is_not_used(tmp_path):
    imported = run_child(tmp_path, payload(tmp_path / "payload.zip"), XDG_CACHE_HOME="relative/cache")
    assert (imported["loader"], imported["value"]) == ("zipimporter", 1)
    assert os.listdir(str(tmp_path)) == ["payload.zip"]
