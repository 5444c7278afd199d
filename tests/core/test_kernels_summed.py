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


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_the_detector_finds_exactly_the_matrices_that_repeat_an_entry(seed, index_dtype):
    from bayesnb.core.kernels import _repeated_entries

    rng = np.random.default_rng(seed)
    n, f = int(rng.integers(1, 30)), int(rng.integers(1, 40))
    X = _with_duplicates(rng, n=n, f=f, nnz=int(rng.integers(0, 2 * n)))
    if seed % 2:  # about half without repeats, shuffled within rows
        X.sum_duplicates()
        for r in range(n):
            s, e = X.indptr[r], X.indptr[r + 1]
            p = rng.permutation(e - s)
            X.indices[s:e], X.data[s:e] = X.indices[s:e][p], X.data[s:e][p]
    X = sp.csr_matrix(
        (X.data, X.indices.astype(index_dtype), X.indptr.astype(index_dtype)), shape=X.shape
    )
    X.has_sorted_indices = False
    ref = X.copy()
    ref.sum_duplicates()  # SciPy's own answer: sorting, then merging
    assert _repeated_entries(X) == (ref.nnz < X.nnz)
    out = summed(X)
    np.testing.assert_array_equal(out.toarray(), ref.toarray())
    assert out.nnz == ref.nnz


def test_corrupt_column_indices_are_refused_before_they_index_anything():
    for bad in (8, -1):
        X = sp.csr_matrix((np.ones(3), np.array([1, 0, 2]), np.array([0, 2, 3])), shape=(2, 8))
        X.indices[0] = bad  # SciPy checks index ranges only with check_format(full_check=True)
        X.has_sorted_indices = False
        with pytest.raises(ValueError, match=r"column index outside 0\.\.7"):
            summed(X)


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_a_block_of_rows_repeats_an_entry_exactly_when_its_own_rows_do(seed, index_dtype):
    # repeated_entries(X, r0, r1) reads rows r0:r1 in place (offsets into the whole
    # indices): a repeat outside them is not seen, one inside is.
    from bayesnb.core.kernels import repeated_entries

    rng = np.random.default_rng(100 + seed)
    n, f = int(rng.integers(2, 25)), int(rng.integers(1, 30))
    X = _with_duplicates(rng, n=n, f=f, nnz=int(rng.integers(0, 3 * n)))
    X = sp.csr_matrix((X.data, X.indices.astype(index_dtype), X.indptr.astype(index_dtype)), shape=X.shape)
    X.has_sorted_indices = False
    for _ in range(5):
        r0 = int(rng.integers(0, n))
        r1 = int(rng.integers(r0, n + 1))
        part = X[r0:r1]
        distinct = sum(np.unique(part.indices[part.indptr[r] : part.indptr[r + 1]]).size for r in range(r1 - r0))
        assert repeated_entries(X, r0, r1) == (distinct < part.nnz)


def test_a_column_index_out_of_range_is_refused_not_read():
    from bayesnb.core.kernels import repeated_entries

    X = sp.csr_matrix((np.ones(3), np.array([0, 2, 1], dtype=np.int32), np.array([0, 2, 3], dtype=np.int32)), shape=(2, 3))
    X.indices[1] = 3  # past the last column: the counter's marker array would be overrun
    with pytest.raises(ValueError, match="column index outside"):
        repeated_entries(X)


def test_index_arrays_of_two_dtypes_are_refused_not_converted_per_block():
    from bayesnb.core.kernels import repeated_entries

    X = sp.csr_matrix((np.ones(2), np.array([0, 1], dtype=np.int32), np.array([0, 1, 2], dtype=np.int64)), shape=(2, 3))
    X.indptr = X.indptr.astype(np.int64)
    X.indices = X.indices.astype(np.int32)
    with pytest.raises(ValueError, match="one dtype"):
        repeated_entries(X)
