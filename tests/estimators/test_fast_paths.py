"""The performance paths give the numbers of the plain formulas.

Blocked and chunked loops are exercised with tiny block sizes so that every branch runs
on small data; caches must never serve a value for an array changed in place.
"""

import mpmath
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.preprocessing import binarize

import bayesnb
from bayesnb.core import kernels as _linear
from bayesnb.core import stats
from bayesnb.core.families import _rising, multinomial
from bayesnb.core.priors import Dirichlet


def _counts(rng, n=40, n_features=25, high=40):
    X = sp.random(n, n_features, density=0.3, format="csr", random_state=rng,
                  data_rvs=lambda k: rng.integers(1, high, k)).astype(np.float64)
    X.data[::9] = 0.0  # explicit zeros
    X.data[::11] = 1.0
    X.data[::13] *= 0.37  # fractional values take the direct path
    X.data[5] = 33.0  # above the table
    X = X.tolil()
    X[3] = 0  # an empty row
    return X.tocsr()


def _exact_dm(a, X):
    mpmath.mp.dps = 40
    X = X.toarray()
    out = np.empty((X.shape[0], a.shape[0]))
    for i, x in enumerate(X):
        for c in range(a.shape[0]):
            s = mpmath.mpf(0)
            total = mpmath.fsum(mpmath.mpf(float(v)) for v in a[c])
            for j in np.flatnonzero(x):
                aj = mpmath.mpf(float(a[c, j]))
                s += mpmath.loggamma(aj + float(x[j])) - mpmath.loggamma(aj)
            s -= mpmath.loggamma(total + float(x.sum())) - mpmath.loggamma(total)
            out[i, c] = float(s)
    return out


@pytest.fixture(params=["pattern", "levels"])
def first_product(request, monkeypatch):
    """Both forms of the exact predictive's first product: the data's pattern with log a
    (no table of levels), and the table of levels, read by any call with some sampled
    value other than 1, however few its entries (as deep as the sample's largest count,
    up to 255 on these small posteriors, unless a test sets ``_LEVEL_VALUES``)."""
    if request.param == "pattern":
        monkeypatch.setattr(_rising, "_LEVEL_VALUES", 0)
    else:
        monkeypatch.setattr(_rising, "_LEVEL_SHARE", 1 << 40)
        monkeypatch.setattr(_rising, "_LEVEL_ENTRIES_PER_VALUE", 0)
    _rising._TABLES._entries.clear()
    return request.param


@pytest.fixture
def pattern_only(monkeypatch):
    """The pattern's first product alone: tests of the table of counts' own mechanics
    (its growth, clip and snapshots), which the levels would mostly bypass."""
    monkeypatch.setattr(_rising, "_LEVEL_VALUES", 0)


def _assert_path(a, first_product):
    """The first product that the last call with the posterior ``a`` read."""
    assert (_rising._tables(a).levels is not None) == (first_product == "levels")


def _levels_deep(monkeypatch, a, depth):
    """A table of levels ``depth`` deep for the posterior ``a``."""
    monkeypatch.setattr(_rising, "_LEVEL_VALUES", depth * a.size)
    monkeypatch.setattr(_rising, "_LEVELS_MIN", min(depth, _rising._LEVELS_MIN))


@pytest.mark.parametrize(("block", "chunk"), [(1 << 22, 1 << 15), (7, 2), (1, 1)])
@pytest.mark.parametrize("threads", ["1", "3"])
def test_dirichlet_multinomial_matches_mpmath_whatever_the_blocks(monkeypatch, block, chunk, threads, first_product):
    # The blocks of rows run on threads: neither their size nor the number of threads
    # may change a value.
    monkeypatch.setattr(_rising, "_BLOCK", block)
    monkeypatch.setattr(_rising, "_MIN_BLOCK", 1)
    monkeypatch.setattr(_rising, "_DIRECT_CHUNK", chunk)
    monkeypatch.setenv("BAYESNB_NUM_THREADS", threads)
    rng = np.random.default_rng(0)
    X = _counts(rng, n=12)
    a = np.r_[rng.random(12) * 0.5 + 0.01, rng.random(13) * 1e5 + 30][None, :] * np.array([[1.0], [0.6], [1.7]])
    got = multinomial.log_predictive(Dirichlet(a), X)
    np.testing.assert_allclose(got, _exact_dm(a, X), rtol=1e-14, atol=1e-12)
    _assert_path(a, first_product)
    # duplicate entries are summed, not scored separately (a (data, (row, col)) build
    # would sum them itself: the CSR arrays are written directly)
    dup = _with_repeats(X, rows=[0, X.shape[0] - 1])
    assert not dup.has_canonical_format and dup.nnz > X.nnz
    np.testing.assert_allclose(multinomial.log_predictive(Dirichlet(a), dup), _exact_dm(a, dup), rtol=1e-14, atol=1e-12)


def _with_repeats(X, rows):
    """``X`` with each of ``rows``' first entry stored a second time, at the row's end
    (the same matrix, as SciPy reads it, with every stored value split in two)."""
    X = X.tocsr()
    data, indices, indptr = [], [], [0]
    for i in range(X.shape[0]):
        d, j = X.data[X.indptr[i] : X.indptr[i + 1]].copy(), X.indices[X.indptr[i] : X.indptr[i + 1]]
        if i in rows and d.size:
            half = d[0] / 2
            d[0] -= half
            d, j = np.r_[d, half], np.r_[j, j[0]]
        data.append(d)
        indices.append(j)
        indptr.append(indptr[-1] + d.size)
    return sp.csr_matrix((np.concatenate(data), np.concatenate(indices), np.array(indptr)), shape=X.shape)


