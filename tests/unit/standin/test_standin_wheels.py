# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stand-in wheels declare and install exactly what the measured layouts say."""

from __future__ import annotations

import base64
import ctypes
import hashlib
import io
import json
import shutil
import zipfile
from pathlib import Path

import pytest
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile

from tests.standin import StandinError, build_extra_wheels, build_wheelhouse
from tests.standin._elf import identity_symbol, system_sonames_available
from tests.standin._layout import SYSTEM_SONAMES, load_stack
from tests.standin._wheel import dist_info_dir, wheel_filename
from tests.standin import _wheelhouse as wheelhouse_module
from tests.standin._wheelhouse import _cached as cached_wheelhouse

ROOT = Path(__file__).resolve().parents[3]
CACHE = ROOT / "build" / "standin-cache"
# The measured layouts (shared/layouts of the project's steering repo), copied in verbatim so this runs everywhere.
MEASURED_LAYOUTS = ROOT / "tests" / "standin" / "data" / "measured"
LAYOUT_FILES = {"cu128": "torch-2.9.1-cu128.json", "cu130": "torch-2.14.1-cu130.json"}
CU13_OVER_CU12 = {
    "nvidia-cudnn-cu13": "nvidia-cudnn-cu12",
    "nvidia-cusparselt-cu13": "nvidia-cusparselt-cu12",
    "nvidia-nccl-cu13": "nvidia-nccl-cu12",
    "nvidia-nvshmem-cu13": "nvidia-nvshmem-cu12",
}


@pytest.fixture(scope="module", params=["cu128", "cu130"])
def stack_wheels(request, tmp_path_factory):
    """(stack spec, {dist key: open ZipFile}) for a freshly copied wheelhouse of each stack."""
    dest = build_wheelhouse(request.param, tmp_path_factory.mktemp("wheels-" + request.param), cache=CACHE)
    stack = load_stack(request.param)
    wheels = {d.key: zipfile.ZipFile(dest / wheel_filename(d)) for d in stack.distributions}
    yield stack, wheels
    for zf in wheels.values():
        zf.close()


def elf_dynamic(data: bytes) -> dict:
    """SONAME, NEEDED (in order), RPATH and RUNPATH of an ELF image."""
    out = {"soname": None, "needed": [], "rpath": None, "runpath": None}
    for section in ELFFile(io.BytesIO(data)).iter_sections():
        if isinstance(section, DynamicSection):
            for tag in section.iter_tags():
                if tag.entry.d_tag == "DT_SONAME":
                    out["soname"] = tag.soname
                elif tag.entry.d_tag == "DT_NEEDED":
                    out["needed"].append(tag.needed)
                elif tag.entry.d_tag == "DT_RPATH":
                    out["rpath"] = tag.rpath
                elif tag.entry.d_tag == "DT_RUNPATH":
                    out["runpath"] = tag.runpath
    return out


def metadata_fields(zf: zipfile.ZipFile, dist) -> list:
    text = zf.read(dist_info_dir(dist) + "/METADATA").decode()
    return [tuple(line.split(": ", 1)) for line in text.splitlines()]


def test_every_distribution_but_pip_has_one_wheel(stack_wheels):
    stack, wheels = stack_wheels
    assert "pip" not in wheels
    assert sorted(zf.filename.rsplit("/", 1)[-1] for zf in wheels.values()) == sorted(
        wheel_filename(d) for d in stack.distributions)


def test_metadata_declares_layout_requirements_verbatim(stack_wheels):
    stack, wheels = stack_wheels
    for dist in stack.distributions:
        fields = metadata_fields(wheels[dist.key], dist)
        assert fields[:3] == [("Metadata-Version", "2.1"), ("Name", dist.name), ("Version", dist.version)]
        assert [v for k, v in fields if k == "Requires-Dist"] == list(dist.requires_dist)


def test_metadata_provides_every_extra_its_markers_use():
    dist = load_stack("cu130").dist("cuda-toolkit")
    with zipfile.ZipFile(io.BytesIO(_wheel_bytes("cu130", "cuda-toolkit"))) as zf:
        extras = [v for k, v in metadata_fields(zf, dist) if k == "Provides-Extra"]
    assert extras == [
        "all", "cccl", "crt", "cublas", "cudart", "cufft", "cufile", "culibos", "cupti", "curand", "cusolver",
        "cusparse", "cuxxfilt", "npp", "nvcc", "nvfatbin", "nvjitlink", "nvjpeg", "nvml", "nvptxcompiler", "nvrtc",
        "nvtx", "nvvm", "opencl", "profiler", "sanitizer",
    ]


