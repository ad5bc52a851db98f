"""A real, local, OpenAI-compatible chat-completions HTTP server for tests and demos.

:class:`FakeLLM` answers ``POST /v1/chat/completions`` as the OpenAI API does (or as another
provider of :data:`PROVIDERS`), so the real ``openai`` client, instructor and Ragas run end to
end with no key and no network. Answers are scripted; faults are injectable.
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
"""Every injectable fault, in the order of random draws. ``http_401_echo`` echoes the
``Authorization`` header it got; ``disconnect`` closes without answering; ``inflated_usage``
reports ``inflated_usage_tokens`` of usage."""

MODEL_ID = "fake-judge"
REFUSAL_TEXT = "I'm sorry, I can't help with that."
TRUNCATED_CONTENT = '{"reason": "cut off mid'

_CHAT_PATH = "/v1/chat/completions"
_MODELS_PATH = "/v1/models"
_SECRET_HEADERS = frozenset({"authorization", "api-key", "proxy-authorization"})

PROVIDERS: tuple[str, ...] = ("openai", "azure", "vllm", "ollama", "llamacpp", "litellm")

JSON_MODES: tuple[str, ...] = ("honour", "reject", "ignore")
"""``response_format``: honoured (bare JSON), rejected (HTTP 400) or ignored (prose around a
fenced JSON block)."""

AZURE_JSON_MODE_SINCE = "2023-12-01-preview"  # older api-versions answer 400 to response_format

_AZURE_CHAT = re.compile(r"^/openai/deployments/(?P<deployment>[^/]+)/chat/completions$")
_EXTRA_CHAT_PATHS = {"llamacpp": ("/chat/completions",), "litellm": ("/chat/completions",)}
_AZURE_NOT_FOUND = {"error": {"code": "404", "message": "Resource not found"}}
_AZURE_NO_JSON_MODE = (
    "response_format value as json_object is enabled only for api versions"
    f" {AZURE_JSON_MODE_SINCE} and later"
)
_NO_DEPLOYMENT = (
    "The API deployment for this resource does not exist. If you created the deployment within"
    " the last 5 minutes, please wait a moment and try again."
)
_AZURE_BAD_KEY = (
    "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a"
    " valid key for an active subscription and use a correct regional API endpoint for your"
    " resource."
)
_PROSE_BEFORE = "Sure. Here is my assessment of the response.\n\n```json\n"
_PROSE_AFTER = "\n```\n\nLet me know if you need anything else."


def _not_found_model(provider: str, model: str) -> tuple[int, dict[str, Any]]:
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
        return 400, _litellm_error(
            f"/chat/completions: Invalid model name passed in model={model}. Call `/v1/models` to"
            " view available models for your key."
        )
    return 404, _error_body(
        f"The model `{model}` does not exist or you do not have access to it.",
        "invalid_request_error",
        "model_not_found",
    )


def _unauthorized(provider: str) -> dict[str, Any]:
    bodies: dict[str, dict[str, Any]] = {
        "azure": {"error": {"code": "401", "message": _AZURE_BAD_KEY}},
        "vllm": {"error": "Unauthorized"},
        "llamacpp": {
            "error": {"code": 401, "message": "Invalid API Key", "type": "authentication_error"}
        },
        "litellm": _litellm_error(
            "Authentication Error, Invalid proxy server token passed. Received API Key ="
            " sk-...****, Key Hash (Token) =[REDACTED]",
            "401",
            "auth_error",
        ),
    }
    default = _error_body("Incorrect API key provided.", "invalid_request_error", "invalid_api_key")
    return bodies.get(provider, default)


def _no_json_mode(provider: str, model: str) -> dict[str, Any]:
    if provider == "litellm":
        return _litellm_error(
            "litellm.UnsupportedParamsError: openai does not support parameters:"
            f" ['response_format'], for model={model}. To drop these, set"
            " `litellm.drop_params=True` or for proxy:\n\n`litellm_settings:\n drop_params:"
            " true`\n"
        )
    return _error_body(
        "Unrecognized request argument supplied: response_format",
        "invalid_request_error",
        None,
        "response_format",
    )


_INJECTED = " (injected by the fake LLM)."
_BAD_KEY = ("invalid_request_error", "invalid_api_key")
_HTTP_FAULTS: dict[str, tuple[int, str, str | None, str]] = {
    # fault: (status, error type, error code, message)
    "http_500": (500, "server_error", None, "The fake LLM injected an internal server error."),
    "http_429": (429, "rate_limit_error", "rate_limit_exceeded", "Rate limit reached" + _INJECTED),
    "http_400": (400, "invalid_request_error", None, "Invalid request" + _INJECTED),
    "http_401": (401, *_BAD_KEY, "Incorrect API key provided" + _INJECTED),
    "http_401_echo": (
        401,
        *_BAD_KEY,
        "Incorrect API key provided: {presented}. You can find your API key at"
        " https://platform.openai.com/account/api-keys.",
    ),
    "http_403": (
        403,
        "permission_denied",
        "forbidden",
        "You are not allowed to use this model" + _INJECTED,
    ),
}


def _check_fault(fault: str | None) -> None:
    if fault is not None and fault not in FAULTS:
        raise ValueError(f"unknown fault {fault!r}; expected one of {', '.join(FAULTS)}")


@dataclass(frozen=True)
class Reply:
    """What the fake LLM answers: ``{"reason", "value"}`` as bare JSON, or ``content`` verbatim;
    ``fault`` (one of :data:`FAULTS`) makes it that failure; ``latency_s`` overrides the server's.
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
        """The assistant content (without a content-changing fault)."""
        if self.content is not None:
            return self.content
        return json.dumps({"reason": self.reason, "value": self.value})


