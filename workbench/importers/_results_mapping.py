"""The results mapping: which column of a predictions table is what, and who the judge was
(``docs/formats.md#results-mapping``). :func:`check_mapping` reports every problem at once, named
in the mapping's keys or in ``workbench import results``' options (:class:`Syntax`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator

from .._io import read_bounded, sha256_text
from .._load import Problems, error_field, load_yaml, validation_problems
from .._record import Record as _Model
from ..errors import WorkbenchError, problem
from ._table_reader import as_text, number_as_text

RESULTS_MAPPING_SCHEMA_VERSION = 1

KEY_FIELDS = ("format", "case_id", "input", "response", "label", "score")
USAGE_FIELDS = ("reason", "latency_s", "tokens_in", "tokens_out", "cost_usd")
COLUMN_FIELDS = (*KEY_FIELDS[1:], *USAGE_FIELDS)

DOC = "docs/formats.md#results-mapping"
FIX_MAPPING = "correct the mapping; see " + DOC
FIX_FLAGS = "correct the option; see `workbench import results --help`"

JUDGE_OPTIONS = ("name", "version", "model", "prompt_file", "prompt_description", "description")
FLAGS: dict[str, str] = {
    **{f: "--" + f.replace("_", "-") for f in ("format", "threshold", *COLUMN_FIELDS)},
    **{f"judge.{f}": "--" + f.replace("_", "-") for f in JUDGE_OPTIONS},
    "threshold.value": "--threshold",
    "threshold.pass_if": "--pass-if",
    "labels": "--label-map",
    "latency_s": "--latency",
    "cost_usd": "--cost",
    "judge": "--name, --version, --model",
    "judge.prompt": "--prompt-file or --prompt-description",
}
"""Each mapping field and the ``workbench import results`` option that sets it."""


@dataclass(frozen=True)
class Syntax:
    """How an import's problems name what to change: the mapping's keys, or (``flags``: options
    and no ``--mapping``) the ``workbench import results`` options."""

    flags: bool = False

    def name(self, field: str) -> str:
        """``field`` (a dotted mapping key) as the user writes it: the key, or its option."""
        if not self.flags:
            return field
        if field.startswith("labels."):
            return f"--label-map {field.removeprefix('labels.')}=LABEL"
        return FLAGS.get(field, field)

    def pick(self, mapping: str, flags: str) -> str:
        return flags if self.flags else mapping

    def where(self, location: str, field: str) -> str:
        if self.flags:
            return f"command line ({self.name(field)})" if field else "command line"
        return f"{location} ({field})" if field else location

    @property
    def fix(self) -> str:
        return self.pick(FIX_MAPPING, FIX_FLAGS)


MAPPING_SYNTAX = Syntax()
FLAG_SYNTAX = Syntax(flags=True)
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
    """The prompt template in a file (relative to the mapping file); its sha256 likewise."""
    prompt_description: str | None = None
    """What the prompt asks, when the template is not available."""
    description: str = ""
    """What this judge version is; the ``imported`` candidate's description."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Generation parameters the judge ran with (temperature, seed ...)."""

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
    format: Literal["csv", "tsv", "jsonl", "parquet"] | None = None
    """Table format; default: from the file extension."""
    case_id: str | None = None
    """Column holding the gold case id; without it rows match on ``input`` and ``response``."""
    input: str | None = None
    """Column holding the exact input text (checked against the gold case's)."""
    response: str | None = None
    """Column holding the exact response judged (its sha256 must be the gold's)."""
    label: str | None = None
    """Prediction column holding labels (mapped through ``labels``)."""
    score: str | None = None
    """Prediction column holding scores (kept; with ``threshold``, they make the label)."""
    threshold: ScoreThreshold | None = None
    """How a score becomes a label; required when ``score`` is the only prediction column."""
    labels: dict[str, str] = Field(default_factory=dict)
    """Source value -> rubric label, listing every value (without it: rubric labels)."""
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
    raw = load_yaml(
        path,
        prefix="mapping",
        what="mapping",
        missing_fix="point --mapping at a YAML file; see docs/formats.md#results-mapping",
        encoding_code="mapping_yaml",
        shape=("the mapping must be a YAML mapping (key: value)", FIX_MAPPING),
        if_empty={},
    ).data
    return raw, Path(path).parent


