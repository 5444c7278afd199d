r"""Model comparison by marginal likelihood: Bayes factors, feature relevance, evidence curves.

* :func:`log_marginal_likelihood` and :func:`log_bayes_factor`: the evidence of fitted
  models on the data they were fitted on, put on a common footing (the same observable,
  the same base measure) before two are compared;
* :func:`relevance_log_bayes_factor`: for every feature at once, the Bayes factor of
  "its distribution depends on the class" against "one distribution for all classes";
  :class:`BayesFactorSelector` selects features by it (a scikit-learn transformer, like
  ``SelectKBest``);
* :func:`evidence_curve` and :func:`plot_evidence_curve`: the log evidence of the
  training data against a symmetric :math:`\alpha`, with the held-out log loss on a twin
  axis and the evidence-chosen :math:`\alpha` (``alpha="evidence"``) marked.

The learning of hyperparameters from the evidence itself is in
:mod:`bayesnb.core.empirical_bayes`. matplotlib is imported only by the plotting function.
"""

from __future__ import annotations

import numbers
import warnings
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, clone
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.validation import check_is_fitted

from bayesnb.core import _fitted, families
from bayesnb.core._validation import check_sample_weight, class_index, label_rows

__all__ = [
    "log_marginal_likelihood",
    "log_bayes_factor",
    "relevance_log_bayes_factor",
    "BayesFactorSelector",
    "EvidenceCurve",
    "evidence_curve",
    "plot_evidence_curve",
]

# What each estimator's evidence is a probability of: integer count vectors (a
# probability mass function), category codes (a pmf) or real vectors (a density with
# respect to Lebesgue measure). Two evidences are comparable only on the same kind and
# the same matrix of values.
_COUNTS = "count vectors (probability mass)"
_CODES = "category codes (probability mass)"
_REAL = "real vectors (density w.r.t. Lebesgue measure)"
# The measure of a family's evidence follows from what one feature value is.
_OF_SUPPORT = {"counts": _COUNTS, "binary": _COUNTS, "codes": _CODES, "real": _REAL, "positive": _REAL}


def _front(model, who, *, needs=None):
    """``model``'s FittedModel, read here once, refused unless of one family (with member ``needs``).

    ``model`` is a fitted estimator or its pytree (``fitted_model()``); an unfitted
    estimator of a known family raises scikit-learn's ``NotFittedError``.
    """
    name = type(model).__name__
    if isinstance(model, _fitted.FittedModel):
        family, name = model.family, model.name
    else:
        try:
            family = model.family_
        except (AttributeError, ValueError):
            family = None
    if not isinstance(family, families.Family) or (needs is not None and getattr(family, needs) is None):
        able = [n for n in families.names() if needs is None or getattr(families.get(n), needs) is not None]
        raise TypeError(
            f"{who} must be a fitted bayesnb estimator of one family ({', '.join(able)}); got {name}"
        )
    return _fitted.as_fitted(model)


def _kind(fitted):
    return _OF_SUPPORT[fitted.family.support]


def _rows(fitted, X, y, sample_weight, who):
    """``X`` as ``fitted`` sees it, class indices and weights; refuses data it was not fitted on."""
    Xv = fitted.validate(X)
    y = label_rows(y, n_rows=Xv.shape[0])  # a misshapen y is reported as it is
    try:
        y_index = class_index(y, fitted.classes)
    except ValueError as err:  # a label outside the classes
        raise ValueError(f"{who} was not fitted on these data: {err}") from None
    w = check_sample_weight(sample_weight, Xv.shape[0])
    if not _fitted.fitted_on(fitted, Xv, y_index, w):
        raise ValueError(
            f"{who} was not fitted on these data: the sufficient statistics of X, y (and "
            "sample_weight) differ from those it holds. Pass the rows it was fitted on "
            "(all of them, with the same weights)."
        )
    return Xv, y_index, np.ones(Xv.shape[0]) if w is None else np.asarray(w, dtype=np.float64)


def _footing(fitted, X, y, sample_weight, length_prior, who):
    """(observed matrix, log p(observed, y)) of one fitted model (a FittedModel)."""
    Xv, y_index, w = _rows(fitted, X, y, sample_weight, who)
    value = _fitted.log_evidence(fitted)
    offset = fitted.family.log_evidence_offset
    if offset is not None:
        value += offset(Xv, y_index, w, fitted.n_classes, length_prior=length_prior)
    return Xv, value