@dataclass(frozen=True)
class Rule:
    """A reply for prompts containing ``contains`` (None: any), for at most ``times`` requests
    (None: unlimited)."""

    reply: Reply
    contains: str | None = None
    times: int | None = None

    def __post_init__(self) -> None:
        if self.times is not None and self.times < 0:
            raise ValueError(f"times must be >= 0 or None, got {self.times}")


@dataclass(frozen=True)
class ChatRequest:
    """A chat request as a responder sees it: ``prompt`` is the messages' text joined by blank
    lines, ``index`` counts chat requests from 0 since start or :meth:`FakeLLM.reset`."""

    body: dict[str, Any]
    prompt: str
    messages: list[dict[str, Any]]
    model: str
    index: int


@dataclass(frozen=True)
class RecordedCall:
    """One chat request as the server saw and answered it. ``headers`` (lower-case names) never
    hold credentials: ``auth_headers`` names those presented. ``authorized`` is None when no key
    is required; ``status`` is 0 for a disconnect and a hang not (yet) answered.
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
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        texts = [p.get("text") if isinstance(p, dict) else p for p in content]
        return "\n\n".join(t for t in texts if isinstance(t, str))
    return str(content)


def _tokens(text: str) -> int:
    """One token per four characters, at least one."""
    return max(1, math.ceil(len(text) / 4))


def _error_body(
    message: str, type_: str, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def _litellm_error(message: str, code: str = "400", type_: str = "None") -> dict[str, Any]:
    return _error_body(message, type_, code, "None")  # LiteLLM's error: code and param as text


class _HTTPServer(ThreadingHTTPServer):
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
        return self.server_version

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
        pass

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The stdlib parser's errors (bad request line, unsupported method), as JSON."""
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
            # headers and body in one write (end_headers() would write the headers alone); an
            # unparseable request line (HTTP/0.9) gets no headers
            out = data
            if self.request_version != "HTTP/0.9":
                body = b"" if self.command == "HEAD" else data
                out, self._headers_buffer = b"".join(self._headers_buffer) + b"\r\n" + body, []
            self.wfile.write(out)
            self.wfile.flush()
        except OSError:  # client went away (e.g. it timed out during a hang)
            self.close_connection = True

    def _read_body(self) -> bytes | None:
        """The request body (``Content-Length``); None when it cannot be read."""
        if self.headers.get("Transfer-Encoding"):
            return None  # no client of this server sends chunked bodies
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
        path = self._path()
        self._drain()
        if path == _MODELS_PATH:
            served = self.server.fake.models or (MODEL_ID,)
            self._send_json(200, {"object": "list", "data": [_model_entry(m) for m in served]})
        elif path == f"{_MODELS_PATH}/{MODEL_ID}":
            self._send_json(200, _model_entry())
        elif self.server.fake._is_chat_path(path):
            self._not_allowed(path, "GET", "POST")
        else:
            self._unknown_path(path)

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
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
            self._not_allowed(path, "POST", "GET")
        elif self.server.fake.emulate == "azure":
            self._send_json(404, _AZURE_NOT_FOUND)
        else:
            self._unknown_path(path)

    def _not_allowed(self, path: str, method: str, use: str) -> None:
        message = f"Method {method} not allowed on {path}; use {use}."
        self._send_json(405, _error_body(message, "invalid_request_error"))

    def _unknown_path(self, path: str) -> None:
        message = f"Unknown path {path}"
        self._send_json(404, _error_body(message, "invalid_request_error", "unknown_url"))

    def _drain(self) -> None:
        """Consume a GET's body, keeping the keep-alive stream in sync."""
        has_body = bool(self.headers.get("Content-Length") or self.headers.get("Transfer-Encoding"))
        if has_body and self._read_body() is None:
            self.close_connection = True


