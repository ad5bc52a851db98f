"""Shared builders for small, valid gold datasets and judge results.

Hashes here are computed with :mod:`hashlib` and :mod:`json` directly, not with the
workbench's own helpers, so that tests check the workbench against an independent
implementation of its documented hashing rules.
"""

from __future__ import annotations

import functools
import gc
import hashlib
import itertools
import json
import os
import shutil
from collections import Counter
from collections.abc import Iterator
from itertools import permutations
from pathlib import Path
from typing import Any

import pytest
import yaml

from workbench.results import JudgeResult, ResultLine

RUBRIC_VERSION = "r1"
LABELS = ["pass", "fail", "review_required"]
EVIDENCE_IDS = ("ev-1", "ev-2")

RUBRIC: dict[str, Any] = {
    "name": "support-correctness",
    "version": RUBRIC_VERSION,
    "criterion": "The response applies the refund policy correctly.",
    "labels": LABELS,
    "pass_label": "pass",
    "fail_label": "fail",
    "abstain_labels": ["review_required"],
    "min_reviews": 2,
    "slices": {
        "billing": {"risk": "critical"},
        "general": {"risk": "low"},
        "empty": {"risk": "medium", "description": "declared but has no cases"},
    },
    "evidence_snapshot": "evidence.jsonl",
}

CARD = """---
name: test-gold
version: "1"
intended_use: unit tests
sampling_window: none
reviewer_qualifications: test reviewers
adjudication_procedure: a third reviewer decides
known_gaps: [everything]
excluded_domains: [production use]
privacy_handling: no personal data
source_authority: the test evidence snapshot
---
# Test card
"""

JUDGE: dict[str, Any] = {
    "name": "rubric-judge",
    "version": "1",
    "kind": "imported",
    "model": None,
    "prompt_sha256": None,
    "ragas_version": None,
    "params": {},
}


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def canonical_sha256(obj: Any) -> str:
    """sha256 of sorted-key, compact, UTF-8 JSON (the documented hashing rule)."""
    return sha256_hex(json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False))


def fingerprint(judge: dict[str, Any]) -> str:
    """The judge fingerprint of a *complete* identity dict (all fields present)."""
    return canonical_sha256(judge)