@pytest.mark.parametrize("threads", ["1", "3"])
def test_entries_stored_twice_in_one_block_are_summed_before_the_predictive(monkeypatch, threads, first_product):
    """Small blocks on threads, the repeated entry in the last block only: the block that
    finds it sends the whole call to a summed copy; the caller's matrix is unchanged,
    and the row totals are those of the matrix."""
    monkeypatch.setattr(_rising, "_BLOCK", 5)
    monkeypatch.setattr(_rising, "_MIN_BLOCK", 1)
    monkeypatch.setenv("BAYESNB_NUM_THREADS", threads)
    rng = np.random.default_rng(31)
    X = _counts(rng, n=30)
    X.data = np.floor(X.data) + 2.0  # integers >= 2: a split entry changes the count's terms
    dup = _with_repeats(X, rows=[29])
    assert not dup.has_canonical_format and dup.nnz > X.nnz
    before = (dup.data.copy(), dup.indices.copy(), dup.indptr.copy())
    a = rng.random((2, X.shape[1])) * 3 + 0.2
    totals = np.full(X.shape[0], np.nan)
    got = _rising.sum_log_rising(a, dup, row_totals=totals)
    _assert_path(a, first_product)
    np.testing.assert_array_equal(got, _rising.sum_log_rising(a, X))
    np.testing.assert_allclose(got, _exact_dm(a, X) + _dm_length_term(a, X), rtol=1e-14, atol=1e-12)
    np.testing.assert_array_equal(totals, np.asarray(X.sum(axis=1)).ravel())
    for arr, was in zip((dup.data, dup.indices, dup.indptr), before):
        np.testing.assert_array_equal(arr, was)
    # a column index out of range in a matrix that is searched for repeats is refused
    bad = sp.csr_matrix((dup.data, dup.indices.copy(), dup.indptr), shape=dup.shape)
    bad.indices[-2] = X.shape[1] + 3  # the repeat (the last entry) stays
    with pytest.raises(ValueError, match="column index outside"):
        _rising.sum_log_rising(a, bad)


@pytest.mark.parametrize("threads", ["1", "2"])
def test_a_clipped_table_grown_again_still_covers_the_blocks_it_covered(monkeypatch, threads, pattern_only):
    """A clipped table (clip 6: ten features at count 20 overflow a 55-row budget) is
    grown by a call whose second block brings a new feature: the first block, prepared on
    the clipped snapshot, is read again on the grown table. Its count 20 is still past
    the clip (the clip never rises) and evaluated directly; with a clip back at 255 the
    grown table (depth 6) has no row for it (found by review: IndexError or another
    feature's row)."""
    monkeypatch.setattr(_rising, "_TABLE_PER_PARAMETER", 0)
    monkeypatch.setattr(_rising, "_TABLE_MIN_VALUES", 110)  # 2 classes: 55 rows
    monkeypatch.setattr(_rising, "_BLOCK", 1)
    monkeypatch.setattr(_rising, "_MIN_BLOCK", 1)
    monkeypatch.setenv("BAYESNB_NUM_THREADS", threads)
    a = np.ones((2, 11)) * np.array([[1.0], [2.5]])
    X1 = sp.csr_matrix(np.r_[np.full(10, 20.0), 0.0][None, :])
    X2 = sp.csr_matrix(np.array([[20.0] + [0.0] * 10, [0.0] * 10 + [5.0]]))
    _rising._TABLES._entries.clear()
    np.testing.assert_allclose(_rising.sum_log_rising(a, X1), _exact_dm(a, X1) + _dm_length_term(a, X1), rtol=1e-14, atol=1e-11)
    assert _rising._tables(a).excess.clip == 6
    np.testing.assert_allclose(_rising.sum_log_rising(a, X2), _exact_dm(a, X2) + _dm_length_term(a, X2), rtol=1e-14, atol=1e-11)
    assert _rising._tables(a).excess.clip <= 6 and _rising._tables(a).excess.depth[10] == 5


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.float32])
@pytest.mark.parametrize("depth", [None, 9])
def test_integer_and_narrow_counts_give_the_float64_values_bit_for_bit(monkeypatch, dtype, depth, first_product):
    """The first product reads only the pattern (or the rows of the counts, cast from
    the values as they are) and the scan compares the values as they are: integer and
    float32 counts give exactly the float64 result; with 9 levels most counts fall past
    them, up to 249 (uint8's range)."""
    rng = np.random.default_rng(32)
    X = sp.random(60, 20, density=0.4, random_state=33, format="csr", data_rvs=lambda k: rng.integers(1, 250, k).astype(float))
    X.data[::3] = 1.0
    X.data[::7] = 0.0  # stored zeros
    a = rng.random((3, 20)) * 4 + 0.1
    if depth is not None and first_product == "levels":
        _levels_deep(monkeypatch, a, depth)
    _rising._TABLES._entries.clear()
    want = _rising.sum_log_rising(a, X)
    np.testing.assert_allclose(want, _exact_dm(a, X) + _dm_length_term(a, X), rtol=1e-14, atol=1e-12)
    _assert_path(a, first_product)
    _rising._TABLES._entries.clear()
    np.testing.assert_array_equal(_rising.sum_log_rising(a, X.astype(dtype)), want)
    wide = X.astype(dtype)  # 64-bit index arrays: the levels' rows are 64-bit too
    wide.indices, wide.indptr = wide.indices.astype(np.int64), wide.indptr.astype(np.int64)
    assert wide.indptr.dtype == np.int64
    np.testing.assert_array_equal(_rising.sum_log_rising(a, wide), want)
    binary = X.copy()
    binary.data = binary.data > 1  # stored False entries: zeros
    np.testing.assert_array_equal(_rising.sum_log_rising(a, binary), _rising.sum_log_rising(a, binary.astype(np.float64)))
    uint64 = X.astype(np.uint64)
    uint64.data[0] = 2**40 + 3  # past int32: its cast wraps to 3, which must not be read as a count
    big = uint64.astype(np.float64)
    np.testing.assert_array_equal(_rising.sum_log_rising(a, uint64), _rising.sum_log_rising(a, big))
    r = int(np.searchsorted(big.indptr, 0, side="right")) - 1  # the row of that entry
    np.testing.assert_allclose(_rising.sum_log_rising(a, big)[r], (_exact_dm(a, big[r]) + _dm_length_term(a, big[r]))[0], rtol=1e-14)


