"""Time to compile a numpyro model of the naive-Bayes shape into an estimator.

Issue 38 (item 11) asks that :func:`bayesnb.compile_model` compile a 30-column model in
under 2 s. This script builds models of ``n`` columns, one observed site per column
(a third Beta-Bernoulli, a third Normal-Inverse-Gamma Gaussian, a third
Dirichlet-categorical with 3 categories, so that every family's recogniser and every
kind of probe value is exercised), and times, each in a fresh interpreter (the first
compilation of a model is what a user meets; JAX compiles each operation once per
process and shape):

* ``first``: the first ``compile_model`` call after ``import numpyro, bayesnb``;
* ``again``: a second ``compile_model`` of the same model in the same process;
* ``numpyro``: what a user would run instead, measured in the same process after the
  two calls: :func:`numpyro.infer.util.initialize_model` on the same model and data
  (tracing and compiling the log density, the first step of NUTS), and its ratio to
  ``first`` (``numpyro/first`` > 1: compiling is cheaper than starting NUTS).

and, in other fresh processes that import :mod:`bayesnb.estimators` first (as a session
that already holds a scikit-learn estimator has), the time of that import (scikit-learn,
which imports pandas and ``scipy.stats``) and the first ``compile_model`` after it: the
compiler's own share of ``first``.

Medians over ``--repeat`` fresh processes, interleaved over sizes; the load average
before and after each size is printed (on a shared machine the seconds stretch with the
load: read the ratios).

Usage, from the repository root::

    python benchmarks/bench_compile.py                   # 16 and 30 columns, 1,000 rows, 5 repeats
    python benchmarks/bench_compile.py --columns 30 --repeat 3
    python benchmarks/bench_compile.py --no-preimport    # without the processes that import the estimators first
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np, jax, jax.numpy as jnp, numpyro, numpyro.distributions as dist
import bayesnb
t1 = time.perf_counter()
n_cols, n_rows, C = int(sys.argv[1]), int(sys.argv[2]), 2
nb = nc = n_cols // 3
ng = n_cols - nb - nc
rng = np.random.default_rng(0)
X = np.column_stack([rng.integers(0, 2, (n_rows, nb)), rng.normal(size=(n_rows, ng)),
                     rng.integers(0, 3, (n_rows, nc))]).astype(float)
y = np.arange(n_rows) % C

def model(X, y):
    pi = numpyro.sample("pi", dist.Dirichlet(jnp.ones(C)))
    with numpyro.plate("data", X.shape[0]):
        yy = numpyro.sample("y", dist.Categorical(pi), obs=y)
    for j in range(nb):
        with numpyro.plate(f"cb{j}", C):
            t = numpyro.sample(f"tb{j}", dist.Beta(1.0, 1.0))
        with numpyro.plate(f"db{j}", X.shape[0]):
            numpyro.sample(f"xb{j}", dist.Bernoulli(t[yy]), obs=X[:, j])
    for j in range(ng):
        with numpyro.plate(f"cg{j}", C):
            v = numpyro.sample(f"vg{j}", dist.InverseGamma(2.0, 1.0))
            m = numpyro.sample(f"mg{j}", dist.Normal(0.0, jnp.sqrt(v / 0.5)))
        with numpyro.plate(f"dg{j}", X.shape[0]):
            numpyro.sample(f"xg{j}", dist.Normal(m[yy], jnp.sqrt(v[yy])), obs=X[:, nb + j])
    for j in range(nc):
        with numpyro.plate(f"cc{j}", C):
            p = numpyro.sample(f"pc{j}", dist.Dirichlet(jnp.ones(3)))
        with numpyro.plate(f"dc{j}", X.shape[0]):
            numpyro.sample(f"xc{j}", dist.Categorical(p[yy]), obs=X[:, nb + ng + j].astype(int))

preimport = sys.argv[3] == "1"
if preimport:  # what compile_model imports first (scikit-learn, with pandas and scipy.stats)
    t = time.perf_counter()
    import bayesnb.estimators
    estimators = time.perf_counter() - t
t2 = time.perf_counter()
est = bayesnb.compile_model(model, X, y)
t3 = time.perf_counter()
bayesnb.compile_model(model, X, y)
t4 = time.perf_counter()
out = {"import": t1 - t0, "first": t3 - t2, "again": t4 - t3}
if preimport:
    out["estimators"] = estimators
else:
    from numpyro.infer.util import initialize_model
    initialize_model(jax.random.PRNGKey(0), model, model_args=(X, y))
    out["numpyro"] = time.perf_counter() - t4
assert len(est.fit(X, y).predict_proba(X[:2])) == 2
print(json.dumps(out))
"""


def run_child(n_cols, n_rows, preimport=False):
    out = subprocess.run([sys.executable, "-c", CHILD, str(n_cols), str(n_rows), str(int(preimport))],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--columns", default="16,30", help="comma-separated numbers of columns (default 16,30)")
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-preimport", action="store_true",
                        help="skip the processes that import bayesnb.estimators before the first compile")
    args = parser.parse_args(argv)
    sizes = [int(c) for c in args.columns.split(",")]
    runs = {n: [] for n in sizes}
    pre = {n: [] for n in sizes}
    load = {n: [] for n in sizes}
    for _ in range(args.repeat):
        for n in sizes:
            before = os.getloadavg()[0]
            runs[n].append(run_child(n, args.rows))
            if not args.no_preimport:
                pre[n].append(run_child(n, args.rows, preimport=True))
            load[n].append((before, os.getloadavg()[0]))
    print(f"compile_model: {args.rows} rows, medians of {args.repeat} fresh processes (seconds)\n")
    print("| columns | import | first compile | second compile | numpyro initialize_model | numpyro/first | "
          "import of bayesnb.estimators | first compile, estimators imported | load before-after |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for n in sizes:
        med = {k: statistics.median(r[k] for r in runs[n]) for k in runs[n][0]}
        lo = min(b for b, _ in load[n])
        hi = max(a for _, a in load[n])
        if pre[n]:
            est = statistics.median(r["estimators"] for r in pre[n])
            first = statistics.median(r["first"] for r in pre[n])
            split = f"{est:.2f} | {first:.2f}"
        else:
            split = "- | -"
        print(f"| {n} | {med['import']:.2f} | {med['first']:.2f} | {med['again']:.2f} | {med['numpyro']:.2f} | "
              f"{med['numpyro'] / med['first']:.2f} | {split} | {lo:.1f}-{hi:.1f} |")


if __name__ == "__main__":
    main()
