"""bayesnb vs scikit-learn where users are: real corpora at 2 and 20 classes, long
documents, small data and first calls.

Run from the repository root (or through ``run_all.py``, whose ``--only`` names the
sections ``real_text``, ``small_data`` and ``first_call``)::

    python benchmarks/real_corpora.py            # full sizes
    python benchmarks/real_corpora.py --quick    # small sizes, a smoke run
    python benchmarks/real_corpora.py --only small_data,first_call --repeat 7

Data:

* ``sms``: the SMS Spam Collection (2 classes), ``CountVectorizer(min_df=2)``, the
  corpus stacked on itself until it holds at least 10 M stored counts (8 copies with
  ``--quick``); fit and predict on the same rows.
* ``20ng``: 20 Newsgroups bydate (20 classes), read in place from the tar.gz, fit on
  the train split and predict the test split (4 groups with ``--quick``).
* ``sms-long``: long documents, each the sum of 200 SMS of the same class (counts in
  the hundreds to thousands: the regime of the exact predictive's large-count path);
  ``sms-long int64``: the exact predictive on the same documents as ``CountVectorizer``
  would give them (int64 counts in sorted rows, not the float64 values in unsorted rows
  that the sum leaves).
* ``iris``, ``digits``: scikit-learn's small data sets (GaussianNB; digits also as
  counts for MultinomialNB).

The shared corpora are read from ``../shared/data`` next to the repository; where that
folder is absent those rows are skipped with a message saying so.

Rows: ``fit``, ``predict_proba "mean"`` (scikit-learn's model: empirical class
frequencies, posterior-mean plug-in), the exact Dirichlet-multinomial predictive
(``estimate="predictive"``) against scikit-learn's plug-in ``predict_proba`` and
``predict_proba_draws`` against as many scikit-learn ``predict_proba`` calls. In
``small_data`` the draw rows are timed at a *new* ``n_draws`` on every call (the case
that used to recompile). ``first_call`` times, in a fresh interpreter each, the import
and the first fit + predict of each library. Every pair is interleaved call by call and
the table gives medians and ratios ``sk/bn`` (> 1: bayesnb faster).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_discrete  # noqa: E402
from suite import Row, memory, section, timed  # noqa: E402

import bayesnb  # noqa: E402

DATA = bench_discrete.DATA
SMS = DATA / "sms_spam_collection" / "SMSSpamCollection"
NEWSGROUPS = bench_discrete.NEWSGROUPS
# The full run stacks the SMS corpus until it holds this many stored counts.
SMS_MIN_NNZ = 10_000_000
# SMS per long document.
LONG_GROUP = 200
PARITY_TOL = 1e-10
N_DRAWS = 20


def _skipped(ctx, what, path):
    msg = f"{what} skipped: {path} not found (the shared corpora live in ../shared/data next to the repository)"
    print(f"  {msg}")
    ctx.notes.append(msg)


def load_sms(quick):
    """SMS counts (CountVectorizer(min_df=2)) stacked to >= 10 M stored counts (8 copies if quick)."""
    from sklearn.feature_extraction.text import CountVectorizer

    from bayesnb.io.datasets import read_labelled_text

    texts, labels = read_labelled_text(SMS)
    X = CountVectorizer(min_df=2).fit_transform(texts).tocsr()
    copies = 8 if quick else -(-SMS_MIN_NNZ // X.nnz)
    return sp.vstack([X] * copies, format="csr"), np.tile(labels, copies), X, labels


def long_documents(X, y, group=LONG_GROUP):
    """Each output row sums ``group`` consecutive rows of one class: long documents."""
    rows, labels = [], []
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        n = idx.size // group
        if n == 0:
            continue
        S = sp.csr_matrix((np.ones(n * group), idx[: n * group], np.arange(0, n * group + 1, group)), shape=(n, X.shape[0]))
        rows.append(S @ X)
        labels.append(np.full(n, c))
    return sp.vstack(rows, format="csr"), np.concatenate(labels)


def as_counted(X):
    """The long documents as ``CountVectorizer`` gives a corpus: int64 counts, each row's
    columns sorted and stored once (``long_documents``' sparse product leaves float64
    values in unsorted rows)."""
    X = X.astype(np.int64)
    X.sort_indices()
    return X


def long_counts_row(ctx, X_long, y_long):
    """The exact predictive on the same long documents in ``CountVectorizer``'s form
    (:func:`as_counted`): integer counts need no check for fractions, and canonical rows
    no search for an entry stored twice."""
    from sklearn import naive_bayes as sknb

    X = as_counted(X_long)
    print(f"\n[sms-long int64] the same {X.shape[0]} documents as int64 counts in sorted rows", flush=True)
    sk = sknb.MultinomialNB(alpha=1.0).fit(X, y_long)
    bn = bayesnb.MultinomialNB(alpha=1.0, class_prior=_prior(y_long), estimate="predictive").fit(X, y_long)
    return _row(ctx, "sms-long int64", "MultinomialNB", "exact DM vs sk predict_proba", lambda: sk.predict_proba(X), lambda: bn.predict_proba(X))


def _prior(y):
    _, counts = np.unique(y, return_counts=True)
    return counts / counts.sum()


def text_rows(ctx, name, X_train, y_train, X_test, draws_rows=2000):
    """fit / predict_proba "mean" / exact DM / predict_proba_draws for one corpus."""
    from sklearn import naive_bayes as sknb
    from sklearn.base import clone

    n_classes = np.unique(y_train).size
    print(
        f"\n[{name}] train {X_train.shape[0]} x {X_train.shape[1]} ({X_train.nnz} nnz), "
        f"predict {X_test.shape[0]} rows ({X_test.nnz} nnz, max count {X_test.max()}), {n_classes} classes",
        flush=True,
    )
    rows = []
    prior = _prior(y_train)
    for est, sk_cls, bn_cls in (
        ("MultinomialNB", sknb.MultinomialNB, bayesnb.MultinomialNB),
        ("BernoulliNB", sknb.BernoulliNB, bayesnb.BernoulliNB),
    ):
        sk, bn = sk_cls(alpha=1.0), bn_cls(alpha=1.0, class_prior=prior, estimate="mean")

        def fit_sk():
            return clone(sk).fit(X_train, y_train)

        def fit_bn():
            return clone(bn).fit(X_train, y_train)

        rows.append(_row(ctx, name, est, "fit", fit_sk, fit_bn))
        sk.fit(X_train, y_train)
        bn.fit(X_train, y_train)
        row = _row(ctx, name, est, 'predict_proba "mean"', lambda: sk.predict_proba(X_test), lambda: bn.predict_proba(X_test))
        gap = float(np.max(np.abs(row.timing["sk_out"] - row.timing["bn_out"])))
        assert gap <= PARITY_TOL, f"{name} {est}: estimate='mean' differs from scikit-learn by {gap:.3g}"
        rows.append(row)
        if est == "MultinomialNB":
            bn.set_params(estimate="predictive")
            rows.append(_row(ctx, name, est, "exact DM vs sk predict_proba", lambda: sk.predict_proba(X_test), lambda: bn.predict_proba(X_test)))
            bn.set_params(estimate="mean")
            Xd = X_test[:draws_rows]
            rows.append(
                _row(
                    ctx, f"{name}[:{Xd.shape[0]}]", est, f"predict_proba_draws({N_DRAWS})",
                    lambda: [sk.predict_proba(Xd) for _ in range(N_DRAWS)],
                    lambda: bn.predict_proba_draws(Xd, n_draws=N_DRAWS, random_state=0),
                    note=f"sklearn: {N_DRAWS} x predict_proba", mem=False,
                )
            )
    return rows


def _row(ctx, data, est, op, sk_fn, bn_fn, note="", mem=True, sec="real_text"):
    t = timed(sk_fn, bn_fn, ctx.repeat)
    m = memory(ctx, sk_fn, bn_fn) if mem else None
    first = t["bn_first"]
    sk = "       -" if t["sk"] is None else f"{t['sk']:8.4f}s sk/bn {t['sk'] / t['bn']:5.2f}"
    print(
        f"  {est:<13} {op:<30} sklearn {sk}  bayesnb {t['bn']:8.4f}s  "
        f"(bn first {first:.3f}s)" + (f"  peak MiB sk/bn {m[0][0]:.1f}/{m[1][0]:.1f}" if m else ""),
        flush=True,
    )
    return Row(sec, data, est, op, t, m, note)


@section("real_text", "MultinomialNB / BernoulliNB on SMS (2 classes, stacked), 20 Newsgroups (20) and long documents")
def real_text(ctx):
    rows = []
    if SMS.is_file():
        X, y, X1, y1 = load_sms(ctx.quick)
        rows += text_rows(ctx, f"sms x{X.shape[0] // X1.shape[0]}", X, y, X)
        copies = 1 if ctx.quick else 20  # 27 | 557 documents of ~3,000 tokens
        X_long, y_long = long_documents(sp.vstack([X1] * copies, format="csr"), np.tile(y1, copies))
        rows += text_rows(ctx, "sms-long", X_long, y_long, X_long)
        rows.append(long_counts_row(ctx, X_long, y_long))
    else:
        _skipped(ctx, "SMS rows", SMS)
    if NEWSGROUPS.is_file():
        X_train, y_train, X_test, _ = bench_discrete.load_20newsgroups(ctx.quick)
        rows += text_rows(ctx, "20ng-4" if ctx.quick else "20ng", X_train, y_train, X_test)
    else:
        _skipped(ctx, "20 Newsgroups rows", NEWSGROUPS)
    return rows


@section("small_data", "iris / digits: fit, predict_proba, and draws at a new n_draws on every call (no recompilation)")
def small_data(ctx):
    from sklearn import naive_bayes as sknb
    from sklearn.datasets import load_digits, load_iris

    rows = []
    Xi, yi = load_iris(return_X_y=True)
    Xd, yd = load_digits(return_X_y=True)
    for data, est, sk_cls, bn_cls, X, y in (
        ("iris", "GaussianNB", sknb.GaussianNB, bayesnb.GaussianNB, Xi, yi),
        ("digits", "GaussianNB", sknb.GaussianNB, bayesnb.GaussianNB, Xd, yd),
        ("digits", "MultinomialNB", sknb.MultinomialNB, bayesnb.MultinomialNB, Xd, yd),
    ):
        print(f"\n[{data}] {X.shape[0]} x {X.shape[1]}, {est}", flush=True)
        sk, bn = sk_cls(), bn_cls(estimate="mean")
        rows.append(_row(ctx, data, est, "fit", lambda: sk_cls().fit(X, y), lambda: bn_cls(estimate="mean").fit(X, y), mem=False, sec="small_data"))
        sk.fit(X, y)
        bn.fit(X, y)
        rows.append(_row(ctx, data, est, 'predict_proba "mean"', lambda: sk.predict_proba(X), lambda: bn.predict_proba(X), mem=False, sec="small_data"))
        # A different n_draws on every call: each would be a new compiled shape if draws
        # were taken in one block of n_draws.
        sizes = itertools.count(200, 37)
        rows.append(
            _row(
                ctx, data, est, "predict_proba_draws(new n≈200+)",
                None, lambda: bn.predict_proba_draws(X, n_draws=next(sizes), random_state=0),
                note="n_draws 200, 237, 274, ... (a new value each call): latency, no sklearn counterpart", mem=False, sec="small_data",
            )
        )
    return rows


_FIRST_CALL = r"""
import json, sys, time
t0 = time.perf_counter()
which = sys.argv[1]
if which == "sklearn":
    # The reference of issue 14: what a JAX user of scikit-learn's naive Bayes imports.
    import jax  # noqa: F401
    import sklearn.naive_bayes as nb
