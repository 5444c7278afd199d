"""Normalising joint log-probabilities into class posteriors, without NaN."""

from __future__ import annotations

import numpy as np

from bayesnb.core.kernels import map_threads, row_ranges

__all__ = ["log_normalize", "normalize_proba"]


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
        return _draws(joint, fallback, np.empty(joint.shape), False)
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


def _log_normalize_rows(joint, fallback, out=None, probabilities=False, entropy=None):
    r"""The 2-d case, a block of rows at a time.

    Row maxima and sums over the few classes are taken as a running maximum / sum over
    the columns of the block (elementwise operations on whole columns): numpy's reduction
    along a short last axis pays a fixed cost per row, several times the arithmetic.
    With ``probabilities`` the result is :math:`e^{j - m} / \sum_k e^{j_k - m}` (the
    exponential of the log form, to rounding) without a logarithm and a second
    exponential. ``out`` may be ``joint`` itself (each block is read before it is written).
    With ``entropy`` (shape (n,), probabilities only) each row's entropy
    :math:`-\sum_c p_c \log p_c = \log S - \sum_c e^{s_c} s_c / S` is written there, from
    the shifted joint :math:`s = j - m` and :math:`S = \sum_c e^{s_c}` at hand: a logarithm
    per row instead of one per entry (``scipy.special.entr`` on the probabilities).
    """
    if entropy is not None and not probabilities:
        # The entropy clips the shifted joint in place, which the log form still needs.
        raise ValueError("entropies are computed with the probabilities only")
    n, n_classes = joint.shape
    out = np.empty_like(joint) if out is None else out
    dead = np.zeros(n, dtype=bool)
    fallback = np.broadcast_to(fallback, (n_classes,))

    def rows(bounds):
        r_start, r_stop = bounds
        size = min(_BLOCK_ROWS, r_stop - r_start)
        top_buf, total_buf = np.empty(size), np.empty(size)
        keep = not probabilities or entropy is not None  # s is still needed after exp(s)
        scratch_buf = np.empty((size, n_classes)) if keep else None
        for r0 in range(r_start, r_stop, _BLOCK_ROWS):
            j = joint[r0 : min(r0 + _BLOCK_ROWS, r_stop)]
            m = j.shape[0]
            top, total, o = top_buf[:m], total_buf[:m], out[r0 : r0 + m]
            np.copyto(top, j[:, 0])
            for c in range(1, n_classes):
                np.maximum(top, j[:, c], out=top)
            gone = np.isneginf(top)
            if gone.any():
                dead[r0 : r0 + m] = gone
                j = np.where(gone[:, None], fallback, j)
                top[gone] = fallback.max()
            np.subtract(j, top[:, None], out=o)
            scratch = scratch_buf[:m] if keep else o
            np.exp(o, out=scratch)
            np.copyto(total, scratch[:, 0])
            for c in range(1, n_classes):
                total += scratch[:, c]
            if entropy is not None:
                h = entropy[r0 : r0 + m]
                # An impossible class (s = -inf, e^s = 0) adds 0 log 0 = 0: s is clipped to
                # the most negative float first (0 x -inf would be NaN).
                np.maximum(o, np.finfo(np.float64).min, out=o)
                np.multiply(scratch[:, 0], o[:, 0], out=h)
                for c in range(1, n_classes):
                    h += scratch[:, c] * o[:, c]
                h /= total
                np.subtract(np.log(total), h, out=h)
            if probabilities:
                np.divide(scratch, total[:, None], out=o)
            else:
                np.log(total, out=total)
                o -= total[:, None]

    # Large inputs: contiguous runs of blocks on threads (numpy's loops release the GIL);
    # every row is computed the same way whichever thread takes it.
    map_threads(rows, row_ranges(n, _BLOCK_ROWS))
    return out, dead


