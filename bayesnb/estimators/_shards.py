r"""Sufficient statistics of one part of the data, combined across parts.

A fit is one map and one reduce: each part of the data (a Dask partition, a chunk of a
stream) is validated and summarised by the estimator's own hooks (``_check_X``,
``_compute_stats``) into a :class:`Shard` (the public entry is
:meth:`BaseNB.shard <bayesnb.estimators._base.BaseNB.shard>`); shards are combined with
:meth:`Shard.merge` (the statistics' own ``merge``, see :mod:`bayesnb.core.stats`);
:meth:`BaseNB.fit_shard <bayesnb.estimators._base.BaseNB.fit_shard>` sets the combined
statistics on the estimator and builds the posterior once. The mechanism lives with the
estimators because it reads and sets their fitted state; :mod:`bayesnb.scale.distributed`
and :mod:`bayesnb.scale.streaming` only move data and call those public methods.

What has to agree across parts is reconciled in the reduce, so no extra pass over the
data is needed:

* the classes: a part is summarised over its own sorted labels (or over ``classes``
  when given) and shards over different label sets are re-indexed onto their sorted
  union. Every statistics pytree has the class axis first (``DESIGN.md``: parameters
  ``(n_classes, ...)``), and a class absent from a part has all-zero statistics (zero
  count, zero totals, zero mean and scatter), so re-indexing inserts zero rows;
* the number of categories of a :class:`~bayesnb.CategoricalNB` feature (the largest
  over the parts; the count tables are padded, as ``CategoricalStats.merge`` does);
* for :class:`~bayesnb.MixedNB` on DataFrames, the categories of non-numeric columns:
  a part codes them by its own sorted values, and the codes are mapped onto the union
  (sorted, which is what a single ``fit`` on all rows learns; parts whose pandas
  ``category`` dtypes agree keep that order).
"""

from __future__ import annotations

import contextlib
from typing import NamedTuple

import numpy as np
from sklearn.base import clone

from bayesnb.core._validation import check_class_targets, check_sample_weight, class_index, n_rows
from bayesnb.core.stats import LabelStats, as_masked, is_masked
from bayesnb.core.stats import merge as merge_stats


@contextlib.contextmanager
def in_block(name):
    """Prefix a block's own ValueError/TypeError with the block's name (same type, chained).

    Used by :class:`~bayesnb.MixedNB`'s fit and by the shard merge that finishes its
    blocks, so that both name the block alike; it lives here, below both.
    """
    try:
        yield
    except (ValueError, TypeError) as err:
        if type(err) not in (ValueError, TypeError) or str(err).startswith("block "):
            raise
        raise type(err)(f"block {name!r}: {err}") from err

__all__ = ["Shard", "compute", "merge", "finish"]

# Fitted attributes that every part sets identically from the columns of its data.
_SAME_IN_EVERY_PART = ("n_features_in_", "feature_names_in_")


class Shard(NamedTuple):
    """Statistics of a set of rows, with what is needed to combine them with others.

    Attributes
    ----------
    classes : ndarray of shape (n_classes,)
        Sorted labels indexing the class axis of ``stats``.
    stats : statistics pytree (see :mod:`bayesnb.core.stats`)
    state : dict
        Fitted attributes set from the data by the estimator's hooks
        (``n_features_in_``, ``feature_names_in_``, ``n_categories_``).
    blocks : tuple of (name, unfitted estimator, column indices, Shard), or None
        :class:`~bayesnb.MixedNB` only: each block's own shard.
    categories : dict or None
        :class:`~bayesnb.MixedNB` only: column position → categories of the coded
        non-numeric columns.
    min_categories : dict or None
        :class:`~bayesnb.MixedNB` only: the user's ``min_categories`` of each
        categorical block.
    """

    classes: np.ndarray
    stats: object
    state: dict
    blocks: tuple | None = None
    categories: dict | None = None
    min_categories: dict | None = None

    def merge(self, other):
        """The shard of the rows of both (``other`` may be None: a part without rows)."""
        return merge(self, other)

    def reindex(self, classes):
        """The same statistics over the sorted labels ``classes`` (a superset of its own)."""
        return _reindex(self, classes)


def _is_mixed(est):
    # A product of blocks of columns (MixedNB): it resolves its blocks at fit.
    return hasattr(est, "_resolve_blocks")


