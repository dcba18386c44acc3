# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Why a healthy venv is slow: its kernels against the GPU, the GPU's state, the jobs' environment, old processes.

Private to the gpuops.cuda_venv collection: not a public API.

Pure: judges ``obs.performance`` (``_read/host/performance_state.py``) and ``obs.gpu``. The kernel rule
(docs/FINDINGS.md, KERNELS_MISSING): machine code (SASS) for sm_XY runs on a GPU of compute capability X.Z with Z >= Y (same major); PTX
for compute_XY is compiled by the driver at first load for any GPU of capability >= X.Y. Arch-specific builds
(sm_90a) run only on their exact architecture, but which flag bit marks them is not established: they are judged
as plain SASS, and their flags are reported as found.
"""

from __future__ import annotations

import re
from typing import List, Optional, Sequence, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.slow_env import slow_variable
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide import findings as F
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.findings import Finding
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.fatbin import arch_name
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import Observations

SASS = "sass"
PTX = "ptx"
NONE = "none"
_CC = re.compile(r"^(\d{1,2})\.(\d)$")
_SHOWN = 5
# Clock event reasons that mean the hardware holds the clocks down (not idleness or a user's setting).
SLOWDOWN_REASONS = ("hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown")
POWER_CAP_REASON = "sw_power_cap"


# --- kernels ----------------------------------------------------------------------------------------------------

def compute_capability_problems(values: Sequence[str]) -> List[str]:
    """Each value of ``gpu_archs`` that is not a compute capability as NVML writes it ("8.0", "9.0", "12.0")."""
    return ["gpu_archs: %r is not a compute capability such as '8.0' or '9.0'" % (value,)
            for value in values if not isinstance(value, str) or not _CC.match(value)]


def _cc(text: str) -> Tuple[int, int]:
    match = _CC.match(text)
    return int(match.group(1)), int(match.group(2))


def kernel_verdict(sass: Sequence[int], ptx: Sequence[int], capability: str) -> Tuple[str, Optional[int]]:
    """(SASS, arch) when machine code runs on a GPU of ``capability``; (PTX, arch) when only PTX can be compiled
    for it (the newest such); (NONE, None) when nothing runs."""
    major, minor = _cc(capability)
    fitting = [a for a in sass if a // 10 == major and a % 10 <= minor]
    if fitting:
        return SASS, max(fitting)
    jit = [a for a in ptx if (a // 10, a % 10) <= (major, minor)]
    return (PTX, max(jit)) if jit else (NONE, None)


def kernel_targets(obs: Observations) -> List[dict]:
    """The GPUs the kernels are judged for: ``gpu_archs`` when given, else every NVML device."""
    if obs.options.gpu_archs:
        return [{"compute_capability": cc, "source": "gpu_archs", "gpu": None, "index": None}
                for cc in obs.options.gpu_archs]
    devices = obs.gpu.devices if obs.gpu is not None else ()
    return [{"compute_capability": d.compute_capability, "source": "nvml", "gpu": d.name, "index": d.index}
            for d in devices if d.compute_capability]


def archs_text(sass: Sequence[int], ptx: Sequence[int]) -> str:
    """ "SASS for sm_80, sm_90 and PTX for compute_90" (or "no PTX")."""
    text = "SASS for %s" % (", ".join(arch_name(a) for a in sass) if sass else "no architecture")
    return text + (" and PTX for %s" % ", ".join(arch_name(a, ptx=True) for a in ptx) if ptx else ", no PTX")


def kernel_findings(obs: Observations) -> List[Finding]:
    reading = obs.performance
    targets = kernel_targets(obs)
    if reading is None or not targets:
        return []
    capabilities = sorted({t["compute_capability"] for t in targets}, key=_cc)
    findings = []
    for ext in reading.extensions:
        if ext.kernels is None or not ext.kernels.entries:
            continue
        verdicts = {cc: kernel_verdict(ext.kernels.sass, ext.kernels.ptx, cc) for cc in capabilities}
        missing = [cc for cc in capabilities if verdicts[cc][0] == NONE]
        jit = [cc for cc in capabilities if verdicts[cc][0] == PTX]
        subject, owner = obs.relpath(ext.path), _owner(obs, ext.path)
        has = archs_text(ext.kernels.sass, ext.kernels.ptx)
        details = {"path": ext.path, "distribution": owner, "sass": [arch_name(a) for a in ext.kernels.sass],
                   "ptx": [arch_name(a, ptx=True) for a in ext.kernels.ptx]}
        if missing:
            findings.append(Finding(
                F.KERNELS_MISSING, F.ERROR, subject,
                "%s (%s) has no kernel for compute capability %s: it carries %s. Its CUDA code fails on that GPU "
                "(no kernel image is available for execution on the device)." % (subject, owner, ", ".join(missing), has),
                "Install a build of %s made for %s (or with PTX for an older architecture), or run the venv on a GPU "
                "it was built for." % (owner, ", ".join("sm_%s" % cc.replace(".", "") for cc in missing)),
                dict(details, compute_capabilities=missing)))
        if jit:
            # NVIDIA's own libraries ship PTX for newer GPUs by design (cuFile 1.15: SASS to sm_86, PTX compute_86)
            toolkit = any(o.key.startswith("nvidia-") for o in obs.owners_of(ext.path))
            findings.append(Finding(
                F.KERNELS_PTX_ONLY, F.INFO if toolkit else F.WARNING, subject,
                "%s (%s) has no machine code for compute capability %s, only PTX (it carries %s): the driver "
                "compiles its kernels at first load (a slow start; cached in ~/.nv/ComputeCache)." % (
                    subject, owner, ", ".join(jit), has),
                "Install a build of %s with SASS for %s, or keep the driver's compute cache warm (CUDA_CACHE_MAXSIZE)."
                % (owner, ", ".join("sm_%s" % cc.replace(".", "") for cc in jit)),
                dict(details, compute_capabilities=jit)))
    return findings


def _owner(obs: Observations, path: str) -> str:
    owners = obs.owners_of(path)
    return owners[0].label if owners else "no distribution"


# --- the GPU's state --------------------------------------------------------------------------------------------

def gpu_state_findings(obs: Observations) -> List[Finding]:
    reading = obs.performance
    if reading is None:
        return []
    devices = obs.gpu.devices if obs.gpu is not None else ()
    ours = {p.pid for p in reading.processes}
    findings = []
    for device, state in zip(devices, reading.gpu_states):
        findings.extend(_state_findings("GPU %d (%s)" % (device.index, device.name), state, ours))
    return findings


def _state_findings(subject: str, state: dict, ours: set) -> List[Finding]:
    found = []
    reasons = state.get("clock_event_reasons") or []
    clocks = state.get("clocks_mhz") or {}
    held = [r for r in reasons if r in SLOWDOWN_REASONS]
    if held or POWER_CAP_REASON in reasons:
        found.append(Finding(
            F.GPU_CLOCKS_THROTTLED, F.WARNING if held else F.INFO, subject,
            "%s: its clocks are held down (%s), SM clock %s of %s MHz." % (
                subject, ", ".join(held or [POWER_CAP_REASON]), clocks.get("sm"), clocks.get("sm_max")),
            "Check cooling and power delivery (nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER); a thermal or hardware "
            "slowdown that persists needs the machine's vendor." if held else
            "The board runs at its power limit: expected under full load; a lower limit than the default shows as "
            "GPU_POWER_LIMITED.",
            {"reasons": reasons, "clocks_mhz": clocks}))
    power = state.get("power_w") or {}
    if power.get("limit") and power.get("default_limit") and power["limit"] < power["default_limit"] * 0.99:
        found.append(Finding(
            F.GPU_POWER_LIMITED, F.WARNING, subject,
            "%s: its power limit is %s W, below the default %s W: clocks drop under load." % (
                subject, power["limit"], power["default_limit"]),
            "Restore it (as root): nvidia-smi -i INDEX -pl %s, unless it was lowered on purpose." % power["default_limit"],
            {"power_w": power}))
    found.extend(_pcie_findings(subject, state.get("pcie") or {}))
    found.extend(_memory_findings(subject, state.get("ecc") or {}))
    if state.get("persistence_mode") is False:
        found.append(Finding(
            F.GPU_PERSISTENCE_OFF, F.INFO, subject,
            "%s: persistence mode is off: the driver tears the GPU down when no process uses it, so each job's first "
            "CUDA call waits for it to initialise again." % subject,
            "nvidia-smi -i INDEX -pm 1 (as root), or run nvidia-persistenced."))
    mig = state.get("mig_mode") or {}
    if mig.get("current"):
        found.append(Finding(
            F.GPU_MIG_ENABLED, F.INFO, subject,
            "%s: MIG mode is on: a job sees one GPU instance, a fraction of the GPU's compute and memory." % subject,
            "Expected on a partitioned GPU; nvidia-smi -i INDEX -mig 0 (as root, no process on it) for the whole GPU."))
    others = [p for p in state.get("processes") or [] if p["pid"] not in ours and p.get("visible", True)]
    unseen = [p for p in state.get("processes") or [] if p["pid"] not in ours and not p.get("visible", True)]
    if others:
        found.append(Finding(
            F.GPU_SHARED, F.WARNING, subject,
            "%s: %d compute process(es) that do not use this venv run on it: %s." % (subject, len(others), _pids(others)),
            "Another tenant shares the GPU: its work competes with the venv's jobs for compute and memory.",
            {"processes": others}))
    elif unseen:
        found.append(Finding(
            F.GPU_SHARED, F.INFO, subject,
            "%s: %d compute process(es) of another PID namespace (another container, or the host) run on it: %s." % (
                subject, len(unseen), _pids(unseen)),
            "If none of them is this venv's job seen from the host, another tenant shares the GPU (nvidia-smi on the "
            "host names them).", {"processes": unseen}))
    return found


def _pids(processes) -> str:
    return ", ".join("pid %d (%s MiB)" % (p["pid"], p["used_memory_mib"]) for p in processes[:_SHOWN])


def _pcie_findings(subject: str, pcie: dict) -> List[Finding]:
    width, width_max = pcie.get("width"), pcie.get("width_max")
    gen, gen_max = pcie.get("generation"), pcie.get("generation_max")
    narrower = width is not None and width_max is not None and width < width_max
    slower = gen is not None and gen_max is not None and gen < gen_max
    if not narrower and not slower:
        return []
    message = "%s: its PCIe link runs at gen %s x%s of gen %s x%s." % (subject, gen, width, gen_max, width_max)
    if not narrower:
        return [Finding(F.GPU_PCIE_DEGRADED, F.INFO, subject, message + " An idle GPU lowers its link generation to save "
                        "power; under load it should run at the maximum.",
                        "Check again under load (nvidia-smi -q -d PCI); a link that stays slow needs reseating or its slot.",
                        {"pcie": pcie})]
    return [Finding(F.GPU_PCIE_DEGRADED, F.WARNING, subject, message + " A narrower link than the slot's maximum cuts "
                    "host-to-device bandwidth.",
                    "Reseat the card or check the slot and riser; the link width does not drop to save power.", {"pcie": pcie})]


def _memory_findings(subject: str, ecc: dict) -> List[Finding]:
    problems = []
    if ecc.get("uncorrected_volatile"):
        problems.append("%d uncorrected ECC error(s) since the driver loaded" % ecc["uncorrected_volatile"])
    if ecc.get("retired_pages_pending"):
        problems.append("retired pages pending (until a GPU reset)")
    if ecc.get("remapped_rows_pending"):
        problems.append("row remapping pending (until a GPU reset)")
    if ecc.get("remapping_failed"):
        problems.append("a row remapping failed")
    if not problems:
        return []
    return [Finding(F.GPU_MEMORY_ERRORS, F.WARNING, subject, "%s: %s." % (subject, "; ".join(problems)),
                    "Drain the GPU and reset it (nvidia-smi -i INDEX -r, or reboot); a failed remapping or errors that "
                    "come back need the machine's vendor.", {"ecc": ecc})]


# --- the jobs' environment and the processes on the venv ----------------------------------------------------------

def environment_findings(obs: Observations) -> List[Finding]:
    reading = obs.performance
    if reading is None:
        return []
    findings = []
    for setting in reading.activate:
        known = slow_variable(setting.name, setting.value)
        if known:
            where = "%s line %d" % (setting.source, setting.line)
            findings.append(Finding(
                F.ENV_SLOWS_CUDA, F.WARNING, "%s=%s" % (setting.name, setting.value),
                "%s sets %s=%s: %s. Every job that activates the venv gets it." % (where, setting.name, setting.value, known.cost),
                "Remove the line from %s, unless a job needs it for debugging." % setting.source,
                {"name": setting.name, "value": setting.value, "source": setting.source, "line": setting.line}))
    for proc in reading.processes:
        for name, value in proc.environment:
            known = slow_variable(name, value)
            if known:
                findings.append(Finding(
                    F.ENV_SLOWS_CUDA, F.WARNING, "%s=%s" % (name, value),
                    "pid %d (%s) runs with %s=%s: %s." % (proc.pid, proc.cmdline, name, value, known.cost),
                    "Remove it from the job's environment (its launcher, unit file or shell profile) and restart the job.",
                    {"name": name, "value": value, "pid": proc.pid}))
    return findings


def restart_findings(obs: Observations) -> List[Finding]:
    reading = obs.performance
    if reading is None:
        return []
    return [Finding(
        F.RESTART_NEEDED, F.WARNING, "pid %d" % proc.pid,
        "pid %d (%s) still runs %d file(s) of an older generation of the venv (%s), e.g. %s: it runs the libraries "
        "of before the last repair or swap until it restarts." % (
            proc.pid, proc.cmdline, len(proc.stale), ", ".join(sorted({why for _p, why in proc.stale})),
            ", ".join(p for p, _why in proc.stale[:3])),
        "Restart the process (the role's handler, see ansible_facts.cuda_venv.performance.restart_needed).",
        {"pid": proc.pid, "cmdline": proc.cmdline, "stale": [p for p, _why in proc.stale]})
        for proc in reading.processes if proc.stale]


RULES = (kernel_findings, gpu_state_findings, environment_findings, restart_findings)


def performance_findings(obs: Observations) -> List[Finding]:
    """Every performance finding of ``obs`` (none when the performance part was not read)."""
    return [finding for rule in RULES for finding in rule(obs)]


# --- the facts ----------------------------------------------------------------------------------------------------

def performance_facts(obs: Observations) -> dict:
    """``ansible_facts.cuda_venv.performance`` (its RETURN shape is documented in cuda_venv_facts)."""
    reading = obs.performance
    if reading is None:
        return {"gathered": False}
    targets = kernel_targets(obs)
    capabilities = sorted({t["compute_capability"] for t in targets}, key=_cc)
    extensions = []
    for ext in reading.extensions:
        row = {"path": obs.relpath(ext.path), "distribution": _owner(obs, ext.path), "error": ext.error}
        if ext.kernels is not None:
            row.update(ext.kernels.as_dict())
            row["verdicts"] = {cc: kernel_verdict(ext.kernels.sass, ext.kernels.ptx, cc)[0] for cc in capabilities}
        extensions.append(row)
    devices = obs.gpu.devices if obs.gpu is not None else ()
    ours = {p.pid for p in reading.processes}
    gpus = []
    for device, state in zip(devices, reading.gpu_states):
        row = {"index": device.index, "name": device.name, "compute_capability": device.compute_capability}
        row.update(state)
        if state.get("processes") is not None:
            row["processes"] = [dict(p, uses_venv=p["pid"] in ours) for p in state["processes"]]
        gpus.append(row)
    return {
        "gathered": True,
        "kernels": {"targets": targets, "extensions": extensions},
        "gpus": gpus,
        "environment": {
            "activate": [{"source": s.source, "line": s.line, "name": s.name, "value": s.value,
                          "slow": slow_variable(s.name, s.value) is not None} for s in reading.activate],
            "processes": [{"pid": p.pid, "name": name, "value": value, "slow": slow_variable(name, value) is not None}
                          for p in reading.processes for name, value in p.environment],
        },
        "processes": [{"pid": p.pid, "cmdline": p.cmdline, "mapped": p.mapped, "stale": len(p.stale),
                       "environment_error": p.environment_error} for p in reading.processes],
        "restart_needed": restart_needed(reading.processes),
        "seconds": dict(reading.seconds),
    }


def restart_needed(processes) -> List[dict]:
    """The processes (venv_processes.VenvProcess) still running files of an older generation of the venv: ``pid``,
    ``cmdline``, ``stale`` (paths as the kernel names them) and ``reasons``; what a role's handler restarts."""
    return [{"pid": p.pid, "cmdline": p.cmdline, "stale": [path for path, _why in p.stale],
             "reasons": sorted({why for _path, why in p.stale})} for p in processes if p.stale]
