"""Staleness: has anything the certification saw changed since?

Stale when the Ragas version (installed, or excluded by the project's pin), the rubric
version, the gold, the policy file's hash, or the judge (model, prompt, code, dependencies,
fingerprint) differs. A stale judge loses ``block`` and cannot be granted or promoted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from .._io import read_json_file, sha256_file, sha256_json
from .._load import load_yaml
from .._record import Record as _Model
from ..errors import WorkbenchError
from ..heldout import gold_directory
from ._certified import RUN_MANIFEST, ReportFacts

StaleKind = Literal[
    "ragas_version",
    "rubric_version",
    "gold_release",
    "policy",
    "model",
    "prompt",
    "code",
    "dependencies",
    "candidate",
]


class GoldState(_Model):
    """The gold dataset as it is now, read without validating its records."""

    path: str
    """The dataset directory."""
    rubric_version: str | None
    """The rubric's version (None when the rubric cannot be read)."""
    dataset_sha256: str | None
    """The dataset hash as ``workbench validate`` computes it; None when a file is missing."""
    release: str | None
    """The latest frozen release of exactly this state, or None (not frozen)."""
    problems: list[str] = Field(default_factory=list)
    """What could not be read."""


class StaleReason(_Model):
    """One thing that differs from what the certification saw."""

    kind: StaleKind
    """What changed (a :data:`StaleKind`)."""
    certified: str | None
    """What the certification saw."""
    now: str | None
    """What there is now."""
    message: str
    """One sentence."""


def gold_state(gold: str | Path) -> GoldState:
    """The rubric version, dataset hash and release of ``gold`` now, read without validating every
    record (a changed rubric version invalidates them, and status must still answer)."""
    from ..approval import read_release_log

    root = gold_directory(gold)
    problems: list[str] = []
    rubric_path = root / "rubric.yaml"
    gold_path = root / "gold.jsonl"
    version: str | None = None
    evidence: Path | None = None
    try:
        raw = load_yaml(
            rubric_path, prefix="rubric", what="rubric", missing_fix="", shape=("not a mapping", "")
        ).data
        version = str(raw["version"]) if raw.get("version") is not None else None
        if raw.get("evidence_snapshot"):
            evidence = (rubric_path.parent / str(raw["evidence_snapshot"])).resolve()
    except WorkbenchError as exc:  # missing, unreadable, bad or duplicate-key YAML, not a mapping
        problems.append(
            f"{rubric_path}: the rubric cannot be read"
            f" ({exc.problems[0].code if exc.problems else exc.summary})"
        )
    digest: str | None = None
    try:
        digest = sha256_json(
            {
                "gold": sha256_file(gold_path),
                "rubric": sha256_file(rubric_path),
                "evidence": sha256_file(evidence) if evidence else None,
            }
        )
    except OSError as exc:
        problems.append(f"{root}: the dataset hash cannot be computed ({exc.strerror or exc})")
    release: str | None = None
    try:
        log = read_release_log(root)
        problems += [p.format() for p in log.problems]
        latest = log.latest_for(digest) if digest else None
        release = latest.release_id if latest is not None else None
    except (OSError, WorkbenchError) as exc:
        problems.append(f"{root}: the release log cannot be read ({exc})")
    return GoldState(
        path=str(root),
        rubric_version=version,
        dataset_sha256=digest,
        release=release,
        problems=problems,
    )


def _load(spec: str | Path) -> Any:
    from ..judges import load_candidate

    try:
        return load_candidate(spec)
    except (WorkbenchError, OSError, ValueError, ImportError):
        return None


def _certified(report_dir: str) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The judge identity the report's held-out run recorded (or None) and its lock (or {})."""
    root = Path(report_dir)

    def read(rel: str) -> dict[str, Any]:
        try:
            raw = read_json_file(root / rel)
        except (OSError, ValueError):
            return {}
        return raw if isinstance(raw, dict) else {}

    judge = read(RUN_MANIFEST).get("judge")
    return (judge if isinstance(judge, dict) else None), read("lock.json")


