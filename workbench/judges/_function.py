"""``ragas-function``: a deterministic Ragas ``@discrete_metric`` referenced by import path."""

from __future__ import annotations

import copy
import functools
import importlib
import inspect
from pathlib import Path
from typing import Any

from .._io import sha256_text
from ..errors import Problem, WorkbenchError
from ..results import JudgeIdentity
from ._input import JudgeInput
from ._registry import CaseRef, Verdict, make_identity
from ._spec import CandidateSpec


def with_input_model_built_once(metric: Any) -> Any:
    """A shallow copy of a Ragas decorated metric that builds its input model once.

    ``@discrete_metric`` (and the numeric and ranking decorators) check a call's arguments with
    a pydantic model that ``_create_pydantic_model`` builds from the function's signature, anew
    on every ``ascore`` call: 0.7 ms of the 0.71 ms a demo judge's call takes. The signature
    does not change, so the copy builds the model on its first call and keeps it; the checks
    and their errors are Ragas' own. The user's metric object is left as it is. A metric
    without that method, or one whose copy cannot take the attribute, is returned unchanged.
    """
    import os

    if os.environ.get("WORKBENCH_PATCH_INPUT_MODEL", "1") == "0":
        return metric
    if not callable(getattr(metric, "_create_pydantic_model", None)):
        return metric
    try:
        own = copy.copy(metric)
        own._create_pydantic_model = functools.cache(own._create_pydantic_model)
    except Exception:  # a metric class that refuses a copy or the attribute (slots, a frozen
        return metric  # model, a custom __setattr__): Ragas' per-call build, as shipped
    return own


class FunctionJudge:
    """Runs a Ragas discrete metric built with ``@discrete_metric`` around plain Python."""

    def __init__(self, spec: CandidateSpec, spec_path: Path) -> None:
        self.spec = spec
        loc = str(spec_path)
        if not spec.function or ":" not in spec.function:
            raise WorkbenchError(
                "invalid candidate",
                [
                    Problem(
                        location=loc,
                        code="function_missing",
                        message="a ragas-function candidate needs function: 'module:attribute'",
                        fix=(
                            "set function to the import path of a @discrete_metric, e.g."
                            " workbench.judges.demo:rubric_judge_v1"
                        ),
                    )
                ],
            )
        module_name, _, attr = spec.function.partition(":")
        try:
            module = importlib.import_module(module_name)
            metric = getattr(module, attr)
        except (ImportError, AttributeError) as exc:
            raise WorkbenchError(
                "invalid candidate",
                [
                    Problem(
                        location=loc,
                        code="function_unresolved",
                        message=f"cannot import {spec.function!r} ({exc})",
                        fix=(
                            "check the module path and attribute name, and that the module is"
                            " importable"
                        ),
                    )
                ],
            ) from None
        allowed = getattr(metric, "allowed_values", None)
        self.numeric = isinstance(allowed, tuple)
        if not hasattr(metric, "ascore") or not isinstance(allowed, list | tuple):
            raise WorkbenchError(
                "invalid candidate",
                [
                    Problem(
                        location=loc,
                        code="function_not_metric",
                        message=f"{spec.function!r} is not a Ragas discrete or numeric metric",
                        fix=(
                            "decorate the function with"
                            " ragas.metrics.discrete_metric(allowed_values=[...]) or"
                            " numeric_metric(allowed_values=(low, high))"
                        ),
                    )
                ],
            )
        if self.numeric and spec.threshold is None:
            raise WorkbenchError(
                "invalid candidate",
                [
                    Problem(
                        location=loc,
                        code="threshold_missing",
                        message=(
                            f"{spec.function!r} returns scores; the candidate needs a threshold to"
                            " turn them into labels"
                        ),
                        fix=(
                            "add threshold: {value: ..., pass_if: at_least, pass_label: pass,"
                            " fail_label: fail}; choose the value on the calibration partition"
                        ),
                    )
                ],
            )
        unknown = [] if self.numeric else [v for v in allowed if v not in spec.labels]
        if unknown:
            raise WorkbenchError(
                "invalid candidate",
                [
                    Problem(
                        location=loc,
                        code="labels_mismatch",
                        message=(
                            f"the metric may return {unknown}, which are not in the spec's labels"
                            f" {spec.labels}"
                        ),
                        fix="make the metric's allowed_values a subset of the spec's labels",
                    )
                ],
            )
        self.metric = with_input_model_built_once(metric)
        func = getattr(metric, "_func", None) or metric
        self._parameters = list(inspect.signature(func).parameters)
        source = inspect.getsource(module)
        self.identity: JudgeIdentity = make_identity(spec, sha256_text(source))

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
        except (
            Exception
        ) as exc:  # a user-supplied metric may raise anything; record it, never a verdict
            return Verdict.failed("judge_exception", f"{type(exc).__name__}: {exc}")
        if (
            self.numeric
            and isinstance(result.value, int | float)
            and self.spec.threshold is not None
        ):
            score = float(result.value)
            t = self.spec.threshold
            sign = ">=" if t.pass_if == "at_least" else "<="
            return Verdict(
                value=t.label(score),
                reason=(
                    f"score {score:.4g} ({'' if t.label(score) == t.pass_label else 'not '}{sign}"
                    f" {t.value:g}): {result.reason}"
                ),
                score=score,
            )
        if result.value is None or result.value not in self.spec.labels:
            reason = str(result.reason or f"value {result.value!r} outside {self.spec.labels}")
            # Ragas catches exceptions raised by the function and returns them as a reason.
            kind = (
                "judge_exception"
                if reason.startswith(f"Error executing metric {self.metric.name}:")
                else "invalid_label"
            )
            return Verdict.failed(kind, reason)
        return Verdict(value=str(result.value), reason=result.reason)
