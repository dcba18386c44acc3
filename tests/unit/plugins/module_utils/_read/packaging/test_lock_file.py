# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for lock_file: a pylock.toml or a pinned requirements file read, validated and selected for one venv."""

from __future__ import annotations

import builtins

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.lock_file import (
    PYLOCK, REQUIREMENTS, LockError, LockedPackage, LockedWheel, load_lock, lock_kind, parse_lock, select)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.requirements import marker_env_fallback

PLATFORM = {"platform_machine": "x86_64", "sys_platform": "linux", "platform_system": "Linux"}
ENV = marker_env_fallback("3.12.3", PLATFORM)
H1, H2, H3 = "a" * 64, "b" * 64, "c" * 64

PYLOCK_TEXT = '''
lock-version = "1.0"
created-by = "uv"
requires-python = ">=3.10"
extras = ["cuda"]
dependency-groups = ["dev"]
default-groups = []

[[packages]]
name = "torch"
version = "2.9.1"
wheels = [
  { url = "file:///wh/torch-2.9.1-cp312-cp312-manylinux_2_28_x86_64.whl", hashes = { sha256 = "%(h1)s" } },
  { url = "https://files.example/torch-2.9.1-cp312-cp312-win_amd64.whl", hashes = { sha256 = "%(h2)s" } },
]

[[packages]]
name = "nvidia-cudnn-cu12"
version = "9.10.2.21"
marker = "'cuda' in extras"
wheels = [{ path = "wheels/nvidia_cudnn_cu12-9.10.2.21-py3-none-manylinux_2_27_x86_64.whl", hashes = { sha256 = "%(h3)s" } }]

[[packages]]
name = "pytest"
version = "8.0.0"
marker = "'dev' in dependency_groups"
sdist = { url = "https://files.example/pytest-8.0.0.tar.gz", hashes = { sha256 = "%(h3)s" } }
''' % dict(h1=H1, h2=H2, h3=H3)


def test_pylock_names_are_pep_751s_and_other_toml_files_and_anything_else_is_a_requirements_file():
    names = ("pylock.toml", "/x/pylock.train.toml", "files/golden.pylock.toml", "requirements.txt", "pylock.toml.txt",
             "requirements.in")
    assert [lock_kind(n) for n in names] == [PYLOCK, PYLOCK, PYLOCK, REQUIREMENTS, REQUIREMENTS, REQUIREMENTS]


def test_a_pylock_selects_the_venvs_wheel_and_only_the_packages_its_markers_allow():
    lock = select(parse_lock("pylock.toml", PYLOCK_TEXT, "/locks"), ENV, "3.12")
    assert lock.packages == (LockedPackage("torch", "2.9.1", ("sha256:" + H1, "sha256:" + H2), LockedWheel(
        "torch-2.9.1-cp312-cp312-manylinux_2_28_x86_64.whl", "/wh/torch-2.9.1-cp312-cp312-manylinux_2_28_x86_64.whl",
        ("sha256:" + H1,)), "packages[0]"),)
    assert lock.pins() == (("torch", "2.9.1"),) and lock.hashed


def test_extras_and_groups_select_as_the_spec_says_and_a_relative_path_starts_at_the_locks_folder():
    lock = select(parse_lock("pylock.toml", PYLOCK_TEXT, "/locks"), ENV, "3.12", extras=["cuda"], groups=["dev"])
    assert [(p.name, p.where) for p in lock.packages] == [
        ("nvidia-cudnn-cu12", "packages[1]"), ("pytest", "packages[2]"), ("torch", "packages[0]")]
    cudnn = lock.package("nvidia-cudnn-cu12")
    assert cudnn.wheel.location == "/locks/wheels/nvidia_cudnn_cu12-9.10.2.21-py3-none-manylinux_2_27_x86_64.whl"
    assert lock.package("pytest").wheel is None and lock.package("pytest").hashes == ("sha256:" + H3,)
    unplaced = select(parse_lock("pylock.toml", PYLOCK_TEXT), ENV, "3.12", extras=["cuda"])
    assert unplaced.package("nvidia-cudnn-cu12").wheel.location == ""  # a controller's lock: its folder is not here


