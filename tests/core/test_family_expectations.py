"""The protocol's ``expected_log_likelihood`` and ``log_density``, over every family that has them.

* ``expected_log_likelihood(post, X, mask)`` is :math:`E_q[\\log p(x \\mid \\theta_c)]`: checked
  against a Monte Carlo mean of ``log_likelihood`` over ``sample`` draws (5 standard
  errors), with and without a mask of unobserved entries; and the check is shown to
  catch the plug-in of the posterior mean (Jensen's gap), the usual slip.
* ``log_density(dist, params, raise_by)`` against SciPy's densities (Dirichlet, Beta,
  Gamma, Normal x Inverse-Gamma), with the concentrations raised for Laplace smoothing.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from scipy import stats as st

from bayesnb.core import families

C, F = 2, 3


def _rows(support, rng, y):
    shift = y[:, None].astype(np.float64)
    n = y.shape[0]
    if support == "counts":
        return rng.poisson(1.0 + 2.0 * shift, (n, F))
    if support == "binary":
        return (rng.random((n, F)) < 0.3 + 0.4 * shift).astype(np.int64)
    if support == "codes":
        X = rng.integers(0, 3, (n, F))
        X[:3, 0] = np.arange(3)
        return X
    if support == "real":
        return rng.normal(shift, 1.0 + 0.5 * shift, (n, F))
    if support == "positive":
        return rng.exponential(1.0 + shift, (n, F))
    raise AssertionError(f"no data generator for support {support!r}")


def _fitted(fam, n=8, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % C
    X = _rows(fam.support, rng, y)
    stats = fam.stats(X, y, C)
    prior = fam.default_prior(stats)
    return prior, stats, fam.posterior(prior, stats), _rows(fam.support, np.random.default_rng(seed + 1), np.arange(5) % C)


def _take(params, i):
    return jax.tree.map(lambda a: np.asarray(a)[i], params)


WITH_EXPECTATION = [n for n in families.names() if families.get(n).expected_log_likelihood is not None]
WITH_DENSITY = [n for n in families.names() if families.get(n).log_density is not None]


def test_the_closed_form_families_have_both_members():
    assert {"multinomial", "bernoulli", "categorical", "poisson", "exponential", "gaussian", "gaussian_mv"} <= set(
        WITH_EXPECTATION
    )
    assert set(WITH_EXPECTATION) == set(WITH_DENSITY)


def _monte_carlo(fam, post, prior, X, mask=None, S=1500):
    draws = fam.sample(jax.random.key(3), post, S)
    ll = np.stack([np.asarray(fam.log_likelihood(_take(draws, s), X, prior, mask=mask)) for s in range(S)])
    return ll.mean(axis=0), ll.std(axis=0, ddof=1) / np.sqrt(S)


@pytest.mark.parametrize("name", WITH_EXPECTATION)
def test_expected_log_likelihood_is_the_posterior_mean_of_the_log_likelihood(name):
    fam = families.get(name)
    prior, stats, post, X = _fitted(fam)
    exact = np.asarray(fam.expected_log_likelihood(post, X))
    assert exact.shape == (X.shape[0], C)
    mean, se = _monte_carlo(fam, post, prior, X)
    # log_likelihood may leave out a term common to the classes (none of these does).
    assert np.all(np.abs(mean - exact) <= 5 * se + 1e-10), (mean, exact, se)
    # Both sides: the plug-in of the posterior mean is off by Jensen's gap, which the
    # same check detects.
    plug_in = np.asarray(fam.log_likelihood(fam.point(prior, stats, "mean"), X, prior))
    assert np.any(np.abs(mean - plug_in) > 5 * se), "the Monte Carlo check cannot tell the plug-in apart"


@pytest.mark.parametrize("name", WITH_EXPECTATION)
def test_expected_log_likelihood_with_a_mask_drops_the_unobserved_entries(name):
    fam = families.get(name)
    prior, stats, post, X = _fitted(fam)
    mask = np.zeros(X.shape, bool)
    mask[0, :] = True
    mask[1, 1] = mask[2, 0] = True
    try:
        exact = np.asarray(fam.expected_log_likelihood(post, X, mask=mask))
    except ValueError as err:  # a family whose rows are not products over features
        assert "closed form" in str(err)
        with pytest.raises(ValueError):
            fam.stats(X, np.arange(X.shape[0]) % C, C, mask=mask)
        return
    np.testing.assert_allclose(exact[0], 0.0, atol=1e-12)  # nothing observed: log 1
    mean, se = _monte_carlo(fam, post, prior, X, mask=mask)
    assert np.all(np.abs(mean - exact) <= 5 * se + 1e-10), (mean, exact, se)


def _oracle(name, dist, params, raise_by):
    """The density by SciPy, per family."""
    if name == "multinomial":
        a = np.asarray(dist.concentration) + raise_by
        p = np.exp(np.asarray(params.log_probs))
        return sum(st.dirichlet.logpdf(p[c], a[c]) for c in range(a.shape[0]))
    if name == "bernoulli":
        p = np.exp(np.asarray(params.log_probs)[..., 1])
        return st.beta.logpdf(p, np.asarray(dist.concentration1) + raise_by, np.asarray(dist.concentration0) + raise_by).sum()
    if name == "categorical":
        a = np.asarray(dist.concentration) + raise_by
        p = np.exp(np.asarray(params.log_probs))
        k = np.asarray(dist.n_categories)
        return sum(st.dirichlet.logpdf(p[c, j, : k[j]], a[c, j, : k[j]]) for c in range(a.shape[0]) for j in range(k.size))
    if name in ("poisson", "exponential"):
        rate = np.exp(np.asarray(params.log_rate))
        return st.gamma.logpdf(rate, np.asarray(dist.concentration) + raise_by, scale=1.0 / np.asarray(dist.rate)).sum()
    if name == "gaussian":
        assert raise_by == 0
        var, mu = np.asarray(params.var), np.asarray(params.loc)
        normal = st.norm.logpdf(mu, np.asarray(dist.loc), np.sqrt(var / np.asarray(dist.kappa)))
        return (normal + st.invgamma.logpdf(var, np.asarray(dist.concentration), scale=np.asarray(dist.rate))).sum()
    if name == "gaussian_mv":
        assert raise_by == 0
        tril, mu = np.asarray(params.scale_tril), np.asarray(params.loc)
        scale, df, kappa, m = (np.asarray(f) for f in (dist.scale, dist.df, dist.kappa, dist.loc))
        n_classes = mu.shape[0]
        cov = tril @ np.swapaxes(tril, -1, -2)
        if scale.ndim == 2:  # one shared covariance, one normal per class mean
            out = st.invwishart.logpdf(cov, float(df), scale)
            return out + sum(st.multivariate_normal.logpdf(mu[c], m[c], cov / kappa[c]) for c in range(n_classes))
        return sum(
            st.invwishart.logpdf(cov[c], df[c], scale[c]) + st.multivariate_normal.logpdf(mu[c], m[c], cov[c] / kappa[c])
            for c in range(n_classes)
        )
    raise AssertionError(f"no SciPy oracle for the {name!r} family: add one to this test")


@pytest.mark.parametrize("name", WITH_DENSITY)
def test_log_density_is_scipys(name):
    fam = families.get(name)
    prior, stats, post, _ = _fitted(fam)
    params = fam.point(prior, stats, "map")
    for dist in (prior, post):
        np.testing.assert_allclose(fam.log_density(dist, params), _oracle(name, dist, params, 0.0), rtol=1e-10)
    try:
        raised = fam.log_density(post, params, raise_by=1.0)
    except ValueError as err:
        assert "Laplace" in str(err)
        return
    np.testing.assert_allclose(raised, _oracle(name, post, params, 1.0), rtol=1e-10)
    assert abs(raised - fam.log_density(post, params)) > 1e-3  # the raise is not ignored


# The Normal-Inverse-Gamma and Normal-Inverse-Wishart have no concentration to raise.
@pytest.mark.parametrize("name", [n for n in WITH_DENSITY if n not in ("gaussian", "gaussian_mv")])
def test_laplace_smoothing_map_is_the_posterior_mean(name):
    # Nigam's smoothing: the MAP under the prior with every concentration raised by one
    # is the posterior mean under the prior. The raised density is highest at the mean:
    # nudging any parameter towards the unraised MAP lowers it.
    fam = families.get(name)
    prior, stats, post, _ = _fitted(fam)
    mean = fam.point(prior, stats, "mean")
    other = fam.point(prior, stats, "map")
    best = fam.log_density(post, mean, raise_by=1.0)
    for t in (0.02, 0.2, 1.0):
        with np.errstate(divide="ignore"):  # padding of ragged categories stays at log 0
            mixed = jax.tree.map(
                lambda a, b: np.log((1 - t) * np.exp(np.asarray(a)) + t * np.exp(np.asarray(b))), mean, other
            )
        assert fam.log_density(post, mixed, raise_by=1.0) < best


def _shared_niw(seed=0):
    """A fitted gaussian_mv posterior with one covariance shared by the classes."""
    fam = families.get("gaussian_mv")
    rng = np.random.default_rng(seed)
    y = np.arange(8) % C
    X = _rows("real", rng, y)
    stats = fam.stats(X, y, C)
    prior = fam.default_prior(stats, shared=True)
    post = fam.posterior(prior, stats)
    assert np.ndim(post.scale) == 2
    return fam, prior, stats, post, _rows("real", np.random.default_rng(seed + 1), np.arange(5) % C)


def test_gaussian_mv_shared_covariance_expectation_and_density():
    fam, prior, stats, post, X = _shared_niw()
    exact = np.asarray(fam.expected_log_likelihood(post, X))
    mean, se = _monte_carlo(fam, post, prior, X)
    assert np.all(np.abs(mean - exact) <= 5 * se + 1e-10), (mean, exact, se)
    mask = np.zeros(X.shape, bool)
    mask[0, :] = mask[1, 1] = mask[2, 0] = True
    exact = np.asarray(fam.expected_log_likelihood(post, X, mask=mask))
    np.testing.assert_allclose(exact[0], 0.0, atol=1e-12)
    mean, se = _monte_carlo(fam, post, prior, X, mask=mask)
    assert np.all(np.abs(mean - exact) <= 5 * se + 1e-10), (mean, exact, se)
    params = fam.point(prior, stats, "map")
    for dist in (prior, post):
        np.testing.assert_allclose(fam.log_density(dist, params), _oracle("gaussian_mv", dist, params, 0.0), rtol=1e-10)


@pytest.mark.parametrize("shared", [False, True])
def test_gaussian_mv_map_is_the_mode_of_log_density(shared):
    # point(..., "map") is the joint mode in (mu, Sigma) under the measure of log_density:
    # moving the means or scaling the covariances lowers the density.
    fam = families.get("gaussian_mv")
    rng = np.random.default_rng(5)
    y = np.arange(10) % C
    X = _rows("real", rng, y)
    stats = fam.stats(X, y, C)
    prior = fam.default_prior(stats, shared=shared)
    post = fam.posterior(prior, stats)
    best_params = fam.point(prior, stats, "map")
    best = fam.log_density(post, best_params)
    for t in (0.9, 0.99, 1.01, 1.1):
        scaled = best_params._replace(scale_tril=np.asarray(best_params.scale_tril) * np.sqrt(t))
        assert fam.log_density(post, scaled) < best
    moved = best_params._replace(loc=np.asarray(best_params.loc) + 0.01)
    assert fam.log_density(post, moved) < best
