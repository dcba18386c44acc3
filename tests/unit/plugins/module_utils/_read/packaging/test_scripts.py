# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for scripts: a moved venv's rewritten console scripts are not damage; a missing interpreter is seen."""

from __future__ import annotations

import base64
import hashlib
import os
import shutil

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.distributions import locate_entries, read_distributions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.record_check import check_all
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.scripts import check_scripts, former_roots
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


def scripts_of(root, mode="size", judged_as=None):
    layout = read_layout(root)
    dists = read_distributions(layout.site_packages)
    locations = locate_entries(dists, root)
    states = check_all(dists, root, mode, locations=locations)
    return check_scripts(dists, layout, locations, states, judged_as)


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


def swap_copy(tmp_path, command):
    """A moved venv at tmp_path/venv (its script names it, RECORD the former place OLD; pyvenv.cfg names OLD when
    ``command``, else the venv itself, as when everything was rewritten) and its swap copy beside it."""
    root = str(tmp_path / "venv")
    make_venv(tmp_path, b"#!%s/bin/python\n" % root.encode() + BODY, b"#!%s/bin/python\n" % OLD.encode() + BODY,
              command=False)
    with open(os.path.join(root, "pyvenv.cfg"), "a") as handle:
        handle.write("command = /usr/bin/python3 -m venv %s\n" % (OLD if command else root))
    copy = str(tmp_path / ".venv.cuda_venv" / "next")
    shutil.copytree(root, copy, symlinks=True)
    return root, copy


@pytest.mark.parametrize("command", [True, False], ids=["former-place-known", "no-trace"])
@pytest.mark.parametrize("mode", ["size", "hash"])
def test_a_swap_copy_judged_as_the_live_venv_keeps_its_scripts_relocated(tmp_path, command, mode):
    live, copy = swap_copy(tmp_path, command)
    states, found = scripts_of(copy, mode, judged_as=live)
    assert [s.modified for s in states.values()] == [()]
    assert list(found.relocated.values()) == [("../../../bin/tool",)]
    assert found.former_roots == ((OLD,) if command else ())
    assert found.interpreter_missing == ()


@pytest.mark.parametrize("command", [True, False], ids=["former-place-known", "no-trace"])
def test_a_swap_copy_judged_as_itself_sees_the_live_venvs_interpreter_as_another(tmp_path, command):
    """Why a copy must be judged as the venv it becomes: as itself, its scripts name another venv."""
    live, copy = swap_copy(tmp_path, command)
    states, found = scripts_of(copy)
    assert [s.modified for s in states.values()] == [("../../../bin/tool",)]
    assert found.relocated == {}
    assert found.former_roots == ((OLD,) if command else (live,))


def test_a_copy_is_judged_by_its_own_interpreter_whether_the_live_one_exists_or_not(tmp_path):
    live, copy = swap_copy(tmp_path, True)
    shutil.rmtree(live)
    states, found = scripts_of(copy, "hash", judged_as=live)
    assert [s.modified for s in states.values()] == [()] and found.interpreter_missing == ()
    os.unlink(os.path.join(copy, "bin", "python"))
    _states, found = scripts_of(copy, "hash", judged_as=live)
    assert found.interpreter_missing == (("tool 1.0", "bin/tool", live + "/bin/python"),)


def test_a_copy_judged_as_the_live_venv_still_refuses_another_interpreter(tmp_path):
    live, copy = swap_copy(tmp_path, True)
    other = b"#!%s/bin/python\n" % str(tmp_path / "elsewhere").encode() + BODY
    with open(os.path.join(copy, "bin", "tool"), "wb") as handle:
        handle.write(other)
    os.makedirs(str(tmp_path / "elsewhere" / "bin"))
    os.symlink("/usr/bin/python3", str(tmp_path / "elsewhere" / "bin" / "python"))
    states, found = scripts_of(copy, "hash", judged_as=live)
    assert [s.modified for s in states.values()] == [("../../../bin/tool",)] and found.relocated == {}
