"""Contract: every registered family's closed forms are JAX-traceable on dense input.

For each family in :func:`bayesnb.core.families.names` (a family registered later is covered
without editing this file), inside the library's float64 scope:

* ``jax.jit`` of ``posterior``, ``point`` (``"mle"``, ``"map"``, ``"mean"``: every kind of
  the protocol), ``log_predictive`` and ``log_likelihood`` on dense rows, with every
  argument traced, equals the eager call (the NumPy/SciPy CPU path) to 1e-12 relative;
* ``jax.jit`` of ``sample`` gives valid draws of the same posterior as the eager call:
  same pytree, shapes and dtypes, the same ``-inf`` and constant entries, and means of
  every entry that agree within 5 standard errors of their difference over
  ``N_DRAWS`` draws (the eager call draws with NumPy seeded from the key, the traced
  one with ``jax.random``: the same distribution, not the same numbers; see
  :mod:`bayesnb.core._sampling`);
* ``jax.grad`` of a weighted sum of ``log_predictive`` in each continuous field of the
  posterior equals a central finite difference of the *eager* (CPU path) predictive,
  along a random direction, to 1e-5 relative;
* ``jax.vmap`` of ``log_evidence`` over a batch of priors equals the loop.

The checks fail on planted errors of four kinds: a member that calls ``np.asarray`` on
a traced value, a traced path whose numbers differ from the eager one by 1e-9, a
gradient that misses half of the dependence on the field, and a traced sampler whose
draws come from a posterior with a concentration 10% off.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
from test_family_evidence_grad import GENERATORS, _perturbed_prior, _random_direction

from bayesnb.core import families
from bayesnb.core._x64 import enable_x64
from bayesnb.core.kernels import is_traced, log_linear

N_SAMPLES, N_NEW, N_FEATURES, N_CLASSES = 40, 12, 3, 2
KINDS = ("mle", "map", "mean")
RTOL = 1e-12


def _setup(name):
    """Family, statistics of weighted training rows, a non-default prior, new dense rows."""
    family = families.get(name)
    rng = np.random.default_rng(sum(map(ord, name)) + 13)
    X = GENERATORS[family.support](rng, (N_SAMPLES, N_FEATURES))
    y = np.arange(N_SAMPLES) % N_CLASSES
    stats = family.stats(X, y, N_CLASSES, rng.uniform(0.5, 2.0, N_SAMPLES))
    prior = _perturbed_prior(family, stats, rng)
    X_new = GENERATORS[family.support](rng, (N_NEW, N_FEATURES))
    if family.support == "codes":
        X_new[1, 0] = X.max() + 1  # a category not seen in training (the log_new path)
    return family, stats, prior, X_new, rng


def _assert_close(got, want, rtol=RTOL):
    """Same pytree structure, shapes and values (to ``rtol``, with equal infinities)."""
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    assert got_tree == want_tree
    for g, w in zip(got_leaves, want_leaves):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape
        assert not np.isnan(w).any(), "the eager value itself is NaN"
        np.testing.assert_allclose(g, w, rtol=rtol, atol=0.0)


def _jit_equals_eager(fn, *args):
    """``jax.jit(fn)(*args)`` (every array argument traced) equals ``fn(*args)``; returns the eager value."""
    with enable_x64():
        eager = fn(*args)
        traced = jax.jit(fn)(*args)
    _assert_close(traced, eager)
    return eager


def _grad_and_difference(f, value, direction, h=1e-5):
    """``jax.grad`` of ``f`` along ``direction`` (compiled) and the central difference of ``f``."""
    with enable_x64():
        grad = np.asarray(jax.jit(jax.grad(f))(jnp.asarray(value)))
        assert grad.shape == value.shape
        analytic = float(np.sum(grad * direction))
        numeric = (float(f(value + h * direction)) - float(f(value - h * direction))) / (2.0 * h)
        at = float(f(value))
    assert np.isfinite(analytic) and abs(analytic) > 1e-6 * abs(at)  # a direction that moves it
    return analytic, numeric


@pytest.mark.parametrize("name", families.names())
def test_posterior_and_point_compile_to_the_eager_values(name):
    family, stats, prior, _, _ = _setup(name)
    post = _jit_equals_eager(family.posterior, prior, stats)
    assert type(post) is family.prior_type
    for kind in KINDS:
        _jit_equals_eager(lambda p, s, kind=kind: family.point(p, s, kind), prior, stats)


@pytest.mark.parametrize("name", families.names())
def test_predictive_and_likelihood_compile_to_the_eager_values(name):
    family, stats, prior, X_new, _ = _setup(name)
    post = family.posterior(prior, stats)
    out = _jit_equals_eager(family.log_predictive, post, X_new)
    assert out.shape == (N_NEW, N_CLASSES) and np.isfinite(out).all()
    for kind in KINDS:
        params = family.point(prior, stats, kind)
        out = _jit_equals_eager(family.log_likelihood, params, X_new, prior)
        assert out.shape == (N_NEW, N_CLASSES)


N_DRAWS = 4000
SE_BOUND = 5.0


def _assert_same_distribution(got, want):
    """Two sets of draws (leading axis) of the same posterior: same pytree, shapes, dtypes,
    ``-inf`` pattern and constants; entry means within ``SE_BOUND`` standard errors."""
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    assert got_tree == want_tree
    for g, w in zip(got_leaves, want_leaves):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        assert not np.isnan(g).any() and not np.isnan(w).any()
        assert np.array_equal(np.isneginf(g).all(axis=0), np.isneginf(w).all(axis=0))
        finite = np.isfinite(w).all(axis=0) & np.isfinite(g).all(axis=0)
        gm, wm = g.mean(axis=0)[finite], w.mean(axis=0)[finite]
        se = np.sqrt((g.var(axis=0)[finite] + w.var(axis=0)[finite]) / g.shape[0])
        assert np.all(np.abs(gm - wm) <= SE_BOUND * se + 1e-12 * np.abs(wm)), np.max(np.abs(gm - wm) / np.maximum(se, 1e-300))


def _jit_and_eager_draws(family, post, n, key_jit=7, key_eager=8):
    with enable_x64():
        sampler = jax.jit(family.sample, static_argnums=2)
        return sampler(jax.random.PRNGKey(key_jit), post, n), family.sample(jax.random.PRNGKey(key_eager), post, n)


@pytest.mark.parametrize("name", families.names())
def test_sample_compiles_to_draws_of_the_same_posterior(name):
    family, stats, prior, _, _ = _setup(name)
    post = family.posterior(prior, stats)
    traced, draws = _jit_and_eager_draws(family, post, N_DRAWS)
    _assert_same_distribution(traced, draws)
    with enable_x64():
        # Same key, same draws, eager and traced; a different key gives different draws.
        _assert_close(family.sample(jax.random.PRNGKey(8), post, 5), family.sample(jax.random.PRNGKey(8), post, 5))
        other = jax.jit(family.sample, static_argnums=2)(jax.random.PRNGKey(9), post, 5)
        same = jax.jit(family.sample, static_argnums=2)(jax.random.PRNGKey(9), post, 5)
    _assert_close(same, other)
    first = jax.tree_util.tree_map(lambda a: np.asarray(a)[:5], traced)
    assert any(
        not np.allclose(np.asarray(a), np.asarray(b))
        for a, b in zip(jax.tree_util.tree_leaves(other), jax.tree_util.tree_leaves(first))
    )


def test_a_traced_sampler_of_another_posterior_fails_the_check():
    # A traced path drawing from a Dirichlet whose first concentration is 10% too large
    # (about 100 here: E[log theta_1] moves by about 0.065, some 30 standard errors).
    family, stats, prior, _, _ = _setup("multinomial")
    post = family.posterior(prior, stats)
    shifted = type(post)(np.asarray(post.concentration) * np.array([1.1, 1.0, 1.0]))
    with enable_x64():
        traced = jax.jit(family.sample, static_argnums=2)(jax.random.PRNGKey(7), shifted, N_DRAWS)
        draws = family.sample(jax.random.PRNGKey(8), post, N_DRAWS)
    with pytest.raises(AssertionError):
        _assert_same_distribution(traced, draws)


@pytest.mark.parametrize("name", families.names())
def test_predictive_gradient_matches_finite_differences(name):
    family, stats, prior, X_new, rng = _setup(name)
    post = family.posterior(prior, stats)
    weights = rng.uniform(0.5, 1.5, (N_NEW, N_CLASSES))
    for field in family.hyperparameters:
        value = np.asarray(getattr(post, field), dtype=np.float64)
        direction = _random_direction(field, value, rng)

        def f(v, field=field):
            return jnp.sum(weights * family.log_predictive(post._replace(**{field: v}), X_new))

        analytic, numeric = _grad_and_difference(f, value, direction)
        assert analytic == pytest.approx(numeric, rel=1e-5), field


@pytest.mark.parametrize("name", families.names())
def test_log_evidence_vmaps_over_priors(name):
    family, stats, _, _, rng = _setup(name)
    priors = [_perturbed_prior(family, stats, rng) for _ in range(3)]
    batch = jax.tree_util.tree_map(lambda *leaves: np.stack([np.asarray(v) for v in leaves]), *priors)
    with enable_x64():
        mapped = np.asarray(jax.vmap(family.log_evidence, in_axes=(0, None))(batch, stats))
    looped = np.array([float(family.log_evidence(p, stats)) for p in priors])
    assert mapped.shape == (3,)
    assert np.unique(looped).size == 3  # distinct priors, distinct evidences
    np.testing.assert_allclose(mapped, looped, rtol=RTOL, atol=0.0)


# ----------------------------------------------------------------------------- planted errors


def test_a_member_calling_numpy_on_a_traced_value_fails_the_check():
    family, stats, prior, _, _ = _setup("multinomial")

    def posterior_through_numpy(p, s):
        # The shape of the bug: parameters converted to NumPy before the conjugate update.
        return type(p)(np.asarray(p.concentration) + np.asarray(s.feature_count))

    planted = family._replace(posterior=posterior_through_numpy)
    assert np.allclose(planted.posterior(prior, stats).concentration, family.posterior(prior, stats).concentration)
    with pytest.raises(jax.errors.TracerArrayConversionError):
        _jit_equals_eager(planted.posterior, prior, stats)


def test_a_traced_path_with_other_numbers_fails_the_check():
    family, stats, prior, X_new, _ = _setup("gaussian")
    post = family.posterior(prior, stats)

    def drifting(p, X):
        out = family.log_predictive(p, X)
        return out * (1.0 + 1e-9) if is_traced(p, X) else out

    with pytest.raises(AssertionError):
        _jit_equals_eager(drifting, post, X_new)


def test_a_gradient_missing_part_of_the_dependence_fails_the_check():
    family, stats, prior, X_new, rng = _setup("poisson")
    post = family.posterior(prior, stats)
    value = np.asarray(post.rate, dtype=np.float64)
    direction = _random_direction("rate", value, rng)

    def f(v):
        # Half of the argument is hidden from jax.grad: the gradient is half the true one.
        v = 0.5 * (v + jax.lax.stop_gradient(v))
        return jnp.sum(family.log_predictive(post._replace(rate=v), X_new))

    analytic, numeric = _grad_and_difference(f, value, direction)
    assert analytic != pytest.approx(numeric, rel=1e-5)
    assert analytic == pytest.approx(0.5 * numeric, rel=1e-5)


# ----------------------------------------------------------------------------- the kernels


def test_traced_log_linear_keeps_zero_times_minus_infinity_zero():
    rng = np.random.default_rng(3)
    X = rng.integers(0, 2, (20, 5)).astype(np.float64)
    log_on = np.log(rng.uniform(0.1, 0.9, (2, 5)))
    log_off = np.log1p(-np.exp(log_on))
    # Zero probabilities: of "on" for feature 1 in class 0, of "off" for feature 3 in class 1.
    log_on[0, 1] = -np.inf
    log_off[1, 3] = -np.inf
    X[0, 1], X[1, 1], X[2, 3], X[3, 3] = 0.0, 1.0, 1.0, 0.0
    eager = log_linear(X, log_on, bias=np.array([0.1, -0.2]), log_w_off=log_off)
    # Only the rows that carry a value of probability zero are impossible.
    assert np.isneginf(eager[1, 0]) and np.isfinite(eager[0, 0])
    assert np.isneginf(eager[3, 1]) and np.isfinite(eager[2, 1])
    with enable_x64():
        traced = jax.jit(lambda w, o: log_linear(X, w, bias=jnp.array([0.1, -0.2]), log_w_off=o))(log_on, log_off)
    _assert_close(traced, eager)
    assert not np.isnan(np.asarray(traced)).any()
    # Brute force, with 0 · (-inf) := 0 term by term.
    terms = np.where(X[:, None, :] > 0, log_on[None], 0.0) + np.where(X[:, None, :] == 0, log_off[None], 0.0)
    np.testing.assert_allclose(np.asarray(traced), terms.sum(-1) + np.array([0.1, -0.2]), rtol=1e-12)


def test_sparse_input_has_no_traced_path_and_says_so():
    X = sp.csr_matrix(np.eye(3))
    log_w = np.log(np.full((2, 3), 1.0 / 3.0))
    assert np.allclose(log_linear(X, log_w), np.log(1.0 / 3.0))  # the CPU path takes it
    with enable_x64(), pytest.raises(TypeError, match="sparse X has no traced"):
        jax.jit(lambda w: log_linear(X, w))(log_w)
