"""Streaming fits equal the one-shot fit; the chunk sources and the progress bar."""

from __future__ import annotations

import io
import sys

import jax
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction.text import HashingVectorizer

import bayesnb
from bayesnb.scale import streaming
from bayesnb.scale.streaming import csv_chunks, fit_stream, text_chunks

pd = pytest.importorskip("pandas")


def assert_same(a, b, rtol=1e-12):
    leaves_a, tree_a = jax.tree.flatten(a)
    leaves_b, tree_b = jax.tree.flatten(b)
    assert tree_a == tree_b
    for x, z in zip(leaves_a, leaves_b):
        np.testing.assert_allclose(np.asarray(x, dtype=float), np.asarray(z, dtype=float), rtol=rtol, atol=0)


def _chunks(X, y, w=None, size=37):
    for i in range(0, X.shape[0], size):
        yield (X[i : i + size], y[i : i + size]) if w is None else (X[i : i + size], y[i : i + size], w[i : i + size])


@pytest.mark.parametrize(
    ("cls", "kind"),
    [
        (bayesnb.MultinomialNB, "counts"),
        (bayesnb.BernoulliNB, "counts"),
        (bayesnb.PoissonNB, "counts"),
        (bayesnb.CategoricalNB, "codes"),
        (bayesnb.GaussianNB, "real"),
        (bayesnb.GaussianBayesClassifier, "real"),
    ],
)
def test_stream_equals_one_shot_fit(cls, kind):
    rng = np.random.default_rng(3)
    n = 250
    X = {
        "counts": sp.csr_matrix(rng.poisson(0.5, size=(n, 9))),
        "codes": rng.integers(0, 4, size=(n, 3)),
        "real": rng.normal(5.0, 3.0, size=(n, 3)),
    }[kind]
    # Labels appear late: class 7 only in the last chunk, so the running classes grow.
    y = rng.integers(0, 3, n)
    y[-5:] = 7
    w = rng.uniform(0.1, 2.0, n)
    one_shot = cls().fit(X, y, sample_weight=w)
    streamed = fit_stream(cls(), _chunks(X, y, w), progress=False)
    np.testing.assert_array_equal(streamed.classes_, one_shot.classes_)
    # (Statistics themselves may differ by rounding in parts stored as low-order residuals.)
    np.testing.assert_allclose(streamed.stats_.class_count, one_shot.stats_.class_count, rtol=1e-12)
    assert_same(streamed.posterior_, one_shot.posterior_)
    assert streamed.log_evidence() == pytest.approx(one_shot.log_evidence(), rel=1e-12)
    np.testing.assert_allclose(streamed.predict_proba(X), one_shot.predict_proba(X), rtol=0, atol=1e-12)


def test_stream_with_declared_classes():
    rng = np.random.default_rng(0)
    X = rng.poisson(1.0, size=(90, 4))
    y = rng.integers(0, 2, 90)
    clf = fit_stream(bayesnb.MultinomialNB(), _chunks(X, y), classes=[0, 1, 2], progress=False)
    ref = bayesnb.MultinomialNB().partial_fit(X, y, classes=[0, 1, 2])
    assert_same(clf.posterior_, ref.posterior_)
    with pytest.raises(ValueError, match="chunk 0: y contains label"):
        fit_stream(bayesnb.MultinomialNB(), _chunks(X, y), classes=[5, 6], progress=False)


def test_bad_streams():
    with pytest.raises(ValueError, match="no rows"):
        fit_stream(bayesnb.MultinomialNB(), iter([]), progress=False)
    with pytest.raises(TypeError, match=r"chunk 0 must be an \(X, y\)"):
        fit_stream(bayesnb.MultinomialNB(), [np.ones((2, 2))], progress=False)
    rng = np.random.default_rng(0)
    chunks = [(rng.poisson(1.0, (5, 3)), np.arange(5) % 2), (rng.poisson(1.0, (5, 4)), np.arange(5) % 2)]
    with pytest.raises(ValueError, match="disagree on n_features_in_"):
        fit_stream(bayesnb.MultinomialNB(), chunks, progress=False)


