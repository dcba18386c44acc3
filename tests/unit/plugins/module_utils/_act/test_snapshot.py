# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Snapshots of real trees: take, changes, restore after every kind of change, discard."""

from __future__ import annotations

import codecs
import json
import os
import shutil
import subprocess
import tempfile
import traceback

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.snapshot import (
    Changes,
    Entry,
    Snapshot,
    SnapshotDamaged,
    SnapshotError,
    SnapshotIncomplete,
    escaping_directory_links,
    is_complete,
    scan_tree,
)
from ansible_collections.gpuops.cuda_venv.tests.support import tree_digest as td

SITE = td.SITE


@pytest.fixture
def venv(tmp_path):
    root = tmp_path / "venv"
    root.mkdir()
    td.build_sample_tree(str(root))
    (root / td.STATE_DIR_NAME).mkdir(mode=0o700)
    return root


def take(venv, name="s1"):
    state = venv / td.STATE_DIR_NAME
    return Snapshot.take(str(venv), str(state / "snapshots" / name), exclude=(str(state),))


def test_take_changes_nothing_and_links_every_file(venv):
    before = td.tree_state(str(venv))
    snap = take(venv)
    assert td.tree_state(str(venv)) == before
    assert is_complete(snap.snap_dir)
    for rel, entry in snap.entries.items():
        if entry.type == "f":
            blob = os.lstat(snap.blob_path(entry))
            assert (blob.st_dev, blob.st_ino) == (entry.dev, entry.ino), rel
    # The two in-tree links of one inode share one blob; the state dir is left out.
    lib = SITE + "/torch/lib/"
    assert snap.entries[lib + "libtorch.so"].blob == snap.entries[lib + "libtorch_alias.so"].blob
    blobs = set(entry.blob for entry in snap.entries.values() if entry.type == "f")
    assert len(blobs) == 10
    assert sorted(os.listdir(os.path.join(snap.snap_dir, "files"))) == sorted(str(n) for n in range(10))
    assert td.STATE_DIR_NAME not in snap.entries
    assert snap.exclude == (td.STATE_DIR_NAME,)
    assert snap.changes(str(venv)) == Changes([], [], [])


def test_manifest_rows_are_exact(venv):
    snap = take(venv)
    path = venv / SITE / "nvidia" / "cu13" / "lib" / "libcudart.so.13"
    st = os.lstat(path)
    rel = SITE + "/nvidia/cu13/lib/libcudart.so.13"
    expected = Entry(rel, "f", 0o755, st.st_uid, st.st_gid, 14, st.st_mtime_ns, None, st.st_dev, st.st_ino, 1, snap.entries[rel].blob)
    assert snap.entries[rel] == expected
    link = snap.entries[SITE + "/nvidia/cu13/lib/libcudart.so"]
    assert (link.type, link.target, link.blob) == ("l", "libcudart.so.13", None)
    with open(os.path.join(snap.snap_dir, "manifest.json"), encoding="ascii") as handle:
        doc = json.load(handle)
    assert doc["fields"] == list(Entry._fields)
    assert doc["exclude"] == [td.STATE_DIR_NAME]
    assert doc["copied"] == []
    assert [row[0] for row in doc["entries"]] == sorted(snap.entries)
    assert Snapshot.load(snap.snap_dir).entries == snap.entries


def test_non_utf8_names_survive_the_manifest(venv):
    snap = Snapshot.load(take(venv).snap_dir)
    name = SITE + "/" + os.fsdecode(b"caf\xe9.txt")
    assert snap.entries[name].type == "f"
    os.unlink(os.path.join(str(venv), name))
    assert snap.restore(str(venv)) == Changes([], [name], [])
    assert (venv / SITE / os.fsdecode(b"caf\xe9.txt")).read_bytes() == b"not utf-8 name\n"


EXPECTED_UNDONE = {
    "replace_content": Changes([], [], [SITE + "/torch/__init__.py"]),
    "rewrite_like_pip": Changes([], [], [SITE + "/torch/lib/libtorch.so"]),
    "delete_file": Changes([], [SITE + "/nvidia/cu13/lib/libcudart.so.13"], []),
    "add_file": Changes([SITE + "/extra.py"], [], []),
    "add_dir": Changes([SITE + "/newpkg", SITE + "/newpkg/sub", SITE + "/newpkg/sub/x.so", SITE + "/newpkg/x.so"], [], []),
    "remove_dir": Changes([], [SITE + "/torch-2.9.1.dist-info", SITE + "/torch-2.9.1.dist-info/METADATA", SITE + "/torch-2.9.1.dist-info/RECORD"], []),
    "change_modes": Changes([], [], ["bin/pip", "lib", SITE + "/readonly.txt"]),
    "retarget_symlink": Changes([], [], [SITE + "/nvidia/cu13/lib/libcudart.so"]),
    "swap_file_and_dir": Changes([SITE + "/readonly.txt/inside"], [], [SITE + "/empty", SITE + "/readonly.txt"]),
    # Directory mtimes are restored but not reported: they follow their entries.
    "touch_and_chown": Changes([], [], ["bin/python", SITE + "/torch/__init__.py", "pyvenv.cfg"] if os.geteuid() == 0 else ["pyvenv.cfg"]),
    "change_sealed_dir": Changes([SITE + "/sealed/moved"], [SITE + "/sealed/inner", SITE + "/sealed/inner/data.bin"], [SITE + "/sealed"]),
}


