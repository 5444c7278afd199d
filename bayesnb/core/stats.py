r"""Sufficient statistics: additive pytrees computed from dense or CSR data.

Every statistic here is a weighted sum over rows, so fitting on all rows, fitting in
chunks with ``partial_fit`` and merging the statistics of shards (e.g. Dask partitions)
give the same numbers up to floating-point summation order. A row with weight ``w``
counts exactly like ``w`` copies of that row.

Notation: :math:`N_c = \sum_{i: y_i = c} w_i` and
:math:`T_{cj} = \sum_{i: y_i = c} w_i x_{ij}`.
"""

from __future__ import annotations

import sys
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from bayesnb.core.kernels import csr_rows_transposed_product, entry_blocks, map_threads

__all__ = [
    "CountStats",
    "CategoricalStats",
    "count_stats",
    "categorical_stats",
    "merge",
]


class CountStats(NamedTuple):
    """Weighted class and feature totals (multinomial and Bernoulli families).

    Attributes
    ----------
    class_count : ndarray of shape (n_classes,)
        :math:`N_c`, the weighted number of rows per class.
    feature_count : ndarray of shape (n_classes, n_features)
        :math:`T_{cj}`, the weighted feature totals per class (token counts for the
        multinomial family, numbers of rows with the feature on for Bernoulli).
    """

    class_count: np.ndarray
    feature_count: np.ndarray

    def merge(self, other):
        """Statistics of the union of two disjoint sets of rows."""
        return CountStats(*(np.asarray(a) + np.asarray(b) for a, b in zip(self, other)))

    def masked(self):
        """These statistics as :class:`MaskedCountStats` (every feature observed in every row)."""
        return MaskedCountStats(*self, _every_cell(self.class_count, self.feature_count))


class CategoricalStats(NamedTuple):
    """Weighted category counts per (class, feature).

    Attributes
    ----------
    class_count : ndarray of shape (n_classes,)
    category_count : ndarray of shape (n_classes, n_features, max_categories)
        Weighted number of rows of class ``c`` whose feature ``j`` takes category ``k``;
        padded with zeros past each feature's number of categories.
    """

    class_count: np.ndarray
    category_count: np.ndarray

    def merge(self, other):
        """Statistics of the union of two disjoint sets of rows (categories padded to the larger)."""
        k = max(self.category_count.shape[-1], other.category_count.shape[-1])
        return CategoricalStats(
            np.asarray(self.class_count) + np.asarray(other.class_count),
            _pad_last(np.asarray(self.category_count), k) + _pad_last(np.asarray(other.category_count), k),
        )


def _class_weights(y_index, n_classes, sample_weight):
    """Sparse (n_samples, n_classes) matrix with the row weight in the row's class column."""
    n = y_index.shape[0]
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    return sp.csr_matrix((w, y_index, np.arange(n + 1)), shape=(n, n_classes)), w


def count_stats(X, y_index, n_classes, sample_weight=None):
    """Weighted class totals and feature totals.

    Parameters
    ----------
    X : ndarray or scipy.sparse CSR matrix of shape (n_samples, n_features)
        Non-negative feature values (never densified when sparse).
    y_index : int ndarray of shape (n_samples,)
        Class index of each row, in ``range(n_classes)``.
    n_classes : int
    sample_weight : ndarray of shape (n_samples,), optional

    Returns
    -------
    CountStats
    """
    if sp.issparse(X) and X.format == "csr":
        y_index = np.asarray(y_index)
        w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        class_count = np.bincount(y_index, weights=w, minlength=n_classes).astype(np.float64)
        return CountStats(class_count, _csr_class_totals(X, y_index, n_classes, w))
    Y, w = _class_weights(y_index, n_classes, sample_weight)
    class_count = np.bincount(y_index, weights=w, minlength=n_classes).astype(np.float64)
    # (X.T @ Y).T: one pass over the non-zeros of X, whatever its format.
    feature_count = (X.T @ Y).T
    if sp.issparse(feature_count):
        feature_count = feature_count.toarray()
    return CountStats(class_count, np.ascontiguousarray(feature_count, dtype=np.float64))


# Stored entries per block of rows in ``_csr_class_totals``: bounds its scratch memory
# (one int64 key, and for integer counts one float64 weight, per entry).
_TOTALS_BLOCK = 1 << 21
_TOTALS_MIN_BLOCK = 1 << 14
# ...and at least this fraction of the entries (at most 64 blocks for a small table).
_TOTALS_MAX_BLOCKS = 64


# Up to this many classes the totals of a CSR matrix are a product with the one-hot class
# matrix (_csr_class_totals_product), from more the bincount of _csr_class_totals. Measured
# on this project's 2-core machine, one thread per method against the bincount: 2 classes
# on the stacked SMS corpus (10 M entries) 26 against 32-42 ms, on 556 long documents
# 0.6 against 1.5-2.0 ms (scratch 0.27 against 0.40 MiB); 4 classes 29 against 32 ms and
# 1.1 against 1.8 ms; 8 classes 38 against 31 ms (it spends a multiply-add per class).
_PRODUCT_MAX_CLASSES = 4
# Entries per chunk of the product: bounds its scratch (float64 values converted from
# integer counts, and the chunk's rows of the one-hot class matrix).
_PRODUCT_CHUNK = 1 << 16
# Row blocks of the product, each with its own (features x classes) sum, added in order:
# fixed (not one per thread), so the result does not depend on the number of threads.
_PRODUCT_BLOCKS = 2