else:
    import bayesnb as nb
t_import = time.perf_counter() - t0
from sklearn.datasets import load_digits
X, y = load_digits(return_X_y=True)
t1 = time.perf_counter()
m = getattr(nb, sys.argv[2])().fit(X, y)
m.predict_proba(X)
t_first = time.perf_counter() - t1
out = {"import": t_import, "first": t_first}
if which == "bayesnb":
    t2 = time.perf_counter()
    m.predict_proba_draws(X, n_draws=200, random_state=0)
    out["draws"] = time.perf_counter() - t2
    t3 = time.perf_counter()
    m.predict_proba_draws(X[:1000], n_draws=300, random_state=1)
    out["draws_new"] = time.perf_counter() - t3
print(json.dumps(out))
"""


def _fresh(which, est):
    env = dict(os.environ)
    # The bayesnb imported here (e.g. an older checkout on PYTHONPATH, to compare).
    root = str(Path(bayesnb.__file__).resolve().parents[1])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    res = subprocess.run([sys.executable, "-c", _FIRST_CALL, which, est], capture_output=True, text=True, env=env, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


@section("first_call", "fresh interpreter: import, first fit + predict_proba, first draws (digits)")
def first_call(ctx):
    import statistics

    rows = []
    repeat = max(1, min(ctx.repeat, 3))
    for est in ("GaussianNB", "MultinomialNB"):
        runs = {"sklearn": [], "bayesnb": []}
        for _ in range(repeat):  # interleaved, one fresh process each
            for which in runs:
                runs[which].append(_fresh(which, est))
        med = {w: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for w, rs in runs.items()}
        sk, bn = med["sklearn"], med["bayesnb"]
        for op, sk_s, bn_s in (
            ("import (fresh process)", sk["import"], bn["import"]),
            ("first fit + predict_proba", sk["first"], bn["first"]),
            ("first predict_proba_draws(200)", None, bn["draws"]),
            ("then new n_draws=300, 1000 rows", None, bn["draws_new"]),
        ):
            t = {"sk": sk_s, "bn": bn_s, "bn_first": bn_s, "floor": None}
            print(f"  {est:<13} {op:<32} sklearn {'-' if sk_s is None else f'{sk_s:.3f}s':>7}  bayesnb {bn_s:.3f}s", flush=True)
            rows.append(Row("first_call", "digits", est, op, t, None, "import: `import jax; import sklearn.naive_bayes` vs `import bayesnb`" if op.startswith("import") else ""))
    return rows


_LATENCY = r"""
import json, sys, time
t0 = time.perf_counter()
import bayesnb
from bayesnb.analysis.uncertainty import decompose_uncertainty
out = {"import": time.perf_counter() - t0}
from sklearn.datasets import load_digits
X, y = load_digits(return_X_y=True)
m = getattr(bayesnb, sys.argv[1])().fit(X, y)
calls = {
    "predict_proba_draws": lambda n, rows: m.predict_proba_draws(X[:rows], n_draws=n, random_state=n),
    "predict_proba_interval": lambda n, rows: m.predict_proba_interval(X[:rows], 0.9, n_draws=n, random_state=n),
    "decompose_uncertainty": lambda n, rows: decompose_uncertainty(m, X[:rows], n_draws=n, random_state=n),
    "sample_posterior": lambda n, rows: m.sample_posterior(n, random_state=n),
    "sample": lambda n, rows: m.sample(rows, random_state=n),
}
for name, call in calls.items():
    times = []
    # first call; a new n_draws; a new row count; a new n_draws and row count again.
    for n, rows in ((200, 1797), (300, 1797), (300, 1000), (417, 613)):
        t = time.perf_counter()
        call(n, rows)
        times.append(time.perf_counter() - t)
    out[name] = times
