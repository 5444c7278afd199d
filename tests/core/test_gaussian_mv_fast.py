"""The host (NumPy/BLAS) path of the multivariate Gaussian family's densities (issue 14).

Concrete inputs to ``gaussian_mv.log_likelihood`` / ``log_predictive`` are scored without
JAX: cached inverse Cholesky factors, the quadratic expansion for one shared covariance
(with the cancellation check that sends untrustworthy rows to the direct form), one
whitening per class for per-class covariances, blocks of rows on threads. Checked here:

* against ``scipy.stats.multivariate_normal`` / ``multivariate_t`` to 1e-10, shared and
  full, several seeds, rows far from every class;
* against the traced JAX path (``jax.jit``, which keeps the compiled kernel) on
  ill-conditioned covariances and many features;
* the cancellation fallback: with the check disabled the expansion alone is wrong on the
  rows it guards (a planted error), with it the rows are exact;
* block and thread boundaries; overflowing rows of the Student-t; missing values;
* a first prediction compiles nothing;
* the class contrast (``log_likelihood_contrast``, what ``predict_proba`` scores): its
  differences across classes are the exact log-odds (rational arithmetic on the same
  factor), with a large common offset of the data and with two nearby classes far from
  the centre; planted: without the centring, or without the trust check, they are not.
"""

from __future__ import annotations

from fractions import Fraction

import jax
import numpy as np
import pytest
from scipy import stats

from _compiles import count_compiles
from bayesnb.core import kernels
from bayesnb.core._x64 import enable_x64
from bayesnb.core.families import gaussian_mv as g
from bayesnb.core.priors import NormalInverseWishart


def _spd(rng, F, cond=None):
    q, _ = np.linalg.qr(rng.normal(size=(F, F)))
    eig = rng.uniform(0.3, 3.0, F) if cond is None else np.geomspace(1.0, 1.0 / cond, F)
    return (q * eig) @ q.T


def _problem(seed, C=4, F=6, n=700, cond=None, spread=3.0):
    rng = np.random.default_rng(seed)
    loc = rng.normal(size=(C, F)) * spread
    covs = np.stack([_spd(rng, F, cond) for _ in range(C)])
    X = loc[rng.integers(0, C, n)] + rng.normal(size=(n, F)) * 1.5
    return rng, loc, covs, X


def _params(loc, covs, shared):
    cov = covs[0] if shared else covs
    return g.GaussianParams(loc, np.linalg.cholesky(cov)), cov


def _posterior(rng, loc, covs, shared):
    C, F = loc.shape
    kappa = rng.uniform(0.5, 20.0, C)
    df = np.asarray(F + 2.5) if shared else rng.uniform(F + 0.5, F + 30.0, C)
    return NormalInverseWishart(loc, kappa, df, covs[0] * 4.0 if shared else covs * 4.0)


def _scipy_ll(loc, cov, X):
    C = loc.shape[0]
    return np.stack([stats.multivariate_normal(loc[c], cov if cov.ndim == 2 else cov[c]).logpdf(X) for c in range(C)], axis=1)


def _scipy_lp(post, X):
    C, F = post.loc.shape
    df = np.broadcast_to(post.df, (C,))
    out = []
    for c in range(C):
        psi = post.scale if post.scale.ndim == 2 else post.scale[c]
        d = df[c] - F + 1
        shape = psi * (post.kappa[c] + 1) / (post.kappa[c] * d)
        out.append(stats.multivariate_t(post.loc[c], shape, df=d).logpdf(X))
    return np.stack(out, axis=1)


def _close(a, b, rtol=1e-10):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    err = np.abs(a - b) / np.maximum(1.0, np.abs(b))
    assert np.all(np.isfinite(a) == np.isfinite(b))
    assert err[np.isfinite(b)].max(initial=0.0) <= rtol, err.max()


def _traced(fn, *args):
    with enable_x64():
        return np.asarray(jax.jit(fn)(*args))


