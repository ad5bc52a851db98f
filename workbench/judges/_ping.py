"""``workbench ping``: one real request to a candidate's endpoint before the first real run.

The judge is built as ``workbench run`` builds it and sent one harmless case
(:data:`PING_INPUT`); every failure is a Problem with a code of :data:`PING_CODES`. Nothing is
written.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field

from .._record import Record
from .._redact import redact
from ..errors import Problem, problem, refusal
from ._http_errors import MODEL_MISSING, endpoint_failure, status_text
from ._input import JudgeInput
from ._llm import (
    _CURRENT,
    Exchange,
    LLMJudge,
    _api_message,
    _assistant_message,
    has_reason,
    loose_json,
)
from ._registry import build_judge
from ._spec import load_spec

PING_SCHEMA_VERSION = 1

PING_INPUT = JudgeInput(
    user_input="What is the capital of France?",
    response="The capital of France is Paris.",
    grading_notes="A correct answer names Paris.",
    reference="Paris is the capital of France.",
    retrieved_contexts=["Paris is the capital and most populous city of France."],
)

PING_CODES: tuple[str, ...] = (
    "dns_failure",
    "connection_refused",
    "connection_failed",
    "timeout",
    "unauthorized",
    "forbidden",
    "proxy_config",
    "model_not_found",
    "endpoint_not_found",
    "no_json_mode",
    "rate_limited",
    "server_error",
    "bad_request",
    "refusal",
    "unparseable",
    "label_not_allowed",
    "missing_reason",
    "usage_missing",
)
"""Every problem code a ping can report (their meanings: docs/endpoints.md, "Problem codes")."""

_REFUSAL_FIX = "use a model that answers evaluation prompts, or review the prompt template"
_REASON_FIX = (
    "make the prompt ask for a short reason before the value (the JSON is {reason, value}); a"
    " verdict without a reason cannot be reviewed"
)

_JSON_MODE_REFUSED = re.compile(r"(?i)response_format|json_object|json mode")


class PingResult(Record):
    """What one ``workbench ping`` found (``workbench ping --json`` prints it)."""

    schema_version: int = PING_SCHEMA_VERSION
    """Ping result format version."""
    candidate: str
    """``name@version`` of the candidate pinged."""
    model: str | None
    """The spec's evaluator model name."""
    provider: str
    """``endpoint.provider``."""
    json_mode: str
    """``endpoint.json_mode`` the request used."""
    url: str | None
    """The URL the request was sent to (query included, credentials redacted)."""
    status: int | None
    """HTTP status of the answer; null when none came."""
    latency_s: float | None
    """Seconds from sending the request to the parsed answer (or the failure)."""
    json_mode_honoured: bool | None
    """Under ``json_object``: whether the answer was bare JSON; else null."""
    parsed: bool
    """Whether the answer parsed into ``{reason, value}``."""
    value: str | None
    """The label the model answered, when it parsed."""
    label_ok: bool
    """Whether ``value`` is one of the candidate's labels."""
    labels: list[str]
    """The candidate's labels."""
    answer_excerpt: str | None
    """The first 300 characters of the model's answer (redacted)."""
    tokens_in: int | None
    """Prompt tokens the endpoint reported."""
    tokens_out: int | None
    """Completion tokens the endpoint reported."""
    cost_usd: float | None
    """The call's cost; null when usage is missing under a non-zero price table."""
    ok: bool
    """True only when there is no problem."""
    problems: list[Problem] = Field(default_factory=list)
    """Every failure found, with its code (``PING_CODES``), message and fix."""


