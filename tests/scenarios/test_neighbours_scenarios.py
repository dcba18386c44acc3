"""A multi-framework venv (torch, torchvision, torchaudio, jax[cuda12], cupy) through Ansible: its neighbours are never
accused nor removed; the incident over it is repaired removing exactly the contaminants (issue 28)."""

import json
import os
import subprocess

from scenario_tools import ROOT, run_module
from tests.standin import build_scenario

from ansible_collections.gpuops.cuda_venv.tests.support.tree_digest import tree_digest

CACHE = os.environ.get("CUDA_VENV_STANDIN_CACHE", os.path.join(ROOT, "build", "standin-cache"))
NEIGHBOURS = ["cupy-cuda12x 14.2.0", "jax-cuda12-pjrt 0.10.2", "jax-cuda12-plugin 0.10.2",
              "nvidia-cuda-nvcc-cu12 12.9.86", "torchaudio 2.9.1", "torchvision 0.24.1"]
KEPT = {"torchvision": "0.24.1", "torchaudio": "2.9.1", "jax": "0.10.2", "jaxlib": "0.10.2", "jax-cuda12-plugin": "0.10.2",
        "jax-cuda12-pjrt": "0.10.2", "nvidia-cuda-nvcc-cu12": "12.9.86", "cupy-cuda12x": "14.2.0", "cuda-pathfinder": "1.9.1"}


def fresh(tmp_path, name):
    return build_scenario(name, tmp_path / name, cache=CACHE)


def facts(tmp_path, info):
    rc, result, output = run_module(tmp_path, "cuda_venv_facts", dict(path=str(info.venv), gpu=False))
    assert rc == 0, output
    return result["ansible_facts"]["cuda_venv"]


def repair(tmp_path, info, check=False):
    links = [str(info.wheelhouse)] + ([str(info.extra_wheelhouse)] if info.extra_wheelhouse else [])
    rc, result, output = run_module(tmp_path, "cuda_venv_repair", dict(path=str(info.venv), find_links=links,
                                                                       no_index=True, backend="pip"), check=check)
    assert rc == 0, output
    return result


def removed(result):
    return sorted(a["name"] for b in result["plan"]["batches"] for a in b["actions"] if a["action"] == "remove")


def installed(info):
    out = subprocess.run([str(info.python), "-m", "pip", "list", "--format=json"], capture_output=True, text=True,
                         check=True, env=dict(os.environ, PIP_CONFIG_FILE=os.devnull)).stdout
    return {p["name"].lower().replace("_", "-"): p["version"] for p in json.loads(out)}


def test_a_healthy_multi_framework_venv_has_no_warning_and_its_repair_changes_nothing(tmp_path):
    info = fresh(tmp_path, "healthy-multi-cu12")
    found = facts(tmp_path, info)
    assert [(f["severity"], f["code"], f["subject"]) for f in found["findings"] if f["severity"] != "info"] == []
    assert [n["distribution"] for n in found["neighbours"]] == NEIGHBOURS
    assert found["contaminants"] == []
    by_object = {u["object"]: u for u in found["unresolved"]}
    assert not any(o.startswith(("torchvision/", "torchaudio/", "cupy")) and u["soname"] != "libcutensor.so.2"
                   and u["soname"] != "libcutensorMg.so.2" for o, u in by_object.items())
    digest = tree_digest(str(info.venv))
    planned = repair(tmp_path, info, check=True)
    assert planned["changed"] is False and planned["plan"]["batches"] == []
    result = repair(tmp_path, info)
    assert result["changed"] is False
    assert tree_digest(str(info.venv)) == digest


def test_the_incident_over_it_removes_exactly_the_contaminants_and_keeps_every_neighbour(tmp_path):
    info = fresh(tmp_path, "multi-contaminated")
    before = installed(info)
    found = facts(tmp_path, info)
    contaminants = sorted(c["distribution"].split(" ")[0] for c in found["contaminants"])
    assert contaminants == ["nvidia-cublas", "nvidia-cuda-nvrtc", "nvidia-cudnn-cu13", "nvidia-cusparselt-cu13",
                            "nvidia-nccl-cu13", "nvidia-nvshmem-cu13"]
    assert all(c["evidence"] for c in found["contaminants"])
    result = repair(tmp_path, info)
    assert removed(result) == contaminants
    assert all(a.get("evidence") for b in result["plan"]["batches"] for a in b["actions"] if a["action"] == "remove")
    after = installed(info)
    assert {k: after.get(k) for k in KEPT} == KEPT == {k: before[k] for k in KEPT}
    assert facts(tmp_path, info)["healthy"] is True


def test_the_cascade_over_it_is_repaired_with_nothing_removed(tmp_path):
    info = fresh(tmp_path, "multi-cascade")
    assert facts(tmp_path, info)["healthy"] is False
    result = repair(tmp_path, info)
    assert removed(result) == []
    assert result["changed"] is True
    assert {k: installed(info).get(k) for k in KEPT} == KEPT
    assert facts(tmp_path, info)["healthy"] is True
