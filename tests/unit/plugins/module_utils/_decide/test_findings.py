# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for findings: the stable codes, the result shape, ordering and the one-line summary; and that every code is
built in the one _decide module DECIDED_IN names (read from the source with ast)."""

from __future__ import annotations

import ast
import os
import re

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide import findings as F
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.findings import Finding

DESIGN_CODES = [
    "RECORD_MISSING_FILES", "RECORD_MODIFIED_FILES", "FILE_OWNERSHIP_CONFLICT", "SONAME_UNRESOLVED",
    "SONAME_SYSTEM_FALLBACK", "CUDA_MAJOR_MIXED", "REQUIREMENT_MISSING", "REQUIREMENT_VERSION_MISMATCH",
    "CUDA_DIST_UNREQUIRED", "DUPLICATE_DISTRIBUTION", "IMPORT_FAILED", "RUNTIME_LIBRARY_MISMATCH", "DRIVER_TOO_OLD",
]
ADDED_CODES = ["ANCHOR_NOT_INSTALLED", "DIST_INFO_INVALID", "RECORD_PATH_OUTSIDE_VENV", "ELF_INVALID", "PYTHON_UNUSABLE",
               "VENV_MOVED", "SCRIPT_INTERPRETER_MISSING", "SONAME_SHADOWED", "GUARD_STALE", "CONTAMINATION_SOURCE",
               "INSTALL_WOULD_OVERWRITE", "INSTALL_CUDA_MAJOR_MISMATCH"]
PERFORMANCE_CODES = ["KERNELS_MISSING", "KERNELS_PTX_ONLY", "GPU_CLOCKS_THROTTLED", "GPU_POWER_LIMITED", "GPU_PCIE_DEGRADED",
                     "GPU_MEMORY_ERRORS", "GPU_PERSISTENCE_OFF", "GPU_MIG_ENABLED", "GPU_SHARED", "ENV_SLOWS_CUDA",
                     "RESTART_NEEDED", "INSTALL_NO_KERNEL"]
SERVING_CODES = ["REQUIREMENT_PINS_CONFLICT"]
LOCK_CODES = ["LOCK_DRIFT"]


def test_codes_are_the_designed_ones_then_the_added_ones():
    assert list(F.CODES) == DESIGN_CODES + ADDED_CODES + PERFORMANCE_CODES + SERVING_CODES + LOCK_CODES
    assert all(getattr(F, code) == code for code in F.CODES)


def test_every_code_is_documented_in_findings_md():
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "..", "..", "..", "..", "docs", "FINDINGS.md")
    if not os.path.exists(path):
        pytest.skip("docs/FINDINGS.md is not in this tree")
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    assert [c for c in F.CODES if not re.search(r"\b%s\b" % c, text)] == []


def test_as_dict_leaves_out_empty_fix_and_details():
    finding = Finding(F.IMPORT_FAILED, F.ERROR, "torch", "import torch fails: ImportError: x")
    assert finding.as_dict() == {"code": "IMPORT_FAILED", "severity": "error", "subject": "torch",
                                 "message": "import torch fails: ImportError: x"}


def test_as_dict_with_fix_and_details():
    finding = Finding(F.RECORD_MISSING_FILES, F.ERROR, "nvidia-nccl-cu12 2.27.5", "1 of 2 files are missing.",
                      "pip install --force-reinstall --no-deps 'nvidia-nccl-cu12==2.27.5'", {"count": 1})
    assert finding.as_dict() == {
        "code": "RECORD_MISSING_FILES", "severity": "error", "subject": "nvidia-nccl-cu12 2.27.5",
        "message": "1 of 2 files are missing.", "fix": "pip install --force-reinstall --no-deps 'nvidia-nccl-cu12==2.27.5'",
        "details": {"count": 1}}


def test_findings_are_frozen():
    finding = Finding(F.IMPORT_FAILED, F.ERROR, "torch", "m")
    with pytest.raises(AttributeError):
        finding.code = F.DRIVER_TOO_OLD


def _f(code, severity, subject):
    return Finding(code, severity, subject, "%s %s" % (code, subject))


def test_ordered_errors_then_warnings_then_info_by_code_order_then_subject():
    findings = [
        _f(F.SONAME_UNRESOLVED, F.INFO, "libmpi.so.40"),
        _f(F.CUDA_DIST_UNREQUIRED, F.WARNING, "sgl-kernel"),
        _f(F.IMPORT_FAILED, F.ERROR, "torch"),
        _f(F.SONAME_UNRESOLVED, F.ERROR, "libnccl.so.2"),
        _f(F.SONAME_UNRESOLVED, F.ERROR, "libcudnn.so.9"),
        _f(F.RECORD_MISSING_FILES, F.ERROR, "nvidia-nccl-cu12 2.27.5"),
        _f(F.SONAME_SYSTEM_FALLBACK, F.WARNING, "libcurand.so.10"),
        _f(F.PYTHON_UNUSABLE, F.ERROR, "/v/bin/python"),
    ]
    assert [(f.severity, f.code, f.subject) for f in F.ordered(findings)] == [
        ("error", "RECORD_MISSING_FILES", "nvidia-nccl-cu12 2.27.5"),
        ("error", "SONAME_UNRESOLVED", "libcudnn.so.9"),
        ("error", "SONAME_UNRESOLVED", "libnccl.so.2"),
        ("error", "IMPORT_FAILED", "torch"),
        ("error", "PYTHON_UNUSABLE", "/v/bin/python"),
        ("warning", "SONAME_SYSTEM_FALLBACK", "libcurand.so.10"),
        ("warning", "CUDA_DIST_UNREQUIRED", "sgl-kernel"),
        ("info", "SONAME_UNRESOLVED", "libmpi.so.40"),
    ]


def test_is_healthy_ignores_warnings_and_info():
    assert F.is_healthy([]) is True
    assert F.is_healthy([_f(F.CUDA_DIST_UNREQUIRED, F.WARNING, "x"), _f(F.SONAME_UNRESOLVED, F.INFO, "y")]) is True
    assert F.is_healthy([_f(F.SONAME_UNRESOLVED, F.INFO, "y"), _f(F.IMPORT_FAILED, F.ERROR, "torch")]) is False


@pytest.mark.parametrize("findings, summary", [
    ([], "healthy"),
    ([_f(F.SONAME_UNRESOLVED, F.INFO, "libmpi.so.40")], "healthy"),
    ([_f(F.CUDA_DIST_UNREQUIRED, F.WARNING, "a"), _f(F.CUDA_DIST_UNREQUIRED, F.WARNING, "b")],
     "healthy: 2 warning(s): CUDA_DIST_UNREQUIRED"),
    ([_f(F.RECORD_MISSING_FILES, F.ERROR, "a"), _f(F.RECORD_MISSING_FILES, F.ERROR, "b"),
      _f(F.SONAME_UNRESOLVED, F.ERROR, "libcudnn.so.9"), _f(F.IMPORT_FAILED, F.ERROR, "torch")],
     "broken: 4 error(s): RECORD_MISSING_FILES, SONAME_UNRESOLVED, IMPORT_FAILED"),
    ([_f(F.IMPORT_FAILED, F.ERROR, "torch"), _f(F.SONAME_SYSTEM_FALLBACK, F.WARNING, "libcurand.so.10"),
      _f(F.SONAME_UNRESOLVED, F.INFO, "libmpi.so.40")],
     "broken: 1 error(s): IMPORT_FAILED; 1 warning(s): SONAME_SYSTEM_FALLBACK"),
])
def test_summarize(findings, summary):
    assert F.summarize(findings) == summary


def test_summarize_takes_a_generator():
    assert F.summarize(f for f in [_f(F.IMPORT_FAILED, F.ERROR, "torch")]) == "broken: 1 error(s): IMPORT_FAILED"


# --- where each code is decided -------------------------------------------------------------------------------

PLUGINS = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "..", "plugins"))
DECIDE = os.path.join("module_utils", "_decide")
FINDINGS_MODULE = "ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.findings"


def _names(tree):
    """(local names of the findings module, local names of Finding, local name -> code) imported by ``tree``."""
    modules, classes, codes = set(), set(), {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == FINDINGS_MODULE.rsplit(".", 1)[0]:
            modules.update(a.asname or a.name for a in node.names if a.name == "findings")
        elif isinstance(node, ast.ImportFrom) and node.module == FINDINGS_MODULE:
            classes.update(a.asname or a.name for a in node.names if a.name == "Finding")
            codes.update((a.asname or a.name, a.name) for a in node.names if a.name in F.CODES)
        elif isinstance(node, ast.Import):
            modules.update(a.asname for a in node.names if a.name == FINDINGS_MODULE and a.asname)
    return modules, classes, codes


def _code_of(node, modules, codes):
    """The code a constant expression names (F.CODE, findings.CODE, a code imported bare), else None."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
        return node.attr if node.attr in F.CODES else None
    if isinstance(node, ast.Name):
        return codes.get(node.id)
    return None


