r"""Multinomial family: token counts with a Dirichlet prior per class.

A document is an exchangeable sequence of :math:`n = \sum_j x_j` tokens, each drawn
from :math:`\mathrm{Cat}(\theta_c)`, with :math:`\theta_c \sim \mathrm{Dir}(\alpha_c)`.
The posterior is :math:`\mathrm{Dir}(a_c)`, :math:`a_c = \alpha_c + T_c`, and the exact
posterior predictive of a new document is the Dirichlet-multinomial (without the
multinomial coefficient, which is the same for every class and cancels):

.. math::

    \log p(x \mid y=c, D) = \sum_j \big[\log\Gamma(a_{cj} + x_j) - \log\Gamma(a_{cj})\big]
        - \big[\log\Gamma(A_c + n) - \log\Gamma(A_c)\big], \quad A_c = \sum_j a_{cj}.

It differs from the plug-in of the posterior mean whenever a word repeats: each
occurrence of a word raises the predictive probability of the next one.

Likelihoods and evidences here are those of the token *sequence*; the probability of the
count *vector* adds :math:`\log n! - \sum_j \log x_j!`, the same for every class and
every model of these counts.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from .._linear import log_linear, matmul, row_sums
from .._special import log_rising_factorial
from ..priors import Dirichlet
from ..stats import CountStats
from . import _dirichlet

__all__ = [
    "MultinomialParams",
    "posterior",
    "point",
    "log_likelihood",
    "log_predictive",
    "log_evidence",
    "sample",
]

# Counts up to this value go through per-level products with log(a + m) tables (one
# sparse product per level, each over the entries with x > m); larger or non-integer
# values are evaluated directly with the log rising factorial.
_TABLE_MAX = 32


class MultinomialParams(NamedTuple):
    """Plug-in parameters.

    Attributes
    ----------
    log_probs : ndarray of shape (..., n_classes, n_features)
        :math:`\\log\\theta_{cj}`; rows sum to one in probability.
    """

    log_probs: np.ndarray


def posterior(prior, stats):
    """Conjugate update: ``Dirichlet(prior.concentration + stats.feature_count)``.

    Parameters
    ----------
    prior : Dirichlet
        Concentration of shape (n_classes, n_features).
    stats : CountStats

    Returns
    -------
    Dirichlet
    """
    return Dirichlet(np.asarray(prior.concentration) + np.asarray(stats.feature_count))


def point(prior, stats, kind):
    """Point estimate of :math:`\\theta` (``"mle"``, ``"map"`` or ``"mean"``).

    Returns
    -------
    MultinomialParams
    """
    if kind == "mle":
        return MultinomialParams(np.asarray(_dirichlet.mle_log(stats.feature_count)))
    conc = posterior(prior, stats).concentration
    if kind == "map":
        return MultinomialParams(np.asarray(_dirichlet.mode_log(conc)))
    if kind == "mean":
        return MultinomialParams(np.asarray(_dirichlet.mean_log(conc)))
    raise ValueError(f"unknown point estimate {kind!r}")


def log_likelihood(params, X):
    """Plug-in log-likelihood :math:`\\sum_j x_j \\log\\theta_{cj}`, shape (n_samples, n_classes)."""
    return log_linear(X, params.log_probs)


def _sum_log_rising(a, X):
    r""":math:`\sum_j \log\Gamma(a_{cj} + x_{ij}) - \log\Gamma(a_{cj})` for every row and class."""
    X = sp.csr_matrix(X) if not sp.issparse(X) else X.tocsr()
    n, n_features = X.shape
    rows = np.repeat(np.arange(n), np.diff(X.indptr))
    cols, vals = X.indices, X.data
    keep = vals != 0
    rows, cols, vals = rows[keep], cols[keep], vals[keep]
    tabled = (vals == np.round(vals)) & (vals <= _TABLE_MAX)
    out = np.zeros((n, a.shape[0]))
    # Integer counts: log Γ(a + x) - log Γ(a) = Σ_{m < x} log(a + m), one sparse product
    # per level m over the entries with x > m (most text entries are 1, a few 2, ...).
    r, c, v = rows[tabled], cols[tabled], vals[tabled]
    m = 0
    while r.size:
        level = sp.csr_matrix(
            (np.ones(r.size), c, np.concatenate([[0], np.cumsum(np.bincount(r, minlength=n))])),
            shape=(n, n_features),
        )
        out += matmul(level, np.log(a + m).T)
        m += 1
        more = v > m
        r, c, v = r[more], c[more], v[more]
    # Large or fractional values: direct, per (entry, class).
    if (~tabled).any():
        r, c, v = rows[~tabled], cols[~tabled], vals[~tabled]
        terms = np.asarray(log_rising_factorial(a[:, c].T, v[:, None]))
        np.add.at(out, r, terms)
    return out


def log_predictive(post, X):
    """Exact Dirichlet-multinomial log predictive (sequence form), shape (n_samples, n_classes).

    Parameters
    ----------
    post : Dirichlet
        Posterior of shape (n_classes, n_features).
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        Non-negative counts.
    """
    a = np.asarray(post.concentration, dtype=np.float64)
    total = a.sum(axis=1)
    n = row_sums(X)
    return _sum_log_rising(a, X) - np.asarray(log_rising_factorial(total[None, :], n[:, None]))


def log_evidence(prior, stats):
    r"""Log marginal likelihood of the token sequences given their labels.

    .. math:: \sum_c \log B(\alpha_c + T_c) - \log B(\alpha_c)
    """
    return float(_dirichlet.log_evidence(prior.concentration, stats.feature_count))


def sample(key, post, n):
    """``n`` iid posterior draws of :math:`\\log\\theta`, as MultinomialParams of shape (n, C, F)."""
    return MultinomialParams(jnp.asarray(_dirichlet.sample_log(key, post.concentration, n)))
