"""playbooks/repair.yml through the real ansible-playbook on three stand-in hosts: --check, repair, rollback, rerun, recap.

One flow on three venvs (each playbook run costs tens of seconds): `gutted` is repaired on a copy that is swapped in
(venv_repair_strategy auto); `partial-restore` (strategy in_place, one batch per step) gets a wheelhouse without
nvidia-nccl-cu12, so its second batch fails and is rolled back while `gutted` is repaired; `partial-swap` (the same,
strategy auto) fails on its copy, which is discarded; with the wheel back, both repair; then a run changes nothing.
"""

import base64
import functools
import glob
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import zipfile
from importlib import metadata

import pytest
import yaml

from scenario_tools import ROOT, ansible_env
from tests.standin import build_scenario

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.swap import NEXT_DIR
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import swap_dir_of
from ansible_collections.gpuops.cuda_venv.tests.support.tree_digest import tree_digest

CACHE = os.environ.get("CUDA_VENV_STANDIN_CACHE", os.path.join(ROOT, "build", "standin-cache"))
PLAYBOOK = os.path.join(ROOT, "playbooks", "repair.yml")
BATCH_1 = "remove contaminants nothing kept needs"
BATCH_2 = "remove colliding wheels, then reinstall what they overwrote or deleted"
PREFLIGHT = "Read the venv, its wheel sources and the tools venv on the node"
DIAGNOSIS = "Diagnose the venv and plan its repair (plan only, changes nothing)"
GUARD = "Guard the healthy venv against the next install that would contaminate it (or remove the guard)"
NO_GPU = "benchmark skipped: torch.cuda.is_available() is False (torch 2.9.1+cu128, CUDA 12.8)"


def wheel_from_installed(name, dest):
    """A py3-none-any wheel of the installed distribution ``name`` (offline: no index needed); its scripts
    (``../../../bin/X`` in RECORD, as uv's binary) go to the wheel's ``.data/scripts``."""
    dist = metadata.distribution(name)
    files = [f for f in dist.files if "__pycache__" not in f.parts and
             (not str(f).startswith("..") or str(f).startswith("../../../bin/"))]
    dist_info = next(f.parts[0] for f in files if f.parts[0].endswith(".dist-info"))
    stem = dist_info[:-len(".dist-info")]
    records = []
    path = os.path.join(dest, stem + "-py3-none-any.whl")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as wheel:
        for file in sorted(files, key=str):
            if file.parts[0] == dist_info and file.name in ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json"):
                continue
            data = file.read_binary()
            arcname = "%s.data/scripts/%s" % (stem, file.name) if str(file).startswith("..") else str(file)
            info = zipfile.ZipInfo(arcname)
            info.external_attr = (0o100755 if arcname.startswith(stem + ".data/scripts/") else 0o100644) << 16
            wheel.writestr(info, data, zipfile.ZIP_DEFLATED)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            records.append("%s,sha256=%s,%d" % (arcname, digest, len(data)))
        records.append(dist_info + "/RECORD,,")
        wheel.writestr(dist_info + "/RECORD", "\n".join(records) + "\n")
    return path


def write_inventory(tmp_path, hosts, backend="pip", tools_wheels=("packaging",), host_vars=None):
    """Local hosts, each with its venv, its wheelhouses, its own tools venv (filled from wheels of the
    ``tools_wheels`` installed here) and ``host_vars[name]``."""
    tools_wheelhouse = tmp_path / "tools-wheelhouse"
    tools_wheelhouse.mkdir()
    for name in tools_wheels:
        wheel_from_installed(name, str(tools_wheelhouse))
    inventory = {"all": {"hosts": {}, "vars": {
        "ansible_connection": "local",
        "ansible_python_interpreter": sys.executable,
        "venv_repair_no_index": True,
        "venv_repair_backend": backend,
        "venv_repair_tools_find_links": [str(tools_wheelhouse)],
    }}}
    for name, info in hosts.items():
        inventory["all"]["hosts"][name] = {
            "venv_repair_path": str(info.venv),
            "venv_repair_find_links": [str(info.wheelhouse)] + ([str(info.extra_wheelhouse)] if info.extra_wheelhouse else []),
            "venv_repair_tools_venv": str(tmp_path / ("tools-" + name)),
        }
        inventory["all"]["hosts"][name].update((host_vars or {}).get(name, {}))
    path = tmp_path / "inventory.json"
    path.write_text(json.dumps(inventory, indent=1), encoding="utf-8")
    return str(path)


