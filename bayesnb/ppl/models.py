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

The pieces of each family (its parameter sites, the site of a row, the log-likelihood
from its statistics, its canonical variables and their closed-form moments) are the
family's ``model`` member (a :class:`~bayesnb.core.families._models.ModelSpec` built from a
prior: ``family.model(prior)``), so that this module never asks which family it holds.
:func:`family_models` makes the two numpyro functions of any registered family with a
``model``; the module's ``<family>_model`` / ``<family>_stats_model`` are those functions.

Each family has two forms:

* ``<family>_model(X, y, *, prior, class_prior)`` observes every row: ``y`` and ``x``
  in the plate ``data``. With ``X=None``/``y=None`` it generates them (``n_rows`` rows).
* ``<family>_stats_model(stats, *, prior, class_prior)`` conditions on the sufficient
  statistics of :mod:`bayesnb.core.stats` with ``numpyro.factor``: the same posterior at a
  cost independent of the number of rows. It drops terms that do not depend on the
  parameters (the multinomial coefficient, :math:`\log x!`), so its log density differs
  from the per-row form by a constant.

``prior`` is the family's prior pytree of :mod:`bayesnb.core.priors` (an estimator's
``prior_``), ``class_prior`` a :class:`~bayesnb.core.priors.Dirichlet` on the class
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
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import scipy.sparse as sp

from bayesnb.core import _fitted, families
from bayesnb.core import class_prior as _class_prior
from bayesnb.core.families import _models
from bayesnb.core.families._models import dirichlet_moments, inverse_wishart_moments
from bayesnb.core.families.protocol import Family
from bayesnb.core.priors import Dirichlet

__all__ = [
    *(name for family in families.names() if families.get(family).model is not None
      for name in (f"{family}_model", f"{family}_stats_model")),
    "mixed_model",
    "mixed_stats_model",
    "family_models",
    "model_from_estimator",
    "posterior_moments",
    "hyper_model",
    "hyper_dims",
    "block_specs",
    "variable_dims",
    "dirichlet_moments",
    "inverse_wishart_moments",
]


# ----------------------------------------------------------------------------- helpers

_real = _models.real


def _scope(prefix):
    if not prefix:
        return contextlib.nullcontext()
    # Plates keep their names: "class" and "data" are shared by every block.
    return numpyro.handlers.scope(prefix=prefix, divider="__", hide_types=["plate"])


def _prefixed(prefix, name):
    return f"{prefix}__{name}" if prefix else name


def _spec(family, prior):
    """The family's numpyro model for ``prior`` (its ``model`` member)."""
    if family.model is None:
        raise TypeError(f"no numpyro model for family {family.name!r}")
    return family.model(prior)


# ----------------------------------------------------------------------------- the model


class Block(NamedTuple):
    """One block of columns of a model: its name ("" for a one-family model), family and numpyro model."""

    name: str
    family: Family
    spec: _models.ModelSpec


def _n_classes(class_prior):
    if _class_prior.is_prior(class_prior):
        return int(np.shape(class_prior.concentration)[-1])
    probs = np.asarray(class_prior, dtype=np.float64)
    if probs.ndim != 1:
        raise ValueError(f"class_prior must be a Dirichlet or a 1-d array of proportions, got shape {probs.shape}")
    return probs.size


def _observed_mask(block, observed):
    """The block's mask of observed entries (None: every entry observed), checked."""
    mask = None if observed is None else observed.get(block.name)
    if mask is None:
        return None
    if not block.spec.per_feature:
        raise ValueError(_no_masked_rows(block.family, block.spec))
    # jnp, not np: the mask is an argument of the compiled NUTS program (a tracer there).
    return jnp.asarray(mask, dtype=bool)


