"""The family contract for unobserved entries (``mask=``), over every registered family.

A mask marks the entries of ``X`` that are not observed; the values there are ignored.

* A family that accepts a mask in ``stats`` is feature-wise: fitting with a mask is the
  same as fitting each feature alone on the rows that observe it (posterior, per-feature
  default prior, log evidence summed over features), and the masked
  ``log_likelihood`` / ``log_predictive`` of a row are those of its observed entries
  alone, computed by the family on the sub-matrix of observed columns.
* A family whose rows are not products over features refuses a mask in ``stats`` with a
  ValueError that says so.
* For every family, the masked likelihoods ignore the values under the mask, and a row
  with nothing observed scores log 1 under every class.

Data are generated per ``family.support``, so a family registered later is covered.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from numpy.testing import assert_allclose

from bayesnb.core import families

N, F, C = 60, 4, 3  # F != C: a leaf's feature axis is told apart by its length
RNG = np.random.default_rng(5)
Y = np.r_[np.arange(C), RNG.integers(0, C, N - C)]
W = RNG.uniform(0.4, 2.0, N)


def _draw(support, rng, y):
    shift = y[:, None]
    shape = (y.size, F)
    if support == "counts":
        return rng.poisson(1.0 + shift + np.arange(F), shape).astype(np.int64)
    if support == "binary":
        return (rng.random(shape) < 0.25 + 0.2 * shift).astype(np.int64)
    if support == "codes":
        return rng.integers(0, 3, shape)
    if support == "real":
        return rng.normal(0.8 * shift, 1.0 + 0.3 * shift, shape)
    if support == "positive":
        return rng.gamma(2.0, 1.0 + shift, shape)
    raise AssertionError(f"no data generator for support {support!r}: add one to this test")


def _mask(rng, n):
    mask = rng.random((n, F)) < 0.3
    mask[0] = True  # a row with nothing observed
    mask[1] = False  # and one with everything observed
    mask[2:, 0] = False  # a feature every row observes, next to ones some rows miss
    return mask


def _setup(fam):
    X = _draw(fam.support, np.random.default_rng(1), Y)
    mask = _mask(np.random.default_rng(2), N)
    # Other values of the same support under the mask: the family must ignore them.
    X_other = np.where(mask, _draw(fam.support, np.random.default_rng(3), Y), X)
    return X, X_other, mask


def _cols(tree, cols, n_features=F):
    """The features ``cols`` of a prior / posterior / parameters pytree."""

    def take(a):
        a = np.asarray(a)
        if a.ndim >= 2:
            return a[:, cols]
        if a.ndim == 1 and a.shape[0] == n_features:
            return a[cols]  # a per-feature table (e.g. each feature's number of categories)
        return a

    return type(tree)(*(take(a) for a in tree))


def _leaves_close(got, want, rtol=1e-12, atol=1e-12):
    assert type(got) is type(want)
    for name, g, w in zip(type(want)._fields, got, want):
        assert_allclose(np.asarray(g, dtype=np.float64), np.asarray(w, dtype=np.float64), rtol=rtol, atol=atol, err_msg=name)


def _masked_stats(fam, X, mask):
    """The family's masked statistics, or the ValueError it refuses the mask with."""
    try:
        return fam.stats(X, Y, C, W, mask=mask), None
    except ValueError as err:
        return None, err


