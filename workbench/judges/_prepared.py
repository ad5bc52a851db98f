"""One Ragas LLM-metric request, built once per candidate and reused for every call.

A Ragas ``SimpleLLMMetric`` (``DiscreteMetric``, ``RankingMetric``) scored through
``llm_factory`` does, on every call, work that does not depend on the case: instructor wraps
the metric's response model in a new pydantic class (``create_model``), renders its JSON
schema into the system message, and OpenAI's client walks the whole request through its
typed-dict transform. Only the user message, the formatted prompt, changes between calls.

:func:`prepare` runs that stack **once** against an in-memory transport, with a sentinel in
place of the prompt, and keeps the request body exactly as it went onto the wire. A call
then copies the body, puts the prompt where the sentinel was, and posts it with the same
OpenAI client (same URL, headers, authentication, timeout and error mapping); the answer is
parsed by instructor's own ``from_response`` with the response model instructor built (what
``process_response_async`` does for a plain model), so parsing, validation and the exceptions
raised are instructor's.

**Direct sending.** Where it can, the prepared request does not go through the OpenAI SDK's
per-call request machinery either (merging headers, options and the URL, its response
wrapper): the headers, URL and timeout the client builds for this request are taken once per
client (:class:`_Direct`), and each call builds one ``httpx.Request`` with the body and sends
it with the client's own httpx client. Errors map as the SDK maps them
(``APITimeoutError``, ``APIConnectionError``, the status error classes through the client's
own ``_make_status_error_from_response``), and the response is parsed by the client's own
``_process_response_data``. The wire capture is fed directly (:class:`WireLog`), so the
response body is parsed once, not once by the capture hook and again by the SDK. Clients
whose headers may change between calls (a key provider, custom auth, an idempotency header,
Azure AD tokens) keep the SDK path.

Before a prepared request is used it is checked: the sentinel request sent through the
prepared path must equal, byte for byte (method, URL, headers and body), the request the
stock Ragas/instructor/OpenAI path sent. The direct path is tried first, then the SDK path;
if neither matches (another library version, an option that is not part of the body),
:func:`prepare` returns ``None`` with the reason and the judge keeps calling Ragas' ``ascore``:
correct, only slower.
"""

from __future__ import annotations

import json
import secrets
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

SENTINEL_PREFIX = "workbench-prompt-sentinel-"
_PATH = "/chat/completions"
DIRECT_EXTENSION = "workbench_direct"
"""Marks an httpx request sent by the direct path: the wire-capture hooks leave it alone (the
direct path records it itself). httpcore ignores extensions it does not know."""
_UNPARSED = object()


class WireLog(Protocol):
    """Where the direct path records what it sent and received (the judge's wire capture)."""

    def sent(self, url: str, body: Any) -> None:
        """The request's URL and JSON body, as sent."""

    def received(self, status: int, retry_after: str | None, body: Any) -> None:
        """The response's status, Retry-After header and JSON body (None when not JSON)."""


def _direct_eligible(client: Any) -> bool:
    """Whether ``client`` builds the same headers for every call of one request (nothing
    refreshed or added per call), so they can be built once."""
    return (
        getattr(client, "custom_auth", None) is None
        and getattr(client, "_idempotency_header", None) is None
        and getattr(client, "_api_key_provider", None) is None
        and getattr(client, "_azure_ad_token_provider", None) is None
        and getattr(client, "_azure_ad_token", None) is None
        and hasattr(client, "_build_request")
        and hasattr(client, "_process_response_data")
    )


