r"""Sufficient statistics: additive pytrees computed from dense or CSR data.

Every statistic here is a weighted sum over rows, so fitting on all rows, fitting in
chunks with ``partial_fit`` and merging the statistics of shards (e.g. Dask partitions)
give the same numbers up to floating-point summation order. A row with weight ``w``
counts exactly like ``w`` copies of that row.

Notation: :math:`N_c = \sum_{i: y_i = c} w_i` and
:math:`T_{cj} = \sum_{i: y_i = c} w_i x_{ij}`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

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
    Y, w = _class_weights(y_index, n_classes, sample_weight)
    class_count = np.bincount(y_index, weights=w, minlength=n_classes).astype(np.float64)
    # (X.T @ Y).T: one pass over the non-zeros of X, whatever its format.
    feature_count = (X.T @ Y).T
    if sp.issparse(feature_count):
        feature_count = feature_count.toarray()
    return CountStats(class_count, np.ascontiguousarray(feature_count, dtype=np.float64))


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
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    class_count = np.bincount(y_index, weights=w, minlength=n_classes).astype(np.float64)
    cell = (y_index[:, None] * n_features + np.arange(n_features)[None, :]) * k_max + X
    counts = np.bincount(
        cell.ravel(), weights=np.repeat(w, n_features), minlength=n_classes * n_features * k_max
    )
    return CategoricalStats(class_count, counts.reshape(n_classes, n_features, k_max))


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
