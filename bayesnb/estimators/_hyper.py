r"""Hyperpriors on an estimator's hyperparameters, integrated out by NUTS (the estimator front).

Any hyperparameter of an estimator may be given as a numpyro distribution:
``MultinomialNB(alpha=dist.Gamma(2.0, 1.0))``, ``BernoulliNB(alpha=(dist.Gamma(2, 1),
dist.Gamma(2, 1)))``, ``class_alpha=dist.Exponential(1.0)``, a field of a prior named
tuple (``GaussianNB(prior=NormalInverseGamma(0.0, dist.LogNormal(0, 1), 1.0, 1.0))``),
or an array-valued one with a batch shape (``dist.Gamma(2.0, 1.0).expand((n_features,))``
for a per-feature :math:`\alpha`). ``fit`` then computes the sufficient statistics once
and runs NUTS on the collapsed model (:mod:`bayesnb.ppl.collapsed`) whose log density
is the closed-form evidence plus the log hyperprior. One mechanism serves every family:
the estimator's own prior construction (validation included) is evaluated at concrete
values, and :func:`bayesnb.ppl.collapsed.embedding` learns where each hyperparameter's
elements land in the prior pytree.

What the fitted estimator holds (see :class:`HyperpriorMixin`):

``hyper_posterior_``
    dict from the hyperparameter's name (``"alpha"``, ``"alpha[0]"``, ``"class_alpha"``,
    ``"prior.kappa"``) to its draws, shape (hyper_chains * hyper_draws, ...), chains
    one after the other.
``hyper_diagnostics_``
    ``{"r_hat": {name: array}, "ess": {name: array}, "divergences": int,
    "num_chains": int, "num_samples": int, "num_warmup": int}``.
``hyper_mode_``
    dict from name to the mode of the hyperparameters' posterior density.
``prior_``, ``posterior_``, ``alpha_`` / ``class_alpha_`` ...
    Those of the plain estimator at ``hyper_mode_``.

What ``estimate`` means then:

``"predictive"``
    The exact predictive with the hyperparameters integrated:
    :math:`p(x, y \mid D) = \frac1M \sum_m p(x, y \mid D, a_m)` over the draws
    :math:`a_m` (every draw, or ``hyper_predict_draws`` evenly spaced ones), each term the
    closed-form joint predictive, combined by ``logsumexp``, then normalised over the
    classes (not an average of per-draw class probabilities).
``"mean"``, ``"map"``, ``"mle"``
    The plug-ins of the posterior at the hyperparameters' posterior mode
    :math:`\hat a` (type-II MAP): :math:`E[\theta \mid D, \hat a]`, the mode of
    :math:`p(\theta \mid D, \hat a)`, and the MLE (which no prior affects).

Posterior draws (``sample_posterior``, ``predict_proba_draws``,
``predict_proba_interval``, ``to_inference_data``) are mixtures: each draw of
:math:`(\pi, \theta)` is drawn conditional on a draw of the hyperparameters.
``hyper_conditional(m)`` is the plain estimator at draw ``m`` (the conditional posterior),
``hyper_conditional_draws(k)`` draws ``k`` parameters conditional on every draw in order
(``to_inference_data`` takes one; :func:`bayesnb.ppl.mcmc.crosscheck` several, for the
quantiles of the mixture), and ``hyper_embedding()`` gives where the hyperparameters
enter the prior (for the un-collapsed numpyro model,
:func:`bayesnb.ppl.models.hyper_model`).
"""

from __future__ import annotations

import copy
import numbers

import jax
import numpy as np
from sklearn.utils.validation import check_is_fitted

from bayesnb.core import _fitted
from bayesnb.core._random import key_from_random_state
from bayesnb.ppl import collapsed as _collapsed

__all__ = ["HyperpriorMixin"]

