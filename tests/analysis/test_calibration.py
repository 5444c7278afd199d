"""Calibration maps fitted to exact leave-one-out scores (bayesnb.analysis.calibration).

Oracles: the one-vs-rest log-odds against their definition in extended precision; the
fitted parameters against a brute-force minimisation of the same loss (Nelder-Mead from
many starts, no gradient); the choice of family against an independent evaluation of the
stated K-fold criterion; a planted truth recovered from simulated labels.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import log_softmax

from bayesnb.analysis import calibration as cal


def _log_p(rng, n, n_classes, spread=6.0):
    scores = rng.normal(0.0, spread, size=(n, n_classes))
    return log_softmax(scores, axis=1)


def _simulate(rng, log_p, scale, sigma, offsets):
    """Labels drawn from the map's own probabilities (the map as the truth)."""
    truth = cal.CalibrationMap("asinh", scale, sigma, np.asarray(offsets, float), "predictive", 1.0, {}, {}, 0.0, 0.0, 0)
    p = np.exp(cal.apply(truth, log_p))
    u = rng.random(p.shape[0])[:, None]
    return (np.cumsum(p, axis=1) < u).sum(axis=1).clip(0, p.shape[1] - 1)


def _definition_log_odds(log_p):
    """One-vs-rest log-odds written from the definition, class by class."""
    return np.array([[lp[c] - np.logaddexp.reduce(np.delete(lp, c)) for c in range(lp.size)] for lp in log_p])


def _platt(y, n_classes, w=None):
    """Platt's targets written row by row: (N_c + 1)/(N_c + 2) on the row's class, the rest shared."""
    w = np.ones(y.size) if w is None else w
    t = np.empty((y.size, n_classes))
    for i, c in enumerate(y):
        n_c = w[y == c].sum()
        own = (n_c + 1) / (n_c + 2)
        t[i] = (1 - own) / (n_classes - 1)
        t[i, c] = own
    return t


def _loss(log_p, y, family, theta, w=None, d=None, t=None):
    """The map's mean cross-entropy at (log a, [log sigma], b_1..) — written from the definition.

    Against the targets ``t`` (Platt's, what ``fit_map`` minimises), or the labels
    themselves (the log loss) where ``t`` is None. ``d`` is ``_definition_log_odds(log_p)``,
    passed by the brute force so that its tens of thousands of evaluations do not rebuild
    it (it does not depend on the parameters).
    """
    d = _definition_log_odds(log_p) if d is None else d
    a = np.exp(theta[0])
    if family == "asinh":
        sigma, b = np.exp(theta[1]), np.concatenate([[0.0], theta[2:]])
        z = a * sigma * np.arcsinh(d / sigma) + b
    else:
        b = np.concatenate([[0.0], theta[1:]])
        z = a * d + b
    if t is None:
        t = np.eye(log_p.shape[1])[y]
    return -np.average((t * log_softmax(z, axis=1)).sum(axis=1), weights=w)


def _brute(log_p, y, family, w=None, starts=8, seed=0):
    rng = np.random.default_rng(seed)
    k = log_p.shape[1]
    d = _definition_log_odds(log_p)
    targets = _platt(y, k, w)
    best = None
    for _ in range(starts):
        x0 = np.concatenate([[rng.normal(-1, 1)], [rng.normal(1, 1.5)] if family == "asinh" else [], rng.normal(0, 1, k - 1)])
        for _ in range(4):  # restarts of the simplex from its own end point
            res = minimize(lambda t: _loss(log_p, y, family, t, w, d, targets), x0, method="Nelder-Mead",
                           options={"xatol": 1e-10, "fatol": 1e-13, "maxiter": 20000, "maxfev": 40000})
            x0 = res.x
        if best is None or res.fun < best.fun:
            best = res
    return best