def _wheel_bytes(stack_name: str, dist_name: str) -> bytes:
    """One wheel straight from the session cache entry."""
    stack = load_stack(stack_name)
    return (cached_wheelhouse(stack, CACHE) / wheel_filename(stack.dist(dist_name))).read_bytes()


def test_wheel_metadata_and_record_are_valid(stack_wheels):
    stack, wheels = stack_wheels
    for dist in stack.distributions:
        zf = wheels[dist.key]
        info = dist_info_dir(dist)
        assert zf.read(info + "/WHEEL").decode() == (
            "Wheel-Version: 1.0\nGenerator: tests.standin\nRoot-Is-Purelib: false\nTag: py3-none-any\n")
        rows = [line.split(",") for line in zf.read(info + "/RECORD").decode().splitlines()]
        assert sorted(r[0] for r in rows) == sorted(zf.namelist())
        for path, digest, size in rows:
            if path == info + "/RECORD":
                assert (digest, size) == ("", "")
                continue
            data = zf.read(path)
            expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert (digest, int(size)) == ("sha256=" + expected, len(data)), path


def test_elf_files_have_layout_soname_needed_and_search_paths(stack_wheels):
    stack, wheels = stack_wheels
    available = system_sonames_available()
    for dist in stack.distributions:
        zf = wheels[dist.key]
        for spec in dist.elf_files:
            member = zf.getinfo(spec.path)
            assert member.external_attr >> 16 == 0o100755, spec.path
            expected_needed = [n for n in spec.needed if n not in SYSTEM_SONAMES or n in available]
            assert elf_dynamic(zf.read(member)) == {
                "soname": spec.soname, "needed": expected_needed, "rpath": spec.rpath, "runpath": spec.runpath,
            }, "%s of %s" % (spec.path, dist.name)


def test_python_and_data_files_are_installed_beside_the_elf_files(stack_wheels):
    stack, wheels = stack_wheels
    for dist in stack.distributions:
        names = set(wheels[dist.key].namelist())
        assert set(dist.python_files) | set(dist.data_files) <= names
    if stack.name == "cu128":
        cublas = stack.dist("nvidia-cublas-cu12")
        assert wheels[cublas.key].read("nvidia/__init__.py") == b""
        assert sorted(cublas.python_files) == ["nvidia/__init__.py", "nvidia/cublas/__init__.py",
                                               "nvidia/cublas/include/__init__.py", "nvidia/cublas/lib/__init__.py"]


def test_torch_declares_its_real_console_script_and_no_other_wheel_one(stack_wheels):
    """Installers write bin/torchrun from it (with the venv's interpreter in its shebang), as for the real wheel."""
    stack, wheels = stack_wheels
    declaring = sorted(d.key for d in stack.distributions if dist_info_dir(d) + "/entry_points.txt" in wheels[d.key].namelist())
    assert declaring == ["torch"]
    torch = stack.dist("torch")
    assert wheels["torch"].read(dist_info_dir(torch) + "/entry_points.txt") == (
        b"[console_scripts]\ntorchrun = torch.distributed.run:main\n")


def test_torch_c_is_a_stable_abi_extension_in_place_of_the_cpython_one(stack_wheels):
    stack = stack_wheels[0]
    (spec,) = [e for e in stack.dist("torch").elf_files if e.python_module]
    assert (spec.path, spec.python_module) == ("torch/_C.abi3.so", "_C")
    assert spec.layout_path == "torch/_C.cpython-311-x86_64-linux-gnu.so"
    assert spec.needed[0] == "libtorch_python.so"
    assert spec.rpath.endswith(":$ORIGIN:$ORIGIN/lib") and spec.runpath is None


def test_unresolvable_sonames_are_linked_but_never_shipped(stack_wheels):
    stack, wheels = stack_wheels
    shipped = {name.rsplit("/", 1)[-1] for zf in wheels.values() for name in zf.namelist()}
    provided = {e.soname for d in stack.distributions for e in d.elf_files}
    optional = {n for d in stack.distributions for e in d.elf_files for n in e.needed} - provided - set(SYSTEM_SONAMES)
    assert optional == {"libcuda.so.1", "libfabric.so.1", "libibverbs.so.1", "libmlx5.so.1", "libmpi.so.40",
                        "liboshmem.so.40", "libpmix.so.2", "librdmacm.so.1", "libucp.so.0", "libucs.so.0"}
    assert not optional & shipped


