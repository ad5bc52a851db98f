"""A real, local, OpenAI-compatible chat-completions HTTP server for tests and demos.

:class:`FakeLLM` listens on ``127.0.0.1`` (a free port by default) and answers
``POST /v1/chat/completions`` exactly the way the OpenAI API does, so the real ``openai``
client, instructor and Ragas can be exercised end to end with no API key and no network.
What it answers is scripted: :class:`Rule` objects matched against the prompt, an optional
responder callable, a default :class:`Reply`, plus injectable faults (HTTP errors, hangs,
truncated JSON, refusals, a 401 that echoes the presented key, dropped connections, inflated
usage), either scripted per reply or drawn at random with a seeded RNG.

Every request to the chat endpoint is recorded as a :class:`RecordedCall` (the API key is
never recorded), so tests can assert on what the client actually sent.

Decision order per chat request:

1. ``require_api_key`` set and the bearer key does not match: 401 (``authorized=False``; a
   LiteLLM emulation with ``litellm_database=False`` answers 400 "No connected db." instead).
2. Random fault injection: one draw from ``random.Random(seed)`` per request, faults taken
   in :data:`FAULTS` order with the probabilities in ``fault_rates``; the reply is then the
   ``default`` reply carrying that fault (rules and the responder are not consulted, so rule
   ``times`` counters are not consumed).
3. The first :class:`Rule` whose ``contains`` is ``None`` or occurs in the prompt and whose
   ``times`` is not exhausted.
4. ``responder(request)`` when given.
5. ``default``.

The reply's ``latency_s`` (or the server-wide ``latency_s``) is waited before responding.

Provider emulation (``emulate=``, one of :data:`PROVIDERS`) makes the server behave like a
real endpoint in the ways a candidate spec depends on: the chat path (Azure OpenAI's
``/openai/deployments/<deployment>/chat/completions?api-version=...``; llama.cpp and LiteLLM
also answer ``/chat/completions``), the header that carries the key (``api-key`` for Azure,
``Authorization: Bearer`` elsewhere, none for Ollama), what an unknown model looks like
(``models=``: 404 with each provider's own error body, LiteLLM's 400, llama.cpp ignores the
name), and JSON mode (``json_mode=``: ``honour``; ``reject``, a 400 naming
``response_format``; ``ignore``, the answer comes as prose around a fenced ```` ```json ````
block). Between authentication and the decision order above, a request for an unknown
deployment, api-version or model, or a refused ``response_format``, is answered with that
error (no rule, responder or fault is consulted).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import random
import re
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = [
    "FAULTS",
    "JSON_MODES",
    "PROVIDERS",
    "MODEL_ID",
    "REFUSAL_TEXT",
    "TRUNCATED_CONTENT",
    "ChatRequest",
    "FakeLLM",
    "RecordedCall",
    "Reply",
    "Rule",
]

FAULTS: tuple[str, ...] = (
    "http_500",
    "http_429",
    "http_400",
    "http_401",
    "hang",
    "malformed_json",
    "refusal",
    "http_401_echo",
    "http_403",
    "disconnect",
    "inflated_usage",
)
"""Every fault the server can inject, in the fixed order used for random fault draws.

