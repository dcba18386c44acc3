# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check the facts' performance part once on a GPU machine: print it as compact JSON, with the findings and timings.

Usage (the collection importable as ``ansible_collections.gpuops.cuda_venv`` from DIR)::

    PYTHONPATH=DIR python3 tests/device/gpu_facts_check.py [VENV] [--anchor torch] [--gpu-archs 8.0,9.0] [--no-probe]

VENV defaults to this interpreter's ``sys.prefix``. Needs the standard library and the collection; packaging (the
requirements closure), nvidia-ml-py (NVML) and pyelftools are used when importable, and their absence is reported.
Also runs the venv's ``python -I -c`` to print torch's own ``get_arch_list()`` and the device capability, so the
kernels read from ``libtorch_cuda.so`` can be compared with what torch says (skipped when torch does not import).
Exit status: 0 facts read, 2 the collection or a needed library cannot be imported, 1 the facts failed.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time

PERFORMANCE_CODES = ("KERNELS_MISSING", "KERNELS_PTX_ONLY", "GPU_CLOCKS_THROTTLED", "GPU_POWER_LIMITED", "GPU_PCIE_DEGRADED",
                     "GPU_MEMORY_ERRORS", "GPU_PERSISTENCE_OFF", "GPU_MIG_ENABLED", "GPU_SHARED", "ENV_SLOWS_CUDA",
                     "RESTART_NEEDED")
TORCH_ARCHS = ("import json, torch; print(json.dumps({'version': torch.__version__, 'cuda': torch.version.cuda, "
               "'arch_list': torch.cuda.get_arch_list(), 'capabilities': [list(torch.cuda.get_device_capability(i)) "
               "for i in range(torch.cuda.device_count())]}))")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("venv", nargs="?", default=sys.prefix)
    parser.add_argument("--anchor", default="torch")
    parser.add_argument("--gpu-archs", default="", help="comma-separated compute capabilities instead of NVML's")
    parser.add_argument("--no-probe", action="store_true", help="skip the import probe")
    return parser


def _libraries() -> dict:
    found = {}
    for module in ("packaging", "pynvml", "elftools"):
        try:
            importlib.import_module(module)
            found[module] = True
        except ImportError:
            found[module] = False
    return found


def _torch_view(venv: str) -> dict:
    """What torch itself says, from the venv's interpreter (isolated, empty working directory)."""
    python = os.path.join(venv, "bin", "python")
    with tempfile.TemporaryDirectory() as empty:
        try:
            proc = subprocess.run([python, "-I", "-c", TORCH_ARCHS], cwd=empty, capture_output=True, text=True,
                                  timeout=300, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return {"error": str(exc)}
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _compact(facts: dict) -> dict:
    perf = facts["performance"]
    if not perf.get("gathered"):
        return perf
    keys = ("path", "distribution", "sass", "ptx", "verdicts", "flags", "entries", "containers", "section_size", "problem", "error")
    extensions = [{k: e.get(k) for k in keys} for e in perf["kernels"]["extensions"]]
    return {"targets": perf["kernels"]["targets"], "extensions": extensions, "gpus": perf["gpus"],
            "environment": perf["environment"], "processes": len(perf["processes"]),
            "restart_needed": perf["restart_needed"], "seconds": perf["seconds"]}


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    libraries = _libraries()
    out = {"venv": args.venv, "python": sys.version.split()[0], "libraries": libraries}
    try:
        from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import SubprocessRunner
        from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.facts import gather_facts
        from ansible_collections.gpuops.cuda_venv.plugins.module_utils._entry.facts_entry import facts_arguments, facts_options
    except ImportError as exc:
        out["error"] = "cannot import the collection (PYTHONPATH must hold ansible_collections/gpuops/cuda_venv): %s" % exc
        print(json.dumps(out, indent=1))
        return 2
    if not libraries["packaging"]:
        out["error"] = "packaging is not importable: the facts need it (pip install packaging beside this interpreter)"
        print(json.dumps(out, indent=1))
        return 2
    params = {name: spec.get("default") for name, spec in facts_arguments()["argument_spec"].items()}
    params.update(path=args.venv, anchor=args.anchor, probe=not args.no_probe,
                  gpu_archs=[a.strip() for a in args.gpu_archs.split(",") if a.strip()])
    started = time.monotonic()
    try:
        facts = gather_facts(facts_options(params), SubprocessRunner())
    except Exception as exc:  # pylint: disable=broad-except  # the one answer a person reads on the GPU machine
        out["error"] = "%s: %s" % (type(exc).__name__, exc)
        print(json.dumps(out, indent=1))
        return 1
    seconds = time.monotonic() - started
    findings = facts["findings"]
    counts: dict = {}
    for finding in findings:
        counts.setdefault(finding["code"], {}).setdefault(finding["severity"], 0)
        counts[finding["code"]][finding["severity"]] += 1
    out.update({
        "healthy": facts["healthy"], "summary": facts["summary"],
        "gpu": {k: facts["gpu"].get(k) for k in ("available", "reason", "driver_version", "max_cuda", "devices")},
        "performance": _compact(facts),
        "findings": counts,
        "performance_findings": [{k: f.get(k) for k in ("code", "severity", "subject", "message")}
                                 for f in findings if f["code"] in PERFORMANCE_CODES],
        "timings": {"facts_s": round(seconds, 3), "probe_s": facts["probe"].get("duration"),
                    "performance_s": facts["performance"].get("seconds")},
        "torch": _torch_view(args.venv) if args.anchor == "torch" and not args.no_probe else None,
    })
    print(json.dumps(out, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
