# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for requirements: the requirement closure through extras, on torch 2.14.1 + CUDA 13 metadata.

Requires-Dist strings are copied from shared/layouts/torch-2.14.1-cu130.json (the real wheels).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import canonical_name
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.distributions import read_distributions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging import requirements
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.requirements import (
    RequirementEdge,
    closure,
    marker_env_fallback,
    parse_requirement,
)
from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import make_dist

LINUX_X86_64_PY312 = {
    "implementation_name": "cpython",
    "implementation_version": "3.12.1",
    "os_name": "posix",
    "platform_machine": "x86_64",
    "platform_release": "6.8.0-generic",
    "platform_system": "Linux",
    "platform_version": "#1 SMP PREEMPT_DYNAMIC",
    "python_full_version": "3.12.1",
    "platform_python_implementation": "CPython",
    "python_version": "3.12",
    "sys_platform": "linux",
}

TOOLKIT = "cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvtx]"
TORCH_REQUIRES = [
    "filelock",
    "typing-extensions>=4.10.0",
    "setuptools>=77.0.3",
    "sympy>=1.13.3",
    "networkx>=2.5.1",
    "jinja2",
    "fsspec>=0.8.5",
    TOOLKIT + '==13.0.3; platform_system == "Linux"',
    'cuda-bindings<14,>=13.0.3; platform_system == "Linux" and python_version < "3.15"',
    'nvidia-cudnn-cu13==9.24.0.43; platform_system == "Linux"',
    'nvidia-cusparselt-cu13==0.8.1; platform_system == "Linux"',
    'nvidia-nccl-cu13==2.30.7; platform_system == "Linux"',
    'nvidia-nvshmem-cu13==3.4.5; platform_system == "Linux"',
    'triton~=3.8.0; platform_system == "Linux" and python_version < "3.15"',
    'optree>=0.13.0; extra == "optree"',
    'opt-einsum>=3.3; extra == "opt-einsum"',
    'pyyaml; extra == "pyyaml"',
]
# cuda-toolkit 13.0.3's markers, as written in its METADATA.
ANY = ("(sys_platform == 'linux' and platform_machine == 'aarch64' or sys_platform == 'linux' and platform_machine == 'x86_64'"
       " or sys_platform == 'win32' and platform_machine == 'AMD64')")