@pytest.mark.parametrize("modification", td.MODIFICATIONS, ids=lambda fn: fn.__name__)
def test_restore_undoes_each_kind_of_change(venv, modification):
    before = td.tree_state(str(venv))
    snap = take(venv)
    modification(str(venv))
    assert td.tree_state(str(venv)) != before
    expected = EXPECTED_UNDONE[modification.__name__]
    assert snap.changes(str(venv)) == expected
    assert snap.restore(str(venv)) == expected
    assert td.tree_state(str(venv)) == before
    assert snap.changes(str(venv)) == Changes([], [], [])


def test_restore_undoes_all_changes_at_once_and_is_idempotent(venv):
    before = td.tree_digest(str(venv))
    snap = take(venv)
    td.modify_tree(str(venv))
    snap.restore(str(venv))
    assert td.tree_digest(str(venv)) == before
    assert snap.restore(str(venv)) == Changes([], [], [])
    assert td.tree_digest(str(venv)) == before


def test_restore_relinks_in_tree_hard_links(venv):
    lib = venv / SITE / "torch" / "lib"
    snap = take(venv)
    td.rewrite_like_pip(str(venv))
    assert os.lstat(lib / "libtorch.so").st_ino != os.lstat(lib / "libtorch_alias.so").st_ino
    snap.restore(str(venv))
    assert os.lstat(lib / "libtorch.so").st_ino == os.lstat(lib / "libtorch_alias.so").st_ino


def test_restore_never_writes_into_an_inode_shared_outside_the_tree(venv, tmp_path):
    # The venv file is a hard link into a cache that other venvs share, as uv installs it.
    cache = tmp_path / "uv-cache" / "libcublas.so.13"
    cache.parent.mkdir()
    cache.write_bytes(b"\x7fELF cublas from the cache")
    os.utime(cache, ns=(5, 1700000000000000007))
    inside = venv / SITE / "nvidia" / "cu13" / "lib" / "libcublas.so.13"
    os.link(cache, inside)
    cache_before = os.lstat(cache)
    tree_before = td.tree_state(str(venv))
    snap = take(venv)
    # pip-style reinstall: a new inode at the venv path; the installer also chmods it.
    os.unlink(inside)
    inside.write_bytes(b"\x7fELF cublas rebuilt, other bytes")
    os.chmod(inside, 0o700)
    assert snap.restore(str(venv)) == Changes([], [], [SITE + "/nvidia/cu13/lib/libcublas.so.13"])
    assert td.tree_state(str(venv)) == tree_before
    assert cache.read_bytes() == b"\x7fELF cublas from the cache"
    cache_after = os.lstat(cache)
    assert (cache_after.st_ino, cache_after.st_mode, cache_after.st_size, cache_after.st_mtime_ns) == (
        cache_before.st_ino,
        cache_before.st_mode,
        cache_before.st_size,
        cache_before.st_mtime_ns,
    )
    assert os.lstat(inside).st_ino == cache_before.st_ino


def test_in_place_write_is_detected_not_silently_restored(venv):
    snap = take(venv)
    target = venv / "pyvenv.cfg"
    with open(target, "ab") as handle:  # writes into the inode the snapshot links to
        handle.write(b"include-system-site-packages = true\n")
    assert snap.changes(str(venv)) == Changes([], [], ["pyvenv.cfg"])
    td.add_file(str(venv))
    changed = td.tree_state(str(venv))
    with pytest.raises(SnapshotDamaged) as err:
        snap.restore(str(venv))
    assert err.value.paths == ["pyvenv.cfg"]
    assert str(err.value) == (
        "cannot restore %s: 1 file(s) were written in place, so the snapshot lost their old bytes: pyvenv.cfg; "
        "nothing was restored; reinstall the distributions that own them" % venv
    )
    assert td.tree_state(str(venv)) == changed


def test_copy_fallback_across_filesystems(venv):
    shm = "/dev/shm"
    if not os.path.isdir(shm) or os.stat(shm).st_dev == os.stat(str(venv)).st_dev:
        pytest.skip("needs a second filesystem at /dev/shm")
    with tempfile.TemporaryDirectory(dir=shm) as other:
        before = td.tree_state(str(venv))
        snap = Snapshot.take(str(venv), os.path.join(other, "snap"), exclude=(td.STATE_DIR_NAME,))
        files = [rel for rel, entry in snap.entries.items() if entry.type == "f"]
        assert len(snap.copied) == len(set(snap.entries[rel].blob for rel in files))
        # With copies, the snapshot survives even a write into the original inode.
        with open(venv / "pyvenv.cfg", "ab") as handle:
            handle.write(b"in place\n")
        td.modify_tree(str(venv))
        snap.restore(str(venv))
        assert td.tree_state(str(venv)) == before
        assert snap.restore(str(venv)) == Changes([], [], [])


