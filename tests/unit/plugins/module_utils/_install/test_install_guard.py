# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for wheel_paths, wheel_fetch and install_guard: small wheels built here, a real venv, real pip and uv."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide import findings as F
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.install_guard import InstallCheck, InstallRefused, guard_plan
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.installers import PipBackend, UvBackend, WheelSources
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import FactsOptions, observe
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import Action, Batch, Plan
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import SubprocessRunner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.wheel_fetch import FetchError, download, resolve
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.wheel_paths import (
    pick_wheel, read_wheel, shared_objects_first, supported_tags)
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils.recording_runner import RecordingRunner, reply
from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import make_dist
from ansible_collections.gpuops.cuda_venv.tests.support.tree_digest import tree_digest
from ansible_collections.gpuops.cuda_venv.tests.support.wheel_helpers import make_wheel

UV = os.path.join(os.path.dirname(sys.executable), "uv")  # the tools venv's pinned uv
CU12_CUDNN = {"nvidia/cudnn/lib/libcudnn.so.9": b"\x7fELF cudnn 9.10", "nvidia/cudnn/include/cudnn.h": b"/* 9.10 */",
              "nvidia/__init__.py": b""}
CU13_CUDNN = {"nvidia/cudnn/lib/libcudnn.so.9": b"\x7fELF cudnn 9.24 (cu13)", "nvidia/cudnn/include/cudnn.h": b"/* 9.24 */",
              "nvidia/__init__.py": b""}
TORCH_REQUIRES = ["nvidia-cudnn-cu12==9.10.2.21"]


# --- wheel_paths --------------------------------------------------------------------------------------------------

def test_read_wheel_maps_every_scheme_and_the_generated_scripts(tmp_path):
    wheel = make_wheel(str(tmp_path), "demo", "1.0", files={
        "demo/__init__.py": b"x = 1\n", "demo-1.0.data/scripts/demo-tool": b"#!python\n",
        "demo-1.0.data/data/share/demo.txt": b"d", "demo-1.0.data/headers/demo.h": b"h",
        "demo-1.0.data/purelib/demo_extra.py": b"y = 2\n"}, entry_points=b"[console_scripts]\ndemo = demo:main\n")
    root, site = "/venvs/v", "/venvs/v/lib/python3.12/site-packages"
    found = read_wheel(wheel, root, site, "3.12")
    assert (found.name, found.key, found.version, found.problems) == ("demo", "demo", "1.0", ())
    assert sorted(p.target for p in found.paths) == sorted([
        site + "/demo/__init__.py", root + "/bin/demo-tool", root + "/share/demo.txt",
        root + "/include/site/python3.12/demo/demo.h", site + "/demo_extra.py", root + "/bin/demo",
        site + "/demo-1.0.dist-info/METADATA", site + "/demo-1.0.dist-info/WHEEL",
        site + "/demo-1.0.dist-info/entry_points.txt", site + "/demo-1.0.dist-info/RECORD"])
    script = [p for p in found.paths if p.target == root + "/bin/demo"][0]
    assert (script.record, script.digest) == ("entry point script demo", None)


def test_read_wheel_reports_paths_leaving_the_venv(tmp_path):
    record = b"../../../../etc/evil,sha256=x,1\ndemo/__init__.py,,\n"
    wheel = make_wheel(str(tmp_path), "demo", "1.0", files={"demo/__init__.py": b""}, record=record)
    found = read_wheel(wheel, "/venvs/v", "/venvs/v/lib/python3.12/site-packages", "3.12")
    assert found.problems == ("RECORD entry '../../../../etc/evil' leaves the venv",)
    assert [p.record for p in found.paths] == ["demo/__init__.py"]


