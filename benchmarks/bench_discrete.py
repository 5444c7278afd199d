"""bayesnb vs scikit-learn on sparse text counts: fit, plug-in and exact predictive.

Run from the repository root::

    python benchmarks/bench_discrete.py            # full sizes (a few minutes)
    python benchmarks/bench_discrete.py --quick    # small sizes, a smoke run
    python benchmarks/bench_discrete.py --parts zipf --repeat 7

Every timing is taken in this run, scikit-learn and bayesnb interleaved call by call, so
the ratios (scikit-learn time / bayesnb time: > 1 means bayesnb is faster) are fair even
on a loaded machine whose absolute times drift. See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import scipy
import scipy.sparse as sp
import sklearn
from sklearn import naive_bayes as sknb
from sklearn.base import clone

import bayesnb

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
NEWSGROUPS = DATA / "20newsgroups_bydate" / "20news-bydate.tar.gz"
PARITY_TOL = 1e-10


# ----------------------------------------------------------------------------- data


def make_zipf_corpus(n_docs, n_words, n_classes=20, tokens_per_doc=175, exponent=1.1, own_share=0.03, seed=0):
    """Synthetic bag-of-words corpus: Zipf word frequencies, class-dependent vocabularies.

    Each document draws a Poisson(``tokens_per_doc``) number of tokens. A token's rank
    follows a (continuous, truncated) Zipf law with ``exponent``, sampled by inverting
    its CDF in closed form (no search); the rank is mapped to a word through the shared
    ranking, or, with probability ``own_share``, through the document's class-specific
    ranking (a random permutation of the vocabulary per class). Word frequencies are
    therefore Zipf overall while each class has its own favourite words, which makes
    classification non-trivial (neither chance nor perfect).

    Returns
    -------
    X : CSR matrix of int64 counts, shape (n_docs, n_words), canonical (sorted indices)
    y : int ndarray of shape (n_docs,)
    """
    rng = np.random.default_rng(seed)
    perms = np.stack([rng.permutation(n_words) for _ in range(n_classes)]).astype(np.int32)
    y = rng.integers(0, n_classes, n_docs)
    lengths = rng.poisson(tokens_per_doc, n_docs)
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    n_tokens = int(indptr[-1])
    s1 = 1.0 - exponent
    u = rng.random(n_tokens)
    rank = ((float(n_words) ** s1 - 1.0) * u + 1.0) ** (1.0 / s1)
    word = np.minimum(rank.astype(np.int32) - 1, n_words - 1)
    own = rng.random(n_tokens, dtype=np.float32) < own_share
    word[own] = perms[np.repeat(y, lengths)[own], word[own]]
    X = sp.csr_matrix((np.ones(n_tokens, dtype=np.int64), word, indptr), shape=(n_docs, n_words))
    X.sum_duplicates()  # token list -> counts, sorted indices
    return X, y


def load_20newsgroups(quick):
    from sklearn.feature_extraction.text import CountVectorizer

    from bayesnb.io.datasets import read_20newsgroups_bydate

    categories = ["alt.atheism", "comp.graphics", "sci.space", "talk.religion.misc"] if quick else None
    train_text, y_train = read_20newsgroups_bydate(NEWSGROUPS, subset="train", categories=categories)
    test_text, y_test = read_20newsgroups_bydate(NEWSGROUPS, subset="test", categories=categories)
    vec = CountVectorizer()
    X_train = vec.fit_transform(train_text).tocsr()
    X_test = vec.transform(test_text).tocsr()
    return X_train, y_train, X_test, y_test


# ----------------------------------------------------------------------------- measuring


def _release_free_memory():
    """Give the allocator's free pages back to the OS (glibc), so that the next call's
    allocations show up in the RSS instead of reusing pages freed by an earlier call."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _rss_hwm_reset():
    """Reset the kernel's RSS high-water mark of this process (Linux); False if impossible."""
    _release_free_memory()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _rss_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return None


def measure_memory(fn):
    """Peak memory of one call: (tracemalloc peak MiB, RSS high-water increase MiB or None).

    tracemalloc counts Python-level allocations, numpy arrays included (numpy reports its
    buffers to it), but not C++ scratch inside scipy's kernels nor XLA buffers; the RSS
    high-water mark (reset through /proc/self/clear_refs, Linux) sees everything the
    process touches, at page granularity. The two are taken in two separate calls.
    """
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    base, _ = tracemalloc.get_traced_memory()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    traced = (peak - base) / 2**20
    gc.collect()
    rss = None
    if _rss_hwm_reset():
        before = _rss_kib("VmRSS")
        fn()
        hwm = _rss_kib("VmHWM")
        if before is not None and hwm is not None:
            rss = max(hwm - before, 0) / 1024
    return traced, rss


