"""Certification and locked reports: certify, render, lock, sign, verify, list; and the tables,
charts and blocker summaries the notebooks share with the report."""

from .._lock import Lock, read_lock
from .._signing import load_signer, load_trust
from ._blockers import group_blockers, why_lines
from ._certification import Certification
from ._certify import certify, resolve_budget, resume_review
from ._charts import (
    candidates_chart,
    confusion_heatmap,
    slice_error_chart,
    svg_display,
    threshold_sweep_chart,
    to_svg,
)
from ._format import DASH, DASH_NOTE, rate_text
from ._listing import format_ledger, format_report_row, ledger_problems, list_reports, read_ledgers
from ._migration import (
    format_transition_status,
    pending_for_report,
    record_transition_review,
    transition_review_status,
)
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
    rubric_contract_html,
)
from ._provenance import Provenance, package_sha256, packaged_notebook
from ._recompute import CONTROLS_DIR, RUN_DIR
from ._render import Section, external_references, render_document, render_html, table_section
from ._tables import (
    merge_interval,
    ordinal_section_html,
    ordinal_tables,
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
    "lineage_html",
    "list_reports",
    "load_signer",
    "load_trust",
    "merge_interval",
    "next_step",
    "not_used_html",
    "ordinal_section_html",
    "ordinal_tables",
    "outcome_section",
    "package_sha256",
    "packaged_notebook",
    "pending_for_report",
    "previous_certification",
    "rate_text",
    "rubric_contract_html",
    "read_ledgers",
    "read_lock",
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