def _sorted_labels(classes):
    """``classes`` as given to ``shard`` (any sequence of labels) as a sorted 1-D array, refusing repeats and disorder."""
    labels = np.asarray(classes)
    if labels.ndim != 1 or labels.size == 0:
        raise ValueError(f"classes must be a non-empty 1-D sequence of labels, got shape {labels.shape}")
    if labels.size > 1 and not np.all(labels[1:] > labels[:-1]):
        raise ValueError(
            f"classes must be sorted and distinct (as np.unique gives them), got {labels.tolist()!r}"
        )
    return labels


def compute(template, X, y, sample_weight=None, classes=None):
    """Statistics of one part of the data, computed by the estimator's own hooks.

    Parameters
    ----------
    template : bayesnb estimator
        Only its parameters are used (it is cloned).
    X, y, sample_weight : one part of the data, as ``fit`` takes them
    classes : sorted ndarray of labels, optional
        Index the statistics over these labels (every label in ``y`` must be one);
        default: the part's own distinct labels.

    Returns
    -------
    Shard, or None for a part without rows.
    """
    if X is None or n_rows(X) == 0:
        if y is not None and len(y) != 0:
            raise ValueError(f"a part of the data has 0 rows but {len(y)} labels")
        return None
    est = clone(template)
    X, y = est._check_X_y(X, y, reset=True)
    check_class_targets(y)
    classes = np.unique(y) if classes is None else _sorted_labels(classes)
    y_index = class_index(y, classes, classes_name="classes")
    w = check_sample_weight(sample_weight, X.shape[0])
    est.classes_ = classes
    if _is_mixed(est):
        return _compute_mixed(est, X, y, y_index, w)
    # The estimator's own statistics hook, which unpacks the rows with unobserved entries
    # (missing="ignore") into values and mask, as fit and partial_fit do.
    stats = est._stats(X, y_index, w)
    state = {k: v for k, v in vars(est).items() if k.endswith("_") and not k.startswith("_") and k != "classes_"}
    state.pop("stats_", None)
    return Shard(classes, stats, state)


def _compute_mixed(mixed, X, y, y_index, w):
    blocks = []
    for (name, est, idx), part in zip(mixed._templates, X.parts):
        template = clone(est)
        if mixed._coded_block(est, idx):
            est.set_params(min_categories=mixed._min_categories(name, idx))
        blocks.append((name, template, idx, compute(est, part, y, w, mixed.classes_)))
    counts = np.bincount(y_index, weights=w, minlength=mixed.classes_.size).astype(np.float64)
    state = {k: getattr(mixed, k) for k in _SAME_IN_EVERY_PART if hasattr(mixed, k)}
    return Shard(
        mixed.classes_,
        LabelStats(counts),
        state,
        tuple(blocks),
        dict(mixed.categories_),
        dict(mixed._user_min_categories),
    )


# ----------------------------------------------------------------------------- reduce


def _reindex_stats(stats, position, n_new):
    """Statistics over ``n_new`` classes: row ``k`` of each field goes to ``position[k]``.

    Every array field has the class axis first; a class absent from the part gets
    all-zero statistics, as the statistics functions give an absent class. Scalar
    fields (e.g. a zero ``mean_residual``) stay as they are.
    """
    fields = []
    for value in stats:
        a = np.asarray(value)
        if a.ndim == 0:
            fields.append(value)
            continue
        if a.shape[0] != position.size:
            raise ValueError(f"{type(stats).__name__}: a field of shape {a.shape} has no class axis first")
        out = np.zeros((n_new,) + a.shape[1:], dtype=np.result_type(a.dtype, np.float64))
        out[position] = a
        fields.append(out)
    return type(stats)(*fields)


def _reindex(shard, classes):
    if np.array_equal(shard.classes, classes):
        return shard
    position = np.searchsorted(classes, shard.classes)
    blocks = shard.blocks
    if blocks is not None:
        blocks = tuple((n, t, i, _reindex(s, classes)) for n, t, i, s in blocks)
    return shard._replace(classes=classes, stats=_reindex_stats(shard.stats, position, classes.size), blocks=blocks)


def _union_classes(a, b):
    try:
        return np.union1d(a, b)
    except TypeError as err:
        raise TypeError(f"labels of different parts cannot be ordered together ({err})") from None


def _merge_state(a, b):
    out = dict(a)
    for key, value in b.items():
        if key not in out:
            out[key] = value
        elif key == "n_categories_":
            out[key] = np.maximum(out[key], value)
        elif not np.array_equal(np.asarray(out[key]), np.asarray(value)):
            raise ValueError(f"parts of the data disagree on {key}: {out[key]!r} vs {value!r}")
    return out


