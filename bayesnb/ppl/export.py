r"""arviz ``InferenceData`` from the closed-form posterior of a fitted estimator.

The conjugate posterior is sampled exactly (iid draws, no Markov chain), so arviz's
diagnostics read ``r_hat`` near 1 and an effective sample size near the number of draws;
the point of the export is the rest of arviz: summaries, posterior and forest plots,
PSIS-LOO / WAIC from the pointwise log-likelihood, and side-by-side comparison with an
MCMC run of the same model (:func:`bayesnb.ppl.mcmc.crosscheck`), whose ``InferenceData``
uses the same variable names, dims and coords.

Variables (names of the numpyro model's sites, see :mod:`bayesnb.ppl.models`):

==========================  ====================================================
``class_probs``             (class,) class proportions (when they have a posterior)
``feature_probs``           (class, feature) multinomial / Bernoulli;
                            (class, feature, category) categorical, NaN past a
                            feature's number of categories
``loc``, ``var``            (class, feature) diagonal Gaussian
``loc``, ``covariance``     (class, feature) and (class, feature, feature_col), or
                            (feature, feature_col) when shared
``rate``                    (class, feature) Poisson
==========================  ====================================================

In a :class:`~bayesnb.MixedNB` every block's variables and feature dims carry the block
name: ``gaussian__loc`` with dims (class, gaussian__feature).

A categorical block's category labels (a MixedNB's ``categories_``, e.g. the strings of a
DataFrame column; else the codes) are the 2-d coordinate ``category_label`` on
(feature, category), ``""`` on padding (see :func:`category_labels`).
"""

from __future__ import annotations

import jax
import numpy as np
from sklearn.utils.validation import check_is_fitted

from bayesnb.analysis import uncertainty as _uncertainty
from bayesnb.core import _fitted
from bayesnb.core._normalize import log_normalize
from bayesnb.core._random import key_from_random_state
from bayesnb.core._validation import check_n_draws
from bayesnb.core.families._rows import generator
from bayesnb.ppl import models

__all__ = [
    "to_inference_data",
    "add_hyperparameters",
    "coords_of",
    "category_labels",
    "parameter_draws",
    "scalar_labels",
    "scalar_mask",
]


def _feature_names(estimator, feature_names=None):
    if feature_names is not None:
        # e.g. a CountVectorizer's get_feature_names_out(): the columns of the matrix fitted.
        names = [str(v) for v in np.asarray(feature_names, dtype=object).ravel()]
        if len(names) != estimator.n_features_in_:
            raise ValueError(
                f"feature_names has {len(names)} names but the estimator was fitted on "
                f"{estimator.n_features_in_} features"
            )
        if len(set(names)) != len(names):
            raise ValueError("feature_names must be distinct (they are arviz coordinates)")
        return names
    names = getattr(estimator, "feature_names_in_", None)
    if names is not None:
        return [str(v) for v in names]
    return [f"x{j}" for j in range(estimator.n_features_in_)]


def _labels(values):
    return [v.item() if hasattr(v, "item") else v for v in np.asarray(values, dtype=object)]


def coords_of(estimator, feature_names=None):
    """Coordinates of the dims of :func:`bayesnb.ppl.models.variable_dims` (and the data dims).

    ``class`` holds ``classes_``; ``feature`` the feature names (``feature_names`` when
    given, e.g. a vectorizer's vocabulary; else ``feature_names_in_`` when fitted on a
    DataFrame, else ``x0, x1, ...``), per block in a MixedNB; ``category`` the category
    codes ``0 .. max K_j - 1``.

    Parameters
    ----------
    estimator : fitted bayesnb estimator
    feature_names : sequence of str of length n_features_in_, optional
    """
    names = _feature_names(estimator, feature_names)
    coords = {"class": _labels(estimator.classes_)}
    for name, _, idx, spec in models.block_specs(estimator):
        cols = names if idx is None else [names[j] for j in idx]
        prefix = f"{name}__" if name else ""
        coords[f"{prefix}feature"] = cols
        coords[f"{prefix}feature_col"] = cols
        for dim, values in spec.coords().items():
            coords[f"{prefix}{dim}"] = list(values)
    return coords


