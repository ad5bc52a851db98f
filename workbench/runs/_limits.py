"""What may start next: the budget, the case limit and the circuit breaker, shared by the workers.

**Estimates.** Before a call starts it gets two prices from the candidate's price table:

- its *reservation*: the input estimate (the rendered prompt's tokens, see
  :mod:`workbench.judges._tokens`) plus the full output cap (``max_tokens``). It is held
  while the call is in flight and is what the call may cost if the provider counts input
  as estimated and honours ``max_tokens``;
- its *expected cost*: the same input estimate plus the largest output the provider has
  reported so far in this run (never above the cap; the cap until a call reported usage).

Kinds without token estimates (deterministic functions, imported results, multi-call
metrics that override ``estimate_cost``) use ``estimate_cost`` for both.

**Admission.** A call starts only if ``recorded spend + reservations in flight + its
expected cost <= budget``. When only calls in flight are in the way it waits for them to
settle; when ``recorded spend + its expected cost`` alone exceeds the budget (or recorded
spend already passed it) nothing new starts and the run stops: ``budget_exhausted``. Under a
budget the first call of an invocation runs alone (a probe): nothing else starts until it has
settled, so a provider that over-reports usage from the start costs one call, not a wave.

**Guarantee.** Let L be the last call admitted. At its admission ``spend + Σ reservations of
the calls in flight + expected(L) <= budget``, and nothing starts afterwards, so the final
spend exceeds the budget by at most ``cost(L) - expected(L)`` plus, for each call that was
in flight, how far its cost exceeds its reservation. If no call's reported usage exceeds
its reservation, the spend exceeds the budget by at most ``reservation(L) - expected(L)``,
less than the reservations of the calls in flight. A call whose reported cost exceeds its
reservation breaks that assumption: it is recorded as a warning on the run, and once the
recorded spend reaches the budget nothing new starts, retries included.

**Lanes (runs under a sampling plan).** Units carry their slice; critical slices and slices
with a reservation are *reserved* lanes, every other slice a *lower* lane
(:func:`workbench.sampling.plan_lanes`). The engine queues reserved units first, and:

- no call of a lower lane is admitted while a reserved unit of this invocation has not started
  (its first attempt admitted) or finished (cached, stopped): every reserved unit starts before
  any lower-lane call, whatever the scheduling of the workers;
- while a reserved slice has unfinished units, its *hold* (its reservation less its recorded
  spend and the reservations of its calls in flight, never below 0) is kept from lower lanes: a
  lower-lane call is admitted only if ``spend + reservations in flight + its expected cost +
  the holds of the unfinished reserved slices <= budget``;
- a lower-lane call that does not fit never stops the run while a reserved slice is
  unfinished; it waits. Only reserved calls, or lower-lane calls once every reserved slice has
  finished, stop the run at the budget.

So when a run stops at its budget, no reserved case is unrun while a lower-lane call was paid,
and lower lanes spent only budget that no unfinished reserved slice had reserved. Reserved calls
are admitted by the rule above without holds, so the guarantee is unchanged: every admission
still satisfies ``spend + reservations in flight + expected <= budget``.

**Circuit breaker.** After ``endpoint.circuit_breaker_after`` consecutive calls that failed
at the endpoint itself (connection failed, HTTP 401/403/404) nothing new starts, retries
included: ``circuit_breaker``. Any other outcome resets the count.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .._redact import redact

StopReason = Literal["budget_exhausted", "max_cases", "circuit_breaker"]
_PRIORITY: dict[str, int] = {"max_cases": 0, "budget_exhausted": 1, "circuit_breaker": 2}
_EPS = 1e-12
MAX_WARNINGS = 20
"""Warnings kept verbatim on a run summary; further ones are counted."""


@dataclass(frozen=True)
class CallEstimate:
    """The prices of one call, fixed before it starts."""

    reservation: float
    """Held while the call is in flight: input estimate + full output cap."""
    expected: float
    """Used to admit the call: input estimate + the largest output observed so far."""
    tokens_in: int | None = None
    tokens_out_cap: int | None = None
    tokens_out_expected: int | None = None


class Estimator:
    """Prices calls; learns the largest reported output of the run (never above the cap)."""

    def __init__(self, judge: Any, observed_out: int | None = None) -> None:
        self.judge = judge
        self.max_out = observed_out
        self.method = "estimate_cost" if not hasattr(judge, "estimate_usage") else None

    def estimate(self, judge_input: Any) -> CallEstimate:
        usage = (
            self.judge.estimate_usage(judge_input)
            if hasattr(self.judge, "estimate_usage")
            else None
        )
        if usage is None:
            cost = float(self.judge.estimate_cost(judge_input))
            self.method = self.method or "estimate_cost"
            return CallEstimate(cost, cost)
        tokens_in, cap, method = usage
        self.method = method
        out = cap if self.max_out is None else min(cap, self.max_out)
        pricing = self.judge.spec.pricing
        return CallEstimate(
            pricing.cost(tokens_in, cap), pricing.cost(tokens_in, out), tokens_in, cap, out
        )

    def observe(self, tokens_in: int | None, tokens_out: int | None) -> None:
        """Learn from a call that reached the model (reported usage with input tokens)."""
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
        priority: Mapping[str, int] | None = None,
        holds: Mapping[str, float] | None = None,
        lane_units: Mapping[str, int] | None = None,
        lane_spent: Mapping[str, float] | None = None,
    ) -> None:
        """``priority``: slice -> lane (0 reserved, 1 lower); ``holds``: slice -> USD reserved;
        ``lane_units``: units per slice in this invocation; ``lane_spent``: recorded spend per
        slice before it. Without ``priority`` every call is in one lane (no ordering, no holds)."""
        self.priority = dict(priority or {})
        self.holds = dict(holds or {})
        self.lane_open = dict(lane_units or {})
        self.lane_spent = dict(lane_spent or {})
        self.lane_in_flight: dict[str, float] = {}
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
        self.consecutive = 0
        self.failure_kinds: dict[str, int] = {}
        self.warnings: list[str] = []
        self.warning_count = 0
        self.cond = asyncio.Condition()

    @property
    def halted(self) -> bool:
        """Nothing at all may start (retries included)."""
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
        """US dollars a call of ``lane`` may not use: the holds of unfinished reserved slices."""
        return sum(
            max(0.0, hold - self.lane_spent.get(name, 0.0) - self.lane_in_flight.get(name, 0.0))
            for name, hold in self.holds.items()
            if name != lane and self.lane_open.get(name, 0) > 0
        )

    async def admit(  # noqa: C901
        self, estimate: CallEstimate, first_call: bool, lane: str | None = None
    ) -> bool:
        """Reserve ``estimate`` for a call of ``lane`` about to start; False when it must not
        start."""
        lower = self._lower(lane)
        async with self.cond:
            while True:
                if self.halted:
                    return False
                if first_call and self.max_cases is not None and self.started >= self.max_cases:
                    self._stop(
                        "max_cases",
                        f"{self.max_cases} case x repeat pair(s) started in this invocation"
                        " (--max-cases); calls of started pairs, retries included, were allowed to"
                        " finish",
                    )
                    return False
                if lower and self.unstarted_reserved > 0:
                    await self.cond.wait()  # reserved units start first
                    continue
                if self.budget_usd is not None:
                    held = self.held_for_others(lane) if lower else 0.0
                    if self.spent + estimate.expected > self.budget_usd + _EPS:
                        if lower and self._reserved_open():
                            await (
                                self.cond.wait()
                            )  # never stop a reserved slice's work for a lower lane's call
                            continue
                        self._stop(
                            "budget_exhausted",
                            f"recorded spend ${self.spent:.6f} + the next call's expected cost"
                            f" ${estimate.expected:.6f} exceeds the budget ${self.budget_usd:.6f}",
                        )
                        self.cond.notify_all()
                        return False
                    probing = self.settled == 0 and self.in_flight > 0
                    if (
                        probing
                        or self.spent + self.reserved + estimate.expected + held
                        > self.budget_usd + _EPS
                    ):
                        # the probe, calls in flight or reserved slices' holds are in the way
                        await self.cond.wait()
                        continue
                self.reserved += estimate.reservation
                self.in_flight += 1
                if lane is not None:
                    self.lane_in_flight[lane] = (
                        self.lane_in_flight.get(lane, 0.0) + estimate.reservation
                    )
                if first_call:
                    self.started += 1
                    if self.priority and not lower:
                        self.unstarted_reserved -= 1
                        self.cond.notify_all()
                return True

    @property
    def tracks_units(self) -> bool:
        """Whether :meth:`unit_done` does anything (lanes under a sampling plan); the engine
        calls it only then. A subclass that overrides :meth:`unit_done` overrides this too."""
        return bool(self.priority)

    async def unit_done(self, lane: str | None, *, started: bool) -> None:
        """A unit of ``lane`` is finished for this invocation (``started``: its first attempt was
        admitted). Releases the lane's hold when it was the lane's last unit."""
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
                self.lane_spent[lane] = self.lane_spent.get(lane, 0.0) + cost
            if called:
                if endpoint_failure is not None:
                    self.consecutive += 1
                    self.failure_kinds[endpoint_failure] = (
                        self.failure_kinds.get(endpoint_failure, 0) + 1
                    )
                    if self.consecutive >= self.breaker_after:
                        kinds = ", ".join(f"{k} {v}" for k, v in sorted(self.failure_kinds.items()))
                        self._stop(
                            "circuit_breaker",
                            f"{self.consecutive} consecutive calls failed at the endpoint"
                            f" {self.endpoint or '(unknown)'} ({kinds}); last error:"
                            f" {error or 'unknown'}",
                        )
                else:
                    self.consecutive = 0
                    self.failure_kinds = {}
            if self.budget_usd is not None and self.spent > self.budget_usd + _EPS:
                self._stop(
                    "budget_exhausted",
                    f"recorded spend ${self.spent:.6f} passed the budget ${self.budget_usd:.6f}",
                )
            self.cond.notify_all()

    def observe(self, tokens_in: int | None, tokens_out: int | None) -> None:
        """A call's reported usage (the engine's estimator learns it too); shared limits use it."""

    def warn(self, message: str) -> None:
        self.warning_count += 1
        if len(self.warnings) < MAX_WARNINGS:
            self.warnings.append(redact(message, self.secrets))

    def summary_warnings(self) -> list[str]:
        extra = self.warning_count - len(self.warnings)
        return [
            *self.warnings,
            *([f"... and {extra} more warning(s) of the same kinds"] if extra > 0 else []),
        ]
