"""GaussianBayesClassifier (shared / full covariance) predict_proba against LDA / QDA,
optionally against another checkout of bayesnb, interleaved in one run (issue 14).

Each code tree is loaded in its own worker process (``PYTHONPATH=<tree>``) that fits
``GaussianBayesClassifier(covariance, estimate)`` for shared/full x "mle"/"predictive" on
the same data (``bench_gaussian._data``: default 200,000 x 20, 5 classes) and times one
``predict_proba`` per request; scikit-learn's ``LinearDiscriminantAnalysis(solver="lsqr")``
and ``QuadraticDiscriminantAnalysis`` run in this process. The calls are interleaved
round by round (only one process computes at a time) and the medians reported, with the
machine's load. Then the first ``fit`` + ``predict_proba`` on ``load_digits`` in a fresh
process per tree, with the number of JAX compilations it triggered.

Targets: predict_proba at least as fast as LDA (shared) / QDA (full); "predictive" within
2x of "mle"; no compilation on the first prediction.

Usage::

    python benchmarks/bench_gaussian_mv.py                       # this checkout
    python benchmarks/bench_gaussian_mv.py --baseline /path/to/other/checkout
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = [(cov, est) for cov in ("shared", "full") for est in ("mle", "predictive")]


def _data(n):
    sys.path.insert(0, str(HERE))
    import bench_gaussian

    return bench_gaussian._data(n, 20, 5, seed=1)


def worker(n):
    import numpy as np

    import bayesnb

    X, y = _data(n)
    prior = np.bincount(y) / y.size
    models = {}
    for cov, est in CASES:
        models[cov, est] = bayesnb.GaussianBayesClassifier(covariance=cov, estimate=est, class_prior=prior).fit(X, y)
        models[cov, est].predict_proba(X)
    print(json.dumps({"ready": bayesnb.__file__}), flush=True)
    for line in sys.stdin:
        cov, est = line.split()
        t0 = time.perf_counter()
        models[cov, est].predict_proba(X)
        print(json.dumps({"seconds": time.perf_counter() - t0}), flush=True)


FIRST = r"""
import time, json
t0 = time.perf_counter()
import jax, bayesnb
from sklearn.datasets import load_digits
X, y = load_digits(return_X_y=True)
t1 = time.perf_counter()
compiles = []
jax.monitoring.register_event_duration_secs_listener(
    lambda name, d, **k: compiles.append(name) if name.endswith("backend_compile_duration") else None)
out = {"import": t1 - t0}
for cov in ("full", "shared"):
    t = time.perf_counter()
    bayesnb.GaussianBayesClassifier(covariance=cov).fit(X, y).predict_proba(X)
    out[cov] = time.perf_counter() - t
out["compiles"] = len(compiles)
print(json.dumps(out))
"""


def _spawn(tree, n):
    env = dict(os.environ, PYTHONPATH=str(tree))
    proc = subprocess.Popen(
        [sys.executable, __file__, "--worker", "--n", str(n)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=str(tree),
    )
    json.loads(proc.stdout.readline())
    return proc


def _ask(proc, cov, est):
    proc.stdin.write(f"{cov} {est}\n")
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())["seconds"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--baseline", help="another checkout of bayesnb to time in the same run")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args.n)

    import numpy as np
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis, QuadraticDiscriminantAnalysis

    trees = {"this": HERE.parent}
    if args.baseline:
        trees = {"baseline": Path(args.baseline).resolve(), **trees}
    print(f"load before: {os.getloadavg()}")
    X, y = _data(args.n)
    sk = {"shared": LinearDiscriminantAnalysis(solver="lsqr").fit(X, y), "full": QuadraticDiscriminantAnalysis().fit(X, y)}
    for m in sk.values():
        m.predict_proba(X)
    procs = {name: _spawn(tree, args.n) for name, tree in trees.items()}
    times = {(who, cov, est): [] for who in ["sklearn", *trees] for cov, est in CASES}
    try:
        for r in range(args.repeats):
            for i, (cov, est) in enumerate(CASES):
                order = ["sklearn", *procs]
                order = order[(r + i) % len(order):] + order[: (r + i) % len(order)]
                for who in order:
                    if who == "sklearn":
                        t0 = time.perf_counter()
                        sk[cov].predict_proba(X)
                        times[who, cov, est].append(time.perf_counter() - t0)
                    else:
                        times[who, cov, est].append(_ask(procs[who], cov, est))
    finally:
        for p in procs.values():
            p.stdin.close()
            p.wait()
    print(f"load after: {os.getloadavg()}")
    print(f"\npredict_proba, {args.n} x 20, 5 classes: median of {args.repeats} interleaved calls (s); "
          "ratio = scikit-learn time / bayesnb time (>= 1: at least as fast)")
    print(f"{'covariance':10} {'estimate':11} {'sklearn':>8} " + " ".join(f"{w:>10} {'ratio':>6}" for w in trees))
    for cov, est in CASES:
        base = statistics.median(times["sklearn", cov, est])
        cells = []
        for w in trees:
            t = statistics.median(times[w, cov, est])
            cells.append(f"{t:10.4f} {base / t:6.2f}")
        print(f"{cov:10} {est:11} {base:8.4f} " + " ".join(cells))
    for w in trees:
        for cov in ("shared", "full"):
            ratio = statistics.median(times[w, cov, "predictive"]) / statistics.median(times[w, cov, "mle"])
            print(f"{w}: {cov} predictive / mle = {ratio:.2f}")
    print("\nfirst fit + predict_proba on load_digits, fresh process (s)")
    for w, tree in trees.items():
        env = dict(os.environ, PYTHONPATH=str(tree))
        out = subprocess.run([sys.executable, "-c", FIRST], env=env, cwd=str(tree), capture_output=True, text=True, check=True)
        print(f"{w}: {out.stdout.strip()}")
    np.seterr()


if __name__ == "__main__":
    main()
