"""The scikit-learn front: API contract, estimates, class proportions, uncertainty.

Oracles used here: scikit-learn's own estimator checks and ``BernoulliNB``/``CategoricalNB``,
closed-form Dirichlet/Beta moments computed by hand from the data, and Monte Carlo with
numpy's independent samplers (tolerances are 5 Monte Carlo standard errors).
"""

from __future__ import annotations

import inspect
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from scipy import optimize, stats
from scipy.special import logsumexp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.model_selection import GridSearchCV
from sklearn.naive_bayes import BernoulliNB as SkBernoulliNB
from sklearn.naive_bayes import CategoricalNB as SkCategoricalNB
from sklearn.pipeline import Pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from _registered import expected_failed_checks, family_estimators

from bayesnb import BernoulliNB, CategoricalNB, MultinomialNB, ZeroLikelihoodWarning
from bayesnb.analysis.uncertainty import credible_interval

ESTIMATES = ("mle", "map", "mean", "predictive")
ESTIMATORS = (MultinomialNB, BernoulliNB, CategoricalNB)

# One number of posterior draws everywhere, and one parameter shape per family (3
# classes, the feature layout of ``_data``): JAX compiles its samplers once per shape,
# and compiling dominates the runtime of these tests.
N_DRAWS = 2000

# ----------------------------------------------------------------------------- sklearn checks

# Every registered family's estimator, with its defaults (tests/_registered.py: a family
# registered later is checked here without an edit); the expected failures follow from
# the family's support and what the estimator refuses. Other configurations are checked
# in the estimators' own modules and in test_sklearn_checks.py.
_expected_failed_checks = expected_failed_checks

# A check listed as expected to fail that starts passing must be unlisted (xfail_strict: sklearn >= 1.8).
_STRICT = (
    {"xfail_strict": True} if "xfail_strict" in inspect.signature(parametrize_with_checks).parameters else {}
)


