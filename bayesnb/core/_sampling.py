r"""Random variates of posterior and prior draws: NumPy on the host, ``jax.random`` under tracing.

Every family's ``sample`` (and the class proportions' ``sample_log``) draws its
parameters from a handful of standard variates: log-Gamma, Gamma and normal. On concrete
inputs (no JAX trace active, :func:`bayesnb.core.kernels.is_traced`), they are drawn with
NumPy's ``Generator`` (PCG64), seeded from the bits of the JAX key
(``jax.random.key_data`` through ``numpy.random.SeedSequence``): on CPU NumPy's Gamma
sampler is some 30 times faster than ``jax.random.loggamma`` and compiles nothing for a
new shape. The key-first API is unchanged: the same key gives the same draws, and keys
that differ (``split``, ``fold_in`` per block of draws) give independent streams. A large
draw is filled in pieces from streams of their own, on threads (:func:`_draw`).

Under a trace (``jax.jit``, ``jax.vmap``, ``jax.grad``, the numpyro models) the variates
are those of ``jax.random`` (``loggamma``, ``gamma``, ``normal``) with the same key. The
two paths draw from the same distributions but not the same numbers: a jitted call's
draws are valid draws, not the eager call's draws.

There is one key-to-``Generator`` mechanism, :func:`generator`; its ``stream`` tag (a
``SeedSequence`` spawn key) separates the parameter draws made here (:data:`PARAMETERS`)
from the data that :func:`bayesnb.core.families._rows.generator` simulates from a key
(:data:`ROWS`), so a key used for both gives unrelated streams.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from bayesnb.core._x64 import disable_x64
from bayesnb.core.kernels import is_traced, map_threads

__all__ = [
    "on_host", "generator", "PARAMETERS", "ROWS", "split", "fold_in", "log_gamma", "gamma", "normal", "log_normalize",
]

# SeedSequence spawn keys, one per stream. Parameter draws ("PD") and simulated rows must
# not share variates when a caller reuses a key for both. ROWS is the empty spawn key: it
# is the plain SeedSequence(key bits) that data simulation used before the two mechanisms
# were one, so every key still simulates the same data (saved replicates, SBC ranks and
# seeded tests stay reproducible across this change).
PARAMETERS = (0x5044,)
ROWS = ()


def on_host(*values):
    """Whether draws for these inputs take the NumPy path: no JAX trace is active."""
    return not is_traced(*values)


# JAX caches a compiled function per float64 setting, and the library's code runs both
# inside its scoped float64 (bayesnb.core._x64) and outside it: a key operation reached
# from both would be compiled twice in a process (two of the few hundred milliseconds of
# a first call). Key bits are uint32 either way, so the host key operations below all run
# with float64 off: one compilation each.


def split(key, num=2):
    """``jax.random.split(key, num)``; on a concrete key, compiled once per process (float64 off).

    Parameters
    ----------
    key : jax.random key
    num : int, default=2

    Returns
    -------
    tuple of ``num`` jax.random keys
        Unpacked inside the scope too (unpacking a key array is itself a compiled
        ``unstack``).
    """
    if is_traced(key):
        return tuple(jax.random.split(key, num))
    with disable_x64():
        return tuple(jax.random.split(key, num))


def fold_in(key, data):
    """``jax.random.fold_in(key, data)``; on a concrete key, compiled once per process (float64 off).

    Parameters
    ----------
    key : jax.random key
    data : int

    Returns
    -------
    jax.random key
    """
    if is_traced(key, data):
        return jax.random.fold_in(key, data)
    with disable_x64():
        return jax.random.fold_in(key, data)


def generator(key, stream=PARAMETERS):
    """A ``numpy.random.Generator`` (PCG64) determined by the JAX key ``key`` and a stream tag.

    Seeded by ``SeedSequence(key bits, spawn_key=stream)``: the same (key, stream) gives
    the same variates; different streams of one key are independent.

    Parameters
    ----------
    key : jax.random key
        A typed key (``jax.random.key``) or a raw ``uint32`` key (``jax.random.PRNGKey``),
        concrete.
    stream : tuple of int, optional
        The spawn key of the stream: :data:`PARAMETERS` (default; posterior and prior
        draws) or :data:`ROWS` (simulated data, :func:`bayesnb.core.families._rows.generator`).

    Returns
    -------
    numpy.random.Generator
    """
    bits = np.asarray(jax.random.key_data(key), dtype=np.uint32).ravel()
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(b) for b in bits], spawn_key=tuple(stream))))


def _shape(a, shape):
    return np.shape(a) if shape is None else tuple(int(s) for s in shape)


# Values per generator of a large host draw (see _draw).
_CHUNK = 1 << 18


def _draw(key, a, shape, fill):
    """An array of ``shape`` filled by ``fill(rng, a_part, out_part)``, ``a`` broadcast to ``shape``.

    Up to ``_CHUNK`` values come from the one generator of ``key`` (:func:`generator`).
    A larger draw (one posterior draw of 20 Newsgroups' Dirichlet is 2.6 M Gamma
    variates) is cut into pieces of ``_CHUNK`` consecutive values in C order: piece ``k``
    is filled by the generator of stream ``PARAMETERS + (k,)`` (piece 0 by
    ``PARAMETERS`` itself), the pieces on threads (numpy's generators release the GIL
    while they fill an array). The variates depend on the key, the shape and the values
    of ``a`` only (not on how ``a`` is laid out, nor on the number of threads); a draw of
    one piece is the plain generator's.
    """
    shape = tuple(int(d) for d in shape)
    out = np.empty(shape)
    total = out.size
    if total <= _CHUNK:
        fill(generator(key), None if a is None else np.broadcast_to(a, shape), out)
        return out
    flat_out = out.reshape(-1)
    if a is not None:
        a = np.asarray(a, dtype=np.float64)
        # Leading axes along which a is constant (size 1, or broadcast: stride 0) are
        # dropped, so a shape broadcast to the whole draw is not copied whole.
        while a.ndim and (a.shape[0] == 1 or a.strides[0] == 0):
            a = a[0]
        # a repeats every `period` values of the flattened draw.
        period_a = np.ascontiguousarray(np.broadcast_to(a, shape[len(shape) - a.ndim :] if a.ndim else ())).reshape(-1)
        period = period_a.size

    def draw(k):
        s, e = k * _CHUNK, min((k + 1) * _CHUNK, total)
        part = None
        if a is not None:
            first = s % period
            if period == 1:
                part = np.broadcast_to(period_a, (e - s,))
            elif first + (e - s) <= period:
                part = period_a[first : first + (e - s)]
            else:
                index = np.arange(s, e)
                index %= period
                part = period_a[index]
        fill(generator(key, PARAMETERS if k == 0 else PARAMETERS + (k,)), part, flat_out[s:e])

    map_threads(draw, range(-(-total // _CHUNK)))
    return out


def _fill_log_gamma(rng, a, out):
    small = a < 1.0
    if not small.any():
        rng.standard_gamma(a, out=out)
        np.log(out, out=out)
        return
    rng.standard_gamma(np.where(small, a + 1.0, a), out=out)
    np.log(out, out=out)
    where = np.broadcast_to(small, out.shape)
    a_small = np.broadcast_to(a, out.shape)[where]
    u = 1.0 - rng.random(a_small.size)  # in (0, 1]: log(u) is finite
    with np.errstate(divide="ignore", invalid="ignore"):
        boost = np.where(a_small > 0.0, np.log(u) / a_small, -np.inf)
    out[where] += boost


def _fill_gamma(rng, a, out):
    rng.standard_gamma(a, out=out)


def _fill_normal(rng, a, out):
    rng.standard_normal(out=out)


def log_gamma(key, concentration, shape=None):
    r""":math:`\log G`, :math:`G \sim \mathrm{Gamma}(a, 1)`, float64, of shape ``shape``.

    On the host, shapes :math:`a \ge 1` are drawn directly (``standard_gamma``) and
    smaller ones as :math:`\log G' + \log(U)/a` with :math:`G' \sim \mathrm{Gamma}(a+1,
    1)` and :math:`U` uniform on (0, 1]: the exact identity :math:`G \overset{d}{=} G'
    U^{1/a}` in log space, so a tiny :math:`a` (where :math:`G` itself underflows to 0)
    gives a finite log. A large draw is made in pieces on threads (see :func:`_draw`).
    Under a trace, ``jax.random.loggamma``.

    Parameters
    ----------
    key : jax.random key
    concentration : array broadcastable to ``shape``
        Shapes :math:`a > 0` (``a = 0`` gives ``-inf``).
    shape : tuple of int, optional
        Default: the shape of ``concentration``.

    Returns
    -------
    float64 ndarray (host) or jax array (traced) of shape ``shape``
    """
    if is_traced(key, concentration):
        a = jnp.asarray(concentration, dtype=jnp.float64)
        return jax.random.loggamma(key, a, shape=_shape(a, shape), dtype=jnp.float64)
    a = np.asarray(concentration, dtype=np.float64)
    return _draw(key, a, _shape(a, shape), _fill_log_gamma)


def gamma(key, concentration, shape=None):
    r""":math:`G \sim \mathrm{Gamma}(a, 1)`, float64, of shape ``shape``.

    NumPy's ``standard_gamma`` on the host (a large draw in pieces on threads, see
    :func:`_draw`), ``jax.random.gamma`` under a trace. For shapes that may be tiny,
    draw :func:`log_gamma` instead.
    """
    if is_traced(key, concentration):
        a = jnp.asarray(concentration, dtype=jnp.float64)
        return jax.random.gamma(key, a, shape=_shape(a, shape), dtype=jnp.float64)
    a = np.asarray(concentration, dtype=np.float64)
    return _draw(key, a, _shape(a, shape), _fill_gamma)


def normal(key, shape):
    """Standard normal variates, float64, of shape ``shape`` (NumPy on the host, in pieces
    on threads when large, see :func:`_draw`; ``jax.random.normal`` traced)."""
    shape = tuple(int(s) for s in shape)
    if is_traced(key):
        return jax.random.normal(key, shape, dtype=jnp.float64)
    return _draw(key, None, shape, _fill_normal)


def log_normalize(g, axis=-1):
    r""":math:`g - \log\sum e^{g}` along ``axis`` in NumPy (float64, in place on ``g``).

    The host twin of ``jax.scipy.special.logsumexp`` normalisation; a slice that is
    ``-inf`` throughout (never a Dirichlet draw, whose valid coordinates are finite)
    becomes ``nan``.
    """
    m = np.max(g, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    s = np.exp(g - m).sum(axis=axis, keepdims=True)
    g -= m + np.log(s)
    return g