def ping(spec_path: str | Path) -> PingResult:
    """Send one request for :data:`PING_INPUT` with the candidate at ``spec_path``.

    Raises :class:`~workbench.errors.WorkbenchError` for an invalid spec, an unset key variable
    or a kind other than ``ragas-llm``; endpoint failures are reported, never raised. Inside a
    running event loop the request runs on a helper thread (``await aping(...)`` avoids it).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(aping(spec_path))
    with ThreadPoolExecutor(1, thread_name_prefix="workbench-ping") as pool:
        return pool.submit(asyncio.run, aping(spec_path)).result()


async def aping(spec_path: str | Path) -> PingResult:
    """:func:`ping` for async code."""
    spec, path = load_spec(spec_path)
    judge = build_judge(spec, path)
    if type(judge) is not LLMJudge:
        message = f"ping sends one ragas-llm request; {spec.label} is kind {spec.kind!r}"
        fix = "ping a ragas-llm candidate that uses the same endpoint, model and params"
        raise refusal("cannot ping this candidate", str(path), "ping_kind", message, fix)
    exchange = Exchange()
    token = _CURRENT.set(exchange)
    result: Any = None
    error: Exception | None = None
    t0 = time.perf_counter()
    try:
        llm = judge._llm()
        result = await asyncio.wait_for(
            judge._score(llm, PING_INPUT, None), timeout=spec.endpoint.timeout_s + 5
        )
    except Exception as exc:  # classified below; nothing escapes as a traceback
        error = exc
    finally:
        latency = time.perf_counter() - t0
        _CURRENT.reset(token)
        await judge.aclose()
    return _assess(judge, exchange, result, error, latency)


@dataclass
class _Findings:
    judge: LLMJudge
    exchange: Exchange
    url: str | None
    problems: list[Problem] = field(default_factory=list)
    honoured: bool | None = None
    parsed: bool = False
    value: str | None = None
    content: str | None = None

    def problem(self, code: str, message: str, fix: str) -> None:
        one_line = " ".join(redact(message, self.judge.secrets()).split())  # may span lines
        where = self.url or str(self.judge.spec.label)
        self.problems.append(problem(where, code, one_line, fix))

    def parsed_value(self, value: Any) -> None:
        self.parsed = True
        self.value = None if value is None else str(value)


def _assess(
    judge: LLMJudge, exchange: Exchange, result: Any, error: Exception | None, latency: float
) -> PingResult:
    import openai

    spec = judge.spec
    url = redact(exchange.urls[0], judge.secrets()) if exchange.urls else judge.endpoint_url
    found = _Findings(judge, exchange, url)
    last = exchange.responses[-1] if exchange.responses else None
    status = last["status"] if last else None
    json_asked = spec.endpoint.json_mode == "json_object"
    if isinstance(error, (openai.APITimeoutError, TimeoutError)):
        found.problem(
            "timeout",
            f"no answer from {url} within {spec.endpoint.timeout_s:g} s",
            "check that the server is up and not overloaded, or raise endpoint.timeout_s (large"
            " local models can take long for the first call)",
        )
    elif isinstance(error, openai.APIConnectionError):
        _connection_problem(error, url, _url_source(spec), found.problem)
    elif isinstance(error, openai.APIStatusError):
        _status_problem(error, spec, url or judge.endpoint_url, json_asked, found.problem)
        if error.status_code == 400 and json_asked:
            found.honoured = False if _JSON_MODE_REFUSED.search(status_text(error)) else None
    else:
        _answer(found, status, last["body"] if last else None, result, error)
    label_ok = found.value is not None and found.value in spec.labels
    reported = any(p.code == "label_not_allowed" for p in found.problems)
    if found.parsed and found.value is not None and not label_ok and not reported:
        found.problem(
            "label_not_allowed",
            f"the answer's value {found.value!r} is not one of {spec.labels}",
            "tell the model the exact labels in the prompt template, or correct labels: in the"
            " spec",
        )
    tokens_in, tokens_out = judge._usage(exchange)
    cost = _cost(found, status, tokens_in, tokens_out)
    content = found.content
    return PingResult(
        candidate=spec.label,
        model=spec.model,
        provider=spec.endpoint.provider,
        json_mode=spec.endpoint.json_mode,
        url=url,
        status=status,
        latency_s=round(latency, 4),
        json_mode_honoured=found.honoured if json_asked else None,
        parsed=found.parsed,
        value=found.value,
        label_ok=label_ok,
        labels=list(spec.labels),
        answer_excerpt=None if content is None else redact(content[:300], judge.secrets()),
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        cost_usd=None if cost is None else round(cost, 10),
        ok=not found.problems,
        problems=found.problems,
    )


def _answer(found: _Findings, status: int | None, body: Any, result: Any, error: Any) -> None:
    """No transport error: judge the answer's content."""
    spec = found.judge.spec
    message = _assistant_message(body) if status == 200 else None
    if status is not None and status != 200:
        found.problem("bad_request", f"HTTP {status} from {found.url}", "see the endpoint's logs")
    elif message is not None and message.get("refusal"):
        found.problem(
            "refusal",
            f"the model refused the fixed ping case: {str(message['refusal'])[:200]}",
            _REFUSAL_FIX,
        )
    elif message is not None:
        content = message.get("content")
        found.content = content if isinstance(content, str) else None
        _json_mode(found)
        if error is None and result is not None:
            found.parsed_value(result.value)
            if not has_reason(result.reason):
                found.problem(
                    "missing_reason",
                    "the answer has an empty reason: a run records such an answer as an"
                    " evaluator error (missing_reason)",
                    _REASON_FIX,
                )
        else:
            _unusable(found, error)
    elif error is not None:
        found.problem(
            "unparseable",
            f"no usable answer: {type(error).__name__}: {str(error)[:200]}",
            _unparseable_fix(spec, found.honoured),
        )


