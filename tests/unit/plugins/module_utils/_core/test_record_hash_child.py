# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the hashing children (record_check.digests_in_child): a real child Python running record_hash.py, its
large files mapped a window at a time; a file truncated while mapped (a real SIGBUS) ends the child, as a kill does;
a child that ended answers what it finished, and the caller hashes the rest by reading."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import zipfile

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core import record_hash
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.record_hash import (
    CHUNK,
    MAP_WINDOW,
    MAPPED_AT_LEAST,
    file_digest,
)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging import record_check
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.record_check import (
    _digest_share,
    digests_in_child,
)
from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import b64_sha256

SPARSE = 2 * 1024 * 1024 * 1024  # hashing this many zeros takes the child about a second here


def test_the_child_answers_each_job_in_order_as_file_digest_does(tmp_path):
    odd = "odd\nname\udcff"  # a newline, and a byte that is not UTF-8 (0xff)
    data = {"empty": b"", "small": b"abc", "large": os.urandom(3 * CHUNK + 12345), odd: b"x\n"}
    paths = {}
    for name, content in data.items():
        paths[name] = os.path.join(str(tmp_path), name)
        with open(paths[name], "wb") as handle:
            handle.write(content)
    (tmp_path / "folder").mkdir()
    jobs = [(paths["large"], "sha256"), (paths["small"], "sha512"), (str(tmp_path / "missing"), "sha256"),
            (str(tmp_path / "folder"), "sha256"), (paths["empty"], "sha256"), (paths[odd], "sha256")]
    assert digests_in_child(jobs) == [
        b64_sha256(data["large"]),
        file_digest(paths["small"], "sha512"),
        None,
        None,
        b64_sha256(b""),
        b64_sha256(b"x\n"),
    ]
    assert digests_in_child([]) == []


def _my_children():
    """The pids of this process's children, from /proc."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/stat" % pid, "rb") as handle:
                if int(handle.read().rsplit(b")", 1)[1].split()[1]) == os.getpid():
                    found.append(pid)
        except (OSError, ValueError, IndexError):
            continue
    return found


def _children_reading(path):
    """The pids of this process's children that have ``path`` open."""
    found = []
    for pid in _my_children():
        fds = "/proc/%s/fd" % pid
        try:
            if any(os.readlink(os.path.join(fds, fd)) == path for fd in os.listdir(fds)):
                found.append(int(pid))
        except OSError:
            continue
    return found


def _kill_once_reading(path, done, emptied):
    """Kill the child hashing ``path`` (SIGKILL), then empty the file (``emptied`` set): what the share's thread
    hashes after is b""."""
    while not done.is_set():
        for pid in _children_reading(path):
            os.kill(pid, signal.SIGKILL)
            os.truncate(path, 0)
            emptied.set()
            return
        time.sleep(0.001)


def _big_and_small(tmp_path, text):
    big, small = str(tmp_path / "big.so"), str(tmp_path / "small.py")
    with open(big, "wb") as handle:
        handle.truncate(SPARSE)  # a hole: no disk used
    with open(small, "wb") as handle:
        handle.write(text)
    return big, small


def _while_killing(big, work, emptied=None):
    done, emptied = threading.Event(), emptied or threading.Event()
    killing = threading.Thread(target=_kill_once_reading, args=(big, done, emptied))
    killing.start()
    try:
        return work()
    finally:
        done.set()
        killing.join()


def test_a_child_killed_while_it_hashes_answers_nothing_more_and_the_share_is_finished_by_reading(tmp_path):
    big, small = _big_and_small(tmp_path, b"print(1)\n")
    jobs = [(big, "sha256"), (small, "sha256")]
    answered = _while_killing(big, lambda: digests_in_child(jobs))
    assert os.path.getsize(big) == 0  # emptied once the child reading it was killed
    assert answered == []  # killed on the first file: nothing answered
    # The share's thread finishes it by reading: the big file as it is now (empty), the small one.
    assert _digest_share(jobs, False) == [b64_sha256(b""), b64_sha256(b"print(1)\n")]


def test_a_share_whose_child_ends_early_is_finished_by_its_thread(tmp_path, monkeypatch):
    big, small = _big_and_small(tmp_path, b"print(2)\n")
    emptied = threading.Event()
    real = record_check.digests_in_child

    def answered_once_emptied(jobs):
        """The real child's answer, returned once the killer has emptied the file: the thread then reads it empty (the
        killer's truncate would otherwise race the thread's reading)."""
        answered = real(jobs)
        emptied.wait(60)
        return answered
    monkeypatch.setattr(record_check, "digests_in_child", answered_once_emptied)
    found = _while_killing(big, lambda: _digest_share([(big, "sha256"), (small, "sha256")], True), emptied)
    assert emptied.is_set()
    assert found == [b64_sha256(b""), b64_sha256(b"print(2)\n")]


def _mappings_of(path):
    """[(offset, length)] of the mappings of ``path`` in this process's children."""
    found = []
    for pid in _my_children():
        try:
            with open("/proc/%s/maps" % pid, encoding="utf-8", errors="surrogateescape") as handle:
                for line in handle:
                    if line.rstrip("\n").endswith(" " + path):
                        span, _perms, offset = line.split()[:3]
                        start, end = (int(part, 16) for part in span.split("-"))
                        found.append((int(offset, 16), end - start))
        except OSError:
            continue
    return found


