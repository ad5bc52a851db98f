"""The results mapping: which column of a predictions table is what, and who the judge was.

A small YAML file (or a dict, or ``workbench import results`` options) read into
:class:`ResultsMapping`. Every problem is reported at once (:func:`check_mapping`): unknown
keys and wrong types, columns the table does not have, a missing case key or prediction, a
score without a threshold, labels that are not in the rubric, a missing judge declaration
or prompt. The format is documented in ``docs/formats.md#results-mapping``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator

from .._io import read_bounded, sha256_text
from .._load import Problems, error_field, load_yaml, validation_problems
from .._record import Record as _Model
from ..errors import Problem, WorkbenchError
from ._results_source import as_text
from ._table_reader import number_as_text

RESULTS_MAPPING_SCHEMA_VERSION = 1
"""Version of the results mapping format."""

COLUMN_FIELDS: tuple[str, ...] = (
    "case_id",
    "input",
    "response",
    "label",
    "score",
    "reason",
    "latency_s",
    "tokens_in",
    "tokens_out",
    "cost_usd",
)
"""Mapping fields that name a column of the predictions table."""

FIX_MAPPING = "correct the mapping; see docs/formats.md#results-mapping"
_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$"


class JudgeDeclaration(_Model):
    """Who produced the predictions. Its hash (with the verdict rules) is the judge fingerprint."""

    name: str = Field(pattern=_NAME)
    """Judge name; also the name of the ``imported`` candidate written beside the results."""
    version: str = Field(pattern=_NAME)
    """Judge version; a changed prompt, model or threshold is a new version."""
    model: str = Field(min_length=1)
    """The model (or detector) that produced the predictions, e.g. ``gpt-4o-mini-2024-07-18``."""
    prompt: str | None = None
    """The prompt template, inline; its sha256 becomes the identity's ``prompt_sha256``."""
    prompt_file: str | None = None
    """The prompt template in a file (relative to the mapping file, or to the working directory
    when given as an option); its sha256 becomes the identity's ``prompt_sha256``."""
    prompt_description: str | None = None
    """What the prompt asks, when the template itself is not available; kept in the identity."""
    description: str = ""
    """What this judge version is; the ``imported`` candidate's description."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Generation parameters the judge ran with (temperature, seed ...); part of the identity."""

    _text = field_validator("name", "version", mode="before")(number_as_text)


class ScoreThreshold(_Model):
    """How a score becomes a label, as in score-based candidates; the score is kept."""

    value: float
    """The cut-off score."""
    pass_if: Literal["at_least", "at_most"] = "at_least"
    """``at_least``: score >= value passes; ``at_most``: score <= value passes."""
    pass_label: str | None = None
    """Label for a score on the passing side (default: the rubric's ``pass_label``)."""
    fail_label: str | None = None
    """Label for a score on the failing side (default: the rubric's ``fail_label``)."""


class ResultsMapping(_Model):
    """Which column of a predictions table is what (``workbench import results --mapping``)."""

    schema_version: int = RESULTS_MAPPING_SCHEMA_VERSION
    """Mapping format version."""
    format: Literal["csv", "jsonl", "parquet"] | None = None
    """Table format; default: from the file extension."""
    case_id: str | None = None
    """Column holding the gold case id. Without it, rows are matched on ``input`` and
    ``response``."""
    input: str | None = None
    """Column holding the exact input text: matched (with ``response``) to the gold case when
    there is no ``case_id`` column, else checked against the gold case's input."""
    response: str | None = None
    """Column holding the exact response judged: its sha256 must equal the gold case's
    ``response_hash`` (the judge saw what the reviewers saw)."""
    label: str | None = None
    """Prediction column holding labels (mapped through ``labels``)."""
    score: str | None = None
    """Prediction column holding scores: kept in each result; with ``threshold``, they make the
    label."""
    threshold: ScoreThreshold | None = None
    """How a score becomes a label; required when ``score`` is the only prediction column."""
    labels: dict[str, str] = Field(default_factory=dict)
    """Source value -> rubric label (e.g. ``{correct: pass, incorrect: fail}``). When given,
    every value must be listed; without it, every value must be a rubric label."""
    reason: str | None = None
    """Column holding the judge's stated reason."""
    latency_s: str | None = None
    """Column holding the wall time per prediction, in seconds."""
    tokens_in: str | None = None
    """Column holding prompt tokens."""
    tokens_out: str | None = None
    """Column holding completion tokens."""
    cost_usd: str | None = None
    """Column holding the cost per prediction, in USD."""
    judge: JudgeDeclaration
    """Who produced the predictions."""

    @field_validator("labels", mode="before")
    @classmethod
    def _keys_as_text(cls, value: Any) -> Any:
        # YAML reads {0: fail, 1: pass} with int keys, {true: pass} with bool keys.
        if isinstance(value, dict):
            return {as_text(k): number_as_text(v) for k, v in value.items()}
        return value


