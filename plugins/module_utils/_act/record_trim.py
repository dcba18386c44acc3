# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cut entries out of a RECORD before an installer uninstalls its distribution.

Private to the gpuops.cuda_venv collection: not a public API.

pip and uv delete what RECORD lists; an entry leaving the venv (``../``, absolute, through a symlink) would
make them delete outside it. The batch's snapshot holds the original RECORD, so a rollback restores it.
The new RECORD is written beside the old one, with its mode (and owner), and renamed over it (_core/durable.py):
an inode shared with an installer's cache is never written.
"""

from __future__ import annotations

import csv
import io
from typing import Iterable

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.durable import rewrite_file


def drop_record_entries(record: str, paths: Iterable[str]) -> int:
    """Rewrite ``record`` without the rows whose path is in ``paths``; the number of rows dropped.

    Raises OSError when RECORD cannot be read or replaced.
    """
    drop = set(paths)
    with open(record, "rb") as handle:
        text = handle.read().decode("utf-8", errors="surrogateescape")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    kept = [row for row in rows if not row or row[0] not in drop]
    out = io.StringIO(newline="")
    csv.writer(out, lineterminator="\n").writerows(kept)
    rewrite_file(record, out.getvalue().encode("utf-8", errors="surrogateescape"))
    return len(rows) - len(kept)
