"""GaussianNB and the diagonal Gaussian (Normal-Inverse-Gamma) family.

Oracles:

* scikit-learn's ``GaussianNB`` (the "mle" estimate, to 1e-10) and its estimator checks;
* numpyro's ``StudentT.log_prob`` (in float64) for the exact posterior predictive;
* Monte Carlo over posterior draws from scipy's own samplers, with 5-standard-error bounds;
* the chain rule of predictives and a 2-d numerical integral (``scipy.integrate.dblquad``)
  of likelihood x prior for the log evidence;
* exact rational arithmetic (``fractions``) for the sufficient statistics;
* ``scipy.stats.norm.logpdf`` (the direct form) for the quadratic-expansion likelihood;
* numerical maximisation of the NIG density for the MAP, mpmath for log-Gamma ratios.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import jax
import mpmath
import numpy as np
import pytest
import scipy.sparse as sp
from _gaussian_spy import direct_kernel_rows
from numpy.testing import assert_allclose
from scipy import integrate, optimize, stats
from sklearn.datasets import load_iris
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB as SkGaussianNB
from sklearn.utils.estimator_checks import parametrize_with_checks

from bayesnb.core import stats as bstats
from bayesnb.core.families import gaussian
from bayesnb.core.priors import NormalInverseGamma
from bayesnb.core.stats import GaussianStats, gaussian_stats
from bayesnb.estimators.gaussian import GaussianNB
from bayesnb.exceptions import ZeroLikelihoodWarning

ESTIMATES = ("mle", "map", "mean", "predictive")


# ----------------------------------------------------------------------------- data


def _synthetic(seed=0, n=240):
    """Three classes, five features on very different scales and offsets, plus test rows."""
    rng = np.random.default_rng(seed)
    offsets = np.array([0.0, 100.0, -50.0, 1e3, 0.1])
    scales = np.array([1.0, 10.0, 0.01, 5.0, 1.0])
    means = offsets + rng.normal(0.0, 2.0, (3, 5)) * scales
    sds = rng.uniform(0.5, 3.0, (3, 5)) * scales
    y = np.repeat([0, 1, 2], [n // 4, n // 3, n - n // 4 - n // 3])
    X = means[y] + sds[y] * rng.standard_normal((n, 5))
    yt = rng.integers(0, 3, 60)
    X_test = means[yt] + 1.5 * sds[yt] * rng.standard_normal((60, 5))
    return X, y, X_test


def _iris():
    X, y = load_iris(return_X_y=True)
    return X, y, X


def _prior(C, F, seed=1):
    """An explicit, non-uniform prior (concentration > 2 so every moment used exists)."""
    rng = np.random.default_rng(seed)
    return NormalInverseGamma(
        loc=rng.normal(0.0, 1.0, (C, F)),
        kappa=rng.uniform(0.2, 2.0, (C, F)),
        concentration=rng.uniform(2.2, 4.0, (C, F)),
        rate=rng.uniform(0.5, 3.0, (C, F)),
    )


def _by_hand_posterior(X, y, prior, C, w=None):
    """The NIG update written out from raw data with numpy (independent of bayesnb.core.stats)."""
    w = np.ones(len(y)) if w is None else w
    out = {k: np.zeros((C, X.shape[1])) for k in ("m", "k", "a", "b")}
    for c in range(C):
        xc, wc = X[y == c], w[y == c]
        n = wc.sum()
        xbar = (wc[:, None] * xc).sum(0) / n
        m2 = (wc[:, None] * (xc - xbar) ** 2).sum(0)
        m0, k0, a0, b0 = (np.asarray(f)[c] for f in prior)
        out["k"][c] = k0 + n
        out["m"][c] = (k0 * m0 + n * xbar) / (k0 + n)
        out["a"][c] = a0 + n / 2
        out["b"][c] = b0 + m2 / 2 + k0 * n * (xbar - m0) ** 2 / (2 * (k0 + n))
    return out


# ----------------------------------------------------------------------------- sklearn checks

# Every scikit-learn check passes, for every estimate.
_EXPECTED_FAILED_CHECKS: dict = {}


# The defaults (GaussianNB(), estimate="predictive") are checked with every registered family's estimator in
# tests/estimators/test_estimators.py (the registry's list).
@parametrize_with_checks(
    [GaussianNB(estimate=e) for e in ("mle", "map", "mean")],
    expected_failed_checks=lambda est: _EXPECTED_FAILED_CHECKS,
    xfail_strict=True,
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


# ----------------------------------------------------------------------------- "mle" == scikit-learn


@pytest.mark.parametrize("data", [_iris, _synthetic])
def test_mle_equals_sklearn_fit(data):
    X, y, X_test = data()
    sk = SkGaussianNB().fit(X, y)
    ours = GaussianNB(estimate="mle", class_prior=sk.class_prior_).fit(X, y)
    assert_allclose(ours.predict_proba(X_test), sk.predict_proba(X_test), rtol=0, atol=1e-10)
    assert_allclose(ours.predict_joint_log_proba(X_test), sk.predict_joint_log_proba(X_test), rtol=1e-10)
    assert_allclose(ours.theta_, sk.theta_, rtol=1e-12, atol=1e-12)
    assert_allclose(ours.var_, sk.var_, rtol=1e-10)
    assert ours.epsilon_ == pytest.approx(sk.epsilon_, rel=1e-12)
    assert_allclose(ours.class_count_, sk.class_count_)


def test_iris_user_guide_misclassifies_4_of_75():
    X, y = load_iris(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.5, random_state=0)
    sk_pred = SkGaussianNB().fit(X_train, y_train).predict(X_test)
    pred = GaussianNB(estimate="mle").fit(X_train, y_train).predict(X_test)
    assert X_test.shape[0] == 75
    assert (pred != y_test).sum() == 4
    assert np.array_equal(pred, sk_pred)


@pytest.mark.parametrize("data", [_iris, _synthetic])
def test_mle_partial_fit_equals_sklearn(data):
    X, y, X_test = data()
    batches = np.array_split(np.random.default_rng(0).permutation(len(y)), 4)
    classes = np.arange(3)
    emp = np.bincount(y) / len(y)
    # With var_smoothing=0 scikit-learn's per-batch variance floor vanishes and its
    # chained partial_fit is the same model as ours.
    sk0, ours0 = SkGaussianNB(var_smoothing=0.0), GaussianNB(estimate="mle", var_smoothing=0.0, class_prior=emp)
    # With the default floor, ours (epsilon from every row seen) equals scikit-learn's fit
    # on all rows.
    ours = GaussianNB(estimate="mle", class_prior=emp)
    sk_chain = SkGaussianNB()
    for b in batches:
        sk0.partial_fit(X[b], y[b], classes=classes)
        ours0.partial_fit(X[b], y[b], classes=classes)
        ours.partial_fit(X[b], y[b], classes=classes)
        sk_chain.partial_fit(X[b], y[b], classes=classes)
    assert_allclose(ours0.predict_proba(X_test), sk0.predict_proba(X_test), rtol=0, atol=1e-10)
    assert_allclose(ours0.var_, sk0.var_, rtol=1e-12)
    sk_fit = SkGaussianNB().fit(X, y)
    assert_allclose(ours.predict_proba(X_test), sk_fit.predict_proba(X_test), rtol=0, atol=1e-10)
    assert ours.epsilon_ == pytest.approx(sk_fit.epsilon_, rel=1e-12)
    # The documented difference: scikit-learn's chained floor comes from the last batch.
    assert sk_chain.epsilon_ == pytest.approx(1e-9 * X[batches[-1]].var(axis=0).max(), rel=1e-12)
    assert sk_chain.epsilon_ != pytest.approx(ours.epsilon_, rel=1e-3)


@pytest.mark.parametrize("data", [_iris, _synthetic])
def test_mle_sample_weight_equals_sklearn(data):
    X, y, X_test = data()
    rng = np.random.default_rng(5)
    counts = rng.integers(0, 4, len(y))
    counts[:3] = 1
    # Integer weights equal duplicated rows, and scikit-learn fitted on the duplicated
    # rows is the same model (its floor is the variance of the rows it sees).
    sk_dup = SkGaussianNB().fit(np.repeat(X, counts, axis=0), np.repeat(y, counts))
    ours = GaussianNB(estimate="mle", class_prior=sk_dup.class_prior_).fit(X, y, sample_weight=counts)
    assert_allclose(ours.predict_proba(X_test), sk_dup.predict_proba(X_test), rtol=0, atol=1e-10)
    assert_allclose(ours.var_, sk_dup.var_, rtol=1e-10)
    # Fractional weights against scikit-learn's own sample_weight, fit and partial_fit:
    # equal with var_smoothing=0 (scikit-learn's floor ignores the weights).
    w = rng.uniform(0.1, 3.0, len(y))
    sk_w = SkGaussianNB(var_smoothing=0.0).fit(X, y, sample_weight=w)
    ours_w = GaussianNB(estimate="mle", var_smoothing=0.0, class_prior=sk_w.class_prior_)
    ours_w.fit(X, y, sample_weight=w)
    assert_allclose(ours_w.predict_proba(X_test), sk_w.predict_proba(X_test), rtol=0, atol=1e-10)
    sk_p = SkGaussianNB(var_smoothing=0.0)
    ours_p = GaussianNB(estimate="mle", var_smoothing=0.0, class_prior=sk_w.class_prior_)
    for b in np.array_split(np.arange(len(y)), 3):
        sk_p.partial_fit(X[b], y[b], classes=[0, 1, 2], sample_weight=w[b])
        ours_p.partial_fit(X[b], y[b], classes=[0, 1, 2], sample_weight=w[b])
    assert_allclose(ours_p.predict_proba(X_test), sk_p.predict_proba(X_test), rtol=0, atol=1e-10)


# ----------------------------------------------------------------------------- exact predictive


@pytest.mark.parametrize("compiled", [False, True], ids=["numpy", "jit"])
def test_predictive_equals_numpyro_student_t(compiled, monkeypatch):
    import numpyro.distributions as dist

    X, y, X_test = _synthetic(seed=6, n=90)
    X_test = np.concatenate([X_test, X_test * 1.3 + 0.7, X_test[:11] - 5.0])  # 131 rows
    if compiled:
        # 32-row chunks: four compiled chunks and a remainder of three rows in numpy.
        monkeypatch.setattr(gaussian, "_T_CHUNK_ENTRIES", 32 * 3 * 5)
    prior = _prior(3, 5)
    est = GaussianNB(prior=prior).fit(X, y)
    hand = _by_hand_posterior(X, y, prior, 3)
    df = 2 * hand["a"]
    scale = np.sqrt(hand["b"] * (hand["k"] + 1) / (hand["a"] * hand["k"]))
    with jax.enable_x64(True):
        ref = np.asarray(dist.StudentT(df, hand["m"], scale).log_prob(X_test[:, None, :])).sum(-1)
    got = gaussian.log_predictive(est.posterior_, X_test)
    assert_allclose(got, ref, rtol=1e-11, atol=1e-11)
    # The estimator adds the class predictive (N_c + 1) / (N + 3).
    log_pc = np.log((np.bincount(y) + 1.0) / (len(y) + 3.0))
    assert_allclose(est.predict_joint_log_proba(X_test), ref + log_pc, rtol=1e-11, atol=1e-11)


def test_predictive_is_posterior_average_of_gaussian_likelihood():
    """p(x | D) = E[N(x; mu, sigma^2) | D], estimated from scipy's independent samplers."""
    rng = np.random.default_rng(7)
    X = rng.normal(2.0, 1.5, (6, 3))  # few rows: the t is far from Gaussian
    prior = NormalInverseGamma(loc=0.0, kappa=0.5, concentration=1.5, rate=2.0)
    est = GaussianNB(prior=prior).fit(X, np.zeros(6, int))
    post = est.posterior_
    n_draws = 200_000
    draw_rng = np.random.default_rng(8)
    a, b, k, m = (np.asarray(f)[0] for f in (post.concentration, post.rate, post.kappa, post.loc))
    var = stats.invgamma(a, scale=b).rvs(size=(n_draws, 3), random_state=draw_rng)
    mu = draw_rng.normal(m, np.sqrt(var / k))
    x_new = np.array([[2.0, 0.0, 9.0], [-1.0, 4.5, 2.2]])
    plug = gaussian.point(est.prior_, est.stats_, "mean")
    for row in x_new:
        lik = stats.norm.pdf(row, mu, np.sqrt(var))  # (n_draws, 3)
        mc, se = lik.mean(0), lik.std(0) / np.sqrt(n_draws)
        df, loc, scale = (np.asarray(v)[0] for v in gaussian.predictive_params(post))
        exact = stats.t.pdf(row, df, loc, scale)
        assert np.all(np.abs(mc - exact) < 5 * se), (mc, exact, se)
        # And the bayesnb function, one feature at a time (one class, so one column).
        for j in range(3):
            single = NormalInverseGamma(*(np.asarray(f)[:, j : j + 1] for f in post))
            got = np.exp(gaussian.log_predictive(single, row[j : j + 1].reshape(1, 1))[0, 0])
            assert got == pytest.approx(exact[j], rel=1e-12)
    # The test has power: the plug-in of the posterior mean misses the far value by many SE.
    far = np.array([2.0, 0.0, 9.0])
    lik = stats.norm.pdf(far, mu, np.sqrt(var))
    mc, se = lik.mean(0), lik.std(0) / np.sqrt(n_draws)
    plug_in = stats.norm.pdf(far, np.asarray(plug.loc)[0], np.sqrt(np.asarray(plug.var)[0]))
    assert np.abs(plug_in - mc)[2] > 10 * se[2]


