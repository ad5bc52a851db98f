"""Case-level verdict transitions between two judge versions on the same cases: fixes are never
netted against breakages (one new critical false pass needs a risk decision)."""

from __future__ import annotations

import pandas as pd

from ..align import Join, lineage_problems
from ..errors import Problem, WorkbenchError, problem
from ..gold import Partition

CHANGES: tuple[str, ...] = ("fixed", "broken", "changed", "same")

TRANSITION_COLUMNS: tuple[str, ...] = (
    "case_id",
    "slice",
    "risk",
    "human_label",
    "before_label",
    "after_label",
    "before_class",
    "after_class",
    "change",
    "critical_broken",
    "needs_review",
)

_RISK_ORDER = {"critical": 0, "high": 1, "medium": 2, "low": 3}


def change_of(
    before_class: str, before_label: str | None, after_class: str, after_label: str | None
) -> str:
    """``fixed`` (not aligned -> aligned), ``broken`` (aligned -> not aligned), ``changed``
    (wrong both times, differently: another label, class or error) or ``same``."""
    before_ok, after_ok = before_class == "aligned", after_class == "aligned"
    if before_ok and after_ok:
        return "same"
    if after_ok:
        return "fixed"
    if before_ok:
        return "broken"
    return "same" if (before_class, before_label) == (after_class, after_label) else "changed"


def _summarize(ids: list[str]) -> str:
    return ", ".join(ids[:10]) + (f", ... ({len(ids)} in all)" if len(ids) > 10 else "")


def transitions(before: Join, after: Join, *, allow_held_out: bool = False) -> pd.DataFrame:
    """Each case's verdict transition (columns :data:`TRANSITION_COLUMNS`): ``critical_broken``
    marks a ``broken`` case in a critical slice, ``needs_review`` any change in one.

    Refuses (:class:`WorkbenchError`, :func:`_comparison_problems`) joins whose lineage does not
    hold, on other datasets or cases, and held-out cases unless ``allow_held_out``.
    """
    problems = _comparison_problems(before, after, allow_held_out)
    if problems:
        raise WorkbenchError(
            f"refusing to compare judge versions: {len(problems)} problem(s)", problems
        )
    rubric = before.dataset.rubric
    after_of = {c.case_id: c for c in after.cases}
    rows = []
    for b in before.cases:
        a = after_of[b.case_id]
        risk = rubric.risk_of(b.slice)
        change = change_of(b.error_class, b.judge_label, a.error_class, a.judge_label)
        critical = risk == "critical"
        labels = (b.human_label, b.judge_label, a.judge_label, b.error_class, a.error_class)
        flags = (critical and change == "broken", critical and change != "same")
        rows.append((b.case_id, b.slice, risk, *labels, change, *flags))
    return pd.DataFrame.from_records(rows, columns=list(TRANSITION_COLUMNS))


def _comparison_problems(before: Join, after: Join, allow_held_out: bool) -> list[Problem]:
    problems: list[Problem] = [
        *lineage_problems(before, where="transitions (before)"),
        *lineage_problems(after, where="transitions (after)"),
    ]
    if before.dataset.sha256 != after.dataset.sha256:
        message = (
            f"before is on dataset {before.dataset.sha256[:12]}, after on"
            f" {after.dataset.sha256[:12]}"
        )
        fix = "run both judges on the same frozen dataset and compare those runs"
        problems.append(problem("transitions", "different_datasets", message, fix))
    b_ids = [c.case_id for c in before.cases]
    a_ids = {c.case_id for c in after.cases}
    only_before = [c for c in b_ids if c not in a_ids]
    only_after = sorted(a_ids - set(b_ids))
    parts = (
        [f"{len(only_before)} only in before ({_summarize(only_before)})"] if only_before else []
    )
    parts += [f"{len(only_after)} only in after ({_summarize(only_after)})"] if only_after else []
    if parts:
        message = "the joins cover different cases: " + "; ".join(parts)
        fix = "join both results on the same partition of the same dataset"
        problems.append(problem("transitions", "different_cases", message, fix))
    held = [c.case_id for c in before.cases if c.partition == Partition.held_out.value]
    if held and not allow_held_out:
        message = (
            f"{len(held)} held_out case(s) ({_summarize(held)}): case-level held-out detail is"
            " restricted to certification"
        )
        fix = "compare development or calibration joins; certification passes allow_held_out=True"
        problems.append(problem("transitions", "held_out_refused", message, fix))
    return problems


def transition_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Counts per slice x change (columns: slice, risk, fixed, broken, changed, same, n,
    critical_broken), critical slices first, then an ``(all)`` row."""
    columns = ["slice", "risk", *CHANGES, "n", "critical_broken"]
    if df.empty:
        return pd.DataFrame(columns=columns)
    table = pd.crosstab(
        df["slice"], pd.Categorical(df["change"], categories=list(CHANGES)), dropna=False
    )
    table = table.reindex(columns=list(CHANGES), fill_value=0)
    table.columns = list(CHANGES)
    table["n"] = table.sum(axis=1)
    table["critical_broken"] = (
        df.groupby("slice")["critical_broken"].sum().reindex(table.index).astype(int)
    )
    risk = df.groupby("slice")["risk"].first()
    table.insert(0, "risk", risk.reindex(table.index))
    table = table.reset_index(names="slice")
    table = table.sort_values(
        ["risk", "slice"], key=lambda s: s.map(_RISK_ORDER).fillna(9) if s.name == "risk" else s
    ).reset_index(drop=True)
    total = {
        "slice": "(all)",
        "risk": None,
        **{c: int(table[c].sum()) for c in [*CHANGES, "n", "critical_broken"]},
    }
    table = pd.concat([table, pd.DataFrame([total])], ignore_index=True)
    for col in [*CHANGES, "n", "critical_broken"]:
        table[col] = table[col].astype(int)
    return table[columns]
