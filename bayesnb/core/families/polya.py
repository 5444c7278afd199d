r"""Pólya (Dirichlet-compound-multinomial) family: bursty word counts.

Each document of class :math:`c` draws its own word distribution
:math:`\theta_d \sim \mathrm{Dir}(\alpha_c)` and then its :math:`n_d` tokens from
:math:`\mathrm{Cat}(\theta_d)` (Madsen, Kauchak & Elkan 2005). With :math:`\theta_d`
integrated out, a document's class-conditional probability is the Dirichlet-multinomial
(sequence form, without the multinomial coefficient, which is the same under every
class):

.. math::

    \log p(x \mid y=c, \alpha) = \sum_j \big[\log\Gamma(\alpha_{cj} + x_j) - \log\Gamma(\alpha_{cj})\big]
        - \big[\log\Gamma(A_c + n) - \log\Gamma(A_c)\big], \quad A_c = \sum_j \alpha_{cj}.

A word that occurs once in a document makes its next occurrence more likely: the
multinomial's "every occurrence is independent evidence" is replaced by a model in which
repeats are expected, the cause of naive Bayes' overconfidence on text.

The concentration :math:`\alpha` is the family's only global parameter (the
:math:`\theta_d` are each document's own): the *prior* pytree :class:`Polya` holds it,
and the "posterior" is the same value (no global latent is updated by the data; the
estimator learns :math:`\alpha` by maximising :func:`log_evidence`, the likelihood of
:math:`\alpha`). So the predictive of a new document is exact, and the draws that
``family.sample`` makes are of a new document's :math:`\theta \sim \mathrm{Dir}(\alpha_c)`
(whose average multinomial likelihood is the predictive), not of posterior uncertainty.

The statistics keep what the evidence needs exactly (Minka 2000's sufficient
statistics of the Pólya distribution): the weight of every (class, word, count) triple
and of every (class, document length) pair, aggregated and sorted so that they merge
additively (``fit = partial_fit = merge of shards``).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from bayesnb.core._special import log_rising_factorial, log_rising_factorial_np
from bayesnb.core._x64 import x64
from bayesnb.core.families import _dirichlet, _mask, multinomial
from bayesnb.core.families.protocol import Family, register
from bayesnb.core.kernels import host, is_traced, summed
from bayesnb.core.stats import count_stats

__all__ = [
    "Polya",
    "PolyaStats",
    "family",
    "from_mean",
    "log_evidence",
    "log_predictive",
    "loo_log_predictive",
    "loo_point_log_likelihood",
    "loo_precision",
    "polya_stats",
    "precision_objective",
    "smoothed_mean",
]


class Polya(NamedTuple):
    r"""The Dirichlet of a document's word distribution, per class.

    Attributes
    ----------
    concentration : ndarray of shape (n_classes, n_features)
        :math:`\alpha_{cj} > 0`.
    """

    concentration: np.ndarray


class PolyaStats(NamedTuple):
    r"""Sufficient statistics of the Pólya likelihood (aggregated, sorted triples).

    Attributes
    ----------
    class_count : ndarray of shape (n_classes,)
        :math:`N_c`.
    feature_count : ndarray of shape (n_classes, n_features)
        :math:`T_{cj}`, the weighted word totals (for the mean of :math:`\alpha_c`).
    pair_class, pair_feature : int ndarrays of shape (n_pairs,)
    pair_value, pair_weight : ndarrays of shape (n_pairs,)
        Total weight of the documents of class ``pair_class`` in which word
        ``pair_feature`` occurs ``pair_value`` (> 0) times; sorted by (class, word,
        value), weights > 0.
    length_class : int ndarray of shape (n_lengths,)
    length_value, length_weight : ndarrays of shape (n_lengths,)
        Total weight of the documents of class ``length_class`` of length
        ``length_value`` (> 0); sorted, weights > 0.
    """

    #: The fields with the class axis first (the others are flat lists of entries).
    TABLE_FIELDS = ("class_count", "feature_count")

    class_count: np.ndarray
    feature_count: np.ndarray
    pair_class: np.ndarray
    pair_feature: np.ndarray
    pair_value: np.ndarray
    pair_weight: np.ndarray
    length_class: np.ndarray
    length_value: np.ndarray
    length_weight: np.ndarray

    def merge(self, other):
        """Statistics of the union of two disjoint sets of rows."""
        pairs = _aggregate(
            (np.concatenate([self.pair_class, other.pair_class]), np.concatenate([self.pair_feature, other.pair_feature]),
             np.concatenate([self.pair_value, other.pair_value])),
            np.concatenate([self.pair_weight, other.pair_weight]),
        )
        lengths = _aggregate(
            (np.concatenate([self.length_class, other.length_class]), np.concatenate([self.length_value, other.length_value])),
            np.concatenate([self.length_weight, other.length_weight]),
        )
        return PolyaStats(
            np.asarray(self.class_count) + np.asarray(other.class_count),
            np.asarray(self.feature_count) + np.asarray(other.feature_count),
            *pairs,
            *lengths,
        )


def _aggregate(keys, weight):
    """Unique sorted key tuples with their summed weights, zero totals dropped.

    The last key is a value (float64), the others indices (intp).
    """
    keys = [np.asarray(k) for k in keys]
    weight = np.asarray(weight, dtype=np.float64)
    order = np.lexsort(keys[::-1])
    keys, weight = [k[order] for k in keys], weight[order]
    change = np.ones(weight.size, bool)
    if weight.size:
        change[1:] = False
        for k in keys:
            change[1:] |= k[1:] != k[:-1]
    starts = np.flatnonzero(change)
    total = np.add.reduceat(weight, starts) if weight.size else weight
    # A total of exactly zero is no document (rows of weight 0).
    keep = total != 0.0
    out = [np.asarray(k[starts][keep], dtype=np.intp) for k in keys[:-1]]
    return (*out, np.asarray(keys[-1][starts][keep], dtype=np.float64), total[keep])


def polya_stats(X, y_index, n_classes, weight=None):
    """Pólya statistics of non-negative count rows (dense or CSR, never densified).

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
    y_index : int ndarray of shape (n_samples,)
    n_classes : int
    weight : ndarray of shape (n_samples,), optional

    Returns
    -------
    PolyaStats
    """
    base = count_stats(X, y_index, n_classes, weight)
    y_index = np.asarray(y_index, dtype=np.intp)
    w = np.ones(y_index.size) if weight is None else np.asarray(weight, dtype=np.float64)
    X = summed(sp.csr_matrix(X) if not sp.issparse(X) else X)
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    nz = X.data != 0
    pairs = _aggregate(
        (y_index[rows[nz]], X.indices[nz].astype(np.intp), X.data[nz].astype(np.float64)), w[rows[nz]]
    )
    lengths = np.asarray(X.sum(axis=1), dtype=np.float64).ravel()
    pos = lengths > 0
    lens = _aggregate((y_index[pos], lengths[pos]), w[pos])
    return PolyaStats(np.asarray(base.class_count), np.asarray(base.feature_count), *pairs, *lens)


def _stats(X, y_index, n_classes, weight=None, mask=None):
    if mask is not None:
        raise _mask.MaskRefused(
            "cannot be fitted on rows with missing (NaN) counts with missing='ignore': an "
            "unobserved count hides the document's length, which the Pólya evidence needs. "
            "Impute or drop the NaNs for fitting (predict accepts them: it conditions on the "
            "observed words)"
        )
    return polya_stats(X, y_index, n_classes, weight)


def posterior(prior, stats):
    """The concentration itself: no global latent is updated by the data (see the module)."""
    return Polya(host(prior.concentration, dtype=np.float64))


def point(prior, stats, kind, **options):
    r"""Multinomial plug-in parameters of a document of class :math:`c` (ignoring burstiness).

    ``"mean"``: :math:`E\theta_d = \alpha_c / A_c`; ``"map"``: the mode of
    :math:`\mathrm{Dir}(\alpha_c)` (defined where every :math:`\alpha_{cj} \ge 1`);
    ``"mle"``: the pooled maximum-likelihood proportions :math:`T_{cj} / \sum_j T_{cj}`.

    Returns
    -------
    MultinomialParams
    """
    a = host(prior.concentration, dtype=np.float64)
    if kind == "mle":
        return multinomial.MultinomialParams(host(_dirichlet.mle_log(stats.feature_count)))
    if kind == "map":
        return multinomial.MultinomialParams(host(_dirichlet.mode_log(a)))
    if kind == "mean":
        return multinomial.MultinomialParams(host(_dirichlet.mean_log(a)))
    raise ValueError(f"unknown point estimate {kind!r}")


def log_predictive(post, X, mask=None):
    """Dirichlet-multinomial log probability of each row under each class, (n_samples, n_classes).

    The multinomial family's exact predictive is the same function of its posterior
    concentration; here the concentration is :math:`\\alpha` (with a mask: conditional on
    the observed vocabulary, by the aggregation property of the Dirichlet).
    """
    return multinomial.family.log_predictive(_dirichlet_of(post), X, mask=mask)


def _dirichlet_of(post):
    from bayesnb.core.priors import Dirichlet

    return Dirichlet(host(post.concentration, dtype=np.float64))


def _evidence_terms(alpha, stats):
    r"""Log evidence of :math:`\alpha` (JAX): the sum of every document's Dirichlet-multinomial."""
    a_pair = alpha[jnp.asarray(stats.pair_class), jnp.asarray(stats.pair_feature)]
    return _evidence_of(a_pair, jnp.sum(alpha, axis=1), stats)


