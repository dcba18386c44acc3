# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for installers: exact argv of both backends, then real pip and uv on real venvs."""

from __future__ import annotations

import base64
import csv
import glob
import hashlib
import importlib.metadata as importlib_metadata
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from typing import Optional

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.installers import (
    DROPPED_ENV,
    InstallerError,
    PipBackend,
    UvBackend,
    WheelSources,
    find_uv,
    installer_env,
    requirement_name,
    select_backend,
    uv_candidates,
)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import CommandResult, SubprocessRunner
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils.recording_runner import RecordingRunner, reply

PY = "/venv/bin/python"
UV = "/opt/uv/bin/uv"
PIP = [PY, "-I", "-m", "pip"]
BASE_ENV = {"PATH": "/usr/bin", "HOME": "/home/u", "HTTPS_PROXY": "http://proxy:3128", "PIP_CERT": "/etc/ca.pem",
            "PYTHONPATH": "/evil", "PYTHONHOME": "/evil", "PIP_TARGET": "/elsewhere", "UV_INDEX_STRATEGY": "first-index",
            "PIP_CONSTRAINT": "/home/u/mine.txt", "UV_CONSTRAINT": "/venv/.cuda_venv/guard/constraints.txt"}
EXPECTED_ENV = {"PATH": "/usr/bin", "HOME": "/home/u", "HTTPS_PROXY": "http://proxy:3128", "PIP_CERT": "/etc/ca.pem",
                "UV_INDEX_STRATEGY": "first-index", "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8", "PIP_NO_INPUT": "1",
                "PIP_CONSTRAINT": "/dev/null"}  # the venv's guard does not hold the repair's own installs

NO_INDEX = WheelSources(find_links=("/wh", "https://h/links.html"), no_index=True)
INDEXES = WheelSources(index_url="https://mirror/simple", extra_index_urls=("https://e1/simple", "https://e2/simple"))
ALL = WheelSources(find_links=("/wh",), index_url="https://mirror/simple", extra_index_urls=("https://e1/simple",))
EXTRA_ONLY = WheelSources(extra_index_urls=("https://e1/simple",))


def real_pip_version():
    """(what this Python's real pip prints for --version, its installed version)."""
    done = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True, text=True, check=True)
    return done.stdout, importlib_metadata.version("pip")


def real_uv_version():
    """(what the real uv beside this Python prints for --version, its installed version)."""
    uv = os.path.join(os.path.dirname(sys.executable), "uv")
    done = subprocess.run([uv, "--version"], capture_output=True, text=True, check=True)
    return done.stdout, importlib_metadata.version("uv")


def pip_backend(sources=WheelSources(), replies=(), timeout=None):
    runner = RecordingRunner(replies)
    return PipBackend(PY, runner, sources, timeout=timeout, environ=BASE_ENV), runner


def uv_backend(sources=WheelSources(), replies=(), timeout=None):
    runner = RecordingRunner(replies)
    return UvBackend(UV, PY, runner, sources, timeout=timeout, environ=BASE_ENV), runner


# --- names, environment ---------------------------------------------------------------------------


def test_installer_env_keeps_user_settings_and_drops_python_and_target_variables():
    assert installer_env(BASE_ENV) == EXPECTED_ENV
    assert set(DROPPED_ENV) == {"PYTHONPATH", "PYTHONHOME", "PIP_TARGET", "PIP_PREFIX", "PIP_ROOT", "PIP_USER",
                                "UV_CONSTRAINT"}


@pytest.mark.parametrize("requirement, name", [
    ("nvidia-cudnn-cu12==9.10.2.21", "nvidia-cudnn-cu12"),
    ("Torch==2.9.1+cu128", "torch"),
    ("cuda_toolkit[cublas]==13.0.3", "cuda-toolkit"),
    ("zope.interface ; python_version>'3'", "zope-interface"),
    ("-r", None),
])
def test_requirement_name(requirement, name):
    assert requirement_name(requirement) == name


# --- exact argv: pip ---------------------------------------------------------------------------------------------


def test_pip_uninstall_argv_env_and_timeout():
    backend, runner = pip_backend(timeout=120)
    result = backend.uninstall(["nvidia-cudnn-cu13", "nvidia-nccl-cu13"])
    assert result == CommandResult(tuple(PIP + ["uninstall", "--yes", "--no-input", "--", "nvidia-cudnn-cu13", "nvidia-nccl-cu13"]), 0, "", "")
    [call] = runner.calls
    assert (call.cwd, call.env, call.timeout, call.data, call.pass_fds) == (None, EXPECTED_ENV, 120, None, ())


