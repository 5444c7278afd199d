"""bayesnb.compare: metrics per estimate, bootstrap intervals, modes, undefined estimates.

Oracles: scikit-learn's metrics (accuracy_score, log_loss, brier_score_loss with
scale_by_half=False, f1_score(average="macro")) and scikit-learn's own naive Bayes on the
SMS corpus for estimate="mean" with the empirical class prior (the same model); a plain
loop for the expected calibration error; the binomial standard error for the bootstrap.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn import metrics
from sklearn.model_selection import StratifiedKFold, train_test_split

from bayesnb import BernoulliNB, CategoricalNB, GaussianNB, MultinomialNB, compare
from bayesnb.analysis.comparison import (
    METRICS,
    ComparisonTable,
    format_comparison,
    metric_values,
    reliability_bins,
)


def ece_loop(y_true, proba, classes, n_bins=15):
    """ECE written out: bins ((b-1)/M, b/M], |accuracy - confidence| weighted by bin size."""
    classes = list(classes)
    total = 0.0
    n = len(y_true)
    for b in range(1, n_bins + 1):
        members = []
        for i in range(n):
            conf = max(proba[i])
            lo, hi = (b - 1) / n_bins, b / n_bins
            if (lo < conf <= hi) or (b == 1 and conf <= hi):
                members.append(i)
        if members:
            acc = np.mean([classes[int(np.argmax(proba[i]))] == y_true[i] for i in members])
            conf = np.mean([max(proba[i]) for i in members])
            total += len(members) / n * abs(acc - conf)
    return total


def sklearn_metrics(y, proba, classes):
    pred = np.asarray(classes)[np.argmax(proba, axis=1)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # undefined F1 of a class absent everywhere
        return {
            "accuracy": metrics.accuracy_score(y, pred),
            "log_loss": metrics.log_loss(y, proba, labels=classes),
            "brier": metrics.brier_score_loss(y, proba, labels=classes, scale_by_half=False),
            "ece": ece_loop(list(y), proba, classes),
            "macro_f1": metrics.f1_score(y, pred, labels=classes, average="macro"),
        }


# --------------------------------------------------------------------- the metrics


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_metric_values_equal_scikit_learn(seed):
    rng = np.random.default_rng(seed)
    classes = np.array(["a", "b", "c", "d"])
    n = 200
    proba = rng.dirichlet([0.3, 0.5, 1.0, 0.2], size=n)
    proba[:10] = [1.0, 0.0, 0.0, 0.0]  # certain (and sometimes wrong: clipped log loss)
    proba[10:15] = 0.25  # ties: argmax takes the first class
    proba[15] = [0.6, 0.4, 0.0, 0.0]  # confidence on a bin edge (9/15 = 0.6)
    y = rng.choice(classes[:3], size=n)  # "d" never occurs
    ours = metric_values(y, proba, classes)
    ref = sklearn_metrics(y, proba, classes)
    for m in METRICS:
        assert ours[m] == pytest.approx(ref[m], rel=1e-12, abs=1e-14), m


def test_reliability_bins_add_up_to_the_ece():
    rng = np.random.default_rng(3)
    proba = rng.dirichlet([1, 1, 1], size=300)
    y = rng.choice(["x", "y", "z"], size=300)
    count, conf, acc, ece = reliability_bins(y, proba, ["x", "y", "z"], n_bins=10)
    assert count.sum() == 300
    used = count > 0
    assert ece == pytest.approx(np.sum(count[used] / 300 * np.abs(acc[used] - conf[used])), rel=1e-12)
    assert ece == pytest.approx(ece_loop(list(y), proba, ["x", "y", "z"], n_bins=10), rel=1e-12)
    assert np.all(np.isnan(conf[~used]))


# ------------------------------------------------------------------ parity on SMS


@pytest.mark.parametrize("alpha", [1.0, 0.1])
def test_mean_estimate_on_sms_equals_scikit_learn(sms_counts, alpha):
    from sklearn.naive_bayes import MultinomialNB as SkMultinomialNB

    s = sms_counts
    classes, counts = np.unique(s.y_train, return_counts=True)
    empirical = counts / counts.sum()
    table = compare(
        MultinomialNB(alpha=alpha, class_prior=empirical),
        s.X_train,
        s.y_train,
        s.X_test,
        s.y_test,
        estimates=("mean",),
        reference=None,
        n_bootstrap=50,
        as_frame=False,
    )
    row = table.row("mean")
    sk = SkMultinomialNB(alpha=alpha).fit(s.X_train, s.y_train)
    ref = sklearn_metrics(s.y_test, sk.predict_proba(s.X_test), sk.classes_)
    for m in METRICS:
        assert row[m] == pytest.approx(ref[m], rel=1e-10, abs=1e-12), m
    assert row["zero_likelihood_rows"] == 0 and row["available"]


def test_bernoulli_mean_on_sms_equals_scikit_learn(sms_counts):
    from sklearn.naive_bayes import BernoulliNB as SkBernoulliNB

    s = sms_counts
    _, counts = np.unique(s.y_train, return_counts=True)
    table = compare(
        BernoulliNB(class_prior=counts / counts.sum()),
        s.X_train, s.y_train, s.X_test, s.y_test,
        estimates=("mean", "predictive"), n_bootstrap=0, as_frame=False,
    )
    sk = SkBernoulliNB().fit(s.X_train, s.y_train)
    ref = sklearn_metrics(s.y_test, sk.predict_proba(s.X_test), sk.classes_)
    for m in METRICS:
        assert table.row("mean")[m] == pytest.approx(ref[m], rel=1e-10, abs=1e-12), m
        # Bernoulli's exact predictive is the posterior-mean plug-in: identical rows.
        assert table.row("predictive")[m] == table.row("mean")[m]


# ------------------------------------------------------------- bootstrap and diffs


def _digits_split(seed=0):
    from bayesnb.io.datasets import load_digits_counts

    X, y = load_digits_counts()
    return train_test_split(X, y, test_size=0.25, random_state=seed, stratify=y)


def test_bootstrap_intervals_match_the_binomial_standard_error():
    X_train, X_test, y_train, y_test = _digits_split()
    table = compare(MultinomialNB(), X_train, y_train, X_test, y_test, n_bootstrap=2000, level=0.95, as_frame=False)
    for rec in table.records:
        acc = rec["accuracy"]
        se = np.sqrt(acc * (1 - acc) / len(y_test))
        width = rec["accuracy_hi"] - rec["accuracy_lo"]
        # Percentile interval of a resampled proportion: about 2 x 1.96 standard errors.
        assert width == pytest.approx(2 * 1.96 * se, rel=0.15)
        for m in METRICS:
            assert rec[f"{m}_lo"] <= rec[m] + 1e-12 and rec[m] <= rec[f"{m}_hi"] + 1e-12
    ref = table.row("predictive")
    for rec in table.records:
        for m in METRICS:
            assert rec[f"{m}_diff"] == pytest.approx(rec[m] - ref[m], abs=1e-12)
    assert all(ref[f"{m}_diff{s}"] == 0.0 for m in METRICS for s in ("", "_lo", "_hi"))
    # Paired: the difference of the two plug-ins that coincide (alpha = 1: MAP = MLE) is exactly 0.
    assert table.row("map")["log_loss_diff_lo"] == table.row("mle")["log_loss_diff_lo"]


def test_paired_differences_are_narrower_than_unpaired_intervals():
    X_train, X_test, y_train, y_test = _digits_split()
    table = compare(MultinomialNB(), X_train, y_train, X_test, y_test, n_bootstrap=1000, as_frame=False)
    mean = table.row("mean")
    paired = mean["log_loss_diff_hi"] - mean["log_loss_diff_lo"]
    unpaired = mean["log_loss_hi"] - mean["log_loss_lo"]
    assert paired < 0.2 * unpaired
    # The exact predictive is better calibrated than the plug-in of the mean on digits.
    assert mean["log_loss_diff_lo"] > 0


def test_same_seed_same_table_other_seed_other_intervals():
    X_train, X_test, y_train, y_test = _digits_split()
    a = compare(BernoulliNB(), X_train, y_train, X_test, y_test, n_bootstrap=200, random_state=1, as_frame=False)
    b = compare(BernoulliNB(), X_train, y_train, X_test, y_test, n_bootstrap=200, random_state=1, as_frame=False)
    c = compare(BernoulliNB(), X_train, y_train, X_test, y_test, n_bootstrap=200, random_state=2, as_frame=False)
    assert a.records == b.records
    assert a.row("mean")["accuracy"] == c.row("mean")["accuracy"]
    assert a.row("mean")["accuracy_lo"] != c.row("mean")["accuracy_lo"] or a.row("mean")["log_loss_lo"] != c.row("mean")["log_loss_lo"]


# --------------------------------------------------------------- undefined estimates


def test_map_with_alpha_below_one_is_reported_not_raised():
    X_train, X_test, y_train, y_test = _digits_split()
    table = compare(MultinomialNB(alpha=0.5), X_train, y_train, X_test, y_test, n_bootstrap=100, as_frame=False)
    row = table.row("map")
    assert row["available"] is False
    assert "< 1" in row["reason"] and "map" in row["reason"]
    assert all(row[m] is None and row[f"{m}_lo"] is None and row[f"{m}_diff"] is None for m in METRICS)
    assert row["log_evidence"] == table.row("mean")["log_evidence"]  # the model is fine
    for estimate in ("mle", "mean", "predictive"):
        assert table.row(estimate)["available"] is True and table.row(estimate)["reason"] is None
    text = repr(table)
    assert "map" in text and "n/a (" in text


def test_reference_undefined_leaves_differences_missing():
    X_train, X_test, y_train, y_test = _digits_split()
    table = compare(
        MultinomialNB(alpha=0.5), X_train, y_train, X_test, y_test, reference="map", n_bootstrap=50, as_frame=False
    )
    assert all(rec["accuracy_diff"] is None for rec in table.records)
    assert table.row("mean")["accuracy"] is not None


# --------------------------------------------------------------------------- modes


def test_cross_validated_mode_pools_out_of_fold_predictions():
    X, _, y, _ = _digits_split()
    splitter = StratifiedKFold(n_splits=4, shuffle=True, random_state=5)
    table = compare(CategoricalNB(min_categories=17), X, y, cv=splitter, n_bootstrap=100, as_frame=False)
    oof = {e: np.zeros((len(y), 10)) for e in ("mean", "mle")}
    impossible = {e: np.zeros(len(y), dtype=bool) for e in oof}
    for train, test in splitter.split(X, y):
        clf = CategoricalNB(min_categories=17).fit(X[train], y[train])
        for e in oof:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                oof[e][test] = clf.set_params(estimate=e).predict_proba(X[test])
                impossible[e][test] = np.all(np.isneginf(clf.predict_joint_log_proba(X[test])), axis=1)
    assert impossible["mle"].any() and not impossible["mean"].any()
    for e in oof:
        ref = sklearn_metrics(y, oof[e], np.arange(10))
        # Issue 15: a row impossible under every class has no class probabilities (predict's
        # fallback to the class proportions is not scored): the log loss is infinite.
        if impossible[e].any():
            ref["log_loss"] = np.inf
            # Issue 38: the same rule for the Brier score (2 per such row) and the ECE (1 per
            # such row, the other rows binned without them).
            live, n = ~impossible[e], len(y)
            scored = sklearn_metrics(y[live], oof[e][live], np.arange(10))
            ref["brier"] = (scored["brier"] * live.sum() + 2.0 * impossible[e].sum()) / n
            ref["ece"] = (scored["ece"] * live.sum() + impossible[e].sum()) / n
        assert table.row(e)["zero_likelihood_rows"] == impossible[e].sum()
        for m in METRICS:
            assert table.row(e)[m] == pytest.approx(ref[m], rel=1e-10, abs=1e-12), (e, m)
    assert table.attrs["mode"] == "cv" and table.attrs["n_folds"] == 4
    full = CategoricalNB(min_categories=17).fit(X, y).log_evidence()
    assert table.row("mean")["log_evidence"] == pytest.approx(full, rel=1e-12)


def test_learning_curve_shows_where_full_bayes_matters():
    X_train, X_test, y_train, y_test = _digits_split()
    table = compare(
        MultinomialNB(), X_train, y_train, X_test, y_test,
        estimates=("mean", "predictive"), train_sizes=[20, 1.0], n_repeats=3, n_bootstrap=300, as_frame=False,
    )
    assert [(r["train_size"], r["estimate"]) for r in table.records] == [
        (20, "mean"), (20, "predictive"), (1347, "mean"), (1347, "predictive")
    ]
    small, full = table.row(20, "mean"), table.row(1347, "mean")
    # With 20 training images the exact predictive is far better calibrated than the plug-in ...
    assert small["log_loss_diff_lo"] > 0.5
    # ... with 1347 the gap is an order of magnitude smaller.
    assert full["log_loss_diff"] < 0.1 * small["log_loss_diff"]
    # The full-size row is one fit on all training rows: the hold-out numbers.
    holdout = compare(MultinomialNB(), X_train, y_train, X_test, y_test, estimates=("mean", "predictive"),
                      n_bootstrap=0, as_frame=False)
    for m in METRICS:
        assert full[m] == pytest.approx(holdout.row("mean")[m], rel=1e-12)


def test_learning_curve_subsets_missing_a_class_still_predict_every_class():
    X_train, X_test, y_train, y_test = _digits_split()
    table = compare(
        MultinomialNB(), X_train, y_train, X_test, y_test, train_sizes=[3], n_repeats=2, n_bootstrap=0, as_frame=False
    )
    # Three rows cannot hold ten classes; the posterior still covers all ten. (The MLE
    # makes test rows impossible under every class: an infinite log loss, issue 15.)
    assert all(np.isfinite(r["log_loss"]) == (r["zero_likelihood_rows"] == 0) for r in table.records if r["available"])
    assert np.isfinite(table.row(3, "predictive")["log_loss"])
    assert table.row(3, "predictive")["available"]


def test_several_models_compare_their_evidence():
    X_train, X_test, y_train, y_test = _digits_split()
    table = compare(
        {"alpha=1": MultinomialNB(alpha=1.0), "alpha=10": MultinomialNB(alpha=10.0)},
        X_train, y_train, X_test, y_test, estimates=("predictive",), n_bootstrap=0, as_frame=False,
    )
    assert table.index_names == ["model", "estimate"]
    ev1, ev10 = table.row("alpha=1", "predictive")["log_evidence"], table.row("alpha=10", "predictive")["log_evidence"]
    assert ev1 == pytest.approx(MultinomialNB(alpha=1.0).fit(X_train, y_train).log_evidence())
    assert ev1 != ev10


def test_refit_false_scores_a_fitted_estimator_like_refit():
    X_train, X_test, y_train, y_test = _digits_split()
    clf = GaussianNB().fit(X_train, y_train)
    a = compare(clf, None, None, X_test, y_test, refit=False, n_bootstrap=100, as_frame=False)
    b = compare(GaussianNB(), X_train, y_train, X_test, y_test, n_bootstrap=100, as_frame=False)
    assert a.records == b.records
    assert clf.estimate == "predictive"  # restored after switching estimates
    with pytest.raises(ValueError, match="refit=False"):
        compare(clf, None, None, X_test, y_test, refit=False, cv=3)


# ----------------------------------------------------------------- result objects


def test_dataframe_or_plain_table():
    pd = pytest.importorskip("pandas")
    X_train, X_test, y_train, y_test = _digits_split()
    frame = compare(BernoulliNB(), X_train, y_train, X_test, y_test, n_bootstrap=50)
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.index) == ["mle", "map", "mean", "predictive"]
    assert list(frame.columns[:5]) == list(METRICS)
    assert frame.attrs["mode"] == "holdout" and frame.attrs["reference"] == "predictive"
    table = compare(BernoulliNB(), X_train, y_train, X_test, y_test, n_bootstrap=50, as_frame=False)
    assert_allclose(frame["accuracy"].to_numpy(), table["accuracy"])
    assert format_comparison(frame) == format_comparison(table)


def test_without_pandas_the_result_is_a_readable_table(monkeypatch):
    X_train, X_test, y_train, y_test = _digits_split()
    import bayesnb.analysis.comparison

    def no_pandas():
        raise ImportError("No module named 'pandas'")

    monkeypatch.setattr(bayesnb.analysis.comparison, "_import_pandas", no_pandas)
    table = compare(BernoulliNB(), X_train, y_train, X_test, y_test, n_bootstrap=50)
    assert isinstance(table, ComparisonTable)
    text = repr(table)
    assert text.splitlines()[0].split()[:4] == ["estimate", "accuracy", "log", "loss"]
    assert "predictive" in text and "hold-out: 1347 train / 450 test rows" in text
    with pytest.raises(ImportError, match="pandas"):
        compare(BernoulliNB(), X_train, y_train, X_test, y_test, n_bootstrap=0, as_frame=True)
    md = format_comparison(table, style="markdown", intervals=True)
    assert md.splitlines()[1].startswith("|---")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"estimates": ("mean", "median")}, "unknown estimate"),
        ({"estimates": ("mean",)}, "reference"),
        ({"estimates": ()}, "at least one"),
        ({"estimates": ("mean", "mean", "predictive")}, "duplicates"),
        ({"cv": 3}, "no test set"),
        ({"n_bootstrap": -1}, "n_bootstrap"),
        ({"level": 1.5}, "level"),
        ({"n_bins": 0}, "n_bins"),
        ({"train_sizes": [0]}, "train_sizes"),
        ({"train_sizes": [10**6]}, "train_sizes"),
        ({"train_sizes": [10], "cv": 3}, "two different modes"),
        ({"as_frame": "yes"}, "as_frame"),
    ],
)
def test_bad_arguments(kwargs, match):
    X_train, X_test, y_train, y_test = _digits_split()
    with pytest.raises(ValueError, match=match):
        compare(MultinomialNB(), X_train, y_train, X_test, y_test, **kwargs)


def test_bad_data():
    X_train, X_test, y_train, y_test = _digits_split()
    with pytest.raises(ValueError, match=r"y_test contains label 9 not in the training classes \[0, 1, 2, 3, 4, 5, 6, 7, 8\]$"):
        compare(MultinomialNB(), X_train[y_train != 9], y_train[y_train != 9], X_test, y_test)
    with pytest.raises(ValueError, match="X_test has"):
        compare(MultinomialNB(), X_train, y_train, X_test[:5], y_test)
    with pytest.raises(ValueError, match="required"):
        compare(MultinomialNB(), X_train, y_train)
    with pytest.raises(TypeError, match="bayesnb estimators"):
        from sklearn.naive_bayes import MultinomialNB as SkMultinomialNB

        compare(SkMultinomialNB(), X_train, y_train, X_test, y_test)
    with pytest.raises(ValueError, match="Negative"):
        compare(MultinomialNB(), X_train, y_train, -X_test, y_test)


def test_readme_research_snippet_runs(tmp_path, monkeypatch):
    """The README's research-workflow code is what users copy: it must run as written."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Research workflows") :]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert namespace["draws"].shape == (100, 450, 10)
    assert (tmp_path / "reliability.png").stat().st_size > 10_000
    curve = namespace["curve"]
    assert sorted({size for size, _ in curve.index}) == [10, 50, 200, 1347]
    assert len(namespace["ask_first"]) == 10
