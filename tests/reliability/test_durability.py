"""Every file recovery reads after a crash reaches the disk before it counts, proven on the syscalls of a real repair.

A stand-in incident venv (``contaminated`` plus a damaged ``cuda-venv-tool``, whose console script names the venv)
is repaired once ``strategy: in_place`` (with ``evil``, whose RECORD lists a path outside the venv, so the RECORD is
trimmed before pip removes it) and once ``strategy: swap``, under ``strace -f``. The log of the module's own process
(threads included; the installers and probes it starts write nothing recovery reads) is read with an fd -> path
table, and for the exact paths the run wrote:

- a file replaced by rename (the snapshot manifests, the trimmed RECORD, the swap's rewritten script and RECORD):
  fsync'ed after its last write and before the rename that commits it; its folder fsync'ed after the rename and
  before the next journal record;
- an appended journal (the venv's ``.cuda_venv/journal.jsonl``, the swap's ``.NAME.cuda_venv/journal.jsonl``):
  fsync'ed after each append, before the next; its folder fsync'ed after the append that created it, and after the
  rename that keeps it as ``journal.prev.jsonl``;
- a snapshot's files (hard links in ``files/``): that folder fsync'ed after the links and before the manifest that
  makes the snapshot complete.

Recovery reads them (plugins/module_utils/_act/recovery.py, swap.py): the journals' open batches and swap runs, the
manifest and the files of a batch's snapshot; the installer reads the trimmed RECORD, the venv the rewritten files.
strace must be on PATH (``make reliability`` installs it); under CI (CI=true) its absence fails the test.
"""

import bisect
import collections
import json
import os
import re
import shutil
import subprocess

import pytest

from reliability_tools import repair_args, run_child
from tests.standin._layout import DistSpec
from tests.standin._wheel import write_wheel

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.health import PYCACHE_DIR
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import swap_dir_of
from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import make_dist

STRACE = shutil.which("strace")
SYSCALLS = ("openat", "open", "creat", "close", "dup", "dup2", "dup3", "fcntl", "write", "pwrite64", "writev",
            "pwritev", "pwritev2", "ftruncate", "fsync", "fdatasync", "rename", "renameat", "renameat2", "link",
            "linkat", "mkdir", "mkdirat", "syncfs", "chdir", "fchdir", "clone", "clone3")
WRITES = ("write", "pwrite64", "writev", "pwritev", "pwritev2", "ftruncate")
RENAME_EXCHANGE = 2
TOOL = DistSpec(name="cuda-venv-tool", version="1.0", requires_dist=(), elf_files=(), python_files=(), data_files=())
TOOL_INFO = "cuda_venv_tool-1.0.dist-info"
JOURNAL = "journal.jsonl"
PREVIOUS = "journal.prev.jsonl"


@pytest.fixture(scope="module")
def strace():
    if STRACE is None:
        message = "strace is not on PATH: make reliability installs it (apt-get install strace)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("under CI the durability test must run: " + message)
        pytest.skip(message)
    return STRACE


