"""``SemiSupervisedNB(unlabelled_weight="auto")``: the weight of the unlabelled rows chosen from the labelled rows.

Oracles: the labelled-only fit of the wrapped estimator (weight 0), a NumPy EM and a
NumPy VB written from Nigam et al.'s update equations (weight 1), and a brute-force
re-implementation of the cross-validation criterion and of the selection rule (the
chosen weight and its curve).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import digamma, logsumexp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import log_loss
from sklearn.model_selection import StratifiedKFold

from bayesnb import BernoulliNB, CategoricalNB, GaussianNB, MultinomialNB, PoissonNB, SemiSupervisedNB


def _clusters(seed, n=240, d=6, n_labelled=12, relevant=True):
    """Two well-separated clusters of count rows; a few labelled.

    ``relevant``: the label is the cluster (unlabelled rows help); otherwise the label
    is a coin flip that shows in one feature only, so the clusters EM finds with the
    unlabelled rows are not the classes (unlabelled rows hurt).
    """
    rng = np.random.default_rng(seed)
    cluster = rng.integers(0, 2, n)
    y = cluster.copy() if relevant else rng.integers(0, 2, n)
    rate = np.where(cluster[:, None] == (np.arange(d) < d // 2), 6.0, 0.5)
    if not relevant:
        rate[:, -1] = 0.5 + 5.0 * y  # the label's only trace: one feature the clusters do not share
    X = rng.poisson(rate)
    yu = np.full(n, -1)
    for c in (0, 1):
        pick = np.flatnonzero(y == c)[: n_labelled // 2]
        yu[pick] = c
    return X, y, yu


def _family_data(cls, seed, n=90, d=4):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    on = (y[:, None] == np.arange(d) % 2).astype(float)
    if cls in (MultinomialNB, PoissonNB):
        X = rng.poisson(1.0 + 2.0 * on)
    elif cls is BernoulliNB:
        X = (rng.random((n, d)) < 0.25 + 0.5 * on).astype(int)
    elif cls is CategoricalNB:
        X = np.where(rng.random((n, d)) < 0.5, y[:, None], rng.integers(0, 3, (n, d)))
    else:
        X = rng.normal(1.5 * on, 1.0)
    yu = y.copy()
    yu[rng.random(n) < 0.75] = -1
    for c in (0, 1):  # at least 3 labelled rows per class: 3 folds
        yu[np.flatnonzero(y == c)[:3]] = c
    return X, y, yu


def _options(cls, method):
    # The Normal-Inverse-Gamma has no concentration for Laplace smoothing to raise.
    return {"smoothing": "none"} if cls is GaussianNB and method == "em" else {}


CASES = [
    (MultinomialNB, "em"),
    (MultinomialNB, "vb"),
    (BernoulliNB, "em"),
    (BernoulliNB, "vb"),
    (CategoricalNB, "em"),
    (PoissonNB, "vb"),
    (GaussianNB, "em"),
    (GaussianNB, "vb"),
]
IDS = [f"{c.__name__}-{m}" for c, m in CASES]


@pytest.mark.parametrize(("cls", "method"), CASES, ids=IDS)
def test_weight_zero_is_the_labelled_only_fit(cls, method):
    X, _, yu = _family_data(cls, 1)
    lab = yu != -1
    clf = SemiSupervisedNB(cls(), method=method, unlabelled_weight=0, **_options(cls, method)).fit(X, yu)
    # The same estimate: EM's M-step is the posterior mean (Laplace) or the MAP; VB keeps the estimator's.
    estimate = {"em": "mean" if cls is not GaussianNB else "map", "vb": cls().estimate}[method]
    ref = cls(estimate=estimate).fit(X[lab], yu[lab])
    np.testing.assert_allclose(clf.predict_proba(X), ref.predict_proba(X), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(clf.predict_joint_log_proba(X), ref.predict_joint_log_proba(X), rtol=1e-10)
    assert clf.unlabelled_weight_ == 0.0 and clf.weight_curve_ is None


def _numpy_em(X, yu, alpha, class_alpha, n_iter):
    """Nigam's EM for the multinomial with Laplace smoothing, from the update equations."""
    lab = yu != -1
    R_lab = np.eye(2)[yu[lab]]
    R_unl = None

    def m_step(R_unl):
        N = R_lab.sum(0) + (0 if R_unl is None else R_unl.sum(0))
        T = R_lab.T @ X[lab] + (0 if R_unl is None else R_unl.T @ X[~lab])
        theta = (alpha + T) / (alpha + T).sum(1, keepdims=True)
        pi = (class_alpha + N) / (class_alpha + N).sum()
        return np.log(theta), np.log(pi)

    log_theta, log_pi = m_step(None)
    for _ in range(n_iter):
        joint = X[~lab] @ log_theta.T + log_pi
        R_unl = np.exp(joint - logsumexp(joint, axis=1, keepdims=True))
        log_theta, log_pi = m_step(R_unl)
    return log_theta, log_pi