@pytest.mark.parametrize("change, message", [
    (dict(python="3.9.1"), "lock pylock.toml does not fit this venv (Python 3.9, x86_64): python_full_version '3.9.1' "
                           "in provided environment does not satisfy the Python version requirement '>=3.10'"),
    (dict(extras=["rocm"]), "lock pylock.toml does not fit this venv (Python 3.12, x86_64): Undeclared extras: rocm"),
    (dict(wheel="riscv64"), "lock pylock.toml does not fit this venv (Python 3.12, x86_64): No wheel found matching "
                            "the provided tags for package 'torch' at packages[0], and no sdist available as a fallback"),
])
def test_a_lock_for_another_python_or_platform_is_refused_naming_the_file(change, message):
    env = marker_env_fallback(change.get("python", "3.12.3"), PLATFORM)
    # a wheel for another platform than this host's (which runs the venv): no tag of the venv matches it
    text = PYLOCK_TEXT.replace("manylinux_2_28_x86_64", "manylinux_2_28_" + change["wheel"]) if "wheel" in change else PYLOCK_TEXT
    with pytest.raises(LockError) as caught:
        select(parse_lock("pylock.toml", text), env, env["python_version"], extras=change.get("extras", ()))
    assert str(caught.value) == message


def test_environments_no_expression_matches_is_refused():
    text = PYLOCK_TEXT.replace('requires-python = ">=3.10"', 'environments = ["sys_platform == \'win32\'"]')
    with pytest.raises(LockError, match="does not satisfy any of the environments specified in the lock file"):
        select(parse_lock("pylock.toml", text), ENV, "3.12")


@pytest.mark.parametrize("text, message", [
    ("lock-version = '1.0'\n[[packages]\n", "lock pylock.toml is not valid TOML: "),
    ("created-by = 'x'\npackages = []\n", "lock pylock.toml is not a valid pylock file (PEP 751): Missing required value "
                                          "in 'lock-version'"),
    ("lock-version = '2.0'\ncreated-by = 'x'\npackages = []\n", "pylock version 2.0 is not supported"),
    ("lock-version = '1.0'\ncreated-by = 'x'\n[[packages]]\nname = 'a'\nversion = '1'\n"
     "wheels = [{ url = 'https://x/b-1-py3-none-any.whl', hashes = { sha256 = 'aa' } }]\n",
     "Name in 'b-1-py3-none-any.whl' is not consistent with package name 'a' in 'packages[0].wheels[0]'"),
    ("lock-version = '1.0'\ncreated-by = 'x'\n[[packages]]\nname = 'a'\n"
     "directory = { path = '/src/a' }\n",
     "lock pylock.toml: packages[0] (a) is locked to a direct source (vcs, directory or archive)"),
    ("lock-version = '1.0'\ncreated-by = 'x'\n[[packages]]\nname = 'a'\n"
     "wheels = [{ url = 'https://x/a-1-py3-none-any.whl', hashes = { sha256 = 'aa' } }]\n",
     "lock pylock.toml: packages[0] (a) has no version: a declared state pins every version"),
])
def test_an_invalid_pylock_is_refused_naming_the_key(text, message):
    with pytest.raises(LockError) as caught:
        parse_lock("pylock.toml", text)
    assert message in str(caught.value)


REQUIREMENTS_TEXT = """# generated by uv pip compile --generate-hashes
filelock==4.3.1 \\
    --hash=sha256:%(h1)s \\
    --hash=sha256:%(h2)s
    # via torch
nvidia-cudnn-cu12==9.10.2.21 ; platform_machine == "x86_64" \\
    --hash=sha256:%(h3)s
pywin32==306 ; sys_platform == "win32" --hash=sha256:%(h3)s
Torch[opt]==2.9.1 --hash=sha256:%(h1)s  # the anchor
""" % dict(h1=H1, h2=H2, h3=H3)


def test_a_hash_pinned_requirements_file_selects_by_marker_and_keeps_every_hash_and_line():
    lock = select(parse_lock("requirements.txt", REQUIREMENTS_TEXT), ENV, "3.12")
    assert lock.kind == REQUIREMENTS and lock.hashed
    assert lock.packages == (
        LockedPackage("filelock", "4.3.1", ("sha256:" + H1, "sha256:" + H2), None, "line 2"),
        LockedPackage("nvidia-cudnn-cu12", "9.10.2.21", ("sha256:" + H3,), None, "line 6"),
        LockedPackage("torch", "2.9.1", ("sha256:" + H1,), None, "line 9"))


@pytest.mark.parametrize("text, message", [
    ("torch==2.9.1\nnumpy>=2\n", "lock r.txt line 2: 'numpy>=2' is not pinned to one version with =="),
    ("torch==2.9.*\n", "lock r.txt line 1: 'torch==2.9.*' is not pinned"),
    ("torch==2.9.1,<3\n", "lock r.txt line 1: 'torch==2.9.1,<3' is not pinned"),  # two specifiers (!= 1 as > 1)
    ("a==1\ntorch\n", "lock r.txt line 2: 'torch' is not pinned"),  # none (!= 1 as < 1)
    ("torch @ https://x/torch.whl\n", "lock r.txt line 1: 'torch @ https://x/torch.whl' is not pinned"),
    ("\n-r other.txt\n", "lock r.txt line 2: installer option '-r' is not read from a lock"),
    ("torch==2.9.1 --hash=md5:abc\n", "lock r.txt line 1: hash 'md5:abc' is not algorithm:hex"),
    ("a==1 --hash=sha256:%s\nb==2\nc==3\n" % H1, "lock r.txt: lines 2, 3 have no --hash while others do"),
    ("# nothing\n\n", "lock r.txt pins no package"),
    ("torch=2\n", "lock r.txt line 1: 'torch=2' is not a requirement"),
    ("a==1\nA==2\n", "lock r.txt pins a twice for this venv (line 1 and line 2)"),
])
def test_a_bad_requirements_file_is_refused_naming_the_line(text, message):
    with pytest.raises(LockError) as caught:
        select(parse_lock("r.txt", text), ENV, "3.12")
    assert message in str(caught.value)


