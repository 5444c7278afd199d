"""A user-written Bernoulli model with a Gamma hyperprior on the Beta concentrations.

The model compiles to ``BernoulliNB(alpha=Gamma(2, 1))``, fitted by NUTS on the collapsed
model. The compiled estimator is checked against NUTS on the *un*collapsed model as
written (theta, pi and alpha all sampled) by the cross-check rule. The cross-check's
closed side is the mixture the estimator integrates: the conjugate posteriors given each
of its draws of alpha (moments, stratified exact draws and the integrated predictive,
with the Monte Carlo error of the finite number of draws), and alpha's own draws against
the un-collapsed run's. It agrees for two seeds, and for NUTS on the estimator's own
un-collapsed model (``model_from_estimator``). Planted errors are caught: another
hyperprior (Gamma(40, 4): alpha near 10 instead of near 3), and conditional posteriors
of the right means but a wrong spread.
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
    # Seeded: the hyperparameter's draws come from NUTS on the collapsed model, and an
    # unseeded fit made every verdict below a random variable (a full-suite run failed
    # the agreement with |z| 3.81 against the rule's 3.74; alone it passed).
    est.set_params(random_state=0).fit(X, y)
    report = crosscheck_model(model, est, X, y, random_state=0, nuts_options=NUTS)
    return X, y, est, report


@pytest.mark.slow
def test_the_compiled_hyperprior_model_agrees_with_nuts_on_the_uncollapsed_model(compiled_run):
    _, _, est, report = compiled_run
    assert report.agrees, str(report)
    labels = list(report.parameters["parameter"])
    assert any(label.startswith("feature_probs[") for label in labels)
    # alpha's collapsed-NUTS draws are compared with the un-collapsed run's alpha.
    assert "alpha" in labels and "alpha" in report.nuts.samples
    row = report.parameters.set_index("parameter").loc["alpha"]
    assert row["closed_mean"] == pytest.approx(float(np.mean(est.hyper_posterior_["alpha"])))
    assert row["closed_mcse"] > 0  # the collapsed run's draws are not exact
    # The closed side's draws, as arviz data beside the MCMC's: the mixture, alpha with them.
    closed, mcmc = report.closed_form_inference_data.posterior, report.mcmc_inference_data.posterior
    for name in ("feature_probs", "class_probs", "alpha"):
        assert closed[name].shape == mcmc[name].shape, name


@pytest.mark.slow
def test_another_hyperprior_disagrees_with_the_same_run(compiled_run):
    X, y, est, report = compiled_run
    wrong = clone(est).set_params(alpha=dist.Gamma(40.0, 4.0)).fit(X, y)
    check = crosscheck(wrong, X, y, nuts=report.nuts, random_state=0)
    assert not check.agrees
    # For the right reason: the means of alpha and of the feature probabilities (shrunk
    # towards 1/2 by an alpha near 10), with chains that mixed.
    table = check.parameters.set_index("parameter")
    assert abs(table.loc["alpha", "z"]) >= check.z_max, str(check)
    features = table[table.index.str.startswith("feature_probs[")]
    assert np.max(np.abs(features["z"])) >= check.z_max, str(check)
    assert not any("r_hat" in f or "ESS" in f or "divergent" in f for f in check.failures)


@pytest.mark.slow
def test_conditional_posteriors_of_a_wrong_spread_disagree(compiled_run, monkeypatch):
    # A planted spread-only error: every conditional posterior Beta(a_s + n1, b_s + n0)
    # scaled to Beta(0.7 (a_s + n1), 0.7 (b_s + n0)): the same means, wider.
    X, y, est, report = compiled_run
    conditional = est.hyper_conditional

    def widened(m):
        work = conditional(m)
        post = work.posterior_
        work.posterior_ = type(post)(*(0.7 * np.asarray(field) for field in post))
        return work

    monkeypatch.setattr(est, "hyper_conditional", widened)
    check = crosscheck(est, X, y, nuts=report.nuts, random_state=0)
    assert not check.agrees
    table = check.parameters[check.parameters["parameter"].str.startswith("feature_probs[")]
    assert np.max(np.abs(table["z"])) < check.z_max, str(check)  # the means are right
    assert np.max(np.abs(table["z_sd"])) >= check.z_max, str(check)  # the spread is not
    assert all("mean(s)" not in f for f in check.failures), check.failures


@pytest.mark.slow
def test_the_compiled_hyperprior_model_agrees_for_another_seed():
    X, y = _data()
    est = bayesnb.compile_model(model, X, y).set_params(random_state=1).fit(X, y)
    report = crosscheck_model(model, est, X, y, random_state=1, nuts_options=NUTS)
    assert report.agrees, str(report)
    assert "alpha" in set(report.parameters["parameter"])


@pytest.mark.slow
def test_the_estimator_agrees_with_nuts_on_its_own_uncollapsed_model(compiled_run):
    # crosscheck without nuts=: NUTS on model_from_estimator, which for integrated
    # hyperparameters samples alpha from its hyperprior with theta and pi.
    X, y, est, _ = compiled_run
    report = crosscheck(est, X, y, random_state=2, **NUTS)
    assert report.nuts.model.__name__.startswith("hyper_")
    assert "alpha" in report.nuts.samples
    assert report.agrees, str(report)
