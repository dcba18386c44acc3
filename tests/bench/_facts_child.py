# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A child process that runs the whole facts module's work once: gather_facts, then the JSON a module returns.

Benchmark support for gpuops.cuda_venv: not part of the collection's API.
``python -m tests.bench._facts_child VENV size|hash ANCHOR [noprobe] [index] [history-cost=FILE]``; needs
build/collections on PYTHONPATH. ``index``: with the facts module's read index, kept in the venv's state folder as the
module keeps it. ``history-cost=FILE``: append "SECONDS_IN_FACTS SECONDS_IN_THE_HISTORY_STEP" to FILE, the history step
(the stamps' reading from the RECORD check's stats, the grouping, CONTAMINATION_SOURCE) timed again on the run's own observations.
"""

from __future__ import annotations

import json
import sys
import time

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.facts import keep_read_index
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.contamination_source import contamination_source
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.diagnose import diagnose
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.facts_report import report
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.history import history_of
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.distributions import locate_entries
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.install_times import read_stamps
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import FactsOptions, observe
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.record_check import check_all
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.process_end import skip_last_collection
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import SubprocessRunner


def main(argv) -> int:
    skip_last_collection()  # as the module does
    probe = "noprobe" not in argv[4:]
    index = "index" in argv[4:]
    cost_file = next((a.split("=", 1)[1] for a in argv[4:] if a.startswith("history-cost=")), None)
    start = time.perf_counter()
    # gather_facts, spelled out so that the run's observations can be timed again
    obs = observe(FactsOptions(path=argv[1], verify=argv[2], anchor=argv[3], probe=probe, performance=True, read_index=index),
                  SubprocessRunner())
    if index and obs.read_index.changed:
        keep_read_index(obs)
    facts = report(obs, diagnose(obs))
    total = time.perf_counter() - start
    if cost_file:
        # the stats the RECORD check took, which the facts hand to the stamps: not the history's cost
        locations, stats = locate_entries(obs.distributions, obs.layout.root), {}
        check_all(obs.distributions, obs.layout.root, locations=locations, stats=stats)
        start = time.perf_counter()
        read_stamps(obs.distributions, locations, stats)
        [t.as_dict() for t in history_of(obs)]
        contamination_source(obs)
        with open(cost_file, "a", encoding="utf-8") as handle:
            handle.write("%.6f %.6f\n" % (total, time.perf_counter() - start))
    text = json.dumps({"ansible_facts": {"cuda_venv": facts}})
    print("%d distributions, %d bytes of facts: %s" % (len(facts["distributions"]), len(text), facts["summary"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