@parametrize_with_checks(
    [est for _, _, est in family_estimators()],
    expected_failed_checks=expected_failed_checks,
    **_STRICT,
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


# ----------------------------------------------------------------------------- data

def _data(cls, n_per_class=20, n_test=15, seed=0):
    """Training/test data on which every estimate is defined and no row is impossible.

    Multinomial: counts >= 1 everywhere (every MLE probability > 0). Bernoulli: every
    feature is both on and off in every class. Categorical: every category occurs in
    every class. Three classes of different sizes.
    """
    rng = np.random.default_rng(seed)
    sizes = (n_per_class, n_per_class + 5, n_per_class + 10)
    y = np.repeat(np.arange(3), sizes)
    n = y.size
    if cls is MultinomialNB:
        rates = np.array([[4, 1, 2, 3, 1, 2], [1, 4, 2, 1, 3, 2], [2, 2, 4, 1, 1, 3]], float)
        X = rng.poisson(rates[y]) + 1
        X_test = rng.poisson(rates[rng.integers(0, 3, n_test)]) + 1
    elif cls is BernoulliNB:
        p = np.array([[0.8, 0.2, 0.5, 0.3, 0.6], [0.2, 0.7, 0.4, 0.5, 0.3], [0.5, 0.5, 0.8, 0.2, 0.4]])
        X = (rng.random((n, 5)) < p[y]).astype(np.int64)
        X_test = (rng.random((n_test, 5)) < 0.5).astype(np.int64)
        for c in range(3):
            first = np.flatnonzero(y == c)[:2]
            X[first] = [[0], [1]]
            assert X[y == c].min(axis=0).max() == 0 and X[y == c].max(axis=0).min() == 1
    else:
        k = np.array([2, 3, 4])
        X = np.column_stack([rng.integers(0, kj, n) for kj in k])
        X_test = np.column_stack([rng.integers(0, kj, n_test) for kj in k])
        for c in range(3):
            first = np.flatnonzero(y == c)
            for j, kj in enumerate(k):
                X[first[:kj], j] = np.arange(kj)
                assert np.unique(X[y == c, j]).size == kj
    return X, y, X_test


def _fit(cls, estimate="predictive", **kw):
    X, y, X_test = _data(cls)
    kw.setdefault("alpha", 2.0)  # "map" needs posterior concentrations >= 1
    return cls(estimate=estimate, **kw).fit(X, y), X, y, X_test


# ----------------------------------------------------------------------------- pipeline, grid

TEXTS = [
    "cheap pills buy now",
    "win money now",
    "buy cheap watches today",
    "free money offer",
    "limited offer buy now",
    "meeting at noon today",
    "lunch tomorrow with the team",
    "project meeting notes",
    "see you at lunch",
    "team notes for the project",
] * 2
LABELS = (["spam"] * 5 + ["ham"] * 5) * 2


def test_pipeline_with_count_vectorizer():
    pipe = Pipeline([("vec", CountVectorizer()), ("nb", MultinomialNB())]).fit(TEXTS, LABELS)
    assert_array_equal(pipe.classes_, ["ham", "spam"])
    assert_array_equal(pipe.predict(["buy cheap pills", "team lunch meeting"]), ["spam", "ham"])
    proba = pipe.predict_proba(["buy cheap pills", "team lunch meeting", "unknown words only"])
    assert proba.shape == (3, 2)
    assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    # A document of out-of-vocabulary words carries no evidence: the class proportions.
    assert_allclose(proba[2], [0.5, 0.5], atol=1e-12)
    # The sparse path of the pipeline equals the dense path.
    vec = pipe.named_steps["vec"]
    Xs = vec.transform(TEXTS)
    dense = MultinomialNB().fit(Xs.toarray(), LABELS).predict_proba(Xs.toarray())
    assert_allclose(pipe.predict_proba(TEXTS), dense, rtol=1e-12, atol=1e-14)


GRID = {"nb__estimate": list(ESTIMATES), "nb__alpha": [0.5, 1.0, 2.0]}


def test_grid_search_map_with_alpha_below_one_gets_error_score():
    """Documented behaviour: the MAP of a Dirichlet with a concentration < 1 does not
    exist, so ``estimate="map", alpha=0.5`` raises at predict time. Under GridSearchCV's
    default ``error_score=np.nan`` that candidate scores NaN (with scikit-learn's
    "Scoring failed" warning), is ranked last and never chosen; every other candidate
    scores normally.
    """
    pipe = Pipeline([("vec", CountVectorizer()), ("nb", MultinomialNB())])
    search = GridSearchCV(pipe, GRID, cv=3)
    with pytest.warns(UserWarning, match="Scoring failed"):
        search.fit(TEXTS, LABELS)
    params = search.cv_results_["params"]
    scores = search.cv_results_["mean_test_score"]
    assert len(params) == 12
    for p, s, rank in zip(params, scores, search.cv_results_["rank_test_score"]):
        if p["nb__estimate"] == "map" and p["nb__alpha"] < 1:
            assert np.isnan(s)
            assert rank == len(params)
        else:
            assert np.isfinite(s) and 0 <= s <= 1
    assert not (search.best_params_["nb__estimate"] == "map" and search.best_params_["nb__alpha"] < 1)
    assert search.best_estimator_.predict(["buy cheap pills"])[0] == "spam"


def test_grid_search_map_with_alpha_below_one_raises_with_error_score_raise():
    pipe = Pipeline([("vec", CountVectorizer()), ("nb", MultinomialNB())])
    search = GridSearchCV(pipe, GRID, cv=3, error_score="raise")
    with pytest.raises(ValueError, match="estimate='map' is undefined.*no mode"):
        search.fit(TEXTS, LABELS)


# ----------------------------------------------------------------------------- estimates

@pytest.mark.parametrize("cls", ESTIMATORS)
def test_set_params_estimate_after_fit_equals_fresh_fit_without_refitting(cls):
    clf, X, y, X_test = _fit(cls)
    stats_before, posterior_before = clf.stats_, clf.posterior_
    probas = {}
    for estimate in ESTIMATES:
        clf.set_params(estimate=estimate)
        probas[estimate] = clf.predict_proba(X_test)
        assert clf.stats_ is stats_before and clf.posterior_ is posterior_before  # no refit
        fresh = cls(alpha=2.0, estimate=estimate).fit(X, y)
        assert_allclose(probas[estimate], fresh.predict_proba(X_test), rtol=1e-13, atol=1e-15)
        assert_array_equal(clf.predict(X_test), fresh.predict(X_test))
    # mle, map and mean are different estimates on this data: predictions change.
    for a, b in [("mle", "map"), ("mle", "mean"), ("map", "mean")]:
        assert not np.allclose(probas[a], probas[b], rtol=1e-6, atol=0), (a, b)
    if cls is MultinomialNB:
        # Dirichlet-multinomial predictive differs from the plug-in on multi-token rows.
        assert not np.allclose(probas["predictive"], probas["mean"], rtol=1e-6, atol=0)
    else:
        # One observation per feature: the exact predictive is the posterior-mean plug-in.
        assert_allclose(probas["predictive"], probas["mean"], rtol=1e-12, atol=1e-15)


def test_multinomial_predictive_equals_mean_on_single_token_rows():
    clf, _, _, _ = _fit(MultinomialNB)
    one_hot = np.eye(clf.n_features_in_)
    pred = clf.predict_proba(one_hot)
    clf.set_params(estimate="mean")
    assert_allclose(pred, clf.predict_proba(one_hot), rtol=1e-12)


@pytest.mark.parametrize("estimate", ESTIMATES)
@pytest.mark.parametrize("cls", ESTIMATORS)
def test_every_estimate_predicts_consistently(cls, estimate):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ZeroLikelihoodWarning)  # no row is impossible here
        clf, X, y, X_test = _fit(cls, estimate)
        n_classes = clf.classes_.size
        proba = clf.predict_proba(X_test)
        log_proba = clf.predict_log_proba(X_test)
        joint = clf.predict_joint_log_proba(X_test)
        pred = clf.predict(X_test)
        score = clf.score(X, y)
    assert proba.shape == log_proba.shape == joint.shape == (X_test.shape[0], n_classes)
    assert np.all(np.isfinite(proba)) and np.all(np.isfinite(joint))
    assert np.all((proba >= 0) & (proba <= 1))
    assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert_allclose(np.exp(log_proba), proba, rtol=1e-12)
    assert_allclose(log_proba, joint - logsumexp(joint, axis=1, keepdims=True), rtol=1e-12, atol=1e-12)
    assert_array_equal(pred, clf.classes_[np.argmax(proba, axis=1)])
    assert score == pytest.approx(np.mean(clf.predict(X) == y), abs=1e-15)
    assert score > 1 / n_classes  # the classes are separable well above chance

    assert clf.class_log_prior_.shape == (n_classes,)
    assert_allclose(logsumexp(clf.class_log_prior_), 0.0, atol=1e-12)
    flp = clf.feature_log_prob_
    if cls is CategoricalNB:
        assert isinstance(flp, list) and len(flp) == X.shape[1]
        for j, block in enumerate(flp):
            assert block.shape == (n_classes, clf.n_categories_[j])
            assert_allclose(logsumexp(block, axis=1), 0.0, atol=1e-12)
    else:
        assert flp.shape == (n_classes, X.shape[1])
        if cls is MultinomialNB:
            assert_allclose(logsumexp(flp, axis=1), 0.0, atol=1e-12)
        else:
            assert np.all(flp < 0)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_point_estimates_by_hand(cls):
    """Feature probabilities of each estimate against the formulas (alpha = 2)."""
    X, y, _ = _data(cls)
    a = 2.0
    for estimate in ("mle", "map", "mean"):
        clf = cls(alpha=a, estimate=estimate).fit(X, y)
        shift = {"mle": None, "map": a - 1.0, "mean": a}[estimate]
        for c in range(3):
            Xc = X[y == c]
            if cls is MultinomialNB:
                t = Xc.sum(axis=0).astype(float)
                num = t if shift is None else t + shift
                assert_allclose(np.exp(clf.feature_log_prob_[c]), num / num.sum(), rtol=1e-12)
            elif cls is BernoulliNB:
                t, n_c = Xc.sum(axis=0).astype(float), len(Xc)
                # Erratum 2: the denominator is N_c + a + b, not T_cj + a + b.
                exp = t / n_c if shift is None else (t + shift) / (n_c + 2 * shift)
                assert_allclose(np.exp(clf.feature_log_prob_[c]), exp, rtol=1e-12)
            else:
                for j, k in enumerate(clf.n_categories_):
                    cnt = np.bincount(Xc[:, j], minlength=k).astype(float)
                    num = cnt if shift is None else cnt + shift
                    assert_allclose(np.exp(clf.feature_log_prob_[j][c]), num / num.sum(), rtol=1e-12)


