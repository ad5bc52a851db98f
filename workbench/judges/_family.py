"""Self-preference: a judge may favour responses written by its own model or a model of the same
family. :func:`model_family` is the small normaliser that decides "same family"; the generator
of a gold case's response is its ``metadata.generator`` (docs/formats.md)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

GENERATOR_KEY = "generator"
"""The gold case ``metadata`` key naming the model (or system) that generated the response."""

_SUFFIX = re.compile(
    r"[-_:.](?:\d{4}-\d{2}-\d{2}|\d{8}|\d{4}|\d+(?:\.\d+)?[bmk]|\d+x\d+b|a\d+(?:\.\d+)?b"
    r"|v\d+(?:\.\d+)*|rc\d*|alpha\d*|beta\d*|latest|preview|instruct|chat|it|hf|turbo|mini|nano|small|medium|large"
    r"|fp16|bf16|int[48]|q\d\w*|gguf|awq|gptq)$"
)
"""One trailing size, date, release or tuning suffix."""


def model_family(name: str) -> str:
    """The family of a model name: lower case, the provider prefix stripped (``openai/``,
    ``Qwen/``), then every trailing size, date, release or tuning suffix (``-7b``, ``-mini``,
    ``-instruct``, ``-2024-07-18``, ``:8b``, ``-v3.1`` ...). ``openai/gpt-4o-mini`` and
    ``gpt-4o`` are both ``gpt-4o``; ``Qwen/Qwen2.5-7B-Instruct`` and ``qwen2.5-72b`` both
    ``qwen2.5``."""
    family = name.strip().lower().rsplit("/", 1)[-1]
    while (cut := _SUFFIX.sub("", family)) != family and cut:
        family = cut
    return family


def self_preference(judge_model: str | None, cases: Iterable[Any]) -> str | None:
    """A warning when ``judge_model`` is, or shares a family with, the model that generated some
    of ``cases``' responses (``metadata.generator``); None otherwise."""
    if not judge_model:
        return None
    family = model_family(judge_model)
    shared: Counter[str] = Counter()
    total = 0
    for case in cases:
        total += 1
        generator = case.metadata.get(GENERATOR_KEY)
        if isinstance(generator, str) and generator.strip() and model_family(generator) == family:
            shared[generator] += 1
    if not shared:
        return None
    named = ", ".join(f"{g} ({n})" for g, n in shared.most_common())
    return (
        f"self-preference: the judge model {judge_model} is of the family {family!r}, like the"
        f" model that generated {sum(shared.values())} of the {total} responses judged"
        f" (metadata.generator: {named}); a judge may favour its own family's answers: review"
        " these verdicts, or judge with a model of another family"
    )
