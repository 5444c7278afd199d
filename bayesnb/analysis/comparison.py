r"""Compare the MLE, MAP, posterior-mean and full posterior-predictive answers of one model.

:func:`compare` fits a bayesnb estimator once (per fold, per training subset) and scores
every ``estimate`` of that one posterior on held-out rows: accuracy, log loss, Brier
score, expected calibration error and macro-F1, with paired bootstrap intervals of each
metric and of its difference from a reference estimate (the full posterior predictive by
default), plus the model's log evidence. Three modes:

* hold-out (``X_test``, ``y_test``): one fit on the training rows;
* cross-validated (``cv=k``): pooled out-of-fold predictions of ``k`` stratified folds;
* learning curve (``train_sizes=[...]``): random stratified training subsets of each size,
  ``n_repeats`` times, all scored on the same test rows. Full Bayes matters most with
  little data: the paired differences show at which sizes it does and does not.

Metrics, for true labels :math:`y_i` and predicted probabilities :math:`p_{ic}`:

* accuracy of :math:`\arg\max_c p_{ic}` (ties to the first class, as ``predict``);
* log loss :math:`-\frac1n\sum_i \log p_{i y_i}`, probabilities clipped to
  :math:`[\epsilon, 1-\epsilon]` (:math:`\epsilon` the float64 machine epsilon) as
  scikit-learn's ``log_loss``, so a zero probability on the true class costs about 36
  nats instead of infinity. A row impossible under every class (zero likelihood, e.g.
  a word never seen in training under the MLE) has no class probabilities at all: the
  estimate gives the row itself probability 0. ``predict`` falls back to the class
  proportions for it, but scoring that fallback would reward the estimate for failing
  (the MLE would look best on data full of unseen words), so the log loss is infinite
  whenever there is such a row (``inf``; the rows are counted in
  ``zero_likelihood_rows``). The same rule holds for every metric of the probabilities
  (log loss, Brier, ECE): such a row costs the metric's worst value for one row (log
  loss :math:`\infty`, Brier 2, ECE :math:`1/n`), so no estimate scores better by
  failing on a row than by answering it. Accuracy and macro-F1 score the label
  ``predict`` returns, fallback included (a label is an answer the user gets);
* Brier score :math:`\frac1n\sum_i\sum_c (p_{ic} - [y_i = c])^2` (the multi-category
  score of Brier (1950), between 0 and 2; scikit-learn's ``brier_score_loss`` halves it
  for two classes unless ``scale_by_half=False``); a row impossible under every class
  scores 2;
* expected calibration error (Guo et al. 2017): the confidence :math:`\max_c p_{ic}` is
  put in ``n_bins`` equal-width bins :math:`((b-1)/M, b/M]`, and
  :math:`\mathrm{ECE} = \sum_b \frac{n_b}{n}\,|\mathrm{acc}_b - \mathrm{conf}_b|
  + \frac{n_0}{n}`, the bins holding the rows the estimate scores and :math:`n_0` the
  rows impossible under every class, each costing 1, the largest error one row can add
  (by the triangle inequality, any answer for such a row would raise the ECE by at most
  :math:`1/n`);
* macro-F1: the unweighted mean over every class of the estimator of
  :math:`2\mathrm{TP}_c / (2\mathrm{TP}_c + \mathrm{FP}_c + \mathrm{FN}_c)` (0 for a class
  neither present nor predicted), as scikit-learn's ``f1_score(average="macro")``.

Bootstrap intervals resample the test rows (all estimates on the same resamples, so
differences are paired) and are percentile intervals at ``level``.
"""

from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np

from bayesnb.core._normalize import log_normalize
from bayesnb.core._validation import ESTIMATES, check_estimate, check_level, class_index
from bayesnb.analysis.uncertainty import final_step

__all__ = [
    "METRICS",
    "ComparisonTable",
    "UNSCORABLE_ROW_COST",
    "compare",
    "format_comparison",
    "metric_values",
    "reliability_bins",
    "short_reason",
]

#: Metric columns of :func:`compare`, in order.
METRICS = ("accuracy", "log_loss", "brier", "ece", "macro_f1")
#: Whether a larger value of a metric is better.
HIGHER_IS_BETTER = {"accuracy": True, "log_loss": False, "brier": False, "ece": False, "macro_f1": True}
_TITLES = {"accuracy": "accuracy", "log_loss": "log loss", "brier": "Brier", "ece": "ECE", "macro_f1": "macro-F1"}

# Bootstrap resamples are generated and scored this many (resamples x rows) entries at a time.
_BOOTSTRAP_BLOCK = 1 << 21


# ----------------------------------------------------------------------------- metrics


#: What a row impossible under every class costs each metric of the probabilities: the
#: worst value of one row. The estimate gives such a row probability 0 and has no class
#: probabilities for it (``predict_proba``'s class proportions are ``predict``'s fallback,
#: not the estimate's answer); scoring the fallback would reward the estimate for failing.
#: Log loss: infinite; Brier: 2 (all mass on a wrong class); ECE: 1 (a row in its own bin,
#: confidence 1 and wrong), added to the bins of the rows the estimate scores.
UNSCORABLE_ROW_COST = {"log_loss": np.inf, "brier": 2.0, "ece": 1.0}


def _confidence_bins(conf, n_bins):
    """Bin of each confidence: bins ((b - 1)/M, b/M]; a confidence of exactly b/M is in bin b."""
    return np.clip(np.ceil(conf * n_bins).astype(np.intp) - 1, 0, n_bins - 1)


def _with_unscorable(metric, live_sum, n_dead, total):
    """A probability metric from the sum over scored rows and the number of unscorable rows.

    The one place where :data:`UNSCORABLE_ROW_COST` is applied (:class:`_RowTerms`,
    :func:`reliability_bins`). For the ECE, ``live_sum`` is the sum over bins of
    ``|sum of (correct - confidence)|`` of the scored rows.
    """
    cost = UNSCORABLE_ROW_COST[metric]
    n_dead = np.asarray(n_dead, dtype=np.float64)
    if np.isinf(cost):
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n_dead > 0, cost, live_sum / total)
    return (live_sum + cost * n_dead) / total


class _RowTerms:
    """Per-row quantities of one prediction; every metric is a weighted sum of them.

    The quantities are the columns of one matrix, so that the metrics under many sets of
    row weights (bootstrap resamples) are one matrix product followed by :meth:`reduce`.
    Rows impossible under every class (``dead``) add nothing to the log loss, Brier and
    ECE columns; they are counted in the last column and cost
    :data:`UNSCORABLE_ROW_COST` in :meth:`reduce`.
    """

    def __init__(self, y_index, proba, n_bins, dead=None):
        proba = np.asarray(proba, dtype=np.float64)
        n, n_classes = proba.shape
        dead = np.zeros(n, dtype=bool) if dead is None else np.asarray(dead, dtype=bool)
        live = (~dead).astype(np.float64)
        rows = np.arange(n)
        pred = np.argmax(proba, axis=1)
        eps = np.finfo(np.float64).eps
        correct = (pred == y_index).astype(np.float64)
        onehot = np.zeros((n, n_classes))
        onehot[rows, y_index] = 1.0
        predicted = np.zeros((n, n_classes))
        predicted[rows, pred] = 1.0
        conf = proba[rows, pred]
        bins = _confidence_bins(conf, n_bins)
        gap = np.zeros((n, n_bins))
        gap[rows, bins] = (correct - conf) * live
        self.n_classes, self.n_bins = n_classes, n_bins
        self.matrix = np.column_stack(
            [
                correct,
                -np.log(np.clip(proba[rows, y_index], eps, 1 - eps)) * live,  # log loss
                ((proba - onehot) ** 2).sum(axis=1) * live,  # Brier
                gap,  # ECE: per-bin sums of (correct - confidence)
                onehot * predicted,  # true positives per class
                onehot + predicted,  # 2 TP + FP + FN per class
                dead.astype(np.float64),  # rows impossible under every class
            ]
        )

    def reduce(self, sums, total):
        """Metrics from the weighted column sums ``sums`` (B, k) and the total weights (B,)."""
        C, M = self.n_classes, self.n_bins
        tp, denom = sums[:, 3 + M : 3 + M + C], sums[:, 3 + M + C : 3 + M + 2 * C]
        dead = sums[:, -1]
        with np.errstate(invalid="ignore", divide="ignore"):
            f1 = np.where(denom > 0, 2 * tp / np.where(denom > 0, denom, 1.0), 0.0)
        return {
            "accuracy": sums[:, 0] / total,
            "log_loss": _with_unscorable("log_loss", sums[:, 1], dead, total),
            "brier": _with_unscorable("brier", sums[:, 2], dead, total),
            "ece": _with_unscorable("ece", np.abs(sums[:, 3 : 3 + M]).sum(axis=1), dead, total),
            "macro_f1": f1.mean(axis=1),
        }

    def evaluate(self, W):
        """Every metric under row weights ``W`` (B, n): dict of (B,) arrays."""
        return self.reduce(W @ self.matrix, W.sum(axis=1))