def log_marginal_likelihood(model, X, y, *, sample_weight=None, length_prior=None):
    r"""Log evidence :math:`\log p(X, y)` of a fitted model, as a probability of its observable.

    The evidence under the model's prior (with its hyperparameters as fitted, e.g. the
    learned ``alpha_`` of ``alpha="evidence"``) of the rows it was fitted on, written as
    the probability of what the model observes:

    * :class:`~bayesnb.MultinomialNB`: the integer count vectors. Its own
      ``log_evidence()`` scores the token *sequences* given the row lengths; here the
      multinomial coefficient :math:`\sum_i (\log n_i! - \sum_j \log x_{ij}!)` is added,
      and the row lengths get a model of their own, :math:`n_i \mid y_i = c \sim
      \mathrm{Poisson}(\lambda_c)`, :math:`\lambda_c \sim \mathrm{Gamma}` (``length_prior``),
      so that the whole count vector is accounted for;
    * :class:`~bayesnb.PoissonNB`: the count vectors (its evidence already is);
    * :class:`~bayesnb.BernoulliNB`: the 0/1 matrix it sees after ``binarize``: a
      probability mass function on count vectors that lives on :math:`\{0, 1\}^F`;
    * :class:`~bayesnb.CategoricalNB`: the category codes;
    * :class:`~bayesnb.GaussianNB`, :class:`~bayesnb.GaussianBayesClassifier`: the real
      vectors, a density (with the default data-scaled prior it is an empirical-Bayes
      evidence, see :class:`~bayesnb.GaussianNB`).

    Every case includes the labels' part :math:`\log p(y)`. Weighted rows count as
    copies.

    Parameters
    ----------
    model : fitted estimator (see above), or its FittedModel
    X : array-like or sparse matrix of shape (n_samples, n_features)
        The rows the model was fitted on (all of them).
    y : array-like of shape (n_samples,)
    sample_weight : array-like of shape (n_samples,), optional
        The weights it was fitted with.
    length_prior : bayesnb.core.priors.Gamma, optional
        ``MultinomialNB`` only: Gamma prior (scalar ``concentration``, ``rate``) on the
        Poisson rate of the row lengths, the same for every class. Default
        ``Gamma(1, 1 / mean length)``: an exponential prior whose mean is the average
        length.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If the model was not fitted on ``X, y`` (its statistics differ), or, for
        ``MultinomialNB``, the counts are not integers.
    TypeError
        For another kind of model.

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import BernoulliNB
    >>> from bayesnb.analysis.evidence import log_marginal_likelihood
    >>> X, y = np.array([[1, 0], [1, 1], [0, 1]]), np.array([0, 0, 1])
    >>> clf = BernoulliNB().fit(X, y)
    >>> bool(np.isclose(log_marginal_likelihood(clf, X, y), clf.log_evidence()))
    True
    """
    return _footing(_front(model, "model"), X, y, sample_weight, length_prior, "model")[1]


def _same_matrix(A, B):
    """Number of entries where two (dense or sparse) matrices differ, or None if shapes differ."""
    if A.shape != B.shape:
        return None
    if sp.issparse(A) or sp.issparse(B):
        A = sp.csr_matrix(A, dtype=np.float64)
        B = sp.csr_matrix(B, dtype=np.float64)
        return int((A != B).nnz)
    return int(np.count_nonzero(np.asarray(A, dtype=np.float64) != np.asarray(B, dtype=np.float64)))


