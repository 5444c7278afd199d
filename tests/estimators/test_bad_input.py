"""Bad input gets a clear error naming the problem; nothing is silently coerced.

Each case runs against every estimator it applies to and asserts the exception type and
a message that names what is wrong. Extreme but valid input (counts of 1e9, documents
of 1e6 tokens, rows of 1e5 features) must give finite, normalised probabilities for
every estimate.
"""

from __future__ import annotations

import warnings

import mpmath
import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose
from scipy.special import logsumexp
from sklearn.exceptions import NotFittedError

from bayesnb import BernoulliNB, CategoricalNB, MultinomialNB, ZeroLikelihoodWarning
from bayesnb.analysis.uncertainty import credible_interval

ESTIMATES = ("mle", "map", "mean", "predictive")
M, B, C = MultinomialNB, BernoulliNB, CategoricalNB
ALL = (M, B, C)

Y = np.array([0, 0, 0, 1, 1, 1])


def _X(cls):
    """Six valid training rows, three features, for ``cls`` (counts, 0/1 or codes)."""
    if cls is MultinomialNB:
        return np.array([[3, 1, 2], [2, 0, 1], [4, 1, 0], [0, 2, 3], [1, 3, 2], [0, 4, 1]])
    if cls is BernoulliNB:
        return np.array([[1, 0, 1], [1, 1, 0], [0, 0, 1], [0, 1, 1], [1, 1, 0], [0, 1, 0]])
    return np.array([[0, 1, 2], [1, 0, 2], [0, 1, 0], [1, 2, 1], [1, 2, 0], [0, 0, 1]])


def _fitted(cls, **params):
    return cls(**params).fit(_X(cls), Y)


def _with(cls, value, row=0, col=0):
    X = _X(cls).astype(float)
    X[row, col] = value
    return X


def _fit_with(value):
    return lambda cls: cls().fit(_with(cls, value), Y)


def _predict_with(value, method="predict"):
    return lambda cls: getattr(_fitted(cls), method)(_with(cls, value)[:2])


def _strings(cls):
    X = _X(cls).astype(object)
    X[1, 2] = "a"
    return X


# Feature 1 is never on / never category 1 / never counted in class 0: with alpha < 1
# that posterior concentration stays below 1 and the mode does not exist.
MAP_X = np.array([[1, 0, 0], [1, 0, 1], [1, 0, 0], [0, 1, 0], [0, 1, 1], [0, 1, 0]])