def run_playbook(tmp_path, inventory, *args, path=None):
    """ansible-playbook playbooks/repair.yml; returns (rc, output, recap lines by host, PLAY RECAP stats by host)."""
    argv = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inventory, PLAYBOOK] + list(args)
    env = dict(ansible_env(tmp_path), **({"PATH": path} if path else {}))
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800, check=False)
    output = proc.stdout + proc.stderr
    return proc.returncode, output, recap_lines(output), play_stats(output)


def recap_lines(output):
    """{host: line} from the recap task's message."""
    start = output.index("TASK [Say per host what happened]")
    start = output.index("=> ", start) + 3
    message, _end = json.JSONDecoder().raw_decode(output[start:])
    return {line.split(": ", 1)[0]: line.split(": ", 1)[1] for line in message["msg"]}


def play_stats(output):
    """{host: {"ok": n, "changed": n, ...}} from Ansible's PLAY RECAP."""
    stats = {}
    for host, counts in re.findall(r"^(\S+)\s+: (ok=.*)$", output.split("PLAY RECAP")[-1], re.MULTILINE):
        stats[host] = {key: int(value) for key, value in re.findall(r"(\w+)=(\d+)", counts)}
    return stats


# Actions that run on the controller: every other task of the role costs a round trip to the node.
CONTROLLER_ACTIONS = {"ansible.builtin." + name for name in ("debug", "set_fact", "assert", "fail", "meta", "include_tasks",
                                                             "import_tasks", "validate_argument_spec")}


@functools.lru_cache(maxsize=None)
def role_node_tasks():
    """A regex per task of roles/venv_repair whose action runs on the node (its name's Jinja matching anything)."""
    found = []

    def walk(tasks):
        for task in tasks or []:
            for key in ("block", "rescue", "always"):
                walk(task.get(key))
            action = next((k for k in task if k.startswith(("ansible.", "gpuops.", "community."))), None)
            if action and action not in CONTROLLER_ACTIONS:
                parts = re.split(r"\{\{.*?\}\}", task["name"])
                found.append(re.compile(".*".join(re.escape(part) for part in parts) + "$"))
    for path in sorted(glob.glob(os.path.join(ROOT, "roles", "venv_repair", "*", "*.yml"))):
        if "/tasks/" in path or "/handlers/" in path:
            with open(path, encoding="utf-8") as handle:
                walk(yaml.safe_load(handle))
    return tuple(found)


def node_tasks_run(output, host):
    """The names of the role's node-side tasks that ran (ok or changed) on ``host``, in order."""
    patterns = role_node_tasks()
    names = []
    for section in output.split("\nTASK [")[1:]:
        header, _sep, body = section.partition("]")
        name = header.split(" : ", 1)[-1]
        if re.search(r"^(ok|changed): \[%s\]" % re.escape(host), body, re.MULTILINE) and any(p.match(name) for p in patterns):
            names.append(name)
    return names


def installed(venv):
    """name==version of every dist-info in the venv's site-packages."""
    names = []
    for path in glob.glob(os.path.join(str(venv), "lib", "python*", "site-packages", "*.dist-info")):
        with open(os.path.join(path, "METADATA"), encoding="utf-8") as handle:
            head = dict(line.split(": ", 1) for line in handle.read().split("\n\n")[0].splitlines() if ": " in line)
        names.append("%s==%s" % (head["Name"], head["Version"]))
    return sorted(names)


