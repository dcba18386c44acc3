"""Fixtures for the opt-in acceptance tests on real torch wheels (make acceptance; docs/ACCEPTANCE.md)."""

import json
import os
import time

import pytest

from acceptance_fetch import AcceptanceError, NotEnoughDisk, cache_root, ensure_wheelhouse, find_python, wheelhouse
from acceptance_table import Row, ServingRow, markdown, results_dir, save_result, serving_markdown, summarize_batches
from acceptance_venvs import SCENARIOS, build_scenario, remove_tree, run, scenario, uv_executable
from serving_venvs import STACKS, build_serving, find_python312, import_report, installer_settings, uv_env, working

from tests.scenarios.scenario_tools import run_module

# The table and every module result (JSON), kept after the venvs are gone.
RESULTS = results_dir()
ROWS = {}  # scenario name -> Row, in the order the scenarios ran
SERVING_ROWS = {}  # serving venv name -> ServingRow (tests/acceptance/test_serving_stacks.py)
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
    for key, rows in (("real", ROWS), ("serving", SERVING_ROWS)):
        name = params.params.get(key) if params else None
        if name in rows and (report.when == "call" or report.outcome != "passed"):
            if hasattr(report, "wasxfail"):
                status = "xfailed" if report.skipped else "xpassed"
            else:
                status = report.outcome
            rows[name].outcomes[item.originalname] = status
    return report


def pytest_terminal_summary(terminalreporter):
    if not ROWS and not SERVING_ROWS:
        return
    uv_version = run([uv_executable(), "--version"], check=False).output.strip()
    load = "load average %.1f-%.1f" % (min(LOADS), max(LOADS)) if LOADS else "no module ran"
    tables = []
    if ROWS:
        venv_python = run([find_python(), "--version"], check=False).output.strip()
        tables.append(markdown(list(ROWS.values()), "; ".join(["venvs: %s, their own pip" % venv_python, uv_version, load])))
    if SERVING_ROWS:
        venv_python = run([find_python312(), "--version"], check=False).output.strip()
        settings = " ".join("%s=%s" % item for item in installer_settings().items())
        tables.append(serving_markdown(list(SERVING_ROWS.values()), "; ".join([
            "serving venvs: %s, made by uv from the package index (%s)" % (venv_python, settings), uv_version, load])))
    table = "\n".join(tables)
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


class ServingRun:
    """A real LLM-serving venv built with uv from the package index (serving_venvs.py), its imports before any
    repair, and the module runs on it (each run once per key, timed). The modules run with this machine's ``UV_*``
    settings (the repair's uv installs from the index uv's configuration names, as the user's would) and a uv cache of
    their own in the scenario's folder, removed with it: uv's ``--reinstall-package`` refreshes the package, so each
    repair would add another unpacked copy of every wheel it reinstalls to the shared cache (measured: 1.5 GB per
    repair of sglang-over-cu12). pip stays hermetic as in every acceptance run (``PIP_CONFIG_FILE=/dev/null``)."""

    def __init__(self, name, venv, workdir, row, imports):
        self.name, self.venv, self.workdir, self.row, self.imports = name, venv, workdir, row, imports
        self._runs = {}

    def module(self, key, module, args, check=False):
        """(rc, result, output, seconds) of ``ansible localhost -m MODULE`` (``--check``), run once per key."""
        if key not in self._runs:
            home = self.workdir / ("ansible-" + key)
            home.mkdir()
            env = {k: v for k, v in uv_env().items() if k.startswith("UV_")}
            env["UV_CACHE_DIR"] = str(self.workdir / "uv-cache")
            started = time.monotonic()
            rc, result, output = run_module(home, module, args, check=check, env=env, timeout=3600)
            self._runs[key] = (rc, result, output, time.monotonic() - started)
            LOADS.append(os.getloadavg()[0])
            save_result("%s.%s.json" % (self.name, key), result)
        return self._runs[key]

    def facts(self):
        rc, result, output, seconds = self.module("facts", "cuda_venv_facts", {"path": str(self.venv), "anchor": "torch"})
        assert rc == 0, output[-4000:]
        self.row.facts_seconds = seconds
        return result["ansible_facts"]["cuda_venv"]


@pytest.fixture(scope="module", params=[s.name for s in STACKS])
def serving(request):
    """One serving venv, built with uv from the package index into CACHE/runs/serving-NAME (hard links from uv's
    cache once it is warm), and the imports that work in it before any repair; removed once its tests ran."""
    name = request.param
    row = SERVING_ROWS.setdefault(name, ServingRow(name))
    workdir = cache_root() / "runs" / ("serving-" + name)
    remove_tree(workdir)  # what an interrupted run left
    workdir.mkdir(parents=True)
    started = time.monotonic()
    try:
        built = build_serving(name, workdir / "venv")
    except NotEnoughDisk as exc:
        pytest.exit("acceptance: %s" % exc, returncode=1)
    row.build_seconds = time.monotonic() - started
    save_result("%s.build.json" % name, [{"argv": list(c.argv), "rc": c.rc, "seconds": round(c.seconds, 1),
                                          "output": c.output[-20000:]} for c in built])
    imports = import_report(workdir / "venv", workdir / "empty")
    save_result("%s.imports-before.json" % name, imports)
    row.imports_before = ", ".join(working(imports)) or "none"
    yield ServingRun(name, workdir / "venv", workdir, row, imports)
    remove_tree(workdir)
