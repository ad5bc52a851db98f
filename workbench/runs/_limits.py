"""What may start next: the budget, the case limit, the lanes and the circuit breaker, shared by
the workers. A call is priced before it starts (its *reservation* and *expected cost*) and starts
only when both fit (docs/runs.md, "Budget guarantee"); reserved lanes start first and keep their
holds from lower lanes (docs/formats.md, "Reserved lanes"); after ``circuit_breaker_after``
consecutive endpoint failures nothing new starts (docs/endpoints.md).
"""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .._redact import redact
from ..judges import Judge, ModelJudge

StopReason = Literal["budget_exhausted", "max_cases", "circuit_breaker"]
_PRIORITY: dict[str, int] = {"max_cases": 0, "budget_exhausted": 1, "circuit_breaker": 2}
_EPS = 1e-12
MAX_WARNINGS = 20  # kept verbatim on a run summary; further ones are counted


def breaker_fix(kind: str, key_env: str | None) -> str:
    """What to do when consecutive calls failed at the endpoint with ``kind`` (never the key)."""
    key = f"${key_env}" if key_env else "the variable endpoint.api_key_env names"
    fixes = {
        "auth": f"the endpoint refused the key: check that {key} holds a valid key for it",
        "proxy": (
            "the proxy refused the call from its own configuration (no database to check a"
            f" virtual key, a budget, a team): use the proxy's master key in {key} or ask the"
            " proxy's admin to fix its config (e.g. LiteLLM's DATABASE_URL, the key's budget)"
        ),
        "not_found": (
            "the endpoint does not serve the model or the path: check model: (a name the server"
            " lists at GET <base_url>/models) and endpoint.base_url"
        ),
        "bad_request": (
            "the endpoint refuses every request: check params: and the model name against what"
            " the server accepts"
        ),
        "connection": "check that the server is up and endpoint.base_url is right",
    }
    fix = fixes.get(kind, "see the last error")
    return (
        f"{fix}; `workbench ping --candidate <spec>` diagnoses it with one call; then rerun"
        " the same command with --retry-errors (unrun cases start, failed ones are called again)"
    )


@dataclass(frozen=True)
class CallEstimate:
    """The prices of one call, fixed before it starts."""

    reservation: float
    expected: float
    tokens_in: int | None = None
    tokens_out_cap: int | None = None


class Estimator:
    """Prices calls; learns the largest reported output of the run (never above the cap)."""

    def __init__(self, judge: Judge, observed_out: int | None = None) -> None:
        self.judge = judge
        self.max_out = observed_out
        # checked once: a runtime Protocol check walks the protocol's members each time (about
        # 0.05 ms of a call's CPU)
        self.usage = judge.estimate_usage if isinstance(judge, ModelJudge) else None
        self.by_tokens = self.usage is not None
        self.method = None if self.by_tokens else "estimate_cost"

    def estimate(self, judge_input: Any) -> CallEstimate:
        usage = None if self.usage is None else self.usage(judge_input)
        if usage is None:
            cost = float(self.judge.estimate_cost(judge_input))
            self.method = self.method or "estimate_cost"
            return CallEstimate(cost, cost)
        tokens_in, cap, method = usage
        self.method = method
        out = cap if self.max_out is None else min(cap, self.max_out)
        pricing = self.judge.spec.pricing
        return CallEstimate(
            pricing.cost(tokens_in, cap), pricing.cost(tokens_in, out), tokens_in, cap
        )

    def observe(self, tokens_in: int | None, tokens_out: int | None) -> None:
        if tokens_in is not None and tokens_out is not None and tokens_out > 0:
            self.max_out = tokens_out if self.max_out is None else max(self.max_out, tokens_out)


