"""Fixtures for the reliability tests: each stand-in scenario built once per test run, shared by xdist workers."""

import dataclasses
import fcntl
import json
import os
from pathlib import Path

import pytest

from reliability_tools import CACHE, clone
from tests.standin import ScenarioInfo, advance_scenario, build_scenario, lineage


def _shared_root(tmp_path_factory):
    """A directory every xdist worker of this run sees (the workers' basetemps share a parent)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _load(path):
    data = json.loads(Path(path).read_text())
    return ScenarioInfo(
        name=data["name"], stack=data["stack"], venv=Path(data["venv"]), wheelhouse=Path(data["wheelhouse"]),
        extra_wheelhouse=Path(data["extra_wheelhouse"]) if data["extra_wheelhouse"] else None,
        ld_library_path=Path(data["ld_library_path"]) if data["ld_library_path"] else None,
        commands=tuple(tuple(c) for c in data["commands"]), description=data["description"])


@pytest.fixture(scope="session")
def bank(tmp_path_factory):
    """bank(name) -> ScenarioInfo of a scenario venv that no test may change: clone it first.

    A scenario with a parent is its parent's venv copied and taken on by the scenario's own step
    (contaminated = healthy-cu12 + 4 installs): seconds instead of a new venv each.
    """
    root = _shared_root(tmp_path_factory) / "reliability-bank"
    root.mkdir(exist_ok=True)

    def get(name):
        info_path = root / (name + ".json")
        with open(str(root / (name + ".lock")), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not info_path.exists():
                chain = lineage(name)
                if len(chain) == 1:
                    info = build_scenario(name, root / name, cache=CACHE)
                else:
                    parent = get(chain[-2])
                    info = advance_scenario(clone(parent, root / name), name, cache=CACHE)
                    info = dataclasses.replace(info, wheelhouse=parent.wheelhouse)
                info_path.write_text(json.dumps(info.as_dict()))
        return _load(info_path)
    return get


@pytest.fixture
def fresh(bank, tmp_path):
    """fresh(name) -> a clone of the scenario for this test alone."""
    count = [0]

    def make(name):
        count[0] += 1
        return clone(bank(name), tmp_path / ("%s-%d" % (name, count[0])))
    return make
