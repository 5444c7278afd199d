"""Feature ranges in the Gaussian sufficient statistics (issue 40, item 2).

Each (class, feature)'s smallest and largest value over the rows that carry weight is
part of ``GaussianStats``, ``MaskedGaussianStats`` and ``ScatterStats``; it merges as the
union, the core judges the spread of every feature once on the merged statistics (what
``fit`` sees is what chained ``partial_fit`` and shards see), and model files keep it
(checked against the sums at load). Oracles: numpy's min/max of the concatenated rows,
the statistics of the concatenated rows, and scikit-learn's GaussianNB on rescaled data.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
from sklearn.naive_bayes import GaussianNB as SkGaussianNB

import bayesnb
from bayesnb.core import stats as core_stats
from bayesnb.core.stats import gaussian_stats, masked_gaussian_stats, scatter_stats
from bayesnb.exceptions import ModelFileError
from bayesnb.io import persistence
from tests.io.test_hostile_files import _pack, _unpack

TINY = 1e-160  # spreads of data at this scale are below 2**-500 (3.1e-151)
SPREAD_ERROR = r"feature 0 \(0-based\) spreads over .* only \(max - min\)"


def _data(n=36, n_features=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features)) * [1.0, 10.0, 0.1][:n_features] + [0.0, 5.0, -3.0][:n_features]
    y = np.arange(n) % 3
    return X, y


def _oracle_range(X, y, w, n_classes, observed=None):
    """numpy's min/max per (class, feature) over the rows of nonzero weight (observed entries)."""
    low = np.zeros((n_classes, X.shape[1]))
    high = np.zeros((n_classes, X.shape[1]))
    for c in range(n_classes):
        for j in range(X.shape[1]):
            keep = (y == c) & (w != 0) & (True if observed is None else observed[:, j])
            if keep.any():
                low[c, j], high[c, j] = X[keep, j].min(), X[keep, j].max()
    return low, high


def _range_errors(stats, X, y, w, observed=None):
    """Cells where the statistics' range differs from numpy's (exact comparison)."""
    low, high = _oracle_range(X, y, w, np.shape(stats.mean)[0], observed)
    return int(np.sum(np.asarray(stats.low) != low) + np.sum(np.asarray(stats.high) != high))


def _batches(X, y, w, cuts):
    return [(X[a:b], y[a:b], w[a:b]) for a, b in zip((0,) + cuts, cuts + (len(y),))]


def _weights(n, seed=1):
    w = np.random.default_rng(seed).uniform(0.5, 2.0, n)
    w[[4, 11]] = 0.0  # rows of weight 0 are no rows: outside the range
    return w


def _planted_min(X, y):
    """Each batch of _batches(..., (12, 24)) holds the smallest value of some (class, feature)."""
    X = X.copy()
    X[13, 0] = -50.0  # class 1, middle batch
    X[30, 1] = -50.0  # class 0, last batch
    X[2, 2] = -50.0  # class 2, first batch
    return X


# ------------------------------------------------------------------ merge = concatenation
@pytest.mark.parametrize("kind", ["gaussian", "masked", "scatter"])
def test_merged_statistics_equal_the_statistics_of_the_concatenated_rows(kind):
    X, y = _data()
    X = _planted_min(X, y)
    w = _weights(len(y))
    observed = np.random.default_rng(2).uniform(size=X.shape) > 0.2 if kind == "masked" else None

    def compute(rows):
        if kind == "scatter":
            return scatter_stats(X[rows], y[rows], 3, w[rows])
        if kind == "masked":
            return masked_gaussian_stats(X[rows], ~observed[rows], y[rows], 3, w[rows])
        return gaussian_stats(X[rows], y[rows], 3, w[rows])

    parts = [compute(slice(a, b)) for a, b in ((0, 12), (12, 24), (24, 36))]
    whole = compute(slice(None))
    merged = parts[0].merge(parts[1]).merge(parts[2])
    assert _range_errors(merged, X, y, w, observed) == 0
    assert _range_errors(whole, X, y, w, observed) == 0
    sums = ("scatter",) if kind == "scatter" else ("m2",)
    for field in ("class_count", "mean") + sums:
        np.testing.assert_allclose(getattr(merged, field), getattr(whole, field), rtol=1e-12, atol=1e-12)


