"""NUTS runs compiled once per model and data shapes (the sampler under :mod:`bayesnb.ppl.mcmc`
and :func:`bayesnb.ppl.collapsed.run_nuts`).

:func:`sample_nuts` runs numpyro's NUTS on ``model(*args, **kwargs)`` in float64. With
``chain_method="vectorized"`` and no progress bar the whole run is one jitted program
whose arguments are the key and the data, kept in a bounded cache: another seed, or other
data of the same shapes, compiles nothing (see :func:`sample_nuts`). This module sits
below both of its callers (it imports nothing of :mod:`bayesnb.ppl`), so that the
collapsed hyperparameter runs, which :mod:`bayesnb.ppl.models` builds on, share it
without an import cycle.

numpyro's inference is imported inside the functions: ``import bayesnb`` does not load it.
"""

from __future__ import annotations

import os
import sys
from collections import OrderedDict

import jax
import jax.numpy as jnp
import numpy as np

from bayesnb.core._random import key_from_random_state
from bayesnb.core._x64 import enable_x64

__all__ = ["sample_nuts", "clear_nuts_cache", "NUTS_CACHE_SIZE", "NUM_CHAINS"]

#: NUTS chains by default, in :func:`bayesnb.ppl.mcmc.crosscheck`, :func:`bayesnb.ppl.mcmc.run_nuts`,
#: :func:`sample_nuts` and ``bayesnb crosscheck`` (Vehtari et al. 2021 recommend at least four:
#: split R-hat then compares eight halves).
NUM_CHAINS = 4


def _interactive():
    """Show numpyro's progress bar only to a person at a terminal (not in tests or CI)."""
    if os.environ.get("CI") or os.environ.get("PYTEST_CURRENT_TEST"):
        return False
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def _fingerprint(value):
    """A hashable digest of the model arguments: the same model on the same data."""
    import hashlib

    digest = hashlib.sha256()
    for leaf in jax.tree.leaves(value, is_leaf=lambda x: x is None):
        digest.update(repr(type(leaf)).encode())
        if leaf is None:
            continue
        arr = np.asarray(leaf)
        digest.update(str(arr.dtype).encode() + str(arr.shape).encode())
        digest.update(np.ascontiguousarray(arr).tobytes() if arr.dtype != object else repr(arr.tolist()).encode())
    return (digest.hexdigest(),)


#: Compiled NUTS programs kept by :func:`sample_nuts` (least recently used first out). Each
#: holds one XLA executable of the whole run (initialisation, warm-up and sampling of every
#: chain) for one model, one set of static arguments and one set of data shapes; a few
#: megabytes each, so a small number bounds the memory while a test module's or a user's
#: repeated runs of one model (other seeds, other data of the same shape) all hit it.
#: ``jax.clear_caches()`` frees the executables too (the entries then compile again, or
#: load from JAX's persistent cache where one is set, on their next use).
NUTS_CACHE_SIZE = 8
_NUTS_PROGRAMS: OrderedDict = OrderedDict()
#: Marks a cache key whose model cannot be traced with its arrays as arguments.
_UNTRACEABLE = object()


def _is_data(leaf):
    """Whether a leaf of the model's arguments is passed to the compiled program as an argument."""
    if not isinstance(leaf, (np.ndarray, jax.Array)):
        return False
    try:
        return bool(np.issubdtype(leaf.dtype, np.number) or np.issubdtype(leaf.dtype, np.bool_))
    except TypeError:  # an extended dtype (a typed PRNG key): compiled in
        return False


def _static_leaf_key(leaf):
    """A leaf compiled into the program, as a key: arrays by a digest of their values."""
    if isinstance(leaf, (np.ndarray, jax.Array, np.generic)):
        return ("array",) + _fingerprint(leaf)
    return (type(leaf), leaf)


def _program_key(model, args, kwargs, data, num_warmup, num_samples, num_chains, target_accept_prob):
    """The cache key of a run of ``model(*args, **kwargs)``, the split of its leaves, or None.

    The array leaves (numeric or boolean) of ``args`` and of the ``kwargs`` named in
    ``data`` become arguments of the compiled program: the key holds only their shapes
    and dtypes, never their values, so other data of the same shapes reuse the program.
    Every other leaf is compiled into the program (a model may read a prior's values in
    NumPy), so the key holds its value: an array by a SHA-256 digest of its dtype, shape
    and bytes; anything else (None, numbers, strings, families, functions ...) as itself
    with its type (``1``, ``1.0`` and ``True`` compile differently), compared by ``==``:
    an object without value equality matches only itself, and the key keeps it alive, so
    its ``id`` cannot be reused by another object while the entry exists. The key is None
    when a leaf or the structure is unhashable: the run is not cached.
    """
    paths, treedef = jax.tree_util.tree_flatten_with_path((tuple(args), dict(kwargs)))
    leaves = [leaf for _, leaf in paths]
    data_at = tuple(
        i for i, (path, leaf) in enumerate(paths)
        if _is_data(leaf) and (path[0].idx == 0 or path[1].key in data)
    )
    static = tuple(None if i in data_at else leaf for i, leaf in enumerate(leaves))
    try:
        key = (
            model, treedef,
            tuple(_static_leaf_key(leaf) for i, leaf in enumerate(leaves) if i not in data_at),
            tuple((i, tuple(np.shape(leaves[i])), str(leaves[i].dtype)) for i in data_at),
            int(num_warmup), int(num_samples), int(num_chains), float(target_accept_prob),
        )
        hash(key)
        key == key  # noqa: B015 - a leaf whose == is elementwise (an array in a pytree's aux data) fails here
    except (TypeError, ValueError):
        return None, None, None
    return key, static, data_at


