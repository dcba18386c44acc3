# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's own version, for what it keeps between runs (the read index): another version may read otherwise.

Private to the gpuops.cuda_venv collection: not a public API.
"""

from __future__ import annotations

VERSION = "1.0.0"  # galaxy.yml's version: a release changes both (tests/unit/.../_core/test_collection.py holds them equal)
