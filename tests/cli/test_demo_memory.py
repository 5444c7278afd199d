"""Memory of ``bayesnb demo`` (issue 38: its peak within a few times the training matrix).

* Scoring a learning curve: the demo's learning curve scores 144 predictions (9 training
  sizes x 5 repeats x 4 estimates, fewer at the full size) on the same test rows. Each
  prediction's row terms (n_rows x (3 + n_bins + 2 n_classes + 1) float64) are larger
  than its probabilities (n_rows x n_classes); they used to be built for every
  prediction at once and then stacked side by side (two copies), about 6x the
  probabilities at 20 classes. Scoring one prediction at a time keeps the peak well
  below the probabilities' own size.
* A fitted model scored at every estimate (what ``compare`` does, switching
  ``estimate``) keeps the parameters of one estimate, not one copy per estimate; the
  Bernoulli "predictive" (the posterior-mean plug-in) is the "mean" arrays themselves.
* The reference ``LogisticRegression`` of the report is solved with a bounded number of
  coefficient-sized arrays (lbfgs keeps 2 x 10 of them), at the same optimum.
* The demo lets a family's fitted model go once it is scored and drawn (only the first
  family's is read afterwards).

tracemalloc counts NumPy's allocations exactly (no allocator retention, no other
process), so the bounds do not depend on the machine; each margin is wide against the
old behaviour (figures in each test).
"""

import gc
import tracemalloc
import weakref

import numpy as np
import pytest
import scipy.sparse as sp

from bayesnb import BernoulliNB, MultinomialNB
from bayesnb.analysis import comparison as C

ESTIMATES = ("mle", "map", "mean", "predictive")


def _groups(n_rows, n_classes, sizes, repeats, seed=0):
    rng = np.random.default_rng(seed)
    groups = {}
    for size in sizes:
        runs = []
        for _ in range(repeats):
            run = {}
            for e in ESTIMATES:
                proba = rng.dirichlet(np.full(n_classes, 0.3), n_rows)
                dead = np.zeros(n_rows, dtype=bool)
                run[e] = C._Prediction(proba, 0, None, dead)
            runs.append(run)
        groups[(size,)] = runs
    return groups, rng.integers(0, n_classes, n_rows)


def test_learning_curve_scoring_peak_below_the_probabilities():
    groups, y_index = _groups(n_rows=2000, n_classes=20, sizes=range(6), repeats=5)
    proba_bytes = sum(p.proba.nbytes for runs in groups.values() for run in runs for p in run.values())
    evidences = {k: [0.0] * 5 for k in groups}
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        records = C._score(
            groups, evidences, ESTIMATES, y_index, 15, 300, 0.95, "predictive", np.random.default_rng(0),
            ["train_size", "estimate"],
        )
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert len(records) == 6 * 4
    assert peak < 1.0 * proba_bytes, f"peak {peak / 2**20:.1f} MiB, probabilities {proba_bytes / 2**20:.1f} MiB"


def test_scoring_one_prediction_at_a_time_matches_metric_values():
    # The point values are the metrics of each prediction averaged over the repeats
    # (metric_values is an independent path: one _RowTerms per call, no bootstrap).
    groups, y_index = _groups(n_rows=300, n_classes=4, sizes=(1, 2), repeats=3, seed=1)
    classes = np.arange(4)
    records = C._score(
        groups, {k: [0.0] * 3 for k in groups}, ESTIMATES, y_index, 15, 50, 0.95, "predictive",
        np.random.default_rng(0), ["train_size", "estimate"],
    )
    for rec in records:
        runs = groups[(rec["train_size"],)]
        expect = [C.metric_values(y_index, run[rec["estimate"]].proba, classes) for run in runs]
        for m in C.METRICS:
            assert rec[m] == pytest.approx(np.mean([e[m] for e in expect]), rel=1e-12)
            assert rec[f"{m}_lo"] <= rec[f"{m}_hi"]