def test_a_merge_that_drops_a_batch_minimum_is_caught(monkeypatch):
    # Planted error: the union keeps the first side's minimum only. The comparison with
    # numpy's minimum of the concatenated rows must notice (the batches each hold one).
    X, y = _data()
    X = _planted_min(X, y)
    w = _weights(len(y))
    real = core_stats.merge_range

    def drops_b_min(n_a, low_a, high_a, n_b, low_b, high_b, xp=np):
        return real(n_a, low_a, high_a, n_b, np.where(n_a != 0, low_a, low_b), high_b, xp)

    monkeypatch.setattr(core_stats, "merge_range", drops_b_min)
    parts = [gaussian_stats(*b[:2], 3, b[2]) for b in _batches(X, y, w, (12, 24))]
    merged = parts[0].merge(parts[1]).merge(parts[2])
    assert _range_errors(merged, X, y, w) >= 2


def test_fit_shards_and_partial_fit_hold_numpys_range():
    X, y = _data()
    X = _planted_min(X, y)
    w = _weights(len(y))
    by_fit = bayesnb.GaussianNB().fit(X, y, sample_weight=w).stats_
    clf = bayesnb.GaussianNB()
    for Xb, yb, wb in _batches(X, y, w, (12, 24)):
        clf.partial_fit(Xb, yb, classes=[0, 1, 2], sample_weight=wb)
    est = bayesnb.GaussianNB()
    shard = None
    for Xb, yb, wb in _batches(X, y, w, (5, 20)):
        part = est.shard(Xb, yb, sample_weight=wb, classes=np.array([0, 1, 2]))
        shard = part if shard is None else shard.merge(part)
    by_shards = est.fit_shard(shard).stats_
    for stats in (by_fit, clf.stats_, by_shards):
        assert _range_errors(stats, X, y, w) == 0


# ------------------------------------------------------------------ the union is judged
def _mixed():
    return bayesnb.MixedNB(
        blocks=[("g", bayesnb.GaussianNB(), [0, 1]), ("b", bayesnb.BernoulliNB(binarize=None), [2])]
    )


def _mixed_X(X):
    return np.c_[X[:, :2], (X[:, 2] > X[:, 2].mean()).astype(float)]


MAKERS = {
    "GaussianNB": (bayesnb.GaussianNB, lambda X, s: X * s),
    "MixedNB": (_mixed, lambda X, s: np.c_[X[:, :2] * s, X[:, 2:]]),
    "GBC-diag": (lambda: bayesnb.GaussianBayesClassifier(covariance="diag"), lambda X, s: X * s),
    "GBC-full": (lambda: bayesnb.GaussianBayesClassifier(covariance="full"), lambda X, s: X * s),
}


def _inputs(name):
    X, y = _data(n=24)
    return (_mixed_X(X) if name == "MixedNB" else X), y


@pytest.mark.parametrize("name", list(MAKERS))
def test_partial_fit_of_tiny_rows_is_refused_as_fit_of_the_same_rows(name):
    # One row at a time: each batch alone has no spread; their union is 1e-160 wide.
    make, scale = MAKERS[name]
    X, y = _inputs(name)
    Xs = scale(X, TINY)
    with pytest.raises(ValueError, match=SPREAD_ERROR) as by_fit:
        make().fit(Xs[:2], y[:2])
    clf = make().partial_fit(Xs[:1], y[:1], classes=[0, 1, 2])  # one value: spread 0, left to the prior
    with pytest.raises(ValueError, match=SPREAD_ERROR) as by_batches:
        clf.partial_fit(Xs[1:2], y[1:2])
    assert str(by_batches.value) == str(by_fit.value)
    # The refused batch is not committed: the model still holds one row.
    assert clf.class_count_.sum() == 1