def test_our_posterior_draws_also_average_to_the_predictive():
    X, y, _ = _synthetic(seed=9, n=30)
    est = GaussianNB(prior=_prior(3, 5)).fit(X, y)
    draws = est.sample_posterior(40_000, random_state=0)
    x = X[:2] + 0.3
    df, loc, scale = gaussian.predictive_params(est.posterior_)
    for row in x:
        lik = stats.norm.pdf(row, draws["loc"], np.sqrt(draws["var"]))  # (n, C, F)
        mc, se = lik.mean(0), lik.std(0) / np.sqrt(lik.shape[0])
        exact = stats.t.pdf(row, df, loc, scale)
        assert np.all(np.abs(mc - exact) < 5 * se)


# ----------------------------------------------------------------------------- evidence


_CLASS_SETTINGS = {
    "dirichlet": {},
    "dirichlet-uneven": {"class_alpha": [0.5, 2.0, 1.0]},
    "fixed": {"class_prior": [0.2, 0.5, 0.3]},
    "uniform": {"fit_prior": False},
}


def _first_label_term(class_kw, c, n_classes=3):
    if "class_prior" in class_kw:
        return np.log(class_kw["class_prior"][c])
    if class_kw.get("fit_prior", True) is False:
        return -np.log(n_classes)
    beta = np.broadcast_to(np.asarray(class_kw.get("class_alpha", 1.0), float), (n_classes,))
    return np.log(beta[c] / beta.sum())


