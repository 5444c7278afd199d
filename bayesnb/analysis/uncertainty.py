r"""Posterior uncertainty of predictions.

Every fitted bayesnb estimator has a posterior over its parameters
:math:`(\pi, \theta)`. Each posterior draw gives one vector of class probabilities

.. math:: p(y = c \mid x, \theta, \pi) = \frac{\pi_c\, p(x \mid \theta_c)}{\sum_k \pi_k\, p(x \mid \theta_k)}

per row; their spread is the *epistemic* uncertainty of the prediction (what more training
data would remove), while the entropy left inside each draw is the *aleatoric* part (what
no amount of data removes under this model). This module computes, from exact iid
posterior draws:

* the draws themselves, vectorised and memory-bounded (:func:`proba_draws`, which
  ``estimator.predict_proba_draws`` calls): the draws of the parameters are stacked along
  the class axis so that one data product scores a whole block of draws, and rows and
  draws are processed in blocks so that no temporary exceeds ``chunk_entries`` float64
  entries (32 MiB by default) beyond the result;
* credible intervals of :math:`p(y \mid x, \theta, \pi)`, equal-tailed or HDI
  (:func:`credible_interval`, :func:`proba_interval`), computed block of rows by block of
  rows without holding every draw of every row;
* the entropy decomposition per row (:func:`decompose_uncertainty`): predictive entropy
  :math:`H[\bar p]` with :math:`\bar p = E_\theta[p(y \mid x, \theta)]` (total), expected
  entropy :math:`E_\theta H[p(y \mid x, \theta)]` (aleatoric) and their difference, the
  mutual information :math:`I(y; \theta \mid x, D)` (epistemic, Houlsby et al. 2011;
  Depeweg et al. 2018), accumulated over blocks of draws; and a ranking of rows by it
  (:func:`rank_by_epistemic`);
* posterior draws of each feature's contribution to the log-odds of a class
  (:func:`feature_log_odds_draws`, :func:`top_features`), e.g. the words whose presence
  most raises p(spam), with credible intervals.

An estimator whose hyperparameters were given as distributions (integrated by NUTS at
``fit``) has as posterior the mixture of the conditional posteriors at the
hyperparameters' draws; :func:`draw_source` then returns a :class:`MixtureSource`, and
every function here draws from that mixture (each draw from the conditional posterior at
a hyperparameter draw picked at random), with the same memory bound.

Note that :math:`\bar p` averages over :math:`p(\theta \mid D)`; ``predict_proba`` with
``estimate="predictive"`` is the exact generative predictive
:math:`p(y \mid x, D) \propto p(x, y \mid D)`, which also lets the row :math:`x` itself
inform :math:`\theta`: it is the mean of :math:`p(y \mid x, \theta, \pi)` under the
posterior updated by the row, :math:`p(\theta, \pi \mid D, x)`, which
``posterior="updated"`` draws from (:func:`updated_proba_rows`). On a long document the
two posteriors differ widely, and the predictive (or any point estimate) may lie outside
the fitted posterior's interval: the summary printed beside an interval is the median of
its own draws (``return_median=True``).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import numpy as np
from scipy import special

from bayesnb.core import _fitted
from bayesnb.core._fitted import stacked_log_likelihood
from bayesnb.core.stats import as_masked, is_masked, merge
from bayesnb.analysis import calibration as _calibration
from bayesnb.core._normalize import log_normalize, normalize_proba
from bayesnb.core._validation import check_level, check_n_draws

__all__ = [
    "CHUNK_ENTRIES",
    "DrawSource",
    "MixtureSource",
    "EpistemicRanking",
    "FeatureLogOdds",
    "UncertaintyDecomposition",
    "as_frames",
    "final_step",
    "check_interval_args",
    "credible_interval",
    "decompose_uncertainty",
    "draw_source",
    "entropy_decomposition",
    "expected_entropy",
    "feature_log_odds_draws",
    "mutual_information",
    "predict_proba_draws",
    "predict_proba_interval",
    "predictive_entropy",
    "proba_draws",
    "proba_interval",
    "POSTERIORS",
    "check_posterior",
    "updated_proba_draws",
    "updated_proba_interval",
    "updated_proba_rows",
    "TopFeatures",
    "rank_by_epistemic",
    "stacked_log_likelihood",
    "top_features",
]

_METHODS = ("equal-tailed", "hdi")

#: Default bound, in float64 entries, of the draw engine's temporaries (32 MiB): one block
#: of parameter draws, one block of log-likelihoods, and (for intervals) the draws of
#: one block of rows with the scratch of their quantiles, all together.
CHUNK_ENTRIES = 1 << 22

#: Most bytes that :func:`proba_interval` writes to its temporary file of draws
#: (n_draws x n_rows x n_classes float64; 4 GiB). Beyond it, or beyond
#: ``SPILL_FREE_FRACTION`` of the free space of the temporary directory
#: (``shutil.disk_usage(tempfile.gettempdir())``), no file is written and the parameters
#: are drawn again for each block of rows instead (the same values, more time).
SPILL_MAX_BYTES = 1 << 32

#: Share of the temporary directory's free space that the file of draws may take.
SPILL_FREE_FRACTION = 0.5


def check_interval_args(level, method):
    """Validate a credible ``level`` in (0, 1) and an interval ``method``.

    Parameters
    ----------
    level : float
    method : str

    Returns
    -------
    None

    Raises
    ------
    ValueError
        If ``level`` is not in (0, 1) or ``method`` is not "equal-tailed" or "hdi".
    """
    check_level(level)
    if method not in _METHODS:
        raise ValueError(f"unknown interval method {method!r}; expected 'equal-tailed' or 'hdi'")


def credible_interval(draws, level=0.9, method="equal-tailed"):
    """Credible interval of each quantity over the leading (draw) axis.

    Parameters
    ----------
    draws : array_like of shape (n_draws, ...)
        Posterior draws, e.g. of :math:`p(y \\mid x, \\theta)` with shape
        (n_draws, n_samples, n_classes).
    level : float in (0, 1)
        Posterior mass inside the interval.
    method : {"equal-tailed", "hdi"}
        ``"equal-tailed"``: the ``(1 - level)/2`` and ``(1 + level)/2`` quantiles.
        ``"hdi"``: the shortest interval holding ``ceil(level * n_draws)`` draws
        (the highest-density interval of a unimodal marginal).

    Returns
    -------
    lower, upper : ndarray of shape (...)

    Examples
    --------
    >>> import numpy as np
    >>> lo, hi = credible_interval(np.linspace(0, 1, 101)[:, None], level=0.5)
    >>> float(lo[0]), float(hi[0])
    (0.25, 0.75)
    """
    check_interval_args(level, method)
    level = float(level)
    draws = np.asarray(draws, dtype=np.float64)
    if draws.ndim == 0 or draws.shape[0] == 0:
        raise ValueError(f"credible_interval needs at least one draw along axis 0, got shape {draws.shape}")
    # The caller's array is left as it is: the quantiles are taken on a copy.
    return _interval_inplace(draws.copy(), level, method)


def _interval_inplace(draws, level, method, median=False):
    """:func:`credible_interval` of float64 ``draws`` that the caller gives up: partitioned or sorted in place.

    No copy of the draws is made (``np.quantile`` would copy them, ``np.sort`` too), so
    the interval of a block of rows costs the block itself and, for the HDI, the widths
    of the candidate intervals (at most the size of the block). With ``median``, the
    draws' median (``np.quantile(draws, 0.5, axis=0)``) comes third: the summary of the
    same distribution the interval describes, always inside it.
    """
    # np.min propagates NaN: one pass, no boolean temporary of the draws' size.
    if draws.size and np.isnan(draws.min()):
        raise ValueError("credible_interval: the draws contain NaN")
    if method == "equal-tailed":
        qs = [(1 - level) / 2, (1 + level) / 2] + ([0.5] if median else [])
        return tuple(_quantiles_inplace(draws, qs))
    # "hdi"; the median first (it partitions or sorts), then the sort of the windows.
    mid = _quantiles_inplace(draws, [0.5])[0] if median else None
    n = draws.shape[0]
    k = max(1, int(np.ceil(level * n)))
    draws.sort(axis=0)
    # The first shortest window, as np.argmin over all the widths would find it, but one
    # start at a time: np.argmin along axis 0 copies the (n - k + 1, ...) widths to make
    # that axis contiguous, two temporaries of up to the block's size.
    best = np.asarray(draws[k - 1] - draws[0])  # an array even for 1-d draws
    start = np.zeros(best.shape, dtype=np.intp)
    width = np.empty_like(best)
    shorter = np.empty(best.shape, dtype=bool)
    for i in range(1, n - k + 1):
        np.subtract(draws[i + k - 1], draws[i], out=width)
        np.less(width, best, out=shorter)  # strict: a tie keeps the earlier start
        np.copyto(best, width, where=shorter)
        start[shorter] = i
    start = start[None]
    bounds = (
        np.take_along_axis(draws, start, axis=0)[0],
        np.take_along_axis(draws, start + k - 1, axis=0)[0],
    )
    # The median lies in an equal-tailed interval always (quantiles are monotone in q);
    # in the shortest window whenever level > 1/2 (the window holds more than half the
    # draws, so it reaches past the middle one or two); below that, a skewed
    # distribution's median may honestly lie outside its HDI, and is reported as it is.
    return bounds if mid is None else (*bounds, mid)


# ----------------------------------------------------------------------------- the engine


# Up to this many draws the lanes are sorted rather than partitioned: numpy sorts float64
# lanes with vectorised code (x86-simd-sort), which up to about a thousand draws beats
# selecting four order statistics. Measured on 2-core AMD EPYC, numpy 2.4, per lane
# count x draws: 18k x 300, 43 against 82 ms; 20k x 100, 7 against 33 ms; 6k x 1,000,
# 87 against 93 ms; 1.5k x 4,000, 151 against 105 ms.
_SORT_MAX_DRAWS = 1024


def _quantiles_inplace(draws, qs):
    """The ``qs`` quantiles over axis 0, partitioning (or, up to ``_SORT_MAX_DRAWS``
    draws, sorting) ``draws`` in place.

    The values of ``np.quantile(draws, q, axis=0, overwrite_input=True)`` (its default
    "linear" method, with the same interpolation arithmetic), from the order statistics
    they need: ``np.quantile`` also selects the minimum and the maximum (the latter to
    look for NaN, which the caller has ruled out), two more passes over every lane of
    the block. Sorted or partitioned, those order statistics are the same values.
    """
    n = draws.shape[0]
    virtual = (n - 1) * np.asarray(qs, dtype=np.float64)
    below = np.floor(virtual)
    prev = below.astype(np.intp)
    nxt = prev + 1
    # As np.quantile: at or past the last index both neighbours are the last draw.
    top = virtual >= n - 1
    prev[top] = nxt[top] = n - 1
    if n <= _SORT_MAX_DRAWS:
        draws.sort(axis=0)
    else:
        draws.partition(np.unique(np.concatenate([prev, nxt])), axis=0)
    result = []
    for v, t, i, j in zip(virtual, virtual - below, prev, nxt):
        a, b = draws[i], draws[j]
        # numpy's _lerp: a + (b - a) t, or b - (b - a)(1 - t) where t >= 0.5.
        diff = b - a
        result.append(b - diff * (1 - t) if t >= 0.5 else a + diff * t)
    return result


class DrawSource(NamedTuple):
    """Everything the draw engine needs from a fitted estimator (see :func:`draw_source`).

    Attributes
    ----------
    X : validated rows (ndarray, CSR matrix, or an estimator-specific container)
    n_rows : int
    log_class : ndarray of shape (n_draws, n_classes)
        Posterior draws of :math:`\\log\\pi` (or the fixed log proportions, repeated).
    key : jax.random key
        Key of the feature-parameter draws.
    sample : callable ``(key, n) -> params``
        ``n`` iid posterior draws of the feature parameters, leading axis ``n``.
    log_likelihood : callable ``(params, X_rows) -> ndarray (n, n_rows, n_classes)``
        Plug-in log-likelihood of every row under every draw in ``params``.
    take_rows : callable ``(X, start, stop) -> X_rows``
    draw_size : int
        float64 entries of one draw of the feature parameters (memory planning).
    calibration : CalibrationMap or None
        The estimator's calibration map, applied to every draw's class probabilities
        (:mod:`bayesnb.analysis.calibration`).
    """

    X: Any
    n_rows: int
    log_class: np.ndarray
    key: Any
    sample: Callable
    log_likelihood: Callable
    take_rows: Callable
    draw_size: int
    calibration: Any = None


def draw_size(posterior):
    """float64 entries of one posterior draw: the entries of the posterior pytree's arrays."""
    return max(1, int(sum(np.size(leaf) for leaf in jax.tree.leaves(posterior))))


