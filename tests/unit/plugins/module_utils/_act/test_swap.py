# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The swap strategy's parts on real trees: decision, copy, exchange, generations, recovery."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act import swap
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.journal import Journal
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.swap import (
    IN_PLACE, SWAP, Room, Strategy, SwapError, choose_strategy, dir_inode, exchange, exchange_atomically, finish_exchange,
    finish_missing_root, is_mount_point, keep_generation, live_changes, make_copy, open_swap, previous_generations, rebase,
    rebase_argv, recover_swap, swap_back)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.snapshot import scan_tree
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


def test_live_changes_name_every_path_written_since_the_copy_and_no_folder_for_its_times(venv, tmp_path):
    """What the installers would have written into the live venv while its copy was repaired: added, removed,
    replaced, grown and shrunk in place (the same inode, shared with the copy), retargeted, another mode, a file
    become a folder and a folder become a file. The folders whose times changed with them are not named.
    Mutations killed in live_changes: the added and removed paths made by any other set operator than ``^``; the
    common paths made by another operator than ``&`` or the loop over them run zero times; ``or``/``and`` swapped;
    the type test made ``==``, ``>``, ``>=``, ``<=``, ``is`` or negated; ``!= "d"`` made ``==``, ``>=``, ``<``,
    ``<=`` or ``is``; the identity compared with ``==``, ``<`` (misses the grown file), ``>`` (misses the shrunk one),
    ``<=``, ``>=``, ``is`` or ``is not``."""
    state_dir = str(venv / td.STATE_DIR_NAME)
    entries = make_copy(str(venv), str(tmp_path / "copy"), state_dir)
    site = venv / td.SITE
    td.replace_content(str(venv))  # torch/__init__.py: a new inode
    td.delete_file(str(venv))  # nvidia/cu13/lib/libcudart.so.13
    td.add_file(str(venv))  # extra.py
    td.retarget_symlink(str(venv))  # nvidia/cu13/lib/libcudart.so
    td.swap_file_and_dir(str(venv))  # readonly.txt a folder (with readonly.txt/inside), empty a file
    with open(str(venv / "pyvenv.cfg"), "ab") as handle:
        handle.write(b"include-system-site-packages = false\n")  # grown in place
    os.truncate(str(venv / "bin" / "pip"), 4)  # shrunk in place
    os.chmod(str(site / "torch-2.9.1.dist-info" / "METADATA"), 0o600)
    assert live_changes(str(venv), state_dir, entries) == sorted(
        [td.SITE + "/extra.py", td.SITE + "/nvidia/cu13/lib/libcudart.so.13", td.SITE + "/readonly.txt/inside"]) + sorted(
        ["bin/pip", "pyvenv.cfg", td.SITE + "/empty", td.SITE + "/nvidia/cu13/lib/libcudart.so", td.SITE + "/readonly.txt",
         td.SITE + "/torch-2.9.1.dist-info/METADATA", td.SITE + "/torch/__init__.py"])
    assert live_changes(str(venv), state_dir, make_copy(str(venv), str(tmp_path / "again"), state_dir)) == []


def test_live_changes_name_a_path_of_another_type_on_a_reused_inode_and_compare_types_by_value(venv):
    """The copy saw an empty regular file whose inode number a fifo of the same mode and time now has (the file was
    removed, the number reused): only the type tells them apart. The entries' type strings are equal to the scan's
    but other objects (as any caller may build them). Mutations killed in live_changes: the type test made ``<``
    (``"o" < "f"`` is false and the rest of the identity is the same) or ``is not``."""
    state_dir = str(venv / td.STATE_DIR_NAME)
    os.mkfifo(str(venv / "pipe"), 0o644)
    seen = scan_tree(str(venv), (td.STATE_DIR_NAME,))
    entries = {rel: entry._replace(type="".join([entry.type, ""])) for rel, entry in seen.items()}  # equal, not the same object
    assert all(entry.type == seen[rel].type and entry.type is not seen[rel].type for rel, entry in entries.items())
    entries["pipe"] = seen["pipe"]._replace(type="f")
    assert live_changes(str(venv), state_dir, entries) == ["pipe"]


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


