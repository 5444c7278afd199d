"""Rows and features named as the user names them (issue 38, items 5 and 6).

``rank_by_epistemic(...).index`` holds a DataFrame's index labels (``X.loc`` selects the
ranked rows; it used to hold positions, and ``X.loc`` on them silently selected other
rows), ``.position`` the positions. ``top_features`` / ``feature_log_odds_draws`` take
``feature_names`` (e.g. a ``CountVectorizer``'s vocabulary), checked against the number
of features. Oracles: ``decompose_uncertainty`` of the same rows, and the terms' column
positions indexing the names.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

from bayesnb import BernoulliNB, GaussianNB, MixedNB, MultinomialNB
from bayesnb.analysis import plots
from bayesnb.analysis.uncertainty import (
    EpistemicRanking,
    decompose_uncertainty,
    feature_log_odds_draws,
    rank_by_epistemic,
    top_features,
)

N_DRAWS = 200


@pytest.fixture(scope="module")
def gaussian_frame():
    rng = np.random.default_rng(0)
    n = 80
    y = np.where(np.arange(n) % 2, "b", "a")
    X = pd.DataFrame({"u": rng.normal(size=n) + (y == "b"), "v": rng.normal(size=n) * 2 - (y == "b")})
    X.index = 1000 + 7 * np.arange(n)[::-1]  # labels that are not positions, in decreasing order
    clf = GaussianNB().fit(X.iloc[:20], y[:20])  # little data: the epistemic part varies by row
    return clf, X


def test_rank_by_epistemic_names_dataframe_rows_by_their_labels(gaussian_frame):
    clf, X = gaussian_frame
    tail = X.iloc[50:]
    r = rank_by_epistemic(clf, tail, top=5, n_draws=N_DRAWS, random_state=0)
    assert isinstance(r, EpistemicRanking)
    assert set(r.index) <= set(tail.index) and not set(r.index) & set(range(len(tail)))
    np.testing.assert_array_equal(r.index, tail.index[r.position])
    # X.loc on the labels and X.iloc on the positions are the same rows, the most uncertain first.
    pd.testing.assert_frame_equal(tail.loc[r.index], tail.iloc[r.position])
    u = decompose_uncertainty(clf, tail, n_draws=N_DRAWS, random_state=0)
    assert_allclose(r.epistemic, np.asarray(u.epistemic)[r.position], rtol=1e-12)
    assert np.all(np.diff(r.epistemic) <= 0)
    assert r.position.dtype.kind == "i"
    # The same rows through the labels, scored alone, have the same uncertainty.
    alone = decompose_uncertainty(clf, X.loc[r.index], n_draws=N_DRAWS, random_state=0)
    assert_allclose(alone.total, r.total, rtol=1e-6, atol=1e-9)


@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
def test_string_index_labels_and_arrays_keep_positions(gaussian_frame):
    clf, X = gaussian_frame
    named = X.iloc[:12].set_axis([f"row{i}" for i in range(12)])
    r = rank_by_epistemic(clf, named, n_draws=N_DRAWS, random_state=1)
    assert sorted(r.index) == sorted(named.index)
    np.testing.assert_array_equal(r.index, np.array([f"row{i}" for i in r.position], dtype=object))
    # An array has no labels: index and position are the positions (X[r.index]).
    a = rank_by_epistemic(clf, named.to_numpy(), n_draws=N_DRAWS, random_state=1)
    np.testing.assert_array_equal(a.index, a.position)
    np.testing.assert_array_equal(a.position, r.position)
    assert_allclose(a.epistemic, r.epistemic, rtol=1e-12)


@pytest.fixture(scope="module")
def vectorized():
    from sklearn.feature_extraction.text import CountVectorizer

    docs = ["win cash prize now", "free cash win", "claim your prize now", "lunch at home",
            "see you at lunch", "home later see you", "free prize claim", "later at home"]
    y = np.array(["spam", "spam", "spam", "ham", "ham", "ham", "spam", "ham"])
    vec = CountVectorizer()
    X = vec.fit_transform(docs)
    return MultinomialNB().fit(X, y), vec.get_feature_names_out()


def test_top_features_takes_the_vectorizers_words(vectorized):
    clf, words = vectorized
    plain = top_features(clf, "spam", 4, n_draws=N_DRAWS, random_state=0)
    assert [str(v) for v in plain.name] == [f"x{j}" for j in plain.feature]
    named = top_features(clf, "spam", 4, n_draws=N_DRAWS, random_state=0, feature_names=words)
    assert [str(v) for v in named.name] == [words[j] for j in named.feature]
    assert set(named.name) <= {"win", "cash", "prize", "free", "claim", "now", "your"}
    np.testing.assert_array_equal(named.feature, plain.feature)
    assert_allclose(named.median, plain.median)
    # A list, a tuple or a pandas Index alike.
    for names in (list(words), tuple(words), pd.Index(words)):
        again = top_features(clf, "spam", 4, n_draws=N_DRAWS, random_state=0, feature_names=names)
        np.testing.assert_array_equal(again.name, named.name)
    odds = feature_log_odds_draws(clf, "spam", n_draws=50, random_state=0, feature_names=words)
    np.testing.assert_array_equal(odds.name, np.asarray(words, dtype=object))
    # The plot shows the same names.
    ax = plots.top_features(clf, "spam", 4, feature_names=words, n_draws=N_DRAWS, random_state=0)
    assert [t.get_text() for t in ax.get_yticklabels()] == [str(v) for v in named.name]


def test_wrong_feature_names_are_refused_clearly(vectorized):
    clf, words = vectorized
    n = len(words)
    with pytest.raises(ValueError, match=f"feature_names has {n - 1} names but the estimator was fitted on {n}"):
        top_features(clf, "spam", 3, n_draws=20, feature_names=words[:-1])
    with pytest.raises(ValueError, match=f"feature_names has {n + 1} names"):
        feature_log_odds_draws(clf, "spam", n_draws=20, feature_names=[*words, "extra"])
    with pytest.raises(TypeError, match="not one string"):
        top_features(clf, "spam", 3, n_draws=20, feature_names="abc")
    with pytest.raises(ValueError, match="one-dimensional"):
        top_features(clf, "spam", 3, n_draws=20, feature_names=np.asarray(words).reshape(1, -1))
    with pytest.raises(ValueError, match="feature_names"):
        plots.top_features(clf, "spam", 3, feature_names=words[:2], n_draws=20)


def test_feature_names_replace_the_dataframe_names_and_keep_category_labels():
    X = pd.DataFrame({"a": [True, False, True, False, True, False],
                      "colour": ["red", "red", "blue", "blue", "red", "blue"]})
    y = [0, 0, 1, 1, 0, 1]
    clf = MixedNB().fit(X, y)
    default = top_features(clf, 1, 10, n_draws=50, random_state=0)
    assert set(default.name) == {"a", "colour=blue", "colour=red"}
    renamed = top_features(clf, 1, 10, n_draws=50, random_state=0, feature_names=["flag", "paint"])
    assert set(renamed.name) == {"flag", "paint=blue", "paint=red"}
    one = BernoulliNB().fit(X[["a"]].to_numpy(int), y)
    assert top_features(one, 1, 1, n_draws=20, feature_names=np.array(["only"])).name.tolist() == ["only"]


@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
def test_uncertainty_of_a_dataframe_comes_back_indexed_like_it(gaussian_frame):
    # Issue 38, item 5: rows keep the input's index, the classes name the columns; the
    # values are those of the plain-array path (the oracle: the same rows as NumPy).
    clf, X = gaussian_frame
    tail = X.iloc[60:]
    lo, hi, med = clf.predict_proba_interval(tail, 0.9, n_draws=N_DRAWS, random_state=0, return_median=True)
    lo_np, hi_np, med_np = clf.predict_proba_interval(
        tail.to_numpy(), 0.9, n_draws=N_DRAWS, random_state=0, return_median=True
    )
    for frame, plain in ((lo, lo_np), (hi, hi_np), (med, med_np)):
        assert isinstance(frame, pd.DataFrame) and isinstance(plain, np.ndarray)
        assert frame.index.equals(tail.index)
        assert list(frame.columns) == list(clf.classes_) and frame.columns.name == "class"
        assert_allclose(frame.to_numpy(), plain, rtol=1e-12)
    u = decompose_uncertainty(clf, tail, n_draws=N_DRAWS, random_state=0)
    u_np = decompose_uncertainty(clf, tail.to_numpy(), n_draws=N_DRAWS, random_state=0)
    for name in ("total", "aleatoric", "epistemic"):
        series = getattr(u, name)
        assert isinstance(series, pd.Series) and series.index.equals(tail.index)
        assert_allclose(series.to_numpy(), getattr(u_np, name), rtol=1e-12)
    assert isinstance(u.mean_proba, pd.DataFrame) and list(u.mean_proba.columns) == list(clf.classes_)
    # A label selects the same row's numbers as its position in the plain path.
    label = tail.index[3]
    assert_allclose(lo.loc[label].to_numpy(), lo_np[3], rtol=1e-12)
    assert u.epistemic.loc[label] == pytest.approx(u_np.epistemic[3], rel=1e-12)
