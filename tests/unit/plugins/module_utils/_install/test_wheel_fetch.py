# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for wheel_fetch: the installer's own resolution and download (real pip and uv, or recorded replies)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import SubprocessRunner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.installers import PipBackend, UvBackend, WheelSources
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.wheel_fetch import (
    FetchError, download, resolve, resolve_closure)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.probe import query_interpreter
from ansible_collections.gpuops.cuda_venv.tests.support.local_servers import AuthIndex
from ansible_collections.gpuops.cuda_venv.tests.support.wheel_helpers import make_wheel
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils.recording_runner import RecordingRunner, reply

UV = os.path.join(os.path.dirname(sys.executable), "uv")  # the tools venv's pinned uv


class _KeepingRunner(SubprocessRunner):
    """The real runner, keeping each result (the unredacted output the code under test read)."""

    def __init__(self):
        super().__init__()
        self.results = []

    def run(self, argv, **kwargs):
        self.results.append(super().run(argv, **kwargs))
        return self.results[-1]


def test_pip_resolution_argv_and_result(tmp_path):
    make_wheel(str(tmp_path / "wh"), "consumer-demo", "1.0", requires=["helper-demo>=1"])
    make_wheel(str(tmp_path / "wh"), "helper-demo", "1.1")
    runner = RecordingRunner(passthrough=True)
    backend = PipBackend(sys.executable, runner, WheelSources(find_links=(str(tmp_path / "wh"),), no_index=True))
    assert resolve(backend, ["consumer-demo"], True, ()) == [("consumer-demo", "1.0"), ("helper-demo", "1.1")]
    assert runner.argvs == [(sys.executable, "-I", "-m", "pip", "install", "--dry-run", "--quiet", "--report", "-",
                             "--no-input", "--disable-pip-version-check", "--no-cache-dir", "--no-index", "--find-links",
                             str(tmp_path / "wh"), "--", "consumer-demo")]
    assert runner.calls[0].env["PIP_NO_INPUT"] == "1"


def test_uv_resolution_reads_its_planned_lines_and_leaves_no_lock(tmp_path, empty_venv):
    make_wheel(str(tmp_path / "wh"), "consumer-demo", "1.0", requires=["helper-demo>=1"])
    make_wheel(str(tmp_path / "wh"), "helper-demo", "1.1")
    python = str(empty_venv / "bin" / "python")
    runner = RecordingRunner(passthrough=True)
    backend = UvBackend(UV, python, runner, WheelSources(find_links=(str(tmp_path / "wh"),), no_index=True))
    assert resolve(backend, ["consumer-demo"], True, ()) == [("consumer-demo", "1.0"), ("helper-demo", "1.1")]
    assert runner.argvs == [(UV, "pip", "install", "--dry-run", "--python", python, "--no-cache", "--no-index",
                             "--find-links", str(tmp_path / "wh"), "--", "consumer-demo")]
    os.unlink(str(empty_venv / ".lock"))  # uv's own environment lock; the guard removes it (scenario tests)


@pytest.mark.parametrize("kind", ["pip", "uv"])
def test_the_whole_closure_includes_what_the_venv_already_has(tmp_path, kind):
    """The declared state's closure: what is installed and satisfied is in it too (real pip and uv, a venv each)."""
    make_wheel(str(tmp_path / "wh"), "consumer-demo", "1.0", requires=["helper-demo>=1"])
    make_wheel(str(tmp_path / "wh"), "helper-demo", "1.1")
    sources = WheelSources(find_links=(str(tmp_path / "wh"),), no_index=True)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv"] + (["--without-pip"] if kind == "uv" else []) + [str(venv)], check=True)
    python = str(venv / "bin" / "python")
    runner = RecordingRunner(passthrough=True)
    if kind == "pip":
        backend = PipBackend(python, runner, sources)
        backend.install(["helper-demo"])
        expected = [(python, "-I", "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet", "--report", "-",
                     "--no-input", "--disable-pip-version-check", "--no-index", "--find-links", str(tmp_path / "wh"),
                     "--", "consumer-demo")]
    else:
        backend = UvBackend(UV, python, runner, sources)
        backend.install(["helper-demo"])
        expected = [(UV, "pip", "compile", "--python", python, "--quiet", "--no-header", "--no-annotate", "--no-index",
                     "--find-links", str(tmp_path / "wh"), "-")]
    assert resolve(backend, ["consumer-demo"], False, ()) == [("consumer-demo", "1.0")]
    runner.calls.clear()
    assert sorted(resolve_closure(backend, ["consumer-demo"], False, ())) == [("consumer-demo", "1.0"), ("helper-demo", "1.1")]
    assert runner.argvs == expected
    if kind == "uv":
        assert runner.calls[0].data == "consumer-demo\n"


