"""Time and peak memory of posterior draws and credible intervals on a long sparse corpus.

Issue 19 measured ``predict_proba_draws(n_draws=1000)`` on a 20,000 x 50,000 CSR matrix
(1,000,000 stored counts, 2 classes) at 47 s and +1.5 GB of RSS beyond its 305 MiB
result, and ``predict_proba_interval`` at 515 s and +1.36 GB for a 1 MiB result, while
the README promises temporaries bounded by 32 MiB (``CHUNK_ENTRIES``). This script (and
the ``draws_memory`` section of ``run_all.py``) measures, on that shape (and for the
interval also with a hyperprior on ``alpha``, whose posterior is a mixture):

* time: the median of the repeats, and its ratio to one scikit-learn ``predict_proba``
  call on the same matrix measured in the same run, interleaved (``sk/bn`` as in the
  rest of the suite; the cost of ``n_draws`` draws against one plug-in prediction), and
  the cost per draw in plug-in predictions;
* memory: the ``tracemalloc`` peak of one call (Python-level allocations, NumPy buffers
  included) and the increase of the RSS high-water mark (everything, XLA buffers and
  SciPy scratch included, Linux), each minus the size of the result: the temporaries,
  to compare with the documented bound.

Issue 40 adds :func:`~bayesnb.analysis.uncertainty.decompose_uncertainty` (its result:
three entropies and the mean probabilities per row) and corpora of more classes
(``--classes 2,20``: class ``c`` shifts the Zipf words by ``7 c``, the two-class corpus is
the one of issue 19). The draws themselves are ``n_draws x n_docs x n_classes`` floats
(3 GiB at 20 classes), so ``predict_proba_draws`` runs at 2 classes only.

Usage, from the repository root::

    python benchmarks/draws_memory.py            # 20,000 x 50,000, n_draws=1000
    python benchmarks/draws_memory.py --quick    # 5,000 x 20,000, n_draws=200
    python benchmarks/draws_memory.py --repeat 1 --only interval   # full size, one case
    python benchmarks/draws_memory.py --repeat 1 --only interval,decompose --classes 2,20

Every row's note ends with the load average before and after it (``os.getloadavg()``):
on a shared machine the seconds stretch with the load, the memory figures do not.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from suite import Row, memory, section, timed  # noqa: E402


def corpus(n_docs, n_words, nnz, seed=0, n_classes=2):
    """A CSR matrix of ``nnz`` stored counts (Zipf words, class ``c``'s shifted by ``7 c``)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n_docs)
    keys = np.empty(0, dtype=np.int64)
    while keys.size < nnz:  # distinct (row, word) pairs: nnz stored entries exactly
        rows = rng.integers(0, n_docs, nnz)
        ranks = np.minimum((rng.pareto(0.8, nnz) * 50).astype(np.int64), n_words - 1)
        cols = (ranks + 7 * y[rows]) % n_words
        keys = np.unique(np.concatenate([keys, rows.astype(np.int64) * n_words + cols]))
    keys = np.sort(rng.choice(keys, nnz, replace=False))
    rows, cols = np.divmod(keys, n_words)
    X = sp.csr_matrix((rng.integers(1, 4, nnz).astype(np.float64), (rows, cols)), shape=(n_docs, n_words))
    return X, y


def _load(avg):
    return "(" + ", ".join(f"{v:.2f}" for v in avg) + ")"


def sizes(quick):
    return (5_000, 20_000, 250_000, 200) if quick else (20_000, 50_000, 1_000_000, 1000)


def measure(ctx):
    """The rows of the section: every class count of ``ctx.classes`` (default 2)."""
    rows = []
    for n_classes in getattr(ctx, "classes", None) or (2,):
        rows += _measure(ctx, n_classes)
    return rows


def _measure(ctx, n_classes):
    """Draws, intervals and the uncertainty decomposition: time and memory against the result size."""
    from sklearn.naive_bayes import MultinomialNB as SkMultinomialNB

    import bayesnb
    from bayesnb.analysis.uncertainty import CHUNK_ENTRIES, decompose_uncertainty

    n_docs, n_words, nnz, n_draws = sizes(ctx.quick)
    n_draws = getattr(ctx, "draws", None) or n_draws
    X, y = corpus(n_docs, n_words, nnz, n_classes=n_classes)
    sk = SkMultinomialNB().fit(X, y)
    bn = bayesnb.MultinomialNB().fit(X, y)
    k = n_classes
    data = f"{n_docs // 1000}k x {n_words // 1000}k"
    bound_mib = CHUNK_ENTRIES * 8 / 2**20
    rows = []
    cases = ()
    if k == 2:  # the draws are n_draws x n_docs x k floats: 3 GiB at 20 classes
        cases += (
            (
                f"predict_proba_draws({n_draws})",
                lambda: bn.predict_proba_draws(X, n_draws=n_draws, random_state=0),
                n_draws * n_docs * k * 8 / 2**20,
            ),
        )
    cases += (
        (
            f"predict_proba_interval(0.9, {n_draws})",
            lambda: bn.predict_proba_interval(X, 0.9, n_draws=n_draws, random_state=0),
            2 * n_docs * k * 8 / 2**20,
        ),
        (
            # total, aleatoric, epistemic (one each per row) and the mean probabilities.
            f"decompose_uncertainty({n_draws})",
            lambda: decompose_uncertainty(bn, X, n_draws=n_draws, random_state=0),
            n_docs * (k + 3) * 8 / 2**20,
        ),
    )
    # A hyperprior on alpha: the posterior is the mixture over its NUTS draws, each
    # component refitted and drawn in turn (the engine holds one at a time).
    hyper = None
    if not getattr(ctx, "only", None) or any("Gamma" in o for o in ctx.only):
        import numpyro.distributions as dist

        hyper = bayesnb.MultinomialNB(alpha=dist.Gamma(2.0, 1.0), hyper_warmup=200, hyper_draws=200, random_state=0).fit(X, y)
        cases += (
            (
                f"predict_proba_interval(0.9, {n_draws}), alpha ~ Gamma(2, 1)",
                lambda: hyper.predict_proba_interval(X, 0.9, n_draws=n_draws, random_state=0),
                2 * n_docs * k * 8 / 2**20,
            ),
        )
    for operation, fn, result_mib in cases:
        only = getattr(ctx, "only", None)  # set by main's --only; run_all runs both
        if only and not any(o in operation for o in only):
            continue
        load_before = os.getloadavg()
        t = timed(lambda: sk.predict_proba(X), fn, ctx.repeat)
        mem = memory(ctx, lambda: sk.predict_proba(X), fn)
        per_draw = t["bn"] / n_draws / t["sk"]
        note = (
            f"{X.nnz:,} stored counts, {k} classes; result {result_mib:.1f} MiB; "
            f"bayesnb {t['bn']:.2f}s = {per_draw:.2f} sklearn predict_proba calls per draw"
        )
        if mem is not None:
            (_, _), (peak, rss) = mem
            extra = f"; temporaries beyond the result: tracemalloc {peak - result_mib:.1f} MiB"
            if rss is not None:
                extra += f", RSS high-water {rss - result_mib:.1f} MiB"
            note += extra + f" (documented bound {bound_mib:.0f} MiB)"
        # Two cores shared with other jobs stretch the seconds: say how loaded the machine was.
        note += f"; load average (1, 5, 15 min) before {_load(load_before)}, after {_load(os.getloadavg())}"
        print(f"  {operation}: {note}", flush=True)
        rows.append(Row("draws_memory", f"{data}, {k} cl", "MultinomialNB", operation, t, mem, note))
    return rows


@section("draws_memory", "predict_proba_draws / predict_proba_interval on a long sparse corpus: time and peak memory")
def draws_memory(ctx):
    return measure(ctx)


def main(argv=None):
    import suite

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5,000 x 20,000 and 200 draws")
    parser.add_argument("--repeat", type=int, default=None, help="timed calls after the first (default 3; 1 with --quick)")
    parser.add_argument(
        "--only",
        default=None,
        help="comma-separated cases to run: draws, interval, decompose, hyper (default all)",
    )
    parser.add_argument(
        "--draws",
        type=int,
        default=None,
        help="posterior draws per call (default 1000; 200 with --quick). Fewer draws take less time; the "
        "temporaries stay under the same bound, but a block of rows x draws may be smaller, so their "
        "memory is a lower estimate of the 1000-draw one",
    )
    parser.add_argument(
        "--classes",
        default="2",
        help="comma-separated numbers of classes of the corpus (default 2; issue 40 measures 2,20)",
    )
    args = parser.parse_args(argv)
    repeat = args.repeat if args.repeat is not None else (1 if args.quick else 3)
    ctx = suite.Context(quick=args.quick, repeat=repeat)
    ctx.only = None
    ctx.classes = tuple(int(c) for c in args.classes.split(","))
    ctx.draws = args.draws
    if args.only:
        names = {
            "draws": "predict_proba_draws",
            "interval": "predict_proba_interval(0.9",
            "decompose": "decompose_uncertainty",
            "hyper": "Gamma",
        }
        ctx.only = [names[o.strip()] for o in args.only.split(",")]
    rows = measure(ctx)
    print()
    suite.print_table(rows)
    for r in rows:
        print(f"note ({r.operation}): {r.note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