def merge_options(raw: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """``raw`` with command-line ``options`` (None: not given) laid over it, dicts key by key."""
    merged = dict(raw)
    for key, value in options.items():
        if isinstance(value, dict):
            value = {k: v for k, v in value.items() if v is not None}
        if value is None or value == {}:
            continue
        old = merged.get(key)
        merged[key] = (
            {**old, **value} if isinstance(value, dict) and isinstance(old, dict) else value
        )
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
    results`` flags (None: not given), keyed by mapping field; ``label_map`` items are
    ``VALUE=LABEL`` (every malformed one refused at once)."""
    fix = "write --label-map correct=pass"
    bad = [f"{i!r} is not VALUE=LABEL" for i in label_map if "=" not in i]
    if bad:
        raise WorkbenchError(
            "invalid --label-map", [problem("--label-map", "mapping_invalid", m, fix) for m in bad]
        )
    flags["prompt_file"] = str(Path(prompt_file).resolve()) if prompt_file else None
    return {
        **{k: flags.get(k) for k in KEY_FIELDS},
        "threshold": {"value": threshold, "pass_if": pass_if},
        "labels": {k.strip(): v.strip() for k, _, v in (i.partition("=") for i in label_map)},
        **{k: flags.get(k) for k in USAGE_FIELDS},
        "judge": {k: flags.get(k) for k in JUDGE_OPTIONS},
    }


_ERROR_CODES = {"extra_forbidden": "mapping_unknown_key", "missing": "mapping_missing_key"}


def _error_message(e: Any, field: str, s: Syntax) -> str:
    name = s.name(field)
    return {"extra_forbidden": f"unknown key {field!r}", "missing": f"{name} is required"}.get(
        e["type"], f"{name}: {e['msg']}"
    )


def _error_fix(e: Any, s: Syntax) -> str:
    field = error_field(e, "mapping")
    if e["type"] == "extra_forbidden":
        return "remove it or correct its spelling; the keys are listed in " + DOC
    if e["type"] != "missing":
        return s.pick(
            FIX_MAPPING, f"correct {s.name(field)}; see `workbench import results --help`"
        )
    if s.flags and field == "judge":
        return (
            "give --name NAME, --version VERSION, --model MODEL, and --prompt-file FILE (the"
            " template) or --prompt-description TEXT (what it asks)"
        )
    if s.flags:
        return f"give {s.name(field)}"
    if field.startswith("judge"):
        return "declare it (the judge's name, version and model, and its prompt)"
    return "declare it"


Add = Callable[..., None]
"""``add(field, code, message, fix=None)``: a problem at a mapping field."""


def check_mapping(
    raw: dict[str, Any],
    *,
    location: str,
    base_dir: Path,
    columns: tuple[str, ...],
    rubric: Any,
    syntax: Syntax = MAPPING_SYNTAX,
) -> tuple[ResultsMapping, str | None]:
    """Validate ``raw`` against the table's ``columns`` and the rubric, raising with every problem
    (the checks read raw values, so all are listed); returns the mapping and the prompt's sha256."""
    problems = Problems()
    s = syntax

    def add(field: str, code: str, message: str, fix: str | None = None) -> None:
        problems.add(s.where(location, field), code, message, fix or s.fix)

    mapping: ResultsMapping | None = None
    try:
        mapping = ResultsMapping.model_validate(raw)
    except ValidationError as exc:
        problems += validation_problems(
            exc,
            at=lambda *path: s.where(location, ".".join(map(str, path)) or "mapping"),
            root="mapping",
            code=lambda e: _ERROR_CODES.get(e["type"], "mapping_invalid"),
            message=lambda e, field: _error_message(e, field, s),
            fix=lambda e: _error_fix(e, s),
        )
    _check_columns(raw, columns, add, s)
    _check_prediction(raw, add, s)
    labels = raw.get("labels")
    if isinstance(labels, dict) and labels:
        _check_labels(raw, labels, list(rubric.labels), add, s)
    threshold = raw.get("threshold")
    if isinstance(threshold, dict):
        _check_threshold(
            threshold, list(rubric.labels), rubric.pass_label, rubric.fail_label, add, s
        )
    judge = raw.get("judge")
    prompt_sha = _check_judge(judge, base_dir, add, s) if isinstance(judge, dict) else None
    what = s.pick("the results mapping", "the options")
    problems.raise_if_any(f"{location}: {what} {s.pick('has', 'have')} {len(problems)} problem(s)")
    assert mapping is not None
    return mapping, prompt_sha


def _text(source: dict[str, Any], key: str) -> str | None:
    value = source.get(key)
    return value if isinstance(value, str) and value else None


def _check_columns(raw: dict[str, Any], columns: tuple[str, ...], add: Add, s: Syntax) -> None:
    available = ", ".join(columns[:30]) + (" ..." if len(columns) > 30 else "")
    for field in COLUMN_FIELDS:
        column = _text(raw, field)
        if column is not None and column not in columns:
            add(
                field,
                "mapping_unknown_column",
                f"{s.name(field)}: the table has no column {column!r} (columns: {available})",
                "name a column of the table (names are case-sensitive)",
            )


def _check_prediction(raw: dict[str, Any], add: Add, s: Syntax) -> None:
    if _text(raw, "case_id") is None and not (_text(raw, "input") and _text(raw, "response")):
        give = s.pick(
            "give case_id (a column holding the gold case id), or both input and response"
            " (columns holding the exact texts, e.g. Ragas user_input and response)",
            "give --case-id COLUMN (a column holding the gold case id), or both --input COLUMN"
            " and --response COLUMN (columns holding the exact texts, e.g. Ragas user_input and"
            " response)",
        )
        add("case_id", "mapping_no_key", f"no case key: {give}", s.pick(FIX_MAPPING, give))
    label, score, threshold = _text(raw, "label"), _text(raw, "score"), raw.get("threshold")
    if label is None and score is None:
        give = s.pick(
            "give label (a column of labels) or score (a column of scores, with a threshold)",
            "give --label COLUMN (a column of labels) or --score COLUMN with --threshold X (a"
            " column of scores and the cut-off that makes labels)",
        )
        add(
            "label",
            "mapping_no_prediction",
            f"no prediction column: {give}",
            s.pick(FIX_MAPPING, give),
        )
    if score is not None and label is None and threshold is None:
        add(
            "threshold",
            "mapping_threshold_missing",
            f"score column {score!r} needs a threshold to make labels",
            s.pick(
                "add threshold: {value: X, pass_if: at_least | at_most}",
                "add --threshold X (and --pass-if at_least or at_most)",
            ),
        )
    if threshold is not None and score is None:
        add(
            "threshold",
            "mapping_threshold_unused",
            "a threshold without a score column",
            s.pick(
                "name the score column (score: COLUMN), or remove the threshold",
                "name the score column (--score COLUMN), or drop --threshold",
            ),
        )
    if threshold is not None and score is not None and label is not None:
        add(
            "threshold",
            "mapping_prediction_ambiguous",
            "both a label column and a score threshold: which one makes the label?",
            s.pick("remove label", "drop --label")
            + " (the threshold makes labels) or "
            + s.pick("threshold", "--threshold")
            + " (labels come from the label column; the score is kept)",
        )


def _check_labels(
    raw: dict[str, Any], labels: dict[Any, Any], rubric_labels: list[str], add: Add, s: Syntax
) -> None:
    if _text(raw, "label") is None:
        add(
            "labels",
            "mapping_labels_unused",
            "a label mapping without a label column",
            s.pick(
                "name the label column (label: COLUMN), or remove labels",
                "name the label column (--label COLUMN), or drop --label-map",
            ),
        )
    seen: dict[str, Any] = {}
    for key, target in labels.items():
        norm = as_text(key)
        if norm in seen:
            add(
                "labels",
                "mapping_duplicate_value",
                f"source values {seen[norm]!r} and {key!r} are the same value ({norm!r})",
                s.pick("list each source value once", "give each source value one --label-map"),
            )
        seen[norm] = key
        target = number_as_text(target)
        if isinstance(target, str) and target not in rubric_labels:
            add(
                f"labels.{key}",
                "mapping_unknown_label",
                f"{key!r} maps to {target!r}, which is not a rubric label"
                f" ({', '.join(rubric_labels)})",
                s.pick(
                    "map every source value to one of the rubric's labels",
                    f"write --label-map {key}=LABEL with LABEL one of the rubric's labels"
                    f" ({', '.join(rubric_labels)})",
                ),
            )
    # a source value that is a rubric label keeps its meaning; mapping it onto itself is not needed
    targets = {as_text(k): number_as_text(v) for k, v in labels.items()}
    relabelled = {k: v for k, v in targets.items() if k in rubric_labels and v != k}
    for key, target in relabelled.items():
        add(
            f"labels.{key}",
            "mapping_relabels",
            f"{key!r} is a rubric label, mapped to {target!r}: the predictions would count as"
            " what they did not say",
            s.pick(f"remove {key!r} from labels", f"drop --label-map {key}={target}")
            + " (a rubric label is read as itself); predictions whose labels mean something else"
            " are a different judge, not a mapping",
        )
    if not relabelled and all(k in rubric_labels for k in targets):
        add(
            "labels",
            "mapping_labels_unneeded",
            "every source value is already a rubric label mapped to itself: the mapping is not"
            " needed",
            s.pick("remove labels", "drop every --label-map")
            + ": predictions in the rubric's labels are read as they are",
        )


def _check_threshold(
    threshold: dict[str, Any],
    rubric_labels: list[str],
    pass_: str | None,
    fail: str | None,
    add: Add,
    s: Syntax,
) -> None:
    chosen = {
        "pass_label": threshold.get("pass_label", pass_),
        "fail_label": threshold.get("fail_label", fail),
    }
    for side, label in chosen.items():
        if label is None:
            add(
                f"threshold.{side}",
                "mapping_threshold_label",
                f"the rubric declares no {side}, so the threshold needs one",
                s.pick("add ", "no option sets it: pass --mapping FILE with ")
                + f"threshold.{side}: one of {', '.join(rubric_labels)}"
                + s.pick("", " (docs/formats.md#results-mapping)"),
            )
        elif isinstance(label, str) and label not in rubric_labels:
            add(
                f"threshold.{side}",
                "mapping_unknown_label",
                f"threshold {side} {label!r} is not a rubric label ({', '.join(rubric_labels)})",
                "use one of the rubric's labels",
            )
    if chosen["pass_label"] is not None and chosen["pass_label"] == chosen["fail_label"]:
        message = "the threshold's pass and fail labels are the same"
        add("threshold", "mapping_threshold_label", message, "give two different labels")
    for side, other, meaning in (("pass_label", fail, "fail"), ("fail_label", pass_, "pass")):
        label = threshold.get(side)
        if label is not None and label == other:
            add(
                f"threshold.{side}",
                "mapping_threshold_inverted",
                f"threshold {side} {label!r} is the rubric's {meaning} label: the threshold would"
                " invert the verdicts",
                "state the direction with threshold.pass_if (at_least or at_most) and leave"
                " pass_label and fail_label to the rubric",
            )


def _check_judge(judge: dict[str, Any], base_dir: Path, add: Add, s: Syntax) -> str | None:
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
            s.pick(
                "give judge.prompt (the template), judge.prompt_file (a file holding it) or"
                " judge.prompt_description (what it asks, when the template is not available)",
                "give --prompt-file FILE (a file holding the template) or --prompt-description"
                " TEXT (what it asks, when the template is not available)",
            ),
        )
    prompt_sha = sha256_text(prompt) if prompt else None
    if not prompt and prompt_file:
        prompt_sha = _prompt_file_sha(base_dir / prompt_file, add, s)
    for where, what in find_secrets({"judge": judge}):
        add(
            where,
            "mapping_secret",
            f"looks like a credential ({what})",
            "never record keys; remove it (keys belong in environment variables)",
        )
    return prompt_sha


def _prompt_file_sha(path: Path, add: Add, s: Syntax) -> str | None:
    try:
        return sha256_text(read_bounded(path).decode("utf-8"))
    except (WorkbenchError, UnicodeDecodeError) as exc:
        first = exc.problems[0] if isinstance(exc, WorkbenchError) and exc.problems else None
        why = first.message if first is not None else type(exc).__name__
        missing = first is not None and first.code == "file_missing"
        reason = "it does not exist" if missing else f"it cannot be read ({why})"
        add(
            "judge.prompt_file",
            "mapping_prompt_file",
            f"prompt file {str(path)!r}: {reason}",
            s.pick(
                "point prompt_file at the template (relative to the mapping file), or use"
                " prompt_description",
                "point --prompt-file at the template, or use --prompt-description",
            ),
        )
        return None
