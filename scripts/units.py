#!/usr/bin/env python
"""Run `ansible-test units --venv` on a copy of the collection, prepared as scripts/sanity.py prepares it.

The copy (build/sanity/ansible_collections/gpuops/cuda_venv) and the offline get-pip seed come from
scripts/sanity.py. ansible-test makes a venv for the controller's Python with its own unit-test pins
and tests/unit/requirements.txt, and runs tests/unit there: the check that the collection's unit tests
declare what they import, as ansible-test runs them for a collection anywhere.

Run it with the tools venv's python: python scripts/units.py [ansible-test units args...]
"""

import glob
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sanity  # noqa: E402  pylint: disable=wrong-import-position


def main():
    """Copy, seed, run ansible-test units on this interpreter's version in a fresh venv; exit with its status."""
    version = "%d.%d" % sys.version_info[:2]
    print(f"units: copied {sanity.copy_collection()} files to {sanity.COPY}")
    # The stand-in wheels are cached by a hash of their sources: share the checkout's cache (make unit fills it).
    cache = sanity.ROOT / "build" / "standin-cache"
    cache.mkdir(parents=True, exist_ok=True)
    (sanity.COPY / "build").mkdir(exist_ok=True)
    (sanity.COPY / "build" / "standin-cache").symlink_to(cache)
    sanity.seed_get_pip(version)
    ansible_test = os.path.join(os.path.dirname(sys.executable), "ansible-test")
    command = [ansible_test, "units", "--venv", "--python", version] + sys.argv[1:]
    print("units: " + " ".join(command))
    env = dict(os.environ, PATH=os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]))
    before = set(_ansible_local_temps())
    try:
        return subprocess.run(command, cwd=sanity.COPY, env=env, check=False).returncode
    finally:
        _remove_empty(set(_ansible_local_temps()) - before)


def _ansible_local_temps():
    """ansible's local temporary folders (DEFAULT_LOCAL_TMP) in the user's home: ansible-test passes HOME to the tests,
    and the pytest processes it starts end without ansible's atexit removing theirs."""
    return glob.glob(os.path.join(os.path.expanduser("~"), ".ansible", "tmp", "ansible-local-*"))


def _remove_empty(folders):
    """Remove the folders the run made whose process has ended and that are empty (rmdir: never one that holds
    anything). mkdtemp names them ansible-local-PID followed by 8 random characters."""
    for folder in sorted(folders):
        if _ended(os.path.basename(folder)[len("ansible-local-"):-8]):
            try:
                os.rmdir(folder)
            except OSError:
                pass


def _ended(pid: str) -> bool:
    """Whether the process ``pid`` is gone; False while it runs (a concurrent ansible's), for a name mkdtemp did not
    give, or for another user's process."""
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (ValueError, OSError):
        return False
    return False


if __name__ == "__main__":
    sys.exit(main())