def _json_mode(found: _Findings) -> None:
    content = found.content
    if found.judge.spec.endpoint.json_mode != "json_object" or not (content and content.strip()):
        return
    found.honoured = content.lstrip().startswith("{")
    if not found.honoured:
        found.problem(
            "no_json_mode",
            f"{found.url} accepted response_format json_object but answered prose around the"
            f" JSON ({content.strip()[:80]!r}...): JSON mode is not honoured",
            "set endpoint.json_mode: md_json (the fallback: no response_format, the answer is"
            " asked for in a ```json block) in a new candidate version, or enable JSON mode on"
            " the server",
        )


def _unusable(found: _Findings, error: Any) -> None:
    kind, detail = found.judge._classify_output_failure(
        found.exchange, error or ValueError("no result")
    )
    if kind == "invalid_label":
        found.parsed_value(_value_in(found.content))
        found.problem(
            "label_not_allowed",
            f"the answer's value is not one of the labels: {detail}",
            "tell the model the exact labels in the prompt template (e.g. 'value: one of pass,"
            " fail'), or correct labels: in the spec",
        )
    elif kind == "refusal":
        found.problem("refusal", detail, _REFUSAL_FIX)
    elif kind == "missing_reason":
        found.parsed_value(_value_in(found.content))
        found.problem(
            "missing_reason",
            f"{detail}: a run records such an answer as an evaluator error (missing_reason)",
            _REASON_FIX,
        )
    else:
        found.problem(
            "unparseable",
            f"the answer is not the {{reason, value}} JSON the metric parses: {detail}",
            _unparseable_fix(found.judge.spec, found.honoured),
        )


def _cost(
    found: _Findings, status: int | None, tokens_in: int | None, tokens_out: int | None
) -> float | None:
    pricing = found.judge.spec.pricing
    if tokens_in is not None or tokens_out is not None:
        return pricing.cost(tokens_in, tokens_out)
    if status != 200:
        return None
    if pricing.input_per_million_usd > 0 or pricing.output_per_million_usd > 0:
        found.problem(
            "usage_missing",
            f"{found.url} answered without token usage: runs would record $0 for every call and"
            " --budget-usd could not hold",
            "enable usage reporting on the server (or the proxy), or use an endpoint that"
            " reports it",
        )
        return None
    return 0.0


def _connection_problem(error: BaseException, url: str | None, source: str, problem: Any) -> None:
    chain = _chain(error)
    host = _host(url)
    causes = [e for e in chain if isinstance(e, OSError)] or chain[1:2] or chain
    detail = f"{type(causes[-1]).__name__}: {str(causes[-1])[:160]}"
    if any(isinstance(e, socket.gaierror) for e in chain):
        problem(
            "dns_failure",
            f"the host {host!r} does not resolve (DNS: {detail})",
            f"check the host name in {source} and your network, VPN or DNS",
        )
    elif any(isinstance(e, ConnectionRefusedError) for e in chain):
        problem(
            "connection_refused",
            f"nothing accepts connections at {host!r} ({detail})",
            "start the server (vllm serve, ollama serve, llama-server, litellm ...) or correct the"
            f" port in {source}",
        )
    else:
        problem(
            "connection_failed",
            f"the connection to {url} failed before an answer ({detail})",
            f"check the scheme (http/https) and host in {source}, TLS, proxies, and that the server"
            " is healthy",
        )


_PLAIN_STATUS: dict[int, tuple[str, str, str]] = {
    404: (
        "endpoint_not_found",
        "no chat-completions API at this path ({said})",
        "check endpoint.base_url: OpenAI-compatible servers usually end in /v1 (Ollama:"
        " http://HOST:11434/v1); for Azure give the resource root and provider: azure",
    ),
    429: ("rate_limited", "{said}", "wait and ping again; check the quota of this key"),
    500: ("server_error", "{said}", "see the server's logs; ping again once it is healthy"),
    400: (
        "bad_request",
        "{said}",
        "check params: and the model name in the spec against what the server accepts",
    ),
}
"""HTTP status -> (code, message, fix) of plain statuses (500: any 5xx; 400: any other 4xx)."""