def with_data(treedef, static, data_at, data):
    """The model's ``(args, kwargs)``: the static leaves with ``data`` (the program's arguments) at ``data_at``."""
    leaves = list(static)
    for i, value in zip(data_at, data):
        leaves[i] = value
    return jax.tree.unflatten(treedef, leaves)


def _nuts_program(model, treedef, static, data_at, num_warmup, num_samples, num_chains, target_accept_prob):
    """One jitted function ``(key, data) -> (samples, diverging, init_ok)`` of a whole NUTS run.

    The same steps as ``numpyro.infer.MCMC(NUTS(model), chain_method="vectorized").run``
    (the key split into one per chain, ``NUTS.init`` on the batch of keys, ``num_warmup +
    num_samples`` transitions of the vectorised kernel, the constrained sites and
    ``diverging`` of the last ``num_samples`` collected), written as one program so that
    the data are its arguments rather than constants, the initial points are found in it
    (not op by op) and the program is compiled once for all runs of the same shapes.
    Every call starts from new initial points (drawn from the call's key) and adapts the
    step size and mass matrix afresh: no state is kept between calls.
    """
    from jax import lax
    from numpyro.infer import NUTS

    def program(key, data):
        args, kwargs = with_data(treedef, static, data_at, data)
        kernel = NUTS(model, target_accept_prob=target_accept_prob)
        state = kernel.init(jax.random.split(key, num_chains), num_warmup, None, args, kwargs)
        # numpyro checks the initial points only outside a trace: the program reports it.
        init_ok = jnp.all(jnp.isfinite(state.potential_energy))

        def step(state, _):
            state = kernel.sample(state, args, kwargs)
            return state, (state.z, state.diverging)

        # One loop over warm-up and sampling (the kernel's transition compiled once, as in
        # numpyro's fori_collect); the warm-up's points are dropped after it.
        _, (z, diverging) = lax.scan(step, state, None, length=num_warmup + num_samples)
        z, diverging = jax.tree.map(lambda a: a[num_warmup:], (z, diverging))
        # Constrained (and deterministic) sites of every draw of every chain: (draw, chain, ...).
        samples = jax.vmap(jax.vmap(kernel.postprocess_fn(args, kwargs)))(z)
        return samples, diverging, init_ok

    return jax.jit(program)


_TRACE_ERRORS = (
    jax.errors.ConcretizationTypeError, jax.errors.NonConcreteBooleanIndexError, jax.errors.TracerArrayConversionError,
    jax.errors.TracerBoolConversionError, jax.errors.TracerIntegerConversionError,
)


def _run_cached(model, args, kwargs, data, key, num_warmup, num_samples, num_chains, target_accept_prob):
    """The draws of the compiled program of :func:`_nuts_program` (from the cache), or None.

    None: the run cannot be cached (an unhashable static argument) or the model cannot be
    traced with its arrays as arguments (it needs their values in Python: ``int(y.max())``,
    a NumPy call on them); the caller then runs numpyro's ``MCMC``.
    """
    cache_key, static, data_at = _program_key(model, args, kwargs, data, num_warmup, num_samples, num_chains,
                                              target_accept_prob)
    if cache_key is None:
        return None
    program = _NUTS_PROGRAMS.get(cache_key)
    if program is _UNTRACEABLE:
        _NUTS_PROGRAMS.move_to_end(cache_key)
        return None
    leaves, treedef = jax.tree.flatten((tuple(args), dict(kwargs)))
    if program is None:
        program = _nuts_program(model, treedef, static, data_at, int(num_warmup), int(num_samples), int(num_chains),
                                float(target_accept_prob))
    data = [jnp.asarray(leaves[i]) for i in data_at]
    try:
        samples, diverging, init_ok = program(key, data)
    except _TRACE_ERRORS:
        program = _UNTRACEABLE
    _NUTS_PROGRAMS[cache_key] = program
    _NUTS_PROGRAMS.move_to_end(cache_key)
    while len(_NUTS_PROGRAMS) > NUTS_CACHE_SIZE:
        _NUTS_PROGRAMS.popitem(last=False)
    if program is _UNTRACEABLE:
        return None
    if not bool(init_ok):
        raise RuntimeError("Cannot find valid initial parameters. Please check your model again.")
    return samples, diverging


