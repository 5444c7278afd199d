"""``bayesnb predict`` on labelled rows scores a row impossible under every class as
``compare`` does (issue 38 item 10: the fallback's probabilities are not an answer).

Oracle: :func:`bayesnb.analysis.comparison.metric_values` with the impossible rows named,
on the library's own predictions of the same model.
"""

from __future__ import annotations

import csv
import warnings

import numpy as np

import bayesnb
from bayesnb.analysis.comparison import metric_values
from _cli import run
from bayesnb.exceptions import ZeroLikelihoodWarning


def _write(path, rows):
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["colour", "size", "label"])
        w.writerows(rows)


def test_predict_scores_impossible_rows_as_compare_does(tmp_path):
    # Under the MLE, 'green' was seen only in class a and 'large' only in class b: a
    # green large row is impossible under both classes.
    train = [("red", "small", "a"), ("green", "small", "a"), ("red", "small", "a"),
             ("red", "large", "b"), ("blue", "large", "b"), ("blue", "small", "b")]
    test = [("green", "large", "a"), ("red", "small", "a"), ("blue", "large", "b"), ("green", "large", "b")]
    _write(tmp_path / "train.csv", train)
    _write(tmp_path / "test.csv", test)
    model = tmp_path / "m.npz"
    assert run(["fit", tmp_path / "train.csv", "--model", model, "--family", "categorical"])[0] == 0
    code, out, err = run(["predict", tmp_path / "test.csv", "--model", model, "--estimate", "mle"])
    assert code == 0, err

    clf = bayesnb.load(model).set_params(estimate="mle")
    codes = {"colour": {"blue": 0, "green": 1, "red": 2}, "size": {"large": 0, "small": 1}}
    X = np.array([[codes["colour"][c], codes["size"][s]] for c, s, _ in test])
    y = np.array([lab for *_, lab in test])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ZeroLikelihoodWarning)
        proba = clf.predict_proba(X)
        impossible = np.isneginf(clf.predict_joint_log_proba(X)).all(axis=1)
    assert impossible.tolist() == [True, False, False, True]
    m = metric_values(y, proba, clf.classes_, impossible=impossible)
    assert m["log_loss"] == np.inf
    assert f"4 labelled rows: accuracy {m['accuracy']:.4f}, log loss inf (estimate='mle')" in err
    assert "2 of them impossible under every class" in err
    # Without the rule the fallback would have scored a finite log loss.
    assert np.isfinite(metric_values(y, proba, clf.classes_)["log_loss"])
