"""scikit-learn compatible estimators (a thin front over the pure core)."""

from bayesnb.estimators._base import BaseNB
from bayesnb.estimators._registry import estimator_for
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
# A fitted estimator and its choices, saved and validated at load by the class itself.
_register_estimator(SemiSupervisedNB, own_state=(SemiSupervisedNB._saved_state, SemiSupervisedNB._restore_state))