def normalize_proba(joint, fallback, out=None, entropy=None):
    r"""Class probabilities from joint log-probabilities: ``exp`` of :func:`log_normalize`, to rounding.

    :math:`p_c = e^{j_c - m} / \sum_k e^{j_k - m}` with :math:`m` the row maximum: one
    exponential per entry and no logarithm (the log form followed by ``np.exp`` takes two
    exponentials and a logarithm). Dead rows (``-inf`` for every class) get the
    normalised ``fallback``, as in :func:`log_normalize`.

    Parameters
    ----------
    joint : ndarray of shape (n_samples, n_classes) or (n_draws, n_samples, n_classes)
        Not modified, unless it is ``out``.
    fallback : ndarray broadcastable to (n_classes,), or of shape (n_draws, 1, n_classes)
        for draws (each draw's own log class proportions).
    out : ndarray of the shape of ``joint``, optional
        Where to write the probabilities; may be ``joint`` (computed in place) or a view
        with any strides (a block of rows of a larger array of draws).
    entropy : ndarray of shape ``joint.shape[:-1]``, optional
        Filled with each row's entropy :math:`-\sum_c p_c \log p_c` (nats), from the
        quantities of the normalisation (one logarithm per row, not per entry).

    Returns
    -------
    proba : ndarray of the shape of ``joint``
    dead : bool ndarray of shape ``joint.shape[:-1]``
    """
    joint = np.asarray(joint, dtype=np.float64)
    fallback = np.asarray(fallback, dtype=np.float64)
    out = np.empty(joint.shape) if out is None else out
    for name, arr, shape in (("out", out, joint.shape), ("entropy", entropy, joint.shape[:-1])):
        if arr is not None and arr.shape != shape:
            raise ValueError(f"normalize_proba: {name} has shape {arr.shape}, expected {shape}")
    n_classes = joint.shape[-1]
    if not joint.size:
        return out, np.zeros(joint.shape[:-1], dtype=bool)
    if joint.ndim == 2:
        return _log_normalize_rows(joint, np.broadcast_to(fallback, (1, n_classes))[0], out, True, entropy)
    return _draws(joint, fallback, out, True, entropy)


def _draws(joint, fallback, out, probabilities, entropy=None):
    """:func:`_log_normalize_rows` over draws, (..., n_samples, n_classes), into ``out``.

    Where ``joint`` and ``out`` are contiguous: one 2-d pass over all the rows of all the
    draws (no reduction along the short class axis), then the rows dead in some draw get
    that draw's fallback (``fallback`` broadcast to (..., 1, n_classes)), normalised as
    the 2-d path does it. Strided views (a block of rows out of every draw): one 2-d pass
    per draw, each with its own fallback. Every row is computed the same way either way.
    """
    lead, (n, n_classes) = joint.shape[:-2], joint.shape[-2:]
    per = np.broadcast_to(fallback, lead + (1, n_classes))
    flat_in, flat_out = _flat(joint), _flat(out)
    flat_h = None if entropy is None else _flat(entropy[..., None])
    if flat_in is not None and flat_out is not None and (entropy is None or flat_h is not None):
        flat_h = None if flat_h is None else flat_h[:, 0]
        _, dead = _log_normalize_rows(flat_in, np.zeros(n_classes), flat_out, probabilities, flat_h)
        if dead.any():
            which = np.flatnonzero(dead)
            h = None if flat_h is None else np.empty(which.size)
            rows = per.reshape(-1, n_classes)[which // n]
            flat_out[which] = _log_normalize_rows(rows, np.zeros(n_classes), None, probabilities, h)[0]
            if h is not None:
                flat_h[which] = h
        return out, dead.reshape(joint.shape[:-1])
    dead = np.zeros(joint.shape[:-1], dtype=bool)
    for idx in np.ndindex(*lead):
        h = None if entropy is None else entropy[idx]
        dead[idx] = _log_normalize_rows(joint[idx], per[idx][0], out[idx], probabilities, h)[1]
    return out, dead


def _flat(a):
    """``a`` as (rows, classes) without a copy, or None where its strides do not allow it."""
    if a.flags.c_contiguous:
        return a.reshape(-1, a.shape[-1])
    return None
