"""compile_model on the library's own numpyro models: the same numbers as the hand-built estimator.

For every registered family with a numpyro model (bayesnb.ppl.models), compiling its
model with a random per-cell prior and a random class prior gives an estimator whose
predictions under every estimate, log evidence and posterior equal, to 1e-10, those of
the family's estimator configured by hand with the same prior. The prior is drawn per
(class, feature) cell so that a recogniser that read it transposed, broadcast or from
another field would disagree. A fixed class prior is read as fixed proportions.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import bayesnb
from bayesnb import (
    BernoulliNB,
    CategoricalNB,
    ExponentialNB,
    GaussianBayesClassifier,
    GaussianNB,
    MultinomialNB,
    PoissonNB,
)
from bayesnb.core import priors
from bayesnb.ppl import models

C, F, N = 3, 4, 40
ESTIMATES = ("predictive", "mean", "map", "mle")


def _cell(rng, shape, low=1.0, high=3.0):
    return rng.uniform(low, high, shape)


def _case(family, rng):
    """(X, prior, the estimator built by hand with that prior)."""
    if family == "multinomial":
        prior = priors.Dirichlet(_cell(rng, (C, F)))
        return rng.integers(0, 6, (N, F)), prior, MultinomialNB(alpha=prior.concentration)
    if family == "bernoulli":
        prior = priors.Beta(_cell(rng, (C, F)), _cell(rng, (C, F)))
        return rng.integers(0, 2, (N, F)), prior, BernoulliNB(alpha=tuple(prior))
    if family == "categorical":
        alpha = _cell(rng, (C, F))
        prior = priors.categorical_dirichlet_from_alpha(alpha, C, [3] * F)
        return rng.integers(0, 3, (N, F)), prior, CategoricalNB(alpha=alpha, min_categories=3)
    if family == "poisson":
        prior = priors.Gamma(_cell(rng, (C, F)), _cell(rng, (C, F)))
        return rng.integers(0, 6, (N, F)), prior, PoissonNB(prior=prior)
    if family == "exponential":
        prior = priors.Gamma(_cell(rng, (C, F)), _cell(rng, (C, F)))
        return rng.exponential(1.0, (N, F)), prior, ExponentialNB(prior=prior)
    if family == "gaussian":
        prior = priors.NormalInverseGamma(rng.normal(size=(C, F)), *(_cell(rng, (C, F)) for _ in range(3)))
        return rng.normal(size=(N, F)), prior, GaussianNB(prior=prior)
    if family in ("gaussian_mv", "gaussian_mv_shared"):
        shared = family.endswith("shared")
        A = rng.normal(size=(F, F))
        scale = A @ A.T + F * np.eye(F)
        scale = scale if shared else np.stack([scale * rng.uniform(0.5, 2.0) for _ in range(C)])
        df = np.float64(F + 2.5) if shared else rng.uniform(F + 1.0, F + 4.0, C)
        prior = priors.NormalInverseWishart(rng.normal(size=(C, F)), _cell(rng, C), df, scale)
        return (
            rng.normal(size=(N, F)),
            prior,
            GaussianBayesClassifier(covariance="shared" if shared else "full", prior=prior),
        )
    raise AssertionError(family)


FAMILIES = ["multinomial", "bernoulli", "categorical", "poisson", "exponential", "gaussian", "gaussian_mv",
            "gaussian_mv_shared"]


def test_every_family_with_a_model_is_covered():
    # A family registered later with a numpyro model and a recogniser must join this test.
    recognised = {n for n in bayesnb.families.names() if bayesnb.families.get(n).recognise is not None}
    assert recognised == {f.replace("_shared", "") for f in FAMILIES}


def _leaves_close(a, b):
    for u, v in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(u, float), np.asarray(v, float), rtol=1e-10, atol=1e-12)


# The fixed class prior is read once per kind of likelihood parameter (probs, rate, loc / covariance).
CASES = [(f, False) for f in FAMILIES] + [(f, True) for f in ("bernoulli", "poisson", "gaussian_mv_shared")]


@pytest.mark.parametrize(("family", "fixed"), CASES)
def test_compiling_the_library_model_gives_the_estimator(family, fixed):
    rng = np.random.default_rng(abs(hash(family)) % 2**32 + fixed)
    X, prior, reference = _case(family, rng)
    y = np.arange(N) % C
    rng.shuffle(y)
    if fixed:
        probs = rng.dirichlet(np.ones(C))
        class_prior, reference = probs, reference.set_params(class_prior=probs)
    else:
        conc = _cell(rng, C)
        class_prior, reference = priors.Dirichlet(conc), reference.set_params(class_alpha=conc)
    model = getattr(models, f"{family.replace('_shared', '')}_model")

    compiled = bayesnb.compile_model(model, X, y, prior=prior, class_prior=class_prior)

    assert type(compiled) is type(reference)
    labels = np.array(["a", "b", "c"])[y]  # any labels: their sorted order is the class order
    compiled.fit(X, labels)
    reference.fit(X, labels)
    X_new = X[:7]
    for estimate in ESTIMATES:
        compiled.set_params(estimate=estimate)
        reference.set_params(estimate=estimate)
        np.testing.assert_allclose(
            compiled.predict_joint_log_proba(X_new), reference.predict_joint_log_proba(X_new), rtol=1e-10, atol=1e-10
        )
        np.testing.assert_allclose(compiled.predict_proba(X_new), reference.predict_proba(X_new), rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(compiled.predict(X_new), reference.predict(X_new))
    np.testing.assert_allclose(compiled.log_evidence(), reference.log_evidence(), rtol=1e-10)
    _leaves_close(compiled.prior_, reference.prior_)
    _leaves_close(compiled.posterior_, reference.posterior_)
    if fixed:
        assert compiled.class_posterior_ is None
        np.testing.assert_allclose(compiled.class_prior_, class_prior, rtol=1e-12)
    else:
        _leaves_close(compiled.class_posterior_, reference.class_posterior_)


def test_the_prior_read_from_the_model_is_the_one_given_to_it():
    # Independent of the estimators: the recogniser's prior pytree against the model's arguments.
    from bayesnb.ppl.compile import recognise_model

    rng = np.random.default_rng(5)
    X, prior, _ = _case("gaussian", rng)
    compiled = recognise_model(models.gaussian_model, X, np.arange(N) % C, prior=prior,
                               class_prior=priors.Dirichlet(np.full(C, 2.0)))
    (site,) = compiled.sites
    assert (site.site, site.family) == ("x", "gaussian")
    _leaves_close(site.prior, prior)
    np.testing.assert_array_equal(site.columns, np.arange(F))
    assert {k: r.site for k, r in site.roles.items()} == {"loc": "loc", "var": "var"}


# ----------------------------------------------------------------------------- hyperpriors
# The integrated-hyperparameter API (an estimator taking a numpyro distribution for a
# hyperparameter) is built elsewhere; these tests check what compile_model hands over,
# whichever estimators take distributions (``_hyperprior_params``), and that a
# hyperprior an estimator does not take is refused naming its site.


def _hyper_multinomial(X, y):
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    alpha = numpyro.sample("alpha", dist.Gamma(2.0, 1.0))
    beta = numpyro.sample("beta", dist.Exponential(1.0))
    pi = numpyro.sample("pi", dist.Dirichlet(beta * jnp.ones(C)))
    with numpyro.plate("class", C, dim=-2):
        theta = numpyro.sample("theta", dist.Dirichlet(alpha * jnp.ones(X.shape[1])))
    with numpyro.plate("data", X.shape[0], dim=-2):
        y = numpyro.sample("y", dist.Categorical(pi), obs=y[:, None])[:, 0]
        numpyro.sample("x", dist.Multinomial(X.sum(-1)[:, None], theta[y]), obs=X[:, None, :])


def test_hyperprior_sites_are_passed_to_the_estimator_as_their_distributions(monkeypatch):
    monkeypatch.setattr(MultinomialNB, "_hyperprior_params", frozenset({"alpha", "class_alpha"}))
    X = np.random.default_rng(0).integers(0, 5, (N, F))
    est = bayesnb.compile_model(_hyper_multinomial, X, np.arange(N) % C)
    assert type(est) is MultinomialNB
    alpha, class_alpha = est.get_params()["alpha"], est.get_params()["class_alpha"]
    assert type(alpha).__name__ == "Gamma" and type(class_alpha).__name__ == "Exponential"
    np.testing.assert_allclose([float(alpha.concentration), float(alpha.rate)], [2.0, 1.0])
    np.testing.assert_allclose(float(class_alpha.rate), 1.0)


@pytest.mark.parametrize("accepted", [frozenset(), frozenset({"alpha"})])
def test_a_hyperprior_the_estimator_does_not_take_is_refused_naming_the_site(monkeypatch, accepted):
    monkeypatch.setattr(MultinomialNB, "_hyperprior_params", accepted)
    X = np.random.default_rng(0).integers(0, 5, (N, F))
    site = "beta" if "alpha" in accepted else "alpha"
    with pytest.raises(bayesnb.ModelCompileError, match=f"site '{site}'.*hyperprior") as caught:
        bayesnb.compile_model(_hyper_multinomial, X, np.arange(N) % C)
    assert caught.value.site == site


def test_a_compiled_user_model_has_the_estimators_bayesian_methods():
    # The compiled estimator is the family's own estimator: draws, intervals, arviz export
    # and SBC work on it unchanged (a user-written Poisson model, not bayesnb.ppl.models').
    import numpyro
    import numpyro.distributions as dist

    from bayesnb.ppl.sbc import simulation_based_calibration

    def model(X, y):
        pi = numpyro.sample("pi", dist.Dirichlet(np.full(C, 2.0)))
        with numpyro.plate("class", C, dim=-2), numpyro.plate("feature", X.shape[1], dim=-1):
            rate = numpyro.sample("rate", dist.Gamma(3.0, 1.0))
        with numpyro.plate("data", X.shape[0], dim=-2):
            y = numpyro.sample("y", dist.Categorical(pi), obs=y[:, None])[:, 0]
            with numpyro.plate("columns", X.shape[1], dim=-1):
                numpyro.sample("x", dist.Poisson(rate[y]), obs=X)

    rng = np.random.default_rng(3)
    y = np.arange(N) % C
    X = rng.poisson(1.0 + 2.0 * y[:, None], (N, F))
    est = bayesnb.compile_model(model, X, y).fit(X, y)
    assert type(est) is PoissonNB
    np.testing.assert_allclose(est.class_dirichlet_.concentration, 2.0)
    assert est.predict_proba_draws(X[:5], n_draws=20, random_state=0).shape == (20, 5, C)
    draws = est.sample_posterior(50, random_state=0)
    assert draws["rate"].shape == (50, C, F)
    idata = est.to_inference_data(n_draws=40, random_state=0)
    assert set(idata.posterior.data_vars) == {"class_probs", "rate"}
    report = simulation_based_calibration(est, 20, n_simulations=60, n_draws=19, n_bins=5, random_state=0)
    assert report.passed, str(report)
