# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the engine knows about CUDA wheels, their libraries and torch's loader.

Private to the gpuops.cuda_venv collection: not a public API.

Everything here is data measured on real wheels (docs/CUDA_NOTES.md, Wheel layouts and Loader rules; the
findings they feed in docs/FINDINGS.md); functions are pure.
"""

from __future__ import annotations

import re
from typing import Iterable, Optional, Sequence, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import canonical_name

# Sonames of CUDA libraries (toolkit components, cuDNN, NCCL, NVSHMEM, the driver).
CUDA_SONAME = re.compile(
    r"^lib(cudart|cublas|cublasLt|nvblas|cudnn\w*|cufft\w*|curand|cusolver\w*|cusparse|cusparseLt|nccl|"
    r"nvshmem\w*|nvrtc[\w.-]*|nvJitLink|cupti|nvperf_\w+|pcsamplingutil|nvToolsExt|nvtx3interop|cufile\w*|"
    r"cuda|nvidia-ml|nvjpeg|npp\w*|nvfatbin|nvvm|nvptxcompiler\w*)\.so(\.\d+)*$"
)

# Optional network transports NVSHMEM's, NCCL's and cuFile's plugins load when the machine has them (MPI, libfabric,
# OpenSHMEM, UCX, PMIx, InfiniBand verbs, GDRCopy): absent on most machines, harmless until such a plugin is asked for.
OPTIONAL_TRANSPORT_SONAME = re.compile(
    r"^lib(mpi\w*|oshmem|fabric|uc[pstm]|pmix|pmi2?|ibverbs|rdmacm|mlx[45]|efa|gdrapi|hcoll|nl-3|nl-route-3)\.so(\.\d+)*$")

# Driver libraries come from the host's driver, never from a wheel.
DRIVER_SONAMES = frozenset(("libcuda.so.1", "libnvidia-ml.so.1"))

# CUDA 13 toolkit wheels and unsuffixed wheels whose version major IS the CUDA major.
_VERSION_IS_CUDA_MAJOR = frozenset((
    "cuda-toolkit", "cuda-bindings", "cuda-python", "nvidia-cublas", "nvidia-cuda-runtime",
    "nvidia-cuda-nvrtc", "nvidia-cuda-cupti", "nvidia-cuda-cccl", "nvidia-cuda-crt", "nvidia-cuda-nvcc",
    "nvidia-cuda-culibos", "nvidia-cuda-cuxxfilt", "nvidia-cuda-opencl", "nvidia-cuda-profiler-api",
    "nvidia-cuda-sanitizer-api", "nvidia-nvjitlink", "nvidia-nvtx", "nvidia-nvvm", "nvidia-nvfatbin",
    "nvidia-nvptxcompiler", "nvidia-nvml-dev",
))

# Sonames whose own version number is the CUDA major (libcudart.so.12 -> 12).
_SONAME_IS_CUDA_MAJOR = re.compile(r"^lib(cudart|cublas|cublasLt|nvrtc|nvJitLink|cupti|nvblas)\.so\.(\d+)$")

# Distributions known to consume CUDA (they bundle or load CUDA libraries) besides the nvidia-* wheels.
KNOWN_CUDA_CONSUMERS = frozenset((
    "sgl-kernel", "sglang-kernel", "sglang", "flashinfer-python", "flashinfer-cubin", "flashinfer-jit-cache",
    "vllm", "xformers", "flash-attn", "flash-attn-3", "deepspeed", "bitsandbytes", "apex", "onnxruntime-gpu",
    "tensorrt", "tensorrt-cu12", "tensorrt-cu13", "tensorrt-llm", "jax-cuda12-plugin", "jax-cuda13-plugin",
    "jax-cuda12-pjrt", "jax-cuda13-pjrt", "cupy-cuda11x", "cupy-cuda12x", "cupy-cuda13x", "nvidia-dali-cuda120",
))

# Wheel families whose cu12 and cu13 builds install the SAME paths (nvidia/cudnn/lib/libcudnn.so.9 in both cuDNN wheels, for example).
COLLIDING_FAMILIES = (
    ("nvidia-cudnn-cu12", "nvidia-cudnn-cu13"),
    ("nvidia-cusparselt-cu12", "nvidia-cusparselt-cu13"),
    ("nvidia-nccl-cu12", "nvidia-nccl-cu13"),
    ("nvidia-nvshmem-cu12", "nvidia-nvshmem-cu13"),
)

# torch/__init__.py _preload_cuda_deps: folder under nvidia/, library glob; in torch's order.
TORCH_PRELOAD = (
    ("cublas", "libcublasLt.so.*[0-9]"), ("cublas", "libcublas.so.*[0-9]"), ("cudnn", "libcudnn.so.*[0-9]"),
    ("cuda_nvrtc", "libnvrtc.so.*[0-9]"), ("cuda_nvrtc", "libnvrtc-builtins.so.*[0-9]"), ("cuda_runtime", "libcudart.so.*[0-9]"),
    ("cuda_cupti", "libcupti.so.*[0-9]"), ("cufft", "libcufft.so.*[0-9]"), ("curand", "libcurand.so.*[0-9]"),
    ("nvjitlink", "libnvJitLink.so.*[0-9]"), ("cusparse", "libcusparse.so.*[0-9]"),
    ("cusparselt", "libcusparseLt.so.*[0-9]"), ("cusolver", "libcusolver.so.*[0-9]"),
    ("nccl", "libnccl.so.*[0-9]"), ("nvshmem", "libnvshmem_host.so.*[0-9]"), ("cufile", "libcufile.so.*[0-9]"),
)
# CUDA 13 toolkit wheels put every component in one folder.
TORCH_PRELOAD_SHARED_FOLDERS = ("cu13",)

# Files loaded when each anchor is imported, relative to site-packages (globs); others: top-level extensions.
ANCHOR_ENTRY_POINTS = {
    "torch": ("torch/lib/libtorch_global_deps.so", "torch/_C.*so"),
}

# Libraries whose version the anchor reports at runtime: probe key -> (distribution stem, version encoder).
RUNTIME_VERSION_KEYS = {
    "cudnn": "nvidia-cudnn",
    "nccl": "nvidia-nccl",
}

# Library families by soname prefix: two builds of one family in a process mix (e.g. a cuDNN sub-library of another
# build: SUBLIBRARY_VERSION_MISMATCH, pytorch/pytorch#188892).
LIBRARY_FAMILIES = (
    ("cuDNN", "libcudnn"), ("cuBLAS", "libcublas"), ("cuSPARSELt", "libcusparseLt."), ("cuSPARSE", "libcusparse."),
    ("NCCL", "libnccl."), ("NVSHMEM", "libnvshmem"), ("cuFFT", "libcufft"), ("cuRAND", "libcurand."),
    ("cuSOLVER", "libcusolver"), ("CUDA runtime", "libcudart."), ("NVRTC", "libnvrtc"), ("nvJitLink", "libnvJitLink."),
    ("CUPTI", "libcupti."), ("cuFile", "libcufile"),
)

_SUFFIX = re.compile(r"-cu(\d+)$|-cuda(\d+)(x|-|$)")
_PATH_MAJOR = re.compile(r"(?:^|/)nvidia/cu(\d+)/")
# A library built for one CUDA version of several a wheel ships: hook_cu12.abi3.so, libbitsandbytes_cuda128.so.
_FILE_MAJOR = re.compile(r"[_.-]cu(?:da)?(\d{2,3})(?=[_.-])")


def is_cuda_soname(soname: str) -> bool:
    """True for the soname of a CUDA library (runtime, math libraries, cuDNN, NCCL, NVSHMEM, driver)."""
    return bool(CUDA_SONAME.match(soname))


def is_optional_transport(soname: str) -> bool:
    """True for a network transport library an optional plugin needs (libmpi.so.40, libfabric.so.1, libucp.so.0)."""
    return bool(OPTIONAL_TRANSPORT_SONAME.match(soname))


# Families whose member libraries must all come from one build, and what a mix of two builds does: any two copies
# of a member that differ in their bytes are two builds in one process.
ONE_BUILD_FAMILIES = {
    "cuDNN": "a mixed cuDNN fails with SUBLIBRARY_VERSION_MISMATCH at the first convolution or falls back silently to "
             "slower kernels",
    "cuBLAS": "libcublas calls into the libcublasLt of its own release; another build of either breaks the pair",
}


def library_family(soname: str) -> Optional[str]:
    """The CUDA library family a soname belongs to (libcudnn_graph.so.9 -> cuDNN), or None."""
    return next((family for family, prefix in LIBRARY_FAMILIES if soname.startswith(prefix)), None)


def family_prefix(soname: str) -> Optional[str]:
    """The file name prefix the members of a soname's family share (libcudnn_graph.so.9 -> libcudnn), or None."""
    return next((prefix for _family, prefix in LIBRARY_FAMILIES if soname.startswith(prefix)), None)


