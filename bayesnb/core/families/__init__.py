"""Conjugate families: one module each, one :class:`~bayesnb.core.families.protocol.Family` each.

Every family module defines its pure functions and registers one immutable ``family``
value bundling them (see :mod:`bayesnb.core.families.protocol`). Layers look families up by
name::

    >>> from bayesnb import families
    >>> families.get("multinomial").name
    'multinomial'
    >>> "poisson" in families.names()
    True
"""

from bayesnb.core.families import (
    bernoulli,
    categorical,
    exponential,
    gaussian,
    gaussian_mv,
    multinomial,
    poisson,
    polya,
)
from bayesnb.core.families.protocol import Family, get, names, register

__all__ = [
    "Family",
    "bernoulli",
    "categorical",
    "exponential",
    "gaussian",
    "gaussian_mv",
    "get",
    "multinomial",
    "names",
    "poisson",
    "polya",
    "register",
]
