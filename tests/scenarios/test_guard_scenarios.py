"""cuda_venv_repair's install guard on stand-in venvs (Ansible, real pip, real uv, real bash).

A guarded cu12 venv refuses a consumer that needs the cu13 torch, and a colliding cu13 wheel: through pip (the venv's
pip.conf), uv with the venv activated (UV_CONSTRAINT from bin/activate, sourced by bash), and uv through the opt-in
uv.toml (XDG_CONFIG_HOME pointed at a temporary folder). Each refusal leaves the venv byte-identical.
"""

import os
import re
import subprocess
import zipfile

import pytest

from scenario_tools import ROOT, codes, run_module
from tests.standin import build_scenario, build_wheelhouse

from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import make_wheel, record_line
from ansible_collections.gpuops.cuda_venv.tests.support.tree_digest import tree_state

CACHE = os.environ.get("CUDA_VENV_STANDIN_CACHE", os.path.join(ROOT, "build", "standin-cache"))
UV = os.path.join(ROOT, "build", "tools", "bin", "uv")
GUARD_FILES = ["bin/activate", "bin/activate.csh", "bin/activate.fish", "pip.conf"]


def _installer_env(**extra):
    """The user's shell: no PIP_CONFIG_FILE (pip reads the venv's pip.conf), no UV_* of this machine."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(extra)
    return env


def _run(argv, **env):
    return subprocess.run(argv, env=_installer_env(**env), capture_output=True, text=True, timeout=300, check=False, cwd="/")


def _state(venv, exclude=(".cuda_venv",)):
    return tree_state(str(venv), exclude)


def _bytes(venv, rels):
    return {rel: (venv / rel).read_bytes() if (venv / rel).exists() else None for rel in rels}


@pytest.fixture(scope="module")
def wheels(tmp_path_factory):
    """cu130's stack, a consumer that needs its torch, a harmless package, and torch 2.9.2 (the cu12 torch again)."""
    dest = tmp_path_factory.mktemp("wheels")
    cu130 = build_wheelhouse("cu130", dest / "cu130", cache=CACHE)
    extra = dest / "extra"
    extra.mkdir()
    make_wheel(str(extra), "cu13-consumer", "1.0", {"cu13_consumer/__init__.py": b""}, requires=["torch==2.14.1"])
    harmless = dest / "harmless"
    harmless.mkdir()
    make_wheel(str(harmless), "harmless", "1.0", {"harmless/__init__.py": b"VALUE = 1\n"})
    return {"cu130": cu130, "extra": extra, "harmless": harmless, "dest": dest}


def _venv(tmp_path, name):
    return build_scenario("healthy-cu12", tmp_path / name, cache=CACHE)


def repair(tmp_path, info, check=False, diff=False, env=None, sources=(), **args):
    args = dict(dict(path=str(info.venv), find_links=[str(info.wheelhouse)] + [str(s) for s in sources], no_index=True,
                     backend="pip"), **args)
    # PIP_CONFIG_FILE unset: the module's pip reads the venv's pip.conf, guard included, as on a user's node.
    return run_module(tmp_path, "cuda_venv_repair", args, check=check, diff=diff,
                      env=dict({"PIP_CONFIG_FILE": None}, **(env or {})))


def facts(tmp_path, venv):
    rc, result, output = run_module(tmp_path, "cuda_venv_facts", {"path": str(venv), "probe": False, "gpu": False})
    assert rc == 0, output
    return result["ansible_facts"]["cuda_venv"]


def _rebuilt_as(wheel, version, dest):
    """The stand-in torch wheel under another version: same files, its dist-info renamed, METADATA and RECORD anew."""
    old = re.match(r"([^-]+)-([^-]+)-", os.path.basename(wheel))
    name, was = old.group(1), old.group(2)
    members = {}
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            data = archive.read(member)
            member = member.replace("%s-%s.dist-info" % (name, was), "%s-%s.dist-info" % (name, version))
            if member.endswith(".dist-info/METADATA"):
                data = data.replace(b"Version: " + was.encode(), b"Version: " + version.encode())
            if not member.endswith("/RECORD"):
                members[member] = data
    info = "%s-%s.dist-info" % (name, version)
    record = "".join(record_line(p, d) + "\n" for p, d in members.items()) + info + "/RECORD,,\n"
    path = os.path.join(str(dest), os.path.basename(wheel).replace(was, version))
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in members.items():
            archive.writestr(member, data)
        archive.writestr(info + "/RECORD", record)
    return path