# ----------------------------------------------------------------------------- class proportions

@pytest.mark.parametrize("estimate", ESTIMATES)
@pytest.mark.parametrize("cls", ESTIMATORS)
def test_fit_prior_false_gives_uniform_class_proportions(cls, estimate):
    clf, X, y, X_test = _fit(cls, estimate, fit_prior=False)
    assert_allclose(clf.class_log_prior_, np.log(np.full(3, 1 / 3)), rtol=1e-15)
    # The joint differs from that of a fitted class posterior only in the class term.
    fitted = cls(alpha=2.0, estimate=estimate).fit(X, y)
    diff = clf.predict_joint_log_proba(X_test) - fitted.predict_joint_log_proba(X_test)
    assert_allclose(diff, np.broadcast_to(clf.class_log_prior_ - fitted.class_log_prior_, diff.shape), atol=1e-12)
    draws = clf.sample_posterior(N_DRAWS, random_state=0)["class_probs"]
    assert_allclose(draws, np.full((N_DRAWS, 3), 1 / 3), rtol=1e-15)


@pytest.mark.parametrize("estimate", ESTIMATES)
@pytest.mark.parametrize("cls", ESTIMATORS)
def test_fixed_class_prior_is_used_exactly(cls, estimate):
    prior = np.array([0.6, 0.3, 0.1])
    clf, X, y, X_test = _fit(cls, estimate, class_prior=prior)
    assert_array_equal(np.exp(clf.class_log_prior_), np.exp(np.log(prior)))
    uniform = cls(alpha=2.0, estimate=estimate, fit_prior=False).fit(X, y)
    diff = clf.predict_joint_log_proba(X_test) - uniform.predict_joint_log_proba(X_test)
    assert_allclose(diff, np.broadcast_to(np.log(prior) - np.log(1 / 3), diff.shape), atol=1e-12)
    class_draws = clf.sample_posterior(N_DRAWS, random_state=1)["class_probs"]
    assert_allclose(class_draws, np.tile(prior, (N_DRAWS, 1)), rtol=1e-15)
    # class_prior overrides fit_prior=False too.
    both = cls(alpha=2.0, estimate=estimate, class_prior=prior, fit_prior=False).fit(X, y)
    assert_allclose(both.class_log_prior_, np.log(prior), rtol=1e-15)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_class_alpha_sets_class_proportions(cls):
    X, y, X_test = _data(cls)
    beta = np.array([1.5, 2.0, 5.0])
    w = np.linspace(0.5, 2.0, y.size)  # weighted counts N_c
    n_c = np.bincount(y, weights=w)
    expected = {
        "mean": (n_c + beta) / (n_c.sum() + beta.sum()),
        "predictive": (n_c + beta) / (n_c.sum() + beta.sum()),
        "map": (n_c + beta - 1) / (n_c.sum() + beta.sum() - 3),  # erratum 3
        "mle": n_c / n_c.sum(),
    }
    for estimate, probs in expected.items():
        clf = cls(alpha=2.0, class_alpha=beta, estimate=estimate).fit(X, y, sample_weight=w)
        assert_allclose(np.exp(clf.class_log_prior_), probs, rtol=1e-12)
        flat = cls(alpha=2.0, estimate=estimate, fit_prior=False).fit(X, y, sample_weight=w)
        diff = clf.predict_joint_log_proba(X_test) - flat.predict_joint_log_proba(X_test)
        assert_allclose(diff, np.broadcast_to(np.log(probs) - np.log(1 / 3), diff.shape), atol=1e-12)


