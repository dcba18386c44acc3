#!/usr/bin/env python
"""Run `ansible-test sanity` on a copy of the collection, without reaching anything but pip's index.

1. ansible-test wants the collection at .../ansible_collections/gpuops/cuda_venv as a real
   directory: copy the git-tracked and untracked-not-ignored files to
   build/sanity/ansible_collections/gpuops/cuda_venv (afresh each run), and make the copy a git
   repository of its own: ansible-test lists the files of the nearest enclosing repository,
   which would otherwise be this one, where build/ is ignored.
2. ansible-test bootstraps pip into each sanity venv with a get-pip script that it downloads
   from the internet once and caches as ~/.ansible/test/cache/get_pip_<pip version>.py. Seed
   that cache with an equivalent script that carries the pip installed in this venv.
3. Run `ansible-test sanity` in the copy, with the arguments given to this script appended.
   The controller is this interpreter. The tests that run per target Python (compile, import)
   run on every other version ansible-test supports that scripts/find_python.sh finds (PATH or
   pyenv), linked as build/sanity/bin/pythonX.Y: modules run on managed nodes' older Pythons.
   Versions not found are skipped with a warning.

Run it with the tools venv's python: python scripts/sanity.py [ansible-test sanity args...]
"""

import base64
import io
import os
import pathlib
import shutil
import subprocess
import sys
import types
import zipfile

import ansible_test
import pip
from ansible_test._internal.python_requirements import get_venv_packages
from ansible_test._util.target.common.constants import CONTROLLER_PYTHON_VERSIONS, REMOTE_ONLY_PYTHON_VERSIONS

ROOT = pathlib.Path(__file__).resolve().parent.parent
COPY = ROOT / "build" / "sanity" / "ansible_collections" / "gpuops" / "cuda_venv"
PYTHONS = ROOT / "build" / "sanity" / "bin"
SKIPPED = ("build/", "tests/output/")  # ignored by .gitignore already; never copied even if tracked
# Where ansible-test 2.21 caches the bootstrap script; checked against its source below.
CACHE_FORMAT = "~/.ansible/test/cache/get_pip_%s.py"
REQUIREMENTS_PY = pathlib.Path(ansible_test.__file__).parent / "_util" / "target" / "setup" / "requirements.py"

GET_PIP_TEMPLATE = '''\
"""Offline stand-in for get-pip.py {version}: written by gpuops.cuda_venv scripts/sanity.py.

Carries a zip of pip {version} taken from a local install and runs it like get-pip.py does:
python {name} [pip install options and requirements] [--no-setuptools] [--no-wheel]
"""

import base64
import os
import re
import shutil
import sys
import tempfile

DATA = b"""
{data}
"""


def main():
    """Install the requested packages (pip by default) with the embedded pip."""
    args = [arg for arg in sys.argv[1:] if arg not in ("--no-setuptools", "--no-wheel")]
    if not any(re.match(r"pip\\s*($|[<>=!~;\\[])", arg, re.IGNORECASE) for arg in args):
        args.append("pip")
    tmpdir = tempfile.mkdtemp(prefix="get-pip-")
    try:
        pip_zip = os.path.join(tmpdir, "pip.zip")
        with open(pip_zip, "wb") as stream:
            stream.write(base64.b85decode(DATA.replace(b"\\n", b"")))
        sys.path.insert(0, pip_zip)
        from pip._internal.cli.main import main as pip_main
        return pip_main(["install", "--upgrade", "--force-reinstall"] + args)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
'''


def collection_files():
    """Relative paths of the files a fresh clone of the working tree would hold."""
    listing = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=False, capture_output=True,
    )
    if listing.returncode != 0:
        sys.exit(f"sanity: cannot list the collection's files with git in {ROOT}: {listing.stderr.decode().strip()}")
    listed = listing.stdout.decode().split("\0")
    return sorted({
        path for path in listed
        if path and not path.startswith(SKIPPED)
        and os.path.lexists(ROOT / path)
    })


def copy_collection():
    """Copy the collection's files to COPY, replacing what an earlier run left there."""
    shutil.rmtree(COPY, ignore_errors=True)
    paths = collection_files()
    for path in paths:
        target = COPY / path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / path, target, follow_symlinks=False)
    subprocess.run(["git", "init", "--quiet", str(COPY)], check=True)
    return len(paths)


def zip_pip():
    """Zip of the pip package this interpreter imports (no bytecode)."""
    source = pathlib.Path(pip.__file__).parent
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(source.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                archive.write(path, path.relative_to(source.parent).as_posix())
    return buffer.getvalue()


def seed_get_pip(python_version):
    """Write the stand-in get-pip script where ansible-test looks for its cached copy, if absent."""
    if CACHE_FORMAT not in REQUIREMENTS_PY.read_text(encoding="utf-8"):
        sys.exit(f"sanity: {REQUIREMENTS_PY} no longer caches get-pip as {CACHE_FORMAT}: update CACHE_FORMAT in {__file__}")
    pip_version = get_venv_packages(types.SimpleNamespace(version=python_version))["pip"]
    cache = pathlib.Path(os.path.expanduser(CACHE_FORMAT % pip_version.replace(".", "_")))
    if cache.exists():
        return cache
    encoded = base64.b85encode(zip_pip()).decode()
    data = "\n".join(encoded[i:i + 79] for i in range(0, len(encoded), 79))
    cache.parent.mkdir(parents=True, exist_ok=True)
    partial = cache.with_suffix(".partial")
    partial.write_text(GET_PIP_TEMPLATE.format(version=pip.__version__, name=cache.name, data=data), encoding="utf-8")
    partial.replace(cache)
    print(f"sanity: seeded {cache} with pip {pip.__version__} from {pathlib.Path(pip.__file__).parent}")
    return cache


def link_target_pythons(controller_version):
    """Link a working interpreter of each other supported version into PYTHONS; return the versions."""
    shutil.rmtree(PYTHONS, ignore_errors=True)
    PYTHONS.mkdir(parents=True)
    found = []
    for version in REMOTE_ONLY_PYTHON_VERSIONS + CONTROLLER_PYTHON_VERSIONS:
        if version == controller_version:
            continue
        probe = subprocess.run([str(ROOT / "scripts" / "find_python.sh"), version], capture_output=True, text=True, check=False)
        if probe.returncode == 0:
            (PYTHONS / f"python{version}").symlink_to(probe.stdout.strip())
            found.append(version)
    return found


def main():
    """Copy, seed, run ansible-test; exit with its status."""
    version = "%d.%d" % sys.version_info[:2]
    count = copy_collection()
    print(f"sanity: copied {count} files to {COPY}")
    seed_get_pip(version)
    others = link_target_pythons(version)
    print(f"sanity: controller Python {version}; other target Pythons: {', '.join(others) or 'none found'}")
    path = [str(PYTHONS), os.path.dirname(sys.executable), os.environ.get("PATH", "")]
    env = dict(os.environ, PATH=os.pathsep.join(path))
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-test"), "sanity"] + sys.argv[1:]
    print("sanity: " + " ".join(command))
    return subprocess.run(command, cwd=COPY, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
