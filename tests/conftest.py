"""Make the repository importable as ansible_collections.gpuops.cuda_venv (and tests.standin) for pytest."""

import os
import re
import sys
import tempfile

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


MACHINE_TEMP_DIR = tempfile.gettempdir()  # read before the fixture below points tempfile elsewhere


@pytest.fixture
def machine_temp_dir():
    """The machine's own temporary folder (TMPDIR as the session started, usually /tmp), for a test whose folder
    another user must reach: pytest's folders are its owner's only. Such a test removes what it makes there."""
    return MACHINE_TEMP_DIR


@pytest.fixture(scope="session", autouse=True)
def temporary_files_in_pytests_folder(tmp_path_factory):
    """Every temporary file of the session goes in a folder of pytest's own (``tempfile`` here, ``TMPDIR`` for the
    processes the tests start), which pytest removes (it keeps the last three runs): a module, probe or installer a
    test kills on purpose, or an xdist worker that ends without running ``atexit``, leaves nothing in /tmp."""
    folder = str(tmp_path_factory.mktemp("tmp"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TMPDIR", folder)
        patch.setattr(tempfile, "tempdir", folder)
        yield folder


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