# (id, estimators, action, exception types, message pattern)
CASES = [
    # --- what X contains
    ("negative-count-fit", (M, C), _fit_with(-1), ValueError, r"Negative values"),
    ("negative-count-predict", (M, C), _predict_with(-1), ValueError, r"Negative values"),
    ("negative-count-sparse", (M,), lambda cls: cls().fit(sp.csr_matrix(_with(cls, -2)), Y), ValueError,
     r"Negative values"),
    ("negative-binarize-none", (B,), lambda cls: cls(binarize=None).fit(_with(cls, -1), Y), ValueError,
     r"binary \(0/1\) data"),
    ("nan-fit", ALL, _fit_with(np.nan), ValueError, r"NaN"),
    ("nan-predict", ALL, _predict_with(np.nan), ValueError, r"NaN"),
    ("nan-predict-proba-draws", ALL, lambda cls: _fitted(cls).predict_proba_draws(_with(cls, np.nan), 5),
     ValueError, r"NaN"),
    ("inf-fit", ALL, _fit_with(np.inf), ValueError, r"infinity"),
    ("inf-predict", ALL, _predict_with(np.inf, "predict_proba"), ValueError, r"infinity"),
    ("non-binary-fit", (B,), lambda cls: cls(binarize=None).fit(_with(cls, 2), Y), ValueError,
     r"binarize=None needs binary \(0/1\) data; found value .*2"),
    ("non-binary-fit-sparse", (B,), lambda cls: cls(binarize=None).fit(sp.csr_matrix(_with(cls, 0.5)), Y),
     ValueError, r"binary \(0/1\) data; found value .*0\.5"),
    ("non-binary-predict", (B,), lambda cls: _fitted(cls, binarize=None).predict(_with(cls, 3)), ValueError,
     r"binary \(0/1\) data"),
    ("non-integer-code-fit", (C,), _fit_with(1.5), ValueError, r"integer category codes.*1\.5"),
    ("non-integer-code-predict", (C,), _predict_with(0.25), ValueError, r"integer category codes.*0\.25"),
    ("strings-fit", (M, B), lambda cls: cls().fit(_strings(cls), Y), ValueError, r"string"),
    ("strings-predict", (M, B), lambda cls: _fitted(cls).predict(_strings(cls)), ValueError, r"string"),
    ("strings-fit", (C,), lambda cls: cls().fit(_strings(cls), Y), TypeError,
     r"integer category codes, got dtype object"),
    ("strings-fit-unicode", (C,), lambda cls: cls().fit(np.array([["a", "b", "c"]] * 6), Y), TypeError,
     r"integer category codes, got dtype <U"),
    ("sparse-codes", (C,), lambda cls: cls().fit(sp.csr_matrix(_X(cls)), Y), TypeError, r"dense"),
    ("complex", ALL, lambda cls: cls().fit(_X(cls) + 1j, Y), (ValueError, TypeError), r"[Cc]omplex"),
    ("empty-X", ALL, lambda cls: cls().fit(np.empty((0, 3)), []), ValueError, r"0 sample"),
    ("no-features", ALL, lambda cls: cls().fit(np.empty((6, 0)), Y), ValueError, r"0 feature"),
    ("1d-X", ALL, lambda cls: cls().fit(_X(cls)[:, 0], Y), ValueError, r"Expected 2D array"),
    # --- labels
    ("y-length", ALL, lambda cls: cls().fit(_X(cls), Y[:-1]), ValueError, r"6 rows but y has 5 labels"),
    ("y-nan", ALL, lambda cls: cls().fit(_X(cls), np.where(Y == 1, np.nan, 0.0)), ValueError, r"NaN"),
    ("y-continuous", ALL, lambda cls: cls().fit(_X(cls), np.linspace(0, 1, 6)), ValueError,
     r"Unknown label type: continuous"),
    ("y-2d", ALL, lambda cls: cls().fit(_X(cls), np.eye(6)[:, :2]), ValueError, r"1d array"),
    # --- number of features at predict time
    ("n-features-predict", ALL, lambda cls: _fitted(cls).predict(_X(cls)[:, :2]), ValueError,
     r"X has 2 features, but \w+ is expecting 3 features"),
    ("n-features-predict-proba", ALL, lambda cls: _fitted(cls).predict_proba(np.hstack([_X(cls), _X(cls)])),
     ValueError, r"X has 6 features, but \w+ is expecting 3 features"),
    ("n-features-draws", ALL, lambda cls: _fitted(cls).predict_proba_draws(_X(cls)[:, :1], 5), ValueError,
     r"X has 1 features, but \w+ is expecting 3 features"),
    ("n-features-interval", ALL, lambda cls: _fitted(cls).predict_proba_interval(_X(cls)[:, :2], 0.9),
     ValueError, r"X has 2 features"),
    ("n-features-partial-fit", ALL,
     lambda cls: cls().partial_fit(_X(cls), Y, classes=[0, 1]).partial_fit(_X(cls)[:, :2], Y[:]),
     ValueError, r"X has 2 features, but \w+ is expecting 3 features"),
    # --- estimate
    ("estimate-fit", ALL, lambda cls: cls(estimate="bayes").fit(_X(cls), Y), ValueError,
     r"unknown estimate 'bayes'; expected one of 'mle', 'map', 'mean', 'predictive'"),
    ("estimate-fit-case", ALL, lambda cls: cls(estimate="MAP").fit(_X(cls), Y), ValueError,
     r"unknown estimate 'MAP'"),
    ("estimate-fit-none", ALL, lambda cls: cls(estimate=None).fit(_X(cls), Y), ValueError,
     r"unknown estimate None"),
    ("estimate-partial-fit", ALL, lambda cls: cls(estimate="mode").partial_fit(_X(cls), Y, classes=[0, 1]),
     ValueError, r"unknown estimate 'mode'"),
    *[
        (f"estimate-set-params-{method}", ALL,
         (lambda m: lambda cls: getattr(_fitted(cls).set_params(estimate="posterior"), m)(_X(cls)))(method),
         ValueError, r"unknown estimate 'posterior'")
        for method in ("predict", "predict_proba", "predict_log_proba", "predict_joint_log_proba")
    ],
    ("estimate-set-params-score", ALL, lambda cls: _fitted(cls).set_params(estimate="x").score(_X(cls), Y),
     ValueError, r"unknown estimate 'x'"),
    ("estimate-set-params-class-log-prior", ALL, lambda cls: _fitted(cls).set_params(estimate="x").class_log_prior_,
     ValueError, r"unknown estimate 'x'"),
    ("estimate-set-params-feature-log-prob", ALL,
     lambda cls: _fitted(cls).set_params(estimate="x").feature_log_prob_, ValueError, r"unknown estimate 'x'"),
    # "map" where a posterior concentration is below 1: the mode does not exist.
    ("map-undefined-alpha", ALL,
     lambda cls: cls(alpha=0.5, estimate="map").fit(MAP_X, Y).predict(MAP_X),
     ValueError, r"estimate='map' is undefined.*0\.5 < 1.*no mode"),
    ("map-undefined-class-alpha", ALL,
     lambda cls: cls(class_alpha=0.5, estimate="map").partial_fit(_X(cls), Y, classes=[0, 1, 2]).predict(_X(cls)),
     ValueError, r"estimate='map' is undefined.*0\.5 < 1.*no mode"),
    # --- alpha, class_alpha
    ("alpha-negative", ALL, lambda cls: cls(alpha=-1.0).fit(_X(cls), Y), ValueError, r"alpha must be > 0"),
    ("alpha-zero", ALL, lambda cls: cls(alpha=0.0).fit(_X(cls), Y), ValueError, r"alpha must be > 0"),
    ("alpha-array-with-zero", ALL, lambda cls: cls(alpha=np.array([1.0, 0.0, 1.0])).fit(_X(cls), Y), ValueError,
     r"alpha must be > 0"),
    ("alpha-nan", ALL, lambda cls: cls(alpha=np.nan).fit(_X(cls), Y), ValueError, r"alpha must be finite"),
    ("alpha-inf", ALL, lambda cls: cls(alpha=np.inf).fit(_X(cls), Y), ValueError, r"alpha must be finite"),
    ("alpha-shape", ALL, lambda cls: cls(alpha=np.ones(4)).fit(_X(cls), Y), ValueError,
     r"alpha has shape \(4,\), which does not broadcast to \(2, 3\)"),
    ("alpha-shape-2d", ALL, lambda cls: cls(alpha=np.ones((3, 3))).fit(_X(cls), Y), ValueError,
     r"alpha has shape \(3, 3\)"),
    ("alpha-string", ALL, lambda cls: cls(alpha="one").fit(_X(cls), Y), TypeError,
     r"alpha must be a positive number or array, got 'one'"),
    ("alpha-none", ALL, lambda cls: cls(alpha=None).fit(_X(cls), Y), TypeError,
     r"alpha must be a positive number or array, got None"),
    ("alpha-sequence-of-3", (B,), lambda cls: cls(alpha=(1.0, 1.0, 1.0)).fit(_X(cls), Y), ValueError,
     r"alpha given as a sequence must be a pair \(a, b\); got length 3"),
    ("alpha-list-of-3", (B,), lambda cls: cls(alpha=[1.0, 2.0, 3.0]).fit(_X(cls), Y), ValueError,
     r"must be a pair \(a, b\); got length 3"),
    ("alpha-pair-negative-b", (B,), lambda cls: cls(alpha=(1.0, -2.0)).fit(_X(cls), Y), ValueError,
     r"alpha\[1\] \(b\) must be > 0"),
    ("alpha-pair-zero-a", (B,), lambda cls: cls(alpha=(0.0, 1.0)).fit(_X(cls), Y), ValueError,
     r"alpha\[0\] \(a\) must be > 0"),
    ("class-alpha-negative", ALL, lambda cls: cls(class_alpha=-0.5).fit(_X(cls), Y), ValueError,
     r"class_alpha must be > 0"),
    ("class-alpha-zero", ALL, lambda cls: cls(class_alpha=[1.0, 0.0]).fit(_X(cls), Y), ValueError,
     r"class_alpha must be > 0"),
    ("class-alpha-shape", ALL, lambda cls: cls(class_alpha=[1.0, 1.0, 1.0]).fit(_X(cls), Y), ValueError,
     r"class_alpha has shape \(3,\), which does not broadcast to \(2,\)"),
    # --- class_prior, fit_prior
    ("class-prior-length", ALL, lambda cls: cls(class_prior=[0.2, 0.3, 0.5]).fit(_X(cls), Y), ValueError,
     r"class_prior has shape \(3,\); the number of classes is 2"),
    ("class-prior-sum", ALL, lambda cls: cls(class_prior=[0.2, 0.3]).fit(_X(cls), Y), ValueError,
     r"class_prior must sum to one, sums to 0\.5"),
    ("class-prior-negative", ALL, lambda cls: cls(class_prior=[-0.5, 1.5]).fit(_X(cls), Y), ValueError,
     r"class_prior must be finite and non-negative"),
    ("class-prior-nan", ALL, lambda cls: cls(class_prior=[np.nan, 1.0]).fit(_X(cls), Y), ValueError,
     r"class_prior must be finite"),
    # fit_prior is a bool; a truthy/falsy stand-in must not silently pick a behaviour
    # (scikit-learn's own naive Bayes rejects it with InvalidParameterError).
    ("fit-prior-string", ALL, lambda cls: cls(fit_prior="no").fit(_X(cls), Y), (ValueError, TypeError),
     r"fit_prior"),
    ("fit-prior-none", ALL, lambda cls: cls(fit_prior=None).fit(_X(cls), Y), (ValueError, TypeError),
     r"fit_prior"),
    ("binarize-string", (B,), lambda cls: cls(binarize="high").fit(_X(cls), Y), (ValueError, TypeError),
     r"binarize"),
    ("binarize-nan", (B,), lambda cls: cls(binarize=np.nan).fit(_X(cls), Y), (ValueError, TypeError),
     r"binarize"),
    ("min-categories-zero", (C,), lambda cls: cls(min_categories=0).fit(_X(cls), Y), ValueError,
     r"min_categories must be a positive int"),
    ("min-categories-float", (C,), lambda cls: cls(min_categories=2.5).fit(_X(cls), Y), ValueError,
     r"min_categories must be a positive int"),
    ("min-categories-shape", (C,), lambda cls: cls(min_categories=[2, 2]).fit(_X(cls), Y), ValueError,
     r"min_categories must be a positive int or an int array of shape \(3,\)"),
    # --- sample_weight
    ("sample-weight-negative", ALL, lambda cls: cls().fit(_X(cls), Y, sample_weight=[1, 1, -1, 1, 1, 1]),
     ValueError, r"Negative values in sample_weight"),
    ("sample-weight-length", ALL, lambda cls: cls().fit(_X(cls), Y, sample_weight=np.ones(5)), ValueError,
     r"sample_weight has shape \(5,\), expected \(6,\)"),
    ("sample-weight-2d", ALL, lambda cls: cls().fit(_X(cls), Y, sample_weight=np.ones((6, 1))), ValueError,
     r"sample_weight has shape \(6, 1\)"),
    ("sample-weight-all-zero", ALL, lambda cls: cls().fit(_X(cls), Y, sample_weight=np.zeros(6)), ValueError,
     r"sample_weight is zero for every row"),
    ("sample-weight-nan", ALL, lambda cls: cls().fit(_X(cls), Y, sample_weight=[1, np.nan, 1, 1, 1, 1]),
     ValueError, r"sample_weight contains NaN"),
    ("sample-weight-inf", ALL, lambda cls: cls().fit(_X(cls), Y, sample_weight=[1, np.inf, 1, 1, 1, 1]),
     ValueError, r"sample_weight contains NaN or infinity"),
    ("sample-weight-partial-fit", ALL,
     lambda cls: cls().partial_fit(_X(cls), Y, classes=[0, 1], sample_weight=-np.ones(6)), ValueError,
     r"Negative values in sample_weight"),
    # --- partial_fit and classes
    ("partial-fit-no-classes", ALL, lambda cls: cls().partial_fit(_X(cls), Y), ValueError,
     r"classes must be passed on the first call to partial_fit"),
    ("partial-fit-label-not-in-classes", ALL, lambda cls: cls().partial_fit(_X(cls), Y + 1, classes=[0, 1]),
     ValueError, r"y contains label .*2.* not in classes"),
    ("partial-fit-label-not-in-classes-later", ALL,
     lambda cls: cls().partial_fit(_X(cls), Y, classes=[0, 1]).partial_fit(_X(cls), np.full(6, 7)),
     ValueError, r"y contains label .*7.* not in classes"),
    ("partial-fit-string-label-int-classes", ALL,
     lambda cls: cls().partial_fit(_X(cls), np.where(Y, "b", "a"), classes=[0, 1]), ValueError,
     r"y contains label .*'a'.* not in classes"),
    ("partial-fit-different-classes", ALL,
     lambda cls: cls().partial_fit(_X(cls), Y, classes=[0, 1]).partial_fit(_X(cls), Y, classes=[0, 1, 2]),
     ValueError, r"classes=.*differs from the classes of the first call"),
    # --- Bayesian methods
    ("n-draws-zero", ALL, lambda cls: _fitted(cls).predict_proba_draws(_X(cls), n_draws=0), ValueError,
     r"n_draws must be a positive integer, got 0"),
    ("n-draws-negative", ALL, lambda cls: _fitted(cls).predict_proba_draws(_X(cls), n_draws=-3), ValueError,
     r"n_draws must be a positive integer, got -3"),
    ("n-draws-float", ALL, lambda cls: _fitted(cls).predict_proba_draws(_X(cls), n_draws=10.0), ValueError,
     r"n_draws must be a positive integer, got 10\.0"),
    ("n-draws-bool", ALL, lambda cls: _fitted(cls).predict_proba_draws(_X(cls), n_draws=True), ValueError,
     r"n_draws must be a positive integer, got True"),
    ("n-draws-interval", ALL, lambda cls: _fitted(cls).predict_proba_interval(_X(cls), 0.9, n_draws=0),
     ValueError, r"n_draws must be a positive integer"),
    ("sample-posterior-zero", ALL, lambda cls: _fitted(cls).sample_posterior(0), ValueError,
     r"n must be a positive integer, got 0"),
    *[
        (f"level-{level!r}", ALL, (lambda lv: lambda cls: _fitted(cls).predict_proba_interval(_X(cls), lv))(level),
         ValueError, r"level must be in \(0, 1\)")
        for level in (1.5, 1.0, 0.0, -0.1, np.nan, "0.9")
    ],
    ("interval-method", ALL, lambda cls: _fitted(cls).predict_proba_interval(_X(cls), 0.9, method="shortest"),
     ValueError, r"unknown interval method 'shortest'"),
    ("random-state", ALL, lambda cls: _fitted(cls).sample_posterior(3, random_state="seed"), ValueError,
     r"'seed' cannot be used to seed"),
]

