"""Security: nothing outside the venv is deleted or written, credentials never leak, the probe cannot be
hijacked, and no command is ever built as a shell string."""

import ast
import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from ansible_collections.gpuops.cuda_venv.tests.support.local_servers import AuthIndex
from reliability_tools import ROOT, repair_args, run_child, state_differences, state_rows

from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import make_dist

UV = os.path.join(os.path.dirname(sys.executable), "uv")


def files_of(path):
    """{relative path: sha256} of every file under ``path``."""
    found = {}
    for directory, _dirs, names in os.walk(str(path)):
        for name in names:
            full = os.path.join(directory, name)
            with open(full, "rb") as handle:
                found[os.path.relpath(full, str(path))] = hashlib.sha256(handle.read()).hexdigest()
    return found


def site_of(venv):
    return next(venv.glob("lib/python3*/site-packages"))


def add_escaping_contaminant(tmp_path, info):
    """A distribution 'evil' whose RECORD also lists four files outside the venv: by ../, by an absolute path,
    through a symlink inside site-packages that points outside, and through evil/../ that symlink."""
    outside = tmp_path / "outside"
    outside.mkdir()
    for number in range(1, 5):
        (outside / ("victim%d.txt" % number)).write_bytes(b"precious %d\n" % number)
    site = site_of(info.venv)
    os.symlink(str(outside), str(site / "link"))
    folder = make_dist(str(site), "evil", "1.0", files={"evil/__init__.py": b"x = 1\n"})
    escapes = [os.path.relpath(str(outside / "victim1.txt"), str(site)), str(outside / "victim2.txt"),
               "link/victim3.txt", "evil/../link/victim4.txt"]
    with open(os.path.join(folder, "RECORD"), "a") as handle:
        handle.write("".join("%s,,\n" % path for path in escapes))
    return outside, folder


@pytest.mark.parametrize("backend, strategy", [
    ("pip", "in_place"),
    ("uv", "in_place"),
    ("pip", "swap"),
])
def test_prune_all_never_deletes_record_paths_outside_the_venv(tmp_path, fresh, backend, strategy):
    """A swap cuts the escaping rows from the copy's RECORD, never from the live venv's."""
    info = fresh("healthy-cu12")
    outside, folder = add_escaping_contaminant(tmp_path, info)
    before = files_of(outside)
    extra = dict(prune="all", strategy=strategy)
    if backend == "uv":
        extra.update(backend="uv", uv_executable=UV)
    planned = run_child(tmp_path / "plan", "cuda_venv_repair", repair_args(info, **extra), check=True)
    assert planned.rc == 0, planned.output[-3000:]
    reported = [f for f in planned.result["findings"] if f["code"] == "RECORD_PATH_OUTSIDE_VENV"]
    assert [f["subject"] for f in reported] == ["evil 1.0"]
    assert "lists 4 path(s) outside the venv" in reported[0]["message"]

    run = run_child(tmp_path / "run", "cuda_venv_repair", repair_args(info, **extra))
    assert files_of(outside) == before  # every victim still there, byte-identical
    assert os.path.islink(str(site_of(info.venv) / "link"))
    assert run.rc == 0, run.output[-3000:]
    assert run.result["strategy"] == strategy
    assert not os.path.exists(folder)


def test_reinstall_never_writes_through_a_symlink_leaving_the_venv(tmp_path, fresh):
    info = fresh("gutted")
    outside = tmp_path / "outside-include"
    outside.mkdir()
    (outside / "victim.h").write_bytes(b"precious\n")
    include = site_of(info.venv) / "nvidia" / "cudnn" / "include"
    include.parent.mkdir(parents=True, exist_ok=True)
    if include.exists():
        shutil.rmtree(str(include))
    os.symlink(str(outside), str(include))
    before = files_of(outside)
    run = run_child(tmp_path / "run", "cuda_venv_repair", repair_args(info))
    assert files_of(outside) == before, "written outside the venv: %s" % sorted(set(files_of(outside)) - set(before))
    assert "RECORD_PATH_OUTSIDE_VENV" in json.dumps(run.result)


def test_a_new_wheel_is_never_installed_through_a_symlink_leaving_the_venv(tmp_path, fresh):
    """nvidia-curand is absent (no RECORD to check): the guard is the symlink itself, found before installing."""
    info = fresh("curand-removed")
    include = site_of(info.venv) / "nvidia" / "cu13" / "include"
    outside = tmp_path / "outside-include"
    shutil.copytree(str(include), str(outside))
    shutil.rmtree(str(include))
    os.symlink(str(outside), str(include))
    before, venv_before = files_of(outside), state_rows(info.venv)
    run = run_child(tmp_path / "run", "cuda_venv_repair", repair_args(info))
    assert files_of(outside) == before
    assert run.rc != 0
    link = os.path.relpath(str(include), str(info.venv))
    assert "batch 1: not installing: %s (a symlink leaving the venv)" % link in run.result["msg"]
    assert state_differences(state_rows(info.venv), venv_before) == []


