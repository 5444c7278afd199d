"""The host (NumPy) path of the parameter draws, :mod:`bayesnb.core._sampling`.

On concrete inputs every family's ``sample`` draws its standard variates with NumPy's
PCG64 seeded from the JAX key; under a trace with ``jax.random``. Checked here:

* each primitive (``log_gamma``, ``gamma``, ``normal``) and each registered family's
  ``sample``: sample means (and, where the law is known in closed form, variances)
  against the exact moments, within ``Z`` = 5 standard errors of the Monte Carlo
  estimate over ``N`` draws (a deterministic key: a false alarm would be a 5-sigma
  event, about 6e-7 per comparison); a Kolmogorov-Smirnov test of a few marginals
  against scipy.stats at level ``KS_LEVEL``;
* tiny concentrations (a = 1e-3): log draws finite, with the exact mean and variance of
  :math:`\\log G` and the exact probabilities :math:`P(\\log G < t)` far in the tail
  (where :math:`G` itself underflows to 0);
* determinism (same key, same draws), independence across ``fold_in`` blocks and
  across the pieces of a large draw (drawn on threads, the same whatever their number);
* the traced path is ``jax.random``'s, unchanged, and runs under ``jax.jit``;
* planted errors (a shape shifted by one, a scale 5% off, the small-shape correction
  left out, a Dirichlet marginal with a shifted concentration, blocks that reuse a
  stream) are rejected by the same assertions.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
import scipy.special as sc
import scipy.stats as st
from test_family_jit import _setup

from bayesnb.core import _fitted, _sampling, families
from bayesnb.core._x64 import enable_x64
from bayesnb.core.families import _dirichlet, _rows, bernoulli

N = 20_000  # draws of a primitive
N_FAMILY = 4_000  # draws of a family's parameters (2 classes x 3 features)
Z = 5.0
KS_LEVEL = 1e-3
KEY = jax.random.key(2026)


def assert_mean(draws, mean, var=None, axis=0):
    """Sample mean of ``draws`` along ``axis`` within ``Z`` standard errors of ``mean``.

    The standard error is ``sqrt(var / n)`` with the exact variance when given, else the
    sample variance's.
    """
    draws = np.asarray(draws, dtype=np.float64)
    n = draws.shape[axis]
    var = draws.var(axis=axis) if var is None else np.asarray(var, dtype=np.float64)
    se = np.sqrt(var / n)
    err = np.abs(draws.mean(axis=axis) - mean)
    assert np.all(err <= Z * se), f"mean off by {np.max(err / se):.1f} standard errors"


def assert_var(draws, var, axis=0):
    """Sample variance within ``Z`` standard errors (estimated from the fourth moment) of ``var``."""
    draws = np.asarray(draws, dtype=np.float64)
    n = draws.shape[axis]
    sq = (draws - draws.mean(axis=axis, keepdims=True)) ** 2
    se = np.sqrt(sq.var(axis=axis) / n)
    err = np.abs(sq.mean(axis=axis) - var)
    assert np.all(err <= Z * se), f"variance off by {np.max(err / se):.1f} standard errors"


def assert_probability(hits, p):
    """Frequency of ``hits`` within ``Z`` binomial standard errors of ``p``."""
    hits = np.asarray(hits, dtype=bool)
    se = np.sqrt(p * (1 - p) / hits.size)
    assert abs(hits.mean() - p) <= Z * se, f"frequency {hits.mean():.5f} against {p:.5f} (se {se:.2g})"


def assert_ks(draws, cdf):
    """Kolmogorov-Smirnov test of ``draws`` against ``cdf`` at level ``KS_LEVEL``."""
    p = st.kstest(np.asarray(draws, dtype=np.float64), cdf).pvalue
    assert p > KS_LEVEL, f"KS p-value {p:.2g}"


def _log_gamma_checks(draws, a):
    assert np.all(np.isfinite(draws))
    assert_mean(draws, sc.digamma(a), sc.polygamma(1, a))
    assert_var(draws, sc.polygamma(1, a))


def _tail_checks(draws, a):
    # P(log G < t) = P(G < e^t) = x^a / Gamma(a + 1) (1 + O(x)) for x = e^t tiny: exact
    # to double precision for t <= -50.
    for t in (-50.0, -500.0, -5000.0):
        assert_probability(draws < t, np.exp(a * t - sc.gammaln(a + 1.0)))


# ----------------------------------------------------------------------------- primitives


@pytest.mark.parametrize("a", [1e-3, 0.3, 1.0, 2.5, 50.0])
def test_log_gamma_moments(a):
    draws = _sampling.log_gamma(KEY, np.full(N, a))
    assert isinstance(draws, np.ndarray) and draws.dtype == np.float64 and draws.shape == (N,)
    _log_gamma_checks(draws, a)


@pytest.mark.parametrize("a", [0.3, 2.5])
def test_log_gamma_ks(a):
    assert_ks(np.exp(_sampling.log_gamma(KEY, a, (N,))), st.gamma(a).cdf)


def test_tiny_shape_log_gamma_is_finite_with_the_exact_tail():
    a = 1e-3
    draws = _sampling.log_gamma(KEY, a, (N,))
    # Most of these G underflow: exp(log G) is 0 for about 47% of the draws.
    assert np.mean(np.exp(draws) == 0.0) > 0.3
    _log_gamma_checks(draws, a)
    _tail_checks(draws, a)


def test_log_gamma_mixes_small_and_large_shapes_by_entry():
    a = np.array([1e-3, 0.5, 3.0])
    draws = _sampling.log_gamma(KEY, a, (N, 3))
    for j, aj in enumerate(a):
        _log_gamma_checks(draws[:, j], aj)


@pytest.mark.parametrize("a", [0.3, 4.0])
def test_gamma_moments_and_ks(a):
    draws = _sampling.gamma(KEY, a, (N,))
    assert draws.dtype == np.float64 and draws.shape == (N,)
    assert_mean(draws, a, a)
    assert_var(draws, a)
    assert_ks(draws, st.gamma(a).cdf)


def test_normal_moments_and_ks():
    draws = _sampling.normal(KEY, (N,))
    assert draws.dtype == np.float64
    assert_mean(draws, 0.0, 1.0)
    assert_var(draws, 1.0)
    assert_ks(draws, st.norm.cdf)


def test_same_key_same_draws_other_key_other_draws():
    a = np.array([1e-3, 0.7, 5.0])
    first = _sampling.log_gamma(KEY, a, (100, 3))
    np.testing.assert_array_equal(first, _sampling.log_gamma(KEY, a, (100, 3)))
    assert not np.any(first == _sampling.log_gamma(jax.random.fold_in(KEY, 1), a, (100, 3)))
    # Typed keys and raw uint32 keys with the same bits give the same stream.
    raw = jax.random.key_data(KEY)
    np.testing.assert_array_equal(_sampling.normal(raw, (10,)), _sampling.normal(KEY, (10,)))


def _correlation(u, v):
    return float(np.corrcoef(u, v)[0, 1])


def test_fold_in_blocks_are_independent():
    blocks = [_sampling.normal(_fitted.block_key(KEY, b), (N,)) for b in range(3)]
    for i in range(3):
        for j in range(i + 1, 3):
            assert abs(_correlation(blocks[i], blocks[j])) <= Z / np.sqrt(N)


def test_parameter_streams_are_not_the_simulation_streams():
    # _rows.generator simulates data from a key; the parameter draws use another stream.
    u = _rows.generator(KEY).standard_normal(N)
    assert abs(_correlation(u, _sampling.normal(KEY, (N,)))) <= Z / np.sqrt(N)


def test_traced_path_is_jax_random_under_jit():
    a = np.array([1e-3, 0.7, 5.0])
    with enable_x64():
        lg = jax.jit(lambda k, a: _sampling.log_gamma(k, a, (4, 3)))(KEY, a)
        g = jax.jit(lambda k, a: _sampling.gamma(k, a, (4, 3)))(KEY, a)
        z = jax.jit(lambda k: _sampling.normal(k, (4, 3)))(KEY)
        np.testing.assert_array_equal(lg, jax.random.loggamma(KEY, a, (4, 3), dtype=np.float64))
        np.testing.assert_array_equal(g, jax.random.gamma(KEY, a, (4, 3), dtype=np.float64))
        np.testing.assert_array_equal(z, jax.random.normal(KEY, (4, 3), dtype=np.float64))
    assert isinstance(lg, jax.Array) and lg.dtype == np.float64


def test_dirichlet_sample_log_under_jit_is_the_old_traced_sampler():
    a = np.array([[1e-3, 2.0, 30.0], [0.5, 0.5, 0.5]])
    with enable_x64():
        traced = jax.jit(lambda k, a: _dirichlet.sample_log(k, a, 8))(KEY, a)
        g = jax.random.loggamma(KEY, a, shape=(8, 2, 3), dtype=np.float64)
        want = g - jax.scipy.special.logsumexp(g, axis=-1, keepdims=True)
    np.testing.assert_array_equal(traced, want)


# ----------------------------------------------------------------------------- planted errors


def test_a_shape_shifted_by_one_is_rejected():
    a = 2.5
    wrong = _sampling.log_gamma(KEY, a + 1.0, (N,))
    with pytest.raises(AssertionError):
        _log_gamma_checks(wrong, a)


def test_a_scale_five_percent_off_is_rejected():
    a = 4.0
    wrong = 1.05 * _sampling.gamma(KEY, a, (N,))
    with pytest.raises(AssertionError):
        assert_mean(wrong, a, a)


def test_the_small_shape_correction_left_out_is_rejected():
    # log G(a + 1) without the log(U) / a term: the underflow-free sampler's classic slip.
    a = 1e-3
    wrong = _sampling.log_gamma(KEY, a + 1.0, (N,))
    with pytest.raises(AssertionError):
        _tail_checks(wrong, a)
    with pytest.raises(AssertionError):
        _log_gamma_checks(wrong, a)


def test_a_small_shape_correction_with_the_wrong_power_is_rejected():
    # log G(a + 1) + log(U) / (a + 1): a plausible typo, rejected by the tail check.
    a = 1e-3
    rng = np.random.default_rng(0)
    wrong = _sampling.log_gamma(KEY, a + 1.0, (N,)) + np.log(1.0 - rng.random(N)) / (a + 1.0)
    with pytest.raises(AssertionError):
        _tail_checks(wrong, a)


def test_blocks_that_reuse_one_stream_are_rejected():
    same = [_sampling.normal(KEY, (N,)) for _ in range(2)]
    assert abs(_correlation(*same)) > Z / np.sqrt(N)


# ------------------------------------------------------------- large draws, in pieces


@pytest.mark.parametrize("shape", [(N,), (4, 5_000), (2, 3, 4_000)])
@pytest.mark.parametrize("threads", ["1", "2"])
def test_pieces_of_a_large_draw_have_the_law_and_are_independent(monkeypatch, shape, threads):
    """A draw larger than ``_CHUNK`` is made in pieces from streams of their own, on
    threads: every piece has the law (moments, KS), consecutive pieces are uncorrelated,
    and the values do not depend on the number of threads."""
    monkeypatch.setattr(_sampling, "_CHUNK", 1_000)
    monkeypatch.setenv("BAYESNB_NUM_THREADS", threads)
    a = np.broadcast_to(np.array([0.3, 2.5, 1e-3, 7.0]).repeat(shape[-1] // 4), shape[-1:])
    draws = _sampling.log_gamma(KEY, a, shape)
    monkeypatch.setenv("BAYESNB_NUM_THREADS", "3")
    assert np.array_equal(draws, _sampling.log_gamma(KEY, a, shape))
    flat = draws.reshape(-1, shape[-1])
    q = shape[-1] // 4
    for j, aj in enumerate([0.3, 2.5, 1e-3, 7.0]):
        _log_gamma_checks(flat[:, j * q : (j + 1) * q].ravel(), aj)
    pieces = draws.reshape(-1)[: (draws.size // 1_000) * 1_000].reshape(-1, 1_000)
    g = _sampling.gamma(KEY, 2.5, shape).reshape(-1)
    assert_ks(g, st.gamma(2.5).cdf)
    z = _sampling.normal(KEY, shape).reshape(-1)
    assert_mean(z, 0.0, 1.0)
    assert_var(z, 1.0)
    # consecutive pieces of one draw: no correlation beyond chance (a stream reused for
    # every piece would give correlation 1 where the shapes repeat)
    zp = z[: (z.size // 1_000) * 1_000].reshape(-1, 1_000)
    corr = np.array([_correlation(zp[k], zp[k + 1]) for k in range(zp.shape[0] - 1)])
    assert np.all(np.abs(corr) < Z / np.sqrt(1_000)), corr
    assert pieces.shape[0] >= 10


def test_one_piece_is_the_plain_generator():
    """Up to ``_CHUNK`` values the draw is the key's one generator, as before pieces."""
    a = np.array([0.4, 3.0])
    got = _sampling.gamma(KEY, a, (100, 2))
    assert np.array_equal(got, _sampling.generator(KEY).standard_gamma(np.broadcast_to(a, (100, 2))))


