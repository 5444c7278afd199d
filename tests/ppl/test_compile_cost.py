"""What compiling a model costs beyond running it (issue 38, item 11: 30 columns in under 2 s).

The compiler runs the model eagerly (its first run on the data, three probe runs) and
tracks its sites' dependencies abstractly. Every JAX operation run eagerly is compiled
once per shape, so the compiler itself must add none: no key split per site (the seed
handler sits outside the probe values' substitution), no ``jnp.asarray`` of a probe value
(NumPy values, else ``jax.device_put``), no ``PRNGKey`` computed by JAX (``_seed_key``),
and the relations draw no value with numpyro's samplers (numpyro's
``get_model_relations`` traced a whole run of them only for the sites' shapes). The
oracle of the compilation count is the model's own operations: after one run of the
model with the same shapes and no key, ``compile_model`` compiles nothing. The probe
values reach the model as NumPy arrays (its ``theta[y]`` is then NumPy's indexing); a
model using JAX-only methods on them is run on JAX arrays. Times are in
``benchmarks/bench_compile.py``.
"""

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro import handlers
from numpyro.distributions import constraints
from numpyro.infer.inspect import get_model_relations

import bayesnb
from bayesnb.core._x64 import enable_x64
from bayesnb.ppl.compile import _run, _sample_relations, _seed_key, recognise_model

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _compiles import count_compiles  # noqa: E402

# Shapes no other test uses (3 classes, 37 rows), so that a compilation is this test's.
C, N_ROWS, NB, NG, NC = 3, 37, 10, 10, 10


def model(X, y):
    """30 columns: a third Beta-Bernoulli, a third Normal-Inverse-Gamma, a third Dirichlet-categorical."""
    pi = numpyro.sample("pi", dist.Dirichlet(jnp.ones(C)))
    with numpyro.plate("data", X.shape[0]):
        yy = numpyro.sample("y", dist.Categorical(pi), obs=y)
    for j in range(NB):
        with numpyro.plate(f"cb{j}", C):
            t = numpyro.sample(f"tb{j}", dist.Beta(1.0, 1.0))
        with numpyro.plate(f"db{j}", X.shape[0]):
            numpyro.sample(f"xb{j}", dist.Bernoulli(t[yy]), obs=X[:, j])
    for j in range(NG):
        with numpyro.plate(f"cg{j}", C):
            v = numpyro.sample(f"vg{j}", dist.InverseGamma(2.0, 1.0))
            m = numpyro.sample(f"mg{j}", dist.Normal(0.0, jnp.sqrt(v / 0.5)))
        with numpyro.plate(f"dg{j}", X.shape[0]):
            numpyro.sample(f"xg{j}", dist.Normal(m[yy], jnp.sqrt(v[yy])), obs=X[:, NB + j])
    for j in range(NC):
        with numpyro.plate(f"cc{j}", C):
            p = numpyro.sample(f"pc{j}", dist.Dirichlet(jnp.ones(3)))
        with numpyro.plate(f"dc{j}", X.shape[0]):
            numpyro.sample(f"xc{j}", dist.Categorical(p[yy]), obs=X[:, NB + NG + j].astype(int))


def _data():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, 2, (N_ROWS, NB)), rng.normal(size=(N_ROWS, NG)),
                         rng.integers(0, 3, (N_ROWS, NC))]).astype(float)
    return X, np.arange(N_ROWS) % C


def _run_without_key(X, y):
    """One run of the model on values of the probes' shapes and dtypes, no key, no sampler."""
    rng = np.random.default_rng(1)

    def value(msg):
        if msg["type"] == "sample" and not msg["is_observed"]:
            shape = msg["fn"].shape()
            u = rng.uniform(0.2, 0.8, size=shape)
            return jax.device_put(u / u.sum(-1, keepdims=True) if msg["fn"].event_shape else u)
        return None

    with enable_x64(), numpyro.validation_enabled(False):
        handlers.substitute(model, substitute_fn=value)(X, y)


def test_the_compiler_compiles_nothing_beyond_the_models_own_operations():
    X, y = _data()
    # The counter sees a compilation (else the test below could not fail).
    assert count_compiles(lambda: jax.jit(lambda v: v * 7.0 + 3.0)(np.arange(13.0))) >= 1
    # The model's own operations, once per shape: a handful, not one per column.
    assert 0 < count_compiles(lambda: _run_without_key(X, y)) < 30
    compiled = []
    assert count_compiles(lambda: compiled.append(bayesnb.compile_model(model, X, y))) == 0
    assert type(compiled[0]).__name__ == "MixedNB" and len(compiled[0].blocks) == 30


