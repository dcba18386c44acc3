# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for contamination: which wheels contaminate, and the source CONTAMINATION_SOURCE names."""

from __future__ import annotations

from dataclasses import replace

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.contamination_source import (
    contaminants, contamination_source, residue_candidates, with_source_versions)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.install_times import InstallStamp
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.wheel_sources import Offer, SourceReading
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils import observations as O
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils.observations import dist

T = 1780000000.125
T_ISO = "2026-05-28T20:26:40.125Z"


def with_times(obs, times, requested=()):
    """``obs`` whose distributions were installed at {key: (offset, installer)} (default: T with pip)."""
    dists = [replace(d, requested=d.key in requested, installer=times.get(d.key, (0, "pip"))[1])
             for d in obs.distributions]
    stamps = {d.dist_info: InstallStamp(T + times.get(d.key, (0, "pip"))[0], "INSTALLER mtime") for d in dists}
    return replace(obs, distributions=dists, stamps=stamps)


def test_contaminants_are_those_with_evidence_and_say_it():
    consumer = dist("sglang-kernel", "0.3.21", ["sglang_kernel/__init__.py"], ["nvidia-cudnn-cu13==9.24.0.43"])
    obs = O.contaminated(add=[consumer])
    twin = "built for CUDA 13 (by its name) beside a CUDA 12 torch; installs 2 path(s) that %s also installs, e.g. %s, %s"
    assert sorted((d.label, why) for d, why in contaminants(obs).values()) == [
        ("nvidia-cublas 13.1.1.3", "built for CUDA 13 (by its install path) beside a CUDA 12 torch"),
        ("nvidia-cudnn-cu13 9.24.0.43", twin % ("nvidia-cudnn-cu12 9.10.2.21", "nvidia/cudnn/lib/libcudnn.so.9",
                                                "nvidia/cudnn/include/cudnn.h")),
        ("nvidia-cusparselt-cu13 0.8.1", twin % ("nvidia-cusparselt-cu12 0.7.1", "nvidia/cusparselt/lib/libcusparseLt.so.0",
                                                 "nvidia/cusparselt/include/cusparselt.h")),
        ("nvidia-nccl-cu13 2.30.7", twin % ("nvidia-nccl-cu12 2.27.5", "nvidia/nccl/lib/libnccl.so.2",
                                            "nvidia/nccl/include/nccl.h")),
        ("nvidia-nvshmem-cu13 3.4.5", twin % ("nvidia-nvshmem-cu12 3.3.20", "nvidia/nvshmem/lib/libnvshmem_host.so.3",
                                              "nvidia/nvshmem/include/nvshmem.h")),
        ("sglang-kernel 0.3.21", "built for CUDA 13 (by its dependency nvidia-cudnn-cu13) beside a CUDA 12 torch")]


def test_a_requested_consumer_is_the_root_of_what_it_requires_the_rest_is_residue():
    consumer = dist("sglang-kernel", "0.3.21", ["sglang_kernel/__init__.py"], ["nvidia-cudnn-cu13==9.24.0.43"])
    later = {"sglang-kernel": (60, "pip"), "nvidia-cudnn-cu13": (60, "pip"), "nvidia-cublas": (60, "pip"),
             "nvidia-nccl-cu13": (60, "pip"), "nvidia-nvshmem-cu13": (60, "pip"), "nvidia-cusparselt-cu13": (60, "pip"),
             "torch": (120, "uv")}
    obs = with_times(O.contaminated(add=[consumer]), later, requested={"sglang-kernel", "torch"})
    [finding] = contamination_source(obs)
    details = finding.details
    assert (finding.severity, finding.subject, details["transaction"], details["installer"]) == (
        "warning", "transaction 2", 2, "pip")
    assert details["roots"] == [{
        "distribution": "sglang-kernel 0.3.21", "requested": True, "installer": "pip", "time": "2026-05-28T20:27:40.125Z",
        "transaction": 2, "reaches": ["nvidia-cublas 13.1.1.3", "nvidia-cudnn-cu13 9.24.0.43", "sglang-kernel 0.3.21"],
        "chain": ["nvidia-cudnn-cu13==9.24.0.43", "nvidia-cublas"]}]
    assert details["residue"] == ["nvidia-cusparselt-cu13 0.8.1", "nvidia-nccl-cu13 2.30.7", "nvidia-nvshmem-cu13 3.4.5"]
    assert details["replaced_later"] == [{"distribution": "torch 2.9.1", "time": "2026-05-28T20:28:40.125Z", "transaction": 3}]
    assert finding.message.startswith(
        "6 contaminant(s) (nvidia-cublas 13.1.1.3, nvidia-cudnn-cu13 9.24.0.43, nvidia-cusparselt-cu13 0.8.1, "
        "nvidia-nccl-cu13 2.30.7, ...) were installed by pip at 2026-05-28T20:27:40.125Z (transaction 2). ")
    assert ("their root is sglang-kernel 0.3.21, requested with pip at 2026-05-28T20:27:40.125Z, which requires "
            "nvidia-cudnn-cu13==9.24.0.43 -> nvidia-cublas") in finding.message
    assert ("The other 3 (nvidia-cusparselt-cu13 0.8.1, nvidia-nccl-cu13 2.30.7, nvidia-nvshmem-cu13 3.4.5): nothing "
            "installed today requires them: the residue of an install that was undone; distributions that were gone "
            "or replaced later: torch 2.9.1 reinstalled at 2026-05-28T20:28:40.125Z.") in finding.message