def test_weight_one_is_plain_em():
    X, _, yu = _clusters(3, relevant=False)
    n_iter = 12
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = SemiSupervisedNB(
            MultinomialNB(alpha=0.5, class_alpha=2.0), unlabelled_weight=1, tol=0, max_iter=n_iter
        ).fit(X, yu)
    # Iteration i evaluates the parameters of i M-steps and stops there when the objective settled.
    m_steps = clf.n_iter_ - 1 if clf.converged_ else clf.n_iter_
    assert m_steps >= 3
    log_theta, log_pi = _numpy_em(X, yu, 0.5, 2.0, m_steps)
    joint = X @ log_theta.T + log_pi
    expected = np.exp(joint - logsumexp(joint, axis=1, keepdims=True))
    np.testing.assert_allclose(clf.predict_proba(X), expected, rtol=1e-10, atol=1e-13)


def test_weight_one_is_plain_vb():
    X, _, yu = _clusters(4, relevant=False)
    lab = yu != -1
    n_iter = 10
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = SemiSupervisedNB(MultinomialNB(), method="vb", unlabelled_weight=1, tol=0, max_iter=n_iter).fit(X, yu)
    # Iteration i runs the i-th E-step and conditional update: every iteration is one update.
    n_iter = clf.n_iter_
    R_lab = np.eye(2)[yu[lab]]
    a, b = 1.0 + R_lab.T @ X[lab], 1.0 + R_lab.sum(0)
    for _ in range(n_iter):  # q(y) from E_q[log pi] + E_q[log theta], then the conjugate updates
        e_log_theta = digamma(a) - digamma(a.sum(1, keepdims=True))
        joint = X[~lab] @ e_log_theta.T + digamma(b) - digamma(b.sum())
        R = np.exp(joint - logsumexp(joint, axis=1, keepdims=True))
        a, b = 1.0 + R_lab.T @ X[lab] + R.T @ X[~lab], 1.0 + R_lab.sum(0) + R.sum(0)
    np.testing.assert_allclose(np.asarray(clf.posterior_.concentration), a, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(clf.class_posterior_.concentration), b, rtol=1e-10)


def brute_force_weight(make, X, yu, grid, n_splits, margin, criterion="accuracy"):
    """The criterion and the rule, re-implemented: per-row held-out log p(y|x) and correctness for each weight, then the choice.

    Returns the chosen weight, the mean log scores and the accuracies per weight.
    """
    lab_rows = np.flatnonzero(yu != -1)
    unl_rows = np.flatnonzero(yu == -1)
    grid = sorted(grid)
    scores = np.zeros((len(grid), lab_rows.size))
    right = np.zeros((len(grid), lab_rows.size))
    splitter = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=0)
    for train, test in splitter.split(lab_rows, yu[lab_rows]):
        rows = np.concatenate([lab_rows[train], unl_rows])
        for g, lam in enumerate(grid):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                fold = make(lam).fit(X[rows], yu[rows])
            # log of the probabilities: near 1 they carry ~1e-16 absolute error (hence atol below)
            proba = fold.predict_proba(X[lab_rows[test]])
            for t, i in enumerate(lab_rows[test]):
                scores[g, test[t]] = np.log(proba[t, list(fold.classes_).index(yu[i])])
                right[g, test[t]] = fold.predict(X[[i]])[0] == yu[i]
    n = lab_rows.size
    means, accuracy = scores.mean(axis=1), right.mean(axis=1)
    decide, other = (right, scores) if criterion == "accuracy" else (scores, right)
    zero = grid.index(0.0)
    best = zero
    for g, lam in enumerate(grid):
        diff = decide[g] - decide[zero]
        se = np.std(diff, ddof=1) / np.sqrt(n)
        eligible = diff.mean() > margin * se
        if criterion == "accuracy" and diff.mean() >= 0:  # no accuracy lost, the log score gains
            log_diff = scores[g] - scores[zero]
            eligible = eligible or log_diff.mean() > margin * np.std(log_diff, ddof=1) / np.sqrt(n)
        if lam > 0 and eligible:
            # better in the deciding score, or equal there and better in the other
            if (decide[g].mean(), other[g].mean()) > (decide[best].mean(), other[best].mean()):
                best = g
    return grid[best], means, accuracy


