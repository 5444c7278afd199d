r"""What the families with Gamma-distributed rates share (Poisson, exponential).

Both keep a rate :math:`\lambda_{cj}` per (class, feature) with a
:math:`\mathrm{Gamma}(\alpha, \beta)` prior (shape, *rate*; numpyro's
``Gamma(concentration, rate)``) and a Gamma posterior :math:`\mathrm{Gamma}(a, b)`; they
differ in the likelihood and so in which statistic updates which field. The prior's
validation, the posterior mode and mean of :math:`\log\lambda` and exact draws of
:math:`\log\lambda` live here once.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from bayesnb.core import _sampling
from bayesnb.core._x64 import x64
from bayesnb.core.kernels import is_traced
from bayesnb.core.priors import Gamma, positive_array

__all__ = ["make_prior", "log_mode", "log_mean", "sample_log_rate", "expected_log_rate", "log_density"]


def make_prior(concentration, rate, shape, names=("concentration", "rate")):
    """Validated Gamma prior broadcast to ``shape``.

    Parameters
    ----------
    concentration, rate : float or array_like
        Gamma shape :math:`\\alpha > 0` and rate :math:`\\beta > 0`, finite, each
        broadcastable to ``shape``.
    shape : tuple of int
        ``(n_classes, n_features)``.
    names : pair of str
        Names used in error messages (the estimators pass ``("alpha", "beta")``).

    Returns
    -------
    Gamma
        Arrays of shape ``shape``.

    Raises
    ------
    TypeError
        If a value is not numeric.
    ValueError
        If a value is non-finite, not positive, or of a shape that does not broadcast.
    """
    return Gamma(
        positive_array(concentration, f"{names[0]} (Gamma concentration)", shape),
        positive_array(rate, f"{names[1]} (Gamma rate)", shape),
    )


def recognise_rate(view, likelihood):
    r"""Gamma–``likelihood`` (Poisson, Exponential) in a user's numpyro model.

    ``x ~ likelihood(rate=lambda[y])`` with ``lambda ~ Gamma(a, b)`` per (class, feature):
    the shared body of the Poisson and exponential families' ``recognise`` members.

    Parameters
    ----------
    view : bayesnb.ppl.compile.SiteView
    likelihood : str
        The numpyro distribution of the site (``"Poisson"``, ``"Exponential"``).

    Returns
    -------
    Recognised or None
        None when the site's likelihood is another one.
    """
    if view.likelihood_kind != likelihood:
        return None
    rate = view.link(
        "rate",
        "Gamma",
        (view.n_columns,),
        expect=f"Gamma–{likelihood}: rate = lambda[y] with lambda ~ Gamma(a, b) per (class, feature)",
    )
    return view.recognised(Gamma(view.field(rate, "concentration"), view.field(rate, "rate")), rate=rate)


def log_mode(dist):
    r""":math:`\log((a - 1) / b)`, the log of the posterior mode of each rate.

    Traced (``jax.jit``, ``jax.grad``), no error can be raised: those entries are NaN.

    Raises
    ------
    ValueError
        Where a shape :math:`a < 1`: the density is then unbounded at 0 and has no mode.
    """
    if is_traced(dist):
        a = jnp.asarray(dist.concentration, dtype=jnp.float64)
        b = jnp.asarray(dist.rate, dtype=jnp.float64)
        return jnp.where(a < 1.0, jnp.nan, jnp.log(a - 1.0) - jnp.log(b))
    a = np.asarray(dist.concentration, dtype=np.float64)
    b = np.asarray(dist.rate, dtype=np.float64)
    below = a < 1.0
    if below.any():
        where = tuple(int(i) for i in np.argwhere(below)[0])
        raise ValueError(
            "estimate='map' is undefined here: a posterior Gamma shape is "
            f"{a[where]:.4g} < 1 (at class/feature index {where}), so the posterior "
            "density of that rate is unbounded at 0 and has no mode. Use a prior "
            "concentration alpha >= 1, or estimate='mean' / 'predictive'."
        )
    with np.errstate(divide="ignore"):
        return np.log(a - 1.0) - np.log(b)


def log_mean(dist):
    r""":math:`\log(a / b)`, the log of the mean of each rate."""
    if is_traced(dist):
        return jnp.log(jnp.asarray(dist.concentration, dtype=jnp.float64)) - jnp.log(jnp.asarray(dist.rate, dtype=jnp.float64))
    return np.log(np.asarray(dist.concentration, dtype=np.float64)) - np.log(np.asarray(dist.rate, dtype=np.float64))


def sample_log_rate(key, dist, n):
    r"""``n`` iid draws of :math:`\log\lambda`, shape (n,) + the shape of ``dist``.

    :math:`\log\lambda = \log G - \log b` with :math:`G \sim \mathrm{Gamma}(a, 1)` drawn
    in log space (:func:`bayesnb.core._sampling.log_gamma`: NumPy on concrete inputs,
    ``jax.random.loggamma`` under a trace; float64), so small shapes do not underflow.
    """
    if is_traced(key, dist):
        return _sample_log_rate_traced(key, dist, n)
    a = np.asarray(dist.concentration, dtype=np.float64)
    b = np.asarray(dist.rate, dtype=np.float64)
    return _sampling.log_gamma(key, a, (int(n),) + a.shape) - np.log(b)


@x64
def _sample_log_rate_traced(key, dist, n):
    a = jnp.asarray(dist.concentration, dtype=jnp.float64)
    b = jnp.asarray(dist.rate, dtype=jnp.float64)
    return _sampling.log_gamma(key, a, (n,) + a.shape) - jnp.log(b)


def expected_log_rate(dist):
    r""":math:`E[\log\lambda] = \psi(a) - \log b` and :math:`E[\lambda] = a / b` under :math:`\mathrm{Gamma}(a, b)`."""
    from scipy.special import digamma

    a = np.asarray(dist.concentration, dtype=np.float64)
    b = np.asarray(dist.rate, dtype=np.float64)
    return digamma(a) - np.log(b), a / b


def log_density(dist, log_rate, raise_by=0.0):
    r"""Log density of :math:`\mathrm{Gamma}(a + \text{raise\_by}, b)` (shape, rate) at :math:`\lambda = e^{\text{log\_rate}}`, summed.

    .. math:: a \log b - \log\Gamma(a) + (a - 1)\log\lambda - b\lambda
    """
    from scipy.special import gammaln

    a = np.asarray(dist.concentration, dtype=np.float64) + float(raise_by)
    b = np.asarray(dist.rate, dtype=np.float64)
    lr = np.broadcast_to(np.asarray(log_rate, dtype=np.float64), a.shape)
    with np.errstate(invalid="ignore"):
        term = np.where(a != 1.0, (a - 1.0) * lr, 0.0)
    return float(np.sum(a * np.log(b) - gammaln(a) + term - b * np.exp(lr)))
