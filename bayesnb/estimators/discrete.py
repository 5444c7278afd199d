"""Estimators for discrete features: multinomial counts, binary and categorical."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.preprocessing import binarize as _binarize
from sklearn.utils.validation import check_is_fitted, validate_data

from bayesnb.analysis import loo as _loo
from bayesnb.core import class_prior as _class_prior
from bayesnb.core import empirical_bayes
from bayesnb.core import missing as _missing
from bayesnb.core._validation import (
    binarize_csr,
    check_binary,
    check_category_codes,
    check_category_table,
    check_class_targets,
    check_estimate,
    check_non_negative,
    is_sparse_threshold,
    sparse_counts_input,
)
from bayesnb.core.empirical_bayes import check_scope, is_evidence
from bayesnb.core.families import bernoulli, categorical, multinomial
from bayesnb.core.families._dirichlet import UndefinedModeError, map_refusal_in_words
from bayesnb.core.priors import (
    beta_from_alpha,
    categorical_dirichlet_from_alpha,
    dirichlet_from_alpha,
)
from bayesnb.estimators import _categories
from bayesnb.estimators._base import _CALIBRATE_PARAM, BaseNB, SklearnCounterpart
from bayesnb.estimators._hyper import _HYPER_PARAMS

__all__ = ["MultinomialNB", "BernoulliNB", "CategoricalNB"]


class _DiscreteNB(BaseNB):
    """Families with Dirichlet/Beta priors set by a scikit-learn style ``alpha``."""

    def __init__(
        self,
        *,
        alpha=1.0,
        alpha_scope="shared",
        class_alpha=1.0,
        class_prior=None,
        fit_prior=True,
        estimate="predictive",
        missing="error",
        temperature=1.0,
        calibrate=None,
        hyper_chains=2,
        hyper_warmup=500,
        hyper_draws=500,
        hyper_predict_draws=200,
        random_state=None,
    ):
        super().__init__(
            class_alpha=class_alpha, class_prior=class_prior, fit_prior=fit_prior, estimate=estimate, missing=missing,
            temperature=temperature,
            calibrate=calibrate,
            hyper_chains=hyper_chains,
            hyper_warmup=hyper_warmup,
            hyper_draws=hyper_draws,
            hyper_predict_draws=hyper_predict_draws,
            random_state=random_state,
        )
        self.alpha = alpha
        self.alpha_scope = alpha_scope

    @classmethod
    def _params_from_prior(cls, prior):
        return {"alpha": prior.concentration}

    def _learns_alpha(self):
        return is_evidence(self.alpha)

    def _make_prior(self):
        scope = check_scope(self.alpha_scope)
        if self._learns_alpha():
            self.alpha_, self.evidence_trace_["alpha"] = self._alpha_by_evidence(scope)
        elif scope != "shared":
            raise ValueError(
                f"alpha_scope={scope!r} says which concentrations alpha='evidence' learns; with a "
                f"given alpha={self.alpha!r} it must stay 'shared' (pass an array to set alpha per "
                "class or per feature)"
            )
        else:
            self.alpha_ = self.alpha
        return self._prior_from_alpha(self.alpha_)

    def _alpha_by_evidence(self, scope):  # pragma: no cover - abstract
        raise NotImplementedError

    def _prior_from_alpha(self, alpha):  # pragma: no cover - abstract
        raise NotImplementedError

    # ------------------------------------------------ "map" refusals in the user's terms
    def _feature_map_refusal(self, kind, err):
        return self._map_refusal(err)

    def _map_refusal(self, err, feature_words=None, labels=None):
        """The refusal of ``estimate='map'`` for ``err`` (an ``UndefinedModeError`` of this model's feature posterior).

        ``feature_words`` (feature index -> words) and ``labels`` (feature index -> its
        category labels or None) say how an enclosing model names this model's features
        (:class:`~bayesnb.estimators.mixed.MixedNB`, whose blocks see codes, not the
        user's columns); by default this model's own column names and labels. A
        leave-one-out refusal (``err.row``) names the training row left out.
        """
        where, why = self._cell_words(err.index, err.value, feature_words or self._feature_words, labels)
        c = int(err.index[0])
        return map_refusal_in_words(
            where, err.value, why, "alpha", c, _class_prior.class_words(self.classes_, c), err.row
        )

    def _feature_words(self, j):
        """How a message names feature ``j``: its column name when fitted on a DataFrame."""
        names = getattr(self, "feature_names_in_", None)
        return f"feature {names[j]!r}" if names is not None else f"feature {j} (column {j} of X)"

    def _cell_words(self, index, value, feature_words, labels=None):
        """``(where, why)``: the cell of a concentration below 1 and what it is made of, in the user's terms."""
        c, j = index[:2]
        prior = float(np.asarray(self.prior_.concentration)[c, j])
        return (
            f"in {_class_prior.class_words(self.classes_, c)}, {feature_words(j)}",
            f"alpha {prior:.4g} plus {value - prior:.4g} weighted counts",
        )

    @property
    def feature_log_prob_(self):
        """Log feature probabilities of the current ``estimate`` (posterior mean for "predictive").

        Read-only: the estimator keeps this array and reuses it for every prediction;
        modify a copy (``np.array(clf.feature_log_prob_)``).
        """
        check_is_fitted(self, "stats_")
        return np.asarray(self._point(check_estimate(self.estimate)).log_probs)

_ALPHA_SCOPE = """
        ``alpha`` and ``class_alpha`` may also be numpyro distributions, e.g.
        ``alpha=dist.Gamma(2.0, 1.0)`` or ``dist.Gamma(2.0, 1.0).expand((n_features,))``
        (for a pair, one per element): hyperpriors, integrated out at ``fit`` by NUTS on
        the collapsed model (see the theory page on hyperpriors and ``hyper_posterior_``).
    alpha_scope : {"shared", "class", "feature"}, default="shared"
        With ``alpha="evidence"``: which concentrations are tied. ``"shared"``: one value
        for every class and feature (the symmetric prior); ``"class"``: one per class;
        ``"feature"``: one per feature, shared by the classes. Must stay ``"shared"``
        when ``alpha`` is given.
"""

_COMMON_PARAMS = (
    """
    class_alpha : float, array-like of shape (n_classes,) or "evidence", default=1.0
        Concentration :math:`\\beta` of the Dirichlet prior on the class proportions.
        ``"evidence"``: the symmetric :math:`\\beta` maximising the evidence of the labels
        (often at a bound, :math:`\\beta \\to \\infty` for even classes; see
        :func:`bayesnb.core.empirical_bayes.class_alpha`), stored in ``class_alpha_``.
    class_prior : array-like of shape (n_classes,), default=None
        Fixed class proportions; overrides the Dirichlet posterior on them.
    fit_prior : bool, default=True
        If False (and ``class_prior`` is None) the class proportions are fixed uniform.
    estimate : {"predictive", "mean", "map", "mle"}, default="predictive"
        What ``predict*`` use: the exact posterior predictive, the posterior-mean plug-in,
        the posterior-mode plug-in or the maximum-likelihood plug-in (for the features
        and the class proportions alike). "map" raises ``ValueError`` when a posterior
        concentration is below 1 (the mode is then not defined). May be changed after
        ``fit`` with ``set_params``: predictions of every estimate come from the same
        posterior.
    temperature : float >= 1 or "loo", default=1.0
        Likelihood tempering: class probabilities
        :math:`\\propto p(y \\mid D)\\, p(x \\mid y, D)^{1/T}` (1: the model as written).
        ``"loo"``: :math:`T` minimising the exact leave-one-out log loss of the training
        rows (:func:`bayesnb.analysis.loo.choose_temperature`), stored in ``temperature_``. A
        calibration device for a misspecified model, not its posterior (see the
        tempering guide); draws, intervals and feature log-odds are tempered alike.
        A large :math:`T` leaves the class proportions at full weight and can hand the
        decision to them (accuracy falls where the classes are unbalanced): prefer
        ``calibrate="loo"``, which fits the class offsets with the scale.
"""
    + _CALIBRATE_PARAM
)

_COMMON_ATTRS = """
    alpha_ : float, ndarray or pair
        The concentration in use: ``alpha`` as given, or the one learned with
        ``alpha="evidence"`` (in a layout ``alpha`` accepts, so that passing it back as
        ``alpha`` gives the same prior).
    class_alpha_ : float, ndarray or None
        The class concentration in use (None when the class proportions are fixed).
    evidence_trace_ : dict of str to EvidenceTrace
        For every hyperparameter learned from the evidence (keys ``"alpha"``,
        ``"class_alpha"``), the Newton iterates (:class:`bayesnb.core.empirical_bayes.EvidenceTrace`);
        empty when none is. Re-learned at every ``fit`` / ``partial_fit`` from all the
        statistics seen.
    classes_ : ndarray of shape (n_classes,)
    class_count_ : ndarray of shape (n_classes,)
        Weighted number of training rows per class.
    stats_ : sufficient statistics pytree (see :mod:`bayesnb.core.stats`)
    prior_ : the feature prior pytree (see :mod:`bayesnb.core.priors`)
    posterior_ : the feature posterior pytree (same type as ``prior_``)
    class_posterior_ : Dirichlet or None
        Posterior on the class proportions (None when they are fixed).
    class_prior_ : ndarray or None
        The fixed class proportions, when fixed.
    class_log_prior_ : ndarray of shape (n_classes,)
        Log class proportions under the current ``estimate``.
    n_features_in_ : int
    feature_names_in_ : ndarray of str, when fitted on a DataFrame with string columns
    hyper_posterior_ : dict of str to ndarray, with hyperpriors only
        Draws of every hyperparameter given as a distribution (``"alpha"``,
        ``"alpha[0]"``, ``"class_alpha"``), shape (hyper_chains * hyper_draws, ...).
    hyper_diagnostics_ : dict, with hyperpriors only
        ``"r_hat"`` and ``"ess"`` (dicts by name), ``"divergences"``, ``"num_chains"``,
        ``"num_samples"``, ``"num_warmup"``.
    hyper_mode_ : dict of str to ndarray, with hyperpriors only
        Posterior mode of the hyperparameters: the prior of ``prior_`` and of the
        "mean" / "map" / "mle" plug-ins (``alpha_`` is its value).
    hyper_predict_index_ : int ndarray, with hyperpriors only
        The draws the integrated predictive averages over.
"""


class MultinomialNB(_DiscreteNB):
    __doc__ = (
        """Naive Bayes for counts (e.g. word counts) with Dirichlet priors.

    :math:`\\theta_c \\sim \\mathrm{Dir}(\\alpha)`, posterior :math:`\\mathrm{Dir}(\\alpha + T_c)`.
    ``estimate="predictive"`` scores a document with the exact Dirichlet-multinomial
    posterior predictive; ``estimate="mean"`` with ``class_prior`` set to the empirical
    class frequencies reproduces ``sklearn.naive_bayes.MultinomialNB(alpha=alpha)``.

    Parameters
    ----------
    alpha : float, array-like of shape (n_features,) or (n_classes, n_features), or "evidence", default=1.0
        Dirichlet concentration of the feature distribution of each class (> 0).
        ``"evidence"``: learned by maximising the log evidence of the training data
        (type-II maximum likelihood, :func:`bayesnb.core.empirical_bayes.learn_prior`)
        over the concentrations that ``alpha_scope`` ties; stored in ``alpha_``.
"""
        + _ALPHA_SCOPE
        + _COMMON_PARAMS
        + _HYPER_PARAMS
        + """
    Attributes
    ----------
"""
        + _COMMON_ATTRS
        + """    feature_count_ : ndarray of shape (n_classes, n_features)
        Weighted token totals :math:`T_{cj}`.
    feature_log_prob_ : ndarray of shape (n_classes, n_features)
        :math:`\\log\\theta` of the current estimate (the posterior mean for "predictive").

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import MultinomialNB
    >>> X = np.array([[2, 0, 1], [3, 1, 0], [0, 4, 1], [0, 3, 2]])
    >>> clf = MultinomialNB().fit(X, [0, 0, 1, 1])
    >>> clf.predict([[1, 0, 0], [0, 2, 1]]).tolist()
    [0, 1]
    """
    )

    _family = multinomial.family

    def _check_X(self, X, reset):
        # Integer CSR counts are not copied to float64, and duplicate entries are left for
        # the consumers that are not linear in a count to sum (see sparse_counts_input).
        X, dtype, integral = sparse_counts_input(X, linear=True)
        X = validate_data(self, X, accept_sparse="csr", dtype=dtype, reset=reset, ensure_all_finite=not integral)
        return check_non_negative(X, type(self).__name__)

    def _alpha_by_evidence(self, scope):
        _, trace = empirical_bayes.learn_prior(
            self._family, self._prior_from_alpha(1.0), self.stats_, ["concentration"], scope, names=("alpha",)
        )
        return empirical_bayes.alpha_layout(trace, scope), trace

    def sklearn_counterpart(self):
        """scikit-learn's ``MultinomialNB`` with this estimator's prior settings, unfitted.

        The hook is documented on the base class (``BaseNB.sklearn_counterpart``).

        Returns
        -------
        SklearnCounterpart
        """
        from sklearn import naive_bayes

        return SklearnCounterpart(naive_bayes.MultinomialNB(alpha=self.alpha), categorical=False)

    def _prior_from_alpha(self, alpha):
        return dirichlet_from_alpha(alpha, (self.classes_.size, self.n_features_in_))

    @property
    def feature_count_(self):
        return np.asarray(self.stats_.feature_count)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        tags.classifier_tags.poor_score = True
        return tags


class BernoulliNB(_DiscreteNB):
    __doc__ = (
        """Naive Bayes for binary features with Beta priors.

    :math:`\\theta_{cj} \\sim \\mathrm{Beta}(a, b)`, posterior
    :math:`\\mathrm{Beta}(a + T_{cj}, b + N_c - T_{cj})`; the exact posterior predictive
    is the posterior-mean plug-in. ``estimate="mean"`` with ``class_prior`` set to the
    empirical class frequencies reproduces ``sklearn.naive_bayes.BernoulliNB(alpha=alpha)``.

    Parameters
    ----------
    alpha : float, array-like, pair (a, b), "evidence" or ("evidence", "evidence"), default=1.0
        Beta prior: a scalar or array (broadcastable to (n_classes, n_features)) is the
        symmetric ``Beta(alpha, alpha)``; a tuple/list of two is ``(a, b)``, each a scalar
        or array. All values > 0. ``"evidence"`` learns a symmetric :math:`a = b`,
        ``("evidence", "evidence")`` learns :math:`a` and :math:`b`, by maximising the log
        evidence of the training data (:func:`bayesnb.core.empirical_bayes.learn_prior`)
        over the values that ``alpha_scope`` ties; stored in ``alpha_``.
    binarize : float or None, default=0.0
        Threshold: values above it are 1, others 0. ``None``: the data must already be
        0/1 (anything else is an error, never silently thresholded).
"""
        + _ALPHA_SCOPE
        + _COMMON_PARAMS
        + _HYPER_PARAMS
        + """
    Attributes
    ----------
"""
        + _COMMON_ATTRS
        + """    feature_count_ : ndarray of shape (n_classes, n_features)
        Weighted number of rows of each class with the feature on.
    feature_log_prob_ : ndarray of shape (n_classes, n_features)
        :math:`\\log\\theta` (probability of "on") of the current estimate.

    Examples
    --------
    >>> from bayesnb import BernoulliNB
    >>> clf = BernoulliNB().fit([[1, 0], [1, 1], [0, 1], [0, 1]], ["a", "a", "b", "b"])
    >>> clf.predict([[1, 0]]).tolist()
    ['a']
    """
    )

    _family = bernoulli.family

    def __init__(
        self,
        *,
        alpha=1.0,
        binarize=0.0,
        alpha_scope="shared",
        class_alpha=1.0,
        class_prior=None,
        fit_prior=True,
        estimate="predictive",
        missing="error",
        temperature=1.0,
        calibrate=None,
        hyper_chains=2,
        hyper_warmup=500,
        hyper_draws=500,
        hyper_predict_draws=200,
        random_state=None,
    ):
        super().__init__(
            alpha=alpha,
            alpha_scope=alpha_scope,
            class_alpha=class_alpha,
            class_prior=class_prior,
            fit_prior=fit_prior,
            estimate=estimate,
            missing=missing,
            temperature=temperature,
            calibrate=calibrate,
            hyper_chains=hyper_chains,
            hyper_warmup=hyper_warmup,
            hyper_draws=hyper_draws,
            hyper_predict_draws=hyper_predict_draws,
            random_state=random_state,
        )
        self.binarize = binarize

    @classmethod
    def _params_from_prior(cls, prior):
        a, b = prior
        # One value for both (the same array, or the same hyperprior site): the symmetric alpha.
        same = a is b or (type(a) is type(b) and not isinstance(a, np.ndarray) and a == b)
        same = same or (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b))
        # binarize=None: the model's rows are 0/1, anything else is an error, not thresholded.
        return {"alpha": a if same else (a, b), "binarize": None}

    def _learns_alpha(self):
        alpha = self.alpha
        if isinstance(alpha, (tuple, list)) and len(alpha) == 2 and any(is_evidence(v) for v in alpha):
            if not all(is_evidence(v) for v in alpha):
                raise ValueError(
                    f"alpha={alpha!r}: learn both a and b with ('evidence', 'evidence'), or give both"
                )
            return True
        return is_evidence(alpha)

    def _alpha_by_evidence(self, scope):
        # alpha="evidence": a = b, one value; ("evidence", "evidence"): a and b.
        pair = not is_evidence(self.alpha)
        fields = ["concentration1", "concentration0"] if pair else [("concentration1", "concentration0")]
        _, trace = empirical_bayes.learn_prior(
            self._family, self._prior_from_alpha(1.0), self.stats_, fields, scope,
            names=("a", "b") if pair else ("alpha",), what="alpha",
        )
        if pair:
            return (empirical_bayes.alpha_layout(trace, scope, 0), empirical_bayes.alpha_layout(trace, scope, 1)), trace
        return empirical_bayes.alpha_layout(trace, scope), trace

    def sklearn_counterpart(self):
        """scikit-learn's ``BernoulliNB`` with this estimator's prior settings, unfitted.

        The hook is documented on the base class (``BaseNB.sklearn_counterpart``).

        Returns
        -------
        SklearnCounterpart
        """
        from sklearn import naive_bayes

        return SklearnCounterpart(naive_bayes.BernoulliNB(alpha=self.alpha, binarize=self.binarize), categorical=False)

    def _cell_words(self, index, value, feature_words, labels=None):
        c, j, on = index
        prior = float(np.asarray(self.prior_.concentration1 if on else self.prior_.concentration0)[c, j])
        which = "present (1)" if on else "absent (0)"
        return (
            f"in {_class_prior.class_words(self.classes_, c)}, the probability that {feature_words(j)} is {which}",
            f"its prior concentration {prior:.4g} plus {value - prior:.4g} weighted rows with the feature {which}",
        )

    def _check_X(self, X, reset):
        given = X
        X, dtype, integral = sparse_counts_input(X)
        X = validate_data(self, X, accept_sparse="csr", dtype=dtype, reset=reset, ensure_all_finite=not integral)
        if self.binarize is None:
            return check_binary(X, type(self).__name__)
        if sp.issparse(X) and sp.issparse(given) and is_sparse_threshold(self.binarize):
            # Values converted above belong to this call and are binarised in place;
            # the caller's own values never are.
            own = not np.may_share_memory(X.data, getattr(given, "data", X.data))
            return binarize_csr(X, self.binarize, overwrite=own)
        X = _binarize(X, threshold=self.binarize)
        if sp.issparse(X):
            X.eliminate_zeros()
        return X

    def _prior_from_alpha(self, alpha):
        return beta_from_alpha(alpha, (self.classes_.size, self.n_features_in_))

    @property
    def feature_count_(self):
        return np.asarray(self.stats_.feature_count)

    @property
    def feature_log_prob_(self):
        return super().feature_log_prob_[..., 1]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.poor_score = True
        return tags


class CategoricalNB(_DiscreteNB):
    __doc__ = (
        """Naive Bayes for categorical features with a Dirichlet prior per (class, feature).

    Features are integer codes ``0 .. K_j - 1`` (e.g. from ``OrdinalEncoder``), or the
    labels of a pandas DataFrame's ``category``, string (object) or boolean columns:
    their codes are learned at fit (``categories_``) and looked up at prediction.
    ``estimate="mean"`` with ``class_prior`` set to the empirical class frequencies
    reproduces ``sklearn.naive_bayes.CategoricalNB(alpha=alpha)``. A code or label not
    seen at fit time gets the posterior share of one new, unobserved category (see
    :mod:`bayesnb.core.families.categorical`) instead of an error; with
    ``missing="ignore"`` a missing label (NaN, None, ``pd.NA``) is left out of its row.
    For columns of numbers (measurements, counts) next to categories use
    :class:`~bayesnb.MixedNB`.

    Parameters
    ----------
    alpha : float, array-like of shape (n_features,) or (n_classes, n_features), or "evidence", default=1.0
        Symmetric Dirichlet concentration of each (class, feature) cell (> 0).
        ``"evidence"``: learned by maximising the log evidence of the training data
        (:func:`bayesnb.core.empirical_bayes.learn_prior`) over the concentrations that
        ``alpha_scope`` ties; stored in ``alpha_``.
    min_categories : int or array-like of shape (n_features,), default=None
        Minimum number of categories per feature; the fitted number is
        ``max(min_categories, X[:, j].max() + 1)``.
"""
        + _ALPHA_SCOPE
        + _COMMON_PARAMS
        + _HYPER_PARAMS
        + """
    Attributes
    ----------
"""
        + _COMMON_ATTRS
        + """    n_categories_ : int ndarray of shape (n_features,)
        At least the number of learned labels of a label column.
    categories_ : dict
        Column position -> ndarray of the labels of a DataFrame's ``category``, string or
        boolean column, label ``k`` having code ``k``: the dtype's categories (pandas
        ``category``, in their order), ``[False, True]`` (boolean) or the sorted distinct
        values (string), learned at fit; ``partial_fit`` appends new labels. Empty when
        every column holds codes. ``sample`` and ``sample_prior`` of a model with label
        columns return a DataFrame with the training columns: label columns as their
        labels (pandas ``Categorical`` with the learned categories, boolean columns as
        bool; a new category with no label, drawn from the share kept for one, is
        missing), code columns as int64.
    category_count_ : list of ndarray of shape (n_classes, n_categories_[j])
    feature_log_prob_ : list of ndarray of shape (n_classes, n_categories_[j])
        Log category probabilities of the current estimate (scikit-learn's layout).

    Examples
    --------
    >>> from bayesnb import CategoricalNB
    >>> clf = CategoricalNB().fit([[0, 1], [0, 2], [1, 0], [1, 0]], [0, 0, 1, 1])
    >>> clf.predict([[0, 2], [1, 0]]).tolist()
    [0, 1]
    """
    )

    _family = categorical.family

    def __init__(
        self,
        *,
        alpha=1.0,
        min_categories=None,
        alpha_scope="shared",
        class_alpha=1.0,
        class_prior=None,
        fit_prior=True,
        estimate="predictive",
        missing="error",
        temperature=1.0,
        calibrate=None,
        hyper_chains=2,
        hyper_warmup=500,
        hyper_draws=500,
        hyper_predict_draws=200,
        random_state=None,
    ):
        super().__init__(
            alpha=alpha,
            alpha_scope=alpha_scope,
            class_alpha=class_alpha,
            class_prior=class_prior,
            fit_prior=fit_prior,
            estimate=estimate,
            missing=missing,
            temperature=temperature,
            calibrate=calibrate,
            hyper_chains=hyper_chains,
            hyper_warmup=hyper_warmup,
            hyper_draws=hyper_draws,
            hyper_predict_draws=hyper_predict_draws,
            random_state=random_state,
        )
        self.min_categories = min_categories

    @classmethod
    def _params_from_prior(cls, prior):
        conc = prior.concentration
        if isinstance(conc, np.ndarray):
            valid = np.arange(conc.shape[-1])[None, :] < np.asarray(prior.n_categories)[:, None]
            cell = conc[..., 0]
            if not np.all(np.where(valid, conc == cell[..., None], True)):
                raise ValueError(
                    "CategoricalNB takes one concentration per (class, feature), shared by the categories; "
                    "the Dirichlet concentrations differ across categories"
                )
            conc = cell
        return {"alpha": conc, "min_categories": np.asarray(prior.n_categories)}

    def sklearn_counterpart(self):
        """scikit-learn's ``CategoricalNB`` with this estimator's prior settings, unfitted.

        The hook is documented on the base class (``BaseNB.sklearn_counterpart``).

        Returns
        -------
        SklearnCounterpart
        """
        from sklearn import naive_bayes

        nb = naive_bayes.CategoricalNB(alpha=self.alpha, min_categories=self.min_categories)
        return SklearnCounterpart(nb, categorical=True)

    def _cell_words(self, index, value, feature_words, labels=None):
        c, j, k = index
        prior = float(np.asarray(self.prior_.concentration)[c, j, min(k, self.prior_.concentration.shape[-1] - 1)])
        where = f"in {_class_prior.class_words(self.classes_, c)}, {feature_words(j)}"
        if k >= self.n_categories_[j]:
            # The slot the family keeps for a category first seen at prediction: its
            # concentration is alpha alone, which no training data can raise.
            return (
                f"{where}, the share kept for a category not seen at fit (every feature has one)",
                "alpha alone: no training row can raise it",
            )
        labels = getattr(self, "categories_", {}).get(j) if labels is None else labels(j)
        if labels is not None and k < len(labels):
            label = labels[k]
            label = label.item() if isinstance(label, np.generic) else label  # 'red', not np.str_('red')
            category = f"category {label!r}"
        else:
            category = f"category code {k}"
        return f"{where}, {category}", f"alpha {prior:.4g} plus {value - prior:.4g} weighted counts"

    def _format_generated(self, X):
        """Generated codes in the user's terms: labels where the model learned labels.

        Without label columns (every column held codes) the int64 codes as they are;
        else a DataFrame with the training columns, each label column decoded
        (:func:`bayesnb.estimators._categories.decode`, the decoding ``MixedNB`` uses).
        """
        labels = getattr(self, "categories_", None)
        if not labels:
            return X
        import pandas as pd

        names = getattr(self, "feature_names_in_", None)
        columns = {}
        for j in range(X.shape[1]):
            key = names[j] if names is not None else j
            columns[key] = _categories.decode(X[:, j], labels[j]) if j in labels else X[:, j].astype(np.int64)
        return pd.DataFrame(columns)

    def _check_X_y(self, X, y, reset):
        # The rows being fitted teach the labels of label columns (see _label_codes).
        self._learning = True
        try:
            return super()._check_X_y(X, y, reset)
        finally:
            del self._learning

    def _input(self, X, reset):
        return super()._input(self._label_codes(X, reset, learn=getattr(self, "_learning", False)), reset)

    def _label_codes(self, X, reset, learn):
        """``X`` with the labels of its label columns replaced by their codes (NaN where missing).

        A DataFrame's ``category``, string and boolean columns hold labels
        (:mod:`bayesnb.estimators._categories`, the mechanism ``MixedNB`` uses too): at fit
        (``learn``) their labels extend ``categories_``; a label not learned gets a code
        past the column's table, a new category. Other input is returned as given.
        """
        if learn and reset:
            self.categories_ = {}
        known = getattr(self, "categories_", None)
        if not (hasattr(X, "iloc") and hasattr(X, "dtypes")) or known is None:
            return X
        labels = [j for j, t in enumerate(X.dtypes) if _categories.is_labels(t)]
        if learn:
            known = dict(known)
            for j in labels:
                if not reset and j not in known:
                    raise TypeError(
                        f"{type(self).__name__}: column {X.columns[j]!r} holds labels ({X.dtypes.iloc[j]}) but held "
                        "integer category codes in the first partial_fit batch; give every batch the same column types"
                    )
                known[j] = _categories.learn(X.iloc[:, j], known.get(j))
            self.categories_ = known
        if not known:
            return X
        n_cat = getattr(self, "n_categories_", None)
        out = X.copy()
        for j, cats in known.items():
            unseen = cats.size if n_cat is None else max(cats.size, int(n_cat[j]))
            out.isetitem(j, _categories.encode(X.iloc[:, j], cats, unseen))
        return out

    def _check_X(self, X, reset):
        X = validate_data(self, X, dtype=None, reset=reset, ensure_all_finite=True)
        try:
            return check_category_codes(X, type(self).__name__)
        except (TypeError, ValueError) as err:
            if np.asarray(X).dtype.kind not in "fO":
                raise
            # What the user can do instead: let CategoricalNB learn the labels from a
            # DataFrame, or model columns of numbers with MixedNB.
            raise type(err)(
                f"{err}. CategoricalNB learns the codes of a pandas DataFrame's category, string and boolean "
                "columns; for columns of numbers (measurements, counts) use MixedNB, which models each column "
                "with its own family"
            ) from None

    def _fit_with_layout(self, layout, X, y, sample_weight=None):
        """``fit(X, y)`` with the table of categories (and a DataFrame's labels) learned from the batches ``layout``.

        ``categories_`` and ``n_categories_`` are those ``fit`` would learn from all the
        rows of ``layout`` (which hold ``X``'s rows and others, labelled or not: the
        unlabelled rows of :class:`~bayesnb.SemiSupervisedNB`), with ``min_categories``;
        the statistics are those of ``X`` alone. See :meth:`BaseNB._fit_with_layout`.
        """
        self._clear_fitted()
        try:
            seen, n_rows = None, 0
            for rows in layout:
                self._learning = True  # the rows teach the labels of label columns (see _label_codes)
                try:
                    codes = self._input(rows, reset=seen is None)
                finally:
                    del self._learning
                codes = codes.X if isinstance(codes, _missing.MaskedX) else codes
                # As in _compute_stats: every entry counts (unobserved ones hold code 0).
                batch = codes.max(axis=0) + 1 if codes.shape[0] else np.zeros(codes.shape[1], np.int64)
                seen = batch if seen is None else np.maximum(seen, batch)
                n_rows += codes.shape[0]
            if seen is None:
                raise ValueError("_fit_with_layout needs at least one batch of rows to learn the categories from")
            X, y = self._check_X_y(X, y, reset=False)
            check_class_targets(y)
            classes = np.unique(y)
            self.n_categories_ = check_category_table(
                seen.astype(np.int64), type(self).__name__, n_classes=classes.size, seen=seen, n_rows=n_rows
            )
            # _compute_stats raises the table to the learned labels and min_categories.
            return self._update(X, y, classes, sample_weight, from_labels=True)
        except BaseException:
            self._clear_fitted()
            raise

    def _compute_stats(self, X, y_index, sample_weight, mask=None):
        # The table of categories comes from every entry (unobserved ones hold code 0).
        seen = X.max(axis=0) + 1 if X.shape[0] else np.zeros(X.shape[1], np.int64)
        n_cat = np.maximum(seen, getattr(self, "n_categories_", 0))
        for j, cats in getattr(self, "categories_", {}).items():
            # Every learned label has its slot, observed in this batch or not.
            n_cat[j] = max(int(n_cat[j]), cats.size)
        if self.min_categories is not None:
            m = np.asarray(self.min_categories)
            if not np.issubdtype(m.dtype, np.integer) or np.any(m < 1) or m.ndim > 1 or (m.ndim == 1 and m.shape != (X.shape[1],)):
                raise ValueError(
                    f"min_categories must be a positive int or an int array of shape ({X.shape[1]},), got {self.min_categories!r}"
                )
            n_cat = np.maximum(n_cat, m)
        self.n_categories_ = check_category_table(
            n_cat.astype(np.int64), type(self).__name__, n_classes=self.classes_.size, seen=seen, n_rows=X.shape[0]
        )
        return self._family.stats(X, y_index, self.classes_.size, sample_weight, mask=mask, **self._stats_options())

    def _stats_options(self):
        return {"n_categories": self.n_categories_}

    def _loo_feature(self, X, y_index, weight, kind):
        """Leave-one-out feature scores, with the table of categories a refit without the row would learn.

        ``n_categories_`` is learned from the codes seen (the largest code plus one, or
        ``min_categories``). A row holding the only occurrence of a feature's largest
        code, with a gap below it (no row holds the code just under it), is scored by a
        refit without it against a shorter table, in which its code is a new category
        (the share of one extra category). Those rows (at most one per feature) are
        scored by a downdate of all the classes' statistics under that table; elsewhere
        the table is the same and the base downdate is exact.
        """
        out = super()._loo_feature(X, y_index, weight, kind)
        codes, mask = (X.X, X.mask) if isinstance(X, _missing.MaskedX) else (X, None)
        codes = np.asarray(codes)
        if codes.shape[0] == 0:
            return out
        n_cat = np.asarray(self.n_categories_, dtype=np.int64)
        floor = np.ones_like(n_cat) if self.min_categories is None else np.broadcast_to(
            np.asarray(self.min_categories, dtype=np.int64), n_cat.shape
        )
        top = codes.max(axis=0)
        at_top = codes == top
        below = np.where(at_top, -1, codes).max(axis=0, initial=-1)
        # The table a refit without the top row learns, where that row is alone at the top.
        shorter = np.maximum(below + 1, floor)
        features = np.flatnonzero((at_top.sum(axis=0) == 1) & (shorter < n_cat))
        if not features.size:
            return out
        w = np.ones(codes.shape[0]) if weight is None else np.asarray(weight, dtype=np.float64)
        y_index = np.asarray(y_index, dtype=np.intp)
        owner = np.argmax(at_top[:, features], axis=0)
        for i in np.unique(owner):
            table = n_cat.copy()
            mine = features[owner == i]
            table[mine] = shorter[mine]
            prior = self.prior_._replace(n_categories=table)
            try:
                out[i] = _loo.row_feature_log_loo(
                    self._family, prior, self.stats_, codes, y_index, w, int(i), kind=kind, mask=mask,
                    point_options=self._point_options(kind),
                )
            except UndefinedModeError as err:
                raise err.located(row=int(i)) from None
        return out

    def _alpha_by_evidence(self, scope):
        _, trace = empirical_bayes.learn_prior(
            self._family, self._prior_from_alpha(1.0), self.stats_, ["concentration"], scope, names=("alpha",)
        )
        return empirical_bayes.alpha_layout(trace, scope), trace

    def _prior_from_alpha(self, alpha):
        return categorical_dirichlet_from_alpha(alpha, self.classes_.size, self.n_categories_)

    @property
    def category_count_(self):
        counts = np.asarray(self.stats_.category_count)
        return [counts[:, j, :k] for j, k in enumerate(self.n_categories_)]

    @property
    def feature_log_prob_(self):
        lp = _DiscreteNB.feature_log_prob_.fget(self)
        return [lp[:, j, :k] for j, k in enumerate(self.n_categories_)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.input_tags.sparse = False
        tags.input_tags.positive_only = True
        return tags