def metric_values(y_true, proba, classes, *, n_bins=15, impossible=None):
    """Accuracy, log loss, Brier score, ECE and macro-F1 of one set of probabilities.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
    proba : array-like of shape (n_samples, n_classes)
        Columns in the order of ``classes``.
    classes : array-like of shape (n_classes,)
    n_bins : int
        Confidence bins of the ECE.
    impossible : array-like of bool, shape (n_samples,), optional
        Rows impossible under every class (``proba`` holds ``predict``'s fallback for
        them). Each costs the log loss, the Brier score and the ECE their worst value for
        one row (:data:`UNSCORABLE_ROW_COST`); accuracy and macro-F1 score ``proba``'s
        labels.

    Returns
    -------
    dict
        ``{metric: float}`` for the names in :data:`METRICS`.

    Examples
    --------
    >>> m = metric_values(["a", "b"], [[0.9, 0.1], [0.2, 0.8]], ["a", "b"])
    >>> round(m["accuracy"], 3), round(m["brier"], 3)
    (1.0, 0.05)
    >>> m = metric_values(["a", "b"], [[0.9, 0.1], [0.5, 0.5]], ["a", "b"], impossible=[False, True])
    >>> m["log_loss"], round(m["brier"], 3), round(m["ece"], 3)
    (inf, 1.01, 0.55)
    """
    classes = np.asarray(classes)
    y_index = class_index(y_true, classes, "y_true", classes_name="classes")
    proba = _check_proba(proba, len(y_index), classes.size)
    dead = _check_impossible(impossible, len(y_index))
    terms = _RowTerms(y_index, proba, _check_bins(n_bins), dead)
    return {k: float(v[0]) for k, v in terms.evaluate(np.ones((1, len(y_index)))).items()}


def reliability_bins(y_true, proba, classes, *, n_bins=15, impossible=None):
    """Confidence bins of a reliability diagram (top-label calibration).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
    proba : array-like of shape (n_samples, n_classes)
        Columns in the order of ``classes``.
    classes : array-like of shape (n_classes,)
    n_bins : int
    impossible : array-like of bool, shape (n_samples,), optional
        Rows impossible under every class: they are in no bin, and each adds
        ``1 / n_samples`` to the ECE (:data:`UNSCORABLE_ROW_COST`), as in
        :func:`metric_values` and :func:`compare`.

    Returns
    -------
    count : ndarray of shape (n_bins,)
        Scored rows whose confidence :math:`\\max_c p_{ic}` falls in each bin
        ((b-1)/M, b/M]; ``count.sum()`` plus the impossible rows is ``n_samples``.
    confidence, accuracy : ndarrays of shape (n_bins,)
        Mean confidence and accuracy of each bin (NaN for an empty bin: nothing to plot).
    ece : float
        :math:`\\sum_b |\\sum_{i \\in b} (\\mathrm{correct}_i - \\mathrm{conf}_i)| / n`
        plus the impossible rows' share.

    Examples
    --------
    >>> count, confidence, accuracy, ece = reliability_bins(
    ...     ["a", "b", "a"], [[0.9, 0.1], [0.3, 0.7], [0.6, 0.4]], ["a", "b"], n_bins=5)
    >>> count.tolist()
    [0.0, 0.0, 1.0, 1.0, 1.0]
    >>> round(ece, 4)
    0.2667
    """
    classes = np.asarray(classes)
    y_index = class_index(y_true, classes, "y_true", classes_name="classes")
    proba = _check_proba(proba, len(y_index), classes.size)
    n_bins = _check_bins(n_bins)
    dead = _check_impossible(impossible, len(y_index))
    live = ~dead
    rows = np.arange(len(y_index))
    pred = np.argmax(proba, axis=1)
    conf = proba[rows, pred]
    bins = _confidence_bins(conf, n_bins)[live]
    count = np.bincount(bins, minlength=n_bins).astype(np.float64)
    conf_sum = np.bincount(bins, weights=conf[live], minlength=n_bins)
    acc_sum = np.bincount(bins, weights=(pred == y_index)[live].astype(np.float64), minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        confidence = np.where(count > 0, conf_sum / np.where(count > 0, count, 1), np.nan)
        accuracy = np.where(count > 0, acc_sum / np.where(count > 0, count, 1), np.nan)
    ece = float(_with_unscorable("ece", np.abs(acc_sum - conf_sum).sum(), dead.sum(), len(y_index)))
    return count, confidence, accuracy, ece


def _check_impossible(impossible, n):
    if impossible is None:
        return np.zeros(n, dtype=bool)
    dead = np.asarray(impossible)
    if dead.shape != (n,) or dead.dtype != bool:
        raise ValueError(f"impossible must be a boolean array of shape ({n},), got {dead.dtype} of shape {dead.shape}")
    return dead


def _check_bins(n_bins):
    if isinstance(n_bins, bool) or not isinstance(n_bins, numbers.Integral) or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}")
    return int(n_bins)


def _check_proba(proba, n, n_classes):
    proba = np.asarray(proba, dtype=np.float64)
    if proba.shape != (n, n_classes):
        raise ValueError(f"proba has shape {proba.shape}, expected ({n}, {n_classes})")
    if not np.all(np.isfinite(proba)) or proba.min() < 0 or proba.max() > 1:
        raise ValueError("proba must hold probabilities in [0, 1]")
    return proba


# ------------------------------------------------------------------------- predictions


class _Prediction(NamedTuple):
    proba: np.ndarray | None  # (n, C); None when the estimate is undefined
    zero_rows: int | None
    reason: str | None
    dead: np.ndarray | None = None  # (n,) bool: rows impossible under every class


def _has_estimate(est):
    """Whether ``estimate`` is a parameter of ``est`` (bayesnb's own estimators), rather than
    fixed by the class (the estimators of :mod:`bayesnb.sklearn`, scikit-learn's signatures)."""
    return "estimate" in est.get_params(deep=False)


def _bayesnb_view(est):
    """The fitted model as an estimator whose ``estimate`` (and ``calibrate``) can be set.

    bayesnb's own estimators are returned as they are. An estimator of
    :mod:`bayesnb.sklearn` has scikit-learn's parameters only; its public ``to_bayesnb()``
    hands the same statistics, prior and class proportions to the equivalent bayesnb
    estimator, whose other estimates are then those of this very model.
    """
    if _has_estimate(est):
        return est
    to_bayesnb = getattr(est, "to_bayesnb", None)
    if not callable(to_bayesnb):
        raise TypeError(
            f"{type(est).__name__} has no 'estimate' parameter and no to_bayesnb(): compare cannot switch "
            "its estimates"
        )
    return to_bayesnb()


