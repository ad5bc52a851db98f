"""Certification and locked reports: certify, render, lock, sign, verify, list.

Every locked report (a certification, a migration, a locked ranking or noise run) has one lock
format and one verification (:mod:`workbench._lock`: :class:`Lock`, :func:`verify_one`);
every report page is one renderer's (:func:`render_document`: sections of one template).

Presentation shared with the notebooks: styled tables (:func:`slice_table`, :func:`styled`,
:func:`transitions_table`), charts (:func:`slice_error_chart`, :func:`confusion_heatmap`,
:func:`threshold_sweep_chart`) and blockers grouped per slice (:func:`blockers_display`).
"""

from .._lock import Lock, read_lock
from .._signing import LockSignature, load_signer, load_trust
from ._blockers import group_blockers, more_needed, why_lines
from ._certification import Certification
from ._certify import CONTROLS_DIR, RUN_DIR, certify, resolve_budget, resume_review
from ._charts import (
    candidates_chart,
    confusion_heatmap,
    slice_error_chart,
    svg_display,
    threshold_sweep_chart,
    to_svg,
)
from ._format import DASH, DASH_NOTE, rate_text
from ._listing import ledgers_of, list_reports, reconcile_ledgers
from ._migration import pending_for_report, record_transition_review
from ._ordinal import ordinal_section_html, ordinal_tables
from ._present import (
    agreement_summary,
    blockers_display,
    blockers_html,
    controls_html,
    cost_by_slice,
    cost_latency,
    disagreement_counts,
    first_screen,
    key_value_html,
    last_certified,
    lineage_html,
    next_step,
    not_used_html,
    outcome_section,
    previous_certification,
)
from ._render import Section, external_references, render_document, render_html, table_section
from ._tables import (
    merge_interval,
    slice_table,
    styled,
    transition_summary_table,
    transitions_table,
)
from ._verify import check_certification, verify_one, verify_path, verify_report

__all__ = [
    "table_section",
    "outcome_section",
    "CONTROLS_DIR",
    "RUN_DIR",
    "check_certification",
    "ledgers_of",
    "pending_for_report",
    "reconcile_ledgers",
    "record_transition_review",
    "resume_review",
    "DASH",
    "DASH_NOTE",
    "Certification",
    "Lock",
    "LockSignature",
    "Section",
    "agreement_summary",
    "ordinal_section_html",
    "ordinal_tables",
    "blockers_display",
    "blockers_html",
    "candidates_chart",
    "certify",
    "confusion_heatmap",
    "controls_html",
    "cost_by_slice",
    "cost_latency",
    "disagreement_counts",
    "external_references",
    "first_screen",
    "group_blockers",
    "key_value_html",
    "last_certified",
    "lineage_html",
    "list_reports",
    "load_signer",
    "load_trust",
    "merge_interval",
    "more_needed",
    "next_step",
    "not_used_html",
    "previous_certification",
    "rate_text",
    "read_lock",
    "render_document",
    "render_html",
    "resolve_budget",
    "slice_error_chart",
    "slice_table",
    "styled",
    "svg_display",
    "threshold_sweep_chart",
    "to_svg",
    "transition_summary_table",
    "transitions_table",
    "verify_one",
    "verify_path",
    "verify_report",
    "why_lines",
]
