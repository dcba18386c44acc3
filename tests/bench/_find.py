# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""cuda_venv_find's walk on a container-sized tree (200,000 files, five CUDA venvs) against ``find ROOT -name
pyvenv.cfg`` on the same tree (issue 32: at most 2 s).

Benchmark support for gpuops.cuda_venv: not part of the collection's API.

The tree is generated once into the bench cache (a stamp marks it finished): homes with projects of source folders,
a /usr/local-like tree of libraries, and five venvs made by ``python -m venv --without-pip`` whose site-packages hold
dist-info folders of torch and its nvidia wheels and 2,000 files each (what the walk must not enter).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

from . import _commands as cmd
from ._measure import measure, Step
from ._table import Goal, Table

FILES = 200_000
VENVS = 5
VENV_FILES = 2_000
PER_FOLDER = 20
GOAL_S = 2.0
STAMP = ".tree-done"
_CODE = ("import sys; from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_find import find_venvs; "
         "found = find_venvs([sys.argv[1]], processes=sys.argv[2] == 'processes'); "
         "assert len([v for v in found.venvs if v.found_by == 'walk']) == %d, found.as_dict()" % VENVS)


def tree(cache: Path, log: Callable[[str], None]) -> Path:
    """The generated tree (built once): FILES files in all, VENVS CUDA venvs among them."""
    root = cache / ("find-tree-%d-%d" % (FILES, VENVS))
    if (root / STAMP).is_file():
        return root
    shutil.rmtree(root, ignore_errors=True)
    log("bench: generating a tree of %d files with %d venvs in %s" % (FILES, VENVS, root))
    for number in range(VENVS):
        venv = root / ("home/user%d/project/.venv" % number)
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        site = next((venv / "lib").glob("python3.*")) / "site-packages"
        for name in ("torch-2.9.1+cu128", "nvidia_cudnn_cu12-9.10.2.21", "nvidia_nccl_cu12-2.27.5"):
            info = site / (name + ".dist-info")
            info.mkdir(parents=True)
            (info / "INSTALLER").write_text("pip\n")
            (info / "RECORD").write_text("%s/RECORD,,\n" % info.name)
        _fill(site / "torch", VENV_FILES)
    rest = FILES - _count(root)
    _fill(root / "usr/local/lib", rest // 2)
    for number in range(VENVS):
        _fill(root / ("home/user%d/data" % number), (rest - rest // 2) // VENVS + (rest - rest // 2) % VENVS * (number == 0))
    (root / STAMP).write_text("")
    return root


def _fill(folder: Path, count: int) -> None:
    """``count`` empty files under ``folder``, PER_FOLDER per folder, folders nested two deep."""
    for index in range(count):
        sub = folder / ("d%d" % (index // (PER_FOLDER * PER_FOLDER))) / ("e%d" % (index // PER_FOLDER))
        if index % PER_FOLDER == 0:
            sub.mkdir(parents=True, exist_ok=True)
        (sub / ("f%d.py" % index)).write_bytes(b"")


def _count(root: Path) -> int:
    return sum(1 for path in root.rglob("*") if (not path.is_dir() or path.is_symlink()) and path.name != STAMP)


def run(repo: Path, cache: Path, runs: int, log: Callable[[str], None]) -> Table:
    root = tree(cache, log)
    files = _count(root)
    table = Table("Finding venvs: a tree of %d files with %d CUDA venvs (cuda_venv_find's walk)" % (files, VENVS),
                  notes=["Warm cache, one root; `find` lists every folder as the walk does but stats nothing either."])
    table.add("find", "`find ROOT -name pyvenv.cfg`", measure(lambda: [Step(("find", str(root), "-name", "pyvenv.cfg"))],
                                                              runs, warmup=True), label="find")
    for key, what in (("walk", "find_venvs, roots only (a child Python)"), ("processes", "find_venvs, roots and /proc")):
        step = Step((sys.executable, "-c", _CODE, str(root), key), cmd.engine_env(), str(repo))
        table.add(key, what, measure(lambda step=step: [step], runs, warmup=True), anchor="find", goal=Goal(max_seconds=GOAL_S))
    return table