@pytest.mark.parametrize("kept", [1 << 20, 1])
@pytest.mark.parametrize("depth", [None, 8])
def test_counts_above_the_table_stored_zeros_and_fractions(monkeypatch, kept, depth, first_product):
    """Counts up to 255 come from the table (or the levels, up to their depth), 256 and
    above, fractions and stored zeros are evaluated directly, kept in the correction
    product at the row of zeros (few) or taken out (many): all against mpmath."""
    monkeypatch.setattr(_rising, "_DIRECT_KEPT", kept)
    rng = np.random.default_rng(34)
    X = sp.random(25, 12, density=0.5, random_state=35, format="csr", data_rvs=lambda k: rng.integers(1, 40, k).astype(float))
    X.data[::4] = 255.0
    X.data[1::9] = 256.0
    X.data[2::9] = 1000.0
    X.data[3::11] = 7.25
    X.data[4::11] = 1.5  # a fraction that truncates to a level
    X.data[5::13] = 0.0
    a = np.r_[rng.random(6) * 0.3 + 0.01, rng.random(6) * 1e4 + 30][None, :] * np.array([[1.0], [0.4]])
    if depth is not None and first_product == "levels":
        _levels_deep(monkeypatch, a, depth)
    _rising._TABLES._entries.clear()
    np.testing.assert_allclose(_rising.sum_log_rising(a, X), _exact_dm(a, X) + _dm_length_term(a, X), rtol=1e-14, atol=1e-11)
    tables = _rising._tables(a)
    if first_product == "levels" and depth is None:  # 255 levels: no count is left to the table
        assert tables.levels.shape[0] == 256 * 12
        assert tables.excess is None or not tables.excess.depth.any()
    else:
        assert int(tables.excess.depth.max()) == 255
        assert (tables.levels is None) == (first_product == "pattern")


def test_a_table_over_its_budget_is_clipped_and_deeper_counts_evaluated_directly(monkeypatch, pattern_only):
    """A budget of 40 rows for 12 features: every depth is clipped at one level (the
    deepest that fits), counts above it are evaluated directly, values stay exact."""
    monkeypatch.setattr(_rising, "_TABLE_PER_PARAMETER", 0)
    monkeypatch.setattr(_rising, "_TABLE_MIN_VALUES", 40 * 2)  # 2 classes: 40 rows
    rng = np.random.default_rng(36)
    X = sp.random(30, 12, density=0.6, random_state=37, format="csr", data_rvs=lambda k: rng.integers(1, 30, k).astype(float))
    a = rng.random((2, 12)) * 6 + 0.05
    _rising._TABLES._entries.clear()
    got = _rising.sum_log_rising(a, X)
    excess = _rising._tables(a).excess
    assert excess.clip < 29 and excess.table.shape[0] - 1 <= 40
    assert int(excess.depth.max()) == excess.clip
    np.testing.assert_allclose(got, _exact_dm(a, X) + _dm_length_term(a, X), rtol=1e-14, atol=1e-11)
    # the same again (the clipped table covers the call), then deeper counts elsewhere
    np.testing.assert_array_equal(_rising.sum_log_rising(a, X), got)
    assert _rising._tables(a).excess is excess
    deeper = X.copy()
    deeper.data = deeper.data + 40
    np.testing.assert_allclose(_rising.sum_log_rising(a, deeper), _exact_dm(a, deeper) + _dm_length_term(a, deeper), rtol=1e-14, atol=1e-10)
    assert _rising._tables(a).excess.table.shape[0] - 1 <= 40


@pytest.mark.parametrize(("block", "product_max", "chunk"), [(1 << 21, 0, 1 << 16), (5, 0, 1 << 16), (1, 0, 1 << 16),
                                                        (1 << 21, 4, 1 << 16), (1 << 21, 4, 7), (1 << 21, 4, 1)])
@pytest.mark.parametrize("weighted", [False, True])
def test_sparse_class_totals_equal_the_one_hot_product(monkeypatch, block, product_max, chunk, weighted):
    # product_max 0: the bincount path; 4: the product with the one-hot class matrix, in
    # chunks of 1 entry (one row each, rows longer than the chunk), 7, or all.
    monkeypatch.setattr(stats, "_TOTALS_BLOCK", block)
    monkeypatch.setattr(stats, "_PRODUCT_MAX_CLASSES", product_max)
    monkeypatch.setattr(stats, "_PRODUCT_CHUNK", chunk)
    rng = np.random.default_rng(1)
    X = _counts(rng).astype(np.int64)
    X.data[X.data < 0] = 0
    y = rng.integers(0, 4, X.shape[0])
    w = rng.random(X.shape[0]) if weighted else None
    Y = np.zeros((X.shape[0], 4))
    Y[np.arange(X.shape[0]), y] = 1.0 if w is None else w
    got = stats.count_stats(X, y, 4, w)
    np.testing.assert_allclose(got.feature_count, (X.T @ Y).T, rtol=1e-15, atol=1e-13)
    np.testing.assert_allclose(got.class_count, Y.sum(axis=0), rtol=1e-15)


