r"""Exact leave-one-out predictives by downdating sufficient statistics.

For a conjugate naive Bayes model the posterior given the training data without row
:math:`i`, :math:`D_{-i}`, is the conjugate update of the statistics of :math:`D` minus
those of row :math:`i` (the prior held fixed). So the leave-one-out predictive

.. math::

    \log p(y_i \mid x_i, D_{-i}) = \log p(y_i \mid D_{-i}) + \log p(x_i \mid y_i, D_{-i})
        - \log \sum_c p(c \mid D_{-i})\, p(x_i \mid c, D_{-i})

is a closed form for every row at once, with no refit: only class :math:`y_i`'s
statistics change (for families whose classes share no parameter), so
:math:`\log p(x_i \mid c, D_{-i})` is the ordinary predictive for :math:`c \ne y_i`
and, for :math:`c = y_i`, the predictive under the class statistics *downdated* by the
row (merged with the row's statistics at weight :math:`-w_i`).

The computation is vectorised over rows: the statistics of a block of :math:`m` rows
are taken with one "class" per row (``family.stats(X_block, arange(m), m, -w)``), the
full statistics of each row's class are gathered beside them, the two are merged, and
the family's predictive (or plug-in likelihood, for a point estimate) of the block
under its :math:`m` downdated "classes" is read on the diagonal. The cost is that of
scoring the rows against :math:`m` classes, block by block (:math:`O(N m F)` for dense
rows), never :math:`N` refits.

Families whose classes share parameters (a shared covariance) are detected by a check
of the vectorised path against the undowndated predictive, and handled exactly by a
downdate per row instead (still no refit).

The layers that use it: tempered prediction (``temperature="loo"`` on every estimator,
which needs the class and feature parts apart, :class:`LooTerms`) and exact LOO for
model comparison.

Examples
--------
>>> import numpy as np
>>> from bayesnb import MultinomialNB
>>> X = np.array([[3, 0, 1], [4, 1, 0], [0, 3, 1], [1, 4, 1], [2, 2, 0]])
>>> y = np.array([0, 0, 1, 1, 0])
>>> clf = MultinomialNB().fit(X, y)
>>> terms = clf.loo_terms(X, y)
>>> conditional(terms).shape
(5,)
>>> # the same as refitting without each row (the prior is data-free here)
>>> refit = [MultinomialNB().fit(np.delete(X, i, 0), np.delete(y, i)).predict_log_proba(X[i:i + 1])[0, y[i]]
...          for i in range(5)]
>>> bool(np.allclose(conditional(terms), refit, atol=1e-10))
True
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np
from scipy.special import logsumexp

from bayesnb.core import class_prior as _class_prior
from bayesnb.core.families._dirichlet import UndefinedModeError
from bayesnb.core.missing import MaskedX
from bayesnb.core.stats import as_masked, is_masked

__all__ = [
    "LooTerms",
    "choose_temperature",
    "class_log_loo",
    "conditional",
    "feature_log_loo",
    "joint",
    "log_loss",
    "row_feature_log_loo",
    "log_proba",
    "TEMPERATURE_BOUNDS",
]

# The temperatures that temperature="loo" searches: 1 (the model as written) up to a
# tempering so strong that the features barely move the class proportions.
TEMPERATURE_BOUNDS = (1.0, 1.0e4)

# Rows per block of the vectorised downdate: a block is scored against this many
# downdated "classes", so the work is this factor times one prediction pass. Each of its
# temporaries holds about (rows x one class's statistics) values: the rows are chosen so
# that this stays near _BLOCK_ENTRIES (from _MIN_BLOCK up to _BLOCK rows). With 64 rows a
# 52,000-word vocabulary took 370 MiB above the fitted model (BernoulliNB, calibrate="loo").
_BLOCK = 64
_MIN_BLOCK = 8
_BLOCK_ENTRIES = 1 << 20


def _block_rows(stats, n_classes):
    """Rows per block of the vectorised downdate for statistics ``stats`` of ``n_classes`` classes."""
    per_class = sum(int(np.size(leaf)) for leaf in jax.tree.leaves(stats)) // max(1, n_classes)
    return int(min(_BLOCK, max(_MIN_BLOCK, _BLOCK_ENTRIES // max(1, per_class))))


class LooTerms(NamedTuple):
    r"""The parts of the exact leave-one-out joint predictive of every training row.

    Attributes
    ----------
    class_log : ndarray of shape (n_samples, n_classes)
        :math:`\log p(y = c \mid D_{-i})`, the class proportions without row :math:`i`.
    feature_log : ndarray of shape (n_samples, n_classes)
        :math:`\log p(x_i \mid y = c, D_{-i})`, the features' predictive (or plug-in
        likelihood, for a point estimate) without row :math:`i`.
    y_index : int ndarray of shape (n_samples,)
        The class of each row.
    """

    class_log: np.ndarray
    feature_log: np.ndarray
    y_index: np.ndarray


def _take(tree, index, n_classes):
    """Gather the class axis of every leaf whose leading axis is the class axis."""

    def take(a):
        a = np.asarray(a)
        return a[index] if a.ndim >= 1 and a.shape[0] == n_classes else a

    return jax.tree.map(take, tree)


def _score(family, prior, stats, rows, kind, mask, point_options=None):
    """Log predictive (``kind="predictive"``) or plug-in log-likelihood of rows, (n_rows, n_classes')."""
    if kind == "predictive":
        return np.asarray(family.log_predictive(family.posterior(prior, stats), rows, mask=mask), dtype=np.float64)
    params = family.point(prior, stats, kind, **(point_options or {}))
    return np.asarray(family.log_likelihood(params, rows, prior, mask=mask), dtype=np.float64)


def _merge(a, b):
    if is_masked(a) or is_masked(b):
        a, b = as_masked(a), as_masked(b)
    return a.merge(b)


def _rows(X, start, stop):
    return None if X is None else X[start:stop]


def _block_diag(family, prior, stats, X, y_index, weight, mask, kind, start, stop, point_options):
    """log p(x_i | y_i, D_-i) for rows start:stop, one downdated "class" per row."""
    n_classes = np.asarray(stats.class_count).shape[0]
    rows, m = _rows(X, start, stop), stop - start
    down = family.stats(rows, np.arange(m), m, -weight[start:stop], mask=_rows(mask, start, stop))
    mine = _merge(_take(stats, y_index[start:stop], n_classes), down)
    scores = _score(
        family, _take(prior, y_index[start:stop], n_classes), mine, rows, kind, _rows(mask, start, stop), point_options
    )
    return np.diagonal(scores).copy()


def _row_downdate(family, prior, stats, X, y_index, weight, mask, kind, i, point_options):
    """Every class's log p(x_i | c, D_-i) for row i, by one downdate (shared parameters too)."""
    n_classes = np.asarray(stats.class_count).shape[0]
    row, row_mask = _rows(X, i, i + 1), _rows(mask, i, i + 1)
    down = family.stats(row, y_index[i : i + 1], n_classes, -weight[i : i + 1], mask=row_mask)
    return _score(family, prior, _merge(stats, down), row, kind, row_mask, point_options)[0]


def row_feature_log_loo(family, prior, stats, X, y_index, weight, i, *, kind="predictive", mask=None, point_options=None):
    r"""Every class's :math:`\log p(x_i \mid y=c, D_{-i})` for one training row, by one downdate of all the statistics.

    The slow, always exact path of :func:`feature_log_loo` (statistics of all the
    classes with row :math:`i` merged out at weight :math:`-w_i`, then the family's
    score), for rows whose refit changes more than their class's statistics: a
    ``prior`` of its own (a table of categories learned without the row), or a point
    estimate that reads the statistics of every class (a variance floor scaled to the
    pooled variance).

    Parameters
    ----------
    family, prior, stats, X, y_index, weight, kind, mask, point_options
        As for :func:`feature_log_loo` (``X`` and ``mask`` unpacked: not a ``MaskedX``).
    i : int
        The row.

    Returns
    -------
    ndarray of shape (n_classes,)
    """
    y_index = np.asarray(y_index, dtype=np.intp)
    weight = np.ones(y_index.size) if weight is None else np.asarray(weight, dtype=np.float64)
    return _row_downdate(family, prior, stats, X, y_index, weight, mask, kind, int(i), point_options)


def feature_log_loo(family, prior, stats, X, y_index, weight=None, *, kind="predictive", mask=None, point_options=None):
    r"""Leave-one-out feature log-probabilities :math:`\log p(x_i \mid y=c, D_{-i})`, shape (n_samples, n_classes).

    Parameters
    ----------
    family : Family
    prior : the family's prior pytree (held fixed)
    stats : statistics of the training data :math:`D` (which contains the rows ``X``)
    X : validated rows of shape (n_samples, n_features)
        Rows of the training data whose statistics are in ``stats``: dense or CSR, a
        :class:`~bayesnb.core.missing.MaskedX` (its mask is then ``mask``), or for a
        product family :class:`~bayesnb.core.families.product.BlockRows`.
    y_index : int ndarray of shape (n_samples,)
    weight : ndarray of shape (n_samples,), optional
        Each row's weight in ``stats`` (ones by default): the whole row is left out.
    kind : {"predictive", "mean", "map", "mle"}
        The exact posterior predictive, or the plug-in likelihood of a point estimate of
        the downdated posterior.
    mask : bool array of shape (n_samples, n_features), optional
        Unobserved entries (see :mod:`bayesnb.core.families.protocol`).
    point_options : dict, optional
        Keyword options of ``family.point`` (e.g. a variance floor for the MLE).

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
        Column :math:`c \ne y_i` is the score under the full data (row :math:`i` is not
        in class :math:`c`); column :math:`y_i` under the statistics without row
        :math:`i`.

    Raises
    ------
    UndefinedModeError
        For ``kind="map"`` without a mode: on all the rows, or with row :math:`i` left
        out (its ``row``; ``block`` names the block of a product family), for the
        estimator to word in the user's terms.
    """
    y_index = np.asarray(y_index, dtype=np.intp)
    n = y_index.shape[0]
    weight = np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64)
    if family.blocks is not None:
        # A product of families (a mixed model): leaving a row out downdates every block's
        # own statistics, and the blocks' scores add up. Each piece of the rows carries
        # its own unobserved entries; each block its own point options.
        total = 0.0
        for b, part in zip(family.blocks, X.parts):
            try:
                total = total + feature_log_loo(
                    b.family, prior[b.name], stats.blocks[b.name], part, y_index, weight, kind=kind,
                    point_options={**b.point_options.get(kind, {}), **(point_options or {})},
                )
            except UndefinedModeError as err:  # its index is into this block's tables
                raise err.located(block=b.name) from None
        return total
    if isinstance(X, MaskedX):
        X, mask = X.X, X.mask
    full = _score(family, prior, stats, X, kind, mask, point_options)
    out = full.copy()
    if n == 0:
        return out
    diag = None
    block = _block_rows(stats, np.asarray(stats.class_count).shape[0])
    try:
        first = _block_diag(family, prior, stats, X, y_index, np.zeros(n), mask, kind, 0, min(n, block), point_options)
        # With nothing removed the vectorised path must give back the ordinary scores;
        # it does not where classes share parameters (or a leaf merely looks per-class).
        if np.allclose(first, full[np.arange(first.size), y_index[: first.size]], rtol=1e-9, atol=1e-9, equal_nan=True):
            diag = np.concatenate(
                [
                    _block_diag(family, prior, stats, X, y_index, weight, mask, kind, s, min(n, s + block), point_options)
                    for s in range(0, n, block)
                ]
            )
            # Leaving nothing out can agree by coincidence where classes share parameters:
            # a shared MLE covariance pooled over the block's "classes" is the data's own
            # when the block holds the classes in the proportions of the data (balanced
            # classes). Leaving rows out cannot: a row's value in the block must be that
            # of its own downdate (which is exact for shared parameters too).
            for i in sorted({0, min(n, block) - 1}):
                own = _row_downdate(family, prior, stats, X, y_index, weight, mask, kind, i, point_options)[y_index[i]]
                if not np.allclose(diag[i], own, rtol=1e-9, atol=1e-9, equal_nan=True):
                    diag = None
                    break
    except (ValueError, TypeError, IndexError):
        diag = None
    if diag is not None:
        out[np.arange(n), y_index] = diag
        return out
    for i in range(n):
        try:
            out[i] = _row_downdate(family, prior, stats, X, y_index, weight, mask, kind, i, point_options)
        except UndefinedModeError as err:  # a point estimate without a mode once row i is left out
            raise err.located(row=i) from None
    return out


