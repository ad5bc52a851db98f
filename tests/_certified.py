"""Certifications shared by the test modules whose claim is about a certified report, not about
the act of certifying.

A certification runs a notebook kernel (10–40 s under load). Several modules certified the same
inputs each: rubric-judge@2 under support-release@1 on a copy of the demo gold (four modules), and
the demo's two endings (rubric-judge@2 then @3 under support-release@3, two modules).
:func:`shared_certification` certifies each distinct sequence of inputs once per test run: under
pytest-xdist the first worker to ask certifies under an exclusive file lock in the run's common
temporary directory, and the other workers read its result. The gold copy, the project it was
certified in (its held-out ledger), the reports root and the reports are then shared: a test
may read and verify them but never write there. A test that certifies again or edits a report
copies what it changes first (a copied reports root cannot continue the original's ledger
chain: the ledger records the absolute reports root, so such a test certifies its own gold).

The same goes for rubric-judge@2 under :data:`LENIENT` (certified), which ``test_estimate.py``
estimates with and ``test_heldout_exposure.py`` attacks (:func:`lenient_certification`).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from _kernel_zygote import ENV_FRESH
from conftest import PROJECT_ROOT_ENV, make_project
from filelock import FileLock

from workbench.reports import certify
from workbench.reports._certify import CertificationResult

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo"
CANDIDATES = ROOT / "data" / "candidates"
POLICIES = ROOT / "data" / "policies"


@dataclass(frozen=True)
class SharedCertification:
    """Certifications run in order on one copy of the demo gold into one reports root."""

    gold: Path
    """The copy of the demo gold."""
    project: Path
    """The project the steps certified in (its held-out ledger): a test that verifies the
    reports or reads the ledger runs in it (:meth:`pinned`), and never writes there."""

    @contextlib.contextmanager
    def pinned(self) -> Iterator[SharedCertification]:
        """Pin the project root to :attr:`project` meanwhile (a module fixture yields in it)."""
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv(PROJECT_ROOT_ENV, str(self.project))
            yield self

    reports: Path
    """The reports root every step certified into."""
    results: tuple[CertificationResult, ...]
    """One result per step, in order."""


def _run_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This run's temporary directory common to every xdist worker (the worker's own otherwise)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # pytest-N/popen-gwK: pytest-N is this run's and every worker's
    root = base / "shared-certifications"
    root.mkdir(exist_ok=True)
    return root


def _certify_all(
    steps: Sequence[tuple[Path, Path]], into: Path, *, fresh_kernels: bool = False
) -> SharedCertification:
    gold = into / "gold"
    shutil.copytree(DEMO, gold)
    reports = into / "reports"
    project = make_project(into)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(ROOT)
        mp.setenv(PROJECT_ROOT_ENV, str(project))
        mp.setenv("WORKBENCH_CACHE_DIR", str(into / "cache"))
        if fresh_kernels:  # a new interpreter per kernel, as outside the suite (tests/_kernels.py)
            mp.setenv(ENV_FRESH, "1")
        results = tuple(
            certify(candidate, policy, gold, reports_root=reports) for candidate, policy in steps
        )
    return SharedCertification(gold=gold, project=project, reports=reports, results=results)


def shared_certification(
    tmp_path_factory: pytest.TempPathFactory,
    key: str,
    steps: Sequence[tuple[Path, Path]],
    *,
    fresh_kernels: bool = False,
) -> SharedCertification:
    """``steps`` (candidate spec, policy) certified in order on one fresh copy of the demo gold,
    once per test run for each ``key`` (callers pass the same steps for the same key).
    ``fresh_kernels``: each notebook kernel a new interpreter, not forked from the suite's
    zygote (tests/_kernels.py)."""
    root = _run_root(tmp_path_factory)
    done = root / f"{key}.pickle"
    with FileLock(str(root / f"{key}.lock")):  # the project's lock (a dependency), as in runs
        if not done.exists():
            into = Path(tempfile.mkdtemp(prefix=f"{key}-", dir=root))  # a failed try stays apart
            shared = _certify_all(steps, into, fresh_kernels=fresh_kernels)
            partial = done.with_suffix(".partial")
            partial.write_bytes(pickle.dumps(shared))
            partial.replace(done)
        loaded: SharedCertification = pickle.loads(done.read_bytes())
    return loaded


def demo_release_certification(tmp_path_factory: pytest.TempPathFactory) -> SharedCertification:
    """rubric-judge@2 under support-release@1 (quality failed), once per run."""
    return shared_certification(
        tmp_path_factory,
        "rubric-judge-2-support-release-1",
        [(CANDIDATES / "rubric-judge@2.yaml", POLICIES / "support-release@1.yaml")],
    )


def demo_endings(tmp_path_factory: pytest.TempPathFactory) -> SharedCertification:
    """make demo's two certifications in its order: rubric-judge@2 then @3 under
    support-release@3 (controls failed, then review required). Their kernels start as
    ``make demo``'s do, each a new interpreter: the suite's one check of that start-up path for
    certification (every other kernel of the suite is forked, tests/_kernels.py)."""
    policy = POLICIES / "support-release@3.yaml"
    return shared_certification(
        tmp_path_factory,
        "demo-endings",
        [
            (CANDIDATES / "rubric-judge@2.yaml", policy),
            (CANDIDATES / "rubric-judge@3.yaml", policy),
        ],
        fresh_kernels=True,
    )


SLICE_RISKS = (
    ("refund_policy", "critical"),
    ("account_security", "critical"),
    ("billing_payments", "high"),
    ("subscription_cancellation", "high"),
    ("privacy_data_requests", "high"),
    ("shipping_delivery", "medium"),
    ("escalation_handoff", "low"),
)
LENIENT: dict[str, object] = {
    "schema_version": 1,
    "name": "lenient",
    "version": "1",
    "owner": "estimate and held-out exposure tests",
    "rationale": (
        "Lenient enough for the small demo held-out partition, so that a real certified report"
        " exists to estimate with."
    ),
    "rubric_version": "support-policy-2026.09",
    "partition": "held_out",
    "max_evaluator_errors": 0,
    "min_n_per_slice": 1,
    "slices": {
        name: {
            "risk": risk,
            "max_abstention_rate": 0.5,
            **(
                {"max_false_pass_rate": 1.0, "false_pass_rate_basis": "upper_95"}
                if risk == "critical"
                else {}
            ),
        }
        for name, risk in SLICE_RISKS
    },
}
"""A policy the demo's rubric-judge@2 meets on the demo's small held-out partition."""


def lenient_certification(tmp_path_factory: pytest.TempPathFactory) -> SharedCertification:
    """rubric-judge@2 under :data:`LENIENT` (certified), once per run. The policy file is
    written in the run's common directory, the same text by whichever worker writes it (an
    atomic replace, so no worker reads a partial file)."""
    policy = _run_root(tmp_path_factory) / "lenient@1.yaml"
    text = yaml.safe_dump(LENIENT)
    if not policy.is_file() or policy.read_text(encoding="utf-8") != text:
        partial = policy.with_suffix(f".{os.getpid()}.partial")
        partial.write_text(text, encoding="utf-8")
        partial.replace(policy)
    return shared_certification(
        tmp_path_factory, "rubric-judge-2-lenient-1", [(CANDIDATES / "rubric-judge@2.yaml", policy)]
    )
