"""Tests that cannot collide: no fixed ports, demo models on port 0, URLs through the environment.

The demo candidates name an environment variable in ``endpoint.base_url_env`` and no
``base_url``; the demo's local model binds a free port and exports its URL there. With the
variable unset the judge refuses to load (``base_url_unset``): no fixed port, and never the
provider's default. The variable's *name* is part of the fingerprint, the resolved URL is not
(``run.json`` records it), so the verdict cache and certification survive a port change.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from conftest import DEMO_URL_ENVS

from workbench.cli.fake_llm import fake_llm
from workbench.demo.noise import DEMO_NOISE_URL_ENV
from workbench.demo.noise import serve as serve_noise_llm
from workbench.demo.ranking import DEMO_RANKING_URL_ENV, serve_ranking_llm
from workbench.errors import WorkbenchError
from workbench.gold import load_dataset
from workbench.judges import load_candidate, load_spec, make_identity
from workbench.phases import DEMO_LLM_URL_ENV, serve_demo_llm
from workbench.runs import RunOptions, run_candidate
from workbench.testing import FakeLLM

ROOT = Path(__file__).resolve().parents[1]
CANDIDATES = ROOT / "data" / "candidates"
DEMO_SPECS = {
    "support-llm-judge@1.yaml": DEMO_LLM_URL_ENV,
    "support-llm-judge@2.yaml": DEMO_LLM_URL_ENV,
    "support-llm-ranker@1.yaml": DEMO_RANKING_URL_ENV,
    "noise-judge@1.yaml": DEMO_NOISE_URL_ENV,
}
SERVERS = {
    DEMO_LLM_URL_ENV: serve_demo_llm,
    DEMO_RANKING_URL_ENV: serve_ranking_llm,
    DEMO_NOISE_URL_ENV: serve_noise_llm,
}


@pytest.fixture(autouse=True)
def _placeholder_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEMO_LLM_API_KEY", "test-placeholder-key")


# -- the guard: nothing in the tree binds a fixed port ----------------------------------------

SCANNED = ("tests", "notebooks", "data", "workbench")
SUFFIXES = {
    ".py",
    ".ipynb",
    ".yaml",
    ".yml",
    ".md",
    ".toml",
    ".cfg",
    ".json",
    ".jsonl",
    ".sh",
    ".txt",
}
DEMO_PORT = re.compile(r"(?<![0-9A-Za-z])876[5-7](?![0-9])")
"""The demo's former fixed ports."""
FIXED_BIND = re.compile(r"""(?x)
    \bport\s*(?::\s*int\s*)?=\s*[1-9][0-9]*\b         # port=8765, port: int = 8765
    | _PORT\s*=\s*[1-9][0-9]*\b                        # DEMO_LLM_PORT = 8765
    | --port(?:\s+|=|["']\s*,\s*["'])[1-9][0-9]*\b     # --port 8000, --port=8000, "--port", "8000"
    | --port["'].*\bdefault\s*=\s*[1-9][0-9]*\b          # click.option("--port", default=8000)
    | \.port=[1-9][0-9]*\b                             # --ServerApp.port=8888
    | \.(?:bind|listen)\(\s*\(\s*[^()]*,\s*[1-9][0-9]*\s*\)  # sock.bind(("127.0.0.1", 8080))
    """)
"""A bind of a fixed, non-zero port."""
LOCAL_URL = re.compile(r"\bbase_url:\s*https?://(?:127\.0\.0\.1|localhost):[1-9][0-9]*")
"""A spec's base_url on a fixed local port: a busy port (or another session's server) answers."""


def _offences(path: Path, text: str) -> list[str]:
    rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if FIXED_BIND.search(line):
            found.append(f"{rel}:{number}: fixed port bind: {line.strip()[:120]}")
        elif DEMO_PORT.search(line) or (
            path.suffix in (".yaml", ".yml") and LOCAL_URL.search(line)
        ):
            found.append(f"{rel}:{number}: fixed demo port: {line.strip()[:120]}")
    return found


def _scanned_files() -> list[Path]:
    this = Path(__file__).resolve()
    return sorted(
        p for top in SCANNED for p in (ROOT / top).rglob("*")
        if p.is_file() and p.suffix in SUFFIXES and p.resolve() != this
        and "__pycache__" not in p.parts and ".ipynb_checkpoints" not in p.parts
    )  # fmt: skip


