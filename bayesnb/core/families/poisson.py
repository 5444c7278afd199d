r"""Poisson family: counts with a Gamma prior on each rate.

:math:`x_j \mid y=c \sim \mathrm{Poisson}(\lambda_{cj})` independently over features, with
:math:`\lambda_{cj} \sim \mathrm{Gamma}(\alpha_{cj}, \beta_{cj})` (shape :math:`\alpha`,
*rate* :math:`\beta`; numpyro's ``Gamma(concentration, rate)``). A Gamma prior reads as
pseudo-data: :math:`\alpha` counts seen over :math:`\beta` rows. With
:math:`N_c = \sum_{i: y_i=c} w_i` and :math:`T_{cj} = \sum_{i: y_i=c} w_i x_{ij}` the
posterior is

.. math:: \lambda_{cj} \mid D \sim \mathrm{Gamma}(a_{cj}, b_{cj}), \quad
          a_{cj} = \alpha_{cj} + T_{cj}, \quad b_{cj} = \beta_{cj} + N_c,

and the exact posterior predictive of a new count is negative binomial (the
Gamma-Poisson mixture, numpyro's ``GammaPoisson(a, b)``):

.. math::

    \log p(x_j \mid y=c, D) = \log\frac{\Gamma(a + x_j)}{\Gamma(a)} - \log x_j!
        + a \log\frac{b}{b + 1} - x_j \log(b + 1),

summed over the features of the row. It is wider than the Poisson plug-in of the
posterior mean (variance :math:`\bar\lambda (1 + 1/b)` instead of :math:`\bar\lambda`):
it carries the remaining uncertainty about the rate.

**The base measure is included.** Every probability here is the probability of the
count vector itself: the Poisson plug-in likelihood
:math:`\sum_j x_j\log\lambda_{cj} - \lambda_{cj} - \log x_j!`, the predictive above and
the log evidence all contain :math:`-\sum_j \log x_j!`. The term is the same for every
class, so it cancels in class posteriors, but without it the "evidence" would not be the
probability of the observed counts (and could not be compared with another model of the
same counts); keeping it in all three keeps the chain rule
:math:`\log p(D) = \sum_i \log p(x_i \mid D_{<i})` exact. Only the class contrasts that
``predict_proba`` scores (:func:`log_likelihood_contrast`, :func:`log_predictive_contrast`)
leave it out. (The multinomial family, by
contrast, scores the token *sequence*; see :mod:`bayesnb.core.families.multinomial`.)

Point estimates of :math:`\lambda`: ``"mean"`` :math:`a / b`; ``"map"``
:math:`(a - 1) / b`, defined only when :math:`a \ge 1` (for :math:`a < 1` the posterior
density is unbounded at :math:`\lambda = 0` and has no mode: a ``ValueError`` says so);
``"mle"`` :math:`T / N`. A zero rate gives a positive count probability zero
(:math:`\log 0 = -\infty`) while a zero count keeps probability one
(:math:`0 \log 0 := 0`, see :mod:`bayesnb.core.kernels`). A class with :math:`N_c = 0` has no
maximum-likelihood rate (0/0); it gets the prior mean :math:`\alpha / \beta`, the limit
of the posterior mean under the prior :math:`\mathrm{Gamma}(\epsilon\alpha,
\epsilon\beta)` as :math:`\epsilon \to 0` (which is :math:`T / N` wherever
:math:`N > 0`), so the MLE is that limit everywhere.

Parameters are kept as :math:`\log\lambda` so that posterior draws of small rates do not
underflow to an exact zero (which would make every positive count impossible).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import jax.scipy.special
import numpy as np
import scipy.sparse as sp

from bayesnb.core._special import log_factorial_np, log_rising_factorial
from bayesnb.core._x64 import x64
from bayesnb.core.families import _gamma, _mask, _rows
from bayesnb.core.families._rising import COUNT_FORM_FROM, count_vector_rows, refuse_unrepresentable, sum_log_rising
from bayesnb.core.families.protocol import Family, register
from bayesnb.core.kernels import (
    ParamCache,
    csr_row_sums,
    dense_jax,
    is_traced,
    log_linear,
    matmul,
    namespace,
    sum_log_rising_jax,
    summed,
)
from bayesnb.core.priors import Gamma
from bayesnb.core.stats import poisson_stats, with_observed

__all__ = [
    "family",
    "PoissonParams",
    "make_prior",
    "posterior",
    "point",
    "log_likelihood",
    "log_likelihood_contrast",
    "log_predictive",
    "log_predictive_contrast",
    "log_evidence",
    "sample",
    "simulate",
]


class PoissonParams(NamedTuple):
    """Plug-in parameters.

    Attributes
    ----------
    log_rate : ndarray of shape (..., n_classes, n_features)
        :math:`\\log\\lambda_{cj}`; ``-inf`` for a zero rate.
    """

    log_rate: np.ndarray


make_prior = _gamma.make_prior


def posterior(prior, stats):
    """Conjugate update :math:`\\mathrm{Gamma}(\\alpha + T_{cj}, \\beta + N_c)`.

    Parameters
    ----------
    prior : Gamma
        Arrays of shape (n_classes, n_features).
    stats : PoissonStats (or any statistics with ``class_count``, ``feature_count``)

    Returns
    -------
    Gamma
    """
    xp = namespace(prior, stats)
    return Gamma(
        xp.asarray(prior.concentration, dtype=np.float64) + xp.asarray(stats.feature_count, dtype=np.float64),
        xp.asarray(prior.rate, dtype=np.float64) + xp.asarray(stats.class_count, dtype=np.float64)[:, None],
    )


def point(prior, stats, kind):
    r"""Point estimate of :math:`\lambda` (``"mle"``, ``"map"`` or ``"mean"``).

    ``"mle"``: :math:`T_{cj} / N_c` (the prior mean :math:`\alpha/\beta` for a class with
    :math:`N_c = 0`); ``"map"``: :math:`(a - 1)/b`; ``"mean"``: :math:`a / b`, with
    :math:`(a, b)` the posterior shape and rate.

    Returns
    -------
    PoissonParams
        ``log_rate`` of shape (n_classes, n_features).

    Raises
    ------
    ValueError
        For ``"map"`` when a posterior shape is below 1, or an unknown ``kind``.
    """
    if kind == "mle":
        xp = namespace(prior, stats)
        t = xp.asarray(stats.feature_count, dtype=np.float64)
        n = xp.broadcast_to(xp.asarray(stats.class_count, dtype=np.float64)[:, None], t.shape)
        a0 = xp.asarray(prior.concentration, dtype=np.float64)
        b0 = xp.asarray(prior.rate, dtype=np.float64)
        seen = n > 0
        with np.errstate(divide="ignore"):
            log_rate = xp.where(seen, xp.log(t) - xp.log(xp.where(seen, n, 1.0)), xp.log(a0) - xp.log(b0))
        return PoissonParams(log_rate)
    post = posterior(prior, stats)
    if kind == "map":
        return PoissonParams(_gamma.log_mode(post))
    if kind == "mean":
        return PoissonParams(_gamma.log_mean(post))
    raise ValueError(f"unknown point estimate {kind!r}")


def _canonical(X):
    """CSR without duplicate entries (the count-nonlinear terms need each x_ij whole)."""
    return summed(X)


def _row_log_factorial(X):
    r""":math:`\sum_j \log x_{ij}!` of every row, shape (n_samples,); only non-zeros of CSR."""
    if sp.issparse(X):
        return csr_row_sums(X.indptr, log_factorial_np(X.data), np.empty(X.shape[0]))
    if is_traced(X):
        return jax.scipy.special.gammaln(dense_jax(X) + 1.0).sum(axis=1)
    return log_factorial_np(X).sum(axis=1)


def log_likelihood(params, X):
    r"""Poisson plug-in log-likelihood of each row under each class.

    .. math:: \log p(x \mid y=c, \lambda) = \sum_j x_j\log\lambda_{cj} - \lambda_{cj} - \log x_j!

    Parameters
    ----------
    params : PoissonParams
        ``log_rate`` of shape (n_classes, n_features).
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        Non-negative counts (sparse data are never densified).

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
        ``-inf`` exactly where a positive count meets a zero rate.
    """
    X = _canonical(X)  # the log factorials need each count whole
    return log_likelihood_contrast(params, X) - _row_log_factorial(X)[:, None]


def log_likelihood_contrast(params, X, prior=None, mask=None):
    r""":func:`log_likelihood` without :math:`-\sum_j \log x_j!`, the same under every
    class: what class posteriors depend on (``predict_proba``), one product with the log
    rates. Linear in the counts, so entries stored twice need not be summed. With a
    ``mask``: the likelihood of the observed entries itself."""
    if mask is not None:
        return _masked_log_likelihood(params, X, mask=mask)
    xp = namespace(params, X)
    log_rate = xp.asarray(params.log_rate, dtype=np.float64)
    return log_linear(X, log_rate, bias=-xp.exp(log_rate).sum(axis=-1))


def log_predictive(post, X):
    r"""Exact negative-binomial posterior predictive of each row, shape (n_samples, n_classes).

    .. math::

        \sum_j \Big[\log\frac{\Gamma(a_{cj} + x_j)}{\Gamma(a_{cj})} - \log x_j!
            - a_{cj}\,\mathrm{log1p}(1 / b_{cj}) - x_j\,\mathrm{log1p}(b_{cj})\Big]

    The data-dependent terms run over the non-zeros of ``X`` only (the rising factorial
    of a zero count is zero); the :math:`a \log(b / (b+1))` part is a per-class constant.

    Parameters
    ----------
    post : Gamma
        Posterior of shape (n_classes, n_features).
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        Non-negative counts.
    """
    return _log_predictive(post, X, factorials=True)


def log_predictive_contrast(post, X):
    r""":func:`log_predictive` without :math:`-\sum_j \log x_j!`, the same under every
    class: what class posteriors depend on (``predict_proba``)."""
    return _log_predictive(post, X, factorials=False)


def _log_predictive(post, X, factorials):
    X = _canonical(X)
    if is_traced(post, X):
        a = jnp.asarray(post.concentration, dtype=jnp.float64)
        b = jnp.asarray(post.rate, dtype=jnp.float64)
        bias = -(a * jnp.log1p(1.0 / b)).sum(axis=1)
        out = sum_log_rising_jax(a, X) - matmul(X, jnp.log1p(b).T) + bias
        return out - _row_log_factorial(X)[:, None] if factorials else out
    a = np.asarray(post.concentration, dtype=np.float64)
    b = np.asarray(post.rate, dtype=np.float64)
    # The rising factorials and the x log1p(b) terms: the product of the data's pattern
    # with log(a / (1 + b)) plus the remainder of the values other than 1 (see _rising).
    totals = np.empty(X.shape[0])
    out = sum_log_rising(a, X, rate=b, row_totals=totals)
    if factorials:
        # (inf - inf only in rows of huge counts: recomputed below, or refused.)
        with np.errstate(invalid="ignore"):
            out -= _row_log_factorial(X)[:, None]
    # Long rows: the count-vector form itself (the exact value with factorials; for the
    # contrast, a per-row common term apart), whose count terms do not round away the
    # class differences as the rising factorials of huge counts do.
    long_rows = np.flatnonzero(~(totals <= COUNT_FORM_FROM))
    if long_rows.size:
        terms, common, _ = count_vector_rows(a, X, long_rows, rate=b)
        out[long_rows] = terms if not factorials else terms - common[:, None]
    out += _BIAS.get((a, b), "negative-binomial bias", lambda: -(a * np.log1p(1.0 / b)).sum(axis=1))
    refuse_unrepresentable(out, totals, "the exact negative-binomial predictive")
    return out


# The per-class constant of the predictive, kept while the posterior is unchanged.
_BIAS = ParamCache(size=2)


@x64
@jax.jit
def _log_evidence_jit(a0, b0, t, n, log_factorial):
    # One compiled kernel per shape instead of one per elementwise operation.
    a0, b0, t, n, log_factorial = (jnp.asarray(v, dtype=jnp.float64) for v in (a0, b0, t, n, log_factorial))
    n = jnp.broadcast_to(n[:, None], t.shape)
    # α log β − (α + T) log(β + N) rearranged so that no two large terms cancel.
    features = jnp.sum(log_rising_factorial(a0, t) - a0 * jnp.log1p(n / b0) - t * jnp.log(b0 + n))
    return features - jnp.sum(log_factorial)


def log_evidence(prior, stats):
    r"""Log marginal likelihood of the count vectors given their labels.

    .. math::

        \sum_{c,j}\Big[\alpha\log\beta - (\alpha + T_{cj})\log(\beta + N_c)
            + \log\Gamma(\alpha + T_{cj}) - \log\Gamma(\alpha)\Big]
        - \sum_i w_i \sum_j \log x_{ij}!

    (:math:`\alpha, \beta` per cell), computed as
    :math:`\log\frac{\Gamma(\alpha+T)}{\Gamma(\alpha)} - \alpha\,\mathrm{log1p}(N/\beta)
    - T\log(\beta + N)`.

    Parameters
    ----------
    prior : Gamma
    stats : PoissonStats
        Must carry ``log_factorial`` (the base-measure total).

    Returns
    -------
    float
        The registered ``family.log_evidence`` is the traceable form of this function
        (a 0-d float64 JAX array, under ``jax.jit`` and ``jax.grad`` in every
        hyperparameter, in the library's float64 scope :mod:`bayesnb.core._x64`).
    """
    return float(_evidence(prior, stats))


def _evidence(prior, stats):
    if not hasattr(stats, "log_factorial"):
        raise TypeError(
            f"the Poisson evidence needs PoissonStats (with the log-factorial total), got {type(stats).__name__}"
        )
    return _log_evidence_jit(prior.concentration, prior.rate, stats.feature_count, stats.class_count, stats.log_factorial)


_masked_log_likelihood = _mask.masked_log_likelihood(log_likelihood)


@x64
def sample(key, post, n):
    r"""``n`` iid draws of :math:`\lambda` from the Gamma posterior.

    :math:`\log\lambda = \log G - \log b` with :math:`G \sim \mathrm{Gamma}(a, 1)` drawn
    in log space (``jax.random.loggamma``, float64), so small shapes do not underflow.

    Parameters
    ----------
    key : jax.random key
    post : Gamma
        Posterior of shape (n_classes, n_features).
    n : int

    Returns
    -------
    PoissonParams
        ``log_rate`` of shape (n, n_classes, n_features).
    """
    return PoissonParams(_gamma.sample_log_rate(key, post, n))


def simulate(key, params, y_index):
    r"""Count rows given parameters and labels: :math:`x_{ij} \sim \mathrm{Poisson}(\lambda_{y_i j})`.

    Parameters
    ----------
    key : jax.random key
    params : PoissonParams
        ``log_rate`` of shape (n_classes, n_features), or with a leading row axis.
    y_index : int array of shape (n_rows,)

    Returns
    -------
    int64 ndarray of shape (n_rows, n_features)
    """
    rate = np.exp(_rows.of_class(params.log_rate, y_index, 1))
    return _rows.generator(key).poisson(rate).astype(np.int64)


def expected_log_likelihood(post, X, mask=None):
    r""":math:`E_q[\sum_j x_j\log\lambda_{cj} - \lambda_{cj} - \log x_j!]`, shape (n_samples, n_classes).

    :math:`E[\log\lambda] = \psi(a) - \log b`, :math:`E[\lambda] = a / b`: the plug-in
    log-likelihood at :math:`\log\lambda = E[\log\lambda]` corrected by
    :math:`e^{E[\log\lambda]} - E[\lambda]` for each observed feature.
    """
    e_log, e_rate = _gamma.expected_log_rate(post)
    out = _masked_log_likelihood(PoissonParams(e_log), X, mask=mask)
    return _mask.add_per_feature(out, np.exp(e_log) - e_rate, mask)


def log_density(dist, params, raise_by=0.0):
    """Log Gamma density of the rates ``params`` under ``dist`` (shapes raised by ``raise_by``), summed."""
    return _gamma.log_density(dist, params.log_rate, raise_by)


def _stats(X, y_index, n_classes, weight=None, mask=None):
    # An unobserved entry adds nothing to T_cj nor to log x!, and leaves N_cj.
    return with_observed(poisson_stats, X, y_index, n_classes, weight, mask)


def default_prior(stats):
    """Gamma(1, 0.01) on every rate: one count seen over a hundredth of a row (PoissonNB's default)."""
    return make_prior(1.0, 0.01, np.shape(stats.feature_count))


# ----------------------------------------------------------------------------- numpyro model and log-odds
# Imported here, with the rest of the model, rather than at the top: these members are
# appended to the family (numpyro itself is imported on first use by _models).
from bayesnb.core.families import _models  # noqa: E402


class PoissonModel(_models.ModelSpec):
    r"""The numpyro model: :math:`\lambda_{cj} \sim \mathrm{Gamma}(\alpha, \beta)` (site ``rate``), Poisson features."""

    variables = {"rate": ("class", "feature")}
    title = "Poisson"
    data = "counts"
    example = (
        "X, y = np.array([[2, 0], [0, 3]]), np.array([0, 1]); prior = priors.Gamma(np.ones((2, 2)), np.ones((2, 2)))"
    )
    parents = "['rate', 'y']"

    def sample_params(self, n_classes, feature):
        p = self.prior
        with _models.class_plate(n_classes), _models.feature_plate(feature, self.n_features()):
            rate = _models.numpyro.sample("rate", _models.dist.Gamma(_models.real(p.concentration), _models.real(p.rate)))
        return {"rate": rate}

    def observe(self, values, X, y, feature, n_rows, weight):
        with _models.data_plate(n_rows), _models.feature_plate(feature, self.n_features()), _models.weighted(weight):
            _models.numpyro.sample("x", _models.dist.Poisson(values["rate"][y]), obs=X)

    def log_likelihood_stats(self, values, stats):
        rate = values["rate"]
        return jnp.sum(_models.real(stats.feature_count) * jnp.log(rate) - _models.cell_count(stats) * rate)

    def values(self, params):
        return {"rate": np.exp(np.asarray(params.log_rate))}

    def moments(self, post):
        a = np.asarray(post.concentration, dtype=np.float64)
        b = np.asarray(post.rate, dtype=np.float64)
        return {"rate": (a / b, np.sqrt(a) / b)}


def feature_log_odds(params, prior=None):
    r"""Per-term log-likelihood of one more count: :math:`\log\lambda_{cj}`.

    Parameters
    ----------
    params : PoissonParams with leading axis n
    prior : ignored

    Returns
    -------
    terms : ndarray of shape (n, n_classes, n_features)
    feature : int ndarray of shape (n_features,)
    category : None
    unit : str
    """
    terms = np.asarray(params.log_rate)
    return terms, np.arange(terms.shape[-1]), None, "one more count"


family = register(
    Family(
        name="poisson",
        prior_type=Gamma,
        support="counts",
        hyperparameters=("concentration", "rate"),
        stats=_stats,
        posterior=_mask.cellwise(posterior),
        point=_mask.cellwise(point),
        log_likelihood=_masked_log_likelihood,
        log_likelihood_contrast=log_likelihood_contrast,
        log_predictive=_mask.masked_log_predictive(log_predictive),
        log_predictive_contrast=log_predictive_contrast,
        log_evidence=_mask.cellwise(_evidence),
        sample=sample,
        simulate=lambda key, params, y_index, stats=None: simulate(key, params, y_index),
        default_prior=default_prior,
        model=PoissonModel,
        feature_log_odds=feature_log_odds,
        expected_log_likelihood=expected_log_likelihood,
        log_density=log_density,
        recognise=lambda view: _gamma.recognise_rate(view, "Poisson"),
    )
)
