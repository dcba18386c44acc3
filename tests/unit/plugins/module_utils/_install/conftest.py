# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures shared by the _install tests."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.fixture(scope="module")
def empty_venv(tmp_path_factory):
    """A real venv without pip (made once per test file): install_guard copies it, wheel_fetch aims uv at it."""
    path = tmp_path_factory.mktemp("install") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    return path