def class_log_loo(class_dirichlet, class_count, y_index, weight=None, *, kind="predictive", class_prior=None, classes=None):
    r"""Leave-one-out log class proportions :math:`\log p(y=c \mid D_{-i})`, shape (n_samples, n_classes).

    Parameters
    ----------
    class_dirichlet : Dirichlet or None
        The Dirichlet prior on the class proportions; None where they are fixed.
    class_count : ndarray of shape (n_classes,)
        Weighted class counts of :math:`D`.
    y_index : int ndarray of shape (n_samples,)
    weight : ndarray of shape (n_samples,), optional
    kind : {"predictive", "mean", "map", "mle"}
    class_prior : ndarray of shape (n_classes,), optional
        The fixed proportions (used where ``class_dirichlet`` is None).
    classes : ndarray of shape (n_classes,), optional
        The class labels, which a refusal of ``"map"`` names (by default the positions).

    Raises
    ------
    ValueError
        For ``"map"`` where a row's left-out class posterior has no mode, naming the
        class and the row (:func:`bayesnb.core.class_prior.left_out_log`).
    """
    y_index = np.asarray(y_index, dtype=np.intp)
    n = y_index.shape[0]
    counts = np.asarray(class_count, dtype=np.float64)
    if class_dirichlet is None:  # fixed proportions: no row moves them
        fixed = _class_prior.estimate_log(None, np.asarray(class_prior, dtype=np.float64), counts, kind)
        return np.broadcast_to(fixed, (n, counts.size)).copy()
    weight = np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64)
    return _class_prior.left_out_log(class_dirichlet, counts, y_index, weight, kind, classes)


