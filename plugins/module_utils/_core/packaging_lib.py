# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The names the engine takes from packaging (pypa), imported once behind one guard.

Private to the gpuops.cuda_venv collection: not a public API.

Without packaging on the managed node every name here is None, ``HAS_PACKAGING`` is False and
``PACKAGING_IMPORT_ERROR`` holds the traceback: the modules fail with ``missing_required_lib('packaging')``.
"""

from __future__ import annotations

import traceback

__all__ = ("HAS_PACKAGING", "PACKAGING_IMPORT_ERROR", "InvalidRequirement", "InvalidSpecifier", "InvalidVersion",
           "InvalidWheelFilename", "Requirement", "SpecifierSet", "UndefinedComparison", "UndefinedEnvironmentName", "Version",
           "parse_wheel_filename", "tags")

try:
    from packaging import tags
    from packaging.markers import UndefinedComparison, UndefinedEnvironmentName
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename
    from packaging.version import InvalidVersion, Version
except ImportError:
    HAS_PACKAGING = False
    PACKAGING_IMPORT_ERROR = traceback.format_exc()
    tags = UndefinedComparison = UndefinedEnvironmentName = InvalidRequirement = Requirement = None
    InvalidWheelFilename = parse_wheel_filename = InvalidVersion = Version = InvalidSpecifier = SpecifierSet = None
else:
    HAS_PACKAGING = True
    PACKAGING_IMPORT_ERROR = None
