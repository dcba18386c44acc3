# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A child process that runs cuda_venv_repair's work once, the way its main() does, without Ansible.

Benchmark support for gpuops.cuda_venv: not part of the collection's API.
``python -m tests.bench._repair_child VENV pip|uv UV_PATH in_place|swap|diagnose FIND_LINKS...``; needs build/collections
on PYTHONPATH. Exits 1 unless the venv ends healthy. ``diagnose``: the role's diagnosis instead (``plan_only`` with
``facts``: the plan, the import probe, the read index kept), which changes nothing; exits 0.
"""

from __future__ import annotations

import sys

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.installers import WheelSources, select_backend
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import FactsOptions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import DesiredState
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.repair import repair
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.run import RepairOptions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import SubprocessRunner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.process_end import skip_last_collection
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import read_layout
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._entry.repair_entry import repair_arguments

# The module's defaults (plugins/module_utils/_entry/repair_entry.py, repair_arguments).
_SPEC = repair_arguments()["argument_spec"]
PROBE_TIMEOUT = float(_SPEC["probe_timeout"]["default"])
INSTALLER_TIMEOUT = float(_SPEC["installer_timeout"]["default"])


def main(argv) -> int:
    venv, kind, uv_path, strategy, links = argv[1], argv[2], argv[3] or None, argv[4], tuple(argv[5:])
    skip_last_collection()  # as the module does
    runner = SubprocessRunner()
    sources = WheelSources(find_links=links, no_index=bool(links))
    layout = read_layout(venv)

    def make_backend(_observed):
        return select_backend(kind, layout.python, runner, sources, uv_path=uv_path, timeout=INSTALLER_TIMEOUT)
    diagnosis = strategy == "diagnose"
    options = RepairOptions(
        facts=FactsOptions(path=layout.root, probe_timeout=PROBE_TIMEOUT),
        desired=DesiredState(packages=(), remove=(), prune="cuda", batch_size=4), strategy="auto" if diagnosis else strategy,
        check_mode=diagnosis, keep_index=diagnosis, report_facts=diagnosis)
    result = repair(options, layout, make_backend, runner)
    if diagnosis:
        print("diagnosis: %d batch(es); %s" % (len(result["plan"]["batches"]), result["summary"]))
        return 0
    batches = ["%s: %s" % (b["batch"], b["result"]) for b in result["batches"]]
    print("changed=%s healthy=%s strategy=%s batches=%s: %s" % (result["changed"], result["healthy"], result["strategy"],
                                                                batches, result["summary"]))
    return 0 if result["healthy"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
