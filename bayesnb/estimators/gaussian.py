"""Gaussian naive Bayes with Normal-Inverse-Gamma priors (a thin front over the core)."""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted, validate_data

from bayesnb.analysis import loo as _loo
from bayesnb.core import missing as _missing
from bayesnb.core._validation import SpreadError, check_estimate
from bayesnb.core.empirical_bayes import check_scope, is_evidence, learn_prior
from bayesnb.core.families import gaussian
from bayesnb.core.stats import is_masked
from bayesnb.estimators._base import _CALIBRATE_PARAM, BaseNB, SklearnCounterpart

__all__ = ["GaussianNB", "evidence_prior"]


def evidence_prior(stats, scope="shared"):
    r"""The Normal-Inverse-Gamma prior that ``prior="evidence"`` learns (diagonal Gaussian).

    Starts from :func:`bayesnb.core.families.gaussian.default_prior` (:math:`m_0` the
    pooled mean, :math:`a_0 = 1`, :math:`\kappa_0 = 0.01`, :math:`b_0` 2% of the pooled
    variance of each feature) and maximises the family's log evidence
    (:func:`bayesnb.core.empirical_bayes.learn_prior`) over :math:`\kappa_0` and a
    multiplier :math:`s` of the default :math:`b_0`: one pair for every cell
    (``"shared"``: :math:`b_0` stays proportional to each feature's variance, so the
    model keeps the default prior's invariance to rescaling a feature), one per class,
    or one per feature. :math:`m_0` and :math:`a_0` stay those of the default prior;
    :func:`bayesnb.core.empirical_bayes.maximize_evidence` learns them too.

    Parameters
    ----------
    stats : GaussianStats
    scope : {"shared", "class", "feature"}

    Returns
    -------
    prior : NormalInverseGamma
        Arrays of shape (n_classes, n_features).
    trace : EvidenceTrace
        Names ``("kappa", "rate_scale")``: :math:`\kappa_0` and :math:`s`.

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import GaussianNB
    >>> from bayesnb.estimators.gaussian import evidence_prior
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(0, 1, (20, 2)), rng.normal(2, 1, (20, 2))])
    >>> clf = GaussianNB(prior="evidence").fit(X, np.repeat([0, 1], 20))
    >>> prior, trace = evidence_prior(clf.stats_)
    >>> trace.names, bool(np.allclose(prior.kappa, clf.prior_.kappa))
    (('kappa', 'rate_scale'), True)
    """
    family = gaussian.family
    return learn_prior(
        family, family.default_prior(stats), stats, ["kappa", "rate"], scope,
        transforms={"rate": "log_multiplier"}, names=("kappa", "rate_scale"), what="prior",
    )


def spread_refusal(err, names, positions=None, prefix=""):
    """The spread refusal ``err`` (:class:`~bayesnb.core._validation.SpreadError`) in the user's terms.

    The core names a feature by its position in the statistics it judged; the user
    knows the columns of the ``X`` given to ``fit``. The feature is named by its
    DataFrame column (``names``, the model's ``feature_names_in_``, None without) and its
    position in ``X``; ``positions`` maps the statistics' features to the columns of
    ``X`` (a :class:`~bayesnb.MixedNB` block's column indices; by default the same),
    ``prefix`` opens the message (the block).

    Parameters
    ----------
    err : SpreadError
    names : array-like of str or None
    positions : array-like of int, optional
    prefix : str, default=""

    Returns
    -------
    SpreadError
        The same refusal (same attributes), reworded.
    """
    j = int(err.index if positions is None else positions[err.index])
    if names is None:
        return err.named(f"feature {j} (0-based)", f"X[:, {j}]", prefix)
    name = str(names[j])
    return err.named(f"feature {name!r} (column {j} of X)", f"X[{name!r}]", prefix)


