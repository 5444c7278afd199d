r"""arviz ``InferenceData`` / ``DataTree`` from the closed-form posterior of a fitted estimator.

The export is the installed arviz's native object: an ``xarray.DataTree`` on arviz 1.x
(Python >= 3.12), an ``arviz.InferenceData`` on arviz 0.x, with the same groups, names,
dims, coords and values (one code path; the version lives in
:mod:`bayesnb.analysis._arviz`). ``export.group_names(idata)`` lists the groups of
either; ``idata.posterior["loc"]`` reads a variable of either.

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
                            (class, cell) categorical: one cell per (feature,
                            category) that exists, no padding
``loc``, ``var``            (class, feature) diagonal Gaussian
``loc``, ``covariance``     (class, feature) and (class, feature, feature_col), or
                            (feature, feature_col) when shared
``rate``                    (class, feature) Poisson
==========================  ====================================================

In a :class:`~bayesnb.MixedNB` every block's variables and feature dims carry the block
name: ``gaussian__loc`` with dims (class, gaussian__feature).

Categorical parameters are flat over the cells that exist. Features with different
numbers of categories :math:`K_j` are stored padded to the largest inside bayesnb (and in
:func:`parameter_draws`, where NaN marks the padding); a (class, feature, category)
array of them would be mostly NaN on data with one wide feature (58% on credit-g), and
arviz shows every NaN cell as an empty row of ``az.summary`` and a forest plot. So the
export has one dim ``cell`` (``<block>__cell`` in a MixedNB) of the
:math:`\sum_j K_j` cells, feature by feature, the same kind of dim whatever the counts
(code written for one data set runs on another), rather than one variable per distinct
:math:`K_j`, which would change the variable names with the data. Its coordinates
(:func:`cell_coords`) are the cell names ``"colour=red"`` (feature name and category
label, the fitted category values where the estimator knows them: a MixedNB's
``categories_``, e.g. the strings of a DataFrame column; else the codes), so that
``az.summary`` labels a row ``feature_probs[yes, colour=red]``; along the dim,
``constant_data`` holds the variables ``cell_feature``, ``category_label`` and
``category_code`` (variables, not coordinates of the parameters: arviz 1.x's
``summary`` stacks a group's variables and refuses a coordinate that only some of them
carry): with ``cells = idata.constant_data``,
``probs.groupby(cells["cell_feature"]).sum()`` is 1 per class and feature, and
``probs.where(cells["cell_feature"] == "colour", drop=True)`` one feature's simplex. (Not
``feature``: a ``feature`` dim may sit in the same group, e.g. an integrated per-feature
hyperparameter.) The NUTS side of :func:`bayesnb.ppl.mcmc.crosscheck` is exported in the
same layout (:func:`from_canonical`).
"""

from __future__ import annotations

import jax
import numpy as np
from sklearn.utils.validation import check_is_fitted

from bayesnb.analysis import _arviz
from bayesnb.analysis import calibration as _calibration
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
    "cell_coords",
    "exported_dims",
    "from_canonical",
    "group_names",
    "parameter_draws",
    "scalar_labels",
    "scalar_mask",
]


def _feature_names(fitted, feature_names=None):
    if feature_names is not None:
        # e.g. a CountVectorizer's get_feature_names_out(): the columns of the matrix fitted.
        names = [str(v) for v in np.asarray(feature_names, dtype=object).ravel()]
        if len(names) != fitted.n_features_in:
            raise ValueError(
                f"feature_names has {len(names)} names but the estimator was fitted on "
                f"{fitted.n_features_in} features"
            )
        if len(set(names)) != len(names):
            raise ValueError("feature_names must be distinct (they are arviz coordinates)")
        return names
    names = fitted.feature_names_in
    if names is not None:
        return [str(v) for v in names]
    return [f"x{j}" for j in range(fitted.n_features_in)]


def _labels(values):
    return [v.item() if hasattr(v, "item") else v for v in np.asarray(values, dtype=object)]


