# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Real torch venvs for the acceptance tests: cheap copies from uv's cache, then the incident's steps with real pip.

Acceptance-test support for gpuops.cuda_venv: not part of the collection's API.

A copy is ``python3.11 -m venv`` (its own pip and setuptools) plus ``uv pip install --link-mode hardlink
--no-index --find-links WHEELHOUSE torch==X``: once uv's cache (``CACHE/uv``) holds the unpacked wheels, a 6.7 GB
venv takes seconds and almost no disk. Its files share inodes with uv's cache, so nothing here writes into an
existing file: pip unlinks before it writes, and the truncation step replaces the file instead of truncating it.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from acceptance_fetch import GB, AcceptanceError, cache_root, find_python, require_free, wheelhouse

# What a healthy copy of each stack installs: torch, or torch and its neighbours (docs/ACCEPTANCE.md).
NEIGHBOURS = ("torchvision==0.24.1", "torchaudio==2.9.1", "jax[cuda12]==0.10.2", "cupy-cuda12x==14.2.0")
TORCH = {"cu12": ("torch==2.9.1",), "cu13": ("torch==2.14.1",), "cu12-multi": ("torch==2.9.1",) + NEIGHBOURS}
CUDNN = {"cu12": 91002, "cu13": 92400, "cu12-multi": 91002}  # torch.backends.cudnn.version() of the pinned cudnn wheel
CONTAMINANTS = ("nvidia-cudnn-cu13==9.24.0.43", "nvidia-cusparselt-cu13==0.8.1", "nvidia-nccl-cu13==2.30.7",
                "nvidia-nvshmem-cu13==3.4.5")
# Free disk a scenario needs beside a warm uv cache (measured: pip writes the cu13 wheels, the repair the cu12 ones,
# pip's uninstall stash and the repair's snapshots are hard links); and what filling uv's cache needs.
SCENARIO_BYTES = 8 * GB
UV_CACHE_BYTES = {"cu12": 8 * GB, "cu13": 7 * GB, "cu12-multi": 9 * GB}
PROBE = ("import json, torch; print(json.dumps({'torch': torch.__version__, 'cuda': torch.version.cuda, "
         "'cudnn': torch.backends.cudnn.version()}))")


@dataclass(frozen=True)
class Completed:
    """A command that ran: argv, return code, output, seconds."""

    argv: Tuple[str, ...]
    rc: int
    output: str
    seconds: float


