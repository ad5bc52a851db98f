"""Secrets never reach a record: redaction of provider text (:func:`redact`), and detection of
secrets in specs (:func:`find_secrets`)."""

from __future__ import annotations

import base64
import functools
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

REDACTED = "[REDACTED]"

_HEADER_NAMES = (
    r"(?:proxy-)?authorization|x-api-key|api[-_]?key|x-goog-api-key|openai[-_]api[-_]key"
)
# `Authorization: Bearer abc`, `"authorization": "Bearer abc"`, `api-key=abc` ...
_HEADER_VALUE = re.compile(rf"""(?ix)
    (?P<name>\b(?:{_HEADER_NAMES})\b["']?\s*[:=]\s*["']?)
    (?!(?:(?:bearer|basic|token)\s+)?\[REDACTED\])  # already redacted: a second pass keeps it
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


_JSON_ESCAPE = re.compile(r'\\(?:u([0-9a-fA-F]{4})|(["\\/bfnrt]))')
_JSON_CHARS = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every secret replaced by :data:`REDACTED` (see the module docstring). Text
    holding JSON string escapes (a provider's raw answer, an error body) is also read with them
    decoded: when that view holds anything to redact (a key split by ``\\u200b`` or ``\\n``
    escapes the patterns would not see), the decoded text is returned, redacted; otherwise the
    text keeps its escapes."""
    if not text:
        return text
    if "\\" in text:
        view = _JSON_ESCAPE.sub(
            lambda m: (
                chr(int(m.group(1), 16)) if m.group(1) else _JSON_CHARS.get(m.group(2), m.group(2))
            ),
            text,
        )
        hidden = _redact_plain(view, secrets)
        if hidden != view:
            return hidden
    return _redact_plain(text, secrets)


def _redact_plain(text: str, secrets: Iterable[str | None]) -> str:
    for secret in sorted(
        {s for s in secrets if s and len(s) >= _MIN_SECRET_LENGTH}, key=len, reverse=True
    ):
        text = text.replace(secret, REDACTED)
        if len(secret) >= ENCODED_MIN_LENGTH:
            text = _encoded_pattern(secret).sub(REDACTED, text)
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
    """``obj`` (JSON-like) with the exact values of ``secrets`` replaced in every string (nothing
    else: recorded requests must stay exactly as sent)."""
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


# -- encoded forms of a known secret ---------------------------------------------------------

ENCODED_MIN_LENGTH = 12
"""Known secrets at least this long are also searched for in their encoded forms (shorter
ones only literally: their encodings would match ordinary text)."""

_FORMAT_CHARACTERS = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    "\U000e0020-\U000e007f"
)
"""Every Unicode format character (category ``Cf``) as a regex class body (a test keeps it equal
to :mod:`unicodedata`)."""
_SEPARATOR = rf"(?:[\s{_FORMAT_CHARACTERS}]|%(?:20|0[9aAdD])|%[eE]2%80%[89][bBcCdDeEfF])"
"""What may split a secret: whitespace and format characters, also URL-encoded."""
_HEX_SEPARATOR = rf"(?:{_SEPARATOR}|[:.,\-]|\\x|0x)"
"""What may also stand between the digits of a hex dump (``73:6b``, ``\\x73\\x6b``)."""
_BASE64_TWINS = {"+": "-", "/": "_"}
"""The URL-safe alphabet's characters for the standard one's."""


def encoded_forms(secret: str) -> Iterator[tuple[str, str]]:
    """``(form, text)``: the forms of ``secret`` searched for, each as written when embedded in a
    longer encoded text (base64 at each of the three alignments)."""
    data = secret.encode()
    yield "literal", secret
    yield "reversed", secret[::-1]
    yield "hex", data.hex()
    for offset in range(3):
        full, first = (offset + len(data)) // 3, 1 if offset else 0
        core = base64.b64encode(bytes(offset) + data)[first * 4 : full * 4].decode()
        if len(core) >= ENCODED_MIN_LENGTH:
            yield "base64", core


