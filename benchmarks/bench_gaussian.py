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
import sys
import time
from pathlib import Path

import numpy as np

# The timing and memory helpers are shared with bench_discrete.py (same folder).
sys.path.insert(0, str(Path(__file__).resolve().parent))


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


# ----------------------------------------------------------------------------- plain NumPy

_FLOOR_ROWS = 1 << 16


def floor_fit(X, y, n_classes):
    """Per-class means and variances written directly (boolean mask per class)."""
    loc = np.empty((n_classes, X.shape[1]))
    var = np.empty_like(loc)
    for c in range(n_classes):
        rows = X[y == c]
        loc[c] = rows.mean(axis=0)
        var[c] = rows.var(axis=0)
    return np.log(np.bincount(y, minlength=n_classes) / y.size), loc, var


def floor_proba(X, params):
    """Plug-in Gaussian class probabilities by the quadratic expansion: two matrix products."""
    from scipy.special import logsumexp

    log_prior, loc, var = params
    inv = 1.0 / var
    const = log_prior - 0.5 * (np.log(2 * np.pi * var) + loc * loc * inv).sum(axis=1)
    out = np.empty((X.shape[0], loc.shape[0]))
    for r0 in range(0, X.shape[0], _FLOOR_ROWS):
        Xb = X[r0 : r0 + _FLOOR_ROWS]
        jll = -0.5 * ((Xb * Xb) @ inv.T) + Xb @ (loc * inv).T + const
        out[r0 : r0 + _FLOOR_ROWS] = np.exp(jll - logsumexp(jll, axis=1, keepdims=True))
    return out


def floor_student(X, post, log_prior):
    """Student-t posterior predictive written directly (one class at a time)."""
    from scipy.special import gammaln, logsumexp

    a, k, b, m = (np.asarray(v) for v in (post.concentration, post.kappa, post.rate, post.loc))
    inv = k / (2.0 * b * (k + 1.0))
    const = (gammaln(a + 0.5) - gammaln(a) - 0.5 * np.log(2 * np.pi * b * (k + 1.0) / k)).sum(axis=1) + log_prior
    out = np.empty((X.shape[0], a.shape[0]))
    for r0 in range(0, X.shape[0], _FLOOR_ROWS):
        Xb = X[r0 : r0 + _FLOOR_ROWS]
        jll = np.empty((Xb.shape[0], a.shape[0]))
        for c in range(a.shape[0]):
            dev = Xb - m[c]
            jll[:, c] = const[c] - ((a[c] + 0.5) * np.log1p(dev * dev * inv[c])).sum(axis=1)
        out[r0 : r0 + _FLOOR_ROWS] = np.exp(jll - logsumexp(jll, axis=1, keepdims=True))
    return out


def run(n, n_features=100, n_classes=10, repeat=5, seed=0, floors=True, memory=True):
    """scikit-learn, bayesnb and the plain NumPy version, interleaved; a list of result dicts.

    Each dict: ``operation``, ``timing`` (as :func:`bench_discrete.time_pair` returns it,
    with the plain version as ``floor``) and ``memory`` (``((sk_peak, sk_rss),
    (bn_peak, bn_rss))`` or None).
    """
    from bench_discrete import measure_memory, time_pair
    from sklearn.naive_bayes import GaussianNB as SkGaussianNB

    from bayesnb.estimators.gaussian import GaussianNB

    X, y = _data(n, n_features, n_classes, seed)
    emp = np.bincount(y, minlength=n_classes) / n
    rows = []

    def add(op, sk_fn, bn_fn, floor_fn):
        t = time_pair(sk_fn, bn_fn, repeat, floor_fn if floors else None)
        m = (measure_memory(sk_fn), measure_memory(bn_fn)) if memory else None
        rows.append({"operation": op, "timing": t, "memory": m})
        return t

    add(
        "fit",
        lambda: SkGaussianNB().fit(X, y),
        lambda: GaussianNB(estimate="mean").fit(X, y),
        lambda: floor_fit(X, y, n_classes),
    )
    sk = SkGaussianNB().fit(X, y)
    ours = GaussianNB(estimate="mean").fit(X, y)
    params = floor_fit(X, y, n_classes)
    add('predict_proba "mean"', lambda: sk.predict_proba(X), lambda: ours.predict_proba(X), lambda: floor_proba(X, params))
    ours.set_params(estimate="predictive")
    log_prior = ours.class_log_prior_
    add(
        'predict_proba "predictive" (t)',
        lambda: sk.predict_proba(X),
        lambda: ours.predict_proba(X),
        lambda: floor_student(X, ours.posterior_, log_prior),
    )
    # Sanity: the "mle" estimate with the empirical class prior is scikit-learn's model.
    some = slice(0, min(n, 100_000))
    mle = GaussianNB(estimate="mle", class_prior=emp).fit(X, y)
    gap = float(np.abs(mle.predict_proba(X[some]) - sk.predict_proba(X[some])).max())
    return rows, gap


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

    print(
        f"GaussianNB benchmark: {n:,} x {args.features} float64, {args.classes} classes, "
        f"median of {repeats} after a first call, scikit-learn / bayesnb / plain NumPy interleaved; "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    rows, gap = run(n, args.features, args.classes, repeats, args.seed, floors=True, memory=False)
    print()
    print(f"{'operation':<32}{'sklearn s':>11}{'bayesnb s':>11}{'plain s':>10}{'vs sklearn':>12}{'bn 1st s':>10}")
    for row in rows:
        t = row["timing"]
        print(
            f"{row['operation']:<32}{t['sk']:>11.3f}{t['bn']:>11.3f}{t['floor']:>10.3f}"
            f"{t['sk'] / t['bn']:>11.1f}x{t['bn_first']:>10.3f}"
        )
    print()
    fit, mean, pred = (row["timing"] for row in rows)
    ratio = pred["bn"] / mean["bn"]
    fit_speedup = fit["sk"] / fit["bn"]
    proba_speedup = mean["sk"] / mean["bn"]
    print(f"predictive / mean predict_proba time: {ratio:.2f}x (target <= 3x: {'met' if ratio <= 3 else 'NOT met'})")
    print(f"fit speed-up over sklearn: {fit_speedup:.1f}x (target >= 10x: {'met' if fit_speedup >= 10 else 'NOT met'})")
    print(
        f"predict_proba speed-up over sklearn: {proba_speedup:.1f}x "
        f"(target >= 10x: {'met' if proba_speedup >= 10 else 'NOT met'})"
    )
    print(f"max |p_mle - p_sklearn| on {min(n, 100_000):,} rows: {gap:.2e}")


if __name__ == "__main__":
    main()