def category_labels(estimator):
    """The label of every (feature, category) cell of the categorical blocks, for arviz.

    The ``category`` dim holds codes ``0 .. max K_j - 1`` shared by the features of a
    block (the padded layout of ``feature_probs``), so the labels, which differ from
    feature to feature, are a 2-d coordinate ``category_label`` (``<block>__category_label``
    in a MixedNB) on (feature, category): the fitted category values where the estimator
    knows them (a MixedNB fitted on a DataFrame: its ``categories_``), else the codes,
    and ``""`` on the padding past a feature's number of categories.

    Parameters
    ----------
    estimator : fitted bayesnb estimator

    Returns
    -------
    dict of coordinate name -> ((feature dim, category dim), str ndarray of shape (n_features, n_codes))
    """
    known = getattr(estimator, "categories_", None)
    known = known if isinstance(known, dict) else {}
    out = {}
    for name, block, idx, spec in models.block_specs(estimator):
        codes = spec.coords().get("category")
        if codes is None:
            continue
        prefix = f"{name}__" if name else ""
        columns = range(estimator.n_features_in_) if idx is None else [int(j) for j in idx]
        # Each feature's own number of categories, where the prior is ragged (padded).
        counts = getattr(block.prior, "n_categories", None)
        counts = np.asarray([len(codes)] * len(columns) if counts is None else counts)
        labels = np.full((len(columns), len(codes)), "", dtype=object)
        for k, j in enumerate(columns):
            values = known.get(j)
            for c in range(min(int(counts[k]), len(codes))):
                labels[k, c] = str(values[c]) if values is not None and c < len(values) else str(codes[c])
        out[f"{prefix}category_label"] = ((f"{prefix}feature", f"{prefix}category"), labels.astype(str))
    return out


def _with_category_labels(idata, estimator):
    """``idata`` with :func:`category_labels` on every group that has both of its dims."""
    labels = category_labels(estimator)
    if not labels:
        return idata
    for group in idata.groups():
        ds = getattr(idata, group)
        extra = {k: v for k, v in labels.items() if all(d in ds.dims for d in v[0])}
        if extra:
            setattr(idata, group, ds.assign_coords(extra))
    return idata


def scalar_labels(name, dims, coords, shape):
    """``name[label, ...]`` for every element of a parameter of ``shape`` (C order)."""
    axes = [coords.get(d, list(range(n))) for d, n in zip(dims, shape)]
    if not shape:
        return [name]
    return [f"{name}[" + ", ".join(str(axes[a][i]) for a, i in enumerate(index)) + "]" for index in np.ndindex(*shape)]


def scalar_mask(dims, values):
    """The elements of a parameter that are free scalars: not padding, not a covariance's lower triangle.

    Parameters
    ----------
    dims : tuple of str
    values : ndarray
        The parameter (one draw, or its closed-form mean): NaN marks padding.
    """
    keep = ~np.isnan(np.asarray(values, dtype=np.float64))
    if len(dims) >= 2 and dims[-1].endswith("feature_col"):
        F = keep.shape[-1]
        keep &= np.triu(np.ones((F, F), bool))
    return keep


def parameter_draws(estimator, log_class, params):
    """Canonical parameter arrays (leading draw axis) from the estimator's draws.

    Parameters
    ----------
    estimator : fitted bayesnb estimator
    log_class : ndarray of shape (n, n_classes)
    params : the family's parameter pytree with leading axis ``n`` (a dict of them,
        by block name, for a MixedNB)

    Returns
    -------
    dict of name -> ndarray
    """
    out = {}
    if estimator.class_dirichlet_ is not None:
        out["class_probs"] = np.exp(np.asarray(log_class))
    for name, _, _, spec in models.block_specs(estimator):
        block_params = params[name] if name else params
        for var, value in spec.values(block_params).items():
            out[models._prefixed(name, var)] = np.asarray(value)
    return out


