"""The columnar align path gives the per-record path's report, bit for bit, and refuses alike.

The per-record join (``align_results`` over ``load_dataset``, its report computed record by
record in tests/report_reference.py) is the reference here; production ``align`` is columnar
(cached gold index, Arrow joins and counts) and hands input it cannot vouch for to the
per-record path.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _fresh import run_fresh
from click.testing import CliRunner
from conftest import make_case, make_result, write_dataset, write_results
from lineage_support import stamped
from report_reference import reference_report

from workbench.align import align, align_results, format_report
from workbench.align._columnar import evidence_columnar
from workbench.cli import main
from workbench.errors import WorkbenchError
from workbench.gold import load_dataset
from workbench.gold._index import cache_dir, gold_index
from workbench.results._columnar import read_columnar, results_sha256

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo"
TIMEOUT = {"kind": "timeout", "message": "no answer", "retryable": False}


def reference(gold: Path | str, results: Path | str, partition: str | None, repeat: int = 0):
    """The per-record join, its report computed record by record (tests/report_reference.py)."""
    join = align_results(load_dataset(gold), results, partition=partition, repeat=repeat)
    return reference_report(join, gold_path=str(gold), results_path=str(results))


def columnar(gold: Path | str, results: Path | str, partition: str | None, repeat: int = 0):
    found = evidence_columnar(
        gold_index(gold),
        results,
        partition=partition,
        repeat=repeat,
        allow_gold_change=False,
        partition_source=None,
        gold_path=str(gold),
    )
    assert found is not None, "the columnar path handed valid input to the per-record path"
    return found[0]


def assert_same(
    gold: Path | str, results: Path | str, partition: str | None, repeat: int = 0
) -> None:
    old = reference(gold, results, partition, repeat)
    new = columnar(gold, results, partition, repeat)
    assert new.model_dump(mode="json") == old.model_dump(mode="json")
    assert json.dumps(new.model_dump(mode="json"), sort_keys=True) == json.dumps(
        old.model_dump(mode="json"), sort_keys=True
    )
    assert format_report(new) == format_report(old)
    assert align(gold, results, partition=partition, repeat=repeat).model_dump(
        mode="json"
    ) == old.model_dump(mode="json")


@pytest.fixture
def rich(tmp_path: Path) -> tuple[Path, Path]:
    """Missing results, errors, abstentions, retries, repeats, other partitions, corrections."""
    cases = []
    for i in range(60):
        part = ("development", "calibration", "held_out")[i % 3]
        label = ("pass", "fail", "review_required", "pass", "fail")[i % 5]
        cases.append(
            make_case(
                f"c{i:02d}",
                label,
                partition=part,
                slice=("billing", "general")[i % 2],
                group=f"grp{i}",
            )
        )
    cases.append(
        make_case(
            "c00b",
            "fail",
            partition="development",
            slice="billing",
            group="grp0",
            response=cases[0]["response"],
            supersedes="c00",
        )
    )
    gold = write_dataset(tmp_path / "gold", cases)
    by_id = {c["case_id"]: c for c in cases}
    rows = []
    params = {
        "params": {"temperature": 0.0, "labels": ["pass", "fail"]}
    }  # Parquet holds no empty object
    for i in range(60):
        cid = "c00b" if i == 0 else f"c{i:02d}"
        case = by_id[cid]
        if i % 11 == 5 or case["partition"] == "held_out":
            continue  # missing (held-out results would need a certification)
        if i % 7 == 3:
            rows.append(make_result(case, error=TIMEOUT, judge=params))
            continue
        if i % 9 == 4:  # a retry: a transient error first, then the verdict
            rows.append(
                make_result(
                    case,
                    error={**TIMEOUT, "retryable": True, "message": "busy"},
                    attempt=1,
                    judge=params,
                )
            )
            rows.append(make_result(case, "fail" if i % 2 else "pass", attempt=2, judge=params))
            continue
        verdict = ("pass", "fail", "review_required", "fail", "pass", "pass")[i % 6]
        rows.append(
            make_result(
                case,
                verdict,
                judge=params,
                started_at="2026-11-29T10:00:00.123456+00:00",
                latency_s=0.5,
                tokens_in=10,
                tokens_out=3,
                cost_usd=0.001,
            )
        )
        rows.append(make_result(case, "pass", repeat=1, judge=params))  # a second repeat
    return gold, write_results(tmp_path / "results.jsonl", stamped(rows, gold))


@pytest.mark.parametrize("partition", [None, "development", "calibration"])
@pytest.mark.parametrize("repeat", [0, 1])
def test_columnar_report_equals_the_per_record_report(rich, partition, repeat):
    gold, results = rich
    assert_same(gold, results, partition, repeat)


def test_columnar_report_equals_on_the_demo(tmp_path):
    out = tmp_path / "run"
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--candidate",
            str(ROOT / "data/candidates/rubric-judge@2.yaml"),
            "--gold",
            str(DEMO),
            "--partition",
            "development",
            "--out",
            str(out),
            "--cache",
            str(tmp_path / "cache"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert read_columnar(out / "results.jsonl") is not None  # real run files take the fast path
    assert_same(DEMO, out / "results.jsonl", "development")


def test_gold_index_is_cached_by_dataset_sha_and_never_trusted_when_it_differs(rich):
    gold, results = rich
    first = gold_index(gold)
    assert not first.from_cache
    files = list(cache_dir().glob("gold-*.arrow"))
    assert len(files) == 1
    again = gold_index(gold)
    assert again.from_cache and again.sha256 == first.sha256 and again.table.equals(first.table)

    # A changed gold is another key: validated again, and the change shows.
    lines = (gold / "gold.jsonl").read_text().splitlines()
    case = json.loads(lines[1])
    case["adjudication"]["label"] = "pass" if case["adjudication"]["label"] != "pass" else "fail"
    lines[1] = json.dumps(case)
    (gold / "gold.jsonl").write_text("\n".join(lines) + "\n")
    changed = gold_index(gold)
    assert not changed.from_cache and changed.sha256 != first.sha256
    assert changed.table["label"][1].as_py() == case["adjudication"]["label"]

    # An index whose recorded sha differs from its key is ignored and rebuilt.
    forged = first.table.replace_schema_metadata(
        {"workbench.key": "x", "workbench.dataset_sha256": "y"}
    )
    target = sorted(cache_dir().glob("gold-*.arrow"), key=lambda p: p.stat().st_mtime)[-1]
    with pa.OSFile(str(target), "wb") as sink, pa.ipc.new_file(sink, forged.schema) as writer:
        writer.write_table(forged)
    assert not gold_index(gold).from_cache
    target.write_bytes(b"torn")  # a torn or foreign file is rebuilt too
    assert not gold_index(gold).from_cache
    assert gold_index(gold).from_cache


def test_an_invalid_gold_is_refused_with_every_problem_and_never_cached(make_dataset):
    bad = make_dataset([make_case("a"), make_case("a"), "{not json"])
    with pytest.raises(WorkbenchError) as got:
        gold_index(bad)
    with pytest.raises(WorkbenchError) as want:
        load_dataset(bad)
    assert [p.model_dump() for p in got.value.problems] == [
        p.model_dump() for p in want.value.problems
    ]
    assert not list(cache_dir().glob("gold-*.arrow"))


def _problems(call) -> list[dict]:
    with pytest.raises(WorkbenchError) as exc:
        call()
    return [p.model_dump() for p in exc.value.problems]


@pytest.mark.parametrize(
    "damage",
    [
        "duplicate",
        "unknown_case",
        "hash",
        "label",
        "bad_line",
        "missing_reason",
        "wrong_type",
        "nan",
        "inf",
        "minus_inf",
        "minus_infinity",
        "nested_nan",
        "fingerprint",
        "mixed",
        "after_verdict",
        "score_only",
        "dup_key",
    ],
)
def test_refused_input_gives_the_per_record_problems(rich, damage):
    gold, results = rich
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    first = rows[0]
    if damage == "duplicate":
        rows.append(dict(first))
    elif damage == "unknown_case":
        rows.append({**first, "case_id": "nope"})
    elif damage == "hash":
        rows[1]["response_hash"] = "0" * 64
    elif damage == "label":
        rows[2]["value"] = "maybe"
    elif damage == "missing_reason":
        del rows[3]["reason"]
    elif damage == "wrong_type":
        rows[4]["attempt"] = "1"
    elif damage == "fingerprint":
        rows[5]["judge"] = {**rows[5]["judge"], "version": "9"}
    elif damage == "mixed":
        judge = {**rows[5]["judge"], "version": "9"}
        from conftest import fingerprint

        rows[5] = {**rows[5], "judge": judge, "judge_fingerprint": fingerprint(judge)}
    elif damage == "after_verdict":
        (
            rows.append({**first, "attempt": 2, "value": None, "error": TIMEOUT})
            if first["value"]
            else None
        )
    elif damage == "score_only":
        rows[6] = {**rows[6], "value": None, "error": None, "score": 0.5}
    text = [json.dumps(r) for r in rows]
    if damage == "bad_line":
        text.insert(3, '{"case_id": ')
    if damage == "nan":
        text[2] = (
            text[2].replace('"cost_usd": 0.001', '"cost_usd": NaN')
            if '"cost_usd": 0.001' in text[2]
            else text[2][:-1] + ', "score": NaN}'
        )
    if damage == "nested_nan":  # deep inside an object the contract does not type
        row = json.loads(text[2])
        row["rendered_request"] = {"messages": [], "sampling": {"top_p": [0.5, 1.0]}}
        text[2] = json.dumps(row).replace("1.0]", "NaN]")
    if damage in ("inf", "minus_inf", "minus_infinity"):
        # Arrow's JSON reader reads Inf, -Inf and -Infinity as floats; json.loads refuses "Inf"
        # and the strict reader refuses Infinity: the columnar path must not accept them
        token = {"inf": "Inf", "minus_inf": "-Inf", "minus_infinity": "-Infinity"}[damage]
        row = json.loads(text[2])
        row.pop("latency_s", None)
        text[2] = json.dumps(row)[:-1] + f', "latency_s": {token}}}'
    if damage == "dup_key":
        text[1] = text[1][:-1] + ', "run_id": "run-1"}'
    results.write_text("\n".join(text) + "\n")
    assert read_columnar(results) is None or damage in (
        "duplicate",
        "unknown_case",
        "hash",
        "label",
        "mixed",
        "after_verdict",
        "score_only",
    )
    old = _problems(lambda: reference(gold, results, None))
    assert old, "the damage must be refused"
    assert _problems(lambda: align(gold, results)) == old


def _shard(results: Path, into: Path) -> Path:
    """Split a results file into two JSONL shards and one Parquet shard."""
    lines = results.read_text().splitlines()
    into.mkdir()
    third = len(lines) // 3
    (into / "part-000.jsonl").write_text("\n".join(lines[:third]) + "\n")
    (into / "part-001.jsonl").write_text("\n".join(lines[third : 2 * third]) + "\n")
    rows = [json.loads(line) for line in lines[2 * third :]]
    pq.write_table(pa.Table.from_pylist(rows), into / "part-002.parquet")
    (into / "README.txt").write_text("not a shard")
    return into


def test_a_directory_of_shards_aligns_like_the_single_file(rich, tmp_path):
    gold, results = rich
    shards = _shard(results, tmp_path / "shards")
    whole = align(gold, results, partition="development").model_dump(mode="json")
    split = align(gold, shards, partition="development").model_dump(mode="json")
    assert split["results_sha256"] == results_sha256(shards) != whole["results_sha256"]
    for report in (whole, split):
        report.pop("results_sha256"), report.pop("results_path")
    assert split == whole
    # the per-record path reads shards too, and agrees
    old = reference(gold, shards, "development").model_dump(mode="json")
    old.pop("results_sha256"), old.pop("results_path")
    assert old == whole


def test_shard_problems_name_the_shard_and_line(rich, tmp_path):
    gold, results = rich
    shards = _shard(results, tmp_path / "shards")
    bad = shards / "part-001.jsonl"
    bad.write_text(bad.read_text() + '{"case_id": \n')
    problems = _problems(lambda: align(gold, shards))
    count = len(bad.read_text().splitlines())
    assert any(
        p["location"] == f"{bad}:{count}" and p["code"] == "malformed_json" for p in problems
    )


def test_cli_align_and_gate_accept_a_directory_of_shards(rich, tmp_path):
    gold, results = rich
    shards = _shard(results, tmp_path / "shards")
    runner = CliRunner()
    one = runner.invoke(
        main,
        [
            "align",
            "--gold",
            str(gold),
            "--results",
            str(results),
            "--partition",
            "development",
            "--json",
        ],
    )
    many = runner.invoke(
        main,
        [
            "align",
            "--gold",
            str(gold),
            "--results",
            str(shards),
            "--partition",
            "development",
            "--json",
        ],
    )
    assert one.exit_code == many.exit_code == 0, many.output
    a, b = json.loads(one.output), json.loads(many.output)
    assert (
        a["overall"] == b["overall"]
        and a["slices"] == b["slices"]
        and b["results_path"] == str(shards)
    )
    policy = next((ROOT / "data" / "policies").glob("*.yaml"))
    gate_one = runner.invoke(
        main,
        [
            "gate",
            "--gold",
            str(gold),
            "--results",
            str(results),
            "--policy",
            str(policy),
            "--partition",
            "development",
            "--json",
        ],
    )
    gate_many = runner.invoke(
        main,
        [
            "gate",
            "--gold",
            str(gold),
            "--results",
            str(shards),
            "--policy",
            str(policy),
            "--partition",
            "development",
            "--json",
        ],
    )
    assert gate_one.exit_code == gate_many.exit_code and gate_many.exit_code != 2, gate_many.output
    assert json.loads(gate_one.output)["outcome"] == json.loads(gate_many.output)["outcome"]


def test_held_out_shards_are_refused_without_a_certification(rich, tmp_path):
    """A directory cannot bypass the held-out ledger (it holds no certified file's sha256)."""
    gold, _ = rich
    case = next(
        c
        for c in map(json.loads, (gold / "gold.jsonl").read_text().splitlines())
        if c["partition"] == "held_out"
    )
    shards = tmp_path / "held"
    shards.mkdir()
    write_results(shards / "part-000.jsonl", stamped([make_result(case, "pass")], gold))
    for partition in ("held_out", None):
        args = ["align", "--gold", str(gold), "--results", str(shards)] + (
            ["--partition", partition] if partition else []
        )
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2 and "held_out_unaccounted" in result.output, result.output


def test_align_hot_path_imports_neither_statsmodels_nor_sklearn(rich):
    gold, results = rich
    code = (
        "import sys; from workbench.align import align; "
        f"r = align({str(gold)!r}, {str(results)!r}, partition='development'); "
        "bad = [m for m in ('statsmodels', 'sklearn', 'scipy') if m in sys.modules]; print(bad)"
    )
    out = run_fresh(code)
    assert out.strip() == "[]", out  # the whole output: once (of 11 runs) this failed unseen


def test_validation_hashes_the_gold_file_while_parsing_it(rich, monkeypatch):
    """The gold file is read once: its sha256 comes from the bytes the parser read."""
    import hashlib

    import workbench.gold._dataset as dataset_module

    gold, _ = rich
    hashed: list[str] = []
    real = dataset_module.sha256_file
    monkeypatch.setattr(dataset_module, "sha256_file", lambda p: hashed.append(str(p)) or real(p))
    dataset = load_dataset(gold)
    assert str(gold / "gold.jsonl") not in hashed and str(gold / "rubric.yaml") in hashed

    def sha(path: Path) -> str:
        return hashlib.sha256(path.read_bytes()).hexdigest()

    files = {
        "evidence": sha(gold / "evidence.jsonl"),
        "gold": sha(gold / "gold.jsonl"),
        "rubric": sha(gold / "rubric.yaml"),
    }
    assert (
        dataset.sha256
        == hashlib.sha256(
            json.dumps(files, sort_keys=True, separators=(",", ":")).encode()
        ).hexdigest()
    )


def test_key_counting_is_exact_around_quotes_and_colons(rich):
    """Arrow reads an absent key as null; the reader counts the keys each line really holds.

    Strings holding '":' or starting with ':' must not hide an absent key (which would change
    the judge fingerprint the strict reader checks), nor push valid lines off the fast path.
    """
    gold, results = rich
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    rows[0]["reason"] = 'the policy says "late": refunds need review'
    rows[1]["reason"] = ":starts with a colon"
    rows[2]["judge"]["params"]["note"] = None
    for row in rows[3:]:
        row["judge"]["params"]["note"] = None
    for row in rows[:2]:
        row["judge"]["params"]["note"] = None
    write_results(results, rows)
    # valid: every judge the same, null note everywhere
    fixed = [
        {**r, "judge_fingerprint": __import__("conftest").fingerprint(r["judge"])} for r in rows
    ]
    write_results(results, fixed)
    assert read_columnar(results) is not None
    assert_same(gold, results, "development")
    # one line without the null key (another identity under the same fingerprint), its lost
    # '":' made up by a string: refused here, and by the strict reader as it always was
    damaged = [dict(r) for r in fixed]
    damaged[4] = {
        **damaged[4],
        "judge": {
            **damaged[4]["judge"],
            "params": {k: v for k, v in damaged[4]["judge"]["params"].items() if k != "note"},
        },
        "reason": 'x": y',
    }
    write_results(results, damaged)
    assert read_columnar(results) is None
    assert any(p["code"] == "fingerprint_mismatch" for p in _problems(lambda: align(gold, results)))


@pytest.mark.parametrize("compact", [False, True])
@pytest.mark.parametrize(
    "reason", [":starts with a colon", 'says "late": now', "\\", "a\\", "[:", "{:"]
)
def test_a_string_never_makes_up_for_an_absent_key(rich, compact, reason):
    """Whether the strings are searched for '":' is decided from the bytes before each '":';
    a line missing a key whose string supplies the lost '":' is refused with either JSON
    spacing, and a valid file with such strings keeps the columnar path."""
    gold, results = rich
    fp = __import__("conftest").fingerprint
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    for row in rows:
        row["judge"]["params"]["note"] = None
        row["judge_fingerprint"] = fp(row["judge"])
    rows[4]["reason"] = reason
    separators = (",", ":") if compact else (", ", ": ")

    def write(rows: list[dict]) -> None:
        results.write_text("".join(json.dumps(r, separators=separators) + "\n" for r in rows))

    write(rows)
    assert read_columnar(results) is not None
    assert_same(gold, results, None)
    rows[4]["judge"]["params"] = {k: v for k, v in rows[4]["judge"]["params"].items()}
    del rows[4]["judge"]["params"]["note"]
    rows[4]["reason"] = ":" + reason if '":' not in json.dumps(reason) else reason
    write(rows)
    assert read_columnar(results) is None
    old = _problems(lambda: reference(gold, results, None))
    assert old
    assert _problems(lambda: align(gold, results)) == old


# -- integer keys: gold row numbers, (case, repeat, attempt) as one int64, batched gold lookups


@pytest.fixture
def small_batches(monkeypatch):
    """Look results up among the gold cases 3 at a time: checks and keys span batches."""
    import workbench.align._columnar as columnar_module

    monkeypatch.setattr(columnar_module, "FLUSH_ROWS", 3)


@pytest.mark.parametrize("flush_rows", [1, 4, 1 << 20])
def test_the_gold_lookup_in_batches_gives_the_same_report(rich, monkeypatch, flush_rows):
    import workbench.align._columnar as columnar_module

    monkeypatch.setattr(columnar_module, "FLUSH_ROWS", flush_rows)
    gold, results = rich
    for partition in (None, "development"):
        assert_same(gold, results, partition)


def _rows(results: Path) -> list[dict]:
    return [json.loads(line) for line in results.read_text().splitlines()]


def _error_only(rows: list[dict]) -> dict:
    """A result whose case has one attempt, an error, and nothing after it."""
    counts: dict[tuple[str, int], int] = {}
    for r in rows:
        counts[(r["case_id"], r["repeat"])] = counts.get((r["case_id"], r["repeat"]), 0) + 1
    return next(r for r in rows if r["error"] and counts[(r["case_id"], r["repeat"])] == 1)


@pytest.mark.parametrize(
    "damage",
    [
        "duplicate_far_apart",
        "duplicate_other_repeat",
        "duplicate_huge_attempt",
        "after_verdict_huge_repeat",
        "after_verdict_next_batch",
    ],
)
def test_duplicates_and_late_attempts_found_by_integer_keys(rich, small_batches, damage):
    """Each damage is refused by the columnar path and reported as the per-record path does."""
    gold, results = rich
    rows = _rows(results)
    err = _error_only(rows)
    verdict = next(r for r in rows if r["value"] is not None and r["attempt"] == 1)
    if damage == "duplicate_far_apart":
        rows.append(dict(rows[1]))  # batches apart from its first copy
    elif damage == "duplicate_other_repeat":
        rows.extend([{**rows[1], "repeat": 5}, {**rows[1], "repeat": 5}])
    elif damage == "duplicate_huge_attempt":  # keys would overflow one int64: three columns
        huge = {**err, "attempt": 2**62, "value": "pass", "error": None}
        rows[4:4] = [huge]
        rows.append(dict(huge))
    elif damage == "after_verdict_huge_repeat":
        rows.extend(
            [
                {**verdict, "repeat": 2**62},
                {**verdict, "repeat": 2**62, "attempt": 2, "value": None, "error": TIMEOUT},
            ]
        )
    elif damage == "after_verdict_next_batch":
        rows.append({**verdict, "attempt": 2, "value": None, "error": TIMEOUT})
    write_results(results, rows)
    assert columnar_or_none(gold, results) is None
    old = _problems(lambda: reference(gold, results, None))
    assert old, "the damage must be refused"
    assert _problems(lambda: align(gold, results)) == old


@pytest.mark.parametrize("partition", [None, "development"])
@pytest.mark.parametrize("huge", ["attempt", "repeat"])
def test_valid_results_with_huge_attempt_or_repeat_numbers(rich, small_batches, huge, partition):
    """No duplicate, no attempt after a verdict: the three-column key path gives the report."""
    gold, results = rich
    rows = _rows(results)
    err = _error_only(rows)
    if huge == "attempt":  # a verdict after an error, at an attempt number near 2**62
        rows.append({**err, "attempt": 2**62, "value": "fail", "error": None})
    else:
        rows.extend([{**err, "repeat": 2**62}, {**rows[1], "repeat": 2**62}])
    write_results(results, rows)
    assert_same(gold, results, partition)
    if huge == "repeat":
        assert_same(gold, results, partition, repeat=2**62)


def columnar_or_none(gold: Path, results: Path):
    return evidence_columnar(
        gold_index(gold),
        results,
        partition=None,
        repeat=0,
        allow_gold_change=False,
        partition_source=None,
        gold_path=str(gold),
    )


def test_key_ends_are_counted_per_line_like_arrow_count_substring():
    import numpy as np
    import pyarrow.compute as pc

    from workbench.results._columnar import _key_end_hits, _Scratch

    lines = [
        '{"a": 1}',
        '{"a": "x\\": y", "b": ":z"}',
        '{"é": "\\"\\":\\":", "c": {"d": [":", "\\":"]}}',
        '{"k":":"}',
        "{}",
    ]
    block = ("\n".join(lines) + "\n").encode()
    raw = np.frombuffer(block, dtype=np.uint8)
    ends = np.flatnonzero(raw == 10)
    expected = pc.count_substring(pa.array(lines), '":').to_numpy(zero_copy_only=False)
    hits = _key_end_hits(raw, _Scratch())  # per line, as _parse_lines counts them
    assert np.diff(np.searchsorted(hits, ends), prepend=0).tolist() == expected.tolist()


@pytest.fixture
def small_blocks(monkeypatch):
    """Results read about a line per block: every later block is parsed with the schema of
    the block before it (Arrow's explicit schema) and lines longer than a block are carried."""
    import workbench.results._columnar as results_columnar

    monkeypatch.setattr(results_columnar, "BLOCK_BYTES", 256)  # lines longer: carried, grown
    parses: list[bool] = []
    real = results_columnar._parse_block

    def spy(buffer, rows, schema):
        table = real(buffer, rows, schema)
        parses.append(schema is not None)
        return table

    monkeypatch.setattr(results_columnar, "_parse_block", spy)
    return parses


@pytest.mark.parametrize("partition", [None, "development"])
def test_blocks_parsed_with_the_previous_blocks_schema_give_the_same_report(
    rich, small_blocks, partition
):
    gold, results = rich
    assert_same(gold, results, partition)
    assert small_blocks.count(True) > 10, "later blocks must be parsed with an explicit schema"


@pytest.mark.parametrize(
    "damage",
    [
        "int_cost",
        "absent_optional",
        "no_retryable",
        "float_attempt",
        "string_tokens",
        "unknown_key",
        "absent_reason",
        "null_partition",
        "judge_model",
    ],
)
def test_a_later_block_of_other_types_or_keys_is_judged_as_without_a_schema(
    rich, small_blocks, damage
):
    """Arrow given the first blocks' schema refuses other types and unknown keys instead of
    converting them; the block is parsed again with inference and judged as before."""
    gold, results = rich
    rows = _rows(results)
    late = max(i for i, r in enumerate(rows) if r.get("cost_usd") is not None and r["repeat"] == 0)
    row = rows[late]
    if damage == "int_cost":
        row["cost_usd"] = 0  # an integer where the schema has a float: the contract accepts it
    elif damage == "absent_optional":
        del row["latency_s"]
    elif damage == "no_retryable":
        err = max(i for i, r in enumerate(rows) if r["error"] is not None)
        del rows[err]["error"]["retryable"]
    elif damage == "float_attempt":
        row["attempt"] = 1.0
    elif damage == "string_tokens":
        row["tokens_in"] = "5"
    elif damage == "unknown_key":
        row["bogus"] = 1
    elif damage == "absent_reason":
        del row["reason"]
    elif damage == "null_partition":
        row["partition"] = None
    elif damage == "judge_model":
        row["judge"] = {**row["judge"], "model": "m"}
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    if damage in ("int_cost", "absent_optional", "no_retryable"):
        assert_same(gold, results, None)
    else:
        old = _problems(lambda: reference(gold, results, None))
        assert old, "the damage must be refused"
        assert _problems(lambda: align(gold, results)) == old


def test_a_run_directory_aligns_as_its_results_file(tmp_path):
    """``--results RUN_DIR`` reads the run's results.jsonl; before, the directory was read as
    shards and its invocations.jsonl refused as results of a newer schema."""
    out = tmp_path / "run"
    args = ["run", "--candidate", str(ROOT / "data/candidates/rubric-judge@2.yaml")]
    args += ["--gold", str(DEMO), "--partition", "development", "--out", str(out)]
    assert CliRunner().invoke(main, [*args, "--cache", str(tmp_path / "cache")]).exit_code == 0
    assert (out / "invocations.jsonl").is_file()
    by_dir = CliRunner().invoke(main, ["align", "--gold", str(DEMO), "--results", str(out)])
    assert by_dir.exit_code == 0, by_dir.output
    by_file = CliRunner().invoke(
        main, ["align", "--gold", str(DEMO), "--results", str(out / "results.jsonl")]
    )
    assert by_dir.output == by_file.output.replace(str(out / "results.jsonl"), str(out))
    shards = tmp_path / "shards"  # a plain directory of shards is still read as shards
    shards.mkdir()
    (shards / "a.jsonl").write_bytes((out / "results.jsonl").read_bytes())
    by_shards = CliRunner().invoke(main, ["align", "--gold", str(DEMO), "--results", str(shards)])
    assert by_shards.exit_code == 0, by_shards.output