# --- credentials ------------------------------------------------------------------------------------------

USER, PASSWORD = "alice", "p@ss-S3CRET"
TOKEN = "T0KEN-0NLY-7f3a"
SECRETS = [PASSWORD, "p%40ss-S3CRET", TOKEN, base64.b64encode(("%s:%s" % (USER, PASSWORD)).encode()).decode(),
           base64.b64encode(("%s:" % TOKEN).encode()).decode()[:-4]]

PLAYBOOK = """\
- name: Repairs with credentials in the index URLs
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Plan from the private index
      gpuops.cuda_venv.cuda_venv_repair:
        path: "{{ venv_ok }}"
        index_url: "{{ index_ok }}"
        backend: pip
      check_mode: true
      diff: true
    - name: Repair from the private index
      gpuops.cuda_venv.cuda_venv_repair:
        path: "{{ venv_ok }}"
        index_url: "{{ index_ok }}"
        backend: pip
      diff: true
      register: ok
    - name: Repair from an index that refuses connections, token in the URL
      gpuops.cuda_venv.cuda_venv_repair:
        path: "{{ venv_bad }}"
        index_url: "{{ index_bad }}"
        extra_index_urls: ["{{ index_bad }}/extra"]
        backend: pip
        installer_timeout: 120
      diff: true
      register: bad
      ignore_errors: true
    - name: Show both results
      ansible.builtin.debug:
        var: item
      loop: ["{{ ok }}", "{{ bad }}"]
    - name: The private index was used and the refused one failed
      ansible.builtin.assert:
        that:
          - ok is succeeded and ok.healthy
          - bad is failed
"""


def test_credentials_never_appear_in_output_logs_diffs_or_journals(tmp_path, fresh):
    ok, bad = fresh("curand-removed"), fresh("curand-removed")
    with AuthIndex([ok.wheelhouse], USER, PASSWORD) as index:
        extra_vars = {"venv_ok": str(ok.venv), "venv_bad": str(bad.venv),
                      "index_ok": "http://%s:%s@127.0.0.1:%d/simple" % (USER, "p%40ss-S3CRET", index.port),
                      "index_bad": "http://%s@127.0.0.1:9/simple" % TOKEN}
        (tmp_path / "vars.json").write_text(json.dumps(extra_vars))
        (tmp_path / "play.yml").write_text(PLAYBOOK)
        (tmp_path / "inventory.ini").write_text("localhost ansible_connection=local ansible_python_interpreter=%s\n"
                                                % sys.executable)
        env = ansible_env(tmp_path)
        env["ANSIBLE_LOG_PATH"] = str(tmp_path / "ansible.log")
        proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-vvv", "--diff",
                               "-i", str(tmp_path / "inventory.ini"), "-e", "@" + str(tmp_path / "vars.json"),
                               str(tmp_path / "play.yml")], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=900, check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-5000:]
    assert any(authorized for _path, authorized in index.requests), (index.requests, output[-3000:])  # pip really used the credentials
    assert "nvidia-curand" in output
    # ok: all five tasks (a failure ignored counts as ok too); changed: the plan (check mode) and the repair
    recap = re.findall(r"^localhost\s+: (.*\S)\s*$", output.split("PLAY RECAP")[-1], re.MULTILINE)
    assert recap == ["ok=5    changed=2    unreachable=0    failed=0    skipped=0    rescued=0    ignored=1"], recap
    texts = {"ansible-playbook -vvv --diff output": output, "ansible log": (tmp_path / "ansible.log").read_text()}
    for info in (ok, bad):
        # the venv's state dir, and the swap's beside it (its journal, the previous generation)
        swap_state = info.venv.parent / (".%s.cuda_venv" % info.venv.name)
        for directory, _dirs, names in [w for top in (info.venv / ".cuda_venv", swap_state) for w in os.walk(str(top))]:
            for name in names:
                with open(os.path.join(directory, name), "rb") as handle:
                    texts[os.path.join(directory, name)] = handle.read().decode("utf-8", "replace")
    assert any("journal" in name for name in texts)
    leaks = [(where, secret) for where, text in texts.items() for secret in SECRETS if secret in text]
    assert leaks == []


def ansible_env(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PYTHON", "PIP_", "UV_", "CUDA_VENV_"))}
    env.update({"PIP_CONFIG_FILE": os.devnull, "ANSIBLE_CONFIG": os.path.join(ROOT, "ansible.cfg"),
                "ANSIBLE_HOME": str(tmp_path / "ansible-home"), "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"),
                "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
                "ANSIBLE_NOCOLOR": "1"})
    return env


# --- probe hijack -----------------------------------------------------------------------------------------

