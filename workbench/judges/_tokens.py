"""Prompt token counts for cost reservations, offline: tiktoken with the model's encoding when its
BPE file is on disk (never downloaded), else :func:`rule_tokens`; plus
:data:`STRUCTURED_OUTPUT_OVERHEAD`.
"""

from __future__ import annotations

import math
import threading
from typing import Any

STRUCTURED_OUTPUT_OVERHEAD = 400  # instructor's JSON-schema message and framing, with margin

_LOCK = threading.Lock()
_ENCODINGS: dict[str, Any] = {}


def _offline_encoding(model: str | None) -> Any | None:
    """The tiktoken encoding for ``model`` if it loads without the network, else None (memoized)."""
    key = model or ""
    with _LOCK:
        if key in _ENCODINGS:
            return _ENCODINGS[key]
        encoding = None
        try:
            import tiktoken
            import tiktoken.load as tk_load

            try:
                name = tiktoken.encoding_name_for_model(model) if model else "o200k_base"
            except KeyError:
                name = "o200k_base"
            original = tk_load.read_file

            def no_download(blobpath: str) -> bytes:
                if "://" in blobpath:
                    raise OSError(f"not downloading {blobpath}: token counts must work offline")
                return original(blobpath)

            tk_load.read_file = no_download
            try:
                encoding = tiktoken.get_encoding(name)
            finally:
                tk_load.read_file = original
        except Exception:  # no tiktoken or no cached BPE file: the rule
            encoding = None
        _ENCODINGS[key] = encoding
        return encoding


def rule_tokens(text: str) -> int:
    """The conservative rule: ceil(ASCII characters / 3) + UTF-8 bytes of other characters."""
    ascii_chars = len(text.encode("ascii", "ignore"))
    other_bytes = len(text.encode("utf-8")) - ascii_chars
    return math.ceil(ascii_chars / 3) + other_bytes


def prompt_tokens(text: str, model: str | None) -> tuple[int, str]:
    """``(tokens, method)``: the prompt's count plus the overhead (``tiktoken:<enc>``/``rule``)."""
    encoding = _offline_encoding(model)
    if encoding is not None:
        try:
            return (
                len(encoding.encode(text, disallowed_special=())) + STRUCTURED_OUTPUT_OVERHEAD,
                f"tiktoken:{encoding.name}",
            )
        except Exception:  # pragma: no cover - a broken encoding falls back to the rule
            pass
    return rule_tokens(text) + STRUCTURED_OUTPUT_OVERHEAD, "rule"
