#!/usr/bin/env python
"""Install the community collections the project needs without Galaxy.

The `ansible` package on the Python registry bundles the community collections. This downloads
that one wheel with pip (as configured on the machine, no dependencies), extracts only the
collections named in NEEDED into DEST/ansible_collections/.

Usage: python scripts/fetch_collections.py REQUIREMENTS_FILE DEST
"""

import pathlib
import shutil
import subprocess
import sys
import tempfile
import zipfile

NEEDED = ("community/proxmox", "community/general", "community/library_inventory_filtering_v1",
          "containers/podman")  # the last: Molecule's default scenario reaches its podman containers with it


def download_bundle(requirements, workdir):
    """Download the pinned `ansible` wheel into workdir and return its path."""
    subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", "download", "--quiet",
         "--no-deps", "--only-binary=:all:", "--dest", str(workdir), "--requirement", str(requirements)],
        check=True,
    )
    wheels = sorted(workdir.glob("ansible-*.whl"))
    if len(wheels) != 1:
        sys.exit(f"fetch_collections: expected one ansible-*.whl from {requirements}, got {[w.name for w in wheels]}")
    return wheels[0]


def extract(wheel, dest):
    """Replace the NEEDED collections under dest/ansible_collections with the wheel's copies."""
    prefixes = tuple(f"ansible_collections/{name}/" for name in NEEDED)
    for name in NEEDED:
        shutil.rmtree(dest / "ansible_collections" / name, ignore_errors=True)
    with zipfile.ZipFile(wheel) as bundle:
        members = [m for m in bundle.namelist() if m.startswith(prefixes)]
        for name in NEEDED:
            if f"ansible_collections/{name}/MANIFEST.json" not in members:
                sys.exit(f"fetch_collections: {wheel.name} has no ansible_collections/{name}: pick another `ansible` version")
        bundle.extractall(dest, members)
    return len(members)


def main():
    """Download and extract."""
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    requirements, dest = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    with tempfile.TemporaryDirectory(prefix="fetch-collections-") as workdir:
        wheel = download_bundle(requirements, pathlib.Path(workdir))
        count = extract(wheel, dest)
    print(f"fetch_collections: {count} files of {', '.join(NEEDED)} from {wheel.name} in {dest}/ansible_collections")


if __name__ == "__main__":
    main()
