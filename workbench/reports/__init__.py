"""Certification and locked reports: certify, render, lock, sign, verify, list."""

from ._certify import Certification, CertificationResult, certify, default_notebook, resolve_budget
from ._charts import slice_rates_chart, svg_display, to_svg
from ._listing import STARTED_FILE, list_reports
from ._lock import LOCK_FILE, Lock, read_lock
from ._present import (
    agreement_summary,
    cost_latency,
    disagreement_counts,
    esc,
    key_value_html,
    outcome_html,
)
from ._render import external_references, render_html
from ._signing import LockSignature, load_signer, load_trust
from ._verify import ReportVerification, verify_one, verify_path, verify_report

__all__ = [
    "LOCK_FILE",
    "STARTED_FILE",
    "Certification",
    "CertificationResult",
    "Lock",
    "LockSignature",
    "ReportVerification",
    "agreement_summary",
    "certify",
    "cost_latency",
    "default_notebook",
    "disagreement_counts",
    "esc",
    "external_references",
    "key_value_html",
    "list_reports",
    "load_signer",
    "load_trust",
    "outcome_html",
    "read_lock",
    "render_html",
    "resolve_budget",
    "slice_rates_chart",
    "svg_display",
    "to_svg",
    "verify_one",
    "verify_path",
    "verify_report",
]
