r"""``bayesnb.sklearn``: scikit-learn's naive Bayes, one import away, on bayesnb's core.

* Signatures, defaults and parameters are scikit-learn's exactly; the main namespace's
  own parameters are not there and ``set_params`` refuses them.
* Numbers: every fitted attribute scikit-learn's estimator has and every prediction
  equal scikit-learn's to 1e-10 on the shared SMS Spam Collection and 20 Newsgroups
  corpora (``fit``, ``sample_weight``, ``partial_fit``) and on the UCI mushroom table.
  The attributes compared are read off scikit-learn's fitted object (all of
  ``vars(theirs)`` ending in ``_``), so none is left out by choice.
* Error messages: the same bad input gives the same message on both sides.
* The Bayesian methods work on the same fitted object and describe the model whose
  numbers scikit-learn computes: the mean of exact posterior draws is scikit-learn's
  ``feature_log_prob_`` (Monte Carlo, both sides: a different ``alpha`` is seen), the
  log evidence is the closed form computed here with SciPy, and ``to_bayesnb`` hands
  over the same statistics.
* scikit-learn's estimator checks pass.

scikit-learn's own test file, run against the namespace, is
``tests/test_sklearn_namespace_suite.py``.
"""

from __future__ import annotations

import inspect
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn.naive_bayes as sknb
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import gammaln
from sklearn.base import clone
from sklearn.utils.estimator_checks import parametrize_with_checks

import bayesnb
import bayesnb.sklearn as bsk

ATOL = 1e-10
NAMES = ("MultinomialNB", "BernoulliNB", "CategoricalNB", "GaussianNB")
PREDICT_METHODS = ("predict_joint_log_proba", "predict_log_proba", "predict_proba")


def _weights(n, seed=0):
    return np.random.default_rng(seed).uniform(0.25, 4.0, n)


def assert_same_model(ours, theirs, X_test, joint_rtol=0.0):
    """Every fitted attribute of scikit-learn's object and every prediction agree."""
    fitted = sorted(k for k in vars(theirs) if k.endswith("_") and not k.startswith("_"))
    assert {"classes_", "class_count_", "n_features_in_"} <= set(fitted)
    for name in fitted:
        want, got = getattr(theirs, name), getattr(ours, name)
        if isinstance(want, list):  # CategoricalNB's ragged per-feature tables
            assert len(got) == len(want), name
            for j, (g, w) in enumerate(zip(got, want)):
                assert_allclose(g, w, rtol=0, atol=ATOL, err_msg=f"{name}[{j}]")
        elif np.asarray(want).dtype.kind in "fc":
            assert np.asarray(got).dtype == np.asarray(want).dtype, name
            assert_allclose(got, want, rtol=0, atol=ATOL, err_msg=name)
        else:
            assert_array_equal(got, want, err_msg=name)
    for method in PREDICT_METHODS:
        got, want = getattr(ours, method)(X_test), getattr(theirs, method)(X_test)
        assert np.all(np.isfinite(want)), f"scikit-learn's {method} is not finite: a broken comparison"
        tol = dict(rtol=joint_rtol, atol=ATOL) if "log" in method else dict(rtol=0, atol=ATOL)
        assert_allclose(got, want, err_msg=method, **tol)
    predicted = theirs.predict(X_test)
    assert_array_equal(ours.predict(X_test), predicted)
    assert np.unique(predicted).size > 1  # a real classifier, not a constant one


def _fit_both(name, X, y, sample_weight=None, batches=1, **params):
    ours, theirs = getattr(bsk, name)(**params), getattr(sknb, name)(**params)
    if batches == 1:
        ours.fit(X, y, sample_weight=sample_weight)
        theirs.fit(X, y, sample_weight=sample_weight)
        return ours, theirs
    classes = np.unique(y)
    for rows in np.array_split(np.arange(X.shape[0]), batches):
        w = None if sample_weight is None else sample_weight[rows]
        ours.partial_fit(X[rows], y[rows], classes=classes, sample_weight=w)
        theirs.partial_fit(X[rows], y[rows], classes=classes, sample_weight=w)
    return ours, theirs


def _frequent_columns(X, k):
    """Dense float64 copy of the ``k`` most frequent columns of a count matrix."""
    order = np.argsort(-np.asarray(X.sum(axis=0)).ravel(), kind="stable")[:k]
    return np.asarray(X[:, order].toarray() if sp.issparse(X) else X[:, order], dtype=np.float64), order


