# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The LLM-serving venv's shape on stand-in wheels, with real uv: an application pinning a CUDA 13 torch installed
over a CUDA 12 venv (uv replaces torch and leaves the cu12 wheels), two wheels sharing a stray top-level file.

The default repair keeps the application; the repair declaring the old torch (``packages: [torch==2.9.1]``) is
judged against it, as uv resolves it from the stand-in wheelhouses: the application pinning the other torch goes
(its requirement conflicts with the declared one), the CUDA 12 stack comes back, and the venv ends healthy.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from scenario_tools import run_module
from tests.standin import build_wheelhouse
from tests.standin._venv import create_uv_venv, uv_install, venv_python

from ansible_collections.gpuops.cuda_venv.tests.support.elf_helpers import build_so
from ansible_collections.gpuops.cuda_venv.tests.support.wheel_helpers import make_wheel

PROBE = "import json, torch; print(json.dumps(torch.__version__))"


@pytest.fixture(scope="module")
def serving(tmp_path_factory):
    """(venv, wheel sources): uv venv; ``uv pip install torch==2.9.1``; ``uv pip install sglang`` (0.5.23 pins
    torch==2.14.1, the CUDA 13 stand-in stack), with flashinfer-python and torch-c-dlpack-ext both listing a
    top-level build_backend.py, torch-memory-saver's two builds (real ELF files linking libcudart.so.12 and .13), and
    nvidia-cutlass-dsl with its CUDA 12 flavour always and its CUDA 13 one under the ``cu13`` extra sglang asks for."""
    base = tmp_path_factory.mktemp("serving")
    cu12, cu13, apps = build_wheelhouse("cu128", base / "cu12"), build_wheelhouse("cu130", base / "cu13"), base / "apps"
    apps.mkdir()
    make_wheel(str(apps), "flashinfer-python", "0.7.2", {"flashinfer/__init__.py": b"", "build_backend.py": b"# fi\n"},
               requires=["torch"])
    make_wheel(str(apps), "torch-c-dlpack-ext", "0.1.5", {"torch_c_dlpack_ext/__init__.py": b"",
                                                          "build_backend.py": b"# dlpack\n"})
    builds = {}
    for major in (12, 13):  # torch-memory-saver's two builds, real ELF files, each linking its CUDA runtime
        name = "torch_memory_saver_hook_mode_preload_cu%d.abi3.so" % major
        with open(build_so(base / "so" / name, needed=["libcudart.so.%d" % major]), "rb") as handle:
            builds[name] = handle.read()
    make_wheel(str(apps), "torch-memory-saver", "0.0.10", dict(builds, **{"torch_memory_saver/__init__.py": b""}))
    make_wheel(str(apps), "nvidia-cutlass-dsl", "4.8.0", {"cutlass/__init__.py": b""},
               requires=["nvidia-cutlass-dsl-libs-cu12==4.8.0", 'nvidia-cutlass-dsl-libs-cu13==4.8.0; extra == "cu13"'])
    for major in (12, 13):
        make_wheel(str(apps), "nvidia-cutlass-dsl-libs-cu%d" % major, "4.8.0",
                   {"cutlass/_mlir/_mlir_libs/cu%d/__init__.py" % major: b""})
    make_wheel(str(apps), "sglang", "0.5.23", {"sglang/__init__.py": b""},
               requires=["torch==2.14.1", "flashinfer-python==0.7.2", "torch-c-dlpack-ext", "torch-memory-saver",
                         "nvidia-cutlass-dsl[cu13]==4.8.0"])
    venv = base / "venv"
    create_uv_venv(venv)
    uv_install(venv, ["torch==2.9.1"], [cu12])
    uv_install(venv, ["sglang"], [cu13, apps])
    yield venv, [str(cu12), str(cu13), str(apps)]
    shutil.rmtree(str(base))


def copy_of(venv, dest):
    """A hard-linked copy (uv and the repair replace files, never write into them)."""
    subprocess.run(["cp", "-al", str(venv), str(dest)], check=True)
    return dest


def repair(tmp_path, venv, links, check=False, **args):
    return run_module(tmp_path, "cuda_venv_repair", dict(path=str(venv), find_links=links, no_index=True, backend="uv",
                                                         **args), check=check)