class _SpreadInUserTerms:
    """Mixin of the Gaussian estimators: the spread refusal names the user's column.

    Every fitted state is built by ``_refresh`` (fit, partial_fit on the merged
    statistics, fit_shard, update_prior, loading a file), where the core's
    :func:`bayesnb.core.families.gaussian.check_spread` judges the spread; other
    statistics go through ``posterior_from_stats`` (simulation-based calibration).
    """

    def _refresh(self):
        try:
            super()._refresh()
        except SpreadError as err:
            raise spread_refusal(err, getattr(self, "feature_names_in_", None)) from None

    def posterior_from_stats(self, stats):
        """The posterior of the feature parameters given other statistics, under this prior.

        As :meth:`bayesnb.estimators._base.BaseNB.posterior_from_stats`; the spread check
        on those statistics (simulation-based calibration's, outside ``_refresh``) names
        the feature by its column too.

        Parameters
        ----------
        stats : statistics pytree of the type of ``stats_``

        Returns
        -------
        posterior pytree of the type of ``posterior_``
        """
        try:
            return super().posterior_from_stats(stats)
        except SpreadError as err:
            raise spread_refusal(err, getattr(self, "feature_names_in_", None)) from None


class GaussianNB(_SpreadInUserTerms, BaseNB):
    __doc__ = (
        r"""Naive Bayes for real features, with a Normal-Inverse-Gamma prior per (class, feature).

    :math:`x_j \mid y=c \sim \mathcal N(\mu_{cj}, \sigma^2_{cj})` independently over
    features, :math:`\sigma^2_{cj} \sim \mathrm{InvGamma}(a_0, b_0)`,
    :math:`\mu_{cj} \mid \sigma^2_{cj} \sim \mathcal N(m_0, \sigma^2_{cj}/\kappa_0)`. The
    posterior is NIG with

    .. math::

        \kappa_n = \kappa_0 + N_c, \quad m_n = \frac{\kappa_0 m_0 + N_c \bar x_{cj}}{\kappa_n},
        \quad a_n = a_0 + \frac{N_c}{2}, \quad
        b_n = b_0 + \frac{M_{2,cj}}{2} + \frac{\kappa_0 N_c (\bar x_{cj} - m_0)^2}{2\kappa_n},

    and the exact posterior predictive of a feature is Student-t with :math:`2a_n`
    degrees of freedom, location :math:`m_n` and squared scale
    :math:`b_n(\kappa_n + 1)/(a_n\kappa_n)` (see :mod:`bayesnb.core.families.gaussian`).

    ``estimate="mle"`` with ``var_smoothing=1e-9`` and ``class_prior`` set to the
    empirical class frequencies reproduces ``sklearn.naive_bayes.GaussianNB`` after
    ``fit`` (with or without ``sample_weight``). Two documented differences:
    scikit-learn's variance floor :math:`\epsilon` is ``var_smoothing`` times the largest
    *unweighted* variance of the ``X`` of the *latest* ``fit``/``partial_fit`` call; here
    it is the largest weighted variance of all rows seen (so that ``partial_fit`` equals
    ``fit`` and a weight of 2 equals a duplicated row). And a class without training rows
    has no maximum-likelihood estimate: ``"mle"`` raises ``ValueError`` for it (the
    Bayesian estimates use the prior).

    Parameters
    ----------
    prior : NormalInverseGamma, None or "evidence", default=None
        :class:`bayesnb.core.priors.NormalInverseGamma` with ``loc``, ``kappa``,
        ``concentration``, ``rate`` each a scalar or an array broadcastable to
        (n_classes, n_features); ``kappa``, ``concentration``, ``rate`` finite and > 0.
        ``None``: the default prior scaled to the data,
        :math:`m_0 = \bar x_j`, :math:`\kappa_0 = 0.01`, :math:`a_0 = 1`,
        :math:`b_0 = 0.02\, v_j` (:math:`\bar x_j, v_j` the pooled weighted mean and
        variance of feature :math:`j`; prior mode of :math:`\sigma^2` = 1% of
        :math:`v_j`), see :func:`bayesnb.core.families.gaussian.default_prior`. It is
        recomputed from all rows seen at every ``fit``/``partial_fit`` (empirical
        Bayes), so it rescales with each feature and ``log_evidence`` under it is not
        the evidence of a prior fixed in advance. ``"evidence"``: the default prior with
        :math:`\kappa_0` and :math:`b_0` (through a multiplier of the default
        :math:`b_0`) chosen to maximise the log evidence of the training data, for the
        cells that ``prior_scope`` ties (:func:`bayesnb.estimators.gaussian.evidence_prior`);
        the learned prior is ``prior_``.
    prior_scope : {"shared", "class", "feature"}, default="shared"
        With ``prior="evidence"``: one :math:`(\kappa_0, s)` for every cell (``b_0``
        stays proportional to each feature's variance, so rescaling a feature changes
        nothing), one per class, or one per feature. Must stay ``"shared"`` otherwise.
    var_smoothing : float, default=1e-9
        ``estimate="mle"`` only: :math:`\epsilon` = ``var_smoothing`` times the largest
        pooled feature variance is added to every variance (scikit-learn's parameter).
    class_alpha : float, array-like of shape (n_classes,) or "evidence", default=1.0
        Concentration :math:`\beta` of the Dirichlet prior on the class proportions;
        ``"evidence"`` learns a symmetric one (see :class:`~bayesnb.MultinomialNB`).
    class_prior : array-like of shape (n_classes,), default=None
        Fixed class proportions; overrides the Dirichlet posterior on them.
    fit_prior : bool, default=True
        If False (and ``class_prior`` is None) the class proportions are fixed uniform.
    estimate : {"predictive", "mean", "map", "mle"}, default="predictive"
        What ``predict*`` use: the exact Student-t posterior predictive; the plug-in of
        the posterior mean :math:`(m_n, b_n/(a_n - 1))` (needs :math:`a_n > 1`); of the
        joint posterior mode :math:`(m_n, b_n/(a_n + 3/2))` in :math:`(\mu, \sigma^2)`;
        or of the maximum-likelihood estimate :math:`(\bar x, M_2/N + \epsilon)`. The
        class proportions follow the same estimate. May be changed after ``fit``.
    missing : {"error", "ignore"}, default="error"
        What a NaN in ``X`` means. "error": a ``ValueError``. "ignore": an unobserved
        feature, left out of its row's statistics and likelihood (exact: each feature is
        its own Normal-Inverse-Gamma factor, updated with the rows that observe it; the
        default prior is scaled to each feature's observed values). See
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
    theta_ : ndarray of shape (n_classes, n_features)
        Means of the current estimate (:math:`m_n` for "predictive").
    var_ : ndarray of shape (n_classes, n_features)
        Variances of the current estimate; for "predictive" the posterior mean
        :math:`b_n/(a_n - 1)`, ``inf`` where :math:`a_n \le 1`.
    epsilon_ : float
        The "mle" variance floor ``var_smoothing * max_j v_j``.
    class_alpha_ : float, ndarray or None
        The class concentration in use (None when the class proportions are fixed).
    evidence_trace_ : dict of str to EvidenceTrace
        Newton iterates of every hyperparameter learned from the evidence (keys
        ``"prior"``, ``"class_alpha"``); empty when none is.
    stats_ : GaussianStats
    prior_ : NormalInverseGamma
        The prior in use, broadcast to (n_classes, n_features).
    posterior_ : NormalInverseGamma
    class_posterior_ : Dirichlet or None
    class_prior_ : ndarray or None
    class_log_prior_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of str, when fitted on a DataFrame with string columns

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb.estimators.gaussian import GaussianNB
    >>> X = np.array([[-1.0, -1.0], [-2.0, -1.0], [-3.0, -2.0], [1.0, 1.0], [2.0, 1.0], [3.0, 2.0]])
    >>> clf = GaussianNB().fit(X, [1, 1, 1, 2, 2, 2])
    >>> clf.predict([[-0.8, -1.0]]).tolist()
    [1]
    """
    )

    _family = gaussian.family

    def __init__(
        self,
        *,
        prior=None,
        var_smoothing=1e-9,
        prior_scope="shared",
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
        self.prior = prior
        self.var_smoothing = var_smoothing
        self.prior_scope = prior_scope

    def sklearn_counterpart(self):
        """scikit-learn's ``GaussianNB`` with this estimator's prior settings, unfitted.

        The hook is documented on the base class (``BaseNB.sklearn_counterpart``).

        Returns
        -------
        SklearnCounterpart
        """
        from sklearn import naive_bayes

        return SklearnCounterpart(naive_bayes.GaussianNB(), categorical=False)

    # ------------------------------------------------------------------ hooks
    def _check_X(self, X, reset):
        if sp.issparse(X):
            raise TypeError(
                f"{type(self).__name__} needs dense input; got a sparse matrix. Densify it "
                "with X.toarray() (Gaussian features are rarely sparse)."
            )
        return validate_data(self, X, dtype=np.float64, order="C", reset=reset)

    def _var_smoothing(self):
        vs = self.var_smoothing
        if isinstance(vs, bool) or not isinstance(vs, numbers.Real) or not np.isfinite(vs) or vs < 0:
            raise ValueError(f"var_smoothing must be a finite number >= 0, got {vs!r}")
        return float(vs)

    def _make_prior(self):
        self._var_smoothing()
        scope = check_scope(self.prior_scope, "prior_scope")
        if is_evidence(self.prior):
            prior, self.evidence_trace_["prior"] = evidence_prior(self.stats_, scope)
            return prior
        if scope != "shared":
            raise ValueError(
                f"prior_scope={scope!r} says which hyperparameters prior='evidence' learns; "
                "with a given prior it must stay 'shared'"
            )
        if self.prior is None:
            return gaussian.default_prior(self.stats_)
        return gaussian.check_prior(self.prior, self.classes_.size, self.n_features_in_)

    def _point_options(self, kind):
        return {"var_smoothing": self._var_smoothing()}

    def _loo_prior_reasons(self):
        reasons = super()._loo_prior_reasons()
        if self.prior is None:
            reasons = (
                "prior=None: the default prior is scaled to the pooled means and variances of all rows "
                "and held at prior_ (pass a prior for an exact leave-one-out)",
            ) + reasons
        return reasons

    def _loo_feature(self, X, y_index, weight, kind):
        r"""Leave-one-out feature scores, the "mle" variance floor rescaled without the row.

        The "mle" floor :math:`\epsilon = \texttt{var\_smoothing} \max_j v_j` is scaled
        to the pooled variances of all the training rows, so a refit without row
        :math:`i` adds :math:`\epsilon^{(-i)}` (from the pooled variances without the
        row) to every class's variance, not only to the row's own class. For
        ``estimate="mle"`` with ``var_smoothing > 0`` every row is scored so: the pooled
        statistics and the row's class downdated, the floor recomputed, every class's
        plug-in Gaussian evaluated (blocks of rows; rows with unobserved entries one at
        a time, by a downdate of all the statistics). The other estimates do not read
        the floor (the base downdate).
        """
        vs = self._var_smoothing()
        if kind != "mle" or vs == 0.0:
            return super()._loo_feature(X, y_index, weight, kind)
        y_index = np.asarray(y_index, dtype=np.intp)
        n = y_index.size
        w = np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64)
        if isinstance(X, _missing.MaskedX) or is_masked(self.stats_):
            Xd, mask = (X.X, X.mask) if isinstance(X, _missing.MaskedX) else (X, None)
            options = self._point_options(kind)
            return np.array([
                _loo.row_feature_log_loo(self._family, self.prior_, self.stats_, Xd, y_index, w, i, kind=kind,
                                         mask=mask, point_options=options)
                for i in range(n)
            ]).reshape(n, self.classes_.size)
        return _mle_loo_scores(self.stats_, np.asarray(X, dtype=np.float64), y_index, w, vs)

    def _point(self, kind):
        kind = "mean" if kind == "predictive" else kind
        vs = self._var_smoothing()
        # var_smoothing only enters "mle"; it is part of the key because set_params may
        # change it after fit.
        key = (kind, vs) if kind == "mle" else kind
        if key not in self._cache:
            self._cache[key] = self._family.point(self.prior_, self.stats_, kind, var_smoothing=vs)
        return self._cache[key]

    # ------------------------------------------------------------- attributes
    def _current(self):
        check_is_fitted(self, "stats_")
        kind = check_estimate(self.estimate)
        if kind == "predictive":
            return gaussian.moments(self.posterior_)
        return self._point(kind)

    @property
    def theta_(self):
        """ndarray of shape (n_classes, n_features): means of the current ``estimate``."""
        return np.asarray(self._current().loc)

    @property
    def var_(self):
        """ndarray of shape (n_classes, n_features): variances of the current ``estimate``."""
        return np.asarray(self._current().var)

    @property
    def epsilon_(self):
        """float: the "mle" variance floor, ``var_smoothing`` times the largest pooled variance."""
        check_is_fitted(self, "stats_")
        return gaussian.mle_epsilon(self.stats_, self._var_smoothing())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        return tags