# ----------------------------------------------------------------- signatures
@pytest.mark.parametrize("name", NAMES)
def test_signature_and_parameters_are_scikit_learns(name):
    ours, theirs = getattr(bsk, name), getattr(sknb, name)

    def described(cls):
        return [(p.name, p.kind, p.default) for p in inspect.signature(cls.__init__).parameters.values()]

    assert described(ours) == described(theirs)
    assert ours().get_params() == theirs().get_params()
    assert repr(ours(var_smoothing=0.1) if name == "GaussianNB" else ours(alpha=0.5)) == repr(
        theirs(var_smoothing=0.1) if name == "GaussianNB" else theirs(alpha=0.5)
    )
    est = ours()
    for extra in ("estimate", "class_alpha", "missing"):
        with pytest.raises(ValueError, match=f"Invalid parameter '{extra}'"):
            est.set_params(**{extra: "predictive"})
        assert extra not in clone(est).get_params()
    # It is the main estimator, specialised: functions taking a bayesnb estimator take it.
    assert isinstance(est, getattr(bayesnb, name))


def test_importing_the_namespace_does_not_shadow_scikit_learn():
    import sklearn

    import bayesnb.estimators._base as base

    assert sklearn.__name__ == "sklearn" and "bayesnb" not in sklearn.__file__
    assert base.BaseEstimator.__module__ == "sklearn.base"
    assert bsk.__name__ == "bayesnb.sklearn"


