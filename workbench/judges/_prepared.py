"""One Ragas LLM-metric request, built once per candidate and reused for every call.

:func:`prepare` runs the Ragas/instructor/OpenAI stack once against an in-memory transport with a
sentinel prompt and keeps the wire body; a call puts its prompt where the sentinel was, posts it
and parses with instructor's ``from_response``. It is used only when the sentinel request it sends
equals the stock one byte for byte; else calls go through Ragas' ``ascore``.

The post is direct (:class:`DirectPost`, issue 31) when that too matches the stock request on the
wire: the stock request's headers, URL and timeout replayed with the new body, handed to the
HTTP client's own transport (aiohttp's pool), past the OpenAI SDK's request machinery and httpx's
client; a 2xx JSON answer becomes the ``ChatCompletion`` pydantic validates, and every other
answer and every failure goes through the SDK's own code, so errors are the SDK's. Otherwise the
body is posted with the OpenAI client's ``post``. A speed-up on probation
(``bench/bench_patches.py --only prepared``); ``WORKBENCH_PREPARED_REQUESTS=0`` turns it off.
"""

from __future__ import annotations

import functools
import json
import os
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

SWITCH = "WORKBENCH_PREPARED_REQUESTS"
SENTINEL_PREFIX = "workbench-prompt-sentinel-"
_PATH = "/chat/completions"
PROBE = ' "quoted" \\ back\tslash\n é ü 中文 \u2028 😀 \x00'
"""Appended to the sentinel to check that the direct post encodes a prompt as the SDK does."""


def enabled() -> bool:
    return os.environ.get(SWITCH, "1") != "0"


@dataclass(frozen=True)
class DirectPost:
    """The stock request's wire, less its body: replayed for every call of a client like the one
    it was captured from (same class, API key and base URL, no retries, no cookies to send)."""

    url: Any
    """The request URL (an ``httpx.URL``)."""
    headers: tuple[tuple[bytes, bytes], ...] = field(repr=False)
    """The request headers as sent, less ``Content-Length`` (httpx sets it per body); never
    shown (the key is among them)."""
    extensions: dict[str, Any]
    """httpx's request extensions: the SDK's timeout (and an SNI host name if any)."""
    client_type: Any
    """The OpenAI client's class the request was captured from."""
    api_key: str = field(repr=False)
    """That client's API key (never shown)."""
    base_url: Any
    """That client's base URL."""

    @classmethod
    def of(cls, request: Any, client: Any) -> DirectPost:
        """What ``client`` sent as ``request``."""
        headers = tuple((k, v) for k, v in request.headers.raw if k.lower() != b"content-length")
        return cls(
            request.url,
            headers,
            dict(request.extensions),
            type(client),
            client.api_key,
            client.base_url,
        )

    def serves(self, client: Any) -> bool:
        """Whether ``client`` would send these headers (cookies it holds would add one)."""
        return (
            type(client) is self.client_type
            and client.api_key == self.api_key
            and client.base_url == self.base_url
            and client.max_retries == 0
            and not client._client.cookies
        )

    @functools.cached_property
    def _headers(self) -> Any:
        import httpx

        return httpx.Headers(list(self.headers))

    async def post(self, client: Any, body: dict[str, Any]) -> Any:
        """``body`` posted as ``client.post`` would, on ``client``'s httpx client's transport and
        event hooks; its ``ChatCompletion``, or the SDK's exception."""
        import httpx
        from openai import APIConnectionError, APITimeoutError

        http = client._client
        content = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        request = httpx.Request(
            "POST",
            self.url,
            headers=self._headers,  # copied by httpx
            content=content.encode(),
            extensions=self.extensions,
        )
        try:  # what httpx's AsyncClient.send does for this request, and the SDK around it
            for hook in http.event_hooks["request"]:
                await hook(request)
            response = await http._transport_for_url(request.url).handle_async_request(request)
            response.request = request
            response.default_encoding = http._default_encoding
            if "set-cookie" in response.headers:
                http.cookies.extract_cookies(response)
            for hook in http.event_hooks["response"]:
                await hook(response)
        except httpx.TimeoutException as exc:
            raise APITimeoutError(request=request) from exc
        except Exception as exc:
            raise APIConnectionError(request=request) from exc
        if not response.is_success:
            raise client._make_status_error_from_response(response) from None
        return _completion(response) or await _sdk_completion(client, response)