def test_no_fixed_ports_in_tests_notebooks_data_or_the_package() -> None:
    files = _scanned_files()
    assert (
        len(files) > 100
        and any(p.suffix == ".ipynb" for p in files)
        and any(p.parent.name == "candidates" for p in files)
    )
    offences = [
        o for p in files for o in _offences(p, p.read_text(encoding="utf-8", errors="replace"))
    ]
    assert offences == [], "bind port 0 and pass the URL through the environment:\n" + "\n".join(
        offences
    )


# The guard's known-bad samples name the loopback host through this constant, so the source of this
# file holds no host:port literal of its own (the samples exist only at run time, in tmp_path).
LOOPBACK = ".".join(["127", "0", "0", "1"])


@pytest.mark.parametrize(
    "line",
    [
        "server = FakeLLM(responder=respond, port=8765).start()",
        "def serve_demo_llm(port: int = 8765, latency_s: float = 0.02):",
        "DEMO_RANKING_PORT = 8766",
        '    cmd = [sys.executable, "-m", "workbench", "fake-llm", "--port", "8000"]',
        "workbench fake-llm --port 8767 --responder workbench.demo.noise:respond",
        '"--ServerApp.port=8888",',
        'sock.bind(("127.0.0.1", 8080))',
        '@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)',
        f"serve_fake_llm = True  # serve the scripted demo ranking model on {LOOPBACK}:8766",
        f"  base_url: http://{LOOPBACK}:8765/v1",  # in a file that declares no base_url_env
    ],
)
def test_the_guard_catches_fixed_ports(line: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    assert _offences(path, f"name: x\n{line}\n") != []


@pytest.mark.parametrize(
    "line",
    [
        "server = FakeLLM(responder=respond, port=0).start()",
        "def serve_demo_llm(port: int = 0, latency_s: float = 0.02):",
        "FakeLLM(port=port)",
        '"--ServerApp.port=0",',
        "workbench fake-llm --port 0 --export WORKBENCH_DEMO_LLM_URL -- make",
        '@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True)',
        "report=5; support=12",
        '"response_hash": "4e5915d532ccc362715f876513697309a1ef"',
    ],
)
def test_the_guard_allows_port_zero_and_lookalikes(line: str, tmp_path: Path) -> None:
    assert _offences(tmp_path / "ok.py", line + "\n") == []


def test_the_guard_refuses_a_fixed_local_base_url_even_beside_base_url_env(tmp_path: Path) -> None:
    spec = "endpoint:\n  base_url_env: WORKBENCH_DEMO_LLM_URL\n"
    assert _offences(tmp_path / "ok.yaml", spec) == []
    assert _offences(tmp_path / "bad.yaml", spec + f"  base_url: http://{LOOPBACK}:8765/v1\n") != []
    assert _offences(tmp_path / "bad.yaml", spec + "  base_url: http://localhost:40010/v1\n") != []
    assert (
        _offences(tmp_path / "ok.yaml", "endpoint:\n  base_url: https://api.example.com/v1\n") == []
    )


# -- the spec: base_url_env -------------------------------------------------------------------


@pytest.mark.parametrize(("name", "env"), sorted(DEMO_SPECS.items()))
def test_demo_specs_read_their_base_url_from_the_environment(
    name: str, env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert env in DEMO_URL_ENVS
    spec, _ = load_spec(CANDIDATES / name)
    assert (
        spec.endpoint.base_url_env == env and spec.endpoint.base_url is None
    )  # no fixed port to fall back to
    with pytest.raises(
        WorkbenchError
    ) as unset:  # the variable unset: refused, never api.openai.com
        load_candidate(CANDIDATES / name)
    (problem,) = [p for p in unset.value.problems if p.code == "base_url_unset"]
    assert env in problem.message and f"--export {env}" in problem.fix
    monkeypatch.setenv(env, "http://127.0.0.1:40000/v1")
    default = load_candidate(CANDIDATES / name)
    monkeypatch.setenv(env, "http://127.0.0.1:40001/v1")
    moved = load_candidate(CANDIDATES / name)
    assert moved.base_url == "http://127.0.0.1:40001/v1"  # type: ignore[attr-defined]
    monkeypatch.setenv(env, "http://127.0.0.1:40002/v1")
    again = load_candidate(CANDIDATES / name)
    # The port of the local demo model is not part of what the judge is.
    assert (
        moved.identity.fingerprint()
        == again.identity.fingerprint()
        == default.identity.fingerprint()
    )


def _write_spec(tmp_path: Path, endpoint: dict[str, object]) -> Path:
    spec = yaml.safe_load((CANDIDATES / "support-llm-judge@1.yaml").read_text(encoding="utf-8"))
    spec["endpoint"] = endpoint
    (tmp_path / "prompts").mkdir(parents=True, exist_ok=True)
    (tmp_path / "prompts" / "support-llm-judge@1.md").write_text(
        (CANDIDATES / "prompts" / "support-llm-judge@1.md").read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    path = tmp_path / "support-llm-judge@1.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


def test_the_declared_endpoint_stays_in_the_fingerprint(tmp_path: Path) -> None:
    base = {
        "base_url": "http://127.0.0.1:40003/v1",
        "api_key_env": "DEMO_LLM_API_KEY",
        "base_url_env": "WB_TEST_URL",
    }
    first = load_candidate(_write_spec(tmp_path / "a", base)).identity
    other_default = load_candidate(
        _write_spec(tmp_path / "b", {**base, "base_url": "http://127.0.0.1:40004/v1"})
    ).identity
    other_name = load_candidate(
        _write_spec(tmp_path / "c", {**base, "base_url_env": "WB_TEST_OTHER_URL"})
    ).identity
    assert len({first.fingerprint(), other_default.fingerprint(), other_name.fingerprint()}) == 3
    assert first.params["spec"]["endpoint"]["base_url_env"] == "WB_TEST_URL"


def test_a_spec_without_base_url_env_fingerprints_as_before(tmp_path: Path) -> None:
    spec, _ = load_spec(CANDIDATES / "rubric-judge@2.yaml")
    assert "base_url_env" not in spec.model_dump(mode="json")["endpoint"]
    assert "base_url_env" not in make_identity(spec, None).params["spec"]["endpoint"]
    plain = load_candidate(
        _write_spec(
            tmp_path, {"base_url": "http://127.0.0.1:40005/v1", "api_key_env": "DEMO_LLM_API_KEY"}
        )
    )
    assert set(plain.identity.params["spec"]["endpoint"]) == {
        "base_url",
        "api_key_env",
        "timeout_s",
        "max_retries",
    }


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("not a url", "not an http(s)"),
        ("ftp://127.0.0.1:21/v1", "not an http(s)"),
        ("http://127.0.0.1:99999999/v1", "not a URL"),
        ("http://user:sk-secret-pw-1234567890@127.0.0.1:40006/v1", "credentials"),
    ],
)
def test_a_bad_url_in_the_variable_is_a_one_line_error(
    value: str, says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DEMO_LLM_URL_ENV, value)
    with pytest.raises(WorkbenchError) as info:
        load_candidate(CANDIDATES / "support-llm-judge@1.yaml")
    (problem,) = info.value.problems
    assert (
        problem.code == "base_url_env_invalid"
        and says in problem.message
        and DEMO_LLM_URL_ENV in problem.fix
    )
    assert "sk-secret" not in str(problem)


def test_base_url_env_must_be_a_name(tmp_path: Path) -> None:
    with pytest.raises(WorkbenchError) as info:
        load_spec(_write_spec(tmp_path, {"base_url_env": "http://127.0.0.1:40007/v1"}))
    assert [p.code for p in info.value.problems] == [
        "candidate_invalid"
    ] and "base_url_env" in info.value.problems[0].message


def test_cli_run_with_a_bad_url_variable_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench.cli import main

    monkeypatch.setenv(DEMO_LLM_URL_ENV, "localhost:40008")
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--candidate",
            str(CANDIDATES / "support-llm-judge@1.yaml"),
            "--gold",
            str(ROOT / "data" / "demo"),
            "--partition",
            "development",
            "--out",
            str(tmp_path / "out"),
        ],
    )
    assert (
        result.exit_code == 2
        and "base_url_env_invalid" in result.output
        and "Traceback" not in result.output
    )
    assert not (tmp_path / "out").exists()