# ------------------------------------------------------------- corpora parity
@pytest.mark.parametrize("batches", [1, 4], ids=["fit", "partial_fit"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("name", ["MultinomialNB", "BernoulliNB"])
def test_sms_parity(name, weighted, batches, sms_counts):
    data = sms_counts
    w = _weights(data.X_train.shape[0]) if weighted else None
    ours, theirs = _fit_both(name, data.X_train, data.y_train, w, batches, alpha=0.5)
    assert_same_model(ours, theirs, data.X_test)


def test_sms_parity_fit_prior_class_prior_and_alpha_vector(sms_counts):
    data = sms_counts
    alpha = np.linspace(0.05, 3.0, data.X_train.shape[1])
    for params in ({"fit_prior": False}, {"class_prior": [0.3, 0.7]}, {"alpha": alpha}):
        ours, theirs = _fit_both("MultinomialNB", data.X_train, data.y_train, **params)
        assert_same_model(ours, theirs, data.X_test)


@pytest.mark.parametrize("batches", [1, 3], ids=["fit", "partial_fit"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_sms_gaussian_parity(weighted, batches, sms_counts):
    # scikit-learn's epsilon_ comes from the unweighted variance of the latest batch:
    # weighted fits and partial_fit are where it differs from the main namespace's floor.
    data = sms_counts
    X_train, cols = _frequent_columns(data.X_train, 300)
    X_test = np.asarray(data.X_test[:, cols].toarray(), dtype=np.float64)
    w = _weights(X_train.shape[0], seed=3) if weighted else None
    # var_smoothing=1e-2: with the default 1e-9, a word that never varies within a class
    # has variance epsilon_ alone and log-probabilities of 1e9 whose differences no
    # float64 computation (scikit-learn's or ours) holds to 1e-10.
    ours, theirs = _fit_both("GaussianNB", X_train, data.y_train, w, batches, var_smoothing=1e-2)
    assert_same_model(ours, theirs, X_test)


@pytest.mark.parametrize("name", ["MultinomialNB", "BernoulliNB"])
def test_20newsgroups_parity(name, news20_counts):
    data = news20_counts
    assert sp.issparse(data.X_train) and np.unique(data.y_train).size == 20
    ours, theirs = _fit_both(name, data.X_train, data.y_train, alpha=0.1)
    assert_same_model(ours, theirs, data.X_test)


def test_20newsgroups_gaussian_and_weighted_multinomial_parity(news4_counts_dense):
    data = news4_counts_dense
    w = _weights(data.X_train.shape[0], seed=1)
    ours, theirs = _fit_both("MultinomialNB", data.X_train, data.y_train, w, alpha=0.1)
    assert_same_model(ours, theirs, data.X_test)
    X_train, cols = _frequent_columns(data.X_train, 500)
    ours, theirs = _fit_both("GaussianNB", X_train, data.y_train, w, 3, var_smoothing=1e-2)
    assert_same_model(ours, theirs, np.asarray(data.X_test[:, cols], dtype=np.float64))


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_mushroom_categorical_parity(weighted, mushroom_codes):
    data = mushroom_codes
    w = _weights(data.X_train.shape[0], seed=2) if weighted else None
    ours, theirs = _fit_both("CategoricalNB", data.X_train, data.y_train, w, alpha=0.5)
    assert_same_model(ours, theirs, data.X_test)
    ours, theirs = _fit_both("CategoricalNB", data.X_train, data.y_train, w, 3, min_categories=data.n_categories)
    assert_same_model(ours, theirs, data.X_test)


# -------------------------------------------------------------- error messages
X6 = np.array([[-2, -1], [-1, -1], [-1, -2], [1, 1], [1, 2], [2, 1]])
Y6 = np.array([1, 1, 1, 2, 2, 2])

BAD = [
    ("MultinomialNB", {}, lambda e: e.partial_fit(X6, Y6)),
    ("GaussianNB", {}, lambda e: e.partial_fit(X6, Y6, classes=[0, 1])),
    ("GaussianNB", {}, lambda e: e.partial_fit(X6, Y6, classes=[1, 2]).partial_fit(X6, Y6, classes=[1, 2, 3])),
    ("GaussianNB", {"priors": [0.2, 0.3, 0.5]}, lambda e: e.fit(X6, Y6)),
    ("GaussianNB", {"priors": [2.0, 1.0]}, lambda e: e.fit(X6, Y6)),
    ("GaussianNB", {"priors": [-1.0, 2.0]}, lambda e: e.fit(X6, Y6)),
    ("GaussianNB", {"var_smoothing": -1.0}, lambda e: e.fit(X6, Y6)),
    ("BernoulliNB", {"class_prior": [0.2, 0.3, 0.5]}, lambda e: e.fit(X6, Y6)),
    ("MultinomialNB", {"alpha": -1.0}, lambda e: e.fit(abs(X6), Y6)),
    ("MultinomialNB", {"alpha": np.array([1.0, -0.1])}, lambda e: e.fit(abs(X6), Y6)),
    ("MultinomialNB", {"alpha": np.array([1.0, 2.0, 3.0])}, lambda e: e.fit(abs(X6), Y6)),
    ("MultinomialNB", {}, lambda e: e.fit(X6, Y6)),
    ("CategoricalNB", {}, lambda e: e.fit(X6, Y6)),
    ("CategoricalNB", {"min_categories": [[3, 2], [2, 4]]}, lambda e: e.fit(abs(X6), Y6)),
    ("CategoricalNB", {"min_categories": [2.5, 3.0]}, lambda e: e.fit(abs(X6), Y6)),
    ("BernoulliNB", {}, lambda e: e.fit(X6, Y6[:5])),
]


@pytest.mark.parametrize("name, params, call", BAD, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(BAD)])
def test_error_messages_are_scikit_learns(name, params, call):
    with pytest.raises(Exception) as theirs:
        call(getattr(sknb, name)(**params))
    with pytest.raises(type(theirs.value)) as ours:
        call(getattr(bsk, name)(**params))
    # Ours may add a detail after scikit-learn's whole message (e.g. the offending minimum).
    assert str(ours.value).startswith(str(theirs.value)), (str(ours.value), str(theirs.value))


def test_small_alpha_warning_and_clamp_are_scikit_learns():
    X, y = np.array([[1, 0], [1, 1]]), np.array([0, 1])
    for name in ("MultinomialNB", "BernoulliNB", "CategoricalNB"):
        with pytest.warns(UserWarning, match="alpha too small") as ours:
            a = getattr(bsk, name)(alpha=0.0, force_alpha=False).fit(X, y)
        with pytest.warns(UserWarning, match="alpha too small") as theirs:
            b = getattr(sknb, name)(alpha=0.0, force_alpha=False).fit(X, y)
        assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]
        assert_allclose(a.predict_proba(X), b.predict_proba(X), rtol=0, atol=ATOL)
        assert a.alpha_ == 1e-10


def test_a_refused_fit_leaves_the_estimator_as_it_was():
    clf = bsk.CategoricalNB().fit([[0, 1], [1, 0]], [0, 1])
    before = clf.predict_proba([[0, 1]])
    with pytest.raises(ValueError, match="Negative values"):
        clf.fit([[0, -1]], [1])
    assert_array_equal(clf.predict_proba([[0, 1]]), before)


def test_categorical_truncates_float_codes_as_scikit_learn_but_says_so():
    X = np.array([[0.0, 2.7], [1.2, 0.0], [1.0, 1.0]])
    with pytest.warns(Warning, match="truncation"):
        ours = bsk.CategoricalNB().fit(X, [0, 1, 1])
    theirs = sknb.CategoricalNB().fit(X, [0, 1, 1])
    assert_array_equal(ours.n_categories_, theirs.n_categories_)
    assert_allclose(ours.predict_proba([[1, 2]]), theirs.predict_proba([[1, 2]]), rtol=0, atol=ATOL)


# ------------------------------------------------------ the Bayesian methods
def test_update_mean_variance_is_scikit_learns():
    rng = np.random.default_rng(0)
    X = rng.normal(3.0, 2.0, size=(7, 3))
    w = rng.uniform(0.5, 2.0, 7)
    for n_past, mu, var, sw in [(0, 0.0, 0.0, None), (5.0, np.array([1.0, 2.0, 3.0]), np.array([0.5, 1.0, 2.0]), w)]:
        got = bsk.GaussianNB._update_mean_variance(n_past, mu, var, X, sw)
        want = sknb.GaussianNB._update_mean_variance(n_past, mu, var, X, sw)
        for g, v in zip(got, want):
            assert_allclose(g, v, rtol=1e-13, atol=0)


def test_posterior_draws_average_to_scikit_learns_smoothing():
    # scikit-learn's feature_log_prob_ is the posterior mean under Dir(alpha): the mean
    # of exact posterior draws from the namespace object matches it within Monte Carlo
    # error, and misses the smoothing of another alpha.
    rng = np.random.default_rng(1)
    X = rng.poisson(1.5, size=(40, 6))
    y = rng.integers(0, 3, 40)
    clf = bsk.MultinomialNB(alpha=0.7).fit(X, y)
    draws = clf.sample_posterior(4000, random_state=0)["feature_probs"]
    mean, se = draws.mean(axis=0), draws.std(axis=0) / np.sqrt(draws.shape[0])
    theirs = np.exp(sknb.MultinomialNB(alpha=0.7).fit(X, y).feature_log_prob_)
    assert np.all(np.abs(mean - theirs) < 5 * se)
    other = np.exp(sknb.MultinomialNB(alpha=3.0).fit(X, y).feature_log_prob_)
    assert np.any(np.abs(mean - other) > 5 * se)
    # The class proportions are scikit-learn's, held fixed: the same in every draw.
    class_probs = clf.sample_posterior(5, random_state=1)["class_probs"]
    assert_allclose(class_probs, np.broadcast_to(np.exp(clf.class_log_prior_), class_probs.shape), rtol=1e-12)


def test_log_evidence_is_the_closed_form():
    rng = np.random.default_rng(2)
    X = rng.poisson(2.0, size=(30, 5))
    y = rng.integers(0, 2, 30)
    alpha = 0.8
    clf = bsk.MultinomialNB(alpha=alpha).fit(X, y)
    # Dirichlet-multinomial evidence of the tokens given the labels (of the token
    # sequences: no multinomial coefficient, see bayesnb.core.families.multinomial) plus the
    # labels' log-likelihood at the fixed proportions N_c / N.
    N = np.bincount(y)
    want = float(np.sum(N * np.log(N / N.sum())))
    for c in range(2):
        rows = X[y == c]
        T = rows.sum(axis=0)
        want += gammaln(alpha * 5) - gammaln(alpha * 5 + T.sum()) + np.sum(gammaln(alpha + T) - gammaln(alpha))
    assert clf.log_evidence() == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_bayesian_methods_on_the_same_object_and_to_bayesnb(name):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 4)) if name == "GaussianNB" else rng.integers(0, 3, size=(30, 4))
    y = rng.integers(0, 2, 30)
    clf = getattr(bsk, name)().fit(X, y)
    assert np.isfinite(clf.log_evidence())
    if name in ("MultinomialNB", "GaussianNB"):  # the draws' code paths (compiling them takes seconds)
        lower, upper = clf.predict_proba_interval(X[:5], level=0.9, n_draws=200, random_state=0)
        assert lower.shape == upper.shape == (5, 2) and np.all(lower <= upper)
        idata = clf.to_inference_data(n_draws=50, random_state=0)
        assert "posterior" in idata.groups()
        Xs, ys = clf.sample(5, random_state=0)
        assert Xs.shape == (5, 4) and set(ys) <= set(clf.classes_)
    # to_bayesnb: the same statistics in the main namespace, same predictions until the
    # estimate is switched; the switched one is the main estimator fitted from scratch.
    main = clf.to_bayesnb()
    assert type(main) is getattr(bayesnb, name)
    assert_allclose(main.predict_proba(X), clf.predict_proba(X), rtol=0, atol=1e-12)
    assert main.log_evidence() == pytest.approx(clf.log_evidence(), rel=1e-12)
    switched = clf.to_bayesnb(estimate="predictive")
    fresh = getattr(bayesnb, name)(**{**main.get_params(), "estimate": "predictive"}).fit(X, y)
    assert_allclose(switched.predict_proba(X), fresh.predict_proba(X), rtol=0, atol=1e-12)
    # The fitted object pickles (scikit-learn users persist models with pickle / joblib).
    assert_array_equal(pickle.loads(pickle.dumps(clf)).predict_proba(X), clf.predict_proba(X))


