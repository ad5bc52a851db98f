"""Secrets never reach a record: redaction of provider text, and detection of secrets in specs.

:func:`redact` is applied to everything the run engine records from a provider: evaluator-
error messages, judge reasons, the run summary's stop detail and warnings. It replaces

- the exact values of known secrets (the API key read from ``endpoint.api_key_env``);
- the value of ``Authorization`` / ``Proxy-Authorization`` / ``api-key`` / ``x-api-key``
  headers or fields, however they are quoted;
- ``Bearer`` and ``Basic`` credentials;
- ``sk-...``-shaped tokens (OpenAI-style keys, masked or not);
- URL user information (``scheme://user:password@host``) and key-like URL query parameters

with :data:`REDACTED`. :func:`find_secrets` finds the same shapes, plus credential-named
fields, in a candidate spec, which is then refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, urlsplit

REDACTED = "[REDACTED]"

_HEADER_NAMES = (
    r"(?:proxy-)?authorization|x-api-key|api[-_]?key|x-goog-api-key|openai[-_]api[-_]key"
)
# `Authorization: Bearer abc`, `"authorization": "Bearer abc"`, `api-key=abc` ...
_HEADER_VALUE = re.compile(rf"""(?ix)
    (?P<name>\b(?:{_HEADER_NAMES})\b["']?\s*[:=]\s*["']?)
    (?:(?P<scheme>bearer|basic|token)\s+)?
    (?P<value>[^\s"',;}}\]]+)
    """)
_TOKEN = r"(?=[A-Za-z0-9._~+/=\-*]*[0-9_~+/=\-*])[A-Za-z0-9._~+/=\-*]{8,}"
"""A credential-like token: 8+ token characters, one of them a digit or one of ``_~+/=-*`` (not a
word)."""
_SCHEME_TOKEN = re.compile(rf"\b(?P<scheme>[Bb]earer|BEARER|Basic|BASIC)\s+(?P<value>{_TOKEN})")
_SK_TOKEN = re.compile(r"\bsk-[A-Za-z0-9_\-*.]{4,}")
_URL_USERINFO = re.compile(r"(?i)\b(?P<scheme>[a-z][a-z0-9+.\-]*://)[^/\s@]+@")
_URL_QUERY_KEY = re.compile(
    r"(?i)(?P<name>[?&](?:api[-_]?key|key|token|access[-_]token|auth|password|secret)=)(?P<value>[^&#\s\"']+)"
)

_MIN_SECRET_LENGTH = 4
"""Known secret values shorter than this are not searched for (they would match ordinary words)."""


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every secret replaced by :data:`REDACTED` (see the module docstring)."""
    if not text:
        return text
    for secret in sorted(
        {s for s in secrets if s and len(s) >= _MIN_SECRET_LENGTH}, key=len, reverse=True
    ):
        text = text.replace(secret, REDACTED)
    text = _HEADER_VALUE.sub(
        lambda m: (
            m.group("name") + (m.group("scheme") + " " if m.group("scheme") else "") + REDACTED
        ),
        text,
    )
    text = _SCHEME_TOKEN.sub(
        lambda m: f"{m.group('scheme')} {REDACTED}" if m.group("value") != REDACTED else m.group(0),
        text,
    )
    text = _SK_TOKEN.sub(REDACTED, text)
    text = _URL_USERINFO.sub(lambda m: m.group("scheme") + REDACTED + "@", text)
    return _URL_QUERY_KEY.sub(lambda m: m.group("name") + REDACTED, text)


def redact_values(obj: Any, secrets: Iterable[str | None]) -> Any:
    """``obj`` (JSON-like) with the exact values of ``secrets`` replaced in every string.

    Only known values: used on recorded requests, whose text comes from the gold data and must
    otherwise stay exactly as sent.
    """
    values = sorted(
        {s for s in secrets if s and len(s) >= _MIN_SECRET_LENGTH}, key=len, reverse=True
    )
    if not values:
        return obj

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            for secret in values:
                value = value.replace(secret, REDACTED)
            return value
        if isinstance(value, dict):
            return {walk(k) if isinstance(k, str) else k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return walk(obj)


def public_url(url: str | None) -> str | None:
    """A URL safe to print: user information and key-like query parameters redacted."""
    return None if url is None else redact(url)


# -- secrets in specs ----------------------------------------------------------------------

_SECRET_FIELD = re.compile(
    r"(?i)^(?:(?:proxy-)?authorization|x-api-key|api-?key|apikey|x-goog-api-key|openai-api-key|api-?token|access-?token|auth-?token|"
    r"refresh-?token|id-?token|bearer|password|passwd|pwd|secret|client-?secret|private-?key|cookie|set-cookie|session-?token)$"
)
"""Field names that never hold anything but a credential (``_`` counts as ``-``)."""
_KEYISH_FIELD = re.compile(r"(?i)(?:key|token|secret|credential|passw)")
_KEY_SHAPED = re.compile(r"^(?:sk-[A-Za-z0-9_\-]{8,}|[A-Za-z0-9_\-+/=.]{32,})$")
_CREDENTIAL_IN_TEXT = [
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"), "an sk-... API key"),
    (_SCHEME_TOKEN, "a Bearer or Basic credential"),
]


def _url_problem(value: str) -> str | None:
    if "://" not in value:
        return None
    try:
        parts = urlsplit(value.strip())
    except ValueError:
        return None
    if parts.username or parts.password:
        return "a URL with user information (user:password@)"
    if any(
        _KEYISH_FIELD.search(name) or name.lower() in ("auth", "sig", "signature")
        for name, _ in parse_qsl(parts.query)
    ):
        return "a URL with a credential-like query parameter"
    return None


def find_secrets(obj: Any, path: str = "") -> list[tuple[str, str]]:
    """``(field, what)`` for every secret-looking value in a spec-like mapping.

    Refused: a non-empty value under a credential-only name (``Authorization``, ``api-key``,
    ``password`` ...); a key-shaped value under a key/token/secret-like name; anywhere, an
    ``sk-...`` key, a ``Bearer``/``Basic`` credential, or a URL with user information or a
    credential-like query parameter.
    """
    found: list[tuple[str, str]] = []
    _walk(obj, path, path.rsplit(".", 1)[-1], found)
    return found


def _walk(value: Any, where: str, name: str, found: list[tuple[str, str]]) -> None:
    """Every leaf of mappings and lists, with its dotted path and the name it is under."""
    if isinstance(value, dict):
        for k, v in value.items():
            key = str(k)
            _walk(v, f"{where}.{key}" if where else key, key, found)
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _walk(v, f"{where}[{i}]", name, found)
    else:
        what = _secret_in(value, name)
        if what is not None:
            found.append((where, what))


def _secret_in(value: Any, name: str) -> str | None:
    """What makes one value under ``name`` look like a secret, or None."""
    normalized = name.replace("_", "-")
    if _SECRET_FIELD.match(normalized) and value not in (None, "", False):
        return f"a value under the credential field name {name!r}"
    if not isinstance(value, str):
        return None
    if (
        _KEYISH_FIELD.search(name)
        and not normalized.endswith("-env")
        and _KEY_SHAPED.match(value.strip())
    ):
        return "a key-shaped value"
    url = _url_problem(value)
    if url is not None:
        return url
    return next((what for pattern, what in _CREDENTIAL_IN_TEXT if pattern.search(value)), None)
