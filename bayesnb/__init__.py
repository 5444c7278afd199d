"""bayesnb: Bayesian naive Bayes with conjugate priors.

Closed-form posteriors, exact posterior predictives and log evidences in JAX, behind
scikit-learn compatible estimators.

``import bayesnb`` is light: the public names below are imported on first use
(:pep:`562`), so that ``bayesnb --help`` and ``from bayesnb import __version__`` do not
load JAX, SciPy or scikit-learn. ``from bayesnb import MultinomialNB`` imports the
estimators at that moment and gives the same class as ``bayesnb.estimators.MultinomialNB``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from bayesnb._version import __version__

if TYPE_CHECKING:  # for type checkers and IDEs; at run time see __getattr__
    from bayesnb.analysis.comparison import compare
    from bayesnb.analysis.elpd import loo
    from bayesnb.analysis.evidence import BayesFactorSelector
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
    from bayesnb.io.persistence import load, save

#: Public name -> the module that defines it (imported on first access).
_NAMES = {
    "ApproximateLOOWarning": "bayesnb.exceptions",
    "BayesFactorSelector": "bayesnb.analysis.evidence",
    "BernoulliNB": "bayesnb.estimators",
    "CategoricalNB": "bayesnb.estimators",
    "EvidenceWarning": "bayesnb.exceptions",
    "ExponentialNB": "bayesnb.estimators",
    "GaussianBayesClassifier": "bayesnb.estimators",
    "GaussianNB": "bayesnb.estimators",
    "MixedNB": "bayesnb.estimators",
    "ModelCompileError": "bayesnb.exceptions",
    "ModelFileError": "bayesnb.exceptions",
    "MultinomialNB": "bayesnb.estimators",
    "PoissonNB": "bayesnb.estimators",
    "PolyaNB": "bayesnb.estimators",
    "SemiSupervisedNB": "bayesnb.estimators",
    "ZeroLikelihoodWarning": "bayesnb.exceptions",
    "compare": "bayesnb.analysis.comparison",
    "compile_model": "bayesnb.estimators.compiled",
    "load": "bayesnb.io.persistence",
    "loo": "bayesnb.analysis.elpd",
    "ppc": "bayesnb.analysis.ppc",
    "save": "bayesnb.io.persistence",
}

#: Modules reachable as attributes of the package: its layers, and the short names the
#: documentation uses (``from bayesnb import families``, ``plots``, ``distributed``).
_MODULES = {
    "analysis": "bayesnb.analysis",
    "cli": "bayesnb.cli",
    "core": "bayesnb.core",
    "estimators": "bayesnb.estimators",
    "exceptions": "bayesnb.exceptions",
    "io": "bayesnb.io",
    "ppl": "bayesnb.ppl",
    "scale": "bayesnb.scale",
    "sklearn": "bayesnb.sklearn",
    "families": "bayesnb.core.families",
    "plots": "bayesnb.analysis.plots",
    "distributed": "bayesnb.scale.distributed",
}

#: Modules a name needs beside its own: ``load`` finds estimator classes in the table
#: that importing :mod:`bayesnb.estimators` and :mod:`bayesnb.sklearn` (whose classes a
#: file names ``sklearn.MultinomialNB``, ...) fills, so that any file ``save`` wrote
#: loads in a fresh process (``save`` reads the same table); ``BayesFactorSelector``'s
#: default estimator is looked up in the same table.
_ALSO = {
    "load": ("bayesnb.estimators", "bayesnb.sklearn"),
    "save": ("bayesnb.estimators", "bayesnb.sklearn"),
    "BayesFactorSelector": ("bayesnb.estimators",),
}

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
    "save",
]


def __getattr__(name):
    if name in _NAMES:
        for extra in _ALSO.get(name, ()):
            importlib.import_module(extra)
        value = getattr(importlib.import_module(_NAMES[name]), name)
    elif name in _MODULES:
        value = importlib.import_module(_MODULES[name])
    else:
        raise AttributeError(f"module 'bayesnb' has no attribute {name!r}")
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__():
    return sorted(set(globals()) | set(_NAMES) | set(_MODULES))
