# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shape of plugins/: imports point down (core, read, decide, install, act and verify, entry), no cycle, no private reach;
inside ``_read/``, each wing (binaries, packaging, host) takes only ``_core`` and its own files, bar the named exceptions.

The graph is read from the source with ast, every internal import resolved to the file it names.
"""

from __future__ import annotations

import ast
import os

import pytest

PACKAGE = "ansible_collections.gpuops.cuda_venv."
PLUGINS = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "plugins"))
ROOT = os.path.dirname(PLUGINS)

# Each group of module_utils may import from the groups listed for it (and from itself).
MAY_IMPORT = {
    "_core": {"_core"},
    "_read": {"_core", "_read"},
    "_decide": {"_core", "_read", "_decide"},
    "_install": {"_core", "_read", "_decide", "_install"},
    "_act": {"_core", "_read", "_decide", "_install", "_verify", "_act"},
    "_verify": {"_core", "_read", "_verify"},
    "_entry": {"_core", "_read", "_decide", "_install", "_verify", "_act", "_entry"},
}

# The wings of _read: each a folder about one kind of thing on disk. The files at _read's top (observe, probe, read_index,
# venv_layout, venv_find, preflight) gather from the wings; a wing never imports the top or another wing, except:
WINGS = ("binaries", "packaging", "host")
WING_EXCEPTIONS = {
    # the kernels of the venv's extension modules, read for the performance findings
    ("host.performance_state", "binaries.elf"),
    ("host.performance_state", "binaries.fatbin"),
    # processes that run from the swap's copy count as the venv's own
    ("host.performance_state", "venv_layout"),
    # a distribution that requires the anchor imports it first: the closure says which
    ("binaries.runtime_routes", "packaging.requirements"),
}


def _module_of(path):
    return PACKAGE + os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")


def _sources():
    found = {}
    for folder, _dirs, files in os.walk(PLUGINS):
        for name in files:
            if name.endswith(".py") and name != "__init__.py":
                path = os.path.join(folder, name)
                found[_module_of(path)] = path
    return found


SOURCES = _sources()


def _imports(path):
    """(module imported, names taken from it, attributes read through it) per internal import of ``path``."""
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    edges = []
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PACKAGE):
            for alias in node.names:
                dotted = node.module + "." + alias.name
                if dotted in SOURCES:  # from PACKAGE.group import module
                    edges.append((dotted, set()))
                    aliases[alias.asname or alias.name] = dotted
                else:
                    edges.append((node.module, {alias.name}))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PACKAGE):
                    edges.append((alias.name, set()))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            edges.append((aliases[node.value.id], {node.attr}))
    return edges


GRAPH = {module: _imports(path) for module, path in SOURCES.items()}


def _group(module):
    parts = module[len(PACKAGE):].split(".")
    return parts[2] if parts[:2] == ["plugins", "module_utils"] and len(parts) > 3 else None


def test_every_internal_import_names_a_file_that_exists():
    assert sorted({(m, t) for m, edges in GRAPH.items() for t, _names in edges if t not in SOURCES}) == []


def test_no_file_takes_another_files_private_names():
    reach = sorted({(m, t, n) for m, edges in GRAPH.items() for t, names in edges for n in names
                    if n.startswith("_") and not n.startswith("__")})
    assert reach == []


def test_module_utils_imports_point_down():
    wrong = sorted({(m, t) for m, edges in GRAPH.items() for t, _names in edges
                    if _group(m) and _group(t) and _group(t) not in MAY_IMPORT[_group(m)]})
    assert wrong == []


def _in_read(module):
    """``module`` below _read (``host.gpu``, ``observe``), or None."""
    prefix = PACKAGE + "plugins.module_utils._read."
    return module[len(prefix):] if module.startswith(prefix) else None


def _wing(module):
    inner = _in_read(module)
    return inner.split(".")[0] if inner and inner.split(".")[0] in WINGS else None


def test_read_has_the_three_wings_and_each_is_a_package_with_an_empty_init():
    for wing in WINGS:
        init = os.path.join(PLUGINS, "module_utils", "_read", wing, "__init__.py")
        assert os.path.getsize(init) == 0, init
    assert sorted({_wing(m) for m in SOURCES if _wing(m)}) == sorted(WINGS)


def test_a_wing_imports_only_core_and_its_own_files():
    wrong = sorted({(_in_read(m), _in_read(t)) for m, edges in GRAPH.items() if _wing(m) for t, _names in edges
                    if _in_read(t) is not None and _wing(t) != _wing(m)})
    assert sorted(set(wrong) - WING_EXCEPTIONS) == []
    assert sorted(WING_EXCEPTIONS - set(wrong)) == []  # an exception no longer needed is taken off the list


def test_module_utils_never_imports_a_plugin_face():
    faces = sorted({(m, t) for m, edges in GRAPH.items() if ".module_utils." in m for t, _names in edges
                    if ".module_utils." not in t and ".plugin_utils." not in t})
    assert faces == []


def test_no_cycle():
    state, cycles = {}, []

    def visit(module, path):
        state[module] = "open"
        for target in sorted({t for t, _names in GRAPH.get(module, ())}):
            if state.get(target) == "open":
                cycles.append(path[path.index(target):] + [target])
            elif target in SOURCES and target not in state:
                visit(target, path + [target])
        state[module] = "done"

    for module in sorted(SOURCES):
        if module not in state:
            visit(module, [module])
    assert cycles == []


@pytest.mark.parametrize("group", sorted(MAY_IMPORT))
def test_each_group_is_a_package_with_an_empty_init(group):
    init = os.path.join(PLUGINS, "module_utils", group, "__init__.py")
    assert os.path.getsize(init) == 0
