"""The sections of the benchmark suite (registered on import; see suite.py).

Every family is measured against scikit-learn where it has a counterpart, and against a
plain NumPy/SciPy implementation of the same computation ("plain"), all interleaved call
by call in the same run.
"""

from __future__ import annotations

import time

import bench_discrete
import bench_gaussian
import numpy as np
import scipy.sparse as sp
from suite import Row, memory, section, timed

import bayesnb


def _empirical(y):
    _, counts = np.unique(y, return_counts=True)
    return counts / counts.sum()


# ----------------------------------------------------------------------------- discrete


@section("discrete", "MultinomialNB / BernoulliNB on 20 Newsgroups and the Zipf corpus (bench_discrete.py)")
def discrete(ctx):
    start = len(bench_discrete.ROWS)
    if bench_discrete.NEWSGROUPS.is_file():
        X_train, y_train, X_test, y_test = bench_discrete.load_20newsgroups(ctx.quick)
        name = "20ng-4" if ctx.quick else "20ng"
        bench_discrete.bench_dataset(name, X_train, y_train, X_test, y_test, ctx.repeat, False, floors=True)
    else:
        ctx.notes.append(f"discrete: 20 Newsgroups skipped, {bench_discrete.NEWSGROUPS} not found")
    n_docs, n_words = (20_000, 10_000) if ctx.quick else (200_000, 100_000)
    X, y = bench_discrete.make_zipf_corpus(n_docs, n_words, n_classes=20)
    bench_discrete.bench_dataset("zipf-small" if ctx.quick else "zipf", X, y, X, y, ctx.repeat, True, floors=True)
    return [Row("discrete", d, f, op, t, m) for d, f, op, t, m in bench_discrete.ROWS[start:]]


# ----------------------------------------------------------------------------- Gaussian


@section("gaussian", "GaussianNB dense 1,000,000 x 100, 10 classes (bench_gaussian.py)")
def gaussian(ctx):
    n = 100_000 if ctx.quick else 1_000_000
    rows, gap = bench_gaussian.run(n, 100, 10, ctx.repeat, floors=True, memory=ctx.memory)
    print(f"  GaussianNB: max |p_mle - p_sklearn| = {gap:.2e}")
    assert gap < 1e-10
    data = f"{n // 1000}k x 100"
    return [Row("gaussian", data, "GaussianNB", r["operation"], r["timing"], r["memory"]) for r in rows]


# ----------------------------------------------------------------------------- categorical


def _categorical_data(n, n_features=30, n_classes=10, seed=0):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 12, n_features)
    y = rng.integers(0, n_classes, n)
    # Class-dependent category frequencies, so that the classes are distinguishable.
    X = np.empty((n, n_features), dtype=np.int64)
    for j, k in enumerate(sizes):
        probs = rng.dirichlet(np.ones(k), size=n_classes)
        u = rng.random(n)
        X[:, j] = (u[:, None] > np.cumsum(probs, axis=1)[y]).sum(axis=1)
    return np.minimum(X, sizes - 1), y


def _plain_categorical_fit(X, y, n_classes, alpha=1.0):
    log_probs = []
    for j in range(X.shape[1]):
        k = int(X[:, j].max()) + 1
        counts = np.bincount(y * k + X[:, j], minlength=n_classes * k).reshape(n_classes, k) + alpha
        log_probs.append(np.log(counts) - np.log(counts.sum(axis=1, keepdims=True)))
    return np.log(np.bincount(y, minlength=n_classes) / y.size), log_probs


def _plain_categorical_proba(X, params):
    from scipy.special import logsumexp

    log_prior, log_probs = params
    jll = np.tile(log_prior, (X.shape[0], 1))
    for j, lp in enumerate(log_probs):
        jll += lp.T[X[:, j]]
    return np.exp(jll - logsumexp(jll, axis=1, keepdims=True))


