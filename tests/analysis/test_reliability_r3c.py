"""Issue 38 item 10: reliability diagrams draw every row, their labels fit in the figure,
and the ECE and Brier score cost an impossible row as the log loss does.

Supersedes the merging rule of test_reliability_min_count.py (issue 15), whose greedy
merge let a handful of sparse bins vanish into the one full bin (a diagram of a single
point on confident text data). Oracles: the rows themselves binned in NumPy, the rows
impossible under the MLE found by brute force from the training counts, and per-row loops
for the ECE and Brier score.
"""

from __future__ import annotations

import warnings

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from bayesnb import MultinomialNB, compare  # noqa: E402
from bayesnb.analysis import plots  # noqa: E402
from bayesnb.analysis.comparison import metric_values, reliability_bins  # noqa: E402


def _planted():
    """Class a 80% of training; test rows 40 live, 30 holding word 2, unseen in training.

    The 30 rows are impossible under the MLE; its fallback (the class proportions, 0.8 / 0.2)
    is almost perfectly calibrated on them (24 of 30 are a): the old ECE rewarded failing.
    """
    rng = np.random.default_rng(0)
    X_train = np.vstack([rng.poisson([3, 1, 0.0], size=(40, 3)), rng.poisson([1, 3, 0.0], size=(10, 3))])
    y_train = np.array(["a"] * 40 + ["b"] * 10)
    live = np.vstack([rng.poisson([3, 1, 0.0], size=(20, 3)), rng.poisson([1, 3, 0.0], size=(20, 3))])
    unseen = np.tile([0, 0, 1], (30, 1)) + rng.poisson([1, 1, 0], size=(30, 3))
    X_test = np.vstack([live, unseen])
    y_test = np.array(["a"] * 20 + ["b"] * 20 + ["a"] * 24 + ["b"] * 6)
    return X_train, y_train, X_test, y_test


def _impossible_under_mle(X_train, y_train, X_test):
    dead = np.ones(X_test.shape[0], dtype=bool)
    for c in np.unique(y_train):
        zero = X_train[y_train == c].sum(axis=0) == 0
        dead &= (X_test[:, zero] > 0).any(axis=1)
    return dead


def _ece_brute(y, proba, classes, dead, n_bins=15):
    """Loop over bins ((b-1)/M, b/M] of the scored rows; each impossible row adds 1/n."""
    n = len(y)
    total = 0.0
    for b in range(n_bins):
        lo, hi = b / n_bins, (b + 1) / n_bins
        gap = 0.0
        for i in range(n):
            conf = proba[i].max()
            if not dead[i] and ((lo < conf <= hi) or (b == 0 and conf <= hi)):
                gap += float(classes[int(np.argmax(proba[i]))] == y[i]) - conf
        total += abs(gap)
    return (total + dead.sum()) / n


def _brier_brute(y, proba, classes, dead):
    out = 0.0
    for i in range(len(y)):
        out += 2.0 if dead[i] else sum((proba[i, c] - float(classes[c] == y[i])) ** 2 for c in range(len(classes)))
    return out / len(y)


def _mle_proba(X_train, y_train, X_test):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ZeroLikelihoodWarning: the fallback is what we want here
        return MultinomialNB(estimate="mle").fit(X_train, y_train).predict_proba(X_test)


# ------------------------------------------------------------------------ bins


def test_sparse_bins_merge_with_each_other_never_into_a_full_bin():
    count = np.array([2.0, 1.0, 0.0, 3.0, 1.0] + [0.0] * 9 + [200.0])
    conf = np.array([0.52, 0.58, np.nan, 0.7, 0.75] + [np.nan] * 9 + [0.99])
    acc = np.array([0.5, 1.0, np.nan, 1 / 3, 0.0] + [np.nan] * 9 + [0.98])
    n, c, a = plots.merge_bins(count, conf, acc, 10)
    # The greedy merge of issue 15 gave one point of 207 rows; now the 7 sparse rows stay apart.
    assert n.tolist() == [7.0, 200.0]
    assert c[0] == pytest.approx((2 * 0.52 + 0.58 + 3 * 0.7 + 0.75) / 7, rel=1e-12)
    assert a[0] == pytest.approx((1 + 1 + 1 + 0) / 7, rel=1e-12)
    assert (c[1], a[1]) == (0.99, 0.98)