def log_proba(terms, temperature=1.0):
    r"""Every class's :math:`\log p(y=c \mid x_i, D_{-i})`, the features tempered by ``temperature``.

    The class probabilities are :math:`\propto p(c \mid D_{-i})\, p(x_i \mid c, D_{-i})^{1/T}`;
    a row impossible under every class gets its class proportions, as ``predict_proba``.

    Parameters
    ----------
    terms : LooTerms
    temperature : float >= 1

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
    """
    scores = terms.class_log + terms.feature_log / float(temperature)
    dead = np.isneginf(scores.max(axis=1, initial=-np.inf))
    scores = np.where(dead[:, None], terms.class_log, scores)
    return scores - logsumexp(scores, axis=1, keepdims=True)


def conditional(terms, temperature=1.0):
    r"""Pointwise :math:`\log p(y_i \mid x_i, D_{-i})` with the features tempered by ``temperature``.

    The class probabilities are :math:`\propto p(c \mid D_{-i})\, p(x_i \mid c, D_{-i})^{1/T}`
    (see :func:`log_proba`).

    Parameters
    ----------
    terms : LooTerms
    temperature : float >= 1

    Returns
    -------
    ndarray of shape (n_samples,)
    """
    return log_proba(terms, temperature)[np.arange(terms.y_index.size), terms.y_index]


