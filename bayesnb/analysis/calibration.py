r"""Calibration maps of class probabilities, fitted to exact leave-one-out scores.

Naive Bayes is misspecified wherever its features are not independent given the class
(the words of a document, repeated tokens), and its class probabilities are then too
sure: the log-odds of a long document grow with its length although the evidence does
not. A *calibration map* corrects the probabilities a fitted model gives; it is a
generalised-Bayes repair of the model's outputs, not a change of the model: the
posterior, the evidence and generated data stay those of the model as written.

The map is fitted to the exact leave-one-out class probabilities of the training rows,
:math:`p(c \mid x_i, D_{-i})` (:mod:`bayesnb.analysis.loo`: a closed form, no refit),
so that every row is scored by the model trained on all the others, at the cost of one
fit (``CalibratedClassifierCV`` fits K extra models and calibrates on a fifth).

The family of maps
------------------
From the class log-probabilities :math:`\ell_c = \log p(c \mid x)` of a row, its
one-vs-rest log-odds :math:`d_c = \ell_c - \log \sum_{k \ne c} e^{\ell_k}` (computed in
log space, clipped at :math:`\pm` ``LOG_ODDS_BOUND``) go through

.. math::

    z_c = a \, g_\sigma(d_c) + b_c, \qquad
    g_\sigma(d) = \sigma \operatorname{asinh}(d / \sigma), \qquad
    \tilde p(c \mid x) = \operatorname{softmax}(z)_c,

with one scale :math:`a > 0`, one compression :math:`\sigma > 0` and per-class offsets
:math:`b` (:math:`b_0 = 0`: only differences matter). :math:`g_\sigma` is odd, increasing
and linear near 0 (:math:`g_\sigma(d) \approx d` for :math:`|d| \ll \sigma`) and
logarithmic in the tails (:math:`\approx \sigma \log(2|d|/\sigma)`), so large log-odds are
compressed while the ordering of every class's score is kept: :math:`\tilde p_c` is
increasing in :math:`d_c` and decreasing in every other :math:`d_k`, hence increasing in
class :math:`c`'s own score. The offsets are fitted with the scale (a temperature alone
leaves the class proportions at full weight and hands the decision to them when it is
large). With two classes, :math:`z_1 - z_0 = 2 a\, g_\sigma(d) + (b_1 - b_0)` for the
log-odds :math:`d`: Platt's map (affine in the log-odds) when :math:`\sigma = \infty`.

The candidates (``FAMILIES``):

* ``"identity"``: :math:`a = 1, b = 0, \sigma = \infty`, the model as written;
* ``"affine"``: :math:`a, b` fitted, :math:`\sigma = \infty` (temperature with class
  offsets; Platt scaling for two classes);
* ``"asinh"``: :math:`a, \sigma, b` fitted.

Within a family the parameters minimise the (weighted) mean cross-entropy of the
leave-one-out scores against Platt's targets (:func:`fit_map`, :func:`targets`): the labels
smoothed by the class counts, :math:`(N_c + 1)/(N_c + 2)` on a row's own class. Fitted to
0/1 labels, a map of scores that separate the classes (every leave-one-out row right, as
on small, easy data) has no minimum: its scale runs to the bound, and on wine (5-fold CV,
seed 8) such a map sent two test rows from 6.5 and 3.6 nats to 34.5 and 24.6, a fold's
log loss from 0.30 to 1.66. The family is chosen by K-fold cross-validation over the
leave-one-out scores (:func:`choose`): every candidate is fitted on K−1 folds of the
rows' scores and scored on the fold left out; the scores are fixed, so this costs no
refit of the model. The family with the least held-out loss wins and is refitted on all
rows, unless the model as written is within one standard error of it (a map must beat
the uncalibrated scores by more than the noise of the estimate).

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> d = rng.normal(0, 8, 400)                      # overconfident log-odds
>>> y = (rng.random(400) < 1 / (1 + np.exp(-d / 4))).astype(int)
>>> log_p = -np.logaddexp(0, -np.stack([-d, d], 1))
>>> cmap = choose(log_p, y)
>>> cmap.family in FAMILIES, apply(cmap, log_p).shape
(True, (400, 2))
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
from scipy.special import logsumexp

from bayesnb.core import _fitted
from bayesnb.core._normalize import log_normalize, normalize_proba
from bayesnb.core._threads import with_one_blas_thread
from bayesnb.core._validation import check_estimate
from bayesnb.exceptions import ZeroLikelihoodWarning

__all__ = [
    "CalibrationMap",
    "FAMILIES",
    "LOG_ODDS_BOUND",
    "apply",
    "check_fitted",
    "choose",
    "class_proba",
    "fit_map",
    "fitted_proba",
    "identity",
    "log_loss",
    "one_vs_rest_log_odds",
    "targets",
]

FAMILIES = ("identity", "affine", "asinh")

# One-vs-rest log-odds are clipped here: a class impossible under the model (d = -inf) or
# certain (+inf) stays finite through the map. Far beyond any log-odds a probability in
# float64 can express (745 nats), so no finite input is changed by it.
LOG_ODDS_BOUND = 1.0e6

# Search box of the parameters. The scale may grow large where the leave-one-out scores
# are under-confident; the compression spans log-odds from a tenth of a nat to 10^5.
SCALE_BOUNDS = (1.0e-4, 1.0e3)
COMPRESSION_BOUNDS = (1.0e-1, 1.0e5)
OFFSET_BOUND = 60.0

# Starting compressions of the profile search, for log-odds scaled to unit root mean
# square (the loss is not convex in sigma).
_SIGMA_GRID = np.geomspace(0.03, 30.0, 5)

# Probabilities are clipped here in every reported log loss (as in the benchmarks).
EPS = 1e-15


class CalibrationMap(NamedTuple):
    r"""A fitted map of class probabilities (see the module docstring for the family).

    Attributes
    ----------
    family : str
        One of ``FAMILIES``.
    scale : float
        :math:`a > 0`.
    compression : float
        :math:`\sigma > 0` (``inf`` for ``"identity"`` and ``"affine"``).
    offsets : ndarray of shape (n_classes,)
        :math:`b`, with :math:`b_0 = 0`.
    estimate : str
        The ``estimate`` whose leave-one-out scores it was fitted to.
    temperature : float
        The likelihood temperature of those scores.
    cv_log_loss : dict
        Family name → its K-fold cross-validated log loss on the leave-one-out scores
        (the criterion of the choice; empty where no choice was made).
    cv_standard_error : dict
        Family name → the standard error of its paired difference in held-out loss to
        the family with the least (0 for that family).
    loo_log_loss : float
        Leave-one-out log loss of the model as written (before the map).
    fitted_log_loss : float
        Leave-one-out log loss after the map (fitted on the same scores: optimistic).
    n_folds : int
        Folds of the cross-validation (0: no choice was made).
    """

    family: str
    scale: float
    compression: float
    offsets: np.ndarray
    estimate: str
    temperature: float
    cv_log_loss: dict
    cv_standard_error: dict
    loo_log_loss: float
    fitted_log_loss: float
    n_folds: int

    def __repr__(self):
        b = np.asarray(self.offsets)
        shown = np.array2string(b, precision=3, separator=", ", threshold=6, edgeitems=2)
        sigma = "" if not np.isfinite(self.compression) else f", compression={self.compression:.4g}"
        return (
            f"CalibrationMap({self.family!r}, scale={self.scale:.4g}{sigma}, offsets={shown}; "
            f"leave-one-out log loss {self.loo_log_loss:.4f} -> {self.fitted_log_loss:.4f})"
        )


def identity(n_classes, estimate="predictive", temperature=1.0, loo_log_loss=np.nan):
    """The map that changes nothing (``family="identity"``)."""
    return CalibrationMap(
        "identity", 1.0, float("inf"), np.zeros(n_classes), estimate, float(temperature), {}, {},
        float(loo_log_loss), float(loo_log_loss), 0,
    )


def one_vs_rest_log_odds(log_proba):
    r"""One-vs-rest log-odds :math:`d_c = \ell_c - \log\sum_{k \ne c} e^{\ell_k}` of normalised log-probabilities.

    Computed without cancellation: for a class other than the row's most probable one,
    :math:`\log(1 - p_c)` is ``log1p(-p_c)`` with :math:`p_c \le 1/2`; for the most
    probable class it is the log-sum-exp of the others.

    Parameters
    ----------
    log_proba : ndarray of shape (..., n_classes)
        Normalised class log-probabilities (``-inf`` allowed).

    Returns
    -------
    ndarray of shape (..., n_classes), clipped at :math:`\pm` ``LOG_ODDS_BOUND``.
    """
    lp = np.asarray(log_proba, dtype=np.float64)
    n_classes = lp.shape[-1]
    if n_classes == 1:
        return np.full(lp.shape, LOG_ODDS_BOUND)
    with np.errstate(divide="ignore", invalid="ignore"):
        rest = np.log1p(-np.exp(lp))
        top = np.argmax(lp, axis=-1)[..., None]
        others = np.where(np.arange(n_classes) == top, -np.inf, lp)
        top_rest = logsumexp(others, axis=-1, keepdims=True)
        np.put_along_axis(rest, top, top_rest, axis=-1)
        d = lp - rest
    d = np.where(np.isnan(d), 0.0, d)  # -inf - -inf: a row with one possible class twice over
    return np.clip(d, -LOG_ODDS_BOUND, LOG_ODDS_BOUND)


def _compress(d, sigma):
    return d if not np.isfinite(sigma) else sigma * np.arcsinh(d / sigma)


def _logits(d, scale, sigma, offsets):
    return scale * _compress(d, sigma) + offsets


def apply(cmap, log_proba):
    """Calibrated class log-probabilities, ``log_proba`` of shape (..., n_classes) mapped by ``cmap``.

    Parameters
    ----------
    cmap : CalibrationMap or None
        None (or the identity) returns ``log_proba`` itself.
    log_proba : ndarray of shape (..., n_classes)

    Returns
    -------
    ndarray of shape (..., n_classes)
    """
    if cmap is None or cmap.family == "identity":
        return log_proba
    z = _logits(one_vs_rest_log_odds(log_proba), cmap.scale, cmap.compression, np.asarray(cmap.offsets))
    return z - logsumexp(z, axis=-1, keepdims=True)


def check_fitted(cmap, estimate, temperature, name):
    """``cmap`` if it was fitted to the scores of ``estimate`` at ``temperature``, else the refusal.

    A map belongs to the leave-one-out scores of one estimate and temperature; applied
    to another's it would correct the wrong probabilities. The one check of an
    estimator's ``calibration_`` and of :func:`fitted_proba`.

    Parameters
    ----------
    cmap : CalibrationMap
    estimate : str
    temperature : float
    name : str
        How the refusal names the model.

    Returns
    -------
    CalibrationMap

    Raises
    ------
    ValueError
        If ``cmap`` was fitted for another estimate or temperature.
    """
    if cmap.estimate != estimate or cmap.temperature != temperature:
        raise ValueError(
            f"{name}: the calibration map was fitted to the leave-one-out scores of estimate={cmap.estimate!r}, "
            f"temperature={cmap.temperature:g}, not estimate={estimate!r}, temperature="
            f"{temperature:g}: call fit again (or set calibrate=None for the model as written)"
        )
    return cmap


def class_proba(joint, class_log, cmap, *, probabilities=False, estimate="predictive", stacklevel=2):
    """Class log-probabilities (or probabilities) of rows from their joint scores, through a calibration map.

    The one computation of an estimator's ``predict_log_proba`` / ``predict_proba`` and
    of :func:`fitted_proba`: normalised over classes in log space
    (:func:`bayesnb.core._normalize.log_normalize`), mapped by ``cmap`` where there is
    one, exponentiated for ``probabilities`` (without a logarithm where there is no map,
    :func:`~bayesnb.core._normalize.normalize_proba`). A row impossible under every class
    gets ``class_log`` and a :class:`~bayesnb.exceptions.ZeroLikelihoodWarning`.

    Parameters
    ----------
    joint : ndarray of shape (n_samples, n_classes)
        Joint log scores, possibly up to a per-row term common to the classes.
    class_log : ndarray of shape (n_classes,)
        Log class proportions of the estimate (the fallback of impossible rows).
    cmap : CalibrationMap or None
    probabilities : bool
    estimate : str
        Named by the warning.
    stacklevel : int
        Of the warning, as the caller would pass it to ``warnings.warn``.

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
    """
    if cmap is not None and cmap.family != "identity":
        # The map reads log-probabilities: normalised in log space, mapped, then (for
        # probabilities) exponentiated.
        log_proba, dead = log_normalize(joint, class_log)
        log_proba = apply(cmap, log_proba)
        out = np.exp(log_proba) if probabilities else log_proba
    else:
        normalize = normalize_proba if probabilities else log_normalize
        out, dead = normalize(joint, class_log)
    if dead.any():
        warnings.warn(
            f"{int(dead.sum())} row(s) have zero likelihood under every class with "
            f"estimate={estimate!r} (a feature value never seen in training); "
            "their class probabilities are the class proportions.",
            ZeroLikelihoodWarning,
            stacklevel=stacklevel + 1,
        )
    return out


def fitted_proba(fitted, X, kind=None):
    """Class probabilities of rows under a fitted-model pytree for one estimate: ``predict_proba`` at ``estimate=kind``.

    The estimator's joint scores (``fitted.joint_log_proba``: its validation, its
    tempered likelihood or exact predictive, the mixture over integrated
    hyperparameters) through :func:`class_proba` with the pytree's class proportions
    (:func:`bayesnb.core._fitted.class_log_prior`) and calibration map, as the
    estimator's ``predict_proba`` with ``estimate=kind`` computes them.

    Parameters
    ----------
    fitted : bayesnb.core._fitted.FittedModel
    X : array-like of shape (n_samples, n_features)
        Rows as the estimator takes them.
    kind : {"mle", "map", "mean", "predictive"}, optional
        Default: the estimator's ``estimate``.

    Returns
    -------
    ndarray of shape (n_samples, n_classes)

    Raises
    ------
    ValueError
        As ``predict_proba`` would: an unknown estimate, rows it refuses, or a
        calibration map fitted for another estimate or temperature than ``kind``'s.
    """
    kind = check_estimate(fitted.estimate if kind is None else kind)
    joint = fitted.joint_log_proba(X, kind, contrast=True)
    cmap = _fitted.calibration(fitted)
    if cmap is not None:
        cmap = check_fitted(cmap, kind, _fitted.temperature(fitted), fitted.name)
    return class_proba(
        joint, _fitted.class_log_prior(fitted, kind), cmap, probabilities=True, estimate=kind, stacklevel=2
    )


def log_loss(log_proba, y_index, weight=None):
    """Weighted mean of :math:`-\\log p(y_i)`, probabilities clipped at ``EPS``."""
    y_index = np.asarray(y_index, dtype=np.intp)
    picked = np.asarray(log_proba)[np.arange(y_index.size), y_index]
    return float(-np.average(np.maximum(picked, np.log(EPS)), weights=weight))


# ----------------------------------------------------------------------------- fitting


def _lse(z):
    top = z.max(axis=1)
    return top + np.log(np.exp(z - top[:, None]).sum(axis=1))


def targets(y_index, n_classes, weight=None):
    r"""Platt's targets: the labels smoothed by the class counts, shape (n_samples, n_classes).

    A row of class :math:`c` gets :math:`t_c = (N_c + 1) / (N_c + 2)` on its own class
    and :math:`(1 - t_c) / (C - 1)` on each other class, :math:`N_c` being the (weighted)
    number of rows of class :math:`c`. With two classes these are Platt's (1999) targets
    :math:`(N_+ + 1)/(N_+ + 2)` for positive and :math:`1/(N_- + 2)` for negative rows
    (scikit-learn's sigmoid calibration uses them too). Fitted to 0/1 labels, a map of
    scores that separate the classes (every leave-one-out row on the right side, as on
    small, easy data) has no minimum: its scale runs to its bound and the map sends the
    next mistake to a probability of :math:`10^{-15}`. Against these targets the fitted
    map is never surer than the counts allow, so the scale stays finite.

    Parameters
    ----------
    y_index : int ndarray of shape (n_samples,)
    n_classes : int
    weight : ndarray of shape (n_samples,), optional
        Row weights (a row of weight ``k`` counts as ``k`` rows in :math:`N_c`).

    Returns
    -------
    ndarray of shape (n_samples, n_classes), rows summing to 1.

    Examples
    --------
    >>> targets(np.array([0, 0, 1]), 2).round(4).tolist()
    [[0.75, 0.25], [0.75, 0.25], [0.3333, 0.6667]]
    """
    y_index = np.asarray(y_index, dtype=np.intp)
    counts = np.bincount(y_index, weights=weight, minlength=n_classes).astype(np.float64)
    own = (counts + 1.0) / (counts + 2.0)
    t = np.repeat(((1.0 - own[y_index]) / max(n_classes - 1, 1))[:, None], n_classes, axis=1)
    t[np.arange(y_index.size), y_index] = own[y_index]
    return t


def _objective(theta, d, t, weight, family, g):
    """Mean weighted cross-entropy of the map against the targets ``t``, and its gradient in ``theta``.

    ``theta``: ``[a, b_1..b_{C-1}]`` where the compressed log-odds ``g`` are given (affine,
    or asinh at a fixed sigma), else ``[a, log sigma, b_1..]`` (asinh, sigma free).
    """
    a = theta[0]
    free_sigma = g is None
    if free_sigma:
        sigma = np.exp(theta[1])
        g = _compress(d, sigma)
    b = np.concatenate([[0.0], theta[2:] if free_sigma else theta[1:]])
    z = a * g + b
    lse = _lse(z)
    # Elementwise products summed, not np.dot / np.vdot: BLAS's threaded ddot costs
    # milliseconds per call on a loaded machine, and L-BFGS calls this hundreds of times.
    # The targets of a row sum to 1, so its cross-entropy is lse - sum_c t_c z_c.
    loss = float(np.sum(weight * (lse - (t * z).sum(axis=1))))
    r = np.exp(z - lse[:, None])
    r -= t
    r *= weight[:, None]
    grad_a = float(np.sum(r * g))
    grad_b = r.sum(axis=0)[1:]
    if free_sigma:
        u = d / sigma
        dz_dlogsigma = a * sigma * (np.arcsinh(u) - u / np.sqrt(1.0 + u * u))
        grad = np.concatenate([[grad_a, float(np.sum(r * dz_dlogsigma))], grad_b])
    else:
        grad = np.concatenate([[grad_a], grad_b])
    return loss, grad


def _solve(d, t, weight, theta0, g=None, scale_bounds=SCALE_BOUNDS, sigma_bounds=COMPRESSION_BOUNDS,
           rough=False):
    """L-BFGS-B on the map's loss against targets ``t``: (a, b) at given compressed log-odds ``g``, or (a, log sigma, b).

    ``rough``: looser tolerances, for the profile over sigma (only the best grid point is
    kept, and refined to full tolerance).
    """
    from scipy.optimize import minimize

    n_classes = d.shape[1]
    bounds = [scale_bounds]
    if g is None:
        bounds.append(tuple(np.log(sigma_bounds)))
    bounds += [(-OFFSET_BOUND, OFFSET_BOUND)] * (n_classes - 1)
    res = minimize(
        _objective, theta0, args=(d, t, weight, "asinh" if g is None else "fixed", g), jac=True,
        method="L-BFGS-B", bounds=bounds,
        options={"maxiter": 1000, "ftol": 1e-8 if rough else 1e-13, "gtol": 1e-5 if rough else 1e-9},
    )
    return res.x, float(res.fun)


@with_one_blas_thread
def fit_map(log_proba, y_index, family, weight=None, *, estimate="predictive", temperature=1.0):
    r"""The map of ``family`` minimising the weighted mean cross-entropy of ``log_proba``'s rows against Platt's targets.

    The targets (:func:`targets`) are the labels smoothed by the class counts: the
    fitted map is never surer than :math:`(N_c + 1) / (N_c + 2)` where the scores
    separate the classes, instead of running its scale to the bound (which sends the next
    mistake to a probability of :math:`10^{-15}`). ``"affine"`` is a convex problem in :math:`(a, b)` (a log-softmax loss of a linear
    function; :math:`a` bounded below by ``SCALE_BOUNDS[0]``), solved by L-BFGS-B with the
    exact gradient. ``"asinh"`` is convex in :math:`(a, b)` for each :math:`\sigma`: the
    profile over a grid of :math:`\sigma` is solved first, then all parameters together
    from the best grid point.

    Parameters
    ----------
    log_proba : ndarray of shape (n_samples, n_classes)
        Normalised class log-probabilities (the leave-one-out ones).
    y_index : int ndarray of shape (n_samples,)
    family : {"identity", "affine", "asinh"}
    weight : ndarray of shape (n_samples,), optional
    estimate, temperature
        Recorded in the map (what its scores were).

    Returns
    -------
    CalibrationMap
        ``cv_log_loss`` empty and ``n_folds`` 0 (no choice made here).
    """
    if family not in FAMILIES:
        raise ValueError(f"calibration family must be one of {FAMILIES}, got {family!r}")
    log_proba = np.asarray(log_proba, dtype=np.float64)
    y_index = np.asarray(y_index, dtype=np.intp)
    n, n_classes = log_proba.shape
    w = np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64)
    t = targets(y_index, n_classes, w)  # counted with the weights as given: rows, not shares
    w = w / w.sum()
    before = log_loss(log_proba, y_index, w)
    if family == "identity" or n_classes < 2:
        return identity(n_classes, estimate, temperature, before)
    # The solver works on log-odds scaled to unit root mean square (c d), where the scale
    # and the offsets are of one order: a' g_s'(c d) with a = c a', sigma = s' / c is the
    # same map.
    d = one_vs_rest_log_odds(log_proba)
    c = 1.0 / max(float(np.sqrt(np.average(np.minimum(d * d, 1e6), axis=0, weights=w).mean())), 1e-12)
    dc = d * c
    scale_bounds = (SCALE_BOUNDS[0] / c, SCALE_BOUNDS[1] / c)
    sigma_bounds = (COMPRESSION_BOUNDS[0] * c, COMPRESSION_BOUNDS[1] * c)
    # Starting offsets: the log class frequencies, centred on class 0.
    freq = np.bincount(y_index, weights=w, minlength=n_classes) + 1e-3
    b0 = np.log(freq[1:] / freq[0])
    start = np.concatenate([[np.clip(1.0, *scale_bounds)], b0])
    if family == "affine":
        theta, _ = _solve(dc, t, w, start, g=dc, scale_bounds=scale_bounds)
        a, sigma, b = theta[0] * c, np.inf, theta[1:]
    else:
        best = None
        for sigma in np.clip(_SIGMA_GRID, *sigma_bounds):
            theta, loss = _solve(dc, t, w, start, g=_compress(dc, sigma), scale_bounds=scale_bounds, rough=True)
            if best is None or loss < best[0]:
                best = (loss, sigma, theta)
        _, sigma0, theta0 = best
        theta, _ = _solve(
            dc, t, w, np.concatenate([[theta0[0], np.log(sigma0)], theta0[1:]]), scale_bounds=scale_bounds,
            sigma_bounds=sigma_bounds,
        )
        a, sigma, b = theta[0] * c, float(np.exp(theta[1])) / c, theta[2:]
    offsets = np.concatenate([[0.0], b])
    cmap = CalibrationMap(family, float(a), float(sigma), offsets, estimate, float(temperature), {}, {}, before, np.nan, 0)
    return cmap._replace(fitted_log_loss=log_loss(apply(cmap, log_proba), y_index, w))


def folds(y_index, n_folds, seed=0):
    """Stratified fold of each row: rows of each class dealt in turn after a seeded shuffle."""
    y_index = np.asarray(y_index, dtype=np.intp)
    rng = np.random.default_rng(seed)
    fold = np.empty(y_index.size, dtype=np.intp)
    for c in np.unique(y_index):
        rows = np.flatnonzero(y_index == c)
        fold[rng.permutation(rows)] = np.arange(rows.size) % n_folds
    return fold


@with_one_blas_thread
def choose(log_proba, y_index, weight=None, *, families=FAMILIES, n_folds=5, seed=0, estimate="predictive",
           temperature=1.0):
    r"""The map family with the least K-fold cross-validated log loss, refitted on all rows; the model as written unless beaten by more than the noise.

    Every family in ``families`` is fitted (:func:`fit_map`) on the rows of K−1 folds and
    its log loss taken on each row of the fold left out. The family with the least
    weighted mean held-out loss is the best. It is chosen unless ``"identity"`` (the
    model as written, when among ``families``) is within one standard error of the
    paired per-row differences of it (the one-standard-error rule of Breiman et al.,
    applied to leaving the model as written): a map must beat the uncalibrated scores
    by more than the noise of the held-out estimate, so that fitting noise in the
    leave-one-out scores of an already calibrated model is not rewarded. Folds are stratified by class with a fixed ``seed``; K is
    ``n_folds``, or the size of the smallest class where that is smaller. With fewer
    than two rows in some class, or one class, no choice is made and the identity is
    returned.

    Parameters
    ----------
    log_proba : ndarray of shape (n_samples, n_classes)
        Exact leave-one-out class log-probabilities of the training rows.
    y_index : int ndarray of shape (n_samples,)
    weight : ndarray of shape (n_samples,), optional
        Row weights of the losses (a row of weight ``k`` counts as ``k`` rows).
    families : sequence of str
    n_folds : int
    seed : int
    estimate, temperature
        Recorded in the map.

    Returns
    -------
    CalibrationMap
        With ``cv_log_loss`` (family → held-out loss) and ``n_folds``.
    """
    log_proba = np.asarray(log_proba, dtype=np.float64)
    y_index = np.asarray(y_index, dtype=np.intp)
    n, n_classes = log_proba.shape
    w = np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64)
    keep = w > 0
    log_proba, y_index, w = log_proba[keep], y_index[keep], w[keep]
    for family in families:
        if family not in FAMILIES:
            raise ValueError(f"calibration family must be one of {FAMILIES}, got {family!r}")
    present = np.bincount(y_index, minlength=n_classes)
    k = int(min(n_folds, present[present > 0].min())) if y_index.size else 0
    if n_classes < 2 or k < 2 or np.count_nonzero(present) < 2:
        return identity(n_classes, estimate, temperature, log_loss(log_proba, y_index, w) if y_index.size else np.nan)
    fold = folds(y_index, k, seed)
    held_out = {}
    for family in families:
        losses = np.empty(y_index.size)
        for f in range(k):
            train, test = fold != f, fold == f
            cmap = fit_map(log_proba[train], y_index[train], family, w[train])
            picked = apply(cmap, log_proba[test])[np.arange(int(test.sum())), y_index[test]]
            losses[test] = -np.maximum(picked, np.log(EPS))
        held_out[family] = losses
    cv = {fam: float(np.average(held_out[fam], weights=w)) for fam in families}
    best = min(families, key=lambda fam: (cv[fam], families.index(fam)))
    se = {fam: _paired_se(held_out[fam] - held_out[best], w) for fam in families}
    chosen = "identity" if "identity" in cv and cv["identity"] - cv[best] <= se["identity"] else best
    cmap = fit_map(log_proba, y_index, chosen, w, estimate=estimate, temperature=temperature)
    return cmap._replace(cv_log_loss=cv, cv_standard_error=se, n_folds=k)


def _paired_se(diff, w):
    """Standard error of a weighted mean of per-row differences (effective sample size of the weights)."""
    mean = np.average(diff, weights=w)
    var = np.average((diff - mean) ** 2, weights=w)
    n_eff = w.sum() ** 2 / np.sum(w * w)
    return float(np.sqrt(var / max(n_eff - 1.0, 1.0)))