def time_pair(sk_fn, bn_fn, repeat, floor_fn=None):
    """Interleaved timings. Returns dict with first-call and steady-state medians.

    With ``floor_fn`` (a plain NumPy/SciPy implementation of the same computation) it
    is timed in the same rounds, and ``"floor"`` holds its median (else None).
    """
    sk_times, bn_times, floor_times = [], [], []
    sk_out = bn_out = None
    for _ in range(repeat + 1):  # the first round is reported apart (JAX compilation, caches)
        gc.collect()
        t = time.perf_counter()
        sk_out = sk_fn()
        sk_times.append(time.perf_counter() - t)
        gc.collect()
        t = time.perf_counter()
        bn_out = bn_fn()
        bn_times.append(time.perf_counter() - t)
        if floor_fn is not None:
            gc.collect()
            t = time.perf_counter()
            floor_fn()
            floor_times.append(time.perf_counter() - t)
    return {
        "sk_first": sk_times[0],
        "bn_first": bn_times[0],
        "sk": statistics.median(sk_times[1:]),
        "bn": statistics.median(bn_times[1:]),
        "floor": statistics.median(floor_times[1:]) if floor_fn is not None else None,
        "sk_all": sk_times[1:],
        "bn_all": bn_times[1:],
        "sk_out": sk_out,
        "bn_out": bn_out,
    }


ROWS = []


def record(data, family, op, timing, memory):
    ROWS.append((data, family, op, timing, memory))
    sk, bn = timing["sk"], timing["bn"]
    (sk_tm, sk_rss), (bn_tm, bn_rss) = memory
    print(
        f"  {family:<13} {op:<26} sklearn {sk:8.3f}s  bayesnb {bn:8.3f}s  ratio {sk / bn:5.2f}  "
        f"(first call {bn_first(timing):.3f}s)  peak MiB sk/bn {sk_tm:7.1f}/{bn_tm:7.1f}",
        flush=True,
    )


def bn_first(timing):
    return timing["bn_first"]


def _fmt_rss(v):
    return "   n/a" if v is None else f"{v:6.1f}"


def print_table():
    print()
    print("Summary (wall-clock medians over the repeats; ratio = sklearn / bayesnb, > 1: bayesnb faster;")
    print("peak = tracemalloc peak of the call, rss = increase of the RSS high-water mark, MiB)")
    head = (
        f"| {'data':<10} | {'estimator':<13} | {'operation':<26} | {'sklearn s':>9} | {'bayesnb s':>9} | "
        f"{'ratio':>5} | {'bn 1st s':>8} | {'sk peak':>7} | {'bn peak':>7} | {'sk rss':>6} | {'bn rss':>6} |"
    )
    print(head)
    print("|" + "|".join("-" * (len(c)) for c in head.split("|")[1:-1]) + "|")
    for data, family, op, t, ((sk_tm, sk_rss), (bn_tm, bn_rss)) in ROWS:
        print(
            f"| {data:<10} | {family:<13} | {op:<26} | {t['sk']:9.3f} | {t['bn']:9.3f} | "
            f"{t['sk'] / t['bn']:5.2f} | {t['bn_first']:8.3f} | {sk_tm:7.1f} | {bn_tm:7.1f} | "
            f"{_fmt_rss(sk_rss)} | {_fmt_rss(bn_rss)} |"
        )


# ----------------------------------------------------------------------------- plain NumPy/SciPy


def _binary(X):
    Xb = X.copy()
    Xb.data = (Xb.data > 0).astype(np.float64)
    Xb.eliminate_zeros()
    return Xb


def floor_fit(X, y, family, alpha=1.0):
    """The same fit written directly in NumPy/SciPy: one-hot class matrix product, logs."""
    classes, yi = np.unique(y, return_inverse=True)
    n = yi.size
    Y = sp.csr_matrix((np.ones(n), yi, np.arange(n + 1)), shape=(n, classes.size))
    if family == "BernoulliNB":
        X = _binary(X)
    fc = np.asarray((Y.T @ X).todense())
    cc = np.bincount(yi, minlength=classes.size).astype(np.float64)
    log_prior = np.log(cc / n)
    if family == "MultinomialNB":
        smoothed = fc + alpha
        return log_prior, np.log(smoothed) - np.log(smoothed.sum(axis=1, keepdims=True)), smoothed
    p = (fc + alpha) / (cc[:, None] + 2 * alpha)
    return log_prior, np.log(p), np.log1p(-p)


def floor_proba(X, params, family):
    """Plug-in class probabilities written directly: one sparse product, logsumexp."""
    from scipy.special import logsumexp

    log_prior, log_p, other = params
    if family == "MultinomialNB":
        jll = X @ log_p.T + log_prior
    else:
        jll = _binary(X) @ (log_p - other).T + other.sum(axis=1) + log_prior
    return np.exp(jll - logsumexp(jll, axis=1, keepdims=True))