@pytest.mark.parametrize("setting", list(_CLASS_SETTINGS))
def test_log_evidence_equals_chain_rule(setting):
    rng = np.random.default_rng(10)
    n, C, F = 14, 3, 3
    y = rng.integers(0, C, n)
    y[:3] = [1, 0, 2]
    X = rng.normal(1.0, 2.0, (n, F)) + 100.0 * y[:, None]
    prior = _prior(C, F, seed=11)
    prior = prior._replace(loc=prior.loc + 100.0 * np.arange(C)[:, None])
    class_kw = _CLASS_SETTINGS[setting]
    m0, k0, a0, b0 = (np.asarray(f)[y[0]] for f in prior)
    total = _first_label_term(class_kw, y[0]) + stats.t.logpdf(
        X[0], 2 * a0, m0, np.sqrt(b0 * (k0 + 1) / (a0 * k0))
    ).sum()
    est = GaussianNB(prior=prior, **class_kw)
    for i in range(1, n):
        est.partial_fit(X[i - 1 : i], y[i - 1 : i], classes=np.arange(C))
        total += est.predict_joint_log_proba(X[i : i + 1])[0, y[i]]
    full = GaussianNB(prior=prior, **class_kw).fit(X, y)
    assert full.log_evidence() == pytest.approx(total, rel=1e-9, abs=1e-9)
    est.partial_fit(X[-1:], y[-1:])
    assert est.log_evidence() == pytest.approx(total, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_log_evidence_equals_numerical_integral(weighted):
    """One feature, one class: the double integral over (mu, log sigma^2) of likelihood x prior."""
    x = np.array([0.3, 1.7, 2.2, -0.4, 1.1, 0.9, 3.0])
    w = np.array([1.0, 0.5, 2.0, 1.5, 0.25, 1.0, 0.75]) if weighted else np.ones_like(x)
    m0, k0, a0, b0 = 1.0, 0.7, 2.5, 1.3
    prior = NormalInverseGamma(np.full((1, 1), m0), np.full((1, 1), k0), np.full((1, 1), a0), np.full((1, 1), b0))
    st = gaussian_stats(x[:, None], np.zeros(7, int), 1, w)
    closed = gaussian.log_evidence(prior, st)

    # The densities written out by hand (scipy.stats is too slow per point for dblquad;
    # the two forms are compared at one point below).
    log_norm_a0 = a0 * math.log(b0) - math.lgamma(a0)
    w_total = float(w.sum())

    def log_joint(mu, s):
        var = math.exp(s)
        loglik = -0.5 * w_total * math.log(2 * math.pi * var) - float(np.dot(w, (x - mu) ** 2)) / (2 * var)
        log_invgamma = log_norm_a0 - (a0 + 1) * s - b0 / var
        log_normal = -0.5 * math.log(2 * math.pi * var / k0) - k0 * (mu - m0) ** 2 / (2 * var)
        return loglik + log_invgamma + log_normal + s  # + s: the Jacobian of sigma^2 = exp(s)

    check = np.sum(w * stats.norm.logpdf(x, 0.4, 1.3)) + stats.invgamma.logpdf(1.69, a0, scale=b0)
    check += stats.norm.logpdf(0.4, m0, 1.3 / np.sqrt(k0)) + math.log(1.69)
    assert log_joint(0.4, math.log(1.69)) == pytest.approx(check, rel=1e-13)

    post = gaussian.posterior(prior, st)
    mn, kn, an, bn = (float(np.asarray(f)[0, 0]) for f in post)
    s_mode = np.log(bn / (an + 1.5))
    ref = log_joint(mn, s_mode)
    half = 25.0 * np.sqrt(bn / (an * kn))
    val, err = integrate.dblquad(
        lambda mu, s: np.exp(log_joint(mu, s) - ref),
        s_mode - 8.0,
        s_mode + 10.0,
        mn - half,
        mn + half,
        epsabs=0.0,
        epsrel=1e-10,
    )
    assert err < 1e-8 * val
    assert closed == pytest.approx(np.log(val) + ref, abs=1e-8)
    # The estimator reports the same number (one class with proportion 1: no label part).
    est = GaussianNB(prior=prior, class_prior=[1.0]).fit(x[:, None], np.zeros(7, int), sample_weight=w)
    assert est.log_evidence() == pytest.approx(closed, rel=1e-13)


# ----------------------------------------------------------------------------- statistics


def _exact_stats(X, y, w, C):
    """Weighted count, mean and M2 per (class, feature) in exact rational arithmetic."""
    F = X.shape[1]
    n = np.zeros(C)
    mean = np.zeros((C, F))
    m2 = np.zeros((C, F))
    for c in range(C):
        rows = np.flatnonzero(y == c)
        wf = [Fraction(float(w[i])) for i in rows]
        total = sum(wf)
        n[c] = float(total)
        for j in range(F):
            xf = [Fraction(float(X[i, j])) for i in rows]
            mu = sum(a * b for a, b in zip(wf, xf)) / total
            mean[c, j] = float(mu)
            m2[c, j] = float(sum(a * (b - mu) ** 2 for a, b in zip(wf, xf)))
    return n, mean, m2


@pytest.mark.parametrize("compiled", [False, True], ids=["numpy", "jit"])
@pytest.mark.parametrize("offset", [0.0, 1e8], ids=["centred", "offset1e8"])
def test_fit_equals_partial_fit_equals_merge(offset, compiled, monkeypatch):
    if compiled:
        # 16-row chunks: the compiled statistics kernel runs on full chunks.
        monkeypatch.setattr(bstats, "_STATS_CHUNK_ENTRIES", 16 * 3)
    rng = np.random.default_rng(12)
    n, C = 75, 3
    y = rng.integers(0, C, n)
    y[:3] = [0, 1, 2]
    X = offset + rng.normal(0.0, 1.0, (n, 3)) * np.array([1.0, 1e-3, 10.0]) + y[:, None]
    w = rng.uniform(0.2, 2.0, n)
    exact_n, exact_mean, exact_m2 = _exact_stats(X, y, w, C)

    direct = gaussian_stats(X, y, C, w)
    batches = np.split(np.arange(n), [7, 8, 30, 52])
    merged = bstats.merge(*(gaussian_stats(X[b], y[b], C, w[b]) for b in batches))
    full = GaussianNB().fit(X, y, sample_weight=w)
    chained = GaussianNB()
    for b in batches:
        chained.partial_fit(X[b], y[b], classes=np.arange(C), sample_weight=w[b])
    for st in (direct, merged, full.stats_, chained.stats_):
        assert isinstance(st, GaussianStats)
        assert_allclose(st.class_count, exact_n, rtol=1e-14)
        assert_allclose(st.mean, exact_mean, rtol=1e-15, atol=4 * np.spacing(offset + 20.0))
        assert_allclose(st.m2, exact_m2, rtol=1e-12)
    for estimate in ESTIMATES:
        full.set_params(estimate=estimate)
        chained.set_params(estimate=estimate)
        assert_allclose(chained.predict_proba(X), full.predict_proba(X), rtol=1e-12, atol=1e-12)
    assert chained.log_evidence() == pytest.approx(full.log_evidence(), rel=1e-12)
    if offset:
        # The test has teeth: raw sums of squares lose the variance of the offset data.
        c = y == 0
        naive = (w[c, None] * X[c] ** 2).sum(0) - exact_n[0] * exact_mean[0] ** 2
        assert np.max(np.abs(naive / exact_m2[0] - 1)) > 1e-2


def test_merge_keeps_an_empty_side_exact():
    a = GaussianStats(np.array([2.0, 0.0]), np.array([[1.5], [0.0]]), np.array([[0.5], [0.0]]))
    b = GaussianStats(np.array([0.0, 3.0]), np.array([[0.0], [7.25]]), np.array([[0.0], [2.0]]))
    m = a.merge(b)
    assert_allclose(m.class_count, [2.0, 3.0])
    assert np.array_equal(m.mean, [[1.5], [7.25]])
    assert np.array_equal(m.m2, [[0.5], [2.0]])
    empty = GaussianStats(np.zeros(2), np.zeros((2, 1)), np.zeros((2, 1)))
    assert np.array_equal(bstats.merge(empty, empty).m2, np.zeros((2, 1)))


@pytest.mark.parametrize("estimate", ESTIMATES)
def test_duplicated_rows_equal_sample_weight_two(estimate):
    X, y, X_test = _synthetic(seed=13, n=60)
    dup = np.arange(0, 60, 3)
    w = np.ones(60)
    w[dup] = 2.0
    a = GaussianNB(estimate=estimate).fit(np.concatenate([X, X[dup]]), np.concatenate([y, y[dup]]))
    b = GaussianNB(estimate=estimate).fit(X, y, sample_weight=w)
    assert_allclose(a.predict_proba(X_test), b.predict_proba(X_test), rtol=1e-11, atol=1e-12)
    assert a.log_evidence() == pytest.approx(b.log_evidence(), rel=1e-12)
    for fa, fb in zip(a.posterior_, b.posterior_):
        assert_allclose(fa, fb, rtol=1e-12)


# ----------------------------------------------------------------------------- posterior


def test_posterior_matches_by_hand_update():
    X, y, _ = _synthetic(seed=14, n=50)
    w = np.random.default_rng(15).uniform(0.5, 2.0, 50)
    prior = _prior(3, 5)
    est = GaussianNB(prior=prior).fit(X, y, sample_weight=w)
    hand = _by_hand_posterior(X, y, prior, 3, w)
    post = est.posterior_
    assert_allclose(post.loc, hand["m"], rtol=1e-12)
    assert_allclose(post.kappa, hand["k"], rtol=1e-14)
    assert_allclose(post.concentration, hand["a"], rtol=1e-14)
    assert_allclose(post.rate, hand["b"], rtol=1e-11)


def test_posterior_draws_match_closed_form_moments():
    X, y, _ = _synthetic(seed=16, n=30)
    est = GaussianNB(prior=_prior(3, 5)).fit(X, y)
    n = 40_000
    d = est.sample_posterior(n, random_state=1)
    assert d["loc"].shape == d["var"].shape == (n, 3, 5)
    assert d["class_probs"].shape == (n, 3)
    post = est.posterior_
    a, b, k, m = (np.asarray(f) for f in (post.concentration, post.rate, post.kappa, post.loc))
    mean_var = b / (a - 1)
    var_var = b**2 / ((a - 1) ** 2 * (a - 2))
    var_mu = b / (k * (a - 1))
    assert np.all(np.abs(d["var"].mean(0) - mean_var) < 5 * np.sqrt(var_var / n))
    assert np.all(np.abs(d["loc"].mean(0) - m) < 5 * np.sqrt(var_mu / n))
    # Var of the sample variance of t-distributed mu (df = 2a): (2 + excess kurtosis) var^2 / n.
    excess = 6.0 / (2 * a - 4)
    assert np.all(np.abs(d["loc"].var(0) - var_mu) < 5 * var_mu * np.sqrt((2 + excess) / n))
    # The precision of one cell is Gamma(a, rate=b): a KS test against scipy.
    p = stats.kstest(1.0 / d["var"][:, 1, 2], stats.gamma(a[1, 2], scale=1.0 / b[1, 2]).cdf).pvalue
    assert p > 1e-3
    # The draws are reproducible from the seed and differ across seeds.
    assert np.array_equal(est.sample_posterior(5, random_state=1)["var"], est.sample_posterior(5, random_state=1)["var"])
    assert not np.array_equal(est.sample_posterior(5, random_state=1)["var"], est.sample_posterior(5, random_state=2)["var"])


def test_map_is_the_joint_mode_of_the_nig_density():
    m, k, a, b = 0.7, 3.5, 4.25, 2.0

    def neg_log_density(p):
        mu, s = p
        var = np.exp(s)
        return -(stats.invgamma.logpdf(var, a, scale=b) + stats.norm.logpdf(mu, m, np.sqrt(var / k)))

    res = optimize.minimize(neg_log_density, x0=[0.0, 0.0], method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-14})
    post = NormalInverseGamma(*(np.full((1, 1), v) for v in (m, k, a, b)))
    # point() takes (prior, stats); with zero rows the posterior is the prior itself.
    empty = GaussianStats(np.zeros(1), np.zeros((1, 1)), np.zeros((1, 1)))
    mode = gaussian.point(post, empty, "map")
    assert float(mode.loc[0, 0]) == pytest.approx(res.x[0], abs=1e-6)
    assert float(mode.var[0, 0]) == pytest.approx(np.exp(res.x[1]), rel=1e-6)
    assert float(mode.var[0, 0]) == pytest.approx(b / (a + 1.5), rel=1e-15)
    # The mode of the marginal InvGamma, b / (a + 1), is a different point.
    assert b / (a + 1) != pytest.approx(np.exp(res.x[1]), rel=1e-3)