def test_an_exchange_the_kernel_refuses_with_einval_is_answered_false_and_changes_nothing(tmp_path):
    """renameat2(RENAME_EXCHANGE) of a folder with its own subfolder fails with EINVAL, the errno of a filesystem
    without RENAME_EXCHANGE: answered False (the caller falls back), not raised. Mutation killed in
    exchange_atomically: that ``return False`` made ``return True`` (an exchange reported that never happened)."""
    a, _b = _two_trees(tmp_path)
    (a / "sub").mkdir()
    assert exchange_atomically(str(a), str(a / "sub")) is False
    assert sorted(os.listdir(str(a))) == ["sub", "which"] and (a / "which").read_text() == "old"


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


def test_generations_are_all_kept_while_fewer_than_keep(tmp_path):
    """Mutation killed in keep_generation: ``max(len(generations) - keep, 0)`` made ``max(..., -1)``, which drops the
    oldest (``[:-1]``) while there are fewer generations than ``keep``."""
    swap_dir = str(tmp_path)
    for run in ("r1", "r2", "r3"):
        (tmp_path / "next").mkdir()
        keep_generation(swap_dir, str(tmp_path / "next"), run, 5)
    assert [os.path.basename(p) for p in previous_generations(swap_dir)] == ["r1", "r2", "r3"]


@pytest.mark.parametrize("records, still_open", [
    ([("swap", dict(batch=None, step="begin")), ("swap", dict(batch=None, step="done"))], "r1"),
    ([("swap", dict(batch=None, step="begin")), ("done", dict(batch=None))], "r1"),
    ([("begin", dict(batch=1)), ("commit", dict(batch=1))], "r2"),
])
def test_the_open_swap_run_is_the_last_without_a_done_step_or_phase(tmp_path, records, still_open):
    """r1 is open (a swap begun); r2 ends with a ``done`` step, with a ``done`` phase, or not at all (a batch begun and
    committed). Mutations killed in open_swap: ``step == "done"`` or ``phase == "done"`` made ``is`` (a record read
    from the file is never the literal), the ``or`` made ``and``, ``phase == "done"`` made ``<`` or ``<=`` (the phases
    ``begin`` and ``commit`` sort before ``done``)."""
    Journal(str(tmp_path), run="r1").append("swap", batch=None, step="begin")
    second = Journal(str(tmp_path), run="r2")
    for phase, data in records:
        second.append(phase, **data)
    run, found = open_swap(Journal(str(tmp_path)))
    assert run == still_open
    assert [(r["phase"], r.get("step")) for r in found] == (
        [("swap", "begin")] if still_open == "r1" else [("begin", None), ("commit", None)])


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
    assert found == {"run": "r1", "last_step": "verified", "action": "discarded the unfinished copy: the venv was never changed",
                     "reason": "recovered interrupted swap run r1 (last step verified)"}
    assert os.listdir(swap_dir) == ["journal.prev.jsonl"] and td.tree_digest(str(venv)) == digest
    assert recover_swap(str(venv), swap_dir, 1) is None


@pytest.mark.parametrize("steps", [["begin", "copied", "verified", "exchange"], ["begin", "copied", "verified", "exchange", "exchanged"]])
def test_recovery_after_the_exchange_keeps_the_old_venv_as_previous(venv, steps):
    """A run killed after its exchange, before or after its ``exchanged`` record. Mutations killed: the exchange
    record picked by ``>=``, or by ``is not`` (the ``exchanged`` record, which names no sides, taken for the plan)
    in recover_swap."""
    swap_dir = _open_run(venv, steps, exchanged=True)
    found = recover_swap(str(venv), swap_dir, 1)
    assert found == {"run": "r1", "last_step": steps[-1], "action": "completed the swap: the repaired venv is in place",
                     "previous": os.path.join(swap_dir, "previous", "r1"),
                     "reason": "recovered interrupted swap run r1 (last step %s)" % steps[-1]}
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


