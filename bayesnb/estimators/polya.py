"""The Pólya (Dirichlet-compound-multinomial) naive Bayes estimator."""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from bayesnb.core import empirical_bayes
from bayesnb.core._validation import check_estimate, check_non_negative, sparse_counts_input
from bayesnb.core.empirical_bayes import is_evidence
from bayesnb.core.families import polya
from bayesnb.estimators._base import BaseNB
from bayesnb.io.persistence import register_pytree

__all__ = ["PolyaNB"]

register_pytree(polya.Polya)
register_pytree(polya.PolyaStats)


def _padded(a, size, fill):
    out = np.full(size, fill, dtype=np.float64)
    out[: a.size] = a
    return out


_MIN_PAIRS_BITS, _MIN_LENGTHS_BITS = 10, 9


def _objective_data(mean, stats):
    """The arguments of ``polya.precision_objective``, the triples padded to powers of two.

    Padding entries have weight 0 (class 0, word 0, count 1: a finite term times 0), so
    the evidence is unchanged while the compiled evidence and its derivatives see one
    shape per bucket instead of one per data set. The smallest buckets are wide (1,024
    pairs, 512 lengths): a term costs nanoseconds, while each bucket costs a compile of
    the evidence's second derivatives (about 1.3 s), and small data sets (scikit-learn's
    estimator checks: 18 buckets from 16 to 1,024) then share one program per number of
    classes.
    """
    n_pairs = 1 << max(_MIN_PAIRS_BITS, int(np.size(stats.pair_weight) - 1).bit_length())
    n_lengths = 1 << max(_MIN_LENGTHS_BITS, int(np.size(stats.length_weight) - 1).bit_length())
    mean = np.asarray(mean, dtype=np.float64)
    pair_class, pair_feature = np.asarray(stats.pair_class, np.intp), np.asarray(stats.pair_feature, np.intp)
    # The mean enters only at the stored (class, word) pairs and through each class's
    # total, so it is handed over as those (padded like the pairs): no argument has the
    # vocabulary's shape, and one compiled objective serves every number of words.
    return (
        _padded(mean[pair_class, pair_feature], n_pairs, 1.0),
        mean.sum(axis=1),
        _padded(np.asarray(stats.pair_class), n_pairs, 0),
        _padded(np.asarray(stats.pair_feature), n_pairs, 0),
        _padded(np.asarray(stats.pair_value), n_pairs, 1),
        _padded(np.asarray(stats.pair_weight), n_pairs, 0),
        _padded(np.asarray(stats.length_class), n_lengths, 0),
        _padded(np.asarray(stats.length_value), n_lengths, 1),
        _padded(np.asarray(stats.length_weight), n_lengths, 0),
    )


def _value_grad_curvature(u, data, layout):
    import jax
    import jax.numpy as jnp

    value, grad = jax.value_and_grad(polya.precision_objective)(u, data, layout)
    # The evidence is a sum of one term per class: its Hessian in u is diagonal, and the
    # diagonal is the derivative of the gradient along a vector of ones.
    _, curvature = jax.jvp(lambda v: jax.grad(polya.precision_objective)(v, data, layout), (u,), (jnp.ones_like(u),))
    return value, grad[:, 0], curvature[:, 0]


_COMPILED = {}


def _polish(u, data, n_classes, steps=4):
    """Newton steps on each class's log precision to working precision.

    ``maximize`` stops once a step's predicted gain is below 1e-12 of the evidence, which
    leaves :math:`\\log s_c` accurate to about 1e-6; the evidence is a sum of one term per
    class, so its Hessian in ``u`` is diagonal and exact Newton steps converge
    quadratically from there (rows given as weights and as repeats then agree to
    rounding). A step that loses evidence (beyond its rounding, for the small steps
    near the maximiser) is not taken.
    """
    import jax
    import jax.numpy as jnp

    from bayesnb.core._x64 import enable_x64

    if "f" not in _COMPILED:
        _COMPILED["f"] = jax.jit(_value_grad_curvature, static_argnames=("layout",))
    f = _COMPILED["f"]
    with enable_x64():
        args = tuple(jnp.asarray(a, dtype=jnp.float64) for a in data)
        u = jnp.asarray(u, dtype=jnp.float64)
        value, g, h = f(u, args, (n_classes, 1))
        for _ in range(steps):
            # Only where the evidence is concave in that class's log precision (h < 0).
            step = jnp.where(h < 0, -g / jnp.where(h < 0, h, -1.0), 0.0)
            new = jnp.clip(u + step[:, None], np.log(empirical_bayes.LOWER), np.log(empirical_bayes.UPPER))
            new_value, new_g, new_h = f(new, args, (n_classes, 1))
            # A step whose predicted gain is below the evidence's rounding cannot be judged
            # by the evidence: it is taken unless it loses more than rounding (refused on
            # noise, it left s up to 1e-5 off its maximiser where the evidence is flat).
            noise = 1e-12 * (1.0 + abs(float(value)))
            # (The step as taken: a precision clipped at its bound moves no further.)
            small = float(jnp.sum(0.5 * g * (new[:, 0] - u[:, 0]))) <= 10.0 * noise
            tolerance = noise if small else 0.0
            if not bool(new_value >= value - tolerance):
                break
            u, value, g, h = new, new_value, new_g, new_h
        return np.asarray(u)


