r"""The generative models of every family, written as numpyro programs.

Every bayesnb estimator is the conjugate closed form of one generative story (Zhu's
naive Bayes as a generative model and as a Bayes net, seed ``000`` §1.2-1.3):

.. math::

    \pi \sim \mathrm{Dir}(\beta), \qquad
    \theta_{c\cdot} \sim \text{prior} \quad (\text{plates } \texttt{class}, \texttt{feature}),

    y_i \sim \mathrm{Cat}(\pi), \qquad
    x_i \mid y_i \sim p(x \mid \theta_{y_i}) \quad (\text{plate } \texttt{data}),

with the feature prior and likelihood of the family:

=====================  ============================================  ==========================
family                 prior (site names)                            likelihood of a row
=====================  ============================================  ==========================
multinomial            ``feature_probs`` :math:`\theta_c \sim \mathrm{Dir}(\alpha_c)`   Multinomial
Bernoulli              ``feature_probs`` :math:`\theta_{cj} \sim \mathrm{Beta}(a, b)`     Bernoulli per feature
categorical            ``feature_probs`` :math:`\theta_{cj} \sim \mathrm{Dir}(\alpha_{cj})` Categorical per feature
Gaussian (diagonal)    ``var`` :math:`\sim \mathrm{InvGamma}(a_0, b_0)`, ``loc`` :math:`\sim \mathcal N(m_0, \sigma^2/\kappa_0)`  Normal per feature
Gaussian (NIW)         ``covariance`` :math:`\sim \mathcal W^{-1}(\Psi_0, \nu_0)` (latent: its Cholesky factor ``covariance_tril``), ``loc`` :math:`\sim \mathcal N(m_0, \Sigma/\kappa_0)`  multivariate Normal
Poisson                ``rate`` :math:`\lambda_{cj} \sim \mathrm{Gamma}(\alpha, \beta)`   Poisson per feature
=====================  ============================================  ==========================

The class proportions are the site ``class_probs`` (or a constant when fixed with
``class_prior``), the labels the site ``y``, the features the site ``x``. A
:class:`~bayesnb.MixedNB` model has one block of parameters per block of columns, each
site prefixed with the block name (``"gaussian__loc"``, feature plate
``"gaussian__feature"``).

Each family has two forms:

* ``<family>_model(X, y, *, prior, class_prior)`` observes every row: ``y`` and ``x``
  in the plate ``data``. With ``X=None``/``y=None`` it generates them (``n_rows`` rows).
* ``<family>_stats_model(stats, *, prior, class_prior)`` conditions on the sufficient
  statistics of :mod:`bayesnb.stats` with ``numpyro.factor``: the same posterior at a
  cost independent of the number of rows. It drops terms that do not depend on the
  parameters (the multinomial coefficient, :math:`\log x!`), so its log density differs
  from the per-row form by a constant.

``prior`` is the family's prior pytree of :mod:`bayesnb.priors` (an estimator's
``prior_``), ``class_prior`` a :class:`~bayesnb.priors.Dirichlet` on the class
proportions (an estimator's ``class_dirichlet_``) or fixed proportions (its
``class_prior_``). :func:`model_from_estimator` builds the model and its arguments from
a fitted estimator, and ``numpyro.render_model(model, model_kwargs=kwargs)`` draws its
plate diagram (needs the ``graphviz`` extra).

The categorical family stores features with different numbers of categories
:math:`K_j` padded to the largest. Its model samples a Dirichlet over the padded simplex
(concentration 1 on padding) and renormalises the valid coordinates; by the aggregation
property of the Dirichlet the result is exactly :math:`\mathrm{Dir}(\alpha_{cj})` over the
:math:`K_j` valid categories. ``feature_probs`` is then a deterministic site (0 on
padding) of the latent ``padded_feature_probs``.
"""

from __future__ import annotations

import contextlib
import copy
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import scipy.sparse as sp
from jax.scipy.linalg import cho_solve

from .families import bernoulli, categorical, gaussian, gaussian_mv, multinomial, poisson
from .priors import Dirichlet

__all__ = [
    "multinomial_model",
    "multinomial_stats_model",
    "bernoulli_model",
    "bernoulli_stats_model",
    "categorical_model",
    "categorical_stats_model",
    "gaussian_model",
    "gaussian_stats_model",
    "gaussian_mv_model",
    "gaussian_mv_stats_model",
    "poisson_model",
    "poisson_stats_model",
    "mixed_model",
    "mixed_stats_model",
    "model_from_estimator",
    "posterior_moments",
    "block_specs",
    "variable_dims",
]


# ----------------------------------------------------------------------------- helpers


def _real(a):
    # jax's default float: float64 inside the library's x64 scope, float32 outside.
    return jnp.asarray(np.asarray(a, dtype=np.float64))


# Every site of a row lives in the plate "data" at dim -2 (and a block's features in its
# plate "feature" at dim -1), every per-class parameter in the plate "class" at dim -2: one
# dim per plate name, so that numpyro.render_model draws one "data" and one "class" box.
# Sites without a feature axis carry a singleton there.
_ROW_DIM = _CLASS_DIM = -2


def _weighted(weight):
    """Scale the log density of each row by its weight (``None``: no scaling)."""
    if weight is None:
        return contextlib.nullcontext()
    return numpyro.handlers.scale(scale=_real(weight)[:, None])


