r"""A fitted model as one immutable pytree, for the PPL and analysis layers.

:mod:`bayesnb.ppl.models`, :mod:`bayesnb.ppl.export`, :mod:`bayesnb.ppl.sbc`,
:mod:`bayesnb.ppl.mcmc` and :mod:`bayesnb.analysis.uncertainty` work on a
:class:`FittedModel`: the family, the prior, posterior and statistics pytrees, the class
prior or posterior, the classes, the temperature and calibration map and the
hyperparameters' draws of a fitted estimator, read off it once, at the front, by its
public method ``fitted_model()`` (:meth:`bayesnb.MultinomialNB.fitted_model`). Their
public entry points accept an estimator or the pytree, and read an estimator there, once
(:func:`as_fitted`); nothing here reads an estimator's attributes. A
:class:`~bayesnb.MixedNB` is no special case: its family is the product of its blocks'
families (:func:`bayesnb.core.families.product.product`), whose ``blocks`` and dict
pytrees (:func:`blocks`) are all a layer needs to treat it block by block.

The random streams are the estimators' own: a key is split into (class proportions,
feature parameters), and the feature key of a mixed model into one key per block, in
the order of the product's blocks, so that the same ``random_state`` gives the same
draws as ``estimator.sample_posterior``.

Draws are made in blocks of a fixed number of draws (:func:`draw_block`, a power of two
set by the size of one draw), block ``b`` from its own key (:func:`block_key`), and the
last block is drawn whole and cut. The samplers, and the likelihood kernels that score a
block, therefore see one shape per posterior whatever number of draws is asked for: a
new ``n`` compiles nothing, and the first ``n`` draws are the same for every ``n'`` >= ``n``
with the same block.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Any, Callable, NamedTuple, Optional

import jax
import numpy as np

from bayesnb.core import _sampling, _validation
from bayesnb.core import class_prior as _class_prior
from bayesnb.core import missing as _missing
from bayesnb.core._random import key_from_random_state
from bayesnb.core._x64 import enable_x64
from bayesnb.core.embedding import embed
from bayesnb.core.priors import Dirichlet

__all__ = [
    "FittedBlock",
    "FittedModel",
    "Unavailable",
    "as_fitted",
    "block_draws",
    "block_key",
    "blocks",
    "draw_block",
    "class_log_draws",
    "draws",
    "feature_draws",
    "hyper_conditional_draws",
    "hyper_posterior",
    "hyper_prior_draws",
    "is_mixed",
    "label_index",
    "mixture_draws",
    "mixture_groups",
    "log_likelihood_draws",
    "simulate",
    "stacked_log_likelihood",
    "take_rows",
    "temperature",
    "calibration",
    "class_log_prior",
    "fitted_on",
    "log_evidence",
    "loo_approximations",
]


class Unavailable(NamedTuple):
    """A fitted quantity that the estimator could not give when the pytree was built.

    ``temperature_`` and ``calibration_`` (and ``loo_approximations``, which names the
    chosen temperature) raise when ``set_params`` changed what they were fitted for; the
    pytree keeps the error and raises it where the quantity is used
    (:func:`temperature`, :func:`calibration`, :func:`loo_approximations`), as the
    estimator raises it where it is read, so that layers that do not use it (draws of
    the parameters) still work.

    Attributes
    ----------
    error : Exception
    """

    error: Exception


@partial(
    jax.tree_util.register_dataclass,
    data_fields=[
        "prior", "posterior", "stats", "class_dirichlet", "class_posterior", "class_prior", "classes",
        "temperature", "calibration", "hyper_posterior",
    ],
    meta_fields=[
        "family", "n_features_in", "feature_names_in", "categories", "name", "estimate", "loo_approximations",
        "validate", "validated_stats", "condition", "joint_log_proba", "loo_terms",
        "hyper_conditional", "hyper_embedding", "hyper_joint_draws", "hyper_chains",
    ],
)
@dataclasses.dataclass(frozen=True, eq=False)
class FittedModel:
    r"""A fitted naive Bayes model as one immutable pytree: what the layers below the estimators read.

    Built once, at the front, by an estimator's ``fitted_model()``
    (:meth:`bayesnb.MultinomialNB.fitted_model`); the functions of this module, of
    ``bayesnb.analysis`` and of ``bayesnb.ppl`` take it (their public entry points
    also take an estimator, and build it there, once). A JAX pytree (a registered
    dataclass): the arrays and distributions are its leaves; the family, the sizes, the
    names, the ``estimate``, the leave-one-out's caveats, the hyperpriors' embedding and
    the callables are its static part.

    Attributes
    ----------
    family : Family
        The conjugate family (:mod:`bayesnb.core.families`); a product family for a
        :class:`~bayesnb.MixedNB`, whose ``blocks`` index the dict pytrees below.
    prior, posterior : the family's prior type
        Feature prior and conjugate posterior, leaves of shape (n_classes, n_features[, ...]);
        dicts by block name for a product family.
    stats : the family's statistics
        The sufficient statistics the posterior conditions on (``class_count`` of shape
        (n_classes,)).
    class_dirichlet, class_posterior : Dirichlet or None
        Prior and posterior of the class proportions, concentration of shape (n_classes,);
        None where the proportions are fixed.
    class_prior : ndarray of shape (n_classes,) or None
        The fixed class proportions (None where they have a posterior).
    classes : ndarray of shape (n_classes,)
        The class labels, in the order of the class axis.
    temperature : float or Unavailable
        The likelihood temperature :math:`T` (1 for the model as written).
    calibration : CalibrationMap, None or Unavailable
        The map class probabilities go through after normalising (None: none).
    hyper_posterior : dict of str to ndarray, or None
        Draws of the integrated hyperparameters (draws on axis 0), or None where the
        model has no hyperpriors.
    n_features_in : int
        Number of features of the rows the model reads.
    feature_names_in : tuple of str or None
        The features' names where the model was fitted on a DataFrame.
    categories : dict or None
        The labels of the categories of categorical features (``categories_``: feature
        index to the labels of its codes), or None.
    name : str
        How errors name the model (the estimator's class name).
    estimate : str
        The estimator's ``estimate`` (``"mle"``, ``"map"``, ``"mean"`` or
        ``"predictive"``; checked where it is used, as the estimator checks it): the
        estimate of :func:`class_log_prior` and of ``joint_log_proba``.
    loo_approximations : tuple of (str, tuple of str) pairs, or Unavailable
        The estimator's ``loo_approximations(kind)`` for ``kind`` ``"conditional"`` and
        ``"joint"``: why its exact leave-one-out differs from refits (empty: it does not).
    validate : callable ``X -> rows``
        The estimator's input validation (``validate_input``) as it was when the pytree
        was built: rows checked and converted as the estimator reads them (binarised,
        coded, split into column blocks, masked).
    validated_stats : callable ``(rows, y_index, sample_weight=None) -> stats``
        The estimator's ``validated_stats`` as it was when the pytree was built: the
        sufficient statistics of validated rows as ``fit`` computes them.
    condition : callable ``stats -> FittedModel``
        The estimator's own conjugate update as it was when the pytree was built
        (``with_stats(stats).fitted_model()``): the model conditioned on other statistics
        under the same prior, with no hyperparameter draws. What simulation-based
        calibration checks is this computation, the estimator's, not a second one here.
    joint_log_proba : callable ``(X, kind=None, contrast=False) -> ndarray of shape (n_samples, n_classes)``
        The estimator's ``predict_joint_log_proba`` of rows ``X`` (validated there), at
        estimate ``kind`` (default its ``estimate``) and tempered, the mixture over the
        hyperparameters' draws for ``"predictive"`` where they are integrated;
        ``contrast``: up to a per-row term common to the classes, as ``predict_proba``
        normalises it. Class probabilities from it are
        :func:`bayesnb.analysis.calibration.fitted_proba` (the closed form that
        :func:`bayesnb.ppl.mcmc.crosscheck` compares with NUTS is the estimator's own).
    loo_terms : callable ``(X, y, sample_weight=None) -> LooTerms``
        The estimator's exact leave-one-out terms (``loo_terms``: what it re-learns per
        left-out row, such as a table of categories, it re-learns there).
    hyper_conditional : callable ``m -> FittedModel``, or None
        The plain model at the hyperparameters' draw ``m`` (None without hyperpriors).
    hyper_embedding : tuple ``(hypers, embedding)``, or None
        Where the hyperparameters enter the prior: the estimator's ``hyper_embedding()``
        (the hyperpriors as a tuple, and the embedding), or None without hyperpriors.
        The prior draws, hyperpriors included, are made from it
        (:func:`hyper_prior_draws`).
    hyper_joint_draws : callable ``X -> ndarray of shape (n_predict_draws, n_samples, n_classes)``, or None
        The per-draw joint log predictives that the integrated predictive averages
        (``hyper_joint_log_proba_draws``; None without hyperpriors).
    hyper_chains : int or None
        Number of chains of ``hyper_posterior`` (its draws are the chains one after the
        other); None without hyperpriors.
    """

    family: Any
    prior: Any
    posterior: Any
    stats: Any
    class_dirichlet: Any
    class_posterior: Any
    class_prior: Any
    classes: Any
    temperature: Any
    calibration: Any
    hyper_posterior: Optional[dict]
    n_features_in: int
    feature_names_in: Optional[tuple]
    categories: Optional[dict]
    name: str
    estimate: str
    loo_approximations: Any
    validate: Callable
    validated_stats: Callable
    condition: Callable
    joint_log_proba: Callable
    loo_terms: Callable
    hyper_conditional: Optional[Callable] = None
    hyper_embedding: Optional[tuple] = None
    hyper_joint_draws: Optional[Callable] = None
    hyper_chains: Optional[int] = None

    @property
    def n_classes(self):
        """int: number of classes."""
        return int(np.asarray(self.classes).size)


def as_fitted(model):
    """The :class:`FittedModel` of a fitted estimator (its ``fitted_model()``), or ``model`` itself if it is one.

    The one place where a public entry point of the layers reads an estimator.

    Parameters
    ----------
    model : FittedModel or fitted bayesnb estimator

    Returns
    -------
    FittedModel

    Raises
    ------
    TypeError
        If ``model`` is neither.
    """
    if isinstance(model, FittedModel):
        return model
    build = getattr(model, "fitted_model", None)
    if not callable(build):
        raise TypeError(
            f"expected a fitted bayesnb estimator or a bayesnb.core._fitted.FittedModel, got {type(model).__name__}"
        )
    return build()


def label_index(fitted, y):
    """The position of each label of ``y`` in ``fitted.classes``, int ndarray of shape (n_samples,).

    Raises
    ------
    ValueError
        If ``y`` is not 1-d, or a label is not one of the classes.
    """
    return _validation.class_index(y, fitted.classes)


def is_mixed(fitted):
    """Whether ``fitted``'s family is a product of families over blocks of columns (a :class:`~bayesnb.MixedNB`)."""
    return fitted.family.blocks is not None