def test_download_with_pip_into_the_folder_with_the_same_sources(tmp_path):
    make_wheel(str(tmp_path / "wh"), "helper-demo", "1.1")
    runner = RecordingRunner(passthrough=True)
    backend = PipBackend(sys.executable, runner, WheelSources(find_links=(str(tmp_path / "wh"),), no_index=True))
    download(backend, ["helper-demo==1.1"], str(tmp_path / "dl"), None, True, ())
    assert os.listdir(str(tmp_path / "dl")) == ["helper_demo-1.1-py3-none-any.whl"]
    assert runner.argvs == [(sys.executable, "-I", "-m", "pip", "download", "--no-input", "--disable-pip-version-check",
                             "--no-deps", "--only-binary=:all:", "--dest", str(tmp_path / "dl"), "--no-cache-dir",
                             "--no-index", "--find-links", str(tmp_path / "wh"), "--", "helper-demo==1.1")]


def test_download_goes_on_without_what_the_sources_do_not_offer(tmp_path):
    """Real pip says what the wheelhouse lacks; the rest is downloaded in a second call."""
    make_wheel(str(tmp_path / "wh"), "demo", "1.0")
    runner = RecordingRunner(passthrough=True)
    backend = PipBackend(sys.executable, runner, WheelSources(find_links=(str(tmp_path / "wh"),), no_index=True))
    assert download(backend, ["demo-absent==1.0", "demo==1.0"], str(tmp_path / "dl"), None, False, ()) == ["demo-absent==1.0"]
    assert [argv[argv.index("--") + 1:] for argv in runner.argvs] == [("demo-absent==1.0", "demo==1.0"), ("demo==1.0",)]
    assert os.listdir(str(tmp_path / "dl")) == ["demo-1.0-py3-none-any.whl"]


def test_uv_backend_downloads_with_this_modules_pip_for_the_venvs_python(tmp_path, empty_venv):
    python = str(empty_venv / "bin" / "python")  # no pip in it
    runner = RecordingRunner([reply(1, stderr="No module named pip"), reply(0), reply(0)])
    backend = UvBackend(UV, python, runner, WheelSources(index_url="https://u:t0ken@index.invalid/simple"))
    interpreter = query_interpreter(python, SubprocessRunner())
    download(backend, ["demo==1.0"], "/dl", interpreter, False, ("t0ken",))
    version = interpreter.marker_env["python_version"]
    assert runner.argvs[2] == (sys.executable, "-I", "-m", "pip", "download", "--no-input", "--disable-pip-version-check",
                               "--no-deps", "--only-binary=:all:", "--dest", "/dl", "--python-version", version,
                               "--implementation", "cp", "--abi", "cp" + version.replace(".", ""), "--abi", "abi3",
                               "--abi", "none", "--index-url", "https://u:t0ken@index.invalid/simple", "--", "demo==1.0")


def test_a_failed_fetch_is_redacted(tmp_path):
    runner = RecordingRunner([reply(1, stderr="ERROR: 401 for https://u:t0ken@index.invalid/simple/demo/")])
    backend = PipBackend(sys.executable, runner, WheelSources(index_url="https://u:t0ken@index.invalid/simple"))
    with pytest.raises(FetchError) as caught:
        download(backend, ["demo==1.0"], str(tmp_path), None, True, backend.sources.secrets())
    assert "t0ken" not in str(caught.value)
    assert "ERROR: 401 for https://***@index.invalid/simple/demo/" in str(caught.value)


def test_an_index_refusing_the_credentials_reads_as_not_offered_real_pip(tmp_path):
    """A loopback index answers 401 to the wrong token: real pip says only "No matching distribution", so
    download reports the requirement as not offered (and fetches nothing)."""
    make_wheel(str(tmp_path / "wh"), "demo", "1.0")
    runner = _KeepingRunner()
    with AuthIndex([tmp_path / "wh"], "u", "right-password") as index:
        url = "http://u:t0ken@127.0.0.1:%d/simple" % index.port
        backend = PipBackend(sys.executable, runner, WheelSources(index_url=url), environ=dict(os.environ, PIP_RETRIES="0", PIP_CONFIG_FILE=os.devnull))
        missing = download(backend, ["demo==1.0"], str(tmp_path / "dl"), None, True, backend.sources.secrets())
    assert missing == ["demo==1.0"]
    assert index.requests == [("/simple/demo/", False)]
    assert runner.results[-1].stderr == (  # no word of the 401: pip's --no-input gives up on it silently
        "ERROR: Could not find a version that satisfies the requirement demo==1.0 (from versions: none)\n"
        "ERROR: No matching distribution found for demo==1.0\n")
    assert not os.path.exists(str(tmp_path / "dl")) or os.listdir(str(tmp_path / "dl")) == []


def test_pip_report_that_is_not_json_is_a_clear_error():
    backend = PipBackend(sys.executable, RecordingRunner([reply(0, stdout="Would install demo-1.0")]), WheelSources())
    with pytest.raises(FetchError) as caught:
        resolve(backend, ["demo"], True, ())
    assert "pip's --report for demo is not the JSON expected (pip >= 22.2 is needed)" in str(caught.value)
