# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the installers with a lock: the locked pins install in hash-checking mode (exact argv and file), the
rest by name after them; and for real, pip refusing a wheel of other bytes than the lock's."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import SubprocessRunner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.installers import PipBackend, UvBackend
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.lock_file import Lock, LockedPackage
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.wheel_sources import WheelSources
from ansible_collections.gpuops.cuda_venv.tests.support.wheel_helpers import make_wheel
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils.recording_runner import RecordingRunner, reply

PY = "/venvs/train/bin/python"
UV = "/opt/uv/bin/uv"
H1, H2 = "sha256:" + "a" * 64, "sha256:" + "b" * 64
LOCK = Lock("pylock.toml", "pylock", (LockedPackage("nvidia-cudnn-cu12", "9.10.2.21", (H1, H2), None, "packages[0]"),
                                      LockedPackage("torch", "2.9.1", (H1,), None, "packages[1]"),
                                      LockedPackage("numpy", "2.3.5", (), None, "packages[2]")))
SOURCES = WheelSources(find_links=("/wh",), no_index=True)


class FileReadingRunner(RecordingRunner):
    """Also keeps what the ``-r`` file of each call held when it ran (the backend deletes it after)."""

    def __init__(self, replies=()):
        super().__init__(replies)
        self.files = []

    def run(self, argv, **kwargs):
        if "-r" in argv:
            with open(argv[list(argv).index("-r") + 1], encoding="utf-8") as handle:
                self.files.append(handle.read())
        return super().run(argv, **kwargs)


def backend(kind, replies=()):
    runner = FileReadingRunner(replies)
    made = PipBackend(PY, runner, SOURCES) if kind == "pip" else UvBackend(UV, PY, runner, SOURCES)
    made.lock = LOCK
    return made, runner


def test_pip_installs_the_locked_pins_from_one_hashed_file_then_the_rest_by_name():
    pip, runner = backend("pip")
    result = pip.install(["torch==2.9.1", "nvidia-cudnn-cu12==9.10.2.21", "filelock==3.20.0", "numpy==2.3.5",
                          "nvidia-nccl-cu12==2.27.5"])
    head = [PY, "-I", "-m", "pip", "install", "--no-input", "--disable-pip-version-check", "--no-deps", "--no-index",
            "--find-links", "/wh"]
    first, second = runner.argvs
    assert list(first[:-1]) == head + ["--require-hashes", "-r"] and first[-1].endswith("/locked-requirements.txt")
    assert runner.files == ["torch==2.9.1 --hash=%s\nnvidia-cudnn-cu12==9.10.2.21 --hash=%s --hash=%s\n" % (H1, H1, H2)]
    # numpy: locked with no hash; filelock, nccl: not locked (a kept neighbour's reinstall): by name, after
    assert list(second) == head + ["--", "filelock==3.20.0", "numpy==2.3.5", "nvidia-nccl-cu12==2.27.5"]
    assert result.argv == second and not os.path.exists(first[-1])


def test_uv_reinstalls_each_part_with_its_own_names_and_a_failed_hashed_install_stops_there():
    uv, runner = backend("uv", [reply(rc=1, stderr="hash mismatch")])
    result = uv.install(["torch==2.9.1", "filelock==3.20.0"], reinstall=["torch", "filelock"])
    (only,) = runner.argvs
    assert list(only[:-1]) == [UV, "pip", "install", "--python", PY, "--no-deps", "--reinstall-package", "torch",
                               "--no-index", "--find-links", "/wh", "--require-hashes", "-r"]
    assert (result.rc, result.stderr) == (1, "hash mismatch")
    uv, runner = backend("uv")
    uv.install(["torch==2.9.1", "filelock==3.20.0"], reinstall=["torch", "filelock"])
    assert list(runner.argvs[1]) == [UV, "pip", "install", "--python", PY, "--no-deps", "--reinstall-package",
                                     "filelock", "--no-index", "--find-links", "/wh", "--", "filelock==3.20.0"]


def test_another_version_than_the_locked_one_goes_by_name():
    pip, runner = backend("pip")
    pip.install(["torch==2.14.1"])
    assert runner.argvs[0][-2:] == ("--", "torch==2.14.1") and runner.files == []


def test_a_real_pip_refuses_a_wheel_of_other_bytes_than_the_lock_and_installs_the_locked_one(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    good = make_wheel(str(tmp_path / "good"), "demo", "1.0", {"demo/__init__.py": b"GOOD = 1\n"})
    make_wheel(str(tmp_path / "bad"), "demo", "1.0", {"demo/__init__.py": b"BAD = 1\n"})
    with open(good, "rb") as handle:
        digest = "sha256:" + hashlib.sha256(handle.read()).hexdigest()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    for folder, ok in (("bad", False), ("good", True)):
        pip = PipBackend(python, SubprocessRunner(), WheelSources(find_links=(str(tmp_path / folder),), no_index=True),
                         environ=env)
        pip.lock = Lock("r.txt", "requirements", (LockedPackage("demo", "1.0", (digest,), None, "line 1"),))
        result = pip.install(["demo==1.0"])
        assert result.ok is ok, result.stderr
        assert ok or "THESE PACKAGES DO NOT MATCH THE HASHES" in result.stderr
    assert subprocess.run([python, "-c", "import demo; print(demo.GOOD)"], capture_output=True, text=True,
                          check=True).stdout == "1\n"