def final_step(estimator, X=None):
    """A scikit-learn ``Pipeline`` ending in a bayesnb estimator as (that estimator, ``X`` through the steps before it).

    Every function here takes such a pipeline where it takes an estimator: a text
    classifier is usually ``make_pipeline(CountVectorizer(), MultinomialNB())``, and its
    uncertainty is that of the final step on the transformed rows. Anything else is
    returned as it is.

    Parameters
    ----------
    estimator : fitted bayesnb estimator, or fitted ``sklearn.pipeline.Pipeline``
    X : array-like, optional
        Rows in the pipeline's input form (e.g. documents).

    Returns
    -------
    estimator : the bayesnb estimator
    X : ``X`` transformed by every step but the last (``X`` itself for an estimator)

    Raises
    ------
    TypeError
        If the pipeline's last step is not a bayesnb estimator.
    """
    from sklearn.pipeline import Pipeline

    if not isinstance(estimator, Pipeline):
        return estimator, X
    final = estimator.steps[-1][1]
    # The estimators' documented hook (validate_input) marks a bayesnb estimator.
    if not callable(getattr(final, "validate_input", None)):
        raise TypeError(
            f"the last step of the pipeline ({estimator.steps[-1][0]!r}) is {type(final).__name__}, "
            "not a bayesnb estimator: posterior uncertainty needs a bayesnb model"
        )
    if X is not None and len(estimator.steps) > 1:
        X = estimator[:-1].transform(X)
    return final, X


def _pipeline_feature_names(estimator):
    """The names of the features the last step of a pipeline sees (``get_feature_names_out``), or None."""
    from sklearn.pipeline import Pipeline

    if not isinstance(estimator, Pipeline) or len(estimator.steps) < 2:
        return None
    try:
        return [str(v) for v in estimator[:-1].get_feature_names_out()]
    except (AttributeError, ValueError, TypeError):
        # A step without feature names (a FunctionTransformer, a custom step): x0, x1, ...
        return None


def draw_source(estimator, X, n_draws, random_state):
    """Validated ``X`` and the posterior draws of a fitted estimator, for the functions of this module.

    Read from the fitted model's pytree through the family protocol (see
    :mod:`bayesnb.core._fitted`). The key is split as ``estimator.sample_posterior`` splits
    it: the same ``random_state`` gives the same draws of the class proportions and
    (when they fit in one block) of the feature parameters.

    Parameters
    ----------
    estimator : FittedModel, fitted bayesnb estimator, or a fitted Pipeline ending in one
        (see :func:`final_step`); an estimator is read once (its ``fitted_model()``)
    X : array-like of shape (n_samples, n_features)
        Checked and transformed as the estimator's own input.
    n_draws : int
    random_state : int, RandomState, Generator, jax key or None

    Returns
    -------
    DrawSource, or MixtureSource
        A :class:`MixtureSource` for a model fitted with hyperpriors (its
        ``hyper_posterior`` holds draws): the mixture of the conditional posteriors at
        those draws, the draws of ``estimator.predict_proba_draws`` with the same
        ``random_state``.
    """
    from bayesnb.core._random import key_from_random_state

    fitted, X = fitted_front(estimator, X)
    n_draws = check_n_draws(n_draws)
    # The estimator's own validation (its missing-value policy, binarisation, column blocks).
    X = fitted.validate(X)
    key = key_from_random_state(random_state)
    if _fitted.hyper_posterior(fitted):
        return _mixture_source(fitted, X, n_draws, key)
    return _plain_source(fitted, X, n_draws, key)


def fitted_front(estimator, X=None):
    """The fitted model's pytree and the rows it reads: where this module's entry points read an estimator, once.

    Parameters
    ----------
    estimator : FittedModel, fitted bayesnb estimator, or fitted Pipeline ending in one
    X : array-like, optional
        Rows in the pipeline's input form (transformed by every step but the last).

    Returns
    -------
    fitted : bayesnb.core._fitted.FittedModel
    X : ``X`` transformed by the pipeline (``X`` itself otherwise)
    """
    from sklearn.utils.validation import check_is_fitted

    estimator, X = final_step(estimator, X)
    if not isinstance(estimator, _fitted.FittedModel):
        check_is_fitted(estimator, "stats_")
    return _fitted.as_fitted(estimator), X


def _plain_source(fitted, X, n_draws, key):
    """:func:`draw_source` of a model without hyperpriors, from validated ``X``."""
    from bayesnb.core import _sampling

    key_class, key_feat = _sampling.split(key)
    return DrawSource(
        X=X,
        n_rows=X.shape[0],
        log_class=_fitted.class_log_draws(key_class, fitted, n_draws),
        key=key_feat,
        sample=lambda key, n: _fitted.feature_draws(key, fitted, n),
        # Tempered as the estimator's own predictions (temperature_, 1 by default).
        log_likelihood=lambda params, rows: _tempered(_fitted.log_likelihood_draws(fitted, params, rows), fitted),
        take_rows=lambda rows, start, stop: _fitted.take_rows(fitted, rows, start, stop),
        draw_size=draw_size(fitted.posterior),
        calibration=_fitted.calibration(fitted),
    )


def _tempered(log_likelihood, fitted):
    """The likelihood divided by the model's temperature; untouched at 1 (no pass
    over the block for a division that changes no bit)."""
    t = _fitted.temperature(fitted)
    return log_likelihood if t == 1.0 else log_likelihood / t


class MixtureSource(NamedTuple):
    """Draws of an equal-weight mixture of posteriors, each component's from its own :class:`DrawSource`.

    The components are made when needed and not kept (a component holds a refitted
    model, whose parameters may be large): the engine makes one at a time, draws its
    blocks, and lets it go.

    Attributes
    ----------
    n_rows : int
    n_draws : int
    n_classes : int
    parts : tuple of (int ndarray, callable)
        ``(positions, make)`` per component: ``make()`` returns the component's
        :class:`DrawSource` of ``positions.size`` draws, which are the draws
        ``positions`` (indices in ``range(n_draws)``) of the mixture.
    """

    n_rows: int
    n_draws: int
    n_classes: int
    parts: tuple