def _ping_code(status: int, text: str, json_asked: bool) -> str:
    """The problem code of an HTTP error, by its status and its body."""
    kind = endpoint_failure(status, text)
    if kind == "proxy":
        return "proxy_config"
    if status == 401 or (kind == "auth" and status != 403):
        return "unauthorized"
    if status == 400 and json_asked and _JSON_MODE_REFUSED.search(text):
        return "no_json_mode"
    if status in (400, 404) and MODEL_MISSING.search(text):
        return "model_not_found"
    if status == 403:
        return "forbidden"
    return (_PLAIN_STATUS.get(status) or _PLAIN_STATUS[500 if status >= 500 else 400])[0]


def _status_problem(error: Any, spec: Any, where: str, json_asked: bool, problem: Any) -> None:
    status, text, said = error.status_code, status_text(error), _api_message(error)
    code = _ping_code(status, text, json_asked)
    azure = spec.endpoint.provider == "azure"
    what = f"deployment {spec.endpoint.deployment!r}" if azure else f"model {spec.model!r}"
    plain = _PLAIN_STATUS.get(status) or _PLAIN_STATUS[500 if status >= 500 else 400]
    explained = {
        "proxy_config": (
            f"the proxy refused the call from its own configuration, before any model ({said})",
            _proxy_fix(spec),
        ),
        "unauthorized": (f"the key was refused ({said})", _key_fix(spec, where)),
        "forbidden": (
            said,
            f"the key in {_key_var(spec)} is valid but may not use this model or deployment:"
            " check its permissions, project or quota, or use a key that may",
        ),
        "no_json_mode": (
            f"the endpoint refuses response_format json_object ({said})",
            "set endpoint.json_mode: md_json (the fallback: no response_format, the answer is"
            " asked for in a ```json block) in a new candidate version, or enable JSON mode on the"
            f" server{_json_mode_hint(spec, text)}",
        ),
        "model_not_found": (
            f"the endpoint does not serve {what} ({said})",
            "correct model: in a new candidate version, to a name the server lists at GET"
            " <base_url>/models (Ollama: ollama pull <model>; LiteLLM: the model_name in its"
            " config; Azure: endpoint.deployment, the deployment name, not the model name)",
        ),
    }
    message, fix = explained.get(code, (plain[1].format(said=said), plain[2]))
    problem(code, f"HTTP {status} from {where}: {message}", fix)


def _key_var(spec: Any) -> str:
    name = spec.endpoint.api_key_env
    return f"${name}" if name else "the key (endpoint.api_key_env names no variable)"


def _proxy_fix(spec: Any) -> str:
    return (
        f"not the model name or params: the proxy itself refused. A LiteLLM proxy with a master"
        f' key and no database takes any other key for a virtual key it cannot check ("No'
        f" connected db\"): check that {_key_var(spec)} holds the proxy's master key or a key"
        " it issued; otherwise the proxy's admin must fix its config (database_url for virtual"
        " keys, the key's or team's budget, the team's models)"
    )


def _key_fix(spec: Any, where: str) -> str:
    fix = f"check that {_key_var(spec)} holds a valid key for this endpoint"
    if spec.endpoint.provider == "azure":
        return fix + " (Azure takes the resource's key, sent as the api-key header)"
    if ".openai.azure.com" in where or "/openai/deployments/" in where:
        return fix + (
            "; this looks like Azure OpenAI, which reads the key from an api-key header: set"
            " endpoint.provider: azure with deployment and api_version"
        )
    return fix


def _json_mode_hint(spec: Any, text: str) -> str:
    if spec.endpoint.provider == "azure":
        return " (Azure: api-version 2023-12-01-preview or later, on a model that supports it)"
    if "litellm" in text.lower():
        return (
            " (LiteLLM: route to a model that supports response_format; drop_params: true only"
            " hides the problem)"
        )
    return ""


def _url_source(spec: Any) -> str:
    name = spec.endpoint.base_url_env
    if name and os.environ.get(name, "").strip():
        return f"${name} (the variable named by endpoint.base_url_env)"
    return "endpoint.base_url"


def _unparseable_fix(spec: Any, honoured: bool | None) -> str:
    if spec.endpoint.json_mode == "json_object" and honoured is False:
        return (
            "set endpoint.json_mode: md_json in a new candidate version, or enable JSON mode on the"
            " server"
        )
    return (
        "make the prompt ask for JSON with a reason and a value from the labels; raise"
        " params.max_tokens if the answer was cut off; try a stronger model"
    )


def _value_in(content: str | None) -> Any:
    parsed = loose_json(content)
    return parsed.get("value") if isinstance(parsed, dict) else None


def _chain(error: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _host(url: str | None) -> str:
    from urllib.parse import urlsplit

    if not url:
        return "?"
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port}" if parts.port else (parts.hostname or "?")
