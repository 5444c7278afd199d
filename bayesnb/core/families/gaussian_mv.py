r"""Multivariate Gaussian family: per-class ("full") or one shared covariance, NIW prior.

Class-conditional model :math:`x \mid y=c \sim \mathcal N(\mu_c, \Sigma_c)` with either a
covariance per class (quadratic decision boundaries, QDA) or one covariance
:math:`\Sigma_c = \Sigma` for every class (linear boundaries, LDA). The prior is the
Normal-Inverse-Wishart :math:`\mathrm{NIW}(m_0, \kappa_0, \nu_0, \Psi_0)`:

.. math::

    \Sigma \sim \mathcal W^{-1}(\Psi_0, \nu_0), \qquad
    \mu \mid \Sigma \sim \mathcal N(m_0, \Sigma / \kappa_0).

Which of the two models a prior or posterior describes is read from its shape: a
:class:`~bayesnb.core.priors.NormalInverseWishart` whose ``scale`` has shape
(n_classes, F, F) is per class ("full"); one whose ``scale`` has shape (F, F) (and a
scalar ``df``) is shared, with one :math:`\mu_c \mid \Sigma \sim \mathcal N(m_{0c},
\Sigma/\kappa_{0c})` per class. Likewise a :class:`GaussianParams` holds one shared
covariance when ``scale_tril.ndim == loc.ndim`` ((F, F) next to (C, F)).

With weighted statistics :math:`N_c, \bar x_c, S_c` (:class:`bayesnb.core.stats.ScatterStats`),
write :math:`\kappa_{nc} = \kappa_{0c} + N_c`,
:math:`m_{nc} = (\kappa_{0c} m_{0c} + N_c \bar x_c)/\kappa_{nc}` and

.. math::

    B_c = S_c + \frac{\kappa_{0c} N_c}{\kappa_{nc}} (\bar x_c - m_{0c})(\bar x_c - m_{0c})^\top.

*Full*: :math:`\nu_{nc} = \nu_{0c} + N_c`, :math:`\Psi_{nc} = \Psi_{0c} + B_c`.
*Shared*: :math:`\nu_n = \nu_0 + \sum_c N_c`, :math:`\Psi_n = \Psi_0 + \sum_c B_c`, and
:math:`\mu_c \mid \Sigma, D \sim \mathcal N(m_{nc}, \Sigma/\kappa_{nc})` independently.

In both cases the exact posterior predictive of a new row of class :math:`c` is the
multivariate Student-t with :math:`d = \nu_n - F + 1` degrees of freedom, location
:math:`m_{nc}` and shape matrix :math:`\Psi_n (\kappa_{nc} + 1) / (\kappa_{nc}\, d)`.

All linear algebra goes through Cholesky factors: log determinants are sums of log
diagonals, quadratic forms are squared norms of whitened rows :math:`L^{-1}(x - \mu)`
(the inverse of the triangular factor, formed once by a triangular solve against the
identity, is as accurate as solving every row); no covariance is inverted (the precision
matrices that :func:`quadratic_form` returns are its output, formed by Cholesky
solves). Everything runs in float64 (:mod:`bayesnb.core._x64`). The densities of
concrete inputs run in NumPy/BLAS on the host, with the derived factors cached per
parameter set, and compile nothing; traced inputs (``jax.jit``, ``jax.grad``) take the
``jax.numpy`` path.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import cho_solve, solve_triangular

from bayesnb.core import _sampling
from bayesnb.core._special import log_rising_factorial, log_rising_factorial_np
from bayesnb.core._x64 import x64
from bayesnb.core.families import _mask, _rows
from bayesnb.core.families.gaussian import _CANCELLATION_LIMIT, check_spread
from bayesnb.core.families.protocol import Family, register
from bayesnb.core.kernels import ParamCache, dense_jax, gemm, host, is_traced, map_threads, namespace, row_ranges
from bayesnb.core.priors import NormalInverseWishart, real_array
from bayesnb.core.stats import dense_mask, scatter_stats

__all__ = [
    "family",
    "GaussianParams",
    "is_shared",
    "default_prior",
    "check_prior",
    "posterior",
    "point",
    "log_likelihood",
    "log_predictive",
    "log_evidence",
    "sample",
    "simulate",
    "covariance",
    "diagonal_params",
    "quadratic_form",
    "linear_form",
]

# A covariance whose smallest eigenvalue is at most ``F * eps`` times its largest is
# numerically singular: numpy.linalg.matrix_rank's default criterion.
_EPS = np.finfo(np.float64).eps

# Weakly-informative default prior (Fraley & Raftery 2007; mclust's ``defaultPrior``).
_DEFAULT_KAPPA = 0.01
_DEFAULT_FLOOR = 1e-9


class GaussianParams(NamedTuple):
    """Plug-in (or sampled) parameters of the class-conditional Gaussians.

    Attributes
    ----------
    loc : ndarray of shape (..., n_classes, n_features)
        Class means :math:`\\mu_c`.
    scale_tril : ndarray of shape (..., n_classes, n_features, n_features) or (..., n_features, n_features)
        Lower Cholesky factor :math:`L` of the covariance, :math:`\\Sigma = L L^\\top`
        (numpyro's name); one per class ("full") or one shared by every class.
    """

    loc: np.ndarray
    scale_tril: np.ndarray


def is_shared(niw):
    """True when the NIW prior/posterior ``niw`` has one covariance shared by every class."""
    return np.ndim(niw.scale) == 2


def _params_shared(params):
    return np.ndim(params.scale_tril) == np.ndim(params.loc)


# ----------------------------------------------------------------------------- priors


def _pooled_moments(stats):
    """Weighted overall mean and biased variances of the rows behind ``stats``."""
    n_c = np.asarray(stats.class_count, dtype=np.float64)
    means = np.asarray(stats.mean, dtype=np.float64)
    n = n_c.sum()
    if n <= 0:
        raise ValueError("the default prior is scaled to the data, and no row carries weight")
    mean = (n_c[:, None] * means).sum(axis=0) / n
    between = (n_c[:, None] * (means - mean) ** 2).sum(axis=0)
    within = np.einsum("cjj->j", np.asarray(stats.scatter, dtype=np.float64))
    return mean, (within + between) / n


def default_prior(stats, shared):
    r"""Weakly-informative NIW prior scaled to the pooled data (empirical Bayes).

    Follows Fraley & Raftery (2007), the default prior of mclust, with a diagonal scale:

    .. math::

        m_0 = \bar x, \quad \kappa_0 = 0.01, \quad \nu_0 = F + 2, \quad
        \Psi_0 = \mathrm{diag}\big(v / C^{2/F} + 10^{-9} \max_j v_j\big)

    where :math:`\bar x` and :math:`v` are the weighted mean and (biased) variance of each
    feature over all rows of all classes, and :math:`C` the number of classes. With
    :math:`\nu_0 = F + 2` (the smallest integer degrees of freedom for which
    :math:`E[\Sigma]` exists) the prior mean of each covariance is
    :math:`\Psi_0 / (\nu_0 - F - 1) = \Psi_0`: the overall variance shrunk to the volume
    of one of :math:`C` classes, with no prior correlation. The tiny floor keeps
    :math:`\Psi_0` positive definite when a feature is constant (scale 1 if every
    feature is). :math:`\kappa_0 = 0.01` lets the class means follow the data.

    The prior is a function of the pooled statistics alone, so ``fit``, chained
    ``partial_fit`` and merged shards all give the same prior; but because it is chosen
    from the data, the log evidence under it is an empirical-Bayes quantity (the
    chain rule of predictives holds only for a prior fixed before seeing the data).

    Parameters
    ----------
    stats : ScatterStats
    shared : bool
        One covariance for every class (scale of shape (F, F), scalar df) or one per
        class (scale of shape (C, F, F), df of shape (C,)).

    Returns
    -------
    NormalInverseWishart
    """
    check_spread(stats)
    n_classes, n_features = np.shape(stats.mean)
    mean, var = _pooled_moments(stats)
    top = var.max(initial=0.0)
    diag = var / n_classes ** (2.0 / n_features) + _DEFAULT_FLOOR * (top if top > 0 else 1.0)
    scale = np.diag(diag)
    df = float(n_features + 2)
    loc = np.broadcast_to(mean, (n_classes, n_features)).copy()
    kappa = np.full(n_classes, _DEFAULT_KAPPA)
    if shared:
        return NormalInverseWishart(loc, kappa, np.asarray(df), scale)
    return NormalInverseWishart(
        loc, kappa, np.full(n_classes, df), np.broadcast_to(scale, (n_classes, n_features, n_features)).copy()
    )


def _as_float_array(value, name):
    return real_array(value, f"prior.{name}")


def _broadcast(arr, shape, name, what):
    try:
        return np.broadcast_to(arr, shape).copy()
    except ValueError:
        raise ValueError(f"prior.{name} has shape {arr.shape}, which does not broadcast to {shape} ({what})") from None


def _check_positive_definite(scale, name, label):
    """Raise unless every (F, F) matrix in ``scale`` is symmetric and positive definite."""
    mats = scale.reshape((-1,) + scale.shape[-2:])
    for c, m in enumerate(mats):
        where = f" of {label} {c}" if scale.ndim == 3 else ""
        top = np.abs(m).max(initial=0.0)
        if np.abs(m - m.T).max(initial=0.0) > 1e-10 * top:
            raise ValueError(f"{name}{where} is not symmetric")
        eig = np.linalg.eigvalsh(m)
        if eig[-1] <= 0 or eig[0] <= m.shape[0] * _EPS * eig[-1]:
            raise ValueError(
                f"{name}{where} is not positive definite (eigenvalues from {eig[0]:.3g} to {eig[-1]:.3g})"
            )


def check_prior(prior, n_classes, n_features, shared):
    r"""Validate an NIW prior and broadcast it to the canonical shapes.

    Parameters
    ----------
    prior : NormalInverseWishart
        ``loc`` broadcastable to (C, F); ``kappa`` (> 0) broadcastable to (C,); ``df``
        a scalar (> F - 1), or for per-class covariances broadcastable to (C,);
        ``scale`` symmetric positive definite, (F, F) (shared, or the same for every
        class) or (C, F, F) (per class, "full" only).
    n_classes, n_features : int
    shared : bool

    Returns
    -------
    NormalInverseWishart
        ``loc`` (C, F), ``kappa`` (C,), and ``df`` () with ``scale`` (F, F) when
        ``shared``, else ``df`` (C,) with ``scale`` (C, F, F). The scale is symmetrised
        (round-off asymmetry up to 1e-10 of its largest entry is accepted).

    Raises
    ------
    TypeError
        ``prior`` is not a NormalInverseWishart, or a field is not numeric.
    ValueError
        A field has the wrong shape, is not finite, or is out of range.
    """
    if not isinstance(prior, NormalInverseWishart):
        raise TypeError(
            f"prior must be a bayesnb.core.priors.NormalInverseWishart or None, got {type(prior).__name__}"
        )
    C, F = n_classes, n_features
    loc = _broadcast(_as_float_array(prior.loc, "loc"), (C, F), "loc", "n_classes, n_features")
    kappa = _broadcast(_as_float_array(prior.kappa, "kappa"), (C,), "kappa", "n_classes")
    if np.any(kappa <= 0):
        raise ValueError(f"prior.kappa must be > 0, got min {kappa.min():g}")
    df = _as_float_array(prior.df, "df")
    scale = _as_float_array(prior.scale, "scale")
    if shared:
        if df.size != 1:
            raise ValueError(
                f"prior.df has shape {df.shape}; covariance='shared' has one inverse-Wishart, so df must be a scalar"
            )
        df = df.reshape(())
        if scale.shape != (F, F):
            raise ValueError(
                f"prior.scale has shape {scale.shape}; covariance='shared' needs one ({F}, {F}) matrix"
            )
    else:
        df = _broadcast(df, (C,), "df", "n_classes")
        if scale.shape not in ((F, F), (C, F, F)):
            raise ValueError(f"prior.scale has shape {scale.shape}; expected ({F}, {F}) or ({C}, {F}, {F})")
        scale = np.broadcast_to(scale, (C, F, F)).copy()
    if np.any(df <= F - 1):
        raise ValueError(f"prior.df must be > n_features - 1 = {F - 1}, got min {df.min():g}")
    _check_positive_definite(scale, "prior.scale", "class")
    scale = 0.5 * (scale + np.swapaxes(scale, -1, -2))
    return NormalInverseWishart(loc, kappa, df, scale)


# ----------------------------------------------------------------------------- posterior


def _class_scatter(prior, stats):
    """:math:`\\kappa_n`, :math:`m_n` and :math:`B_c` (scatter plus prior-mean term) per class."""
    xp = namespace(prior, stats)
    n = xp.asarray(stats.class_count, dtype=np.float64)
    xbar = xp.asarray(stats.mean, dtype=np.float64)
    k0 = xp.asarray(prior.kappa, dtype=np.float64)
    m0 = xp.asarray(prior.loc, dtype=np.float64)
    kn = k0 + n
    mn = (k0[:, None] * m0 + n[:, None] * xbar) / kn[:, None]
    d = xbar - m0
    b = xp.asarray(stats.scatter, dtype=np.float64) + (k0 * n / kn)[:, None, None] * (d[:, :, None] * d[:, None, :])
    return kn, mn, b


def posterior(prior, stats):
    r"""Conjugate NIW update, per class or shared (read from the prior's shape).

    Parameters
    ----------
    prior : NormalInverseWishart
        Canonical shapes (see :func:`check_prior`).
    stats : ScatterStats

    Returns
    -------
    NormalInverseWishart
        ``loc`` :math:`m_n` (C, F), ``kappa`` :math:`\kappa_n` (C,), ``df``
        :math:`\nu_n` and ``scale`` :math:`\Psi_n` ((C,) and (C, F, F) per class, () and
        (F, F) shared).
    """
    check_spread(stats)  # the union of every batch's values, as fit would see them
    xp = namespace(prior, stats)
    kn, mn, b = _class_scatter(prior, stats)
    n = xp.asarray(stats.class_count, dtype=np.float64)
    if is_shared(prior):
        df = xp.asarray(prior.df, dtype=np.float64) + n.sum()
        scale = xp.asarray(prior.scale, dtype=np.float64) + b.sum(axis=0)
    else:
        df = xp.asarray(prior.df, dtype=np.float64) + n
        scale = xp.asarray(prior.scale, dtype=np.float64) + b
    return NormalInverseWishart(mn, kn, df, scale)


@x64
def _cholesky_traced(a):
    return jnp.linalg.cholesky(jnp.asarray(a, dtype=jnp.float64))


def _cholesky(a):
    """Lower Cholesky factors of the (..., F, F) matrices ``a``.

    Concrete inputs are factored by LAPACK through NumPy (no JAX compilation); as with
    ``jnp.linalg.cholesky``, a matrix that is not positive definite gets a factor of NaNs
    rather than an error.
    """
    if is_traced(a):
        return _cholesky_traced(a)
    a = np.asarray(a, dtype=np.float64)
    try:
        return np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        flat = a.reshape((-1,) + a.shape[-2:])
        out = np.full(flat.shape, np.nan)
        for i, m in enumerate(flat):
            try:
                out[i] = np.linalg.cholesky(m)
            except np.linalg.LinAlgError:
                pass
        return out.reshape(a.shape)


def _check_nonsingular(cov, what):
    mats = cov.reshape((-1,) + cov.shape[-2:])
    for c, m in enumerate(mats):
        eig = np.linalg.eigvalsh(m)
        if eig[-1] <= 0 or eig[0] <= m.shape[0] * _EPS * eig[-1]:
            where = f" of class index {c}" if cov.ndim == 3 else " (shared by all classes)"
            raise ValueError(
                f"estimate='mle' is undefined: the maximum-likelihood covariance{where} is singular "
                f"(eigenvalues from {eig[0]:.3g} to {eig[-1]:.3g}; {what}). This happens with fewer "
                "rows than features or with constant / collinear features. Use estimate='map', "
                "'mean' or 'predictive', where the inverse-Wishart prior regularises the covariance."
            )


def point(prior, stats, kind):
    r"""Point estimate of the means and covariances.

    ``"mle"``
        :math:`\mu_c = \bar x_c`; full :math:`\Sigma_c = S_c / N_c`, shared
        :math:`\Sigma = \sum_c S_c / \sum_c N_c` (the biased maximum-likelihood
        estimates, not the :math:`n - 1` versions). Undefined (``ValueError``) for a
        class without rows or a singular covariance.
    ``"map"``
        The joint mode of the NIW posterior in :math:`(\mu, \Sigma)`:
        :math:`\mu_c = m_{nc}`; full :math:`\Sigma_c = \Psi_{nc} / (\nu_{nc} + F + 2)`;
        shared :math:`\Sigma = \Psi_n / (\nu_n + F + 1 + C)` (the shared density carries
        one factor :math:`|\Sigma|^{-1/2}` per class mean). Not the mode of the marginal
        of :math:`\Sigma`, which is :math:`\Psi_n / (\nu_n + F + 1)`.
    ``"mean"``
        Posterior means :math:`\mu_c = m_{nc}`,
        :math:`E[\Sigma] = \Psi_n / (\nu_n - F - 1)`; requires :math:`\nu_n > F + 1`.

    Parameters
    ----------
    prior : NormalInverseWishart
    stats : ScatterStats
    kind : {"mle", "map", "mean"}

    Returns
    -------
    GaussianParams
        ``loc`` (C, F); ``scale_tril`` (C, F, F), or (F, F) when shared.
    """
    shared = is_shared(prior)
    n_classes, n_features = np.shape(stats.mean)
    xp = namespace(prior, stats)
    if kind == "mle" and xp is not np:
        return _mle_traced(stats, shared)
    if kind == "mle":
        n = np.asarray(stats.class_count, dtype=np.float64)
        empty = np.flatnonzero(n <= 0)
        if empty.size:
            raise ValueError(
                f"estimate='mle' is undefined: class index {int(empty[0])} has no training rows, so its "
                "mean and covariance have no maximum-likelihood estimate. Use estimate='map', 'mean' "
                "or 'predictive'."
            )
        scatter = np.asarray(stats.scatter, dtype=np.float64)
        if shared:
            cov = scatter.sum(axis=0) / n.sum()
            what = f"{n.sum():g} weighted rows in all, {n_features} features"
        else:
            cov = scatter / n[:, None, None]
            what = "weighted rows per class " + ", ".join(f"{v:g}" for v in n) + f"; {n_features} features"
        _check_nonsingular(cov, what)
        return GaussianParams(np.asarray(stats.mean, dtype=np.float64).copy(), _cholesky(cov))
    post = posterior(prior, stats)
    df = xp.asarray(post.df, dtype=np.float64)
    scale = xp.asarray(post.scale, dtype=np.float64)
    if kind == "map":
        denom = df + n_features + (1 + n_classes if shared else 2)
    elif kind == "mean" and xp is not np:
        # Traced, no error can be raised: an undefined mean (df <= F + 1) is NaN.
        denom = xp.where(df <= n_features + 1, np.nan, df - n_features - 1)
    elif kind == "mean":
        if np.any(df <= n_features + 1):
            raise ValueError(
                f"estimate='mean' is undefined: the posterior mean of the covariance needs df > n_features + 1 "
                f"= {n_features + 1}, but the posterior df is {df.min():g}. Use a prior with larger df, more "
                "data, or estimate='map' / 'predictive'."
            )
        denom = df - n_features - 1
    else:
        raise ValueError(f"unknown point estimate {kind!r}")
    cov = scale / xp.reshape(denom, np.shape(denom) + (1, 1))
    if xp is not np:
        return GaussianParams(jnp.asarray(post.loc, dtype=jnp.float64), _cholesky(cov))
    return GaussianParams(np.asarray(post.loc, dtype=np.float64).copy(), _cholesky(cov))


def _mle_traced(stats, shared):
    """The ``"mle"`` of :func:`point` under ``jax.jit``: NaN for a class without rows (no
    error can be raised on traced values; a singular covariance gives NaN factors)."""
    n = jnp.asarray(stats.class_count, dtype=jnp.float64)
    scatter = jnp.asarray(stats.scatter, dtype=jnp.float64)
    cov = scatter.sum(axis=0) / n.sum() if shared else scatter / n[:, None, None]
    loc = jnp.where((n <= 0)[:, None], jnp.nan, jnp.asarray(stats.mean, dtype=jnp.float64))
    return GaussianParams(loc, _cholesky(cov))


# ----------------------------------------------------------------------------- densities


def _whiten(tril, rows):
    r""":math:`L^{-1} r` for every row ``r`` of ``rows`` (..., m, F).

    :math:`L^{-1}` is formed once per factor (a triangular solve against the identity,
    F x F) and applied to the rows as one matrix product, :math:`Z = R L^{-\top}`: on
    CPU, XLA's matrix product runs many times faster than its row-by-row triangular
    solve, and the inverse of a triangular factor is as accurate as the solve (both are
    backward stable; the error of either is bounded by the condition number of ``L``).
    """
    eye = jnp.broadcast_to(jnp.eye(tril.shape[-1], dtype=tril.dtype), tril.shape)
    inv = jax.lax.linalg.triangular_solve(tril, eye, left_side=True, lower=True)
    return jnp.matmul(rows, jnp.swapaxes(inv, -1, -2))


@jax.jit
def _mahalanobis_kernel(tril, loc, X, centre):
    if tril.ndim == 2:
        # One covariance: whiten the rows once and the means once, then subtract. Both
        # are centred at a point among the means first, so the subtraction cancels only
        # as much as the data's spread around the classes, not their offset from 0.
        z = _whiten(tril, X - centre)[:, None, :] - _whiten(tril, loc - centre)[None, :, :]
    else:
        centred = X[None, :, :] - loc[:, None, :]  # (C, rows, F)
        z = jnp.swapaxes(_whiten(tril, centred), 0, 1)
    squared = jnp.sum(z * z, axis=-1)
    # log of the squared norm without overflow, for rows so far out that it exceeds
    # the float64 range: |z|^2 = s^2 |z / s|^2 with s = max_j |z_j|.
    s = jnp.max(jnp.abs(z), axis=-1)
    unit = jnp.sum((z / jnp.where(s > 0, s, 1.0)[..., None]) ** 2, axis=-1)
    return squared, 2.0 * jnp.log(s) + jnp.log(unit)


@x64
def _mahalanobis_traced(tril, loc, X, log=False):
    """:func:`_mahalanobis` under a JAX trace: one call of the kernel on every row."""
    loc = jnp.asarray(loc, dtype=jnp.float64)
    squared, log_squared = _mahalanobis_kernel(jnp.asarray(tril, dtype=jnp.float64), loc, dense_jax(X), jnp.mean(loc, axis=0))
    return log_squared if log else squared


def _mahalanobis(tril, loc, X, log=False):
    r"""Squared Mahalanobis norms :math:`\|L_c^{-1}(x_i - \mu_c)\|^2`, shape (n_samples, n_classes).

    ``tril`` is (C, F, F) or one shared (F, F) factor; ``loc`` is (C, F). With
    ``log=True`` the logarithm of the norms is returned instead, finite where the norm
    itself overflows (``-inf`` at the centre). Traced inputs go through the compiled
    :func:`_mahalanobis_kernel`; concrete ones through NumPy/BLAS on the host
    (:func:`_mahalanobis_host`), which compiles nothing.
    """
    if is_traced(tril, loc, X):
        return _mahalanobis_traced(tril, loc, X, log)
    maha = _mahalanobis_host(tril, loc, X)
    # The expansion can leave -1e-16-sized values at a mean.
    np.maximum(maha, 0.0, out=maha)
    if not log:
        return maha
    with np.errstate(divide="ignore"):
        out = np.log(maha)
    over = np.flatnonzero(np.isinf(maha).any(axis=1))
    if over.size:
        out[over] = _log_mahalanobis_rows(_host_whitening(tril, loc), np.asarray(X, dtype=np.float64)[over])
    return out


# ----------------------------------------------------------------------------- host kernels
# Concrete (non-traced) inputs are scored with NumPy and BLAS: no JAX dispatch or
# compilation, the derived matrices made once per parameter set (``_HOST``).

# Rows per block of the host kernels: about this many (rows x F) entries, so that a
# block's temporaries stay in cache; blocks run on map_threads.
_HOST_BLOCK_ENTRIES = 1 << 15
# Within a block, the products with the factors go to BLAS in single-threaded pieces
# (kernels.gemm).
_HOST_MIN_BLOCK = 16

# The class contrast's blocks hold one temporary of the rows' size (no whitening, no
# per-class products): larger blocks, fewer NumPy calls per row.
_CONTRAST_BLOCK_ENTRIES = 1 << 17

_HOST = ParamCache(size=4)


class _Whitening(NamedTuple):
    r"""Derived arrays of :func:`_mahalanobis_host` for one parameter set.

    ``inv_t`` is :math:`L^{-\top}` ((F, F) shared, (C, F, F) per class), so that a block
    of rows ``R`` whitens as ``R @ inv_t`` :math:`= (L^{-1} R^\top)^\top`. Shared only:
    ``centre`` (the mean of the class means), ``means`` :math:`m_c = L^{-1}(\mu_c -
    \text{centre})` (C, F), ``means_sq`` :math:`\|m_c\|^2` (C,), and for the class
    contrast (:func:`log_likelihood_contrast`) ``coef``
    :math:`L^{-\top} m_c = \Sigma^{-1}(\mu_c - \text{centre})` as columns (F, C) and
    ``coef_abs`` its largest magnitude in each row, :math:`\max_c |a_{cj}|` (F,).
    """

    loc: np.ndarray
    inv_t: np.ndarray
    centre: np.ndarray
    means: np.ndarray
    means_t: np.ndarray
    means_sq: np.ndarray
    coef: np.ndarray
    coef_abs: np.ndarray


def _host_whitening(tril, loc):
    def make():
        from scipy.linalg import solve_triangular as solve

        L = np.asarray(tril, dtype=np.float64)
        mu = np.asarray(loc, dtype=np.float64)
        eye = np.eye(L.shape[-1])
        # L^-1 by a triangular solve against the identity: backward stable like the solve
        # of every row, and applied to the rows as one BLAS product per block.
        mats = L.reshape((-1,) + L.shape[-2:])
        inv_t = np.stack([solve(m, eye, lower=True, check_finite=False).T.copy() for m in mats]).reshape(L.shape)
        if L.ndim == 2:
            centre = mu.mean(axis=0)
            means = (mu - centre) @ inv_t
            means_t = means.T.copy()
            coef = inv_t @ means_t
            coef_abs = np.abs(coef).max(axis=1, initial=0.0)
            return _Whitening(mu, inv_t, centre, means, means_t, np.einsum("cf,cf->c", means, means), coef, coef_abs)
        return _Whitening(mu, inv_t, None, None, None, None, None, None)

    return _HOST.get((tril, loc), "gaussian_mv-whitening", make)


def _mahalanobis_host(tril, loc, X, scale=1.0, offset=0.0, finish=None):
    r""":math:`a_c \|L_c^{-1}(x_i - \mu_c)\|^2 + b_c` of concrete inputs, (n_samples, n_classes),
    in NumPy/BLAS on the host; ``scale`` :math:`a` and ``offset`` :math:`b` are scalars
    or (C,), and ``finish`` (if given) is applied in place to each block of the result.

    The affine map and ``finish`` run on each block while it is in cache (a density is
    one pass over the output, not four). Blocks of rows run on
    :func:`~bayesnb.core.kernels.map_threads` (BLAS releases the GIL); every row is
    computed the same way whichever thread runs it.
    """
    w = _host_whitening(tril, loc)
    n_classes = w.loc.shape[0]
    scale = np.broadcast_to(np.asarray(scale, dtype=np.float64), (n_classes,))
    offset = np.broadcast_to(np.asarray(offset, dtype=np.float64), (n_classes,))
    kernel = _shared_block if w.inv_t.ndim == 2 else _full_block

    def block(rows, part):
        kernel(w, rows, scale, offset, part)
        if finish is not None:
            finish(part)

    return _by_row_blocks(X, n_classes, block)


def _by_row_blocks(X, n_classes, block, entries=None):
    """(n_samples, n_classes) from ``block(rows, out_part)`` run on blocks of rows of about
    ``entries`` (default ``_HOST_BLOCK_ENTRIES``) entries, in cache, on
    :func:`~bayesnb.core.kernels.map_threads`."""
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    out = np.empty((n, n_classes))
    size = max(_HOST_MIN_BLOCK, (entries or _HOST_BLOCK_ENTRIES) // max(1, X.shape[1]))

    def run(bounds):
        for start in range(bounds[0], bounds[1], size):
            stop = min(start + size, bounds[1])
            block(X[start:stop], out[start:stop])

    with np.errstate(over="ignore", invalid="ignore"):
        map_threads(run, row_ranges(n, size))
    return out


def _contrast_host(w, X, offset, const):
    r""":math:`(x - \text{centre})^\top \Sigma^{-1}(\mu_c - \text{centre}) + b_c` of concrete
    rows under one covariance: one product with (F, C) weights per block, the rows
    centred in cache first (so that a large common offset of the data does not cancel).

    With :math:`d = x - \text{centre}` and :math:`a_c = \Sigma^{-1}(\mu_c -
    \text{centre})`, the product's rounding is at most about
    :math:`\epsilon F \sum_j |d_j| |a_{cj}| \le \epsilon F \sum_j |d_j| \max_c |a_{cj}|`
    (a bound that does not grow with the covariance's condition number: each term is
    free of the features' units), and the constant's :math:`\epsilon\|m_c\|^2`. Rows
    with :math:`\sum_j |d_j| \max_c|a_{cj}| + \max_c\|m_c\|^2 \le`
    ``_CANCELLATION_LIMIT`` F are trusted, the expansion's own bound
    (:func:`_shared_block`): their log-odds are as accurate as the density's. The others
    (far from the centre, where two classes close to each other would lose their
    difference) are scored by the log density itself (with its direct form where
    needed): for them the left-out term is 0.
    """
    limit = _CANCELLATION_LIMIT * w.loc.shape[1] - w.means_sq.max(initial=0.0)
    ones = np.ones(w.loc.shape[0])

    def block(rows, part):
        d = rows - w.centre
        gemm(d, w.coef, out=part)
        part += offset
        np.abs(d, out=d)
        check = np.flatnonzero(~(d @ w.coef_abs <= limit))
        if check.size:
            exact = np.empty((check.size, part.shape[1]))
            _shared_block(w, rows[check], -0.5 * ones, const * ones, exact)
            part[check] = exact

    return _by_row_blocks(X, w.loc.shape[0], block, _CONTRAST_BLOCK_ENTRIES)


def _shared_block(w, rows, scale, offset, out):
    r"""``out`` :math:`= a_c \|z - m_c\|^2 + b_c` under one covariance, by the expansion
    :math:`\|z - m_c\|^2 = \|z\|^2 - 2 z^\top m_c + \|m_c\|^2`, :math:`z = L^{-1}(x - \text{centre})`.

    One whitening of the rows serves every class. The expansion is trusted where its
    terms :math:`\|z\|^2 + \|m_c\|^2` (which bound the cancelling ones) are at most
    ``_CANCELLATION_LIMIT`` times the result plus F (the scale of the log density's
    other terms): its rounding error is then within ~1e-13 of that. Every row with
    :math:`\|z\|^2 + \max_c \|m_c\|^2 \le` ``_CANCELLATION_LIMIT`` F passes at once (the
    norms are >= 0); the others are checked class by class, and the untrusted ones
    (far from the centre relative to their distance to some class mean, or
    overflowing) recomputed by the direct form :math:`\|L^{-1}(x - \mu_c)\|^2`
    (centred at each mean before whitening: exact where the classes are far apart).
    """
    z = gemm(rows - w.centre, w.inv_t)
    z_sq = np.einsum("nf,nf->n", z, z)
    np.matmul(z, w.means_t * (-2.0 * scale), out=out)
    out += z_sq[:, None] * scale
    out += w.means_sq * scale + offset
    limit = _CANCELLATION_LIMIT * rows.shape[1]
    check = np.flatnonzero(~(z_sq + w.means_sq.max(initial=0.0) <= limit))
    if check.size:
        terms = z_sq[check, None] + w.means_sq
        maha = terms - 2.0 * (z[check] @ w.means_t)
        trusted = terms <= _CANCELLATION_LIMIT * (maha + rows.shape[1])
        redo = check[~trusted.all(axis=1)]
        if redo.size:
            d = _direct(w, rows[redo])
            out[redo] = np.einsum("ncf,ncf->nc", d, d) * scale + offset


def _full_block(w, rows, scale, offset, out):
    r"""``out`` :math:`= a_c \|L_c^{-1}(x - \mu_c)\|^2 + b_c` per class: the rows are
    centred at each class mean (no cancellation beyond that of the data), then whitened
    by BLAS."""
    for c in range(w.loc.shape[0]):
        z = gemm(rows - w.loc[c], w.inv_t[c])
        maha = np.einsum("nf,nf->n", z, z)
        maha *= scale[c]
        maha += offset[c]
        out[:, c] = maha


def _direct(w, rows):
    """Whitened differences :math:`L_c^{-1}(x - \\mu_c)` of a few rows, (rows, C, F)."""
    n_classes, n_features = w.loc.shape
    d = rows[:, None, :] - w.loc[None, :, :]
    with np.errstate(over="ignore", invalid="ignore"):
        if w.inv_t.ndim == 2:
            return gemm(d.reshape(-1, n_features), w.inv_t).reshape(d.shape)
        return np.stack([d[:, c] @ w.inv_t[c] for c in range(n_classes)], axis=1)


def _log_mahalanobis_rows(w, rows):
    r"""Logarithms of the squared norms of ``rows`` by the direct form, scaled so that
    they stay finite where the norms overflow: :math:`\|z\|^2 = s^2\|z/s\|^2`,
    :math:`s = \max_j |z_j|`."""
    z = _direct(w, rows)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        s = np.abs(z).max(axis=-1)
        unit = np.sum((z / np.where(s > 0, s, 1.0)[..., None]) ** 2, axis=-1)
        return 2.0 * np.log(s) + np.log(unit)


def _log_diag_sum(tril):
    """:math:`\\sum_j \\log L_{jj}`, i.e. half the log determinant, over the last two axes."""
    if is_traced(tril):
        return _log_diag_sum_traced(tril)
    return np.log(np.diagonal(np.asarray(tril, dtype=np.float64), axis1=-2, axis2=-1)).sum(axis=-1)


@x64
def _log_diag_sum_traced(tril):
    return jnp.sum(jnp.log(jnp.diagonal(jnp.asarray(tril), axis1=-2, axis2=-1)), axis=-1)


def log_likelihood(params, X):
    r"""Gaussian log density of every row under every class.

    .. math::

        \log\mathcal N(x \mid \mu_c, \Sigma_c) = -\tfrac12\big(F\log 2\pi
            + 2\sum_j \log L_{c,jj} + \|L_c^{-1}(x - \mu_c)\|^2\big)

    Parameters
    ----------
    params : GaussianParams
        ``loc`` (C, F), ``scale_tril`` (C, F, F) or shared (F, F).
    X : ndarray of shape (n_samples, n_features)

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
    """
    xp = namespace(params, X)
    loc = xp.asarray(params.loc, dtype=np.float64)
    tril = xp.asarray(params.scale_tril, dtype=np.float64)
    n_features = loc.shape[-1]
    half_logdet = xp.broadcast_to(_log_diag_sum(tril), (loc.shape[0],))
    const = -0.5 * n_features * np.log(2 * np.pi) - half_logdet
    if xp is np:
        # The affine map is applied on the host kernel's blocks (while in cache); the
        # expansion's round-off at a mean (a norm of -1e-16) cannot lift a value above
        # its maximum by more than that.
        return _mahalanobis_host(tril, loc, X, -0.5, const, lambda part: np.minimum(part, const, out=part))
    return -0.5 * _mahalanobis(tril, loc, X) + const


def log_predictive(post, X):
    r"""Exact posterior predictive: the multivariate Student-t of each class.

    With :math:`d_c = \nu_{nc} - F + 1`, :math:`\Lambda_c = \Psi_{nc}(\kappa_{nc} + 1) /
    (\kappa_{nc} d_c)` (for the shared model :math:`\nu_n, \Psi_n` are common) and
    :math:`\Psi_{nc} = L_c L_c^\top`,

    .. math::

        \log p(x \mid y=c, D) = \log\Gamma\big(\tfrac{d_c+F}{2}\big)
            - \log\Gamma\big(\tfrac{d_c}{2}\big) - \tfrac F2 \log(d_c\pi)
            - \tfrac12\log|\Lambda_c|
            - \tfrac{d_c+F}{2}\,\mathrm{log1p}\Big(\frac{\kappa_{nc}}{\kappa_{nc}+1}
              \|L_c^{-1}(x - m_{nc})\|^2\Big),

    using :math:`(x-m)^\top\Lambda^{-1}(x-m)/d = \kappa\,\|L^{-1}(x-m)\|^2/(\kappa+1)`.

    Parameters
    ----------
    post : NormalInverseWishart
        Posterior (per-class or shared shapes).
    X : ndarray of shape (n_samples, n_features)

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
    """
    xp = namespace(post, X)
    loc = xp.asarray(post.loc, dtype=np.float64)
    kappa = xp.asarray(post.kappa, dtype=np.float64)
    n_classes, n_features = loc.shape
    df = xp.broadcast_to(xp.asarray(post.df, dtype=np.float64), (n_classes,))
    d = df - n_features + 1
    shape_factor = (kappa + 1) / (kappa * d)
    if xp is np:
        return _log_predictive_host(post, X, loc, kappa, d, shape_factor)
    tril = _cholesky(post.scale)
    log_maha = _mahalanobis(tril, loc, X, log=True)
    half_logdet = xp.broadcast_to(_log_diag_sum(tril), (n_classes,)) + 0.5 * n_features * xp.log(shape_factor)
    const = _t_const(d, n_features) - half_logdet
    # log1p(q) as logaddexp(0, log q): exact for small q, finite for rows so far out
    # that q overflows (the t density decays only polynomially there).
    with np.errstate(divide="ignore"):
        log_q = log_maha + xp.log(kappa / (kappa + 1))
    return const - 0.5 * (d + n_features) * xp.logaddexp(0.0, log_q)


def _log_predictive_host(post, X, loc, kappa, d, shape_factor):
    """:func:`log_predictive` of concrete inputs: the plug-in's host kernel with the
    posterior's factor, then ``log1p`` of the scaled norms (the log form only for rows
    whose norm overflows)."""
    n_classes, n_features = loc.shape
    scale = np.asarray(post.scale, dtype=np.float64)
    tril = _HOST.get((scale,), "gaussian_mv-cholesky", lambda: _cholesky(scale))
    half_logdet = np.broadcast_to(_log_diag_sum(tril), (n_classes,)) + 0.5 * n_features * np.log(shape_factor)
    const = log_rising_factorial_np(0.5 * d, 0.5 * n_features) - 0.5 * n_features * np.log(d * np.pi) - half_logdet
    ratio = kappa / (kappa + 1)
    power = -0.5 * (d + n_features)

    def finish(q):
        np.maximum(q, 0.0, out=q)  # the expansion's round-off at a mean
        np.log1p(q, out=q)
        q *= power
        q += const

    out = _mahalanobis_host(tril, loc, X, ratio, 0.0, finish)
    # Rows whose norm overflowed (-inf here): the t density decays only polynomially,
    # so their log density is finite, log1p(q) = logaddexp(0, log q).
    if not np.isfinite(out).all():
        over = np.flatnonzero(~np.isfinite(out).all(axis=1))
        log_q = _log_mahalanobis_rows(_host_whitening(tril, loc), np.asarray(X, dtype=np.float64)[over]) + np.log(ratio)
        out[over] = power * np.logaddexp(0.0, log_q) + const
    return out


@x64
def _t_const(d, n_features):
    # log Γ((d+F)/2) - log Γ(d/2) as a log rising factorial: no cancellation of two
    # large lgamma values when d (about the number of training rows) is large.
    d = jnp.asarray(d, dtype=jnp.float64)
    return host(log_rising_factorial(0.5 * d, 0.5 * n_features) - 0.5 * n_features * jnp.log(d * jnp.pi))


def log_evidence(prior, stats):
    r"""Log marginal likelihood of the rows given their labels.

    Per class ("full"), summed over classes:

    .. math::

        \log p(X_c) = -\frac{N_c F}{2}\log\pi + \frac F2 \log\frac{\kappa_{0c}}{\kappa_{nc}}
            + \frac{\nu_{0c}}{2}\log|\Psi_{0c}| - \frac{\nu_{nc}}{2}\log|\Psi_{nc}|
            + \log\Gamma_F\big(\tfrac{\nu_{nc}}2\big) - \log\Gamma_F\big(\tfrac{\nu_{0c}}2\big).

    Shared: integrating each :math:`\mu_c` out leaves
    :math:`(2\pi)^{-N_c F/2}(\kappa_{0c}/\kappa_{nc})^{F/2}|\Sigma|^{-N_c/2}
    \exp(-\tfrac12\mathrm{tr}\,\Sigma^{-1}B_c)` per class; multiplied by the
    inverse-Wishart density and integrated over :math:`\Sigma` this is

    .. math::

        \log p(X \mid y) = -\frac{N F}{2}\log\pi
            + \frac F2 \sum_c \log\frac{\kappa_{0c}}{\kappa_{nc}}
            + \frac{\nu_0}{2}\log|\Psi_0| - \frac{\nu_n}{2}\log|\Psi_n|
            + \log\Gamma_F\big(\tfrac{\nu_n}2\big) - \log\Gamma_F\big(\tfrac{\nu_0}2\big),

    :math:`N = \sum_c N_c` (the powers of 2 cancel because :math:`\nu_n - \nu_0 = N`).
    The multivariate-gamma ratio :math:`\log\Gamma_F(\nu_n/2) - \log\Gamma_F(\nu_0/2)` is evaluated as
    :math:`\sum_{j<F}\log\Gamma(a_j + N/2) - \log\Gamma(a_j)`,
    :math:`a_j = (\nu_0 - j)/2`, with full-precision log rising factorials.

    Returns
    -------
    float
        The registered ``family.log_evidence`` is the traceable form of this function
        (a 0-d float64 JAX array, under ``jax.jit`` and ``jax.grad`` in every
        hyperparameter, in the library's float64 scope :mod:`bayesnb.core._x64`).
    """
    return float(_evidence(prior, stats))


def _evidence(prior, stats):
    # One compiled kernel per shape; a gradient in ``scale`` is meaningful along
    # symmetric directions (the Cholesky factor reads one triangle).
    return _log_evidence_jit(tuple(prior), (stats.class_count, stats.mean, stats.scatter))


@x64
@jax.jit
def _log_evidence_jit(prior, stats):
    # The update of _class_scatter / posterior, in jax.numpy so that it traces.
    loc, k0, df0, scale0 = (jnp.asarray(f, dtype=jnp.float64) for f in prior)
    n, xbar, scatter = (jnp.asarray(f, dtype=jnp.float64) for f in stats)
    n_features = xbar.shape[1]
    shared = scale0.ndim == 2
    kn = k0 + n
    d = xbar - loc
    b = scatter + (k0 * n / kn)[:, None, None] * (d[:, :, None] * d[:, None, :])
    n_group = n.sum() if shared else n
    scalen = scale0 + (b.sum(axis=0) if shared else b)
    dfn = df0 + n_group

    def half_logdet(a):
        tril = jnp.linalg.cholesky(a)
        return jnp.sum(jnp.log(jnp.diagonal(tril, axis1=-2, axis2=-1)), axis=-1)

    j = jnp.arange(n_features, dtype=jnp.float64)
    mvgamma = jnp.sum(log_rising_factorial(0.5 * (df0[..., None] - j), 0.5 * n_group[..., None]), axis=-1)
    return (
        -0.5 * n.sum() * n_features * np.log(np.pi)
        + 0.5 * n_features * jnp.sum(jnp.log(k0) - jnp.log(kn))
        + jnp.sum(df0 * half_logdet(scale0) - dfn * half_logdet(scalen))
        + jnp.sum(mvgamma)
    )


# ----------------------------------------------------------------------------- sampling


# Under a trace, standard variates are drawn by kernels of one fixed size (blocks with
# keys ``fold_in(key, block_index)``): jax.random.gamma's rejection sampler takes seconds
# to compile on CPU. On the host they are NumPy's (bayesnb.core._sampling), and the
# draws are assembled in blocks of a fixed number of draws for the triangular solves.
_VARIATE_BLOCK = 1 << 14
_DRAW_BLOCK = 256


@jax.jit
def _gamma_kernel(key, concentration):
    return jax.random.gamma(key, concentration, dtype=jnp.float64)


@jax.jit
def _normal_kernel(key):
    return jax.random.normal(key, (_VARIATE_BLOCK,), dtype=jnp.float64)


def _standard_gamma(key, concentration):
    """iid Gamma(concentration, 1) variates of the shape of ``concentration``."""
    if is_traced(key, concentration):
        flat = jnp.ravel(jnp.asarray(concentration, dtype=jnp.float64))
        pieces = [
            _gamma_kernel(jax.random.fold_in(key, i), jnp.ones(_VARIATE_BLOCK).at[: part.size].set(part))[: part.size]
            for i, part in enumerate(flat[start : start + _VARIATE_BLOCK] for start in range(0, flat.size, _VARIATE_BLOCK))
        ]
        return jnp.concatenate(pieces).reshape(jnp.shape(concentration))
    # On the host: NumPy's Gamma sampler seeded from the key (bayesnb.core._sampling).
    return _sampling.gamma(key, concentration)


def _standard_normal(key, shape):
    size = int(np.prod(shape))
    if is_traced(key):
        pieces = [_normal_kernel(jax.random.fold_in(key, i))[: min(_VARIATE_BLOCK, size - start)] for i, start in enumerate(range(0, size, _VARIATE_BLOCK))]
        return jnp.concatenate(pieces).reshape(shape)
    return _sampling.normal(key, shape)


@jax.jit
def _draw_kernel(bartlett, z, scale_tril, loc, kappa):
    r"""Cholesky factors of :math:`\mathcal W^{-1}(\Psi, \nu)` draws and the means given them.

    Bartlett, written for the inverse: if :math:`U` is upper triangular with
    :math:`U_{ii}^2 \sim \chi^2(\nu - F + 1 + i)` (:math:`i = 0..F-1`) and standard
    normal entries above the diagonal, then :math:`U U^\top \sim \mathcal W(I, \nu)` (the
    usual lower Bartlett factor with rows and columns reversed). With
    :math:`\Psi = L L^\top`, :math:`\Sigma^{-1} = L^{-\top} U U^\top L^{-1} \sim
    \mathcal W(\Psi^{-1}, \nu)`, so

    .. math:: \Sigma = (L U^{-\top})(L U^{-\top})^\top,

    and :math:`L U^{-\top} = (U^{-1} L^\top)^\top` is lower triangular with a positive
    diagonal: the Cholesky factor of :math:`\Sigma`, from one triangular solve. Then
    :math:`\mu_c = m_c + L_{\Sigma_c} z_c / \sqrt{\kappa_c}`.

    Shapes: ``bartlett`` (B, *batch, F, F) with batch () (shared) or (C,); ``z``
    (B, C, F); ``scale_tril`` (*batch, F, F); ``loc`` (C, F); ``kappa`` (C,).
    """
    Lt = jnp.broadcast_to(jnp.swapaxes(scale_tril, -1, -2), bartlett.shape)
    tril = jnp.swapaxes(solve_triangular(bartlett, Lt, lower=False), -1, -2)
    per_class = tril if tril.ndim == 4 else tril[:, None, :, :]
    noise = jnp.einsum("bcij,bcj->bci", per_class, z)
    return loc + noise / jnp.sqrt(kappa)[:, None], tril


@x64
def _sample_traced(key, loc, kappa, df, scale, n):
    """:func:`_sample` under ``jax.jit``: ``jax.random`` variates (blocks of standard
    variates from ``fold_in`` keys), assembled in ``jax.numpy`` in one call of the draw
    kernel. The same distribution as the host path's NumPy variates, not the same numbers."""
    loc, kappa, scale = (jnp.asarray(v, dtype=jnp.float64) for v in (loc, kappa, scale))
    n_classes, F = loc.shape
    batch = scale.shape[:-2]
    df = jnp.broadcast_to(jnp.asarray(df, dtype=jnp.float64), batch)
    key_chi2, key_upper, key_loc = jax.random.split(key, 3)
    shape = (n,) + batch + (F,)
    chi2 = 2.0 * _standard_gamma(key_chi2, jnp.broadcast_to(0.5 * (df[..., None] - F + 1 + jnp.arange(F)), shape))
    idx = jnp.arange(F)
    bartlett = jnp.triu(_standard_normal(key_upper, shape + (F,)), k=1).at[..., idx, idx].set(jnp.sqrt(chi2))
    z = _standard_normal(key_loc, (n, n_classes, F))
    return GaussianParams(*_draw_kernel(bartlett, z, _cholesky(scale), loc, kappa))


@x64
def _sample(key, loc, kappa, df, scale, n):
    if is_traced(key, loc, kappa, df, scale):
        return _sample_traced(key, loc, kappa, df, scale, n)
    loc = np.asarray(loc, dtype=np.float64)
    kappa = np.asarray(kappa, dtype=np.float64)
    scale = np.asarray(scale, dtype=np.float64)
    n_classes, F = loc.shape
    batch = scale.shape[:-2]
    df = np.broadcast_to(np.asarray(df, dtype=np.float64), batch)
    key_chi2, key_upper, key_loc = _sampling.split(key, 3)
    # Bartlett factors: chi-square diagonal (2 Gamma(k/2)), normal strictly upper part.
    shape = (n,) + batch + (F,)
    chi2 = 2.0 * _standard_gamma(key_chi2, np.broadcast_to(0.5 * (df[..., None] - F + 1 + np.arange(F)), shape))
    bartlett = np.triu(_standard_normal(key_upper, shape + (F,)), k=1)
    idx = np.arange(F)
    bartlett[..., idx, idx] = np.sqrt(chi2)
    z = _standard_normal(key_loc, (n, n_classes, F))
    L = jnp.asarray(_cholesky(scale))
    locs = np.empty((n, n_classes, F))
    trils = np.empty(shape + (F,))
    for start in range(0, n, _DRAW_BLOCK):
        m = min(_DRAW_BLOCK, n - start)
        u, zz = bartlett[start : start + m], z[start : start + m]
        if m < _DRAW_BLOCK:
            pad = _DRAW_BLOCK - m
            u = np.concatenate([u, np.broadcast_to(np.eye(F), (pad,) + u.shape[1:])])
            zz = np.concatenate([zz, np.zeros((pad,) + zz.shape[1:])])
        mu, tril = _draw_kernel(jnp.asarray(u), jnp.asarray(zz), L, jnp.asarray(loc), jnp.asarray(kappa))
        locs[start : start + m] = np.asarray(mu)[:m]
        trils[start : start + m] = np.asarray(tril)[:m]
    return GaussianParams(locs, trils)


def sample(key, post, n):
    r"""Exact iid posterior draws of the means and covariances.

    :math:`\Sigma \sim \mathcal W^{-1}(\Psi_n, \nu_n)` by the Bartlett decomposition
    (one per class, or one shared per draw; see ``_draw_kernel``), then
    :math:`\mu_c \mid \Sigma \sim \mathcal N(m_{nc}, \Sigma_c / \kappa_{nc})`. The key
    is split three ways: chi-square diagonals, normal off-diagonals of the Bartlett
    factors, and the normal variates of the means.

    Parameters
    ----------
    key : jax.random key
    post : NormalInverseWishart
    n : int
        Number of draws.

    Returns
    -------
    GaussianParams
        ``loc`` (n, C, F); ``scale_tril`` (n, C, F, F), or (n, F, F) when shared.
    """
    return _sample(key, post.loc, post.kappa, post.df, post.scale, n)


# ----------------------------------------------------------------------------- boundaries


def covariance(params):
    """Covariance matrices :math:`L L^\\top` of ``params`` (same leading shape as ``scale_tril``)."""
    L = np.asarray(params.scale_tril, dtype=np.float64)
    return L @ np.swapaxes(L, -1, -2)


def diagonal_params(loc, var):
    r"""Diagonal-covariance parameters (e.g. of the naive-Bayes family) as :class:`GaussianParams`.

    Parameters
    ----------
    loc, var : ndarrays of shape (..., n_classes, n_features)
        Means and per-feature variances (> 0).

    Returns
    -------
    GaussianParams
        ``scale_tril`` of shape (..., n_classes, n_features, n_features), diagonal
        :math:`\sqrt{\sigma^2_{cj}}`.
    """
    sd = np.sqrt(np.asarray(var, dtype=np.float64))
    return GaussianParams(np.asarray(loc, dtype=np.float64), sd[..., :, None] * np.eye(sd.shape[-1]))


@x64
def quadratic_form(params):
    r"""Coefficients of the Gaussian log density as a quadratic in :math:`x`.

    .. math::

        \log\mathcal N(x \mid \mu_c, \Sigma_c) = x^\top A_c x + b_c^\top x + c_c, \quad
        A_c = -\tfrac12\Sigma_c^{-1}, \quad b_c = \Sigma_c^{-1}\mu_c, \quad
        c_c = -\tfrac12\mu_c^\top\Sigma_c^{-1}\mu_c - \tfrac12\log|2\pi\Sigma_c|.

    The precision is formed by Cholesky solves against the identity (it *is* the
    requested output, not an intermediate).

    Parameters
    ----------
    params : GaussianParams
        ``loc`` (C, F), ``scale_tril`` (C, F, F) or shared (F, F).

    Returns
    -------
    A : ndarray of shape (C, F, F)
    b : ndarray of shape (C, F)
    c : ndarray of shape (C,)
    """
    loc = jnp.asarray(params.loc, dtype=jnp.float64)
    n_classes, F = loc.shape
    L = jnp.broadcast_to(jnp.asarray(params.scale_tril, dtype=jnp.float64), (n_classes, F, F))
    precision = cho_solve((L, True), jnp.broadcast_to(jnp.eye(F), (n_classes, F, F)))
    precision = 0.5 * (precision + jnp.swapaxes(precision, -1, -2))
    b = cho_solve((L, True), loc[:, :, None])[:, :, 0]
    z = solve_triangular(L, loc[:, :, None], lower=True)[:, :, 0]
    half_logdet = jnp.sum(jnp.log(jnp.diagonal(L, axis1=-2, axis2=-1)), axis=-1)
    c = -0.5 * jnp.sum(z * z, axis=-1) - 0.5 * F * jnp.log(2 * jnp.pi) - half_logdet
    return np.asarray(-0.5 * precision), np.asarray(b), np.asarray(c)


@x64
def linear_form(params):
    r"""Class-dependent part of the log density under one shared covariance.

    .. math::

        \log\mathcal N(x \mid \mu_c, \Sigma) = w_c^\top x + w_{0c}
            \underbrace{- \tfrac12 x^\top\Sigma^{-1}x - \tfrac12\log|2\pi\Sigma|}_{\text{same for every class}},
        \quad w_c = \Sigma^{-1}\mu_c, \quad w_{0c} = -\tfrac12\mu_c^\top\Sigma^{-1}\mu_c.

    Parameters
    ----------
    params : GaussianParams
        Shared: ``loc`` (C, F), ``scale_tril`` (F, F).

    Returns
    -------
    coef : ndarray of shape (C, F)
    intercept : ndarray of shape (C,)
    """
    if not _params_shared(params):
        raise ValueError("linear_form needs one shared covariance; per-class covariances give quadratic boundaries")
    loc = jnp.asarray(params.loc, dtype=jnp.float64)
    L = jnp.asarray(params.scale_tril, dtype=jnp.float64)
    coef = cho_solve((L, True), loc.T).T
    z = solve_triangular(L, loc.T, lower=True)
    return np.asarray(coef), np.asarray(-0.5 * jnp.sum(z * z, axis=0))


def simulate(key, params, y_index):
    r"""Real rows given parameters and labels: :math:`x_i = \mu_{y_i} + L_{y_i} z_i`, :math:`z_i \sim \mathcal N(0, I)`.

    Parameters
    ----------
    key : jax.random key
    params : GaussianParams
        ``loc`` (C, F) with ``scale_tril`` (C, F, F), or shared (F, F); or each with a
        leading row axis for one parameter draw per row.
    y_index : int array of shape (n_rows,)

    Returns
    -------
    float64 ndarray of shape (n_rows, n_features)
    """
    loc = _rows.of_class(params.loc, y_index, 1)
    tril = np.asarray(params.scale_tril, dtype=np.float64)
    if _params_shared(params):
        # One covariance for every class: one matrix, or one per row's draw.
        tril = np.broadcast_to(tril, loc.shape[:1] + tril.shape[-2:])
    else:
        tril = _rows.of_class(tril, y_index, 2)
    z = _rows.generator(key).standard_normal(loc.shape)
    return loc + np.einsum("nij,nj->ni", tril, z)


def _stats(X, y_index, n_classes, weight=None, mask=None):
    if mask is not None:
        raise _mask.MaskRefused(
            "cannot be fitted on rows with missing (NaN) values "
            "with missing='ignore': the features are jointly Gaussian and the Normal-Inverse-Wishart "
            "posterior given a partially observed row is not Normal-Inverse-Wishart (no conjugate "
            "update; exact inference needs EM or MCMC). Use covariance='diag' or impute for fitting "
            "(predict accepts NaNs: it marginalises the missing coordinates)"
        )
    # The spread of the values is judged on the merged statistics (the posterior and the
    # default prior call check_spread), not batch by batch.
    return scatter_stats(X, y_index, n_classes, weight)


# ----------------------------------------------------------------------------- unobserved entries


def _by_pattern(X, mask, n_classes, score):
    r"""``score(cols, X_rows_cols)`` for the rows of each pattern of observed coordinates.

    An unobserved coordinate of a jointly Gaussian row is integrated out by
    marginalising it: the rows that observe the coordinates :math:`O` are scored by the
    class model's marginal on :math:`O`. A row observing nothing scores 0 (log 1).
    """
    data = np.asarray(X, dtype=np.float64)
    observed = ~dense_mask(mask)
    out = np.zeros((data.shape[0], n_classes))
    patterns, inverse = np.unique(observed, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    for p, keep in enumerate(patterns):
        rows = np.flatnonzero(inverse == p)
        cols = np.flatnonzero(keep)
        if cols.size:
            out[rows] = score(cols, data[np.ix_(rows, cols)])
    return out


def log_likelihood_contrast(params, X, prior=None, mask=None):
    r"""Plug-in log density up to a term of each row common to every class: what class
    posteriors depend on.

    With one covariance (``scale_tril`` of shape (F, F)) the quadratic term
    :math:`-\tfrac12\|z\|^2`, :math:`z = L^{-1}(x - \text{centre})`, is the same for every
    class and is left out; what stays is affine in the row,

    .. math::

        (x - \text{centre})^\top \Sigma^{-1}(\mu_c - \text{centre})
            - \tfrac12\|L^{-1}(\mu_c - \text{centre})\|^2
            - \tfrac F2\log 2\pi - \tfrac12\log|\Sigma|,

    one product with (F, C) weights instead of the whitening of every row, ``centre``
    being the mean of the class means (scikit-learn's LDA scores ``X @ coef_.T``
    uncentred, which a large common offset of the data rounds away). Rows so far from
    the centre that this form would lose the difference of two nearby classes are
    scored by the log density itself (their left-out term is 0; see
    :func:`_contrast_host`). Per-class covariances, traced inputs or a ``mask``:
    :func:`log_likelihood` itself (nothing is common to the classes there).

    Parameters
    ----------
    params : GaussianParams
    X : ndarray of shape (n_samples, n_features)
    prior : ignored
    mask : None or bool array of shape (n_samples, n_features)

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
    """
    tril = params.scale_tril
    if mask is not None or np.ndim(tril) != 2 or is_traced(params, X):
        return _log_likelihood(params, X, prior, mask)
    w = _host_whitening(tril, params.loc)
    const = -0.5 * w.loc.shape[1] * np.log(2 * np.pi) - _log_diag_sum(tril)
    return _contrast_host(w, X, const - 0.5 * w.means_sq, const)


def _log_likelihood(params, X, prior=None, mask=None):
    r"""Plug-in log density; with a mask, that of each row's observed coordinates :math:`O`,
    :math:`\mathcal N(x_O \mid \mu_{c,O}, \Sigma_{c,OO})`."""
    if mask is None:
        return log_likelihood(params, X)
    loc = np.asarray(params.loc)
    cov = covariance(params)

    def score(cols, sub):
        tril = np.linalg.cholesky(cov[..., cols[:, None], cols[None, :]])
        return log_likelihood(GaussianParams(loc[..., cols], tril), sub)

    return _by_pattern(X, mask, loc.shape[-2], score)


def _log_predictive(post, X, mask=None):
    r"""Exact posterior predictive; with a mask, that of each row's observed coordinates.

    The marginal of :math:`\mathrm{NIW}(m, \kappa, 
u, \Psi)` on the coordinates
    :math:`O` is :math:`\mathrm{NIW}(m_O, \kappa, 
u - |ar O|, \Psi_{OO})`, whose
    predictive is the marginal multivariate t (same degrees of freedom).
    """
    if mask is None:
        return log_predictive(post, X)
    loc = np.asarray(post.loc)
    scale = np.asarray(post.scale)
    n_features = loc.shape[-1]

    def score(cols, sub):
        marginal = type(post)(
            loc[:, cols], post.kappa, np.asarray(post.df) - (n_features - cols.size), scale[..., cols[:, None], cols[None, :]]
        )
        return log_predictive(marginal, sub)

    return _by_pattern(X, mask, loc.shape[0], score)


def _niw_expected_log_likelihood(post, X):
    r""":math:`E_q[\log\mathcal N(x \mid \mu_c, \Sigma_c)]` of complete rows under the NIW ``post``."""
    from scipy.special import digamma

    loc = np.asarray(post.loc, dtype=np.float64)
    kappa = np.asarray(post.kappa, dtype=np.float64)
    df = np.asarray(post.df, dtype=np.float64)
    scale = np.asarray(post.scale, dtype=np.float64)
    F = loc.shape[-1]
    shared = scale.ndim == 2
    # The plug-in Gaussian at the mean of the precision, Sigma^-1 ~ W(Psi^-1, nu):
    # N(x; m_c, Psi_c / nu_c).
    cov = scale / (df if shared else df[:, None, None])
    plug_in = log_likelihood(GaussianParams(loc, np.linalg.cholesky(cov)), X)
    i = np.arange(1, F + 1)
    psi_sum = digamma((np.atleast_1d(df)[:, None] - i + 1.0) / 2.0).sum(axis=-1)
    psi_sum = psi_sum[0] if shared else psi_sum
    correction = 0.5 * (psi_sum + F * np.log(2.0) - F * np.log(df)) - 0.5 * F / kappa
    return np.asarray(plug_in) + correction


def expected_log_likelihood(post, X, mask=None):
    r""":math:`E_q[\log\mathcal N(x_i \mid \mu_c, \Sigma_c)]` under the Normal-Inverse-Wishart ``post``, (n_samples, n_classes).

    With :math:`\Sigma^{-1} \sim \mathcal W(\Psi^{-1}, \nu)` and
    :math:`\mu \mid \Sigma \sim \mathcal N(m, \Sigma/\kappa)`:
    :math:`E[\Sigma^{-1}] = \nu\Psi^{-1}`,
    :math:`E[\log|\Sigma|] = \log|\Psi| - F\log 2 - \sum_{i=1}^F \psi\big((\nu - i + 1)/2\big)`
    (the multivariate digamma) and
    :math:`E[(x - \mu)^\top\Sigma^{-1}(x - \mu)] = \nu (x - m)^\top\Psi^{-1}(x - m) + F/\kappa`,
    so

    .. math::

        E_q[\log\mathcal N(x \mid \mu, \Sigma)] = \log\mathcal N(x; m, \Psi/\nu)
            + \tfrac12\Big(\sum_{i=1}^F \psi\big(\tfrac{\nu - i + 1}{2}\big) + F\log 2 - F\log\nu\Big)
            - \frac{F}{2\kappa}.

    Per class (``covariance="full"``) or with one shared :math:`(\nu, \Psi)` and a
    :math:`\kappa_c` per class. With a ``mask``, a row is scored on its observed
    coordinates :math:`O` under the marginal
    :math:`\mathrm{NIW}(m_O, \kappa, \nu - (F - |O|), \Psi_{OO})` of :math:`(\mu_O, \Sigma_{OO})`;
    a row observing nothing scores 0.
    """
    if mask is None:
        return _niw_expected_log_likelihood(post, np.asarray(X, dtype=np.float64))
    loc = np.asarray(post.loc)
    scale = np.asarray(post.scale)
    n_features = loc.shape[-1]

    def score(cols, sub):
        marginal = type(post)(
            loc[:, cols], post.kappa, np.asarray(post.df) - (n_features - cols.size), scale[..., cols[:, None], cols[None, :]]
        )
        return _niw_expected_log_likelihood(marginal, sub)

    return _by_pattern(X, mask, loc.shape[0], score)


def log_density(dist, params, raise_by=0.0):
    r"""Log Normal-Inverse-Wishart density of the plug-in parameters, summed over classes.

    Lebesgue measure on the means and on the free entries of each covariance (the
    measure of ``point``'s ``"map"``, the joint mode in :math:`(\mu, \Sigma)`):

    .. math::

        \log\mathcal W^{-1}(\Sigma \mid \Psi, \nu) + \sum_c \log\mathcal N(\mu_c \mid m_c, \Sigma_c/\kappa_c),

    :math:`\log\mathcal W^{-1}(\Sigma \mid \Psi, \nu) = \tfrac\nu2\log|\Psi| - \tfrac{\nu F}{2}\log 2
    - \log\Gamma_F(\tfrac\nu2) - \tfrac{\nu + F + 1}{2}\log|\Sigma| - \tfrac12\mathrm{tr}(\Psi\Sigma^{-1})`,
    one per class (``"full"``) or one shared covariance (with one normal per class mean).

    Raises
    ------
    ValueError
        For ``raise_by != 0``: the Normal-Inverse-Wishart has no Dirichlet/Beta/Gamma
        concentration for Laplace smoothing to raise.
    """
    from scipy.linalg import solve_triangular as solve
    from scipy.special import multigammaln

    if raise_by != 0:
        raise ValueError(
            "Laplace smoothing raises Dirichlet, Beta and Gamma concentrations; the multivariate Gaussian "
            "family's Normal-Inverse-Wishart prior has none (use smoothing='none': the MAP under the prior)"
        )
    m = np.asarray(dist.loc, dtype=np.float64)
    kappa = np.asarray(dist.kappa, dtype=np.float64)
    df = np.asarray(dist.df, dtype=np.float64)
    scale = np.asarray(dist.scale, dtype=np.float64)
    mu = np.asarray(params.loc, dtype=np.float64)
    tril = np.asarray(params.scale_tril, dtype=np.float64)
    C, F = m.shape
    shared = scale.ndim == 2
    trils = np.broadcast_to(tril, (C, F, F)) if tril.ndim == 2 else tril
    total = 0.0
    # The inverse-Wishart factor(s).
    for c in range(1 if shared else C):
        L = trils[c]
        psi, nu = (scale, float(df)) if shared else (scale[c], float(df[c]))
        half_logdet_sigma = np.log(np.diagonal(L)).sum()
        psi_tril = np.linalg.cholesky(psi)
        trace = np.sum(solve(L, psi_tril, lower=True) ** 2)
        total += (
            nu * np.log(np.diagonal(psi_tril)).sum()
            - 0.5 * nu * F * np.log(2.0)
            - multigammaln(0.5 * nu, F)
            - (nu + F + 1.0) * half_logdet_sigma
            - 0.5 * trace
        )
    # The normal of each class mean given its covariance.
    for c in range(C):
        L = trils[c]
        z = solve(L, mu[c] - m[c], lower=True)
        total += -0.5 * F * np.log(2 * np.pi) - np.log(np.diagonal(L)).sum() + 0.5 * F * np.log(kappa[c]) - 0.5 * kappa[c] * (z @ z)
    return float(total)


def _default_prior(stats, *, shared=False):
    return default_prior(stats, shared)


# ----------------------------------------------------------------------------- numpyro model
# Imported here, with the rest of the model, rather than at the top: these members are
# appended to the family (numpyro itself is imported on first use by _models).
from bayesnb.core.families import _models  # noqa: E402


class GaussianMVModel(_models.ModelSpec):
    r"""The numpyro model: ``covariance`` :math:`\sim \mathcal W^{-1}(\Psi_0, \nu_0)`, ``loc`` :math:`\sim \mathcal N(m_0, \Sigma/\kappa_0)`.

    Per-class covariances, or one shared when the prior's scale is (F, F). The latent
    site is the covariance's Cholesky factor ``covariance_tril``.
    """

    per_feature = False
    joint_features = "jointly Gaussian features"
    title = (
        "gaussian_mv (multivariate Gaussian, Normal-Inverse-Wishart; per-class covariances, or "
        "one shared when the prior's scale is (F, F))"
    )
    data = "real values"
    example = (
        "X, y = np.array([[0.1, 1.2], [2.0, -1.0]]), np.array([0, 1]); prior = priors.NormalInverseWishart("
        "np.zeros((2, 2)), np.ones(2), np.full(2, 4.0), np.stack([np.eye(2)] * 2))"
    )
    parents = "['covariance_tril', 'loc', 'y']"

    def __init__(self, prior):
        super().__init__(prior)
        self.shared = is_shared(prior)
        cov_dims = ("feature", "feature_col") if self.shared else ("class", "feature", "feature_col")
        self.variables = {"loc": ("class", "feature"), "covariance": cov_dims}

    def n_features(self):
        return int(np.shape(self.prior.loc)[1])

    def sample_params(self, n_classes, feature):
        p, numpyro, dist, real = self.prior, _models.numpyro, _models.dist, _models.real
        kappa = real(p.kappa)[:, None, None]
        # The latent site is the Cholesky factor L of Sigma, with numpyro's
        # InverseWishartCholesky density (the inverse-Wishart pushed through the Cholesky
        # map, Jacobian included): Sigma = L L^T is exactly W^-1(Psi, nu). Sampling L
        # (unconstrained by a log-diagonal) rather than Sigma spares the model a Cholesky
        # factorisation and NUTS the positive-definite bijection, which costs compile time.
        # The prior may be traced (an argument of the compiled NUTS program, bayesnb.ppl._nuts).
        cholesky = jnp.linalg.cholesky if is_traced(p.scale) else lambda s: np.linalg.cholesky(np.asarray(s, np.float64))
        scale_tril = real(cholesky(p.scale))
        law = dist.InverseWishartCholesky(real(p.df), scale_tril=scale_tril)
        loc0 = real(p.loc)[:, None, :]
        kappa = kappa[:, None]
        if self.shared:
            tril = numpyro.sample("covariance_tril", law)
            cov = numpyro.deterministic("covariance", tril @ tril.T)
            with _models.class_plate(n_classes):
                loc = numpyro.sample("loc", dist.MultivariateNormal(loc0, scale_tril=tril / jnp.sqrt(kappa)))
        else:
            law = dist.InverseWishartCholesky(real(p.df)[:, None], scale_tril=scale_tril[:, None])
            with _models.class_plate(n_classes):
                tril = numpyro.sample("covariance_tril", law)
                cov = numpyro.deterministic("covariance", tril @ jnp.swapaxes(tril, -1, -2))
                loc = numpyro.sample("loc", dist.MultivariateNormal(loc0, scale_tril=tril / jnp.sqrt(kappa)))
            tril, cov = tril[:, 0], cov[:, 0]
        return {"loc": loc[:, 0], "covariance": cov, "scale_tril": tril}

    def observe(self, values, X, y, feature, n_rows, weight):
        tril = values["scale_tril"] if self.shared else values["scale_tril"][y][:, None]
        with _models.data_plate(n_rows), _models.weighted(weight):
            _models.numpyro.sample(
                "x",
                _models.dist.MultivariateNormal(values["loc"][y][:, None], scale_tril=tril),
                obs=None if X is None else X[:, None, :],
            )

    def per_class(self, params, n_classes):
        if not self.shared:
            return params
        # One covariance per draw, (n, F, F): repeated for each class so that draws
        # stack along the class axis like every other family's parameters.
        tril = np.asarray(params.scale_tril)
        return params._replace(scale_tril=np.broadcast_to(tril[:, None], (tril.shape[0], n_classes) + tril.shape[1:]))

    def canonical(self, samples):
        # Per-class sites carry a singleton axis for the feature plate's dim (see _models.CLASS_DIM).
        cov = np.asarray(samples["covariance"])
        return {
            "loc": np.asarray(samples["loc"])[..., 0, :],
            "covariance": cov if self.shared else cov[..., 0, :, :],
        }

    def log_likelihood_stats(self, values, stats):
        real = _models.real
        n = real(stats.class_count)
        F = self.n_features()
        d = real(stats.mean) - values["loc"]
        scatter = real(stats.scatter) + n[:, None, None] * d[:, :, None] * d[:, None, :]
        tril = jnp.broadcast_to(values["scale_tril"], scatter.shape)
        half_logdet = jnp.sum(jnp.log(jnp.diagonal(tril, axis1=-2, axis2=-1)), axis=-1)
        trace = jnp.trace(cho_solve((tril, True), scatter), axis1=-2, axis2=-1)
        return jnp.sum(-0.5 * n * F * jnp.log(2 * jnp.pi) - n * half_logdet - 0.5 * trace)

    def values(self, params):
        return {"loc": np.asarray(params.loc), "covariance": covariance(params)}

    def moments(self, post):
        F = self.n_features()
        cov_mean, cov_sd = _models.inverse_wishart_moments(post.df, post.scale)
        kappa = np.asarray(post.kappa, dtype=np.float64)
        diag = np.diagonal(np.broadcast_to(cov_mean, (kappa.size, F, F)), axis1=-2, axis2=-1)
        # mu_c | Sigma ~ N(m_c, Sigma / kappa_c), so Cov(mu_c) = E[Sigma] / kappa_c.
        loc = (np.asarray(post.loc, dtype=np.float64), np.sqrt(diag / kappa[:, None]))
        return {"loc": loc, "covariance": (cov_mean, cov_sd)}


def recognise(view):
    r"""Normal-Inverse-Wishart–multivariate Normal in a user's numpyro model (the ``recognise`` member).

    ``Sigma ~ InverseWishart(df, Psi)`` (or its Cholesky factor ``L`` ~
    ``InverseWishartCholesky``), per class or one shared by the classes;
    ``loc ~ MultivariateNormal(m, Sigma / kappa)`` per class;
    ``x ~ MultivariateNormal(loc[y], Sigma[y])``. ``kappa`` is read as the ratio of the
    diagonals of ``Sigma`` and of the prior covariance of ``loc``, which must be one
    constant per class.

    Parameters
    ----------
    view : bayesnb.ppl.compile.SiteView

    Returns
    -------
    Recognised or None
        None when the site is not multivariate Normal.
    """
    from bayesnb.exceptions import ModelCompileError

    if view.likelihood_kind != "MultivariateNormal":
        return None
    expect = (
        "Normal-Inverse-Wishart–MultivariateNormal: x ~ MultivariateNormal(loc[y], Sigma[y]) with "
        "Sigma ~ InverseWishart(df, Psi) (or its Cholesky factor ~ InverseWishartCholesky), per class or "
        "shared, and loc ~ MultivariateNormal(m, Sigma / kappa) per class"
    )
    F = view.n_columns
    loc = view.link("loc", "MultivariateNormal", (F,), expect=expect)
    try:
        # The latent is the Cholesky factor L of Sigma (as in the family's own model).
        cov = view.link("scale_tril", "InverseWishartCholesky", (F, F), shared=True, expect=expect)
        to_cov = _cholesky_to_cov
    except ModelCompileError:
        cov = view.link("covariance_matrix", "InverseWishart", (F, F), shared=True, expect=expect)
        to_cov = np.asarray

    def covariance(probe):
        return to_cov(probe.value(cov))

    ratio = view.constant(
        lambda probe: np.diagonal(covariance(probe), axis1=-2, axis2=-1)
        / np.diagonal(probe.param(loc, "covariance_matrix", event_dims=2), axis1=-2, axis2=-1),
        loc.site,
        f"the prior covariance of {loc.site!r} must be Sigma / kappa with a constant kappa ({expect})",
    )
    if not np.allclose(ratio, ratio[..., :1], rtol=1e-9, atol=0.0):
        view.refuse(f"the prior covariance of {loc.site!r} is not Sigma / kappa for one kappa per class ({expect})")
    scale_tril = view.constant(lambda probe: probe.param(cov, "scale_tril", event_dims=2), cov.site, expect)
    scale = scale_tril @ np.swapaxes(scale_tril, -1, -2)
    df = view.field(cov, "concentration")
    if view.is_hyperprior(df):
        view.refuse(f"the degrees of freedom of {cov.site!r} have a hyperprior, which bayesnb does not integrate for NIW")
    prior = NormalInverseWishart(view.field(loc, "loc", event_dims=1), ratio[..., 0], df, scale)
    return view.recognised(prior, loc=loc, covariance=(cov, to_cov))


def _cholesky_to_cov(tril):
    """Covariances :math:`L L^\top` of Cholesky factors ``tril`` of shape (..., F, F)."""
    tril = np.asarray(tril)
    return tril @ np.swapaxes(tril, -1, -2)


family = register(
    Family(
        name="gaussian_mv",
        prior_type=NormalInverseWishart,
        support="real",
        hyperparameters=("loc", "kappa", "df", "scale"),
        stats=_stats,
        posterior=posterior,
        point=point,
        log_likelihood=_log_likelihood,
        log_likelihood_contrast=log_likelihood_contrast,
        log_predictive=_log_predictive,
        log_evidence=_evidence,
        sample=sample,
        simulate=lambda key, params, y_index, stats=None: simulate(key, params, y_index),
        default_prior=_default_prior,
        model=GaussianMVModel,
        recognise=recognise,
        expected_log_likelihood=expected_log_likelihood,
        log_density=log_density,
    )
)
