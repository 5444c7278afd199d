r"""One naive Bayes model over blocks of columns of different families.

:class:`MixedNB` is a composition and holds no math of its own: each block of columns is
modelled by its own bayesnb estimator (Gaussian, Bernoulli, categorical, multinomial,
Poisson, ...), the class proportions live once in :class:`MixedNB`, and every quantity is
the class part plus the sum of the blocks' feature parts. Naive Bayes already assumes the
features independent given the class, so grouping them into blocks changes nothing in
the model, only which family describes which column.
"""

from __future__ import annotations

import contextlib
import copy

import jax
import numpy as np
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted, validate_data

from bayesnb.core import missing as _missing
from bayesnb.core._validation import SpreadError, check_category_codes, check_class_targets
from bayesnb.core.families._dirichlet import UndefinedModeError
from bayesnb.core.families.product import BlockRows, product
from bayesnb.core.stats import ProductStats
from bayesnb.estimators import _categories
from bayesnb.estimators._base import _CALIBRATE_PARAM, BaseNB
from bayesnb.estimators._registry import estimator_for
from bayesnb.estimators._shards import in_block as _in_block
from bayesnb.estimators.gaussian import spread_refusal
from bayesnb.ppl.collapsed import find_hyperpriors

__all__ = ["MixedNB", "infer_blocks"]


def _is_dataframe(X):
    return hasattr(X, "iloc") and hasattr(X, "dtypes") and hasattr(X, "columns")


def _dtype_kind(dtype):
    """'bool', 'float', 'int', 'nominal' or None for a pandas/numpy column dtype."""
    import pandas as pd

    api = pd.api.types
    if isinstance(dtype, pd.CategoricalDtype) or api.is_object_dtype(dtype) or api.is_string_dtype(dtype):
        return "nominal"
    if api.is_bool_dtype(dtype):
        return "bool"
    if api.is_integer_dtype(dtype):
        return "int"
    if api.is_float_dtype(dtype):
        return "float"
    return None


#: The kinds of column that ``MixedNB(blocks=None)`` and the ``bayesnb`` command tell
#: apart, in the order of the blocks they make.
COLUMN_KINDS = ("float", "bool", "nominal", "int")
#: The families an integer column may be modelled with (``integer_columns``): a number
#: on a line (like a float column), a count, or a category code.
INTEGER_COLUMNS = ("gaussian", "poisson", "categorical")
#: The family (and the parameters of its estimator) of the other kinds of column.
_KIND_FAMILY = {"float": ("gaussian", {}), "bool": ("bernoulli", {"binarize": None}), "nominal": ("categorical", {})}
#: The dtype of a generated column by its family's ``support`` (see
#: :meth:`MixedNB._format_generated`); a support not listed keeps the sampled floats.
_SUPPORT_DTYPE = {"binary": bool, "counts": np.int64, "codes": np.int64}


def _model_of(kind, integer_columns):
    """A new unfitted estimator for a column of ``kind`` (see :func:`infer_blocks`).

    Asked of the registry by family name (filled when :mod:`bayesnb.estimators` is
    imported), not by importing estimator classes here.
    """
    if kind == "int":
        if not isinstance(integer_columns, str) or integer_columns not in INTEGER_COLUMNS:
            raise ValueError(
                f"integer_columns must be one of {', '.join(map(repr, INTEGER_COLUMNS))}, got {integer_columns!r}"
            )
        return estimator_for(integer_columns)
    if kind in _KIND_FAMILY:
        family, params = _KIND_FAMILY[kind]
        return estimator_for(family, **params)
    raise ValueError(f"unknown column kind {kind!r}; kinds are {', '.join(map(repr, COLUMN_KINDS))}")


def _support(est):
    """Its family's ``support`` for block estimator ``est`` (what one column value is); None while unknown.

    An unfitted block's family may not be known yet (a GaussianBayesClassifier's depends
    on its fitted covariance): such a block takes no category codes.
    """
    family = getattr(est, "_family", None)
    return None if family is None else family.support