def log_bayes_factor(model_1, model_2, X, y, *, sample_weight=None, length_prior=None):
    r"""Log Bayes factor :math:`\log p(X, y \mid M_1) - \log p(X, y \mid M_2)` of two fitted models.

    **Common footing.** A Bayes factor compares two probabilities of the *same* data. Both
    models must have been fitted on ``X, y`` (and ``sample_weight``): this is checked
    against their statistics. Each evidence is then read as a probability of the model's
    observable (:func:`log_marginal_likelihood`): count vectors (``MultinomialNB`` with a
    Gamma-Poisson model of the row lengths and its multinomial coefficient,
    ``PoissonNB``, ``BernoulliNB`` — whose counts are 0/1), category codes, or real
    vectors (a density). The factor is defined only when both observables are the same
    kind *and* the same matrix of values:

    * Bernoulli vs multinomial event model on the same documents: ``BernoulliNB`` sees
      the presence matrix :math:`B = [X > \text{binarize}]` and ``MultinomialNB`` the
      counts :math:`X`. When the documents are 0/1 (:math:`B = X`) both are probability
      mass functions on count vectors, evaluated at the same point, and the factor
      compares the two event models (the Bernoulli one also gives the absent words a
      probability; the multinomial one explains the row lengths by its length model).
      When a count exceeds 1 the two models describe different data (the Bernoulli
      model gives probability zero to a count of 2), so the call is refused: compare
      the event models on presence by fitting both on ``(X > 0).astype(int)``.
    * A density (Gaussian) against a probability mass (counts, codes): refused.
    * Models of the same family with different hyperparameters, or ``alpha="evidence"``
      against a fixed ``alpha``: always comparable (with learned hyperparameters the
      factor is an empirical-Bayes one, which favours the model whose prior was tuned).

    The value does not depend on the order of the rows, and swapping the models
    changes its sign.

    Parameters
    ----------
    model_1, model_2 : fitted estimators, or their FittedModels
    X : array-like or sparse matrix of shape (n_samples, n_features)
        The rows both models were fitted on.
    y : array-like of shape (n_samples,)
    sample_weight : array-like of shape (n_samples,), optional
    length_prior : bayesnb.core.priors.Gamma, optional
        Prior on the row-length rate of a ``MultinomialNB`` (see
        :func:`log_marginal_likelihood`).

    Returns
    -------
    float
        Positive values favour ``model_1``; :math:`\exp` of it is the Bayes factor.

    Raises
    ------
    ValueError
        If the models are not on a common footing (different classes, data they were not
        fitted on, different observables).

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import BernoulliNB, MultinomialNB
    >>> from bayesnb.analysis.evidence import log_bayes_factor
    >>> X = np.array([[1, 0, 1], [1, 1, 0], [0, 1, 1], [0, 1, 0]])
    >>> y = np.array([0, 0, 1, 1])
    >>> bern, mult = BernoulliNB().fit(X, y), MultinomialNB().fit(X, y)
    >>> bf = log_bayes_factor(bern, mult, X, y)
    >>> bool(np.isclose(bf, -log_bayes_factor(mult, bern, X, y)))
    True
    """
    fitted_1 = _front(model_1, "model_1")
    fitted_2 = _front(model_2, "model_2")
    kind_1, kind_2 = _kind(fitted_1), _kind(fitted_2)
    names = (fitted_1.name, fitted_2.name)
    if not np.array_equal(fitted_1.classes, fitted_2.classes):
        raise ValueError(
            f"the models have different classes ({fitted_1.classes!r} vs {fitted_2.classes!r}); "
            "a Bayes factor needs both fitted on the same labels"
        )
    if kind_1 != kind_2:
        raise ValueError(
            f"no common footing: {names[0]} models {kind_1} and "
            f"{names[1]} models {kind_2}; their evidences are not "
            "probabilities of the same observable"
        )
    X1, v1 = _footing(fitted_1, X, y, sample_weight, length_prior, "model_1")
    X2, v2 = _footing(fitted_2, X, y, sample_weight, length_prior, "model_2")
    differ = _same_matrix(X1, X2)
    if differ:
        hint = ""
        binary = [f.name for f in (fitted_1, fitted_2) if f.family.support == "binary"]
        if binary:
            hint = (
                f" {binary[0]} models the 0/1 matrix of X after binarize, which differs from the "
                "values the other model sees; compare the two on presence by fitting both on "
                "(X > 0).astype(int)."
            )
        raise ValueError(
            f"no common footing: {names[0]} and {names[1]} see different values in "
            f"{differ} entries of X, so their evidences are probabilities of different data.{hint}"
        )
    return v1 - v2


# ----------------------------------------------------------------------------- relevance