def _evidence_of(a_pair, class_total, stats):
    r"""The log evidence from :math:`\alpha` at the stored (class, word) pairs and :math:`A_c = \sum_j \alpha_{cj}`."""
    words = jnp.sum(jnp.asarray(stats.pair_weight) * log_rising_factorial(a_pair, jnp.asarray(stats.pair_value)))
    total = class_total[jnp.asarray(stats.length_class)]
    docs = jnp.sum(jnp.asarray(stats.length_weight) * log_rising_factorial(total, jnp.asarray(stats.length_value)))
    return words - docs


@x64
def log_evidence(prior, stats):
    r"""Log probability of the token sequences given their labels and :math:`\alpha`.

    .. math::

        \sum_d w_d \Big(\sum_j \big[\log\Gamma(\alpha_{y_d j} + x_{dj}) - \log\Gamma(\alpha_{y_d j})\big]
            - \big[\log\Gamma(A_{y_d} + n_d) - \log\Gamma(A_{y_d})\big]\Big)

    computed from the aggregated (class, word, count) and (class, length) weights.
    JAX-traceable in ``prior.concentration`` (float64 in the library's scope).
    """
    return _evidence_terms(jnp.asarray(prior.concentration, dtype=jnp.float64), stats)


def smoothed_mean(stats, alpha=1.0):
    r"""The Dirichlet-smoothed word distribution of each class, :math:`(T_{cj} + a) / (T_c + F a)`.

    Returns
    -------
    ndarray of shape (n_classes, n_features)
    """
    t = np.asarray(stats.feature_count, dtype=np.float64) + np.asarray(alpha, dtype=np.float64)
    return t / t.sum(axis=1, keepdims=True)


