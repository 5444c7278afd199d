"""The real-text rows at the edge of their targets, timed again and again in one process.

``run_all.py`` times each row once (a median of ``--repeat`` interleaved calls); a ratio
near its target moves between runs with the machine. This script repeats the same
interleaved timing (``bench_discrete.time_pair``: a ``gc.collect()`` before every call,
scikit-learn and bayesnb alternating) ``--rounds`` times per row and prints each round's
ratio, so that a figure quoted "alone" comes with its spread and a command. With
``--back-to-back`` the calls are also timed without the ``gc.collect()``, one after the
other (the state a loop of predictions is in).

    python benchmarks/repeat_rows.py                          # every row, 3 rounds of 7
    python benchmarks/repeat_rows.py --rows 20ng-exact,long-exact --rounds 5
    python benchmarks/repeat_rows.py --back-to-back

Rows (MultinomialNB, ``alpha=1``, fitted as in ``real_corpora.text_rows``):

* ``20ng-mean``, ``20ng-exact``: 20 Newsgroups bydate, fit on train, ``predict_proba`` of
  the test split, ``estimate="mean"`` and the exact Dirichlet-multinomial
  (``estimate="predictive"``) against scikit-learn's ``predict_proba``;
* ``long-fit``, ``long-mean``, ``long-exact``: the 556 long documents of
  ``real_corpora.long_documents`` (200 SMS of one class each);
* ``longint-exact``: the same documents as ``CountVectorizer`` gives counts
  (``real_corpora.as_counted``: int64, sorted rows).

The corpora are read from ``../shared/data``; a row whose corpus is absent is skipped
with a message.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_discrete  # noqa: E402
import real_corpora  # noqa: E402

ROWS = ("20ng-mean", "20ng-exact", "long-fit", "long-mean", "long-exact", "longint-exact")


def _back_to_back(sk_fn, bn_fn, repeat):
    """Medians of ``repeat`` calls of each, alternating, with no collection between."""
    sk_fn(), bn_fn()
    sk, bn = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        sk_fn()
        sk.append(time.perf_counter() - t)
        t = time.perf_counter()
        bn_fn()
        bn.append(time.perf_counter() - t)
    return statistics.median(sk), statistics.median(bn)


def _corpora(rows):
    """{'20ng': (X_train, y_train, X_test), 'long': (X, y, X), 'longint': ...} for the rows asked for."""
    out = {}
    if any(r.startswith("20ng") for r in rows):
        if bench_discrete.NEWSGROUPS.is_file():
            X_train, y_train, X_test, _ = bench_discrete.load_20newsgroups(False)
            out["20ng"] = (X_train, y_train, X_test)
        else:
            print(f"20ng rows skipped: {bench_discrete.NEWSGROUPS} not found")
    if any(r.startswith("long") for r in rows):  # long-* and longint-*
        if real_corpora.SMS.is_file():
            _, _, X1, y1 = real_corpora.load_sms(True)
            X, y = real_corpora.long_documents(sp.vstack([X1] * 20, format="csr"), np.tile(y1, 20))
            out["long"] = (X, y, X)
            if any(r.startswith("longint") for r in rows):
                Xi = real_corpora.as_counted(X)
                out["longint"] = (Xi, y, Xi)
        else:
            print(f"long rows skipped: {real_corpora.SMS} not found")
    return out


def _pair(corpus, op):
    """The (scikit-learn, bayesnb) callables of one row."""
    from sklearn import naive_bayes as sknb
    from sklearn.base import clone

    import bayesnb

    X_train, y_train, X_test = corpus
    _, counts = np.unique(y_train, return_counts=True)
    sk = sknb.MultinomialNB(alpha=1.0)
    bn = bayesnb.MultinomialNB(alpha=1.0, class_prior=counts / counts.sum(), estimate="mean")
    if op == "fit":
        return (lambda: clone(sk).fit(X_train, y_train)), (lambda: clone(bn).fit(X_train, y_train))
    sk.fit(X_train, y_train)
    bn.fit(X_train, y_train)
    if op == "exact":
        bn.set_params(estimate="predictive")
    return (lambda: sk.predict_proba(X_test)), (lambda: bn.predict_proba(X_test))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated, of {', '.join(ROWS)}")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=7, help="timed calls per round (after one untimed)")
    parser.add_argument("--back-to-back", action="store_true", help="also time without gc.collect() between calls")
    args = parser.parse_args(argv)
    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    unknown = sorted(set(rows) - set(ROWS))
    if unknown:
        parser.error(f"unknown rows {unknown}; choose from {', '.join(ROWS)}")
    print(f"load average at the start: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    corpora = _corpora(rows)
    for row in rows:
        name, op = row.split("-")
        if name not in corpora:
            continue
        sk_fn, bn_fn = _pair(corpora[name], op)
        sk_fn(), bn_fn()  # first calls (caches, tables) out of the way
        ratios = []
        line = []
        for _ in range(args.rounds):
            t = bench_discrete.time_pair(sk_fn, bn_fn, args.repeat)
            ratios.append(t["sk"] / t["bn"])
            line.append(f"{t['sk'] * 1e3:.1f}/{t['bn'] * 1e3:.1f} ms = {ratios[-1]:.2f}")
        print(f"{row:<11} sk/bn per round: " + "; ".join(line) + f"  (median {statistics.median(ratios):.2f})", flush=True)
        if args.back_to_back:
            sk, bn = _back_to_back(sk_fn, bn_fn, args.repeat * args.rounds)
            print(f"{'':<11} back to back: {sk * 1e3:.1f}/{bn * 1e3:.1f} ms = {sk / bn:.2f}", flush=True)
    print(f"load average at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