def test_merge_bins_counts_every_row_and_groups_are_runs_of_bins():
    rng = np.random.default_rng(4)
    for _ in range(30):
        count = rng.choice([0, 1, 2, 3, 5, 12, 40], size=15).astype(float)
        if count.sum() == 0:
            continue
        conf, acc = rng.random(15), rng.random(15)
        n, c, a = plots.merge_bins(count, conf, acc, 10)
        assert n.sum() == count.sum()
        # Walk the nonempty bins in order: each group is a run of them; a full bin is alone.
        bins = [i for i in range(15) if count[i] > 0]
        k = 0
        for total, gc, ga in zip(n, c, a):
            run = []
            while sum(count[run]) < total:
                run.append(bins[k])
                k += 1
            assert sum(count[run]) == total
            assert len(run) == 1 or all(count[i] < 10 for i in run)
            assert gc == pytest.approx(np.dot(count[run], conf[run]) / total, rel=1e-12)
            assert ga == pytest.approx(np.dot(count[run], acc[run]) / total, rel=1e-12)
        assert k == len(bins)


def test_diagram_draws_every_row_and_impossible_rows_apart():
    X_train, y_train, X_test, y_test = _planted()
    dead = _impossible_under_mle(X_train, y_train, X_test)
    assert dead.sum() == 30
    clf = MultinomialNB(alpha=1.0).fit(X_train, y_train)
    ax = plots.reliability_diagram(clf, X_test, y_test, estimates=("mle",), min_count=10)
    texts = [t.get_text() for t in ax.texts]
    assert f"{dead.sum()} impossible" in texts
    counts = [int(t.split()[0]) for t in texts]
    assert sum(counts) == len(y_test)  # every row counted, none dropped
    line = [ln for ln in ax.get_lines() if ln.get_label().startswith("mle")][0]
    assert f"{dead.sum()} impossible rows" in line.get_label()
    # The line's points are the scored rows only, merged as merge_bins says, from NumPy's bins.
    proba = _mle_proba(X_train, y_train, X_test)[~dead]
    conf = proba.max(axis=1)
    correct = clf.classes_[proba.argmax(axis=1)] == y_test[~dead]
    b = np.clip(np.ceil(conf * 15).astype(int) - 1, 0, 14)
    count = np.bincount(b, minlength=15).astype(float)
    with np.errstate(invalid="ignore"):
        cm = np.bincount(b, conf, 15) / count
        am = np.bincount(b, correct.astype(float), 15) / count
    n, c, a = plots.merge_bins(count, cm, am, 10)
    np.testing.assert_allclose(line.get_xdata(), c, rtol=1e-12)
    np.testing.assert_allclose(line.get_ydata(), a, rtol=1e-12)


def test_labels_and_legend_fit_inside_the_figure():
    # Confident rows put the largest point at confidence ~1, on the right edge.
    X_train, y_train, X_test, y_test = _planted()
    X_train, X_test, y_test = X_train * 6, np.tile(X_test * 6, (20, 1)), np.tile(y_test, 20)  # 4-digit counts
    clf = MultinomialNB(alpha=1.0).fit(X_train, y_train)
    ax = plots.reliability_diagram(clf, X_test, y_test, min_count=5)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = ax.figure
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    assert any(float(t.xy[0]) > 0.99 for t in ax.texts)  # there is a label at the right edge
    # Count labels inside the axes (the figure's edge cut them before: the label started right
    # of a point at confidence ~1 and ran off); legend and title inside the figure.
    for artists, box in ((ax.texts, ax.get_window_extent(renderer)), ([ax.get_legend(), ax.title], fig.bbox)):
        for artist in artists:
            ext = artist.get_window_extent(renderer)
            assert ext.x0 >= box.x0 - 0.5 and ext.x1 <= box.x1 + 0.5, artist
            assert ext.y0 >= box.y0 - 0.5 and ext.y1 <= box.y1 + 0.5, artist


# ------------------------------------------------------------------------- ECE