NOT_FITTED_CALLS = {
    "predict": lambda est, X: est.predict(X),
    "predict_proba": lambda est, X: est.predict_proba(X),
    "predict_log_proba": lambda est, X: est.predict_log_proba(X),
    "predict_joint_log_proba": lambda est, X: est.predict_joint_log_proba(X),
    "score": lambda est, X: est.score(X, Y),
    "class_log_prior_": lambda est, X: est.class_log_prior_,
    "feature_log_prob_": lambda est, X: est.feature_log_prob_,
    "log_evidence": lambda est, X: est.log_evidence(),
    "sample_posterior": lambda est, X: est.sample_posterior(5),
    "predict_proba_draws": lambda est, X: est.predict_proba_draws(X, 5),
    "predict_proba_interval": lambda est, X: est.predict_proba_interval(X, 0.9),
}


def _matrix():
    for case_id, classes, action, exc, match in CASES:
        for cls in classes:
            yield pytest.param(cls, action, exc, match, id=f"{cls.__name__}-{case_id}")


@pytest.mark.parametrize(("cls", "action", "exc", "match"), list(_matrix()))
def test_bad_input_is_rejected_with_a_clear_message(cls, action, exc, match):
    with pytest.raises(exc, match=match):
        action(cls)


@pytest.mark.parametrize("method", sorted(NOT_FITTED_CALLS))
@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_use_before_fit_raises_not_fitted(cls, method):
    with pytest.raises(NotFittedError, match=rf"This {cls.__name__} instance is not fitted yet"):
        NOT_FITTED_CALLS[method](cls(), _X(cls))