def _union_categories(a, b):
    if a.shape == b.shape and np.array_equal(a, b):
        return a
    seen = set(a.tolist())
    union = np.concatenate([a, np.array([v for v in b.tolist() if v not in seen], dtype=object)])
    try:
        # What one fit on all the rows learns for an object/string column: the sorted values.
        return np.array(sorted(union.tolist()), dtype=object)
    except TypeError:
        return union


def _recode_block(shard, idx, old, new):
    """Map the category axis of a categorical block's counts from ``old`` to ``new`` codes."""
    stats = shard.stats
    counts = np.asarray(stats.category_count)
    n_cat = np.array(shard.state["n_categories_"], copy=True)
    moves = {}
    for k, j in enumerate(idx):
        j = int(j)
        if j in old and not np.array_equal(old[j], new[j]):
            lookup = {v: c for c, v in enumerate(new[j].tolist())}
            moves[k] = np.array([lookup[v] for v in old[j].tolist()], dtype=np.intp)
        if j in new:
            n_cat[k] = max(n_cat[k], new[j].size)
    width = max(counts.shape[-1], int(n_cat.max(initial=1)))
    out = np.zeros(counts.shape[:-1] + (width,))
    out[..., : counts.shape[-1]] = counts
    for k, target in moves.items():
        out[:, k, :] = 0.0
        out[:, k, target] = counts[:, k, : target.size]
    return shard._replace(stats=stats._replace(category_count=out), state={**shard.state, "n_categories_": n_cat})


def _merge_mixed(a, b):
    names_a = [(n, tuple(i)) for n, _, i, _ in a.blocks]
    names_b = [(n, tuple(i)) for n, _, i, _ in b.blocks]
    if names_a != names_b:
        raise ValueError(f"parts of the data have different MixedNB blocks: {names_a!r} vs {names_b!r}")
    categories = dict(a.categories)
    for j, cats in b.categories.items():
        categories[j] = cats if j not in categories else _union_categories(categories[j], cats)
    blocks = []
    for (name, template, idx, sa), (_, _, _, sb) in zip(a.blocks, b.blocks):
        pair = []
        for side, shard in ((a, sa), (b, sb)):
            if shard is not None and "n_categories_" in shard.state and any(int(j) in categories for j in idx):
                shard = _recode_block(shard, idx, side.categories, categories)
            pair.append(shard)
        blocks.append((name, template, idx, merge(*pair)))
    return tuple(blocks), categories


def merge(a, b):
    """Combine the shards of two disjoint sets of rows (either may be None: no rows)."""
    if a is None:
        return b
    if b is None:
        return a
    classes = _union_classes(a.classes, b.classes)
    a, b = _reindex(a, classes), _reindex(b, classes)
    state = _merge_state(a.state, b.state)
    sa, sb = a.stats, b.stats
    if is_masked(sa) != is_masked(sb):
        # A part without NaN merges with one with NaN in the per-cell (masked) form.
        sa, sb = as_masked(sa), as_masked(sb)
    stats = merge_stats(sa, sb)
    if a.blocks is None:
        return Shard(classes, stats, state)
    blocks, categories = _merge_mixed(a, b)
    return Shard(classes, stats, state, blocks, categories, a.min_categories)


# ----------------------------------------------------------------------------- finish


def finish(estimator, shard):
    """Set the combined statistics on ``estimator`` and build its posterior (once).

    Leaves ``estimator`` as ``estimator.fit`` on all the rows would (same statistics up
    to floating-point summation order); on failure it is left unfitted.
    """
    if shard is None:
        raise ValueError("the data has no rows: nothing to fit")
    estimator._clear_fitted()
    try:
        _finish(estimator, shard)
    except BaseException:
        estimator._clear_fitted()
        raise
    return estimator


def _finish(est, shard):
    est.classes_ = shard.classes
    for key, value in shard.state.items():
        setattr(est, key, value)
    if shard.blocks is not None:
        est.categories_ = dict(shard.categories)
        est._user_min_categories = dict(shard.min_categories)
        fitted = []
        for name, template, idx, block_shard in shard.blocks:
            block = clone(template)
            if est._coded_block(block, idx):
                block.set_params(min_categories=est._min_categories(name, idx))
            with est._block_errors(name, idx):  # a block's errors name the block and column, as in fit
                finish(block, _reindex(block_shard, shard.classes))
            fitted.append((name, block, idx))
        est.estimators_ = fitted
    est.stats_ = shard.stats
    est._refresh()
