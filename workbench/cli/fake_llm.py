"""``workbench fake-llm``: serve the scripted local OpenAI-compatible server."""

from __future__ import annotations

import importlib
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

import click

from ..testing import FAULTS, JSON_MODES, PROVIDERS, FakeLLM, Reply
from ._options import flag, option, shown

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _bad(option: str, message: str) -> click.BadParameter:
    return click.BadParameter(message, param_hint=option)


def _parse_fault_rates(values: tuple[str, ...]) -> dict[str, float]:
    rates: dict[str, float] = {}
    for item in values:
        name, sep, rate_text = item.partition("=")
        name = name.strip()
        if not sep:
            raise _bad("--fault-rate", f"{item!r} is not NAME=RATE")
        if name not in FAULTS:
            raise _bad("--fault-rate", f"unknown fault {name!r}; choose from {', '.join(FAULTS)}")
        try:
            rate = float(rate_text)
        except ValueError:
            raise _bad("--fault-rate", f"rate {rate_text!r} for {name} is not a number") from None
        if not 0.0 <= rate <= 1.0:
            raise _bad("--fault-rate", f"rate {rate} for {name} is outside [0, 1]")
        if name in rates:
            raise _bad("--fault-rate", f"fault {name} given twice")
        rates[name] = rate
    if sum(rates.values()) > 1.0 + 1e-9:
        raise _bad("--fault-rate", f"fault rates sum to {sum(rates.values()):g}, more than 1")
    return rates


def _load_responder(spec: str) -> Callable[..., Reply]:
    module_name, sep, attr_path = spec.partition(":")
    if not sep or not module_name or not attr_path:
        raise _bad("--responder", f"{spec!r} is not module:attr")
    if os.getcwd() not in sys.path:  # like `python -m`, resolve modules from the working directory
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:  # ImportError, or any error raised while importing the module
        message = f"cannot import module {module_name!r}: {type(exc).__name__}: {exc}"
        raise _bad("--responder", message) from None
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            message = f"module {module_name!r} has no attribute {attr_path!r}"
            raise _bad("--responder", message) from None
    if not callable(obj):
        raise _bad("--responder", f"{spec} is not callable")
    return obj  # type: ignore[no-any-return]