def clear_nuts_cache():
    """Drop every compiled NUTS program kept by :func:`sample_nuts` (frees their memory)."""
    _NUTS_PROGRAMS.clear()


def sample_nuts(
    model, args, kwargs, *, num_warmup=1000, num_samples=1000, num_chains=None, random_state=None,
    chain_method="vectorized", progress_bar=None, target_accept_prob=0.8, data=(), parameters=(),
):
    """NUTS on ``model(*args, **kwargs)`` in float64.

    With ``chain_method="vectorized"`` and no progress bar (the default under tests and
    CI), the run is one compiled program whose arguments are the key and the data: the
    array leaves of ``args`` and of the ``kwargs`` named in ``data`` (and in
    ``parameters``, where the model allows); every other leaf
    (prior arrays, None, numbers, strings, families ...) is compiled in. The program is
    kept in a bounded cache (``NUTS_CACHE_SIZE`` entries, least recently used dropped;
    :func:`clear_nuts_cache`) keyed by the model, the values of the compiled-in leaves,
    the data's shapes and dtypes and the sampler's settings, so another seed, or other
    data of the same shapes, compiles nothing. Each call draws its own initial points and
    warms up afresh (nothing is kept between calls but the program): the draws are those
    of numpyro's ``MCMC(NUTS(model), chain_method="vectorized").run`` with the same key.
    A model that needs the data's values in Python (it cannot be traced with them as
    arguments), an unhashable argument, another chain method or a progress bar run
    numpyro's ``MCMC`` as it is, compiling every time.

    Parameters
    ----------
    model : callable
        A numpyro model.
    args : tuple
        Its positional arguments (their arrays are data).
    kwargs : dict
        Its keyword arguments.
    num_warmup, num_samples, num_chains, random_state, chain_method, progress_bar, target_accept_prob
        As :func:`run_nuts`.
    data : tuple of str
        The ``kwargs`` whose arrays are data (arguments of the compiled program, not
        compiled in); the model must not need their values in Python.
    parameters : tuple of str
        The ``kwargs`` whose arrays are tried as arguments too (a prior's values): where
        the model can be traced with them as arguments, one program serves every value
        of them (a data-scaled prior differs with every data set); where it cannot (it
        reads them in Python), they are compiled in as the other leaves are.

    Returns
    -------
    grouped : dict of name -> ndarray of shape (chain, draw, ...)
    latent : dict of name -> ndarray of shape (chain * draw, ...)
    diverging : bool ndarray of shape (chain, draw)
    """
    from numpyro.infer import MCMC, NUTS

    num_chains = NUM_CHAINS if num_chains is None else num_chains
    if int(num_chains) < 2:
        raise ValueError(f"num_chains must be >= 2 (r_hat compares chains), got {num_chains!r}")
    if progress_bar is None:
        progress_bar = _interactive()
    key = key_from_random_state(random_state)
    with enable_x64():
        cached = None
        if chain_method == "vectorized" and not progress_bar:
            # The widest split first: the parameters as arguments, else compiled in.
            for split in ((tuple(data) + tuple(parameters), tuple(data)) if parameters else (tuple(data),)):
                cached = _run_cached(model, args, kwargs, split, key, num_warmup, num_samples, num_chains,
                                     target_accept_prob)
                if cached is not None:
                    break
        if cached is not None:
            samples, diverging = cached
            # (draw, chain, ...) -> (chain, draw, ...), as numpyro's get_samples(group_by_chain=True)
            grouped = {k: np.swapaxes(np.asarray(v), 0, 1) for k, v in samples.items()}
            latent = {k: v.reshape((-1,) + v.shape[2:]) for k, v in grouped.items()}
            return grouped, latent, np.swapaxes(np.asarray(diverging, dtype=bool), 0, 1)
        mcmc = MCMC(
            NUTS(model, target_accept_prob=target_accept_prob),
            num_warmup=int(num_warmup),
            num_samples=int(num_samples),
            num_chains=int(num_chains),
            chain_method=chain_method,
            progress_bar=bool(progress_bar),
        )
        mcmc.run(key, *args, extra_fields=("diverging",), **kwargs)
        grouped = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}
        latent = {k: np.asarray(v) for k, v in mcmc.get_samples().items()}
        diverging = np.asarray(mcmc.get_extra_fields(group_by_chain=True)["diverging"], dtype=bool)
    return grouped, latent, diverging
