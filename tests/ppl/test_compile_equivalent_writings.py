"""The model compiler reads every equivalent writing of one conjugate model (issue 38, item 11).

The oracle is the writing the compiler already read (plates of classes and features):
``expand``, ``to_event``, a parameter array, either plate order, and string class labels
must give the same recognised prior and the same fitted probabilities. Compiling runs the
model on probe values it draws with NumPy, never with JAX's samplers (whose compilation
per shape took most of the time).
"""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import bayesnb
from bayesnb.ppl.compile import recognise_model

C, K = 2, 3
# A prior that differs per (class, feature): a transposed or misplaced axis shows.
A = np.array([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])
F = A.shape[1]


def _data(seed=0, n=40):
    rng = np.random.default_rng(seed)
    return (rng.random((n, F)) < 0.4).astype(np.float64), np.arange(n) % C


def beta_plates(X, y):
    pi = numpyro.sample("pi", dist.Dirichlet(jnp.ones(C)))
    with numpyro.plate("class", C, dim=-2), numpyro.plate("feature", X.shape[1], dim=-1):
        theta = numpyro.sample("theta", dist.Beta(A, 3.0))
    with numpyro.plate("data", X.shape[0], dim=-2):
        yy = numpyro.sample("y", dist.Categorical(pi), obs=y[:, None])
    with numpyro.plate("rows", X.shape[0], dim=-2), numpyro.plate("cols", X.shape[1], dim=-1):
        numpyro.sample("x", dist.Bernoulli(theta[yy[:, 0]]), obs=X)


def beta_expand_to_event(X, y):
    pi = numpyro.sample("pi", dist.Dirichlet(jnp.ones(C)))
    theta = numpyro.sample("theta", dist.Beta(A, 3.0).expand([C, X.shape[1]]).to_event(2))
    with numpyro.plate("data", X.shape[0]):
        yy = numpyro.sample("y", dist.Categorical(pi), obs=y)
        numpyro.sample("x", dist.Bernoulli(theta[yy]).to_event(1), obs=X)


def beta_array_to_event(X, y):
    pi = numpyro.sample("pi", dist.Dirichlet(jnp.ones(C)))
    theta = numpyro.sample("theta", dist.Beta(jnp.asarray(A), jnp.full((C, F), 3.0)).to_event(2))
    with numpyro.plate("data", X.shape[0]):
        yy = numpyro.sample("y", dist.Categorical(pi), obs=y)
        numpyro.sample("x", dist.Bernoulli(theta[yy]).to_event(1), obs=X)


def beta_class_plate_features_event(X, y):
    pi = numpyro.sample("pi", dist.Dirichlet(jnp.ones(C)))
    with numpyro.plate("class", C):
        theta = numpyro.sample("theta", dist.Beta(A, 3.0).to_event(1))
    with numpyro.plate("data", X.shape[0]):
        yy = numpyro.sample("y", dist.Categorical(pi), obs=y)
        numpyro.sample("x", dist.Bernoulli(theta[yy]).to_event(1), obs=X)


def beta_swapped_plates(X, y):
    pi = numpyro.sample("pi", dist.Dirichlet(jnp.ones(C)))
    with numpyro.plate("feature", X.shape[1], dim=-2), numpyro.plate("class", C, dim=-1):
        theta = numpyro.sample("theta", dist.Beta(A.T, 3.0))  # (features, classes)
    with numpyro.plate("data", X.shape[0]):
        yy = numpyro.sample("y", dist.Categorical(pi), obs=y)
        numpyro.sample("x", dist.Bernoulli(theta[:, yy].T).to_event(1), obs=X)


WRITINGS = [beta_expand_to_event, beta_array_to_event, beta_class_plate_features_event, beta_swapped_plates]