def _model_entry(model: str = MODEL_ID) -> dict[str, Any]:
    return {"id": model, "object": "model", "created": 0, "owned_by": "workbench"}


def _recorded_headers(handler: _Handler) -> tuple[dict[str, str], tuple[str, ...]]:
    """The headers as recorded (lower-case, repeats joined, no credentials), and the names of
    the credential headers presented."""
    headers: dict[str, str] = {}
    auth: set[str] = set()
    for name, value in handler.headers.items():
        key = name.lower()
        if key in _SECRET_HEADERS:
            auth.add(key)
        else:
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return headers, tuple(sorted(auth))


def _json_object(raw: bytes) -> dict[str, Any] | None:
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
    """A scripted, local OpenAI-compatible chat-completions server (a context manager, or
    :meth:`start` / :meth:`stop`); every chat request is recorded in :attr:`calls` (no key).

    Per chat request: (1) a wrong or missing ``require_api_key`` (Bearer; ``api-key`` for
    Azure) gets 401 (LiteLLM with ``litellm_database=False``: 400 "No connected db."); then
    the emulated provider's error for an unknown deployment, api-version or ``models`` name or a
    rejected ``response_format``; (2) a fault drawn from ``fault_rates`` with
    ``random.Random(seed)`` (in :data:`FAULTS` order; on ``default``, no rule consumed);
    (3) the first matching :class:`Rule`; (4) ``responder``; (5) ``default``. ``latency_s`` is
    waited before answering; 429s send ``retry_after_s`` as Retry-After; a hang waits
    ``hang_s`` or until :meth:`stop`. ``json_mode`` is one of :data:`JSON_MODES`;
    ``report_usage=False`` leaves usage out.
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
        rates = dict(fault_rates or {})
        self.emulate, self.json_mode, self.require_api_key = emulate, json_mode, require_api_key
        self.models = None if models is None else tuple(models)
        self.azure_deployments = None if azure_deployments is None else tuple(azure_deployments)
        self.azure_api_versions = None if azure_api_versions is None else tuple(azure_api_versions)
        self.report_usage, self.litellm_database = report_usage, litellm_database
        self.rules, self.responder, self.default = tuple(rules), responder, default
        self.latency_s, self.retry_after_s = float(latency_s), float(retry_after_s)
        self.hang_s, self.inflated_usage_tokens = float(hang_s), int(inflated_usage_tokens)
        self._check_provider()
        self._check_faults(rates)
        self.fault_rates: dict[str, float] = {f: float(rates[f]) for f in FAULTS if f in rates}
        self.seed, self.host, self._requested_port = seed, host, port
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self._rule_uses = [0] * len(self.rules)
        self._next_index = 0
        self._calls: list[RecordedCall] = []
        self._stopping = threading.Event()
        self._server: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def _check_provider(self) -> None:
        for name, value, known in (
            ("provider", self.emulate, PROVIDERS),
            ("json_mode", self.json_mode, JSON_MODES),
        ):
            if value not in known:
                raise ValueError(f"unknown {name} {value!r}; expected one of {', '.join(known)}")
        if self.emulate == "ollama" and self.require_api_key is not None:
            raise ValueError(
                "Ollama ignores API keys; require_api_key cannot be combined with emulate='ollama'"
            )
        azure_only = self.azure_deployments is not None or self.azure_api_versions is not None
        if self.emulate != "azure" and azure_only:
            raise ValueError(
                "azure_deployments and azure_api_versions apply only to emulate='azure'"
            )

    def _check_faults(self, rates: dict[str, float]) -> None:
        for name, rate in rates.items():
            _check_fault(name)
            if not 0.0 <= float(rate) <= 1.0:
                raise ValueError(f"fault rate for {name!r} must be within [0, 1], got {rate}")
        if sum(rates.values()) > 1.0 + 1e-9:
            raise ValueError(f"fault rates sum to {sum(rates.values())}, which exceeds 1")
        if min(self.latency_s, self.hang_s, self.retry_after_s) < 0:
            raise ValueError("latency_s, hang_s and retry_after_s must be >= 0")
        for rule in self.rules:
            if not isinstance(rule, Rule):
                raise TypeError(f"rules must be Rule objects, got {type(rule).__name__}")
        if self.inflated_usage_tokens < 0:
            raise ValueError("inflated_usage_tokens must be >= 0")

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

    @property
    def port(self) -> int:
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
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def base_url(self) -> str:
        """A candidate's ``endpoint.base_url``: ``<root_url>/v1``, the root itself for Azure."""
        return self.root_url if self.emulate == "azure" else f"{self.root_url}/v1"

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def calls(self) -> list[RecordedCall]:
        """Every chat request so far, by index."""
        with self._lock:
            return sorted(self._calls, key=lambda call: call.index)

    @property
    def call_count(self) -> int:
        with self._lock:
            return len(self._calls)

    def reset(self) -> None:
        """Forget recorded calls, rule counters, the request counter and the fault RNG state."""
        with self._lock:
            self._calls.clear()
            self._rule_uses = [0] * len(self.rules)
            self._next_index = 0
            self._rng = random.Random(self.seed)

    def _authorize(self, handler: _Handler) -> bool | None:
        if self.require_api_key is None:
            return None
        if self.emulate == "azure":  # Azure reads the key from the api-key header
            return handler.headers.get("api-key", "").strip() == self.require_api_key
        header = handler.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        return scheme.lower() == "bearer" and token.strip() == self.require_api_key

    def _refused_key(self) -> tuple[int, dict[str, Any]]:
        """Status and body for a wrong or missing key (LiteLLM without a database: HTTP 400)."""
        if self.emulate == "litellm" and not self.litellm_database:
            return 400, _litellm_error("No connected db.", type_="no_db_connection")
        return 401, _unauthorized(self.emulate)

    def _is_chat_path(self, path: str) -> bool:
        if self.emulate == "azure":
            return _AZURE_CHAT.match(path) is not None
        return path == _CHAT_PATH or path in _EXTRA_CHAT_PATHS.get(self.emulate, ())

    def _emulation_error(
        self, handler: _Handler, path: str, body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]] | None:
        """The emulated provider's error for this authorized, well-formed request, if any."""
        model = str(body.get("model"))
        if self.emulate == "azure":
            match = _AZURE_CHAT.match(path)
            assert match is not None
            versions = parse_qs(urlsplit(handler.path).query).get("api-version", [])
            version = versions[0] if versions else None
            if version is None or (
                self.azure_api_versions is not None and version not in self.azure_api_versions
            ):
                return 404, _AZURE_NOT_FOUND
            if (
                self.azure_deployments is not None
                and match["deployment"] not in self.azure_deployments
            ):
                return 404, {"error": {"code": "DeploymentNotFound", "message": _NO_DEPLOYMENT}}
            if "response_format" in body and version < AZURE_JSON_MODE_SINCE:
                return 400, {"error": {"code": "BadRequest", "message": _AZURE_NO_JSON_MODE}}
        elif self.models is not None and self.emulate != "llamacpp" and model not in self.models:
            return _not_found_model(self.emulate, model)
        if "response_format" in body and self.json_mode == "reject":
            return 400, _no_json_mode(self.emulate, model)
        return None

    def _draw_fault(self) -> str | None:
        """One RNG draw (caller holds the lock)."""
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
        """The first applicable rule's reply, using it once (caller holds the lock)."""
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
        """Replace ``recorded`` (by identity: indexes repeat after reset())."""
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

        def record(reply: Reply, status: int, wait: bool = True) -> RecordedCall:
            """Record the call, then wait its latency (``wait``)."""
            call = RecordedCall(
                index, path, body, headers, authorized, reply, status, query, auth_headers
            )
            self._record(call)
            if wait:
                self._wait(reply)
            return call

        if authorized is False:
            status, payload = self._refused_key()
            record(Reply(value=None, reason="missing or wrong API key", fault="http_401"), status)
            handler._send_json(status, payload)
            return
        problem = _invalid_request(body, raw)
        if problem is not None:
            record(Reply(value=None, reason=problem, fault="http_400"), 400, wait=False)
            handler._send_json(400, _error_body(problem, "invalid_request_error"))
            return
        assert body is not None
        emulated = self._emulation_error(handler, path, body)
        if emulated is not None:
            status, payload = emulated
            record(Reply(value=None, reason=json.dumps(payload)[:300]), status, wait=False)
            handler._send_json(status, payload)
            return
        messages = [m for m in body["messages"] if isinstance(m, dict)]
        prompt = "\n\n".join(_message_text(m.get("content")) for m in messages)
        request = ChatRequest(body, prompt, messages, body["model"], index)
        self._respond(handler, request, self._choose(request), record)

    def _choose(self, request: ChatRequest) -> Reply:
        with self._lock:
            fault = self._draw_fault()
            chosen = (
                dataclasses.replace(self.default, fault=fault)
                if fault
                else self._match_rule(request.prompt)
            )
        if chosen is None and self.responder is not None:
            try:  # a broken responder is a 500 the test can see
                chosen = self.responder(request)
                what = type(chosen).__name__
                broken = None if isinstance(chosen, Reply) else f"returned {what}, not Reply"
            except Exception as exc:
                broken = f"raised {type(exc).__name__}: {exc}"
            if broken is not None:
                chosen = Reply(value=None, reason=f"responder {broken}", fault="http_500")
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
        record: Callable[[Reply, int], RecordedCall],  # records, then waits the reply's latency
    ) -> None:
        fault = reply.fault
        if fault == "disconnect":
            record(reply, 0)
            handler.close_connection = True
            with contextlib.suppress(OSError):
                handler.connection.shutdown(socket.SHUT_RDWR)
            return

        if fault in _HTTP_FAULTS:
            status, type_, code, message = _HTTP_FAULTS[fault]
            message = message.format(presented=handler.headers.get("Authorization") or "(none)")
            if fault == "http_500" and reply.reason.startswith("responder "):
                message = reply.reason
            extra = {"Retry-After": f"{self.retry_after_s:g}"} if fault == "http_429" else None
            record(reply, status)
            handler._send_json(status, _error_body(message, type_, code), extra_headers=extra)
            return

        if fault == "hang":
            pending = record(reply, 0)
            if self._stopping.wait(self.hang_s):
                handler.close_connection = True  # abandoned: stop() was called
                return
            self._update_status(pending, 200)
            handler._send_json(200, self._completion(request, self._content(reply), None))
            return

        record(reply, 200)
        special = {"malformed_json": (TRUNCATED_CONTENT, None), "refusal": (None, REFUSAL_TEXT)}
        payload = self._completion(request, *special.get(fault or "", (self._content(reply), None)))
        if fault == "inflated_usage":
            payload["usage"] = _usage(self.inflated_usage_tokens, self.inflated_usage_tokens)
        handler._send_json(200, payload, {"x-request-id": f"req-fake-{request.index}"})

    def _content(self, reply: Reply) -> str:
        """Bare JSON, or prose around a fenced block when the server has no JSON mode."""
        text = reply.render()
        if self.json_mode == "honour" or reply.content is not None:
            return text
        return f"{_PROSE_BEFORE}{text}{_PROSE_AFTER}"

    def _completion(
        self, request: ChatRequest, content: str | None, refusal: str | None
    ) -> dict[str, Any]:
        n = request.body.get("n", 1)
        n = n if isinstance(n, int) and not isinstance(n, bool) and n >= 1 else 1
        tokens_out = _tokens(content if content is not None else (refusal or "")) * n
        message = {"role": "assistant", "content": content, "refusal": refusal}
        completion: dict[str, Any] = {
            "id": f"chatcmpl-fake-{request.index}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.model,
            "system_fingerprint": "fake-llm",
            "choices": [
                {"index": i, "message": message, "logprobs": None, "finish_reason": "stop"}
                for i in range(n)
            ],
            "usage": _usage(_tokens(request.prompt), tokens_out),
        }
        if not self.report_usage:
            del completion["usage"]
        return completion


def _usage(tokens_in: int, tokens_out: int) -> dict[str, int]:
    return {
        "prompt_tokens": tokens_in,
        "completion_tokens": tokens_out,
        "total_tokens": tokens_in + tokens_out,
    }
