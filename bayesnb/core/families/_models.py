r"""The shared base of the families' numpyro models (the ``Family.model`` member).

A family's numpyro model is a subclass of :class:`ModelSpec` in the family's own module,
constructed from a prior: ``family.model(prior)``. It supplies the family's pieces of the
generative story; :mod:`bayesnb.ppl.models` assembles them into the naive Bayes model (class
proportions, labels, the plates, the blocks of a mixed model, row weights, unobserved
entries).

What a subclass provides
------------------------
``variables`` : dict of name -> tuple of dims
    The canonical parameters (site names of the model and variable names of
    :mod:`bayesnb.ppl.export`) and their dims: ``"class"``, ``"feature"``, ``"feature_col"``
    (second axis of a covariance), ``"category"``. Set on the class or in ``__init__``.
``sample_params(n_classes, feature) -> dict``
    Sample the parameters inside ``numpyro`` (use :func:`class_plate` and
    :func:`feature_plate` so that every block shares the ``class`` plate); return the
    arrays :meth:`observe` and :meth:`log_likelihood_stats` need, of shape
    ``(n_classes, n_features, ...)``.
``observe(values, X, y, feature, n_rows, weight, **options)``
    The site ``"x"`` of the rows (``X`` None: generated) inside :func:`data_plate` and
    :func:`weighted`, given the class index ``y`` of each row.
``log_likelihood_stats(values, stats) -> scalar``
    The log-likelihood from the family's sufficient statistics (up to a constant).
``values(params) -> dict``
    Canonical arrays from the family's parameter pytree (leading draw axes kept).
``moments(posterior) -> dict of name -> (mean, sd)``
    Closed-form posterior moments of each canonical parameter.

and may override ``canonical`` (sites to canonical arrays), ``per_class`` (draws with
a class axis on every leaf, where some parameter is shared by the classes), ``coords`` (arviz
coordinates of dims of its own, e.g. ``category``), ``cells`` (the (feature, category)
cells that exist, where a ``category`` dim is padded), ``n_features``,
``check_rows`` (reject rows the model gives no probability), ``per_feature`` and
``joint_features`` (a family whose features are not separate factors of a row's
likelihood). Its documentation attributes (``title``, ``data``, ``example``, ``parents``,
``options_doc``) fill in the docstrings of the ``<family>_model`` functions of
:mod:`bayesnb.ppl.models`.

numpyro is imported on first use (``_models.numpyro``, ``_models.dist``), so that
``import bayesnb`` stays light.
"""

from __future__ import annotations

import contextlib
import importlib

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "ModelSpec",
    "cell_count",
    "class_plate",
    "data_plate",
    "dirichlet_moments",
    "feature_plate",
    "inverse_wishart_moments",
    "real",
    "weighted",
]

_LAZY = {"numpyro": "numpyro", "dist": "numpyro.distributions"}