def _data_plate(n_rows):
    return numpyro.plate("data", n_rows, dim=_ROW_DIM)


def _class_plate(n_classes):
    return numpyro.plate("class", n_classes, dim=_CLASS_DIM)


def _cell_count(stats):
    """:math:`N_{cj}`: the class count per cell, or the per-cell observed weight of masked statistics."""
    observed = getattr(stats, "observed_count", None)
    if observed is not None:
        return _real(observed)
    return _real(stats.class_count)[:, None]


def _scope(prefix):
    if not prefix:
        return contextlib.nullcontext()
    # Plates keep their names: "class" and "data" are shared by every block.
    return numpyro.handlers.scope(prefix=prefix, divider="__", hide_types=["plate"])


def _prefixed(prefix, name):
    return f"{prefix}__{name}" if prefix else name


def dirichlet_moments(concentration, mask=None):
    r"""Mean and standard deviation of each coordinate of :math:`\mathrm{Dir}(a)`.

    :math:`E\theta_k = a_k / A`, :math:`\mathrm{Var}\,\theta_k = a_k (A - a_k) / (A^2 (A + 1))`,
    :math:`A = \sum_k a_k` over the last axis (valid coordinates only; masked ones NaN).
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


# ----------------------------------------------------------------------------- family specs


class _Spec:
    """One family's pieces of the numpyro model, for one prior.

    ``variables`` maps each canonical parameter (the names of the model's sites and of
    :mod:`bayesnb.export`) to its dims; ``"feature"``, ``"feature_col"`` and
    ``"category"`` are the block's own (prefixed in a MixedNB model).
    """

    family = None
    variables = {}
    # Whether each feature is its own factor of a row's likelihood, so that an unobserved
    # entry is integrated out by dropping its factor (numpyro.handlers.mask).
    per_feature = True

    def __init__(self, prior):
        self.prior = prior

    def sample_params(self, n_classes, feature):  # pragma: no cover - abstract
        raise NotImplementedError

    def observe(self, values, X, y, feature, n_rows, weight, **kwargs):  # pragma: no cover
        raise NotImplementedError

    def log_likelihood_stats(self, values, stats):  # pragma: no cover - abstract
        raise NotImplementedError

    def values(self, params):  # pragma: no cover - abstract
        """Canonical parameter arrays from the family's parameter pytree (leading axes kept)."""
        raise NotImplementedError

    def moments(self, post):  # pragma: no cover - abstract
        """Closed-form posterior mean and standard deviation of each canonical parameter."""
        raise NotImplementedError

    def canonical(self, samples):
        """Canonical arrays from the model's sites (identity except where padded)."""
        return {name: np.asarray(samples[name]) for name in self.variables}

    def n_features(self):
        return int(np.shape(self.prior[0])[1])

    def check_rows(self, X):
        return X


class _MultinomialSpec(_Spec):
    family = multinomial.family
    per_feature = False
    variables = {"feature_probs": ("class", "feature")}

    def sample_params(self, n_classes, feature):
        with _class_plate(n_classes):
            theta = numpyro.sample("feature_probs", dist.Dirichlet(_real(self.prior.concentration)[:, None, :]))
        return {"feature_probs": theta[:, 0, :]}

    def observe(self, values, X, y, feature, n_rows, weight, n_tokens=None):
        logits = jnp.log(values["feature_probs"])[y][:, None, :]
        if X is not None:
            total = jnp.sum(X, axis=-1)[:, None]
            X = X[:, None, :]
            kwargs = {}
        else:
            if n_tokens is None:
                raise ValueError("generating multinomial rows (X=None) needs n_tokens, the length of each document")
            total = jnp.broadcast_to(jnp.asarray(n_tokens), (n_rows,))[:, None]
            kwargs = {"total_count_max": int(np.max(n_tokens))}
        with _data_plate(n_rows), _weighted(weight):
            numpyro.sample("x", dist.Multinomial(total_count=total, logits=logits, **kwargs), obs=X)

    def canonical(self, samples):
        # The site carries a singleton axis for the feature plate's dim (see _CLASS_DIM).
        return {"feature_probs": np.asarray(samples["feature_probs"])[..., 0, :]}

    def log_likelihood_stats(self, values, stats):
        # The token-sequence likelihood: sum_cj T_cj log theta_cj.
        return jnp.sum(_real(stats.feature_count) * jnp.log(values["feature_probs"]))

    def values(self, params):
        return {"feature_probs": np.exp(np.asarray(params.log_probs))}

    def moments(self, post):
        return {"feature_probs": dirichlet_moments(post.concentration)}


class _BernoulliSpec(_Spec):
    family = bernoulli.family
    variables = {"feature_probs": ("class", "feature")}

    def sample_params(self, n_classes, feature):
        with _class_plate(n_classes), numpyro.plate(feature, self.n_features(), dim=-1):
            theta = numpyro.sample(
                "feature_probs", dist.Beta(_real(self.prior.concentration1), _real(self.prior.concentration0))
            )
        return {"feature_probs": theta}

    def observe(self, values, X, y, feature, n_rows, weight):
        with _data_plate(n_rows), numpyro.plate(feature, self.n_features(), dim=-1), _weighted(weight):
            numpyro.sample("x", dist.Bernoulli(probs=values["feature_probs"][y]), obs=X)

    def log_likelihood_stats(self, values, stats):
        theta = values["feature_probs"]
        on = _real(stats.feature_count)
        off = _cell_count(stats) - on
        return jnp.sum(on * jnp.log(theta) + off * jnp.log1p(-theta))

    def values(self, params):
        return {"feature_probs": np.exp(np.asarray(params.log_probs)[..., 1])}

    def moments(self, post):
        conc = np.stack([np.asarray(post.concentration0), np.asarray(post.concentration1)], axis=-1)
        mean, sd = dirichlet_moments(conc)
        return {"feature_probs": (mean[..., 1], sd[..., 1])}


