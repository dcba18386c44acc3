#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Mutation testing of the safety rules (``make mutate``): cosmic-ray on a copy of the tree, each rule's module
against its own unit tests, the score and the surviving mutants written to docs/MUTATION.md.

Usage: scripts/mutate.py COSMIC_RAY_VENV TOOLS_PYTHON [--report] [AREA ...]   (AREA: a key of SCOPE; default all)
``--report``: the table again from the sessions of earlier runs (build/mutate/AREA.sqlite and AREA.tree), nothing run; after an
equivalent mutant is added to docs/MUTATION.md, or to put areas run apart into one table.

Why cosmic-ray: it mutates the file on disk and runs any test command, so the collection's tests run as they always
do (the repository imported as ansible_collections.gpuops.cuda_venv through build/collections); mutmut 3 rewrites
the code into trampolines it imports under the file's own dotted path, which this layout does not have.

A copy per area (build/mutate/AREA.tree: git's tracked and untracked-not-ignored files, as a clone) is mutated, never
the working tree; runs of different areas can go on at once. Only the functions named in SCOPE are mutated: the
rules that accuse, remove, trust the cache or make a change durable. The ``%`` operator is left alone: in these
files it formats messages. A surviving mutant that cannot change behaviour is listed in docs/MUTATION.md's table of
equivalents (by module, function, operator and the line's text, a ``|`` in it written ``\\|``) with the reason;
every other survivor is a missing test.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, "build", "mutate")
DOC = os.path.join(ROOT, "docs", "MUTATION.md")
UNIT = "tests/unit/plugins/module_utils/"
MU = "plugins/module_utils/"

# area -> (module, its unit tests, the functions of the safety rules in it)
SCOPE = {
    "contaminants": (MU + "_decide/contaminants.py", [UNIT + "_decide/test_contaminants.py"], (
        "belonging", "_belonging", "_collisions", "_harmless", "_held", "_judged_versions", "_other_builds", "_propagate",
        "_requirement_conflicts", "_run_time_choices", "_anchor_build_allowed", "identical_everywhere", "removable",
        "replaced_by_declaration", "extra_askers", "still_asked", "installed_edges", "anchor_cuda_major", "_version_major",
        "_record_bytes", "_builds_of", "kept")),
    "plan": (MU + "_decide/plan.py", [UNIT + "_decide/test_plan.py"], (
        "make_plan", "_removals", "_refuse_broken_requirements", "_never_rewritten", "_co_owners", "_damaged",
        "_without_kept_collisions", "_split_sole_providers", "_needed_sonames_by_kept", "_provided_by_kept", "_replacing",
        "_units", "completed", "explained")),
    "history": (MU + "_decide/history.py", [UNIT + "_decide/test_history.py"], (
        "transactions", "_stretches_of_writing", "_by_installer", "_at_once", "_taking_turns", "_same_second")),
    "read_index": (MU + "_read/read_index.py", [UNIT + "_read/test_read_index.py"], (
        "__init__", "_answer", "_identity", "_newest", "_valid_identity", "load_index")),
    "durable": (MU + "_core/durable.py", [UNIT + "_core/test_durable.py"], (
        "fsync_dir", "fsync_file", "_fsync", "make_dirs", "sync_filesystem", "replace_file", "rewrite_file", "replace_with",
        "_write_new", "_remove")),
    "swap": (MU + "_act/swap.py", [UNIT + "_act/test_swap.py"], (
        "exchange", "exchange_atomically", "finish_exchange", "keep_generation", "recover_swap", "discard", "swap_back",
        "live_changes", "open_swap")),
    # the user's lock: what LOCK_DRIFT accuses (and prune: all then removes), and how a lock is read and selected
    "lock_drift": (MU + "_decide/lock_drift.py", [UNIT + "_decide/test_lock_drift.py"], ("lock_drift", "lock_facts", "_drift")),
    "locked_bytes": (MU + "_read/packaging/locked_bytes.py", [UNIT + "_read/packaging/test_locked_bytes.py"], (
        "check_locked_bytes", "_check", "_candidates", "_is_locked_wheel", "_compare", "_wheel_record", "_generated")),
    "lock_file": (MU + "_read/packaging/lock_file.py", [UNIT + "_read/packaging/test_lock_file.py"], (
        "lock_kind", "load_lock", "parse_lock", "select", "_parse_pylock", "_select_pylock", "_location",
        "_parse_requirements", "_logical_lines", "_select_requirements")),
}
SKIPPED_OPERATORS = re.compile(r"^core/ReplaceBinaryOperator_Mod_")
BEGIN, END = "<!-- mutate:begin -->", "<!-- mutate:end -->"


def main(argv) -> int:
    if len(argv) < 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    cosmic, python, rest = argv[1], argv[2], argv[3:]
    report_only = "--report" in rest
    areas = [a for a in rest if a != "--report"] or list(SCOPE)
    unknown = [a for a in areas if a not in SCOPE]
    if unknown:
        print("mutate: no area %s; the areas: %s" % (", ".join(unknown), ", ".join(SCOPE)), file=sys.stderr)
        return 2
    missing = [a for a in areas if report_only and not (os.path.exists(os.path.join(WORK, a + ".sqlite"))
                                                        and os.path.isdir(_tree_of(a)))]
    if missing:
        print("mutate: no session of %s in %s: run it first" % (", ".join(missing), WORK), file=sys.stderr)
        return 2
    equivalents = _equivalents()
    rows, survivors = [], []
    for area in areas:
        started = time.monotonic()
        counts, left = _area_results(area, _tree_of(area), equivalents) if report_only else _run_area(
            area, cosmic, python, _copy_tree(area), equivalents)
        rows.append((area, counts, None if report_only else time.monotonic() - started))
        survivors += left
    _write_doc(rows, survivors, areas)
    print(open(os.path.join(WORK, "results.md"), encoding="utf-8").read())
    return 1 if survivors else 0


def _tree_of(area) -> str:
    return os.path.join(WORK, area + ".tree")


def _copy_tree(area) -> str:
    """build/mutate/AREA.tree: what a clone holds, uncommitted work included."""
    tree = _tree_of(area)
    shutil.rmtree(tree, ignore_errors=True)
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            check=True, capture_output=True).stdout.split(b"\0")
    for name in (n.decode() for n in listed if n):
        source = os.path.join(ROOT, name)
        if os.path.isfile(source) and not os.path.islink(source):
            os.makedirs(os.path.join(tree, os.path.dirname(name)), exist_ok=True)
            shutil.copy2(source, os.path.join(tree, name))
    return tree


