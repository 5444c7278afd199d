r"""Unobserved entries in the families: the mechanism the family modules share.

A *mask* is None or a bool array (dense or scipy sparse) of shape (n_samples,
n_features), True at the unobserved entries (the data hold some filler there, ignored).

*Feature-wise families* (each feature its own factor of the likelihood and its own
conjugate prior) integrate an unobserved :math:`x_{ij}` out exactly by dropping its
factor. Their statistics become per cell (``observed_count`` :math:`N_{cj}`, see
:func:`bayesnb.core.stats.with_observed`), and each (class, feature) cell is then the
family's own model with one feature: :func:`cellwise` applies the family's ordinary
``posterior`` / ``point`` / ``log_evidence`` to the C*F cells viewed as classes, and
:func:`feature_wise` sums the family's ordinary likelihood over each row's observed
entries.

Families whose rows are not products over features refuse a mask in ``stats`` with
:class:`MaskRefused` and score partially observed rows by their own marginals.
"""

from __future__ import annotations

import functools
import re

import numpy as np

from bayesnb.core.stats import dense_mask, is_masked, missing_columns, observed_rows

__all__ = [
    "MaskRefused",
    "accepts_mask",
    "cellwise",
    "columns",
    "feature_wise",
    "from_cells",
    "masked_log_likelihood",
    "masked_log_predictive",
    "n_classes_of",
    "to_cells",
]


class MaskRefused(ValueError):
    """A family's statistics cannot leave the masked entries out (no conjugate update exists).

    The message completes a sentence whose subject is the model, e.g. ``"MultinomialNB"``
    + ``" "`` + message.
    """


@functools.lru_cache(maxsize=None)
def accepts_mask(family):
    """Whether ``family.stats`` takes a mask (False where it refuses with :class:`MaskRefused`).

    Asked of one row whose only entry is unobserved (its value is ignored).
    """
    try:
        family.stats(np.zeros((1, 1), dtype=np.int64), np.zeros(1, dtype=np.intp), 1, mask=np.ones((1, 1), dtype=bool))
    except MaskRefused:
        return False
    return True


def to_cells(tree):
    """Arrays (C, F, ...) of a pytree as (C*F, 1, ...); lower-dimensional leaves unchanged."""
    return type(tree)(*(_cell_leaf(v) for v in tree))


def _array(v):
    # JAX arrays (and tracers, for jax.grad of the evidence in the hyperparameters) stay
    # JAX arrays: only their shape is changed.
    return v if hasattr(v, "reshape") and hasattr(v, "ndim") else np.asarray(v)


def _cell_leaf(v):
    a = _array(v)
    return a.reshape((a.shape[0] * a.shape[1], 1) + a.shape[2:]) if a.ndim >= 2 else v


def from_cells(tree, shape):
    """Inverse of :func:`to_cells`: arrays (C*F, 1, ...) back to ``shape + (...)``."""
    return type(tree)(*(_uncell_leaf(v, shape) for v in tree))


def _uncell_leaf(v, shape):
    a = _array(v)
    return a.reshape(tuple(shape) + a.shape[2:]) if a.ndim >= 2 else v


def _cell_index_message(err, shape):
    """Translate 'class index k, feature 0' of the cell view into (class, feature)."""

    def repl(match):
        c, j = divmod(int(match.group(1)), shape[1])
        return f"class index {c}, feature {j}"

    text = re.sub(r"class index (\d+), feature 0", repl, str(err))
    text = re.sub(
        r"class index (\d+) has no training rows",
        lambda m: "class index {}, feature {} has no training rows observing it".format(*divmod(int(m.group(1)), shape[1])),
        text,
    )
    return ValueError(text)