def _policy(lock: dict[str, Any]) -> tuple[str, str | None, str] | None:
    """``(certified, now, message)`` when the policy file certified under changed (module doc)."""
    certified = lock.get("evidence", {}).get("policy") if lock else None
    recorded = lock.get("policy_file")
    if not isinstance(recorded, str):
        return (
            str(certified)[:12],
            None,
            "the report does not record the policy file it was certified under: whether it"
            " changed cannot be told (recertify to record it)",
        )
    try:
        now: str | None = sha256_file(recorded)
    except OSError:
        now = None
    if now == certified:
        return None
    if now is None:
        return str(certified)[:12], None, f"the policy file certified under, {recorded}, is gone"
    return (
        str(certified)[:12],
        now[:12],
        f"the policy file {recorded} was edited since certification (sha256"
        f" {str(certified)[:12]} then, {now[:12]} now): a policy change needs a new version and"
        " a new certification",
    )


def _ragas_pin(places: list[Path], certified: str | None) -> tuple[str, str] | None:
    """``(pyproject, requirement)`` when the nearest project pins a Ragas the certified version
    does not meet."""
    from ..judges import project_requirements, requirement_allows

    for place in places:
        found = next(
            (
                d / "pyproject.toml"
                for d in (place, *place.parents)
                if (d / "pyproject.toml").is_file()
            ),
            None,
        )
        if found is None:
            continue
        try:
            wanted = project_requirements(found.read_text(encoding="utf-8")).get("ragas")
        except (OSError, UnicodeDecodeError):
            return None
        if wanted is None or requirement_allows(wanted, certified) is True:
            return None
        return str(found), f"ragas{wanted}"
    return None


def _diff(certified: dict[str, str], now: dict[str, str], limit: int = 6) -> list[str]:
    out = [f"{k} changed" for k in sorted(certified.keys() & now.keys()) if certified[k] != now[k]]
    out += [f"{k} added" for k in sorted(now.keys() - certified.keys())]
    out += [f"{k} removed" for k in sorted(certified.keys() - now.keys())]
    return out[:limit] + ([f"and {len(out) - limit} more"] if len(out) > limit else [])


def _versions(certified: dict[str, str], now: dict[str, str]) -> list[str]:
    keys = sorted(certified.keys() | now.keys())
    return [
        f"{k} {certified.get(k, '(none)')} -> {now.get(k, '(none)')}"
        for k in keys
        if certified.get(k) != now.get(k)
    ]


def _judge_changes(
    was: dict[str, Any] | None, judge: Any, spec: str | Path
) -> list[tuple[StaleKind, str | None, str | None, str]]:
    """How the judge at ``spec`` differs from ``was``: prompt, code, dependencies."""
    now = judge.identity.model_dump(mode="json")
    if was is None:
        return []
    out: list[tuple[StaleKind, str | None, str | None, str]] = []
    old_params, new_params = was.get("params") or {}, now.get("params") or {}

    def mapping(params: Any, key: str) -> dict[str, str] | None:
        value = params.get(key) if isinstance(params, dict) else None
        return value if isinstance(value, dict) else None

    old_code, new_code = mapping(old_params, "code_sha256"), mapping(new_params, "code_sha256")
    if new_code is not None and old_code is None:
        message = (
            f"the report records no manifest of the code {judge.spec.function} runs (certified"
            " before the fingerprint covered it): whether the code changed cannot be told;"
            " recertify"
        )
        out.append(("code", None, sha256_json(new_code)[:12], message))
    elif new_code is not None and old_code is not None and new_code != old_code:
        changed = "; ".join(_diff(old_code, new_code))
        message = f"the code {judge.spec.function} runs changed since certification: {changed}"
        out.append(("code", sha256_json(old_code)[:12], sha256_json(new_code)[:12], message))
    elif was.get("prompt_sha256") != now.get("prompt_sha256"):
        old, new = str(was.get("prompt_sha256"))[:12], str(now.get("prompt_sha256"))[:12]
        message = f"the prompt of {spec} changed since certification (sha256 {old} -> {new})"
        out.append(("prompt", old, new, message))
    old_deps, new_deps = mapping(old_params, "dependencies"), mapping(new_params, "dependencies")
    if new_deps is not None and old_deps is not None and old_deps != new_deps:
        changed = "; ".join(_versions(old_deps, new_deps))
        message = f"a dependency of the judge's code changed since certification: {changed}"
        out.append(
            ("dependencies", sha256_json(old_deps)[:12], sha256_json(new_deps)[:12], message)
        )
    return out


