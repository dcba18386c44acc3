"""Fixtures for the opt-in acceptance tests on real torch wheels (make acceptance; docs/ACCEPTANCE.md)."""

import json
import os
import time
from pathlib import Path

import pytest

from acceptance_fetch import ROOT, AcceptanceError, NotEnoughDisk, cache_root, ensure_wheelhouse, find_python, wheelhouse
from acceptance_table import Row, markdown, summarize_batches
from acceptance_venvs import SCENARIOS, build_scenario, remove_tree, run, scenario, uv_executable

from tests.scenarios.scenario_tools import run_module

# The table and every module result (JSON), kept after the venvs are gone.
RESULTS = Path(os.environ.get("CUDA_VENV_ACCEPTANCE_RESULTS") or os.path.join(ROOT, "build", "acceptance-results"))
ROWS = {}  # scenario name -> Row, in the order the scenarios ran
LOADS = []  # the 1-minute load average after each module run: timings on a busy machine are longer


class RealScenario:
    """A real venv in one incident state, and the module runs on it (each run once, timed, on first use)."""

    def __init__(self, name, venv, workdir, row):
        self.name, self.venv, self.workdir, self.row = name, venv, workdir, row
        self._runs = {}

    def module(self, key, module, args, check=False):
        """(rc, result, output, seconds) of ``ansible localhost -m MODULE`` (``--check``), run once per key."""
        if key not in self._runs:
            home = self.workdir / ("ansible-" + key)
            home.mkdir()
            started = time.monotonic()
            rc, result, output = run_module(home, module, args, check=check)
            self._runs[key] = (rc, result, output, time.monotonic() - started)
            LOADS.append(os.getloadavg()[0])
            RESULTS.mkdir(parents=True, exist_ok=True)
            (RESULTS / ("%s.%s.json" % (self.name, key))).write_text(json.dumps(result, indent=1, sort_keys=True), encoding="utf-8")
        return self._runs[key]

    def facts(self, key="facts"):
        rc, result, output, seconds = self.module(key, "cuda_venv_facts", {"path": str(self.venv)})
        assert rc == 0, output[-4000:]
        if key == "facts":
            self.row.facts_seconds = seconds
        return result["ansible_facts"]["cuda_venv"]

    def repair(self, key="repair"):
        # pip-made venvs with their own pip; uv-made ones (no pip) with the backend auto picks: uv
        backend = "pip" if scenario(self.name).made_by == "pip" else "auto"
        args = {"path": str(self.venv), "find_links": [str(wheelhouse())], "no_index": True, "backend": backend}
        rc, result, output, seconds = self.module(key, "cuda_venv_repair", args)
        if key == "repair":
            self.row.repair_seconds, self.row.batches = seconds, summarize_batches(result)
            self.row.strategy = result.get("strategy") or "-"
        else:
            self.row.second_seconds = seconds
        return rc, result, output


def pytest_collection_modifyitems(items):
    """Known discrepancies of the engine on real wheels: xfail(strict=True), one (scenario, test) at a time."""
    for item in items:
        known = getattr(item.module, "KNOWN_DISCREPANCIES", None)
        params = getattr(item, "callspec", None)
        if known and params and (params.params.get("real"), item.originalname) in known:
            reason = known[(params.params["real"], item.originalname)]
            item.add_marker(pytest.mark.xfail(strict=True, reason=reason))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item):
    """Each test's outcome goes into its scenario's row: the table's result column."""
    report = yield
    params = getattr(item, "callspec", None)
    name = params.params.get("real") if params else None
    if name in ROWS and (report.when == "call" or report.outcome != "passed"):
        if hasattr(report, "wasxfail"):
            status = "xfailed" if report.skipped else "xpassed"
        else:
            status = report.outcome
        ROWS[name].outcomes[item.originalname] = status
    return report


def pytest_terminal_summary(terminalreporter):
    if not ROWS:
        return
    venv_python = run([find_python(), "--version"], check=False).output.strip()
    notes = ["venvs: %s, their own pip" % venv_python, run([uv_executable(), "--version"], check=False).output.strip(),
             "load average %.1f-%.1f" % (min(LOADS), max(LOADS)) if LOADS else "no module ran"]
    table = markdown(list(ROWS.values()), "; ".join(notes))
    terminalreporter.write_sep("=", "acceptance on real wheels")
    terminalreporter.write(table)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "table.md").write_text(table, encoding="utf-8")
    terminalreporter.write_line("written to %s, with every module result beside it" % (RESULTS / "table.md"))


@pytest.fixture(scope="session")
def runs_dir():
    """CACHE/runs: scenario venvs live beside uv's cache (hard links need one file system), removed after each."""
    try:
        ensure_wheelhouse()
    except AcceptanceError as exc:
        pytest.exit("acceptance: %s" % exc, returncode=1)
    runs = cache_root() / "runs"
    remove_tree(runs)  # what an interrupted run left
    runs.mkdir(parents=True)
    yield runs
    remove_tree(runs)


@pytest.fixture(scope="module", params=[s.name for s in SCENARIOS])
def real(request, runs_dir):
    """One scenario's real venv, built from a fresh copy; removed once its tests ran."""
    name = request.param
    row = ROWS.setdefault(name, Row(name))
    workdir = runs_dir / name
    started = time.monotonic()
    try:
        build_scenario(name, workdir / "venv")
    except NotEnoughDisk as exc:
        pytest.exit("acceptance: %s" % exc, returncode=1)
    row.build_seconds = time.monotonic() - started
    yield RealScenario(name, workdir / "venv", workdir, row)
    remove_tree(workdir)
