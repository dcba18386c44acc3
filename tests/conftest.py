"""Make the repository importable as ansible_collections.gpuops.cuda_venv (and tests.standin) for pytest."""

import os
import re
import sys

import pytest

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


# Under CI (CI=true), a skipped test fails unless its reason matches this allow-list: what no CI machine has.
# Everything else a test may skip for (gcc-multilib, util-linux's setpriv/unshare, tmpfs and bind mounts as root,
# /dev/shm) `make test` installs or needs (docs/TESTING.md, "Skips under CI").
CI_SKIP_ALLOWED = (
    ("a GPU", re.compile(r"libnvidia-ml\.so\.1")),
    ("opt-in real wheels (make acceptance)", re.compile(r"^opt-in: real torch wheels")),
    ("a host of another architecture", re.compile(r"x86_64|little-endian hosts")),
    # test_durable: owner changes need root (its read-only folder case runs as another user when root).
    ("not root", re.compile(r"^(Skipped: )?changing a file's owner needs root$")),
)


def _under_ci():
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


def skip_allowed(reason):
    """The allow-list entry a skip reason matches, or None."""
    for why, pattern in CI_SKIP_ALLOWED:
        if pattern.search(reason):
            return why
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not (_under_ci() and report.skipped and not hasattr(report, "wasxfail")):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if skip_allowed(reason) is None:
        report.outcome = "failed"
        report.longrepr = "skipped under CI, and %r is not on the allow-list (tests/conftest.py CI_SKIP_ALLOWED)" % reason
