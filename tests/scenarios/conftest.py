"""Fixtures for the scenario tests: stand-in CUDA venvs built once per session."""

import os

import pytest

from scenario_tools import ROOT
from tests.standin import build_scenario

CACHE = os.environ.get("CUDA_VENV_STANDIN_CACHE", os.path.join(ROOT, "build", "standin-cache"))


@pytest.fixture(scope="session")
def standin(tmp_path_factory):
    """build(name) -> ScenarioInfo, each scenario built once per session."""
    built = {}

    def build(name):
        if name not in built:
            built[name] = build_scenario(name, tmp_path_factory.mktemp(name), cache=CACHE)
        return built[name]
    return build
