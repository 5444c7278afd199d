"""bayesnb.analysis.plots: headless matplotlib figures whose drawn data are the library's numbers.

Each plot is checked against the quantity it claims to show: the reliability points are
the confidence bins of bayesnb.analysis.comparison.reliability_bins, the top-feature bars are the
posterior intervals of bayesnb.analysis.uncertainty.top_features, the histogram counts every row,
and the drawn decision boundary of a Gaussian classifier lies on its analytic line (shared
covariance) or conic (full covariance), seed 002's LDA/QDA.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from numpy.testing import assert_allclose

from bayesnb import BernoulliNB, GaussianBayesClassifier, MultinomialNB, compare
from bayesnb.analysis import plots
from bayesnb.analysis.comparison import reliability_bins
from bayesnb.analysis.uncertainty import decompose_uncertainty, top_features


def _counts(n=90, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat(["a", "b", "c"], n // 3)
    rates = {"a": [3, 1, 1, 1, 2], "b": [1, 3, 1, 2, 1], "c": [1, 1, 3, 1, 1]}
    X = np.stack([rng.poisson(rates[c]) for c in y])
    return X, y


def _gaussians(seed=2, n=60):
    rng = np.random.default_rng(seed)
    X = np.vstack(
        [
            rng.multivariate_normal([0, 0], [[1, 0.6], [0.6, 1]], n),
            rng.multivariate_normal([2.5, 1], [[0.4, 0], [0, 2]], n),
        ]
    )
    return X, np.repeat(["p", "q"], n)


def test_import_bayesnb_stays_light_and_plots_need_no_pyplot():
    code = (
        "import sys, bayesnb\n"
        # (pandas may be there: scikit-learn >= 1.9 imports it when installed)
        "assert 'matplotlib' not in sys.modules and 'arviz' not in sys.modules, 'heavy import'\n"
        "import numpy as np\n"
        "from bayesnb import MultinomialNB, plots\n"
        "X = np.array([[3, 0], [2, 1], [0, 3], [1, 2]]); y = [0, 0, 1, 1]\n"
        "ax = plots.reliability_diagram(MultinomialNB().fit(X, y), X, y)\n"
        "ax.figure.savefig(sys.argv[1])\n"
        "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot imported'\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp"}  # no DISPLAY, no MPLBACKEND
    out = subprocess.run(
        [sys.executable, "-c", code, "/tmp/bayesnb-headless-test.png"], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr


def test_reliability_diagram_draws_the_confidence_bins():
    X, y = _counts()
    X = np.column_stack([X, np.zeros(len(X), int)])  # a word never seen: MAP undefined at alpha < 1
    clf = MultinomialNB(alpha=0.5).fit(X[::2], y[::2])
    ax = plots.reliability_diagram(clf, X[1::2], y[1::2], n_bins=8)
    lines = {line.get_label().split(" ")[0]: line for line in ax.get_lines()}
    assert set(lines) == {"calibrated", "mle", "map:", "mean", "predictive"}  # "map: n/a" (alpha < 1)
    for estimate in ("mle", "mean", "predictive"):
        proba = clf.set_params(estimate=estimate).predict_proba(X[1::2])
        count, conf, acc, ece = reliability_bins(y[1::2], proba, clf.classes_, n_bins=8)
        used = count > 0
        assert_allclose(lines[estimate].get_xdata(), conf[used])
        assert_allclose(lines[estimate].get_ydata(), acc[used])
        assert f"ECE {ece:.3f}" in lines[estimate].get_label()
    assert clf.set_params(estimate="predictive").estimate == "predictive"


def test_top_features_draws_the_posterior_intervals():
    X, y = _counts()
    clf = MultinomialNB().fit(X, y)
    names = ["win", "cash", "lunch", "home", "free"]
    ax = plots.top_features(clf, "a", 3, feature_names=names, n_draws=40, random_state=0, level=0.8)
    top = top_features(clf, "a", 3, n_draws=40, random_state=0, level=0.8)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == [names[f] for f in top.feature]  # ticks from the top down: the best first
    assert [t.get_position()[1] for t in ax.get_yticklabels()] == [2, 1, 0]
    (points,) = [line for line in ax.get_lines() if line.get_marker() == "o"]
    assert_allclose(points.get_xdata(), top.median)
    # The error bars span the credible intervals.
    segments = ax.collections[0].get_segments()
    assert_allclose([s[0][0] for s in segments], top.lower)
    assert_allclose([s[1][0] for s in segments], top.upper)
    with pytest.raises(ValueError, match="feature_names"):
        plots.top_features(clf, "a", 3, feature_names=names[:2], n_draws=40)


def test_uncertainty_histogram_counts_every_row():
    X, y = _counts()
    clf = BernoulliNB().fit(X[:30], y[:30])
    u = decompose_uncertainty(clf, X, n_draws=40, random_state=0)
    ax = plots.uncertainty_histogram(decomposition=u, bins=12)
    assert len(ax.patches) == 3
    for patch, part in zip(ax.patches, ("total", "aleatoric", "epistemic")):
        assert part in [t.get_text().split(" ")[0] for t in ax.get_legend().get_texts()]
    same = plots.uncertainty_histogram(clf, X, n_draws=40, random_state=0, components=("epistemic",))
    assert len(same.patches) == 1
    with pytest.raises(ValueError, match="decomposition"):
        plots.uncertainty_histogram()
    with pytest.raises(ValueError, match="component"):
        plots.uncertainty_histogram(decomposition=u, components=("noise",))


def _boundary_vertices(ax, colour):
    pts = []
    for coll in ax.collections:
        if hasattr(coll, "get_paths") and hasattr(coll, "levels"):
            if np.allclose(to_rgba(coll.get_edgecolor()[0]), to_rgba(colour)):
                for path in coll.get_paths():
                    pts.append(path.vertices)
    return np.vstack(pts)


def test_shared_covariance_boundary_is_the_lda_line():
    X, y = _gaussians()
    clf = GaussianBayesClassifier(covariance="shared", estimate="mean").fit(X, y)
    ax = plots.decision_boundary(clf, X, y, resolution=200)
    pts = _boundary_vertices(ax, "k")
    assert pts.shape[0] > 50
    coef, intercept = clf.coef_[0], clf.intercept_[0]
    # The tie contour of the predicted probabilities lies on coef . x + intercept = 0,
    # up to the grid's interpolation (a fraction of one cell).
    cell = np.ptp(X, axis=0).max() * 1.2 / 199
    distance = np.abs(pts @ coef + intercept) / np.linalg.norm(coef)
    assert distance.max() < 0.05 * cell
    assert "linear boundary" in ax.get_title()


def test_full_covariance_boundary_is_the_qda_conic():
    X, y = _gaussians()
    clf = GaussianBayesClassifier(covariance="full", estimate="mean").fit(X, y)
    ax = plots.decision_boundary(clf, X, y, resolution=200)
    pts = _boundary_vertices(ax, "k")
    A, b, c = clf.quadratic_
    Q, lin, const = A[1] - A[0], b[1] - b[0], c[1] - c[0]
    value = np.einsum("ni,ij,nj->n", pts, Q, pts) + pts @ lin + const
    gradient = np.linalg.norm(2 * pts @ Q + lin, axis=1)
    cell = np.ptp(X, axis=0).max() * 1.2 / 199
    assert np.max(np.abs(value) / gradient) < 0.05 * cell
    # Genuinely curved: the conic's quadratic part does not vanish along the boundary.
    assert np.abs(np.einsum("ni,ij,nj->n", pts, Q, pts)).max() > 0.5
    assert "quadratic boundary" in ax.get_title()
    # The analytic overlay is drawn (white, dotted) on the same curve.
    overlay = _boundary_vertices(ax, "w")
    value = np.einsum("ni,ij,nj->n", overlay, Q, overlay) + overlay @ lin + const
    assert np.max(np.abs(value) / np.linalg.norm(2 * overlay @ Q + lin, axis=1)) < 0.05 * cell


def test_decision_boundary_draws_on_a_given_axes_and_checks_its_input():
    X, y = _gaussians()
    clf = GaussianBayesClassifier(covariance="shared").fit(X, y)  # Student-t predictive
    ax = Figure().add_subplot()
    assert plots.decision_boundary(clf, X, ax=ax) is ax
    assert "Student-t predictive" in ax.get_title()
    X3 = np.column_stack([X, X[:, 0]])
    with pytest.raises(ValueError, match="two features"):
        plots.decision_boundary(GaussianBayesClassifier().fit(X3, y), X3)
    with pytest.raises(TypeError, match="Axes"):
        plots.reliability_diagram(MultinomialNB().fit(*_counts()), *_counts(), ax="not an axes")


def test_learning_curve_plots_every_estimate_against_size():
    X, y = _counts(n=150)
    order = np.random.default_rng(0).permutation(150)
    X, y = np.column_stack([X, np.zeros(150, int)])[order], y[order]
    result = compare(
        MultinomialNB(alpha=0.5), X[:90], y[:90], X[90:], y[90:], train_sizes=[9, 30, 90], n_repeats=2,
        n_bootstrap=50, as_frame=False,
    )
    ax = plots.learning_curve(result, "brier")
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == {"mle", "map: n/a", "mean", "predictive"}
    assert_allclose(lines["mean"].get_xdata(), [9, 30, 90])
    assert_allclose(lines["mean"].get_ydata(), [result.row(s, "mean")["brier"] for s in (9, 30, 90)])
    with pytest.raises(ValueError, match="train_sizes"):
        plots.learning_curve(compare(MultinomialNB(), X[:90], y[:90], X[90:], y[90:], n_bootstrap=0, as_frame=False))
    with pytest.raises(ValueError, match="metric"):
        plots.learning_curve(result, "auc")
