"""Issue 40: the Gaussian spread refusal names the user's column, not a block's feature.

The core judges the spread of the merged statistics and knows positions only
(``SpreadError.index``); each estimator front names the feature in the user's terms:
the DataFrame column and its position in ``X`` (for ``MixedNB``: the position in the
user's frame, with the block), at ``fit``, at a ``partial_fit`` whose batches are fine
alone but not merged, and at ``fit_shard``. The expected messages are written out here.
"""

import numpy as np
import pandas as pd
import pytest

import bayesnb

TINY = 1e-160
N = 12


def _frame():
    """8 columns; 'age' at position 3 and 'income' at 7 (values 0 and 1e-160: spread exactly 1e-160)."""
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "a": rng.normal(size=N),
            "colour": np.array(["red", "blue", "green"])[np.arange(N) % 3],
            "c": rng.normal(size=N),
            "age": rng.normal(40.0, 10.0, size=N),
            "d": rng.normal(size=N),
            "e": rng.normal(size=N),
            "f": rng.normal(size=N),
            "income": np.where(np.arange(N) % 2 == 0, 0.0, TINY),
        }
    )


Y = np.arange(N) % 2


def _expected(prefix, feature, column, n_affected=1):
    return (
        f"{prefix}{feature} spreads over 1e-160 only (max - min): Gaussian statistics square deviations, "
        "which below 2**-500 (3.1e-151) lose their digits in float64. Rescale the feature "
        f"(e.g. {column} * 1e150, or standardise it) before fitting; {n_affected} feature(s) are affected"
    )


MIXED_AT_7 = _expected("block 'num': ", "feature 'income' (column 7 of X)", "X['income']")


def _mixed():
    return bayesnb.MixedNB(
        blocks=[("num", bayesnb.GaussianNB(), ["age", "income"]), ("cat", bayesnb.CategoricalNB(), ["colour"])],
        remainder="drop",
    )


def _refusal(call):
    with pytest.raises(ValueError) as info:
        call()
    return str(info.value)


def test_mixed_fit_names_the_frame_column_and_its_position():
    assert _refusal(lambda: _mixed().fit(_frame(), Y)) == MIXED_AT_7


def test_mixed_partial_fit_refused_at_the_merged_statistics_names_the_column():
    X = _frame()
    first, second = X.iloc[:6].copy(), X.iloc[6:].copy()
    first["income"], second["income"] = 0.0, TINY  # each batch constant (spread 0): fine alone
    clf = _mixed().partial_fit(first, Y[:6], classes=[0, 1])
    assert _refusal(lambda: clf.partial_fit(second, Y[6:])) == MIXED_AT_7
    assert clf.class_count_.sum() == 6  # the refused batch is not committed


def test_mixed_fit_shard_names_the_frame_column():
    X = _frame()
    est = _mixed()
    classes = np.array([0, 1])
    shard = est.shard(X.iloc[:6], Y[:6], classes=classes).merge(est.shard(X.iloc[6:], Y[6:], classes=classes))
    assert _refusal(lambda: est.fit_shard(shard)) == MIXED_AT_7


def test_mixed_with_inferred_blocks_names_the_frame_column():
    # blocks=None: every float column is in one "gaussian" block, where 'income' is its 6th.
    expected = _expected("block 'gaussian': ", "feature 'income' (column 7 of X)", "X['income']")
    assert _refusal(lambda: bayesnb.MixedNB().fit(_frame(), Y)) == expected


def test_mixed_on_an_array_names_the_column_of_x():
    X = _frame().drop(columns="colour").to_numpy()  # 'age' at 2, 'income' at 6
    clf = bayesnb.MixedNB(blocks=[("num", bayesnb.GaussianNB(), [2, 6])], remainder="drop")
    assert _refusal(lambda: clf.fit(X, Y)) == _expected("block 'num': ", "feature 6 (0-based)", "X[:, 6]")


@pytest.mark.parametrize(
    "make",
    [
        bayesnb.GaussianNB,
        lambda: bayesnb.GaussianBayesClassifier(covariance="diag"),
        lambda: bayesnb.GaussianBayesClassifier(covariance="full"),
        lambda: bayesnb.GaussianBayesClassifier(covariance="shared"),
    ],
    ids=["GaussianNB", "GBC-diag", "GBC-full", "GBC-shared"],
)
def test_gaussian_estimators_on_a_frame_name_the_column(make):
    X = _frame()[["age", "c", "income"]]
    expected = _expected("", "feature 'income' (column 2 of X)", "X['income']")
    assert _refusal(lambda: make().fit(X, Y)) == expected
    first, second = X.iloc[:6].copy(), X.iloc[6:].copy()
    first["income"], second["income"] = 0.0, TINY
    clf = make().partial_fit(first, Y[:6], classes=[0, 1])
    assert _refusal(lambda: clf.partial_fit(second, Y[6:])) == expected


@pytest.mark.parametrize(
    "make",
    [bayesnb.GaussianNB, lambda: bayesnb.GaussianBayesClassifier(covariance="diag")],
    ids=["GaussianNB", "GBC-diag"],
)
def test_posterior_from_other_statistics_names_the_column(make):
    # Simulation-based calibration conditions on statistics of simulated rows through
    # posterior_from_stats, outside _refresh: its refusal names the column too.
    X = _frame()[["age", "c", "income"]].assign(income=np.arange(N, dtype=float))
    clf = make().fit(X, Y)
    tiny = X.assign(income=np.where(np.arange(N) % 2 == 0, 0.0, TINY))
    stats = clf.validated_stats(tiny, Y)
    assert _refusal(lambda: clf.posterior_from_stats(stats)) == _expected(
        "", "feature 'income' (column 2 of X)", "X['income']"
    )


def test_mixed_posterior_from_other_statistics_names_the_frame_column():
    # The block's own posterior_from_stats knows the block's positions only: MixedNB
    # names the column of the user's X, as at fit (simulation-based calibration's path).
    X = _frame().assign(income=np.arange(N, dtype=float))
    clf = _mixed().fit(X, Y)
    tiny = X.assign(income=np.where(np.arange(N) % 2 == 0, 0.0, TINY))
    stats = clf.sufficient_stats(tiny, Y)[0]
    assert _refusal(lambda: clf.posterior_from_stats(stats)) == MIXED_AT_7