def test_installers_inherit_the_descriptors_the_repair_passes_them():
    backend, runner = pip_backend()
    backend.pass_fds = (7,)
    backend.install(["nvidia-nccl-cu12==2.27.5"])
    backend.uninstall(["nvidia-nccl-cu13"])
    assert [call.pass_fds for call in runner.calls] == [(7,), (7,)]


def test_a_passed_descriptor_reaches_the_real_child(tmp_path):
    with open(str(tmp_path / "lock"), "w") as handle:
        fd = handle.fileno()
        os.set_inheritable(fd, False)
        seen = SubprocessRunner().run(["sh", "-c", "test -e /proc/self/fd/%d && echo open || echo closed" % fd], pass_fds=[fd])
        unseen = SubprocessRunner().run(["sh", "-c", "test -e /proc/self/fd/%d && echo open || echo closed" % fd])
    assert (seen.stdout, unseen.stdout) == ("open\n", "closed\n")


def test_pip_install_without_sources():
    backend, runner = pip_backend()
    backend.install(["a==1"])
    assert runner.argvs == [tuple(PIP + ["install", "--no-input", "--disable-pip-version-check", "--no-deps", "--", "a==1"])]


@pytest.mark.parametrize("sources, source_args", [
    (NO_INDEX, ["--no-index", "--find-links", "/wh", "--find-links", "https://h/links.html"]),
    (INDEXES, ["--index-url", "https://mirror/simple", "--extra-index-url", "https://e1/simple", "--extra-index-url", "https://e2/simple"]),
    (ALL, ["--index-url", "https://mirror/simple", "--extra-index-url", "https://e1/simple", "--find-links", "/wh"]),
    (EXTRA_ONLY, ["--extra-index-url", "https://e1/simple"]),
    (WheelSources(find_links=("/wh",)), ["--find-links", "/wh"]),
])
def test_pip_install_argv_per_wheel_source(sources, source_args):
    backend, runner = pip_backend(sources)
    backend.install(["nvidia-cudnn-cu12==9.10.2.21", "torch==2.9.1"])
    assert runner.argvs == [tuple(
        PIP + ["install", "--no-input", "--disable-pip-version-check", "--no-deps"] + source_args
        + ["--", "nvidia-cudnn-cu12==9.10.2.21", "torch==2.9.1"]
    )]


def test_pip_force_reinstall_without_deps():
    backend, runner = pip_backend(NO_INDEX)
    backend.install(["nvidia-cudnn-cu12==9.10.2.21", "nvidia_nccl_cu12==2.27.5"], reinstall=["nvidia-cudnn-cu12", "nvidia-nccl-cu12"])
    assert runner.argvs == [tuple(
        PIP + ["install", "--no-input", "--disable-pip-version-check", "--no-deps", "--force-reinstall",
               "--no-index", "--find-links", "/wh", "--find-links", "https://h/links.html",
               "--", "nvidia-cudnn-cu12==9.10.2.21", "nvidia_nccl_cu12==2.27.5"]
    )]


def test_pip_install_with_deps_drops_no_deps():
    backend, runner = pip_backend()
    backend.install(["a==1"], no_deps=False)
    assert runner.argvs == [tuple(PIP + ["install", "--no-input", "--disable-pip-version-check", "--", "a==1"])]


def test_pip_names_starting_with_dash_stay_after_double_dash():
    backend, runner = pip_backend()
    backend.uninstall(["-r", "--yes"])
    backend.install(["-e", "--pre"])
    assert runner.argvs == [
        tuple(PIP + ["uninstall", "--yes", "--no-input", "--", "-r", "--yes"]),
        tuple(PIP + ["install", "--no-input", "--disable-pip-version-check", "--no-deps", "--", "-e", "--pre"]),
    ]


def test_pip_version_parsed_from_pip_output():
    text, version = real_pip_version()
    backend, runner = pip_backend(replies=[reply(stdout=text)])
    assert backend.version() == version
    assert runner.argvs == [tuple(PIP + ["--version"])]


# --- exact argv: uv ----------------------------------------------------------------------------------------------


