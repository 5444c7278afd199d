"""bayesnb: Bayesian naive Bayes with conjugate priors.

Closed-form posteriors, exact posterior predictives and log evidences in JAX, behind
scikit-learn compatible estimators.
"""

from importlib.metadata import PackageNotFoundError as _PackageNotFoundError
from importlib.metadata import version as _version

from .comparison import compare
from .estimators import (
    BernoulliNB,
    CategoricalNB,
    ExponentialNB,
    GaussianBayesClassifier,
    GaussianNB,
    MixedNB,
    MultinomialNB,
    PoissonNB,
)
from .evidence import BayesFactorSelector
from .exceptions import EvidenceWarning, ModelFileError, ZeroLikelihoodWarning
from .persistence import load

try:
    __version__ = _version("bayesnb")
except _PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = [
    "BayesFactorSelector",
    "BernoulliNB",
    "CategoricalNB",
    "EvidenceWarning",
    "ExponentialNB",
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
