r"""Missing values (``missing="ignore"``): a NaN in ``X`` is an unobserved feature.

With ``missing="ignore"`` a NaN entry :math:`x_{ij}` is left out of the statistics of its
row and out of that row's likelihood at prediction, as R's ``naivebayes`` does. This
module is a separate layer: the estimators hand it their input only when
``missing="ignore"`` *and* NaNs are present (input without NaN, and
``missing="error"``, take the ordinary path, bit for bit). It reuses the families' own
functions; it has no conjugate math of its own.

What "left out" means, per family
---------------------------------
*Bernoulli, categorical, Poisson, Gaussian (diagonal)*: each feature is its own factor of
the likelihood, :math:`p(x \mid y=c) = \prod_j p(x_j \mid y=c)`, and has its own
conjugate prior, so an unobserved :math:`x_{ij}` is integrated out exactly by dropping
its factor. The posterior of cell :math:`(c, j)` is the conjugate update with the rows
of class :math:`c` that observe feature :math:`j`: the statistics become per cell
(:math:`N_{cj} = \sum_{i: y_i = c,\, x_{ij}\ \text{observed}} w_i` instead of
:math:`N_c`; means and sums of squares over the observed rows), which is exactly the
fit of feature :math:`j` alone on its observed rows. The class counts :math:`N_c` (and
the class posterior) still count every row. Prediction sums the factors of the observed
features only (a row with every feature missing gets the class proportions). The
Gaussian default prior is scaled per feature to that feature's observed values.

*Multinomial*: a document's counts are one multinomial draw of :math:`n = \sum_j x_j`
tokens, so an unobserved count is not an independent factor: it hides how many tokens
the document had. Prediction conditions on the observed vocabulary :math:`O`: the
tokens that fell in :math:`O` are a multinomial draw of :math:`n_O` tokens with
probabilities :math:`\theta_{cj} / \sum_{k \in O}\theta_{ck}`, and under
:math:`\theta_c \sim \mathrm{Dir}(a_c)` that sub-composition is
:math:`\mathrm{Dir}(a_{c,O})` (the Dirichlet's aggregation property), so the exact
predictive is the Dirichlet-multinomial on :math:`O`. Fitting on documents with
unobserved counts is refused: their likelihood constrains only sub-compositions of
:math:`\theta_c`, different ones per document, and the posterior is no longer a
Dirichlet (no conjugate update exists).

*Gaussian, full or shared covariance*: the features are jointly Gaussian, so an
unobserved coordinate is integrated out by marginalising it: a row with observed
coordinates :math:`O` is scored by the marginal of the class model on :math:`O`, which
is exact for the plug-in Gaussian (:math:`\mathcal N(\mu_O, \Sigma_{OO})`) and for the
Student-t predictive (the marginal of :math:`\mathrm{NIW}(m, \kappa, \nu, \Psi)` on
:math:`O` is :math:`\mathrm{NIW}(m_O, \kappa, \nu - |\bar O|, \Psi_{OO})`, whose
predictive is the marginal :math:`t` with the same degrees of freedom). Fitting on
partially observed rows is refused: the NIW posterior given a row with a missing
coordinate is not NIW (the missing coordinate couples mean and covariance; exact
inference needs EM or MCMC).

``MixedNB`` passes its ``missing`` to every block.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from .families import categorical, gaussian, gaussian_mv, multinomial
from .stats import (
    CountStats,
    GaussianStats,
    PoissonStats,
    categorical_stats,
    count_stats,
    gaussian_stats,
    poisson_stats,
)

__all__ = [
    "MISSING",
    "check_missing",
    "MaskedX",
    "MaskedCountStats",
    "MaskedPoissonStats",
    "MaskedGaussianStats",
    "STATS_TYPES",
    "split",
    "is_masked",
]

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
        """Features unobserved in at least one row.

        Returns
        -------
        int ndarray
            Sorted column indices.
        """
        if sp.issparse(self.mask):
            return np.unique(self.mask.indices)
        return np.flatnonzero(self.mask.any(axis=0))

    def observed_rows(self, j):
        """Rows that observe feature ``j``.

        Parameters
        ----------
        j : int
            Column index.

        Returns
        -------
        int ndarray
            Sorted row indices.
        """
        if sp.issparse(self.mask):
            col = self.mask[:, [j]].toarray().ravel().astype(bool)
        else:
            col = self.mask[:, j]
        return np.flatnonzero(~col)

    def dense_mask(self):
        """The mask as a dense bool array.

        Returns
        -------
        bool ndarray of shape (n_samples, n_features)
        """
        return self.mask.toarray().astype(bool) if sp.issparse(self.mask) else self.mask


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
    if hasattr(X, "columns") and hasattr(X, "fillna"):
        return X.fillna(0)  # keeps the column names
    arr = np.array(X, dtype=np.float64)
    arr[mask] = 0.0
    return arr


def split(est, X, reset):
    """Validate ``X`` for ``est`` with ``missing="ignore"``.

    Returns what ``est._check_X`` returns when ``X`` has no NaN (the ordinary path), else
    a :class:`MaskedX` of the validated, NaN-free input and the NaN mask. Infinities,
    negative counts, non-binary values etc. are refused as with ``missing="error"``.

    Parameters
    ----------
    est : bayesnb estimator
        Its ``_check_X`` validates the input.
    X : array-like, DataFrame or sparse matrix of shape (n_samples, n_features)
    reset : bool
        As for ``_check_X``: True at ``fit`` (record the number and names of the
        features), False at prediction (check them).

    Returns
    -------
    validated input or MaskedX
    """
    mask = _nan_positions(X)
    if mask is None:
        return est._check_X(X, reset=reset)
    return MaskedX(est._check_X(_filled(X, mask), reset=reset), mask)


# ----------------------------------------------------------------------------- statistics


class MaskedCountStats(NamedTuple):
    r"""Bernoulli statistics with per-cell observation counts.

    Attributes
    ----------
    class_count : ndarray of shape (n_classes,)
        :math:`N_c`, every row of the class.
    feature_count : ndarray of shape (n_classes, n_features)
        :math:`T_{cj}` over the rows that observe feature :math:`j`.
    observed_count : ndarray of shape (n_classes, n_features)
        :math:`N_{cj}`, the weight of the rows of class :math:`c` that observe :math:`j`.
    """

    class_count: np.ndarray
    feature_count: np.ndarray
    observed_count: np.ndarray

    def merge(self, other):
        """Statistics of the union of two disjoint sets of rows."""
        return MaskedCountStats(*(np.asarray(a) + np.asarray(b) for a, b in zip(self, other)))


class MaskedPoissonStats(NamedTuple):
    r"""Poisson statistics with per-cell observation counts (``log_factorial`` over observed entries)."""

    class_count: np.ndarray
    feature_count: np.ndarray
    log_factorial: np.ndarray
    observed_count: np.ndarray

    def merge(self, other):
        """Statistics of the union of two disjoint sets of rows."""
        return MaskedPoissonStats(*(np.asarray(a) + np.asarray(b) for a, b in zip(self, other)))


class MaskedGaussianStats(NamedTuple):
    r"""Diagonal-Gaussian statistics per cell, over the rows that observe each feature.

    Attributes
    ----------
    class_count : ndarray of shape (n_classes,)
        :math:`N_c`, every row of the class.
    observed_count : ndarray of shape (n_classes, n_features)
        :math:`N_{cj}`.
    mean, m2, mean_residual : ndarrays of shape (n_classes, n_features)
        As :class:`bayesnb.stats.GaussianStats`, over the observed rows of each cell.
    """

    class_count: np.ndarray
    observed_count: np.ndarray
    mean: np.ndarray
    m2: np.ndarray
    mean_residual: np.ndarray

    def merge(self, other):
        """Statistics of the union of two disjoint sets of rows (Chan's update, per cell)."""
        shape = np.shape(self.mean)
        merged = _cells_gaussian(self).merge(_cells_gaussian(other))
        return MaskedGaussianStats(
            np.asarray(self.class_count) + np.asarray(other.class_count),
            merged.class_count.reshape(shape),
            *(np.asarray(a).reshape(shape) for a in merged[1:]),
        )


STATS_TYPES = ("MaskedCountStats", "MaskedPoissonStats", "MaskedGaussianStats")
_MASKED = (MaskedCountStats, MaskedPoissonStats, MaskedGaussianStats)


def is_masked(stats):
    """Whether ``stats`` carries per-cell observation counts (missing values were seen).

    Parameters
    ----------
    stats : statistics pytree

    Returns
    -------
    bool
        True for :class:`MaskedCountStats`, :class:`MaskedPoissonStats` and
        :class:`MaskedGaussianStats`.
    """
    return isinstance(stats, _MASKED)


def _family(est):
    return est._family


def _refuse_fit(est):
    name = type(est).__name__
    if _fit_family(est) is multinomial.family:
        raise ValueError(
            f"{name} cannot be fitted on rows with missing (NaN) counts with missing='ignore': a "
            "document's counts are one multinomial draw, so an unobserved count hides the "
            "document's length and the likelihood of the observed counts constrains only a "
            "sub-composition of theta_c; the posterior is then no longer a Dirichlet. Impute or "
            "drop the NaNs for fitting (predict accepts them: it conditions on the observed words)"
        )
    raise ValueError(
        f"{name}(covariance={est.covariance!r}) cannot be fitted on rows with missing (NaN) values "
        "with missing='ignore': the features are jointly Gaussian and the Normal-Inverse-Wishart "
        "posterior given a partially observed row is not Normal-Inverse-Wishart (no conjugate "
        "update; exact inference needs EM or MCMC). Use covariance='diag' or impute for fitting "
        "(predict accepts NaNs: it marginalises the missing coordinates)"
    )


def to_masked(stats):
    """Ordinary statistics as their masked type (every feature observed in every row)."""
    if is_masked(stats) or not isinstance(stats, (CountStats, PoissonStats, GaussianStats)):
        return stats
    n = np.asarray(stats.class_count, dtype=np.float64)
    if isinstance(stats, GaussianStats):
        mean = np.asarray(stats.mean, dtype=np.float64)
        observed = np.broadcast_to(n[:, None], mean.shape).copy()
        resid = np.broadcast_to(np.asarray(stats.mean_residual, dtype=np.float64), mean.shape).copy()
        return MaskedGaussianStats(n, observed, mean, np.asarray(stats.m2, dtype=np.float64), resid)
    observed = np.broadcast_to(n[:, None], np.shape(stats.feature_count)).copy()
    if isinstance(stats, PoissonStats):
        return MaskedPoissonStats(*stats, observed)
    return MaskedCountStats(*stats, observed)


def _fit_family(est):
    """The family ``est`` fits with (GaussianBayesClassifier: its requested covariance)."""
    requested = getattr(est, "_requested", None)
    if requested is not None:
        return gaussian.family if requested() == "diag" else gaussian_mv.family
    return _family(est)


def stats(est, X, y_index, sample_weight):
    """Statistics of one batch for ``est`` with ``missing="ignore"``.

    Called when the batch has NaNs (``X`` a :class:`MaskedX`) or earlier batches had;
    converts ``est.stats_`` to its masked type when this is the first batch with NaNs,
    so that the two merge.
    """
    family = _fit_family(est)
    masked = isinstance(X, MaskedX)
    if not masked:
        # A batch without NaN after batches with NaN: the ordinary statistics, in the
        # masked layout (every feature observed).
        return to_masked(est._compute_stats(X, y_index, sample_weight))
    if family in (multinomial.family, gaussian_mv.family):
        _refuse_fit(est)
    n_classes = est.classes_.size
    if family is categorical.family:
        # Unobserved cells are counted in an extra category slot, then dropped: the
        # category counts are sums of observed weights only (no subtraction).
        est._compute_stats(X.X, y_index, sample_weight)  # n_categories_ and its checks
        k = int(np.max(est.n_categories_, initial=1))
        codes = np.where(X.dense_mask(), k, X.X)
        counts = categorical_stats(codes, y_index, n_classes, np.full(codes.shape[1], k + 1), sample_weight)
        return counts._replace(category_count=counts.category_count[..., :k])
    if family is gaussian.family:
        if hasattr(est, "_requested") and hasattr(est, "stats_"):
            est._compute_stats(X.X, y_index, sample_weight)  # refuses a change of covariance
        new = _gaussian_stats(X, y_index, n_classes, sample_weight)
    else:
        new = to_masked(est._compute_stats(X.X, y_index, sample_weight))
        new = new._replace(observed_count=_observed_weight(X, y_index, n_classes, sample_weight))
    if hasattr(est, "stats_") and not is_masked(est.stats_):
        est.stats_ = to_masked(est.stats_)
    return new


def _observed_weight(X, y_index, n_classes, w):
    """:math:`N_{cj}`: the weight of the rows of class ``c`` that observe feature ``j``."""
    if not sp.issparse(X.mask):
        return count_stats((~X.mask).astype(np.float64), y_index, n_classes, w).feature_count
    # A sparse mask (sparse data): the complement would be dense, so subtract instead.
    n = np.bincount(y_index, weights=w, minlength=n_classes).astype(np.float64)
    unobserved = count_stats(X.mask.astype(np.float64), y_index, n_classes, w).feature_count
    return np.maximum(n[:, None] - unobserved, 0.0)


def _gaussian_stats(X, y_index, n_classes, w):
    data = np.asarray(X.X, dtype=np.float64)
    n_features = data.shape[1]
    missing = X.missing_columns()
    clean = np.setdiff1d(np.arange(n_features), missing)
    n = np.bincount(y_index, weights=w, minlength=n_classes).astype(np.float64)
    observed, mean, m2, resid = (np.zeros((n_classes, n_features)) for _ in range(4))
    groups = [(clean, np.arange(data.shape[0]))] if clean.size else []
    groups += [(np.array([j]), X.observed_rows(j)) for j in missing]
    for cols, rows in groups:
        if not rows.size:
            continue  # a feature observed in no row of this batch adds nothing
        part = gaussian_stats(
            data[np.ix_(rows, cols)], y_index[rows], n_classes, None if w is None else w[rows]
        )
        observed[:, cols] = np.asarray(part.class_count)[:, None]
        mean[:, cols], m2[:, cols] = part.mean, part.m2
        resid[:, cols] = np.broadcast_to(part.mean_residual, part.mean.shape)
    return MaskedGaussianStats(n, observed, mean, m2, resid)


# ----------------------------------------------------------------------------- cells as classes
#
# With per-cell counts N_cj, each (class, feature) cell of a feature-wise family is an
# independent conjugate model: exactly the family's model with C*F "classes" of one
# feature. The family's own posterior/point/evidence functions are applied to that view.


def _to_cells(tree):
    """Arrays (C, F, ...) as (C*F, 1, ...); other leaves unchanged."""
    return type(tree)(*(_cell_leaf(v) for v in tree))


def _cell_leaf(v):
    a = np.asarray(v)
    return a.reshape((a.shape[0] * a.shape[1], 1) + a.shape[2:]) if a.ndim >= 2 else v


def _from_cells(tree, shape):
    return type(tree)(*(_uncell_leaf(v, shape) for v in tree))


def _uncell_leaf(v, shape):
    a = np.asarray(v)
    return a.reshape(tuple(shape) + a.shape[2:]) if a.ndim >= 2 else v


def _cells_gaussian(s):
    shape = np.shape(s.mean)
    return GaussianStats(
        np.asarray(s.observed_count, dtype=np.float64).ravel(),
        *(np.asarray(a, dtype=np.float64).reshape(-1, 1) for a in (s.mean, s.m2, np.broadcast_to(s.mean_residual, shape))),
    )


def _cells_stats(s):
    if isinstance(s, MaskedGaussianStats):
        return _cells_gaussian(s)
    observed = np.asarray(s.observed_count, dtype=np.float64)
    t = np.asarray(s.feature_count, dtype=np.float64).reshape(-1, 1)
    if isinstance(s, MaskedPoissonStats):
        # Only the total of the base-measure term enters the evidence.
        log_factorial = np.zeros(observed.size)
        log_factorial[0] = np.sum(s.log_factorial)
        return PoissonStats(observed.ravel(), t, log_factorial)
    return CountStats(observed.ravel(), t)


def posterior(est):
    """The feature posterior of ``est`` from its masked statistics."""
    shape = np.shape(est.stats_.observed_count)
    return _from_cells(est._family.posterior(_to_cells(est.prior_), _cells_stats(est.stats_)), shape)


def log_evidence(est):
    """The feature log evidence of ``est`` from its masked statistics."""
    return est._family.log_evidence(_to_cells(est.prior_), _cells_stats(est.stats_))


def _cell_index_message(err, shape):
    """Translate 'class index k, feature 0' of the cell view into (class, feature)."""
    import re

    def repl(match):
        c, j = divmod(int(match.group(1)), shape[1])
        return f"class index {c}, feature {j}"

    text = re.sub(r"class index (\d+), feature 0", repl, str(err))
    text = re.sub(
        r"class index (\d+) has no training rows",
        lambda m: "class index {}, feature {} has no training rows observing it".format(*divmod(int(m.group(1)), shape[1])),
        text,
    )
    return ValueError(text)


def point(est, kind):
    """Point estimate of ``est``'s feature parameters from its masked statistics."""
    shape = np.shape(est.stats_.observed_count)
    prior, cells = _to_cells(est.prior_), _cells_stats(est.stats_)
    kwargs = {}
    if est._family is gaussian.family and kind == "mle":
        # scikit-learn's variance floor is a multiple of the largest pooled variance of a
        # feature; in the cell view the same floor is var_smoothing' * (its pooled max).
        epsilon = mle_epsilon(est)
        pooled_max = float(gaussian.pooled(cells)[2].max(initial=0.0))
        kwargs["var_smoothing"] = epsilon / pooled_max if pooled_max > 0 else 0.0
    try:
        params = est._family.point(prior, cells, kind, **kwargs)
    except ValueError as err:
        raise _cell_index_message(err, shape) from None
    return _from_cells(params, shape)


def _feature_groups(observed):
    """Features grouped by identical per-class observation counts (most share N_c)."""
    _, inverse = np.unique(observed.T, axis=0, return_inverse=True)
    return [np.flatnonzero(inverse.ravel() == g) for g in range(int(inverse.max()) + 1)]


def _pooled_by_feature(s):
    """Per-feature pooled (count, mean, variance) of masked Gaussian statistics."""
    observed = np.asarray(s.observed_count, dtype=np.float64)
    n_features = observed.shape[1]
    mean, var = np.zeros(n_features), np.zeros(n_features)
    for cols in _feature_groups(observed):
        part = GaussianStats(observed[:, cols[0]], s.mean[:, cols], s.m2[:, cols], np.asarray(s.mean_residual)[:, cols])
        if part.class_count.sum() <= 0:
            continue  # a feature never observed: its default prior is the unit one
        _, mean[cols], var[cols] = gaussian.pooled(part)
    return mean, var


def default_gaussian_prior(s):
    """The diagonal Gaussian's default prior, scaled per feature to its observed values."""
    observed = np.asarray(s.observed_count, dtype=np.float64)
    parts, index = [], []
    for cols in _feature_groups(observed):
        part = GaussianStats(observed[:, cols[0]], s.mean[:, cols], s.m2[:, cols], np.asarray(s.mean_residual)[:, cols])
        if part.class_count.sum() <= 0:
            part = part._replace(class_count=np.ones_like(part.class_count))  # no data: zero mean, unit scale
        parts.append(gaussian.default_prior(part))
        index.append(cols)
    order = np.argsort(np.concatenate(index))
    return type(parts[0])(*(np.concatenate([np.asarray(p[f]) for p in parts], axis=1)[:, order] for f in range(4)))


def mle_epsilon(est):
    """``var_smoothing`` times the largest per-feature pooled variance (observed values)."""
    return float(est._var_smoothing() if hasattr(est, "_var_smoothing") else 0.0) * float(
        _pooled_by_feature(est.stats_)[1].max(initial=0.0)
    )


# ----------------------------------------------------------------------------- prediction


def _columns(tree, cols):
    """Parameters of the features ``cols`` (the feature axis is axis 1 of every array)."""
    return type(tree)(*(np.asarray(v)[:, cols] if np.ndim(v) >= 2 else v for v in tree))


def _feature_wise(est, X, evaluate):
    """Sum of ``evaluate(cols, X_cols)`` over the observed entries of each row."""
    data = X.X
    n_features = data.shape[1]
    missing = X.missing_columns()
    clean = np.setdiff1d(np.arange(n_features), missing)
    out = np.zeros((data.shape[0], est.classes_.size))
    if clean.size:
        out += evaluate(clean, data[:, clean])
    for j in missing:
        rows = X.observed_rows(j)
        if rows.size:
            out[rows] += evaluate(np.array([j]), data[rows][:, [j]])
    return out


def log_likelihood(est, params, X):
    """Plug-in log-likelihood of the observed entries of ``X`` (a :class:`MaskedX`)."""
    family = _family(est)
    if family is multinomial.family:
        return _multinomial_conditional(X, np.asarray(params.log_probs), plug_in=True)
    if family is gaussian_mv.family:
        return _mv_marginal(est, X, params, predictive=False)
    if family is categorical.family:
        n_cat = np.asarray(est.n_categories_)
        return _feature_wise(est, X, lambda cols, Xc: categorical.log_likelihood(_columns(params, cols), Xc, n_cat[cols]))
    return _feature_wise(est, X, lambda cols, Xc: family.log_likelihood(_columns(params, cols), Xc))


def log_predictive(est, X):
    """Exact posterior predictive of the observed entries of ``X`` (a :class:`MaskedX`)."""
    family = _family(est)
    if family is multinomial.family:
        return _multinomial_conditional(X, np.asarray(est.posterior_.concentration), plug_in=False)
    if family is gaussian_mv.family:
        return _mv_marginal(est, X, est.posterior_, predictive=True)
    return _feature_wise(est, X, lambda cols, Xc: family.log_predictive(_columns(est.posterior_, cols), Xc))


def _multinomial_conditional(X, values, plug_in):
    r"""Multinomial scores conditional on the observed vocabulary :math:`O_i` of each row.

    Plug-in: :math:`\sum_{j \in O} x_j\log\theta_{cj} - n_O \log\sum_{j \in O}\theta_{cj}`.
    Predictive: the Dirichlet-multinomial of :math:`\mathrm{Dir}(a_{c,O})`, i.e. the
    family's predictive (unobserved counts are 0) with the class total :math:`A_c`
    replaced by :math:`A_{c,O} = \sum_{j \in O} a_{cj}`.
    """
    from ._linear import row_sums
    from ._special import log_rising_factorial_np

    observed = ~X.dense_mask()
    n_obs = row_sums(X.X)[:, None]
    if plug_in:
        out = multinomial.log_likelihood(multinomial.MultinomialParams(values), X.X)
        mass = observed.astype(np.float64) @ np.exp(values).T
        # A row with no observed count has n_O = 0: its (empty) product is 1. Observed
        # counts on words of total probability 0 ("mle") are impossible: -inf, not NaN.
        positive = mass > 0
        with np.errstate(divide="ignore"):
            normaliser = np.where(n_obs > 0, n_obs * np.log(np.where(positive, mass, 1.0)), 0.0)
        return np.where(positive | (n_obs == 0), out - normaliser, -np.inf)
    from .priors import Dirichlet

    out = multinomial.log_predictive(Dirichlet(values), X.X)
    total = values.sum(axis=1)[None, :]
    mass = observed.astype(np.float64) @ values.T
    safe = np.where(mass > 0, mass, 1.0)
    correction = log_rising_factorial_np(total, n_obs) - log_rising_factorial_np(safe, n_obs)
    return out + np.where(n_obs > 0, correction, 0.0)


def _mv_marginal(est, X, params, predictive):
    """Joint-Gaussian scores of each row's observed coordinates (grouped by pattern)."""
    data = np.asarray(X.X, dtype=np.float64)
    observed = ~X.dense_mask()
    n_features = data.shape[1]
    out = np.zeros((data.shape[0], est.classes_.size))
    patterns, inverse = np.unique(observed, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    for p, keep in enumerate(patterns):
        rows = np.flatnonzero(inverse == p)
        cols = np.flatnonzero(keep)
        if not cols.size:
            continue  # nothing observed: every class scores log 1
        sub = data[np.ix_(rows, cols)]
        if predictive:
            post = params
            dropped = n_features - cols.size
            scale = np.asarray(post.scale)
            scale = scale[..., cols[:, None], cols[None, :]]
            marginal = type(post)(np.asarray(post.loc)[:, cols], post.kappa, np.asarray(post.df) - dropped, scale)
            out[rows] = gaussian_mv.log_predictive(marginal, sub)
        else:
            cov = gaussian_mv.covariance(params)[..., cols[:, None], cols[None, :]]
            tril = np.linalg.cholesky(cov)
            out[rows] = gaussian_mv.log_likelihood(gaussian_mv.GaussianParams(np.asarray(params.loc)[..., cols], tril), sub)
    return out
