"""strategy swap through Ansible on stand-in CUDA venvs: same result as in place, no broken window, fallbacks."""

import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest

from scenario_tools import ROOT, codes, run_module
from tests.support.import_loop import import_loop
from tests.standin import build_scenario
from tests.standin._layout import DistSpec
from tests.standin._wheel import write_wheel

from ansible_collections.gpuops.cuda_venv.tests.support.tree_digest import tree_digest, tree_state

CACHE = os.environ.get("CUDA_VENV_STANDIN_CACHE", os.path.join(ROOT, "build", "standin-cache"))
MTIME = 5
TOOL = DistSpec(name="cuda-venv-tool", version="1.0", requires_dist=(), elf_files=(), python_files=(), data_files=())
TOOL_INFO = "cuda_venv_tool-1.0.dist-info"


def fresh(tmp_path, name):
    return build_scenario(name, tmp_path / name, cache=CACHE)


def repair_args(info, **extra):
    links = [str(info.wheelhouse)] + ([str(info.extra_wheelhouse)] if info.extra_wheelhouse else [])
    args = dict(path=str(info.venv), find_links=links, no_index=True, backend="pip")
    args.update(extra)
    return args


def repair(tmp_path, info, check=False, **extra):
    return run_module(tmp_path, "cuda_venv_repair", repair_args(info, **extra), check=check)


def swap_dir(venv):
    return os.path.join(os.path.dirname(str(venv)), ".%s.cuda_venv" % os.path.basename(str(venv)))


def tool_wheelhouse(dest):
    """A wheel with a console script and a Python module: pip writes a shebang naming the venv and bytecode."""
    dest.mkdir(parents=True, exist_ok=True)
    files = {
        "cuda_venv_tool/__init__.py": (b"def main():\n    return 0\n", False),
        TOOL_INFO + "/entry_points.txt": (b"[console_scripts]\ncuda-venv-tool = cuda_venv_tool:main\n", False),
    }
    write_wheel(dest, TOOL, files)
    return dest


def clone_to(info, dest):
    import dataclasses
    dest.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cp", "-a", "--", str(info.venv), str(dest)], check=True)
    return dataclasses.replace(info, venv=dest)


def comparable(root):
    """tree_state without mtimes; bytecode compared without the source mtime its header carries."""
    state = {}
    for rel, value in tree_state(str(root)).items():
        value = value[:MTIME] + value[MTIME + 1:]
        if rel.endswith(".pyc"):
            with open(os.path.join(str(root), rel), "rb") as handle:
                data = handle.read()
            value = value[:-2] + (hashlib.sha256(data[:8] + data[12:]).hexdigest(), value[-1])
        state[rel] = value
    return state