@pytest.mark.parametrize("values", ["int64", "bool", "float64"])
def test_two_class_totals_do_not_depend_on_the_thread_count(monkeypatch, values):
    # The product path (two classes) sums its two row blocks in order whatever the
    # number of threads: weighted sums agree to the bit across 1, 2 and 5 threads.
    rng = np.random.default_rng(4)
    X = _counts(rng, n=300, n_features=30)
    X.data = np.abs(X.data)
    X = X.astype(values)
    y = rng.integers(0, 2, X.shape[0])
    w = rng.random(X.shape[0]) * 3
    monkeypatch.setattr(stats, "_PRODUCT_CHUNK", 50)
    got = []
    for threads in ("1", "2", "5"):
        monkeypatch.setenv("BAYESNB_NUM_THREADS", threads)
        got.append(stats.count_stats(X, y, 2, w).feature_count)
    assert all(np.array_equal(got[0], g) for g in got[1:])
    Y = np.zeros((X.shape[0], 2))
    Y[np.arange(X.shape[0]), y] = w
    np.testing.assert_allclose(got[0], (X.astype(np.float64).T @ Y).T, rtol=1e-14)


def test_class_totals_chunks_bound_the_rows_of_the_one_hot_matrix(monkeypatch):
    """Empty rows take no entries but a row of the one-hot class matrix each: a chunk
    is capped in rows too (found by review: a million empty rows made one chunk)."""
    from bayesnb.core import kernels

    monkeypatch.setattr(stats, "_PRODUCT_CHUNK", 8)
    seen = []
    real = kernels.csr_rows_transposed_product

    def spy(indptr, indices, data, Y, out):
        seen.append(Y.shape[0])
        return real(indptr, indices, data, Y, out)

    monkeypatch.setattr(stats, "csr_rows_transposed_product", spy)
    rng = np.random.default_rng(5)
    X = sp.vstack([sp.csr_matrix((1000, 6)), sp.random(20, 6, density=0.5, format="csr", random_state=rng)], format="csr")
    y = rng.integers(0, 2, X.shape[0])
    got = stats.count_stats(X, y, 2).feature_count
    np.testing.assert_allclose(got, (X.T @ np.eye(2)[y]).T, rtol=1e-15)
    assert max(seen) <= 8


def test_sparse_products_are_bit_identical_in_slices_threads_and_integer_counts(monkeypatch):
    rng = np.random.default_rng(2)
    X = sp.random(3000, 500, density=0.05, format="csr", random_state=rng,
                  data_rvs=lambda k: rng.integers(1, 9, k)).astype(np.int64)
    W = rng.standard_normal((500, 6))
    reference = X.astype(np.float64) @ W
    monkeypatch.setattr(_linear, "_CONVERT_BLOCK", 1000)
    assert np.array_equal(_linear.matmul(X, W), reference)
    monkeypatch.setattr(_linear, "_PARALLEL_MIN_NNZ", 10)
    monkeypatch.setenv("BAYESNB_NUM_THREADS", "3")
    assert np.array_equal(_linear.matmul(X, W), reference)
    assert np.array_equal(_linear.matmul(X.astype(np.float64), W), reference)
    monkeypatch.setenv("BAYESNB_NUM_THREADS", "many")
    with pytest.raises(ValueError, match="BAYESNB_NUM_THREADS"):
        _linear.matmul(X, W)


def test_cached_tables_follow_arrays_changed_in_place():
    rng = np.random.default_rng(3)
    X = _counts(rng)
    a = 1.0 + rng.random((3, X.shape[1])) * 5
    first = multinomial.log_predictive(Dirichlet(a), X)
    a[1, 4] += 2.0
    np.testing.assert_array_equal(multinomial.log_predictive(Dirichlet(a), X),
                                  multinomial.log_predictive(Dirichlet(a.copy()), X))
    assert not np.allclose(first, multinomial.log_predictive(Dirichlet(a), X))
    log_w = np.log(rng.dirichlet(np.ones(X.shape[1]), 3))
    _linear.log_linear(X, log_w)
    log_w[0, 3] = -np.inf
    np.testing.assert_array_equal(_linear.log_linear(X, log_w), _linear.log_linear(X, log_w.copy()))


@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.float64])
@pytest.mark.parametrize("threshold", [0.0, 2.5, True])
def test_bernoulli_sparse_binarisation_is_sklearns_and_leaves_the_input_alone(dtype, threshold):
    rng = np.random.default_rng(4)
    X = _counts(rng).astype(dtype)
    X.data = np.abs(X.data)
    y = rng.integers(0, 3, X.shape[0])
    before = X.copy()
    clf = bayesnb.BernoulliNB(binarize=threshold, estimate="mean").fit(X, y)
    dense = bayesnb.BernoulliNB(binarize=None, estimate="mean").fit(
        binarize(X.astype(np.float64).toarray(), threshold=float(threshold)), y)
    np.testing.assert_array_equal(clf.feature_count_, dense.feature_count_)
    np.testing.assert_allclose(clf.predict_proba(X), dense.predict_proba(
        binarize(X.astype(np.float64).toarray(), threshold=float(threshold))), rtol=0, atol=1e-13)
    assert X.dtype == before.dtype and (X != before).nnz == 0


def test_integer_counts_are_read_in_place_with_the_same_results():
    rng = np.random.default_rng(5)
    X = _counts(rng).astype(np.int64)
    X.data = np.abs(X.data)
    y = rng.integers(0, 3, X.shape[0])
    for estimate in ("mean", "predictive"):
        as_int = bayesnb.MultinomialNB(estimate=estimate).fit(X, y)
        as_float = bayesnb.MultinomialNB(estimate=estimate).fit(X.astype(np.float64), y)
        np.testing.assert_array_equal(as_int.feature_count_, as_float.feature_count_)
        np.testing.assert_array_equal(as_int.predict_joint_log_proba(X), as_float.predict_joint_log_proba(X))
    bad = X.copy()
    bad.data[0] = -1
    with pytest.raises(ValueError, match="Negative values"):
        bayesnb.MultinomialNB().fit(bad, y)


