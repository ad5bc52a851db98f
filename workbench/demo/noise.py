"""A scripted "LLM" answering Ragas NoiseSensitivity's prompts deterministically: a statement
(one sentence) is supported when one context sentence holds :data:`COVERAGE` of its content
words, all its numbers and the same negations (``workbench fake-llm --responder
workbench.demo.noise:respond``)."""

from __future__ import annotations

import json
import re
from typing import Any

from ..testing import ChatRequest, FakeLLM, Reply

DEMO_NOISE_URL_ENV = "WORKBENCH_DEMO_NOISE_URL"
"""The variable ``noise-judge@1`` reads its base URL from (``endpoint.base_url_env``)."""
COVERAGE = 0.75
"""Share of a statement's content words one context sentence must contain to support it."""

_INPUT = "\ninput: "
_OUTPUT = "\nOutput:"
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_TOKEN = re.compile(r"\$?[a-z0-9]+(?:[.,:][0-9]+)*")
_NEGATIONS = frozenset(
    {"not", "no", "never", "cannot", "none", "nothing", "without", "non", "nonrefundable"}
)
_STOP_WORDS = (
    "a an the is are was were be been being am do does did can could may might must shall "
    "should will would to of for in on at by with from as into onto about after before over "
    "under than then and or but if so it its it's this that these those there their they "
    "them you your yours we our us i me my he she his her also just only any all each every "
    "some such what which who whom when where how why please"
)
"""Words a statement's content leaves out: articles, auxiliaries, pronouns, connectives."""
_STOP = frozenset(_STOP_WORDS.split())


def parse_prompt(prompt: str) -> tuple[str, dict[str, Any]]:
    """``("statements", {"question", "answer"})`` or ``("verdicts", {"context", "statements"})``
    from a NoiseSensitivity prompt; ``ValueError`` for anything else."""
    start = prompt.rfind(_INPUT)
    if start < 0:
        raise ValueError("no 'input:' block: not a NoiseSensitivity prompt")
    end = prompt.rfind(_OUTPUT)
    block = prompt[start + len(_INPUT) : end if end > start else None]
    data = json.loads(block)
    if isinstance(data, dict) and {"question", "answer"} <= data.keys():
        return "statements", data
    if isinstance(data, dict) and {"context", "statements"} <= data.keys():
        return "verdicts", data
    raise ValueError(
        f"unexpected input keys {sorted(data) if isinstance(data, dict) else type(data).__name__}"
    )


def split_statements(text: str) -> list[str]:
    """One statement per sentence."""
    return [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]


def _stem(word: str) -> str:
    word = word.strip("$")
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and not word.endswith("ss") and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower().replace("’", "'"))


def _content(text: str) -> tuple[set[str], set[str], set[str]]:
    """(content stems, numbers, negations) of a text."""
    words = _tokens(text)
    negations = {w for w in words if w in _NEGATIONS or w.endswith("n't")}
    numbers = {w.strip("$") for w in words if w.strip("$")[:1].isdigit()}
    content = {
        _stem(w)
        for w in words
        if w not in _STOP and w not in _NEGATIONS and (len(w) > 1 or w.isdigit())
    }
    return content, numbers, negations


def supports(context: str, statement: str) -> tuple[bool, str]:
    """Whether one sentence of ``context`` supports ``statement``, and why."""
    want, numbers, negations = _content(statement)
    if not want:
        return False, "the statement has no content words"
    best: tuple[float, str] = (-1.0, "")
    for sentence in split_statements(context) or [context]:
        have, have_numbers, have_negations = _content(sentence)
        coverage = len(want & have) / len(want)
        if coverage < COVERAGE:
            why = f"at most {coverage:.0%} of its content words appear in one context sentence"
        elif not numbers <= have_numbers:
            why = f"the context does not state {', '.join(sorted(numbers - have_numbers))}"
        elif negations != have_negations:
            why = "the context states the opposite polarity"
        else:
            return True, (
                f"{coverage:.0%} of its content words, every number and the same polarity appear"
                f" in: {sentence[:120]!r}"
            )
        best = max(best, (coverage, why))
    return False, best[1] or "no context sentence matches"


def answer(kind: str, data: dict[str, Any]) -> dict[str, Any]:
    """The structured answer to one parsed NoiseSensitivity prompt."""
    if kind == "statements":
        return {"statements": split_statements(str(data["answer"]))}
    out = []
    for statement in data["statements"]:
        ok, reason = supports(str(data["context"]), str(statement))
        out.append({"statement": statement, "reason": reason, "verdict": int(ok)})
    return {"statements": out}


def respond(request: ChatRequest) -> Reply:
    """The demo model's reply to one chat request (bare JSON content, as Ragas parses it)."""
    try:
        kind, data = parse_prompt(request.prompt)
    except ValueError as exc:
        return Reply(content=json.dumps({"error": f"not a NoiseSensitivity prompt: {exc}"}))
    return Reply(content=json.dumps(answer(kind, data)))


def serve(
    *, port: int = 0, latency_s: float = 0.0, env: str | None = DEMO_NOISE_URL_ENV
) -> FakeLLM:
    """Start the scripted model (see :func:`~workbench.demo.serve_scripted`); ``noise-judge@1``
    reads ``$env``."""
    from ._serve import serve_scripted

    return serve_scripted(
        respond, env=env, port=port, latency_s=latency_s, what="the demo noise model"
    )


def main(argv: list[str] | None = None) -> int:
    """``python -m workbench.demo.noise build [--out data/noise]``."""
    import argparse

    from ._noise_data import DEFAULT_OUT, write_demo

    parser = argparse.ArgumentParser(
        prog="python -m workbench.demo.noise",
        description="Regenerate the demo noise data (data/noise).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="write the suites, companions, panel and release log")
    build.add_argument(
        "--out", default=str(DEFAULT_OUT), help=f"output directory (default {DEFAULT_OUT})"
    )
    args = parser.parse_args(argv)
    for path in write_demo(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
