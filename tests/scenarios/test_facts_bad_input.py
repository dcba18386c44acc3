"""cuda_venv_facts through Ansible on bad input: a clear message or finding, never a traceback, nothing changed."""

import os
import subprocess
import sys

import pytest

from scenario_tools import codes, run_module, subjects

from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import make_dist
from ansible_collections.gpuops.cuda_venv.tests.support.tree_digest import tree_digest


@pytest.fixture
def venv(tmp_path):
    """A real venv (no pip: not needed) with a tiny 'torch' whose package imports."""
    path = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    site = next(path.glob("lib/python3*/site-packages"))
    make_dist(str(site), "torch", "2.9.1", files={"torch/__init__.py": b"__version__ = '2.9.1'\n"})
    return path, site


def facts(tmp_path, path, **args):
    return run_module(tmp_path, "cuda_venv_facts", dict(path=str(path), **args))


@pytest.mark.parametrize("make, message", [
    (lambda t: t / "absent", "does not exist"),
    (lambda t: (t / "file").write_text("x") and t / "file", "is not a directory"),
    (lambda t: (t / "plain").mkdir() or t / "plain", "is not a venv: no pyvenv.cfg"),
])
def test_not_a_venv_fails_with_a_message_naming_it(tmp_path, make, message):
    path = make(tmp_path)
    rc, result, output = facts(tmp_path, path)
    assert rc != 0
    assert message in result["msg"] and str(path) in result["msg"]
    assert "Traceback" not in output


def test_relative_path_is_refused(tmp_path):
    rc, result, _output = facts(tmp_path, "relative/venv")
    assert rc != 0 and "must be absolute" in result["msg"]


def test_broken_interpreter_is_a_finding(tmp_path, venv):
    path, _site = venv
    python = path / "bin" / "python"
    python.unlink()
    python.symlink_to(path / "bin" / "gone-python3")
    rc, result, output = facts(tmp_path, path)
    assert rc == 0, output
    found = result["ansible_facts"]["cuda_venv"]
    assert subjects(found, "PYTHON_UNUSABLE") == [str(python)]
    assert found["probe"]["ran"] is False


def test_malformed_metadata_and_record_are_findings_and_nothing_changes(tmp_path, venv):
    path, site = venv
    make_dist(str(site), "badcsv", "1.0", files={"badcsv.py": b"x = 1\n"}, record=b'badcsv.py,"sha256=abc\n')
    make_dist(str(site), "latin", "1.0", metadata=b"Metadata-Version: 2.1\nName: latin\nVersion: 1.0\nSummary: caf\xe9\n")
    make_dist(str(site), "escape", "1.0", record=b"../../../../../etc/passwd,,\n/etc/shadow,,\n")
    (site / "loop.so").symlink_to(site / "loop.so")
    make_dist(str(site), "corrupt", "1.0", files={"corrupt/libcorrupt.so.1": b"not an ELF file, long enough to hold an ELF header\n" * 4})
    digest = tree_digest(str(path))
    rc, result, output = facts(tmp_path, path, verify="hash")
    assert rc == 0, output
    found = result["ansible_facts"]["cuda_venv"]
    assert "badcsv 1.0" in subjects(found, "DIST_INFO_INVALID")
    assert "latin 1.0" in subjects(found, "DIST_INFO_INVALID")
    assert subjects(found, "RECORD_PATH_OUTSIDE_VENV") == ["escape 1.0"]
    assert subjects(found, "ELF_INVALID") == ["corrupt/libcorrupt.so.1"]
    assert "invalid ELF header" in [f for f in found["findings"] if f["code"] == "ELF_INVALID"][0]["message"]
    assert "Traceback" not in output
    assert tree_digest(str(path)) == digest
    assert os.path.exists("/etc/passwd")


def test_anchor_not_installed(tmp_path, venv):
    path, _site = venv
    rc, result, _output = facts(tmp_path, path, anchor="jax")
    assert rc == 0
    assert codes(result["ansible_facts"]["cuda_venv"], "error") == ["ANCHOR_NOT_INSTALLED"]


def test_bad_option_values_are_refused(tmp_path, venv):
    path, _site = venv
    rc, result, _output = facts(tmp_path, path, verify="md5")
    assert rc != 0 and "verify" in result["msg"] and "md5" in result["msg"]
    rc, result, _output = facts(tmp_path, path, probe_timeout=-1)
    assert rc != 0 and "probe_timeout must be positive" in result["msg"]


@pytest.mark.parametrize("anchor", ["torch;rm -rf /", "1torch", "torch..nn"])
def test_an_invalid_anchor_fails_with_a_message_naming_it_and_no_traceback(tmp_path, venv, anchor):
    path, _site = venv
    digest = tree_digest(str(path))
    rc, result, output = facts(tmp_path, path, anchor=anchor)
    assert rc != 0, output
    assert result["msg"] == "anchor %r is not an importable module name: pass one such as 'torch'" % anchor.replace("-", "_")
    assert "Traceback" not in output and "exception" not in result
    assert tree_digest(str(path)) == digest
