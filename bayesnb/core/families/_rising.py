r"""Sums of log rising factorials over sparse counts: the Dirichlet-multinomial and negative-binomial predictives as one sparse product of the data's pattern (or of their counts' rows in a table of levels) plus a product over the counts it leaves.

:math:`\sum_j \log\Gamma(a_{cj} + x_{ij}) - \log\Gamma(a_{cj})` for every row and class
is the count part of the exact Dirichlet-multinomial predictive
(:mod:`~bayesnb.core.families.multinomial`) and, with a rate, of the negative-binomial
predictive (:mod:`~bayesnb.core.families.poisson`). Computed on the host (NumPy, SciPy's
sparse product on threads); the traced form is ``kernels.sum_log_rising_jax``.
"""

from __future__ import annotations

import threading
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from bayesnb.core._special import log_rising_factorial_np as _log_rising_np
from bayesnb.core._special import log_rising_over_factorial_np
from bayesnb.core._special import small_counts
from bayesnb.core.kernels import (
    ParamCache,
    csr_row_sums,
    csr_rows_product,
    entry_blocks,
    map_threads,
    num_threads,
    repeated_entries,
    repeated_entries_checkable,
    summed,
)

__all__ = ["sum_log_rising", "concentration_totals", "refuse_unrepresentable", "count_vector_rows", "COUNT_FORM_FROM"]

# Rows of more counts than this get their predictive from the count-vector form
# (count_vector_rows): the sequence form, rounded to about eps * n log n, would lose
# more than 1e-9 of the class posteriors.
COUNT_FORM_FROM = 2.0**20

# Integer counts from 2 up to this value (the largest uint8) read their part of the
# predictive from a per-posterior table (see _excess_table); larger or non-integer values
# are evaluated directly.
_TABLE_MAX = 255
# The table holds at most max(_TABLE_PER_PARAMETER x a.size, _TABLE_MIN_VALUES) values:
# past that, every feature's depth is clipped at one level (see _depths), and deeper
# counts are evaluated directly. Real text stays well inside (20 Newsgroups' test set
# needs 94 k rows of 20 classes against the 260 k this allows; long documents 10 k rows
# of 2 classes); counts that are large for every feature do not build a table many
# times the size of the posterior.
_TABLE_PER_PARAMETER = 2
_TABLE_MIN_VALUES = 1 << 20

# Where counts other than 1 are common (long documents: 41 % of their entries) and the
# posterior is small, the first product reads a table of levels instead of ``log a``:
# row ``x * n_features + j`` holds the whole count term of feature ``j`` at count ``x``
# (level 0 zeros; see _level_table), so the entries up to its depth need no correction
# at all. The budget allows _LEVEL_VALUES values (and at most _TABLE_MAX levels); the
# levels are used only where it allows _LEVELS_MIN (shallower, too many counts would
# fall past them).
_LEVEL_VALUES = 1 << 19
_LEVELS_MIN = 8
# ... and only where at least one in _LEVEL_SHARE of the stored values differs from 1,
# in a sample of about _LEVEL_SAMPLE values evenly spread over the matrix. Below that
# share, the product of the pattern and a correction over the few other entries costs
# less than a table row for every entry (SMS: 7 % of values other than 1). A call reads
# the levels up to the sample's largest count (within the budget).
_LEVEL_SHARE = 8
_LEVEL_SAMPLE = 1 << 12
# ... and only for calls with at least this many stored entries per value of the
# posterior: a few rows (one per call in a loop over folds or draws, each with its own
# posterior) would pay for a table of levels many times their own size.
_LEVEL_ENTRIES_PER_VALUE = 1


# Stored entries per block of rows in ``sum_log_rising``: bounds the scratch arrays of a
# block (positions, features and table rows of its entries other than 1; with the
# levels, the table row of every entry).
_BLOCK = 1 << 19
_MIN_BLOCK = 1 << 16
# Two blocks per thread: the calling thread and the pool's share them from one queue
# (kernels.map_threads), so one slowed thread takes fewer. On 20 Newsgroups' test set
# two per thread timed 1.05-1.13x scikit-learn, four 0.97-0.99x, one 0.76-1.12x.
_BLOCKS_PER_THREAD = 2
# Entries per chunk of the direct (non-tabled) evaluation, whose scratch is
# (entries x classes) floats.
_DIRECT_CHUNK = 1 << 15
# Directly evaluated entries stay in a block's correction product, at the table's row of
# zeros, while they are at most one in this many of its entries other than 1 (taking them
# out is a pass over all of them: 20 Newsgroups' test set has 25 of 320 k).
_DIRECT_KEPT = 8


