# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The incident's venv states, each built from scratch with the commands a user would have run.

Test support for gpuops.cuda_venv: not part of the collection's API.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from ._layout import StandinError
from ._venv import (
    Completed, create_uv_venv, create_venv, pip_install, pip_uninstall, run, site_packages, uv_install, uv_uninstall)
from ._wheelhouse import build_extra_wheels, build_wheelhouse

TORCH = {"cu128": "torch==2.9.1", "cu130": "torch==2.14.1", "cu128-multi": "torch==2.9.1"}
# What a researcher's image adds beside torch 2.9.1: resolved by pip in one run with torch.
NEIGHBOURS = ("torchvision==0.24.1", "torchaudio==2.9.1", "jax[cuda12]==0.10.2", "cupy-cuda12x==14.2.0")
# The incident's cascade: the uninstall that took torch's cuDNN and cuSPARSELt with it.
CASCADE = ("nvidia-cudnn-cu12", "nvidia-cusparselt-cu12")
# The cu13 wheels of the incident: same install paths as their cu12 namesakes.
CONTAMINANTS = (
    "nvidia-cudnn-cu13==9.24.0.43",
    "nvidia-cusparselt-cu13==0.8.1",
    "nvidia-nccl-cu13==2.30.7",
    "nvidia-nvshmem-cu13==3.4.5",
)
CONSUMER = "sgl-kernel==0.3.9"
INSTALLERS = ("pip", "uv")


def project(requirement: str) -> str:
    """``nvidia-nccl-cu13`` of ``nvidia-nccl-cu13==2.30.7``."""
    return requirement.partition("==")[0]


@dataclass(frozen=True)
class ScenarioInfo:
    """A built scenario: where its venv is and exactly how it got that way."""

    name: str
    stack: str
    venv: Path
    wheelhouse: Path
    extra_wheelhouse: Optional[Path]
    ld_library_path: Optional[Path]
    commands: Tuple[Tuple[str, ...], ...]
    description: str
    installer: str = "pip"  # what made the venv and ran its steps: pip, or uv (the venv then has no pip)

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def as_dict(self) -> dict:
        return {
            "name": self.name, "stack": self.stack, "venv": str(self.venv), "python": str(self.python),
            "wheelhouse": str(self.wheelhouse),
            "extra_wheelhouse": str(self.extra_wheelhouse) if self.extra_wheelhouse else None,
            "ld_library_path": str(self.ld_library_path) if self.ld_library_path else None,
            "commands": [list(c) for c in self.commands], "description": self.description,
            "installer": self.installer,
        }


class _Build:
    """The state of one scenario build: its paths and the commands run so far."""

    def __init__(self, dest: Path, stack: str, cache, python: str, installer: str = "pip"):
        if installer not in INSTALLERS:
            raise StandinError("unknown installer %r: use one of %s" % (installer, ", ".join(INSTALLERS)))
        self.dest, self.stack, self.cache, self.python, self.installer = dest, stack, cache, python, installer
        self.venv = dest / "venv"
        self.wheelhouse = dest / "wheelhouse"
        self.extra_wheelhouse: Optional[Path] = None
        self.ld_library_path: Optional[Path] = None
        self.commands: List[Tuple[str, ...]] = []

    def record(self, done: Completed) -> Completed:
        self.commands.append(done.argv)
        return done

    def extras(self, *names: str) -> Path:
        self.extra_wheelhouse = build_extra_wheels(names, self.dest / "extra-wheelhouse", self.cache)
        return self.extra_wheelhouse

    def site(self) -> Path:
        return site_packages(self.venv)

    def create(self) -> Completed:
        """The venv, made by the scenario's installer: ``python -m venv`` (with pip) or ``uv venv`` (without)."""
        return self.record((create_venv if self.installer == "pip" else create_uv_venv)(self.venv, self.python))

    def install(self, requirements, wheelhouses) -> Completed:
        return self.record((pip_install if self.installer == "pip" else uv_install)(self.venv, requirements, wheelhouses))

    def uninstall(self, names) -> Completed:
        return self.record((pip_uninstall if self.installer == "pip" else uv_uninstall)(self.venv, names))

    def info(self, name: str) -> ScenarioInfo:
        return ScenarioInfo(name, self.stack, self.venv, self.wheelhouse, self.extra_wheelhouse, self.ld_library_path,
                            tuple(self.commands), describe(name), self.installer)


def _healthy(build: _Build) -> None:
    build_wheelhouse(build.stack, build.wheelhouse, build.cache)
    build.create()
    build.install([TORCH[build.stack]], [build.wheelhouse])


def _healthy_multi(build: _Build) -> None:
    build_wheelhouse(build.stack, build.wheelhouse, build.cache)
    build.create()
    build.install([TORCH[build.stack]] + list(NEIGHBOURS), [build.wheelhouse])


def _cascade(build: _Build) -> None:
    build.uninstall(list(CASCADE))


def _contaminate(build: _Build) -> None:
    extras = build.extras(*(project(c) for c in CONTAMINANTS))
    build.install(CONTAMINANTS, [extras])


def _gut(build: _Build) -> None:
    build.uninstall([project(c) for c in CONTAMINANTS])


def _restore_cudnn(build: _Build) -> None:
    build.install([CONTAMINANTS[0]], [build.extras(project(CONTAMINANTS[0]))])


def _remove_curand(build: _Build) -> None:
    build.uninstall(["nvidia-curand"])


def _truncate_nccl(build: _Build) -> None:
    build.record(run(["truncate", "--size=0", build.site() / "nvidia/nccl/lib/libnccl.so.2"]))


def _add_consumer(build: _Build) -> None:
    build.install([CONSUMER], [build.extras(project(CONSUMER))])