def test_libraries_report_their_version_and_identity(tmp_path):
    found = {}
    for stack_name, dist_name, path, symbol, ctype in (
        ("cu128", "nvidia-cudnn-cu12", "nvidia/cudnn/lib/libcudnn.so.9", "cudnnGetVersion", None),
        ("cu130", "nvidia-cudnn-cu13", "nvidia/cudnn/lib/libcudnn.so.9", "cudnnGetVersion", None),
        ("cu128", "nvidia-nccl-cu12", "nvidia/nccl/lib/libnccl.so.2", "ncclGetVersion", ctypes.c_int),
        ("cu130", "nvidia-nccl-cu13", "nvidia/nccl/lib/libnccl.so.2", "ncclGetVersion", ctypes.c_int),
        ("cu128", "nvidia-cuda-runtime-cu12", "nvidia/cuda_runtime/lib/libcudart.so.12", "cudaRuntimeGetVersion", ctypes.c_int),
        ("cu130", "nvidia-cuda-runtime", "nvidia/cu13/lib/libcudart.so.13", "cudaRuntimeGetVersion", ctypes.c_int),
    ):
        with zipfile.ZipFile(io.BytesIO(_wheel_bytes(stack_name, dist_name))) as zf:
            target = tmp_path / stack_name / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(path))
        lib = ctypes.CDLL(str(target))
        ident = getattr(lib, identity_symbol(path))
        ident.restype = ctypes.c_char_p
        func = getattr(lib, symbol)
        if ctype is None:
            func.restype = ctypes.c_size_t
            value = func()
        else:
            out = ctype(0)
            assert func(ctypes.byref(out)) == 0
            value = out.value
        found[dist_name] = (value, ident().decode())
    assert found == {
        "nvidia-cudnn-cu12": (91002, "nvidia-cudnn-cu12 9.10.2.21 nvidia/cudnn/lib/libcudnn.so.9"),
        "nvidia-cudnn-cu13": (92400, "nvidia-cudnn-cu13 9.24.0.43 nvidia/cudnn/lib/libcudnn.so.9"),
        "nvidia-nccl-cu12": (22705, "nvidia-nccl-cu12 2.27.5 nvidia/nccl/lib/libnccl.so.2"),
        "nvidia-nccl-cu13": (23007, "nvidia-nccl-cu13 2.30.7 nvidia/nccl/lib/libnccl.so.2"),
        "nvidia-cuda-runtime-cu12": (12080, "nvidia-cuda-runtime-cu12 12.8.90 nvidia/cuda_runtime/lib/libcudart.so.12"),
        "nvidia-cuda-runtime": (13000, "nvidia-cuda-runtime 13.0.96 nvidia/cu13/lib/libcudart.so.13"),
    }


def test_cu13_contaminants_install_every_path_of_their_cu12_namesakes():
    cu12, cu13 = load_stack("cu128"), load_stack("cu130")
    for name13, name12 in CU13_OVER_CU12.items():
        d12, d13 = cu12.dist(name12), cu13.dist(name13)
        paths12 = {e.path for e in d12.elf_files} | set(d12.python_files) | set(d12.data_files)
        paths13 = {e.path for e in d13.elf_files} | set(d13.python_files) | set(d13.data_files)
        assert paths12 and paths12 <= paths13, name13


def test_namesake_files_of_cu12_and_cu13_differ_in_size_like_real_ones():
    cu12, cu13 = load_stack("cu128"), load_stack("cu130")
    for name13, name12 in CU13_OVER_CU12.items():
        with zipfile.ZipFile(io.BytesIO(_wheel_bytes("cu128", name12))) as z12, \
                zipfile.ZipFile(io.BytesIO(_wheel_bytes("cu130", name13))) as z13:
            shared = [n for n in z12.namelist() if n in z13.namelist() and ".dist-info/" not in n]
            assert shared and [n for n in shared if z12.getinfo(n).file_size == z13.getinfo(n).file_size] == [], name13
    assert cu12.dist("nvidia-cudnn-cu12").python_files == cu13.dist("nvidia-cudnn-cu13").python_files == ()