def _mixture_source(fitted, X, n_draws, key):
    """:func:`draw_source` of a model fitted with hyperpriors, from validated ``X``.

    The key is split as the estimator's own mixture draws split it: (which
    hyperparameter draw each draw takes, the draws of group ``g`` from ``fold_in(key, g)``).
    """
    from functools import partial

    from bayesnb.core import _sampling

    key_groups, key_draws = _sampling.split(key)
    total = next(iter(fitted.hyper_posterior.values())).shape[0]
    groups = _fitted.mixture_groups(key_groups, n_draws, total)
    parts = tuple(
        (positions, partial(_component_source, fitted, m, X, positions.size, _sampling.fold_in(key_draws, g)))
        for g, (m, positions) in enumerate(groups)
    )
    return MixtureSource(n_rows=X.shape[0], n_draws=n_draws, n_classes=fitted.n_classes, parts=parts)


def _component_source(fitted, m, X, n, key):
    # X is validated already: the conditional is the model at other hyperparameter
    # values, with the same input handling.
    return _plain_source(fitted.hyper_conditional(m), X, n, key)


def _shape(source):
    """``(n_draws, n_classes)`` of a :class:`DrawSource` or :class:`MixtureSource`."""
    if isinstance(source, MixtureSource):
        return source.n_draws, source.n_classes
    return source.log_class.shape


def _components(source):
    """``(positions, DrawSource)`` per component, each made when reached (``positions`` None: all draws, in order)."""
    if not isinstance(source, MixtureSource):
        yield None, source
        return
    for positions, make in source.parts:
        yield positions, make()


def _at(positions, d0, d1):
    """Index of the mixture's draws ``d0:d1`` of a component: a slice when they are in order."""
    return slice(d0, d1) if positions is None else positions[d0:d1]


# Most draws scored together by one likelihood call (see _ParamBlocks).
_MAX_SCORED = 64


def _chunk(chunk_entries):
    if chunk_entries is None:
        return CHUNK_ENTRIES
    if isinstance(chunk_entries, bool) or not isinstance(chunk_entries, (int, np.integer)) or chunk_entries < 1:
        raise ValueError(f"chunk_entries must be a positive integer, got {chunk_entries!r}")
    return int(chunk_entries)