def test_gaussian_statistics_do_not_depend_on_the_number_of_threads(monkeypatch):
    # Chunks are summarised on threads and merged in row order: bit-identical results.
    rng = np.random.default_rng(3)
    X = rng.normal(1e6, 1.0, size=(200_003, 4))  # several full chunks and a remainder
    y = rng.integers(0, 3, X.shape[0])
    w = rng.random(X.shape[0])
    results = []
    for threads in ("1", "2", "3"):
        monkeypatch.setenv("BAYESNB_NUM_THREADS", threads)
        results.append(stats.gaussian_stats(X, y, 3, w))
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert a.tobytes() == b.tobytes()
    # And they are the statistics: weighted means and centred sums of squares.
    for c in range(3):
        rows, wc = X[y == c], w[y == c]
        mean = np.average(rows - 1e6, axis=0, weights=wc) + 1e6
        np.testing.assert_allclose(results[0].mean[c] + results[0].mean_residual[c], mean, rtol=1e-15)
        m2 = (wc[:, None] * (rows - mean) ** 2).sum(0)
        np.testing.assert_allclose(results[0].m2[c], m2, rtol=1e-9)


def test_row_blocked_predictions_do_not_depend_on_the_number_of_threads(monkeypatch):
    # The categorical table look-ups, the Gaussian row kernels and the log-normalisation
    # split large inputs into runs of row blocks on threads; each row is computed the
    # same way on any thread.
    from bayesnb import CategoricalNB, GaussianNB

    rng = np.random.default_rng(4)
    n = 150_001  # more than two threads' worth of rows, not a whole number of blocks
    codes = rng.integers(0, 5, (n, 6))
    real = rng.normal(size=(n, 20))  # several compiled chunks of rows for the Gaussian kernels
    y = rng.integers(0, 4, n)
    results = []
    for threads in ("1", "2", "3"):
        monkeypatch.setenv("BAYESNB_NUM_THREADS", threads)
        cat = CategoricalNB().fit(codes, y)
        gauss = GaussianNB().fit(real, y)
        student_t = gauss.predict_log_proba(real)
        plug_in = gauss.set_params(estimate="mean").predict_log_proba(real)
        results.append([cat.predict_log_proba(codes), cat.predict_joint_log_proba(codes), student_t, plug_in])
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert a.tobytes() == b.tobytes()
    # The blocked normalisation is the plain one.
    joint = results[0][1]
    expected = joint - np.logaddexp.reduce(joint, axis=1, keepdims=True)
    np.testing.assert_allclose(results[0][0], expected, rtol=0, atol=1e-12)


def test_dirichlet_multinomial_blocks_on_threads_are_bit_identical(monkeypatch, first_product):
    """Each row's exact predictive is computed within one block: the block size and the
    number of threads leave every value unchanged, bit for bit."""
    rng = np.random.default_rng(3)
    X = sp.random(300, 40, density=0.3, random_state=4, format="csr", data_rvs=lambda k: rng.integers(1, 60, k))
    X.data[::7] = 1.0
    X.data[::11] += 0.5  # fractional values take the direct path
    a = rng.random((3, 40)) * 5 + 0.05
    # Direct (fractional) terms in chunks of 2: a row's chunks must not depend on its block.
    monkeypatch.setattr(_rising, "_DIRECT_CHUNK", 2)
    whole = multinomial.log_predictive(Dirichlet(a), X)
    monkeypatch.setattr(_rising, "_MIN_BLOCK", 1)
    for block, threads in [(1 << 22, "1"), (50, "2"), (17, "3"), (1, "2")]:
        monkeypatch.setattr(_rising, "_BLOCK", block)
        monkeypatch.setenv("BAYESNB_NUM_THREADS", threads)
        _rising._TABLES._entries.clear()
        np.testing.assert_array_equal(multinomial.log_predictive(Dirichlet(a), X), whole)
        _assert_path(a, first_product)


@pytest.mark.parametrize("with_rate", [False, True])
def test_table_rows_are_what_the_first_product_leaves_of_the_rising_factorial(with_rate):
    """Every (feature, count) row of the table is log G(a + x) - log G(a) - x s, less the
    log a - s of the first product (s = log1p(rate), the negative binomial's, or 0),
    against mpmath; row 0 (entries of count 1 and the directly evaluated) is zero."""
    rng = np.random.default_rng(11)
    a = np.r_[rng.random(6) * 0.2 + 1e-3, rng.random(6) * 50 + 0.5, [3e5]][None, :] * np.array([[1.0], [2.5]])
    rate = rng.random(a.shape) * 3 + 0.01 if with_rate else None
    depth = np.array([0, 1, 2, 3, 7, 255, 5, 2, 0, 9, 4, 32, 6], dtype=np.uint8)
    table, rank, start = _rising._excess_table(a, depth, None if rate is None else np.log1p(rate))
    assert not table[0].any()
    mpmath.mp.dps = 40
    seen = set()
    for j in range(a.shape[1]):
        for x in range(2, int(depth[j]) + 1):
            row = int(start[x] + rank[j])
            seen.add(row)
            want = []
            for c in range(a.shape[0]):
                ac = mpmath.mpf(float(a[c, j]))
                sc = mpmath.log1p(mpmath.mpf(float(rate[c, j]))) if with_rate else 0
                want.append(float(mpmath.loggamma(ac + x) - mpmath.loggamma(ac) - x * sc - (mpmath.log(ac) - sc)))
            np.testing.assert_allclose(table[row], want, rtol=1e-13, atol=1e-13)
    assert seen == set(range(1, table.shape[0]))  # every row is some (feature, count), once


