"""Conjugate priors as ``NamedTuple`` pytrees, with numpyro's parameter names.

The scikit-learn-facing ``alpha`` / ``class_alpha`` parameters are turned into these by
the ``*_from_alpha`` helpers, which also say clearly what is wrong with a bad value.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from bayesnb.core.kernels import namespace

__all__ = [
    "Dirichlet",
    "Beta",
    "CategoricalDirichlet",
    "NormalInverseGamma",
    "NormalInverseWishart",
    "Gamma",
    "dirichlet_from_alpha",
    "beta_from_alpha",
    "categorical_dirichlet_from_alpha",
]


class Dirichlet(NamedTuple):
    """Dirichlet prior over the last axis.

    Attributes
    ----------
    concentration : ndarray of shape (..., K)
        Positive concentrations (numpyro's ``Dirichlet(concentration)``).
    """

    concentration: np.ndarray


class Beta(NamedTuple):
    """Beta prior on the probability that a binary feature is on.

    Attributes
    ----------
    concentration1 : ndarray
        Pseudo-count of ones, ``a`` (numpyro's ``Beta(concentration1, concentration0)``).
    concentration0 : ndarray
        Pseudo-count of zeros, ``b``.
    """

    concentration1: np.ndarray
    concentration0: np.ndarray


class CategoricalDirichlet(NamedTuple):
    """One Dirichlet per (class, feature) over that feature's categories (ragged, padded).

    Attributes
    ----------
    concentration : ndarray of shape (n_classes, n_features, max_categories)
        Concentrations; entries at ``k >= n_categories[j]`` are padding and ignored.
    n_categories : int ndarray of shape (n_features,)
        Number of categories of each feature.
    new_concentration : ndarray of shape (n_classes, n_features)
        Concentration reserved for a category not among the ``n_categories[j]`` known
        ones (it is never observed, so a conjugate update leaves it unchanged).
    """

    concentration: np.ndarray
    n_categories: np.ndarray
    new_concentration: np.ndarray

    @property
    def mask(self):
        """Bool array of shape (n_features, max_categories): the valid coordinates."""
        k = self.concentration.shape[-1]
        # jax.numpy where n_categories is traced (jax.jit / jax.vmap of the family's functions).
        xp = namespace(self.n_categories)
        return xp.arange(k)[None, :] < xp.asarray(self.n_categories)[:, None]


class NormalInverseGamma(NamedTuple):
    r"""Normal-Inverse-Gamma prior on a mean and variance, per (class, feature).

    :math:`\sigma^2 \sim \mathrm{InvGamma}(\text{concentration}, \text{rate})`,
    :math:`\mu \mid \sigma^2 \sim \mathcal N(\text{loc}, \sigma^2 / \kappa)`.

    Attributes
    ----------
    loc : ndarray of shape (n_classes, n_features)
    kappa : ndarray of shape (n_classes, n_features)
        Prior pseudo-observations for the mean (> 0).
    concentration : ndarray of shape (n_classes, n_features)
        Inverse-Gamma shape :math:`a` (> 0).
    rate : ndarray of shape (n_classes, n_features)
        Inverse-Gamma scale :math:`b` (> 0).
    """

    loc: np.ndarray
    kappa: np.ndarray
    concentration: np.ndarray
    rate: np.ndarray


class NormalInverseWishart(NamedTuple):
    r"""Normal-Inverse-Wishart prior on a mean vector and covariance matrix.

    :math:`\Sigma \sim \mathcal{W}^{-1}(\text{scale}, \text{df})`,
    :math:`\mu \mid \Sigma \sim \mathcal N(\text{loc}, \Sigma / \kappa)`.

    Attributes
    ----------
    loc : ndarray of shape (n_classes, n_features)
    kappa : ndarray of shape (n_classes,)
    df : ndarray of shape (n_classes,) or scalar
        Degrees of freedom (> n_features - 1).
    scale : ndarray of shape (n_classes, n_features, n_features) or (n_features, n_features)
        Positive-definite scale matrix (per class, or one shared matrix).
    """

    loc: np.ndarray
    kappa: np.ndarray
    df: np.ndarray
    scale: np.ndarray


class Gamma(NamedTuple):
    """Gamma prior on Poisson rates, per (class, feature).

    Attributes
    ----------
    concentration : ndarray of shape (n_classes, n_features)
        Shape (> 0), numpyro's ``Gamma(concentration, rate)``.
    rate : ndarray of shape (n_classes, n_features)
        Rate (> 0).
    """

    concentration: np.ndarray
    rate: np.ndarray


def real_array(value, name, shape=None, positive=False):
    """``value`` as a finite float64 array, optionally positive and broadcast to ``shape``.

    The one place prior hyperparameters are checked, so every family words its errors
    alike: ``TypeError`` when not numeric, ``ValueError`` when not finite, not positive
    (with ``positive``) or not broadcastable; ``name`` is in every message.
    """
    kind = "a positive number or array" if positive else "a number or array"
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{name} must be {kind}, got {value!r}")
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be {kind}, got {value!r}") from exc
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if positive and np.any(arr <= 0):
        raise ValueError(f"{name} must be > 0, got min {arr.min():g}")
    if shape is None:
        return arr
    try:
        return np.broadcast_to(arr, shape).copy()
    except ValueError:
        raise ValueError(
            f"{name} has shape {arr.shape}, which does not broadcast to {shape} "
            "(expected a scalar or an array of that shape)"
        ) from None


def positive_array(value, name, shape):
    """``real_array(value, name, shape, positive=True)``: a concentration, rate or count."""
    return real_array(value, name, shape, positive=True)


def dirichlet_from_alpha(alpha, shape, name="alpha"):
    """Dirichlet prior with concentration ``alpha`` broadcast to ``shape``.

    Parameters
    ----------
    alpha : float or array_like
        Positive concentration(s), broadcastable to ``shape``.
    shape : tuple of int
    name : str
        Parameter name used in error messages.

    Returns
    -------
    Dirichlet
    """
    return Dirichlet(positive_array(alpha, name, shape))


def beta_from_alpha(alpha, shape, name="alpha"):
    """Beta prior from a scalar/array (symmetric) or a pair ``(a, b)``.

    A ``tuple`` or ``list`` of length two is read as ``(a, b)`` (each a scalar or an
    array broadcastable to ``shape``); anything else is a symmetric ``a = b = alpha``.

    Returns
    -------
    Beta
    """
    if isinstance(alpha, (tuple, list)) and len(alpha) == 2:
        a, b = alpha
        return Beta(positive_array(a, f"{name}[0] (a)", shape), positive_array(b, f"{name}[1] (b)", shape))
    if isinstance(alpha, (tuple, list)):
        raise ValueError(
            f"{name} given as a sequence must be a pair (a, b); got length {len(alpha)}. "
            "Pass an ndarray for per-feature symmetric concentrations."
        )
    arr = positive_array(alpha, name, shape)
    return Beta(arr, arr.copy())


def categorical_dirichlet_from_alpha(alpha, n_classes, n_categories, name="alpha"):
    """Symmetric Dirichlet per (class, feature) over each feature's categories.

    Parameters
    ----------
    alpha : float or array_like broadcastable to (n_classes, n_features)
        Concentration of every category of that cell.
    n_classes : int
    n_categories : int array_like of shape (n_features,)

    Returns
    -------
    CategoricalDirichlet
    """
    n_categories = np.asarray(n_categories, dtype=np.int64)
    cell = positive_array(alpha, name, (n_classes, n_categories.shape[0]))
    k = int(np.max(n_categories, initial=1))
    return CategoricalDirichlet(np.repeat(cell[:, :, None], k, axis=2), n_categories, cell)