def test_pick_wheel_takes_the_highest_allowed_version_with_a_supported_tag(tmp_path):
    folder = str(tmp_path)
    for version in ("1.0", "1.2", "2.0rc1"):
        make_wheel(folder, "demo", version)
    make_wheel(folder, "demo", "1.5", tag="cp27-cp27mu-manylinux1_x86_64")  # never for Python 3
    tags = supported_tags("3.12")
    assert os.path.basename(pick_wheel("demo", [folder], tags)) == "demo-1.2-py3-none-any.whl"
    assert os.path.basename(pick_wheel("Demo<1.2", [folder], tags)) == "demo-1.0-py3-none-any.whl"
    assert os.path.basename(pick_wheel("demo>=2.0rc1", [folder], tags)) == "demo-2.0rc1-py3-none-any.whl"
    assert pick_wheel("demo==1.5", [folder], tags) is None
    assert pick_wheel("other", [folder, str(tmp_path / "absent")], tags) is None


def test_shared_objects_come_first():
    assert shared_objects_first(["a/b.h", "lib/libz.so", "lib/libcudnn.so.9", "x.py", "m/_C.abi3.so"]) == [
        "lib/libcudnn.so.9", "lib/libz.so", "m/_C.abi3.so", "a/b.h", "x.py"]


# --- the guard on a real venv ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def empty_venv(tmp_path_factory):
    path = tmp_path_factory.mktemp("guard") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    return path


@pytest.fixture
def venv(tmp_path, empty_venv):
    """A copy of an empty real venv holding a 'torch' 2.9.1 that requires the cu12 cuDNN, and that cuDNN."""
    path = tmp_path / "venv"
    subprocess.run(["cp", "-a", str(empty_venv), str(path)], check=True)
    site = next(path.glob("lib/python3*/site-packages"))
    make_dist(str(site), "torch", "2.9.1", files={"torch/__init__.py": b""}, requires=TORCH_REQUIRES)
    make_dist(str(site), "nvidia-cudnn-cu12", "9.10.2.21", files=CU12_CUDNN)
    return path


def observed(venv, anchor="torch"):
    return observe(FactsOptions(path=str(venv), anchor=anchor, probe=False, gpu=False), SubprocessRunner())


def plan_of(*actions):
    return Plan((Batch(1, "test", tuple(actions), ()),), ())


def install(name, requirement=None, reason="declared (anchor or packages), not installed"):
    return Action("install", name, requirement or name, reason)


def no_backend():
    raise AssertionError("no installer is needed for local wheels")


def guard(venv, plan, wheels, anchor="torch", **check):
    check = InstallCheck(WheelSources(find_links=(str(wheels),), no_index=True), **check)
    return guard_plan(observed(venv, anchor), plan, check, no_backend, str(venv / ".cuda_venv"), check_mode=True)


def refusal(venv, plan, wheels, anchor="torch"):
    before = tree_digest(str(venv), exclude=())
    with pytest.raises(InstallRefused) as caught:
        guard(venv, plan, wheels, anchor)
    assert tree_digest(str(venv), exclude=()) == before
    return caught.value


def test_wheel_over_a_kept_wheels_files_is_refused_shared_objects_first(venv, tmp_path):
    make_wheel(str(tmp_path / "wh"), "nvidia-cudnn-cu13", "9.24.0.43", files=CU13_CUDNN)
    refused = refusal(venv, plan_of(install("nvidia-cudnn-cu13", "nvidia-cudnn-cu13==9.24.0.43")), tmp_path / "wh",
                      anchor="nvidia-cudnn-cu13")  # an anchor with no CUDA major of its own: only the overwrite
    overwrite = [f for f in refused.findings if f.code == F.INSTALL_WOULD_OVERWRITE]
    assert [f.code for f in refused.findings] == [F.INSTALL_WOULD_OVERWRITE]
    finding = overwrite[0]
    assert (finding.severity, finding.subject) == (F.ERROR, "nvidia-cudnn-cu13 9.24.0.43")
    assert finding.details["paths"] == ["nvidia/cudnn/lib/libcudnn.so.9", "nvidia/cudnn/include/cudnn.h"]
    assert finding.details["owners"] == {"nvidia-cudnn-cu12 9.10.2.21": finding.details["paths"]}  # nvidia/__init__.py: same bytes
    assert finding.details["wheel"] == "nvidia_cudnn_cu13-9.24.0.43-py3-none-any.whl"
    assert "would overwrite 2 file(s) owned by another wheel (2 of nvidia-cudnn-cu12 9.10.2.21)" in finding.message
    assert finding.fix.startswith("Drop nvidia-cudnn-cu13 (or the packages entry that brings it), or replace "
                                  "nvidia-cudnn-cu12 9.10.2.21: remove it in the same run")
    assert str(refused).startswith("refused before any change: nvidia-cudnn-cu13 9.24.0.43 (nvidia_cudnn_cu13-")
    assert refused.result["refused"] == [finding.as_dict()]


