"""The scikit-learn front shared by every family: validate → stats → posterior → predict.

One base class owns fitting bookkeeping and every prediction method; a subclass names
its family module and supplies three hooks (input checks, statistics, prior). No math
lives here: it is in :mod:`bayesnb.core.families`, :mod:`bayesnb.core.class_prior` and
:mod:`bayesnb.core._normalize`.
"""

from __future__ import annotations

import functools
import inspect
from typing import NamedTuple

import jax
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted, column_or_1d

from bayesnb.analysis import calibration as _calibration
from bayesnb.analysis import loo as _loo
from bayesnb.analysis import uncertainty as _uncertainty
from bayesnb.analysis.uncertainty import check_interval_args
from bayesnb.core import _fitted
from bayesnb.core import class_prior as _class_prior
from bayesnb.core import missing as _missing
from bayesnb.core._random import key_from_random_state
from bayesnb.core._validation import (
    ESTIMATES as _POINT_KINDS,
    check_class_prior,
    check_class_targets,
    check_classes,
    check_estimate,
    check_labels,
    check_n_draws,
    check_sample_weight,
    class_index,
    label_array,
    refuse_dates,
)
from bayesnb.core.empirical_bayes import class_alpha as learn_class_alpha
from bayesnb.core.empirical_bayes import is_evidence
from bayesnb.core.families._dirichlet import UndefinedModeError
from bayesnb.core.families._mask import MaskRefused, accepts_mask
from bayesnb.core.kernels import check_sparse_structure, frozen
from bayesnb.core.priors import dirichlet_from_alpha
from bayesnb.core.stats import as_masked, is_masked, merge
from bayesnb.estimators import _shards
from bayesnb.estimators._hyper import HyperpriorMixin
from bayesnb.io.persistence import register_pytree

register_pytree(_calibration.CalibrationMap)

__all__ = ["BaseNB", "SklearnCounterpart"]


class SklearnCounterpart(NamedTuple):
    """scikit-learn's naive Bayes of an estimator's model, what :meth:`BaseNB.sklearn_counterpart` returns.

    Attributes
    ----------
    estimator : sklearn.base.ClassifierMixin
        An unfitted ``sklearn.naive_bayes`` estimator of the same likelihood and prior
        (``alpha``, Bernoulli's ``binarize``, the categories' ``min_categories``).
    categorical : bool
        Whether the features are category codes, so that a linear model fitted beside it
        (the report's reference ``LogisticRegression``) one-hot encodes them rather than
        scaling them as numbers.
    """

    estimator: object
    categorical: bool

#: The ``calibrate`` parameter as every estimator's docstring describes it (one text,
#: joined into each class's ``__doc__`` like :data:`bayesnb.estimators._hyper._HYPER_PARAMS`).
_CALIBRATE_PARAM = """    calibrate : {None, "loo"}, default=None
        ``"loo"``: after ``fit``, a monotone map of the class probabilities (one scale,
        one compression of large log-odds, per-class offsets; the family chosen by
        cross-validation over the scores) fitted to the training rows' exact
        leave-one-out class probabilities (:mod:`bayesnb.analysis.calibration`), stored
        in ``calibration_`` and applied by ``predict_proba``, ``predict_log_proba``,
        ``predict``, draws and intervals. A calibration of a misspecified model
        (generalised Bayes): the posterior, the evidence and generated data are the
        model's as written. None: the model as written.
"""


