"""NUTS programs reused across runs (bayesnb.ppl.mcmc.sample_nuts, bayesnb.ppl.collapsed.run_nuts).

The compiled program of a run takes the data as arguments and is cached by the model,
the compiled-in arguments and the data's shapes: another seed or other data of the same
shapes compile nothing. A stale program (data compiled in, or a cache keyed without
them) would silently give every later cross-check the posterior of the first data set,
so the tests look at the posterior itself:

* oracle for the draws: numpyro's own ``MCMC(NUTS(model), chain_method="vectorized")``
  with the same key, which runs the same transitions in another compiled program;
* oracle for the posterior: the conjugate normal model's closed form (prior N(0, 10^2)
  on ``mu``, rows N(mu, sigma^2)): mean ``sum(x) / (n + sigma^2 / 100)``, sd
  ``sigma / sqrt(n + sigma^2 / 100)``.

One toy model keeps the compilations few (a NUTS program costs seconds to compile
whatever the model); the tests share its programs through the module-level cache.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from _compiles import count_compiles
from numpy.testing import assert_allclose

from bayesnb import MultinomialNB
from bayesnb.core._random import key_from_random_state
from bayesnb.core._x64 import enable_x64
from bayesnb.ppl import _nuts, collapsed, mcmc

RUN = {"num_warmup": 150, "num_samples": 200, "num_chains": 2}
N = 20


def normal_model(X=None, sigma=1.0):
    mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
    numpyro.sample("x", dist.Normal(mu, sigma), obs=X)


def _data(seed, shift=0.0):
    return np.random.default_rng(seed).normal(1.0, 1.0, N) + shift


def _run(X, seed, sigma=1.0):
    grouped, _, diverging = mcmc.sample_nuts(normal_model, (), {"X": X, "sigma": sigma}, random_state=seed,
                                             data=("X",), progress_bar=False, **RUN)
    assert not diverging.any()
    return grouped["mu"]


def _exact(X, sigma):
    precision = X.size + sigma**2 / 100.0
    return X.sum() / precision, sigma / np.sqrt(precision)


@pytest.fixture(scope="module")
def first():
    mcmc.clear_nuts_cache()
    X1 = _data(0)
    return X1, _run(X1, 0)


def test_another_data_set_of_the_same_shape_compiles_nothing(first):
    X1, _ = first
    assert count_compiles(lambda: jax.jit(lambda v: v * 2.0)(np.arange(3.0))) > 0  # the counter sees one
    assert count_compiles(lambda: _run(_data(1, shift=3.0), 1)) == 0
    assert count_compiles(lambda: _run(X1, 5)) == 0


def test_each_data_set_gets_its_own_posterior(first):
    # The same shapes, other values: a program keyed without the data, or with the first
    # data compiled in, would give X1's posterior (mean about 1) for X2 (mean about 4).
    X1, draws1 = first
    X2 = _data(1, shift=3.0)
    draws2 = _run(X2, 0)
    for X, draws in ((X1, draws1), (X2, draws2)):
        mean, sd = _exact(X, 1.0)
        # 400 draws of ESS >= 100: MCSE <= sd / 10; 0.5 sd is 5 MCSE, while the two data
        # sets' posteriors are 3 / 0.22 = 13 sd apart.
        assert abs(draws.mean() - mean) < 0.5 * sd
        assert 0.7 * sd < draws.std() < 1.3 * sd
    # And the first data set again, after the second: its draws, bit for bit, as this is
    # the same executable on the same inputs (the same operations in the same order).
    np.testing.assert_array_equal(_run(X1, 0), draws1)


def test_compiled_in_arguments_key_the_cache(first):
    X1, _ = first
    # sigma is not data: compiled in, so another value must be another program (the key
    # is what selects the program; running one more program here would cost a NUTS
    # compilation, 30 s, for what the key shows).
    key = mcmc._program_key
    args = (normal_model, (), {"X": X1, "sigma": 1.0}, ("X",), 1, 1, 2, 0.8)
    k1 = key(*args)[0]
    assert k1 == key(*args)[0]
    assert k1 != key(normal_model, (), {"X": X1, "sigma": 2.0}, ("X",), 1, 1, 2, 0.8)[0]
    assert k1 != key(normal_model, (), {"X": X1, "sigma": 1}, ("X",), 1, 1, 2, 0.8)[0]  # int compiles otherwise
    assert k1 != key(normal_model, (), {"X": X1[:-1], "sigma": 1.0}, ("X",), 1, 1, 2, 0.8)[0]  # other shape
    assert k1 != key(normal_model, (), {"X": X1, "sigma": 1.0}, ("X",), 1, 2, 2, 0.8)[0]  # other draws
    # Data: their values are not in the key (the program takes them as arguments).
    assert k1 == key(normal_model, (), {"X": X1 + 1, "sigma": 1.0}, ("X",), 1, 1, 2, 0.8)[0]
    # Not data (compiled in): the values of an array are in the key.
    compiled_in = [key(normal_model, (), {"X": X}, (), 1, 1, 2, 0.8)[0] for X in (X1, X1 + 1)]
    assert compiled_in[0] != compiled_in[1]


def test_the_draws_are_numpyro_mcmcs_with_the_same_key():
    # numpyro's MCMC runs the same transitions as the cached program, compiled otherwise
    # (numpyro's fori loop, the initialisation op by op): the draws agree to rounding,
    # which the transitions carry forward (observed 1e-10 after 40 transitions of a
    # Gaussian model; 1e-8 is far below a draw's scale, 0.2, and far above the rounding).
    from numpyro.infer import MCMC, NUTS

    X = _data(2)
    small = {"num_warmup": 10, "num_samples": 10, "num_chains": 2}
    grouped, latent, diverging = mcmc.sample_nuts(normal_model, (), {"X": X}, random_state=3, data=("X",),
                                                  progress_bar=False, **small)
    with enable_x64():
        ref = MCMC(NUTS(normal_model), chain_method="vectorized", progress_bar=False, **small)
        ref.run(key_from_random_state(3), X=X, extra_fields=("diverging",))
        want = np.asarray(ref.get_samples(group_by_chain=True)["mu"])
        want_div = np.asarray(ref.get_extra_fields(group_by_chain=True)["diverging"])
    assert grouped["mu"].shape == want.shape == (2, 10)
    assert_allclose(grouped["mu"], want, rtol=0, atol=1e-8)
    assert_allclose(latent["mu"], want.reshape(-1), rtol=0, atol=1e-8)
    np.testing.assert_array_equal(diverging, want_div)


def test_the_collapsed_sampler_takes_the_statistics_as_arguments():
    def pieces(seed):
        rng = np.random.default_rng(seed)
        y = np.arange(24) % 3
        X = rng.poisson(1.0 + 2.0 * y[:, None] * (seed + 1), (24, 4))
        est = MultinomialNB().fit(X, y)
        hypers = [collapsed.Hyper("alpha", ("alpha",), dist.Gamma(2.0, 1.0))]

        def build(v):
            fitted = MultinomialNB(alpha=float(v["alpha"])).fit(X, y)
            return fitted.prior_, np.asarray(fitted.class_dirichlet_.concentration)

        return hypers, collapsed.log_evidence_fn(est.family_, est.stats_, est.stats_.class_count,
                                                 collapsed.embedding(build, hypers))

    hypers, ev1 = pieces(0)
    hypers2, ev2 = pieces(1)
    # Equal functions (family and embedding compared by value), other statistics.
    assert jax.tree.structure(ev1) == jax.tree.structure(ev2)
    key = jax.random.PRNGKey(0)
    options = {"num_warmup": 100, "num_samples": 100}
    run1 = collapsed.run_nuts(key, ev1, hypers, **options)
    out = {}
    assert count_compiles(lambda: out.update(run2=collapsed.run_nuts(key, ev2, hypers2, **options))) == 0
    # Other data, same key: other draws (stale statistics would give run1's exactly).
    assert not np.allclose(out["run2"].draws["alpha"], run1.draws["alpha"])
    # The first statistics again: the same executable on the same inputs, the same bits.
    np.testing.assert_array_equal(collapsed.run_nuts(key, ev1, hypers, **options).draws["alpha"], run1.draws["alpha"])


def prior_model(X=None, prior=None):
    loc, scale = prior[0], prior[1]
    mu = numpyro.sample("mu", dist.Normal(loc, scale))
    numpyro.sample("x", dist.Normal(mu, 1.0), obs=X)


def host_prior_model(X=None, prior=None):
    loc, scale = (float(v) for v in np.asarray(prior))  # reads the prior's values in Python
    mu = numpyro.sample("mu", dist.Normal(loc, scale))
    numpyro.sample("x", dist.Normal(mu, 1.0), obs=X)


def _prior_run(model, X, prior, seed=0):
    grouped, _, _ = mcmc.sample_nuts(model, (), {"X": X, "prior": np.asarray(prior)}, random_state=seed, data=("X",),
                                     parameters=("prior",), progress_bar=False, **RUN)
    return grouped["mu"]


def _check_prior_posterior(draws, X, loc, scale):
    # N(loc, scale^2) prior, rows N(mu, 1): the conjugate normal posterior.
    precision = X.size + 1.0 / scale**2
    mean, sd = (X.sum() + loc / scale**2) / precision, 1.0 / np.sqrt(precision)
    assert abs(draws.mean() - mean) < 0.5 * sd  # 5 MCSE at ESS >= 100, as above
    assert 0.7 * sd < draws.std() < 1.3 * sd


def test_a_prior_passed_as_a_parameter_is_an_argument_of_the_program():
    # A data-scaled default prior differs with every data set; as an argument, one
    # program serves them all. The two tight priors put the posteriors 20 sd apart, so a
    # program that kept the first prior compiled in would fail the second's oracle.
    X = _data(3)
    first = _prior_run(prior_model, X, [0.0, 0.3])
    _check_prior_posterior(first, X, 0.0, 0.3)
    out = {}
    assert count_compiles(lambda: out.update(second=_prior_run(prior_model, X, [10.0, 0.3]))) == 0
    _check_prior_posterior(out["second"], X, 10.0, 0.3)


def test_a_model_that_reads_its_prior_in_python_has_it_compiled_in():
    # It cannot be traced with the prior as an argument: the wider split is marked
    # untraceable and the prior is compiled in, keyed by its values, as before.
    X = _data(4)
    draws = _prior_run(host_prior_model, X, [10.0, 0.3])
    _check_prior_posterior(draws, X, 10.0, 0.3)
    kept = [v for k, v in _nuts._NUTS_PROGRAMS.items() if k[0] is host_prior_model]
    assert len(kept) == 2 and sum(v is _nuts._UNTRACEABLE for v in kept) == 1


def test_masked_entries_and_a_data_scaled_prior_reuse_the_cross_check_program():
    # GaussianNB's default prior is scaled to the data and missing="ignore" hands NUTS a
    # mask of the observed entries; both are arguments of one program (the mask was
    # converted in NumPy and every masked cross-check compiled afresh). Another data set
    # of the same shape, shifted by 4 and with other missing entries, compiles nothing
    # and gets its own posterior: the closed form's mean of each class mean, to 5 MCSE.
    from bayesnb import GaussianNB

    def data(seed, shift):
        rng = np.random.default_rng(seed)
        y = np.arange(30) % 2
        X = rng.normal(y[:, None] + shift, 1.0, (30, 2))
        X[rng.random(X.shape) < 0.15] = np.nan
        return X, y

    def check(X, y):
        est = GaussianNB(missing="ignore").fit(X, y)
        run = mcmc.run_nuts(est, X, y, random_state=1, **RUN)
        post = est.posterior_
        a, b, k = (np.asarray(getattr(post, f)) for f in ("concentration", "rate", "kappa"))
        sd = np.sqrt(b / ((a - 1) * k))  # the closed form's sd of each class mean (Student-t)
        draws = run.samples["loc"].reshape(-1, *sd.shape)
        assert np.all(np.abs(draws.mean(axis=0) - np.asarray(post.loc)) < 0.5 * sd)

    check(*data(0, 0.0))
    assert count_compiles(lambda: check(*data(1, 4.0))) == 0


def _registry_cases():
    from _registered import family_estimators

    return [(name, support, est) for name, support, est in family_estimators()]


@pytest.mark.parametrize("form", ["rows", "stats"])
@pytest.mark.parametrize("case", _registry_cases(), ids=lambda c: c[0])
def test_every_family_model_traces_with_its_prior_and_mask_as_arguments(case, form):
    # Each registered family's numpyro model (per row and on statistics, with a missing
    # entry where the family allows one) must trace with every array of its data and of
    # its prior abstract: else run_nuts silently compiles one NUTS program per prior
    # value (categorical, full-covariance Gaussian) or per mask (every masked model did).
    # Tracing the log joint is what the compiled program does first, without compiling.
    from _registered import rows_in_support
    from numpyro import handlers
    from sklearn.base import clone

    from bayesnb.ppl.models import model_from_estimator

    name, support, unfitted = case
    est = clone(unfitted)
    est.set_params(**{k: 1.0 for k, v in est.get_params(deep=False).items() if isinstance(v, str) and v == "evidence"})
    X, y = rows_in_support(support, np.random.default_rng(7), 16)
    try:
        masked = np.asarray(X, dtype=float).copy()
        masked[1, 1] = np.nan
        est_m = clone(est).set_params(missing="ignore").fit(masked, y)
        est, X = est_m, masked
    except ValueError:  # the family refuses missing entries at fit: fully observed
        est.fit(X, y)
    model, kwargs = model_from_estimator(est, X, y, form=form)
    split = mcmc.MODEL_DATA + mcmc.MODEL_PARAMETERS
    _, static, data_at = _nuts._program_key(model, (), kwargs, split, 1, 1, 2, 0.8)
    leaves, treedef = jax.tree.flatten(((), dict(kwargs)))
    assert any(np.ndim(leaves[i]) and leaves[i].dtype.kind == "f" for i in data_at)  # the prior or data is in

    def log_joint(data):
        _, kw = _nuts.with_data(treedef, static, data_at, data)
        trace = handlers.trace(handlers.seed(model, 0)).get_trace(**kw)
        return sum(jnp.sum(site["fn"].log_prob(site["value"])) for site in trace.values() if site["type"] == "sample")

    with enable_x64():
        jax.make_jaxpr(log_joint)([jnp.asarray(leaves[i]) for i in data_at])
