# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of gpuops.cuda_venv.cuda_venv_html_report: render the pages and write them on the controller.

The documentation is in plugins/modules/cuda_venv_html_report.py. An action plugin because the report is built and
written where the playbook runs, from every host's results at once, and may run Graphviz there.
"""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.durable import replace_file
from ansible_collections.gpuops.cuda_venv.plugins.plugin_utils._report_pages import (
    INDEX, LAYOUTS, ReportError, render_report)

ARGUMENT_SPEC = dict(
    dest=dict(type="path", required=True),
    reports=dict(type="dict", required=True),
    title=dict(type="str", default="CUDA venvs"),
    layout=dict(type="str", choices=list(LAYOUTS), default="auto"),
    dot=dict(type="path"),
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        dest = args["dest"]
        if not os.path.isabs(dest):
            raise AnsibleActionFail("dest must be an absolute path on the controller, got %r" % dest)
        if os.path.exists(dest) and not os.path.isdir(dest):
            raise AnsibleActionFail("dest %s exists and is not a folder" % dest)
        try:
            files, rows, note = render_report(args["reports"], args["title"], args["layout"], args["dot"])
        except ReportError as exc:
            raise AnsibleActionFail(str(exc)) from exc
        changed = [name for name, text in files.items() if _differs(os.path.join(dest, name), text)]
        if changed and not self._task.check_mode:
            try:
                os.makedirs(dest, exist_ok=True)
                for name in changed:
                    # Beside the page, then renamed over it: a reader never sees half a page.
                    replace_file(os.path.join(dest, name), files[name].encode("utf-8"), 0o644)
            except OSError as exc:
                raise AnsibleActionFail("cannot write the report into %s: %s" % (dest, exc)) from exc
        result.update(changed=bool(changed), dest=dest, index=os.path.join(dest, INDEX), pages=list(files),
                      hosts=rows, layout=note)
        return result


def _differs(path: str, text: str) -> bool:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read() != text
    except (OSError, UnicodeDecodeError):
        return True
