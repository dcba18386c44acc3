# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A child process that runs the whole facts module's work once: gather_facts, then the JSON a module returns.

Benchmark support for gpuops.cuda_venv: not part of the collection's API.
``python -m tests.bench._facts_child VENV size|hash ANCHOR [noprobe]``; needs build/collections on PYTHONPATH.
"""

from __future__ import annotations

import json
import sys

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.facts_report import gather_facts
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import FactsOptions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import SubprocessRunner


def main(argv) -> int:
    probe = argv[4:] != ["noprobe"]
    facts = gather_facts(FactsOptions(path=argv[1], verify=argv[2], anchor=argv[3], probe=probe), SubprocessRunner())
    text = json.dumps({"ansible_facts": {"cuda_venv": facts}})
    print("%d distributions, %d bytes of facts: %s" % (len(facts["distributions"]), len(text), facts["summary"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