class _CategoricalSpec(_Spec):
    family = categorical.family
    variables = {"feature_probs": ("class", "feature", "category")}

    def __init__(self, prior):
        super().__init__(prior)
        conc = np.asarray(prior.concentration, dtype=np.float64)
        self.k_max = conc.shape[-1]
        # At least two coordinates, so that every cell is a proper simplex for numpyro.
        k = max(self.k_max, 2)
        self.mask = np.arange(k)[None, :] < np.asarray(prior.n_categories)[:, None]
        padded = np.ones(conc.shape[:-1] + (k,))
        padded[..., : self.k_max] = conc
        self.padded = np.where(self.mask, padded, 1.0)

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
        with _class_plate(n_classes), numpyro.plate(feature, self.n_features(), dim=-1):
            phi = numpyro.sample("padded_feature_probs", dist.Dirichlet(_real(self.padded)))
        log_theta = self._log_theta(phi)
        theta = numpyro.deterministic("feature_probs", jnp.exp(log_theta))
        return {"feature_probs": theta, "log_probs": log_theta}

    def observe(self, values, X, y, feature, n_rows, weight):
        with _data_plate(n_rows), numpyro.plate(feature, self.n_features(), dim=-1), _weighted(weight):
            numpyro.sample("x", dist.Categorical(logits=values["log_probs"][y]), obs=X)

    def log_likelihood_stats(self, values, stats):
        counts = np.asarray(stats.category_count, dtype=np.float64)
        k = self.mask.shape[-1]
        if counts.shape[-1] < k:
            counts = np.concatenate([counts, np.zeros(counts.shape[:-1] + (k - counts.shape[-1],))], axis=-1)
        log_theta = jnp.where(jnp.asarray(self.mask), values["log_probs"], 0.0)
        return jnp.sum(_real(counts[..., :k]) * log_theta)

    def values(self, params):
        probs = np.exp(np.asarray(params.log_probs))
        return {"feature_probs": np.where(self.mask[:, : self.k_max], probs, np.nan)}

    def canonical(self, samples):
        probs = np.asarray(samples["feature_probs"])[..., : self.k_max]
        return {"feature_probs": np.where(self.mask[:, : self.k_max], probs, np.nan)}

    def moments(self, post):
        return {"feature_probs": dirichlet_moments(post.concentration, post.mask)}


class _GaussianSpec(_Spec):
    family = gaussian.family
    variables = {"loc": ("class", "feature"), "var": ("class", "feature")}

    def sample_params(self, n_classes, feature):
        p = self.prior
        with _class_plate(n_classes), numpyro.plate(feature, self.n_features(), dim=-1):
            var = numpyro.sample("var", dist.InverseGamma(_real(p.concentration), _real(p.rate)))
            loc = numpyro.sample("loc", dist.Normal(_real(p.loc), jnp.sqrt(var / _real(p.kappa))))
        return {"loc": loc, "var": var}

    def observe(self, values, X, y, feature, n_rows, weight):
        with _data_plate(n_rows), numpyro.plate(feature, self.n_features(), dim=-1), _weighted(weight):
            numpyro.sample("x", dist.Normal(values["loc"][y], jnp.sqrt(values["var"][y])), obs=X)

    def log_likelihood_stats(self, values, stats):
        n = _cell_count(stats)
        mean = np.asarray(stats.mean, dtype=np.float64)
        resid = np.broadcast_to(np.asarray(getattr(stats, "mean_residual", 0.0), dtype=np.float64), mean.shape)
        # (mean - loc) with the mean's low-order part, so that data far from 0 keep their digits.
        d = (_real(mean) - values["loc"]) + _real(resid)
        var = values["var"]
        return jnp.sum(-0.5 * n * jnp.log(2 * jnp.pi * var) - (_real(stats.m2) + n * d * d) / (2 * var))

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