FAILING_REFITS = {
    "sample_weight": lambda est, X: est.fit(X, Y, sample_weight=-np.ones(6)),
    "X": lambda est, X: est.fit(np.full_like(X, np.nan, dtype=float), Y),
    "alpha": lambda est, X: est.set_params(alpha=-1.0).fit(X, Y),
    "class_prior": lambda est, X: est.set_params(class_prior=[0.9, 0.9]).fit(X, Y),
    "estimate": lambda est, X: est.set_params(estimate="bogus").fit(X, Y),
}


@pytest.mark.parametrize("failure", sorted(FAILING_REFITS))
@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_failed_refit_does_not_leave_a_half_fitted_estimator(cls, failure):
    """A refit that raises must not leave the old posterior behind next to new
    statistics: the estimator is unfitted afterwards (not silently stale or mixed)."""
    clf = _fitted(cls)
    with pytest.raises(ValueError):
        FAILING_REFITS[failure](clf, _X(cls))
    clf.set_params(estimate="predictive")
    with pytest.raises(NotFittedError):
        clf.predict(_X(cls))


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_failed_partial_fit_does_not_commit_its_batch(cls):
    """A partial_fit that raises must leave the statistics as they were: retrying the
    batch after fixing the parameter must not count it twice."""
    X = _X(cls)
    clf = cls().partial_fit(X, Y, classes=[0, 1])
    clf.set_params(alpha=-1.0)
    with pytest.raises(ValueError, match=r"alpha must be > 0"):
        clf.partial_fit(X, Y)
    assert_allclose(clf.stats_.class_count, [3, 3])
    clf.set_params(alpha=1.0).partial_fit(X, Y)
    reference = cls().partial_fit(X, Y, classes=[0, 1]).partial_fit(X, Y)
    assert_allclose(clf.class_count_, [6, 6])
    assert_allclose(clf.predict_proba(X), reference.predict_proba(X), rtol=1e-12)