class Limits:
    """Budget, case limit and circuit breaker; every method runs on the event loop."""

    def __init__(
        self,
        budget_usd: float | None,
        max_cases: int | None,
        spent: float,
        *,
        breaker_after: int,
        endpoint: str | None,
        secrets: list[str],
        key_env: str | None = None,
        priority: Mapping[str, int] | None = None,
        holds: Mapping[str, float] | None = None,
        lane_units: Mapping[str, int] | None = None,
        lane_spent: Mapping[str, float] | None = None,
    ) -> None:
        """``priority``: slice -> lane (0 reserved, 1 lower; none: one lane); ``holds``: slice ->
        USD; ``lane_units``: units per slice; ``lane_spent``: recorded spend per slice."""
        self.priority = dict(priority or {})
        self.holds = dict(holds or {})
        self.lane_open = dict(lane_units or {})
        self.lane_spent = defaultdict(float, lane_spent or {})
        self.lane_in_flight: defaultdict[str, float] = defaultdict(float)
        self.unstarted_reserved = (
            sum(n for lane, n in self.lane_open.items() if self.priority.get(lane, 1) == 0)
            if self.priority
            else 0
        )
        self.budget_usd = budget_usd
        self.max_cases = max_cases
        self.spent = spent
        self.reserved = 0.0
        self.in_flight = 0
        self.started = 0
        self.settled = 0
        self.stop_reason: StopReason | None = None
        self.stop_detail: str | None = None
        self.breaker_after = breaker_after
        self.endpoint = endpoint
        self.secrets = secrets
        self.key_env = key_env
        self.consecutive = 0
        self.failure_kinds: Counter[str] = Counter()
        self.warnings: list[str] = []
        self.warning_count = 0
        self.cond = asyncio.Condition()

    @property
    def halted(self) -> bool:
        return self.stop_reason in ("budget_exhausted", "circuit_breaker")

    def _stop(self, reason: StopReason, detail: str) -> None:
        if self.stop_reason is None or _PRIORITY[reason] > _PRIORITY[self.stop_reason]:
            self.stop_reason = reason
            self.stop_detail = redact(detail, self.secrets)

    def _lower(self, lane: str | None) -> bool:
        return bool(self.priority) and self.priority.get(lane or "", 1) > 0

    def _reserved_open(self) -> bool:
        return any(n > 0 and self.priority.get(lane, 1) == 0 for lane, n in self.lane_open.items())

    def held_for_others(self, lane: str | None) -> float:
        """USD a call of ``lane`` may not use: the holds of unfinished reserved slices."""
        return sum(
            max(0.0, hold - self.lane_spent.get(name, 0.0) - self.lane_in_flight.get(name, 0.0))
            for name, hold in self.holds.items()
            if name != lane and self.lane_open.get(name, 0) > 0
        )

    async def admit(
        self, estimate: CallEstimate, first_call: bool, lane: str | None = None
    ) -> bool:
        """Reserve ``estimate`` for a call about to start; False when it must not start."""
        lower = self._lower(lane)
        async with self.cond:
            while (decision := self._decide(estimate, first_call, lane, lower)) == "wait":
                await self.cond.wait()
            if decision == "refuse":
                return False
            self.reserved += estimate.reservation
            self.in_flight += 1
            if lane is not None:
                self.lane_in_flight[lane] += estimate.reservation
            if first_call:
                self.started += 1
                if self.priority and not lower:
                    self.unstarted_reserved -= 1
                    self.cond.notify_all()
            return True

    def _decide(
        self, estimate: CallEstimate, first_call: bool, lane: str | None, lower: bool
    ) -> Literal["admit", "wait", "refuse"]:
        if self.halted:
            return "refuse"
        if first_call and self.max_cases is not None and self.started >= self.max_cases:
            self._stop(
                "max_cases",
                f"{self.max_cases} case x repeat pair(s) started in this invocation"
                " (--max-cases); calls of started pairs, retries included, were allowed to finish",
            )
            return "refuse"
        if self.consecutive > 0 and self.in_flight > 0:
            return "wait"  # half-open breaker: one call at a time until one gets through
        if lower and self.unstarted_reserved > 0:
            return "wait"  # reserved units start first
        if self.budget_usd is None:
            return "admit"
        if self.spent + estimate.expected > self.budget_usd + _EPS:
            if lower and self._reserved_open():
                return "wait"  # never stop a reserved slice's work for a lower lane's call
            self._stop(
                "budget_exhausted",
                f"recorded spend ${self.spent:.6f} + the next call's expected cost"
                f" ${estimate.expected:.6f} exceeds the budget ${self.budget_usd:.6f}",
            )
            self.cond.notify_all()
            return "refuse"
        held = self.held_for_others(lane) if lower else 0.0
        probing = self.settled == 0 and self.in_flight > 0
        if (
            probing
            or self.spent + self.reserved + estimate.expected + held > self.budget_usd + _EPS
        ):
            return "wait"  # the probe, calls in flight or reserved slices' holds are in the way
        return "admit"

    @property
    def tracks_units(self) -> bool:
        """Whether :meth:`unit_done` does anything (the engine calls it only then)."""
        return bool(self.priority)

    async def unit_done(self, lane: str | None, *, started: bool) -> None:
        """A unit of ``lane`` is finished (``started``: its first attempt was admitted)."""
        if not self.priority:
            return
        async with self.cond:
            if lane is not None and lane in self.lane_open:
                self.lane_open[lane] -= 1
            if not started and not self._lower(lane):
                self.unstarted_reserved -= 1
            self.cond.notify_all()

    async def settle(
        self,
        estimate: CallEstimate,
        cost: float,
        *,
        called: bool,
        endpoint_failure: str | None = None,
        error: str | None = None,
        lane: str | None = None,
    ) -> None:
        """Release a reservation and record the call's cost and outcome."""
        async with self.cond:
            self.reserved = max(0.0, self.reserved - estimate.reservation)
            self.in_flight -= 1
            self.settled += 1
            self.spent += cost
            if lane is not None:
                self.lane_in_flight[lane] = max(
                    0.0, self.lane_in_flight.get(lane, 0.0) - estimate.reservation
                )
                self.lane_spent[lane] += cost
            if called:
                if endpoint_failure is not None:
                    self.consecutive += 1
                    self.failure_kinds[endpoint_failure] += 1
                    if self.consecutive >= self.breaker_after:
                        self._stop("circuit_breaker", self._breaker_detail(error))
                else:
                    self.consecutive = 0
                    self.failure_kinds.clear()
            if self.budget_usd is not None and self.spent > self.budget_usd + _EPS:
                self._stop(
                    "budget_exhausted",
                    f"recorded spend ${self.spent:.6f} passed the budget ${self.budget_usd:.6f}",
                )
            self.cond.notify_all()

    def _breaker_detail(self, error: str | None) -> str:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(self.failure_kinds.items()))
        worst = max(sorted(self.failure_kinds), key=lambda k: self.failure_kinds[k])
        return (
            f"{self.consecutive} consecutive calls failed at the endpoint"
            f" {self.endpoint or '(unknown)'} ({kinds}); last error: {error or 'unknown'}; fix:"
            f" {breaker_fix(worst, self.key_env)}"
        )

    def observe(self, tokens_in: int | None, tokens_out: int | None) -> None:
        """A call's reported usage (shared limits use it)."""

    def warn(self, message: str) -> None:
        self.warning_count += 1
        if len(self.warnings) < MAX_WARNINGS:
            self.warnings.append(redact(message, self.secrets))

    def summary_warnings(self) -> list[str]:
        extra = self.warning_count - len(self.warnings)
        more = [f"... and {extra} more warning(s) of the same kinds"] if extra > 0 else []
        return self.warnings + more
