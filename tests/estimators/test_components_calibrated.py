"""SemiSupervisedNB(n_components > 1) with ``calibrate="loo"`` on the wrapped estimator (issue 37).

The map is fitted to the labelled rows' leave-one-out class probabilities with the
responsibilities held (an approximate leave-one-out, which ``calibration_approximations_``
says). Oracle: a brute-force refit per labelled row, written here from the definition:
the component estimator conditioned on the statistics of every (row, component) copy
at its fitted responsibility except the row's own (``with_stats``), its components'
weights recomputed from those counts (the free Dirichlet's, or, with fixed class
proportions, the shares' from a NumPy formula), the class's mixture tempered. The
scores the map was fitted to equal it to 1e-9, and the map equals
``calibration.choose`` on them; planted errors (no downdate, the downdate on another
component of the class) fail.
"""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.exceptions import ConvergenceWarning
from test_components_fixed_tempered import _within

import bayesnb
from bayesnb import MultinomialNB, SemiSupervisedNB
from bayesnb.analysis import calibration
from bayesnb.estimators import semi_supervised as ss


def _data(seed=0, length=6, n=120):
    """Two classes, each two sub-topics, every word repeated 4 times (an overconfident naive Bayes)."""
    rng = np.random.default_rng(seed)
    sub = rng.integers(0, 4, n)
    sub[:4] = np.arange(4)
    centres = rng.dirichlet(np.full(6, 1.0), 4)
    X = np.hstack([np.vstack([rng.multinomial(length, centres[s]) for s in sub])] * 4)
    y = sub // 2
    hidden = y.copy()
    hidden[4 + rng.permutation(n - 4)[:60]] = -1
    return X, hidden


CASES = {
    "em": ("em", {}),
    "vb": ("vb", {}),
    "em-fixed-tempered": ("em", {"class_prior": [0.3, 0.7], "temperature": 2.0}),
    "vb-fixed-tempered": ("vb", {"fit_prior": False, "temperature": 3.0}),
}


def _fit(case, calibrate="loo", spy=None, **kwargs):
    method, options = CASES[case]
    X, y = _data()
    clf = SemiSupervisedNB(MultinomialNB(calibrate=calibrate, **options), method=method, n_components=2,
                           unlabelled_weight=1.0, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y)
    return clf, X, y


def _brute_force_loo(clf, X, y, options):
    """Each labelled row's class log-probabilities with its copies removed and every responsibility held."""
    est = clf.estimator_
    cc, R = clf.component_class_, clf.component_responsibilities_
    W = R * np.where(y == -1, clf.unlabelled_weight_, 1.0)[:, None]
    Xv = est.validate_input(X)
    T = options.get("temperature", 1.0)
    fixed = "class_prior" in options or options.get("fit_prior") is False
    pi = np.asarray(options.get("class_prior", [0.5, 0.5]))
    out = []
    for i in np.flatnonzero(y != -1):
        Wi = W.copy()
        Wi[i] = 0.0  # unit weights: the whole row leaves
        rows, comps = np.nonzero(Wi > 0)
        ref = est.with_stats(est.validated_stats(Xv[rows], comps, Wi[rows, comps]))
        ll = ref.predict_joint_log_proba(X[i : i + 1])[0] - ref.class_log_prior_
        if fixed:
            counts = np.bincount(comps, weights=Wi[rows, comps], minlength=cc.size)
            log_w = _within(np.ones(cc.size), counts, cc, np.log(pi), "mean")
        else:
            log_w = np.asarray(ref.class_log_prior_, dtype=float)  # the Dirichlet's, from the held counts
        lpc = np.array([logsumexp(log_w[cc == c]) for c in range(2)])
        joint = np.array([logsumexp((log_w + ll)[cc == c]) for c in range(2)])
        score = lpc + (joint - lpc) / T
        out.append(score - logsumexp(score))
    return np.array(out)


def _spy(monkeypatch):
    seen = {}
    original = calibration.choose

    def choose(log_proba, y_index, **kwargs):
        seen["log_proba"], seen["y_index"], seen["kwargs"] = np.array(log_proba), np.array(y_index), kwargs
        return original(log_proba, y_index, **kwargs)

    monkeypatch.setattr(ss._calibration, "choose", choose)
    return seen