def _move_curand_out(build: _Build) -> None:
    build.ld_library_path = build.dest / "system-lib"
    build.record(run(["mkdir", "-p", build.ld_library_path]))
    build.record(run(["mv", build.site() / "nvidia/curand/lib/libcurand.so.10", build.ld_library_path]))


@dataclass(frozen=True)
class Scenario:
    """How to get a scenario's venv: its parent scenario's state, then ``step``."""

    stack: str
    parent: Optional[str]
    step: Callable[[_Build], None]
    description: str


SCENARIOS: Dict[str, Scenario] = {
    "healthy-cu12": Scenario("cu128", None, _healthy, "torch 2.9.1+cu128 and its nvidia-*-cu12 wheels installed by pip"),
    "healthy-cu13": Scenario("cu130", None, _healthy, "torch 2.14.1+cu130, cuda-toolkit[...] 13.0.3 and its CUDA 13 wheels "
                             "installed by pip"),
    "contaminated": Scenario("cu128", "healthy-cu12", _contaminate, "then the cu13 cudnn, cusparselt, nccl and nvshmem "
                             "wheels (pulling nvidia-cublas and nvidia-cuda-nvrtc 13) installed over their cu12 namesakes' "
                             "paths: import works, running cu13 bytes"),
    "gutted": Scenario("cu128", "contaminated", _gut, "then those four cu13 wheels uninstalled: the cu12 namesakes are "
                       "metadata-only, import fails on libcudnn.so.9, pip check is clean"),
    "partial-restore": Scenario("cu128", "gutted", _restore_cudnn, "then nvidia-cudnn-cu13 installed again: import fails "
                                "on the next library, libcusparseLt.so.0"),
    "curand-removed": Scenario("cu130", "healthy-cu13", _remove_curand, "then nvidia-curand uninstalled (required only "
                               "through the cuda-toolkit[curand] extra): pip check is clean, import needs libcurand.so.10"),
    "truncated-nccl": Scenario("cu128", "healthy-cu12", _truncate_nccl, "then nvidia/nccl/lib/libnccl.so.2 truncated to "
                               "0 bytes: import fails with 'file too short', pip check is clean"),
    "consumer": Scenario("cu128", "healthy-cu12", _add_consumer, "then sgl-kernel 0.3.9 installed: a CUDA consumer "
                         "nothing requires, bundling its own libcudart.so.12 (CUDA 12.4)"),
    "system-fallback": Scenario("cu128", "healthy-cu12", _move_curand_out, "then libcurand.so.10 moved out of the venv "
                                "into ld_library_path: import works only through LD_LIBRARY_PATH"),
    "healthy-multi-cu12": Scenario("cu128-multi", None, _healthy_multi, "torch 2.9.1+cu128 with torchvision 0.24.1, "
                                   "torchaudio 2.9.1, jax[cuda12] 0.10.2 and cupy-cuda12x 14.2.0, installed by pip in one "
                                   "resolve: one CUDA major, every framework's requirements held"),
    "multi-contaminated": Scenario("cu128-multi", "healthy-multi-cu12", _contaminate, "then the incident's cu13 cudnn, "
                                   "cusparselt, nccl and nvshmem wheels installed over their cu12 namesakes' paths"),
    "multi-cascade": Scenario("cu128-multi", "healthy-multi-cu12", _cascade, "then nvidia-cudnn-cu12 and "
                              "nvidia-cusparselt-cu12 uninstalled: import torch fails on libcudnn.so.9"),
}


def lineage(name: str) -> List[str]:
    """``name`` and its ancestors, oldest first: ["healthy-cu12", "contaminated", "gutted"]."""
    if name not in SCENARIOS:
        raise StandinError("unknown scenario %r: use one of %s" % (name, ", ".join(SCENARIOS)))
    chain = [name]
    while SCENARIOS[chain[0]].parent:
        chain.insert(0, SCENARIOS[chain[0]].parent)
    return chain


def describe(name: str) -> str:
    """The scenario's description, its ancestors' first: what a reader needs to know."""
    return "; ".join(SCENARIOS[n].description for n in lineage(name))


def build_scenario(name: str, dest, cache=None, python: str = sys.executable, installer: str = "pip") -> ScenarioInfo:
    """Build scenario ``name`` from scratch under ``dest`` (venv/, wheelhouse/, ...), which must hold no venv yet,
    with ``installer``: "pip" (``python -m venv``, ``pip install``) or "uv" (``uv venv``: no pip; ``uv pip``)."""
    chain = lineage(name)
    dest = Path(dest).resolve()
    if (dest / "venv").exists():
        raise StandinError("%s already holds a venv: build each scenario into a new directory" % dest)
    dest.mkdir(parents=True, exist_ok=True)
    build = _Build(dest, SCENARIOS[name].stack, cache, python, installer)
    for step in chain:
        SCENARIOS[step].step(build)
    return build.info(name)


def advance_scenario(info: ScenarioInfo, name: str, cache=None) -> ScenarioInfo:
    """Take the venv of ``info`` on to scenario ``name``, a descendant (contaminated -> gutted).

    The venv changes in place: ``info`` no longer describes it. Saves a venv per scenario in tests.
    """
    chain = lineage(name)
    if info.name not in chain[:-1]:
        raise StandinError("scenario %s does not follow from %s; its lineage is %s" % (name, info.name, " -> ".join(chain)))
    build = _Build(info.venv.parent, info.stack, cache, sys.executable, info.installer)
    build.commands = list(info.commands)
    build.extra_wheelhouse, build.ld_library_path = info.extra_wheelhouse, info.ld_library_path
    for step in chain[chain.index(info.name) + 1:]:
        SCENARIOS[step].step(build)
    return build.info(name)