def _env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """This environment without pip's, uv's or Python's settings: installers read only what the argv says."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_", "PYTHON", "VIRTUAL_ENV"))}
    env.update({"PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "LC_ALL": "C.UTF-8",
                "UV_CACHE_DIR": str(cache_root() / "uv")})
    env.update(extra or {})
    return env


def run(argv: Sequence, cwd: Optional[Path] = None, check: bool = True, timeout: float = 1800) -> Completed:
    argv = tuple(str(a) for a in argv)
    started = time.monotonic()
    proc = subprocess.run(argv, cwd=str(cwd) if cwd else None, env=_env(), stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout, check=False)
    done = Completed(argv, proc.returncode, proc.stdout, time.monotonic() - started)
    if check and done.rc != 0:
        raise AcceptanceError("%s failed (rc %d):\n%s" % (" ".join(argv), done.rc, done.output[-4000:]))
    return done


def uv_executable() -> str:
    """CUDA_VENV_ACCEPTANCE_UV, else the tools venv's pinned uv (beside this Python), else uv on PATH."""
    for candidate in (os.environ.get("CUDA_VENV_ACCEPTANCE_UV"), os.path.join(os.path.dirname(sys.executable), "uv"),
                      shutil.which("uv")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise AcceptanceError("no uv executable: run `make setup` (the tools venv has uv) or set CUDA_VENV_ACCEPTANCE_UV")


def site_packages(venv: Path) -> Path:
    found = sorted(venv.glob("lib/python3.*/site-packages"))
    if len(found) != 1:
        raise AcceptanceError("%s: expected one lib/python3.*/site-packages, found %s" % (venv, found))
    return found[0]


def pip(venv: Path, *args: str) -> Completed:
    """The venv's own pip, as the user ran it, reading only the cache wheelhouse."""
    return run([venv / "bin" / "python", "-m", "pip", *args])


def pip_install(venv: Path, requirements: Sequence[str]) -> Completed:
    return pip(venv, "install", "--no-index", "--find-links", str(wheelhouse()), *requirements)


def pip_uninstall(venv: Path, names: Sequence[str]) -> Completed:
    return pip(venv, "uninstall", "--yes", *names)


def project(requirement: str) -> str:
    return requirement.partition("==")[0]


def build_copy(stack: str, dest: Path, made_by: str = "pip") -> List[Completed]:
    """A healthy venv of ``stack`` at ``dest``: ``python3.11 -m venv`` (made_by pip: the venv has pip) or
    ``uv venv`` (made_by uv: no pip), then uv installs torch from its cache."""
    if dest.exists():
        raise AcceptanceError("%s exists: each copy goes into a new directory" % dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    uv_cache = cache_root() / "uv"
    warm = uv_cache.joinpath(".warm-" + stack).exists()
    require_free(dest.parent, SCENARIO_BYTES + (0 if warm else UV_CACHE_BYTES[stack]), "a %s venv copy" % stack)
    create = ([find_python(), "-m", "venv", dest] if made_by == "pip" else
              [uv_executable(), "venv", "--no-config", "--quiet", "--python", find_python(), dest])
    done = [run(create),
            run([uv_executable(), "pip", "install", "--no-config", "--python", dest / "bin" / "python", "--link-mode",
                 "hardlink", "--no-index", "--find-links", wheelhouse(), *TORCH[stack]])]
    uv_cache.mkdir(parents=True, exist_ok=True)
    uv_cache.joinpath(".warm-" + stack).touch()
    return done


def uv_pip(venv: Path, *args: str) -> Completed:
    """``uv pip`` aimed at the venv, as the incident's user ran it, reading only the cache wheelhouse."""
    return run([uv_executable(), "pip", args[0], "--no-config", "--python", venv / "bin" / "python", *args[1:]])


def uv_contaminate(venv: Path) -> List[Completed]:
    """The incident with its own tool: ``uv pip install`` of the four cu13 wheels over the cu12 ones."""
    return [uv_pip(venv, "install", "--link-mode", "hardlink", "--no-index", "--find-links", str(wheelhouse()),
                   *CONTAMINANTS)]


def uv_gut(venv: Path) -> List[Completed]:
    """``uv pip uninstall`` of the cu13 wheels: it deletes the cu12 files at the same paths, as pip's does."""
    return [uv_pip(venv, "uninstall", *[project(c) for c in CONTAMINANTS])]


def move(before: Path, venv: Path, rewrite: str = "shebangs") -> List[Completed]:
    """The venv moved as people move one: a copy (hard links: metadata only), then ``rewrite`` "shebangs" (the
    console scripts' first lines) or "everything" (the former path in every text file of bin/, the activate scripts
    and console scripts, and in pyvenv.cfg's ``command``, as relocation tools do: no trace of the former place),
    each file into a new one renamed into place (the old inode is shared), the original removed."""
    started = time.monotonic()
    copied = run(["cp", "-al", before, venv])
    old, new = str(before).encode(), str(venv).encode()
    targets = [p for p in sorted((venv / "bin").iterdir()) if p.is_file() and not p.is_symlink()]
    if rewrite == "everything":
        targets.append(venv / "pyvenv.cfg")
    for path in targets:
        data = path.read_bytes()
        if b"\0" in data or old not in data:  # not a text file, or nothing to rewrite
            continue
        if rewrite == "shebangs":
            if not data.startswith(b"#!" + old):
                continue
            line, sep, body = data.partition(b"\n")
            data = line.replace(old, new, 1) + sep + body
        else:
            data = data.replace(old, new)
        temporary = path.with_name(path.name + ".acceptance-moved")
        temporary.write_bytes(data)
        os.chmod(str(temporary), path.stat().st_mode & 0o7777)
        os.replace(str(temporary), str(path))
    left = [str(p) for p in targets if old in p.read_bytes()] if rewrite == "everything" else []
    if left:
        raise AcceptanceError("moving %s: the former path is still in %s" % (venv, left))
    remove_tree(before)
    return [copied, Completed(("rewrite-" + rewrite, str(venv)), 0, "", time.monotonic() - started)]


def contaminate(venv: Path) -> List[Completed]:
    """The inference server's install: the four cu13 wheels (with their dependencies) over the cu12 ones."""
    return [pip_install(venv, CONTAMINANTS)]


def gut(venv: Path) -> List[Completed]:
    """The operator's clean-up: uninstalling the cu13 wheels deletes the cu12 files at the same paths."""
    return [pip_uninstall(venv, [project(c) for c in CONTAMINANTS])]


def restore_cudnn(venv: Path) -> List[Completed]:
    """The first attempt at a fix: nvidia-cudnn-cu13 back; import now fails on the next library."""
    return [pip_install(venv, CONTAMINANTS[:1])]


def remove_curand(venv: Path) -> List[Completed]:
    return [pip_uninstall(venv, ["nvidia-curand"])]


def cascade(venv: Path) -> List[Completed]:
    """The incident's cascade in a healthy venv: torch's cuDNN and cuSPARSELt uninstalled (import fails on libcudnn)."""
    return [pip_uninstall(venv, ["nvidia-cudnn-cu12", "nvidia-cusparselt-cu12"])]


def truncate_nccl(venv: Path) -> List[Completed]:
    """libnccl.so.2 at 0 bytes, by a new empty file renamed into place: the old inode is shared with uv's cache."""
    target = site_packages(venv) / "nvidia" / "nccl" / "lib" / "libnccl.so.2"
    started = time.monotonic()
    temporary = target.with_name(target.name + ".acceptance-empty")
    temporary.write_bytes(b"")
    os.chmod(str(temporary), target.stat().st_mode & 0o7777)
    os.replace(str(temporary), str(target))
    return [Completed(("replace-with-empty-file", str(target)), 0, "", time.monotonic() - started)]


@dataclass(frozen=True)
class Scenario:
    """A real venv state: its stack, and the steps after a healthy copy."""

    name: str
    stack: str
    steps: Tuple[Callable[[Path], List[Completed]], ...]
    description: str
    made_by: str = "pip"  # pip: python -m venv, the venv has pip; uv: uv venv, no pip (the incident's tool)
    moved: bool = False  # built elsewhere, then moved to its path, with what ``rewrite`` says rewritten
    rewrite: str = "shebangs"  # a moved venv's files naming its path: "shebangs" or "everything" (see move())


SCENARIOS = (
    Scenario("healthy-cu12", "cu12", (), "torch 2.9.1 and its nvidia-*-cu12 wheels"),
    Scenario("healthy-cu13", "cu13", (), "torch 2.14.1, cuda-toolkit 13.0.3 and its CUDA 13 wheels"),
    Scenario("contaminated", "cu12", (contaminate,), "the four cu13 wheels installed over the cu12 ones"),
    Scenario("gutted", "cu12", (contaminate, gut), "then the four cu13 wheels uninstalled"),
    Scenario("partial-restore", "cu12", (contaminate, gut, restore_cudnn), "then nvidia-cudnn-cu13 installed again"),
    Scenario("curand-removed", "cu13", (remove_curand,), "nvidia-curand uninstalled from the CUDA 13 stack"),
    Scenario("truncated-nccl", "cu12", (truncate_nccl,), "libnccl.so.2 truncated to 0 bytes"),
    Scenario("moved-healthy-cu12", "cu12", (), "healthy-cu12 moved to another path, shebangs rewritten", moved=True),
    Scenario("moved-gutted", "cu12", (contaminate, gut), "gutted, then moved, shebangs rewritten", moved=True),
    Scenario("moved-rewritten-gutted", "cu12", (contaminate, gut),
             "gutted, then moved, everything rewritten (scripts, activate scripts, pyvenv.cfg)", moved=True,
             rewrite="everything"),
    Scenario("uv-contaminated", "cu12", (uv_contaminate,), "contaminated in a venv made by uv venv (no pip), with uv",
             made_by="uv"),
    Scenario("uv-gutted", "cu12", (uv_contaminate, uv_gut), "gutted in a venv made by uv venv (no pip), with uv",
             made_by="uv"),
    Scenario("multi-healthy-cu12", "cu12-multi", (), "torch 2.9.1 with torchvision, torchaudio, jax[cuda12], cupy-cuda12x"),
    Scenario("multi-contaminated", "cu12-multi", (contaminate,), "the multi-framework venv, the four cu13 wheels over it"),
    Scenario("multi-cascade", "cu12-multi", (cascade,), "the multi-framework venv, torch's cuDNN and cuSPARSELt uninstalled"),
)


def scenario(name: str) -> Scenario:
    return [s for s in SCENARIOS if s.name == name][0]


def build_scenario(name: str, dest: Path) -> List[Completed]:
    """A healthy copy at ``dest``, then the scenario's steps; returns every command run."""
    wanted = scenario(name)
    built = dest.with_name(dest.name + "-before-move") if wanted.moved else dest
    done = build_copy(wanted.stack, built, wanted.made_by)
    for step in wanted.steps:
        done.extend(step(built))
    if wanted.moved:
        done.extend(move(built, dest, wanted.rewrite))
    return done


def probe_torch(venv: Path, workdir: Path) -> dict:
    """``python -I -c 'import torch'`` from an empty directory: torch, CUDA and cuDNN versions, or the error."""
    workdir.mkdir(parents=True, exist_ok=True)
    done = run([venv / "bin" / "python", "-I", "-c", PROBE], cwd=workdir, check=False, timeout=600)
    if done.rc != 0:
        return {"ok": False, "error": done.output.strip().splitlines()[-1] if done.output.strip() else "rc %d" % done.rc}
    return dict(json.loads(done.output.strip().splitlines()[-1]), ok=True)


def distributions(venv: Path) -> Dict[str, Path]:
    """Canonical project name -> its dist-info directory, read from disk (not through pip)."""
    found = {}
    for info in site_packages(venv).glob("*.dist-info"):
        name = info.name[:-len(".dist-info")].rpartition("-")[0]
        found[name.lower().replace("_", "-").replace(".", "-")] = info
    return found


def record_mismatches(venv: Path, dist_info: Path) -> List[str]:
    """Files of RECORD whose sha256 or size differs or that are missing (RECORD itself and unhashed rows skipped)."""
    site = site_packages(venv)
    bad = []
    with open(dist_info / "RECORD", newline="", encoding="utf-8") as handle:
        for row in csv.reader(handle):
            if len(row) < 3 or not row[1]:
                continue
            path, digest, size = row[0], row[1], row[2]
            algorithm, _sep, expected = digest.partition("=")
            full = site / path
            if not full.is_file():
                bad.append("%s: missing" % path)
                continue
            actual = hashlib.new(algorithm)
            with open(full, "rb") as data:
                for block in iter(lambda: data.read(1 << 20), b""):  # pylint: disable=cell-var-from-loop
                    actual.update(block)
            if base64.urlsafe_b64encode(actual.digest()).rstrip(b"=").decode() != expected:
                bad.append("%s: sha256 differs" % path)
            elif size and int(size) != full.stat().st_size:
                bad.append("%s: size differs" % path)
    return bad


def remove_tree(path: Path) -> None:
    """Remove a scenario's directory (files are hard links into uv's cache: unlinking them is safe)."""
    if path.exists():
        shutil.rmtree(str(path))
