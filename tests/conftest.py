"""Make the repository importable as ansible_collections.gpuops.cuda_venv (and tests.standin) for pytest."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, "build", "collections")
_LINK = os.path.join(COLLECTIONS, "ansible_collections", "gpuops", "cuda_venv")

if not os.path.exists(_LINK):
    os.makedirs(os.path.dirname(_LINK), exist_ok=True)
    os.symlink(os.path.relpath(ROOT, os.path.dirname(_LINK)), _LINK)
for _path in (COLLECTIONS, ROOT):
    if _path not in sys.path:
        sys.path.insert(0, _path)


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: builds real venvs with pip (seconds each)")
