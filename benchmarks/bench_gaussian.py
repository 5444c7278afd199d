"""GaussianNB speed against scikit-learn, measured in the same run.

Dense Gaussian data (default 1,000,000 x 100, 10 classes). Times, each the median of
``--repeats`` calls after a first call that is reported on its own (it includes JAX
compilation of the chunk kernels for these shapes):

* ``fit``: bayesnb ``GaussianNB(estimate="mean")`` vs ``sklearn.naive_bayes.GaussianNB``;
* ``predict_proba``: the posterior-mean plug-in vs scikit-learn;
* ``predict_proba`` with ``estimate="predictive"`` (the exact Student-t posterior
  predictive), reported relative to the "mean" path.

Targets: >= 10x scikit-learn on fit and predict_proba for "mean"; "predictive" within 3x
of "mean". The machine these were written on is shared and loaded; run it a few times
and read the ratios, not the absolute seconds. Also prints the largest difference between
``estimate="mle"`` (empirical class prior) and scikit-learn's probabilities as a sanity
check.

Usage::

    python benchmarks/bench_gaussian.py            # 1,000,000 x 100, 10 classes
    python benchmarks/bench_gaussian.py --quick    # 100,000 x 100
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np


def _timed(fn, repeats):
    t0 = time.perf_counter()
    out = fn()
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return first, statistics.median(times), out


def _data(n, n_features, n_classes, seed):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=1.0, size=(n_classes, n_features))
    scales = rng.uniform(0.5, 2.0, size=(n_classes, n_features))
    y = rng.integers(0, n_classes, size=n)
    X = rng.standard_normal((n, n_features))
    X *= scales[y]
    X += centres[y]
    return X, y


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100,000 rows instead of 1,000,000")
    parser.add_argument("--n", type=int, default=None, help="number of rows")
    parser.add_argument("--features", type=int, default=100)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=None, help="timed calls after the first (default 5, quick 3)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    n = args.n or (100_000 if args.quick else 1_000_000)
    repeats = args.repeats or (3 if args.quick else 5)

    from sklearn.naive_bayes import GaussianNB as SkGaussianNB

    from bayesnb.estimators.gaussian import GaussianNB

    X, y = _data(n, args.features, args.classes, args.seed)
    print(
        f"GaussianNB benchmark: {n:,} x {args.features} float64, {args.classes} classes, "
        f"median of {repeats} after a first call; {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
    )

    sk_fit = _timed(lambda: SkGaussianNB().fit(X, y), repeats)
    sk = sk_fit[2]
    sk_proba = _timed(lambda: sk.predict_proba(X), repeats)

    ours_fit = _timed(lambda: GaussianNB(estimate="mean").fit(X, y), repeats)
    ours = ours_fit[2]
    mean_proba = _timed(lambda: ours.predict_proba(X), repeats)
    ours.set_params(estimate="predictive")
    pred_proba = _timed(lambda: ours.predict_proba(X), repeats)

    # Sanity: the "mle" estimate with the empirical class prior is scikit-learn's model.
    emp = np.bincount(y, minlength=args.classes) / n
    rows = slice(0, min(n, 100_000))
    mle = ours.set_params(estimate="mle", class_prior=emp)
    diff = float(np.abs(mle.predict_proba(X[rows]) - sk_proba[2][rows]).max())

    print()
    print(f"{'operation':<34}{'first call s':>14}{'median s':>12}{'vs sklearn':>12}")
    print(f"{'sklearn fit':<34}{sk_fit[0]:>14.3f}{sk_fit[1]:>12.3f}{'':>12}")
    print(f"{'bayesnb fit (mean)':<34}{ours_fit[0]:>14.3f}{ours_fit[1]:>12.3f}{sk_fit[1] / ours_fit[1]:>11.1f}x")
    print(f"{'sklearn predict_proba':<34}{sk_proba[0]:>14.3f}{sk_proba[1]:>12.3f}{'':>12}")
    print(
        f"{'bayesnb predict_proba (mean)':<34}{mean_proba[0]:>14.3f}{mean_proba[1]:>12.3f}"
        f"{sk_proba[1] / mean_proba[1]:>11.1f}x"
    )
    print(
        f"{'bayesnb predict_proba (predictive)':<34}{pred_proba[0]:>14.3f}{pred_proba[1]:>12.3f}"
        f"{sk_proba[1] / pred_proba[1]:>11.1f}x"
    )
    print()
    ratio = pred_proba[1] / mean_proba[1]
    fit_speedup = sk_fit[1] / ours_fit[1]
    proba_speedup = sk_proba[1] / mean_proba[1]
    print(f"predictive / mean predict_proba time: {ratio:.2f}x (target <= 3x: {'met' if ratio <= 3 else 'NOT met'})")
    print(f"fit speed-up over sklearn: {fit_speedup:.1f}x (target >= 10x: {'met' if fit_speedup >= 10 else 'NOT met'})")
    print(
        f"predict_proba speed-up over sklearn: {proba_speedup:.1f}x "
        f"(target >= 10x: {'met' if proba_speedup >= 10 else 'NOT met'})"
    )
    print(f"max |p_mle - p_sklearn| on {rows.stop:,} rows: {diff:.2e}")


if __name__ == "__main__":
    main()
