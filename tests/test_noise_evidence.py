"""Noise suite format 2: retrieval evidence, traces, roles, sign-offs, partitions, policy, manifest,
retirement.

Every test builds a suite that the old format (schema 1) accepted in spirit, or could not
express, and shows what validation now refuses, every problem at once, each with a code,
a file:line location and a fix. No model is called here.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from noise_support import (
    CTX_POLICY,
    REF_POLICY,
    ctx,
    free_suite,
    pair,
    structured,
    suite_dict,
    write_suite,
)

from workbench._io import sha256_json, sha256_text
from workbench.errors import WorkbenchError
from workbench.noise import RetrievedContext, load_pairs, validate_pairs


def codes_of(tmp_path: Path, data: dict[str, Any]) -> dict[str, list[Any]]:
    path = write_suite(tmp_path, data)
    with pytest.raises(WorkbenchError) as info:
        load_pairs(path)
    out: dict[str, list[Any]] = {}
    for p in info.value.problems:
        out.setdefault(p.code, []).append(p)
        assert p.location.startswith(str(path)) and p.fix, p
    return out


def test_structured_contexts_and_plain_strings_are_both_accepted(tmp_path: Path) -> None:
    data = suite_dict([pair("ctl", role="control"), structured("cand"), pair("plain")])
    suite = load_pairs(write_suite(tmp_path, data))
    cand, plain = suite.pair("cand"), suite.pair("plain")
    c = cand.noisy.contexts()[1]
    assert isinstance(c, RetrievedContext) and (
        c.document_id,
        c.version,
        c.chunk_id,
        c.rank,
        c.retrieval_score,
        c.tenant,
        c.corpus_id,
    ) == ("old-faq", "1", "old-faq#1", 2, 0.5, "acme", "kb-1")
    assert c.retriever_config_sha256 == "c" * 64
    # the evaluator sees only the texts: a structured pair and its plain-text twin are the same
    # judge input
    assert cand.judge_input("noisy") == plain.judge_input("noisy")
    # plain strings stay accepted and their digest is the one format 1 computed (old results still
    # join)
    old_digest = sha256_json(
        {
            "user_input": plain.user_input,
            "response": plain.noisy.response,
            "reference": REF_POLICY,
            "retrieved_contexts": [
                CTX_POLICY,
                "Archived draft. Refunds are possible within 90 days.",
            ],
            "mode": "irrelevant",
        }
    )
    assert plain.judge_input("noisy").digest() == old_digest
    assert plain.clean.contexts()[0].context_id() == "sha256:" + sha256_text(CTX_POLICY)


def test_structured_context_problems(tmp_path: Path) -> None:
    bad_rank = structured("bad-rank")
    bad_rank["noisy"]["retrieved_contexts"][1]["rank"] = (
        1  # the distractor claims rank 1 after the rank-1 passage
    )
    zero = structured("zero-rank")
    zero["clean"]["retrieved_contexts"][0]["rank"] = 0
    zero["noisy"]["retrieved_contexts"][0]["rank"] = 0
    unknown = structured("unknown-field")
    unknown["clean"]["retrieved_contexts"][0]["page"] = 3
    empty = structured("empty-text")
    empty["clean"]["retrieved_contexts"][0]["text"] = " "
    not_ctx = pair("not-a-context")
    not_ctx["clean"]["retrieved_contexts"] = [42]
    moved = structured("moved-doc")
    moved["noisy"]["retrieved_contexts"][0] = {
        **moved["noisy"]["retrieved_contexts"][0],
        "document_id": "another-doc",
    }
    by_code = codes_of(
        tmp_path,
        suite_dict([pair("ctl", role="control"), bad_rank, zero, unknown, empty, not_ctx, moved]),
    )
    assert {p.case_id for p in by_code["context_rank_order"]} == {"bad-rank"}
    assert {p.case_id for p in by_code["context_invalid"]} >= {"zero-rank", "not-a-context"}
    assert {p.case_id for p in by_code["field_unknown"]} == {"unknown-field"}
    assert {p.case_id for p in by_code["context_empty"]} == {"empty-text"}
    # same text, other document: not the same passage, so not a clean pair
    assert {p.case_id for p in by_code["pair_membership_broken"]} == {"moved-doc"}


def _traced(pid: str, *, origin: str = "production") -> dict[str, Any]:
    data = structured(pid)
    data["provenance"] = {"origin": origin}
    for name in ("clean", "noisy"):
        member = data[name]
        member["generation_trace"] = {
            "run_id": "gen-1",
            "context_ids": [c["chunk_id"] for c in member["retrieved_contexts"]],
            "response_sha256": sha256_text(member["response"]),
            "generator_model": "answerer-1",
        }
    return data


def test_generation_trace_must_match_the_contexts_and_response_used(tmp_path: Path) -> None:
    ok = _traced("traced-ok")
    edited = _traced("response-edited")
    edited["noisy"]["response"] += " Also, refunds are instant."  # edited after generation
    replayed = _traced("contexts-replayed")
    replayed["noisy"]["generation_trace"]["context_ids"] = [
        "refund-policy#1",
        "other-chunk#9",
    ]  # a later retrieval replay
    other_gen = _traced("other-generator")
    other_gen["clean"]["generation_trace"]["generator_model"] = "answerer-7"
    untraced = structured("no-trace")
    untraced["provenance"] = {"origin": "regenerated"}
    plain_traced = pair("plain-traced")
    plain_traced["clean"]["generation_trace"] = {
        "run_id": "gen-1",
        "context_ids": ["sha256:" + sha256_text(CTX_POLICY)],
        "response_sha256": sha256_text(REF_POLICY),
    }
    by_code = codes_of(
        tmp_path,
        suite_dict(
            [pair("ctl", role="control"), ok, edited, replayed, other_gen, untraced, plain_traced]
        ),
    )
    assert {p.case_id for p in by_code["trace_response_mismatch"]} == {"response-edited"}
    assert {p.case_id for p in by_code["trace_contexts_mismatch"]} == {"contexts-replayed"}
    assert {p.case_id for p in by_code["trace_generator_mismatch"]} == {"other-generator"}
    assert {p.case_id for p in by_code["trace_missing"]} == {"no-trace"} and len(
        by_code["trace_missing"]
    ) == 2
    flagged = {p.case_id for ps in by_code.values() for p in ps}
    assert "traced-ok" not in flagged and "plain-traced" not in flagged


def test_control_roles_sign_offs_and_construction(tmp_path: Path) -> None:
    no_sign = pair("ctl-unsigned", role="control")
    del no_sign["sign_off"]
    no_adopt_field = pair("ctl-adopt-missing", role="control")
    del no_adopt_field["sign_off"]["negative_adopts_false_claim"]
    not_adopting = pair("ctl-not-adopting", role="control")
    not_adopting["sign_off"]["negative_adopts_false_claim"] = False
    insufficient = pair("ctl-insufficient", role="control")
    insufficient["sign_off"]["reference_sufficient"] = False
    wrong_class = pair("ctl-wrong-class", role="control")
    wrong_class["sign_off"]["context_classes"]["noisy"] = [
        "relevant",
        "relevant",
    ]  # an irrelevant-mode distractor classed relevant
    short = pair("ctl-short", role="control")
    short["sign_off"]["context_classes"]["noisy"] = ["relevant"]
    adv = pair("adv-no-attack", role="adversarial")
    del adv["noisy"]["distractor"]["attack"]
    defect_unflagged = pair("refdef-unflagged", role="reference_defect")
    defect_unflagged["sign_off"]["reference_sufficient"] = True
    defect_undescribed = pair("refdef-undescribed", role="reference_defect")
    del defect_undescribed["reference_defect"]
    abstaining = pair("ctl-abstains", role="control")
    abstaining["noisy"]["abstained"] = True
    described_candidate = pair("cand-defect")
    described_candidate["reference_defect"] = "x"
    good = [
        pair("ctl", role="control"),
        pair("adv", role="adversarial"),
        pair("refdef", role="reference_defect"),
    ]
    by_code = codes_of(
        tmp_path,
        suite_dict(
            [
                *good,
                no_sign,
                no_adopt_field,
                not_adopting,
                insufficient,
                wrong_class,
                short,
                adv,
                defect_unflagged,
                defect_undescribed,
                abstaining,
                described_candidate,
            ]
        ),
    )
    expected = {
        "sign_off_missing": {"ctl-unsigned"},
        "sign_off_field_missing": {"ctl-adopt-missing"},
        "sign_off_negative_not_adopting": {"ctl-not-adopting"},
        "sign_off_reference_insufficient": {"ctl-insufficient"},
        "sign_off_context_class_mode": {"ctl-wrong-class"},
        "sign_off_context_classes": {"ctl-short"},
        "attack_missing": {"adv-no-attack"},
        "sign_off_defect_not_flagged": {"refdef-unflagged"},
        "reference_defect_missing": {"refdef-undescribed"},
        "control_abstained": {"ctl-abstains"},
        "reference_defect_unexpected": {"cand-defect"},
    }
    for code, ids in expected.items():
        assert {p.case_id for p in by_code.get(code, [])} == ids, code
    assert not {p.case_id for ps in by_code.values() for p in ps} & {"ctl", "adv", "refdef"}


def test_missing_control_roles_are_flagged_before_any_run(tmp_path: Path) -> None:
    path = write_suite(
        tmp_path,
        free_suite(
            [pair("ctl", role="control"), pair("cand")],
            policy={"required_control_roles": ["control", "adversarial", "reference_defect"]},
        ),
    )
    suite, problems = validate_pairs(path)
    assert suite is not None
    assert (
        sorted((p.code, p.severity) for p in problems if p.code == "control_role_missing")
        == [("control_role_missing", "warning")] * 2
    )
    assert {r for p in problems for r in ("adversarial", "reference_defect") if r in p.message} == {
        "adversarial",
        "reference_defect",
    }


def test_partitions_split_by_source_family_with_gold_leakage_checks(tmp_path: Path) -> None:
    a = pair("fam-a-dev", partition="development")
    b = pair("fam-a-held", partition="held_out")
    b["source_family"] = a["source_family"]  # one family in two partitions
    b["user_input"], b["clean"]["retrieved_contexts"], b["noisy"]["retrieved_contexts"] = (
        "Another question?",
        ["Other passage."],
        ["Other passage.", "Archived draft. Refunds are possible within 90 days."],
    )
    dup = pair(
        "dup-question", partition="calibration"
    )  # same question as fam-a-dev, another family and partition
    dup["clean"]["retrieved_contexts"], dup["noisy"]["retrieved_contexts"] = (
        ["Third passage."],
        ["Third passage.", "Archived draft. Refunds are possible within 90 days."],
    )
    passage = pair("same-passage", partition="held_out")  # same evidence passage as fam-a-dev
    passage["user_input"] = "  HOW long is the refund window?  "
    no_partition = pair("no-partition")
    del no_partition["partition"]
    bad_partition = pair("bad-partition")
    bad_partition["partition"] = "test"
    by_code = codes_of(
        tmp_path,
        suite_dict([pair("ctl", role="control"), a, b, dup, passage, no_partition, bad_partition]),
    )
    assert (
        len(by_code["family_leakage"]) == 1
        and "fam-fam-a-dev" in by_code["family_leakage"][0].message
    )
    assert {p.case_id for p in by_code["cross_partition_duplicate"]} == {"dup-question"}
    assert {p.case_id for p in by_code["cross_partition_passage"]} == {"same-passage"}
    assert {p.case_id for p in by_code["field_missing"]} == {"no-partition"}
    assert {p.case_id for p in by_code["partition_unknown"]} == {"bad-partition"}


def test_policy_limits_are_mandatory_and_fail_closed(tmp_path: Path) -> None:
    no_policy = suite_dict([pair("ctl", role="control")])
    del no_policy["policy"]
    assert set(codes_of(tmp_path, no_policy)) == {"policy_missing"}
    no_limits = free_suite([pair("ctl", role="control")])
    no_limits["policy"] = {"required_control_roles": ["control"]}
    problems = codes_of(tmp_path, no_limits)
    assert set(problems) == {"policy_limit_missing"} and {
        p.message.split()[-1] for p in problems["policy_limit_missing"]
    } == {"max_cases", "max_cost_usd"}
    sentinels = free_suite([pair("ctl", role="control"), pair("cand")], sentinels=["cand", "ghost"])
    assert set(codes_of(tmp_path, sentinels)) == {"policy_spread_missing", "sentinel_unknown"}
    negative = free_suite([pair("ctl", role="control")], policy={"max_cost_usd": -1})
    assert "field_invalid" in codes_of(tmp_path, negative)


def test_evidence_manifest_is_mandatory(tmp_path: Path) -> None:
    missing = suite_dict([pair("ctl", role="control")])
    del missing["manifest"]
    assert set(codes_of(tmp_path, missing)) == {"manifest_missing"}
    partial = suite_dict([pair("ctl", role="control")])
    del partial["manifest"]["licences"]
    partial["manifest"]["known_gaps"] = []
    by_code = codes_of(tmp_path, partial)
    assert {p.location.rsplit("(", 1)[-1] for p in by_code["field_missing"]} == {
        "manifest.licences)"
    }
    assert any("known_gaps" in p.message for p in by_code["field_invalid"])


def test_retired_cases_stay_and_fixed_cases_are_new_versions(tmp_path: Path) -> None:
    old = pair("case-1")
    old["retired"] = {"reason": "the refund window changed", "by": "rev", "on": "2026-10-01"}
    fixed = copy.deepcopy(pair("case-1.v2"))
    fixed["supersedes"] = "case-1"
    fixed["reference"] = fixed["clean"]["response"] = fixed["noisy"]["response"] = (
        "Refunds are possible within 30 days of delivery, receipts required."
    )
    fixed["source_family"] = old["source_family"]
    suite = load_pairs(write_suite(tmp_path, suite_dict([pair("ctl", role="control"), old, fixed])))
    assert [p.pair_id for p in suite.candidates()] == ["case-1.v2"] and [
        p.pair_id for p in suite.retired()
    ] == ["case-1"]

    unchanged = copy.deepcopy(old)
    unchanged["pair_id"], unchanged["supersedes"] = "case-1.copy", "case-1"
    del unchanged["retired"]
    active_target = pair("case-2.v2")
    active_target["supersedes"] = "case-2"
    no_reason = pair("case-3")
    no_reason["retired"] = {"by": "rev", "on": "2026-10-01"}
    ghost = pair("case-4.v2")
    ghost["supersedes"] = "case-4"
    by_code = codes_of(
        tmp_path / "bad",
        suite_dict(
            [
                pair("ctl", role="control"),
                old,
                unchanged,
                pair("case-2"),
                active_target,
                no_reason,
                ghost,
            ]
        ),
    )
    assert {p.case_id for p in by_code["supersedes_unchanged"]} == {"case-1.copy"}
    assert {p.case_id for p in by_code["supersedes_not_retired"]} == {"case-2.v2"}
    assert {p.case_id for p in by_code["supersedes_unknown"]} == {"case-4.v2"}
    assert any(p.case_id == "case-3" for p in by_code["field_missing"])


def test_format_1_is_refused_with_an_upgrade_hint(tmp_path: Path) -> None:
    old = suite_dict([pair("ctl", role="control")])
    old["schema_version"] = 1
    problems = codes_of(tmp_path, old)["schema_version_old"]
    assert "max_cases" in problems[0].fix and "partition" in problems[0].fix


def test_origin_and_assertions_must_say_something(tmp_path: Path) -> None:
    no_origin = pair("no-origin")
    no_origin["provenance"] = {"sources": ["x"]}
    odd = pair("odd-origin")
    odd["provenance"] = {"origin": "scraped"}
    empty = structured("empty-assertions", assertions={})
    by_code = codes_of(tmp_path, suite_dict([pair("ctl", role="control"), no_origin, odd, empty]))
    assert {p.case_id for p in by_code["origin_missing"]} == {"no-origin"}
    assert {p.case_id for p in by_code["origin_unknown"]} == {"odd-origin"}
    assert {p.case_id for p in by_code["retrieval_assertions_empty"]} == {"empty-assertions"}


def test_ctx_helper_is_a_valid_structured_context() -> None:
    assert RetrievedContext.model_validate(ctx("t", "d", "d#1", 1)).structured


@pytest.mark.parametrize(
    ("field", "code"),
    [
        ("mode", "mode_unknown"),
        ("role", "role_unknown"),
        ("pair_id", "field_invalid"),
        ("slice", "field_invalid"),
        ("supersedes", "field_invalid"),
    ],
)
def test_a_list_where_text_belongs_is_a_problem_not_a_crash(
    tmp_path: Path, field: str, code: str
) -> None:
    data = suite_dict([pair("ctl", role="control"), pair("cand")])
    data["pairs"][1][field] = ["x"]
    by_code = codes_of(tmp_path, data)
    assert any(p.location.endswith(f"(pairs[1].{field})") for p in by_code[code])