def test_a_continuation_joins_the_line_whether_or_not_a_space_comes_before_the_backslash():
    """Mutation caught: ``line[:-1]`` to ``line[:~1]`` (the last character before the backslash dropped)."""
    lock = select(parse_lock("r.txt", "torch==2.9.1\\\n    --hash=sha256:%s\n" % H1), ENV, "3.12")
    assert lock.packages == (LockedPackage("torch", "2.9.1", ("sha256:" + H1,), None, "line 1"),)


def test_a_requirements_file_takes_no_extras_or_groups():
    with pytest.raises(LockError, match="lock_extras and lock_groups need a pylock.toml"):
        select(parse_lock("r.txt", "a==1\n"), ENV, "3.12", extras=["x"])


def test_load_lock_reads_the_nodes_file_or_the_controllers_text(tmp_path):
    (tmp_path / "pylock.toml").write_text(PYLOCK_TEXT)
    on_node = load_lock(str(tmp_path / "pylock.toml"))
    assert (on_node.name, on_node.kind, on_node.folder) == (str(tmp_path / "pylock.toml"), PYLOCK, str(tmp_path))
    given = load_lock("files/pylock.toml", PYLOCK_TEXT)
    assert (given.kind, given.folder) == (PYLOCK, None)
    with pytest.raises(LockError) as caught:
        load_lock(str(tmp_path / "absent.txt"))
    assert str(caught.value).startswith("lock %s cannot be read: [Errno 2]" % (tmp_path / "absent.txt"))


def test_the_lines_without_a_hash_are_named_eight_at_most():
    """Mutations caught: ``bare[:8]`` to ``bare[:9]`` and ``bare[:7]`` in _parse_requirements."""
    text = "a==1 --hash=sha256:%s\n" % H1 + "".join("p%d==1\n" % n for n in range(2, 12))
    with pytest.raises(LockError) as caught:
        parse_lock("r.txt", text)
    assert "lock r.txt: lines 2, 3, 4, 5, 6, 7, 8, 9 have no --hash while others do" in str(caught.value)


def test_a_marker_that_cannot_be_compared_is_refused_naming_the_line():
    """Mutation caught: UndefinedComparison taken out of _select_requirements' handled errors (``~=`` on a
    platform name is not a version comparison)."""
    with pytest.raises(LockError) as caught:
        select(parse_lock("r.txt", "a==1\nb==2 ; platform_machine ~= 'x86'\n"), ENV, "3.12")
    assert str(caught.value).startswith("lock r.txt line 2: cannot evaluate the marker of b==2; platform_machine ~= \"x86\": "
                                        "Undefined <Op('~=')> on 'x86_64' and 'x86'")


@pytest.mark.parametrize("error", ["UndefinedEnvironmentName", "TypeError", "ValueError"])
def test_marker_errors_of_older_packaging_mocked(monkeypatch, error):
    """Mutations caught: UndefinedEnvironmentName, TypeError and ValueError each taken out of _select_requirements'
    handled errors. packaging 26 raises none of them here, older releases do (a name missing from the environment,
    a value that is not a string, an unparsable version): the marker's evaluation is mocked to raise each."""
    from packaging import markers
    kind = getattr(markers, error, None) or getattr(builtins, error)

    def evaluate(_self, _environment=None):
        raise kind("raised by the mock")
    monkeypatch.setattr(markers.Marker, "evaluate", evaluate)
    with pytest.raises(LockError, match="lock r.txt line 1: cannot evaluate the marker of a==1; python_version > "):
        select(parse_lock("r.txt", "a==1 ; python_version > '3'\n"), ENV, "3.12")


def test_a_long_lock_hashed_on_every_line_is_read():
    """Mutation caught: ``len(hashed) != len(lines)`` to ``is not`` in _parse_requirements (equal counts above 256
    are two int objects in CPython)."""
    text = "".join("p%d==1 --hash=sha256:%s\n" % (n, H1) for n in range(300))
    assert len(parse_lock("r.txt", text).lines) == 300