def test_one_vs_rest_log_odds_is_its_definition():
    rng = np.random.default_rng(1)
    lp = _log_p(rng, 50, 4)
    lp[0] = np.log([1 - 3e-17, 1e-17, 1e-17, 1e-17])  # a nearly certain row: 1 - p rounds to 0 in p
    lp[0] -= np.logaddexp.reduce(lp[0])
    d = cal.one_vs_rest_log_odds(lp)
    for i in range(lp.shape[0]):
        for c in range(4):
            want = lp[i, c] - np.logaddexp.reduce(np.delete(lp[i], c))
            assert d[i, c] == pytest.approx(want, rel=1e-12, abs=1e-12)
    assert d[0, 0] == pytest.approx(np.log(1 - 3e-17) - np.log(3e-17), rel=1e-12)


def test_impossible_and_certain_classes_stay_finite():
    lp = np.array([[0.0, -np.inf, -np.inf], [np.log(0.5), np.log(0.5), -np.inf]])
    d = cal.one_vs_rest_log_odds(lp)
    assert np.all(np.isfinite(d)) and d[0, 0] == cal.LOG_ODDS_BOUND and d[1, 2] == -cal.LOG_ODDS_BOUND
    cmap = cal.CalibrationMap("asinh", 0.5, 3.0, np.array([0.0, 0.2, -0.1]), "predictive", 1.0, {}, {}, 0.0, 0.0, 0)
    out = np.exp(cal.apply(cmap, lp))
    assert np.all(np.isfinite(out)) and np.allclose(out.sum(axis=1), 1.0)


@pytest.mark.parametrize("family", ["affine", "asinh"])
def test_map_is_monotone_in_each_class_score(family):
    rng = np.random.default_rng(2)
    cmap = cal.CalibrationMap(family, 0.3, 2.0 if family == "asinh" else np.inf, np.array([0.0, 1.5, -2.0, 0.4]),
                              "predictive", 1.0, {}, {}, 0.0, 0.0, 0)
    scores = rng.normal(0, 10, size=(300, 4))
    for c in range(4):
        up = scores.copy()
        up[:, c] += rng.exponential(3.0, 300)
        p0 = np.exp(cal.apply(cmap, log_softmax(scores, axis=1)))[:, c]
        p1 = np.exp(cal.apply(cmap, log_softmax(up, axis=1)))[:, c]
        assert np.all(p1 >= p0 - 1e-15)


def test_two_classes_is_platt_in_compressed_log_odds():
    rng = np.random.default_rng(3)
    d = rng.normal(0, 30, 100)
    lp = -np.logaddexp(0, -np.stack([-d, d], axis=1))
    a, sigma, b1 = 0.4, 5.0, -0.7
    cmap = cal.CalibrationMap("asinh", a, sigma, np.array([0.0, b1]), "predictive", 1.0, {}, {}, 0.0, 0.0, 0)
    p1 = np.exp(cal.apply(cmap, lp))[:, 1]
    want = 1 / (1 + np.exp(-(2 * a * sigma * np.arcsinh(d / sigma) + b1)))
    np.testing.assert_allclose(p1, want, rtol=1e-10)