@section("categorical", "CategoricalNB dense 1,000,000 x 30 codes, 10 classes")
def categorical(ctx):
    from sklearn.naive_bayes import CategoricalNB as Sk

    n = 100_000 if ctx.quick else 1_000_000
    X, y = _categorical_data(n)
    prior = _empirical(y)
    data = f"{n // 1000}k x 30"
    rows = []
    fit_sk = lambda: Sk(alpha=1.0).fit(X, y)  # noqa: E731
    fit_bn = lambda: bayesnb.CategoricalNB(alpha=1.0, class_prior=prior, estimate="mean").fit(X, y)  # noqa: E731
    t = timed(fit_sk, fit_bn, ctx.repeat, lambda: _plain_categorical_fit(X, y, 10))
    rows.append(Row("categorical", data, "CategoricalNB", "fit", t, memory(ctx, fit_sk, fit_bn)))
    sk, bn = fit_sk(), fit_bn()
    params = _plain_categorical_fit(X, y, 10)
    t = timed(lambda: sk.predict_proba(X), lambda: bn.predict_proba(X), ctx.repeat, lambda: _plain_categorical_proba(X, params))
    gap = float(np.abs(t["sk_out"] - t["bn_out"]).max())
    print(f"  CategoricalNB: max |p_bayesnb - p_sklearn| = {gap:.2e}")
    assert gap < 1e-10
    m = memory(ctx, lambda: sk.predict_proba(X), lambda: bn.predict_proba(X))
    rows.append(Row("categorical", data, "CategoricalNB", 'predict_proba "mean"', t, m))
    return rows


# ----------------------------------------------------------------------------- Gaussian Bayes


@section("gaussian_bayes", "GaussianBayesClassifier (shared / full covariance, 'mle') vs LDA / QDA")
def gaussian_bayes(ctx):
    from sklearn.discriminant_analysis import (
        LinearDiscriminantAnalysis,
        QuadraticDiscriminantAnalysis,
    )

    n = 20_000 if ctx.quick else 200_000
    X, y = bench_gaussian._data(n, 20, 5, seed=1)
    prior = _empirical(y)
    data = f"{n // 1000}k x 20"
    rows = []
    for cov, sk_cls, kwargs in (
        ("shared", LinearDiscriminantAnalysis, {"solver": "lsqr"}),
        ("full", QuadraticDiscriminantAnalysis, {"store_covariance": True}),
    ):
        name = f"GaussianBayes({cov})"
        fit_sk = lambda: sk_cls(**kwargs).fit(X, y)  # noqa: E731
        fit_bn = lambda: bayesnb.GaussianBayesClassifier(covariance=cov, estimate="mle", class_prior=prior).fit(X, y)  # noqa: E731
        t = timed(fit_sk, fit_bn, ctx.repeat)
        rows.append(Row("gauss_bayes", data, name, "fit", t, memory(ctx, fit_sk, fit_bn), f"vs {sk_cls.__name__}"))
        sk, bn = fit_sk(), fit_bn()
        t = timed(lambda: sk.predict_proba(X), lambda: bn.predict_proba(X), ctx.repeat)
        m = memory(ctx, lambda: sk.predict_proba(X), lambda: bn.predict_proba(X))
        rows.append(Row("gauss_bayes", data, name, 'predict_proba "mle"', t, m, f"vs {sk_cls.__name__}"))
        bn.set_params(estimate="predictive")
        t = timed(lambda: sk.predict_proba(X), lambda: bn.predict_proba(X), ctx.repeat)
        rows.append(Row("gauss_bayes", data, name, 'predict_proba "predictive"', t, None, "multivariate t"))
    return rows


# ----------------------------------------------------------------------------- Poisson


def _plain_poisson_fit(X, y, n_classes, alpha=1.0, beta=0.01):
    yi = y
    Y = sp.csr_matrix((np.ones(yi.size), yi, np.arange(yi.size + 1)), shape=(yi.size, n_classes))
    totals = np.asarray((Y.T @ X).todense())
    counts = np.bincount(yi, minlength=n_classes)
    rate = (totals + alpha) / (counts[:, None] + beta)
    return np.log(counts / yi.size), np.log(rate), rate.sum(axis=1)


