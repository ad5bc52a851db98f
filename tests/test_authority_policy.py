"""A policy declares the judge's use and scope; certification grants at most that use, only in
that scope; the authority record's chain and head show every edit, insertion and truncation.

No certification runs here (see test_authority.py for the lifecycle on real reports).
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from workbench.authority import (
    AuthorityEntry,
    AuthorityRecord,
    authority_path_for,
    gold_state,
    grant_for,
    level_rank,
    next_level,
    requested_authority,
    shadow_log_path_for,
)
from workbench.errors import WorkbenchError
from workbench.gold import load_dataset
from workbench.policy import POLICY_SCHEMA_VERSION, Policy, load_policy

ROOT = Path(__file__).resolve().parents[1]
SLICES = [
    "refund_policy",
    "account_security",
    "billing_payments",
    "subscription_cancellation",
    "privacy_data_requests",
    "shipping_delivery",
    "escalation_handoff",
]

BASE: dict[str, Any] = {
    "schema_version": 2,
    "name": "scoped",
    "version": "1",
    "owner": "authority tests",
    "rationale": "A policy for the authority tests.",
    "rubric_version": "support-policy-2026.09",
    "partition": "held_out",
    "min_n_per_slice": 1,
    "slices": {
        "refund_policy": {
            "risk": "critical",
            "max_abstention_rate": 0.5,
            "max_false_pass_rate": 1.0,
            "false_pass_rate_basis": "upper_95",
        },
        "billing_payments": {"risk": "high", "max_abstention_rate": 0.5},
        "shipping_delivery": {"risk": "medium", "max_abstention_rate": 0.5},
    },
    "controls": {"suite": "controls.yaml"},  # route and block need controls to block on
    "use": "block",
    "scope": {
        "slices": ["refund_policy", "billing_payments"],
        "products": ["support-chat"],
        "dimensions": {"language": ["en"]},
    },
}


def _write(tmp_path: Path, raw: dict[str, Any]) -> Path:
    path = tmp_path / f"{raw['name']}@{raw['version']}.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


def _policy(**changes: Any) -> Policy:
    raw = copy.deepcopy(BASE)
    for key, value in changes.items():
        if value is None:
            raw.pop(key, None)
        else:
            raw[key] = value
    return Policy.model_validate(raw)


def _codes(exc: pytest.ExceptionInfo[WorkbenchError]) -> list[str]:
    return [p.code for p in exc.value.problems]


# -- policy fields ---------------------------------------------------------------------------


def test_a_policy_declares_use_and_scope(tmp_path: Path) -> None:
    policy = load_policy(_write(tmp_path, BASE))
    assert policy.use == "block" and policy.scope is not None
    assert (
        policy.scope.slices == ["refund_policy", "billing_payments"]
        and policy.scope.products == ["support-chat"]
        and policy.scope.dimensions == {"language": ["en"]}
    )
    assert POLICY_SCHEMA_VERSION == 2


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"scope": None}, "policy_use_without_scope"),
        ({"use": None}, "policy_scope_without_use"),
        (
            {"scope": {"slices": ["refund_policy", "account_security"]}},
            "policy_scope_unknown_slice",
        ),
        ({"use": "gate"}, "policy_invalid"),
        ({"scope": {"slices": []}}, "policy_invalid"),
        ({"scope": {"slices": ["refund_policy", "refund_policy"]}}, "policy_invalid"),
        (
            {"scope": {"slices": ["refund_policy"], "dimensions": {"language": []}}},
            "policy_invalid",
        ),
    ],
)
def test_use_and_scope_are_checked_when_the_policy_loads(
    tmp_path: Path, change: dict[str, Any], code: str
) -> None:
    raw = copy.deepcopy(BASE)
    for key, value in change.items():
        if value is None:
            raw.pop(key)
        else:
            raw[key] = value
    with pytest.raises(WorkbenchError) as exc:
        load_policy(_write(tmp_path, raw))
    assert code in _codes(exc)


def test_the_released_demo_policies_load_unchanged_and_declare_no_use() -> None:
    for path in sorted((ROOT / "data" / "policies").glob("support-release@[12].yaml")):
        policy = load_policy(path)
        assert policy.use is None and policy.scope is None, path.name
        assert "no authority" in requested_authority(policy).describe()


def test_the_reachable_demo_policy_requests_block_on_every_slice() -> None:
    policy = load_policy(ROOT / "data" / "policies" / "support-release@3.yaml")
    assert policy.use == "block" and policy.scope is not None
    assert set(policy.scope.slices) == set(policy.slices) and policy.scope.products == [
        "support-chat"
    ]
    assert (
        requested_authority(policy)
        .describe()
        .startswith("support-release@3 requests block on slices ")
    )


def test_requested_authority_is_what_the_policy_declares() -> None:
    requested = requested_authority(_policy())
    assert (requested.policy, requested.use) == ("scoped@1", "block")
    assert (
        requested.describe()
        == "scoped@1 requests block on slices refund_policy, billing_payments; products"
        " support-chat; language: en"
    )


# -- what a certification grants ----------------------------------------------------------------


def _figure(name: str, decided: int = 5) -> dict[str, Any]:
    return {"slice": name, "decided": decided}


def _gate(
    outcome: str = "certified",
    *,
    partition: str = "held_out",
    figures: list[dict[str, Any]] | None = None,
    waived: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "outcome": outcome,
        "partition": partition,
        "figures": (
            figures
            if figures is not None
            else [
                _figure(s)
                for s in ("refund_policy", "billing_payments", "shipping_delivery", "(all)")
            ]
        ),
        "waived": waived or [],
    }


def _waiver(code: str, slice_name: str | None) -> dict[str, Any]:
    return {"override_id": f"ovr-{code}", "blocker": {"code": code, "slice": slice_name}}


def test_a_certified_report_grants_the_declared_use_only_in_the_declared_scope() -> None:
    grant = grant_for(_policy(), _gate())
    assert grant.use == "block" and grant.scope is not None
    assert grant.scope.slices == [
        "refund_policy",
        "billing_payments",
    ]  # shipping_delivery was certified too, but is out of scope
    assert grant.withheld == []


@pytest.mark.parametrize("use", ["advisory", "route"])
def test_never_more_than_the_declared_use(use: str) -> None:
    assert grant_for(_policy(use=use), _gate()).use == use


@pytest.mark.parametrize("outcome", ["quality_failed", "review_required", "evaluation_incomplete"])
def test_only_a_certified_outcome_grants_anything(outcome: str) -> None:
    grant = grant_for(_policy(), _gate(outcome))
    assert grant.use == "none" and grant.scope is None and outcome in grant.withheld[0]


def test_a_policy_without_use_grants_nothing() -> None:
    grant = grant_for(_policy(use=None, scope=None), _gate())
    assert grant.use == "none" and "declares no use" in grant.withheld[0]


def test_only_a_held_out_gate_grants_anything() -> None:
    assert grant_for(_policy(), _gate(partition="calibration")).use == "none"


def test_a_scope_slice_without_a_decided_verdict_is_left_out() -> None:
    grant = grant_for(
        _policy(), _gate(figures=[_figure("refund_policy", decided=0), _figure("billing_payments")])
    )
    assert (
        grant.use == "block"
        and grant.scope is not None
        and grant.scope.slices == ["billing_payments"]
    )
    assert any("refund_policy" in w and "no decided" in w for w in grant.withheld)


def test_a_slice_certified_only_by_waiver_is_left_out() -> None:
    grant = grant_for(
        _policy(), _gate(waived=[_waiver("false_pass_limit_exceeded", "refund_policy")])
    )
    assert grant.scope is not None and grant.scope.slices == ["billing_payments"]
    assert any("refund_policy" in w and "waiver" in w for w in grant.withheld)


def test_a_waiver_of_a_general_limit_withholds_block() -> None:
    grant = grant_for(_policy(), _gate(waived=[_waiver("cost_limit_exceeded", None)]))
    assert grant.use == "route" and any("block withheld" in w for w in grant.withheld)
    assert (
        grant_for(_policy(use="advisory"), _gate(waived=[_waiver("cost_limit_exceeded", None)])).use
        == "advisory"
    )


def test_nothing_left_in_scope_grants_nothing() -> None:
    grant = grant_for(_policy(), _gate(figures=[_figure("shipping_delivery")]))
    assert grant.use == "none" and grant.scope is None


def test_the_promotion_path_is_ordered() -> None:
    assert [next_level(level) for level in ("none", "advisory", "route", "block")] == [
        None,
        "route",
        "block",
        None,
    ]
    assert level_rank("none") < level_rank("advisory") < level_rank("route") < level_rank("block")


# -- where the record lives ---------------------------------------------------------------------


def test_the_record_lives_beside_the_gold_unless_the_project_declares_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The declaration is the pinned project's (``$WORKBENCH_PROJECT_ROOT``, else the working
    directory's), never a workbench.yaml near the data."""
    gold = tmp_path / "proj" / "data" / "gold"
    gold.mkdir(parents=True)
    monkeypatch.setenv("WORKBENCH_PROJECT_ROOT", str(tmp_path / "proj"))
    assert authority_path_for(gold) == (gold / "authority.jsonl").resolve()
    assert shadow_log_path_for(gold) == (gold / "shadow_log.jsonl").resolve()
    (tmp_path / "proj" / "workbench.yaml").write_text(
        "authority_record: evidence/authority.jsonl\n", encoding="utf-8"
    )
    assert (
        authority_path_for(gold) == (tmp_path / "proj" / "evidence" / "authority.jsonl").resolve()
    )
    assert (
        shadow_log_path_for(gold) == (tmp_path / "proj" / "evidence" / "shadow_log.jsonl").resolve()
    )
    (gold / "authority.jsonl").write_text("{}\n", encoding="utf-8")
    with pytest.raises(WorkbenchError) as exc:
        authority_path_for(gold)
    assert _codes(exc) == ["authority_record_conflict"]


