"""The number beside an interval summarises the interval's own distribution (issue 38, item 3).

* ``return_median=True``: the median of the very draws the interval is taken from
  (``np.quantile`` of ``predict_proba_draws`` with the same seed), on every path of the
  block engine, and inside the interval.
* ``posterior="updated"``: draws of p(y | x, theta, pi) under p(theta, pi | D, x), the
  posterior updated by the row itself. Their mean is the exact predictive
  (``estimate="predictive"``), checked by Monte Carlo on every family; their distribution
  equals the fitted posterior's draws reweighted by p(x | theta, pi) (importance
  sampling: an independent route to the same posterior).
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import logsumexp

import bayesnb
from bayesnb.analysis import uncertainty as U


def _counts(seed=0, n=24, f=5):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    X = rng.poisson(1.0 + 1.5 * np.outer(y, np.arange(f) % 2) + np.outer(1 - y, np.arange(f) % 3 == 0))
    return X, y


def _gauss(seed=0, n=24, f=3):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    return rng.normal(size=(n, f)) + 0.8 * y[:, None], y


def test_median_is_the_median_of_the_interval_draws():
    X, y = _counts()
    clf = bayesnb.MultinomialNB().fit(X[:18], y[:18])
    draws = clf.predict_proba_draws(X[18:], 400, random_state=3)
    for method in ("equal-tailed", "hdi"):
        lo, hi = clf.predict_proba_interval(X[18:], 0.9, n_draws=400, random_state=3, method=method)
        lo2, hi2, med = clf.predict_proba_interval(
            X[18:], 0.9, n_draws=400, random_state=3, method=method, return_median=True
        )
        assert_array_equal(lo, lo2)
        assert_array_equal(hi, hi2)
        assert_allclose(med, np.quantile(draws, 0.5, axis=0), rtol=1e-14, atol=0)
        assert np.all((lo <= med) & (med <= hi))


@pytest.mark.parametrize("chunk", [None, 64, 2_000])
def test_median_on_every_path_of_the_block_engine(chunk):
    # Small chunks force the kept-parameter and file-spill paths of proba_interval;
    # the median must be that of the same draws on each (the chunk sizes the blocks of
    # parameter draws, and so which draws a seed gives: the same chunk on both sides).
    X, y = _gauss()
    clf = bayesnb.GaussianNB().fit(X, y)
    draws = U.predict_proba_draws(clf, X, 200, random_state=1, chunk_entries=chunk)
    lo, hi, med = U.predict_proba_interval(clf, X, 0.8, n_draws=200, random_state=1, chunk_entries=chunk, return_median=True)
    # The same draws, scored in blocks of rows of other sizes by the two calls: equal to
    # the last bits of a float64 sum (1e-14 relative seen), not bit for bit.
    assert_allclose(med, np.quantile(draws, 0.5, axis=0), rtol=1e-12, atol=0)
    assert_allclose(lo, np.quantile(draws, 0.1, axis=0), rtol=1e-12, atol=0)
    assert np.all((lo <= med) & (med <= hi))


def test_hdi_median_may_lie_outside_a_narrow_window_and_is_not_moved():
    # A skewed sample: the 30% HDI hugs the mode, away from the median. The median is
    # reported as it is (never clipped into the window).
    draws = np.random.default_rng(0).exponential(size=(2001, 1))
    lo, hi, med = U._interval_inplace(draws.copy(), 0.3, "hdi", median=True)
    assert med[0] == pytest.approx(np.median(draws), rel=1e-14)
    assert hi[0] < med[0]


def _cases():
    Xc, yc = _counts()
    Xg, yg = _gauss()
    mixed_X = np.column_stack([Xc[:, :2], Xg[: len(Xc), :2]])
    return {
        "multinomial": (bayesnb.MultinomialNB(), Xc, yc),
        "bernoulli": (bayesnb.BernoulliNB(), (Xc > 1).astype(int), yc),
        "categorical": (bayesnb.CategoricalNB(), np.minimum(Xc, 3), yc),
        "poisson": (bayesnb.PoissonNB(), Xc, yc),
        "gaussian": (bayesnb.GaussianNB(), Xg, yg),
        "mixed": (
            bayesnb.MixedNB(blocks=[("c", bayesnb.CategoricalNB(), [0, 1]), ("g", bayesnb.GaussianNB(), [2, 3])]),
            np.column_stack([np.minimum(Xc[:, :2], 2), mixed_X[:, 2:]]),
            yc,
        ),
    }


@pytest.mark.parametrize("name", list(_cases()))
def test_updated_draws_average_to_the_exact_predictive(name):
    est, X, y = _cases()[name]
    est.fit(X[:-4], y[:-4])
    n = 4000
    draws = est.predict_proba_draws(X[-4:], n, random_state=0, posterior="updated")
    assert draws.shape == (n, 4, len(est.classes_))
    exact = est.set_params(estimate="predictive").predict_proba(X[-4:])
    se = draws.std(axis=0) / np.sqrt(n)
    # Fixed seed: deterministic. 4.5 standard errors per entry (a handful of entries).
    assert np.all(np.abs(draws.mean(axis=0) - exact) <= 4.5 * se + 1e-12), (draws.mean(axis=0), exact, se)
    # And not the fitted posterior's mean: the row moves the parameters (this data is
    # small enough for the difference to exceed the Monte Carlo error somewhere).
    fitted = est.predict_proba_draws(X[-4:], n, random_state=0).mean(axis=0)
    assert np.max(np.abs(fitted - exact)) > 0


def test_updated_draws_equal_importance_weighted_fitted_draws():
    # p(theta, pi | D, x) is p(theta, pi | D) reweighted by p(x | theta, pi) =
    # sum_c pi_c p(x | theta_c): weighted quantiles of the fitted draws estimate the same
    # distribution, without any conjugate update (a route independent of with_stats).
    X, y = _counts(seed=4, n=14, f=4)
    clf = bayesnb.MultinomialNB().fit(X[:-1], y[:-1])
    row = X[-1:]
    n = 40_000
    source = U.draw_source(clf, row, n, 7)
    params = source.sample(source.key, n)
    joint = source.log_likelihood(params, source.X)[:, 0, :] + source.log_class
    log_w = logsumexp(joint, axis=1)
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    p0 = np.exp(joint[:, 0] - logsumexp(joint, axis=1))
    order = np.argsort(p0)
    cdf = np.cumsum(w[order])
    updated = clf.predict_proba_draws(row, 20_000, random_state=2, posterior="updated")[:, 0, 0]
    for q in (0.05, 0.25, 0.5, 0.75, 0.95):
        weighted_q = p0[order][np.searchsorted(cdf, q)]
        # The updated draws' fraction below the weighted quantile is q, to Monte Carlo error.
        assert np.mean(updated <= weighted_q) == pytest.approx(q, abs=0.015)
    assert float(np.sum(w * p0)) == pytest.approx(float(clf.set_params(estimate="predictive").predict_proba(row)[0, 0]), rel=0.02)


def test_updated_interval_is_that_of_the_updated_draws():
    X, y = _counts()
    clf = bayesnb.BernoulliNB().fit((X[:18] > 1), y[:18])
    rows = X[18:] > 1
    draws = clf.predict_proba_draws(rows, 300, random_state=5, posterior="updated")
    lo, hi, med = clf.predict_proba_interval(rows, 0.9, n_draws=300, random_state=5, posterior="updated", return_median=True)
    assert_allclose(lo, np.quantile(draws, 0.05, axis=0), rtol=1e-14, atol=0)
    assert_allclose(hi, np.quantile(draws, 0.95, axis=0), rtol=1e-14, atol=0)
    assert_allclose(med, np.quantile(draws, 0.5, axis=0), rtol=1e-14, atol=0)


def test_a_long_document_puts_the_point_outside_the_fitted_interval():
    # The newswire case in small: a long document moves the parameters, so the
    # exact predictive lies outside the fitted posterior's 90% interval, while the
    # median printed beside it lies inside.
    rng = np.random.default_rng(0)
    p0, p1 = rng.dirichlet(np.ones(30)), rng.dirichlet(np.ones(30))
    X = np.vstack([rng.multinomial(20, p0, size=15), rng.multinomial(20, p1, size=15)])
    y = np.repeat([0, 1], 15)
    clf = bayesnb.MultinomialNB().fit(X, y)
    doc = rng.multinomial(400, (p0 + p1) / 2, size=3)
    p = clf.predict_proba(doc)
    lo, hi, med = clf.predict_proba_interval(doc, 0.9, n_draws=1000, random_state=0, return_median=True)
    assert np.any((p < lo) | (p > hi))
    assert np.all((lo <= med) & (med <= hi))


def test_bad_posterior_and_models_without_an_updated_posterior_are_refused():
    X, y = _counts()
    clf = bayesnb.MultinomialNB().fit(X, y)
    with pytest.raises(ValueError, match="unknown posterior 'posterior'"):
        clf.predict_proba_interval(X, posterior="posterior")
    with pytest.raises(ValueError, match="unknown posterior"):
        clf.predict_proba_draws(X, 10, posterior=None)
    tempered = bayesnb.MultinomialNB(temperature=2.0).fit(X, y)
    with pytest.raises(ValueError, match="temperature 1 without calibration"):
        tempered.predict_proba_interval(X, posterior="updated")
    # The fitted posterior's interval of a tempered model stays available.
    lo, hi = tempered.predict_proba_interval(X, n_draws=20, random_state=0)
    assert lo.shape == X[:, :0].shape[:1] + (2,)


def test_semi_supervised_passes_the_median_and_the_posterior_through():
    X, y = _counts(n=30)
    y = np.where(np.arange(30) < 12, y, -1)
    semi = bayesnb.SemiSupervisedNB(bayesnb.MultinomialNB(), unlabelled_weight=1.0).fit(X, y)
    inner = semi._fitted()
    lo, hi, med = semi.predict_proba_interval(X[:4], 0.9, n_draws=100, random_state=0, return_median=True)
    lo2, hi2, med2 = inner.predict_proba_interval(X[:4], 0.9, n_draws=100, random_state=0, return_median=True)
    assert_array_equal(med, med2)
    assert_array_equal(
        semi.predict_proba_draws(X[:2], 30, 1, posterior="updated"),
        inner.predict_proba_draws(X[:2], 30, 1, posterior="updated"),
    )