@pytest.mark.parametrize("case", list(CASES))
def test_the_map_is_fitted_to_the_brute_force_leave_one_out_with_responsibilities_held(case, monkeypatch):
    seen = _spy(monkeypatch)
    clf, X, y = _fit(case)
    expected = _brute_force_loo(clf, X, y, CASES[case][1])
    np.testing.assert_allclose(seen["log_proba"], expected, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(seen["y_index"], y[y != -1])
    # The map is calibration.choose on those scores, recording the fit's estimate and temperature.
    again = calibration.choose(expected, y[y != -1], weight=np.ones(expected.shape[0]),
                               estimate=clf.estimator_.estimate, temperature=CASES[case][1].get("temperature", 1.0))
    assert clf.calibration_.family == again.family
    # Untempered, these overconfident scores need a map; tempered they are already near calibrated.
    assert (clf.calibration_.family != "identity") == ("temperature" not in CASES[case][1])
    np.testing.assert_allclose(clf.calibration_.scale, again.scale, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(clf.calibration_.offsets), np.asarray(again.offsets), rtol=1e-6, atol=1e-8)
    assert "responsibilities held" in clf.calibration_approximations_[0]


@pytest.mark.parametrize("case", ["em", "vb-fixed-tempered"])
def test_predictions_draws_and_a_model_file_apply_the_map(case):
    clf, X, y = _fit(case)
    plain, _, _ = _fit(case, calibrate=None)
    assert plain.calibration_ is None and plain.calibration_approximations_ == ()
    np.testing.assert_array_equal(clf.component_responsibilities_, plain.component_responsibilities_)
    expected = calibration.apply(clf.calibration_, plain.predict_log_proba(X))
    np.testing.assert_allclose(clf.predict_log_proba(X), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(clf.predict_proba(X), np.exp(expected), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[np.argmax(expected, axis=1)])
    draws = clf.predict_proba_draws(X[:6], 25, random_state=2)
    with np.errstate(divide="ignore"):
        expected_draws = np.exp(calibration.apply(clf.calibration_, np.log(plain.predict_proba_draws(X[:6], 25,
                                                                                                    random_state=2))))
    np.testing.assert_allclose(draws, expected_draws, rtol=1e-12, atol=1e-14)
    buf = io.BytesIO()
    clf.save(buf)
    buf.seek(0)
    back = bayesnb.load(buf)
    for field in clf.calibration_._fields:
        np.testing.assert_array_equal(np.asarray(getattr(back.calibration_, field)),
                                      np.asarray(getattr(clf.calibration_, field)))
    np.testing.assert_array_equal(back.predict_proba(X), clf.predict_proba(X))
    np.testing.assert_array_equal(back.predict_proba_draws(X[:6], 25, random_state=2), draws)
    assert back.calibration_approximations_ == clf.calibration_approximations_


def test_a_restored_state_without_its_map_or_with_another_temperature_is_refused():
    clf, X, y = _fit("em-fixed-tempered")
    make = lambda: SemiSupervisedNB(MultinomialNB(calibrate="loo", **CASES["em-fixed-tempered"][1]),  # noqa: E731
                                    n_components=2, unlabelled_weight=1.0)
    state = clf._saved_state()
    missing = {k: v for k, v in state.items() if k != "calibration_"}
    with pytest.raises(ValueError, match="fitted attributes"):
        make()._restore_state(missing)
    hot = dict(state, calibration_=clf.calibration_._replace(temperature=5.0))
    with pytest.raises(ValueError, match="calibration_ was fitted to"):
        make()._restore_state(hot)


def test_a_temperature_changed_after_fit_is_not_silently_mapped():
    clf, X, _ = _fit("em")
    clf.estimator.set_params(temperature=2.0)
    with pytest.raises(ValueError, match="call fit again"):
        clf.predict_proba(X)


@pytest.mark.parametrize("which", ["no downdate", "the class's other component"])
def test_planted_errors_in_the_leave_one_out_fail_the_oracle(which, monkeypatch):
    original = ss.SemiSupervisedNB._mixture_loo_log_proba

    def planted(self, cest, X_lab, XL, R_L, w_lab, shares, training_rows):
        if which == "no downdate":
            w_lab = np.zeros_like(w_lab)  # in-sample scores
        else:
            R_L = R_L[:, [1, 0, 3, 2]]  # row i's copies taken out of its class's other component
        return original(self, cest, X_lab, XL, R_L, w_lab, shares, training_rows)

    monkeypatch.setattr(ss.SemiSupervisedNB, "_mixture_loo_log_proba", planted)
    seen = _spy(monkeypatch)
    clf, X, y = _fit("em")
    expected = _brute_force_loo(clf, X, y, {})
    assert not np.allclose(seen["log_proba"], expected, rtol=1e-6, atol=1e-6)
