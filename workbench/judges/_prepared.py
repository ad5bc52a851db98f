"""One Ragas LLM-metric request, built once per candidate and reused for every call.

A Ragas ``SimpleLLMMetric`` (``DiscreteMetric``, ``RankingMetric``) scored through
``llm_factory`` does, on every call, work that does not depend on the case: instructor wraps
the metric's response model in a new pydantic class (``create_model``), renders its JSON
schema into the system message, and OpenAI's client walks the whole request through its
typed-dict transform. Only the user message, the formatted prompt, changes between calls.

:func:`prepare` runs that stack **once** against an in-memory transport, with a sentinel in
place of the prompt, and keeps the request body exactly as it went onto the wire. A call
then copies the body, puts the prompt where the sentinel was, and posts it with the same
OpenAI client (``client.post``: the same URL, headers, authentication, timeout and error
mapping); the answer is parsed by instructor's own ``from_response`` with the response model
instructor built (what ``process_response_async`` does for a plain model), so parsing,
validation and the exceptions raised are instructor's.

Before a prepared request is used it is checked: the sentinel request sent through the
prepared path must equal, byte for byte (method, URL, headers and body), the request the
stock Ragas/instructor/OpenAI path sent. If it does not (another library version, an option
that is not part of the body), :func:`prepare` returns ``None`` with the reason and the judge
keeps calling Ragas' ``ascore``: correct, only slower.

This reaches into instructor (``handle_response_model``, ``from_response``), Ragas (the
metric's ``_response_model``) and the OpenAI client (``_prepare_url``), so it is a speed-up
on probation: it stays while ``bench/bench_patches.py --only prepared`` shows it saves at least
10% of ``workbench run`` on 1,000 cases; ``WORKBENCH_PREPARED_REQUESTS=0`` turns it off (every
call through Ragas' ``ascore``).
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

SWITCH = "WORKBENCH_PREPARED_REQUESTS"
"""Set to ``0`` to send every call through Ragas' own ``ascore``."""
SENTINEL_PREFIX = "workbench-prompt-sentinel-"
_PATH = "/chat/completions"


def enabled() -> bool:
    """Whether prepared requests are on (:data:`SWITCH`)."""
    return os.environ.get(SWITCH, "1") != "0"


@dataclass(frozen=True)
class PreparedRequest:
    """The wire body of one metric's request with the prompt left out, and how to parse the
    answer."""

    template: dict[str, Any]
    """The request body as sent, with the sentinel as the prompt (never mutated)."""
    message: int
    """Index of the message whose content carries the prompt."""
    prefix: str
    """Content before the prompt in that message (instructor may wrap it)."""
    suffix: str
    """Content after the prompt in that message."""
    response_model: Any
    """instructor's response model (an ``OpenAISchema`` subclass), built once."""
    mode: Any
    """instructor's mode (``JSON``, or ``MD_JSON`` under ``json_mode: md_json``)."""
    url: Any = _PATH
    """Where the body is posted: the client's chat-completions URL, resolved once against its
    ``base_url`` (an absolute ``httpx.URL``: OpenAI's client then skips parsing and merging
    the URL on every call), or the relative path."""

    def body(self, prompt: str) -> dict[str, Any]:
        """The request body for ``prompt``: a copy of the template; shared parts are not mutated."""
        messages = list(self.template["messages"])
        messages[self.message] = {
            **messages[self.message],
            "content": self.prefix + prompt + self.suffix,
        }
        return {**self.template, "messages": messages}

    async def ascore(self, client: Any, prompt: str) -> Any:
        """One call: post the body with the OpenAI ``client``, parse as instructor does, return
        a Ragas ``MetricResult``."""
        from json import JSONDecodeError

        from instructor.retry import InstructorRetryException  # type: ignore[attr-defined]
        from openai import AsyncStream
        from openai.types.chat import ChatCompletion, ChatCompletionChunk
        from pydantic import ValidationError
        from ragas.metrics.result import MetricResult

        body = self.body(prompt)
        completion = await client.post(
            self.url,
            body=body,
            cast_to=ChatCompletion,
            options={},
            stream=False,
            stream_cls=AsyncStream[ChatCompletionChunk],
        )
        try:
            # instructor's process_response_async for a plain (non-streaming, non-iterable)
            # response model is this one call, after logging the completion's repr.
            model = self.response_model.from_response(
                completion, validation_context=None, strict=True, mode=self.mode
            )
        except (ValidationError, JSONDecodeError) as exc:
            # What instructor's retry loop raises after its single attempt (max_retries=1).
            raise InstructorRetryException(
                exc,
                last_completion=completion,
                n_attempts=1,
                messages=body["messages"],
                total_usage=getattr(completion, "usage", None),
            ) from exc
        return MetricResult(**model.model_dump())