def joint(terms):
    r"""Pointwise :math:`\log p(x_i, y_i \mid D_{-i})` (untempered), shape (n_samples,)."""
    idx = np.arange(terms.y_index.size), terms.y_index
    return terms.class_log[idx] + terms.feature_log[idx]


def log_loss(terms, temperature=1.0, *, eps=1e-15, weight=None):
    r"""Leave-one-out log loss: the (weighted) mean of :math:`-\log p(y_i \mid x_i, D_{-i})`.

    Parameters
    ----------
    terms : LooTerms
    temperature : float >= 1
    eps : float
        Probabilities are clipped at ``eps``.
    weight : ndarray of shape (n_samples,), optional
        Row weights of the mean.

    Returns
    -------
    float
    """
    return float(-np.average(np.maximum(conditional(terms, temperature), np.log(eps)), weights=weight))


def choose_temperature(terms, bounds=TEMPERATURE_BOUNDS, *, eps=1e-15, xatol=1e-6, weight=None):
    r"""The temperature :math:`T` in ``bounds`` minimising the exact leave-one-out log loss.

    A bounded one-dimensional search (``scipy.optimize.minimize_scalar``, method
    ``"bounded"``) over :math:`\log T`, the scale on which the loss varies evenly, with
    the lower bound kept when it is at least as good (the model as written wins ties).

    Parameters
    ----------
    terms : LooTerms
    bounds : (float, float)
        ``1 <= low < high``.
    eps : float
        Clipping of the probabilities in the loss.
    xatol : float
        Tolerance on :math:`\log T`.
    weight : ndarray of shape (n_samples,), optional
        Row weights of the loss (see :func:`log_loss`).

    Returns
    -------
    float
    """
    from scipy.optimize import minimize_scalar

    low, high = (float(b) for b in bounds)
    if not 1.0 <= low < high:
        raise ValueError(f"temperature bounds must satisfy 1 <= low < high, got {bounds!r}")
    loss = lambda log_t: log_loss(terms, np.exp(log_t), eps=eps, weight=weight)  # noqa: E731
    res = minimize_scalar(loss, bounds=(np.log(low), np.log(high)), method="bounded", options={"xatol": xatol})
    best = float(np.exp(res.x))
    # The bounded search never evaluates the end points themselves.
    for end in (high, low):
        if loss(np.log(end)) <= loss(np.log(best)):
            best = end
    return best
