r"""The collapsed model: hyperparameters integrated out by NUTS over the closed-form evidence.

With the feature parameters :math:`\theta` and the class proportions :math:`\pi`
integrated out in closed form, what is left of a conjugate naive Bayes model is a
density over its hyperparameters :math:`a` alone,

.. math::

    \log p(a \mid X, y) = \underbrace{\log p(X \mid y, a)}_{\text{family's log\_evidence}}
        + \underbrace{\log p(y \mid \beta)}_{\text{Dirichlet evidence of the labels}}
        + \log p(a) + \text{const},

a handful of dimensions (one per integrated hyperparameter element) that NUTS samples
cheaply: the sufficient statistics are computed once, and every step of the sampler
evaluates (and differentiates) only the evidence.

This module is the pure machinery, with no knowledge of any estimator or family:

* :func:`find_hyperpriors` lists the parameters given as numpyro distributions (at the
  top level, inside a pair such as ``alpha=(a, b)``, or as a field of a prior named
  tuple such as ``NormalInverseGamma(kappa=dist.LogNormal(0, 1), ...)``);
* :func:`embedding` learns, from two eager evaluations per hyperparameter of a caller's
  prior builder, which entries of the prior pytree copy which element of each
  hyperparameter (broadcasting, repetition over categories, pairs), and
  :func:`embed` rebuilds the prior from traced values: one generic mechanism for every
  family, with the estimator's own validation run on concrete values only;
* :func:`log_evidence_fn` is the collapsed log likelihood of the hyperparameters;
* :func:`run_nuts` samples :math:`p(a \mid X, y)` with numpyro's NUTS (the hyperprior's
  support is mapped to the real line by numpyro) and returns the draws with their
  diagnostics; :func:`posterior_mode` finds the mode of the same density and
  :func:`log_densities` evaluates it at many points.

The statistics reach every compiled program as arguments, never as constants: a
hyperprior refit on other data of the same shapes (another fold, a bootstrap resample)
reuses the NUTS program (``bayesnb.ppl._nuts``), the densities' and the optimiser's
(a bounded cache, ``COLLAPSED_CACHE_SIZE``, :func:`clear_collapsed_cache`) and compiles
nothing.

The estimators (:class:`bayesnb.estimators._base.BaseNB`) build on it: a hyperparameter
given as a distribution is integrated over at ``fit``, and ``estimate="predictive"`` is
the predictive averaged over the draws (see the theory page on hyperpriors).
"""

from __future__ import annotations

import hashlib
import sys
from collections import OrderedDict
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesnb.core._threads import one_blas_thread
from bayesnb.core._x64 import enable_x64
# Re-exported: the fitted-model pytree holds an Embedding and core draws from its prior,
# so the type and embed live in core (below this layer).
from bayesnb.core.embedding import Embedding, embed
from bayesnb.core.families import _dirichlet

__all__ = [
    "Hyper",
    "Embedding",
    "HyperRun",
    "is_distribution",
    "find_hyperpriors",
    "substitute",
    "base_values",
    "check_support",
    "embedding",
    "embed",
    "log_evidence_fn",
    "log_density_fn",
    "log_densities",
    "run_nuts",
    "posterior_mode",
    "clear_collapsed_cache",
    "COLLAPSED_CACHE_SIZE",
]


def is_distribution(value):
    """Whether ``value`` is a numpyro distribution (without importing numpyro).

    A numpyro distribution cannot exist unless numpyro was imported, so the check costs
    nothing for estimators whose parameters are plain numbers.
    """
    module = sys.modules.get("numpyro.distributions")
    return module is not None and isinstance(value, module.Distribution)


