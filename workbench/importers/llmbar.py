"""LLMBar (princeton-nlp/LLMBar): pairwise instruction-following cases, one per item of a
subset's ``dataset.json``, and an evaluator's ``result.json`` as ``results.jsonl`` (repeat 0 the
original order, repeat 1 swapped; anything but "1"/"2" is an evaluator error, never a guess).
The card (``templates/llmbar.md.j2``) says the rest."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._io import sha256_json, sha256_text
from ..gold import Adjudication, GoldCase, GoldDataset, Review, Rubric, SliceSpec, load_dataset
from ..results import EvaluatorError, JudgeIdentity, JudgeResult
from ._public import (
    Findings,
    Rule,
    card_version,
    check_items,
    has_marker,
    marker_clash_note,
    partition_for,
    prepare_out,
    read_json_list,
    read_source,
    render_card,
    render_pair,
    stable_id,
    with_lineage,
    write_dataset,
)
from ._public import write_judge_results as write_judge_results  # its callers import it from here
from ._registry import RESULTS_FILE, ImportSummary, register_importer

KIND = "llmbar"
UPSTREAM = "princeton-nlp/LLMBar@900616bf"
DATASET_FILE = "dataset.json"
RESULT_FILE = "result.json"
STATISTICS_FILE = "statistics.json"
ITEM_KEYS: tuple[str, ...] = ("input", "output_1", "output_2", "label")
LABELS: tuple[str, str] = ("1", "2")
AUTHORS = "llmbar-authors"
RUBRIC_VERSION = "1"
SWAP_KEYS: dict[bool, str] = {False: "swap = False", True: "swap = True"}
STATISTIC_KEYS: tuple[str, ...] = ("correct_False", "correct_True", "correct_both", "equal")

REFERENCE_SHA256: dict[str, str] = {
    "Natural": "f7127b7aa78104cb8e03a2b1b3ac0077e95b125714dd441a8ee63666145a3375",
    "Adversarial/GPTInst": "1002425f73c2cf54b6e6de99bce3f6c60fa2a17d13194772e37d7481c1351d42",
    "Adversarial/GPTOut": "1ff56e520d7607750a9866a3be0f5b850392ca4477a1f69d80f32bd3e310f561",
    "Adversarial/Manual": "0d9598769a39cdbbd265778c37e49939d41d5f76dcfb17bd75dcfa07516d3837",
    "Adversarial/Neighbor": "6712c7eda6342602e0bc7c06c282fa95e2110d4e741a284026a62d937f9780a0",
}
"""sha256 of each subset's ``dataset.json`` as released at :data:`UPSTREAM`."""

GRADING_NOTES = (
    "Pairwise instruction following. Exactly one of [Response 1] and [Response 2] is better; "
    "there are no ties. Answer 1 if Response 1 is better, 2 if Response 2 is better. Judge first "
    "whether the output honestly, precisely and closely executes the instruction, then its "
    "helpfulness, accuracy, level of detail and harmlessness. An output should contain neither "
    "more nor less than the instruction asks for. The order of the responses must not matter."
)

_WORSE = "the worse output "
_SUBSET_DESCRIPTIONS: dict[str, str] = {
    "Natural": "the instances were collected from existing human-preference data, then filtered"
    " and modified by the authors so the preference is objective.",
    "Adversarial/Neighbor": _WORSE + "answers a similar but different (neighbouring) instruction.",
    "Adversarial/GPTInst": _WORSE
    + "answers an instruction that GPT-4 wrote to be similar to the real one.",
    "Adversarial/GPTOut": _WORSE
    + "is a GPT-4 output that deviates from the instruction while looking good.",
    "Adversarial/Manual": _WORSE
    + "was constructed by hand to deviate from the instruction while looking good.",
}

_FIX_SHAPE = (
    f"use a subset directory of {UPSTREAM} Dataset/LLMBar (e.g. Natural): dataset.json is a JSON"
    " list of objects with keys " + ", ".join(ITEM_KEYS)
)
_FIX_RESULT = (
    f"use an evaluator directory of the same subset (evaluators/<LLM>/<strategy> from {UPSTREAM})"
    " whose result.json lists the subset's items in order, each with 'results'"
)
_STATISTIC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*=\s*(.+?)%\s*$")