def test_guard_refuses_the_other_major_through_pip_and_activated_uv_and_comes_off_exact(tmp_path, wheels):
    info = _venv(tmp_path, "one")
    venv = info.venv
    # The user's own pip.conf: packages come from their find-links folder, no index.
    (venv / "pip.conf").write_text("[global]\nno-index = true\nfind-links = %s\n" % wheels["harmless"], encoding="utf-8")
    originals = _bytes(venv, GUARD_FILES)
    untouched = _state(venv, exclude=())

    # Check mode and --diff: the files the guard would add or change, nothing written.
    rc, result, output = repair(tmp_path, info, check=True, diff=True, guard=True)
    assert rc == 0, output
    guard_dir = str(venv / ".cuda_venv" / "guard")
    assert result["changed"] is True
    assert result["guard"]["changed"] == [guard_dir + "/constraints.txt", guard_dir + "/manifest.json"] + [
        str(venv / rel) for rel in GUARD_FILES]
    assert result["guard"]["active"] is False
    assert "+constraint = %s/constraints.txt" % guard_dir in output  # pip.conf's diff
    assert _state(venv, exclude=()) == untouched

    rc, result, output = repair(tmp_path, info, guard=True)
    assert rc == 0, output
    assert result["changed"] is True and result["strategy"] is None
    constraints = result["guard"]["constraints"]
    assert constraints[0] == "torch==2.9.1"
    assert "nvidia-cudnn-cu12==9.10.2.21" in constraints and "nvidia-nccl-cu12==2.27.5" in constraints
    assert constraints[-4:] == ["nvidia-cudnn-cu13<0", "nvidia-cusparselt-cu13<0", "nvidia-nccl-cu13<0", "nvidia-nvshmem-cu13<0"]
    assert result["guard"]["honoured_by"] == {"pip": True, "uv_config": None,
                                              "uv_activated": [str(venv / r) for r in GUARD_FILES[:3]]}
    assert (venv / "pip.conf").read_text(encoding="utf-8") == (
        "[global]\nno-index = true\nfind-links = %s\n\n[install]\n# cuda_venv guard (guard: false removes this)\n"
        "constraint = %s/constraints.txt\n" % (wheels["harmless"], guard_dir))
    guarded = _state(venv)

    # pip refuses the consumer of the cu13 torch, and a colliding cu13 wheel even without deps.
    links = ["--find-links", str(wheels["extra"]), "--find-links", str(wheels["cu130"])]
    proc = _run([str(venv / "bin/python"), "-m", "pip", "install"] + links + ["cu13-consumer"])
    assert proc.returncode == 1 and "ResolutionImpossible" in proc.stderr, proc.stdout + proc.stderr
    assert "The user requested (constraint) torch==2.9.1" in proc.stdout + proc.stderr
    proc = _run([str(venv / "bin/python"), "-m", "pip", "install", "--no-deps"] + links + ["nvidia-cudnn-cu13"])
    assert proc.returncode == 1 and "ResolutionImpossible" in proc.stderr, proc.stdout + proc.stderr
    assert _state(venv) == guarded

    # uv with the venv activated: UV_CONSTRAINT from bin/activate; deactivate puts the user's own value back.
    proc = _run(["bash", "-c", 'export UV_CONSTRAINT=/dev/null; source "$0/bin/activate"; '
                 'echo "during=$UV_CONSTRAINT"; "$1" pip install --no-index "${@:2}" cu13-consumer; '
                 'echo "rc=$?"; deactivate; echo "after=$UV_CONSTRAINT"', str(venv), UV] + links)
    assert "during=/dev/null %s/constraints.txt" % guard_dir in proc.stdout, proc.stdout + proc.stderr
    assert "rc=1" in proc.stdout and "after=/dev/null\n" in proc.stdout, proc.stdout + proc.stderr
    assert "depend on torch==2.14.1 and torch==2.9.1" in " ".join(proc.stderr.split()), proc.stderr  # uv may wrap
    lock = venv / ".lock"  # uv makes its lock file in the root of any environment it installs into
    if lock.exists():
        lock.unlink()
    assert {k: v for k, v in _state(venv).items() if k != "."} == {k: v for k, v in guarded.items() if k != "."}

    # A harmless package installs, from the user's own find-links (their pip.conf still works), and the guard holds.
    proc = _run([str(venv / "bin/python"), "-m", "pip", "install", "harmless"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = facts(tmp_path, venv)
    assert "GUARD_STALE" not in codes(found) and found["guard"]["active"] is True
    assert found["guard"]["constraints"] == constraints and found["guard"]["problems"] == []

    # A second guarded run changes nothing.
    rc, result, output = repair(tmp_path, info, guard=True)
    assert rc == 0 and result["changed"] is False and result["guard"]["changed"] == [], output

    # guard: false puts the user's files back byte for byte.
    rc, result, output = repair(tmp_path, info, guard=False)
    assert rc == 0 and result["changed"] is True, output
    assert _bytes(venv, GUARD_FILES) == originals
    assert not (venv / ".cuda_venv" / "guard").exists()
    assert facts(tmp_path, venv)["guard"]["active"] is False


def test_uv_config_guard_refuses_without_activation_and_is_refused_for_a_second_venv(tmp_path, wheels):
    one, two = _venv(tmp_path, "one"), _venv(tmp_path, "two")
    config = tmp_path / "xdg"
    (config / "uv").mkdir(parents=True)
    uv_toml = config / "uv" / "uv.toml"
    uv_toml.write_bytes(b'[pip]\nindex-strategy = "first-index"\n')
    original = uv_toml.read_bytes()
    env = {"XDG_CONFIG_HOME": str(config)}
    rc, result, output = repair(tmp_path, one, env=env, guard=True, guard_uv_config="user")
    assert rc == 0, output
    assert result["guard"]["honoured_by"]["uv_config"] == str(uv_toml)
    text = uv_toml.read_text(encoding="utf-8")
    assert text.startswith("# cuda_venv guard of %s (guard: false removes it)\nconstraint-dependencies = [\n"
                           '    "torch==2.9.1",\n' % one.venv)
    assert text.endswith('    "nvidia-nvshmem-cu13<0",\n]\n' + original.decode())
    guarded = _state(one.venv)
    proc = _run([UV, "pip", "install", "--python", str(one.venv / "bin/python"), "--no-index", "--find-links",
                 str(wheels["extra"]), "--find-links", str(wheels["cu130"]), "cu13-consumer"], **env)
    assert proc.returncode == 1 and "depend on torch==2.14.1 and torch==2.9.1" in " ".join(proc.stderr.split()), proc.stderr
    lock = one.venv / ".lock"
    if lock.exists():
        lock.unlink()
    assert {k: v for k, v in _state(one.venv).items() if k != "."} == {k: v for k, v in guarded.items() if k != "."}

    # Another venv would be constrained by the same file: refused, nothing of it changed.
    untouched = _state(two.venv, exclude=())
    rc, result, output = repair(tmp_path, two, env=env, guard=True, guard_uv_config="user")
    assert rc != 0
    assert "holds the guard of another venv, %s" % one.venv in result["msg"]
    assert _state(two.venv, exclude=(".cuda_venv",)) == {k: v for k, v in untouched.items() if k != ".cuda_venv"}
    assert not (two.venv / ".cuda_venv" / "guard").exists()

    rc, result, output = repair(tmp_path, one, env=env, guard=False)
    assert rc == 0, output
    assert uv_toml.read_bytes() == original


@pytest.mark.parametrize("strategy", ["swap", "in_place"])
def test_a_declared_anchor_change_goes_through_the_guard_and_renews_it(tmp_path, wheels, strategy):
    info = _venv(tmp_path, "one")
    venv = info.venv
    newer = tmp_path / "newer"
    newer.mkdir()
    _rebuilt_as(str(info.wheelhouse / "torch-2.9.1-py3-none-any.whl"), "2.9.2", newer)
    rc, result, output = repair(tmp_path, info, guard=True, strategy=strategy)
    assert rc == 0 and result["guard"]["constraints"][0] == "torch==2.9.1", output
    # pip, reading the venv's pip.conf, would refuse torch 2.9.2; the repair's own pip is not held by the guard.
    rc, result, output = repair(tmp_path, info, sources=[newer], guard=True, strategy=strategy, packages=["torch==2.9.2"])
    assert rc == 0, output
    assert result["strategy"] == strategy and result["changed"] is True
    assert [a["requirement"] for b in result["plan"]["batches"] for a in b["actions"]] == ["torch==2.9.2"]
    assert result["guard"]["constraints"][0] == "torch==2.9.2" and result["guard"]["problems"] == []
    assert str(venv / ".cuda_venv/guard/constraints.txt") in result["guard"]["changed"]
    assert "torch==2.9.2\n" in (venv / ".cuda_venv/guard/constraints.txt").read_text(encoding="utf-8")
    assert "GUARD_STALE" not in codes(result)
    proc = _run([str(venv / "bin/python"), "-m", "pip", "install", "--no-deps", "--no-index", "--find-links",
                 str(info.wheelhouse), "torch==2.9.1"])
    assert proc.returncode == 1 and "ResolutionImpossible" in proc.stderr, proc.stdout + proc.stderr

    # Going round the guard is reported. PIP_CONFIG_FILE=/dev/null skips the venv's pip.conf (pip 24's --isolated
    # does not: it skips the environment and the user's file, and still reads sys.prefix/pip.conf).
    proc = _run([str(venv / "bin/python"), "-m", "pip", "install", "--no-deps", "--no-index", "--find-links",
                 str(wheels["cu130"]), "nvidia-cudnn-cu13"], PIP_CONFIG_FILE=os.devnull)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = facts(tmp_path, venv)
    stale = [f for f in found["findings"] if f["code"] == "GUARD_STALE"]
    assert [(f["severity"], f["subject"]) for f in stale] == [("warning", str(venv))]
    assert stale[0]["details"]["problems"] == ["nvidia-cudnn-cu13 9.24.0.43 is installed although the guard refuses it"]
    assert found["guard"]["problems"] == stale[0]["details"]["problems"]
