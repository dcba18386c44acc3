# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every module's main() first has its process skip the interpreter's last collection (_core/process_end.py)."""

from __future__ import annotations

import importlib

import pytest


class Called(Exception):
    pass


def _called():
    raise Called()


@pytest.mark.parametrize("name", ["cuda_venv_benchmark", "cuda_venv_facts", "cuda_venv_find", "cuda_venv_preflight",
                                  "cuda_venv_repair"])
def test_main_skips_the_last_collection_before_its_work(monkeypatch, name):
    module = importlib.import_module("ansible_collections.gpuops.cuda_venv.plugins.modules." + name)
    monkeypatch.setattr(module, "skip_last_collection", _called)
    with pytest.raises(Called):
        module.main()  # no module args are needed: it is the first thing main() does