def floor_dm(X, params, rows_per_block=2000):
    """Exact Dirichlet-multinomial written directly: gammaln per stored entry and class."""
    from scipy.special import gammaln, logsumexp

    log_prior, _, a = params
    total = a.sum(axis=1)
    n = X.shape[0]
    jll = np.empty((n, a.shape[0]))
    for r0 in range(0, n, rows_per_block):
        Xb = X[r0 : r0 + rows_per_block]
        cols, v = Xb.indices, Xb.data.astype(np.float64)
        ac = a[:, cols].T
        terms = gammaln(ac + v[:, None]) - gammaln(ac)
        per_row = np.zeros((Xb.shape[0], a.shape[0]))
        lengths = np.diff(Xb.indptr)
        full = lengths > 0
        per_row[full] = np.add.reduceat(terms, Xb.indptr[:-1][full], axis=0)
        doc = np.asarray(Xb.sum(axis=1), dtype=np.float64)
        jll[r0 : r0 + rows_per_block] = per_row - (gammaln(total + doc) - gammaln(total))
    jll += log_prior
    return np.exp(jll - logsumexp(jll, axis=1, keepdims=True))


# Above this many stored entries the direct gammaln form (the plain implementation of the
# exact predictive) takes minutes; it is then not timed.
FLOOR_DM_MAX_NNZ = 3_000_000


# ----------------------------------------------------------------------------- one data set


def bench_dataset(name, X_train, y_train, X_test, y_test, repeat, in_sample, floors=False):
    classes, counts = np.unique(y_train, return_counts=True)
    prior = counts / counts.sum()
    print(
        f"\n[{name}] train {X_train.shape[0]} x {X_train.shape[1]} ({X_train.nnz / X_train.shape[0]:.1f} nnz/row, "
        f"dtype {X_train.dtype}), predict on {X_test.shape[0]} rows ({X_test.nnz} nnz), {classes.size} classes",
        flush=True,
    )
    accuracy = {}
    if floors:
        # The plain implementations compute the same numbers (checked once, to 1e-9).
        for family in ("MultinomialNB", "BernoulliNB"):
            params = floor_fit(X_train, y_train, family)
            rows = slice(0, min(X_test.shape[0], 2000))
            sk_model = getattr(sknb, family)(alpha=1.0).fit(X_train, y_train)
            gap = np.max(np.abs(floor_proba(X_test[rows], params, family) - sk_model.predict_proba(X_test[rows])))
            assert gap < 1e-9, f"plain {family} differs from scikit-learn by {gap:.3g}"
    for family, sk_cls, bn_cls in (
        ("MultinomialNB", sknb.MultinomialNB, bayesnb.MultinomialNB),
        ("BernoulliNB", sknb.BernoulliNB, bayesnb.BernoulliNB),
    ):
        sk = sk_cls(alpha=1.0)
        # estimate="mean" with the empirical class frequencies is scikit-learn's model.
        bn = bn_cls(alpha=1.0, class_prior=prior, estimate="mean")

        # Each fit on a fresh clone: the call's own work and memory, not the release of an
        # earlier fit's state.
        floor = (lambda: floor_fit(X_train, y_train, family)) if floors else None
        t = time_pair(
            lambda: clone(sk).fit(X_train, y_train), lambda: clone(bn).fit(X_train, y_train), repeat, floor
        )
        m = (
            measure_memory(lambda: clone(sk).fit(X_train, y_train)),
            measure_memory(lambda: clone(bn).fit(X_train, y_train)),
        )
        record(name, family, "fit", t, m)
        sk.fit(X_train, y_train)
        bn.fit(X_train, y_train)

        bn.set_params(estimate="mean")
        params = floor_fit(X_train, y_train, family)
        floor = (lambda: floor_proba(X_test, params, family)) if floors else None
        t = time_pair(lambda: sk.predict_proba(X_test), lambda: bn.predict_proba(X_test), repeat, floor)
        m = (measure_memory(lambda: sk.predict_proba(X_test)), measure_memory(lambda: bn.predict_proba(X_test)))
        sk_proba, bn_proba = t["sk_out"], t["bn_out"]
        gap = float(np.max(np.abs(sk_proba - bn_proba)))
        assert np.array_equal(bn.classes_, sk.classes_)
        assert gap <= PARITY_TOL, f"{name} {family}: estimate='mean' differs from scikit-learn by {gap:.3g}"
        record(name, family, 'predict_proba "mean"', t, m)
        print(f"    parity with scikit-learn: max |p_bayesnb - p_sklearn| = {gap:.2e} (<= {PARITY_TOL:g})")
        accuracy[f"{family} sklearn"] = np.mean(sk.classes_[sk_proba.argmax(1)] == y_test)

        # Exact posterior predictive (Dirichlet-multinomial for counts; for Bernoulli it is
        # the posterior-mean plug-in again, recomputed from the posterior on every call).
        bn.set_params(estimate="predictive")
        if not floors:
            floor = None
        elif family == "MultinomialNB":
            floor = (lambda: floor_dm(X_test, params)) if X_test.nnz <= FLOOR_DM_MAX_NNZ else None
        else:
            floor = lambda: floor_proba(X_test, params, family)  # noqa: E731
        t = time_pair(lambda: sk.predict_proba(X_test), lambda: bn.predict_proba(X_test), repeat, floor)
        m = (measure_memory(lambda: sk.predict_proba(X_test)), measure_memory(lambda: bn.predict_proba(X_test)))
        label = "predict_proba exact DM" if family == "MultinomialNB" else 'predict_proba "predictive"'
        record(name, family, label, t, m)
        if family == "BernoulliNB":
            gap = float(np.max(np.abs(t["bn_out"] - bn_proba)))
            assert gap <= PARITY_TOL, f"Bernoulli predictive differs from its mean plug-in by {gap:.3g}"
        accuracy[f"{family} bayesnb {label.split()[-1]}"] = np.mean(bn.classes_[t["bn_out"].argmax(1)] == y_test)
    where = "training rows (in-sample)" if in_sample else "test rows"
    print("    accuracy on " + where + ": " + ", ".join(f"{k} {v:.4f}" for k, v in accuracy.items()))


