# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for scope.cuda_scope: which distributions the CUDA repair may reinstall, and why."""

from __future__ import annotations

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.diagnose import describe_paths, diagnose
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.scope import cuda_scope
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils import observations as O
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils.observations import dist

JINJA = dist("Jinja2", "3.1.6", ["jinja2/__init__.py"])


def test_scope_of_the_contaminated_venv():
    scope = cuda_scope(O.contaminated(add=[JINJA]))
    assert scope["torch"] == "the anchor"
    assert scope["nvidia-cudnn-cu12"] == "shares paths with another wheel"
    assert scope["nvidia-cudnn-cu13"] == "shares paths with another wheel"
    assert "jinja2" not in scope


def test_scope_of_the_gutted_venv_keeps_the_colliding_families_and_the_providers_import_needs():
    scope = cuda_scope(O.gutted(add=[JINJA]))
    assert scope["nvidia-cudnn-cu12"] == "installs the same paths as nvidia-cudnn-cu13"
    assert "jinja2" not in scope


def test_an_edit_in_scope_is_an_error_and_outside_info_while_missing_files_outside_stay_a_warning():
    obs = O.healthy(add=[JINJA], modified={"jinja2": ["jinja2/__init__.py"], "torch": ["torch/__init__.py"]})
    table = [(f.severity, f.subject, f.details.get("outside_cuda_scope", False))
             for f in diagnose(obs) if f.code == "RECORD_MODIFIED_FILES"]
    assert table == [("error", "torch 2.9.1", False), ("info", "Jinja2 3.1.6", True)]
    missing = O.healthy(add=[JINJA], missing={"jinja2": ["jinja2/__init__.py"]})
    assert [(f.severity, f.subject) for f in diagnose(missing) if f.code == "RECORD_MISSING_FILES"] == [
        ("warning", "Jinja2 3.1.6")]


def test_describe_paths_leads_with_the_shared_libraries():
    paths = ["nvidia/cudnn/include/cudnn.h", "nvidia/cudnn/lib/libcudnn_adv.so.9", "nvidia/cudnn/lib/libcudnn.so.9",
             "nvidia/cudnn/include/cudnn_adv.h", "nvidia/__init__.py"]
    assert describe_paths(paths) == (
        "5 path(s), 2 of them shared libraries: libcudnn.so.9, libcudnn_adv.so.9; the rest e.g. "
        "nvidia/cudnn/include/cudnn.h, nvidia/cudnn/include/cudnn_adv.h, nvidia/__init__.py")
    assert describe_paths(["nvidia/nccl/lib/libnccl.so.2"]) == "1 shared library: libnccl.so.2"
    assert describe_paths(["a.h", "b.h"]) == "2 path(s), e.g. a.h, b.h"
    many = ["nvidia/x/lib/lib%02d.so.1" % n for n in range(10)]
    assert describe_paths(many) == ("10 shared libraries: lib00.so.1, lib01.so.1, lib02.so.1, lib03.so.1, lib04.so.1, "
                                    "lib05.so.1, lib06.so.1, lib07.so.1, ...")
