"""Issue 15: the MLE must not look best because of predict's fallback.

A test row impossible under every class (under the MLE: a word the training documents of
every class lack) gets the class proportions from ``predict_proba``; scoring them gave
the MLE the lowest log loss on SMS-like data. ``compare`` reports its log loss as
infinite, with the count of such rows. Oracle: the rows found by brute force from the
training counts (a row is impossible under class c iff it holds a word of zero count in
c), and scikit-learn's log loss where no row is impossible.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import log_loss

from bayesnb import MultinomialNB, compare


@pytest.fixture(scope="module")
def sms_small(sms_counts):
    s = sms_counts
    X_train, y_train = s.X_train[:300].toarray(), np.asarray(s.y_train[:300])
    X_test, y_test = s.X_test[:300].toarray(), np.asarray(s.y_test[:300])
    return X_train, y_train, X_test, y_test


def _impossible_under_mle(X_train, y_train, X_test):
    dead = np.ones(X_test.shape[0], dtype=bool)
    for c in np.unique(y_train):
        unseen = X_train[y_train == c].sum(axis=0) == 0
        dead &= (X_test[:, unseen] > 0).any(axis=1)
    return dead


def test_mle_log_loss_is_infinite_with_the_count_of_impossible_rows(sms_small):
    X_train, y_train, X_test, y_test = sms_small
    dead = _impossible_under_mle(X_train, y_train, X_test)
    assert 0 < dead.sum() < len(dead)
    table = compare(MultinomialNB(), X_train, y_train, X_test, y_test, n_bootstrap=200, random_state=0, as_frame=False)
    mle, pred = table.row("mle"), table.row("predictive")
    assert mle["zero_likelihood_rows"] == dead.sum()
    assert mle["log_loss"] == np.inf and mle["log_loss_diff"] == np.inf
    # The old number scored the fallback: finite, as if the MLE had an answer for those rows.
    fallback = MultinomialNB(estimate="mle").fit(X_train, y_train)
    with pytest.warns(Warning):
        old = log_loss(y_test, fallback.predict_proba(X_test), labels=fallback.classes_)
    assert np.isfinite(old)
    # The predictive has no impossible row; its log loss is scikit-learn's on its probabilities.
    clf = MultinomialNB().fit(X_train, y_train)
    assert pred["zero_likelihood_rows"] == 0
    assert pred["log_loss"] == pytest.approx(log_loss(y_test, clf.predict_proba(X_test), labels=clf.classes_), rel=1e-10)
    # Accuracy still scores predict (fallback included).
    assert mle["accuracy"] == pytest.approx(np.mean(fallback.predict(X_test) == y_test), rel=1e-12)
    # Without the impossible rows the MLE's log loss is finite again: only they make it infinite.
    keep = ~dead
    again = compare(MultinomialNB(), X_train, y_train, X_test[keep], y_test[keep], estimates=("mle",), reference=None, n_bootstrap=0,
                    as_frame=False)
    assert np.isfinite(again.row("mle")["log_loss"]) and again.row("mle")["zero_likelihood_rows"] == 0


def test_learning_curve_and_tables_say_infinite(sms_small):
    import matplotlib

    matplotlib.use("Agg")
    from bayesnb.analysis.comparison import format_comparison
    from bayesnb.analysis.plots import learning_curve

    X_train, y_train, X_test, y_test = sms_small
    curve = compare(MultinomialNB(), X_train, y_train, X_test, y_test, estimates=("mle", "predictive"),
                    train_sizes=[50, 300], n_repeats=2, n_bootstrap=50, random_state=0, as_frame=False)
    assert all(r["log_loss"] == np.inf for r in curve.records if r["estimate"] == "mle")
    assert all(np.isfinite(r["log_loss"]) for r in curve.records if r["estimate"] == "predictive")
    ax = learning_curve(curve, "log_loss")
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels == ["mle (infinite at 50, 300 rows)", "predictive"]
    text = format_comparison(curve, intervals=True)
    assert "inf" in text
