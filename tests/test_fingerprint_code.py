"""A function judge's fingerprint covers the code that runs, and ``ci sentinel`` names it.

Issue 28, point 6: the fingerprint of a ``ragas-function`` judge hashed only the source of the
module defining the function, so an edit of a module it imports changed what the judge does
and nothing else. Now :func:`~workbench.judges.code_coverage` follows the imports of the
judge's own package (relative imports, imports inside functions and ``try`` blocks, the
packages' ``__init__.py`` on the way) and records the installed version of every third-party
distribution; the fingerprint holds both (``code_sha256``, ``dependencies``).

Point 10: a Ragas upgrade in ``pyproject.toml`` gave ``workbench ci sentinel`` "0 affected
candidates". The lane now names every Ragas-based candidate for it, every function candidate
for a change to any module its code imports, every label candidate for a release-policy edit,
and the model of a changed spec.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from ci_support import git, git_project
from click.testing import CliRunner

from workbench._io import sha256_file
from workbench.ci import discover
from workbench.ci._git import changed_since
from workbench.ci._sentinel import affected_candidates
from workbench.cli.main import main
from workbench.judges import NOT_INSTALLED, code_coverage, load_candidate, ragas_version

INIT = '"""The package."""\n\nfrom . import shared  # noqa: F401\n'
METRIC = '''"""Defines the judge; the rule lives elsewhere."""

from ragas.metrics import discrete_metric

from .rules import verdict


@discrete_metric(name="{name}", allowed_values=["pass", "fail"])
def judge(response: str, grading_notes: str):
    return verdict(response)
'''
RULES = '''"""The rule."""

import json

try:
    import not_a_real_distribution_h5  # noqa: F401
except ImportError:
    pass


def verdict(response):
    from .sub.deep import LIMIT
    import yaml  # noqa: F401

    return "pass" if len(response) > LIMIT else "fail"
'''
DEEP = "from .. import shared\n\nLIMIT = shared.BASE * 2\n"
SHARED = "BASE = 20\n"
UNUSED = "raise RuntimeError('never imported')\n"


def _package(root: Path, name: str) -> Path:
    package = root / name
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text(INIT)
    (package / "metric.py").write_text(METRIC.format(name=f"{name}_judge"))
    (package / "rules.py").write_text(RULES)
    (package / "shared.py").write_text(SHARED)
    (package / "unused.py").write_text(UNUSED)
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "deep.py").write_text(DEEP)
    return package


@pytest.fixture
def on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    code = tmp_path / "code"
    code.mkdir()
    monkeypatch.syspath_prepend(str(code))
    yield code
    for name, module in list(sys.modules.items()):  # forget this test's modules only
        if str(getattr(module, "__file__", None) or "").startswith(str(code)):
            del sys.modules[name]


def _spec(path: Path, function: str, name: str = "pkg-judge") -> Path:
    spec = {
        "schema_version": 1,
        "name": name,
        "version": "1",
        "kind": "ragas-function",
        "labels": ["pass", "fail"],
        "function": function,
    }
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


def test_the_coverage_follows_every_import_of_the_own_package(on_path: Path) -> None:
    _package(on_path, "covpkg_h5")
    module = importlib.import_module("covpkg_h5.metric")
    code = code_coverage(module)
    assert code.root == on_path.resolve()
    assert sorted(code.manifest) == [
        "covpkg_h5/__init__.py",  # runs before metric (and imports shared)
        "covpkg_h5/metric.py",
        "covpkg_h5/rules.py",  # from .rules import verdict
        "covpkg_h5/shared.py",  # from .. import shared, two levels up
        "covpkg_h5/sub/__init__.py",
        "covpkg_h5/sub/deep.py",  # imported inside a function
    ]  # unused.py: never imported, not covered
    assert code.files["covpkg_h5/rules.py"] == (on_path / "covpkg_h5" / "rules.py").read_bytes()
    assert code.dependencies["ragas"] == ragas_version()
    assert code.dependencies["PyYAML"]  # import yaml: the distribution's name, not the module's
    assert code.dependencies["not_a_real_distribution_h5"] == NOT_INSTALLED  # in a try block
    assert "json" not in code.dependencies  # the standard library is not a dependency


def test_a_script_module_covers_its_own_folder(on_path: Path) -> None:
    (on_path / "helper_h5.py").write_text("THRESHOLD = 3\n")
    (on_path / "script_judge_h5.py").write_text("import helper_h5\nimport numpy\n")
    code = code_coverage(importlib.import_module("script_judge_h5"))
    assert sorted(code.manifest) == ["helper_h5.py", "script_judge_h5.py"]
    assert "numpy" in code.dependencies and "helper_h5" not in code.dependencies


def test_an_edit_of_an_imported_module_changes_the_fingerprint(
    on_path: Path, tmp_path: Path
) -> None:
    _package(on_path, "fppkg_h5")
    spec = _spec(tmp_path / "pkg-judge@1.yaml", "fppkg_h5.metric:judge")
    judge = load_candidate(spec)
    params = judge.identity.params
    assert set(params["code_sha256"]) >= {"fppkg_h5/rules.py", "fppkg_h5/sub/deep.py"}
    assert params["dependencies"]["ragas"] == ragas_version()
    before = judge.identity.fingerprint()
    assert load_candidate(spec).identity.fingerprint() == before  # stable while nothing changes
    deep = on_path / "fppkg_h5" / "sub" / "deep.py"
    deep.write_text(DEEP.replace("* 2", "* 0"))  # every response now passes
    assert load_candidate(spec).identity.fingerprint() != before
    deep.write_text(DEEP)
    assert load_candidate(spec).identity.fingerprint() == before


def test_the_ranking_function_kind_covers_its_code_too() -> None:
    ROOT = Path(__file__).resolve().parents[1]
    judge = load_candidate(ROOT / "data" / "candidates" / "policy-ranker@1.yaml")
    covered = judge.identity.params["code_sha256"]
    assert "workbench/demo/ranking.py" in covered and "workbench/__init__.py" in covered
    assert judge.identity.params["dependencies"]["ragas"] == ragas_version()


# -- ci sentinel names what a change affects ---------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = git_project(tmp_path / "repo")
    (repo / "pyproject.toml").write_text(
        f'[project]\nname = "judges"\nversion = "1"\ndependencies = ["ragas=={ragas_version()}"]\n'
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "pin ragas")
    return repo


RAGAS_CANDIDATES = {
    "coverage-judge@1",
    "noise-judge@1",
    "policy-ranker@1",
    "rubric-judge@1",
    "rubric-judge@2",
    "rubric-judge@3",
    "support-llm-judge@1",
    "support-llm-judge@2",
    "support-llm-ranker@1",
}


def test_a_ragas_upgrade_in_pyproject_affects_every_ragas_candidate(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEMO_LLM_API_KEY", "test-placeholder-key")
    for name in ("WORKBENCH_DEMO_LLM_URL", "WORKBENCH_DEMO_NOISE_URL", "WORKBENCH_DEMO_RANKER_URL"):
        monkeypatch.setenv(name, "http://127.0.0.1:9/v1")  # never called
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace(ragas_version(), "9.9.9"))
    result = CliRunner().invoke(
        main,
        ["ci", "sentinel", "--since", "HEAD", "--project", project, "--budget-usd", "0.000001"],
        catch_exceptions=False,
    )
    # nothing is called: the cap cannot cover the LLM judges (incomplete, exit 3), but every
    # Ragas-based candidate is named, with the Ragas change as its reason
    assert result.exit_code == 3, result.output
    assert f"{len(RAGAS_CANDIDATES)} affected candidate(s)" in result.output, result.output
    reason = f"ragas: pyproject.toml ragas=={ragas_version()} -> ragas==9.9.9"
    for label in RAGAS_CANDIDATES:
        line = next(line for line in result.output.splitlines() if f"  {label} (" in line)
        assert reason in line, line
    assert "budget_insufficient" in result.output and "Traceback" not in result.output


def test_an_edit_of_a_module_a_function_judge_imports_affects_it(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _package(project, "cipkg_h5")
    _spec(project / "data" / "candidates" / "pkg-judge@1.yaml", "cipkg_h5.metric:judge")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "a judge package")
    monkeypatch.syspath_prepend(str(project))
    deep = project / "cipkg_h5" / "sub" / "deep.py"
    deep.write_text(DEEP.replace("* 2", "* 0"))
    inv = discover(project)
    found, _, problems = affected_candidates(inv, changed_since(project, "HEAD"), {})
    assert problems == [] and [(c.spec.label, c.reasons, c.code_changed) for c in found] == [
        ("pkg-judge@1", ["function code: cipkg_h5/sub/deep.py"], True)
    ]


def test_a_policy_edit_affects_every_label_candidate_and_a_model_change_is_named(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEMO_LLM_API_KEY", "test-placeholder-key")
    monkeypatch.setenv("WORKBENCH_DEMO_LLM_URL", "http://127.0.0.1:9/v1")  # never called
    policy = project / "data" / "policies" / "support-release@1.yaml"
    policy.write_text(policy.read_text() + "\n# edited in place\n")
    spec = project / "data" / "candidates" / "support-llm-judge@2.yaml"
    spec.write_text(spec.read_text().replace("model: fake-judge", "model: other-judge"))
    result = CliRunner().invoke(
        main,
        ["ci", "sentinel", "--since", "HEAD", "--project", project, "--budget-usd", "0.000001"],
        catch_exceptions=False,
    )
    assert result.exit_code == 3, result.output
    labels = {
        "coverage-judge@1",
        "rubric-judge@1",
        "rubric-judge@2",
        "rubric-judge@3",
        "support-llm-judge@1",
        "support-llm-judge@2",
    }
    assert f"{len(labels)} affected candidate(s)" in result.output, result.output
    for label in labels:
        line = next(line for line in result.output.splitlines() if f"  {label} (" in line)
        assert "policy: data/policies/support-release@1.yaml" in line, line
    line = next(line for line in result.output.splitlines() if "  support-llm-judge@2 (" in line)
    assert "model: fake-judge -> other-judge" in line, line


def test_an_edit_that_keeps_size_and_mtime_still_changes_the_fingerprint(
    on_path: Path, tmp_path: Path
) -> None:
    """Issue 31: the fingerprint reused a file's hash by (path, mtime, size); one process (a
    notebook, the UI) that loaded the judge, then saw its import edited to the same size with
    the mtime put back, kept the old hash. Every call hashes the bytes it reads now."""
    _package(on_path, "samesize_h5")
    spec = _spec(tmp_path / "pkg-judge@1.yaml", "samesize_h5.metric:judge")
    before = load_candidate(spec).identity
    deep = on_path / "samesize_h5" / "sub" / "deep.py"
    stat = deep.stat()
    deep.write_text(DEEP.replace("* 2", "* 0"))  # same length, every response now passes
    os.utime(deep, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert deep.stat().st_size == stat.st_size and deep.stat().st_mtime_ns == stat.st_mtime_ns
    after = load_candidate(spec).identity
    assert after.params["code_sha256"]["samesize_h5/sub/deep.py"] == sha256_file(deep)
    assert after.fingerprint() != before.fingerprint()


def test_an_import_added_at_the_same_size_is_followed(on_path: Path) -> None:
    """The imports of a file are reused only for the same bytes: a new import in an edit that
    keeps size and mtime brings its module into the coverage."""
    _package(on_path, "newimp_h5")
    module = importlib.import_module("newimp_h5.metric")
    assert "newimp_h5/unused.py" not in code_coverage(module).manifest
    deep = on_path / "newimp_h5" / "sub" / "deep.py"
    stat = deep.stat()
    edited = "from .. import unused\nLIMIT = 40\n"
    edited += "#" * (len(DEEP) - len(edited) - 1) + "\n"  # padded to DEEP's length
    assert len(edited) == len(DEEP)
    deep.write_text(edited)
    os.utime(deep, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert "newimp_h5/unused.py" in code_coverage(module).manifest


def test_a_dependency_reinstalled_in_place_shows_its_new_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A distribution's version is read from its METADATA at every call (reused only for the
    same bytes): a reinstall into the same folder, mtime put back, is seen."""
    site = tmp_path / "site"
    info = site / "fakedist_h5-1.0.dist-info"
    info.mkdir(parents=True)
    (site / "fakedist_h5.py").write_text("")
    metadata_file = info / "METADATA"
    metadata_file.write_text("Metadata-Version: 2.1\nName: fakedist_h5\nVersion: 1.0.0\n")
    (info / "top_level.txt").write_text("fakedist_h5\n")
    monkeypatch.syspath_prepend(str(site))
    (tmp_path / "uses_h5.py").write_text("import fakedist_h5\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("uses_h5")
    try:
        assert code_coverage(module).dependencies["fakedist_h5"] == "1.0.0"
        stat = metadata_file.stat()
        metadata_file.write_text("Metadata-Version: 2.1\nName: fakedist_h5\nVersion: 6.6.6\n")
        os.utime(metadata_file, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        assert code_coverage(module).dependencies["fakedist_h5"] == "6.6.6"
    finally:
        sys.modules.pop("uses_h5", None)