class _GaussianMVSpec(_Spec):
    family = gaussian_mv.family
    per_feature = False

    def __init__(self, prior):
        super().__init__(prior)
        self.shared = gaussian_mv.is_shared(prior)
        cov_dims = ("feature", "feature_col") if self.shared else ("class", "feature", "feature_col")
        self.variables = {"loc": ("class", "feature"), "covariance": cov_dims}

    def n_features(self):
        return int(np.shape(self.prior.loc)[1])

    def sample_params(self, n_classes, feature):
        p = self.prior
        kappa = _real(p.kappa)[:, None, None]
        # The latent site is the Cholesky factor L of Sigma, with numpyro's
        # InverseWishartCholesky density (the inverse-Wishart pushed through the Cholesky
        # map, Jacobian included): Sigma = L L^T is exactly W^-1(Psi, nu). Sampling L
        # (unconstrained by a log-diagonal) rather than Sigma spares the model a Cholesky
        # factorisation and NUTS the positive-definite bijection, which costs compile time.
        scale_tril = _real(np.linalg.cholesky(np.asarray(p.scale, dtype=np.float64)))
        law = dist.InverseWishartCholesky(_real(p.df), scale_tril=scale_tril)
        loc0 = _real(p.loc)[:, None, :]
        kappa = kappa[:, None]
        if self.shared:
            tril = numpyro.sample("covariance_tril", law)
            cov = numpyro.deterministic("covariance", tril @ tril.T)
            with _class_plate(n_classes):
                loc = numpyro.sample("loc", dist.MultivariateNormal(loc0, scale_tril=tril / jnp.sqrt(kappa)))
        else:
            law = dist.InverseWishartCholesky(_real(p.df)[:, None], scale_tril=scale_tril[:, None])
            with _class_plate(n_classes):
                tril = numpyro.sample("covariance_tril", law)
                cov = numpyro.deterministic("covariance", tril @ jnp.swapaxes(tril, -1, -2))
                loc = numpyro.sample("loc", dist.MultivariateNormal(loc0, scale_tril=tril / jnp.sqrt(kappa)))
            tril, cov = tril[:, 0], cov[:, 0]
        return {"loc": loc[:, 0], "covariance": cov, "scale_tril": tril}

    def observe(self, values, X, y, feature, n_rows, weight):
        tril = values["scale_tril"] if self.shared else values["scale_tril"][y][:, None]
        with _data_plate(n_rows), _weighted(weight):
            numpyro.sample(
                "x",
                dist.MultivariateNormal(values["loc"][y][:, None], scale_tril=tril),
                obs=None if X is None else X[:, None, :],
            )

    def canonical(self, samples):
        # Per-class sites carry a singleton axis for the feature plate's dim (see _CLASS_DIM).
        cov = np.asarray(samples["covariance"])
        return {
            "loc": np.asarray(samples["loc"])[..., 0, :],
            "covariance": cov if self.shared else cov[..., 0, :, :],
        }

    def log_likelihood_stats(self, values, stats):
        n = _real(stats.class_count)
        F = self.n_features()
        d = _real(stats.mean) - values["loc"]
        scatter = _real(stats.scatter) + n[:, None, None] * d[:, :, None] * d[:, None, :]
        tril = jnp.broadcast_to(values["scale_tril"], scatter.shape)
        half_logdet = jnp.sum(jnp.log(jnp.diagonal(tril, axis1=-2, axis2=-1)), axis=-1)
        trace = jnp.trace(cho_solve((tril, True), scatter), axis1=-2, axis2=-1)
        return jnp.sum(-0.5 * n * F * jnp.log(2 * jnp.pi) - n * half_logdet - 0.5 * trace)

    def values(self, params):
        return {"loc": np.asarray(params.loc), "covariance": gaussian_mv.covariance(params)}

    def moments(self, post):
        F = self.n_features()
        cov_mean, cov_sd = inverse_wishart_moments(post.df, post.scale)
        kappa = np.asarray(post.kappa, dtype=np.float64)
        diag = np.diagonal(np.broadcast_to(cov_mean, (kappa.size, F, F)), axis1=-2, axis2=-1)
        # mu_c | Sigma ~ N(m_c, Sigma / kappa_c), so Cov(mu_c) = E[Sigma] / kappa_c.
        loc = (np.asarray(post.loc, dtype=np.float64), np.sqrt(diag / kappa[:, None]))
        return {"loc": loc, "covariance": (cov_mean, cov_sd)}


class _PoissonSpec(_Spec):
    family = poisson.family
    variables = {"rate": ("class", "feature")}

    def sample_params(self, n_classes, feature):
        with _class_plate(n_classes), numpyro.plate(feature, self.n_features(), dim=-1):
            rate = numpyro.sample("rate", dist.Gamma(_real(self.prior.concentration), _real(self.prior.rate)))
        return {"rate": rate}

    def observe(self, values, X, y, feature, n_rows, weight):
        with _data_plate(n_rows), numpyro.plate(feature, self.n_features(), dim=-1), _weighted(weight):
            numpyro.sample("x", dist.Poisson(values["rate"][y]), obs=X)

    def log_likelihood_stats(self, values, stats):
        rate = values["rate"]
        return jnp.sum(_real(stats.feature_count) * jnp.log(rate) - _cell_count(stats) * rate)

    def values(self, params):
        return {"rate": np.exp(np.asarray(params.log_rate))}

    def moments(self, post):
        a = np.asarray(post.concentration, dtype=np.float64)
        b = np.asarray(post.rate, dtype=np.float64)
        return {"rate": (a / b, np.sqrt(a) / b)}


_SPECS = {
    multinomial.family: _MultinomialSpec,
    bernoulli.family: _BernoulliSpec,
    categorical.family: _CategoricalSpec,
    gaussian.family: _GaussianSpec,
    gaussian_mv.family: _GaussianMVSpec,
    poisson.family: _PoissonSpec,
}


def _spec(family, prior):
    try:
        return _SPECS[family](prior)
    except KeyError:
        raise TypeError(f"no numpyro model for family {getattr(family, 'name', family)!r}") from None


# ----------------------------------------------------------------------------- the model