@pytest.mark.slow
def test_repair_playbook_check_rollback_repair_and_rerun(tmp_path):
    gutted = build_scenario("gutted", tmp_path / "gutted", cache=CACHE)
    partial = build_scenario("partial-restore", tmp_path / "partial", cache=CACHE)
    partial_swap = build_scenario("partial-restore", tmp_path / "partial-swap", cache=CACHE)
    asides = []
    for info, name in ((partial, "partial"), (partial_swap, "partial-swap")):
        [nccl] = glob.glob(os.path.join(str(info.wheelhouse), "nvidia_nccl_cu12-*.whl"))
        os.makedirs(str(tmp_path / ("aside-" + name)))
        asides.append((shutil.move(nccl, str(tmp_path / ("aside-" + name))), str(info.wheelhouse)))
    inventory = write_inventory(tmp_path, {"gutted": gutted, "partial": partial, "partial-swap": partial_swap},
                                host_vars={"partial": {"venv_repair_strategy": "in_place"}})
    hosts = (("gutted", gutted), ("partial", partial), ("partial-swap", partial_swap))
    digests = {name: tree_digest(str(info.venv)) for name, info in hosts}

    # --check --diff: the plan of each host, nothing touched (not even a state directory).
    rc, output, recap, stats = run_playbook(tmp_path, inventory, "--check", "--diff")
    assert rc == 0, output
    assert recap["gutted"].startswith("would repair - 2 batch(es) planned: %s; %s; now broken: " % (BATCH_1, BATCH_2)), recap
    assert recap["partial"].startswith("would repair - 2 batch(es) planned: %s; %s; now broken: " % (BATCH_1, BATCH_2)), recap
    # Built alike, but CONTAMINATION_SOURCE comes once per install transaction, and whether the builder's
    # back-to-back pip runs read as one transaction or two follows their timing: the warnings' count may differ.
    assert re.sub(r"\d+ warning", "N warning", recap["partial-swap"]) == re.sub(r"\d+ warning", "N warning", recap["partial"])
    assert "\n-nvidia-cudnn-cu13==9.24.0.43\n" in output  # the plan's diff
    # A first diagnosis cannot run without the tools venv (it does not fail the host); the tools venv is then made, even
    # in check mode, and the diagnosis runs again; the venv is not touched.
    assert node_tasks_run(output, "gutted") == [
        DIAGNOSIS, PREFLIGHT, "Create the tools venv", "Install the modules' dependencies into the tools venv",
        "Find the tools venv's site-packages", "Keep the modules' compiled code between runs, ansible-core's module_utils "
        "included", "Mark the tools venv as holding them", DIAGNOSIS]
    # the tools venv's Python starts the bytecode cache itself, before AnsiballZ imports ansible-core's module_utils
    assert subprocess.run(
        [str(tmp_path / "tools-gutted" / "bin" / "python"), "-c",
         "import sys; print([type(f).__name__ for f in sys.meta_path if getattr(f, 'caches_ansiballz_code', False)])"],
        env=dict({k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "CUDA_VENV_"))},
                 XDG_CACHE_HOME=str(tmp_path / "cache-home")), capture_output=True, text=True,
        check=True).stdout == "['_CacheFinder']\n"
    assert {host: s["failed"] for host, s in stats.items()} == {"gutted": 0, "partial": 0, "partial-swap": 0}
    assert {name: tree_digest(str(info.venv)) for name, info in hosts} == digests
    assert not os.path.exists(os.path.join(str(gutted.venv), ".cuda_venv"))

    # The real run: gutted is repaired; partial's second batch cannot find its wheel and is rolled back.
    rc, output, recap, stats = run_playbook(tmp_path, inventory)
    assert rc == 2, output
    assert recap["gutted"] == "swapped - 2 batch(es) on a copy (%s; %s), swapped in; now healthy; %s" % (BATCH_1, BATCH_2, NO_GPU)
    assert recap["partial"].startswith(
        "rolled back - batch 2 of 2 (%s) failed and was rolled back: reinstall failed: " % BATCH_2), recap
    assert "No matching distribution found for nvidia-nccl-cu12==2.27.5" in recap["partial"]
    assert recap["partial-swap"].startswith(
        "rolled back - batch 2 of 2 (%s) failed on the copy: reinstall failed: " % BATCH_2), recap
    assert ("No matching distribution found for nvidia-nccl-cu12==2.27.5; unfixable: nvidia-nccl-cu12==2.27.5 not found "
            "in the wheel sources" in recap["partial-swap"]), recap
    assert recap["partial-swap"].endswith("; no index); the copy was discarded, the venv is as it was"), recap
    assert stats["partial-swap"]["failed"] == 1 and stats["partial-swap"]["rescued"] == 1
    assert tree_digest(str(partial_swap.venv)) == digests["partial-swap"]  # not even batch 1 reached the venv
    assert recap["partial"].endswith(
        "; restored: remove nvidia-cudnn-cu13, reinstall nvidia-cudnn-cu12==9.10.2.21, reinstall nvidia-cusparselt-cu12==0.7.1, "
        "reinstall nvidia-nccl-cu12==2.27.5, reinstall nvidia-nvshmem-cu12==3.3.20; "
        "1 batch(es) committed before it stay: %s" % BATCH_1)
    assert stats["gutted"]["failed"] == 0 and stats["partial"]["failed"] == 1 and stats["partial"]["rescued"] == 1
    assert "nvidia-cudnn-cu13==9.24.0.43" in installed(partial.venv)  # batch 2 restored
    assert not any(name.startswith(("nvidia-cublas==", "nvidia-cuda-nvrtc==")) for name in installed(partial.venv))  # batch 1 stays

    # The wheel is back: partial is repaired, gutted (healthy now) changes nothing.
    for wheel, wheelhouse in asides:
        shutil.move(wheel, wheelhouse)
    rc, output, recap, stats = run_playbook(tmp_path, inventory)
    assert rc == 0, output
    assert recap == {"gutted": "healthy before - healthy; nothing to do",
                     "partial": "repaired - 1 batch(es) committed (%s); now healthy; %s" % (BATCH_2, NO_GPU),
                     "partial-swap": "swapped - 2 batch(es) on a copy (%s; %s), swapped in; now healthy; %s" % (
                         BATCH_1, BATCH_2, NO_GPU)}
    assert stats["gutted"]["changed"] == 0 and stats["partial"]["changed"] > 0
    assert node_tasks_run(output, "gutted") == [DIAGNOSIS]  # healthy, guarded by its swap: nothing to check or settle

    # And again: nothing changes anywhere, nothing is notified; each host costs one call on the node: the diagnosis
    # (the facts and the plan from one reading, one import probe); no preflight, the tools venv left alone.
    rc, output, recap, stats = run_playbook(tmp_path, inventory)
    assert rc == 0, output
    assert recap == {name: "healthy before - healthy; nothing to do" for name, _info in hosts}
    assert {host: s["changed"] for host, s in stats.items()} == {"gutted": 0, "partial": 0, "partial-swap": 0}
    assert "RUNNING HANDLER" not in output
    assert {name: node_tasks_run(output, name) for name, _info in hosts} == {name: [DIAGNOSIS] for name, _info in hosts}

    # A killed swap's leftover copy beside a healthy venv: the plan names it, so the preflight runs, and the pass removes
    # it (the guard step).
    leftover = os.path.join(swap_dir_of(str(gutted.venv)), NEXT_DIR)
    os.makedirs(os.path.join(leftover, "lib"))
    rc, output, recap, stats = run_playbook(tmp_path, inventory)
    assert rc == 0 and not os.path.lexists(leftover), output
    assert "a leftover copy %s will be removed first" % leftover in output
    assert {host: s["changed"] for host, s in stats.items()} == {"gutted": 1, "partial": 0, "partial-swap": 0}
    assert node_tasks_run(output, "gutted") == [DIAGNOSIS, PREFLIGHT, GUARD]