class FittedBlock(NamedTuple):
    """One block of columns of a fitted model, as its family's pytrees.

    Attributes
    ----------
    name : str
        The block's name (the key of its pytrees in a product's dicts); ``""`` for the
        one block of a one-family estimator.
    family : Family
        The block's registered family.
    prior, posterior : the family's prior type
    stats : the family's statistics
    columns : int ndarray or None
        The block's columns in the model's rows; None: all of them.
    """

    name: str
    family: Any
    prior: Any
    posterior: Any
    stats: Any
    columns: Any


def blocks(fitted):
    """The blocks of columns of a fitted model, read off its family and pytrees.

    A product family (a :class:`~bayesnb.MixedNB`) has one block per entry of
    ``family.blocks``, with its entries of the dict pytrees ``prior``, ``posterior``
    and ``stats.blocks``; a one-family model is one block named ``""`` over all
    columns (``columns`` None).

    Parameters
    ----------
    fitted : FittedModel

    Returns
    -------
    list of FittedBlock
    """
    family = fitted.family
    if family.blocks is None:
        return [FittedBlock("", family, fitted.prior, fitted.posterior, fitted.stats, None)]
    return [
        FittedBlock(
            b.name, b.family, fitted.prior[b.name], fitted.posterior[b.name],
            fitted.stats.blocks[b.name], np.asarray(b.columns),
        )
        for b in family.blocks
    ]