def make_decoy(path, marker):
    """A torch package that imports fine (and says so in ``marker``) and a fake libcudnn.so.9."""
    (path / "torch").mkdir(parents=True)
    (path / "torch" / "__init__.py").write_text("open(%r, 'a').write(__file__ + '\\n')\n__version__ = '9.9.9'\n" % str(marker))
    (path / "nvidia" / "cudnn" / "lib").mkdir(parents=True)
    (path / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9").write_bytes(b"not a library\n")


@pytest.mark.parametrize("module", ["cuda_venv_facts", "cuda_venv_repair"])
def test_probe_ignores_the_working_directory_and_python_variables(tmp_path, fresh, module):
    """A torch/ (and nvidia/cudnn/lib) in Ansible's cwd and on PYTHONPATH: the broken venv must still be seen broken."""
    info = fresh("gutted")
    marker = tmp_path / "decoy-imported"
    cwd, pythonpath = tmp_path / "cwd", tmp_path / "pythonpath"
    make_decoy(cwd, marker)
    make_decoy(pythonpath, marker)
    env = ansible_env(tmp_path)
    env["PYTHONPATH"] = str(pythonpath)
    args = dict(path=str(info.venv), gpu=False) if module == "cuda_venv_facts" else repair_args(info)
    argv = [os.path.join(os.path.dirname(sys.executable), "ansible"), "localhost", "-m", "gpuops.cuda_venv." + module,
            "-a", json.dumps(args)]
    proc = subprocess.run(argv, cwd=str(cwd), env=env, capture_output=True, text=True, timeout=600, check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    assert not marker.exists(), marker.read_text()  # no probe imported a decoy
    if module == "cuda_venv_facts":
        assert '"code": "IMPORT_FAILED"' in output and "libcudnn.so.9" in output
    else:  # the baseline probe saw the import fail, the batches fixed it, the last probe saw it work
        assert '"healthy": true' in output and '"changed": true' in output


# --- no shell strings -------------------------------------------------------------------------------------

RUNNERS = {"run", "Popen", "call", "check_call", "check_output", "getoutput", "getstatusoutput", "run_command",
           "create_subprocess_shell", "spawn"}
SHELL_FUNCTIONS = {("os", "system"), ("os", "popen"), ("commands", "getoutput"), ("subprocess", "getoutput"),
                   ("subprocess", "getstatusoutput"), ("asyncio", "create_subprocess_shell"), ("pty", "spawn")}


def shell_problems(source, filename):
    """Calls that would run a shell: os.system/os.popen and friends, shell=True (or not literally False),
    use_unsafe_shell, and a string (literal, f-string, concatenation, %-format, .format) as a runner's command."""
    problems = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else None
        where = "%s:%d" % (filename, node.lineno)
        if (owner, name) in SHELL_FUNCTIONS or (owner is None and name in ("system", "popen")):
            problems.append("%s: %s.%s runs a shell" % (where, owner, name))
        for keyword in node.keywords:
            if keyword.arg in ("shell", "use_unsafe_shell") and not (
                    isinstance(keyword.value, ast.Constant) and keyword.value.value is False):
                problems.append("%s: %s=%s" % (where, keyword.arg, ast.dump(keyword.value)))
        if name in RUNNERS and node.args and _is_string(node.args[0]):
            problems.append("%s: %s() gets a string command" % (where, name))
    return problems


def _is_string(node):
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        return _is_string(node.left) or _is_string(node.right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("format", "join"):
        return _is_string(node.func.value)
    return False


def test_the_scanner_finds_every_kind_of_shell_command():
    source = textwrap.dedent("""\
        import os, subprocess
        os.system("ls")
        os.popen("ls")
        subprocess.run("ls -l", shell=True)
        subprocess.Popen(["ls"], shell=flag)
        subprocess.check_output("ls %s" % path)
        subprocess.call(f"ls {path}")
        subprocess.run(" ".join(argv))
        module.run_command("pip install x", use_unsafe_shell=True)
        subprocess.run(["ls", "-l"], shell=False)
        subprocess.run(argv)
        """)
    flagged = {int(p.split(":")[1]) for p in shell_problems(source, "sample.py")}
    assert flagged == set(range(2, 10))  # every line but the last two


def test_no_command_is_built_as_a_shell_string():
    problems, runners = [], 0
    for directory, _dirs, names in os.walk(os.path.join(ROOT, "plugins")):
        for name in sorted(names):
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                with open(path) as handle:
                    source = handle.read()
                problems += shell_problems(source, os.path.relpath(path, ROOT))
                runners += source.count("subprocess.")
    assert runners > 0  # the scan saw the runner
    assert problems == []


def test_every_installer_and_probe_command_is_an_argv_list_with_a_separator(tmp_path, fresh):
    """The commands a real repair ran, as it reports them: lists, the venv's own interpreter or uv, `--` before names."""
    info = fresh("gutted")
    run = run_child(tmp_path / "run", "cuda_venv_repair", repair_args(info))
    assert run.rc == 0, run.output[-3000:]
    commands = [c["argv"] for b in run.result["batches"] for c in b["commands"]]
    assert commands and all(isinstance(argv, list) for argv in commands)
    for argv in commands:
        assert argv[0] == str(info.venv / "bin" / "python") and argv[1:4] == ["-I", "-m", "pip"]
        names = argv[argv.index("--") + 1:]
        assert names and all(not n.startswith("-") for n in names)