``http_401_echo`` is a 401 whose message echoes the ``Authorization`` header it received
(as some providers do: "Incorrect API key provided: Bearer sk-..."); ``disconnect`` closes
the connection without answering; ``inflated_usage`` answers normally but reports
``inflated_usage_tokens`` prompt and completion tokens."""

MODEL_ID = "fake-judge"
"""The single model listed by ``GET /v1/models``."""

REFUSAL_TEXT = "I'm sorry, I can't help with that."
"""``message.refusal`` of a ``refusal`` fault."""

TRUNCATED_CONTENT = '{"reason": "cut off mid'
"""Assistant content of a ``malformed_json`` fault: a cut-off JSON object."""

_CHAT_PATH = "/v1/chat/completions"
_MODELS_PATH = "/v1/models"
_SECRET_HEADERS = frozenset({"authorization", "api-key", "proxy-authorization"})

PROVIDERS: tuple[str, ...] = ("openai", "azure", "vllm", "ollama", "llamacpp", "litellm")
"""Providers the server can emulate (``FakeLLM(emulate=...)``)."""

JSON_MODES: tuple[str, ...] = ("honour", "reject", "ignore")
"""What the server does with ``response_format``: honour it (bare JSON), reject it (HTTP 400
naming ``response_format``), or ignore it (the answer is prose around a fenced JSON block)."""

AZURE_JSON_MODE_SINCE = "2023-12-01-preview"
"""The first Azure OpenAI api-version with JSON mode; older versions answer 400 to
``response_format``."""

_AZURE_CHAT = re.compile(r"^/openai/deployments/(?P<deployment>[^/]+)/chat/completions$")
_EXTRA_CHAT_PATHS = {"llamacpp": ("/chat/completions",), "litellm": ("/chat/completions",)}
_PROSE_BEFORE = "Sure. Here is my assessment of the response.\n\n```json\n"
_PROSE_AFTER = "\n```\n\nLet me know if you need anything else."


def _not_found_model(provider: str, model: str) -> tuple[int, dict[str, Any]]:
    """Status and body of each provider's answer to a model it does not serve."""
    if provider == "vllm":  # vLLM's ErrorResponse is not nested under "error"
        return 404, {
            "object": "error",
            "message": f"The model `{model}` does not exist.",
            "type": "NotFoundError",
            "param": None,
            "code": 404,
        }
    if provider == "ollama":
        return 404, _error_body(f'model "{model}" not found, try pulling it first', "api_error")
    if provider == "litellm":
        return 400, _error_body(
            f"/chat/completions: Invalid model name passed in model={model}. Call `/v1/models` to"
            " view available models for your key.",
            "None",
            "400",
            "None",
        )
    return 404, _error_body(
        f"The model `{model}` does not exist or you do not have access to it.",
        "invalid_request_error",
        "model_not_found",
    )


def _unauthorized(provider: str) -> dict[str, Any]:
    """Each provider's 401 body."""
    if provider == "azure":
        return {
            "error": {
                "code": "401",
                "message": (
                    "Access denied due to invalid subscription key or wrong API endpoint. Make sure"
                    " to provide a valid key for an active subscription and use a correct regional"
                    " API endpoint for your resource."
                ),
            }
        }
    if provider == "vllm":
        return {"error": "Unauthorized"}
    if provider == "llamacpp":
        return {
            "error": {"code": 401, "message": "Invalid API Key", "type": "authentication_error"}
        }
    if provider == "litellm":
        return _error_body(
            "Authentication Error, Invalid proxy server token passed. Received API Key ="
            " sk-...****, Key Hash (Token) =[REDACTED]",
            "auth_error",
            "401",
            "None",
        )
    return _error_body("Incorrect API key provided.", "invalid_request_error", "invalid_api_key")


def _no_json_mode(provider: str, model: str) -> dict[str, Any]:
    """Each provider's 400 for a ``response_format`` it does not support."""
    if provider == "litellm":
        return _error_body(
            "litellm.UnsupportedParamsError: openai does not support parameters:"
            f" ['response_format'], for model={model}. To drop these, set"
            " `litellm.drop_params=True` or for proxy:\n\n`litellm_settings:\n drop_params:"
            " true`\n",
            "None",
            "400",
            "None",
        )
    return _error_body(
        "Unrecognized request argument supplied: response_format",
        "invalid_request_error",
        None,
        "response_format",
    )


_HTTP_FAULTS: dict[str, tuple[int, str, str | None, str]] = {
    # fault: (status, error type, error code, message)
    "http_500": (500, "server_error", None, "The fake LLM injected an internal server error."),
    "http_429": (
        429,
        "rate_limit_error",
        "rate_limit_exceeded",
        "Rate limit reached (injected by the fake LLM).",
    ),
    "http_400": (400, "invalid_request_error", None, "Invalid request (injected by the fake LLM)."),
    "http_401": (
        401,
        "invalid_request_error",
        "invalid_api_key",
        "Incorrect API key provided (injected by the fake LLM).",
    ),
    "http_403": (
        403,
        "permission_denied",
        "forbidden",
        "You are not allowed to use this model (injected by the fake LLM).",
    ),
}


def _check_fault(fault: str | None) -> None:
    if fault is not None and fault not in FAULTS:
        raise ValueError(f"unknown fault {fault!r}; expected one of {', '.join(FAULTS)}")


@dataclass(frozen=True)
class Reply:
    """What the fake LLM answers to one request.

    By default the assistant content is ``{"reason": <reason>, "value": <value>}`` (bare
    JSON, no code fences), the shape a Ragas ``DiscreteMetric`` parses. ``content`` replaces
    it verbatim; ``fault`` (one of :data:`FAULTS`) turns the answer into that failure;
    ``latency_s`` overrides the server-wide latency for this reply.
    """

    value: str | None = "pass"
    reason: str = "scripted verdict"
    fault: str | None = None
    content: str | None = None
    latency_s: float | None = None

    def __post_init__(self) -> None:
        _check_fault(self.fault)
        if self.latency_s is not None and self.latency_s < 0:
            raise ValueError(f"latency_s must be >= 0, got {self.latency_s}")

    def render(self) -> str:
        """The assistant content this reply produces when it carries no content-changing fault."""
        if self.content is not None:
            return self.content
        return json.dumps({"reason": self.reason, "value": self.value})


