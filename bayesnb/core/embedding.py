r"""Where hyperparameters enter a prior pytree: learned once from a prior builder, rebuilt at any values.

A hyperprior (a parameter given as a numpyro distribution, see
:mod:`bayesnb.ppl.collapsed`) makes the prior a function of the hyperparameters'
values. :func:`bayesnb.ppl.collapsed.embedding` learns which entries of the prior
pytree copy which element of each hyperparameter, from two eager evaluations per
hyperparameter of the caller's prior builder (the estimator's own construction and
validation), and returns an :class:`Embedding`; :func:`embed` rebuilds the pytree at
other values, traceable under ``jit``, ``grad`` and ``vmap``. The collapsed
model, the un-collapsed numpyro model and the fitted-model pytree's prior draws
(:func:`bayesnb.core._fitted.hyper_prior_draws`) all rebuild the prior this way.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

__all__ = ["Embedding", "embed"]


class Embedding(NamedTuple):
    """Where each hyperparameter's elements sit in a pytree of prior arrays.

    Attributes
    ----------
    base : list of ndarray
        The pytree's leaves at the base point (:func:`bayesnb.ppl.collapsed.base_values`).
    treedef : jax tree definition
    targets : list of (int, str, ndarray or None, ndarray)
        ``(leaf, hyperparameter, positions, source)``: the flat entries ``positions``
        of leaf ``leaf`` (None: all of them) are the flat elements ``source`` of the
        hyperparameter.
    """

    base: list
    treedef: Any
    targets: list


def embed(emb, values):
    """The pytree of :func:`bayesnb.ppl.collapsed.embedding` at ``values`` (traceable: jit, grad, vmap).

    Parameters
    ----------
    emb : Embedding
    values : dict of str to array
        One value of every embedded hyperparameter (of its shape).

    Returns
    -------
    pytree of jax arrays
    """
    leaves = [jnp.asarray(leaf) for leaf in emb.base]
    for i, name, positions, source in emb.targets:
        flat_value = jnp.ravel(jnp.asarray(values[name], dtype=jnp.float64))
        shape = emb.base[i].shape
        if positions is None:
            if flat_value.size == 1:
                leaves[i] = jnp.broadcast_to(flat_value[0], shape)
            else:
                leaves[i] = flat_value[source].reshape(shape)
        else:
            leaves[i] = leaves[i].ravel().at[positions].set(flat_value[source]).reshape(shape)
    return jax.tree.unflatten(emb.treedef, leaves)