def is_cuda_distribution(key: str) -> bool:
    """nvidia-* and cuda-* wheels (canonical names)."""
    return key.startswith("nvidia-") or key.startswith("cuda-")


def name_major(key: str) -> Optional[int]:
    """The CUDA major written in a distribution's name: nvidia-cudnn-cu12 -> 12, cupy-cuda12x -> 12."""
    match = _SUFFIX.search(key) or re.search(r"-cuda(\d+)", key)
    if not match:
        return None
    return _digits_major(next(g for g in match.groups() if g and g.isdigit()))  # nvidia-dali-cuda120: CUDA 12.0


def cuda_major(key: str, version: str, paths: Iterable[str], provided: Iterable[str] = (),
               requires: Sequence[str] = ()) -> Tuple[Optional[int], Optional[str]]:
    """Best evidence of the CUDA major a distribution is built for, and which evidence.

    CUDA 13 toolkit wheels have no -cu13 suffix and some are versioned by their own soname
    (nvidia-cusparse 12.x ships CUDA 13's libcusparse.so.12), so the name alone is not enough:
    the name suffix wins, then the install folder (nvidia/cu13/lib), then a soname that carries the
    CUDA major, then the version of families versioned by CUDA, then the -cuNN of a dependency (not of an extra).
    """
    major = name_major(key)
    if major is not None:
        return major, "name"
    for path in paths:
        match = _PATH_MAJOR.search(path) if "nvidia/cu" in path else None  # the test first: a venv has 20,000 paths
        if match:
            return int(match.group(1)), "install path"
    for soname in provided:
        match = _SONAME_IS_CUDA_MAJOR.match(soname)
        if match:
            return int(match.group(2)), "soname %s" % soname
    if key in _VERSION_IS_CUDA_MAJOR:
        head = version.split(".", 1)[0]
        if head.isdigit():
            return int(head), "version"
    for requirement in requires:
        if "extra" in requirement.partition(";")[2]:
            continue  # an optional extra (jax's cuda12 and cuda13) says nothing of the build
        name = canonical_name(re.split(r"[\s;\[<>=!~(]", requirement.strip(), maxsplit=1)[0])
        dep_major = name_major(name)
        if dep_major is not None and (is_cuda_distribution(name) or name in KNOWN_CUDA_CONSUMERS):
            return dep_major, "dependency %s" % name
    return None, None


