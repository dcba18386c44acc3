# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cut entries out of a RECORD before an installer uninstalls its distribution.

Private to the gpuops.cuda_venv collection: not a public API.

pip and uv delete what RECORD lists; an entry leaving the venv (``../``, absolute, through a symlink) would
make them delete outside it. The batch's snapshot holds the original RECORD, so a rollback restores it.
The new RECORD is written beside the old one and renamed over it: an inode shared with an installer's cache
is never written.
"""

from __future__ import annotations

import csv
import io
import os
import tempfile
from typing import Iterable


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
    folder = os.path.dirname(record)
    fd, temporary = tempfile.mkstemp(prefix=".RECORD.", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(out.getvalue().encode("utf-8", errors="surrogateescape"))
        os.chmod(temporary, os.stat(record).st_mode & 0o7777)
        os.replace(temporary, record)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return len(rows) - len(kept)