@pytest.mark.parametrize("depth, backend", [("short", "pip"), ("long", "pip"), ("short", "uv")])
def test_swap_gives_the_same_venv_as_in_place(tmp_path, depth, backend):
    """One broken state (contaminated, plus a damaged wheel with a console script and a module) repaired both ways.

    long: the venv's own shebang fits 127 bytes, the copy's does not (pip writes the /bin/sh launcher there)."""
    base = fresh(tmp_path, "contaminated")
    wheels = tool_wheelhouse(tmp_path / "tool-wheels")
    subprocess.run([str(base.venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index", "--find-links",
                    str(wheels), "cuda-venv-tool==1.0"], check=True, env=dict(os.environ, PIP_CONFIG_FILE=os.devnull))
    site = next(base.venv.glob("lib/python3.*/site-packages"))
    (site / "cuda_venv_tool" / "__init__.py").unlink()  # damaged: RECORD_MISSING_FILES -> reinstalled
    parent = tmp_path / "at"
    if depth == "long":
        # live: 127 - len("#!") - len("/bin/python\n") = 114 bytes of root at most; the copy adds ".venv.cuda_venv/next"
        parent = parent / ("d" * (110 - len(str(parent)) - len("/venv") - 1))
    states, results = {}, {}
    for strategy in ("in_place", "swap"):  # one path for both: what the installers write names it
        info = clone_to(base, parent / "venv")
        uv = dict(backend="uv", uv_executable=os.path.join(os.path.dirname(sys.executable), "uv")) if backend == "uv" else {}
        rc, result, output = repair(tmp_path, info, strategy=strategy, packages=["cuda-venv-tool==1.0"],
                                    find_links=[str(base.wheelhouse), str(base.extra_wheelhouse), str(wheels)], **uv)
        assert rc == 0, output
        assert result["healthy"] is True and result["strategy"] == strategy, result.get("summary")
        states[strategy], results[strategy] = comparable(info.venv), result
        if strategy == "in_place":
            shutil.rmtree(str(info.venv))
    swapped, result = info.venv, results["swap"]
    assert len(str(swapped)) == (110 if depth == "long" else len(str(swapped)))
    assert result["exchange"] == "renameat2"
    pyc = "cuda_venv_tool/__pycache__/__init__.cpython-"
    assert "bin/cuda-venv-tool" in result["rewritten"], result
    assert any(pyc in p and p.endswith(".pyc") for p in result["rewritten"]) is (backend == "pip")  # uv compiles none
    script = (swapped / "bin" / "cuda-venv-tool").read_bytes()
    assert script.startswith(b"#!" + str(swapped).encode() + b"/bin/python\n"), script[:200]
    a, b = states["in_place"], states["swap"]
    assert sorted(a) == sorted(b)
    assert [k for k in sorted(a) if a[k] != b[k]] == []
    assert subprocess.run([str(swapped / "bin" / "cuda-venv-tool")], check=False).returncode == 0
    assert os.path.isdir(result["previous"]) and not os.path.exists(os.path.join(swap_dir(swapped), "next"))


def test_imports_never_fail_during_a_swap_and_what_in_place_shows(tmp_path):
    report = {}
    for strategy in ("in_place", "swap"):
        info = fresh(tmp_path / strategy, "contaminated")
        empty = tmp_path / strategy / "empty"
        empty.mkdir()
        with import_loop(str(info.venv / "bin" / "python"), str(empty)) as seen:
            rc, result, output = repair(tmp_path, info, strategy=strategy)
        assert rc == 0 and result["strategy"] == strategy, output
        failures = [error for rc, error in seen if rc != 0]
        report[strategy] = {"imports": len(seen), "failed": len(failures), "errors": sorted(set(failures))}
    os.makedirs(os.path.join(ROOT, "build", "swap"), exist_ok=True)
    with open(os.path.join(ROOT, "build", "swap", "import-loop.json"), "w") as handle:
        json.dump(report, handle, indent=1)
    print("import loop during the repair of contaminated: %s" % json.dumps(report))
    assert report["swap"]["imports"] >= 5 and report["swap"]["failed"] == 0, report


def test_failed_install_discards_the_copy_and_leaves_the_venv(tmp_path):
    info = fresh(tmp_path, "curand-removed")
    digest = tree_digest(str(info.venv))
    rc, result, output = repair(tmp_path, info, find_links=[str(tmp_path)], strategy="swap")
    assert rc != 0
    assert "install failed" in result["msg"] and "nvidia-curand" in result["msg"], result["msg"]
    assert result["strategy"] == "swap" and str(info.venv) in json.dumps(result["batches"])
    assert ".venv.cuda_venv/next" not in json.dumps(result)
    assert tree_digest(str(info.venv)) == digest
    assert os.listdir(swap_dir(info.venv)) == ["journal.prev.jsonl"]  # the copy is gone, the journal closed


def test_swap_back_brings_the_previous_generation_back(tmp_path):
    info = fresh(tmp_path, "gutted")
    before = comparable(info.venv)
    rc, result, output = repair(tmp_path, info)
    assert rc == 0 and result["strategy"] == "swap" and result["healthy"] is True, output
    repaired = comparable(info.venv)
    rc, back, output = repair(tmp_path, info, swap_back=True)
    assert rc == 0 and back["strategy"] == "swap_back" and back["changed"] is True, output
    assert back["healthy"] is False and comparable(info.venv) == before
    rc, forward, output = repair(tmp_path, info, swap_back=True)
    assert rc == 0 and comparable(info.venv) == repaired
    rc, checked, output = repair(tmp_path, info, check=True)
    assert rc == 0 and checked["changed"] is False and checked["strategy"] is None


def test_keep_previous_zero_keeps_no_generation(tmp_path):
    info = fresh(tmp_path, "truncated-nccl")
    rc, result, output = repair(tmp_path, info, keep_previous=0)
    assert rc == 0 and result["strategy"] == "swap" and result["previous"] is None, output
    assert sorted(os.listdir(swap_dir(info.venv))) == ["journal.prev.jsonl"]
    rc, result, output = repair(tmp_path, info, swap_back=True)
    assert rc != 0 and "has no previous generation to swap back to" in result["msg"]


@pytest.fixture
def bind_mounted(tmp_path):
    """The gutted venv bind-mounted onto itself: its root is a mount point, as in a Proxmox container."""
    info = fresh(tmp_path, "gutted")
    proc = subprocess.run(["mount", "--bind", str(info.venv), str(info.venv)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.skip("cannot bind-mount here: %s" % proc.stderr.strip())
    try:
        yield info
    finally:
        subprocess.run(["umount", str(info.venv)], check=True)


def test_a_mount_point_falls_back_to_in_place_and_explicit_swap_fails(tmp_path, bind_mounted):
    info = bind_mounted
    assert subprocess.run(["mountpoint", "-q", str(info.venv)], check=False).returncode == 0
    digest = tree_digest(str(info.venv))
    reason = "the venv root %s is a mount point (rename(2) cannot move it)" % info.venv
    rc, planned, output = repair(tmp_path, info, check=True)
    assert rc == 0 and planned["strategy"] == "in_place", output
    assert planned["strategy_reason"] == "fell back to in_place: " + reason
    rc, failed, output = repair(tmp_path, info, strategy="swap")
    assert rc != 0
    assert failed["msg"] == ("strategy swap cannot work for %s: %s; use strategy in_place (or auto, which falls back)"
                             % (info.venv, reason))
    assert tree_digest(str(info.venv)) == digest and not os.path.exists(swap_dir(info.venv))
    rc, result, output = repair(tmp_path, info, verify_before_swap=True)
    assert rc == 0 and result["strategy"] == "in_place" and result["healthy"] is True, output
    assert result["strategy_reason"] == "fell back to in_place: " + reason
    assert result["swap_benchmark"] == {"status": "skipped", "kept_live": False, "summary": (
        "the repair ran in place (fell back to in_place: %s): no copy to benchmark against the live venv" % reason)}
    assert codes(run_module(tmp_path, "cuda_venv_facts", dict(path=str(info.venv)))[1]["ansible_facts"]["cuda_venv"],
                 "error") == []


def test_explicit_swap_fails_when_the_parent_is_read_only(tmp_path):
    info = fresh(tmp_path, "truncated-nccl")
    parent = os.path.dirname(str(info.venv))
    digest = tree_digest(str(info.venv))
    os.chmod(parent, 0o555)
    try:
        prefix = [] if os.geteuid() else ["setpriv", "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search"]
        if prefix and shutil.which("setpriv") is None:
            pytest.skip("root bypasses permissions and setpriv is missing")
        args = json.dumps(repair_args(info, strategy="swap"))
        proc = subprocess.run(prefix + [os.path.join(os.path.dirname(sys.executable), "ansible"), "localhost", "-m",
                                        "gpuops.cuda_venv.cuda_venv_repair", "-a", args], cwd=ROOT,
                              env=_env(tmp_path), capture_output=True, text=True, check=False)
    finally:
        os.chmod(parent, 0o755)
    assert proc.returncode != 0
    assert "strategy swap cannot work for %s: the parent directory %s is not writable" % (info.venv, parent) in proc.stdout
    assert tree_digest(str(info.venv)) == digest


def _env(tmp_path):
    from scenario_tools import ansible_env
    return ansible_env(tmp_path)


# The user's workload for verify_before_swap: tokens/s read from a file the tool's wheel ships (100), inside the venv
# that runs it.
SPEED_STEP = ("import os, cuda_venv_tool\n"
              "print('tokens/s: %d' % int(open(os.path.join(os.path.dirname(cuda_venv_tool.__file__), 'speed.txt')).read()))\n")


@pytest.mark.parametrize("live_speed, swapped", [("1000\n", False), ("0100\n", True)])
def test_verify_before_swap_keeps_the_live_venv_when_the_copy_is_slower(tmp_path, live_speed, swapped):
    """The live speed.txt edited by hand (another size: reinstalled); the repaired copy reads the wheel's 100."""
    info = fresh(tmp_path, "healthy-cu12")
    wheels = tmp_path / "tool-wheels"
    wheels.mkdir()
    write_wheel(wheels, TOOL, {"cuda_venv_tool/__init__.py": (b"", False), "cuda_venv_tool/speed.txt": (b"100\n", False)})
    subprocess.run([str(info.venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index", "--find-links",
                    str(wheels), "cuda-venv-tool==1.0"], check=True, env=dict(os.environ, PIP_CONFIG_FILE=os.devnull))
    speed = next(info.venv.glob("lib/python3.*/site-packages")) / "cuda_venv_tool" / "speed.txt"
    speed.write_text(live_speed, encoding="utf-8")
    step = tmp_path / "step.py"
    step.write_text(SPEED_STEP, encoding="utf-8")
    digest = tree_digest(str(info.venv))
    command = [str(info.venv / "bin" / "python"), str(step)]
    rc, result, output = repair(tmp_path, info, strategy="swap", packages=["cuda-venv-tool==1.0"], revert_edits=True,
                                find_links=[str(info.wheelhouse), str(wheels)], verify_before_swap=True,
                                benchmark=dict(command=command, command_regex=r"tokens/s: (\d+)"))
    bench = result["swap_benchmark"]
    copy = os.path.join(swap_dir(info.venv), "next")
    assert bench["status"] == "compared" and bench["kept_live"] is not swapped, output
    assert bench["live"]["runs"] == {"command_throughput": [float(int(live_speed))] * 3}
    assert bench["copy"]["runs"] == {"command_throughput": [100.0] * 3}
    assert bench["copy"]["command"]["argv"] == [os.path.join(copy, "bin", "python"), str(step)]
    assert bench["builtin_skipped"] == "torch.cuda.is_available() is False (torch 2.9.1+cu128, CUDA 12.8)"
    if swapped:
        assert rc == 0 and result["changed"] is True and result["exchange"] == "renameat2", output
        assert bench["comparison"][0]["verdict"] == "within noise"
        assert speed.read_text(encoding="utf-8") == "100\n"
        return
    assert rc != 0 and result["changed"] is False
    assert result["msg"] == ("the repaired copy is slower than the live venv: command_throughput 100.0 is 0.100 of the baseline 1000.0: "
                             "90.0% slower (min_ratio 1, noise band 2.0%); kept the live venv, the copy was discarded")
    assert tree_digest(str(info.venv)) == digest  # byte-identical
    assert os.listdir(swap_dir(info.venv)) == ["journal.prev.jsonl"]  # no copy, no previous generation, the journal closed