def _completion(response: Any) -> Any:
    """A JSON answer's ``ChatCompletion``, validated; None when pydantic rejects it (the SDK's
    ``construct`` then builds what it builds)."""
    from openai._models import add_request_id
    from openai.types.chat import ChatCompletion
    from pydantic import ValidationError

    content_type, *_ = response.headers.get("content-type", "*").split(";")
    if not content_type.endswith("json"):
        return None
    try:
        data = json.loads(response.content)
        completion = ChatCompletion.model_validate(data) if isinstance(data, dict) else None
    except (ValueError, ValidationError):
        return None
    if completion is not None:
        add_request_id(completion, response.headers.get("x-request-id"))
    return completion


async def _sdk_post(client: Any, url: Any, body: dict[str, Any]) -> Any:
    """``body`` posted with the OpenAI ``client``'s ``post``: its ``ChatCompletion``."""
    from openai import AsyncStream
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

    return await client.post(
        url,
        body=body,
        cast_to=ChatCompletion,
        options={},
        stream=False,
        stream_cls=AsyncStream[ChatCompletionChunk],
    )


async def _sdk_completion(client: Any, response: Any) -> Any:
    """What the SDK's ``post`` returns for ``response`` (its own parse, or its exception)."""
    from openai import AsyncStream
    from openai._models import FinalRequestOptions
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

    return await client._process_response(
        cast_to=ChatCompletion,
        options=FinalRequestOptions.construct(method="post", url=str(response.request.url)),
        response=response,
        stream=False,
        stream_cls=AsyncStream[ChatCompletionChunk],
    )


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
    direct: DirectPost | None = None
    """How to post past the SDK (module doc); None: with the OpenAI client's ``post``."""

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
        from pydantic import ValidationError
        from ragas.metrics.result import MetricResult

        body = self.body(prompt)
        if self.direct is not None and self.direct.serves(client):
            completion = await self.direct.post(client, body)
        else:
            completion = await _sdk_post(client, self.url, body)
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
            return Preparation(await _direct(prepared, stock[0], client, make, sentinel))
    return Preparation(None, "the prepared request differs from the stock request on the wire")


async def _direct(
    prepared: PreparedRequest, stock: Any, client: Any, make: Callable[[Any], Any], sentinel: str
) -> PreparedRequest:
    """``prepared`` with the :class:`DirectPost` of ``client``'s ``stock`` request when that sends
    the stock request for the sentinel, and what the SDK sends for a prompt of quotes, escapes
    and non-ASCII text (:data:`PROBE`); else ``prepared``."""
    direct = DirectPost.of(stock, client)
    if not direct.serves(client):
        return prepared
    clients: list[Any] = []

    def made(http: Any) -> Any:
        clients.append(make(http).client.client)
        return clients[-1]

    posts: list[tuple[Callable[..., Awaitable[Any]], str]] = [
        (direct.post, sentinel),
        (direct.post, sentinel + PROBE),
        (functools.partial(_sdk_post, url=prepared.url), sentinel + PROBE),
    ]
    requests = []
    for post, prompt in posts:
        seen = await _capture(made, functools.partial(post, body=prepared.body(prompt)))
        requests.append(seen[0] if len(seen) == 1 else None)
    sent, probe_direct, probe_sdk = requests
    if sent is None or probe_direct is None or probe_sdk is None:
        return prepared
    same = (
        all(direct.serves(c) for c in clients)
        and _wire(sent) == _wire(stock)
        and sent.extensions == stock.extensions
        and _wire(probe_direct) == _wire(probe_sdk)
    )
    return replace(prepared, direct=direct) if same else prepared


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
