r"""Bernoulli family: binary features with a Beta prior per (class, feature).

:math:`x_j \mid y=c \sim \mathrm{Bernoulli}(\theta_{cj})`,
:math:`\theta_{cj} \sim \mathrm{Beta}(a_{cj}, b_{cj})`. The posterior is
:math:`\mathrm{Beta}(a + T_{cj},\, b + N_c - T_{cj})` and, since a new row carries one
observation of each feature, the exact posterior predictive is the plug-in of the
posterior mean :math:`\bar p_{cj} = (a + T_{cj}) / (a + b + N_c)`:

.. math:: \log p(x \mid y=c, D) = \sum_j x_j \log\bar p_{cj} + (1 - x_j) \log(1 - \bar p_{cj}).

Internally a Beta is a Dirichlet over the two outcomes ``(x = 0, x = 1)``, so the
parameters carry a last axis of length 2 indexed by the feature's value.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from bayesnb.core._x64 import x64
from bayesnb.core.families import _dirichlet, _mask, _rows
from bayesnb.core.families.protocol import Family, register
from bayesnb.core.kernels import host, log_linear, namespace
from bayesnb.core.priors import Beta, beta_from_alpha
from bayesnb.core.stats import count_stats, with_observed

__all__ = [
    "family",
    "BernoulliParams",
    "posterior",
    "point",
    "log_likelihood",
    "log_predictive",
    "mean_params",
    "log_evidence",
    "relevance_log_bayes_factor",
    "sample",
    "simulate",
]


# A new row holds one observation per Dirichlet cell, so the exact posterior predictive is
# the plug-in of the posterior mean: callers may reuse cached "mean" parameters for it.
PREDICTIVE_IS_MEAN_PLUGIN = True


class BernoulliParams(NamedTuple):
    """Plug-in parameters.

    Attributes
    ----------
    log_probs : ndarray of shape (..., n_classes, n_features, 2)
        ``log_probs[..., 0]`` is :math:`\\log(1 - \\theta_{cj})`, ``log_probs[..., 1]``
        is :math:`\\log\\theta_{cj}`.
    """

    log_probs: np.ndarray


def _outcome_counts(stats, xp=np):
    # ``xp``: numpy, or jax.numpy where the evidence is traced (statistics as tracers).
    on = xp.asarray(stats.feature_count, dtype=np.float64)
    # N_c - T_cj cannot be negative for 0/1 data; clip summation round-off.
    off = xp.maximum(xp.asarray(stats.class_count, dtype=np.float64)[:, None] - on, 0.0)
    return xp.stack([off, on], axis=-1)


def _concentration(beta, xp=np):
    return xp.stack([xp.asarray(beta.concentration0), xp.asarray(beta.concentration1)], axis=-1)


def posterior(prior, stats):
    """Conjugate update :math:`\\mathrm{Beta}(a + T, b + N - T)`.

    Parameters
    ----------
    prior : Beta
        Concentrations of shape (n_classes, n_features).
    stats : CountStats
        ``feature_count`` holds :math:`T_{cj}`, the weighted number of rows with the
        feature on.

    Returns
    -------
    Beta
    """
    # The two outcome counts directly, without the stacked (..., 2) array of
    # _outcome_counts: the same numbers, a third of the memory traffic.
    xp = namespace(prior, stats)
    if xp is not np:
        counts = _outcome_counts(stats, xp)
        return Beta(xp.asarray(prior.concentration1) + counts[..., 1], counts[..., 0] + xp.asarray(prior.concentration0))
    on = np.asarray(stats.feature_count, dtype=np.float64)
    off = np.maximum(np.asarray(stats.class_count, dtype=np.float64)[:, None] - on, 0.0)
    off += np.asarray(prior.concentration0)
    return Beta(np.asarray(prior.concentration1) + on, off)


def point(prior, stats, kind):
    """Point estimate of :math:`\\theta` (``"mle"``, ``"map"`` or ``"mean"``).

    Returns
    -------
    BernoulliParams
    """
    if kind == "mle":
        return BernoulliParams(host(_dirichlet.mle_log(_outcome_counts(stats, namespace(stats)))))
    post = posterior(prior, stats)
    conc = _concentration(post, namespace(post))
    if kind == "map":
        return BernoulliParams(host(_dirichlet.mode_log(conc)))
    if kind == "mean":
        return BernoulliParams(host(_dirichlet.mean_log(conc)))
    raise ValueError(f"unknown point estimate {kind!r}")


def log_likelihood(params, X):
    """Plug-in log-likelihood of 0/1 rows, shape (n_samples, n_classes)."""
    lp = host(params.log_probs)
    return log_linear(X, lp[..., 1], log_w_off=lp[..., 0])


def mean_params(dist):
    """Plug-in parameters of the mean of a Beta prior or posterior: the exact predictive of one row."""
    return BernoulliParams(host(_dirichlet.mean_log(_concentration(dist, namespace(dist)))))


def log_predictive(post, X):
    """Exact posterior predictive (the posterior-mean plug-in), shape (n_samples, n_classes)."""
    return log_likelihood(mean_params(post), X)


_masked_log_likelihood = _mask.masked_log_likelihood(log_likelihood)


def expected_log_likelihood(post, X, mask=None):
    r""":math:`E_q[\log p(x \mid \theta_c)]`: the plug-in log-likelihood at :math:`E[\log\theta]`, :math:`E[\log(1-\theta)]` (digamma differences), shape (n_samples, n_classes)."""
    params = BernoulliParams(np.asarray(_dirichlet.expected_log(_concentration(post))))
    return _masked_log_likelihood(params, X, mask=mask)


def log_density(dist, params, raise_by=0.0):
    """Log Beta density of the probabilities ``params`` under ``dist`` (both concentrations raised by ``raise_by``), summed."""
    return _dirichlet.log_density(_concentration(dist) + float(raise_by), params.log_probs)


def log_evidence(prior, stats):
    r"""Log marginal likelihood of the binary features given the labels.

    .. math:: \sum_{c,j} \log\frac{B(a + T_{cj},\, b + N_c - T_{cj})}{B(a, b)}

    Returns
    -------
    float
        The registered ``family.log_evidence`` is the traceable form of this function
        (a 0-d float64 JAX array, under ``jax.jit`` and ``jax.grad`` in every
        hyperparameter, in the library's float64 scope :mod:`bayesnb.core._x64`).
    """
    return float(_evidence(prior, stats))


@x64
def _evidence(prior, stats):
    # Stacked in jax.numpy (inside the float64 scope) so that the prior and the
    # statistics may be tracers.
    return _dirichlet.log_evidence(_concentration(prior, jnp), _outcome_counts(stats, jnp))


def relevance_log_bayes_factor(prior, stats):
    r"""Per-feature log Bayes factor: :math:`\theta_{cj}` per class against one :math:`\theta_j` shared.

    .. math::

        \log\mathrm{BF}_j = \sum_c \log\frac{B(a + T_{cj},\, b + N_c - T_{cj})}{B(a, b)}
            - \log\frac{B(a + T_j,\, b + N - T_j)}{B(a, b)},

    :math:`T_j = \sum_c T_{cj}`, :math:`N = \sum_c N_c` (see
    :func:`bayesnb.core.families._dirichlet.pooled_log_bayes_factor`). The prior must be the
    same for every class.

    Returns
    -------
    ndarray of shape (n_features,)
    """
    return _dirichlet.pooled_log_bayes_factor(_concentration(prior), _outcome_counts(stats))


def sample(key, post, n):
    """``n`` iid posterior draws, as BernoulliParams of shape (n, C, F, 2)."""
    return BernoulliParams(_dirichlet.sample_log(key, _concentration(post, namespace(post)), n))


def simulate(key, params, y_index):
    r"""Binary rows given parameters and labels: :math:`x_{ij} \sim \mathrm{Bernoulli}(\theta_{y_i j})`.

    Drawn as :math:`\log U < \log\theta` (:math:`U` uniform), so tiny probabilities keep
    their value.

    Parameters
    ----------
    key : jax.random key
    params : BernoulliParams
        ``log_probs`` of shape (n_classes, n_features, 2), or with a leading row axis.
    y_index : int array of shape (n_rows,)

    Returns
    -------
    int64 ndarray of shape (n_rows, n_features) of 0/1
    """
    log_on = _rows.of_class(np.asarray(params.log_probs)[..., 1], y_index, 1)
    with np.errstate(divide="ignore"):
        return (np.log(_rows.generator(key).random(log_on.shape)) < log_on).astype(np.int64)


def _stats(X, y_index, n_classes, weight=None, mask=None):
    # An unobserved entry adds nothing to T_cj and leaves N_cj.
    return with_observed(count_stats, X, y_index, n_classes, weight, mask)


def default_prior(stats):
    """The uniform Beta(1, 1) prior of the shape of ``stats``."""
    return beta_from_alpha(1.0, np.shape(stats.feature_count))


# ----------------------------------------------------------------------------- numpyro model and log-odds
# Imported here, with the rest of the model, rather than at the top: these members are
# appended to the family (numpyro itself is imported on first use by _models).
from bayesnb.core.families import _models  # noqa: E402


class BernoulliModel(_models.ModelSpec):
    r"""The numpyro model: :math:`\theta_{cj} \sim \mathrm{Beta}(a, b)` (site ``feature_probs``), Bernoulli features."""

    variables = {"feature_probs": ("class", "feature")}
    title = "Bernoulli"
    data = "0/1 values"
    example = (
        "X, y = np.array([[1, 0], [0, 1]]), np.array([0, 1]); prior = priors.Beta(np.ones((2, 2)), np.ones((2, 2)))"
    )
    parents = "['feature_probs', 'y']"

    def sample_params(self, n_classes, feature):
        p = self.prior
        with _models.class_plate(n_classes), _models.feature_plate(feature, self.n_features()):
            theta = _models.numpyro.sample(
                "feature_probs", _models.dist.Beta(_models.real(p.concentration1), _models.real(p.concentration0))
            )
        return {"feature_probs": theta}

    def observe(self, values, X, y, feature, n_rows, weight):
        with _models.data_plate(n_rows), _models.feature_plate(feature, self.n_features()), _models.weighted(weight):
            _models.numpyro.sample("x", _models.dist.Bernoulli(probs=values["feature_probs"][y]), obs=X)

    def log_likelihood_stats(self, values, stats):
        theta = values["feature_probs"]
        on = _models.real(stats.feature_count)
        off = _models.cell_count(stats) - on
        return jnp.sum(on * jnp.log(theta) + off * jnp.log1p(-theta))

    def values(self, params):
        return {"feature_probs": np.exp(np.asarray(params.log_probs)[..., 1])}

    def moments(self, post):
        conc = np.stack([np.asarray(post.concentration0), np.asarray(post.concentration1)], axis=-1)
        mean, sd = _models.dirichlet_moments(conc)
        return {"feature_probs": (mean[..., 1], sd[..., 1])}


def feature_log_odds(params, prior=None):
    r"""Per-term log-likelihood of presence against absence: :math:`\log\frac{\theta_{cj}}{1-\theta_{cj}}`.

    Parameters
    ----------
    params : BernoulliParams with leading axis n
    prior : ignored

    Returns
    -------
    terms : ndarray of shape (n, n_classes, n_features)
    feature : int ndarray of shape (n_features,)
    category : None
    unit : str
    """
    lp = np.asarray(params.log_probs)
    return lp[..., 1] - lp[..., 0], np.arange(lp.shape[-2]), None, "presence vs absence"


def recognise(view):
    r"""Beta–Bernoulli in a user's numpyro model (the family's ``recognise`` member).

    ``x ~ Bernoulli(probs=theta[y])`` with ``theta ~ Beta(a, b)`` per (class, feature).

    Parameters
    ----------
    view : bayesnb.ppl.compile.SiteView

    Returns
    -------
    Recognised or None
        None when the site is not Bernoulli.
    """
    if view.likelihood_kind != "Bernoulli":
        return None
    tail = (view.n_columns,)
    theta = view.link(
        "probs", "Beta", tail, expect="Beta–Bernoulli: probs = theta[y] with theta ~ Beta(a, b) per (class, feature)"
    )
    prior = Beta(view.field(theta, "concentration1"), view.field(theta, "concentration0"))
    return view.recognised(prior, feature_probs=theta)


family = register(
    Family(
        name="bernoulli",
        prior_type=Beta,
        support="binary",
        hyperparameters=("concentration1", "concentration0"),
        stats=_stats,
        posterior=_mask.cellwise(posterior),
        point=_mask.cellwise(point),
        log_likelihood=_masked_log_likelihood,
        log_predictive=_mask.masked_log_predictive(log_predictive),
        log_evidence=_mask.cellwise(_evidence),
        sample=sample,
        simulate=lambda key, params, y_index, stats=None: simulate(key, params, y_index),
        default_prior=default_prior,
        mean_params=mean_params,
        relevance_log_bayes_factor=relevance_log_bayes_factor,
        model=BernoulliModel,
        feature_log_odds=feature_log_odds,
        expected_log_likelihood=expected_log_likelihood,
        log_density=log_density,
        recognise=recognise,
    )
)