def __getattr__(name):
    # numpyro on first use: the family modules are imported by ``import bayesnb``.
    if name in _LAZY:
        return importlib.import_module(_LAZY[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def real(a):
    """``a`` as jax's default float: float64 inside the library's x64 scope, float32 outside.

    A jax array (a traced one too: the prior of the un-collapsed model of integrated
    hyperparameters, :func:`bayesnb.ppl.models.hyper_model`, is a function of sample
    sites) is cast without leaving jax.
    """
    if isinstance(a, jax.Array):
        return jnp.asarray(a).astype(jnp.result_type(float))
    return jnp.asarray(np.asarray(a, dtype=np.float64))


# Every site of a row lives in the plate "data" at dim -2 (and a block's features in its
# plate "feature" at dim -1), every per-class parameter in the plate "class" at dim -2: one
# dim per plate name, so that numpyro.render_model draws one "data" and one "class" box.
# Sites without a feature axis carry a singleton there.
ROW_DIM = CLASS_DIM = -2


def weighted(weight):
    """Scale the log density of each row by its weight (``None``: no scaling)."""
    if weight is None:
        return contextlib.nullcontext()
    return __getattr__("numpyro").handlers.scale(scale=real(weight)[:, None])


def data_plate(n_rows):
    """The plate ``"data"`` of the rows."""
    return __getattr__("numpyro").plate("data", n_rows, dim=ROW_DIM)


def class_plate(n_classes):
    """The plate ``"class"`` of the per-class parameters (shared by every block)."""
    return __getattr__("numpyro").plate("class", n_classes, dim=CLASS_DIM)


def feature_plate(feature, n_features):
    """The block's feature plate (named ``feature``, e.g. ``"gaussian__feature"``)."""
    return __getattr__("numpyro").plate(feature, n_features, dim=-1)


def cell_count(stats):
    r""":math:`N_{cj}`: the class count per cell, or the per-cell observed weight of masked statistics."""
    observed = getattr(stats, "observed_count", None)
    if observed is not None:
        return real(observed)
    return real(stats.class_count)[:, None]


def dirichlet_moments(concentration, mask=None):
    r"""Mean and standard deviation of each coordinate of :math:`\mathrm{Dir}(a)`.

    :math:`E\theta_k = a_k / A`, :math:`\mathrm{Var}\,\theta_k = a_k (A - a_k) / (A^2 (A + 1))`,
    :math:`A = \sum_k a_k` over the last axis (valid coordinates only; masked ones NaN).

    Parameters
    ----------
    concentration : array of shape (..., K)
    mask : bool array broadcastable to (..., K), optional
        The valid coordinates.

    Returns
    -------
    mean, sd : arrays of shape (..., K)
    """
    a = np.asarray(concentration, dtype=np.float64)
    valid = np.ones(a.shape, bool) if mask is None else np.broadcast_to(mask, a.shape)
    a_valid = np.where(valid, a, 0.0)
    total = a_valid.sum(axis=-1, keepdims=True)
    mean = a_valid / total
    sd = np.sqrt(a_valid * (total - a_valid) / (total * total * (total + 1.0)))
    return np.where(valid, mean, np.nan), np.where(valid, sd, np.nan)


def inverse_wishart_moments(df, scale):
    r"""Entrywise mean and standard deviation of :math:`\mathcal W^{-1}(\Psi, \nu)`.

    .. math::

        E\Sigma = \frac{\Psi}{\nu - F - 1}, \qquad
        \mathrm{Var}\,\Sigma_{ij} = \frac{(\nu - F + 1)\psi_{ij}^2 + (\nu - F - 1)\psi_{ii}\psi_{jj}}
            {(\nu - F)(\nu - F - 1)^2(\nu - F - 3)}

    (the mean exists for :math:`\nu > F + 1`, the variance for :math:`\nu > F + 3`;
    otherwise ``inf``).

    Parameters
    ----------
    df : array of shape (...)
    scale : array of shape (..., F, F)

    Returns
    -------
    mean, sd : arrays of shape (..., F, F)
    """
    psi = np.asarray(scale, dtype=np.float64)
    F = psi.shape[-1]
    nu = np.asarray(df, dtype=np.float64)[..., None, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(nu > F + 1, psi / (nu - F - 1), np.inf)
        d = np.diagonal(psi, axis1=-2, axis2=-1)
        num = (nu - F + 1) * psi * psi + (nu - F - 1) * d[..., :, None] * d[..., None, :]
        var = num / ((nu - F) * (nu - F - 1) ** 2 * (nu - F - 3))
        sd = np.where(nu > F + 3, np.sqrt(var), np.inf)
    return mean, sd


class ModelSpec:
    """One family's pieces of the numpyro model, for one prior (see the module).

    Parameters
    ----------
    prior : the family's prior pytree
    """

    variables: dict = {}
    # Whether each feature is its own factor of a row's likelihood, so that an unobserved
    # entry is integrated out by dropping its factor (numpyro.handlers.mask).
    per_feature = True
    # For a family with per_feature False: what is joint, for the error on masked rows.
    joint_features = ""

    # Documentation of the <family>_model functions of bayesnb.ppl.models.
    title = ""
    data = ""
    example = ""
    parents = ""
    options_doc = ""

    def __init__(self, prior):
        self.prior = prior

    def sample_params(self, n_classes, feature):  # pragma: no cover - abstract
        raise NotImplementedError

    def observe(self, values, X, y, feature, n_rows, weight, **options):  # pragma: no cover - abstract
        raise NotImplementedError

    def log_likelihood_stats(self, values, stats):  # pragma: no cover - abstract
        raise NotImplementedError

    def values(self, params):  # pragma: no cover - abstract
        """Canonical parameter arrays from the family's parameter pytree (leading axes kept)."""
        raise NotImplementedError

    def moments(self, post):  # pragma: no cover - abstract
        """Closed-form posterior mean and standard deviation of each canonical parameter."""
        raise NotImplementedError

    def per_class(self, params, n_classes):
        """Draws of the parameters with a class axis on every leaf, shape (n, n_classes, ...).

        Callers that stack draws as classes (:func:`bayesnb.analysis.uncertainty.stacked_log_likelihood`)
        need it; a leaf shared by the classes is repeated. Default: as is (every leaf
        is per class).
        """
        return params

    def coords(self):
        """Coordinates of the block's own dims beyond ``class`` and the features (e.g. ``category``).

        Returns
        -------
        dict of dim name -> list
            The arviz coordinates of :mod:`bayesnb.ppl.export` (unprefixed; a mixed model
            prefixes them with the block name). Default: none.
        """
        return {}

    def cells(self):
        """Which (feature, category) cells of a variable with a ``category`` dim exist.

        A family whose features have different numbers of categories stores them padded
        to the largest; the arviz export keeps only the cells that exist (no padding in
        what users see). Default: None (the family has no ``category`` dim).

        Returns
        -------
        bool ndarray of shape (n_features, len(coords()["category"])) or None
        """
        return None

    def canonical(self, samples):
        """Canonical arrays from the model's sites (identity except where padded)."""
        return {name: np.asarray(samples[name]) for name in self.variables}

    def n_features(self):
        """Number of features of the block (the prior's second axis)."""
        return int(np.shape(self.prior[0])[1])

    def check_rows(self, X):
        """``X`` if the model gives its rows a probability; otherwise ``ValueError``."""
        return X