def subset_name(subset_dir: Path) -> str:
    """The slice name of a subset directory: its path below ``LLMBar/`` (``Adversarial/Neighbor``),
    else ``Adversarial/<name>`` inside ``Adversarial``, else the directory name."""
    path = Path(subset_dir).resolve()
    below = (
        path.parts[len(path.parts) - path.parts[::-1].index("LLMBar") :]
        if "LLMBar" in path.parts
        else ()
    )
    if below:
        return "/".join(below)
    return f"Adversarial/{path.name}" if path.parent.name == "Adversarial" else path.name


def parse_statistic(text: str) -> tuple[int, int, str]:
    """``"95 / 100 = 95.0%"`` -> ``(95, 100, "95.0")`` (the percentage as printed); raises
    :class:`ValueError` for any other shape."""
    match = _STATISTIC.match(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"not an upstream 'k / n = p%' figure: {text!r}")
    return int(match[1]), int(match[2]), match[3]


def case_id_for(subset: str, index: int) -> str:
    """The case id of the item at 0-based ``index`` of a subset's ``dataset.json``."""
    slug = re.sub(r"[^a-z0-9]+", "-", subset.lower()).strip("-") or "subset"
    return f"{KIND}-{slug}-{index:03d}"


@dataclass(frozen=True)
class OrderVerdict:
    """What one evaluator said for one item in one presentation order."""

    swap: bool
    value: str | None
    """``"1"`` or ``"2"`` in the original numbering; None with ``error_kind`` set."""
    error_kind: str | None
    error_message: str | None
    reason: str | None
    request: Any | None


def read_verdict(item: Any, swap: bool) -> OrderVerdict:
    """The verdict of one ``result.json`` item in one order, or an evaluator error."""
    key = SWAP_KEYS[swap]
    steps = item.get("results") if isinstance(item, dict) else None
    last = steps[-1] if isinstance(steps, list) and steps else _ABSENT
    entry = last.get(key) if isinstance(last, dict) else None
    if not isinstance(entry, dict):
        if last is _ABSENT:
            message = "the item has no 'results' steps: the evaluator recorded no verdict"
        elif not isinstance(last, dict):
            message = "the last step of 'results' is not a verdict step (no swap entries)"
        else:
            message = f"the final step has no '{key}' entry: no verdict in this order"
        return OrderVerdict(swap, None, "missing_verdict", message, None, None)
    text, finish = _completion(entry.get("completion"))
    reason = text if text.strip() else None
    prompt = entry.get("prompt")
    request = {"prompt": prompt} if isinstance(prompt, str) else None
    note = f" (finish_reason {finish!r})" if finish and finish != "stop" else ""
    winner = entry.get("winner", _ABSENT)
    if isinstance(winner, str) and winner in LABELS:
        return OrderVerdict(swap, winner, None, None, reason, request)
    if winner is _ABSENT:
        kind, message = "missing_verdict", f"the '{key}' entry has no 'winner'{note}"
    elif winner not in (None, ""):
        kind, message = "unparseable", f"winner {winner!r} is not '1' or '2'{note}"
    elif reason is not None:
        message = f"upstream's parser found no verdict in the completion (winner is null){note}"
        kind = "unparseable"
    else:
        kind = "missing_verdict"
        message = f"the evaluator returned an empty completion{note}; upstream winner is null"
    return OrderVerdict(swap, None, kind, message, reason, request)


_ABSENT = object()


def _completion(value: Any) -> tuple[str, str | None]:
    if not isinstance(value, list):
        return value if isinstance(value, str) else "", None
    text = value[0] if value and isinstance(value[0], str) else ""
    return text, value[1] if len(value) > 1 and isinstance(value[1], str) else None