def _chains(draws, n_chains, n_draws):
    return {k: v.reshape((n_chains, n_draws) + v.shape[1:]) for k, v in draws.items()}


def _data_arrays(estimator, X):
    """The checked training or new rows, dense, under the names of the observed data.

    An unobserved entry (``missing="ignore"``) is NaN in the returned arrays.
    """
    checked, parts = models.block_rows(estimator, X)
    arrays = []
    for values, observed in parts:
        if observed is not None:
            values = np.where(observed, values, np.nan)
        arrays.append(values)
    blocks = models.block_specs(estimator)
    if hasattr(checked, "parts"):
        return checked, {f"{name}__X": part for (name, _, _, _), part in zip(blocks, arrays)}
    return checked, {"X": arrays[0]}


def _joint_draws(estimator, log_class, params, checked):
    r"""Yield ``(start, stop, joint)``: :math:`\log p(x_i, y{=}c \mid \theta_d, \pi_d)` by blocks of draws.

    ``joint`` has shape (stop - start, n_rows, n_classes); the feature part is the
    family's log-likelihood of stacked draws (that of the uncertainty engine, which also
    scores rows with unobserved entries).
    """
    total = log_class.shape[0]
    n_rows, n_classes = checked.shape[0], estimator.classes_.size
    per_draw = max(1, n_rows * n_classes + _uncertainty.draw_size(estimator.posterior_))
    step = max(1, _uncertainty.CHUNK_ENTRIES // per_draw)
    for start in range(0, total, step):
        stop = min(total, start + step)
        block = jax.tree.map(lambda a: a[start:stop], params)
        yield start, stop, _fitted.log_likelihood_draws(estimator, block, checked) + log_class[start:stop, None, :]


def to_inference_data(
    estimator, n_draws=500, random_state=None, X_new=None, *, X=None, y=None, n_chains=2, feature_names=None,
    draws=None, prior_draws=None,
):
    r"""An arviz ``InferenceData`` of exact iid draws from a fitted estimator's posterior.

    Groups:

    * ``posterior`` and ``prior``: the parameters (see the module docstring), with dims
      ``(chain, draw, ...)``; the iid draws are split into ``n_chains`` chains.
    * ``constant_data``: ``class_probs`` when the class proportions are fixed.
    * With the training data ``X, y`` (the estimator keeps only sufficient statistics,
      so it cannot supply them itself): ``observed_data`` (``X``, ``y``; per block
      ``<block>__X`` for a MixedNB), ``log_likelihood`` ``xy`` of shape (chain, draw,
      data), the joint :math:`\log p(x_i, y_i \mid \theta, \pi)` of every training row
      under every draw (what ``az.loo`` / ``az.waic`` need; for the multinomial family the
      log probability of the token sequence, as everywhere in bayesnb), and
      ``posterior_predictive`` ``y``: a label drawn from
      :math:`p(y \mid x_i, \theta, \pi)` for every row and draw. With
      ``missing="ignore"`` an unobserved entry is NaN in ``observed_data`` and left out
      of the row's likelihood (as in the estimator's own predictions). Beside ``xy``,
      ``log_likelihood`` holds ``y``, the conditional
      :math:`\log p(y_i \mid x_i, \theta, \pi)` (the log of the class probability of
      the row's label under the draw): the likelihood of a classifier, whose LOO is
      ``az.loo(idata, var_name="y")`` (``var_name="xy"`` for the generative model's;
      arviz asks for the name when a group holds two).
    * A tempered estimator (``temperature_`` :math:`T \ne 1`): ``predictions`` are
      tempered like its ``predict_proba``; ``log_likelihood`` and ``posterior_predictive``
      stay those of the model as written (tempering is a device on the class
      probabilities, not a different likelihood of the data).
    * With ``X_new``: ``predictions`` ``class_proba`` (chain, draw, new_data, class), the
      class probabilities :math:`p(y = c \mid x, \theta, \pi)` under every draw, and
      ``predictions_constant_data`` ``X_new``.

    Parameters
    ----------
    estimator : fitted bayesnb estimator
    n_draws : int
        Draws per chain (default 500: 1,000 draws in all).
    random_state : int, RandomState, Generator, jax key or None
    X_new : array-like of shape (n_new, n_features), optional
    X, y : array-like of shape (n_samples, n_features) and (n_samples,), optional
        The training data (both or neither).
    n_chains : int
        Chains the iid draws are split into (default 2): arviz's ``r_hat`` needs at
        least two, and with exact iid draws it is near 1 by construction.
    feature_names : sequence of str of length n_features_in_, optional
        The ``feature`` coordinates (e.g. ``CountVectorizer.get_feature_names_out()``);
        default ``feature_names_in_`` when fitted on a DataFrame, else ``x0, x1, ...``.
    draws, prior_draws : tuple (log_class, params), optional
        ``n_chains * n_draws`` draws (log class proportions of shape (n, n_classes) and
        the family's parameters with a leading axis n) to use instead of the exact iid
        draws of the posterior / prior: an estimator whose hyperparameters are
        integrated passes draws conditional on each draw of them (see
        :func:`add_hyperparameters`).

    Returns
    -------
    arviz.InferenceData

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import PoissonNB
    >>> X = np.array([[2, 0], [3, 1], [0, 4], [1, 3]]); y = ["a", "a", "b", "b"]
    >>> idata = PoissonNB().fit(X, y).to_inference_data(200, random_state=0, X=X, y=y)
    >>> sorted(idata.groups())
    ['log_likelihood', 'observed_data', 'posterior', 'posterior_predictive', 'prior']
    >>> dict(idata.posterior["rate"].sizes)
    {'chain': 2, 'draw': 200, 'class': 2, 'feature': 2}
    >>> idata.posterior["rate"].coords["class"].values.tolist()
    ['a', 'b']
    """
    import arviz as az

    check_is_fitted(estimator, "stats_")
    n_draws = check_n_draws(n_draws, "n_draws")
    n_chains = check_n_draws(n_chains, "n_chains")
    if (X is None) != (y is None):
        raise ValueError("pass both X and y (the training data) for observed_data and log_likelihood, or neither")
    total = n_chains * n_draws
    key_post, key_prior, key_rep = jax.random.split(key_from_random_state(random_state), 3)
    log_class, params = _fitted.draws(estimator, total, key_post) if draws is None else draws
    prior_log_class, prior_params = (
        _fitted.draws(estimator, total, key_prior, prior=True) if prior_draws is None else prior_draws
    )
    groups = {
        "posterior": _chains(parameter_draws(estimator, log_class, params), n_chains, n_draws),
        "prior": _chains(parameter_draws(estimator, prior_log_class, prior_params), n_chains, n_draws),
    }
    dims = dict(models.variable_dims(estimator))
    coords = coords_of(estimator, feature_names)
    if estimator.class_dirichlet_ is None:
        groups["constant_data"] = {"class_probs": np.asarray(estimator.class_prior_, dtype=np.float64)}

    if X is not None:
        checked, observed = _data_arrays(estimator, X)
        y_index = models._labels_index(estimator, y)
        if y_index.shape[0] != checked.shape[0]:
            raise ValueError(f"X has {checked.shape[0]} rows but y has {y_index.shape[0]} labels")
        n = y_index.shape[0]
        rows = np.arange(n)
        loglik = np.empty((total, n))
        conditional = np.empty((total, n))
        replicated = np.empty((total, n), dtype=np.int64)
        rng = generator(key_rep)
        for start, stop, lj in _joint_draws(estimator, log_class, params, checked):
            loglik[start:stop] = lj[:, rows, y_index]
            log_proba = log_normalize(lj, log_class[start:stop, None, :])[0]
            conditional[start:stop] = log_proba[:, rows, y_index]
            proba = np.exp(log_proba)
            u = rng.random((stop - start, n))[..., None] * proba.sum(axis=-1, keepdims=True)
            replicated[start:stop] = (np.cumsum(proba, axis=-1) <= u).sum(axis=-1)
        labels = estimator.classes_
        groups["observed_data"] = {"y": np.asarray(labels[y_index]), **observed}
        groups["log_likelihood"] = _chains({"xy": loglik, "y": conditional}, n_chains, n_draws)
        groups["posterior_predictive"] = _chains({"y": labels[np.minimum(replicated, labels.size - 1)]}, n_chains, n_draws)
        dims.update({"y": ("data",), "xy": ("data",)})
        for var in observed:
            dims[var] = ("data", var[: -len("X")] + "feature")
        coords["data"] = list(range(n))
    if X_new is not None:
        checked_new, new_arrays = _data_arrays(estimator, X_new)
        n_new = checked_new.shape[0]
        proba = np.empty((total, n_new, estimator.classes_.size))
        temperature = _fitted.temperature(estimator)
        for start, stop, lj in _joint_draws(estimator, log_class, params, checked_new):
            lc = log_class[start:stop, None, :]
            if temperature != 1.0:
                # Tempered as the estimator's predict_proba: the feature part over T.
                lj = lc + (lj - lc) / temperature
            proba[start:stop] = np.exp(log_normalize(lj, lc)[0])
        groups["predictions"] = _chains({"class_proba": proba}, n_chains, n_draws)
        groups["predictions_constant_data"] = {f"{k}_new": v for k, v in new_arrays.items()}
        dims["class_proba"] = ("new_data", "class")
        for var in new_arrays:
            dims[f"{var}_new"] = ("new_data", var[: -len("X")] + "feature")
        coords["new_data"] = list(range(n_new))
    attrs = {
        "inference_library": "bayesnb",
        "sampling": "exact iid draws from the conjugate posterior (no Markov chain)",
        "estimator": type(estimator).__name__,
    }
    dims = {k: list(v) for k, v in dims.items()}
    return _with_category_labels(az.from_dict(**groups, coords=coords, dims=dims, attrs=attrs), estimator)


def add_hyperparameters(idata, hyper_draws, n_chains, n_features=None, group="posterior"):
    """Add draws of integrated hyperparameters to a group of an ``InferenceData``.

    Parameters
    ----------
    idata : arviz.InferenceData
        Whose ``group`` has ``n_chains`` chains of ``n`` draws.
    hyper_draws : dict of str to ndarray of shape (n_chains * n, ...)
        Chains one after the other (an estimator's ``hyper_posterior_``).
    n_chains : int
    n_features : int, optional
        A hyperparameter of shape (n_features,) gets the ``feature`` dim.
    group : str

    Returns
    -------
    arviz.InferenceData
        ``idata``, with the variables added in place.
    """
    import xarray as xr

    target = getattr(idata, group)
    for name, value in hyper_draws.items():
        value = np.asarray(value)
        value = value.reshape((n_chains, -1) + value.shape[1:])
        if value.shape[1] != target.sizes["draw"]:
            raise ValueError(f"{name} has {value.shape[1]} draws per chain, the {group} group {target.sizes['draw']}")
        extra = ["feature"] if n_features is not None and value.shape[2:] == (n_features,) else [
            f"{name}_dim_{i}" for i in range(value.ndim - 2)
        ]
        coords = {"chain": target.coords["chain"], "draw": target.coords["draw"]}
        if extra == ["feature"]:
            coords["feature"] = target.coords["feature"] if "feature" in target.coords else np.arange(n_features)
        target[name] = xr.DataArray(value, dims=["chain", "draw"] + extra, coords=coords)
    return idata