@pytest.mark.parametrize("family", ["affine", "asinh"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_fitted_parameters_are_the_brute_force_minimum(family, n_classes):
    rng = np.random.default_rng(10 + n_classes)
    lp = _log_p(rng, 160, n_classes, spread=8.0)
    y = _simulate(rng, lp, 0.35, 2.5, np.linspace(0, 0.8, n_classes))
    w = rng.uniform(0.5, 2.0, y.size)
    fitted = cal.fit_map(lp, y, family, w)
    brute = _brute(lp, y, family, w)
    theta = np.concatenate([[np.log(fitted.scale)], [np.log(fitted.compression)] if family == "asinh" else [],
                            fitted.offsets[1:]])
    assert _loss(lp, y, family, theta, w) == pytest.approx(fitted.fitted_log_loss, rel=1e-10)
    assert _loss(lp, y, family, theta, w, t=_platt(y, n_classes, w)) <= brute.fun + 1e-9
    if family == "asinh" and fitted.compression >= cal.COMPRESSION_BOUNDS[1] * (1 - 1e-9):
        # The loss is flat towards sigma = inf (the affine limit): the brute force runs off
        # there too, and the other parameters must agree.
        assert brute.x[1] >= np.log(cal.COMPRESSION_BOUNDS[1]) - 1e-3
        theta, brute_x = np.delete(theta, 1), np.delete(brute.x, 1)
    else:
        brute_x = brute.x
    np.testing.assert_allclose(theta, brute_x, atol=2e-4, rtol=2e-4)


def test_planted_map_is_recovered():
    # The offsets and the scale are both identified: a map that drops the offsets or
    # holds the scale at 1 fails here.
    rng = np.random.default_rng(4)
    lp = _log_p(rng, 20000, 3, spread=10.0)
    truth = (0.2, 4.0, np.array([0.0, 1.2, -0.8]))
    y = _simulate(rng, lp, *truth)
    fitted = cal.fit_map(lp, y, "asinh")
    assert fitted.scale == pytest.approx(truth[0], rel=0.1)
    assert fitted.compression == pytest.approx(truth[1], rel=0.35)
    np.testing.assert_allclose(fitted.offsets, truth[2], atol=0.1)
    assert fitted.fitted_log_loss < fitted.loo_log_loss - 0.1


def test_choice_is_the_stated_cross_validation_criterion():
    rng = np.random.default_rng(5)
    lp = _log_p(rng, 240, 3, spread=12.0)
    y = _simulate(rng, lp, 0.15, 1.5, [0.0, 0.5, -0.5])
    w = rng.uniform(0.5, 1.5, y.size)
    chosen = cal.choose(lp, y, w, n_folds=4, seed=7)
    # Independent evaluation: stratified folds (every class spread evenly), each family
    # fitted on three folds and scored on the fourth, weighted mean over all rows.
    fold = cal.folds(y, 4, seed=7)
    for c in range(3):
        counts = np.bincount(fold[y == c], minlength=4)
        assert counts.max() - counts.min() <= 1
    held = {}
    for family in cal.FAMILIES:
        losses = np.empty(y.size)
        for f in range(4):
            tr, te = fold != f, fold == f
            m = cal.fit_map(lp[tr], y[tr], family, w[tr])
            losses[te] = -np.maximum(cal.apply(m, lp[te])[np.arange(te.sum()), y[te]], np.log(1e-15))
        held[family] = losses
    cv = {f: np.average(held[f], weights=w) for f in cal.FAMILIES}
    best = min(cal.FAMILIES, key=lambda f: cv[f])
    n_eff = w.sum() ** 2 / (w**2).sum()
    se = {}
    for f in cal.FAMILIES:
        diff = held[f] - held[best]
        se[f] = np.sqrt(np.average((diff - np.average(diff, weights=w)) ** 2, weights=w) / (n_eff - 1))
    assert chosen.n_folds == 4
    for family in cal.FAMILIES:
        assert chosen.cv_log_loss[family] == pytest.approx(cv[family], rel=1e-10)
        assert chosen.cv_standard_error[family] == pytest.approx(se[family], rel=1e-8, abs=1e-15)
    # The least held-out loss, unless the model as written is within one standard error.
    assert chosen.family == ("identity" if cv["identity"] - cv[best] <= se["identity"] else best)
    assert chosen.family != "identity"  # the truth is far from the model as written
    refit = cal.fit_map(lp, y, chosen.family, w)
    assert chosen.scale == refit.scale and np.array_equal(chosen.offsets, refit.offsets)


def test_a_calibrated_model_is_left_alone():
    rng = np.random.default_rng(6)
    lp = _log_p(rng, 400, 2, spread=2.0)
    p = np.exp(lp[:, 1])
    y = (rng.random(400) < p).astype(int)
    chosen = cal.choose(lp, y)
    # Whatever wins, it is close to the identity on these scores.
    assert np.max(np.abs(np.exp(cal.apply(chosen, lp)) - np.exp(lp))) < 0.1


def test_too_few_rows_give_the_identity():
    lp = np.log(np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]]))
    chosen = cal.choose(lp, np.array([0, 1, 0]))
    assert chosen.family == "identity" and chosen.n_folds == 0
    assert cal.apply(chosen, lp) is lp


