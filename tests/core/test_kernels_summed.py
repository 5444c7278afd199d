"""kernels.summed: duplicate entries summed without sorting, the caller's matrix untouched."""

import numpy as np
import pytest
import scipy.sparse as sp

from bayesnb.core.kernels import summed


def _with_duplicates(rng, n=40, f=30, nnz=300, shuffle=True):
    rows = rng.integers(0, n, nnz)
    cols = rng.integers(0, f, nnz)
    vals = rng.integers(1, 5, nnz).astype(float)
    order = np.lexsort((cols, rows))
    rows, cols, vals = rows[order], cols[order], vals[order]
    indptr = np.searchsorted(rows, np.arange(n + 1))
    indices = cols.copy()
    if shuffle:  # unsorted within each row, as a sparse product leaves them
        for r in range(n):
            s, e = indptr[r], indptr[r + 1]
            p = rng.permutation(e - s)
            indices[s:e], vals[s:e] = indices[s:e][p], vals[s:e][p]
    return sp.csr_matrix((vals, indices, indptr), shape=(n, f))


@pytest.mark.parametrize("shuffle", [False, True])
def test_duplicates_are_summed_like_scipy_on_a_copy(shuffle):
    rng = np.random.default_rng(0)
    X = _with_duplicates(rng, shuffle=shuffle)
    before = (X.data.copy(), X.indices.copy(), X.indptr.copy())
    out = summed(X)
    ref = X.copy()
    ref.sum_duplicates()
    assert out is not X
    np.testing.assert_array_equal(out.toarray(), X.toarray())  # toarray sums duplicates
    # Each (row, column) is stored once.
    assert out.nnz == ref.nnz
    out.sort_indices()
    np.testing.assert_array_equal(out.indices, ref.indices)
    np.testing.assert_array_equal(out.data, ref.data)
    for a, b in zip(before, (X.data, X.indices, X.indptr)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("shuffle", [False, True])
def test_no_duplicates_returns_the_same_matrix(shuffle):
    rng = np.random.default_rng(1)
    X = _with_duplicates(rng, shuffle=shuffle)
    X.sum_duplicates()  # canonical, then shuffled rows: unsorted but unique
    if shuffle:
        for r in range(X.shape[0]):
            s, e = X.indptr[r], X.indptr[r + 1]
            p = rng.permutation(e - s)
            X.indices[s:e], X.data[s:e] = X.indices[s:e][p], X.data[s:e][p]
        X.has_sorted_indices = False
    assert summed(X) is X


def test_a_repeat_across_rows_is_not_a_duplicate():
    # The same column at the end of one row and the start of the next (sorted form),
    # and an empty row between: no duplicate.
    X = sp.csr_matrix((np.ones(4), np.array([0, 5, 5, 7]), np.array([0, 2, 2, 4])), shape=(3, 8))
    assert summed(X) is X
    Y = sp.csr_matrix((np.ones(3), np.array([5, 5, 1]), np.array([0, 2, 3])), shape=(2, 8))
    assert summed(Y).nnz == 2


def test_dense_passes_through():
    X = np.arange(6.0).reshape(2, 3)
    assert summed(X) is X
