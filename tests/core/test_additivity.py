"""Sufficient statistics are additive: every way of feeding the same rows gives one posterior.

``fit`` ≡ chained ``partial_fit`` ≡ ``bayesnb.core.stats.merge`` of per-shard statistics;
a row with integer weight ``k`` ≡ ``k`` copies of it (weight 0 ≡ the row dropped);
dense ≡ CSR; the order of the rows does not matter. Compared on the statistics, the
posterior parameters, ``predict_proba`` and ``log_evidence`` to 1e-12.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from bayesnb import BernoulliNB, CategoricalNB, MultinomialNB
from bayesnb.core import class_prior as class_prior_mod
from bayesnb.core.families import bernoulli, categorical, multinomial
from bayesnb.core.stats import CategoricalStats, CountStats, categorical_stats, count_stats, merge

FAMILIES = ["multinomial", "bernoulli", "categorical"]
N_TEST = 6
TOL = dict(rtol=1e-12, atol=1e-12)


def _make(family, alpha=1.0, **kw):
    if family == "multinomial":
        return MultinomialNB(alpha=alpha, **kw)
    if family == "bernoulli":
        return BernoulliNB(alpha=alpha, binarize=None, **kw)
    return CategoricalNB(alpha=alpha, **kw)


def _rows(family, rng, n, n_features, k_max):
    if family == "multinomial":
        X = rng.poisson(1.5, size=(n, n_features)).astype(float)
        # Past the predictive's integer table, and fractional. (Fixed positions: every new
        # number of such entries costs bayesnb a JAX recompilation at predict time.)
        X[0, 0], X[-1, -1] = 40.0, 2.5
        return X
    if family == "bernoulli":
        return (rng.random((n, n_features)) < 0.4).astype(float)
    return rng.integers(0, k_max, size=(n, n_features))


def _data(family, seed, n, n_features, n_classes, k_max=3):
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.concatenate([np.arange(n_classes), rng.integers(0, n_classes, n - n_classes)]))
    X = _rows(family, rng, n, n_features, k_max)
    # Test rows may hold a categorical code never seen in training (k_max is new).
    Xt = _rows(family, rng, N_TEST, n_features, k_max + 1)
    return X, y, Xt, rng


def _weights(kind, rng, n):
    if kind == "none":
        return None
    if kind == "int":
        return rng.integers(1, 4, size=n).astype(float)
    return rng.uniform(0.1, 3.0, size=n)


def _assert_same_fit(a, b, Xt, tol=TOL):
    """Two fitted estimators hold the same posterior and predict alike."""
    np.testing.assert_array_equal(a.classes_, b.classes_)
    for fa, fb in zip(a.stats_, b.stats_):
        np.testing.assert_allclose(fa, fb, **tol)
    for fa, fb in zip(a.posterior_, b.posterior_):
        np.testing.assert_allclose(np.asarray(fa), np.asarray(fb), **tol)
    np.testing.assert_allclose(a.predict_proba(Xt), b.predict_proba(Xt), **tol)
    np.testing.assert_allclose(a.predict_joint_log_proba(Xt), b.predict_joint_log_proba(Xt), rtol=1e-12)
    assert a.log_evidence() == pytest.approx(b.log_evidence(), rel=1e-12)


def _shard_stats(family, X, y, n_classes, w):
    if family == "categorical":
        # Each shard knows only its own categories; merge pads them to the largest.
        return categorical_stats(X, y, n_classes, X.max(axis=0) + 1, w)
    return count_stats(X, y, n_classes, w)


def _proba_from_stats(family, clf, stats, Xt):
    """Class posterior computed from statistics through the pure core, not the estimator."""
    mod = {"multinomial": multinomial, "bernoulli": bernoulli, "categorical": categorical}[family]
    post = mod.posterior(clf.prior_, stats)
    joint = mod.log_predictive(post, Xt) + class_prior_mod.point_log(clf.class_dirichlet_, stats.class_count, "predictive")
    return np.exp(joint - logsumexp(joint, axis=1, keepdims=True)), post


@pytest.mark.parametrize("family", FAMILIES)
@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(4, 30),
    n_features=st.sampled_from([1, 4]),
    n_classes=st.sampled_from([2, 3]),
    n_chunks=st.integers(1, 4),
    weights=st.sampled_from(["none", "int", "float"]),
    alpha=st.floats(0.05, 5.0),
)
def test_fit_equals_partial_fit_equals_merge_of_shards(family, seed, n, n_features, n_classes, n_chunks, weights, alpha):
    X, y, Xt, rng = _data(family, seed, n, n_features, n_classes)
    w = _weights(weights, rng, n)
    cuts = np.sort(rng.choice(np.arange(1, n), size=min(n_chunks - 1, n - 1), replace=False))
    chunks = np.split(np.arange(n), cuts)
    classes = np.arange(n_classes)

    full = _make(family, alpha).fit(X, y, sample_weight=w)
    chained = _make(family, alpha)
    for idx in chunks:
        chained.partial_fit(X[idx], y[idx], classes=classes, sample_weight=None if w is None else w[idx])
    _assert_same_fit(full, chained, Xt)

    # Shard statistics reduced with merge, then the pure core: same posterior and proba.
    shards = [_shard_stats(family, X[idx], y[idx], n_classes, None if w is None else w[idx]) for idx in chunks]
    merged = merge(*shards)
    assert type(merged) is type(full.stats_)
    for fm, ff in zip(merged, full.stats_):
        np.testing.assert_allclose(fm, ff, **TOL)
    proba, post = _proba_from_stats(family, full, merged, Xt)
    for fm, ff in zip(post, full.posterior_):
        np.testing.assert_allclose(np.asarray(fm), np.asarray(ff), **TOL)
    np.testing.assert_allclose(proba, full.predict_proba(Xt), **TOL)

    # Row order is irrelevant.
    perm = rng.permutation(n)
    permuted = _make(family, alpha).fit(X[perm], y[perm], sample_weight=None if w is None else w[perm])
    _assert_same_fit(full, permuted, Xt)
    # And predicting permuted rows permutes the output rows.
    tperm = rng.permutation(N_TEST)
    np.testing.assert_allclose(full.predict_proba(Xt[tperm]), full.predict_proba(Xt)[tperm], **TOL)


@pytest.mark.parametrize("family", FAMILIES)
@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(3, 20),
    n_classes=st.sampled_from([2, 3]),
    alpha=st.floats(0.05, 5.0),
)
def test_integer_weights_equal_repetition(family, seed, n, n_classes, alpha):
    X, y, Xt, rng = _data(family, seed, n, 4, n_classes)
    w = rng.integers(0, 4, size=n)  # weight 0 drops the row
    first = [np.flatnonzero(y == c)[0] for c in range(n_classes)]
    w[first] = np.maximum(w[first], 1)  # keep every class
    # A zero-weight row still declares its category codes (see the test below), so the
    # category sets are pinned here.
    kw = dict(min_categories=3) if family == "categorical" else {}
    weighted = _make(family, alpha, **kw).fit(X, y, sample_weight=w.astype(float))
    repeated = _make(family, alpha, **kw).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    _assert_same_fit(weighted, repeated, Xt)


@pytest.mark.parametrize("family", FAMILIES)
def test_duplicated_rows_equal_weight_two_and_zero_weight_drops_a_row(family):
    X, y, Xt, _ = _data(family, 99, 12, 4, 3)
    dup = _make(family).fit(np.vstack([X, X[[5]]]), np.append(y, y[5]))
    w = np.ones(12)
    w[5] = 2.0
    _assert_same_fit(dup, _make(family).fit(X, y, sample_weight=w), Xt)
    # A zero weight removes the row (row 5 has a class shared with another row).
    keep = np.ones(12, bool)
    drop = int(np.flatnonzero([np.sum(y == y[i]) > 1 for i in range(12)])[0])
    keep[drop] = False
    w = np.ones(12)
    w[drop] = 0.0
    zero = _make(family, min_categories=X.max(0) + 1) if family == "categorical" else _make(family)
    dropped = _make(family, min_categories=X.max(0) + 1) if family == "categorical" else _make(family)
    _assert_same_fit(zero.fit(X, y, sample_weight=w), dropped.fit(X[keep], y[keep]), Xt)


@pytest.mark.parametrize("family", ["multinomial", "bernoulli"])
@pytest.mark.parametrize("estimate", ["predictive", "mean", "mle"])
def test_dense_equals_csr(family, estimate):
    X, y, Xt, rng = _data(family, 7, 25, 6, 3)
    w = rng.uniform(0.2, 2.0, size=25)
    dense = _make(family, 0.7, estimate=estimate).fit(X, y, sample_weight=w)
    sparse = _make(family, 0.7, estimate=estimate).fit(sp.csr_matrix(X), y, sample_weight=w)
    _assert_same_fit(dense, sparse, Xt)
    # Prediction on CSR input equals prediction on the dense rows.
    with np.errstate(all="raise"):
        np.testing.assert_allclose(dense.predict_proba(sp.csr_matrix(Xt)), dense.predict_proba(Xt), **TOL)
        np.testing.assert_allclose(
            dense.predict_joint_log_proba(sp.csr_matrix(Xt)), dense.predict_joint_log_proba(Xt), rtol=1e-12
        )
    # Explicitly stored zeros in a CSR matrix are zeros.
    r, c = np.nonzero(Xt)
    zr, zc = np.nonzero(Xt == 0)
    k = min(3, zr.size)
    assert k >= 1
    rows, cols = np.append(r, zr[:k]), np.append(c, zc[:k])
    Xs = sp.coo_matrix((np.append(Xt[r, c], np.zeros(k)), (rows, cols)), shape=Xt.shape).tocsr()
    assert Xs.nnz == np.count_nonzero(Xt) + k and np.array_equal(Xs.toarray(), Xt)
    np.testing.assert_allclose(dense.predict_joint_log_proba(Xs), dense.predict_joint_log_proba(Xt), rtol=1e-12)
    # CSR chunks through partial_fit too.
    chained = _make(family, 0.7, estimate=estimate)
    for idx in np.array_split(np.arange(25), 3):
        chained.partial_fit(sp.csr_matrix(X[idx]), y[idx], classes=[0, 1, 2], sample_weight=w[idx])
    _assert_same_fit(dense, chained, Xt)


def test_categorical_later_chunk_introduces_a_new_category():
    rng = np.random.default_rng(3)
    X1 = np.column_stack([rng.integers(0, 2, 10), rng.integers(0, 3, 10)])  # feature 0: codes {0, 1}
    y1 = np.tile([0, 1], 5)
    X2 = np.array([[3, 0], [1, 2], [3, 1], [0, 0]])  # feature 0 jumps to code 3 (2 never seen)
    y2 = np.array([1, 0, 1, 1])
    X, y = np.vstack([X1, X2]), np.concatenate([y1, y2])
    Xt = np.array([[0, 0], [2, 1], [3, 2], [5, 1]])  # codes 2 (known, unobserved), 3, 5 (new)

    chained = CategoricalNB(alpha=0.6).partial_fit(X1, y1, classes=[0, 1])
    np.testing.assert_array_equal(chained.n_categories_, [2, 3])
    before = chained.predict_joint_log_proba(Xt)
    chained.partial_fit(X2, y2)
    full = CategoricalNB(alpha=0.6).fit(X, y)
    np.testing.assert_array_equal(chained.n_categories_, [4, 3])
    np.testing.assert_array_equal(full.n_categories_, [4, 3])
    _assert_same_fit(full, chained, Xt)
    # The new codes moved from the "new category" share to real counts.
    assert not np.allclose(before[2], chained.predict_joint_log_proba(Xt)[2])

    # Shards with different category sets merge (padded) to the same statistics.
    s1 = categorical_stats(X1, y1, 2, np.array([2, 3]))
    s2 = categorical_stats(X2, y2, 2, np.array([4, 3]))
    assert s1.category_count.shape[-1] == 3 and s2.category_count.shape[-1] == 4
    merged = merge(s1, s2)
    np.testing.assert_allclose(merged.category_count, full.stats_.category_count, **TOL)
    np.testing.assert_allclose(merged.class_count, full.stats_.class_count, **TOL)
    proba, _ = _proba_from_stats("categorical", full, merged, Xt)
    np.testing.assert_allclose(proba, full.predict_proba(Xt), **TOL)


def test_merge_refuses_mixed_statistics():
    count = CountStats(np.ones(2), np.ones((2, 3)))
    cat = CategoricalStats(np.ones(2), np.ones((2, 3, 2)))
    with pytest.raises(TypeError, match="cannot merge"):
        merge(count, cat)
