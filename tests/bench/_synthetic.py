# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Generated venvs of N distributions and M small files: a real ``python -m venv`` root, dist-info with true RECORDs.

Benchmark support for gpuops.cuda_venv: not part of the collection's API.

One root distribution (``bench-root``, the anchor) requires every other one; each other one requires the next two
(``>=1.0``), so ``pip check`` and the facts' requirement closure both walk every edge. Files are small Python
modules of varied sizes, 40 to a folder, as in real packages. Cached by sizes, interpreter and this file's text.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ._files import site_packages

ROOT_NAME = "bench-root"
PER_FOLDER = 40
STAMP = "bench-complete.txt"
# Not payload: each distribution's METADATA, WHEEL, INSTALLER, top_level.txt and RECORD.
METADATA_FILES = 5


@dataclass(frozen=True)
class Size:
    distributions: int
    files: int

    @property
    def label(self) -> str:
        return "%d dists / %dk files" % (self.distributions, self.files // 1000)


SIZES = (Size(50, 20000), Size(200, 80000), Size(500, 200000))


def _key(size: Size) -> str:
    text = Path(__file__).read_bytes() + sys.version.encode() + repr(size).encode()
    return hashlib.sha256(text).hexdigest()[:12]


def venv_for(size: Size, cache: Path, log=print) -> Path:
    """The cached generated venv of ``size``, generating it when missing."""
    venv = cache / ("synthetic-%d-%d-%s" % (size.distributions, size.files, _key(size))) / "venv"
    if (venv / STAMP).is_file():
        return venv
    if venv.exists():
        shutil.rmtree(venv)
    venv.parent.mkdir(parents=True, exist_ok=True)
    log("bench: generating %s in %s" % (size.label, venv))
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, stdin=subprocess.DEVNULL)
    generate(site_packages(venv), size)
    (venv / STAMP).write_text("%r\n" % (size,))
    return venv


def _name(index: int) -> str:
    return ROOT_NAME if index == 0 else "bench-dist-%04d" % index


def generate(site: Path, size: Size) -> None:
    """Write ``size.distributions`` distributions holding ``size.files`` files in all into ``site``."""
    payload = max(1, size.files // size.distributions - METADATA_FILES)
    for index in range(size.distributions):
        name = _name(index)
        if index == 0:
            requires = [_name(i) for i in range(1, size.distributions)]
        else:
            requires = [_name(i) + ">=1.0" for i in (index + 1, index + 2) if i < size.distributions]
        _write_distribution(site, name, requires, payload if index else 1)


def _module_text(package: str, number: int) -> bytes:
    body = "value_%d = %d\n" % (number, number)
    return ('"""Module %d of %s."""\n' % (number, package) + body * (1 + (number * 7) % 60)).encode()


def _write_distribution(site: Path, name: str, requires, payload: int) -> None:
    package = name.replace("-", "_")
    files = {"%s/__init__.py" % package: b"VERSION = '1.0'\n"}
    for number in range(1, payload):
        files["%s/sub%03d/mod%04d.py" % (package, number // PER_FOLDER, number)] = _module_text(package, number)
    info = "%s-1.0.dist-info" % package
    metadata = "Metadata-Version: 2.1\nName: %s\nVersion: 1.0\n" % name
    metadata += "".join("Requires-Dist: %s\n" % r for r in requires)
    files[info + "/METADATA"] = metadata.encode()
    files[info + "/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: cuda_venv-bench\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files[info + "/INSTALLER"] = b"pip\n"
    files[info + "/top_level.txt"] = (package + "\n").encode()
    rows = io.StringIO()
    writer = csv.writer(rows, lineterminator="\n")
    made = set()
    for relpath, data in files.items():
        folder = (site / relpath).parent
        if folder not in made:
            folder.mkdir(parents=True, exist_ok=True)
            made.add(folder)
        (site / relpath).write_bytes(data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip("=")
        writer.writerow([relpath, "sha256=" + digest, len(data)])
    writer.writerow([info + "/RECORD", "", ""])
    (site / info / "RECORD").write_text(rows.getvalue())
