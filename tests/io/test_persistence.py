"""estimator.save / bayesnb.load: bit-identical round trips, clear errors, no pickle.

Every family is saved and loaded; every prediction of every estimate, the evidence and
posterior draws with the same seed must equal the original bit for bit, and a
``partial_fit`` after loading must continue exactly as the original does. Files that are
truncated, modified, foreign or from a newer format get a ``ModelFileError`` naming the
problem, and loading never reaches pickle.
"""

from __future__ import annotations

import datetime
import io
import json
import pickle
import zipfile

import jax
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from _registered import family_estimators
from sklearn.exceptions import NotFittedError

import bayesnb
from bayesnb import (
    BernoulliNB,
    CategoricalNB,
    GaussianBayesClassifier,
    GaussianNB,
    MixedNB,
    ModelFileError,
    MultinomialNB,
    PoissonNB,
)
from bayesnb.core.priors import Gamma, NormalInverseGamma, NormalInverseWishart
from bayesnb.io.persistence import FORMAT_VERSION, _checksum

ESTIMATES = ("predictive", "mean", "map", "mle")
RNG = np.random.default_rng(7)
N = 40
Y = RNG.choice(np.array(["cat", "dog", "eel"]), N)
COUNTS = RNG.poisson(np.where(Y[:, None] == "cat", 3.0, 1.0), (N, 4)) + (RNG.random((N, 4)) < 0.3)
REAL = RNG.normal(np.where(Y[:, None] == "dog", 1.0, -0.5), 1.0, (N, 3))
CODES = RNG.integers(0, 3, (N, 3))
FRAME = pd.DataFrame(
    {
        "size": REAL[:, 0],
        "tall": REAL[:, 1] > 0,
        "colour": pd.Categorical(RNG.choice(["red", "blue", "green"], N)),
        "visits": COUNTS[:, 0],
        "shape": RNG.choice(["round", "long"], N),
    }
)
MIXED_ARRAY = np.column_stack([COUNTS[:, :2], REAL[:, :2], CODES[:, :1]]).astype(float)

# (id, estimator, X): every family, each GaussianBayesClassifier covariance, explicit
# prior pytrees as parameters, sparse input and nested MixedNB blocks.
CASES = [
    ("multinomial", MultinomialNB(alpha=2.0), COUNTS),
    ("multinomial-array-alpha", MultinomialNB(alpha=np.array([1.5, 2.0, 2.5, 3.0])), COUNTS),
    ("multinomial-sparse", MultinomialNB(alpha=1.5), sp.csr_matrix(COUNTS)),
    ("bernoulli", BernoulliNB(alpha=(2.0, 3.0), binarize=1.5), COUNTS),
    ("categorical", CategoricalNB(alpha=2.0, min_categories=[3, 4, 5]), CODES),
    ("gaussian-prior", GaussianNB(prior=NormalInverseGamma(0.0, 0.5, 2.0, np.array([1.0, 2.0, 3.0]))), REAL),
    ("gbc-shared", GaussianBayesClassifier(covariance="shared"), REAL),
    ("gbc-diag", GaussianBayesClassifier(covariance="diag"), REAL),
    ("gbc-niw-prior", GaussianBayesClassifier(prior=NormalInverseWishart(0.0, 1.0, 5.0, np.eye(3))), REAL),
    ("poisson", PoissonNB(alpha=2.0, beta=0.5), COUNTS),
    ("poisson-prior", PoissonNB(prior=Gamma(np.full(4, 2.0), 0.1)), COUNTS),
    ("mixed-frame", MixedNB(class_alpha=2.0, integer_columns="poisson"), FRAME),  # "visits": counts
    # Hyperparameters learned from the evidence are re-optimised from the stored statistics.
    ("multinomial-evidence", MultinomialNB(alpha="evidence", alpha_scope="class"), COUNTS),
    ("bernoulli-evidence", BernoulliNB(alpha=("evidence", "evidence"), binarize=1.5), COUNTS),
    ("gaussian-evidence", GaussianNB(prior="evidence"), REAL),
    (
        "mixed-blocks",
        MixedNB(
            [
                ("words", MultinomialNB(alpha=2.0), [0, 1]),
                ("real", GaussianNB(prior=NormalInverseGamma(0.0, 1.0, 2.0, 1.0)), slice(2, 4)),
                ("codes", CategoricalNB(alpha=2.0), np.array([False, False, False, False, True])),
            ]
        ),
        MIXED_ARRAY,
    ),
]
#: Valid X for a family's support (a registered family of a new support needs a line here).
DATA_FOR_SUPPORT = {"counts": COUNTS, "binary": (COUNTS > 1).astype(int), "codes": CODES, "real": REAL, "positive": np.exp(REAL)}


