"""Issue 15: reliability diagrams neither hide one series under another nor zig-zag through
bins of one to three rows. Oracle: the rows themselves, sorted by confidence (a merged
group of adjacent bins is a run of rows in confidence order).

Issue 38 changed the merging rule (a full bin is never merged; a sparse run short of
min_count stays its own, hollow, point; impossible rows are drawn apart):
test_reliability_r3c.py tests that rule. On the data here every sparse run reaches
min_count, so the groups below all hold at least 10 rows under either rule."""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from bayesnb import BernoulliNB, MultinomialNB  # noqa: E402
from bayesnb.analysis import plots  # noqa: E402


def _data(seed=0, n=160):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, "a", "b")
    X = rng.poisson(np.where((y == "a")[:, None], [3.0, 1.0, 2.0, 0.5], [1.0, 2.5, 1.5, 1.0]))
    return X, y


def test_groups_hold_min_count_rows_and_are_the_rows_mean_confidence_and_accuracy():
    X, y = _data()
    clf = MultinomialNB(alpha=2.0).fit(X[:80], y[:80])  # alpha = 2: MAP differs from MLE
    ax = plots.reliability_diagram(clf, X[80:], y[80:], n_bins=15, min_count=10, estimates=("predictive",))
    line = [ln for ln in ax.get_lines() if ln.get_label().startswith("predictive")][0]
    counts = [int(t.get_text()) for t in ax.texts]
    assert sum(counts) == 80 and min(counts) >= 10
    proba = clf.predict_proba(X[80:])
    conf = proba.max(axis=1)
    correct = clf.classes_[proba.argmax(axis=1)] == y[80:]
    bins = np.clip(np.ceil(conf * 15).astype(int) - 1, 0, 14)
    order = np.argsort(bins, kind="stable")
    edges = np.cumsum([0] + counts)
    # Each group is a run of whole bins in confidence order.
    for a, b in zip(edges[:-1], edges[1:]):
        rows = order[a:b]
        assert a == 0 or bins[order[a - 1]] < bins[order[a]]
        assert line.get_xdata()[list(edges).index(a)] == pytest.approx(conf[rows].mean(), rel=1e-12)
        assert line.get_ydata()[list(edges).index(a)] == pytest.approx(correct[rows].mean(), rel=1e-12)


def test_identical_series_are_drawn_once_and_labelled_together():
    X, y = _data(1)
    # Bernoulli: the predictive is the posterior-mean plug-in, exactly; alpha = 1: MAP = MLE.
    clf = BernoulliNB(alpha=1.0).fit(X[:80] > 1, y[:80])
    ax = plots.reliability_diagram(clf, X[80:] > 1, y[80:])
    labels = [ln.get_label().split(" (")[0] for ln in ax.get_lines()]
    assert labels == ["calibrated", "mle = map", "mean = predictive"]


def test_min_count_is_checked():
    X, y = _data()
    clf = MultinomialNB().fit(X, y)
    with pytest.raises(ValueError, match="min_count must be a positive integer"):
        plots.reliability_diagram(clf, X, y, min_count=0)
