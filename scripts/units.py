#!/usr/bin/env python
"""Run `ansible-test units --venv` on a copy of the collection, prepared as scripts/sanity.py prepares it.

The copy (build/sanity/ansible_collections/gpuops/cuda_venv) and the offline get-pip seed come from
scripts/sanity.py. ansible-test makes a venv for the controller's Python with its own unit-test pins
and tests/unit/requirements.txt, and runs tests/unit there: the check that the collection's unit tests
declare what they import, as ansible-test runs them for a collection anywhere.

Run it with the tools venv's python: python scripts/units.py [ansible-test units args...]
"""

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
    return subprocess.run(command, cwd=sanity.COPY, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
