"""scikit-learn compatible estimators (a thin front over the pure core)."""

from ..persistence import register_estimator as _register_estimator
from ._base import BaseNB
from .discrete import BernoulliNB, CategoricalNB, MultinomialNB
from .gaussian import GaussianNB
from .gaussian_bayes import GaussianBayesClassifier
from .mixed import MixedNB
from .poisson import PoissonNB

__all__ = [
    "BaseNB",
    "BernoulliNB",
    "CategoricalNB",
    "GaussianBayesClassifier",
    "GaussianNB",
    "MixedNB",
    "MultinomialNB",
    "PoissonNB",
]

# Model files name their class; loading finds it in persistence's table.
for _name in __all__:
    if _name != "BaseNB":
        _register_estimator(globals()[_name])