@pytest.mark.parametrize("offset", [-1, 1])
def test_recovery_refuses_a_venv_path_whose_inode_sorts_below_or_above_the_journaled_one(venv, offset):
    """The journal names a live inode one below or one above the one the venv path holds (and not the copy's).
    Mutations killed in recover_swap: ``dir_inode(root) != live_inode`` made ``<`` or ``>``."""
    swap_dir = _open_run(venv, ["begin"])
    dev, ino = dir_inode(str(venv))
    nxt = os.path.join(swap_dir, "next")
    Journal(swap_dir, run="r1").append("swap", batch=None, step="exchange", other=nxt, live_inode=[dev, ino + offset],
                                       copy_inode=list(dir_inode(nxt)))
    with pytest.raises(SwapError) as err:
        recover_swap(str(venv), swap_dir, 1)
    assert str(err.value) == ("venv path %s holds neither the venv nor the copy of interrupted swap run r1; the swap journal "
                              "%s says what was planned" % (venv, os.path.join(swap_dir, "journal.jsonl")))
    assert dir_inode(str(venv)) == (dev, ino) and os.path.isdir(nxt)


@pytest.mark.parametrize("after", ["exchanged", "batch"])
def test_recovery_reads_the_sides_from_the_last_exchange_record_of_the_run(venv, after):
    """A run with two exchange records, the first naming sides that are gone, and a record after the second (the
    ``exchanged`` step, or one that sorts before ``exchange``). Mutations killed in recover_swap: the first exchange
    record taken (``[-0]``, ``[not 1]``), the records picked by ``>=``, ``<=`` or ``is not``."""
    swap_dir = _open_run(venv, ["begin", "copied"])
    nxt = os.path.join(swap_dir, "next")
    journal = Journal(swap_dir, run="r1")
    journal.append("swap", batch=None, step="exchange", other=os.path.join(swap_dir, "gone"), live_inode=[0, 1], copy_inode=[0, 2])
    journal.append("swap", batch=None, step="exchange", other=nxt, live_inode=list(dir_inode(str(venv))), copy_inode=list(dir_inode(nxt)))
    exchange(str(venv), nxt, swap_dir)
    journal.append("swap", batch=None, step=after)
    found = recover_swap(str(venv), swap_dir, 1)
    assert found["action"] == "completed the swap: the repaired venv is in place"
    assert found["previous"] == os.path.join(swap_dir, "previous", "r1") and os.listdir(str(venv)) == ["bin"]


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


def _fsynced(monkeypatch):
    """(path, {name: inode} of its entries then, for a folder) of each real os.fsync, in order; the path is read from
    /proc/self/fd, the real fsync then made."""
    synced = []
    real_fsync = os.fsync

    def fsync(fd):
        path = os.readlink("/proc/self/fd/%d" % fd)
        names = sorted(os.listdir(path)) if os.path.isdir(path) else None
        synced.append((path, None if names is None else dict((n, os.lstat(os.path.join(path, n)).st_ino) for n in names)))
        real_fsync(fd)
    monkeypatch.setattr(os, "fsync", fsync)
    return synced


@pytest.mark.parametrize("atomic", [True, False])
def test_an_exchange_syncs_both_parent_folders_after_the_renames_with_renameat2_or_a_mocked_libc_without_it(tmp_path, monkeypatch, atomic):
    """Mutation guarded: the fsync of the parent folders after the exchange deleted (the loop over them run zero
    times) or made before it. After a power cut the venv's path could come back as the old venv although the run
    said repaired. The real fsyncs are observed; only the libc without renameat2 is a stand-in."""
    venvs = tmp_path.resolve() / "venvs"
    live, copy = venvs / "train", venvs / ".train.cuda_venv" / "next"
    live.mkdir(parents=True)
    copy.mkdir(parents=True)
    ino = dict((path.name, os.lstat(str(path)).st_ino) for path in (live, copy, copy.parent))
    if not atomic:
        monkeypatch.setattr(swap, "_renameat2", lambda: None)  # a C library older than glibc 2.28
    synced = _fsynced(monkeypatch)
    assert exchange(str(live), str(copy), str(copy.parent)) == ("renameat2" if atomic else "renames")
    # both parents, once each, in order, after the renames (each name holds the other side; no temporary name left)
    assert synced == [(str(venvs), {".train.cuda_venv": ino[".train.cuda_venv"], "train": ino["next"]}),
                      (str(copy.parent), {"next": ino["train"]})]


