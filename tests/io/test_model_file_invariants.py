"""Crafted model files with a recomputed checksum (issue 40): every size-bearing field is
bounded before anything is allocated from it, and every invariant that ``fit``
guarantees is checked at load."""

from __future__ import annotations

import io
import resource

import numpy as np
import pytest

import bayesnb
from bayesnb.exceptions import ModelFileError
from bayesnb.io import persistence
from tests.io.test_hostile_files import _pack, _unpack


def _saved(est, X, y):
    buffer = io.BytesIO()
    est.fit(X, y).save(buffer)
    return buffer.getvalue()


def _field(arrays, suffix):
    return next(n for n in arrays if n.endswith(suffix))


def _categorical():
    return _saved(bayesnb.CategoricalNB(), np.array([[0, 1], [2, 0], [1, 1], [0, 0]]), [0, 1, 0, 1])


def test_declared_twenty_million_categories_are_refused_before_allocation():
    meta, arrays = _unpack(_categorical())
    name = _field(arrays, "n_categories_")
    arrays[name] = np.array([20_000_000, 2], dtype=arrays[name].dtype)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ModelFileError, match="n_categories_.*too large"):
        persistence.load(io.BytesIO(_pack(meta, arrays)))
    # ru_maxrss is in KiB on Linux: the 1.5-4.5 GiB of the issue never happens.
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200 * 1024


@pytest.mark.parametrize(
    "value, match",
    [
        (np.array([0, 2]), "one positive integer per feature"),
        (np.array([3, 2, 2]), "one positive integer per feature"),
        (np.array([5, 2]), "n_categories_ says 5 categories"),
    ],
    ids=["zero", "wrong-length", "wider-than-the-counts"],
)
def test_n_categories_must_match_what_fit_made(value, match):
    meta, arrays = _unpack(_categorical())
    name = _field(arrays, "n_categories_")
    arrays[name] = value.astype(arrays[name].dtype)
    with pytest.raises(ModelFileError, match=match):
        persistence.load(io.BytesIO(_pack(meta, arrays)))


def test_categorical_counts_beyond_the_class_rows_are_refused():
    meta, arrays = _unpack(_categorical())
    name = _field(arrays, "stats_.category_count")
    arrays[name] = arrays[name] * 3.0
    with pytest.raises(ModelFileError, match="exceed the class's rows"):
        persistence.load(io.BytesIO(_pack(meta, arrays)))


def test_multinomial_file_relabelled_bernoulli_is_refused():
    # Token counts break T_cj <= N_c, which fit on binary data always keeps.
    data = _saved(bayesnb.MultinomialNB(), np.array([[3, 0, 1], [0, 2, 2], [4, 1, 0], [1, 3, 3]]), [0, 1, 0, 1])
    meta, arrays = _unpack(data)
    text = __import__("json").dumps(meta).replace('"MultinomialNB"', '"BernoulliNB"')
    meta = __import__("json").loads(text)
    with pytest.raises(ModelFileError, match="exceed the class's rows"):
        persistence.load(io.BytesIO(_pack(meta, arrays)))


@pytest.mark.parametrize(
    "make, X",
    [
        (bayesnb.BernoulliNB, np.array([[1, 0, 1], [0, 1, 1], [1, 1, 0], [0, 0, 1]])),
        (bayesnb.CategoricalNB, np.array([[0, 1], [2, 0], [1, 1], [0, 0]])),
    ],
)
def test_weighted_fits_still_load(make, X):
    # Weights summed in different orders (feature totals against class totals) must not
    # trip the invariant.
    w = np.array([0.1, 0.7, 0.3, 1e-3])
    est = make().fit(X, [0, 1, 0, 1], sample_weight=w)
    buffer = io.BytesIO()
    est.save(buffer)
    back = persistence.load(io.BytesIO(buffer.getvalue()))
    np.testing.assert_array_equal(back.predict_proba(X), est.predict_proba(X))