class Hyper(NamedTuple):
    """One hyperparameter given as a distribution.

    Attributes
    ----------
    name : str
        How draws are named: the parameter (``"alpha"``), an element of a pair
        (``"alpha[0]"``) or a field of a prior named tuple (``"prior.kappa"``).
    path : tuple
        Where it sits in the estimator's parameters: ``("alpha",)``, ``("alpha", 0)``,
        ``("prior", "kappa")``.
    distribution : numpyro.distributions.Distribution
        The hyperprior.
    """

    name: str
    path: tuple
    distribution: Any

    @property
    def shape(self):
        """tuple: shape of one draw (the distribution's batch and event shapes)."""
        return tuple(self.distribution.batch_shape) + tuple(self.distribution.event_shape)


def _is_namedtuple(value):
    return isinstance(value, tuple) and hasattr(value, "_fields")


def find_hyperpriors(params):
    """The parameters of ``params`` given as numpyro distributions.

    Parameters
    ----------
    params : dict of str to object
        An estimator's constructor parameters (``get_params(deep=False)``).

    Returns
    -------
    list of Hyper
        In the order of ``params`` (then of the pair or the named tuple's fields).
    """
    found = []
    for key, value in params.items():
        if is_distribution(value):
            found.append(Hyper(key, (key,), value))
        elif _is_namedtuple(value):
            for field in value._fields:
                if is_distribution(getattr(value, field)):
                    found.append(Hyper(f"{key}.{field}", (key, field), getattr(value, field)))
        elif isinstance(value, (tuple, list)):
            for i, item in enumerate(value):
                if is_distribution(item):
                    found.append(Hyper(f"{key}[{i}]", (key, i), item))
    return found


def substitute(params, values):
    """``params`` with the entry at each path replaced by a value (pairs and named tuples rebuilt).

    Parameters
    ----------
    params : dict of str to object
    values : dict of tuple to object
        ``{path: value}`` (paths as in :class:`Hyper`).

    Returns
    -------
    dict of str to object
        The changed top-level entries only.
    """
    out = {}
    for path, value in values.items():
        key = path[0]
        current = out.get(key, params[key])
        if len(path) == 1:
            out[key] = value
        elif _is_namedtuple(current):
            out[key] = current._replace(**{path[1]: value})
        else:
            items = list(current)
            items[path[1]] = value
            out[key] = type(current)(items) if isinstance(current, tuple) else items
    return out


def base_values(hypers):
    """A point inside every hyperprior's support: the image of 0 under numpyro's bijection.

    For a positive support that is 1, for the real line 0, for :math:`(L, \\infty)`
    :math:`L + 1`; the same point numpyro's initialisation strategies centre on.

    Returns
    -------
    dict of str to float64 ndarray (of each hyperparameter's shape)
    """
    from numpyro.distributions import biject_to

    with enable_x64():
        return {
            h.name: np.asarray(biject_to(h.distribution.support)(jnp.zeros(h.shape, jnp.float64)), dtype=np.float64)
            for h in hypers
        }


def check_support(hyper, build, base):
    """Refuse a hyperprior whose support holds values the hyperparameter cannot take.

    A few points of the support (-1, 0, 1e-6, 0.5, broadcast to the draw's shape) are
    passed to ``build`` with the other hyperparameters at ``base``; the estimator's own
    validation rejecting any of them means that NUTS could propose an invalid prior (a
    negative concentration from a ``Normal``, a ``df`` below ``n_features - 1``), which
    is refused here with the validator's message rather than turned into NaN densities.

    Parameters
    ----------
    hyper : Hyper
    build : callable ``(values: dict of str to ndarray) -> pytree``
        The caller's eager prior builder (raises ``ValueError`` / ``TypeError`` on an
        invalid value).
    base : dict of str to ndarray
        Values of every hyperparameter inside its support (:func:`base_values`).

    Raises
    ------
    ValueError
        Naming the hyperparameter, the distribution, its support and the value refused.
    """
    d = hyper.distribution
    if tuple(d.event_shape):
        raise ValueError(
            f"{hyper.name}={type(d).__name__}(...) has event shape {tuple(d.event_shape)}; a hyperprior must be a "
            "distribution of independent scalars (use a batch shape, e.g. .expand((n_features,)))"
        )
    for point in (-1.0, 0.0, 1e-6, 0.5):
        value = np.full(hyper.shape, point)
        with enable_x64():
            inside = bool(np.all(np.asarray(d.support(jnp.asarray(value)))))
        if not inside:
            continue
        try:
            build({**base, hyper.name: value})
        except (ValueError, TypeError) as err:
            try:
                build({**base, hyper.name: np.ones(hyper.shape)})
            except (ValueError, TypeError):
                # Not a matter of the support (a shape that does not broadcast, ...): the
                # caller reports the builder's own message.
                return
            raise ValueError(
                f"{hyper.name}={type(d).__name__}(...) has support {d.support}, which contains {point:g}, a value "
                f"{hyper.name} cannot take ({err}). Give a hyperprior on the values it can take, e.g. "
                "dist.Gamma, dist.LogNormal or dist.Exponential for a positive hyperparameter."
            ) from None


