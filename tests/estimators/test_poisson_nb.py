"""PoissonNB and the Poisson family: Gamma prior on each rate, negative-binomial predictive.

Oracles: numpyro's ``GammaPoisson`` and scipy's ``nbinom`` (predictive), scipy's
``poisson`` (plug-in likelihood), mpmath at 50 digits (huge counts), Monte Carlo over
independent numpy Gamma draws of the rates (predictive, within 5 standard errors),
``scipy.integrate.quad`` over the rate (evidence), the chain rule of predictives and the
normalisation of the evidence over all one-row data sets (evidence), scipy's Gamma
distribution (posterior draws), and scikit-learn's estimator checks.
"""

from __future__ import annotations

import warnings

import jax
import mpmath
import numpy as np
import pytest
import scipy.sparse as sp
from _sklearn_expected import ALWAYS_FRACTIONAL, FAIL_ON_FRACTIONAL_X, FRACTIONAL
from numpy.testing import assert_allclose, assert_array_equal
from scipy import integrate, stats
from scipy.special import gammaln
from sklearn.utils.estimator_checks import parametrize_with_checks

from bayesnb import ZeroLikelihoodWarning
from bayesnb.core.families import poisson
from bayesnb.core.priors import Gamma
from bayesnb.core.stats import CountStats, PoissonStats, count_stats, merge, poisson_stats
from bayesnb.estimators.poisson import PoissonNB

ESTIMATES = ("mle", "map", "mean", "predictive")

# ----------------------------------------------------------------------------- sklearn checks