def _run_area(area, cosmic, python, tree, equivalents):
    module, tests, functions = SCOPE[area]
    config = os.path.join(WORK, area + ".toml")
    session = os.path.join(WORK, area + ".sqlite")
    command = " ".join([python, "-m", "pytest", "-x", "-q", "-p", "no:xdist", "-p", "no:cacheprovider"] + tests)
    with open(config, "w", encoding="utf-8") as handle:
        handle.write('[cosmic-ray]\nmodule-path = "%s"\ntimeout = 120.0\nexcluded-modules = []\ntest-command = "%s"\n'
                     '[cosmic-ray.distributor]\nname = "local"\n' % (module, command))
    if os.path.exists(session):
        os.remove(session)
    tool = os.path.join(cosmic, "bin", "cosmic-ray")
    subprocess.run([tool, "init", config, session], cwd=tree, check=True)
    spans = _functions(os.path.join(tree, module))
    db = sqlite3.connect(session)
    kept = 0
    for job, operator, row in db.execute("select job_id, operator_name, start_pos_row from mutation_specs").fetchall():
        if SKIPPED_OPERATORS.match(operator) or _function_at(spans, row) not in functions:
            db.execute("delete from mutation_specs where job_id = ?", (job,))
            db.execute("delete from work_items where job_id = ?", (job,))
        else:
            kept += 1
    db.commit()
    db.close()
    print("mutate: %s: %d mutants of %s in scope" % (area, kept, module), flush=True)
    subprocess.run([tool, "exec", config, session], cwd=tree, check=True)
    subprocess.run(["git", "diff", "--no-index", "--quiet", os.path.join(ROOT, module), os.path.join(tree, module)],
                   check=True)  # cosmic-ray put every mutated file back
    return _area_results(area, tree, equivalents)