def test_the_anchor_put_in_place_by_a_run_that_installed_an_application_says_which():
    """uv: the torch 2.9.1 venv; then `uv pip install sglang` replaces torch (sglang pins it) and leaves the
    CUDA 12 cuDNN: the residue's message names the run that put torch in place by what it installed."""
    server = dist("sglang", "0.5.23", ["sglang/__init__.py"], ["torch"], installer="uv")
    leftover = dist("nvidia-cudnn-cu13", "9.24.0.43", ["nvidia/cudnn/lib/libcudnn.so.9"], installer="uv")
    obs = O.build([O.torch_cu12(), leftover, server])
    obs = with_times(obs, {"nvidia-cudnn-cu13": (0, "uv"), "torch": (60, "uv"), "sglang": (60, "uv")},
                     requested={"nvidia-cudnn-cu13", "torch", "sglang"})
    [finding] = contamination_source(obs)
    assert finding.message.endswith(
        "distributions that were gone or replaced later: torch 2.9.1 put in place at 2026-05-28T20:27:40.125Z by the uv "
        "run that installed sglang 0.5.23 (transaction 2).")


def test_uvs_requested_is_no_users_choice_even_for_a_lone_distribution():
    # uv marks every dist-info REQUESTED: the cu13 cuBLAS, required by nothing, is not "asked for by name".
    obs = with_times(O.healthy(add=[O.cublas_cu13(), dist("nvidia-nvtx", "13.0.85", ["nvidia/cu13/lib/x.so"])]),
                     {"nvidia-cublas": (30, "uv"), "nvidia-nvtx": (30, "uv")}, requested={"nvidia-cublas", "nvidia-nvtx"})
    [finding] = contamination_source(obs)
    assert finding.details["roots"] == [] and finding.details["installer"] == "uv"
    assert finding.message.endswith("(transaction 2). Nothing installed today requires them: asked for by name or the "
                                    "residue of an install that was undone (installed by uv; uv marks every distribution "
                                    "requested: REQUESTED cannot tell).")
    alone = with_times(O.healthy(add=[O.cublas_cu13()]), {"nvidia-cublas": (30, "uv")}, requested={"nvidia-cublas"})
    [finding] = contamination_source(alone)
    assert finding.details["roots"] == [] and "REQUESTED cannot tell" in finding.message
    by_pip = with_times(O.healthy(add=[O.cublas_cu13()]), {"nvidia-cublas": (30, "pip")}, requested={"nvidia-cublas"})
    [finding] = contamination_source(by_pip)
    assert [(r["distribution"], r["requested"], r["chain"]) for r in finding.details["roots"]] == [
        ("nvidia-cublas 13.1.1.3", True, [])]


def test_when_the_history_cannot_tell_the_runs_apart_the_candidates_are_named_and_none_claimed():
    """Times a copy reset: uv's folder written 20 ms after pip's, quicker than a process starts."""
    consumer = dist("sglang-kernel", "0.3.21", ["sglang_kernel/__init__.py"], ["nvidia-cudnn-cu13==9.24.0.43"])
    turns = {"sglang-kernel": (0.1, "pip"), "nvidia-cudnn-cu13": (0.1, "pip"), "nvidia-cublas": (0.1, "pip"),
             "nvidia-nccl-cu13": (0.1, "pip"), "nvidia-nvshmem-cu13": (0.1, "pip"), "nvidia-cusparselt-cu13": (0.1, "pip"),
             "torch": (0.12, "uv")}
    obs = with_times(O.contaminated(add=[consumer]), turns, requested={"sglang-kernel"})
    [finding] = contamination_source(obs)
    details = finding.details
    assert (details["time"], details["installer"], details["candidates"]) == ("unknown", "pip", ["sglang-kernel 0.3.21"])
    assert [(r["distribution"], r["requested"], r["time"]) for r in details["roots"]] == [
        ("sglang-kernel 0.3.21", True, "unknown")]
    assert "were installed by pip at an unknown time (transaction 1), whose time is unknown (" in finding.message
    assert "the history cannot tell which install brought them. A candidate for " in finding.message
    assert ": sglang-kernel 0.3.21, requested with pip at an unknown time, which requires nvidia-cudnn-cu13==9.24.0.43 -> " \
        "nvidia-cublas" in finding.message
    assert "their root is" not in finding.message and details["replaced_later"] == []


