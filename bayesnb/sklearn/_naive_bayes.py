"""scikit-learn's four naive Bayes estimators as thin subclasses of bayesnb's.

Each class here is its bayesnb estimator (:class:`bayesnb.MultinomialNB`, ...) with

* scikit-learn's ``__init__`` (so ``get_params`` / ``set_params`` / ``clone`` know
  scikit-learn's parameters only) and its parameter validation (scikit-learn's own
  ``_parameter_constraints`` table, so the ``InvalidParameterError`` messages are its);
* the main estimator's other parameters pinned as class attributes: ``estimate="mean"``
  for the discrete families (scikit-learn's ``alpha`` smoothing *is* the posterior mean
  under a Dirichlet / Beta(``alpha``) prior) and ``estimate="mle"`` for ``GaussianNB``;
  every other one at the main estimator's default;
* scikit-learn's class prior: ``class_prior`` / ``priors`` when given, uniform with
  ``fit_prior=False``, else the maximum-likelihood frequencies :math:`N_c / N` (held as
  fixed proportions, so the Bayesian methods treat them as given);
* scikit-learn's checks and messages where they differ from the main namespace's
  (``partial_fit`` classes, priors, ``alpha`` / ``force_alpha``, ``min_categories``,
  negative input), and a ``fit`` that leaves the estimator as it was when it raises.

No likelihood, posterior or statistic is computed here: the statistics, posteriors,
point estimates and log-likelihoods are the families' (:mod:`bayesnb.core.families`), through
the main estimators' code. The one piece of arithmetic of its own is scikit-learn's
Gaussian variance floor ``epsilon_`` (``var_smoothing`` times the largest unweighted
variance of the latest batch), added to the maximum-likelihood variances
:math:`M_2 / N_c` read off the statistics.
"""

from __future__ import annotations

import contextlib
import inspect
import warnings
from numbers import Real

import numpy as np
import sklearn.naive_bayes as _sk
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.multiclass import unique_labels
from sklearn.utils.validation import check_consistent_length, check_is_fitted, validate_data

from bayesnb import estimators as _est
from bayesnb.core._validation import check_category_codes
from bayesnb.core.families.gaussian import GaussianParams
from bayesnb.core.stats import GaussianStats
from bayesnb.estimators._shards import Shard
from bayesnb.io.persistence import register_estimator

__all__ = ["BernoulliNB", "CategoricalNB", "GaussianNB", "MultinomialNB"]

# scikit-learn's floor for alpha when force_alpha=False.
_ALPHA_MIN = 1e-10

# The fitted state, beside the classes and the statistics, that a main-namespace
# estimator is rebuilt from (see to_bayesnb): what a Shard's ``state`` holds.
_SHARD_STATE = ("n_features_in_", "feature_names_in_", "n_categories_")