LINUX = "(sys_platform == 'linux' and platform_machine == 'aarch64' or sys_platform == 'linux' and platform_machine == 'x86_64')"
CURAND = "nvidia-curand==10.4.0.35.*; %s and extra == 'curand'" % ANY
TOOLKIT_REQUIRES = [
    "nvidia-curand==10.4.0.35.*; %s and extra == 'all'" % ANY,
    "nvidia-npp==13.0.1.2.*; %s and extra == 'all'" % ANY,
    "nvidia-cublas==13.1.1.3.*; %s and extra == 'cublas'" % ANY,
    "nvidia-cuda-nvrtc==13.0.88.*; %s and extra == 'cublas'" % ANY,
    "nvidia-cuda-runtime==13.0.96.*; %s and extra == 'cudart'" % ANY,
    "nvidia-cufft==12.0.0.61.*; %s and extra == 'cufft'" % ANY,
    "nvidia-nvjitlink<14,>=13.0.88; %s and extra == 'cufft'" % ANY,
    "nvidia-cufile==1.15.1.6.*; %s and extra == 'cufile'" % LINUX,
    "nvidia-cuda-cupti==13.0.85.*; %s and extra == 'cupti'" % ANY,
    CURAND,
    "nvidia-cublas==13.1.1.3.*; %s and extra == 'cusolver'" % ANY,
    "nvidia-cusolver==12.0.4.66.*; %s and extra == 'cusolver'" % ANY,
    "nvidia-cusparse==12.6.3.3.*; %s and extra == 'cusolver'" % ANY,
    "nvidia-nvjitlink<14,>=13.0.88; %s and extra == 'cusolver'" % ANY,
    "nvidia-cusparse==12.6.3.3.*; %s and extra == 'cusparse'" % ANY,
    "nvidia-nvjitlink<14,>=13.0.88; %s and extra == 'cusparse'" % ANY,
    "nvidia-npp==13.0.1.2.*; %s and extra == 'npp'" % ANY,
    "nvidia-nvjitlink<14,>=13.0.88; %s and extra == 'nvjitlink'" % ANY,
    "nvidia-cuda-nvrtc==13.0.88.*; %s and extra == 'nvrtc'" % ANY,
    "nvidia-nvtx==13.0.85.*; %s and extra == 'nvtx'" % ANY,
]
# name: (version, Requires-Dist) of the healthy venv, plus nvidia-npp which nothing in it requires.
STACK = {
    "torch": ("2.14.1", TORCH_REQUIRES),
    "cuda-toolkit": ("13.0.3.0", TOOLKIT_REQUIRES),
    "cuda-bindings": ("13.5.0", [
        "cuda-pathfinder>=1.4.2",
        'cuda-toolkit[nvfatbin,nvjitlink,nvrtc,nvvm]==13.*; extra == "all"',
        'cuda-toolkit[cufile]==13.*; sys_platform == "linux" and extra == "all"',
        'cuda-toolkit==13.*; extra == "all"',
        'nvidia-cudla==13.*; (platform_system == "Linux" and platform_machine == "aarch64") and extra == "all"',
    ]),
    "cuda-pathfinder": ("1.9.1", []),
    "filelock": ("4.3.1", []),
    "fsspec": ("2026.9.0", ["adlfs; extra == 'abfs'"]),
    "Jinja2": ("3.1.6", ["MarkupSafe>=2.0"]),
    "MarkupSafe": ("3.0.4", []),
    "mpmath": ("1.3.0", []),
    "networkx": ("3.6.1", []),
    "nvidia-cublas": ("13.1.1.3", ["nvidia-cuda-nvrtc"]),
    "nvidia-cuda-cupti": ("13.0.85", []),
    "nvidia-cuda-nvrtc": ("13.0.88", []),
    "nvidia-cuda-runtime": ("13.0.96", []),
    "nvidia-cudnn-cu13": ("9.24.0.43", ["nvidia-cublas"]),
    "nvidia-cufft": ("12.0.0.61", ["nvidia-nvjitlink"]),
    "nvidia-cufile": ("1.15.1.6", []),
    "nvidia-curand": ("10.4.0.35", []),
    "nvidia-cusolver": ("12.0.4.66", ["nvidia-cublas", "nvidia-nvjitlink", "nvidia-cusparse"]),
    "nvidia-cusparse": ("12.6.3.3", ["nvidia-nvjitlink"]),
    "nvidia-cusparselt-cu13": ("0.8.1", []),
    "nvidia-nccl-cu13": ("2.30.7", []),
    "nvidia-npp": ("13.0.1.2", []),
    "nvidia-nvjitlink": ("13.5.37", []),
    "nvidia-nvshmem-cu13": ("3.4.5", []),
    "nvidia-nvtx": ("13.0.85", []),
    "setuptools": ("84.2.1", ['pytest!=8.1.*,>=6; extra == "test"']),
    "sympy": ("1.14.0", ["mpmath<1.4,>=1.1.0", 'pytest>=7.1.0; extra == "dev"']),
    "triton": ("3.8.0", ['importlib-metadata; python_version < "3.10"']),
    "typing_extensions": ("4.16.0", []),
}
REACHED_NVIDIA = {
    "nvidia-cublas", "nvidia-cuda-cupti", "nvidia-cuda-nvrtc", "nvidia-cuda-runtime", "nvidia-cudnn-cu13", "nvidia-cufft",
    "nvidia-cufile", "nvidia-curand", "nvidia-cusolver", "nvidia-cusparse", "nvidia-cusparselt-cu13", "nvidia-nccl-cu13",
    "nvidia-nvjitlink", "nvidia-nvshmem-cu13", "nvidia-nvtx",
}


def install(site, stack):
    for name, (version, requires) in stack.items():
        make_dist(site, name, version, requires=requires)
    return read_distributions([site])


@pytest.fixture
def site(tmp_path):
    path = tmp_path / "site-packages"
    path.mkdir()
    return str(path)


def test_closure_reaches_nvidia_wheels_through_extras(site):
    edges = closure(["torch"], install(site, STACK), LINUX_X86_64_PY312)
    assert {e.name for e in edges if e.name.startswith("nvidia-")} == REACHED_NVIDIA
    assert "nvidia-npp" not in {e.name for e in edges}
    assert [e for e in edges if not e.satisfied] == []
    assert {e.name for e in edges} == {canonical_name(n) for n in STACK} - {"nvidia-npp"}
    assert edges[0] == RequirementEdge("torch", "torch", (), "", "", (), "2.14.1", True)
    toolkit = next(e for e in edges if e.name == "cuda-toolkit")
    assert (toolkit.extras, toolkit.specifier, toolkit.installed, toolkit.satisfied) == (
        ("cublas", "cudart", "cufft", "cufile", "cupti", "curand", "cusolver", "cusparse", "nvjitlink", "nvrtc", "nvtx"),
        "==13.0.3", "13.0.3.0", True)
    nvrtc_by = [(e.required_by, e.chain) for e in edges if e.name == "nvidia-cuda-nvrtc"]
    assert nvrtc_by == [
        (TOOLKIT, ("torch", TOOLKIT)),
        (TOOLKIT, ("torch", TOOLKIT)),
        ("nvidia-cublas", ("torch", TOOLKIT, "nvidia-cublas")),
    ]


def test_closure_missing_curand_is_reported(site):
    stack = dict(STACK)
    del stack["nvidia-curand"]
    edges = closure(["torch"], install(site, stack), LINUX_X86_64_PY312)
    assert [e for e in edges if not e.satisfied] == [RequirementEdge(
        requirement=CURAND,
        name="nvidia-curand",
        extras=(),
        specifier="==10.4.0.35.*",
        required_by=TOOLKIT,
        chain=("torch", TOOLKIT),
        installed=None,
        satisfied=False,
    )]