def test_uv_uninstall_argv_env_and_timeout():
    backend, runner = uv_backend(timeout=60)
    result = backend.uninstall(["nvidia-cudnn-cu13"])
    assert result == CommandResult((UV, "pip", "uninstall", "--python", PY, "--", "nvidia-cudnn-cu13"), 0, "", "")
    [call] = runner.calls
    assert (call.cwd, call.env, call.timeout, call.data) == (None, EXPECTED_ENV, 60, None)


UV_INSTALL = [UV, "pip", "install", "--python", PY]


def test_uv_install_without_sources():
    backend, runner = uv_backend()
    backend.install(["a==1"])
    assert runner.argvs == [tuple(UV_INSTALL + ["--no-deps", "--", "a==1"])]


@pytest.mark.parametrize("sources, source_args", [
    (NO_INDEX, ["--no-index", "--find-links", "/wh", "--find-links", "https://h/links.html"]),
    (INDEXES, ["--default-index", "https://mirror/simple", "--index", "https://e1/simple", "--index", "https://e2/simple"]),
    (ALL, ["--default-index", "https://mirror/simple", "--index", "https://e1/simple", "--find-links", "/wh"]),
    (EXTRA_ONLY, ["--index", "https://e1/simple"]),
    (WheelSources(find_links=("/wh",)), ["--find-links", "/wh"]),
])
def test_uv_install_argv_per_wheel_source(sources, source_args):
    backend, runner = uv_backend(sources)
    backend.install(["nvidia-cudnn-cu12==9.10.2.21", "torch==2.9.1"])
    assert runner.argvs == [tuple(UV_INSTALL + ["--no-deps"] + source_args + ["--", "nvidia-cudnn-cu12==9.10.2.21", "torch==2.9.1"])]


def test_uv_reinstall_packages_without_deps():
    backend, runner = uv_backend(NO_INDEX)
    backend.install(["nvidia-cudnn-cu12==9.10.2.21", "nvidia_nccl_cu12==2.27.5"], reinstall=["nvidia-cudnn-cu12", "nvidia-nccl-cu12"])
    assert runner.argvs == [tuple(
        UV_INSTALL + ["--no-deps", "--reinstall-package", "nvidia-cudnn-cu12", "--reinstall-package", "nvidia-nccl-cu12",
                      "--no-index", "--find-links", "/wh", "--find-links", "https://h/links.html",
                      "--", "nvidia-cudnn-cu12==9.10.2.21", "nvidia_nccl_cu12==2.27.5"]
    )]


def test_uv_install_with_deps_drops_no_deps():
    backend, runner = uv_backend()
    backend.install(["a==1"], no_deps=False)
    assert runner.argvs == [tuple(UV_INSTALL + ["--", "a==1"])]


def test_uv_names_starting_with_dash_stay_after_double_dash():
    backend, runner = uv_backend()
    backend.uninstall(["-r"])
    backend.install(["--pre"])
    assert runner.argvs == [
        (UV, "pip", "uninstall", "--python", PY, "--", "-r"),
        tuple(UV_INSTALL + ["--no-deps", "--", "--pre"]),
    ]


def test_uv_version_parsed_from_uv_output():
    text, version = real_uv_version()
    backend, runner = uv_backend(replies=[reply(stdout=text)])
    assert backend.version() == version
    assert runner.argvs == [(UV, "--version")]


# --- bad requests and redaction (both backends) ------------------------------------------------------------------


BACKENDS = [pip_backend, uv_backend]


@pytest.mark.parametrize("make", BACKENDS)
@pytest.mark.parametrize("requirement", [
    "/wh/a-1-py3-none-any.whl", "a-1-py3-none-any.whl", "./a", ".", "a @ file:///wh/a.whl", "https://h/a.whl", "C:\\a", "",
])
def test_requirements_by_path_or_url_are_refused(make, requirement):
    backend, runner = make()
    with pytest.raises(InstallerError, match="^install '.*' is not a requirement by name: pass NAME or NAME==VERSION; "):
        backend.install(["ok==1", requirement])
    assert runner.calls == []


def test_refused_url_requirement_is_redacted_in_the_message():
    backend = pip_backend()[0]
    with pytest.raises(InstallerError) as info:
        backend.install(["a @ https://user:tok-99@h/a-1-py3-none-any.whl"])
    assert str(info.value) == (
        "install 'a @ https://***@h/a-1-py3-none-any.whl' is not a requirement by name: pass NAME or NAME==VERSION; "
        "wheels come from the wheel sources (an install by path or URL leaves direct_url.json)"
    )


