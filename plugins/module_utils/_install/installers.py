# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Installer backends (pip, uv) that install, force-reinstall and remove wheels by name.

Private to the gpuops.cuda_venv collection: not a public API.

Both backends build exact argv lists and hand them to a ``Runner``; every
``CommandResult`` they return is redacted (see ``redact``). Installs go by
name from the user's wheel sources, never by file path: a path install leaves
``direct_url.json`` and ``pip freeze`` then shows ``name @ file://...``.
With a lock (``lock`` option), the requirements pinned at their locked version
go in one requirements file with the lock's ``--hash`` lines, installed with
``--require-hashes`` (pip and uv alike: a wheel of other bytes is refused);
the others (a kept neighbour's reinstall) go by name, after.

What stays in force from the user:
- pip: pip.conf and ``PIP_*`` variables (proxies, certs, extra find-links).
  ``--isolated`` is not passed on purpose: it would drop the user's index
  settings too. Constraints are not: ``PIP_CONSTRAINT=/dev/null`` overrides the
  ``constraint`` of every pip.conf (the venv's guard included, see
  _act/venv_guard.py), the other keys staying in force (docs/REPAIR.md, the install guard). The interpreter runs
  with ``-I`` so that the working directory and ``PYTHON*`` variables cannot
  shadow pip's own modules.
- uv: ignores pip.conf; ``UV_*`` variables and uv.toml (user, system, and
  ``pyproject.toml``/``uv.toml`` found from the working directory up) apply
  instead, including uv's index strategy (first index that has a name wins).
  Needs uv >= 0.4.23 (``--default-index``/``--index``). ``UV_CONSTRAINT`` (the
  guard's activate scripts export it) is dropped.

The environment of installer processes is the caller's (so proxies and certs
work) with a pinned locale, ``PIP_NO_INPUT=1`` and ``PIP_CONSTRAINT=/dev/null``, minus
``PYTHONPATH``, ``PYTHONHOME``, ``UV_CONSTRAINT`` and the variables that move
pip's target out of the venv.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from typing import Iterable, Mapping, Optional, Protocol, Sequence

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import DISTRIBUTION_NAME, canonical_name
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.redact import redact, redact_result
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import C_LOCALE, CommandResult, Runner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.wheel_sources import WheelSources, as_strings

BACKEND_KINDS = ("auto", "pip", "uv")

# Dropped from the caller's environment: the first two change what the
# interpreter imports; the next four install somewhere other than the venv;
# the last holds the repair's own installs to the venv's guard.
DROPPED_ENV = ("PYTHONPATH", "PYTHONHOME", "PIP_TARGET", "PIP_PREFIX", "PIP_ROOT", "PIP_USER", "UV_CONSTRAINT")

_NAME = re.compile(r"\s*(%s)" % DISTRIBUTION_NAME)
_ARCHIVE_SUFFIXES = (".whl", ".zip", ".tar.gz", ".tgz", ".tar.bz2")


class InstallerError(CudaVenvError):
    """A backend cannot be used or was given a bad request."""


def installer_env(environ: Optional[Mapping[str, str]] = None) -> dict:
    """The environment for installer processes, built from ``environ`` (default: ``os.environ``)."""
    base = os.environ if environ is None else environ
    env = {k: v for k, v in base.items() if k not in DROPPED_ENV}
    env.update(C_LOCALE)
    env["PIP_NO_INPUT"] = "1"
    env["PIP_CONSTRAINT"] = os.devnull  # the venv's guard (its pip.conf) does not hold the repair's own installs
    return env


def requirement_name(requirement: str) -> Optional[str]:
    """The canonical project name a requirement starts with, or None."""
    match = _NAME.match(requirement)
    return canonical_name(match.group(1)) if match else None


def _check_by_name(items: Sequence[str], what: str) -> tuple:
    items = as_strings(items)
    if not items:
        raise InstallerError("%s needs at least one name" % what)
    for item in items:
        head = item.split(";", 1)[0].strip()
        if not head or head in (".", "..") or any(c in head for c in "/\\@") or head.lower().endswith(_ARCHIVE_SUFFIXES):
            raise InstallerError(redact(
                "%s %r is not a requirement by name: pass NAME or NAME==VERSION; wheels come from the wheel sources "
                "(an install by path or URL leaves direct_url.json)" % (what, item)
            ))
    return items


def _names(requirements: Iterable[str]) -> tuple:
    return tuple(requirement_name(r) for r in requirements)


def _check_reinstall(requirements: tuple, reinstall: Iterable[str]) -> tuple:
    """``reinstall`` names, which must name the requirements one to one.

    pip's --force-reinstall covers every requirement of the command, so both
    backends accept a reinstall only for the whole list; a mixed list would
    make pip reinstall (or upgrade) what uv leaves alone.
    """
    reinstall = as_strings(reinstall)
    if not reinstall:
        return ()
    wanted = {canonical_name(n) for n in reinstall}
    named = {requirement_name(r) for r in requirements}
    unknown = sorted(wanted - named)
    unmarked = [r for r in requirements if requirement_name(r) not in wanted]
    if unknown or unmarked:
        raise InstallerError(
            "reinstall names must match the requirements one to one (not among the requirements: %s; "
            "requirements not marked for reinstall: %s): install those in a separate call"
            % (", ".join(unknown) or "none", ", ".join(unmarked) or "none")
        )
    return reinstall


class Backend(Protocol):
    """An installer backend (PipBackend, UvBackend, made by select_backend): what the repair and the wheel check use.

    Every ``CommandResult`` it returns is redacted; a failed install is returned, not raised.
    """

    name: str  # "pip" or "uv"
    python: str  # the venv's interpreter
    uv: Optional[str]  # the uv executable; None for pip
    runner: Runner
    sources: WheelSources
    timeout: Optional[float]
    environ: Optional[Mapping[str, str]]  # the caller's environment installers start from (None: os.environ)
    pass_fds: Sequence[int]  # descriptors installers inherit: the repair passes its venv lock
    lock: object  # the user's lock or None: its pins install in hash-checking mode

    def install(self, requirements: Sequence[str], *, reinstall: Iterable[str] = (), no_deps: bool = True) -> CommandResult:
        """Install requirements by name from the wheel sources; ``reinstall``: all of them, or none."""

    def uninstall(self, names: Sequence[str]) -> CommandResult:
        """Remove distributions by name."""

    def version(self) -> str:
        """The installer's version; raises ``InstallerError`` when it does not run."""

    def not_found(self, result: CommandResult) -> list:
        """Canonical names of the requirements a failed install says its wheel sources do not offer."""

    def describe_sources(self) -> str:
        """The wheel sources searched, as a person reads them."""


class _Backend:
    """What both backends share: validation, the runner, the environment and redaction."""

    name = ""
    uv: Optional[str] = None
    _NOT_FOUND: tuple = ()

    def __init__(self, python: str, runner: Runner, sources: Optional[WheelSources] = None,
                 timeout: Optional[float] = None, environ: Optional[Mapping[str, str]] = None):
        self.python = python
        self.runner = runner
        self.sources = sources or WheelSources()
        self.timeout = timeout
        self.environ = environ
        self.pass_fds: Sequence[int] = ()  # descriptors installers inherit: the repair passes its venv lock
        self.lock = None  # the user's lock (_read/packaging/lock_file.Lock): its pins install in hash-checking mode

    def uninstall(self, names: Sequence[str]) -> CommandResult:
        """Remove distributions by name; the redacted ``CommandResult``."""
        return self._run(self._uninstall_argv(_check_by_name(names, "uninstall")))

    def install(self, requirements: Sequence[str], *, reinstall: Iterable[str] = (), no_deps: bool = True) -> CommandResult:
        """Install requirements by name from the wheel sources; the redacted ``CommandResult``.

        ``reinstall`` names the requirements to force-reinstall (all of them, or
        none). A failure is returned, not raised: its stderr is the installer's.
        """
        requirements = _check_by_name(requirements, "install")
        reinstall = _check_reinstall(requirements, reinstall)
        hashed = self._hashed(requirements)
        if not hashed:
            return self._run(self._install_argv(requirements, reinstall, no_deps))
        with tempfile.TemporaryDirectory(prefix="cuda-venv-lock-") as folder:
            path = os.path.join(folder, "locked-requirements.txt")
            with open(path, "w", encoding="utf-8") as handle:
                handle.write("".join(line + "\n" for line in hashed.values()))
            result = self._run(self._install_argv((), _names(hashed) if reinstall else (), no_deps, path))
        rest = tuple(r for r in requirements if r not in hashed)
        if not result.ok or not rest:
            return result
        return self._run(self._install_argv(rest, _names(rest) if reinstall else (), no_deps))

    def _hashed(self, requirements: tuple) -> dict:
        """requirement -> its line with the lock's hashes, for each requirement pinned at its locked version: those
        install in the installer's hash-checking mode (pip's and uv's ``--require-hashes``)."""
        lines = {}
        for requirement in requirements if self.lock is not None else ():
            name, _sep, version = requirement.partition("==")
            package = self.lock.package(canonical_name(name))
            if package is not None and package.hashes and version == package.version:
                lines[requirement] = " ".join([package.pin] + ["--hash=%s" % h for h in package.hashes])
        return lines

    def version(self) -> str:
        """The installer's version; raises ``InstallerError`` when it does not run."""
        raise NotImplementedError

    def not_found(self, result: CommandResult) -> list:
        """Canonical names of the requirements a failed install says its wheel sources do not offer."""
        text = "%s\n%s" % (result.stdout or "", result.stderr or "")
        return sorted({canonical_name(m) for pattern in self._NOT_FOUND for m in re.findall(pattern, text)})

    def describe_sources(self) -> str:
        """The wheel sources searched, as a person reads them (credentials redacted by the caller)."""
        parts = ["find-links %s" % ", ".join(self.sources.find_links)] if self.sources.find_links else []
        if self.sources.no_index:
            parts.append("no index")
        else:
            indexes = ((self.sources.index_url,) if self.sources.index_url else ()) + self.sources.extra_index_urls
            parts.append("index %s" % ", ".join(indexes) if indexes else "the %s's configured index" % self.name)
        return "; ".join(parts)

    def _uninstall_argv(self, names: tuple) -> list:
        raise NotImplementedError

    def _install_argv(self, requirements: tuple, reinstall: tuple, no_deps: bool, hashed_file: str = "") -> list:
        """The install command: ``requirements`` by name, or (``hashed_file``) a requirements file in hash-checking
        mode."""
        raise NotImplementedError

    def _run(self, argv: Sequence[str]) -> CommandResult:
        result = self.runner.run(list(argv), env=installer_env(self.environ), timeout=self.timeout, pass_fds=self.pass_fds)
        return redact_result(result, self.sources.secrets())

    def _version_from(self, argv: Sequence[str], pattern: str, failure: str) -> str:
        result = self._run(argv)
        match = re.match(pattern, result.stdout.strip()) if result.ok else None
        if not match:
            detail = (result.stderr or result.stdout).strip().splitlines()
            reason = "timed out" if result.timed_out else (detail[-1] if detail else "rc=%d" % result.rc)
            raise InstallerError(redact("%s: %s" % (failure, reason), self.sources.secrets()))
        return match.group(1)


def source_args(sources: WheelSources, uv: bool = False) -> list:
    """The wheel-source options of ``sources`` as installs and fetches get them, for pip or (``uv``) for uv."""
    index_flag, extra_index_flag = ("--default-index", "--index") if uv else ("--index-url", "--extra-index-url")
    args = ["--no-index"] if sources.no_index else []
    if sources.index_url:
        args += [index_flag, sources.index_url]
    for url in sources.extra_index_urls:
        args += [extra_index_flag, url]
    for link in sources.find_links:
        args += ["--find-links", link]
    return args


class PipBackend(_Backend):
    """``python -I -m pip`` of the venv itself.

    pip's ``--force-reinstall`` covers the whole command; with ``no_deps=False``
    it also reinstalls dependencies, where uv reinstalls only the named ones.
    """

    name = "pip"
    _NOT_FOUND = (r"No matching distribution found for ([A-Za-z0-9][A-Za-z0-9._-]*)",)

    def _pip(self) -> list:
        return [self.python, "-I", "-m", "pip"]

    def _uninstall_argv(self, names: tuple) -> list:
        return self._pip() + ["uninstall", "--yes", "--no-input", "--"] + list(names)

    def _install_argv(self, requirements: tuple, reinstall: tuple, no_deps: bool, hashed_file: str = "") -> list:
        argv = self._pip() + ["install", "--no-input", "--disable-pip-version-check"]
        argv += ["--no-deps"] if no_deps else []
        argv += ["--force-reinstall"] if reinstall else []
        argv += source_args(self.sources)
        return argv + (["--require-hashes", "-r", hashed_file] if hashed_file else ["--"] + list(requirements))

    def version(self) -> str:
        return self._version_from(self._pip() + ["--version"], r"pip (\S+)", "venv python %s has no pip" % self.python)


class UvBackend(_Backend):
    """``uv pip`` aimed at the venv's interpreter; the venv needs no pip."""

    name = "uv"
    _NOT_FOUND = (r"\b([A-Za-z0-9][A-Za-z0-9._-]*) was not found in the", r"there is no version of ([A-Za-z0-9][A-Za-z0-9._-]*)")

    def __init__(self, uv: str, python: str, runner: Runner, sources: Optional[WheelSources] = None,
                 timeout: Optional[float] = None, environ: Optional[Mapping[str, str]] = None):
        super().__init__(python, runner, sources, timeout, environ)
        self.uv = uv

    def _uninstall_argv(self, names: tuple) -> list:
        return [self.uv, "pip", "uninstall", "--python", self.python, "--"] + list(names)

    def _install_argv(self, requirements: tuple, reinstall: tuple, no_deps: bool, hashed_file: str = "") -> list:
        # uv's own link mode (hardlinks from its cache by default, UV_LINK_MODE) stays in force: snapshots and
        # restores never write into an existing inode, so files shared with uv's cache are safe.
        argv = [self.uv, "pip", "install", "--python", self.python]
        argv += ["--no-deps"] if no_deps else []
        for name in reinstall:
            argv += ["--reinstall-package", name]
        argv += source_args(self.sources, uv=True)
        return argv + (["--require-hashes", "-r", hashed_file] if hashed_file else ["--"] + list(requirements))

    def version(self) -> str:
        return self._version_from([self.uv, "--version"], r"uv (\S+)", "uv executable %s does not run" % self.uv)


def uv_candidates(python: str, environ: Optional[Mapping[str, str]] = None, own_python: Optional[str] = None) -> list:
    """Where ``uv`` is looked for, in order: PATH; beside the venv's interpreter (the venv's bin, and the folder
    of the Python it was made from); the per-user install folders of uv's installer and of pip/cargo
    (``UV_INSTALL_DIR``, ``XDG_BIN_HOME``, ``~/.local/bin``, ``CARGO_HOME``/``~/.cargo/bin``); beside the
    modules' own Python (``own_python``, default ``sys.executable``: the role's tools venv, where the ``uv`` wheel
    puts it)."""
    base = os.environ if environ is None else environ
    places = [d for d in base.get("PATH", os.defpath).split(os.pathsep) if d]
    places += [os.path.dirname(python), os.path.dirname(os.path.realpath(python))]
    home = base.get("HOME") or os.path.expanduser("~")
    places += [base.get("UV_INSTALL_DIR", ""), base.get("XDG_BIN_HOME", ""), os.path.join(home, ".local", "bin"),
               os.path.join(base["CARGO_HOME"], "bin") if base.get("CARGO_HOME") else "",
               os.path.join(home, ".cargo", "bin"), os.path.dirname(own_python or sys.executable)]
    return list(dict.fromkeys(os.path.abspath(p) for p in places if p))


def find_uv(python: str, environ: Optional[Mapping[str, str]] = None, own_python: Optional[str] = None) -> Optional[str]:
    """The first executable ``uv`` of uv_candidates(), or None."""
    for folder in uv_candidates(python, environ, own_python):
        candidate = os.path.join(folder, "uv")
        if _executable(candidate):
            return candidate
    return None


def recorded_installer(dists) -> Optional[str]:
    """The installer the venv's distributions record (their INSTALLER file), the most common one: "pip", "uv"..."""
    counts: dict = {}
    for dist in dists:
        name = (dist.installer or "").strip().lower()
        if name:
            counts[name] = counts.get(name, 0) + 1
    return max(sorted(counts), key=lambda name: counts[name]) if counts else None


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def select_backend(kind: str, python: str, runner: Runner, sources: Optional[WheelSources] = None,
                   uv_path: Optional[str] = None, timeout: Optional[float] = None,
                   environ: Optional[Mapping[str, str]] = None, recorded: Optional[str] = None,
                   has_pip: bool = True, own_python: Optional[str] = None, lock=None) -> Backend:
    """The backend for ``kind`` ("auto", "pip" or "uv"), checked to run (its version is queried).

    ``auto`` follows the installer the venv's distributions record (``recorded``, see recorded_installer): a venv
    made by uv is repaired with uv, one made by pip with its own pip; the other one serves when the first is not
    there. ``has_pip``: whether the venv has pip installed. pip is never installed into the venv. ``environ`` and
    ``own_python``: where uv is looked for (uv_candidates). ``lock``: the user's lock, whose pins install with its
    hashes.
    """
    places = uv_candidates(python, environ, own_python)
    if kind not in BACKEND_KINDS:
        raise InstallerError("installer backend %r is not one of %s" % (kind, ", ".join(BACKEND_KINDS)))
    if uv_path is not None and kind != "pip" and not _executable(uv_path):
        raise InstallerError("uv executable %s does not exist or is not executable" % uv_path)
    uv = (uv_path or find_uv(python, environ, own_python)) if kind != "pip" else None
    if kind == "uv" and uv is None:
        raise InstallerError("backend uv requested but no uv executable found (looked in %s): install uv there "
                             "(the role's tools venv does), set uv_executable, or use backend pip"
                             % ", ".join(places))
    use_uv = kind == "uv" or (kind == "auto" and uv is not None and (recorded == "uv" or not has_pip))
    if kind == "auto" and uv is None and not has_pip:
        raise InstallerError(
            "the venv %s has no pip (made by %s) and no uv executable was found (looked in %s): install uv in one "
            "of those places or set uv_executable (the venv_repair role installs uv into its tools venv); pip is "
            "never installed into the venv" % (os.path.dirname(os.path.dirname(python)), recorded or "an unknown tool",
                                               ", ".join(places)))
    if use_uv:
        backend = UvBackend(uv, python, runner, sources, timeout, environ)
    else:
        backend = PipBackend(python, runner, sources, timeout, environ)
    backend.lock = lock
    try:
        backend.version()
    except InstallerError as exc:
        hint = "use backend uv (the venv has no working pip)" if backend.name == "pip" else "repair uv or use backend pip"
        raise InstallerError("%s; %s" % (exc, hint)) from None
    return backend
