"""The family contract: what every registered family must satisfy, checked by registration.

Parametrised over :func:`bayesnb.core.families.names`, with data generated from each family's
``support`` (never from its name), so that a family registered later is covered by
these tests with no edit here. Each check has an oracle that shares no code with the
family's closed forms:

* statistics are additive: the statistics of two halves merged are those of the whole;
* the posterior has the prior's type, and ``sample`` draws have a leading draw axis;
* chain rule: ``log_evidence`` equals the sum of one-step-ahead log predictives, each
  from the posterior of the rows before it (zero weights leave rows out, so every step
  uses the family's own statistics);
* the exact predictive is the posterior average of the likelihood: a Monte Carlo mean
  of ``exp(log_likelihood)`` over ``sample`` draws, within 5 Monte Carlo standard errors;
* where the predictive is the plug-in of the mean (``mean_params``), the two agree;
* simulation-based calibration (Talts et al. 2018), small: parameters drawn from the
  prior, data simulated from them, the rank of the true value among posterior draws is
  uniform (chi-square test, fixed seeds);
* the family's estimator (``bayesnb.estimators.estimator_for``) survives a save/load round
  trip bit for bit.

The gradient of the evidence (``tests/core/test_family_evidence_grad.py``), masks of missing
entries and the numpyro model have contract tests of their own.
"""

from __future__ import annotations

import io

import jax
import numpy as np
import pytest
from scipy import stats as st

import bayesnb
from bayesnb.core import families
from bayesnb.estimators import estimator_for

N_CLASSES = 2
N_FEATURES = 3
N_CATEGORIES = 3


def _rows(support, rng, y):
    """Rows of the given support whose distribution depends on the class."""
    n = y.shape[0]
    shift = y[:, None].astype(np.float64)
    if support == "counts":
        return rng.poisson(2.0 + 2.0 * shift * np.arange(1, N_FEATURES + 1) / N_FEATURES, (n, N_FEATURES))
    if support == "binary":
        return (rng.random((n, N_FEATURES)) < 0.3 + 0.4 * shift).astype(np.int64)
    if support == "codes":
        cdf = np.cumsum(np.where(y[:, None] == 0, [0.6, 0.3, 0.1], [0.2, 0.3, 0.5]), axis=1)
        u = rng.random((n, N_FEATURES))
        return (u[:, :, None] > cdf[:, None, :]).sum(-1).astype(np.int64)
    if support == "real":
        return rng.normal(shift, 1.0 + 0.5 * shift, (n, N_FEATURES))
    if support == "positive":
        return rng.exponential(1.0 + shift, (n, N_FEATURES))
    raise AssertionError(f"no data generator for support {support!r}: add one to this test")