def cellwise(fn):
    """``fn(prior, stats, ...)`` that also accepts per-cell statistics (:func:`bayesnb.core.stats.is_masked`).

    With per-cell statistics ``fn`` is applied to the cells as classes of one feature
    (``stats.cells()``, the prior through :func:`to_cells`); a named-tuple result is
    reshaped back to (n_classes, n_features, ...), a scalar is returned as is. Errors
    naming a cell's class index are translated into its (class, feature). Ordinary
    statistics go to ``fn`` untouched.
    """

    @functools.wraps(fn)
    def wrapped(prior, stats, *args, **kwargs):
        if not is_masked(stats):
            return fn(prior, stats, *args, **kwargs)
        shape = np.shape(stats.observed_count)
        try:
            out = fn(to_cells(prior), stats.cells(), *args, **kwargs)
        except ValueError as err:
            raise _cell_index_message(err, shape) from None
        return from_cells(out, shape) if hasattr(out, "_fields") else out

    return wrapped


def columns(tree, cols):
    """Parameters of the features ``cols`` (the feature axis is axis 1 of every array leaf)."""
    return type(tree)(*(np.asarray(v)[:, cols] if np.ndim(v) >= 2 else v for v in tree))


def feature_wise(evaluate, X, mask, n_classes):
    """Sum of ``evaluate(cols, X[:, cols])`` over the observed entries of each row.

    Parameters
    ----------
    evaluate : callable ``(cols, X_cols) -> (n_rows, n_classes)``
        The family's likelihood of rows restricted to the features ``cols``.
    X : ndarray or CSR matrix of shape (n_samples, n_features)
    mask : bool ndarray or sparse matrix of shape (n_samples, n_features)
        True at the unobserved entries.
    n_classes : int

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
        A row with every entry unobserved scores 0 (log 1) under every class.
    """
    n_features = X.shape[1]
    missing = missing_columns(mask)
    clean = np.setdiff1d(np.arange(n_features), missing)
    out = np.zeros((X.shape[0], n_classes))
    if clean.size:
        out += evaluate(clean, X[:, clean])
    for j in missing:
        rows = observed_rows(mask, j)
        if rows.size:
            out[rows] += evaluate(np.array([j]), X[rows][:, [j]])
    return out


def n_classes_of(tree):
    """The class axis length of a parameters / posterior pytree (axis 0 of its first array leaf)."""
    for v in tree:
        if np.ndim(v) >= 1:
            return np.shape(v)[0]
    raise ValueError("no array in the parameters")


def masked_log_likelihood(log_likelihood):
    """The protocol's ``log_likelihood(params, X, prior=None, mask=None)`` of a feature-wise family.

    ``log_likelihood(params, X)`` is the family's own; with a mask each row's
    log-likelihood is that of its observed entries (:func:`feature_wise`).
    """

    def wrapped(params, X, prior=None, mask=None):
        if mask is None:
            return log_likelihood(params, X)
        return feature_wise(lambda cols, Xc: log_likelihood(columns(params, cols), Xc), X, mask, n_classes_of(params))

    wrapped.__doc__ = log_likelihood.__doc__
    return wrapped


def masked_log_predictive(log_predictive):
    """The protocol's ``log_predictive(posterior, X, mask=None)`` of a feature-wise family."""

    def wrapped(post, X, mask=None):
        if mask is None:
            return log_predictive(post, X)
        return feature_wise(lambda cols, Xc: log_predictive(columns(post, cols), Xc), X, mask, n_classes_of(post))

    wrapped.__doc__ = log_predictive.__doc__
    return wrapped


def add_per_feature(out, terms, mask=None):
    """``out`` (n_samples, n_classes) plus, for each row, the sum of ``terms`` (n_classes, n_features) over its observed features.

    The correction that turns a plug-in log-likelihood into an expected one where the two
    differ by a term per (class, feature) (:func:`bayesnb.core.families.poisson.expected_log_likelihood`).
    """
    terms = np.asarray(terms, dtype=np.float64)
    if mask is None:
        return out + terms.sum(axis=-1)[None, :]
    return out + (~dense_mask(mask)).astype(np.float64) @ terms.T