@dataclass(frozen=True)
class _Direct:
    """One OpenAI client's request for a prepared body, built once: its httpx client, URL,
    headers (without ``Host`` and ``Content-Length``, which httpx adds per body) and
    extensions (the timeout)."""

    client: Any
    http: Any
    url: Any
    url_text: str
    headers: list[tuple[bytes, bytes]]
    extensions: dict[str, Any]

    @classmethod
    async def build(cls, client: Any, path: str, template: dict[str, Any]) -> _Direct:
        """What the client's own ``request`` builds for ``template`` (its first attempt)."""
        from openai._models import FinalRequestOptions

        options = FinalRequestOptions.construct(method="post", url=path, json_data=template)
        options = await client._prepare_options(options)
        request = client._build_request(options, retries_taken=0)
        await client._prepare_request(request)
        headers = [
            (name, value)
            for name, value in request.headers.raw
            if name.lower() not in (b"host", b"content-length")
        ]
        extensions = {**request.extensions, DIRECT_EXTENSION: True}
        return cls(client, client._client, request.url, str(request.url), headers, extensions)

    async def post(self, body: dict[str, Any], wire: WireLog | None) -> Any:  # noqa: C901
        """Send ``body``; the parsed completion, or the exception the SDK would raise."""
        import httpx
        from openai import (
            APIConnectionError,
            APIResponseValidationError,
            APITimeoutError,
            BaseModel,
        )
        from openai._models import add_request_id

        request = httpx.Request(
            "POST", self.url, headers=self.headers, json=body, extensions=self.extensions
        )
        if wire is not None:
            wire.sent(self.url_text, body)
        try:
            response = await self.http.send(request)
        except httpx.TimeoutException as err:
            raise APITimeoutError(request=request) from err
        except Exception as err:
            raise APIConnectionError(request=request) from err
        data: Any
        try:
            data = response.json()
        except ValueError:
            data = _UNPARSED
        if wire is not None:
            wire.received(
                response.status_code,
                response.headers.get("retry-after"),
                None if data is _UNPARSED else data,
            )
        client = self.client
        if not response.is_success:  # what raise_for_status refuses: any status but 2xx
            raise client._make_status_error_from_response(response)
        content_type, *_ = response.headers.get("content-type", "*").split(";")
        if data is _UNPARSED:
            if content_type.endswith("json"):
                data = response.json()  # raises as the SDK's parse does
            elif client._strict_response_validation:
                raise APIResponseValidationError(
                    response=response,
                    message=(
                        "Expected Content-Type response header to be `application/json` but"
                        f" received `{content_type}` instead."
                    ),
                    body=response.text,
                )
            else:
                return response.text
        completion = client._process_response_data(
            data=data, cast_to=_completion_type(), response=response
        )
        if isinstance(completion, BaseModel):
            add_request_id(completion, response.headers.get("x-request-id"))
        return completion


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
    direct: bool = False
    """Send with the client's httpx client, skipping the SDK's per-call request build
    (:class:`_Direct`); chosen only when it matched the stock request on the wire."""
    _senders: weakref.WeakKeyDictionary[Any, _Direct] = field(
        default_factory=weakref.WeakKeyDictionary, compare=False, repr=False
    )
    """The direct request of each OpenAI client, built on its first call."""

    def body(self, prompt: str) -> dict[str, Any]:
        """The request body for ``prompt``: a copy of the template; shared parts are not mutated."""
        messages = list(self.template["messages"])
        messages[self.message] = {
            **messages[self.message],
            "content": self.prefix + prompt + self.suffix,
        }
        return {**self.template, "messages": messages}

    async def ascore(self, client: Any, prompt: str, wire: WireLog | None = None) -> Any:
        """One call: post the body with the OpenAI ``client``, parse as instructor does, return
        a Ragas ``MetricResult``. ``wire`` records the exchange on the direct path."""
        from json import JSONDecodeError

        from instructor.retry import InstructorRetryException  # type: ignore[attr-defined]
        from openai import AsyncStream
        from openai.types.chat import ChatCompletionChunk
        from pydantic import ValidationError
        from ragas.metrics.result import MetricResult

        body = self.body(prompt)
        sender = await self._sender(client) if self.direct else None
        if sender is not None:
            completion = await sender.post(body, wire)
        else:
            completion = await client.post(
                _PATH if self.direct else self.url,
                body=body,
                cast_to=_completion_type(),
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

    async def _sender(self, client: Any) -> _Direct | None:
        """``client``'s direct request (built on its first call), or None when its headers
        may change between calls (then the SDK sends, as the stock path does)."""
        found = self._senders.get(client)
        if found is None:
            if not _direct_eligible(client):
                return None
            found = self._senders[client] = await _Direct.build(client, _PATH, self.template)
        return found


_COMPLETION: list[Any] = []


def _completion_type() -> Any:
    """``cast_to`` for the chat completion: OpenAI's client builds it through ``build`` (its
    ``ModelBuilderProtocol``) instead of its recursive ``construct_type``.

    ``build`` validates the JSON body into a plain ``ChatCompletion`` with pydantic (the same
    fields and values for any body that matches the type, many times faster) and falls back to
    exactly what the client does otherwise (``construct_type``), so an odd body is handled as
    before. The class is made once per process.
    """
    if not _COMPLETION:
        from openai._models import construct_type
        from openai.types.chat import ChatCompletion
        from pydantic import ValidationError

        class _Completion(ChatCompletion):
            @classmethod
            def build(cls, *, response: Any, data: object) -> ChatCompletion:
                try:
                    return ChatCompletion.model_validate(data, strict=True)
                except ValidationError:
                    return cast(ChatCompletion, construct_type(type_=ChatCompletion, value=data))

        _COMPLETION.append(_Completion)
    return _COMPLETION[0]


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
    try:
        return await _prepare(metric, make_llm)
    except Exception as exc:
        return Preparation(
            None, f"preparing the request failed: {type(exc).__name__}: {str(exc)[:200]}"
        )


async def _prepare(metric: Any, make_llm: Callable[[Any], Any]) -> Preparation:  # noqa: C901
    from instructor.process_response import handle_response_model  # type: ignore[attr-defined]

    sentinel = SENTINEL_PREFIX + secrets.token_hex(12)
    llms: list[Any] = []

    def make(http: Any) -> Any:
        llm = make_llm(http)
        llms.append(llm)
        return llm

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
    mode = getattr(llms[0].client, "mode", None)
    if mode is None:
        return Preparation(None, "the Ragas LLM's client carries no instructor mode")
    messages = [{"role": "user", "content": sentinel}]
    response_model, _ = handle_response_model(
        response_model=metric._response_model, mode=mode, messages=messages
    )
    if not _plain(response_model):
        return Preparation(
            None,
            f"instructor's response model {response_model!r} is not a plain OpenAISchema model",
        )
    client = llms[0].client.client
    candidates: list[tuple[Any, bool]] = [(client._prepare_url(_PATH), False), (_PATH, False)]
    if _direct_eligible(client):
        candidates.insert(0, (_PATH, True))
    for url, direct in candidates:
        prepared = PreparedRequest(
            template, *located, response_model=response_model, mode=mode, url=url, direct=direct
        )

        async def send(llm: Any, prepared: PreparedRequest = prepared) -> Any:
            return await prepared.ascore(llm.client.client, sentinel)

        fast = await _capture(make, send)
        if len(fast) == 1 and _wire(fast[0]) == _wire(stock[0]):
            return Preparation(prepared)
    return Preparation(None, "the prepared request differs from the stock request on the wire")
