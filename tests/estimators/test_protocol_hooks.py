"""What the front asks of an estimator or its family instead of its class.

Each test defines a throwaway estimator or family here, in the test, and checks that the
code above it works without naming it (issue 41: no switches on estimator classes).
"""

from __future__ import annotations

import numpy as np
import pytest

from bayesnb import GaussianNB, MultinomialNB, PoissonNB
from bayesnb.cli import report
from bayesnb.estimators import BaseNB
from bayesnb.estimators._base import SklearnCounterpart


class _CountsWithCounterpart(PoissonNB):
    """A counts estimator that names a scikit-learn counterpart (PoissonNB has none)."""

    def sklearn_counterpart(self):
        from sklearn.naive_bayes import MultinomialNB as SkMultinomialNB

        return SklearnCounterpart(SkMultinomialNB(alpha=2.0), categorical=False)


def test_report_baselines_ask_the_estimator():
    # Before, the report switched on `type(clf) is MultinomialNB`, ...: an estimator of
    # another class got no baselines whatever it declared.
    got = report.baselines(_CountsWithCounterpart())
    assert list(got) == [
        "sklearn MultinomialNB", "+ CalibratedCV sigmoid", "+ CalibratedCV isotonic", "LogisticRegression (ref)"
    ]
    assert got["sklearn MultinomialNB"].alpha == 2.0
    assert report.baselines(PoissonNB()) == {}


def test_counterparts_carry_the_prior():
    assert MultinomialNB(alpha=0.3).sklearn_counterpart().estimator.alpha == 0.3
    assert GaussianNB().sklearn_counterpart().categorical is False
    assert BaseNB.sklearn_counterpart(PoissonNB()) is None


def test_loo_approximations_belong_to_every_estimator():
    # On BaseNB itself, not on the hyperprior mixin.
    assert "loo_approximations" in vars(BaseNB)
    X = np.array([[0.1, 1.0], [0.3, 1.4], [2.0, 0.2], [2.4, 0.1]])
    assert GaussianNB().fit(X, [0, 0, 1, 1]).loo_approximations()[0].startswith("prior=None")


def test_calibrate_is_documented_once():
    import pathlib

    import bayesnb.estimators as est

    root = pathlib.Path(est.__file__).parent
    pasted = [p.name for p in root.glob("*.py") if "``\"loo\"``: after ``fit``, a monotone map" in p.read_text()]
    assert pasted == ["_base.py"]
    for name in ("MultinomialNB", "GaussianNB", "PoissonNB", "MixedNB", "GaussianBayesClassifier", "ExponentialNB"):
        assert "a monotone map of the class probabilities" in getattr(est, name).__doc__, name


@pytest.mark.parametrize("kind", ["conditional", "joint"])
def test_loo_approximations_kinds(kind):
    X = np.array([[1, 0], [2, 1], [0, 3], [1, 4]])
    assert MultinomialNB().fit(X, [0, 0, 1, 1]).loo_approximations(kind) == ()


# ---------------------------------------------------------------- MixedNB asks the family
from bayesnb import MixedNB  # noqa: E402
from bayesnb.core.families import poisson as _poisson  # noqa: E402
from bayesnb.estimators._gamma import GammaRateNB  # noqa: E402

#: A counts family MixedNB has never heard of (the Poisson closed forms under a new name).
_NEW_COUNTS = _poisson.family._replace(name="throwaway_counts")


class _NewCountsNB(GammaRateNB):
    """A counts estimator that is no subclass of any estimator MixedNB could have named."""

    _family = _NEW_COUNTS

    def __init__(self, *, alpha=1.0, beta=0.01, prior=None, class_alpha=1.0, class_prior=None, fit_prior=True,
                 estimate="predictive", missing="error"):
        super().__init__(alpha=alpha, beta=beta, prior=prior, class_alpha=class_alpha, class_prior=class_prior,
                         fit_prior=fit_prior, estimate=estimate, missing=missing)

    _check_X = PoissonNB._check_X
    _start_prior = PoissonNB._start_prior


def test_mixed_sample_dtype_follows_the_family():
    # Before, MixedNB cast sampled columns to int only for CategoricalNB, PoissonNB and
    # MultinomialNB blocks: a new counts family's columns came back float64.
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    X = pd.DataFrame({
        "x": rng.normal(size=40),
        "k": rng.poisson(3.0, size=40),
        "b": rng.random(40) < 0.5,
        "c": pd.Categorical(rng.choice(["u", "v"], size=40)),
    })
    y = np.repeat([0, 1], 20)
    from bayesnb import BernoulliNB, CategoricalNB

    clf = MixedNB(blocks=[
        ("g", GaussianNB(), ["x"]), ("n", _NewCountsNB(), ["k"]),
        ("b", BernoulliNB(binarize=None), ["b"]), ("c", CategoricalNB(), ["c"]),
    ]).fit(X, y)
    sampled, _ = clf.sample(7, random_state=1)
    assert sampled["k"].dtype == np.int64
    assert sampled["x"].dtype == np.float64
    assert sampled["b"].dtype == bool
    assert isinstance(sampled["c"].dtype, pd.CategoricalDtype)
    assert (sampled["k"] >= 0).all()


def test_mixed_names_no_estimator_class():
    import ast
    import pathlib

    import bayesnb.estimators.mixed as mixed

    tree = ast.parse(pathlib.Path(mixed.__file__).read_text())
    family_estimators = {"BernoulliNB", "CategoricalNB", "GaussianNB", "MultinomialNB", "PoissonNB", "PolyaNB",
                         "ExponentialNB", "GaussianBayesClassifier"}
    named = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} & family_estimators
    assert not named


# ---------------------------------------------------------------- draw names, once
def _rows_for(support, rng, n, f=3):
    """Rows of what one value of a family with ``support`` is."""
    if support == "counts":
        return rng.poisson(3.0, size=(n, f)) + 1
    if support == "binary":
        return (rng.random((n, f)) < 0.5).astype(np.int64)
    if support == "codes":
        return rng.integers(0, 3, size=(n, f))
    if support == "positive":
        return rng.gamma(2.0, size=(n, f)) + 0.1
    return rng.normal(size=(n, f))


@pytest.mark.parametrize("family", sorted(__import__("bayesnb.core.families", fromlist=["names"]).names()))
def test_draw_names_are_the_export_names(family):
    from bayesnb.core import families
    from bayesnb.estimators import estimator_for

    est = estimator_for(family)
    rng = np.random.default_rng(1)
    X = _rows_for(families.get(family).support, rng, 24)
    est.fit(X, np.repeat([0, 1], 12))
    draws = est.sample_posterior(3, random_state=0)
    posterior = est.to_inference_data(random_state=0).posterior
    # (Shapes may differ where the export lays a padded axis out as its existing cells.)
    assert set(draws) == set(posterior.data_vars)


def test_a_diagonal_gaussian_bayes_classifier_draws_its_familys_names():
    from bayesnb import GaussianBayesClassifier

    X = np.random.default_rng(2).normal(size=(20, 2))
    est = GaussianBayesClassifier(covariance="diag").fit(X, np.repeat([0, 1], 10))
    assert set(est.sample_posterior(2, random_state=0)) == set(est.to_inference_data(random_state=0).posterior.data_vars)