def test_another_cuda_major_than_the_anchors_is_refused(venv, tmp_path):
    make_wheel(str(tmp_path / "wh"), "nvidia-cudnn-cu13", "9.24.0.43", files=CU13_CUDNN)
    make_dist(str(next(venv.glob("lib/python3*/site-packages"))), "nvidia-cuda-runtime-cu12", "12.8.90")
    refused = refusal(venv, plan_of(install("nvidia-cudnn-cu13", "nvidia-cudnn-cu13==9.24.0.43")), tmp_path / "wh")
    assert [f.code for f in refused.findings] == [F.INSTALL_WOULD_OVERWRITE, F.INSTALL_CUDA_MAJOR_MISMATCH]
    major = refused.findings[1]
    assert major.details == {"wheel": "nvidia_cudnn_cu13-9.24.0.43-py3-none-any.whl", "distribution": "nvidia-cudnn-cu13",
                             "version": "9.24.0.43", "requirement": "nvidia-cudnn-cu13==9.24.0.43", "cuda_major": 13,
                             "evidence": "name", "anchor_cuda_major": 12}
    assert "is built for CUDA 13 (name), but the anchor torch 2.9.1 is built for CUDA 12" in major.message


def test_removal_before_the_install_is_a_planned_replacement(venv, tmp_path):
    make_wheel(str(tmp_path / "wh"), "nvidia-cudnn-cu13", "9.24.0.43", files=CU13_CUDNN)
    plan = plan_of(Action("remove", "nvidia-cudnn-cu12", "nvidia-cudnn-cu12", "listed in remove"),
                   install("nvidia-cudnn-cu13", "nvidia-cudnn-cu13==9.24.0.43"))
    checked = guard(venv, plan, tmp_path / "wh", anchor="nvidia-cudnn-cu13")
    assert [a.reason for a in checked.batches[0].actions] == [
        "listed in remove", "declared (anchor or packages), not installed; replaces 3 file(s) of "
        "nvidia-cudnn-cu12 9.10.2.21, removed before it"]


def test_removal_after_the_install_frees_nothing(venv, tmp_path):
    make_wheel(str(tmp_path / "wh"), "nvidia-cudnn-cu13", "9.24.0.43", files=CU13_CUDNN)
    plan = Plan((Batch(1, "install", (install("nvidia-cudnn-cu13", "nvidia-cudnn-cu13==9.24.0.43"),), ()),
                 Batch(2, "late", (Action("remove", "nvidia-cudnn-cu12", "nvidia-cudnn-cu12", "late"),), ())), ())
    refused = refusal(venv, plan, tmp_path / "wh", anchor="nvidia-cudnn-cu13")
    assert [f.code for f in refused.findings] == [F.INSTALL_WOULD_OVERWRITE]


def test_identical_files_and_reinstalls_are_no_conflict(venv, tmp_path):
    make_wheel(str(tmp_path / "wh"), "nvidia-cudnn-cu12", "9.10.2.21", files=CU12_CUDNN)
    make_wheel(str(tmp_path / "wh"), "nvidia-cublas-cu12", "12.8.4.1",
               files={"nvidia/__init__.py": b"", "nvidia/cublas/lib/libcublas.so.12": b"\x7fELF cublas"})
    plan = plan_of(Action("reinstall", "nvidia-cudnn-cu12", "nvidia-cudnn-cu12==9.10.2.21", "damaged"),
                   install("nvidia-cublas-cu12"))
    assert guard(venv, plan, tmp_path / "wh") == plan


