r"""Dirichlet math shared by every discrete family and by the class proportions.

Each function works over the *last* axis of ``concentration`` (the simplex) and
broadcasts over the leading batch axes, e.g. ``(n_classes, n_features)`` cells of a
Dirichlet over a feature's categories, ``(n_classes,)`` Dirichlets over the vocabulary,
or a Beta written as a Dirichlet over two outcomes. An optional boolean ``mask`` marks
the valid simplex coordinates of padded (ragged) simplices; masked-out coordinates carry
no mass.

Everything here is pure JAX run in float64 (see :mod:`bayesnb.core._x64`).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp

from bayesnb.core import _sampling
from bayesnb.core._special import log_rising_factorial
from bayesnb.core._x64 import x64
from bayesnb.core.kernels import is_traced

__all__ = [
    "expected_log",
    "log_density",
    "log_evidence",
    "log_evidence_cells",
    "pooled_log_bayes_factor",
    "tied_log_evidence",
    "mean_log",
    "mode_log",
    "mle_log",
    "sample_log",
    "UndefinedModeError",
    "MapRefusal",
    "map_refusal_in_words",
]


class UndefinedModeError(ValueError):
    """``estimate='map'`` where a concentration is below 1: the density has no mode.

    A :class:`ValueError` that says where, so that an estimator can name the cell in the
    user's terms (class label, feature, category) instead of an array index.

    Attributes
    ----------
    index : tuple of int
        The first such concentration's index in the array given to :func:`mode_log`.
    value : float
        That concentration.
    row : int or None
        Leave-one-out: the position, among the rows given to the downdate, of the row
        left out (the caller maps it to its training row); None elsewhere.
    block : str or None
        The block of a product of families whose tables ``index`` indexes, or None.
    """

    def __init__(self, message, index, value, row=None, block=None):
        super().__init__(message)
        self.index = index
        self.value = value
        self.row = row
        self.block = block

    def __reduce__(self):  # picklable (joblib workers): the attributes are not the message
        return UndefinedModeError, (str(self), self.index, self.value, self.row, self.block)

    def located(self, row=None, block=None):
        """The same error, told the training row left out or the block it arose in (kept where not given).

        Parameters
        ----------
        row : int, optional
        block : str, optional

        Returns
        -------
        UndefinedModeError
        """
        return UndefinedModeError(
            str(self), self.index, self.value, self.row if row is None else int(row),
            self.block if block is None else block,
        )


class MapRefusal(ValueError):
    """The refusal of ``estimate='map'`` in the user's words (:func:`map_refusal_in_words`).

    It keeps the class its cell belongs to, so that a model whose classes are another
    model's parts can name them in its own terms without editing the message
    (:class:`~bayesnb.estimators.semi_supervised.SemiSupervisedNB`: class 3 of its
    component model is component 3 of class 'spam').

    Attributes
    ----------
    class_index : int or None
        The position of the cell's class in the refusing model's classes; None where
        the cell belongs to no class.
    class_words : str or None
        How ``where`` names that class (``"class 'spam'"``): the first occurrence of
        these words in ``where`` is the class.
    row : int or None
        Leave-one-out: the training row left out (the message says "with training row
        ``row`` left out"); None elsewhere.
    """

    def __init__(self, where, value, why, parameter, class_index=None, class_words=None, row=None):
        self.where, self.value, self.why, self.parameter = where, value, why, parameter
        self.class_index, self.class_words, self.row = class_index, class_words, row
        place = where if row is None else f"{where} with training row {row} left out"
        super().__init__(
            # The value first: a table cell shows the first clause (analysis.comparison.short_reason).
            f"estimate='map' is undefined: a posterior concentration is {value:.4g} < 1 ({place}: {why}), so the "
            "Dirichlet/Beta density is unbounded at the boundary of the simplex and has no mode. "
            f"Use {parameter} >= 1, or estimate='mean' or 'predictive'."
        )

    def naming_class(self, words, unit="class"):
        """The same refusal with its class named ``words`` instead.

        Parameters
        ----------
        words : str
            E.g. ``"component 3 of class 'spam'"``.
        unit : str, default="class"
            What the cell's class is to the reader (``"component"``): ``why``'s "that
            class" (``"weighted rows of that class"``) becomes "that component".

        Returns
        -------
        MapRefusal
        """
        if self.class_words is None:
            return self
        where = self.where.replace(self.class_words, words, 1)
        why = self.why.replace("that class", f"that {unit}")
        return MapRefusal(where, self.value, why, self.parameter, self.class_index, words, self.row)

    def at_row(self, row):
        """The same refusal, for the training row ``row`` left out.

        Parameters
        ----------
        row : int or None

        Returns
        -------
        MapRefusal
        """
        return MapRefusal(
            self.where, self.value, self.why, self.parameter, self.class_index, self.class_words,
            None if row is None else int(row),
        )

    def __reduce__(self):  # picklable (joblib workers): the parts are not the message
        return MapRefusal, (
            self.where, self.value, self.why, self.parameter, self.class_index, self.class_words, self.row
        )


def map_refusal_in_words(where, value, why, parameter, class_index=None, class_words=None, row=None):
    """The ``ValueError`` for ``estimate='map'`` where a posterior concentration is below 1, in the user's words.

    The estimators and the class-prior layer name the cell of an
    :class:`UndefinedModeError` (a class label, a feature, a category) instead of its
    array index; this is the one wording of that refusal.

    Parameters
    ----------
    where : str
        The cell, e.g. ``"the proportion of class 'spam'"``; a cell of a class names the
        class (``class_words``) before anything else.
    value : float
        Its posterior concentration (below 1).
    why : str
        What the concentration is made of (the prior's parameter plus the weighted rows).
    parameter : str
        The parameter that sets the prior (``"alpha"``, ``"class_alpha"``).
    class_index : int, optional
        The position of the cell's class in the model's classes.
    class_words : str, optional
        How ``where`` names that class, e.g. ``"class 'spam'"``.
    row : int, optional
        Leave-one-out: the training row left out.

    Returns
    -------
    MapRefusal
        A :class:`ValueError`.
    """
    return MapRefusal(where, value, why, parameter, class_index, class_words, row)


def _masked(a, mask, fill):
    return a if mask is None else jnp.where(mask, a, fill)


@x64
@jax.jit
def log_evidence_cells(prior_concentration, counts, mask=None):
    r"""Log marginal likelihood of each batch cell (one Dirichlet each), not summed.

    .. math::

        \log p(D_{\text{cell}}) = \log B(a + T) - \log B(a)
            = \sum_k \log\frac{\Gamma(a_k + T_k)}{\Gamma(a_k)}
              - \log\frac{\Gamma(A + N)}{\Gamma(A)},

    written with log rising factorials, which keep full precision when
    :math:`A = \sum_k a_k` is large. This is the one implementation of the Dirichlet
    evidence: :func:`log_evidence` sums it, the per-feature Bayes factors
    (:func:`pooled_log_bayes_factor`) and the empirical-Bayes optimiser
    (:mod:`bayesnb.core.empirical_bayes`, which differentiates it) use it.

    Parameters
    ----------
    prior_concentration : array of shape (..., K)
    counts : array of shape (..., K)
        Weighted counts :math:`T` (any non-negative reals).
    mask : bool array broadcastable to (..., K), optional

    Returns
    -------
    float64 jax.Array of the broadcast batch shape ``(...)``, differentiable in
    ``prior_concentration``.
    """
    a = _masked(jnp.asarray(prior_concentration, dtype=jnp.float64), mask, 1.0)
    t = _masked(jnp.asarray(counts, dtype=jnp.float64), mask, 0.0)
    a, t = jnp.broadcast_arrays(a, t)
    valid = 1.0 if mask is None else jnp.broadcast_to(mask, a.shape)
    per_coord = jnp.sum(log_rising_factorial(a, t), axis=-1)
    return per_coord - log_rising_factorial(jnp.sum(a * valid, axis=-1), jnp.sum(t, axis=-1))


@x64
@jax.jit
def log_evidence(prior_concentration, counts, mask=None):
    r"""Log marginal likelihood of the observation sequence behind a conjugate update.

    For a sequence of categorical draws with counts :math:`T` under a
    :math:`\mathrm{Dir}(a)` prior,

    .. math::

        \log p(D) = \log B(a + T) - \log B(a)
                  = \sum_k \log\frac{\Gamma(a_k + T_k)}{\Gamma(a_k)}
                    - \log\frac{\Gamma(A + N)}{\Gamma(A)},

    summed over every batch cell (:func:`log_evidence_cells`).

    Parameters
    ----------
    prior_concentration : array of shape (..., K)
    counts : array of shape (..., K)
        Weighted counts :math:`T` (any non-negative reals).
    mask : bool array broadcastable to (..., K), optional

    Returns
    -------
    float64 scalar (jax.Array), differentiable in ``prior_concentration``.
    """
    return jnp.sum(log_evidence_cells(prior_concentration, counts, mask))


def tied_log_evidence(counts):
    r""":func:`log_evidence` of the counts as a function of a *tied* prior, one concentration per cell.

    Where every coordinate of a Dirichlet cell has the same concentration :math:`a` (a
    symmetric prior, the usual one for words),

    .. math::

        \log p(D_{\text{cell}}) = \sum_v m_v\, \log\frac{\Gamma(a + v)}{\Gamma(a)}
            - \log\frac{\Gamma(K a + N)}{\Gamma(K a)},

    where :math:`m_v` is the number of coordinates of the cell with count :math:`v`
    (zero counts contribute nothing). The distinct counts are found once, here, so that
    one evaluation costs the number of distinct (cell, count) pairs instead of the
    number of coordinates: on 20 Newsgroups (20 classes x 26 k words: 520 k cells) a
    few thousand. This is what makes NUTS over a scalar :math:`\alpha` cheap
    (:mod:`bayesnb.ppl.collapsed`).

    Parameters
    ----------
    counts : array of shape (..., K)
        Weighted counts (any non-negative reals), concrete.

    Returns
    -------
    callable ``(a) -> scalar``
        ``a`` of the batch shape ``(...)``: the concentration of every coordinate of each
        cell. Traceable and differentiable in ``a``; equal to
        ``log_evidence(a[..., None] * ones(K), counts)`` to rounding. A
        :class:`jax.tree_util.Partial`, so also a pytree of arrays: a jitted function
        that takes it as an argument compiles once per padded size of the distinct
        counts rather than once per data set.
    """
    counts = np.asarray(counts, dtype=np.float64)
    batch, K = counts.shape[:-1], counts.shape[-1]
    flat = counts.reshape(-1, K)
    cells, values, multiplicity = [], [], []
    for i, row in enumerate(flat):
        v, m = np.unique(row[row > 0], return_counts=True)
        cells.append(np.full(v.size, i))
        values.append(v)
        multiplicity.append(m)
    cells = np.concatenate(cells).astype(np.intp) if cells else np.zeros(0, np.intp)
    values = np.concatenate(values) if values else np.zeros(0)
    multiplicity = np.concatenate(multiplicity).astype(np.float64) if multiplicity else np.zeros(0)
    # The distinct (cell, count) pairs are padded to a power of two with pairs of
    # multiplicity 0 (count 1, so that each padding term is 0 x a finite number): callers
    # that jit a function of the returned pytree compile once per padded size, not once
    # per data set.
    size = 1 << max(int(values.size) - 1, 63).bit_length()
    pad = size - values.size
    cells = np.concatenate([cells, np.zeros(pad, np.intp)])
    values = np.concatenate([values, np.ones(pad)])
    multiplicity = np.concatenate([multiplicity, np.zeros(pad)])
    evidence = jax.tree_util.Partial(
        _tied_evidence, cells, values, multiplicity, flat.sum(axis=1), np.float64(K)
    )
    evidence.batch_shape = batch
    return evidence


def _tied_evidence(cells, values, multiplicity, totals, K, a):
    a = jnp.reshape(jnp.asarray(a, dtype=jnp.float64), (-1,))
    if a.shape[0] != totals.shape[0]:
        a = jnp.broadcast_to(a, totals.shape)
    coords = jnp.sum(multiplicity * log_rising_factorial(a[cells], values))
    return coords - jnp.sum(log_rising_factorial(K * a, totals))


def pooled_log_bayes_factor(concentration, counts, mask=None):
    r"""Per-feature log Bayes factor: one Dirichlet per class against one shared by the classes.

    For every feature :math:`j` (axis 1), model :math:`M_1` gives each class its own
    :math:`\theta_{cj} \sim \mathrm{Dir}(a_j)` and model :math:`M_0` one
    :math:`\theta_j \sim \mathrm{Dir}(a_j)` shared by all classes (the feature's
    distribution does not depend on the class):

    .. math::

        \log \mathrm{BF}_j = \sum_c \big[\log B(a_j + T_{cj}) - \log B(a_j)\big]
            - \big[\log B(a_j + \textstyle\sum_c T_{cj}) - \log B(a_j)\big].

    Parameters
    ----------
    concentration : array of shape (n_classes, n_features, K)
        Prior concentrations; every class must carry the same ones (``M_0`` needs one
        prior per feature).
    counts : array of shape (n_classes, n_features, K)
    mask : bool array broadcastable to (n_features, K), optional

    Returns
    -------
    ndarray of shape (n_features,)

    Raises
    ------
    ValueError
        If the prior differs between classes.
    """
    a = np.asarray(concentration, dtype=np.float64)
    t = np.asarray(counts, dtype=np.float64)
    a = np.broadcast_to(a, np.broadcast_shapes(a.shape, t.shape))
    if not np.array_equal(a, np.broadcast_to(a[:1], a.shape)):
        raise ValueError(
            "the relevance Bayes factor compares class-specific parameters with one "
            "parameter shared by all classes, which needs one prior per feature shared by "
            "the classes; this prior differs between classes (e.g. alpha of shape "
            "(n_classes, n_features) or alpha_scope='class')"
        )
    separate = np.asarray(log_evidence_cells(a, t, mask)).sum(axis=0)
    shared = np.asarray(log_evidence_cells(a[0], t.sum(axis=0), mask))
    return separate - shared


def _log_share(t, mask, xp=jnp):
    r"""Accurate :math:`\log(t_k / \sum_i t_i)` over the last axis (``-inf`` where masked).

    ``log t_k - log Σt`` rounds each term at the scale of ``log Σt``; for a share close to
    one (e.g. :math:`1 - \theta` of a rare binary feature) the result is tiny and that
    rounding is all relative error, which then adds up over many features. Shares above
    one half are computed as ``log1p(-rest / Σt)`` instead, with ``rest`` the other
    coordinate itself for a two-outcome simplex (a Beta), and ``Σt - t_k`` otherwise.
    Written once for ``xp`` = ``numpy`` (concrete input) or ``jax.numpy`` (traced).
    """
    t = t if mask is None else xp.where(mask, t, 0.0)
    total = xp.sum(t, axis=-1, keepdims=True)
    rest = t[..., ::-1] if t.shape[-1] == 2 else total - t
    safe_total = xp.where(total > 0, total, 1.0)
    direct = xp.log(t) - xp.log(safe_total)
    complement = xp.log1p(-rest / safe_total)
    return xp.where(t > rest, complement, direct)


def _mean_log(a, mask, xp):
    out = _log_share(a, mask, xp)
    return out if mask is None else xp.where(mask, out, -xp.inf)


def _mle_log(t, mask, xp):
    t = t if mask is None else xp.where(mask, t, 0.0)
    total = xp.sum(t, axis=-1, keepdims=True)
    k = xp.sum(xp.ones_like(t) if mask is None else xp.broadcast_to(mask, t.shape), axis=-1, keepdims=True)
    out = xp.where(total > 0, _log_share(t, mask, xp), -xp.log(k))
    return out if mask is None else xp.where(mask, out, -xp.inf)


@x64
@jax.jit
def _mean_log_traced(concentration, mask=None):
    return _mean_log(jnp.asarray(concentration, dtype=jnp.float64), mask, jnp)


@x64
@jax.jit
def _mle_log_traced(counts, mask=None):
    return _mle_log(jnp.asarray(counts, dtype=jnp.float64), mask, jnp)


# Entries of the simplices evaluated at a time on the host (whole simplices, at least one).
_HOST_BLOCK = 1 << 16


def _on_host(fn, values, mask):
    # The same expressions in NumPy: a point estimate of concrete parameters compiles
    # nothing (a first JAX compilation costs a few hundred milliseconds, more than the
    # whole fit and prediction of a small data set). Blocks of whole simplices keep the
    # expressions' temporaries small: at once they would be several copies of the
    # parameters (20 classes x 130 k words: 20 MiB each), where the compiled form fused them.
    a = np.asarray(values, dtype=np.float64)
    if a.ndim == 0 or a.size <= _HOST_BLOCK:
        with np.errstate(divide="ignore", invalid="ignore"):
            return fn(a, None if mask is None else np.asarray(mask), np)
    K = a.shape[-1]
    flat = a.reshape(-1, K)
    m = None if mask is None else np.broadcast_to(np.asarray(mask), a.shape).reshape(-1, K)
    # A (classes, features) matrix is laid out column-major: its transpose, the
    # (features, classes) layout of the sparse products (kernels.log_linear), is then
    # this same memory instead of a second copy of the parameters. The result owns its
    # memory (written through a view), so an estimator can freeze it (kernels.frozen).
    out = np.empty(a.shape, order="F" if a.ndim == 2 else "C")
    rows = out if a.ndim == 2 else out.reshape(-1, K)
    step = max(1, _HOST_BLOCK // max(K, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        for r0 in range(0, flat.shape[0], step):
            rows[r0 : r0 + step] = fn(flat[r0 : r0 + step], None if m is None else m[r0 : r0 + step], np)
    return out


def mean_log(concentration, mask=None):
    r"""Log posterior mean :math:`\log(a_k / \sum_k a_k)` (masked coordinates get ``-inf``).

    NumPy on concrete input, ``jax.numpy`` (compiled) where traced: the same expressions.
    """
    if is_traced(concentration, mask):
        return _mean_log_traced(concentration, mask)
    return _on_host(_mean_log, concentration, mask)


def mle_log(counts, mask=None):
    r"""Log maximum-likelihood probabilities :math:`\log T_k - \log \sum_k T_k`.

    Cells with no observations at all have no maximum-likelihood estimate (0/0); they get
    the uniform distribution over their valid coordinates, which is the limit of the
    posterior mean under :math:`\mathrm{Dir}(\epsilon)` as :math:`\epsilon \to 0`, so the
    MLE is that limit everywhere. Zero counts in an observed cell give ``-inf``.
    NumPy on concrete input, ``jax.numpy`` (compiled) where traced.
    """
    if is_traced(counts, mask):
        return _mle_log_traced(counts, mask)
    return _on_host(_mle_log, counts, mask)


def mode_log(concentration, mask=None):
    r"""Log posterior mode :math:`\log(a_k - 1) - \log \sum_k (a_k - 1)`.

    The mode exists in the interior or on a face of the simplex only when every
    concentration is at least 1; a concentration below 1 makes the density unbounded at
    the boundary, so there is no maximum and a :class:`ValueError` says so. Concentrations
    equal to 1 put that coordinate at zero probability (``-inf``). A cell whose
    concentrations are all exactly 1 is flat, so every point is a mode; it gets the
    uniform distribution (the limit of the modes of :math:`\mathrm{Dir}(1 + \epsilon)`).

    Under ``jax.jit`` / ``jax.grad`` (a traced ``concentration``) the values are not known
    when the function runs, so no error can be raised: the cells with a concentration
    below 1 are NaN instead.

    Raises
    ------
    UndefinedModeError
        A ``ValueError``, if any valid concentration is below 1 (concrete input).
    """
    if is_traced(concentration, mask):
        return _mode_log_traced(concentration, mask)
    a = np.asarray(concentration, dtype=np.float64)
    valid = np.ones(a.shape, bool) if mask is None else np.broadcast_to(mask, a.shape)
    below = valid & (a < 1.0)
    if below.any():
        where = tuple(int(i) for i in np.argwhere(below)[0])
        raise UndefinedModeError(
            "estimate='map' is undefined here: a posterior concentration is "
            f"{a[where]:.4g} < 1 (at index {where}), so the Dirichlet/Beta density is "
            "unbounded at the boundary of the simplex and has no mode. Use prior "
            "concentrations >= 1 (alpha >= 1, class_alpha >= 1) or estimate='mean' / "
            "'predictive'.",
            where,
            float(a[where]),
        )
    return mle_log(a - 1.0, mask)


@x64
@jax.jit
def _mode_log_traced(concentration, mask=None):
    a = jnp.asarray(concentration, dtype=jnp.float64)
    valid = jnp.ones(a.shape, bool) if mask is None else jnp.broadcast_to(mask, a.shape)
    undefined = jnp.any(valid & (a < 1.0), axis=-1, keepdims=True)
    return jnp.where(undefined, jnp.nan, mle_log(a - 1.0, mask))


def sample_log(key, concentration, n, mask=None):
    r"""Exact iid draws from :math:`\mathrm{Dir}(a)`, returned as log probabilities.

    Sampled in log space (normalised log-Gamma variates, :func:`bayesnb.core._sampling.log_gamma`)
    so that small concentrations do not underflow to exact zeros. On concrete inputs the
    variates are NumPy's, seeded from ``key``; under a trace (``jax.jit``, ``vmap``,
    ``grad``) they are ``jax.random.loggamma``'s with the same key: both are exact draws
    from the same Dirichlet, not the same numbers. The callers draw in blocks of a fixed
    size (:func:`bayesnb.core._fitted.draw_block`), so a new number of draws compiles
    nothing on the traced path.

    Parameters
    ----------
    key : jax.random key
    concentration : array of shape (..., K)
    n : int
        Number of draws.
    mask : bool array broadcastable to (..., K), optional

    Returns
    -------
    float64 array of shape (n, ..., K)
        Log probabilities; masked coordinates are ``-inf``. A NumPy array on the host, a
        jax array under a trace.
    """
    if is_traced(key, concentration, mask):
        return _sample_log_traced(key, concentration, n, mask)
    a = np.asarray(concentration, dtype=np.float64)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        a = np.where(mask, a, 1.0)
    shape = (int(n),) + a.shape
    if a.size and a.min() >= 1.0:
        # No coordinate can underflow (a Gamma(a >= 1) variate is 0 with probability
        # ~1e-308): normalised by its plain sum, log G - log sum G, without the
        # exponential of every log variate that log-space normalisation takes (the same
        # variates as log_gamma's; about a sixth of the time of 20 Newsgroups' draws).
        g = _sampling.gamma(key, a, shape)
        if mask is not None:
            g *= mask
        log_total = np.log(g.sum(axis=-1, keepdims=True))
        with np.errstate(divide="ignore"):  # masked coordinates: log 0 = -inf
            np.log(g, out=g)
        g -= log_total
        return g
    g = _sampling.log_gamma(key, a, shape)
    if mask is not None:
        g = np.where(mask, g, -np.inf)
    return _sampling.log_normalize(g)


@x64
@partial(jax.jit, static_argnames="n")
def _sample_log_traced(key, concentration, n, mask=None):
    a = jnp.asarray(concentration, dtype=jnp.float64)
    a = _masked(a, mask, 1.0)
    g = _sampling.log_gamma(key, a, (n,) + a.shape)
    g = _masked(g, mask, -jnp.inf)
    return g - logsumexp(g, axis=-1, keepdims=True)


@x64
@jax.jit
def expected_log(concentration, mask=None):
    r""":math:`E[\log\theta_k] = \psi(a_k) - \psi(\sum_k a_k)` under :math:`\mathrm{Dir}(a)` (masked coordinates ``-inf``).

    The expected log parameters of mean-field variational Bayes: a Dirichlet family's
    expected log-likelihood :math:`E_q[\log p(x \mid \theta)]` is its plug-in
    log-likelihood evaluated at these (unnormalised) log probabilities.
    """
    a = _masked(jnp.asarray(concentration, dtype=jnp.float64), mask, 1.0)
    total = jnp.sum(_masked(a, mask, 0.0), axis=-1, keepdims=True)
    return _masked(jax.scipy.special.digamma(a) - jax.scipy.special.digamma(total), mask, -jnp.inf)


def log_density(concentration, log_probs, mask=None):
    r"""Log density of :math:`\mathrm{Dir}(a)` at :math:`\theta = \exp(\text{log\_probs})`, summed over the batch axes.

    .. math:: \log\Gamma(\textstyle\sum_k a_k) - \sum_k \log\Gamma(a_k) + \sum_k (a_k - 1)\log\theta_k

    (the density on the simplex with respect to the Lebesgue measure of its first
    :math:`K - 1` coordinates). A coordinate with :math:`a_k = 1` contributes no
    :math:`\log\theta_k` term (so :math:`\theta_k = 0` is not ``nan`` there).

    Parameters
    ----------
    concentration : array of shape (..., K)
    log_probs : array broadcastable to (..., K)
    mask : bool array broadcastable to (..., K), optional
        The valid coordinates of padded simplices.

    Returns
    -------
    float
    """
    from scipy.special import gammaln

    a = np.asarray(concentration, dtype=np.float64)
    lp = np.broadcast_to(np.asarray(log_probs, dtype=np.float64), a.shape)
    valid = np.ones(a.shape, bool) if mask is None else np.broadcast_to(mask, a.shape)
    a_valid = np.where(valid, a, 0.0)
    with np.errstate(invalid="ignore"):
        term = np.where(valid & (a != 1.0), (a - 1.0) * np.where(valid, lp, 0.0), 0.0)
    norm = gammaln(a_valid.sum(axis=-1)) - np.where(valid, gammaln(np.where(valid, a, 1.0)), 0.0).sum(axis=-1)
    return float(np.sum(norm) + np.sum(term))