def embedding(build, hypers, base=None):
    """Learn how the hyperparameters enter the pytree that ``build`` returns.

    For each hyperparameter, ``build`` is evaluated at the base point and at the base
    point with that hyperparameter's elements moved to distinct nearby values (still in
    its support); the entries that moved must each equal one of the moved values
    exactly (a copy: broadcasting, repetition, one field of a pair) and are recorded as
    gathers from the hyperparameter. A hyperparameter that enters otherwise (scaled,
    summed) is refused, so :func:`embed` is exact wherever it is used.

    Parameters
    ----------
    build : callable ``(values: dict of str to ndarray) -> pytree of ndarrays``
        Eager and deterministic (the caller's prior construction, validation included).
    hypers : list of Hyper
    base : dict of str to ndarray, optional
        Default :func:`base_values`.

    Returns
    -------
    Embedding

    Raises
    ------
    ValueError
        If a hyperparameter changes nothing or enters other than by copies.
    """
    base = base_values(hypers) if base is None else base
    leaves, treedef = jax.tree.flatten(build(base))
    leaves = [np.asarray(leaf) for leaf in leaves]
    targets = []
    for h in hypers:
        b = np.asarray(base[h.name], dtype=np.float64)
        n = max(b.size, 1)
        # Distinct moved values, all inside the support (a step up from its bijection's 0).
        probe = b + 1e-3 * (np.arange(1, n + 1).reshape(b.shape) / (n + 1)) * (np.abs(b) + 1.0)
        moved = [np.asarray(leaf) for leaf in jax.tree.leaves(build({**base, h.name: probe}))]
        order = np.argsort(probe, axis=None)
        sorted_probe = probe.ravel()[order]
        touched = False
        for i, (before, after) in enumerate(zip(leaves, moved)):
            if before.shape != after.shape or not np.issubdtype(before.dtype, np.floating):
                continue
            changed = np.flatnonzero(before.ravel() != after.ravel())
            if changed.size == 0:
                continue
            touched = True
            new = after.ravel()[changed]
            at = np.clip(np.searchsorted(sorted_probe, new), 0, n - 1)
            if not np.array_equal(sorted_probe[at], new):
                raise ValueError(
                    f"{h.name} enters the prior other than as a copy of its values (scaled or combined with "
                    "other parameters); the collapsed model integrates only hyperparameters that are prior fields"
                )
            source = order[at]
            positions = None if changed.size == before.size else changed
            targets.append((i, h.name, positions, source))
        if not touched:
            raise ValueError(f"{h.name} does not enter the prior (a distribution for a parameter that is not used)")
    return Embedding(leaves, treedef, targets)


