"""The conditional pointwise log-likelihood log p(y_i | x_i, theta, pi) in the arviz export (issue 15).

``log_likelihood`` holds ``xy`` (the joint, unchanged) and ``y``, the conditional: the
log class probability of the row's own label under each draw, what LOO of a classifier
needs. Oracles: SciPy densities under the exported draws (Gaussian, multinomial), and
the ``predictions`` group's class probabilities of the same rows under the same draws.
"""

from __future__ import annotations

import arviz as az
import numpy as np
import pytest
from _ppl_cases import NAMES, fitted
from numpy.testing import assert_allclose
from scipy import stats as sps
from scipy.special import logsumexp


def test_conditional_against_scipy_gaussian():
    case = fitted("gaussian")
    est, X, y = case.estimator, case.X, case.y
    idata = est.to_inference_data(30, random_state=2, X=X, y=y)
    post = idata.posterior
    y_index = np.searchsorted(est.classes_, y)
    rows = np.arange(len(y))
    for d in (0, 11, 29):
        loc, var = post["loc"].values[0, d], post["var"].values[0, d]
        log_pi = np.log(post["class_probs"].values[0, d])
        joint = log_pi + sps.norm.logpdf(X[:, None, :], loc, np.sqrt(var)).sum(axis=-1)
        want = joint[rows, y_index] - logsumexp(joint, axis=1)
        assert_allclose(idata.log_likelihood["y"].values[0, d], want, rtol=1e-10, atol=1e-12)
        # The joint is still there, unchanged.
        assert_allclose(idata.log_likelihood["xy"].values[0, d], joint[rows, y_index], rtol=1e-10)


def test_conditional_against_scipy_multinomial():
    # The joint of the multinomial family omits the multinomial coefficient (the token
    # sequence); the conditional does not depend on it.
    rng = np.random.default_rng(4)
    from bayesnb import MultinomialNB

    X = rng.poisson(2.0, size=(25, 6))
    y = rng.integers(0, 3, 25)
    est = MultinomialNB().fit(X, y)
    idata = est.to_inference_data(20, random_state=1, X=X, y=y)
    theta = idata.posterior["feature_probs"].values[0]
    pi = idata.posterior["class_probs"].values[0]
    for d in (0, 19):
        joint = np.log(pi[d]) + np.array(
            [[sps.multinomial.logpmf(x, x.sum(), theta[d, c]) for c in range(3)] for x in X]
        )
        want = joint[np.arange(25), y] - logsumexp(joint, axis=1)
        assert_allclose(idata.log_likelihood["y"].values[0, d], want, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_conditional_is_the_log_class_probability_of_the_label(name):
    case = fitted(name)
    est, X, y = case.estimator, case.X, case.y
    if getattr(est, "temperature_", 1.0) != 1.0:
        pytest.skip("predictions are tempered; the log-likelihood is the model's")
    idata = est.to_inference_data(25, random_state=5, X=X, y=y, X_new=X, n_chains=1)
    ll = idata.log_likelihood
    assert set(ll.data_vars) == {"xy", "y"} and ll["y"].dims == ("chain", "draw", "data")
    y_index = np.searchsorted(est.classes_, np.asarray(y))
    proba = idata.predictions["class_proba"].values  # same draws, same rows
    want = np.log(proba[..., np.arange(len(y_index)), y_index])
    assert_allclose(ll["y"].values, want, rtol=1e-9, atol=1e-12)
    assert np.all(ll["y"].values <= 1e-12)
    # For a discrete x, p(x) <= 1, so log p(y | x) = log p(x, y) - log p(x) >= log p(x, y).
    if name in ("multinomial", "bernoulli", "categorical", "poisson"):
        assert np.all(ll["y"].values >= ll["xy"].values - 1e-9)


def test_arviz_loo_of_each_likelihood_by_name():
    case = fitted("bernoulli")
    idata = case.estimator.to_inference_data(1000, random_state=0, X=case.X, y=case.y)
    cond = az.loo(idata, var_name="y")
    joint = az.loo(idata, var_name="xy")
    assert np.isfinite(cond.elpd_loo) and np.isfinite(joint.elpd_loo)
    # Predicting the label from its row is easier than predicting the row and label.
    assert cond.elpd_loo > joint.elpd_loo
    with pytest.raises(TypeError, match="several log likelihood arrays"):
        az.loo(idata)
