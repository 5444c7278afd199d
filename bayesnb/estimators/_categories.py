"""Category labels of DataFrame columns and their integer codes, for the categorical estimators.

:class:`~bayesnb.CategoricalNB` and the categorical blocks of :class:`~bayesnb.MixedNB`
model integer codes ``0 .. K_j - 1``. A pandas column of labels (``category``, object,
string or boolean) is turned into codes here, once for both: the labels are learned at
fit (:func:`learn`), each label's code is its position in the learned labels, and a
label not learned gets a code past the fitted table (:func:`encode`), which the
categorical family scores as a new category. A missing value (NaN, ``None``, ``pd.NA``)
becomes a NaN code, which the ``missing="ignore"`` path leaves out of its row.
"""

from __future__ import annotations

import numpy as np

__all__ = ["is_labels", "learn", "encode", "decode"]


def is_labels(dtype):
    """Whether a pandas column of this dtype holds labels to encode (category, object, string, bool).

    Parameters
    ----------
    dtype : numpy or pandas dtype

    Returns
    -------
    bool

    Examples
    --------
    >>> import pandas as pd
    >>> is_labels(pd.Series(["a"]).dtype), is_labels(pd.Series([True]).dtype), is_labels(pd.Series([1]).dtype)
    (True, True, False)
    """
    import pandas as pd

    api = pd.api.types
    return (
        isinstance(dtype, pd.CategoricalDtype)
        or api.is_object_dtype(dtype)
        or api.is_string_dtype(dtype)
        or api.is_bool_dtype(dtype)
    )


def learn(col, known=None):
    """The labels of column ``col``: those ``known`` first, then the new ones.

    A pandas ``category`` column brings its dtype's categories (in their order, observed
    or not); a boolean column ``[False, True]`` (so its codes are its values); any other
    column its distinct non-missing values, sorted. ``known`` (the labels of earlier
    ``partial_fit`` batches) keep their codes: new labels are appended.

    Parameters
    ----------
    col : pandas Series
    known : ndarray of object, optional

    Returns
    -------
    ndarray of object
        The labels; label ``k`` has code ``k``.

    Raises
    ------
    TypeError
        If the values cannot be ordered (e.g. strings and numbers in one object column).

    Examples
    --------
    >>> import pandas as pd
    >>> learn(pd.Series(["b", "a", None, "b"])).tolist()
    ['a', 'b']
    >>> learn(pd.Series(["c", "a"]), known=learn(pd.Series(["b", "a"]))).tolist()
    ['a', 'b', 'c']
    """
    import pandas as pd

    if isinstance(col.dtype, pd.CategoricalDtype):
        values = list(col.dtype.categories)
    elif pd.api.types.is_bool_dtype(col.dtype):
        values = [False, True]
    else:
        try:
            values = sorted(set(col.dropna().tolist()))
        except TypeError as err:
            raise TypeError(
                f"column {col.name!r} mixes values that cannot be ordered ({err}); "
                "convert it to a pandas Categorical with the category order you want"
            ) from None
    old = [] if known is None else list(known)
    seen = set(old)
    return np.array(old + [v for v in values if v not in seen], dtype=object)


def encode(col, labels, unseen):
    """Codes of the values of ``col`` in ``labels``: float, NaN where a value is missing.

    Parameters
    ----------
    col : pandas Series
    labels : ndarray of object
        The learned labels (:func:`learn`).
    unseen : int
        The code of a value not among ``labels``: at least the fitted number of
        categories of the column, so that the family scores it as a new category.

    Returns
    -------
    ndarray of float64 of shape (len(col),)

    Examples
    --------
    >>> import pandas as pd
    >>> encode(pd.Series(["b", None, "z"]), np.array(["a", "b"], dtype=object), unseen=2).tolist()
    [1.0, nan, 2.0]
    """
    lookup = {v: float(c) for c, v in enumerate(labels.tolist())}
    missing = col.isna().to_numpy()
    return np.array(
        [np.nan if m else lookup.get(v, float(unseen)) for v, m in zip(col.tolist(), missing)], dtype=np.float64
    )


def decode(codes, labels):
    """The labels of integer ``codes`` of a column whose labels are ``labels``: generated rows in the user's terms.

    The inverse of :func:`encode`, for the rows ``sample`` / ``sample_prior`` generate.
    A column learned from booleans (labels ``[False, True]``) comes back boolean; any
    other a pandas ``Categorical`` with the learned labels as its categories (the learned
    order, which :func:`learn` keeps), so that it can be fitted again as it is. A code
    past the labels (the share kept for a category not seen at fit, or a slot of
    ``min_categories`` beyond the labels) is a new category with no label: missing.

    Parameters
    ----------
    codes : array-like of int, shape (n,)
    labels : ndarray of object
        The learned labels (:func:`learn`).

    Returns
    -------
    pandas.Categorical or ndarray of bool

    Examples
    --------
    >>> import numpy as np
    >>> list(decode([1, 0, 2], np.array(["a", "b"], dtype=object)))
    ['b', 'a', nan]
    >>> decode([1, 0], np.array([False, True], dtype=object)).tolist()
    [True, False]
    """
    import pandas as pd

    codes = np.asarray(codes).astype(np.int64)
    known = (codes >= 0) & (codes < len(labels))
    values = list(labels)
    if values == [False, True] and all(isinstance(v, (bool, np.bool_)) for v in values) and known.all():
        return codes.astype(bool)
    return pd.Categorical.from_codes(np.where(known, codes, -1), categories=pd.Index(values, dtype=object))