def removed(result):
    return sorted(a["name"] for b in result["plan"]["batches"] for a in b["actions"] if a["action"] == "remove")


def imports(venv, module):
    return subprocess.run([venv_python(venv), "-c", "import %s" % module], capture_output=True, check=False).returncode == 0


def test_the_default_repair_keeps_the_application_and_removes_only_the_left_behind_cuda_12_wheels(tmp_path, serving):
    venv, links = serving
    rc, result, output = repair(tmp_path, venv, links, check=True)
    assert rc == 0, output
    gone = removed(result)
    assert gone and all(name.startswith("nvidia-") and name.endswith("-cu12") for name in gone), gone
    assert "nvidia-cutlass-dsl-libs-cu12" not in gone
    assert {"sglang", "flashinfer-python", "torch-c-dlpack-ext", "torch-memory-saver", "nvidia-cutlass-dsl"}.isdisjoint(gone)
    stray = [f for f in result["findings"] if f["code"] == "FILE_OWNERSHIP_CONFLICT" and "build_backend.py" in f["details"]["paths"]]
    assert [(f["severity"], f["subject"]) for f in stray] == [("warning", "flashinfer-python 0.7.2 & torch-c-dlpack-ext 0.1.5")]
    rc, facts, output = run_module(tmp_path, "cuda_venv_facts", {"path": str(venv), "probe": False, "gpu": False})
    assert rc == 0, output
    neighbours = {n["distribution"]: n["why"] for n in facts["ansible_facts"]["cuda_venv"]["neighbours"]}
    assert neighbours["torch-memory-saver 0.0.10"] == (
        "a CUDA consumer that carries builds for CUDA 12 and 13 (CUDA 13 selects "
        "torch_memory_saver_hook_mode_preload_cu13.abi3.so); nothing on disk proves it wrong for this venv")
    assert neighbours["nvidia-cutlass-dsl-libs-cu12 4.8.0"].startswith(
        "the CUDA 12 flavour of nvidia-cutlass-dsl 4.8.0, which carries builds for CUDA 12 and 13")
    assert "CUDA_MAJOR_MIXED" in [f["code"] for f in facts["ansible_facts"]["cuda_venv"]["findings"]]  # the cu12 orphans
    assert not [f for f in facts["ansible_facts"]["cuda_venv"]["findings"] if f["severity"] != "info" and any(
        name in f["subject"] for name in ("sglang", "flashinfer", "dlpack", "memory-saver", "cutlass"))
        and f["code"] != "FILE_OWNERSHIP_CONFLICT"]


def test_the_repair_declaring_the_old_torch_converges_to_it_and_removes_the_application_pinning_the_other(
        tmp_path, serving):
    venv, links = serving
    copy = copy_of(venv, tmp_path / "copy")
    assert imports(copy, "sglang")
    rc, checked, output = repair(tmp_path, copy, links, check=True, packages=["torch==2.9.1"])
    assert rc == 0, output
    assert checked["declared"]["request"] == ["torch==2.9.1"] and "torch==2.9.1" in checked["declared"]["pins"]
    assert checked["plan"]["batches"][0]["actions"][0]["requirement"] == "torch==2.9.1"  # the new anchor first
    sglang = [a for b in checked["plan"]["batches"] for a in b["actions"] if a["name"] == "sglang"]
    assert [(a["action"], [e["kind"] for e in a["evidence"]]) for a in sglang] == [("remove", ["requirement_conflict"])]
    assert "requires torch==2.14.1; torch 2.9.1 is declared" in sglang[0]["reason"]
    rc, result, output = repair(tmp_path, copy, links, packages=["torch==2.9.1"])
    assert rc == 0 and result["healthy"] is True, output
    version = subprocess.run([venv_python(copy), "-c", PROBE], capture_output=True, text=True, check=True).stdout
    assert json.loads(version) == "2.9.1+cu128" and not imports(copy, "sglang") and imports(copy, "flashinfer")
    rc, again, output = repair(tmp_path, copy, links, packages=["torch==2.9.1"])
    assert rc == 0 and again["changed"] is False and "declared" not in again, output