@click.command(
    "fake-llm",
    context_settings={"ignore_unknown_options": True, "help_option_names": ["-h", "--help"]},
)
@shown("--host", default="127.0.0.1", help="Interface to bind.")
@shown(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    help="Port to bind; 0 picks a free port, reported on startup and exported to COMMAND.",
)
@shown(
    "--latency",
    type=click.FloatRange(min=0.0),
    default=0.0,
    help="Seconds to wait before every answer.",
)
@click.option(
    "--fault-rate",
    "fault_rate",
    multiple=True,
    metavar="NAME=RATE",
    help=f"Inject a fault at random with this probability (repeatable): {', '.join(FAULTS)}.",
)
@option("seed", help="Seed of the fault-injection RNG.")
@shown(
    "--default-value", default="pass", help="Label the judge answers when no responder is given."
)
@click.option("--responder", metavar="MODULE:ATTR", help="Callable: ChatRequest -> Reply.")
@click.option(
    "--require-api-key-env",
    metavar="NAME",
    help="Require 'Authorization: Bearer <key>' with the key read from this environment variable.",
)
@shown(
    "--emulate",
    type=click.Choice(PROVIDERS),
    default="openai",
    help="Behave like this provider: chat path, key header and error bodies.",
)
@shown(
    "--json-mode",
    "json_mode",
    type=click.Choice(JSON_MODES),
    default="honour",
    help="What the server does with response_format: honour, reject (HTTP 400) or ignore it.",
)
@click.option(
    "--serve-model",
    "serve_model",
    multiple=True,
    metavar="NAME",
    help="Serve only these model names (azure: deployment names); repeatable.",
)
@flag(
    "--litellm-no-db",
    help="With --emulate litellm and --require-api-key-env: a proxy without a database.",
)
@click.option(
    "--export",
    "export",
    multiple=True,
    metavar="NAME",
    help="Also set environment variable NAME to the server's base URL for COMMAND (repeatable).",
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def fake_llm(
    host: str,
    port: int,
    default_value: str,
    litellm_no_db: bool,
    require_api_key_env: str | None,
    export: tuple[str, ...],
    command: tuple[str, ...],
    **given: Any,
) -> None:
    """Serve a scripted OpenAI-compatible chat API locally: try a judge with no API key.

    Answers {"reason": ..., "value": <default value>} unless --responder computes the reply.
    Without COMMAND, serves until Ctrl-C; with COMMAND (after --), runs it with
    FAKE_LLM_BASE_URL, FAKE_LLM_PORT and every --export NAME set, then exits with its code.
    """
    if command and command[0] == "--":
        command = command[1:]
    if litellm_no_db and (given["emulate"] != "litellm" or not require_api_key_env):
        message = "a proxy without a database needs --emulate litellm and --require-api-key-env"
        raise _bad("--litellm-no-db", f"{message} (its master key)")
    server = FakeLLM(
        litellm_database=not litellm_no_db,
        default=Reply(value=default_value),
        host=host,
        port=port,
        **_settings(require_api_key_env, export, **given),
    )
    try:
        server.start()
    except OSError as exc:
        raise click.UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    if not command:
        _serve_forever(server, require_api_key_env, export)
        return
    sys.exit(_run_command(server, command, export))


def _settings(
    key_env: str | None,
    export: tuple[str, ...],
    *,
    fault_rate: tuple[str, ...],
    responder: str | None,
    emulate: str,
    serve_model: tuple[str, ...],
    latency: float,
    seed: int,
    json_mode: str,
) -> dict[str, Any]:
    """The server's settings from the options, each checked (exit 2 naming the option)."""
    rates = _parse_fault_rates(fault_rate)
    responder_fn = _load_responder(responder) if responder else None
    api_key: str | None = None
    if key_env:
        api_key = os.environ.get(key_env)
        if not api_key:
            raise _bad("--require-api-key-env", f"environment variable {key_env} is unset or empty")
    for name in export:
        if not _ENV_NAME.match(name):
            message = f"{name!r} is not an environment variable name (A-Z, 0-9, _)"
            raise _bad("--export", message)
    if emulate == "ollama" and api_key:
        raise _bad("--require-api-key-env", "Ollama ignores API keys; drop --require-api-key-env")
    served = {"azure_deployments" if emulate == "azure" else "models": list(serve_model)}
    return {
        "responder": responder_fn,
        "fault_rates": rates,
        "require_api_key": api_key,
        "emulate": emulate,
        "latency_s": latency,
        "seed": seed,
        "json_mode": json_mode,
        **(served if serve_model else {}),
    }


def _run_command(server: FakeLLM, command: tuple[str, ...], export: tuple[str, ...]) -> int:
    """Run ``command`` with the server's URL in its environment, then stop the server; its exit
    code (128 + the signal that ended it)."""
    env = dict(os.environ, FAKE_LLM_BASE_URL=server.base_url, FAKE_LLM_PORT=str(server.port))
    env.update(dict.fromkeys(export, server.base_url))
    exported = "".join(f", {name}" for name in export)
    click.echo(
        f"fake LLM at {server.base_url} (exported as FAKE_LLM_BASE_URL{exported}); running:"
        f" {' '.join(command)}",
        err=True,
    )
    try:
        try:
            proc = subprocess.Popen(list(command), env=env)
        except OSError as exc:
            raise click.UsageError(f"cannot run {command[0]!r}: {exc.strerror or exc}") from None
        while True:
            try:
                returncode = proc.wait()
                break
            except KeyboardInterrupt:  # the child got the same Ctrl-C; wait for it to exit
                continue
    finally:
        server.stop()
    return returncode if returncode >= 0 else 128 - returncode


def _serve_forever(server: FakeLLM, key_env: str | None, export: tuple[str, ...] = ()) -> None:
    """Block until Ctrl-C or SIGTERM, then stop the server."""
    done = threading.Event()
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, lambda *_: done.set())
    click.echo(f"fake LLM serving at {server.base_url} (model fake-judge); Ctrl-C to stop")
    key = f"${key_env}" if key_env else "anything"
    click.echo(f"  export OPENAI_BASE_URL={server.base_url} OPENAI_API_KEY={key}")
    for name in export:
        click.echo(f"  export {name}={server.base_url}")
    try:
        while not done.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    click.echo(f"stopped after {server.call_count} chat requests")
