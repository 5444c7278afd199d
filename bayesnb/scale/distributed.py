r"""Fit and predict on Dask collections: statistics per partition, one tree reduce.

Sufficient statistics are additive (:mod:`bayesnb.core.stats`), so a fit on data spread over
a cluster is one map and one reduce: every partition is validated and summarised by the
estimator's own hooks on the worker that holds it, the summaries are combined pairwise
up a tree (``split_every`` at a time) with the statistics' ``merge``, and only the
combined statistics, of size (n_classes, n_features[, ...]), come back to build the
posterior once. The result equals ``estimator.fit`` on all the rows, up to
floating-point summation order.

Needs the ``dask`` extra (``pip install "bayesnb[dask]"``); Dask is imported when a
function here is called. The computation runs on the active Dask scheduler: a
``dask.distributed.Client`` if one is set up, else Dask's default (threads).

Accepted data:

* a Dask array ``X`` (dense, or with ``scipy.sparse`` CSR chunks) with ``y`` (and
  ``sample_weight``) a Dask array, Dask Series or NumPy array of matching length; ``X``
  is re-chunked to whole rows (one chunk along the features) if needed, ``y`` to the
  row chunks of ``X``;
* a Dask DataFrame ``X`` with ``y`` a Dask Series of the same partitions, or the name of
  a column of ``X`` (then not a feature); likewise ``sample_weight``;
* a Dask Bag whose elements are ``(X_block, y_block)`` or ``(X_block, y_block,
  weight_block)`` tuples (e.g. sparse matrices from a vectoriser), with ``y=None``.

Labels need not be known in advance: each partition is summarised over its own labels
and the reduce re-indexes onto their sorted union (see :meth:`~bayesnb.estimators._base.BaseNB.shard`); pass
``classes`` to fix them (every label must then be one of them). The categories of
:class:`~bayesnb.CategoricalNB` features and of non-numeric :class:`~bayesnb.MixedNB`
columns are reconciled across partitions the same way.

Examples
--------
>>> import numpy as np
>>> import dask
>>> import dask.array as da
>>> from bayesnb import MultinomialNB
>>> from bayesnb import distributed
>>> rng = np.random.default_rng(0)
>>> X = rng.poisson(1.0, size=(200, 5)); y = rng.integers(0, 3, 200)
>>> with dask.config.set(scheduler="synchronous"):
...     clf = distributed.fit(MultinomialNB(), da.from_array(X, chunks=50), da.from_array(y, chunks=50))
...     proba = distributed.predict_proba(clf, da.from_array(X, chunks=50))
...     p = proba.compute()
>>> bool(np.allclose(clf.stats_.feature_count, MultinomialNB().fit(X, y).stats_.feature_count))
True
>>> p.shape
(200, 3)
"""

from __future__ import annotations

import numpy as np

from bayesnb.core._validation import check_classes

__all__ = [
    "fit",
    "predict",
    "predict_proba",
    "predict_log_proba",
    "predict_joint_log_proba",
]


def _dask():
    try:
        import dask
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError('bayesnb.scale.distributed needs Dask: pip install "bayesnb[dask]"') from err
    return dask


def _kind(obj):
    """'array', 'frame', 'series', 'bag' or None for a Dask collection (else None)."""
    if obj is None:
        return None
    module = type(obj).__module__ or ""
    if not module.startswith("dask"):
        return None
    import dask.array as da

    if isinstance(obj, da.Array):
        return "array"
    try:
        import dask.bag as db

        if isinstance(obj, db.Bag):
            return "bag"
    except ImportError:  # pragma: no cover
        pass
    try:
        import dask.dataframe as dd

        if isinstance(obj, dd.DataFrame):
            return "frame"
        if isinstance(obj, dd.Series):
            return "series"
    except ImportError:  # pragma: no cover
        pass
    return None


# ----------------------------------------------------------------------------- partitions


