# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The incident scenarios, built with real pip in real venvs, fail like the real venvs did.

The machine may have a system CUDA in its loader cache (libcudart.so.13, libcupti.so.13 ...); where
a missing library could come from there, the expected outcome is computed from ``ldconfig -p``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Optional

import pytest

from tests.standin import ScenarioInfo, StandinError, advance_scenario, build_scenario, pip, probe_torch, site_packages
from tests.standin._scenarios import CONTAMINANTS

ROOT = Path(__file__).resolve().parents[3]
CACHE = ROOT / "build" / "standin-cache"
CLEAN = "No broken requirements found.\n"
PIP = ("-m", "pip", "--isolated", "--disable-pip-version-check")


def system_cache_has(soname: str) -> bool:
    """Whether the loader cache (ldconfig -p) lists this soname for x86-64."""
    ldconfig = shutil.which("ldconfig") or next((p for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig") if Path(p).exists()), None)
    if ldconfig is None:
        return False
    out = subprocess.run([ldconfig, "-p"], stdout=subprocess.PIPE, text=True, check=False).stdout
    return any(line.split()[0] == soname and "x86-64" in line for line in out.splitlines()[1:] if line.strip())


def first_missing(sonames: List[str]) -> Optional[str]:
    """The import error expected when these libraries are missing from the venv, in load order."""
    for soname in sonames:
        if not system_cache_has(soname):
            return "ImportError: %s: cannot open shared object file: No such file or directory" % soname
    return None


def report_without_maps(probe) -> dict:
    assert probe.report is not None, probe.stderr
    return {k: v for k, v in probe.report.items() if k != "loaded"}


def installed(venv) -> dict:
    """{project: version} from the .dist-info folders (what pip list reads, without its start-up time)."""
    found = {}
    for info in site_packages(venv).glob("*.dist-info"):
        headers = (info / "METADATA").read_text().split("\n\n", 1)[0]
        fields = dict(line.split(": ", 1) for line in headers.splitlines() if ": " in line)
        found[fields["Name"]] = fields["Version"]
    return found


def record_files(site: Path, dist_info: str) -> List[Path]:
    rows = (site / dist_info / "RECORD").read_text().splitlines()
    return [site / r.split(",")[0] for r in rows if not r.startswith(dist_info + "/")]


@pytest.mark.slow
def test_incident_healthy_contaminated_gutted_partial_restore(tmp_path):
    info = build_scenario("healthy-cu12", tmp_path / "incident", CACHE)
    site = site_packages(info.venv)
    healthy = probe_torch(info.venv)
    assert report_without_maps(healthy) == {
        "torch": "2.9.1+cu128", "cuda": "12.8", "cudnn": 91002, "nccl": [2, 27, 5], "cuda_available": False}
    assert str(site / "nvidia/cudnn/lib/libcudnn.so.9") in healthy.report["loaded"]
    assert pip(info.venv, "check").stdout == CLEAN

    info = advance_scenario(info, "contaminated", CACHE)
    contaminated = probe_torch(info.venv)
    assert report_without_maps(contaminated) == {
        "torch": "2.9.1+cu128", "cuda": "12.8", "cudnn": 92400, "nccl": [2, 27, 5], "cuda_available": False}
    versions = installed(info.venv)
    assert {n: versions[n] for n in versions if n.startswith(("nvidia-cudnn", "nvidia-nccl", "nvidia-cublas"))} == {
        "nvidia-cudnn-cu12": "9.10.2.21", "nvidia-cudnn-cu13": "9.24.0.43", "nvidia-nccl-cu12": "2.27.5",
        "nvidia-nccl-cu13": "2.30.7", "nvidia-cublas-cu12": "12.8.4.1", "nvidia-cublas": "13.1.1.3"}
    assert b"nvidia-cudnn-cu13 9.24.0.43" in (site / "nvidia/cudnn/lib/libcudnn.so.9").read_bytes()
    assert pip(info.venv, "check").stdout == CLEAN

    info = advance_scenario(info, "gutted", CACHE)
    for dist_info in ("nvidia_cudnn_cu12-9.10.2.21.dist-info", "nvidia_cusparselt_cu12-0.7.1.dist-info",
                      "nvidia_nccl_cu12-2.27.5.dist-info", "nvidia_nvshmem_cu12-3.3.20.dist-info"):
        files = record_files(site, dist_info)
        assert files and not [f for f in files if f.exists()], dist_info
    assert installed(info.venv)["nvidia-cudnn-cu12"] == "9.10.2.21"
    assert pip(info.venv, "check").stdout == CLEAN
    gutted = probe_torch(info.venv)
    cascade = ["libcudnn.so.9", "libcusparseLt.so.0", "libnccl.so.2", "libnvshmem_host.so.3"]
    assert gutted.error == first_missing(cascade)
    if gutted.error:
        assert '    from torch._C import *  # noqa: F403,E402\n' in gutted.stderr

    info = advance_scenario(info, "partial-restore", CACHE)
    assert probe_torch(info.venv).error == first_missing(cascade[1:])

    python, venv_python = sys.executable, str(info.venv / "bin" / "python")
    extras = str(info.extra_wheelhouse)
    assert info.commands == (
        (python, "-m", "venv", str(info.venv)),
        (venv_python, *PIP, "install", "--no-index", "--find-links", str(info.wheelhouse), "torch==2.9.1"),
        (venv_python, *PIP, "install", "--no-index", "--find-links", extras, *CONTAMINANTS),
        (venv_python, *PIP, "uninstall", "--yes", "nvidia-cudnn-cu13", "nvidia-cusparselt-cu13", "nvidia-nccl-cu13",
         "nvidia-nvshmem-cu13"),
        (venv_python, *PIP, "install", "--no-index", "--find-links", extras, "nvidia-cudnn-cu13==9.24.0.43"),
    )


@pytest.mark.slow
def test_healthy_cu13_loads_venv_libraries_then_curand_removed_passes_pip_check(tmp_path):
    info = build_scenario("healthy-cu13", tmp_path / "cu13", CACHE)
    site = site_packages(info.venv)
    healthy = probe_torch(info.venv)
    assert report_without_maps(healthy) == {
        "torch": "2.14.1+cu130", "cuda": "13.0", "cudnn": 92400, "nccl": [2, 30, 7], "cuda_available": False}
    # RPATH wins over a system CUDA 13 in the loader cache.
    assert [p for p in healthy.report["loaded"] if "libcudart.so" in p] == [str(site / "nvidia/cu13/lib/libcudart.so.13")]
    assert pip(info.venv, "check").stdout == CLEAN

    info = advance_scenario(info, "curand-removed", CACHE)
    assert "nvidia-curand" not in installed(info.venv)
    assert pip(info.venv, "check").stdout == CLEAN
    removed = probe_torch(info.venv)
    assert removed.error == first_missing(["libcurand.so.10"])
    if removed.error is None:  # a system libcurand.so.10 covers the removed wheel
        assert not [p for p in removed.report["loaded"] if "libcurand.so" in p and p.startswith(str(site))]


@pytest.mark.slow
def test_truncated_nccl_built_by_the_cli_fails_with_file_too_short(tmp_path):
    done = subprocess.run([sys.executable, "-m", "tests.standin", "scenario", "truncated-nccl", str(tmp_path / "nccl"),
                           "--cache", str(CACHE)], cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    site = site_packages(info["venv"])
    assert (info["name"], info["stack"], info["ld_library_path"]) == ("truncated-nccl", "cu128", None)
    assert info["commands"][-1] == ["truncate", "--size=0", str(site / "nvidia/nccl/lib/libnccl.so.2")]
    assert (site / "nvidia/nccl/lib/libnccl.so.2").stat().st_size == 0
    assert pip(info["venv"], "check").stdout == CLEAN
    assert probe_torch(info["venv"]).error == (
        "ImportError: %s/torch/lib/../../nvidia/nccl/lib/libnccl.so.2: file too short" % site)


CUDART_VERSION = """
import ctypes, os
import {first}, {second}
lib = ctypes.CDLL("libcudart.so.12", mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
version = ctypes.c_int(0)
lib.cudaRuntimeGetVersion(ctypes.byref(version))
print(version.value)
"""


@pytest.mark.slow
def test_consumer_brings_its_own_cudart_and_the_first_import_decides(tmp_path):
    info = build_scenario("consumer", tmp_path / "consumer", CACHE)
    assert installed(info.venv)["sgl-kernel"] == "0.3.9"
    assert pip(info.venv, "check").stdout == CLEAN
    versions = {}
    for first, second in (("torch", "sgl_kernel"), ("sgl_kernel", "torch")):
        done = subprocess.run([str(info.python), "-I", "-c", CUDART_VERSION.format(first=first, second=second)],
                              cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=True)
        versions[first] = int(done.stdout)
    assert versions == {"torch": 12080, "sgl_kernel": 12040}


@pytest.mark.slow
def test_system_fallback_imports_only_through_ld_library_path(tmp_path):
    info = build_scenario("system-fallback", tmp_path / "fallback", CACHE)
    assert sorted(p.name for p in info.ld_library_path.iterdir()) == ["libcurand.so.10"]
    assert probe_torch(info.venv).error == first_missing(["libcurand.so.10"])
    fallback = probe_torch(info.venv, ld_library_path=info.ld_library_path)
    assert report_without_maps(fallback)["cudnn"] == 91002
    assert [p for p in fallback.report["loaded"] if "libcurand" in p] == [str(info.ld_library_path / "libcurand.so.10")]


def test_scenario_misuse_is_refused(tmp_path):
    with pytest.raises(StandinError, match=r"unknown scenario 'sick': use one of healthy-cu12, "):
        build_scenario("sick", tmp_path / "a", CACHE)
    (tmp_path / "b" / "venv").mkdir(parents=True)
    with pytest.raises(StandinError, match=r"already holds a venv"):
        build_scenario("healthy-cu12", tmp_path / "b", CACHE)
    cu13 = ScenarioInfo("healthy-cu13", "cu130", tmp_path / "venv", tmp_path / "wh", None, None, (), "")
    with pytest.raises(StandinError, match=r"scenario gutted does not follow from healthy-cu13; its lineage is "
                                           r"healthy-cu12 -> contaminated -> gutted"):
        advance_scenario(cu13, "gutted")
