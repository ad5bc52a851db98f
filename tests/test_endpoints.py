"""Endpoint recipes (examples/endpoints/, docs/endpoints.md) against the local server emulating each
provider.

Every recipe is loaded exactly as a user would load it, with the variable its
``endpoint.base_url_env`` names pointed at ``workbench.testing.FakeLLM`` configured to behave
like that provider: the chat path (Azure's deployment path and ``api-version``), the header
that must carry the key, the models it serves and whether it has JSON mode. Nothing here
reaches the internet.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from workbench.errors import WorkbenchError
from workbench.judges import CandidateSpec, load_candidate, load_spec, make_identity
from workbench.judges._ping import ping
from workbench.judges._spec import Endpoint
from workbench.runs import RunOptions
from workbench.testing import FakeLLM, Reply

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "endpoints"
DOC = (ROOT / "docs" / "endpoints.md").read_text(encoding="utf-8")

# recipe -> (URL variable, key variable, FakeLLM settings that make it behave like the provider)
RECIPES: dict[str, tuple[str, str | None, dict]] = {
    "openai-judge@1": (
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        {"emulate": "openai", "models": ["gpt-4o-mini"]},
    ),
    "azure-judge@1": (
        "AZURE_OPENAI_ENDPOINT",
        "AZURE_OPENAI_API_KEY",
        {
            "emulate": "azure",
            "azure_deployments": ["judge-gpt-4o-mini"],
            "azure_api_versions": ["2024-10-21"],
        },
    ),
    "vllm-judge@1": (
        "VLLM_BASE_URL",
        "VLLM_API_KEY",
        {"emulate": "vllm", "models": ["Qwen/Qwen2.5-7B-Instruct"]},
    ),
    "ollama-judge@1": ("OLLAMA_BASE_URL", None, {"emulate": "ollama", "models": ["llama3.1:8b"]}),
    "llamacpp-judge@1": ("LLAMA_SERVER_URL", "LLAMA_API_KEY", {"emulate": "llamacpp"}),
    "litellm-judge@1": (
        "LITELLM_BASE_URL",
        "LITELLM_API_KEY",
        {"emulate": "litellm", "models": ["gpt-4o-mini"]},
    ),
    "litellm-judge@2": (
        "LITELLM_BASE_URL",
        "LITELLM_API_KEY",
        {"emulate": "litellm", "models": ["gpt-4o-mini"], "json_mode": "reject"},
    ),
}
EXPECTED_PATH = {
    "azure-judge@1": "/openai/deployments/judge-gpt-4o-mini/chat/completions",
}

# spec_sha256 of every demo candidate at commit fa4c059, before endpoint.provider, deployment,
# api_version and json_mode existed: adding the fields must not move any fingerprint.
# The demo LLM specs are left out: their fixed-port default base_url was removed on purpose
# (tests/test_ports.py pins that only the URL variable's name enters their fingerprint).
SPEC_SHA256_BEFORE_THE_NEW_FIELDS = {
    "coverage-judge@1.yaml": "c3154f80135654625459bbfed3a37aa3757ebd3f27d7c9e3238c5ecc695e766d",
    "policy-ranker@1.yaml": "023c6891dcf7cb6f2839a47b0c3264bf61ec7ad01f6c0a1c5f3cf441eb5e91bf",
    "rubric-judge@1.yaml": "f83980f7a3929b80e4522753ea4e37d8c2514eeef46e8cb218edc82f80e3745a",
    "rubric-judge@2.yaml": "ba03051c9846829e7726b49feb80f65159481fb69a64b78f43305a44dac99718",
}


def serve_like(
    recipe: str, monkeypatch: pytest.MonkeyPatch, reply: Reply | None = None, **overrides: object
) -> tuple[FakeLLM, str | None]:
    """A started FakeLLM behaving like the recipe's provider, with the recipe's variables set."""
    url_env, key_env, settings = RECIPES[recipe]
    settings = {**settings, **overrides}
    key = None
    if key_env:
        key = f"test-key-{recipe.replace('@', '-')}-0123456789"
        monkeypatch.setenv(key_env, key)
        settings.setdefault("require_api_key", key)
    fake = FakeLLM(default=reply or Reply("pass", "the answer names Paris"), **settings).start()
    monkeypatch.setenv(url_env, fake.base_url)
    return fake, key


def test_every_recipe_the_issue_names_is_an_example_file_and_in_the_docs() -> None:
    assert sorted(p.stem for p in EXAMPLES.glob("*.yaml")) == sorted(RECIPES)
    for recipe in RECIPES:
        assert f"examples/endpoints/{recipe}.yaml" in DOC, recipe
    for provider in ("OpenAI", "Azure OpenAI", "vLLM", "Ollama", "llama.cpp", "LiteLLM"):
        assert provider in DOC


@pytest.mark.parametrize("recipe", sorted(RECIPES))
def test_recipe_pings_ok_against_its_provider(recipe: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fake, key = serve_like(recipe, monkeypatch)
    root = fake.root_url
    try:
        result = ping(EXAMPLES / f"{recipe}.yaml")
    finally:
        fake.stop()
    assert result.ok, result.problems
    assert (result.status, result.parsed, result.value, result.label_ok) == (
        200,
        True,
        "pass",
        True,
    )
    assert fake.call_count == 1
    call = fake.calls[0]
    spec, _ = load_spec(EXAMPLES / f"{recipe}.yaml")
    assert call.path == EXPECTED_PATH.get(recipe, "/v1/chat/completions")
    assert result.url is not None and result.url.startswith(root + call.path)
    if key is not None:
        assert call.authorized is True
        assert key not in result.model_dump_json()
    # JSON mode: asked for exactly when the recipe says so
    asks_json = spec.endpoint.json_mode == "json_object"
    assert ("response_format" in call.body) is asks_json
    assert result.json_mode_honoured is (True if asks_json else None)
    assert result.tokens_in and result.tokens_out
    assert result.cost_usd == pytest.approx(spec.pricing.cost(result.tokens_in, result.tokens_out))


def test_azure_recipe_sends_deployment_path_api_version_and_api_key_header(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake, key = serve_like("azure-judge@1", monkeypatch)
    try:
        result = ping(EXAMPLES / "azure-judge@1.yaml")
    finally:
        fake.stop()
    call = fake.calls[0]
    assert result.ok
    assert call.query == {"api-version": "2024-10-21"}
    assert "api-key" in call.auth_headers
    assert result.url.endswith(
        "/openai/deployments/judge-gpt-4o-mini/chat/completions?api-version=2024-10-21"
    )


def test_azure_emulation_refuses_a_bearer_only_key_and_an_unknown_deployment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The same key as Bearer on the OpenAI client (provider left at openai) is refused by "Azure".
    raw = yaml.safe_load((EXAMPLES / "azure-judge@1.yaml").read_text())
    raw["endpoint"] = {
        k: v
        for k, v in raw["endpoint"].items()
        if k not in ("provider", "deployment", "api_version")
    }
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "support-judge.md").write_text(
        (EXAMPLES / "prompts" / "support-judge.md").read_text()
    )
    (tmp_path / "azure-judge@1.yaml").write_text(yaml.safe_dump(raw))
    fake, _ = serve_like("azure-judge@1", monkeypatch)
    try:
        monkeypatch.setenv(
            "AZURE_OPENAI_ENDPOINT", fake.root_url + "/openai/deployments/judge-gpt-4o-mini"
        )
        result = ping(tmp_path / "azure-judge@1.yaml")
    finally:
        fake.stop()
    # the key went only as Bearer: "Azure" wants it in api-key
    assert fake.calls[0].auth_headers == ("authorization",)
    assert [p.code for p in result.problems] == ["unauthorized"]
    assert "api-key" in result.problems[0].fix

    fake, _ = serve_like("azure-judge@1", monkeypatch, azure_deployments=["another-deployment"])
    try:
        result = ping(EXAMPLES / "azure-judge@1.yaml")
    finally:
        fake.stop()
    assert [p.code for p in result.problems] == ["model_not_found"]
    assert "deployment 'judge-gpt-4o-mini'" in result.problems[0].message


def test_azure_emulation_wants_an_api_version_and_its_deployment_path() -> None:
    import httpx

    body = {"model": "ignored-by-azure", "messages": [{"role": "user", "content": "hi"}]}
    with (
        FakeLLM(emulate="azure", require_api_key="k-0123456789", azure_deployments=["dep"]) as fake,
        httpx.Client(timeout=5) as client,
    ):
        missing_version = client.post(
            f"{fake.root_url}/openai/deployments/dep/chat/completions",
            json=body,
            headers={"api-key": "k-0123456789"},
        )
        openai_path = client.post(
            f"{fake.root_url}/v1/chat/completions", json=body, headers={"api-key": "k-0123456789"}
        )
        ok = client.post(
            f"{fake.root_url}/openai/deployments/dep/chat/completions?api-version=2024-10-21",
            json=body,
            headers={"api-key": "k-0123456789"},
        )
        assert fake.base_url == fake.root_url  # what an Azure spec's base_url is: the resource root
    assert (missing_version.status_code, missing_version.json()["error"]["message"]) == (
        404,
        "Resource not found",
    )
    assert openai_path.status_code == 404
    assert (
        ok.status_code == 200
        and json.loads(ok.json()["choices"][0]["message"]["content"])["value"] == "pass"
    )


def test_azure_api_version_before_json_mode_is_no_json_mode_and_md_json_is_the_fallback(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    spec_path = copy_recipe("azure-judge@1", tmp_path, endpoint={"api_version": "2023-05-15"})
    fake, _ = serve_like("azure-judge@1", monkeypatch, azure_api_versions=["2023-05-15"])
    try:
        refused = ping(spec_path)
        spec_path = copy_recipe(
            "azure-judge@1",
            tmp_path / "fallback",
            endpoint={"api_version": "2023-05-15", "json_mode": "md_json"},
        )
        fallback = ping(spec_path)
    finally:
        fake.stop()
    assert [p.code for p in refused.problems] == ["no_json_mode"] and refused.status == 400
    assert refused.json_mode_honoured is False
    assert fallback.ok and fallback.value == "pass"
    assert "response_format" not in fake.calls[1].body


@pytest.mark.parametrize("server_json_mode", ["reject", "ignore"])
def test_litellm_without_json_mode_fails_ping_then_the_md_json_fallback_passes(
    server_json_mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake, _ = serve_like("litellm-judge@1", monkeypatch, json_mode=server_json_mode)
    try:
        json_mode = ping(EXAMPLES / "litellm-judge@1.yaml")
        fallback = ping(EXAMPLES / "litellm-judge@2.yaml")
    finally:
        fake.stop()
    assert [p.code for p in json_mode.problems] == ["no_json_mode"]
    assert json_mode.json_mode_honoured is False
    assert json_mode.status == (400 if server_json_mode == "reject" else 200)
    assert fallback.ok, fallback.problems
    assert fallback.json_mode_honoured is None and fallback.value == "pass"
    # the fallback really is instructor's MD_JSON: no response_format, a request for a ```json block
    body = fake.calls[1].body
    assert "response_format" not in body
    assert "```json" in json.dumps(body["messages"])
    # ...and the fake answered the way a model without JSON mode does: prose around a fence
    assert fallback.answer_excerpt.startswith("Sure.") and "```json" in fallback.answer_excerpt


def test_md_json_run_records_classify_a_fenced_out_of_vocabulary_label(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import asyncio

    from workbench.judges._ping import PING_INPUT

    fake, _ = serve_like("litellm-judge@2", monkeypatch, reply=Reply("maybe", "not sure"))
    try:
        judge = load_candidate(EXAMPLES / "litellm-judge@2.yaml")
        verdict = asyncio.run(judge.evaluate(PING_INPUT))
    finally:
        fake.stop()
    assert verdict.error is not None and verdict.error.kind == "invalid_label"


@pytest.mark.parametrize("recipe", ["vllm-judge@1", "ollama-judge@1", "openai-judge@1"])
def test_unknown_model_is_model_not_found_with_each_providers_own_error(
    recipe: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake, _ = serve_like(recipe, monkeypatch, models=["some-other-model"])
    try:
        result = ping(EXAMPLES / f"{recipe}.yaml")
    finally:
        fake.stop()
    assert result.status == 404
    assert [p.code for p in result.problems] == ["model_not_found"]


def test_llamacpp_ignores_the_model_name(monkeypatch: pytest.MonkeyPatch) -> None:
    fake, _ = serve_like("llamacpp-judge@1", monkeypatch, models=["whatever.gguf"])
    try:
        result = ping(EXAMPLES / "llamacpp-judge@1.yaml")
    finally:
        fake.stop()
    assert result.ok


def test_litellm_unknown_model_is_its_400_and_still_model_not_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake, _ = serve_like("litellm-judge@1", monkeypatch, models=["claude-3-5-haiku"])
    try:
        result = ping(EXAMPLES / "litellm-judge@1.yaml")
    finally:
        fake.stop()
    assert result.status == 400
    assert [p.code for p in result.problems] == ["model_not_found"]


def test_ollama_needs_no_key_and_the_recipe_names_none() -> None:
    spec, _ = load_spec(EXAMPLES / "ollama-judge@1.yaml")
    assert spec.endpoint.api_key_env is None
    assert spec.endpoint.base_url.endswith("/v1")


# -- spec fields ------------------------------------------------------------------------------


def test_demo_candidate_fingerprints_do_not_move() -> None:
    for path in sorted((ROOT / "data" / "candidates").glob("*.yaml")):
        if path.name not in SPEC_SHA256_BEFORE_THE_NEW_FIELDS:
            continue
        spec, _ = load_spec(path)
        assert (
            make_identity(spec, None).params["spec_sha256"]
            == SPEC_SHA256_BEFORE_THE_NEW_FIELDS[path.name]
        ), path.name
    assert set(Endpoint().model_dump()) == {
        "base_url",
        "api_key_env",
        "timeout_s",
        "max_retries",
        "circuit_breaker_after",
    }


def test_provider_deployment_api_version_and_json_mode_enter_the_fingerprint_when_set() -> None:
    base = {
        "schema_version": 1,
        "name": "j",
        "version": "1",
        "kind": "ragas-llm",
        "labels": ["pass", "fail"],
        "model": "m",
    }
    azure = {
        "provider": "azure",
        "base_url": "https://r.openai.azure.com",
        "deployment": "d1",
        "api_version": "2024-10-21",
    }

    def sha(endpoint: dict) -> str:
        return make_identity(
            CandidateSpec.model_validate({**base, "endpoint": endpoint}), None
        ).params["spec_sha256"]

    prints = {
        sha({}),
        sha({"json_mode": "md_json"}),
        sha(azure),
        sha({**azure, "deployment": "d2"}),
        sha({**azure, "api_version": "2024-06-01"}),
        sha({**azure, "json_mode": "md_json"}),
    }
    assert len(prints) == 6
    assert sha({"json_mode": "json_object", "provider": "openai"}) == sha({})


@pytest.mark.parametrize(
    ("endpoint", "message"),
    [
        (
            {"provider": "azure", "base_url": "https://r.openai.azure.com"},
            "provider azure needs deployment and api_version",
        ),
        (
            {"provider": "azure", "deployment": "d", "api_version": "2024-10-21"},
            "provider azure needs base_url",
        ),
        ({"deployment": "d"}, "deployment applies only to provider: azure"),
        ({"api_version": "2024-10-21"}, "api_version applies only to provider: azure"),
        (
            {
                "provider": "azure",
                "base_url": "https://r.openai.azure.com",
                "deployment": "../x",
                "api_version": "2024-10-21",
            },
            "endpoint.deployment",
        ),
        (
            {
                "provider": "azure",
                "base_url": "https://r.openai.azure.com",
                "deployment": "d",
                "api_version": "latest",
            },
            "endpoint.api_version",
        ),
        ({"json_mode": "tools"}, "endpoint.json_mode"),
        ({"provider": "anthropic"}, "endpoint.provider"),
    ],
)
def test_invalid_endpoint_fields_are_one_line_problems(
    endpoint: dict, message: str, tmp_path: Path
) -> None:
    path = tmp_path / "j@1.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "schema_version": 1,
                "name": "j",
                "version": "1",
                "kind": "ragas-llm",
                "labels": ["pass", "fail"],
                "model": "m",
                "prompt": "{response}",
                "endpoint": endpoint,
            }
        )
    )
    with pytest.raises(WorkbenchError) as info:
        load_spec(path)
    text = str(info.value)
    assert message in text
    assert all(p.code == "candidate_invalid" for p in info.value.problems)


def test_unquoted_yaml_api_version_is_read_as_text(tmp_path: Path) -> None:
    path = tmp_path / "j@1.yaml"
    path.write_text(
        "schema_version: 1\nname: j\nversion: '1'\nkind: ragas-llm\nlabels: [pass, fail]\nmodel:"
        " m\nprompt: '{response}'\nendpoint:\n  provider: azure\n  base_url:"
        " https://r.openai.azure.com\n  deployment: d\n  api_version: 2024-10-21\n"
    )
    spec, _ = load_spec(path)
    assert spec.endpoint.api_version == "2024-10-21"


def test_docs_state_json_mode_per_provider_and_the_fallback() -> None:
    table = [
        line
        for line in DOC.splitlines()
        if line.startswith("| ") and re.search(r"\| (yes|no|depends)", line)
    ]
    assert len(table) >= 6
    assert "json_mode: md_json" in DOC
    for code in (
        "dns_failure",
        "connection_refused",
        "unauthorized",
        "model_not_found",
        "no_json_mode",
        "unparseable",
    ):
        assert f"`{code}`" in DOC


def copy_recipe(recipe: str, directory: Path, **changes: dict) -> Path:
    """The recipe written to ``directory`` with nested changes (e.g. endpoint={...})."""
    directory.mkdir(parents=True, exist_ok=True)
    raw = yaml.safe_load((EXAMPLES / f"{recipe}.yaml").read_text())
    for key, value in changes.items():
        raw[key] = {**raw.get(key, {}), **value}
    (directory / "prompts").mkdir(exist_ok=True)
    (directory / "prompts" / "support-judge.md").write_text(
        (EXAMPLES / "prompts" / "support-judge.md").read_text()
    )
    path = directory / f"{recipe}.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_md_json_verdicts_carry_the_request_actually_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from workbench.judges._ping import PING_INPUT

    fake, _ = serve_like("litellm-judge@2", monkeypatch, reply=Reply("fail", "wrong city"))
    try:
        judge = load_candidate(EXAMPLES / "litellm-judge@2.yaml")
        verdict = asyncio.run(judge.evaluate(PING_INPUT))
    finally:
        fake.stop()
    assert verdict.error is None and verdict.value == "fail"
    sent = verdict.rendered_request
    assert "response_format" not in sent and "```json" in json.dumps(sent["messages"])
    assert sent == fake.calls[0].body


# -- the emulation itself -----------------------------------------------------------------------


def test_emulation_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="unknown provider"):
        FakeLLM(emulate="bedrock")
    with pytest.raises(ValueError, match="unknown json_mode"):
        FakeLLM(json_mode="sometimes")
    with pytest.raises(ValueError, match="Ollama ignores API keys"):
        FakeLLM(emulate="ollama", require_api_key="k")
    with pytest.raises(ValueError, match="apply only to emulate='azure'"):
        FakeLLM(azure_deployments=["d"])


def test_emulated_paths_model_lists_and_usage() -> None:
    import httpx

    body = {"model": "m1", "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client(timeout=5) as client:
        with FakeLLM(emulate="llamacpp") as fake:
            both = [
                client.post(f"{fake.root_url}{path}", json=body).status_code
                for path in ("/v1/chat/completions", "/chat/completions")
            ]
        with FakeLLM(emulate="openai", models=["m1", "m2"], report_usage=False) as fake:
            listed = client.get(f"{fake.base_url}/models").json()
            answer = client.post(f"{fake.base_url}/chat/completions", json=body).json()
            bare_path = client.post(f"{fake.root_url}/chat/completions", json=body).status_code
    assert both == [200, 200]
    assert [m["id"] for m in listed["data"]] == ["m1", "m2"]
    assert "usage" not in answer
    assert bare_path == 404


def test_fake_llm_cli_emulates_a_provider_for_a_real_ping_as_the_docs_print_it(
    tmp_path: Path,
) -> None:
    import os
    import sys

    import _forked_cli

    env = {**os.environ, "LITELLM_API_KEY": "anything-0123456789", "RAGAS_DO_NOT_TRACK": "true"}
    ping_cmd = [sys.executable, "-m", "workbench", "ping", "--candidate"]
    base = [
        sys.executable,
        "-m",
        "workbench",
        "fake-llm",
        "--emulate",
        "litellm",
        "--json-mode",
        "reject",
        "--serve-model",
        "gpt-4o-mini",
        "--export",
        "LITELLM_BASE_URL",
        "--",
    ]
    # fake-llm forked from this process (tests/_forked_cli.py); the ping it starts, as printed
    refused = _forked_cli.run(
        [*base, *ping_cmd, str(EXAMPLES / "litellm-judge@1.yaml")],
        env=env,
        timeout=120,
        cwd=ROOT,
    )
    fallback = _forked_cli.run(
        [*base, *ping_cmd, str(EXAMPLES / "litellm-judge@2.yaml")],
        env=env,
        timeout=120,
        cwd=ROOT,
    )
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "FAILED [no_json_mode]" in refused.stdout
    assert fallback.returncode == 0, fallback.stdout + fallback.stderr
    assert "ok: the endpoint is ready" in fallback.stdout
    assert "anything-0123456789" not in refused.stdout + fallback.stdout


@pytest.mark.parametrize("recipe", ["azure-judge@1", "litellm-judge@2"])
def test_a_recipe_runs_end_to_end_through_the_engine(
    recipe: str, make_dataset, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from conftest import make_case

    from workbench.gold import load_dataset
    from workbench.runs import run_candidate_sync

    gold = make_dataset(  # the recipes' prompt judges against a reference answer
        [
            make_case(
                f"c{i}",
                "pass",
                response=f"Refund in {i} days.",
                grading_notes=None,
                reference="Refunds take up to five business days.",
            )
            for i in range(4)
        ]
    )
    fake, key = serve_like(recipe, monkeypatch)
    try:
        summary = run_candidate_sync(
            load_candidate(EXAMPLES / f"{recipe}.yaml"),
            load_dataset(gold),
            "development",
            tmp_path / "run",
            RunOptions(progress=False, cache_dir=False),
        )
        calls = fake.calls
    finally:
        fake.stop()
    assert summary.verdicts == 4 and summary.errors == 0
    assert len(calls) == 4 and {c.path for c in calls} == {
        EXPECTED_PATH.get(recipe, "/v1/chat/completions")
    }
    records = (tmp_path / "run" / "results.jsonl").read_text()
    assert key not in records
    lines = [json.loads(line) for line in records.splitlines()]
    assert all(
        ("response_format" in line["rendered_request"]) is (recipe == "azure-judge@1")
        for line in lines
    )