# -- the record's chain and head -------------------------------------------------------------------


def _entry(judge: str, event: str, authority: str, previous: str) -> AuthorityEntry:
    return AuthorityEntry(
        entry_id=f"auth-{event}-{authority}",
        judge=judge,
        event=event,
        authority=authority,
        previous_authority=previous,
        scope=None,
        report_id=None,
        report_dir=None,
        lock_sha256=None,
        candidate_fingerprint=None,
        candidate_spec=None,
        policy=None,
        granted_use=None,
        shadow_of=None,
        approver="A",
        reason="test",
        when=datetime.now(UTC),
        recorded_by="tests",
        previous_sha256=None,
    )


def _record(tmp_path: Path) -> AuthorityRecord:
    record = AuthorityRecord(tmp_path / "authority.jsonl")
    for entry in (
        _entry("j@1", "granted", "advisory", "none"),
        _entry("j@1", "promoted", "route", "advisory"),
        _entry("j@1", "revoked", "none", "route"),
    ):
        with record.locked():
            record.append(entry, record.read())
    return record


def test_an_intact_record_reads_with_each_judges_last_state(tmp_path: Path) -> None:
    read = _record(tmp_path).read()
    assert read.ok and [e.event for e in read.entries] == ["granted", "promoted", "revoked"]
    assert read.judges()["j@1"].authority == "none" and read.judges()["j@1"].revoked_at is not None