def infer_blocks(kinds, *, integer_columns="gaussian"):
    """The blocks that model columns of the given kinds: the one rule of the library and the command.

    :class:`MixedNB` with ``blocks=None`` applies it to a DataFrame's dtypes, and the
    ``bayesnb`` command to the columns of a user's file (numbers, or anything else), so
    that both model the same column the same way:

    * ``"float"`` → ``GaussianNB()``;
    * ``"int"`` → ``integer_columns``: ``"gaussian"`` (default) ``GaussianNB()``, as a
      float column; ``"poisson"`` ``PoissonNB()``, counts; ``"categorical"``
      ``CategoricalNB()``, category codes 0, 1, ...;
    * ``"bool"`` → ``BernoulliNB(binarize=None)``;
    * ``"nominal"`` (pandas ``category``, object or string; a file's non-numeric column)
      → ``CategoricalNB()``.

    Parameters
    ----------
    kinds : sequence of {"float", "int", "bool", "nominal"}
        The kind of each column.
    integer_columns : {"gaussian", "poisson", "categorical"}, default="gaussian"

    Returns
    -------
    list of (name, estimator, columns)
        One block per family used, named after the family, in the order ``"gaussian"``,
        ``"bernoulli"``, ``"categorical"``, ``"poisson"``; ``columns`` an int ndarray of
        the positions of its columns, increasing.

    Raises
    ------
    ValueError
        For an unknown kind or ``integer_columns``.

    Examples
    --------
    >>> [(name, cols.tolist()) for name, _, cols in infer_blocks(["int", "nominal", "float"])]
    [('gaussian', [0, 2]), ('categorical', [1])]
    >>> [(name, cols.tolist()) for name, _, cols in infer_blocks(["int", "float"], integer_columns="poisson")]
    [('gaussian', [1]), ('poisson', [0])]
    """
    kinds = list(kinds)
    for kind in kinds:
        if kind not in COLUMN_KINDS:
            raise ValueError(f"unknown column kind {kind!r}; kinds are {', '.join(map(repr, COLUMN_KINDS))}")
    # Every kind's model, present or not: a block's place is that of the first kind it models.
    order, models, columns = [], {}, {}
    for kind in COLUMN_KINDS:
        est = _model_of(kind, integer_columns)
        name = est._family.name
        if name not in models:
            order.append(name)
            models[name] = est
            columns[name] = []
        columns[name] += [j for j, k in enumerate(kinds) if k == kind]
    return [(name, models[name], np.array(sorted(columns[name]), dtype=np.int64)) for name in order if columns[name]]