@pytest.mark.parametrize("chunk", [1_000, 1 << 30])
def test_draws_do_not_depend_on_how_the_shape_parameter_is_laid_out(monkeypatch, chunk):
    """A scalar, a vector, a column broadcast and a whole-draw broadcast view of the same
    values give the same variates, in pieces or not."""
    monkeypatch.setattr(_sampling, "_CHUNK", chunk)
    shape = (7, 3, 333)
    layouts = [2.5, np.full(333, 2.5), np.full((3, 1), 2.5), np.broadcast_to(2.5, shape)]
    for draw in (_sampling.gamma, _sampling.log_gamma):
        first = draw(KEY, layouts[0], shape)
        for a in layouts[1:]:
            assert np.array_equal(draw(KEY, a, shape), first)


def test_pieces_that_reuse_one_stream_are_rejected(monkeypatch):
    """Planted: every piece drawn from the first piece's stream repeats it, which the
    correlation check of consecutive pieces catches."""
    monkeypatch.setattr(_sampling, "_CHUNK", 1_000)
    real = _sampling.generator
    monkeypatch.setattr(_sampling, "generator", lambda key, stream=_sampling.PARAMETERS: real(key))
    zp = _sampling.normal(KEY, (N,)).reshape(-1, 1_000)
    assert max(abs(_correlation(zp[k], zp[k + 1])) for k in range(zp.shape[0] - 1)) > Z / np.sqrt(1_000)


