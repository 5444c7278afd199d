"""scikit-learn compatible estimators (a thin front over the pure core)."""

from ._base import BaseNB
from .discrete import BernoulliNB, CategoricalNB, MultinomialNB

__all__ = ["BaseNB", "BernoulliNB", "CategoricalNB", "MultinomialNB"]