def test_gaussian_float32_input_gives_float32_attributes_like_scikit_learn():
    X = np.random.default_rng(4).normal(size=(20, 3)).astype(np.float32)
    y = np.arange(20) % 2
    ours, theirs = bsk.GaussianNB().fit(X, y), sknb.GaussianNB().fit(X, y)
    for name in ("theta_", "var_", "class_prior_", "class_count_"):
        assert getattr(ours, name).dtype == getattr(theirs, name).dtype == np.float32
        assert_allclose(getattr(ours, name), getattr(theirs, name), rtol=1e-5)


# --------------------------------------------------------- estimator checks
@parametrize_with_checks([getattr(bsk, n)() for n in NAMES])
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


def test_the_readme_switch_section_runs():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Switch from scikit-learn") :]
    code = section[section.index("```python\n") + len("```python\n") :]
    code = code[: code.index("```")]
    namespace = {}
    exec(compile(code, "README.md", "exec"), namespace)
    clf = namespace["clf"]
    assert type(clf) is bsk.MultinomialNB
    theirs = sknb.MultinomialNB(alpha=1.0).fit(namespace["X"], namespace["y"])
    assert_allclose(clf.feature_log_prob_, theirs.feature_log_prob_, rtol=0, atol=ATOL)


# ------------------------------------------- the main namespace's fitted attributes
@pytest.mark.parametrize("name", NAMES)
def test_main_estimators_carry_scikit_learns_fitted_attributes(name):
    # Inspection code written for scikit-learn runs on the main estimators: every fitted
    # attribute of scikit-learn's object exists there, and with scikit-learn's model
    # (estimate "mean" / "mle", class_prior at the frequencies) has its value. The one
    # exception is GaussianNB.class_prior_, which in the main namespace holds *fixed*
    # proportions only (None under the default Dirichlet posterior; documented).
    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 3)) if name == "GaussianNB" else rng.integers(0, 4, size=(40, 3))
    y = rng.integers(0, 3, 40)
    theirs = getattr(sknb, name)().fit(X, y)
    frequencies = np.bincount(y) / y.size
    estimate = "mle" if name == "GaussianNB" else "mean"
    ours = getattr(bayesnb, name)(estimate=estimate, class_prior=frequencies).fit(X, y)
    assert_same_model(ours, theirs, X)
    default = getattr(bayesnb, name)().fit(X, y)
    fitted = [k for k in vars(theirs) if k.endswith("_") and not k.startswith("_")]
    missing = [k for k in fitted if getattr(default, k, None) is None]
    assert missing == (["class_prior_"] if name == "GaussianNB" else [])


def test_main_feature_log_prob_is_read_off_the_posterior():
    # Under the default estimate="predictive" the multinomial feature_log_prob_ is the log
    # of the posterior mean: the Dirichlet concentrations normalised.
    rng = np.random.default_rng(6)
    X, y = rng.integers(0, 5, size=(30, 4)), rng.integers(0, 2, 30)
    clf = bayesnb.MultinomialNB(alpha=0.3).fit(X, y)
    a = np.asarray(clf.posterior_.concentration)
    assert_allclose(clf.feature_log_prob_, np.log(a / a.sum(axis=1, keepdims=True)), rtol=1e-12)
    # and the class proportions of the default Dirichlet(1) posterior: (N_c + 1) / (N + K).
    N = np.bincount(y)
    assert_allclose(np.exp(clf.class_log_prior_), (N + 1) / (N.sum() + 2), rtol=1e-12)