def test_extra_wheels_come_with_their_requirements(tmp_path):
    with_reqs = build_extra_wheels(["nvidia-cudnn-cu13"], tmp_path / "a", cache=CACHE)
    alone = build_extra_wheels(["nvidia-cudnn-cu13"], tmp_path / "b", cache=CACHE, with_requirements=False)
    assert sorted(p.name for p in with_reqs.iterdir()) == [
        "nvidia_cublas-13.1.1.3-py3-none-any.whl",
        "nvidia_cuda_nvrtc-13.0.88-py3-none-any.whl",
        "nvidia_cudnn_cu13-9.24.0.43-py3-none-any.whl",
    ]
    assert sorted(p.name for p in alone.iterdir()) == ["nvidia_cudnn_cu13-9.24.0.43-py3-none-any.whl"]


def test_consumer_wheel_bundles_its_own_cudart_and_builds_reproducibly(tmp_path):
    first = build_extra_wheels(["sgl-kernel"], tmp_path / "one")
    second = build_extra_wheels(["sgl-kernel"], tmp_path / "two")
    name = "sgl_kernel-0.3.9-py3-none-any.whl"
    assert [p.name for p in first.iterdir()] == [name]
    assert (first / name).read_bytes() == (second / name).read_bytes()
    with zipfile.ZipFile(first / name) as zf:
        assert sorted(zf.namelist()) == [
            "sgl_kernel-0.3.9.dist-info/METADATA", "sgl_kernel-0.3.9.dist-info/RECORD",
            "sgl_kernel-0.3.9.dist-info/WHEEL", "sgl_kernel/__init__.py", "sgl_kernel/common_ops.abi3.so",
            "sgl_kernel/lib/libcudart.so.12",
        ]
        ext = elf_dynamic(zf.read("sgl_kernel/common_ops.abi3.so"))
        assert (ext["needed"][0], ext["rpath"], ext["runpath"]) == ("libcudart.so.12", None, "$ORIGIN/lib")
        assert all(i.date_time == (2020, 1, 1, 0, 0, 0) for i in zf.infolist())


def test_cached_wheelhouse_is_reused_byte_for_byte(tmp_path):
    one = build_wheelhouse("cu128", tmp_path / "one", cache=CACHE)
    two = build_wheelhouse("cu128", tmp_path / "two", cache=CACHE)
    names = sorted(p.name for p in one.iterdir())
    assert names == sorted(p.name for p in two.iterdir())
    assert all((one / n).read_bytes() == (two / n).read_bytes() for n in names)


def test_cache_key_follows_the_builder_sources_and_data_only(tmp_path, monkeypatch):
    copy = tmp_path / "standin"
    shutil.copytree(wheelhouse_module.PACKAGE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(wheelhouse_module, "PACKAGE_DIR", copy)
    key = wheelhouse_module.source_key()
    (copy / "_scenarios.py").write_text("# not a build input\n")
    assert wheelhouse_module.source_key() == key
    (copy / "payload" / "standin.c").write_text((copy / "payload" / "standin.c").read_text() + "\n")
    assert wheelhouse_module.source_key() != key


def test_unknown_stack_or_distribution_is_refused(tmp_path):
    with pytest.raises(StandinError, match=r"unknown stack 'cu999': use one of cu128, cu130"):
        build_wheelhouse("cu999", tmp_path)
    with pytest.raises(StandinError, match=r"no stand-in for 'nvidia-nope'"):
        build_extra_wheels(["nvidia-nope"], tmp_path)


@pytest.mark.parametrize("stack_name", ["cu128", "cu130"])
def test_data_is_the_measured_layout_trimmed(stack_name):
    raw = json.loads((MEASURED_LAYOUTS / LAYOUT_FILES[stack_name]).read_text())
    stack = load_stack(stack_name)
    measured = [d for d in raw["distributions"] if d["name"] != "pip"]
    assert [(d["name"], d["version"], d["requires_dist"]) for d in measured] == [
        (d.name, d.version, list(d.requires_dist)) for d in stack.distributions]
    for raw_dist, dist in zip(measured, stack.distributions):
        assert [(e["path"], e["elf"]["soname"], e["elf"]["needed"], e["elf"]["rpath"], e["elf"]["runpath"])
                for e in raw_dist["elf_files"]] == [
            (e.layout_path or e.path, e.soname, list(e.needed), e.rpath, e.runpath) for e in dist.elf_files]
