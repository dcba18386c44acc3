# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The swap strategy's parts on real trees: decision, copy, exchange, generations, recovery."""

from __future__ import annotations

import os
import subprocess

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act import swap
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.journal import Journal
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.swap import (
    IN_PLACE, SWAP, Room, Strategy, SwapError, choose_strategy, dir_inode, exchange, exchange_atomically, finish_exchange,
    finish_missing_root, is_mount_point, keep_generation, make_copy, previous_generations, rebase, rebase_argv,
    recover_swap)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import swap_dir_of
from ansible_collections.gpuops.cuda_venv.tests.support import tree_digest as td

ROOMY = Room(free_bytes=10 << 30, free_inodes=10 ** 6, need_bytes=1 << 20, need_inodes=100)


@pytest.fixture
def venv(tmp_path):
    root = tmp_path / "venv"
    root.mkdir()
    td.build_sample_tree(str(root))
    state = root / td.STATE_DIR_NAME
    state.mkdir(mode=0o700)
    (state / "lock").write_text("")
    (state / "journal.prev.jsonl").write_text("{}\n")
    (state / "snapshots").mkdir()
    os.utime(str(root), ns=(td.BASE_MTIME_NS, td.BASE_MTIME_NS))
    return root


def test_strategy_in_place_asked_for_is_used_without_checks(tmp_path):
    assert choose_strategy(IN_PLACE, str(tmp_path / "absent"), None, 2) == Strategy(IN_PLACE, "strategy in_place was asked for")


def test_auto_swaps_where_it_can(venv):
    assert choose_strategy("auto", str(venv), ROOMY, None) == Strategy(
        SWAP, "strategy auto: the venv is copied beside itself, repaired and exchanged atomically")


@pytest.mark.parametrize("room, batch, why", [
    (Room(100, 10 ** 6, 101, 1), None, "free space is short: the plan writes about 101 bytes and 100 are free"),
    (Room(10 ** 9, 5, 1, 6), None, "free inodes are short: the copy and the plan need about 6 and 5 are free"),
    (ROOMY, 2, "option batch runs one batch per run on the live venv (a swap repairs a copy in one run)"),
])
def test_auto_falls_back_and_explicit_swap_fails_with_the_reason(venv, room, batch, why):
    assert choose_strategy("auto", str(venv), room, batch) == Strategy(IN_PLACE, "fell back to in_place: " + why)
    with pytest.raises(SwapError) as err:
        choose_strategy(SWAP, str(venv), room, batch)
    assert str(err.value) == "strategy swap cannot work for %s: %s; use strategy in_place (or auto, which falls back)" % (venv, why)


def test_a_swap_dir_on_another_filesystem_is_refused(venv):
    os.mkdir(swap_dir_of(str(venv)))
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", swap_dir_of(str(venv))], capture_output=True,
                          text=True, check=False)
    if proc.returncode != 0:
        pytest.skip("cannot mount a tmpfs here: %s" % proc.stderr.strip())
    try:
        why = swap.why_swap_cannot_work(str(venv), ROOMY, None)
    finally:
        subprocess.run(["umount", swap_dir_of(str(venv))], check=True)
    assert why == "%s is on another filesystem than the venv: the copy would cross filesystems" % swap_dir_of(str(venv))


def test_mount_points_are_found_in_mountinfo_too(tmp_path):
    target = tmp_path / "my venv"
    target.mkdir()
    info = tmp_path / "mountinfo"
    info.write_text("36 35 98:0 / /mnt1 rw - ext3 /dev/root rw\n"
                    "40 36 98:0 /x %s rw,relatime shared:1 - ext4 /dev/sda1 rw\n" % str(target).replace(" ", "\\040"))
    assert is_mount_point(str(target), str(info)) is True
    assert is_mount_point(str(tmp_path), str(info)) is False
    assert is_mount_point(str(tmp_path), str(tmp_path / "no-mountinfo")) is False


def test_copy_keeps_every_path_and_shares_every_file(venv, tmp_path):
    dest = tmp_path / "copy"
    entries = make_copy(str(venv), str(dest), str(venv / td.STATE_DIR_NAME))
    assert td.tree_state(str(dest)) == td.tree_state(str(venv))  # types, modes, owners, sizes, mtimes, links, bytes
    for rel, entry in entries.items():
        if entry.type == "f":
            st = os.lstat(os.path.join(str(dest), rel))
            assert (st.st_dev, st.st_ino) == (entry.dev, entry.ino), rel
    state = dest / td.STATE_DIR_NAME
    assert sorted(os.listdir(str(state))) == ["journal.prev.jsonl", "lock"]  # no snapshots, no caches
    assert os.path.samefile(str(state / "lock"), str(venv / td.STATE_DIR_NAME / "lock"))
    assert oct(os.stat(str(state)).st_mode & 0o777) == "0o700"