@pytest.mark.parametrize("make", BACKENDS)
def test_empty_name_lists_are_refused(make):
    backend, runner = make()
    with pytest.raises(InstallerError, match="^uninstall needs at least one name$"):
        backend.uninstall([])
    with pytest.raises(InstallerError, match="^install needs at least one name$"):
        backend.install(())
    assert runner.calls == []


@pytest.mark.parametrize("make", BACKENDS)
def test_reinstall_must_match_the_requirements(make):
    backend, runner = make()
    with pytest.raises(InstallerError) as info:
        backend.install(["a==1", "b==2"], reinstall=["a", "c"])
    assert str(info.value) == (
        "reinstall names must match the requirements one to one (not among the requirements: c; "
        "requirements not marked for reinstall: b==2): install those in a separate call"
    )
    assert runner.calls == []


@pytest.mark.parametrize("make", BACKENDS)
def test_results_are_redacted(make):
    sources = WheelSources(index_url="https://alice:tok-123456@mirror/simple", extra_index_urls=("https://tok-abcdef@e/simple",))
    out = "Looking in indexes: https://alice:****@mirror/simple, https://tok-abcdef@e/simple"
    err = "401 for tok-123456 at https://alice:tok-123456@mirror/simple/a/"
    backend, runner = make(sources, replies=[reply(1, out, err)])
    result = backend.install(["a==1"])
    assert "tok-123456" in " ".join(runner.calls[0].argv)
    assert result.rc == 1
    assert result.stdout == "Looking in indexes: https://***@mirror/simple, https://***@e/simple"
    assert result.stderr == "401 for *** at https://***@mirror/simple/a/"
    assert "https://***@mirror/simple" in result.argv and "https://***@e/simple" in result.argv
    assert not [a for a in result.argv if "tok-" in a or "alice" in a]


def test_pip_version_failure_names_the_python():
    backend = pip_backend(replies=[reply(1, "", "/venv/bin/python: No module named pip\n")])[0]
    with pytest.raises(InstallerError, match="^venv python /venv/bin/python has no pip: /venv/bin/python: No module named pip$"):
        backend.version()


def test_uv_version_timeout_is_reported():
    backend = uv_backend(replies=[reply(-9, "", "", timed_out=True)])[0]
    with pytest.raises(InstallerError, match="^uv executable /opt/uv/bin/uv does not run: timed out$"):
        backend.version()


# --- select_backend ----------------------------------------------------------------------------------------------


