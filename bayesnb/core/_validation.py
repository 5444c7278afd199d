"""Input checks shared by every entry point.

Each check names the problem in its message; nothing is silently coerced.
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp

__all__ = [
    "ESTIMATES",
    "check_estimate",
    "check_non_negative",
    "check_binary",
    "check_category_codes",
    "check_category_table",
    "check_sample_weight",
    "check_class_prior",
    "check_labels",
    "class_index",
    "label_rows",
    "check_class_targets",
    "check_classes",
    "check_n_draws",
    "check_level",
    "sparse_counts_input",
    "is_sparse_threshold",
    "binarize_csr",
    "canonical_csr",
    "refuse_dates",
    "check_gaussian_spread",
    "SpreadError",
    "label_array",
]

ESTIMATES = ("mle", "map", "mean", "predictive")

# Categories are stored densely per (class, feature) up to the largest code, so a code is
# also a table size; beyond this it is almost surely an identifier, not a category code.
_MAX_CATEGORY_CODE = 2**20 - 1
# Codes from here up (to 2**64 in uint64, 1e308 in float64) are read as this one value: far
# past any table, and one more than it still an int64.
_CODE_CAP = 2**62
# Row weights are pseudo-counts here (a weight of w is w copies of the row, not a relative
# importance as in scikit-learn): the posterior's parameters grow like the total weight,
# and the predictives multiply two of them (kappa * beta, n * kappa0 / (n + kappa0), ...),
# which overflows float64 beyond a total of about 1.3e154. The bound leaves a margin for
# the features' own scale.
_MAX_TOTAL_WEIGHT = 1e150
# The count table is padded to the widest feature: (n_classes, n_features, max K) cells, of
# which fitting holds a few float64 copies. Beyond this many cells (128 MiB a copy) a table
# is refused when the widest feature's largest code exceeds the number of rows, i.e. when
# most of its categories cannot have been seen: such codes are identifiers or sparse
# encodings, and the padding would cost gigabytes (issue 19: one code of 2**20 - 1 in one
# of 40 features made fit use 6.2 GB).
_MAX_TABLE_CELLS = 2**24


def check_estimate(estimate):
    """Return ``estimate`` if it is one of :data:`ESTIMATES`, else raise ``ValueError``."""
    if not isinstance(estimate, str) or estimate not in ESTIMATES:
        raise ValueError(f"unknown estimate {estimate!r}; expected one of {', '.join(map(repr, ESTIMATES))}")
    return estimate


def _values(X):
    return X.data if sp.issparse(X) else np.asarray(X)


# Elementwise checks run over blocks of this many values: their boolean and arithmetic
# temporaries stay a block, not the size of the data (a fit's peak memory).
_CHECK_BLOCK = 1 << 16


def first_violation(v, bad):
    """The first value of ``v`` where ``bad(block)`` is True, or None.

    ``bad`` is an elementwise test of a 1-d block of values, run block by block so that
    its temporaries never exceed about ``_CHECK_BLOCK`` values. Contiguous arrays (C or
    F order) are read in memory order without a copy; others by blocks of rows, each
    block copied (so a strided view is never copied whole).
    """
    v = np.asarray(v)
    if v.ndim <= 1 or v.flags.c_contiguous or v.flags.f_contiguous:
        flat = np.ravel(v, order="K")  # a view
        blocks = (flat[start : start + _CHECK_BLOCK] for start in range(0, flat.size, _CHECK_BLOCK))
    else:
        rows = max(1, _CHECK_BLOCK // max(1, v[0].size))
        blocks = (np.ravel(v[start : start + rows]) for start in range(0, v.shape[0], rows))
    for block in blocks:
        hit = bad(block)
        if hit.any():
            return block[hit][0]
    return None


def first_non_integer(v):
    """The first value of ``v`` that is not a whole number (NaN included), or None
    (:func:`first_violation` with that test: block by block)."""
    return first_violation(v, lambda block: block != np.floor(block))


def refuse_dates(X, who):
    """Raise ``TypeError`` where ``X`` holds dates or durations (datetime64 / timedelta64).

    scikit-learn's conversion to float64 reads them as integer nanoseconds, a number
    that is almost never the feature meant (scikit-learn's own estimators refuse them).
    Arrays are judged by their dtype, DataFrames column by column (the error names the
    column).

    Parameters
    ----------
    X : array-like, sparse matrix or DataFrame
    who : str
        The model, for the message.
    """
    dtypes = getattr(X, "dtypes", None)
    if dtypes is not None and not isinstance(dtypes, np.dtype) and hasattr(dtypes, "items"):
        found = [(name, dt) for name, dt in dtypes.items() if getattr(dt, "kind", None) in ("M", "m")]
        where = f", column {found[0][0]!r}," if found else ""
        kind = found[0][1] if found else None
    else:
        kind = getattr(X, "dtype", None)
        kind = kind if isinstance(kind, np.dtype) and kind.kind in "Mm" else None
        where = ""
    if kind is not None:
        raise TypeError(
            f"{who} got dates or durations (dtype {kind}){where} in X: read as numbers they "
            "would be integer nanoseconds. Convert them to numeric features first (e.g. "
            "days since a reference date, or a day of the week as a category)."
        )


# Gaussian statistics square the deviations from the mean. A feature whose fitted values
# spread over less than 2**-500 (3.1e-151) has squares below 2**-1000, within 2**22 of
# float64's smallest normal number (2**-1022), where variances divided by counts and
# prior fractions lose their digits and the posterior its scale: iris with its features'
# spreads at 7.6e-155 gave uniform class probabilities, at 2.4e-154 still those of scale 1
# (to 1e-13). The bound keeps about a thousandfold margin over that.
_MIN_GAUSSIAN_SPREAD = 2.0**-500


class SpreadError(ValueError):
    """A Gaussian feature spreads over less than 2**-500 (see :func:`check_gaussian_spread`).

    A :class:`ValueError` that says which feature, so that an estimator can name it in
    the user's terms (a DataFrame column, a block of :class:`~bayesnb.MixedNB` and the
    column's position in the user's ``X``) instead of its position in the array the
    check was given, as :class:`~bayesnb.core.families._dirichlet.UndefinedModeError`
    lets the estimators name the cell of a ``"map"`` refusal. The core knows positions
    only; :meth:`named` rewrites the message with an estimator's words.

    Attributes
    ----------
    index : int
        The first such feature's position in the array given to the check.
    spread : float
        Its spread (max - min).
    n_affected : int
        How many features of that array spread over less than 2**-500 (but not 0).
    """

    def __init__(self, message, index, spread, n_affected):
        super().__init__(message)
        self.index = index
        self.spread = spread
        self.n_affected = n_affected

    @classmethod
    def at(cls, index, spread, n_affected, feature=None, column=None, prefix=""):
        """The refusal of feature ``index``, named ``feature`` and rescaled as ``column`` (an expression).

        By default ``"feature {index} (0-based)"`` and ``"X[:, {index}]"``; ``prefix``
        opens the message (e.g. the block of a product model).
        """
        feature = f"feature {index} (0-based)" if feature is None else feature
        column = f"X[:, {index}]" if column is None else column
        return cls(
            f"{prefix}{feature} spreads over {spread:.3g} only (max - min): Gaussian statistics "
            f"square deviations, which below 2**-500 (3.1e-151) lose their digits in float64. Rescale "
            f"the feature (e.g. {column} * 1e150, or standardise it) before fitting; "
            f"{n_affected} feature(s) are affected",
            index,
            spread,
            n_affected,
        )

    def named(self, feature, column, prefix=""):
        """This refusal with the feature named ``feature`` and rescaled as ``column`` (same attributes)."""
        return type(self).at(self.index, self.spread, self.n_affected, feature, column, prefix)


def check_gaussian_spread(X):
    """Refuse Gaussian features whose values spread over less than 2**-500, about 3.1e-151 (but not 0).

    Such a feature cannot be fitted in float64 (see ``_MIN_GAUSSIAN_SPREAD``); a
    constant feature (spread 0) is left to the prior, as at any scale. One pass of
    minima and maxima per feature, NaNs (unobserved entries) ignored.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)

    Raises
    ------
    SpreadError
        A ``ValueError`` naming the first such feature (by position in ``X``) and its
        spread; its attributes let an estimator name the feature in the user's terms.
    """
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[0] == 0:
        return
    spread = np.fmax.reduce(X, axis=0) - np.fmin.reduce(X, axis=0)
    tiny = np.flatnonzero((spread > 0) & (spread < _MIN_GAUSSIAN_SPREAD))
    if tiny.size:
        j = int(tiny[0])
        raise SpreadError.at(j, float(spread[j]), int(tiny.size))


def check_non_negative(X, who):
    """``X`` if no entry is negative (counts must be >= 0), else ``ValueError``.

    A CSR matrix that may store an entry several times is judged by the sums, as its
    dense form would be: where a stored value is negative the duplicates are summed
    first (:func:`canonical_csr`), and that summed copy is returned if it passes.
    """
    v = _values(X)
    # One pass over the values in the common case (nothing negative): the minimum is
    # taken again only after summing duplicates.
    lowest = v.min() if v.size else 0
    if lowest < 0 and sp.issparse(X) and not X.has_canonical_format:
        X = canonical_csr(X)
        v = _values(X)
        lowest = v.min() if v.size else 0
    if lowest < 0:
        raise ValueError(f"Negative values in data passed to {who}: counts must be >= 0 (min {lowest:g})")
    return X


def check_binary(X, who):
    """Raise ``ValueError`` unless every entry of ``X`` is 0 or 1."""
    found = first_violation(_values(X), lambda v: (v != 0) & (v != 1))
    if found is not None:
        raise ValueError(
            f"{who} with binarize=None needs binary (0/1) data; found value {found!r}. "
            "Pass a threshold as binarize= to binarise it."
        )
    return X


def check_category_codes(X, who):
    """Return ``X`` as int64 category codes; raise unless entries are non-negative integers."""
    if sp.issparse(X):
        raise TypeError(f"{who} needs a dense array of category codes, got a sparse matrix")
    X = np.asarray(X)
    if X.dtype.kind == "f":
        found = first_non_integer(X)
        if found is not None:
            raise ValueError(f"{who} needs integer category codes; found non-integer value {found!r}")
    elif X.dtype.kind not in "iub":
        raise TypeError(f"{who} needs integer category codes, got dtype {X.dtype}")
    if X.size and X.min() < 0:
        raise ValueError(f"Negative values in data passed to {who}: category codes must be >= 0")
    if X.size and X.max() >= _CODE_CAP:
        # Any code this large is unseen at predict and refused at fit, as 2**60 is; read
        # as _CODE_CAP, it neither wraps to a negative int64 (2**63, 1e308) nor overflows
        # the table width code + 1.
        X = np.minimum(X, np.asarray(_CODE_CAP, dtype=X.dtype))
    return X.astype(np.int64, copy=False)


def check_category_table(n_categories, who, *, n_classes=1, seen=None, n_rows=None):
    """Refuse category codes that would make the per-(class, feature) table huge at fit time.

    Parameters
    ----------
    n_categories : int ndarray of shape (n_features,)
        The table's number of categories per feature.
    who : str
        The estimator's name, for the message.
    n_classes : int
        Rows of the table per feature.
    seen : int ndarray of shape (n_features,), optional
        One more than the largest code of each feature in the data being fitted.
    n_rows : int, optional
        The number of rows of that data.

    Returns
    -------
    n_categories

    Raises
    ------
    ValueError
        If a code exceeds ``2**20 - 1``, or if the padded table exceeds ``2**24`` cells
        while the widest feature's largest code in the data exceeds its number of rows.
    """
    if n_categories.size and n_categories.max() > _MAX_CATEGORY_CODE + 1:
        code = int(n_categories.max()) - 1
        raise ValueError(
            f"{who}: category code {code if code < _CODE_CAP else 'of 2**62 or more'} is too large to fit; codes must "
            f"be 0 .. K-1 with K <= {_MAX_CATEGORY_CODE + 1} (encode categories with OrdinalEncoder)"
        )
    if seen is None or n_rows is None or not n_categories.size:
        return n_categories
    width = int(n_categories.max())
    cells = int(n_classes) * n_categories.size * width
    j = int(np.argmax(seen)) if seen.size else 0
    if cells > _MAX_TABLE_CELLS and seen.size and int(seen[j]) == width and width - 1 >= n_rows:
        raise ValueError(
            f"{who}: feature {j} has category code {width - 1} but the data has only {n_rows} rows, "
            f"and the table of counts pads every one of the {n_categories.size} features to {width} "
            f"categories ({n_classes} x {n_categories.size} x {width} = {cells} cells, "
            f"{cells * 8 / 2**20:.0f} MiB per copy). Category codes must be 0 .. K-1: re-encode "
            "the categories (e.g. with sklearn.preprocessing.OrdinalEncoder) instead of passing "
            "identifiers or sparse codes"
        )
    return n_categories


def check_sample_weight(sample_weight, n_samples):
    """Return float64 weights of shape (n_samples,), checking length, finiteness, sign and size.

    Weights summing to more than ``1e150`` are refused (the posterior's parameters grow
    like the total weight and its predictives multiply two of them).
    """
    if sample_weight is None:
        return None
    try:
        w = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"sample_weight must be numeric: {err}") from None
    if w.ndim == 0:
        w = np.full(n_samples, float(w))
    if w.shape != (n_samples,):
        raise ValueError(f"sample_weight has shape {w.shape}, expected ({n_samples},)")
    if not np.all(np.isfinite(w)):
        raise ValueError("sample_weight contains NaN or infinity")
    if np.any(w < 0):
        raise ValueError("Negative values in sample_weight: weights must be >= 0")
    if n_samples and not w.any():
        raise ValueError("sample_weight is zero for every row: no row carries weight")
    total = float(np.sum(w / _MAX_TOTAL_WEIGHT)) * _MAX_TOTAL_WEIGHT if w.size else 0.0
    if not total <= _MAX_TOTAL_WEIGHT:
        raise ValueError(
            f"sample_weight sums to {total:.3g}, above the {_MAX_TOTAL_WEIGHT:.0e} that the posterior's "
            "products can hold in float64: weights are pseudo-counts (a weight of w counts the "
            "row w times), so rescale them (e.g. to sum to the number of rows)"
        )
    return w


def check_class_prior(class_prior, n_classes):
    """Return ``class_prior`` as float64 of shape (n_classes,), non-negative and summing to one."""
    p = np.asarray(class_prior, dtype=np.float64)
    if p.shape != (n_classes,):
        raise ValueError(f"class_prior has shape {p.shape}; the number of classes is {n_classes}")
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ValueError("class_prior must be finite and non-negative")
    if not np.isclose(p.sum(), 1.0, rtol=0, atol=1e-8):
        raise ValueError(f"class_prior must sum to one, sums to {p.sum():.10g}")
    return p


def label_array(y, name="y"):
    """``np.asarray(y)``, refusing labels that are themselves sequences (tuples, lists).

    NumPy would read tuple labels as a 2-d array (then "y should be a 1d array") or, of
    unequal lengths, fail with "inhomogeneous shape": neither says that the labels are
    the problem. A list of one-element lists (a column vector) stays accepted.

    Parameters
    ----------
    y : array-like of labels
    name : str
        The argument, for the message.

    Returns
    -------
    ndarray
    """
    if isinstance(y, (list, tuple)):
        items = y
    else:  # arrays, pandas Series: only object arrays can hold sequences
        y = np.asarray(y)
        items = y.ravel().tolist() if y.dtype.kind == "O" else ()
    if items is not None:
        for i, v in enumerate(items):
            if isinstance(v, (tuple, set, dict)) or (isinstance(v, (list, np.ndarray)) and np.size(v) != 1):
                raise TypeError(
                    f"{name} holds a {type(v).__name__} as a label ({v!r} at position {i}): class "
                    "labels must be single strings or numbers; encode a composite label as one "
                    "string (e.g. '1|2') or one integer first"
                )
    return np.asarray(y)


#: Classes an unknown-label error lists before it elides the rest.
_SHOWN_CLASSES = 12


def label_rows(y, name="y", *, n_rows=None):
    """``y`` as an ndarray, checked to be 1-d with ``n_rows`` labels (any number when None).

    Raises
    ------
    ValueError
        If ``y`` is not 1-d or has not ``n_rows`` labels.
    """
    y = np.asarray(y)
    if y.ndim != 1 or (n_rows is not None and y.shape[0] != n_rows):
        rows = "" if n_rows is None else f" with one label per row of X ({n_rows})"
        raise ValueError(f"{name} must be 1-d{rows}, got shape {y.shape}")
    return y


def class_index(y, classes, name="y", *, n_rows=None, classes_name="classes_"):
    """Position of each label of ``y`` in the sorted ``classes``, int ndarray of shape (n_samples,).

    The one check, for every layer, that labels belong to a model's classes.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
    classes : ndarray of shape (n_classes,)
        Sorted and distinct (``np.unique``'s order, as ``classes_`` holds them).
    name : str
        How the error names ``y``.
    n_rows : int, optional
        The number of rows ``y`` labels; checked when given.
    classes_name : str
        How the error names ``classes`` (``classes_`` of a fitted model, or the
        caller's argument).

    Returns
    -------
    ndarray of int of shape (n_samples,)

    Raises
    ------
    ValueError
        If ``y`` is not 1-d, has not ``n_rows`` labels (:func:`label_rows`), or holds a
        label that is not one of ``classes``.
    """
    y = label_rows(y, name, n_rows=n_rows)
    classes = np.asarray(classes)
    index = np.searchsorted(classes, y)
    bad = (index >= classes.size) | (classes[np.minimum(index, classes.size - 1)] != y)
    if bad.any():
        shown = classes.tolist()
        if len(shown) > _SHOWN_CLASSES:
            head = ", ".join(repr(c) for c in shown[: _SHOWN_CLASSES - 2])
            shown = f"[{head}, ..., {shown[-2]!r}, {shown[-1]!r}] ({len(shown)} classes)"
        raise ValueError(f"{name} contains label {y[bad][:1].tolist()[0]!r} not in {classes_name} {shown}")
    return index


def check_labels(y, name="y"):
    """Raise unless the labels ``y`` are free of missing values and of one orderable kind.

    Class labels are sorted (``classes_``), so a missing label (``None``, ``NaN``) or a
    mix of strings and numbers in an object array is refused here, naming the first
    offending position, instead of failing inside ``numpy.unique``.
    """
    y = np.asarray(y)
    if y.dtype.kind == "O":
        items = y.ravel().tolist()
        for i, v in enumerate(items):
            if v is None or (isinstance(v, float) and v != v):
                raise ValueError(f"{name} contains a missing label ({v!r}) at position {i}")
        text = [isinstance(v, (str, bytes)) for v in items]
        if any(text) and not all(text):
            i = text.index(not text[0])
            raise TypeError(
                f"{name} mixes string and non-string labels ({items[0]!r} and {items[i]!r} at "
                f"position {i}), which cannot be ordered into classes_; convert them to one type"
            )
    elif y.dtype.kind in "fc" and np.isnan(y).any():
        raise ValueError(f"{name} contains NaN at position {int(np.flatnonzero(np.isnan(y))[0])}")
    return y


def check_class_targets(y):
    """scikit-learn's ``check_classification_targets``, skipped where the dtype decides it.

    One-dimensional integer, boolean or (unicode) string labels are always ``"binary"`` or
    ``"multiclass"`` targets, which scikit-learn's check finds by two passes of
    ``unique`` over ``y`` (a fifth of a BernoulliNB fit on text with string labels);
    floats (``"continuous"`` unless integral), bytes (refused) and objects still go
    through it.
    """
    y = np.asarray(y)
    if y.ndim == 1 and y.dtype.kind in "iubU":
        return
    from sklearn.utils.multiclass import check_classification_targets

    check_classification_targets(y)


def check_classes(classes):
    """``classes`` of ``partial_fit`` as the sorted unique labels (1-d, non-empty, no NaN)."""
    arr = np.asarray(classes)
    if arr.ndim != 1:
        raise ValueError(f"classes must be a 1-d array of class labels, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError("classes is empty: pass every class label on the first call to partial_fit")
    check_labels(arr, "classes")
    return np.unique(arr)


def check_n_draws(n, name="n_draws"):
    """Return ``n`` as a positive int."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"{name} must be a positive integer, got {n!r}")
    return int(n)


def check_level(level):
    """Return a credible level strictly between 0 and 1."""
    if not (isinstance(level, (float, int, np.floating)) and 0 < level < 1):
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    return float(level)


def sparse_counts_input(X, *, linear=False):
    """How the count estimators pass a CSR matrix to ``validate_data`` without copying it.

    scikit-learn's ``validate_data(..., dtype=np.float64)`` converts a sparse matrix with
    ``astype``: a float64 copy of every value and a copy of the index arrays.

    * Integer or boolean values (``CountVectorizer``'s int64 counts) are kept as they
      are: every consumer converts them where it reads them, a block of rows at a time
      (:func:`bayesnb.core.stats.count_stats`, :func:`bayesnb.core.kernels.matmul`), or
      sums entries stored twice in int64 (:func:`bayesnb.core.kernels.summed`: two stored
      Trues are 2, as the products read them), and they are finite, so the NaN/inf pass
      is skipped.
    * Other non-float64 values (float32) are converted alone, sharing the index arrays.
    * Anything else is left to ``validate_data(dtype=np.float64)``.
    * Duplicate entries are summed (:func:`canonical_csr`) unless ``linear``.

    Parameters
    ----------
    X : array-like or scipy sparse matrix of shape (n_samples, n_features)
    linear : bool
        True where every use of the validated matrix is linear in its entries (the
        multinomial's counts, products with log-probabilities) or sums duplicates itself
        (:func:`bayesnb.core.kernels.summed`: the Dirichlet-multinomial predictive, the
        multinomial coefficients): duplicate entries then already mean their sum, and
        the search for them (a transpose of the index arrays, a third of a fit on
        text) is skipped. :func:`check_non_negative` still judges their sums.

    Returns
    -------
    X : the input, or a CSR matrix sharing its index arrays
    dtype : None or np.float64, the ``dtype`` argument for ``validate_data``
    integral : bool, True when the values are integers or booleans
    """
    if not (sp.issparse(X) and X.format == "csr"):
        return X, np.float64, False
    if not linear:
        X = canonical_csr(X)
    if X.dtype.kind in "iub":
        return X, None, True
    if X.dtype != np.float64 and X.dtype.kind == "f":
        X = type(X)((X.data.astype(np.float64), X.indices, X.indptr), shape=X.shape, copy=False)
    return X, np.float64, False


def canonical_csr(X):
    """``X`` with duplicate entries summed: the caller's CSR matrix, or a canonical copy.

    A CSR matrix may store one (row, column) entry several times; SciPy's meaning of such
    a matrix (``toarray``, products) is their sum. A check or a threshold applied to the
    stored values one by one would see two 1s where the matrix holds a 2 (BernoulliNB
    counted such a row twice where the dense 2 is refused), so the entries are summed
    first, on a copy: the caller's matrix is never modified. A matrix without repeated
    entries is returned as is (:func:`bayesnb.core.kernels.summed`).

    Parameters
    ----------
    X : CSR matrix of shape (n_samples, n_features)

    Returns
    -------
    CSR matrix of shape (n_samples, n_features), without duplicate entries

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> X = sp.csr_matrix((np.ones(3), np.array([0, 0, 1]), np.array([0, 2, 3])), shape=(2, 2))
    >>> canonical_csr(X).data.tolist(), X.nnz
    ([2.0, 1.0], 3)
    """
    from bayesnb.core.kernels import summed  # found without sorting the entries

    return summed(X)


def binarize_csr(X, threshold, *, overwrite=False):
    """Values above ``threshold`` become 1, the others are dropped (the CSR form of 0).

    The same result as ``sklearn.preprocessing.binarize`` followed by
    ``eliminate_zeros()``, without its copy of the whole matrix: the 0/1 values are
    written into a new boolean values array (or into ``X.data`` itself, as float64, when
    ``overwrite``) and the index arrays are shared unless some stored values fall to
    zero.

    Parameters
    ----------
    X : CSR matrix of real (or integer) values
    threshold : float
        Finite and >= 0 (callers route anything else to scikit-learn's ``binarize``,
        whose errors then apply).
    overwrite : bool
        ``X.data`` (float64) belongs to the caller and may be overwritten.
    """
    from bayesnb.core.kernels import row_counts

    data = X.data
    overwrite = overwrite and data.dtype == np.float64
    on = np.greater(data, threshold, out=data if overwrite else None)
    if overwrite:
        kept = data.all()
        values = data
    else:
        # 0/1 as booleans: a byte per entry instead of eight. Every consumer reads them
        # as the numbers 0 and 1 (the statistics count them, the products convert a
        # block of rows at a time; see bayesnb.core.kernels.matmul).
        kept = on.all()
        values = on
    if kept:
        return type(X)((values, X.indices, X.indptr), shape=X.shape, copy=False)
    mask = values.astype(bool) if overwrite else on
    counts = row_counts(mask, X.indptr)
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(X.indptr.dtype, copy=False)
    indices = X.indices[mask]
    return type(X)((np.ones(indices.size, dtype=values.dtype), indices, indptr), shape=X.shape, copy=False)


def is_sparse_threshold(threshold):
    """Whether ``threshold`` is a finite real >= 0, the thresholds ``binarize_csr`` takes."""
    return isinstance(threshold, numbers.Real) and bool(np.isfinite(threshold)) and threshold >= 0


def n_rows(X):
    """Number of rows of an array, sparse matrix, DataFrame or list of rows."""
    shape = getattr(X, "shape", None)
    return int(shape[0]) if shape is not None and len(shape) else len(X)
