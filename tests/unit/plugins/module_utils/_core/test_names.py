# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for names: the one PEP 503 normalisation, the distribution-name pattern, the shared-object rule."""

from __future__ import annotations

import re

import pytest
from packaging.utils import canonicalize_name

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core import names
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import (
    DISTRIBUTION_NAME, canonical_name, is_shared_object, pep503_name)

NAMES = ["Typing__Extensions.x-Y", "Nvidia_CUDNN.cu12", "nvidia-cudnn-cu12", "zope.interface", "A", "a._-b", "--a--",
         "", "Flask_SQLAlchemy", "ruamel.yaml.clib", "foo...bar", "İstanbul", "ß-Straße", "x__y..z--w"]


def test_canonical_name_exact_values():
    assert canonical_name("Typing__Extensions.x-Y") == "typing-extensions-x-y"
    assert canonical_name("Nvidia_CUDNN.cu12") == "nvidia-cudnn-cu12"
    assert canonical_name("Torch") == "torch"


@pytest.mark.parametrize("name", NAMES)
def test_fallback_equals_packaging(name):
    assert pep503_name(name) == canonicalize_name(name) == canonical_name(name)


@pytest.mark.parametrize("name", NAMES)
def test_canonical_name_without_packaging_is_the_fallback(monkeypatch, name):
    monkeypatch.setattr(names, "canonicalize_name", None)
    assert canonical_name(name) == canonicalize_name(name)


@pytest.mark.parametrize("name, valid", [
    ("torch", True), ("nvidia-cudnn-cu12", True), ("zope.interface", True), ("A_b.C-9", True), ("x", True), ("9", True),
    ("", False), ("-x", False), ("x-", False), ("x.", False), ("_x", False), ("x y", False), ("x/y", False),
    ("x==1", False), ("x[extra]", False),
])
def test_distribution_name_pattern(name, valid):
    assert bool(re.fullmatch(DISTRIBUTION_NAME, name)) is valid


@pytest.mark.parametrize("name, expected", [
    ("x.so", True),
    ("libcudnn.so.9", True),
    ("libx.so.9.1.2", True),
    ("x.cpython-312-x86_64-linux-gnu.so", True),
    ("x.abi3.so", True),
    ("_C.abi3.so", True),
    ("torch/lib/libtorch_cuda.so", True),
    ("nvidia/cudnn/lib/libcudnn_ops.so.9.10.2", True),
    ("x.so.txt", False),
    ("x.sox", False),
    ("libcudnn.so.9.txt", False),
    ("libcudnn.so.x", False),
    ("libx.so.9.", False),
    ("libx.so.9a", False),
    ("libfoo.a", False),
    ("RECORD", False),
    (".so", False),
    ("lib/.so", False),
    ("lib/", False),
    ("x.so/README", False),
])
def test_is_shared_object(name, expected):
    assert is_shared_object(name) is expected