@register_importer(KIND)
def import_llmbar(
    source: Path,
    out: Path,
    *,
    evaluator: Path | None = None,
    subset: str | None = None,
    force: bool = False,
) -> ImportSummary:
    """Import one LLMBar subset (``dataset.json`` or its directory) into ``out``, with the
    verdicts of ``evaluator`` (``result.json`` or its directory) when given. ``subset`` overrides
    the slice name; ``force`` replaces a dataset in ``out``. Raises :class:`WorkbenchError`
    listing every problem."""
    source, out = Path(source), Path(out)
    subset_dir, dataset_path = _resolve(source, DATASET_FILE)
    fix = f"point at a subset directory holding dataset.json ({_FIX_SHAPE})"
    data = read_source(dataset_path, "LLMBar dataset.json", fix)
    result_path = _resolve(Path(evaluator), RESULT_FILE)[1] if evaluator is not None else None
    result_data = _read_result(result_path, "point --evaluator at") if result_path else b""
    replaced = prepare_out(out, force=force)
    name = subset.strip() if subset and subset.strip() else subset_name(subset_dir)
    source_sha256 = hashlib.sha256(data).hexdigest()
    items = _read_items(dataset_path, data)
    cases = [_gold_case(item, index, name, dataset_path) for index, item in enumerate(items)]
    quirks = _quirks(items)
    notes = [*replaced, *quirks, *_provenance_notes(dataset_path, source_sha256, name)]
    results, judge_front = None, None
    if result_path is not None:
        expected = [{key: _comparable(key, item[key]) for key in ITEM_KEYS} for item in items]
        results, judge_notes, judge_front = _judge_results(
            result_path, result_data, expected, cases, name
        )
        notes += judge_notes
    summary = write_dataset(
        kind=KIND,
        source=dataset_path,
        source_sha256=source_sha256,
        out=out,
        cases=cases,
        rubric=_rubric(name),
        card=_card(dataset_path, name, source_sha256, cases, quirks, judge_front),
        results=results,
        notes=notes,
    )
    if result_path is None:
        return summary
    check = _check_statistics(out, result_path.parent / STATISTICS_FILE)
    return summary.model_copy(update={"notes": [*summary.notes, check]})


def _card(
    source: Path,
    subset: str,
    source_sha256: str,
    cases: list[GoldCase],
    quirks: list[str],
    judge: dict[str, Any] | None,
) -> str:
    released = _released_subset(source_sha256)
    described = (
        f" In this subset, {_SUBSET_DESCRIPTIONS[subset]}" if subset in _SUBSET_DESCRIPTIONS else ""
    )
    provenance: dict[str, Any] = {
        "upstream": UPSTREAM,
        "subset": subset,
        "file": source.name,
        "source_sha256": source_sha256,
        "matches_upstream_copy": released is not None,
        "upstream_subset": released,
        "importer": "workbench.importers.llmbar",
        **({"judge_results": judge} if judge is not None else {}),
    }
    labels = Counter(case.gold_label for case in cases)
    return render_card(
        KIND,
        name=case_id_for(subset, 0).rsplit("-", 1)[0],
        version=card_version(UPSTREAM, source_sha256, released is not None),
        sampling_window=f"LLMBar subset {subset} as released in {UPSTREAM}"
        f" (Dataset/LLMBar/{subset}/dataset.json).{described}",
        quirks=quirks,
        provenance=provenance,
        subset=subset,
        cases=len(cases),
        ones=labels.get("1", 0),
        twos=labels.get("2", 0),
        evaluator=judge["evaluator"] if judge else None,
    )


def _read_result(result_path: Path, point: str) -> bytes:
    fix = f"{point} a directory holding result.json ({_FIX_RESULT})"
    return read_source(result_path, "LLMBar evaluator result.json", fix)


def _gold_case(item: dict[str, Any], index: int, name: str, dataset_path: Path) -> GoldCase:
    label, o1, o2 = str(item["label"]), item["output_1"], item["output_2"]
    response, group = render_pair(o1, o2), stable_id("instruction", item["input"])
    return GoldCase(
        case_id=case_id_for(name, index),
        partition=partition_for(KIND, group),
        group=group,
        slice=name,
        tags=[f"set:{name.split('/')[0]}"],
        rubric_version=RUBRIC_VERSION,
        input=item["input"],
        response=response,
        response_hash=sha256_text(response),
        grading_notes=GRADING_NOTES,
        reviews=[Review(reviewer=AUTHORS, label=label)],
        adjudication=Adjudication(
            label=label,
            adjudicator=AUTHORS,
            reason=(
                "Gold label released by the LLMBar authors (dataset.json 'label'); not an"
                " independent human review."
            ),
        ),
        metadata={
            "source": f"{dataset_path.name}[{index}]",
            "upstream": UPSTREAM,
            "subset": name,
            "index": index,
            "output_1_sha256": sha256_text(o1),
            "output_2_sha256": sha256_text(o2),
        },
    )


