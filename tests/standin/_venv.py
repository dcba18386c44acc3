# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Real venvs and real pip commands, offline and isolated from the machine's pip configuration.

Test support for gpuops.cuda_venv: not part of the collection's API.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Optional, Sequence, Tuple

from ._layout import StandinError

# Variables that would change what a venv's python or pip does.
_DROP = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "VIRTUAL_ENV", "LD_LIBRARY_PATH", "LD_PRELOAD")


@dataclass(frozen=True)
class Completed:
    """One command and what it did."""

    argv: Tuple[str, ...]
    rc: int
    stdout: str
    stderr: str


def clean_env(extra: Optional[Mapping[str, str]] = None) -> dict:
    """This process's environment without what redirects python, pip or the loader; C.UTF-8 locale."""
    env = {k: v for k, v in os.environ.items() if k not in _DROP and not k.startswith(("PIP_", "UV_"))}
    env.update({"LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"})
    env.update(extra or {})
    return env


def run(argv: Sequence, check: bool = True, cwd=None, env: Optional[Mapping[str, str]] = None,
        timeout: float = 300) -> Completed:
    """Run ``argv`` (no shell); with ``check``, a non-zero exit raises StandinError with its output."""
    argv = tuple(str(a) for a in argv)
    try:
        proc = subprocess.run(argv, cwd=cwd, env=clean_env(env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise StandinError("command timed out after %s s: %s" % (timeout, " ".join(argv))) from exc
    except OSError as exc:
        raise StandinError("cannot run %s: %s" % (argv[0], exc)) from exc
    done = Completed(argv, proc.returncode, proc.stdout, proc.stderr)
    if check and done.rc != 0:
        raise StandinError("command failed (rc %d): %s\n%s%s" % (done.rc, " ".join(argv), done.stdout, done.stderr))
    return done


def venv_python(venv) -> Path:
    """The venv's own interpreter, bin/python."""
    return Path(venv) / "bin" / "python"


def make_venv(path, python: str = sys.executable) -> Path:
    """``PYTHON -m venv PATH``: a real venv with the pip that interpreter bundles."""
    create_venv(Path(path), python)
    return Path(path)


def create_venv(path: Path, python: str = sys.executable) -> Completed:
    """make_venv, returning the command it ran (for a scenario's record)."""
    return run([python, "-m", "venv", path])


def pip(venv, *args, check: bool = True) -> Completed:
    """``<venv>/bin/python -m pip --isolated ARGS``: the machine's pip config and env cannot interfere."""
    return run([venv_python(venv), "-m", "pip", "--isolated", "--disable-pip-version-check", *args], check=check)


def pip_install(venv, requirements: Iterable[str], wheelhouses: Iterable, *flags: str, check: bool = True) -> Completed:
    """``pip install --no-index --find-links WH ... FLAGS REQUIREMENTS`` into ``venv``."""
    links = []
    for wheelhouse in wheelhouses:
        links += ["--find-links", str(wheelhouse)]
    return pip(venv, "install", "--no-index", *links, *flags, *requirements, check=check)


def pip_uninstall(venv, names: Iterable[str], check: bool = True) -> Completed:
    """``pip uninstall --yes NAMES``."""
    return pip(venv, "uninstall", "--yes", *names, check=check)


def uv_executable() -> str:
    """The uv this test run uses: on PATH, else beside this Python (the tools venv installs it)."""
    beside = os.path.join(os.path.dirname(sys.executable), "uv")
    found = shutil.which("uv") or (beside if os.access(beside, os.X_OK) else None)
    if found is None:
        raise StandinError("no uv executable on PATH or beside %s: install uv (make setup does)" % sys.executable)
    return found


# uv reads no uv.toml/pyproject of the machine or the working directory, and no UV_* variable of the caller.
_UV_ENV = {"UV_NO_CONFIG": "1", "UV_PYTHON_DOWNLOADS": "never", "UV_NO_PROGRESS": "1"}


def uv(*args, check: bool = True) -> Completed:
    """``uv ARGS``, isolated from the machine's uv configuration."""
    return run([uv_executable(), *args], check=check, env=_UV_ENV)


def create_uv_venv(path: Path, python: str = sys.executable) -> Completed:
    """``uv venv --python PYTHON PATH``: a venv with no pip in it, as the incident's tool makes them."""
    return uv("venv", "--quiet", "--python", python, path)


def uv_install(venv, requirements: Iterable[str], wheelhouses: Iterable, *flags: str, check: bool = True) -> Completed:
    """``uv pip install --python VENV/bin/python --no-index --find-links WH ... FLAGS REQUIREMENTS``."""
    links = []
    for wheelhouse in wheelhouses:
        links += ["--find-links", str(wheelhouse)]
    return uv("pip", "install", "--python", venv_python(venv), "--no-index", *links, *flags, *requirements, check=check)


def uv_uninstall(venv, names: Iterable[str], check: bool = True) -> Completed:
    """``uv pip uninstall --python VENV/bin/python NAMES``."""
    return uv("pip", "uninstall", "--python", venv_python(venv), *names, check=check)


def site_packages(venv) -> Path:
    """The venv's site-packages (lib/pythonX.Y/site-packages)."""
    found = sorted(Path(venv).glob("lib/python*/site-packages"))
    if len(found) != 1:
        raise StandinError("%s: expected one lib/python*/site-packages, found %d" % (venv, len(found)))
    return found[0]