def relevance_log_bayes_factor(model):
    r"""Per-feature log Bayes factor of class dependence, for every feature at once.

    For feature :math:`j`, :math:`M_1` is the fitted model's own assumption — a parameter
    :math:`\theta_{cj}` per class, each with the model's prior — and :math:`M_0` has one
    :math:`\theta_j` shared by all classes under the same prior (the feature carries no
    information about the class). Everything else being equal, the rest of the evidence
    cancels:

    .. math::

        \log\mathrm{BF}_j = \sum_c \log p(D_{cj} \mid M_1) - \log p(D_{\cdot j} \mid M_0).

    Positive values favour class dependence. Vectorised over the features from the
    fitted statistics: Beta-Bernoulli for ``BernoulliNB``, Dirichlet-categorical for
    ``CategoricalNB``, the Normal-Inverse-Gamma evidence for ``GaussianNB``, and for
    ``MultinomialNB`` the Beta aggregate of the Dirichlet ("word :math:`j` or another
    word", see :func:`bayesnb.core.families.multinomial.relevance_log_bayes_factor`).

    Parameters
    ----------
    model : fitted MultinomialNB, BernoulliNB, CategoricalNB or GaussianNB, or its FittedModel
        Its prior must be the same for every class.

    Returns
    -------
    ndarray of shape (n_features,)

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import BernoulliNB
    >>> from bayesnb.analysis.evidence import relevance_log_bayes_factor
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1], 50)
    >>> X = np.column_stack([y ^ (rng.random(100) < 0.1), rng.random(100) < 0.5]).astype(int)
    >>> bf = relevance_log_bayes_factor(BernoulliNB().fit(X, y))
    >>> bool(bf[0] > 10 and bf[1] < 0)
    True
    """
    fitted = _front(model, "model", needs="relevance_log_bayes_factor")
    return np.asarray(fitted.family.relevance_log_bayes_factor(fitted.prior, fitted.stats), dtype=np.float64)


class BayesFactorSelector(SelectorMixin, BaseEstimator):
    """Select the features with the largest relevance Bayes factors (like ``SelectKBest``).

    Fits ``estimator`` on the training data and scores every feature by
    :func:`relevance_log_bayes_factor`: the log Bayes factor of "the feature's
    distribution depends on the class" against "it does not". Keeps the ``k`` highest
    (ties broken as ``SelectKBest`` does), and of those only the ones scoring at least
    ``threshold`` when it is given (``threshold=0``: only features the evidence favours as
    class-dependent).

    Parameters
    ----------
    estimator : MultinomialNB, BernoulliNB, CategoricalNB or GaussianNB, default=None
        The model whose evidence scores the features (cloned); ``None`` means
        ``BernoulliNB()`` (presence of each feature, for counts or 0/1 data). Its
        hyperparameters may be ``"evidence"`` (one prior shared by the classes).
    k : int or "all", default=10
        Number of features to keep.
    threshold : float or None, default=None
        Smallest log Bayes factor kept.

    Attributes
    ----------
    estimator_ : the fitted estimator
    scores_ : ndarray of shape (n_features,)
        Log relevance Bayes factors.
    n_features_in_ : int
    feature_names_in_ : ndarray of str, when fitted on a DataFrame with string columns

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.pipeline import make_pipeline
    >>> from bayesnb import BernoulliNB
    >>> from bayesnb.analysis.evidence import BayesFactorSelector
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1], 50)
    >>> noise = (rng.random((100, 5)) < 0.5).astype(int)
    >>> X = np.column_stack([noise, y ^ (rng.random(100) < 0.1)])
    >>> pipe = make_pipeline(BayesFactorSelector(k=1), BernoulliNB()).fit(X, y)
    >>> pipe[0].get_support(indices=True).tolist()
    [5]
    """

    def __init__(self, estimator=None, k=10, threshold=None):
        self.estimator = estimator
        self.k = k
        self.threshold = threshold

    def fit(self, X, y, sample_weight=None):
        """Fit the estimator and score every feature.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional

        Returns
        -------
        self
        """
        self._check_params()
        est = _default_selector_estimator() if self.estimator is None else clone(self.estimator)
        est.fit(X, y, sample_weight=sample_weight)
        try:
            _front(est, "estimator", needs="relevance_log_bayes_factor")
        except TypeError as err:
            raise TypeError(str(err).replace("must be a fitted", "must be one of the")) from None
        self.estimator_ = est
        self.scores_ = relevance_log_bayes_factor(est)
        self.n_features_in_ = est.n_features_in_
        if hasattr(est, "feature_names_in_"):
            self.feature_names_in_ = est.feature_names_in_
        return self

    def _check_params(self):
        k = self.k
        if not (isinstance(k, str) and k == "all") and (
            isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 0
        ):
            raise ValueError(f"k must be a non-negative int or 'all', got {k!r}")
        t = self.threshold
        if t is not None and (isinstance(t, bool) or not isinstance(t, numbers.Real) or np.isnan(t)):
            raise ValueError(f"threshold must be a number or None, got {t!r}")

    def _get_support_mask(self):
        check_is_fitted(self, "scores_")
        self._check_params()
        scores = self.scores_
        n = scores.size
        k = n if self.k == "all" else int(self.k)
        if k > n:
            warnings.warn(f"k={k} is greater than n_features={n}; all features are kept", UserWarning, stacklevel=2)
            k = n
        mask = np.zeros(n, dtype=bool)
        if k:
            # Stable order, the last k: SelectKBest's tie-breaking.
            mask[np.argsort(scores, kind="mergesort")[-k:]] = True
        if self.threshold is not None:
            mask &= scores >= self.threshold
        return mask

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        est = _default_selector_estimator() if self.estimator is None else self.estimator
        if hasattr(est, "__sklearn_tags__"):
            tags.input_tags.sparse = est.__sklearn_tags__().input_tags.sparse
        tags.target_tags.required = True
        return tags