# Entries of one block of draws (2^16 float64: 512 KiB), and the most draws in a block.
_BLOCK_ENTRIES = 1 << 16
_MAX_BLOCK = 64


def hyper_conditional_draws(fitted, n_per_draw, key):
    r"""``n_per_draw`` exact draws of :math:`(\log\pi, \theta)` given each hyperparameter draw, in their order.

    Draw ``m * n_per_draw + k`` is the ``k``-th draw from the conditional posterior
    :math:`p(\theta, \pi \mid D, a_m)` (``fitted.hyper_conditional(m)``), from the key
    ``fold_in(key, m)``: together, draws of the mixture the model integrates, stratified
    over its hyperparameters' draws.

    Parameters
    ----------
    fitted : FittedModel
        With integrated hyperparameters.
    n_per_draw : int
    key : jax PRNG key

    Returns
    -------
    log_class : ndarray of shape (n_hyper * n_per_draw, n_classes)
    params : the family's parameter pytree with leading axis ``n_hyper * n_per_draw``
    """
    total = next(iter(fitted.hyper_posterior.values())).shape[0]
    parts = [draws(fitted.hyper_conditional(m), n_per_draw, _sampling.fold_in(key, m)) for m in range(total)]
    return jax.tree.map(lambda *leaves: np.concatenate([np.asarray(v) for v in leaves], axis=0), *parts)