class Block(NamedTuple):
    """One block of columns of a model: its name ("" for a one-family model) and spec."""

    name: str
    spec: _Spec


def _n_classes(class_prior):
    if isinstance(class_prior, Dirichlet):
        return int(np.shape(class_prior.concentration)[-1])
    probs = np.asarray(class_prior, dtype=np.float64)
    if probs.ndim != 1:
        raise ValueError(f"class_prior must be a Dirichlet or a 1-d array of proportions, got shape {probs.shape}")
    return probs.size


def _observed_mask(spec, name, observed):
    """The block's mask of observed entries (None: every entry observed), checked."""
    mask = None if observed is None else observed.get(name)
    if mask is None:
        return None
    if not spec.per_feature:
        raise ValueError(_no_masked_rows(spec))
    return jnp.asarray(np.asarray(mask, dtype=bool))


def _no_masked_rows(spec):
    what = "the counts of a document" if spec.family is multinomial.family else "jointly Gaussian features"
    return (
        f"the numpyro model of {_family_name(spec)} has no per-row form for rows with missing (NaN) "
        f"values: {what} are not separate factors of the likelihood, and bayesnb cannot fit on such "
        "rows either (see bayesnb.missing); pass complete rows"
    )


def _naive_bayes(
    blocks, class_prior, X=None, y=None, n_rows=None, sample_weight=None, stats=None, observed=None, **observe_kwargs
):
    """The shared generative story; each block adds its parameters and its features.

    ``observed`` maps a block name to a bool mask (n_rows, n_block_features) of the
    observed entries: the others are left out of the likelihood (their factor masked).
    """
    n_classes = _n_classes(class_prior)
    values = {}
    for block in blocks:
        with _scope(block.name):
            values[block.name] = block.spec.sample_params(n_classes, _prefixed(block.name, "feature"))
    if isinstance(class_prior, Dirichlet):
        pi = numpyro.sample("class_probs", dist.Dirichlet(_real(class_prior.concentration)))
    else:
        pi = _real(class_prior)
    if stats is not None:
        counts = _real(next(iter(stats.values())).class_count)
        numpyro.factor("labels", jnp.sum(jnp.where(counts > 0, counts * jnp.log(pi), 0.0)))
        for block in blocks:
            with _scope(block.name):
                numpyro.factor("features", block.spec.log_likelihood_stats(values[block.name], stats[block.name]))
        return
    if X is None and y is None and n_rows is None:
        raise ValueError("pass the data (X and/or y) or the number of rows to generate (n_rows)")
    if n_rows is None:
        n_rows = int(np.shape(y)[0]) if y is not None else int(np.shape(next(iter(X.values())))[0])
    with _data_plate(n_rows), _weighted(sample_weight):
        y = numpyro.sample("y", dist.Categorical(probs=pi), obs=None if y is None else jnp.asarray(y)[:, None])
    y = y[:, 0]
    for block in blocks:
        X_block = None if X is None else X[block.name]
        mask = _observed_mask(block.spec, block.name, observed)
        masked = contextlib.nullcontext() if mask is None else numpyro.handlers.mask(mask=mask)
        with _scope(block.name), masked:
            block.spec.observe(
                values[block.name],
                X_block,
                y,
                _prefixed(block.name, "feature"),
                n_rows,
                sample_weight,
                **observe_kwargs,
            )


def _rows_doc(what, features, prior, example, sites, extra=""):
    return f"""Per-row numpyro model of the {what} family.

    Parameters
    ----------
    X : array of shape (n_rows, n_features) or None
        Observed features ({features}); ``None`` samples them.
    y : int array of shape (n_rows,) or None
        Observed class indices (positions in ``classes_``); ``None`` samples them.
    prior : {prior}
        The feature prior (an estimator's ``prior_``).
    class_prior : Dirichlet or array of shape (n_classes,)
        Dirichlet on the class proportions (``class_dirichlet_``), or fixed proportions.
    n_rows : int, optional
        Number of rows to generate when ``X`` and ``y`` are both None.
    sample_weight : array of shape (n_rows,), optional
        Positive row weights: the log density of row ``i`` counts ``w_i`` times.
    observed : bool array of shape (n_rows, n_features), optional
        Which entries of ``X`` are observed (``missing="ignore"``): the factor of an
        unobserved entry is masked out of the likelihood, which integrates it out
        exactly for families whose features are separate factors (not multinomial or
        NIW: ``ValueError``). Its value in ``X`` is ignored but must be valid (e.g. 0).{extra}

    Examples
    --------
    >>> import numpy as np
    >>> from numpyro.infer.inspect import get_model_relations
    >>> from bayesnb import models, priors
    >>> {example}
    >>> kwargs = dict(X=X, y=y, prior=prior, class_prior=priors.Dirichlet(np.ones(2)))
    >>> relations = get_model_relations(models.{what.split()[0].lower()}_model, model_kwargs=kwargs)
    >>> sorted(relations["sample_sample"]["x"])  # what a row's features depend on
    {sites}
    """


def _stats_doc(what, stats, prior):
    return f"""The {what} model conditioned on sufficient statistics (``numpyro.factor``).

    The same posterior as ``{what.split()[0].lower()}_model``, at a cost independent of the
    number of rows; its log density differs from the per-row form by a constant.

    Parameters
    ----------
    stats : {stats}
        Sufficient statistics (:mod:`bayesnb.stats`), e.g. an estimator's ``stats_``.
    prior : {prior}
    class_prior : Dirichlet or array of shape (n_classes,)
    """


