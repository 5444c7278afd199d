"""scikit-learn compatible estimators (a thin front over the pure core)."""

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