def _loo_rows(stats, smoothing, X, y_index, weight):
    """What leaving each row out changes in its own class's mean (shared by the LOO functions).

    Returns the rows as summed float64 CSR, their weights and lengths, the class word
    totals :math:`T`, the mean's denominators :math:`T_c^{+} + F a` with and without
    each row, and per stored entry its row, class and downdated mean
    :math:`m^{(-i)}_{cj} = (T_{cj} - w_i x_{ij} + a) / (T_c^{+} - w_i n_i + F a)`.
    """
    X = summed(sp.csr_matrix(X, dtype=np.float64) if not sp.issparse(X) else X.tocsr().astype(np.float64))
    y_index = np.asarray(y_index, dtype=np.intp)
    w = np.ones(y_index.size) if weight is None else np.asarray(weight, dtype=np.float64)
    totals = np.asarray(stats.feature_count, dtype=np.float64)
    a, n_features = float(smoothing), totals.shape[1]
    length = np.asarray(X.sum(axis=1), dtype=np.float64).ravel()
    full = totals.sum(axis=1) + n_features * a
    down = full[y_index] - w * length
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    c = y_index[rows]
    mean = (totals[c, X.indices] - w[rows] * X.data + a) / down[rows]
    return X, w, length, totals, full, down, rows, mean


def loo_log_predictive(stats, smoothing, precision, X, y_index, weight=None, *, per_row=False):
    r"""Each training row's Dirichlet-multinomial under its own class with the row left out of the mean.

    PolyaNB's concentration is :math:`\alpha_c = s_c\, m_c` with the mean
    :math:`m_c = (T_c + a) / (T_c^{+} + F a)` smoothed from the class's word totals
    (:func:`smoothed_mean`), so a document's own words are in the mean it is scored
    with. Leaving row :math:`i` (of class :math:`c`, weight :math:`w_i`) out gives

    .. math::

        \alpha^{(-i)}_{cj} = s^{(-i)}_c\, \frac{T_{cj} - w_i x_{ij} + a}{T_c^{+} - w_i n_i + F a},

    with the precision :math:`s^{(-i)}_c` given: one per class (a fixed precision), or
    one per row (``per_row=True``: the precision re-learned without the row,
    :func:`loo_precision`). The row's log probability (sequence form, as
    :func:`log_predictive`) only involves its own words:

    .. math::

        \sum_{j: x_{ij} > 0} \big[\log\Gamma(\alpha^{(-i)}_{cj} + x_{ij})
            - \log\Gamma(\alpha^{(-i)}_{cj})\big] - \big[\log\Gamma(s^{(-i)}_c + n_i) - \log\Gamma(s^{(-i)}_c)\big].

    Parameters
    ----------
    stats : PolyaStats
        Statistics of the training data, which contains the rows ``X``.
    smoothing : float
        The pseudo-count :math:`a` of the mean.
    precision : ndarray of shape (n_classes,), or (n_samples,) with ``per_row``
        :math:`s_c`, or each row's :math:`s^{(-i)}_{y_i}`.
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        Non-negative counts (never densified).
    y_index : int ndarray of shape (n_samples,)
    weight : ndarray of shape (n_samples,), optional
        The weight of each row left out (ones by default).
    per_row : bool, default=False
        Whether ``precision`` has one value per row.

    Returns
    -------
    ndarray of shape (n_samples,)
    """
    X, w, length, _, _, _, rows, mean = _loo_rows(stats, smoothing, X, y_index, weight)
    precision = np.asarray(precision, dtype=np.float64)
    s = precision if per_row else precision[np.asarray(y_index, dtype=np.intp)]
    alpha = s[rows] * mean
    words = np.bincount(rows, weights=log_rising_factorial_np(alpha, X.data), minlength=X.shape[0])
    return words - log_rising_factorial_np(s, length)