def make_case(
    case_id: str,
    label: str = "pass",
    *,
    reviews: dict[str, str] | list[dict[str, Any]] | None = None,
    partition: str = "development",
    slice: str = "general",
    group: str | None = None,
    response: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A valid gold case dict; ``reviews`` may be ``{reviewer: label}``; ``extra`` overrides."""
    response = f"response for {case_id}" if response is None else response
    if reviews is None:
        reviews = {"rev-a": label, "rev-b": label}
    if isinstance(reviews, dict):
        reviews = [{"reviewer": who, "label": lab} for who, lab in reviews.items()]
    case: dict[str, Any] = {
        "case_id": case_id,
        "partition": partition,
        "group": group or f"group-{case_id}",
        "slice": slice,
        "rubric_version": RUBRIC_VERSION,
        "input": f"question for {case_id}",
        "response": response,
        "response_hash": sha256_hex(response),
        "grading_notes": "The policy allows late refunds only after manual review.",
        "reviews": reviews,
        "adjudication": {"label": label, "reason": "matches the policy", "adjudicator": "adj-1"},
    }
    case.update(extra)
    return case


def write_dataset(
    root: Path,
    lines: list[dict[str, Any] | str | bytes],
    *,
    rubric: dict[str, Any] | str | None = None,
    evidence: tuple[str, ...] | None = EVIDENCE_IDS,
    card: str | None = CARD,
) -> Path:
    """Write gold.jsonl (dicts as JSON, str/bytes as is), rubric.yaml, evidence.jsonl, card.md."""
    root.mkdir(parents=True, exist_ok=True)
    out = bytearray()
    for line in lines:
        if isinstance(line, dict):
            line = json.dumps(line)
        out += line if isinstance(line, bytes) else line.encode("utf-8")
        out += b"\n"
    (root / "gold.jsonl").write_bytes(bytes(out))
    if rubric is None:
        text = _default_rubric_text()
    else:
        text = rubric if isinstance(rubric, str) else yaml.safe_dump(rubric, sort_keys=False)
    (root / "rubric.yaml").write_text(text, encoding="utf-8")
    if evidence is not None:
        rows = [
            json.dumps({"id": eid, "text": f"passage {eid}", "source": "policy"})
            for eid in evidence
        ]
        (root / "evidence.jsonl").write_text("".join(r + "\n" for r in rows), encoding="utf-8")
    if card is not None:
        (root / "card.md").write_text(card, encoding="utf-8")
    return root


@functools.cache
def _default_rubric_text() -> str:
    """:data:`RUBRIC` as YAML, dumped once per process (no test changes it in place)."""
    return yaml.safe_dump(RUBRIC, sort_keys=False)


@pytest.fixture
def make_dataset(tmp_path: Path):
    """``make_dataset(lines, **kw)`` writes a dataset into a fresh directory and returns it."""
    counter = itertools.count()
    approve(tmp_path, "tester")  # a test project: "tester" may freeze its datasets

    def _make(lines: list[dict[str, Any] | str | bytes], **kw: Any) -> Path:
        return write_dataset(tmp_path / f"ds{next(counter)}", lines, **kw)

    return _make


def make_result(
    case: dict[str, Any],
    value: str | None = "pass",
    *,
    error: dict[str, str] | None = None,
    judge: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A valid JudgeResult dict for ``case`` with a correct judge_fingerprint."""
    identity = {**JUDGE, **(judge or {})}
    row: dict[str, Any] = {
        "case_id": case["case_id"],
        "response_hash": case["response_hash"],
        "value": None if error else value,
        "reason": "because",
        "judge": identity,
        "judge_fingerprint": fingerprint(identity),
        "run_id": "run-1",
        "partition": case["partition"],
        "error": error,
        "attempt": 1,
        "repeat": 0,
        "schema_version": 2,
    }
    row.update(extra)
    return row


def write_results(path: Path, rows: list[dict[str, Any] | str | bytes]) -> Path:
    out = bytearray()
    for row in rows:
        if isinstance(row, dict):
            row = json.dumps(row)
        out += (row if isinstance(row, bytes) else row.encode("utf-8")) + b"\n"
    path.write_bytes(bytes(out))
    return path


def result_lines(rows: list[dict[str, Any]]) -> list[ResultLine]:
    """In-memory ResultLines numbered 1..n in list order."""
    return [ResultLine(i, JudgeResult.model_validate(row)) for i, row in enumerate(rows, start=1)]


def fleiss_of(items: list[list[Any]], categories: list[Any]) -> Any:
    """Fleiss' kappa of items given as their labels (the count table built here)."""
    import numpy as np

    from workbench.stats import fleiss_kappa_table

    table = np.zeros((len(items), len(categories)))
    for row, item in enumerate(items):
        for label in item:
            table[row, categories.index(label)] += 1
    return fleiss_kappa_table(table)


def alpha_nominal_of(units: list[dict[str, Any]], categories: list[Any]) -> Any:
    """Nominal Krippendorff's alpha of ``{rater: label}`` units (raters in name order)."""
    import numpy as np

    from workbench.stats import krippendorff_alpha_nominal_matrix

    raters = sorted({r for unit in units for r in unit})
    data = np.full((len(raters), len(units)), np.nan)
    for col, unit in enumerate(units):
        for rater, label in unit.items():
            data[raters.index(rater), col] = categories.index(label)
    return krippendorff_alpha_nominal_matrix(data, len(categories))


def alpha_by_coincidences(units: list[dict[str, object]]) -> float:
    """Nominal alpha from the coincidence matrix: 1 - (n-1)·Σ_{c≠k} o_ck / Σ_{c≠k} n_c·n_k."""
    o: Counter = Counter()
    for unit in units:
        values = list(unit.values())
        m = len(values)
        if m < 2:
            continue
        for x, y in permutations(values, 2):
            o[(x, y)] += 1 / (m - 1)
    n_c: Counter = Counter()
    for (x, _), w in o.items():
        n_c[x] += w
    n = sum(n_c.values())
    observed = sum(w for (x, y), w in o.items() if x != y)
    expected = sum(n_c[x] * n_c[y] for x in n_c for y in n_c if x != y)
    return 1 - (n - 1) * observed / expected


_per_test_dirs = itertools.count()


def per_test_dir(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A new directory for the autouse fixtures of one test (its verdict cache, its project),
    numbered by this process in ``<basetemp>/per-test``: ``mktemp`` lists every entry of the
    base directory to number a new one, and these two per test made it ~1,300 entries deep by
    the end of a worker (1.3 ms a call)."""
    path = tmp_path_factory.getbasetemp() / "per-test" / f"{name}-{next(_per_test_dirs)}"
    path.mkdir(parents=True)  # never an existing one: the count is this process's
    return path


@pytest.fixture(autouse=True)
def _isolated_verdict_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Every test gets its own verdict cache, never the user's ~/.cache."""
    path = per_test_dir(tmp_path_factory, "verdict-cache")
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(path))
    return path


REPO = Path(__file__).resolve().parents[1]
PROJECT_ROOT_ENV = "WORKBENCH_PROJECT_ROOT"  # workbench.project.PROJECT_ROOT_ENV
TEST_LEDGER = "held_out_ledger.jsonl"


# libyaml's loader and dumper where PyYAML has them (every wheel does): the test projects'
# workbench.yaml is read and written for every test (approve), 8x faster than pure Python.
YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
YAML_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _repo_config() -> dict[str, Any]:
    """The repository's approver list and the demo inputs its workbench.yaml names."""
    config = yaml.load((REPO / "workbench.yaml").read_text(encoding="utf-8"), Loader=YAML_LOADER)
    inputs = ("gold", "policy", "candidates", "score_candidate", "controls", "migration_old")
    keys = ("approvers", *inputs, "migration_new")  # workbench.project.INPUT_KEYS and approvers
    return {key: config[key] for key in keys}


@functools.cache
def _project_config_text() -> str:
    """A test project's workbench.yaml: :func:`_repo_config` with a held-out ledger of its own.
    Read once per process (every test makes a project: 8-9 ms each when it was parsed every
    time); no test writes the repository's workbench.yaml (tests/_guard.py fails the session)."""
    config = {**_repo_config(), "held_out_ledger": TEST_LEDGER}
    return yaml.dump(config, Dumper=YAML_DUMPER)


def make_project(directory: Path) -> Path:
    """Make ``directory`` a test project: a ``workbench.yaml`` with the repository's approver
    list and demo inputs (gold, policy, candidates and the calibrate notebook's score candidate,
    controls and migration: what the phase notebooks use by default)
    and a held-out ledger of its own (``held_out_ledger.jsonl`` in it), and the
    repository's ``data/`` and ``notebooks/`` linked in (read only), so notebook parameters
    relative to the project root (``data/demo``) resolve. Returns it."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "workbench.yaml").write_text(_project_config_text(), encoding="utf-8")
    for part in ("data", "notebooks"):
        if not (directory / part).exists():
            (directory / part).symlink_to(REPO / part, target_is_directory=True)
    return directory


def use_project(monkeypatch: pytest.MonkeyPatch, project: Path) -> Path:
    """Pin the project root (held-out ledger, approvers) to ``project`` for the test."""
    monkeypatch.setenv(PROJECT_ROOT_ENV, str(project))
    return project


def current_project() -> Path:
    """The project root the test runs in (set by the fixtures below)."""
    return Path(os.environ[PROJECT_ROOT_ENV])


def copy_project(monkeypatch: pytest.MonkeyPatch, directory: Path) -> Path:
    """Copy the current project's configuration and held-out ledger (with its items) to
    ``directory`` and pin the project root there: a test that changes a ledger it read from a
    shared or module project changes its own copy."""
    source = current_project()
    make_project(directory)
    shutil.copyfile(source / "workbench.yaml", directory / "workbench.yaml")
    for name in (TEST_LEDGER, TEST_LEDGER + ".items"):
        if (source / name).is_dir():
            shutil.copytree(source / name, directory / name)
        elif (source / name).is_file():
            shutil.copyfile(source / name, directory / name)
    for path in (directory / TEST_LEDGER, *(directory / (TEST_LEDGER + ".items")).glob("*")):
        if path.exists():
            path.chmod(path.stat().st_mode | 0o200)
    return use_project(monkeypatch, directory)


@pytest.fixture(autouse=True, scope="session")
def _session_project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The project of session-scoped fixtures: never the repository's (see below)."""
    project = make_project(tmp_path_factory.mktemp("session-project"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(PROJECT_ROOT_ENV, str(project))
        yield project


@pytest.fixture(autouse=True, scope="module")
def _module_project(
    _session_project: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    """The project a test module's module-scoped fixtures (a certified world) run in.

    The project root is pinned from ``$WORKBENCH_PROJECT_ROOT`` (workbench/project/_root.py): the
    suite runs with the repository as its working directory, whose ``workbench.yaml`` would make
    the repository's own held-out ledger and approver list the project's. No test may write
    there, so every module, and every test (below), has a project of its own.
    """
    project = make_project(tmp_path_factory.mktemp("module-project"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(PROJECT_ROOT_ENV, str(project))
        yield project


def _uses_a_module_fixture(request: pytest.FixtureRequest) -> bool:
    """Whether the test, in a module that sets ``MODULE_PROJECT = True`` (its module fixtures
    certify a world its tests read the ledger of), uses a module- or session-scoped fixture of
    its own module."""
    if not getattr(request.module, "MODULE_PROJECT", False):
        return False
    info = request.node._fixtureinfo
    for name in info.names_closure:
        defs = info.name2fixturedefs.get(name) or ()
        if defs and defs[-1].scope in ("module", "session") and defs[-1].baseid.endswith(".py"):
            return True
    return False


@pytest.fixture(autouse=True)
def _test_project(
    request: pytest.FixtureRequest,
    _module_project: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> Path:
    """Every test runs in a project of its own (its held-out ledger empty, the repository's
    approvers), except, in a module that sets ``MODULE_PROJECT = True``, a test that uses a
    module-scoped fixture of its module: it runs in the project that fixture certified in (the
    module's, or a shared certification's), to read its ledger; it never writes there (it copies
    the project first, :func:`copy_project`). :func:`approve` adds names to the current
    project's list."""
    if _uses_a_module_fixture(request):
        return current_project()
    return use_project(monkeypatch, make_project(per_test_dir(tmp_path_factory, "project")))


DEMO_URL_ENVS = ("WORKBENCH_DEMO_LLM_URL", "WORKBENCH_DEMO_RANKER_URL", "WORKBENCH_DEMO_NOISE_URL")
"""The variables the demo candidates read their base URL from (``endpoint.base_url_env``)."""


@pytest.fixture(autouse=True)
def _no_inherited_demo_urls(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees a demo URL it did not set (a shell's, or one another test's helper exported)."""
    for name in DEMO_URL_ENVS:
        monkeypatch.delenv(name, raising=False)


# Tests that need ../shared/datasets: the `datasets` marker, skip or fail, and the count at the end.
import _cpu_log  # noqa: E402
import _datasets  # noqa: E402
import _kernels  # noqa: E402
import _schedule  # noqa: E402
from _datasets import (  # noqa: E402,F401  (pytest finds hooks by name in conftest)
    pytest_runtest_makereport,
    pytest_terminal_summary,
)

# The session fails if a test wrote into data/, notebooks/ or examples/ (checked once, by the
# process that owns the session: the only one or the pytest-xdist controller).
from _guard import pytest_sessionfinish, pytest_sessionstart  # noqa: E402,F401

# An unmarked test that executes a notebook or launches chromium fails (`make test-fast` relies
# on the `notebook` and `browser` markers).
from _markers import (  # noqa: E402,F401
    pytest_collection_finish,
    pytest_runtest_call,
    pytest_runtest_setup,
)


def pytest_configure(config: pytest.Config) -> None:
    # pytest's workers hold every imported library for minutes: young collections every 10,000
    # net allocations instead of 700 (CPython's ratios kept) spare re-walking them. A setting of
    # the test harness only; the workbench's own processes keep CPython's default.
    gc.set_threshold(10_000, 10, 10)
    _datasets.pytest_configure(config)
    _schedule.configure(config)  # the workers receive the modules in the order set below
    # Notebook kernels forked from one process that has imported them (tests/_kernels.py).
    config.pluginmanager.register(_kernels, "workbench-kernel-zygote")
    _kernels.configure(config)
    _cpu_log.configure(config)  # bench/bench_tests.py --by-process: CPU per test


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _datasets.pytest_collection_modifyitems(config, items)
    # The long modules start at once, the short ones fill in (tests/_schedule.py).
    _schedule.slow_modules_first(items)


def undocumented_fields(model: type[Any], *exempt: str) -> list[str]:
    """The fields of ``model`` with no docstring under them (``exempt`` aside): every record
    documents each field with one (read by :func:`workbench._docs.field_docstrings`)."""
    from workbench._docs import field_docstrings

    docs = field_docstrings(model)
    return [name for name in model.model_fields if name not in exempt and not docs.get(name)]


def approve(folder: Path, *names: str) -> Path:
    """Add ``names`` to the approver list of the current test project (the pinned project root:
    the list never comes from beside an input); ``folder`` is created, as the input's place."""
    folder.mkdir(parents=True, exist_ok=True)
    path = current_project() / "workbench.yaml"
    config = (
        yaml.load(path.read_text(encoding="utf-8"), Loader=YAML_LOADER) if path.exists() else None
    )
    config = config if isinstance(config, dict) else {}
    listed = config.get("approvers")
    current = listed if isinstance(listed, list) else []
    config["approvers"] = sorted({*current, *names})
    path.write_text(yaml.dump(config, Dumper=YAML_DUMPER, sort_keys=False), encoding="utf-8")
    return path
