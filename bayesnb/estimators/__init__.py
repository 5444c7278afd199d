"""scikit-learn compatible estimators (a thin front over the pure core)."""

from ._base import BaseNB
from .discrete import BernoulliNB, CategoricalNB, MultinomialNB
from .exponential import ExponentialNB
from .gaussian import GaussianNB
from .gaussian_bayes import GaussianBayesClassifier
from .mixed import MixedNB
from .poisson import PoissonNB

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
]
