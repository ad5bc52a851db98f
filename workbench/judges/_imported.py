"""``imported``: verdicts produced elsewhere, replayed from a results file that follows the
contract.

The file must come from one judge; its hash is part of the fingerprint. A case without a
result stays *missing*. Before a run, :meth:`ImportedJudge.check_gold` refuses results without
lineage or produced against another gold.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._io import sha256_file
from ..errors import WorkbenchError, refusal
from ..results import JudgeResult, read_results
from ._input import JudgeInput
from ._registry import CaseRef, NotAvailable, Verdict, make_identity
from ._spec import CandidateSpec

if TYPE_CHECKING:
    from ..gold import GoldDataset


class ImportedJudge:
    """Replays the last recorded attempt per case and repeat from a results file."""

    def __init__(self, spec: CandidateSpec, spec_path: Path) -> None:
        self.spec = spec
        loc = str(spec_path)
        if not spec.results:
            message = "an imported candidate needs results: <path to results.jsonl>"
            fix = "point results at a judge-result file, relative to the spec"
            raise refusal("invalid candidate", loc, "results_missing", message, fix)
        self.results_path = (spec_path.parent / spec.results).resolve()
        lines = read_results(self.results_path)  # raises with every contract violation
        fingerprints = {line.result.judge_fingerprint for line in lines}
        if len(fingerprints) > 1:
            message = f"the file holds results of {len(fingerprints)} judges"
            fix = "import one judge per candidate; split the file by judge_fingerprint"
            raise refusal("invalid candidate", str(self.results_path), "mixed_judges", message, fix)
        self._latest: dict[tuple[str, int], tuple[int, JudgeResult]] = {}
        self.lineages: Counter[tuple[str | None, str | None]] = Counter()  # (dataset, rubric)
        for line in lines:
            r = line.result
            self.lineages[(r.dataset_sha256, r.rubric_version)] += 1
            key = (r.case_id, r.repeat)
            if key not in self._latest or r.attempt > self._latest[key][1].attempt:
                self._latest[key] = (line.line, r)
        source = lines[0].result.judge.model_dump(mode="json") if lines else None
        self.identity = make_identity(
            spec,
            None,
            results_sha256=sha256_file(self.results_path),
            source_judge=source,
            source_fingerprint=next(iter(fingerprints), None),
        )

    def check_gold(self, dataset: GoldDataset) -> None:
        """Refuse to replay results that were not produced against ``dataset``."""
        from ..align import check_lineage

        _, problems = check_lineage(
            dataset, lineages=self.lineages, case_ids={case_id for case_id, _ in self._latest}
        )
        if not problems:
            return
        fixes = {
            "lineage_missing": (
                "declare the gold the results were produced against: `workbench import results"
                f" {self.results_path} --gold GOLD --out DIR`, then point the candidate's results"
                " at DIR/results.jsonl"
            ),
            "gold_changed": (
                "import results produced against this gold, or run the candidate on the gold the"
                " results were produced against"
            ),
        }
        where = str(self.results_path)
        raise WorkbenchError(
            f"{where}: the imported results were not produced against this gold",
            [
                p.model_copy(
                    update={
                        "location": where if p.case_id is None else p.location,
                        "fix": fixes.get(p.code, p.fix),
                    }
                )
                for p in problems
            ],
        )

    def render(self, judge_input: JudgeInput, ref: CaseRef) -> dict[str, Any]:
        found = self._latest.get((ref.case_id, ref.repeat))
        if found and found[1].rendered_request is not None:
            rendered: dict[str, Any] = found[1].rendered_request
            return rendered
        return {
            "imported_from": self.spec.results,
            "case_id": ref.case_id,
            "repeat": ref.repeat,
            "line": found[0] if found else None,
        }

    def estimate_cost(self, judge_input: JudgeInput) -> float:
        return 0.0

    async def evaluate(self, judge_input: JudgeInput, ref: CaseRef) -> Verdict:
        found = self._latest.get((ref.case_id, ref.repeat))
        if found is None:
            raise NotAvailable(
                f"{self.spec.results} has no result for {ref.case_id} repeat {ref.repeat}"
            )
        line, r = found
        request = self.render(judge_input, ref)
        if r.response_hash != ref.response_hash:
            return Verdict.failed(
                "missing_verdict",
                f"the imported result (line {line}) judged a different response than the gold"
                " record",
                rendered_request=request,
            )
        recorded: dict[str, Any] = {
            "tokens_in": r.tokens_in,
            "tokens_out": r.tokens_out,
            "rendered_request": request,
            "latency_s": r.latency_s,
            "cost_usd": r.cost_usd,
        }
        if r.error is not None:
            return Verdict.failed(r.error.kind, r.error.message, **recorded)
        if r.value is None and r.score is not None:  # a score-only result (e.g. noise sensitivity)
            return Verdict(value=None, reason=r.reason, score=r.score, **recorded)
        if r.value not in self.spec.labels:
            return Verdict.failed(
                "invalid_label",
                f"imported value {r.value!r} outside {self.spec.labels}",
                rendered_request=request,
            )
        return Verdict(value=r.value, reason=r.reason, score=r.score, order=r.order, **recorded)
