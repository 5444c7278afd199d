r"""Multinomial family: token counts with a Dirichlet prior per class.

A document is an exchangeable sequence of :math:`n = \sum_j x_j` tokens, each drawn
from :math:`\mathrm{Cat}(\theta_c)`, with :math:`\theta_c \sim \mathrm{Dir}(\alpha_c)`.
The posterior is :math:`\mathrm{Dir}(a_c)`, :math:`a_c = \alpha_c + T_c`, and the exact
posterior predictive of a new document is the Dirichlet-multinomial (without the
multinomial coefficient, which is the same for every class and cancels):

.. math::

    \log p(x \mid y=c, D) = \sum_j \big[\log\Gamma(a_{cj} + x_j) - \log\Gamma(a_{cj})\big]
        - \big[\log\Gamma(A_c + n) - \log\Gamma(A_c)\big], \quad A_c = \sum_j a_{cj}.

It differs from the plug-in of the posterior mean whenever a word repeats: each
occurrence of a word raises the predictive probability of the next one.

Likelihoods and evidences here are those of the token *sequence*; the probability of the
count *vector* adds :math:`\log n! - \sum_j \log x_j!`, the same for every class and
every model of these counts.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp
from scipy.special import gammaln

from bayesnb.core._special import log_rising_factorial
from bayesnb.core._special import log_rising_factorial_np as _log_rising_np
from bayesnb.core._x64 import x64
from bayesnb.core.families import _dirichlet, _mask, _rows
from bayesnb.core.families._rising import (
    COUNT_FORM_FROM,
    concentration_totals,
    count_vector_rows,
    refuse_unrepresentable,
    sum_log_rising,
)
from bayesnb.core._special import log_rising_over_factorial_np
from bayesnb.core.families.protocol import Family, get, register
from bayesnb.core.kernels import (
    dense_jax,
    host,
    is_traced,
    log_linear,
    namespace,
    row_sums,
    sum_log_rising_jax,
    summed,
)
from bayesnb.core.priors import Dirichlet, Gamma, dirichlet_from_alpha
from bayesnb.core.stats import count_stats, dense_mask, zero_unobserved

__all__ = [
    "family",
    "MultinomialParams",
    "posterior",
    "point",
    "log_likelihood",
    "log_predictive",
    "log_evidence",
    "log_predictive_contrast",
    "relevance_log_bayes_factor",
    "sample",
    "simulate",
    "default_lengths",
    "count_vector_log_offset",
]

class MultinomialParams(NamedTuple):
    """Plug-in parameters.

    Attributes
    ----------
    log_probs : ndarray of shape (..., n_classes, n_features)
        :math:`\\log\\theta_{cj}`; rows sum to one in probability.
    """

    log_probs: np.ndarray


def posterior(prior, stats):
    """Conjugate update: ``Dirichlet(prior.concentration + stats.feature_count)``.

    Parameters
    ----------
    prior : Dirichlet
        Concentration of shape (n_classes, n_features).
    stats : CountStats

    Returns
    -------
    Dirichlet
    """
    xp = namespace(prior, stats)
    return Dirichlet(xp.asarray(prior.concentration) + xp.asarray(stats.feature_count))


def point(prior, stats, kind):
    """Point estimate of :math:`\\theta` (``"mle"``, ``"map"`` or ``"mean"``).

    Returns
    -------
    MultinomialParams
    """
    if kind == "mle":
        return MultinomialParams(host(_dirichlet.mle_log(stats.feature_count)))
    conc = posterior(prior, stats).concentration
    if kind == "map":
        return MultinomialParams(host(_dirichlet.mode_log(conc)))
    if kind == "mean":
        return MultinomialParams(host(_dirichlet.mean_log(conc)))
    raise ValueError(f"unknown point estimate {kind!r}")


def log_likelihood(params, X):
    """Plug-in log-likelihood :math:`\\sum_j x_j \\log\\theta_{cj}`, shape (n_samples, n_classes)."""
    return log_linear(X, params.log_probs)


def _distinct(values):
    """``np.unique(values, return_inverse=True)`` for a 1-d float array, without a sort
    where the values are small non-negative integers (document lengths): a presence
    table over ``0 .. max`` and its running count, O(n + max) instead of O(n log n)."""
    n = values.shape[0]
    if n:
        top = values.max()
        if 0 <= values.min() and top <= 4 * n + 1024:
            k = values.astype(np.intp)
            if np.array_equal(k, values):
                present = np.zeros(int(top) + 1, dtype=bool)
                present[k] = True
                rank = np.cumsum(present) - 1
                return np.flatnonzero(present).astype(values.dtype), rank[k]
    return np.unique(values, return_inverse=True)


def log_predictive(post, X):
    """Exact Dirichlet-multinomial log predictive (sequence form), shape (n_samples, n_classes).

    Parameters
    ----------
    post : Dirichlet
        Posterior of shape (n_classes, n_features).
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        Non-negative counts (dense where ``post`` or ``X`` is traced).

    Raises
    ------
    ValueError
        For a row whose total or log-probability is beyond the float64 range.
    """
    return _sequence_form(post, X)[0]


def log_predictive_contrast(post, X):
    r""":func:`log_predictive` up to a per-row term common to the classes: what class
    posteriors depend on (``predict_proba``).

    Rows of more than :data:`~bayesnb.core.families._rising.COUNT_FORM_FROM` counts are
    given in the count-vector form
    :math:`\sum_j \log\frac{\Gamma(a_{cj} + x_j)}{\Gamma(a_{cj})\,x_j!} - \log\frac{\Gamma(A_c + n)}{\Gamma(A_c)\,n!}`
    (the sequence form plus the log multinomial coefficient), whose terms stay of the
    order of :math:`a \log x` where the sequence form's grow like :math:`x \log x` and
    round away the class differences (about 8 in the log at :math:`n = 10^{15}`).
    """
    if is_traced(post, X):
        return _log_predictive_traced(post.concentration, X)
    out, long_rows, count_form = _sequence_form(post, X)
    if long_rows is not None:
        out[long_rows] = count_form
    return out


def _sequence_form(post, X):
    """The sequence form of :func:`log_predictive`; the rows of more than
    ``COUNT_FORM_FROM`` counts and their count-vector form (None where there are none).

    Those rows' sequence form is the count-vector form less the log multinomial
    coefficient, each computed without cancellation: its class differences are then
    rounded only at the magnitude of the result itself."""
    if is_traced(post, X):
        return _log_predictive_traced(post.concentration, X), None, None
    a = np.asarray(post.concentration, dtype=np.float64)
    total = concentration_totals(a)
    totals = np.empty(X.shape[0])
    out = sum_log_rising(a, X, row_totals=totals)
    # Document lengths repeat (integers, mostly a few hundred distinct values): the
    # class-total term is evaluated once per distinct length, and subtracted in slices
    # of rows rather than through an (n_samples, n_classes) temporary.
    lengths, inverse = _distinct(totals)
    per_length = _log_rising_np(total[None, :], lengths[:, None])
    step = 1 << 16
    # (inf - inf only in rows of huge counts, recomputed below.)
    with np.errstate(invalid="ignore"):
        for r0 in range(0, out.shape[0], step):
            out[r0 : r0 + step] -= per_length[inverse[r0 : r0 + step]]
    long_rows = np.flatnonzero(~(totals <= COUNT_FORM_FROM))
    count_form = None
    if long_rows.size:
        terms, _, log_coefficient = count_vector_rows(a, X, long_rows)
        count_form = terms - log_rising_over_factorial_np(total[None, :], totals[long_rows][:, None])
        out[long_rows] = count_form - log_coefficient[:, None]
    refuse_unrepresentable(out, totals, "the exact Dirichlet-multinomial predictive")
    return out, (long_rows if long_rows.size else None), count_form


@x64
def _log_predictive_traced(a, X):
    r""":func:`log_predictive` under ``jax.jit`` / ``jax.grad``: the same closed form,
    :math:`\sum_j \log\frac{\Gamma(a_{cj} + x_{j})}{\Gamma(a_{cj})} - \log\frac{\Gamma(A_c + n)}{\Gamma(A_c)}`,
    summed densely over (rows, classes, features) in ``jax.numpy``."""
    a = jnp.asarray(a, dtype=jnp.float64)
    X = dense_jax(X)
    return sum_log_rising_jax(a, X) - log_rising_factorial(jnp.sum(a, axis=-1)[None, :], jnp.sum(X, axis=-1)[:, None])


def log_evidence(prior, stats):
    r"""Log marginal likelihood of the token sequences given their labels.

    .. math:: \sum_c \log B(\alpha_c + T_c) - \log B(\alpha_c)

    Returns
    -------
    float
        The registered ``family.log_evidence`` is the traceable form of this function
        (a 0-d float64 JAX array, under ``jax.jit`` and ``jax.grad`` in every
        hyperparameter, in the library's float64 scope :mod:`bayesnb.core._x64`).
    """
    return float(_evidence(prior, stats))


def _evidence(prior, stats):
    return _dirichlet.log_evidence(prior.concentration, stats.feature_count)


def _tied_evidence(stats):
    # A pytree (jax.tree_util.Partial), so that a jitted caller can take it as an argument.
    return jax.tree_util.Partial(_tied_apply, _dirichlet.tied_log_evidence(stats.feature_count))


def _tied_apply(evidence, prior):
    # A tied prior gives every word of class c the concentration of its first word.
    return evidence(prior.concentration[:, 0])


def relevance_log_bayes_factor(prior, stats):
    r"""Per-word log Bayes factor: a class-specific rate of word :math:`j` against one shared rate.

    A Dirichlet aggregates: under :math:`\theta_c \sim \mathrm{Dir}(\alpha)` the share
    :math:`\theta_{cj}` of word :math:`j` is :math:`\mathrm{Beta}(\alpha_j, A - \alpha_j)`
    and independent of how the rest of the mass is spread over the other words. The token
    sequence of a class therefore factors into the binary sequence "word :math:`j` or
    not" (a Beta-Bernoulli sequence with :math:`T_{cj}` successes in :math:`L_c =
    \sum_k T_{ck}` tokens) times the sequence of the other words, whose model is the same
    under both hypotheses and cancels. Model :math:`M_1` (this family) has one
    :math:`\theta_{cj}` per class, :math:`M_0` one :math:`\theta_j` for all classes:

    .. math::

        \log\mathrm{BF}_j = \sum_c \log\frac{B(\alpha_j + T_{cj},\, A - \alpha_j + L_c - T_{cj})}{B(\alpha_j, A - \alpha_j)}
            - \log\frac{B(\alpha_j + T_j,\, A - \alpha_j + L - T_j)}{B(\alpha_j, A - \alpha_j)}.

    The prior must be the same for every class.

    Returns
    -------
    ndarray of shape (n_features,)
    """
    t = np.asarray(stats.feature_count, dtype=np.float64)
    a = np.broadcast_to(np.asarray(prior.concentration, dtype=np.float64), t.shape)
    if t.shape[1] == 1:
        # A one-word vocabulary: the word takes every token under both hypotheses.
        return np.zeros(1)
    rest_a = a.sum(axis=1, keepdims=True) - a
    rest_t = np.maximum(t.sum(axis=1, keepdims=True) - t, 0.0)
    return _dirichlet.pooled_log_bayes_factor(np.stack([rest_a, a], -1), np.stack([rest_t, t], -1))


def sample(key, post, n):
    """``n`` iid posterior draws of :math:`\\log\\theta`, as MultinomialParams of shape (n, C, F)."""
    return MultinomialParams(_dirichlet.sample_log(key, post.concentration, n))


def simulate(key, params, y_index, n_tokens):
    r"""Token counts of new documents given parameters, labels and document lengths.

    Row :math:`i` is :math:`\mathrm{Multinomial}(n_i, \theta_{y_i})`. The model describes
    the tokens of a document given its length, not the length itself, so the lengths are
    an input (see :func:`default_lengths`).

    Parameters
    ----------
    key : jax.random key
    params : MultinomialParams
        ``log_probs`` of shape (n_classes, n_features), or (n_rows, n_classes,
        n_features) for one parameter draw per row.
    y_index : int array of shape (n_rows,)
    n_tokens : int or int array of shape (n_rows,)
        Length of each document.

    Returns
    -------
    int64 ndarray of shape (n_rows, n_features)
    """
    probs = np.exp(_rows.of_class(params.log_probs, y_index, 1))
    # Rounding may leave a row's sum a few ulps above 1, which numpy refuses.
    probs /= probs.sum(axis=1, keepdims=True)
    lengths = np.broadcast_to(np.asarray(n_tokens, dtype=np.int64), probs.shape[:1])
    return _rows.generator(key).multinomial(lengths, probs).astype(np.int64)


def default_lengths(key, stats, y_index):
    r"""Document lengths for :func:`simulate`: Poisson with the class's mean training length.

    :math:`n_i \sim \mathrm{Poisson}(\bar n_{y_i})`, :math:`\bar n_c = \sum_j T_{cj} / N_c`
    (a class without training rows takes the mean length over all rows). The naive
    Bayes model says nothing about lengths; this keeps generated documents about as
    long as the training documents of their class.

    Parameters
    ----------
    key : jax.random key
    stats : CountStats
    y_index : int array of shape (n_rows,)

    Returns
    -------
    int64 ndarray of shape (n_rows,)
    """
    n = np.asarray(stats.class_count, dtype=np.float64)
    tokens = np.asarray(stats.feature_count, dtype=np.float64).sum(axis=1)
    overall = tokens.sum() / n.sum() if n.sum() > 0 else 0.0
    mean = np.where(n > 0, tokens / np.where(n > 0, n, 1.0), overall)
    return _rows.generator(key).poisson(mean[np.asarray(y_index, dtype=np.intp)]).astype(np.int64)


def _row_sums_float(X):
    return np.asarray(X.sum(axis=1)).ravel().astype(np.float64)


def _sum_log_factorial(X, w):
    """:math:`\\sum_i w_i \\sum_j \\log x_{ij}!`."""
    if sp.issparse(X):
        X = summed(X)
        rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
        per_row = np.bincount(rows, weights=gammaln(X.data + 1.0), minlength=X.shape[0])
    else:
        per_row = gammaln(np.asarray(X, dtype=np.float64) + 1.0).sum(axis=1)
    return float(np.dot(w, per_row))


def _check_length_prior(length_prior, lengths, w):
    if length_prior is None:
        total = float(np.sum(w))
        mean = float(np.dot(w, lengths)) / total if total > 0 else 1.0
        return Gamma(np.float64(1.0), np.float64(1.0 / mean if mean > 0 else 1.0))
    if not isinstance(length_prior, Gamma):
        raise TypeError(f"length_prior must be a bayesnb.core.priors.Gamma or None, got {type(length_prior).__name__}")
    for name, v in zip(("concentration", "rate"), length_prior):
        v = np.asarray(v, dtype=np.float64)
        if v.ndim or not np.isfinite(v) or v <= 0:
            raise ValueError(f"length_prior.{name} must be a finite number > 0, got {v!r}")
    return Gamma(*(np.float64(v) for v in length_prior))


def count_vector_log_offset(X, y_index, weight, n_classes, *, length_prior=None):
    r"""From the token-sequence evidence to the probability of the count vectors.

    Adds the multinomial coefficient :math:`\sum_i w_i(\log n_i! - \sum_j \log x_{ij}!)`
    and the evidence of the row lengths :math:`n_i` under
    :math:`n_i \mid y_i = c \sim \mathrm{Poisson}(\lambda_c)`,
    :math:`\lambda_c \sim \mathrm{Gamma}` (``length_prior``; default shape 1 and the
    weighted mean length as the prior mean), evaluated by the registered Poisson family.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        Integer counts.
    y_index : int ndarray of shape (n_samples,)
    weight : ndarray of shape (n_samples,)
    n_classes : int
    length_prior : Gamma of scalars, optional

    Returns
    -------
    float

    Raises
    ------
    ValueError
        For non-integer counts (the model is then not a probability of count vectors).
    """
    if sp.issparse(X):
        X = summed(X)  # an entry stored twice is judged by its sum
    values = X.data if sp.issparse(X) else np.asarray(X)
    if np.any(values != np.floor(values)):
        raise ValueError(
            "the multinomial event model is a probability of count vectors only for integer "
            "counts; X has non-integer values, so its evidence has no common footing with "
            "another model's"
        )
    lengths = _row_sums_float(X)
    prior = _check_length_prior(length_prior, lengths, weight)
    # Looked up by name: the Poisson family's module imports this one.
    poisson = get("poisson")
    stats = poisson.stats(lengths[:, None], y_index, n_classes, weight)
    shape = (n_classes, 1)
    length_part = float(
        poisson.log_evidence(Gamma(np.full(shape, prior.concentration), np.full(shape, prior.rate)), stats)
    )
    coefficient = float(np.dot(weight, gammaln(lengths + 1.0))) - _sum_log_factorial(X, weight)
    return length_part + coefficient


def _stats(X, y_index, n_classes, weight=None, mask=None):
    if mask is not None:
        raise _mask.MaskRefused(
            "cannot be fitted on rows with missing (NaN) counts with missing='ignore': a "
            "document's counts are one multinomial draw, so an unobserved count hides the "
            "document's length and the likelihood of the observed counts constrains only a "
            "sub-composition of theta_c; the posterior is then no longer a Dirichlet. Impute or "
            "drop the NaNs for fitting (predict accepts them: it conditions on the observed words)"
        )
    return count_stats(X, y_index, n_classes, weight)


# ----------------------------------------------------------------------------- unobserved entries
#
# A document's counts are one multinomial draw of n = sum_j x_j tokens, so an unobserved
# count is not a factor of its own: it hides how many tokens the document had. A row is
# scored conditionally on its observed vocabulary O: the tokens that fell in O are a
# multinomial draw of n_O tokens with probabilities theta_cj / sum_{k in O} theta_ck, and
# under theta_c ~ Dir(a_c) that sub-composition is Dir(a_{c,O}) (the Dirichlet's
# aggregation property), so the exact predictive is the Dirichlet-multinomial on O.


def _log_likelihood(params, X, prior=None, mask=None):
    r"""Plug-in log-likelihood; with a mask, conditional on each row's observed vocabulary :math:`O`:
    :math:`\sum_{j \in O} x_j\log	heta_{cj} - n_O \log\sum_{j \in O}	heta_{cj}`."""
    if mask is None:
        return log_likelihood(params, X)
    X = zero_unobserved(X, mask)
    out = log_likelihood(params, X)
    values = np.asarray(params.log_probs)
    n_obs = row_sums(X)[:, None]
    mass = (~dense_mask(mask)).astype(np.float64) @ np.exp(values).T
    # A row with no observed count has n_O = 0: its (empty) product is 1. Observed
    # counts on words of total probability 0 ("mle") are impossible: -inf, not NaN.
    positive = mass > 0
    with np.errstate(divide="ignore"):
        normaliser = np.where(n_obs > 0, n_obs * np.log(np.where(positive, mass, 1.0)), 0.0)
    return np.where(positive | (n_obs == 0), out - normaliser, -np.inf)


def _log_predictive(post, X, mask=None):
    r"""Exact predictive; with a mask, the Dirichlet-multinomial of :math:`\mathrm{Dir}(a_{c,O})`:
    :func:`log_predictive` (unobserved counts are 0) with the class total :math:`A_c`
    replaced by :math:`A_{c,O} = \sum_{j \in O} a_{cj}`."""
    if mask is None:
        return log_predictive(post, X)
    X = zero_unobserved(X, mask)
    out = log_predictive(post, X)
    values = np.asarray(post.concentration)
    n_obs = row_sums(X)[:, None]
    total = values.sum(axis=1)[None, :]
    mass = (~dense_mask(mask)).astype(np.float64) @ values.T
    safe = np.where(mass > 0, mass, 1.0)
    correction = _log_rising_np(total, n_obs) - _log_rising_np(safe, n_obs)
    return out + np.where(n_obs > 0, correction, 0.0)


def expected_log_likelihood(post, X, mask=None):
    r""":math:`E_q[\sum_j x_j \log\theta_{cj}] = \sum_j x_j (\psi(a_{cj}) - \psi(A_c))`, shape (n_samples, n_classes).

    The plug-in log-likelihood at the digamma differences (the token-sequence
    likelihood of :func:`log_likelihood`; the multinomial coefficient is common to the
    classes).

    Raises
    ------
    ValueError
        With a mask: the likelihood of a partially observed row is conditional on its
        observed vocabulary, :math:`-n_O E[\log\sum_{j \in O}\theta_{cj}]` has no closed form.
    """
    if mask is not None:
        raise ValueError(
            "the expected log-likelihood of a document with unobserved (NaN) counts has no "
            "closed form (it conditions on the observed vocabulary); impute or drop the NaNs"
        )
    return log_likelihood(MultinomialParams(np.asarray(_dirichlet.expected_log(post.concentration))), X)


def log_density(dist, params, raise_by=0.0):
    """Log Dirichlet density of ``params.log_probs`` under ``dist`` (concentrations raised by ``raise_by``), summed over classes."""
    return _dirichlet.log_density(np.asarray(dist.concentration, dtype=np.float64) + float(raise_by), params.log_probs)


def _simulate(key, params, y_index, stats):
    # The model is of tokens given a document's length; lengths follow the training
    # documents of each class (see default_lengths).
    key_length, key_tokens = jax.random.split(key)
    return simulate(key_tokens, params, y_index, default_lengths(key_length, stats, y_index))


def default_prior(stats):
    """The symmetric Dir(1) prior (Laplace smoothing) of the shape of ``stats``."""
    return dirichlet_from_alpha(1.0, np.shape(stats.feature_count))


# ----------------------------------------------------------------------------- numpyro model and log-odds
# Imported here, with the rest of the model, rather than at the top: these members are
# appended to the family (numpyro itself is imported on first use by _models).
from bayesnb.core.families import _models  # noqa: E402


class MultinomialModel(_models.ModelSpec):
    r"""The numpyro model: :math:`\theta_c \sim \mathrm{Dir}(\alpha_c)` (site ``feature_probs``), rows Multinomial."""

    variables = {"feature_probs": ("class", "feature")}
    per_feature = False
    joint_features = "the counts of a document"
    title = "multinomial"
    data = "token counts"
    example = "X, y, prior = np.array([[2, 0], [0, 3]]), np.array([0, 1]), priors.Dirichlet(np.ones((2, 2)))"
    parents = "['feature_probs', 'y']"
    options_doc = """
    n_tokens : int or int array of shape (n_rows,), optional
        Document lengths, needed to generate documents (``X=None``): the model is of
        the tokens of a document given its length."""

    def sample_params(self, n_classes, feature):
        with _models.class_plate(n_classes):
            theta = _models.numpyro.sample(
                "feature_probs", _models.dist.Dirichlet(_models.real(self.prior.concentration)[:, None, :])
            )
        return {"feature_probs": theta[:, 0, :]}

    def observe(self, values, X, y, feature, n_rows, weight, n_tokens=None):
        dist = _models.dist
        logits = jnp.log(values["feature_probs"])[y][:, None, :]
        if X is not None:
            total = jnp.sum(X, axis=-1)[:, None]
            X = X[:, None, :]
            kwargs = {}
        else:
            if n_tokens is None:
                raise ValueError("generating multinomial rows (X=None) needs n_tokens, the length of each document")
            total = jnp.broadcast_to(jnp.asarray(n_tokens), (n_rows,))[:, None]
            kwargs = {"total_count_max": int(np.max(n_tokens))}
        with _models.data_plate(n_rows), _models.weighted(weight):
            _models.numpyro.sample("x", dist.Multinomial(total_count=total, logits=logits, **kwargs), obs=X)

    def canonical(self, samples):
        # The site carries a singleton axis for the feature plate's dim (see _models.CLASS_DIM).
        return {"feature_probs": np.asarray(samples["feature_probs"])[..., 0, :]}

    def log_likelihood_stats(self, values, stats):
        # The token-sequence likelihood: sum_cj T_cj log theta_cj.
        return jnp.sum(_models.real(stats.feature_count) * jnp.log(values["feature_probs"]))

    def values(self, params):
        return {"feature_probs": np.exp(np.asarray(params.log_probs))}

    def moments(self, post):
        return {"feature_probs": _models.dirichlet_moments(post.concentration)}


def feature_log_odds(params, prior=None):
    r"""Per-term log-likelihood of one occurrence of each word: :math:`\log\theta_{cj}`.

    Parameters
    ----------
    params : MultinomialParams with leading axis n
    prior : ignored

    Returns
    -------
    terms : ndarray of shape (n, n_classes, n_features)
    feature : int ndarray of shape (n_features,)
    category : None
    unit : str
    """
    terms = np.asarray(params.log_probs)
    return terms, np.arange(terms.shape[-1]), None, "one occurrence"


def recognise(view):
    r"""Dirichlet–multinomial in a user's numpyro model (the family's ``recognise`` member).

    ``x ~ Multinomial(total_count, probs=theta[y])`` with ``theta_c ~ Dir(alpha_c)`` per class.

    Parameters
    ----------
    view : bayesnb.ppl.compile.SiteView

    Returns
    -------
    Recognised or None
        None when the site is not multinomial.
    """
    if view.likelihood_kind != "Multinomial":
        return None
    theta = view.link(
        "probs",
        "Dirichlet",
        (view.n_columns,),
        expect="Dirichlet–Multinomial: probs = theta[y] with theta_c ~ Dirichlet(alpha_c) per class",
    )
    return view.recognised(Dirichlet(view.field(theta, "concentration", event_dims=1)), feature_probs=theta)


family = register(
    Family(
        name="multinomial",
        prior_type=Dirichlet,
        support="counts",
        hyperparameters=("concentration",),
        stats=_stats,
        posterior=posterior,
        point=point,
        log_likelihood=_log_likelihood,
        log_predictive=_log_predictive,
        log_predictive_contrast=log_predictive_contrast,
        log_evidence=_evidence,
        sample=sample,
        simulate=_simulate,
        default_prior=default_prior,
        relevance_log_bayes_factor=relevance_log_bayes_factor,
        model=MultinomialModel,
        feature_log_odds=feature_log_odds,
        log_evidence_offset=count_vector_log_offset,
        expected_log_likelihood=expected_log_likelihood,
        log_density=log_density,
        recognise=recognise,
        tied_log_evidence=_tied_evidence,
    )
)