def test_fitted_attributes_follow_the_estimate():
    X, y, _ = _synthetic(seed=17, n=45)
    prior = _prior(3, 5)
    est = GaussianNB(prior=prior).fit(X, y)
    hand = _by_hand_posterior(X, y, prior, 3)
    expected = {
        "map": hand["b"] / (hand["a"] + 1.5),
        "mean": hand["b"] / (hand["a"] - 1),
        "predictive": hand["b"] / (hand["a"] - 1),
    }
    for estimate, var in expected.items():
        est.set_params(estimate=estimate)
        assert_allclose(est.theta_, hand["m"], rtol=1e-12)
        assert_allclose(est.var_, var, rtol=1e-11)
    est.set_params(estimate="mle")
    for c in range(3):
        assert_allclose(est.theta_[c], X[y == c].mean(0), rtol=1e-12)
        assert_allclose(est.var_[c], X[y == c].var(0) + est.epsilon_, rtol=1e-10)


def test_default_prior_is_scaled_to_the_data():
    X, y, _ = _synthetic(seed=18, n=80)
    X = np.column_stack([X, np.full(80, 5.0), np.zeros(80)])  # a constant and an all-zero feature
    est = GaussianNB().fit(X, y)
    pr = est.prior_
    pooled_var = X.var(axis=0)
    assert_allclose(pr.loc, np.broadcast_to(X.mean(0), (3, 7)), rtol=1e-13, atol=1e-15)
    assert np.all(pr.kappa == 0.01) and np.all(pr.concentration == 1.0)
    assert_allclose(pr.rate[:, :5], np.broadcast_to(0.02 * pooled_var[:5], (3, 5)), rtol=1e-12)
    # Constant feature: the floor 1e-20 * mean^2; all-zero feature: 1.
    assert_allclose(pr.rate[:, 5], 0.02 * 1e-20 * 25.0, rtol=1e-12)
    assert_allclose(pr.rate[:, 6], 0.02)
    for estimate in ESTIMATES[1:]:
        p = est.set_params(estimate=estimate).predict_proba(X[:10] + 0.5)
        assert np.all(np.isfinite(p)) and _rows_sum_to_one(p)


