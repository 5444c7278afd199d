r"""Sums of log rising factorials over sparse counts: the Dirichlet-multinomial and negative-binomial predictives in one sparse product.

:math:`\sum_j \log\Gamma(a_{cj} + x_{ij}) - \log\Gamma(a_{cj})` for every row and class
is the count part of the exact Dirichlet-multinomial predictive
(:mod:`~bayesnb.core.families.multinomial`) and, with a rate, of the negative-binomial
predictive (:mod:`~bayesnb.core.families.poisson`). Computed on the host (NumPy, SciPy's
sparse product on threads); the traced form is ``kernels.sum_log_rising_jax``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from bayesnb.core._special import log_rising_factorial_np as _log_rising_np
from bayesnb.core.kernels import ParamCache, csr_rows_product, map_threads, matmul, num_threads, summed

__all__ = ["sum_log_rising"]

# Integer counts from 2 up to this value read their excess log Γ(a + x) - log Γ(a) - x log a
# from a per-posterior table (see _excess_table); larger or non-integer values are
# evaluated directly.
_TABLE_MAX = 32


# Stored entries per block of rows in ``sum_log_rising``: bounds the scratch arrays
# (masks, positions) of the first pass and the redirected copy (indices and float64
# values) of the second. On the quick benchmark's Zipf corpus (2.2 M entries) 2^19 keeps
# the time of 2^22 and a tracemalloc peak of 27 MiB (2^22: 52 MiB; 2^18: 19 MiB, 40% slower).
_BLOCK = 1 << 19
_MIN_BLOCK = 1 << 16
_BLOCKS_PER_THREAD = 4
# Entries per chunk of the direct (non-tabled) evaluation, whose scratch is
# (entries x classes) floats.
_DIRECT_CHUNK = 1 << 15


def _log_rising_excess(a, x, log_a):
    r""":math:`\log\Gamma(a + x) - \log\Gamma(a) - x \log a`, elementwise (broadcasting)."""
    return _log_rising_np(a, x) - x * log_a


def _excess_table(a, xmax, log_a_t):
    r"""``log a`` and, below it, :math:`x \log a_{cj} + R_c(j, x)` for every tabled (feature, count).

    :math:`R_c(j, x) = \sum_{m=1}^{x-1} \log(1 + m / a_{cj})` is the excess of the rising
    factorial over :math:`x \log a`. The features with some tabled count are ranked by
    their highest count ``xmax`` (deepest first), so that the features reaching level
    ``m`` are a prefix of that order and each level is one contiguous slice: the running
    sums over ``m`` are updated in place and written out as the rows
    ``n_features + offset[m] .. + k_m`` of the table. The row of feature ``j`` with count
    ``x >= 2`` is ``n_features + offset[x - 1] + rank[j]``; the row of count 1 is ``j``.
    An entry of the data then reads its whole term :math:`\log\Gamma(a + x) - \log\Gamma(a)`
    from one row, so the predictive is one sparse product (see :func:`sum_log_rising`).

    Returns
    -------
    table : ndarray of shape (n_features + n_levels, n_classes)
    rank : int ndarray of shape (n_features,)
    offset : int ndarray of shape (max count + 1,)
    """
    xmax = np.asarray(xmax, dtype=np.intp)
    n_features = log_a_t.shape[0]
    cols = np.flatnonzero(xmax >= 2)
    cols = cols[np.argsort(-xmax[cols], kind="stable")]
    depth = xmax[cols]
    rank = np.zeros(xmax.shape[0], dtype=np.intp)
    rank[cols] = np.arange(cols.size)
    top = int(depth[0]) if cols.size else 1
    # k[m]: number of features with xmax > m, for the levels m = 1 .. top - 1.
    k = np.searchsorted(-depth, -np.arange(top), side="left")
    offset = np.zeros(top + 1, dtype=np.intp)
    offset[2:] = np.cumsum(k[1:])
    table = np.empty((n_features + int(offset[-1]), a.shape[0]))
    table[:n_features] = log_a_t
    a_sub = np.ascontiguousarray(np.take(a, cols, axis=1).T)
    log_a_sub = np.take(log_a_t, cols, axis=0)
    running = np.zeros_like(a_sub)
    step = np.empty_like(a_sub)
    for m in range(1, top):
        km = k[m]
        np.divide(m, a_sub[:km], out=step[:km])
        np.log1p(step[:km], out=step[:km])
        running[:km] += step[:km]
        rows = table[n_features + offset[m] : n_features + offset[m] + km]
        np.multiply(log_a_sub[:km], m + 1, out=rows)
        rows += running[:km]
    return table, rank, offset


class _PredictiveTables:
    """Per-posterior parts of the predictive: ``log a`` (minus ``log1p(rate)`` where a
    negative-binomial rate is given) laid out (features, classes), C-contiguous (the
    layout scipy's sparse product reads), and the table of the terms of counts >= 2
    beneath it, grown to the deepest count seen so far for each feature."""

    def __init__(self, a, rate=None):
        self.log_a_t = np.log(a.T, out=np.empty(a.shape[::-1]))
        self.shifted = rate is not None
        if self.shifted:
            self.log_a_t -= np.log1p(np.asarray(rate, dtype=np.float64)).T
        self.excess = None  # (xmax covered, table, rank, offset), replaced whole when grown

    def excess_for(self, a, xmax):
        cached = self.excess
        if cached is None or not np.all(xmax <= cached[0]):
            need = xmax if cached is None else np.maximum(xmax, cached[0])
            cached = (need, *_excess_table(a, need, self.log_a_t))
            self.excess = cached
        return cached[1:]


# Reused across calls with the same (unchanged) posterior, e.g. an estimator's.
_TABLES = ParamCache(size=2)


def sum_log_rising(a, X, rate=None):
    r""":math:`\sum_j \log\Gamma(a_{cj} + x_{ij}) - \log\Gamma(a_{cj})` for every row and class
    (minus :math:`\sum_j x_{ij} \log(1 + b_{cj})` where ``rate`` :math:`b` is given: the
    count terms of the negative-binomial predictive, in the same one product).

    Written as :math:`x \log a + R(a, x)` with the excess
    :math:`R(a, x) = \log\Gamma(a + x) - \log\Gamma(a) - x \log a`, which is zero for
    :math:`x \in \{0, 1\}`, the bulk of text counts. Integer counts from 2 to
    ``_TABLE_MAX`` read their whole term :math:`x \log a + R` from a table of the
    (feature, count) pairs needed (:func:`_excess_table`, kept for the posterior while it
    is unchanged and grown when deeper counts come), so the whole sum is *one* sparse
    product, with the same entries as the plug-in likelihood's, of a matrix whose entries
    of counts >= 2 point at their table rows (value 1) instead of at ``log a`` (value x).
    Larger or fractional values keep :math:`x \log a` in that product and add their
    excess directly. Duplicate entries of a non-canonical CSR matrix are summed first.
    """
    # R(a, x) is not additive in x: duplicate entries are summed first.
    X = summed(sp.csr_matrix(X) if not sp.issparse(X) else X)
    n, n_features = X.shape
    if rate is None:
        tables = _TABLES.get((a,), "dirichlet-multinomial", lambda: _PredictiveTables(a))
    else:
        tables = _TABLES.get((a, rate), "negative-binomial", lambda: _PredictiveTables(a, rate))
    log_a_t = tables.log_a_t
    indptr = X.indptr
    # A few blocks per thread (a thread slowed down by other processes then takes fewer),
    # of at most _BLOCK entries (the scratch bound) and at least _MIN_BLOCK.
    block = max(_MIN_BLOCK, min(_BLOCK, -(-X.nnz // (_BLOCKS_PER_THREAD * num_threads()))))
    cuts = np.searchsorted(indptr, np.arange(block, X.nnz, block), side="right") - 1
    bounds = np.unique(np.concatenate([[0], cuts, [n]]))
    blocks = list(zip(bounds[:-1], bounds[1:]))
    # Both passes work block by block, the blocks on threads (numpy's ufuncs and scipy's
    # product release the GIL): each block is computed alone, so the result does not
    # depend on the number of threads.
    tails = map_threads(lambda rb: _scan_block(X, *rb), blocks)
    if all(t is None for t in tails):
        return matmul(X, log_a_t)
    # The deepest tabled count of each feature sizes the table.
    xmax = np.zeros(n_features, dtype=np.uint8)
    for t in tails:
        if t is not None and t[1].size:
            np.maximum(xmax, t[3], out=xmax)
    table, rank, offset = tables.excess_for(a, xmax)
    out = np.empty((n, a.shape[0]))

    def product(k):
        r0, r1 = blocks[k]
        _product_block(X, r0, r1, tails[k], a, log_a_t, table, rank, offset, n_features, out, tables.shifted)

    map_threads(product, range(len(blocks)))
    return out


def _scan_block(X, r0, r1):
    """First pass over the stored values of rows ``r0:r1``: the entries with a non-zero
    excess (values other than 0 and 1), tabled counts as (position, feature, count) and
    the block's deepest tabled count per feature; the others (large or fractional) as
    (row, feature, value). ``None`` where the block has none."""
    indptr, n_features = X.indptr, X.shape[1]
    s, e = indptr[r0], indptr[r1]
    v = X.data[s:e]
    pos = np.flatnonzero(v != 1.0)
    vals = np.take(v, pos)
    keep = vals != 0.0
    if not keep.all():
        pos, vals = pos[keep], vals[keep]
    if not pos.size:
        return None
    cols = np.take(X.indices[s:e], pos)
    tabled = (vals == np.round(vals)) & (vals >= 2) & (vals <= _TABLE_MAX)
    direct = None
    if not tabled.all():
        local = indptr[r0 : r1 + 1] - s
        d = pos[~tabled]
        direct = (np.searchsorted(local, d, side="right") - 1, cols[~tabled], vals[~tabled])
        pos, cols, vals = pos[tabled], cols[tabled], vals[tabled]
    counts = vals.astype(np.uint8)
    xmax = np.zeros(n_features, dtype=np.uint8)
    # Same dtype as the counts: ufunc.at then takes its fast path (mixed dtypes: 30x slower).
    np.maximum.at(xmax, cols, counts)
    return pos, cols, counts, xmax, direct


def _product_block(X, r0, r1, tail, a, log_a_t, table, rank, offset, n_features, out, shifted=False):
    """Second pass for rows ``r0:r1``: the product with the table, tabled entries
    redirected to their rows (value 1), plus the excess of the direct entries (over
    ``x log a``, which is not ``log_a_t`` where it is ``shifted`` by a rate)."""
    s, e = X.indptr[r0], X.indptr[r1]
    indptr = X.indptr[r0 : r1 + 1] - s
    if tail is None:
        csr_rows_product(indptr, X.indices[s:e], X.data[s:e].astype(np.float64, copy=False), log_a_t, out[r0:r1])
        return
    pos, cols, counts, _, direct = tail
    if cols.size:
        virtual = offset[counts - 1]
        virtual += rank[cols]
        virtual += n_features
        # Copies of the block's indices and values, redirected.
        ind = X.indices[s:e].astype(np.result_type(X.indices.dtype, np.min_scalar_type(table.shape[0])))
        ind[pos] = virtual
        val = X.data[s:e].astype(np.float64)
        val[pos] = 1.0
        csr_rows_product(indptr, ind, val, table, out[r0:r1])
    else:
        csr_rows_product(indptr, X.indices[s:e], X.data[s:e].astype(np.float64, copy=False), log_a_t, out[r0:r1])
    if direct is not None:
        for c0 in range(0, direct[0].size, _DIRECT_CHUNK):
            r, c, v = (x[c0 : c0 + _DIRECT_CHUNK] for x in direct)
            a_c = np.take(a, c, axis=1).T
            terms = _log_rising_excess(a_c, v[:, None], np.log(a_c) if shifted else log_a_t[c])
            starts = np.flatnonzero(np.r_[True, r[1:] != r[:-1]])
            out[r0 + r[starts]] += np.add.reduceat(terms, starts, axis=0)
