"""Posterior draws in fixed-size blocks: reproducible, exact in law, and no compilation
for a new ``n_draws`` or row count (issue 14).

Oracles: the draws of a smaller ``n_draws`` (prefix property of the blocks), scipy's
Beta distribution (marginals of a Dirichlet) by Kolmogorov-Smirnov on several seeds with
planted wrong laws rejected, and JAX's own compilation events.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from numpy.testing import assert_array_equal
from scipy import stats

from _compiles import count_compiles
from bayesnb import BernoulliNB, GaussianNB, MultinomialNB
from bayesnb.core import _fitted
from bayesnb.core.families import _dirichlet


def _small(kind, n=60, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], n // 3)
    if kind == "counts":
        X = rng.poisson(1.0 + y[:, None] * np.array([1.0, 0.0, 0.5, 2.0]), size=(n, 4))
    elif kind == "binary":
        X = (rng.random((n, 4)) < 0.2 + 0.2 * y[:, None] * np.array([1.0, 0.0, 0.5, 1.0])).astype(int)
    else:
        X = rng.normal(size=(n, 3)) + y[:, None] * np.array([1.0, -0.5, 0.3])
    return X, y


CASES = [
    ("multinomial", MultinomialNB, "counts"),
    ("bernoulli", BernoulliNB, "binary"),
    ("gaussian", GaussianNB, "real"),
]


@pytest.mark.parametrize("name, cls, kind", CASES, ids=[c[0] for c in CASES])
def test_more_draws_extend_fewer_draws_of_the_same_random_state(name, cls, kind):
    X, y = _small(kind)
    clf = cls().fit(X, y)
    block = _fitted.draw_block(10**6, _fitted.posterior_size(clf.fitted_model()))
    n1, n2 = 3 * block + 5, 5 * block + 1  # several blocks, a partial last one each
    few = clf.predict_proba_draws(X[:9], n_draws=n1, random_state=4)
    many = clf.predict_proba_draws(X[:9], n_draws=n2, random_state=4)
    assert few.shape == (n1, 9, 3) and many.shape == (n2, 9, 3)
    assert_array_equal(many[:n1], few)
    # sample_posterior draws in the same blocks: the same parameter draws.
    s1 = clf.sample_posterior(n1, random_state=4)
    s2 = clf.sample_posterior(n2, random_state=4)
    for key in s1:
        assert_array_equal(s2[key][:n1], s1[key])
    # Another random_state gives other draws.
    other = clf.predict_proba_draws(X[:9], n_draws=n1, random_state=5)
    assert not np.allclose(other, few)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dirichlet_draws_have_beta_marginals(seed):
    # Small concentrations (the boosted log-Gamma path), moderate and large ones.
    a = np.array([[0.03, 0.4, 1.0, 2.5, 40.0]])
    n = 4000
    log_theta = np.asarray(_dirichlet.sample_log(jax.random.PRNGKey(seed), a, n))
    assert log_theta.shape == (n, 1, 5) and log_theta.dtype == np.float64
    assert np.all(np.isfinite(log_theta))
    np.testing.assert_allclose(np.exp(log_theta).sum(-1), 1.0, rtol=1e-12)
    total = a.sum()
    theta = np.exp(log_theta[:, 0, :])
    for j in range(a.shape[1]):
        true = stats.beta(a[0, j], total - a[0, j])
        assert stats.kstest(theta[:, j], true.cdf).pvalue > 1e-3
        # Planted errors: a wrong concentration on that coordinate, and the law of the
        # unboosted sampler's failure mode (the small coordinates as if twice as large).
        wrong = stats.beta(2 * a[0, j], total - a[0, j])
        assert stats.kstest(theta[:, j], wrong.cdf).pvalue < 1e-6
    # log theta of the smallest coordinate reaches far below float64's exp range's
    # bottom without underflowing to -inf (the reason for sampling in log space).
    assert log_theta[:, 0, 0].min() < -100


def test_dirichlet_draws_respect_the_mask():
    a = np.array([[2.0, 3.0, 7.0], [1.0, 1.0, 1.0]])
    mask = np.array([[True, True, True], [True, False, True]])
    log_theta = np.asarray(_dirichlet.sample_log(jax.random.PRNGKey(0), a, 3000, mask))
    assert np.all(np.isneginf(log_theta[:, 1, 1]))
    theta = np.exp(log_theta)
    np.testing.assert_allclose(theta.sum(-1), 1.0, rtol=1e-12)
    # The unmasked pair of the second row is Dir(1, 1): its first coordinate is uniform.
    assert stats.kstest(theta[:, 1, 0], "uniform").pvalue > 1e-3
    assert stats.kstest(theta[:, 1, 0], stats.beta(1, 2).cdf).pvalue < 1e-6
    # Same key, same draws.
    assert_array_equal(np.asarray(_dirichlet.sample_log(jax.random.PRNGKey(0), a, 3000, mask)), log_theta)


@pytest.mark.parametrize("name, cls, kind", CASES, ids=[c[0] for c in CASES])
def test_a_new_n_draws_or_row_count_compiles_nothing(name, cls, kind):
    X, y = _small(kind, n=90)
    clf = cls().fit(X, y)
    clf.predict_proba_draws(X, n_draws=200, random_state=0)
    clf.sample_posterior(200, random_state=0)
    # The compile counter sees compilations (else this test could not fail).
    assert count_compiles(lambda: jax.jit(lambda v: v * 3.0 + 1.0)(np.arange(7.0))) >= 1

    def more():
        clf.predict_proba_draws(X, n_draws=300, random_state=1)
        clf.predict_proba_draws(X[:37], n_draws=237, random_state=2)
        clf.sample_posterior(333, random_state=3)

    assert count_compiles(more) == 0