class _Excess(NamedTuple):
    """One snapshot of a posterior's table (:func:`_excess_table`): counts ``2 ..
    depth[j]`` of feature ``j`` are tabled; ``clip`` is the deepest level the table's
    budget allowed (``_TABLE_MAX`` unless clipped; every depth is at most ``clip``)."""

    depth: np.ndarray  # uint8, (n_features,)
    clip: int
    table: np.ndarray  # (1 + rows, n_classes)
    rank: np.ndarray
    start: np.ndarray


def _covers(excess, xmax):
    """Whether the table snapshot ``excess`` (or ``None``) covers the deepest counts
    ``xmax`` per feature (counts past its ``clip`` are evaluated directly)."""
    if excess is None:
        return False
    if excess.clip < _TABLE_MAX:
        xmax = np.minimum(xmax, excess.clip)
    return bool(np.all(xmax <= excess.depth))


def _covers_entries(excess, cols, counts):
    """:func:`_covers` for a block's entries (features ``cols``, uint8 ``counts``, 0 where
    untabled): one gather and compare, no per-feature maximum."""
    if excess is None:
        return False
    if excess.clip < _TABLE_MAX:
        counts = np.minimum(counts, excess.clip)
    return bool(np.all(np.take(excess.depth, cols) >= counts))