# ----------------------------------------------------------------------------- families


def _dirichlet_log_checks(log_probs, a, mask=None, ks=True):
    """Log draws of Dir(a) (last axis): E, Var of log theta_k, and a KS of theta_0 ~ Beta
    (``ks=False`` for tiny concentrations, whose theta_0 underflows to ties at 0)."""
    a = np.asarray(a, dtype=np.float64)
    valid = np.ones(a.shape, bool) if mask is None else np.broadcast_to(mask, a.shape)
    total = np.where(valid, a, 0.0).sum(axis=-1, keepdims=True)
    mean = sc.digamma(np.where(valid, a, 1.0)) - sc.digamma(total)
    var = sc.polygamma(1, np.where(valid, a, 1.0)) - sc.polygamma(1, total)
    lp = np.asarray(log_probs)
    assert np.all(np.isneginf(lp[:, ~valid]))
    assert np.all(np.isfinite(lp[:, valid]))
    np.testing.assert_allclose(np.exp(lp).sum(axis=-1), 1.0, rtol=1e-12)
    assert_mean(lp[:, valid], mean[valid], var[valid])
    assert_var(lp[:, valid], var[valid])
    if not ks:
        return
    idx = (0,) * (a.ndim - 1)
    a0 = a[idx + (0,)]
    assert_ks(np.exp(lp[(slice(None),) + idx + (0,)]), st.beta(a0, total[idx + (0,)] - a0).cdf)