def coords_of(estimator, feature_names=None):
    """Coordinates of the dims of :func:`bayesnb.ppl.models.variable_dims` (and the data dims).

    ``class`` holds ``classes_``; ``feature`` the feature names (``feature_names`` when
    given, e.g. a vectorizer's vocabulary; else ``feature_names_in_`` when fitted on a
    DataFrame, else ``x0, x1, ...``), per block in a MixedNB; ``category`` the category
    codes ``0 .. max K_j - 1`` (the padded axis of the canonical arrays; the export's
    ``cell`` dim has the coordinates of :func:`cell_coords`).

    Parameters
    ----------
    estimator : fitted bayesnb estimator, or its FittedModel
    feature_names : sequence of str of length n_features_in_, optional
    """
    fitted = _fitted.as_fitted(estimator)
    names = _feature_names(fitted, feature_names)
    coords = {"class": _labels(fitted.classes)}
    for name, _, idx, spec in models.block_specs(fitted):
        cols = names if idx is None else [names[j] for j in idx]
        prefix = f"{name}__" if name else ""
        coords[f"{prefix}feature"] = cols
        coords[f"{prefix}feature_col"] = cols
        for dim, values in spec.coords().items():
            coords[f"{prefix}{dim}"] = list(values)
    return coords


def _cell_blocks(fitted, feature_names=None):
    """The blocks with a padded ``category`` dim and the (feature, category) cells that exist.

    Returns
    -------
    list of (prefix, feature index, category index, coords)
        The indices (into the block's feature and category axes) of every cell that
        exists, feature by feature and in code order within a feature; ``coords`` maps
        the names of the cell coordinates to ``(dim, values)`` (see :func:`cell_coords`).
    """
    names = _feature_names(fitted, feature_names)
    known = fitted.categories
    known = known if isinstance(known, dict) else {}
    out = []
    for name, _, idx, spec in models.block_specs(fitted):
        valid = spec.cells()
        if valid is None:
            continue
        prefix = f"{name}__" if name else ""
        dim = f"{prefix}cell"
        columns = list(range(fitted.n_features_in)) if idx is None else [int(j) for j in idx]
        codes = list(spec.coords()["category"])
        f_idx, k_idx = np.nonzero(np.asarray(valid, dtype=bool))  # C order: feature-major
        features, labels = [], []
        for f, k in zip(f_idx.tolist(), k_idx.tolist()):
            # The fitted category values where the estimator knows them (a MixedNB fitted
            # on a DataFrame: its categories_), else the codes.
            values = known.get(columns[f])
            features.append(names[columns[f]])
            labels.append(str(values[k]) if values is not None and k < len(values) else str(codes[k]))
        cells = [f"{a}={b}" for a, b in zip(features, labels)]
        if len(set(cells)) < len(cells):
            # Labels that print alike (1 and "1" in one object column) or an "=" inside a
            # feature name: the (column, code) prefix, read up to "]", makes them distinct.
            cells = [f"[{columns[f]},{k}] {c}" for f, k, c in zip(f_idx.tolist(), k_idx.tolist(), cells)]
        coords = {
            dim: (dim, np.asarray(cells, dtype=str)),
            f"{prefix}cell_feature": (dim, np.asarray(features, dtype=str)),
            f"{prefix}category_label": (dim, np.asarray(labels, dtype=str)),
            f"{prefix}category_code": (dim, np.asarray([codes[k] for k in k_idx.tolist()], dtype=np.int64)),
        }
        out.append((prefix, f_idx, k_idx, coords))
    return out


def cell_coords(estimator, feature_names=None):
    """The coordinates of the ``cell`` dim of the categorical blocks and the cells' table, for arviz.

    A categorical ``feature_probs`` is exported over one flat dim ``cell``
    (``<block>__cell`` in a MixedNB) of the (feature, category) cells that exist, feature
    by feature and in code order within a feature, so that no array holds padding
    whatever the numbers of categories. Along it:

    * ``cell`` (the dim's own coordinate): ``"<feature>=<label>"``, e.g. ``"colour=red"``;
      if two of them would print alike (labels such as ``1`` and ``"1"`` in one object
      column, or an ``=`` inside a feature name) every one is prefixed with its
      ``[column,code]`` (the column of ``X``, the category code): ``"[0,1] a=b=c"``;
    and, variables of the export's ``constant_data`` along the dim:

    * ``cell_feature``: the feature name (as in :func:`coords_of`);
    * ``category_label``: the category, the fitted value where the estimator knows it (a
      MixedNB fitted on a DataFrame: its ``categories_``, e.g. the column's strings),
      else the code;
    * ``category_code``: the code (the column of the estimator's own tables).

    In a MixedNB every name carries the block prefix (``categorical__cell_feature``).

    Parameters
    ----------
    estimator : fitted bayesnb estimator
    feature_names : sequence of str of length n_features_in_, optional

    Returns
    -------
    dict of coordinate name -> (dim, ndarray)
        Empty when the estimator has no categorical block.
    """
    return {k: v for *_, coords in _cell_blocks(_fitted.as_fitted(estimator), feature_names) for k, v in coords.items()}


