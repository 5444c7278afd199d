"""scikit-learn's estimator checks for the configurations the per-estimator modules do not run.

Already checked elsewhere: ``MultinomialNB()``, ``BernoulliNB()``, ``CategoricalNB()``
(``test_estimators.py``), ``GaussianNB`` with every estimate (``test_gaussian_nb.py``),
``GaussianBayesClassifier`` with every covariance (``test_gaussian_bayes.py``),
``PoissonNB`` (``test_poisson_nb.py``) and a one-block ``MixedNB``
(``test_mixed_nb.py``). Here: ``missing="ignore"`` (whose ``allow_nan`` tag makes
scikit-learn feed NaNs to the families that fit with them), MixedNB over several blocks
and families, sparse-capable blocks, and the class-prior options. Every expected failure
says why; ``xfail_strict`` makes a check that starts passing fail until it is unlisted.
"""

from __future__ import annotations

import pytest
from _sklearn_expected import ALWAYS_FRACTIONAL, FAIL_ON_FRACTIONAL_X, FRACTIONAL
from sklearn.utils.estimator_checks import parametrize_with_checks

from bayesnb import (
    BernoulliNB,
    CategoricalNB,
    GaussianBayesClassifier,
    GaussianNB,
    MixedNB,
    MultinomialNB,
    PoissonNB,
)

ESTIMATORS = [
    GaussianNB(missing="ignore"),
    BernoulliNB(missing="ignore"),
    CategoricalNB(missing="ignore"),
    MultinomialNB(missing="ignore"),
    PoissonNB(missing="ignore"),
    GaussianBayesClassifier(covariance="diag", missing="ignore"),
    GaussianBayesClassifier(covariance="full", missing="ignore"),
    GaussianBayesClassifier(covariance="shared", missing="ignore", estimate="mean"),
    MultinomialNB(fit_prior=False, estimate="mean"),
    BernoulliNB(fit_prior=False, estimate="map", alpha=2.0),
    MixedNB([("bernoulli", BernoulliNB(), slice(None))]),
    MixedNB([("gaussian", GaussianNB(), slice(None))], missing="ignore"),
    MixedNB([("first", GaussianNB(), slice(0, 1)), ("rest", BernoulliNB(binarize=0.5), slice(1, None))]),
    MixedNB([("first", GaussianNB(estimate="mle"), [0]), ("rest", GaussianNB(), slice(1, None))], estimate="map"),
]

# CategoricalNB takes integer category codes and refuses anything else instead of
# silently casting it; these checks feed it random floats (see test_estimators.py).
_CATEGORICAL = {
    "check_sample_weight_equivalence_on_dense_data": "feeds random floats as category codes; CategoricalNB refuses "
    "non-integer codes instead of casting them",
    "check_dtype_object": "feeds an object array of random floats as category codes; refused, not cast",
    "check_classifiers_one_label_sample_weights": "feeds random floats, so the non-integer-code error comes before "
    "the one-class error the check looks for",
}
# PoissonNB refuses non-integer counts: see tests/_sklearn_expected.py.
_POISSON = {name: FRACTIONAL for name in ALWAYS_FRACTIONAL + FAIL_ON_FRACTIONAL_X}
# With allow_nan (missing="ignore") scikit-learn keeps categorical data as float64 and
# this check then subtracts the mean, so the "codes" are non-integer: refused, not cast.
_CATEGORICAL_IGNORE = {
    **_CATEGORICAL,
    "check_positive_only_tag_during_fit": "with the allow_nan tag the check's category codes are float64 minus "
    "their mean, i.e. non-integer, which CategoricalNB refuses before it would see the negative values",
}
# MultinomialNB and the full/shared GaussianBayesClassifier with missing="ignore" refuse
# NaNs when fitting (no conjugate update; allow_nan is False) but accept them in predict,
# where leaving an unobserved feature out is exact (the observed sub-vocabulary; the
# marginal of the observed coordinates). The check expects predict to refuse NaN too.
_PREDICTS_WITH_NAN = {
    "check_estimators_nan_inf": "missing='ignore' predicts rows with NaN exactly (conditioning on or "
    "marginalising the observed features) although fitting on them is refused",
}
# A MixedNB block must select at least one column: with one-feature data, the block of
# "the remaining columns" selects none, which is refused (a block without columns is a
# mistake in the block list, not an empty model).
_TWO_BLOCKS = {"check_fit2d_1feature": "one-feature data leave the second block without columns, which is an error"}


def _expected_failed_checks(estimator):
    ignore = getattr(estimator, "missing", "error") == "ignore"
    if isinstance(estimator, CategoricalNB):
        return _CATEGORICAL_IGNORE if ignore else _CATEGORICAL
    if ignore and not estimator._fits_missing():
        return _PREDICTS_WITH_NAN
    if isinstance(estimator, PoissonNB):
        return _POISSON
    if isinstance(estimator, MixedNB) and len(estimator.blocks) > 1:
        return _TWO_BLOCKS
    return {}


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed_checks, xfail_strict=True)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=repr)
def test_allow_nan_tag_says_whether_nans_can_be_fitted(estimator):
    fits = getattr(estimator, "missing", "error") == "ignore" and not isinstance(estimator, MultinomialNB)
    if isinstance(estimator, GaussianBayesClassifier):
        fits = fits and estimator.covariance == "diag"
    assert estimator.__sklearn_tags__().input_tags.allow_nan is fits