def _executable_file(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return str(path)


@pytest.fixture
def layout(tmp_path):
    """A venv python (not run: calls are recorded), an empty PATH directory and HOME, and a folder standing for
    the modules' own Python: no uv anywhere until a test puts one there."""
    python = _executable_file(str(tmp_path / "venv" / "bin" / "python"))
    empty = tmp_path / "empty"
    empty.mkdir()
    own = str(tmp_path / "tools" / "bin" / "python")
    return python, {"PATH": str(empty), "HOME": str(tmp_path / "home")}, tmp_path, own


def test_select_backend_refuses_unknown_kind(layout):
    python, env = layout[:2]
    with pytest.raises(InstallerError, match="^installer backend 'conda' is not one of auto, pip, uv$"):
        select_backend("conda", python, RecordingRunner(), environ=env)


def test_uv_is_looked_for_on_path_beside_the_venv_in_user_folders_then_beside_the_modules_python(layout):
    python, env, tmp, own = layout
    env = dict(env, UV_INSTALL_DIR=str(tmp / "uvdir"), XDG_BIN_HOME=str(tmp / "xdg"), CARGO_HOME=str(tmp / "cargo"))
    assert uv_candidates(python, env, own) == [
        str(tmp / "empty"), str(tmp / "venv" / "bin"), str(tmp / "uvdir"), str(tmp / "xdg"),
        str(tmp / "home" / ".local" / "bin"), str(tmp / "cargo" / "bin"), str(tmp / "home" / ".cargo" / "bin"),
        str(tmp / "tools" / "bin")]


def test_select_uv_without_uv_names_every_place_looked_in(layout):
    python, env, tmp, own = layout
    runner = RecordingRunner()
    with pytest.raises(InstallerError) as info:
        select_backend("uv", python, runner, environ=env, own_python=own)
    assert str(info.value) == (
        "backend uv requested but no uv executable found (looked in %s): install uv there (the role's tools venv "
        "does), set uv_executable, or use backend pip" % ", ".join(uv_candidates(python, env, own)))
    assert runner.calls == []


def test_select_auto_without_uv_is_pip_checked_to_run(layout):
    python, env, _tmp, own = layout
    runner = RecordingRunner([reply(stdout=real_pip_version()[0])])
    backend = select_backend("auto", python, runner, NO_INDEX, timeout=30, environ=env, own_python=own)
    assert (type(backend), backend.python, backend.sources, backend.timeout) == (PipBackend, python, NO_INDEX, 30)
    assert runner.argvs == [(python, "-I", "-m", "pip", "--version")]


def test_select_auto_follows_a_uv_made_venv_to_uv_beside_its_python(layout):
    python, env, _tmp, own = layout
    uv = _executable_file(os.path.join(os.path.dirname(python), "uv"))
    runner = RecordingRunner([reply(stdout=real_uv_version()[0])])
    backend = select_backend("auto", python, runner, environ=env, recorded="uv", has_pip=False, own_python=own)
    assert (type(backend), backend.uv, backend.python) == (UvBackend, uv, python)
    assert runner.argvs == [(uv, "--version")]


def test_select_auto_keeps_a_pip_made_venv_on_its_pip_though_uv_is_there(layout):
    python, env, _tmp, own = layout
    _executable_file(os.path.join(os.path.dirname(python), "uv"))
    runner = RecordingRunner([reply(stdout=real_pip_version()[0])])
    backend = select_backend("auto", python, runner, environ=env, recorded="pip", has_pip=True, own_python=own)
    assert isinstance(backend, PipBackend) and not isinstance(backend, UvBackend)
    assert runner.argvs == [(python, "-I", "-m", "pip", "--version")]


@pytest.mark.parametrize("where", ["home-local-bin", "own-python"])
def test_select_auto_finds_uv_for_a_venv_without_pip(layout, where):
    python, env, tmp, own = layout
    folder = tmp / "home" / ".local" / "bin" if where == "home-local-bin" else tmp / "tools" / "bin"
    uv = _executable_file(str(folder / "uv"))
    runner = RecordingRunner([reply(stdout=real_uv_version()[0])])
    backend = select_backend("auto", python, runner, environ=env, recorded="pip", has_pip=False, own_python=own)
    assert (type(backend), backend.uv) == (UvBackend, uv)


def test_select_auto_without_pip_nor_uv_says_what_to_provide_and_runs_nothing(layout):
    python, env, tmp, own = layout
    runner = RecordingRunner()
    with pytest.raises(InstallerError) as info:
        select_backend("auto", python, runner, environ=env, recorded="uv", has_pip=False, own_python=own)
    assert str(info.value) == (
        "the venv %s has no pip (made by uv) and no uv executable was found (looked in %s): install uv in one of "
        "those places or set uv_executable (the venv_repair role installs uv into its tools venv); pip is never "
        "installed into the venv" % (tmp / "venv", ", ".join(uv_candidates(python, env, own))))
    assert runner.calls == []


def test_select_uv_prefers_path_and_explicit_path(layout):
    python, env, tmp, own = layout
    _executable_file(os.path.join(os.path.dirname(python), "uv"))
    on_path = _executable_file(str(tmp / "empty" / "uv"))
    assert find_uv(python, env, own) == on_path
    explicit = _executable_file(str(tmp / "other" / "uv"))
    backend = select_backend("uv", python, RecordingRunner([reply(stdout=real_uv_version()[0])]), uv_path=explicit, environ=env)
    assert backend.uv == explicit


def test_select_uv_with_a_missing_explicit_path(layout):
    python, env, tmp = layout[:3]
    with pytest.raises(InstallerError, match="^uv executable %s does not exist or is not executable$" % (tmp / "nope")):
        select_backend("uv", python, RecordingRunner(), uv_path=str(tmp / "nope"), environ=env)


def test_select_pip_without_pip_names_the_python(layout):
    python, env = layout[:2]
    runner = RecordingRunner([reply(1, "", "%s: No module named pip\n" % python)])
    with pytest.raises(InstallerError) as info:
        select_backend("pip", python, runner, environ=env)
    assert str(info.value) == ("venv python %s has no pip: %s: No module named pip; use backend uv (the venv has no "
                               "working pip)" % (python, python))


# --- real pip and uv on real venvs -------------------------------------------------------------------------------

ALPHA = "gpuops-cvt-alpha"
BETA = "gpuops-cvt-beta"


def _b64sha256(data):
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_wheel(directory, name, version, files, requires=()):
    """A pure-Python wheel with METADATA, WHEEL and a correct RECORD."""
    norm = name.replace("-", "_")
    dist_info = "%s-%s.dist-info" % (norm, version)
    members = dict(files)
    members[dist_info + "/METADATA"] = "Metadata-Version: 2.1\nName: %s\nVersion: %s\n%s" % (
        name, version, "".join("Requires-Dist: %s\n" % r for r in requires))
    members[dist_info + "/WHEEL"] = "Wheel-Version: 1.0\nGenerator: gpuops-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = ["%s,sha256=%s,%d" % (path, _b64sha256(text.encode()), len(text.encode())) for path, text in members.items()]
    members[dist_info + "/RECORD"] = "\n".join(record + [dist_info + "/RECORD,,"]) + "\n"
    path = os.path.join(str(directory), "%s-%s-py3-none-any.whl" % (norm, version))
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in members.items():
            archive.writestr(member, text)
    return path


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory):
    house = tmp_path_factory.mktemp("wheelhouse")
    # alpha 1.0 requires a project that no source has: only --no-deps lets it install.
    build_wheel(house, ALPHA, "1.0", {"gpuops_cvt_alpha/__init__.py": "VERSION = '1.0'\n", "gpuops_cvt_alpha/data.txt": "alpha data\n"},
                requires=["gpuops-cvt-absent>=1"])
    build_wheel(house, ALPHA, "1.1", {"gpuops_cvt_alpha/__init__.py": "VERSION = '1.1'\n", "gpuops_cvt_alpha/data.txt": "alpha data\n"})
    build_wheel(house, BETA, "2.0", {"gpuops_cvt_beta.py": "VERSION = '2.0'\n"})
    return str(house)


