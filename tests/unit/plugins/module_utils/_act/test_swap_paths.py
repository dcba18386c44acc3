# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The copy's installer paths pointed back at the live venv: scripts, their launchers, bytecode sources."""

from __future__ import annotations

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.swap_paths import _source_of, fixed_script


def test_a_script_naming_the_copy_names_the_venv():
    script = b"#!/c/next/bin/python\n# -*- coding: utf-8 -*-\nimport re\nprint('/c/next/kept')\n"
    assert fixed_script(script, b"/c/next/", b"/v/") == b"#!/v/bin/python\n# -*- coding: utf-8 -*-\nimport re\nprint('/c/next/kept')\n"
    assert fixed_script(b"#!/usr/bin/python3\nx\n", b"/c/next/", b"/v/") is None


def test_the_sh_launcher_becomes_a_plain_shebang_when_the_venv_path_fits():
    long_copy = b"/" + b"c" * 120 + b"/"
    script = b"#!/bin/sh\n'''exec' " + long_copy + b"bin/python \"$0\" \"$@\"\n' '''\n# -*- coding: utf-8 -*-\nimport re\n"
    assert fixed_script(script, long_copy, b"/v/") == b"#!/v/bin/python\n# -*- coding: utf-8 -*-\nimport re\n"
    too_long = b"/" + b"v" * 120 + b"/"
    assert fixed_script(script, long_copy, too_long) == script.replace(long_copy, too_long)
    quoted = script.replace(long_copy + b"bin/python", b'"' + long_copy + b'bin/python"')
    assert fixed_script(quoted, long_copy, b"/v/") == b"#!/v/bin/python\n# -*- coding: utf-8 -*-\nimport re\n"


def test_bytecode_paths_map_to_their_source():
    assert _source_of("lib/python3.12/site-packages/pkg/__pycache__/mod.cpython-312.pyc") == "lib/python3.12/site-packages/pkg/mod.py"
    assert _source_of("pkg/__pycache__/__init__.cpython-312.opt-1.pyc") == "pkg/__init__.py"
