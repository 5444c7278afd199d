r"""Gaussian family, diagonal: real features with a Normal-Inverse-Gamma prior per cell.

Class-conditional model (naive Bayes: features independent given the class), for every
class :math:`c` and feature :math:`j`,

.. math::

    x_j \mid y=c \sim \mathcal N(\mu_{cj}, \sigma^2_{cj}), \qquad
    \sigma^2_{cj} \sim \mathrm{InvGamma}(a_0, b_0), \qquad
    \mu_{cj} \mid \sigma^2_{cj} \sim \mathcal N(m_0, \sigma^2_{cj} / \kappa_0),

with :math:`(m_0, \kappa_0, a_0, b_0)` the fields ``loc, kappa, concentration, rate``
of :class:`bayesnb.core.priors.NormalInverseGamma` (each broadcast to (n_classes,
n_features)). From the weighted statistics :math:`N_c`, :math:`\bar x_{cj}` and
:math:`M_{2,cj} = \sum_{i: y_i=c} w_i (x_{ij} - \bar x_{cj})^2`
(:class:`bayesnb.core.stats.GaussianStats`) the posterior is
:math:`\mathrm{NIG}(m_n, \kappa_n, a_n, b_n)`:

.. math::

    \kappa_n = \kappa_0 + N, \quad
    m_n = \frac{\kappa_0 m_0 + N \bar x}{\kappa_n}, \quad
    a_n = a_0 + \frac N2, \quad
    b_n = b_0 + \frac{M_2}{2} + \frac{\kappa_0 N (\bar x - m_0)^2}{2 \kappa_n}.

The exact posterior predictive of one new value is a Student-t,

.. math::

    x_j \mid y=c, D \sim t_{2 a_n}\!\Big(m_n,\; \frac{b_n (\kappa_n + 1)}{a_n \kappa_n}\Big),

and the row's log predictive is the sum over features. Everything is float64
(:mod:`bayesnb.core._x64`); the row-wise kernels are ``jax.jit`` compiled and run over row
chunks of a power-of-two number of rows (one compiled shape per model and kernel); the
remainder, and data smaller than a chunk, run the same functions in numpy.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy.special import gammaln

from bayesnb.core import _sampling
from bayesnb.core._validation import check_gaussian_spread
from bayesnb.core._x64 import enable_x64, x64
from bayesnb.core.families import _mask, _rows
from bayesnb.core.families.protocol import Family, register
from bayesnb.core.kernels import (
    dense_jax,
    gemm,
    is_traced,
    map_threads,
    namespace,
    row_ranges,
)
from bayesnb.core.priors import NormalInverseGamma, real_array
from bayesnb.core.stats import feature_range, gaussian_stats, is_masked, masked_gaussian_stats

__all__ = [
    "family",
    "GaussianParams",
    "pooled",
    "default_prior",
    "check_prior",
    "check_spread",
    "posterior",
    "point",
    "moments",
    "mle_epsilon",
    "predictive_params",
    "log_likelihood",
    "log_predictive",
    "log_evidence",
    "log_evidence_cells",
    "relevance_log_bayes_factor",
    "sample",
    "simulate",
    "DEFAULT_KAPPA",
    "DEFAULT_CONCENTRATION",
    "DEFAULT_VAR_FRACTION",
]

#: Prior pseudo-observations of the mean in the default prior.
DEFAULT_KAPPA = 0.01
#: Inverse-Gamma shape :math:`a_0` of the default prior.
DEFAULT_CONCENTRATION = 1.0
#: The default prior's mode of :math:`\sigma^2`, as a fraction of the pooled variance.
DEFAULT_VAR_FRACTION = 0.01
# A feature whose pooled variance is below this multiple of its squared mean is
# constant at float64 resolution (rounding alone leaves a variance ~1e-32 x mean^2);
# the default prior then takes its scale from the mean.
_CONSTANT_RESOLUTION = 1e-20

# Row-chunk sizes (in float64 entries per chunk: rows x features for the plug-in
# expansion, rows x classes x features for the per-class kernels) of the compiled
# kernels; chosen on a 2-core machine so that a chunk's temporaries stay in cache.
_PLUGIN_CHUNK_ENTRIES = 1 << 19
_T_CHUNK_ENTRIES = 1 << 20
_MIN_CHUNK = 64
# The compiled kernels run only where there are at least this many full chunks of rows:
# below it the NumPy form of the same kernel costs less than one compilation (a few
# hundred milliseconds for the first of a process), which small data would pay on its
# first prediction.
_COMPILE_MIN_CHUNKS = 8

# The quadratic expansion is trusted where the magnitude of its terms is at most this
# multiple of the result's: its rounding error is then within ~1e-13 (|L| + F). The
# (row, class) pairs that exceed it are recomputed by the direct (x - mu)^2 form.
_CANCELLATION_LIMIT = 256.0
# Flagged (row, class) pairs are recomputed one by one while they are at most
# 1/_PAIRWISE_REDO_SHARE of their rows' (row, class) pairs; beyond it, whole rows.
_PAIRWISE_REDO_SHARE = 4


class GaussianParams(NamedTuple):
    """Plug-in parameters.

    Attributes
    ----------
    loc : ndarray of shape (..., n_classes, n_features)
        Means :math:`\\mu_{cj}`.
    var : ndarray of shape (..., n_classes, n_features)
        Variances :math:`\\sigma^2_{cj}` (> 0).
    """

    loc: np.ndarray
    var: np.ndarray


# ----------------------------------------------------------------------------- priors


def pooled(stats):
    r"""Weighted count, mean and variance of every feature over all classes together.

    .. math::

        N = \sum_c N_c, \quad \bar x_j = \frac{\sum_c N_c \bar x_{cj}}{N}, \quad
        v_j = \frac{1}{N}\Big[\sum_c M_{2,cj} + \sum_c N_c (\bar x_{cj} - \bar x_j)^2\Big]

    (the population variance, ``ddof=0``, of all training rows, weighted).

    Parameters
    ----------
    stats : GaussianStats

    Returns
    -------
    count : float
    mean, var : ndarrays of shape (n_features,)
    """
    xp = namespace(stats)
    n_c = xp.asarray(stats.class_count, dtype=np.float64)
    # Traced (jax.jit), the total is not known here: no check, and a JAX scalar.
    total = float(n_c.sum()) if xp is np else n_c.sum()
    if xp is np and total <= 0:
        raise ValueError("the statistics hold no rows (total weight 0)")
    means = xp.asarray(stats.mean, dtype=np.float64)
    # Class means relative to the largest class's, with their low-order parts: small
    # numbers, so the between-class term keeps its digits for data far from 0.
    ref = means[int(np.argmax(n_c)) if xp is np else xp.argmax(n_c)]
    rel = _deviation(stats, ref)
    shift = (n_c[:, None] * rel).sum(axis=0) / total
    dev = rel - shift
    m2 = xp.asarray(stats.m2, dtype=np.float64).sum(axis=0) + (n_c[:, None] * dev * dev).sum(axis=0)
    return total, ref + shift, m2 / total


def default_prior(stats):
    r"""The weakly-informative default prior, scaled to the training data.

    For every class and feature :math:`j`, with :math:`\bar x_j` and :math:`v_j` the
    pooled weighted mean and variance of feature :math:`j` over all training rows
    (:func:`pooled`):

    .. math::

        m_0 = \bar x_j, \quad \kappa_0 = 0.01, \quad a_0 = 1, \quad
        b_0 = (a_0 + 1) \cdot 0.01 \cdot s_j, \quad
        s_j = \max(v_j,\ 10^{-20} \bar x_j^2)

    (and :math:`s_j = 1` for a feature that is zero in every row). So the prior mode of
    :math:`\sigma^2_{cj}` (the mode :math:`b_0/(a_0 + 1)` of the Inverse-Gamma) is 1% of
    the pooled variance, a class standard deviation a tenth of the pooled one: classes
    are usually tighter than the pooled data, which also spread between classes. The
    Inverse-Gamma(1, ·) tail is heavy to the right (no prior mean) and light to the
    left, so variances far above :math:`s_j` stay plausible while a class variance below
    about :math:`b_0/20` needs the data's support. :math:`\kappa_0 = 0.01` makes the prior
    on the mean worth a hundredth of one observation, centred on the pooled mean, with
    standard deviation :math:`\sigma_{cj}/\sqrt{\kappa_0} = 10\,\sigma_{cj}`.

    Why scaled to the data: a prior with fixed numbers is informative on some scale.
    With :math:`m_0, b_0` proportional to the feature's location and squared scale,
    rescaling a feature by :math:`s` (and shifting it) rescales the posterior of
    :math:`\mu, \sigma` in the same way and leaves every class probability unchanged.
    The floor :math:`10^{-20}\bar x_j^2` only acts on features constant to float64
    resolution, where the variance is rounding noise and would give :math:`b_0 = 0`.

    The prior depends on the training data (empirical Bayes): the log evidence under it
    is not the marginal likelihood of a prior fixed in advance. Pass an explicit
    :class:`~bayesnb.core.priors.NormalInverseGamma` to compare models by evidence.

    With per-cell statistics (unobserved entries, :class:`~bayesnb.core.stats.MaskedGaussianStats`)
    each feature's prior is scaled to its observed values.

    Parameters
    ----------
    stats : GaussianStats or MaskedGaussianStats
        Statistics of all training rows (with ``partial_fit``: of every batch so far).

    Returns
    -------
    NormalInverseGamma
        Arrays of shape (n_classes, n_features).
    """
    check_spread(stats)
    if is_masked(stats):
        return _masked_default_prior(stats)
    _, mean, var = pooled(stats)
    shape = np.asarray(stats.mean).shape
    scale = np.maximum(var, _CONSTANT_RESOLUTION * mean * mean)
    scale = np.where(scale > 0, scale, 1.0)
    conc = DEFAULT_CONCENTRATION
    return NormalInverseGamma(
        loc=np.broadcast_to(mean, shape).copy(),
        kappa=np.full(shape, DEFAULT_KAPPA),
        concentration=np.full(shape, conc),
        rate=np.broadcast_to((conc + 1.0) * DEFAULT_VAR_FRACTION * scale, shape).copy(),
    )


def _field(value, name, shape, positive):
    return real_array(value, f"prior.{name}", shape, positive=positive)


def check_prior(prior, n_classes, n_features):
    """Validate a user prior and broadcast it to (n_classes, n_features).

    Parameters
    ----------
    prior : NormalInverseGamma
        ``loc`` finite; ``kappa``, ``concentration`` and ``rate`` finite and > 0; each a
        scalar or an array broadcastable to (n_classes, n_features).
    n_classes, n_features : int

    Returns
    -------
    NormalInverseGamma
        float64 arrays of shape (n_classes, n_features).

    Raises
    ------
    TypeError
        If ``prior`` is not a NormalInverseGamma or a field is not numeric.
    ValueError
        If a field is not finite, not positive where it must be, or does not broadcast.
    """
    if not isinstance(prior, NormalInverseGamma):
        raise TypeError(
            "prior must be a bayesnb.core.priors.NormalInverseGamma(loc, kappa, concentration, rate) "
            f"or None, got {type(prior).__name__}"
        )
    shape = (int(n_classes), int(n_features))
    return NormalInverseGamma(
        loc=_field(prior.loc, "loc", shape, positive=False),
        kappa=_field(prior.kappa, "kappa", shape, positive=True),
        concentration=_field(prior.concentration, "concentration", shape, positive=True),
        rate=_field(prior.rate, "rate", shape, positive=True),
    )


# ----------------------------------------------------------------------------- posterior


def _deviation(stats, loc):
    r""":math:`\bar x_{cj} - \text{loc}`, using the low-order part of the mean."""
    xp = namespace(stats, loc)
    mean = xp.asarray(stats.mean, dtype=np.float64)
    return (mean - loc) + xp.asarray(getattr(stats, "mean_residual", 0.0), dtype=np.float64)


def _arrays(stats):
    xp = namespace(stats)
    n = xp.asarray(stats.class_count, dtype=np.float64)[:, None]
    return n, xp.asarray(stats.mean, dtype=np.float64), xp.asarray(stats.m2, dtype=np.float64)


def _increment(n, k0, m2, dev):
    # Written once for numpy and jax.numpy arrays alike (see log_evidence_cells).
    return 0.5 * m2 + 0.5 * (k0 * n / (k0 + n)) * dev * dev


def _rate_increment(prior, stats):
    r""":math:`b_n - b_0 = M_2/2 + \kappa_0 N (\bar x - m_0)^2 / (2\kappa_n)`, never by subtraction."""
    xp = namespace(prior, stats)
    n, _, m2 = _arrays(stats)
    k0 = xp.asarray(prior.kappa, dtype=np.float64)
    dev = _deviation(stats, xp.asarray(prior.loc, dtype=np.float64))
    return _increment(n, k0, m2, dev)


def posterior(prior, stats):
    r"""Conjugate update :math:`\mathrm{NIG}(m_0, \kappa_0, a_0, b_0) \to \mathrm{NIG}(m_n, \kappa_n, a_n, b_n)`.

    See the module docstring for the formulas. A class with :math:`N_c = 0` keeps its
    prior.

    Parameters
    ----------
    prior : NormalInverseGamma
        Arrays of shape (n_classes, n_features).
    stats : GaussianStats

    Returns
    -------
    NormalInverseGamma
        Arrays of shape (n_classes, n_features).
    """
    xp = namespace(prior, stats)
    n, _, _ = _arrays(stats)
    m0 = xp.asarray(prior.loc, dtype=np.float64)
    k0 = xp.asarray(prior.kappa, dtype=np.float64)
    kn = k0 + n
    return NormalInverseGamma(
        loc=m0 + (n / kn) * _deviation(stats, m0),
        kappa=kn,
        concentration=xp.asarray(prior.concentration, dtype=np.float64) + 0.5 * n,
        rate=xp.asarray(prior.rate, dtype=np.float64) + _rate_increment(prior, stats),
    )


def moments(post):
    r"""Posterior means :math:`E[\mu] = m_n` and :math:`E[\sigma^2] = b_n / (a_n - 1)`.

    :math:`E[\sigma^2]` is infinite where :math:`a_n \le 1` (the Inverse-Gamma has no
    finite mean there) and is returned as ``inf``. (:math:`m_n` is the mean of
    :math:`\mu` when :math:`a_n > 1/2`, and its median and mode always.)

    Returns
    -------
    GaussianParams
    """
    xp = namespace(post)
    a = xp.asarray(post.concentration, dtype=np.float64)
    b = xp.asarray(post.rate, dtype=np.float64)
    with np.errstate(divide="ignore"):
        var = xp.where(a > 1.0, b / xp.where(a > 1.0, a - 1.0, 1.0), np.inf)
    return GaussianParams(xp.asarray(post.loc, dtype=np.float64), var)


def _mle(stats, var_smoothing):
    n, mean, m2 = _arrays(stats)
    if is_traced(stats):
        # The checks below need values; traced, the undefined estimates are NaN instead.
        var = m2 / n + mle_epsilon(stats, var_smoothing)
        undefined = (n <= 0) | (var < np.finfo(np.float64).tiny)
        return GaussianParams(jnp.where(undefined, jnp.nan, mean), jnp.where(undefined, jnp.nan, var))
    empty = n[:, 0] <= 0
    if empty.any():
        c = int(np.flatnonzero(empty)[0])
        raise ValueError(
            f"estimate='mle' is undefined: class index {c} has no training rows (weighted "
            "count 0), so its mean and variance have no maximum-likelihood estimate. Use "
            "estimate='map', 'mean' or 'predictive' (they fall back on the prior)."
        )
    var = m2 / n + mle_epsilon(stats, var_smoothing)
    # Below the smallest normal double, 1 / var overflows: as good as zero.
    zero = var < np.finfo(np.float64).tiny
    if zero.any():
        c, j = (int(i) for i in np.argwhere(zero)[0])
        raise ValueError(
            f"estimate='mle' gives a zero variance for class index {c}, feature {j} (all its "
            "training values are equal and var_smoothing adds nothing: it is 0, or every "
            "feature is constant), so the likelihood is a point mass. Use var_smoothing > 0 "
            "on data that vary, or estimate='map', 'mean' or 'predictive'."
        )
    return GaussianParams(mean, var)


def mle_epsilon(stats, var_smoothing):
    r"""scikit-learn's variance floor :math:`\epsilon = \text{var\_smoothing} \cdot \max_j v_j`.

    :math:`v_j` is the pooled weighted variance of feature :math:`j` over all training
    rows (:func:`pooled`). scikit-learn's ``GaussianNB`` takes the unweighted variance of
    the ``X`` passed to the latest ``fit``/``partial_fit`` call instead; the two agree for
    ``fit`` without ``sample_weight``. With per-cell statistics (unobserved entries)
    :math:`v_j` is pooled over the rows that observe feature :math:`j`.
    """
    if is_masked(stats):
        return float(var_smoothing) * float(_pooled_var_by_feature(stats).max(initial=0.0))
    if is_traced(stats):
        return 0.0 if float(var_smoothing) == 0.0 else float(var_smoothing) * jnp.max(pooled(stats)[2], initial=0.0)
    return float(var_smoothing) * float(pooled(stats)[2].max(initial=0.0))


def point(prior, stats, kind, *, var_smoothing=0.0):
    r"""Point estimate of :math:`(\mu, \sigma^2)` per (class, feature).

    * ``"mle"``: :math:`\mu = \bar x`, :math:`\sigma^2 = M_2 / N + \epsilon`, with
      :math:`\epsilon` = :func:`mle_epsilon` (scikit-learn's ``var_smoothing``). Raises
      ``ValueError`` for a class with :math:`N_c = 0` (no estimate exists) or a zero
      variance (a point mass).
    * ``"map"``: the joint mode of the NIG posterior density in :math:`(\mu, \sigma^2)`
      (with respect to Lebesgue measure on :math:`\mu` and :math:`\sigma^2`). The
      density is proportional to
      :math:`(\sigma^2)^{-(a_n + 1 + 1/2)} \exp\{-[b_n + \kappa_n (\mu - m_n)^2 / 2]/\sigma^2\}`;
      for any :math:`\sigma^2` it peaks at :math:`\mu = m_n`, where
      :math:`\log p = -(a_n + 3/2)\log\sigma^2 - b_n/\sigma^2`, maximal at

      .. math:: \mu = m_n, \qquad \sigma^2 = \frac{b_n}{a_n + 3/2}.

      (The mode of the marginal :math:`\sigma^2 \sim \mathrm{InvGamma}(a_n, b_n)` is
      :math:`b_n/(a_n+1)`; a mode depends on the parametrisation, this one is of
      :math:`(\mu, \sigma^2)`.) Always defined.
    * ``"mean"``: :math:`\mu = m_n`, :math:`\sigma^2 = E[\sigma^2 \mid D] = b_n/(a_n - 1)`;
      needs :math:`a_n > 1` (else ``ValueError``: the posterior mean of
      :math:`\sigma^2` is infinite).

    Parameters
    ----------
    prior : NormalInverseGamma
    stats : GaussianStats
    kind : {"mle", "map", "mean"}
    var_smoothing : float, default=0.0
        Only used by ``"mle"``.

    Returns
    -------
    GaussianParams
        Arrays of shape (n_classes, n_features).
    """
    if kind == "mle":
        return _mle(stats, var_smoothing)
    post = posterior(prior, stats)
    xp = namespace(post)
    if kind == "map":
        a = xp.asarray(post.concentration)
        return GaussianParams(xp.asarray(post.loc), xp.asarray(post.rate) / (a + 1.5))
    if kind == "mean":
        a = xp.asarray(post.concentration)
        if xp is not np:
            # Traced, no error can be raised: an infinite posterior mean of the variance is NaN.
            loc, var = moments(post)
            return GaussianParams(loc, jnp.where(a <= 1.0, jnp.nan, var))
        if np.any(a <= 1.0):
            c, j = (int(i) for i in np.argwhere(a <= 1.0)[0])
            raise ValueError(
                f"estimate='mean' is undefined: the posterior concentration a_n = {a[c, j]:.4g} "
                f"<= 1 at class index {c}, feature {j}, so the posterior mean of the variance "
                "is infinite. Use a prior with concentration > 1 (a_n = a_0 + N_c / 2), or "
                "estimate='map' or 'predictive'."
            )
        return moments(post)
    raise ValueError(f"unknown point estimate {kind!r}; expected 'mle', 'map' or 'mean'")


def predictive_params(post):
    r"""Student-t posterior predictive of one value per (class, feature).

    Returns
    -------
    df : ndarray of shape (n_classes, n_features)
        :math:`2 a_n`.
    loc : ndarray of shape (n_classes, n_features)
        :math:`m_n`.
    scale : ndarray of shape (n_classes, n_features)
        :math:`\sqrt{b_n (\kappa_n + 1) / (a_n \kappa_n)}` (numpyro's ``StudentT`` scale).
    """
    a = np.asarray(post.concentration, dtype=np.float64)
    k = np.asarray(post.kappa, dtype=np.float64)
    b = np.asarray(post.rate, dtype=np.float64)
    return 2.0 * a, np.asarray(post.loc, dtype=np.float64), np.sqrt((b / a) * ((k + 1.0) / k))


# ----------------------------------------------------------------------------- row kernels


def _map_rows(kernel, X, n_out, args, per_row, target):
    """Apply a row kernel ``kernel(X, *args, xp)`` to ``X`` in chunks, as float64 numpy.

    Full chunks of a power-of-two number of rows run the ``jax.jit`` compiled kernel
    (one compiled shape per model) where there are at least ``_COMPILE_MIN_CHUNKS`` of
    them; the remainder, and data smaller than that, run the same function in numpy,
    which compiles nothing. Each compiled call is dispatched
    before the previous result is read back, so JAX's asynchronous dispatch overlaps
    the copy-in of one chunk with the work on the last.
    """
    n = X.shape[0]
    out = np.empty((n, n_out))
    chunk = max(1 << max(0, (target // max(per_row, 1)).bit_length() - 1), _MIN_CHUNK)
    n_full = (n // chunk) * chunk if n >= _COMPILE_MIN_CHUNKS * chunk else 0
    if n_full:
        compiled = _compiled(kernel)
        with enable_x64():
            jargs = tuple(jnp.asarray(a, dtype=jnp.float64) for a in args)

        def rows(bounds):
            # Within a run, each chunk is dispatched before the previous result is read
            # back, so JAX's asynchronous dispatch overlaps copy-in and work.
            pending = None
            for start in range(bounds[0], bounds[1], chunk):
                result = compiled(X[start : start + chunk], *jargs)
                if pending is not None:
                    out[pending[0] : pending[0] + chunk] = np.asarray(pending[1])
                pending = (start, result)
            out[pending[0] : pending[0] + chunk] = np.asarray(pending[1])

        # Runs of whole chunks on threads (XLA releases the GIL); every row is computed
        # by the same compiled kernel whichever thread runs it.
        map_threads(rows, row_ranges(n_full, chunk), x64=True)
    # The numpy remainder in blocks of at most one chunk's worth of entries, so that a
    # wide model does not allocate (rows, classes, features) temporaries at once.
    step = max(1, target // max(per_row, 1))
    with np.errstate(all="ignore"):
        for start in range(n_full, n, step):
            stop = min(start + step, n)
            out[start:stop] = kernel(X[start:stop], *args, np)
    return out


_COMPILED = {}


def _compiled(kernel):
    if kernel not in _COMPILED:
        _COMPILED[kernel] = jax.jit(lambda X, *args: kernel(X, *args, jnp))
    return _COMPILED[kernel]


def _dot(a, b, xp):
    # BLAS in pieces that run on the calling thread (kernels.gemm): a threaded BLAS call
    # costs milliseconds of thread start-up on a loaded machine, and einsum, which has
    # none, is ten times slower than BLAS on the draws' stacked classes.
    return gemm(a, b) if xp is np else a @ b


def _expansion_kernel(X, centre, inv_var_t, lin_t, const, centred_norm, xp):
    """Plug-in log-likelihood by the quadratic expansion, NaN where it cannot be trusted.

    A (row, class) whose result is not finite, or whose cancelling terms are too large
    for it (see :func:`log_likelihood`), is NaN: the caller recomputes exactly those
    pairs, not whole rows (under stacked posterior draws a flagged row has a few flagged
    draw-classes among hundreds).
    """
    z = X - centre
    quad = _dot(z * z, inv_var_t, xp)
    if xp is np:
        return _expansion_check_inplace(quad, _dot(z, lin_t, xp), const, centred_norm, X.shape[1])
    value = -0.5 * quad + _dot(z, lin_t, xp) + const
    # quad + |centre-to-mean|^2 bounds the magnitude of the cancelling terms.
    limit = _CANCELLATION_LIMIT * (xp.abs(value) + X.shape[1])
    untrusted = ~xp.isfinite(value) | (quad + centred_norm > limit)
    return xp.where(untrusted, xp.nan, value)


def _expansion_check_inplace(quad, lin, const, centred_norm, n_features):
    """The NumPy end of :func:`_expansion_kernel`, in place in ``quad`` and ``lin``.

    The same operations on the same values (the same bits) as the ``jax.numpy`` form,
    with two float temporaries instead of seven: under posterior draws stacked as
    classes these (rows, classes) arrays are the largest of the call, and their
    allocations cost about as much as the arithmetic.
    """
    value = lin
    scratch = np.multiply(quad, 0.5)
    value -= scratch
    value += const
    np.abs(value, out=scratch)
    scratch += n_features
    scratch *= _CANCELLATION_LIMIT
    quad += centred_norm
    untrusted = np.greater(quad, scratch)
    finite = np.isfinite(value)
    untrusted |= np.logical_not(finite, out=finite)
    np.copyto(value, np.nan, where=untrusted)
    return value


def _direct_kernel(X, loc, inv_var, const, xp):
    dev = X[:, None, :] - loc
    return -0.5 * xp.sum(dev * dev * inv_var, axis=-1) + const


def _as_rows(X):
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-d (n_samples, n_features), got shape {X.shape}")
    return np.ascontiguousarray(X)


def log_likelihood(params, X):
    r"""Plug-in log-likelihood :math:`\sum_j \log\mathcal N(x_j; \mu_{cj}, \sigma^2_{cj})`.

    Evaluated as matrix products, after centring every feature at the precision-weighted
    mean of the class means (which changes nothing exactly),

    .. math:: g_j = \frac{\sum_c \mu_{cj} / \sigma^2_{cj}}{\sum_c 1 / \sigma^2_{cj}},

    the centre that minimises :math:`\sum_c (\mu_{cj} - g_j)^2 / \sigma^2_{cj}`:

    .. math::

        \log p(x \mid c) = -\tfrac12 (x - g)^{2} \cdot \sigma_c^{-2}
            + (x - g) \cdot \frac{\mu_c - g}{\sigma_c^2}
            - \tfrac12 \sum_j \Big[\log 2\pi\sigma^2_{cj} + \frac{(\mu_{cj} - g_j)^2}{\sigma^2_{cj}}\Big].

    The expansion subtracts terms of size
    :math:`T = \sum_j [(x_j - g_j)^2 + (\mu_{cj} - g_j)^2]/\sigma^2_{cj}` to get a result
    of size :math:`|L|`; its rounding error is about :math:`\epsilon T`. Without
    centring, :math:`T` grows with the squared offset of the data (features with
    :math:`|\text{mean}|/\text{sd} \sim 10^4` lose eight digits); after it, only class
    means far apart compared with the class spread remain. Weighting by the precisions
    puts the centre at the mean of a class whose variance is far below the others' (a
    feature nearly constant within a class, common in posterior draws: the midpoint of
    the class means left such a class with huge terms for its own rows). The
    (row, class) pairs with :math:`T > 256 (|L| + F)` or a non-finite result are
    recomputed with the direct form :math:`(x - \mu)^2/\sigma^2`, so the result is
    accurate to about :math:`10^{-13}(|L| + F)` everywhere.

    Parameters
    ----------
    params : GaussianParams
        ``loc`` and ``var`` of shape (n_classes, n_features).
    X : ndarray of shape (n_samples, n_features)

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
    """
    if is_traced(params, X):
        return _log_likelihood_traced(params, X)
    X = _as_rows(X)
    loc = np.asarray(params.loc, dtype=np.float64)
    var = np.asarray(params.var, dtype=np.float64)
    n_classes, n_features = loc.shape
    centre = _centre(loc, var)
    inv_var = 1.0 / var
    shift = loc - centre
    log_norm = -0.5 * np.log(2.0 * np.pi * var).sum(axis=1)
    centred_norm = (shift * shift * inv_var).sum(axis=1)
    const = log_norm - 0.5 * centred_norm
    out = _map_rows(
        _expansion_kernel,
        X,
        n_classes,
        (centre, inv_var.T, (shift * inv_var).T, const, centred_norm),
        n_features,
        _PLUGIN_CHUNK_ENTRIES,
    )
    redo = np.isnan(out)
    if redo.any():
        _direct_redo(out, redo, X, loc, inv_var, log_norm)
    return out


def _centre(loc, var):
    """Precision-weighted mean of the class means per feature (see :func:`log_likelihood`).

    The weights are the precisions over the largest precision of the feature, in (0, 1],
    so that no sum overflows; a feature where that fails (an infinite or zero variance)
    is centred at the midpoint of its class means.
    """
    with np.errstate(all="ignore"):
        weight = var.min(axis=0) / var
        centre = (weight * loc).sum(axis=0) / weight.sum(axis=0)
    mid = 0.5 * (loc.max(axis=0) + loc.min(axis=0))
    return np.where(np.isfinite(centre), centre, mid)


def _direct_redo(out, redo, X, loc, inv_var, log_norm):
    """Overwrite the pairs ``redo`` (rows x classes, bool) of ``out`` with the direct form.

    Where the flagged pairs are a small share of their rows' classes (posterior draws
    stacked as classes: a row is flagged for the few draws of a class whose sampled
    variance is tiny), only those pairs are computed, in NumPy: gathering one
    (row, class) pair costs about three times the features, against all the row's
    classes for the row kernel. Otherwise whole rows go to the row kernel (compiled for
    large data, see :func:`_map_rows`).
    """
    n_classes, n_features = loc.shape
    rows = np.flatnonzero(redo.any(axis=1))
    pair_i, pair_c = np.nonzero(redo)
    if pair_i.size * _PAIRWISE_REDO_SHARE > rows.size * n_classes:
        out[rows] = _map_rows(
            _direct_kernel, X[rows], n_classes, (loc, inv_var, log_norm), n_classes * n_features, _T_CHUNK_ENTRIES
        )
        return
    # Pairs in pieces of at most _T_CHUNK_ENTRIES gathered entries.
    step = max(1, _T_CHUNK_ENTRIES // max(1, n_features))
    with np.errstate(all="ignore"):
        for start in range(0, pair_i.size, step):
            i, c = pair_i[start : start + step], pair_c[start : start + step]
            dev = X[i] - loc[c]
            dev *= dev
            dev *= inv_var[c]
            out[i, c] = -0.5 * dev.sum(axis=1) + log_norm[c]


@x64
def _log_likelihood_traced(params, X):
    r""":func:`log_likelihood` under ``jax.jit`` / ``jax.grad``: the direct form
    :math:`-\tfrac12 (x - \mu)^2/\sigma^2` (the CPU path's fallback, which needs no
    cancellation check) on dense ``X``."""
    X = dense_jax(X)
    loc = jnp.asarray(params.loc, dtype=jnp.float64)
    var = jnp.asarray(params.var, dtype=jnp.float64)
    log_norm = -0.5 * jnp.log(2.0 * np.pi * var).sum(axis=1)
    return _direct_kernel(X, loc, 1.0 / var, log_norm, jnp)


def _student_kernel(X, loc, inv_nu_scale2, half_df1, const, xp):
    dev = X[:, None, :] - loc
    return const - xp.sum(half_df1 * xp.log1p(dev * dev * inv_nu_scale2), axis=-1)


def _student_kernel_safe(X, loc, inv_nu_scale2, half_df1, const, xp):
    # log1p(r^2) = 2 log r + log1p(r^-2) where r^2 would overflow.
    r = xp.abs(X[:, None, :] - loc) * xp.sqrt(inv_nu_scale2)
    big = r > 1e150
    r_small = xp.where(big, 0.0, r)
    r_big = xp.where(big, r, 1.0)
    term = xp.where(big, 2.0 * xp.log(r_big) + xp.log1p(1.0 / (r_big * r_big)), xp.log1p(r_small * r_small))
    return const - xp.sum(half_df1 * term, axis=-1)


# Above this, log Γ(a + x) - log Γ(a) is taken from the difference of Stirling series
# (truncation error below 1 / (1188 a^9) < 1e-16), as in bayesnb.core._special.
_STIRLING_FROM = 30.0


def _stirling_tail(z):
    z2 = z * z
    return (1.0 / 12.0 - (1.0 / 360.0 - (1.0 / 1260.0 - 1.0 / (1680.0 * z2)) / z2) / z2) / z


def _log_rising(a, x):
    r""":math:`\log\Gamma(a + x) - \log\Gamma(a)` in numpy, with the algorithm of
    :func:`bayesnb.core._special.log_rising_factorial` (full precision for large ``a``).

    The parameter arrays here are small and change shape with every model; numpy
    avoids compiling JAX primitives for each new shape.
    """
    a, x = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(x, dtype=np.float64))
    out = np.empty(a.shape)
    large = a >= _STIRLING_FROM
    al, xl = a[large], x[large]
    out[large] = (
        xl * np.log(al) + (al + xl - 0.5) * np.log1p(xl / al) - xl + _stirling_tail(al + xl) - _stirling_tail(al)
    )
    out[~large] = gammaln(a[~large] + x[~large]) - gammaln(a[~large])
    return out


def _student_const(post):
    a = np.asarray(post.concentration, dtype=np.float64)
    k = np.asarray(post.kappa, dtype=np.float64)
    b = np.asarray(post.rate, dtype=np.float64)
    # log Γ(a + 1/2) - log Γ(a) - ½ log(2π b (κ + 1)/κ), the t normaliser with ν = 2a.
    per_cell = _log_rising(a, 0.5) - 0.5 * (np.log(2.0 * np.pi * b) + np.log1p(1.0 / k))
    return per_cell.sum(axis=1)


def log_predictive(post, X):
    r"""Exact posterior predictive :math:`\log p(x \mid y=c, D)`, shape (n_samples, n_classes).

    A sum over features of Student-t log densities with :math:`\nu = 2a_n`, location
    :math:`m_n` and :math:`\nu s^2 = 2 b_n (\kappa_n + 1)/\kappa_n`:

    .. math::

        \sum_j \log\frac{\Gamma(a_n + \frac12)}{\Gamma(a_n)}
            - \tfrac12 \log\frac{2\pi b_n (\kappa_n + 1)}{\kappa_n}
            - (a_n + \tfrac12) \,\mathrm{log1p}\!\Big(\frac{(x_j - m_n)^2 \kappa_n}{2 b_n (\kappa_n + 1)}\Big).

    Parameters
    ----------
    post : NormalInverseGamma
        Posterior of shape (n_classes, n_features).
    X : ndarray of shape (n_samples, n_features)

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
    """
    if is_traced(post, X):
        return _log_predictive_traced(post, X)
    X = _as_rows(X)
    a = np.asarray(post.concentration, dtype=np.float64)
    k = np.asarray(post.kappa, dtype=np.float64)
    b = np.asarray(post.rate, dtype=np.float64)
    loc = np.asarray(post.loc, dtype=np.float64)
    n_classes, n_features = loc.shape
    args = (loc, (k / (k + 1.0)) / (2.0 * b), a + 0.5, _student_const(post))
    out = _map_rows(_student_kernel, X, n_classes, args, n_classes * n_features, _T_CHUNK_ENTRIES)
    bad = ~np.all(np.isfinite(out), axis=1)
    if bad.any():
        out[bad] = _map_rows(_student_kernel_safe, X[bad], n_classes, args, n_classes * n_features, _T_CHUNK_ENTRIES)
    return out


@x64
def _log_predictive_traced(post, X):
    """:func:`log_predictive` under ``jax.jit`` / ``jax.grad``: the same Student-t sum,
    in ``jax.numpy`` on dense ``X``, with the normaliser from
    :func:`bayesnb.core._special.log_rising_factorial` (the same algorithm as ``_log_rising``)."""
    from bayesnb.core._special import log_rising_factorial

    X = dense_jax(X)
    a, k, b, loc = (jnp.asarray(f, dtype=jnp.float64) for f in (post.concentration, post.kappa, post.rate, post.loc))
    const = (log_rising_factorial(a, 0.5) - 0.5 * (jnp.log(2.0 * np.pi * b) + jnp.log1p(1.0 / k))).sum(axis=1)
    return _student_kernel_safe(X, loc, (k / (k + 1.0)) / (2.0 * b), a + 0.5, const, jnp)


# ----------------------------------------------------------------------------- evidence, draws


def log_evidence_cells(n, kappa, concentration, rate, m2, dev, xp=np):
    r"""Log marginal likelihood of each (class, feature) cell, from its statistics.

    .. math::

        \log p(D_{cj}) = -\frac{N}{2}\log 2\pi + \frac12\log\frac{\kappa_0}{\kappa_n}
            + a_0 \log b_0 - a_n \log b_n + \log\Gamma(a_n) - \log\Gamma(a_0),

    evaluated as :math:`-\tfrac12\mathrm{log1p}(N/\kappa_0) - a_0\,\mathrm{log1p}((b_n -
    b_0)/b_0) - \tfrac N2 \log b_n` plus the log rising factorial
    :math:`\log\Gamma(a_0 + N/2) - \log\Gamma(a_0)`, which keeps full precision when
    :math:`N` is small next to the prior or large. The one implementation of the NIG
    evidence: :func:`log_evidence` sums it in numpy, the empirical-Bayes optimiser
    (:mod:`bayesnb.core.empirical_bayes`) differentiates it with ``xp=jax.numpy``.

    Parameters
    ----------
    n : array broadcastable to the cells
        Weighted counts :math:`N`.
    kappa, concentration, rate : arrays
        Prior :math:`\kappa_0, a_0, b_0` (> 0).
    m2 : array
        :math:`M_2`, the weighted sum of squared deviations from the cell mean.
    dev : array
        :math:`\bar x - m_0`.
    xp : module, default numpy
        ``numpy`` or ``jax.numpy`` (then differentiable in every argument).

    Returns
    -------
    array of the broadcast shape
    """
    if xp is np:
        log_rising = _log_rising
    else:
        from bayesnb.core._special import log_rising_factorial as log_rising
    inc = _increment(n, kappa, m2, dev)
    return (
        -0.5 * n * np.log(2.0 * np.pi)
        - 0.5 * xp.log1p(n / kappa)
        - concentration * xp.log1p(inc / rate)
        - 0.5 * n * xp.log(rate + inc)
        + log_rising(concentration, 0.5 * n)
    )


def log_evidence(prior, stats):
    r"""Log marginal likelihood of the features given the labels, summed over (class, feature).

    .. math::

        \log p(D) = \sum_{c,j} -\frac{N_c}{2}\log 2\pi + \frac12\log\frac{\kappa_0}{\kappa_n}
            + a_0 \log b_0 - a_n \log b_n + \log\Gamma(a_n) - \log\Gamma(a_0),

    with :math:`N_c` the weighted count (per cell: :func:`log_evidence_cells`).

    Returns
    -------
    float
        The registered ``family.log_evidence`` is the traceable form of this function
        (a 0-d float64 JAX array, under ``jax.jit`` and ``jax.grad`` in every
        hyperparameter, in the library's float64 scope :mod:`bayesnb.core._x64`).
    """
    return float(_evidence(prior, stats))


def _evidence(prior, stats):
    # One compiled kernel per shape.
    return _log_evidence_jit(tuple(prior), (stats.class_count, stats.mean, stats.m2, getattr(stats, "mean_residual", 0.0)))


@x64
@jax.jit
def _log_evidence_jit(prior, stats):
    loc, kappa, concentration, rate = (jnp.asarray(f, dtype=jnp.float64) for f in prior)
    count, mean, m2, residual = (jnp.asarray(f, dtype=jnp.float64) for f in stats)
    n = jnp.broadcast_to(count[:, None], rate.shape)
    # As _deviation: the low-order part of the mean keeps digits far from 0.
    dev = (mean - loc) + residual
    return jnp.sum(log_evidence_cells(n, kappa, concentration, rate, m2, dev, xp=jnp))


def relevance_log_bayes_factor(prior, stats):
    r"""Per-feature log Bayes factor: class-specific :math:`(\mu_{cj}, \sigma^2_{cj})` against one shared pair.

    Model :math:`M_1` is this family (one NIG-distributed :math:`(\mu, \sigma^2)` per
    class and feature); :math:`M_0` gives feature :math:`j` one
    :math:`(\mu_j, \sigma^2_j)` for all classes, under the same NIG prior, so its
    evidence is that of the pooled rows (:func:`pooled`):

    .. math:: \log\mathrm{BF}_j = \sum_c \log p(D_{cj}) - \log p(D_{\cdot j}).

    Parameters
    ----------
    prior : NormalInverseGamma
        Arrays of shape (n_classes, n_features), equal across classes.
    stats : GaussianStats

    Returns
    -------
    ndarray of shape (n_features,)

    Raises
    ------
    ValueError
        If the prior differs between classes.
    """
    fields = [np.asarray(f, dtype=np.float64) for f in prior]
    if not all(np.array_equal(f, np.broadcast_to(f[:1], f.shape)) for f in fields):
        raise ValueError(
            "the relevance Bayes factor compares class-specific parameters with one "
            "parameter shared by all classes, which needs one prior per feature shared by "
            "the classes; this prior differs between classes"
        )
    n, _, m2 = _arrays(stats)
    separate = log_evidence_cells(
        n, prior.kappa, prior.concentration, prior.rate, m2, _deviation(stats, np.asarray(prior.loc))
    ).sum(axis=0)
    total, mean, var = pooled(stats)
    loc, kappa, conc, rate = (f[0] for f in fields)
    shared = log_evidence_cells(total, kappa, conc, rate, total * var, mean - loc)
    return separate - shared


# Draws are made as one flat vector whose length is rounded up to a power of two (at
# least this), so that the compiled sampler (a rejection loop, slow to compile) is
# shared by every small request and recompiled only once per size class.
_MIN_DRAW_BUCKET = 1 << 12


@functools.partial(jax.jit, static_argnums=2)
def _nig_draws(key, params, size):
    a, b, k, m = params
    key_var, key_loc = jax.random.split(key)
    log_precision_unit = _sampling.log_gamma(key_var, a, (size,))
    log_var = jnp.log(b) - log_precision_unit
    z = _sampling.normal(key_loc, (size,))
    return m + jnp.exp(0.5 * (log_var - jnp.log(k))) * z, jnp.exp(log_var)


@x64
def sample(key, post, n):
    r"""``n`` exact iid draws of :math:`(\mu, \sigma^2)` from the NIG posterior.

    :math:`1/\sigma^2 \sim \mathrm{Gamma}(a_n, \text{rate}=b_n)` (drawn as a log-Gamma
    variate, so tiny shapes do not underflow to zero), then
    :math:`\mu \mid \sigma^2 \sim \mathcal N(m_n, \sigma^2/\kappa_n)`. The key is split
    into one key for the variances and one for the means. On concrete inputs the
    variates are NumPy's (:mod:`bayesnb.core._sampling`); under a trace, ``jax.random``'s
    with the same keys (the same distribution, not the same numbers).

    Parameters
    ----------
    key : jax.random key
    post : NormalInverseGamma
    n : int

    Returns
    -------
    GaussianParams
        Arrays of shape (n, n_classes, n_features).
    """
    if not is_traced(key, post):
        shape = (int(n),) + np.shape(post.concentration)
        a, b, k, m = (
            np.broadcast_to(np.asarray(f, dtype=np.float64), shape)
            for f in (post.concentration, post.rate, post.kappa, post.loc)
        )
        key_var, key_loc = _sampling.split(key)
        log_var = np.log(b) - _sampling.log_gamma(key_var, a, shape)
        z = _sampling.normal(key_loc, shape)
        return GaussianParams(m + np.exp(0.5 * (log_var - np.log(k))) * z, np.exp(log_var))
    # Traced: the padded vectors of one size class (one compilation of the rejection loop).
    xp = jnp
    a = xp.asarray(post.concentration, dtype=np.float64)
    shape = (int(n),) + a.shape
    total = int(np.prod(shape))
    size = max(_MIN_DRAW_BUCKET, 1 << max(0, (total - 1).bit_length()))
    fill = (1.0, 1.0, 1.0, 0.0)
    params = tuple(
        xp.concatenate(
            [xp.broadcast_to(xp.asarray(f, dtype=np.float64), shape).ravel(), xp.full(size - total, pad)]
        )
        for f, pad in zip((post.concentration, post.rate, post.kappa, post.loc), fill)
    )
    loc, var = _nig_draws(key, params, size)
    return GaussianParams(loc[:total].reshape(shape), var[:total].reshape(shape))


def simulate(key, params, y_index):
    r"""Real rows given parameters and labels: :math:`x_{ij} \sim \mathcal N(\mu_{y_i j}, \sigma^2_{y_i j})`.

    Parameters
    ----------
    key : jax.random key
    params : GaussianParams
        ``loc`` and ``var`` of shape (n_classes, n_features), or with a leading row axis.
    y_index : int array of shape (n_rows,)

    Returns
    -------
    float64 ndarray of shape (n_rows, n_features)
    """
    loc = _rows.of_class(params.loc, y_index, 1)
    var = _rows.of_class(params.var, y_index, 1)
    return loc + np.sqrt(var) * _rows.generator(key).standard_normal(loc.shape)


_masked_log_likelihood = _mask.masked_log_likelihood(log_likelihood)


def expected_log_likelihood(post, X, mask=None):
    r""":math:`E_q[\sum_j \log\mathcal N(x_j; \mu_{cj}, \sigma^2_{cj})]` under the NIG ``post``, shape (n_samples, n_classes).

    With :math:`E[1/\sigma^2] = a/b`, :math:`E[\log\sigma^2] = \log b - \psi(a)` and
    :math:`E[(x - \mu)^2/\sigma^2] = (a/b)(x - m)^2 + 1/\kappa`, each term is the plug-in
    :math:`\log\mathcal N(x_j; m, b/a)` plus :math:`\tfrac12(\psi(a) - \log a) - 1/(2\kappa)`
    (the plug-in kernel keeps its accuracy far from the origin).
    """
    from scipy.special import digamma

    a = np.asarray(post.concentration, dtype=np.float64)
    b = np.asarray(post.rate, dtype=np.float64)
    kappa = np.asarray(post.kappa, dtype=np.float64)
    out = _masked_log_likelihood(GaussianParams(np.asarray(post.loc, dtype=np.float64), b / a), X, mask=mask)
    return _mask.add_per_feature(out, 0.5 * (digamma(a) - np.log(a)) - 0.5 / kappa, mask)


def log_density(dist, params, raise_by=0.0):
    r"""Log NIG density of :math:`(\mu, \sigma^2)` (Lebesgue measure on both, the measure of ``point``'s ``"map"``), summed.

    .. math:: \log\mathcal N(\mu; m, \sigma^2/\kappa) + a\log b - \log\Gamma(a) - (a + 1)\log\sigma^2 - b/\sigma^2

    Raises
    ------
    ValueError
        For ``raise_by != 0``: the Normal-Inverse-Gamma has no Dirichlet/Beta/Gamma
        concentration for Laplace smoothing to raise.
    """
    if raise_by != 0:
        raise ValueError(
            "Laplace smoothing raises Dirichlet, Beta and Gamma concentrations; the Gaussian "
            "family's Normal-Inverse-Gamma prior has none (use smoothing='none': the MAP under the prior)"
        )
    m = np.asarray(dist.loc, dtype=np.float64)
    kappa = np.asarray(dist.kappa, dtype=np.float64)
    a = np.asarray(dist.concentration, dtype=np.float64)
    b = np.asarray(dist.rate, dtype=np.float64)
    mu = np.asarray(params.loc, dtype=np.float64)
    var = np.asarray(params.var, dtype=np.float64)
    normal = -0.5 * (np.log(2 * np.pi) + np.log(var / kappa) + kappa * (mu - m) ** 2 / var)
    inv_gamma = a * np.log(b) - gammaln(a) - (a + 1.0) * np.log(var) - b / var
    return float(np.sum(normal + inv_gamma))


def check_spread(stats):
    """Refuse statistics of a feature whose values spread over less than 2**-500 (but not 0).

    Judged on the range of every feature over all the rows behind ``stats``
    (:func:`bayesnb.core.stats.feature_range`: the union of the batches that ``partial_fit``
    or the shards merged, so chained ``partial_fit`` and ``fit`` on the same rows are
    judged alike), with the criterion and message of
    :func:`bayesnb.core._validation.check_gaussian_spread`: the squared deviations of a
    tinier spread lose their digits in float64, and the fit would be silently uniform.
    A constant feature (spread 0) is left to the prior. Nothing is checked under a JAX
    trace (values unknown).

    Parameters
    ----------
    stats : GaussianStats, MaskedGaussianStats or ScatterStats

    Raises
    ------
    bayesnb.core._validation.SpreadError
        A ``ValueError`` naming the first such feature (0-based, its position in the
        statistics) and its spread; the estimators rename it in the user's terms (the
        DataFrame column, a :class:`~bayesnb.MixedNB` block's column of ``X``).
    """
    if is_traced(stats):
        return
    check_gaussian_spread(np.stack(feature_range(stats)))


_cellwise_posterior = _mask.cellwise(posterior)


def _posterior(prior, stats):
    """The family's ``posterior`` member: :func:`posterior` of the merged statistics, after :func:`check_spread`."""
    check_spread(stats)
    return _cellwise_posterior(prior, stats)


def _stats(X, y_index, n_classes, weight=None, mask=None):
    # The spread of the values is judged on the merged statistics (check_spread, by the
    # posterior and the default prior), not batch by batch: a batch narrower than 2**-500
    # is fine among wider ones, as it is within the rows of one fit.
    if mask is None:
        return gaussian_stats(X, y_index, n_classes, weight)
    return masked_gaussian_stats(X, mask, y_index, n_classes, weight)


# ----------------------------------------------------------------------------- unobserved entries
#
# Per-cell statistics (MaskedGaussianStats) update each (class, feature) cell on the rows
# that observe the feature (bayesnb.core.families._mask.cellwise). What is pooled over classes
# (the default prior's scale, the "mle" variance floor) is pooled per feature over the
# rows that observe it: features are grouped by their per-class observed weights N_cj
# (most share N_c), and each group is ordinary GaussianStats.


def _observed_groups(stats):
    """Features grouped by identical per-class observed weights, each as ``(cols, GaussianStats)``."""
    observed = np.asarray(stats.observed_count, dtype=np.float64)
    _, inverse = np.unique(observed.T, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    groups = [np.flatnonzero(inverse == g) for g in range(int(inverse.max(initial=-1)) + 1)]
    return [(cols, stats.columns(cols)) for cols in groups]


def _pooled_var_by_feature(stats):
    """Pooled variance of every feature over the rows that observe it (0 if none do)."""
    var = np.zeros(np.shape(stats.mean)[1])
    for cols, part in _observed_groups(stats):
        if part.class_count.sum() > 0:
            var[cols] = pooled(part)[2]
    return var


def _masked_default_prior(stats):
    """:func:`default_prior` of per-cell statistics, scaled per feature to its observed values."""
    parts, index = [], []
    for cols, part in _observed_groups(stats):
        if part.class_count.sum() <= 0:
            part = part._replace(class_count=np.ones_like(part.class_count))  # no data: zero mean, unit scale
        parts.append(default_prior(part))
        index.append(cols)
    order = np.argsort(np.concatenate(index))
    return NormalInverseGamma(*(np.concatenate([np.asarray(p[f]) for p in parts], axis=1)[:, order] for f in range(4)))


_cell_point = _mask.cellwise(point)


def _masked_point(prior, stats, kind, *, var_smoothing=0.0):
    """:func:`point` that also takes per-cell statistics."""
    if is_masked(stats) and kind == "mle":
        # scikit-learn's floor is var_smoothing times the largest pooled variance of a
        # feature (here over its observed values); in the cell view, where each cell is
        # a class of one feature, the same floor is var_smoothing' times the cells' max.
        epsilon = mle_epsilon(stats, var_smoothing)
        pooled_max = float(pooled(stats.cells())[2].max(initial=0.0))
        var_smoothing = epsilon / pooled_max if pooled_max > 0 else 0.0
    return _cell_point(prior, stats, kind, var_smoothing=var_smoothing)


# ----------------------------------------------------------------------------- numpyro model
# Imported here, with the rest of the model, rather than at the top: these members are
# appended to the family (numpyro itself is imported on first use by _models).
from bayesnb.core.families import _models  # noqa: E402


class GaussianModel(_models.ModelSpec):
    r"""The numpyro model: ``var`` :math:`\sim \mathrm{InvGamma}(a_0, b_0)`, ``loc`` :math:`\sim \mathcal N(m_0, \sigma^2/\kappa_0)`."""

    variables = {"loc": ("class", "feature"), "var": ("class", "feature")}
    title = "Gaussian (diagonal, Normal-Inverse-Gamma)"
    data = "real values"
    example = (
        "X, y = np.array([[0.1, 1.2], [2.0, -1.0]]), np.array([0, 1]); "
        "prior = priors.NormalInverseGamma(*np.ones((4, 2, 2)))"
    )
    parents = "['loc', 'var', 'y']"

    def sample_params(self, n_classes, feature):
        p, numpyro, dist, real = self.prior, _models.numpyro, _models.dist, _models.real
        with _models.class_plate(n_classes), _models.feature_plate(feature, self.n_features()):
            var = numpyro.sample("var", dist.InverseGamma(real(p.concentration), real(p.rate)))
            loc = numpyro.sample("loc", dist.Normal(real(p.loc), jnp.sqrt(var / real(p.kappa))))
        return {"loc": loc, "var": var}

    def observe(self, values, X, y, feature, n_rows, weight):
        with _models.data_plate(n_rows), _models.feature_plate(feature, self.n_features()), _models.weighted(weight):
            _models.numpyro.sample("x", _models.dist.Normal(values["loc"][y], jnp.sqrt(values["var"][y])), obs=X)

    def log_likelihood_stats(self, values, stats):
        real = _models.real
        n = _models.cell_count(stats)
        # In jax.numpy: the statistics may be arguments of the compiled NUTS program.
        mean = real(stats.mean)
        resid = jnp.broadcast_to(real(getattr(stats, "mean_residual", 0.0)), mean.shape)
        # (mean - loc) with the mean's low-order part, so that data far from 0 keep their digits.
        d = (mean - values["loc"]) + resid
        var = values["var"]
        return jnp.sum(-0.5 * n * jnp.log(2 * jnp.pi * var) - (real(stats.m2) + n * d * d) / (2 * var))

    def values(self, params):
        return {"loc": np.asarray(params.loc), "var": np.asarray(params.var)}

    def moments(self, post):
        a = np.asarray(post.concentration, dtype=np.float64)
        b = np.asarray(post.rate, dtype=np.float64)
        k = np.asarray(post.kappa, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            # mu is Student-t with 2a degrees of freedom, location m, squared scale b/(a kappa).
            loc = (
                np.where(a > 0.5, np.asarray(post.loc, dtype=np.float64), np.nan),
                np.where(a > 1, np.sqrt(b / ((a - 1) * k)), np.inf),
            )
            var = (np.where(a > 1, b / (a - 1), np.inf), np.where(a > 2, b / ((a - 1) * np.sqrt(a - 2)), np.inf))
        return {"loc": loc, "var": var}


def recognise(view):
    r"""Normal-Inverse-Gamma–Normal in a user's numpyro model (the family's ``recognise`` member).

    ``var ~ InverseGamma(a, b)``, ``loc ~ Normal(m, sqrt(var / kappa))`` per (class,
    feature), ``x ~ Normal(loc[y], sqrt(var[y]))``. ``kappa`` is read as
    ``var / scale(loc)**2``, which must be the same constant in every probe of the
    model (a mean whose prior scale does not follow the variance is not conjugate).

    Parameters
    ----------
    view : bayesnb.ppl.compile.SiteView

    Returns
    -------
    Recognised or None
        None when the site is not Normal.
    """
    if view.likelihood_kind != "Normal":
        return None
    expect = (
        "Normal-Inverse-Gamma–Normal: x ~ Normal(loc[y], sqrt(var[y])) with var ~ InverseGamma(a, b) and "
        "loc ~ Normal(m, sqrt(var / kappa)) per (class, feature)"
    )
    tail = (view.n_columns,)
    loc = view.link("loc", "Normal", tail, expect=expect)
    var = view.link("scale", "InverseGamma", tail, transform=np.square, param_name="scale**2", expect=expect)
    kappa = view.constant(
        lambda probe: probe.value(var) / np.square(probe.param(loc, "scale")),
        loc.site,
        f"the prior scale of {loc.site!r} must be sqrt({var.site} / kappa) with a constant kappa ({expect})",
    )
    prior = NormalInverseGamma(
        view.field(loc, "loc"), kappa, view.field(var, "concentration"), view.field(var, "rate")
    )
    return view.recognised(prior, loc=loc, var=var)


family = register(
    Family(
        name="gaussian",
        prior_type=NormalInverseGamma,
        support="real",
        hyperparameters=("loc", "kappa", "concentration", "rate"),
        stats=_stats,
        posterior=_posterior,
        point=_masked_point,
        log_likelihood=_masked_log_likelihood,
        log_predictive=_mask.masked_log_predictive(log_predictive),
        log_evidence=_mask.cellwise(_evidence),
        sample=sample,
        simulate=lambda key, params, y_index, stats=None: simulate(key, params, y_index),
        default_prior=default_prior,
        relevance_log_bayes_factor=relevance_log_bayes_factor,
        model=GaussianModel,
        expected_log_likelihood=expected_log_likelihood,
        log_density=log_density,
        recognise=recognise,
    )
)