@dataclass(frozen=True)
class Preparation:
    """What :func:`prepare` found: a prepared request, or why the stock path stays."""

    request: PreparedRequest | None
    reason: str | None = None


async def _capture(
    make_client: Callable[[Any], Any], send: Callable[[Any], Awaitable[Any]]
) -> list[Any]:
    """The HTTP requests ``send(client)`` makes, answered in memory with HTTP 400 (never sent
    anywhere)."""
    import httpx

    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            400,
            json={
                "error": {"message": "workbench request capture", "type": "invalid_request_error"}
            },
        )

    http = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    try:
        await send(make_client(http))
    except Exception:  # the in-memory 400 (or anything the stack raises on it)
        pass
    finally:
        await http.aclose()
    return seen


def _plain(response_model: Any) -> bool:
    """Whether instructor parses ``response_model`` with ``from_response`` alone (no iterable,
    partial, parallel or simple-type adapter handling)."""
    import inspect

    from instructor.dsl.iterable import IterableBase
    from instructor.dsl.parallel import ParallelBase
    from instructor.dsl.partial import PartialBase
    from instructor.dsl.simple_type import AdapterBase
    from instructor.function_calls import OpenAISchema

    return (
        inspect.isclass(response_model)
        and issubclass(response_model, OpenAISchema)
        and not issubclass(response_model, (IterableBase, PartialBase, ParallelBase, AdapterBase))
    )


def _wire(request: Any) -> tuple[str, str, list[tuple[bytes, bytes]], bytes]:
    return request.method, str(request.url), list(request.headers.raw), bytes(request.content)


def _locate(template: Any, sentinel: str) -> tuple[int, str, str] | None:
    """``(message index, prefix, suffix)`` of the single place the sentinel occurs, or None."""
    if not isinstance(template, dict) or not isinstance(template.get("messages"), list):
        return None
    if json.dumps(template, ensure_ascii=False).count(sentinel) != 1:
        return None
    for index, message in enumerate(template["messages"]):
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str) and sentinel in content:
            prefix, _, suffix = content.partition(sentinel)
            return index, prefix, suffix
    return None


async def prepare(metric: Any, make_llm: Callable[[Any], Any]) -> Preparation:
    """Build ``metric``'s request once and check it against the stock path.

    ``make_llm(http_client)`` builds the judge's Ragas LLM (``llm_factory`` over an OpenAI
    client) on the given httpx client, exactly as calls use it. Never raises: anything
    unexpected keeps the stock path, with the reason.
    """
    if not enabled():
        return Preparation(None, f"{SWITCH}=0")
    try:
        return await _prepare(metric, make_llm)
    except Exception as exc:
        return Preparation(
            None, f"preparing the request failed: {type(exc).__name__}: {str(exc)[:200]}"
        )


async def _prepare(metric: Any, make_llm: Callable[[Any], Any]) -> Preparation:
    sentinel = SENTINEL_PREFIX + secrets.token_hex(12)
    llms: list[Any] = []

    def make(http: Any) -> Any:
        llms.append(make_llm(http))
        return llms[-1]

    stock = await _capture(
        make, lambda llm: llm.agenerate(sentinel, response_model=metric._response_model)
    )
    if len(stock) != 1:
        return Preparation(None, f"the stock path made {len(stock)} requests for one call")
    try:
        template = json.loads(stock[0].content)
    except ValueError:
        return Preparation(None, "the stock request body is not JSON")
    located = _locate(template, sentinel)
    if located is None:
        return Preparation(None, "the prompt is not one message's content in the stock request")
    response_model, mode = _response_model(metric, llms[0], sentinel)
    if response_model is None:
        return Preparation(None, mode)
    client = llms[0].client.client
    for url in (client._prepare_url(_PATH), _PATH):
        prepared = PreparedRequest(template, *located, response_model, mode, url)

        async def send(llm: Any, prepared: PreparedRequest = prepared) -> Any:
            return await prepared.ascore(llm.client.client, sentinel)

        fast = await _capture(make, send)
        if len(fast) == 1 and _wire(fast[0]) == _wire(stock[0]):
            return Preparation(prepared)
    return Preparation(None, "the prepared request differs from the stock request on the wire")


def _response_model(metric: Any, llm: Any, sentinel: str) -> tuple[Any, Any]:
    """instructor's response model for ``metric`` and its mode, or ``(None, why not)``."""
    from instructor.process_response import handle_response_model  # type: ignore[attr-defined]

    mode = getattr(llm.client, "mode", None)
    if mode is None:
        return None, "the Ragas LLM's client carries no instructor mode"
    messages = [{"role": "user", "content": sentinel}]
    response_model, _ = handle_response_model(
        response_model=metric._response_model, mode=mode, messages=messages
    )
    if not _plain(response_model):
        return None, f"instructor's response model {response_model!r} is not a plain OpenAISchema"
    return response_model, mode
