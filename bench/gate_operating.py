"""The gate rule's operating characteristics on typical slice designs (docs/statistics.md).

``python bench/gate_operating.py [--draws N] [--seed S] [--limit L]`` prints a Markdown table:
for each design (cases per group) and intra-class correlation of the judge's errors within a
group, the chance that a slice clears a false-pass limit when the judge's true rate is at the
limit and at half of it, with the grouped bound (what the gate uses) and with plain Wilson
(cases counted as independent). Not a speed benchmark: a figure that must stay true.

``python bench/gate_operating.py --policy P --gold G [--seed 0]`` prints instead the policy's
whole-gate curve on the gold's slices and groups (the certification report's section, the
figures of ``workbench plan --simulate``): the slice designs, then P(certified),
P(review_required), P(quality_failed) against the true rate.
"""

from __future__ import annotations

import argparse
from typing import Any

from workbench.stats._operating import slice_operating_point

DESIGNS = {
    "61 cases, one per group": [1] * 61,
    "60 cases in 30 pairs": [2] * 30,
    "60 cases in 12 groups of 5": [5] * 12,
    "60 cases in 6 groups of 10": [10] * 6,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--draws", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--limit", type=float, default=0.2)
    parser.add_argument("--policy", help="a release policy: print its gate curve instead")
    parser.add_argument("--gold", help="the gold dataset the policy's slices are read from")
    args = parser.parse_args()
    if args.policy:
        policy_curve(args.policy, args.gold, args.draws, args.seed)
        return
    print(
        "| design | ICC | at the limit: grouped | plain Wilson | at half the limit: grouped"
        " | plain Wilson |"
    )
    print("|---|---|---|---|---|---|")
    for name, sizes in DESIGNS.items():
        for icc in (0.0, 0.2, 0.5):
            cells = [
                slice_operating_point(
                    sizes,
                    args.limit,
                    rate,
                    icc=icc,
                    grouped=grouped,
                    draws=args.draws,
                    seed=args.seed,
                ).p_clear
                for rate in (args.limit, args.limit / 2)
                for grouped in (True, False)
            ]
            print(f"| {name} | {icc:g} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")


def _markdown(frame: Any) -> None:
    print("| " + " | ".join(frame.columns) + " |")
    print("|" + "---|" * len(frame.columns))
    for row in frame.itertuples(index=False):
        cells = [f"{v:.3f}" if isinstance(v, float) else str(v) for v in row]
        print("| " + " | ".join(cells) + " |")


def policy_curve(policy: str, gold: str, draws: int, seed: int) -> None:
    """The policy's gate curve on the gold, as two Markdown tables."""
    from workbench.gold import load_dataset
    from workbench.planning import simulate_gate, simulation_frames
    from workbench.policy import load_policy

    report = simulate_gate(load_policy(policy), load_dataset(gold), draws=draws, seed=seed)
    designs, gate = simulation_frames(report)
    _markdown(designs)
    print()
    _markdown(gate)


if __name__ == "__main__":
    main()
