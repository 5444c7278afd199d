"""Exact leave-one-out (bayesnb.analysis.loo) against brute-force refits, and likelihood tempering.

Oracles: N refits on the data without each row (the estimator itself where its default
prior does not depend on the data; the family's functions with the prior held at
``prior_`` otherwise), a grid + scipy.optimize search of the brute-force LOO log loss for
the chosen temperature, and the untempered numbers for ``temperature=1``.
"""

import io
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize_scalar
from scipy.special import logsumexp

import bayesnb
from bayesnb.analysis import loo
from bayesnb.core import class_prior as _class_prior


def _data(seed, n=16, n_classes=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    y[:n_classes] = np.arange(n_classes)
    counts = rng.poisson(2.0, (n, 4)) + (np.arange(4)[None, :] == y[:, None] % 4) * rng.poisson(3.0, (n, 4))
    real = rng.normal(size=(n, 3)) + y[:, None]
    return counts, real, y


def _cases(seed):
    counts, real, y = _data(seed)
    return [
        (bayesnb.MultinomialNB(), counts, y),
        (bayesnb.BernoulliNB(), (counts > 2).astype(int), y),
        (bayesnb.CategoricalNB(), counts % 3, y),
        (bayesnb.PoissonNB(), counts, y),
        (bayesnb.ExponentialNB(), np.exp(real), y),
        (bayesnb.GaussianNB(), real, y),
        (bayesnb.GaussianBayesClassifier(), real, y),
        (bayesnb.GaussianBayesClassifier(covariance="shared"), real, y),
    ]


def _brute_terms(est, X, y, kind):
    """LooTerms by N refits of the statistics without each row, the prior held at prior_."""
    fam = est.family_
    Xv = est.validate_input(X)
    n = len(y)
    C = est.classes_.size
    feat, cls = np.zeros((n, C)), np.zeros((n, C))
    for i in range(n):
        keep = np.arange(n) != i
        s, _, _, _ = est.sufficient_stats(X[keep], y[keep])
        if kind == "predictive":
            feat[i] = fam.log_predictive(fam.posterior(est.prior_, s), Xv[i : i + 1])[0]
        else:
            params = fam.point(est.prior_, s, kind, **est._point_options(kind))
            feat[i] = fam.log_likelihood(params, Xv[i : i + 1], est.prior_)[0]
        cls[i] = _class_prior.point_log(est.class_dirichlet_, s.class_count, kind)
    return loo.LooTerms(cls, feat, np.searchsorted(est.classes_, y))


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("kind", ["predictive", "mean", "map"])
def test_loo_equals_brute_force_refits_for_every_family(seed, kind):
    for est, X, y in _cases(seed):
        est.set_params(estimate=kind)
        est.fit(X, y)
        got = est.loo_terms(X, y)
        want = _brute_terms(est, X, y, kind)
        name = f"{type(est).__name__}({est.family_.name})"
        np.testing.assert_allclose(got.feature_log, want.feature_log, rtol=1e-10, atol=1e-10, err_msg=name)
        np.testing.assert_allclose(got.class_log, want.class_log, rtol=1e-10, atol=1e-10, err_msg=name)
        np.testing.assert_allclose(
            loo.conditional(got), loo.conditional(want), rtol=1e-10, atol=1e-10, err_msg=name
        )


def test_loo_equals_refitted_estimator_predictions():
    # Data-free default prior: refitting the estimator itself is the oracle.
    counts, _, y = _data(3, n=20)
    for X in (counts, sp.csr_matrix(counts)):
        clf = bayesnb.MultinomialNB(alpha=0.7).fit(X, y)
        got = loo.conditional(clf.loo_terms(X, y))
        refit = [
            bayesnb.MultinomialNB(alpha=0.7).fit(X[np.arange(20) != i], y[np.arange(20) != i]).predict_log_proba(X[i : i + 1])[0, y[i]]
            for i in range(20)
        ]
        np.testing.assert_allclose(got, refit, rtol=1e-10, atol=1e-12)
        joint = [
            bayesnb.MultinomialNB(alpha=0.7).fit(X[np.arange(20) != i], y[np.arange(20) != i]).predict_joint_log_proba(X[i : i + 1])[0, y[i]]
            for i in range(20)
        ]
        np.testing.assert_allclose(loo.joint(clf.loo_terms(X, y)), joint, rtol=1e-10, atol=1e-12)


def test_loo_with_weights_leaves_the_whole_row_out():
    counts, _, y = _data(4, n=12)
    w = np.arange(1, 13) / 3.0
    clf = bayesnb.MultinomialNB().fit(counts, y, sample_weight=w)
    got = loo.conditional(clf.loo_terms(counts, y, sample_weight=w))
    keep = lambda i: np.arange(12) != i  # noqa: E731
    refit = [
        bayesnb.MultinomialNB().fit(counts[keep(i)], y[keep(i)], sample_weight=w[keep(i)]).predict_log_proba(counts[i : i + 1])[0, y[i]]
        for i in range(12)
    ]
    np.testing.assert_allclose(got, refit, rtol=1e-10)


def test_loo_of_a_mixed_model_is_the_sum_of_its_blocks():
    counts, real, y = _data(5)
    X = np.hstack([real, counts])
    mixed = bayesnb.MixedNB(
        [("g", bayesnb.GaussianNB(), [0, 1, 2]), ("p", bayesnb.PoissonNB(), [3, 4, 5, 6])]
    ).fit(X, y)
    got = mixed.loo_terms(X, y)
    g, p = bayesnb.GaussianNB().fit(real, y), bayesnb.PoissonNB().fit(counts, y)
    np.testing.assert_allclose(
        got.feature_log, _brute_terms(g, real, y, "predictive").feature_log + _brute_terms(p, counts, y, "predictive").feature_log,
        rtol=1e-10,
    )


def test_planted_errors_are_caught_by_the_brute_force_oracle():
    # The oracle separates a correct LOO from two wrong ones: no downdate at all (the
    # full posterior, which has seen the row) and a downdate of the wrong class.
    counts, _, y = _data(6)
    clf = bayesnb.MultinomialNB().fit(counts, y)
    want = _brute_terms(clf, counts, y, "predictive")
    full = clf._family.log_predictive(clf.posterior_, counts)
    assert np.max(np.abs(full - want.feature_log)) > 1e-3
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        wrong = loo.feature_log_loo(clf.family_, clf.prior_, clf.stats_, counts, (y + 1) % 3)
    wrong = np.where(np.isfinite(wrong), wrong, 0.0)
    assert np.max(np.abs(wrong - want.feature_log)) > 1e-3


# --------------------------------------------------------------------- tempering


def test_temperature_one_changes_nothing_and_t_divides_the_feature_part():
    counts, real, y = _data(7, n=30)
    for cls, X in ((bayesnb.MultinomialNB, counts), (bayesnb.GaussianNB, real)):
        plain = cls().fit(X, y)
        same = cls(temperature=1.0).fit(X, y)
        assert np.array_equal(plain.predict_proba(X), same.predict_proba(X))
        hot = cls(temperature=4.0).fit(X, y)
        lc = plain._class_log_prob("predictive")
        feat = plain.predict_joint_log_proba(X) - lc
        want = lc + feat / 4.0
        want = np.exp(want - logsumexp(want, axis=1, keepdims=True))
        np.testing.assert_allclose(hot.predict_proba(X), want, rtol=1e-12)
        assert hot.temperature_ == 4.0


@pytest.mark.parametrize("bad", [0.5, 0.0, -2, np.inf, np.nan, "cold", True, None])
def test_bad_temperature_is_refused_by_name(bad):
    counts, _, y = _data(8)
    with pytest.raises(ValueError, match="temperature"):
        bayesnb.MultinomialNB(temperature=bad).fit(counts, y)


def _overconfident(seed, n=60):
    # Duplicated features: naive Bayes counts the same evidence four times (misspecified).
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    base = rng.poisson(np.where(y[:, None] == 1, [3.0, 1.0, 2.0, 1.0, 2.5], [1.0, 3.0, 2.0, 1.5, 1.0]), (n, 5))
    return np.hstack([base] * 4), y


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_loo_temperature_is_the_brute_force_loo_minimiser(seed):
    X, y = _overconfident(seed)
    clf = bayesnb.MultinomialNB(temperature="loo").fit(X, y)
    n = len(y)
    # Brute force: N refits give log p(x_i | c, D_-i) and log p(c | D_-i) directly.
    feat, cls = np.zeros((n, 2)), np.zeros((n, 2))
    for i in range(n):
        keep = np.arange(n) != i
        ref = bayesnb.MultinomialNB().fit(X[keep], y[keep])
        joint = ref.predict_joint_log_proba(X[i : i + 1])[0]
        cls[i] = ref._class_log_prob("predictive")
        feat[i] = joint - cls[i]

    def loss(log_t):
        s = cls + feat / np.exp(log_t)
        lp = s - logsumexp(s, axis=1, keepdims=True)
        return -np.mean(np.maximum(lp[np.arange(n), y], np.log(1e-15)))

    grid = np.linspace(0, np.log(1e4), 400)
    start = grid[np.argmin([loss(g) for g in grid])]
    res = minimize_scalar(loss, bounds=(max(0, start - 0.05), min(np.log(1e4), start + 0.05)), method="bounded", options={"xatol": 1e-9})
    best = np.exp(res.x) if loss(res.x) < loss(0.0) else 1.0
    assert clf.temperature_ > 1.0  # duplicated evidence: the model is overconfident
    assert clf.temperature_ == pytest.approx(best, rel=1e-4)
    # A planted error: the in-sample (not left-out) log loss picks a different T.
    full = bayesnb.MultinomialNB().fit(X, y)
    lc = full._class_log_prob("predictive")
    fi = full.predict_joint_log_proba(X) - lc
    insample = loo.LooTerms(np.broadcast_to(lc, fi.shape), fi, y)
    assert abs(loo.choose_temperature(insample) - best) > 1e-3 * best


def test_loo_temperature_keeps_one_on_a_correct_model():
    rng = np.random.default_rng(11)
    y = rng.integers(0, 2, 400)
    X = rng.poisson(np.where(y[:, None] == 1, [3.0, 1.0, 2.0], [1.0, 3.0, 2.0]))
    clf = bayesnb.MultinomialNB(temperature="loo").fit(X, y)
    assert clf.temperature_ < 1.3


def test_tempered_draws_intervals_log_odds_and_persistence():
    X, y = _overconfident(3)
    hot = bayesnb.MultinomialNB(temperature=3.0).fit(X, y)
    cold = bayesnb.MultinomialNB().fit(X, y)
    d_hot = hot.predict_proba_draws(X[:5], n_draws=50, random_state=0)
    d_cold = cold.predict_proba_draws(X[:5], n_draws=50, random_state=0)
    # Same draws of the parameters; the feature log-likelihood over 3.
    log_class = np.log(cold.sample_posterior(50, random_state=0)["class_probs"])
    ratio = np.log(d_cold[..., 1] / d_cold[..., 0]) - (log_class[:, 1] - log_class[:, 0])[:, None]
    want = 1.0 / (1.0 + np.exp(-(ratio / 3.0 + (log_class[:, 1] - log_class[:, 0])[:, None])))
    np.testing.assert_allclose(d_hot[..., 1], want, rtol=1e-8)
    o_hot = bayesnb.analysis.uncertainty.feature_log_odds_draws(hot, 1, n_draws=30, random_state=0)
    o_cold = bayesnb.analysis.uncertainty.feature_log_odds_draws(cold, 1, n_draws=30, random_state=0)
    np.testing.assert_allclose(o_hot.draws, o_cold.draws / 3.0, rtol=1e-12)
    auto = bayesnb.MultinomialNB(temperature="loo").fit(X, y)
    buf = io.BytesIO()
    auto.save(buf)
    buf.seek(0)
    back = bayesnb.load(buf)
    assert back.temperature_ == auto.temperature_ > 1.0
    assert np.array_equal(back.predict_proba(X), auto.predict_proba(X))


def test_temperature_on_every_estimator_of_the_namespace():
    counts, real, y = _data(9, n=24)
    listed = {type(e).__name__ for e, _, _ in _cases(9)} | {"MixedNB", "PolyaNB"}
    estimators = {n for n in bayesnb.__all__ if isinstance(getattr(bayesnb, n), type) and hasattr(getattr(bayesnb, n), "loo_terms")}
    assert estimators <= listed, estimators - listed
    for est, X, yy in _cases(9) + [
        (bayesnb.MixedNB([("g", bayesnb.GaussianNB(), [0, 1, 2])]), real, y),
        (bayesnb.PolyaNB(), counts, y),
    ]:
        assert est.get_params()["temperature"] == 1.0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.set_params(temperature="loo").fit(X, yy)
        assert 1.0 <= est.temperature_ <= loo.TEMPERATURE_BOUNDS[1], type(est).__name__
