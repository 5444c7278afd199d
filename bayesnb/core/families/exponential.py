r"""Exponential family: positive durations with a Gamma prior on each rate.

:math:`x_j \mid y=c \sim \mathrm{Exponential}(\lambda_{cj})` independently over features
(density :math:`\lambda e^{-\lambda x}` on :math:`x \ge 0`), with
:math:`\lambda_{cj} \sim \mathrm{Gamma}(\alpha_{cj}, \beta_{cj})` (shape :math:`\alpha`,
*rate* :math:`\beta`; numpyro's ``Gamma(concentration, rate)``). The Gamma prior reads
as pseudo-data: :math:`\alpha` observations of total duration :math:`\beta`. With
:math:`N_c = \sum_{i: y_i=c} w_i` and :math:`T_{cj} = \sum_{i: y_i=c} w_i x_{ij}` the
posterior is

.. math:: \lambda_{cj} \mid D \sim \mathrm{Gamma}(a_{cj}, b_{cj}), \quad
          a_{cj} = \alpha_{cj} + N_c, \quad b_{cj} = \beta_{cj} + T_{cj}

(the roles of counts and totals are those of the Poisson family swapped), and the exact
posterior predictive of a new value is the Lomax (Pareto type II) distribution of shape
:math:`a` and scale :math:`b` (``scipy.stats.lomax(c=a, scale=b)``):

.. math::

    \log p(x_j \mid y=c, D) = \log a + a\log b - (a + 1)\log(b + x_j)
        = \log\frac{a}{b + x_j} - a\,\mathrm{log1p}(x_j / b),

summed over the features of the row. Its tail is polynomial, heavier than the
exponential plug-in of the posterior mean: it carries the remaining uncertainty about
the rate.

The log evidence (the density of the observed values w.r.t. Lebesgue measure, so with
no base-measure term) is

.. math::

    \log p(D) = \sum_{c,j}\Big[\alpha\log\beta - a\log b + \log\Gamma(a) - \log\Gamma(\alpha)\Big],

computed as :math:`\log\frac{\Gamma(\alpha+N)}{\Gamma(\alpha)} - \alpha\,
\mathrm{log1p}(T/\beta) - N\log(\beta + T)` so that no two large terms cancel.

Point estimates of :math:`\lambda`: ``"mean"`` :math:`a / b`; ``"map"``
:math:`(a - 1)/b`, defined only when :math:`a \ge 1` (``ValueError`` otherwise);
``"mle"`` :math:`N / T`, the prior mean :math:`\alpha/\beta` for a class without rows
(the limit of the posterior mean under :math:`\mathrm{Gamma}(\epsilon\alpha,
\epsilon\beta)`, :math:`\epsilon \to 0`, as in the Poisson family). Where :math:`N > 0`
and :math:`T = 0` (every value of the cell is exactly zero) the likelihood increases
without bound in :math:`\lambda`: there is no maximum-likelihood rate, and ``"mle"``
raises ``ValueError`` saying so rather than returning an infinite rate.

Parameters are kept as :math:`\log\lambda` (:class:`ExponentialParams`), so posterior
draws of small rates do not underflow.

The numpyro model is :class:`ExponentialModel` (the family's ``model`` member, from
which :mod:`bayesnb.ppl.models` builds ``exponential_model`` and
``exponential_stats_model``); numpyro is imported on first use, so importing this
module stays light.

Examples
--------
>>> import numpy as np
>>> from bayesnb.core.families import exponential
>>> X = np.array([[1.0, 0.5], [2.0, 0.25], [0.1, 3.0]])
>>> stats = exponential.family.stats(X, np.array([0, 0, 1]), 2)
>>> post = exponential.posterior(exponential.family.default_prior(stats), stats)
>>> post.concentration.tolist()
[[3.0, 3.0], [2.0, 2.0]]
>>> exponential.log_predictive(post, X).shape
(3, 2)
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesnb.core._special import log_rising_factorial
from bayesnb.core._x64 import x64
from bayesnb.core.families import _gamma, _mask, _rows
from bayesnb.core.families.protocol import Family, register
from bayesnb.core.kernels import namespace
from bayesnb.core.priors import Gamma, positive_array
from bayesnb.core.stats import count_stats, dense_mask, with_observed

__all__ = [
    "family",
    "ExponentialParams",
    "make_prior",
    "default_prior",
    "posterior",
    "point",
    "log_likelihood",
    "log_predictive",
    "log_evidence",
    "sample",
    "simulate",
    "ExponentialModel",
    "feature_log_odds",
]


class ExponentialParams(NamedTuple):
    """Plug-in parameters.

    Attributes
    ----------
    log_rate : ndarray of shape (..., n_classes, n_features)
        :math:`\\log\\lambda_{cj}`.
    """

    log_rate: np.ndarray


make_prior = _gamma.make_prior


def _cell_count(stats):
    """:math:`N_{cj}` of shape (n_classes, n_features): per-cell counts where the statistics have them."""
    xp = namespace(stats)
    t = xp.asarray(stats.feature_count, dtype=np.float64)
    observed = getattr(stats, "observed_count", None)
    if observed is not None:
        return xp.asarray(observed, dtype=np.float64)
    return xp.broadcast_to(xp.asarray(stats.class_count, dtype=np.float64)[:, None], t.shape)


def default_prior(stats, concentration=1.0):
    r"""A weakly-informative Gamma prior scaled to the data: invariant to the unit of time.

    :math:`\lambda_{cj} \sim \mathrm{Gamma}(\alpha, \alpha\,\bar x_j)`, with
    :math:`\bar x_j = \sum_c T_{cj} / \sum_c N_{cj}` the pooled mean of feature
    :math:`j` over every class: :math:`\alpha` pseudo-observations (default one) each
    lasting the pooled mean duration. Its prior mean rate is :math:`1/\bar x_j` whatever
    :math:`\alpha`, and rescaling the data by :math:`s` rescales :math:`\beta` by
    :math:`s` too, so predictions (class probabilities) do not depend on the unit of
    time. With :math:`\alpha = 1` the posterior mean :math:`(1 + N)/(\bar x + T)` is
    "add one observation of the pooled mean", and the MAP exists everywhere
    (:math:`a \ge 1`). A feature whose pooled mean is zero or undefined (no value, or
    every value 0) gets :math:`\beta = \alpha` (a pooled mean of one unit).

    The prior depends on the training data, so ``log_evidence`` under it is an
    empirical-Bayes quantity; set the prior explicitly for model comparison by evidence.

    Parameters
    ----------
    stats : CountStats (or masked statistics with ``observed_count``)
    concentration : float, default=1.0
        :math:`\alpha`.

    Returns
    -------
    Gamma
        Arrays of shape (n_classes, n_features).
    """
    t = np.asarray(stats.feature_count, dtype=np.float64)
    n = _cell_count(stats)
    total, count = t.sum(axis=0), n.sum(axis=0)
    positive = (count > 0) & (total > 0)
    pooled = np.where(positive, total / np.where(positive, count, 1.0), 1.0)
    alpha = positive_array(concentration, "concentration (Gamma concentration)", t.shape)
    return make_prior(alpha, alpha * pooled[None, :], t.shape)


def posterior(prior, stats):
    """Conjugate update :math:`\\mathrm{Gamma}(\\alpha + N_c, \\beta + T_{cj})`.

    Parameters
    ----------
    prior : Gamma
        Arrays of shape (n_classes, n_features).
    stats : CountStats (or any statistics with ``class_count``, ``feature_count``)

    Returns
    -------
    Gamma
    """
    xp = namespace(prior, stats)
    return Gamma(
        xp.asarray(prior.concentration, dtype=np.float64) + _cell_count(stats),
        xp.asarray(prior.rate, dtype=np.float64) + xp.asarray(stats.feature_count, dtype=np.float64),
    )


def point(prior, stats, kind):
    r"""Point estimate of :math:`\lambda` (``"mle"``, ``"map"`` or ``"mean"``).

    ``"mle"``: :math:`N_c / T_{cj}` (the prior mean :math:`\alpha/\beta` for a class with
    :math:`N_c = 0`); ``"map"``: :math:`(a - 1)/b`; ``"mean"``: :math:`a / b`, with
    :math:`(a, b)` the posterior shape and rate.

    Returns
    -------
    ExponentialParams
        ``log_rate`` of shape (n_classes, n_features).

    Raises
    ------
    ValueError
        For ``"map"`` when a posterior shape is below 1; for ``"mle"`` when a cell has
        rows but a zero total (no finite maximum); for an unknown ``kind``.
    """
    if kind == "mle":
        xp = namespace(prior, stats)
        t = xp.asarray(stats.feature_count, dtype=np.float64)
        n = _cell_count(stats)
        seen = n > 0
        degenerate = seen & (t <= 0)
        # Traced, the values are unknown here: degenerate cells get NaN below instead.
        if xp is np and degenerate.any():
            where = tuple(int(i) for i in np.argwhere(degenerate)[0])
            raise ValueError(
                "estimate='mle' is undefined here: every training value of class/feature index "
                f"{where} is 0, so the exponential likelihood grows without bound in the rate "
                "(no maximum-likelihood rate). Use estimate='mean', 'map' or 'predictive'."
            )
        a0 = xp.asarray(prior.concentration, dtype=xp.float64)
        b0 = xp.asarray(prior.rate, dtype=xp.float64)
        log_rate = xp.where(
            seen, xp.log(xp.where(seen, n, 1.0)) - xp.log(xp.where(seen, t, 1.0)), xp.log(a0) - xp.log(b0)
        )
        if xp is not np:
            log_rate = xp.where(degenerate, xp.nan, log_rate)
        return ExponentialParams(log_rate)
    post = posterior(prior, stats)
    if kind == "map":
        return ExponentialParams(_gamma.log_mode(post))
    if kind == "mean":
        return ExponentialParams(_gamma.log_mean(post))
    raise ValueError(f"unknown point estimate {kind!r}")


def log_likelihood(params, X, prior=None):
    r"""Exponential plug-in log-likelihood of each row under each class.

    .. math:: \log p(x \mid y=c, \lambda) = \sum_j \log\lambda_{cj} - \lambda_{cj} x_j

    Parameters
    ----------
    params : ExponentialParams
        ``log_rate`` of shape (n_classes, n_features).
    X : ndarray of shape (n_samples, n_features)
        Non-negative values.
    prior : ignored
        For the protocol's signature.

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
    """
    xp = namespace(params, X)
    log_rate = xp.asarray(params.log_rate, dtype=np.float64)
    X = xp.asarray(X, dtype=np.float64)
    # Linear in x: one matrix product, -inf only where a zero rate meets nothing (never).
    return log_rate.sum(axis=-1)[None, :] - X @ xp.exp(log_rate).T


def log_predictive(post, X):
    r"""Exact Lomax posterior predictive of each row, shape (n_samples, n_classes).

    .. math:: \sum_j \log a_{cj} - \log(b_{cj} + x_j) - a_{cj}\,\mathrm{log1p}(x_j / b_{cj})

    Parameters
    ----------
    post : Gamma
        Posterior of shape (n_classes, n_features).
    X : ndarray of shape (n_samples, n_features)
        Non-negative values.
    """
    xp = namespace(post, X)
    a = xp.asarray(post.concentration, dtype=np.float64)[None]
    b = xp.asarray(post.rate, dtype=np.float64)[None]
    x = xp.asarray(X, dtype=np.float64)[:, None, :]
    # (n_samples, n_classes, n_features) is formed once; rows are narrow for this family.
    return xp.sum(xp.log(a) - xp.log(b + x) - a * xp.log1p(x / b), axis=-1)


@jax.jit
def _log_evidence_cells(a0, b0, n, t):
    # α log β − (α + N) log(β + T) rearranged so that no two large terms cancel.
    return jnp.sum(log_rising_factorial(a0, n) - a0 * jnp.log1p(t / b0) - n * jnp.log(b0 + t))


@x64
def log_evidence_jax(concentration, rate, class_count, feature_total):
    r"""The log evidence as a JAX scalar, differentiable in ``concentration`` and ``rate``.

    Parameters
    ----------
    concentration, rate : array_like of shape (n_classes, n_features)
        The prior :math:`(\alpha, \beta)`.
    class_count : array_like of shape (n_classes, n_features)
        :math:`N_{cj}` (the class count broadcast over features, or per-cell counts).
    feature_total : array_like of shape (n_classes, n_features)
        :math:`T_{cj}`.

    Returns
    -------
    jax.Array of float64, shape ()
    """
    return _log_evidence_cells(*(jnp.asarray(v, dtype=jnp.float64) for v in (concentration, rate, class_count, feature_total)))


def log_evidence(prior, stats):
    r"""Log marginal density of the feature values given their labels.

    .. math::

        \sum_{c,j}\Big[\alpha\log\beta - (\alpha + N_c)\log(\beta + T_{cj})
            + \log\Gamma(\alpha + N_c) - \log\Gamma(\alpha)\Big]

    (:math:`\alpha, \beta` per cell), computed as
    :math:`\log\frac{\Gamma(\alpha+N)}{\Gamma(\alpha)} - \alpha\,\mathrm{log1p}(T/\beta)
    - N\log(\beta + T)` in float64.

    Parameters
    ----------
    prior : Gamma
    stats : CountStats

    Returns
    -------
    float
    """
    return float(_evidence(prior, stats))


@x64
def _evidence(prior, stats):
    # The registered form: traceable in the prior and the statistics alike (jax.jit,
    # jax.grad), so no NumPy conversion of either here.
    t = stats.feature_count
    n = getattr(stats, "observed_count", None)
    if n is None:
        n = jnp.broadcast_to(jnp.asarray(stats.class_count)[:, None], jnp.shape(t))
    return log_evidence_jax(prior.concentration, prior.rate, n, t)


@x64
def sample(key, dist, n):
    r"""``n`` iid draws of :math:`\lambda` from a Gamma prior or posterior.

    :math:`\log\lambda = \log G - \log b` with :math:`G \sim \mathrm{Gamma}(a, 1)` drawn
    in log space (``jax.random.loggamma``, float64), so small shapes do not underflow.

    Parameters
    ----------
    key : jax.random key
    dist : Gamma
        Of shape (n_classes, n_features).
    n : int

    Returns
    -------
    ExponentialParams
        ``log_rate`` of shape (n, n_classes, n_features).
    """
    return ExponentialParams(_gamma.sample_log_rate(key, dist, n))


def simulate(key, params, y_index, stats=None):
    r"""Rows given parameters and labels: :math:`x_{ij} \sim \mathrm{Exponential}(\lambda_{y_i j})`.

    Parameters
    ----------
    key : jax.random key
    params : ExponentialParams
        ``log_rate`` of shape (n_classes, n_features), or with a leading row axis.
    y_index : int array of shape (n_rows,)
    stats : ignored
        For the protocol's signature.

    Returns
    -------
    float64 ndarray of shape (n_rows, n_features)
    """
    log_rate = _rows.of_class(params.log_rate, y_index, 1)
    return _rows.generator(key).standard_exponential(log_rate.shape) * np.exp(-log_rate)


def expected_log_likelihood(post, X, mask=None):
    r""":math:`E_q[\sum_j \log\lambda_{cj} - \lambda_{cj} x_j]` over the observed features, shape (n_samples, n_classes).

    :math:`E[\log\lambda] = \psi(a) - \log b`, :math:`E[\lambda] = a / b`.
    """
    e_log, e_rate = _gamma.expected_log_rate(post)
    X = np.asarray(X, dtype=np.float64)
    if mask is None:
        return e_log.sum(axis=-1)[None, :] - X @ e_rate.T
    observed = ~dense_mask(mask)
    return observed.astype(np.float64) @ e_log.T - np.where(observed, X, 0.0) @ e_rate.T


def log_density(dist, params, raise_by=0.0):
    """Log Gamma density of the rates ``params`` under ``dist`` (shapes raised by ``raise_by``), summed."""
    return _gamma.log_density(dist, params.log_rate, raise_by)


def _count_stats(X, y_index, n_classes, weight=None):
    return count_stats(np.asarray(X, dtype=np.float64), y_index, n_classes, weight)


def _stats(X, y_index, n_classes, weight=None, mask=None):
    # An unobserved entry adds nothing to T_cj and leaves N_cj (per-cell counts, which
    # posterior, point and the evidence read natively).
    return with_observed(_count_stats, X, y_index, n_classes, weight, mask)


# ----------------------------------------------------------------------------- numpyro model

from bayesnb.core.families import _models  # noqa: E402


class ExponentialModel(_models.ModelSpec):
    r"""The numpyro model: :math:`\lambda_{cj} \sim \mathrm{Gamma}(\alpha, \beta)` (site ``rate``), exponential features.

    numpyro's ``Exponential`` has support :math:`x > 0`: with numpyro's validation
    enabled an observed value of exactly 0 is scored as out of support, whereas the
    closed forms give it density :math:`\lambda` (a boundary point of measure zero).
    """

    variables = {"rate": ("class", "feature")}
    title = "exponential"
    data = "positive values"
    example = (
        "X, y = np.array([[0.5, 2.0], [3.0, 0.2]]), np.array([0, 1]); "
        "prior = priors.Gamma(np.ones((2, 2)), np.ones((2, 2)))"
    )
    parents = "['rate', 'y']"

    def sample_params(self, n_classes, feature):
        p = self.prior
        with _models.class_plate(n_classes), _models.feature_plate(feature, self.n_features()):
            rate = _models.numpyro.sample("rate", _models.dist.Gamma(_models.real(p.concentration), _models.real(p.rate)))
        return {"rate": rate}

    def observe(self, values, X, y, feature, n_rows, weight):
        with _models.data_plate(n_rows), _models.feature_plate(feature, self.n_features()), _models.weighted(weight):
            _models.numpyro.sample("x", _models.dist.Exponential(values["rate"][y]), obs=X)

    def log_likelihood_stats(self, values, stats):
        # N log(rate) - T rate: the exponential density has no base-measure term.
        rate = values["rate"]
        return jnp.sum(_models.cell_count(stats) * jnp.log(rate) - _models.real(stats.feature_count) * rate)

    def values(self, params):
        return {"rate": np.exp(np.asarray(params.log_rate))}

    def moments(self, post):
        a = np.asarray(post.concentration, dtype=np.float64)
        b = np.asarray(post.rate, dtype=np.float64)
        return {"rate": (a / b, np.sqrt(a) / b)}


def feature_log_odds(params, prior=None):
    r"""Per-term log-likelihood of one more unit of a feature: :math:`-\lambda_{cj}`.

    :math:`\log p(x \mid \lambda) = \log\lambda - \lambda x` is linear in :math:`x`.

    Parameters
    ----------
    params : ExponentialParams with leading axis n
    prior : ignored

    Returns
    -------
    terms : ndarray of shape (n, n_classes, n_features)
    feature : int ndarray of shape (n_features,)
    category : None
    unit : str
    """
    terms = -np.exp(np.asarray(params.log_rate))
    return terms, np.arange(terms.shape[-1]), None, "one unit more"


family = register(
    Family(
        name="exponential",
        prior_type=Gamma,
        support="positive",
        hyperparameters=("concentration", "rate"),
        stats=_stats,
        posterior=posterior,
        point=point,
        log_likelihood=_mask.masked_log_likelihood(log_likelihood),
        log_predictive=_mask.masked_log_predictive(log_predictive),
        log_evidence=_evidence,
        sample=sample,
        simulate=simulate,
        default_prior=default_prior,
        model=ExponentialModel,
        feature_log_odds=feature_log_odds,
        expected_log_likelihood=expected_log_likelihood,
        log_density=log_density,
        recognise=lambda view: _gamma.recognise_rate(view, "Exponential"),
    )
)