def test_the_child_maps_a_large_file_one_window_at_a_time(tmp_path):
    big = str(tmp_path / "big.so")
    size = 4 * MAP_WINDOW + 12345
    with open(big, "wb") as handle:
        handle.truncate(size)  # a hole: no disk used
    polls = []  # the mappings of the file at each look
    done = threading.Event()

    def watch():
        while not done.is_set():
            polls.append(_mappings_of(big))
            time.sleep(0.001)
    watching = threading.Thread(target=watch)
    watching.start()
    try:
        answered = digests_in_child([(big, "sha256")])
    finally:
        done.set()
        watching.join()
    assert answered == [record_hash.record_digest(hashlib.sha256(bytes(size)))]
    seen = {mapping for poll in polls for mapping in poll}
    assert any(length == MAP_WINDOW for _offset, length in seen), seen  # a whole window ...
    assert all(len(poll) <= 1 for poll in polls)  # ... one at a time
    assert all(offset % MAP_WINDOW == 0 and length <= MAP_WINDOW for offset, length in seen), seen  # the tail: its pages
    assert MAPPED_AT_LEAST <= MAP_WINDOW


SERVE_ONE_WINDOW = """
import sys
sys.path.insert(0, sys.argv[1])
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core import record_hash
record_hash.MAP_WINDOW = int(sys.argv[2])
record_hash.serve(sys.stdin, sys.stdout)
"""


def test_a_file_truncated_while_mapped_ends_the_child_with_sigbus_before_it_answers(tmp_path):
    """The child's serve with one window as large as the file: truncated once the child has it mapped, the next page
    the hashing touches raises SIGBUS (a whole-file window makes that certain); the child answers nothing, and the
    share's thread finishes it by reading (the killed-child tests above)."""
    big, small = _big_and_small(tmp_path, b"print(3)\n")
    jobs = json.dumps([[big, "sha256"], [small, "sha256"]])
    collections = os.path.abspath(record_hash.__file__).rsplit("/ansible_collections/", 1)[0]
    child = subprocess.Popen([sys.executable, "-I", "-S", "-c", SERVE_ONE_WINDOW, collections, str(SPARSE)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    child.stdin.write(jobs.encode())
    child.stdin.close()
    deadline = time.monotonic() + 60
    while not _mappings_of(big) and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.001)
    os.truncate(big, 0)
    answered = child.stdout.read()
    assert child.wait() == -signal.SIGBUS
    assert answered == b""
    assert _digest_share([(big, "sha256"), (small, "sha256")], False) == [b64_sha256(b""), b64_sha256(b"print(3)\n")]


CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
if sys.argv[2] == "cache":
    from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.bytecode_cache import enable
    enable()
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core import record_hash
print(json.dumps({"loader": type(record_hash.__spec__.loader).__name__, "program": record_hash.child_program()}))
"""


def test_the_child_s_program_is_read_from_the_zip_ansible_sends_with_either_loader(tmp_path):
    """Under Ansible record_hash.py is in the module's zip, loaded by zipimport or the bytecode cache's loader:
    the child's program is this file's text, which both must give (the other tests run that program)."""
    inner = "ansible_collections/gpuops/cuda_venv/plugins/module_utils"
    here = os.path.dirname(os.path.abspath(record_hash.__file__))
    zip_path = str(tmp_path / "payload.zip")
    with zipfile.ZipFile(zip_path, "w") as archive:
        parts = (inner + "/_core").split("/")
        for depth in range(1, len(parts) + 1):
            archive.writestr("/".join(parts[:depth]) + "/__init__.py", "")
        for name in ("record_hash.py", "bytecode_cache.py"):
            archive.write(os.path.join(here, name), inner + "/_core/" + name)
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "CUDA_VENV_", "XDG_"))}
    environ["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    loaders = {}
    for how in ("zipimport", "cache"):
        proc = subprocess.run([sys.executable, "-c", CHILD, zip_path, how], env=environ,
                              cwd=str(tmp_path), capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stderr
        report = json.loads(proc.stdout)
        with open(os.path.join(here, "record_hash.py"), encoding="utf-8") as handle:
            assert report["program"] == handle.read()
        loaders[how] = report["loader"]
    assert loaders == {"zipimport": "zipimporter", "cache": "_CachingLoader"}


def test_a_fifo_or_a_folder_is_refused_at_once_in_the_module_and_in_a_child(tmp_path):
    """A FIFO put where a file was, after the stat that chose it for hashing, must not hang either side."""
    fifo = str(tmp_path / "lib.so")
    os.mkfifo(fifo)
    for path in (fifo, str(tmp_path)):
        try:
            file_digest(path)
        except OSError as exc:
            assert exc.errno in (errno.EINVAL, errno.EISDIR), exc
        else:
            raise AssertionError("%s was hashed" % path)
    assert digests_in_child([(fifo, "sha256"), (str(tmp_path), "sha256")]) == [None, None]