def incident(fresh, tmp_path, escaping):
    """A clone of ``contaminated`` with a damaged ``cuda-venv-tool`` (a console script: pip writes a shebang naming
    the venv, which a swap rewrites) and, when ``escaping``, ``evil``, whose RECORD lists a file outside the venv
    (prune=all removes it and trims its RECORD first). The repair's arguments, and the RECORD to be trimmed."""
    info = fresh("contaminated")
    wheels = tmp_path / "tool-wheels"
    wheels.mkdir()
    write_wheel(wheels, TOOL, {"cuda_venv_tool/__init__.py": (b"def main():\n    return 0\n", False),
                               TOOL_INFO + "/entry_points.txt": (b"[console_scripts]\ncuda-venv-tool = cuda_venv_tool:main\n", False)})
    subprocess.run([str(info.venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index", "--find-links", str(wheels),
                    "cuda-venv-tool==1.0"], check=True, env=dict(os.environ, PIP_CONFIG_FILE=os.devnull))
    site = next(info.venv.glob("lib/python3*/site-packages"))
    (site / "cuda_venv_tool" / "__init__.py").unlink()  # damaged: reinstalled
    args = repair_args(info, packages=["cuda-venv-tool==1.0"], find_links=[str(info.wheelhouse), str(info.extra_wheelhouse), str(wheels)])
    if not escaping:
        return info, args, None
    victim = tmp_path / "outside" / "victim.txt"
    victim.parent.mkdir()
    victim.write_bytes(b"precious\n")
    folder = make_dist(str(site), "evil", "1.0", files={"evil/__init__.py": b"x = 1\n"})
    with open(os.path.join(folder, "RECORD"), "a") as handle:
        handle.write("%s,,\n" % os.path.relpath(str(victim), str(site)))
    return info, dict(args, prune="all"), os.path.join(folder, "RECORD")


def traced_repair(strace, work, args):
    log = work / "strace.log"
    run = run_child(work, "cuda_venv_repair", args,
                    prefix=(strace, "-f", "-qq", "-s", "0", "-o", str(log), "-e", "trace=" + ",".join(SYSCALLS)))
    assert run.rc == 0 and run.result.get("healthy") is True and run.result.get("changed") is True, run.output[-4000:]
    return run, module_events(log.read_text(errors="surrogateescape"))


def test_an_in_place_repair_makes_each_file_durable_before_it_counts(strace, tmp_path, fresh):
    info, args, record = incident(fresh, tmp_path, escaping=True)
    run, events = traced_repair(strace, tmp_path / "in_place", args)
    assert run.result["strategy"] == "in_place", run.result.get("strategy_reason")
    state = os.path.join(str(info.venv), ".cuda_venv")
    snapshots = [os.path.join(state, "snapshots", r["snapshot"]) for r in records(os.path.join(state, PREVIOUS))
                 if r["phase"] == "begin"]
    assert snapshots, "the run journaled no batch"
    seen = check_durability(events)
    assert seen["appended"] == [os.path.join(state, JOURNAL)]
    assert seen["kept"] == [os.path.join(state, PREVIOUS)]
    assert seen["replaced"] == sorted([record] + [os.path.join(s, "manifest.json") for s in snapshots])
    assert seen["linked"] == sorted(os.path.join(s, "files") for s in snapshots)
    assert seen["made"] == sorted([state, os.path.join(state, "snapshots")] + snapshots + [os.path.join(s, "files") for s in snapshots])


def test_a_swap_repair_makes_each_file_durable_before_it_counts(strace, tmp_path, fresh):
    info, args, record = incident(fresh, tmp_path, escaping=True)
    run, events = traced_repair(strace, tmp_path / "swap", dict(args, strategy="swap"))
    assert run.result["strategy"] == "swap", run.result.get("strategy_reason")
    swap_dir = swap_dir_of(str(info.venv))
    copy = os.path.join(swap_dir, "next")
    site = os.path.relpath(str(next(info.venv.glob("lib/python3*/site-packages"))), str(info.venv))
    seen = check_durability(events)
    assert seen["appended"] == [os.path.join(swap_dir, JOURNAL)]
    assert seen["kept"] == [os.path.join(swap_dir, PREVIOUS)]
    assert "bin/cuda-venv-tool" in run.result["rewritten"], run.result["rewritten"]
    # The escaping rows are cut from the copy's RECORD (the live one is never written by a swap).
    assert seen["replaced"] == sorted([os.path.join(copy, "bin", "cuda-venv-tool"), os.path.join(copy, site, TOOL_INFO, "RECORD"),
                                       os.path.join(copy, os.path.relpath(record, str(info.venv)))])
    assert "linked" not in seen  # no snapshot: a failed copy is discarded
    assert seen["made"] == sorted([swap_dir, os.path.join(swap_dir, "previous"), os.path.join(str(info.venv), ".cuda_venv")])
    assert seen["exchanged"] == [str(info.venv)]  # the copy's filesystem synced after its last change, before this


def test_a_close_takes_effect_where_it_began_when_another_thread_reuses_its_descriptor():
    """From a CI run's log: the probe thread's close(4) began, the main thread's open of the folder returned 4, then
    the close's resumed line came. The folder's fsync(4) is the folder's (mutation: the close counted at its
    resume leaves that fsync on an unknown descriptor)."""
    log = "\n".join([
        '100 clone3({flags=CLONE_VM|CLONE_THREAD}, 88) = 101',
        '101 openat(AT_FDCWD, "/dev", O_RDONLY|O_DIRECTORY) = 4',
        '101 close(4 <unfinished ...>',
        '100 openat(AT_FDCWD, "/v/.s", O_RDONLY|O_CLOEXEC|O_DIRECTORY) = 4',
        '101 <... close resumed>)              = 0',
        '100 fsync(4 <unfinished ...>',
        '101 openat(AT_FDCWD, "/v/x", O_RDONLY <unfinished ...>',
        '100 <... fsync resumed>)              = 0',
        '101 <... openat resumed>)             = -1 ENOENT (No such file or directory)',
        '100 close(4)                          = 0',
    ])
    assert module_events(log) == [("open", "/dev"), ("close", "/dev"), ("open", "/v/.s"), ("fsync", "/v/.s"),
                                  ("close", "/v/.s")]


def records(path):
    with open(path) as handle:
        return [json.loads(line) for line in handle]


# --- the checks ---------------------------------------------------------------------------------------------------

def check_durability(events):
    """Assert the order of writes, fsyncs and renames; the paths each rule saw, by kind (none may be empty)."""
    at = collections.defaultdict(list)  # (kind, path) -> indexes in events, ascending
    for index, event in enumerate(events):
        at[event[:2]].append(index)
        if event[0] == "rename":
            at["renamed to", event[2]].append(index)
    journals = sorted(path for kind, path in list(at) if kind == "write" and os.path.basename(path) == JOURNAL)
    journal_writes = sorted(i for path in journals for i in at["write", path])
    seen = collections.defaultdict(set)
    problems = []

    def fsync_between(path, start, end):
        fsyncs = at["fsync", path]
        first = bisect.bisect_right(fsyncs, start)
        return first < len(fsyncs) and fsyncs[first] < end

    def next_journal_write(after):
        later = bisect.bisect_right(journal_writes, after)
        return journal_writes[later] if later < len(journal_writes) else len(events)

    for index, event in enumerate(events):
        if event[0] not in ("rename", "link"):
            continue
        kind, source, target = event[:3]
        folder = os.path.dirname(target)
        if kind == "link":
            if "/snapshots/" in target and os.path.basename(folder) == "files":
                seen["linked"].add(folder)
                manifest = next((i for i in at["renamed to", os.path.join(os.path.dirname(folder), "manifest.json")]
                                 if i > index), None)
                if manifest is None or not fsync_between(folder, index, manifest):
                    problems.append("snapshot file %s: folder not fsync'ed between the link and the manifest" % target)
            continue
        if source in journals and os.path.basename(target) == PREVIOUS:
            seen["kept"].add(target)
        else:
            writes = [i for i in at["write", source] if i < index]
            if not writes:
                continue  # a rename of what the run did not write (a folder of the swap's generations)
            seen["replaced"].add(target)
            if not fsync_between(source, writes[-1], index):
                problems.append("%s: not fsync'ed between its last write and the rename that commits it" % target)
        if not fsync_between(folder, index, next_journal_write(index)):
            problems.append("%s: folder not fsync'ed after the rename, before the next journal record" % target)
    for index, event in enumerate(events):
        if event[0] == "mkdir" and _recovery_reads(event[1]):
            seen["made"].add(event[1])
            if not fsync_between(os.path.dirname(event[1]), index, next_journal_write(index)):
                problems.append("%s: parent folder not fsync'ed after the mkdir, before the next journal record" % event[1])
        elif event[0] == "exchange":
            seen["exchanged"].add(event[1])
            copy = event[2]
            last = max([i for i, e in enumerate(events[:index]) if e[0] in ("write", "mkdir", "link", "rename")
                        and (e[-1] + "/").startswith(copy + "/")] or [-1])
            if not any(e[0] == "syncfs" for e in events[last + 1:index]):
                problems.append("%s: the copy's filesystem not synced between its last change and the exchange" % copy)
    for path in journals:
        seen["appended"].add(path)
        writes = at["write", path]
        moved = at["rename", path]
        for number, start in enumerate(writes):
            end = writes[number + 1] if number + 1 < len(writes) else len(events)
            if not fsync_between(path, start, end):
                problems.append("%s: append %d not fsync'ed before the next" % (path, number + 1))
            created = number == 0 or any(writes[number - 1] < i < start for i in moved)
            if created and not fsync_between(os.path.dirname(path), start, end):
                problems.append("%s: folder not fsync'ed after the append that created it" % path)
    assert not problems, "\n".join(problems)
    for kind in ("appended", "kept", "replaced"):
        assert seen[kind], "no %s file seen in the strace log: is the parsing right?" % kind
    return dict((kind, sorted(paths)) for kind, paths in seen.items())


def _recovery_reads(path):
    """A folder of a state dir (``.cuda_venv``, ``.NAME.cuda_venv``) other than the swap's copy (made durable by the
    syncfs before the exchange) and the shared bytecode folder (never read by recovery); not the probes' temporary
    folders."""
    parts = path.split(os.sep)
    states = [i for i, part in enumerate(parts) if part.endswith(".cuda_venv")]
    return bool(states) and parts[states[0] + 1:states[0] + 2] not in (["next"], [PYCACHE_DIR])


# --- the strace log -------------------------------------------------------------------------------------------------

LINE = re.compile(r"^(\d+)\s+(.*)$")
CALL = re.compile(r"^(\w+)\((.*)\)\s+=\s+(-?\d+|0x[0-9a-f]+|\?)")
STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


def module_events(text):
    """The file events of the traced module (the first process and its threads) in order:
    (open|close|write|fsync, path), (rename|exchange|link, source, target)."""
    calls = joined_calls(text)
    if not calls:
        raise AssertionError("the strace log is empty")
    module = threads_of(calls[0][0], calls)
    fds = {}  # the module's fd table, shared by its threads
    cwd = [None]
    events = []

    def resolve(dirfd, path):
        if path.startswith("/"):
            return os.path.normpath(path)
        base = cwd[0] if dirfd in ("AT_FDCWD", None) else fds.get(int(dirfd))
        return os.path.normpath(os.path.join(base or "?", path))

    for pid, name, args, ret in calls:
        if pid not in module:
            continue
        ok = ret != "?" and not ret.startswith("-")
        strings = [unescape(s) for s in STRING.findall(args)]
        fields = [f.strip() for f in STRING.sub('""', args).split(",")]
        if name in ("openat", "open", "creat") and ok:
            path = resolve(fields[0] if name == "openat" else None, strings[0])
            fds[int(ret)] = path
            events.append(("open", path))
        elif name == "close" and ok:
            events.append(("close", fds.pop(int(fields[0]), "?")))
        elif name in ("dup", "dup2", "dup3") or (name == "fcntl" and "F_DUPFD" in args):
            if ok and int(fields[0]) in fds:
                fds[int(ret)] = fds[int(fields[0])]
        elif name in WRITES and ok:
            events.append(("write", fds.get(int(fields[0]), "?")))
        elif name in ("fsync", "fdatasync") and ok:
            events.append(("fsync", fds.get(int(fields[0]), "?")))
        elif name in ("rename", "link") and ok:
            events.append((name, resolve(None, strings[0]), resolve(None, strings[1])))
        elif name in ("renameat", "renameat2", "linkat") and ok:
            dirs = [f for f in fields if f == "AT_FDCWD" or f.isdigit()]
            flags = fields[-1] if name == "renameat2" else ""
            kind = "link" if name == "linkat" else "exchange" if "RENAME_EXCHANGE" in flags or flags == str(RENAME_EXCHANGE) else "rename"
            events.append((kind, resolve(dirs[0], strings[0]), resolve(dirs[1], strings[1])))
        elif name in ("mkdir", "mkdirat") and ok:
            events.append(("mkdir", resolve(fields[0] if name == "mkdirat" else None, strings[0])))
        elif name == "syncfs" and ok:
            events.append(("syncfs", fds.get(int(fields[0]), "?")))
        elif name == "chdir" and ok:
            cwd[0] = resolve(None, strings[0])
        elif name == "fchdir" and ok:
            cwd[0] = fds.get(int(fields[0]))
    return events


def threads_of(pid, calls):
    """``pid`` and the threads it and they started (a thread may print before its clone returns)."""
    started = collections.defaultdict(list)
    for parent, name, args, ret in calls:
        if name in ("clone", "clone3") and "CLONE_THREAD" in args and ret.isdigit():
            started[parent].append(int(ret))
    found, todo = set(), [pid]
    while todo:
        current = todo.pop()
        found.add(current)
        todo.extend(t for t in started[current] if t not in found)
    return found


def joined_calls(text):
    """(pid, syscall, arguments, return value) per completed call, ``<unfinished ...>`` joined to its resume, in the
    order the calls took effect: at their end, but a ``close`` where it began. The kernel frees the descriptor when
    close starts, so another thread's open can return that number before the close's resumed line."""
    pending = {}  # pid -> (the call's text so far, the slot a close keeps in ``calls``)
    calls = []
    for raw in text.splitlines():
        match = LINE.match(raw)
        if not match:
            continue
        pid, body = int(match.group(1)), match.group(2)
        if body.endswith("<unfinished ...>"):
            head = body[:-len("<unfinished ...>")].rstrip()
            slot = len(calls) if head.startswith("close(") else None
            if slot is not None:
                calls.append(None)
            pending[pid] = (head, slot)
            continue
        slot = None
        resumed = re.match(r"^<\.\.\. \w+ resumed>\s?(.*)$", body)
        if resumed:
            head, slot = pending.pop(pid, ("", None))
            body = head + resumed.group(1)
        call = CALL.match(body)
        if call:
            found = (pid, call.group(1), call.group(2), call.group(3))
            if slot is None:
                calls.append(found)
            else:
                calls[slot] = found
    return [call for call in calls if call is not None]


def unescape(text):
    """strace's C escapes (\\n, \\t, \\", \\\\, \\ooo, \\xhh) back to the path's characters."""
    return re.sub(r"\\(x[0-9a-fA-F]{2}|[0-7]{1,3}|.)", _escape, text)


def _escape(match):
    code = match.group(1)
    if code[0] == "x":
        return chr(int(code[1:], 16))
    if code[0].isdigit():
        return chr(int(code, 8))
    return {"n": "\n", "t": "\t", "r": "\r", "v": "\v", "f": "\f"}.get(code, code)
