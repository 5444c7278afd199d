"""bayesnb.scale.distributed on a dask.distributed LocalCluster: a Dask fit equals the local fit.

The cluster has two worker processes on loopback with one thread each, so statistics
are computed in other processes and shipped back through the scheduler; every family is
fitted on several partitions (sparse chunks where the family takes sparse data) and its
posterior parameters compared with the local ``fit`` to 1e-12 (relative; the partition
sums only change the summation order).
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
import scipy.sparse as sp

import bayesnb

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
db = pytest.importorskip("dask.bag")
dd = pytest.importorskip("dask.dataframe")
distributed_lib = pytest.importorskip("dask.distributed")
pd = pytest.importorskip("pandas")

from bayesnb.scale import distributed  # noqa: E402

RTOL = 1e-12

# Worker processes import bayesnb and JAX once (~10 s on a loaded 2-core machine).
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def client():
    cluster = distributed_lib.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        memory_limit="2GiB",
    )
    c = distributed_lib.Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


def assert_same_posterior(a, b):
    """Every array leaf of two posterior pytrees equal to RTOL (relative to the larger magnitude)."""
    leaves_a, tree_a = jax.tree.flatten(a)
    leaves_b, tree_b = jax.tree.flatten(b)
    assert tree_a == tree_b
    for x, z in zip(leaves_a, leaves_b):
        x, z = np.asarray(x), np.asarray(z)
        assert x.shape == z.shape
        if x.dtype.kind in "fc":
            scale = np.maximum(np.abs(x), np.abs(z))
            assert np.all(np.abs(x - z) <= RTOL * np.maximum(scale, 1e-300)), np.max(np.abs(x - z) / np.maximum(scale, 1e-300))
        else:
            np.testing.assert_array_equal(x, z)


def _counts(rng, n, f):
    X = rng.poisson(0.6, size=(n, f))
    X[rng.random((n, f)) < 0.5] = 0
    return X


def _labels(rng, n):
    # Class "d" only in the last rows: absent from most partitions.
    y = rng.choice(np.array(["a", "b", "c"]), n)
    y[-7:] = "d"
    return y


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(42)
    n = 403
    return {
        "counts": _counts(rng, n, 12),
        "real": rng.normal(3.0, 2.0, size=(n, 4)) * np.array([1.0, 10.0, 0.1, 1e3]),
        "y": _labels(rng, n),
        "w": rng.uniform(0.2, 3.0, n),
        "codes": np.column_stack([rng.integers(0, 3, n), rng.integers(0, 5, n), rng.integers(0, 2, n)]),
    }


SPARSE_FAMILIES = [
    (bayesnb.MultinomialNB, {"alpha": 0.5}),
    (bayesnb.BernoulliNB, {"alpha": (1.0, 2.0)}),
    (bayesnb.PoissonNB, {}),
]


@pytest.mark.parametrize(("cls", "params"), SPARSE_FAMILIES, ids=lambda v: getattr(v, "__name__", ""))
def test_sparse_chunks_equal_local_fit(client, data, cls, params):
    X = sp.csr_matrix(data["counts"])
    y, w = data["y"], data["w"]
    local = cls(**params).fit(X, y, sample_weight=w)
    dX = da.from_array(X, chunks=(61, X.shape[1]), asarray=False)
    assert dX.numblocks[0] >= 6
    est = distributed.fit(cls(**params), dX, da.from_array(y, chunks=100), sample_weight=da.from_array(w, chunks=77))
    np.testing.assert_array_equal(est.classes_, local.classes_)
    assert est.n_features_in_ == local.n_features_in_
    assert_same_posterior(est.posterior_, local.posterior_)
    assert_same_posterior(est.class_posterior_, local.class_posterior_)
    assert est.log_evidence() == pytest.approx(local.log_evidence(), rel=1e-12)
    proba = distributed.predict_proba(est, dX)
    assert isinstance(proba, da.Array)
    np.testing.assert_allclose(proba.compute(), local.predict_proba(X), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(distributed.predict(est, dX).compute(), local.predict(X))


DENSE_FAMILIES = [
    (bayesnb.GaussianNB, {}, "real"),
    (bayesnb.GaussianBayesClassifier, {"covariance": "full"}, "real"),
    (bayesnb.GaussianBayesClassifier, {"covariance": "shared"}, "real"),
    (bayesnb.CategoricalNB, {"alpha": 0.7}, "codes"),
    (bayesnb.MultinomialNB, {}, "counts"),
]


@pytest.mark.parametrize(("cls", "params", "kind"), DENSE_FAMILIES, ids=lambda v: getattr(v, "__name__", str(v)))
def test_dense_chunks_equal_local_fit(client, data, cls, params, kind):
    X, y, w = data[kind], data["y"], data["w"]
    if kind == "codes":
        X = X.copy()
        X[:50, 1] = 6  # the largest code of feature 1 only in the first partition
    local = cls(**params).fit(X, y, sample_weight=w)
    # Chunked along the features too: re-chunked to whole rows inside.
    dX = da.from_array(X, chunks=(50, max(1, X.shape[1] // 2)))
    est = distributed.fit(cls(**params), dX, y, sample_weight=w)
    assert_same_posterior(est.posterior_, local.posterior_)
    assert_same_posterior(est.class_posterior_, local.class_posterior_)
    if kind == "codes":
        np.testing.assert_array_equal(est.n_categories_, local.n_categories_)
    np.testing.assert_allclose(
        distributed.predict_log_proba(est, dX).compute(), local.predict_log_proba(X), rtol=1e-12, atol=1e-12
    )


def test_classes_argument_and_unknown_label(client, data):
    X, y = data["counts"], data["y"]
    dX = da.from_array(X, chunks=(100, X.shape[1]))
    classes = np.array(["a", "b", "c", "d", "e"])
    est = distributed.fit(bayesnb.MultinomialNB(), dX, da.from_array(y, chunks=100), classes=classes)
    local = bayesnb.MultinomialNB().partial_fit(X, y, classes=classes)
    np.testing.assert_array_equal(est.classes_, classes)
    assert_same_posterior(est.posterior_, local.posterior_)
    with pytest.raises(ValueError, match="not in classes"):
        distributed.fit(bayesnb.MultinomialNB(), dX, da.from_array(y, chunks=100), classes=["a", "b"])


def test_bag_of_sparse_blocks(client, data):
    X = sp.csr_matrix(data["counts"])
    y, w = data["y"], data["w"]
    blocks = [(X[i : i + 40], y[i : i + 40], w[i : i + 40]) for i in range(0, X.shape[0], 40)]
    bag = db.from_sequence(blocks, npartitions=4)
    for cls in (bayesnb.MultinomialNB, bayesnb.BernoulliNB):
        local = cls().fit(X, y, sample_weight=w)
        est = distributed.fit(cls(), bag)
        assert_same_posterior(est.posterior_, local.posterior_)
        assert_same_posterior(est.class_posterior_, local.class_posterior_)
        pieces = distributed.predict_proba(est, bag).compute()
        np.testing.assert_allclose(np.vstack(pieces), local.predict_proba(X), rtol=0, atol=1e-12)


def _frame(data):
    rng = np.random.default_rng(7)
    n = data["y"].size
    colour = rng.choice(np.array(["red", "green", "blue", "black"]), n).astype(object)
    colour[:60] = "amber"  # a value seen only in the first partition
    return pd.DataFrame(
        {
            "size": data["real"][:, 0],
            "weight": data["real"][:, 1],
            "flag": rng.random(n) < 0.3,
            "colour": colour,
            "hits": data["counts"][:, 0],
            "label": data["y"],
            "w": data["w"],
        }
    )


def test_mixed_dataframe_equals_local_fit(client, data):
    df = _frame(data)
    features = df.drop(columns=["label", "w"])
    # "hits" holds counts: a Poisson block (on request; an integer column is Gaussian by default).
    local = bayesnb.MixedNB(integer_columns="poisson").fit(
        features, df["label"].to_numpy(), sample_weight=df["w"].to_numpy()
    )
    ddf = dd.from_pandas(df, npartitions=5)
    est = distributed.fit(bayesnb.MixedNB(integer_columns="poisson"), ddf, "label", sample_weight="w")
    assert [n for n, _, _ in est.estimators_] == [n for n, _, _ in local.estimators_]
    assert est.categories_.keys() == local.categories_.keys()
    for j in local.categories_:
        np.testing.assert_array_equal(est.categories_[j], local.categories_[j])
    assert_same_posterior(est.posterior_, local.posterior_)
    assert_same_posterior(est.class_posterior_, local.class_posterior_)
    np.testing.assert_array_equal(est.feature_names_in_, local.feature_names_in_)
    proba = distributed.predict_proba(est, ddf, drop=["label", "w"])
    assert isinstance(proba, dd.DataFrame)
    got = proba.compute()
    assert list(got.columns) == list(local.classes_)
    np.testing.assert_allclose(got.to_numpy(), local.predict_proba(features), rtol=0, atol=1e-12)
    pred = distributed.predict(est, ddf, drop=["label", "w"]).compute()
    np.testing.assert_array_equal(pred.to_numpy(), local.predict(features))


def test_dataframe_with_series_labels(client, data):
    X = data["real"]
    ddf = dd.from_pandas(pd.DataFrame(X, columns=list("pqrs")), npartitions=3)
    labels = dd.from_pandas(pd.Series(data["y"]), npartitions=3)
    local = bayesnb.GaussianNB().fit(pd.DataFrame(X, columns=list("pqrs")), data["y"])
    est = distributed.fit(bayesnb.GaussianNB(), ddf, labels)
    assert_same_posterior(est.posterior_, local.posterior_)
    np.testing.assert_array_equal(est.feature_names_in_, np.array(list("pqrs"), dtype=object))


def test_bad_inputs(data):
    X = data["counts"]
    with pytest.raises(TypeError, match="needs a Dask array, Dask DataFrame or Dask Bag"):
        distributed.fit(bayesnb.MultinomialNB(), X, data["y"])
    dX = da.from_array(X, chunks=100)
    with pytest.raises(ValueError, match="rows but y has"):
        distributed.fit(bayesnb.MultinomialNB(), dX, data["y"][:-1])
    with pytest.raises(ValueError, match="y is required"):
        distributed.fit(bayesnb.MultinomialNB(), dX)
    with pytest.raises(ValueError, match="split_every"):
        distributed.fit(bayesnb.MultinomialNB(), dX, data["y"], split_every=1)
    with pytest.raises(ValueError, match="Negative values"), dask.config.set(scheduler="synchronous"):
        distributed.fit(bayesnb.MultinomialNB(), da.from_array(-X, chunks=100), data["y"])
