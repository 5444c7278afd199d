r"""Special functions needed to full float64 accuracy."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln as jax_gammaln
from scipy.special import gammaln as scipy_gammaln

from bayesnb.core._x64 import x64

__all__ = ["log_rising_factorial", "log_rising_factorial_np"]

# Below this, lgamma(a + x) - lgamma(a) loses at most ~eps * lgamma(a + x) in absolute
# terms; above it the asymptotic (Stirling) difference is used, whose truncation error is
# below 1 / (1188 a^9) < 1e-16.
_STIRLING_FROM = 30.0


def _stirling_tail(z):
    # z * z overflows to inf for z > 1.3e154, where the tail's true value is 1 / (12 z) and
    # inf gives exactly that; only NumPy's RuntimeWarning is silenced (no effect under jax).
    with np.errstate(over="ignore"):
        z2 = z * z
        return (1.0 / 12.0 - (1.0 / 360.0 - (1.0 / 1260.0 - 1.0 / (1680.0 * z2)) / z2) / z2) / z


@x64
@jax.jit
def log_rising_factorial(a, x):
    r"""Log rising factorial :math:`\log\Gamma(a + x) - \log\Gamma(a)`.

    Written as a difference of two ``lgamma`` values it loses about
    :math:`\epsilon \log\Gamma(a)` in absolute terms: with :math:`a = 10^6` that is
    :math:`\sim 3 \cdot 10^{-9}`, larger than the quantity itself for small :math:`x`.
    For :math:`a \ge 30` the difference of Stirling series is used instead,

    .. math:: x \log a + (a + x - \tfrac12)\,\mathrm{log1p}(x / a) - x + S(a + x) - S(a),

    which has no cancellation. Differentiable in both arguments.

    Parameters
    ----------
    a : array_like
        Positive, broadcastable with ``x``.
    x : array_like
        Non-negative (any real, not only integers).

    Returns
    -------
    jax.Array of float64, the broadcast shape of ``a`` and ``x``.
    """
    return _log_rising(jnp, jax_gammaln, jnp.asarray(a, jnp.float64), jnp.asarray(x, jnp.float64))


def log_rising_factorial_np(a, x):
    """NumPy/SciPy twin of :func:`log_rising_factorial` for data paths.

    The same formula (written once, in :func:`_log_rising`) evaluated eagerly in numpy:
    no JAX compilation for every new batch shape. Not differentiable.
    """
    a, x = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(x, dtype=np.float64))
    # Counts near the float64 limit overflow to inf (their callers refuse such rows).
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return _log_rising(np, scipy_gammaln, a, x)


def _log_rising(xp, gammaln, a, x):
    large = a >= _STIRLING_FROM
    a_l = xp.where(large, a, _STIRLING_FROM)
    stirling = (
        x * xp.log(a_l)
        + (a_l + x - 0.5) * xp.log1p(x / a_l)
        - x
        + _stirling_tail(a_l + x)
        - _stirling_tail(a_l)
    )
    a_s = xp.where(large, 1.0, a)
    direct = gammaln(a_s + x) - gammaln(a_s)
    return xp.where(large, stirling, direct)


def log_rising_over_factorial_np(a, x):
    r""":math:`\log\frac{\Gamma(a + x)}{\Gamma(a)\,\Gamma(x + 1)}` elementwise (numpy), accurate for huge ``x``.

    The log rising factorial of a count less :math:`\log x!`: the count's term of a
    Dirichlet-multinomial or negative-binomial probability of a count *vector*. Both
    parts grow like :math:`x \log x`, so their difference, about
    :math:`(a - 1)\log x - \log\Gamma(a)`, would keep only
    :math:`\epsilon\, x \log x` of absolute accuracy (about 8 at :math:`x = 10^{15}`).
    Where :math:`x > \max(a, 30)` it is evaluated as the rising factorial from
    :math:`x + 1` by :math:`a - 1` (Stirling differences, no cancellation) less
    :math:`\log\Gamma(a)`.

    Parameters
    ----------
    a : array_like
        Positive, broadcastable with ``x``.
    x : array_like
        Non-negative.

    Returns
    -------
    float64 ndarray of the broadcast shape.
    """
    a, x = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(x, dtype=np.float64))
    out = np.empty(a.shape)
    swap = x > np.maximum(a, _STIRLING_FROM)
    keep = ~swap
    with np.errstate(divide="ignore", invalid="ignore"):
        out[keep] = log_rising_factorial_np(a[keep], x[keep]) - scipy_gammaln(x[keep] + 1.0)
        # Gamma(a + x) / Gamma(x + 1) is the rising factorial from x + 1 by a - 1 (> -1).
        out[swap] = log_rising_factorial_np(x[swap] + 1.0, a[swap] - 1.0) - scipy_gammaln(a[swap])
    return out


# log k! for the small integer counts that dominate count data, filled by gammaln itself
# so that a table value is bit-identical to gammaln(k + 1).
_LOG_FACTORIAL_SIZE = 1024
_LOG_FACTORIAL = None


def small_counts(x, top, dtype=np.int32):
    """The values ``x`` cast to ``dtype``, and where they are whole counts ``0 .. top``.

    Unsigned integers, and signed ones whose negatives read as unsigned are past ``top``
    (``top`` below 2**(bits - 1)): their range, read on the values themselves, then the
    cast. Others (floats; int8 with ``top`` of 128 or more): the cast alone, checked
    against the values: a fraction, or a value past the range of ``dtype`` (whatever
    its cast gives: wrapped or saturated), differs from its cast, and negative counts
    read as unsigned are past ``top``. (Clamping first, in the values' type, costs a
    pass as long as the cast; the comparison casts the counts in small buffers: no
    float64 copy.)

    Parameters
    ----------
    x : ndarray of integer, boolean or float values
    top : int, below the largest value of ``dtype``
    dtype : signed integer dtype

    Returns
    -------
    counts : ndarray of ``dtype``, the shape of ``x``
    ok : bool ndarray of the shape of ``x`` (a bool scalar for 0-d ``x``)
    """
    if x.dtype == np.bool_:
        x = x.view(np.uint8)
    counts = np.empty(x.shape, dtype=dtype)
    if x.dtype.kind == "u" or (x.dtype.kind == "i" and top < 2 ** (8 * x.itemsize - 1)):
        # Whole by their type: the range alone, read on the values (negatives read as
        # unsigned are at least 2**(bits - 1), past ``top``); where it holds, the cast is
        # exact. (Not for int8 with top >= 128: -100 reads as 156.)
        ok = x.view(x.dtype.str.replace("i", "u")) <= top  # same byte order
        np.copyto(counts, x, casting="unsafe")
        return counts, ok
    with np.errstate(invalid="ignore"):
        np.copyto(counts, x, casting="unsafe")
    ok = counts.view(f"u{counts.itemsize}") <= top
    ok &= np.equal(counts, x)
    return counts, ok


def log_factorial_np(x):
    r""":math:`\log x! = \log\Gamma(x + 1)` elementwise (numpy), by table for integers below 1024.

    Parameters
    ----------
    x : ndarray of non-negative reals (any integer, boolean or float dtype)

    Returns
    -------
    float64 ndarray of the shape of ``x``; equal to ``scipy.special.gammaln(x + 1)``.
    """
    from scipy.special import gammaln

    global _LOG_FACTORIAL
    if _LOG_FACTORIAL is None:
        _LOG_FACTORIAL = gammaln(np.arange(_LOG_FACTORIAL_SIZE, dtype=np.float64) + 1.0)
    x = np.asarray(x)
    if x.dtype.kind not in "iufb":
        x = x.astype(np.float64)
    # No float64 copy of integer counts: one checked cast, then one gather.
    k, tabled = small_counts(x, _LOG_FACTORIAL_SIZE - 1)
    if tabled.all():
        return np.take(_LOG_FACTORIAL, k)
    out = gammaln(x.astype(np.float64) + 1.0, out=np.empty(x.shape))
    out[tabled] = _LOG_FACTORIAL[k[tabled]]
    return out


__all__ += ["log_factorial_np", "small_counts", "log_rising_over_factorial_np"]
