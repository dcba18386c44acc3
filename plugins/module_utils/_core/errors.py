# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one base class of every error the engine raises on purpose.

Private to the gpuops.cuda_venv collection: not a public API.

Each module catches ``CudaVenvError`` once, around its whole run, and fails with the message and the partial
result the error carries (``result``), so no input, venv or node ever ends a module with a traceback.
"""

from __future__ import annotations

from typing import Optional


class CudaVenvError(Exception):
    """An error whose message names the bad input or state and what to do; ``result`` is the partial result."""

    def __init__(self, message: str = "", result: Optional[dict] = None):
        super().__init__(message)
        self.result = result if result is not None else {}
