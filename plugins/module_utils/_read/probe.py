# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ask a venv's own interpreter about itself: its paths and markers, and whether the anchor imports.

Private to the gpuops.cuda_venv collection: not a public API.

The modules never run inside the venv they diagnose (it may be broken); these
functions start its interpreter as a subprocess through a runner, with a
timeout, a fresh empty working directory, ``-I`` (no cwd on sys.path, no
PYTHON* variables, no user site) and ``-B`` (no .pyc written into the venv),
and a clean environment.  torch preloads ``<each sys.path entry>/nvidia/*/lib``
(torch/__init__.py, _preload_cuda_deps; docs/CUDA_NOTES.md, Loader rules), so a probe started with the caller's cwd on sys.path
could load someone else's libraries: these probes cannot.

The scripts below run in the venv's interpreter, which may be old: they stay
Python 3.6 compatible and use the standard library only.  Each prints one line
``CUDA_VENV_PROBE <json>``; everything else on stdout is noise from the import.
"""

from __future__ import annotations

import inspect
import os
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field
from typing import Optional, Sequence, Union

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import SHARED_OBJECT_NAME
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import REPORT_PRELUDE, Runner, clean_env, marker_report
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.loader import split_ld_library_path
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.requirements import marker_environment

MARKER = "CUDA_VENV_PROBE "

# Characters of output kept in a CheckResult and of stderr quoted in errors.
TAIL_CHARS = 4000

INTERPRETER_SCRIPT = r'''
import json
import os
import platform
import sys
import sysconfig


''' + inspect.getsource(marker_environment) + r'''

paths = sysconfig.get_paths()
report = {
    "executable": sys.executable,
    "version": platform.python_version(),
    "implementation": sys.implementation.name,
    "purelib": paths.get("purelib"),
    "platlib": paths.get("platlib"),
    "sys_path": list(sys.path),
    "marker_env": marker_environment(),
}
sys.stdout.write("\nCUDA_VENV_PROBE " + json.dumps(report) + "\n")
'''

IMPORT_SCRIPT = REPORT_PRELUDE + r'''
import importlib
import re
import traceback

# The shared-object rule of names.SHARED_OBJECT_NAME, written in when this text is built.
SHARED_OBJECT = re.compile(''' + repr(SHARED_OBJECT_NAME) + r''')


def json_value(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def attempt(report, key, read):
    # One version fact; a broken library may raise anything, and the others still count.
    try:
        report["versions"][key] = json_value(read())
    except BaseException as exc:
        report["versions"][key] = None
        report["version_errors"][key] = exception_line(exc)


def nccl_text(raw):
    # torch returns (2, 27, 5); old releases returned NCCL's integer code.
    if isinstance(raw, (tuple, list)):
        return ".".join(str(part) for part in raw)
    raw = int(raw)
    if raw >= 10000:
        return "%d.%d.%d" % (raw // 10000, raw % 10000 // 100, raw % 100)
    return "%d.%d.%d" % (raw // 1000, raw % 1000 // 100, raw % 100)


def mapped_library(loaded, stem):
    # The library named stem.so* among those mapped in this process, or None.
    import ctypes
    for path in loaded:
        if os.path.basename(path).startswith(stem + ".so"):
            return ctypes.CDLL(path)
    return None


def loaded_nccl(loaded):
    # ncclGetVersion() of the libnccl.so.2 mapped in this process (no GPU needed); None when none is loaded.
    import ctypes
    library = mapped_library(loaded, "libnccl")
    if library is None:
        return None
    code = ctypes.c_int(0)
    library.ncclGetVersion(ctypes.byref(code))
    return nccl_text(code.value)


def loaded_cudnn(loaded):
    # cudnnGetVersion() of the libcudnn.so mapped in this process: what torch.backends.cudnn.version() returns.
    import ctypes
    library = mapped_library(loaded, "libcudnn")
    if library is None:
        return None
    function = library.cudnnGetVersion
    function.restype = ctypes.c_size_t
    return int(function())


def compiled_parts(anchor):
    # The anchor's compiled parts in the order torch's import loads them (torch/__init__.py): the libraries
    # lib/lib*_global_deps.so (RTLD_GLOBAL), then the package's own extension modules (torch._C); found
    # without running the package. None when it has no extension module: nothing for the loader to test.
    import importlib.machinery
    import importlib.util
    top = anchor.split(".")[0]
    spec = importlib.util.find_spec(top)
    if spec is None:
        raise ModuleNotFoundError("No module named %r" % top)
    folders = list(spec.submodule_search_locations or ())
    if not folders:
        return None
    package, suffixes = folders[0], tuple(importlib.machinery.EXTENSION_SUFFIXES)
    library = os.path.join(package, "lib")
    first = sorted(os.path.join(library, name) for name in (os.listdir(library) if os.path.isdir(library) else ())
                   if name.startswith("lib") and name.endswith("_global_deps.so"))
    then = sorted(os.path.join(package, name) for name in os.listdir(package) if name.endswith(suffixes))
    return (first, then) if then else None


def load(parts):
    # dlopen as the import does: an extension module's failure reads as its import's ImportError.
    import ctypes
    first, then = parts
    for path in first:
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    for path in then:
        try:
            ctypes.CDLL(path, mode=sys.getdlopenflags())
        except OSError as exc:
            raise ImportError(str(exc))


def read_versions(anchor, module, report):
    if anchor == "torch":
        attempt(report, "torch", lambda: str(module.__version__))
        attempt(report, "cuda", lambda: importlib.import_module("torch.version").cuda)
        attempt(report, "cudnn", lambda: importlib.import_module("torch.backends.cudnn").version())
        # torch.cuda.nccl.version() is the NCCL torch was BUILT against; "nccl" is the library it runs (below).
        attempt(report, "nccl_build", lambda: nccl_text(importlib.import_module("torch.cuda.nccl").version()))
        attempt(report, "cuda_available", lambda: bool(importlib.import_module("torch.cuda").is_available()))
    elif hasattr(module, "__version__"):
        attempt(report, anchor, lambda: str(module.__version__))


def mapped_objects():
    # Real paths of the shared objects mapped now, first seen first.
    seen = []
    with open("/proc/self/maps", "rb") as maps:
        for raw in maps:
            fields = raw.rstrip(b"\n").split(None, 5)
            if len(fields) < 6 or not fields[5].startswith(b"/"):
                continue
            path = os.fsdecode(fields[5])
            if path.endswith(" (deleted)") or not SHARED_OBJECT.match(os.path.basename(path)):
                continue
            real = os.path.realpath(path)
            if real not in seen:
                seen.append(real)
    return seen


def module_files():
    # Real paths of the files the imported modules came from: with the mapped objects, what the import depended on.
    found = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and path.startswith("/"):
            found.add(os.path.realpath(path))
    return sorted(found)


def main():
    anchor = sys.argv[1]
    loader_only = sys.argv[2:] == ["loader"]
    report = {"ok": False, "error": None, "traceback": None, "versions": {}, "version_errors": {}, "loaded": [],
              "loader_only": False}
    try:
        parts = compiled_parts(anchor) if loader_only else None
        if parts:
            report["loader_only"] = True
            load(parts)
        else:
            module = importlib.import_module(anchor)
    except BaseException as exc:
        report["error"] = exception_line(exc)
        report["traceback"] = traceback.format_exc()
    else:
        report["ok"] = True
        if not report["loader_only"]:
            read_versions(anchor, module, report)
    try:
        report["loaded"] = mapped_objects()
    except OSError as exc:
        report["version_errors"]["loaded"] = exception_line(exc)
    report["sources"] = module_files()
    if anchor == "torch" and report["ok"]:
        attempt(report, "nccl", lambda: loaded_nccl(report["loaded"]))
        if report["loader_only"]:
            attempt(report, "cudnn", lambda: loaded_cudnn(report["loaded"]))
    report_and_exit(''' + repr(MARKER) + r''', report, 0 if report["ok"] else 1)


main()
'''


class ProbeError(CudaVenvError, ValueError):
    """Bad input to a probe (not a failed probe: that is a result)."""


@dataclass(frozen=True)
class InterpreterInfo:
    """What a venv's interpreter says about itself; ok False and ``error`` when it could not say."""

    ok: bool
    executable: str
    version: Optional[str]
    implementation: Optional[str]
    purelib: Optional[str]
    platlib: Optional[str]
    sys_path: tuple
    marker_env: dict
    error: Optional[str]


@dataclass(frozen=True)
class CheckResult:
    """What a user's own check command did."""

    argv: tuple
    ok: bool
    returncode: Optional[int]
    timed_out: bool
    signal: Optional[str]
    output: str
    error: Optional[str]
    duration: float


@dataclass(frozen=True)
class ProbeResult:
    """What importing the anchor in the venv's interpreter did.

    ``error`` is the exception line as Python prints it; ``loaded`` the real
    paths of the shared objects mapped after the import and version reads;
    ``version_errors`` maps a ``versions`` key whose read raised to that
    exception line; ``check`` is the user's command, run only after a
    successful import.
    """

    ran: bool
    ok: bool
    error: Optional[str]
    traceback: Optional[str]
    returncode: Optional[int]
    timed_out: bool
    signal: Optional[str]
    loaded: tuple
    versions: dict
    duration: float
    version_errors: dict = field(default_factory=dict)
    check: Optional[CheckResult] = None
    loader_only: bool = False  # only the anchor's compiled parts were loaded (see probe_import's loader_only)
    sources: tuple = ()  # real paths of the files the imported modules came from (with ``loaded``: what it read)
    reused_from: Optional[str] = None  # answered from the read index: when the probe it repeats ran (ISO 8601, UTC)


def query_interpreter(python: str, runner: Runner, timeout: float = 30.0) -> InterpreterInfo:
    """Ask ``python`` (a venv's interpreter) for its version, install paths, sys.path and marker environment."""
    python = _interpreter_path(python)
    _check_timeout(timeout)
    problem = _interpreter_problem(python)
    if problem:
        return _no_info(python, problem)
    result, _duration = _run_isolated(runner, [python, "-I", "-B", "-c", INTERPRETER_SCRIPT], {}, timeout)
    report = marker_report(result.stdout, MARKER)
    if not result.ok or report is None:
        return _no_info(python, _failure(python, result, timeout))
    return InterpreterInfo(
        ok=True,
        executable=report.get("executable") or python,
        version=report.get("version"),
        implementation=report.get("implementation"),
        purelib=report.get("purelib"),
        platlib=report.get("platlib"),
        sys_path=tuple(report.get("sys_path") or ()),
        marker_env=dict(report.get("marker_env") or {}),
        error=None,
    )


def probe_import(
    python: str,
    anchor: str,
    runner: Runner,
    *,
    ld_library_path: Union[str, Sequence[str]] = (),
    timeout: float = 120.0,
    command: Optional[Sequence[str]] = None,
    pycache: Optional[str] = None,
    loader_only: bool = False,
) -> ProbeResult:
    """Import ``anchor`` with the venv's interpreter, isolated; then run ``command`` if the import worked.

    ``loader_only``: instead of importing, load the anchor's compiled parts with the real loader in the
    order torch's import does (``lib/lib*_global_deps.so`` with RTLD_GLOBAL, then the package's extension
    modules), without running its Python: the same loader messages as the import for a third of its
    time on a real torch venv (docs/BENCHMARKS.md). A package with no extension module is imported.
    ``versions`` then holds what the mapped cuDNN and NCCL report of themselves.

    ``ld_library_path`` is the workload's LD_LIBRARY_PATH (absolute folders);
    nothing else of the caller's environment reaches the probe. The probe writes
    no bytecode (``-B``), unless ``pycache`` names a folder outside site-packages
    for it (``-X pycache_prefix``): a repair probes several times, and a venv
    installed without bytecode (uv's default) would compile torch each time.
    """
    python = _interpreter_path(python)
    _check_anchor(anchor)
    _check_timeout(timeout)
    extra = library_path_env(ld_library_path)
    command = _check_argv(command) if command is not None else None
    problem = _interpreter_problem(python)
    if problem:
        return ProbeResult(
            ran=False, ok=False, error=problem, traceback=None, returncode=None, timed_out=False, signal=None, loaded=(), versions={}, duration=0.0
        )
    bytecode = ["-X", "pycache_prefix=" + pycache] if pycache else ["-B"]
    argv = [python, "-I"] + bytecode + ["-c", IMPORT_SCRIPT, anchor] + (["loader"] if loader_only else [])
    result, duration = _run_isolated(runner, argv, extra, timeout)
    report = marker_report(result.stdout, MARKER)
    if report is None:
        return ProbeResult(
            ran=True,
            ok=False,
            error=_failure(python, result, timeout, "importing %s" % anchor),
            traceback=_tail(result.stderr) or None,
            returncode=None if result.timed_out else result.rc,
            timed_out=result.timed_out,
            signal=_signal_name(result),
            loaded=(),
            versions={},
            duration=duration,
        )
    ok = bool(report.get("ok")) and result.ok
    return ProbeResult(
        ran=True,
        ok=ok,
        error=report.get("error") or (None if ok else _failure(python, result, timeout, "importing %s" % anchor)),
        traceback=report.get("traceback"),
        returncode=None if result.timed_out else result.rc,
        timed_out=result.timed_out,
        signal=_signal_name(result),
        loaded=tuple(report.get("loaded") or ()),
        versions=dict(report.get("versions") or {}),
        duration=duration,
        version_errors=dict(report.get("version_errors") or {}),
        check=run_check(command, runner, ld_library_path=ld_library_path, timeout=timeout) if ok and command is not None else None,
        loader_only=bool(report.get("loader_only")),
        sources=tuple(report.get("sources") or ()),
    )


def run_check(
    argv: Sequence[str],
    runner: Runner,
    *,
    ld_library_path: Union[str, Sequence[str]] = (),
    timeout: float = 120.0,
) -> CheckResult:
    """Run a user's own check command from an empty folder with a clean environment.

    It is the user's argv, so no ``-I`` is added; PYTHONDONTWRITEBYTECODE and
    PYTHONNOUSERSITE give a Python check the effect of ``-B`` and ``-s``.
    """
    argv = _check_argv(argv)
    _check_timeout(timeout)
    extra = library_path_env(ld_library_path)
    extra.update({"PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1"})
    result, duration = _run_isolated(runner, argv, extra, timeout)
    output = _tail(result.stdout + result.stderr)
    error = None
    if not result.ok:
        error = _failure(argv[0], result, timeout, what="check command")
    return CheckResult(
        argv=tuple(argv),
        ok=result.ok,
        returncode=None if result.timed_out else result.rc,
        timed_out=result.timed_out,
        signal=_signal_name(result),
        output=output,
        error=error,
        duration=duration,
    )


def _run_isolated(runner: Runner, argv, extra, timeout):
    """Run argv in a fresh empty folder (removed afterwards) with a clean environment."""
    workdir = tempfile.mkdtemp(prefix="cuda_venv_probe_")
    started = time.monotonic()
    try:
        result = runner.run(argv, cwd=workdir, env=clean_env(extra), timeout=timeout)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return result, time.monotonic() - started


def _failure(program: str, result, timeout: float, during: str = "", what: str = "venv interpreter") -> str:
    """One sentence saying how a process failed, with the last line it wrote to stderr."""
    head = "%s %s" % (what, program)
    during = " while %s" % during if during else ""
    if result.timed_out:
        return "%s did not finish within %g s%s; its process group was killed" % (head, timeout, during)
    name = _signal_name(result)
    if name:
        message = "%s was killed by %s%s" % (head, name, during)
    elif result.rc != 0:
        message = "%s exited with code %d%s" % (head, result.rc, during)
    else:
        message = "%s printed no %s line%s" % (head, MARKER.strip(), during)
    last = _last_line(result.stderr)
    return "%s: %s" % (message, last) if last else message


def _signal_name(result) -> Optional[str]:
    if result.timed_out or result.rc >= 0:
        return None
    try:
        return signal.Signals(-result.rc).name
    except ValueError:
        return "signal %d" % -result.rc


def _interpreter_problem(python: str) -> Optional[str]:
    """Why ``python`` cannot be started, or None."""
    if not os.path.exists(python):
        if os.path.islink(python):
            return "venv interpreter %s is missing (broken symlink to %s)" % (python, os.readlink(python))
        return "venv interpreter %s is missing" % python
    if os.path.isdir(python) or not os.access(python, os.X_OK):
        return "venv interpreter %s is not executable" % python
    return None


def _no_info(python: str, error: str) -> InterpreterInfo:
    return InterpreterInfo(False, python, None, None, None, None, (), {}, error)


def _interpreter_path(python) -> str:
    # Absolute, not resolved: a venv's bin/python symlink is what makes it that venv.
    if not isinstance(python, str) or not python:
        raise ProbeError("interpreter path %r is not a path: pass the venv's bin/python" % (python,))
    return os.path.abspath(python)


def _check_anchor(anchor) -> None:
    if not isinstance(anchor, str) or not all(part.isidentifier() for part in anchor.split(".")):
        raise ProbeError("anchor %r is not an importable module name: pass one such as 'torch'" % (anchor,))


def _check_timeout(timeout) -> None:
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ProbeError("timeout %r is not a positive number of seconds" % (timeout,))


def _check_argv(argv) -> list:
    if isinstance(argv, (str, bytes)) or not argv or not all(isinstance(arg, str) for arg in argv):
        raise ProbeError("check command %r is not an argv list of strings: pass e.g. ['/venv/bin/python', 'check.py']" % (argv,))
    return list(argv)


def library_path_problems(folders) -> list:
    """A message for each LD_LIBRARY_PATH entry that is not an absolute folder path (modules validate with it)."""
    return ["ld_library_path entry %r is not an absolute folder path" % (folder,) for folder in folders
            if not isinstance(folder, str) or ":" in folder or "\x00" in folder or not os.path.isabs(folder)]


def library_path_env(ld_library_path) -> dict:
    """LD_LIBRARY_PATH for a process in the venv (the probe, a check command, the benchmark): the workload's folders
    only, absolute; a string is split as ld.so splits it."""
    folders = list(split_ld_library_path(ld_library_path)) if isinstance(ld_library_path, str) else list(ld_library_path or ())
    folders = [folder for folder in folders if folder]
    problems = library_path_problems(folders)
    if problems:
        raise ProbeError(problems[0])
    return {"LD_LIBRARY_PATH": ":".join(folders)} if folders else {}


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _tail(text: str) -> str:
    return text[-TAIL_CHARS:]
