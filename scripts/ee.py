#!/usr/bin/env python
"""make ee: build the Execution Environment of ee/execution-environment.yml with ansible-builder and podman, on a base
image made from Debian's packages, then run playbooks/repair.yml inside it against the fake Proxmox node's LXC
containers, as AWX would run the job.

Usage: scripts/ee.py BUILD_DIR TARBALL   (make ee: BUILD_DIR build/ee, TARBALL the collection built by make build)

No container registry is needed:
- the base image is debootstrap's Debian (minbase, with python3, pip, venv, ca-certificates and the ssh client),
  imported into podman; ansible-builder gets it through its EE_BASE_IMAGE build argument, so the definition keeps
  its usual base for a user with a registry;
- Galaxy is not reachable here either: the collections go in as files (this collection's tarball installed, and
  community.proxmox and community.general as make setup extracted them), copied where the definition's galaxy
  step would install them; the rest of the definition is ee/execution-environment.yml's own (ansible-builder then
  introspects them: paramiko, requests, proxmoxer);
- pip inside the build reaches the package index as this machine's pip is configured: its index URL (when one is
  set) and its CA bundle (``cert``) go into the build.
podman runs with tests/podman/containers.conf (runc, no default ulimits: crun and the default ulimits fail on these
machines: docs/CUDA_NOTES.md, Containers). Prints the image's size and the build's time; fails naming what is missing.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
SUITE = "bookworm"
BASE_PACKAGES = "python3,python3-pip,python3-venv,ca-certificates,openssh-client"
# Debian's system Python refuses ensurepip (ansible-builder's first step) and pip installs (PEP 668): the EE's Python
# is a venv of it, made in the base image.
EE_PYTHON = "/opt/ee/bin/python3"
TAG = "localhost/gpuops-cuda-venv-ee"


class EeError(Exception):
    """What stops the build, said for a person."""


def run(argv, **kwargs):
    print("+ " + " ".join(str(a) for a in argv), file=sys.stderr, flush=True)
    proc = subprocess.run([str(a) for a in argv], text=True, capture_output=True, check=False, **kwargs)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr)[-6000:]
        raise EeError("%s failed (rc %d):\n%s" % (" ".join(str(a) for a in argv[:4]), proc.returncode, tail))
    return proc.stdout


def prerequisites():
    missing = [name for name, ok in (("podman", shutil.which("podman")), ("runc", shutil.which("runc")),
                                     ("debootstrap", shutil.which("debootstrap")), ("lxc", shutil.which("lxc-attach")),
                                     ("openssh-server", os.path.exists("/usr/sbin/sshd"))) if not ok]
    if os.geteuid() != 0:
        raise EeError("make ee needs root (debootstrap, podman's storage, the fake node's LXC containers)")
    if missing:
        raise EeError("make ee needs %s: apt-get install %s" % (", ".join(missing), " ".join(missing)))


def podman_env() -> dict:
    return dict(os.environ, CONTAINERS_CONF=str(ROOT / "tests/podman/containers.conf"))


def base_image(build: Path, env: dict) -> str:
    """The Debian base image, made once (its tag names the suite and packages)."""
    key = subprocess.run(["sha256sum"], input=SUITE + BASE_PACKAGES + EE_PYTHON, text=True, capture_output=True,
                         check=True).stdout[:12]
    image = "localhost/gpuops-debian-base:%s-%s" % (SUITE, key)
    if subprocess.run(["podman", "image", "exists", image], env=env, check=False).returncode == 0:
        return image
    mirror = os.environ.get("FAKE_PROXMOX_MIRROR", "http://deb.debian.org/debian")
    with tempfile.TemporaryDirectory(dir=build) as tmp:
        rootfs = Path(tmp) / "rootfs"
        started = time.monotonic()
        run(["unshare", "--mount", "--propagation", "private", "debootstrap", "--variant=minbase",
             "--include=" + BASE_PACKAGES, SUITE, rootfs, mirror])
        run(["chroot", rootfs, "python3", "-m", "venv", str(Path(EE_PYTHON).parent.parent)])
        shutil.rmtree(rootfs / "var/cache/apt/archives", ignore_errors=True)
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        subprocess.run(["podman", "import", "--change", "CMD [\"/bin/bash\"]", "-", image], stdin=tar.stdout,
                       env=env, check=True, capture_output=True)
        if tar.wait() != 0:
            raise EeError("tar of the base rootfs failed")
        print("ee: base image %s made in %.0f s" % (image, time.monotonic() - started), file=sys.stderr)
    return image


def pip_setting(key: str) -> str:
    """This machine's pip configuration value of ``key`` (the environment's PIP_* first), or ""."""
    env_value = os.environ.get("PIP_" + key.upper().replace("-", "_"))
    if env_value:
        return env_value
    proc = subprocess.run([sys.executable, "-m", "pip", "config", "get", "global." + key], text=True,
                          capture_output=True, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def definition(build: Path, tarball: Path) -> Path:
    """ee/execution-environment.yml with the collections as files instead of Galaxy, and this machine's pip
    index and CA bundle for the build's pip."""
    files = build / "files"
    shutil.rmtree(files, ignore_errors=True)
    collections = files / "collections"
    for name in ("proxmox", "general"):
        shutil.copytree(ROOT / "build/collections/ansible_collections/community" / name,
                        collections / "ansible_collections/community" / name, symlinks=False)
    (files / "tarball").mkdir()
    shutil.copy(tarball, files / "tarball" / tarball.name)
    spec = yaml.safe_load((ROOT / "ee/execution-environment.yml").read_text(encoding="utf-8"))
    # This collection from its tarball, by ansible-galaxy as the definition's own galaxy step would (no deps: they are
    # not on a reachable Galaxy), then its dependencies copied beside it before the builder stage introspects them
    spec["dependencies"]["galaxy"] = {"collections": [{"name": "tarball/" + tarball.name, "type": "file"}]}
    spec["additional_build_files"] = [{"src": str(collections), "dest": "collections"},
                                      {"src": str(files / "tarball"), "dest": "tarball"}]
    spec.setdefault("options", {})["package_manager_path"] = "/usr/bin/apt-get"  # the Debian base's
    spec["dependencies"]["python_interpreter"]["python_path"] = EE_PYTHON
    base = ["ENV PATH=%s:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" % Path(EE_PYTHON).parent]
    cert = pip_setting("cert")
    if cert:
        shutil.copy(cert, files / "pip-cert.pem")
        spec["additional_build_files"].append({"src": str(files / "pip-cert.pem"), "dest": "certs"})
        base += ["COPY _build/certs/pip-cert.pem /etc/ssl/certs/pip-cert.pem", "ENV PIP_CERT=/etc/ssl/certs/pip-cert.pem"]
    index = pip_setting("index-url")
    if index.startswith(("http://", "https://")):
        base.append("ENV PIP_INDEX_URL=%s" % index)
    spec["additional_build_steps"] = {
        "prepend_base": base,
        "append_galaxy": ["COPY _build/collections/ /usr/share/ansible/collections/"],
    }
    path = build / "execution-environment.yml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def build_ee(build: Path, spec: Path, base: str, env: dict) -> dict:
    started = time.monotonic()
    run([ROOT / "build/publish/bin/ansible-builder", "build", "-f", spec, "-c", build / "context", "-t", TAG,
         "--container-runtime", "podman", "--build-arg", "EE_BASE_IMAGE=" + base,
         # apt-get has no "clean all" (the step ansible-builder writes for dnf); no Galaxy to reach for dependencies
         "--build-arg", "PKGMGR_PRESERVE_CACHE=always", "--build-arg", "ANSIBLE_GALAXY_CLI_COLLECTION_OPTS=--no-deps",
         "--extra-build-cli-args=--network=host", "--no-cache", "--prune-images", "-v", "1"], env=env, cwd=build)
    seconds = time.monotonic() - started
    size = int(run(["podman", "image", "inspect", "--format", "{{.Size}}", TAG], env=env).strip())
    return {"image": TAG, "build_seconds": round(seconds, 1), "size_mb": round(size / 1e6)}