def test_keeping_a_generation_syncs_previous_after_the_old_venv_moved_in(tmp_path, monkeypatch):
    """Mutation guarded: the fsync of ``previous/`` after keeping a generation deleted (or made before the rename):
    after a power cut the old venv could be neither at the copy's path nor in previous/. The new ``previous/`` is
    made durable in the swap dir first (make_dirs); the second generation needs only ``previous/`` synced."""
    swap_dir = tmp_path.resolve() / ".train.cuda_venv"
    old = swap_dir / "next"
    old.mkdir(parents=True)
    first = os.lstat(str(old)).st_ino
    synced = _fsynced(monkeypatch)
    kept = keep_generation(str(swap_dir), str(old), "20261205T200000Z-1", 1)
    assert kept == str(swap_dir / "previous" / "20261205T200000Z-1")
    previous = os.lstat(str(swap_dir / "previous")).st_ino
    assert synced == [(str(swap_dir), {"next": first, "previous": previous}),
                      (str(swap_dir / "previous"), {"20261205T200000Z-1": first})]
    del synced[:]
    old.mkdir()
    second = os.lstat(str(old)).st_ino
    assert keep_generation(str(swap_dir), str(old), "20261205T210000Z-2", 1) == str(swap_dir / "previous" / "20261205T210000Z-2")
    assert synced == [(str(swap_dir / "previous"), {"20261205T200000Z-1": first, "20261205T210000Z-2": second})]
    assert previous_generations(str(swap_dir)) == [str(swap_dir / "previous" / "20261205T210000Z-2")]


def _generations(venv, runs):
    swap_dir = swap_dir_of(str(venv))
    for run in runs:
        os.makedirs(os.path.join(swap_dir, "previous", run))
        pathlib.Path(swap_dir, "previous", run, "which").write_text(run)
    return swap_dir


def test_swap_back_exchanges_the_venv_with_its_newest_generation(tmp_path):
    """Mutations killed in swap_back: the newest taken as ``generations[-2]``, ``[-0]``, ``[1]``, ``[~1]``, ``[not 1]``
    or ``[+1]``; ``"swapped_back": True`` made False; ``not generations`` negated (or its ``not`` dropped)."""
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / "which").write_text("live")
    swap_dir = _generations(venv, ["r1", "r2", "r3"])
    newest = os.path.join(swap_dir, "previous", "r3")
    inodes = [list(dir_inode(str(venv))), list(dir_inode(newest))]
    assert swap_back(str(venv), swap_dir, Journal(swap_dir, run="back")) == {"swapped_back": True, "method": "renameat2", "previous": newest}
    assert (venv / "which").read_text() == "r3"
    assert [pathlib.Path(swap_dir, "previous", run, "which").read_text() for run in ("r1", "r2", "r3")] == ["r1", "r2", "live"]
    records = [json.loads(line) for line in pathlib.Path(swap_dir, "journal.prev.jsonl").read_text().splitlines()]
    assert [(r["run"], r["step"], r.get("kind"), r.get("other"), r.get("live_inode"), r.get("copy_inode"), r.get("method"))
            for r in records] == [("back", "exchange", "swap_back", newest, inodes[0], inodes[1], None),
                                  ("back", "done", None, None, None, None, "renameat2")]
    assert not os.path.exists(os.path.join(swap_dir, "journal.jsonl"))


def test_swap_back_without_a_generation_is_refused(tmp_path):
    """Mutations killed in swap_back: ``if not generations`` negated or its ``not`` dropped (an IndexError, or a
    swap back refused although a generation is there)."""
    venv = tmp_path / "venv"
    venv.mkdir()
    swap_dir = swap_dir_of(str(venv))
    os.mkdir(swap_dir)
    with pytest.raises(SwapError) as err:
        swap_back(str(venv), swap_dir, Journal(swap_dir, run="back"))
    assert str(err.value) == "venv %s has no previous generation to swap back to (none under %s)" % (
        venv, os.path.join(swap_dir, "previous"))
    assert os.listdir(swap_dir) == []
