# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whole-tree snapshots by hard links, and an exact, crash-safe restore.

Private to the gpuops.cuda_venv collection: not a public API.

``Snapshot.take`` records every directory, file and symlink of a tree (type,
mode, owner, size, mtime, symlink target, inode) in a manifest and hard-links
every regular file into ``<snap_dir>/files/<n>`` (a copy where linking fails).
Linking is O(files) metadata work and keeps the bytes of every inode the tree
had, provided nobody writes into those inodes: installers unlink or rename
files, and this module only ever links or renames new names into place.

The manifest is written last, fsync'ed and renamed into place: a snapshot
without one is incomplete and can only be discarded. ``restore`` makes the tree
equal the manifest and may be killed and rerun any number of times.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import time
from typing import Dict, Iterable, List, NamedTuple, Optional

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.crash_points import crash_point
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.durable import fsync_dir, fsync_file, make_dirs, replace_file, replace_with

MANIFEST_NAME = "manifest.json"
FILES_DIR = "files"
MANIFEST_FORMAT = 1


class SnapshotError(CudaVenvError):
    """A snapshot cannot be taken, read or restored."""


class SnapshotIncomplete(SnapshotError):
    """The snapshot has no manifest: taking it never finished."""


class SnapshotDamaged(SnapshotError):
    """Files were written in place, through the inode the snapshot links to: their old bytes are gone."""

    def __init__(self, root: str, paths: List[str]) -> None:
        self.paths = paths
        shown = ", ".join(paths[:5]) + (" and %d more" % (len(paths) - 5) if len(paths) > 5 else "")
        super().__init__(
            "cannot restore %s: %d file(s) were written in place, so the snapshot lost their old bytes: %s; "
            "nothing was restored; reinstall the distributions that own them" % (root, len(paths), shown)
        )


class Entry(NamedTuple):
    """One path of a tree, as lstat saw it. Also the manifest's row format."""

    path: str  # relative to the root, "/"-separated; "." is the root
    type: str  # "d" directory, "f" regular file, "l" symlink, "o" other (fifo, socket, device)
    mode: int  # permission bits (stat.S_IMODE)
    uid: int
    gid: int
    size: int
    mtime_ns: int
    target: Optional[str]  # symlink target
    dev: int
    ino: int
    nlink: int
    blob: Optional[int]  # files/<blob> in the snapshot, for regular files


class Changes(NamedTuple):
    """Relative paths that differ between a tree and a snapshot."""

    added: List[str]
    removed: List[str]
    modified: List[str]