def _csr_class_totals_product(X, y_index, n_classes, w):
    r""":math:`T_{cj}` of a CSR matrix as the product :math:`X^\top Y` with the one-hot
    class matrix :math:`Y` (the weight in the row's class column), for few classes.

    SciPy's column-major kernel reads the CSR arrays as the transpose in place
    (:func:`~bayesnb.core.kernels.csr_rows_transposed_product`): one pass over the
    entries, with ``n_classes`` multiply-adds each and nothing per entry allocated. Two
    blocks of rows on threads; each goes through its rows in chunks of about
    ``_PRODUCT_CHUNK`` entries, for which it converts the values to float64 (if they
    are not) and builds the rows of :math:`Y`. The values must be finite (the
    estimators refuse others first): an infinite count times a zero of :math:`Y` would
    put NaN in the other classes' totals.
    """
    n_features = X.shape[1]
    indptr = X.indptr

    def block(rb):
        r0, r1 = rb
        out = np.zeros((n_features, n_classes))
        while r0 < r1:
            # At least one row; else the rows whose entries end within the next chunk, and
            # at most _PRODUCT_CHUNK rows (empty rows take no entries but a row of Y).
            c1 = max(r0 + 1, min(r1, r0 + _PRODUCT_CHUNK, int(np.searchsorted(indptr, indptr[r0] + _PRODUCT_CHUNK, side="right")) - 1))
            s, e = indptr[r0], indptr[c1]
            Y = np.zeros((c1 - r0, n_classes))
            Y[np.arange(c1 - r0), y_index[r0:c1]] = 1.0 if w is None else w[r0:c1]
            data = X.data[s:e].astype(np.float64, copy=False)
            csr_rows_transposed_product(indptr[r0 : c1 + 1] - s, X.indices[s:e], data, Y, out)
            r0 = c1
        return out

    parts = map_threads(block, entry_blocks(indptr, max(1, -(-X.nnz // _PRODUCT_BLOCKS))))
    if not parts:
        return np.zeros((n_classes, n_features))
    total = parts[0]
    for part in parts[1:]:
        total += part
    return np.ascontiguousarray(total.T)


def _csr_class_totals(X, y_index, n_classes, w):
    r""":math:`T_{cj} = \sum_{i: y_i = c} w_i x_{ij}` of a CSR matrix, in one pass over its entries.

    Each stored entry is sent to the cell ``(y_i, j)`` of a flat (classes x features)
    table by one weighted ``bincount``: one addition per entry, where the product with
    the one-hot class matrix spends a multiply-add per entry and class (which pays only
    up to ``_PRODUCT_MAX_CLASSES`` classes: :func:`_csr_class_totals_product`). Rows are
    taken in blocks, so the per-entry scratch stays bounded (see ``per_block``).
    """
    if n_classes <= _PRODUCT_MAX_CLASSES:
        return _csr_class_totals_product(X, y_index, n_classes, w)
    n, n_features = X.shape
    size = n_classes * n_features
    indptr = X.indptr
    base = y_index.astype(np.intp) * n_features
    # Blocks of whole rows with about 2 x (classes x features) entries, so that the
    # table's own cost (zeroing, adding up) stays well below the entries', but at most
    # _TOTALS_BLOCK unless the table itself is larger. A small table (two classes) sets
    # no floor of its own, so blocks are also at least _TOTALS_MIN_BLOCK entries (128 KiB
    # of keys) and a 1/_TOTALS_MAX_BLOCKS share of the data: large data are not cut into
    # thousands of blocks (a fixed cost per block), and small data keep a scratch well
    # below their own size (a fit's peak memory).
    floor = max(_TOTALS_MIN_BLOCK, X.nnz // _TOTALS_MAX_BLOCKS)
    per_block = max(min(max(2 * size, floor), _TOTALS_BLOCK), size, 1)
    out = None
    for r0, r1 in entry_blocks(indptr, per_block):
        s, e = indptr[r0], indptr[r1]
        if e == s:
            continue
        lengths = np.diff(indptr[r0 : r1 + 1])
        key = np.repeat(base[r0:r1], lengths)
        key += X.indices[s:e]
        values = X.data[s:e]
        if w is not None:
            values = values * np.repeat(w[r0:r1], lengths)
            block = np.bincount(key, weights=values, minlength=size)
        elif values.dtype == np.bool_:
            # 0/1 values (binarised data): count the true entries, without weights.
            block = np.bincount(key if values.all() else key[values], minlength=size).astype(np.float64)
        else:
            block = np.bincount(key, weights=values, minlength=size)
        if out is None:
            out = block
        else:
            out += block
    if out is None:
        out = np.zeros(size)
    return out.reshape(n_classes, n_features)


def categorical_stats(X, y_index, n_classes, n_categories, sample_weight=None):
    """Weighted category counts.

    Parameters
    ----------
    X : int ndarray of shape (n_samples, n_features)
        Category codes, ``0 <= X[:, j] < n_categories[j]``.
    y_index : int ndarray of shape (n_samples,)
    n_classes : int
    n_categories : int ndarray of shape (n_features,)
    sample_weight : ndarray of shape (n_samples,), optional

    Returns
    -------
    CategoricalStats
    """
    n, n_features = X.shape
    k_max = int(np.max(n_categories, initial=1))
    w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    class_count = np.bincount(y_index, weights=w, minlength=n_classes).astype(np.float64)
    size = n_classes * n_features * k_max
    # Rows in blocks, so that the cell index of each (row, feature) pair (and its weight)
    # is a bounded scratch array rather than an (n_samples x n_features) one; without
    # weights the cells are counted as integers (exact, and bincount's fast path).
    step = max(1, _CATEGORY_BLOCK // max(n_features, 1))
    feature_base = np.arange(n_features, dtype=np.intp) * k_max
    counts = np.zeros(size, dtype=np.float64 if w is not None else np.intp)
    for r0 in range(0, n, step):
        r1 = min(r0 + step, n)
        cell = np.asarray(y_index[r0:r1], dtype=np.intp)[:, None] * (n_features * k_max) + feature_base
        cell += X[r0:r1]
        if w is None:
            counts += np.bincount(cell.ravel(), minlength=size)
        else:
            counts += np.bincount(cell.ravel(), weights=np.repeat(w[r0:r1], n_features), minlength=size)
    return CategoricalStats(class_count, counts.astype(np.float64).reshape(n_classes, n_features, k_max))


# (row, feature) cells per block in ``categorical_stats``.
_CATEGORY_BLOCK = 1 << 20


def _pad_last(a, size):
    pad = size - a.shape[-1]
    return a if pad == 0 else np.concatenate([a, np.zeros(a.shape[:-1] + (pad,))], axis=-1)


def merge(first, *others):
    """Combine sufficient statistics of disjoint sets of rows.

    Parameters
    ----------
    first, *others : statistics pytrees of one type (e.g. CountStats)
        Over the same classes and features. Each type defines how two of its values
        combine (a sum for counts; categorical counts are padded to the larger number of
        categories).

    Returns
    -------
    Same type as ``first``.
    """
    out = first
    for other in others:
        if type(other) is not type(out):
            raise TypeError(f"cannot merge {type(out).__name__} with {type(other).__name__}")
        out = out.merge(other)
    return out


# ----------------------------------------------------------------------------- Gaussian scatter


class ScatterStats(NamedTuple):
    r"""Weighted class counts, means and scatter matrices (multivariate Gaussian families).

    Attributes
    ----------
    class_count : ndarray of shape (n_classes,)
        :math:`N_c = \sum_{i: y_i = c} w_i`.
    mean : ndarray of shape (n_classes, n_features)
        :math:`\bar x_c = \sum_{i: y_i = c} w_i x_i / N_c` (zeros for a class with
        :math:`N_c = 0`).
    scatter : ndarray of shape (n_classes, n_features, n_features)
        :math:`S_c = \sum_{i: y_i = c} w_i (x_i - \bar x_c)(x_i - \bar x_c)^\top`,
        symmetric positive semi-definite.
    low, high : ndarrays of shape (n_classes, n_features) or None
        Smallest and largest value of each feature over the class's rows that carry
        weight (0 for a class without rows), as in :class:`GaussianStats`; None:
        reconstructed from the sums where needed (:meth:`ranged`).

    Centred statistics rather than raw second moments :math:`\sum w x x^\top` are kept
    because the raw form loses every digit of the variance when the mean is large
    compared with the spread (:math:`\sum w x^2 - N \bar x^2` cancels).
    """

    class_count: np.ndarray
    mean: np.ndarray
    scatter: np.ndarray
    low: np.ndarray | None = None
    high: np.ndarray | None = None

    # Format version of the model files that first held these fields (bayesnb.io.persistence
    # writes the lowest version that can read a file).
    FIELD_VERSIONS = {"low": 2, "high": 2}

    def merge(self, other):
        r"""Statistics of the union of two disjoint sets of rows (Chan et al.'s update).

        .. math::

            N = N_A + N_B, \quad \delta = \bar x_B - \bar x_A, \quad
            \bar x = \bar x_A + \frac{N_B}{N}\,\delta, \quad
            S = S_A + S_B + \frac{N_A N_B}{N}\,\delta\delta^\top

        per class; a class empty on both sides keeps zero mean and scatter. The ranges
        are the union of the two sides' (see :func:`merge_range`).
        """
        n_a = np.asarray(self.class_count, dtype=np.float64)
        n_b = np.asarray(other.class_count, dtype=np.float64)
        m_a = np.asarray(self.mean, dtype=np.float64)
        m_b = np.asarray(other.mean, dtype=np.float64)
        n = n_a + n_b
        # Counts are compared with 0, not required positive: a side of negative weight
        # is a downdate (exact leave-one-out, bayesnb.analysis.loo).
        safe = np.where(n != 0, n, 1.0)
        delta = m_b - m_a
        mean = m_a + (n_b / safe)[:, None] * delta
        # An empty side must not move the mean: its stored mean is a placeholder zero.
        mean = np.where((n_a != 0)[:, None], mean, m_b)
        mean = np.where((n_b != 0)[:, None], mean, m_a)
        cross = (n_a * n_b / safe)[:, None, None] * (delta[:, :, None] * delta[:, None, :])
        scatter = np.asarray(self.scatter, dtype=np.float64) + np.asarray(other.scatter, dtype=np.float64) + cross
        a, b = self.ranged(), other.ranged()
        return ScatterStats(n, mean, scatter, *merge_range(n_a[:, None], a.low, a.high, n_b[:, None], b.low, b.high))

    def sums_of_squares(self):
        """Per-class sums of squared deviations of every feature, (n_classes, n_features): the scatter's diagonal."""
        return np.diagonal(np.asarray(self.scatter, dtype=np.float64), axis1=-2, axis2=-1)

    def ranged(self):
        """These statistics with ``low`` and ``high`` (reconstructed where absent: :func:`range_from_sums`)."""
        if self.low is not None and self.high is not None:
            return self
        return self._replace(**dict(zip(("low", "high"), range_from_sums(self.class_count, self.mean, self.sums_of_squares()))))

    def check_consistent(self):
        """Raise ``ValueError`` unless the ranges agree with the sums as ``fit`` makes them (:func:`check_range_consistent`)."""
        check_range_consistent(self.class_count, self.mean, self.sums_of_squares(), self.low, self.high)


# Statistics whose computation holds temporaries per entry (scatter_stats, the
# log-factorials of dense counts) take rows in blocks of about this many entries; the
# scatter's blocks have at least _SCATTER_MIN_ROWS rows (a rank-k update of fewer rows
# would be dominated by the accumulation of the F x F result).
_BLOCK_ENTRIES = 1 << 16
_SCATTER_MIN_ROWS = 256


def scatter_stats(X, y_index, n_classes, sample_weight=None):
    r"""Weighted class counts, means and centred scatter matrices.

    Computed in two passes (means first, then the scatter of the centred rows), so the
    scatter keeps its precision however far the data sit from the origin.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Dense, finite real values.
    y_index : int ndarray of shape (n_samples,)
        Class index of each row, in ``range(n_classes)``.
    n_classes : int
    sample_weight : ndarray of shape (n_samples,), optional
        Non-negative weights; a weight ``w`` counts like ``w`` copies of the row.

    Returns
    -------
    ScatterStats
    """
    if sp.issparse(X):
        raise TypeError("scatter_stats needs dense data; got a sparse matrix")
    X = np.asarray(X, dtype=np.float64)
    y_index = np.asarray(y_index)
    n, n_features = X.shape
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    Y, w = _class_weights(y_index, n_classes, w)
    class_count = np.bincount(y_index, weights=w, minlength=n_classes).astype(np.float64)
    sums = np.asarray(Y.T @ X, dtype=np.float64).reshape(n_classes, n_features)
    mean = np.zeros((n_classes, n_features))
    seen = class_count != 0  # negative weights: a downdate (bayesnb.analysis.loo)
    mean[seen] = sums[seen] / class_count[seen, None]
    # sqrt(w) on both factors makes ``A.T @ A`` a symmetric rank-k update (exactly
    # symmetric), where ``(w * D).T @ D`` would differ from its transpose by round-off.
    # Rows of negative weight (downdates) enter with their sign.
    root = None if sample_weight is None else np.sqrt(np.abs(w))
    negative = None if sample_weight is None or not (w < 0).any() else w < 0
    order = np.argsort(y_index, kind="stable")
    bounds = np.searchsorted(y_index[order], np.arange(n_classes + 1))
    scatter = np.zeros((n_classes, n_features, n_features))
    # Each class's rows are gathered, centred and weighted a block at a time: the
    # temporaries are one block, not copies of X (a fit's peak memory stays below the
    # size of the data).
    step = max(_SCATTER_MIN_ROWS, _BLOCK_ENTRIES // max(1, n_features))
    low, high = np.full((n_classes, n_features), np.inf), np.full((n_classes, n_features), -np.inf)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below
        for c in range(n_classes):
            pick = order[bounds[c] : bounds[c + 1]]
            for start in range(0, pick.size, step):
                part = pick[start : start + step]
                rows = X[part]
                # The range of the rows that carry weight, before the block is centred.
                counted = rows if sample_weight is None else rows[w[part] != 0]
                if counted.shape[0]:
                    low[c] = np.fmin(low[c], counted.min(axis=0))
                    high[c] = np.fmax(high[c], counted.max(axis=0))
                rows -= mean[c]
                if root is not None:
                    rows *= root[part, None]
                scatter[c] += rows.T @ rows
                if negative is not None and negative[part].any():
                    down = rows[negative[part]]
                    scatter[c] -= 2.0 * down.T @ down
    if not (np.all(np.isfinite(scatter)) and np.all(np.isfinite(mean))):
        _raise_non_finite("scatter_stats", X, w)
    low, high = _placeholder_range(class_count[:, None], low, high, np)
    return ScatterStats(class_count, mean, scatter, low, high)


# ----------------------------------------------------------------------------- ranges
#
# The Gaussian statistics also carry each (class, feature)'s smallest and largest value
# over the rows that carry weight (``low``, ``high``): whether a feature's values spread
# over enough to be fitted in float64 (their squares must not lose their digits, see
# bayesnb.core._validation.check_gaussian_spread) is a property of all the rows behind
# the statistics, which sums of squares that already lost their digits cannot tell. They
# merge as the union (min of the minima, max of the maxima), so partial_fit, shards and
# fit judge the same rows. A cell without rows holds 0 for both (as its mean does).


def _placeholder_range(count, low, high, xp):
    """``low``, ``high`` with 0 in the cells without rows (``count == 0``)."""
    seen = count != 0
    return xp.where(seen, low, 0.0), xp.where(seen, high, 0.0)


def merge_range(n_a, low_a, high_a, n_b, low_b, high_b, xp=np):
    r"""Ranges of the union of two disjoint sets of rows: :math:`\min(l_A, l_B)`, :math:`\max(h_A, h_B)`.

    Parameters
    ----------
    n_a, n_b : ndarrays broadcastable to the ranges' shape
        Weights of the cells on each side; a side whose cell has weight 0 holds no
        value there (its 0 is a placeholder) and is ignored.
    low_a, high_a, low_b, high_b : ndarrays of shape (n_classes, n_features)
    xp : numpy or jax.numpy

    Returns
    -------
    low, high : ndarrays of shape (n_classes, n_features)
    """
    seen_a, seen_b = n_a != 0, n_b != 0
    low = xp.where(seen_a, xp.where(seen_b, xp.minimum(low_a, low_b), low_a), xp.where(seen_b, low_b, 0.0))
    high = xp.where(seen_a, xp.where(seen_b, xp.maximum(high_a, high_b), high_a), xp.where(seen_b, high_b, 0.0))
    return low, high


def range_from_sums(count, mean, m2):
    r"""The narrowest ranges that weighted values with these sums can have: :math:`\bar x \pm \sqrt{M_2/N}`.

    For statistics without ranges (model files written before they were kept, and
    statistics built by hand). Values of weighted variance :math:`v = M_2/N` around the
    mean :math:`\bar x` lie in some :math:`[\bar x - a, \bar x + b]` with :math:`ab \ge v`
    (Bhatia and Davis), so no range is narrower than :math:`2\sqrt v`: a spread judged on
    it is never wider than the data's, and the check of the spread refuses whenever the
    data could have been too narrow.

    Parameters
    ----------
    count : ndarray of shape (n_classes,) or (n_classes, n_features)
    mean, m2 : ndarrays of shape (n_classes, n_features)

    Returns
    -------
    low, high : ndarrays of shape (n_classes, n_features)
    """
    mean = np.asarray(mean, dtype=np.float64)
    n = np.asarray(count, dtype=np.float64)
    n = np.broadcast_to(n[:, None] if n.ndim == 1 else n, mean.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        sd = np.sqrt(np.where(n > 0, np.asarray(m2, dtype=np.float64) / np.where(n > 0, n, 1.0), 0.0))
    return _placeholder_range(n, mean - sd, mean + sd, np)


def check_range_consistent(count, mean, m2, low, high):
    r"""Raise ``ValueError`` unless ranges agree with the sums as the statistics of real rows do.

    For every cell with rows (weight :math:`N > 0`): :math:`l \le h` finite, the mean
    inside :math:`[l, h]` (to rounding), and the sum of squared deviations within what
    values in :math:`[l, h]` allow, :math:`M_2 \le N (h - l)^2 / 4` (Popoviciu's
    inequality, to a relative 1e-9). Absent ranges (None) pass: they are reconstructed
    from the sums (:func:`range_from_sums`).

    Parameters
    ----------
    count : ndarray of shape (n_classes,) or (n_classes, n_features)
    mean, m2, low, high : ndarrays of shape (n_classes, n_features)
    """
    if low is None and high is None:
        return
    if low is None or high is None:
        raise ValueError("holds one end of the feature ranges (low, high) without the other")
    mean = np.asarray(mean, dtype=np.float64)
    low, high = np.asarray(low), np.asarray(high)
    for name, arr in (("low", low), ("high", high)):
        if arr.shape != mean.shape or arr.dtype.kind not in "iuf":
            raise ValueError(f"{name} must be a real table of shape {mean.shape} like the means, got {arr.dtype} {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} holds NaN or infinite values (a range of real values is finite)")
    low, high = low.astype(np.float64), high.astype(np.float64)
    n = np.asarray(count, dtype=np.float64)
    n = np.broadcast_to(n[:, None] if n.ndim == 1 else n, mean.shape)
    seen = n > 0
    bad = seen & (high < low)
    if bad.any():
        c, j = (int(v[0]) for v in np.nonzero(bad))
        raise ValueError(f"class {c}, feature {j}: max {high[c, j]!r} < min {low[c, j]!r}")
    tol = 1e-12 * np.maximum(np.abs(low), np.abs(high))
    bad = seen & ((mean < low - tol) | (mean > high + tol))
    if bad.any():
        c, j = (int(v[0]) for v in np.nonzero(bad))
        raise ValueError(
            f"class {c}, feature {j}: the mean {mean[c, j]!r} lies outside the range [{low[c, j]!r}, {high[c, j]!r}] "
            "of the values it averages"
        )
    with np.errstate(over="ignore"):
        allowed = n * np.square(high - low) / 4.0
    m2 = np.asarray(m2, dtype=np.float64)
    bad = seen & (m2 > allowed * (1.0 + 1e-9) + np.finfo(np.float64).tiny)
    if bad.any():
        c, j = (int(v[0]) for v in np.nonzero(bad))
        raise ValueError(
            f"class {c}, feature {j}: the sum of squared deviations {m2[c, j]!r} exceeds what {n[c, j]:g} rows "
            f"within [{low[c, j]!r}, {high[c, j]!r}] allow (N (max - min)^2 / 4 = {allowed[c, j]!r})"
        )


def feature_range(stats):
    """Smallest and largest value of every feature over all the rows behind Gaussian statistics.

    Parameters
    ----------
    stats : GaussianStats, MaskedGaussianStats or ScatterStats
        Ranges absent (None) are reconstructed (:func:`range_from_sums`).

    Returns
    -------
    low, high : ndarrays of shape (n_features,)
        NaN for a feature that no row with weight observes.
    """
    s = stats.ranged()
    n = np.asarray(getattr(s, "observed_count", s.class_count), dtype=np.float64)
    low = np.asarray(s.low, dtype=np.float64)
    n = np.broadcast_to(n[:, None] if n.ndim == 1 else n, low.shape)
    seen = n != 0
    with np.errstate(invalid="ignore"):
        lo = np.where(seen, low, np.inf).min(axis=0, initial=np.inf)
        hi = np.where(seen, np.asarray(s.high, dtype=np.float64), -np.inf).max(axis=0, initial=-np.inf)
    none = ~seen.any(axis=0)
    return np.where(none, np.nan, lo), np.where(none, np.nan, hi)


__all__ += ["merge_range", "range_from_sums", "check_range_consistent", "feature_range"]


def _raise_non_finite(who, X, w):
    """Name why statistics came out non-finite: bad input, or finite input that overflowed."""
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(w))):
        raise ValueError(f"{who}: X or sample_weight contains NaN or infinity")
    raise ValueError(
        f"{who}: the weighted sums of squared deviations overflow float64 (|X| up to "
        f"{np.max(np.abs(X)):.3g}, weights up to {np.max(w, initial=0):.3g}); rescale the features"
    )


__all__ += ["ScatterStats", "scatter_stats"]


# ----------------------------------------------------------------------------- Poisson counts


class PoissonStats(NamedTuple):
    r"""Weighted class and feature totals plus the log-factorial total (Poisson family).

    Attributes
    ----------
    class_count : ndarray of shape (n_classes,)
        :math:`N_c = \sum_{i: y_i = c} w_i`.
    feature_count : ndarray of shape (n_classes, n_features)
        :math:`T_{cj} = \sum_{i: y_i = c} w_i x_{ij}`.
    log_factorial : ndarray of shape (n_classes,)
        :math:`L_c = \sum_{i: y_i = c} w_i \sum_j \log x_{ij}!`, the base-measure part of
        the Poisson likelihood of the count vectors. It does not depend on the rates, so
        it never moves a posterior, but the probability of the observed counts (the log
        evidence) needs it.
    """

    class_count: np.ndarray
    feature_count: np.ndarray
    log_factorial: np.ndarray

    def merge(self, other):
        """Statistics of the union of two disjoint sets of rows."""
        return PoissonStats(*(np.asarray(a) + np.asarray(b) for a, b in zip(self, other)))

    def masked(self):
        """These statistics as :class:`MaskedPoissonStats` (every feature observed in every row)."""
        return MaskedPoissonStats(*self, _every_cell(self.class_count, self.feature_count))


def poisson_stats(X, y_index, n_classes, sample_weight=None):
    r"""Weighted class totals, feature totals and log-factorial totals of count data.

    Parameters
    ----------
    X : ndarray or scipy.sparse CSR matrix of shape (n_samples, n_features)
        Non-negative counts (never densified when sparse: :math:`\log 0! = 0`, so only
        the stored non-zeros enter :math:`L_c`).
    y_index : int ndarray of shape (n_samples,)
        Class index of each row, in ``range(n_classes)``.
    n_classes : int
    sample_weight : ndarray of shape (n_samples,), optional

    Returns
    -------
    PoissonStats
    """
    from bayesnb.core._special import log_factorial_np
    from bayesnb.core.kernels import row_sums, summed

    counts = count_stats(X, y_index, n_classes, sample_weight)
    if sp.issparse(X):
        # log x! is not additive: duplicate entries must be summed before it is taken.
        X = summed(X)
        per_entry = sp.csr_matrix((log_factorial_np(X.data), X.indices, X.indptr), shape=X.shape)
        row_log_factorial = row_sums(per_entry)
    else:
        # Row blocks: the table lookup's temporaries (codes, masks, values) stay a block.
        X = np.asarray(X)
        row_log_factorial = np.empty(X.shape[0])
        step = max(1, _BLOCK_ENTRIES // max(1, X.shape[1]))
        for start in range(0, X.shape[0], step):
            row_log_factorial[start : start + step] = log_factorial_np(X[start : start + step]).sum(axis=1)
    w = np.ones(row_log_factorial.shape[0]) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    log_factorial = np.bincount(y_index, weights=w * row_log_factorial, minlength=n_classes).astype(np.float64)
    return PoissonStats(counts.class_count, counts.feature_count, log_factorial)


__all__ += ["PoissonStats", "poisson_stats"]


# ----------------------------------------------------------------------------- Gaussian, diagonal


class GaussianStats(NamedTuple):
    r"""Weighted class counts, means and sums of squared deviations (diagonal Gaussian).

    Attributes
    ----------
    class_count : ndarray of shape (n_classes,)
        :math:`N_c = \sum_{i: y_i = c} w_i`.
    mean : ndarray of shape (n_classes, n_features)
        :math:`\bar x_{cj} = \sum_{i: y_i = c} w_i x_{ij} / N_c`, rounded to float64
        (zero for a class with :math:`N_c = 0`).
    m2 : ndarray of shape (n_classes, n_features)
        :math:`M_{2,cj} = \sum_{i: y_i = c} w_i (x_{ij} - \bar x_{cj})^2`.
    mean_residual : ndarray of shape (n_classes, n_features) or 0.0
        The low-order part of the mean: ``mean + mean_residual`` is :math:`\bar x` to
        about twice float64 precision. Optional (default 0).

    Centred sums of squares rather than raw :math:`\sum w x^2` are kept because
    :math:`\sum w x^2 - N \bar x^2` loses every digit of the variance once the mean is
    large compared with the spread. The mean's low-order part matters when statistics
    are merged: the update needs :math:`\bar x_B - \bar x_A`, and with means rounded to
    float64 its error is :math:`\sim \epsilon |\bar x|`, so :math:`M_2` would lose about
    :math:`\epsilon |\bar x| / \mathrm{sd}` relative precision at every merge (1e-8 for
    data at 1e8 with unit spread); with it, merges are exact to rounding.

    ``low`` and ``high`` (each of shape (n_classes, n_features)) are the smallest and
    largest value of each feature over the class's rows that carry weight (0 for a class
    without rows); they merge as the union. They say whether a feature spreads over
    enough to be fitted in float64 (:func:`feature_range`), which sums of squares that
    lost their digits cannot. None (statistics built without them, model files written
    before they were kept): reconstructed from the sums where needed (:meth:`ranged`).
    """

    class_count: np.ndarray
    mean: np.ndarray
    m2: np.ndarray
    mean_residual: np.ndarray | float = 0.0
    low: np.ndarray | None = None
    high: np.ndarray | None = None

    # Format version of the model files that first held these fields (bayesnb.io.persistence
    # writes the lowest version that can read a file).
    FIELD_VERSIONS = {"low": 2, "high": 2}

    def merge(self, other):
        r"""Statistics of the union of two disjoint sets of rows (Chan et al.'s update).

        .. math::

            N = N_A + N_B, \quad \delta = \bar x_B - \bar x_A, \quad
            \bar x = \bar x_A + \frac{N_B}{N}\,\delta, \quad
            M_2 = M_{2,A} + M_{2,B} + \frac{N_A N_B}{N}\,\delta^2

        per (class, feature), with the means carried in two parts (``mean`` and
        ``mean_residual``); a class empty on one side takes the other side's values. The
        ranges are the union of the two sides' (:func:`merge_range`).
        """
        return GaussianStats(*_chan_merge(_six(self, np), _six(other, np), np))

    def ranged(self):
        """These statistics with ``low`` and ``high`` (reconstructed where absent: :func:`range_from_sums`)."""
        if self.low is not None and self.high is not None:
            return self
        return self._replace(**dict(zip(("low", "high"), range_from_sums(self.class_count, self.mean, self.m2))))

    def check_consistent(self):
        """Raise ``ValueError`` unless the ranges agree with the sums as ``fit`` makes them (:func:`check_range_consistent`)."""
        check_range_consistent(self.class_count, self.mean, self.m2, self.low, self.high)

    def masked(self):
        """These statistics as :class:`MaskedGaussianStats` (every feature observed in every row)."""
        mean = np.asarray(self.mean, dtype=np.float64)
        resid = np.broadcast_to(np.asarray(self.mean_residual, dtype=np.float64), mean.shape).copy()
        ranged = self.ranged()
        return MaskedGaussianStats(
            np.asarray(self.class_count, dtype=np.float64),
            _every_cell(self.class_count, mean),
            mean,
            np.asarray(self.m2, dtype=np.float64),
            resid,
            np.asarray(ranged.low, dtype=np.float64),
            np.asarray(ranged.high, dtype=np.float64),
        )


def _six(stats, xp):
    """(count, mean, m2, mean_residual, low, high) of GaussianStats as float64 arrays (ranges reconstructed if absent)."""
    n, mean, m2, resid, low, high = stats.ranged()
    mean = xp.asarray(mean, dtype=xp.float64)
    return (
        xp.asarray(n, dtype=xp.float64),
        mean,
        xp.asarray(m2, dtype=xp.float64),
        xp.broadcast_to(xp.asarray(resid, dtype=xp.float64), mean.shape),
        xp.asarray(low, dtype=xp.float64),
        xp.asarray(high, dtype=xp.float64),
    )


def _two_sum(a, b):
    """Knuth's error-free sum: ``s + err == a + b`` exactly, ``s = fl(a + b)``.

    (Where XLA contracts the computation of ``b`` into a fused multiply-add, the pair
    still represents ``a + b`` to rounding in ``err``, as ``|b| << |a|`` here.)
    """
    s = a + b
    b_virtual = s - a
    return s, (a - (s - b_virtual)) + (b - b_virtual)


def _chan_merge(a, b, xp):
    """Chan et al.'s pairwise update on (count, mean, m2, mean_residual, low, high), numpy or jax.numpy."""
    n_a, m_a, s_a, r_a, lo_a, hi_a = a
    n_b, m_b, s_b, r_b, lo_b, hi_b = b
    n = n_a + n_b
    safe = xp.where(n != 0, n, 1.0)  # negative weights: a downdate (bayesnb.analysis.loo)
    share = (n_b / safe)[:, None]
    # m_b - m_a is exact when the means are within a factor 2 (Sterbenz), the case
    # where it cancels; the residuals restore the digits the rounded means lost.
    delta = (m_b - m_a) + (r_b - r_a)
    mean, resid = _two_sum(m_a, r_a + share * delta)
    # An empty side must not move the mean: its stored mean is a placeholder zero.
    for keep, m_k, r_k in (((n_a != 0)[:, None], m_b, r_b), ((n_b != 0)[:, None], m_a, r_a)):
        mean = xp.where(keep, mean, m_k)
        resid = xp.where(keep, resid, r_k)
    m2 = s_a + s_b + (n_a * share[:, 0])[:, None] * delta * delta
    return (n, mean, m2, resid) + merge_range(n_a[:, None], lo_a, hi_a, n_b[:, None], lo_b, hi_b, xp)


# Rows per chunk of the statistics pass: a chunk of (rows x features) doubles stays in
# cache between the sweep for the means and the sweep for the squared deviations, so X
# is read from memory once. Full chunks run a compiled JAX kernel (one compiled shape per
# number of features and classes); a remainder shorter than a chunk, and small data,
# run the same update in numpy, which compiles nothing.
_STATS_CHUNK_ENTRIES = 1 << 18


def _segment_sum(values, y, n_classes, xp):
    if xp is np:
        onehot = (y[:, None] == np.arange(n_classes)[None, :]).astype(np.float64)
        # einsum, not BLAS: a threaded BLAS call on these small, skinny products costs
        # milliseconds of thread start-up on a loaded machine.
        return np.einsum("nc,n...->c...", onehot, values)
    import jax

    return jax.ops.segment_sum(values, y, n_classes)


def _first_rows(y, n_classes, xp):
    """Index of the first row of each class (an arbitrary valid row for absent classes)."""
    n = y.shape[0]
    if xp is np:
        first = np.full(n_classes, n - 1, dtype=np.intp)
        np.minimum.at(first, y, np.arange(n))
        return first
    import jax

    return xp.minimum(jax.ops.segment_min(xp.arange(n), y, n_classes), n - 1)


def _segment_extrema(X, y, w, n_classes, xp):
    """Smallest and largest value of every feature per class over the rows of nonzero weight (+-inf where none)."""
    counted = (w != 0)[:, None]
    if xp is np:
        low = np.full((n_classes, X.shape[1]), np.inf)
        high = np.full((n_classes, X.shape[1]), -np.inf)
        order = np.argsort(y, kind="stable")
        keep = order[counted[order, 0]]
        if keep.size:
            ys = y[keep]
            starts = np.flatnonzero(np.r_[True, ys[1:] != ys[:-1]])
            rows = X[keep]
            low[ys[starts]] = np.minimum.reduceat(rows, starts, axis=0)
            high[ys[starts]] = np.maximum.reduceat(rows, starts, axis=0)
        return low, high
    import jax

    low = jax.ops.segment_min(xp.where(counted, X, xp.inf), y, n_classes)
    high = jax.ops.segment_max(xp.where(counted, X, -xp.inf), y, n_classes)
    return low, high


def _gaussian_chunk(X, y, w, n_classes, xp):
    """Statistics (count, mean, m2, mean_residual, low, high) of one chunk of rows."""
    count = _segment_sum(w, y, n_classes, xp)
    safe = xp.where(count != 0, count, 1.0)[:, None]
    # Everything is computed on deviations from one row of the class (exact, by
    # Sterbenz's lemma, when the data sit far from 0), so every rounding error below is
    # relative to the spread of the data, not to its magnitude. That also makes the
    # result indifferent to XLA contracting products into fused multiply-adds.
    ref = X[_first_rows(y, n_classes, xp)]
    d = X - ref[y]
    mean = _segment_sum(w[:, None] * d, y, n_classes, xp) / safe
    dev = d - mean[y]
    # Corrected two-pass (Bjorck): the rounding error e of the first-pass mean adds
    # N e^2 to the sum of squares; the first-order sum of deviations removes it.
    wdev = w[:, None] * dev
    resid = _segment_sum(wdev, y, n_classes, xp)
    m2 = _segment_sum(wdev * dev, y, n_classes, xp)
    correction = resid / safe
    hi, low = _two_sum(ref, mean + correction)
    m2 = xp.maximum(m2 - resid * correction, 0.0)
    smallest, largest = _placeholder_range(count[:, None], *_segment_extrema(X, y, w, n_classes, xp), xp)
    return count, hi, m2, low, smallest, largest


def _gaussian_update(state, X, y, w, xp):
    """Merge the statistics of one chunk of rows into ``state`` (count, mean, m2, mean_residual)."""
    return _chan_merge(state, _gaussian_chunk(X, y, w, state[0].shape[0], xp), xp)


_gaussian_jit = None


def _gaussian_kernels():
    """The compiled chunk statistics and merge (one compilation per shape)."""
    global _gaussian_jit
    if _gaussian_jit is None:
        import jax
        import jax.numpy as jnp

        _gaussian_jit = (
            jax.jit(lambda X, y, w, n_classes: _gaussian_chunk(X, y, w, n_classes, jnp), static_argnums=3),
            jax.jit(lambda a, b: _chan_merge(a, b, jnp)),
        )
    return _gaussian_jit


def gaussian_stats(X, y_index, n_classes, sample_weight=None):
    r"""Weighted class counts, means and centred sums of squares of dense real data.

    One pass over ``X`` in row chunks: each chunk's per-class means and centred sums of
    squares are computed in two sweeps over the (cached) chunk (the corrected two-pass
    algorithm) and merged into the running totals with :meth:`GaussianStats.merge`'s
    update, so the result keeps its precision however far the data sit from the origin.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Dense, finite real values.
    y_index : int ndarray of shape (n_samples,)
        Class index of each row, in ``range(n_classes)``.
    n_classes : int
    sample_weight : ndarray of shape (n_samples,), optional
        Non-negative weights; a weight ``w`` counts like ``w`` copies of the row.

    Returns
    -------
    GaussianStats

    Raises
    ------
    TypeError
        If ``X`` is sparse.
    ValueError
        If ``X`` or ``sample_weight`` contains NaN or infinity.
    """
    if sp.issparse(X):
        raise TypeError("gaussian_stats needs dense data; got a sparse matrix (call .toarray())")
    X = np.ascontiguousarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-d (n_samples, n_features), got shape {X.shape}")
    y_index = np.asarray(y_index, dtype=np.int32)
    n, n_features = X.shape
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    chunk = 1 << max(0, (_STATS_CHUNK_ENTRIES // max(n_features, 1)).bit_length() - 1)
    n_full = (n // chunk) * chunk
    state = (np.zeros(n_classes),) + tuple(np.zeros((n_classes, n_features)) for _ in range(5))
    if n_full:
        from bayesnb.core._x64 import enable_x64
        from bayesnb.core.kernels import map_threads, release_host_arguments

        chunk_stats, merge = _gaussian_kernels()
        with enable_x64():
            # The chunks' statistics are independent (computed on threads when there are
            # several CPUs: XLA releases the GIL); they are merged in row order, so the
            # result does not depend on the number of threads.
            parts = map_threads(
                lambda i: chunk_stats(X[i : i + chunk], y_index[i : i + chunk], w[i : i + chunk], n_classes),
                range(0, n_full, chunk),
                x64=True,
            )
            for part in parts:
                state = merge(state, part)
            state = tuple(np.asarray(a, dtype=np.float64) for a in state)
            del parts
        release_host_arguments()
    if n_full < n:
        with np.errstate(all="ignore"):
            state = _gaussian_update(state, X[n_full:], y_index[n_full:], w[n_full:], np)
    out = GaussianStats(*(np.asarray(a, dtype=np.float64) for a in state))
    if not all(np.all(np.isfinite(a)) for a in out):
        _raise_non_finite("gaussian_stats", X, w)
    return out


__all__ += ["GaussianStats", "gaussian_stats"]


# ----------------------------------------------------------------------------- unobserved entries
#
# A mask is None or a bool array (dense, or a scipy sparse matrix with a stored 1) of
# shape (n_samples, n_features), True at the entries that are NOT observed; the data
# hold 0 there. A feature-wise family leaves an unobserved x_ij out of the statistics
# of cell (c, j): its statistics then carry the per-cell observed weight
#
#     N_cj = sum_{i: y_i = c, x_ij observed} w_i
#
# instead of one N_c for every feature (N_c still counts every row: it feeds the class
# posterior). Each (class, feature) cell is then its own conjugate model: ``cells()``
# views the statistics as C*F "classes" of one feature, which the family's ordinary
# functions update (see :mod:`bayesnb.core.families._mask`).


def _every_cell(class_count, like):
    """:math:`N_{cj} = N_c` for every feature: the observed weight of fully observed rows."""
    n = np.asarray(class_count, dtype=np.float64)
    return np.broadcast_to(n[:, None], np.shape(like)).copy()


def dense_mask(mask):
    """A mask as a dense bool array of shape (n_samples, n_features)."""
    return mask.toarray().astype(bool) if sp.issparse(mask) else np.asarray(mask, dtype=bool)


def missing_columns(mask):
    """Sorted indices of the features unobserved in at least one row of ``mask``."""
    if sp.issparse(mask):
        return np.unique(sp.csr_matrix(mask).indices)
    return np.flatnonzero(np.asarray(mask, dtype=bool).any(axis=0))


def observed_rows(mask, j):
    """Sorted indices of the rows of ``mask`` that observe feature ``j``."""
    if sp.issparse(mask):
        col = sp.csr_matrix(mask)[:, [j]].toarray().ravel().astype(bool)
    else:
        col = np.asarray(mask, dtype=bool)[:, j]
    return np.flatnonzero(~col)


def zero_unobserved(X, mask):
    """``X`` with 0 at the unobserved entries (a new array; the values there are ignored).

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features)
    mask : bool ndarray or sparse matrix of shape (n_samples, n_features)

    Returns
    -------
    ndarray, or CSR matrix when ``X`` is sparse
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        hidden = sp.csr_matrix(X.multiply(sp.csr_matrix(mask, dtype=bool) if sp.issparse(mask) else dense_mask(mask)))
        out = sp.csr_matrix(X - hidden)
        out.eliminate_zeros()
        return out
    X = np.asarray(X)
    return np.where(dense_mask(mask), np.zeros((), X.dtype), X)


def observed_weight(mask, y_index, n_classes, sample_weight=None):
    r""":math:`N_{cj}`: the weight of the rows of class ``c`` that observe feature ``j``.

    Parameters
    ----------
    mask : bool ndarray or sparse matrix of shape (n_samples, n_features)
        True at the unobserved entries.
    y_index : int ndarray of shape (n_samples,)
    n_classes : int
    sample_weight : ndarray of shape (n_samples,), optional

    Returns
    -------
    ndarray of shape (n_classes, n_features)
    """
    if not sp.issparse(mask):
        return count_stats((~np.asarray(mask, dtype=bool)).astype(np.float64), y_index, n_classes, sample_weight).feature_count
    # A sparse mask (sparse data): its complement would be dense, so subtract instead.
    n = np.bincount(y_index, weights=sample_weight, minlength=n_classes).astype(np.float64)
    unobserved = count_stats(sp.csr_matrix(mask).astype(np.float64), y_index, n_classes, sample_weight).feature_count
    return np.maximum(n[:, None] - unobserved, 0.0)


def with_observed(compute, X, y_index, n_classes, sample_weight=None, mask=None):
    """``compute(X, y_index, n_classes, sample_weight)``, per cell when ``mask`` is given.

    For statistics that are sums of per-entry terms vanishing at 0 (feature totals,
    log-factorials), the statistics of the rows with 0 at the unobserved entries
    (:func:`zero_unobserved`) leave those entries out; the per-cell observed weight
    :math:`N_{cj}` is added (``stats.masked()``). ``mask=None`` returns ``compute``'s
    statistics as they are.
    """
    if mask is None:
        return compute(X, y_index, n_classes, sample_weight)
    stats = compute(zero_unobserved(X, mask), y_index, n_classes, sample_weight)
    return stats.masked()._replace(observed_count=observed_weight(mask, y_index, n_classes, sample_weight))


def _namespace(*arrays):
    """NumPy for concrete statistics, ``jax.numpy`` where any is a JAX array or tracer.

    The masked statistics' :meth:`cells` run inside the traced log evidence when a prior
    is learned from the evidence (its gradient in the hyperparameters), and on NumPy
    arrays everywhere else.
    """
    jax = sys.modules.get("jax")
    if jax is not None and any(isinstance(a, jax.Array) for a in arrays):
        import jax.numpy as jnp

        return jnp
    return np


class MaskedCountStats(NamedTuple):
    r"""Count statistics with per-cell observed weights (Bernoulli with unobserved entries).

    Attributes
    ----------
    class_count : ndarray of shape (n_classes,)
        :math:`N_c`, every row of the class.
    feature_count : ndarray of shape (n_classes, n_features)
        :math:`T_{cj}` over the rows that observe feature :math:`j`.
    observed_count : ndarray of shape (n_classes, n_features)
        :math:`N_{cj}`, the weight of the rows of class :math:`c` that observe :math:`j`.
    """

    class_count: np.ndarray
    feature_count: np.ndarray
    observed_count: np.ndarray

    def merge(self, other):
        """Statistics of the union of two disjoint sets of rows."""
        return MaskedCountStats(*(np.asarray(a) + np.asarray(b) for a, b in zip(self, other)))

    def masked(self):
        return self

    def cells(self):
        """The (class, feature) cells as C*F classes of one feature: :class:`CountStats`."""
        xp = _namespace(self.observed_count, self.feature_count)
        return CountStats(
            xp.asarray(self.observed_count, dtype=xp.float64).ravel(),
            xp.asarray(self.feature_count, dtype=xp.float64).reshape(-1, 1),
        )


class MaskedPoissonStats(NamedTuple):
    r"""Poisson statistics with per-cell observed weights (``log_factorial`` over observed entries).

    Attributes
    ----------
    class_count, feature_count, log_factorial
        As :class:`PoissonStats`, over the observed entries.
    observed_count : ndarray of shape (n_classes, n_features)
        :math:`N_{cj}`.
    """

    class_count: np.ndarray
    feature_count: np.ndarray
    log_factorial: np.ndarray
    observed_count: np.ndarray

    def merge(self, other):
        """Statistics of the union of two disjoint sets of rows."""
        return MaskedPoissonStats(*(np.asarray(a) + np.asarray(b) for a, b in zip(self, other)))

    def masked(self):
        return self

    def cells(self):
        """The (class, feature) cells as C*F classes of one feature: :class:`PoissonStats`."""
        xp = _namespace(self.observed_count, self.feature_count, self.log_factorial)
        observed = xp.asarray(self.observed_count, dtype=xp.float64)
        # Only the total of the base-measure term enters the evidence.
        log_factorial = xp.concatenate([xp.reshape(xp.sum(self.log_factorial), (1,)), xp.zeros(observed.size - 1)])
        return PoissonStats(observed.ravel(), xp.asarray(self.feature_count, dtype=xp.float64).reshape(-1, 1), log_factorial)


class MaskedGaussianStats(NamedTuple):
    r"""Diagonal-Gaussian statistics per cell, over the rows that observe each feature.

    Attributes
    ----------
    class_count : ndarray of shape (n_classes,)
        :math:`N_c`, every row of the class.
    observed_count : ndarray of shape (n_classes, n_features)
        :math:`N_{cj}`.
    mean, m2, mean_residual : ndarrays of shape (n_classes, n_features)
        As :class:`GaussianStats`, over the observed rows of each cell.
    low, high : ndarrays of shape (n_classes, n_features) or None
        As :class:`GaussianStats`, over the observed values of each cell.
    """

    class_count: np.ndarray
    observed_count: np.ndarray
    mean: np.ndarray
    m2: np.ndarray
    mean_residual: np.ndarray
    low: np.ndarray | None = None
    high: np.ndarray | None = None

    FIELD_VERSIONS = {"low": 2, "high": 2}

    def merge(self, other):
        """Statistics of the union of two disjoint sets of rows (Chan's update, per cell)."""
        shape = np.shape(self.mean)
        merged = self.cells().merge(other.cells())
        return MaskedGaussianStats(
            np.asarray(self.class_count) + np.asarray(other.class_count),
            merged.class_count.reshape(shape),
            *(np.asarray(a).reshape(shape) for a in merged[1:]),
        )

    def masked(self):
        return self

    def ranged(self):
        """These statistics with ``low`` and ``high`` (reconstructed where absent: :func:`range_from_sums`)."""
        if self.low is not None and self.high is not None:
            return self
        return self._replace(**dict(zip(("low", "high"), range_from_sums(self.observed_count, self.mean, self.m2))))

    def check_consistent(self):
        """Raise ``ValueError`` unless the ranges agree with the sums as ``fit`` makes them (:func:`check_range_consistent`)."""
        check_range_consistent(self.observed_count, self.mean, self.m2, self.low, self.high)

    def cells(self):
        """The (class, feature) cells as C*F classes of one feature: :class:`GaussianStats`."""
        shape = np.shape(self.mean)
        ranged = self.ranged()
        xp = _namespace(*ranged)
        return GaussianStats(
            xp.asarray(self.observed_count, dtype=xp.float64).ravel(),
            *(
                xp.asarray(a, dtype=xp.float64).reshape(-1, 1)
                for a in (self.mean, self.m2, xp.broadcast_to(self.mean_residual, shape), ranged.low, ranged.high)
            ),
        )

    def columns(self, cols):
        """Plain :class:`GaussianStats` of the features ``cols``, which share one :math:`N_{cj}`."""
        ranged = self.ranged()
        return GaussianStats(
            np.asarray(self.observed_count, dtype=np.float64)[:, cols[0]],
            np.asarray(self.mean)[:, cols],
            np.asarray(self.m2)[:, cols],
            np.asarray(self.mean_residual)[:, cols],
            np.asarray(ranged.low)[:, cols],
            np.asarray(ranged.high)[:, cols],
        )


def masked_gaussian_stats(X, mask, y_index, n_classes, sample_weight=None):
    """:class:`MaskedGaussianStats` of dense rows whose entries at ``mask`` are unobserved.

    The features observed in every row share one pass of :func:`gaussian_stats`; each
    other feature is summarised over the rows that observe it.
    """
    data = np.asarray(X, dtype=np.float64)
    w = sample_weight
    n_features = data.shape[1]
    missing = missing_columns(mask)
    clean = np.setdiff1d(np.arange(n_features), missing)
    n = np.bincount(y_index, weights=w, minlength=n_classes).astype(np.float64)
    observed, mean, m2, resid, low, high = (np.zeros((n_classes, n_features)) for _ in range(6))
    groups = [(clean, np.arange(data.shape[0]))] if clean.size else []
    groups += [(np.array([j]), observed_rows(mask, j)) for j in missing]
    for cols, rows in groups:
        if not rows.size:
            continue  # a feature observed in no row of this batch adds nothing
        part = gaussian_stats(data[np.ix_(rows, cols)], y_index[rows], n_classes, None if w is None else w[rows])
        observed[:, cols] = np.asarray(part.class_count)[:, None]
        mean[:, cols], m2[:, cols] = part.mean, part.m2
        resid[:, cols] = np.broadcast_to(part.mean_residual, part.mean.shape)
        low[:, cols], high[:, cols] = part.low, part.high
    return MaskedGaussianStats(n, observed, mean, m2, resid, low, high)


def is_masked(stats):
    """Whether ``stats`` carry per-cell observed weights (``observed_count``).

    Parameters
    ----------
    stats : statistics pytree or None

    Returns
    -------
    bool
    """
    return "observed_count" in getattr(type(stats), "_fields", ())


def as_masked(stats):
    """``stats`` in their per-cell form where the type has one (``stats.masked()``), else as they are."""
    return stats.masked() if hasattr(stats, "masked") else stats


__all__ += [
    "MaskedCountStats",
    "MaskedPoissonStats",
    "MaskedGaussianStats",
    "observed_weight",
    "with_observed",
    "zero_unobserved",
    "masked_gaussian_stats",
    "is_masked",
    "as_masked",
    "dense_mask",
    "missing_columns",
    "observed_rows",
]


# ----------------------------------------------------------------------------- class labels only


class LabelStats(NamedTuple):
    """Weighted class counts alone: a shard of a :class:`~bayesnb.MixedNB` (whose blocks carry their own shards).

    Attributes
    ----------
    class_count : ndarray of shape (n_classes,)
        :math:`N_c = \\sum_{i: y_i = c} w_i`.
    """

    class_count: np.ndarray

    def merge(self, other):
        """Statistics of the union of two disjoint sets of rows."""
        return LabelStats(np.asarray(self.class_count) + np.asarray(other.class_count))


class ProductStats(NamedTuple):
    """Statistics of a product of families (:mod:`bayesnb.core.families.product`): the class counts and each block's own.

    Attributes
    ----------
    class_count : ndarray of shape (n_classes,)
    blocks : dict
        Block name → the block family's statistics.
    """

    class_count: np.ndarray
    blocks: dict

    # Persistence checks class_count as a table with the class axis first; the blocks
    # are the statistics of the block estimators, saved and checked as theirs.
    TABLE_FIELDS = ("class_count",)
    NESTED_FIELDS = ("blocks",)

    def merge(self, other):
        """Statistics of the union of two disjoint sets of rows, block by block."""
        if set(self.blocks) != set(other.blocks):
            raise ValueError(f"cannot merge statistics of blocks {sorted(self.blocks)} and {sorted(other.blocks)}")
        blocks = {}
        for name, mine in self.blocks.items():
            theirs = other.blocks[name]
            if is_masked(mine) or is_masked(theirs):
                # Batches with and without unobserved entries merge in the per-cell form.
                mine, theirs = as_masked(mine), as_masked(theirs)
            blocks[name] = mine.merge(theirs)
        return ProductStats(np.asarray(self.class_count) + np.asarray(other.class_count), blocks)


__all__ += ["LabelStats", "ProductStats"]