def _predict_all(clf, X, estimates):
    """Class probabilities of every estimate of one fitted posterior.

    ``clf`` may be a fitted ``Pipeline`` ending in a bayesnb estimator (``X`` then in the
    pipeline's input form: the estimates are the final step's, on the rows transformed
    by the steps before it) and an estimator of :mod:`bayesnb.sklearn` (its own estimate
    from itself, the others through :func:`_bayesnb_view`).

    An estimate that is undefined for this posterior (e.g. the MAP with a concentration
    below 1) is returned with its reason instead of raising. Rows with zero likelihood
    under every class get the class proportions (as ``predict_proba``), and are counted
    rather than warned about.
    """
    clf, X = final_step(clf, X)
    if _takes_unlabelled(clf):
        return _predict_semi(clf, X, estimates)
    # Bad input is the caller's error, not an undefined estimate: checked once, raised.
    clf.validate_input(X)
    own = clf.estimate
    view = clf if _has_estimate(clf) else None
    out = {}
    try:
        for estimate in estimates:
            try:
                if estimate == own and view is not clf:  # a namespace estimator's own estimate: itself
                    model = clf
                else:
                    if view is None:
                        view = _bayesnb_view(clf)
                    model = view.set_params(estimate=estimate)
                joint = model.predict_joint_log_proba(X)
                log_proba, dead = log_normalize(joint, model.class_log_prior_)
            except ValueError as exc:
                out[estimate] = _Prediction(None, None, _first_sentence(str(exc)))
                continue
            out[estimate] = _Prediction(np.exp(log_proba), int(dead.sum()), None, np.asarray(dead, dtype=bool))
    finally:
        if view is clf:
            clf.set_params(estimate=own)
    return out


def _takes_unlabelled(est):
    """Whether ``est`` is a semi-supervised estimator (it says which labels mark unlabelled rows).

    Duck-typed: :class:`~bayesnb.SemiSupervisedNB` has ``unlabelled_mask(y)`` (scikit-learn's
    convention, ``-1``); this module imports no estimator class.
    """
    return callable(getattr(est, "unlabelled_mask", None)) and hasattr(est, "estimator")


def _predict_semi(clf, X, estimates):
    """:func:`_predict_all` for a fitted semi-supervised estimator.

    Its fitted model is ``estimator_`` (the wrapped estimator conditioned on the final
    expected statistics, EM's or the variational posterior); every estimate is that
    posterior's, switched on ``estimator_`` and summed over each class's mixture
    components by the semi-supervised estimator itself, so the row of
    ``estimator_.estimate`` is the estimator's own ``predict_proba``.
    """
    inner = clf.estimator_
    inner.validate_input(X)
    own = inner.estimate
    out = {}
    try:
        for estimate in estimates:
            try:
                inner.set_params(estimate=estimate)
                joint = clf.predict_joint_log_proba(X)
                log_proba, dead = log_normalize(joint, clf.class_log_prior_)
            except ValueError as exc:
                out[estimate] = _Prediction(None, None, _first_sentence(str(exc)))
                continue
            out[estimate] = _Prediction(np.exp(log_proba), int(dead.sum()), None, np.asarray(dead, dtype=bool))
    finally:
        inner.set_params(estimate=own)
    return out


def _semi_summary(clf):
    """:func:`hyperparameter_summary` of a fitted semi-supervised estimator: its choices, then its wrapped estimator's."""
    parts = [f"estimate {clf.estimator_.estimate!r}", f"unlabelled_weight_={clf.unlabelled_weight_:g}"]
    counts = np.asarray(clf.n_components_)
    if np.any(counts > 1) or clf.components_curve_ is not None:
        parts.append(f"n_components_={counts.tolist()}")
    inner = hyperparameter_summary(clf.estimator_)
    return "; ".join(parts + ([inner] if inner else []))


def _summary(clf):
    return _semi_summary(clf) if _takes_unlabelled(clf) else hyperparameter_summary(clf)


def _log_evidence(clf):
    """The log evidence of a fitted model; None for a semi-supervised one (its EM objective or ELBO is not one)."""
    return None if _takes_unlabelled(clf) else float(clf.log_evidence())


#: The ``estimate`` label of the calibrated row of :func:`compare` (``calibrated=True``).
CALIBRATED = "calibrated (loo)"


def _calibrated_template(template, fitted):
    """An unfitted copy of ``template`` whose bayesnb estimator has ``calibrate="loo"``.

    ``fitted``: ``template`` fitted (for an estimator of :mod:`bayesnb.sklearn`, the
    calibrated model is its bayesnb equivalent, which has ``calibrate``, at the class
    proportions of the same rows). A ``Pipeline`` keeps its transforms (refitted on the
    same rows) and gets the calibrated final step.
    """
    from sklearn.base import clone

    final, _ = final_step(fitted)
    base = _final(template) if _has_estimate(final) else _bayesnb_view(final)
    step = clone(base).set_params(calibrate="loo")
    if not _is_pipeline(template):
        return step
    return clone(template).set_params(**{template.steps[-1][0]: step})


def _predict_extra(template, X_train, y_train, X_test, classes, calibrated, baselines, fitted=None):
    """Predictions of the rows beside the estimates: the calibrated model and the baselines.

    ``calibrated``: a clone of ``template`` with ``calibrate="loo"`` (at its own
    ``estimate``; see :func:`_calibrated_template`, which reads ``fitted``, the template
    fitted on these rows), fitted on the same rows. ``baselines``: name -> unfitted
    scikit-learn classifier, cloned and fitted on the same rows; its ``predict_proba``
    columns are placed in the order of ``classes`` (a class it never saw gets probability 0).
    """
    from sklearn.base import clone

    out = {}
    if calibrated:
        clf = _fit(_calibrated_template(template, template if fitted is None else fitted), X_train, y_train, classes)
        model, X_scored = final_step(clf, X_test)
        proba = np.asarray(model.predict_proba(X_scored))
        out[CALIBRATED] = _Prediction(proba, 0, None, np.zeros(_n_rows(X_test), bool))
    for name, base in (baselines or {}).items():
        model = clone(base).fit(X_train, y_train)
        proba = np.zeros((_n_rows(X_test), classes.size))
        proba[:, np.searchsorted(classes, np.asarray(model.classes_))] = model.predict_proba(X_test)
        out[name] = _Prediction(proba, 0, None, np.zeros(_n_rows(X_test), bool))
    return out


def _check_baselines(baselines, estimates):
    if baselines is None:
        return {}
    if not isinstance(baselines, dict):
        raise TypeError(f"baselines must be a dict of name -> scikit-learn classifier, got {type(baselines).__name__}")
    for name, model in baselines.items():
        if not isinstance(name, str) or name in estimates or name == CALIBRATED:
            raise ValueError(f"baseline name {name!r} must be a string other than the estimates' names")
        if not (hasattr(model, "fit") and hasattr(model, "predict_proba")):
            raise TypeError(f"baseline {name!r} must have fit and predict_proba, got {type(model).__name__}")
    return dict(baselines)


def _first_sentence(message):
    message = " ".join(message.split())
    return message or "error"


def short_reason(message, width=60):
    """The first clause of an error message (outside parentheses), for a table cell.

    Parameters
    ----------
    message : str
    width : int
        Longest result; longer text is cut and ends with "...".

    Returns
    -------
    str

    Examples
    --------
    >>> short_reason("estimate='map': undefined, concentration 0.5 < 1 (the mode is on the boundary)")
    'undefined'
    """
    message = message.strip().splitlines()[0] if message.strip() else "error"
    _, colon, rest = message.partition(": ")
    text = rest if colon and rest else message
    depth = 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and (text.startswith(", ", i) or text.startswith(". ", i) or text.startswith("; ", i)):
            text = text[:i]
            break
    if len(text) > width:
        text = text[: width - 3].rstrip() + "..."
    return text


def _is_pipeline(est):
    from sklearn.pipeline import Pipeline

    return isinstance(est, Pipeline)


def _final(est):
    """The bayesnb estimator of ``est``: itself, or a ``Pipeline``'s final step."""
    return est.steps[-1][1] if _is_pipeline(est) else est


def _fit(template, X, y, classes):
    """A fresh clone of ``template`` fitted on (X, y), with every class of ``classes``.

    A ``Pipeline``'s transforms are fitted on these rows (as ``Pipeline.fit`` fits them:
    nothing of the held-out rows reaches them), then its final step on the transformed rows.
    """
    from sklearn.base import clone

    clf = clone(template)
    final = _final(clf)
    if _takes_unlabelled(final):
        # A semi-supervised fit takes its unlabelled rows (-1) beside the labelled ones; it
        # has no partial_fit, so every class must have a labelled row here.
        clf.fit(X, y)
        if not np.array_equal(final.classes_, classes):
            missing = [c for c in np.asarray(classes).tolist() if c not in np.asarray(final.classes_).tolist()]
            raise ValueError(
                f"a training set of {type(final).__name__} has no labelled row of class(es) {missing[:5]}: "
                "use fewer folds or larger training subsets (every class needs a labelled row in each)"
            )
        return clf
    if _is_pipeline(clf) and len(clf.steps) > 1:
        X = clf[:-1].fit_transform(X, y)
    # partial_fit with the full class list: a training subset missing a class still
    # gives probabilities for every class, in the same columns.
    final.partial_fit(X, y, classes=classes)
    return clf


