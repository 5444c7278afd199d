r"""Dirichlet posterior on the class proportions :math:`\pi`.

With :math:`\pi \sim \mathrm{Dir}(\beta)` and weighted class counts :math:`N_c`, the
posterior is :math:`\mathrm{Dir}(\beta + N)` and the posterior predictive of the next
label is :math:`p(y = c \mid D) = (N_c + \beta_c) / (N + \sum_k \beta_k)`, the posterior
mean. (It does not factor over classes: the Dirichlet lives on the simplex.)
"""

from __future__ import annotations

import numpy as np

from bayesnb.core.families import _dirichlet
from bayesnb.core.families._rows import generator
from bayesnb.core.priors import Dirichlet

__all__ = [
    "is_prior", "posterior", "point_log", "estimate_log", "left_out_log", "map_refusal", "class_words", "label_of",
    "log_evidence", "labels_log_evidence", "sample_log", "sample_labels",
]


def is_prior(class_prior):
    """Whether ``class_prior`` is a Dirichlet prior on the proportions (else fixed proportions).

    The layers that take either form (the numpyro model samples the proportions under a
    prior and conditions on fixed ones) ask here, so that the class of the prior is
    tested where it is defined.

    Parameters
    ----------
    class_prior : Dirichlet or array-like of shape (n_classes,)

    Returns
    -------
    bool
    """
    return isinstance(class_prior, Dirichlet)


def posterior(prior, class_count):
    """Conjugate update :math:`\\mathrm{Dir}(\\beta + N)`.

    Parameters
    ----------
    prior : Dirichlet
        Concentration of shape (n_classes,).
    class_count : ndarray of shape (n_classes,)

    Returns
    -------
    Dirichlet
    """
    return Dirichlet(np.asarray(prior.concentration) + np.asarray(class_count))


def point_log(prior, class_count, kind):
    r"""Log class proportions for one estimate.

    Parameters
    ----------
    prior : Dirichlet
    class_count : ndarray of shape (n_classes,)
    kind : {"mle", "map", "mean", "predictive"}
        ``"mle"``: :math:`N_c / N`; ``"map"``:
        :math:`(N_c + \beta_c - 1) / (N + \sum\beta - C)` (requires every
        :math:`\beta_c + N_c \ge 1`); ``"mean"`` and ``"predictive"`` (equal here):
        :math:`(N_c + \beta_c) / (N + \sum\beta)`.

    Returns
    -------
    ndarray of shape (n_classes,)
    """
    if kind == "mle":
        return np.asarray(_dirichlet.mle_log(class_count))
    post = posterior(prior, class_count).concentration
    if kind == "map":
        return np.asarray(_dirichlet.mode_log(post))
    if kind in ("mean", "predictive"):
        return np.asarray(_dirichlet.mean_log(post))
    raise ValueError(f"unknown estimate {kind!r}")


def estimate_log(prior, fixed, class_count, kind, classes=None):
    r"""Log class proportions of a fitted model for one estimate: learned or fixed.

    The one computation of an estimator's ``class_log_prior_`` and of the layers'
    :func:`bayesnb.core._fitted.class_log_prior`.

    Parameters
    ----------
    prior : Dirichlet or None
        The Dirichlet on the proportions; None where they are fixed.
    fixed : ndarray of shape (n_classes,) or None
        The fixed proportions :math:`\pi_c` (read where ``prior`` is None).
    class_count : ndarray of shape (n_classes,)
    kind : {"mle", "map", "mean", "predictive"}
        See :func:`point_log`; fixed proportions are the same for every estimate.
    classes : ndarray of shape (n_classes,), optional
        The class labels, which a refusal of ``"map"`` names (by default the positions).

    Returns
    -------
    ndarray of shape (n_classes,)
        ``-inf`` for a fixed proportion of zero.

    Raises
    ------
    ValueError
        For ``"map"`` where a class's posterior concentration is below 1, naming the
        class, its ``class_alpha`` and its weighted rows (:func:`map_refusal`).
    """
    if prior is None:
        with np.errstate(divide="ignore"):
            return np.log(fixed)
    try:
        return point_log(prior, class_count, kind)
    except _dirichlet.UndefinedModeError as err:
        raise map_refusal(err, class_count, classes) from None


def left_out_log(prior, class_count, y_index, weight, kind, classes=None):
    r"""Log class proportions with each row left out, :math:`\log p(y=c \mid D_{-i})`.

    Row :math:`i`'s weight is taken off the count of its class, and the proportions are
    those of ``kind`` (:func:`point_log`) under the downdated counts.

    Parameters
    ----------
    prior : Dirichlet
    class_count : ndarray of shape (n_classes,)
        Weighted class counts of :math:`D`.
    y_index : int ndarray of shape (n_samples,)
    weight : ndarray of shape (n_samples,)
    kind : {"mle", "map", "mean", "predictive"}
    classes : ndarray of shape (n_classes,), optional
        The class labels, which a refusal of ``"map"`` names (by default the positions).

    Returns
    -------
    ndarray of shape (n_samples, n_classes)

    Raises
    ------
    ValueError
        For ``"map"`` where a row's left-out posterior has no mode, naming the class and
        the row (:func:`map_refusal`).
    """
    y_index = np.asarray(y_index, dtype=np.intp)
    n = y_index.shape[0]
    counts = np.asarray(class_count, dtype=np.float64)
    down = np.broadcast_to(counts, (n, counts.size)).copy()
    down[np.arange(n), y_index] -= np.asarray(weight, dtype=np.float64)
    try:
        return np.asarray(point_log(prior, down, kind), dtype=np.float64)
    except _dirichlet.UndefinedModeError as err:
        # A class whose posterior on all the rows has no mode is refused as such, not
        # blamed on the first row left out.
        estimate_log(prior, None, counts, kind, classes)
        raise map_refusal(err, down, classes) from None


