r"""Sums of log rising factorials over sparse counts: the Dirichlet-multinomial and negative-binomial predictives as the plug-in's sparse product plus a product over the counts >= 2.

:math:`\sum_j \log\Gamma(a_{cj} + x_{ij}) - \log\Gamma(a_{cj})` for every row and class
is the count part of the exact Dirichlet-multinomial predictive
(:mod:`~bayesnb.core.families.multinomial`) and, with a rate, of the negative-binomial
predictive (:mod:`~bayesnb.core.families.poisson`). Computed on the host (NumPy, SciPy's
sparse product on threads); the traced form is ``kernels.sum_log_rising_jax``.
"""

from __future__ import annotations

import threading
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from bayesnb.core._special import log_rising_factorial_np as _log_rising_np
from bayesnb.core.kernels import ParamCache, csr_rows_product, map_threads, num_threads, summed

__all__ = ["sum_log_rising", "concentration_totals"]

# Integer counts from 2 up to this value read their excess log Γ(a + x) - log Γ(a) - x log a
# from a per-posterior table (see _excess_table); larger or non-integer values are
# evaluated directly.
_TABLE_MAX = 32


# Stored entries per block of rows in ``sum_log_rising``: bounds the scratch arrays of a
# block (the float64 copy of integer values for the product; positions, features and
# table rows of its entries other than 0 and 1).
_BLOCK = 1 << 19
_MIN_BLOCK = 1 << 16
# Two blocks per thread: the calling thread and the pool's share them from one queue
# (kernels.map_threads), so one slowed thread takes fewer. On 20 Newsgroups' test set
# two per thread timed 1.05-1.13x scikit-learn, four 0.97-0.99x, one 0.76-1.12x.
_BLOCKS_PER_THREAD = 2
# Entries per chunk of the direct (non-tabled) evaluation, whose scratch is
# (entries x classes) floats.
_DIRECT_CHUNK = 1 << 15


def _log_rising_excess(a, x):
    r""":math:`\log\Gamma(a + x) - \log\Gamma(a) - x \log a`, elementwise (broadcasting)."""
    return _log_rising_np(a, x) - x * np.log(a)


def _covers(excess, xmax):
    """Whether the table snapshot ``excess`` (or ``None``) covers the counts ``xmax``."""
    return excess is not None and bool(np.all(xmax <= excess[0]))


def _excess_table(a, xmax):
    r"""The excess :math:`R_c(j, x) = \sum_{m=1}^{x-1} \log(1 + m / a_{cj})` of the rising
    factorial over :math:`x \log a_{cj}`, for every tabled (feature, count).

    The features with some tabled count are ranked by their highest count ``xmax``
    (deepest first), so that the features reaching level ``m`` are a prefix of that
    order and each level is one contiguous slice: the running sums over ``m`` are
    updated in place and written out as consecutive rows. The row of feature ``j`` at
    count ``x >= 2`` is ``start[x] + rank[j]``; row 0 is zeros, the row of the entries
    whose excess is evaluated directly. A product of the data's entries of counts
    >= 2 with this table (value 1, pointing at their rows) adds their whole excess.

    Returns
    -------
    table : ndarray of shape (1 + n_tabled, n_classes)
    rank : int ndarray of shape (n_features,)
    start : int ndarray of shape (max count + 1,)
    """
    xmax = np.asarray(xmax, dtype=np.intp)
    cols = np.flatnonzero(xmax >= 2)
    cols = cols[np.argsort(-xmax[cols], kind="stable")]
    depth = xmax[cols]
    rank = np.zeros(xmax.shape[0], dtype=np.intp)
    rank[cols] = np.arange(cols.size)
    top = int(depth[0]) if cols.size else 1
    # k[m]: number of features with xmax > m, for the levels m = 1 .. top - 1 (count m + 1).
    k = np.searchsorted(-depth, -np.arange(top), side="left")
    start = np.zeros(top + 1, dtype=np.intp)
    start[2:] = 1 + np.concatenate([[0], np.cumsum(k[1:-1])]) if top >= 2 else []
    n_rows = 1 + int(k[1:].sum())
    table = np.empty((n_rows, a.shape[0]))
    # Row numbers as small as the table allows: the correction keeps one per entry.
    index = np.int32 if n_rows < 2**31 else np.intp
    rank, start = rank.astype(index), start.astype(index)
    table[0] = 0.0
    a_sub = np.ascontiguousarray(np.take(a, cols, axis=1).T)
    running = np.zeros_like(a_sub)
    step = np.empty_like(a_sub)
    for m in range(1, top):
        km = k[m]
        np.divide(m, a_sub[:km], out=step[:km])
        np.log1p(step[:km], out=step[:km])
        running[:km] += step[:km]
        table[start[m + 1] : start[m + 1] + km] = running[:km]
    return table, rank, start