@pytest.mark.parametrize("criterion", ["accuracy", "log_score"])
@pytest.mark.parametrize(("cls", "method"), CASES, ids=IDS)
def test_the_chosen_weight_is_the_brute_force_search(cls, method, criterion):
    X, _, yu = _family_data(cls, 2)
    grid = (0.0, 0.1, 1.0)
    options = _options(cls, method)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = SemiSupervisedNB(cls(), method=method, weight_grid=grid, weight_criterion=criterion, **options).fit(X, yu)

    def make(lam):
        return SemiSupervisedNB(cls(), method=method, unlabelled_weight=lam, **options)

    chosen, means, accuracy = brute_force_weight(make, X, yu, grid, 3, 1.0, criterion)
    curve = clf.weight_curve_
    np.testing.assert_allclose(curve["mean"], means, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(curve["accuracy"], accuracy)  # counts of 0/1 over the same rows
    assert curve["criterion"] == criterion
    assert clf.unlabelled_weight_ == chosen == curve["chosen"]
    # The final model is the fit at the chosen weight.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        again = make(chosen).fit(X, yu)
    np.testing.assert_allclose(clf.predict_proba(X), again.predict_proba(X), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("criterion", ["accuracy", "log_score"])
@pytest.mark.parametrize("relevant", [True, False], ids=["unlabelled-rows-help", "unlabelled-rows-hurt"])
@pytest.mark.parametrize("margin", [0.0, 1.0])
def test_auto_takes_the_unlabelled_rows_only_when_they_help(relevant, margin, criterion):
    X, y, yu = _clusters(5, relevant=relevant)
    grid = (0.0, 0.01, 0.1, 1.0)
    clf = SemiSupervisedNB(MultinomialNB(), weight_grid=grid, weight_margin=margin, weight_criterion=criterion).fit(X, yu)

    def make(lam):
        return SemiSupervisedNB(MultinomialNB(), unlabelled_weight=lam)

    chosen, means, _ = brute_force_weight(make, X, yu, grid, 3, margin, criterion)
    assert clf.unlabelled_weight_ == chosen
    np.testing.assert_allclose(clf.weight_curve_["mean"], means, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(clf.weight_curve_["grid"], grid)
    if relevant:
        assert chosen > 0
    else:  # EM would align the classes with the clusters: the fallback
        assert chosen == 0.0
        one = make(1.0).fit(X, yu)
        unl = yu == -1
        assert clf.score(X[unl], y[unl]) > one.score(X[unl], y[unl]) + 0.1
        assert log_loss(y[unl], clf.predict_proba(X[unl])) < log_loss(y[unl], one.predict_proba(X[unl])) / 2


def test_the_curve_holds_the_scores_and_their_standard_errors():
    X, _, yu = _clusters(6)
    clf = SemiSupervisedNB(MultinomialNB(), weight_grid=(1.0, 0.0, 0.3)).fit(X, yu)
    curve = clf.weight_curve_
    np.testing.assert_array_equal(curve["grid"], [0.0, 0.3, 1.0])
    scores = curve["scores"]
    n = (yu != -1).sum()
    assert scores.shape == (3, n) and np.all(scores <= 0)
    np.testing.assert_allclose(curve["mean"], scores.mean(1), rtol=1e-12)
    np.testing.assert_allclose(curve["se"], scores.std(1, ddof=1) / np.sqrt(n), rtol=1e-12)
    diff = scores - scores[0]
    np.testing.assert_allclose(curve["gain"], diff.mean(1), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(curve["gain_se"], diff.std(1, ddof=1) / np.sqrt(n), rtol=1e-12, atol=1e-15)
    right = curve["correct"]
    assert right.shape == (3, n) and set(np.unique(right)) <= {0.0, 1.0}
    np.testing.assert_allclose(curve["accuracy"], right.mean(1), rtol=1e-12)
    np.testing.assert_allclose(curve["accuracy_se"], right.std(1, ddof=1) / np.sqrt(n), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(curve["accuracy_gain"], (right - right[0]).mean(1), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(
        curve["accuracy_gain_se"], (right - right[0]).std(1, ddof=1) / np.sqrt(n), rtol=1e-12, atol=1e-15
    )
    assert curve["n_splits"] == 3 and curve["criterion"] == "accuracy"


def _curves(acc, acc_gain, acc_se, log, log_gain, log_se):
    a = lambda v: np.asarray(v, dtype=float)  # noqa: E731
    return {"accuracy": (a(acc), a(acc_gain), a(acc_se)), "log_score": (a(log), a(log_gain), a(log_se))}


@pytest.mark.parametrize(
    ("criterion", "margin", "curves", "expected"),
    [
        # the log score declines EM (confident mistakes) while accuracy gains 2 standard errors
        ("accuracy", 1.0, _curves([.2, .3, .4], [0, .1, .2], [0, .05, .1], [-90, -200, -210], [0, -110, -120], [0, 30, 30]), 2),
        ("log_score", 1.0, _curves([.2, .3, .4], [0, .1, .2], [0, .05, .1], [-90, -200, -210], [0, -110, -120], [0, 30, 30]), 0),
        # a gain within the margin is not eligible, however good its mean
        ("accuracy", 2.5, _curves([.2, .3, .4], [0, .1, .2], [0, .05, .1], [-1, -1, -1], [0, 0, 0], [0, 0, 0]), 0),
        # equal accuracy: the better log score decides, then the smaller weight
        ("accuracy", 1.0, _curves([.5, .9, .9], [0, .4, .4], [0, .1, .1], [-1, -.5, -.4], [0, .5, .6], [0, .1, .1]), 2),
        ("accuracy", 1.0, _curves([.5, .9, .9], [0, .4, .4], [0, .1, .1], [-1, -.4, -.4], [0, .6, .6], [0, .1, .1]), 1),
        # the labelled-only fit stays when nothing beats it
        ("accuracy", 0.0, _curves([.5, .5, .4], [0, 0, -.1], [0, 0, .1], [-1, -1, -.4], [0, 0, .6], [0, .1, .1]), 0),
        # accuracy at its ceiling: no accuracy lost and a clear log-score gain is eligible...
        ("accuracy", 1.0, _curves([1, 1, 1], [0, 0, 0], [0, 0, 0], [-.3, -.2, -.1], [0, .1, .2], [0, .02, .02]), 2),
        # ...but not with accuracy lost, however good the log score
        ("accuracy", 1.0, _curves([1, .99, .99], [0, -.01, -.01], [0, .01, .01], [-.3, -.2, -.1], [0, .1, .2], [0, .02, .02]), 0),
        # the log-score rule: only the log-score gain makes a weight eligible
        ("log_score", 1.0, _curves([.5, .9, .5], [0, .4, 0], [0, .01, 0], [-1, -1, -.5], [0, 0, .5], [0, .1, .1]), 2),
    ],
)
def test_the_selection_rule(criterion, margin, curves, expected):
    from bayesnb.estimators.semi_supervised import _choose_index

    assert _choose_index(criterion, margin, 0, curves) == expected


def test_a_restored_curve_must_choose_its_own_weight():
    from bayesnb.estimators.semi_supervised import _check_restored

    X, _, yu = _clusters(6)
    clf = SemiSupervisedNB(MultinomialNB(), weight_grid=(0.0, 1.0)).fit(X, yu)
    keys = ("classes_", "components_curve_", "converged_", "estimator_", "label_distributions_", "log_posterior_",
            "n_components_", "n_iter_", "unlabelled_weight_", "weight_curve_")
    state = {k: getattr(clf, k) for k in keys}
    _check_restored(clf, state)  # as fitted: accepted
    curve = dict(state["weight_curve_"])
    # Make the other weight the clear winner in accuracy: the stored choice no longer follows.
    other = 1 - int(np.flatnonzero(curve["grid"] == curve["chosen"])[0])
    curve["accuracy"] = np.array([0.5, 0.5])
    curve["accuracy_gain"] = np.array([0.0, 0.0])
    curve["accuracy_gain_se"] = np.array([0.0, 0.0])
    if other == 1:
        curve["accuracy"][1], curve["accuracy_gain"][1], curve["accuracy_gain_se"][1] = 0.9, 0.4, 0.01
    with pytest.raises(ValueError, match="is not the weight its own curve"):
        _check_restored(clf, {**state, "weight_curve_": curve})
    with pytest.raises(ValueError, match="criterion"):
        _check_restored(clf, {**state, "weight_curve_": {**state["weight_curve_"], "criterion": "log_score"}})


def test_sample_weights_weigh_the_scores():
    X, _, yu = _clusters(7)
    w = np.random.default_rng(7).uniform(0.5, 2.0, yu.size)
    clf = SemiSupervisedNB(MultinomialNB(), weight_grid=(0.0, 1.0)).fit(X, yu, sample_weight=w)
    curve = clf.weight_curve_
    wl = w[yu != -1]
    np.testing.assert_allclose(curve["mean"], curve["scores"] @ wl / wl.sum(), rtol=1e-12)


def test_auto_is_the_default_and_without_unlabelled_rows_is_the_ordinary_fit():
    assert SemiSupervisedNB().unlabelled_weight == "auto"
    X, y, _ = _clusters(8, n=40)
    clf = SemiSupervisedNB(MultinomialNB()).fit(X, y)
    ref = MultinomialNB(estimate="mean").fit(X, y)
    np.testing.assert_allclose(clf.predict_proba(X), ref.predict_proba(X), rtol=1e-12)
    assert clf.unlabelled_weight_ == 0.0 and clf.weight_curve_ is None


def test_a_class_with_one_labelled_row_falls_back_to_the_labelled_fit_with_a_warning():
    X, _, yu = _clusters(9, n_labelled=2)  # one labelled row per class
    with pytest.warns(UserWarning, match="at least 2 labelled rows in every class"):
        clf = SemiSupervisedNB(MultinomialNB()).fit(X, yu)
    lab = yu != -1
    ref = MultinomialNB(estimate="mean").fit(X[lab], yu[lab])
    np.testing.assert_allclose(clf.predict_proba(X), ref.predict_proba(X), rtol=1e-12)
    assert clf.unlabelled_weight_ == 0.0 and clf.weight_curve_ is None


def test_fewer_labelled_rows_than_folds_use_fewer_folds():
    X, _, yu = _clusters(10, n_labelled=4)  # 2 per class
    clf = SemiSupervisedNB(MultinomialNB(), weight_cv=5).fit(X, yu)
    assert clf.weight_curve_["n_splits"] == 2


@pytest.mark.parametrize(
    ("params", "error", "match"),
    [
        ({"unlabelled_weight": "cv"}, ValueError, "unlabelled_weight must be 'auto' or a number"),
        ({"unlabelled_weight": -0.5}, ValueError, "unlabelled_weight must be finite and >= 0"),
        ({"weight_grid": (0.1, 1.0)}, ValueError, "weight_grid must contain 0"),
        ({"weight_grid": ()}, ValueError, "weight_grid must be a non-empty sequence"),
        ({"weight_grid": (0.0, -1.0)}, ValueError, "every weight_grid value must be finite and >= 0"),
        ({"weight_grid": (0.0, "1")}, TypeError, "every weight_grid value must be a number"),
        ({"weight_cv": 1}, ValueError, "weight_cv must be an int >= 2"),
        ({"weight_margin": -1.0}, ValueError, "weight_margin must be finite and >= 0"),
        ({"weight_criterion": "brier"}, ValueError, "weight_criterion must be one of 'accuracy', 'log_score'"),
    ],
)
def test_bad_weight_parameters_get_a_clear_error(params, error, match):
    X, _, yu = _clusters(11, n=30)
    with pytest.raises(error, match=match):
        SemiSupervisedNB(MultinomialNB(), **params).fit(X, yu)


def test_clone_keeps_the_search_parameters():
    clf = SemiSupervisedNB(MultinomialNB(), weight_grid=(0.0, 0.5), weight_cv=4, weight_margin=2.0)
    params = clone(clf).get_params(deep=False)
    assert params["unlabelled_weight"] == "auto"
    assert (params["weight_grid"], params["weight_cv"], params["weight_margin"]) == ((0.0, 0.5), 4, 2.0)