class _ScikitLearnFront:
    """scikit-learn's parameters, class prior, checks and messages over a bayesnb estimator.

    A subclass names its bayesnb estimator in ``_main`` (and also derives from it) and
    the values of the main estimator's parameters that scikit-learn's signature lacks in
    ``_fixed``; every other such parameter is pinned to the main estimator's default.
    """

    _main = None
    _fixed: dict = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls._main is None:  # an intermediate mixin
            return
        own = inspect.signature(cls.__init__).parameters
        for name, p in inspect.signature(cls._main.__init__).parameters.items():
            # Class attributes, not parameters: get_params, clone and set_params see
            # scikit-learn's signature only, and the main estimator's code reads these.
            if name != "self" and name not in own and name not in vars(cls):
                setattr(cls, name, cls._fixed.get(name, p.default))

    # -------------------------------------------------------------- fitting
    def fit(self, X, y, sample_weight=None):
        """Fit the model to labelled data (scikit-learn's ``fit``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional

        Returns
        -------
        self
        """
        self._validate_params()
        # A fit that raises leaves the estimator as it was (scikit-learn's estimators keep
        # their previous fit when the new input is refused).
        check_consistent_length(X, y)
        before = dict(self.__dict__)
        try:
            return super().fit(X, y, sample_weight=sample_weight)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(before)
            raise

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Update the model with a batch of rows (scikit-learn's ``partial_fit``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        classes : array-like of shape (n_classes,), optional
            Every class label; required on the first call.
        sample_weight : array-like of shape (n_samples,), optional

        Returns
        -------
        self
        """
        self._validate_params()
        fitted = hasattr(self, "classes_")
        if not fitted and classes is None:
            raise ValueError("classes must be passed on the first call to partial_fit.")
        if fitted and classes is not None and not np.array_equal(self.classes_, unique_labels(classes)):
            raise ValueError(
                f"`classes={classes!r}` is not the same as on last call to partial_fit, was: {self.classes_!r}"
            )
        known = self.classes_ if fitted else unique_labels(classes)
        try:
            labels = np.unique(np.ravel(y))
            unknown = labels[~np.isin(labels, known)]
        except TypeError:  # labels of mixed types: the main estimator's check names them
            unknown = ()
        if len(unknown):
            raise ValueError(
                "The target label(s) %s in y do not exist in the initial classes %s" % (unknown, known)
            )
        check_consistent_length(X, y)
        return super().partial_fit(X, y, classes=classes, sample_weight=sample_weight)

    def _check_X(self, X, reset):
        with self._input_messages():
            return super()._check_X(X, reset)

    @contextlib.contextmanager
    def _input_messages(self):
        """scikit-learn's wording of refused input: "... passed to MultinomialNB (input X)."."""
        try:
            yield
        except ValueError as err:
            prefix = f"Negative values in data passed to {type(self).__name__}"
            text = str(err)
            if not text.startswith(prefix):
                raise
            # bayesnb's detail (the offending minimum) follows scikit-learn's whole message.
            detail = text[len(prefix) :].lstrip(": ")
            raise ValueError(f"{prefix} (input X). {detail[:1].upper()}{detail[1:]}") from None

    # ---------------------------------------------------------- class prior
    def _check_given_prior(self, prior, n_classes):
        if len(prior) != n_classes:
            raise ValueError("Number of priors must match number of classes.")

    def _refresh(self):
        if self.class_prior is not None:
            self._check_given_prior(self.class_prior, self.classes_.size)
        super()._refresh()
        if self.class_prior is None and self.fit_prior:
            # scikit-learn's class prior: the maximum-likelihood frequencies N_c / N (zero
            # for a class not seen yet), held as fixed proportions.
            counts = np.asarray(self.stats_.class_count, dtype=np.float64)
            self.class_prior_ = counts / counts.sum()
            self.class_dirichlet_ = self.class_posterior_ = self.class_alpha_ = None

    # ------------------------------------------------------------ bayesnb
    def _bayesnb_params(self):
        """Parameters of the equivalent main-namespace estimator (same predictions)."""
        accepted = inspect.signature(self._main.__init__).parameters
        params = {k: v for k, v in self.get_params(deep=False).items() if k in accepted}
        prior = np.asarray(self.class_prior_, dtype=np.float64)
        params.update(estimate=self.estimate, class_prior=prior / prior.sum())
        if hasattr(self, "alpha_"):  # after force_alpha=False raised small values
            params["alpha"] = self.alpha_
        return params

    def to_bayesnb(self, **params):
        """The fitted model as the equivalent ``bayesnb`` estimator, with no refit.

        The returned estimator (e.g. :class:`bayesnb.MultinomialNB`) holds the same
        statistics, and with no ``params`` makes the same predictions: ``estimate`` is
        ``"mean"`` (``"mle"`` for Gaussian features), ``alpha`` the one in use and
        ``class_prior`` the proportions in use. Its parameters are the main namespace's,
        so ``params`` may switch to the exact posterior predictive
        (``estimate="predictive"``), a Dirichlet posterior on the class proportions
        (``class_prior=None``), an evidence-learned ``alpha``, ... For ``GaussianNB``,
        ``"mle"`` there adds the main namespace's variance floor (``var_smoothing`` times
        the largest pooled weighted variance of all rows), which equals this ``epsilon_``
        after a ``fit`` without ``sample_weight``.

        Parameters
        ----------
        **params
            Constructor parameters of the main estimator, overriding the equivalent ones.

        Returns
        -------
        BaseNB
            A fitted estimator of the main namespace.

        Examples
        --------
        >>> from bayesnb.sklearn import MultinomialNB
        >>> clf = MultinomialNB().fit([[3, 0], [2, 1], [0, 2]], ["a", "a", "b"])
        >>> clf.to_bayesnb().predict_proba([[1, 1]]).round(6).tolist() == clf.predict_proba([[1, 1]]).round(6).tolist()
        True
        >>> clf.to_bayesnb(estimate="predictive").estimate
        'predictive'
        """
        check_is_fitted(self, "stats_")
        est = self._main(**{**self._bayesnb_params(), **params})
        # The public map-reduce entry: the statistics held here as the merged shard of all
        # the rows, from which fit_shard builds the prior and posterior once.
        state = {key: vars(self)[key] for key in _SHARD_STATE if key in vars(self)}
        return est.fit_shard(Shard(self.classes_, self.stats_, state))


_DISCRETE_ATTRS = """
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    class_count_ : ndarray of shape (n_classes,)
        Weighted number of training rows per class.
    class_log_prior_ : ndarray of shape (n_classes,)
        Log class proportions (the given ``class_prior``, uniform, or :math:`\\log N_c/N`).
    class_prior_ : ndarray of shape (n_classes,)
        The class proportions in use, held fixed by the Bayesian methods.
    alpha_ : float or ndarray
        The ``alpha`` in use (after ``force_alpha=False`` raised small values to 1e-10).
    n_features_in_ : int
    feature_names_in_ : ndarray of str, when fitted on a DataFrame with string columns
    stats_, prior_, posterior_
        The sufficient statistics and the conjugate prior and posterior (bayesnb pytrees).
"""

_BAYES = """
    Every method of :class:`bayesnb.{0}` works on the fitted object: the posterior
    under the ``alpha`` prior is the one whose mean scikit-learn's smoothing computes,
    so ``predict_proba_interval``, ``predict_proba_draws``, ``sample_posterior``,
    ``log_evidence`` (feature evidence plus the label log-likelihood at the fixed class
    proportions), ``to_inference_data`` and ``sample`` describe this model; ``to_bayesnb``
    returns the main-namespace estimator, whose ``estimate`` switches to the exact
    posterior predictive.
"""


class _DiscreteFront(_ScikitLearnFront):
    _fixed = {"estimate": "mean"}

    def _check_alpha(self):
        """``alpha`` as scikit-learn uses it (shape checked, raised to 1e-10 unless ``force_alpha``)."""
        alpha = np.asarray(self.alpha) if not isinstance(self.alpha, Real) else self.alpha
        alpha_min = np.min(alpha)
        if isinstance(alpha, np.ndarray):
            if not alpha.shape[0] == self.n_features_in_:
                raise ValueError(
                    "When alpha is an array, it should contains `n_features`. "
                    f"Got {alpha.shape[0]} elements instead of {self.n_features_in_}."
                )
            if alpha_min < 0:
                raise ValueError("All values in alpha must be greater than 0.")
        if alpha_min < _ALPHA_MIN and not self.force_alpha:
            warnings.warn(
                "alpha too small will result in numeric errors, setting alpha ="
                f" {_ALPHA_MIN:.1e}. Use `force_alpha=True` to keep alpha unchanged."
            )
            return np.maximum(alpha, _ALPHA_MIN)
        return alpha

    def _make_prior(self):
        alpha = self._check_alpha()
        if np.min(alpha) <= 0:
            raise ValueError(
                f"alpha={self.alpha!r} with force_alpha=True: a zero concentration is an improper "
                "prior (no posterior mean, log-probabilities of -inf). Use alpha > 0, or "
                f"force_alpha=False to raise it to {_ALPHA_MIN:.0e} as scikit-learn does."
            )
        self.alpha_ = alpha
        return self._prior_from_alpha(alpha)


class MultinomialNB(_DiscreteFront, _est.MultinomialNB):
    __doc__ = (
        """scikit-learn's ``MultinomialNB``, fitted by bayesnb's Dirichlet-multinomial core.

    Same parameters, defaults, fitted attributes and numbers as
    ``sklearn.naive_bayes.MultinomialNB``: :math:`\\theta_{cj} = (T_{cj} + \\alpha_j) /
    (\\sum_k T_{ck} + \\sum_k \\alpha_k)`, the mean of the :math:`\\mathrm{Dir}(\\alpha + T_c)`
    posterior.
"""
        + _BAYES.format("MultinomialNB")
        + """
    Parameters
    ----------
    alpha : float or array-like of shape (n_features,), default=1.0
    force_alpha : bool, default=True
    fit_prior : bool, default=True
    class_prior : array-like of shape (n_classes,), default=None
"""
        + _DISCRETE_ATTRS
        + """    feature_count_ : ndarray of shape (n_classes, n_features)
    feature_log_prob_ : ndarray of shape (n_classes, n_features)

    Examples
    --------
    >>> from bayesnb.sklearn import MultinomialNB
    >>> clf = MultinomialNB().fit([[2, 0, 1], [3, 1, 0], [0, 4, 1], [0, 3, 2]], [0, 0, 1, 1])
    >>> clf.predict([[1, 0, 0]]).tolist(), clf.class_log_prior_.round(4).tolist()
    ([0], [-0.6931, -0.6931])
    >>> lower, upper = clf.predict_proba_interval([[1, 0, 0]], level=0.9, random_state=0)
    """
    )

    _main = _est.MultinomialNB
    _parameter_constraints = dict(_sk.MultinomialNB._parameter_constraints)

    def __init__(self, *, alpha=1.0, force_alpha=True, fit_prior=True, class_prior=None):
        self.alpha = alpha
        self.force_alpha = force_alpha
        self.fit_prior = fit_prior
        self.class_prior = class_prior


class BernoulliNB(_DiscreteFront, _est.BernoulliNB):
    __doc__ = (
        """scikit-learn's ``BernoulliNB``, fitted by bayesnb's Beta-Bernoulli core.

    Same parameters, defaults, fitted attributes and numbers as
    ``sklearn.naive_bayes.BernoulliNB``: :math:`\\theta_{cj} = (T_{cj} + \\alpha) / (N_c +
    2\\alpha)`, the mean of the :math:`\\mathrm{Beta}(\\alpha + T_{cj}, \\alpha + N_c - T_{cj})`
    posterior. ``binarize=None`` needs 0/1 data (other values are an error, where
    scikit-learn would count them as they are).
"""
        + _BAYES.format("BernoulliNB")
        + """
    Parameters
    ----------
    alpha : float or array-like of shape (n_features,), default=1.0
    force_alpha : bool, default=True
    binarize : float or None, default=0.0
    fit_prior : bool, default=True
    class_prior : array-like of shape (n_classes,), default=None
"""
        + _DISCRETE_ATTRS
        + """    feature_count_ : ndarray of shape (n_classes, n_features)
    feature_log_prob_ : ndarray of shape (n_classes, n_features)

    Examples
    --------
    >>> from bayesnb.sklearn import BernoulliNB
    >>> clf = BernoulliNB().fit([[1, 0], [1, 1], [0, 1], [0, 1]], ["a", "a", "b", "b"])
    >>> clf.predict([[1, 0]]).tolist()
    ['a']
    """
    )

    _main = _est.BernoulliNB
    _parameter_constraints = dict(_sk.BernoulliNB._parameter_constraints)

    def __init__(self, *, alpha=1.0, force_alpha=True, binarize=0.0, fit_prior=True, class_prior=None):
        self.alpha = alpha
        self.force_alpha = force_alpha
        self.binarize = binarize
        self.fit_prior = fit_prior
        self.class_prior = class_prior


class CategoricalNB(_DiscreteFront, _est.CategoricalNB):
    __doc__ = (
        """scikit-learn's ``CategoricalNB``, fitted by bayesnb's Dirichlet-categorical core.

    Same parameters, defaults, fitted attributes and numbers as
    ``sklearn.naive_bayes.CategoricalNB``: :math:`\\theta_{cjk} = (n_{cjk} + \\alpha) /
    (N_c + K_j \\alpha)`, the mean of the Dirichlet posterior of each (class, feature).
    As scikit-learn, float codes are cast to int by truncation (here with a
    ``DataConversionWarning`` when a value is not an integer). A code above those seen in
    training gets the posterior share of one new category (scikit-learn raises
    ``IndexError``).
"""
        + _BAYES.format("CategoricalNB")
        + """
    Parameters
    ----------
    alpha : float, default=1.0
    force_alpha : bool, default=True
    fit_prior : bool, default=True
    class_prior : array-like of shape (n_classes,), default=None
    min_categories : int or array-like of shape (n_features,), default=None
"""
        + _DISCRETE_ATTRS
        + """    n_categories_ : int ndarray of shape (n_features,)
    category_count_ : list of ndarray of shape (n_classes, n_categories_[j])
    feature_log_prob_ : list of ndarray of shape (n_classes, n_categories_[j])

    Examples
    --------
    >>> from bayesnb.sklearn import CategoricalNB
    >>> clf = CategoricalNB().fit([[0, 1], [0, 2], [1, 0], [1, 0]], [0, 0, 1, 1])
    >>> clf.predict([[0, 2], [1, 0]]).tolist(), clf.n_categories_.tolist()
    ([0, 1], [2, 3])
    """
    )

    _main = _est.CategoricalNB
    _parameter_constraints = dict(_sk.CategoricalNB._parameter_constraints)

    def __init__(self, *, alpha=1.0, force_alpha=True, fit_prior=True, class_prior=None, min_categories=None):
        self.alpha = alpha
        self.force_alpha = force_alpha
        self.fit_prior = fit_prior
        self.class_prior = class_prior
        self.min_categories = min_categories

    def _check_X(self, X, reset):
        X = validate_data(self, X, dtype=None, reset=reset, ensure_all_finite=True)
        if X.dtype.kind == "O":  # numbers in an object array, which scikit-learn casts too
            X = X.astype(np.float64)
        if X.dtype.kind == "f":
            fraction = X != np.trunc(X)
            if fraction.any():
                warnings.warn(
                    f"{type(self).__name__} casts the float values of X to integer category codes "
                    f"by truncation, as scikit-learn does (e.g. {X[fraction][0]!r} -> "
                    f"{int(X[fraction][0])}); encode categories as integer codes (OrdinalEncoder)",
                    DataConversionWarning,
                    stacklevel=2,
                )
                X = np.trunc(X)
        with self._input_messages():
            return check_category_codes(X, type(self).__name__)

    def _compute_stats(self, X, y_index, sample_weight, mask=None):
        if self.min_categories is not None:
            m = np.array(self.min_categories)
            if not np.issubdtype(m.dtype, np.signedinteger):
                raise ValueError(f"'min_categories' should have integral type. Got {m.dtype} instead.")
            if m.ndim and m.shape != (X.shape[1],):
                raise ValueError(
                    f"'min_categories' should have shape ({X.shape[1]},) when an array-like is "
                    f"provided. Got {m.shape} instead."
                )
        return super()._compute_stats(X, y_index, sample_weight, mask=mask)


class GaussianNB(_ScikitLearnFront, _est.GaussianNB):
    """scikit-learn's ``GaussianNB``, fitted by bayesnb's Normal-Inverse-Gamma core.

    Same parameters, defaults, fitted attributes and numbers as
    ``sklearn.naive_bayes.GaussianNB``: ``theta_`` the weighted class means, ``var_`` the
    maximum-likelihood variances :math:`M_{2,cj} / N_c` plus ``epsilon_`` =
    ``var_smoothing`` times the largest (unweighted) feature variance of the ``X`` of
    the latest ``fit`` / ``partial_fit`` call (after ``partial_fit``, ``var_`` also keeps
    scikit-learn's carry-over of earlier floors), ``class_prior_`` the given ``priors`` or
    the weighted class frequencies; attributes in the floating dtype of ``X``.

    The Bayesian methods of :class:`bayesnb.GaussianNB` work on the fitted object, under
    the main namespace's default Normal-Inverse-Gamma prior (scaled to the data; see
    :func:`bayesnb.core.families.gaussian.default_prior`): ``predict_proba_interval``,
    ``sample_posterior``, ``log_evidence``, ``to_inference_data``, ... ``to_bayesnb``
    returns the main-namespace estimator (``estimate="predictive"``: the exact Student-t
    posterior predictive).

    Parameters
    ----------
    priors : array-like of shape (n_classes,), default=None
    var_smoothing : float, default=1e-9

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    class_count_ : ndarray of shape (n_classes,)
    class_prior_ : ndarray of shape (n_classes,)
    theta_ : ndarray of shape (n_classes, n_features)
    var_ : ndarray of shape (n_classes, n_features)
    epsilon_ : float
    n_features_in_ : int
    feature_names_in_ : ndarray of str, when fitted on a DataFrame with string columns
    stats_, prior_, posterior_
        The sufficient statistics and the conjugate prior and posterior (bayesnb pytrees).

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb.sklearn import GaussianNB
    >>> X = np.array([[-1.0, -1.0], [-2.0, -1.0], [-3.0, -2.0], [1.0, 1.0], [2.0, 1.0], [3.0, 2.0]])
    >>> clf = GaussianNB().fit(X, [1, 1, 1, 2, 2, 2])
    >>> clf.predict([[-0.8, -1.0]]).tolist(), clf.class_prior_.tolist()
    ([1], [0.5, 0.5])
    """

    _main = _est.GaussianNB
    _fixed = {"estimate": "mle"}
    _parameter_constraints = dict(_sk.GaussianNB._parameter_constraints)

    def __init__(self, *, priors=None, var_smoothing=1e-9):
        self.priors = priors
        self.var_smoothing = var_smoothing

    @property
    def class_prior(self):
        """The main estimator's name for ``priors`` (read by the shared fitting code)."""
        return self.priors

    def _check_given_prior(self, prior, n_classes):
        p = np.asarray(prior, dtype=np.float64)
        if p.shape[0] != n_classes:
            raise ValueError("Number of priors must match number of classes.")
        if not np.isclose(p.sum(), 1.0):
            raise ValueError("The sum of the priors should be 1.")
        if np.any(p < 0):
            raise ValueError("Priors must be non-negative.")

    def _check_X(self, X, reset):
        if reset:
            # scikit-learn's fitted arrays have the floating dtype of X (float32 stays float32).
            # (Held by name, so that a model file stores it as a string.)
            self._dtype_ = "float32" if getattr(X, "dtype", None) == np.float32 else "float64"
        return super()._check_X(X, reset)

    def _compute_stats(self, X, y_index, sample_weight, mask=None):
        new = super()._compute_stats(X, y_index, sample_weight, mask=mask)
        # scikit-learn's floor: var_smoothing times the largest unweighted variance of this batch.
        # (var_smoothing was checked against scikit-learn's constraints by fit / partial_fit.)
        epsilon = float(self.var_smoothing) * float(np.max(np.var(X, axis=0)))
        if hasattr(self, "stats_"):
            # scikit-learn's partial_fit takes the *new* floor off var_ before merging the
            # batch (var_ -= epsilon_), so the previous floor's excess stays in the old
            # rows' share of the variance: (leak + eps_prev - eps_new) * N_past / N_total
            # per class (all of it for a class without new rows). Carried here so that
            # var_ is scikit-learn's after any sequence of calls.
            past = np.asarray(self.stats_.class_count, dtype=np.float64)
            total = past + np.asarray(new.class_count, dtype=np.float64)
            share = np.divide(past, total, out=np.ones_like(past), where=total > 0)
            self._leak_ = share * (self._leak_ + self._epsilon_ - epsilon)
        else:
            self._leak_ = np.zeros(np.shape(new.class_count))
        self._epsilon_ = epsilon
        return new

    def _refresh(self):
        self._check_floor_state()
        super()._refresh()
        self.class_count_ = self.class_count_.astype(self._dtype_)
        self.class_prior_ = np.asarray(self.class_prior_).astype(self._dtype_)

    def _check_floor_state(self):
        """Refuse a state of the variance floor that ``fit`` / ``partial_fit`` cannot leave
        (it is saved with the model: a model file is checked as the input of ``fit``)."""
        n_classes = np.shape(self.stats_.class_count)
        epsilon, leak = self._epsilon_, np.asarray(self._leak_)
        if self._dtype_ not in ("float32", "float64"):
            raise ValueError(f"GaussianNB: the fitted dtype must be 'float32' or 'float64', got {self._dtype_!r}")
        if isinstance(epsilon, bool) or not isinstance(epsilon, Real) or not np.isfinite(epsilon) or epsilon < 0:
            raise ValueError(f"GaussianNB: the variance floor epsilon_ must be a finite number >= 0, got {epsilon!r}")
        if leak.shape != n_classes or leak.dtype.kind != "f" or not np.all(np.isfinite(leak)):
            raise ValueError(
                f"GaussianNB: the carried variance floors must be {n_classes[0]} finite numbers (one per class), "
                f"got dtype {leak.dtype} and shape {leak.shape}"
            )

    def _point(self, kind):
        # BaseNB's protected hook for the plug-in parameters. scikit-learn's plug-in
        # (whatever `kind`: its estimate is fixed): the class means and maximum-likelihood
        # variances of the statistics plus epsilon_. The family's "mle" is not used: it
        # refuses a class without rows and a zero variance, which scikit-learn covers
        # with zeros and its floor. Memoised in the hook's cache, emptied with the posterior.
        if "sklearn" not in self._cache:
            n = np.asarray(self.stats_.class_count, dtype=np.float64)[:, None]
            m2 = np.asarray(self.stats_.m2, dtype=np.float64)
            var = np.divide(m2, n, out=np.zeros_like(m2), where=n > 0) + self._epsilon_ + self._leak_[:, None]
            self._cache["sklearn"] = GaussianParams(np.asarray(self.stats_.mean, dtype=np.float64), var)
        return self._cache["sklearn"]

    @property
    def theta_(self):
        """ndarray of shape (n_classes, n_features): the weighted class means."""
        return _est.GaussianNB.theta_.fget(self).astype(self._dtype_)

    @property
    def var_(self):
        """ndarray of shape (n_classes, n_features): maximum-likelihood variances plus ``epsilon_``."""
        return _est.GaussianNB.var_.fget(self).astype(self._dtype_)

    @property
    def epsilon_(self):
        """float: ``var_smoothing`` times the largest feature variance of the latest batch."""
        check_is_fitted(self, "stats_")
        return np.dtype(self._dtype_).type(self._epsilon_)

    @classmethod
    def _update_mean_variance(cls, n_past, mu, var, X, sample_weight=None):
        """Mean and variance of past rows merged with the rows ``X`` (scikit-learn's helper).

        Through the statistics and Chan et al.'s merge of :class:`bayesnb.core.stats.GaussianStats`.

        Parameters
        ----------
        n_past : float
            (Weighted) number of past rows.
        mu, var : array-like of shape (n_features,)
            Their mean and variance.
        X : array-like of shape (n_samples, n_features)
        sample_weight : array-like of shape (n_samples,), optional

        Returns
        -------
        total_mu, total_var : ndarrays of shape (n_features,)
        """
        X = np.asarray(X, dtype=np.float64)
        w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        if X.shape[0] == 0 or (w is not None and np.isclose(w.sum(), 0.0)):
            return mu, var
        new = cls._family.stats(X, np.zeros(X.shape[0], dtype=np.int64), 1, w)
        if n_past == 0:
            total = new
        else:
            mean = np.broadcast_to(np.asarray(mu, dtype=np.float64), X.shape[1:])[None]
            m2 = n_past * np.broadcast_to(np.asarray(var, dtype=np.float64), X.shape[1:])[None]
            total = GaussianStats(np.array([float(n_past)]), mean, m2).merge(new)
        n = np.asarray(total.class_count, dtype=np.float64)[0]
        return np.asarray(total.mean, dtype=np.float64)[0], np.asarray(total.m2, dtype=np.float64)[0] / n


# Model files name these classes "sklearn.<class>" (the main namespace's classes hold the
# bare names); bayesnb.load finds them once this module is imported. GaussianNB's
# scikit-learn variance floor is fitted state that the statistics do not hold.
for _cls in (MultinomialNB, BernoulliNB, CategoricalNB):
    register_estimator(_cls, name=f"sklearn.{_cls.__name__}")
register_estimator(GaussianNB, name="sklearn.GaussianNB", state=("_epsilon_", "_leak_", "_dtype_"))
del _cls