def _plain_poisson_proba(X, params):
    from scipy.special import logsumexp

    log_prior, log_rate, total_rate = params
    jll = X @ log_rate.T - total_rate + log_prior
    return np.exp(jll - logsumexp(jll, axis=1, keepdims=True))


@section("poisson", "PoissonNB on sparse counts (no scikit-learn counterpart: plain NumPy/SciPy only)")
def poisson(ctx):
    n_docs, n_words = (10_000, 5_000) if ctx.quick else (50_000, 20_000)
    X, y = bench_discrete.make_zipf_corpus(n_docs, n_words, n_classes=10, seed=2)
    prior = _empirical(y)
    data = f"zipf {n_docs // 1000}k"
    fit_bn = lambda: bayesnb.PoissonNB(class_prior=prior, estimate="mean").fit(X, y)  # noqa: E731
    rows = [Row("poisson", data, "PoissonNB", "fit", timed(None, fit_bn, ctx.repeat, lambda: _plain_poisson_fit(X, y, 10)), memory(ctx, None, fit_bn))]
    bn = fit_bn()
    params = _plain_poisson_fit(X, y, 10)
    t = timed(None, lambda: bn.predict_proba(X), ctx.repeat, lambda: _plain_poisson_proba(X, params))
    gap = float(np.abs(t["bn_out"] - _plain_poisson_proba(X, params)).max())
    print(f"  PoissonNB: max |p_bayesnb - p_plain| = {gap:.2e}")
    rows.append(Row("poisson", data, "PoissonNB", 'predict_proba "mean"', t, memory(ctx, None, lambda: bn.predict_proba(X))))
    bn.set_params(estimate="predictive")
    t = timed(None, lambda: bn.predict_proba(X), ctx.repeat, lambda: _plain_poisson_proba(X, params))
    rows.append(Row("poisson", data, "PoissonNB", 'predict_proba "predictive"', t, None, "negative binomial; plain = plug-in"))
    return rows


# ----------------------------------------------------------------------------- Mixed


def _mixed_frame(n, seed=3):
    import pandas as pd

    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, n)
    frame = {}
    for j in range(5):
        frame[f"real{j}"] = rng.normal(y * 0.3 + j, 1.0 + 0.1 * j)
    for j in range(3):
        frame[f"flag{j}"] = rng.random(n) < (0.2 + 0.15 * y / 3)
    for j in range(3):
        frame[f"kind{j}"] = np.array(["a", "b", "c", "d", "e"], dtype=object)[(rng.integers(0, 5, n) + y * j) % 5]
    for j in range(3):
        frame[f"count{j}"] = rng.poisson(1.0 + y + j)
    return pd.DataFrame(frame), y


@section("mixed", "MixedNB on a DataFrame (float, bool, string, int columns) vs scikit-learn's NBs per block")
def mixed(ctx):
    from scipy.special import logsumexp
    from sklearn import naive_bayes as sknb
    from sklearn.preprocessing import OrdinalEncoder

    n = 20_000 if ctx.quick else 200_000
    df, y = _mixed_frame(n)
    prior = _empirical(y)
    reals = [c for c in df.columns if c.startswith("real")]
    flags = [c for c in df.columns if c.startswith("flag")]
    kinds = [c for c in df.columns if c.startswith("kind")]
    counts = [c for c in df.columns if c.startswith("count")]

    def fit_sk():
        enc = OrdinalEncoder().fit(df[kinds])
        return (
            sknb.GaussianNB().fit(df[reals], y),
            sknb.BernoulliNB(binarize=None).fit(df[flags], y),
            (enc, sknb.CategoricalNB().fit(enc.transform(df[kinds]), y)),
            sknb.MultinomialNB().fit(df[counts], y),
        )

    def proba_sk(models):
        g, b, (enc, c), m = models
        jll = (
            g.predict_joint_log_proba(df[reals])
            + b.predict_joint_log_proba(df[flags])
            + c.predict_joint_log_proba(enc.transform(df[kinds]))
            + m.predict_joint_log_proba(df[counts])
        )
        return np.exp(jll - logsumexp(jll, axis=1, keepdims=True))

    fit_bn = lambda: bayesnb.MixedNB(class_prior=prior, estimate="mean", integer_columns="poisson").fit(df, y)  # noqa: E731
    data = f"{n // 1000}k x 14"
    rows = [Row("mixed", data, "MixedNB", "fit", timed(fit_sk, fit_bn, ctx.repeat), memory(ctx, fit_sk, fit_bn), "sklearn: 4 NBs + OrdinalEncoder")]
    sk, bn = fit_sk(), fit_bn()
    t = timed(lambda: proba_sk(sk), lambda: bn.predict_proba(df), ctx.repeat)
    rows.append(Row("mixed", data, "MixedNB", 'predict_proba "mean"', t, memory(ctx, lambda: proba_sk(sk), lambda: bn.predict_proba(df)), "Poisson block vs sklearn multinomial"))
    bn.set_params(estimate="predictive")
    t = timed(lambda: proba_sk(sk), lambda: bn.predict_proba(df), ctx.repeat)
    rows.append(Row("mixed", data, "MixedNB", 'predict_proba "predictive"', t, None))
    return rows


