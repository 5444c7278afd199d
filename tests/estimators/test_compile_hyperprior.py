"""A user-written Bernoulli model with a Gamma hyperprior on the Beta concentrations.

The model compiles to ``BernoulliNB(alpha=Gamma(2, 1))``, fitted by NUTS on the collapsed
model. The compiled estimator is checked against NUTS on the *un*collapsed model as
written (theta, pi and alpha all sampled) by the cross-check rule, and an estimator with
another hyperprior (Gamma(40, 4): alpha near 10 instead of near 2) is reported as
disagreeing with the same run. The agreement is an expected failure for now: the
cross-check's closed side takes the posterior at the hyperparameters' mode (``posterior_``)
rather than the mixture over their draws, so it cannot agree until it reads the mixture.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from sklearn.base import clone

import bayesnb
from bayesnb.ppl.compile import crosscheck_model
from bayesnb.ppl.mcmc import crosscheck

C, F = 2, 3
NUTS = {"num_warmup": 500, "num_samples": 1000, "num_chains": 2}


def model(X, y):
    alpha = numpyro.sample("alpha", dist.Gamma(2.0, 1.0))
    pi = numpyro.sample("pi", dist.Dirichlet(jnp.ones(C)))
    with numpyro.plate("class", C, dim=-2), numpyro.plate("feature", X.shape[1], dim=-1):
        theta = numpyro.sample("theta", dist.Beta(alpha, alpha))
    with numpyro.plate("data", X.shape[0], dim=-2):
        y = numpyro.sample("y", dist.Categorical(pi), obs=y[:, None])[:, 0]
        with numpyro.plate("columns", X.shape[1], dim=-1):
            numpyro.sample("x", dist.Bernoulli(theta[y]), obs=X)


def _data(seed=0, n=30):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, C, n)
    y[:C] = np.arange(C)
    p = np.where(y[:, None] == 1, [0.8, 0.3, 0.5], [0.2, 0.6, 0.5])
    return (rng.random((n, F)) < p).astype(int), y


@pytest.fixture(scope="module")
def compiled_run():
    X, y = _data()
    est = bayesnb.compile_model(model, X, y)
    assert type(est).__name__ == "BernoulliNB"
    hyper = est.get_params()["alpha"]  # the model's Gamma(2, 1), passed on as a distribution
    assert type(hyper).__name__ == "Gamma"
    np.testing.assert_allclose([float(hyper.concentration), float(hyper.rate)], [2.0, 1.0])
    est.fit(X, y)
    report = crosscheck_model(model, est, X, y, random_state=0, nuts_options=NUTS)
    return X, y, est, report


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="known gap (issue 17): crosscheck's closed side reads posterior_ and draws at the "
    "hyperparameters' posterior mode, not the mixture over their draws that the estimator integrates",
)
def test_the_compiled_hyperprior_model_agrees_with_nuts_on_the_uncollapsed_model(compiled_run):
    _, _, _, report = compiled_run
    assert report.agrees, str(report)
    assert any(label.startswith("feature_probs[") for label in report.parameters["parameter"])


@pytest.mark.slow
def test_another_hyperprior_disagrees_with_the_same_run(compiled_run):
    X, y, est, report = compiled_run
    wrong = clone(est).set_params(alpha=dist.Gamma(40.0, 4.0)).fit(X, y)
    assert not crosscheck(wrong, X, y, nuts=report.nuts, random_state=0).agrees