def test_closure_version_mismatch_and_extra_roots(site):
    stack = dict(STACK, **{"nvidia-cudnn-cu13": ("9.10.2.21", ["nvidia-cublas"])})
    edges = closure(["torch", "nvidia-cudnn-cu12==9.10.2.21"], install(site, stack), LINUX_X86_64_PY312)
    assert [(e.name, e.specifier, e.required_by, e.installed) for e in edges if not e.satisfied] == [
        ("nvidia-cudnn-cu12", "==9.10.2.21", "", None),
        ("nvidia-cudnn-cu13", "==9.24.0.43", "torch", "9.10.2.21"),
    ]


@pytest.mark.parametrize("system, machine, platform_name", [("Darwin", "arm64", "darwin"), ("Windows", "AMD64", "win32")])
def test_closure_other_platforms_need_no_cuda_wheels(site, system, machine, platform_name):
    env = dict(LINUX_X86_64_PY312, platform_system=system, platform_machine=machine, sys_platform=platform_name)
    edges = closure(["torch"], install(site, STACK), env)
    assert [e.name for e in edges] == ["torch", "filelock", "typing-extensions", "setuptools", "sympy", "networkx", "jinja2", "fsspec",
                                       "mpmath", "markupsafe"]


def test_closure_bad_strings_cycles_duplicates_prereleases(tmp_path, site):
    other = str(tmp_path / "lib64")
    os.mkdir(other)
    make_dist(site, "app", "1.0.dev3", requires=["lib[Fast_Mode]>=2", "foo[", "b"])
    make_dist(site, "lib", "1.5", requires=["never; extra == 'other'"])
    make_dist(other, "lib", "2.1rc1", requires=["b; extra == 'fast-mode'"])
    make_dist(site, "b", "1", requires=["app>=1.0.dev1"])
    edges = closure(["app>=0.9", "app", "bad root ["], read_distributions([site, other]), LINUX_X86_64_PY312)
    # The reason after the colon is packaging's own wording, which changes between its versions.
    problems = [e.problem.split(": ")[0] if e.problem else None for e in edges]
    assert [(e.requirement, e.name, e.extras, e.required_by, e.installed, e.satisfied) for e in edges] == [
        ("app>=0.9", "app", (), "", "1.0.dev3", True),
        ("app", "app", (), "", "1.0.dev3", True),
        ("bad root [", "", (), "", None, False),
        ("lib[Fast_Mode]>=2", "lib", ("fast-mode",), "app", "2.1rc1", True),
        ("foo[", "", (), "app", None, False),
        ("b", "b", (), "app", "1", True),
        ("b; extra == 'fast-mode'", "b", (), "lib[fast-mode]", "1", True),
        ("app>=1.0.dev1", "app", (), "b", "1.0.dev3", True),
    ]
    assert problems == [None, None, "invalid requirement 'bad root ['", None, "invalid requirement 'foo['", None, None, None]


def test_parse_requirement_and_canonical():
    req = parse_requirement("Nvidia_Cudnn-CU12[x]==9.10.2.21; python_version >= '3.9'")
    assert (req.name, sorted(req.extras), str(req.specifier)) == ("Nvidia_Cudnn-CU12", ["x"], "==9.10.2.21")
    assert canonical_name(req.name) == "nvidia-cudnn-cu12"
    with pytest.raises(ValueError) as err:
        parse_requirement("torch==")
    assert str(err.value).startswith("invalid requirement 'torch==': ")
    assert "\n" not in str(err.value)


def test_marker_env_fallback():
    env = marker_env_fallback("3.11.7.final.0", {"platform_machine": "aarch64"})
    assert (env["python_version"], env["python_full_version"], env["implementation_version"]) == ("3.11", "3.11.7", "3.11.7")
    assert env["platform_machine"] == "aarch64"
    assert env["sys_platform"] == sys.platform
    assert sorted(env) == sorted(LINUX_X86_64_PY312)
    assert marker_env_fallback("3.12")["python_full_version"] == "3.12.0"
    with pytest.raises(ValueError) as err:
        marker_env_fallback(None)
    assert str(err.value) == "invalid python version None: expected a version like 3.12.1 (pyvenv.cfg version)"


NO_PACKAGING = """
import sys
sys.modules["packaging"] = None
sys.path.insert(0, COLLECTIONS)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging import requirements as r
print(r.HAS_PACKAGING, "packaging" in r.PACKAGING_IMPORT_ERROR)
try:
    r.closure(["torch"], [], {})
except RuntimeError as exc:
    print(str(exc).splitlines()[0])
"""


def test_closure_without_packaging():
    """A node without 'packaging': the module still imports, and calls fail clearly."""
    # .../ansible_collections/gpuops/cuda_venv/plugins/module_utils/_read/packaging/requirements.py -> the dir holding ansible_collections
    collections = os.path.abspath(os.path.join(os.path.dirname(requirements.__file__), *[".."] * 7))
    code = NO_PACKAGING.replace("COLLECTIONS", repr(collections))
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == [
        "False True",
        "the Python library 'packaging' is required on the managed node to read requirements: Traceback (most recent call last):",
    ]