# ----------------------------------------------------------------------------- posterior draws


@section("draws", "predict_proba_draws (exact posterior draws) vs n_draws scikit-learn predict_proba calls")
def draws(ctx):
    from sklearn import naive_bayes as sknb

    n_draws = 20
    rows = []
    Xz, yz = bench_discrete.make_zipf_corpus(5_000, 1_000 if ctx.quick else 2_000, n_classes=10, seed=4)
    Xg, yg = bench_gaussian._data(5_000, 50, 10, seed=4)
    Xc, yc = _categorical_data(5_000, seed=4)
    for name, sk, bn, X, y in (
        ("MultinomialNB", sknb.MultinomialNB(), bayesnb.MultinomialNB(), Xz, yz),
        ("GaussianNB", sknb.GaussianNB(), bayesnb.GaussianNB(), Xg, yg),
        ("CategoricalNB", sknb.CategoricalNB(), bayesnb.CategoricalNB(), Xc, yc),
    ):
        sk.fit(X, y)
        bn.fit(X, y)
        t = timed(
            lambda: [sk.predict_proba(X) for _ in range(n_draws)],
            lambda: bn.predict_proba_draws(X, n_draws=n_draws, random_state=0),
            ctx.repeat,
        )
        rows.append(Row("draws", f"{X.shape[0] // 1000}k x {X.shape[1]}", name, f"predict_proba_draws({n_draws})", t, None, f"sklearn: {n_draws} x predict_proba"))
    return rows


# ----------------------------------------------------------------------------- compilation


@section("compile", "JAX compilation: paid once per shape bucket, not per call (first call vs steady state)")
def compile_once(ctx):
    """Shapes not used by any other section, so that the first calls here compile."""
    from sklearn.naive_bayes import GaussianNB as Sk

    rows = []
    n_features = 37
    X, y = bench_gaussian._data(200_000, n_features, 7, seed=5)
    for label, est in (("mean", "mean"), ("predictive", "predictive")):
        sk = Sk().fit(X, y)
        bn = bayesnb.GaussianNB(estimate=est).fit(X, y)
        for n in (70_000, 90_000, 200_000):
            Xn = X[:n]
            t = timed(lambda: sk.predict_proba(Xn), lambda: bn.predict_proba(Xn), ctx.repeat)
            rows.append(Row("compile", f"{n // 1000}k x {n_features}", "GaussianNB", f'predict_proba "{label}" n={n // 1000}k', t))
    # A new model of the same shapes (a refit) reuses the compiled kernels: its first call is steady.
    t0 = time.perf_counter()
    bn = bayesnb.GaussianNB(estimate="mean").fit(X[::-1], y[::-1])
    fit_s = time.perf_counter() - t0
    sk = Sk().fit(X, y)
    t = timed(lambda: sk.predict_proba(X), lambda: bn.predict_proba(X), ctx.repeat)
    rows.append(Row("compile", f"200k x {n_features}", "GaussianNB", 'refit, then predict_proba "mean"', t, None, f"refit {fit_s:.2f}s"))
    return rows