def _host_draws(family, post, n=N_FAMILY):
    draws = family.sample(KEY, post, n)
    for leaf in jax.tree_util.tree_leaves(draws):
        assert isinstance(leaf, np.ndarray) and leaf.dtype == np.float64 and leaf.shape[0] == n
    return draws


@pytest.mark.parametrize("name", ["multinomial", "polya"])
def test_dirichlet_families(name):
    family, stats, prior, _, _ = _setup(name)
    post = family.posterior(prior, stats)
    _dirichlet_log_checks(_host_draws(family, post).log_probs, post.concentration)


def test_bernoulli():
    family, stats, prior, _, _ = _setup("bernoulli")
    post = family.posterior(prior, stats)
    _dirichlet_log_checks(_host_draws(family, post).log_probs, bernoulli._concentration(post))


def test_categorical():
    family, stats, prior, _, _ = _setup("categorical")
    post = family.posterior(prior, stats)
    draws = _host_draws(family, post)
    _dirichlet_log_checks(draws.log_probs, post.concentration, post.mask)
    # The other leaf is a constant of the posterior, broadcast over draws.
    other = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(draws)[1:]]
    for leaf in other:
        assert np.all(leaf == leaf[:1])


@pytest.mark.parametrize("name", ["poisson", "exponential"])
def test_gamma_families(name):
    family, stats, prior, _, _ = _setup(name)
    post = family.posterior(prior, stats)
    log_rate = _host_draws(family, post).log_rate
    a = np.asarray(post.concentration, dtype=np.float64)
    b = np.broadcast_to(np.asarray(post.rate, dtype=np.float64), a.shape)
    assert_mean(log_rate, sc.digamma(a) - np.log(b), sc.polygamma(1, a))
    assert_var(log_rate, sc.polygamma(1, a))
    assert_ks(np.exp(log_rate[:, 0, 0]), st.gamma(a[0, 0], scale=1.0 / b[0, 0]).cdf)