def inside(env: dict, *argv, user: str = "") -> str:
    """``argv`` run in the EE image (through its entrypoint, as a job is), as ``user`` when given."""
    return run(["podman", "run", "--rm", "--network=host"] + (["--user=" + user] if user else []) + [TAG] + list(argv),
               env=env)


def versions(env: dict) -> dict:
    core = inside(env, "python3", "-c", "import ansible.release as r; print(r.__version__)").strip()
    listed = inside(env, "ansible-galaxy", "collection", "list", "--format", "json")
    found = {}
    for per_path in json.loads(listed).values():
        found.update({name: info["version"] for name, info in per_path.items()})
    return {"ansible_core": core, "collections": found}


def repair_in_ee(build: Path, env: dict) -> dict:
    """The proxmox Molecule scenario's node and broken containers (its create.yml, run here), then playbooks/repair.yml
    -l ct200 run by the EE's ansible-playbook through proxmox_pct_remote, then its destroy.yml."""
    scenario = ROOT / "extensions/molecule/proxmox"
    run_dir = build / "run"
    shutil.rmtree(run_dir, ignore_errors=True)
    (run_dir / "home").mkdir(parents=True)
    names = dict(MOLECULE_PROJECT_DIRECTORY=str(ROOT), MOLECULE_EPHEMERAL_DIRECTORY=str(run_dir),
                 HOME=str(run_dir / "home"), ANSIBLE_PARAMIKO_LOOK_FOR_KEYS="false", ANSIBLE_NOCOLOR="1")
    host_env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), **names)
    playbook = ROOT / "build/tools/bin/ansible-playbook"
    run([playbook, "-i", scenario / "inventory", scenario / "create.yml"], env=host_env, cwd=ROOT)
    try:
        # the node's host key where proxmox_pct_remote reads it, ~/.ssh/known_hosts of the job's user in the image
        # (the EE's entrypoint sets HOME)
        home = inside(env, "sh", "-c", 'echo "$HOME"', user="root").strip()
        started = time.monotonic()
        mounts = ["-v", "%s:/runner/project/playbooks:ro" % (ROOT / "playbooks"),
                  "-v", "%s:/runner/inventory:ro" % (scenario / "inventory"), "-v", "%s:%s" % (run_dir, run_dir),
                  "-v", "%s:%s/.ssh:ro" % (run_dir / "home" / ".ssh", home)]
        # as root: the fake node's state folder, its key and port, are root's alone (0700)
        argv = ["podman", "run", "--rm", "--network=host", "--user=root", "-w", "/runner/project"] + mounts
        argv += [item for key, value in names.items() if key not in ("MOLECULE_PROJECT_DIRECTORY", "HOME")
                 for item in ("-e", "%s=%s" % (key, value))]
        output = run(argv + [TAG, "ansible-playbook", "-i", "/runner/inventory", "playbooks/repair.yml", "-l", "ct200"],
                     env=env)
        seconds = time.monotonic() - started
    finally:
        run([playbook, "-i", scenario / "inventory", scenario / "destroy.yml"], env=host_env, cwd=ROOT)
    recap = [line.strip().strip('",') for line in output.splitlines() if line.strip().startswith('"ct200: ')]
    if not recap or recap[0].split(" - ")[0] not in ("ct200: repaired", "ct200: swapped") or "now healthy" not in recap[0]:
        raise EeError("repair.yml in the EE did not repair ct200: %s\n%s" % (recap, output[-4000:]))
    return {"repair_in_ee": recap[0][:200], "repair_seconds": round(seconds, 1)}


def main():
    if len(sys.argv) != 3:
        raise EeError("usage: scripts/ee.py BUILD_DIR TARBALL")
    build, tarball = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    prerequisites()
    build.mkdir(parents=True, exist_ok=True)
    env = podman_env()
    base = base_image(build, env)
    result = build_ee(build, definition(build, tarball), base, env)
    result.update(versions(env))
    expected = yaml.safe_load((ROOT / "galaxy.yml").read_text(encoding="utf-8"))["version"]
    if result["collections"].get("gpuops.cuda_venv") != expected:
        raise EeError("the EE holds gpuops.cuda_venv %s, not %s" % (result["collections"].get("gpuops.cuda_venv"), expected))
    result.update(repair_in_ee(build, env))
    (build / "ee.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    try:
        main()
    except EeError as exc:
        print("make ee: %s" % exc, file=sys.stderr)
        sys.exit(1)
