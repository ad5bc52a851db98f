"""The development and calibration phases as library calls, so the notebooks stay thin: a session
is bound to one gold dataset and one partition (held-out is refused).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .._args import check_keywords, check_path, check_run_arguments
from ..align import AlignmentReport, Join, align_results, alignment_report, read_run_manifest
from ..errors import WorkbenchError, refusal
from ..gold import GoldDataset, load_dataset, partition_name
from ..heldout import refuse_held_out
from ..judges import Judge, build_judge, derive_spec, load_candidate, save_spec
from ..policy import Policy
from ..results import ResultLine, read_results
from ..runs import RunOptions, RunSummary, run_candidate
from ._policy import PolicyNotice, phase_policy

DEMO_LLM_URL_ENV = "WORKBENCH_DEMO_LLM_URL"  # the demo LLM candidates' endpoint.base_url_env


@dataclass
class Iteration:
    """One candidate run on the session's partition, joined and aligned."""

    judge: Judge
    summary: RunSummary
    lines: list[ResultLine]
    join: Join
    report: AlignmentReport

    @property
    def label(self) -> str:
        return self.judge.spec.label

    @property
    def fingerprint(self) -> str:
        return self.judge.identity.fingerprint()


SESSION_OPTIONS = ("cache_dir", "concurrency", "budget_usd")


class PhaseSession:
    """Runs and compares candidates on one non-held-out partition."""

    def __init__(
        self,
        gold: str | Path,
        *,
        partition: Literal["development", "calibration"],
        run_root: str | Path,
        cache_dir: str | Path | None = None,
        concurrency: int = 8,
        budget_usd: float | None = None,
    ) -> None:
        refuse_held_out(partition, where=f"{type(self).__name__}(partition=...)")
        check_path(gold, "gold", "../data/demo")
        check_path(run_root, "run_root", "../runs/notebooks")
        check_run_arguments(concurrency=concurrency, budget_usd=budget_usd)
        self.partition = partition_name(partition)
        self.gold = gold
        self.dataset: GoldDataset = load_dataset(gold)
        self.run_root = Path(run_root)
        self.cache_dir = cache_dir
        self.concurrency = concurrency
        self.budget_usd = budget_usd
        self._spec_paths: dict[str, Path] = {}
        self._judges: dict[str, Judge] = {}

    def release_policy(
        self, path: str | Path | None, *, required: bool = False
    ) -> tuple[Policy | None, PolicyNotice | None]:
        """:func:`~workbench.phases.phase_policy` for this gold's rubric."""
        return phase_policy(path, self.dataset.rubric, partition=self.partition, required=required)

    def load(self, spec_path: str | Path) -> Judge:
        judge = load_candidate(spec_path)
        self._spec_paths[judge.spec.label] = Path(spec_path)
        self._judges[judge.spec.label] = judge
        return judge

    def prompt_of(self, judge: Judge) -> str:
        """The prompt template of an LLM candidate, to edit in the notebook."""
        template = getattr(judge, "template", None)
        if template is None:
            raise TypeError(f"{judge.spec.label} ({judge.spec.kind}) has no prompt template")
        return str(template)

    def derive(self, parent: Judge, *, version: str, **fields: Any) -> Judge:
        """A new, unsaved candidate version that changes one declared thing (``fields`` as
        :func:`~workbench.judges.derive_spec` takes them: ``prompt``, ``description``,
        ``changes``, ``allow_multiple`` ...); a change the declaration does not cover is refused
        here and at :meth:`save`."""
        from ..migration import declaration_problems

        spec = derive_spec(parent.spec, version=version, **fields)
        base = self._spec_paths.get(parent.spec.label, Path("."))
        judge = build_judge(spec, base)
        problems = declaration_problems(parent, judge, location=f"derive({spec.label})")
        if problems:
            raise WorkbenchError(f"{spec.label}: refused", problems)
        self._spec_paths[spec.label] = base
        self._judges[parent.spec.label] = parent
        self._judges[spec.label] = judge
        return judge

    def save(self, judge: Judge, directory: str | Path) -> Path:
        """Write the candidate as ``<name>@<version>.yaml`` (never over a version). A declared
        ``parent`` (this session's, else ``<directory>/<parent>.yaml``) must be found
        (``parent_unknown``) and the changes declared (``undeclared_change``)."""
        from ..migration import declaration_problems

        spec = judge.spec
        if spec.parent is not None:
            parent = self._judges.get(spec.parent)
            where = Path(directory) / f"{spec.parent}.yaml"
            if parent is None and where.exists():
                parent = load_candidate(where)
            if parent is None:
                raise refusal(
                    f"cannot save {spec.label}",
                    str(where),
                    "parent_unknown",
                    f"{spec.label} declares parent {spec.parent}, which this session did not load"
                    f" and {where} does not hold",
                    "load the parent in this session (session.load) or save next to it, so the"
                    " declared changes can be checked",
                )
            problems = declaration_problems(parent, judge, location=f"save({spec.label})")
            if problems:
                raise WorkbenchError(
                    f"refusing to save {spec.label}: it changes more than it declares", problems
                )
        path = save_spec(spec, directory)
        self._spec_paths[spec.label] = path
        return path

    async def run(self, judge: Judge, *, progress: bool = True) -> Iteration:
        """Run (or resume, or reuse cached verdicts for) ``judge`` and align it."""
        out = self.run_root / judge.spec.label / judge.identity.fingerprint()[:12] / self.partition
        summary = await run_candidate(
            judge,
            self.dataset,
            self.partition,
            out,
            RunOptions(
                concurrency=self.concurrency,
                budget_usd=self.budget_usd,
                cache_dir=self.cache_dir,
                progress=progress,
            ),
        )
        lines = read_results(summary.results_path)
        join = align_results(
            self.dataset,
            lines,
            partition=self.partition,
            manifest=read_run_manifest(summary.results_path),
            location=summary.results_path,
        )
        return Iteration(
            judge, summary, lines, join, alignment_report(join, results_path=summary.results_path)
        )

    def transitions(self, before: Iteration, after: Iteration) -> Any:
        """Case-level verdict transitions between two iterations (paired by case)."""
        from ..review import transitions

        return transitions(before.join, after.join)

    def review_widget(
        self, iteration: Iteration, *, notes_path: str | Path, reviewer: str | None = None
    ) -> Any:
        """The disagreement review widget over ``iteration``, saving append-only review notes."""
        from ..review import ReviewNotes, review_table
        from ..ui import ReviewWidget

        table = review_table(self.gold, iteration.summary.results_path, partition=self.partition)
        kwargs: dict[str, Any] = {
            "notes": ReviewNotes(notes_path),
            "judge_fingerprint": iteration.fingerprint,
        }
        if reviewer:
            kwargs["reviewer"] = reviewer
        return ReviewWidget(table, **kwargs)


class DevelopSession(PhaseSession):
    """Prompt tuning on the development partition only."""

    def __init__(self, gold: str | Path, *, run_root: str | Path, **kw: Any) -> None:
        check_keywords(kw, SESSION_OPTIONS, type(self).__name__)
        super().__init__(gold, partition="development", run_root=run_root, **kw)


def serve_demo_llm(
    port: int = 0, latency_s: float = 0.02, *, env: str | None = DEMO_LLM_URL_ENV
) -> Any:
    """Start the demo's scripted LLM for offline notebooks (see
    :func:`~workbench.demo.serve_scripted`); the demo LLM candidates read ``$env``."""
    from ..demo import serve_scripted
    from ..demo.fake_llm import respond

    return serve_scripted(respond, env=env, port=port, latency_s=latency_s, what="the demo LLM")