def build_majors(paths: Iterable[str], needed: Iterable[str], requires: Sequence[str]) -> Tuple[int, ...]:
    """Every CUDA major a distribution carries a build for, sorted: the majors in its shared objects' names
    (``_cu12``/``_cu13``, ``_cuda118`` ... ``_cuda132``), the CUDA-versioned sonames they link against
    (libcudart.so.12, libcublas.so.13), and the ``-cuNN`` flavours its requirements name, extras included
    (nvidia-cutlass-dsl: ``-libs-cu12`` always, ``-libs-cu13`` under its ``cu13`` extra). Two or more: a wheel that
    picks its build at run time (by torch's CUDA version or the driver's)."""
    majors = set()
    for path in paths:
        base = path.rsplit("/", 1)[-1]
        match = _FILE_MAJOR.search(base) if ".so" in base else None
        if match:
            majors.add(_digits_major(match.group(1)))
    for soname in needed:
        match = _SONAME_IS_CUDA_MAJOR.match(soname)
        if match:
            majors.add(int(match.group(2)))
    for requirement in requires:
        name = canonical_name(re.split(r"[\s;\[<>=!~(]", requirement.strip(), maxsplit=1)[0])
        dep_major = name_major(name)
        if dep_major is not None and (is_cuda_distribution(name) or name in KNOWN_CUDA_CONSUMERS):
            majors.add(dep_major)
    return tuple(sorted(majors))


def versioned_by_major(key: str) -> bool:
    """True for wheels whose version major is the CUDA major they are built for (cuda-python 12.6 -> CUDA 12)."""
    return key in _VERSION_IS_CUDA_MAJOR


def build_files(paths: Iterable[str], major: int) -> Tuple[str, ...]:
    """The shared objects whose names say they are the CUDA ``major`` build (what that major selects)."""
    return tuple(sorted(p for p in paths if ".so" in p.rsplit("/", 1)[-1] and any(
        _digits_major(m) == major for m in _FILE_MAJOR.findall(p.rsplit("/", 1)[-1]))))


def _digits_major(digits: str) -> int:
    return int(digits[:-1]) if len(digits) >= 3 else int(digits)  # cuda128: CUDA 12.8


def local_cuda_version(version: str) -> Optional[str]:
    """The CUDA version in a wheel's local version label: torch "2.9.1+cu128" -> "12.8"; None without one."""
    digits = version.split("+cu", 1)[1] if "+cu" in version else ""
    return "%s.%s" % (digits[:-1], digits[-1]) if digits.isdigit() and len(digits) >= 3 else None


def needed_major(needed: Iterable[str]) -> Optional[int]:
    """The CUDA major a consumer links against, from sonames like libcudart.so.12."""
    for soname in needed:
        match = _SONAME_IS_CUDA_MAJOR.match(soname)
        if match:
            return int(match.group(2))
    return None


def colliding_partner(key: str) -> Optional[str]:
    """The other-major wheel that installs the same paths as ``key``, if any."""
    for pair in COLLIDING_FAMILIES:
        if key in pair:
            return pair[1] if key == pair[0] else pair[0]
    return None


def encode_runtime_version(key: str, version: str) -> Optional[str]:
    """How the library of ``version`` reports itself at runtime: cuDNN 9.10.2.21 -> '91002', NCCL 2.27.5 -> '2.27.5'."""
    parts = [int(p) for p in re.findall(r"\d+", version)[:3]]
    while len(parts) < 3:
        parts.append(0)
    if key.startswith("nvidia-cudnn"):
        return str(parts[0] * 10000 + parts[1] * 100 + parts[2]) if parts[0] >= 9 else str(parts[0] * 1000 + parts[1] * 100 + parts[2])
    if key.startswith("nvidia-nccl"):
        return "%d.%d.%d" % tuple(parts)
    return None
