"""The model compiler refuses what it cannot compile exactly, naming the site; and accepts its variants.

Each refused model is a small change of a model the compiler accepts (the first test
checks that the unchanged model compiles), so that a refusal is caused by the change
and not by something else. Every error is a ModelCompileError (a ValueError) whose
``site`` is the site at fault, named in the message, which points at NUTS on the model.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import bayesnb
from bayesnb.exceptions import ModelCompileError
from bayesnb.ppl.compile import Hyperprior, recognise_model

C = 2
RNG = np.random.default_rng(0)
X_BIN = RNG.integers(0, 2, (12, 3))
X_REAL = RNG.normal(size=(12, 2))
Y = np.arange(12) % C


def _labels(y, pi=None):
    pi = numpyro.sample("pi", dist.Dirichlet(np.ones(C))) if pi is None else pi
    with numpyro.plate("data", y.shape[0], dim=-2):
        return numpyro.sample("y", dist.Categorical(pi), obs=y[:, None])[:, 0]


def bernoulli_ok(X, y):
    with numpyro.plate("class", C, dim=-2), numpyro.plate("feature", X.shape[1], dim=-1):
        theta = numpyro.sample("theta", dist.Beta(2.0, 3.0))
    y = _labels(y)
    with numpyro.plate("rows", X.shape[0], dim=-2), numpyro.plate("cols", X.shape[1], dim=-1):
        numpyro.sample("x", dist.Bernoulli(theta[y]), obs=X)


def bernoulli_logit_normal(X, y):
    with numpyro.plate("class", C, dim=-2), numpyro.plate("feature", X.shape[1], dim=-1):
        w = numpyro.sample("w", dist.Normal(0.0, 1.0))
    y = _labels(y)
    with numpyro.plate("rows", X.shape[0], dim=-2), numpyro.plate("cols", X.shape[1], dim=-1):
        numpyro.sample("x", dist.Bernoulli(logits=w[y]), obs=X)


def bernoulli_shared(X, y):
    # One theta per feature for every class: a parameter shared by the classes.
    with numpyro.plate("feature", X.shape[1], dim=-1):
        theta = numpyro.sample("theta", dist.Beta(2.0, 3.0))
    y = _labels(y)
    with numpyro.plate("rows", X.shape[0], dim=-2), numpyro.plate("cols", X.shape[1], dim=-1):
        numpyro.sample("x", dist.Bernoulli(jnp.broadcast_to(theta, (C, X.shape[1]))[y]), obs=X)


def gaussian_ok(X, y, *, kappa=2.0):
    with numpyro.plate("class", C, dim=-2), numpyro.plate("feature", X.shape[1], dim=-1):
        var = numpyro.sample("var", dist.InverseGamma(3.0, 2.0))
        mu = numpyro.sample("mu", dist.Normal(0.5, jnp.sqrt(var / kappa)))
    y = _labels(y)
    with numpyro.plate("rows", X.shape[0], dim=-2), numpyro.plate("cols", X.shape[1], dim=-1):
        numpyro.sample("x", dist.Normal(mu[y], jnp.sqrt(var[y])), obs=X)


def gaussian_gamma_scale(X, y):
    with numpyro.plate("class", C, dim=-2), numpyro.plate("feature", X.shape[1], dim=-1):
        s = numpyro.sample("s", dist.Gamma(2.0, 2.0))
        mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
    y = _labels(y)
    with numpyro.plate("rows", X.shape[0], dim=-2), numpyro.plate("cols", X.shape[1], dim=-1):
        numpyro.sample("x", dist.Normal(mu[y], s[y]), obs=X)


def gaussian_mean_independent_of_variance(X, y):
    with numpyro.plate("class", C, dim=-2), numpyro.plate("feature", X.shape[1], dim=-1):
        var = numpyro.sample("var", dist.InverseGamma(3.0, 2.0))
        mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
    y = _labels(y)
    with numpyro.plate("rows", X.shape[0], dim=-2), numpyro.plate("cols", X.shape[1], dim=-1):
        numpyro.sample("x", dist.Normal(mu[y], jnp.sqrt(var[y])), obs=X)


def gaussian_shared_variance(X, y):
    with numpyro.plate("feature", X.shape[1], dim=-1):
        var = numpyro.sample("var", dist.InverseGamma(3.0, 2.0))
        with numpyro.plate("class", C, dim=-2):
            mu = numpyro.sample("mu", dist.Normal(0.0, jnp.sqrt(var / 2.0)))
    y = _labels(y)
    with numpyro.plate("rows", X.shape[0], dim=-2), numpyro.plate("cols", X.shape[1], dim=-1):
        numpyro.sample("x", dist.Normal(mu[y], jnp.sqrt(var)), obs=X)


def feature_on_feature(X, y):
    with numpyro.plate("class", C, dim=-2), numpyro.plate("feature", 1, dim=-1):
        var = numpyro.sample("var", dist.InverseGamma(3.0, 2.0))
        mu = numpyro.sample("mu", dist.Normal(0.0, jnp.sqrt(var)))
    y = _labels(y)
    with numpyro.plate("rows", X.shape[0], dim=-2), numpyro.plate("cols", 1, dim=-1):
        x1 = numpyro.sample("x1", dist.Normal(mu[y], jnp.sqrt(var[y])), obs=X[:, :1])
        numpyro.sample("x2", dist.Normal(mu[y] + x1, jnp.sqrt(var[y])), obs=X[:, 1:])


def row_effect(X, y):
    with numpyro.plate("class", C, dim=-2), numpyro.plate("feature", X.shape[1], dim=-1):
        var = numpyro.sample("var", dist.InverseGamma(3.0, 2.0))
        mu = numpyro.sample("mu", dist.Normal(0.0, jnp.sqrt(var)))
    with numpyro.plate("data", X.shape[0], dim=-2):
        pi = numpyro.sample("pi", dist.Dirichlet(np.ones(C)))
        y = numpyro.sample("y", dist.Categorical(pi[:, None, :].squeeze(-2)), obs=y[:, None])[:, 0]
        z = numpyro.sample("z", dist.Normal(0.0, 1.0))  # one per row, whatever the label
    with numpyro.plate("rows", X.shape[0], dim=-2), numpyro.plate("cols", X.shape[1], dim=-1):
        numpyro.sample("x", dist.Normal(mu[y] + z, jnp.sqrt(var[y])), obs=X)


def log_observed(X, y):
    with numpyro.plate("class", C, dim=-2), numpyro.plate("feature", X.shape[1], dim=-1):
        var = numpyro.sample("var", dist.InverseGamma(3.0, 2.0))
        mu = numpyro.sample("mu", dist.Normal(0.0, jnp.sqrt(var)))
    y = _labels(y)
    with numpyro.plate("rows", X.shape[0], dim=-2), numpyro.plate("cols", X.shape[1], dim=-1):
        numpyro.sample("x", dist.Normal(mu[y], jnp.sqrt(var[y])), obs=jnp.log1p(jnp.abs(X)))


def data_dependent_prior(X, y):
    with numpyro.plate("class", C, dim=-2), numpyro.plate("feature", X.shape[1], dim=-1):
        var = numpyro.sample("var", dist.InverseGamma(3.0, 2.0))
        mu = numpyro.sample("mu", dist.Normal(jnp.mean(X, axis=0), jnp.sqrt(var)))
    y = _labels(y)
    with numpyro.plate("rows", X.shape[0], dim=-2), numpyro.plate("cols", X.shape[1], dim=-1):
        numpyro.sample("x", dist.Normal(mu[y], jnp.sqrt(var[y])), obs=X)


def softmax_class_probs(X, y):
    w = numpyro.sample("w", dist.Normal(np.zeros(C), 1.0).to_event(1))
    with numpyro.plate("class", C, dim=-2), numpyro.plate("feature", X.shape[1], dim=-1):
        theta = numpyro.sample("theta", dist.Beta(2.0, 3.0))
    with numpyro.plate("data", y.shape[0], dim=-2):
        y = numpyro.sample("y", dist.Categorical(logits=w), obs=y[:, None])[:, 0]
    with numpyro.plate("rows", X.shape[0], dim=-2), numpyro.plate("cols", X.shape[1], dim=-1):
        numpyro.sample("x", dist.Bernoulli(theta[y]), obs=X)


def unused_latent(X, y):
    numpyro.sample("nuisance", dist.Normal(0.0, 1.0))
    bernoulli_ok(X, y)


def hyper_on_hyper(X, y):
    tau = numpyro.sample("tau", dist.Gamma(2.0, 1.0))
    alpha = numpyro.sample("alpha", dist.Gamma(tau, 1.0))
    with numpyro.plate("class", C, dim=-2), numpyro.plate("feature", X.shape[1], dim=-1):
        theta = numpyro.sample("theta", dist.Beta(alpha, alpha))
    y = _labels(y)
    with numpyro.plate("rows", X.shape[0], dim=-2), numpyro.plate("cols", X.shape[1], dim=-1):
        numpyro.sample("x", dist.Bernoulli(theta[y]), obs=X)


def test_the_unchanged_models_compile():
    assert recognise_model(bernoulli_ok, X_BIN, Y).sites[0].family == "bernoulli"
    compiled = recognise_model(gaussian_ok, X_REAL, Y)
    assert compiled.sites[0].family == "gaussian"
    np.testing.assert_allclose(compiled.sites[0].prior.kappa, 2.0, rtol=1e-10)


REFUSED = [
    # (model, X, the site named, a phrase of the reason)
    (bernoulli_logit_normal, X_BIN, "x", "'w' (Normal)"),
    (bernoulli_shared, X_BIN, "x", "shared by the classes"),
    (gaussian_gamma_scale, X_REAL, "x", "'s' (Gamma)"),
    (gaussian_mean_independent_of_variance, X_REAL, "mu", "constant kappa"),
    (gaussian_shared_variance, X_REAL, "x", "shared by the classes"),
    (feature_on_feature, X_REAL, "x2", "depends on the observed feature site 'x1'"),
    (row_effect, X_REAL, "pi", "inside the data plate"),
    (log_observed, X_REAL, "x", "not a block of columns of X"),
    (data_dependent_prior, X_REAL, "mu", "changes with the data"),
    (softmax_class_probs, X_BIN, "y", "'w'"),
    (unused_latent, X_BIN, "nuisance", "no conjugate pair uses"),
    (hyper_on_hyper, X_BIN, "alpha", "one level of hyperpriors"),
]


@pytest.mark.parametrize(("model", "X", "site", "phrase"), REFUSED, ids=[r[0].__name__ for r in REFUSED])
def test_a_model_outside_the_conjugate_naive_bayes_shape_is_refused_naming_the_site(model, X, site, phrase):
    with pytest.raises(ModelCompileError) as caught:
        bayesnb.compile_model(model, X, Y)
    err = caught.value
    assert err.site == site
    message = str(err)
    assert f"site {site!r}" in message
    assert phrase in message
    assert "NUTS" in message
    assert isinstance(err, ValueError)


def test_a_row_effect_is_refused_even_with_class_probabilities_outside_the_plate():
    def model(X, y):
        with numpyro.plate("class", C, dim=-2), numpyro.plate("feature", X.shape[1], dim=-1):
            var = numpyro.sample("var", dist.InverseGamma(3.0, 2.0))
            mu = numpyro.sample("mu", dist.Normal(0.0, jnp.sqrt(var)))
        y = _labels(y)
        with numpyro.plate("rows", X.shape[0], dim=-2):
            z = numpyro.sample("z", dist.Normal(0.0, 1.0))
            with numpyro.plate("cols", X.shape[1], dim=-1):
                numpyro.sample("x", dist.Normal(mu[y] + z, jnp.sqrt(var[y])), obs=X)

    with pytest.raises(ModelCompileError, match="site 'z'.*inside the data plate"):
        bayesnb.compile_model(model, X_REAL, Y)


def test_a_hyperprior_site_is_read_as_its_distribution():
    def model(X, y):
        alpha = numpyro.sample("alpha", dist.Gamma(2.0, 1.0))
        with numpyro.plate("class", C, dim=-2), numpyro.plate("feature", X.shape[1], dim=-1):
            theta = numpyro.sample("theta", dist.Beta(alpha, 3.0))
        y = _labels(y)
        with numpyro.plate("rows", X.shape[0], dim=-2), numpyro.plate("cols", X.shape[1], dim=-1):
            numpyro.sample("x", dist.Bernoulli(theta[y]), obs=X)

    compiled = recognise_model(model, X_BIN, Y)
    prior = compiled.sites[0].prior
    assert isinstance(prior.concentration1, Hyperprior) and prior.concentration1.site == "alpha"
    gamma = prior.concentration1.distribution
    assert type(gamma).__name__ == "Gamma"
    np.testing.assert_allclose([float(gamma.concentration), float(gamma.rate)], [2.0, 1.0])
    np.testing.assert_allclose(prior.concentration0, 3.0)
    assert set(compiled.hyperpriors) == {"alpha"}


def test_bad_data_shapes_are_errors_not_guesses():
    with pytest.raises(ValueError, match="shape"):
        bayesnb.compile_model(bernoulli_ok, X_BIN[:, 0], Y)
    with pytest.raises(ValueError, match="one label per row"):
        bayesnb.compile_model(bernoulli_ok, X_BIN, Y[:-1])


def test_a_model_written_with_numpy_on_sampled_values_is_an_error_saying_so():
    def model(X, y):
        with numpyro.plate("class", C, dim=-2), numpyro.plate("feature", X.shape[1], dim=-1):
            var = numpyro.sample("var", dist.InverseGamma(3.0, 2.0))
            mu = numpyro.sample("mu", dist.Normal(0.0, np.sqrt(var)))  # NumPy on a sampled value
        y = _labels(y)
        with numpyro.plate("rows", X.shape[0], dim=-2), numpyro.plate("cols", X.shape[1], dim=-1):
            numpyro.sample("x", dist.Normal(mu[y], jnp.sqrt(var[y])), obs=X)

    with pytest.raises(ValueError, match="jax.numpy"):
        bayesnb.compile_model(model, X_REAL, Y)


def test_other_parametrisations_and_layouts_of_an_accepted_model_compile():
    # Logits instead of probabilities, the class axis last, a per-cell prior: the prior
    # read back is the one written, in the canonical (class, feature) layout.
    a = RNG.uniform(1.0, 3.0, (X_BIN.shape[1], C))  # (feature, class), as the model lays it out

    def model(X, y):
        with numpyro.plate("class", C, dim=-1), numpyro.plate("feature", X.shape[1], dim=-2):
            theta = numpyro.sample("theta", dist.Beta(a, 2.0 * a))
        y = _labels(y)
        logit = jnp.log(theta) - jnp.log1p(-theta)
        with numpyro.plate("rows", X.shape[0], dim=-2), numpyro.plate("cols", X.shape[1], dim=-1):
            numpyro.sample("x", dist.Bernoulli(logits=logit[:, y].T), obs=X)

    compiled = recognise_model(model, X_BIN, Y)
    (site,) = compiled.sites
    assert site.family == "bernoulli" and site.roles["feature_probs"].class_axis == 1
    np.testing.assert_allclose(site.prior.concentration1, a.T, rtol=1e-12)
    np.testing.assert_allclose(site.prior.concentration0, 2.0 * a.T, rtol=1e-12)