class MixedNB(BaseNB):
    __doc__ = (
        r"""Naive Bayes over blocks of columns, each block modelled by its own family.

    With blocks :math:`B_1, \dots, B_m` partitioning the columns, each modelled by a
    bayesnb estimator with parameters :math:`\theta_b`, and class proportions
    :math:`\pi \sim \mathrm{Dir}(\beta)`,

    .. math::

        \log p(x, y=c \mid D) = \log p(y=c \mid D) + \sum_{b=1}^m \log p(x_{B_b} \mid y=c, D),

    where each block's term is its plug-in likelihood (``estimate`` = "mle", "map",
    "mean") or its exact posterior predictive ("predictive"). The block parameters are
    a priori independent of each other and of :math:`\pi`, so the posterior factorises
    and the evidence is a sum:

    .. math::

        \log p(X, y) = \log p(y) + \sum_b \log p(X_{B_b} \mid y).

    Posterior draws are independent across blocks and share one draw of :math:`\pi`.

    Each block's estimator is cloned and fitted on its columns; only its feature part is
    used: its own ``class_alpha``, ``class_prior``, ``fit_prior`` and ``estimate`` are
    ignored (they must still be valid for that estimator; the class proportions and the
    ``estimate`` of :class:`MixedNB` apply to every block).

    Parameters
    ----------
    blocks : list of (name, estimator, columns) or None, default=None
        Like scikit-learn's ``ColumnTransformer``: ``name`` a unique string without
        ``"__"``, ``estimator`` an unfitted bayesnb estimator (``GaussianNB``,
        ``BernoulliNB``, ``CategoricalNB``, ``MultinomialNB``, ``PoissonNB``, ...),
        ``columns`` an int, a list of ints, a slice, a boolean mask, or (for a pandas
        DataFrame) a column name or list of names. ``None`` requires a DataFrame and
        infers one block per family from the dtypes (:func:`infer_blocks`, the rule the
        ``bayesnb`` command applies to a file's columns too):

        * float → ``GaussianNB()`` (block ``"gaussian"``);
        * integer → as ``integer_columns`` says: by default ``GaussianNB()``, in the
          ``"gaussian"`` block with the float columns (an integer column such as an age,
          a duration or an amount is a number like any other; reading a file with pandas
          makes such columns int64);
        * bool → ``BernoulliNB(binarize=None)`` (block ``"bernoulli"``);
        * pandas ``category``, object or string → ``CategoricalNB()`` (block
          ``"categorical"``).

        Other dtypes (datetimes, complex, ...) are a ``TypeError``. What each column was
        modelled with is in ``feature_blocks_`` after ``fit``.
    remainder : {"error", "drop"}, default="error"
        What to do with columns in no block: an error, or ignore them.
    integer_columns : {"gaussian", "poisson", "categorical"}, default="gaussian"
        With ``blocks=None``, the model of the integer columns of a DataFrame:
        ``"gaussian"``, numbers (as float columns); ``"poisson"``, counts (``PoissonNB()``
        in a block ``"poisson"``; a negative value is an error); ``"categorical"``,
        category codes 0, 1, ... (``CategoricalNB()`` in the ``"categorical"`` block).
        Not used (but checked) when ``blocks`` is given.
    class_alpha : float or array-like of shape (n_classes,), default=1.0
        Concentration :math:`\beta` of the Dirichlet prior on the class proportions.
    class_prior : array-like of shape (n_classes,), default=None
        Fixed class proportions; overrides the Dirichlet posterior on them.
    fit_prior : bool, default=True
        If False (and ``class_prior`` is None) the class proportions are fixed uniform.
    estimate : {"predictive", "mean", "map", "mle"}, default="predictive"
        What ``predict*`` use, for the class proportions and every block alike. May be
        changed after ``fit`` with ``set_params``.
    missing : {"error", "ignore"}, default="error"
        What a NaN in ``X`` (or a missing value of a DataFrame column) means, for every
        block (each block's own ``missing`` is replaced by this one): "error", a
        ``ValueError`` naming the column and block; "ignore", an unobserved feature, left
        out of the statistics and likelihood under each block family's rules (see
        :mod:`bayesnb.core.missing`; e.g. exact for Gaussian, Bernoulli, categorical and
        Poisson blocks, refused at fit for a multinomial block).
    temperature : float >= 1 or "loo", default=1.0
        Likelihood tempering: class probabilities
        :math:`\propto p(y \mid D)\, p(x \mid y, D)^{1/T}` (1: the model as written).
        ``"loo"``: :math:`T` minimising the exact leave-one-out log loss of the training
        rows (:func:`bayesnb.analysis.loo.choose_temperature`), stored in ``temperature_``. A
        calibration device for a misspecified model, not its posterior (see the
        tempering guide); draws, intervals and feature log-odds are tempered alike.
        A large :math:`T` leaves the class proportions at full weight and can hand the
        decision to them (accuracy falls where the classes are unbalanced): prefer
        ``calibrate="loo"``, which fits the class offsets with the scale.
"""
        + _CALIBRATE_PARAM
        + r"""
    Attributes
    ----------
    estimators_ : list of (name, fitted estimator, column indices)
        The fitted blocks; ``column indices`` an int ndarray into the columns of ``X``.
    feature_blocks_ : dict
        Column → the name of the block that models it (``None`` for a column dropped by
        ``remainder="drop"``), in the order of the columns; keyed by the column names when
        fitted on a DataFrame (``feature_names_in_``), else by position. The inferred
        blocks are named after their family (``{"age": "gaussian", "purpose":
        "categorical", ...}``).
    named_estimators_ : dict
        Block name → fitted estimator.
    categories_ : dict
        Column position → ndarray of the categories of a non-numeric DataFrame column
        modelled by a ``CategoricalNB`` block; a value's code is its position. Learned
        from the dtype's categories (pandas ``category``) or the sorted distinct values
        (object/string) at fit; later ``partial_fit`` calls append new values. A value
        not seen in training gets a code past the fitted table at predict time, so
        ``CategoricalNB``'s share of a new category applies.
    classes_ : ndarray of shape (n_classes,)
    class_count_ : ndarray of shape (n_classes,)
    stats_ : ProductStats
        The class counts and each block's statistics (block name → the block
        estimator's ``stats_``).
    prior_ : dict
        Block name → the block's feature prior pytree.
    posterior_ : dict
        Block name → the block's feature posterior pytree.
    class_posterior_ : Dirichlet or None
    class_prior_ : ndarray or None
    class_log_prior_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of str, when fitted on a DataFrame with string columns

    Examples
    --------
    >>> import pandas as pd
    >>> from bayesnb.estimators.mixed import MixedNB
    >>> X = pd.DataFrame({"size": [1.0, 1.2, 3.1, 2.9], "red": [True, True, False, False],
    ...                   "shape": pd.Categorical(["round", "round", "long", "long"])})
    >>> clf = MixedNB().fit(X, ["apple", "apple", "banana", "banana"])
    >>> [name for name, _, _ in clf.estimators_]
    ['gaussian', 'bernoulli', 'categorical']
    >>> clf.feature_blocks_
    {'size': 'gaussian', 'red': 'bernoulli', 'shape': 'categorical'}
    >>> clf.predict(X.iloc[[0, 3]]).tolist()
    ['apple', 'banana']
    """
    )

    @property
    def _family(self):
        # The product of the fitted blocks' families (bayesnb.core.families.product): every
        # layer that works through the family protocol works for the mixed model.
        blocks = self.__dict__.get("estimators_")
        if blocks is None:
            return None
        return product([est._as_block(name, idx) for name, est, idx in blocks], self.n_features_in_)

    # Set only while fit/partial_fit validate their input (see _check_X).
    _fit_input = False
    # Its blocks' hyperparameters are fixed (see _resolve_blocks); its own class_alpha too.
    _hyperprior_params = frozenset()

    def __init__(
        self,
        blocks=None,
        *,
        remainder="error",
        integer_columns="gaussian",
        class_alpha=1.0,
        class_prior=None,
        fit_prior=True,
        estimate="predictive",
        missing="error",
        temperature=1.0,
        calibrate=None,
    ):
        super().__init__(
            class_alpha=class_alpha,
            class_prior=class_prior,
            fit_prior=fit_prior,
            estimate=estimate,
            missing=missing,
            temperature=temperature,
            calibrate=calibrate,
        )
        self.blocks = blocks
        self.remainder = remainder
        self.integer_columns = integer_columns

    # ------------------------------------------------------------ columns
    def _column_kinds(self, X):
        kinds = []
        for name, dtype in zip(X.columns, X.dtypes):
            kind = _dtype_kind(dtype)
            if kind is None:
                raise TypeError(
                    f"MixedNB cannot infer a family for column {name!r} of dtype {dtype}; "
                    "give blocks=[(name, estimator, columns), ...] explicitly"
                )
            kinds.append(kind)
        return kinds

    def _resolve_blocks(self, X):
        """The ``(name, unfitted clone, int column indices)`` triples for this ``X``."""
        n_features = X.shape[1]
        if self.remainder not in ("error", "drop"):
            raise ValueError(f"remainder must be 'error' or 'drop', got {self.remainder!r}")
        if not isinstance(self.integer_columns, str) or self.integer_columns not in INTEGER_COLUMNS:
            raise ValueError(
                f"integer_columns must be one of {', '.join(map(repr, INTEGER_COLUMNS))}, "
                f"got {self.integer_columns!r}"
            )
        if self.blocks is None:
            if not _is_dataframe(X):
                raise TypeError(
                    "MixedNB with blocks=None infers the blocks from a pandas DataFrame's "
                    f"dtypes; got {type(X).__name__}. Pass a DataFrame or give "
                    "blocks=[(name, estimator, columns), ...]"
                )
            return [
                (name, est.set_params(missing=self.missing), idx)
                for name, est, idx in infer_blocks(self._column_kinds(X), integer_columns=self.integer_columns)
            ]
        if not isinstance(self.blocks, (list, tuple)) or not self.blocks:
            raise TypeError(
                f"blocks must be a non-empty list of (name, estimator, columns) triples, got {self.blocks!r}"
            )
        out, names, owner = [], set(), {}
        for block in self.blocks:
            if not isinstance(block, (list, tuple)) or len(block) != 3:
                raise TypeError(f"each block must be a (name, estimator, columns) triple, got {block!r}")
            name, est, columns = block
            if not isinstance(name, str) or not name or "__" in name:
                raise ValueError(f"block name must be a non-empty string without '__', got {name!r}")
            if name in names:
                raise ValueError(f"block name {name!r} is used twice")
            names.add(name)
            if not isinstance(est, BaseNB) or isinstance(est, MixedNB):
                raise TypeError(
                    f"block {name!r}: unknown estimator type {type(est).__name__}; a block needs a "
                    "bayesnb estimator such as GaussianNB, BernoulliNB, CategoricalNB, "
                    "MultinomialNB or PoissonNB"
                )
            hyper = find_hyperpriors(est.get_params(deep=False))
            if hyper:
                # A block's integrated hyperparameters would make its predictive a mixture
                # over their draws, which the product of the blocks' closed forms is not.
                raise ValueError(
                    f"block {name!r}: {hyper[0].name} is a distribution (a hyperprior); MixedNB's blocks "
                    "take fixed hyperparameters (integrate them in a one-family estimator, or fix them, "
                    "e.g. at the evidence maximum with alpha='evidence')"
                )
            idx = self._column_indices(X, name, columns)
            for j in idx:
                if j in owner:
                    raise ValueError(f"column {self._column_label(X, j)!r} is in blocks {owner[j]!r} and {name!r}")
                owner[j] = name
            out.append((name, clone(est).set_params(missing=self.missing), idx))
        missing = [j for j in range(n_features) if j not in owner]
        if missing and self.remainder == "error":
            labels = [self._column_label(X, j) for j in missing]
            raise ValueError(
                f"column(s) {labels!r} are in no block; add them to a block or pass remainder='drop'"
            )
        return out

    @staticmethod
    def _column_label(X, j):
        return X.columns[j] if _is_dataframe(X) else int(j)

    @staticmethod
    def _column_indices(X, name, columns):
        n_features = X.shape[1]
        if isinstance(columns, slice):
            idx = np.arange(n_features)[columns]
        else:
            sel = np.atleast_1d(np.asarray(columns, dtype=object if isinstance(columns, str) else None))
            if sel.size == 0:
                raise ValueError(f"block {name!r} selects no column")
            if sel.dtype.kind == "b":
                if sel.shape != (n_features,):
                    raise ValueError(f"block {name!r}: boolean mask has shape {sel.shape}, X has {n_features} columns")
                idx = np.flatnonzero(sel)
            elif sel.dtype.kind in "iu":
                if sel.size and (sel.min() < -n_features or sel.max() >= n_features):
                    raise ValueError(f"block {name!r}: column index out of range for {n_features} columns: {columns!r}")
                idx = np.where(sel < 0, sel + n_features, sel)
            elif sel.dtype.kind in "OU":
                if not _is_dataframe(X):
                    raise ValueError(f"block {name!r}: columns given by name ({columns!r}) need a pandas DataFrame")
                where = {c: j for j, c in enumerate(X.columns)}
                absent = [c for c in sel.tolist() if c not in where]
                if absent:
                    raise ValueError(f"block {name!r}: column(s) {absent!r} not in the DataFrame")
                idx = np.array([where[c] for c in sel.tolist()], dtype=np.int64)
            else:
                raise TypeError(
                    f"block {name!r}: columns must be ints, a slice, a boolean mask or column names, got {columns!r}"
                )
        idx = np.asarray(idx, dtype=np.int64)
        if idx.size == 0:
            raise ValueError(f"block {name!r} selects no column")
        if np.unique(idx).size != idx.size:
            raise ValueError(f"block {name!r} lists a column twice: {columns!r}")
        return idx

    # -------------------------------------------------------- categories
    def _learn_categories(self, X, blocks):
        """Categories of the non-numeric DataFrame columns of the blocks of category codes (new dict)."""
        known = dict(getattr(self, "categories_", {}))
        if not _is_dataframe(X):
            return known
        for _, est, idx in blocks:
            if _support(est) != "codes":
                continue
            for j in idx:
                col = X.iloc[:, j]
                if _dtype_kind(col.dtype) != "nominal":
                    continue
                self._check_no_missing(col, j)
                known[int(j)] = _categories.learn(col, known.get(int(j)))
        return known

    def _check_no_missing(self, col, j):
        if self.missing != "ignore" and col.isna().any():
            raise ValueError(
                f"column {col.name!r} (position {int(j)}) contains NaN/missing values; pass "
                "missing='ignore' to leave them out, or make missing a category of its own"
            )

    def _encode(self, X, est, idx):
        """Category codes for a block of codes (CategoricalNB) whose DataFrame columns are non-numeric."""
        # With missing="ignore" a missing value is a NaN code, left to the block.
        ignore = self.missing == "ignore"
        out = np.empty((X.shape[0], idx.size), dtype=np.float64 if ignore else np.int64)
        for k, j in enumerate(idx):
            col = X.iloc[:, j]
            cats = self.categories_.get(int(j))
            if cats is None:
                # A numeric column in the same block: its values must already be codes.
                if ignore:
                    out[:, k] = np.asarray(col, dtype=np.float64)  # checked by the block
                else:
                    out[:, k] = check_category_codes(np.asarray(col)[:, None], type(est).__name__)[:, 0]
                continue
            self._check_no_missing(col, j)
            # An unseen value gets a code past the block's fitted table: the share of a new category.
            unseen = int(cats.size)
            if hasattr(est, "n_categories_"):
                unseen = max(unseen, int(est.n_categories_[k]))
            out[:, k] = _categories.encode(col, cats, unseen)
        return out

    # -------------------------------------------------------------- hooks
    def _input(self, X, reset):
        # Missing values are each block's: MixedNB only splits the columns.
        _missing.check_missing(self.missing)
        return self._check_X(X, reset)

    def _fit_with_layout(self, layout, X, y, sample_weight=None):
        """``fit(X, y)`` with the labels of label columns and every block's layout learned from ``layout``.

        ``categories_`` (the labels of the string and ``category`` columns of the blocks of
        category codes) is learned from every row of the batches ``layout``, as ``fit`` on
        all of them would learn it, and each block learns its own layout (a categorical
        block's table of categories) from its columns of every batch, through its own
        ``_fit_with_layout``; the statistics are those of ``X`` alone. See
        :meth:`BaseNB._fit_with_layout`.

        Cost: the blocks are fitted one after another and each reads its columns of every
        batch, while ``layout`` may be read once only (a generator). So every batch is
        read once, split into the blocks' columns, and the pieces are held until the
        blocks are fitted: a copy of all the rows of ``layout``, even where no block has a
        layout to learn (Gaussian blocks alone). A Dask array's row-chunks are therefore
        all computed (once each) and held together during this call, not one at a time as
        during the rest of :class:`~bayesnb.SemiSupervisedNB`'s fit.
        """
        self._clear_fitted()
        try:
            parts = None
            for rows in layout:
                # Fit's validation: the rows teach categories_ and come back split into the
                # blocks' unvalidated columns (category codes where the model learned labels).
                self._fit_input = True
                try:
                    rows = self._input(rows, reset=parts is None)
                finally:
                    del self._fit_input
                if parts is None:
                    parts = [[] for _ in rows.parts]
                for held, part in zip(parts, rows.parts):
                    held.append(part)
            if parts is None:
                raise ValueError("_fit_with_layout needs at least one batch of rows to learn the layout from")
            # Read by _compute_stats during this one fit: block k's columns of every batch.
            self._layout_parts = parts
            try:
                X, y = self._check_X_y(X, y, reset=False)
                check_class_targets(y)
                return self._update(X, y, np.unique(y), sample_weight, from_labels=True)
            finally:
                del self._layout_parts
        except BaseException:
            self._clear_fitted()
            raise

    def _check_X_y(self, X, y, reset):
        self._fit_input = True
        try:
            return super()._check_X_y(X, y, reset)
        finally:
            del self._fit_input

    def _check_X(self, X, reset):
        frame = _is_dataframe(X)
        if frame:
            # Columns keep their own dtypes: each block converts its own.
            validate_data(self, X, skip_check_array=True, reset=reset)
            if X.shape[0] == 0:
                raise ValueError("Found array with 0 sample(s) while a minimum of 1 is required by MixedNB.")
        else:
            # Finiteness is each block's to check: a block may accept what another refuses.
            X = validate_data(self, X, accept_sparse="csr", dtype=None, ensure_all_finite=False, reset=reset)
        if reset:
            blocks = self._resolve_blocks(X)
            self._templates = blocks
            # The user's own min_categories, before _compute_stats raises it to the learned categories.
            self._user_min_categories = {
                name: est.min_categories for name, est, _ in blocks if _support(est) == "codes"
            }
        blocks = self.estimators_ if hasattr(self, "estimators_") else self._templates
        if self._fit_input:
            self.categories_ = self._learn_categories(X, blocks)
        parts = []
        for name, est, idx in blocks:
            if frame and self._coded_block(est, idx):
                part = self._encode(X, est, idx)
            elif frame:
                part = X.iloc[:, idx]
            else:
                part = X[:, idx]
            self._check_finite(part, name, est, X, idx)
            if not self._fit_input:
                # Validated once here, not once per posterior draw in predict_proba_draws.
                with self._block_errors(name, idx):
                    part = est._input(part, reset=False)
            parts.append(part)
        # fit hands the blocks their raw columns (each block validates its own).
        return BlockRows(parts, X.shape, validated=not self._fit_input)

    def _check_finite(self, part, name, est, X, idx):
        if self.missing == "ignore" or est.__sklearn_tags__().input_tags.allow_nan:
            return  # the block leaves NaNs out (or refuses them itself, naming why)
        if _is_dataframe(part):
            bad = part.isna().to_numpy().any(axis=0)
        else:
            values = part.data if sp.issparse(part) else np.asarray(part)
            if values.dtype.kind not in "fc":
                return
            if sp.issparse(part):
                rows = np.isnan(values)
                bad = np.zeros(part.shape[1], bool)
                bad[part.indices[rows]] = True
            else:
                bad = np.isnan(values).any(axis=0)
        if np.any(bad):
            col = self._column_label(X, idx[int(np.flatnonzero(bad)[0])])
            raise ValueError(
                f"column {col!r} of block {name!r} contains NaN: pass missing='ignore' to leave "
                "missing values out, or impute them"
            )

    def _compute_stats(self, X, y_index, sample_weight, mask=None):
        class_count = np.bincount(y_index, weights=sample_weight, minlength=self.classes_.size).astype(np.float64)
        if X.validated and hasattr(self, "estimators_"):
            # Rows each block has validated already (validate_input, the product's simulate):
            # each block's own statistics of its piece; the blocks are left as they are.
            return ProductStats(class_count, {
                name: est.validated_stats(part, y_index, sample_weight)
                for (name, est, _), part in zip(self.estimators_, X.parts)
            })
        y = self.classes_[y_index]
        fitted, batch = [], {}
        blocks = self.estimators_ if hasattr(self, "estimators_") else self._templates
        # Within _fit_with_layout (a first fit): block k's columns of every row of the
        # layout, from which the block learns its own layout (its table of categories).
        layout = self.__dict__.get("_layout_parts")
        for k, ((name, est, idx), part) in enumerate(zip(blocks, X.parts)):
            # A copy is updated so that a batch failing in a later block leaves every block
            # as it was (BaseNB restores this object's attributes, not the blocks' own).
            est = copy.deepcopy(est) if hasattr(self, "estimators_") else est
            if self._coded_block(est, idx):
                est.set_params(min_categories=self._min_categories(name, idx))
            with self._block_errors(name, idx):
                if layout is None:
                    batch[name] = est._partial_fit_batch(part, y, self.classes_, sample_weight)
                else:
                    batch[name] = est._fit_with_layout(layout[k], part, y, sample_weight=sample_weight).stats_
            fitted.append((name, est, idx))
        self.estimators_ = fitted
        self.__dict__.pop("_templates", None)
        return ProductStats(class_count, batch)

    def _refresh(self):
        # The blocks hold the accumulated statistics (each merged its own batches, in its
        # own form: per cell once a batch had unobserved entries); the product's are theirs,
        # the same objects. (A mixed shard or an older file brings the class counts alone.)
        self.stats_ = ProductStats(
            np.asarray(self.stats_.class_count, dtype=np.float64),
            {name: est.stats_ for name, est, _ in self.estimators_},
        )
        super()._refresh()

    def _feature_posterior(self):
        # Each block's own conjugate update, not a second computation by the product
        # family: the block's posterior_ where the product's statistics are the block's
        # (the same object, see _refresh), else the block's posterior_from_stats (SBC, new
        # statistics). A block estimator that computes its posterior its own way is then
        # what the mixed model predicts with and what every layer reads off posterior_.
        # A block's refusal of other statistics (a Gaussian block's spread) names the
        # column of the user's X, as at fit: the block alone knows only its own positions.
        out = {}
        for name, est, idx in self.estimators_:
            stats = self.stats_.blocks[name]
            if stats is est.__dict__.get("stats_"):
                out[name] = est.posterior_
                continue
            with self._block_errors(name, idx):
                out[name] = est.posterior_from_stats(stats)
        return out

    def _coded_block(self, est, idx):
        """Whether block ``est`` over columns ``idx`` takes category codes this model learned (from strings)."""
        # The columns first: an unfitted block's family may not be known yet (a
        # GaussianBayesClassifier's depends on its fitted covariance); learned columns
        # belong to codes blocks only.
        return any(int(j) in self.categories_ for j in idx) and _support(est) == "codes"

    def _min_categories(self, name, idx):
        """Every learned category of an encoded column has a slot, observed in a class or not."""
        ours = np.array([self.categories_[int(j)].size if int(j) in self.categories_ else 1 for j in idx])
        theirs = self._user_min_categories[name]
        theirs = 1 if theirs is None else theirs
        return np.maximum(np.broadcast_to(np.asarray(theirs), ours.shape), ours).astype(np.int64)

    def _make_prior(self):
        return {name: est.prior_ for name, est, _ in self.estimators_}

    # ------------------------------------------------ "map" refusals in the user's terms
    def _feature_map_refusal(self, kind, err):
        return self._block_map_refusal(kind, err)

    def _block_map_refusal(self, kind, err):
        """The refusal of ``kind`` in the words of the block that has no mode there.

        The product family reports a cell of one block's tables, indexed by the block's
        own features and (for a categorical block) codes; the block names the cell, told
        how this model names its features (the DataFrame's column, the block) and the
        category labels this model learned for its string columns. Leave-one-out says
        which block (``err.block``); the fitted model's own point estimate is asked of
        each block in turn.
        """
        for name, est, idx in self.estimators_:
            if err.block is not None:
                if name != err.block:
                    continue
                block_err = err
            else:
                block = est._as_block(name, idx)
                try:
                    block.family.point(
                        self.prior_[name], self.stats_.blocks[name], kind, **block.point_options.get(kind, {})
                    )
                    continue
                except UndefinedModeError as raised:
                    block_err = raised
            words = getattr(est, "_map_refusal", None)
            if words is None:  # a family without its own words: at least the block and its columns
                columns = [self._column_name(j) for j in idx]
                return ValueError(f"block {name!r} (columns {columns!r}): {block_err}")

            def feature(j, name=name, idx=idx):
                return f"feature {self._column_name(idx[j])!r} (block {name!r})"

            def labels(j, idx=idx):
                return self.categories_.get(int(idx[j]))

            return words(block_err, feature_words=feature, labels=labels)
        return err

    @contextlib.contextmanager
    def _block_errors(self, name, idx):
        """A block's errors in the user's terms: prefixed with the block's name, a feature named by its column.

        Plain ``ValueError``/``TypeError`` get the block's name (``_shards.in_block``, as
        the shard merge does); a spread refusal
        (:class:`~bayesnb.core._validation.SpreadError`), which the block raised about
        its own feature ``j``, names the column ``idx[j]`` of the user's ``X``: its
        DataFrame name and position, as the ``"map"`` refusal names the cell
        (:meth:`_block_map_refusal`). Used by fit, partial_fit and ``fit_shard``.
        """
        try:
            with _in_block(name):
                yield
        except SpreadError as err:
            raise spread_refusal(err, getattr(self, "feature_names_in_", None), idx, f"block {name!r}: ") from None

    def _column_name(self, j):
        names = getattr(self, "feature_names_in_", None)
        return str(names[int(j)]) if names is not None else int(j)

    def _sample_row_params(self, key, n, prior):
        keys = jax.random.split(key, len(self.estimators_))
        return {name: est._sample_row_params(k, n, prior) for k, (name, est, _) in zip(keys, self.estimators_)}

    def _format_generated(self, X):
        """A DataFrame with the training columns and kinds when fitted on one, else the array.

        A column's dtype follows its block's family ``support`` (the family is asked,
        never the estimator's class): counts and numeric category codes int64, binary
        columns bool, real and positive columns float; category-code columns learned
        from labels are decoded as :class:`CategoricalNB` decodes its own
        (:func:`bayesnb.estimators._categories.decode`: pandas ``Categorical`` with the
        learned categories, booleans as bool; a code past them, possible only with
        ``min_categories`` larger than the categories seen, is missing).
        """
        if not hasattr(self, "feature_names_in_"):
            return X
        import pandas as pd

        columns = {}
        support = {}
        for _, est, idx in self.estimators_:
            for j in idx:
                support[int(j)] = est.family_.support
        for j, name in enumerate(self.feature_names_in_):
            kind, values = support.get(j), X[:, j]
            if kind == "codes" and j in self.categories_:
                columns[name] = _categories.decode(values, self.categories_[j])
            elif kind in _SUPPORT_DTYPE:
                columns[name] = values.astype(_SUPPORT_DTYPE[kind])
            else:
                columns[name] = values
        return pd.DataFrame(columns)

    def _loo_feature(self, X, y_index, weight, kind):
        # The rows fit hands over are the raw columns (each block validates its own): the
        # product family's leave-one-out takes them validated.
        if not X.validated:
            X = BlockRows([est._input(part, reset=False) for (_, est, _), part in zip(self.estimators_, X.parts)], X.shape)
        if any(self.stats_.blocks[name] is not est.__dict__.get("stats_") for name, est, _ in self.estimators_):
            # Statistics that are not the blocks' own (see _feature_posterior): the product
            # family's downdate under the blocks' priors.
            return super()._loo_feature(X, y_index, weight, kind)
        # Each block's own leave-one-out, which is exact where a block's prior is not the
        # same function of every row (PolyaNB re-learns its mean and precision without
        # the row; CategoricalNB's table of categories; GaussianNB's "mle" variance
        # floor); the blocks' feature scores add up.
        total = 0.0
        for (name, est, _), part in zip(self.estimators_, X.parts):
            try:
                total = total + np.asarray(est._loo_feature(part, y_index, weight, kind), dtype=np.float64)
            except UndefinedModeError as err:  # its index is into this block's tables
                raise err.located(block=name) from None
        return total

    def _loo_prior_reasons(self):
        return tuple(f"block {name!r}: {r}" for name, est, _ in self.estimators_ for r in est._loo_prior_reasons())

    # ---------------------------------------------------- Bayesian methods
    @property
    def named_estimators_(self):
        """dict: block name → fitted estimator."""
        check_is_fitted(self, "estimators_")
        return {name: est for name, est, _ in self.estimators_}

    @property
    def feature_blocks_(self):
        """dict: column (name, or position without names) → the name of the block modelling it, or None."""
        check_is_fitted(self, "estimators_")
        names = getattr(self, "feature_names_in_", None)
        keys = [str(v) for v in names] if names is not None else list(range(self.n_features_in_))
        owner = {int(j): name for name, _, idx in self.estimators_ for j in idx}
        return {key: owner.get(j) for j, key in enumerate(keys)}

    def _fits_missing(self):
        if not isinstance(self.blocks, (list, tuple)):
            return True  # inferred blocks: Gaussian, Bernoulli, categorical, Poisson
        return all(isinstance(b, (list, tuple)) and len(b) == 3 and isinstance(b[1], BaseNB)
                   and b[1]._fits_missing() for b in self.blocks)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = isinstance(self.blocks, (list, tuple)) and all(
            isinstance(b, (list, tuple)) and len(b) == 3 and getattr(b[1], "__sklearn_tags__", None) is not None
            and b[1].__sklearn_tags__().input_tags.sparse
            for b in self.blocks
        )
        return tags