def _rows_sum_to_one(p):
    return np.allclose(p.sum(axis=1), 1.0, rtol=0, atol=1e-12)


@pytest.mark.parametrize("estimate", ESTIMATES[1:])
def test_default_prior_is_scale_and_shift_invariant(estimate):
    X, y, X_test = _synthetic(seed=19, n=90)
    s = np.array([1.0, 1e-4, 1.0, 3e5, 1.0])
    t = np.array([0.0, 0.0, 7.0, -2e3, 0.0])
    a = GaussianNB(estimate=estimate).fit(X, y)
    b = GaussianNB(estimate=estimate).fit(X * s + t, y)
    assert_allclose(b.predict_proba(X_test * s + t), a.predict_proba(X_test), rtol=1e-9, atol=1e-12)
    assert_allclose(b.theta_, a.theta_ * s + t, rtol=1e-10)
    assert_allclose(b.var_, a.var_ * s**2, rtol=1e-10)
    # Densities rescale by 1 / |s| per feature and row.
    assert b.log_evidence() == pytest.approx(a.log_evidence() - len(y) * np.log(np.abs(s)).sum(), rel=1e-11)


def test_mle_with_uniform_rescaling_is_invariant():
    X, y, X_test = _synthetic(seed=20, n=90)
    a = GaussianNB(estimate="mle").fit(X, y)
    b = GaussianNB(estimate="mle").fit(X * 250.0 - 3.0, y)
    assert_allclose(b.predict_proba(X_test * 250.0 - 3.0), a.predict_proba(X_test), rtol=1e-9, atol=1e-12)


