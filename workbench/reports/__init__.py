"""Certification and locked reports: certify, render, lock, verify, list."""

from ._certify import Certification, CertificationResult, certify, default_notebook, list_reports
from ._charts import slice_rates_chart, svg_display, to_svg
from ._lock import LOCK_FILE, Lock, read_lock, verify_report
from ._present import (
    agreement_summary,
    cost_latency,
    disagreement_counts,
    esc,
    key_value_html,
    outcome_html,
)
from ._render import external_references, render_html

__all__ = [
    "LOCK_FILE",
    "Certification",
    "CertificationResult",
    "Lock",
    "agreement_summary",
    "certify",
    "cost_latency",
    "default_notebook",
    "disagreement_counts",
    "esc",
    "external_references",
    "key_value_html",
    "list_reports",
    "outcome_html",
    "read_lock",
    "render_html",
    "slice_rates_chart",
    "svg_display",
    "to_svg",
    "verify_report",
]