def exported_dims(estimator):
    """Dims of every parameter as :func:`to_inference_data` exports it.

    Those of :func:`bayesnb.ppl.models.variable_dims`, except that a categorical
    parameter's (feature, category) pair, padded there, is the one dim of the cells that
    exist, ``cell`` (``<block>__cell``): ``feature_probs`` has dims (class, cell).

    Parameters
    ----------
    estimator : fitted bayesnb estimator

    Returns
    -------
    dict of name -> tuple of dim names
    """
    fitted = _fitted.as_fitted(estimator)
    dims = dict(models.variable_dims(fitted))
    for prefix, *_ in _cell_blocks(fitted):
        pair = (f"{prefix}feature", f"{prefix}category")
        for var, var_dims in dims.items():
            if var_dims[-2:] == pair:
                dims[var] = var_dims[:-2] + (f"{prefix}cell",)
    return dims


def from_canonical(estimator, groups, *, dims, coords, attrs=None, feature_names=None):
    """``az.from_dict`` of canonical parameter arrays, in the exported layout.

    The canonical arrays (:func:`parameter_draws`, an MCMC run's samples) of a categorical
    family are padded (class, feature, category) with NaN past each feature's number of
    categories; here their last two axes become the ``cell`` dim of the cells that exist
    (:func:`exported_dims`), with the cell names of :func:`cell_coords` as its
    coordinate and the cells' feature, label and code as variables of
    ``constant_data``. Other variables pass through.

    Parameters
    ----------
    estimator : fitted bayesnb estimator
    groups : dict of group name -> dict of variable name -> ndarray
        Parameters with the canonical (padded) shape after their leading axes.
    dims : dict of variable name -> sequence of dim names
        Canonical dims (:func:`bayesnb.ppl.models.variable_dims` and the data's).
    coords : dict of dim name -> values
    attrs : dict, optional
    feature_names : sequence of str of length n_features_in_, optional

    Returns
    -------
    arviz.InferenceData or xarray.DataTree
        The installed arviz's (:func:`bayesnb.analysis._arviz.from_dict`).
    """
    blocks = _cell_blocks(_fitted.as_fitted(estimator), feature_names)
    dims = {k: tuple(v) for k, v in dims.items()}
    flat = {}
    for prefix, f_idx, k_idx, _ in blocks:
        pair = (f"{prefix}feature", f"{prefix}category")
        for var, var_dims in list(dims.items()):
            if var_dims[-2:] == pair:
                flat[var] = (f_idx, k_idx)
                dims[var] = var_dims[:-2] + (f"{prefix}cell",)
    groups = {
        group: {k: (np.asarray(v)[..., flat[k][0], flat[k][1]] if k in flat else v) for k, v in values.items()}
        for group, values in groups.items()
    }
    coords = dict(coords)
    table = {}
    for *_, cell in blocks:
        for name, (dim, values) in cell.items():
            if name == dim:
                coords[name] = list(values)
            else:
                # The cells' feature, label and code are variables of constant_data along
                # the cell dim, not coordinates of the parameters: arviz 1.x's summary
                # stacks a group's variables and refuses a coordinate that only some of
                # them (those over cells) carry.
                table[name] = np.asarray(values)
                dims[name] = (dim,)
    if table:
        groups["constant_data"] = {**groups.get("constant_data", {}), **table}
    return _arviz.from_dict(groups, coords=coords, dims=dims, attrs=attrs)


