# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for probe: real venvs, real packages, real gcc-built shared objects, real crashes."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
from dataclasses import dataclass, field

import pytest
from packaging.markers import default_environment

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import is_shared_object
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read import probe

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import SubprocessRunner, clean_env

NOT_FOUND = "cannot open shared object file: No such file or directory"

OK_PACKAGE = '''
import ctypes
import glob
import os
import sys

from okpkg import sub

__version__ = "1.2.3"
HERE = os.path.dirname(os.path.abspath(__file__))
ANSWER = ctypes.CDLL(os.path.join(HERE, "lib", "libprobeok.so.1")).probeok_answer()
print("noise from okpkg without a newline", end="")
sys.stdout.flush()
# Like torch's _preload_cuda_deps: <each sys.path entry>/nvidia/*/lib is searched.
for entry in sys.path:
    for lib in sorted(glob.glob(os.path.join(entry or ".", "nvidia", "*", "lib", "*.so*"))):
        ctypes.CDLL(lib)
'''

NATIVE_C = r'''
#include <Python.h>
int probeextra_answer(void);
static struct PyModuleDef native = {PyModuleDef_HEAD_INIT, "_native", NULL, -1, NULL};
PyMODINIT_FUNC PyInit__native(void) {
    PyObject *module = PyModule_Create(&native);
    if (module != NULL)
        PyModule_AddIntConstant(module, "ANSWER", probeextra_answer());
    return module;
}
'''

PACKAGES = {
    "okpkg/__init__.py": OK_PACKAGE,
    "okpkg/sub.py": "VALUE = 1\n",
    "failpkg/__init__.py": 'raise ImportError("libfoo.so.1: %s")\n' % NOT_FOUND,
    "nativepkg/__init__.py": "from nativepkg._native import ANSWER\n__version__ = '0.1'\n",
    "segvpkg/__init__.py": textwrap.dedent('''
        import os
        import resource
        import signal
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.kill(os.getpid(), signal.SIGSEGV)
    '''),
    "noversionpkg/__init__.py": "",
}


@dataclass
class RecordingRunner(SubprocessRunner):
    """The real runner, also keeping each call's cwd (and what it held), env and timeout."""

    seen: list = field(default_factory=list)

    def run(self, argv, *, cwd=None, env=None, timeout=None, data=None):
        self.seen.append({"argv": tuple(argv), "cwd": cwd, "cwd_entries": sorted(os.listdir(cwd)), "env": dict(env), "timeout": timeout})
        return super().run(argv, cwd=cwd, env=env, timeout=timeout, data=data)


def _gcc(output, source, *args):
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(output), str(source)] + list(args), check=True)


