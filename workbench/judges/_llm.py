"""``ragas-llm``: a Ragas ``DiscreteMetric`` on any OpenAI-compatible endpoint via ``llm_factory``.

httpx event hooks capture every request and response on the wire (usage, Retry-After). The
client never retries (the engine does). Provider errors, timeouts, unusable answers and refusals
become evaluator errors with a kind, redacted, never verdicts; failures that condemn the
endpoint (:mod:`._http_errors`) are marked for the circuit breaker.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import math
import os
import string
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from .._io import read_bounded, sha256_text
from .._redact import find_secrets, public_url, redact
from ..errors import Problem, WorkbenchError, problem
from ..results import has_reason as has_reason  # the judges face re-exports it
from ._http_errors import endpoint_failure, status_text
from ._input import JUDGE_VISIBLE_FIELDS, JudgeInput
from ._prepared import Preparation, prepare
from ._registry import CaseRef, Verdict, make_identity
from ._spec import SECRET_FIX, CandidateSpec
from ._tokens import prompt_tokens

PLACEHOLDERS = frozenset(JUDGE_VISIBLE_FIELDS.values())

_DEFAULT_MAX_TOKENS = 1024  # Ragas' InstructorModelArgs default
CONNECTIONS_PER_CLIENT = 8
RENDERED_KEPT = 4096  # rendered prompts kept per judge (cache key, pricing and call share one)


@dataclass
class _Rendered:
    judge_input: Any
    prompt: str
    tokens: tuple[int, str] | None = None


@dataclass
class Exchange:
    """Everything one evaluate() call sent and received over HTTP."""

    requests: list[Any] = field(default_factory=list)
    responses: list[dict[str, Any]] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)


_CURRENT: contextvars.ContextVar[Exchange | None] = contextvars.ContextVar(
    "workbench_llm_exchange", default=None
)


async def _on_request(request: Any) -> None:
    exchange = _CURRENT.get()
    if exchange is None:
        return
    exchange.urls.append(str(request.url))
    try:
        exchange.requests.append(json.loads(request.content))
    except (ValueError, UnicodeDecodeError):
        exchange.requests.append(
            {"unparsed_body_sha256": sha256_text(request.content.decode("utf-8", "replace"))}
        )


async def _on_response(response: Any) -> None:
    exchange = _CURRENT.get()
    if exchange is None:
        return
    await response.aread()
    try:
        body = response.json()
    except ValueError:
        body = None
    exchange.responses.append(
        {
            "status": response.status_code,
            "retry_after": response.headers.get("retry-after"),
            "body": body,
        }
    )


_PROBLEMS: dict[str, tuple[str, str]] = {
    "prompt_file_outside": (
        "prompt_file {prompt_file!r} resolves to {target}, outside the spec's folder {folder}",
        "keep the prompt file in the spec's folder or below it (no '..', absolute paths or"
        " symlinks out), so the spec and its prompt are versioned together",
    ),
    "prompt_file_missing": (
        "prompt_file {prompt_file!r} does not exist",
        "create the prompt file next to the spec or correct the path",
    ),
    "base_url_env_invalid": (
        "endpoint.base_url_env: {exc}",
        "export {name}=http://HOST:PORT/v1, or unset it to use endpoint.base_url",
    ),
    "base_url_unset": (
        "endpoint.base_url_env names ${name}, which is not set, and the spec has no base_url:"
        " there is no endpoint to call",
        "export {name}=http://HOST:PORT/v1 (the demo's local model sets it: `workbench fake-llm"
        " --port 0 --export {name} -- COMMAND`, or serve_demo_llm() / serve_ranking_llm() /"
        " workbench.demo.noise.serve() in a notebook)",
    ),
    "model_missing": (
        "a ragas-llm candidate needs a model",
        "set model: to the evaluator model name the endpoint serves",
    ),
    "prompt_missing": (
        "give exactly one of prompt (inline) or prompt_file",
        "put the judge prompt template inline under prompt:, or in a file named by prompt_file:",
    ),
    "prompt_invalid": (
        "the prompt template is not a valid format string ({exc})",
        "double literal braces: {{{{ and }}}}",
    ),
    "prompt_placeholder_syntax": (
        "the prompt uses {malformed}: only bare {{name}} placeholders are allowed (no format"
        " specs, conversions, attribute or index access)",
        "write placeholders as {{response}}, {{user_input}} ...; double literal braces: {{{{ and"
        " }}}}",
    ),
    "prompt_placeholder": (
        "the prompt uses {unknown}, which are not judge-visible fields",
        "use only {allowed}; labels and reviews can never reach a prompt",
    ),
    "prompt_no_response": (
        "the prompt never shows {{{required}}}, the thing under judgment",
        "add {{{required}}} to the prompt template",
    ),
    "omitted_fields_unknown": (
        "omitted_fields names {unknown}, which are not judge-visible fields",
        "name only {allowed}",
    ),
    "omitted_fields_shown": (
        "omitted_fields names {shown}, which the prompt shows",
        "drop {shown} from omitted_fields (it lists fields the prompt deliberately leaves out)",
    ),
    "api_key_missing": (
        "the environment variable {name} is not set",
        "export {name}=<your key> (keys are read from the environment and never written to any"
        " file)",
    ),
}
"""code -> (message, fix) of the problems a ragas-llm spec can have, ``str.format`` templates."""


def _problem(loc: str, code: str, **fields: Any) -> Problem:
    message, fix = _PROBLEMS[code]
    return problem(loc, code, message.format(**fields), fix.format(**fields))


def _placeholders(template: str) -> tuple[list[str], list[str]]:
    """``(bare names, malformed placeholders)`` of a ``str.format`` template: only ``{name}`` is
    allowed (no specs, conversions, attribute, index or positional fields)."""
    names: list[str] = []
    malformed: list[str] = []
    for _, name, spec, conversion in string.Formatter().parse(template):
        if name is not None and name.isidentifier() and not spec and conversion is None:
            names.append(name)
        elif name is not None:
            conversion = f"!{conversion}" if conversion else ""
            malformed.append(f"{{{name}{conversion}{f':{spec}' if spec else ''}}}")
    return names, list(dict.fromkeys(malformed))


def _read_prompt_file(spec_path: Path, prompt_file: str) -> tuple[str, list[Problem]]:
    """The prompt template named by ``prompt_file``, inside the spec's folder tree."""
    loc, folder = str(spec_path), spec_path.parent.resolve()
    target = (spec_path.parent / prompt_file).resolve()  # follows symlinks and '..'
    if not target.is_relative_to(folder):
        fields = {"prompt_file": prompt_file, "target": target, "folder": folder}
        return "", [_problem(loc, "prompt_file_outside", **fields)]
    if not target.exists():
        return "", [_problem(loc, "prompt_file_missing", prompt_file=prompt_file)]
    try:
        data = read_bounded(target, fix="point prompt_file at a text file")
    except WorkbenchError as exc:
        return "", list(exc.problems)
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError as exc:
        message = f"the prompt file is not valid UTF-8 (byte {exc.start})"
        return "", [
            problem(str(target), "prompt_encoding", message, "save the prompt file as UTF-8")
        ]


