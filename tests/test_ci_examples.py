"""The CI examples are valid GitHub Actions / GitLab CI files and wire the three lanes as
documented.

Syntax: ``check-jsonschema`` (a test dependency) validates each file against the GitHub
workflow and GitLab CI schemas it vendors, offline (``--builtin-schema``). Structure: the
files are parsed and the triggers, lanes, artifacts and secrets asserted.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

ROOT = Path(__file__).resolve().parents[1]
GITHUB = ROOT / "examples" / "ci" / "github-actions.yml"
GITLAB = ROOT / "examples" / "ci" / "gitlab-ci.yml"


def _check_jsonschema(schema: str, path: Path) -> Result:
    """``check-jsonschema --builtin-schema SCHEMA PATH``, its click command run in this process
    (as its console script runs it, without a new interpreter's start-up)."""
    from check_jsonschema.cli.main_command import main

    return CliRunner().invoke(main, ["--builtin-schema", schema, str(path)])


@pytest.mark.parametrize(
    ("schema", "path"), [("vendor.github-workflows", GITHUB), ("vendor.gitlab-ci", GITLAB)]
)
def test_examples_validate_against_the_vendored_schema(schema: str, path: Path) -> None:
    run = _check_jsonschema(schema, path)
    assert run.exit_code == 0, run.output
    assert "validation done" in run.output


@pytest.mark.parametrize(
    ("schema", "broken", "named"),
    [
        (
            "vendor.github-workflows",
            "jobs:\n  a:\n    runs-onn: ubuntu-latest\n    steps: [{run: echo}]\non: [push]\n",
            "runs-onn",
        ),
        ("vendor.gitlab-ci", "contracts:\n  scriptt: [echo]\n  when: sometimes\n", "scriptt"),
    ],
)
def test_the_schema_check_catches_a_broken_file(
    tmp_path: Path, schema: str, broken: str, named: str
) -> None:
    path = tmp_path / "broken.yml"
    path.write_text(broken, encoding="utf-8")
    run = _check_jsonschema(schema, path)
    assert run.exit_code == 1, run.output
    assert "Schema validation errors" in run.output and named in run.output, run.output


def _steps_text(job: dict) -> str:
    return "\n".join(str(step.get("run", "")) for step in job["steps"])


def test_github_actions_wires_the_three_lanes() -> None:
    wf = yaml.safe_load(GITHUB.read_text(encoding="utf-8"))
    on = wf[True] if True in wf else wf["on"]  # YAML 1.1 reads a bare `on` as true
    assert "pull_request" in on and "workflow_dispatch" in on
    assert set(on["workflow_dispatch"]["inputs"]) == {"candidate", "policy", "gold"}
    jobs = wf["jobs"]
    assert wf["env"]["RAGAS_DO_NOT_TRACK"] == "true"
    # contracts: every pull request, no secret.
    assert jobs["contracts"]["if"] == "github.event_name == 'pull_request'"
    assert "workbench ci contracts --junit" in _steps_text(jobs["contracts"])
    assert "secrets." not in yaml.safe_dump(jobs["contracts"])
    # sentinel: only when judge-facing files changed (a paths filter), with full history and the
    # key.
    filt = next(
        s
        for s in jobs["changes"]["steps"]
        if str(s.get("uses", "")).startswith("dorny/paths-filter")
    )
    judge_paths = yaml.safe_load(filt["with"]["filters"])["judge"]
    assert {
        "data/candidates/**",
        "data/*/rubric.yaml",
        "data/*/sentinels.yaml",
        "data/controls/**",
    } <= set(judge_paths)
    assert (
        jobs["sentinel"]["needs"] == "changes"
        and "needs.changes.outputs.judge == 'true'" in jobs["sentinel"]["if"]
    )
    assert jobs["sentinel"]["env"]["OPENAI_API_KEY"] == "${{ secrets.OPENAI_API_KEY }}"
    checkout = next(
        s
        for s in jobs["sentinel"]["steps"]
        if str(s.get("uses", "")).startswith("actions/checkout")
    )
    assert checkout["with"]["fetch-depth"] == 0
    assert 'workbench ci sentinel --since "origin/$BASE_REF" --junit' in _steps_text(
        jobs["sentinel"]
    )
    assert "--scope pr" in _steps_text(jobs["sentinel"])
    assert {"data/ranking/**", "data/noise/**"} <= set(judge_paths)
    # the scheduled broader run: every fixture and pair of the judges changed in the last day
    assert "schedule" in on and on["schedule"][0]["cron"]
    scheduled = jobs["sentinel-scheduled"]
    assert scheduled["if"] == "github.event_name == 'schedule'"
    assert scheduled["env"]["OPENAI_API_KEY"] == "${{ secrets.OPENAI_API_KEY }}"
    assert "--scope scheduled" in _steps_text(scheduled) and "--junit" in _steps_text(scheduled)
    # release: by hand only, approved environment, the key from a secret, inputs through env.
    assert (
        jobs["release"]["if"] == "github.event_name == 'workflow_dispatch'"
        and jobs["release"]["environment"] == "release"
    )
    assert jobs["release"]["env"]["OPENAI_API_KEY"] == "${{ secrets.OPENAI_API_KEY }}"
    release_run = _steps_text(jobs["release"])
    assert (
        "workbench ci release" in release_run
        and "--junit" in release_run
        and "--json" in release_run
        and "${{" not in release_run
    )
    # Every lane uploads its reports and run records, pass or fail.
    for name, wanted in (
        ("contracts", "runs/ci/contracts/"),
        ("sentinel", "runs/ci/sentinel/"),
        ("sentinel-scheduled", "runs/ci/sentinel-scheduled/"),
        ("release", "data/*/held_out_ledger.jsonl"),
    ):
        upload = next(
            s
            for s in jobs[name]["steps"]
            if str(s.get("uses", "")).startswith("actions/upload-artifact")
        )
        assert (
            upload["if"] == "always()"
            and wanted in upload["with"]["path"]
            and "reports/" in upload["with"]["path"]
        )


def test_gitlab_ci_wires_the_three_lanes() -> None:
    ci = yaml.safe_load(GITLAB.read_text(encoding="utf-8"))
    assert (
        ci["stages"] == ["contracts", "sentinel", "release"]
        and ci["variables"]["RAGAS_DO_NOT_TRACK"] == "true"
    )
    contracts, sentinel, release = ci["contracts"], ci["sentinel"], ci["release"]
    assert contracts["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
    assert any("workbench ci contracts --junit" in line for line in contracts["script"])
    (rule,) = sentinel["rules"]
    assert rule["if"] == '$CI_PIPELINE_SOURCE == "merge_request_event"'
    assert {
        "data/candidates/**/*",
        "data/*/rubric.yaml",
        "data/*/sentinels.yaml",
        "data/controls/**/*",
    } <= set(rule["changes"]["paths"])
    assert sentinel["variables"]["GIT_DEPTH"] == "0"
    assert any('--since "$CI_MERGE_REQUEST_DIFF_BASE_SHA"' in line for line in sentinel["script"])
    assert any("--scope pr" in line for line in sentinel["script"])
    assert {"data/ranking/**/*", "data/noise/**/*"} <= set(rule["changes"]["paths"])
    scheduled = ci["sentinel-scheduled"]
    assert scheduled["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "schedule"'}]
    assert any("--scope scheduled" in line for line in scheduled["script"])
    assert (
        release["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "web"', "when": "manual"}]
        and release["environment"]["name"] == "release"
    )
    assert any("workbench ci release" in line and "--json" in line for line in release["script"])
    text = GITLAB.read_text(encoding="utf-8")
    assert (
        "masked, protected CI/CD variable" in text
        and "OPENAI_API_KEY" in text
        and "sk-" not in text
    )
    for job, wanted in (
        (contracts, "runs/ci/contracts/"),
        (sentinel, "runs/ci/sentinel/"),
        (scheduled, "runs/ci/sentinel-scheduled/"),
        (release, "data/*/held_out_ledger.jsonl"),
    ):
        assert (
            job["artifacts"]["when"] == "always"
            and wanted in job["artifacts"]["paths"]
            and "junit" in job["artifacts"]["reports"]
        )


def test_the_projects_own_ci_runs_the_contracts_lane_after_the_tests() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "make test" in script and ".venv/bin/workbench ci contracts" in script
    assert script.index("make test") < script.index("workbench ci contracts")
