"""Test and demo helpers: :class:`FakeLLM`, a real local OpenAI-compatible server with scripted
answers (no API key, no network)."""

from ._server import FAULTS, JSON_MODES, PROVIDERS, ChatRequest, FakeLLM, RecordedCall, Reply, Rule

__all__ = [
    "FAULTS",
    "JSON_MODES",
    "PROVIDERS",
    "ChatRequest",
    "FakeLLM",
    "RecordedCall",
    "Reply",
    "Rule",
]
