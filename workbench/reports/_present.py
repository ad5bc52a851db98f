"""What a certification report shows, as escaped HTML fragments and DataFrames.

Every string that comes from data (case text, reasons, names, policy rationale) passes
through :func:`html.escape` before it reaches HTML; DataFrames are rendered by pandas, which
escapes cell text. Held-out results appear only as counts: case-level detail goes to the
restricted file beside the report.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from ..align import AlignmentReport, Join

OUTCOME_STYLE = {
    "certified": ("#1b5e20", "#e8f5e9", "CERTIFIED"),
    "quality_failed": ("#b71c1c", "#ffebee", "QUALITY FAILED"),
    "evaluation_incomplete": ("#e65100", "#fff3e0", "EVALUATION INCOMPLETE"),
    "review_required": ("#4a148c", "#f3e5f5", "REVIEW REQUIRED"),
}


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def outcome_html(outcome: str, blockers: Sequence[Any], *, candidate: str, waived: Sequence[Any] = (), rerun_reason: str | None = None) -> str:
    """The banner a reviewer reads first: outcome, then every blocker with its evidence."""
    color, background, title = OUTCOME_STYLE.get(outcome, ("#000", "#eee", outcome.upper()))
    parts = [
        f'<div class="wb-outcome" data-outcome="{esc(outcome)}" style="border:3px solid {color};background:{background};padding:12px 16px;margin:8px 0;">',
        f'<div style="font-size:24px;font-weight:bold;color:{color}">{esc(title)}</div>',
        f"<div>candidate <code>{esc(candidate)}</code></div>",
    ]
    if rerun_reason:
        parts.append(f"<div><b>Re-certification.</b> Reason recorded in the held-out ledger: {esc(rerun_reason)}</div>")
    if blockers:
        parts.append(f"<p><b>{len(blockers)} blocker(s)</b>, in order:</p><ol class='wb-blockers'>")
        for b in blockers:
            parts.append(f"<li><code>{esc(_get(b, 'code'))}</code> [{esc(_get(b, 'category'))}{', slice ' + esc(_get(b, 'slice')) if _get(b, 'slice') else ''}]: {esc(_get(b, 'message'))}{_evidence(_get(b, 'evidence'))}</li>")
        parts.append("</ol>")
    else:
        parts.append("<p>No blockers.</p>")
    if waived:
        parts.append(f"<p><b>{len(waived)} blocker(s) waived by overrides</b> (still evidence, listed below).</p>")
    parts.append("</div>")
    return "".join(parts)


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _evidence(evidence: Any) -> str:
    if not evidence:
        return ""
    items = ", ".join(f"{esc(k)}={esc(_fmt(v))}" for k, v in evidence.items())
    return f" <span style='color:#555'>({items})</span>"


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def key_value_html(title: str, rows: Iterable[tuple[str, Any]]) -> str:
    """A two-column table of escaped labels and values."""
    body = "".join(f"<tr><th style='text-align:left;padding-right:12px'>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows)
    return f"<h3>{esc(title)}</h3><table class='wb-kv'>{body}</table>"


def disagreement_counts(join: Join) -> Any:
    """Held-out disagreements as counts by slice and error class (no case ids).

    Beside the classes: ``abstained`` (verdicts in the rubric's abstain labels, whatever the
    adjudicated label; they are also counted in their class, ``aligned`` or
    ``disagreement``), ``decided`` (verdicts that are not abstentions), ``cases`` and
    ``coverage`` = decided / cases, so no rate is read without the share the judge decided.
    """
    import pandas as pd

    abstain = set(join.dataset.rubric.abstain_labels)
    counts = Counter((c.slice, c.error_class) for c in join.cases)
    abstained = Counter(c.slice for c in join.cases if c.outcome == "verdict" and c.judge_label in abstain)
    decided = Counter(c.slice for c in join.cases if c.outcome == "verdict" and c.judge_label not in abstain)
    cases = Counter(c.slice for c in join.cases)
    classes = ["aligned", "false_pass", "false_fail", "disagreement", "error", "missing"]
    slices = list(dict.fromkeys(c.slice for c in join.cases))
    frame = pd.DataFrame([[counts.get((s, k), 0) for k in classes] + [abstained[s], decided[s], cases[s]] for s in slices], index=slices, columns=[*classes, "abstained", "decided", "cases"])
    frame.loc["(all)"] = frame.sum()
    frame["coverage"] = [round(d / n, 4) if n else None for d, n in zip(frame["decided"], frame["cases"], strict=True)]
    frame.index.name = "slice"
    return frame


def cost_latency(rows: Sequence[dict[str, Any]]) -> Any:
    """Calls, tokens, cost and latency percentiles over every recorded attempt."""
    import numpy as np
    import pandas as pd

    latencies = np.array([r["latency_s"] for r in rows if r.get("latency_s") is not None], dtype=float)
    return pd.DataFrame(
        [
            {
                "attempts": len(rows),
                "cases": len({(r["case_id"], r.get("repeat", 0)) for r in rows}),
                "tokens_in": sum(int(r.get("tokens_in") or 0) for r in rows),
                "tokens_out": sum(int(r.get("tokens_out") or 0) for r in rows),
                "cost_usd": round(sum(float(r.get("cost_usd") or 0.0) for r in rows), 6),
                "latency_p50_s": round(float(np.percentile(latencies, 50)), 3) if latencies.size else None,
                "latency_p95_s": round(float(np.percentile(latencies, 95)), 3) if latencies.size else None,
            }
        ]
    )


def agreement_summary(report: AlignmentReport, human: Any) -> Any:
    """Judge-human kappa next to human-human agreement on the same cases, per slice.

    ``coverage`` (decided verdicts / cases in scope) and ``abstention_rate`` (abstentions /
    verdicts) stand beside the judge's figures: agreement over few decided cases means little.
    """
    import pandas as pd

    rows = []
    for s in [*report.slices, report.overall]:
        block = human.overall if s.slice == "(all)" else human.slices.get(s.slice)
        rows.append(
            {
                "slice": s.slice,
                "n": s.n,
                "coverage": s.coverage.rate,
                "abstention_rate": s.abstention_rate.rate,
                "judge_vs_adjudicated_kappa": s.cohen_kappa.value,
                "judge_agreement": s.agreement.rate,
                "human_krippendorff_alpha": block.krippendorff_alpha.value if block else None,
                "human_disagreement_rate": block.disagreement.rate if block else None,
            }
        )
    return pd.DataFrame(rows).set_index("slice")
