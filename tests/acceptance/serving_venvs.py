# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The real LLM-serving stacks, built as their users build them: ``uv venv`` and ``uv pip install`` from the package
index, with uv's own configuration as this machine has it (its default index, ``UV_*`` variables, ``uv.toml``;
uv does not read pip's configuration) and one uv cache, ``CACHE/uv``, shared with acceptance_venvs.

Acceptance-test support for gpuops.cuda_venv: not part of the collection's API.

The first build of a stack downloads its wheels into uv's cache (several GB); every later build of it, with
``--link-mode hardlink``, resolves again (metadata only) and hard-links the files from the cache (seconds, almost
no disk). Files of a venv share inodes with uv's cache: nothing here writes into an existing file.

``python tests/acceptance/serving_venvs.py build NAME DEST`` builds one (``DEST`` must not exist);
``python tests/acceptance/serving_venvs.py report VENV`` prints what the acceptance notes record of a built one
(distributions, imports, paths of two RECORDs, the CUDA majors each distribution's ELF files link against).
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

if __package__ in (None, ""):  # run as a script: its folder and the repository root importable, as under pytest
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from acceptance_fetch import GB, AcceptanceError, cache_root, find_python, require_free  # noqa: E402
from acceptance_venvs import Completed, remove_tree, site_packages, uv_executable  # noqa: E402

PYTHON_VERSION = "3.12"  # the serving stacks' wheels (sglang-kernel, vllm, flashinfer) are built for it

# The top-level modules whose import is recorded, each in its own interpreter (the baseline before any repair).
IMPORTS = ("torch", "sglang", "sgl_kernel", "flashinfer", "vllm")
IMPORT_TIMEOUT = 600.0  # seconds per import: vllm's takes tens of seconds on 2 busy cores
IMPORT_PROBE = ("import importlib, json, sys; m = importlib.import_module(sys.argv[1]); "
                "print(json.dumps({'version': str(getattr(m, '__version__', ''))}))")


@dataclass(frozen=True)
class ServingStack:
    """One serving venv: the ``uv pip install`` runs after ``uv venv``, in order, and its application."""

    name: str
    installs: Tuple[Tuple[str, ...], ...]
    application: str  # the distribution the user asked for: its requirement closure is legitimate
    description: str
    uv_cache_bytes: int  # what filling uv's cache for it needs (measured, with a margin)
    run_bytes: int  # what a build and its repairs need beside a warm cache (measured, with a margin)
    # Distributions the application itself required, named in the task (also found from the METADATA closure).
    known_legitimate: Tuple[str, ...] = ()


STACKS = (
    ServingStack(
        "sglang-over-cu12", (("torch==2.9.1",), ("sglang==0.5.23",)), "sglang",
        "torch 2.9.1 (CUDA 12 wheels), then sglang 0.5.23: uv replaces torch by its CUDA 13 build and leaves the "
        "nvidia-*-cu12 wheels", 20 * GB, 12 * GB,
        ("sglang", "sglang-kernel", "flashinfer-python", "flashinfer-cubin", "torch-memory-saver", "nvidia-cutlass-dsl",
         "nvidia-cutlass-dsl-libs-cu12", "nvidia-cutlass-dsl-libs-cu13", "torch-c-dlpack-ext", "xgrammar")),
    ServingStack(
        "vllm", (("vllm==0.33.0",),), "vllm", "vllm 0.33.0 into an empty venv", 16 * GB, 10 * GB,
        ("vllm", "flashinfer-python", "flashinfer-cubin", "torch-c-dlpack-ext", "xgrammar", "nvidia-cutlass-dsl",
         "nvidia-cutlass-dsl-libs-cu12", "nvidia-cutlass-dsl-libs-cu13")),
)


def stack(name: str) -> ServingStack:
    return [s for s in STACKS if s.name == name][0]


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def find_python312() -> str:
    """CUDA_VENV_ACCEPTANCE_SERVING_PYTHON, else a working python3.12 on PATH or from pyenv (scripts/find_python.sh)."""
    return find_python(PYTHON_VERSION, "CUDA_VENV_ACCEPTANCE_SERVING_PYTHON")


def uv_env() -> Dict[str, str]:
    """This environment as a user's shell has it, uv's own settings (``UV_*``: indexes, index strategy) included, minus
    the variables that would point uv or Python elsewhere; uv's cache is the acceptance cache's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "CONDA_PREFIX"))
           and k not in ("UV_PYTHON", "UV_PROJECT_ENVIRONMENT", "UV_SYSTEM_PYTHON", "UV_NO_CACHE")}
    env.update({"LC_ALL": "C.UTF-8", "UV_CACHE_DIR": str(cache_root() / "uv"), "UV_LINK_MODE": "hardlink"})
    return env


def installer_settings() -> Dict[str, str]:
    """The ``UV_*`` variables of this machine a build runs with (UV_CACHE_DIR and UV_LINK_MODE are the acceptance's):
    what the notes say about the index configuration, credentials left out."""
    return {k: ("<set>" if re.search(r"TOKEN|PASSWORD|AUTH|CREDENTIAL|URL", k) else v)
            for k, v in sorted(uv_env().items()) if k.startswith("UV_")}


def run_uv(argv: Sequence, cwd: Path, timeout: float = 3600) -> Completed:
    argv = tuple(str(a) for a in argv)
    started = time.monotonic()
    proc = subprocess.run(argv, cwd=str(cwd), env=uv_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout, check=False)
    done = Completed(argv, proc.returncode, proc.stdout, time.monotonic() - started)
    if done.rc != 0:
        raise AcceptanceError("%s failed (rc %d):\n%s\nuv runs with its own configuration as this machine has it (uv.toml, "
                              "UV_* variables; not pip's): if it cannot resolve from the default index, configure uv "
                              "(for example UV_INDEX_STRATEGY, UV_INDEX_URL) and run again"
                              % (" ".join(argv), done.rc, done.output[-4000:]))
    return done


def build_serving(name: str, dest: Path) -> List[Completed]:
    """``uv venv --python PYTHON3.12 DEST``, then each ``uv pip install --python DEST/bin/python REQS`` of the stack,
    with the free disk checked first; returns every command run (argv, output, seconds)."""
    wanted = stack(name)
    if dest.exists():
        raise AcceptanceError("%s exists: each build goes into a new directory" % dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    uv_cache = cache_root() / "uv"
    warm = uv_cache.joinpath(".warm-serving-" + name).exists()
    require_free(dest.parent, wanted.run_bytes + (0 if warm else wanted.uv_cache_bytes), "the %s venv" % name)
    python = dest / "bin" / "python"
    done = [run_uv([uv_executable(), "venv", "--python", find_python312(), dest], cwd=dest.parent)]
    for requirements in wanted.installs:
        done.append(run_uv([uv_executable(), "pip", "install", "--python", python, "--link-mode", "hardlink",
                            *requirements], cwd=dest.parent))
    uv_cache.mkdir(parents=True, exist_ok=True)
    uv_cache.joinpath(".warm-serving-" + name).touch()
    return done


def import_one(venv: Path, module: str, workdir: Path, timeout: float = IMPORT_TIMEOUT) -> dict:
    """``VENV/bin/python -I -B -c 'import MODULE'`` from an empty directory (no bytecode written into the venv): ok,
    version, seconds, or the error line."""
    workdir.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "LD_PRELOAD"))}
    started = time.monotonic()
    try:
        proc = subprocess.run([str(venv / "bin" / "python"), "-I", "-B", "-c", IMPORT_PROBE, module], cwd=str(workdir),
                              env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": "timed out after %.0f s" % timeout, "seconds": round(time.monotonic() - started, 1)}
    seconds = round(time.monotonic() - started, 1)
    if proc.returncode == 0:
        try:
            return dict(json.loads(proc.stdout.strip().splitlines()[-1]), ok=True, seconds=seconds)
        except (ValueError, IndexError):
            return {"ok": True, "version": "", "seconds": seconds}
    return {"ok": False, "error": import_error(proc.stderr) or "rc %d" % proc.returncode, "rc": proc.returncode,
            "seconds": seconds}


_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b")


def import_error(stderr: str, limit: int = 320) -> str:
    """The exception Python printed last, from its line to the end on one line (a long one keeps its head and its
    tail, where sgl_kernel's names the library that failed)."""
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    starts = [i for i, line in enumerate(lines) if _EXCEPTION.match(line)]
    text = " ".join(" ".join(lines[starts[-1] if starts else -1:]).split()) if lines else ""
    return text if len(text) <= limit else text[:limit // 2] + " ... " + text[-limit // 2:]


def import_report(venv: Path, workdir: Path, modules: Sequence[str] = IMPORTS) -> Dict[str, dict]:
    """What imports work: each module in its own interpreter (no GPU here: some fail before any repair)."""
    return {module: import_one(venv, module, workdir) for module in modules}


def working(report: Dict[str, dict]) -> List[str]:
    return sorted(m for m, r in report.items() if r["ok"])


# --- what is installed, read from disk -------------------------------------------------------------------------

def dist_infos(venv: Path) -> Dict[str, Path]:
    found = {}
    for info in sorted(site_packages(venv).glob("*.dist-info")):
        found[canonical(info.name[:-len(".dist-info")].rpartition("-")[0])] = info
    return found


def metadata(dist_info: Path) -> Tuple[str, str, List[str]]:
    """(Name, Version, Requires-Dist lines) of a dist-info's METADATA."""
    name = version = ""
    requires = []
    with open(dist_info / "METADATA", encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if line in ("\n", "\r\n"):
                break  # the body starts (a header's continuation line starts with white space, may hold only that)
            if line[:1] in (" ", "\t"):
                continue
            key, _sep, value = line.partition(":")
            if key == "Name":
                name = value.strip()
            elif key == "Version":
                version = value.strip()
            elif key == "Requires-Dist":
                requires.append(value.strip())
    return name, version, requires


def inventory(venv: Path) -> List[Tuple[str, str, str]]:
    """(name, version, INSTALLER) of every dist-info, sorted by name: `uv pip list`'s content, read from disk."""
    rows = []
    for _canonical, info in sorted(dist_infos(venv).items()):
        name, version, _requires = metadata(info)
        installer = (info / "INSTALLER").read_text(encoding="utf-8").strip() if (info / "INSTALLER").is_file() else ""
        rows.append((name, version, installer))
    return rows


MARKER_ENVIRONMENT = """
import json, os, platform, sys
v = sys.implementation.version
iver = '%d.%d.%d' % (v.major, v.minor, v.micro) + ('' if v.releaselevel == 'final' else v.releaselevel[0] + str(v.serial))
print(json.dumps({'implementation_name': sys.implementation.name, 'implementation_version': iver,
    'os_name': os.name, 'platform_machine': platform.machine(), 'platform_release': platform.release(),
    'platform_system': platform.system(), 'platform_version': platform.version(),
    'python_full_version': platform.python_version(), 'platform_python_implementation': platform.python_implementation(),
    'python_version': '.'.join(platform.python_version_tuple()[:2]), 'sys_platform': sys.platform}))
"""


def marker_environment(venv: Path) -> dict:
    """PEP 508 marker variables of the venv's interpreter (computed by it, without packaging)."""
    proc = subprocess.run([str(venv / "bin" / "python"), "-I", "-c", MARKER_ENVIRONMENT], capture_output=True, text=True,
                          check=True, stdin=subprocess.DEVNULL, timeout=120)
    return json.loads(proc.stdout)


def requirement_closure(venv: Path, roots: Sequence[str]) -> List[str]:
    """Canonical names of the installed distributions ``roots`` require, transitively (their own included), with the
    extras each requirement asks for and the markers evaluated for the venv's interpreter."""
    from packaging.requirements import InvalidRequirement, Requirement  # the controller's (the tools venv has it)

    infos = dist_infos(venv)
    environment = marker_environment(venv)
    seen = set()
    todo = [(canonical(r), frozenset()) for r in roots]
    done = set()
    while todo:
        name, extras = todo.pop()
        if (name, extras) in done or name not in infos:
            continue
        done.add((name, extras))
        seen.add(name)
        for line in metadata(infos[name])[2]:
            try:
                requirement = Requirement(line)
            except InvalidRequirement:
                continue
            if requirement.marker is not None and not any(
                    requirement.marker.evaluate(dict(environment, extra=extra)) for extra in (sorted(extras) or [""])):
                continue
            todo.append((canonical(requirement.name), frozenset(requirement.extras)))
    return sorted(seen)


def legitimate(venv: Path, wanted: ServingStack, anchor: str = "torch") -> List[str]:
    """What the application itself required and is installed: its requirement closure without the anchor's (the
    anchor's CUDA wheels are the collection's own subject), plus the distributions the task names."""
    installed = set(dist_infos(venv))
    closure = set(requirement_closure(venv, [wanted.application])) - set(requirement_closure(venv, [anchor]))
    return sorted((closure | set(wanted.known_legitimate)) & installed)


_LABEL = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\s|\[|==|>=|<=|~=|!=|<|>|;|\(|,|$)")


def _labels(value) -> List[str]:
    """Distribution names a JSON value names: strings that start with a name followed by a version, a specifier or
    nothing ("sglang-kernel 0.4.10", "flashinfer-python", "torch==2.14.1"), and dict keys alike."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _labels(key) + _labels(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            found += _labels(item)
    elif isinstance(value, str):
        for part in value.split(" & "):
            match = _LABEL.match(part)
            if match:
                found.append(canonical(match.group(1)))
    return found


def colliding(findings: Sequence[dict]) -> List[str]:
    """The owners of a real collision: a FILE_OWNERSHIP_CONFLICT error (loadable paths with other bytes). The issue
    itself calls naming them right (cuda-python 12.6 over cuda-bindings 13 in vLLM's venv): what is wrong there is the
    installed version, not the distribution the application asked for."""
    return sorted({canonical(owner.split(" ", 1)[0]) for f in findings
                   if f.get("code") == "FILE_OWNERSHIP_CONFLICT" and f.get("severity") == "error"
                   for owner in (f.get("details") or {}).get("owners", ())})


def findings_naming(findings: Sequence[dict], names: Sequence[str], anchor_major: Optional[int] = None,
                    severities=("warning", "error")) -> List[dict]:
    """The findings of ``severities`` that accuse one of ``names`` (a distribution label, not a path:
    ``sglang/srt/...`` names the import package), each with the names it matched. CUDA_MAJOR_MIXED lists every CUDA
    wheel by major: only those of a major other than the anchor's (``anchor_major``) count. Not accusations:
    CONTAMINATION_SOURCE (provenance: the root a contaminant came with), the holders a CUDA_DIST_UNREQUIRED names
    (kept), and a FILE_OWNERSHIP_CONFLICT on paths nothing loads (the issue asks for that warning; it removes
    neither)."""
    wanted = set(names)
    flagged = []
    for finding in findings:
        if finding.get("severity") not in severities or finding.get("code") == "CONTAMINATION_SOURCE":
            continue
        details = finding.get("details") or {}
        if finding.get("code") == "FILE_OWNERSHIP_CONFLICT" and details.get("loadable") is False:
            continue
        if finding.get("code") == "CUDA_DIST_UNREQUIRED":
            details = {}
        if finding.get("code") == "CUDA_MAJOR_MIXED" and isinstance(details, dict) and anchor_major is not None:
            details = {major: listed for major, listed in details.items() if str(major) != str(anchor_major)}
        matched = sorted(set(_labels(finding.get("subject") or "") + _labels(details)) & wanted)
        if matched:
            flagged.append({"code": finding["code"], "severity": finding["severity"], "subject": finding.get("subject"),
                            "names": matched, "message": (finding.get("message") or "")[:600]})
    return flagged


def tree_metadata(venv: Path) -> Dict[str, Tuple[int, int, int, int]]:
    """{path: (mode, size, mtime_ns, inode)} of every entry but the state directory and uv's lock file: any write by an
    installer shows (both write new inodes), without hashing the venv."""
    state = {}
    for path in sorted(venv.rglob("*")):
        rel = path.relative_to(venv)
        if rel.parts[0] not in (".cuda_venv", ".lock"):
            st = path.lstat()
            state[str(rel)] = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino)
    return state


def tree_changes(before: Dict[str, tuple], after: Dict[str, tuple], limit: int = 20) -> List[str]:
    """What differs between two tree_metadata() readings: "+ path" (new), "- path" (gone), "~ path: what" (changed)."""
    fields = ("mode", "size", "mtime_ns", "inode")
    changes = ["+ " + p for p in sorted(set(after) - set(before))] + ["- " + p for p in sorted(set(before) - set(after))]
    for path in sorted(set(before) & set(after)):
        if before[path] != after[path]:
            differ = [f for f, a, b in zip(fields, before[path], after[path]) if a != b]
            changes.append("~ %s: %s" % (path, ", ".join(differ)))
    return changes[:limit] + (["... %d more" % (len(changes) - limit)] if len(changes) > limit else [])


def shared_paths(venv: Path) -> Dict[str, List[str]]:
    """Paths listed in two or more RECORDs (relative to site-packages) -> the "name version" of each owner."""
    owners: Dict[str, List[str]] = {}
    for name, version, paths in _records(venv):
        for path in paths:
            owners.setdefault(os.path.normpath(path), []).append("%s %s" % (name, version))
    return {path: names for path, names in sorted(owners.items()) if len(names) > 1}


def _records(venv: Path) -> List[Tuple[str, str, List[str]]]:
    """(name, version, the paths its RECORD lists) of each distribution that has a RECORD."""
    found = []
    for _canonical, info in sorted(dist_infos(venv).items()):
        name, version, _requires = metadata(info)
        record = info / "RECORD"
        if record.is_file():
            with open(record, newline="", encoding="utf-8", errors="replace") as handle:
                found.append((name, version, [row[0] for row in csv.reader(handle) if row]))
    return found


_CUDA_SONAME = re.compile(r"^lib(cudart|cublas|cublasLt)\.so\.(\d+)$")


def elf_needed(path: Path) -> Optional[List[str]]:
    """DT_NEEDED entries of an ELF file (pyelftools), or None when it is not one."""
    from elftools.common.exceptions import ELFError  # the tools venv has pyelftools
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile

    try:
        with open(path, "rb") as handle:
            if handle.read(4) != b"\x7fELF":
                return None
            handle.seek(0)
            elf = ELFFile(handle)
            needed = []
            for section in elf.iter_sections():
                if isinstance(section, DynamicSection):
                    needed += [tag.needed for tag in section.iter_tags() if tag.entry.d_tag == "DT_NEEDED"]
            return needed
    except (ELFError, OSError, ValueError):
        return None


def cuda_links(venv: Path) -> Dict[str, Dict[str, List[str]]]:
    """Per distribution shipping ELF files that need libcudart.so.N / libcublas(Lt).so.N: soname -> its files."""
    site = site_packages(venv)
    result: Dict[str, Dict[str, List[str]]] = {}
    for name, version, paths in _records(venv):
        for rel in paths:
            if not re.search(r"\.so(\.|$)", rel):
                continue
            needed = elf_needed(site / rel)
            for soname in needed or ():
                if _CUDA_SONAME.match(soname):
                    result.setdefault("%s %s" % (name, version), {}).setdefault(soname, []).append(rel)
    return result


def majors(links: Dict[str, List[str]]) -> List[str]:
    return sorted({_CUDA_SONAME.match(s).group(2) for s in links}, key=int)


def report(venv: Path) -> str:
    """The Markdown notes of a built serving venv: distributions, imports, shared paths, CUDA majors linked."""
    lines = ["### %s" % venv, "", "Distributions (name==version, INSTALLER):", "", "```"]
    lines += ["%s==%s %s" % row for row in inventory(venv)]
    lines += ["```", "", "Imports (each `bin/python -I -B -c 'import M'` from an empty directory):", ""]
    workdir = Path(os.environ.get("TMPDIR", "/tmp")) / ("serving-imports-%d" % os.getpid())
    for module, result in import_report(venv, workdir).items():
        lines.append("- `import %s`: %s (%.1f s)" % (module, ("ok %s" % result.get("version", "")) if result["ok"]
                                                     else "FAILS: %s" % result["error"], result["seconds"]))
    remove_tree(workdir)
    shared = shared_paths(venv)
    by_owners: Dict[Tuple[str, ...], List[str]] = {}
    for path, owners in shared.items():
        by_owners.setdefault(tuple(owners), []).append(path)
    lines += ["", "Paths listed in two RECORDs: %d, by owners:" % len(shared), ""]
    for owners, paths in sorted(by_owners.items()):
        lines.append("- %s: %d (%s%s)" % (" & ".join(owners), len(paths), ", ".join(paths[:4]),
                                          ", ..." if len(paths) > 4 else ""))
    lines += ["", "ELF files linking libcudart / libcublas / libcublasLt, by distribution: majors (sonames, files):", ""]
    for dist, links in cuda_links(venv).items():
        counts = ["%s: %d file%s" % (soname, len(files), "s" if len(files) > 1 else "")
                  for soname, files in sorted(links.items())]
        lines.append("- %s: CUDA %s (%s)" % (dist, ", ".join(majors(links)), "; ".join(counts)))
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str]) -> int:
    if len(argv) == 3 and argv[0] == "build":
        started = time.monotonic()
        try:
            for done in build_serving(argv[1], Path(argv[2]).resolve()):
                print("+ %s\n  rc %d, %.1f s" % (" ".join(done.argv), done.rc, done.seconds))
        except AcceptanceError as exc:
            print("acceptance: %s" % exc, file=sys.stderr)
            return 1
        print("built %s in %.1f s" % (argv[2], time.monotonic() - started))
        return 0
    if len(argv) == 2 and argv[0] == "report":
        sys.stdout.write(report(Path(argv[1]).resolve()))
        return 0
    print("usage: serving_venvs.py build {%s} DEST | report VENV" % ",".join(s.name for s in STACKS), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