@dataclass(frozen=True)
class Rule:
    """A scripted reply for requests whose prompt contains ``contains``.

    ``contains=None`` matches every request. ``times`` limits the rule to that many matching
    requests; after that it is skipped (``None`` means unlimited).
    """

    reply: Reply
    contains: str | None = None
    times: int | None = None

    def __post_init__(self) -> None:
        if self.times is not None and self.times < 0:
            raise ValueError(f"times must be >= 0 or None, got {self.times}")


@dataclass(frozen=True)
class ChatRequest:
    """A chat-completions request as a responder sees it.

    ``prompt`` is every message's text content joined with a blank line (``"\\n\\n"``);
    ``index`` is the 0-based global counter of chat requests since start (or :meth:`FakeLLM.reset`).
    """

    body: dict[str, Any]
    prompt: str
    messages: list[dict[str, Any]]
    model: str
    index: int


@dataclass(frozen=True)
class RecordedCall:
    """One request to the chat endpoint, as the server saw and answered it.

    ``headers`` have lower-cased names and never include ``authorization`` (nor ``api-key``);
    ``auth_headers`` names which of those credential headers were presented (never their
    values). ``query`` is the URL's query string parsed (e.g. Azure's ``api-version``).
    ``authorized`` is ``None`` when the server requires no key. ``status`` is the HTTP status
    sent, or ``0`` for a hang abandoned because the server stopped (a hang still in progress
    also shows ``0`` until it answers) and for a ``disconnect``.
    """

    index: int
    path: str
    body: dict[str, Any] | None
    headers: dict[str, str]
    authorized: bool | None
    reply: Reply
    status: int
    query: dict[str, str] = dataclasses.field(default_factory=dict)
    auth_headers: tuple[str, ...] = ()