@pytest.mark.slow
def test_repair_playbook_on_a_uv_made_venv_gives_its_tools_venv_uv(tmp_path):
    contaminated = build_scenario("contaminated", tmp_path / "uv-made", cache=CACHE, installer="uv")
    inventory = write_inventory(tmp_path, {"uvhost": contaminated}, backend="auto", tools_wheels=("packaging", "uv"))
    bare = "/usr/local/bin:/usr/bin:/bin"  # no uv on PATH: the role's tools venv must bring it
    rc, output, recap, stats = run_playbook(tmp_path, inventory, path=bare)
    assert rc == 0, output
    assert recap["uvhost"] == "swapped - 2 batch(es) on a copy (%s; %s), swapped in; now healthy; %s" % (
        BATCH_1, BATCH_2, NO_GPU)
    assert os.access(str(tmp_path / "tools-uvhost" / "bin" / "uv"), os.X_OK)
    assert not [n for n in installed(contaminated.venv) if n.lower().startswith("pip==")]  # never pip in the venv
    assert "nvidia-cudnn-cu12==9.10.2.21" in installed(contaminated.venv)
    assert not [n for n in installed(contaminated.venv) if n.endswith(("-cu13==9.24.0.43", "-cu13==2.30.7"))]
    rc, output, recap, stats = run_playbook(tmp_path, inventory, path=bare)
    assert rc == 0 and recap == {"uvhost": "healthy before - healthy; nothing to do"}, output


