# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The exact commands the bench times: the engine's children, pip, uv, sha256sum, and the fix typed by hand.

Benchmark support for gpuops.cuda_venv: not part of the collection's API.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import List, Optional, Sequence

from ._files import FileSet
from ._measure import Step

# The incident's fix by hand: the four cu13 wheels and the two CUDA 13 ones they pulled in, out; the four cu12
# wheels they gutted, back by name from the wheelhouse.
CU13_WHEELS = ("nvidia-cudnn-cu13", "nvidia-cusparselt-cu13", "nvidia-nccl-cu13", "nvidia-nvshmem-cu13")
PULLED_IN = ("nvidia-cublas", "nvidia-cuda-nvrtc")
CU12_WHEELS = ("nvidia-cudnn-cu12==9.10.2.21", "nvidia-cusparselt-cu12==0.7.1", "nvidia-nccl-cu12==2.27.5",
               "nvidia-nvshmem-cu12==3.3.20")
TORCH_CU12 = "torch==2.9.1"


def hermetic_env(extra: Optional[dict] = None) -> dict:
    """This environment without PYTHON*, PIP_* and UV_* and with no pip configuration file (as the scenario tests)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_", "UV_"))}
    env.update({"PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "LC_ALL": "C.UTF-8"})
    env.update(extra or {})
    return env


def engine_env(extra: Optional[dict] = None) -> dict:
    """hermetic_env plus this process's PYTHONPATH, so that children import the collection from build/collections."""
    env = hermetic_env(extra)
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def python_of(venv: Path) -> str:
    return str(Path(venv) / "bin" / "python")


def facts(venv: Path, verify: str, anchor: str, cwd: str, probe: bool = True, history_cost: Optional[Path] = None,
          index: bool = False) -> Step:
    argv = (sys.executable, "-m", "tests.bench._facts_child", str(venv), verify, anchor) + (() if probe else ("noprobe",))
    argv += ("index",) if index else ()
    argv += ("history-cost=%s" % history_cost,) if history_cost else ()
    return Step(argv, engine_env(), cwd)


def pip_list(venv: Path) -> Step:
    return Step((python_of(venv), "-m", "pip", "list"), hermetic_env())


def pip_check(venv: Path) -> Step:
    # pip check exits 1 when it finds broken requirements: still a finished run.
    return Step((python_of(venv), "-m", "pip", "check"), hermetic_env(), ok_rcs=(0, 1))


def sha256sum(files: FileSet, jobs: int) -> Step:
    """coreutils sha256sum over the list, ``jobs`` processes at once (xargs -P)."""
    return Step(("xargs", "-0", "-P", str(jobs), "-n", "256", "sha256sum"), hermetic_env(), stdin=str(files.list_path))


def hash_reader(files: FileSet, threads: int, cwd: str) -> Step:
    return Step((sys.executable, "-m", "tests.bench._hash_files", str(files.list_path), str(threads)), engine_env(), cwd)


def repair(venv: Path, backend: str, uv: str, links: Sequence[Path], cwd: str, uv_cache: str,
           strategy: str = "in_place") -> Step:
    argv = (sys.executable, "-m", "tests.bench._repair_child", str(venv), backend, uv if backend == "uv" else "", strategy)
    return Step(argv + tuple(str(link) for link in links), engine_env({"UV_CACHE_DIR": uv_cache}), cwd)


def probe(venv: Path, cwd: str, pycache: str, loader_only: bool) -> Step:
    """The repair's test after a batch as probe.probe_import runs it: the import, or the light loader test; bytecode
    in a prefix folder as the repair keeps it. Exit 1 (the anchor did not load) is still a finished run."""
    from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.probe import IMPORT_SCRIPT  # pylint: disable=import-outside-toplevel
    argv = (python_of(venv), "-I", "-X", "pycache_prefix=" + pycache, "-c", IMPORT_SCRIPT, "torch")
    return Step(argv + (("loader",) if loader_only else ()), hermetic_env(), cwd, ok_rcs=(0, 1))