@functools.cache
def _load_client_stack() -> None:
    """Load the client stack (instructor's lazy imports) once per process, not in a run's first
    call. The client is never used and loads no CA bundle."""
    import httpx
    import openai
    from ragas.llms import llm_factory

    llm_factory(
        "warm-up",
        provider="openai",
        client=openai.AsyncOpenAI(
            api_key="unused",
            base_url="http://127.0.0.1:9/v1",
            http_client=httpx.AsyncClient(verify=False),
        ),
    )


def default_tls_context() -> Any:
    """httpx's default TLS context, loaded once per value of ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``
    (a CA bundle load costs ~20 ms per client otherwise)."""
    return _tls_context(os.environ.get("SSL_CERT_FILE", ""), os.environ.get("SSL_CERT_DIR", ""))


@functools.cache
def _tls_context(cert_file: str, cert_dir: str) -> Any:
    import httpx

    return httpx.create_ssl_context()


def _base_url(spec: CandidateSpec, loc: str) -> tuple[str | None, list[Problem]]:
    """The base URL the judge calls, or why there is none (a named URL variable that is unset and
    no base_url never falls back to the client's default)."""
    name = spec.endpoint.base_url_env
    try:
        url = spec.endpoint.resolved_base_url()
    except ValueError as exc:
        return None, [_problem(loc, "base_url_env_invalid", exc=exc, name=name)]
    if not name or url is not None:
        return url, []
    return None, [_problem(loc, "base_url_unset", name=name)]