# ----------------------------------------------------------------------------- main


def describe_machine():
    import jax

    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        usable = os.cpu_count()
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",)
    print(f"machine: {platform.platform()}, CPU {cpu}, {os.cpu_count()} cores ({usable} usable), "
          f"load average {tuple(round(x, 2) for x in load)}")
    print(
        f"python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}, "
        f"scikit-learn {sklearn.__version__}, jax {jax.__version__}, bayesnb {getattr(bayesnb, '__version__', '?')}"
    )
    print(f"JAX devices: {jax.devices()}")
    try:
        from bayesnb.core.kernels import num_threads
    except ImportError:  # an older bayesnb, e.g. to compare before/after
        print(f"bayesnb from {Path(bayesnb.__file__).parent} (single-threaded)")
    else:
        print(
            f"bayesnb threads for large sparse products: {num_threads()} (BAYESNB_NUM_THREADS="
            f"{os.environ.get('BAYESNB_NUM_THREADS', 'unset')}); scikit-learn's naive Bayes runs on one thread"
        )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run of a few seconds")
    parser.add_argument(
        "--parts", default=None, help="comma-separated subset of: 20ng, zipf (default both; zipf alone with --quick)"
    )
    parser.add_argument(
        "--repeat", type=int, default=None, help="timed repeats after the first call (default 5; 2 with --quick)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic corpus")
    args = parser.parse_args(argv)
    parts_arg = args.parts if args.parts is not None else ("zipf" if args.quick else "20ng,zipf")
    parts = [p.strip() for p in parts_arg.split(",") if p.strip()]
    unknown = set(parts) - {"20ng", "zipf"}
    if unknown:
        parser.error(f"unknown part(s) {sorted(unknown)}; choose from 20ng, zipf")
    repeat = args.repeat if args.repeat is not None else (2 if args.quick else 5)

    describe_machine()
    print(f"repeats: {repeat} timed calls after one first call, sklearn and bayesnb interleaved")

    if "20ng" in parts:
        if NEWSGROUPS.is_file():
            t = time.perf_counter()
            X_train, y_train, X_test, y_test = load_20newsgroups(args.quick)
            print(f"\n20 Newsgroups read and vectorised in {time.perf_counter() - t:.1f}s")
            bench_dataset("20ng" + ("-4" if args.quick else ""), X_train, y_train, X_test, y_test, repeat, False)
        else:
            print(f"\n[20ng] skipped: {NEWSGROUPS} not found (the shared corpora live next to the repository)")
    if "zipf" in parts:
        n_docs, n_words = (20_000, 10_000) if args.quick else (200_000, 100_000)
        t = time.perf_counter()
        X, y = make_zipf_corpus(n_docs, n_words, n_classes=20, seed=args.seed)
        print(f"\nsynthetic Zipf corpus generated in {time.perf_counter() - t:.1f}s")
        bench_dataset("zipf" if not args.quick else "zipf-small", X, y, X, y, repeat, True)

    if ROWS:
        print_table()
    return 0


if __name__ == "__main__":
    sys.exit(main())
