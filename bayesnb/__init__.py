"""bayesnb: Bayesian naive Bayes with conjugate priors.

Closed-form posteriors, exact posterior predictives and log evidences in JAX, behind
scikit-learn compatible estimators.
"""

from typing import TYPE_CHECKING

from bayesnb import _legacy
from bayesnb._version import __version__
from bayesnb.analysis.comparison import compare
from bayesnb.analysis.elpd import loo
from bayesnb.analysis.ppc import ppc
from bayesnb.estimators import (
    BernoulliNB,
    CategoricalNB,
    ExponentialNB,
    GaussianBayesClassifier,
    GaussianNB,
    MixedNB,
    MultinomialNB,
    PoissonNB,
    PolyaNB,
    SemiSupervisedNB,
)
from bayesnb.estimators.compiled import compile_model
from bayesnb.exceptions import (
    ApproximateLOOWarning,
    EvidenceWarning,
    ModelCompileError,
    ModelFileError,
    ZeroLikelihoodWarning,
)
from bayesnb.io.persistence import load

if TYPE_CHECKING:  # imported on first use, see __getattr__
    from bayesnb.analysis.evidence import BayesFactorSelector

_legacy.install()

__all__ = [
    "ApproximateLOOWarning",
    "BayesFactorSelector",
    "BernoulliNB",
    "CategoricalNB",
    "EvidenceWarning",
    "ExponentialNB",
    "GaussianBayesClassifier",
    "GaussianNB",
    "MixedNB",
    "ModelCompileError",
    "ModelFileError",
    "MultinomialNB",
    "PoissonNB",
    "PolyaNB",
    "SemiSupervisedNB",
    "ZeroLikelihoodWarning",
    "__version__",
    "compare",
    "compile_model",
    "load",
    "loo",
    "ppc",
]


def __getattr__(name):
    # BayesFactorSelector is built on sklearn.feature_selection, whose import pulls in
    # scikit-learn's linear models and SVMs; `import bayesnb` does not pay for it.
    if name == "BayesFactorSelector":
        from bayesnb.analysis.evidence import BayesFactorSelector

        return BayesFactorSelector
    try:  # a module of the flat layout (bayesnb.uncertainty, ...): see bayesnb._legacy
        return _legacy.module(name)
    except AttributeError:
        pass
    raise AttributeError(f"module 'bayesnb' has no attribute {name!r}")