def map_refusal(err, class_count, classes=None, rows=None):
    """The refusal of ``estimate='map'`` for a class proportion, in the words of the user's labels.

    Parameters
    ----------
    err : UndefinedModeError
        Raised by :func:`point_log`: ``err.index`` is ``(c,)``, or ``(i, c)`` for a batch
        of counts with training row ``i`` left out (``class_count`` is then the batch).
    class_count : ndarray of shape (n_classes,) or (n_samples, n_classes)
        The weighted class counts the posterior was updated with.
    classes : ndarray of shape (n_classes,), optional
        The class labels (by default the positions).
    rows : int ndarray of shape (n_samples,), optional
        The training-row position of each row of a batch (by default ``i`` itself).

    Returns
    -------
    MapRefusal
        A ``ValueError`` that keeps the class it names.
    """
    *row, c = err.index
    counted = float(np.asarray(class_count)[tuple(err.index)])
    named = class_words(classes, c)
    left_out = (row[0] if rows is None else int(rows[row[0]])) if row else None
    why = f"class_alpha {err.value - counted:.4g} plus {counted:.4g} weighted rows of that class"
    return _dirichlet.map_refusal_in_words(
        f"the proportion of {named}", err.value, why, "class_alpha", c, named, left_out
    )


def class_words(classes, c):
    """How a message names class ``c``: ``"class 'spam'"``, or ``"class 2"`` without labels.

    Parameters
    ----------
    classes : array-like of shape (n_classes,) or None
    c : int

    Returns
    -------
    str
    """
    return f"class {c}" if classes is None else f"class {label_of(classes, c)!r}"


def label_of(classes, c):
    """Class ``c``'s label as a plain Python value, for messages (``repr`` shows ``'spam'``, not ``np.str_('spam')``).

    Parameters
    ----------
    classes : array-like of shape (n_classes,)
        Labels of any dtype: numpy strings or numbers, or objects (labels read from a
        pandas Series).
    c : int

    Returns
    -------
    object
    """
    label = np.asarray(classes, dtype=object)[c]
    return label.item() if isinstance(label, np.generic) else label


def log_evidence(prior, class_count):
    r""":math:`\log p(y_{1:n}) = \log B(\beta + N) - \log B(\beta)` for the label sequence."""
    return float(_dirichlet.log_evidence(prior.concentration, class_count))


def labels_log_evidence(prior, fixed, class_count):
    r"""The label part :math:`\log p(y_{1:n})` of a fitted model's evidence: learned or fixed proportions.

    Under the Dirichlet ``prior`` it is :func:`log_evidence`; with fixed proportions
    ``fixed`` (``prior`` None) it is :math:`\sum_c N_c \log\pi_c`, where a class with
    no rows adds nothing (also where its proportion is zero). The one computation of an
    estimator's ``log_evidence`` and of :func:`bayesnb.core._fitted.log_evidence`.

    Parameters
    ----------
    prior : Dirichlet or None
    fixed : ndarray of shape (n_classes,) or None
    class_count : ndarray of shape (n_classes,)

    Returns
    -------
    float
    """
    if prior is None:
        n = np.asarray(class_count)
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(np.sum(np.where(n > 0, n * np.log(fixed), 0.0)))
    return log_evidence(prior, class_count)


def sample_log(key, post, n):
    """``n`` iid draws of :math:`\\log\\pi` from the posterior, shape (n, n_classes)."""
    return _dirichlet.sample_log(key, post.concentration, n)


def sample_labels(key, log_probs, n):
    r"""``n`` class indices, :math:`y_i \sim \mathrm{Cat}(\pi)` (or :math:`\mathrm{Cat}(\pi_i)`).

    Drawn by inversion of the cumulative proportions with numpy's generator seeded from
    ``key`` (see :mod:`bayesnb.core.families._rows`).

    Parameters
    ----------
    key : jax.random key
    log_probs : array of shape (n_classes,) or (n, n_classes)
        :math:`\log\pi`, one vector for every row or one per row (``-inf`` for a
        class of probability zero, which is never drawn).
    n : int

    Returns
    -------
    int64 ndarray of shape (n,)
    """
    probs = np.broadcast_to(np.exp(np.asarray(log_probs, dtype=np.float64)), (int(n), np.shape(log_probs)[-1]))
    cdf = np.cumsum(probs, axis=-1)
    u = generator(key).random(int(n)) * cdf[:, -1]
    return (cdf <= u[:, None]).sum(axis=-1).astype(np.int64)