class _PredictiveTables:
    """Per-posterior parts of the predictive: ``log a`` (minus ``log1p(rate)`` where a
    negative-binomial rate is given) laid out (features, classes), C-contiguous (the
    layout scipy's sparse product reads), and the table of the excess of counts >= 2,
    grown to the deepest count seen so far for each feature.

    The table is shared by every caller with this posterior, threads included. It is
    only ever replaced whole (``excess``, a tuple ``(xmax covered, table, rank, start)``),
    and a call works with one snapshot of it throughout: a table grown by another call in
    the meantime ranks its rows differently.
    """

    def __init__(self, a, rate=None):
        self.log_a_t = np.log(a.T, out=np.empty(a.shape[::-1]))
        if rate is not None:
            self.log_a_t -= np.log1p(np.asarray(rate, dtype=np.float64)).T
        self.excess = None
        self.total = None  # a.sum(axis=1), where asked for
        self._grow = threading.Lock()

    def grown(self, a, xmax):
        """A snapshot of the table covering ``xmax`` (and all it covered before), grown
        here if needed; two threads growing at once keep both their counts."""
        with self._grow:
            cached = self.excess
            if _covers(cached, xmax):
                return cached
            need = xmax if cached is None else np.maximum(xmax, cached[0])
            cached = (need, *_excess_table(a, need))
            self.excess = cached
            return cached


# Reused across calls with the same (unchanged) posterior, e.g. an estimator's.
_TABLES = ParamCache(size=2)


def _tables(a, rate=None):
    if rate is None:
        return _TABLES.get((a,), "dirichlet-multinomial", lambda: _PredictiveTables(a))
    return _TABLES.get((a, rate), "negative-binomial", lambda: _PredictiveTables(a, rate))


def concentration_totals(a):
    """``a.sum(axis=1)``, kept with the predictive's tables while ``a`` is unchanged (a
    pass over every parameter, as long as the product for a batch of a few rows)."""
    tables = _tables(a)
    if tables.total is None:
        tables.total = a.sum(axis=1)
    return tables.total


# Values 1.0 for the correction product (one per entry of count >= 2), shared by all calls
# and grown when a block needs more; never written after it is made.
_ONES = np.ones(0)


def _ones(n):
    global _ONES
    ones = _ONES
    if ones.size < n:
        ones = np.ones(max(n, 2 * ones.size))
        _ONES = ones
    return ones[:n]


