"""Test and demo helpers: a real local OpenAI-compatible server with scripted answers.

:class:`FakeLLM` lets you run an LLM judge (the ``openai`` client, instructor, Ragas) with
no API key and no network. See :mod:`workbench.testing._server` for the decision order.
"""

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