def loo_point_log_likelihood(stats, smoothing, precision, X, y_index, kind, weight=None, block=64):
    r"""Each training row's plug-in log-likelihood under its own class's point estimate without the row.

    The plug-ins (the family's ``point``) of :math:`\alpha^{(-i)}_c = s^{(-i)}_c m^{(-i)}_c`
    (see :func:`loo_log_predictive`): ``"mean"`` (:math:`m^{(-i)}_c`, whatever the
    precision) and ``"map"`` (the mode of :math:`\mathrm{Dir}(\alpha^{(-i)}_c)`,
    ``ValueError`` where a concentration is below 1, as the family's ``point``). (``"mle"``
    reads the word totals alone: the ordinary downdate of the statistics.) Computed by
    the family's ``point`` and the multinomial log-likelihood themselves, ``block`` rows at a time
    (one dense (block, n_features) concentration).

    Parameters
    ----------
    stats : PolyaStats
    smoothing : float
    precision : ndarray of shape (n_samples,)
        Each row's :math:`s^{(-i)}_{y_i}` (unused by ``"mean"``).
    X : ndarray or CSR matrix of shape (n_samples, n_features)
    y_index : int ndarray of shape (n_samples,)
    kind : {"mean", "map"}
    weight : ndarray of shape (n_samples,), optional
    block : int

    Returns
    -------
    ndarray of shape (n_samples,)
    """
    if kind not in ("mean", "map"):
        raise ValueError(f"kind must be 'mean' or 'map', got {kind!r}")
    X, w, _, totals, _, down, _, _ = _loo_rows(stats, smoothing, X, y_index, weight)
    y_index = np.asarray(y_index, dtype=np.intp)
    s = np.asarray(precision, dtype=np.float64)
    a = float(smoothing)
    out = np.empty(X.shape[0])
    for start in range(0, X.shape[0], block):
        stop = min(X.shape[0], start + block)
        rows = X[start:stop]
        counts = totals[y_index[start:stop]] - w[start:stop, None] * rows.toarray()
        mean = (counts + a) / down[start:stop, None]
        params = point(Polya(s[start:stop, None] * mean), None, kind)
        out[start:stop] = np.diagonal(np.asarray(multinomial.log_likelihood(params, rows), dtype=np.float64))
    return out


# Integer counts up to this value take the derivatives of their log rising factorial as
# sums over 0 .. x - 1 (no cancellation for large concentrations); others use digamma
# and trigamma differences.
_SUM_MAX = 64


class _Terms:
    r"""The terms :math:`L(a_p, x_p) = \log\Gamma(a_p + x_p) - \log\Gamma(a_p)` over fixed counts, for any :math:`a`.

    ``x`` must be sorted by decreasing value (the layout of the sums below is prepared
    once). Calling it with ``a`` of shape (..., P) gives the values (or None) and the
    first two derivatives in :math:`u = \log a`:
    :math:`\partial_u L = a[\psi(a+x) - \psi(a)] = \sum_{k<x} a/(a+k)` and
    :math:`\partial_u^2 L = \partial_u L - \sum_{k<x} a^2/(a+k)^2`, as those sums for
    integer counts up to :data:`_SUM_MAX` (no cancellation at large :math:`a`), with
    digamma and trigamma differences otherwise.
    """

    def __init__(self, x):
        self.x = np.asarray(x, dtype=np.float64)
        whole = (self.x == np.floor(self.x)) & (self.x <= _SUM_MAX)
        self.whole, self.other = np.flatnonzero(whole), np.flatnonzero(~whole)
        self.all_whole = bool(whole.all())
        xs = self.x[self.whole]
        # Decreasing x: the counts above k are a leading run of the whole ones.
        self.runs = [int(np.count_nonzero(xs > k)) for k in range(int(xs.max(initial=0)))]

    def __call__(self, a, value=True):
        from scipy.special import polygamma, psi

        out = log_rising_factorial_np(a, self.x) if value else None
        aw = a if self.all_whole else a[..., self.whole]
        s1, s2 = np.zeros(aw.shape), np.zeros(aw.shape)
        for k, n in enumerate(self.runs):
            q = aw[..., :n] / (aw[..., :n] + k)
            s1[..., :n] += q
            s2[..., :n] += q * q
        if self.all_whole:
            return out, s1, s1 - s2
        d1, d2 = np.zeros(a.shape), np.zeros(a.shape)
        d1[..., self.whole], d2[..., self.whole] = s1, s1 - s2
        if self.other.size:
            ao, xo = a[..., self.other], self.x[self.other]
            t1 = ao * (psi(ao + xo) - psi(ao))
            d1[..., self.other] = t1
            d2[..., self.other] = t1 + ao * ao * (polygamma(1, ao + xo) - polygamma(1, ao))
        return out, d1, d2


def _sorted_desc(x, *others):
    order = np.argsort(-np.asarray(x), kind="stable")
    return (np.asarray(x)[order],) + tuple(np.asarray(o)[order] for o in others)


