"""scikit-learn's estimator checks for PolyaNB and for tempered estimators.

``temperature="loo"`` chooses T inside ``fit`` from exact leave-one-out predictives, so
every check that fits (sample weights, one class, dtypes, pickling) runs that path too.
"""

from __future__ import annotations

from sklearn.utils.estimator_checks import parametrize_with_checks

from bayesnb import GaussianNB, MultinomialNB, PolyaNB


# The defaults (PolyaNB()) are checked with every registered family's estimator in
# tests/estimators/test_estimators.py (the registry's list).
@parametrize_with_checks(
    [PolyaNB(precision=5.0, temperature=2.0), MultinomialNB(temperature="loo"), GaussianNB(temperature="loo")]
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