@pytest.mark.parametrize("with_rate", [False, True])
def test_level_table_rows_are_the_whole_count_term(with_rate):
    """Row x * n_features + j of the table of levels is log G(a + x) - log G(a) - x s
    against mpmath (s = log1p(rate) or 0), for every count up to its depth; level 0 is
    zeros, level 1 the first product's log a - s, bit for bit."""
    rng = np.random.default_rng(15)
    a = np.r_[rng.random(3) * 0.2 + 1e-3, rng.random(3) * 50 + 0.5, [3e5]][None, :] * np.array([[1.0], [2.5]])
    rate = rng.random(a.shape) * 3 + 0.01 if with_rate else None
    tables = _rising._PredictiveTables(a, rate)
    depth = 40
    table = _rising._level_table(a, depth, tables.log_a_t, tables.shift_t)
    p = a.shape[1]
    assert table.shape == ((depth + 1) * p, a.shape[0])
    assert not table[:p].any()
    np.testing.assert_array_equal(table[p : 2 * p], tables.log_a_t)
    mpmath.mp.dps = 40
    for x in (1, 2, 3, 17, 40):
        for j in range(a.shape[1]):
            want = []
            for c in range(a.shape[0]):
                ac = mpmath.mpf(float(a[c, j]))
                sc = mpmath.log1p(mpmath.mpf(float(rate[c, j]))) if with_rate else 0
                want.append(float(mpmath.loggamma(ac + x) - mpmath.loggamma(ac) - x * sc))
            np.testing.assert_allclose(table[x * p + j], want, rtol=1e-13, atol=1e-13)
    # grown from a shallower table: the same numbers, bit for bit
    shallow = _rising._level_table(a, 5, tables.log_a_t, tables.shift_t)
    np.testing.assert_array_equal(_rising._level_table(a, depth, tables.log_a_t, tables.shift_t, shallow), table)