class _ScalarSum:
    r""":math:`S(v) = \sum_p W_p L(e^v a_p, x_p)` and its first two derivatives in :math:`v`, for many :math:`v` at once.

    ``exact(v)`` evaluates every term for every :math:`v` (a (len(v), P) array, in
    chunks). ``fast(v)`` reads a Chebyshev interpolant of :math:`S, S', S''` built from
    exact values at :data:`_NODES` points of an interval covering ``v`` (rebuilt when
    ``v`` leaves it; exact evaluation where the interval would be wider than
    :data:`_SPAN`): the cost of a Newton step no longer grows with the number of rows.
    """

    def __init__(self, scale, value, weight):
        value, self.weight, self.scale = _sorted_desc(value, weight, scale)
        self.terms = _Terms(value)
        self.size = value.size
        self.interval, self.series = None, None

    def exact(self, v, value=True, chunk=1 << 22):
        n = v.size
        f, g, h = np.zeros(n), np.zeros(n), np.zeros(n)
        if not self.size:
            return f, g, h
        step = max(1, chunk // self.size)
        for s0 in range(0, n, step):
            s1 = min(n, s0 + step)
            t, d1, d2 = self.terms(np.exp(v[s0:s1])[:, None] * self.scale[None, :], value)
            if value:
                f[s0:s1] = t @ self.weight
            g[s0:s1], h[s0:s1] = d1 @ self.weight, d2 @ self.weight
        return f, g, h

    def fast(self, v, value=True):
        if not self.size or not v.size:
            return self.exact(v, value)
        lo, hi = float(v.min()), float(v.max())
        if self.interval is None or lo < self.interval[0] or hi > self.interval[1]:
            a, b = lo - _MARGIN, hi + _MARGIN
            if self.interval is not None:
                a, b = min(a, self.interval[0]), max(b, self.interval[1])
            if b - a > _SPAN:
                return self.exact(v, value)
            nodes = 0.5 * (a + b) + 0.5 * (b - a) * np.cos(np.pi * (np.arange(_NODES) + 0.5) / _NODES)
            values = self.exact(nodes)
            self.interval = (a, b)
            self.series = [np.polynomial.Chebyshev.fit(nodes, y, _NODES - 1, domain=[a, b]) for y in values]
        return tuple(series(v) for series in self.series)


# The interpolants of _ScalarSum: Chebyshev points per interval, the margin added on
# either side of the values asked for, and the widest interval interpolated (log s).
_NODES = 40
_MARGIN = 0.25
_SPAN = 3.0


class _Entries:
    """Terms of the rows' own words: ``weight * L(exp(u[row] + shift[row]) * mean, x)``, sorted by ``x`` once."""

    def __init__(self, row, mean, x, weight, shifted):
        x, self.row, self.mean, self.weight = _sorted_desc(x, row, mean, weight)
        self.terms = _Terms(x)
        self.shifted = shifted

    def add(self, f, g, h, u, log_r, position, value):
        """Add the terms of the rows whose ``position`` (in ``f``) is not -1, at their ``u``."""
        local = position[self.row]
        sel = local >= 0
        if not sel.any():
            return
        if sel.all():
            row, mean, weight, terms = self.row, self.mean, self.weight, self.terms
        else:  # a subset keeps the order by count
            row, mean, weight, terms = self.row[sel], self.mean[sel], self.weight[sel], _Terms(self.terms.x[sel])
            local = local[sel]
        a = np.exp(u[row] + (log_r[row] if self.shifted else 0.0)) * mean
        t, d1, d2 = terms(a, value)
        if value:
            f += np.bincount(local, weights=weight * t, minlength=f.size)
        g += np.bincount(local, weights=weight * d1, minlength=f.size)
        h += np.bincount(local, weights=weight * d2, minlength=f.size)


class _ClassLoo:
    r"""The log evidence of one class's precision with each of its rows left out, as a function of :math:`u = \log s`.

    Leaving row :math:`i` out scales the mean of every word it does not hold by
    :math:`r_i = (T^{+} + F a) / (T^{+} - w_i n_i + F a)` and replaces the mean of the
    words it holds; the evidence is then

    .. math::

        E_i(u) = \sum_p W_p L(e^u r_i m_p, x_p)
            + \sum_{p: j_p \in i} W_p \big[L(e^u m^{(-i)}_{j_p}, x_p) - L(e^u r_i m_p, x_p)\big]
            - w_i \sum_{j \in i} L(e^u m^{(-i)}_j, x_{ij})
            - \sum_l V_l L(e^u, n_l) + w_i L(e^u, n_i),

    :math:`L(a, x) = \log\Gamma(a + x) - \log\Gamma(a)`, over the class's (word, count)
    pairs :math:`p` of weight :math:`W_p` and lengths :math:`l` of weight :math:`V_l`. The
    pairs of count 1 enter the first sum as :math:`W (u + \log r_i + \log m_p)`, in closed
    form; the other pairs' sum is a function of :math:`u + \log r_i` alone, and the
    lengths' of :math:`u` alone (:class:`_ScalarSum`); the row's own words are a few
    terms each (:class:`_Entries`).
    """

    def __init__(self, stats, c, X, rows_of_class, w, length, full, down, entry_rows, entry_mean, smoothing):
        pc = np.asarray(stats.pair_class)
        sel = pc == c
        pf = np.asarray(stats.pair_feature)[sel]
        pv = np.asarray(stats.pair_value, dtype=np.float64)[sel]
        pw = np.asarray(stats.pair_weight, dtype=np.float64)[sel]
        totals = np.asarray(stats.feature_count, dtype=np.float64)[c]
        mean = (totals + float(smoothing)) / full[c]
        unit = pv == 1.0
        self.unit_weight = float(pw[unit].sum())
        self.unit_log = float(np.sum(pw[unit] * np.log(mean[pf[unit]])))
        self.pairs = _ScalarSum(mean[pf[~unit]], pv[~unit], pw[~unit])
        ls = np.asarray(stats.length_class) == c
        lv = np.asarray(stats.length_value, dtype=np.float64)[ls]
        self.lengths = _ScalarSum(np.ones(lv.size), lv, np.asarray(stats.length_weight, dtype=np.float64)[ls])
        idx = np.asarray(rows_of_class)
        self.w, self.length = w[idx], length[idx]
        self.log_r = np.log(full[c]) - np.log(down[idx])
        # The entries of the class's rows: each row's own (word, count) ...
        local = np.full(X.shape[0], -1, dtype=np.intp)
        local[idx] = np.arange(idx.size)
        mine = local[entry_rows] >= 0
        e_row, e_col = local[entry_rows[mine]], X.indices[mine]
        # ... and every pair of the class on a word the row holds (all its counts).
        start = np.searchsorted(pf, e_col, side="left")
        stop = np.searchsorted(pf, e_col, side="right")
        k = stop - start
        take = np.repeat(start, k) + (np.arange(k.sum()) - np.repeat(np.cumsum(k) - k, k))
        word_row = np.repeat(e_row, k)
        self.entries = [
            _Entries(word_row, np.repeat(entry_mean[mine], k), pv[take], pw[take], shifted=False),
            _Entries(word_row, mean[pf[take]], pv[take], -pw[take], shifted=True),
            _Entries(e_row, entry_mean[mine], X.data[mine], -self.w[e_row], shifted=False),
        ]
        rows = np.flatnonzero(self.length > 0)
        self.entries.append(_Entries(rows, np.ones(rows.size), self.length[rows], self.w[rows], shifted=False))

    def evaluate(self, u, which, exact=True, value=True):
        """Log evidence (None without ``value``) and its first two derivatives in ``u`` for the rows ``which``."""
        n = which.size
        log_r = self.log_r[which]
        # Closed form of the pairs of count 1.
        f = self.unit_weight * (u + log_r) + self.unit_log
        g = np.full(n, self.unit_weight)
        h = np.zeros(n)
        for part, v, sign in ((self.pairs, u + log_r, 1.0), (self.lengths, u, -1.0)):
            pf, pg, ph = part.exact(v, value) if exact else part.fast(v, value)
            f, g, h = f + sign * pf, g + sign * pg, h + sign * ph
        # The row's own words and length, at every row's u (rows outside ``which`` weigh 0).
        pos = np.full(self.w.size, -1, dtype=np.intp)
        pos[which] = np.arange(n)
        u_all = np.zeros(self.w.size)
        u_all[which] = u
        for entries in self.entries:
            entries.add(f, g, h, u_all, self.log_r, pos, value)
        return (f if value else None), g, h


def _newton(evaluate, u, lo, hi, max_iter, quadratic):
    """Safeguarded Newton ascent on each entry of ``u`` (independent 1-d problems) within ``[lo, hi]``.

    ``evaluate(u_sub, which, value)`` gives value (None without ``value``), gradient and
    curvature for the entries ``which``. A Newton step below ``quadratic`` where the
    curvature is negative is taken as it is (that close, it is exact to its square and
    the value could not tell); any other step is taken if it does not lose value beyond
    rounding (halved until then). Returns the maximisers and which entries converged (a
    last step below 1e-9, or a bound the gradient points past).
    """
    u = u.copy()
    done = np.zeros(u.size, bool)
    converged = np.zeros(u.size, bool)
    for _ in range(max_iter):
        act = np.flatnonzero(~done)
        if not act.size:
            break
        _, g, h = evaluate(u[act], act, False)
        free = ~(((u[act] <= lo) & (g <= 0)) | ((u[act] >= hi) & (g >= 0)) | (g == 0))
        step = np.where(h < 0, -g / np.where(h < 0, h, -1.0), np.sign(g) * 3.0)
        step = np.clip(np.where(free, step, 0.0), -3.0, 3.0)
        new = np.clip(u[act] + step, lo, hi)
        accepted = ~free | ((h < 0) & (np.abs(step) < quadratic))
        trying = ~accepted
        if trying.any():
            sub = np.flatnonzero(trying)
            f = np.full(act.size, np.nan)
            f[sub] = evaluate(u[act][sub], act[sub], True)[0]
            t = np.ones(act.size)
            for _ in range(60):
                sub = np.flatnonzero(trying)
                if not sub.size:
                    break
                fn = evaluate(new[sub], act[sub], True)[0]
                ok = np.isfinite(fn) & (fn >= f[sub] - 1e-13 * (1.0 + np.abs(f[sub])))
                accepted[sub[ok]] = True
                trying[sub[ok]] = False
                t[sub[~ok]] *= 0.5
                new[sub[~ok]] = np.clip(u[act][sub[~ok]] + t[sub[~ok]] * step[sub[~ok]], lo, hi)
        moved = np.abs(new - u[act])
        u[act] = np.where(accepted, new, u[act])
        # Quadratic convergence: a Newton step this small leaves an error of its square.
        finished = ~free | (accepted & (moved < 1e-9) & (h < 0)) | (accepted & (moved == 0.0))
        converged[act[finished & accepted]] = True
        done[act[finished | ~accepted]] = True
    return u, converged


def loo_precision(stats, smoothing, precision, X, y_index, weight=None, *, bounds=(1e-8, 1e8), max_iter=100):
    r"""Each training row's class precision re-learned by maximum evidence with the row left out.

    PolyaNB learns :math:`s_c` by maximising the log evidence of the class's documents
    (:func:`precision_objective`) at the mean :math:`m_c` smoothed from their word
    totals. Without row :math:`i` both change: the mean to :math:`m^{(-i)}_c` (see
    :func:`loo_log_predictive`) and the documents to all but row :math:`i`. This finds
    :math:`s^{(-i)}_{y_i} = \arg\max_s E_i(s)` for every row at once: safeguarded Newton
    steps on :math:`u = \log s` (exact first and second derivatives), vectorised over
    the rows of a class, warm-started at the precision learned from all rows (leaving
    one row out moves it little), within ``bounds`` as the fit's search. The steps read
    the evidence's sums over the class's (word, count) pairs and lengths from Chebyshev
    interpolants in :math:`\log s` (their cost does not grow with the rows); the last
    steps, from there, evaluate every term exactly, until a step is below
    :math:`10^{-9}` in :math:`u` (its error, quadratic, below :math:`10^{-17}`).

    Parameters
    ----------
    stats : PolyaStats
        Statistics of the training data, which contains the rows ``X``.
    smoothing : float
        The pseudo-count :math:`a` of the mean.
    precision : ndarray of shape (n_classes,)
        The precisions learned from all rows (the starting points).
    X : ndarray or CSR matrix of shape (n_samples, n_features)
    y_index : int ndarray of shape (n_samples,)
    weight : ndarray of shape (n_samples,), optional
    bounds : (float, float)
        The precisions' search interval (the fit's :data:`~bayesnb.core.empirical_bayes.LOWER`,
        :data:`~bayesnb.core.empirical_bayes.UPPER`).
    max_iter : int
        Newton steps at most, in each phase.

    Returns
    -------
    precision : ndarray of shape (n_samples,)
        :math:`s^{(-i)}_{y_i}`.
    converged : bool ndarray of shape (n_samples,)
        False where the exact search stopped before a step below the tolerance (the
        caller decides: the fit's own optimiser on the downdated statistics).
    """
    X, w, length, totals, full, down, entry_rows, entry_mean = _loo_rows(stats, smoothing, X, y_index, weight)
    y_index = np.asarray(y_index, dtype=np.intp)
    lo, hi = (float(np.log(b)) for b in bounds)
    start = np.clip(np.log(np.asarray(precision, dtype=np.float64)), lo, hi)
    out = np.exp(start[y_index])
    converged = np.zeros(y_index.size, bool)
    for c in np.unique(y_index):
        idx = np.flatnonzero(y_index == c)
        cls = _ClassLoo(stats, c, X, idx, w, length, full, down, entry_rows, entry_mean, smoothing)
        u = np.full(idx.size, start[c])
        if max_iter > 0:
            # Interpolated sums: Newton steps below 0.1 taken without a look at the value
            # (the exact phase checks where they led).
            u, _ = _newton(lambda v, which, value: cls.evaluate(v, which, False, value), u, lo, hi, max_iter, 0.1)
        u, ok = _newton(lambda v, which, value: cls.evaluate(v, which, True, value), u, lo, hi, max_iter, 1e-7)
        out[idx] = np.exp(u)
        converged[idx] = ok
    return out, converged


def from_mean(mean, precision):
    r"""The prior :math:`\alpha_c = s_c\, m_c` from a mean (n_classes, n_features) and precisions :math:`s_c`."""
    s = np.broadcast_to(np.asarray(precision, dtype=np.float64).reshape(-1, 1), (np.shape(mean)[0], 1))
    return Polya(s * np.asarray(mean, dtype=np.float64))


def precision_objective(u, data, layout):
    r"""Log evidence of :math:`\alpha_c = e^{u_c} m_c` (for :func:`bayesnb.core.empirical_bayes.maximize`).

    ``u`` has shape (n_classes, 1): one block per class (the evidence is a sum over
    classes); ``data`` = (mean_pair, mean_total, pair_class, pair_feature, pair_value,
    pair_weight, length_class, length_value, length_weight), as float64 arrays:
    ``mean_pair`` the mean :math:`m_{cj}` at each stored (class, word) pair and
    ``mean_total`` its sum over the words per class, :math:`\sum_j m_{cj}` (so that no
    argument has the vocabulary's shape: one compiled program serves every number of
    words).
    """
    mean_pair, mean_total, pc, pf, pv, pw, lc, lv, lw = data
    stats = PolyaStats(None, None, pc.astype(jnp.int32), pf.astype(jnp.int32), pv, pw, lc.astype(jnp.int32), lv, lw)
    scale = jnp.exp(u[:, 0])
    return _evidence_of(scale[stats.pair_class] * mean_pair, scale * mean_total, stats)


def sample(key, dist, n):
    r"""``n`` draws of a new document's :math:`\theta_c \sim \mathrm{Dir}(\alpha_c)`, as :class:`MultinomialParams`."""
    return multinomial.MultinomialParams(_dirichlet.sample_log(key, dist.concentration, n))


def local_draws(key, dist, y_index):
    r"""Each row's own :math:`\theta_d \sim \mathrm{Dir}(\alpha_{y_d})`, as :class:`MultinomialParams`.

    One draw of the batch of Dirichlets :math:`\mathrm{Dir}(\alpha_{y_d})`, one per row,
    through :func:`bayesnb.core.families._dirichlet.sample_log`: the shared parameter-draw
    sampler (:mod:`bayesnb.core._sampling`) that every other posterior draw goes through,
    so NumPy's log-Gamma variates on concrete input (finite for the tiny concentrations
    of rare words) and ``jax.random.loggamma`` under a trace, from the stream
    ``_sampling.PARAMETERS`` of ``key``.

    .. math::

        \log\theta_{dj} = \log G_{dj} - \log\sum_k G_{dk},
        \quad G_{dj} \sim \mathrm{Gamma}(\alpha_{y_d j}, 1).

    Parameters
    ----------
    key : jax.random key
    dist : Polya
        Concentrations of shape (n_classes, n_features).
    y_index : int array of shape (n_rows,)

    Returns
    -------
    MultinomialParams
        ``log_probs`` of shape (n_rows, n_classes, n_features): row ``d``'s
        :math:`\log\theta_d` under every class index (a broadcast view; only the
        row's own class is read by ``simulate``). A NumPy array on concrete input, a jax
        array under a trace.
    """
    if is_traced(key, dist.concentration, y_index):
        xp, conc, rows = jnp, jnp.asarray(dist.concentration), jnp.asarray(y_index)
    else:
        xp, conc, rows = np, np.asarray(dist.concentration, dtype=np.float64), np.asarray(y_index, dtype=np.intp)
    # A batch of n_rows Dirichlets drawn once, not n_rows draws of each class's: every
    # row needs only its own class's theta, so this draws n_classes times fewer variates.
    log_p = _dirichlet.sample_log(key, conc[rows], 1)[0]
    return multinomial.MultinomialParams(xp.broadcast_to(log_p[:, None, :], (log_p.shape[0],) + conc.shape))


def _simulate(key, params, y_index, stats):
    # Token rows from a document's theta (one per row where params have a row axis);
    # lengths follow the training documents of each class, as for the multinomial.
    key_length, key_tokens = jax.random.split(key)
    return multinomial.simulate(key_tokens, params, y_index, multinomial.default_lengths(key_length, stats, y_index))


def default_prior(stats):
    """The symmetric Dir(1) of every class's document distribution (PolyaNB learns its own)."""
    return Polya(np.ones(np.shape(stats.feature_count)))


def _log_likelihood(params, X, prior=None, mask=None):
    return multinomial.family.log_likelihood(params, X, prior, mask=mask)


# ----------------------------------------------------------------------------- numpyro model
from bayesnb.core.families import _models  # noqa: E402


class PolyaModel(_models.ModelSpec):
    r"""The numpyro model: a new document's :math:`\theta_c \sim \mathrm{Dir}(\alpha_c)` (site
    ``document_probs``); rows ``DirichletMultinomial(alpha[y], n)``, :math:`\theta_d` integrated out."""

    variables = {"document_probs": ("class", "feature")}
    per_feature = False
    joint_features = "the counts of a document"
    title = "Pólya (Dirichlet-compound-multinomial)"
    data = "token counts"
    example = (
        "from bayesnb.core.families.polya import Polya; "
        "X, y, prior = np.array([[2, 0], [0, 3]]), np.array([0, 1]), Polya(np.ones((2, 2)))"
    )
    parents = "['y']"

    def sample_params(self, n_classes, feature):
        with _models.class_plate(n_classes):
            theta = _models.numpyro.sample(
                "document_probs", _models.dist.Dirichlet(_models.real(self.prior.concentration)[:, None, :])
            )
        return {"document_probs": theta[:, 0, :]}

    def observe(self, values, X, y, feature, n_rows, weight, n_tokens=None):
        dist = _models.dist
        alpha = _models.real(self.prior.concentration)[y][:, None, :]
        if X is not None:
            total = jnp.sum(X, axis=-1)[:, None]
            X = X[:, None, :]
        else:
            if n_tokens is None:
                raise ValueError("generating Pólya rows (X=None) needs n_tokens, the length of each document")
            total = jnp.broadcast_to(jnp.asarray(n_tokens), (n_rows,))[:, None]
        with _models.data_plate(n_rows), _models.weighted(weight):
            _models.numpyro.sample("x", dist.DirichletMultinomial(alpha, total_count=total), obs=X)

    def canonical(self, samples):
        return {"document_probs": np.asarray(samples["document_probs"])[..., 0, :]}

    def log_likelihood_stats(self, values, stats):
        # The rows' likelihood does not involve a new document's theta.
        return _evidence_terms(_models.real(self.prior.concentration), stats)

    def values(self, params):
        return {"document_probs": np.exp(np.asarray(params.log_probs))}

    def moments(self, post):
        return {"document_probs": _models.dirichlet_moments(post.concentration)}


family = register(
    Family(
        name="polya",
        prior_type=Polya,
        support="counts",
        hyperparameters=("concentration",),
        stats=_stats,
        posterior=posterior,
        point=point,
        log_likelihood=_log_likelihood,
        log_predictive=log_predictive,
        log_evidence=log_evidence,
        sample=sample,
        simulate=_simulate,
        default_prior=default_prior,
        model=PolyaModel,
        log_evidence_offset=multinomial.family.log_evidence_offset,
        # sample() draws a document's own theta_d: replicated corpora take one per row.
        local_draws=local_draws,
    )
)
