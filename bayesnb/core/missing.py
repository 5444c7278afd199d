r"""Missing values (``missing="ignore"``): a NaN in ``X`` is an unobserved feature.

With ``missing="ignore"`` a NaN entry :math:`x_{ij}` is left out of the statistics of its
row and out of that row's likelihood at prediction, as R's ``naivebayes`` does. This
module holds only the generic mechanism: the ``missing`` policy, finding the NaNs
(:func:`split`) and the validated input with its mask of unobserved entries
(:class:`MaskedX`). The estimators pass ``X.X, mask=X.mask`` to their family's
``stats``, ``log_likelihood`` and ``log_predictive``; what "left out" means is each
family's own (see :mod:`bayesnb.core.families.protocol` and :mod:`bayesnb.core.families._mask`).
Input without NaN, and ``missing="error"``, take the ordinary path, bit for bit.

What "left out" means, per kind of family
-----------------------------------------
*Feature-wise families* (Bernoulli, categorical, Poisson, Gaussian diagonal): each
feature is its own factor of the likelihood, :math:`p(x \mid y=c) = \prod_j p(x_j \mid y=c)`,
and has its own conjugate prior, so an unobserved :math:`x_{ij}` is integrated out
exactly by dropping its factor. The posterior of cell :math:`(c, j)` is the conjugate
update with the rows of class :math:`c` that observe feature :math:`j`: the statistics
become per cell (:math:`N_{cj} = \sum_{i: y_i = c,\, x_{ij}\ \text{observed}} w_i`
instead of :math:`N_c`), which is exactly the fit of feature :math:`j` alone on its
observed rows. The class counts :math:`N_c` (and the class posterior) still count every
row. Prediction sums the factors of the observed features only (a row with every
feature missing gets the class proportions). The Gaussian default prior is scaled per
feature to that feature's observed values.

*Multinomial*: a document's counts are one multinomial draw of :math:`n = \sum_j x_j`
tokens, so an unobserved count hides how many tokens the document had. Prediction
conditions on the observed vocabulary :math:`O` (the exact predictive is the
Dirichlet-multinomial of :math:`\mathrm{Dir}(a_{c,O})`, by the Dirichlet's aggregation
property). Fitting on documents with unobserved counts is refused: the posterior is no
longer a Dirichlet.

*Gaussian, full or shared covariance*: the features are jointly Gaussian, so a row with
observed coordinates :math:`O` is scored by the marginal of the class model on
:math:`O` (exact for the plug-in Gaussian and for the Student-t predictive). Fitting on
partially observed rows is refused: the Normal-Inverse-Wishart posterior given such a
row is not Normal-Inverse-Wishart.

``MixedNB`` passes its ``missing`` to every block.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from bayesnb.core.stats import dense_mask, missing_columns, observed_rows

__all__ = ["MISSING", "check_missing", "MaskedX", "split", "refuse_frame_missing"]

MISSING = ("error", "ignore")


def check_missing(missing):
    """Return ``missing`` if it is ``"error"`` or ``"ignore"``, else raise ``ValueError``.

    Parameters
    ----------
    missing : str

    Returns
    -------
    str

    Examples
    --------
    >>> check_missing("ignore")
    'ignore'
    """
    if not isinstance(missing, str) or missing not in MISSING:
        raise ValueError(f"missing must be 'error' or 'ignore', got {missing!r}")
    return missing


class MaskedX:
    """Validated input whose NaN entries were replaced by 0, and where they were.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        The estimator's validated input, 0 at the unobserved entries.
    mask : bool ndarray or CSR matrix of shape (n_samples, n_features)
        True (a stored 1 for CSR) at the unobserved entries.

    Attributes
    ----------
    X, mask
        As given.
    shape : tuple of int
        ``X.shape``.
    """

    __slots__ = ("X", "mask", "shape")

    def __init__(self, X, mask):
        self.X = X
        self.mask = mask
        self.shape = X.shape

    def missing_columns(self):
        """Features unobserved in at least one row: sorted int ndarray of column indices."""
        return missing_columns(self.mask)

    def observed_rows(self, j):
        """Rows that observe feature ``j``: sorted int ndarray of row indices."""
        return observed_rows(self.mask, j)

    def dense_mask(self):
        """The mask as a dense bool array of shape (n_samples, n_features)."""
        return dense_mask(self.mask)

    def rows(self, start, stop):
        """The rows ``start:stop`` (data and mask) as a :class:`MaskedX`."""
        return MaskedX(self.X[start:stop], self.mask[start:stop])


# ----------------------------------------------------------------------------- input


def _nan_positions(X):
    """Where ``X`` (before validation) holds NaN: a bool array, a CSR mask, or None."""
    if sp.issparse(X):
        X = X.tocsr()
        if X.dtype.kind != "f":
            return None
        nan = np.isnan(X.data)
        if not nan.any():
            return None
        rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))[nan]
        return sp.csr_matrix((np.ones(rows.size), (rows, X.indices[nan])), shape=X.shape)
    try:
        if _is_frame(X):
            # pandas' nullable dtypes (Int64, boolean, Float64) hold pd.NA, which
            # ``np.asarray`` turns into an object array that ``float()`` refuses: ask pandas
            # for float64 with NA as NaN (True/False become 1/0, as validation makes them).
            arr = X.to_numpy(dtype=np.float64, na_value=np.nan)
        else:
            arr = np.asarray(X)
            if arr.dtype.kind == "O":
                arr = arr.astype(np.float64)
    except (TypeError, ValueError):
        return None  # not numeric: the estimator's own check names the problem
    if arr.dtype.kind not in "fc" or arr.ndim != 2:
        return None
    nan = np.isnan(arr)
    return nan if nan.any() else None


def _filled(X, mask):
    """``X`` with its NaN entries set to 0 (a new object; the caller's is untouched)."""
    if sp.issparse(X):
        X = X.tocsr(copy=True)
        X.data[np.isnan(X.data)] = 0.0
        X.eliminate_zeros()
        return X
    if _is_frame(X):
        # Keeps the column names. A nullable boolean column takes False (0) and refuses 0.
        fill = {c: (False if getattr(t, "kind", "") == "b" else 0) for c, t in X.dtypes.items()}
        return X.fillna(fill)
    arr = np.array(X, dtype=np.float64)
    arr[mask] = 0.0
    return arr


def _is_frame(X):
    """Whether ``X`` is a pandas DataFrame (duck-typed: pandas is not imported here)."""
    return hasattr(X, "columns") and hasattr(X, "isna") and hasattr(X, "to_numpy")


def refuse_frame_missing(X, who, can_ignore):
    """Raise ``ValueError`` naming the columns of a DataFrame ``X`` that hold NaN or ``pd.NA``.

    What ``missing="error"`` says about a DataFrame: scikit-learn's own message ("Input X
    contains NaN") names neither the column nor that a nullable column's ``pd.NA`` is what
    it calls NaN. Other inputs are left to the estimator's validation.

    Parameters
    ----------
    X : any
        The input as the user passed it.
    who : str
        The estimator's name, for the message.
    can_ignore : bool
        Whether ``missing="ignore"`` would fit such rows (the message then suggests it).

    Raises
    ------
    ValueError
        If ``X`` is a DataFrame with a missing value.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"a": [1, 2], "b": pd.array([1, None], dtype="Int64")})
    >>> refuse_frame_missing(df, "PoissonNB", True)
    Traceback (most recent call last):
    ...
    ValueError: PoissonNB: missing values (NaN or pd.NA) in column 'b' (1 row); pass missing='ignore' to leave them out, or impute them
    """
    if not _is_frame(X):
        return
    na = np.asarray(X.isna().to_numpy(), dtype=bool)
    if not na.any():
        return
    counts = na.sum(axis=0)
    cols = np.flatnonzero(counts)
    names = ", ".join(f"{X.columns[j]!r} ({int(counts[j])} row{'s' if counts[j] > 1 else ''})" for j in cols[:5])
    more = f" and {cols.size - 5} more" if cols.size > 5 else ""
    hint = "pass missing='ignore' to leave them out, or impute them" if can_ignore else "impute or drop them"
    raise ValueError(
        f"{who}: missing values (NaN or pd.NA) in column{'s' if cols.size > 1 else ''} {names}{more}; {hint}"
    )


def split(check, X, reset):
    """Validate ``X`` with ``missing="ignore"``.

    Returns what ``check`` returns when ``X`` has no NaN (the ordinary path), else a
    :class:`MaskedX` of the validated input with its NaN entries set to 0, and the NaN
    mask. Infinities, negative counts, non-binary values etc. are refused as with
    ``missing="error"`` (``check`` sees every observed value).

    Parameters
    ----------
    check : callable ``(X, reset) -> validated X``
        The estimator's validation of its input.
    X : array-like, DataFrame or sparse matrix of shape (n_samples, n_features)
    reset : bool
        Passed to ``check``: True at ``fit`` (record the number and names of the
        features), False at prediction (check them).

    Returns
    -------
    validated input or MaskedX

    Examples
    --------
    >>> import numpy as np
    >>> out = split(lambda X, reset: np.asarray(X, dtype=float), [[1.0, np.nan], [0.0, 2.0]], reset=True)
    >>> out.X.tolist(), out.dense_mask().tolist()
    ([[1.0, 0.0], [0.0, 2.0]], [[False, True], [False, False]])
    """
    mask = _nan_positions(X)
    if mask is None:
        return check(X, reset=reset)
    return MaskedX(check(_filled(X, mask), reset=reset), mask)