def registered_cases():
    """``(id, estimator, X)``: every registered family's estimator with its defaults
    (tests/_registered.py), so that a family registered later is saved and loaded too."""
    return [(f"registered-{name}", est, DATA_FOR_SUPPORT[support]) for name, support, est in family_estimators()]


CASES += registered_cases()
IDS = [c[0] for c in CASES]


def _roundtrip(est, tmp_path, name="model.npz"):
    path = tmp_path / name
    est.save(path)
    return bayesnb.load(path)


def _identical(a, b):
    """Same type, dtype, shape and bytes (NaN-safe, sign-of-zero-safe)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    if a.dtype.kind == "O":
        assert a.tolist() == b.tolist()
    else:
        assert a.tobytes() == b.tobytes()


def _all_predictions(est, X, draws=True):
    """Every output of ``est`` for every estimate; a ValueError (estimate undefined) is an output too.

    One number of draws throughout: JAX compiles a sampler once per shape.
    """
    out = {}
    for estimate in ESTIMATES:
        est.set_params(estimate=estimate)
        for method in ("predict_joint_log_proba", "predict_log_proba", "predict_proba", "predict"):
            try:
                out[estimate, method] = getattr(est, method)(X)
            except ValueError as err:
                out[estimate, method] = f"ValueError: {err}"
    est.set_params(estimate="predictive")
    out["log_evidence"] = est.log_evidence()
    if draws:
        out["sample_posterior"] = est.sample_posterior(4, random_state=0)
        out["draws"] = est.predict_proba_draws(X, n_draws=4, random_state=jax.random.key(5))
    return out


def _assert_same_outputs(a, b):
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], str):
            assert a[key] == b[key], key
        elif isinstance(a[key], dict):
            assert a[key].keys() == b[key].keys()
            for k in a[key]:
                _identical(a[key][k], b[key][k])
        elif isinstance(a[key], float):
            assert a[key] == b[key] and np.float64(a[key]).tobytes() == np.float64(b[key]).tobytes()
        else:
            _identical(a[key], b[key])


def _assert_same_state(a, b):
    assert type(a) is type(b)
    assert repr(a.get_params(deep=False)) == repr(b.get_params(deep=False))
    _identical(a.classes_, b.classes_)
    assert a.n_features_in_ == b.n_features_in_
    assert type(a.stats_) is type(b.stats_)
    for x, y in zip(jax.tree.leaves(a.stats_), jax.tree.leaves(b.stats_)):
        _identical(x, y)
    for x, y in zip(jax.tree.leaves(a.posterior_), jax.tree.leaves(b.posterior_)):
        _identical(x, y)


@pytest.mark.parametrize(("case", "est", "X"), CASES, ids=IDS)
def test_round_trip_is_bit_identical(case, est, X, tmp_path):
    est = est.fit(X, Y)
    loaded = _roundtrip(est, tmp_path)
    _assert_same_state(est, loaded)
    _assert_same_outputs(_all_predictions(est, X), _all_predictions(loaded, X))
    if isinstance(est, MixedNB):
        assert [n for n, _, _ in est.estimators_] == [n for n, _, _ in loaded.estimators_]
        for (_, a, ia), (_, b, ib) in zip(est.estimators_, loaded.estimators_):
            _identical(ia, ib)
            _assert_same_state(a, b)


@pytest.mark.parametrize(("case", "est", "X"), CASES, ids=IDS)
def test_partial_fit_after_load_continues_exactly(case, est, X, tmp_path):
    first = np.arange(N) < 25
    part = (lambda rows: X.iloc[rows]) if isinstance(X, pd.DataFrame) else (lambda rows: X[rows])
    original = est.partial_fit(part(first), Y[first], classes=np.unique(Y))
    loaded = _roundtrip(original, tmp_path)
    original.partial_fit(part(~first), Y[~first])
    loaded.partial_fit(part(~first), Y[~first])
    _assert_same_state(original, loaded)
    _assert_same_outputs(_all_predictions(original, X, draws=False), _all_predictions(loaded, X, draws=False))


@pytest.mark.parametrize(
    "labels",
    [
        np.array([3, 1, 2]),
        np.array([0.5, -1.0, 2.25]),
        np.array([True, False, True]),
        np.array(["b", "a", "c"]),
        np.array(["b", "a", "c"], dtype=object),
        np.array([np.str_("b"), "a", "c"], dtype=object),
        np.array([7, 2**40, -3], dtype=object),
        np.array(["2020-01-02", "2021-03-04", "2019-05-06"], dtype="datetime64[D]"),
    ],
    ids=["int", "float", "bool", "str", "object-str", "object-str-mixed-numpy", "object-int", "datetime64"],
)
def test_class_labels_of_any_storable_dtype(labels, tmp_path):
    idx = np.arange(N) % labels.size
    idx[: labels.size] = np.arange(labels.size)
    y = labels[idx]
    est = MultinomialNB().partial_fit(COUNTS, y, classes=np.unique(labels))
    loaded = _roundtrip(est, tmp_path)
    assert loaded.classes_.dtype == est.classes_.dtype
    assert loaded.classes_.tolist() == est.classes_.tolist()
    _identical(est.predict(COUNTS), loaded.predict(COUNTS))


def test_object_labels_that_cannot_be_stored_are_refused(tmp_path):
    days = np.array([datetime.date(2020, 1, 1), datetime.date(2021, 1, 1)], dtype=object)
    est = MultinomialNB().partial_fit(COUNTS[:4], days[[0, 1, 0, 1]], classes=days)
    with pytest.raises(TypeError, match=r"classes_: an object array of date values cannot be stored without pickle"):
        est.save(tmp_path / "m.npz")
    assert not list(tmp_path.iterdir())  # nothing half-written
    frame = pd.DataFrame({"when": [datetime.date(2020, 1, d) for d in (1, 2, 1, 2)]})
    mixed = MixedNB().fit(frame, [0, 1, 0, 1])
    with pytest.raises(TypeError, match=r"categories_.*object array of date values"):
        mixed.save(tmp_path / "m.npz")


def test_unfitted_estimator_round_trip(tmp_path):
    est = GaussianBayesClassifier(covariance="shared", prior=NormalInverseWishart(0.0, 1.0, 5.0, np.eye(3)))
    loaded = _roundtrip(est, tmp_path)
    assert repr(loaded.get_params()) == repr(est.get_params())
    with pytest.raises(NotFittedError):
        loaded.predict(REAL)
    _identical(loaded.fit(REAL, Y).predict_proba(REAL), est.fit(REAL, Y).predict_proba(REAL))


def test_file_objects_and_str_paths(tmp_path):
    est = PoissonNB().fit(COUNTS, Y)
    buf = io.BytesIO()
    est.save(buf)
    buf.seek(0)
    _identical(bayesnb.load(buf).predict_proba(COUNTS), est.predict_proba(COUNTS))
    est.save(str(tmp_path / "m.npz"))
    _identical(bayesnb.load(str(tmp_path / "m.npz")).predict_proba(COUNTS), est.predict_proba(COUNTS))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.npz"]  # no temporary file left
    # An .npz for numpy too: the arrays are there, with no pickle needed.
    with np.load(tmp_path / "m.npz", allow_pickle=False) as npz:
        assert any(name.endswith("stats_.feature_count") for name in npz.files)


def test_subclasses_and_foreign_parameters_are_refused(tmp_path):
    class MyNB(MultinomialNB):
        pass

    with pytest.raises(TypeError, match=r"MyNB is not one of bayesnb's estimators"):
        MyNB().fit(COUNTS, Y).save(tmp_path / "m.npz")
    with pytest.raises(TypeError, match=r"MultinomialNB.alpha: values of type object are not supported"):
        MultinomialNB(alpha=object()).save(tmp_path / "m.npz")


# ----------------------------------------------------------------------------- bad files


@pytest.fixture(scope="module")
def saved():
    buf = io.BytesIO()
    MultinomialNB(alpha=2.0).fit(COUNTS, Y).save(buf)
    return buf.getvalue()


def _members(data):
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def _rezip(members):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, content in members.items():
            zf.writestr(name, content)
    return buf.getvalue()


def _load_bytes(data):
    return bayesnb.load(io.BytesIO(data))


def _arrays(members):
    return {
        name[:-4]: np.lib.format.read_array(io.BytesIO(content), allow_pickle=False)
        for name, content in members.items()
        if name.endswith(".npy")
    }


def _with_metadata(data, edit, *, fix_checksum):
    members = _members(data)
    meta = json.loads(members["metadata.json"])
    edit(meta)
    if fix_checksum:
        meta["checksum"] = _checksum(meta, _arrays(members))
    members["metadata.json"] = json.dumps(meta).encode()
    return _rezip(members)


def test_tampered_array_fails_the_checksum(saved):
    members = _members(saved)
    name = next(n for n in members if n.endswith("stats_.feature_count.npy"))
    arr = np.lib.format.read_array(io.BytesIO(members[name]))
    arr[0, 0] += 1.0  # one more token: a different, still perfectly valid, model
    out = io.BytesIO()
    np.lib.format.write_array(out, arr)
    members[name] = out.getvalue()
    with pytest.raises(ModelFileError, match=r"checksum mismatch: the model file was modified"):
        _load_bytes(_rezip(members))


def test_tampered_metadata_fails_the_checksum(saved):
    def edit(meta):
        meta["estimator"]["params"]["class_alpha"] = 5.0

    with pytest.raises(ModelFileError, match=r"checksum mismatch"):
        _load_bytes(_with_metadata(saved, edit, fix_checksum=False))


def test_flipped_byte_is_caught(saved):
    data = bytearray(saved)
    data[len(data) // 3] ^= 0xFF
    with pytest.raises(ModelFileError, match=r"corrupted|checksum|not valid JSON|do not match"):
        _load_bytes(bytes(data))


@pytest.mark.parametrize("fraction", [0.0, 0.001, 0.3, 0.7, 0.99])
def test_truncated_file(saved, fraction):
    cut = saved[: int(len(saved) * fraction)]
    with pytest.raises(ModelFileError, match=r"truncated or corrupted|not a ZIP"):
        _load_bytes(cut)


def test_foreign_files(tmp_path):
    npz = io.BytesIO()
    np.savez(npz, x=np.arange(3))
    with pytest.raises(ModelFileError, match=r"not a bayesnb model file: the archive has no metadata.json"):
        _load_bytes(npz.getvalue())
    with pytest.raises(ModelFileError, match=r"not a bayesnb model file: it is not a ZIP"):
        _load_bytes(pickle.dumps(MultinomialNB()))
    with pytest.raises(ModelFileError, match=r"not a ZIP"):
        _load_bytes(b"alpha,beta\n1,2\n")
    npy = io.BytesIO()
    np.save(npy, np.arange(3))
    with pytest.raises(ModelFileError, match=r"not a ZIP"):
        _load_bytes(npy.getvalue())
    other = _rezip({"metadata.json": json.dumps({"format": "someone-else", "version": 3}).encode()})
    with pytest.raises(ModelFileError, match=r"format is 'someone-else', expected 'bayesnb-model'"):
        _load_bytes(other)
    with pytest.raises(FileNotFoundError):
        bayesnb.load(tmp_path / "absent.npz")


def test_newer_format_version_is_refused(saved):
    def edit(meta):
        meta["format_version"] = FORMAT_VERSION + 1

    with pytest.raises(ModelFileError, match=rf"format_version {FORMAT_VERSION + 1}, newer than this bayesnb reads"):
        _load_bytes(_with_metadata(saved, edit, fix_checksum=True))


def test_other_library_version_loads_with_a_warning(saved):
    def edit(meta):
        meta["library_version"] = "0.0.1"

    with pytest.warns(UserWarning, match=r"written by bayesnb 0\.0\.1"):
        est = _load_bytes(_with_metadata(saved, edit, fix_checksum=True))
    assert est.predict(COUNTS).shape == (N,)


def test_a_file_cannot_name_arbitrary_classes(saved):
    """Class names are looked up in bayesnb's own tables, never imported."""

    def estimator(meta):
        meta["estimator"]["class"] = "os.system"

    with pytest.raises(ModelFileError, match=r"unknown estimator class 'os.system'"):
        _load_bytes(_with_metadata(saved, estimator, fix_checksum=True))

    def pytree(meta):
        meta["estimator"]["attributes"]["stats_"]["namedtuple"] = "subprocess.Popen"

    with pytest.raises(ModelFileError, match=r"unknown pytree type 'subprocess.Popen'"):
        _load_bytes(_with_metadata(saved, pytree, fix_checksum=True))