@pytest.mark.parametrize("name", list(MAKERS))
def test_a_tiny_batch_among_wide_ones_is_accepted_as_fit_accepts_it(name):
    # The core checked each batch alone before: this second batch was refused although
    # fit on both batches together accepts it.
    make, scale = MAKERS[name]
    X, y = _inputs(name)
    rows = np.vstack([X[:12], scale(X[12:], TINY)])
    by_fit = make().fit(rows, y)
    by_batches = make().partial_fit(rows[:12], y[:12], classes=[0, 1, 2]).partial_fit(rows[12:], y[12:])
    np.testing.assert_allclose(by_batches.predict_proba(rows), by_fit.predict_proba(rows), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", list(MAKERS))
def test_shards_of_single_tiny_rows_are_refused_once_merged(name):
    # Each shard alone has no spread (one row); fit_shard judges their merge.
    make, scale = MAKERS[name]
    X, y = _inputs(name)
    Xs = scale(X, TINY)
    est = make()
    classes = np.array([0, 1, 2])
    shard = est.shard(Xs[:1], y[:1], classes=classes).merge(est.shard(Xs[1:2], y[1:2], classes=classes))
    prefix = r"block 'g': " if name == "MixedNB" else ""
    with pytest.raises(ValueError, match="^" + prefix + SPREAD_ERROR):
        est.fit_shard(shard)
    # A shard of one row is constant: accepted, as fit on the row is.
    est.fit_shard(est.shard(Xs[:1], y[:1], classes=classes))


@pytest.mark.parametrize("name", list(MAKERS))
def test_fit_at_1e_160_is_refused_naming_the_feature(name):
    make, scale = MAKERS[name]
    X, y = _inputs(name)
    with pytest.raises(ValueError, match=SPREAD_ERROR):
        make().fit(scale(X, TINY), y)


def test_batches_at_1e_145_give_scikit_learns_answer_at_scale_1():
    # Above 2**-500 the math coincides with scikit-learn's at any scale: "mle" with the
    # empirical class proportions, variance floor relative to the largest variance.
    X, y = _data(n=30)
    freq = np.bincount(y) / len(y)
    clf = bayesnb.GaussianNB(estimate="mle", class_prior=freq)
    for a, b in ((0, 10), (10, 20), (20, 30)):
        clf.partial_fit(X[a:b] * 1e-145, y[a:b], classes=[0, 1, 2])
    expected = SkGaussianNB().fit(X, y).predict_proba(X)
    np.testing.assert_allclose(clf.predict_proba(X * 1e-145), expected, rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------ model files
def _save(est):
    buffer = io.BytesIO()
    est.save(buffer)
    return buffer.getvalue()


def _stats_nodes(node):
    """Every encoded Gaussian statistics node of a metadata tree."""
    found = []
    if isinstance(node, dict):
        if node.get("namedtuple") in ("GaussianStats", "MaskedGaussianStats", "ScatterStats"):
            found.append(node)
        for value in node.values():
            found += _stats_nodes(value)
    elif isinstance(node, list):
        for value in node:
            found += _stats_nodes(value)
    return found


def _gaussian_blocks(est):
    if isinstance(est, bayesnb.MixedNB):
        return [e.stats_ for _, e, _ in est.estimators_ if hasattr(e.stats_, "m2")]
    return [est.stats_]


@pytest.mark.parametrize("name", ["GaussianNB", "MixedNB", "GBC-full", "missing"])
def test_round_trip_keeps_the_range_and_partial_fit_continues_from_it(name):
    X, y = _data(n=24)
    if name == "missing":
        make, scale = (lambda: bayesnb.GaussianNB(missing="ignore")), (lambda X, s: X * s)
        X = X.copy()
        X[3, 1] = np.nan
    else:
        make, scale = MAKERS[name]
        X, y = _inputs(name)
    est = make().fit(X, y)
    data = _save(est)
    meta, _ = _unpack(data)
    assert meta["format_version"] == 2
    loaded = bayesnb.load(io.BytesIO(data))
    for before, after in zip(_gaussian_blocks(est), _gaussian_blocks(loaded)):
        assert np.array_equal(before.low, after.low) and np.array_equal(before.high, after.high)
    # One tiny row saved, a second one after load: the union is judged across the file.
    tiny = make().partial_fit(scale(X, TINY)[:1], y[:1], classes=[0, 1, 2])
    again = bayesnb.load(io.BytesIO(_save(tiny)))
    with pytest.raises(ValueError, match=SPREAD_ERROR):
        again.partial_fit(scale(X, TINY)[1:2], y[1:2])


def _crafted(edit):
    X, y = _data(n=24)
    meta, arrays = _unpack(_save(bayesnb.GaussianNB().fit(X, y)))
    names = {field: next(n for n in arrays if n.endswith(f"stats_.{field}")) for field in ("low", "high", "mean", "m2")}
    edit(meta, arrays, names)
    return io.BytesIO(_pack(meta, arrays))


def _set(field, cell, value):
    def edit(meta, arrays, names):
        arrays[names[field]] = arrays[names[field]].copy()
        arrays[names[field]][cell] = value

    return edit


def _swap(meta, arrays, names):
    arrays[names["low"]], arrays[names["high"]] = arrays[names["high"]], arrays[names["low"]]


def _drop_high(meta, arrays, names):
    node = _stats_nodes(meta)[0]
    del node["fields"]["high"]
    del arrays[names["high"]]


@pytest.mark.parametrize(
    "edit, message",
    [
        (_swap, r"class 0, feature 0: max .* < min"),
        (_set("low", (1, 2), np.nan), r"stats_.low holds NaN or infinite values"),
        (_set("high", (0, 0), np.inf), r"stats_.high holds NaN or infinite values"),
        (_set("low", (2, 1), 1e6), r"class 2, feature 1: max .* < min|the mean .* lies outside the range"),
        (_set("high", (1, 0), -1e6), r"class 1, feature 0: max .* < min|the mean .* lies outside the range"),
        (_set("m2", (0, 1), 1e9), r"class 0, feature 1: the sum of squared deviations .* exceeds"),
        (_set("mean", (2, 0), 1e3), r"class 2, feature 0: the mean .* lies outside the range"),
        (_drop_high, r"one end of the feature ranges"),
    ],
    ids=["max<min", "nan", "inf", "low-above-mean", "high-below-mean", "m2-too-large", "mean-outside", "half"],
)
def test_crafted_ranges_are_refused_with_a_clear_message(edit, message):
    with pytest.raises(ModelFileError, match=r"saved state of GaussianNB is inconsistent: .*" + message):
        bayesnb.load(_crafted(edit))


def _legacy(data, *, scale_sums=None):
    """The file as bayesnb wrote it before the ranges: no low/high, format_version 1."""
    meta, arrays = _unpack(data)
    for node in _stats_nodes(meta):
        for field in ("low", "high"):
            del arrays[node["fields"].pop(field)["array"]]
        if scale_sums is not None:
            for field, power in (("mean", 1), ("m2", 2)):
                name = node["fields"][field]["array"]
                arrays[name] = arrays[name] * scale_sums**power
    meta["format_version"] = 1
    return io.BytesIO(_pack(meta, arrays))


def test_a_file_written_before_the_ranges_loads_and_the_check_judges_the_narrowest_range():
    X, y = _data(n=24)
    est = bayesnb.GaussianNB().fit(X, y)
    loaded = bayesnb.load(_legacy(_save(est)))
    assert loaded.stats_.low is None  # absent, not invented: reconstructed where judged
    assert np.array_equal(loaded.predict_proba(X), est.predict_proba(X))
    # Re-saved as it is, the file is still version 1 (readable by earlier bayesnb).
    assert _unpack(_save(loaded))[0]["format_version"] == 1
    # partial_fit continues; the union with the reconstructed range (mean +- sd) is kept.
    loaded.partial_fit(X[:3], y[:3])
    assert loaded.stats_.low is not None and np.all(loaded.stats_.low <= loaded.stats_.mean + 1e-12)
    # Sums of data 1e-152 wide: the narrowest range they allow is below 2**-500, refused.
    with pytest.raises(ModelFileError, match=r"inconsistent: feature \d \(0-based\) spreads over"):
        bayesnb.load(_legacy(_save(est), scale_sums=1e-152))


def test_older_readers_see_a_version_they_refuse_cleanly():
    # A reader of version 1 refuses a file with ranges by its version, not by a field it
    # does not know.
    X, y = _data(n=24)
    meta, arrays = _unpack(_save(bayesnb.GaussianNB().fit(X, y)))
    meta["format_version"] = persistence.FORMAT_VERSION + 1
    with pytest.raises(ModelFileError, match=r"newer than this bayesnb reads"):
        bayesnb.load(io.BytesIO(_pack(meta, arrays)))
    multinomial = bayesnb.MultinomialNB().fit(np.abs(np.round(X * 3)), y)
    assert _unpack(_save(multinomial))[0]["format_version"] == 1