@pytest.mark.parametrize("name", families.names())
def test_fitting_with_a_mask_is_fitting_each_feature_on_its_observed_rows(name):
    fam = families.get(name)
    X, X_other, mask = _setup(fam)
    stats, refused = _masked_stats(fam, X_other, mask)
    if refused is not None:
        # Rows that are not products over features: no conjugate update leaves an entry out.
        assert "cannot be fitted on rows with missing" in str(refused), refused
        return
    prior = fam.default_prior(fam.stats(X, Y, C, W))
    post = fam.posterior(prior, stats)
    assert type(post) is fam.prior_type
    default = fam.default_prior(stats)
    evidence = 0.0
    for j in range(F):
        rows = np.flatnonzero(~mask[:, j])
        alone = fam.stats(X[rows][:, [j]], Y[rows], C, W[rows])
        _leaves_close(_cols(post, [j]), fam.posterior(_cols(prior, [j]), alone))
        # The default prior is that of each feature's observed values.
        _leaves_close(_cols(default, [j]), fam.default_prior(alone))
        evidence += fam.log_evidence(_cols(prior, [j]), alone)
    assert_allclose(fam.log_evidence(prior, stats), evidence, rtol=1e-10)
    # The statistics of the masked fit do not depend on the values under the mask.
    _leaves_close(fam.posterior(prior, fam.stats(X, Y, C, W, mask=mask)), post)


@pytest.mark.parametrize("name", families.names())
def test_masked_likelihood_is_that_of_the_observed_entries(name):
    fam = families.get(name)
    X, X_other, mask = _setup(fam)
    stats = fam.stats(X, Y, C, W)
    prior = fam.default_prior(stats)
    post = fam.posterior(prior, stats)
    params = fam.point(prior, stats, "mean")
    ll = fam.log_likelihood(params, X, prior, mask=mask)
    lp = fam.log_predictive(post, X, mask=mask)
    assert ll.shape == lp.shape == (N, C)
    assert np.isfinite(ll).all() and np.isfinite(lp).all()
    # Values under the mask are ignored; a row with nothing observed scores log 1.
    assert_allclose(fam.log_likelihood(params, X_other, prior, mask=mask), ll, rtol=1e-12, atol=1e-12)
    assert_allclose(fam.log_predictive(post, X_other, mask=mask), lp, rtol=1e-12, atol=1e-12)
    assert_allclose(ll[0], 0.0)
    assert_allclose(lp[0], 0.0)
    # A row with everything observed: the unmasked likelihood.
    assert_allclose(ll[1], fam.log_likelihood(params, X[1:2], prior)[0], rtol=1e-12)
    assert_allclose(lp[1], fam.log_predictive(post, X[1:2])[0], rtol=1e-12)
    if _masked_stats(fam, X, mask)[1] is not None:
        return  # not feature-wise: its marginals are checked in tests/core/test_missing.py
    for i in range(1, N):
        cols = np.flatnonzero(~mask[i])
        row = X[i : i + 1][:, cols]
        want_ll = fam.log_likelihood(_cols(params, cols), row, _cols(prior, cols))[0]
        want_lp = fam.log_predictive(_cols(post, cols), row)[0]
        assert_allclose(ll[i], want_ll, rtol=1e-12, atol=1e-12)
        assert_allclose(lp[i], want_lp, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", families.names())
def test_masked_likelihood_under_draws_and_sparse_masks(name):
    # A draw of the parameters (any point of the parameter space, not only the mean)
    # and the mask as a sparse matrix give the same as the dense mask.
    import scipy.sparse as sp

    fam = families.get(name)
    X, _, mask = _setup(fam)
    stats = fam.stats(X, Y, C, W)
    prior = fam.default_prior(stats)
    draw = jax.tree.map(lambda a: np.asarray(a)[0], fam.sample(jax.random.key(0), fam.posterior(prior, stats), 1))
    dense = fam.log_likelihood(draw, X, prior, mask=mask)
    assert_allclose(fam.log_likelihood(draw, X, prior, mask=sp.csr_matrix(mask)), dense, rtol=1e-12, atol=1e-12)
    for i in (1, 2, 3):
        cols = np.flatnonzero(~mask[i])
        if _masked_stats(fam, X, mask)[1] is None:
            want = fam.log_likelihood(_cols(draw, cols), X[i : i + 1][:, cols], _cols(prior, cols))[0]
            assert_allclose(dense[i], want, rtol=1e-12, atol=1e-12)
