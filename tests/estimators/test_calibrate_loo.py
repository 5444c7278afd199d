"""``calibrate="loo"`` on the estimators: the map is the one fitted to the exact leave-one-out
scores, it applies everywhere class probabilities are formed, and settings changed after
``fit`` take effect at once or raise.

Oracles: the map recomputed from the uncalibrated estimator's own leave-one-out terms; the
leave-one-out log loss recomputed by brute-force refits; the uncalibrated estimator's
predictions, draws and export mapped by :func:`bayesnb.analysis.calibration.apply`.
"""

from __future__ import annotations

import copy
import io
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

import bayesnb
from bayesnb.analysis import calibration as cal
from bayesnb.analysis import loo as _loo


def _counts(rng, n=90, f=12, k=3):
    y = np.arange(n) % k
    rates = rng.gamma(1.0, 1.0, size=(k, f))
    X = rng.poisson(rates[y] * rng.uniform(2, 12, size=(n, 1)))
    return X, y


def _cases():
    rng = np.random.default_rng(0)
    Xc, yc = _counts(rng)
    Xr = rng.normal(size=(90, 4)) + np.repeat(np.eye(3, 4) * 1.5, 30, axis=0)
    yr = np.repeat([0, 1, 2], 30)
    Xb = (Xc > 3).astype(int)
    Xk = np.minimum(Xc // 3, 3)
    frame = pd.DataFrame({"g": Xr[:, 0], "h": Xr[:, 1], "c": pd.Categorical(np.minimum(Xc[:, 0] // 4, 2))})
    return {
        "multinomial": (bayesnb.MultinomialNB(), Xc, yc),
        "bernoulli": (bayesnb.BernoulliNB(binarize=None), Xb, yc),
        "categorical": (bayesnb.CategoricalNB(), Xk, yc),
        "gaussian": (bayesnb.GaussianNB(), Xr, yr),
        "gaussian_full": (bayesnb.GaussianBayesClassifier(covariance="full"), Xr, yr),
        "poisson": (bayesnb.PoissonNB(), Xc, yc),
        "exponential": (bayesnb.ExponentialNB(), np.abs(Xr) + 0.1, yr),
        "polya": (bayesnb.PolyaNB(), Xc, yc),
        "mixed": (bayesnb.MixedNB(), frame, yr),
    }


CASES = _cases()


@pytest.fixture(params=sorted(CASES))
def case(request):
    est, X, y = CASES[request.param]
    return clone(est), X, y


def _labels_index(est, y):
    return np.searchsorted(est.classes_, np.asarray(y))


def test_map_is_fitted_to_the_exact_leave_one_out_scores(case):
    est, X, y = case
    plain = clone(est).fit(X, y)
    calibrated = clone(est).set_params(calibrate="loo").fit(X, y)
    terms = plain.loo_terms(X, y)
    want = cal.choose(_loo.log_proba(terms, plain.temperature_), terms.y_index)
    got = calibrated.calibration_
    assert got.family == want.family and got.n_folds == want.n_folds
    assert got.scale == want.scale and got.compression == want.compression
    np.testing.assert_array_equal(got.offsets, want.offsets)
    assert got.cv_log_loss == want.cv_log_loss
    # The posterior and the evidence are the model's as written.
    assert calibrated.log_evidence() == plain.log_evidence()


def test_predictions_are_the_mapped_predictions(case):
    est, X, y = case
    plain = clone(est).fit(X, y)
    calibrated = clone(est).set_params(calibrate="loo").fit(X, y)
    cmap = calibrated.calibration_
    want_log = cal.apply(cmap, plain.predict_log_proba(X))
    np.testing.assert_allclose(calibrated.predict_log_proba(X), want_log, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(calibrated.predict_proba(X), np.exp(want_log), rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(calibrated.predict(X), calibrated.classes_[np.argmax(want_log, axis=1)])
    # Draws and intervals: every draw's class probabilities through the same map.
    raw = plain.predict_proba_draws(X[:7] if not hasattr(X, "iloc") else X.iloc[:7], 30, random_state=3)
    mapped = calibrated.predict_proba_draws(X[:7] if not hasattr(X, "iloc") else X.iloc[:7], 30, random_state=3)
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(mapped, np.exp(cal.apply(cmap, np.log(raw))), rtol=1e-9, atol=1e-12)


def test_leave_one_out_log_loss_equals_brute_force_refits():
    rng = np.random.default_rng(1)
    X, y = _counts(rng, n=45, f=8)
    est = bayesnb.MultinomialNB(calibrate="loo").fit(X, y)
    refits = [
        bayesnb.MultinomialNB().fit(np.delete(X, i, 0), np.delete(y, i)).predict_log_proba(X[i : i + 1])[0, y[i]]
        for i in range(y.size)
    ]
    assert est.calibration_.loo_log_loss == pytest.approx(-np.mean(refits), rel=1e-10)


def test_weights_count_as_repeated_rows():
    rng = np.random.default_rng(2)
    X, y = _counts(rng, n=60)
    w = np.where(np.arange(60) % 5 == 0, 2.0, 1.0)
    weighted = bayesnb.MultinomialNB(calibrate="loo").fit(X, y, sample_weight=w)
    rep = np.repeat(np.arange(60), w.astype(int))
    repeated_terms = bayesnb.MultinomialNB().fit(X[rep], y[rep])
    # A row of weight 2 is one copy left out (of everything else) whose loss counts twice;
    # the map is fitted to those scores.
    terms = repeated_terms.loo_terms(X, y)
    want = cal.choose(_loo.log_proba(terms), terms.y_index, weight=w)
    assert weighted.calibration_.family == want.family
    assert weighted.calibration_.scale == pytest.approx(want.scale, rel=1e-9)


def test_export_predictions_are_calibrated():
    est, X, y = CASES["multinomial"]
    plain = clone(est).fit(X, y)
    calibrated = clone(est).set_params(calibrate="loo").fit(X, y)
    a = plain.to_inference_data(20, random_state=0, X_new=X[:5]).predictions["class_proba"].values
    b = calibrated.to_inference_data(20, random_state=0, X_new=X[:5]).predictions["class_proba"].values
    np.testing.assert_allclose(b, np.exp(cal.apply(calibrated.calibration_, np.log(a))), rtol=1e-9, atol=1e-12)


def test_save_and_load_keep_the_map(tmp_path):
    est, X, y = CASES["gaussian"]
    fitted = clone(est).set_params(calibrate="loo").fit(X, y)
    buffer = io.BytesIO()
    fitted.save(buffer)
    buffer.seek(0)
    back = bayesnb.load(buffer)
    assert back.calibration_.family == fitted.calibration_.family
    np.testing.assert_array_equal(back.predict_proba(X), fitted.predict_proba(X))


def test_repr_shows_the_fitted_map():
    est, X, y = CASES["multinomial"]
    fitted = clone(est).set_params(calibrate="loo").fit(X, y)
    assert "calibration_: CalibrationMap(" in repr(fitted)
    assert "calibration_" not in repr(clone(est))


def test_set_params_takes_effect_or_raises():
    est, X, y = CASES["multinomial"]
    fitted = clone(est).set_params(calibrate="loo").fit(X, y)
    plain = clone(est).fit(X, y)
    # calibrate=None and a numeric temperature take effect at once.
    fitted.set_params(calibrate=None)
    np.testing.assert_array_equal(fitted.predict_proba(X), plain.predict_proba(X))
    fitted.set_params(temperature=4.0)
    np.testing.assert_allclose(fitted.predict_proba(X), clone(est).set_params(temperature=4.0).fit(X, y).predict_proba(X))
    # A map or a "loo" temperature can only be chosen from the training rows: refit.
    with pytest.raises(ValueError, match="call fit again"):
        plain.set_params(calibrate="loo").predict_proba(X)
    with pytest.raises(ValueError, match="call fit again"):
        clone(est).fit(X, y).set_params(temperature="loo").predict(X)
    # A map fitted to one estimate's scores does not belong to another's.
    refit = clone(est).set_params(calibrate="loo").fit(X, y)
    with pytest.raises(ValueError, match="estimate='predictive'"):
        refit.set_params(estimate="mean").predict_proba(X)
    refit.set_params(estimate="predictive")
    assert refit.predict_proba(X).shape == (len(y), 3)
    # fit after set_params works as scikit-learn users expect.
    assert plain.fit(X, y).calibration_ is not None


def test_bad_calibrate_is_refused():
    est, X, y = CASES["multinomial"]
    with pytest.raises(ValueError, match="calibrate must be None or 'loo'"):
        clone(est).set_params(calibrate="isotonic").fit(X, y)


def test_grid_search_over_calibrate():
    est, X, y = CASES["gaussian"]
    search = GridSearchCV(est, {"calibrate": [None, "loo"]}, cv=3, scoring="neg_log_loss").fit(X, y)
    assert search.best_params_["calibrate"] in (None, "loo")
    assert "calibrate" in est.get_params()


def test_partial_fit_maps_each_batch_rows():
    est, X, y = CASES["multinomial"]
    online = clone(est).set_params(calibrate="loo")
    online.partial_fit(X[:45], y[:45], classes=np.unique(y))
    online.partial_fit(X[45:], y[45:])
    full = clone(est).fit(X, y)
    terms = full.loo_terms(X[45:], y[45:])
    want = cal.choose(_loo.log_proba(terms), terms.y_index)
    assert online.calibration_.family == want.family
    assert online.calibration_.scale == pytest.approx(want.scale, rel=1e-9)


def test_held_out_sms_log_loss_improves_without_costing_accuracy(sms_counts):
    s = sms_counts
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = bayesnb.MultinomialNB().fit(s.X_train, s.y_train)
        calibrated = bayesnb.MultinomialNB(calibrate="loo").fit(s.X_train, s.y_train)
    y = np.searchsorted(plain.classes_, s.y_test)

    def loss(p):
        return -np.mean(np.log(np.clip(p[np.arange(y.size), y], 1e-15, 1)))

    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.naive_bayes import MultinomialNB

    p0, p1 = plain.predict_proba(s.X_test), calibrated.predict_proba(s.X_test)
    assert calibrated.calibration_.family != "identity"
    # Better than scikit-learn's naive Bayes calibrated by 5-fold CV, with one fit.
    best_ccv = min(
        loss(CalibratedClassifierCV(MultinomialNB(), method=m, cv=5).fit(s.X_train, s.y_train).predict_proba(s.X_test))
        for m in ("sigmoid", "isotonic")
    )
    assert loss(p1) < best_ccv < loss(p0)
    # accuracy: at most half a point lower than the model as written
    assert np.mean(p1.argmax(1) == y) >= np.mean(p0.argmax(1) == y) - 0.005


def test_semi_supervised_map_belongs_to_the_final_model():
    rng = np.random.default_rng(8)
    X, y = _counts(rng, n=120, f=10, k=2)
    y_semi = y.copy()
    y_semi[40:] = -1
    semi = bayesnb.SemiSupervisedNB(bayesnb.MultinomialNB(calibrate="loo")).fit(X, y_semi)
    final = semi.estimator_
    terms = final.loo_terms(X[:40], y[:40])
    want = cal.choose(_loo.log_proba(terms), terms.y_index, estimate=final.estimate)
    assert final.calibration_.family == want.family and final.calibration_.scale == want.scale
    raw = copy.copy(final)
    raw.calibrate = None  # the same fitted model, as written
    np.testing.assert_allclose(
        semi.predict_log_proba(X), cal.apply(want, raw.predict_log_proba(X)), rtol=1e-12, atol=1e-12
    )


def test_bayesnb_loo_scores_the_model_as_written():
    est, X, y = CASES["multinomial"]
    plain = clone(est).fit(X, y)
    calibrated = clone(est).set_params(calibrate="loo").fit(X, y)
    a, b = bayesnb.loo(plain, X, y), bayesnb.loo(calibrated, X, y)
    np.testing.assert_array_equal(np.asarray(a["loo_i"]), np.asarray(b["loo_i"]))
    assert a["p_loo"] == pytest.approx(b["p_loo"], rel=1e-12)
