"""One Ragas LLM-metric request, built once per candidate and reused for every call.

:func:`prepare` runs the Ragas/instructor/OpenAI stack once against an in-memory transport with a
sentinel prompt and keeps the wire body; a call puts its prompt where the sentinel was, posts it
with the same client and parses with instructor's ``from_response``. It is used only when the
sentinel request it sends equals the stock one byte for byte; else calls go through Ragas'
``ascore``. A speed-up on probation (``bench/bench_patches.py --only prepared``);
``WORKBENCH_PREPARED_REQUESTS=0`` turns it off.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

SWITCH = "WORKBENCH_PREPARED_REQUESTS"
SENTINEL_PREFIX = "workbench-prompt-sentinel-"
_PATH = "/chat/completions"


def enabled() -> bool:
    return os.environ.get(SWITCH, "1") != "0"


@dataclass(frozen=True)
class PreparedRequest:
    """The wire body of one metric's request (the sentinel as the prompt, in message ``message``
    between ``prefix`` and ``suffix``), and how to parse the answer."""

    template: dict[str, Any]
    message: int
    prefix: str
    suffix: str
    response_model: Any
    mode: Any
    url: Any = _PATH
    """The chat-completions URL, resolved once against the client's ``base_url``, or the path."""

    def body(self, prompt: str) -> dict[str, Any]:
        """The request body for ``prompt`` (the template is not mutated)."""
        messages = list(self.template["messages"])
        messages[self.message] = {
            **messages[self.message],
            "content": self.prefix + prompt + self.suffix,
        }
        return {**self.template, "messages": messages}

    async def ascore(self, client: Any, prompt: str) -> Any:
        """Post the body with the OpenAI ``client``; a Ragas ``MetricResult``, parsed as instructor
        does."""
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
            # instructor's process_response_async for a plain response model
            model = self.response_model.from_response(
                completion, validation_context=None, strict=True, mode=self.mode
            )
        except (ValidationError, JSONDecodeError) as exc:
            # what instructor's retry loop raises after its single attempt
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
    """The HTTP requests ``send(client)`` makes, answered in memory with HTTP 400."""
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
    """Whether instructor parses ``response_model`` with ``from_response`` alone."""
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
    """Build ``metric``'s request once (``make_llm(http_client)``: the judge's Ragas LLM) and
    check it against the stock path. Never raises: a failure keeps the stock path."""
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