def test_gaussian():
    family, stats, prior, _, _ = _setup("gaussian")
    post = family.posterior(prior, stats)
    draws = _host_draws(family, post)
    a, b, k, m = (
        np.broadcast_to(np.asarray(f, dtype=np.float64), np.shape(post.concentration))
        for f in (post.concentration, post.rate, post.kappa, post.loc)
    )
    assert np.all(a > 1.0)  # the marginal of the mean has a variance
    log_var = np.log(draws.var)
    assert_mean(log_var, np.log(b) - sc.digamma(a), sc.polygamma(1, a))
    assert_var(log_var, sc.polygamma(1, a))
    assert_mean(draws.loc, m, b / ((a - 1.0) * k))
    assert_ks(draws.var[:, 0, 0], st.invgamma(a[0, 0], scale=b[0, 0]).cdf)
    # The mean given the variance: standardised, a standard normal.
    assert_ks((draws.loc[:, 0, 0] - m[0, 0]) * np.sqrt(k[0, 0] / draws.var[:, 0, 0]), st.norm.cdf)


def test_gaussian_mv():
    from bayesnb.core.families import gaussian_mv

    family, stats, prior, _, _ = _setup("gaussian_mv")
    post = family.posterior(prior, stats)
    draws = _host_draws(family, post)
    loc = np.asarray(post.loc, dtype=np.float64)
    scale = np.asarray(post.scale, dtype=np.float64)
    F = loc.shape[-1]
    df = np.broadcast_to(np.asarray(post.df, dtype=np.float64), scale.shape[:-2])
    cov = gaussian_mv.covariance(draws)
    # Inverse-Wishart mean: Psi / (nu - F - 1).
    assert np.all(df > F + 3)  # the entries of Sigma have a variance
    assert_mean(cov, scale / (df[..., None, None] - F - 1))
    assert_mean(draws.loc, loc)
    # A diagonal entry of an inverse Wishart is inverse gamma ((nu - F + 1) / 2, Psi_jj / 2).
    idx = (0,) * (cov.ndim - 3)
    assert_ks(
        cov[(slice(None),) + idx + (0, 0)],
        st.invgamma((df[idx] - F + 1) / 2.0, scale=scale[idx + (0, 0)] / 2.0).cdf,
    )


def test_tiny_dirichlet_concentrations_through_a_family():
    family = families.get("multinomial")
    _, stats, prior, _, _ = _setup("multinomial")
    post = family.posterior(prior, stats)
    tiny = type(post)(np.array([[1e-3, 1e-3, 2.0], [1e-3, 0.5, 1e-3]]))
    draws = _host_draws(family, tiny, N)
    lp = np.asarray(draws.log_probs)
    assert np.all(np.isfinite(lp))
    _dirichlet_log_checks(lp, tiny.concentration, ks=False)
    # P(theta_0 < 1e-100) under Beta(1e-3, 1e-3 + 2): most of the mass.
    a0, rest = 1e-3, 1e-3 + 2.0
    assert_probability(lp[:, 0, 0] < np.log(1e-100), st.beta(a0, rest).cdf(1e-100))