class LLMJudge:
    """A Ragas ``DiscreteMetric`` evaluated by an OpenAI-compatible model.

    Subclasses for other Ragas LLM metrics override :attr:`allowed_placeholders`,
    :meth:`_build_metric`, :meth:`_score`, :meth:`_interpret` and :meth:`render`.
    """

    allowed_placeholders: frozenset[str] = PLACEHOLDERS
    required_placeholder: str | None = "response"
    needs_prompt: bool = True

    def __init__(self, spec: CandidateSpec, spec_path: Path) -> None:
        self.spec = spec
        loc = str(spec_path)
        template, used, problems = self._template(spec, spec_path)
        self.api_key_env = spec.endpoint.api_key_env
        self.base_url, url_problems = _base_url(spec, loc)
        # as run.json and messages name it: no query string or user information
        default = os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        self.endpoint_url: str = public_url(_recordable_url(self.base_url or default)) or ""
        problems += url_problems
        if self.api_key_env and not os.environ.get(self.api_key_env):
            problems.append(_problem(loc, "api_key_missing", name=self.api_key_env))
        problems += self._secret_problems(spec, template, loc)
        if problems:
            raise WorkbenchError("invalid candidate", problems)
        self.template = template
        self.placeholders = set(used)
        self.identity = make_identity(spec, sha256_text(template))
        _load_client_stack()
        self.metric = self._build_metric(spec, template)
        self._client_loop: tuple[Any, list[Any]] | None = None
        self._rendered: OrderedDict[int, _Rendered] = OrderedDict()
        self._prepared: dict[int, tuple[Any, Preparation]] = {}
        self._prepare_lock: tuple[Any, asyncio.Lock] | None = None
        self._shards = 1
        self._next_shard = 0

    def _template(
        self, spec: CandidateSpec, spec_path: Path
    ) -> tuple[str, list[str], list[Problem]]:
        """The prompt template, its placeholders, and every problem with model and prompt."""
        loc = str(spec_path)
        problems = [] if spec.model else [_problem(loc, "model_missing")]
        if self.needs_prompt and bool(spec.prompt) == bool(spec.prompt_file):
            problems.append(_problem(loc, "prompt_missing"))
        template = spec.prompt or ""
        if spec.prompt_file:
            template, file_problems = _read_prompt_file(spec_path, spec.prompt_file)
            problems += file_problems
        try:
            used, malformed = _placeholders(template)
        except ValueError as exc:
            return template, [], [*problems, _problem(loc, "prompt_invalid", exc=exc)]
        return template, used, problems + self._placeholder_problems(template, used, malformed, loc)

    def _placeholder_problems(
        self, template: str, used: list[str], malformed: list[str], loc: str
    ) -> list[Problem]:
        problems = []
        if malformed:
            problems.append(
                _problem(loc, "prompt_placeholder_syntax", malformed=", ".join(malformed))
            )
        unknown = sorted(set(used) - self.allowed_placeholders)
        if unknown:
            allowed = ", ".join(sorted(self.allowed_placeholders))
            problems.append(_problem(loc, "prompt_placeholder", unknown=unknown, allowed=allowed))
        unknown = sorted(set(self.spec.omitted_fields) - PLACEHOLDERS)
        if unknown:
            allowed = ", ".join(sorted(PLACEHOLDERS))
            problems.append(
                _problem(loc, "omitted_fields_unknown", unknown=unknown, allowed=allowed)
            )
        shown = sorted(set(self.spec.omitted_fields) & set(used))
        if shown:
            problems.append(_problem(loc, "omitted_fields_shown", shown=", ".join(shown)))
        required = self.required_placeholder
        if required and required not in used and not problems and template:
            problems.append(_problem(loc, "prompt_no_response", required=required))
        return problems

    def shown_fields(self) -> frozenset[str] | None:
        """The judge arguments the prompt template shows; None for a kind whose metric builds its
        own prompt (no template) or fills it from other fields (rankings, noise pairs)."""
        if not self.template or self.allowed_placeholders != PLACEHOLDERS:
            return None
        return frozenset(self.placeholders)

    def _secret_problems(self, spec: CandidateSpec, template: str, loc: str) -> list[Problem]:
        """Secrets in the prompt file, or the key's own value anywhere in the spec."""
        found = (
            [("prompt_file", what) for _, what in find_secrets({"prompt": template})]
            if spec.prompt_file
            else []
        )
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key and len(key) >= 8:
            for field, value in _strings(spec.model_dump(mode="json")):
                if key in value:
                    found.append((field, f"the value of ${self.api_key_env}"))
            if key in template and spec.prompt_file:
                found.append(("prompt_file", f"the value of ${self.api_key_env}"))
        return [
            problem(loc, "secret_in_spec", f"{field} holds {what}", SECRET_FIX)
            for field, what in found
        ]

    def secrets(self) -> list[str]:
        """Values that must never be recorded (the API key)."""
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        return [key] if key else []

    def _build_metric(self, spec: CandidateSpec, template: str) -> Any:
        from ragas.metrics import DiscreteMetric

        return DiscreteMetric(name=spec.name, allowed_values=list(spec.labels), prompt=template)

    def _score(self, llm: Any, judge_input: Any, ref: CaseRef | None) -> Any:
        """The awaitable that asks the model (one Ragas ``ascore``)."""
        return self._ascore(llm, self.metric, judge_input)

    async def _ascore(self, llm: Any, metric: Any, judge_input: Any) -> Any:
        """``metric.ascore`` through the request prepared once for ``metric`` (:mod:`._prepared`),
        or Ragas' own when preparing did not match it."""
        preparation = await self._preparation(metric)
        if preparation.request is None:
            return await metric.ascore(llm=llm, **self._arguments(judge_input))
        return await preparation.request.ascore(llm.client.client, self._prompt(judge_input))

    async def _preparation(self, metric: Any) -> Preparation:
        found = self._prepared.get(id(metric))
        if found is not None and found[0] is metric:
            return found[1]
        loop = asyncio.get_running_loop()
        if self._prepare_lock is None or self._prepare_lock[0] is not loop:
            self._prepare_lock = (loop, asyncio.Lock())
        async with self._prepare_lock[1]:
            found = self._prepared.get(id(metric))
            if found is None or found[0] is not metric:
                found = self._prepared[id(metric)] = (metric, await prepare(metric, self._new_llm))
        return found[1]

    def _interpret(
        self, result: Any, exchange: Exchange, judge_input: Any, ref: CaseRef | None
    ) -> Verdict:
        value = None if result.value is None else str(result.value)
        if value is None or value not in self.spec.labels:
            return self._failed(
                exchange, "invalid_label", f"value {result.value!r} outside {self.spec.labels}"
            )
        if not has_reason(result.reason):
            return self._missing_reason(exchange, value)
        return self._verdict(exchange, value=value, reason=result.reason)

    def _missing_reason(self, exchange: Exchange, value: Any) -> Verdict:
        """A verdict without a reason cannot be reviewed: a retryable evaluator error."""
        return self._failed(exchange, *_no_reason(value), retryable=True)

    def _arguments(self, judge_input: JudgeInput) -> dict[str, str]:
        raw = judge_input.model_dump()
        args: dict[str, str] = {}
        for name in self.placeholders:
            value = raw.get(name)
            if isinstance(value, list):
                value = "\n\n".join(f"[{i}] {text}" for i, text in enumerate(value, start=1))
            args[name] = "" if value is None else str(value)
        return args

    def _rendering(self, judge_input: Any) -> _Rendered:
        """``judge_input``'s prompt as Ragas formats it, kept by identity for the last
        :data:`RENDERED_KEPT` inputs (the entry holds the input, so its id is not reused)."""
        key = id(judge_input)
        found = self._rendered.get(key)
        if found is not None and found.judge_input is judge_input:
            return found
        found = _Rendered(judge_input, self.metric.prompt.format(**self._arguments(judge_input)))
        self._rendered[key] = found
        if len(self._rendered) > RENDERED_KEPT:
            self._rendered.popitem(last=False)
        return found

    def _prompt(self, judge_input: Any) -> str:
        return self._rendering(judge_input).prompt

    def render(self, judge_input: JudgeInput, ref: CaseRef | None = None) -> dict[str, Any]:
        """The planned request: model, parameters and the prompt exactly as Ragas formats it."""
        return {
            "model": self.spec.model,
            "params": self.spec.params,
            "prompt": self._prompt(judge_input),
        }

    def output_cap(self) -> int:
        """Output tokens one call may produce: ``params.max_tokens`` (Ragas' default 1024)."""
        return int(self.spec.params.get("max_tokens", _DEFAULT_MAX_TOKENS))

    def estimate_usage(self, judge_input: Any) -> tuple[int, int, str] | None:
        """``(input tokens, output cap, method)`` of one call (the prompt counted offline); None for
        a subclass that overrides :meth:`estimate_cost`."""
        if type(self).estimate_cost is not LLMJudge.estimate_cost:
            return None
        rendered = self._rendering(judge_input)
        if rendered.tokens is None:
            rendered.tokens = prompt_tokens(rendered.prompt, self.spec.model)
        tokens_in, method = rendered.tokens
        return tokens_in, self.output_cap(), method

    def estimate_cost(self, judge_input: JudgeInput) -> float:
        """The most one call should cost: the prompt estimate and the full output cap."""
        usage = self.estimate_usage(judge_input)
        assert usage is not None
        return self.spec.pricing.cost(usage[0], usage[1])

    def prepare(self, concurrency: int) -> None:
        """Size the HTTP clients for ``concurrency`` calls: round-robin shards of at most
        :data:`CONNECTIONS_PER_CLIENT` connections (httpx pool bookkeeping grows with both)."""
        self._shards = max(1, math.ceil(concurrency / CONNECTIONS_PER_CLIENT))
        self._client_loop = None

    def _llm(self) -> Any:
        """The next client shard, created per event loop (httpx pools cannot cross loops)."""
        loop = asyncio.get_running_loop()
        if self._client_loop is None or self._client_loop[0] is not loop:
            self._client_loop = (loop, [self._new_llm() for _ in range(self._shards)])
        shards = self._client_loop[1]
        self._next_shard = (self._next_shard + 1) % len(shards)
        return shards[self._next_shard]

    def _new_llm(self, http_client: Any = None) -> Any:
        """A Ragas LLM over a new OpenAI client, on ``http_client`` or a new capturing pool."""
        import httpx
        from openai import AsyncOpenAI
        from ragas.llms import llm_factory

        from ._transport import AiohttpTransport

        if http_client is None:
            http_client = httpx.AsyncClient(
                event_hooks={"request": [_on_request], "response": [_on_response]},
                transport=AiohttpTransport(CONNECTIONS_PER_CLIENT, default_tls_context()),
                timeout=self.spec.endpoint.timeout_s,
                verify=default_tls_context(),  # for proxies named in the environment
            )
        api_key = os.environ.get(self.api_key_env, "") if self.api_key_env else "unused"
        endpoint = self.spec.endpoint
        common: dict[str, Any] = {"api_key": api_key, "max_retries": 0, "http_client": http_client}
        client: AsyncOpenAI
        if endpoint.provider == "azure":
            from openai import AsyncAzureOpenAI

            client = AsyncAzureOpenAI(
                azure_endpoint=cast(str, self.base_url),
                azure_deployment=endpoint.deployment,
                api_version=endpoint.api_version,
                timeout=endpoint.timeout_s,
                **common,
            )
        else:
            client = AsyncOpenAI(base_url=self.base_url, timeout=endpoint.timeout_s, **common)
        # one instructor attempt per call: the engine retries, backs off and records
        params = {**self.spec.params, "max_retries": 1}
        llm: Any = llm_factory(self.spec.model or "", provider="openai", client=client, **params)
        if endpoint.json_mode == "md_json":
            import instructor  # no response_format: the answer comes in a ```json block

            llm.client = instructor.from_openai(client, mode=instructor.Mode.MD_JSON)
        return llm

    async def aclose(self) -> None:
        """Close the HTTP clients of the current event loop."""
        if self._client_loop is not None and self._client_loop[0] is asyncio.get_running_loop():
            for llm in self._client_loop[1]:
                await llm.client.client.close()
        self._client_loop = None

    async def evaluate(self, judge_input: Any, ref: CaseRef | None = None) -> Verdict:
        token = _CURRENT.set(exchange := Exchange())
        try:
            return await self._call(judge_input, ref, exchange)
        finally:
            _CURRENT.reset(token)

    guard_calls: int = 2  # sequential model calls one score may make (the guard timeout)

    async def _call(self, judge_input: Any, ref: CaseRef | None, exchange: Exchange) -> Verdict:
        import openai

        url = self.endpoint_url
        failed: tuple[str, str, bool, str | None]
        try:
            llm = self._llm()
            # a guard above the HTTP timeout, for anything that hangs outside httpx
            async with asyncio.timeout(self.spec.endpoint.timeout_s * self.guard_calls + 5):
                result = await self._score(llm, judge_input, ref)
        except openai.RateLimitError as exc:
            failed = ("rate_limited", f"HTTP 429 from {url}: {_api_message(exc)}", True, None)
        except openai.APITimeoutError:
            limit = self.spec.endpoint.timeout_s
            failed = ("timeout", f"no response from {url} within {limit:g} s", True, None)
        except openai.APIConnectionError as exc:
            message = f"connection to {url} failed: {_cause(exc)}"
            failed = ("provider_error", message, True, "connection")
        except openai.APIStatusError as exc:
            status = exc.status_code
            message = f"HTTP {status} from {url}: {_api_message(exc)}"
            broke = endpoint_failure(status, status_text(exc))
            failed = ("provider_error", message, status >= 500 or status in (408, 409), broke)
        except TimeoutError:
            failed = ("timeout", "the call did not finish within the guard timeout", True, None)
        except Exception as exc:  # instructor / pydantic parse failures and anything unexpected
            kind, message = self._classify_output_failure(exchange, exc)
            failed = (kind, message, kind in RETRYABLE_ANSWER_KINDS, None)
        else:
            return self._interpret(result, exchange, judge_input, ref)
        return self._failed(exchange, *failed[:2], retryable=failed[2], endpoint_failure=failed[3])

    def _answer_failure(
        self, exchange: Exchange, exc: Exception
    ) -> tuple[tuple[str, str] | None, str]:
        """``(failure, content)`` of the last answer: no answer, a refusal or no content."""
        body = exchange.responses[-1]["body"] if exchange.responses else None
        message = _assistant_message(body)
        if message is None:
            return ("judge_exception", f"{type(exc).__name__}: {str(exc)[:300]}"), ""
        if message.get("refusal"):
            return ("refusal", f"the model refused: {str(message['refusal'])[:300]}"), ""
        content = message.get("content")
        if not isinstance(content, str) or not content.strip():
            return ("unparseable", "the model returned no content"), ""
        return None, content

    def _classify_output_failure(self, exchange: Exchange, exc: Exception) -> tuple[str, str]:
        failure, content = self._answer_failure(exchange, exc)
        if failure is not None:
            return failure
        parsed = loose_json(content)
        if parsed is None:
            return "unparseable", f"not JSON: {content[:200]!r}"
        if isinstance(parsed, dict) and "value" in parsed:
            if parsed["value"] not in self.spec.labels:
                return "invalid_label", f"value {parsed['value']!r} outside {self.spec.labels}"
            if not has_reason(parsed.get("reason")):
                return _no_reason(parsed["value"])
        return "unparseable", f"JSON does not match {{reason, value}}: {content[:200]!r}"

    def _usage(self, exchange: Exchange) -> tuple[int | None, int | None]:
        """Tokens the answers report; unknown (None) when none does, or one reports nonsense
        (the engine then charges the estimate, not less)."""
        bodies = [r["body"] for r in exchange.responses if isinstance(r.get("body"), dict)]
        usages = [b["usage"] for b in bodies if b.get("usage")]
        try:
            counts = [sum(int(u.get(k) or 0) for u in usages) for k in _USAGE_KEYS]
        except (
            AttributeError,
            TypeError,
            ValueError,
        ):  # "usage": "lots", or {"prompt_tokens": "many"}
            return None, None
        return (counts[0], counts[1]) if usages else (None, None)

    def _wire_request(self, exchange: Exchange) -> Any:
        if not exchange.requests:
            return None
        first, *more = exchange.requests
        return {**first, "follow_up_requests": more} if more and isinstance(first, dict) else first

    def _recorded(self, exchange: Exchange) -> dict[str, Any]:
        tokens_in, tokens_out = self._usage(exchange)
        request = self._wire_request(exchange)
        raw = raw_text(exchange.responses[-1]["body"]) if exchange.responses else None
        return {
            "tokens_in": tokens_in,
            "tokens_out": tokens_out,
            "rendered_request": request,
            "raw_response": None if raw is None else redact(raw, self.secrets()),
        }

    def _verdict(self, exchange: Exchange, **kw: Any) -> Verdict:
        if isinstance(kw.get("reason"), str):
            kw["reason"] = redact(kw["reason"], self.secrets())
        return Verdict(**self._recorded(exchange), **kw)

    def _failed(
        self,
        exchange: Exchange,
        kind: str,
        message: str,
        *,
        retryable: bool = False,
        endpoint_failure: str | None = None,
    ) -> Verdict:
        after = [r["retry_after"] for r in exchange.responses if r.get("retry_after")]
        return Verdict.failed(
            kind,
            redact(message, self.secrets()),
            **self._recorded(exchange),
            retryable=retryable,
            retry_after_s=_seconds(after[-1]) if after else None,
            endpoint_failure=endpoint_failure,
        )