class Snapshot:
    """A complete snapshot: its directory and its manifest's entries by path."""

    def __init__(self, snap_dir: str, entries: Dict[str, Entry], exclude: Iterable[str], copied: Iterable[int], root: str, created: str) -> None:
        self.snap_dir = snap_dir
        self.entries = entries
        self.exclude = tuple(exclude)
        self.copied = frozenset(copied)
        self.root = root
        self.created = created

    @classmethod
    def take(cls, root: str, snap_dir: str, exclude: Iterable[str] = ()) -> "Snapshot":
        """Snapshot the tree at ``root``; ``exclude`` lists paths to leave out (the state dir)."""
        root = os.path.realpath(root)
        snap_dir = os.path.abspath(snap_dir)
        excluded = _relative_excludes(root, exclude)
        inside = _relative(root, snap_dir)
        if inside is not None and not _is_excluded(inside, excluded):
            raise SnapshotError("snapshot dir %s is inside the tree %s but not excluded; exclude its parent state dir" % (snap_dir, root))
        if is_complete(snap_dir):
            raise SnapshotError("snapshot %s already exists; restore or discard it before taking another" % snap_dir)
        try:
            discard_snapshot(snap_dir)  # an incomplete one, left by a crash
            return cls._take(root, snap_dir, excluded)
        except OSError as exc:
            raise SnapshotError("cannot snapshot %s into %s: %s" % (root, snap_dir, exc)) from exc

    @classmethod
    def _take(cls, root: str, snap_dir: str, excluded: tuple) -> "Snapshot":
        files_dir = os.path.join(snap_dir, FILES_DIR)
        if os.path.lexists(files_dir):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), files_dir)
        make_dirs(files_dir)
        entries = scan_tree(root, excluded)
        blobs = {}  # type: Dict[tuple, int]
        copied = []
        for rel in sorted(entries):
            entry = entries[rel]
            if entry.type != "f":
                continue
            key = (entry.dev, entry.ino)
            if key not in blobs:
                blobs[key] = len(blobs)
                if not link_or_copy(_abs(root, rel), os.path.join(files_dir, str(blobs[key]))):
                    copied.append(blobs[key])
                crash_point("snapshot.link")
            entries[rel] = entry._replace(blob=blobs[key])
        fsync_dir(files_dir)
        snapshot = cls(snap_dir, entries, excluded, copied, root, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        snapshot._write_manifest()
        return snapshot

    @classmethod
    def load(cls, snap_dir: str) -> "Snapshot":
        path = os.path.join(snap_dir, MANIFEST_NAME)
        try:
            with open(path, "r", encoding="ascii") as handle:
                doc = json.load(handle)
        except FileNotFoundError:
            raise SnapshotIncomplete("snapshot %s has no manifest: it was never completed; discard it" % snap_dir) from None
        except (OSError, ValueError) as exc:
            raise SnapshotError("snapshot manifest %s is unreadable (%s); the snapshot cannot be used" % (path, exc)) from None
        if doc.get("format") != MANIFEST_FORMAT or doc.get("fields") != list(Entry._fields):
            raise SnapshotError(
                "snapshot manifest %s has format %r, expected %d; it was written by another version" % (path, doc.get("format"), MANIFEST_FORMAT)
            )
        entries = dict((row[0], Entry(*row)) for row in doc["entries"])
        return cls(snap_dir, entries, doc["exclude"], doc["copied"], doc["root"], doc["created"])

    def changes(self, root: str) -> Changes:
        """What differs now: added, removed, modified paths (directory mtimes are not compared)."""
        return self._compare(scan_tree(os.path.realpath(root), self.exclude))

    def restore(self, root: str) -> Changes:
        """Make the tree at ``root`` equal the snapshot, bytes and metadata; return what it undid."""
        root = os.path.realpath(root)
        try:
            current = scan_tree(root, self.exclude)
            undone = self._compare(current)
            _Restore(root, self, current).run()
        except OSError as exc:
            raise SnapshotError("restoring %s from snapshot %s stopped: %s; run the restore again to finish it" % (root, self.snap_dir, exc)) from exc
        return undone

    def discard(self) -> None:
        discard_snapshot(self.snap_dir)

    def blob_path(self, entry: Entry) -> str:
        return os.path.join(self.snap_dir, FILES_DIR, str(entry.blob))

    def content_matches(self, current: Optional[Entry], want: Entry) -> Optional[bool]:
        """Whether a file's bytes are the snapshot's: True, False, or None when its inode was written in place."""
        if current is None or current.type != "f":
            return False
        if want.blob in self.copied:
            # A copy (another filesystem) holds the bytes and restores make new inodes: compare size and mtime.
            return current.size == want.size and current.mtime_ns == want.mtime_ns
        if (current.dev, current.ino) == (want.dev, want.ino):
            # Same inode as the snapshot link: a size change means someone wrote into it and the
            # snapshot lost those bytes. An equal-size write cannot be told from a touch.
            return None if current.size != want.size else True
        try:
            blob = os.lstat(self.blob_path(want))
        except FileNotFoundError:
            return False
        return (current.dev, current.ino) == (blob.st_dev, blob.st_ino)

    def _compare(self, current: Dict[str, Entry]) -> Changes:
        added = sorted(rel for rel in current if rel not in self.entries)
        removed = sorted(rel for rel in self.entries if rel not in current)
        modified = sorted(rel for rel, want in self.entries.items() if rel in current and not self._matches(current[rel], want))
        return Changes(added, removed, modified)

    def _matches(self, current: Entry, want: Entry) -> bool:
        if current.type != want.type or (current.uid, current.gid) != (want.uid, want.gid):
            return False
        if want.type == "d":
            return current.mode == want.mode
        if want.type == "l":
            return current.target == want.target and current.mtime_ns == want.mtime_ns
        if current.mode != want.mode or current.mtime_ns != want.mtime_ns:
            return False
        return want.type != "f" or self.content_matches(current, want) is True

    def _write_manifest(self) -> None:
        doc = {
            "format": MANIFEST_FORMAT,
            "root": self.root,
            "created": self.created,
            "exclude": list(self.exclude),
            "copied": sorted(self.copied),
            "fields": list(Entry._fields),
            "entries": [list(self.entries[rel]) for rel in sorted(self.entries)],
        }
        data = json.dumps(doc, separators=(",", ":")).encode("ascii")  # dumps, not dump: one C-encoder pass
        crash_point("snapshot.manifest")
        replace_file(os.path.join(self.snap_dir, MANIFEST_NAME), data)


class _Restore:
    """One restore pass: remove, create directories, place files and symlinks, then metadata."""

    def __init__(self, root: str, snapshot: Snapshot, current: Dict[str, Entry]) -> None:
        self.root = root
        self.snapshot = snapshot
        self.want = snapshot.entries
        self.current = current
        self.touched = set()  # paths whose inode changed: their metadata is read again
        self.dirty = set()  # directories whose entries changed: fsync'ed at the end
        self.as_root = os.geteuid() == 0
        self.opened = set()  # directories made writable for this pass (non-root only)

    def run(self) -> None:
        if self.current["."].type != "d":
            raise SnapshotError("restore root %s is not a directory" % self.root)
        files = self._files_to_place()  # raises before any change when the snapshot lost bytes
        self._remove_unwanted()
        self._create_dirs()
        self._place_files_and_links(files)
        self._restore_metadata()
        for path in sorted(self.dirty):
            if os.path.isdir(path):
                fsync_dir(path)

    def _remove_unwanted(self) -> None:
        doomed = [rel for rel, cur in self.current.items() if rel not in self.want or self.want[rel].type != cur.type]
        for rel in sorted(doomed, key=_depth, reverse=True):
            path = self._changing(rel)
            if self.current.pop(rel).type == "d":
                os.rmdir(path)
            else:
                os.unlink(path)
            crash_point("restore.remove")

    def _create_dirs(self) -> None:
        missing = [rel for rel, want in self.want.items() if want.type == "d" and rel not in self.current]
        for rel in sorted(missing, key=_depth):
            os.mkdir(self._changing(rel), 0o700)
            crash_point("restore.mkdir")

    def _place_files_and_links(self, files: List[str]) -> None:
        placed = {}  # type: Dict[int, str]
        for rel in files:
            # Later links of one blob link to its first placed path: one inode again, even from a copy.
            blob = self.want[rel].blob
            source = placed.get(blob) or self.snapshot.blob_path(self.want[rel])
            placed[blob] = self._place(rel, lambda tmp, src=source: link_or_copy(src, tmp))
        for rel in sorted(self.want):
            want, cur = self.want[rel], self.current.get(rel)
            if want.type == "l" and (cur is None or cur.target != want.target):
                self._place(rel, lambda tmp, w=want: os.symlink(w.target, tmp))

    def _files_to_place(self) -> List[str]:
        """Files whose inode is not the snapshot's; for a copied blob, its whole link group, so links stay links."""
        groups = {}  # type: Dict[int, List[str]]
        for rel, want in self.want.items():
            if want.type == "f":
                groups.setdefault(want.blob, []).append(rel)
        chosen, damaged = [], []
        for blob, rels in groups.items():
            stale = []
            for rel in rels:
                same = self.snapshot.content_matches(self.current.get(rel), self.want[rel])
                if same is None:
                    damaged.append(rel)
                elif not same:
                    stale.append(rel)
            if blob in self.snapshot.copied and (stale or len(set(_identity(self.current.get(rel)) for rel in rels)) > 1):
                stale = rels
            chosen.extend(stale)
        if damaged:
            raise SnapshotDamaged(self.root, sorted(damaged))
        return sorted(chosen)

    def _place(self, rel: str, make) -> str:
        """Create the new name beside the target, then rename it over: never write an existing inode.
        Its folder is fsync'ed with the other changed ones at the end of the pass."""
        path = self._changing(rel)
        replace_with(path, make, sync_folder=False)
        crash_point("restore.replace")
        return path

    def _restore_metadata(self) -> None:
        # Directory mtimes last and deepest first: every entry change above has already happened.
        others = sorted(rel for rel, want in self.want.items() if want.type != "d")
        dirs = sorted((rel for rel, want in self.want.items() if want.type == "d"), key=_depth, reverse=True)
        for rel in others + dirs:
            want = self.want[rel]
            path = _abs(self.root, rel)
            if rel in self.touched or want.type == "d":
                cur = _lstat_entry(rel, path)
            else:
                cur = self.current.get(rel)
            if cur is not None:
                self._set_metadata(path, cur, want)

    def _set_metadata(self, path: str, cur: Entry, want: Entry) -> None:
        owner = self.as_root and (cur.uid, cur.gid) != (want.uid, want.gid)
        if owner:
            os.lchown(path, want.uid, want.gid)
        # chown clears setuid/setgid bits, so the mode goes back after it.
        if want.type != "l" and (owner or cur.mode != want.mode):
            os.chmod(path, want.mode)
        if cur.mtime_ns != want.mtime_ns:
            os.utime(path, ns=(os.lstat(path).st_atime_ns, want.mtime_ns), follow_symlinks=False)
        if owner or cur.mode != want.mode or cur.mtime_ns != want.mtime_ns:
            crash_point("restore.metadata")

    def _changing(self, rel: str) -> str:
        """The absolute path of ``rel``, about to get a new inode or be removed: note it and open its parent."""
        path = _abs(self.root, rel)
        parent = os.path.dirname(path)
        self.touched.add(rel)
        self.dirty.add(parent)
        if not self.as_root and parent not in self.opened:
            # A read-only directory (its mode comes back in the metadata pass) must accept changes.
            mode = stat.S_IMODE(os.stat(parent).st_mode)
            if mode & 0o300 != 0o300:
                os.chmod(parent, mode | 0o300)
            self.opened.add(parent)
        return path


def scan_tree(root: str, exclude: Iterable[str] = ()) -> Dict[str, Entry]:
    """Every path under ``root`` (which must be real, no symlink) by relative path, without following symlinks."""
    excluded = frozenset(exclude)
    top = os.lstat(root)
    if not stat.S_ISDIR(top.st_mode):
        raise SnapshotError("%s is not a directory" % root)
    entries = {".": _entry(".", top, None)}
    pending = [("", root)]
    while pending:
        prefix, directory = pending.pop()
        with os.scandir(directory) as listing:
            for item in listing:
                rel = prefix + item.name
                if rel in excluded:
                    continue
                st = item.stat(follow_symlinks=False)
                entry = _entry(rel, st, os.readlink(item.path) if stat.S_ISLNK(st.st_mode) else None)
                entries[rel] = entry
                if entry.type == "d":
                    pending.append((rel + "/", item.path))
    return entries


def escaping_directory_links(root: str, entries: Dict[str, Entry]) -> List[str]:
    """The symlinks in a scanned tree that lead to a directory outside ``root``: an installer writes through them."""
    real_root = os.path.realpath(root)
    found = []
    for rel, entry in sorted(entries.items()):
        if entry.type != "l":
            continue
        target = os.path.realpath(os.path.join(real_root, rel))
        inside = target == real_root or target.startswith(real_root + os.sep)
        if not inside and os.path.isdir(target):
            found.append(rel)
    return found


def is_complete(snap_dir: str) -> bool:
    return os.path.isfile(os.path.join(snap_dir, MANIFEST_NAME))


def discard_snapshot(snap_dir: str) -> None:
    """Remove a snapshot, complete or not: the manifest first, so a half-removed one reads as incomplete."""
    if not os.path.lexists(snap_dir):
        return
    manifest = os.path.join(snap_dir, MANIFEST_NAME)
    if os.path.lexists(manifest):
        os.unlink(manifest)
        fsync_dir(snap_dir)
    shutil.rmtree(snap_dir)


def _entry(rel: str, st: os.stat_result, target: Optional[str]) -> Entry:
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        kind = "d"
    elif stat.S_ISREG(mode):
        kind = "f"
    elif stat.S_ISLNK(mode):
        kind = "l"
    else:
        kind = "o"
    return Entry(rel, kind, stat.S_IMODE(mode), st.st_uid, st.st_gid, st.st_size, st.st_mtime_ns, target, st.st_dev, st.st_ino, st.st_nlink, None)


def _lstat_entry(rel: str, path: str) -> Optional[Entry]:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return _entry(rel, st, os.readlink(path) if stat.S_ISLNK(st.st_mode) else None)


def link_or_copy(src: str, dst: str) -> bool:
    """Hard-link src to the new name dst; copy (and fsync) where linking fails. True when linked."""
    try:
        os.link(src, dst, follow_symlinks=False)
        return True
    except FileExistsError:
        raise  # dst is taken: never copied over
    except OSError:
        if not os.path.isfile(src):
            raise
    shutil.copy2(src, dst, follow_symlinks=False)
    fsync_file(dst)
    return False


def _identity(entry: Optional[Entry]) -> Optional[tuple]:
    """The file an entry names, (st_dev, st_ino); None for no entry."""
    return (entry.dev, entry.ino) if entry is not None else None


def _abs(root: str, rel: str) -> str:
    return root if rel == "." else root + "/" + rel


def _depth(rel: str) -> int:
    return -1 if rel == "." else rel.count("/")


def _relative(root: str, path: str) -> Optional[str]:
    """``path`` relative to ``root`` when it lies inside it (symlinks resolved), else None."""
    real = os.path.realpath(path)
    if real == root:
        return "."
    if real.startswith(root.rstrip("/") + "/"):
        return real[len(root.rstrip("/")) + 1:]
    return None


def _relative_excludes(root: str, exclude: Iterable[str]) -> tuple:
    rels = (_relative(root, path if os.path.isabs(path) else os.path.join(root, path)) for path in exclude)
    return tuple(sorted(rel for rel in rels if rel not in (None, ".")))


def _is_excluded(rel: str, excluded: Iterable[str]) -> bool:
    return any(rel == item or rel.startswith(item + "/") for item in excluded)