def test_class_predictive_with_an_empty_class_erratum_1():
    """N = (10, 0), beta = (1, 1): p(y | D) = (11/12, 1/12), not the seed's (0.917, 0.5)."""
    X = np.ones((10, 2))
    clf = MultinomialNB().partial_fit(X, np.zeros(10, int), classes=[0, 1])
    assert_allclose(np.exp(clf.class_log_prior_), [11 / 12, 1 / 12], rtol=1e-14)
    # Both classes give a single token of either word probability 1/2 (T_0 = (10, 10),
    # T_1 = 0), so the class posterior of such a row is the class predictive itself.
    assert_allclose(clf.predict_proba([[1.0, 0.0]]), [[11 / 12, 1 / 12]], rtol=1e-14)


# ----------------------------------------------------------------------------- Bernoulli binarize

@pytest.mark.parametrize("threshold", [-0.5, 0.0, 0.3, 1.0])
def test_bernoulli_binarize_matches_sklearn(threshold):
    rng = np.random.default_rng(3)
    X = np.round(rng.normal(0.3, 1.0, size=(80, 6)), 1)
    X[:5] = 1.0  # values equal to the threshold are "off" (strict >)
    X[5:10] = 0.0
    y = rng.integers(0, 3, 80)
    X_test = np.round(rng.normal(0.3, 1.0, size=(30, 6)), 1)
    X_test[:3] = threshold
    ours = BernoulliNB(alpha=1.0, binarize=threshold, estimate="mean", class_prior=np.bincount(y) / y.size)
    ours.fit(X, y)
    # scikit-learn >= 1.8 refuses a negative threshold; x > t is x - t > 0, so shift.
    shift = min(threshold, 0.0)
    ref = SkBernoulliNB(alpha=1.0, binarize=threshold - shift).fit(X - shift, y)
    assert_array_equal(ours.feature_count_, ref.feature_count_)
    assert_array_equal(ours.feature_count_, np.stack([(X[y == c] > threshold).sum(0) for c in range(3)]))
    assert_allclose(ours.feature_log_prob_, ref.feature_log_prob_, rtol=1e-10)
    assert_allclose(ours.predict_proba(X_test), ref.predict_proba(X_test - shift), rtol=1e-10, atol=1e-12)
    assert_array_equal(ours.predict(X_test), ref.predict(X_test - shift))


def test_bernoulli_binarize_none_accepts_binary_data():
    X, y, X_test = _data(BernoulliNB)
    ref = BernoulliNB(binarize=0.5).fit(X, y)
    for data, test in [
        (X, X_test),
        (X.astype(bool), X_test.astype(bool)),
        (X.astype(float), X_test.astype(float)),
        (sp.csr_matrix(X), sp.csr_matrix(X_test)),
    ]:
        clf = BernoulliNB(binarize=None).fit(data, y)
        assert_array_equal(clf.feature_count_, ref.feature_count_)
        assert_allclose(clf.predict_proba(test), ref.predict_proba(X_test), rtol=1e-13)


# ----------------------------------------------------------------------------- CategoricalNB

# Tiny example: K = (2, 3), classes of 2 and 3 rows, alpha = 0.5, class_alpha = 1.
CAT_X = np.array([[0, 0], [1, 2], [0, 1], [1, 1], [1, 0]])
CAT_Y = np.array([0, 0, 1, 1, 1])


def _cat_count(c, j, k):
    return float(np.sum((CAT_Y == c) & (CAT_X[:, j] == k)))