def _row_parts(X):
    """Delayed blocks of whole rows of a Dask array, and their row counts (NaN if unknown)."""
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-d Dask array, got {X.ndim} dimension(s)")
    if X.numblocks[1] != 1:
        X = X.rechunk({1: -1})
    return list(X.to_delayed()[:, 0]), X.chunks[0]


def _vector_parts(v, rows, name):
    """Delayed pieces of a label/weight vector ``v`` matching blocks of ``rows`` rows."""
    if v is None:
        return [None] * len(rows)
    kind = _kind(v)
    if kind == "series":
        v = v.to_dask_array(lengths=True)
        kind = "array"
    if kind == "array":
        if v.ndim != 1:
            raise ValueError(f"{name} must be 1-d, got shape {v.shape}")
        if any(np.isnan(rows)) or any(np.isnan(v.chunks[0])):
            raise ValueError(f"the row counts of X's or {name}'s chunks are unknown; call compute_chunk_sizes() first")
        if sum(rows) != v.shape[0]:
            raise ValueError(f"X has {int(sum(rows))} rows but {name} has {v.shape[0]}")
        if tuple(v.chunks[0]) != tuple(rows):
            v = v.rechunk((tuple(rows),))
        return list(v.to_delayed())
    if kind is not None:
        raise TypeError(f"{name} must be a Dask array or Series (or a NumPy array) for a Dask array X, got {type(v).__name__}")
    v = np.asarray(v)
    if any(np.isnan(rows)):
        raise ValueError(f"X's row chunks have unknown sizes; pass {name} as a Dask array or call X.compute_chunk_sizes()")
    if v.ndim != 1 or v.shape[0] != sum(rows):
        raise ValueError(f"X has {int(sum(rows))} rows but {name} has shape {v.shape}")
    bounds = np.concatenate([[0], np.cumsum(rows)]).astype(int)
    return [v[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def _frame_parts(X, y, w):
    columns = [c for c in (y, w) if isinstance(c, str)]
    if columns:
        missing = [c for c in columns if c not in X.columns]
        if missing:
            raise ValueError(f"column(s) {missing!r} not in the DataFrame")
    features = X.drop(columns=columns) if columns else X
    parts = {"X": list(features.to_delayed())}
    for key, v in (("y", y), ("w", w)):
        if v is None:
            parts[key] = [None] * len(parts["X"])
        elif isinstance(v, str):
            parts[key] = list(X[v].to_delayed())
        elif _kind(v) == "series":
            if v.npartitions != X.npartitions:
                raise ValueError(
                    f"X has {X.npartitions} partitions but {'y' if key == 'y' else 'sample_weight'} has "
                    f"{v.npartitions}; repartition them alike (or pass a column name)"
                )
            if X.known_divisions and v.known_divisions and tuple(X.divisions) != tuple(v.divisions):
                raise ValueError("X and y (or sample_weight) have different divisions; align their partitions")
            parts[key] = list(v.to_delayed())
        else:
            raise TypeError(
                "with a Dask DataFrame X, y and sample_weight must be Dask Series of the same "
                f"partitions or column names, got {type(v).__name__}"
            )
    return list(zip(parts["X"], parts["y"], parts["w"]))


def _values(v):
    return None if v is None else np.asarray(v)


def _part_shard(template, X, y, w, classes):
    return template.shard(X, _values(y), _values(w), classes)


def _merge(a, b):
    """The merge of two shards, either of which may be None (a part without rows)."""
    return b if a is None else a.merge(b)


def _merge_all(shards):
    out = None
    for shard in shards:
        out = _merge(out, shard)
    return out


def _bag_shard(template, elements, classes):
    out = None
    for element in elements:
        if not isinstance(element, (tuple, list)) or len(element) not in (2, 3):
            raise TypeError(
                "elements of a Dask Bag to fit must be (X, y) or (X, y, sample_weight) tuples, "
                f"got {type(element).__name__}"
            )
        X, y, w = (tuple(element) + (None,))[:3]
        out = _merge(out, template.shard(X, _values(y), _values(w), classes))
    return out


def _tree_reduce(nodes, split_every):
    from dask import delayed

    merge_all = delayed(_merge_all, pure=True)
    while len(nodes) > 1:
        nodes = [merge_all(nodes[i : i + split_every]) for i in range(0, len(nodes), split_every)]
    return nodes[0]


# ----------------------------------------------------------------------------- fit


def fit(estimator, X, y=None, sample_weight=None, *, classes=None, split_every=8):
    """Fit a bayesnb estimator on Dask collections: per-partition statistics, one reduce.

    Parameters
    ----------
    estimator : bayesnb estimator
        Any of :class:`~bayesnb.MultinomialNB`, :class:`~bayesnb.BernoulliNB`,
        :class:`~bayesnb.CategoricalNB`, :class:`~bayesnb.GaussianNB`,
        :class:`~bayesnb.GaussianBayesClassifier`, :class:`~bayesnb.PoissonNB`,
        :class:`~bayesnb.MixedNB`. Fitted in place (earlier fitted state is discarded,
        as ``fit`` does) and returned.
    X : dask.array.Array, dask.dataframe.DataFrame or dask.bag.Bag
        See the module docstring for the forms accepted.
    y : dask array, Dask Series, NumPy array, column name or None
        Labels; ``None`` for a Bag of ``(X, y[, w])`` tuples.
    sample_weight : like ``y``, optional
        Non-negative row weights.
    classes : array-like, optional
        All class labels. Default: the sorted union of the labels found.
    split_every : int, default=8
        Fan-in of the tree reduce.

    Returns
    -------
    estimator
        Fitted: statistics, posterior and attributes as ``estimator.fit`` on all rows.

    Raises
    ------
    TypeError
        If ``X`` is not a Dask collection of a supported kind, or ``y`` does not match it.
    ValueError
        If the partitions of ``X`` and ``y`` do not line up, or the data has no rows.

    Examples
    --------
    >>> import dask.array as da
    >>> import numpy as np
    >>> from bayesnb import MultinomialNB, distributed
    >>> rng = np.random.default_rng(0)
    >>> X = rng.poisson(1.0, size=(200, 5)); y = rng.integers(0, 3, 200)
    >>> clf = distributed.fit(MultinomialNB(), da.from_array(X, chunks=50), da.from_array(y, chunks=50))
    >>> local = MultinomialNB().fit(X, y)
    >>> bool(np.array_equal(clf.posterior_.concentration, local.posterior_.concentration))
    True
    """
    dask = _dask()
    if not isinstance(split_every, (int, np.integer)) or isinstance(split_every, bool) or split_every < 2:
        raise ValueError(f"split_every must be an integer >= 2, got {split_every!r}")
    from sklearn.base import clone

    classes = None if classes is None else check_classes(classes)
    template = clone(estimator)
    shard_of = dask.delayed(_part_shard, pure=True)
    kind = _kind(X)
    if kind == "array":
        blocks, rows = _row_parts(X)
        ys = _vector_parts(y, rows, "y") if y is not None else None
        if ys is None:
            raise ValueError("y is required with a Dask array X")
        ws = _vector_parts(sample_weight, rows, "sample_weight")
        nodes = [shard_of(template, b, yy, ww, classes) for b, yy, ww in zip(blocks, ys, ws)]
    elif kind == "frame":
        if y is None:
            raise ValueError("y is required with a Dask DataFrame X (a Dask Series or a column name)")
        nodes = [shard_of(template, b, yy, ww, classes) for b, yy, ww in _frame_parts(X, y, sample_weight)]
    elif kind == "bag":
        if y is not None or sample_weight is not None:
            raise ValueError("with a Dask Bag, y and sample_weight are part of each (X, y[, w]) element; pass y=None")
        bag_of = dask.delayed(_bag_shard, pure=True)
        nodes = [bag_of(template, part, classes) for part in X.to_delayed()]
    else:
        raise TypeError(
            "bayesnb.scale.distributed.fit needs a Dask array, Dask DataFrame or Dask Bag, got "
            f"{type(X).__name__}; for in-memory data call estimator.fit"
        )
    if not nodes:
        raise ValueError("the data has no partitions: nothing to fit")
    (shard,) = dask.compute(_tree_reduce(nodes, int(split_every)))
    if shard is None:
        raise ValueError("the data has no rows: nothing to fit")
    return estimator.fit_shard(shard)


# ----------------------------------------------------------------------------- predict


def _predict_rows(estimator, method, X):
    """``estimator.<method>(X)``, where a block of 0 rows gives an empty result of the right shape.

    Dask arrays and DataFrames may hold empty chunks (after filtering, or a chunking such
    as ``(5, 0, 15)``); the estimators refuse an input with no rows, as scikit-learn does,
    so such a block is answered here: shape (0,) of the classes' dtype for ``predict``,
    (0, n_classes) float64 otherwise.
    """
    if X.shape[0] == 0:
        if method == "predict":
            return estimator.classes_[:0]
        return np.empty((0, estimator.classes_.size), dtype=np.float64)
    return getattr(estimator, method)(X)


def _apply(block, estimator, method):
    if isinstance(block, (tuple, list)):  # a Bag element (X, y[, w]): predict on its X
        block = block[0]
    return _predict_rows(estimator, method, block)


def _apply_frame(frame, estimator, method, drop):
    import pandas as pd

    features = frame.drop(columns=drop) if drop else frame
    values = _predict_rows(estimator, method, features)
    if method == "predict":
        return pd.Series(values, index=frame.index, name="prediction")
    return pd.DataFrame(values, index=frame.index, columns=list(estimator.classes_))


def _predict(estimator, X, method, drop=None):
    from sklearn.utils.validation import check_is_fitted

    _dask()
    check_is_fitted(estimator, "stats_")
    kind = _kind(X)
    n_classes = estimator.classes_.size
    if kind == "array":
        if X.ndim != 2:
            raise ValueError(f"X must be a 2-d Dask array, got {X.ndim} dimension(s)")
        if X.numblocks[1] != 1:
            X = X.rechunk({1: -1})
        if method == "predict":
            dtype = estimator.classes_.dtype
            return X.map_blocks(
                _apply, estimator, method, drop_axis=1, dtype=dtype, meta=np.empty((0,), dtype=dtype)
            )
        return X.map_blocks(
            _apply,
            estimator,
            method,
            chunks=(X.chunks[0], (n_classes,)),
            dtype=np.float64,
            meta=np.empty((0, 0), dtype=np.float64),
        )
    if kind == "frame":
        import pandas as pd

        drop = [c for c in (drop or []) if c in X.columns]
        if method == "predict":
            meta = pd.Series(estimator.classes_[:0], name="prediction")
        else:
            meta = pd.DataFrame({c: pd.Series(dtype=np.float64) for c in estimator.classes_})
            meta.columns = list(estimator.classes_)
        return X.map_partitions(_apply_frame, estimator, method, drop, meta=meta)
    if kind == "bag":
        return X.map(_apply, estimator, method)
    raise TypeError(f"expected a Dask array, DataFrame or Bag, got {type(X).__name__}")


def predict_proba(estimator, X, *, drop=None):
    """Lazy ``estimator.predict_proba`` over a Dask collection.

    Parameters
    ----------
    estimator : fitted bayesnb estimator
    X : dask.array.Array, dask.dataframe.DataFrame or dask.bag.Bag
        A Bag's elements are X blocks or ``(X, y[, w])`` tuples.
    drop : list of str, optional
        DataFrame columns that are not features (e.g. the label column used in ``fit``).

    Returns
    -------
    Dask array of shape (n_samples, n_classes); a Dask DataFrame with one column per
    class (same index) for a DataFrame; a Bag of arrays for a Bag.

    Examples
    --------
    >>> import dask.array as da
    >>> import numpy as np
    >>> from bayesnb import MultinomialNB, distributed
    >>> rng = np.random.default_rng(0)
    >>> X = rng.poisson(1.0, size=(200, 5)); y = rng.integers(0, 3, 200)
    >>> clf = distributed.fit(MultinomialNB(), da.from_array(X, chunks=50), da.from_array(y, chunks=50))
    >>> proba = distributed.predict_proba(clf, da.from_array(X, chunks=50))  # lazy
    >>> proba.shape, proba.chunks[0]
    ((200, 3), (50, 50, 50, 50))
    >>> bool(np.allclose(proba.compute(), clf.predict_proba(X)))
    True
    """
    return _predict(estimator, X, "predict_proba", drop)


def predict_log_proba(estimator, X, *, drop=None):
    """Lazy ``estimator.predict_log_proba`` over a Dask collection (see :func:`predict_proba`).

    Parameters
    ----------
    estimator : fitted bayesnb estimator
    X : dask.array.Array, dask.dataframe.DataFrame or dask.bag.Bag
    drop : list of str, optional
        DataFrame columns that are not features.

    Returns
    -------
    Dask collection
        As for :func:`predict_proba`, with log-probabilities.

    Examples
    --------
    >>> import dask.array as da
    >>> import numpy as np
    >>> from bayesnb import MultinomialNB, distributed
    >>> rng = np.random.default_rng(0)
    >>> X = rng.poisson(1.0, size=(200, 5)); y = rng.integers(0, 3, 200)
    >>> clf = distributed.fit(MultinomialNB(), da.from_array(X, chunks=50), da.from_array(y, chunks=50))
    >>> log_proba = distributed.predict_log_proba(clf, da.from_array(X, chunks=50))
    >>> bool(np.allclose(log_proba.compute(), clf.predict_log_proba(X)))
    True
    """
    return _predict(estimator, X, "predict_log_proba", drop)


def predict_joint_log_proba(estimator, X, *, drop=None):
    """Lazy ``estimator.predict_joint_log_proba`` over a Dask collection (see :func:`predict_proba`).

    Parameters
    ----------
    estimator : fitted bayesnb estimator
    X : dask.array.Array, dask.dataframe.DataFrame or dask.bag.Bag
    drop : list of str, optional
        DataFrame columns that are not features.

    Returns
    -------
    Dask collection
        As for :func:`predict_proba`, with the joint log-probabilities
        :math:`\\log p(x, y = c)`.

    Examples
    --------
    >>> import dask.array as da
    >>> import numpy as np
    >>> from bayesnb import MultinomialNB, distributed
    >>> rng = np.random.default_rng(0)
    >>> X = rng.poisson(1.0, size=(200, 5)); y = rng.integers(0, 3, 200)
    >>> clf = distributed.fit(MultinomialNB(), da.from_array(X, chunks=50), da.from_array(y, chunks=50))
    >>> joint = distributed.predict_joint_log_proba(clf, da.from_array(X, chunks=50))
    >>> bool(np.allclose(joint.compute(), clf.predict_joint_log_proba(X)))
    True
    """
    return _predict(estimator, X, "predict_joint_log_proba", drop)


def predict(estimator, X, *, drop=None):
    """Lazy ``estimator.predict`` over a Dask collection.

    Parameters
    ----------
    estimator : fitted bayesnb estimator
    X : dask.array.Array, dask.dataframe.DataFrame or dask.bag.Bag
    drop : list of str, optional
        DataFrame columns that are not features (e.g. the label column used in ``fit``).

    Returns
    -------
    Dask array of shape (n_samples,); a Dask Series named ``"prediction"`` for a
    DataFrame; a Bag of label arrays for a Bag.

    Examples
    --------
    >>> import dask.array as da
    >>> import numpy as np
    >>> from bayesnb import MultinomialNB, distributed
    >>> rng = np.random.default_rng(0)
    >>> X = rng.poisson(1.0, size=(200, 5)); y = rng.integers(0, 3, 200)
    >>> clf = distributed.fit(MultinomialNB(), da.from_array(X, chunks=50), da.from_array(y, chunks=50))
    >>> labels = distributed.predict(clf, da.from_array(X, chunks=50))
    >>> bool(np.array_equal(labels.compute(), clf.predict(X)))
    True
    """
    return _predict(estimator, X, "predict", drop)