def test_copy_refuses_special_files(venv, tmp_path):
    os.mkfifo(str(venv / "pipe"))
    with pytest.raises(SwapError) as err:
        make_copy(str(venv), str(tmp_path / "copy"), str(venv / td.STATE_DIR_NAME))
    assert str(err.value) == "cannot copy %s: it holds special files (fifo, socket or device): pipe" % venv
    assert not (tmp_path / "copy").exists()


def _two_trees(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for path, text in ((a, "old"), (b, "new")):
        path.mkdir()
        (path / "which").write_text(text)
    return a, b


def test_exchange_is_atomic_here(tmp_path):
    a, b = _two_trees(tmp_path)
    inode_a, inode_b = os.lstat(str(a)).st_ino, os.lstat(str(b)).st_ino
    assert exchange(str(a), str(b), str(tmp_path)) == "renameat2"
    assert (a / "which").read_text() == "new" and (b / "which").read_text() == "old"
    assert (os.lstat(str(a)).st_ino, os.lstat(str(b)).st_ino) == (inode_b, inode_a)


def test_exchange_with_a_missing_side_raises_and_changes_nothing(tmp_path):
    a, _b = _two_trees(tmp_path)
    with pytest.raises(OSError):
        exchange_atomically(str(a), str(tmp_path / "absent"))
    assert (a / "which").read_text() == "old"


def test_fake_libc_without_renameat2_uses_two_renames(tmp_path, monkeypatch):
    a, b = _two_trees(tmp_path)
    monkeypatch.setattr(swap, "_renameat2", lambda: None)  # a C library older than glibc 2.28
    assert exchange(str(a), str(b), str(tmp_path)) == "renames"
    assert (a / "which").read_text() == "new" and (b / "which").read_text() == "old"
    assert not (tmp_path / swap.EXCHANGE_TMP).exists()


def test_an_exchange_killed_between_its_renames_is_completed(tmp_path):
    a, b = _two_trees(tmp_path)
    os.rename(str(a), str(tmp_path / swap.EXCHANGE_TMP))  # what the fallback does first
    assert finish_exchange(str(tmp_path), str(a), str(b)) is True
    assert (a / "which").read_text() == "new" and (b / "which").read_text() == "old"
    assert finish_exchange(str(tmp_path), str(a), str(b)) is False


def test_a_missing_venv_path_is_completed_from_the_swap_journal(tmp_path):
    live = tmp_path / "venv"
    swap_dir = swap_dir_of(str(live))
    os.mkdir(swap_dir)
    nxt = os.path.join(swap_dir, "next")
    os.mkdir(nxt)
    live.mkdir()
    journal = Journal(swap_dir, run="r1")
    journal.append("swap", batch=None, step="exchange", other=nxt, live_inode=[0, 0], copy_inode=[0, 0])
    os.rename(str(live), os.path.join(swap_dir, swap.EXCHANGE_TMP))
    assert finish_missing_root("relative/venv") is False
    assert finish_missing_root(str(live)) is True
    assert live.is_dir() and os.path.isdir(nxt) and not os.path.exists(os.path.join(swap_dir, swap.EXCHANGE_TMP))


def test_generations_keep_the_newest(tmp_path):
    swap_dir = str(tmp_path)
    for run in ("r1", "r2", "r3"):
        old = tmp_path / "next"
        old.mkdir()
        kept = keep_generation(swap_dir, str(old), run, 2)
        assert kept == os.path.join(swap_dir, "previous", run)
    assert [os.path.basename(p) for p in previous_generations(swap_dir)] == ["r2", "r3"]
    (tmp_path / "next").mkdir()
    assert keep_generation(swap_dir, str(tmp_path / "next"), "r4", 0) is None
    assert previous_generations(swap_dir) == [] and not (tmp_path / "next").exists()


def _open_run(venv, steps, exchanged=None):
    swap_dir = swap_dir_of(str(venv))
    os.makedirs(os.path.join(swap_dir, "next", "bin"))
    journal = Journal(swap_dir, run="r1")
    for step in steps:
        details = {}
        if step == "exchange":
            nxt = os.path.join(swap_dir, "next")
            details = dict(other=nxt, live_inode=list(dir_inode(str(venv))), copy_inode=list(dir_inode(nxt)))
        journal.append("swap", batch=None, step=step, **details)
    if exchanged:
        exchange(str(venv), os.path.join(swap_dir, "next"), swap_dir)
    return swap_dir


def test_recovery_before_the_exchange_discards_the_copy(venv):
    digest = td.tree_digest(str(venv))
    swap_dir = _open_run(venv, ["begin", "copied", "batch", "rewritten", "verified"])
    found = recover_swap(str(venv), swap_dir, 1)
    assert found["action"] == "discarded the unfinished copy: the venv was never changed"
    assert found["reason"] == "recovered interrupted swap run r1 (last step verified)"
    assert os.listdir(swap_dir) == ["journal.prev.jsonl"] and td.tree_digest(str(venv)) == digest
    assert recover_swap(str(venv), swap_dir, 1) is None


def test_recovery_after_the_exchange_keeps_the_old_venv_as_previous(venv):
    swap_dir = _open_run(venv, ["begin", "copied", "verified", "exchange"], exchanged=True)
    found = recover_swap(str(venv), swap_dir, 1)
    assert found["action"] == "completed the swap: the repaired venv is in place"
    assert found["previous"] == os.path.join(swap_dir, "previous", "r1")
    assert os.listdir(str(venv)) == ["bin"] and os.path.isfile(os.path.join(found["previous"], td.SITE, "torch", "__init__.py"))


def test_recovery_when_the_exchange_did_not_happen(venv):
    swap_dir = _open_run(venv, ["begin", "copied", "verified", "exchange"])
    assert recover_swap(str(venv), swap_dir, 1)["action"] == "discarded the unfinished copy: the venv was never changed"
    assert not os.path.exists(os.path.join(swap_dir, "next"))


def test_recovery_refuses_a_venv_path_holding_something_else(venv, tmp_path):
    swap_dir = _open_run(venv, ["begin", "exchange"])
    os.rename(str(venv), str(tmp_path / "elsewhere"))
    os.mkdir(str(venv))
    with pytest.raises(SwapError) as err:
        recover_swap(str(venv), swap_dir, 1)
    assert str(err.value).startswith("venv path %s holds neither the venv nor the copy of interrupted swap run r1" % venv)


def test_a_leftover_copy_without_an_open_run_is_removed(venv):
    swap_dir = swap_dir_of(str(venv))
    os.makedirs(os.path.join(swap_dir, "next"))
    assert recover_swap(str(venv), swap_dir, 1) == {"action": "removed a leftover copy", "path": os.path.join(swap_dir, "next")}


def test_rebase_names_the_live_venv():
    result = {"msg": "x /s/.v.cuda_venv/next/lib/a.so y", "n": 3, "l": ["/s/.v.cuda_venv/next", "/s/.v.cuda_venv/nextx"]}
    expected = {"msg": "x /s/v/lib/a.so y", "n": 3, "l": ["/s/v", "/s/.v.cuda_venv/nextx"]}
    assert rebase(result, "/s/.v.cuda_venv/next", "/s/v") == expected
    assert rebase_argv(["/s/v/bin/python", "-c", "/s/v", "/s/vv/x"], "/s/v", "/c") == ("/c/bin/python", "-c", "/c", "/s/vv/x")


def test_the_swap_journal_names_a_folder_by_its_inode(tmp_path):
    st = os.lstat(str(tmp_path))
    assert dir_inode(str(tmp_path)) == (st.st_dev, st.st_ino)
    (tmp_path / "file").write_text("")
    os.symlink(str(tmp_path), str(tmp_path / "link"))
    assert [dir_inode(str(tmp_path / name)) for name in ("file", "link", "absent")] == [(-1, -1)] * 3


def _synced_dirs(monkeypatch):
    """(folder, its entries when it was synced) of each fsync_dir the swap makes."""
    synced = []

    def fsync_dir(path):
        synced.append((path, sorted(os.listdir(path))))
    monkeypatch.setattr(swap, "fsync_dir", fsync_dir)
    return synced


@pytest.mark.parametrize("atomic", [True, False])
def test_an_exchange_syncs_both_parent_folders_after_the_renames(tmp_path, monkeypatch, atomic):
    """Mutation guarded: the fsync of the parent folders after the exchange deleted (or made before it). After a
    power cut the venv's path could come back as the old venv although the run said repaired."""
    live = tmp_path / "venvs" / "train"
    copy = tmp_path / "venvs" / ".train.cuda_venv" / "next"
    live.mkdir(parents=True)
    copy.mkdir(parents=True)
    (live / "old").write_text("")
    (copy / "new").write_text("")
    if not atomic:
        monkeypatch.setattr(swap, "exchange_atomically", lambda a, b: False)
    synced = _synced_dirs(monkeypatch)
    method = exchange(str(live), str(copy), str(copy.parent))
    assert method == ("renameat2" if atomic else "renames")
    assert sorted(path for path, _entries in synced) == sorted([str(live.parent), str(copy.parent)])
    assert os.listdir(str(live)) == ["new"] and os.listdir(str(copy)) == ["old"]  # synced after the exchange
    assert dict(synced)[str(copy.parent)] == ["next"]  # no temporary name left when it was synced


def test_keeping_a_generation_syncs_previous_after_the_old_venv_moved_in(tmp_path, monkeypatch):
    """Mutation guarded: the fsync of ``previous/`` after keeping a generation deleted (or made before the rename):
    after a power cut the old venv could be neither at the copy's path nor in previous/."""
    swap_dir = tmp_path / ".train.cuda_venv"
    old = swap_dir / "next"
    old.mkdir(parents=True)
    synced = _synced_dirs(monkeypatch)
    kept = keep_generation(str(swap_dir), str(old), "20261205T200000Z-1", 1)
    assert kept == str(swap_dir / "previous" / "20261205T200000Z-1")
    assert synced == [(str(swap_dir / "previous"), ["20261205T200000Z-1"])]
