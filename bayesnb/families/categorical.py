r"""Categorical family: each feature takes one of :math:`K_j` categories.

:math:`x_j \mid y=c \sim \mathrm{Cat}(\theta_{cj})`,
:math:`\theta_{cj} \sim \mathrm{Dir}(\alpha_{cj} \mathbf{1}_{K_j})`. The posterior is
:math:`\mathrm{Dir}(\alpha_{cj} + n_{cj\cdot})` (counts of each category among rows of
class :math:`c`) and the exact posterior predictive is the posterior-mean plug-in, since
a new row carries one observation per feature.

A category never seen at fit time (code :math:`\ge K_j`) does not crash prediction: it
gets the posterior share of one extra, unobserved category with the cell's prior
concentration, i.e. the estimate computed on the simplex with :math:`K_j + 1` coordinates
whose last count is zero (``"mean"``/``"predictive"``:
:math:`\alpha / (N_{cj} + (K_j + 1)\alpha)`; ``"mle"``: zero). Posterior draws use that
same share in every draw.

Categories are stored padded to the largest :math:`K_j`; padded coordinates carry no mass.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from .._linear import log_linear
from . import _dirichlet, _rows

__all__ = [
    "CategoricalParams",
    "posterior",
    "point",
    "log_likelihood",
    "log_predictive",
    "mean_params",
    "log_evidence",
    "sample",
    "simulate",
]


# A new row holds one observation per Dirichlet cell, so the exact posterior predictive is
# the plug-in of the posterior mean: callers may reuse cached "mean" parameters for it.
PREDICTIVE_IS_MEAN_PLUGIN = True


class CategoricalParams(NamedTuple):
    """Plug-in parameters.

    Attributes
    ----------
    log_probs : ndarray of shape (..., n_classes, n_features, max_categories)
        :math:`\\log\\theta_{cjk}`; ``-inf`` on padding.
    log_new : ndarray of shape (..., n_classes, n_features)
        Log probability given to a category not seen at fit time.
    """

    log_probs: np.ndarray
    log_new: np.ndarray


def _pad_counts(counts, k):
    counts = np.asarray(counts, dtype=np.float64)
    pad = k - counts.shape[-1]
    return counts if pad <= 0 else np.concatenate([counts, np.zeros(counts.shape[:-1] + (pad,))], -1)


def posterior(prior, stats):
    """Conjugate update ``Dir(alpha + counts)`` per (class, feature).

    Parameters
    ----------
    prior : CategoricalDirichlet
    stats : CategoricalStats

    Returns
    -------
    CategoricalDirichlet
    """
    conc = np.asarray(prior.concentration)
    return prior._replace(concentration=conc + _pad_counts(stats.category_count, conc.shape[-1]))


def _new_category_share(estimate, dist, counts):
    """Log share of a new (zero-count) category: the estimate on the simplex extended by it."""
    mask = dist.mask
    ext_conc = np.concatenate([np.where(mask, dist.concentration, 1.0), np.asarray(dist.new_concentration)[..., None]], -1)
    ext_counts = np.concatenate([counts * mask, np.zeros(counts.shape[:-1] + (1,))], -1)
    ext_mask = np.concatenate([mask, np.ones(mask.shape[:-1] + (1,), bool)], -1)
    return np.asarray(estimate(ext_conc, ext_counts, ext_mask))[..., -1]


def _mle(conc, counts, mask):
    return _dirichlet.mle_log(counts, mask)


def _map(conc, counts, mask):
    return _dirichlet.mode_log(conc + counts, mask)


def _mean(conc, counts, mask):
    return _dirichlet.mean_log(conc + counts, mask)


_ESTIMATORS = {"mle": _mle, "map": _map, "mean": _mean}


def point(prior, stats, kind):
    """Point estimate of :math:`\\theta` (``"mle"``, ``"map"`` or ``"mean"``).

    Returns
    -------
    CategoricalParams
    """
    if kind not in _ESTIMATORS:
        raise ValueError(f"unknown point estimate {kind!r}")
    estimate = _ESTIMATORS[kind]
    conc = np.asarray(prior.concentration)
    counts = _pad_counts(stats.category_count, conc.shape[-1])
    log_probs = np.asarray(estimate(conc, counts, prior.mask))
    return CategoricalParams(log_probs, _new_category_share(estimate, prior, counts))


def log_likelihood(params, X, n_categories):
    """Plug-in log-likelihood of category codes, shape (n_samples, n_classes).

    Parameters
    ----------
    params : CategoricalParams
    X : int ndarray of shape (n_samples, n_features)
        Non-negative category codes; codes ``>= n_categories[j]`` are new categories.
    n_categories : int ndarray of shape (n_features,)
    """
    lp = np.asarray(params.log_probs)
    n_classes, n_features, k = lp.shape
    n = X.shape[0]
    seen = X < np.asarray(n_categories)[None, :]
    # One-hot over (feature, category) cells: the log-likelihood is linear in it.
    cols = (np.arange(n_features)[None, :] * k + np.where(seen, X, 0))[seen]
    indptr = np.concatenate([[0], np.cumsum(seen.sum(axis=1))])
    onehot = sp.csr_matrix((np.ones(cols.size), cols, indptr), shape=(n, n_features * k))
    out = log_linear(onehot, lp.reshape(n_classes, n_features * k))
    if not seen.all():
        rows, feats = np.nonzero(~seen)
        np.add.at(out, rows, np.asarray(params.log_new)[:, feats].T)
    return out


def mean_params(dist):
    """Plug-in parameters of the mean of a Dirichlet prior or posterior: the exact predictive of one row."""
    zero = np.zeros_like(np.asarray(dist.concentration))
    mean = _mean(np.asarray(dist.concentration), zero, dist.mask)
    return CategoricalParams(np.asarray(mean), _new_category_share(_mean, dist, zero))


def log_predictive(post, X):
    """Exact posterior predictive (the posterior-mean plug-in), shape (n_samples, n_classes)."""
    return log_likelihood(mean_params(post), X, post.n_categories)


def log_evidence(prior, stats):
    r"""Log marginal likelihood of the category codes given the labels.

    .. math:: \sum_{c,j} \log B(\alpha_{cj} + n_{cj\cdot}) - \log B(\alpha_{cj})
    """
    conc = np.asarray(prior.concentration)
    counts = _pad_counts(stats.category_count, conc.shape[-1])
    return float(_dirichlet.log_evidence(conc, counts, prior.mask))


def sample(key, post, n):
    """``n`` iid posterior draws, as CategoricalParams with leading axis ``n``."""
    log_probs = jnp.asarray(_dirichlet.sample_log(key, post.concentration, n, post.mask))
    zero = np.zeros_like(np.asarray(post.concentration))
    new = _new_category_share(_mean, post, zero)
    return CategoricalParams(log_probs, jnp.broadcast_to(new, (n,) + new.shape))


def simulate(key, params, y_index):
    r"""Category codes given parameters and labels: :math:`x_{ij} \sim \mathrm{Cat}(\theta_{y_i j})`.

    By inversion: the first category whose cumulative probability exceeds a uniform
    draw (padding has probability zero and is never drawn).

    Parameters
    ----------
    key : jax.random key
    params : CategoricalParams
        ``log_probs`` of shape (n_classes, n_features, max_categories) (``-inf`` on
        padding), or with a leading row axis.
    y_index : int array of shape (n_rows,)

    Returns
    -------
    int64 ndarray of shape (n_rows, n_features)
    """
    cdf = np.cumsum(np.exp(_rows.of_class(params.log_probs, y_index, 2)), axis=-1)
    u = _rows.generator(key).random(cdf.shape[:-1]) * cdf[..., -1]
    return (cdf <= u[..., None]).sum(axis=-1).astype(np.int64)