class BaseNB(HyperpriorMixin, ClassifierMixin, BaseEstimator):
    """Base of the bayesnb estimators (not for direct use).

    Subclasses set ``_family`` (a registered :class:`bayesnb.core.families.Family`) and implement
    ``_check_X(X, reset)``, ``_compute_stats(X, y_index, sample_weight, mask=None)`` and
    ``_make_prior()``.

    Notes
    -----
    Protected extension hooks. A subclass (a family's estimator, or a front such as
    :mod:`bayesnb.sklearn`, which gives the estimators scikit-learn's signatures) builds on
    the public methods and on these names only; their contracts are kept stable. Every
    other private name of this class may change.

    ``_family``
        Class attribute: the registered family of the feature model.
    ``_check_X(X, reset)``
        Validate rows and return them in the family's form (``reset``: learn
        ``n_features_in_`` / ``feature_names_in_``, as at the first ``fit``).
    ``_compute_stats(X, y_index, sample_weight, mask=None)``
        The statistics pytree of validated rows; an override may check or record
        something about the batch and return ``super()._compute_stats(...)``.
    ``_make_prior()``
        The prior pytree from the parameters (may set fitted hyperparameters such as
        ``alpha_``). The discrete estimators build it with ``_prior_from_alpha(alpha)``,
        the conjugate prior of a given concentration, which an override that checks or
        adjusts ``alpha`` itself calls.
    ``_refresh()``
        Recompute everything derived from ``stats_`` (``prior_``, ``posterior_``, the
        class prior or posterior, ``class_count_``); ``fit``, ``partial_fit``,
        ``fit_shard``, ``update_prior`` and :func:`bayesnb.load` call it. An override calls
        ``super()._refresh()`` and then adjusts the derived attributes.
    ``_point(kind)``
        The plug-in parameters (the family's parameter pytree) that predictions use for
        the point estimate ``kind``; it may be memoised in ``self._cache``, a dict
        emptied whenever the statistics or the prior change.
    ``_feature_map_refusal(kind, err)``
        The error to raise for ``err``, an ``UndefinedModeError`` of the feature
        posterior (``estimate='map'`` without a mode; leave-one-out sets ``err.row``),
        from ``_point`` and the leave-one-out terms: by default ``err``; the discrete
        estimators and :class:`~bayesnb.MixedNB` name the cell in the user's terms.
    """

    _family = None
    #: Constructor parameters that take a numpyro distribution (a hyperparameter
    #: integrated by NUTS on the collapsed model, :mod:`bayesnb.ppl.collapsed`): the
    #: prior's concentrations or fields and the class proportions' concentration.
    #: :func:`bayesnb.compile_model` refuses a hyperprior site for any other parameter.
    _hyperprior_params = frozenset({"alpha", "class_alpha", "prior"})

    @classmethod
    def _params_from_prior(cls, prior):
        """Constructor parameters that make this estimator's prior ``prior`` (for :func:`bayesnb.compile_model`).

        Default: ``prior=prior``. Fields of ``prior`` may be numpyro distributions
        (integrated hyperparameters), passed on as they are.
        """
        return {"prior": prior}

    def __init__(
        self,
        *,
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
        self.class_alpha = class_alpha
        self.class_prior = class_prior
        self.fit_prior = fit_prior
        self.estimate = estimate
        self.missing = missing
        self.temperature = temperature
        self.calibrate = calibrate
        # The NUTS settings of hyperpriors are parameters of the estimators that list them
        # in their signature (scikit-learn: __init__ sets its parameters and nothing else);
        # the others integrate with the defaults (bayesnb.estimators._hyper).
        own = _signature_params(type(self))
        for name, value in (
            ("hyper_chains", hyper_chains),
            ("hyper_warmup", hyper_warmup),
            ("hyper_draws", hyper_draws),
            ("hyper_predict_draws", hyper_predict_draws),
            ("random_state", random_state),
        ):
            if name in own:
                setattr(self, name, value)

    @property
    def family_(self):
        """Family: the conjugate family of the fitted feature model (see :mod:`bayesnb.core.families`)."""
        check_is_fitted(self, "stats_")
        return self._family

    @property
    def temperature_(self):
        """float: the likelihood temperature predictions use.

        A number given as ``temperature`` is used as it is, also when set after ``fit``;
        ``temperature="loo"`` is the value chosen at ``fit`` from the training rows'
        exact leave-one-out scores, which a ``set_params(temperature="loo")`` after
        ``fit`` cannot choose (the rows are not kept): predictions then raise until the
        next ``fit``.
        """
        check_is_fitted(self, "stats_")
        if not _is_loo(self.temperature):
            return check_temperature(self.temperature)
        chosen = self.__dict__.get("temperature_")
        if chosen is None:
            raise ValueError(
                f"{type(self).__name__}: temperature='loo' was set after fit; it is chosen from the training rows' "
                "leave-one-out scores at fit, which are not kept: call fit again"
            )
        return chosen

    @property
    def calibration_(self):
        """CalibrationMap or None: the calibration map predictions apply.

        None with ``calibrate=None`` (also when set after ``fit``: it takes effect at
        once). With ``calibrate="loo"``, the map fitted at ``fit`` to the training rows'
        exact leave-one-out scores (:func:`bayesnb.analysis.calibration.choose`); the map
        belongs to the scores of one ``estimate`` and temperature, so after
        ``set_params`` changes either (or sets ``calibrate="loo"`` on an estimator
        fitted without it) predictions raise until the next ``fit``.
        """
        check_is_fitted(self, "stats_")
        if check_calibrate(self.calibrate) is None:
            return None
        cmap = self.__dict__.get("calibration_")
        name = type(self).__name__
        if cmap is None:
            raise ValueError(
                f"{name}: calibrate='loo' was set after fit; the map is fitted to the training rows' leave-one-out "
                "scores at fit, which are not kept: call fit again"
            )
        return _calibration.check_fitted(cmap, self.estimate, self.temperature_, name)

    def __repr__(self, N_CHAR_MAX=700):
        text = super().__repr__(N_CHAR_MAX)
        cmap = self.__dict__.get("calibration_")
        if cmap is not None and hasattr(self, "stats_") and check_calibrate(self.calibrate) is not None:
            text += f"\n# calibration_: {cmap!r}"
        return text

    # ------------------------------------------------------------------ hooks
    def _check_X(self, X, reset):  # pragma: no cover - abstract
        raise NotImplementedError

    def _compute_stats(self, X, y_index, sample_weight, mask=None):
        # The family's statistics of validated rows; estimators with tables of their own
        # (category counts, covariance structure) extend this.
        return self._family.stats(X, y_index, self.classes_.size, sample_weight, mask=mask)

    def _make_prior(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _feature_posterior(self):
        return self._family.posterior(self.prior_, self.stats_)

    def _class_posterior(self, class_count):
        # The Dirichlet posterior of the class proportions given class counts, under
        # class_dirichlet_ (fit and with_stats both come here).
        return _class_prior.posterior(self.class_dirichlet_, class_count)

    def _point_options(self, kind):
        """Keyword options of the family's ``point`` for ``kind`` (none by default)."""
        return {}

    def _feature_map_refusal(self, kind, err):
        """The refusal of ``kind`` for ``err``, an ``UndefinedModeError`` of this model's feature posterior.

        By default ``err`` itself; an estimator whose family has Dirichlet or Beta cells
        names the cell in the user's terms (class label, column, category) and, for
        leave-one-out, the training row left out (``err.row``).
        """
        return err

    def _stats_options(self):
        """Keyword options of the family's ``stats`` for the fitted tables (none by default)."""
        return {}

    def _as_block(self, name, columns):
        """This fitted estimator as a block of a product family (see :mod:`bayesnb.core.families.product`)."""
        from bayesnb.core.families.product import Block

        return Block(
            name,
            self.family_,
            np.asarray(columns),
            self._stats_options(),
            {kind: self._point_options(kind) for kind in ("mle", "map", "mean")},
        )

    def _loo_feature(self, X, y_index, weight, kind):
        """Leave-one-out feature scores of validated training rows, (n_samples, n_classes)."""
        return _loo.feature_log_loo(
            self._family, self.prior_, self.stats_, X, y_index, weight, kind=kind,
            point_options=self._point_options(kind),
        )

    # Draws, generated rows and log-likelihoods under draws are read off the fitted
    # pytrees by bayesnb.core._fitted, the same code the PPL and analysis layers use.
    def _sample_features(self, key, n):
        return _fitted.feature_draws(key, self.fitted_model(), n)

    def _sample_prior_features(self, key, n):
        # The prior has the posterior's type (conjugacy), so the family's sampler serves both.
        return _fitted.feature_draws(key, self.fitted_model(), n, prior=True)

    def _simulate_features(self, key, params, y_index):
        return _fitted.simulate(key, self.fitted_model(), params, y_index)

    def _sample_row_params(self, key, n, prior):
        """Feature parameters for ``n`` generated rows, one independent draw per row.

        Where a row's predictive is exactly the plug-in of the mean (one observation per
        Dirichlet cell: Bernoulli, categorical), the mean itself is returned: rows
        simulated from it have the same distribution, with no draws.
        """
        dist = self.prior_ if prior else self.posterior_
        if self._family.predictive_is_plugin:
            return self._family.mean_params(dist)
        return (self._sample_prior_features if prior else self._sample_features)(key, n)

    def _label_log_probs(self, prior):
        r"""Log of the predictive class proportions :math:`E[\pi]` under the prior or posterior."""
        counts = np.zeros(self.classes_.size) if prior else self.stats_.class_count
        return _class_prior.estimate_log(self.class_dirichlet_, self.class_prior_, counts, "mean")

    def sklearn_counterpart(self):
        """scikit-learn's naive Bayes of the same model and prior, unfitted, or None.

        What a user would fit instead of this estimator: the baselines that the
        ``bayesnb demo`` report passes to :func:`bayesnb.compare`
        (``bayesnb.cli.report.baselines``), which asks the estimator rather than
        its class. An estimator whose likelihood and prior scikit-learn has overrides
        it; the default (no counterpart) is None.

        Returns
        -------
        SklearnCounterpart or None
        """
        return None

    def _format_generated(self, X):
        """Generated feature rows as the estimator's users expect them (default: as is)."""
        return X

    def _predictive_is_plugin(self):
        return self._family.predictive_is_plugin

    def _log_likelihood(self, params, X):
        return self._family.log_likelihood(params, X, self.prior_)

    def _log_predictive(self, X):
        return self._family.log_predictive(self.posterior_, X)

    # -------------------------------------------------------- missing values
    # missing="error" (the default) takes the ordinary path untouched; with
    # missing="ignore", input with NaNs becomes a MaskedX (bayesnb.core.missing) whose data and
    # mask of unobserved entries go to the family's own stats / log_likelihood /
    # log_predictive (mask=...): no family is special-cased here.
    def _input(self, X, reset):
        """``_check_X`` under the ``missing`` policy."""
        refuse_dates(X, self._model_name())
        X = check_sparse_structure(X)  # before any SciPy routine trusts its index arrays
        if isinstance(self.missing, str) and self.missing == "error":
            # A DataFrame's NaN / pd.NA is refused naming its column (only DataFrames pay
            # for this pass; arrays keep scikit-learn's own check).
            _missing.refuse_frame_missing(X, self._model_name(), self._fits_missing())
            return self._check_X(X, reset=reset)
        _missing.check_missing(self.missing)
        return _missing.split(self._check_X, X, reset)

    def _model_name(self):
        """How errors name this model (the subject of a family's :class:`MaskRefused`)."""
        return type(self).__name__

    def _stats(self, X, y_index, sample_weight):
        mask = None
        if isinstance(X, _missing.MaskedX):
            X, mask = X.X, X.mask
        try:
            new = self._compute_stats(X, y_index, sample_weight, mask=mask)
        except MaskRefused as err:
            raise ValueError(f"{self._model_name()} {err}") from None
        old = getattr(self, "stats_", None)
        if is_masked(new) or is_masked(old):
            # Batches with and without unobserved entries merge in the per-cell form.
            new = as_masked(new)
            if old is not None:
                self.stats_ = as_masked(old)
        return new

    def _feature_ll(self, params, X, contrast=False):
        """Plug-in log-likelihood of validated rows; ``contrast``: up to a per-row term
        common to the classes, where the family has a cheaper form for that."""
        if isinstance(X, _missing.MaskedX):
            return self._family.log_likelihood(params, X.X, self.prior_, mask=X.mask)
        if contrast and self._family.log_likelihood_contrast is not None:
            return self._family.log_likelihood_contrast(params, X, self.prior_)
        return self._log_likelihood(params, X)

    def _feature_lp(self, X, contrast=False):
        """Exact log predictive of validated rows; ``contrast``: up to a per-row term
        common to the classes, where the family has a cheaper form for that."""
        if isinstance(X, _missing.MaskedX):
            return self._family.log_predictive(self.posterior_, X.X, mask=X.mask)
        if contrast and self._family.log_predictive_contrast is not None:
            return self._family.log_predictive_contrast(self.posterior_, X)
        return self._log_predictive(X)

    def _fits_missing(self):
        """Whether ``missing="ignore"`` can fit rows with NaNs: whether the family's statistics take a mask."""
        return accepts_mask(self._family)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = (
            isinstance(self.missing, str) and self.missing == "ignore" and self._fits_missing()
        )
        return tags

    # ------------------------------------------------------------- fitting
    def fit(self, X, y, sample_weight=None):
        """Fit the conjugate posterior to labelled data.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class labels (no missing label; strings or numbers, not both). A single
            class is accepted, as in scikit-learn: ``classes_`` has one entry,
            ``predict`` returns it and ``predict_proba`` is a column of ones, while
            ``log_evidence`` and the posterior remain those of the data.
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative weights; a weight ``k`` counts like ``k`` copies of the row.

        Returns
        -------
        self
        """
        self._clear_fitted()
        try:
            X, y = self._check_X_y(X, y, reset=True)
            check_class_targets(y)
            return self._update(X, y, np.unique(y), sample_weight, from_labels=True)
        except BaseException:
            # A refit that fails must not leave old posteriors next to new statistics.
            self._clear_fitted()
            raise

    def _fit_with_layout(self, layout, X, y, sample_weight=None):
        """``fit(X, y)``, with what the fitted state sizes from its rows learned from the batches ``layout``.

        For a layer that fits labelled rows ``X`` and then conditions on statistics of
        other rows (:class:`~bayesnb.SemiSupervisedNB`'s unlabelled rows, through
        :meth:`validated_stats` and :meth:`with_stats`): ``layout`` is an iterable of
        batches of rows that together hold every such row (``X``'s among them), and an
        estimator whose fitted layout depends on the rows it sees
        (:class:`~bayesnb.CategoricalNB`'s table of categories and the labels of its
        DataFrame columns) learns it from all of them, as ``fit`` on all of them would, so
        that their statistics fit it. The statistics are those of ``X`` alone. An
        estimator without such a layout is fitted as by :meth:`fit` (this default, which
        reads no batch).

        Parameters
        ----------
        layout : iterable of array-like or sparse matrix of shape (n_rows, n_features)
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional

        Returns
        -------
        self
        """
        return self.fit(X, y, sample_weight=sample_weight)

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Update the posterior with a batch of rows (statistics add up exactly).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        classes : array-like of shape (n_classes,), optional
            All class labels; required on the first call, optional (but must match)
            afterwards.
        sample_weight : array-like of shape (n_samples,), optional

        Returns
        -------
        self
        """
        self._partial_fit_batch(X, y, classes, sample_weight)
        return self

    def _partial_fit_batch(self, X, y, classes, sample_weight):
        """:meth:`partial_fit`, returning the statistics of the batch alone (a product's blocks report them)."""
        first = not hasattr(self, "classes_")
        if first and classes is None:
            raise ValueError("classes must be passed on the first call to partial_fit")
        before = dict(self.__dict__)
        try:
            X, y = self._check_X_y(X, y, reset=first)
            if classes is not None:
                classes = check_classes(classes)
                if not first and not np.array_equal(classes, self.classes_):
                    raise ValueError(
                        f"classes={classes!r} differs from the classes of the first call {self.classes_!r}"
                    )
            return self._update(X, y, classes if first else self.classes_, sample_weight, batch=True)
        except BaseException:
            # A batch that fails is not committed: retrying it must not count it twice.
            self.__dict__.clear()
            self.__dict__.update(before)
            raise

    def _clear_fitted(self):
        for name in [k for k in vars(self) if k.endswith("_") and not k.startswith("__")] + ["_cache"]:
            self.__dict__.pop(name, None)

    def _check_X_y(self, X, y, reset):
        X = self._input(X, reset=reset)
        y = check_labels(column_or_1d(label_array(y), warn=True))
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} labels")
        return X, y

    def _update(self, X, y, classes, sample_weight, batch=False, from_labels=False):
        """Add the statistics of rows ``X``; returns ``self``, or with ``batch`` the batch's statistics.

        ``from_labels``: ``classes`` is ``np.unique(y)``, so every label is one of them
        and the membership check (a comparison per row: 9 ms for 800 k string labels)
        is skipped.
        """
        y_index = np.searchsorted(classes, y) if from_labels else class_index(y, classes, classes_name="classes")
        w = check_sample_weight(sample_weight, X.shape[0])
        self.classes_ = classes
        new = self._stats(X, y_index, w)
        self.stats_ = new if not hasattr(self, "stats_") else merge(self.stats_, new)
        self._refresh()
        calibrate = check_calibrate(self.calibrate)
        if _is_loo(self.temperature) or calibrate is not None:
            # The rows of this call, each left out of everything seen so far. A row of
            # weight w counts as w copies (scikit-learn's convention): one copy (the whole
            # row where w < 1) is left out, and its loss counts w times, so that weights
            # and repeated rows choose the same T and the same map.
            w = np.ones(X.shape[0]) if w is None else np.asarray(w, np.float64)
            terms = self._loo_terms(X, y_index, np.minimum(w, 1.0))
            if _is_loo(self.temperature):
                self.__dict__["temperature_"] = _loo.choose_temperature(terms, weight=w) if w.sum() > 0 else 1.0
            if calibrate is not None:
                self._fit_calibration(terms, w)
        return new if batch else self

    def _fit_calibration(self, terms, weight):
        """Fit ``calibration_`` to leave-one-out terms of training rows (see :mod:`bayesnb.analysis.calibration`)."""
        t = self.temperature_
        self.__dict__["calibration_"] = _calibration.choose(
            _loo.log_proba(terms, t), terms.y_index, weight=weight, estimate=self.estimate, temperature=t
        )

    def _refresh(self):
        """Recompute priors and posteriors from the accumulated statistics.

        With hyperparameters given as distributions, their posterior is sampled by NUTS
        on the collapsed model first (:mod:`bayesnb.estimators._hyper`).
        """
        for name in ("hyper_posterior_", "hyper_diagnostics_", "hyper_mode_", "hyper_predict_index_", "_hyper_state_"):
            self.__dict__.pop(name, None)
        hypers = self._hyperpriors()
        if hypers:
            self._refresh_hyper(hypers)
        else:
            self._refresh_plain()

    def _refresh_plain(self):
        """Recompute priors and posteriors from the accumulated statistics (hyperparameters given as values)."""
        check_estimate(self.estimate)
        if not isinstance(self.fit_prior, (bool, np.bool_)):
            raise TypeError(f"fit_prior must be True or False, got {self.fit_prior!r}")
        n_classes = self.classes_.size
        # Hyperparameters set to "evidence" are re-learned here from all statistics seen.
        self.evidence_trace_ = {}
        self.prior_ = self._make_prior()
        # Read-only, like the point estimates: predictions then recognise it without a
        # checksum pass (kernels.ParamCache), and writing into it raises. Arrays it shares
        # (Polya's concentration is prior_'s, the categorical counts n_categories_) become
        # read-only with it.
        self.posterior_ = frozen(self._feature_posterior())
        self.class_alpha_ = None
        if self.class_prior is not None:
            self.class_prior_ = check_class_prior(self.class_prior, n_classes)
            self.class_dirichlet_ = self.class_posterior_ = None
        elif not self.fit_prior:
            self.class_prior_ = np.full(n_classes, 1.0 / n_classes)
            self.class_dirichlet_ = self.class_posterior_ = None
        else:
            self.class_prior_ = None
            self.class_alpha_ = self.class_alpha
            if is_evidence(self.class_alpha):
                self.class_alpha_, self.evidence_trace_["class_alpha"] = learn_class_alpha(self.stats_.class_count)
            self.class_dirichlet_ = dirichlet_from_alpha(self.class_alpha_, (n_classes,), "class_alpha")
            self.class_posterior_ = self._class_posterior(self.stats_.class_count)
        self.class_count_ = np.asarray(self.stats_.class_count)
        self._cache = {}
        # temperature="loo" and calibrate="loo" are chosen from the training rows by fit /
        # partial_fit (update_prior keeps the last choice: it has no rows to leave out);
        # a fixed temperature is read at prediction (see temperature_).
        check_calibrate(self.calibrate)
        if not _is_loo(self.temperature):
            check_temperature(self.temperature)

    # ----------------------------------------------------------- estimates
    def _class_log_prob(self, kind):
        return _class_prior.estimate_log(
            self.class_dirichlet_, self.class_prior_, self.stats_.class_count, kind, self.classes_
        )

    def _point(self, kind):
        # "predictive" plugs in the posterior mean (where that is the exact predictive):
        # the very arrays of "mean", not a second copy of them.
        key = "mean" if kind == "predictive" else kind
        params = self._cache.get(key)
        if params is None:
            # One point estimate at a time: switching ``estimate`` (compare scores all four
            # in turn) would otherwise keep a parameter copy per estimate alive for the
            # estimator's life, four (C, F[, K]) arrays where one serves its predictions
            # (issue 38: the demo's peak memory). Recomputing one on a switch back is a
            # pass over the statistics, cheaper than the prediction that needs it.
            for other in _POINT_KINDS:
                self._cache.pop(other, None)
            try:
                point = self._family.point(self.prior_, self.stats_, key)
            except UndefinedModeError as err:
                raise self._feature_map_refusal(key, err) from None
            # Read-only: kept and reused by every prediction (see kernels.frozen).
            params = self._cache[key] = frozen(point)
        return params

    @property
    def class_log_prior_(self):
        """ndarray of shape (n_classes,): log class proportions used by the current ``estimate``."""
        check_is_fitted(self, "stats_")
        return self._class_log_prob(check_estimate(self.estimate))

    # ---------------------------------------------------------- prediction
    def predict_joint_log_proba(self, X):
        """Joint log-probability :math:`\\log p(x, y=c \\mid D)` of each row and class.

        Uses the current ``estimate``. A row impossible under every class gets ``-inf``
        in every column (see :class:`bayesnb.exceptions.ZeroLikelihoodWarning`). With a
        temperature :math:`T =` ``temperature_`` other than 1 the feature part is
        divided by :math:`T`: the tempered score
        :math:`\\log p(y=c \\mid D) + \\log p(x \\mid y=c, D) / T`, which is no longer a
        normalised joint probability but whose normalisation over classes is
        ``predict_log_proba`` (see the tempering guide).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        return self._scores(X)

    def _scores(self, X, contrast=False, kind=None):
        """The joint of rows ``X`` (validated here) for estimate ``kind`` (default ``estimate``);
        ``contrast``: up to a per-row term common to the classes (for callers that
        normalise over classes)."""
        check_is_fitted(self, "stats_")
        X = self._input(X, reset=False)
        kind = check_estimate(self.estimate if kind is None else kind)
        if kind == "predictive" and self._hyper_fitted():
            return self._hyper_joint(X)
        return self._joint(X, kind, contrast)

    def _joint(self, X, kind, contrast=False):
        """``predict_joint_log_proba`` of validated rows for ``kind``, at this estimator's
        prior (``contrast``: see :meth:`_scores`)."""
        if kind == "predictive" and not self._predictive_is_plugin():
            joint = self._feature_lp(X, contrast)
        else:
            joint = self._feature_ll(self._point(kind), X, contrast)
        # The family's result is a fresh array of this call, written over in place (two
        # passes and a result-sized allocation fewer); a read-only one (a JAX array, a
        # broadcast view) is copied by the arithmetic instead.
        owned = isinstance(joint, np.ndarray) and joint.flags.writeable and joint.flags.owndata
        temperature = self.temperature_
        if temperature != 1.0:
            joint = np.divide(joint, temperature, out=joint if owned else None)
            owned = True
        return np.add(joint, self._class_log_prob(kind), out=joint if owned else None)

    def _log_proba(self, X, probabilities=False):
        """Log class posteriors of ``X``, or (``probabilities``) the class posteriors
        themselves, normalised from the joint without a logarithm (see
        :func:`~bayesnb.core._normalize.normalize_proba`)."""
        joint = self._scores(X, contrast=True)
        cmap = self.calibration_
        return _calibration.class_proba(
            joint, self._class_log_prob(self.estimate), cmap, probabilities=probabilities, estimate=self.estimate,
            stacklevel=3,
        )

    def predict_log_proba(self, X):
        """Log class posterior :math:`\\log p(y=c \\mid x, D)`.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes), columns in the order of ``classes_``.
        """
        return self._log_proba(X)

    def predict_proba(self, X):
        """Class posterior :math:`p(y=c \\mid x, D)` for the current ``estimate``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        return self._log_proba(X, probabilities=True)

    def predict(self, X):
        """Most probable class of each row.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        log_proba = self._log_proba(X)
        return self.classes_[np.argmax(log_proba, axis=1)]

    # ----------------------------------------------------- statistics and priors
    def validate_input(self, X):
        """``X`` as this fitted estimator reads it, checked against what it was fitted on.

        The rows that ``predict*`` score: validated (number of features, dtype, negative
        counts, NaN under the ``missing`` policy), with the estimator's own conversions
        (Bernoulli's ``binarize`` threshold, category codes, column blocks of a
        :class:`~bayesnb.MixedNB`; rows with NaN under ``missing="ignore"`` come with
        their mask). Layers that take a fitted estimator use it so that they read data
        exactly as the estimator does.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        The validated rows (an array, a CSR matrix, or the masked / per-block form).
        """
        check_is_fitted(self, "stats_")
        return self._input(X, reset=False)

    def sufficient_stats(self, X, y, sample_weight=None):
        """Sufficient statistics of labelled rows as ``fit`` would accumulate them.

        The estimator is left unchanged (its statistics, category tables and fitted
        attributes stay as they are); the rows must have the labels and features of the
        fitted model.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Labels, each one of ``classes_``.
        sample_weight : array-like of shape (n_samples,), optional

        Returns
        -------
        stats : statistics pytree of the type of ``stats_``
        Xv : the validated rows (see :meth:`validate_input`)
        y_index : int ndarray of shape (n_samples,)
            Position of each label in ``classes_``.
        weight : ndarray of shape (n_samples,)
            The row weights (ones when ``sample_weight`` is None).
        """
        check_is_fitted(self, "stats_")
        import copy

        probe = copy.copy(self)  # statistics hooks may set attributes (category tables)
        Xv = probe._input(X, reset=False)
        y_index = class_index(y, self.classes_, n_rows=Xv.shape[0])
        w = check_sample_weight(sample_weight, Xv.shape[0])
        stats = probe._stats(Xv, y_index, w)
        return stats, Xv, y_index, np.ones(Xv.shape[0]) if w is None else np.asarray(w, dtype=np.float64)

    def validated_stats(self, Xv, y_index, sample_weight=None):
        """Sufficient statistics of rows already in the validated form, as ``fit`` accumulates them.

        The entry for layers that generate rows themselves (simulation-based calibration
        simulates rows from the family, the numpyro models score given rows): rows in the
        form :meth:`validate_input` returns (category codes, NaN masks) and class indices,
        no labels. The estimator is left unchanged.

        Parameters
        ----------
        Xv : validated rows of shape (n_samples, n_features)
            As returned by :meth:`validate_input` or the family's ``simulate``.
        y_index : int array-like of shape (n_samples,)
            Position of each row's class in ``classes_``.
        sample_weight : array-like of shape (n_samples,), optional

        Returns
        -------
        statistics pytree of the type of ``stats_``
        """
        check_is_fitted(self, "stats_")
        import copy

        y_index = np.asarray(y_index)
        if y_index.ndim != 1 or y_index.shape[0] != Xv.shape[0]:
            raise ValueError(f"y_index must be 1-d with one class index per row ({Xv.shape[0]}), got shape {y_index.shape}")
        if y_index.size and (y_index.min() < 0 or y_index.max() >= np.asarray(self.classes_).size):
            raise ValueError(f"y_index must index classes_ (0 to {np.asarray(self.classes_).size - 1})")
        w = check_sample_weight(sample_weight, Xv.shape[0])
        return copy.copy(self)._stats(Xv, y_index, w)  # a copy: statistics hooks may set tables

    def posterior_from_stats(self, stats):
        """The posterior of the feature parameters given other statistics, under this prior.

        Conjugacy makes the posterior a function of the prior and the sufficient
        statistics; this is that function as the estimator computes it at ``fit``
        (``posterior_`` is ``posterior_from_stats(stats_)``). Simulation-based calibration
        calls it on statistics of simulated rows (see :meth:`validated_stats`). The
        estimator is left unchanged.

        Parameters
        ----------
        stats : statistics pytree of the type of ``stats_``

        Returns
        -------
        posterior pytree of the type of ``posterior_``
        """
        check_is_fitted(self, "stats_")
        import copy

        work = copy.copy(self)
        work.stats_ = stats
        return work._feature_posterior()

    def with_stats(self, stats):
        r"""A copy of this fitted estimator conditioned on other statistics, under the same prior.

        Conjugacy makes the whole fitted state a function of the prior and the sufficient
        statistics. The copy has ``stats_ = stats`` and the ``posterior_``,
        ``class_posterior_`` and ``class_count_`` that ``fit`` computes from them; the
        prior (``prior_``, ``class_dirichlet_`` or ``class_prior_``) and every other
        setting (``estimate``, ``temperature_``) are this estimator's, and nothing is
        re-learned (hyperparameters set to ``"evidence"`` or data-scaled default priors
        stay at their fitted values). Its ``predict*``, ``sample_posterior`` and
        ``log_evidence`` are those of data with these statistics. An estimator with
        hyperpriors is conditioned at its plain ``prior_`` (the hyperparameters' mode):
        the copy carries no NUTS draws. Simulation-based calibration conditions on
        statistics of simulated rows this way (see :meth:`validated_stats`). This
        estimator is left unchanged.

        Parameters
        ----------
        stats : statistics pytree of the type of ``stats_``

        Returns
        -------
        estimator of this type, fitted

        Examples
        --------
        >>> import numpy as np
        >>> from bayesnb import MultinomialNB
        >>> X = np.array([[2, 0], [0, 3], [1, 1], [0, 2]]); y = np.array([0, 1, 0, 1])
        >>> half = MultinomialNB().fit(X[:2], y[:2])
        >>> full = half.with_stats(half.validated_stats(X, y))
        >>> bool(np.allclose(full.log_evidence(), MultinomialNB().fit(X, y).log_evidence()))
        True
        """
        check_is_fitted(self, "stats_")
        import copy

        work = copy.copy(self)
        for name in ("hyper_posterior_", "hyper_diagnostics_", "hyper_mode_", "hyper_predict_index_", "_hyper_state_"):
            work.__dict__.pop(name, None)
        work.stats_ = stats
        work.posterior_ = frozen(work._feature_posterior())
        if work.class_dirichlet_ is not None:
            work.class_posterior_ = work._class_posterior(stats.class_count)
        work.class_count_ = np.asarray(stats.class_count)
        work._cache = {}
        return work

    def update_prior(self, **params):
        """Set hyperparameters and recompute prior and posterior from the statistics held.

        Conjugacy makes a change of prior free: the posterior is a function of the
        prior and the sufficient statistics, so no pass over the data is needed (a
        prior-sensitivity analysis or an evidence curve costs one update per prior).

        Parameters
        ----------
        **params
            Constructor parameters (e.g. ``alpha=0.5``, ``class_alpha=2.0``, ``prior=...``).

        Returns
        -------
        self

        Examples
        --------
        >>> from bayesnb import MultinomialNB
        >>> clf = MultinomialNB().fit([[3, 0], [0, 2]], ["a", "b"])
        >>> before = clf.log_evidence()
        >>> clf.update_prior(alpha=0.5).alpha_, bool(clf.log_evidence() != before)
        (0.5, True)
        """
        check_is_fitted(self, "stats_")
        before = dict(self.__dict__)
        try:
            self.set_params(**params)
            self._refresh()
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(before)
            raise
        return self

    # ----------------------------------------------------------- fitting on parts
    def shard(self, X, y, sample_weight=None, classes=None):
        """Statistics of one part of the data, to be merged with the other parts' shards.

        Fitting on data that is not one array in memory (Dask partitions, chunks of a
        stream) is one map and one reduce: ``shard`` on each part, :meth:`Shard.merge
        <bayesnb.estimators._shards.Shard.merge>` of the shards (in any order and
        grouping), then :meth:`fit_shard` once. The result equals ``fit`` on all the rows
        (up to floating-point summation order). Only this estimator's parameters are
        used; it is left unchanged.

        Parameters
        ----------
        X : array-like, sparse matrix or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional
        classes : sorted ndarray of labels, optional
            Index the statistics over these labels (every label in ``y`` must be one);
            default: the part's own distinct labels (shards over different label sets
            are re-indexed onto their union when merged).

        Returns
        -------
        Shard, or None for a part without rows

        Examples
        --------
        >>> import numpy as np
        >>> from bayesnb import MultinomialNB
        >>> X = np.array([[2, 0], [0, 3], [1, 1], [0, 2]]); y = np.array([0, 1, 0, 1])
        >>> clf = MultinomialNB()
        >>> shard = clf.shard(X[:2], y[:2]).merge(clf.shard(X[2:], y[2:]))
        >>> bool(np.allclose(clf.fit_shard(shard).predict_proba(X), MultinomialNB().fit(X, y).predict_proba(X)))
        True
        """
        return _shards.compute(self, X, y, sample_weight, classes)

    def fit_shard(self, shard):
        """Fit from the merged shard of all the parts (see :meth:`shard`): statistics, then the posterior once.

        Earlier fitted state is discarded, as ``fit`` does; on failure the estimator is
        left unfitted.

        Parameters
        ----------
        shard : Shard
            The merge of the shards of every part (not None).

        Returns
        -------
        self
        """
        return _shards.finish(self, shard)

    # ------------------------------------------------------- leave-one-out
    def _loo_terms(self, Xv, y_index, weight):
        kind = check_estimate(self.estimate)
        if self.class_posterior_ is None:
            class_log = _loo.class_log_loo(None, self.stats_.class_count, y_index, weight, class_prior=self.class_prior_)
        else:
            class_log = _loo.class_log_loo(
                self.class_dirichlet_, self.stats_.class_count, y_index, weight, kind=kind, classes=self.classes_
            )
        try:
            feature_log = self._loo_feature(Xv, y_index, weight, kind)
        except UndefinedModeError as err:
            raise self._feature_map_refusal(kind, err) from None
        return _loo.LooTerms(class_log, feature_log, np.asarray(y_index))

    def loo_terms(self, X, y, sample_weight=None):
        r"""Exact leave-one-out parts of the training rows' predictive, with no refit.

        For each training row :math:`i` (its statistics removed from ``stats_``; what
        was learned from all rows, such as hyperparameters maximising the evidence or a
        default prior scaled to the data, held at its fitted value, and what the
        estimator re-learns per row, such as PolyaNB's precision or the table of
        categories, re-learned: :meth:`loo_approximations` lists what is held):
        :math:`\log p(y=c \mid D_{-i})` and
        :math:`\log p(x_i \mid y=c, D_{-i})` under the current ``estimate`` (the exact
        predictive, or the plug-in of the point estimate of the downdated posterior).
        :func:`bayesnb.analysis.loo.conditional` turns them into :math:`\log p(y_i \mid x_i,
        D_{-i})` (tempered or not), :func:`bayesnb.analysis.loo.joint` into
        :math:`\log p(x_i, y_i \mid D_{-i})`. See :mod:`bayesnb.analysis.loo`.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Rows the estimator was fitted on (their statistics are in ``stats_``).
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional
            The weights they were fitted with: the whole row is left out.

        Returns
        -------
        bayesnb.analysis.loo.LooTerms
        """
        check_is_fitted(self, "stats_")
        _, Xv, y_index, w = self.sufficient_stats(X, y, sample_weight)
        return self._loo_terms(Xv, y_index, w)

    # ----------------------------------------------- exactness of leave-one-out
    def loo_approximations(self, kind="conditional"):
        """Why the closed-form leave-one-out of this fitted estimator differs from refits (empty: exact).

        :meth:`loo_terms` and :func:`bayesnb.loo` leave each row out of the sufficient
        statistics and hold everything else at its fitted value. That is a refit without
        the row wherever nothing else was learned from the rows. Where something was
        (a hyperparameter maximising the evidence, a default prior scaled to the data, a
        temperature chosen by leave-one-out, hyperparameters integrated by NUTS), a
        refit would learn it again without the row, and the closed form is an
        approximation: this lists each such thing, with its reason. What the estimators
        re-learn per left-out row themselves (PolyaNB's precision and mean, the table
        of categories, the "mle" variance floor) is not listed: those terms are exact.

        Parameters
        ----------
        kind : {"conditional", "joint"}, default="conditional"
            The term of :func:`bayesnb.loo` (a chosen temperature only tempers the
            conditional one).

        Returns
        -------
        tuple of str
            One sentence per approximation; empty where the leave-one-out equals
            brute-force refits.

        Examples
        --------
        >>> import numpy as np
        >>> from bayesnb import GaussianNB
        >>> X = np.array([[0.1, 1.0], [0.3, 1.4], [2.0, 0.2], [2.4, 0.1]]); y = [0, 0, 1, 1]
        >>> GaussianNB().fit(X, y).loo_approximations()[0][:33]
        'prior=None: the default prior is '
        >>> from bayesnb.core.priors import NormalInverseGamma
        >>> GaussianNB(prior=NormalInverseGamma(0.0, 1.0, 2.0, 1.0)).fit(X, y).loo_approximations()
        ()
        """
        check_is_fitted(self, "stats_")
        if kind not in ("conditional", "joint"):
            raise ValueError(f"kind must be 'conditional' or 'joint', got {kind!r}")
        reasons = []
        # The maximum-likelihood estimates read no prior (feature or class): what was
        # learned for the prior does not enter their terms.
        if self.estimate != "mle":
            reasons += self._loo_prior_reasons()
            traces = getattr(self, "evidence_trace_", None) or {}
            if "class_alpha" in traces:
                reasons.append(
                    "class_alpha='evidence': the class proportions' concentration is learned from the class "
                    f"counts of all rows and held at class_alpha_={_short(self.class_alpha_)}"
                )
            if self._hyper_fitted():
                reasons.append(
                    "hyperpriors: the hyperparameters' posterior is sampled by NUTS given all rows; the "
                    "leave-one-out terms hold them at its mode (prior_), neither re-sampled without each row "
                    "nor integrated"
                )
        if kind == "conditional" and isinstance(self.temperature, str) and self.temperature == "loo":
            reasons.append(
                "temperature='loo': the temperature is chosen by the leave-one-out log loss of all rows "
                f"and held at temperature_={_short(self.temperature_)}"
            )
        return tuple(reasons)

    def _loo_prior_reasons(self):
        """The feature prior's part of :meth:`loo_approximations`: its hyperparameters learned by evidence.

        Estimators whose default prior is scaled to the data, or that re-learn a
        hyperparameter per left-out row, override this.
        """
        traces = getattr(self, "evidence_trace_", None) or {}
        return tuple(
            f"{name}='evidence': learned by maximum evidence from all rows and held at its fitted value"
            for name in traces
            if name != "class_alpha"
        )

    # ----------------------------------------------------------- persistence
    def save(self, path):
        """Write this estimator (fitted or not) to ``path``; read it back with :func:`bayesnb.load`.

        No pickle: a ZIP/``.npz`` archive of arrays plus JSON metadata with the library
        and format versions and a SHA-256 checksum (see :mod:`bayesnb.io.persistence`).
        The saved state is the parameters and the sufficient statistics; ``load``
        recomputes the posterior, so predictions are bit-identical after the round trip
        and ``partial_fit`` continues from the saved statistics.

        Parameters
        ----------
        path : str, os.PathLike or binary file object
            Written as given (``.npz`` is the suggested suffix); a path is replaced
            atomically, so an interrupted save leaves no truncated file.

        Returns
        -------
        None

        Examples
        --------
        >>> import io
        >>> import bayesnb
        >>> clf = bayesnb.BernoulliNB().fit([[1, 0], [0, 1], [1, 1]], ["a", "b", "a"])
        >>> buffer = io.BytesIO()  # or a path such as "model.npz"
        >>> clf.save(buffer)
        >>> _ = buffer.seek(0)
        >>> bayesnb.load(buffer).predict_proba([[1, 0]]).tolist() == clf.predict_proba([[1, 0]]).tolist()
        True
        """
        from bayesnb.io.persistence import save

        self._refuse_unsavable_hyperprior()
        save(self, path)

    def _refuse_unsavable_hyperprior(self, within=None):
        """Raise the refusal of :meth:`save` for a hyperprior, naming the estimator (``within``: the wrapper holding it)."""
        hypers = self._hyperpriors()
        if hypers:
            where = type(self).__name__ if within is None else f"{within} wrapping {type(self).__name__}"
            raise ValueError(
                f"{where} with a hyperprior ({', '.join(h.name for h in hypers)} given as a numpyro "
                "distribution) cannot be saved: the archive holds numbers, not distributions or NUTS draws. Save "
                "hyper_posterior_ with numpy, or the plain estimator at the mode (e.g. alpha=hyper_mode_['alpha'])."
            )

    # ------------------------------------------------------ Bayesian methods
    def log_evidence(self):
        r"""Log marginal likelihood :math:`\log p(X, y)` of the training data.

        The sum of the label part (:math:`\log B(\beta + N) - \log B(\beta)` under the
        Dirichlet on class proportions, or :math:`\sum_c N_c \log\pi_c` when the
        proportions are fixed by ``class_prior`` / ``fit_prior=False``) and the family's
        feature part given the labels. Rows count with their ``sample_weight``.

        Returns
        -------
        float
        """
        check_is_fitted(self, "stats_")
        # One computation, the pytree's: what SBC's chain rule and the evidence functions
        # check of a model conditioned on other statistics is this.
        return _fitted.log_evidence(self.fitted_model())

    def fitted_model(self):
        r"""The fitted model as one immutable pytree, for the layers below the estimators.

        Everything ``bayesnb.analysis`` and ``bayesnb.ppl`` read of a fitted
        estimator, read once: their public functions accept this pytree where they accept
        the estimator, and build it with this method when given the estimator. The pytree
        does not refer to this estimator: a later ``fit``, ``set_params`` or ``del`` leaves
        it as it is.

        Returns
        -------
        bayesnb.core._fitted.FittedModel
            A registered JAX pytree (a frozen dataclass) with

            - ``family``: the conjugate family (a product of the blocks' families for a
              :class:`~bayesnb.MixedNB`);
            - ``prior``, ``posterior``, ``stats``: ``prior_``, ``posterior_``, ``stats_``
              (leaves of shape (n_classes, n_features[, ...]); dicts by block for a
              :class:`~bayesnb.MixedNB`);
            - ``class_dirichlet``, ``class_posterior`` (concentration of shape
              (n_classes,), or None) and ``class_prior`` (shape (n_classes,), or None);
            - ``classes`` of shape (n_classes,), ``n_features_in``, ``feature_names_in``
              (a tuple, or None), ``categories`` (``categories_``, or None), ``name``
              (the class's name);
            - ``temperature`` and ``calibration``: ``temperature_`` and
              ``calibration_`` (a :class:`~bayesnb.core._fitted.Unavailable` holding
              the error where they raise, raised where a layer uses them);
            - ``estimate``: the ``estimate`` parameter (its log class proportions are
              ``bayesnb.core._fitted.class_log_prior``; the log evidence,
              ``bayesnb.core._fitted.log_evidence``, is computed from the pytree by the
              functions :meth:`log_evidence` uses);
            - ``loo_approximations``: :meth:`loo_approximations` of both kinds, as
              ``(kind, reasons)`` pairs;
            - ``hyper_posterior``: ``hyper_posterior_`` (draws on axis 0), or None
              without hyperpriors, with ``hyper_conditional`` and ``hyper_embedding``
              (the value of :meth:`hyper_embedding`; the prior draws, hyperpriors
              included, are ``bayesnb.core._fitted.hyper_prior_draws`` of the pytree);
            - ``validate`` and ``validated_stats``: :meth:`validate_input` and
              :meth:`validated_stats` as they are now;
            - ``condition``: ``with_stats(stats).fitted_model()`` as it is now;
              ``joint_log_proba``: :meth:`predict_joint_log_proba` at any estimate
              (``(X, kind=None, contrast=False)``; class probabilities from it are
              ``bayesnb.analysis.calibration.fitted_proba``, this estimator's
              :meth:`predict_proba` at ``estimate=kind``); ``loo_terms``: :meth:`loo_terms`;
            - with hyperpriors, ``hyper_joint_draws``
              (:meth:`hyper_joint_log_proba_draws`) and ``hyper_chains`` (the number of
              chains of ``hyper_posterior_``).

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the estimator is not fitted.

        Examples
        --------
        >>> import numpy as np
        >>> from bayesnb import MultinomialNB
        >>> from bayesnb.analysis.uncertainty import predict_proba_draws
        >>> X = np.array([[3, 0, 1], [2, 1, 0], [0, 4, 2], [1, 3, 1]])
        >>> clf = MultinomialNB().fit(X, [0, 0, 1, 1])
        >>> model = clf.fitted_model()
        >>> model.posterior.concentration.shape
        (2, 3)
        >>> bool(np.allclose(predict_proba_draws(model, X, 5, random_state=0),
        ...                  clf.predict_proba_draws(X, 5, random_state=0)))
        True
        """
        import copy

        check_is_fitted(self, "stats_")
        # A shallow copy carries the validation and the hyperparameters' conditionals:
        # a later fit or set_params of this estimator rebinds its attributes, not the copy's.
        frozen_est = copy.copy(self)
        hyper = getattr(self, "hyper_posterior_", None) or None
        names = getattr(self, "feature_names_in_", None)
        embedding = None
        if hyper is not None:
            hypers, emb = self.hyper_embedding()
            embedding = (tuple(hypers), emb)

        def read(name):
            try:
                return getattr(self, name)
            except ValueError as err:
                return _fitted.Unavailable(err)

        def read_loo_approximations():
            # The reasons name fitted values (temperature_), which raise where set_params
            # changed what they were fitted for: the layers that use them raise it then.
            try:
                return tuple((kind, self.loo_approximations(kind)) for kind in ("conditional", "joint"))
            except ValueError as err:
                return _fitted.Unavailable(err)

        return _fitted.FittedModel(
            family=self.family_,
            prior=self.prior_,
            posterior=self.posterior_,
            stats=self.stats_,
            class_dirichlet=self.class_dirichlet_,
            class_posterior=self.class_posterior_,
            class_prior=self.class_prior_,
            classes=self.classes_,
            temperature=read("temperature_"),
            calibration=read("calibration_"),
            hyper_posterior=hyper,
            n_features_in=int(self.n_features_in_),
            feature_names_in=None if names is None else tuple(str(v) for v in names),
            categories=getattr(self, "categories_", None),
            name=type(self).__name__,
            estimate=self.estimate,
            loo_approximations=read_loo_approximations(),
            validate=frozen_est.validate_input,
            validated_stats=frozen_est.validated_stats,
            condition=lambda stats: frozen_est.with_stats(stats).fitted_model(),
            joint_log_proba=lambda X, kind=None, contrast=False: frozen_est._scores(X, contrast, kind),
            loo_terms=frozen_est.loo_terms,
            hyper_conditional=None if hyper is None else (lambda m: frozen_est.hyper_conditional(m).fitted_model()),
            hyper_embedding=embedding,
            hyper_joint_draws=None if hyper is None else frozen_est.hyper_joint_log_proba_draws,
            hyper_chains=None if hyper is None else int(self.hyper_diagnostics_["num_chains"]),
        )

    def _class_draws(self, key, n, *, prior=False):
        """``n`` draws of the log class proportions, shape (n, n_classes).

        From the posterior, or from the prior with ``prior=True``; fixed proportions
        (``class_prior``) are the same in every draw.
        """
        return _fitted.class_log_draws(key, self.fitted_model(), n, prior=prior)

    def _draw(self, n, random_state, *, prior=False):
        """``n`` iid draws of (log class proportions, feature parameters).

        From the posterior, or from the prior with ``prior=True`` (used to generate
        data from the prior predictive and for simulation-based calibration).
        """
        # With hyperpriors: the mixture over their posterior draws, or their prior.
        return _fitted.draws(self.fitted_model(), n, random_state, prior=prior)

    def _log_likelihood_draws(self, params, X):
        """Plug-in log-likelihood under a block of draws, shape (n_draws, n_samples, n_classes)."""
        return _fitted.log_likelihood_draws(self.fitted_model(), params, X)

    def _take_rows(self, X, start, stop):
        """Rows ``start:stop`` of validated input (as returned by ``_input``)."""
        return _fitted.take_rows(self.fitted_model(), X, start, stop)

    def _draw_source(self, X, n_draws, random_state):
        """Validated ``X`` and the posterior draws of the uncertainty engine.

        The key is split as in :meth:`sample_posterior`: the same ``random_state`` gives
        the same draws of the class proportions and (when they fit in one block, see
        :mod:`bayesnb.analysis.uncertainty`) of the feature parameters.
        """
        return _uncertainty.draw_source(self, X, n_draws, random_state)

    def sample_posterior(self, n=1000, random_state=None):
        """Exact iid draws of every parameter from the conjugate posterior.

        Parameters
        ----------
        n : int
            Number of draws.
        random_state : int, RandomState, Generator, jax key or None

        Returns
        -------
        dict of ndarrays with leading axis ``n``
            ``"class_probs"`` of shape (n, n_classes): the class proportions (constant
            when fixed by ``class_prior``), and the family's parameters under the names
            and shapes of its numpyro model's canonical variables, the variables of
            :meth:`to_inference_data`'s posterior group (for the discrete families
            ``"feature_probs"`` of shape (n, n_classes, n_features[, n_categories]),
            0 at the padding of categories a feature does not have, where the export has
            NaN; a :class:`~bayesnb.MixedNB`'s prefixed by the block's name,
            ``"<block>__<name>"``; a diagonal ``GaussianBayesClassifier``'s ``"loc"`` and
            ``"var"``, as ``GaussianNB``'s).
        """
        check_is_fitted(self, "stats_")
        n = check_n_draws(n, "n")
        log_class, params = self._draw(n, random_state)
        # The names and arrays of to_inference_data's posterior group, by the same code:
        # each family's numpyro model spec (its canonical variables) defines them once.
        # The export marks padding (a category a feature does not have) NaN, which arviz
        # shows as an empty cell; here it is what it is, a probability of 0, so that the
        # draws of a feature still sum to 1.
        from bayesnb.ppl.export import parameter_draws

        named = parameter_draws(self, log_class, params)
        return {
            "class_probs": np.exp(log_class),
            **{name: np.where(np.isnan(value), 0.0, value) for name, value in named.items()},
        }

    def predict_proba_draws(self, X, n_draws=100, random_state=None, *, posterior="fitted"):
        r"""Posterior draws of the class probabilities :math:`p(y=c \mid x, \theta, \pi)`.

        Each draw of :math:`(\pi, \theta)` from the posterior gives one vector of class
        probabilities per row; their spread is the epistemic uncertainty of the
        prediction. Vectorised over draws and bounded in memory (see
        :func:`bayesnb.analysis.uncertainty.proba_draws`).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        n_draws : int
        random_state : int, RandomState, Generator, jax key or None
        posterior : {"fitted", "updated"}, default="fitted"
            ``"fitted"``: draws of :math:`(\pi, \theta)` from :math:`p(\theta, \pi \mid D)`,
            shared by all rows. ``"updated"``: from :math:`p(\theta, \pi \mid D, x)`, the
            posterior updated by each row itself, whose mean of
            :math:`p(y \mid x, \theta, \pi)` is the exact predictive
            (``estimate="predictive"``); far costlier (see
            :func:`bayesnb.analysis.uncertainty.updated_proba_rows`).

        Returns
        -------
        ndarray of shape (n_draws, n_samples, n_classes)
        """
        if _uncertainty.check_posterior(posterior) == "updated":
            return _uncertainty.updated_proba_draws(self, X, n_draws, random_state)
        return _uncertainty.proba_draws(self._draw_source(X, n_draws, random_state))

    def predict_proba_interval(
        self, X, level=0.9, *, n_draws=1000, method="equal-tailed", random_state=None, posterior="fitted",
        return_median=False,
    ):
        """Credible interval of :math:`p(y=c \\mid x, \\theta, \\pi)` for every row and class.

        Computed from ``n_draws`` posterior draws, block of rows by block of rows (see
        :func:`bayesnb.analysis.uncertainty.proba_interval`); the draws are those of
        :meth:`predict_proba_draws` with the same ``random_state`` and ``posterior``.

        The probability ``predict_proba`` gives is not a summary of this distribution and
        may lie outside the interval: a point estimate plugs in one value of the
        parameters, and the exact predictive (``estimate="predictive"``) is the mean over
        the posterior *updated by the row itself* (``posterior="updated"``), not over the
        fitted one; on a long document that update moves the parameters far. Report the
        median (``return_median=True``) beside the interval it belongs to.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        level : float in (0, 1)
        n_draws : int
            Posterior draws used to estimate the interval.
        method : {"equal-tailed", "hdi"}
        random_state : int, RandomState, Generator, jax key or None
        posterior : {"fitted", "updated"}, default="fitted"
            Over :math:`p(\\theta, \\pi \\mid D)` or :math:`p(\\theta, \\pi \\mid D, x)` (see
            :meth:`predict_proba_draws`).
        return_median : bool, default=False
            Also return the median of the same draws (inside an equal-tailed interval
            always; inside the HDI for ``level > 0.5``).

        Returns
        -------
        lower, upper : ndarrays of shape (n_samples, n_classes)
            pandas DataFrames indexed like ``X``, columns the classes, when ``X`` is a
            pandas DataFrame.
        median : ndarray of shape (n_samples, n_classes)
            Only with ``return_median=True``.
        """
        check_interval_args(level, method)
        if _uncertainty.check_posterior(posterior) == "updated":
            result = _uncertainty.updated_proba_interval(
                self, X, level, n_draws=n_draws, method=method, random_state=random_state, median=return_median
            )
        else:
            result = _uncertainty.proba_interval(
                self._draw_source(X, n_draws, random_state), level, method, median=bool(return_median)
            )
        # A pandas user's rows keep their labels, the classes name the columns.
        return _uncertainty.as_frames(X, self.classes_, *result)

    # ------------------------------------------- generative model and arviz export
    def _generate(self, n, random_state, prior):
        check_is_fitted(self, "stats_")
        n = check_n_draws(n, "n")
        key = key_from_random_state(random_state)
        source = self.prior_ if prior else self.posterior_
        per_draw = max(1, sum(int(np.size(leaf)) for leaf in jax.tree.leaves(source)))
        # One parameter draw per generated row, in chunks of rows whose draws take at
        # most about _GENERATE_ENTRIES numbers. Every chunk has the same power-of-two
        # number of rows (the surplus of the last is dropped), so the compiled samplers
        # see one shape.
        cap = 1 << max(0, (_GENERATE_ENTRIES // per_draw).bit_length() - 1)
        chunk = min(cap, 1 << max(0, (n - 1).bit_length()))
        # Labels: a fresh draw of π per row followed by y ~ Cat(π) is y ~ Cat(E[π]).
        log_pi = self._label_log_probs(prior)
        X_parts, y_parts = [], []
        for i, start in enumerate(range(0, n, chunk)):
            m = min(chunk, n - start)
            key_label, key_params, key_x = jax.random.split(jax.random.fold_in(key, i), 3)
            y_index = _class_prior.sample_labels(key_label, log_pi, chunk)
            params = jax.tree.map(np.asarray, self._sample_row_params(key_params, chunk, prior))
            X_parts.append(self._simulate_features(key_x, params, y_index)[:m])
            y_parts.append(y_index[:m])
        X = np.concatenate(X_parts, axis=0)
        return self._format_generated(X), self.classes_[np.concatenate(y_parts)]

    def sample(self, n=1, random_state=None):
        r"""Generate labelled rows from the posterior predictive :math:`p(x, y \mid D)`.

        Each row is drawn independently from the posterior predictive distribution: a
        fresh posterior draw of :math:`(\pi, \theta)` per row, then
        :math:`y \sim \mathrm{Cat}(\pi)` and :math:`x \mid y \sim p(x \mid \theta_y)`
        (the family's ``simulate``). So the rows are iid from the predictive, and the
        maximum-likelihood estimate refitted on many of them converges to the moments of
        the predictive (for the discrete families and Poisson: the posterior means of
        the parameters).

        Parameters
        ----------
        n : int
            Number of rows.
        random_state : int, RandomState, Generator, jax key or None

        Returns
        -------
        X : ndarray of shape (n, n_features)
            Counts / 0-1 values / category codes as int64, real values as float64
            (:class:`~bayesnb.MixedNB` fitted on a DataFrame, and
            :class:`~bayesnb.CategoricalNB` fitted on label columns, return a DataFrame
            of the training columns, categories as their labels).
        y : ndarray of shape (n,)
            Class labels from ``classes_``.

        Examples
        --------
        >>> from bayesnb import BernoulliNB
        >>> clf = BernoulliNB().fit([[1, 0], [1, 1], [0, 1], [0, 1]], ["a", "a", "b", "b"])
        >>> X, y = clf.sample(5, random_state=0)
        >>> X.shape, y.shape
        ((5, 2), (5,))
        """
        return self._generate(n, random_state, prior=False)

    def sample_prior(self, n=1, random_state=None):
        r"""Generate labelled rows from the prior predictive :math:`p(x, y)`.

        As :meth:`sample`, with :math:`(\pi, \theta)` drawn from the prior (``prior_``
        and the Dirichlet on the class proportions, or the fixed ``class_prior``). The
        estimator must be fitted: the prior's shape (classes, features, categories) and,
        for data-scaled default priors, its values come from the training data.

        Parameters
        ----------
        n : int
        random_state : int, RandomState, Generator, jax key or None

        Returns
        -------
        X : ndarray of shape (n, n_features)
        y : ndarray of shape (n,)
        """
        return self._generate(n, random_state, prior=True)

    def to_inference_data(
        self, n_draws=500, random_state=None, X_new=None, *, X=None, y=None, n_chains=2, feature_names=None
    ):
        """The posterior as an arviz ``InferenceData`` of exact iid draws.

        See :func:`bayesnb.ppl.export.to_inference_data` for the groups, dims and coords.

        Parameters
        ----------
        n_draws : int
            Draws per chain.
        random_state : int, RandomState, Generator, jax key or None
        X_new : array-like of shape (n_new, n_features), optional
            Rows whose class probabilities go to the ``predictions`` group.
        X, y : array-like, optional
            The training rows and labels: the estimator keeps only sufficient
            statistics, so ``observed_data``, ``log_likelihood`` (for ``az.loo`` /
            ``az.waic``) and ``posterior_predictive`` are there only when they are given.
        n_chains : int
            Number of chains the iid draws are split into (arviz's ``chain`` dim;
            default 2, so that arviz's ``r_hat`` is defined).
            With hyperparameters integrated (given as distributions), ``n_draws`` and
            ``n_chains`` are those of the NUTS run: the ``posterior`` group holds the
            hyperparameters' draws and one draw of the parameters conditional on each.
        feature_names : sequence of str, optional
            The ``feature`` coordinates (e.g. a vectorizer's vocabulary); default
            ``feature_names_in_``, else ``x0, x1, ...``.

        Returns
        -------
        arviz.InferenceData
        """
        from bayesnb.ppl.export import to_inference_data

        if self._hyper_fitted():
            return self._hyper_inference_data(X_new, X, y, feature_names, random_state)
        return to_inference_data(
            self, n_draws, random_state, X_new, X=X, y=y, n_chains=n_chains, feature_names=feature_names
        )


@functools.lru_cache(maxsize=None)
def _signature_params(cls):
    return frozenset(inspect.signature(cls.__init__).parameters)


def _is_loo(temperature):
    return isinstance(temperature, str) and temperature == "loo"


def check_calibrate(calibrate):
    """``calibrate`` checked: None or ``"loo"``, or a clear error."""
    if calibrate is None or (isinstance(calibrate, str) and calibrate == "loo"):
        return calibrate
    raise ValueError(f"calibrate must be None or 'loo', got {calibrate!r}")


def check_temperature(temperature):
    """A numeric ``temperature`` as a float >= 1, or a clear error."""
    if isinstance(temperature, (bool, np.bool_)) or not isinstance(temperature, (int, float, np.integer, np.floating)):
        raise ValueError(f"temperature must be a number >= 1 or 'loo', got {temperature!r}")
    t = float(temperature)
    if not np.isfinite(t) or t < 1.0:
        raise ValueError(f"temperature must be a finite number >= 1 or 'loo', got {temperature!r}")
    return t


# Numbers per chunk of parameter draws when generating data (8 MiB of float64).
_GENERATE_ENTRIES = 1 << 20


def _short(value):
    """A fitted value for a message: a number to 4 significant digits, an array by its range."""
    a = np.asarray(value, dtype=np.float64)
    if a.size == 1:
        return f"{float(a.ravel()[0]):.4g}"
    return f"[{a.min():.4g} .. {a.max():.4g}]"