# ----------------------------------------------------------------------------- curve


class EvidenceCurve(NamedTuple):
    """Log evidence (and held-out log loss) over a grid of symmetric concentrations.

    Attributes
    ----------
    alphas : ndarray of shape (n_alphas,)
    log_evidence : ndarray of shape (n_alphas,)
        ``log_evidence()`` of the model fitted with each ``alpha`` (labels and features).
    log_loss : ndarray of shape (n_alphas,) or None
        Mean held-out log loss of ``predict_proba`` with each ``alpha`` (None without
        held-out data).
    alpha_evidence : float
        The ``alpha_`` learned with ``alpha="evidence"``.
    trace : EvidenceTrace
        Its Newton iterates.
    log_evidence_at_optimum : float
    """

    alphas: np.ndarray
    log_evidence: np.ndarray
    log_loss: np.ndarray | None
    alpha_evidence: float
    trace: object
    log_evidence_at_optimum: float


def _default_selector_estimator():
    # Looked up through the persistence table of estimator classes, which the estimators
    # fill on import: this layer does not import the estimators.
    from bayesnb.io.persistence import estimator_class

    return estimator_class("BernoulliNB")()


# An evidence curve runs over a symmetric Dirichlet / Beta concentration.
_CURVE_PARAMS = ("alpha", "alpha_scope")


def evidence_curve(estimator, X, y, X_val=None, y_val=None, *, alphas=None, sample_weight=None):
    r"""Log evidence of the training data over symmetric :math:`\alpha`, and held-out log loss.

    The statistics are computed once; every :math:`\alpha` only changes the prior (the
    estimator's own ``partial_fit`` mechanism: priors and posteriors are rebuilt from the
    statistics).

    Parameters
    ----------
    estimator : MultinomialNB, BernoulliNB or CategoricalNB
        Unfitted template (cloned); its other parameters are kept, ``alpha`` is set to
        each grid value with ``alpha_scope="shared"``.
    X, y : training data
    X_val, y_val : held-out data, optional
    alphas : array-like of positive floats, optional
        Default: 49 values spaced evenly in :math:`\log\alpha` over three decades on each
        side of the evidence-chosen :math:`\hat\alpha`.
    sample_weight : array-like of shape (n_samples,), optional

    Returns
    -------
    EvidenceCurve

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import MultinomialNB
    >>> from bayesnb.analysis.evidence import evidence_curve
    >>> rng = np.random.default_rng(0)
    >>> X = rng.poisson([[6, 1, 1, 0.2]] * 30 + [[1, 1, 6, 0.2]] * 30)
    >>> y = np.repeat([0, 1], 30)
    >>> curve = evidence_curve(MultinomialNB(), X, y, alphas=np.geomspace(0.01, 100, 9))
    >>> best_on_grid = curve.alphas[np.argmax(curve.log_evidence)]
    >>> bool(curve.alpha_evidence / 10 < best_on_grid < curve.alpha_evidence * 10)
    True
    >>> bool(curve.log_evidence_at_optimum >= curve.log_evidence.max())
    True
    """
    from sklearn.metrics import log_loss

    if not all(p in estimator.get_params(deep=False) for p in _CURVE_PARAMS):
        raise TypeError(
            "estimator must be one of the estimators with a symmetric concentration alpha learnable by "
            f"the evidence (parameters {', '.join(_CURVE_PARAMS)}: MultinomialNB, BernoulliNB, "
            f"CategoricalNB); got {type(estimator).__name__}"
        )
    if (X_val is None) != (y_val is None):
        raise ValueError("give both X_val and y_val, or neither")
    est = clone(estimator).set_params(alpha="evidence", alpha_scope="shared")
    est.fit(X, y, sample_weight=sample_weight)
    alpha_hat, trace = float(est.alpha_), est.evidence_trace_["alpha"]
    at_optimum = float(est.log_evidence())
    if alphas is None:
        alphas = np.geomspace(alpha_hat * 1e-3, alpha_hat * 1e3, 49)
    alphas = np.asarray(alphas, dtype=np.float64).ravel()
    if alphas.size == 0 or not np.all(np.isfinite(alphas)) or np.any(alphas <= 0):
        raise ValueError("alphas must be a non-empty array of finite values > 0")
    evidence = np.empty(alphas.size)
    loss = None if X_val is None else np.empty(alphas.size)
    for i, a in enumerate(alphas):
        est.update_prior(alpha=float(a))
        evidence[i] = est.log_evidence()
        if loss is not None:
            loss[i] = log_loss(y_val, est.predict_proba(X_val), labels=est.classes_)
    return EvidenceCurve(alphas, evidence, loss, alpha_hat, trace, at_optimum)