@pytest.fixture(scope="session")
def venv(tmp_path_factory):
    """A real venv with the test packages in its site-packages and one library outside it."""
    root = tmp_path_factory.mktemp("probe")
    path = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = str(path / "bin" / "python")
    site = subprocess.run(
        [python, "-I", "-B", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    for name, text in PACKAGES.items():
        target = os.path.join(site, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w") as handle:
            handle.write(text)
    src = root / "src"
    src.mkdir()
    (src / "ok.c").write_text("int probeok_answer(void) { return 42; }\n")
    (src / "extra.c").write_text("int probeextra_answer(void) { return 7; }\n")
    (src / "native.c").write_text(NATIVE_C)
    os.makedirs(os.path.join(site, "okpkg", "lib"))
    ok_lib = os.path.join(site, "okpkg", "lib", "libprobeok.so.1")
    _gcc(ok_lib, src / "ok.c", "-Wl,-soname,libprobeok.so.1")
    libdir = root / "workload-lib"
    libdir.mkdir()
    _gcc(libdir / "libprobeextra.so.1", src / "extra.c", "-Wl,-soname,libprobeextra.so.1")
    native = os.path.join(site, "nativepkg", "_native" + sysconfig.get_config_var("EXT_SUFFIX"))
    _gcc(native, src / "native.c", "-I", sysconfig.get_paths()["include"], "-L", str(libdir), "-l:libprobeextra.so.1")
    return {"path": str(path), "python": python, "site": site, "ok_lib": ok_lib, "native": native, "libdir": str(libdir)}


def _pycache(root):
    return [dirpath for dirpath, dirnames, _files in os.walk(root) if "__pycache__" in dirnames]


def test_scripts_stay_python36_compatible():
    for script in (probe.INTERPRETER_SCRIPT, probe.IMPORT_SCRIPT):
        ast.parse(script, feature_version=(3, 6))


@pytest.mark.parametrize("name", ["libcudnn.so.9", "libx.so.9.1.2", "x.so", "x.cpython-312-x86_64-linux-gnu.so", "x.abi3.so",
                                  "ld-linux-x86-64.so.2", "x.so.txt", "x.sox", "libx.so.9.", "locale-archive", ".so"])
def test_the_import_script_keeps_only_what_names_calls_a_shared_object(name):
    """The script runs in the venv's interpreter with the rule's text written in: it agrees with is_shared_object."""
    [line] = [text for text in probe.IMPORT_SCRIPT.splitlines() if text.startswith("SHARED_OBJECT = ")]
    pattern = re.compile(ast.literal_eval(ast.parse(line).body[0].value.args[0]))  # SHARED_OBJECT = re.compile('...')
    assert bool(pattern.match(name)) is is_shared_object(name)


def test_query_interpreter_reports_the_venv(venv, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    runner = RecordingRunner()
    info = probe.query_interpreter(venv["python"], runner)
    assert info.ok is True and info.error is None
    assert info.executable == venv["python"]
    assert info.version == "%d.%d.%d" % sys.version_info[:3]
    assert info.implementation == sys.implementation.name
    assert info.purelib == info.platlib == venv["site"]
    assert info.sys_path[-1] == venv["site"]
    assert "" not in info.sys_path and os.getcwd() not in info.sys_path
    # The venv's interpreter is the one running these tests: its markers must equal packaging's.
    assert info.marker_env == default_environment()
    [call] = runner.seen
    assert call["argv"] == (venv["python"], "-I", "-B", "-c", probe.INTERPRETER_SCRIPT)
    assert call["env"] == clean_env()
    assert call["timeout"] == 30.0
    assert call["cwd_entries"] == [] and os.path.dirname(call["cwd"]) == str(tmp_path)
    assert os.listdir(str(tmp_path)) == []


def test_probe_import_ok_reads_loaded_objects_and_version(venv, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    runner = RecordingRunner()
    result = probe.probe_import(venv["python"], "okpkg", runner)
    assert (result.ran, result.ok, result.error, result.traceback) == (True, True, None, None)
    assert (result.returncode, result.timed_out, result.signal) == (0, False, None)
    assert result.versions == {"okpkg": "1.2.3"}
    assert result.version_errors == {}
    assert result.check is None
    assert os.path.realpath(venv["ok_lib"]) in result.loaded
    assert len(set(result.loaded)) == len(result.loaded)
    assert all(os.path.isabs(path) and path == os.path.realpath(path) for path in result.loaded)
    assert result.duration > 0
    [call] = runner.seen
    assert call["argv"] == (venv["python"], "-I", "-B", "-c", probe.IMPORT_SCRIPT, "okpkg")
    assert call["env"] == clean_env()
    assert call["timeout"] == 120.0
    assert call["cwd_entries"] == []
    assert os.listdir(str(tmp_path)) == []


def test_probe_import_with_a_pycache_writes_bytecode_there_and_never_beside_the_sources(venv, tmp_path):
    def pycache_dirs():
        return [d for d, _subdirs, _files in os.walk(os.path.dirname(venv["python"]) + "/..") if d.endswith("__pycache__")]
    before = pycache_dirs()
    cache = str(tmp_path / "pycache")
    runner = RecordingRunner()
    result = probe.probe_import(venv["python"], "okpkg", runner, pycache=cache)
    assert result.ok
    [call] = runner.seen
    assert call["argv"] == (venv["python"], "-I", "-X", "pycache_prefix=" + cache, "-c", probe.IMPORT_SCRIPT, "okpkg")
    assert any(name.startswith("__init__.") and name.endswith(".pyc")
               for _d, _s, names in os.walk(cache) for name in names)
    assert pycache_dirs() == before


def test_probe_import_error_is_the_exact_exception_line(venv):
    result = probe.probe_import(venv["python"], "failpkg", SubprocessRunner())
    assert (result.ran, result.ok, result.returncode, result.signal) == (True, False, 1, None)
    assert result.error == "ImportError: libfoo.so.1: %s" % NOT_FOUND
    assert result.traceback.startswith("Traceback (most recent call last):\n")
    assert result.traceback.endswith("ImportError: libfoo.so.1: %s\n" % NOT_FOUND)
    assert result.versions == {}


def test_probe_import_real_loader_failure_and_workload_library_path(venv):
    runner = RecordingRunner()
    missing = probe.probe_import(venv["python"], "nativepkg", runner)
    assert missing.ok is False
    assert missing.error == "ImportError: libprobeextra.so.1: %s" % NOT_FOUND
    found = probe.probe_import(venv["python"], "nativepkg", runner, ld_library_path=[venv["libdir"]])
    assert (found.ok, found.error, found.versions) == (True, None, {"nativepkg": "0.1"})
    assert os.path.join(venv["libdir"], "libprobeextra.so.1") in found.loaded
    assert os.path.realpath(venv["native"]) in found.loaded
    assert runner.seen[0]["env"] == clean_env()
    assert runner.seen[1]["env"] == clean_env({"LD_LIBRARY_PATH": venv["libdir"]})


def test_loader_only_loads_the_extension_modules_without_running_the_package(venv):
    runner = RecordingRunner()
    missing = probe.probe_import(venv["python"], "nativepkg", runner, loader_only=True)
    assert (missing.ok, missing.loader_only) == (False, True)
    assert missing.error == "ImportError: libprobeextra.so.1: %s" % NOT_FOUND
    found = probe.probe_import(venv["python"], "nativepkg", runner, ld_library_path=[venv["libdir"]], loader_only=True)
    # nativepkg/__init__.py never ran: no __version__ was read
    assert (found.ok, found.error, found.versions, found.loader_only) == (True, None, {}, True)
    assert os.path.realpath(venv["native"]) in found.loaded
    assert os.path.join(venv["libdir"], "libprobeextra.so.1") in found.loaded
    assert runner.seen[0]["argv"] == (venv["python"], "-I", "-B", "-c", probe.IMPORT_SCRIPT, "nativepkg", "loader")


def test_loader_only_imports_a_package_without_extension_modules(venv):
    result = probe.probe_import(venv["python"], "okpkg", SubprocessRunner(), loader_only=True)
    assert (result.ok, result.loader_only, result.versions) == (True, False, {"okpkg": "1.2.3"})


def test_probe_import_reports_the_killing_signal(venv):
    result = probe.probe_import(venv["python"], "segvpkg", SubprocessRunner())
    assert (result.ran, result.ok, result.timed_out) == (True, False, False)
    assert result.signal == "SIGSEGV"
    assert result.returncode == -signal.SIGSEGV
    assert result.error == "venv interpreter %s was killed by SIGSEGV while importing segvpkg" % venv["python"]
    assert result.loaded == ()


def test_probe_import_timeout_kills_the_process_group(venv, tmp_path):
    pidfile = tmp_path / "child.pid"
    package = os.path.join(venv["site"], "sleeppkg.py")
    with open(package, "w") as handle:
        handle.write(textwrap.dedent('''
            import subprocess
            import time
            child = subprocess.Popen(["sleep", "300"])
            with open(%r, "w") as handle:
                handle.write(str(child.pid))
            time.sleep(300)
        ''' % str(pidfile)))
    try:
        result = probe.probe_import(venv["python"], "sleeppkg", SubprocessRunner(), timeout=2.0)
    finally:
        os.unlink(package)
    assert (result.ran, result.ok, result.timed_out, result.returncode, result.signal) == (True, False, True, None, None)
    assert result.error == "venv interpreter %s did not finish within 2 s while importing sleeppkg; its process group was killed" % venv["python"]
    # communicate() returned, so every holder of the output pipes, the grandchild too, is gone.
    stat = "/proc/%s/stat" % pidfile.read_text()
    assert not os.path.exists(stat) or open(stat).read().split(") ")[1].startswith("Z")


def _decoy_libraries(folder, name, ok_lib):
    (folder / "nvidia" / "decoy" / "lib").mkdir(parents=True)
    shutil.copy(ok_lib, str(folder / "nvidia" / "decoy" / "lib" / name))


def test_probe_cannot_be_hijacked_by_the_callers_cwd_or_environment(venv, tmp_path, monkeypatch):
    cwd, path, empty = tmp_path / "cwd", tmp_path / "pythonpath", tmp_path / "empty"
    empty.mkdir()
    _decoy_libraries(cwd, "libdecoycwd.so.1", venv["ok_lib"])
    _decoy_libraries(path, "libdecoypath.so.1", venv["ok_lib"])
    (cwd / "okpkg.py").write_text("__version__ = 'decoy'\n")
    (path / "sitecustomize.py").write_text("open(%r, 'w').close()\n" % str(tmp_path / "sitecustomize-ran"))
    (path / "startup.py").write_text("open(%r, 'w').close()\n" % str(tmp_path / "startup-ran"))
    # Controls: without isolation the decoys win, so the assertions below test something.
    report = "import okpkg, sys; sys.stdout.write('\\n%s %s' % (okpkg.__version__, open('/proc/self/maps').read().count('libdecoy')))"
    plain = subprocess.run([venv["python"], "-B", "-c", report], capture_output=True, text=True, check=True, cwd=str(cwd), env=clean_env())
    assert plain.stdout.splitlines()[-1] == "decoy 0"
    plain = subprocess.run(
        [venv["python"], "-B", "-c", report], capture_output=True, text=True, check=True, cwd=str(empty), env=clean_env({"PYTHONPATH": str(path)})
    )
    assert plain.stdout.splitlines()[-1] != "1.2.3 0" and plain.stdout.splitlines()[-1].startswith("1.2.3 ")
    os.unlink(str(tmp_path / "sitecustomize-ran"))
    monkeypatch.chdir(str(cwd))
    for name, value in {
        "PYTHONPATH": str(path),
        "PYTHONHOME": str(tmp_path / "no-such-home"),
        "PYTHONSTARTUP": str(path / "startup.py"),
        "PYTHONINSPECT": "1",
        "PYTHONUSERBASE": str(path),
        "LD_PRELOAD": str(path / "nvidia" / "decoy" / "lib" / "libdecoypath.so.1"),
        "LD_LIBRARY_PATH": str(path / "nvidia" / "decoy" / "lib"),
    }.items():
        monkeypatch.setenv(name, value)
    result = probe.probe_import(venv["python"], "okpkg", SubprocessRunner())
    assert (result.ok, result.error, result.versions) == (True, None, {"okpkg": "1.2.3"})
    assert os.path.realpath(venv["ok_lib"]) in result.loaded
    assert [loaded for loaded in result.loaded if loaded.startswith(str(tmp_path))] == []
    info = probe.query_interpreter(venv["python"], SubprocessRunner())
    assert info.ok is True and info.sys_path == (info.sys_path[:-1] + (venv["site"],))
    assert str(path) not in info.sys_path and str(cwd) not in info.sys_path
    assert sorted(os.listdir(str(tmp_path))) == ["cwd", "empty", "pythonpath"]


def test_probes_write_no_bytecode_into_the_venv(venv):
    runner = SubprocessRunner()
    assert probe.query_interpreter(venv["python"], runner).ok
    assert probe.probe_import(venv["python"], "okpkg", runner).ok
    assert probe.probe_import(venv["python"], "failpkg", runner).ok is False
    assert _pycache(venv["path"]) == []


def test_version_is_recorded_only_when_the_module_has_one(venv):
    result = probe.probe_import(venv["python"], "noversionpkg", SubprocessRunner())
    assert (result.ok, result.versions, result.version_errors) == (True, {}, {})


def test_torch_versions_are_read_each_on_its_own(venv):
    # A stand-in torch with the attributes the probe reads; nccl raises like a broken library.
    torch = os.path.join(venv["site"], "torch")
    files = {
        "__init__.py": "__version__ = '2.9.1+cu128'\nfrom torch import version, backends, cuda\n",
        "version.py": "cuda = '12.8'\n",
        "backends/__init__.py": "from torch.backends import cudnn\n",
        "backends/cudnn.py": "def version():\n    return 91002\n",
        "cuda/__init__.py": "def is_available():\n    return False\n",
        "cuda/nccl.py": "def version():\n    raise RuntimeError('libnccl.so.2: file too short')\n",
    }
    for name, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(torch, name)), exist_ok=True)
        with open(os.path.join(torch, name), "w") as handle:
            handle.write(text)
    try:
        result = probe.probe_import(venv["python"], "torch", SubprocessRunner())
        with open(os.path.join(torch, "cuda", "nccl.py"), "w") as handle:
            handle.write("def version():\n    return (2, 27, 5)\n")
        healthy = probe.probe_import(venv["python"], "torch", SubprocessRunner())
    finally:
        shutil.rmtree(torch)
    assert result.ok is True
    # nccl_build is what torch reports (its build-time NCCL); nccl is the loaded libnccl's: none is mapped here.
    assert result.versions == {"torch": "2.9.1+cu128", "cuda": "12.8", "cudnn": 91002, "nccl_build": None,
                               "cuda_available": False, "nccl": None}
    assert result.version_errors == {"nccl_build": "RuntimeError: libnccl.so.2: file too short"}
    assert healthy.versions["nccl_build"] == "2.27.5" and healthy.version_errors == {}


def test_probe_import_runs_the_users_check_after_a_good_import(venv, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    runner = RecordingRunner()
    check = [venv["python"], "-c", "import os, okpkg; print(okpkg.ANSWER, os.getcwd() != %r)" % os.getcwd()]
    result = probe.probe_import(venv["python"], "okpkg", runner, command=check, ld_library_path=venv["libdir"])
    assert result.ok is True
    assert (result.check.argv, result.check.ok, result.check.returncode) == (tuple(check), True, 0)
    assert result.check.output == "noise from okpkg without a newline42 True\n"
    assert result.check.error is None
    assert runner.seen[1]["argv"] == tuple(check)
    assert runner.seen[1]["env"] == clean_env(
        {"LD_LIBRARY_PATH": venv["libdir"], "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1"}
    )
    assert runner.seen[1]["cwd_entries"] == []
    assert os.listdir(str(tmp_path)) == []
    assert _pycache(venv["path"]) == []
    failed = probe.probe_import(venv["python"], "failpkg", runner, command=check)
    assert failed.check is None and len(runner.seen) == 3


def test_run_check_failure_keeps_the_output_tail():
    result = probe.run_check(["sh", "-c", "echo out; echo 'bad thing' >&2; exit 3"], SubprocessRunner())
    assert (result.ok, result.returncode, result.timed_out, result.signal) == (False, 3, False, None)
    assert result.output == "out\nbad thing\n"
    assert result.error == "check command sh exited with code 3: bad thing"


def test_missing_interpreter(tmp_path):
    python = str(tmp_path / "bin" / "python")
    info = probe.query_interpreter(python, SubprocessRunner())
    assert info == probe.InterpreterInfo(False, python, None, None, None, None, (), {}, "venv interpreter %s is missing" % python)
    result = probe.probe_import(python, "torch", SubprocessRunner())
    assert (result.ran, result.ok, result.error) == (False, False, "venv interpreter %s is missing" % python)


def test_interpreter_whose_base_python_is_gone(tmp_path):
    (tmp_path / "bin").mkdir()
    python = tmp_path / "bin" / "python"
    python.symlink_to(tmp_path / "base" / "python3.9")
    info = probe.query_interpreter(str(python), SubprocessRunner())
    assert info.error == "venv interpreter %s is missing (broken symlink to %s)" % (python, tmp_path / "base" / "python3.9")


def test_interpreter_that_is_not_executable(tmp_path):
    python = tmp_path / "python"
    python.write_text("")
    info = probe.query_interpreter(str(python), SubprocessRunner())
    assert (info.ok, info.error) == (False, "venv interpreter %s is not executable" % python)


def test_interpreter_that_exits_with_an_error(tmp_path):
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho 'first' >&2\necho 'error while loading shared libraries: libpython3.9.so.1.0' >&2\nexit 127\n")
    python.chmod(0o755)
    info = probe.query_interpreter(str(python), SubprocessRunner())
    assert info.ok is False
    assert info.error == "venv interpreter %s exited with code 127: error while loading shared libraries: libpython3.9.so.1.0" % python
    result = probe.probe_import(str(python), "torch", SubprocessRunner())
    assert (result.ran, result.returncode, result.signal) == (True, 127, None)
    assert result.error == (
        "venv interpreter %s exited with code 127 while importing torch: error while loading shared libraries: libpython3.9.so.1.0" % python
    )


def test_interpreter_that_prints_no_report(tmp_path):
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho %s\n" % json.dumps("CUDA_VENV_PROBE not json"))
    python.chmod(0o755)
    info = probe.query_interpreter(str(python), SubprocessRunner())
    assert info.error == "venv interpreter %s printed no CUDA_VENV_PROBE line" % python


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"anchor": "not a module"}, "anchor 'not a module' is not an importable module name: pass one such as 'torch'"),
        ({"timeout": 0}, "timeout 0 is not a positive number of seconds"),
        ({"ld_library_path": ["relative/lib"]}, "ld_library_path entry 'relative/lib' is not an absolute folder path"),
        ({"command": "python check.py"}, "check command 'python check.py' is not an argv list of strings"),
    ],
)
def test_bad_input_raises_probe_error(kwargs, message):
    arguments = dict({"python": sys.executable, "anchor": "torch", "runner": SubprocessRunner()}, **kwargs)
    with pytest.raises(probe.ProbeError) as error:
        probe.probe_import(**arguments)
    assert str(error.value).startswith(message)