def test_inconsistent_state_is_a_clear_error(saved):
    def edit(meta):
        meta["estimator"]["attributes"]["n_features_in_"] = 9

    with pytest.raises(ModelFileError, match=r"saved state of MultinomialNB is inconsistent"):
        _load_bytes(_with_metadata(saved, edit, fix_checksum=True))


def test_loading_never_unpickles(saved, monkeypatch):
    """An object-dtype (pickled) array member is refused without reaching pickle."""

    def boom(*args, **kwargs):
        raise AssertionError("pickle was called while loading")

    members = _members(saved)
    name = next(n for n in members if n.endswith("classes_.npy"))
    payload = io.BytesIO()
    np.lib.format.write_array(payload, np.array(["cat", "dog", "eel"], dtype=object), allow_pickle=True)
    members[name] = payload.getvalue()
    data = _rezip(members)
    monkeypatch.setattr(pickle, "loads", boom)
    monkeypatch.setattr(pickle, "load", boom)
    monkeypatch.setattr(pickle, "Unpickler", boom)
    with pytest.raises(ModelFileError, match=r"truncated or corrupted.*allow_pickle=False"):
        _load_bytes(data)
    # A normal load does not touch pickle either.
    assert _load_bytes(saved).predict(COUNTS).shape == (N,)
