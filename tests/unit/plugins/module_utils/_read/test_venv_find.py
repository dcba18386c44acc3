# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for _read/venv_find.py on a fake root filesystem under tmp: real venvs made by venv and uv, small real wheels
installed by real pip and uv, dist-info folders where a wheel adds nothing, a symlink loop, a real sleeping process."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_find import find_venvs, read_venv
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import swap_dir_of
from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import make_dist
from ansible_collections.gpuops.cuda_venv.tests.support.wheel_helpers import make_wheel

UV = Path(sys.executable).parent / "uv"
PLACES = ("root", "home", "opt", "srv", "workspace")
PY = "%d.%d" % sys.version_info[:2]


def _venv(path, uv=False):
    if uv:
        subprocess.run([str(UV), "venv", "-q", "--python", sys.executable, str(path)], check=True,
                       env=dict(os.environ, UV_NO_CONFIG="1", UV_PYTHON_DOWNLOADS="never"))
    else:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    return path


def _site(venv):
    return venv / "lib" / ("python" + PY) / "site-packages"


@pytest.fixture(scope="module")
def fs(tmp_path_factory):
    """The fake root filesystem ``fs`` (the places people keep venvs) and a venv outside it."""
    top = tmp_path_factory.mktemp("find")
    fs = top / "fs"
    wheels = top / "wheels"
    for name, version in (("torch", "2.9.1+cu128"), ("nvidia-cudnn-cu12", "9.10.2.21"), ("torch", "2.14.1+cu130"),
                          ("nvidia-cudnn-cu13", "9.24.0.43"), ("requests", "2.32.3")):
        module = name.replace("-", "_")
        make_wheel(str(wheels), name, version, {"%s/__init__.py" % module: b"x = 1\n"})
    links = ["--no-index", "--find-links", str(wheels)]
    # /root/venv: the incident's, made by venv, filled by pip
    pip_venv = _venv(fs / "root" / "venv")
    subprocess.run([sys.executable, "-m", "pip", "-q", "--python", str(pip_venv / "bin" / "python"), "install"] + links
                   + ["torch==2.9.1+cu128", "nvidia-cudnn-cu12==9.10.2.21"], check=True)
    # /opt/svc/.venv: a service's, made and filled by uv
    uv_venv = _venv(fs / "opt" / "svc" / ".venv", uv=True)
    subprocess.run([str(UV), "pip", "install", "-q", "--python", str(uv_venv / "bin" / "python")] + links
                   + ["torch==2.14.1+cu130", "nvidia-cudnn-cu13==9.24.0.43"], check=True,
                   env=dict(os.environ, UV_NO_CONFIG="1", UV_NO_CACHE="1"))
    # ~bob/proj/.venv: contaminated (a cu13 cuDNN over the cu12 torch stack)
    bob = _site(_venv(fs / "home" / "bob" / "proj" / ".venv"))
    make_dist(str(bob), "torch", "2.9.1+cu128")
    make_dist(str(bob), "nvidia-cudnn-cu12", "9.10.2.21")
    make_dist(str(bob), "nvidia-cudnn-cu13", "9.24.0.43", installer=b"uv\n")
    # ~alice/venvs/jax, and her pip install --user of cupy
    make_dist(str(_site(_venv(fs / "home" / "alice" / "venvs" / "jax"))), "jax", "0.10.2")
    make_dist(str(_site(fs / "home" / "alice" / "venvs" / "jax")), "jax-cuda12-plugin", "0.10.2")
    make_dist(str(fs / "home" / "alice" / ".local" / "lib" / "python3.11" / "site-packages"), "cupy-cuda12x", "14.2.0")
    # no CUDA stack: a plain venv, and a venv with only NVML's bindings
    subprocess.run([sys.executable, "-m", "pip", "-q", "--python", str(_venv(fs / "srv" / "plain") / "bin" / "python"),
                    "install"] + links + ["requests"], check=True)
    make_dist(str(_site(_venv(fs / "srv" / "nvml"))), "nvidia-ml-py", "13.580.82")
    # symlinks: a loop, a link to an ancestor, a link to a CUDA venv outside the roots
    outside = _venv(top / "outside" / "venv")
    make_dist(str(_site(outside)), "torch", "2.9.1+cu128")
    (fs / "home" / "alice" / "loop").symlink_to("loop")
    (fs / "home" / "alice" / "a").symlink_to("b")
    (fs / "home" / "alice" / "b").symlink_to("a")
    (fs / "opt" / "up").symlink_to("..")
    (fs / "opt" / "elsewhere").symlink_to(outside)
    return top