@pytest.mark.parametrize("estimate", ["mean", "predictive"])
def test_categorical_unseen_category_gets_new_category_share(estimate):
    a = 0.5
    clf = CategoricalNB(alpha=a, estimate=estimate).fit(CAT_X, CAT_Y)
    assert_array_equal(clf.n_categories_, [2, 3])
    queries = np.array([[2, 1], [0, 7], [10**12, 10**15]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        joint = clf.predict_joint_log_proba(queries)
        proba = clf.predict_proba(queries)
    n_c = np.array([2.0, 3.0])  # N_cj = N_c: one observation per feature and row
    k = np.array([2, 3])
    expected = np.empty((3, 2))
    for c in range(2):
        log_pi = np.log((n_c[c] + 1) / (n_c.sum() + 2))
        known = lambda j, code: np.log((_cat_count(c, j, code) + a) / (n_c[c] + k[j] * a))  # noqa: E731
        new = lambda j: np.log(a / (n_c[c] + (k[j] + 1) * a))  # noqa: E731
        expected[0, c] = log_pi + new(0) + known(1, 1)
        expected[1, c] = log_pi + known(0, 0) + new(1)
        expected[2, c] = log_pi + new(0) + new(1)
    assert_allclose(joint, expected, rtol=1e-12)
    assert np.all(np.isfinite(proba))
    assert_allclose(proba.sum(axis=1), 1.0, atol=1e-14)
    # (Posterior draws with unseen codes: test_predict_proba_draws_match_independent_monte_carlo.)


def test_categorical_unseen_category_map_and_mle():
    # "map" with alpha = 2: the mode on the simplex extended by the new category.
    clf = CategoricalNB(alpha=2.0, estimate="map").fit(CAT_X, CAT_Y)
    joint = clf.predict_joint_log_proba([[2, 1]])
    n_c = np.array([2.0, 3.0])
    expected = [
        np.log((n_c[c] + 1 - 1) / (n_c.sum() + 2 - 2))
        + np.log(1.0 / (n_c[c] + 3 * 1.0))
        + np.log((_cat_count(c, 1, 1) + 1.0) / (n_c[c] + 3 * 1.0))
        for c in range(2)
    ]
    assert_allclose(joint[0], expected, rtol=1e-12)
    # "mle": an unseen category has probability zero under every class; the row falls
    # back to the class proportions with a warning, never NaN.
    clf.set_params(estimate="mle")
    with pytest.warns(ZeroLikelihoodWarning, match="zero likelihood"):
        proba = clf.predict_proba([[2, 1], [0, 1]])
    assert_allclose(proba[0], [2 / 5, 3 / 5], rtol=1e-14)
    assert np.all(np.isfinite(proba))


def test_categorical_min_categories():
    a = 0.5
    clf = CategoricalNB(alpha=a, min_categories=[4, 1], estimate="mean").fit(CAT_X, CAT_Y)
    ref = SkCategoricalNB(alpha=a, min_categories=[4, 1]).fit(CAT_X, CAT_Y)
    assert_array_equal(clf.n_categories_, [4, 3])
    assert_array_equal(clf.n_categories_, ref.n_categories_)
    assert [b.shape for b in clf.feature_log_prob_] == [(2, 4), (2, 3)]
    for ours, theirs in zip(clf.feature_log_prob_, ref.feature_log_prob_):
        assert_allclose(ours, theirs, rtol=1e-12)
    # Code 3 of feature 0 is now a known (never observed) category: a / (N_c + 4a).
    n_c = np.array([2.0, 3.0])
    assert_allclose(np.exp(clf.feature_log_prob_[0][:, 3]), a / (n_c + 4 * a), rtol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf.predict_proba([[3, 0]])
    # A scalar applies to every feature; it never lowers the observed number.
    assert_array_equal(CategoricalNB(min_categories=5).fit(CAT_X, CAT_Y).n_categories_, [5, 5])
    assert_array_equal(CategoricalNB(min_categories=1).fit(CAT_X, CAT_Y).n_categories_, [2, 3])


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_string_labels(cls):
    X, y, X_test = _data(cls)
    names = np.array(["cat", "dog", "emu"])
    clf_int = cls(alpha=2.0).fit(X, y)
    clf_str = cls(alpha=2.0).fit(X, names[y])
    assert_array_equal(clf_str.classes_, names)
    pred = clf_str.predict(X_test)
    assert pred.dtype.kind == "U"
    assert_array_equal(pred, names[clf_int.predict(X_test)])
    assert_allclose(clf_str.predict_proba(X_test), clf_int.predict_proba(X_test), rtol=1e-14)
    pf = cls(alpha=2.0).partial_fit(X[::2], names[y[::2]], classes=names[::-1])
    pf.partial_fit(X[1::2], names[y[1::2]])
    assert_array_equal(pf.classes_, names)
    assert_allclose(pf.predict_proba(X_test), clf_str.predict_proba(X_test), rtol=1e-12)
    assert clf_str.score(X, names[y]) == pytest.approx(clf_int.score(X, y))


def test_categorical_partial_fit_extends_categories():
    X, y, X_test = _data(CategoricalNB)
    first = X.copy()
    first[:, 1] = np.minimum(first[:, 1], 1)  # a first batch that never shows code 2 of feature 1
    first[:, 2] = np.minimum(first[:, 2], 1)
    batch1, batch2 = np.arange(0, y.size, 2), np.arange(1, y.size, 2)
    data = np.vstack([first[batch1], X[batch2]])
    labels = np.concatenate([y[batch1], y[batch2]])
    for estimate in ESTIMATES:
        clf = CategoricalNB(alpha=2.0, estimate=estimate).partial_fit(first[batch1], y[batch1], classes=[0, 1, 2])
        assert_array_equal(clf.n_categories_, [2, 2, 2])
        clf.partial_fit(X[batch2], y[batch2])
        assert_array_equal(clf.n_categories_, [2, 3, 4])
        full = CategoricalNB(alpha=2.0, estimate=estimate).fit(data, labels)
        for a, b in zip(clf.category_count_, full.category_count_):
            assert_array_equal(a, b)
        assert_allclose(clf.predict_proba(X_test), full.predict_proba(X_test), rtol=1e-12)
        assert_allclose(clf.log_evidence(), full.log_evidence(), rtol=1e-12)


# ----------------------------------------------------------------------------- posterior draws

def _posterior_concentrations(cls, X, y, alpha, beta):
    """Closed-form posterior concentrations from the data, by hand (not from the library)."""
    n_c = np.bincount(y).astype(float)
    class_conc = n_c + beta
    if cls is MultinomialNB:
        t = np.stack([X[y == c].sum(0) for c in range(3)]).astype(float)
        return class_conc, alpha + t
    if cls is BernoulliNB:
        a, b = alpha
        t = np.stack([X[y == c].sum(0) for c in range(3)]).astype(float)
        return class_conc, (a + t, b + n_c[:, None] - t)
    k = np.array([2, 3, 4])
    conc = np.zeros((3, X.shape[1], k.max()))
    for c in range(3):
        for j, kj in enumerate(k):
            conc[c, j, :kj] = alpha + np.bincount(X[y == c, j], minlength=kj)
    return class_conc, conc


def _dirichlet_moments(conc, mask=None):
    conc = np.where(mask, conc, 0.0) if mask is not None else conc
    total = conc.sum(-1, keepdims=True)
    mean = conc / total
    return mean, mean * (1 - mean) / (total + 1)


def _alpha_for(cls):
    return (1.5, 3.0) if cls is BernoulliNB else 0.7


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_sample_posterior_shapes_reproducibility_and_moments(cls):
    X, y, _ = _data(cls, n_per_class=8)
    alpha, beta = _alpha_for(cls), np.array([0.5, 1.0, 3.0])
    clf = cls(alpha=alpha, class_alpha=beta).fit(X, y)
    n = N_DRAWS
    draws = clf.sample_posterior(n, random_state=7)
    again = clf.sample_posterior(n, random_state=7)
    other = clf.sample_posterior(n, random_state=8)
    for key in ("class_probs", "feature_probs"):
        assert_array_equal(draws[key], again[key])
        assert not np.array_equal(draws[key], other[key])
    class_conc, feat_conc = _posterior_concentrations(cls, X, y, alpha, beta)
    assert draws["class_probs"].shape == (n, 3)
    assert_allclose(draws["class_probs"].sum(-1), 1.0, atol=1e-12)
    moments = [(draws["class_probs"], *_dirichlet_moments(class_conc))]
    fp = draws["feature_probs"]
    if cls is MultinomialNB:
        assert fp.shape == (n, 3, X.shape[1])
        assert_allclose(fp.sum(-1), 1.0, atol=1e-12)
        moments.append((fp, *_dirichlet_moments(feat_conc)))
    elif cls is BernoulliNB:
        assert fp.shape == (n, 3, X.shape[1])
        assert np.all((fp > 0) & (fp < 1))
        a, b = feat_conc
        mean = a / (a + b)
        moments.append((fp, mean, mean * (1 - mean) / (a + b + 1)))
    else:
        k = clf.n_categories_
        assert fp.shape == (n, 3, X.shape[1], k.max())
        mask = np.arange(k.max())[None, :] < k[:, None]
        assert np.all(fp[..., ~mask] == 0)  # padding carries no mass
        assert_allclose(fp.sum(-1), 1.0, atol=1e-12)
        mean, var = _dirichlet_moments(feat_conc, mask)
        moments.append((fp[..., mask], mean[..., mask], var[..., mask]))
    for sample, mean, var in moments:
        se_mean = np.sqrt(var / n)
        assert np.all(np.abs(sample.mean(0) - mean) <= 5 * se_mean)
        # The spread too (a wrong concentration scale keeps the mean, not the variance).
        dev2 = (sample - sample.mean(0)) ** 2
        se_var = dev2.std(0) / np.sqrt(n)
        assert np.all(np.abs(dev2.mean(0) - var) <= 5 * se_var + 1e-15)


def _reference_proba_draws(cls, X, y, alpha, beta, X_new, n, seed):
    """p(y | x, theta, pi) from independent numpy draws of the closed-form posterior."""
    rng = np.random.default_rng(seed)
    class_conc, feat_conc = _posterior_concentrations(cls, X, y, alpha, beta)
    log_pi = np.log(rng.dirichlet(class_conc, size=n))  # (n, C)
    if cls is MultinomialNB:
        theta = np.stack([rng.dirichlet(feat_conc[c], size=n) for c in range(3)], axis=1)
        loglik = np.einsum("sj,ncj->nsc", X_new, np.log(theta))
    elif cls is BernoulliNB:
        theta = rng.beta(*feat_conc, size=(n,) + feat_conc[0].shape)
        loglik = np.einsum("sj,ncj->nsc", X_new, np.log(theta)) + np.einsum(
            "sj,ncj->nsc", 1 - X_new, np.log1p(-theta)
        )
    else:
        k = np.array([2, 3, 4])
        loglik = np.zeros((n, X_new.shape[0], 3))
        for c in range(3):
            for j, kj in enumerate(k):
                theta = rng.dirichlet(feat_conc[c, j, :kj], size=n)  # (n, kj)
                seen = X_new[:, j] < kj
                loglik[:, seen, c] += np.log(theta[:, X_new[seen, j]])
                # An unseen code gets the posterior-mean share of one new category,
                # alpha / (N_cj + (K_j + 1) alpha), the same in every draw.
                total = feat_conc[c, j, :kj].sum()
                loglik[:, ~seen, c] += np.log(alpha / (total + alpha))
    joint = loglik + log_pi[:, None, :]
    return np.exp(joint - logsumexp(joint, axis=-1, keepdims=True))


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_predict_proba_draws_match_independent_monte_carlo(cls):
    X, y, X_test = _data(cls, n_per_class=6)
    X_new = X_test[:6]
    if cls is MultinomialNB:
        X_new = np.minimum(X_new, 2)  # short documents: moderate class probabilities
    if cls is CategoricalNB:
        X_new = X_new.copy()
        X_new[0, 0], X_new[1, 2], X_new[2] = 2, 9, [5, 3, 4]  # codes never seen in training
    alpha, beta = _alpha_for(cls), np.array([1.0, 2.0, 1.0])
    clf = cls(alpha=alpha, class_alpha=beta).fit(X, y)
    n = N_DRAWS
    draws = clf.predict_proba_draws(X_new, n_draws=n, random_state=11)
    assert draws.shape == (n, X_new.shape[0], 3)
    assert np.all((draws >= 0) & (draws <= 1))
    assert_allclose(draws.sum(-1), 1.0, atol=1e-12)
    assert_array_equal(draws, clf.predict_proba_draws(X_new, n_draws=n, random_state=11))
    ref = _reference_proba_draws(cls, X, y, alpha, beta, X_new, n, seed=12)
    se = np.sqrt(draws.var(0) / n + ref.var(0) / n)
    assert np.all(np.abs(draws.mean(0) - ref.mean(0)) <= 5 * se + 1e-12)
    # The epistemic spread is real (posterior draws, not one plug-in repeated).
    assert np.all(draws.std(0) > 1e-3)


def test_bernoulli_interval_shrinks_with_ten_times_more_data():
    X_small, y_small, X_new = _data(BernoulliNB, n_per_class=10, seed=5)  # 10 + 15 + 20 rows
    X_big, y_big, _ = _data(BernoulliNB, n_per_class=100, seed=6)  # 100 + 105 + 110 rows
    widths = []
    for X, y in [(X_small, y_small), (X_big, y_big)]:
        lo, hi = BernoulliNB().fit(X, y).predict_proba_interval(X_new, 0.9, n_draws=N_DRAWS, random_state=0)
        widths.append(hi - lo)
    # The posterior sd scales like 1/sqrt(n): about 0.35-0.4 of the width here.
    assert np.all(widths[1] < widths[0])
    assert widths[1].mean() < 0.6 * widths[0].mean()


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_predict_proba_interval_bounds_and_coverage(cls):
    X, y, X_test = _data(cls, n_per_class=6)
    X_new = X_test[:5]
    if cls is MultinomialNB:
        X_new = np.minimum(X_new, 2)
    clf = cls(alpha=1.0).fit(X, y)
    level, n = 0.8, N_DRAWS
    lo, hi = clf.predict_proba_interval(X_new, level, n_draws=n, random_state=3)
    assert lo.shape == hi.shape == (X_new.shape[0], 3)
    assert np.all(lo <= hi)
    assert np.all((lo >= 0) & (hi <= 1))
    # On the very draws it was computed from, the interval holds `level` of them.
    same = clf.predict_proba_draws(X_new, n_draws=n, random_state=3)
    inside = ((same >= lo) & (same <= hi)).mean(0)
    assert np.all(np.abs(inside - level) <= 2.0 / n)
    # On fresh draws, coverage is `level` up to the MC error of interval and evaluation.
    fresh = clf.predict_proba_draws(X_new, n_draws=n, random_state=4)
    cover = ((fresh >= lo) & (fresh <= hi)).mean(0)
    se = np.sqrt(level * (1 - level) * (1 / n + 1 / n))
    assert np.all(np.abs(cover - level) <= 5 * se)
    # The point prediction of the posterior mean lies inside a wide interval.
    lo95, hi95 = clf.predict_proba_interval(X_new, 0.99, n_draws=n, random_state=3)
    assert np.all(lo95 <= lo) and np.all(hi <= hi95)


def test_hdi_is_narrower_on_skewed_draws():
    # Few training rows and strongly informative test rows: class probabilities near
    # 0 or 1 whose posterior draws are skewed.
    X, y, _ = _data(BernoulliNB, n_per_class=3, seed=9)
    clf = BernoulliNB().fit(X, y)
    X_new = np.array([[1, 0, 0, 0, 1], [0, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    kw = dict(n_draws=N_DRAWS, random_state=2)
    draws = clf.predict_proba_draws(X_new, **kw)
    skewed = np.abs(stats.skew(draws, axis=0)) > 0.5
    assert skewed.sum() >= 4  # the premise: several (row, class) cells with skewed draws
    et = clf.predict_proba_interval(X_new, 0.9, method="equal-tailed", **kw)
    hdi = clf.predict_proba_interval(X_new, 0.9, method="hdi", **kw)
    assert np.all(hdi[0] <= hdi[1])
    assert np.all((hdi[0] >= 0) & (hdi[1] <= 1))
    w_hdi, w_et = hdi[1] - hdi[0], et[1] - et[0]
    assert np.all(w_hdi[skewed] <= w_et[skewed])
    assert np.mean(w_hdi[skewed]) < 0.95 * np.mean(w_et[skewed])
    inside = ((draws >= hdi[0]) & (draws <= hdi[1])).sum(0)
    assert np.all(inside >= np.ceil(0.9 * N_DRAWS))


def test_credible_interval_on_beta_draws():
    a, b, n, level = 2.0, 8.0, 40000, 0.9
    dist = stats.beta(a, b)
    draws = dist.rvs(size=(n, 3), random_state=np.random.default_rng(0))
    lo, hi = credible_interval(draws, level=level)
    assert lo.shape == hi.shape == (3,)
    for q, got in [((1 - level) / 2, lo), ((1 + level) / 2, hi)]:
        x = dist.ppf(q)
        se = np.sqrt(q * (1 - q) / n) / dist.pdf(x)  # asymptotic sd of a sample quantile
        assert np.all(np.abs(got - x) <= 5 * se)
    # HDI: the true shortest 90% interval of Beta(2, 8), found numerically.
    res = optimize.minimize_scalar(lambda p: dist.ppf(p + level) - dist.ppf(p), bounds=(0, 1 - level), method="bounded")
    true_width = dist.ppf(res.x + level) - dist.ppf(res.x)
    hlo, hhi = credible_interval(draws, level=level, method="hdi")
    mass = dist.cdf(hhi) - dist.cdf(hlo)
    assert np.all(np.abs(mass - level) <= 5 * np.sqrt(level * (1 - level) / n))
    assert np.all(hhi - hlo < hi - lo)  # Beta(2, 8) is right-skewed
    assert np.all(np.abs((hhi - hlo) - true_width) <= 0.02 * true_width)
    # Shapes follow the trailing axes of the draws.
    lo3, hi3 = credible_interval(np.zeros((10, 4, 2)) + np.arange(10)[:, None, None], level=0.5, method="hdi")
    assert lo3.shape == hi3.shape == (4, 2)
    assert np.all(hi3 - lo3 == 4)  # ceil(0.5 * 10) = 5 consecutive integers


# ----------------------------------------------------------------------------- pickle, clone

@pytest.mark.parametrize("cls", ESTIMATORS)
def test_pickle_round_trip_and_clone(cls):
    clf, X, y, X_test = _fit(cls, class_alpha=2.0)
    restored = pickle.loads(pickle.dumps(clf))
    for estimate in ESTIMATES:
        clf.set_params(estimate=estimate)
        restored.set_params(estimate=estimate)
        assert_array_equal(restored.predict_proba(X_test), clf.predict_proba(X_test))
        assert_array_equal(restored.predict(X_test), clf.predict(X_test))
    assert restored.log_evidence() == clf.log_evidence()
    a, b = clf.sample_posterior(N_DRAWS, random_state=0), restored.sample_posterior(N_DRAWS, random_state=0)
    assert_array_equal(a["feature_probs"], b["feature_probs"])
    assert_array_equal(
        restored.predict_proba_draws(X_test, N_DRAWS, random_state=1),
        clf.predict_proba_draws(X_test, N_DRAWS, random_state=1),
    )
    # pickling an unfitted estimator, and then fitting both, agrees too
    fresh = pickle.loads(pickle.dumps(cls(alpha=2.0)))
    assert_array_equal(fresh.fit(X, y).predict_proba(X_test), cls(alpha=2.0).fit(X, y).predict_proba(X_test))

    cloned = clone(clf)
    assert type(cloned) is cls
    assert cloned.get_params() == clf.get_params()
    assert not hasattr(cloned, "stats_") and not hasattr(cloned, "classes_")
    with pytest.raises(NotFittedError):
        cloned.predict(X_test)
    assert_array_equal(cloned.fit(X, y).predict_proba(X_test), clf.predict_proba(X_test))