RETRYABLE_ANSWER_KINDS: frozenset[str] = frozenset({"unparseable", "missing_reason"})
_USAGE_KEYS = ("prompt_tokens", "completion_tokens")


def loose_json(content: str | None) -> Any:
    """``content`` as JSON, else what instructor reads: its first "{" to its last "}" (None)."""
    if not content:
        return None
    start, end = content.find("{"), content.rfind("}")
    for text in (content, content[start : end + 1] if 0 <= start < end else None):
        try:
            return json.loads(text) if text is not None else None
        except ValueError:
            continue
    return None


def _no_reason(value: Any) -> tuple[str, str]:
    why = f"the judge answered {value!r} with an empty or missing reason; a verdict must state why"
    return "missing_reason", why


def _assistant_message(body: Any) -> dict[str, Any] | None:
    try:
        message = body["choices"][0]["message"]
    except (TypeError, KeyError, IndexError):
        return None
    return message if isinstance(message, dict) else None


def raw_text(body: Any) -> str | None:
    """The assistant message text of a chat-completions response body, exactly as returned."""
    message = _assistant_message(body)
    content = None if message is None else message.get("content")
    return content if isinstance(content, str) else None


def _strings(obj: Any, path: str = "") -> list[tuple[str, str]]:
    if isinstance(obj, str):
        return [(path, obj)]
    if isinstance(obj, dict):
        return [
            pair for k, v in obj.items() for pair in _strings(v, f"{path}.{k}" if path else str(k))
        ]
    if isinstance(obj, list):
        return [pair for i, v in enumerate(obj) for pair in _strings(v, f"{path}[{i}]")]
    return []


def _cause(exc: BaseException) -> str:
    """``Type: message`` of the lowest exception under an ``APIConnectionError``."""
    inner: BaseException = exc
    while inner.__cause__ is not None and inner.__cause__ is not inner:
        inner = inner.__cause__
    text = str(inner).strip()
    return f"{type(inner).__name__}: {text[:200]}" if text else type(inner).__name__


def _api_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:300]
    return str(getattr(exc, "message", exc))[:300]


def _seconds(value: str) -> float | None:
    try:
        return max(0.0, float(value))
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            from datetime import UTC, datetime

            return max(0.0, (parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds())
        except (TypeError, ValueError):
            return None


def _recordable_url(url: str | None) -> str | None:
    """``scheme://host[:port]/path`` of ``url`` (no query, fragment or user information)."""
    if not url:
        return None
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))