def _documented(doc):
    def decorate(fn):
        fn.__doc__ = doc
        return fn

    return decorate


def _one_family(family, prior, class_prior, X, y, n_rows, sample_weight, observed=None, **observe_kwargs):
    data = None if X is None else {"": jnp.asarray(X)}
    observed = None if observed is None else {"": observed}
    _naive_bayes(
        [Block("", _spec(family, prior))], class_prior, data, y, n_rows, sample_weight, observed=observed, **observe_kwargs
    )


def _one_family_stats(family, stats, prior, class_prior):
    _naive_bayes([Block("", _spec(family, prior))], class_prior, stats={"": stats})


@_documented(
    _rows_doc(
        "multinomial",
        "token counts",
        "Dirichlet",
        "X, y, prior = np.array([[2, 0], [0, 3]]), np.array([0, 1]), priors.Dirichlet(np.ones((2, 2)))",
        "['feature_probs', 'y']",
        extra="""
    n_tokens : int or int array of shape (n_rows,), optional
        Document lengths, needed to generate documents (``X=None``): the model is of
        the tokens of a document given its length.""",
    )
)
def multinomial_model(
    X=None, y=None, *, prior, class_prior, n_rows=None, sample_weight=None, observed=None, n_tokens=None
):
    _one_family(multinomial.family, prior, class_prior, X, y, n_rows, sample_weight, observed, n_tokens=n_tokens)


@_documented(_stats_doc("multinomial", "CountStats", "Dirichlet"))
def multinomial_stats_model(stats, *, prior, class_prior):
    _one_family_stats(multinomial.family, stats, prior, class_prior)


@_documented(
    _rows_doc(
        "Bernoulli",
        "0/1 values",
        "Beta",
        "X, y = np.array([[1, 0], [0, 1]]), np.array([0, 1]); prior = priors.Beta(np.ones((2, 2)), np.ones((2, 2)))",
        "['feature_probs', 'y']",
    )
)
def bernoulli_model(X=None, y=None, *, prior, class_prior, n_rows=None, sample_weight=None, observed=None):
    _one_family(bernoulli.family, prior, class_prior, X, y, n_rows, sample_weight, observed)


@_documented(_stats_doc("Bernoulli", "CountStats", "Beta"))
def bernoulli_stats_model(stats, *, prior, class_prior):
    _one_family_stats(bernoulli.family, stats, prior, class_prior)


@_documented(
    _rows_doc(
        "categorical",
        "integer category codes",
        "CategoricalDirichlet",
        "X, y = np.array([[0, 2], [1, 0]]), np.array([0, 1]); "
        "prior = priors.categorical_dirichlet_from_alpha(1.0, 2, [2, 3])",
        "['padded_feature_probs', 'y']",
    )
)
def categorical_model(X=None, y=None, *, prior, class_prior, n_rows=None, sample_weight=None, observed=None):
    _one_family(categorical.family, prior, class_prior, X, y, n_rows, sample_weight, observed)


@_documented(_stats_doc("categorical", "CategoricalStats", "CategoricalDirichlet"))
def categorical_stats_model(stats, *, prior, class_prior):
    _one_family_stats(categorical.family, stats, prior, class_prior)


@_documented(
    _rows_doc(
        "Gaussian (diagonal, Normal-Inverse-Gamma)",
        "real values",
        "NormalInverseGamma",
        "X, y = np.array([[0.1, 1.2], [2.0, -1.0]]), np.array([0, 1]); "
        "prior = priors.NormalInverseGamma(*np.ones((4, 2, 2)))",
        "['loc', 'var', 'y']",
    )
)
def gaussian_model(X=None, y=None, *, prior, class_prior, n_rows=None, sample_weight=None, observed=None):
    _one_family(gaussian.family, prior, class_prior, X, y, n_rows, sample_weight, observed)


@_documented(_stats_doc("Gaussian (diagonal, Normal-Inverse-Gamma)", "GaussianStats", "NormalInverseGamma"))
def gaussian_stats_model(stats, *, prior, class_prior):
    _one_family_stats(gaussian.family, stats, prior, class_prior)


@_documented(
    _rows_doc(
        "gaussian_mv (multivariate Gaussian, Normal-Inverse-Wishart; per-class covariances, or "
        "one shared when the prior's scale is (F, F))",
        "real values",
        "NormalInverseWishart",
        "X, y = np.array([[0.1, 1.2], [2.0, -1.0]]), np.array([0, 1]); prior = priors.NormalInverseWishart("
        "np.zeros((2, 2)), np.ones(2), np.full(2, 4.0), np.stack([np.eye(2)] * 2))",
        "['covariance_tril', 'loc', 'y']",
    )
)
def gaussian_mv_model(X=None, y=None, *, prior, class_prior, n_rows=None, sample_weight=None, observed=None):
    _one_family(gaussian_mv.family, prior, class_prior, X, y, n_rows, sample_weight, observed)


@_documented(_stats_doc("gaussian_mv (Normal-Inverse-Wishart)", "ScatterStats", "NormalInverseWishart"))
def gaussian_mv_stats_model(stats, *, prior, class_prior):
    _one_family_stats(gaussian_mv.family, stats, prior, class_prior)