class _ParamBlocks:
    """The feature-parameter draws in blocks of equal size.

    The block size depends only on the number of draws, the size of one draw and the
    memory bound, never on the rows, so every computation from the same key sees the
    same draws. By default the blocks are those of :func:`bayesnb.core._fitted.draw_block`,
    block ``b`` drawn from :func:`bayesnb.core._fitted.block_key` ``(key, b)``: the draws of
    ``estimator.sample_posterior`` with the same ``random_state``, in one shape per
    posterior whatever ``n_draws`` is (no compilation for a new ``n_draws``). A smaller
    bound (``chunk_entries``) gives smaller blocks with keys made the same way. The last
    block is drawn at full size and scored whole (one shape for the compiled samplers and
    likelihood kernels); its extra draws are cut from the class probabilities.

    Blocks are drawn when asked for and not kept: the callers ask for each block once
    (:func:`_iter_by_draws`), or on purpose again for each block of rows
    (:func:`_iter_by_rows`, whose draws of every row would not fit the bound).

    What the callers see as one block (``size``, ``count``, ``get``, ``bounds``) is a
    *group* of consecutive sampled blocks, scored together: a large posterior is sampled
    a draw or two at a time (the sampler's bound), and one data product per draw would
    read the data once per draw. A group holds at most ``_MAX_SCORED`` draws and an
    eighth of the bound in parameters, a power of two of sampled blocks (a handful of
    shapes per posterior, as for the blocks themselves); the last group is completed by
    repeating its last sampled block (scored, then cut like the last block's extra
    draws), so it has the shape of the others and costs no extra sampling. The draws
    are those of the sampled blocks, whatever the grouping.
    """

    def __init__(self, source, chunk):
        self.source = source
        n = source.log_class.shape[0]
        self.n_draws = n
        size = _fitted.draw_block(n, source.draw_size)
        if size * source.draw_size > chunk:
            size = max(1, chunk // max(1, source.draw_size))
        self.sampled = size
        self.n_sampled = -(-n // size)
        self.keys = [_fitted.block_key(source.key, b) for b in range(self.n_sampled)]
        self._kept = None
        cap = max(1, min(_MAX_SCORED // size, (chunk // 8) // max(1, size * source.draw_size)))
        cap = 1 << (cap.bit_length() - 1)
        self.group = min(cap, 1 << max(0, (self.n_sampled - 1).bit_length()))
        self.size = self.group * size
        self.count = -(-n // self.size)

    def bounds(self, b):
        return b * self.size, min((b + 1) * self.size, self.n_draws)

    def keep(self, groups):
        """Keep ``groups`` (every group, as ``get`` drew them): ``get`` returns them from now on."""
        self._kept = list(groups)

    def get(self, b):
        """Group ``b`` of parameter draws, ``size`` draws (the last group too: see bounds)."""
        if self._kept is not None:
            return self._kept[b]
        first = b * self.group
        parts = [
            jax.tree.map(np.asarray, self.source.sample(self.keys[k], self.sampled))
            for k in range(first, min(first + self.group, self.n_sampled))
        ]
        if len(parts) == 1 and self.group == 1:
            return parts[0]
        parts += [parts[-1]] * (self.group - len(parts))
        return jax.tree.map(lambda *leaves: np.concatenate(leaves, axis=0), *parts)


def _row_bounds(n_rows, per_row, chunk):
    step = max(1, chunk // max(1, per_row))
    return [(r0, min(r0 + step, n_rows)) for r0 in range(0, n_rows, step)]


def _proba_block(source, params, d0, d1, r0, r1, out=None, entropy=None):
    """Class probabilities of rows r0:r1 under draws d0:d1, shape (d1 - d0, r1 - r0, C).

    ``params`` may hold more draws than d1 - d0 (a last block drawn at full size): all
    are scored, so the likelihood sees one shape, and the first d1 - d0 kept. Written
    into ``out`` (of that shape) when given, instead of a new array; with ``entropy``
    (shape (d1 - d0, r1 - r0)), the entropy of each row under each draw is written there.
    """
    rows = source.take_rows(source.X, r0, r1)
    log_class = source.log_class[d0:d1, None, :]
    # The joint is written where the probabilities go and normalised there, in place:
    # one pass that also lays the likelihood's (rows, draws, classes) out by draws, and
    # no temporaries of the block's size.
    ll = source.log_likelihood(params, rows)[: d1 - d0]
    joint = np.add(ll, log_class, out=np.empty(ll.shape) if out is None else out)
    # A row impossible under every class for one draw (a zero probability in that draw)
    # gets that draw's class proportions, as predict_proba does.
    cmap = source.calibration
    if cmap is None or cmap.family == "identity":
        return normalize_proba(joint, log_class, out=joint, entropy=entropy)[0]
    # Calibrated as the estimator's predict_proba: normalised in log space, mapped, then
    # exponentiated (each draw's class probabilities go through the same map).
    proba = np.exp(_calibration.apply(cmap, log_normalize(joint, log_class)[0]), out=joint)
    if entropy is not None:
        entropy[...] = _entropy(proba)
    return proba


def _iter_by_draws(source, chunk, rows_chunk=None, out=None):
    """Blocks ``(d0, d1, r0, r1, proba)``, draws outermost (each parameter block drawn once).

    ``chunk`` sizes the parameter blocks (and with them the draws: see
    :class:`_ParamBlocks`); ``rows_chunk`` (default ``chunk``) bounds each block of
    probabilities, which changes how the rows are cut, never a value. With ``out`` of
    shape (n_draws, n_rows, n_classes), each block is written in place there (``proba``
    is then the view ``out[d0:d1, r0:r1]``): no copy of every draw from a temporary.

    The blocks run one after the other in the calling thread. Running them on threads
    was tried: 1.3-1.4x faster on two cores, but a family's compiled JAX sampler called
    from two threads deadlocked the documentation build (twice, in-process, after many
    other pages had run), also when the first block ran alone first.
    """
    blocks = _ParamBlocks(source, chunk)
    n_classes = source.log_class.shape[1]
    rows_chunk = chunk if rows_chunk is None else rows_chunk
    for b in range(blocks.count):
        params = blocks.get(b)
        d0, d1 = blocks.bounds(b)
        for r0, r1 in _row_bounds(source.n_rows, blocks.size * n_classes, rows_chunk):
            into = None if out is None else out[d0:d1, r0:r1]
            yield d0, d1, r0, r1, _proba_block(source, params, d0, d1, r0, r1, into)
        # Let this block's draws go before the next block is drawn: one block of
        # parameters alive at a time (a single draw of a large posterior is a sizeable
        # share of the bound: 8 MiB at 20 classes x 50,000 words).
        del params


def _iter_by_rows(source, chunk, row_blocks, rows_chunk, kept=None):
    """Blocks ``(r0, r1, proba)`` holding every draw of a block of rows, shape (n_draws, rows, C).

    Every parameter block (of every component of a mixture) is drawn again for each
    block of rows: bounded memory at the price of repeated sampling (the fallback of
    :func:`proba_interval` when no temporary file can take the draws). With ``kept``
    (the :class:`_ParamBlocks` of a plain source, from :func:`_kept_blocks`) the blocks
    drawn once are used instead: same draws.
    """
    n_draws, n_classes = _shape(source)
    for r0, r1 in row_blocks:
        out = np.empty((n_draws, r1 - r0, n_classes))
        for positions, component in _components(source):
            blocks = _ParamBlocks(component, chunk) if kept is None else kept
            for b in range(blocks.count):
                d0, d1 = blocks.bounds(b)
                params = blocks.get(b)
                for s0, s1 in _row_bounds(r1 - r0, blocks.size * n_classes, rows_chunk):
                    if positions is None:
                        _proba_block(component, params, d0, d1, r0 + s0, r0 + s1, out=out[d0:d1, s0:s1])
                    else:
                        out[_at(positions, d0, d1), s0:s1] = _proba_block(component, params, d0, d1, r0 + s0, r0 + s1)
                del params  # before the next block is drawn (see _iter_by_draws)
            del component
        yield r0, r1, out
        # Let the block go before the next is allocated: one block of rows at a time.
        del out


def _kept_blocks(source, chunk):
    """The :class:`_ParamBlocks` of a plain source with every block drawn once and kept,
    where together they take at most an eighth of the bound; else None (a mixture's
    components, or large posteriors).

    ``draw_size`` counts the posterior's numbers, which may be more than a draw holds
    (GaussianNB: the four arrays of the Normal-Inverse-Gamma against a draw's mean and
    variance), so it only screens; the first block drawn is measured.
    """
    if not isinstance(source, DrawSource):
        return None
    blocks = _ParamBlocks(source, chunk)
    budget = chunk // 8
    if blocks.count * blocks.size * max(1, source.draw_size) > 2 * budget:
        return None
    first = blocks.get(0)
    if blocks.count * sum(np.size(leaf) for leaf in jax.tree.leaves(first)) > budget:
        return None
    blocks.keep([first] + [blocks.get(b) for b in range(1, blocks.count)])
    return blocks


def _iter_all(source, chunk, rows_chunk=None, out=None):
    """Blocks ``(draws, r0, r1, proba)`` of every component, as :func:`_iter_by_draws`.

    ``draws`` indexes the mixture's draw axis (a slice, or the component's positions).
    With ``out`` of shape (n_draws, n_rows, n_classes), every block is also in ``out``:
    written in place for draws in order, assigned at their positions for a mixture's.
    """
    for positions, component in _components(source):
        into = out if positions is None else None
        for d0, d1, r0, r1, p in _iter_by_draws(component, chunk, rows_chunk, out=into):
            draws = _at(positions, d0, d1)
            if out is not None and into is None:
                out[draws, r0:r1] = p
            yield draws, r0, r1, p
            # The block is the caller's now: not kept alive here while the next one is
            # computed (at 20 classes x 20,000 rows, 3 MiB of the bound).
            del p
        del component


def _write_all(f, offset, array):
    f.seek(offset)
    view = memoryview(np.ascontiguousarray(array)).cast("B")
    while view.nbytes:
        view = view[f.write(view) :]


def _read_all(f, offset, out):
    f.seek(offset)
    view = memoryview(out).cast("B")
    while view.nbytes:
        n = f.readinto(view)
        if not n:
            raise OSError("temporary file of posterior draws ended early")
        view = view[n:]


def _spill_by_rows(source, chunk, row_blocks, rows_chunk):
    """Blocks ``(r0, r1, proba)`` as :func:`_iter_by_rows`, each parameter block drawn once.

    The draws of every row are computed draws outermost and written to an unnamed
    temporary file (``tempfile.TemporaryFile``, deleted on close), laid out block of rows
    by block of rows, each block's draws contiguous; then each block of rows is read back
    whole. Memory holds one block of probabilities at a time; the disk holds
    n_draws x n_rows x n_classes float64 for the duration of the call. float64 goes to the
    file and back bit for bit, so the values are those of :func:`_iter_by_rows`.
    """
    import tempfile

    n_draws, n_classes = _shape(source)
    item = n_classes * 8  # bytes of one row under one draw
    with tempfile.TemporaryFile(buffering=0) as f:
        for draws, r0, r1, p in _iter_all(source, chunk, rows_chunk):
            index = np.arange(n_draws)[draws]
            for a, b in row_blocks:
                lo, hi = max(a, r0), min(b, r1)
                if lo >= hi:
                    continue
                # Block of rows a:b starts at byte n_draws * a * item; in it, draw d holds
                # rows a:b contiguously.
                for i, d in enumerate(index):
                    _write_all(f, (n_draws * a + int(d) * (b - a) + lo - a) * item, p[i, lo - r0 : hi - r0])
            del p
        for a, b in row_blocks:
            out = np.empty((n_draws, b - a, n_classes))
            _read_all(f, n_draws * a * item, out)
            yield a, b, out
            del out  # before the next block is allocated


def proba_draws(source, *, chunk_entries=None):
    r"""Posterior draws of :math:`p(y = c \mid x, \theta, \pi)` for every row.

    Parameters
    ----------
    source : DrawSource or MixtureSource
        From a fitted estimator (see :func:`draw_source`).
    chunk_entries : int, optional
        Bound, in float64 entries, of every temporary (default :data:`CHUNK_ENTRIES`).

    Returns
    -------
    ndarray of shape (n_draws, n_samples, n_classes)
    """
    chunk = _chunk(chunk_entries)
    n_draws, n_classes = _shape(source)
    out = np.empty((n_draws, source.n_rows, n_classes))
    for _ in _iter_all(source, chunk, out=out):
        pass
    return out


def proba_interval(source, level=0.9, method="equal-tailed", *, chunk_entries=None, median=False):
    """Credible interval of :math:`p(y \\mid x, \\theta, \\pi)`, computed block of rows by block.

    The quantiles of a row need all its draws at once. Rows are taken in blocks whose
    draws, n_draws x rows x n_classes float64, fill at most half of the bound; the other
    half is for the quantiles' scratch (none for equal-tailed intervals, which partition
    the block in place; the widths of the candidate intervals for the HDI) and, before, for
    the log-likelihoods of blocks of draws (an eighth of the bound each). When the draws
    of every row fit in one block, each parameter block is drawn once and scored on all
    rows. Otherwise, where the parameter draws of every block take at most an eighth of
    the bound (small models: GaussianNB on digits holds 1,280 numbers per draw), they are
    drawn once, kept, and blocks of rows of a quarter of the bound are scored under them.
    Otherwise the draws
    are computed once, draws outermost, into a temporary file
    and read back block of rows by block (disk: n_draws x n_rows x n_classes float64 for
    the call, deleted at its end). The file is written only if it takes at most
    ``SPILL_MAX_BYTES`` (4 GiB) and ``SPILL_FREE_FRACTION`` (half) of the free
    space of the temporary directory; otherwise, or if writing or reading it back raises
    ``OSError``, the parameters are drawn again for each block of rows not yet done (same
    values, more time).

    Parameters
    ----------
    source : DrawSource or MixtureSource
        From a fitted estimator (see :func:`draw_source`).
    level : float in (0, 1)
    method : {"equal-tailed", "hdi"}
    chunk_entries : int, optional
        Bound, in float64 entries, of the temporaries together (default
        :data:`CHUNK_ENTRIES`); the result, two (three) arrays of n_samples x n_classes,
        comes on top.
    median : bool, default=False
        Also return the median of the same draws: the point that summarises the
        distribution the interval describes (inside an equal-tailed interval always, and
        inside the HDI for ``level > 0.5``). ``predict_proba``'s probability is not that
        summary: see :func:`predict_proba_interval`.

    Returns
    -------
    lower, upper : ndarrays of shape (n_samples, n_classes)
    median : ndarray of shape (n_samples, n_classes)
        Only with ``median=True``.
    """
    check_interval_args(level, method)
    level = float(level)
    chunk = _chunk(chunk_entries)
    n_draws, n_classes = _shape(source)
    result = tuple(np.empty((source.n_rows, n_classes)) for _ in range(3 if median else 2))

    def store(r0, r1, out):
        for target, values in zip(result, _interval_inplace(out, level, method, median)):
            target[r0:r1] = values
    row_blocks = _row_bounds(source.n_rows, n_draws * n_classes, max(1, chunk // 2))
    rows_chunk = max(1, chunk // 8)
    if len(row_blocks) <= 1:
        for r0, r1 in row_blocks:
            out = np.empty((n_draws, r1 - r0, n_classes))
            for _ in _iter_all(source, chunk, rows_chunk, out=out):
                pass
            store(r0, r1, out)
        return result
    kept = _kept_blocks(source, chunk)
    if kept is not None:
        # Parameters small enough to keep (an eighth of the bound): every block of rows is
        # scored under them, without the temporary file or drawing again. The block of
        # rows, the kept parameters and the scoring's temporaries are alive together, so
        # the rows go in blocks of a quarter of the bound and are scored a sixteenth at a
        # time (a likelihood's temporaries are a few times its result: GaussianNB's about 5).
        kept_rows = _row_bounds(source.n_rows, n_draws * n_classes, max(1, chunk // 4))
        for r0, r1, out in _iter_by_rows(source, chunk, kept_rows, max(1, chunk // 16), kept):
            store(r0, r1, out)
            del out
        return result
    done = 0  # rows whose intervals are computed
    if _spill_fits(n_draws * source.n_rows * n_classes * 8):
        blocks = _spill_by_rows(source, chunk, row_blocks, rows_chunk)
        try:
            for r0, r1, out in blocks:
                store(r0, r1, out)
                done = r1
                del out
        except OSError:
            # The temporary file could not be written or read back (no space, an I/O
            # error): the rows not yet done are computed by drawing again below.
            pass
        finally:
            blocks.close()  # closes (and so deletes) the temporary file now
    # No room for the temporary file (or it failed): draw the parameters again for each
    # block of rows (the memory bound holds; only the time grows with the blocks).
    rest = [(r0, r1) for r0, r1 in row_blocks if r0 >= done]
    for r0, r1, out in _iter_by_rows(source, chunk, rest, rows_chunk):
        store(r0, r1, out)
        del out
    return result


def _spill_fits(nbytes):
    """Whether a temporary file of ``nbytes`` is within ``SPILL_MAX_BYTES`` and the free space share."""
    import shutil
    import tempfile

    if nbytes > SPILL_MAX_BYTES:
        return False
    try:
        free = shutil.disk_usage(tempfile.gettempdir()).free
    except OSError:
        return False
    return nbytes <= SPILL_FREE_FRACTION * free


# ----------------------------------------------------------------- entropy decomposition


def _entropy(p, axis=-1):
    # scipy's entr: -p log p in one pass, with 0 log 0 = 0 (probabilities are exact
    # zeros only where a class is impossible).
    return special.entr(p).sum(axis=axis)


def _check_draws(draws):
    draws = np.asarray(draws, dtype=np.float64)
    if draws.ndim != 3 or draws.shape[0] == 0:
        raise ValueError(f"draws must have shape (n_draws, n_samples, n_classes) with n_draws >= 1, got {draws.shape}")
    if not np.all(np.isfinite(draws)):
        raise ValueError("draws contain NaN or infinity")
    return draws


def predictive_entropy(draws):
    r"""Entropy of the mean class probabilities, :math:`H[E_\theta p(y \mid x, \theta)]`, in nats.

    Parameters
    ----------
    draws : array_like of shape (n_draws, n_samples, n_classes)

    Returns
    -------
    ndarray of shape (n_samples,)

    Examples
    --------
    >>> import numpy as np
    >>> draws = np.array([[[1.0, 0.0]], [[0.0, 1.0]]])  # two confident draws that disagree
    >>> round(float(predictive_entropy(draws)[0]), 4)  # log 2
    0.6931
    """
    return _entropy(_check_draws(draws).mean(axis=0))


def expected_entropy(draws):
    r"""Mean entropy of the draws, :math:`E_\theta H[p(y \mid x, \theta)]` (aleatoric), in nats.

    Parameters
    ----------
    draws : array_like of shape (n_draws, n_samples, n_classes)

    Returns
    -------
    ndarray of shape (n_samples,)

    Examples
    --------
    >>> import numpy as np
    >>> draws = np.array([[[1.0, 0.0]], [[0.0, 1.0]]])
    >>> float(expected_entropy(draws)[0])
    0.0
    """
    return _entropy(_check_draws(draws)).mean(axis=0)


def mutual_information(draws):
    r"""Mutual information :math:`I(y; \theta \mid x, D)` (epistemic), in nats.

    :math:`H[E_\theta p] - E_\theta H[p] \ge 0` (Jensen), clipped at zero against
    round-off.

    Parameters
    ----------
    draws : array_like of shape (n_draws, n_samples, n_classes)

    Returns
    -------
    ndarray of shape (n_samples,)

    Examples
    --------
    >>> import numpy as np
    >>> agree = np.full((3, 1, 2), 0.5)  # every draw says 50/50: nothing to learn
    >>> float(mutual_information(agree)[0])
    0.0
    """
    return entropy_decomposition(draws).epistemic


class UncertaintyDecomposition(NamedTuple):
    """Per-row uncertainty of a prediction, in nats.

    Attributes
    ----------
    total : ndarray of shape (n_samples,)
        Predictive entropy :math:`H[\\bar p]`.
    aleatoric : ndarray of shape (n_samples,)
        Expected entropy :math:`E_\\theta H[p(y \\mid x, \\theta)]`.
    epistemic : ndarray of shape (n_samples,)
        Mutual information, ``total - aleatoric``.
    mean_proba : ndarray of shape (n_samples, n_classes)
        :math:`\\bar p = E_\\theta[p(y \\mid x, \\theta)]` over the draws.
    """

    total: np.ndarray
    aleatoric: np.ndarray
    epistemic: np.ndarray
    mean_proba: np.ndarray


def _decomposition(mean_proba, aleatoric):
    total = _entropy(mean_proba)
    return UncertaintyDecomposition(total, aleatoric, np.maximum(total - aleatoric, 0.0), mean_proba)


def entropy_decomposition(draws):
    """Total, aleatoric and epistemic uncertainty of each row from an array of draws.

    Parameters
    ----------
    draws : array_like of shape (n_draws, n_samples, n_classes)

    Returns
    -------
    UncertaintyDecomposition

    Examples
    --------
    Two draws that disagree completely: each is certain (no aleatoric part), their mean
    is not (all of it epistemic).

    >>> import numpy as np
    >>> u = entropy_decomposition(np.array([[[1.0, 0.0]], [[0.0, 1.0]]]))
    >>> float(u.aleatoric[0]), round(float(u.epistemic[0]), 4)  # log 2
    (0.0, 0.6931)
    """
    draws = _check_draws(draws)
    return _decomposition(draws.mean(axis=0), _entropy(draws).mean(axis=0))


def decompose_uncertainty(estimator, X, *, n_draws=1000, random_state=None, chunk_entries=None):
    """Entropy decomposition of each row's prediction from posterior draws.

    Accumulated block of draws by block of draws: memory grows with the number of rows,
    not with ``n_draws``.

    Parameters
    ----------
    estimator : fitted bayesnb estimator, or its FittedModel (``estimator.fitted_model()``)
    X : array-like or sparse matrix of shape (n_samples, n_features)
    n_draws : int
    random_state : int, RandomState, Generator, jax key or None
    chunk_entries : int, optional
        Bound of every temporary, in float64 entries.

    Returns
    -------
    UncertaintyDecomposition
        Of ndarrays; of pandas Series (and a DataFrame ``mean_proba``, columns the
        classes) indexed like ``X`` when ``X`` is a pandas DataFrame.

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import BernoulliNB
    >>> clf = BernoulliNB().fit([[1, 0], [1, 1], [0, 1], [0, 1]], [0, 0, 1, 1])
    >>> u = decompose_uncertainty(clf, [[1, 0], [0, 1]], n_draws=200, random_state=0)
    >>> bool(np.all(u.epistemic >= 0)), bool(np.allclose(u.total, u.aleatoric + u.epistemic))
    (True, True)
    """
    fitted, Xt = fitted_front(estimator, X)
    source = draw_source(fitted, Xt, n_draws, random_state)
    chunk = _chunk(chunk_entries)
    n_draws, n_classes = _shape(source)
    sum_p = np.zeros((source.n_rows, n_classes))
    sum_h = np.zeros(source.n_rows)
    for _, component in _components(source):
        _accumulate_sums(component, chunk, sum_p, sum_h)
        del component
    sum_p /= n_draws
    sum_h /= n_draws
    u = _decomposition(sum_p, sum_h)
    return UncertaintyDecomposition(*as_frames(X, fitted.classes, *u))


def _accumulate_sums(source, chunk, sum_p, sum_h):
    """Add to ``sum_p`` (n_rows, n_classes) and ``sum_h`` (n_rows,) the sums over the
    source's draws of the class probabilities and of their entropies, one block of
    draws and rows at a time in the calling thread (see :func:`_iter_by_draws` on
    threads). In place: no accumulator beside the result's own arrays, so that the
    temporaries stay within ``chunk`` entries whatever the number of classes."""
    blocks = _ParamBlocks(source, chunk)
    n_classes = source.log_class.shape[1]
    cuts = _row_bounds(source.n_rows, blocks.size * n_classes, chunk)
    for b in range(blocks.count):
        params = blocks.get(b)
        d0, d1 = blocks.bounds(b)
        for r0, r1 in cuts:
            # The entropies come from the normalisation itself (a logarithm per row and
            # draw, not per class as scipy's entr on the probabilities).
            h = np.empty((d1 - d0, r1 - r0))
            p = _proba_block(source, params, d0, d1, r0, r1, entropy=h)
            sum_p[r0:r1] += p.sum(axis=0)
            sum_h[r0:r1] += h.sum(axis=0)
            del p, h
        del params  # before the next block is drawn (see _iter_by_draws)


class EpistemicRanking(NamedTuple):
    """Rows ordered by epistemic uncertainty, most uncertain first.

    Attributes
    ----------
    index : ndarray of shape (k,)
        The rows' labels: for a pandas ``X`` its index labels (select the rows with
        ``X.loc[r.index]``), else the row positions (``X[r.index]``).
    epistemic, aleatoric, total : ndarrays of shape (k,)
        The decomposition of those rows (nats).
    position : int ndarray of shape (k,)
        The rows' 0-based positions in ``X`` whatever its index (``X.iloc[r.position]``
        for a DataFrame); equal to ``index`` for an array.
    """

    index: np.ndarray
    epistemic: np.ndarray
    aleatoric: np.ndarray
    total: np.ndarray
    position: np.ndarray | None = None


def _row_labels(X, positions):
    """The index labels of the rows of a pandas ``X`` at ``positions``; else the positions."""
    index = _pandas_index(X)
    return positions if index is None else np.asarray(index)[positions]


def _pandas_index(X):
    """The row index of a pandas ``X`` (DataFrame or Series); None for any other input."""
    index = getattr(X, "index", None)
    if hasattr(X, "iloc") and index is not None and not callable(index) and len(index) == X.shape[0]:
        return index
    return None


def as_frames(X, classes, *arrays):
    """``arrays`` as pandas objects indexed like ``X`` when ``X`` is a pandas DataFrame; else as they are.

    A pandas user's rows keep their labels (``X.loc[...]`` selects them) and the classes
    name the columns; NumPy and sparse input keep the plain-array path.

    Parameters
    ----------
    X : the input the arrays are computed for
    classes : array-like of shape (n_classes,)
    *arrays : ndarrays of shape (n_samples,) or (n_samples, n_classes)

    Returns
    -------
    tuple of the arrays, each a ``pandas.Series`` (1-d) or ``pandas.DataFrame`` (2-d,
    columns the classes, named "class") where ``X`` carries an index.
    """
    index = _pandas_index(X)
    if index is None:
        return arrays
    import pandas as pd

    columns = pd.Index(list(np.asarray(classes).tolist()), name="class")
    return tuple(
        pd.Series(a, index=index) if np.ndim(a) == 1 else pd.DataFrame(a, index=index, columns=columns) for a in arrays
    )


def rank_by_epistemic(estimator, X, top=None, *, n_draws=1000, random_state=None, chunk_entries=None):
    """Rows of ``X`` ranked by epistemic uncertainty (mutual information), highest first.

    These are the rows whose prediction more training data would change most: candidates
    for labelling (active learning) or for a human look.

    Parameters
    ----------
    estimator : fitted bayesnb estimator, or its FittedModel
    X : array-like or sparse matrix of shape (n_samples, n_features)
    top : int, optional
        Keep the ``top`` highest rows (all rows by default).
    n_draws : int
    random_state : int, RandomState, Generator, jax key or None
    chunk_entries : int, optional

    Returns
    -------
    EpistemicRanking
        ``index`` holds the rows' labels (a DataFrame's index labels, for ``X.loc``),
        ``position`` their 0-based positions.

    Examples
    --------
    >>> from bayesnb import BernoulliNB
    >>> clf = BernoulliNB().fit([[1, 0], [1, 1], [0, 1], [0, 1]], [0, 0, 1, 1])
    >>> r = rank_by_epistemic(clf, [[1, 0], [0, 1], [1, 1]], top=2, n_draws=200, random_state=0)
    >>> r.index.shape, bool(r.epistemic[0] >= r.epistemic[1])
    ((2,), True)

    A DataFrame's rows are named by its index:

    >>> import pandas as pd
    >>> X = pd.DataFrame([[1, 0], [0, 1], [1, 1]], index=["a", "b", "c"])
    >>> r = rank_by_epistemic(clf, X, n_draws=200, random_state=0)
    >>> X.loc[r.index].equals(X.iloc[r.position])
    True
    """
    if top is not None and (isinstance(top, bool) or not isinstance(top, (int, np.integer)) or top < 1):
        raise ValueError(f"top must be a positive integer or None, got {top!r}")
    u = decompose_uncertainty(estimator, X, n_draws=n_draws, random_state=random_state, chunk_entries=chunk_entries)
    epistemic, aleatoric, total = (np.asarray(v) for v in (u.epistemic, u.aleatoric, u.total))
    # Stable sort on the negated values: ties keep the order of the rows.
    order = np.argsort(-epistemic, kind="stable")
    if top is not None:
        order = order[:top]
    return EpistemicRanking(_row_labels(X, order), epistemic[order], aleatoric[order], total[order], order)


# ------------------------------------------------------------ estimator-level entry points


def predict_proba_draws(estimator, X, n_draws=100, random_state=None, *, chunk_entries=None, posterior="fitted"):
    """Posterior draws of the class probabilities of a fitted estimator (see :func:`proba_draws`).

    Parameters
    ----------
    estimator : fitted bayesnb estimator, its FittedModel, or a Pipeline ending in one
    X : array-like or sparse matrix of shape (n_samples, n_features)
    n_draws : int
    random_state : int, RandomState, Generator, jax key or None
    chunk_entries : int, optional
        Bound of every temporary, in float64 entries (default :data:`CHUNK_ENTRIES`).
    posterior : {"fitted", "updated"}, default="fitted"
        Draws from :math:`p(\\theta, \\pi \\mid D)`, or from the posterior updated by each
        row, :math:`p(\\theta, \\pi \\mid D, x)` (:func:`updated_proba_draws`).

    Returns
    -------
    ndarray of shape (n_draws, n_samples, n_classes)

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import BernoulliNB
    >>> clf = BernoulliNB().fit([[1, 0], [1, 1], [0, 1], [0, 1]], [0, 0, 1, 1])
    >>> draws = predict_proba_draws(clf, [[1, 0], [0, 1]], n_draws=300, random_state=0)
    >>> draws.shape, bool(np.allclose(draws.sum(axis=-1), 1))
    ((300, 2, 2), True)
    """
    if check_posterior(posterior) == "updated":
        return updated_proba_draws(estimator, X, n_draws, random_state, chunk_entries=chunk_entries)
    return proba_draws(draw_source(estimator, X, n_draws, random_state), chunk_entries=chunk_entries)


def predict_proba_interval(
    estimator, X, level=0.9, *, n_draws=1000, method="equal-tailed", random_state=None, chunk_entries=None,
    posterior="fitted", return_median=False,
):
    """Credible interval of the class probabilities of a fitted estimator (see :func:`proba_interval`).

    ``predict_proba``'s probability is not a summary of this distribution and may lie
    outside the interval (see the estimators' ``predict_proba_interval``); the median
    (``return_median=True``) is.

    Parameters
    ----------
    estimator : fitted bayesnb estimator, its FittedModel, or a Pipeline ending in one
    X : array-like or sparse matrix of shape (n_samples, n_features)
    level : float in (0, 1)
    n_draws : int
    method : {"equal-tailed", "hdi"}
    random_state : int, RandomState, Generator, jax key or None
    chunk_entries : int, optional
    posterior : {"fitted", "updated"}, default="fitted"
        Over :math:`p(\\theta, \\pi \\mid D)`, or over the posterior updated by each row,
        :math:`p(\\theta, \\pi \\mid D, x)`, whose mean is the exact predictive
        (:func:`updated_proba_interval`).
    return_median : bool, default=False
        Also return the median of the same draws.

    Returns
    -------
    lower, upper : ndarrays of shape (n_samples, n_classes)
        pandas DataFrames indexed like ``X``, columns the classes, when ``X`` is a
        pandas DataFrame.
    median : ndarray of shape (n_samples, n_classes)
        Only with ``return_median=True``.

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import BernoulliNB
    >>> clf = BernoulliNB().fit([[1, 0], [1, 1], [0, 1], [0, 1]], [0, 0, 1, 1])
    >>> lower, upper = predict_proba_interval(clf, [[1, 0]], level=0.9, n_draws=500, random_state=0)
    >>> bool(np.all(lower <= upper)), lower.shape
    (True, (1, 2))
    """
    check_interval_args(level, method)
    fitted, Xt = fitted_front(estimator, X)
    if check_posterior(posterior) == "updated":
        result = updated_proba_interval(
            fitted, Xt, level, n_draws=n_draws, method=method, random_state=random_state,
            chunk_entries=chunk_entries, median=bool(return_median),
        )
    else:
        source = draw_source(fitted, Xt, n_draws, random_state)
        result = proba_interval(source, level, method, chunk_entries=chunk_entries, median=bool(return_median))
    return as_frames(X, fitted.classes, *result)


# ------------------------------------------------- the posterior updated by the row itself

#: What a credible interval of :math:`p(y \mid x, \theta, \pi)` is taken over:
#: ``"fitted"``, :math:`p(\theta, \pi \mid D)`; ``"updated"``, :math:`p(\theta, \pi \mid D, x)`.
POSTERIORS = ("fitted", "updated")


def check_posterior(posterior):
    """Validate the ``posterior`` an interval or draws are taken over (one of :data:`POSTERIORS`)."""
    if isinstance(posterior, str) and posterior in POSTERIORS:
        return posterior
    raise ValueError(f"unknown posterior {posterior!r}; expected 'fitted' (p(theta, pi | D)) or 'updated' (p(theta, pi | D, x))")


def _check_updatable(fitted):
    """Refuse what has no updated posterior in closed form, naming why."""
    if _fitted.hyper_posterior(fitted):
        raise ValueError(
            "posterior='updated' is not available for an estimator fitted with hyperpriors: the row would "
            "also reweight the hyperparameters' NUTS draws; use posterior='fitted'"
        )
    if _fitted.temperature(fitted) != 1.0 or _fitted.calibration(fitted) is not None:
        raise ValueError(
            "posterior='updated' describes the model as written: its mean is the exact predictive at "
            "temperature 1 without calibration, and a tempered or calibrated estimator's probabilities are not "
            "the mean of a posterior; use posterior='fitted', or refit with temperature=1.0 and calibrate=None"
        )


def _merge_row(stats, row_stats):
    # A row with a missing entry gives masked statistics where the training data gave
    # plain ones (or the other way): both become masked to merge.
    if is_masked(stats) or is_masked(row_stats):
        stats, row_stats = as_masked(stats), as_masked(row_stats)
    return merge(stats, row_stats)


def updated_proba_rows(estimator, X, n_draws, random_state=None, *, chunk_entries=None):
    r"""Exact iid draws of :math:`p(y \mid x, \theta, \pi)` under :math:`p(\theta, \pi \mid D, x)`, row by row.

    The exact predictive is not the mean of :math:`p(y \mid x, \theta, \pi)` under the
    fitted posterior :math:`p(\theta, \pi \mid D)`: it lets the row inform the
    parameters. It is the mean under the posterior updated by the (unlabelled) row,

    .. math:: p(\theta, \pi \mid D, x) = \sum_c p(c \mid x, D)\, p(\theta, \pi \mid D \cup \{(x, c)\}),

    a mixture of conjugate posteriors, sampled exactly: each draw picks a class :math:`c`
    with probability :math:`p(c \mid x, D)` (the exact predictive), then draws the class
    proportions and the feature parameters from the posterior with the row added to
    class :math:`c` (the model's own conjugate update, ``FittedModel.condition``). The
    draws of different rows are independent (each row has its own posterior).

    Cost: a row costs ``n_draws`` draws of the whole posterior and one conjugate update
    per class it picks; on a large vocabulary this is far more than the fitted
    posterior's draws, which are shared by all rows. Meant for the rows one inspects.

    Parameters
    ----------
    estimator : fitted bayesnb estimator, its FittedModel, or a Pipeline ending in one
        At temperature 1, without calibration or hyperpriors.
    X : array-like or sparse matrix of shape (n_samples, n_features)
    n_draws : int
    random_state : int, RandomState, Generator, jax key or None
    chunk_entries : int, optional
        Bound of every temporary of one row's draws (default :data:`CHUNK_ENTRIES`).

    Yields
    ------
    draws : ndarray of shape (n_draws, n_classes)
        One row's draws, in the order of the rows.
    """
    fitted, X = fitted_front(estimator, X)
    yield from _updated_rows(fitted, X, n_draws, random_state, chunk_entries)


def _updated_rows(fitted, X, n_draws, random_state, chunk_entries):
    """:func:`updated_proba_rows` of a fitted-model pytree and rows in the model's input form."""
    from bayesnb.core import _sampling
    from bayesnb.core._random import key_from_random_state

    n_draws = check_n_draws(n_draws)
    _check_updatable(fitted)
    from bayesnb.analysis.calibration import fitted_proba

    weights = np.asarray(fitted_proba(fitted, X, "predictive"), dtype=np.float64)
    Xv = fitted.validate(X)
    n_classes = weights.shape[1]
    key_pick, key_draws = _sampling.split(key_from_random_state(random_state))
    rng = _sampling.generator(key_pick)
    for i in range(weights.shape[0]):
        row = _fitted.take_rows(fitted, Xv, i, i + 1)
        picks = rng.multinomial(n_draws, weights[i] / weights[i].sum())
        out = np.empty((n_draws, n_classes))
        start = 0
        key_row = _sampling.fold_in(key_draws, i)
        for c in np.flatnonzero(picks):
            m = int(picks[c])
            updated = fitted.condition(_merge_row(fitted.stats, fitted.validated_stats(row, np.array([c]))))
            source = _plain_source(updated, row, m, _sampling.fold_in(key_row, int(c)))
            out[start : start + m] = proba_draws(source, chunk_entries=chunk_entries)[:, 0, :]
            start += m
        # The draws of each picked class come together; a random order makes the
        # sequence the iid draws of the mixture (the quantiles do not depend on it).
        yield out[rng.permutation(n_draws)]


def updated_proba_draws(estimator, X, n_draws=100, random_state=None, *, chunk_entries=None):
    r"""Draws of :math:`p(y \mid x, \theta, \pi)` under the posterior updated by each row (see :func:`updated_proba_rows`).

    Returns
    -------
    ndarray of shape (n_draws, n_samples, n_classes)
        Their mean over draws is ``predict_proba`` with ``estimate="predictive"`` up to
        Monte Carlo error.
    """
    fitted, X = fitted_front(estimator, X)
    rows = list(_updated_rows(fitted, X, n_draws, random_state, chunk_entries))
    if not rows:
        return np.empty((check_n_draws(n_draws), 0, len(fitted.classes)))
    return np.stack(rows, axis=1)


def updated_proba_interval(
    estimator, X, level=0.9, *, n_draws=1000, method="equal-tailed", random_state=None, chunk_entries=None, median=False
):
    r"""Credible interval of :math:`p(y \mid x, \theta, \pi)` under :math:`p(\theta, \pi \mid D, x)`.

    The distribution whose mean is the exact predictive (``estimate="predictive"``):
    see :func:`updated_proba_rows`. Same arguments and results as :func:`proba_interval`.
    """
    check_interval_args(level, method)
    level = float(level)
    fitted, X = fitted_front(estimator, X)
    parts = []
    for draws in _updated_rows(fitted, X, n_draws, random_state, chunk_entries):
        parts.append(_interval_inplace(draws, level, method, median))
    if not parts:
        return tuple(np.empty((0, len(fitted.classes))) for _ in range(3 if median else 2))
    return tuple(np.stack(values) for values in zip(*parts))


# ------------------------------------------------------------------- feature log-odds


class FeatureLogOdds(NamedTuple):
    """Posterior draws of each feature's contribution to the log-odds of a class.

    Attributes
    ----------
    draws : ndarray of shape (n_draws, n_terms)
    feature : int ndarray of shape (n_terms,)
        Column of each term (its position; ``name`` names it).
    category : int ndarray of shape (n_terms,) or None
        For categorical features, the category code of each term (one term per
        (feature, category) pair; -1 for the terms of a MixedNB's other blocks); None
        when no term is categorical.
    unit : str
        What one term measures (e.g. "one occurrence"; in a MixedNB, per block).
    name : ndarray of str, shape (n_terms,)
        The term's feature name (``feature_names`` when given, else
        ``feature_names_in_`` when fitted on a DataFrame, else ``x<column>``), with
        ``=<category>`` for a categorical term (the category's label where the
        estimator knows it, e.g. a MixedNB's ``categories_``).
    """

    draws: np.ndarray
    feature: np.ndarray
    category: np.ndarray | None
    unit: str
    name: np.ndarray | None = None


def _contrast(values, target, versus):
    """``values[:, target] - reference`` over the class axis 1 (see feature_log_odds_draws)."""
    if versus is not None:
        return values[:, target] - values[:, versus]
    others = np.delete(values, target, axis=1)
    return values[:, target] - others.mean(axis=1)


def _class_index(fitted, label, what):
    classes = list(fitted.classes)
    matches = [i for i, c in enumerate(classes) if c == label]
    if not matches:
        raise ValueError(f"{what}={label!r} is not a class of the estimator; classes are {classes!r}")
    return matches[0]


def _feature_names(fitted, feature_names):
    """One name per feature: ``feature_names`` (checked), else ``feature_names_in_``, else x0, x1, ..."""
    n = fitted.n_features_in
    if feature_names is None:
        names = fitted.feature_names_in
        return [f"x{j}" for j in range(n)] if names is None else [str(v) for v in names]
    if isinstance(feature_names, (str, bytes)):
        raise TypeError(f"feature_names must be a sequence of {n} names, one per feature, not one string")
    names = np.asarray(feature_names, dtype=object)
    if names.ndim != 1:
        raise ValueError(f"feature_names must be one-dimensional, got shape {names.shape}")
    if names.size != n:
        raise ValueError(f"feature_names has {names.size} names but the estimator was fitted on {n} features")
    return [str(v) for v in names]


def feature_log_odds_draws(estimator, target, *, versus=None, n_draws=1000, random_state=None, feature_names=None):
    r"""Posterior draws of each feature's contribution to the log-odds of class ``target``.

    In naive Bayes the log-odds of two classes is a sum of one term per feature. With
    ``versus`` a class :math:`k`, the term of feature :math:`j` compares ``target``
    :math:`c` with :math:`k`; by default (``versus=None``) it compares :math:`c` with the
    average of the log-probabilities of every other class (for two classes, the other
    class):

    * multinomial: one occurrence of word :math:`j` adds
      :math:`\log\theta_{cj} - \log\theta_{kj}`;
    * Bernoulli: presence instead of absence adds
      :math:`\log\frac{\theta_{cj}}{1-\theta_{cj}} - \log\frac{\theta_{kj}}{1-\theta_{kj}}`;
    * Poisson: one more count adds :math:`\log\lambda_{cj} - \log\lambda_{kj}`;
    * categorical: value :math:`v` of feature :math:`j` adds
      :math:`\log\theta_{cjv} - \log\theta_{kjv}` (one term per category).

    Each posterior draw of :math:`\theta` gives one draw of every term, so their
    intervals are exact posterior credible intervals (up to Monte Carlo error).
    A tempered estimator (``temperature_`` :math:`T > 1`) scores every term at
    :math:`1/T` of its value, as its predictions do.

    Parameters
    ----------
    estimator : fitted MultinomialNB, BernoulliNB, CategoricalNB, PoissonNB, ExponentialNB or MixedNB
        (or a fitted Pipeline ending in one: its earlier steps name the features; or
        the estimator's FittedModel, ``estimator.fitted_model()``)
        (a MixedNB through its blocks of those families; its other blocks have no
        per-term contributions and are left out)
    target : a class label
    versus : a class label, optional
    n_draws : int
    random_state : int, RandomState, Generator, jax key or None
    feature_names : sequence of str of length n_features_in_, optional
        The names of the columns (e.g. a ``CountVectorizer``'s
        ``get_feature_names_out()``) for ``name``; by default ``feature_names_in_``
        when fitted on a DataFrame, else ``"x0"``, ``"x1"``, ...

    Returns
    -------
    FeatureLogOdds

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import MultinomialNB
    >>> X = np.array([[3, 0, 1], [4, 1, 0], [0, 3, 1], [1, 4, 1]])
    >>> clf = MultinomialNB().fit(X, ["spam", "spam", "ham", "ham"])
    >>> odds = feature_log_odds_draws(clf, "spam", n_draws=400, random_state=0)
    >>> odds.draws.shape, odds.unit
    ((400, 3), 'one occurrence')
    >>> bool(np.median(odds.draws[:, 0]) > 0 > np.median(odds.draws[:, 1]))
    True
    """
    odds = _log_odds(estimator, target, versus, n_draws, random_state, feature_names)
    draws = np.empty((odds.n_draws, odds.feature.size))
    for d0, d1, block in odds.blocks():
        draws[d0:d1] = block
    return FeatureLogOdds(draws, odds.feature, odds.category, odds.unit, odds.name)


class _LogOdds(NamedTuple):
    """The terms of :func:`feature_log_odds_draws` and a way to draw them block of draws by block.

    ``blocks()`` yields ``(d0, d1, contrast)``, the contrasts of draws ``d0:d1``, shape
    (d1 - d0, n_terms): the values ``feature_log_odds_draws`` returns, drawn in the
    blocks the posterior's own draws come in, so that no temporary holds every draw of
    every class's parameters (1,000 draws of 20 classes by 130,000 words are 21 GB).
    """

    n_draws: int
    feature: np.ndarray
    category: Any
    unit: str
    name: np.ndarray
    blocks: Callable


def _log_odds(estimator, target, versus, n_draws, random_state, feature_names):
    """Checks, names and the block generator of :func:`feature_log_odds_draws`."""
    from bayesnb.core import _sampling
    from bayesnb.core._random import key_from_random_state

    if feature_names is None:
        # A pipeline's last step sees the features its earlier steps name (a vectoriser's words).
        feature_names = _pipeline_feature_names(estimator)
    fitted, _ = fitted_front(estimator)
    n_draws = check_n_draws(n_draws)
    # The blocks of columns (one for a one-family estimator) whose family has per-term
    # contributions; a MixedNB's other blocks (e.g. Gaussian) have none and are left out.
    every = _fitted.blocks(fitted)
    blocks = [b for b in every if b.family.feature_log_odds is not None]
    if not blocks:
        raise TypeError(
            "feature log-odds contributions need a family whose log-likelihood is a sum of "
            "per-feature terms with one parameter each (MultinomialNB, BernoulliNB, "
            f"CategoricalNB, PoissonNB, ExponentialNB, or a MixedNB with such a block); got "
            f"{fitted.name}" + (" with blocks " + ", ".join(b.name for b in every)
                                if _fitted.is_mixed(fitted) else "")
        )
    if fitted.n_classes < 2:
        raise ValueError("log-odds need at least two classes")
    c = _class_index(fitted, target, "target")
    k = None if versus is None else _class_index(fitted, versus, "versus")
    if k == c:
        raise ValueError("versus must differ from target")
    names = _feature_names(fitted, feature_names)
    labels = fitted.categories or {}
    temperature = _fitted.temperature(fitted)

    def terms_of(params):
        """(contrast (n, n_terms), [(feature, category, unit, term names)] per block) of parameter draws."""
        values, meta = [], []
        for name, family, prior, idx in ((b.name, b.family, b.prior, b.columns) for b in blocks):
            # The family's per-term contributions under each class, (n, C, n_terms).
            terms, feature, category, unit = family.feature_log_odds(params[name] if name else params, prior)
            # A tempered estimator (temperature_ T) adds 1/T of each term to its log-odds.
            values.append(np.asarray(terms) / temperature)
            meta.append((feature, category, unit, name, idx))
        return _contrast(np.concatenate(values, axis=-1), c, k), meta

    def param_blocks():
        """(d0, d1, parameter draws d0:d1), the values of ``_fitted.draws`` with this seed."""
        key = key_from_random_state(random_state)
        if _fitted.hyper_posterior(fitted):
            # A mixture over hyperparameter draws (small models): drawn as one block.
            yield 0, n_draws, _fitted.draws(fitted, n_draws, key)[1]
            return
        _, key_feat = _sampling.split(key)  # as _fitted.draws splits it
        size = _fitted.draw_block(n_draws, _fitted.posterior_size(fitted))
        for b, d0 in enumerate(range(0, n_draws, size)):
            params = fitted.family.sample(_fitted.block_key(key_feat, b), fitted.posterior, size)
            d1 = min(d0 + size, n_draws)
            yield d0, d1, jax.tree.map(lambda a: np.asarray(a)[: d1 - d0], params)

    draws = param_blocks()
    d0, d1, params = next(draws)
    first, meta = terms_of(params)
    features, categories, units, term_names = [], [], [], []
    for feature, category, unit, name, idx in meta:
        feature = np.asarray(feature) if idx is None else np.asarray(idx)[np.asarray(feature)]
        features.append(feature)
        categories.append(None if category is None else np.asarray(category))
        units.append(f"{name}: {unit}" if name else unit)
        term_names += [
            names[j] if category is None
            else f"{names[j]}={labels[int(j)][v] if int(j) in labels and v < len(labels[int(j)]) else v}"
            for j, v in zip(feature, [None] * len(feature) if category is None else np.asarray(category))
        ]
    any_category = any(cat is not None for cat in categories)

    def contrast_blocks():
        yield d0, d1, first
        for e0, e1, more in draws:
            yield e0, e1, terms_of(more)[0]

    return _LogOdds(
        n_draws,
        np.concatenate(features),
        # -1: a term of a block without categories, beside categorical ones.
        np.concatenate([np.full(f.size, -1) if cat is None else cat for f, cat in zip(features, categories)])
        if any_category else None,
        "; ".join(units),
        np.array(term_names, dtype=object),
        contrast_blocks,
    )


class TopFeatures(NamedTuple):
    """The terms that most raise the log-odds of a class, with credible intervals.

    Attributes
    ----------
    feature : int ndarray of shape (n,)
    category : int ndarray of shape (n,) or None
    median, lower, upper : ndarrays of shape (n,)
        Posterior median and credible interval of each term (nats).
    level : float
    unit : str
    name : ndarray of str, shape (n,)
        See :class:`FeatureLogOdds`.
    """

    feature: np.ndarray
    category: np.ndarray | None
    median: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    level: float
    unit: str
    name: np.ndarray | None = None


def top_features(
    estimator, target, n=15, *, level=0.9, versus=None, n_draws=1000, random_state=None, feature_names=None
):
    """The ``n`` terms with the highest posterior median contribution to the log-odds of ``target``.

    See :func:`feature_log_odds_draws` for the terms.

    Parameters
    ----------
    estimator : fitted MultinomialNB, BernoulliNB, CategoricalNB, PoissonNB, ExponentialNB or MixedNB
        (a MixedNB through its blocks of those families)
    target : a class label
    n : int
        Number of terms returned.
    level : float in (0, 1)
        Level of the equal-tailed credible intervals.
    versus : a class label, optional
    n_draws : int
    random_state : int, RandomState, Generator, jax key or None
    feature_names : sequence of str of length n_features_in_, optional
        The names of the columns, for ``name`` (e.g. a ``CountVectorizer``'s
        ``get_feature_names_out()``: the top words by name); by default
        ``feature_names_in_`` when fitted on a DataFrame, else ``"x0"``, ``"x1"``, ...

    Returns
    -------
    TopFeatures
        Sorted by decreasing median.

    Raises
    ------
    ValueError
        If ``feature_names`` does not hold one name per feature.

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import MultinomialNB
    >>> X = np.array([[3, 0, 1], [4, 1, 0], [0, 3, 1], [1, 4, 1]])
    >>> clf = MultinomialNB().fit(X, ["spam", "spam", "ham", "ham"])
    >>> top = top_features(clf, "spam", n=1, n_draws=500, random_state=0)
    >>> int(top.feature[0]), bool(top.lower[0] < top.median[0] < top.upper[0])
    (0, True)
    >>> top_features(clf, "spam", n=2, n_draws=500, random_state=0, feature_names=["free", "lunch", "today"]).name
    array(['free', 'today'], dtype=object)
    """
    check_level(level)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    odds = _log_odds(estimator, target, versus, n_draws, random_state, feature_names)
    level = float(level)
    lower, median, upper = _term_quantiles(odds, [(1 - level) / 2, 0.5, (1 + level) / 2], _chunk(None))
    order = np.argsort(-median, kind="stable")[:n]
    return TopFeatures(
        odds.feature[order],
        None if odds.category is None else odds.category[order],
        median[order],
        lower[order],
        upper[order],
        level,
        odds.unit,
        odds.name[order],
    )


def _term_quantiles(odds, qs, chunk):
    """The ``qs`` quantiles over draws of every term of a :class:`_LogOdds`, shape (len(qs), n_terms).

    The values of ``np.quantile(draws, qs, axis=0)``. Where every draw of every term fits
    in twice the bound they are held together; otherwise they go to an unnamed temporary
    file laid out by blocks of terms (each block's draws contiguous) and come back one
    block of terms at a time, so memory holds one block of terms, not n_draws x n_terms
    (1,000 draws of 130,000 words: 1 GB).
    """
    import tempfile

    n_draws, n_terms = odds.n_draws, odds.feature.size
    out = np.empty((len(qs), n_terms))
    if n_draws * n_terms <= 2 * chunk:
        draws = np.empty((n_draws, n_terms))
        for d0, d1, block in odds.blocks():
            draws[d0:d1] = block
        out[:] = _quantiles_inplace(draws, qs)
        return out
    width = max(1, chunk // n_draws)
    cuts = [(f0, min(f0 + width, n_terms)) for f0 in range(0, n_terms, width)]
    with tempfile.TemporaryFile(buffering=0) as f:
        for d0, d1, block in odds.blocks():
            for f0, f1 in cuts:
                # Block of terms f0:f1 starts at byte 8 n_draws f0; in it, draw d holds the
                # block's terms contiguously.
                _write_all(f, (n_draws * f0 + d0 * (f1 - f0)) * 8, block[:, f0:f1])
            del block
        for f0, f1 in cuts:
            draws = np.empty((n_draws, f1 - f0))
            _read_all(f, n_draws * f0 * 8, draws)
            out[:, f0:f1] = _quantiles_inplace(draws, qs)
            del draws
    return out