def _area_results(area, tree, equivalents):
    module = SCOPE[area][0]
    lines = open(os.path.join(tree, module), encoding="utf-8").read().split("\n")
    return _results(area, module, os.path.join(WORK, area + ".sqlite"), _functions(os.path.join(tree, module)), lines,
                    equivalents)


def _results(area, module, session, spans, lines, equivalents):
    db = sqlite3.connect(session)
    found = db.execute("select s.operator_name, s.start_pos_row, r.worker_outcome, r.test_outcome from mutation_specs s "
                       "join work_results r on r.job_id = s.job_id").fetchall()
    db.close()
    counts = {"generated": len(found), "killed": 0, "equivalent": 0, "survived": 0, "incompetent": 0}
    left = []
    for operator, row, worker, outcome in found:
        outcome = str(outcome).lower().rsplit(".", 1)[-1]
        if outcome == "killed":
            counts["killed"] += 1
        elif outcome == "incompetent" or "abnormal" in str(worker).lower():
            counts["incompetent"] += 1
        else:
            key = (area, _function_at(spans, row), operator, lines[row - 1].strip())
            if key in equivalents:
                counts["equivalent"] += 1
            else:
                counts["survived"] += 1
                left.append("%s:%d %s (%s): `%s`" % (module, row, operator, key[1], key[3]))
    return counts, left


def _functions(path):
    tree = ast.parse(open(path, encoding="utf-8").read())
    return [(node.lineno, node.end_lineno, node.name) for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _function_at(spans, row) -> str:
    inner = [s for s in spans if s[0] <= row <= s[1]]
    return min(inner, key=lambda s: s[1] - s[0])[2] if inner else "<module>"


def _equivalents():
    """{(area, function, operator, line text)} of docs/MUTATION.md's table of equivalent mutants."""
    found = set()
    text = open(DOC, encoding="utf-8").read() if os.path.exists(DOC) else ""
    for line in text.split("\n"):
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))] if line.startswith("| eq |") else []
        if len(cells) >= 6:
            found.add((cells[1], cells[2], cells[3].strip("`"), cells[4].strip("`").replace("\\|", "|")))
    return found


def _write_doc(rows, survivors, areas) -> None:
    which = "" if areas == list(SCOPE) else " MUTATE_AREAS='%s'" % " ".join(areas)
    table = ["Table of %s: `make mutate%s`." % (time.strftime("%Y-%m-%d"), which), "",
             "| area | mutants | killed | equivalent | survived | incompetent | minutes |", "|---|---|---|---|---|---|---|"]
    for area, counts, seconds in rows:
        table.append("| %s | %d | %d | %d | %d | %d | %s |" % (area, counts["generated"], counts["killed"],
                                                               counts["equivalent"], counts["survived"],
                                                               counts["incompetent"],
                                                               "-" if seconds is None else "%.1f" % (seconds / 60)))
    table += ["", "Survivors: %s" % ("none" if not survivors else "")] + ["- " + s for s in survivors]
    block = "\n".join(table)
    os.makedirs(WORK, exist_ok=True)
    with open(os.path.join(WORK, "results.md"), "w", encoding="utf-8") as handle:
        handle.write(block + "\n")
    if os.path.exists(DOC):
        text = open(DOC, encoding="utf-8").read()
        if BEGIN in text and END in text:
            head, rest = text.split(BEGIN, 1)
            with open(DOC, "w", encoding="utf-8") as handle:
                handle.write(head + BEGIN + "\n" + block + "\n" + END + rest.split(END, 1)[1])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