def sum_log_rising(a, X, rate=None):
    r""":math:`\sum_j \log\Gamma(a_{cj} + x_{ij}) - \log\Gamma(a_{cj})` for every row and class
    (minus :math:`\sum_j x_{ij} \log(1 + b_{cj})` where ``rate`` :math:`b` is given: the
    count terms of the negative-binomial predictive).

    Written as :math:`x \log a + R(a, x)` with the excess
    :math:`R(a, x) = \log\Gamma(a + x) - \log\Gamma(a) - x \log a`, which is zero for
    :math:`x \in \{0, 1\}`, the bulk of text counts. The first term is the plug-in
    likelihood's sparse product. The excess of integer counts from 2 to ``_TABLE_MAX`` is
    read from a table of the (feature, count) pairs needed (:func:`_excess_table`, kept
    for the posterior while it is unchanged and grown when deeper counts come), by a
    second sparse product over those entries alone, added to the first; larger or
    fractional values add their excess directly. Duplicate entries of a non-canonical
    CSR matrix are summed first.

    Two passes over blocks of rows, each on threads: the plug-in products with the scan
    for counts >= 2, then the corrections. Each pass reads one table (``log a``, then the
    excess): alternating them block by block would keep both in the cache at once.
    """
    # R(a, x) is not additive in x: duplicate entries are summed first.
    X = summed(sp.csr_matrix(X) if not sp.issparse(X) else X)
    n, n_features = X.shape
    tables = _tables(a, rate)
    indptr = X.indptr
    # _BLOCKS_PER_THREAD blocks per thread, of at most _BLOCK entries (the scratch bound)
    # and at least _MIN_BLOCK.
    block = max(_MIN_BLOCK, min(_BLOCK, -(-X.nnz // (_BLOCKS_PER_THREAD * num_threads()))))
    cuts = np.searchsorted(indptr, np.arange(block, X.nnz, block), side="right") - 1
    bounds = np.unique(np.concatenate([[0], cuts, [n]]))
    blocks = list(zip(bounds[:-1], bounds[1:]))
    out = np.empty((n, a.shape[0]))
    # Each row is computed within one block, in the same order whatever the blocks: the
    # result does not depend on the number of threads (numpy's ufuncs and scipy's
    # product release the GIL).
    # One snapshot of the cached table for the first pass (see _PredictiveTables).
    snapshot = tables.excess
    pending = [
        (rb, job)
        for rb, job in zip(blocks, map_threads(lambda rb: _first_pass(X, *rb, tables.log_a_t, snapshot, out), blocks))
        if job is not None
    ]
    if not pending:
        return out
    excess = snapshot
    if any(isinstance(job, _Scan) for _, job in pending):
        # Counts deeper than the snapshot: the table is grown once for all of them.
        xmax = np.zeros(n_features, dtype=np.uint8)
        for _, job in pending:
            if isinstance(job, _Scan):
                np.maximum(xmax, job.xmax, out=xmax)
        excess = tables.grown(a, xmax)

    def correct(item):
        (r0, r1), job = item
        if isinstance(job, _Correction) and job.excess is not excess:
            job = _scan(X, r0, r1)  # its rows index an older table: read the block again
        if isinstance(job, _Scan):
            job = _correction(X, r0, r1, job, excess)
        _add_correction(r0, r1, job, a, excess[1], out)

    map_threads(correct, pending)
    return out


class _Scan(NamedTuple):
    """The entries of a block with a non-zero excess (values other than 0 and 1)."""

    pos: np.ndarray  # positions in the block
    cols: np.ndarray  # features
    counts: np.ndarray  # uint8 counts; 0 where the excess is evaluated directly
    direct: np.ndarray | None  # indices into pos of the untabled values, if any
    vals: np.ndarray
    xmax: np.ndarray  # deepest tabled count per feature


class _Correction(NamedTuple):
    """A block's tabled entries (counts 2 to ``_TABLE_MAX``) as a CSR matrix over the rows
    of the table snapshot ``excess``, and its untabled values as (row in block, feature,
    value), if any."""

    indptr: np.ndarray
    rows: np.ndarray
    direct: tuple | None
    excess: tuple


def _first_pass(X, r0, r1, log_a_t, snapshot, out):
    """Rows ``r0:r1``: the plug-in product into ``out``, and the scan for the entries with a
    non-zero excess: ``None`` where there are none, their :class:`_Correction` where the
    table ``snapshot`` covers them, else the :class:`_Scan` (the table is grown first)."""
    s, e = X.indptr[r0], X.indptr[r1]
    csr_rows_product(X.indptr[r0 : r1 + 1] - s, X.indices[s:e], X.data[s:e].astype(np.float64, copy=False), log_a_t, out[r0:r1])
    scan = _scan(X, r0, r1)
    if scan is None:
        return None
    # Kept until the second pass: the compact form where the table is ready (every call
    # after the first with a posterior), the scan otherwise.
    if _covers(snapshot, scan.xmax):
        return _correction(X, r0, r1, scan, snapshot)
    return scan


def _scan(X, r0, r1):
    """The entries of rows ``r0:r1`` with a non-zero excess (:class:`_Scan`), or ``None``."""
    s, e = X.indptr[r0], X.indptr[r1]
    v = X.data[s:e]
    pos = np.flatnonzero(v != 1)
    vals = np.take(v, pos)
    keep = vals != 0
    if not keep.all():
        pos, vals = pos[keep], vals[keep]
    if not pos.size:
        return None
    cols = np.take(X.indices[s:e], pos)
    tabled = (vals >= 2) & (vals <= _TABLE_MAX) & (vals == np.floor(vals))
    if tabled.all():
        direct, counts = None, vals.astype(np.uint8)
    else:
        direct = np.flatnonzero(~tabled)
        counts = np.where(tabled, vals, 0).astype(np.uint8)
    xmax = np.zeros(X.shape[1], dtype=np.uint8)
    # Same dtype as the counts: ufunc.at then takes its fast path (mixed dtypes: 30x slower).
    np.maximum.at(xmax, cols, counts)
    return _Scan(pos, cols, counts, direct, vals, xmax)


def _correction(X, r0, r1, scan, excess):
    """The :class:`_Correction` of a scanned block, on the table snapshot ``excess``."""
    _, _, rank, start = excess
    local = X.indptr[r0 : r1 + 1] - X.indptr[r0]
    pos, cols, counts, direct = scan.pos, scan.cols, scan.counts, None
    if scan.direct is not None:
        d = scan.direct
        direct = (np.searchsorted(local, pos[d], side="right") - 1, cols[d], scan.vals[d].astype(np.float64))
        tabled = counts != 0
        pos, cols, counts = pos[tabled], cols[tabled], counts[tabled]
    rows = start[counts]
    rows += rank[cols]
    if rows.size >= 2**31:  # a block of one row longer than int32 can count
        rows = rows.astype(np.intp)
    return _Correction(np.searchsorted(pos, local).astype(rows.dtype), rows, direct, excess)


def _add_correction(r0, r1, corr, a, table, out):
    """Adds the excess of a block's entries of counts >= 2 to ``out[r0:r1]``: one sparse
    product of those entries (value 1) with the table rows of their (feature, count),
    then the directly evaluated excess of larger or fractional values."""
    csr_rows_product(corr.indptr, corr.rows, _ones(corr.rows.size), table, out[r0:r1], accumulate=True)
    if corr.direct is None:
        return
    r, c, v = corr.direct
    # Chunks end where a row ends, except in a row of more than _DIRECT_CHUNK entries, cut
    # at multiples of _DIRECT_CHUNK from its own first entry: each row's terms are summed
    # in the same groups whatever the block it falls in (and so the number of threads).
    m, c0 = r.size, 0
    while c0 < m:
        c1 = min(c0 + _DIRECT_CHUNK, m)
        if c1 < m and r[c1] == r[c1 - 1]:
            row_first = int(np.searchsorted(r, r[c1], side="left"))
            if row_first > c0:
                c1 = row_first
        rc, cc, vc = r[c0:c1], c[c0:c1], v[c0:c1]
        a_c = np.take(a, cc, axis=1).T
        terms = _log_rising_excess(a_c, vc[:, None])
        starts = np.flatnonzero(np.r_[True, rc[1:] != rc[:-1]])
        out[r0 + rc[starts]] += np.add.reduceat(terms, starts, axis=0)
        c0 = c1
