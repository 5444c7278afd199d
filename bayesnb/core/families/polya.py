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
    words = jnp.sum(jnp.asarray(stats.pair_weight) * log_rising_factorial(a_pair, jnp.asarray(stats.pair_value)))
    total = jnp.sum(alpha, axis=1)[jnp.asarray(stats.length_class)]
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


def loo_log_predictive(stats, smoothing, precision, X, y_index, weight=None):
    r"""Each training row's Dirichlet-multinomial under its own class with the row left out of the mean.

    PolyaNB's concentration is :math:`\alpha_c = s_c\, m_c` with the mean
    :math:`m_c = (T_c + a) / (T_c^{+} + F a)` smoothed from the class's word totals
    (:func:`smoothed_mean`), so a document's own words are in the mean it is scored
    with. Leaving row :math:`i` (of class :math:`c`, weight :math:`w_i`) out gives

    .. math::

        \alpha^{(-i)}_{cj} = s_c\, \frac{T_{cj} - w_i x_{ij} + a}{T_c^{+} - w_i n_i + F a},

    with the precision :math:`s_c` held (one number per class, learned from all the
    class's documents), and the row's log probability (sequence form, as
    :func:`log_predictive`) only involves its own words:

    .. math::

        \sum_{j: x_{ij} > 0} \big[\log\Gamma(\alpha^{(-i)}_{cj} + x_{ij})
            - \log\Gamma(\alpha^{(-i)}_{cj})\big] - \big[\log\Gamma(s_c + n_i) - \log\Gamma(s_c)\big].

    Parameters
    ----------
    stats : PolyaStats
        Statistics of the training data, which contains the rows ``X``.
    smoothing : float
        The pseudo-count :math:`a` of the mean.
    precision : ndarray of shape (n_classes,)
        :math:`s_c`.
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        Non-negative counts (never densified).
    y_index : int ndarray of shape (n_samples,)
    weight : ndarray of shape (n_samples,), optional
        The weight of each row left out (ones by default).

    Returns
    -------
    ndarray of shape (n_samples,)
    """
    X = summed(sp.csr_matrix(X, dtype=np.float64) if not sp.issparse(X) else X.tocsr().astype(np.float64))
    y_index = np.asarray(y_index, dtype=np.intp)
    w = np.ones(y_index.size) if weight is None else np.asarray(weight, dtype=np.float64)
    s = np.asarray(precision, dtype=np.float64)[y_index]
    totals = np.asarray(stats.feature_count, dtype=np.float64)
    a, n_features = float(smoothing), totals.shape[1]
    length = np.asarray(X.sum(axis=1), dtype=np.float64).ravel()
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    c, x = y_index[rows], X.data
    denominator = totals.sum(axis=1)[y_index] - w * length + n_features * a
    alpha = s[rows] * (totals[c, X.indices] - w[rows] * x + a) / denominator[rows]
    words = np.bincount(rows, weights=log_rising_factorial_np(alpha, x), minlength=X.shape[0])
    return words - log_rising_factorial_np(s, length)


def from_mean(mean, precision):
    r"""The prior :math:`\alpha_c = s_c\, m_c` from a mean (n_classes, n_features) and precisions :math:`s_c`."""
    s = np.broadcast_to(np.asarray(precision, dtype=np.float64).reshape(-1, 1), (np.shape(mean)[0], 1))
    return Polya(s * np.asarray(mean, dtype=np.float64))


def precision_objective(u, data, layout):
    r"""Log evidence of :math:`\alpha_c = e^{u_c} m_c` (for :func:`bayesnb.core.empirical_bayes.maximize`).

    ``u`` has shape (n_classes, 1): one block per class (the evidence is a sum over
    classes); ``data`` = (mean, pair_class, pair_feature, pair_value, pair_weight,
    length_class, length_value, length_weight), as float64 arrays.
    """
    mean, pc, pf, pv, pw, lc, lv, lw = data
    stats = PolyaStats(None, None, pc.astype(jnp.int32), pf.astype(jnp.int32), pv, pw, lc.astype(jnp.int32), lv, lw)
    return _evidence_terms(jnp.exp(u[:, :1]) * mean, stats)


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
