"""Acceptance on the real LLM-serving stacks, built as their users build them with uv from the package index
(Python 3.12): sglang installed over a CUDA 12 torch (uv moves torch to its CUDA 13 build and leaves the
nvidia-*-cu12 wheels), and vllm into an empty venv (tests/acceptance/serving_venvs.py).

Per venv: the facts must not blame what the application itself required; the default repair (check mode, then for
real, on the test's own copy) must keep every import that worked and end healthy, or fail saying why. For
sglang-over-cu12 also the repair back to the declared torch 2.9.1, on a second copy.

Opt-in with the rest of the suite: CUDA_VENV_ACCEPTANCE=1 (``make acceptance``, or
``CUDA_VENV_ACCEPTANCE=1 build/tools/bin/python -m pytest -p no:xdist -v tests/acceptance/test_serving_stacks.py``:
these tests need no wheelhouse). The first build downloads about 20 GB of wheels into uv's cache (CACHE/uv); later
builds hard-link from it.
"""

import json

import pytest

from acceptance_fetch import enabled
from acceptance_table import save_result, summarize_batches, summarize_findings
from acceptance_venvs import remove_tree
from serving_venvs import (
    build_serving, canonical, colliding, dist_infos, findings_naming, import_one, import_report, legitimate, stack,
    tree_changes, tree_metadata, working)

pytestmark = pytest.mark.skipif(not enabled(), reason="opt-in: real torch wheels and LLM-serving stacks from the package "
                                                      "index (about 20 GB in uv's cache); run `make acceptance`")

DECLARED = "torch==2.9.1"
DECLARED_VERSION = "2.9.1+cu128"  # torch.__version__ of the index's torch 2.9.1 for Linux x86_64 (CUDA 12.8)


def removals(result):
    return [a["name"] for b in (result.get("plan") or {}).get("batches", []) for a in b.get("actions", [])
            if a["action"] == "remove"]


def verdict(rc, result):
    """"healthy", "unhealthy" or "failed: MESSAGE" of a repair's result (the ad-hoc command's JSON has no "failed" key:
    the module failed when ``ansible`` exits non-zero, ``localhost | FAILED!``)."""
    if rc != 0:
        return "failed: %s" % " ".join(str(result.get("msg") or "no message").split())[:160]
    return "healthy" if result.get("healthy") is True else "unhealthy"


def excerpt(result):
    keep = ("msg", "changed", "healthy", "summary", "strategy", "strategy_reason", "refused", "plan", "batches")
    return json.dumps({k: result.get(k) for k in keep}, indent=1, sort_keys=True, default=str)[:8000]


def test_facts_of_the_serving_venv(serving):
    facts = serving.facts()
    serving.row.findings = summarize_findings(facts)
    assert facts["path"] == str(serving.venv)
    assert facts["probe"]["ok"] is serving.imports["torch"]["ok"], json.dumps(facts["probe"].get("error"))


def test_no_warning_or_error_names_a_distribution_the_application_required(serving):
    """What the application required (its requirement closure, the anchor's own closure aside) is no contaminant, and
    no warning or error finding accuses it (serving_venvs.findings_naming); a distribution in a real collision
    (cuda-python 12.6 over cuda-bindings 13) is named rightly: its version is what is wrong."""
    facts = serving.facts()
    legit = sorted(set(legitimate(serving.venv, stack(serving.name))) - set(colliding(facts["findings"])))
    anchor = [d["cuda_major"] for d in facts["distributions"] if canonical(d["name"]) == "torch"]
    flagged = findings_naming(facts["findings"], legit, anchor[0] if anchor else None)
    accused = [{"distribution": c["distribution"], "evidence": c["evidence"], "held_by": c.get("held_by")}
               for c in facts["contaminants"] if canonical(c["distribution"].split(" ")[0]) in legit]
    save_result("%s.legitimate.json" % serving.name, {"legitimate": legit, "flagged": flagged, "contaminants": accused,
                                                      "neighbours": [n["distribution"] for n in facts["neighbours"]]})
    serving.row.legitimate_flagged = len(flagged)
    serving.row.legitimate_detail = ", ".join("%s %s" % (f["code"], "/".join(f["names"])) for f in flagged)
    assert (flagged, accused) == ([], []), json.dumps({"flagged": flagged, "contaminants": accused}, indent=1)[:8000]


def test_default_repair_keeps_every_working_import_and_is_healthy_or_fails_with_a_reason(serving):
    serving.facts()  # the facts of the venv as built come first
    args = {"path": str(serving.venv)}
    before = tree_metadata(serving.venv)
    rc, check, output, _seconds = serving.module("repair-check", "cuda_venv_repair", args, check=True)
    assert tree_changes(before, tree_metadata(serving.venv)) == [], "check mode changed the venv"
    assert check, output[-6000:]
    assert rc == 0 or check.get("msg"), excerpt(check)

    rc, result, output, seconds = serving.module("repair", "cuda_venv_repair", args)
    serving.row.repair_seconds, serving.row.batches = seconds, summarize_batches(result)
    serving.row.strategy = result.get("strategy") or "-"
    serving.row.removals = len(removals(result))
    serving.row.after_repair = verdict(rc, result)
    after = import_report(serving.venv, serving.workdir / "empty")
    save_result("%s.imports-after-repair.json" % serving.name, after)
    broken = [m for m in working(serving.imports) if not after[m]["ok"]]
    if broken:
        serving.row.broken_imports = "%s (removed: %s)" % (", ".join(broken), ", ".join(removals(result)) or "none")
    assert result, output[-6000:]
    assert not (result.get("changed") and rc == 0 and result.get("healthy") is not True), excerpt(result)
    assert (rc == 0 and result.get("healthy") is True) or (rc != 0 and result.get("msg")), excerpt(result)
    assert broken == [], json.dumps({m: after[m] for m in broken}, indent=1) + "\n" + excerpt(result)


@pytest.mark.parametrize("serving", ["sglang-over-cu12"], indirect=True)
def test_repair_to_the_declared_torch_2_9_1(serving):
    """``packages: [torch==2.9.1]`` on a fresh copy, wheels from the index uv's configuration names (as the user's):
    a healthy torch 2.9.1+cu128 venv, or a failure that says why and leaves the venv as it was."""
    venv = serving.workdir / "declared" / "venv"
    try:
        build_serving(serving.name, venv)
        before = tree_metadata(venv)
        rc, result, output, _seconds = serving.module("declared", "cuda_venv_repair",
                                                      {"path": str(venv), "packages": [DECLARED]})
        changes = tree_changes(before, tree_metadata(venv))  # before this test's own imports run in it
        torch = import_one(venv, "torch", serving.workdir / "empty")
        save_result("%s.declared-imports.json" % serving.name, import_report(venv, serving.workdir / "empty"))
        installed = {name: info.name for name, info in dist_infos(venv).items() if name in ("torch", "triton")}
        serving.row.declared = verdict(rc, result) + (", torch %s" % torch.get("version") if torch["ok"] else ", no torch")
        assert result, output[-6000:]
        if rc != 0:
            assert result.get("msg"), excerpt(result)
            assert changes == [], "\n".join(changes) + "\n" + excerpt(result)
        else:
            assert result.get("healthy") is True, excerpt(result)
            assert (torch["ok"], torch.get("version")) == (True, DECLARED_VERSION), (torch, installed)
    finally:
        remove_tree(venv.parent)