def test_snapshot_without_manifest_is_incomplete(venv):
    snap = take(venv)
    os.unlink(os.path.join(snap.snap_dir, "manifest.json"))
    assert not is_complete(snap.snap_dir)
    with pytest.raises(SnapshotIncomplete) as err:
        Snapshot.load(snap.snap_dir)
    assert str(err.value) == "snapshot %s has no manifest: it was never completed; discard it" % snap.snap_dir


def test_take_over_an_incomplete_snapshot_replaces_it_but_never_a_complete_one(venv):
    snap_dir = venv / td.STATE_DIR_NAME / "snapshots" / "s1"
    (snap_dir / "files").mkdir(parents=True)
    (snap_dir / "files" / "0").write_bytes(b"left by a crash")
    snap = take(venv)
    assert is_complete(snap.snap_dir)
    with pytest.raises(SnapshotError) as err:
        take(venv)
    assert str(err.value) == "snapshot %s already exists; restore or discard it before taking another" % snap_dir


def test_discard_removes_the_snapshot_and_leaves_the_tree(venv):
    before = td.tree_state(str(venv))
    snap = take(venv)
    snap.discard()
    assert not os.path.exists(snap.snap_dir)
    assert td.tree_state(str(venv)) == before
    assert os.lstat(venv / "pyvenv.cfg").st_nlink == 1


def test_snapshot_dir_inside_the_tree_must_be_excluded(venv):
    snap_dir = venv / "lib" / "snap"
    with pytest.raises(SnapshotError) as err:
        Snapshot.take(str(venv), str(snap_dir))
    assert str(err.value) == "snapshot dir %s is inside the tree %s but not excluded; exclude its parent state dir" % (snap_dir, venv)


def test_unreadable_manifest_is_an_error(venv):
    snap = take(venv)
    with open(os.path.join(snap.snap_dir, "manifest.json"), "w", encoding="ascii") as handle:
        handle.write('{"format": 99, "fields": []}')
    with pytest.raises(SnapshotError) as err:
        Snapshot.load(snap.snap_dir)
    assert str(err.value).endswith("has format 99, expected 1; it was written by another version")


def _restore_through_read_only_dirs(base):
    """Take, change (leaving read-only directories in the way), restore; returns the paths that differ."""
    root = os.path.join(base, "venv")
    os.mkdir(root)
    td.build_sample_tree(root)
    state = os.path.join(root, td.STATE_DIR_NAME)
    os.mkdir(state, 0o700)
    before = td.tree_state(root)
    snap = Snapshot.take(root, os.path.join(state, "s"), exclude=(state,))
    td.modify_tree(root)
    sealed = os.path.join(root, SITE, "sealed")
    with open(os.path.join(sealed, "added"), "w", encoding="utf-8") as handle:
        handle.write("x")
    os.chmod(sealed, 0o555)
    os.chmod(os.path.join(root, "bin"), 0o500)
    snap.restore(root)
    after = td.tree_state(root)
    return sorted(rel for rel in set(before) | set(after) if before.get(rel) != after.get(rel))


def test_restore_as_an_unprivileged_user_through_read_only_dirs(tmp_path, machine_temp_dir):
    if os.geteuid() != 0:
        assert _restore_through_read_only_dirs(str(tmp_path)) == []
        return
    # As root: do it in a forked child that becomes nobody, in a directory nobody owns.
    base = tempfile.mkdtemp(prefix="cuda-venv-nobody-", dir=machine_temp_dir)  # tmp_path's parents are root-only
    os.chown(base, 65534, 65534)
    codecs.lookup("ascii")  # load now: the child may not read this interpreter's files
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            os.setgid(65534)
            os.setuid(65534)
            os.write(write_end, json.dumps(_restore_through_read_only_dirs(str(base))).encode())
        except BaseException:  # noqa: B036 - report anything to the parent
            os.write(write_end, json.dumps(traceback.format_exc()).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        report = reader.read()
    os.waitpid(pid, 0)
    subprocess.run(["chmod", "-R", "u+rwX", "--", base], check=True)
    shutil.rmtree(base)
    assert json.loads(report) == []


def test_escaping_directory_links_names_the_links_to_folders_outside_the_tree(tmp_path):
    root, outside = tmp_path / "venv", tmp_path / "outside"
    (root / "lib" / "site").mkdir(parents=True)
    outside.mkdir()
    (outside / "file.txt").write_text("x")
    os.symlink("lib", str(root / "lib64"))  # inside: fine
    os.symlink(str(outside), str(root / "lib" / "site" / "include"))
    os.symlink(str(outside / "file.txt"), str(root / "lib" / "site" / "file-link"))  # a file: nothing is written through it
    os.symlink(str(tmp_path / "absent"), str(root / "dangling"))
    assert escaping_directory_links(str(root), scan_tree(str(root))) == ["lib/site/include"]