def log_evidence_fn(family, stats, class_count, emb):
    r"""The collapsed log likelihood of the hyperparameters, :math:`\log p(X, y \mid a)`.

    Parameters
    ----------
    family : Family
    stats : the family's statistics pytree (computed once)
    class_count : ndarray of shape (n_classes,)
    emb : Embedding
        Of the pytree ``(feature prior, class concentration or None)``.

    Returns
    -------
    jax.tree_util.Partial ``(values: dict) -> scalar``
        :math:`\log p(X \mid y, a) + \log p(y \mid \beta)` (the label part only where
        the class proportions have a Dirichlet prior), traceable in float64. A pytree
        whose leaves are the statistics (or the family's tied form of them) and the
        class counts, and whose function (:class:`_Evidence`: the family and the
        embedding) compares by value: :func:`run_nuts` passes the statistics to the
        compiled sampler as arguments, so a refit on data of the same shapes reuses it.
    """
    counts = np.asarray(class_count, dtype=np.float64)
    tied = _tied_evidence(family, stats, emb)
    evidence = stats if tied is None else tied
    return jax.tree_util.Partial(_Evidence(family, emb, tied is not None), evidence, counts)


class _Evidence:
    """The function of :func:`log_evidence_fn`'s Partial: ``(evidence, counts, values) -> scalar``.

    Compares and hashes by value (the family, whether the evidence is the tied form, and
    the embedding: its tree structure, the digests of its arrays and its targets), so that
    two fits of the same estimator settings give equal Partials' structures and share one
    compiled sampler (``bayesnb.ppl._nuts.sample_nuts`` keys its cache by it).
    """

    def __init__(self, family, emb, tied):
        self.family, self.emb, self.tied = family, emb, bool(tied)
        digest = hashlib.sha256()
        for leaf in emb.base:
            _digest_array(digest, leaf)
        for i, name, positions, source in emb.targets:
            digest.update(repr((i, name, positions is None)).encode())
            if positions is not None:
                _digest_array(digest, positions)
            _digest_array(digest, source)
        self._key = (family, self.tied, emb.treedef, digest.hexdigest())

    def __eq__(self, other):
        return isinstance(other, _Evidence) and self._key == other._key

    def __hash__(self):
        return hash(self._key)

    def __call__(self, evidence, counts, values):
        prior, class_concentration = embed(self.emb, values)
        out = evidence(prior) if self.tied else self.family.log_evidence(prior, evidence)
        if class_concentration is not None:
            out = out + _dirichlet.log_evidence(class_concentration, counts)
        return out


def _digest_array(digest, value):
    arr = np.ascontiguousarray(np.asarray(value))
    digest.update(f"{arr.dtype}{arr.shape}".encode())
    digest.update(arr.tobytes())


def _tied_evidence(family, stats, emb):
    """``family.tied_log_evidence(stats)`` where every value the embedding can give the
    feature prior is tied (constant along every axis but the first), else None.

    A field is tied for every value of the hyperparameters when it is a constant that is
    tied, or when all of it copies hyperparameter elements that are the same along those
    axes (a scalar alpha filling the prior, one alpha per class); a field of which only
    some entries are copies, or whose copies vary along the features, is not.
    """
    if family.tied_log_evidence is None:
        return None
    prior, _ = jax.tree.unflatten(emb.treedef, emb.base)
    n_prior = len(jax.tree.leaves(prior))
    for leaf in emb.base[:n_prior]:
        if not _is_tied(np.asarray(leaf)):
            return None
    for i, _, positions, source in emb.targets:
        if i < n_prior and (positions is not None or not _is_tied(np.asarray(source).reshape(emb.base[i].shape))):
            return None
    return family.tied_log_evidence(stats)


def _is_tied(a):
    """Whether ``a`` is constant along every axis but the first."""
    if a.ndim < 2:
        return True
    first = a.reshape(a.shape[0], -1)
    return bool(np.all(first == first[:, :1]))