def python_c(venv: Path, code: str, cwd: str) -> Step:
    """``VENV/bin/python -c CODE`` from ``cwd`` (an empty directory: nothing there can shadow a module)."""
    return Step((python_of(venv), "-c", code), hermetic_env(), cwd)


def import_probe(venv: Path, cwd: str) -> Step:
    """The one import a careful person runs after the fix."""
    return python_c(venv, "import torch; print(torch.backends.cudnn.version())", cwd)


def _links(flag_links: Sequence[Path]) -> List[str]:
    args = ["--no-index"]
    for link in flag_links:
        args += ["--find-links", str(link)]
    return args


def pip_fix(venv: Path, links: Sequence[Path], cwd: str, remove: Sequence[str] = CU13_WHEELS + PULLED_IN) -> List[Step]:
    pip = (python_of(venv), "-m", "pip")
    return [Step(pip + ("uninstall", "--yes") + tuple(remove), hermetic_env()),
            Step(pip + ("install", "--force-reinstall", "--no-deps", *_links(links)) + CU12_WHEELS, hermetic_env()),
            import_probe(venv, cwd)]


def uv_fix(venv: Path, uv: str, links: Sequence[Path], cwd: str, uv_cache: str,
           remove: Sequence[str] = CU13_WHEELS + PULLED_IN) -> List[Step]:
    env = hermetic_env({"UV_CACHE_DIR": uv_cache})
    reinstall = [arg for req in CU12_WHEELS for arg in ("--reinstall-package", req.partition("==")[0])]
    return [Step((uv, "pip", "uninstall", "--python", python_of(venv)) + tuple(remove), env),
            Step((uv, "pip", "install", "--python", python_of(venv), "--no-deps", *reinstall, *_links(links))
                 + CU12_WHEELS, env),
            import_probe(venv, cwd)]


def pip_rebuild(new_venv: Path, links: Sequence[Path], cwd: str, python: str = sys.executable) -> List[Step]:
    """``python``: the interpreter the broken venv was made with (its wheels are built for it)."""
    return [Step((python, "-m", "venv", str(new_venv)), hermetic_env()),
            Step((python_of(new_venv), "-m", "pip", "install", *_links(links), TORCH_CU12), hermetic_env()),
            import_probe(new_venv, cwd)]


def uv_rebuild(new_venv: Path, uv: str, links: Sequence[Path], cwd: str, uv_cache: str,
               python: str = sys.executable) -> List[Step]:
    env = hermetic_env({"UV_CACHE_DIR": uv_cache})
    return [Step((uv, "venv", "--python", python, str(new_venv)), env),
            Step((uv, "pip", "install", "--python", python_of(new_venv), *_links(links), TORCH_CU12), env),
            import_probe(new_venv, cwd)]


def ansible_facts(venv: Path, repo: str, home: Path) -> Step:
    """The facts module through Ansible itself: ``ansible localhost -m gpuops.cuda_venv.cuda_venv_facts``."""
    return ansible_adhoc("gpuops.cuda_venv.cuda_venv_facts", '{"path": "%s"}' % venv, repo, home)


def ansible_adhoc(module: str, args: str, repo: str, home: Path) -> Step:
    """``ansible localhost -m MODULE -a ARGS`` with the repository's ansible.cfg: a task through the same runner."""
    env = {k: v for k, v in hermetic_env().items() if not k.startswith("ANSIBLE_")}
    env.update({"ANSIBLE_CONFIG": str(Path(repo) / "ansible.cfg"), "ANSIBLE_HOME": str(home / "home"),
                "ANSIBLE_LOCAL_TEMP": str(home / "tmp"), "ANSIBLE_NOCOLOR": "1", "XDG_CACHE_HOME": str(home / "xdg-cache")})
    argv = (str(Path(sys.executable).parent / "ansible"), "localhost", "-m", module, "-a", args)
    return Step(argv, env, repo)