def test_planted_impossible_rows_no_longer_make_the_mle_look_calibrated():
    X_train, y_train, X_test, y_test = _planted()
    dead = _impossible_under_mle(X_train, y_train, X_test)
    classes = np.array(["a", "b"])
    table = compare(MultinomialNB(), X_train, y_train, X_test, y_test, estimates=("mle", "mean"), reference=None,
                    n_bootstrap=0, as_frame=False)
    mle, mean = table.row("mle"), table.row("mean")
    assert mle["zero_likelihood_rows"] == dead.sum() and mean["zero_likelihood_rows"] == 0
    fallback = _mle_proba(X_train, y_train, X_test)
    # The old number scored the fallback: better calibrated than the posterior mean.
    old = _ece_brute(y_test, fallback, classes, np.zeros(len(y_test), bool))
    assert old < 0.1 < mean["ece"]
    # Now: each impossible row costs 1, as the log loss costs it infinity.
    assert mle["ece"] == pytest.approx(_ece_brute(y_test, fallback, classes, dead), rel=1e-12)
    assert mle["brier"] == pytest.approx(_brier_brute(y_test, fallback, classes, dead), rel=1e-12)
    assert mle["ece"] > mean["ece"] and mle["brier"] > mean["brier"] and mle["log_loss"] == np.inf
    # The mean (no impossible row) is unchanged: the plain per-row formulas.
    mean_proba = MultinomialNB().fit(X_train, y_train).set_params(estimate="mean").predict_proba(X_test)
    assert mean["ece"] == pytest.approx(_ece_brute(y_test, mean_proba, classes, np.zeros(70, bool)), rel=1e-12)
    # Accuracy still scores predict's labels, fallback included.
    assert mle["accuracy"] == pytest.approx(np.mean(classes[fallback.argmax(axis=1)] == y_test), rel=1e-12)
    # The same number in reliability_bins and the diagram's legend.
    ece = reliability_bins(y_test, fallback, classes, impossible=dead)[3]
    assert ece == pytest.approx(mle["ece"], rel=1e-12)


def test_any_answer_for_an_impossible_row_scores_no_worse_than_failing():
    # The rule's point: the cost of an unscorable row bounds the cost of every answer.
    X_train, y_train, X_test, y_test = _planted()
    dead = _impossible_under_mle(X_train, y_train, X_test)
    classes = np.array(["a", "b"])
    proba = _mle_proba(X_train, y_train, X_test)
    failed = metric_values(y_test, proba, classes, impossible=dead)
    rng = np.random.default_rng(1)
    for _ in range(25):
        answered = proba.copy()
        answered[dead] = rng.dirichlet([0.3, 0.3], size=int(dead.sum()))
        m = metric_values(y_test, answered, classes)
        assert m["ece"] <= failed["ece"] + 1e-12 and m["brier"] <= failed["brier"] + 1e-12


def test_ece_and_brier_equal_brute_force_on_a_small_case():
    rng = np.random.default_rng(7)
    classes = np.array(["x", "y", "z"])
    proba = rng.dirichlet([0.5, 0.5, 0.5], size=60)
    proba[:3] = [1.0, 0.0, 0.0]  # confidence 1: the top bin
    proba[3] = [0.6, 0.4, 0.0]  # a bin edge (9/15)
    y = rng.choice(classes, size=60)
    dead = rng.random(60) < 0.2
    for mask in (dead, np.zeros(60, bool)):
        m = metric_values(y, proba, classes, impossible=mask)
        assert m["ece"] == pytest.approx(_ece_brute(y, proba, classes, mask), rel=1e-12)
        assert m["brier"] == pytest.approx(_brier_brute(y, proba, classes, mask), rel=1e-12)
        count, _, _, ece = reliability_bins(y, proba, classes, impossible=mask)
        assert count.sum() + mask.sum() == 60
        assert ece == pytest.approx(m["ece"], rel=1e-12)
    assert metric_values(y, proba, classes, impossible=dead)["log_loss"] == np.inf


def test_impossible_mask_is_checked():
    with pytest.raises(ValueError, match="impossible must be a boolean array of shape \\(2,\\)"):
        metric_values(["a", "b"], [[0.9, 0.1], [0.2, 0.8]], ["a", "b"], impossible=[1, 0])
