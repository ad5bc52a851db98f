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
from ._certify import (
    CONTROLS_DIR,
    RUN_DIR,
    certify,
    resolve_budget,
    resume_review,
)
from ._charts import (
    candidates_chart,
    confusion_heatmap,
    slice_error_chart,
    svg_display,
    threshold_sweep_chart,
    to_svg,
)
from ._format import DASH, DASH_NOTE, pct, rate_text
from ._listing import (
    format_ledger,
    format_report_row,
    ledger_problems,
    ledgers_of,
    list_reports,
    read_ledgers,
    reconcile_ledgers,
)
from ._migration import (
    format_transition_status,
    pending_for_report,
    record_transition_review,
    transition_review_status,
)
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
from ._provenance import Provenance, package_sha256, packaged_notebook
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
    "CONTROLS_DIR",
    "DASH",
    "DASH_NOTE",
    "RUN_DIR",
    "Certification",
    "Provenance",
    "Lock",
    "LockSignature",
    "Section",
    "agreement_summary",
    "blockers_display",
    "blockers_html",
    "candidates_chart",
    "certify",
    "check_certification",
    "confusion_heatmap",
    "controls_html",
    "cost_by_slice",
    "cost_latency",
    "disagreement_counts",
    "external_references",
    "first_screen",
    "format_ledger",
    "format_report_row",
    "format_transition_status",
    "group_blockers",
    "key_value_html",
    "last_certified",
    "ledger_problems",
    "ledgers_of",
    "lineage_html",
    "list_reports",
    "load_signer",
    "load_trust",
    "merge_interval",
    "more_needed",
    "next_step",
    "not_used_html",
    "ordinal_section_html",
    "ordinal_tables",
    "outcome_section",
    "package_sha256",
    "packaged_notebook",
    "pct",
    "pending_for_report",
    "previous_certification",
    "rate_text",
    "read_ledgers",
    "read_lock",
    "reconcile_ledgers",
    "record_transition_review",
    "render_document",
    "render_html",
    "resolve_budget",
    "resume_review",
    "slice_error_chart",
    "slice_table",
    "styled",
    "svg_display",
    "table_section",
    "threshold_sweep_chart",
    "to_svg",
    "transition_review_status",
    "transition_summary_table",
    "transitions_table",
    "verify_one",
    "verify_path",
    "verify_report",
    "why_lines",
]