# ----------------------------------------------------------------------------- results


class ComparisonTable:
    """The result of :func:`compare` without pandas: records with a readable ``repr``.

    Attributes
    ----------
    index_names : list of str
        Names of the key columns (e.g. ``["estimate"]``, ``["train_size", "estimate"]``).
    columns : list of str
        Value columns, in order.
    records : list of dict
        One dict per row, keys ``index_names + columns``; missing values are None.
    attrs : dict
        Settings of the comparison (mode, level, reference, ...).

    Parameters
    ----------
    index_names, columns, records, attrs
        As the attributes below.

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import MultinomialNB, compare
    >>> rng = np.random.default_rng(0)
    >>> X = rng.poisson([[6, 1, 1]] * 40 + [[1, 1, 6]] * 40)
    >>> y = np.repeat(["a", "b"], 40)
    >>> table = compare(MultinomialNB(), X[::2], y[::2], X[1::2], y[1::2], n_bootstrap=100, as_frame=False)
    >>> table.index_names, len(table)
    (['estimate'], 4)
    >>> table["estimate"]
    ['mle', 'map', 'mean', 'predictive']
    >>> table.row("predictive")["accuracy"] == table["accuracy"][3]
    True
    """

    def __init__(self, index_names, columns, records, attrs):
        self.index_names = list(index_names)
        self.columns = list(columns)
        self.records = list(records)
        self.attrs = dict(attrs)

    def __len__(self):
        return len(self.records)

    def __getitem__(self, column):
        """Values of one column, as a list in row order."""
        if column not in self.columns and column not in self.index_names:
            raise KeyError(column)
        return [r[column] for r in self.records]

    def row(self, *key):
        """The record whose index values are ``key``.

        Parameters
        ----------
        *key
            One value per index column, in the order of ``index_names``.

        Returns
        -------
        dict

        Raises
        ------
        KeyError
            If no record has these index values.
        """
        for r in self.records:
            if tuple(r[k] for k in self.index_names) == key:
                return r
        raise KeyError(key)

    def to_frame(self):
        """The same table as a pandas DataFrame (requires pandas).

        Returns
        -------
        pandas.DataFrame
            Indexed by ``index_names``; ``attrs`` hold the settings.
        """
        pd = _import_pandas()

        frame = pd.DataFrame.from_records(self.records, columns=self.index_names + self.columns)
        frame = frame.set_index(self.index_names)
        frame.attrs.update(self.attrs)
        return frame

    def __repr__(self):
        return format_comparison(self, style="text")


def _as_result(index_names, columns, records, attrs, as_frame):
    table = ComparisonTable(index_names, columns, records, attrs)
    if as_frame is False:
        return table
    try:
        _import_pandas()
    except ImportError:
        if as_frame is True:
            raise ImportError("as_frame=True needs pandas (pip install pandas)") from None
        return table
    return table.to_frame()


def _import_pandas():
    # pandas is optional (a test extra, not a dependency): imported only here, when used.
    import pandas

    return pandas


def _records_of(result):
    """``(index_names, records, attrs)`` of a DataFrame or a ComparisonTable."""
    if isinstance(result, ComparisonTable):
        return result.index_names, result.records, result.attrs
    frame = result.reset_index()
    names = [n for n in result.index.names]
    records = []
    for rec in frame.to_dict(orient="records"):
        records.append({k: (None if _is_missing(v) else v) for k, v in rec.items()})
    return names, records, dict(result.attrs)


def _is_missing(value):
    try:
        return value is None or (isinstance(value, float) and np.isnan(value))
    except TypeError:  # pragma: no cover
        return False


def _fmt(value, digits=4):
    if value is None:
        return "n/a"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return f"{value:.{digits}f}"


