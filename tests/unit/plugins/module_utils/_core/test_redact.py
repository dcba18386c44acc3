# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for redact: URL userinfo and exact secrets never survive."""

from __future__ import annotations

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.redact import MASK, redact, redact_argv, redact_result
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import CommandResult


@pytest.mark.parametrize(
    "text, expected",
    [
        ("https://user:token@host/simple", "https://***@host/simple"),
        ("https://token@host/simple/", "https://***@host/simple/"),
        ("--index-url=http://u:p@127.0.0.1:9/simple", "--index-url=http://***@127.0.0.1:9/simple"),
        # pip's own masking keeps the user name: that goes too.
        ("Looking in indexes: http://user:****@127.0.0.1:9/simple", "Looking in indexes: http://***@127.0.0.1:9/simple"),
        # An unencoded "@" in the password: everything up to the last "@" of the authority.
        ("https://user:p@ss@host/x", "https://***@host/x"),
        ("git+https://tok@github.com/o/r.git", "git+https://***@github.com/o/r.git"),
        ("a https://h1/x and https://u:p@h2/y", "a https://h1/x and https://***@h2/y"),
        # No userinfo: untouched, including a mail address after a URL path.
        ("https://host/simple mail a@b.c", "https://host/simple mail a@b.c"),
        ("", ""),
    ],
)
def test_redact_masks_url_userinfo(text, expected):
    assert redact(text) == expected


def test_redact_replaces_exact_secrets_longest_first():
    text = "token abc123XYZ and abc123 and prefix-abc123XYZ-suffix"
    assert redact(text, ["abc123", "abc123XYZ", ""]) == "token *** and *** and prefix-***-suffix"


def test_redact_secret_inside_url_then_userinfo():
    assert redact("ERROR: 401 for https://user:s3cr%40t@h/simple (s3cr@t)", ["s3cr%40t", "s3cr@t"]) == (
        "ERROR: 401 for https://***@h/simple (***)"
    )


def test_redact_argv_returns_tuple_of_strings():
    argv = ["pip", "--index-url", "http://u:secret@h/simple", "--", "name"]
    assert redact_argv(argv, ["secret"]) == ("pip", "--index-url", "http://***@h/simple", "--", "name")


def test_redact_result_covers_argv_stdout_stderr_and_keeps_the_rest():
    result = CommandResult(("x", "http://u:pw12@h/"), 3, "out pw12", "err http://u:pw12@h/", timed_out=True)
    assert redact_result(result, ["pw12"]) == CommandResult(("x", "http://***@h/"), 3, "out ***", "err http://***@h/", timed_out=True)


def test_mask_is_three_stars():
    assert MASK == "***"