def log_density_fn(log_evidence, hypers):
    r"""The unnormalised log posterior :math:`\log p(X, y \mid a) + \log p(a)` in the hyperparameters' own coordinates.

    Parameters
    ----------
    log_evidence : callable ``(values: dict) -> scalar``
        :func:`log_evidence_fn`, or any traceable function.
    hypers : list of Hyper

    Returns
    -------
    jax.tree_util.Partial ``(values: dict) -> scalar``
        Whose function (:class:`_LogDensity`) holds the hyperpriors and compares by
        their values, and whose argument is ``log_evidence`` where that is a Partial
        (its statistics are then arguments of the programs of :func:`log_densities`
        and :func:`posterior_mode`, which a refit on data of the same shapes reuses);
        any other ``log_evidence`` is compiled in (one program per function object).
    """
    if isinstance(log_evidence, jax.tree_util.Partial):
        return jax.tree_util.Partial(_LogDensity(hypers), log_evidence)
    return jax.tree_util.Partial(_LogDensity(hypers, log_evidence))


def _hypers_key(hypers):
    """The hyperpriors by value (names, paths, distributions' classes and parameters), or None.

    A distribution is a pytree: its tree structure (class, shapes) and its leaves (the
    parameters: arrays by a digest of their bytes, as ``bayesnb.ppl._nuts`` keys the
    arguments it compiles in) determine its log density and support. None where a leaf
    or the structure is unhashable: such hyperpriors then compare by identity.
    """
    from bayesnb.ppl._nuts import _static_leaf_key

    try:
        leaves, treedef = jax.tree.flatten([tuple(h) for h in hypers])
        key = (treedef, tuple(_static_leaf_key(leaf) for leaf in leaves))
        hash(key)
        key == key  # noqa: B015 - a leaf whose == is elementwise fails here
    except (TypeError, ValueError, NotImplementedError):
        return None
    return key


class _LogDensity:
    """The function of :func:`log_density_fn`'s Partial: ``([log_evidence,] values) -> scalar``.

    Compares and hashes by the hyperpriors' values (:func:`_hypers_key`) and the
    compiled-in ``log_evidence`` (None: it is the Partial's argument), so that two fits
    with equal hyperpriors give equal Partials' structures and share the compiled
    programs of :func:`log_densities` and :func:`posterior_mode`; hyperpriors without a
    hashable value compare by identity (a new program per fit, as a closure would be).
    """

    def __init__(self, hypers, log_evidence=None):
        self.hypers = list(hypers)
        self.log_evidence = log_evidence
        key = _hypers_key(self.hypers)
        self._key = None if key is None else (key, log_evidence)
        try:
            hash(self._key)
        except TypeError:  # a compiled-in log_evidence without a hash
            self._key = None

    def __eq__(self, other):
        if not isinstance(other, _LogDensity):
            return False
        if self._key is None or other._key is None:
            return self is other
        return self._key == other._key

    def __hash__(self):
        return id(self) if self._key is None else hash(self._key)

    def __call__(self, *args):
        if self.log_evidence is None:
            log_evidence, values = args
        else:
            (values,) = args
            log_evidence = self.log_evidence
        out = log_evidence(values)
        for h in self.hypers:
            out = out + jnp.sum(h.distribution.log_prob(values[h.name]))
        return out


#: Compiled programs of :func:`log_densities` and :func:`posterior_mode` (least recently
#: used first out), one per hyperpriors' values, collapsed model (family and embedding)
#: and shapes of the statistics and points: the statistics are their arguments, so a
#: refit on other data of the same shapes compiles nothing. Each entry keeps one jitted
#: function (its executables and the embedding's prior arrays); dropping it frees them.
COLLAPSED_CACHE_SIZE = 16
_PROGRAMS: OrderedDict = OrderedDict()


def clear_collapsed_cache():
    """Drop every compiled program kept by :func:`log_densities` and :func:`posterior_mode`."""
    _PROGRAMS.clear()