def test_csv_chunks_mixed_equals_one_shot(tmp_path):
    rng = np.random.default_rng(1)
    n = 500
    colour = rng.choice(["red", "green", "blue"], n).astype(object)
    colour[-20:] = "violet"  # only in the last chunk: categories grow while streaming
    df = pd.DataFrame(
        {
            "length": rng.normal(10.0, 2.0, n),
            "spam": rng.random(n) < 0.4,
            "colour": colour,
            "words": rng.poisson(3.0, n),
            "label": rng.choice(["x", "y"], n),
            "w": rng.uniform(0.5, 1.5, n),
        }
    )
    path = tmp_path / "table.csv"
    df.to_csv(path, index=False)
    whole = pd.read_csv(path)
    # "words" holds counts: a Poisson block (on request; an integer column is Gaussian by default).
    one_shot = bayesnb.MixedNB(integer_columns="poisson").fit(
        whole.drop(columns=["label", "w"]), whole["label"], sample_weight=whole["w"]
    )
    source = csv_chunks(path, "label", weight="w", chunksize=64)
    streamed = fit_stream(bayesnb.MixedNB(integer_columns="poisson"), source, progress=False)
    np.testing.assert_array_equal(streamed.categories_[2], one_shot.categories_[2])
    assert_same(streamed.posterior_, one_shot.posterior_)
    np.testing.assert_array_equal(streamed.feature_names_in_, one_shot.feature_names_in_)
    features = whole.drop(columns=["label", "w"])
    np.testing.assert_allclose(streamed.predict_proba(features), one_shot.predict_proba(features), rtol=0, atol=1e-12)
    # The source can be iterated again (a fresh reader each time).
    assert sum(len(c[1]) for c in source) == n


def test_text_chunks_equal_one_shot(tmp_path):
    rng = np.random.default_rng(2)
    words = np.array(["cash", "win", "prize", "lunch", "meeting", "noon", "report", "now"])
    docs = []
    for label, bias in (("ham", 3), ("spam", 0)):
        (tmp_path / label).mkdir()
        for i in range(23):
            text = " ".join(rng.choice(words[bias : bias + 5], rng.integers(3, 12)))
            (tmp_path / label / f"{i:03d}.txt").write_text(text)
            docs.append((label, f"{i:03d}", text))
    docs.sort()
    vec = HashingVectorizer(alternate_sign=False, norm=None, n_features=2**12)
    X = vec.transform([t for _, _, t in docs])
    y = np.array([lab for lab, _, _ in docs])
    one_shot = bayesnb.MultinomialNB().fit(X, y)
    source = text_chunks(tmp_path, vectorizer=vec, chunksize=10)
    assert source.total == 46
    np.testing.assert_array_equal(source.classes, ["ham", "spam"])
    streamed = fit_stream(bayesnb.MultinomialNB(), source, progress=False)
    assert_same(streamed.posterior_, one_shot.posterior_)
    with pytest.raises(FileNotFoundError, match="not a directory"):
        text_chunks(tmp_path / "missing")


def test_progress_bar(monkeypatch, capsys):
    rng = np.random.default_rng(0)
    X = rng.poisson(1.0, size=(60, 3))
    y = rng.integers(0, 2, 60)
    # Not a terminal (pytest captures stderr): no bar by default.
    fit_stream(bayesnb.MultinomialNB(), _chunks(X, y), progress=None)
    assert capsys.readouterr().err == ""
    # Forced on, without tqdm: the plain stderr bar, with the total when known.
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    err = io.StringIO()
    monkeypatch.setattr(streaming.sys, "stderr", err)
    fit_stream(bayesnb.MultinomialNB(), _chunks(X, y), progress=True, total=60)
    text = err.getvalue()
    assert "60/60 rows" in text and text.endswith("\n")
