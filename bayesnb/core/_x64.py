"""Scoped float64 for the closed-form core.

Gamma-function differences such as ``lgamma(a + x) - lgamma(a)`` lose several digits in
float32 once ``a`` is large, so every JAX computation of a posterior, predictive or
evidence runs with 64-bit types enabled *inside the library only*. The user's global
``jax_enable_x64`` flag is never flipped.

Core functions are also ``jax.jit``-compiled (below this decorator), so a new array
shape costs one compilation of the whole function rather than one per primitive.
"""

from __future__ import annotations

import functools

import jax

__all__ = ["x64", "enable_x64", "disable_x64"]


def enable_x64():
    """Context manager that enables float64 in JAX for the enclosed block only."""
    return _x64_scope(True)


def disable_x64():
    """Context manager that disables float64 in JAX for the enclosed block only."""
    return _x64_scope(False)


def _x64_scope(enabled):
    # ``jax.enable_x64`` is a config context manager in recent JAX; older releases kept
    # it (and ``disable_x64``) under ``jax.experimental``.
    state = getattr(jax, "enable_x64", None)
    if state is not None and hasattr(state, "__call__"):
        try:
            return state(enabled)
        except TypeError:  # pragma: no cover - older JAX with a different signature
            pass
    from jax import experimental  # pragma: no cover

    return experimental.enable_x64() if enabled else experimental.disable_x64()  # pragma: no cover


def x64(fn):
    """Decorate a pure function so that its body runs with JAX float64 enabled."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with enable_x64():
            return fn(*args, **kwargs)

    return wrapper