def _cached(kind, make, *args):
    """The jitted function ``make()`` kept for ``kind`` and the structure and shapes of ``args``.

    ``args`` are the program's pytree arguments: their tree structure (the Partials'
    functions, compared by value) and their leaves' shapes and dtypes key the cache,
    never the leaves' values. A structure that cannot be hashed is not cached.
    """
    leaves, treedef = jax.tree.flatten(args)
    key = (kind, treedef, tuple((tuple(np.shape(leaf)), str(_dtype(leaf))) for leaf in leaves))
    try:
        hash(key)
    except TypeError:
        return make()
    program = _PROGRAMS.get(key)
    if program is None:
        program = make()
    _PROGRAMS[key] = program
    _PROGRAMS.move_to_end(key)
    while len(_PROGRAMS) > COLLAPSED_CACHE_SIZE:
        _PROGRAMS.popitem(last=False)
    return program


def _dtype(leaf):
    dtype = getattr(leaf, "dtype", None)
    return np.result_type(leaf) if dtype is None else dtype


def _vmapped(log_density, values):
    return jax.vmap(log_density)(values)


def log_densities(log_density, values):
    """``log_density`` at many points, in one compiled program.

    Parameters
    ----------
    log_density : callable ``(values: dict) -> scalar``
        :func:`log_density_fn` (the program is kept, see ``COLLAPSED_CACHE_SIZE``), or
        any traceable function (compiled for this call).
    values : dict of str to ndarray of shape (n, ...)
        The points, one per index of the leading axis.

    Returns
    -------
    float64 ndarray of shape (n,)
    """
    with enable_x64():
        if isinstance(log_density, jax.tree_util.Partial):
            program = _cached("densities", lambda: jax.jit(_vmapped), log_density, values)
            return np.asarray(program(log_density, values), dtype=np.float64)
        return np.asarray(jax.jit(jax.vmap(log_density))(values), dtype=np.float64)


class HyperRun(NamedTuple):
    r"""Draws of the hyperparameters and their diagnostics (:func:`run_nuts`).

    Attributes
    ----------
    draws : dict of str to ndarray of shape (chain, draw, ...)
    r_hat : dict of str to ndarray
        Split :math:`\hat R` of every element (numpyro's ``split_gelman_rubin``).
    ess : dict of str to ndarray
        Effective sample size of every element (numpyro's ``effective_sample_size``).
    divergences : int
        Divergent transitions after warm-up, over all chains.
    diverging : bool ndarray of shape (chain, draw)
    """

    draws: dict
    r_hat: dict
    ess: dict
    divergences: int
    diverging: np.ndarray


def _collapsed_model(hypers, log_evidence):
    """The numpyro program of :func:`run_nuts`: the hyperpriors and the evidence as a factor."""
    import numpyro

    values = {h.name: numpyro.sample(h.name, h.distribution) for h in hypers}
    numpyro.factor("log_evidence", log_evidence(values))


def run_nuts(key, log_evidence, hypers, *, num_warmup=500, num_samples=500, num_chains=2, target_accept_prob=0.8,
             chain_method="vectorized", progress_bar=False):
    """Sample the hyperparameters' posterior with numpyro's NUTS.

    The numpyro program draws every hyperparameter from its hyperprior (numpyro maps
    each support to the real line and adds the Jacobian) and adds ``log_evidence`` as a
    factor; it runs in float64 in the library's scope.

    Parameters
    ----------
    key : jax PRNG key
    log_evidence : callable ``(values: dict) -> scalar``
        :func:`log_evidence_fn` (whose statistics are passed to the compiled sampler as
        arguments, so runs on data of the same shapes share one program), or any
        traceable function (compiled in: one program per function object).
    hypers : list of Hyper
    num_warmup, num_samples, num_chains : int
        Warm-up iterations, draws kept per chain, chains (>= 2: r_hat compares chains).
    target_accept_prob : float
    chain_method : {"sequential", "vectorized"}
    progress_bar : bool

    Returns
    -------
    HyperRun
    """
    from numpyro.diagnostics import effective_sample_size, split_gelman_rubin

    from bayesnb.ppl._nuts import sample_nuts

    if int(num_chains) < 2:
        raise ValueError(f"the number of chains must be >= 2 (r_hat compares chains), got {num_chains!r}")
    # The statistics are the sampler's arguments (data=): a refit on data of the same shapes,
    # or another key, reuses the compiled program (bayesnb.ppl._nuts.sample_nuts).
    grouped, _, diverging = sample_nuts(
        _collapsed_model, (), {"hypers": list(hypers), "log_evidence": log_evidence}, num_warmup=num_warmup,
        num_samples=num_samples, num_chains=num_chains, random_state=key, chain_method=chain_method,
        progress_bar=progress_bar, target_accept_prob=target_accept_prob, data=("log_evidence",),
    )
    grouped = {k: np.asarray(v, dtype=np.float64) for k, v in grouped.items()}
    draws = {h.name: grouped[h.name] for h in hypers}
    with np.errstate(divide="ignore", invalid="ignore"):
        r_hat = {k: np.asarray(split_gelman_rubin(v)) for k, v in draws.items()}
        ess = {k: np.asarray(effective_sample_size(v)) for k, v in draws.items()}
    return HyperRun(draws, r_hat, ess, int(diverging.sum()), diverging)