def test_levels_are_read_where_counts_other_than_one_are_common(monkeypatch):
    """The first product reads the table of levels when at least one value in
    _LEVEL_SHARE of a sample differs from 1, the call has as many entries as the
    posterior has values and the budget leaves _LEVELS_MIN levels; as deep as the
    sample's largest count. Otherwise the pattern. Both give the mpmath values."""
    monkeypatch.setattr(_rising, "_LEVEL_SAMPLE", 16)
    rng = np.random.default_rng(16)
    a = rng.random((2, 30)) * 4 + 0.1
    counts = sp.random(40, 30, density=0.3, random_state=17, format="csr", data_rvs=lambda k: rng.integers(1, 30, k).astype(float))
    counts.data[1] = 200.0  # not in the sample (every 23rd entry): past the levels it sets
    ones = counts.copy()
    ones.data[:] = 1.0
    ones.data[::20] = 3.0  # one in 20 other than 1: under one in 8
    for X, leveled in [(counts, True), (ones, False)]:
        _rising._TABLES._entries.clear()
        got = _rising.sum_log_rising(a, X)
        assert (_rising._tables(a).levels is not None) is leveled
        np.testing.assert_allclose(got, _exact_dm(a, X) + _dm_length_term(a, X), rtol=1e-14, atol=1e-12)
    sample = counts.data[:: -(-counts.nnz // 16)]
    assert _rising._levels(a, counts) == int(sample.max()) < int(counts.data.max())
    _rising._TABLES._entries.clear()
    _rising.sum_log_rising(a, counts)
    assert _rising._tables(a).levels.shape[0] == (int(sample.max()) + 1) * 30
    # the sample is evenly spread: the counts in the second half of the entries count
    half = ones.copy()
    half.data[half.nnz // 2 :] = 5.0
    assert _rising._levels(a, half) == 5
    # a few rows (fewer entries than the posterior has values) keep the pattern
    few = counts[:4]
    assert few.nnz < a.size and _rising._levels(a, few) is None
    # a posterior too large for _LEVELS_MIN levels keeps the pattern
    monkeypatch.setattr(_rising, "_LEVEL_VALUES", _rising._LEVELS_MIN * a.size - 1)
    assert _rising._levels(a, counts) is None
    _rising._TABLES._entries.clear()
    np.testing.assert_allclose(_rising.sum_log_rising(a, counts), _exact_dm(a, counts) + _dm_length_term(a, counts), rtol=1e-14, atol=1e-12)
    assert _rising._tables(a).levels is None


def test_the_exact_predictive_refuses_a_width_other_than_the_posteriors():
    a = np.ones((2, 5))
    with pytest.raises(ValueError, match="4 features, the concentrations 5"):
        _rising.sum_log_rising(a, sp.csr_matrix(np.ones((3, 4))))
    np.testing.assert_array_equal(_rising.sum_log_rising(np.ones((2, 0)), sp.csr_matrix((3, 0))), np.zeros((3, 2)))


@pytest.mark.parametrize("depth", [None, 8])
def test_negative_binomial_count_terms_on_both_first_products(monkeypatch, depth, first_product):
    """With a rate, every entry's term is log G(a + x) - log G(a) - x log(1 + b), against
    mpmath, on either first product (levels past 8 through the table of counts)."""
    rng = np.random.default_rng(18)
    X = sp.random(30, 14, density=0.5, random_state=19, format="csr", data_rvs=lambda k: rng.integers(1, 60, k).astype(float))
    X.data[::5] = 1.0
    X.data[1::7] = 300.0
    X.data[2::9] = 2.5
    a = rng.random((2, 14)) * 5 + 0.02
    b = rng.random((2, 14)) * 4 + 0.05
    if depth is not None and first_product == "levels":
        _levels_deep(monkeypatch, a, depth)
    _rising._TABLES._entries.clear()
    got = _rising.sum_log_rising(a, X, rate=b)
    mpmath.mp.dps = 40
    D = X.toarray()
    want = np.zeros((X.shape[0], 2))
    for i, j in zip(*np.nonzero(D)):
        for c in range(2):
            ac, bc, x = (mpmath.mpf(float(v)) for v in (a[c, j], b[c, j], D[i, j]))
            want[i, c] += float(mpmath.loggamma(ac + x) - mpmath.loggamma(ac) - x * mpmath.log1p(bc))
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-11)


def test_dirichlet_multinomial_table_grows_with_deeper_counts(monkeypatch, first_product):
    """One posterior meets shallow counts, then deeper ones, then the shallow again: the
    cached table (of counts, or of levels) is grown, and every call equals the value
    with no cache at all, bit for bit."""
    monkeypatch.setattr(_rising, "_MIN_BLOCK", 1)
    monkeypatch.setattr(_rising, "_BLOCK", 23)
    rng = np.random.default_rng(12)
    a = rng.random((3, 30)) * 4 + 0.05
    shallow = sp.random(50, 30, density=0.3, random_state=13, format="csr", data_rvs=lambda k: rng.integers(1, 4, k).astype(float))
    deep = sp.random(50, 30, density=0.3, random_state=14, format="csr", data_rvs=lambda k: rng.integers(1, 60, k).astype(float))

    def fresh(X):
        _rising._TABLES._entries.clear()
        return multinomial.log_predictive(Dirichlet(a), X)

    want = {"shallow": fresh(shallow), "deep": fresh(deep)}
    np.testing.assert_allclose(want["deep"], _exact_dm(a, deep), rtol=1e-13, atol=1e-12)
    _rising._TABLES._entries.clear()
    for name, X in [("shallow", shallow), ("deep", deep), ("shallow", shallow), ("deep", deep)]:
        np.testing.assert_array_equal(multinomial.log_predictive(Dirichlet(a), X), want[name])


def _tiny_dm_case():
    a = np.array([[0.5, 2.0, 3.0, 7.0], [1.5, 0.7, 4.0, 0.2]])
    shallow = sp.csr_matrix(np.array([[2.0, 0, 0, 0]]))
    # Rows 0-1 need only what `shallow` tabled (covered); rows 2-3 a deeper count.
    mixed = sp.csr_matrix(np.array([[2.0, 1, 1, 1], [2, 0, 0, 0], [0, 3, 1, 1], [1, 3, 0, 1]]))
    return a, shallow, mixed


def test_one_call_with_covered_and_deeper_blocks(monkeypatch, pattern_only):
    """Some blocks of one call are covered by the cached table, others need it grown
    (which ranks its rows anew): every block must read the grown table's rows."""
    monkeypatch.setattr(_rising, "_MIN_BLOCK", 1)
    monkeypatch.setattr(_rising, "_BLOCK", 4)
    monkeypatch.setenv("BAYESNB_NUM_THREADS", "1")
    a, shallow, mixed = _tiny_dm_case()
    _rising._TABLES._entries.clear()
    _rising.sum_log_rising(a, shallow)
    np.testing.assert_allclose(_rising.sum_log_rising(a, mixed), _exact_dm(a, mixed) + _dm_length_term(a, mixed), rtol=1e-14, atol=1e-14)


def test_blocks_read_again_on_a_grown_table_of_counts_keep_their_levels(monkeypatch, first_product):
    """With two levels, counts of 3 and 4 fall past them, to the table of counts. The
    first call tables feature 0 at count 3; the second call's first blocks are covered by
    that table, its last ones grow it (feature 1 at count 4), so the first blocks are
    read again: on the grown table they must correct the same entries the levels left
    (the counts past 2), not every entry other than 1."""
    monkeypatch.setattr(_rising, "_MIN_BLOCK", 1)
    monkeypatch.setattr(_rising, "_BLOCK", 4)
    monkeypatch.setenv("BAYESNB_NUM_THREADS", "1")
    a = np.array([[0.5, 2.0, 3.0, 7.0], [1.5, 0.7, 4.0, 0.2]])
    if first_product == "levels":
        _levels_deep(monkeypatch, a, 2)
    first = sp.csr_matrix(np.array([[3.0, 2, 0, 0]]))
    second = sp.csr_matrix(np.array([[3.0, 2, 1, 2], [3, 0, 2, 0], [0, 4, 1, 1], [1, 4, 0, 2]]))
    _rising._TABLES._entries.clear()
    _rising.sum_log_rising(a, first)
    before = _rising._tables(a).excess
    assert before.depth[0] == 3 and before.depth[1] < 4
    got = _rising.sum_log_rising(a, second)
    _assert_path(a, first_product)
    assert _rising._tables(a).excess is not before and _rising._tables(a).excess.depth[1] == 4
    np.testing.assert_allclose(got, _exact_dm(a, second) + _dm_length_term(a, second), rtol=1e-14, atol=1e-14)


def _dm_length_term(a, X):
    # _exact_dm includes the class-total term that sum_log_rising leaves out.
    mpmath.mp.dps = 40
    n = np.asarray(X.sum(axis=1)).ravel()
    return np.array([[float(mpmath.loggamma(mpmath.fsum(a[c]) + k) - mpmath.loggamma(mpmath.fsum(a[c]))) for c in range(a.shape[0])] for k in n])


def test_a_table_grown_by_another_call_between_the_passes(monkeypatch, pattern_only):
    """Another caller grows the shared table between this call's two passes: this call
    keeps reading the snapshot its first pass used."""
    monkeypatch.setenv("BAYESNB_NUM_THREADS", "1")
    a, shallow, mixed = _tiny_dm_case()
    X_a = sp.csr_matrix(np.array([[2.0, 1, 0, 0]]))
    X_b = sp.csr_matrix(np.array([[0, 3.0, 0, 2]]))
    _rising._TABLES._entries.clear()
    _rising.sum_log_rising(a, X_a)
    real = _rising.map_threads
    calls = []

    def interleaved(fn, items):
        result = real(fn, items)
        calls.append(1)
        if len(calls) == 1:  # after X_a's first pass: a deeper call from elsewhere
            np.testing.assert_allclose(_rising.sum_log_rising(a, X_b), _exact_dm(a, X_b) + _dm_length_term(a, X_b), rtol=1e-14, atol=1e-14)
        return result

    monkeypatch.setattr(_rising, "map_threads", interleaved)
    X_deeper_a = sp.csr_matrix(np.array([[2.0, 1, 0, 0], [0, 0, 2, 0]]))  # grows the table itself too
    np.testing.assert_allclose(_rising.sum_log_rising(a, X_deeper_a), _exact_dm(a, X_deeper_a) + _dm_length_term(a, X_deeper_a), rtol=1e-14, atol=1e-14)


def test_threads_growing_one_table_keep_all_counts(pattern_only):
    """Calls on several threads, each with its own deep counts, on one posterior: every
    result is exact and the table ends covering every call's counts."""
    import concurrent.futures


    rng = np.random.default_rng(21)
    a = rng.random((3, 40)) * 3 + 0.1
    batches = []
    for k in range(8):
        X = sp.random(6, 40, density=0.2, random_state=30 + k, format="csr", data_rvs=lambda m: rng.integers(1, 3, m).astype(float))
        X = X.tolil()
        X[0, 5 * k % 40] = 4 + 3 * k  # each batch a deeper count of its own feature
        batches.append(X.tocsr())
    _rising._TABLES._entries.clear()
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda X: _rising.sum_log_rising(a, X), batches * 3))
    for X, g in zip(batches * 3, got):
        np.testing.assert_allclose(g, _exact_dm(a, X) + _dm_length_term(a, X), rtol=1e-13, atol=1e-13)
    covered = _rising._tables(a).excess.depth
    for k in range(8):
        assert covered[5 * k % 40] >= 4 + 3 * k


