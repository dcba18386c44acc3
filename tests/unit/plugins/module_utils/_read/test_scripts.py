# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for scripts: a moved venv's rewritten console scripts are not damage; a missing interpreter is seen."""

from __future__ import annotations

import base64
import hashlib
import os

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.distributions import locate_entries, read_distributions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.record_check import check_all
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.scripts import check_scripts, former_roots
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import read_layout

BODY = b"# -*- coding: utf-8 -*-\nimport sys\nfrom tool.cli import main\nif __name__ == '__main__':\n    sys.exit(main())\n"
OLD = "/srv/old-place/venv"


def _record_row(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip("=")
    return "%s,sha256=%s,%d" % (path, digest, len(data))


def make_venv(tmp_path, script_on_disk, installed_as, command=True, entry_point=True, name="tool"):
    """A venv at tmp_path/venv with one distribution whose RECORD holds ``installed_as`` for bin/NAME, whose
    bytes on disk are ``script_on_disk``; pyvenv.cfg names OLD in its command line when ``command``."""
    root = tmp_path / "venv"
    site = root / "lib" / "python3.12" / "site-packages"
    (root / "bin").mkdir(parents=True)
    site.mkdir(parents=True)
    os.symlink("/usr/bin/python3", str(root / "bin" / "python"))
    cfg = "home = /usr/bin\nversion = 3.12.3\n" + ("command = /usr/bin/python3 -m venv %s\n" % OLD if command else "")
    (root / "pyvenv.cfg").write_text(cfg)
    (root / "bin" / name).write_bytes(script_on_disk)
    info = site / "tool-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tool\nVersion: 1.0\n")
    if entry_point:
        (info / "entry_points.txt").write_text("[console_scripts]\ntool = tool.cli:main\n")
    rows = [_record_row("../../../bin/%s" % name, installed_as), "tool-1.0.dist-info/RECORD,,"]
    (info / "RECORD").write_text("\n".join(rows) + "\n")
    return str(root)


def scripts_of(root, mode="size"):
    layout = read_layout(root)
    dists = read_distributions(layout.site_packages)
    locations = locate_entries(dists, root)
    states = check_all(dists, root, mode, locations=locations)
    return check_scripts(dists, layout, locations, states)


@pytest.mark.parametrize("mode", ["size", "hash"])
def test_a_shebang_rewritten_to_this_venv_is_relocated_exactly(tmp_path, mode):
    root = str(tmp_path / "venv")
    states, found = scripts_of(make_venv(tmp_path, b"#!%s/bin/python\n" % root.encode() + BODY,
                                         b"#!%s/bin/python\n" % OLD.encode() + BODY), mode)
    assert [s.modified for s in states.values()] == [()]
    assert list(found.relocated.values()) == [("../../../bin/tool",)]
    assert found.former_roots == (OLD,)


def test_a_body_edited_beside_the_rewritten_shebang_stays_modified_when_the_former_place_is_known(tmp_path):
    root = str(tmp_path / "venv")
    states, found = scripts_of(make_venv(tmp_path, b"#!%s/bin/python\n" % root.encode() + BODY + b"# edit\n",
                                         b"#!%s/bin/python\n" % OLD.encode() + BODY), "hash")
    assert [s.modified for s in states.values()] == [("../../../bin/tool",)]
    assert found.relocated == {}


def test_without_the_former_place_an_entry_point_script_counts_by_its_size(tmp_path):
    root = str(tmp_path / "venv")
    states, found = scripts_of(make_venv(tmp_path, b"#!%s/bin/python\n" % root.encode() + BODY,
                                         b"#!%s/bin/python\n" % OLD.encode() + BODY, command=False))
    assert [s.modified for s in states.values()] == [()]
    assert found.former_roots == ()


def test_without_the_former_place_a_script_that_is_no_entry_point_stays_modified(tmp_path):
    root = str(tmp_path / "venv")
    states, _found = scripts_of(make_venv(tmp_path, b"#!%s/bin/python\n" % root.encode() + BODY,
                                          b"#!%s/bin/python\n" % OLD.encode() + BODY, command=False, entry_point=False))
    assert [s.modified for s in states.values()] == [("../../../bin/tool",)]


def test_a_shebang_naming_another_interpreter_stays_modified(tmp_path):
    states, found = scripts_of(make_venv(tmp_path, b"#!/usr/bin/python3\n" + BODY,
                                         b"#!%s/bin/python\n" % OLD.encode() + BODY))
    assert [s.modified for s in states.values()] == [("../../../bin/tool",)]
    assert found.relocated == {} and found.interpreter_missing == ()


def test_a_script_whose_interpreter_is_gone(tmp_path):
    script = b"#!%s/bin/python\n" % OLD.encode() + BODY
    _states, found = scripts_of(make_venv(tmp_path, script, script))
    assert found.interpreter_missing == (("tool 1.0", "bin/tool", OLD + "/bin/python"),)
    assert found.relocated == {}


def test_pips_versioned_scripts_count_as_its_entry_points(tmp_path):
    root = str(tmp_path / "venv")
    states, _found = scripts_of(make_venv(tmp_path, b"#!%s/bin/python\n" % root.encode() + BODY,
                                          b"#!%s/bin/python\n" % OLD.encode() + BODY, command=False, name="tool3.12"))
    assert [s.modified for s in states.values()] == [()]


def test_former_roots_from_an_activate_script_not_rewritten(tmp_path):
    root = make_venv(tmp_path, BODY, BODY, command=False)
    with open(os.path.join(root, "bin", "activate"), "w") as handle:
        handle.write('deactivate () {\n  :\n}\nVIRTUAL_ENV="/data/envs/train"\nexport VIRTUAL_ENV\n')
    assert former_roots(read_layout(root)) == ("/data/envs/train",)