def _roots(fs):
    return [str(fs / "fs" / place) for place in PLACES]


def _by_path(found):
    return {v.path: v for v in found.venvs}


def test_the_cuda_venvs_under_the_roots_and_what_each_holds(fs):
    found = find_venvs(_roots(fs), processes=False)
    top = fs / "fs"
    assert sorted(_by_path(found)) == sorted(str(p) for p in (
        top / "root" / "venv", top / "opt" / "svc" / ".venv", top / "home" / "bob" / "proj" / ".venv",
        top / "home" / "alice" / "venvs" / "jax", top / "home" / "alice" / ".local" / "lib" / "python3.11" / "site-packages"))
    assert found.notes == ["root %s does not exist" % (top / "workspace")]
    venvs = _by_path(found)
    pip_venv = venvs[str(top / "root" / "venv")]
    assert (pip_venv.kind, pip_venv.anchor, pip_venv.anchor_version, pip_venv.cuda_major, pip_venv.cuda_majors) == \
        ("venv", "torch", "2.9.1+cu128", 12, [12])
    assert (pip_venv.installer, pip_venv.python_version.rsplit(".", 1)[0], pip_venv.found_by) == ("pip", PY, "walk")
    assert pip_venv.interpreter == str(top / "root" / "venv" / "bin" / "python")
    assert pip_venv.base_interpreter and not pip_venv.base_interpreter.startswith(str(top))
    assert (pip_venv.distributions, pip_venv.cuda_distributions) == (2, ["nvidia-cudnn-cu12"])
    assert pip_venv.size > 0 and pip_venv.last_install.endswith("Z")
    uv_venv = venvs[str(top / "opt" / "svc" / ".venv")]
    assert (uv_venv.anchor_version, uv_venv.cuda_major, uv_venv.cuda_majors, uv_venv.installer) == ("2.14.1+cu130", 13, [13], "uv")
    bob = venvs[str(top / "home" / "bob" / "proj" / ".venv")]
    assert (bob.cuda_major, bob.cuda_majors, bob.installer) == (12, [12, 13], "pip")
    assert bob.cuda_distributions == ["nvidia-cudnn-cu12", "nvidia-cudnn-cu13"]
    jax = venvs[str(top / "home" / "alice" / "venvs" / "jax")]
    assert (jax.anchor, jax.anchor_version, jax.cuda_major) == ("jax", "0.10.2", 12)
    user = venvs[str(top / "home" / "alice" / ".local" / "lib" / "python3.11" / "site-packages")]
    assert (user.kind, user.interpreter, user.python_version, user.anchor, user.cuda_major) == ("user", None, "3.11", "cupy-cuda12x", 12)


def test_the_size_is_what_record_lists(fs):
    venv = read_venv(str(fs / "fs" / "home" / "bob" / "proj" / ".venv"), [])
    site = _site(fs / "fs" / "home" / "bob" / "proj" / ".venv")
    expected = sum(int(line.rsplit(",", 1)[1]) for record in site.glob("*.dist-info/RECORD")
                   for line in record.read_text().splitlines() if line.rsplit(",", 1)[1])
    assert venv.size == expected and expected > 0


def test_a_root_inside_another_is_walked_once_and_a_root_symlink_resolved(fs, tmp_path):
    (tmp_path / "home").symlink_to(fs / "fs" / "home")
    (tmp_path / "loop").symlink_to("loop")
    roots = [str(fs / "fs" / "home"), str(fs / "fs" / "home" / "bob"), str(tmp_path / "home"), str(tmp_path / "loop")]
    found = find_venvs(roots, processes=False)
    assert len(found.venvs) == 3
    assert [n.split(":")[0] for n in found.notes] == ["root %s cannot be resolved" % (tmp_path / "loop")]