def _message_text(content: Any) -> str:
    """Text of one message's ``content``: a string, or the text parts of a content list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "\n\n".join(parts)
    return str(content)


def _tokens(text: str) -> int:
    """The deterministic token estimate: one token per four characters, at least one."""
    return max(1, math.ceil(len(text) / 4))


def _format_seconds(seconds: float) -> str:
    """``Retry-After`` value: ``"1"`` for whole seconds, ``"0.05"`` for fractions."""
    value = float(seconds)
    if value.is_integer():
        return str(int(value))
    return repr(value)


def _error_body(
    message: str, type_: str, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


class _HTTPServer(ThreadingHTTPServer):
    """Threaded server that knows its :class:`FakeLLM` and its live connections."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self, address: tuple[str, int], fake: FakeLLM) -> None:
        self.fake = fake
        self.live: set[socket.socket] = set()
        self.live_lock = threading.Lock()
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)

    def close_live_connections(self) -> None:
        """Shut down every open client connection so idle keep-alive threads exit."""
        with self.live_lock:
            conns = list(self.live)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    """HTTP/1.1 keep-alive handler; every response carries ``Content-Length``."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out at once, no 40 ms delayed-ACK stalls
    server_version = "FakeLLM/1.0"
    server: _HTTPServer
    _headers_buffer: list[bytes]  # BaseHTTPRequestHandler's private buffer (not in typeshed)

    def version_string(self) -> str:
        """The ``Server`` header value."""
        return self.server_version

    # -- plumbing -------------------------------------------------------------------------
    def setup(self) -> None:
        super().setup()
        with self.server.live_lock:
            self.server.live.add(self.connection)

    def finish(self) -> None:
        with self.server.live_lock:
            self.server.live.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Silence per-request logging."""

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Errors raised by the stdlib parser (bad request line, unsupported method) as JSON."""
        self.close_connection = True
        type_ = "server_error" if code >= 500 else "invalid_request_error"
        text = message or self.responses.get(code, ("error",))[0]
        self._send_json(code, _error_body(text, type_))

    def _send_json(
        self, status: int, payload: Any, extra_headers: Mapping[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (extra_headers or {}).items():
                self.send_header(name, value)
            self.send_header("Connection", "close" if self.close_connection else "keep-alive")
            # end_headers() would write the headers on their own; send headers and body in one write
            if self.request_version == "HTTP/0.9":  # unparseable request line: no headers
                out = data
            else:
                out = (
                    b"".join(self._headers_buffer)
                    + b"\r\n"
                    + (b"" if self.command == "HEAD" else data)
                )
                self._headers_buffer = []
            self.wfile.write(out)
            self.wfile.flush()
        except OSError:  # client went away (e.g. it timed out during a hang)
            self.close_connection = True

    def _read_body(self) -> bytes | None:
        """The request body; ``None`` when it cannot be read (the connection is then closed)."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks: list[bytes] = []
            while True:
                line = self.rfile.readline(65537)
                if not line:
                    return None
                try:
                    size = int(line.split(b";", 1)[0].strip(), 16)
                except ValueError:
                    return None
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline(65537)
        try:
            length = int(self.headers.get("Content-Length", "0") or "0")
        except ValueError:
            return None
        if length < 0:
            return None
        return self.rfile.read(length) if length else b""

    def _path(self) -> str:
        path = urlsplit(self.path).path
        return path.rstrip("/") or "/"

    # -- methods --------------------------------------------------------------------------
    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        """``GET /v1/models`` lists the one fake model; anything else is 404/405."""
        path = self._path()
        self._drain()
        if path == _MODELS_PATH:
            served = self.server.fake.models or (MODEL_ID,)
            self._send_json(200, {"object": "list", "data": [_model_entry(m) for m in served]})
        elif path == f"{_MODELS_PATH}/{MODEL_ID}":
            self._send_json(200, _model_entry())
        elif self.server.fake._is_chat_path(path):
            self._send_json(
                405,
                _error_body(
                    f"Method GET not allowed on {path}; use POST.", "invalid_request_error"
                ),
            )
        else:
            self._send_json(
                404, _error_body(f"Unknown path {path}", "invalid_request_error", "unknown_url")
            )

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        """``POST /v1/chat/completions``; other paths are 404/405."""
        path = self._path()
        raw = self._read_body()
        if raw is None:
            self.close_connection = True
            self._send_json(
                400, _error_body("Could not read the request body.", "invalid_request_error")
            )
            return
        if self.server.fake._is_chat_path(path):
            self.server.fake._handle_chat(self, path, raw)
        elif path in (_MODELS_PATH, f"{_MODELS_PATH}/{MODEL_ID}"):
            self._send_json(
                405,
                _error_body(
                    f"Method POST not allowed on {path}; use GET.", "invalid_request_error"
                ),
            )
        elif self.server.fake.emulate == "azure":
            self._send_json(404, {"error": {"code": "404", "message": "Resource not found"}})
        else:
            self._send_json(
                404, _error_body(f"Unknown path {path}", "invalid_request_error", "unknown_url")
            )

    def _drain(self) -> None:
        """Consume a body sent with a GET so the keep-alive stream stays in sync."""
        has_body = bool(self.headers.get("Content-Length") or self.headers.get("Transfer-Encoding"))
        if has_body and self._read_body() is None:
            self.close_connection = True


def _model_entry(model: str = MODEL_ID) -> dict[str, Any]:
    return {"id": model, "object": "model", "created": 0, "owned_by": "workbench"}


def _check_provider(
    emulate: str,
    json_mode: str,
    require_api_key: str | None,
    azure_deployments: Sequence[str] | None,
    azure_api_versions: Sequence[str] | None,
) -> None:
    """Refuse (``ValueError``) a provider emulation that cannot be: the first refusal found."""
    azure_only = azure_deployments is not None or azure_api_versions is not None
    refusals = (
        (
            emulate not in PROVIDERS,
            f"unknown provider {emulate!r}; expected one of {', '.join(PROVIDERS)}",
        ),
        (
            json_mode not in JSON_MODES,
            f"unknown json_mode {json_mode!r}; expected one of {', '.join(JSON_MODES)}",
        ),
        (
            emulate == "ollama" and require_api_key is not None,
            "Ollama ignores API keys; require_api_key cannot be combined with emulate='ollama'",
        ),
        (
            emulate != "azure" and azure_only,
            "azure_deployments and azure_api_versions apply only to emulate='azure'",
        ),
    )
    for refused, message in refusals:
        if refused:
            raise ValueError(message)