def test_repair_playbook_passes_with_dependencies_to_the_module(tmp_path):
    """venv_repair_with_dependencies: true plans the new consumer's dependency with it (pinned, checked before any
    install); --check shows the plan and changes nothing."""
    from tests.standin import build_extra_wheels
    healthy = build_scenario("healthy-cu12", tmp_path / "healthy", cache=CACHE)
    extra = build_extra_wheels(["toy-kernels-cu12"], tmp_path / "extra", CACHE)
    host_vars = {"deps": {"venv_repair_packages": ["toy-kernels-cu12"], "venv_repair_with_dependencies": True,
                          "venv_repair_find_links": [str(healthy.wheelhouse), str(extra)], "venv_repair_benchmark": False}}
    inventory = write_inventory(tmp_path, {"deps": healthy}, host_vars=host_vars)
    before = tree_digest(str(healthy.venv))
    rc, output, _recap, _stats = run_playbook(tmp_path, inventory, "--check")
    assert rc == 0, output
    assert "batch 1 of 1: install missing or mismatched requirements: install toy-kernels-cu12, install toy-kernels-common==1.0.0" \
        in output, output
    assert tree_digest(str(healthy.venv)) == before


def test_repair_playbook_preflight_names_every_problem_and_changes_nothing(tmp_path):
    """One preflight call per host finds what is wrong; one task says all of it, naming the role's variables."""
    healthy = build_scenario("healthy-cu12", tmp_path / "healthy", cache=CACHE)
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    silent = "http://user:s3cret@127.0.0.1:%d/simple/" % closed
    host_vars = {
        "relative": {"venv_repair_path": "venvs/train"},
        "plain": {"venv_repair_path": str(tmp_path), "venv_repair_find_links": [str(tmp_path / "gone")]},
        "nosource": {"venv_repair_find_links": [], "venv_repair_no_index": False},
        "silent": {"venv_repair_find_links": [], "venv_repair_no_index": False, "venv_repair_index_url": silent},
    }
    inventory = write_inventory(tmp_path, {name: healthy for name in host_vars}, host_vars=host_vars)
    before = tree_digest(str(healthy.venv))
    rc, output, recap, _stats = run_playbook(tmp_path, inventory)
    assert rc == 2, output
    assert recap == {
        "relative": "failed - Check the role's variables: venv_repair_path must be the absolute path "
                    "of the venv's root (the folder holding pyvenv.cfg), got 'venvs/train'",
        "plain": "failed - Check the venv and its wheel sources: venv_repair_path %s is not a venv: no pyvenv.cfg; "
                 "wheelhouse folder(s) not found on plain: %s (venv_repair_find_links)" % (tmp_path, tmp_path / "gone"),
        "nosource": "failed - Check the venv and its wheel sources: no wheel source to repair %s from: set "
                    "venv_repair_find_links (wheelhouse folders or URLs) or venv_repair_index_url (for PyPI: "
                    "https://pypi.org/simple)" % healthy.venv,
        "silent": recap["silent"]}
    assert recap["silent"].startswith("failed - Check the venv and its wheel sources: wheel source(s) not answering HTTP "
                                      "200 from silent: http://***@127.0.0.1:%d/simple/ (" % closed), recap
    assert "Connection refused" in recap["silent"] and "s3cret" not in output
    assert tree_digest(str(healthy.venv)) == before
    assert not [p for p in glob.glob(str(tmp_path / "tools-*")) if not p.endswith("-wheelhouse")]  # no tools venv made