# -- the helpers: port 0, the URL exported ------------------------------------------------------


@pytest.mark.parametrize("env", sorted(SERVERS))
def test_demo_helpers_bind_a_free_port_and_export_it(env: str) -> None:
    """Two notebooks (or two test runs) at once each get their own model; neither is refused."""
    first = SERVERS[env]()
    try:
        assert first is not None and first.running and first.port > 0
        assert os.environ[env] == first.base_url == f"http://127.0.0.1:{first.port}/v1"
        second = SERVERS[env]()
        try:
            assert second is not None and second.running and second.port not in (0, first.port)
            assert os.environ[env] == second.base_url
        finally:
            second.stop()
        assert first.running
    finally:
        first.stop()


def test_a_busy_fixed_port_is_a_clear_error_and_port_0_still_works() -> None:
    with FakeLLM() as holder:  # some other server on a port the caller insists on
        with pytest.raises(RuntimeError, match=rf"127\.0\.0\.1:{holder.port}.*port=0"):
            serve_demo_llm(port=holder.port)
        server = serve_demo_llm()
        try:
            assert server.port not in (0, holder.port)
        finally:
            server.stop()


def test_the_demo_cache_survives_a_port_change(tmp_path: Path) -> None:
    """Same fingerprint on another port: the second run reuses every verdict and records its URL."""
    gold = load_dataset(ROOT / "data" / "demo")
    summaries = []
    for attempt in range(2):
        server = serve_demo_llm()
        try:
            judge = load_candidate(CANDIDATES / "support-llm-judge@1.yaml")
            summary = asyncio.run(
                run_candidate(
                    judge,
                    gold,
                    "development",
                    tmp_path / f"run{attempt}",
                    RunOptions(cache_dir=tmp_path / "cache", max_cases=4, progress=False),
                )
            )
            summaries.append(
                (server.base_url, server.call_count, summary, judge.identity.fingerprint())
            )
        finally:
            server.stop()
    (url1, calls1, run1, fp1), (url2, calls2, run2, fp2) = summaries
    assert url1 != url2 and fp1 == fp2 == run1.judge_fingerprint == run2.judge_fingerprint
    assert calls1 == run1.calls > 0 and run1.cache_hits == 0
    # Every verdict of the first run is reused on the new port (max_cases counts new calls only).
    assert run2.cache_hits == run1.verdicts == 4 and calls2 == run2.calls
    cached = [
        json.loads(line) for line in (tmp_path / "run1" / "results.jsonl").read_text().splitlines()
    ]
    assert sum(1 for r in cached if r.get("cached_from_run_id") == run1.run_id) == 4
    assert (run1.endpoint_url, run2.endpoint_url) == (url1, url2)
    assert json.loads((tmp_path / "run1" / "run.json").read_text())["endpoint_url"] == url2


