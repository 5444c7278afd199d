"""Estimator for count features modelled as independent Poisson variables."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted, validate_data

from bayesnb.core._validation import check_non_negative, first_non_integer, sparse_counts_input
from bayesnb.core.empirical_bayes import is_evidence
from bayesnb.core.families import poisson
from bayesnb.core.kernels import summed
from bayesnb.estimators._base import _CALIBRATE_PARAM
from bayesnb.estimators._gamma import GammaRateNB

__all__ = ["PoissonNB"]


def _check_counts(X, who, integral=False):
    """Raise ``ValueError`` unless every entry of ``X`` is a non-negative integer
    (``integral``: its dtype holds nothing else, only the sign is checked)."""
    X = check_non_negative(X, who)
    if integral:
        return X
    found = first_non_integer(X.data if sp.issparse(X) else X)
    if found is not None:
        raise ValueError(
            f"{who} needs integer counts (the Poisson distribution is a probability mass "
            f"function on 0, 1, 2, ...); found non-integer value {found!r}"
        )
    return X


class PoissonNB(GammaRateNB):
    __doc__ = (
        r"""Naive Bayes for counts: independent Poisson features with Gamma priors on the rates.

    :math:`x_j \mid y=c \sim \mathrm{Poisson}(\lambda_{cj})`,
    :math:`\lambda_{cj} \sim \mathrm{Gamma}(\alpha, \beta)` (shape :math:`\alpha`, rate
    :math:`\beta`), posterior :math:`\mathrm{Gamma}(\alpha + T_{cj}, \beta + N_c)`.
    Unlike :class:`~bayesnb.MultinomialNB` the total count of a row is informative: each
    feature has its own rate per class. ``estimate="predictive"`` scores a row with the
    exact negative-binomial posterior predictive (see :mod:`bayesnb.core.families.poisson`);
    every likelihood, predictive and the evidence include the :math:`-\sum_j\log x_j!`
    term, so they are probabilities of the observed count vectors.

    Parameters
    ----------
    alpha : float, array-like broadcastable to (n_classes, n_features) or "evidence", default=1.0
        Gamma shape (concentration) of the prior on each rate, > 0: pseudo-counts.
        ``"evidence"``: one shape for every cell, learned by maximising the log evidence
        (``beta`` held at its value, or learned too if also ``"evidence"``).
    beta : float, array-like broadcastable to (n_classes, n_features) or "evidence", default=0.01
        Gamma rate of the prior on each rate, > 0: pseudo-rows. The default prior
        :math:`\mathrm{Gamma}(1, 0.01)` adds one count and a hundredth of a row to every
        (class, feature) cell: the posterior mean :math:`(T + 1)/(N + 0.01)` is add-one
        smoothing of the count with a negligible row pseudo-count, so a class seen in
        at least one row has its rate pulled toward zero by at most 1% whatever the scale
        of the counts, and the MAP :math:`T / (N + 0.01)` exists everywhere. The prior
        does not depend on the data, so ``log_evidence`` is a true marginal likelihood and
        ``partial_fit`` never moves the prior. For model comparison by evidence, set
        ``alpha``/``beta`` to a prior you mean. ``"evidence"``: one rate for every cell,
        learned by maximising the log evidence (``alpha`` held, unless also
        ``"evidence"``).
    prior : bayesnb.core.priors.Gamma, "evidence" or None, default=None
        The prior as a ``Gamma(concentration, rate)`` pytree (arrays broadcastable to
        (n_classes, n_features)); when given it replaces ``alpha``/``beta``.
        ``"evidence"``: one Gamma shape and one rate shared by every (class, feature)
        cell, both learned by maximising the log evidence of the training data (type-II
        maximum likelihood, :func:`bayesnb.core.empirical_bayes.maximize_evidence`; numeric
        ``alpha``/``beta`` are the starting point). The learned prior is ``prior_``, the
        iterates ``evidence_trace_["prior"]``. A learned prior is chosen from the data, so
        ``log_evidence()`` under it is an empirical-Bayes quantity.
    class_alpha : float or array-like of shape (n_classes,), default=1.0
        Concentration of the Dirichlet prior on the class proportions.
    class_prior : array-like of shape (n_classes,), default=None
        Fixed class proportions; overrides the Dirichlet posterior on them.
    fit_prior : bool, default=True
        If False (and ``class_prior`` is None) the class proportions are fixed uniform.
    estimate : {"predictive", "mean", "map", "mle"}, default="predictive"
        What ``predict*`` use: the exact negative-binomial posterior predictive, or the
        Poisson plug-in of the posterior mean :math:`a/b`, the posterior mode
        :math:`(a-1)/b` (``ValueError`` when a posterior shape :math:`a < 1`) or the
        maximum-likelihood rate :math:`T/N` (the prior mean for a class without rows).
        May be changed after ``fit`` with ``set_params``.
    missing : {"error", "ignore"}, default="error"
        What a NaN in ``X`` means. "error": a ``ValueError``. "ignore": an unobserved
        count, left out of its row's statistics and likelihood (exact: each feature is
        its own Gamma-Poisson factor, updated with the rows that observe it:
        :math:`\mathrm{Gamma}(\alpha + T_{cj}, \beta + N_{cj})`). See
        :mod:`bayesnb.core.missing`.
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
    feature_count_ : ndarray of shape (n_classes, n_features)
        Weighted count totals :math:`T_{cj}`.
    rate_ : ndarray of shape (n_classes, n_features)
        :math:`\lambda` of the current estimate (the posterior mean for "predictive").
    stats_ : PoissonStats
    prior_ : Gamma
        The feature prior, arrays of shape (n_classes, n_features).
    posterior_ : Gamma
        The feature posterior.
    class_posterior_ : Dirichlet or None
    class_prior_ : ndarray or None
    class_log_prior_ : ndarray of shape (n_classes,)
    evidence_trace_ : dict of str to EvidenceTrace
        Iterates of every hyperparameter learned from the evidence (keys ``"prior"``,
        ``"class_alpha"``); empty when none is.
    n_features_in_ : int
    feature_names_in_ : ndarray of str, when fitted on a DataFrame with string columns

    Notes
    -----
    Input must be non-negative integer counts (dense or CSR; CSR is never densified).
    Fractional values are refused rather than rounded: the Poisson distribution has
    mass only on the integers.

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb.estimators.poisson import PoissonNB
    >>> X = np.array([[2, 0, 1], [3, 1, 0], [0, 4, 1], [0, 3, 2]])
    >>> clf = PoissonNB().fit(X, [0, 0, 1, 1])
    >>> clf.predict([[1, 0, 0], [0, 2, 1]]).tolist()
    [0, 1]
    """
    )

    _family = poisson.family

    def __init__(
        self,
        *,
        alpha=1.0,
        beta=0.01,
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
        # Integer CSR counts are read as they are (no float64 copy). Entries stored twice
        # stay: every use of the counts that is not linear in them sums them itself
        # (kernels.summed, in int64: the log factorials, the negative-binomial
        # predictive, the statistics); float values are summed first, so that halves of
        # a whole count pass the integer check as their sum.
        X, dtype, integral = sparse_counts_input(X, linear=True)
        X = validate_data(self, X, accept_sparse="csr", dtype=dtype, reset=reset, ensure_all_finite=not integral)
        if sp.issparse(X) and not integral:
            X = summed(X)  # a copy where duplicates are summed: never the caller's matrix
        return _check_counts(X, type(self).__name__, integral)

    def _start_prior(self, shape):
        return poisson.make_prior(
            1.0 if is_evidence(self.alpha) else self.alpha,
            0.01 if is_evidence(self.beta) else self.beta,
            shape,
            names=("alpha", "beta"),
        )

    @property
    def feature_count_(self):
        """ndarray of shape (n_classes, n_features): weighted count totals :math:`T_{cj}`."""
        check_is_fitted(self, "stats_")
        return np.asarray(self.stats_.feature_count)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