def _quirks(items: list[dict[str, Any]]) -> list[str]:
    outputs = [(item["output_1"], item["output_2"]) for item in items]
    clash = [str(index) for index, pair in enumerate(outputs) if has_marker(*pair)]
    empty = sum(1 for pair in outputs for text in pair if not text.strip())
    quirks = marker_clash_note(clash, "an output", "index")
    if empty:
        quirks.append(f"{empty} output(s) are empty in the source and kept as empty text")
    return quirks


def _provenance_notes(dataset_path: Path, source_sha256: str, name: str) -> list[str]:
    released = _released_subset(source_sha256)
    if released is None:
        return [
            f"{dataset_path.name} is not byte-identical to any subset released at {UPSTREAM}; the"
            " card records its sha256"
        ]
    if released != name:
        return [f"{dataset_path.name} is upstream's {released} subset, imported as slice {name!r}"]
    return []


def _rubric(name: str) -> Rubric:
    return Rubric(
        name="llmbar-instruction-following",
        version=RUBRIC_VERSION,
        criterion=(
            "Which of two outputs better follows the instruction: 1 (Response 1) or 2 (Response 2);"
            " exactly one is better."
        ),
        labels=list(LABELS),
        pass_label=None,
        fail_label=None,
        min_reviews=1,
        slices={
            name: SliceSpec(
                risk="medium",
                description=f"LLMBar {name}: {_SUBSET_DESCRIPTIONS.get(name, 'an LLMBar subset')}",
            )
        },
    )


def llmbar_judge_results(evaluator: Path, gold: GoldDataset | str | Path) -> list[JudgeResult]:
    """One evaluator's verdicts as the judge results :func:`import_llmbar` writes, for a gold
    dataset (or its path) that importer wrote earlier; each item is checked against the gold case
    at its position. Raises :class:`WorkbenchError` listing every problem."""
    dataset = gold if isinstance(gold, GoldDataset) else load_dataset(gold)
    result_path = _resolve(Path(evaluator), RESULT_FILE)[1]
    data = _read_result(result_path, "point at")
    cases = list(dataset.cases.values())
    findings = Findings(dataset.gold_path)
    for position, case in enumerate(cases):
        meta = case.metadata
        if meta.get("index") != position or not all(
            isinstance(meta.get(f"{k}_sha256"), str) for k in ("output_1", "output_2")
        ):
            findings.add(
                "not_llmbar_gold",
                case.case_id,
                "the case was not written by the LLMBar importer (metadata index and output hashes,"
                " in file order)",
                "import the subset with `workbench import llmbar SUBSET_DIR --out DIR` and pass"
                " that DIR",
            )
    findings.raise_if_any("not an LLMBar gold dataset")
    expected = [
        {"input": c.input, "label": c.gold_label or ""}
        | {k: c.metadata[f"{k}_sha256"] for k in ("output_1", "output_2")}
        for c in cases
    ]
    slices = sorted({case.slice for case in cases})
    results, _, _ = _judge_results(result_path, data, expected, cases, "+".join(slices))
    return with_lineage(results, dataset)


def _released_subset(sha256: str) -> str | None:
    return next((subset for subset, digest in REFERENCE_SHA256.items() if digest == sha256), None)


def _resolve(path: Path, filename: str) -> tuple[Path, Path]:
    return (path.parent, path) if path.is_file() else (path, path / filename)


_RULES: list[Rule] = [
    (
        ("input", "output_1", "output_2"),
        lambda v, _: isinstance(v, str),
        "bad_type",
        "'{key}' is a JSON {type}, not text",
        "make '{key}' a string",
    ),
    (
        ("input",),
        lambda v, _: not isinstance(v, str) or bool(v.strip()),
        "empty_prompt",
        "'input' (the instruction) is empty",
        "restore the instruction or remove the item",
    ),
    (
        ("label",),
        lambda v, _: not isinstance(v, bool) and str(v) in LABELS,
        "unknown_label",
        "'label' is {value!r}, not 1 or 2",
        "set 'label' to 1 (output_1 is better) or 2 (output_2 is better)",
    ),
]