@_documented(
    _rows_doc(
        "Poisson",
        "counts",
        "Gamma",
        "X, y = np.array([[2, 0], [0, 3]]), np.array([0, 1]); prior = priors.Gamma(np.ones((2, 2)), np.ones((2, 2)))",
        "['rate', 'y']",
    )
)
def poisson_model(X=None, y=None, *, prior, class_prior, n_rows=None, sample_weight=None, observed=None):
    _one_family(poisson.family, prior, class_prior, X, y, n_rows, sample_weight, observed)


@_documented(_stats_doc("Poisson", "PoissonStats", "Gamma"))
def poisson_stats_model(stats, *, prior, class_prior):
    _one_family_stats(poisson.family, stats, prior, class_prior)


def mixed_model(X=None, y=None, *, blocks, class_prior, n_rows=None, sample_weight=None, observed=None):
    """Per-row numpyro model of a :class:`~bayesnb.MixedNB`: one block of parameters per block of columns.

    Parameters
    ----------
    X : dict of name -> array of shape (n_rows, n_block_features), or None
        Each block's columns.
    y : int array of shape (n_rows,) or None
    blocks : list of (name, family module, prior)
        E.g. ``("gaussian", bayesnb.families.gaussian, NormalInverseGamma(...))``. Sites
        and the feature plate of a block are prefixed ``"<name>__"``.
    class_prior : Dirichlet or array of shape (n_classes,)
    n_rows : int, optional
    sample_weight : array of shape (n_rows,), optional
    observed : dict of name -> bool array of shape (n_rows, n_block_features), optional
        Each block's observed entries (see :func:`gaussian_model`); a block not in it
        is fully observed.
    """
    specs = [Block(name, _spec(family, prior)) for name, family, prior in blocks]
    data = None if X is None else {name: jnp.asarray(part) for name, part in X.items()}
    _naive_bayes(specs, class_prior, data, y, n_rows, sample_weight, observed=observed)


def mixed_stats_model(stats, *, blocks, class_prior):
    """A :class:`~bayesnb.MixedNB` model conditioned on each block's sufficient statistics.

    Parameters
    ----------
    stats : dict of name -> statistics pytree
    blocks : list of (name, family module, prior)
    class_prior : Dirichlet or array of shape (n_classes,)
    """
    specs = [Block(name, _spec(family, prior)) for name, family, prior in blocks]
    _naive_bayes(specs, class_prior, stats=stats)


# ----------------------------------------------------------------------------- estimators


def block_specs(estimator):
    """The blocks of a fitted estimator: ``[(name, estimator of the block, columns, spec)]``.

    A one-family estimator is one block named ``""`` over all columns (``columns`` None);
    a :class:`~bayesnb.MixedNB` has one per block of columns.
    """
    from .estimators.mixed import MixedNB

    if isinstance(estimator, MixedNB):
        return [(name, est, idx, _spec(est._family, est.prior_)) for name, est, idx in estimator.estimators_]
    return [("", estimator, None, _spec(estimator._family, estimator.prior_))]


def class_prior_of(estimator):
    """The estimator's class prior: its Dirichlet, or the fixed proportions."""
    return estimator.class_dirichlet_ if estimator.class_dirichlet_ is not None else np.asarray(estimator.class_prior_)


def _dense(part):
    return part.toarray() if sp.issparse(part) else np.asarray(part)


def block_rows(estimator, X):
    """``X`` checked as the estimator's own input, split into its blocks, dense.

    Returns
    -------
    checked
        What the estimator's validation returns (e.g. for its statistics hooks).
    parts : list of (values, observed)
        Per block: the rows (an unobserved entry, ``missing="ignore"``, holds 0) and a
        bool mask of the observed entries, or None when every entry is observed.
    """
    from .missing import MaskedX

    checked = estimator._input(X, reset=False)
    pieces = checked.parts if hasattr(checked, "parts") else [checked]
    parts = []
    for piece in pieces:
        if isinstance(piece, MaskedX):
            parts.append((_dense(piece.X), ~piece.dense_mask()))
        else:
            parts.append((_dense(piece), None))
    return checked, parts


def _labels_index(estimator, y):
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-d, got shape {y.shape}")
    classes = estimator.classes_
    index = np.searchsorted(classes, y)
    bad = (index >= classes.size) | (classes[np.minimum(index, classes.size - 1)] != y)
    if bad.any():
        raise ValueError(f"y contains label {y[bad][0]!r} not in classes_ {classes!r}")
    return index