def _rest_changed(was: dict[str, Any] | None, judge: Any) -> bool:
    """Whether the identity differs beyond model, prompt, Ragas, code and dependencies."""
    if was is None:
        return True
    now = judge.identity.model_dump(mode="json")
    skip = {"model", "prompt_sha256", "ragas_version"}
    params = {"code_sha256", "dependencies"}

    def rest(identity: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in identity.items() if k not in skip}
        out["params"] = {k: v for k, v in (identity.get("params") or {}).items() if k not in params}
        return out

    return rest(was) != rest(now)


def _ragas(f: ReportFacts, installed: str, places: list[Path]) -> list[StaleReason]:
    out: list[StaleReason] = []
    if f.ragas_version != installed:
        message = (
            f"certified with Ragas {f.ragas_version}, Ragas {installed} is installed: the judge"
            " may behave differently"
        )
        out.append(_reason("ragas_version", f.ragas_version, installed, message))
    pin = _ragas_pin(places, f.ragas_version)
    if pin is not None:
        message = (
            f"certified with Ragas {f.ragas_version}, the project now requires {pin[1]}"
            f" ({pin[0]}): recertify with the Ragas it will run"
        )
        out.append(_reason("ragas_version", f.ragas_version, pin[1], message))
    return out


def _gold(f: ReportFacts, gold: GoldState) -> list[StaleReason]:
    out: list[StaleReason] = []
    if f.rubric_version != gold.rubric_version:
        message = (
            f"certified against rubric {f.rubric_version}, the gold's rubric is now"
            f" {gold.rubric_version}"
        )
        out.append(_reason("rubric_version", f.rubric_version, gold.rubric_version, message))
    if f.dataset_sha256 != gold.dataset_sha256 or f.gold_release != gold.release:
        was = f"release {f.gold_release or '(not frozen)'}, dataset {str(f.dataset_sha256)[:12]}"
        now = f"release {gold.release or '(not frozen)'}, dataset {str(gold.dataset_sha256)[:12]}"
        message = f"certified on {was}; the gold is now {now}"
        out.append(_reason("gold_release", f.gold_release, gold.release, message))
    return out


def staleness(
    facts: ReportFacts,
    gold: GoldState,
    spec: str | Path | None,
    *,
    installed_ragas: str | None = None,
) -> list[StaleReason]:
    """Every way the certification in ``facts`` no longer describes the judge at ``spec``."""
    from ..judges import ragas_version

    f = facts
    places = [Path(spec).resolve().parent] if spec is not None else []
    out = _ragas(f, installed_ragas or ragas_version(), [*places, Path(gold.path)])
    out += _gold(f, gold)
    was, lock = _certified(f.report_dir)
    policy = _policy(lock)
    if policy is not None:
        out.append(_reason("policy", *policy))
    judge = _load(spec) if spec is not None else None
    if judge is None:
        unknown = (
            "no candidate spec is recorded for the judge"
            if spec is None
            else f"the candidate spec {spec} no longer loads"
        )
        message = f"{unknown}: what runs now is unknown"
        out.append(_reason("candidate", f.candidate, None, message))
        return out
    assert spec is not None
    label, fingerprint, model = judge.spec.label, judge.identity.fingerprint(), judge.identity.model
    if model != f.model:
        message = f"certified with model {f.model}, the spec now names {model}"
        out.append(_reason("model", f.model, model, message))
    out += [_reason(*change) for change in _judge_changes(was, judge, spec)]
    if label != f.candidate or (
        fingerprint != f.candidate_fingerprint and _rest_changed(was, judge)
    ):
        message = (
            f"the spec {spec} is now {label} with fingerprint {fingerprint[:12]}, not the certified"
            f" {f.candidate} ({f.candidate_fingerprint[:12]})"
        )
        out.append(_reason("candidate", f.candidate_fingerprint[:12], fingerprint[:12], message))
    return out


def _reason(kind: StaleKind, certified: str | None, now: str | None, message: str) -> StaleReason:
    return StaleReason(kind=kind, certified=certified, now=now, message=message)