def plot_evidence_curve(estimator, X, y, X_val=None, y_val=None, *, alphas=None, sample_weight=None, ax=None):
    r"""Plot the log evidence against :math:`\alpha`, with the held-out log loss on a twin axis.

    The evidence-chosen :math:`\hat\alpha` (``alpha="evidence"``) is marked with a
    vertical line and its Newton iterates as points on the curve; with held-out data the
    log loss is drawn against the right-hand axis and its minimum on the grid marked.
    matplotlib is imported here; without ``ax`` a new Figure is made without pyplot
    (headless-safe): save it with ``ax.figure.savefig(path)``.

    Parameters
    ----------
    estimator, X, y, X_val, y_val, alphas, sample_weight
        As for :func:`evidence_curve`.
    ax : matplotlib Axes, optional

    Returns
    -------
    ax : matplotlib Axes
        The evidence axis; the log-loss axis is ``ax.right_ax`` (None without held-out
        data).

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import MultinomialNB
    >>> from bayesnb.analysis.evidence import plot_evidence_curve
    >>> rng = np.random.default_rng(0)
    >>> X = rng.poisson([[6, 1, 1, 0.2]] * 30 + [[1, 1, 6, 0.2]] * 30)
    >>> y = np.repeat([0, 1], 30)
    >>> ax = plot_evidence_curve(MultinomialNB(), X[::2], y[::2], X[1::2], y[1::2], alphas=np.geomspace(0.01, 100, 9))
    >>> ax.get_ylabel(), ax.right_ax.get_ylabel()
    ('log evidence', 'held-out log loss')
    >>> ax.figure.savefig("evidence_curve.png")  # doctest: +SKIP
    """
    curve = evidence_curve(estimator, X, y, X_val, y_val, alphas=alphas, sample_weight=sample_weight)
    from bayesnb.analysis.plots import _new_axes

    ax = _new_axes(ax, (6.4, 4.2))
    ax.plot(curve.alphas, curve.log_evidence, color="#1f77b4", label="log evidence (train)")
    iterates = curve.trace.values[:, 0, 0]
    # The trace holds the feature part; shift it onto the total evidence at the optimum.
    shift = curve.log_evidence_at_optimum - curve.trace.log_evidence[-1]
    ax.plot(iterates, curve.trace.log_evidence + shift, "o", ms=4, color="#1f77b4", alpha=0.6, label="Newton iterates")
    ax.axvline(curve.alpha_evidence, color="#1f77b4", ls="--", lw=1, label=f"evidence: α = {curve.alpha_evidence:.3g}")
    ax.set_xscale("log")
    ax.set_xlabel("α")
    ax.set_ylabel("log evidence", color="#1f77b4")
    handles, labels = ax.get_legend_handles_labels()
    right = None
    if curve.log_loss is not None:
        right = ax.twinx()
        right.plot(curve.alphas, curve.log_loss, color="#d62728", label="held-out log loss")
        best = curve.alphas[int(np.argmin(curve.log_loss))]
        right.axvline(best, color="#d62728", ls=":", lw=1, label=f"min held-out log loss: α = {best:.3g}")
        right.set_ylabel("held-out log loss", color="#d62728")
        h, lab = right.get_legend_handles_labels()
        handles, labels = handles + h, labels + lab
    ax.legend(handles, labels, loc="best", fontsize="small")
    ax.set_title(f"{type(estimator).__name__}: evidence and held-out loss against α")
    ax.right_ax = right
    return ax
