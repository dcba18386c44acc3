# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The paths a wheel file will write into a venv, read from the RECORD inside it; and which wheel of a folder an
installer picks for a requirement on this venv's interpreter.

Private to the gpuops.cuda_venv collection: not a public API.

Spec: https://packaging.python.org/en/latest/specifications/binary-distribution-format/ (the ``.data`` folders
and their install schemes) and https://packaging.python.org/en/latest/specifications/entry-points/ (console
scripts the installer generates into ``bin/``). The RECORD and METADATA parsers are distributions' own.
"""

from __future__ import annotations

import configparser
import os
import zipfile
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import canonical_name
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.venv_paths import local_path
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.wheel_sources import local_wheel_files
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.distributions import (
    METADATA_LIMIT, RECORD_LIMIT, parse_metadata, parse_record)

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.packaging_lib import (
    InvalidRequirement, InvalidVersion, InvalidWheelFilename, Requirement, parse_wheel_filename)

_ENTRY_POINTS_LIMIT = 1024 * 1024


class WheelError(CudaVenvError, ValueError):
    """A wheel file that cannot be read (message names the file and why)."""


@dataclass(frozen=True)
class WheelPath:
    """One file a wheel writes: where in the venv (absolute, normalised), its RECORD row, its hash (or None)."""

    target: str
    record: str
    algorithm: Optional[str]
    digest: Optional[str]


@dataclass(frozen=True)
class WheelContents:
    """A wheel file and every path it will write."""

    file: str
    name: str
    key: str
    version: str
    requires_dist: Tuple[str, ...]
    paths: Tuple[WheelPath, ...]
    problems: Tuple[str, ...]

    @property
    def label(self) -> str:
        return "%s %s" % (self.name, self.version)


def read_wheel(wheel_file: str, root: str, site_packages: str, python_version: str) -> WheelContents:
    """Every path ``wheel_file`` writes when installed into the venv at ``root`` (site-packages ``site_packages``,
    Python ``python_version`` such as "3.12"), from the RECORD in the zip plus the console scripts its
    entry_points.txt asks the installer to generate. Raises WheelError when it is not a readable wheel."""
    try:
        with zipfile.ZipFile(wheel_file) as archive:
            names = archive.namelist()
            info_dir = _dist_info_dir(names, wheel_file)
            problems: list = []
            headers = parse_metadata(_member(archive, info_dir + "/METADATA", METADATA_LIMIT), "METADATA", problems)
            entries = parse_record(_member(archive, info_dir + "/RECORD", RECORD_LIMIT), problems)
            scripts = _console_scripts(archive, info_dir + "/entry_points.txt", names)
    except (OSError, zipfile.BadZipFile, KeyError) as exc:
        raise WheelError("cannot read wheel %s: %s" % (wheel_file, getattr(exc, "strerror", None) or exc)) from None
    name = headers.name or info_dir.rsplit("-", 1)[0]
    headers_dir = os.path.join(root, "include", "site", "python" + python_version, name)
    paths = []
    for entry in entries:
        target = _target(entry.path, root, site_packages, headers_dir)
        if target is None:
            problems.append("RECORD entry '%s' leaves the venv" % entry.path)
            continue
        paths.append(WheelPath(target, entry.path, entry.algorithm, entry.digest))
    for script in scripts:
        paths.append(WheelPath(os.path.join(root, "bin", script), "entry point script %s" % script, None, None))
    return WheelContents(wheel_file, name, canonical_name(name), headers.version or "", headers.requires_dist,
                         tuple(paths), tuple(problems))


def _dist_info_dir(names: Sequence[str], wheel_file: str) -> str:
    found = sorted({n.split("/", 1)[0] for n in names
                    if n.count("/") == 1 and n.split("/", 1)[0].endswith(".dist-info") and n.endswith("/RECORD")})
    if len(found) != 1:
        raise WheelError("wheel %s holds %d .dist-info folders with a RECORD, expected one" % (wheel_file, len(found)))
    return found[0]


def _member(archive, name: str, limit: int) -> bytes:
    with archive.open(name) as handle:
        return handle.read(limit + 1)


def _console_scripts(archive, name: str, names) -> List[str]:
    if name not in names:
        return []
    parser = configparser.ConfigParser(delimiters=("=",), interpolation=None)
    parser.optionxform = str
    try:
        parser.read_string(_member(archive, name, _ENTRY_POINTS_LIMIT).decode("utf-8", errors="replace"))
    except configparser.Error:
        return []
    return sorted(script.strip() for section in ("console_scripts", "gui_scripts") if parser.has_section(section)
                  for script in parser.options(section) if script.strip() and "/" not in script)


def _target(path: str, root: str, site_packages: str, headers_dir: str) -> Optional[str]:
    """Where a RECORD path of a wheel lands: ``NAME.data/<scheme>/rest`` goes to its scheme, the rest to
    site-packages (venv schemes: scripts -> bin, data -> the venv root, headers -> include/site/pythonX.Y/NAME)."""
    head, _sep, rest = path.partition("/")
    base = site_packages
    if head.endswith(".data") and rest:
        scheme, _sep, rest = rest.partition("/")
        base = {"purelib": site_packages, "platlib": site_packages, "scripts": os.path.join(root, "bin"),
                "data": root, "headers": headers_dir}.get(scheme)
        if base is None or not rest:
            return None
        path = rest
    target = os.path.normpath(os.path.join(base, path))
    inside = os.path.normpath(root)
    return target if target.startswith(inside.rstrip(os.sep) + os.sep) else None


# --- which wheel the installer picks ---------------------------------------------------------------------------

def local_folders(find_links: Sequence[str]) -> Optional[List[str]]:
    """The find-links entries as local paths (folders or wheel files), or None when one is a remote URL."""
    local = [local_path(link) for link in find_links]
    return None if None in local else local


def pick_wheel(requirement: str, folders: Sequence[str], tags: list) -> Optional[str]:
    """The wheel file of ``folders`` an installer picks for ``requirement`` (by name): the highest version the
    specifier allows (pre-releases only as the specifier allows them), then the best tag, then the build
    number; None when no wheel fits."""
    try:
        req = Requirement(requirement)
    except InvalidRequirement:
        return None
    wanted = canonical_name(req.name)
    rank = {tag: number for number, tag in enumerate(tags)}
    candidates = []
    for path in local_wheel_files(folders):
        try:
            name, version, build, wheel_tags = parse_wheel_filename(os.path.basename(path))
        except (InvalidWheelFilename, InvalidVersion):
            continue
        best_tag = min((rank[t] for t in wheel_tags if t in rank), default=None)
        if name == wanted and best_tag is not None:
            candidates.append((version, -best_tag, build, path))
    allowed = set(req.specifier.filter(c[0] for c in candidates))
    fitting = [c for c in candidates if c[0] in allowed]
    return max(fitting)[3] if fitting else None
