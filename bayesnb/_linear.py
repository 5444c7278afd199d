r"""Products of data with log-parameter matrices, on dense or CSR data.

Naive Bayes log-likelihoods are linear in (a transform of) the data:
:math:`\log p(x \mid c) = \sum_j x_j \log\theta_{cj}`. Two details make the product
delicate and are handled once here for every family:

* a zero probability gives :math:`\log\theta = -\infty`, and a dense product then
  evaluates :math:`0 \cdot (-\infty) = \mathrm{NaN}`. The convention of probability
  (:math:`0 \log 0 = 0`) is applied instead: only features actually present make a row
  impossible;
* sparse data is never densified.

The data product runs on numpy/scipy (BLAS and scipy's sparse kernels), which on CPU
are faster than a JAX scatter/gather; the parameter matrices come from the JAX core.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["matmul", "log_linear", "row_sums"]


def matmul(X, W):
    """``X @ W`` as a dense float64 ndarray, for dense or sparse ``X`` and dense ``W``."""
    out = X @ W
    return np.asarray(out, dtype=np.float64)


def row_sums(X):
    """Row totals of dense or sparse ``X`` as a 1-d float64 array."""
    return np.asarray(X.sum(axis=1), dtype=np.float64).ravel()


def _split(log_w):
    log_w = np.asarray(log_w, dtype=np.float64)
    impossible = np.isneginf(log_w)
    return np.where(impossible, 0.0, log_w), impossible.astype(np.float64)


def log_linear(X, log_w, bias=None, log_w_off=None):
    r"""Compute :math:`X \log W^\top + b` with :math:`0 \cdot (-\infty) := 0`.

    With ``log_w_off`` the data are binary and the product is the Bernoulli form
    :math:`\sum_j x_j \log W_{cj} + (1 - x_j) \log W^{\mathrm{off}}_{cj}`, computed as
    :math:`X (\log W - \log W^{\mathrm{off}})^\top + \sum_j \log W^{\mathrm{off}}_{cj}`
    so that sparse data stay sparse.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        Non-negative values (0/1 when ``log_w_off`` is given).
    log_w : ndarray of shape (n_classes, n_features)
        Log weights, possibly ``-inf``.
    bias : ndarray of shape (n_classes,), optional
    log_w_off : ndarray of shape (n_classes, n_features), optional
        Log weights of the absent value of binary features.

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
        ``-inf`` exactly where a row has a feature value of probability zero.
    """
    fin, inf = _split(log_w)
    offset = np.zeros(fin.shape[0])
    if log_w_off is not None:
        fin_off, inf_off = _split(log_w_off)
        fin, inf = fin - fin_off, inf - inf_off
        offset, hit_offset = fin_off.sum(axis=1), inf_off.sum(axis=1)
    out = matmul(X, fin.T) + offset
    if inf.any():
        hits = matmul(X, inf.T)
        if log_w_off is not None:
            hits += hit_offset
        out[hits > 0] = -np.inf
    elif log_w_off is not None and hit_offset.any():
        out[:, hit_offset > 0] = -np.inf
    if bias is not None:
        out += np.asarray(bias, dtype=np.float64)
    return out