def group_names(idata):
    """The groups of an export, whichever arviz made it (``InferenceData`` or ``DataTree``).

    Parameters
    ----------
    idata : arviz.InferenceData or xarray.DataTree

    Returns
    -------
    list of str
    """
    return _arviz.group_names(idata)


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
    estimator : fitted bayesnb estimator, or its FittedModel
    log_class : ndarray of shape (n, n_classes)
    params : the family's parameter pytree with leading axis ``n`` (a dict of them,
        by block name, for a MixedNB)

    Returns
    -------
    dict of name -> ndarray
    """
    fitted = _fitted.as_fitted(estimator)
    out = {}
    if fitted.class_dirichlet is not None:
        out["class_probs"] = np.exp(np.asarray(log_class))
    for name, _, _, spec in models.block_specs(fitted):
        block_params = params[name] if name else params
        for var, value in spec.values(block_params).items():
            out[models._prefixed(name, var)] = np.asarray(value)
    return out


def _chains(draws, n_chains, n_draws):
    return {k: v.reshape((n_chains, n_draws) + v.shape[1:]) for k, v in draws.items()}


def _data_arrays(fitted, X):
    """The checked training or new rows, dense, under the names of the observed data.

    An unobserved entry (``missing="ignore"``) is NaN in the returned arrays.
    """
    checked, parts = models.block_rows(fitted, X)
    arrays = []
    for values, observed in parts:
        if observed is not None:
            values = np.where(observed, values, np.nan)
        arrays.append(values)
    blocks = models.block_specs(fitted)
    if hasattr(checked, "parts"):
        return checked, {f"{name}__X": part for (name, _, _, _), part in zip(blocks, arrays)}
    return checked, {"X": arrays[0]}


def _joint_draws(fitted, log_class, params, checked):
    r"""Yield ``(start, stop, joint)``: :math:`\log p(x_i, y{=}c \mid \theta_d, \pi_d)` by blocks of draws.

    ``joint`` has shape (stop - start, n_rows, n_classes); the feature part is the
    family's log-likelihood of stacked draws (that of the uncertainty engine, which also
    scores rows with unobserved entries).
    """
    total = log_class.shape[0]
    n_rows, n_classes = checked.shape[0], fitted.n_classes
    per_draw = max(1, n_rows * n_classes + _uncertainty.draw_size(fitted.posterior))
    step = max(1, _uncertainty.CHUNK_ENTRIES // per_draw)
    for start in range(0, total, step):
        stop = min(total, start + step)
        block = jax.tree.map(lambda a: a[start:stop], params)
        yield start, stop, _fitted.log_likelihood_draws(fitted, block, checked) + log_class[start:stop, None, :]


def to_inference_data(
    estimator, n_draws=500, random_state=None, X_new=None, *, X=None, y=None, n_chains=2, feature_names=None,
    draws=None, prior_draws=None,
):
    r"""An arviz ``InferenceData`` of exact iid draws from a fitted estimator's posterior.

    Groups:

    * ``posterior`` and ``prior``: the parameters (see the module docstring), with dims
      ``(chain, draw, ...)`` (:func:`exported_dims`); the iid draws are split into
      ``n_chains`` chains. A categorical parameter has dims ``(chain, draw, class,
      cell)``: one cell per (feature, category) that exists, named ``"colour=red"``
      (:func:`cell_coords`), so no cell is padding.
    * ``constant_data``: ``class_probs`` when the class proportions are fixed.
    * With the training data ``X, y`` (the estimator keeps only sufficient statistics,
      so it cannot supply them itself), following arviz's conventions (what is predicted
      is in ``observed_data`` and ``posterior_predictive`` under one name, what it is
      conditioned on in ``constant_data``), so that ``az.plot_ppc(idata)`` (arviz 0.x)
      and ``azp.plot_ppc_dist(idata)`` (arviz 1.x) run on the defaults:
      ``observed_data`` ``y``, the labels as integer codes into the ``class``
      coordinate (``classes_``), with the label names as its coordinate ``label``
      along ``data``; ``constant_data`` ``X`` (per block ``<block>__X`` for a
      MixedNB); ``log_likelihood`` ``xy`` of shape (chain, draw, data), the joint :math:`\log p(x_i, y_i \mid \theta, \pi)` of every training row
      under every draw (what ``az.loo`` / ``az.waic`` need; for the multinomial family the
      log probability of the token sequence, as everywhere in bayesnb), and
      ``posterior_predictive`` ``y``: a label (its code) drawn from
      :math:`p(y \mid x_i, \theta, \pi)` for every row and draw. With
      ``missing="ignore"`` an unobserved entry is NaN in ``constant_data`` and left out
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
    estimator : fitted bayesnb estimator, or its FittedModel (``estimator.fitted_model()``)
        An estimator is read once, at entry.
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
    arviz.InferenceData or xarray.DataTree
        The installed arviz's native object (``DataTree`` on arviz 1.x).

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import PoissonNB
    >>> X = np.array([[2, 0], [3, 1], [0, 4], [1, 3]]); y = ["a", "a", "b", "b"]
    >>> idata = PoissonNB().fit(X, y).to_inference_data(200, random_state=0, X=X, y=y)
    >>> sorted(group_names(idata))
    ['constant_data', 'log_likelihood', 'observed_data', 'posterior', 'posterior_predictive', 'prior']
    >>> idata.observed_data["y"].values.tolist(), idata.observed_data["label"].values.tolist()
    ([0, 0, 1, 1], ['a', 'a', 'b', 'b'])
    >>> dict(idata.posterior["rate"].sizes)
    {'chain': 2, 'draw': 200, 'class': 2, 'feature': 2}
    >>> idata.posterior["rate"].coords["class"].values.tolist()
    ['a', 'b']

    A categorical posterior is flat over the cells that exist (2 + 3 here):

    >>> from bayesnb import CategoricalNB
    >>> X = np.array([[0, 2], [1, 0], [0, 1], [1, 1]])
    >>> probs = CategoricalNB().fit(X, y).to_inference_data(50, random_state=0).posterior["feature_probs"]
    >>> probs.dims
    ('chain', 'draw', 'class', 'cell')
    >>> probs.coords["cell"].values.tolist()
    ['x0=0', 'x0=1', 'x1=0', 'x1=1', 'x1=2']
    >>> cells = CategoricalNB().fit(X, y).to_inference_data(50, random_state=0).constant_data
    >>> cells["cell_feature"].values.tolist(), cells["category_code"].values.tolist()
    (['x0', 'x0', 'x1', 'x1', 'x1'], [0, 1, 0, 1, 2])
    """
    if not isinstance(estimator, _fitted.FittedModel):
        check_is_fitted(estimator, "stats_")
    fitted = _fitted.as_fitted(estimator)
    n_draws = check_n_draws(n_draws, "n_draws")
    n_chains = check_n_draws(n_chains, "n_chains")
    if (X is None) != (y is None):
        raise ValueError("pass both X and y (the training data) for observed_data and log_likelihood, or neither")
    total = n_chains * n_draws
    key_post, key_prior, key_rep = jax.random.split(key_from_random_state(random_state), 3)
    log_class, params = _fitted.draws(fitted, total, key_post) if draws is None else draws
    prior_log_class, prior_params = (
        _fitted.draws(fitted, total, key_prior, prior=True) if prior_draws is None else prior_draws
    )
    groups = {
        "posterior": _chains(parameter_draws(fitted, log_class, params), n_chains, n_draws),
        "prior": _chains(parameter_draws(fitted, prior_log_class, prior_params), n_chains, n_draws),
    }
    dims = dict(models.variable_dims(fitted))
    coords = coords_of(fitted, feature_names)
    if fitted.class_dirichlet is None:
        groups["constant_data"] = {"class_probs": np.asarray(fitted.class_prior, dtype=np.float64)}

    if X is not None:
        checked, observed = _data_arrays(fitted, X)
        y_index = _fitted.label_index(fitted, y)
        if y_index.shape[0] != checked.shape[0]:
            raise ValueError(f"X has {checked.shape[0]} rows but y has {y_index.shape[0]} labels")
        n = y_index.shape[0]
        rows = np.arange(n)
        loglik = np.empty((total, n))
        conditional = np.empty((total, n))
        replicated = np.empty((total, n), dtype=np.int64)
        rng = generator(key_rep)
        for start, stop, lj in _joint_draws(fitted, log_class, params, checked):
            loglik[start:stop] = lj[:, rows, y_index]
            log_proba = log_normalize(lj, log_class[start:stop, None, :])[0]
            conditional[start:stop] = log_proba[:, rows, y_index]
            proba = np.exp(log_proba)
            u = rng.random((stop - start, n))[..., None] * proba.sum(axis=-1, keepdims=True)
            replicated[start:stop] = (np.cumsum(proba, axis=-1) <= u).sum(axis=-1)
        # arviz's conventions: what is predicted (y, given x) is observed_data and
        # posterior_predictive under one name; the rows it is conditioned on are
        # constant_data. Labels are integer codes into the class coordinate (arviz's
        # numeric plots take no strings); the observed label names ride along as a coordinate.
        groups["observed_data"] = {"y": np.asarray(y_index, dtype=np.int64)}
        groups["constant_data"] = {**groups.get("constant_data", {}), **observed}
        groups["log_likelihood"] = _chains({"xy": loglik, "y": conditional}, n_chains, n_draws)
        n_classes = fitted.n_classes
        groups["posterior_predictive"] = _chains({"y": np.minimum(replicated, n_classes - 1)}, n_chains, n_draws)
        dims.update({"y": ("data",), "xy": ("data",)})
        for var in observed:
            dims[var] = ("data", var[: -len("X")] + "feature")
        coords["data"] = list(range(n))
    if X_new is not None:
        checked_new, new_arrays = _data_arrays(fitted, X_new)
        n_new = checked_new.shape[0]
        proba = np.empty((total, n_new, fitted.n_classes))
        temperature = _fitted.temperature(fitted)
        cmap = _fitted.calibration(fitted)
        for start, stop, lj in _joint_draws(fitted, log_class, params, checked_new):
            lc = log_class[start:stop, None, :]
            if temperature != 1.0:
                # Tempered as the estimator's predict_proba: the feature part over T.
                lj = lc + (lj - lc) / temperature
            # Calibrated as predict_proba (the map of bayesnb.analysis.calibration, if any).
            proba[start:stop] = np.exp(_calibration.apply(cmap, log_normalize(lj, lc)[0]))
        groups["predictions"] = _chains({"class_proba": proba}, n_chains, n_draws)
        groups["predictions_constant_data"] = {f"{k}_new": v for k, v in new_arrays.items()}
        dims["class_proba"] = ("new_data", "class")
        for var in new_arrays:
            dims[f"{var}_new"] = ("new_data", var[: -len("X")] + "feature")
        coords["new_data"] = list(range(n_new))
    attrs = {
        "inference_library": "bayesnb",
        "sampling": "exact iid draws from the conjugate posterior (no Markov chain)",
        "estimator": fitted.name,
    }
    idata = from_canonical(fitted, groups, dims=dims, coords=coords, attrs=attrs, feature_names=feature_names)
    if X is not None:
        observed = _arviz.get_group(idata, "observed_data")
        names = np.asarray([str(v) for v in _labels(fitted.classes)], dtype=str)
        _arviz.set_group(idata, "observed_data", observed.assign_coords(label=("data", names[y_index])))
    return idata


def add_hyperparameters(idata, hyper_draws, n_chains, n_features=None, group="posterior", feature_names=None):
    """Add draws of integrated hyperparameters to a group of an export (``InferenceData`` or ``DataTree``).

    Parameters
    ----------
    idata : arviz.InferenceData or xarray.DataTree
        Whose ``group`` has ``n_chains`` chains of ``n`` draws.
    hyper_draws : dict of str to ndarray of shape (n_chains * n, ...)
        Chains one after the other (an estimator's ``hyper_posterior_``).
    n_chains : int
    n_features : int, optional
        A hyperparameter of shape (n_features,) gets the ``feature`` dim.
    group : str
    feature_names : sequence of length n_features, optional
        The ``feature`` coordinates when the group has no ``feature`` dim of its own (a
        categorical posterior is over ``cell``); default ``0 .. n_features - 1``.

    Returns
    -------
    arviz.InferenceData or xarray.DataTree
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
            if "feature" in target.coords:
                coords["feature"] = target.coords["feature"]
            else:
                coords["feature"] = np.arange(n_features) if feature_names is None else list(feature_names)
        target[name] = xr.DataArray(value, dims=["chain", "draw"] + extra, coords=coords)
    return idata
