# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``make bench``: the facts engine and the repair against the tools people use instead, measured in one run.

Benchmark support for gpuops.cuda_venv: not part of the collection's API, not a test (it asserts nothing).
Run ``python -m tests.bench --help`` from the repository root with build/collections on PYTHONPATH.
"""
