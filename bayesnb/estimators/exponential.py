"""Estimator for positive real features (durations) modelled as independent exponentials."""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from bayesnb.core.empirical_bayes import is_evidence
from bayesnb.core.families import exponential
from bayesnb.estimators._base import _CALIBRATE_PARAM
from bayesnb.estimators._gamma import GammaRateNB

__all__ = ["ExponentialNB"]


def _check_durations(X, who):
    """Raise ``ValueError`` unless every entry of ``X`` is a finite value >= 0."""
    if X.size and X.min() < 0:
        raise ValueError(
            f"Negative values in data passed to {who}: the exponential distribution has "
            f"density only on x >= 0 (durations, waiting times); min {X.min():g}"
        )
    return X


class ExponentialNB(GammaRateNB):
    __doc__ = (
        r"""Naive Bayes for durations: independent exponential features with Gamma priors on the rates.

    :math:`x_j \mid y=c \sim \mathrm{Exponential}(\lambda_{cj})`,
    :math:`\lambda_{cj} \sim \mathrm{Gamma}(\alpha, \beta)` (shape :math:`\alpha`, rate
    :math:`\beta`), posterior :math:`\mathrm{Gamma}(\alpha + N_c, \beta + T_{cj})`.
    ``estimate="predictive"`` scores a row with the exact Lomax (Pareto II) posterior
    predictive (see :mod:`bayesnb.core.families.exponential`).

    Parameters
    ----------
    alpha : float or array-like broadcastable to (n_classes, n_features), default=1.0
        Gamma shape (concentration) of the prior on each rate, > 0: pseudo-observations.
    beta : float or array-like broadcastable to (n_classes, n_features), default=None
        Gamma rate of the prior on each rate, > 0: the total duration of the
        pseudo-observations. ``None`` scales it to the data, :math:`\beta_j = \alpha\,
        \bar x_j` with :math:`\bar x_j` the pooled mean of feature :math:`j` over every
        class (:math:`\alpha` pseudo-observations of the pooled mean duration): the
        prior mean rate is :math:`1/\bar x_j`, and predictions do not depend on the
        unit of time. That prior depends on the training data (``log_evidence`` is
        then an empirical-Bayes quantity); for model comparison by evidence give
        ``beta`` (in the unit of ``X``) or ``prior``.
    prior : bayesnb.core.priors.Gamma, default=None
        The prior as a ``Gamma(concentration, rate)`` pytree (arrays broadcastable to
        (n_classes, n_features)); when given it replaces ``alpha``/``beta``.
        ``"evidence"`` learns a shared shape and rate by maximising the closed-form
        evidence (:func:`bayesnb.core.empirical_bayes.maximize_evidence`); ``alpha="evidence"``
        or ``beta="evidence"`` learns that one alone (the other held at its value, or at
        the data-scaled default for ``beta=None``). The trace is in
        ``evidence_trace_["prior"]``.
    class_alpha : float or array-like of shape (n_classes,), default=1.0
        Concentration of the Dirichlet prior on the class proportions.
    class_prior : array-like of shape (n_classes,), default=None
        Fixed class proportions; overrides the Dirichlet posterior on them.
    fit_prior : bool, default=True
        If False (and ``class_prior`` is None) the class proportions are fixed uniform.
    estimate : {"predictive", "mean", "map", "mle"}, default="predictive"
        What ``predict*`` use: the exact Lomax posterior predictive, or the exponential
        plug-in of the posterior mean :math:`a/b`, the posterior mode :math:`(a-1)/b`
        (``ValueError`` when :math:`a < 1`) or the maximum-likelihood rate :math:`N/T`
        (``ValueError`` where every training value of a cell is 0; the prior mean for a
        class without rows).
    missing : {"error", "ignore"}, default="error"
        What a NaN in ``X`` means. "error": a ``ValueError``. "ignore": an unobserved
        value, left out of its row's statistics and likelihood (exact: each feature is
        its own Gamma-exponential factor). See :mod:`bayesnb.core.missing`.
    temperature : float >= 1 or "loo", default=1.0
        Likelihood tempering: class probabilities
        :math:`\propto p(y \mid D)\, p(x \mid y, D)^{1/T}` (1: the model as written).
        ``"loo"``: :math:`T` minimising the exact leave-one-out log loss of the training
        rows (:func:`bayesnb.analysis.loo.choose_temperature`), stored in ``temperature_``. A
        calibration device for a misspecified model, not its posterior (see the
        tempering guide); draws, intervals and feature log-odds are tempered alike.
        A large :math:`T` leaves the class proportions at full weight and can hand the
        decision to them (accuracy falls where the classes are unbalanced): prefer
        ``calibrate="loo"``, which fits the class offsets with the scale.
"""
        + _CALIBRATE_PARAM
        + r"""
    hyper_chains, hyper_warmup, hyper_draws, hyper_predict_draws : int, default=2, 500, 500, 200
        Used when a hyperparameter (a field of ``prior``, ``class_alpha``, ``alpha``, ``beta``) is given
        as a numpyro distribution: it is then integrated out at ``fit`` by NUTS on the
        collapsed model (chains, warm-up iterations and draws per chain), and the
        predictive averages over ``hyper_predict_draws`` evenly spaced draws (None: all).
        See the theory page on hyperpriors and :class:`~bayesnb.MultinomialNB`.
    random_state : int, RandomState, Generator, jax key or None, default=None
        Seeds NUTS (the closed forms are deterministic).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    class_count_ : ndarray of shape (n_classes,)
        Weighted number of training rows per class, :math:`N_c`.
    feature_total_ : ndarray of shape (n_classes, n_features)
        Weighted totals :math:`T_{cj}`.
    rate_ : ndarray of shape (n_classes, n_features)
        :math:`\lambda` of the current estimate (the posterior mean for "predictive").
    stats_ : CountStats
        ``feature_count`` holds :math:`T_{cj}`.
    prior_ : Gamma
    posterior_ : Gamma
    class_posterior_ : Dirichlet or None
    class_prior_ : ndarray or None
    class_log_prior_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of str, when fitted on a DataFrame with string columns

    Notes
    -----
    Input must be finite and non-negative (dense). A value of exactly 0 is allowed (the
    exponential density there is :math:`\lambda`).

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb.estimators.exponential import ExponentialNB
    >>> X = np.array([[0.5, 8.0], [0.7, 6.0], [5.0, 0.4], [4.0, 0.9]])
    >>> clf = ExponentialNB().fit(X, [0, 0, 1, 1])
    >>> clf.predict([[0.6, 7.0], [6.0, 0.5]]).tolist()
    [0, 1]
    """
    )

    _family = exponential.family

    def __init__(
        self,
        *,
        alpha=1.0,
        beta=None,
        prior=None,
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
            beta=beta,
            prior=prior,
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

    def _check_X(self, X, reset):
        X = validate_data(self, X, dtype=np.float64, reset=reset)
        return _check_durations(X, type(self).__name__)

    def _start_prior(self, shape):
        alpha = 1.0 if is_evidence(self.alpha) else self.alpha
        if self.beta is None or is_evidence(self.beta):
            # Scaled to the data (see exponential.default_prior): invariant to the unit of time.
            alpha = exponential.make_prior(alpha, 1.0, shape, names=("alpha", "beta")).concentration
            return exponential.default_prior(self.stats_, concentration=alpha)
        return exponential.make_prior(alpha, self.beta, shape, names=("alpha", "beta"))

    def _loo_prior_reasons(self):
        reasons = super()._loo_prior_reasons()
        if self.prior is None and self.beta is None:
            reasons = (
                "beta=None: the prior's rate is scaled to the pooled mean of all rows and held at prior_ "
                "(pass beta for an exact leave-one-out)",
            ) + reasons
        return reasons

    @property
    def feature_total_(self):
        """ndarray of shape (n_classes, n_features): weighted totals :math:`T_{cj}`."""
        check_is_fitted(self, "stats_")
        return np.asarray(self.stats_.feature_count)

