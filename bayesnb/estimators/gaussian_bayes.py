"""Gaussian Bayes classifier: multivariate Gaussian classes with a Normal-Inverse-Wishart prior."""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from bayesnb.core import missing as _missing
from bayesnb.core._validation import check_estimate
from bayesnb.core.empirical_bayes import is_evidence, maximize_evidence
from bayesnb.core.families import gaussian, gaussian_mv
from bayesnb.core.families._mask import accepts_mask
from bayesnb.core.priors import NormalInverseGamma
from bayesnb.core.stats import as_masked
from bayesnb.estimators._base import _CALIBRATE_PARAM, BaseNB
from bayesnb.estimators.gaussian import _SpreadInUserTerms, evidence_prior

__all__ = ["GaussianBayesClassifier"]

#: Covariance structures: per-class full, one shared, per-class diagonal (naive Bayes,
#: delegated to the Normal-Inverse-Gamma family of ``GaussianNB``).
COVARIANCES = ("full", "shared", "diag")


class GaussianBayesClassifier(_SpreadInUserTerms, BaseNB):
    __doc__ = (
        r"""Gaussian Bayes classifier (QDA / LDA / Gaussian NB) with conjugate priors.

    Each class is a multivariate Gaussian, :math:`x \mid y=c \sim \mathcal N(\mu_c,
    \Sigma_c)`, with its own covariance (``covariance="full"``: quadratic decision
    boundaries, the Bayesian counterpart of QDA), one covariance shared by every
    class (``covariance="shared"``: linear boundaries, LDA), or a diagonal covariance
    per class (``covariance="diag"``: Gaussian naive Bayes, quadratic boundaries with
    axis-aligned quadrics). "diag" is the model of
    :class:`bayesnb.estimators.gaussian.GaussianNB` and uses its family,
    :mod:`bayesnb.core.families.gaussian` (an independent Normal-Inverse-Gamma prior per class
    and feature, Student-t predictive per feature; its "mle" has no variance floor).
    For "full" and "shared" the prior is
    :math:`\Sigma \sim \mathcal W^{-1}(\Psi_0, \nu_0)`,
    :math:`\mu_c \mid \Sigma \sim \mathcal N(m_{0c}, \Sigma/\kappa_{0c})`; the posterior
    is again NIW (see :mod:`bayesnb.core.families.gaussian_mv` for the update) and the exact
    posterior predictive of a new row of class :math:`c` is the multivariate Student-t

    .. math::

        p(x \mid y=c, D) = t_{\nu_n - F + 1}\Big(x \,\Big|\, m_{nc},\;
            \frac{\kappa_{nc} + 1}{\kappa_{nc}(\nu_n - F + 1)}\,\Psi_n\Big).

    ``estimate`` chooses what ``predict*`` use: the exact predictive (default), or the
    plug-in Gaussian of a point estimate: ``"mle"`` (:math:`\bar x_c` and the *biased*
    covariance :math:`S_c/N_c`, or :math:`\sum_c S_c / N` shared: with the empirical
    class proportions this is scikit-learn's
    ``LinearDiscriminantAnalysis(solver="lsqr")`` for "shared"; note scikit-learn's QDA
    divides by :math:`N_c - 1` and is *not* the MLE), ``"map"`` (the joint posterior
    mode in :math:`(\mu, \Sigma)`: :math:`\Psi_n/(\nu_n + F + 2)` per class,
    :math:`\Psi_n/(\nu_n + F + 1 + C)` shared) or ``"mean"`` (:math:`E[\Sigma] =
    \Psi_n/(\nu_n - F - 1)`, needs :math:`\nu_n > F + 1`). A singular MLE covariance
    (fewer rows than features, constant or collinear features) is a ``ValueError``;
    the Bayesian estimates are regularised by the prior.

    Dense input only.

    Parameters
    ----------
    covariance : {"full", "shared", "diag"}, default="full"
        One covariance per class, one for all classes, or a diagonal one per class.
    prior : NormalInverseWishart, NormalInverseGamma, "evidence" or None, default=None
        For "diag": a :class:`bayesnb.core.priors.NormalInverseGamma` (see
        :class:`~bayesnb.estimators.gaussian.GaussianNB`), or ``None`` for that family's
        default. For "full" / "shared": the NIW prior (:class:`bayesnb.core.priors.NormalInverseWishart`): ``loc``
        broadcastable to (n_classes, n_features), ``kappa`` > 0 broadcastable to
        (n_classes,), ``df`` > n_features - 1 (a scalar for "shared"; scalar or
        (n_classes,) for "full"), ``scale`` symmetric positive definite of shape
        (n_features, n_features), or (n_classes, n_features, n_features) for "full".
        ``None``: the weakly-informative default of Fraley & Raftery (2007), scaled to
        the pooled training data: :math:`m_0` the overall mean, :math:`\kappa_0 = 0.01`,
        :math:`\nu_0 = F + 2`, :math:`\Psi_0 = \mathrm{diag}(v)/C^{2/F}` (+ a floor of
        :math:`10^{-9}\max_j v_j`) with :math:`v` the overall feature variances, so the
        prior mean of every covariance is :math:`\Psi_0`. Being computed from the data
        seen so far, this default changes with ``partial_fit`` (fit and chained
        ``partial_fit`` still agree) and makes ``log_evidence`` an empirical-Bayes
        quantity; pass an explicit prior for a proper evidence. ``"evidence"``: the
        default prior with :math:`\kappa_0` (one for every class), :math:`\nu_0` and a
        multiplier :math:`s` of :math:`\Psi_0` (so :math:`s\Psi_0`) chosen to maximise
        the log evidence of the training data
        (:func:`bayesnb.core.empirical_bayes.maximize_evidence`); :math:`m_0` stays the
        pooled mean. For "diag", the Normal-Inverse-Gamma prior of
        ``GaussianNB(prior="evidence")`` (:func:`bayesnb.estimators.gaussian.evidence_prior`).
        The learned prior is ``prior_``, the iterates ``evidence_trace_["prior"]``.
    class_alpha : float or array-like of shape (n_classes,), default=1.0
        Concentration of the Dirichlet prior on the class proportions.
    class_prior : array-like of shape (n_classes,), default=None
        Fixed class proportions; overrides the Dirichlet posterior on them.
    fit_prior : bool, default=True
        If False (and ``class_prior`` is None) the class proportions are fixed uniform.
    estimate : {"predictive", "mean", "map", "mle"}, default="predictive"
        What ``predict*`` use (see above). May be changed after ``fit`` with
        ``set_params``.
    missing : {"error", "ignore"}, default="error"
        What a NaN in ``X`` means. "error": a ``ValueError``. "ignore": an unobserved
        coordinate (see :mod:`bayesnb.core.missing`). "diag": exact, as ``GaussianNB`` (fit and
        predict). "full" / "shared": ``predict*`` marginalise the missing coordinates of
        each row (exact, for the plug-in Gaussian and the Student-t predictive alike);
        fitting on rows with NaNs is refused, since the Normal-Inverse-Wishart posterior
        given a partially observed row is not Normal-Inverse-Wishart.
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
        Used when a hyperparameter (a field of ``prior``, ``class_alpha``) is given
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
        Weighted number of training rows per class.
    evidence_trace_ : dict of str to EvidenceTrace
        Iterates of every hyperparameter learned from the evidence (keys ``"prior"``,
        ``"class_alpha"``); empty when none is.
    stats_ : ScatterStats (GaussianStats for "diag")
        Weighted counts, means and scatter matrices per class.
    prior_ : NormalInverseWishart (NormalInverseGamma for "diag")
        The prior used (validated, broadcast to canonical shapes).
    posterior_ : NormalInverseWishart (NormalInverseGamma for "diag")
        ``loc`` (C, F), ``kappa`` (C,), ``df`` and ``scale``: (C,) and (C, F, F) for
        "full", () and (F, F) for "shared".
    class_posterior_ : Dirichlet or None
    class_prior_ : ndarray or None
    class_log_prior_ : ndarray of shape (n_classes,)
    means_ : ndarray of shape (n_classes, n_features)
        Class means of the current estimate (posterior mean for "predictive").
    covariance_ : ndarray of shape (n_classes, n_features, n_features) or (n_features, n_features)
        Covariance(s) of the current estimate (:math:`E[\Sigma \mid D]` for
        "predictive"); (F, F) for "shared", diagonal matrices for "diag".
    coef_, intercept_ : ndarrays
        "shared" with a plug-in estimate only: the linear boundary (see :attr:`coef_`).
    quadratic_ : tuple (A, b, c)
        Plug-in estimates only: :math:`\log p(x, y=c) = x^\top A_c x + b_c^\top x + c_c`.
    n_features_in_ : int
    feature_names_in_ : ndarray of str, when fitted on a DataFrame with string columns

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb.estimators.gaussian_bayes import GaussianBayesClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(0, 1, (20, 2)), rng.normal(3, 1, (20, 2))])
    >>> y = np.repeat([0, 1], 20)
    >>> clf = GaussianBayesClassifier(covariance="shared").fit(X, y)
    >>> clf.predict([[0.0, 0.0], [3.0, 3.0]]).tolist()
    [0, 1]
    """
    )

    def __init__(
        self,
        *,
        covariance="full",
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
            class_alpha=class_alpha, class_prior=class_prior, fit_prior=fit_prior, estimate=estimate, missing=missing,
            temperature=temperature,
            calibrate=calibrate,
            hyper_chains=hyper_chains,
            hyper_warmup=hyper_warmup,
            hyper_draws=hyper_draws,
            hyper_predict_draws=hyper_predict_draws,
            random_state=random_state,
        )
        self.covariance = covariance
        self.prior = prior

    # ------------------------------------------------------------------ hooks
    def _requested(self):
        if not isinstance(self.covariance, str) or self.covariance not in COVARIANCES:
            raise ValueError(
                f"covariance must be one of {', '.join(map(repr, COVARIANCES))}; got {self.covariance!r}"
            )
        return self.covariance

    def _fits_missing(self):
        # Before fit the family is the requested covariance's (diag: gaussian, else gaussian_mv).
        return accepts_mask(gaussian.family if self.covariance == "diag" else gaussian_mv.family)

    def _structure(self):
        """The covariance structure the current posterior was computed for."""
        if isinstance(self.prior_, NormalInverseGamma):
            return "diag"
        return "shared" if gaussian_mv.is_shared(self.prior_) else "full"

    @classmethod
    def _params_from_prior(cls, prior):
        if isinstance(prior, NormalInverseGamma):
            return {"covariance": "diag", "prior": prior}
        return {"covariance": "shared" if gaussian_mv.is_shared(prior) else "full", "prior": prior}

    # Its own family depends on `covariance`; as the estimator of the NIW family (see
    # bayesnb.estimators.estimator_for) it is the full-covariance model.
    _serves = (("gaussian_mv", {"covariance": "full"}),)

    @property
    def _family(self):
        return gaussian.family if self._structure() == "diag" else gaussian_mv.family

    def _check_X(self, X, reset):
        return validate_data(self, X, dtype=np.float64, reset=reset)

    def _model_name(self):
        return f"{type(self).__name__}(covariance={self.covariance!r})"

    def _compute_stats(self, X, y_index, sample_weight, mask=None):
        kind = self._requested()
        family = gaussian.family if kind == "diag" else gaussian_mv.family
        stats = family.stats(X, y_index, self.classes_.size, sample_weight, mask=mask)
        if hasattr(self, "stats_") and type(as_masked(stats)) is not type(as_masked(self.stats_)):
            raise ValueError(
                f"covariance={kind!r} differs from the covariance of the earlier partial_fit calls "
                f"({self._structure()!r}), whose statistics cannot be combined with these; call fit "
                "to start again"
            )
        return stats

    def _make_prior(self):
        kind = self._requested()
        n_classes, n_features = self.classes_.size, self.n_features_in_
        if is_evidence(self.prior):
            if kind == "diag":
                prior, trace = evidence_prior(self.stats_)
            else:
                # κ₀, ν₀ > F - 1 and the size of Ψ₀ (its shape, the pooled variances,
                # stays that of the default prior); m₀ stays the pooled mean.
                start = gaussian_mv.default_prior(self.stats_, kind == "shared")
                prior, trace = maximize_evidence(
                    gaussian_mv.family,
                    start,
                    self.stats_,
                    ("kappa", "df", "scale"),
                    transforms={"df": ("above", n_features - 1.0)},
                )
            self.evidence_trace_["prior"] = trace
            return prior
        if kind == "diag":
            if self.prior is None:
                return gaussian.default_prior(self.stats_)
            return gaussian.check_prior(self.prior, n_classes, n_features)
        shared = kind == "shared"
        if self.prior is None:
            return gaussian_mv.default_prior(self.stats_, shared)
        return gaussian_mv.check_prior(self.prior, n_classes, n_features, shared)

    def _loo_prior_reasons(self):
        reasons = super()._loo_prior_reasons()
        if self.prior is None:
            reasons = (
                "prior=None: the default prior is scaled to the pooled means and variances of all rows "
                "and held at prior_ (pass a prior for an exact leave-one-out)",
            ) + reasons
        return reasons

    def _as_mv(self, params):
        """Family parameters as :class:`gaussian_mv.GaussianParams` (diagonal ones expanded)."""
        if self._structure() == "diag":
            return gaussian_mv.diagonal_params(params.loc, params.var)
        return params

    # ------------------------------------------------------- fitted summaries
    def _shared(self):
        return self._structure() == "shared"

    def _plug_in(self, what):
        check_is_fitted(self, "stats_")
        kind = check_estimate(self.estimate)
        if kind == "predictive":
            raise AttributeError(
                f"{what} is defined for the plug-in estimates ('mle', 'map', 'mean'); with "
                "estimate='predictive' the class scores are Student-t log densities, "
                "whose boundary is not exactly linear or quadratic. Use set_params(estimate=...)."
            )
        return kind, self._as_mv(self._point(kind))

    @property
    def means_(self):
        """ndarray of shape (n_classes, n_features): class means of the current estimate."""
        check_is_fitted(self, "stats_")
        return np.asarray(self._point(check_estimate(self.estimate)).loc)

    @property
    def covariance_(self):
        """Covariance of the current estimate: (n_classes, F, F) ("full", "diag") or (F, F) ("shared")."""
        check_is_fitted(self, "stats_")
        return gaussian_mv.covariance(self._as_mv(self._point(check_estimate(self.estimate))))

    def _linear_scores(self, kind, params):
        coef, intercept = gaussian_mv.linear_form(params)
        return coef, intercept + self._class_log_prob(kind)

    @property
    def coef_(self):
        r"""Weights of the linear decision function ("shared", plug-in estimates).

        With one covariance :math:`\Sigma` the class scores
        :math:`\log p(x, y=c) = w_c^\top x + w_{0c} + (\text{terms equal for all classes})`
        are affine: :math:`w_c = \Sigma^{-1}\mu_c`,
        :math:`w_{0c} = -\tfrac12\mu_c^\top\Sigma^{-1}\mu_c + \log\pi_c`.
        For two classes a single hyperplane, as scikit-learn's LDA:
        ``coef_ = w_1 - w_0`` of shape (1, n_features); otherwise one row per class,
        shape (n_classes, n_features). The exact posterior predictive
        (``estimate="predictive"``) is a Student-t, whose boundary is not exactly linear:
        then this attribute does not exist (``AttributeError``).
        """
        coef, _ = self._boundary()
        return coef

    @property
    def intercept_(self):
        """Intercepts of the linear decision function: shape (1,) for two classes, else (n_classes,)."""
        _, intercept = self._boundary()
        return intercept

    def _boundary(self):
        kind, params = self._plug_in("coef_ / intercept_")
        if not self._shared():
            raise AttributeError(
                "coef_ / intercept_ exist for covariance='shared' only: per-class (full or diagonal) "
                "covariances give quadratic boundaries; see quadratic_"
            )
        coef, intercept = self._linear_scores(kind, params)
        if coef.shape[0] == 2:
            return (coef[1] - coef[0])[None, :], np.array([intercept[1] - intercept[0]])
        return coef, intercept

    @property
    def quadratic_(self):
        r"""Quadratic form of the class scores (plug-in estimates).

        Tuple ``(A, b, c)`` of shapes (n_classes, F, F), (n_classes, F), (n_classes,) with
        :math:`\log p(x, y=c) = x^\top A_c x + b_c^\top x + c_c`:
        :math:`A_c = -\tfrac12\Sigma_c^{-1}`, :math:`b_c = \Sigma_c^{-1}\mu_c`,
        :math:`c_c = -\tfrac12\mu_c^\top\Sigma_c^{-1}\mu_c - \tfrac12\log|2\pi\Sigma_c|
        + \log\pi_c`. With ``covariance="shared"`` every :math:`A_c` is the same, so the
        boundaries :math:`x^\top(A_c - A_k)x + \dots` are linear. Not defined for
        ``estimate="predictive"`` (``AttributeError``).
        """
        kind, params = self._plug_in("quadratic_")
        A, b, c = gaussian_mv.quadratic_form(params)
        return A, b, c + self._class_log_prob(kind)

    def decision_function(self, X):
        r"""Class scores whose argmax is the prediction.

        Shared covariance with a plug-in estimate: the affine scores
        ``X @ W.T + w0`` (:attr:`coef_`), i.e. :math:`\log p(x, y=c)` without the
        class-independent :math:`-\tfrac12 x^\top\Sigma^{-1}x - \tfrac12\log|2\pi\Sigma|`.
        Otherwise (per-class covariances, or the Student-t predictive) the joint
        :math:`\log p(x, y=c \mid D)` itself (quadratic in :math:`x` for plug-in
        estimates). For two classes the difference of the two columns, class 1 minus
        class 0 (positive means ``classes_[1]``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,) for two classes, else (n_samples, n_classes)
        """
        check_is_fitted(self, "stats_")
        kind = check_estimate(self.estimate)
        checked = self._input(X, reset=False) if kind != "predictive" and self._shared() else None
        if checked is not None and not isinstance(checked, _missing.MaskedX):
            coef, intercept = self._linear_scores(kind, self._as_mv(self._point(kind)))
            scores = checked @ coef.T + intercept
        else:
            # With missing coordinates (missing="ignore") each row is scored by its marginal.
            scores = self.predict_joint_log_proba(X)
        if scores.shape[1] == 2:
            return scores[:, 1] - scores[:, 0]
        if scores.shape[1] == 1:
            return scores[:, 0]
        return scores
