# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ask the installer which wheels a request brings, and fetch wheel files from an index, before installing.

Private to the gpuops.cuda_venv collection: not a public API.

- Resolution: pip's ``install --dry-run --report -`` (pip >= 22.2; the report lists what pip would install, with
  what is already satisfied left out), uv's ``pip install --dry-run`` (its `` + name==version`` lines); the whole
  closure, satisfied wheels included: pip's with ``--ignore-installed``, uv's ``pip compile``.
- Download: ``pip download --no-deps --only-binary=:all:`` with the same wheel sources as the installs, pip's
  configuration and environment in force (``installer_env``). uv has no download command: with the uv backend,
  the venv's pip is used when it has one, else the pip of the Python running this module, told the venv's Python
  version, implementation and ABI; uv's own configuration (uv.toml, ``UV_INDEX``...) is then not read.
- Check mode passes ``--no-cache-dir`` (pip) and ``--no-cache`` (uv): nothing is written but the download folder.
Every command, its output and every message are redacted (credentials in index URLs never show).
"""

from __future__ import annotations

import json
import re
import sys
from typing import List, Sequence, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import canonical_name
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.redact import redact, redact_result
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import CommandResult
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.installers import (
    Backend, PipBackend, installer_env, requirement_name, source_args)

_UV_PLANNED = re.compile(r"^\s*\+\s+([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)\s*$")
_PINNED = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)\s*$")  # uv pip compile's output lines
_PIP_OPTIONS = ["--no-input", "--disable-pip-version-check"]


class FetchError(CudaVenvError):
    """The installer could not resolve or fetch what the plan installs (message redacted, names the request)."""


def resolve(backend: Backend, requirements: Sequence[str], check_mode: bool, secrets: Sequence[str]) -> List[Tuple[str, str]]:
    """(canonical name, version) of every wheel the installer would install for ``requirements`` with their
    dependencies, into the venv as it is (what is already satisfied is left out)."""
    if backend.name == "uv":
        argv = [backend.uv, "pip", "install", "--dry-run", "--python", backend.python]
        argv += (["--no-cache"] if check_mode else []) + source_args(backend.sources, uv=True)
        result = _run(backend, argv + ["--"] + list(requirements), secrets)
        planned = [_UV_PLANNED.match(line) for line in (result.stderr + "\n" + result.stdout).splitlines()]
        return [(canonical_name(m.group(1)), m.group(2)) for m in planned if m]
    argv = [backend.python, "-I", "-m", "pip", "install", "--dry-run", "--quiet", "--report", "-"] + _PIP_OPTIONS
    argv += (["--no-cache-dir"] if check_mode else []) + source_args(backend.sources)
    return _report(_run(backend, argv + ["--"] + list(requirements), secrets), requirements, secrets)


def _report(result: CommandResult, requirements: Sequence[str], secrets: Sequence[str]) -> List[Tuple[str, str]]:
    """(canonical name, version) of what pip's installation report (``--report -``) installs."""
    try:
        report = json.loads(result.stdout)
        return [(canonical_name(item["metadata"]["name"]), item["metadata"]["version"]) for item in report["install"]]
    except (ValueError, KeyError, TypeError):
        raise FetchError("pip's --report for %s is not the JSON expected (pip >= 22.2 is needed): %s" % (
            ", ".join(requirements), redact(result.stdout[:200], secrets))) from None


