# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for wheel_sources: the sources as given, and what a local wheelhouse and a loopback index offer."""

from __future__ import annotations

import time

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.wheel_sources import (
    SourceReading, WheelSources, WheelSourcesError, read_offers)
from ansible_collections.gpuops.cuda_venv.tests.support.local_servers import AuthIndex, MetadataIndex, SilentServer
from ansible_collections.gpuops.cuda_venv.tests.support.wheel_helpers import make_wheel

CUDNN = "nvidia-cudnn-cu13==9.24.0.43; platform_system == \"Linux\""


def test_wheel_sources_coerce_to_tuples():
    sources = WheelSources(find_links="/wh", extra_index_urls=["https://a/simple"])
    assert sources == WheelSources(find_links=("/wh",), extra_index_urls=("https://a/simple",))
    assert sources.indexes() == ("https://a/simple",)


def test_wheel_sources_refuse_no_index_with_an_index():
    with pytest.raises(WheelSourcesError, match="^wheel sources set no_index together with index_url or extra_index_urls: keep one of them$"):
        WheelSources(index_url="https://h/simple", no_index=True)


def test_wheel_sources_secrets():
    sources = WheelSources(
        find_links=("/wh", "https://linktoken1@h/links.html"),
        index_url="https://alice:p%40ss@mirror/simple",
        extra_index_urls=("https://e1/simple", "https://bob:tok2@e2/simple"),
    )
    assert sources.secrets() == ("alice:p%40ss", "alice:p@ss", "p%40ss", "p@ss", "bob:tok2", "tok2", "linktoken1")
    assert WheelSources(find_links=("/wh",), no_index=True).secrets() == ()


@pytest.fixture
def wheelhouse(tmp_path):
    """Two torch versions (2.9.1 for CUDA 12, 2.14.1 requiring the CUDA 13 cuDNN), one other project, a non-wheel."""
    folder = tmp_path / "wh"
    make_wheel(str(folder), "torch", "2.9.1", {"torch/__init__.py": b""}, requires=["nvidia-cudnn-cu12==9.10.2.21"],
               tag="cp312-cp312-manylinux_2_28_x86_64")
    make_wheel(str(folder), "torch", "2.14.1", {"torch/__init__.py": b""}, requires=[CUDNN, "filelock"],
               tag="cp312-cp312-manylinux_2_28_x86_64")
    make_wheel(str(folder), "nvidia-cudnn-cu13", "9.24.0.43", {"nvidia/cudnn/lib/libcudnn.so.9": b"x"})
    (folder / "notes.txt").write_text("not a wheel")
    return folder


EXPECTED = {("torch", "2.14.1", (CUDNN, "filelock")), ("torch", "2.9.1", ("nvidia-cudnn-cu12==9.10.2.21",))}


def test_a_local_folder_offers_each_version_and_its_requires_dist(wheelhouse):
    never = []
    reading = read_offers(WheelSources(find_links=(str(wheelhouse),), no_index=True), ["Torch"], opener=never.append)
    assert {(o.name, o.version, o.requires) for o in reading.offers} == EXPECTED
    assert {o.source for o in reading.offers} == {str(wheelhouse)} and reading.failures == () and never == []


def test_a_file_url_and_a_wheel_file_are_read_like_a_folder(wheelhouse):
    wheel = str(wheelhouse / "torch-2.14.1-cp312-cp312-manylinux_2_28_x86_64.whl")
    reading = read_offers(WheelSources(find_links=("file://" + str(wheelhouse), wheel)), ["torch"])
    assert {(o.version, o.source) for o in reading.offers} == {
        ("2.14.1", "file://" + str(wheelhouse)), ("2.14.1", wheel), ("2.9.1", "file://" + str(wheelhouse))}


def test_no_names_or_no_sources_read_nothing(wheelhouse):
    assert read_offers(WheelSources(find_links=(str(wheelhouse),)), []) == SourceReading()
    assert read_offers(WheelSources(), ["torch"]) == SourceReading()


def test_a_missing_folder_is_named_and_the_others_are_still_read(tmp_path, wheelhouse):
    reading = read_offers(WheelSources(find_links=(str(tmp_path / "gone"), str(wheelhouse))), ["torch"])
    assert len(reading.offers) == 2
    assert reading.failures == ((str(tmp_path / "gone"), "[Errno 2] No such file or directory: '%s'" % (tmp_path / "gone")),)


@pytest.mark.parametrize("json", [True, False], ids=["pep691-json", "pep503-html"])
def test_a_loopback_index_gives_metadata_without_a_wheel_download(wheelhouse, json):
    with MetadataIndex([wheelhouse], "alice", "tok3n", json=json) as index:
        url = "http://alice:tok3n@127.0.0.1:%d/simple" % index.port
        reading = read_offers(WheelSources(index_url=url), ["torch", "absent-project"])
    assert reading.failures == ()
    assert {(o.name, o.version, o.requires) for o in reading.offers} == EXPECTED
    assert {o.source for o in reading.offers} == {"index 127.0.0.1:%d" % index.port}  # no URL, no credentials
    assert reading.failures == ()
    assert all(authorized for _path, authorized in index.requests)
    assert sorted(path for path, _authorized in index.requests) == [
        "/files/torch-2.14.1-cp312-cp312-manylinux_2_28_x86_64.whl.metadata",
        "/files/torch-2.9.1-cp312-cp312-manylinux_2_28_x86_64.whl.metadata",
        "/simple/absent-project/",  # a 404: no offer, no failure
        "/simple/torch/"]


def test_an_index_without_separate_metadata_offers_versions_with_unknown_requirements(wheelhouse):
    with AuthIndex([wheelhouse]) as index:
        reading = read_offers(WheelSources(index_url="http://127.0.0.1:%d/simple" % index.port), ["torch"])
    assert sorted((o.version, o.requires) for o in reading.offers) == [("2.14.1", None), ("2.9.1", None)]
    assert [p for p, _a in index.requests] == ["/simple/torch/"]


def test_an_index_that_never_answers_is_named_within_the_timeout(wheelhouse):
    with SilentServer() as silent:
        port = silent.port
        url = "http://127.0.0.1:%d/simple" % port
        started = time.monotonic()
        reading = read_offers(WheelSources(find_links=(str(wheelhouse),), index_url=url), ["torch"], timeout=0.5)
        took = time.monotonic() - started
    assert took < 5 and len(reading.offers) == 2
    assert [(source, "timed out" in error) for source, error in reading.failures] == [
        ("index 127.0.0.1:%d" % port, True)], reading.failures


def test_a_wheel_that_is_no_zip_fails_its_source_only(tmp_path, wheelhouse):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "torch-2.10.0-py3-none-any.whl").write_bytes(b"not a zip")
    reading = read_offers(WheelSources(find_links=(str(broken), str(wheelhouse))), ["torch"])
    assert len(reading.offers) == 2
    assert reading.failures == ((str(broken), "%s: File is not a zip file" % (broken / "torch-2.10.0-py3-none-any.whl")),)
