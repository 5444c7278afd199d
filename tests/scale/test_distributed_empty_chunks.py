"""bayesnb.scale.distributed prediction over Dask collections holding an empty chunk (issue 19).

A chunking such as ``(5, 0, 15)`` (what filtering or ``da.concatenate`` of an empty
array gives) made every estimator refuse its 0-row block ("Found array with 0
sample(s)"). Each prediction method must now return the full-length result equal to the
local method on the whole input. The synchronous scheduler keeps this fast; the cluster
path is tested in test_distributed.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from bayesnb import (
    BernoulliNB,
    CategoricalNB,
    ExponentialNB,
    GaussianBayesClassifier,
    GaussianNB,
    MultinomialNB,
    PoissonNB,
)

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
db = pytest.importorskip("dask.bag")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")

from bayesnb.scale import distributed  # noqa: E402

_rng = np.random.default_rng(3)
_COUNTS = _rng.poisson(1.5, size=(20, 3)).astype(float)
_REAL = _rng.normal(size=(20, 3))
Y = np.tile(["a", "b", "c", "d"], 5)
CASES = {
    "MultinomialNB": (MultinomialNB, _COUNTS),
    "BernoulliNB": (BernoulliNB, (_COUNTS > 1).astype(float)),
    "CategoricalNB": (CategoricalNB, np.minimum(_COUNTS, 3)),
    "PoissonNB": (PoissonNB, _COUNTS),
    "GaussianNB": (GaussianNB, _REAL),
    "GaussianBayesClassifier": (GaussianBayesClassifier, _REAL),
    "ExponentialNB": (ExponentialNB, np.abs(_REAL) + 0.1),
}
METHODS = ("predict_proba", "predict_log_proba", "predict_joint_log_proba", "predict")


def _check(method, got, want):
    assert got.shape == want.shape
    if method == "predict":
        assert_array_equal(got, want)
    else:
        assert np.all(np.isfinite(got))
        assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_empty_chunk_of_an_array_frame_and_bag(name, method):
    make, X = CASES[name]
    est = make().fit(X, Y)
    want = getattr(est, method)(X)
    with dask.config.set(scheduler="synchronous"):
        for chunks in [((5, 0, 15), (3,)), ((0, 20), (3,)), ((20, 0), (1, 2))]:
            dX = da.from_array(X, chunks=chunks)
            lazy = getattr(distributed, method)(est, dX)
            assert lazy.shape[0] == 20
            _check(method, lazy.compute(), want)
        # A DataFrame partition emptied by a filter.
        local = pd.DataFrame(X, columns=["f0", "f1", "f2"]).assign(keep=np.arange(20) >= 7)
        frame = dd.from_pandas(local, npartitions=3)
        frame = frame[frame.keep]
        assert 0 in frame.map_partitions(len).compute().tolist()
        got = getattr(distributed, method)(est, frame, drop=["keep"]).compute()
        _check(method, np.asarray(got), getattr(est, method)(pd.DataFrame(X[7:], columns=["f0", "f1", "f2"])))
        # Bag elements, one of them with no rows.
        bag = db.from_sequence([X[:5], X[:0], X[5:]], npartitions=3)
        blocks = getattr(distributed, method)(est, bag).compute()
        assert [b.shape[0] for b in blocks] == [5, 0, 15]
        _check(method, np.concatenate(blocks), want)
