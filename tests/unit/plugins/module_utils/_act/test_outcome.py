# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for a repair's report: inventory, file state, the diff, the hash check of the wheels a repair wrote."""

from __future__ import annotations

import dataclasses
import os

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.outcome import diff_side, file_state, inventory, recheck_touched
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.distributions import read_distributions
from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import make_dist
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils import observations as O


def test_inventory_is_name_to_version_sorted():
    inv = inventory(O.contaminated())
    assert list(inv) == sorted(inv)
    assert inv == {
        "filelock": "3.20.0", "nvidia-cublas": "13.1.1.3", "nvidia-cublas-cu12": "12.8.4.1",
        "nvidia-cuda-runtime-cu12": "12.8.90", "nvidia-cudnn-cu12": "9.10.2.21", "nvidia-cudnn-cu13": "9.24.0.43",
        "nvidia-cusparselt-cu12": "0.7.1", "nvidia-cusparselt-cu13": "0.8.1", "nvidia-nccl-cu12": "2.27.5",
        "nvidia-nccl-cu13": "2.30.7", "nvidia-nvshmem-cu12": "3.3.20", "nvidia-nvshmem-cu13": "3.4.5", "torch": "2.9.1"}


def test_file_state_of_the_gutted_venv():
    assert file_state(O.gutted()) == {
        "damaged": {"nvidia-cudnn-cu12": {"missing": 2, "modified": 0},
                    "nvidia-cusparselt-cu12": {"missing": 2, "modified": 0},
                    "nvidia-nccl-cu12": {"missing": 2, "modified": 0},
                    "nvidia-nvshmem-cu12": {"missing": 3, "modified": 0}},
        "conflicts": ["nvidia/__init__.py"]}


def test_file_state_of_the_contaminated_venv():
    state = file_state(O.contaminated(modified={"nvidia-nccl-cu12": ["nvidia/nccl/lib/libnccl.so.2"]}))
    assert state["damaged"] == {"nvidia-nccl-cu12": {"missing": 0, "modified": 1}}
    assert state["conflicts"] == [
        "nvidia/__init__.py", "nvidia/cudnn/include/cudnn.h", "nvidia/cudnn/lib/libcudnn.so.9",
        "nvidia/cusparselt/include/cusparselt.h", "nvidia/cusparselt/lib/libcusparseLt.so.0",
        "nvidia/nccl/include/nccl.h", "nvidia/nccl/lib/libnccl.so.2", "nvidia/nvshmem/include/nvshmem.h",
        "nvidia/nvshmem/lib/libnvshmem_host.so.3"]


def test_file_state_of_a_healthy_venv_lists_only_the_harmless_shared_init():
    assert file_state(O.healthy()) == {"damaged": {}, "conflicts": ["nvidia/__init__.py"]}


def test_diff_side():
    text = diff_side({"torch": "2.9.1", "nvidia-nccl-cu12": "2.27.5"},
                     {"damaged": {"nvidia-nccl-cu12": {"missing": 2, "modified": 0}}, "conflicts": ["nvidia/nccl/lib/libnccl.so.2"]})
    assert text == ("nvidia-nccl-cu12==2.27.5\ntorch==2.9.1\n# nvidia-nccl-cu12: 2 missing, 0 modified\n"
                    "# conflict: nvidia/nccl/lib/libnccl.so.2\n")


def test_only_the_touched_wheels_are_hashed_against_their_record(tmp_path):
    site = tmp_path / "lib" / "python3.12" / "site-packages"
    make_dist(str(site), "good", "1", files={"good/__init__.py": b"x = 1\n"})
    make_dist(str(site), "bad", "1", files={"bad/__init__.py": b"y = 1\n", "bad/core.py": b"z = 1\n"})
    make_dist(str(site), "untouched", "1", files={"untouched.py": b"u = 1\n"})
    (site / "bad" / "__init__.py").write_bytes(b"y = 2\n")  # same size, other bytes
    os.unlink(str(site / "bad" / "core.py"))
    os.unlink(str(site / "untouched.py"))
    healthy = O.healthy()
    obs = dataclasses.replace(healthy, distributions=read_distributions([str(site)]),
                              layout=dataclasses.replace(healthy.layout, root=str(tmp_path)))
    assert recheck_touched(obs, {"good", "bad", "gone"}) == {"bad": "1 missing, 1 modified", "good": "ok"}


def test_the_digests_the_last_reading_took_are_reused_not_taken_again(tmp_path):
    """The plan's last test hashed what the repair installed (hash_distributions): a digest the observation holds
    decides; a file it did not hash is hashed now."""
    site = tmp_path / "lib" / "python3.12" / "site-packages"
    make_dist(str(site), "good", "1", files={"good/__init__.py": b"x = 1\n"})
    make_dist(str(site), "other", "1", files={"other/__init__.py": b"o = 1\n"})
    healthy = O.healthy()
    planted = {(str(site / "good" / "__init__.py"), "sha256"): "planted"}
    obs = dataclasses.replace(healthy, distributions=read_distributions([str(site)]), digests=planted,
                              layout=dataclasses.replace(healthy.layout, root=str(tmp_path)))
    assert recheck_touched(obs, {"good", "other"}) == {"good": "0 missing, 1 modified", "other": "ok"}
    assert obs.digests == planted  # the observation's own digests are not added to