def test_credible_interval_rejects_bad_arguments():
    draws = np.random.default_rng(0).random((50, 2))
    for level in (1.5, 0, 1, -1, np.nan):
        with pytest.raises(ValueError, match=r"level must be in \(0, 1\)"):
            credible_interval(draws, level=level)
    with pytest.raises(ValueError, match=r"unknown interval method 'median'"):
        credible_interval(draws, method="median")


@pytest.mark.parametrize("method", ["equal-tailed", "hdi"])
def test_credible_interval_rejects_empty_draws(method):
    with pytest.raises(ValueError, match=r"draw"):
        credible_interval(np.ones((0, 3)), level=0.9, method=method)


@pytest.mark.parametrize("method", ["equal-tailed", "hdi"])
def test_credible_interval_rejects_nan_draws(method):
    draws = np.random.default_rng(0).random((50, 3))
    draws[4, 1] = np.nan
    with pytest.raises(ValueError, match=r"NaN"):
        credible_interval(draws, level=0.9, method=method)


def test_categorical_code_beyond_int64_is_not_wrapped():
    """A uint64 code of 2**63 is a valid, unseen code: treat it as a new category or
    refuse it clearly; never wrap it to a negative int64 and score it as another code."""
    clf = _fitted(CategoricalNB)
    big = np.array([[2**63, 0, 1]], dtype=np.uint64)
    try:
        proba = clf.predict_proba(big)
    except ValueError as err:
        assert "categor" in str(err)
    else:
        assert_allclose(proba, clf.predict_proba(np.array([[7, 0, 1]])), rtol=1e-12)
    with pytest.raises(ValueError, match=r"categor"):
        CategoricalNB().fit(np.vstack([_X(CategoricalNB), big]).astype(np.uint64), np.append(Y, 1))


