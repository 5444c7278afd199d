"""Turning scikit-learn style ``random_state`` into explicit JAX keys at the edge."""

from __future__ import annotations

import jax
import numpy as np
from sklearn.utils import check_random_state

from bayesnb.core._x64 import disable_x64

__all__ = ["key_from_random_state"]


def key_from_random_state(random_state):
    """A ``jax.random`` key from ``None``, an int, a ``RandomState``/``Generator`` or a key.

    ``None`` draws fresh entropy; an int gives a reproducible key.
    """
    if isinstance(random_state, jax.Array):
        return random_state
    if isinstance(random_state, np.random.Generator):
        seed = int(random_state.integers(2**31 - 1))
    else:
        seed = int(check_random_state(random_state).randint(2**31 - 1))
    # Outside the scoped float64, as every host key operation (bayesnb.core._sampling.split).
    with disable_x64():
        return jax.random.key(seed)