@pytest.mark.parametrize("model", WRITINGS, ids=lambda m: m.__name__)
def test_beta_bernoulli_writings_compile_to_the_plates_model(model):
    X, y = _data()
    ref = recognise_model(beta_plates, X, y).sites[0]
    got = recognise_model(model, X, y).sites[0]
    assert got.family == ref.family == "bernoulli"
    np.testing.assert_array_equal(got.prior.concentration1, ref.prior.concentration1)
    np.testing.assert_array_equal(got.prior.concentration0, ref.prior.concentration0)
    np.testing.assert_array_equal(got.prior.concentration1, A)
    clf, oracle = bayesnb.compile_model(model, X, y).fit(X, y), bayesnb.compile_model(beta_plates, X, y).fit(X, y)
    np.testing.assert_array_equal(clf.predict_proba(X), oracle.predict_proba(X))


def dirichlet_plates(X, y):
    pi = numpyro.sample("pi", dist.Dirichlet(jnp.ones(C)))
    with numpyro.plate("class", C, dim=-2), numpyro.plate("feature", X.shape[1], dim=-1):
        theta = numpyro.sample("theta", dist.Dirichlet(jnp.full(K, 2.0)))
    with numpyro.plate("data", X.shape[0], dim=-2):
        yy = numpyro.sample("y", dist.Categorical(pi), obs=y[:, None])
    with numpyro.plate("rows", X.shape[0], dim=-2), numpyro.plate("cols", X.shape[1], dim=-1):
        numpyro.sample("x", dist.Categorical(theta[yy[:, 0]]), obs=X)


def dirichlet_expand_to_event(X, y):
    pi = numpyro.sample("pi", dist.Dirichlet(jnp.ones(C)))
    theta = numpyro.sample("theta", dist.Dirichlet(jnp.full(K, 2.0)).expand([C, X.shape[1]]).to_event(2))
    with numpyro.plate("data", X.shape[0]):
        yy = numpyro.sample("y", dist.Categorical(pi), obs=y)
        numpyro.sample("x", dist.Categorical(theta[yy]).to_event(1), obs=X)


def test_dirichlet_categorical_expand_to_event_is_the_plates_model():
    rng = np.random.default_rng(1)
    X, y = rng.integers(0, K, (40, F)), np.arange(40) % C
    ref = recognise_model(dirichlet_plates, X, y).sites[0]
    got = recognise_model(dirichlet_expand_to_event, X, y).sites[0]
    assert got.family == ref.family == "categorical"
    np.testing.assert_array_equal(np.asarray(got.prior.concentration), np.asarray(ref.prior.concentration))
    clf = bayesnb.compile_model(dirichlet_expand_to_event, X, y).fit(X, y)
    oracle = bayesnb.compile_model(dirichlet_plates, X, y).fit(X, y)
    np.testing.assert_array_equal(clf.predict_proba(X), oracle.predict_proba(X))


def test_string_labels_are_given_to_the_model_as_sorted_class_indices():
    X, y = _data()
    labels = np.where(y == 0, "edible", "poisonous")
    by_labels = bayesnb.compile_model(beta_expand_to_event, X, labels).fit(X, labels)
    by_codes = bayesnb.compile_model(beta_expand_to_event, X, y).fit(X, y)
    assert by_labels.classes_.tolist() == ["edible", "poisonous"]
    np.testing.assert_array_equal(by_labels.predict_proba(X), by_codes.predict_proba(X))
    np.testing.assert_array_equal(by_labels.prior_.concentration1, by_codes.prior_.concentration1)


def test_compiling_draws_no_latent_value_with_jax_samplers(monkeypatch):
    # JAX's Gamma/Dirichlet samplers compile once per shape (most of the time compiling
    # a model took); the probes draw their latent values with NumPy. Only the traced
    # (abstract) runs of numpyro's get_model_relations may call a sampler.
    eager = []
    for name in ("gamma", "dirichlet", "beta"):
        original = getattr(jax.random, name)

        def counted(key, *args, _original=original, _name=name, **kwargs):
            if not isinstance(key, jax.core.Tracer):
                eager.append(_name)
            return _original(key, *args, **kwargs)

        monkeypatch.setattr(jax.random, name, counted)
    X, y = _data(n=24)
    compiled = recognise_model(dirichlet_plates, np.zeros((24, F), np.int64), y)
    assert compiled.sites[0].family == "categorical"
    assert recognise_model(beta_expand_to_event, X, y).sites[0].family == "bernoulli"
    assert eager == []