def _mle_loo_scores(stats, X, y_index, w, var_smoothing, block=64):
    r"""GaussianNB "mle" feature scores of every training row under every class without the row, (n, n_classes).

    The refit's :func:`bayesnb.core.families.gaussian.point` ("mle") in closed form:
    the row's class downdated (the family's statistics of the row merged at weight
    :math:`-w_i`), every class's variance floored by :math:`\epsilon^{(-i)}`, the
    pooled variances downdated by the row (:math:`N' = N - w`,
    :math:`M_2' = M_2 - w\,N (x - \bar x)^2 / N'`), scored by the family's
    log-likelihood with one pseudo-class per (row, class).
    """
    family = gaussian.family
    n_classes = np.asarray(stats.class_count).shape[0]
    total, pooled_mean, pooled_var = gaussian.pooled(stats)
    counts = np.asarray(stats.class_count, dtype=np.float64)
    means = np.asarray(stats.mean, dtype=np.float64)
    m2 = np.asarray(stats.m2, dtype=np.float64)
    out = np.empty((y_index.size, n_classes))
    for start in range(0, y_index.size, block):
        stop = min(y_index.size, start + block)
        rows, m, c, wr = X[start:stop], stop - start, y_index[start:stop], w[start:stop]
        left = total - wr
        dev = rows - pooled_mean
        with np.errstate(divide="ignore", invalid="ignore"):
            var = (total * pooled_var - wr[:, None] * total * dev * dev / left[:, None]) / left[:, None]
        epsilon = var_smoothing * np.max(np.where(left[:, None] > 0, var, 0.0), axis=1, initial=0.0)
        down = family.stats(rows, np.arange(m), m, -wr)
        mine = down.merge(type(stats)(*(np.asarray(f)[c] if np.ndim(f) and np.shape(f)[0] == n_classes else f
                                        for f in stats)))
        n_c = np.broadcast_to(counts, (m, n_classes)).copy()
        n_c[np.arange(m), c] = np.asarray(mine.class_count, dtype=np.float64)
        loc = np.broadcast_to(means, (m,) + means.shape).copy()
        loc[np.arange(m), c] = np.asarray(mine.mean, dtype=np.float64)
        sq = np.broadcast_to(m2, (m,) + m2.shape).copy()
        sq[np.arange(m), c] = np.asarray(mine.m2, dtype=np.float64)
        if np.any(n_c <= 0):
            r, k = (int(v) for v in np.argwhere(n_c <= 0)[0])
            raise ValueError(
                f"estimate='mle' is undefined without training row {start + r}: class index {k} has no "
                "other rows, so its mean and variance have no maximum-likelihood estimate. Use "
                "estimate='map', 'mean' or 'predictive'."
            )
        v = sq / n_c[:, :, None] + epsilon[:, None, None]
        params = gaussian.GaussianParams(loc.reshape(m * n_classes, -1), v.reshape(m * n_classes, -1))
        scores = np.asarray(family.log_likelihood(params, rows, None), dtype=np.float64).reshape(m, m, n_classes)
        out[start:stop] = scores[np.arange(m), np.arange(m)]
    return out