def test_a_venv_removed_before_it_is_read_is_a_note(tmp_path):
    venv = _venv(tmp_path / "gone")
    shutil.rmtree(str(venv))
    notes = []
    assert read_venv(str(venv), notes) is None
    assert notes == ["%s vanished while scanned" % venv]


def test_a_running_process_names_its_venv_outside_the_roots(fs):
    python = fs / "outside" / "venv" / "bin" / "python"
    proc = subprocess.Popen([str(python), "-c", "import time; time.sleep(60)"], cwd="/")
    try:
        deadline = time.time() + 10
        while time.time() < deadline and not Path("/proc/%d/cmdline" % proc.pid).read_bytes().startswith(str(python).encode()):
            time.sleep(0.05)
        found = find_venvs([str(fs / "fs" / "srv")])
    finally:
        proc.kill()
        proc.wait()
    venv = _by_path(found)[str(fs / "outside" / "venv")]
    assert proc.pid in venv.processes and (venv.found_by, venv.anchor, venv.cuda_major) == ("process", "torch", 12)


def test_mount_points_of_pseudo_and_network_filesystems_are_skipped(tmp_path):
    share = tmp_path / "r" / "my share"
    make_dist(str(_site(_venv(share / "venv"))), "torch", "2.9.1+cu128")
    make_dist(str(_site(_venv(tmp_path / "r" / "local"))), "torch", "2.9.1+cu128")
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(
        "22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
        "30 1 0:40 / %s rw - nfs4 server:/export rw\n"
        "31 1 8:1 / / rw - ext4 /dev/sda1 rw\n" % str(share).replace(" ", "\\040"))
    found = find_venvs([str(tmp_path / "r")], processes=False, mountinfo=str(mountinfo))
    assert [v.path for v in found.venvs] == [str(tmp_path / "r" / "local")]
    assert found.notes == ["skipped %s (nfs4 filesystem)" % share]


def test_the_collections_own_repair_state_is_never_a_venv_and_a_venvs_generations_come_with_it(tmp_path):
    """A swapped repair's generations (PARENT/.NAME.cuda_venv/previous/RUN, whole venvs), its copy (next/) and the
    venv's snapshots (NAME/.cuda_venv/snapshots/N) hold pyvenv.cfg and dist-infos: none is listed; the venv is, once,
    with its generations. A folder merely named like a swap dir (no venv beside it, no swap layout) is walked."""
    root = tmp_path / "r"
    venv = _venv(root / "proj" / ".venv")
    make_dist(str(_site(venv)), "torch", "2.9.1+cu128")
    swap_dir = Path(swap_dir_of(str(venv)))  # PARENT/..venv.cuda_venv
    for run, cudnn in (("20261205T162637Z-1385-6722", "9.24.0.43"), ("20261205T170102Z-1401-1200", "9.10.2.21")):
        generation = _venv(swap_dir / "previous" / run)
        make_dist(str(_site(generation)), "torch", "2.9.1+cu128", files={"torch/__init__.py": b"x" * 1000})
        make_dist(str(_site(generation)), "nvidia-cudnn-cu13", cudnn)
    (swap_dir / "journal.jsonl").write_text('{"kind": "swap", "step": "done"}\n')
    make_dist(str(_site(_venv(swap_dir / "next"))), "torch", "2.9.1+cu128")
    make_dist(str(_site(_venv(venv / ".cuda_venv" / "snapshots" / "1"))), "torch", "2.9.1+cu128")
    decoy = root / "other" / ".named.cuda_venv" / "venv"
    make_dist(str(_site(_venv(decoy))), "torch", "2.14.1+cu130")

    found = find_venvs([str(root)], processes=False)
    assert [v.path for v in found.venvs] == [str(decoy), str(venv)]
    generations = _by_path(found)[str(venv)].generations
    assert (generations["count"], generations["newest"]) == (2, "20261205T170102Z-1401-1200")
    assert generations["size"] > 2000 and generations["newest_time"] == "2026-12-05T17:01:02Z"
    assert _by_path(found)[str(decoy)].generations is None and found.notes == []

    for inside in (swap_dir, swap_dir / "previous", venv / ".cuda_venv"):
        found = find_venvs([str(inside)], processes=False)
        assert found.venvs == [] and found.notes and all("is repair state of the venv %s" % venv in n for n in found.notes)