def test_posterior_is_read_only_after_fit():
    """The fitted posterior is frozen like the point estimates: a write raises instead
    of leaving cached derivations (the predictive's tables) out of date."""
    X = np.array([[2, 0, 1], [0, 3, 1], [1, 1, 0], [0, 0, 4]])
    est = bayesnb.MultinomialNB(estimate="predictive").fit(X, [0, 1, 0, 1])
    with pytest.raises(ValueError, match="read-only"):
        est.posterior_.concentration[0, 0] = 5.0
    refit = est.with_stats(est.stats_)
    with pytest.raises(ValueError, match="read-only"):
        refit.posterior_.concentration[0, 0] = 5.0


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_csr_rows_product_equals_scipy_on_slices(index_dtype):
    """The slice kernel: any run of rows, mixed index dtypes, a dirty output buffer."""
    from bayesnb.core.kernels import csr_rows_product

    rng = np.random.default_rng(5)
    X = sp.random(200, 70, density=0.2, random_state=6, format="csr")
    X.indices = X.indices.astype(index_dtype)
    X.indptr = X.indptr.astype(index_dtype)
    W = rng.normal(size=(70, 4))
    for r0, r1 in [(0, 200), (13, 14), (50, 131), (7, 7)]:
        s, e = X.indptr[r0], X.indptr[r1]
        out = np.full((r1 - r0, 4), np.nan)  # the kernel accumulates: the buffer must be reset
        csr_rows_product(X.indptr[r0 : r1 + 1] - s, X.indices[s:e].astype(np.int64), X.data[s:e], W, out)
        np.testing.assert_array_equal(out, X[r0:r1] @ W)
        # accumulate: added to what the buffer holds
        base = rng.normal(size=(r1 - r0, 4))
        acc = base.copy()
        csr_rows_product(X.indptr[r0 : r1 + 1] - s, X.indices[s:e].astype(np.int64), X.data[s:e], W, acc, accumulate=True)
        np.testing.assert_allclose(acc, base + X[r0:r1] @ W, rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("threads", ["1", "2"])
def test_negative_binomial_predictive_in_one_product_matches_scipy(monkeypatch, threads):
    """PoissonNB's exact predictive folds x log1p(b) into the rising-factorial product:
    counts 1 (plain product), 2..32 (table rows) and above (direct terms) all against
    scipy's negative binomial, in small blocks on threads."""
    from scipy import stats as sps

    from bayesnb.core.families import poisson
    from bayesnb.core.priors import Gamma

    monkeypatch.setattr(_rising, "_BLOCK", 13)
    monkeypatch.setattr(_rising, "_MIN_BLOCK", 1)
    monkeypatch.setenv("BAYESNB_NUM_THREADS", threads)
    rng = np.random.default_rng(8)
    X = sp.random(40, 15, density=0.5, random_state=9, format="csr", data_rvs=lambda k: rng.integers(1, 400, k).astype(float))
    X.data[::3] = 1.0
    X.data[1::5] = rng.integers(2, 33, X.data[1::5].size)
    a = rng.gamma(2.0, 3.0, size=(3, 15)) + 0.05
    b = rng.gamma(2.0, 0.5, size=(3, 15)) + 0.01
    got = poisson.log_predictive(Gamma(a, b), X)
    dense = X.toarray()
    # Gamma(a, rate b) mixture of Poissons: NB(n=a, p=b/(b+1)), every feature, zeros included.
    want = np.stack([sps.nbinom.logpmf(dense, a[c], b[c] / (b[c] + 1.0)).sum(axis=1) for c in range(3)], axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-11)
    assert (X.data > 32).any() and ((X.data >= 2) & (X.data <= 32)).any() and (X.data == 1).any()