def test_unknown_family_is_refused():
    with pytest.raises(ValueError, match="calibration family"):
        cal.fit_map(np.log(np.full((4, 2), 0.5)), np.array([0, 1, 0, 1]), "isotonic")


def test_two_class_targets_are_platts():
    y = np.array([1, 1, 1, 0, 0, 1, 0])
    t = cal.targets(y, 2)
    n_pos, n_neg = 4, 3
    np.testing.assert_allclose(t[y == 1, 1], (n_pos + 1) / (n_pos + 2), rtol=1e-15)
    np.testing.assert_allclose(t[y == 0, 1], 1 / (n_neg + 2), rtol=1e-15)
    np.testing.assert_allclose(t.sum(axis=1), 1.0, rtol=1e-15)
    w = np.array([2.0, 1, 1, 0.5, 0.5, 1, 1])  # weights count as rows
    np.testing.assert_allclose(cal.targets(y, 2, w), _platt(y, 2, w), rtol=1e-15)
    y3 = np.array([0, 2, 2, 1, 0, 2])
    np.testing.assert_allclose(cal.targets(y3, 3), _platt(y3, 3), rtol=1e-15)


def test_separable_scores_keep_the_scale_finite():
    # Leave-one-out scores that put every row on the right side, by a margin: fitted to
    # the 0/1 labels the map's loss falls towards 0 as its scale grows, with no minimum,
    # and the next mistake would get a probability of 1e-15. Against Platt's targets the
    # minimum exists: the fitted map of a wrong-side score keeps a probability the counts
    # allow.
    rng = np.random.default_rng(8)
    y = np.repeat([0, 1, 2], 40)
    scores = rng.normal(0, 1, (120, 3))
    scores[np.arange(120), y] += 6.0
    lp = log_softmax(scores, axis=1)
    for family in ("affine", "asinh"):
        fitted = cal.fit_map(lp, y, family)
        assert fitted.scale < 0.5 * cal.SCALE_BOUNDS[1]
        wrong = log_softmax(np.array([[6.0, 0.0, 0.0]]), axis=1)  # a class-1 row scored as class 0
        p_true = np.exp(cal.apply(fitted, wrong))[0, 1]
        assert p_true > 1e-4, (family, fitted, p_true)


def test_wine_fold_where_a_sharpening_map_was_chosen():
    # 5-fold CV of load_wine with seed 8, first fold: every training row's leave-one-out
    # score is on the right side (log loss 0.0071), and a map fitted to the 0/1 labels
    # sharpened it (scale 4.1), which sent two test rows from 6.5 and 3.6 nats to 34.5 and
    # 24.6 and the fold's log loss from 0.30 to 1.66. Calibration must not cost that.
    from sklearn.datasets import load_wine
    from sklearn.metrics import log_loss
    from sklearn.model_selection import StratifiedKFold

    from bayesnb import GaussianNB

    X, y = load_wine(return_X_y=True)
    train, test = next(StratifiedKFold(5, shuffle=True, random_state=8).split(X, y))
    plain = GaussianNB().fit(X[train], y[train])
    calibrated = GaussianNB(calibrate="loo").fit(X[train], y[train])
    loss = {
        name: log_loss(y[test], np.clip(est.predict_proba(X[test]), 1e-15, 1), labels=[0, 1, 2])
        for name, est in (("plain", plain), ("calibrated", calibrated))
    }
    assert loss["calibrated"] <= loss["plain"] + 0.01, (loss, calibrated.calibration_)