# -- workbench fake-llm --port 0 ----------------------------------------------------------------

CHILD = """
import json, os, sys, urllib.request
url, port = os.environ["WORKBENCH_DEMO_LLM_URL"], os.environ["FAKE_LLM_PORT"]
expected = f"http://127.0.0.1:{port}/v1"
assert url == os.environ["FAKE_LLM_BASE_URL"] == expected and int(port) > 0, (url, port)
models = json.load(urllib.request.urlopen(url + "/models"))
sys.exit(0 if models["data"][0]["id"] == "fake-judge" else 9)
"""


def test_fake_llm_exports_the_free_port_it_got_to_the_command() -> None:
    result = CliRunner().invoke(
        fake_llm, ["--export", "WORKBENCH_DEMO_LLM_URL", "--", sys.executable, "-c", CHILD]
    )
    assert result.exit_code == 0, result.output
    assert re.search(
        r"fake LLM at http://127\.0\.0\.1:[1-9][0-9]*/v1 \(exported as FAKE_LLM_BASE_URL,"
        r" WORKBENCH_DEMO_LLM_URL\)",
        result.output,
    )


def test_fake_llm_refuses_a_bad_export_name() -> None:
    result = CliRunner().invoke(
        fake_llm, ["--export", "not-a-name", "--", sys.executable, "-c", "pass"]
    )
    assert (
        result.exit_code == 2 and "--export" in result.output and "Traceback" not in result.output
    )


def test_fake_llm_in_the_foreground_reports_the_port_it_bound() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "workbench", "fake-llm", "--export", "WORKBENCH_DEMO_LLM_URL"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "RAGAS_DO_NOT_TRACK": "true"},
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        match = re.search(r"serving at (http://127\.0\.0\.1:([0-9]+)/v1)", first)
        assert match and int(match.group(2)) > 0, first
        lines = [proc.stdout.readline() for _ in range(2)]
        assert f"export WORKBENCH_DEMO_LLM_URL={match.group(1)}" in "".join(lines)
        import urllib.request

        models = json.load(urllib.request.urlopen(match.group(1) + "/models", timeout=5))
        assert models["data"][0]["id"] == "fake-judge"
    finally:
        proc.terminate()
        proc.wait(timeout=20)