@pytest.mark.parametrize("shared", [True, False], ids=["shared", "full"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_host_densities_match_scipy(seed, shared):
    rng, loc, covs, X = _problem(seed)
    X[:3] = 1e6 * rng.normal(size=(3, X.shape[1]))  # far from every class
    X[3] = loc[1]  # at a mean
    params, cov = _params(loc, covs, shared)
    _close(g.log_likelihood(params, X), _scipy_ll(loc, cov, X))
    post = _posterior(rng, loc, covs, shared)
    _close(g.log_predictive(post, X), _scipy_lp(post, X))


@pytest.mark.parametrize("shared", [True, False], ids=["shared", "full"])
@pytest.mark.parametrize("cond, F", [(1e8, 8), (1e3, 60)], ids=["ill-conditioned", "many-features"])
def test_host_densities_match_the_traced_path(shared, cond, F):
    rng, loc, covs, X = _problem(3, C=3, F=F, n=300, cond=cond)
    X[:2] = 1e6
    params, _ = _params(loc, covs, shared)
    _close(g.log_likelihood(params, X), _traced(g.log_likelihood, params, X), rtol=1e-9)
    post = _posterior(rng, loc, covs, shared)
    _close(g.log_predictive(post, X), _traced(g.log_predictive, post, X), rtol=1e-9)


def _far_classes(seed=4, F=5):
    """Class means 1e7 apart with unit covariance, rows near the classes: the expansion's
    terms (~1e14) dwarf the norms to the nearest class (~F)."""
    rng = np.random.default_rng(seed)
    loc = np.array([[1e7] * F, [-1e7] * F, [0.0] * F]) + rng.normal(size=(3, F))
    cov = np.eye(F) + 0.1 * np.ones((F, F))
    X = np.concatenate([loc[i] + rng.normal(size=(50, F)) for i in range(3)])
    return loc, cov, X


def test_the_cancellation_fallback_recomputes_the_rows_the_expansion_gets_wrong(monkeypatch):
    loc, cov, X = _far_classes()
    params = g.GaussianParams(loc, np.linalg.cholesky(cov))
    exact = _scipy_ll(loc, cov, X)
    _close(g.log_likelihood(params, X), exact)
    post = NormalInverseWishart(loc, np.full(3, 5.0), np.asarray(30.0), cov * 25.0)
    _close(g.log_predictive(post, X), _scipy_lp(post, X))
    # Planted: trusting the expansion everywhere is visibly wrong on these rows, so the
    # agreement above comes from the fallback.
    monkeypatch.setattr(g, "_CANCELLATION_LIMIT", np.inf)
    g._HOST._entries.clear()
    err = np.abs(g.log_likelihood(params, X) - exact) / np.maximum(1.0, np.abs(exact))
    assert err.max() > 1e-6


def test_rows_far_from_the_centre_are_trusted_and_exact():
    # Far from every class *and* from the centre: no cancellation, the expansion stands.
    loc, cov, _ = _far_classes()
    X = np.full((4, loc.shape[1]), 1e9) * np.array([[1], [-1], [2], [-3]])
    params = g.GaussianParams(loc, np.linalg.cholesky(cov))
    _close(g.log_likelihood(params, X), _scipy_ll(loc, cov, X))


@pytest.mark.parametrize("shared", [True, False], ids=["shared", "full"])
def test_blocks_and_threads_do_not_change_the_result(monkeypatch, shared):
    rng, loc, covs, X = _problem(5, C=3, F=7, n=1001)
    params, cov = _params(loc, covs, shared)
    post = _posterior(rng, loc, covs, shared)
    whole = g.log_likelihood(params, X), g.log_predictive(post, X)
    # Blocks of 16 rows (1001 is no multiple) and BLAS pieces of a few rows, on 2 threads.
    monkeypatch.setattr(g, "_HOST_BLOCK_ENTRIES", 16 * 7)
    monkeypatch.setattr(kernels, "GEMM_MULADDS", 5 * 7 * 7)
    monkeypatch.setattr(kernels, "_GEMM_MIN_ROWS", 1)
    monkeypatch.setattr(g, "_HOST_MIN_BLOCK", 1)
    monkeypatch.setattr(kernels, "_PARALLEL_MIN_ROWS", 100)
    monkeypatch.setenv("BAYESNB_NUM_THREADS", "2")
    assert len(kernels.row_ranges(X.shape[0], 16)) == 2
    _close(g.log_likelihood(params, X), whole[0], rtol=1e-13)
    _close(g.log_predictive(post, X), whole[1], rtol=1e-13)
    _close(whole[0], _scipy_ll(loc, cov, X))


@pytest.mark.parametrize("shared", [True, False], ids=["shared", "full"])
def test_student_t_of_overflowing_rows_is_finite_and_matches_the_traced_path(shared):
    rng, loc, covs, X = _problem(6, C=3, F=4, n=20)
    X[:3] = 1e200 * np.sign(rng.normal(size=(3, 4)))
    post = _posterior(rng, loc, covs, shared)
    host = g.log_predictive(post, X)
    assert np.all(np.isfinite(host))
    _close(host, _traced(g.log_predictive, post, X), rtol=1e-12)
    _close(host[3:], _scipy_lp(post, X[3:]))


@pytest.mark.parametrize("shared", [True, False], ids=["shared", "full"])
def test_missing_values_marginalise_on_the_host_path(shared):
    rng, loc, covs, X = _problem(7, C=3, F=5, n=60)
    mask = rng.random(X.shape) < 0.3
    params, cov = _params(loc, covs, shared)
    post = _posterior(rng, loc, covs, shared)
    ll = g.family.log_likelihood(params, np.where(mask, 0.0, X), None, mask=mask)
    lp = g.family.log_predictive(post, np.where(mask, 0.0, X), mask=mask)
    covs_c = np.broadcast_to(cov, (3, 5, 5))
    scale_c = np.broadcast_to(post.scale, (3, 5, 5))
    df = np.broadcast_to(post.df, (3,))
    for i in range(X.shape[0]):
        o = np.flatnonzero(~mask[i])
        for c in range(3):
            if o.size == 0:
                assert ll[i, c] == 0.0 and lp[i, c] == 0.0
                continue
            ref = stats.multivariate_normal(loc[c, o], covs_c[c][np.ix_(o, o)]).logpdf(X[i, o])
            assert abs(ll[i, c] - ref) <= 1e-10 * max(1.0, abs(ref))
            d = df[c] - 5 + 1  # the marginal keeps the t's degrees of freedom
            shape = scale_c[c][np.ix_(o, o)] * (post.kappa[c] + 1) / (post.kappa[c] * d)
            ref = stats.multivariate_t(loc[c, o], shape, df=d).logpdf(X[i, o])
            assert abs(lp[i, c] - ref) <= 1e-10 * max(1.0, abs(ref))


@pytest.mark.parametrize("covariance", ["shared", "full"])
def test_a_first_prediction_compiles_nothing(covariance):
    from bayesnb import GaussianBayesClassifier

    # Shapes (13 features, 7 classes) that no other test uses, so that a JAX path
    # would have to compile here.
    rng = np.random.default_rng(8)
    X = rng.normal(size=(400, 13)) + np.repeat(np.arange(7), 58)[:400, None] * 0.5
    y = np.repeat(np.arange(7), 58)[:400]
    # The counter sees compilations (else this test could not fail).
    assert count_compiles(lambda: jax.jit(lambda v: v * 5.0 - 2.0)(np.arange(11.0))) >= 1

    def first():
        for estimate in ("predictive", "mle", "map", "mean"):
            clf = GaussianBayesClassifier(covariance=covariance, estimate=estimate).fit(X, y)
            clf.predict_proba(X)
            clf.predict_proba(X[:5])

    assert count_compiles(first) == 0


def test_the_traced_path_keeps_the_compiled_kernel():
    # Under jax.jit the densities still trace (and are differentiable in the data).
    rng, loc, covs, X = _problem(9, C=2, F=3, n=10)
    params, _ = _params(loc, covs, True)
    with enable_x64():
        grad = jax.grad(lambda x: g.log_likelihood(params, x).sum())(X)
    cov = covs[0]
    expected = -np.linalg.solve(cov, (X[:, None, :] - loc[None]).transpose(0, 2, 1)).sum(axis=-1)
    np.testing.assert_allclose(np.asarray(grad), expected, rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------------------------- class contrast


def _exact_log_odds(loc, tril, X):
    r""":math:`\log p(x \mid c) - \log p(x \mid 0)` under the one covariance :math:`LL^\top`,
    in exact rational arithmetic on the given floats: :math:`x^\top(a_c - a_0) - \tfrac12
    (\mu_c^\top a_c - \mu_0^\top a_0)` with :math:`\Sigma a_c = \mu_c` solved by
    elimination over fractions (the log determinants cancel)."""
    F = loc.shape[1]
    L = [[Fraction(float(v)) for v in row] for row in tril]
    cov = [[sum(L[i][k] * L[j][k] for k in range(F)) for j in range(F)] for i in range(F)]
    mus = [[Fraction(float(v)) for v in row] for row in loc]
    # Gauss-Jordan on [cov | mu_0 ... mu_C-1].
    aug = [cov[i] + [mu[i] for mu in mus] for i in range(F)]
    for col in range(F):
        piv = next(r for r in range(col, F) if aug[r][col] != 0)
        aug[col], aug[piv] = aug[piv], aug[col]
        p = aug[col][col]
        aug[col] = [v / p for v in aug[col]]
        for r in range(F):
            if r != col and aug[r][col] != 0:
                f = aug[r][col]
                aug[r] = [u - f * v for u, v in zip(aug[r], aug[col])]
    a = [[aug[i][F + c] for i in range(F)] for c in range(len(mus))]
    quad = [sum(m * v for m, v in zip(mus[c], a[c])) for c in range(len(mus))]
    out = np.empty((X.shape[0], len(mus)))
    for n, row in enumerate(X):
        x = [Fraction(float(v)) for v in row]
        lin = [sum(u * v for u, v in zip(x, a[c])) for c in range(len(mus))]
        for c in range(len(mus)):
            out[n, c] = float((lin[c] - lin[0]) - (quad[c] - quad[0]) / 2)
    return out


def _odds(scores):
    return scores - scores[:, :1]


def _odds_err(scores, exact, scale):
    r"""Largest error of the log-odds, relative to the size of what they are computed
    from: :math:`\max(1, |\log p(x \mid c)| + |\log p(x \mid 0)|)` (for rows far from every
    class the densities, ~1e12 here, and not their difference, set what double precision
    can resolve)."""
    size = np.maximum(1.0, np.abs(scale) + np.abs(scale[:, :1]))
    return np.max(np.abs(_odds(scores) - exact) / size)


def _contrast_cases():
    rng = np.random.default_rng(11)
    F = 5
    cov = _spd(rng, F)
    out = {}
    loc = rng.normal(size=(3, F)) * 2.0
    X = loc[rng.integers(0, 3, 40)] + rng.normal(size=(40, F))
    X[:4] = 1e6 * rng.normal(size=(4, F))  # far from every class
    out["plain"] = (loc, cov, X)
    # A common offset of 1e7: LDA's uncentred X @ coef_ rounds the log-odds away.
    out["offset"] = (loc + 1e7, cov, X[4:] + 1e7)
    # Two classes one apart, a third 1e7 away: rows near the first two are far from the
    # centre, where the affine form loses their difference; the trust check sends
    # them to the log density.
    near = np.array([np.zeros(F), np.full(F, 0.5), np.full(F, 1e7)])
    Xn = near[rng.integers(0, 2, 30)] + rng.normal(size=(30, F))
    out["far-third"] = (near, cov, Xn)
    return out


def _scaled_case():
    # Features on scales from 1e-3 to 1e3 (covariance condition number ~1e12, as raw
    # measurements in different units): nothing is far from the centre here, and the
    # trust bound, which does not grow with the condition number, keeps every row.
    rng = np.random.default_rng(14)
    F = 5
    scale = np.geomspace(1e-3, 1e3, F)
    cov = _spd(rng, F) * np.outer(scale, scale)
    loc = rng.normal(size=(3, F)) * scale
    X = loc[rng.integers(0, 3, 60)] + rng.multivariate_normal(np.zeros(F), cov, 60)
    return loc, cov, X


@pytest.mark.parametrize("case", ["plain", "offset", "far-third", "scaled"])
def test_the_contrast_differences_are_the_exact_log_odds(case):
    loc, cov, X = _scaled_case() if case == "scaled" else _contrast_cases()[case]
    params = g.GaussianParams(loc, np.linalg.cholesky(cov))
    exact = _exact_log_odds(loc, params.scale_tril, X)
    density = g.log_likelihood(params, X)
    contrast = g.log_likelihood_contrast(params, X)
    assert contrast.shape == (X.shape[0], loc.shape[0])
    assert _odds_err(contrast, exact, density) <= 1e-12
    # The density path, for comparison, meets the same bound.
    assert _odds_err(density, exact, density) <= 1e-12


def test_the_contrast_check_catches_an_uncentred_form_and_a_missing_trust_check(monkeypatch):
    cases = _contrast_cases()
    # Planted 1: LDA's uncentred affine form, on the offset data.
    loc, cov, X = cases["offset"]
    tril = np.linalg.cholesky(cov)
    coef = np.linalg.solve(cov, loc.T)
    uncentred = X @ coef - 0.5 * np.einsum("fc,cf->c", coef, loc)
    density = g.log_likelihood(g.GaussianParams(loc, tril), X)
    assert _odds_err(uncentred, _exact_log_odds(loc, tril, X), density) > 1e-6
    # Planted 2: trusting the affine form everywhere, on the far-third data.
    loc, cov, X = cases["far-third"]
    params = g.GaussianParams(loc, np.linalg.cholesky(cov))
    density = g.log_likelihood(params, X)
    monkeypatch.setattr(g, "_CANCELLATION_LIMIT", np.inf)
    g._HOST._entries.clear()
    assert _odds_err(g.log_likelihood_contrast(params, X), _exact_log_odds(loc, params.scale_tril, X), density) > 1e-6


def test_badly_scaled_features_stay_on_the_affine_form(monkeypatch):
    loc, cov, X = _scaled_case()
    params = g.GaussianParams(loc, np.linalg.cholesky(cov))
    g._HOST._entries.clear()

    def no_fallback(*args):
        raise AssertionError("a row was rescored by the density")

    monkeypatch.setattr(g, "_shared_block", no_fallback)
    g.log_likelihood_contrast(params, X)


def test_the_contrast_is_the_density_where_nothing_is_common_to_the_classes():
    rng, loc, covs, X = _problem(12, C=3, F=4, n=50)
    full, _ = _params(loc, covs, False)
    np.testing.assert_array_equal(g.log_likelihood_contrast(full, X), g.log_likelihood(full, X))
    shared, _ = _params(loc, covs, True)
    mask = rng.random(X.shape) < 0.3
    np.testing.assert_array_equal(
        g.family.log_likelihood_contrast(shared, X, None, mask=mask), g.family.log_likelihood(shared, X, None, mask=mask)
    )
    _close(_traced(g.log_likelihood_contrast, shared, X), _traced(g.log_likelihood, shared, X), rtol=1e-13)


def test_contrast_blocks_and_threads_do_not_change_the_result(monkeypatch):
    rng, loc, covs, X = _problem(13, C=3, F=7, n=1001)
    X[::50] *= 1e8  # some rows beyond the trust bound, in several blocks
    params, _ = _params(loc, covs, True)
    whole = g.log_likelihood_contrast(params, X)
    monkeypatch.setattr(g, "_CONTRAST_BLOCK_ENTRIES", 16 * 7)
    monkeypatch.setattr(g, "_HOST_BLOCK_ENTRIES", 16 * 7)
    monkeypatch.setattr(kernels, "_PARALLEL_MIN_ROWS", 100)
    monkeypatch.setenv("BAYESNB_NUM_THREADS", "2")
    assert len(kernels.row_ranges(X.shape[0], 16)) == 2
    _close(g.log_likelihood_contrast(params, X), whole, rtol=1e-13)