def _no_masked_rows(family, spec):
    what = spec.joint_features or "its features"
    return (
        f"the numpyro model of {family.name} has no per-row form for rows with missing (NaN) "
        f"values: {what} are not separate factors of the likelihood, and bayesnb cannot fit on such "
        "rows either (see bayesnb.core.missing); pass complete rows"
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
    if _class_prior.is_prior(class_prior):
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
    with _models.data_plate(n_rows), _models.weighted(sample_weight):
        y = numpyro.sample("y", dist.Categorical(probs=pi), obs=None if y is None else jnp.asarray(y)[:, None])
    y = y[:, 0]
    for block in blocks:
        X_block = None if X is None else X[block.name]
        mask = _observed_mask(block, observed)
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


def _rows_doc(family, spec):
    return f"""Per-row numpyro model of the {spec.title or family.name} family.

    Parameters
    ----------
    X : array of shape (n_rows, n_features) or None
        Observed features ({spec.data or family.support}); ``None`` samples them.
    y : int array of shape (n_rows,) or None
        Observed class indices (positions in ``classes_``); ``None`` samples them.
    prior : {family.prior_type.__name__}
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
        NIW: ``ValueError``). Its value in ``X`` is ignored but must be valid (e.g. 0).{spec.options_doc}
{_rows_example(family, spec)}"""


def _rows_example(family, spec):
    if not spec.example:
        return ""
    return f"""
    Examples
    --------
    >>> import numpy as np
    >>> from numpyro.infer.inspect import get_model_relations
    >>> from bayesnb.core import priors
    >>> from bayesnb.ppl import models
    >>> {spec.example}
    >>> kwargs = dict(X=X, y=y, prior=prior, class_prior=priors.Dirichlet(np.ones(2)))
    >>> relations = get_model_relations(models.{family.name}_model, model_kwargs=kwargs)
    >>> sorted(relations["sample_sample"]["x"])  # what a row's features depend on
    {spec.parents}
    """


def _stats_doc(family, spec):
    return f"""The {spec.title or family.name} model conditioned on sufficient statistics (``numpyro.factor``).

    The same posterior as ``{family.name}_model``, at a cost independent of the
    number of rows; its log density differs from the per-row form by a constant.

    Parameters
    ----------
    stats : the {family.name} family's statistics
        Sufficient statistics (:mod:`bayesnb.core.stats`), e.g. an estimator's ``stats_``.
    prior : {family.prior_type.__name__}
    class_prior : Dirichlet or array of shape (n_classes,)
    """


# Made once per family (a Family is a hashable named tuple of its members).
_FAMILY_MODELS: dict = {}


def family_models(family):
    """The per-row and the statistics numpyro models of a family with a ``model`` member.

    Every ``<family>_model`` and ``<family>_stats_model`` of this module is made here,
    once per family, from the family's :class:`~bayesnb.core.families._models.ModelSpec`.

    Parameters
    ----------
    family : Family or str
        A registered family, or its name.

    Returns
    -------
    rows_model, stats_model : callable
        ``rows_model(X=None, y=None, *, prior, class_prior, n_rows=None,
        sample_weight=None, observed=None, **options)`` (``options`` go to the spec's
        ``observe``, e.g. ``n_tokens`` for multinomial) and
        ``stats_model(stats, *, prior, class_prior)``.

    Raises
    ------
    TypeError
        If the family has no numpyro model.
    """
    family = families.get(family)
    if family.model is None:
        raise TypeError(f"no numpyro model for family {family.name!r}")
    if family in _FAMILY_MODELS:
        return _FAMILY_MODELS[family]

    def rows_model(X=None, y=None, *, prior, class_prior, n_rows=None, sample_weight=None, observed=None, **options):
        data = None if X is None else {"": jnp.asarray(X)}
        observed = None if observed is None else {"": observed}
        block = Block("", family, family.model(prior))
        _naive_bayes([block], class_prior, data, y, n_rows, sample_weight, observed=observed, **options)

    def stats_model(stats, *, prior, class_prior):
        _naive_bayes([Block("", family, family.model(prior))], class_prior, stats={"": stats})

    spec_type = family.model
    for fn, name, doc in (
        (rows_model, f"{family.name}_model", _rows_doc(family, spec_type)),
        (stats_model, f"{family.name}_stats_model", _stats_doc(family, spec_type)),
    ):
        fn.__name__ = fn.__qualname__ = name
        fn.__doc__ = doc
    _FAMILY_MODELS[family] = rows_model, stats_model
    return rows_model, stats_model


def _model_names(family):
    return f"{family.name}_model", f"{family.name}_stats_model"


# The module's <family>_model and <family>_stats_model functions, one pair per registered
# family with a numpyro model (bound here so that they are documented and doctested as
# module functions); a family registered after this import is reached by __getattr__.
_MODELLED = [families.get(name) for name in families.names() if families.get(name).model is not None]
for _family in _MODELLED:
    globals().update(zip(_model_names(_family), family_models(_family)))
del _family


def __getattr__(name):
    for suffix in ("_stats_model", "_model"):
        if name.endswith(suffix) and name[: -len(suffix)] in families.names():
            family = families.get(name[: -len(suffix)])
            if family.model is not None:
                return family_models(family)[0 if suffix == "_model" else 1]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def mixed_model(X=None, y=None, *, blocks, class_prior, n_rows=None, sample_weight=None, observed=None):
    """Per-row numpyro model of a :class:`~bayesnb.MixedNB`: one block of parameters per block of columns.

    Parameters
    ----------
    X : dict of name -> array of shape (n_rows, n_block_features), or None
        Each block's columns.
    y : int array of shape (n_rows,) or None
    blocks : list of (name, Family, prior)
        E.g. ``("gaussian", bayesnb.core.families.get("gaussian"), NormalInverseGamma(...))``. Sites
        and the feature plate of a block are prefixed ``"<name>__"``.
    class_prior : Dirichlet or array of shape (n_classes,)
    n_rows : int, optional
    sample_weight : array of shape (n_rows,), optional
    observed : dict of name -> bool array of shape (n_rows, n_block_features), optional
        Each block's observed entries (see :func:`gaussian_model`); a block not in it
        is fully observed.
    """
    specs = [Block(name, family, _spec(family, prior)) for name, family, prior in blocks]
    data = None if X is None else {name: jnp.asarray(part) for name, part in X.items()}
    _naive_bayes(specs, class_prior, data, y, n_rows, sample_weight, observed=observed)


def mixed_stats_model(stats, *, blocks, class_prior):
    """A :class:`~bayesnb.MixedNB` model conditioned on each block's sufficient statistics.

    Parameters
    ----------
    stats : dict of name -> statistics pytree
    blocks : list of (name, Family, prior)
    class_prior : Dirichlet or array of shape (n_classes,)
    """
    specs = [Block(name, family, _spec(family, prior)) for name, family, prior in blocks]
    _naive_bayes(specs, class_prior, stats=stats)


# ----------------------------------------------------------------------------- estimators


def block_specs(estimator):
    """The blocks of a fitted model: ``[(name, block, columns, spec)]``.

    ``estimator`` is a :class:`bayesnb.core._fitted.FittedModel` or a fitted estimator
    (read by its ``fitted_model()``).

    ``block`` is the :class:`bayesnb.core._fitted.FittedBlock` (family and pytrees) of
    :func:`bayesnb.core._fitted.blocks`: a one-family estimator is one block named ``""``
    over all columns (``columns`` None), a product family (a :class:`~bayesnb.MixedNB`)
    has one per block of columns. ``spec`` is the numpyro model of the block's family
    (``block.family.model(block.prior)``).
    """
    return [(b.name, b, b.columns, _spec(b.family, b.prior)) for b in _fitted.blocks(_fitted.as_fitted(estimator))]


def class_prior_of(estimator):
    """The class prior of a fitted model (FittedModel or estimator): its Dirichlet, or the fixed proportions."""
    fitted = _fitted.as_fitted(estimator)
    return fitted.class_dirichlet if fitted.class_dirichlet is not None else np.asarray(fitted.class_prior)


def _dense(part):
    return part.toarray() if sp.issparse(part) else np.asarray(part)


def block_rows(estimator, X):
    """``X`` checked as the estimator's own input, split into its blocks, dense.

    ``estimator`` is a :class:`bayesnb.core._fitted.FittedModel` or a fitted estimator.

    Returns
    -------
    checked
        What the estimator's validation returns (e.g. for its statistics hooks).
    parts : list of (values, observed)
        Per block: the rows (an unobserved entry, ``missing="ignore"``, holds 0) and a
        bool mask of the observed entries, or None when every entry is observed.
    """
    from bayesnb.core.missing import MaskedX

    checked = _fitted.as_fitted(estimator).validate(X)
    pieces = checked.parts if hasattr(checked, "parts") else [checked]
    parts = []
    for piece in pieces:
        if isinstance(piece, MaskedX):
            parts.append((_dense(piece.X), ~piece.dense_mask()))
        else:
            parts.append((_dense(piece), None))
    return checked, parts


def model_from_estimator(estimator, X=None, y=None, *, form="rows", sample_weight=None, n_rows=None):
    """The numpyro model of a fitted estimator, with its hyperparameters and data.

    The prior is the estimator's ``prior_`` (for data-scaled default priors: the one
    fitted), the class proportions its ``class_dirichlet_`` or fixed ``class_prior_``.
    For an estimator with integrated hyperparameters (``hyper_posterior_``: hyperpriors
    given as numpyro distributions) it is the *un-collapsed* model :func:`hyper_model`:
    the hyperparameters are sample sites drawn from their hyperpriors (named as in
    ``hyper_posterior_``) and the prior is built from them, not fixed at ``prior_`` (the
    prior at the hyperparameters' mode).

    Parameters
    ----------
    estimator : fitted bayesnb estimator, or its FittedModel (``estimator.fitted_model()``)
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

    from bayesnb.core._validation import check_sample_weight

    if not isinstance(estimator, _fitted.FittedModel):
        check_is_fitted(estimator, "stats_")
    fitted = _fitted.as_fitted(estimator)
    if form not in ("rows", "stats"):
        raise ValueError(f"form must be 'rows' or 'stats', got {form!r}")
    blocks = block_specs(fitted)
    named = [(name, block.family, block.prior) for name, block, _, _ in blocks]
    class_prior = class_prior_of(fitted)
    parts = masks = checked = None
    if X is not None:
        checked, rows = block_rows(fitted, X)
        parts = [spec.check_rows(values) for (values, _), (_, _, _, spec) in zip(rows, blocks)]
        masks = [mask for _, mask in rows]
        for mask, (_, block, _, spec) in zip(masks, blocks):
            if mask is not None and not spec.per_feature:
                raise ValueError(_no_masked_rows(block.family, spec))
    y_index = None if y is None else _fitted.label_index(fitted, y)
    if parts is not None and y_index is not None and parts[0].shape[0] != y_index.shape[0]:
        raise ValueError(f"X has {parts[0].shape[0]} rows but y has {y_index.shape[0]} labels")
    n = parts[0].shape[0] if parts is not None else (None if y_index is None else y_index.shape[0])
    weight = None
    if sample_weight is not None:
        if n is None:
            raise ValueError("sample_weight needs data (X or y)")
        weight = check_sample_weight(sample_weight, n)
    mixed = len(blocks) > 1 or blocks[0][0] != ""
    model, kwargs = _conditioned(fitted, form, blocks, named, class_prior, parts, masks, checked, y_index, weight,
                                 n, n_rows, mixed)
    if _fitted.hyper_posterior(fitted) is None:
        return model, kwargs
    # Integrated hyperparameters: the un-collapsed model, the hyperpriors sampled with the rest.
    if mixed:
        raise ValueError("a MixedNB takes no hyperprior: there is no un-collapsed model of one")
    hypers, embedding = fitted.hyper_embedding
    kwargs = {k: v for k, v in kwargs.items() if k != "prior"}
    kwargs["class_prior"] = class_prior if fitted.class_dirichlet is None else None
    return hyper_model(model), {**kwargs, "hypers": list(hypers), "embedding": embedding}


def _conditioned(fitted, form, blocks, named, class_prior, parts, masks, checked, y_index, weight, n, n_rows, mixed):
    """The model of :func:`model_from_estimator` at the fitted prior and its arguments."""
    if form == "stats":
        if parts is None or y_index is None:
            raise ValueError("form='stats' needs both X and y")
        # The estimator's own statistics of the validated rows, so that rows with unobserved
        # entries (missing="ignore") give the per-cell statistics it fits with; a product's
        # are its blocks' (ProductStats.blocks).
        own = fitted.validated_stats(checked, y_index, weight)
        stats = own.blocks if mixed else {"": own}
        if mixed:
            return mixed_stats_model, {"stats": stats, "blocks": named, "class_prior": class_prior}
        return family_models(named[0][1])[1], {"stats": stats[""], "prior": named[0][2], "class_prior": class_prior}
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
    return family_models(named[0][1])[0], {**kwargs, "prior": named[0][2], "observed": None if observed is None else observed[""]}


# Made once per model function (the name is the model's, for the cross-check's fingerprint).
_HYPER_MODELS: dict = {}


def hyper_model(model):
    r"""The un-collapsed model of an estimator with integrated hyperparameters, around ``model``.

    The hyperparameters :math:`a` are sample sites drawn from their hyperpriors, the
    feature prior (and the Dirichlet concentration of the class proportions) built from
    them by the estimator's embedding (:func:`bayesnb.ppl.collapsed.embed`), then
    ``model`` (a per-row or statistics model of :func:`family_models`) at that prior:
    :math:`p(a)\, p(\theta, \pi \mid a)\, p(X, y \mid \theta, \pi)`, the joint whose
    :math:`(\theta, \pi)` the collapsed model integrates in closed form.

    Parameters
    ----------
    model : callable
        ``model(*, prior, class_prior, **kwargs)``.

    Returns
    -------
    callable
        ``hyper(*, hypers, embedding, class_prior, **kwargs)``: ``hypers`` a list of
        :class:`~bayesnb.ppl.collapsed.Hyper` (sites named as ``hyper_posterior_``),
        ``embedding`` the :class:`~bayesnb.ppl.collapsed.Embedding` of the pytree
        ``(prior, class concentration or None)``, ``class_prior`` the fixed proportions
        (None when they have a Dirichlet prior, whose concentration the embedding gives).
    """
    if model in _HYPER_MODELS:
        return _HYPER_MODELS[model]
    from bayesnb.ppl import collapsed

    def hyper(*, hypers, embedding, class_prior, **kwargs):
        values = {h.name: numpyro.sample(h.name, h.distribution) for h in hypers}
        prior, concentration = collapsed.embed(embedding, values)
        if concentration is not None:
            class_prior = Dirichlet(concentration)
        model(prior=prior, class_prior=class_prior, **kwargs)

    hyper.__name__ = hyper.__qualname__ = f"hyper_{model.__name__}"
    _HYPER_MODELS[model] = hyper
    return hyper


def hyper_dims(estimator):
    """Dims of the integrated hyperparameters of a fitted estimator (none without them).

    Returns
    -------
    dict of name -> tuple of dim names
        For every entry of ``hyper_posterior_``: ``("feature",)`` for a per-feature
        hyperparameter of shape (n_features,), else ``("<name>_dim_0", ...)`` (as
        :func:`bayesnb.ppl.export.add_hyperparameters` names them).
    """
    fitted = _fitted.as_fitted(estimator)
    draws = _fitted.hyper_posterior(fitted) or {}
    n_features = fitted.n_features_in
    out = {}
    for name, value in draws.items():
        shape = np.shape(value)[1:]
        out[name] = ("feature",) if n_features is not None and shape == (n_features,) else tuple(
            f"{name}_dim_{i}" for i in range(len(shape))
        )
    return out


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
    fitted = _fitted.as_fitted(estimator)
    out = {}
    if fitted.class_posterior is not None:
        out["class_probs"] = dirichlet_moments(fitted.class_posterior.concentration)
    for name, block, _, spec in block_specs(fitted):
        for var, moments in spec.moments(block.posterior).items():
            out[_prefixed(name, var)] = moments
    return out


def variable_dims(estimator):
    """Dims of every canonical parameter of a fitted estimator.

    Returns
    -------
    dims : dict of name -> tuple of dim names
        ``"class"``, ``"feature"`` (``"<block>__feature"`` in a MixedNB), ``"feature_col"``
        (the second axis of a covariance), ``"category"`` (padded to the largest number
        of categories; the arviz export has the cells that exist instead, see
        :func:`bayesnb.ppl.export.exported_dims`).
    """
    dims = {"class_probs": ("class",)}
    for name, _, _, spec in block_specs(estimator):
        for var, var_dims in spec.variables.items():
            dims[_prefixed(name, var)] = tuple(d if d == "class" else _prefixed(name, d) for d in var_dims)
    return dims