def _depths(need, n_classes, max_clip=_TABLE_MAX):
    """The table's per-feature depths for the deepest counts ``need`` (uint8, per
    feature), and its clip level: ``need`` itself where the rows fit the budget, else
    ``min(need, clip)`` with the deepest ``clip`` that fits, and never above ``max_clip``
    (the clip of the table it replaces: see :meth:`_PredictiveTables.grown`)."""
    budget = max(_TABLE_PER_PARAMETER * need.size, _TABLE_MIN_VALUES // max(n_classes, 1))
    levels = np.arange(_TABLE_MAX + 1)
    features_at = np.bincount(need, minlength=_TABLE_MAX + 1)
    # rows[d]: the table's rows with every depth clipped at d, sum_k features_at[k] * (min(k, d) - 1)+.
    rows = features_at @ np.maximum(np.minimum.outer(levels, levels) - 1, 0)
    clip = min(int(np.flatnonzero(rows <= budget)[-1]), max_clip)  # rows[0] = rows[1] = 0
    depth = need if clip == _TABLE_MAX else np.minimum(need, clip).astype(np.uint8)
    return depth, clip


def _excess_table(a, depth, shift=None):
    r"""The part of the log rising factorial that the product of the data's entries with
    ``log a - shift`` leaves out, for every tabled (feature, count):
    :math:`T_c(j, x) = \sum_{m=1}^{x-1} \left[\log(a_{cj} + m) - s_{cj}\right]`, so that
    :math:`\log a_{cj} - s_{cj} + T_c(j, x) = \log\Gamma(a_{cj} + x) - \log\Gamma(a_{cj}) - x s_{cj}`
    (``shift`` :math:`s`, ``(n_classes, n_features)``, is :math:`\log(1 + b)` for the
    negative binomial with rate :math:`b`, else zero).

    The features with some tabled count are ranked by their depth (deepest first), so
    that the features reaching level ``m`` are a prefix of that order and each level is
    one contiguous slice: the running sums over ``m`` are updated in place and written
    out as consecutive rows. The row of feature ``j`` at count ``x >= 2`` is
    ``start[x] + rank[j]``; row 0 is zeros (entries of count 1 and entries evaluated
    directly point nowhere). A product of the data's entries of counts >= 2 with this
    table (value 1, pointing at their rows) adds their whole remainder.

    Returns
    -------
    table : ndarray of shape (1 + n_tabled, n_classes)
    rank : int ndarray of shape (n_features,)
    start : int ndarray of shape (max depth + 1,)
    """
    depth = np.asarray(depth, dtype=np.intp)
    cols = np.flatnonzero(depth >= 2)
    cols = cols[np.argsort(-depth[cols], kind="stable")]
    deep = depth[cols]
    rank = np.zeros(depth.shape[0], dtype=np.intp)
    rank[cols] = np.arange(cols.size)
    top = int(deep[0]) if cols.size else 1
    # k[m]: number of features with depth > m, for the levels m = 1 .. top - 1 (count m + 1).
    k = np.searchsorted(-deep, -np.arange(top), side="left")
    start = np.zeros(top + 1, dtype=np.intp)
    start[2:] = 1 + np.concatenate([[0], np.cumsum(k[1:-1])]) if top >= 2 else []
    n_rows = 1 + int(k[1:].sum())
    table = np.empty((n_rows, a.shape[0]))
    # Row numbers as small as the table allows: the correction keeps one per entry.
    index = np.int32 if n_rows < 2**31 else np.intp
    rank, start = rank.astype(index), start.astype(index)
    table[0] = 0.0
    a_sub = np.ascontiguousarray(np.take(a, cols, axis=1).T)
    shift_sub = None if shift is None else np.ascontiguousarray(np.take(shift, cols, axis=1).T)
    running = np.zeros_like(a_sub)
    step = np.empty_like(a_sub)
    for m in range(1, top):
        km = k[m]
        np.add(a_sub[:km], m, out=step[:km])
        np.log(step[:km], out=step[:km])
        if shift_sub is not None:
            step[:km] -= shift_sub[:km]
        running[:km] += step[:km]
        table[start[m + 1] : start[m + 1] + km] = running[:km]
    return table, rank, start


def _level_table(a, levels, log_a_t, shift_t=None, start=None):
    r"""The whole count term of every feature at every count up to ``levels``:
    :math:`L_c(j, x) = \log\Gamma(a_{cj} + x) - \log\Gamma(a_{cj}) - x s_{cj}` at row
    ``x * n_features + j``, for ``x = 0 .. levels``.

    Level 0 is zeros (stored zeros add nothing); level 1 is ``log_a_t``
    (:math:`\log a - s`, the first product's table) itself; each next level adds
    :math:`\log(a + m) - s` to the one before, as :func:`_excess_table` sums its rows. A
    product of the data's entries (value 1) pointing at the rows of their (feature,
    count) adds their whole count term in one pass. ``start``, a shallower table of the
    same posterior, is copied and continued: the rows are the same numbers however the
    table was grown.

    Returns
    -------
    ndarray of shape ((levels + 1) * n_features, n_classes)
    """
    n_features, n_classes = log_a_t.shape
    table = np.empty((levels + 1, n_features, n_classes))
    if start is None:
        table[0] = 0.0
        table[1] = log_a_t
        done = 1
    else:
        done = start.shape[0] // n_features - 1
        table[: done + 1] = start.reshape(done + 1, n_features, n_classes)
    a_t = np.ascontiguousarray(a.T)
    step = np.empty_like(a_t)
    for m in range(done, levels):
        np.add(a_t, m, out=step)
        np.log(step, out=step)
        if shift_t is not None:
            step -= shift_t
        np.add(table[m], step, out=table[m + 1])
    return table.reshape((levels + 1) * n_features, n_classes)


class _PredictiveTables:
    """Per-posterior parts of the predictive: ``log a`` (minus ``shift = log1p(rate)``
    where a negative-binomial rate is given) laid out (features, classes), C-contiguous
    (the layout scipy's sparse product reads), ``shift`` in the same layout, and the table
    of counts >= 2, grown to the deepest count seen so far for each feature.

    The table is shared by every caller with this posterior, threads included. It is
    only ever replaced whole (``excess``, an :class:`_Excess`), and a call works with one
    snapshot of it throughout: a table grown by another call in the meantime ranks its
    rows differently.
    """

    def __init__(self, a, rate=None):
        self.log_a_t = np.log(a.T, out=np.empty(a.shape[::-1]))
        self.shift = self.shift_t = None
        if rate is not None:
            self.shift = np.log1p(np.asarray(rate, dtype=np.float64))
            self.shift_t = np.ascontiguousarray(self.shift.T)
            self.log_a_t -= self.shift_t
        self.excess = None
        self.levels = None  # the table of levels (_level_table), once a call reads it
        self.total = None  # a.sum(axis=1), where asked for
        self._grow = threading.Lock()

    def leveled(self, a, depth):
        """The table of levels (:func:`_level_table`) at least ``depth`` deep, grown here
        if needed. Replaced whole, never written after it is made: a snapshot stays valid,
        and its rows are those of any deeper table."""
        with self._grow:
            table = self.levels
            if table is None or table.shape[0] // a.shape[1] - 1 < depth:
                table = _level_table(a, depth, self.log_a_t, self.shift_t, table)
                self.levels = table
            return table

    def grown(self, a, xmax):
        """A snapshot of the table covering ``xmax`` (and all it covered before), grown
        here if needed; two threads growing at once keep both their counts."""
        with self._grow:
            cached = self.excess
            if _covers(cached, xmax):
                return cached
            need = xmax if cached is None else np.maximum(xmax, cached.depth)
            # The clip never rises: an entry the old table covered (tabled, or past its
            # clip and so evaluated directly) is then covered by the new one, which the
            # blocks prepared on an older snapshot and read again rely on. (A higher clip
            # would table counts that the old depths, capped at the old clip, never
            # reached: their rows would not exist.)
            depth, clip = _depths(need, a.shape[0], _TABLE_MAX if cached is None else cached.clip)
            cached = _Excess(depth, clip, *_excess_table(a, depth, self.shift))
            self.excess = cached
            return cached


# Reused across calls with the same (unchanged) posterior, e.g. an estimator's.
_TABLES = ParamCache(size=2)


def _tables(a, rate=None):
    if rate is None:
        return _TABLES.get((a,), "dirichlet-multinomial", lambda: _PredictiveTables(a))
    return _TABLES.get((a, rate), "negative-binomial", lambda: _PredictiveTables(a, rate))


def refuse_unrepresentable(out, totals, what):
    r"""Refuse rows whose predictive float64 cannot hold: a count total past the float64
    range, or a log-probability beyond it (about :math:`-n \log n` for huge counts).

    Parameters
    ----------
    out : ndarray of shape (n_samples, n_classes)
        The predictive's values.
    totals : ndarray of shape (n_samples,)
        The rows' totals.
    what : str
        The predictive, for the message.
    """
    bad = ~np.isfinite(totals)
    if not bad.any() and np.isfinite(out).all():  # the common case: one pass
        return
    # Only rows of huge counts (past COUNT_FORM_FROM) can leave float64 through their
    # size; a small row's non-finite value comes from its concentrations (a caller's
    # downdate past zero, say) and is passed on as it is, not blamed on the counts.
    bad |= ~(totals <= COUNT_FORM_FROM) & ~np.isfinite(out).all(axis=1)
    if not bad.any():
        return
    r = int(np.argmax(bad))
    raise ValueError(
        f"X row {r} holds {totals[r]:.6g} counts in all: {what} of such counts is beyond "
        f"the float64 range (a total of at most 1.8e308, and a log-probability of about "
        f"-n log n above -1.8e308); {int(bad.sum())} row(s) cannot be represented (rescale "
        "the counts, or use a plug-in estimate such as estimate='mean')"
    )


def count_vector_rows(a, X, rows, rate=None):
    r"""The count-vector terms of rows ``rows`` of ``X``, accurate for huge counts.

    .. math:: \sum_j \log\frac{\Gamma(a_{cj} + x_j)}{\Gamma(a_{cj})\, x_j!} - x_j \log(1 + b_{cj})

    (the last term where ``rate`` :math:`b` is given): :func:`sum_log_rising` less
    :math:`\sum_j \log x_j!`, which is the same for every class, evaluated without the
    cancellation of the two :math:`x \log x` parts
    (:func:`~bayesnb.core._special.log_rising_over_factorial_np`). With a rate, the part
    :math:`x_j \log(1 + \min_c b_{cj})` common to the classes is returned apart
    (``common``), so that classes of equal rates do not differ by the rounding of
    :math:`x \log(1 + b)` (about :math:`\epsilon x`). Entry by entry: for the few rows
    long enough to need it (:data:`COUNT_FORM_FROM`).

    Parameters
    ----------
    a : ndarray of shape (n_classes, n_features)
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        Non-negative counts.
    rows : int ndarray
    rate : ndarray of shape (n_classes, n_features), optional

    Returns
    -------
    terms : ndarray of shape (len(rows), n_classes)
        The sum less ``common``.
    common : ndarray of shape (len(rows),)
        Zeros without a rate.
    log_coefficient : ndarray of shape (len(rows),)
        The log multinomial coefficient :math:`\log n! - \sum_j \log x_j!` of each row,
        summed as :math:`\sum_k \log\binom{s_k}{x_k}` over the running totals
        :math:`s_k` (each term without cancellation): what turns the count-vector form
        of the Dirichlet-multinomial into the sequence form.
    """
    sub = sp.csr_matrix(X[rows]) if not sp.issparse(X) else sp.csr_matrix(X.tocsr()[rows], copy=True)
    sub.sum_duplicates()
    out = np.zeros((len(rows), a.shape[0]))
    common = np.zeros(len(rows))
    log_coefficient = np.zeros(len(rows))
    if rate is not None:
        low = rate.min(axis=0)
        # log1p(b) - log1p(low), exactly 0 where a class's rate is the lowest.
        excess = np.log1p((rate - low) / (1.0 + low))
        log1p_low = np.log1p(low)
    # Sums past the float64 range are inf (or NaN): refused by name by the callers
    # (refuse_unrepresentable), not warned about here.
    with np.errstate(over="ignore", invalid="ignore"):
        for i in range(sub.shape[0]):
            cols = sub.indices[sub.indptr[i] : sub.indptr[i + 1]]
            vals = sub.data[sub.indptr[i] : sub.indptr[i + 1]].astype(np.float64)
            terms = log_rising_over_factorial_np(a[:, cols], vals)
            if rate is not None:
                terms -= vals * excess[:, cols]
                common[i] = vals @ log1p_low[cols]
            out[i] = terms.sum(axis=1)
            # log binom(s, x) = log Gamma(s + 1) / (Gamma(s - x + 1) x!), s the running total.
            before = np.cumsum(vals) - vals
            log_coefficient[i] = log_rising_over_factorial_np(before + 1.0, vals).sum()
    return out, common, log_coefficient


def concentration_totals(a):
    """``a.sum(axis=1)``, kept with the predictive's tables while ``a`` is unchanged (a
    pass over every parameter, as long as the product for a batch of a few rows)."""
    tables = _tables(a)
    if tables.total is None:
        tables.total = a.sum(axis=1)
    return tables.total


# Values 1.0 for the products (one per stored entry), shared by all calls and grown when
# a block needs more; never written after it is made.
_ONES = np.ones(0)


def _ones(n):
    global _ONES
    ones = _ONES
    if ones.size < n:
        ones = np.ones(max(n, 2 * ones.size))
        _ONES = ones
    return ones[:n]


# A block's first pass found an entry stored twice (see sum_log_rising).
_REPEATED = object()


def sum_log_rising(a, X, rate=None, row_totals=None):
    r""":math:`\sum_j \log\Gamma(a_{cj} + x_{ij}) - \log\Gamma(a_{cj})` for every row and class
    (minus :math:`\sum_j x_{ij} \log(1 + b_{cj})` where ``rate`` :math:`b` is given: the
    count terms of the negative-binomial predictive).

    Every stored entry :math:`x \ne 0` contributes :math:`\log a - s` plus a remainder
    that is zero at :math:`x = 1`, the bulk of text counts (:math:`s = \log(1 + b)` or
    0). The first term is one sparse product of the data's pattern (values 1: nothing of
    the data is converted or copied) with :math:`\log a - s`. The remainder of integer
    counts from 2 to ``_TABLE_MAX`` is read from a table of the (feature, count) pairs
    needed (:func:`_excess_table`, kept for the posterior while it is unchanged and
    grown when deeper counts come), by a second sparse product over those entries
    alone, added to the first; larger or fractional values, and stored zeros, add theirs
    directly.

    Where counts other than 1 are common and the posterior small (long documents), the
    first product instead points every entry at the row of its count in a table of the
    whole count terms up to some depth (:func:`_level_table`, :func:`_level_rows`; see
    :func:`_levels` for the choice): only the entries it puts at level 1 (deeper counts,
    fractions) go on to the second product and the direct terms, as above.

    Two passes over blocks of rows, each on threads: the first products with the scan
    for the entries they leave a remainder of, then the corrections. Each pass reads one
    table (``log a`` or the levels, then the remainder): alternating them block by block
    would keep both in the cache at once. The terms of an entry are not additive in its
    count, so an entry stored twice (a non-canonical CSR matrix) must be summed first:
    the first pass looks for such entries in its block where the matrix is not known to
    be canonical, and if one is found the call starts again on a summed copy (the
    caller's matrix is not altered).

    Parameters
    ----------
    a : ndarray of shape (n_classes, n_features)
        Positive concentrations.
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        Non-negative counts.
    rate : ndarray of shape (n_classes, n_features), optional
        The Gamma posterior's rate (the negative-binomial predictive).
    row_totals : ndarray of shape (n_samples,), optional
        Filled with the rows' totals of ``X`` (document lengths) by the first pass, which
        reads the values anyway.

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
    """
    X = sp.csr_matrix(X) if not sp.issparse(X) else X.tocsr()
    if X.shape[1] != a.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features, the concentrations {a.shape[1]}")
    check = not X.has_canonical_format
    if check and not repeated_entries_checkable(X):
        X, check = summed(X), False
    n, n_features = X.shape
    tables = _tables(a, rate)
    integral = X.dtype.kind in "iub"
    # Counts 0 .. levels read from the table of levels; None: the pattern with log a - s.
    levels = _levels(a, X)
    first_table = tables.log_a_t if levels is None else tables.leveled(a, levels)
    indptr = X.indptr
    # _BLOCKS_PER_THREAD blocks per thread, of at most _BLOCK entries (the scratch bound)
    # and at least _MIN_BLOCK.
    block = max(_MIN_BLOCK, min(_BLOCK, -(-X.nnz // (_BLOCKS_PER_THREAD * num_threads()))))
    blocks = entry_blocks(indptr, block)
    out = np.empty((n, a.shape[0]))
    # Each row is computed within one block, in the same order whatever the blocks: the
    # result does not depend on the number of threads (numpy's ufuncs and scipy's
    # product release the GIL).
    # One snapshot of the cached table for the first pass (see _PredictiveTables).
    snapshot = tables.excess

    def first(rb):
        return _first_pass(X, *rb, first_table, levels, snapshot, out, check, integral, row_totals)

    jobs = map_threads(first, blocks)
    if any(job is _REPEATED for job in jobs):
        return sum_log_rising(a, summed(X), rate, row_totals)
    pending = [(rb, job) for rb, job in zip(blocks, jobs) if job is not None]
    if not pending:
        return out
    excess = snapshot
    if any(isinstance(job, _Scan) for _, job in pending):
        # Counts deeper than the snapshot: the table is grown once for all of them.
        xmax = np.zeros(n_features, dtype=np.uint8)
        for _, job in pending:
            if isinstance(job, _Scan):
                # Same dtype as the counts: ufunc.at then takes its fast path (mixed dtypes: 30x slower).
                np.maximum.at(xmax, job.cols, job.counts)
        excess = tables.grown(a, xmax)

    def correct(item):
        (r0, r1), job = item
        if isinstance(job, _Correction) and job.excess is not excess:
            job = _scan(X, r0, r1, integral, levels)  # its rows index an older table: read the block again
        if isinstance(job, _Scan):
            job = _correction(X, r0, r1, job, excess)
        _add_correction(r0, r1, job, a, tables, out)

    map_threads(correct, pending)
    return out


class _Scan(NamedTuple):
    """The entries of a block with a non-zero remainder after the first product (values
    other than 1; with the levels, those put at level 1)."""

    pos: np.ndarray  # positions in the block
    cols: np.ndarray  # features
    counts: np.ndarray  # uint8 counts; 0 where the remainder is evaluated directly
    vals: np.ndarray
    direct: bool  # whether some are evaluated directly


class _Correction(NamedTuple):
    """A block's tabled entries as a CSR matrix over the rows of the table snapshot
    ``excess``, and its untabled values as (row in block, feature, value), if any."""

    indptr: np.ndarray
    rows: np.ndarray
    direct: tuple | None
    excess: _Excess


def _first_pass(X, r0, r1, first_table, levels, snapshot, out, check, integral, row_totals):
    """Rows ``r0:r1``: the first product into ``out`` (their pattern with ``log a - s``,
    ``first_table``, where ``levels`` is None; or every entry at the row of its count in
    the table of levels 0 .. ``levels``, :func:`_level_rows`), and the scan for the
    entries it leaves a remainder of: ``None`` where there are none, their
    :class:`_Correction` where the table ``snapshot`` covers them, else the
    :class:`_Scan` (the table is grown first).
    ``_REPEATED`` where ``check`` finds an entry stored twice. The rows' totals go to
    ``row_totals`` where given."""
    if check and repeated_entries(X, r0, r1):
        return _REPEATED
    s, e = X.indptr[r0], X.indptr[r1]
    pos = None
    if levels is None:
        rows = X.indices[s:e]
    else:
        rows, pos = _level_rows(X.data[s:e], X.indices[s:e], levels, X.shape[1], X.indptr.dtype)
    csr_rows_product(X.indptr[r0 : r1 + 1] - s, rows, _ones(e - s), first_table, out[r0:r1])
    del rows
    if row_totals is not None:
        csr_row_sums(X.indptr[r0 : r1 + 1], X.data, row_totals[r0:r1])
    scan = _scan(X, r0, r1, integral, levels, pos)
    if scan is None:
        return None
    # Kept until the second pass: the compact form where the table is ready (every call
    # after the first with a posterior), the scan otherwise.
    if _covers_entries(snapshot, scan.cols, scan.counts):
        return _correction(X, r0, r1, scan, snapshot)
    return scan


def _levels(a, X):
    """How many levels of the table of levels this call's first product reads (see
    ``_LEVEL_VALUES``, ``_LEVEL_SHARE``, ``_LEVEL_ENTRIES_PER_VALUE``), or ``None`` (the
    pattern with ``log a - s``). Decided from the posterior's size and the call's data
    alone (never from the blocks, the threads or what the cache holds): a row's value
    is the same, to the bit, in any call that reads the same levels; between calls that
    read other levels or none (a batch of mostly 1s, a few rows, a shallower sample),
    some of its terms are summed in another order (last bits)."""
    if not a.size or not X.nnz or X.nnz < _LEVEL_ENTRIES_PER_VALUE * a.size:
        return None
    budget = min(_TABLE_MAX, _LEVEL_VALUES // a.size)
    if budget < _LEVELS_MIN:
        return None
    sample = X.data[:: -(-X.nnz // _LEVEL_SAMPLE)]
    if np.count_nonzero(sample != 1) * _LEVEL_SHARE < sample.size:
        return None
    levels = min(budget, float(sample.max()))
    return int(levels) if levels >= 2 else None


def _level_counts(v, levels, dtype=np.int32):
    """The values ``v`` cast to ``dtype``, and the positions of those that are not an
    integer count from 0 to ``levels`` (fractions, deeper counts): :func:`small_counts`."""
    counts, ok = small_counts(v, levels, dtype)
    return counts, np.flatnonzero(~ok)


def _level_rows(v, cols, levels, n_features, dtype=np.int32):
    """The row of each entry (values ``v``, features ``cols``) in the table of levels
    0 .. ``levels`` (:func:`_level_table`): ``x * n_features + j`` for the integer counts
    ``0 <= x <= levels``; the others (fractions, deeper counts) are put at level 1 and
    their positions returned, for the correction.

    Returns
    -------
    rows : ndarray of shape (n_entries,), of ``dtype`` (the matrix's index dtype)
    pos : int ndarray, the positions of the entries put at level 1
    """
    rows, pos = _level_counts(v, levels, dtype)
    rows *= n_features
    np.add(rows, cols, out=rows, casting="unsafe")  # < (levels + 1) * n_features: no overflow
    rows[pos] = n_features + np.take(cols, pos)
    return rows, pos


def _scan(X, r0, r1, integral, levels=None, pos=None):
    """The entries of rows ``r0:r1`` that the first product leaves a remainder of
    (:class:`_Scan`), or ``None``: those other than 1 (``levels`` None: the pattern), or
    those put at level 1 of the table of levels (``pos``, found by :func:`_level_rows`
    where not given)."""
    s, e = X.indptr[r0], X.indptr[r1]
    v = X.data[s:e]
    if pos is None:
        if levels is None:
            pos = np.flatnonzero(v != 1)
        else:
            pos = _level_counts(v, levels)[1]
    if not pos.size:
        return None
    vals = np.take(v, pos)
    cols = np.take(X.indices[s:e], pos)
    tabled = (vals >= 2) & (vals <= _TABLE_MAX)
    if not integral:
        tabled &= vals == np.floor(vals)
    if tabled.all():
        return _Scan(pos, cols, vals.astype(np.uint8), vals, False)
    # Stored zeros, fractions and counts above the table: evaluated directly.
    return _Scan(pos, cols, np.where(tabled, vals, 0).astype(np.uint8), vals, True)


def _correction(X, r0, r1, scan, excess):
    """The :class:`_Correction` of a scanned block, on the table snapshot ``excess``."""
    local = X.indptr[r0 : r1 + 1] - X.indptr[r0]
    pos, cols, counts, direct = scan.pos, scan.cols, scan.counts, None
    untabled = scan.direct
    if excess.clip < _TABLE_MAX and (counts > excess.clip).any():
        # A clipped table: deeper counts are evaluated directly (the scan is kept as it is,
        # for a later snapshot).
        counts = np.where(counts > excess.clip, 0, counts).astype(np.uint8)
        untabled = True
    d = None
    if untabled:
        d = np.flatnonzero(counts == 0)
        direct = (np.searchsorted(local, pos[d], side="right") - 1, cols[d], scan.vals[d].astype(np.float64))
        if d.size > pos.size // _DIRECT_KEPT:
            tabled = counts != 0
            pos, cols, counts, d = pos[tabled], cols[tabled], counts[tabled], None
    rows = excess.start[counts]
    rows += excess.rank[cols]
    if d is not None:
        rows[d] = 0  # few: kept in the product, at the table's row of zeros
    if rows.size >= 2**31:  # a block of one row longer than int32 can count
        rows = rows.astype(np.intp)
    return _Correction(np.searchsorted(pos, local).astype(rows.dtype), rows, direct, excess)


def _add_correction(r0, r1, corr, a, tables, out):
    """Adds the remainder of a block's entries other than 1 to ``out[r0:r1]``: one sparse
    product of the tabled ones (value 1) with the table rows of their (feature, count),
    then the directly evaluated remainder of the others."""
    csr_rows_product(corr.indptr, corr.rows, _ones(corr.rows.size), corr.excess.table, out[r0:r1], accumulate=True)
    if corr.direct is None:
        return
    r, c, v = corr.direct
    # Chunks end where a row ends, except in a row of more than _DIRECT_CHUNK entries, cut
    # at multiples of _DIRECT_CHUNK from its own first entry: each row's terms are summed
    # in the same groups whatever the block it falls in (and so the number of threads).
    m, c0 = r.size, 0
    while c0 < m:
        c1 = min(c0 + _DIRECT_CHUNK, m)
        if c1 < m and r[c1] == r[c1 - 1]:
            row_first = int(np.searchsorted(r, r[c1], side="left"))
            if row_first > c0:
                c1 = row_first
        rc, cc, vc = r[c0:c1], c[c0:c1], v[c0:c1]
        # log G(a + x) - log G(a) - x s, less the log a - s the first product added.
        terms = _log_rising_np(np.take(a, cc, axis=1).T, vc[:, None])
        terms -= np.take(tables.log_a_t, cc, axis=0)
        if tables.shift_t is not None:
            terms -= vc[:, None] * np.take(tables.shift_t, cc, axis=0)
        starts = np.flatnonzero(np.r_[True, rc[1:] != rc[:-1]])
        out[r0 + rc[starts]] += np.add.reduceat(terms, starts, axis=0)
        c0 = c1