# ----------------------------------------------------------------------------- numerics


@pytest.mark.parametrize("compiled", [False, True], ids=["numpy", "jit"])
def test_quadratic_expansion_is_accurate_for_large_means(compiled, monkeypatch):
    if compiled:
        monkeypatch.setattr(gaussian, "_PLUGIN_CHUNK_ENTRIES", 64 * 6)
        monkeypatch.setattr(gaussian, "_T_CHUNK_ENTRIES", 64 * 4 * 6)
    direct_rows = direct_kernel_rows(monkeypatch)
    rng = np.random.default_rng(21)
    C, F, n = 4, 6, 300
    # |mean| / sd ~ 1e4, classes a few sd apart: centring alone makes the expansion exact.
    loc = 1e4 + rng.normal(0.0, 2.0, (C, F))
    var = rng.uniform(0.5, 2.0, (C, F))
    yk = rng.integers(0, C, n)
    X = loc[yk] + np.sqrt(var[yk]) * rng.standard_normal((n, F))
    got = gaussian.log_likelihood(gaussian.GaussianParams(loc, var), X)
    direct = stats.norm.logpdf(X[:, None, :], loc, np.sqrt(var)).sum(-1)
    assert direct_rows == []  # the expansion answered every row itself
    assert_allclose(got, direct, rtol=1e-13, atol=1e-11)
    # The test has teeth: without centring the expansion loses about eight digits here.
    iv = 1.0 / var
    naive = -0.5 * (X * X) @ iv.T + X @ (loc * iv).T - 0.5 * (loc * loc * iv + np.log(2 * np.pi * var)).sum(1)
    assert np.max(np.abs(naive - direct)) > 1e-7

    # One class far away (3e6 sd): no centre suits every class, the expansion's terms
    # dwarf its result, and those rows are recomputed by the direct form.
    loc_far = loc.copy()
    loc_far[3] = -3e6
    X_far = loc_far[yk] + np.sqrt(var[yk]) * rng.standard_normal((n, F))
    got_far = gaussian.log_likelihood(gaussian.GaussianParams(loc_far, var), X_far)
    direct_far = stats.norm.logpdf(X_far[:, None, :], loc_far, np.sqrt(var)).sum(-1)
    assert direct_rows == [n]
    assert_allclose(got_far, direct_far, rtol=1e-13, atol=1e-11)