def test_repair_playbook_checks_the_options_of_entry_points_find_and_main_in_one_task(tmp_path):
    """repair.yml skips Ansible's own validation (its task would load the node's connection plugin per host): find.yml
    checks find's options and main's in one task on the controller. A wrong one of either fails its host, naming it."""
    healthy = build_scenario("healthy-cu12", tmp_path / "healthy", cache=CACHE)
    host_vars = {"findopt": {"venv_repair_find_processes": "sometimes"}, "mainopt": {"venv_repair_batch_size": "many"},
                 "good": {}}
    inventory = write_inventory(tmp_path, {name: healthy for name in host_vars}, host_vars=host_vars)
    before = tree_digest(str(healthy.venv))
    rc, output, recap, stats = run_playbook(tmp_path, inventory, "--check")
    assert rc == 2, output
    assert "Validating arguments against arg spec" not in output
    check = "TASK [gpuops.cuda_venv.venv_repair : Check the role's variables against the specs of entry point find and of main"
    section = output.split(check, 1)[1].split("TASK [", 1)[0]
    failures = {host: json.JSONDecoder().raw_decode(section[at:])[0]["msg"]
                for host, at in ((match.group(1), match.end()) for match in re.finditer(r"^fatal: \[(\w+)\]: FAILED! => ", section, re.M))}
    booleans = failures["findopt"].rsplit("include: ", 1)[-1]
    assert failures == {
        "findopt": "Validation of arguments failed:\nargument 'venv_repair_find_processes' is of type str and we were "
                   "unable to convert to bool: The value 'sometimes' is not a valid boolean. Valid booleans include: " + booleans,
        "mainopt": "Validation of arguments failed:\nargument 'venv_repair_batch_size' is of type str and we were unable "
                   "to convert to int: \"'many'\" cannot be converted to an int"}, output
    assert "'yes'" in booleans, booleans
    unrecorded = "no outcome - unreachable, failed before its run could record one (its error is above), or the rollout " \
                 "stopped before it"
    assert recap == {"findopt": unrecorded, "mainopt": unrecorded,
                     "good": "healthy before - healthy; nothing to do"}, recap
    assert stats["findopt"]["failed"] == 1 and stats["mainopt"]["failed"] == 1 and stats["good"]["failed"] == 0
    assert tree_digest(str(healthy.venv)) == before


def test_repair_playbook_checks_the_sources_only_where_there_is_work(tmp_path):
    """A healthy, guarded host whose tools venv is ready costs one module call: its wheel sources are not checked
    (nothing would be installed from them). A host with work to do, its tools venv as ready, still fails on a missing
    wheelhouse before anything changes."""
    healthy = build_scenario("healthy-cu12", tmp_path / "healthy", cache=CACHE)
    broken = build_scenario("curand-removed", tmp_path / "broken", cache=CACHE)
    inventory = write_inventory(tmp_path, {"healthy": healthy, "broken": broken})
    rc, output, recap, _stats = run_playbook(tmp_path, inventory, "-l", "healthy")  # its tools venv, its guard written
    assert rc == 0 and recap == {"healthy": "healthy before - healthy; nothing to do"}, output
    rc, output, recap, _stats = run_playbook(tmp_path, inventory, "--check", "-l", "broken")  # its tools venv
    assert rc == 0 and recap["broken"].startswith("would repair - "), output
    gone = str(tmp_path / "gone")
    (tmp_path / "again").mkdir()
    inventory = write_inventory(tmp_path / "again", {"healthy": healthy, "broken": broken}, host_vars={
        name: {"venv_repair_find_links": [gone], "venv_repair_tools_venv": str(tmp_path / ("tools-" + name))}
        for name in ("healthy", "broken")})
    before = {name: tree_digest(str(info.venv)) for name, info in (("healthy", healthy), ("broken", broken))}
    rc, output, recap, _stats = run_playbook(tmp_path, inventory)
    assert rc == 2, output
    assert recap == {"healthy": "healthy before - healthy; nothing to do",
                     "broken": "failed - Check the venv and its wheel sources: wheelhouse folder(s) not found on broken: %s "
                               "(venv_repair_find_links)" % gone}
    assert node_tasks_run(output, "healthy") == [DIAGNOSIS]
    assert node_tasks_run(output, "broken") == [DIAGNOSIS, PREFLIGHT]
    assert {name: tree_digest(str(info.venv)) for name, info in (("healthy", healthy), ("broken", broken))} == before
