# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One repair run: its options, its constants (``Run``, frozen), what its batches did (``Progress``, the one
mutable part) and its installer (``Installer``, started on first use).

Private to the gpuops.cuda_venv collection: not a public API.

A swap's copy is judged by a run of its own, ``dataclasses.replace`` of the live one: the copy's options and
installer interpreter, the same progress.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.health import Health
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.swap import IN_PLACE
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.venv_guard import GuardOptions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import Runner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import DesiredState
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.install_guard import InstallCheck
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.installers import Backend
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.loader import LoaderConfig
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import FactsOptions, Observations
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import VenvLayout
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._verify.benchmark import BenchmarkRequest


@dataclass(frozen=True)
class RepairOptions:
    facts: FactsOptions
    desired: DesiredState
    probe: bool = True
    probe_command: Tuple[str, ...] = ()
    batch: Optional[int] = None
    lock_timeout: float = 0.0
    check_mode: bool = False
    diff: bool = False
    install_check: Optional[InstallCheck] = None  # every wheel's paths checked before anything is installed
    strategy: str = IN_PLACE  # auto | swap | in_place (the module's default is auto; see swap_run.py)
    keep_previous: int = 1
    swap_back: bool = False
    guard: GuardOptions = GuardOptions()  # the venv's install guard, settled when the venv ends healthy (_act/venv_guard.py)
    report_facts: bool = False  # check mode: also the facts (import probe, GPU) from the observation that plans
    keep_index: bool = False  # check mode's plan, kept: its read index written for the next plan (plan_only)
    verify_before_swap: Optional[BenchmarkRequest] = None  # a swap's copy benchmarked against the live venv (swap_run.py)


@dataclass
class Progress:
    """What a run's batches did: the one part of a run that changes while it runs."""

    executed: List[dict] = field(default_factory=list)  # each batch's record: commands, test, result
    touched: set = field(default_factory=set)  # distributions installed or reinstalled: re-hashed at the end
    unfixable: List[str] = field(default_factory=list)  # batches skipped because a wheel is not in the sources
    # batches on a copy committed before the baseline test they are judged against had finished (batches._run_batch)
    unjudged: List[Callable[[], None]] = field(default_factory=list)


class Installer:
    """The run's installer backend, made once, when first asked for (a no-op run starts none), from the venv as
    found; ``at(python)`` is the same installer run by another interpreter (a swap's copy)."""

    def __init__(self, make: Callable[[], Optional[Backend]], lock_fd: Optional[int] = None, python: Optional[str] = None,
                 shared: Optional[list] = None):
        self._make = make
        self._lock_fd = lock_fd  # installers inherit the lock: an orphaned one keeps the venv locked
        self._python = python
        self._made = shared if shared is not None else []  # the live backend, shared with every at()
        self._moved: Optional[Backend] = None  # at(python)'s: a copy of the live backend run by ``python``

    def backend(self) -> Optional[Backend]:
        if not self._made:
            made = self._make()
            if made is not None and self._lock_fd is not None:
                made.pass_fds = (self._lock_fd,)
            self._made.append(made)
        made = self._made[0]
        if made is None or self._python is None:
            return made
        if self._moved is None:
            self._moved = copy.copy(made)
            self._moved.python = self._python
        return self._moved

    def at(self, python: str) -> "Installer":
        return Installer(self._make, self._lock_fd, python, self._made)

    @property
    def name(self) -> Optional[str]:
        return getattr(self._made[0], "name", None) if self._made else None


@dataclass(frozen=True)
class Run:
    """One repair run's constants: what it was asked, the venv's layout, the venv as found and what recovery put
    back, the node's loader configuration; with its installer and its progress."""

    options: RepairOptions
    runner: Runner
    secrets: Tuple[str, ...]
    installer: Installer
    layout: VenvLayout
    before: Optional[Observations] = None  # the venv as found (after recovery)
    recovered: Optional[dict] = None  # what recovery did first (the result's ``recovered``), or None
    loader: Optional[LoaderConfig] = None  # the node's loader configuration, read once per run
    live_health: Optional[Callable[[], Health]] = None  # a swap's: the live venv's full test, run once when asked
    progress: Progress = field(default_factory=Progress)

    @property
    def backend(self) -> Optional[Backend]:
        """The installer backend: reading it starts the installer (``Installer.backend``)."""
        return self.installer.backend()
