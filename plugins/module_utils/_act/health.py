# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The venv's test around a batch: its health before (the baseline, maybe still running), after, and whether the
batch made it worse.

Private to the gpuops.cuda_venv collection: not a public API.

A test is the facts (diagnose's error findings), plus the import probe and the user's probe_command when the
repair probes; or the light test (the real loader on the anchor's compiled parts, see probe.probe_import), which a
swap uses on its copy before the plan's last batch.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Callable, Optional, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import Runner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.diagnose import diagnose
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.findings import ERROR
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.loader import LoaderConfig
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import Observations, import_name, observe, probe_venv
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.probe import run_check

# The probes' bytecode cache when the venv has none of its own (see probe_pycache); removed when the run ends.
PYCACHE_DIR = "pycache"


@dataclass(frozen=True)
class Health:
    import_ok: Optional[bool]
    import_error: Optional[str]
    errors: frozenset
    check_ok: Optional[bool]
    check_error: Optional[str]
    light: bool = False  # judged by the light loader test (no probe_command): see judged


def health(obs: Observations, options, runner: Runner, run_check_command: bool = True) -> Health:
    """``obs``'s health: its error findings, its import probe, and (when asked) the user's probe_command."""
    findings = diagnose(obs)
    errors = frozenset((f.code, f.subject) for f in findings if f.severity == ERROR)
    probe = obs.probe
    check_ok, check_error = None, None
    if options.probe_command and run_check_command:
        check = run_check(list(options.probe_command), runner, ld_library_path=options.facts.ld_library_path,
                          timeout=options.facts.probe_timeout)
        check_ok, check_error = check.ok, check.error
    return Health(probe.ok if probe else None, probe.error if probe else None, errors, check_ok, check_error,
                  bool(probe and probe.loader_only))


def baseline(before, options, runner: Runner, light: bool = False):
    """(the observation the first batch starts from, its health): the venv as found, probed when asked (the import an
    earlier cuda_venv_facts run kept in the read index, when nothing it depended on changed).

    ``light``: with the light test (a swap's copy is judged against it; the full test of the live venv is run
    only if the copy's full test needs comparing, see judged); a failed light test is judged by the import."""
    if not options.probe:
        return before, health(before, options, runner)
    # the live venv as found: an earlier facts run's import answers when nothing it depended on changed
    current, light = with_light_test(lambda loader_only: probe_venv(before, runner, loader_only=loader_only, reuse=True),
                                     light)
    return current, health(current, options, runner, run_check_command=not light)


def with_light_test(probed, light: bool):
    """(observation, whether the light test judged it): ``probed(loader_only)`` with the light test when asked; a
    failed light test is judged by the import itself (torch's own preload can rescue an import the light test
    cannot), and an anchor with no compiled part is imported anyway (see probe.probe_import)."""
    current = probed(light)
    light = bool(light and current.probe is not None and current.probe.loader_only)
    if light and not current.probe.ok:
        return probed(False), False
    return current, light


def probe_pycache(obs: Observations, state_dir: str) -> Optional[str]:
    """Where the probes keep their bytecode: None when the anchor's package already has some (pip compiles at
    install; the probes read it and write none, ``-B``), else a folder in the state dir (uv does not compile by
    default: only the first probe compiles, and the venv's sources get no ``__pycache__``)."""
    package = import_name(obs.options.anchor, obs.distributions)
    for site in obs.site_packages:
        cache = os.path.join(site, package, "__pycache__")
        try:
            if any(name.startswith("__init__.") and name.endswith(".pyc") for name in os.listdir(cache)):
                return None
        except OSError:
            continue
    return os.path.join(state_dir, PYCACHE_DIR)


def observed_after(options, runner: Runner, loader: Optional[LoaderConfig], loader_only: bool = False,
                   hashed: Tuple[str, ...] = ()):
    """The venv read again after a batch, probed when the repair probes (never NVML); ``loader_only``: the light
    test (probe.probe_import); ``hashed``: keys of distributions whose files are hashed too (beside the import)."""
    return observe(dataclasses.replace(options.facts, probe=options.probe, gpu=False, probe_loader_only=loader_only,
                                       hash_distributions=hashed), runner, loader)


def what_tested(options, light: bool) -> str:
    """What tested a batch, as its record says: besides the facts (always), the import or the light test."""
    if not options.probe:
        return "facts"
    if light:
        return "facts + loader"
    return "facts + import" + (" + probe_command" if options.probe_command else "")


class Pending:
    """(observation, health) a first batch starts from, while the baseline test still runs in the background."""

    def __init__(self, future):
        self.future = future

    def __call__(self):
        return self.future.result()

    def ready(self) -> bool:
        return self.future.done()


class Known:
    """(observation, health) already known: what the previous batch left."""

    def __init__(self, current, found):
        self.answer = (current, found)

    def __call__(self):
        return self.answer

    def ready(self) -> bool:
        return True


def judged(before: Health, after: Health, live_health: Optional[Callable[[], Health]] = None) -> Optional[str]:
    """Why a batch made the venv worse, or None. Tests of two kinds (the light one, then the full one with
    probe_command) are not comparable: where a swap's copy fails anything after a light test, it is compared with
    the live venv's full test instead (``live_health()``, run only then: the live venv has not changed)."""
    found = regression(before, after)
    if before.light != after.light and live_health is not None and (
            found or after.import_ok is False or after.check_ok is False):
        found = regression(live_health(), after)
    return found


def regression(before: Health, after: Health) -> Optional[str]:
    """Why the venv got worse, or None. A venv already broken may stay broken between batches."""
    if before.import_ok and after.import_ok is False:
        return "import failed: %s" % after.import_error
    if before.check_ok and after.check_ok is False:
        return "probe_command failed: %s" % after.check_error
    new = sorted(after.errors - before.errors)
    if new:
        return "new error finding(s): %s" % ", ".join("%s %s" % item for item in new)
    return None
