r"""The family protocol: what a conjugate family *is*, and the registry that names them.

A conjugate family is one immutable :class:`Family` value, a named tuple of pure
functions in the style of optax's ``GradientTransformation`` and blackjax's
``SamplingAlgorithm``. Every layer of bayesnb (the estimators, missing values, mixed
blocks, the numpyro models, export, evidence, empirical Bayes, SBC, uncertainty,
persistence, the CLI) reaches a family through these members and the registry, never
by asking which family it holds.

The state the functions pass around is pytrees: a *prior* and a *posterior* of one type
(conjugacy: ``type(posterior(prior, stats)) is prior_type``), *statistics* (a named tuple
with a ``merge`` method, additive over disjoint rows) and *parameters* (the plug-in
parameters of the likelihood; a leading axis of draws where sampled).

Members
-------
name : str
    Registry key, e.g. ``"multinomial"``.
prior_type : type
    The named tuple of the prior and the posterior (e.g. :class:`bayesnb.core.priors.Dirichlet`).
support : str
    What one feature value is: ``"counts"`` (non-negative integers), ``"binary"``
    (0/1), ``"codes"`` (category codes 0..K-1), ``"real"`` or ``"positive"`` (positive
    reals). Readers of users' files and tests that generate data go by it.
hyperparameters : tuple of str
    The prior's continuous fields, in the order the prior type lists them (the fields
    that :func:`bayesnb.core.empirical_bayes` can learn from the evidence; ``log_evidence``
    is differentiable in each).
stats : callable ``(X, y_index, n_classes, weight=None, mask=None, **options) -> stats``
    Sufficient statistics of validated rows ``X`` of shape (n_samples, n_features) with
    class indices ``y_index`` of shape (n_samples,) and row weights. ``mask`` (see
    *Unobserved entries* below) leaves entries out; a family whose rows are not products
    over features refuses it with :class:`bayesnb.core.families._mask.MaskRefused` (a
    ``ValueError``).
posterior : callable ``(prior, stats) -> posterior``
    The conjugate update (of ordinary or per-cell statistics).
point : callable ``(prior, stats, kind, **options) -> params``
    Plug-in parameters for ``kind`` in ``"mle"``, ``"map"``, ``"mean"``. The MLE is a
    function of the statistics alone, which is why the prior and the statistics (not the
    posterior) are passed.
log_likelihood : callable ``(params, X, prior, mask=None) -> (n_samples, n_classes)``
    Plug-in log-likelihood of each row under each class (with ``mask``: of its observed
    entries). ``prior`` carries the structure that the parameters alone do not (e.g.
    each feature's number of categories); the families that do not need it ignore it.
log_likelihood_contrast : callable ``(params, X, prior, mask=None) -> (n_samples, n_classes)`` or None
    ``log_likelihood`` up to a term of each row that is the same under every class:
    all that class posteriors depend on, where leaving that term out is cheaper (one
    covariance shared by the Gaussian classes: the quadratic term of each row cancels,
    the rest is affine). Callers that normalise over classes (``predict_proba``) use it;
    callers that need the joint density use ``log_likelihood``. None: the family has no
    such shortcut and callers use ``log_likelihood``.
log_predictive : callable ``(posterior, X, mask=None) -> (n_samples, n_classes)``
    Exact log posterior predictive of each row under each class (with ``mask``: of its
    observed entries).
log_predictive_contrast : callable ``(posterior, X) -> (n_samples, n_classes)`` or None
    ``log_predictive`` up to a term of each row that is the same under every class, as
    ``log_likelihood_contrast`` is to ``log_likelihood`` (the Poisson family's
    :math:`-\sum_j \log x_j!`). None: callers use ``log_predictive``.
log_evidence : callable ``(prior, stats) -> scalar``
    Log marginal likelihood of the features given the labels (traceable: see *Tracing
    with JAX* below).
sample : callable ``(key, dist, n) -> params``
    ``n`` iid draws of the parameters from a prior or posterior (a leading axis ``n``).
simulate : callable ``(key, params, y_index, stats) -> X``
    Feature rows given parameters (one set, or one per row) and class indices. ``stats``
    are the training statistics, for what the model leaves unmodelled (e.g. document
    lengths); most families ignore them.
mean_params : callable ``(dist) -> params`` or None
    Set where the exact predictive of one row *is* the plug-in of the mean (one
    observation per Dirichlet cell: Bernoulli, categorical); callers may then reuse the
    mean's parameters instead of evaluating ``log_predictive``.
relevance_log_bayes_factor : callable ``(prior, stats) -> (n_features,)`` or None
    Per-feature log Bayes factor of class-specific against pooled parameters, where the
    family has a closed form for it.
default_prior : callable ``(stats, **options) -> prior``
    The prior used when the user gives none (of ordinary or per-cell statistics).
model : callable ``(prior) -> ModelSpec`` or None
    The family's numpyro model: a subclass of
    :class:`bayesnb.core.families._models.ModelSpec` (its parameter sites, the site of the
    rows, the log-likelihood from the statistics, canonical variables with their arviz
    dims, closed-form posterior moments), from which :mod:`bayesnb.ppl.models` builds the
    per-row and statistics models, :mod:`bayesnb.ppl.mcmc` the NUTS cross-check and
    :mod:`bayesnb.ppl.export` the variables. None: the family has no numpyro model.
feature_log_odds : callable ``(params, prior) -> (terms, feature, category, unit)`` or None
    Where a row's log-likelihood is a sum of per-term contributions with one parameter
    each: ``terms`` of shape (n, n_classes, n_terms) is the contribution of each term
    under each class for parameters with a leading axis ``n``, ``feature`` (n_terms,)
    the feature of each term, ``category`` (n_terms,) its category or None, ``unit`` a
    phrase naming what one term counts (``"one occurrence"``). Differences across
    classes are the terms of the log-odds
    (:func:`bayesnb.analysis.uncertainty.feature_log_odds_draws`).
log_evidence_offset : callable ``(X, y_index, weight, n_classes, **options) -> float`` or None
    What turns ``log_evidence`` (of the features as the family models them) into the log
    probability of the rows as observed, so that evidences of different families of the
    same data are comparable; None where ``log_evidence`` already is that probability.
    (The multinomial family scores token sequences given document lengths: its offset
    adds the multinomial coefficients and a model of the lengths.)
expected_log_likelihood : callable ``(posterior, X, mask=None) -> (n_samples, n_classes)`` or None
    :math:`E_q[\log p(x_i \mid \theta_c)]` of each row under each class, the expectation
    over parameters distributed as ``posterior`` (a prior or posterior pytree), where it
    is in closed form (Dirichlet and Beta families: the plug-in log-likelihood at the
    digamma differences :math:`E[\log\theta]`; Gamma families: :math:`E[\log\lambda]`
    and :math:`E[\lambda]`). The E-step of mean-field variational Bayes
    (:class:`bayesnb.SemiSupervisedNB` with ``method="vb"``). It agrees with
    ``log_likelihood`` up to a term constant across classes where the latter leaves
    such a term out. None: no closed form.
log_density : callable ``(dist, params, raise_by=0.0) -> float`` or None
    Log density of the plug-in parameters ``params`` (of the type ``point`` returns)
    under the prior or posterior pytree ``dist``, summed over classes and features: the
    log prior of MAP-EM's log posterior (:class:`bayesnb.SemiSupervisedNB` with
    ``method="em"``). ``raise_by`` raises every concentration of a Dirichlet, Beta or
    Gamma-shape parameter by that amount first (Nigam's Laplace smoothing is
    ``raise_by=1``: its MAP is the posterior mean under ``dist``); a family without
    such concentrations refuses a non-zero ``raise_by`` with ``ValueError``. None: no
    density.
local_draws : callable ``(key, dist, y_index) -> params`` or None
    Where ``sample`` draws a *row's own* latent parameters rather than parameters
    shared by all rows (the Pólya family: a new document's
    :math:`\theta_d \sim \mathrm{Dir}(\alpha_c)`, while :math:`\alpha` itself is
    fixed): one draw per row of ``y_index`` from its class's distribution in ``dist``,
    as parameters with a leading row axis, shape (n_rows, n_classes, ...) (a broadcast
    view is fine), for ``simulate``. A replicated data set from the posterior
    predictive (:func:`bayesnb.analysis.ppc.ppc`) then takes one draw per row instead
    of one draw for all rows. None (the default): parameters are shared by the rows.
blocks : tuple of :class:`bayesnb.core.families.product.Block` or None
    Set only on a *product* of families over blocks of columns
    (:func:`bayesnb.core.families.product.product`, the family of a
    :class:`bayesnb.MixedNB`): its blocks, each a name, a registered family and its
    columns. Its pytrees are dicts by block name and its rows
    :class:`~bayesnb.core.families.product.BlockRows`. None for a registered family.
recognise : callable ``(view) -> Recognised or None`` or None
    How :func:`bayesnb.compile_model` recognises the family in a user's numpyro model:
    given a ``view`` of one observed feature site (:class:`bayesnb.ppl.compile.SiteView`:
    its likelihood, the latent sites feeding it and probes of how they do), return
    ``None`` when the site's likelihood is not the family's (e.g. not a Bernoulli),
    the family's prior pytree read off the model (``view.recognised(prior, **roles)``:
    constants from the model, hyperprior sites as
    :class:`~bayesnb.ppl.compile.Hyperprior` fields) when the (prior, likelihood) pair
    is the family's conjugate pair, and raise
    :class:`~bayesnb.exceptions.ModelCompileError` naming the site when the likelihood
    is the family's but its prior or dependencies are not. None: not recognised.
tied_log_evidence : callable ``(stats) -> callable (prior) -> scalar`` or None
    Where the evidence is a sum over cells of a function of each cell's concentration and
    counts (the Dirichlet families), the same evidence for a *tied* prior, whose fields are
    constant along every axis but the first (one value per class, e.g. a scalar
    :math:`\alpha` filling the prior), prepared once from the statistics so that one
    evaluation costs the number of distinct counts rather than classes x features
    (:func:`bayesnb.core.families._dirichlet.tied_log_evidence`). The returned function
    equals ``log_evidence(prior, stats)`` for every tied prior and is traceable; it reads
    each field only at index 0 of every axis but the first, so it may be handed the prior
    cut to length 1 along those axes (as :func:`bayesnb.core.empirical_bayes.learn_prior`
    does, to compile one program for every number of features); the caller guarantees the tie (:func:`bayesnb.ppl.collapsed.log_evidence_fn` checks it on
    the embedding of the hyperparameters). None: no such form.

Tracing with JAX
----------------
Inside the library's float64 scope (:func:`bayesnb.core._x64.enable_x64`), ``posterior``,
``point``, ``log_likelihood`` and ``log_predictive`` on *dense* rows, ``sample`` and
``log_evidence`` run under ``jax.jit``, ``jax.grad`` and ``jax.vmap`` (the contract test
``tests/core/test_family_jit.py`` checks every registered family). Concrete inputs keep
the CPU path (NumPy/SciPy, sparse CSR, threads); a call whose arguments are traced, or
that runs inside a JAX trace, takes a ``jax.numpy`` path with the same formulas
(:func:`bayesnb.core.kernels.is_traced`), equal to the CPU path to rounding. The
exception is ``sample``: eager, its variates are NumPy's, seeded from the key; traced,
``jax.random``'s with the same key (:mod:`bayesnb.core._sampling`), so a jitted call
gives exact draws of the same distribution, not the eager call's numbers. Traced,
values are unknown when the function runs, so an estimate that is undefined for the
data (a ``"map"`` without a mode, a ``"mean"`` that is infinite, an ``"mle"`` of an
empty class) is NaN where the eager call raises ``ValueError``. Masks (unobserved
entries) and scipy sparse ``X`` have the CPU path only: sparse ``X`` with traced
parameters raises ``TypeError``.

Unobserved entries
------------------
``mask`` is None or a bool array, dense or scipy sparse, of shape (n_samples,
n_features), True at the entries that are *not* observed (``missing="ignore"``: the NaNs);
the values of ``X`` there are ignored. Unobserved entries leave the statistics and the
likelihood, so that no layer asks which family it holds:

* a *feature-wise* family (each feature its own factor and its own prior) returns
  per-cell statistics carrying ``observed_count`` :math:`N_{cj}`, the weight of the rows
  of class :math:`c` that observe feature :math:`j` (:func:`bayesnb.core.stats.is_masked`;
  ordinary statistics become per cell with ``as_masked``, so batches with and without
  unobserved entries merge); its ``posterior``, ``point``, ``log_evidence`` and
  ``default_prior`` take them (each cell is the fit of its feature on its observed
  rows), and its masked likelihoods drop the factors of the unobserved entries;
* a family whose rows are not products over features refuses a mask in ``stats`` and
  scores a partially observed row by its own marginal of the observed entries
  (multinomial: conditional on the observed vocabulary; Gaussian with full covariance:
  the marginal of the observed coordinates).

A row with nothing observed scores 0 (log 1) under every class.

Examples
--------
>>> import numpy as np
>>> from bayesnb import families
>>> fam = families.get("bernoulli")
>>> X = np.array([[1, 0], [1, 1], [0, 1]])
>>> stats = fam.stats(X, np.array([0, 0, 1]), 2)
>>> post = fam.posterior(fam.default_prior(stats), stats)
>>> type(post).__name__, fam.log_predictive(post, X).shape
('Beta', (3, 2))
"""