def _char_pattern(char: str, form: str) -> str:
    """One character of a form: itself (in either case, or base64 twin), or URL-encoded."""
    same = {char}
    if form != "base64":
        same |= {char.lower(), char.upper()}
    if form == "base64" and char in _BASE64_TWINS:
        same.add(_BASE64_TWINS[char])
    alternatives = [re.escape(c) for c in sorted(same)]
    if char.isascii():
        code = f"{ord(char):02x}"
        alternatives.append("%" + "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in code))
    return "(?:" + "|".join(alternatives) + ")"


@functools.lru_cache(maxsize=64)
def _encoded_pattern(secret: str) -> re.Pattern[str]:
    """Every encoded form of ``secret``, separators allowed, each a named group."""
    branches = []
    for i, (form, text) in enumerate(encoded_forms(secret)):
        separator = _HEX_SEPARATOR if form == "hex" else _SEPARATOR
        body = f"{separator}*".join(_char_pattern(c, form) for c in text)
        branches.append(f"(?P<{form}_{i}>{body})")
    return re.compile("|".join(branches))


_FORMAT_RUN = re.compile(f"[{_FORMAT_CHARACTERS}]+")
_HEX_NOISE = re.compile(r"[:.,+]|\\x|0x")


class Searchable:
    """A text prepared once (URL escapes decoded, whitespace and format characters removed, case
    folded, URL-safe base64 read as standard) for plain substring searches of many secrets."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.canonical = _canonical(text)
        self._hex: str | None = None

    def forms(self, secret: str) -> list[str]:
        """The forms of ``secret`` (:func:`encoded_forms`) this text holds, each once; only the
        literal value for secrets shorter than :data:`ENCODED_MIN_LENGTH`."""
        if len(secret) < ENCODED_MIN_LENGTH:
            return ["literal"] if len(secret) >= _MIN_SECRET_LENGTH and secret in self.text else []
        found: list[str] = []
        for form, text in encoded_forms(secret):
            if form in found:
                continue
            if form == "hex":
                if self._hex is None:
                    self._hex = _HEX_NOISE.sub("", self.canonical)
                hit = _canonical(text) in self._hex
            else:
                hit = _canonical(text) in self.canonical
            if hit:
                found.append(form)
        return found


def _canonical(text: str) -> str:
    from urllib.parse import unquote

    text = unquote(text, errors="replace") if "%" in text else text
    text = "".join(text.split())  # whitespace
    if not text.isascii():  # (a flag: free) format characters
        text = _FORMAT_RUN.sub("", text)
    return text.casefold().replace("-", "+").replace("_", "/")


def find_encoded(text: str, secret: str) -> list[str]:
    """The forms of ``secret`` found in ``text`` (see :class:`Searchable`)."""
    return Searchable(text).forms(secret)


_CREDENTIAL_VARIABLE = re.compile(r"(?i)key|token|secret|credential|passw")
"""Environment variables whose value is taken for a credential (with :data:`_KEYISH_FIELD`'s
words)."""


def environment_secrets(names: Iterable[str | None] = ()) -> dict[str, str]:
    """``{variable: value}``: the variables ``names`` and every credential-named environment
    variable whose value could be a credential (long enough, no whitespace, not a path)."""
    import os

    wanted = {n for n in names if n}
    found: dict[str, str] = {}
    for name, value in os.environ.items():
        named = name in wanted and len(value) >= _MIN_SECRET_LENGTH
        if named or _credential_like(name, value):
            found[name] = value
    return found


def _credential_like(name: str, value: str) -> bool:
    """A credential-named variable whose value could be a credential."""
    return bool(
        _CREDENTIAL_VARIABLE.search(name)
        and len(value) >= ENCODED_MIN_LENGTH
        and not any(c.isspace() for c in value)
        and not value.startswith(("/", "~", "."))
        and "://" not in value
    )


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _readable_text(path: Path) -> str:
    """A file's text as a reader sees it (JSON strings decoded, HTML entities resolved)."""
    import json
    from html import unescape  # reading only: entities resolved, nothing escaped

    text = path.read_bytes().decode("utf-8", errors="replace")
    suffix = path.suffix.lower()
    if suffix in (".json", ".ipynb"):
        try:
            return "\n".join(_strings(json.loads(text)))
        except ValueError:
            return text
    if suffix == ".jsonl":
        parts: list[str] = []
        for line in text.splitlines():
            try:
                parts.extend(_strings(json.loads(line)))
            except ValueError:
                parts.append(line)  # a line that is not JSON is searched as it is
        return "\n".join(parts)
    if suffix in (".html", ".htm", ".svg", ".xml"):
        return unescape(text)
    return text


def secrets_in_files(root: Path, secrets: dict[str, str]) -> list[tuple[str, str, list[str]]]:
    """``(file relative to root, variable, forms)`` for every file under ``root`` holding a
    secret (``{variable: value}``) in any form :func:`find_encoded` knows, never the value."""
    found: list[tuple[str, str, list[str]]] = []
    if not secrets:
        return found
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        text = Searchable(_readable_text(path))
        for name, value in sorted(secrets.items()):
            forms = text.forms(value)
            if forms:
                found.append((path.relative_to(root).as_posix(), name, forms))
    return found


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
    """``(field, what)`` for every secret-looking value in a spec-like mapping: a value under a
    credential-only name, a key-shaped value under a key-like name, an ``sk-...`` key, a
    ``Bearer``/``Basic`` credential, or a URL with credentials."""
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