print(json.dumps(out))
"""


@section("latency", "fresh interpreter: first call of each Bayesian method on digits, then new n_draws / row counts")
def latency(ctx):
    """Issue 14's compile-stall targets: a first call < 1 s after import, a new
    ``n_draws`` or row count < 0.2 s. One fresh process per repeat; medians."""
    import statistics

    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(bayesnb.__file__).resolve().parents[1]) + os.pathsep + env.get("PYTHONPATH", "")
    rows = []
    for est in ("MultinomialNB", "GaussianNB"):
        runs = []
        for _ in range(max(1, min(ctx.repeat, 3))):
            res = subprocess.run([sys.executable, "-c", _LATENCY, est], capture_output=True, text=True, env=env, check=True)
            runs.append(json.loads(res.stdout.strip().splitlines()[-1]))
        for name in [k for k in runs[0] if k != "import"]:
            med = [statistics.median(r[name][i] for r in runs) for i in range(4)]
            first, later = med[0], max(med[1:])
            print(
                f"  {est:<13} {name:<24} first {first:6.3f}s  new n_draws / rows (worst of 3) {later:6.3f}s"
                f"  [{'ok' if first < 1.0 and later < 0.2 else 'MISS'}: < 1 s, < 0.2 s]",
                flush=True,
            )
            t = {"sk": None, "bn": later, "bn_first": first, "floor": None}
            rows.append(Row("latency", "digits", est, f"{name} (new n / rows)", t, None, ""))
    ctx.notes.append("latency: 'bn 1st s' is the first call after import; 'bayesnb s' the worst of three later calls with a new n_draws and/or row count")
    return rows


def main(argv=None):
    import suite

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default=None, help="comma-separated: real_text, small_data, first_call, latency")
    parser.add_argument("--repeat", type=int, default=None)
    parser.add_argument("--no-memory", action="store_true")
    args = parser.parse_args(argv)
    names = ["real_text", "small_data", "first_call", "latency"] if args.only is None else [s.strip() for s in args.only.split(",")]
    repeat = args.repeat if args.repeat is not None else (2 if args.quick else 5)
    ctx = suite.Context(quick=args.quick, repeat=repeat, memory=not args.no_memory)
    bench_discrete.describe_machine()
    rows = []
    started = time.perf_counter()
    for name in names:
        print(f"\n=== {name}: {suite.SECTIONS[name].description}", flush=True)
        rows += suite.SECTIONS[name].fn(ctx)
    load = os.getloadavg() if hasattr(os, "getloadavg") else ()
    print(f"\nSummary ({time.perf_counter() - started:.0f}s; load average now {tuple(round(x, 2) for x in load)}):\n")
    suite.print_table(rows)
    for r in rows:
        if r.note:
            print(f"note ({r.data}, {r.estimator}, {r.operation}): {r.note}")
    for note in ctx.notes:
        print(f"note: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
