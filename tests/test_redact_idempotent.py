"""Redaction is idempotent: a text redacted twice (the LLM judge redacts a verdict's reason and
raw answer, and the engine redacts the record again) is the text redacted once, so evidence never
gains characters such as a stray ``]`` from a second pass."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench._redact import REDACTED, redact

SECRET = "sk-test-0123456789abcdefXYZ"

CASES = [
    "authorization: abc123",
    "Authorization: Bearer abc123",
    "Proxy-Authorization: Basic dXNlcjpwYXNz",
    '{"authorization": "Bearer abc123", "x-api-key": "k3y-val"}',
    "api_key=abc123; other=1",
    "openai_api_key: 'quoted-value-1'",
    "x-goog-api-key:abc,next",
    "see https://user:pw@example.test/path?key=abc123&x=1",
    "token Bearer abcdefgh12345678 trailing",
    f"the key {SECRET} leaked",
]


@pytest.mark.parametrize("text", CASES)
def test_a_second_redaction_changes_nothing(text: str) -> None:
    once = redact(text, [SECRET])
    assert once != text, "each case holds something to redact"
    assert redact(once, [SECRET]) == once


def test_a_header_value_redacted_twice_keeps_one_marker() -> None:
    # the bug: the value pattern stopped at the marker's `]`, so a second pass wrote
    # `[REDACTED]]`
    assert redact(redact("authorization: abc123")) == f"authorization: {REDACTED}"
    assert redact(f'"api-key": "{REDACTED}"') == f'"api-key": "{REDACTED}"'
    assert redact(f"Authorization: Bearer {REDACTED}") == f"Authorization: Bearer {REDACTED}"


_FRAGMENTS = st.sampled_from(
    [
        "authorization",
        "Authorization",
        "api_key",
        "x-api-key",
        ":",
        "=",
        " ",
        '"',
        "'",
        ",",
        ";",
        "]",
        "[",
        "}",
        "Bearer ",
        "basic ",
        "token ",
        "abc123",
        "sk-abcd1234",
        REDACTED,
        "https://",
        "u:p@",
        "host/x",
        "?key=",
        "&token=",
        "\\n",
        "\\u0041",
        SECRET,
        "plain words",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_FRAGMENTS, min_size=1, max_size=12).map("".join))
def test_redaction_is_idempotent_on_any_mix_of_its_patterns(text: str) -> None:
    once = redact(text, [SECRET])
    assert redact(once, [SECRET]) == once