def _data(name, n=16, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % N_CLASSES
    X = _rows(families.get(name).support, rng, y)
    if families.get(name).support == "codes":
        X[: N_CATEGORIES, 0] = np.arange(N_CATEGORIES)  # every category seen in the first feature
    return X, y


def _stats(family, X, y, weight=None):
    return family.stats(X, y, N_CLASSES, weight)


def _leaves_close(a, b, rtol=1e-12, atol=1e-12):
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    assert len(la) == len(lb)
    for u, v in zip(la, lb):
        np.testing.assert_allclose(np.asarray(u, dtype=np.float64), np.asarray(v, dtype=np.float64), rtol=rtol, atol=atol)


def _take(params, i):
    return jax.tree.map(lambda a: np.asarray(a)[i], params)


NAMES = families.names()


def test_every_registered_family_is_a_family_with_the_documented_members():
    assert {"multinomial", "bernoulli", "categorical", "gaussian", "gaussian_mv", "poisson"} <= set(NAMES)
    for name in NAMES:
        fam = families.get(name)
        assert isinstance(fam, families.Family) and fam.name == name
        assert fam.support in ("counts", "binary", "codes", "real", "positive")
        assert set(fam.hyperparameters) <= set(fam.prior_type._fields)
    with pytest.raises(ValueError, match="unknown family 'no-such'.*multinomial"):
        families.get("no-such")


@pytest.mark.parametrize("name", NAMES)
def test_statistics_merge_to_those_of_the_whole(name):
    fam = families.get(name)
    X, y = _data(name, n=20)
    whole = _stats(fam, X, y)
    merged = fam.merge(_stats(fam, X[:7], y[:7]), _stats(fam, X[7:], y[7:]))
    assert type(merged) is type(whole)
    _leaves_close(merged, whole)
    # A weight of 2 is the row twice.
    twice = _stats(fam, np.concatenate([X, X[:5]]), np.concatenate([y, y[:5]]))
    weighted = _stats(fam, X, y, np.where(np.arange(20) < 5, 2.0, 1.0))
    _leaves_close(weighted, twice)


@pytest.mark.parametrize("name", NAMES)
def test_posterior_has_the_prior_type_and_draws_have_a_leading_axis(name):
    fam = families.get(name)
    X, y = _data(name)
    stats = _stats(fam, X, y)
    prior = fam.default_prior(stats)
    assert type(prior) is fam.prior_type
    post = fam.posterior(prior, stats)
    assert type(post) is fam.prior_type
    draws = fam.sample(jax.random.key(0), post, 5)
    mean = fam.point(prior, stats, "mean")
    assert type(draws) is type(mean)
    for d, m in zip(jax.tree.leaves(draws), jax.tree.leaves(mean)):
        assert np.shape(d) == (5,) + np.shape(m)


@pytest.mark.parametrize("name", NAMES)
def test_log_evidence_is_the_chain_rule_of_predictives(name):
    check_chain_rule(families.get(name))


def check_chain_rule(fam):
    X, y = _data(fam.name, n=10, seed=1)
    prior = fam.default_prior(_stats(fam, X, y))
    total = float(fam.log_evidence(prior, _stats(fam, X, y)))
    steps = 0.0
    for i in range(X.shape[0]):
        before = _stats(fam, X, y, (np.arange(X.shape[0]) < i).astype(np.float64))
        lp = fam.log_predictive(fam.posterior(prior, before), X[i : i + 1])
        steps += float(np.asarray(lp)[0, y[i]])
    assert np.isfinite(total)
    assert total == pytest.approx(steps, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("name", NAMES)
def test_predictive_is_the_posterior_mean_of_the_likelihood(name):
    check_predictive_by_monte_carlo(families.get(name))


def check_predictive_by_monte_carlo(fam):
    name = fam.name
    X, y = _data(name, n=12, seed=2)
    stats = _stats(fam, X, y)
    prior = fam.default_prior(stats)
    post = fam.posterior(prior, stats)
    X_new, _ = _data(name, n=4, seed=3)
    exact = np.exp(np.asarray(fam.log_predictive(post, X_new), dtype=np.float64))
    S = 4000
    draws = fam.sample(jax.random.key(7), post, S)
    lik = np.stack([np.exp(np.asarray(fam.log_likelihood(_take(draws, s), X_new, prior))) for s in range(S)])
    mean, se = lik.mean(axis=0), lik.std(axis=0, ddof=1) / np.sqrt(S)
    assert np.all(np.abs(mean - exact) <= 5 * se + 1e-12 * exact), (mean, exact, se)
    if fam.mean_params is not None:
        plug_in = np.asarray(fam.log_likelihood(fam.mean_params(post), X_new, prior))
        np.testing.assert_allclose(plug_in, np.log(exact), rtol=1e-12, atol=1e-12)


def _first_scalar(params):
    return float(np.ravel(np.asarray(jax.tree.leaves(params)[0]))[0])


@pytest.mark.parametrize("name", NAMES)
def test_small_simulation_based_calibration(name):
    check_sbc(families.get(name))


def check_sbc(fam):
    X0, y0 = _data(fam.name, n=20, seed=4)
    template = _stats(fam, X0, y0)
    prior = fam.default_prior(template)
    n_sims, n_draws = 120, 19
    ranks = []
    key = jax.random.key(11)
    for s in range(n_sims):
        k_true, k_x, k_post = jax.random.split(jax.random.fold_in(key, s), 3)
        truth = _take(fam.sample(k_true, prior, 1), 0)
        X = fam.simulate(k_x, truth, y0, template)
        post = fam.posterior(prior, _stats(fam, X, y0))
        draws = fam.sample(k_post, post, n_draws)
        values = np.ravel(np.asarray(jax.tree.leaves(draws)[0]).reshape(n_draws, -1)[:, 0])
        ranks.append(int(np.sum(values < _first_scalar(truth))))
    counts = np.bincount(ranks, minlength=n_draws + 1)
    # 20 bins of 6 expected: a chi-square test at 0.1%.
    assert st.chisquare(counts).pvalue > 1e-3, counts


@pytest.mark.parametrize("name", NAMES)
def test_the_family_estimator_survives_a_save_load_round_trip(name):
    X, y = _data(name, n=24, seed=5)
    clf = estimator_for(name).fit(X, y)
    assert clf.family_ is families.get(name)
    buffer = io.BytesIO()
    clf.save(buffer)
    buffer.seek(0)
    loaded = bayesnb.load(buffer)
    assert loaded.family_ is clf.family_
    assert np.array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    assert loaded.log_evidence() == clf.log_evidence()


# ----------------------------------------------------------------------------- planted errors
# Each check above must fail on a family with an error planted in it: a shifted
# predictive, a posterior of the wrong spread (data counted at a quarter of their weight:
# about the right centre, twice the width) and a posterior of the wrong centre.


def _scaled_posterior(fam, scale):
    def posterior(prior, stats):
        return fam.posterior(prior, jax.tree.map(lambda a: np.asarray(a) * scale, stats))

    return posterior


def _shifted_predictive(fam, shift):
    def log_predictive(post, X):
        return np.asarray(fam.log_predictive(post, X)) + shift

    return log_predictive


def _shifted_posterior(fam):
    # The Gamma rate of the Poisson posterior made 50% larger: rates pulled towards zero.
    def posterior(prior, stats):
        post = fam.posterior(prior, stats)
        return post._replace(rate=np.asarray(post.rate) * 1.5)

    return posterior


PLANTED = {
    "shifted predictive": lambda fam: fam._replace(log_predictive=_shifted_predictive(fam, 0.05)),
    "wrong spread": lambda fam: fam._replace(posterior=_scaled_posterior(fam, 0.25)),
    "wrong centre": lambda fam: fam._replace(posterior=_shifted_posterior(fam)),
}


@pytest.mark.parametrize("error", ["shifted predictive", "wrong spread", "wrong centre"])
def test_the_chain_rule_check_catches_planted_errors(error):
    with pytest.raises(AssertionError):
        check_chain_rule(PLANTED[error](families.get("poisson")))


def test_the_monte_carlo_check_catches_a_shifted_predictive():
    with pytest.raises(AssertionError):
        check_predictive_by_monte_carlo(PLANTED["shifted predictive"](families.get("poisson")))


@pytest.mark.parametrize("error", ["wrong spread", "wrong centre"])
def test_the_sbc_check_catches_planted_posterior_errors(error):
    with pytest.raises(AssertionError):
        check_sbc(PLANTED[error](families.get("poisson")))