def test_no_history_no_finding_and_a_clean_venv_has_none():
    assert contamination_source(O.contaminated()) == []  # stamps not read
    assert contamination_source(with_times(O.healthy(), {})) == []


def residue_obs():
    """The CUDA 13 wheels installed by pip at T+60, torch reinstalled by uv at T+120: all of them residue."""
    later = {key: (60, "pip") for key in ("nvidia-cudnn-cu13", "nvidia-cublas", "nvidia-nccl-cu13", "nvidia-nvshmem-cu13",
                                          "nvidia-cusparselt-cu13")}
    later["torch"] = (120, "uv")
    return with_times(O.contaminated(), later, requested={"torch"})


READING = SourceReading(offers=(
    # the installed version: its own metadata rules, whatever a source says of it
    Offer("torch", "2.9.1", "/wh", ("nvidia-cudnn-cu13==9.24.0.43", "nvidia-nccl-cu13==2.30.7", "nvidia-nvshmem-cu13==3.4.5")),
    Offer("torch", "2.13.0", "/wh", ("nvidia-cudnn-cu13==9.20.0.1", "nvidia-nccl-cu13==2.30.7")),
    Offer("torch", "2.14.1", "/wh", ('nvidia-cudnn-cu13==9.24.0.43; platform_system == "Linux"', "filelock",
                                     "nvidia-nccl-cu13==2.30.7", 'nvidia-nvshmem-cu13; extra == "dist"')),
    Offer("torch", "2.15.0", "/wh", None),  # an index without separate metadata
    Offer("nvidia-cudnn-cu12", "9.20.0.1", "/wh", ())),
    failures=(("https://***@mirror/simple", "HTTP 503 Service Unavailable from https://***@mirror/simple/torch/"),))


def test_the_wheel_sources_name_the_version_that_requires_the_residue():
    obs = residue_obs()
    [plain] = contamination_source(obs)
    assert residue_candidates(obs, [plain]) == ["torch"]
    assert (plain.details["source_versions"], plain.details["source_failures"]) == ([], [])
    [finding] = with_source_versions(replace(obs, source_reading=READING), [plain])
    assert finding.details["source_versions"] == [{
        "name": "torch", "version": "2.14.1", "source": "/wh",
        "requires": ["nvidia-cudnn-cu13==9.24.0.43", "nvidia-nccl-cu13==2.30.7"],
        "reaches": ["nvidia-cublas 13.1.1.3", "nvidia-cudnn-cu13 9.24.0.43", "nvidia-nccl-cu13 2.30.7"]}]  # cuBLAS: cuDNN's
    assert finding.details["source_failures"] == [
        {"source": "https://***@mirror/simple", "error": "HTTP 503 Service Unavailable from https://***@mirror/simple/torch/"}]
    undone = "the residue of an install that was undone"
    assert plain.message.endswith(undone + "; distributions that were gone or replaced later: torch 2.9.1 reinstalled "
                                  "at 2026-05-28T20:28:40.125Z.")
    assert finding.message == plain.message.replace(undone, undone + (
        "; torch 2.14.1 in /wh requires nvidia-cudnn-cu13==9.24.0.43, nvidia-nccl-cu13==2.30.7 (reaching 3 of them; "
        "torch 2.9.1 is installed now); the wheel source https://***@mirror/simple could not be read (HTTP 503 Service "
        "Unavailable from https://***@mirror/simple/torch/)"))


def test_no_residue_asks_the_sources_nothing():
    consumer = dist("sglang-kernel", "0.3.21", ["sglang_kernel/__init__.py"], ["nvidia-cublas"])
    obs = with_times(O.healthy(add=[consumer, O.cublas_cu13()]), {"sglang-kernel": (60, "pip"), "nvidia-cublas": (60, "pip")},
                     requested={"sglang-kernel"})
    findings = contamination_source(obs)
    assert [(f.details["residue"], len(f.details["roots"])) for f in findings] == [([], 1)]
    assert residue_candidates(obs, findings) == []