def model_from_estimator(estimator, X=None, y=None, *, form="rows", sample_weight=None, n_rows=None):
    """The numpyro model of a fitted estimator, with its hyperparameters and data.

    The prior is the estimator's ``prior_`` (for data-scaled default priors: the one
    fitted), the class proportions its ``class_dirichlet_`` or fixed ``class_prior_``.

    Parameters
    ----------
    estimator : fitted bayesnb estimator
    X : array-like of shape (n_rows, n_features), optional
        Rows to condition on, checked and transformed as the estimator's own input
        (e.g. binarised for BernoulliNB). ``None`` (with ``y=None``) leaves them to be
        generated (``n_rows``).
    y : array-like of shape (n_rows,), optional
        Class labels (values of ``classes_``).
    form : {"rows", "stats"}
        Observe every row, or condition on the sufficient statistics of ``(X, y)``
        computed as the estimator computes them.
    sample_weight : array-like of shape (n_rows,), optional
        Non-negative weights; rows of weight zero are left out.
    n_rows : int, optional
        Rows to generate when ``X`` and ``y`` are None.

    Returns
    -------
    model : callable
        A numpyro model function.
    kwargs : dict
        Its keyword arguments: ``model(**kwargs)`` is the conditioned model, e.g.
        ``numpyro.render_model(model, model_kwargs=kwargs)``.
    """
    from sklearn.utils.validation import check_is_fitted

    from ._validation import check_sample_weight

    check_is_fitted(estimator, "stats_")
    if form not in ("rows", "stats"):
        raise ValueError(f"form must be 'rows' or 'stats', got {form!r}")
    blocks = block_specs(estimator)
    named = [(name, est._family, est.prior_) for name, est, _, _ in blocks]
    class_prior = class_prior_of(estimator)
    parts = masks = pieces = None
    if X is not None:
        checked, rows = block_rows(estimator, X)
        pieces = checked.parts if hasattr(checked, "parts") else [checked]
        parts = [spec.check_rows(values) for (values, _), (_, _, _, spec) in zip(rows, blocks)]
        masks = [mask for _, mask in rows]
        for mask, (_, _, _, spec) in zip(masks, blocks):
            if mask is not None and not spec.per_feature:
                raise ValueError(_no_masked_rows(spec))
    y_index = None if y is None else _labels_index(estimator, y)
    if parts is not None and y_index is not None and parts[0].shape[0] != y_index.shape[0]:
        raise ValueError(f"X has {parts[0].shape[0]} rows but y has {y_index.shape[0]} labels")
    n = parts[0].shape[0] if parts is not None else (None if y_index is None else y_index.shape[0])
    weight = None
    if sample_weight is not None:
        if n is None:
            raise ValueError("sample_weight needs data (X or y)")
        weight = check_sample_weight(sample_weight, n)
    mixed = len(blocks) > 1 or blocks[0][0] != ""
    if form == "stats":
        if parts is None or y_index is None:
            raise ValueError("form='stats' needs both X and y")
        stats = {}
        for (name, est, _, _), piece in zip(blocks, pieces):
            # A shallow copy: the estimator's own statistics and attributes stay as they
            # are. Its own statistics hook, so that rows with unobserved entries
            # (missing="ignore") give the per-cell statistics the estimator fits with.
            work = copy.copy(est)
            stats[name] = work._stats(piece, y_index, weight)
        if mixed:
            return mixed_stats_model, {"stats": stats, "blocks": named, "class_prior": class_prior}
        model = globals()[f"{_family_name(blocks[0][3])}_stats_model"]
        return model, {"stats": stats[""], "prior": named[0][2], "class_prior": class_prior}
    if weight is not None:
        # Rows of weight zero are left out (numpyro's scale would multiply them by 0 anyway).
        keep = weight > 0
        if parts is not None:
            parts = [part[keep] for part in parts]
            masks = [None if mask is None else mask[keep] for mask in masks]
        if y_index is not None:
            y_index = y_index[keep]
        weight = weight[keep]
    kwargs = {"y": y_index, "class_prior": class_prior, "n_rows": n_rows if n is None else None, "sample_weight": weight}
    observed = None
    if masks is not None and any(mask is not None for mask in masks):
        observed = {name: mask for (name, _, _, _), mask in zip(blocks, masks) if mask is not None}
    if mixed:
        kwargs["X"] = None if parts is None else {name: part for (name, _, _, _), part in zip(blocks, parts)}
        return mixed_model, {**kwargs, "blocks": named, "observed": observed}
    kwargs["X"] = None if parts is None else parts[0]
    model = globals()[f"{_family_name(blocks[0][3])}_model"]
    return model, {**kwargs, "prior": named[0][2], "observed": None if observed is None else observed[""]}


def _family_name(spec):
    return spec.family.name


def posterior_moments(estimator):
    """Closed-form posterior mean and standard deviation of every canonical parameter.

    Parameters
    ----------
    estimator : fitted bayesnb estimator

    Returns
    -------
    dict of name -> (mean, sd)
        Arrays of the parameter's shape (``"class_probs"`` when the class proportions
        have a Dirichlet posterior; block-prefixed names for MixedNB). A moment that
        does not exist (a heavy-tailed posterior) is ``inf``; padded categories NaN.
    """
    out = {}
    if estimator.class_posterior_ is not None:
        out["class_probs"] = dirichlet_moments(estimator.class_posterior_.concentration)
    for name, est, _, spec in block_specs(estimator):
        for var, moments in spec.moments(est.posterior_).items():
            out[_prefixed(name, var)] = moments
    return out


def variable_dims(estimator):
    """Dims of every canonical parameter of a fitted estimator.

    Returns
    -------
    dims : dict of name -> tuple of dim names
        ``"class"``, ``"feature"`` (``"<block>__feature"`` in a MixedNB), ``"feature_col"``
        (the second axis of a covariance), ``"category"``.
    """
    dims = {"class_probs": ("class",)}
    for name, _, _, spec in block_specs(estimator):
        for var, var_dims in spec.variables.items():
            dims[_prefixed(name, var)] = tuple(d if d == "class" else _prefixed(name, d) for d in var_dims)
    return dims