def posterior_mode(log_density, hypers, start):
    """The mode of the hyperparameters' posterior density, in their own coordinates.

    Maximises ``log_density`` (evidence plus log hyperprior density, no Jacobian: the
    mode of the density of :math:`a` itself, not of its unconstrained image) with
    L-BFGS over numpyro's unconstrained coordinates of each support, from ``start``.

    Parameters
    ----------
    log_density : callable ``(values: dict) -> scalar``
        :func:`log_density_fn`.
    hypers : list of Hyper
    start : dict of str to ndarray
        A point inside the supports (e.g. the draw of highest density).

    Returns
    -------
    dict of str to float64 ndarray
    """
    from scipy.optimize import minimize

    with enable_x64():
        u0, unpack = _unconstrained(hypers, start)
        hypers_key = _hypers_key(hypers)
        if isinstance(log_density, jax.tree_util.Partial) and hypers_key is not None:
            # The statistics are an argument: one program per hyperpriors, model and shapes
            # (the bijections of the supports are compiled in: the key holds their values).
            # On the device once, not copied there at every step of the optimiser.
            log_density = jax.tree.map(jnp.asarray, log_density)
            program = _cached(("objective", hypers_key), lambda: jax.jit(_objective(unpack)), u0, log_density)

            def objective(u):
                return program(u, log_density)
        else:
            objective = jax.jit(lambda u: _objective(unpack)(u, log_density))

        def fun(u):
            value, grad = objective(jnp.asarray(u))
            return float(value), np.asarray(grad, dtype=np.float64)

        with one_blas_thread():  # a few parameters: BLAS threads only wait (core/_threads.py)
            result = minimize(fun, np.asarray(u0), jac=True, method="L-BFGS-B", options={"maxiter": 1000, "ftol": 1e-15, "gtol": 1e-10})
        best = unpack(jnp.asarray(result.x))
        return {k: np.asarray(v, dtype=np.float64) for k, v in best.items()}


def _unconstrained(hypers, start):
    """``start`` in numpyro's unconstrained coordinates of the supports (flat), and the map back."""
    from numpyro.distributions import biject_to

    sizes = [int(np.prod(h.shape)) for h in hypers]
    bijections = [biject_to(h.distribution.support) for h in hypers]

    def unpack(u):
        out, at = {}, 0
        for h, size, f in zip(hypers, sizes, bijections):
            out[h.name] = f(u[at : at + size].reshape(h.shape))
            at += size
        return out

    u0 = jnp.concatenate([jnp.ravel(f.inv(jnp.asarray(start[h.name], jnp.float64))) for h, f in zip(hypers, bijections)])
    return u0, unpack


def _objective(unpack):
    """``(u, log_density) -> (-log_density(unpack(u)), its gradient in u)``."""
    return jax.value_and_grad(lambda u, log_density: -log_density(unpack(u)))