from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

import jax
import numpy as np

__all__ = ["Family", "get", "names", "register"]


class Family(NamedTuple):
    """A conjugate family: its name, its prior type and its pure functions (see the module)."""

    name: str
    prior_type: type
    support: str
    hyperparameters: tuple
    stats: Callable[..., Any]
    posterior: Callable[..., Any]
    point: Callable[..., Any]
    log_likelihood: Callable[..., Any]
    log_predictive: Callable[..., Any]
    log_evidence: Callable[..., Any]
    sample: Callable[..., Any]
    simulate: Callable[..., Any]
    default_prior: Callable[..., Any]
    log_likelihood_contrast: Callable[..., Any] | None = None
    log_predictive_contrast: Callable[..., Any] | None = None
    mean_params: Callable[..., Any] | None = None
    relevance_log_bayes_factor: Callable[..., Any] | None = None
    model: Callable[..., Any] | None = None
    feature_log_odds: Callable[..., Any] | None = None
    log_evidence_offset: Callable[..., Any] | None = None
    expected_log_likelihood: Callable[..., Any] | None = None
    log_density: Callable[..., Any] | None = None
    local_draws: Callable[..., Any] | None = None
    blocks: tuple | None = None
    recognise: Callable[..., Any] | None = None
    tied_log_evidence: Callable[..., Any] | None = None

    @property
    def predictive_is_plugin(self):
        """bool: whether the exact predictive of a row is the plug-in of the posterior mean."""
        return self.mean_params is not None

    def merge(self, first, *others):
        """Statistics of the union of disjoint sets of rows (each statistics type merges itself)."""
        out = first
        for other in others:
            if type(other) is not type(out):
                raise TypeError(f"cannot merge {type(out).__name__} with {type(other).__name__}")
            out = out.merge(other)
        return out

    def __repr__(self):
        return f"Family({self.name!r})"