_HYPER_PARAMS = """
    hyper_chains : int >= 2, default=2
        With a hyperparameter given as a numpyro distribution (a hyperprior, integrated
        out at ``fit`` by NUTS on the collapsed model; see :mod:`bayesnb.estimators._hyper`):
        the number of NUTS chains.
    hyper_warmup : int, default=500
        NUTS warm-up iterations per chain (step size and mass matrix adaptation).
    hyper_draws : int, default=500
        Draws kept per chain (``hyper_posterior_`` holds ``hyper_chains * hyper_draws``).
    hyper_predict_draws : int or None, default=200
        How many evenly spaced draws of the hyperparameters the integrated predictive
        averages over (None: every draw); each costs one closed-form predictive.
    random_state : int, RandomState, Generator, jax key or None, default=None
        Seeds NUTS (and nothing else: the closed forms are deterministic).
"""

_STATE = "_hyper_state_"


def _as_value(value):
    value = np.asarray(value, dtype=np.float64)
    return float(value) if value.ndim == 0 else value


def _check_count(value, name, minimum):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


class HyperpriorMixin:
    """Integration of hyperpriors for :class:`~bayesnb.estimators._base.BaseNB` (see the module)."""

    # ------------------------------------------------------------ fitting
    def _hyperpriors(self):
        return _collapsed.find_hyperpriors(self.get_params(deep=False))

    def _hyper_setting(self, name, default):
        return getattr(self, name, default)

    def _at_values(self, hypers, values):
        """A copy of this estimator with the hyperpriors replaced by ``values`` and refitted (plain)."""
        work = copy.copy(self)
        work.__dict__.pop(_STATE, None)
        for key in ("hyper_posterior_", "hyper_diagnostics_", "hyper_mode_", "hyper_predict_index_"):
            work.__dict__.pop(key, None)
        params = self.get_params(deep=False)
        changed = _collapsed.substitute(params, {h.path: _as_value(values[h.name]) for h in hypers})
        for key, value in changed.items():
            setattr(work, key, value)
        work._refresh_plain()
        return work

    def _refresh_hyper(self, hypers):
        """Sample the hyperparameters' posterior, then fit the plain model at its mode."""
        names = {h.path[0] for h in hypers}
        if "class_alpha" in names and (self.class_prior is not None or not self.fit_prior):
            raise ValueError(
                "class_alpha is a distribution, but the class proportions are fixed "
                "(class_prior is set or fit_prior=False): there is no class concentration to integrate"
            )
        chains = _check_count(self._hyper_setting("hyper_chains", 2), "hyper_chains", 2)
        warmup = _check_count(self._hyper_setting("hyper_warmup", 500), "hyper_warmup", 1)
        draws = _check_count(self._hyper_setting("hyper_draws", 500), "hyper_draws", 1)
        n_predict = self._hyper_setting("hyper_predict_draws", 200)
        if n_predict is not None:
            n_predict = _check_count(n_predict, "hyper_predict_draws", 1)

        def build(values):
            work = self._at_values(hypers, values)
            dirichlet = work.class_dirichlet_
            return work.prior_, None if dirichlet is None else np.asarray(dirichlet.concentration, dtype=np.float64)

        base = _collapsed.base_values(hypers)
        # The supports first (a Normal for a concentration is refused by name), then the
        # shapes at a point inside every support.
        for h in hypers:
            _collapsed.check_support(h, build, base)
        try:
            build(base)
        except (ValueError, TypeError) as err:
            shapes = ", ".join(f"{h.name} ~ {type(h.distribution).__name__} with draws of shape {h.shape}" for h in hypers)
            raise ValueError(f"{shapes}: {err}") from None
        emb = _collapsed.embedding(build, hypers, base)
        # The family of the plain model (GaussianBayesClassifier reads its covariance
        # structure off prior_, which this estimator has only after the fit below).
        family = self._at_values(hypers, base)._family
        log_evidence = _collapsed.log_evidence_fn(family, self.stats_, self.stats_.class_count, emb)
        key = key_from_random_state(self._hyper_setting("random_state", None))
        run = _collapsed.run_nuts(
            key, log_evidence, hypers, num_warmup=warmup, num_samples=draws, num_chains=chains
        )
        flat = {k: v.reshape((-1,) + v.shape[2:]) for k, v in run.draws.items()}
        # The statistics are arguments of the densities' and the optimiser's programs, as of
        # the sampler's: a refit on other data of the same shapes compiles none of them.
        log_density = _collapsed.log_density_fn(log_evidence, hypers)
        densities = _collapsed.log_densities(log_density, flat)
        best = int(np.nanargmax(densities))
        mode = _collapsed.posterior_mode(log_density, hypers, {k: v[best] for k, v in flat.items()})
        total = chains * draws
        index = np.arange(total) if n_predict is None or n_predict >= total else np.unique(
            np.linspace(0, total - 1, n_predict).round().astype(np.int64)
        )
        # The plain model at the mode: prior_, posterior_, alpha_ ... of the "mean"/"map"/"mle"
        # plug-ins (the distributions stay the estimator's parameters).
        saved = {k: getattr(self, k) for k in names}
        changed = _collapsed.substitute(self.get_params(deep=False), {h.path: _as_value(mode[h.name]) for h in hypers})
        try:
            for k, v in changed.items():
                setattr(self, k, v)
            self._refresh_plain()
        finally:
            for k, v in saved.items():
                setattr(self, k, v)
        self.hyper_posterior_ = flat
        self.hyper_diagnostics_ = {
            "r_hat": run.r_hat,
            "ess": run.ess,
            "divergences": run.divergences,
            "num_chains": chains,
            "num_samples": draws,
            "num_warmup": warmup,
        }
        self.hyper_mode_ = {k: np.asarray(v) for k, v in mode.items()}
        self.hyper_predict_index_ = index
        self.__dict__[_STATE] = (hypers, emb)

    def _hyper_fitted(self):
        return _STATE in self.__dict__

    def _hyper_draw_values(self, m):
        return {name: draws[m] for name, draws in self.hyper_posterior_.items()}

    def _at_draw(self, m):
        return self._at_values(self.__dict__[_STATE][0], self._hyper_draw_values(m))

    # ----------------------------------------- the conditional posteriors
    def hyper_conditional(self, m):
        r"""The plain estimator at the hyperparameters' draw ``m``: the posterior :math:`p(\theta, \pi \mid D, a_m)`.

        The mixture that the estimator integrates is the average of these conditional
        posteriors over the draws :math:`a_m` of ``hyper_posterior_``.

        Parameters
        ----------
        m : int
            Index of the draw, ``0 <= m < hyper_chains * hyper_draws``.

        Returns
        -------
        estimator
            A copy with every hyperprior replaced by ``hyper_posterior_[name][m]`` and
            refitted from the same statistics (its ``prior_``, ``posterior_`` and class
            posterior are those of the conjugate closed form at :math:`a_m`).
        """
        check_is_fitted(self, "hyper_posterior_")
        return self._at_draw(int(m))

    def hyper_conditional_draws(self, n_per_draw=1, random_state=None):
        r"""Draws of the parameters conditional on every draw of the hyperparameters, in their order.

        For each draw :math:`a_m` of ``hyper_posterior_`` (chains one after the other),
        ``n_per_draw`` exact iid draws of :math:`(\pi, \theta)` from the conditional
        posterior :math:`p(\theta, \pi \mid D, a_m)` (:meth:`hyper_conditional`), the
        draws of :math:`a_m` from the key ``fold_in(key, m)``. Together they are draws of
        the mixture that the estimator integrates, stratified over the hyperparameters'
        draws: ``to_inference_data`` takes one per draw, and
        :func:`bayesnb.ppl.mcmc.crosscheck` several, whose spread within and between the
        strata gives the Monte Carlo error of the mixture's quantiles.

        Parameters
        ----------
        n_per_draw : int
        random_state : int, RandomState, Generator, jax key or None

        Returns
        -------
        log_class : ndarray of shape (n_hyper * n_per_draw, n_classes)
        params : the family's parameter pytree with leading axis ``n_hyper * n_per_draw``
            Draw ``m * n_per_draw + k`` is the ``k``-th draw given :math:`a_m`
            (``n_hyper = hyper_chains * hyper_draws``).
        """
        check_is_fitted(self, "hyper_posterior_")
        n_per_draw = _check_count(n_per_draw, "n_per_draw", 1)
        return _fitted.hyper_conditional_draws(self.fitted_model(), n_per_draw, key_from_random_state(random_state))

    def hyper_embedding(self):
        """Where the integrated hyperparameters enter the prior: the hyperpriors and their embedding.

        Returns
        -------
        hypers : list of bayesnb.ppl.collapsed.Hyper
            The hyperparameters given as distributions (names as in ``hyper_posterior_``).
        embedding : bayesnb.ppl.collapsed.Embedding
            Of the pytree ``(prior_, class concentration or None)``:
            ``bayesnb.ppl.collapsed.embed(embedding, values)`` is that pytree at the
            hyperparameter values ``values`` (traceable), as the collapsed model and the
            un-collapsed numpyro model (:func:`bayesnb.ppl.models.model_from_estimator`)
            build it.
        """
        check_is_fitted(self, "hyper_posterior_")
        hypers, emb = self.__dict__[_STATE]
        return list(hypers), emb

    # --------------------------------------------------------- prediction
    def _hyper_joint(self, X):
        r""":math:`\log \frac1M \sum_m p(x, y=c \mid D, a_m)` of validated rows, (n_samples, n_classes)."""
        acc = None
        index = self.hyper_predict_index_
        for m in index:
            joint = self._at_draw(int(m))._joint(X, "predictive")
            acc = joint if acc is None else np.logaddexp(acc, joint)
        return acc - np.log(index.size)

    def hyper_joint_log_proba_draws(self, X):
        r"""Per-draw joint log predictive :math:`\log p(x, y=c \mid D, a_m)` over the predictive's draws.

        The terms that ``predict_joint_log_proba`` (``estimate="predictive"``) combines
        by ``logsumexp``; the draws are ``hyper_posterior_[name][hyper_predict_index_]``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_predict_draws, n_samples, n_classes)
        """
        check_is_fitted(self, "hyper_posterior_")
        Xv = self._input(X, reset=False)
        return np.stack([self._at_draw(int(m))._joint(Xv, "predictive") for m in self.hyper_predict_index_])

    # -------------------------------------------------------------- draws
    def hyper_prior_draws(self, n, random_state=None):
        r"""Draws of the parameters from the prior, hyperpriors included.

        Each draw has its own hyperparameter values :math:`a \sim p(a)`, drawn from the
        hyperpriors (from the first half of the key), then :math:`(\pi, \theta)` from
        the plain prior at :math:`a` (from ``fold_in`` of the second half by the draw's
        index). The draws of ``sample_prior``, of ``to_inference_data``'s prior group and
        of the prior-predictive checks.

        Parameters
        ----------
        n : int
        random_state : int, RandomState, Generator, jax key or None

        Returns
        -------
        log_class : ndarray of shape (n, n_classes)
        params : the family's parameter pytree with leading axis ``n``
        """
        check_is_fitted(self, "hyper_posterior_")
        n = _check_count(n, "n", 1)
        return _fitted.hyper_prior_draws(self.fitted_model(), n, key_from_random_state(random_state))

    # ------------------------------------------------------------ export
    def _hyper_inference_data(self, X_new, X, y, feature_names, random_state):
        """``to_inference_data`` with the hyperparameters' draws and parameters drawn conditional on each."""
        from bayesnb.ppl.export import add_hyperparameters, coords_of, to_inference_data

        chains = self.hyper_diagnostics_["num_chains"]
        per_chain = self.hyper_diagnostics_["num_samples"]
        total = chains * per_chain
        key = key_from_random_state(random_state)
        key_post, key_prior, key_rest = jax.random.split(key, 3)
        draws = self.hyper_conditional_draws(1, key_post)
        prior_draws = self.hyper_prior_draws(total, key_prior)
        idata = to_inference_data(
            self, per_chain, key_rest, X_new, X=X, y=y, n_chains=chains, feature_names=feature_names,
            draws=draws, prior_draws=prior_draws,
        )
        # The feature names for a per-feature hyperparameter: a categorical posterior has
        # no feature dim to take them from (it is over the cells).
        return add_hyperparameters(
            idata, self.hyper_posterior_, chains, getattr(self, "n_features_in_", None),
            feature_names=coords_of(self, feature_names).get("feature"),
        )
