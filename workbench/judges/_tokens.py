"""Prompt token counts for cost reservations, offline.

With :mod:`tiktoken` and its BPE file already on disk (``$TIKTOKEN_CACHE_DIR``, or tiktoken's
default cache), the prompt is counted with the model's encoding (``o200k_base`` for a model
tiktoken does not know). tiktoken downloads missing BPE files; that download is never
attempted here (no network during a run): without the file, or without tiktoken, the stated
conservative rule counts instead:

    one token per 3 ASCII characters (English prose averages about 4), rounded up,
    plus one token per UTF-8 byte of every other character.

Either way :data:`STRUCTURED_OUTPUT_OVERHEAD` tokens are added for the structured-output
instructions and JSON schema that Ragas/instructor send beside the prompt, and message framing.
"""

from __future__ import annotations

import math
import threading
from typing import Any

STRUCTURED_OUTPUT_OVERHEAD = 400
"""Tokens added to every prompt estimate: instructor's JSON-schema system message (about 200
tokens for a label vocabulary) and per-message framing, with margin."""

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
        except (
            Exception
        ):  # no tiktoken, no cached BPE file, or an incompatible tiktoken: use the rule
            encoding = None
        _ENCODINGS[key] = encoding
        return encoding


def rule_tokens(text: str) -> int:
    """The conservative rule: ceil(ASCII characters / 3) + UTF-8 bytes of other characters."""
    ascii_chars = len(
        text.encode("ascii", "ignore")
    )  # one byte per ASCII character, others dropped
    other_bytes = len(text.encode("utf-8")) - ascii_chars
    return math.ceil(ascii_chars / 3) + other_bytes


def prompt_tokens(text: str, model: str | None) -> tuple[int, str]:
    """``(tokens, method)``: the prompt's token count plus the structured-output overhead.

    ``method`` is ``tiktoken:<encoding>`` or ``rule``.
    """
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