def test_student_t_far_outliers_stay_finite():
    prior = NormalInverseGamma(loc=0.0, kappa=1.0, concentration=2.0, rate=1.0)
    est = GaussianNB(prior=prior).fit(np.array([[0.0, 1.0], [1.0, 0.0], [5.0, 5.0], [6.0, 4.0]]), [0, 0, 1, 1])
    X = np.array([[1e200, 0.0], [-1e180, 3.0], [1e6, 1e6]])
    lp = gaussian.log_predictive(est.posterior_, X)
    assert np.all(np.isfinite(lp))
    df, loc, scale = gaussian.predictive_params(est.posterior_)
    with mpmath.workdps(40):
        for i, row in enumerate(X):
            for c in range(2):
                ref = 0
                for j in range(2):
                    nu, m, s = (mpmath.mpf(float(v[c, j])) for v in (df, loc, scale))
                    z = (mpmath.mpf(float(row[j])) - m) / s
                    ref += (
                        mpmath.loggamma((nu + 1) / 2)
                        - mpmath.loggamma(nu / 2)
                        - mpmath.log(mpmath.sqrt(nu * mpmath.pi) * s)
                        - (nu + 1) / 2 * mpmath.log1p(z * z / nu)
                    )
                assert lp[i, c] == pytest.approx(float(ref), rel=1e-13)
    p = est.predict_proba(X)
    assert np.all(np.isfinite(p)) and _rows_sum_to_one(p)


@pytest.mark.parametrize("a", [0.5, 3.0, 29.99, 30.0, 1e3, 1e7])
@pytest.mark.parametrize("x", [0.5, 3.0, 1e5])
def test_log_rising_matches_mpmath(a, x):
    with mpmath.workdps(50):
        ref = float(mpmath.loggamma(mpmath.mpf(a) + mpmath.mpf(x)) - mpmath.loggamma(mpmath.mpf(a)))
    assert gaussian._log_rising(a, x) == pytest.approx(ref, rel=1e-13, abs=1e-14)


