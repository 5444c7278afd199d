"""scikit-learn's estimator checks with hyperparameters learned from the evidence.

``alpha="evidence"`` (and ``class_alpha``, ``prior``) must leave the estimators
scikit-learn compatible: ``get_params`` keeps the string, ``clone`` works, the learned
values are fitted attributes. The selector is checked as a transformer.
"""

from __future__ import annotations

import inspect
import warnings

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks
from test_estimators import _expected_failed_checks

from bayesnb import BernoulliNB, CategoricalNB, GaussianNB, MultinomialNB
from bayesnb.analysis.evidence import BayesFactorSelector
from bayesnb.exceptions import EvidenceWarning

_STRICT = (
    {"xfail_strict": True} if "xfail_strict" in inspect.signature(parametrize_with_checks).parameters else {}
)

_ESTIMATORS = [
    MultinomialNB(alpha="evidence", class_alpha="evidence"),
    BernoulliNB(alpha=("evidence", "evidence"), alpha_scope="feature"),
    CategoricalNB(alpha="evidence", alpha_scope="class"),
    GaussianNB(prior="evidence"),
    BayesFactorSelector(k=2),
]


@parametrize_with_checks(_ESTIMATORS, expected_failed_checks=_expected_failed_checks, **_STRICT)
def test_sklearn_estimator_checks_with_evidence(estimator, check):
    # The checks' random data often put a hyperparameter's optimum at a bound, which is
    # warned about (EvidenceWarning); that is not what they check.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        check(estimator)
