"""The estimator of a registered family, looked up in the class registry that ``load`` uses.

A module of its own so that the estimators that need one (:class:`~bayesnb.MixedNB`'s
inferred blocks) look it up without importing the package that imports them.
"""

from __future__ import annotations

from bayesnb.core import families as _families
from bayesnb.io.persistence import _estimator_types

__all__ = ["estimator_for"]


def estimator_for(family, **params):
    """A new (unfitted) estimator of the registered family called ``family``.

    The estimator whose own family it is (e.g. ``MultinomialNB`` for ``"multinomial"``),
    else one that declares it serves the family with some parameters (e.g.
    ``GaussianBayesClassifier(covariance="full")`` for ``"gaussian_mv"``). Of ``params``,
    those the estimator accepts are passed on (``alpha`` means nothing to ``GaussianNB``).

    Parameters
    ----------
    family : str or Family
    **params
        Constructor parameters.

    Returns
    -------
    BaseNB

    Raises
    ------
    ValueError
        If no registered family is called ``family``, or no estimator serves it.

    Examples
    --------
    >>> from bayesnb.estimators import estimator_for
    >>> estimator_for("bernoulli", alpha=0.5, prior=None)
    BernoulliNB(alpha=0.5)
    """
    wanted = _families.get(family)
    own, declared = [], []
    for cls in _estimator_types().values():
        if isinstance(cls.__dict__.get("_family"), _families.Family) and cls._family.name == wanted.name:
            own.append((cls, {}))
        declared += [(cls, dict(p)) for name, p in getattr(cls, "_serves", ()) if name == wanted.name]
    if not own + declared:
        raise ValueError(f"no bayesnb estimator serves the family {wanted.name!r}")
    cls, fixed = (own + declared)[0]
    accepted = cls().get_params(deep=False)
    return cls(**fixed, **{k: v for k, v in params.items() if k in accepted and k not in fixed})