def _check_faults(
    rates: dict[str, float],
    latency_s: float,
    hang_s: float,
    retry_after_s: float,
    rules: Sequence[Rule],
    inflated_usage_tokens: int,
) -> None:
    """Refuse unknown faults, rates outside [0, 1] or summing above 1, negative waits, rules
    that are not :class:`Rule` objects and negative inflated usage, in that order."""
    for name, rate in rates.items():
        _check_fault(name)
        if not 0.0 <= float(rate) <= 1.0:
            raise ValueError(f"fault rate for {name!r} must be within [0, 1], got {rate}")
    if sum(rates.values()) > 1.0 + 1e-9:
        raise ValueError(f"fault rates sum to {sum(rates.values())}, which exceeds 1")
    if latency_s < 0 or hang_s < 0 or retry_after_s < 0:
        raise ValueError("latency_s, hang_s and retry_after_s must be >= 0")
    for rule in rules:
        if not isinstance(rule, Rule):
            raise TypeError(f"rules must be Rule objects, got {type(rule).__name__}")
    if inflated_usage_tokens < 0:
        raise ValueError("inflated_usage_tokens must be >= 0")


def _recorded_headers(handler: _Handler) -> tuple[dict[str, str], tuple[str, ...]]:
    """The request's headers as recorded (lower-case names, repeats joined, credentials left
    out), and the names of the credential headers it presented."""
    headers: dict[str, str] = {}
    for name, value in handler.headers.items():
        key = name.lower()
        if key in _SECRET_HEADERS:
            continue
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    auth_headers = tuple(
        sorted(name.lower() for name in handler.headers if name.lower() in _SECRET_HEADERS)
    )
    return headers, auth_headers


def _json_object(raw: bytes) -> dict[str, Any] | None:
    """The request body as a JSON object, or None (empty, not JSON, or not an object)."""
    try:
        parsed = json.loads(raw.decode("utf-8")) if raw else None
    except (UnicodeDecodeError, json.JSONDecodeError):
        parsed = None
    return parsed if isinstance(parsed, dict) else None


def _invalid_request(body: dict[str, Any] | None, raw: bytes) -> str | None:
    """Why a real API would reject this chat request before doing any work, or None."""
    if body is None:
        return "The request body is not a JSON object." if raw else "The request body is empty."
    if not isinstance(body.get("messages"), list) or not body["messages"]:
        return "'messages' must be a non-empty list."
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "you must provide a model parameter"
    if body.get("stream"):
        return "streaming is not supported by the fake LLM; send stream=false."
    return None