# ------------------------------------------------------- a fitted model's parameters
def _binary_rows(n, n_features, n_classes, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.csr_matrix((rng.random((n, n_features)) < 0.02).astype(np.int64))
    return X, rng.integers(0, n_classes, n)


def test_bernoulli_predictive_is_the_mean_arrays_not_a_copy():
    X, y = _binary_rows(200, 500, 4)
    clf = BernoulliNB().fit(X, y)
    mean = clf.set_params(estimate="mean").feature_log_prob_
    predictive = clf.set_params(estimate="predictive").feature_log_prob_
    # Same values (the Bernoulli predictive of one row is the posterior-mean plug-in) ...
    np.testing.assert_array_equal(predictive, BernoulliNB(estimate="mean").fit(X, y).feature_log_prob_)
    # ... held once.
    assert np.shares_memory(mean, predictive)


def test_scoring_every_estimate_keeps_one_estimates_parameters():
    # compare switches a fitted model through the four estimates. Measured: 1.8x one
    # estimate's parameters stay allocated after it (those of the estimate in use and the
    # transposed weights the sparse product derives from them); 4.3x when every estimate
    # kept its own copy, "predictive" a second copy of "mean".
    n_classes, n_features = 10, 4000
    X, y = _binary_rows(400, n_features, n_classes)
    clf = BernoulliNB().fit(X, y)
    clf.predict_proba(X[:5])  # the estimate in use, computed before the measurement
    one = n_classes * n_features * 2 * 8  # log P(x_j = 0), log P(x_j = 1) per class and feature
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        out = C._predict_all(clf, X, ESTIMATES)
        kept = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    kept -= sum(p.proba.nbytes + p.dead.nbytes for p in out.values())
    assert clf.estimate == "predictive"
    assert kept < 2.5 * one, f"{kept / one:.2f}x one estimate's parameters stay allocated"
    # Switching back recomputes the same numbers.
    for e in ESTIMATES:
        clf.set_params(estimate=e)
        np.testing.assert_allclose(np.exp(C.log_normalize(clf.predict_joint_log_proba(X), clf.class_log_prior_)[0]),
                                   out[e].proba, rtol=1e-12, atol=1e-300)
    clf.set_params(estimate="predictive")


# ------------------------------------------------------- the reference LogisticRegression
def test_reference_logistic_regression_is_memory_bounded_at_the_same_optimum():
    from sklearn.base import clone
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MaxAbsScaler

    from bayesnb.cli.report import baselines

    rng = np.random.default_rng(0)
    n, n_features, n_classes = 800, 3000, 15
    y = rng.integers(0, n_classes, n)
    topics = rng.dirichlet(np.full(n_features, 0.05), n_classes)
    X = sp.csr_matrix(np.vstack([rng.multinomial(40, topics[c]) for c in y]))
    coef = n_classes * (n_features + 1) * 8
    model = clone(baselines(MultinomialNB())["LogisticRegression (ref)"])
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        model.fit(X, y)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    # Measured: Newton-CG 14x the coefficients; lbfgs (scikit-learn's default) 41x.
    assert peak < 20 * coef, f"peak {peak / coef:.1f}x the coefficients"
    # The same model: L2-penalised multinomial logistic regression (C = 1) on max-abs
    # scaled counts, whose unique optimum lbfgs reaches at a tight tolerance.
    oracle = make_pipeline(MaxAbsScaler(), LogisticRegression(max_iter=10_000, tol=1e-10)).fit(X, y)
    np.testing.assert_allclose(model.predict_proba(X), oracle.predict_proba(X), atol=1e-5)


# ---------------------------------------------------------------- the demo itself
def test_demo_lets_a_scored_family_go_before_the_report(tmp_path, monkeypatch):
    from bayesnb.cli import report as R
    from bayesnb.cli.command import main

    path = tmp_path / "corpus.tsv"
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(40)]
    lines = [f"{'ab'[i % 2]}\t{' '.join(rng.choice(words[(i % 2) * 20:(i % 2) * 20 + 25], 6))}" for i in range(60)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    models, alive_at_report = {}, {}
    text_problem, write_report = R.text_problem, R.write_report

    def watched_problem(args):
        problem = text_problem(args)
        models.update((name, weakref.ref(clf)) for name, clf, _, _ in problem.families)
        return problem

    def watched_report(*args, **kwargs):
        gc.collect()
        alive_at_report.update((name, ref() is not None) for name, ref in models.items())
        return write_report(*args, **kwargs)

    monkeypatch.setattr(R, "text_problem", watched_problem)
    monkeypatch.setattr(R, "write_report", watched_report)
    assert main(["demo", "--data", str(path), "--out", str(tmp_path / "report")]) == 0
    # The multinomial model is the first family: the learning curve, the posterior
    # uncertainty and the top features read it. The Bernoulli model was kept to the end.
    assert alive_at_report == {"multinomial": True, "bernoulli": False}
    assert (tmp_path / "report" / "reliability_bernoulli.png").stat().st_size > 0
