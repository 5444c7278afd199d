"""What every family's ``simulate`` shares: per-row parameters and a generator from a key.

A family's parameters carry a class axis, ``(n_classes, *event)``, or, for one posterior
draw per generated row, a leading row axis as well, ``(n_rows, n_classes, *event)``.
Simulating row ``i`` needs the parameters of its class ``y_i`` only.

Data are simulated with numpy's generator, seeded from the JAX key: numpy's Poisson,
multinomial and normal samplers are many times faster on CPU than ``jax.random``'s and
compile nothing for each new shape. The key still decides every draw: the generator is
:func:`bayesnb.core._sampling.generator`'s, on its own stream (``_sampling.ROWS``), so
the rows simulated from a key are independent of the parameters drawn from it.
"""

from __future__ import annotations

import numpy as np

from bayesnb.core import _sampling

__all__ = ["of_class", "generator"]


def generator(key):
    """A ``numpy.random.Generator`` determined by the JAX key ``key``, on the simulation stream.

    Parameters
    ----------
    key : jax.random key
        Concrete (typed or raw ``uint32``).

    Returns
    -------
    numpy.random.Generator
        ``_sampling.generator(key, _sampling.ROWS)``.
    """
    return _sampling.generator(key, _sampling.ROWS)


def of_class(values, y_index, event_ndim):
    """The parameters of each row's class, shape ``(n_rows, *event)``.

    Parameters
    ----------
    values : array of shape (n_classes, *event) or (n_rows, n_classes, *event)
        One parameter set for every row, or one per row.
    y_index : int array of shape (n_rows,)
        Class index of each row.
    event_ndim : int
        Number of trailing axes of one class's parameter (0 for a scalar per class).

    Returns
    -------
    ndarray of shape (n_rows, *event)
    """
    values = np.asarray(values, dtype=np.float64)
    y_index = np.asarray(y_index, dtype=np.intp)
    base = 1 + event_ndim
    if values.ndim == base:
        return values[y_index]
    if values.ndim == base + 1:
        if values.shape[0] != y_index.shape[0]:
            raise ValueError(
                f"per-row parameters have {values.shape[0]} rows but there are {y_index.shape[0]} labels"
            )
        return values[np.arange(y_index.shape[0]), y_index]
    raise ValueError(f"parameters of shape {values.shape} do not have a class axis followed by {event_ndim} event axes")
