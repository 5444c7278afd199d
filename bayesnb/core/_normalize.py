"""Normalising joint log-probabilities into class posteriors, without NaN."""

from __future__ import annotations

import numpy as np

from bayesnb.core.kernels import map_threads, row_ranges

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
    fallback = np.asarray(fallback, dtype=np.float64)
    if joint.ndim == 2 and joint.shape[0] and joint.shape[1]:
        return _log_normalize_rows(joint, fallback)
    if joint.ndim > 2 and joint.size and fallback.ndim >= 2 and fallback.shape[-2] == 1:
        # Draws of class probabilities, (n_draws, n_samples, n_classes): one 2-d pass over
        # all the rows (no reduction along the short class axis), then the rows dead in
        # some draw get that draw's fallback, normalised as the 2-d path does it.
        lead, (n, n_classes) = joint.shape[:-2], joint.shape[-2:]
        out, dead = _log_normalize_rows(joint.reshape(-1, n_classes), np.zeros(n_classes))
        if dead.any():
            per = np.broadcast_to(fallback, lead + (1, n_classes)).reshape(-1, n_classes)
            which = np.flatnonzero(dead)
            out[which] = _log_normalize_rows(per[which // n], np.zeros(n_classes))[0]
        return out.reshape(joint.shape), dead.reshape(joint.shape[:-1])
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


# Rows per block of the 2-d path: a block's scratch stays in cache.
_BLOCK_ROWS = 4096


def _log_normalize_rows(joint, fallback):
    """The 2-d case, a block of rows at a time.

    Row maxima and sums over the few classes are taken as a running maximum / sum over
    the columns of the block (elementwise operations on whole columns): numpy's reduction
    along a short last axis pays a fixed cost per row, several times the arithmetic.
    """
    n, n_classes = joint.shape
    out = np.empty_like(joint)
    dead = np.zeros(n, dtype=bool)
    fallback = np.broadcast_to(fallback, (n_classes,))

    def rows(bounds):
        r_start, r_stop = bounds
        size = min(_BLOCK_ROWS, r_stop - r_start)
        top_buf, total_buf, scratch_buf = np.empty(size), np.empty(size), np.empty((size, n_classes))
        for r0 in range(r_start, r_stop, _BLOCK_ROWS):
            j = joint[r0 : min(r0 + _BLOCK_ROWS, r_stop)]
            m = j.shape[0]
            top, total, scratch, o = top_buf[:m], total_buf[:m], scratch_buf[:m], out[r0 : r0 + m]
            np.copyto(top, j[:, 0])
            for c in range(1, n_classes):
                np.maximum(top, j[:, c], out=top)
            gone = np.isneginf(top)
            if gone.any():
                dead[r0 : r0 + m] = gone
                j = np.where(gone[:, None], fallback, j)
                top[gone] = fallback.max()
            np.subtract(j, top[:, None], out=o)
            np.exp(o, out=scratch)
            np.copyto(total, scratch[:, 0])
            for c in range(1, n_classes):
                total += scratch[:, c]
            np.log(total, out=total)
            o -= total[:, None]

    # Large inputs: contiguous runs of blocks on threads (numpy's loops release the GIL);
    # every row is computed the same way whichever thread takes it.
    map_threads(rows, row_ranges(n, _BLOCK_ROWS))
    return out, dead