def _argument(call, index, keyword):
    """The argument ``call`` passes at position ``index`` or as ``keyword`` (None: not passed)."""
    if index < len(call.args):
        return call.args[index]
    return next((k.value for k in call.keywords if k.arg == keyword), None)


def constructions(source, path):
    """(path, line, code) of each Finding built in ``source``, in source order; code None when the source does not say.

    The code is a constant (F.CODE) or, for a helper that takes the code as a parameter and builds the Finding
    (diagnose._record_finding), the constants the same file passes for that parameter: one row per call."""
    tree = ast.parse(source, path)
    modules, classes, codes = _names(tree)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    found = []

    def builds(call):
        func = call.func
        if isinstance(func, ast.Name):
            return func.id in classes
        return isinstance(func, ast.Attribute) and func.attr == "Finding" and getattr(func.value, "id", None) in modules

    def rows(call, function):
        given = _argument(call, 0, "code")
        code = _code_of(given, modules, codes)
        params = [a.arg for a in function.args.args] if function is not None else []
        if code is not None or not isinstance(given, ast.Name) or given.id not in params:
            return [(path, call.lineno, code)]
        passed = [_argument(c, params.index(given.id), given.id) for c in calls
                  if (getattr(c.func, "id", None) or getattr(c.func, "attr", None)) == function.name]
        return [(path, call.lineno, _code_of(p, modules, codes)) for p in passed] or [(path, call.lineno, None)]

    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Call) and builds(child):
                found.extend(rows(child, function))
            visit(child, child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function)

    visit(tree, None)
    return found