def test_two_wheels_of_one_plan_writing_one_path_are_refused(venv, tmp_path):
    make_wheel(str(tmp_path / "wh"), "alpha", "1.0", files={"shared/lib/libx.so.1": b"alpha"})
    make_wheel(str(tmp_path / "wh"), "beta", "1.0", files={"shared/lib/libx.so.1": b"beta"})
    refused = refusal(venv, plan_of(install("alpha"), install("beta")), tmp_path / "wh")
    assert [(f.subject, f.details["owners"]) for f in refused.findings] == [
        ("beta 1.0", {"alpha 1.0 (planned in this run)": ["shared/lib/libx.so.1"]})]


def test_a_wheel_not_in_the_find_links_is_left_to_the_installer(venv, tmp_path):
    make_wheel(str(tmp_path / "wh"), "nvidia-cudnn-cu13", "9.24.0.43", files=CU13_CUDNN)
    plan = plan_of(install("nvidia-curand-cu12", "nvidia-curand-cu12==10.3.9.90"),
                   install("nvidia-cudnn-cu13", "nvidia-cudnn-cu13==9.24.0.43"))
    refused = refusal(venv, plan, tmp_path / "wh", anchor="nvidia-cudnn-cu13")  # the wheels found are still checked
    assert [f.subject for f in refused.findings] == ["nvidia-cudnn-cu13 9.24.0.43"]
    alone = plan_of(install("nvidia-curand-cu12", "nvidia-curand-cu12==10.3.9.90"))
    checked = guard(venv, alone, tmp_path / "wh")
    assert [a.reason for a in checked.batches[0].actions] == [
        "declared (anchor or packages), not installed; no wheel of it in the wheel sources: not checked, its batch "
        "will be unfixable"]


def test_a_plan_without_installs_reads_no_wheel(venv):
    plan = plan_of(Action("remove", "nvidia-cudnn-cu12", "nvidia-cudnn-cu12", "listed in remove"))
    assert guard_plan(observed(venv), plan, InstallCheck(WheelSources(index_url="http://127.0.0.1:9/simple")),
                      no_backend, str(venv / ".cuda_venv"), check_mode=True) is plan


# --- the installer's own resolution and download ------------------------------------------------------------------

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
    runner = RecordingRunner([reply(1, stderr="ERROR: No matching distribution found for demo-absent==1.0"), reply(0)])
    backend = PipBackend(sys.executable, runner, WheelSources(find_links=(str(tmp_path),), no_index=True))
    assert download(backend, ["demo-absent==1.0", "demo==1.0"], "/dl", None, False, ()) == ["demo-absent==1.0"]
    assert [argv[argv.index("--") + 1:] for argv in runner.argvs] == [("demo-absent==1.0", "demo==1.0"), ("demo==1.0",)]


def test_uv_backend_downloads_with_this_modules_pip_for_the_venvs_python(tmp_path, empty_venv):
    python = str(empty_venv / "bin" / "python")  # no pip in it
    runner = RecordingRunner([reply(1, stderr="No module named pip"), reply(0), reply(0)])
    backend = UvBackend(UV, python, runner, WheelSources(index_url="https://u:t0ken@index.invalid/simple"))
    interpreter = observed(empty_venv, anchor="x").interpreter
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


def test_pip_report_that_is_not_json_is_a_clear_error():
    backend = PipBackend(sys.executable, RecordingRunner([reply(0, stdout="Would install demo-1.0")]), WheelSources())
    with pytest.raises(FetchError) as caught:
        resolve(backend, ["demo"], True, ())
    assert "pip's --report for demo is not the JSON expected (pip >= 22.2 is needed)" in str(caught.value)
