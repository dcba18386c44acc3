# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The version the engine writes into what it keeps is the collection's, as galaxy.yml declares it."""

from __future__ import annotations

import os

import yaml

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.collection import VERSION

GALAXY = os.path.join(os.path.dirname(__file__), *[os.pardir] * 5, "galaxy.yml")


def test_the_version_is_galaxy_yml_s():
    with open(GALAXY, encoding="utf-8") as handle:
        assert yaml.safe_load(handle)["version"] == VERSION
