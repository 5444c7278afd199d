"""Normalising joint log-probabilities into class posteriors, without NaN."""

from __future__ import annotations

import numpy as np

__all__ = ["log_normalize"]


def log_normalize(joint, fallback):
    r"""Turn joint log-probabilities into log class posteriors.

    Computes :math:`\log p(c \mid x) = j_c - \log\sum_k e^{j_k}` stably (max shift). A row
    whose joint is ``-inf`` for every class has probability zero under the model, so its
    class posterior is 0/0; such rows get ``fallback`` (the log class proportions)
    instead of NaN, and are reported so the caller can warn.

    Parameters
    ----------
    joint : ndarray of shape (..., n_samples, n_classes)
    fallback : ndarray broadcastable to (..., 1, n_classes)
        Normalised log class proportions used for rows with zero likelihood.

    Returns
    -------
    log_proba : ndarray of shape (..., n_samples, n_classes)
    dead : bool ndarray of shape (..., n_samples)
        Rows that received the fallback.
    """
    joint = np.asarray(joint, dtype=np.float64)
    top = joint.max(axis=-1)
    dead = np.isneginf(top)
    if dead.any():
        joint = np.where(dead[..., None], np.broadcast_to(fallback, joint.shape), joint)
        top = joint.max(axis=-1)
    # The same arithmetic as ``shifted - log(sum(exp(shifted)))`` with one fresh array
    # (the result) and one scratch array, instead of a defensive copy of ``joint`` and
    # three temporaries: the caller's array is never modified.
    out = np.subtract(joint, top[..., None])
    scratch = np.exp(out)
    lse = np.log(scratch.sum(axis=-1, keepdims=True))
    out -= lse
    return out, dead
