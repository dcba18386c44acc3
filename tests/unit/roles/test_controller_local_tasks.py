# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Role tasks that set ``ansible_connection: local`` (so that no worker loads the node's connection plugin for a task
that only templates) must be actions that run wholly on the controller: one that ran a module would run it on the
controller instead of the node."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROLES = Path(__file__).resolve().parents[3] / "roles"
CONTROLLER_ONLY = {"ansible.builtin.set_fact", "ansible.builtin.debug", "ansible.builtin.assert", "ansible.builtin.fail",
                   "ansible.builtin.validate_argument_spec", "ansible.builtin.meta"}
KEYWORDS = {"name", "vars", "when", "register", "changed_when", "failed_when", "notify", "tags", "loop", "loop_control",
            "check_mode", "diff", "no_log", "run_once", "delegate_to", "become", "environment", "until", "retries",
            "delay", "ignore_errors", "listen", "module_defaults", "block", "rescue", "always", "args", "timeout"}


def _tasks(node, local=False):
    """(task, its action, ansible_connection local on it or an enclosing block) for each task under ``node``."""
    for task in node or []:
        here = local or (task.get("vars") or {}).get("ansible_connection") == "local"
        if any(key in task for key in ("block", "rescue", "always")):
            for key in ("block", "rescue", "always"):
                yield from _tasks(task.get(key), here)
            continue
        actions = [key for key in task if key not in KEYWORDS]
        yield task, actions[0] if actions else None, here


def _files():
    return sorted(path for path in ROLES.glob("*/*/*.yml") if path.parent.name in ("tasks", "handlers"))


@pytest.mark.parametrize("path", _files(), ids=lambda path: "%s/%s" % (path.parent.parent.name, path.name))
def test_local_connection_only_on_controller_actions(path):
    for task, action, local in _tasks(yaml.safe_load(path.read_text(encoding="utf-8"))):
        if local:
            assert action in CONTROLLER_ONLY, "%s: task %r runs %s with ansible_connection local" % (path, task.get("name"), action)


def test_the_healthy_path_templates_locally():
    """The controller-only tasks a healthy host passes through carry it (what the fleet's no-op pass saves)."""
    local = set()
    for name in ("main.yml", "work.yml", "outcome.yml"):
        tasks = yaml.safe_load((ROLES / "venv_repair" / "tasks" / name).read_text(encoding="utf-8"))
        local |= {task["name"] for task, _action, here in _tasks(tasks) if here}
    assert {"Start with no outcome", "Fail when the plan cannot make the venv healthy",
            "Name the processes that still map replaced libraries of the venv"} <= local
