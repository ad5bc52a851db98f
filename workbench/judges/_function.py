"""``ragas-function``: a deterministic Ragas ``@discrete_metric`` referenced by import path."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from types import ModuleType
from typing import Any

from .._io import sha256_text
from ..errors import Problem, WorkbenchError, problem
from ..results import JudgeIdentity
from ._code import code_coverage
from ._input import JudgeInput
from ._registry import CaseRef, Verdict, make_identity
from ._spec import CandidateSpec


def import_metric(
    spec: CandidateSpec, loc: str, decorator: str, example: str, problems: list[Problem]
) -> tuple[Any, ModuleType]:
    """The Ragas metric ``spec.function`` names (``"module:attribute"``) and its module; raises
    with ``problems`` and ``function_missing`` or ``function_unresolved``."""
    name = spec.function or ""
    module_name, _, attribute = name.partition(":")
    if not module_name or not attribute:
        missing = problem(
            loc,
            "function_missing",
            f"a {spec.kind} candidate needs function: 'module:attribute'",
            f"set function to the import path of a {decorator}, e.g. {example}",
        )
        raise WorkbenchError("invalid candidate", [*problems, missing])
    try:
        module = importlib.import_module(module_name)
        return getattr(module, attribute), module
    except (ImportError, AttributeError) as exc:
        unresolved = problem(
            loc,
            "function_unresolved",
            f"cannot import {name!r} ({exc})",
            "check the module path and attribute name, and that the module is importable",
        )
        raise WorkbenchError("invalid candidate", [*problems, unresolved]) from None


def _metric_problems(spec: CandidateSpec, metric: Any, loc: str) -> list[Problem]:
    allowed = getattr(metric, "allowed_values", None)
    unknown = [v for v in allowed if v not in spec.labels] if isinstance(allowed, list) else []
    if not hasattr(metric, "ascore") or not isinstance(allowed, list | tuple):
        found = (
            "function_not_metric",
            f"{spec.function!r} is not a Ragas discrete or numeric metric",
            "decorate the function with ragas.metrics.discrete_metric(allowed_values=[...]) or"
            " numeric_metric(allowed_values=(low, high))",
        )
    elif isinstance(allowed, tuple) and spec.threshold is None:  # scores need a threshold
        found = (
            "threshold_missing",
            f"{spec.function!r} returns scores; the candidate needs a threshold to turn them into"
            " labels",
            "add threshold: {value: ..., pass_if: at_least, pass_label: pass, fail_label: fail};"
            " choose the value on the calibration partition",
        )
    elif unknown:
        found = (
            "labels_mismatch",
            f"the metric may return {unknown}, which are not in the spec's labels {spec.labels}",
            "make the metric's allowed_values a subset of the spec's labels",
        )
    else:
        return []
    return [problem(loc, *found)]


class FunctionJudge:
    """Runs a Ragas discrete metric built with ``@discrete_metric`` around plain Python."""

    def __init__(self, spec: CandidateSpec, spec_path: Path) -> None:
        self.spec = spec
        loc = str(spec_path)
        metric, module = import_metric(
            spec, loc, "@discrete_metric", "workbench.judges.demo:rubric_judge_v1", []
        )
        problems = _metric_problems(spec, metric, loc)
        if problems:
            raise WorkbenchError("invalid candidate", problems)
        self.numeric = isinstance(metric.allowed_values, tuple)
        self.metric = metric
        func = getattr(metric, "_func", None) or metric
        self._parameters = list(inspect.signature(func).parameters)
        self.code = code_coverage(module)  # the fingerprint covers every file and dependency
        self.identity: JudgeIdentity = make_identity(
            spec, sha256_text(inspect.getsource(module)), **self.code.params()
        )

    def _arguments(self, judge_input: JudgeInput) -> dict[str, Any]:
        args = judge_input.arguments()
        return {name: args[name] for name in self._parameters if name in args}

    def render(self, judge_input: JudgeInput, ref: CaseRef | None = None) -> dict[str, Any]:
        return {"function": self.spec.function, "arguments": self._arguments(judge_input)}

    def estimate_cost(self, judge_input: JudgeInput) -> float:
        return 0.0

    async def evaluate(self, judge_input: JudgeInput, ref: CaseRef | None = None) -> Verdict:
        args = self._arguments(judge_input)
        missing = [name for name in self._parameters if name not in args]
        if missing:
            return Verdict.failed("judge_exception", f"the case lacks judge inputs {missing}")
        try:
            result = await self.metric.ascore(**args)
        except Exception as exc:  # a user-supplied metric may raise anything: record it
            return Verdict.failed("judge_exception", f"{type(exc).__name__}: {exc}")
        threshold = self.spec.threshold
        if self.numeric and isinstance(result.value, int | float) and threshold is not None:
            score = float(result.value)
            label = threshold.label(score)
            sign = ">=" if threshold.pass_if == "at_least" else "<="
            side = "" if label == threshold.pass_label else "not "
            reason = f"score {score:.4g} ({side}{sign} {threshold.value:g}): {result.reason}"
            return Verdict(value=label, reason=reason, score=score)
        if result.value is None or result.value not in self.spec.labels:
            reason = str(result.reason or f"value {result.value!r} outside {self.spec.labels}")
            # Ragas catches exceptions raised by the function and returns them as a reason.
            raised = reason.startswith(f"Error executing metric {self.metric.name}:")
            return Verdict.failed("judge_exception" if raised else "invalid_label", reason)
        return Verdict(value=str(result.value), reason=result.reason)
