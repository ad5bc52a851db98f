"""The gate rule's operating characteristics on typical slice designs (docs/statistics.md).

``python bench/gate_operating.py [--draws N] [--seed S] [--limit L]`` prints a Markdown table:
for each design (cases per group) and intra-class correlation of the judge's errors within a
group, the chance that a slice clears a false-pass limit when the judge's true rate is at the
limit and at half of it, with the grouped bound (what the gate uses) and with plain Wilson
(cases counted as independent). Not a speed benchmark: a figure that must stay true.
"""

from __future__ import annotations

import argparse

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
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