def find_uv_for_tests():
    beside = os.path.join(os.path.dirname(sys.executable), "uv")
    return shutil.which("uv") or (beside if os.access(beside, os.X_OK) else None)


@dataclass(frozen=True)
class RealVenv:
    """A fresh venv for one backend; the uv one has no pip at all."""

    kind: str
    python: str
    site: str
    environ: dict
    uv: Optional[str]


@pytest.fixture(scope="module", params=["pip", "uv"])
def venv(request, tmp_path_factory):
    uv = find_uv_for_tests()
    if request.param == "uv" and uv is None:
        pytest.skip("no uv executable on PATH or beside %s" % sys.executable)
    root = tmp_path_factory.mktemp("venv-" + request.param)
    args = [sys.executable, "-m", "venv"] + (["--without-pip"] if request.param == "uv" else []) + [str(root)]
    subprocess.run(args, check=True, capture_output=True)
    [site] = glob.glob(str(root / "lib" / "python*" / "site-packages"))
    # Fail fast on the dead index; keep uv's cache out of the user's home.
    environ = dict(os.environ, PIP_RETRIES="0", UV_HTTP_RETRIES="0", UV_CACHE_DIR=str(tmp_path_factory.mktemp("uv-cache")))
    return RealVenv(request.param, str(root / "bin" / "python"), site, environ, uv)


def real_backend(venv, sources):
    runner = RecordingRunner(passthrough=True)
    uv_path = venv.uv if venv.kind == "uv" else None
    return select_backend(venv.kind, venv.python, runner, sources, uv_path=uv_path, timeout=120, environ=venv.environ), runner


def dist_info(site, name, version):
    return os.path.join(site, "%s-%s.dist-info" % (name.replace("-", "_"), version))


def record_problems(site, info):
    """RECORD entries that are missing or whose sha256 or size differ."""
    problems = []
    with open(os.path.join(info, "RECORD"), newline="") as f:
        for path, digest, size in csv.reader(f):
            full = os.path.join(site, path)
            if not os.path.exists(full):
                problems.append(("missing", path))
            elif digest:
                with open(full, "rb") as data:
                    content = data.read()
                if digest != "sha256=" + _b64sha256(content) or int(size) != len(content):
                    problems.append(("modified", path))
    return problems