def load_mapping_file(path: str | Path) -> tuple[dict[str, Any], Path]:
    """The raw mapping in a YAML file and the directory relative paths are resolved from."""
    path = Path(path)
    raw = load_yaml(
        path,
        prefix="mapping",
        what="mapping",
        missing_fix="point --mapping at a YAML file; see docs/formats.md#results-mapping",
        encoding_code="mapping_yaml",
        shape=("the mapping must be a YAML mapping (key: value)", FIX_MAPPING),
        if_empty={},
    ).data
    return raw, path.parent


def merge_options(raw: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """``raw`` with command-line ``options`` (None = not given) laid over it; ``judge`` and
    ``labels`` merge key by key."""
    merged = dict(raw)
    for key, value in options.items():
        if isinstance(value, dict):
            value = {k: v for k, v in value.items() if v is not None}
        if value is None or value == {}:
            continue
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def command_line_options(
    label_map: Sequence[str] = (),
    *,
    threshold: float | None = None,
    pass_if: str | None = None,
    prompt_file: str | Path | None = None,
    **flags: str | None,
) -> dict[str, Any]:
    """The ``options`` of :func:`~workbench.importers.import_results` from ``workbench import
    results`` flags (None: not given), each named as its mapping field (``case_id``,
    ``latency_s``, the judge's ``name``, ``version`` ...): ``label_map`` items ``VALUE=LABEL``
    (every malformed one refused at once), the score threshold and ``prompt_file``, made
    absolute."""
    bad = [item for item in label_map if "=" not in item]
    if bad:
        raise WorkbenchError(
            "invalid --label-map",
            [
                Problem(
                    location="--label-map",
                    code="mapping_invalid",
                    message=f"{item!r} is not VALUE=LABEL",
                    fix="write --label-map correct=pass",
                )
                for item in bad
            ],
        )
    flags["prompt_file"] = str(Path(prompt_file).resolve()) if prompt_file else None
    return {
        **{k: flags.get(k) for k in ("format", "case_id", "input", "response", "label", "score")},
        "threshold": {"value": threshold, "pass_if": pass_if},
        "labels": {k.strip(): v.strip() for k, _, v in (i.partition("=") for i in label_map)},
        **{k: flags.get(k) for k in ("reason", "latency_s", "tokens_in", "tokens_out", "cost_usd")},
        "judge": {
            k: flags.get(k)
            for k in (
                "name",
                "version",
                "model",
                "prompt_file",
                "prompt_description",
                "description",
            )
        },
    }


def _loc(location: str, field: str) -> str:
    return f"{location} ({field})" if field else location


_ERROR_CODES = {"extra_forbidden": "mapping_unknown_key", "missing": "mapping_missing_key"}


def _error_message(e: Any, field: str) -> str:
    return {"extra_forbidden": f"unknown key {field!r}", "missing": f"{field} is required"}.get(
        e["type"], f"{field}: {e['msg']}"
    )


def _error_fix(e: Any) -> str:
    if e["type"] == "extra_forbidden":
        return (
            "remove it or correct its spelling; the keys are listed in"
            " docs/formats.md#results-mapping"
        )
    if e["type"] == "missing":
        return "declare it" + (
            " (the judge's name, version and model, and its prompt)"
            if error_field(e, "mapping").startswith("judge")
            else ""
        )
    return FIX_MAPPING


Add = Callable[..., None]
"""``add(field, code, message, fix=FIX_MAPPING)``: record a problem at a mapping field."""


def check_mapping(
    raw: dict[str, Any],
    *,
    location: str,
    base_dir: Path,
    columns: tuple[str, ...],
    rubric_labels: list[str],
    rubric_pass: str | None,
    rubric_fail: str | None,
) -> tuple[ResultsMapping, str | None]:
    """Validate ``raw`` against the table's ``columns`` and the rubric; raise with every problem.

    Returns the mapping and the prompt's sha256 (None when only described). The checks beyond
    the model's own read the raw values, so they are listed even when other keys are wrong.
    """
    problems = Problems()

    def add(field: str, code: str, message: str, fix: str = FIX_MAPPING) -> None:
        problems.add(_loc(location, field), code, message, fix)

    mapping: ResultsMapping | None = None
    try:
        mapping = ResultsMapping.model_validate(raw)
    except ValidationError as exc:
        problems += validation_problems(
            exc,
            at=lambda *path: _loc(location, ".".join(map(str, path)) or "mapping"),
            root="mapping",
            code=lambda e: _ERROR_CODES.get(e["type"], "mapping_invalid"),
            message=_error_message,
            fix=_error_fix,
        )
    _check_columns(raw, columns, add)
    _check_prediction(raw, add)
    _check_labels(raw, rubric_labels, add)
    _check_label_meaning(raw, rubric_labels, add)
    threshold = raw.get("threshold")
    if isinstance(threshold, dict):
        _check_threshold(threshold, rubric_labels, rubric_pass, rubric_fail, add)
        _check_threshold_direction(threshold, rubric_pass, rubric_fail, add)
    judge = raw.get("judge")
    prompt_sha = _check_judge(judge, base_dir, add) if isinstance(judge, dict) else None
    problems.raise_if_any(f"{location}: the results mapping has {len(problems)} problem(s)")
    assert mapping is not None
    return mapping, prompt_sha


def _text(source: dict[str, Any], key: str) -> str | None:
    value = source.get(key)
    return value if isinstance(value, str) and value else None


def _check_columns(raw: dict[str, Any], columns: tuple[str, ...], add: Add) -> None:
    """Every column the mapping names is one the table has."""
    available = ", ".join(columns[:30]) + (" ..." if len(columns) > 30 else "")
    for field in COLUMN_FIELDS:
        column = _text(raw, field)
        if column is not None and column not in columns:
            add(
                field,
                "mapping_unknown_column",
                f"{field}: the table has no column {column!r} (columns: {available})",
                "name a column of the table (names are case-sensitive)",
            )


def _check_prediction(raw: dict[str, Any], add: Add) -> None:
    """A case key, one prediction column, and a threshold exactly when a score makes labels."""
    if _text(raw, "case_id") is None and not (_text(raw, "input") and _text(raw, "response")):
        add(
            "case_id",
            "mapping_no_key",
            "no case key: give case_id (a column holding the gold case id), or both input and"
            " response (columns holding the exact texts, e.g. Ragas user_input and response)",
        )
    label, score, threshold = _text(raw, "label"), _text(raw, "score"), raw.get("threshold")
    if label is None and score is None:
        add(
            "label",
            "mapping_no_prediction",
            "no prediction column: give label (a column of labels) or score (a column of scores,"
            " with a threshold)",
        )
    if score is not None and label is None and threshold is None:
        add(
            "threshold",
            "mapping_threshold_missing",
            f"score column {score!r} needs a threshold to make labels",
            "add threshold: {value: X, pass_if: at_least | at_most}",
        )
    if threshold is not None and score is None:
        add(
            "threshold",
            "mapping_threshold_unused",
            "a threshold without a score column",
            "name the score column (score: COLUMN), or remove the threshold",
        )
    if threshold is not None and score is not None and label is not None:
        add(
            "threshold",
            "mapping_prediction_ambiguous",
            "both a label column and a score threshold: which one makes the label?",
            "remove label (the threshold makes labels) or threshold (labels come from the label"
            " column; the score is kept)",
        )


def _check_labels(raw: dict[str, Any], rubric_labels: list[str], add: Add) -> None:
    """The label mapping: used, each source value once, onto rubric labels."""
    labels = raw.get("labels")
    if not isinstance(labels, dict) or not labels:
        return
    if _text(raw, "label") is None:
        add(
            "labels",
            "mapping_labels_unused",
            "a label mapping without a label column",
            "name the label column (label: COLUMN), or remove labels",
        )
    seen: dict[str, Any] = {}
    for key, target in labels.items():
        norm = as_text(key)
        if norm in seen:
            add(
                "labels",
                "mapping_duplicate_value",
                f"source values {seen[norm]!r} and {key!r} are the same value ({norm!r})",
                "list each source value once",
            )
        seen[norm] = key
        target = number_as_text(target)
        if isinstance(target, str) and target not in rubric_labels:
            add(
                f"labels.{key}",
                "mapping_unknown_label",
                f"{key!r} maps to {target!r}, which is not a rubric label"
                f" ({', '.join(rubric_labels)})",
                "map every source value to one of the rubric's labels",
            )


def _check_label_meaning(raw: dict[str, Any], rubric_labels: list[str], add: Add) -> None:
    """The label mapping translates a foreign vocabulary only: a source value that is already a
    rubric label keeps its meaning (``pass: fail`` inverts the verdicts), and a mapping of
    nothing but rubric labels onto themselves is not needed."""
    labels = raw.get("labels")
    if not isinstance(labels, dict) or not labels:
        return
    targets = {as_text(k): number_as_text(v) for k, v in labels.items()}
    relabelled = {k: v for k, v in targets.items() if k in rubric_labels and v != k}
    for key, target in relabelled.items():
        add(
            f"labels.{key}",
            "mapping_relabels",
            f"{key!r} is a rubric label, mapped to {target!r}: the predictions would count as"
            " what they did not say",
            f"remove {key!r} from labels (a rubric label is read as itself); predictions whose"
            " labels mean something else are a different judge, not a mapping",
        )
    if not relabelled and all(k in rubric_labels for k in targets):
        add(
            "labels",
            "mapping_labels_unneeded",
            "every source value is already a rubric label mapped to itself: the mapping is not"
            " needed",
            "remove labels: predictions in the rubric's labels are read as they are",
        )


def _check_threshold_direction(
    threshold: dict[str, Any], rubric_pass: str | None, rubric_fail: str | None, add: Add
) -> None:
    """A score on the passing side never becomes the rubric's fail label (nor the reverse):
    ``pass_if`` states the direction, the labels do not invert it."""
    pass_label, fail_label = threshold.get("pass_label"), threshold.get("fail_label")
    inverted = [
        side
        for side, label, other in (
            ("pass_label", pass_label, rubric_fail),
            ("fail_label", fail_label, rubric_pass),
        )
        if label is not None and other is not None and label == other
    ]
    for side in inverted:
        add(
            f"threshold.{side}",
            "mapping_threshold_inverted",
            f"threshold {side} {threshold.get(side)!r} is the rubric's"
            f" {'fail' if side == 'pass_label' else 'pass'} label: the threshold would invert"
            " the verdicts",
            "state the direction with threshold.pass_if (at_least or at_most) and leave"
            " pass_label and fail_label to the rubric",
        )


def _check_threshold(
    threshold: dict[str, Any],
    rubric_labels: list[str],
    rubric_pass: str | None,
    rubric_fail: str | None,
    add: Add,
) -> None:
    """The threshold's two labels: given or the rubric's, rubric labels, and not the same."""
    chosen = {
        "pass_label": threshold.get("pass_label", rubric_pass),
        "fail_label": threshold.get("fail_label", rubric_fail),
    }
    for side, label in chosen.items():
        if label is None:
            add(
                f"threshold.{side}",
                "mapping_threshold_label",
                f"the rubric declares no {side}, so the threshold needs one",
                f"add threshold.{side}: one of {', '.join(rubric_labels)}",
            )
        elif isinstance(label, str) and label not in rubric_labels:
            add(
                f"threshold.{side}",
                "mapping_unknown_label",
                f"threshold {side} {label!r} is not a rubric label ({', '.join(rubric_labels)})",
                "use one of the rubric's labels",
            )
    if chosen["pass_label"] is not None and chosen["pass_label"] == chosen["fail_label"]:
        add(
            "threshold",
            "mapping_threshold_label",
            "the threshold's pass and fail labels are the same",
            "give two different labels",
        )


def _check_judge(judge: dict[str, Any], base_dir: Path, add: Add) -> str | None:
    """The judge's prompt, declared once, and no credential; returns the prompt's sha256."""
    from .._redact import find_secrets

    prompt, prompt_file = _text(judge, "prompt"), _text(judge, "prompt_file")
    if prompt and prompt_file:
        add(
            "judge.prompt_file",
            "mapping_prompt_ambiguous",
            "both prompt and prompt_file",
            "give the prompt once: inline (prompt) or in a file (prompt_file)",
        )
    if not (prompt or prompt_file or _text(judge, "prompt_description")):
        add(
            "judge.prompt",
            "mapping_prompt_missing",
            "the judge's prompt is not declared",
            "give judge.prompt (the template), judge.prompt_file (a file holding it) or"
            " judge.prompt_description (what it asks, when the template is not available)",
        )
    prompt_sha = sha256_text(prompt) if prompt else None
    if not prompt and prompt_file:
        prompt_sha = _prompt_file_sha(base_dir / prompt_file, add)
    for where, what in find_secrets({"judge": judge}):
        add(
            where,
            "mapping_secret",
            f"looks like a credential ({what})",
            "never record keys; remove it (keys belong in environment variables)",
        )
    return prompt_sha


def _prompt_file_sha(path: Path, add: Add) -> str | None:
    """The sha256 of a prompt file's text (bounded, like a spec's ``prompt_file``)."""
    try:
        return sha256_text(read_bounded(path).decode("utf-8"))
    except (WorkbenchError, UnicodeDecodeError) as exc:
        first = exc.problems[0] if isinstance(exc, WorkbenchError) and exc.problems else None
        if first is not None and first.code == "file_missing":
            reason = "it does not exist"
        else:
            reason = (
                f"it cannot be read ({first.message if first is not None else type(exc).__name__})"
            )
        add(
            "judge.prompt_file",
            "mapping_prompt_file",
            f"prompt file {str(path)!r}: {reason}",
            "point prompt_file at the template (relative to the mapping file), or use"
            " prompt_description",
        )
        return None