# ----------------------------------------------------------------------------- extreme valid input

def _check_probabilities(clf, X):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning, no ZeroLikelihoodWarning
        proba = clf.predict_proba(X)
        log_proba = clf.predict_log_proba(X)
        joint = clf.predict_joint_log_proba(X)
    assert np.all(np.isfinite(proba)) and np.all(np.isfinite(log_proba)) and np.all(np.isfinite(joint))
    assert np.all((proba >= 0) & (proba <= 1))
    assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert_allclose(logsumexp(log_proba, axis=1), 0.0, atol=1e-12)
    return proba, joint


def _positive_counts():
    rng = np.random.default_rng(0)
    X = rng.poisson([[5, 1, 3, 2]] * 10 + [[1, 4, 2, 3]] * 10) + 1
    y = np.repeat([0, 1], 10)
    return X.astype(float), y


@pytest.mark.parametrize("estimate", ESTIMATES)
def test_multinomial_huge_counts_and_million_token_document(estimate):
    X, y = _positive_counts()
    X[0, 0] = 1e9  # one cell of a billion tokens
    alpha = 2.0
    clf = MultinomialNB(alpha=alpha, estimate=estimate).fit(X, y)
    docs = np.array(
        [
            [1e6, 0, 0, 0],  # a million tokens of one word
            [0, 1e6, 0, 0],
            [2.5e5, 2.5e5, 2.5e5, 2.5e5],
            [1e9, 1, 1, 1],  # a training-like row with a billion tokens
        ]
    )
    proba, joint = _check_probabilities(clf, docs)
    assert _check_probabilities(clf, sp.csr_matrix(docs))[0] == pytest.approx(proba, abs=1e-12)
    # The joint of a million-token document, by hand.
    t = np.stack([X[y == c].sum(0) for c in (0, 1)])
    a = alpha + t
    log_class = clf.class_log_prior_
    if estimate == "predictive":
        # Dirichlet-multinomial without the multinomial coefficient (it cancels), in
        # 50-digit arithmetic: float64 lgamma differences lose ~eps * lgamma(1e9) ~ 4e-6.
        def lrf(u, v):
            return mpmath.loggamma(mpmath.mpf(u) + v) - mpmath.loggamma(u)

        with mpmath.workdps(50):
            expected = np.array(
                [
                    [
                        float(sum(lrf(a[c, j], doc[j]) for j in range(4)) - lrf(a[c].sum(), doc.sum()))
                        for c in (0, 1)
                    ]
                    for doc in docs
                ]
            )
        # float64 carries terms of size x log a (up to 2e10 here) that cancel down to
        # O(100): the attainable accuracy is a few ulps of those terms, not of the result.
        n = docs.sum(1)[:, None]
        scale = docs @ np.abs(np.log(a)).T + n * np.abs(np.log(a.sum(1)))[None, :] + n
        assert np.all(np.abs((joint - log_class) - expected) <= 32 * np.finfo(float).eps * scale)
    else:
        assert_allclose(joint - log_class, docs @ clf.feature_log_prob_.T, rtol=1e-12)
    # A million tokens of a word much more frequent in one class decide it.
    assert proba[0, 0] > 1 - 1e-9 and proba[1, 1] > 1 - 1e-9