def resolve_closure(backend: Backend, requirements: Sequence[str], check_mode: bool,
                    secrets: Sequence[str]) -> List[Tuple[str, str]]:
    """(canonical name, version) of every wheel ``requirements`` need, what the venv already has included: pip's
    ``install --dry-run --ignore-installed --report -``, uv's ``pip compile`` for the venv's interpreter
    (requirements on standard input)."""
    if backend.name == "uv":
        argv = [backend.uv, "pip", "compile", "--python", backend.python, "--quiet", "--no-header", "--no-annotate"]
        argv += (["--no-cache"] if check_mode else []) + source_args(backend.sources, uv=True)
        result = _run(backend, argv + ["-"], secrets, data="".join(r + "\n" for r in requirements))
        pinned = [_PINNED.match(line) for line in result.stdout.splitlines()]
        return [(canonical_name(m.group(1)), m.group(2)) for m in pinned if m]
    argv = [backend.python, "-I", "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet", "--report",
            "-"] + _PIP_OPTIONS + (["--no-cache-dir"] if check_mode else []) + source_args(backend.sources)
    return _report(_run(backend, argv + ["--"] + list(requirements), secrets), requirements, secrets)


def download(backend: Backend, requirements: Sequence[str], dest: str, interpreter, check_mode: bool,
             secrets: Sequence[str]) -> List[str]:
    """Fetch the wheel of each requirement (no dependencies, wheels only) into ``dest`` with pip; returns the
    requirements the wheel sources do not offer (pip's ``No matching distribution found``), fetched without them."""
    pip = _pip_for(backend, secrets)
    argv = pip + ["download"] + _PIP_OPTIONS + ["--no-deps", "--only-binary=:all:", "--dest", dest]
    if pip[0] != backend.python:
        argv += _target_args(interpreter)
    argv += (["--no-cache-dir"] if check_mode else []) + source_args(backend.sources)
    todo, missing = list(requirements), []
    while todo:
        result = _run(backend, argv + ["--"] + todo, secrets, check=False)
        absent = set(PipBackend(backend.python, backend.runner, backend.sources).not_found(result))
        gone = [r for r in todo if requirement_name(r) in absent]
        if result.ok or not gone:
            _check(result)
            break
        missing += gone
        todo = [r for r in todo if r not in gone]
    return missing


def _pip_for(backend: Backend, secrets: Sequence[str]) -> list:
    """``python -I -m pip`` of the venv when it has pip (always with the pip backend), else of this module's Python."""
    candidates = [backend.python] if backend.name == "pip" else [backend.python, sys.executable]
    for python in candidates:
        argv = [python, "-I", "-m", "pip"]
        if python == backend.python and backend.name == "pip":
            return argv
        if backend.runner.run(argv + ["--version"], env=installer_env(backend.environ), timeout=60).ok:
            return argv
    raise FetchError(redact("cannot fetch wheels from the index to read the paths they write: neither the venv's "
                            "Python (%s) nor this module's (%s) has pip; install pip into either, or give the wheels as "
                            "find_links with no_index" % (backend.python, sys.executable), secrets))


def _target_args(interpreter) -> list:
    """pip download for another interpreter: the venv's version, implementation and ABIs."""
    env = interpreter.marker_env or {}
    version = env.get("python_version") or ""
    short = {"cpython": "cp", "pypy": "pp"}.get(env.get("implementation_name", "cpython"), "cp")
    args = ["--python-version", version, "--implementation", short]
    for abi in (short + version.replace(".", ""), "abi3", "none"):
        args += ["--abi", abi]
    return args


def _run(backend: Backend, argv: list, secrets: Sequence[str], check: bool = True, data=None) -> CommandResult:
    # the venv lock goes with it (pass_fds): an orphaned download keeps the venv locked, as an orphaned install does
    result = redact_result(backend.runner.run(argv, env=installer_env(backend.environ), timeout=backend.timeout,
                                              data=data, pass_fds=backend.pass_fds), secrets)
    return _check(result) if check else result


def _check(result: CommandResult) -> CommandResult:
    if not result.ok:
        detail = (result.stderr or result.stdout).strip().splitlines()
        reason = "timed out" if result.timed_out else (" | ".join(detail[-3:]) if detail else "exit code %d" % result.rc)
        raise FetchError("%s failed before anything was installed: %s" % (" ".join(result.argv[:5]), reason))
    return result
