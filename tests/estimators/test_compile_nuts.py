"""A user-written numpyro model, compiled, agrees with NUTS on the same model; wrong closed forms do not.

The model is not one of bayesnb.ppl.models: a mixed Gaussian (Normal-Inverse-Gamma) +
Poisson + categorical model with a fixed class prior, its blocks observing interleaved
columns of one matrix, its sites named by the user. The oracle is numpyro's NUTS on that
model as written (its own densities and site layout), compared by the cross-check rule
of bayesnb.ppl.mcmc.crosscheck (moments, quantiles, predictive probabilities, R-hat,
ESS, divergences). The verdict is tested on both sides: the compiled estimator agrees on
two data sets; estimators with a wrong prior of the Gaussian block, a wrong prior of the
Poisson block, or the class prior of another model are each reported as disagreeing
against the same NUTS run.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from sklearn.base import clone

import bayesnb
from bayesnb import GaussianNB, MixedNB, PoissonNB
from bayesnb.core.priors import Gamma, NormalInverseGamma
from bayesnb.ppl.compile import crosscheck_model, run_nuts_model
from bayesnb.ppl.mcmc import crosscheck


C = 2
G, P, K = [0, 3], [1], [2, 4]  # interleaved columns of the three blocks
CLASS_PROBS = (0.4, 0.6)
NUTS = {"num_warmup": 500, "num_samples": 1000, "num_chains": 2}


def model(X, y, class_probs=CLASS_PROBS):
    with numpyro.plate("class", C, dim=-2):
        with numpyro.plate("g", len(G), dim=-1):
            var = numpyro.sample("var", dist.InverseGamma(3.0, 2.0))
            mu = numpyro.sample("mu", dist.Normal(0.0, jnp.sqrt(var / 0.5)))
        with numpyro.plate("p", len(P), dim=-1):
            lam = numpyro.sample("lam", dist.Gamma(2.0, 0.5))
        with numpyro.plate("k", len(K), dim=-1):
            phi = numpyro.sample("phi", dist.Dirichlet(jnp.full(3, 1.5)))
    with numpyro.plate("data", X.shape[0], dim=-2):
        y = numpyro.sample("y", dist.Categorical(jnp.asarray(class_probs)), obs=y[:, None])[:, 0]
        with numpyro.plate("g_cols", len(G), dim=-1):
            numpyro.sample("height", dist.Normal(mu[y], jnp.sqrt(var[y])), obs=X[:, G])
        with numpyro.plate("p_cols", len(P), dim=-1):
            numpyro.sample("visits", dist.Poisson(lam[y]), obs=X[:, P])
        with numpyro.plate("k_cols", len(K), dim=-1):
            numpyro.sample("colour", dist.Categorical(phi[y]), obs=X[:, K].astype(np.int32))


def _data(seed, n=40):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, C, n)
    y[:C] = np.arange(C)
    X = np.zeros((n, 5))
    X[:, G] = rng.normal(1.5 * y[:, None], 1.0, (n, len(G)))
    X[:, P] = rng.poisson(2.0 + 3.0 * y[:, None], (n, len(P)))
    X[:, K] = rng.integers(0, 3, (n, len(K)))
    return X, y


def test_the_user_model_compiles_to_a_mixed_estimator_of_its_blocks():
    X, y = _data(0)
    est = bayesnb.compile_model(model, X, y)
    assert isinstance(est, MixedNB)
    blocks = {name: (type(e).__name__, cols) for name, e, cols in est.blocks}
    assert blocks == {"height": ("GaussianNB", G), "visits": ("PoissonNB", P), "colour": ("CategoricalNB", K)}
    np.testing.assert_allclose(est.class_prior, CLASS_PROBS)
    height = dict((n, e) for n, e, _ in est.blocks)["height"].prior
    np.testing.assert_allclose(np.asarray(height.kappa), 0.5)
    np.testing.assert_allclose(np.asarray(height.concentration), 3.0)
    # Another fixed class prior is read as given (a keyword of the model).
    other = bayesnb.compile_model(model, X, y, class_probs=(0.7, 0.3))
    np.testing.assert_allclose(other.class_prior, (0.7, 0.3))


@pytest.fixture(scope="module")
def runs():
    """(X, y, fitted compiled estimator, NUTS run on the model, report) on two data sets."""
    out = []
    for seed in (0, 1):
        X, y = _data(seed)
        est = bayesnb.compile_model(model, X, y).fit(X, y)
        if seed == 0:  # the convenience: NUTS and the cross-check in one call
            report = crosscheck_model(model, est, X, y, random_state=seed, nuts_options=NUTS)
            nuts = report.nuts
        else:
            nuts = run_nuts_model(model, est, X, y, random_state=seed, **NUTS)
            report = crosscheck(est, X, y, nuts=nuts, random_state=seed)
        out.append((X, y, est, nuts, report))
    return out


@pytest.mark.slow
def test_the_compiled_estimator_agrees_with_nuts_on_the_model_as_written(runs):
    for X, y, est, nuts, report in runs:
        assert report.agrees, str(report)
        labels = report.parameters["parameter"].tolist()
        for block, n_scalars in [("height__loc[", 4), ("height__var[", 4), ("visits__rate[", 2),
                                 ("colour__feature_probs[", 12)]:
            assert sum(label.startswith(block) for label in labels) == n_scalars, block
        assert not any(label.startswith("class_probs") for label in labels)  # fixed proportions


def _with_block(est, name, **params):
    wrong = clone(est)
    wrong.set_params(blocks=[(n, clone(e).set_params(**params) if n == name else e, c) for n, e, c in wrong.blocks])
    return wrong


@pytest.mark.slow
@pytest.mark.parametrize(
    "planted",
    ["gaussian-kappa", "poisson-rate", "class-prior"],
)
def test_a_wrong_closed_form_disagrees_with_the_same_nuts_run(runs, planted):
    X, y, est, nuts, _ = runs[0]
    if planted == "gaussian-kappa":  # the mean's prior 20x tighter around 0 than the model says
        wrong = _with_block(est, "height", prior=NormalInverseGamma(0.0, 10.0, 3.0, 2.0))
    elif planted == "poisson-rate":  # Gamma(2, 0.05): a prior mean of 40 visits instead of 4
        wrong = _with_block(est, "visits", prior=Gamma(2.0, 0.05))
    else:  # the classes of another model (0.9, 0.1)
        wrong = clone(est).set_params(class_prior=(0.9, 0.1))
    wrong.fit(X, y)
    report = crosscheck(wrong, X, y, nuts=nuts, random_state=0)
    assert not report.agrees, str(report)


@pytest.mark.slow
def test_the_run_holds_the_canonical_variables_and_refuses_other_data(runs):
    X, y, est, nuts, report = runs[0]
    assert set(nuts.samples) == {"height__loc", "height__var", "visits__rate", "colour__feature_probs"}
    assert nuts.samples["height__loc"].shape == (2, 1000, C, len(G))
    assert nuts.samples["colour__feature_probs"].shape == (2, 1000, C, len(K), 3)
    # The user's sites, as NUTS sampled them, are the canonical variables moved into place.
    np.testing.assert_array_equal(nuts.samples["visits__rate"].reshape(-1, C, 1), nuts.latent["lam"])
    with pytest.raises(ValueError, match="different data"):
        crosscheck(est, X[::-1], y[::-1], nuts=nuts)
    assert len(report.predictive) == 5 * C