class FakeLLM:
    """A scripted, local OpenAI-compatible chat-completions server.

    Use it as a context manager (or call :meth:`start` / :meth:`stop`)::

        with FakeLLM(rules=[Rule(Reply("fail", "too vague"), contains="refund")]) as llm:
            client = openai.AsyncOpenAI(base_url=llm.base_url, api_key="k", max_retries=0)
            ...
            assert llm.calls[0].body["response_format"] == {"type": "json_object"}

    See the module docstring for the decision order. ``fault_rates`` maps fault names to
    probabilities (each in ``[0, 1]``, summing to at most 1); draws come from
    ``random.Random(seed)``, so the same seed and request order give the same faults.
    ``retry_after_s`` is sent as ``Retry-After`` on 429s; a ``hang`` waits ``hang_s`` (or
    until :meth:`stop`) before answering. ``require_api_key`` makes every chat request
    present ``Authorization: Bearer <key>`` (``api-key: <key>`` when emulating Azure).
    ``inflated_usage_tokens`` is the usage an ``inflated_usage`` fault reports.

    Provider emulation (see the module docstring): ``emulate`` is one of :data:`PROVIDERS`;
    ``models`` are the model names served (``None``: any name is accepted; llama.cpp always
    ignores the name); ``json_mode`` is one of :data:`JSON_MODES`; ``azure_deployments`` and
    ``azure_api_versions`` are the deployments and api-versions an Azure emulation knows
    (``None``: any); an api-version older than :data:`AZURE_JSON_MODE_SINCE` refuses
    ``response_format`` as Azure does. ``report_usage=False`` leaves ``usage`` out of answers.
    ``litellm_database=False`` (with ``emulate="litellm"`` and ``require_api_key``) emulates a
    LiteLLM proxy with a master key and no database: a wrong key gets its HTTP 400 "No
    connected db." instead of a 401.
    """

    def __init__(
        self,
        *,
        rules: Sequence[Rule] = (),
        responder: Callable[[ChatRequest], Reply] | None = None,
        default: Reply = Reply(),
        latency_s: float = 0.0,
        fault_rates: Mapping[str, float] | None = None,
        seed: int = 0,
        retry_after_s: float = 1.0,
        hang_s: float = 30.0,
        require_api_key: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        inflated_usage_tokens: int = 1_000_000,
        emulate: str = "openai",
        models: Sequence[str] | None = None,
        json_mode: str = "honour",
        azure_deployments: Sequence[str] | None = None,
        azure_api_versions: Sequence[str] | None = None,
        report_usage: bool = True,
        litellm_database: bool = True,
    ) -> None:
        _check_provider(emulate, json_mode, require_api_key, azure_deployments, azure_api_versions)
        rates = dict(fault_rates or {})
        _check_faults(rates, latency_s, hang_s, retry_after_s, rules, inflated_usage_tokens)
        self.emulate = emulate
        self.models: tuple[str, ...] | None = None if models is None else tuple(models)
        self.json_mode = json_mode
        self.azure_deployments: tuple[str, ...] | None = (
            None if azure_deployments is None else tuple(azure_deployments)
        )
        self.azure_api_versions: tuple[str, ...] | None = (
            None if azure_api_versions is None else tuple(azure_api_versions)
        )
        self.report_usage = report_usage
        self.litellm_database = litellm_database
        self.rules: tuple[Rule, ...] = tuple(rules)
        self.responder = responder
        self.default = default
        self.latency_s = float(latency_s)
        self.fault_rates: dict[str, float] = {f: float(rates[f]) for f in FAULTS if f in rates}
        self.seed = seed
        self.retry_after_s = float(retry_after_s)
        self.hang_s = float(hang_s)
        self.require_api_key = require_api_key
        self.inflated_usage_tokens = int(inflated_usage_tokens)
        self.host = host
        self._requested_port = port

        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self._rule_uses = [0] * len(self.rules)
        self._next_index = 0
        self._calls: list[RecordedCall] = []
        self._stopping = threading.Event()
        self._server: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> FakeLLM:
        """Bind the port and serve from a background thread; returns ``self``."""
        if self._server is not None:
            raise RuntimeError("FakeLLM is already running")
        self._stopping = threading.Event()
        server = _HTTPServer((self.host, self._requested_port), self)
        thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fake-llm-{server.server_address[1]}",
            daemon=True,
        )
        self._server = server
        self._thread = thread
        thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop promptly, even while requests hang or sleep; idempotent."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stopping.set()  # wakes hangs and latency waits
        server.shutdown()
        server.close_live_connections()
        server.server_close()
        if thread is not None:
            thread.join(timeout)
        self._server = None
        self._thread = None

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self.base_url if self._server is not None else "stopped"
        return f"FakeLLM({where}, calls={self.call_count})"

    # -- introspection --------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The bound port once started (the requested port before that)."""
        if self._server is None:
            return self._requested_port
        return int(self._server.server_address[1])

    @property
    def root_url(self) -> str:
        """``http://<host>:<port>``."""
        if self._server is None:
            raise RuntimeError(
                "FakeLLM is not running; call start() or use it as a context manager"
            )
        host = self.host
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}"

    @property
    def base_url(self) -> str:
        """What a candidate's ``endpoint.base_url`` should be: ``http://<host>:<port>/v1``, for
        ``openai.OpenAI(base_url=...)``; the resource root ``http://<host>:<port>`` (Azure's
        ``azure_endpoint``) when emulating Azure."""
        return self.root_url if self.emulate == "azure" else f"{self.root_url}/v1"

    @property
    def running(self) -> bool:
        """Whether the server is currently serving."""
        return self._server is not None

    @property
    def calls(self) -> list[RecordedCall]:
        """A snapshot of every chat request so far, ordered by index."""
        with self._lock:
            return sorted(self._calls, key=lambda call: call.index)

    @property
    def call_count(self) -> int:
        """Number of chat requests recorded so far."""
        with self._lock:
            return len(self._calls)

    def reset(self) -> None:
        """Forget recorded calls, rule counters, the request counter and the fault RNG state."""
        with self._lock:
            self._calls.clear()
            self._rule_uses = [0] * len(self.rules)
            self._next_index = 0
            self._rng = random.Random(self.seed)

    # -- request handling (runs in handler threads) ---------------------------------------
    def _authorize(self, handler: _Handler) -> bool | None:
        if self.require_api_key is None:
            return None
        if self.emulate == "azure":  # Azure reads the key from the api-key header
            return handler.headers.get("api-key", "").strip() == self.require_api_key
        header = handler.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        return scheme.lower() == "bearer" and token.strip() == self.require_api_key

    def _refused_key(self) -> tuple[int, dict[str, Any]]:
        """Status and body for a wrong or missing key. A LiteLLM proxy with a master key and no
        database takes any other key for a virtual key it cannot look up: HTTP 400 "No
        connected db." (the proxy's own message, which names no key)."""
        if self.emulate == "litellm" and not self.litellm_database:
            return 400, _error_body("No connected db.", "no_db_connection", "400", "None")
        return 401, _unauthorized(self.emulate)

    def _is_chat_path(self, path: str) -> bool:
        """Whether ``path`` is the chat-completions path of the emulated provider."""
        if self.emulate == "azure":
            return _AZURE_CHAT.match(path) is not None
        return path == _CHAT_PATH or path in _EXTRA_CHAT_PATHS.get(self.emulate, ())

    def _emulation_error(
        self, handler: _Handler, path: str, body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]] | None:
        """The emulated provider's error for this (authorized, well-formed) request, if any."""
        model = str(body.get("model"))
        if self.emulate == "azure":
            match = _AZURE_CHAT.match(path)
            assert match is not None
            versions = parse_qs(urlsplit(handler.path).query).get("api-version", [])
            version = versions[0] if versions else None
            if version is None or (
                self.azure_api_versions is not None and version not in self.azure_api_versions
            ):
                return 404, {"error": {"code": "404", "message": "Resource not found"}}
            if (
                self.azure_deployments is not None
                and match["deployment"] not in self.azure_deployments
            ):
                message = (
                    "The API deployment for this resource does not exist. If you created the"
                    " deployment within the last 5 minutes, please wait a moment and try again."
                )
                return 404, {"error": {"code": "DeploymentNotFound", "message": message}}
            if "response_format" in body and version < AZURE_JSON_MODE_SINCE:
                return 400, {
                    "error": {
                        "code": "BadRequest",
                        "message": (
                            "response_format value as json_object is enabled only for api versions"
                            f" {AZURE_JSON_MODE_SINCE} and later"
                        ),
                    }
                }
        elif self.models is not None and self.emulate != "llamacpp" and model not in self.models:
            return _not_found_model(self.emulate, model)
        if "response_format" in body and self.json_mode == "reject":
            return 400, _no_json_mode(self.emulate, model)
        return None

    def _draw_fault(self) -> str | None:
        """One RNG draw (caller holds the lock); ``None`` when no fault is drawn."""
        if not self.fault_rates:
            return None
        draw = self._rng.random()
        cumulative = 0.0
        for fault in FAULTS:
            cumulative += self.fault_rates.get(fault, 0.0)
            if draw < cumulative:
                return fault
        return None

    def _match_rule(self, prompt: str) -> Reply | None:
        """First applicable rule's reply (caller holds the lock); consumes one use."""
        for i, rule in enumerate(self.rules):
            if rule.contains is not None and rule.contains not in prompt:
                continue
            if rule.times is not None and self._rule_uses[i] >= rule.times:
                continue
            self._rule_uses[i] += 1
            return rule.reply
        return None

    def _record(self, call: RecordedCall) -> None:
        with self._lock:
            self._calls.append(call)

    def _update_status(self, recorded: RecordedCall, status: int) -> None:
        """Replace ``recorded`` (by identity: indexes repeat after reset()) with a new status."""
        with self._lock:
            for i, call in enumerate(self._calls):
                if call is recorded:
                    self._calls[i] = dataclasses.replace(call, status=status)
                    return

    def _handle_chat(self, handler: _Handler, path: str, raw: bytes) -> None:
        headers, auth_headers = _recorded_headers(handler)
        authorized = self._authorize(handler)
        query = {k: v[0] for k, v in parse_qs(urlsplit(handler.path).query).items()}
        with self._lock:
            index = self._next_index
            self._next_index += 1
        body = _json_object(raw)

        def record(reply: Reply, status: int) -> RecordedCall:
            call = RecordedCall(
                index, path, body, headers, authorized, reply, status, query, auth_headers
            )
            self._record(call)
            return call

        # (1) authentication
        if authorized is False:
            status, payload = self._refused_key()
            reply = Reply(value=None, reason="missing or wrong API key", fault="http_401")
            record(reply, status)
            self._wait(reply)
            handler._send_json(status, payload)
            return
        # request validation (a real API rejects these before doing any work)
        problem = _invalid_request(body, raw)
        if problem is not None:
            record(Reply(value=None, reason=problem, fault="http_400"), 400)
            handler._send_json(400, _error_body(problem, "invalid_request_error"))
            return
        assert body is not None
        emulated = self._emulation_error(handler, path, body)
        if emulated is not None:
            status, payload = emulated
            record(Reply(value=None, reason=json.dumps(payload)[:300]), status)
            handler._send_json(status, payload)
            return
        messages = [m for m in body["messages"] if isinstance(m, dict)]
        prompt = "\n\n".join(_message_text(m.get("content")) for m in messages)
        request = ChatRequest(
            body=body, prompt=prompt, messages=messages, model=body["model"], index=index
        )
        self._respond(handler, request, self._choose(request), record)

    def _choose(self, request: ChatRequest) -> Reply:
        """(2) a random fault, (3) the first applicable rule, (4) the responder, (5) the
        default reply."""
        with self._lock:
            fault = self._draw_fault()
            chosen = (
                dataclasses.replace(self.default, fault=fault)
                if fault
                else self._match_rule(request.prompt)
            )
        if chosen is None and self.responder is not None:
            try:
                chosen = self.responder(request)
            except Exception as exc:  # a broken responder is a 500 the test can see
                chosen = Reply(
                    value=None,
                    reason=f"responder raised {type(exc).__name__}: {exc}",
                    fault="http_500",
                )
            if not isinstance(chosen, Reply):
                chosen = Reply(
                    value=None,
                    reason=f"responder returned {type(chosen).__name__}, not Reply",
                    fault="http_500",
                )
        return self.default if chosen is None else chosen

    def _wait(self, reply: Reply) -> None:
        delay = self.latency_s if reply.latency_s is None else reply.latency_s
        if delay > 0:
            self._stopping.wait(delay)

    def _respond(
        self,
        handler: _Handler,
        request: ChatRequest,
        reply: Reply,
        record: Callable[[Reply, int], RecordedCall],
    ) -> None:
        fault = reply.fault
        if fault == "http_401_echo":
            presented = handler.headers.get("Authorization") or "(none)"
            record(reply, 401)
            self._wait(reply)
            message = (
                f"Incorrect API key provided: {presented}. You can find your API key at"
                " https://platform.openai.com/account/api-keys."
            )
            handler._send_json(
                401, _error_body(message, "invalid_request_error", "invalid_api_key")
            )
            return

        if fault == "disconnect":
            record(reply, 0)
            self._wait(reply)
            handler.close_connection = True
            with contextlib.suppress(OSError):
                handler.connection.shutdown(socket.SHUT_RDWR)
            return

        if fault in _HTTP_FAULTS:
            status, type_, code, message = _HTTP_FAULTS[fault]
            if fault == "http_500" and reply.reason.startswith("responder "):
                message = reply.reason
            extra = (
                {"Retry-After": _format_seconds(self.retry_after_s)}
                if fault == "http_429"
                else None
            )
            record(reply, status)
            self._wait(reply)
            handler._send_json(status, _error_body(message, type_, code), extra_headers=extra)
            return

        if fault == "hang":
            pending = record(reply, 0)
            self._wait(reply)
            if self._stopping.wait(self.hang_s):
                handler.close_connection = True  # abandoned: stop() was called
                return
            self._update_status(pending, 200)
            handler._send_json(200, self._completion(request, self._content(reply), None))
            return

        record(reply, 200)
        self._wait(reply)
        if fault == "malformed_json":
            payload = self._completion(request, TRUNCATED_CONTENT, None)
        elif fault == "refusal":
            payload = self._completion(request, None, REFUSAL_TEXT)
        else:
            payload = self._completion(request, self._content(reply), None)
        if fault == "inflated_usage":
            n = self.inflated_usage_tokens
            payload["usage"] = {"prompt_tokens": n, "completion_tokens": n, "total_tokens": 2 * n}
        handler._send_json(
            200, payload, extra_headers={"x-request-id": f"req-fake-{request.index}"}
        )

    def _content(self, reply: Reply) -> str:
        """The assistant content of a normal answer: bare, or prose around a fenced JSON block
        when the server has no JSON mode (``json_mode`` ``reject`` or ``ignore``: nothing
        constrains the model's output)."""
        text = reply.render()
        if self.json_mode == "honour" or reply.content is not None:
            return text
        return f"{_PROSE_BEFORE}{text}{_PROSE_AFTER}"

    def _completion(
        self, request: ChatRequest, content: str | None, refusal: str | None
    ) -> dict[str, Any]:
        n = request.body.get("n", 1)
        n = n if isinstance(n, int) and not isinstance(n, bool) and n >= 1 else 1
        prompt_tokens = _tokens(request.prompt)
        completion_tokens = _tokens(content if content is not None else (refusal or "")) * n
        completion: dict[str, Any] = {
            "id": f"chatcmpl-fake-{request.index}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.model,
            "system_fingerprint": "fake-llm",
            "choices": [
                {
                    "index": i,
                    "message": {"role": "assistant", "content": content, "refusal": refusal},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
                for i in range(n)
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        if not self.report_usage:
            del completion["usage"]
        return completion