def test_the_probe_runs_split_no_key_and_the_relations_draw_nothing(monkeypatch):
    X, y = _data()
    calls = []
    for name in ("split", "gamma", "beta", "dirichlet", "normal", "uniform"):
        original = getattr(jax.random, name)

        def counted(*args, _original=original, _name=name, **kwargs):
            calls.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(jax.random, name, counted)
    compiled = recognise_model(model, X, y)
    assert [s.family for s in compiled.sites] == ["bernoulli"] * NB + ["gaussian"] * NG + ["categorical"] * NC
    assert calls == []


def test_the_probe_key_is_jax_prngkey():
    for seed in (0, 1, 3, 2**31 + 5):
        np.testing.assert_array_equal(np.asarray(_seed_key(seed)), np.asarray(jax.random.PRNGKey(seed)))
        with enable_x64():
            np.testing.assert_array_equal(np.asarray(_seed_key(seed)), np.asarray(jax.random.PRNGKey(seed)))


class Shifted(dist.Distribution):
    """A distribution of the user's keeping a parameter (``shift``) outside its pytree."""

    arg_constraints = {"loc": constraints.real}
    support = constraints.real

    def __init__(self, loc, shift):
        self.loc, self.shift = loc, shift
        super().__init__(batch_shape=jnp.shape(loc))

    def sample(self, key, sample_shape=()):
        return self.loc + self.shift + jax.random.normal(key, sample_shape + self.batch_shape)

    def log_prob(self, value):
        return -0.5 * (value - self.loc - self.shift) ** 2


def hyper_deterministic(X, y):
    a = numpyro.sample("a", dist.Gamma(2.0, 1.0))
    s = numpyro.sample("s", dist.Normal(0.0, 1.0))
    pi = numpyro.sample("pi", dist.Dirichlet(jnp.ones(C)))
    with numpyro.plate("class", C, dim=-2), numpyro.plate("feature", 2, dim=-1):
        rate = numpyro.sample("rate", dist.Gamma(a, 1.0))
        loc = numpyro.sample("loc", dist.Normal(0.0, 1.0))
    r = numpyro.deterministic("r", rate * 2.0)
    with numpyro.plate("data", X.shape[0]):
        yy = numpyro.sample("y", dist.Categorical(pi), obs=y)
        numpyro.sample("x", dist.Poisson(r[yy]).to_event(1), obs=X[:, :2])
        numpyro.sample("z", Shifted(loc[yy], s).to_event(1), obs=X[:, 2:4])


def test_the_relations_are_numpyros():
    # Oracle: numpyro's get_model_relations, on numpyro's distributions (read through
    # their pytree leaves), a deterministic site, a hyperprior and a distribution of the
    # user's (read through its log density).
    X, y = _data()
    with enable_x64():
        got = _sample_relations(hyper_deterministic, (X, y), {}, _run(hyper_deterministic, X, y, {}, 0))
        assert got == get_model_relations(hyper_deterministic, model_args=(X, y))["sample_sample"]
        assert set(got["z"]) == {"s", "y", "loc"} and set(got["x"]) == {"y", "r"}


def test_a_model_using_jax_only_methods_on_sampled_values_still_compiles():
    # The probe runs give the model NumPy latent values (NumPy's indexing by the label
    # compiles nothing); a model calling a JAX-only method on them (.at) is run on JAX
    # arrays instead, with the same result.
    def plain(X, y):
        pi = numpyro.sample("pi", dist.Dirichlet(jnp.ones(C)))
        with numpyro.plate("class", C, dim=-2), numpyro.plate("feature", 2, dim=-1):
            theta = numpyro.sample("theta", dist.Beta(2.0, 3.0))
        with numpyro.plate("data", X.shape[0]):
            yy = numpyro.sample("y", dist.Categorical(pi), obs=y)
            numpyro.sample("x", dist.Bernoulli(theta[yy]).to_event(1), obs=X)

    def with_at(X, y):
        pi = numpyro.sample("pi", dist.Dirichlet(jnp.ones(C)))
        with numpyro.plate("class", C, dim=-2), numpyro.plate("feature", 2, dim=-1):
            theta = numpyro.sample("theta", dist.Beta(2.0, 3.0))
        with numpyro.plate("data", X.shape[0]):
            yy = numpyro.sample("y", dist.Categorical(pi), obs=y)
            numpyro.sample("x", dist.Bernoulli(theta.at[yy].get()).to_event(1), obs=X)

    X, y = _data()
    X = X[:, :2]
    got, want = bayesnb.compile_model(with_at, X, y), bayesnb.compile_model(plain, X, y)
    assert type(got).__name__ == type(want).__name__ == "BernoulliNB"
    np.testing.assert_array_equal(np.asarray(got.alpha[0]), np.asarray(want.alpha[0]))
    np.testing.assert_array_equal(got.fit(X, y).predict_proba(X), want.fit(X, y).predict_proba(X))
