"""Does each private SciPy kernel of bayesnb/core/_private_api.py earn its place (> 20%)?

Interleaved rounds on real corpora, each kernel switched to its public path in turn
(the module's names set to None), medians reported:

* 20 Newsgroups by date (``CountVectorizer()``): ``MultinomialNB().fit`` and
  ``predict_proba`` (posterior mean and exact predictive);
* SMS Spam Collection (``CountVectorizer(min_df=2)``): peak traced memory of the class
  totals (``bayesnb.core.stats.count_stats``).

Usage: ``nice -n 10 python benchmarks/private_api.py [--rounds 5]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bayesnb  # noqa: E402
from bayesnb.core import _private_api, stats  # noqa: E402

KERNELS = ("_csr_matvecs", "_csc_matvecs")


def _timed(fn, off):
    saved = {k: getattr(_private_api, k) for k in KERNELS}
    try:
        if off:
            setattr(_private_api, off, None)
        t = time.perf_counter()
        tracemalloc.start()
        fn()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return time.perf_counter() - t, peak
    finally:
        for k, v in saved.items():
            setattr(_private_api, k, v)


def compare(label, fn, rounds):
    fn()  # compiled once, caches warm
    times, peaks = {None: [], **{k: [] for k in KERNELS}}, {}
    for _ in range(rounds):
        for off in times:
            dt, peak = _timed(fn, off)
            times[off].append(dt)
            peaks[off] = peak
    base = statistics.median(times[None])
    line = f"{label}: private {base * 1e3:.1f} ms, peak {peaks[None] / 2**20:.2f} MiB"
    for k in KERNELS:
        m = statistics.median(times[k])
        line += f" | public {k.strip('_')} {m * 1e3:.1f} ms ({(m / base - 1) * 100:+.0f}%), peak {peaks[k] / 2**20:.2f} MiB ({(peaks[k] / peaks[None] - 1) * 100:+.0f}%)"
    print(line, flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    from bench_discrete import load_20newsgroups
    from real_corpora import load_sms

    X, y, X_test, _ = load_20newsgroups(quick=False)
    print(f"20 Newsgroups: train {X.shape}, {X.nnz} stored counts; test {X_test.shape}", flush=True)
    mean = bayesnb.MultinomialNB(estimate="mean").fit(X, y)
    pred = bayesnb.MultinomialNB().fit(X, y)
    compare("20NG MultinomialNB().fit", lambda: bayesnb.MultinomialNB().fit(X, y), args.rounds)
    compare("20NG predict_proba (mean)", lambda: mean.predict_proba(X_test), args.rounds)
    compare("20NG predict_proba (predictive)", lambda: pred.predict_proba(X_test), args.rounds)
    _, _, S, s = load_sms(quick=True)
    codes = np.unique(s, return_inverse=True)[1]
    print(f"SMS: {S.shape}, {S.nnz} stored counts", flush=True)
    compare("SMS count_stats (class totals)", lambda: stats.count_stats(S, codes, 2), args.rounds)


if __name__ == "__main__":
    main()