def _plugin_constructions():
    found = []
    for folder, _dirs, files in os.walk(PLUGINS):
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as handle:
                    found += constructions(handle.read(), os.path.relpath(path, PLUGINS))
    return found


BUILT = _plugin_constructions()


def _decide_module(path):
    folder, name = os.path.split(path)
    return name[:-3] if folder == DECIDE else None


def test_every_code_says_where_it_is_decided():
    assert sorted(set(F.CODES) - set(F.DECIDED_IN)) == []
    assert sorted(set(F.DECIDED_IN) - set(F.CODES)) == []
    decide = os.path.join(PLUGINS, DECIDE)
    assert sorted(m for m in set(F.DECIDED_IN.values()) if not os.path.isfile(os.path.join(decide, m + ".py"))) == []


def test_findings_are_built_only_in_decide():
    assert ["%s:%d" % (path, line) for path, line, _code in BUILT if _decide_module(path) is None] == []


def test_every_finding_built_names_its_code():
    assert ["%s:%d" % (path, line) for path, line, code in BUILT if code is None] == []


def test_each_code_is_built_in_the_module_decided_in_names():
    where = {}
    for path, _line, code in BUILT:
        if code is not None:
            where.setdefault(code, set()).add(_decide_module(path) or path)
    assert {code: sorted(where.get(code, ())) for code in F.CODES if where.get(code) != {F.DECIDED_IN[code]}} == {}


def test_the_reader_sees_every_way_a_finding_is_built():
    source = """
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide import findings as F
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.findings import Finding, GUARD_STALE as STALE


def rule(obs):
    return [F.Finding(F.IMPORT_FAILED, F.ERROR, "torch", "m"), Finding(STALE, F.WARNING, "v", "m"),
            Finding(code=F.VENV_MOVED, severity=F.INFO, subject="v", message="m"), _helper(obs, F.ELF_INVALID),
            _helper(obs, code=F.DIST_INFO_INVALID), Finding(obs.code, F.ERROR, "x", "m")]


def _helper(obs, code):
    return Finding(code, F.ERROR, "x", "m")
"""
    assert constructions(source, "module_utils/_install/x.py") == [
        ("module_utils/_install/x.py", 7, "IMPORT_FAILED"), ("module_utils/_install/x.py", 7, "GUARD_STALE"),
        ("module_utils/_install/x.py", 8, "VENV_MOVED"), ("module_utils/_install/x.py", 9, None),
        ("module_utils/_install/x.py", 13, "ELF_INVALID"), ("module_utils/_install/x.py", 13, "DIST_INFO_INVALID")]