def hyper_posterior(fitted):
    """The draws of a fitted model's integrated hyperparameters (a dict name -> array
    with the draws on axis 0), or None where it has none.

    The one test every layer uses to tell a hyperprior mixture from a plain conjugate
    posterior.
    """
    return fitted.hyper_posterior or None


def draw_block(n, size):
    """Draws per block for ``n`` draws of ``size`` entries each.

    The largest power of two of at most ``_MAX_BLOCK`` draws and ``_BLOCK_ENTRIES``
    entries (at least one draw), or the next power of two above ``n`` if that is smaller:
    a handful of shapes per posterior (1, 2, 4, ... up to the block), and one for every
    ``n`` beyond the block.

    Parameters
    ----------
    n : int
        Draws asked for.
    size : int
        Entries of one draw.

    Returns
    -------
    int
    """
    cap = max(1, min(_MAX_BLOCK, _BLOCK_ENTRIES // max(1, int(size))))
    cap = 1 << (cap.bit_length() - 1)
    return min(cap, 1 << max(0, (int(n) - 1).bit_length()))


def block_key(key, b):
    """Key of block ``b`` of draws: the key itself for the first, ``fold_in(key, b)`` after."""
    return key if b == 0 else _sampling.fold_in(key, b)


def mixture_groups(key, n, total):
    """Assign ``n`` draws of an equal-weight mixture of ``total`` components to components.

    Each draw picks a component uniformly at random (``jax.random.randint``); the draws
    that picked the same component are one group. Used for the hyperparameters' draws:
    a draw of the integrated posterior is a draw of the conditional posterior at a
    hyperparameter draw picked at random.

    Parameters
    ----------
    key : jax.random key
    n : int
        Draws.
    total : int
        Components.

    Returns
    -------
    list of (int, int ndarray)
        ``(m, positions)`` for every component ``m`` picked at least once, in increasing
        ``m``: ``positions`` are the indices (in ``range(n)``, increasing) of the draws
        that picked it.
    """
    pick = np.asarray(jax.random.randint(key, (int(n),), 0, int(total)))
    return [(int(m), np.flatnonzero(pick == m)) for m in np.unique(pick)]


def in_blocks(sample, key, n, block):
    """``n`` draws as ``sample(block_key(key, b), block)`` for the blocks needed, concatenated and cut.

    Parameters
    ----------
    sample : callable ``(key, m) -> pytree`` with leading axis ``m``
    key : jax.random key
    n, block : int

    Returns
    -------
    pytree of ndarrays with leading axis ``n``
    """
    parts = [jax.tree.map(np.asarray, sample(block_key(key, b), block)) for b in range(-(-int(n) // block))]
    if len(parts) > 1:
        parts = [jax.tree.map(lambda *leaves: np.concatenate(leaves, axis=0), *parts)]
    return jax.tree.map(lambda a: a[:n], parts[0])


def posterior_size(fitted, *, prior=False):
    """Entries of one draw of the feature parameters: the sizes of the (prior or) posterior pytree's leaves."""
    return _size(fitted.prior if prior else fitted.posterior)


def _size(tree):
    return max(1, int(sum(np.size(leaf) for leaf in jax.tree.leaves(tree))))


def _available(value):
    if isinstance(value, Unavailable):
        raise value.error
    return value


def temperature(fitted):
    r"""The likelihood temperature :math:`T` of a fitted model (1 for the model as written).

    Class probabilities are :math:`\propto \pi_c\, p(x \mid \theta_c)^{1/T}`: the layers
    that turn draws of the parameters into class probabilities or log-odds divide the
    feature log-likelihood by it.

    Raises
    ------
    ValueError
        Where the estimator could not give it when the pytree was built (see :class:`Unavailable`).
    """
    return float(_available(fitted.temperature))


def calibration(fitted):
    """The calibration map a fitted model's class probabilities go through (None where none).

    See :mod:`bayesnb.analysis.calibration`: the layers that turn draws of the parameters
    into class probabilities apply it after normalising, as ``predict_proba`` does.

    Raises
    ------
    ValueError
        Where the estimator could not give it when the pytree was built (see :class:`Unavailable`).
    """
    return _available(fitted.calibration)


def class_log_prior(fitted, kind=None):
    """Log class proportions of a fitted model for estimate ``kind`` (default: the estimator's), shape (n_classes,).

    The estimator's ``class_log_prior_`` for its ``estimate``, computed from the
    pytree's class prior and class counts by the same function
    (:func:`bayesnb.core.class_prior.estimate_log`).

    Raises
    ------
    ValueError
        If the estimate is not one of ``"mle"``, ``"map"``, ``"mean"``, ``"predictive"``,
        or for ``"map"`` where a class's Dirichlet posterior has no mode (naming the
        class as the estimator does).
    """
    kind = _validation.check_estimate(fitted.estimate if kind is None else kind)
    return _class_prior.estimate_log(
        fitted.class_dirichlet, fitted.class_prior, fitted.stats.class_count, kind, fitted.classes
    )


def log_evidence(fitted):
    r"""Log marginal likelihood :math:`\log p(X, y)` of the statistics a fitted model holds.

    The label part (:func:`bayesnb.core.class_prior.labels_log_evidence`) plus the
    family's feature part given the labels: the estimator's ``log_evidence()``, by the
    same functions. A model conditioned on other statistics (``fitted.condition``) gives
    the evidence of those.

    Returns
    -------
    float
    """
    labels = _class_prior.labels_log_evidence(fitted.class_dirichlet, fitted.class_prior, fitted.stats.class_count)
    return labels + float(fitted.family.log_evidence(fitted.prior, fitted.stats))


def loo_approximations(fitted, kind):
    """Why the exact leave-one-out of a fitted model differs from refits, for term ``kind`` (empty: it does not).

    The estimator's ``loo_approximations(kind)`` as it was when the pytree was built.

    Parameters
    ----------
    fitted : FittedModel
    kind : {"conditional", "joint"}

    Returns
    -------
    tuple of str

    Raises
    ------
    ValueError
        For another ``kind``, or where the estimator could not list them when the pytree
        was built (see :class:`Unavailable`).
    """
    if not (isinstance(kind, str) and kind in ("conditional", "joint")):
        raise ValueError(f"kind must be 'conditional' or 'joint', got {kind!r}")
    return dict(_available(fitted.loo_approximations))[kind]


def fitted_on(fitted, Xv, y_index, weight=None):
    """Whether a fitted model holds the sufficient statistics of exactly these rows.

    The statistics of validated rows ``Xv`` with class indices ``y_index`` and weights
    (``fitted.validated_stats``) against ``fitted.stats``: the same type and structure,
    and every leaf equal up to ``1e-9`` of its largest magnitude (rows merged in another
    order, in batches or shards, sum in another order). The functions that are defined
    on the training rows (the evidence of the data, exact leave-one-out) refuse other
    rows with it.

    Parameters
    ----------
    fitted : FittedModel
    Xv : validated rows (``fitted.validate(X)``)
    y_index : int ndarray of shape (n_samples,)
    weight : ndarray of shape (n_samples,), optional

    Returns
    -------
    bool
    """
    mine, theirs = fitted.validated_stats(Xv, y_index, weight), fitted.stats
    if type(mine) is not type(theirs) or jax.tree.structure(mine) != jax.tree.structure(theirs):
        return False
    return all(
        np.shape(a) == np.shape(b)
        and np.allclose(a, b, rtol=1e-9, atol=1e-9 * max(1.0, float(np.max(np.abs(b), initial=0.0))))
        for a, b in zip(jax.tree.leaves(mine), jax.tree.leaves(theirs))
    )


def class_log_draws(key, fitted, n, *, prior=False):
    """``n`` draws of the log class proportions, shape (n, n_classes).

    From the class posterior (``fitted.class_posterior``), or from its prior
    (``class_dirichlet``) with ``prior=True``; fixed proportions (``class_prior``) are
    the same in every draw.
    """
    dist = fitted.class_dirichlet if prior else fitted.class_posterior
    n_classes = fitted.n_classes
    if dist is None:
        with np.errstate(divide="ignore"):
            return np.broadcast_to(np.log(fitted.class_prior), (n, n_classes))
    return in_blocks(lambda k, m: _class_prior.sample_log(k, dist, m), key, n, draw_block(n, n_classes))


def feature_draws(key, fitted, n, *, prior=False):
    """``n`` iid draws of the feature parameters: ``family.sample`` of the posterior (or the prior).

    Returns
    -------
    params : the family's parameter pytree with leading axis ``n`` (a dict of them by
        block name for a mixed model), ndarrays, drawn in blocks (see :func:`draw_block`)
    """
    return _draws_of(key, fitted.family, fitted.prior if prior else fitted.posterior, n)


def block_draws(key, block, n):
    """``n`` iid draws of one block's parameters from its posterior (see :func:`feature_draws`).

    Parameters
    ----------
    key : jax.random key
    block : FittedBlock
    n : int

    Returns
    -------
    the block family's parameter pytree with leading axis ``n``, ndarrays
    """
    return _draws_of(key, block.family, block.posterior, n)


def _draws_of(key, family, dist, n):
    return in_blocks(lambda k, m: family.sample(k, dist, m), key, n, draw_block(n, _size(dist)))


def draws(fitted, n, random_state, *, prior=False):
    """``n`` iid draws of (log class proportions, feature parameters), as NumPy arrays.

    The key of ``random_state`` is split into a class key and a feature key, as
    ``estimator.sample_posterior`` splits it.

    A model fitted with hyperpriors (``fitted.hyper_posterior`` holds draws) has as
    posterior the equal-weight mixture of the conditional posteriors at those draws
    (``fitted.hyper_conditional(m)``): each draw is made from the conditional at a
    draw picked at random (:func:`mixture_groups`, from the first half of the key; the
    draws of group ``g`` from ``fold_in`` of the second half by ``g``), in the order of
    the picks. Its prior (``prior=True``) has the hyperpriors themselves:
    :func:`hyper_prior_draws`.

    Parameters
    ----------
    fitted : FittedModel
    n : int
    random_state : int, RandomState, Generator, jax key or None
    prior : bool

    Returns
    -------
    log_class : ndarray of shape (n, n_classes)
    params : the family's parameter pytree with leading axis ``n`` (dict by block for a mixed model)
    """
    key = key_from_random_state(random_state)
    hyper = hyper_posterior(fitted)
    if hyper:
        if prior:
            return hyper_prior_draws(fitted, n, key)
        return _mixture_draws(fitted, n, key, next(iter(hyper.values())).shape[0])
    key_class, key_feat = _sampling.split(key)
    params = feature_draws(key_feat, fitted, n, prior=prior)
    return class_log_draws(key_class, fitted, n, prior=prior), jax.tree.map(np.asarray, params)


def hyper_prior_draws(fitted, n, key):
    r"""``n`` draws of (log class proportions, feature parameters) from the prior, hyperpriors included.

    Each draw has its own hyperparameter values :math:`a \sim p(a)`, drawn from the
    hyperpriors (from the first half of the key, split once per hyperprior), then
    :math:`(\pi, \theta)` from the plain prior at :math:`a` (draw ``i`` from ``fold_in``
    of the second half by ``i``). The hyperparameters are drawn in float64. The plain
    prior at :math:`a` is the estimator's prior rebuilt by its embedding
    (``fitted.hyper_embedding``, :func:`bayesnb.core.embedding.embed`), which copies
    the values into the prior pytree where the estimator's prior construction puts
    them: the prior of the collapsed model that NUTS integrates. It is the prior of an
    estimator refitted at :math:`a` wherever that estimator takes :math:`a` as given;
    one that clips or refuses a value at refit (``bayesnb.sklearn``'s
    ``force_alpha=False`` clips alpha below 1e-10) is not consulted.

    Parameters
    ----------
    fitted : FittedModel
        With integrated hyperparameters.
    n : int
    key : jax PRNG key

    Returns
    -------
    log_class : ndarray of shape (n, n_classes)
    params : the family's parameter pytree with leading axis ``n``
    """
    if fitted.hyper_embedding is None:
        raise ValueError(f"this {fitted.name} has no hyperpriors: its prior draws are draws(fitted, n, key, prior=True)")
    hypers, emb = fitted.hyper_embedding
    key_values, key_draws = jax.random.split(key)
    keys = jax.random.split(key_values, len(hypers))
    with enable_x64():
        values = {
            h.name: np.asarray(_in_float64(h.distribution).sample(k, (n,)), dtype=np.float64)
            for h, k in zip(hypers, keys)
        }
    components = (
        (partial(_prior_at, fitted, emb, {name: v[i] for name, v in values.items()}), np.array([i])) for i in range(n)
    )
    return mixture_draws(components, n, key_draws, prior=True)


def _in_float64(distribution):
    """A numpyro distribution (a pytree) with its floating parameters in float64 (call under x64).

    Its draws are then float64: in float32 a hyperprior with mass near 0 (a Gamma of
    shape 0.05 puts about 1% of its draws below the smallest float32) gives exact zeros,
    which no prior takes.
    """
    return jax.tree.map(
        lambda leaf: jax.numpy.asarray(leaf, jax.numpy.float64) if np.issubdtype(np.result_type(leaf), np.floating) else leaf,
        distribution,
    )


def _prior_at(fitted, emb, values):
    """``fitted`` with the plain prior at hyperparameter ``values``, for :func:`draws` with ``prior=True``.

    Only the prior side is rebuilt (the feature prior and the class Dirichlet); the
    posterior side is not, so this model is only drawn from with ``prior=True``.
    """
    with enable_x64():
        tree = embed(emb, values)
    # Each entry in the dtype of the estimator's own prior (embed's values are float64).
    leaves = [np.asarray(leaf, dtype=np.asarray(base).dtype) for leaf, base in zip(jax.tree.leaves(tree), emb.base)]
    prior, concentration = jax.tree.unflatten(jax.tree.structure(tree), leaves)
    return dataclasses.replace(
        fitted, prior=prior, class_dirichlet=None if concentration is None else Dirichlet(concentration),
        hyper_posterior=None, hyper_conditional=None, hyper_embedding=None,
        hyper_joint_draws=None, hyper_chains=None,
    )


def _mixture_draws(fitted, n, key, total):
    """:func:`draws` of the mixture over ``total`` hyperparameter draws (see :func:`draws`)."""
    key_groups, key_draws = _sampling.split(key)
    components = [
        (partial(fitted.hyper_conditional, m), positions) for m, positions in mixture_groups(key_groups, n, total)
    ]
    return mixture_draws(components, n, key_draws)


def mixture_draws(components, n, key, *, prior=False):
    """``n`` draws of a mixture, each component's made by :func:`draws` and put back at its positions.

    Parameters
    ----------
    components : iterable of (callable, int ndarray)
        ``(make, positions)``: ``make()`` returns the component's (plain)
        :class:`FittedModel` (or a fitted estimator, read by :func:`as_fitted`), made
        when reached and let go after its draws; ``positions`` are the
        indices in ``range(n)`` of its draws. Every index is some component's.
    n : int
    key : jax.random key
        Component ``g`` (in the iteration's order) draws from ``fold_in(key, g)``.
    prior : bool
        Draw from each component's prior instead of its posterior.

    Returns
    -------
    log_class : ndarray of shape (n, n_classes)
    params : the family's parameter pytree with leading axis ``n``
    """
    out = None
    for g, (make, positions) in enumerate(components):
        part = draws(as_fitted(make()), positions.size, _sampling.fold_in(key, g), prior=prior)
        if out is None:
            out = jax.tree.map(lambda leaf: np.empty((n,) + np.shape(leaf)[1:], np.asarray(leaf).dtype), part)
        jax.tree.map(lambda dst, src: dst.__setitem__(positions, np.asarray(src)), out, part)
    return out


def simulate(key, fitted, params, y_index):
    """Feature rows given parameters and class indices: each block's ``family.simulate``.

    A column in no block of a mixed model (``remainder="drop"``) is NaN.

    Returns
    -------
    ndarray of shape (n_rows, n_features_in)
    """
    return np.asarray(fitted.family.simulate(key, params, y_index, fitted.stats))


def take_rows(fitted, X, start, stop):
    """Rows ``start:stop`` of validated input (a masked or block-split input slices itself).

    All the rows are ``X`` itself: slicing a CSR matrix copies it, and the draw engine
    asks for every row once per block of draws (1000 copies of the matrix for 1000
    draws of a long posterior otherwise).
    """
    rows = getattr(X, "rows", None)
    if rows is not None:
        return rows(start, stop)
    if start <= 0 and stop >= X.shape[0]:
        return X
    return X[start:stop]


def log_likelihood_draws(fitted, params, X):
    """Plug-in log-likelihood of validated rows under a block of draws, shape (n_draws, n_rows, n_classes).

    ``family.log_likelihood(params, X, prior)`` with the draws stacked as classes; rows
    with unobserved entries (``missing="ignore"``) are scored on their observed entries
    (the family's ``log_likelihood`` with the mask); a mixed model sums its blocks.
    """
    return _draws_log_likelihood(fitted.family, fitted.prior, params, X, fitted.n_classes)


def _draws_log_likelihood(family, prior, params, X, n_classes):
    if family.blocks is not None:
        # A product of families: its blocks' log-likelihoods add up, each piece of the rows
        # scored by its own family.
        return sum(
            _draws_log_likelihood(b.family, prior[b.name], params[b.name], part, n_classes)
            for b, part in zip(family.blocks, X.parts)
        )
    if isinstance(X, _missing.MaskedX):
        # Rows with unobserved entries: the family's likelihood of the observed ones, per draw.
        n = jax.tree.leaves(params)[0].shape[0]
        return np.stack(
            [family.log_likelihood(jax.tree.map(lambda a: a[d], params), X.X, prior, mask=X.mask) for d in range(n)]
        )
    if family.model is not None:
        # Parameters shared by the classes (a shared covariance) get their class axis.
        params = family.model(prior).per_class(params, n_classes)
    return stacked_log_likelihood(lambda p, rows: family.log_likelihood(p, rows, prior), params, X, n_classes)


def stacked_log_likelihood(log_likelihood, params, X, n_classes):
    r"""Log-likelihood of every row under every draw, by one call with draws stacked as classes.

    A naive Bayes log-likelihood treats its class axis as a batch: the parameters of
    ``n`` draws of ``C`` classes, reshaped from (n, C, ...) to (n C, ...), are scored in
    one call (for the linear families one sparse or dense product with an
    (n C, n_features) matrix) instead of ``n`` calls.

    Parameters
    ----------
    log_likelihood : callable ``(params, X) -> (n_rows, n_classes')``
    params : pytree whose leaves have shape (n, n_classes, ...)
    X : rows
    n_classes : int

    Returns
    -------
    ndarray of shape (n, n_rows, n_classes)
    """
    leaves = jax.tree.leaves(params)
    n = int(np.shape(leaves[0])[0])
    for leaf in leaves:
        if np.shape(leaf)[:2] != (n, n_classes):
            raise ValueError(
                f"posterior draws must have shape (n_draws, n_classes, ...) = ({n}, {n_classes}, ...), "
                f"got {np.shape(leaf)}"
            )
    folded = jax.tree.map(lambda a: np.reshape(np.asarray(a), (n * n_classes,) + np.shape(a)[2:]), params)
    ll = np.asarray(log_likelihood(folded, X), dtype=np.float64)
    return ll.reshape(ll.shape[0], n, n_classes).transpose(1, 0, 2)
