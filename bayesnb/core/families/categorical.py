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

from bayesnb.core._x64 import x64
from bayesnb.core.families import _dirichlet, _mask, _rows
from bayesnb.core.families.protocol import Family, register
from bayesnb.core.kernels import host, is_traced, map_threads, namespace, row_ranges
from bayesnb.core.priors import CategoricalDirichlet, categorical_dirichlet_from_alpha
from bayesnb.core.stats import categorical_stats, dense_mask

__all__ = [
    "family",
    "CategoricalParams",
    "posterior",
    "point",
    "log_likelihood",
    "log_predictive",
    "mean_params",
    "log_evidence",
    "relevance_log_bayes_factor",
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


def _pad_counts(counts, k, xp=np):
    # ``xp``: numpy, or jax.numpy where the evidence is traced (counts as tracers).
    counts = xp.asarray(counts, dtype=np.float64)
    pad = k - counts.shape[-1]
    return counts if pad <= 0 else xp.concatenate([counts, xp.zeros(counts.shape[:-1] + (pad,))], -1)


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
    xp = namespace(prior, stats)
    conc = xp.asarray(prior.concentration)
    return prior._replace(concentration=conc + _pad_counts(stats.category_count, conc.shape[-1], xp))


def _new_category_share(estimate, dist, counts):
    """Log share of a new (zero-count) category: the estimate on the simplex extended by it."""
    xp = namespace(dist, counts)
    mask = dist.mask
    ext_conc = xp.concatenate([xp.where(mask, dist.concentration, 1.0), xp.asarray(dist.new_concentration)[..., None]], -1)
    ext_counts = xp.concatenate([counts * mask, xp.zeros(counts.shape[:-1] + (1,))], -1)
    ext_mask = xp.concatenate([mask, xp.ones(mask.shape[:-1] + (1,), bool)], -1)
    return host(estimate(ext_conc, ext_counts, ext_mask))[..., -1]


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
    xp = namespace(prior, stats)
    conc = xp.asarray(prior.concentration)
    counts = _pad_counts(stats.category_count, conc.shape[-1], xp)
    log_probs = host(estimate(conc, counts, prior.mask))
    return CategoricalParams(log_probs, _new_category_share(estimate, prior, counts))


# Features are looked up in groups: the log probabilities of every combination of the
# values of a group's features are tabulated (one table row per combination, classes
# contiguous), so a row costs one table read per group instead of one per feature. A
# table holds at most _TABLE_BYTES (it stays in the L2 cache) and at most as many rows as
# the data (so that tabulating never costs more than looking up); rows of the data are
# taken _ROW_BLOCK at a time (their codes stay in cache across the groups).
_TABLE_BYTES = 1 << 19
_ROW_BLOCK = 1 << 13


def _feature_groups(sizes, n_classes, n_rows):
    limit = max(1, min(_TABLE_BYTES // (8 * n_classes), n_rows))
    groups, current, rows = [], [], 1
    for j, size in enumerate(sizes.tolist()):
        if current and rows * size > limit:
            groups.append(current)
            current, rows = [], 1
        current.append(j)
        rows *= size
    if current:
        groups.append(current)
    return groups


def _group_tables(lp, log_new, n_categories, n_rows):
    """Lookup tables of (sums of) log probabilities for groups of features.

    Feature ``j``'s values are ``0 .. K_j - 1`` plus one slot ``K_j`` for a category
    not seen at fit time (``log_new``). Returns the groups (lists of features), their
    tables of shape (combinations, n_classes) and the sizes ``K_j + 1``.
    """
    n_classes = lp.shape[0]
    sizes = np.asarray(n_categories, dtype=np.int64) + 1
    log_new = np.asarray(log_new)
    per_feature = [np.concatenate([lp[:, j, :k], log_new[:, j, None]], axis=1) for j, k in enumerate(sizes - 1)]
    groups = _feature_groups(sizes, n_classes, n_rows)
    tables = []
    for group in groups:
        table = per_feature[group[0]]
        for j in group[1:]:
            table = (table[:, :, None] + per_feature[j][:, None, :]).reshape(n_classes, -1)
        tables.append(np.ascontiguousarray(table.T))
    return groups, tables, sizes


def log_likelihood(params, X, n_categories):
    r"""Plug-in log-likelihood of category codes, shape (n_samples, n_classes).

    :math:`\sum_j \log\theta_{c j x_j}`, read from tables of the sums over groups of
    features (see ``_group_tables``): a code ``>= n_categories[j]`` (a category not
    seen at fit time) reads ``params.log_new``.

    Parameters
    ----------
    params : CategoricalParams
    X : int ndarray of shape (n_samples, n_features)
        Non-negative category codes; codes ``>= n_categories[j]`` are new categories.
    n_categories : int ndarray of shape (n_features,)
    """
    if is_traced(params, X, n_categories):
        return _log_likelihood_traced(params, X, n_categories)
    lp = np.asarray(params.log_probs)
    n_classes, n_features, _ = lp.shape
    X = np.asarray(X)
    n = X.shape[0]
    out = np.zeros((n, n_classes))
    if n == 0 or n_features == 0:
        return out
    groups, tables, sizes = _group_tables(lp, params.log_new, n_categories, n)
    top = sizes - 1

    def rows(bounds):
        for r0 in range(bounds[0], bounds[1], _ROW_BLOCK):
            r1 = min(r0 + _ROW_BLOCK, bounds[1])
            codes = np.minimum(X[r0:r1], top)
            block = out[r0:r1]
            for group, table in zip(groups, tables):
                key = codes[:, group[0]].copy()
                for j in group[1:]:
                    key *= sizes[j]
                    key += codes[:, j]
                block += np.take(table, key, axis=0)

    # Large inputs: runs of row blocks on threads (numpy's loops release the GIL).
    map_threads(rows, row_ranges(n, _ROW_BLOCK))
    return out


@x64
def _log_likelihood_traced(params, X, n_categories):
    r""":func:`log_likelihood` under ``jax.jit`` / ``jax.grad``: one gather of
    :math:`\log\theta_{c j x_{ij}}` per entry (``log_new`` for a new category), summed."""
    lp = jnp.asarray(params.log_probs, dtype=jnp.float64)  # (C, F, K)
    k = lp.shape[-1]
    n_cat = jnp.asarray(n_categories)
    codes = jnp.asarray(X)
    new = codes >= n_cat[None, :]
    # (F, K, C) gathered at (j, x_ij): (n, F, C); new categories read a valid slot, then log_new.
    seen = jnp.transpose(lp, (1, 2, 0))[jnp.arange(lp.shape[1])[None, :], jnp.clip(codes, 0, k - 1)]
    log_new = jnp.transpose(jnp.asarray(params.log_new, dtype=jnp.float64))[None]  # (1, F, C)
    return jnp.sum(jnp.where(new[..., None], log_new, seen), axis=1)


def mean_params(dist):
    """Plug-in parameters of the mean of a Dirichlet prior or posterior: the exact predictive of one row."""
    xp = namespace(dist)
    zero = xp.zeros_like(xp.asarray(dist.concentration))
    mean = _mean(xp.asarray(dist.concentration), zero, dist.mask)
    return CategoricalParams(host(mean), _new_category_share(_mean, dist, zero))


def log_predictive(post, X):
    """Exact posterior predictive (the posterior-mean plug-in), shape (n_samples, n_classes)."""
    return log_likelihood(mean_params(post), X, post.n_categories)


def log_evidence(prior, stats):
    r"""Log marginal likelihood of the category codes given the labels.

    .. math:: \sum_{c,j} \log B(\alpha_{cj} + n_{cj\cdot}) - \log B(\alpha_{cj})

    Returns
    -------
    float
        The registered ``family.log_evidence`` is the traceable form of this function
        (a 0-d float64 JAX array, under ``jax.jit`` and ``jax.grad`` in every
        hyperparameter, in the library's float64 scope :mod:`bayesnb.core._x64`).
    """
    return float(_evidence(prior, stats))


@x64
def _evidence(prior, stats):
    conc = jnp.asarray(prior.concentration, dtype=jnp.float64)
    k = conc.shape[-1]
    counts = _pad_counts(stats.category_count, k, jnp)
    # The prior's mask, in jax.numpy: ``n_categories`` may be a tracer under jax.jit.
    mask = jnp.arange(k)[None, :] < jnp.asarray(prior.n_categories)[:, None]
    return _dirichlet.log_evidence(conc, counts, mask)


def relevance_log_bayes_factor(prior, stats):
    r"""Per-feature log Bayes factor: :math:`\theta_{cj}` per class against one :math:`\theta_j` shared.

    .. math::

        \log\mathrm{BF}_j = \sum_c \big[\log B(\alpha_j + n_{cj\cdot}) - \log B(\alpha_j)\big]
            - \big[\log B(\alpha_j + n_{\cdot j\cdot}) - \log B(\alpha_j)\big]

    (see :func:`bayesnb.core.families._dirichlet.pooled_log_bayes_factor`). The prior must be
    the same for every class.

    Returns
    -------
    ndarray of shape (n_features,)
    """
    conc = np.asarray(prior.concentration)
    counts = _pad_counts(stats.category_count, conc.shape[-1])
    return _dirichlet.pooled_log_bayes_factor(conc, counts, prior.mask)


def sample(key, post, n):
    """``n`` iid posterior draws, as CategoricalParams with leading axis ``n``."""
    log_probs = _dirichlet.sample_log(key, post.concentration, n, post.mask)
    xp = namespace(post)
    zero = xp.zeros_like(xp.asarray(post.concentration))
    new = _new_category_share(_mean, post, zero)
    # xp, not jnp: on the host jnp.broadcast_to would make the float64 share a float32
    # jax array outside the library's float64 scope.
    return CategoricalParams(log_probs, xp.broadcast_to(new, (n,) + new.shape))


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


def _stats(X, y_index, n_classes, weight=None, mask=None, *, n_categories=None):
    X = np.asarray(X)
    if n_categories is None:
        n_categories = (X.max(axis=0) + 1 if X.shape[0] else np.zeros(X.shape[1])).astype(np.int64)
    if mask is None:
        return categorical_stats(X, y_index, n_classes, n_categories, weight)
    # Category counts are per cell already (their sum over k is N_cj): an unobserved
    # entry is counted in an extra category slot, which is then dropped, so the counts
    # are sums of observed weights only (no subtraction).
    k = int(np.max(n_categories, initial=1))
    codes = np.where(dense_mask(mask), k, X)
    counts = categorical_stats(codes, y_index, n_classes, np.full(codes.shape[1], k + 1), weight)
    return counts._replace(category_count=counts.category_count[..., :k])


def default_prior(stats, *, n_categories=None):
    """The symmetric Dir(1) prior over each feature's categories.

    ``n_categories`` (shape (n_features,)) defaults to the padded width of the counts.
    """
    counts = np.asarray(stats.category_count)
    n_classes, n_features, width = counts.shape
    if n_categories is None:
        n_categories = np.full(n_features, width, dtype=np.int64)
    return categorical_dirichlet_from_alpha(1.0, n_classes, np.asarray(n_categories, dtype=np.int64))


def _log_likelihood(params, X, prior, mask=None):
    n_categories = host(prior.n_categories)
    if mask is None:
        return log_likelihood(params, X, n_categories)
    return _mask.feature_wise(
        lambda cols, Xc: log_likelihood(_mask.columns(params, cols), Xc, n_categories[cols]),
        X,
        mask,
        _mask.n_classes_of(params),
    )


def _expected(conc, counts, mask):
    return _dirichlet.expected_log(conc + counts, mask)


def expected_log_likelihood(post, X, mask=None):
    r""":math:`E_q[\sum_j \log\theta_{cjx_j}]`: the plug-in log-likelihood at the digamma differences, shape (n_samples, n_classes).

    A category not seen at fit time reads :math:`E[\log\theta_{\text{new}}]` on the simplex
    extended by it, as the predictive reads its mean.
    """
    conc = np.asarray(post.concentration)
    zero = np.zeros_like(conc)
    params = CategoricalParams(np.asarray(_expected(conc, zero, post.mask)), _new_category_share(_expected, post, zero))
    return _log_likelihood(params, X, post, mask=mask)


def log_density(dist, params, raise_by=0.0):
    """Log Dirichlet density of ``params.log_probs`` over the known categories under ``dist`` (raised by ``raise_by``), summed."""
    conc = np.asarray(dist.concentration, dtype=np.float64) + float(raise_by)
    return _dirichlet.log_density(conc, params.log_probs, dist.mask)


def _log_predictive(post, X, mask=None):
    # The posterior-mean plug-in, as log_predictive.
    return _log_likelihood(mean_params(post), X, post, mask)


# ----------------------------------------------------------------------------- numpyro model and log-odds
# Imported here, with the rest of the model, rather than at the top: these members are
# appended to the family (numpyro itself is imported on first use by _models).
from bayesnb.core.families import _models  # noqa: E402


class CategoricalModel(_models.ModelSpec):
    r"""The numpyro model: :math:`\theta_{cj} \sim \mathrm{Dir}(\alpha_{cj})` over :math:`K_j` categories.

    Features with different :math:`K_j` are padded to the largest: the latent site
    ``padded_feature_probs`` is a Dirichlet over the padded simplex (concentration 1 on
    padding) renormalised over the valid coordinates, which by the aggregation property
    is exactly :math:`\mathrm{Dir}(\alpha_{cj})`; ``feature_probs`` is deterministic (0
    on padding).
    """

    variables = {"feature_probs": ("class", "feature", "category")}
    title = "categorical"
    data = "integer category codes"
    example = (
        "X, y = np.array([[0, 2], [1, 0]]), np.array([0, 1]); "
        "prior = priors.categorical_dirichlet_from_alpha(1.0, 2, [2, 3])"
    )
    parents = "['padded_feature_probs', 'y']"

    def __init__(self, prior):
        super().__init__(prior)
        # In jax.numpy where the prior is traced (an argument of the compiled NUTS
        # program, bayesnb.ppl._nuts), else in NumPy as the host-side readers expect.
        xp = namespace(prior.concentration, prior.n_categories)
        conc = np.asarray(prior.concentration, dtype=np.float64) if xp is np else prior.concentration
        self.k_max = conc.shape[-1]
        # At least two coordinates, so that every cell is a proper simplex for numpyro.
        k = max(self.k_max, 2)
        self.mask = xp.arange(k)[None, :] < xp.asarray(prior.n_categories)[:, None]
        padded = xp.concatenate([conc, xp.ones(conc.shape[:-1] + (k - self.k_max,), dtype=conc.dtype)], axis=-1)
        self.padded = xp.where(self.mask, padded, 1.0)

    def check_rows(self, X):
        X = np.asarray(X)
        unseen = X >= np.asarray(self.prior.n_categories)[None, :]
        if unseen.any():
            i, j = (int(v) for v in np.argwhere(unseen)[0])
            raise ValueError(
                f"row {i}, feature {j} has category code {int(X[i, j])}, not among the "
                f"{int(self.prior.n_categories[j])} categories of the fitted model; the generative "
                "model gives it no probability"
            )
        return X

    def _log_theta(self, phi):
        mask = jnp.asarray(self.mask)
        total = jnp.sum(jnp.where(mask, phi, 0.0), axis=-1, keepdims=True)
        # Padding gets the most negative finite log probability rather than -inf: numpyro
        # validates logits as finite, and exp() of it is exactly 0 all the same.
        return jnp.where(mask, jnp.log(phi) - jnp.log(total), jnp.finfo(phi.dtype).min)

    def sample_params(self, n_classes, feature):
        numpyro = _models.numpyro
        with _models.class_plate(n_classes), _models.feature_plate(feature, self.n_features()):
            phi = numpyro.sample("padded_feature_probs", _models.dist.Dirichlet(_models.real(self.padded)))
        log_theta = self._log_theta(phi)
        theta = numpyro.deterministic("feature_probs", jnp.exp(log_theta))
        return {"feature_probs": theta, "log_probs": log_theta}

    def observe(self, values, X, y, feature, n_rows, weight):
        with _models.data_plate(n_rows), _models.feature_plate(feature, self.n_features()), _models.weighted(weight):
            _models.numpyro.sample("x", _models.dist.Categorical(logits=values["log_probs"][y]), obs=X)

    def log_likelihood_stats(self, values, stats):
        # In jax.numpy: the statistics may be arguments of the compiled NUTS program.
        counts = _models.real(stats.category_count)
        k = self.mask.shape[-1]
        if counts.shape[-1] < k:
            counts = jnp.concatenate([counts, jnp.zeros(counts.shape[:-1] + (k - counts.shape[-1],), counts.dtype)], axis=-1)
        log_theta = jnp.where(jnp.asarray(self.mask), values["log_probs"], 0.0)
        return jnp.sum(counts[..., :k] * log_theta)

    def values(self, params):
        probs = np.exp(np.asarray(params.log_probs))
        return {"feature_probs": np.where(self.mask[:, : self.k_max], probs, np.nan)}

    def coords(self):
        # The category codes 0 .. max K_j - 1 (the padded axis of feature_probs).
        return {"category": list(range(self.k_max))}

    def cells(self):
        # Feature j has the codes 0 .. K_j - 1; the rest of its row is padding.
        return self.mask[:, : self.k_max].copy()

    def canonical(self, samples):
        probs = np.asarray(samples["feature_probs"])[..., : self.k_max]
        return {"feature_probs": np.where(self.mask[:, : self.k_max], probs, np.nan)}

    def moments(self, post):
        return {"feature_probs": _models.dirichlet_moments(post.concentration, post.mask)}


def feature_log_odds(params, prior):
    r"""Per-term log-likelihood of each value :math:`v` of each feature: :math:`\log\theta_{cjv}`.

    One term per valid (feature, category) cell, feature-major; padding is left out.

    Parameters
    ----------
    params : CategoricalParams with leading axis n
    prior : CategoricalDirichlet
        For each feature's number of categories.

    Returns
    -------
    terms : ndarray of shape (n, n_classes, n_terms)
    feature, category : int ndarrays of shape (n_terms,)
    unit : str
    """
    lp = np.asarray(params.log_probs)  # (n, C, F, K), -inf on padding
    n_cat = np.asarray(prior.n_categories)
    feature = np.repeat(np.arange(n_cat.size), n_cat)
    category = np.concatenate([np.arange(kj) for kj in n_cat])
    return lp[:, :, feature, category], feature, category, "this value"


def recognise(view):
    r"""Dirichlet–categorical features in a user's numpyro model (the family's ``recognise`` member).

    ``x ~ Categorical(probs=theta[y])`` per feature with ``theta_cj ~ Dir(alpha_cj)`` over
    the same :math:`K` categories for every feature (``K`` the size of the Dirichlet).

    Parameters
    ----------
    view : bayesnb.ppl.compile.SiteView

    Returns
    -------
    Recognised or None
        None when the site is not categorical.
    """
    if view.likelihood_kind != "Categorical":
        return None
    expect = "Dirichlet–Categorical: probs = theta[y] with theta ~ Dirichlet(alpha) per (class, feature)"
    k = view.event_size("probs")
    theta = view.link("probs", "Dirichlet", (view.n_columns, k), expect=expect)
    conc = view.field(theta, "concentration", event_dims=1)
    # One concentration kept for a category never seen (see CategoricalDirichlet); it
    # does not enter the posterior of the K known categories.
    new = conc if view.is_hyperprior(conc) else np.asarray(conc)[..., 0]
    prior = CategoricalDirichlet(conc, np.full(view.n_columns, k, dtype=np.int64), new)
    return view.recognised(prior, feature_probs=theta)


family = register(
    Family(
        name="categorical",
        prior_type=CategoricalDirichlet,
        support="codes",
        hyperparameters=("concentration",),
        stats=_stats,
        posterior=posterior,
        point=point,
        log_likelihood=_log_likelihood,
        log_predictive=_log_predictive,
        log_evidence=_evidence,
        sample=sample,
        simulate=lambda key, params, y_index, stats=None: simulate(key, params, y_index),
        default_prior=default_prior,
        mean_params=mean_params,
        relevance_log_bayes_factor=relevance_log_bayes_factor,
        model=CategoricalModel,
        feature_log_odds=feature_log_odds,
        expected_log_likelihood=expected_log_likelihood,
        log_density=log_density,
        recognise=recognise,
    )
)
