"""compare(calibrated=True, baselines=...): extra rows scored on the same folds as the estimates.

Oracle: the calibrated model and the scikit-learn baselines fitted by hand on the same
folds, their pooled out-of-fold probabilities scored with scikit-learn's log_loss.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.calibration import CalibratedClassifierCV
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import StratifiedKFold
from sklearn.naive_bayes import GaussianNB as SkGaussianNB

import bayesnb
from bayesnb.analysis.comparison import CALIBRATED


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 3)) + np.repeat([[0, 0, 0], [1.2, 0.4, 0], [0, 1.5, 0.8]], 50, axis=0)
    X[:, 2] = X[:, 1] * 0.9 + rng.normal(0, 0.2, 150)  # a correlated copy: overconfident NB
    return X, np.repeat(["a", "b", "c"], 50)


def test_cv_rows_equal_fits_by_hand(data):
    X, y = data
    base = {"sk": SkGaussianNB(), "sig": CalibratedClassifierCV(SkGaussianNB(), method="sigmoid", cv=3)}
    cv = StratifiedKFold(4, shuffle=True, random_state=1)
    table = bayesnb.compare(
        bayesnb.GaussianNB(), X, y, cv=cv, calibrated=True, baselines=base, n_bootstrap=0, as_frame=False
    )
    names = [r["estimate"] for r in table.records]
    assert names == ["mle", "map", "mean", "predictive", CALIBRATED, "sk", "sig"]
    classes = np.unique(y)
    oof = {k: np.zeros((y.size, 3)) for k in ("cal", "sk", "sig")}
    for tr, te in cv.split(X, y):
        oof["cal"][te] = bayesnb.GaussianNB(calibrate="loo").fit(X[tr], y[tr]).predict_proba(X[te])
        for k, m in base.items():
            oof[k][te] = m.fit(X[tr], y[tr]).predict_proba(X[te])
    for label, key in ((CALIBRATED, "cal"), ("sk", "sk"), ("sig", "sig")):
        rec = table.row(label)
        assert rec["log_loss"] == pytest.approx(log_loss(y, oof[key], labels=classes), rel=1e-9)
        assert rec["accuracy"] == pytest.approx(accuracy_score(y, classes[oof[key].argmax(1)]))
    assert table.row("sk")["log_evidence"] is None and table.row(CALIBRATED)["log_evidence"] is not None
    # The estimates stay the model as written (an estimator given with calibrate="loo" too).
    again = bayesnb.compare(bayesnb.GaussianNB(calibrate="loo"), X, y, cv=cv, n_bootstrap=0, as_frame=False)
    assert again.row("predictive")["log_loss"] == pytest.approx(table.row("predictive")["log_loss"], rel=1e-12)


def test_holdout_baseline_equals_sklearn(data):
    X, y = data
    table = bayesnb.compare(
        bayesnb.GaussianNB(), X[::2], y[::2], X[1::2], y[1::2], baselines={"sk": SkGaussianNB()},
        n_bootstrap=0, as_frame=False,
    )
    p = SkGaussianNB().fit(X[::2], y[::2]).predict_proba(X[1::2])
    assert table.row("sk")["log_loss"] == pytest.approx(log_loss(y[1::2], p), rel=1e-9)


def test_bad_baselines_are_refused(data):
    X, y = data
    with pytest.raises(TypeError, match="dict"):
        bayesnb.compare(bayesnb.GaussianNB(), X, y, cv=3, baselines=[SkGaussianNB()])
    with pytest.raises(ValueError, match="other than the estimates"):
        bayesnb.compare(bayesnb.GaussianNB(), X, y, cv=3, baselines={"mean": SkGaussianNB()})
    fitted = bayesnb.GaussianNB().fit(X, y)
    with pytest.raises(ValueError, match="refit=False"):
        bayesnb.compare(fitted, None, None, X, y, refit=False, calibrated=True)


def test_fitted_model_with_extra_rows(data):
    X, y = data
    fitted = bayesnb.GaussianNB().fit(X[::2], y[::2])
    table = bayesnb.compare(
        fitted, X[::2], y[::2], X[1::2], y[1::2], refit=False, calibrated=True, n_bootstrap=0, as_frame=False
    )
    p = bayesnb.GaussianNB(calibrate="loo").fit(X[::2], y[::2]).predict_proba(X[1::2])
    assert table.row(CALIBRATED)["log_loss"] == pytest.approx(log_loss(y[1::2], p), rel=1e-9)
    assert table.row("predictive")["log_loss"] == pytest.approx(
        log_loss(y[1::2], fitted.predict_proba(X[1::2])), rel=1e-9
    )