class PolyaNB(BaseNB):
    r"""Naive Bayes for bursty word counts: a Dirichlet-compound-multinomial per class.

    Each document of class :math:`c` has its own word distribution
    :math:`\theta_d \sim \mathrm{Dir}(\alpha_c)`, so a word seen once in a document is
    expected again (Madsen, Kauchak & Elkan 2005); with :math:`\theta_d` integrated out a
    document's class-conditional probability is the Dirichlet-multinomial
    (:mod:`bayesnb.core.families.polya`). :math:`\alpha_c = s_c\, m_c`: the mean
    :math:`m_c` is the class's word distribution smoothed by ``alpha`` pseudo-counts
    (:math:`(T_{cj} + a) / (T_c + F a)`, the posterior mean ``MultinomialNB`` uses), and
    the precision :math:`s_c` (small: bursty; :math:`s_c \to \infty`: the multinomial
    with the mean plug-in) is learned per class by maximising the evidence of the
    training documents (type-II maximum likelihood; Newton on :math:`\log s_c` with the
    exact ``jax.grad`` gradient, :func:`bayesnb.core.empirical_bayes.maximize`).

    :math:`\alpha` is the model's only global parameter: ``posterior_`` is ``prior_``,
    ``estimate="predictive"`` (the default) is the exact Dirichlet-multinomial, and
    ``"mean"`` / ``"map"`` / ``"mle"`` are multinomial plug-ins of a document's
    :math:`E\theta_d = m_c`, the mode of :math:`\mathrm{Dir}(\alpha_c)` and the pooled
    proportions (ignoring burstiness). Draws (``sample_posterior``,
    ``predict_proba_draws``, intervals) are of a *new document's* :math:`\theta_d`, not
    posterior uncertainty about :math:`\alpha` (that needs a hyperprior on :math:`\alpha`).

    Parameters
    ----------
    alpha : float > 0, default=1.0
        Pseudo-count smoothing the mean :math:`m_c` of :math:`\alpha_c`.
    precision : "evidence", float > 0 or array-like of shape (n_classes,), default="evidence"
        The precisions :math:`s_c`; ``"evidence"`` learns them (stored in ``precision_``,
        the iterates in ``evidence_trace_["precision"]``).
    class_alpha : float, array-like of shape (n_classes,) or "evidence", default=1.0
        Concentration of the Dirichlet prior on the class proportions.
    class_prior : array-like of shape (n_classes,), default=None
        Fixed class proportions.
    fit_prior : bool, default=True
        If False (and ``class_prior`` is None) the class proportions are fixed uniform.
    estimate : {"predictive", "mean", "map", "mle"}, default="predictive"
    missing : {"error", "ignore"}, default="error"
        With "ignore", ``predict*`` score rows with NaN counts conditional on their
        observed words; fitting needs complete rows (the evidence needs each length).
    temperature : float >= 1 or "loo", default=1.0
        Likelihood tempering, as for every estimator (see the tempering guide).
    calibrate : {None, "loo"}, default=None
        A calibration map fitted to the exact leave-one-out class probabilities, as for
        every estimator (:mod:`bayesnb.analysis.calibration`).

    Attributes
    ----------
    precision_ : ndarray of shape (n_classes,)
        :math:`s_c` in use.
    alpha_ : float
    feature_count_ : ndarray of shape (n_classes, n_features)
    classes_, class_count_, prior_, posterior_, stats_, temperature_, evidence_trace_
        As for every bayesnb estimator.

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import PolyaNB
    >>> X = np.array([[6, 0, 1], [0, 5, 0], [7, 1, 0], [1, 4, 0], [0, 0, 3], [5, 0, 0]])
    >>> clf = PolyaNB().fit(X, [0, 1, 0, 1, 1, 0])
    >>> clf.predict([[3, 0, 0], [0, 2, 1]]).tolist()
    [0, 1]
    >>> clf.precision_.shape
    (2,)
    """

    # Its Pólya precision is learned by maximum evidence; no hyperprior in this version.
    _hyperprior_params = frozenset()

    # Why SemiSupervisedNB refuses it (read there by duck typing; see its module).
    _semi_supervised_refusal = {
        "vb": (
            "mean-field VB needs a distribution q over the class-conditional parameters and "
            "E_q[log p(x | parameters_c)] in closed form. The Pólya family's only global parameter, "
            "alpha, is a point hyperparameter learned by maximum evidence with no prior, so there is "
            "no q(alpha) to take the expectation under; and the Dirichlet-multinomial log-likelihood "
            "sum_j [lgamma(alpha_cj + x_j) - lgamma(alpha_cj)] - [lgamma(A_c + n) - lgamma(A_c)] has no "
            "conjugate prior in alpha, so no such q gives it in closed form"
        ),
        "em": (
            "MAP-EM's M-step must maximise a fixed objective in the class-conditional parameters. "
            "PolyaNB's alpha_c = s_c m_c takes its mean m_c from smoothed counts and only its "
            "precision s_c from the evidence, which maximises no fixed objective of the expected "
            "statistics (EM would lose its monotone guarantee); and its plug-in point estimates "
            "(multinomial proportions of a document's E[theta_d]) are not the Pólya likelihood, "
            "so the E-step would score documents under a different model. Use MultinomialNB "
            "for semi-supervised text classification"
        ),
    }

    _family = polya.family

    def __init__(
        self,
        *,
        alpha=1.0,
        precision="evidence",
        class_alpha=1.0,
        class_prior=None,
        fit_prior=True,
        estimate="predictive",
        missing="error",
        temperature=1.0,
        calibrate=None,
    ):
        super().__init__(
            class_alpha=class_alpha,
            class_prior=class_prior,
            fit_prior=fit_prior,
            estimate=estimate,
            missing=missing,
            temperature=temperature,
            calibrate=calibrate,
        )
        self.alpha = alpha
        self.precision = precision

    def _check_X(self, X, reset):
        X, dtype, integral = sparse_counts_input(X)
        X = validate_data(self, X, accept_sparse="csr", dtype=dtype, reset=reset, ensure_all_finite=not integral)
        return check_non_negative(X, type(self).__name__)

    def _make_prior(self):
        a = self.alpha
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, float, np.integer, np.floating)) or not (
            np.isfinite(a) and a > 0
        ):
            raise ValueError(f"alpha must be a positive finite number, got {a!r}")
        self.alpha_ = float(a)
        mean = polya.smoothed_mean(self.stats_, self.alpha_)
        C = self.classes_.size
        if is_evidence(self.precision):
            data = _objective_data(mean, self.stats_)
            # Start at the precision F (Dir(1) before data), on the scale of the vocabulary.
            u0 = np.full((C, 1), np.log(max(2.0, float(self.n_features_in_))))
            u, trace = empirical_bayes.maximize(polya.precision_objective, data, u0, (C, 1), names=("precision",))
            self.evidence_trace_["precision"] = trace
            self.precision_ = np.exp(_polish(u, data, C)[:, 0])
        else:
            p = np.asarray(self.precision, dtype=np.float64) if not isinstance(self.precision, str) else np.nan
            p = np.broadcast_to(p, (C,)) if np.ndim(p) == 0 else p
            if np.shape(p) != (C,) or not np.all(np.isfinite(p) & (p > 0)):
                raise ValueError(
                    f"precision must be 'evidence', a positive number or {C} positive numbers (one per class), "
                    f"got {self.precision!r}"
                )
            self.precision_ = np.array(p, dtype=np.float64)
        return polya.from_mean(mean, self.precision_)

    def _loo_feature(self, X, y_index, weight, kind):
        r"""Leave-one-out feature scores: each row's class refitted without it, exactly.

        The concentration :math:`\alpha_c = s_c m_c` depends on the class's rows twice:
        the mean :math:`m_c` is smoothed from their word totals, and with
        ``precision="evidence"`` the precision :math:`s_c` maximises their evidence. A
        refit without row :math:`i` changes both for the row's own class (the other
        classes keep theirs), so the row's own column is scored under
        :math:`s^{(-i)} m^{(-i)}`: the mean downdated
        (:func:`~bayesnb.core.families.polya.loo_log_predictive`,
        :func:`~bayesnb.core.families.polya.loo_point_log_likelihood`) and the precision
        re-learned without the row (:func:`~bayesnb.core.families.polya.loo_precision`:
        Newton steps on every row at once, warm-started at ``precision_``; a row whose
        search does not converge is refitted by the fit's own optimiser on the
        downdated statistics). ``"mean"`` does not depend on the precision, ``"mle"``
        on neither (the base downdate of the word totals).
        """
        if kind == "mle":
            return super()._loo_feature(X, y_index, weight, kind)
        y_index = np.asarray(y_index, dtype=np.intp)
        rows = np.arange(y_index.size)
        w = np.ones(y_index.size) if weight is None else np.asarray(weight, dtype=np.float64)
        if kind == "mean" or not is_evidence(self.precision):
            precision = np.asarray(self.precision_, dtype=np.float64)[y_index]
        else:
            precision = self._loo_precision(X, y_index, w)
        if kind == "predictive":
            out = np.array(self._family.log_predictive(self.posterior_, X), dtype=np.float64)
            out[rows, y_index] = polya.loo_log_predictive(self.stats_, self.alpha_, precision, X, y_index, w, per_row=True)
        else:
            out = np.array(self._family.log_likelihood(self._point(kind), X), dtype=np.float64)
            out[rows, y_index] = polya.loo_point_log_likelihood(self.stats_, self.alpha_, precision, X, y_index, kind, w)
        return out

    def _loo_precision(self, X, y_index, weight):
        """Each validated training row's class precision learned by maximum evidence without the row.

        Parameters
        ----------
        X : ndarray or CSR matrix of shape (n_samples, n_features)
            Validated training rows (their statistics are in ``stats_``).
        y_index : int ndarray of shape (n_samples,)
        weight : ndarray of shape (n_samples,)

        Returns
        -------
        ndarray of shape (n_samples,)
            :math:`s^{(-i)}_{y_i}`, what ``PolyaNB(precision="evidence")`` fitted on the
            rows without row :math:`i` learns for the class of row :math:`i`.
        """
        check_is_fitted(self, "stats_")
        y_index = np.asarray(y_index, dtype=np.intp)
        weight = np.asarray(weight, dtype=np.float64)
        bounds = (empirical_bayes.LOWER, empirical_bayes.UPPER)
        precision, converged = polya.loo_precision(
            self.stats_, self.alpha_, self.precision_, X, y_index, weight, bounds=bounds
        )
        for i in np.flatnonzero(~converged):
            precision[i] = self._refit_precision(X[i : i + 1], y_index[i], weight[i])
        return precision

    def _refit_precision(self, row, c, w):
        """The fit's own search for class ``c``'s precision on the statistics without ``row``."""
        C = self.classes_.size
        stats = self.stats_.merge(polya.polya_stats(row, np.array([c]), C, np.array([-w])))
        data = _objective_data(polya.smoothed_mean(stats, self.alpha_), stats)
        u0 = np.full((C, 1), np.log(max(2.0, float(self.n_features_in_))))
        u, _ = empirical_bayes.maximize(polya.precision_objective, data, u0, (C, 1), names=("precision",))
        return float(np.exp(_polish(u, data, C)[c, 0]))

    def _loo_prior_reasons(self):
        # The precision learned by evidence is re-learned without each row (_loo_feature).
        return tuple(r for r in super()._loo_prior_reasons() if not r.startswith("precision="))

    @property
    def feature_count_(self):
        """ndarray of shape (n_classes, n_features): weighted token totals :math:`T_{cj}`."""
        check_is_fitted(self, "stats_")
        return np.asarray(self.stats_.feature_count)

    @property
    def feature_log_prob_(self):
        """Log plug-in word probabilities of the current ``estimate`` (:math:`\\log m_c` for "predictive")."""
        check_is_fitted(self, "stats_")
        return np.asarray(self._point(check_estimate(self.estimate)).log_probs)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        tags.classifier_tags.poor_score = True
        return tags
