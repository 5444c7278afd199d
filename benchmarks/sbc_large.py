"""Simulation-based calibration of every family at a budget larger than the test suite's.

The test suite (tests/ppl/test_sbc.py) runs 200 simulations x 49 posterior draws per family,
enough to catch an off-by-one count or a missing pseudo-count. This script runs
``--simulations`` (default 1,000) x ``--draws`` (default 199) for every estimator, at two
data sizes (small data, where the prior matters most, and larger data), and prints the
Bonferroni-adjusted p-value of the rank-uniformity chi-square test and the worst
parameter of each. With ``--out`` it also writes the rank histograms of the four worst
parameters of each run (PNG).

Usage::

    python benchmarks/sbc_large.py                       # ~10-20 min on 2 cores
    python benchmarks/sbc_large.py --quick               # 200 x 49, small data only
    python benchmarks/sbc_large.py --families poisson,gaussian_full --out sbc_figures
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _ppl_cases import NAMES, fitted  # noqa: E402 - the test suite's small data sets, one per family


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--simulations", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=199, help="posterior draws per simulation (draws + 1 divisible by --bins)")
    parser.add_argument("--bins", type=int, default=20)
    parser.add_argument("--families", default=",".join(NAMES))
    parser.add_argument("--out", metavar="DIR")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    from bayesnb.ppl.sbc import simulation_based_calibration

    if args.quick:
        args.simulations, args.draws, args.bins = 200, 49, 10
    sizes = (8,) if args.quick else (8, 100)
    out = Path(args.out) if args.out else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    print(f"SBC: {args.simulations} simulations x {args.draws} draws, {args.bins} bins; rows per data set {sizes}")
    print(f"{'family':<18}{'rows':>6}{'params':>8}{'p (Bonferroni)':>16}{'seconds':>9}  worst parameter")
    failed = 0
    for name in args.families.split(","):
        case = fitted(name)
        for n in sizes:
            t0 = time.perf_counter()
            result = simulation_based_calibration(
                case.estimator,
                n,
                n_simulations=args.simulations,
                n_draws=args.draws,
                n_bins=args.bins,
                random_state=args.seed,
                # The chain rule conditions the estimator once per row: on the small data sets only.
                check_evidence=n <= 20,
            )
            seconds = time.perf_counter() - t0
            worst, chi2, p = result.worst(1)[0]
            flag = "" if result.calibrated else f"  <-- {result.verdict()}"
            print(f"{name:<18}{n:>6}{len(result.names):>8}{result.p_value:>16.3g}{seconds:>9.1f}  "
                  f"{worst} (chi2 {chi2:.1f}, p {p:.2g}){flag}")
            failed += result.calibrated is not True
            if out is not None:
                import matplotlib

                matplotlib.use("Agg")
                import matplotlib.pyplot as plt

                result.plot()
                plt.tight_layout()
                plt.savefig(out / f"sbc_{name}_{n}.png", dpi=80)
                plt.close("all")
    print(f"{failed} run(s) not calibrated at level 0.01" if failed else "every family calibrated")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
