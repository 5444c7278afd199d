"""bayesnb: Bayesian naive Bayes with conjugate priors.

Closed-form posteriors, exact posterior predictives and log evidences in JAX, behind
scikit-learn compatible estimators.
"""

from ._version import __version__
from .comparison import compare
from .estimators import (
    BernoulliNB,
    CategoricalNB,
    GaussianBayesClassifier,
    GaussianNB,
    MixedNB,
    MultinomialNB,
    PoissonNB,
)
from .evidence import BayesFactorSelector
from .exceptions import EvidenceWarning, ModelFileError, ZeroLikelihoodWarning
from .persistence import load

__all__ = [
    "BayesFactorSelector",
    "BernoulliNB",
    "CategoricalNB",
    "EvidenceWarning",
    "GaussianBayesClassifier",
    "GaussianNB",
    "MixedNB",
    "ModelFileError",
    "MultinomialNB",
    "PoissonNB",
    "ZeroLikelihoodWarning",
    "__version__",
    "compare",
    "load",
]