_REGISTRY: dict[str, Family] = {}


def _float64_outside_traces(log_evidence):
    # Eagerly, a JAX float64 scalar handed to a caller outside the library's x64 scope
    # would turn float32 in the caller's next operation; a NumPy float64 stays exact.
    # Under jax.jit / jax.grad the traced value is returned as it is.
    if getattr(log_evidence, "_float64_outside_traces", False):
        return log_evidence

    @functools.wraps(log_evidence)
    def wrapped(prior, stats, *args, **kwargs):
        out = log_evidence(prior, stats, *args, **kwargs)
        return out if isinstance(out, jax.core.Tracer) else np.float64(out)

    wrapped._float64_outside_traces = True
    return wrapped


def register(family):
    """Add ``family`` to the registry under ``family.name`` and return it.

    The registered ``log_evidence`` returns a NumPy float64 when called eagerly (a traced
    value under ``jax.jit`` / ``jax.grad``), so that arithmetic on it outside the
    library's float64 scope keeps its precision.

    Raises
    ------
    TypeError
        If ``family`` is not a :class:`Family`.
    ValueError
        If another family already holds the name.
    """
    if not isinstance(family, Family):
        raise TypeError(f"register takes a Family, got {type(family).__name__}")
    family = family._replace(log_evidence=_float64_outside_traces(family.log_evidence))
    held = _REGISTRY.get(family.name)
    if held is not None and held is not family:
        raise ValueError(f"a family named {family.name!r} is already registered")
    _REGISTRY[family.name] = family
    return family


def get(name):
    """The registered family called ``name``.

    Raises
    ------
    ValueError
        Naming the registered families, if none is called ``name``.
    """
    if isinstance(name, Family):
        return name
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown family {name!r}; the registered families are {', '.join(names())}") from None


def names():
    """Names of the registered families, in the order they were registered.

    Returns
    -------
    tuple of str
    """
    return tuple(_REGISTRY)