@pytest.mark.parametrize("estimate", ESTIMATES)
def test_every_estimate_gives_finite_normalised_probabilities(estimate):
    X, y, X_test = _synthetic(seed=22, n=90)
    est = GaussianNB(estimate=estimate).fit(X, y)
    extreme = np.vstack([X_test, X_test * 1e3, np.full((1, 5), 1e100), np.full((1, 5), -1e100), X.mean(0, keepdims=True)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = est.predict_proba(extreme)
        lp = est.predict_log_proba(extreme)
    assert np.all(np.isfinite(p)) and _rows_sum_to_one(p)
    assert not np.any(np.isnan(lp))
    draws = est.predict_proba_draws(X_test[:5], n_draws=7, random_state=0)
    assert draws.shape == (7, 5, 3) and np.all(np.isfinite(draws))
    assert np.allclose(draws.sum(-1), 1.0, atol=1e-12)


def test_zero_likelihood_rows_are_not_nan():
    """A row beyond float64 range of every class's density falls back to the class proportions."""
    X, y, _ = _synthetic(seed=23, n=60)
    est = GaussianNB(estimate="mean").fit(X, y)
    with pytest.warns(ZeroLikelihoodWarning):
        p = est.predict_proba(np.full((1, 5), 1e300))
    assert np.all(np.isfinite(p)) and _rows_sum_to_one(p)


# ----------------------------------------------------------------------------- undefined estimates


def test_mle_of_a_class_without_rows_is_an_error():
    X, y, _ = _synthetic(seed=24, n=40)
    est = GaussianNB(estimate="mle").partial_fit(X[y < 2], y[y < 2], classes=[0, 1, 2])
    with pytest.raises(ValueError, match="class index 2 has no training rows"):
        est.predict_proba(X)
    # The Bayesian estimates use the prior for that class.
    for estimate in ("map", "predictive"):
        p = est.set_params(estimate=estimate).predict_proba(X)
        assert np.all(np.isfinite(p)) and _rows_sum_to_one(p)
    # a_n = a_0 = 1 there: the posterior mean of the variance is infinite.
    est.set_params(estimate="predictive")
    assert np.all(np.isinf(est.var_[2])) and np.all(np.isfinite(est.var_[:2]))
    with pytest.raises(ValueError, match=r"a_n = 1 <= 1 at class index 2"):
        est.set_params(estimate="mean").predict_proba(X)


def test_mle_zero_variance_is_an_error_not_nan():
    X = np.array([[1.0, 2.0], [1.0, 3.0], [4.0, 5.0], [5.0, 5.0]])
    y = [0, 0, 1, 1]
    with pytest.raises(ValueError, match="zero variance for class index 0, feature 0"):
        GaussianNB(estimate="mle", var_smoothing=0.0).fit(X, y).predict(X)
    # With the default var_smoothing the floor keeps it finite, as in scikit-learn.
    p = GaussianNB(estimate="mle").fit(X, y).predict_proba(X)
    assert np.all(np.isfinite(p))


# ----------------------------------------------------------------------------- bad input


def _fitted():
    X, y, _ = _synthetic(seed=25, n=30)
    return GaussianNB().fit(X, y), X, y


@pytest.mark.parametrize("bad, match", [(np.nan, "NaN"), (np.inf, "infinity")])
def test_non_finite_input_is_rejected(bad, match):
    est, X, y = _fitted()
    Xb = X.copy()
    Xb[3, 2] = bad
    with pytest.raises(ValueError, match=match):
        GaussianNB().fit(Xb, y)
    with pytest.raises(ValueError, match=match):
        est.predict_proba(Xb)
    with pytest.raises(ValueError, match=match):
        est.partial_fit(Xb, y)
    with pytest.raises(ValueError, match="NaN or infinity"):
        gaussian_stats(Xb, y, 3)


def test_sparse_input_is_rejected():
    est, X, y = _fitted()
    with pytest.raises(TypeError, match="needs dense input; got a sparse matrix"):
        GaussianNB().fit(sp.csr_matrix(X), y)
    with pytest.raises(TypeError, match="needs dense input"):
        est.predict(sp.csr_matrix(X))
    with pytest.raises(TypeError, match="dense data"):
        gaussian_stats(sp.csr_matrix(X), y, 3)


def test_wrong_number_of_features_is_rejected():
    est, X, y = _fitted()
    with pytest.raises(ValueError, match="X has 4 features, but GaussianNB is expecting 5 features"):
        est.predict_proba(X[:, :4])
    with pytest.raises(ValueError, match="4 features"):
        est.partial_fit(X[:, :4], y)


@pytest.mark.parametrize(
    "prior, error, match",
    [
        (NormalInverseGamma(0.0, -1.0, 1.0, 1.0), ValueError, r"prior.kappa must be > 0"),
        (NormalInverseGamma(0.0, 1.0, 0.0, 1.0), ValueError, r"prior.concentration must be > 0"),
        (NormalInverseGamma(0.0, 1.0, 1.0, -2.0), ValueError, r"prior.rate must be > 0"),
        (NormalInverseGamma(np.nan, 1.0, 1.0, 1.0), ValueError, r"prior.loc must be finite"),
        (NormalInverseGamma(0.0, np.inf, 1.0, 1.0), ValueError, r"prior.kappa must be finite"),
        (NormalInverseGamma(np.zeros(4), 1.0, 1.0, 1.0), ValueError, r"prior.loc has shape \(4,\).*\(3, 5\)"),
        (NormalInverseGamma(0.0, np.ones((2, 5)), 1.0, 1.0), ValueError, r"prior.kappa has shape \(2, 5\)"),
        (NormalInverseGamma(0.0, "one", 1.0, 1.0), TypeError, r"prior.kappa must be a positive number"),
        ({"loc": 0.0}, TypeError, "NormalInverseGamma"),
        ((0.0, 1.0, 1.0, 1.0), TypeError, "NormalInverseGamma"),
    ],
)
def test_invalid_prior_is_rejected(prior, error, match):
    X, y, _ = _synthetic(seed=26, n=30)
    with pytest.raises(error, match=match):
        GaussianNB(prior=prior).fit(X, y)


def test_broadcastable_prior_is_accepted():
    X, y, _ = _synthetic(seed=27, n=30)
    prior = NormalInverseGamma(loc=np.zeros(5), kappa=np.ones((3, 1)), concentration=2.0, rate=np.full((3, 5), 0.5))
    est = GaussianNB(prior=prior).fit(X, y)
    assert all(np.shape(f) == (3, 5) for f in est.prior_)


@pytest.mark.parametrize("value", [-1e-9, np.nan, "small", None])
def test_invalid_var_smoothing_is_rejected(value):
    X, y, _ = _synthetic(seed=28, n=30)
    with pytest.raises(ValueError, match="var_smoothing must be a finite number >= 0"):
        GaussianNB(var_smoothing=value).fit(X, y)


def test_var_smoothing_set_after_fit_is_used():
    X, y, X_test = _synthetic(seed=30, n=60)
    est = GaussianNB(estimate="mle").fit(X, y)
    before = est.predict_proba(X_test)
    est.set_params(var_smoothing=0.5)
    after = est.predict_proba(X_test)
    ref = GaussianNB(estimate="mle", var_smoothing=0.5).fit(X, y).predict_proba(X_test)
    assert_allclose(after, ref, rtol=1e-13)
    assert not np.allclose(before, after)
    assert est.epsilon_ == pytest.approx(0.5 * X.var(axis=0).max(), rel=1e-12)


def test_unknown_estimate_is_rejected():
    X, y, _ = _synthetic(seed=29, n=30)
    with pytest.raises(ValueError, match="unknown estimate 'median'"):
        GaussianNB(estimate="median").fit(X, y)
