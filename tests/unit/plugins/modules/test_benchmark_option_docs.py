# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The benchmark options are documented twice - cuda_venv_benchmark's options and the suboptions of cuda_venv_repair's
``benchmark`` (a doc fragment cannot give one option's suboptions) - and both texts must say the same.

Both modules take these options from one argument spec (``measuring()`` in ``_entry/benchmark_entry.py``), so the docs
of an option both take must be equal, key by key, and match that spec. Two differences are read as equal: a description
given as one string or as a list of one string, and the repair's references ``O(benchmark.NAME)`` to its own suboptions,
which the benchmark module writes ``O(NAME)``.
"""

from __future__ import annotations

import re

import pytest
import yaml

from ansible_collections.gpuops.cuda_venv.plugins.modules import cuda_venv_benchmark, cuda_venv_repair

# The options both take; cuda_venv_benchmark alone takes path, ld_library_path (its doc fragment), baseline,
# baseline_path, save_path and require_gpu.
SHARED = {"matmul_size", "matmul_iterations", "warmup_iterations", "copy_mib", "copy_iterations", "device", "command",
          "command_regex", "command_timeout", "min_ratio", "repeats", "noise", "timeout"}

# Keys that differ by design, with why. min_ratio: the module fails below 0.95 of its baseline; the repair keeps the
# verified copy out at any drop beyond the noise band (1.0, SWAP_MIN_RATIO), so its description says what it does there.
DIFFERENT_BY_DESIGN = {"min_ratio": {"default", "description"}}

# The keys an argument spec and its documentation share.
SPEC_KEYS = ("type", "default", "elements", "choices", "required")

# An O() reference's option name: O(name), O(name=value), O(parent.name).
_REFERENCE = re.compile(r"O\(([^)=]+)")


def benchmark_docs() -> dict:
    return yaml.safe_load(cuda_venv_benchmark.DOCUMENTATION)["options"]


def repair_docs() -> dict:
    return yaml.safe_load(cuda_venv_repair.DOCUMENTATION)["options"]["benchmark"]["suboptions"]


def _lines(description) -> list:
    return [description] if isinstance(description, str) else list(description)


def _descriptions(doc: dict) -> str:
    return " ".join(_lines(doc.get("description", [])))


def as_the_benchmark_module_writes(doc: dict) -> dict:
    """The repair's doc of a suboption, its references to the other suboptions written as the benchmark module's."""
    found = dict(doc)
    found["description"] = [line.replace("O(benchmark.", "O(") for line in _lines(doc["description"])]
    return found


def test_the_options_both_modules_take_are_the_expected_ones():
    assert SHARED
    shared = set(benchmark_docs()) & set(repair_docs())
    assert shared == SHARED, "options both modules document: new %s, gone %s" % (sorted(shared - SHARED), sorted(SHARED - shared))


@pytest.mark.parametrize("name", sorted(SHARED))
def test_an_option_both_take_is_documented_alike(name):
    benchmark = dict(benchmark_docs()[name], description=_lines(benchmark_docs()[name]["description"]))
    repair = as_the_benchmark_module_writes(repair_docs()[name])
    keys = (set(benchmark) | set(repair)) - DIFFERENT_BY_DESIGN.get(name, set())
    differing = ["%s.%s differs: cuda_venv_benchmark has %r, cuda_venv_repair's benchmark has %r"
                 % (name, key, benchmark.get(key), repair.get(key)) for key in sorted(keys) if benchmark.get(key) != repair.get(key)]
    assert not differing, "\n".join(differing)


@pytest.mark.parametrize("name", sorted(SHARED))
def test_both_docs_of_an_option_match_its_argument_spec(name):
    specs = {"cuda_venv_benchmark": (cuda_venv_benchmark.benchmark_arguments()["argument_spec"][name], benchmark_docs()[name]),
             "cuda_venv_repair's benchmark": (cuda_venv_repair.repair_arguments()["argument_spec"]["benchmark"]["options"][name],
                                              repair_docs()[name])}
    differing = ["%s: %s.%s is documented %r, its argument spec has %r" % (module, name, key, doc.get(key), spec.get(key))
                 for module, (spec, doc) in specs.items() for key in SPEC_KEYS if doc.get(key) != spec.get(key)]
    assert not differing, "\n".join(differing)


def test_the_repair_names_its_benchmark_suboptions_by_their_full_path():
    """O(command) in a suboption's text would name a top-level option the repair does not have."""
    top_level = set(yaml.safe_load(cuda_venv_repair.DOCUMENTATION)["options"])
    bare = ["%s says O(%s)" % (name, reference) for name, doc in sorted(repair_docs().items())
            for reference in _REFERENCE.findall(_descriptions(doc)) if reference in SHARED - top_level]
    assert not bare, "write O(benchmark.NAME) in the repair's benchmark suboptions: %s" % "; ".join(bare)
    nested = ["%s says O(%s)" % (name, reference) for name, doc in sorted(benchmark_docs().items())
              for reference in _REFERENCE.findall(_descriptions(doc)) if reference.startswith("benchmark.")]
    assert not nested, "cuda_venv_benchmark has no option benchmark: %s" % "; ".join(nested)