def _read_items(source: Path, data: bytes) -> list[dict[str, Any]]:
    findings, what = Findings(source), "LLMBar dataset.json"
    loaded = read_json_list(findings, data, what, _FIX_SHAPE, not_what=f"not an {what}")
    check_items(findings, loaded, ITEM_KEYS, _RULES, _FIX_SHAPE)
    findings.raise_if_any("invalid LLMBar items")
    return loaded


def _read_evaluated(result_path: Path, data: bytes, expected: list[dict[str, str]]) -> list[Any]:
    findings, what = Findings(result_path), "LLMBar result.json"
    loaded = read_json_list(
        findings, data, what, _FIX_RESULT, not_what=f"not an {what}", noun="evaluated items"
    )
    if len(loaded) != len(expected):
        message = f"result.json has {len(loaded)} item(s), dataset.json has {len(expected)}"
        findings.add("item_count_mismatch", "", message, _FIX_RESULT)
    for index, (item, gold) in enumerate(zip(loaded, expected, strict=False)):
        if not isinstance(item, dict):
            message = f"an item is a JSON {type(item).__name__}, not an object"
            findings.add("item_shape", f"item {index}", message, _FIX_RESULT)
            continue
        what_differs = [
            f"'{k}' differs" for k in ITEM_KEYS if k in item and _comparable(k, item[k]) != gold[k]
        ]
        what_differs += [f"'{k}' is absent" for k in ITEM_KEYS if k not in item]
        if what_differs:
            findings.add(
                "result_item_mismatch",
                f"item {index}",
                "the evaluated item is not dataset.json's item at the same position"
                f" ({', '.join(what_differs)})",
                _FIX_RESULT,
            )
    findings.raise_if_any("the evaluator results do not belong to this subset")
    if not any(_verdict_steps(item) for item in loaded):
        findings.add(
            "no_verdicts",
            "",
            "no item has a verdict step (results[-1] with 'swap = False' / 'swap = True' entries)",
            _FIX_RESULT,
        )
        findings.fail("not an LLMBar evaluator result.json")
    return loaded


def _judge_results(
    result_path: Path,
    data: bytes,
    expected: list[dict[str, str]],
    cases: list[GoldCase],
    subset: str,
) -> tuple[list[JudgeResult], list[str], dict[str, Any]]:
    """Both orders' verdicts of every item as judge results, notes and the card's account."""
    loaded = _read_evaluated(result_path, data, expected)
    verdicts = [(read_verdict(item, False), read_verdict(item, True)) for item in loaded]
    result_sha256 = hashlib.sha256(data).hexdigest()
    llm, strategy = result_path.parent.resolve().parent.name, result_path.parent.resolve().name
    identity = JudgeIdentity(
        name=llm,
        version=strategy,
        kind="imported",
        model=llm,
        params={
            "source": UPSTREAM,
            "subset": subset,
            "evaluator": f"{llm}/{strategy}",
            "results_file": RESULT_FILE,
            "results_sha256": result_sha256,
            "verdict_step": "results[-1]",
        },
    )
    run_id = f"{KIND}:{subset}:{llm}/{strategy}:{result_sha256[:12]}"
    fingerprint = identity.fingerprint()
    results = [
        _result(case, verdict, identity, fingerprint, run_id)
        for case, pair in zip(cases, verdicts, strict=True)
        for verdict in pair
    ]
    errors = Counter(v.error_kind for pair in verdicts for v in pair if v.error_kind)
    steps = Counter(len(i["results"]) for i in loaded if isinstance(i.get("results"), list))
    judge_front = {
        "evaluator": f"{llm}/{strategy}",
        "results_file": result_path.name,
        "results_sha256": result_sha256,
        "steps_per_item": {str(k): v for k, v in sorted(steps.items())},
        "evaluator_errors": dict(sorted(errors.items())),
    }
    notes = _judge_notes(f"{llm}/{strategy}", loaded, len(results), cases, verdicts, errors)
    return results, notes, judge_front


