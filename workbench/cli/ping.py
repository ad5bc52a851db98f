"""``workbench ping``: one real request to a candidate's endpoint, before the first real run."""

from __future__ import annotations

import click

from ..judges import PingResult, ping
from ..outcomes import ExitCode
from ._common import user_errors
from ._options import option, show


@click.command("ping")
@option("candidate", help="Candidate spec (kind ragas-llm).")
@option("json", help="Print the result as JSON (schema: docs/formats.md#ping-result).")
@user_errors
def ping_command(candidate: str, as_json: bool) -> None:
    """Send ONE real request to a candidate's endpoint and say whether a run can work.

    The candidate's own prompt on a fixed, harmless case, sent as `workbench run` would (and
    paid for). Exit 0 everything fine; 1 a check failed, each problem printed with its code
    (docs/endpoints.md); 2 invalid input.
    """
    result = ping(candidate)
    show(result, as_json, lambda r: "\n".join(render(r)))
    if not result.ok:
        raise SystemExit(ExitCode.FAILED)


def render(result: PingResult) -> list[str]:
    """The human-readable report of a ping."""
    status = f"HTTP {result.status}" if result.status is not None else "no HTTP answer"
    latency = f"{result.latency_s:.3f} s" if result.latency_s is not None else "-"
    lines = [
        f"ping {result.candidate} (model {result.model}, provider {result.provider})",
        f"  url        {result.url or '(none)'}",
        f"  status     {status}",
        f"  latency    {latency}",
    ]
    if result.json_mode == "md_json":
        json_line = "not asked for (json_mode md_json: the answer is read from a ```json block)"
    elif result.json_mode_honoured is None:
        json_line = "unknown (no answer to judge)"
    else:
        json_line = "honoured (bare JSON answer)" if result.json_mode_honoured else "NOT honoured"
    lines.append(f"  JSON mode  {json_line}")
    if result.parsed:
        verdict = (
            f"parsed: value {result.value!r} is one of {result.labels}"
            if result.label_ok
            else f"parsed, but value {result.value!r} is NOT one of {result.labels}"
        )
    else:
        verdict = "did not parse into {reason, value}" if result.status == 200 else "none"
    lines.append(f"  answer     {verdict}")
    reported = result.tokens_in is not None or result.tokens_out is not None
    usage = f"{result.tokens_in} input + {result.tokens_out} output tokens"
    lines.append(f"  usage      {usage if reported else 'not reported'}")
    cost = f"${result.cost_usd:.6f} under the price table" if result.cost_usd is not None else None
    lines.append(f"  cost       {cost or 'unknown'}")
    if result.ok:
        lines.append("ok: the endpoint is ready for `workbench run`")
    else:
        for problem in result.problems:
            lines.append(f"FAILED [{problem.code}] {problem.message}")
            lines.append(f"  fix: {problem.fix}")
    return lines
