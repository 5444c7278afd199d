"""The closed side of the cross-check for integrated hyperparameters (bayesnb.ppl.mcmc.closed_form).

Oracles: (1) the mixture's moments are those of the conditional posteriors of every
hyperparameter draw (mean of the means; mean variance plus variance of the means),
computed here from the plain estimators at the draws; (2) its stratified exact draws have
those moments within their Monte Carlo error; (3) the estimator's own to_inference_data
draws are the same mechanism (one draw per hyperparameter draw).
"""

from __future__ import annotations

import numpy as np
import numpyro.distributions as dist
import pytest

import bayesnb
from bayesnb.ppl.mcmc import closed_form


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 40)
    X = (rng.random((40, 3)) < np.where(y[:, None] == 1, 0.7, 0.3)).astype(int)
    est = bayesnb.BernoulliNB(alpha=dist.Gamma(2.0, 1.0), hyper_warmup=200, hyper_draws=200, random_state=0)
    return est.fit(X, y)


def test_mixture_moments_are_those_of_the_conditional_posteriors(fitted):
    closed = closed_form(fitted, 2000, 0)
    S = fitted.hyper_posterior_["alpha"].shape[0]
    conditional = [fitted.hyper_conditional(s).posterior_ for s in range(S)]
    a = np.stack([np.asarray(p.concentration1) for p in conditional])
    b = np.stack([np.asarray(p.concentration0) for p in conditional])
    means = a / (a + b)
    variances = a * b / ((a + b) ** 2 * (a + b + 1))
    mean, sd, mcse, mcse_sd = closed.moments["feature_probs"]
    np.testing.assert_allclose(mean, means.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(sd**2, variances.mean(axis=0) + means.var(axis=0), rtol=1e-10)
    # Wider than the posterior at the mode, and with a positive Monte Carlo error.
    assert np.all(sd**2 > variances.mean(axis=0))
    assert np.all(mcse > 0) and np.all(mcse_sd > 0)
    # alpha's own moments are those of its draws.
    alpha_mean, alpha_sd, _, _ = closed.moments["alpha"]
    np.testing.assert_allclose(alpha_mean, fitted.hyper_posterior_["alpha"].mean())
    np.testing.assert_allclose(alpha_sd, fitted.hyper_posterior_["alpha"].std())


def test_stratified_draws_have_the_mixture_moments(fitted):
    closed = closed_form(fitted, 4000, 1)
    S = fitted.hyper_posterior_["alpha"].shape[0]
    draws = closed.draws["feature_probs"]
    assert draws.shape[0] == S * closed.strata["feature_probs"][2] >= 4000
    mean, sd, mcse, _ = closed.moments["feature_probs"]
    # The draws' mean estimates the mixture mean; the error of the stratified draws is at
    # most that of iid draws (the strata are the hyperparameter draws themselves).
    z = (draws.mean(axis=0) - mean) / (sd / np.sqrt(draws.shape[0]))
    assert np.max(np.abs(z)) < 4.5, z
    np.testing.assert_allclose(draws.std(axis=0), sd, rtol=0.08)


def test_to_inference_data_draws_are_one_conditional_draw_per_hyperparameter_draw(fitted):
    import jax

    from bayesnb.core._random import key_from_random_state
    from bayesnb.ppl import export

    idata = fitted.to_inference_data(random_state=5)
    key_post = jax.random.split(key_from_random_state(5), 3)[0]
    log_class, params = fitted.hyper_conditional_draws(1, key_post)
    S = fitted.hyper_posterior_["alpha"].shape[0]
    expected = export.parameter_draws(fitted, log_class, params)["feature_probs"]
    np.testing.assert_array_equal(idata.posterior["feature_probs"].values.reshape(expected.shape), expected)
    np.testing.assert_array_equal(idata.posterior["alpha"].values.reshape(-1), fitted.hyper_posterior_["alpha"])
    assert expected.shape[0] == S
