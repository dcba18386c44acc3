# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the cuda_venv_find module's main(): real module args, real venvs; in a child process, a folder root cannot
read (root without CAP_DAC_OVERRIDE, through setpriv) and a real proc filesystem mounted under a root (unshare)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import ansible
import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpuops.cuda_venv.plugins.modules import cuda_venv_find
from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import make_dist

# .../ansible_collections/gpuops/cuda_venv/plugins/modules/cuda_venv_find.py, five folders up
COLLECTIONS = str(Path(cuda_venv_find.__file__).parents[5])
# The child imports ansible from where this process does (ansible-test's units venv puts it on PYTHONPATH).
CHILD_PATH = os.pathsep.join([COLLECTIONS, str(Path(ansible.__file__).parents[1])]
                             + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])


def run_main(capsys, args):
    """main() with ``args``; returns (exit code, the result it printed)."""
    with patch_module_args(args):
        with pytest.raises(SystemExit) as caught:
            cuda_venv_find.main()
    return caught.value.code, json.loads(capsys.readouterr().out)


def _cuda_venv(path, version="2.9.1+cu128"):
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    make_dist(str(path / "lib" / ("python%d.%d" % sys.version_info[:2]) / "site-packages"), "torch", version)
    return path


def test_the_venvs_under_the_roots_with_notes(capsys, tmp_path):
    _cuda_venv(tmp_path / "opt" / "a" / ".venv")
    rc, result = run_main(capsys, {"roots": [str(tmp_path / "opt"), str(tmp_path / "none")], "processes": False})
    assert (rc, result["changed"]) == (0, False)
    assert [(v["path"], v["anchor_version"], v["cuda_major"]) for v in result["venvs"]] == \
        [(str(tmp_path / "opt" / "a" / ".venv"), "2.9.1+cu128", 12)]
    assert result["notes"] == ["root %s does not exist" % (tmp_path / "none")]
    assert result["scanned_dirs"] == 3  # opt, opt/a, opt/a/.venv


def test_paths_keep_the_venvs_a_glob_matches(capsys, tmp_path):
    for name in ("a", "b", "c"):
        _cuda_venv(tmp_path / "opt" / name / ".venv")
    rc, result = run_main(capsys, {"roots": [str(tmp_path / "opt")], "processes": False,
                                   "paths": [str(tmp_path / "opt" / "[ab]" / "*"), "/nowhere/*"]})
    assert rc == 0
    assert [v["path"] for v in result["venvs"]] == [str(tmp_path / "opt" / n / ".venv") for n in ("a", "b")]


def test_a_relative_root_is_refused(capsys):
    rc, result = run_main(capsys, {"roots": ["/opt", "venvs", "./x"]})
    assert (rc, result["msg"]) == (1, "roots must be absolute folders, got 'venvs', './x'")


def test_the_default_roots_are_the_documented_ones():
    import yaml  # pylint: disable=import-outside-toplevel
    doc = yaml.safe_load(cuda_venv_find.DOCUMENTATION)
    assert doc["options"]["roots"]["default"] == list(cuda_venv_find.DEFAULT_ROOTS)


def test_an_unreadable_folder_and_a_proc_mount_are_notes_in_a_child(tmp_path):
    if os.geteuid() != 0 or not shutil.which("setpriv") or not shutil.which("unshare"):
        pytest.skip("needs root, util-linux's setpriv and unshare: a root without CAP_DAC_OVERRIDE, a proc mount")
    root = tmp_path / "home"
    _cuda_venv(root / "alice" / ".venv")
    _cuda_venv(root / "carol" / ".venv")
    (root / "carol").chmod(0o000)
    (root / "proc").mkdir()
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"roots": [str(root)], "processes": False}}))
    script = 'mount -t proc proc "$1" && exec setpriv --inh-caps=-all --bounding-set=-dac_override,-dac_read_search -- "$2" -m "$3" "$4"'
    try:
        proc = subprocess.run(["unshare", "--mount", "sh", "-c", script, "sh", str(root / "proc"), sys.executable,
                               "ansible_collections.gpuops.cuda_venv.plugins.modules.cuda_venv_find", str(args)],
                              capture_output=True, text=True, check=False, env=dict(os.environ, PYTHONPATH=CHILD_PATH))
    finally:
        (root / "carol").chmod(0o755)
    assert proc.stdout.strip().startswith("{"), proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert [v["path"] for v in result["venvs"]] == [str(root / "alice" / ".venv")]
    assert sorted(result["notes"]) == ["cannot read %s: Permission denied" % (root / "carol"),
                                       "skipped %s (proc filesystem)" % (root / "proc")]