def test_real_install_reinstall_uninstall_by_name(venv, wheelhouse):
    kind, site = venv.kind, venv.site
    backend, runner = real_backend(venv, WheelSources(find_links=(wheelhouse,), no_index=True))
    assert backend.name == kind

    result = backend.install(["%s==1.0" % ALPHA, BETA])
    assert result.ok, result.stderr
    alpha_info = dist_info(site, ALPHA, "1.0")
    for info in (alpha_info, dist_info(site, BETA, "2.0")):
        assert not os.path.exists(os.path.join(info, "direct_url.json"))
        assert record_problems(site, info) == []
        with open(os.path.join(info, "INSTALLER")) as f:
            assert f.read().strip() == kind

    module = os.path.join(site, "gpuops_cvt_alpha", "__init__.py")
    os.remove(module)
    assert record_problems(site, alpha_info) == [("missing", "gpuops_cvt_alpha/__init__.py")]
    result = backend.install(["%s==1.0" % ALPHA], reinstall=[ALPHA])
    assert result.ok, result.stderr
    with open(module) as f:
        assert f.read() == "VERSION = '1.0'\n"
    assert record_problems(site, alpha_info) == []
    assert not os.path.exists(os.path.join(alpha_info, "direct_url.json"))

    result = backend.uninstall([BETA])
    assert result.ok, result.stderr
    assert not os.path.exists(os.path.join(site, "gpuops_cvt_beta.py"))
    assert not os.path.exists(dist_info(site, BETA, "2.0"))
    assert os.path.exists(module)

    # Every command went through the runner with "--" before the names.
    assert [call.argv[call.argv.index("--"):] for call in runner.calls[1:]] == [
        ("--", "%s==1.0" % ALPHA, BETA), ("--", "%s==1.0" % ALPHA), ("--", BETA),
    ]


def test_real_missing_version_surfaces_the_installer_message(venv, wheelhouse):
    kind = venv.kind
    backend = real_backend(venv, WheelSources(find_links=(wheelhouse,), no_index=True))[0]
    result = backend.install(["%s==9.9" % ALPHA])
    assert not result.ok
    if kind == "pip":
        assert "No matching distribution found for %s==9.9" % ALPHA in result.stderr
    else:
        assert "there is no version of %s==9.9" % ALPHA in result.stderr


@pytest.mark.parametrize("requirement, lacking", [
    ("%s==9.9" % ALPHA, ALPHA),  # the name is there, not the version
    ("gpuops_cvt.Absent==1.0", "gpuops-cvt-absent"),  # no such name: reported canonical
])
def test_real_not_found_names_what_the_sources_lack(venv, wheelhouse, requirement, lacking):
    """pip's and uv's own words, read by not_found (uv's patterns included); the other requirement is there."""
    backend = real_backend(venv, WheelSources(find_links=(wheelhouse,), no_index=True))[0]
    result = backend.install([requirement, BETA])
    assert not result.ok
    assert backend.not_found(result) == [lacking], result.stderr


def test_real_version_is_the_installed_one(venv):
    backend = real_backend(venv, WheelSources())[0]
    if venv.kind == "pip":
        [info] = glob.glob(os.path.join(venv.site, "pip-*.dist-info"))
        expected = os.path.basename(info)[len("pip-"):-len(".dist-info")]
    else:
        expected = subprocess.run([venv.uv, "self", "version", "--short"], capture_output=True, text=True,
                                  check=False).stdout.split(" ")[0].strip() or importlib_metadata.version("uv")
    assert backend.version() == expected


def test_real_unreachable_index_keeps_the_secret_out_of_the_result(venv):
    secret = "s3cret-Tok3n"
    sources = WheelSources(index_url="http://user:%s@127.0.0.1:9/simple" % secret, extra_index_urls=("http://%s@127.0.0.1:9/extra" % secret,))
    backend, runner = real_backend(venv, sources)
    result = backend.install(["gpuops-cvt-gamma"])
    assert not result.ok
    assert secret in " ".join(runner.calls[-1].argv)
    assert "http://***@127.0.0.1:9/simple" in result.argv and "http://***@127.0.0.1:9/extra" in result.argv
    for text in result.argv + (result.stdout, result.stderr):
        assert secret not in text and "user:" not in text