class _IntegerFedPoissonNB(PoissonNB):
    """PoissonNB whose tags make scikit-learn's checks feed it integer data.

    scikit-learn rounds the check data to non-negative integers only for estimators tagged
    ``categorical``; this subclass sets that tag and nothing else (same code, same
    parameters), so that the checks exercise the estimator on data it accepts.
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        return tags


def _expected_failed_checks(estimator):
    names = ALWAYS_FRACTIONAL
    if not isinstance(estimator, _IntegerFedPoissonNB):
        names = names + FAIL_ON_FRACTIONAL_X
    return {name: FRACTIONAL for name in names}


# The defaults (PoissonNB()) are checked with every registered family's estimator in
# tests/estimators/test_estimators.py (the registry's list).
@parametrize_with_checks(
    [_IntegerFedPoissonNB()],
    expected_failed_checks=_expected_failed_checks,
    xfail_strict=True,  # a listed check that starts passing must be unlisted
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


# ----------------------------------------------------------------------------- data


def _data(seed=0, n_per_class=(6, 9, 7), n_features=4, scale=3.0):
    """Counts of three classes with different rates; every count of every class > 0 in total."""
    rng = np.random.default_rng(seed)
    rates = rng.uniform(0.5, scale, size=(len(n_per_class), n_features))
    y = np.repeat(np.arange(len(n_per_class)), n_per_class)
    X = rng.poisson(rates[y]).astype(float)
    X[np.cumsum((0,) + tuple(n_per_class[:-1]))] += 1.0  # every class has a positive total per feature
    return X, y


def _nb_logpmf_scipy(x, a, b):
    """Negative-binomial (Gamma-Poisson) log pmf with shape a, rate b, from scipy."""
    return stats.nbinom.logpmf(x, a, b / (b + 1.0))


# ----------------------------------------------------------------------------- predictive


@pytest.mark.parametrize("sparse", [False, True])
def test_predictive_equals_numpyro_gamma_poisson_and_scipy_nbinom(sparse):
    from numpyro.distributions import GammaPoisson

    X, y = _data(1)
    alpha = np.array([0.3, 1.0, 2.5, 7.0])
    beta = np.array([[0.2], [1.5], [0.05]])
    clf = PoissonNB(alpha=alpha, beta=beta).fit(X, y)
    rng = np.random.default_rng(2)
    # Small counts (per-level tables), counts above the table limit, and zeros.
    Xt = rng.poisson(2.0, size=(12, 4)).astype(float)
    Xt[0] = 0.0
    Xt[1] = [33.0, 0.0, 57.0, 1.0]
    Xt[2] = [0.0, 250.0, 0.0, 32.0]
    exact = clf.predict_joint_log_proba(sp.csr_matrix(Xt) if sparse else Xt) - clf.class_log_prior_

    a = alpha + clf.feature_count_
    b = np.broadcast_to(beta + clf.class_count_[:, None], a.shape)
    assert_allclose(exact, _nb_logpmf_scipy(Xt[:, None, :], a, b).sum(-1), rtol=1e-12, atol=1e-11)
    with jax.enable_x64(True):
        oracle = np.asarray(GammaPoisson(a, b).log_prob(Xt[:, None, :])).sum(-1)
    # numpyro writes the pmf with jax.scipy.special.betaln, which is accurate to only
    # ~4e-7 absolute in float64 at moderate arguments (betaln(10, 1) + log 10 = 4.1e-7,
    # while scipy and mpmath agree with bayesnb to 1e-15): hence the looser bound here
    # and the exact comparisons with scipy above and mpmath in the huge-count test.
    assert_allclose(exact, oracle, rtol=0, atol=4 * 1e-6)
    # The posterior object is exactly the conjugate update.
    assert_allclose(clf.posterior_.concentration, a, rtol=1e-15)
    assert_allclose(clf.posterior_.rate, b, rtol=1e-15)


def _mc_check(log_terms, exact_log, n_se=5.0, max_rel_se=0.05):
    """``exp(exact_log) == mean(exp(log_terms))`` over axis 0 within ``n_se`` standard errors."""
    shift = log_terms.max(axis=0)
    w = np.exp(log_terms - shift)
    mean = w.mean(axis=0)
    se = w.std(axis=0, ddof=1) / np.sqrt(w.shape[0])
    assert np.all(se <= max_rel_se * mean), "Monte Carlo error too large for a meaningful check"
    target = np.exp(exact_log - shift)
    assert np.all(np.abs(target - mean) <= n_se * se), (target, mean, se)
    return mean, se, shift


def test_predictive_equals_monte_carlo_over_posterior_rates():
    X, y = _data(3, n_per_class=(3, 4, 2), n_features=3)
    clf = PoissonNB(alpha=0.8, beta=0.4).fit(X, y)
    Xt = np.array([[0, 1, 2], [4, 0, 0], [1, 9, 3], [0, 0, 0], [6, 5, 7]], dtype=float)
    exact = clf.predict_joint_log_proba(Xt) - clf.class_log_prior_

    # Independent sampler: numpy's Gamma with the posterior shape and rate.
    rng = np.random.default_rng(4)
    a = 0.8 + clf.feature_count_
    b = 0.4 + clf.class_count_[:, None]
    lam = rng.gamma(a, 1.0 / b, size=(100_000,) + a.shape)  # (draws, C, F)
    log_lik = stats.poisson.logpmf(Xt[None, :, None, :], lam[:, None, :, :]).sum(-1)  # (draws, n, C)
    mean, se, shift = _mc_check(log_lik, exact)

    # Power: the Poisson plug-in of the posterior mean is not the predictive and is rejected.
    plug = stats.poisson.logpmf(Xt[:, None, :], a / b).sum(-1)
    assert np.abs(np.exp(plug - shift) - mean).max() > 20 * se.max()
    assert_allclose(clf.set_params(estimate="mean").predict_joint_log_proba(Xt) - clf.class_log_prior_, plug, rtol=1e-12)


@pytest.mark.parametrize("estimate", ["mle", "map", "mean"])
def test_plug_in_likelihood_equals_scipy_poisson_with_base_measure(estimate):
    X, y = _data(5)
    clf = PoissonNB(alpha=1.3, beta=0.7, estimate=estimate).fit(X, y)
    T, N = clf.feature_count_, clf.class_count_[:, None]
    rate = {"mle": T / N, "map": (1.3 + T - 1) / (0.7 + N), "mean": (1.3 + T) / (0.7 + N)}[estimate]
    assert_allclose(clf.rate_, rate, rtol=1e-13)
    Xt = np.random.default_rng(6).poisson(2.0, size=(9, 4)).astype(float)
    oracle = stats.poisson.logpmf(Xt[:, None, :], rate).sum(-1)
    assert_allclose(clf.predict_joint_log_proba(Xt) - clf.class_log_prior_, oracle, rtol=1e-12, atol=1e-12)


def test_rate_of_predictive_is_posterior_mean():
    X, y = _data(7)
    clf = PoissonNB(alpha=2.0, beta=0.3).fit(X, y)
    assert_allclose(clf.rate_, (2.0 + clf.feature_count_) / (0.3 + clf.class_count_[:, None]), rtol=1e-13)


def test_huge_counts_match_mpmath():
    X = np.array([[1e6, 3.0], [999_000.0, 0.0], [2.0, 1e6 + 17], [5.0, 1_000_321.0]])
    y = np.array([0, 0, 1, 1])
    clf = PoissonNB(alpha=1.0, beta=0.01).fit(X, y)
    Xt = np.array([[1_000_500.0, 1.0], [0.0, 0.0], [3.0, 999_999.0], [1e6, 1e6]])
    a = 1.0 + clf.feature_count_
    b = np.broadcast_to(0.01 + clf.class_count_[:, None], a.shape)
    mpmath.mp.dps = 50
    oracle = np.zeros((4, 2))
    for i in range(4):
        for c in range(2):
            for j in range(2):
                aa, bb, x = (mpmath.mpf(float(v)) for v in (a[c, j], b[c, j], Xt[i, j]))
                oracle[i, c] += float(
                    mpmath.loggamma(aa + x) - mpmath.loggamma(aa) - mpmath.loggamma(x + 1)
                    + aa * mpmath.log(bb / (bb + 1)) - x * mpmath.log(bb + 1)
                )
    exact = clf.predict_joint_log_proba(Xt) - clf.class_log_prior_
    # Terms of size ~1e7 enter the sum, each rounded to ~1e-9 absolute (observed <= 4e-9).
    assert_allclose(exact, oracle, rtol=0, atol=2e-8)
    for estimate in ESTIMATES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ZeroLikelihoodWarning)
            proba = clf.set_params(estimate=estimate).predict_proba(Xt)
        assert np.all(np.isfinite(proba))
        assert_allclose(proba.sum(1), 1.0, rtol=0, atol=1e-12)
    assert np.isfinite(clf.log_evidence())
    # The first test row is clearly class 0, the third clearly class 1.
    assert_array_equal(clf.set_params(estimate="predictive").predict(Xt[[0, 2]]), [0, 1])


# ----------------------------------------------------------------------------- evidence


_CLASS_SETTINGS = {
    "dirichlet": dict(class_alpha=1.0),
    "dirichlet_array": dict(class_alpha=np.array([0.7, 2.3, 1.4])),
    "fixed": dict(class_prior=np.array([0.2, 0.5, 0.3])),
    "uniform": dict(fit_prior=False),
}
_PRIORS = {
    "default": dict(),
    "scalars": dict(alpha=0.37, beta=2.5),
    "per_feature": dict(alpha=np.array([0.2, 1.0, 3.0, 0.6]), beta=np.array([0.1, 4.0, 1.0, 0.5])),
    "per_cell": dict(alpha=np.linspace(0.3, 5.0, 12).reshape(3, 4), beta=np.linspace(0.05, 2.0, 12).reshape(3, 4)),
}


def _first_term(x, c, prior, class_kw):
    """log p(x_0, y_0) under the prior, by hand: class predictive times negative binomials."""
    if "class_prior" in class_kw:
        log_pc = np.log(class_kw["class_prior"][c])
    elif class_kw.get("fit_prior", True) is False:
        log_pc = -np.log(3)
    else:
        beta_c = np.broadcast_to(np.asarray(class_kw.get("class_alpha", 1.0), float), (3,))
        log_pc = np.log(beta_c[c] / beta_c.sum())
    a0 = np.broadcast_to(np.asarray(prior.get("alpha", 1.0), float), (3, 4))[c]
    b0 = np.broadcast_to(np.asarray(prior.get("beta", 0.01), float), (3, 4))[c]
    return log_pc + _nb_logpmf_scipy(x, a0, b0).sum()


@pytest.mark.parametrize("class_setting", list(_CLASS_SETTINGS))
@pytest.mark.parametrize("prior_name", list(_PRIORS))
def test_log_evidence_equals_chain_rule(prior_name, class_setting):
    rng = np.random.default_rng(11)
    n = 12
    y = rng.integers(0, 3, size=n)
    y[2:5] = [2, 0, 1]
    X = rng.poisson([0.5, 2.0, 6.0, 1.0], size=(n, 4)).astype(float)
    X[3] = 0.0
    X[5, 2] = 40.0  # above the per-level table limit
    X[7, 0] = 123_456.0  # a huge count
    prior, class_kw = _PRIORS[prior_name], _CLASS_SETTINGS[class_setting]

    total = _first_term(X[0], y[0], prior, class_kw)
    est = PoissonNB(**prior, **class_kw)
    for i in range(1, n):
        est.partial_fit(X[i - 1 : i], y[i - 1 : i], classes=[0, 1, 2])
        total += est.predict_joint_log_proba(X[i : i + 1])[0, y[i]]
    full = PoissonNB(**prior, **class_kw).fit(X, y)
    assert full.log_evidence() == pytest.approx(total, rel=1e-9, abs=1e-9)
    est.partial_fit(X[-1:], y[-1:])
    assert est.log_evidence() == pytest.approx(total, rel=1e-9, abs=1e-9)


def test_log_evidence_equals_quadrature_one_feature_one_class():
    x = np.array([3.0, 0.0, 5.0, 2.0, 7.0])
    a0, b0 = 1.7, 0.6
    clf = PoissonNB(alpha=a0, beta=b0).fit(x[:, None], np.zeros(5, int))

    def log_integrand(lam):
        return stats.poisson.logpmf(x, lam).sum() + stats.gamma.logpdf(lam, a0, scale=1.0 / b0)

    mode = (a0 + x.sum() - 1) / (b0 + x.size)
    shift = log_integrand(mode)
    # A finite range with the mode as a break point (quad on [0, inf) can miss a narrow
    # peak); the posterior mass beyond it is below 1e-30.
    hi = 20 * mode
    value, _ = integrate.quad(
        lambda t: np.exp(log_integrand(t) - shift), 0.0, hi, points=[mode], limit=200, epsabs=0, epsrel=1e-13
    )
    assert stats.gamma.sf(hi, a0 + x.sum(), scale=1.0 / (b0 + x.size)) < 1e-30
    # One class: the label part of the evidence is zero.
    assert clf.log_evidence() == pytest.approx(np.log(value) + shift, rel=1e-11)
    # Power: an evidence without the base measure -sum(log x!) would be rejected.
    assert abs(clf.log_evidence() + gammaln(x + 1).sum() - (np.log(value) + shift)) > 1.0


def test_evidence_of_every_one_row_data_set_sums_to_one():
    """Σ_x p(x) = 1: the evidence is a probability of the counts (base measure included)."""
    prior = poisson.make_prior(2.0, 0.5, (1, 1))
    xs = np.arange(0, 400, dtype=float)
    log_p = np.array([poisson.log_evidence(prior, poisson_stats(np.array([[v]]), np.array([0]), 1)) for v in xs])
    assert np.exp(log_p).sum() == pytest.approx(1.0, abs=1e-12)
    # ... and the prior predictive is the same negative binomial.
    assert_allclose(log_p, _nb_logpmf_scipy(xs, 2.0, 0.5), rtol=1e-12, atol=1e-12)


def test_log_evidence_needs_the_log_factorial_statistic():
    X, y = _data(8)
    prior = poisson.make_prior(1.0, 1.0, (3, 4))
    with pytest.raises(TypeError, match="PoissonStats"):
        poisson.log_evidence(prior, count_stats(X, y, 3))


# ----------------------------------------------------------------------------- additivity


def _assert_same_fit(a, b, Xt, rtol=1e-12):
    for s, t in zip(a.stats_, b.stats_):
        assert_allclose(s, t, rtol=rtol, atol=1e-12)
    for estimate in ESTIMATES:
        a.set_params(estimate=estimate)
        b.set_params(estimate=estimate)
        assert_allclose(a.predict_joint_log_proba(Xt), b.predict_joint_log_proba(Xt), rtol=rtol, atol=1e-10)
    assert a.log_evidence() == pytest.approx(b.log_evidence(), rel=rtol)


def test_fit_equals_chained_partial_fit_equals_stats_merge():
    X, y = _data(9, n_per_class=(8, 11, 6))
    w = np.random.default_rng(10).uniform(0.2, 3.0, size=y.size)
    Xt = _data(19)[0]
    full = PoissonNB(alpha=1.5, beta=0.2).fit(X, y, sample_weight=w)
    chained = PoissonNB(alpha=1.5, beta=0.2)
    shards = np.array_split(np.random.default_rng(12).permutation(y.size), 4)
    for idx in shards:
        chained.partial_fit(X[idx], y[idx], classes=[0, 1, 2], sample_weight=w[idx])
    _assert_same_fit(full, chained, Xt)
    merged = merge(*(poisson_stats(sp.csr_matrix(X[idx]), y[idx], 3, w[idx]) for idx in shards))
    assert isinstance(merged, PoissonStats)
    for s, t in zip(merged, full.stats_):
        assert_allclose(s, t, rtol=1e-12)
    assert poisson.log_evidence(full.prior_, merged) == pytest.approx(
        full.log_evidence() - _class_part(full), rel=1e-12
    )


def _class_part(clf):
    from bayesnb.core import class_prior as cp

    return cp.log_evidence(clf.class_dirichlet_, clf.stats_.class_count)


def test_poisson_stats_by_hand_and_merge_refuses_other_types():
    X = np.array([[0, 3, 1], [2, 0, 0], [5, 1, 1]], dtype=float)
    y = np.array([1, 0, 1])
    w = np.array([0.5, 2.0, 1.5])
    s = poisson_stats(X, y, 2, w)
    assert_allclose(s.class_count, [2.0, 2.0])
    assert_allclose(s.feature_count, [[4.0, 0.0, 0.0], [0.5 * 0 + 1.5 * 5, 0.5 * 3 + 1.5 * 1, 0.5 + 1.5]])
    lf = gammaln(X + 1).sum(1)
    assert_allclose(s.log_factorial, [2.0 * lf[1], 0.5 * lf[0] + 1.5 * lf[2]], rtol=1e-14)
    with pytest.raises(TypeError, match="cannot merge"):
        merge(s, CountStats(s.class_count, s.feature_count))


def test_duplicated_rows_equal_sample_weight_two():
    X, y = _data(13)
    Xt = _data(14)[0]
    twice = np.r_[X, X[:5]], np.r_[y, y[:5]]
    w = np.ones(y.size)
    w[:5] = 2.0
    _assert_same_fit(PoissonNB(alpha=0.9).fit(*twice), PoissonNB(alpha=0.9).fit(X, y, sample_weight=w), Xt)


def test_dense_equals_csr_including_duplicate_entries_and_explicit_zeros():
    X, y = _data(15, n_per_class=(10, 12, 9), n_features=6)
    X[:, 2] = 0.0
    X[4, 1] = 77.0
    Xt = _data(16, n_features=6)[0]
    Xt[0, 5] = 41.0
    dense = PoissonNB(alpha=1.4, beta=1.1).fit(X, y)
    csr = PoissonNB(alpha=1.4, beta=1.1).fit(sp.csr_matrix(X), y)
    _assert_same_fit(dense, csr, sp.csr_matrix(Xt))
    for estimate in ESTIMATES:
        dense.set_params(estimate=estimate)
        assert_allclose(dense.predict_joint_log_proba(Xt), dense.predict_joint_log_proba(sp.csr_matrix(Xt)), rtol=1e-12)

    # A non-canonical CSR: the count 41 at (0, 5) split into duplicates 20 + 21, and
    # explicit zeros. log x! and the rising factorial are not additive over duplicates.
    coo = sp.coo_matrix(Xt)
    rows, cols, vals = coo.row.tolist(), coo.col.tolist(), coo.data.tolist()
    vals[next(i for i in range(len(vals)) if (rows[i], cols[i]) == (0, 5))] = 20.0
    rows, cols, vals = rows + [0, 0, 1], cols + [5, 5, 3], vals + [21.0, 0.0, 0.0]
    order = np.lexsort((cols, rows))
    indptr = np.r_[0, np.cumsum(np.bincount(rows, minlength=Xt.shape[0]))]
    odd = sp.csr_matrix((np.asarray(vals)[order], np.asarray(cols)[order], indptr), shape=Xt.shape)
    assert not odd.has_canonical_format
    before = odd.data.copy()
    dense.set_params(estimate="predictive")
    assert_allclose(dense.predict_joint_log_proba(odd), dense.predict_joint_log_proba(Xt), rtol=1e-12)
    assert_array_equal(odd.data, before)  # the caller's matrix is not altered


def test_refit_on_many_rows_recovers_known_rates():
    rates = np.array([[0.02, 0.7, 3.0, 40.0, 1e4], [1.5, 0.0, 3.0, 10.0, 2e4]])
    n = 20_000
    rng = np.random.default_rng(17)
    y = np.repeat([0, 1], n)
    X = rng.poisson(rates[y]).astype(float)
    clf = PoissonNB().fit(sp.csr_matrix(X), y)
    se = np.sqrt(np.maximum(rates, 1e-3) / n)
    for estimate in ("mle", "map", "mean", "predictive"):
        assert np.all(np.abs(clf.set_params(estimate=estimate).rate_ - rates) <= 5 * se), estimate
    # Exact under "mle", zero rate included.
    assert clf.set_params(estimate="mle").rate_[1, 1] == 0.0


# ----------------------------------------------------------------------------- estimates


@pytest.mark.parametrize("estimate", ESTIMATES)
def test_every_estimate_gives_finite_normalised_probabilities(estimate):
    X, y = _data(20)
    X[:, 3] = np.where(y == 0, 0.0, X[:, 3])  # class 0 never shows feature 3
    X[:, 1] = 0.0  # no class shows feature 1
    clf = PoissonNB(estimate=estimate).fit(sp.csr_matrix(X), y)
    Xt = np.array([[0, 0, 0, 0], [1, 0, 2, 5], [3, 2, 1, 0], [40, 0, 9, 12]], dtype=float)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        proba = clf.predict_proba(Xt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ZeroLikelihoodWarning)
        log_proba = clf.predict_log_proba(Xt)
    assert np.all(np.isfinite(proba)) and not np.isnan(log_proba).any()
    assert_allclose(proba.sum(1), 1.0, rtol=0, atol=1e-12)
    assert_allclose(np.exp(log_proba), proba, rtol=1e-12, atol=0)
    dead = [w for w in caught if issubclass(w.category, ZeroLikelihoodWarning)]
    if estimate in ("mle", "map"):
        # Row 2 has feature 1 > 0, never seen in any class: a zero rate everywhere (the
        # MAP with alpha = 1 is T / (beta + N), zero too). It gets the class proportions.
        assert len(dead) == 1 and "1 row(s)" in str(dead[0].message)
        assert_allclose(proba[2], np.exp(clf.class_log_prior_), rtol=1e-12)
        # Rows 1 and 3 are impossible under class 0 only (feature 3 unseen there).
        assert proba[1, 0] == 0.0 and proba[3, 0] == 0.0 and np.all(proba[[1, 3], 1:] > 0)
    else:
        assert not dead
        assert np.all(proba > 0)


def test_map_needs_posterior_shape_at_least_one():
    X, y = _data(21)
    X[:, 0] = 0.0
    clf = PoissonNB(alpha=0.5, estimate="map").fit(X, y)
    with pytest.raises(ValueError, match=r"estimate='map' is undefined.*shape is 0\.5 < 1"):
        clf.predict_proba(X)
    # Features with counts are fine: a shape of alpha + T >= 1 there.
    clf = PoissonNB(alpha=0.5, estimate="map").fit(X[:, 1:], y)
    assert_allclose(clf.rate_, (0.5 + clf.feature_count_ - 1) / (0.01 + clf.class_count_[:, None]), rtol=1e-13)


def test_mle_of_a_class_without_rows_is_the_prior_mean():
    X, y = _data(22)
    alpha = np.array([0.5, 2.0, 3.0, 1.0])
    clf = PoissonNB(alpha=alpha, beta=4.0, estimate="mle").partial_fit(X, y, classes=[0, 1, 2, 3])
    assert clf.class_count_[3] == 0
    assert_allclose(clf.rate_[3], alpha / 4.0, rtol=1e-15)
    assert_allclose(clf.rate_[:3], clf.feature_count_[:3] / clf.class_count_[:3, None], rtol=1e-13)
    # The same through a class whose rows all carry zero weight.
    w = np.where(y == 1, 0.0, 1.0)
    clf = PoissonNB(alpha=alpha, beta=4.0, estimate="mle", fit_prior=False).fit(X, y, sample_weight=w)
    assert_allclose(clf.rate_[1], alpha / 4.0, rtol=1e-15)
    assert np.all(np.isfinite(clf.predict_joint_log_proba(X)))


def test_sample_posterior_is_the_gamma_posterior():
    # Draw shapes are shared with the other sampling tests: each new shape costs a JAX compile.
    X, y = _data(23, n_per_class=(2, 3, 1))
    clf = PoissonNB(alpha=np.array([1e-3, 2.0, 0.5, 30.0]), beta=0.5).fit(X, y)
    n = 20_000
    draws = clf.sample_posterior(n, random_state=0)
    assert draws["rate"].shape == (n, 3, 4) and draws["rate"].dtype == np.float64
    assert draws["class_probs"].shape == (n, 3)
    assert_array_equal(draws["rate"], clf.sample_posterior(n, random_state=0)["rate"])
    a, b = clf.posterior_.concentration, clf.posterior_.rate
    mean = draws["rate"].mean(0)
    se = np.sqrt(a) / b / np.sqrt(n)
    assert np.all(np.abs(mean - a / b) <= 5 * se)
    # Shape, not only mean: Kolmogorov-Smirnov against scipy's Gamma for two cells.
    for c, j in [(0, 1), (2, 0), (1, 2)]:
        assert stats.kstest(draws["rate"][:, c, j], stats.gamma(a[c, j], scale=1.0 / b[c, j]).cdf).pvalue > 1e-3
    # Draws are kept as log rates: a tiny shape does not underflow into impossible rows.
    tiny = PoissonNB(alpha=1e-3, beta=1.0).partial_fit(X[:1], y[:1], classes=[0, 1, 2])
    assert np.any(tiny.sample_posterior(3, random_state=1)["rate"][:, 1:] == 0.0)  # exp underflows
    p = tiny.predict_proba_draws(np.array([[3.0, 4.0, 0.0, 1.0]]), n_draws=3, random_state=1)
    assert np.all(np.isfinite(p)) and np.allclose(p.sum(-1), 1.0)
    # ... and the likelihood of a positive count under those draws stays finite in log space.
    log_rate = poisson.sample(jax.random.key(1), tiny.posterior_, 3).log_rate
    assert np.all(np.isfinite(np.asarray(log_rate)))
    assert np.all(np.isfinite(poisson.log_likelihood(poisson.PoissonParams(np.asarray(log_rate)[0]), np.ones((1, 4)))))


def test_predict_proba_draws_use_the_poisson_likelihood_of_each_draw():
    X, y = _data(24)
    clf = PoissonNB(alpha=1.2, beta=0.3).fit(X, y)
    Xt = _data(25)[0][:4]
    key = jax.random.key(5)
    p = clf.predict_proba_draws(Xt, n_draws=3, random_state=key)
    d = clf.sample_posterior(3, random_state=key)
    for k in range(3):
        joint = stats.poisson.logpmf(Xt[:, None, :], d["rate"][k]).sum(-1) + np.log(d["class_probs"][k])
        expected = np.exp(joint - np.logaddexp.reduce(joint, axis=1, keepdims=True))
        assert_allclose(p[k], expected, rtol=1e-10)


def test_x64_is_scoped_inside_the_library():
    flag = bool(jax.config.jax_enable_x64)
    X, y = _data(26)
    clf = PoissonNB().fit(X, y)
    clf.predict_proba(X)
    clf.log_evidence()
    clf.sample_posterior(3, random_state=0)
    assert bool(jax.config.jax_enable_x64) == flag


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize(
    "bad,error,match",
    [
        (-1.0, ValueError, "Negative values in data passed to PoissonNB"),
        (2.5, ValueError, r"PoissonNB needs integer counts \(the Poisson distribution"),
        (np.nan, ValueError, "Input X contains NaN"),
        (np.inf, ValueError, "Input X contains infinity"),
    ],
)
def test_bad_counts_raise(bad, error, match, sparse):
    X, y = _data(27)
    X_bad = X.copy()
    X_bad[2, 1] = bad
    make = sp.csr_matrix if sparse else np.asarray
    with pytest.raises(error, match=match):
        PoissonNB().fit(make(X_bad), y)
    clf = PoissonNB().fit(make(X), y)
    with pytest.raises(error, match=match):
        clf.predict(make(X_bad))
    with pytest.raises(error, match=match):
        clf.partial_fit(make(X_bad), y)


@pytest.mark.parametrize(
    "params,error,match",
    [
        (dict(alpha=0.0), ValueError, r"alpha \(Gamma concentration\) must be > 0"),
        (dict(alpha=-2.0), ValueError, r"alpha \(Gamma concentration\) must be > 0"),
        (dict(beta=0.0), ValueError, r"beta \(Gamma rate\) must be > 0"),
        (dict(beta=np.nan), ValueError, r"beta \(Gamma rate\) must be finite"),
        (dict(alpha=np.inf), ValueError, r"alpha \(Gamma concentration\) must be finite"),
        (dict(alpha="one"), TypeError, r"alpha \(Gamma concentration\) must be a positive number"),
        (dict(beta=None), TypeError, r"beta \(Gamma rate\) must be a positive number"),
        (dict(alpha=np.ones(5)), ValueError, r"alpha .* has shape \(5,\), which does not broadcast to \(3, 4\)"),
        (dict(beta=np.ones((2, 4))), ValueError, r"beta .* has shape \(2, 4\), which does not broadcast"),
        (dict(estimate="median"), ValueError, "unknown estimate 'median'"),
    ],
)
def test_bad_parameters_raise(params, error, match):
    X, y = _data(28)
    with pytest.raises(error, match=match):
        PoissonNB(**params).fit(X, y)


def test_wrong_number_of_features_and_bad_weights_raise():
    X, y = _data(29)
    clf = PoissonNB().fit(X, y)
    with pytest.raises(ValueError, match="X has 3 features, but PoissonNB is expecting 4 features"):
        clf.predict(X[:, :3])
    with pytest.raises(ValueError, match="Negative values in sample_weight"):
        PoissonNB().fit(X, y, sample_weight=-np.ones(y.size))


def test_prior_is_fixed_and_not_moved_by_data():
    """The default prior does not depend on the data: partial_fit never changes it."""
    X, y = _data(30)
    clf = PoissonNB().partial_fit(X[:4], y[:4], classes=[0, 1, 2])
    first = clf.prior_
    clf.partial_fit(X[4:], y[4:])
    assert isinstance(clf.prior_, Gamma)
    assert_array_equal(clf.prior_.concentration, first.concentration)
    assert_array_equal(clf.prior_.rate, first.rate)
    assert_array_equal(clf.prior_.concentration, np.ones((3, 4)))
    assert_array_equal(clf.prior_.rate, np.full((3, 4), 0.01))


def test_prior_instance_equals_alpha_beta_and_is_validated():
    """``prior=Gamma(a, b)`` is the same model as ``alpha=a, beta=b``; bad priors are named."""
    rng = np.random.default_rng(3)
    X = rng.poisson(2.0, size=(40, 5))
    y = rng.integers(0, 2, size=40)
    a = rng.uniform(0.5, 3.0, size=(2, 5))
    by_instance = PoissonNB(prior=Gamma(a, 0.3)).fit(X, y)
    by_params = PoissonNB(alpha=a, beta=0.3).fit(X, y)
    np.testing.assert_allclose(by_instance.predict_proba(X), by_params.predict_proba(X), rtol=0, atol=1e-14)
    assert by_instance.log_evidence() == pytest.approx(by_params.log_evidence(), abs=1e-12)
    with pytest.raises(ValueError, match=r"prior.rate \(Gamma rate\) must be > 0"):
        PoissonNB(prior=Gamma(1.0, -1.0)).fit(X, y)
    with pytest.raises(TypeError, match=r"prior must be a bayesnb.core.priors.Gamma"):
        PoissonNB(prior=(1.0, 1.0)).fit(X, y)


# ----------------------------------------------------------------------------- class contrast


@pytest.mark.parametrize("sparse", [False, True])
def test_the_class_contrast_is_the_likelihood_less_each_rows_log_factorial(sparse):
    """``predict_proba`` scores the contrast: the plug-in likelihood without
    -sum_j log x_j!, a term of the row alone. Against scipy's Poisson log pmf, row by
    row; entries stored twice (linear: their sum) give the same contrast; the class
    posteriors equal those of the full joint; the joint itself keeps the term."""
    X, y = _data(seed=41)
    clf = PoissonNB(estimate="mean").fit(X, y)
    params = clf._point("mean")
    log_rate = np.asarray(params.log_rate)
    full = stats.poisson.logpmf(X[:, None, :], np.exp(log_rate)[None]).sum(axis=-1)
    log_fact = gammaln(X + 1.0).sum(axis=1)
    Xin = sp.csr_matrix(X) if sparse else X
    contrast = poisson.log_likelihood_contrast(params, Xin)
    assert_allclose(contrast, full + log_fact[:, None], rtol=1e-13, atol=1e-12)
    assert np.ptp(contrast - poisson.log_likelihood(params, Xin), axis=1).max() < 1e-12
    if sparse:
        # every value stored as two halves (the CSR arrays written directly: a COO build
        # would sum them)
        split = sp.csr_matrix(X)
        dup = sp.csr_matrix((np.r_[split.data / 2, split.data / 2], np.r_[split.indices, split.indices], np.r_[0, 2 * np.cumsum(np.diff(split.indptr))]), shape=X.shape)
        dup.data[:] = np.concatenate([np.r_[d, d] for d in np.split(split.data / 2, split.indptr[1:-1])])
        dup.indices[:] = np.concatenate([np.r_[j, j] for j in np.split(split.indices, split.indptr[1:-1])])
        assert not dup.has_canonical_format and dup.nnz == 2 * split.nnz
        assert_allclose(poisson.log_likelihood_contrast(params, dup), contrast, rtol=1e-14, atol=1e-12)
    joint = full + clf.class_log_prior_
    proba = np.exp(joint - np.logaddexp.reduce(joint, axis=1, keepdims=True))
    assert_allclose(clf.predict_proba(Xin), proba, rtol=1e-12, atol=1e-14)
    assert_allclose(clf.predict_joint_log_proba(Xin), joint, rtol=1e-12, atol=1e-10)


def test_the_class_contrast_with_a_mask_is_the_likelihood_of_the_observed_entries():
    X, y = _data(seed=42)
    params = PoissonNB(estimate="mean").fit(X, y)._point("mean")
    mask = np.ones(X.shape, dtype=bool)
    mask[::3, 1] = False
    assert_array_equal(poisson.family.log_likelihood_contrast(params, X, None, mask=mask), poisson.family.log_likelihood(params, X, None, mask=mask))


@pytest.mark.parametrize("sparse", [False, True])
def test_the_predictive_contrast_is_the_negative_binomial_less_each_rows_log_factorial(sparse):
    """``predict_proba`` with ``estimate="predictive"`` scores the exact predictive less
    -sum_j log x_j!: against scipy's negative binomial, row by row; the class posteriors
    equal those of the full joint, which keeps the term."""
    X, y = _data(seed=43)
    X[0, 1] = 300.0  # a count past the tables
    clf = PoissonNB(estimate="predictive").fit(X, y)
    a = np.asarray(clf.posterior_.concentration)
    b = np.asarray(clf.posterior_.rate)
    full = np.stack([_nb_logpmf_scipy(X, a[c], b[c]).sum(axis=1) for c in range(a.shape[0])], axis=1)
    Xin = sp.csr_matrix(X) if sparse else X
    contrast = poisson.log_predictive_contrast(clf.posterior_, Xin)
    assert_allclose(contrast, full + gammaln(X + 1.0).sum(axis=1)[:, None], rtol=1e-12, atol=1e-10)
    joint = full + clf.class_log_prior_
    assert_allclose(clf.predict_joint_log_proba(Xin), joint, rtol=1e-12, atol=1e-10)
    assert_allclose(clf.predict_proba(Xin), np.exp(joint - np.logaddexp.reduce(joint, axis=1, keepdims=True)), rtol=1e-11, atol=1e-14)


def test_predict_proba_leaves_the_log_factorials_out_and_the_joint_keeps_them(monkeypatch):
    X, y = _data(seed=44)
    clf = PoissonNB(estimate="predictive").fit(sp.csr_matrix(X), y)
    real, seen = poisson._log_predictive, []
    monkeypatch.setattr(poisson, "_log_predictive", lambda post, X, factorials: seen.append(factorials) or real(post, X, factorials))
    clf.predict_proba(X)
    clf.predict_joint_log_proba(X)
    assert seen == [False, True]