def test_a_dirichlet_with_a_shifted_concentration_is_rejected():
    family, stats, prior, _, _ = _setup("multinomial")
    post = family.posterior(prior, stats)
    a = np.asarray(post.concentration)
    wrong = family.sample(KEY, type(post)(a * np.array([1.1, 1.0, 1.0])), N_FAMILY).log_probs
    with pytest.raises(AssertionError):
        _dirichlet_log_checks(wrong, a)


def test_in_blocks_draws_are_the_blocks_of_fold_in_keys_and_independent():
    family, stats, prior, _, _ = _setup("multinomial")
    post = family.posterior(prior, stats)
    n = 2_000
    draws = _fitted.in_blocks(lambda k, m: family.sample(k, post, m), KEY, n, 1).log_probs
    np.testing.assert_array_equal(draws[3], family.sample(_fitted.block_key(KEY, 3), post, 1).log_probs[0])
    _dirichlet_log_checks(draws, post.concentration)
    # Consecutive blocks are independent: no lag-one correlation of a coordinate.
    x = draws[:, 0, 0]
    assert abs(_correlation(x[:-1], x[1:])) <= Z / np.sqrt(n)
    # Same key, same draws through the blocks.
    again = _fitted.in_blocks(lambda k, m: family.sample(k, post, m), KEY, n, 1).log_probs
    np.testing.assert_array_equal(draws, again)


def test_class_proportions_on_the_host():
    from bayesnb.core import class_prior

    dist = class_prior.posterior(class_prior_prior(), np.array([3.0, 0.0, 12.0]))
    draws = class_prior.sample_log(KEY, dist, N_FAMILY)
    assert isinstance(draws, np.ndarray) and draws.shape == (N_FAMILY, 3)
    _dirichlet_log_checks(draws, dist.concentration)


def class_prior_prior():
    from bayesnb.core.priors import Dirichlet

    return Dirichlet(np.array([1.0, 0.5, 1.0]))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("masked", [False, True])
def test_dirichlet_at_concentrations_from_one_up_is_normalised_by_the_plain_sum(masked, seed):
    """Concentrations >= 1 (no variate can underflow) take log G - log sum G: the same
    Gamma variates as the log-space path (so the same draws to rounding, key for key),
    with the Dirichlet's log moments and Beta marginal; masked coordinates stay -inf.
    Planted: another key's draws, and a Dirichlet with a shifted concentration, are told
    apart. Three keys."""
    key = jax.random.fold_in(KEY, 100 + seed)
    rng = np.random.default_rng(4)
    a = np.concatenate([[1.0], rng.uniform(1.0, 30.0, 5)])  # exactly 1 (Exp(1)) included
    a = np.stack([a, a[::-1] + 0.5])
    mask = None
    if masked:
        mask = np.ones(a.shape, bool)
        mask[:, 3] = False
    fast = _dirichlet.sample_log(key, a, N_FAMILY, mask)
    g = _sampling.log_gamma(key, np.where(mask, a, 1.0) if masked else a, (N_FAMILY,) + a.shape)
    if masked:
        g = np.where(mask, g, -np.inf)
    slow = _sampling.log_normalize(g)
    assert np.array_equal(np.isneginf(fast), np.isneginf(slow))
    finite = np.isfinite(slow)
    np.testing.assert_allclose(fast[finite], slow[finite], rtol=1e-13, atol=1e-13)
    _dirichlet_log_checks(fast, a, mask)
    other = _dirichlet.sample_log(jax.random.fold_in(key, 1), a, N_FAMILY, mask)
    assert not np.allclose(other[finite], slow[finite], atol=1e-6)
    with pytest.raises(AssertionError):
        _dirichlet_log_checks(fast, a + np.where(np.arange(a.shape[-1]) == 1, 1.0, 0.0), mask)
