# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the cost grows with the venv: the generated venvs' medians side by side, per file.

Benchmark support for gpuops.cuda_venv: not part of the collection's API.
"""

from __future__ import annotations

from typing import List, Tuple

from ._table import Table

KEYS = (("check", "pip check"), ("facts", "facts default"), ("hash", "facts hash"), ("reader", "hashlib reader"))


def markdown(tables: List[Tuple[str, int, Table]]) -> str:
    """``tables``: (label, file count, that venv's table). Seconds and microseconds per file for each command."""
    lines = ["### Scaling (generated venvs)", "",
             "Median wall seconds, then CPU seconds (user + system of the child and its children, which other "
             "load on the machine disturbs less) and CPU microseconds per file. Linear growth keeps the CPU time "
             "per file flat from row to row.", "",
             "| venv | files | " + " | ".join("%s: wall s / CPU s (CPU us/file)" % name for _key, name in KEYS) + " |",
             "|---|---:|" + "---:|" * len(KEYS)]
    for label, count, table in tables:
        cells = []
        for key, _name in KEYS:
            m = table.row(key).measurement
            cells.append("%.2f / %.2f (%.0f)" % (m.median, m.median_cpu, m.median_cpu / count * 1e6))
        lines.append("| %s | %d | %s |" % (label, count, " | ".join(cells)))
    if len(tables) > 1:
        first, last = tables[0], tables[-1]

        def per_file(entry, key):
            return entry[2].row(key).measurement.median_cpu / entry[1]
        growth = ", ".join("%s %.2fx" % (name, per_file(last, key) / per_file(first, key)) for key, name in KEYS)
        lines += ["", "CPU time per file, largest venv over smallest (1.00x = linear): %s." % growth]
    return "\n".join(lines) + "\n"
