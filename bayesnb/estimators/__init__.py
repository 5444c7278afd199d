"""scikit-learn compatible estimators (a thin front over the pure core)."""

from bayesnb.estimators._base import BaseNB
from bayesnb.estimators.discrete import BernoulliNB, CategoricalNB, MultinomialNB
from bayesnb.estimators.exponential import ExponentialNB
from bayesnb.estimators.gaussian import GaussianNB
from bayesnb.estimators.gaussian_bayes import GaussianBayesClassifier
from bayesnb.estimators.mixed import MixedNB
from bayesnb.estimators.poisson import PoissonNB
from bayesnb.estimators.polya import PolyaNB
from bayesnb.estimators.semi_supervised import SemiSupervisedNB
from bayesnb.io.persistence import register_estimator as _register_estimator

__all__ = [
    "BaseNB",
    "BernoulliNB",
    "CategoricalNB",
    "ExponentialNB",
    "GaussianBayesClassifier",
    "GaussianNB",
    "MixedNB",
    "MultinomialNB",
    "PoissonNB",
    "PolyaNB",
    "SemiSupervisedNB",
    "estimator_for",
]

# Model files name their class; loading finds it in persistence's table.
for _name in __all__:
    _cls = globals().get(_name)
    if isinstance(_cls, type) and issubclass(_cls, BaseNB) and _cls is not BaseNB:
        _register_estimator(_cls)


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
    from bayesnb.core import families as _families
    from bayesnb.io.persistence import _estimator_types

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