def _lines(record: AuthorityRecord) -> list[str]:
    return record.path.read_text(encoding="utf-8").splitlines()


def test_an_edited_line_breaks_the_chain(tmp_path: Path) -> None:
    record = _record(tmp_path)
    lines = _lines(record)
    row = json.loads(lines[1])
    row["authority"] = "block"  # someone raises the judge's level by hand
    lines[1] = json.dumps(row, sort_keys=True)
    record.path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert "authority_chain_broken" in [p.code for p in record.read().problems]


def test_deleting_the_revocation_at_the_end_is_caught_by_the_head(tmp_path: Path) -> None:
    record = _record(tmp_path)
    lines = _lines(record)
    record.path.write_text(
        "\n".join(lines[:-1]) + "\n", encoding="utf-8"
    )  # the chain alone looks intact
    read = record.read()
    assert [p.code for p in read.problems] == ["authority_record_truncated"]
    assert read.judges()["j@1"].authority == "route"  # what the truncation would have restored


def test_a_missing_head_or_an_appended_line_is_caught(tmp_path: Path) -> None:
    record = _record(tmp_path)
    head = record.head_path.read_text(encoding="utf-8")
    record.head_path.unlink()
    assert [p.code for p in record.read().problems] == ["authority_head_missing"]
    record.head_path.write_text(head, encoding="utf-8")
    lines = _lines(record)
    extra = _entry("j@1", "granted", "block", "none")
    extra = extra.model_copy(update={"previous_sha256": json.loads(lines[-1])["entry_sha256"]})
    extra = extra.model_copy(update={"entry_sha256": extra.content_sha256()})
    record.path.write_text(
        "\n".join(
            [
                *lines,
                extra.model_dump_json(),
                extra.model_copy(update={"entry_id": "auth-x"}).model_dump_json(),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    codes = [p.code for p in record.read().problems]
    assert "authority_head_mismatch" in codes


def test_an_append_to_a_damaged_record_leaves_the_damage_visible(tmp_path: Path) -> None:
    record = _record(tmp_path)
    record.path.write_text("\n".join(_lines(record)[:-1]) + "\n", encoding="utf-8")
    with record.locked():
        record.append(
            _entry("j@1", "revoked", "none", "route"), record.read()
        )  # rollback still works
    read = record.read()
    assert [p.code for p in read.problems] == [
        "authority_head_mismatch"
    ]  # the head still names the deleted line
    assert read.judges()["j@1"].authority == "none"


# -- the gold as it is now
# ---------------------------------------------------------------------------


def test_gold_state_hashes_the_dataset_as_validate_does() -> None:
    dataset = load_dataset(ROOT / "data" / "demo")
    state = gold_state(ROOT / "data" / "demo")
    assert state.dataset_sha256 == dataset.sha256 and state.rubric_version == dataset.rubric.version
    assert (
        dataset.release is not None
        and state.release == dataset.release.release_id
        and state.problems == []
    )