@pytest.mark.parametrize("estimate", ESTIMATES)
def test_bernoulli_huge_values_weights_and_wide_rows(estimate):
    rng = np.random.default_rng(1)
    y = np.repeat([0, 1], 10)
    X = (rng.random((20, 4)) < np.where(y[:, None] == 0, 0.7, 0.3)).astype(float)
    X[[0, 10]] = 0.0
    X[[1, 11]] = 1.0  # every feature both on and off in every class: the MLE is interior
    X[2] *= 1e9  # huge values binarise to 1
    w = np.ones(20)
    w[3] = 1e9  # a row that counts like a billion rows
    clf = BernoulliNB(alpha=2.0, estimate=estimate).fit(X, y, sample_weight=w)
    assert_allclose(clf.feature_count_[0], (X[y == 0] > 0).T @ w[y == 0], rtol=1e-15)
    _check_probabilities(clf, np.vstack([X, np.full((1, 4), 1e9)]))
    # 1e5 features, each on in 2 of 3 rows of class 0 and 1 of 3 rows of class 1: the
    # plug-in product of 1e5 factors must not underflow to 0/0.
    n_feat = 100_000
    wide = np.repeat(np.array([[1], [1], [0], [1], [0], [0]], dtype=float), n_feat, axis=1)
    wide_y = np.repeat([0, 1], 3)
    wide_clf = BernoulliNB(alpha=2.0, estimate=estimate).fit(wide, wide_y)
    half = np.tile([1.0, 0.0], n_feat // 2)
    proba, joint = _check_probabilities(wide_clf, np.vstack([np.ones(n_feat), np.zeros(n_feat), half]))
    assert np.all(joint < -1e4)  # log p(x, y) of order -1e5: far below float64's exp range
    assert proba[0, 0] > 1 - 1e-12 and proba[1, 1] > 1 - 1e-12
    # Symmetric evidence: both classes give the half row the same log-likelihood, as a
    # difference of two ~1e5-sized sums of 1e5 terms each. How closely the two computed
    # sums agree depends on the BLAS kernel's summation order (seen: under 4e-9 where this
    # test was written, 8e-8 on an AMD EPYC with OpenBLAS 0.3.31's dgemv); what float64 guarantees
    # is Higham's bound for a sum of n products, gamma_n * sum |terms| per class
    # (Accuracy and Stability of Numerical Algorithms, 2nd ed., eq. 3.5). Float32, or a
    # product that underflowed, misses this by orders of magnitude.
    log_on = wide_clf.feature_log_prob_
    log_off = np.log1p(-np.exp(log_on))
    size = (np.abs(half * (log_on - log_off)).sum(1) + np.abs(log_off).sum(1)).sum()
    u = np.finfo(float).eps / 2
    gamma = (n_feat + 2) * u / (1 - (n_feat + 2) * u)
    assert wide_clf.class_log_prior_[0] == wide_clf.class_log_prior_[1]
    assert abs(joint[2, 0] - joint[2, 1]) <= gamma * size  # exact value: 0
    assert abs(proba[2, 0] - 0.5) <= gamma * size / 4  # |d sigmoid / dz| <= 1/4


@pytest.mark.parametrize("estimate", ESTIMATES)
def test_categorical_huge_weights(estimate):
    X = np.array([[0, 1, 2], [1, 0, 2], [0, 1, 0], [1, 2, 1], [0, 2, 0], [1, 0, 1], [1, 1, 2], [0, 0, 1]])
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    for c in (0, 1):  # every category in every class (an interior MLE)
        for j, k in enumerate(X.max(0) + 1):
            assert np.unique(X[y == c, j]).size == k
    w = np.ones(8)
    w[0] = w[5] = 1e9
    clf = CategoricalNB(alpha=2.0, estimate=estimate).fit(X, y, sample_weight=w)
    assert clf.class_count_.tolist() == [1e9 + 3, 1e9 + 3]
    proba, _ = _check_probabilities(clf, X)
    assert proba[0, 0] > 1 - 1e-6 and proba[5, 1] > 1 - 1e-6
    if estimate != "mle":  # an unseen code has zero MLE probability (ZeroLikelihoodWarning)
        _check_probabilities(clf, np.array([[5, 1, 2], [0, 9, 9]]))
    else:
        with pytest.warns(ZeroLikelihoodWarning):
            clf.predict_proba(np.array([[5, 1, 2]]))