def format_comparison(
    result, *, style="text", intervals=False, differences=False, values=True, metrics=METRICS, footer=True
):
    """Render a :func:`compare` result as a plain-text or Markdown table.

    Parameters
    ----------
    result : pandas.DataFrame or ComparisonTable
    style : {"text", "markdown"}
    intervals : bool
        Show each metric's bootstrap interval next to it.
    differences : bool
        Add the paired difference from the reference estimate, with its interval.
    values : bool
        Show the metrics themselves (with ``differences=True`` and ``values=False`` the
        table holds the differences only).
    metrics : sequence of str
    footer : bool, default=True
        End a text table with the lines that describe the comparison (hyperparameters,
        the split or folds, bootstrap and reference). False for a table printed next to
        another one that carries them, so that they are said once.

    Returns
    -------
    str

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import MultinomialNB, compare
    >>> rng = np.random.default_rng(0)
    >>> X = rng.poisson([[6, 1, 1]] * 40 + [[1, 1, 6]] * 40)
    >>> y = np.repeat(["a", "b"], 40)
    >>> table = compare(MultinomialNB(), X[::2], y[::2], X[1::2], y[1::2], n_bootstrap=100, as_frame=False)
    >>> from bayesnb.analysis.comparison import format_comparison
    >>> print(format_comparison(table, metrics=("accuracy",)).splitlines()[0])
    estimate    accuracy  log evidence  zero-lik rows
    >>> format_comparison(table, style="markdown", metrics=("accuracy",)).splitlines()[1]
    '|---|---|---|---|'
    """
    if style not in ("text", "markdown"):
        raise ValueError(f"style must be 'text' or 'markdown', got {style!r}")
    names, records, attrs = _records_of(result)
    if not values and not differences:
        raise ValueError("nothing to show: values=False needs differences=True")
    header = list(names)
    if values:
        header += [_TITLES.get(m, m) for m in metrics] + ["log evidence", "zero-lik rows"]
    if differences:
        header += [f"Δ {_TITLES[m]}" for m in metrics]
    rows = []
    for rec in records:
        key = [str(rec[n]) for n in names]
        if not rec.get("available", True):
            reason = rec.get("reason") or "not available"
            rows.append((key, f"n/a ({reason if style == 'markdown' else short_reason(reason)})"))
            continue
        cells = []
        if values:
            for m in metrics:
                cell = _fmt(rec.get(m))
                if intervals and rec.get(f"{m}_lo") is not None:
                    cell += f" [{_fmt(rec[f'{m}_lo'])}, {_fmt(rec[f'{m}_hi'])}]"
                cells.append(cell)
            ev = rec.get("log_evidence")
            cells.append("n/a" if ev is None else f"{ev:.2f}")
            zero = rec.get("zero_likelihood_rows")
            cells.append(_fmt(zero) if zero is None else str(int(zero)) if float(zero).is_integer() else f"{zero:.1f}")
        if differences:
            for m in metrics:
                d = rec.get(f"{m}_diff")
                cell = _fmt(d) if d is None else f"{d:+.4f}"
                if d is not None and rec.get(f"{m}_diff_lo") is not None:
                    cell += f" [{rec[f'{m}_diff_lo']:+.4f}, {rec[f'{m}_diff_hi']:+.4f}]"
                cells.append(cell)
        rows.append(key + cells)
    if style == "markdown":
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        for row in rows:
            if isinstance(row, tuple):
                key, text = row
                row = key + [text] + [""] * (len(header) - len(key) - 1)
            lines.append("| " + " | ".join(row) + " |")
        return "\n".join(lines)
    widths = [len(h) for h in header]
    for row in rows:
        if isinstance(row, list):
            widths = [max(w, len(c)) for w, c in zip(widths, row)]
    n_keys = len(names)

    def line(cells):
        return "  ".join(c.ljust(w) if i < n_keys else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    lines = [line(header), line(["-" * w for w in widths])]
    for row in rows:
        if isinstance(row, tuple):
            key, text = row
            lines.append("  ".join(k.ljust(w) for k, w in zip(key, widths)) + "  " + text)
        else:
            lines.append(line(row))
    if not footer:
        return "\n".join(lines)
    # Evidence-maximised and integrated hyperparameters, one line per model (not per estimate).
    seen = {}
    for rec in records:
        if rec.get("hyperparameters"):
            seen.setdefault(" ".join(str(rec[n]) for n in names[:-1]) or "model", rec["hyperparameters"])
    for model, summary in seen.items():
        lines.append(f"hyperparameters of {model}: {summary}")
    if attrs.get("mode"):
        lines.append(_describe(attrs))
    return "\n".join(lines)


def _describe(attrs):
    mode = attrs["mode"]
    what = {
        "holdout": f"hold-out: {attrs.get('n_train')} train / {attrs.get('n_test')} test rows",
        "cv": f"{attrs.get('n_folds')}-fold cross-validation, pooled out-of-fold predictions of {attrs.get('n_test')} rows",
        "learning_curve": f"learning curve: {attrs.get('n_repeats')} random training subsets per size, "
        f"{attrs.get('n_test')} test rows",
    }[mode]
    if attrs.get("n_bootstrap"):
        what += f"; {attrs['level']:.0%} paired bootstrap intervals ({attrs['n_bootstrap']} resamples)"
    if attrs.get("reference"):
        what += f"; differences vs {attrs['reference']!r}"
    return what


# ----------------------------------------------------------------------------- compare


def _check_estimates(estimates, reference):
    if isinstance(estimates, str):
        estimates = (estimates,)
    estimates = tuple(estimates)
    if not estimates:
        raise ValueError("estimates must name at least one estimate")
    for e in estimates:
        check_estimate(e)
    if len(set(estimates)) != len(estimates):
        raise ValueError(f"estimates contains duplicates: {estimates!r}")
    if reference is not None and reference not in estimates:
        raise ValueError(f"reference={reference!r} is not one of the compared estimates {estimates!r}")
    return estimates


def _is_bayesnb_estimator(est):
    # A bayesnb estimator is recognised by its public fitted family (the ``family_``
    # property every bayesnb estimator class defines), not by importing the estimators.
    return isinstance(getattr(type(est), "family_", None), property)


def _check_models(estimator):
    if isinstance(estimator, dict):
        if not estimator:
            raise ValueError("estimator: the dict of models is empty")
        models = dict(estimator)
        named = True
    else:
        models = {type(estimator).__name__: estimator}
        named = False
    for name, est in models.items():
        if not isinstance(name, str):
            raise TypeError(f"model names must be strings, got {name!r}")
        final = _final(est)
        if _is_pipeline(est) and not _is_bayesnb_estimator(final):
            raise TypeError(
                f"compare needs a Pipeline that ends in a bayesnb estimator; the last step of {name!r} "
                f"({est.steps[-1][0]!r}) is {type(final).__name__}. Pass scikit-learn classifiers as baselines="
            )
        if not _is_bayesnb_estimator(final):
            raise TypeError(
                f"compare needs bayesnb estimators, got {type(est).__name__} for {name!r} (it has no posterior "
                "whose estimates could be compared); pass scikit-learn classifiers as baselines={name: model}, "
                "scored beside the bayesnb model on the same rows"
            )
    return models, named


def _n_rows(X):
    return X.shape[0] if hasattr(X, "shape") else len(X)


def _rows(X, index):
    from sklearn.utils import _safe_indexing

    return _safe_indexing(X, index)


def _train_sizes(train_sizes, n_train):
    sizes = []
    for s in np.atleast_1d(np.asarray(train_sizes, dtype=object)):
        if isinstance(s, (bool, np.bool_)):
            raise ValueError(f"train_sizes must be numbers, got {s!r}")
        if isinstance(s, numbers.Integral):
            size = int(s)
        elif isinstance(s, numbers.Real) and 0 < s <= 1:
            size = max(1, int(round(float(s) * n_train)))
        else:
            raise ValueError(f"train_sizes: {s!r} is neither a row count nor a fraction in (0, 1]")
        if not 1 <= size <= n_train:
            raise ValueError(f"train_sizes: {size} rows asked for, the training set has {n_train}")
        sizes.append(size)
    if not sizes:
        raise ValueError("train_sizes is empty")
    return sorted(set(sizes))


def _subset(y, size, rng):
    """Indices of a random training subset of ``size`` rows, stratified where possible."""
    n = y.shape[0]
    if size >= n:
        return np.arange(n)
    from sklearn.model_selection import train_test_split

    try:
        index, _ = train_test_split(
            np.arange(n), train_size=size, stratify=y, random_state=int(rng.integers(2**31 - 1))
        )
    except ValueError:  # fewer rows than classes, or a class with one row
        index = rng.choice(n, size=size, replace=False)
    return np.sort(index)


def _bootstrap_blocks(n, n_bootstrap, rng):
    """Row weights of the bootstrap resamples, in blocks of shape (b, n).

    A resample of n rows with replacement, as the count of each row: one bincount over
    the drawn indices of every resample of the block, offset by resample.
    """
    per_block = max(1, _BOOTSTRAP_BLOCK // max(1, n))
    done = 0
    while done < n_bootstrap:
        b = min(per_block, n_bootstrap - done)
        index = rng.integers(0, n, size=(b, n)) + (np.arange(b) * n)[:, None]
        yield np.bincount(index.ravel(), minlength=b * n).reshape(b, n).astype(np.float64)
        done += b


def compare(
    estimator,
    X_train,
    y_train,
    X_test=None,
    y_test=None,
    estimates=ESTIMATES,
    *,
    cv=None,
    train_sizes=None,
    n_repeats=5,
    reference="predictive",
    n_bootstrap=1000,
    level=0.95,
    n_bins=15,
    random_state=0,
    as_frame="auto",
    refit=True,
    progress=None,
    calibrated=False,
    baselines=None,
):
    """Score every estimate (MLE, MAP, posterior mean, posterior predictive) of one model.

    Parameters
    ----------
    estimator : bayesnb estimator, or dict of name -> estimator
        Cloned and fitted here (once per fold / training subset); every estimate is
        scored from that one posterior. A dict compares several models (e.g. priors),
        whose log evidences are then comparable. An estimator may be a scikit-learn
        ``Pipeline`` ending in a bayesnb estimator: the whole pipeline is fitted on each
        training fold / subset (its transforms see no held-out row) and the estimates
        are those of its final step on the transformed rows (``X`` in the pipeline's
        input form, e.g. documents). An estimator of :mod:`bayesnb.sklearn` scores its
        own estimate (``"mean"``; ``"mle"`` for ``GaussianNB``) as it is, scikit-learn's
        numbers, and the others through ``to_bayesnb()``: the same statistics, ``alpha``
        and class proportions with the ``estimate`` switched.
    X_train, y_train : training rows and labels (the whole data set with ``cv``)
    X_test, y_test : held-out rows and labels (hold-out and learning-curve modes)
    estimates : sequence of {"mle", "map", "mean", "predictive"}
    cv : int or scikit-learn splitter, optional
        Cross-validated mode: ``k`` stratified shuffled folds (``random_state``), or any
        object with ``split(X, y)``. Metrics are computed on the pooled out-of-fold
        predictions; the log evidence is that of a fit on all rows.
    train_sizes : sequence of int or float, optional
        Learning-curve mode: training-subset sizes (row counts, or fractions in (0, 1]
        of ``X_train``), each drawn ``n_repeats`` times (stratified where possible).
        Metrics average over the repeats; the log evidence is their mean.
    n_repeats : int
    reference : str or None
        Estimate whose metrics the others are compared with (paired differences).
    n_bootstrap : int
        Bootstrap resamples of the test rows (0: no intervals).
    level : float in (0, 1)
        Level of the percentile intervals.
    n_bins : int
        Confidence bins of the ECE.
    random_state : int or None
        Seeds the folds, subsets and resamples.
    as_frame : {"auto", True, False}
        Return a pandas DataFrame ("auto": when pandas is installed) or a
        :class:`ComparisonTable`.
    refit : bool, default True
        False: score the estimator(s) as already fitted (hold-out mode only;
        ``X_train`` and ``y_train`` are then used only to fit the ``calibrated`` row and
        the ``baselines``, and may otherwise be None).
    progress : callable, optional
        Called as ``progress(done, total, message)`` after each fit.
    calibrated : bool, default False
        Add the row ``"calibrated (loo)"``: the model refitted on the same rows with
        ``calibrate="loo"`` (:mod:`bayesnb.analysis.calibration`) at its own ``estimate``.
        The estimates' rows are always the model as written, also for an estimator
        given with ``calibrate="loo"``.
    baselines : dict of str to scikit-learn classifier, optional
        What a user would do instead, fitted on the same rows (folds, subsets) and scored
        alike, one row each under its name, e.g. ``{"sklearn NB + CalibratedClassifierCV
        (sigmoid)": CalibratedClassifierCV(sklearn.naive_bayes.MultinomialNB(),
        method="sigmoid")}``. Their ``log_evidence`` is missing (not a Bayesian model).

    Notes
    -----
    *Semi-supervised models.* When a model of the comparison is a
    :class:`~bayesnb.SemiSupervisedNB` (or a ``Pipeline`` ending in one), the rows of
    ``y_train`` marked unlabelled (``-1``, its ``unlabelled_mask``) are unlabelled data,
    never scored: the folds (``cv``) split the labelled rows only, and the metrics pool
    their out-of-fold predictions; the training subsets of a learning curve are drawn
    from the labelled rows (``train_sizes`` count labelled rows). Every training set of a
    semi-supervised model holds all the unlabelled rows (still unlabelled), beside the
    labelled rows of that fold or subset; a supervised model of the same comparison and
    the ``baselines`` are fitted on those labelled rows alone (they cannot use the
    others), so the table compares them on the same folds. ``y_test`` must be labelled.
    A semi-supervised model's estimates are those of its fitted posterior (EM's, or the
    variational :math:`q`: ``estimator_`` switched to each estimate, summed over each
    class's mixture components); its own ``predict_proba`` is the row of its
    ``estimator_.estimate`` (EM: ``"mean"`` under Laplace smoothing, else ``"map"``; VB:
    the wrapped estimator's, ``"predictive"`` by default), named in the
    ``hyperparameters`` column with the weight it used. Its ``log_evidence`` is missing:
    EM's objective is a log posterior and VB's ELBO a bound, not the evidence.
    ``calibrated=True`` is refused for it (give its wrapped estimator
    ``calibrate="loo"`` and compare that as a second model). Without a semi-supervised
    model, ``-1`` is a label like any other.

    Returns
    -------
    pandas.DataFrame or ComparisonTable
        One row per (model, train_size, estimate) (keys present as needed), columns
        ``accuracy, log_loss, brier, ece, macro_f1`` (point values), ``log_evidence``,
        ``zero_likelihood_rows`` (test rows impossible under every class; their
        probabilities are the class proportions), ``available`` and ``reason`` (why an
        estimate is undefined, e.g. the MAP with ``alpha < 1``; its metrics are then
        missing), ``<metric>_lo``/``<metric>_hi`` (bootstrap interval) and
        ``<metric>_diff``, ``<metric>_diff_lo``, ``<metric>_diff_hi`` (the estimate minus
        the reference, paired). ``attrs`` hold the settings.

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import MultinomialNB, compare
    >>> rng = np.random.default_rng(0)
    >>> X = rng.poisson([[6, 1, 1]] * 40 + [[1, 1, 6]] * 40)
    >>> y = np.repeat(["a", "b"], 40)
    >>> table = compare(MultinomialNB(), X[::2], y[::2], X[1::2], y[1::2], n_bootstrap=200, as_frame=False)
    >>> [r["estimate"] for r in table.records]
    ['mle', 'map', 'mean', 'predictive']
    >>> table.row("mean")["accuracy"] > 0.8
    True
    """
    models, named = _check_models(estimator)
    estimates = _check_estimates(estimates, reference)
    baselines = _check_baselines(baselines, estimates)
    extra = ([CALIBRATED] if calibrated else []) + list(baselines)
    level = check_level(level)
    n_bins = _check_bins(n_bins)
    if isinstance(n_bootstrap, bool) or not isinstance(n_bootstrap, numbers.Integral) or n_bootstrap < 0:
        raise ValueError(f"n_bootstrap must be an integer >= 0, got {n_bootstrap!r}")
    if isinstance(n_repeats, bool) or not isinstance(n_repeats, numbers.Integral) or n_repeats < 1:
        raise ValueError(f"n_repeats must be a positive integer, got {n_repeats!r}")
    if as_frame not in ("auto", True, False):
        raise ValueError(f"as_frame must be 'auto', True or False, got {as_frame!r}")
    if cv is not None and train_sizes is not None:
        raise ValueError("cv and train_sizes are two different modes: pass one of them")
    if not refit:
        if extra and (X_train is None or y_train is None):
            raise ValueError(
                "refit=False scores fitted estimators: calibrated and baselines are fitted on X_train, y_train, "
                "which are then required"
            )
        return _compare_fitted(
            models, named, X_test, y_test, estimates, cv, train_sizes, reference, n_bootstrap, level, n_bins,
            random_state, as_frame, X_train, y_train, calibrated, baselines,
        )
    y_train = np.asarray(y_train)
    if y_train.ndim != 1:
        raise ValueError(f"y_train must be 1-d, got shape {y_train.shape}")
    if _n_rows(X_train) != y_train.shape[0]:
        raise ValueError(f"X_train has {_n_rows(X_train)} rows but y_train has {y_train.shape[0]} labels")
    if cv is not None:
        if X_test is not None or y_test is not None:
            raise ValueError("with cv, pass the whole data set as X_train, y_train and no test set")
        mode = "cv"
    else:
        if X_test is None or y_test is None:
            raise ValueError("X_test and y_test are required (or pass cv= for a cross-validated comparison)")
        y_test = np.asarray(y_test)
        if y_test.ndim != 1:
            raise ValueError(f"y_test must be 1-d, got shape {y_test.shape}")
        if _n_rows(X_test) != y_test.shape[0]:
            raise ValueError(f"X_test has {_n_rows(X_test)} rows but y_test has {y_test.shape[0]} labels")
        mode = "holdout" if train_sizes is None else "learning_curve"
    # Semi-supervised models (SemiSupervisedNB) take unlabelled rows, marked -1 in y_train:
    # they are in every training set of those models, in no training set of the others
    # (which cannot use them) nor of the baselines, and never scored.
    semi = {name for name, m in models.items() if _takes_unlabelled(_final(m))}
    unl = np.zeros(y_train.shape[0], dtype=bool)
    if semi:
        marks = _final(models[min(semi)]).unlabelled_mask
        unl = np.asarray(marks(y_train), dtype=bool)
        if unl.all():
            raise ValueError("y_train: every row is unlabelled (-1); a semi-supervised model needs labelled rows too")
        if calibrated:
            raise ValueError(
                "calibrated=True refits the model with calibrate='loo', which a semi-supervised model takes on its "
                "wrapped estimator: compare SemiSupervisedNB(MultinomialNB(calibrate='loo'), ...) as a model of its own"
            )
        if y_test is not None and np.any(marks(y_test)):
            raise ValueError("y_test holds unlabelled rows (-1): only labelled rows can be scored")
    lab_idx, unl_idx = np.flatnonzero(~unl), np.flatnonzero(unl)
    y_lab = y_train[lab_idx]
    classes = np.unique(y_lab)
    if classes.size < 2:
        raise ValueError(f"need at least 2 classes in y_train, found {classes.size}")
    rng = np.random.default_rng(random_state)

    def training(name, labelled):
        """Rows (indices into X_train) of the training set of model ``name`` from its labelled rows."""
        return np.sort(np.concatenate([labelled, unl_idx])) if name in semi else labelled

    # groups: key -> list of per-repeat {estimate: _Prediction}; evidences: key -> list
    groups, evidences, summaries = {}, {}, {}
    attrs = {"mode": mode, "level": level, "n_bootstrap": int(n_bootstrap), "reference": reference, "n_bins": n_bins}
    if semi:
        attrs["n_unlabelled"] = int(unl_idx.size)
    if mode == "holdout":
        y_eval = y_test
        total = len(models)
        X_lab = _rows(X_train, lab_idx) if unl_idx.size else X_train
        for i, (name, template) in enumerate(models.items()):
            rows = training(name, lab_idx)
            X_fit = X_train if rows.size == y_train.shape[0] else _rows(X_train, rows)
            clf = _fit(template, X_fit, y_train[rows], classes)
            key = (name,) if named else ()
            groups[key] = [
                {**_predict_all(clf, X_test, estimates),
                 **_predict_extra(template, X_lab, y_lab, X_test, classes, calibrated, baselines, clf)}
            ]
            evidences[key] = [_log_evidence(_final(clf))]
            summaries[key] = _summary(_final(clf))
            if progress is not None:
                progress(i + 1, total, f"fitted {name}")
        attrs.update(n_train=int(lab_idx.size), n_test=int(y_test.shape[0]))
        index_names = (["model"] if named else []) + ["estimate"]
    elif mode == "cv":
        splitter = _splitter(cv, rng)
        # Folds of the labelled rows (positions in lab_idx, which is every row without
        # a semi-supervised model).
        folds = [(lab_idx[a], lab_idx[b]) for a, b in splitter.split(np.zeros((lab_idx.size, 1)), y_lab)]
        y_eval = y_lab
        position = np.full(y_train.shape[0], -1)
        position[lab_idx] = np.arange(lab_idx.size)
        total = len(models) * (len(folds) + 1)
        done = 0
        for name, template in models.items():
            rows_of = (*estimates, *extra)
            oof = {e: np.zeros((lab_idx.size, classes.size)) for e in rows_of}
            oof_dead = {e: np.zeros(lab_idx.size, dtype=bool) for e in rows_of}
            zero = dict.fromkeys(rows_of, 0)
            reasons = {}
            for train_idx, test_idx in folds:
                rows = training(name, train_idx)
                X_fold, y_fold, X_held = _rows(X_train, rows), y_train[rows], _rows(X_train, test_idx)
                clf = _fit(template, X_fold, y_fold, classes)
                X_fold_lab = X_fold if rows is train_idx else _rows(X_train, train_idx)
                preds = {
                    **_predict_all(clf, X_held, estimates),
                    **_predict_extra(template, X_fold_lab, y_train[train_idx], X_held, classes, calibrated, baselines, clf),
                }
                held = position[test_idx]
                for e, pred in preds.items():
                    if pred.proba is None:
                        reasons.setdefault(e, pred.reason)
                    else:
                        oof[e][held] = pred.proba
                        oof_dead[e][held] = pred.dead
                        zero[e] += pred.zero_rows
                done += 1
                if progress is not None:
                    progress(done, total, f"{name}: fold {done}")
            covered = np.zeros(lab_idx.size, dtype=bool)
            for _, test_idx in folds:
                covered[position[test_idx]] = True
            if not covered.all():
                raise ValueError("cv: the folds' test sets must cover every row once")
            key = (name,) if named else ()
            groups[key] = [
                {
                    e: _Prediction(None, None, reasons[e]) if e in reasons
                    else _Prediction(oof[e], zero[e], None, oof_dead[e])
                    for e in rows_of
                }
            ]
            rows = training(name, lab_idx)
            full = _fit(template, X_train if rows.size == y_train.shape[0] else _rows(X_train, rows), y_train[rows], classes)
            evidences[key] = [_log_evidence(_final(full))]
            summaries[key] = _summary(_final(full))
            done += 1
            if progress is not None:
                progress(done, total, f"{name}: fit on all rows")
        attrs.update(n_folds=len(folds), n_test=int(lab_idx.size))
        index_names = (["model"] if named else []) + ["estimate"]
    else:
        # Sizes count labelled rows; a semi-supervised model's every subset keeps all the unlabelled rows.
        sizes = _train_sizes(train_sizes, lab_idx.size)
        y_eval = y_test
        total = len(models) * sum(1 if s == lab_idx.size else n_repeats for s in sizes)
        done = 0
        for name, template in models.items():
            for size in sizes:
                runs, evs = [], []
                for _ in range(1 if size == lab_idx.size else n_repeats):
                    index = lab_idx[_subset(y_lab, size, rng)]
                    rows = training(name, index)
                    X_sub, y_sub = _rows(X_train, rows), y_train[rows]
                    clf = _fit(template, X_sub, y_sub, classes)
                    X_sub_lab = X_sub if rows is index else _rows(X_train, index)
                    runs.append(
                        {**_predict_all(clf, X_test, estimates),
                         **_predict_extra(template, X_sub_lab, y_train[index], X_test, classes, calibrated, baselines, clf)}
                    )
                    evs.append(_log_evidence(_final(clf)))
                    done += 1
                    if progress is not None:
                        progress(done, total, f"{name}: {size} training rows")
                key = ((name,) if named else ()) + (size,)
                groups[key] = runs
                evidences[key] = evs
        attrs.update(n_test=int(y_test.shape[0]), n_repeats=int(n_repeats), train_sizes=sizes)
        index_names = (["model"] if named else []) + ["train_size", "estimate"]

    y_index = class_index(y_eval, classes, "y_test" if mode != "cv" else "y_train", classes_name="the training classes")
    records = _score(
        groups, evidences, (*estimates, *extra), y_index, n_bins, n_bootstrap, level, reference, rng, index_names
    )
    for rec in records:
        if rec["estimate"] in baselines:
            rec["log_evidence"] = None  # not a Bayesian model of the data
    _add_summaries(records, index_names, summaries)
    attrs.update(calibrated=bool(calibrated), baselines=list(baselines))
    columns = [c for c in records[0] if c not in index_names] if records else []
    return _as_result(index_names, columns, records, attrs, as_frame)


def _compare_fitted(
    models, named, X_test, y_test, estimates, cv, train_sizes, reference, n_bootstrap, level, n_bins, random_state,
    as_frame, X_train=None, y_train=None, calibrated=False, baselines=None,
):
    from sklearn.utils.validation import check_is_fitted

    if cv is not None or train_sizes is not None:
        raise ValueError("refit=False scores fitted estimators on a test set: cv and train_sizes need refitting")
    if X_test is None or y_test is None:
        raise ValueError("X_test and y_test are required")
    y_test = np.asarray(y_test)
    if y_test.ndim != 1:
        raise ValueError(f"y_test must be 1-d, got shape {y_test.shape}")
    if _n_rows(X_test) != y_test.shape[0]:
        raise ValueError(f"X_test has {_n_rows(X_test)} rows but y_test has {y_test.shape[0]} labels")
    classes = None
    groups, evidences, summaries = {}, {}, {}
    for name, clf in models.items():
        check_is_fitted(_final(clf), "stats_")
        if classes is None:
            classes = clf.classes_
        elif not np.array_equal(classes, clf.classes_):
            raise ValueError("the fitted models have different classes")
        key = (name,) if named else ()
        X_extra, y_extra = X_train, None if y_train is None else np.asarray(y_train)
        if _takes_unlabelled(_final(clf)):
            if calibrated:
                raise ValueError(
                    "calibrated=True refits the model with calibrate='loo', which a semi-supervised model takes on "
                    "its wrapped estimator: fit SemiSupervisedNB(MultinomialNB(calibrate='loo'), ...) and compare it"
                )
            if np.any(_final(clf).unlabelled_mask(y_test)):
                raise ValueError("y_test holds unlabelled rows (-1): only labelled rows can be scored")
            if y_extra is not None:
                # The baselines are supervised: the labelled training rows only.
                labelled = np.flatnonzero(~np.asarray(_final(clf).unlabelled_mask(y_extra), dtype=bool))
                X_extra, y_extra = _rows(X_train, labelled), y_extra[labelled]
        # The estimates from the fitted model itself; the calibrated model and the
        # baselines fitted on the training rows given (a clone of this model's settings).
        groups[key] = [
            {**_predict_all(clf, X_test, estimates),
             **(_predict_extra(clf, X_extra, y_extra, X_test, classes, calibrated, baselines)
                if X_train is not None else {})}
        ]
        evidences[key] = [_log_evidence(_final(clf))]
        summaries[key] = _summary(_final(clf))
    rng = np.random.default_rng(random_state)
    y_index = class_index(y_test, classes, "y_test", classes_name="the training classes")
    index_names = (["model"] if named else []) + ["estimate"]
    baselines = baselines or {}
    extra = ([CALIBRATED] if calibrated else []) + list(baselines)
    records = _score(
        groups, evidences, (*estimates, *extra), y_index, n_bins, n_bootstrap, level, reference, rng, index_names
    )
    for rec in records:
        if rec["estimate"] in baselines:
            rec["log_evidence"] = None  # not a Bayesian model of the data
    _add_summaries(records, index_names, summaries)
    attrs = {
        "mode": "holdout",
        "level": level,
        "n_bootstrap": int(n_bootstrap),
        "reference": reference,
        "n_bins": n_bins,
        "n_train": int(sum(_n_fitted(_final(m)) for m in models.values()) / len(models)),
        "n_test": int(y_test.shape[0]),
    }
    columns = [c for c in records[0] if c not in index_names]
    return _as_result(index_names, columns, records, attrs, as_frame)


def _n_fitted(clf):
    """Training rows of a fitted model: its (weighted) class counts; a semi-supervised model's rows, labelled or not."""
    if _takes_unlabelled(clf):
        return float(clf.label_distributions_.shape[0])
    return float(np.sum(clf.class_count_))


def _format_value(value):
    value = np.asarray(value, dtype=np.float64)
    if value.size == 1:
        return f"{float(value):.4g}"
    return f"{value.size} values in [{value.min():.3g}, {value.max():.3g}]"


def hyperparameter_summary(clf):
    """How a fitted estimator set its learned hyperparameters, as one line.

    Evidence-maximised ones (``"evidence"``: the value in ``<name>_``) and integrated
    ones (given as distributions: posterior mean, sd and mode of ``hyper_posterior_``),
    so that :func:`compare` shows the two side by side; None when none was learned.

    Parameters
    ----------
    clf : fitted bayesnb estimator

    Returns
    -------
    str or None
    """
    parts = []
    for name in getattr(clf, "evidence_trace_", {}) or {}:
        value = getattr(clf, f"{name}_", None)
        shown = _format_value(value) if isinstance(value, (numbers.Real, np.ndarray)) else "learned"
        parts.append(f"{name}={shown} (evidence max)")
    hyper = getattr(clf, "hyper_posterior_", None) or {}
    mode = getattr(clf, "hyper_mode_", {}) or {}
    for name, draws in hyper.items():
        draws = np.asarray(draws, dtype=np.float64)
        if draws.ndim == 1:
            parts.append(
                f"{name}={draws.mean():.4g} ± {draws.std(ddof=1):.2g} (integrated, mode {_format_value(mode[name])})"
            )
        else:
            parts.append(f"{name}: {draws.shape[1:]} integrated, mean in [{draws.mean(0).min():.3g}, {draws.mean(0).max():.3g}]")
    return "; ".join(parts) or None


def _add_summaries(records, index_names, summaries):
    """The ``hyperparameters`` column: the summary of each record's model (see :func:`hyperparameter_summary`)."""
    for rec in records:
        key = tuple(rec[n] for n in index_names[:-1])
        rec["hyperparameters"] = summaries.get(key)


def _splitter(cv, rng):
    if isinstance(cv, numbers.Integral) and not isinstance(cv, bool):
        if cv < 2:
            raise ValueError(f"cv must be at least 2 folds, got {cv}")
        from sklearn.model_selection import StratifiedKFold

        return StratifiedKFold(n_splits=int(cv), shuffle=True, random_state=int(rng.integers(2**31 - 1)))
    if hasattr(cv, "split"):
        return cv
    raise ValueError(f"cv must be a number of folds or a splitter with split(X, y), got {cv!r}")


def _percentiles(values, q):
    """Percentile interval; without interpolation where a value is infinite (an infinite
    log loss in some resamples: interpolating would give inf - inf)."""
    values = np.asarray(values, dtype=np.float64)
    method = "linear" if np.all(np.isfinite(values)) else "inverted_cdf"
    return tuple(float(v) for v in np.quantile(values, q, method=method))


def _score(groups, evidences, estimates, y_index, n_bins, n_bootstrap, level, reference, rng, index_names):
    """Point values, bootstrap intervals and paired differences of every group."""
    n = y_index.shape[0]
    # Per (group, estimate): the predictions of each repeat; None when undefined.
    preds_of, reasons, zeros = {}, {}, {}
    for key, runs in groups.items():
        for e in estimates:
            preds = [run[e] for run in runs]
            missing = [p for p in preds if p.proba is None]
            if missing:
                preds_of[key, e] = None
                reasons[key, e] = missing[0].reason
                zeros[key, e] = None
            else:
                preds_of[key, e] = preds
                counts = [p.zero_rows for p in preds]
                zeros[key, e] = counts[0] if len(counts) == 1 else float(np.mean(counts))

    def combine(key, e, per_run):
        return {m: np.mean([r[m] for r in per_run], axis=0) for m in METRICS}

    defined = [k for k in preds_of if preds_of[k] is not None]
    # The resamples' row weights, drawn first (the same draws, in the same order, for
    # every prediction: the differences are paired) and kept as counts in the smallest
    # integer type that holds them (a byte per row and resample, not 8).
    blocks = []
    if n_bootstrap and defined:
        for W in _bootstrap_blocks(n, n_bootstrap, rng):
            blocks.append(W.astype(np.min_scalar_type(int(W.max()))))
    # One prediction's row terms at a time (n_rows x (3 + n_bins + 2 n_classes + 1)):
    # kept for every prediction at once, and stacked side by side for one product per
    # block, they were two copies of 2 MiB per prediction at 20 classes and 4,700 test
    # rows, 600 MiB for the 144 predictions of a learning curve.
    ones = np.ones((1, n))
    point, per_block = {}, {}
    for k in defined:
        points, runs = [], []
        for p in preds_of[k]:
            t = _RowTerms(y_index, p.proba, n_bins, p.dead)
            points.append(t.evaluate(ones))
            runs.append([t.evaluate(W.astype(np.float64)) for W in blocks])
        point[k] = combine(*k, points)
        # Each block's metrics averaged over the repeats, then the blocks end to end.
        per_block[k] = [combine(*k, [run[i] for run in runs]) for i in range(len(blocks))]
    for k in preds_of:
        point.setdefault(k, None)
    boot = {
        k: {m: np.concatenate([b[m] for b in per_block[k]]) if per_block[k] else [] for m in METRICS}
        for k in defined
    }
    q = [(1 - level) / 2, (1 + level) / 2]

    records = []
    for key in groups:
        for e in estimates:
            k = (key, e)
            rec = dict(zip(index_names, list(key) + [e]))
            values = point[k]
            for m in METRICS:
                rec[m] = None if values is None else float(values[m][0])
            ev = evidences[key]
            # None for a semi-supervised model (no closed-form evidence; see compare).
            rec["log_evidence"] = None if any(v is None for v in ev) else float(np.mean(ev))
            rec["zero_likelihood_rows"] = zeros[k]
            rec["available"] = values is not None
            rec["reason"] = reasons.get(k)
            for m in METRICS:
                lo = hi = None
                if values is not None and n_bootstrap:
                    lo, hi = _percentiles(boot[k][m], q)
                rec[f"{m}_lo"], rec[f"{m}_hi"] = lo, hi
            ref = (key, reference) if reference is not None else None
            for m in METRICS:
                d = dlo = dhi = None
                if ref is not None and values is not None and point.get(ref) is not None:
                    # Both infinite (rows impossible under both): no difference to report (NaN).
                    with np.errstate(invalid="ignore"):
                        d = float(values[m][0] - point[ref][m][0])
                        if n_bootstrap:
                            dlo, dhi = _percentiles(boot[k][m] - boot[ref][m], q)
                rec[f"{m}_diff"], rec[f"{m}_diff_lo"], rec[f"{m}_diff_hi"] = d, dlo, dhi
            records.append(rec)
    return records
