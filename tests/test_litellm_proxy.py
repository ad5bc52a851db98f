"""Issue 29 point 6 against a real LiteLLM proxy (the optional ``litellm`` extra), offline.

The proxy (``litellm --config``, a master key, no database) runs on 127.0.0.1 in front of the
project's scripted OpenAI server (``workbench.testing.FakeLLM``), which only the proxy's own
upstream key opens. Through it, with the judge's key in ``$ENDPOINT_ERRORS_TEST_KEY``:

- a wrong key: the proxy answers its own HTTP 400 "No connected db."; ``ping`` calls it a proxy
  problem (``proxy_config``) with the master-key fix, and ``run`` stops after the circuit
  breaker's 8 calls, the other cases unrun, no call reaching the model server;
- an unknown model name: the proxy's 400 "Invalid model name" is a model-name problem;
- the master key: ``ping`` is ok and ``run`` judges every case.

The proxy is the ``litellm`` command beside this Python (``pip install -e '.[litellm]'``) or the
one ``$WORKBENCH_LITELLM_PROXY`` names (a LiteLLM in another virtualenv: ``.ci/run`` installs the
extra in ``.venv-litellm`` and names it there). Without either the module is skipped with that
reason. It must not reach
the network: the model cost map is LiteLLM's local copy (``LITELLM_LOCAL_MODEL_COST_MAP``) and
telemetry is off.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from test_endpoint_errors import DEV_CASES, KEY_ENV, MASTER_KEY, WRONG_KEY, ping, run, write_spec

from workbench.testing import FakeLLM, Reply

pytestmark = pytest.mark.integration

PROXY_ENV = "WORKBENCH_LITELLM_PROXY"
UPSTREAM_KEY = "sk-upstream-only-the-proxy-knows"
MODEL = "fake-judge"
STARTUP_S = 240  # the proxy imports for 10-60 s on a loaded machine


def _proxy_command() -> Path | None:
    named = os.environ.get(PROXY_ENV)
    if named:
        return Path(named)
    beside = Path(sys.executable).parent / "litellm"
    return beside if importlib.util.find_spec("litellm") and beside.exists() else None


COMMAND = _proxy_command()
if COMMAND is None:
    pytest.skip(
        "the LiteLLM proxy is an optional extra: pip install -e '.[litellm]', or name a litellm"
        f" command in ${PROXY_ENV} (.ci/run installs one in .venv-litellm)",
        allow_module_level=True,
    )


@dataclass(frozen=True)
class Proxy:
    base_url: str
    """The proxy's OpenAI-compatible base URL (``http://127.0.0.1:PORT/v1``)."""
    upstream: FakeLLM
    """The scripted model server behind it (its ``call_count`` counts what got through)."""
    log: Path
    """The proxy's output (shown when it does not start)."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _up(url: str) -> bool:
    health = f"{url}/health/liveliness"
    with contextlib.suppress(OSError), urllib.request.urlopen(health, timeout=2) as answer:
        return bool(answer.status == 200)
    return False


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    assert COMMAND is not None
    root = tmp_path_factory.mktemp("litellm")
    with FakeLLM(default=Reply(value="pass"), require_api_key=UPSTREAM_KEY) as upstream:
        config = {
            "model_list": [
                {
                    "model_name": MODEL,
                    "litellm_params": {
                        "model": f"openai/{MODEL}",
                        "api_base": upstream.base_url,
                        "api_key": UPSTREAM_KEY,
                    },
                }
            ],
            "general_settings": {"master_key": MASTER_KEY},
        }
        (root / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        port = _free_port()
        env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
        env.update(LITELLM_LOCAL_MODEL_COST_MAP="True", NO_PROXY="127.0.0.1,localhost")
        log = root / "proxy.log"
        args = [str(COMMAND), "--config", str(root / "config.yaml"), "--host", "127.0.0.1"]
        with log.open("wb") as out:
            process = subprocess.Popen(
                [*args, "--port", str(port), "--telemetry", "False"],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + STARTUP_S
            while not _up(url):
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the LiteLLM proxy did not start:\n{log.read_text()[-3000:]}")
                time.sleep(1)
            yield Proxy(base_url=f"{url}/v1", upstream=upstream, log=log)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    monkeypatch.setenv(KEY_ENV, WRONG_KEY)
    yield monkeypatch


def test_wrong_key_is_a_proxy_problem_and_the_run_stops_early(
    proxy: Proxy, key: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    spec = write_spec(tmp_path / "spec", proxy.base_url)
    before = proxy.upstream.call_count
    code, out, result = ping(spec)
    assert code == 1 and result["status"] == 400, out
    assert "FAILED [proxy_config]" in out and "No connected db" in out  # the real proxy's body
    assert "master key" in out.split("fix:")[1] and f"${KEY_ENV}" in out

    code, output, summary = run(spec, tmp_path / "out", "--concurrency", "1")
    assert code == 3, output
    assert summary["stop_reason"] == "circuit_breaker" and summary["calls"] == 8
    assert summary["verdicts"] == 0 and len(summary["unrun"]) == DEV_CASES - 8
    assert (
        "No connected db" in summary["stop_detail"] and "--retry-errors" in summary["stop_detail"]
    )
    assert proxy.upstream.call_count == before  # refused by the proxy, never sent to the model
    assert WRONG_KEY not in output and WRONG_KEY not in out


def test_unknown_model_name_through_the_proxy_is_a_model_name_problem(
    proxy: Proxy, key: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key.setenv(KEY_ENV, MASTER_KEY)
    code, out, result = ping(write_spec(tmp_path, proxy.base_url, model=f"{MODEL}-typo"))
    assert code == 1 and result["status"] == 400, out
    assert "FAILED [model_not_found]" in out and "model 'fake-judge-typo'" in out
    assert "Invalid model name passed in model=fake-judge-typo" in out  # the proxy's own words
    assert "model_name in its config" in out.split("fix:")[1]


def test_master_key_pings_and_the_run_judges_every_case(
    proxy: Proxy, key: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key.setenv(KEY_ENV, MASTER_KEY)
    spec = write_spec(tmp_path / "spec", proxy.base_url)
    code, out, result = ping(spec)
    assert code == 0 and result["ok"], out
    before = proxy.upstream.call_count
    code, output, summary = run(spec, tmp_path / "out", "--concurrency", "4")
    assert code == 0, output
    assert summary["status"] == "complete" and summary["verdicts"] == DEV_CASES
    assert proxy.upstream.call_count - before == DEV_CASES  # every call went through the proxy