def _result(
    case: GoldCase, verdict: OrderVerdict, identity: JudgeIdentity, fingerprint: str, run_id: str
) -> JudgeResult:
    order = ["2", "1"] if verdict.swap else ["1", "2"]
    kind, message, request = verdict.error_kind, verdict.error_message or "", verdict.request
    error = EvaluatorError(kind=kind, message=message, retryable=False) if kind else None
    return JudgeResult(
        case_id=case.case_id,
        response_hash=case.response_hash,
        value=verdict.value,
        reason=verdict.reason,
        judge=identity,
        judge_fingerprint=fingerprint,
        run_id=run_id,
        partition=case.partition.value,
        error=error,
        attempt=1,
        repeat=1 if verdict.swap else 0,
        rendered_request_sha256=sha256_json(request) if request is not None else None,
        rendered_request=request,
        presentation={"swap": verdict.swap, "presented_order": order, "first_shown": order[0]},
    )


def _judge_notes(
    name: str,
    loaded: list[Any],
    count: int,
    cases: list[GoldCase],
    verdicts: list[tuple[OrderVerdict, OrderVerdict]],
    errors: Counter[str],
) -> list[str]:
    failed = sum(errors.values())
    notes = [
        f"judge {name}: {count} result(s) (repeat 0 = original order, repeat 1 ="
        f" swapped), {count - failed} verdict(s), {failed} evaluator error(s)"
    ]
    if errors:
        errored = [
            f"{case.case_id} ({'swapped' if v.swap else 'original'} order: {v.error_kind})"
            for case, pair in zip(cases, verdicts, strict=True)
            for v in pair
            if v.error_kind
        ]
        shown = "; ".join(errored[:6]) + ("; ..." if len(errored) > 6 else "")
        notes.append(
            "evaluator errors (null or unparseable winners, kept as errors, never guessed): "
            + ", ".join(f"{k} {v}" for k, v in sorted(errors.items()))
            + f": {shown}"
        )
    synthesized = sum(1 for item in loaded if _verdict_steps(item) >= 2)
    if synthesized:
        notes.append(
            f"{synthesized} item(s) have a second verdict step (the Swap strategy's synthesize"
            " step, run when the two orders disagreed); its verdict is the one imported, and its"
            " recorded prompt is the rendered_request"
        )
    steps = [item["results"] for item in loaded if isinstance(item.get("results"), list)]
    auxiliary = sum(any(isinstance(s, list) for s in item[:-1]) for item in steps)
    if auxiliary:
        notes.append(
            f"{auxiliary} item(s) have auxiliary steps before the verdict (e.g. generated questions"
            " and a reference output); they are not imported"
        )
    return notes


def _comparable(key: str, value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    return sha256_text(text) if key in ("output_1", "output_2") else text


def _verdict_steps(item: Any) -> int:
    steps = item.get("results") if isinstance(item, dict) else None
    count = 0
    for step in reversed(steps[-2:]) if isinstance(steps, list) else ():
        if not (isinstance(step, dict) and any(k in step for k in SWAP_KEYS.values())):
            break
        count += 1
    return count


def _check_statistics(out: Path, statistics_path: Path) -> str:
    if not statistics_path.is_file():
        return (
            f"no {STATISTICS_FILE} beside the evaluator's result.json: nothing to compare the"
            " analysis with"
        )
    try:
        upstream = json.loads(statistics_path.read_text(encoding="utf-8"))
        expected = {key: parse_statistic(upstream[key])[:2] for key in STATISTIC_KEYS}
    except (OSError, KeyError, TypeError, ValueError) as exc:  # JSON and UTF-8 errors too
        return (
            f"{statistics_path.name} could not be read as upstream statistics"
            f" ({type(exc).__name__}: {exc}); not compared"
        )
    from ..pairwise import pairwise_report, upstream_figures

    got = upstream_figures(pairwise_report(out, out / RESULTS_FILE))
    shown = ", ".join(f"{key} {k}/{n}" for key, (k, n) in got.items())
    if got == expected:
        return (
            f"the pairwise analysis of the imported files reproduces {statistics_path.name} exactly"
            f" ({shown})"
        )
    differ = ", ".join(
        f"{key}: upstream {expected[key][0]}/{expected[key][1]}, here {got[key][0]}/{got[key][1]}"
        for key in STATISTIC_KEYS
        if got[key] != expected[key]
    )
    return (
        f"the pairwise analysis DIFFERS from {statistics_path.name} ({differ}); check that the"
        " files belong together"
    )
