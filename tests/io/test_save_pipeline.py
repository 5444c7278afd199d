"""Saving a scikit-learn ``Pipeline`` ending in a bayesnb estimator (issue 38).

``bayesnb.io.persistence.save(pipeline, path)`` stores the transforms of a fixed table
(``CountVectorizer``, ``TfidfVectorizer``, ``TfidfTransformer``, ``StandardScaler``) by
their parameters and fitted attributes, without pickle; ``bayesnb.load`` returns a fitted
``Pipeline``. Oracles: the original pipeline itself (scikit-learn's own transforms and
the saved estimator), compared bit for bit, since the loaded pipeline runs the same code
on the same stored arrays. Refusals: code-valued parameters, transforms outside the table,
a ``memory`` cache. Crafted files with the checksum recomputed (as an attacker would) are
refused naming the field.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
import types
import zipfile
from pathlib import Path

import numpy as np
import pytest
from sklearn.feature_extraction.text import CountVectorizer, TfidfTransformer, TfidfVectorizer
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

import bayesnb
from bayesnb.analysis import uncertainty as U
from bayesnb.exceptions import ModelFileError
from bayesnb.io import _sklearn_steps, persistence

ROOT = Path(__file__).resolve().parents[2]
SMS = ROOT.parent / "shared" / "data" / "sms_spam_collection" / "SMSSpamCollection"

TEXTS = [
    "free money now, claim your prize",
    "call me when you get home",
    "win a free prize: text WIN now",
    "see you at lunch tomorrow",
    "free free call now to claim cash",
    "are we still on for lunch later?",
    "urgent! your cash prize is waiting",
    "meeting moved to the afternoon",
]
LABELS = np.array(["spam", "ham", "spam", "ham", "spam", "ham", "spam", "ham"])
NEW = ["free lunch money", "call about the meeting", "prize prize prize", "zzz unseen words only"]


def _save(obj):
    buffer = io.BytesIO()
    persistence.save(obj, buffer)
    return buffer.getvalue()


def _load(data):
    return bayesnb.load(io.BytesIO(data))


def _assert_same_pipeline(loaded, pipe, X):
    assert isinstance(loaded, Pipeline)
    assert [n for n, _ in loaded.steps] == [n for n, _ in pipe.steps]
    assert loaded.memory is None and loaded.verbose == pipe.verbose
    for (_, a), (_, b) in zip(loaded.steps, pipe.steps):
        assert type(a) is type(b)
        assert repr(a.get_params(deep=False)) == repr(b.get_params(deep=False))
    np.testing.assert_array_equal(loaded.predict_proba(X), pipe.predict_proba(X))
    np.testing.assert_array_equal(loaded.predict(X), pipe.predict(X))
    got, want = loaded[:-1].transform(X), pipe[:-1].transform(X)
    assert type(got) is type(want) and got.dtype == want.dtype
    if hasattr(want, "toarray"):
        got, want = got.toarray(), want.toarray()
    np.testing.assert_array_equal(got, want)


# ----------------------------------------------------------------------------- round trips


def test_count_vectorizer_multinomial_round_trip():
    pipe = make_pipeline(CountVectorizer(), bayesnb.MultinomialNB()).fit(TEXTS, LABELS)
    data = _save(pipe)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        meta = json.loads(zf.read("metadata.json"))
    assert meta["format_version"] == 3 and "estimator" not in meta
    assert meta["pipeline"]["steps"][0][1]["transform"]["class"] == "sklearn.feature_extraction.text.CountVectorizer"
    loaded = _load(data)
    _assert_same_pipeline(loaded, pipe, TEXTS + NEW)
    assert loaded[0].vocabulary_ == pipe[0].vocabulary_
    assert loaded[0].fixed_vocabulary_ is False
    np.testing.assert_array_equal(loaded[0].get_feature_names_out(), pipe[0].get_feature_names_out())


def test_the_package_level_save_writes_the_same_file(tmp_path):
    # bayesnb.save is the persistence module's save (the name a Pipeline, which has no
    # .save method, is saved by), and an estimator's own .save writes the same bytes.
    pipe = make_pipeline(CountVectorizer(), bayesnb.MultinomialNB()).fit(TEXTS, LABELS)
    assert bayesnb.save is persistence.save
    bayesnb.save(pipe, tmp_path / "pipe.npz")
    _assert_same_pipeline(bayesnb.load(tmp_path / "pipe.npz"), pipe, TEXTS + NEW)
    bayesnb.save(pipe[-1], tmp_path / "a.npz")
    pipe[-1].save(tmp_path / "b.npz")
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()


def test_a_save_does_not_depend_on_the_clock(tmp_path, monkeypatch):
    # ZipFile stamps a member written by name with the current time; a save fixes the
    # stamp, so the same model saved an hour later is the same file (this test failed
    # before, and the one above did when its two saves straddled a 2-second boundary).
    est = bayesnb.MultinomialNB().fit(np.array([[1, 0, 2], [0, 3, 1]]), ["a", "b"])
    bayesnb.save(est, tmp_path / "now.npz")
    later = time.time() + 3600
    # zipfile's clock only (zipfile.time is the time module: patching its attribute
    # would move every caller's clock).
    monkeypatch.setattr(zipfile, "time", types.SimpleNamespace(time=lambda: later, localtime=time.localtime))
    bayesnb.save(est, tmp_path / "later.npz")
    assert (tmp_path / "now.npz").read_bytes() == (tmp_path / "later.npz").read_bytes()
    with zipfile.ZipFile(tmp_path / "later.npz") as zf:
        assert {i.date_time for i in zf.infolist()} == {(1980, 1, 1, 0, 0, 0)}
        assert {i.compress_type for i in zf.infolist()} == {zipfile.ZIP_DEFLATED}


@pytest.mark.skipif(not SMS.exists(), reason=f"{SMS} not found (the shared SMS Spam Collection is not on this machine)")
def test_sms_messages_round_trip():
    rows = [line.split("\t", 1) for line in SMS.read_text(encoding="utf-8").splitlines()[:400] if "\t" in line]
    y, texts = np.array([r[0] for r in rows]), [r[1] for r in rows]
    pipe = make_pipeline(CountVectorizer(ngram_range=(1, 2), min_df=1), bayesnb.MultinomialNB(alpha=0.5))
    pipe.fit(texts[:300], y[:300])
    assert len(pipe[0].vocabulary_) > 1000
    _assert_same_pipeline(_load(_save(pipe)), pipe, texts)


def test_tfidf_vectorizer_round_trip():
    vec = TfidfVectorizer(ngram_range=(1, 2), stop_words=["the", "to"], sublinear_tf=True, strip_accents="unicode")
    pipe = make_pipeline(vec, bayesnb.MultinomialNB()).fit(TEXTS, LABELS)
    loaded = _load(_save(pipe))
    _assert_same_pipeline(loaded, pipe, TEXTS + NEW)
    np.testing.assert_array_equal(loaded[0].idf_, pipe[0].idf_)


def test_count_tfidf_transformer_round_trip_with_a_dtype_parameter():
    pipe = Pipeline(
        [("vec", CountVectorizer(dtype=np.float32, binary=True)), ("tfidf", TfidfTransformer(smooth_idf=False)),
         ("nb", bayesnb.MultinomialNB())],
        verbose=False,
    ).fit(TEXTS, LABELS)
    loaded = _load(_save(pipe))
    assert loaded[0].dtype is np.float32
    _assert_same_pipeline(loaded, pipe, TEXTS + NEW)
    assert loaded[1].idf_.dtype == pipe[1].idf_.dtype == np.float32


def test_fixed_vocabulary_and_passthrough_round_trip():
    vocabulary = {"free": 2, "lunch": 0, "prize": 1}
    pipe = Pipeline(
        [("vec", CountVectorizer(vocabulary=vocabulary)), ("nothing", "passthrough"), ("nb", bayesnb.MultinomialNB())]
    ).fit(TEXTS, LABELS)
    loaded = _load(_save(pipe))
    assert loaded[0].vocabulary == vocabulary and loaded[0].fixed_vocabulary_ is True
    assert loaded.steps[1] == ("nothing", "passthrough")
    np.testing.assert_array_equal(loaded.predict_proba(NEW), pipe.predict_proba(NEW))


def test_standard_scaler_gaussian_round_trip_with_column_names():
    import pandas as pd  # a test dependency (pyproject's test extra): never skipped
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(40, 3)) * [1.0, 10.0, 0.1] + [0.0, 5.0, -2.0], columns=["a", "b", "c"])
    X["d"] = 3.0  # a constant column: its scale is 1, as scikit-learn sets it
    y = np.arange(40) % 3
    pipe = make_pipeline(StandardScaler(), bayesnb.GaussianNB()).fit(X, y)
    loaded = _load(_save(pipe))
    _assert_same_pipeline(loaded, pipe, X)
    np.testing.assert_array_equal(loaded[0].feature_names_in_, ["a", "b", "c", "d"])
    for key in ("mean_", "var_", "scale_"):
        np.testing.assert_array_equal(getattr(loaded[0], key), getattr(pipe[0], key))
    assert repr(loaded[0].n_samples_seen_) == repr(pipe[0].n_samples_seen_)  # value and numpy type


def test_uncertainty_through_a_loaded_pipeline_equals_the_original():
    pipe = make_pipeline(CountVectorizer(), bayesnb.MultinomialNB()).fit(TEXTS, LABELS)
    loaded = _load(_save(pipe))
    a = U.predict_proba_interval(loaded, NEW, 0.9, n_draws=60, random_state=3)
    b = U.predict_proba_interval(pipe, NEW, 0.9, n_draws=60, random_state=3)
    for x, z in zip(a, b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(z))
    top_a = U.top_features(loaded, "spam", n=4, n_draws=100, random_state=0)
    top_b = U.top_features(pipe, "spam", n=4, n_draws=100, random_state=0)
    assert repr(top_a) == repr(top_b)


def test_a_pipeline_file_loads_in_a_fresh_process(tmp_path):
    pipe = make_pipeline(TfidfVectorizer(), bayesnb.MultinomialNB()).fit(TEXTS, LABELS)
    path = tmp_path / "pipe.npz"
    persistence.save(pipe, path)
    script = (
        "import sys, json, numpy as np, bayesnb\n"
        "pipe = bayesnb.load(sys.argv[1])\n"
        "print(type(pipe).__name__)\n"
        "np.save(sys.argv[2], pipe.predict_proba(json.loads(sys.argv[3])))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(path), str(tmp_path / "p.npy"), json.dumps(NEW)],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["Pipeline"]
    np.testing.assert_array_equal(np.load(tmp_path / "p.npy"), pipe.predict_proba(NEW))


# ----------------------------------------------------------------------------- refusals at save


@pytest.mark.parametrize(
    "vec, match",
    [
        (CountVectorizer(tokenizer=str.split, token_pattern=None), r"step 'countvectorizer'.*tokenizer must be None.*code"),
        (CountVectorizer(preprocessor=str.lower), r"preprocessor must be None"),
        (CountVectorizer(analyzer=str.split), r"analyzer must be None"),
        # scikit-learn's fit refuses a set or a tuple; set_params after fit does not.
        (CountVectorizer(stop_words=["the", "a"]), r"stop_words must be None, 'english' or a list of str, got frozenset"),
        (TfidfVectorizer(use_idf=False), r"use_idf=False.*TfidfTransformer\(use_idf=False\)"),
    ],
    ids=["tokenizer", "preprocessor", "analyzer", "stop-words-set", "tfidf-no-idf"],
)
def test_code_and_unstorable_parameters_are_refused(vec, match):
    pipe = make_pipeline(vec, bayesnb.MultinomialNB()).fit(TEXTS, LABELS)
    if isinstance(vec.stop_words, list):
        vec.set_params(stop_words=frozenset(vec.stop_words))
    with pytest.raises(TypeError, match=match):
        _save(pipe)


def test_an_unsupported_transform_is_refused_naming_the_step_and_the_table():
    pipe = Pipeline(
        [("vec", CountVectorizer()), ("root", FunctionTransformer(np.sqrt)), ("nb", bayesnb.MultinomialNB())]
    ).fit(TEXTS, LABELS)
    with pytest.raises(
        TypeError,
        match=r"step 'root'.*FunctionTransformer.*CountVectorizer.*TfidfVectorizer.*TfidfTransformer.*StandardScaler"
        r".*pickle.*named_steps\['nb'\]\.save\(path\)",
    ):
        _save(pipe)


def test_memory_unfitted_and_foreign_final_steps_are_refused(tmp_path):
    import sklearn.naive_bayes as sknb

    pipe = make_pipeline(CountVectorizer(), bayesnb.MultinomialNB(), memory=str(tmp_path)).fit(TEXTS, LABELS)
    with pytest.raises(TypeError, match=r"memory=.*set pipeline.memory = None"):
        _save(pipe)
    with pytest.raises(TypeError, match=r"countvectorizer.*not fitted"):
        _save(make_pipeline(CountVectorizer(), bayesnb.MultinomialNB()))
    foreign = make_pipeline(CountVectorizer(), sknb.MultinomialNB()).fit(TEXTS, LABELS)
    with pytest.raises(TypeError, match=r"pipeline step 'multinomialnb'.*not one of bayesnb's estimators"):
        _save(foreign)


# ----------------------------------------------------------------------------- crafted files


def _unpack(data):
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        meta = json.loads(zf.read("metadata.json"))
        arrays = {n[:-4]: np.lib.format.read_array(io.BytesIO(zf.read(n))) for n in zf.namelist() if n.endswith(".npy")}
    return meta, arrays


def _pack(meta, arrays):
    meta = dict(meta)
    meta["arrays"] = {n: {"dtype": a.dtype.str, "shape": list(a.shape)} for n, a in arrays.items()}
    meta.pop("checksum", None)
    meta["checksum"] = persistence._checksum(meta, arrays)  # as an attacker would
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("metadata.json", json.dumps(meta))
        for name, arr in arrays.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, arr, allow_pickle=False)
            zf.writestr(f"{name}.npy", buffer.getvalue())
    return out.getvalue()


def _pairs(node):
    return dict((k, v) for k, v in node["dict"])


def _vocab_arrays(meta, step=0):
    vocab = meta["pipeline"]["steps"][step][1]["transform"]["attributes"]["vocabulary_"]
    return {k: v["array"] for k, v in _pairs(vocab).items()}


@pytest.fixture(scope="module")
def tfidf_file():
    pipe = make_pipeline(CountVectorizer(), TfidfTransformer(), bayesnb.MultinomialNB()).fit(TEXTS, LABELS)
    return _save(pipe)


def _crafted(data, edit):
    meta, arrays = _unpack(data)
    edit(meta, arrays)
    return _pack(meta, arrays)


def _set_vocabulary(meta, arrays, mapping):
    packed = _sklearn_steps._pack_vocabulary(mapping)
    for key, name in _vocab_arrays(meta).items():
        arrays[name] = packed[key]


def _index_out_of_range(meta, arrays):
    name = _vocab_arrays(meta)["indices"]
    arrays[name] = arrays[name].copy()
    arrays[name][np.argmax(arrays[name])] = arrays[name].size


def _index_twice(meta, arrays):
    name = _vocab_arrays(meta)["indices"]
    arrays[name] = arrays[name].copy()
    arrays[name][0] = arrays[name][1]


def _term_twice(meta, arrays):
    vocab = dict(_load_vocab(meta, arrays))
    terms = sorted(vocab, key=vocab.get)
    raw = [t.encode() for t in terms]
    raw[1] = raw[0]
    names = _vocab_arrays(meta)
    arrays[names["utf8"]] = np.frombuffer(b"".join(raw), dtype=np.uint8).copy()
    arrays[names["offsets"]] = np.concatenate([[0], np.cumsum([len(b) for b in raw])]).astype(np.int64)
    arrays[names["indices"]] = np.arange(len(raw), dtype=np.int64)


def _load_vocab(meta, arrays):
    names = _vocab_arrays(meta)
    return _sklearn_steps._unpack_vocabulary({k: arrays[v] for k, v in names.items()}, "test")


def _too_many_terms(meta, arrays):
    # A hundred thousand terms declared over the few bytes of the real vocabulary: all but one empty.
    names = _vocab_arrays(meta)
    size = arrays[names["utf8"]].size
    n = 100_000
    offsets = np.full(n + 1, size, dtype=np.int64)
    offsets[0] = 0
    arrays[names["offsets"]] = offsets
    arrays[names["indices"]] = np.arange(n, dtype=np.int64)


def _offsets_past_the_bytes(meta, arrays):
    name = _vocab_arrays(meta)["offsets"]
    arrays[name] = arrays[name].copy()
    arrays[name][-1] += 5


def _fewer_terms(meta, arrays):
    # A vocabulary one term short of what the TfidfTransformer and the estimator take.
    vocab = _load_vocab(meta, arrays)
    last = max(vocab, key=vocab.get)
    _set_vocabulary(meta, arrays, {t: i for t, i in vocab.items() if t != last})


def _idf_array(meta, step=1):
    return meta["pipeline"]["steps"][step][1]["transform"]["attributes"]["idf_"]["array"]


def _negative_idf(meta, arrays):
    name = _idf_array(meta)
    arrays[name] = arrays[name].copy()
    arrays[name][0] = -0.5


def _class_not_in_table(meta, arrays):
    meta["pipeline"]["steps"][1][1]["transform"]["class"] = "sklearn.preprocessing.FunctionTransformer"


def _bad_analyzer(meta, arrays):
    meta["pipeline"]["steps"][0][1]["transform"]["params"]["analyzer"] = "os.system"


def _object_dtype(meta, arrays):
    meta["pipeline"]["steps"][0][1]["transform"]["params"]["dtype"] = "object"


def _reading_files(meta, arrays):
    meta["pipeline"]["steps"][0][1]["transform"]["params"]["input"] = "filename"


def _declares_version_2(meta, arrays):
    meta["format_version"] = 2


@pytest.mark.parametrize(
    "edit, match",
    [
        (_index_out_of_range, r"'countvectorizer' \(CountVectorizer\)\.vocabulary_: the columns .* permutation of range"),
        (_index_twice, r"vocabulary_: the columns .* permutation of range\(\d+\) \(an index is out of range or used twice\)"),
        (_term_twice, r"vocabulary_ holds the same term twice"),
        (_too_many_terms, r"vocabulary_ declares 100000 terms in \d+ bytes: more than one empty term"),
        (_offsets_past_the_bytes, r"vocabulary_\.offsets must rise from 0 to the \d+ bytes of utf8"),
        (_fewer_terms, r"step 'tfidftransformer' takes \d+ columns but the step before it gives \d+"),
        (_negative_idf, r"'tfidftransformer' \(TfidfTransformer\)\.idf_ holds values below 1"),
        (_class_not_in_table, r"FunctionTransformer' is not a transform of bayesnb's table"),
        (_bad_analyzer, r"CountVectorizer\)\.analyzer must be one of \['word', 'char', 'char_wb'\]"),
        (_object_dtype, r"CountVectorizer\)\.dtype must be one of the numpy dtypes"),
        (_reading_files, r"CountVectorizer\)\.input must be one of \['content'\]"),
        (_declares_version_2, r"pipeline file .* format_version 3"),
    ],
    ids=lambda v: getattr(v, "__name__", "")[1:] if callable(v) else None,
)
def test_crafted_pipeline_files_are_refused_naming_the_field(tfidf_file, edit, match):
    crafted = _crafted(tfidf_file, edit)
    with pytest.raises(ModelFileError, match=match):
        _load(crafted)


def test_a_zero_scale_is_refused():
    X, y = np.random.default_rng(1).normal(size=(20, 3)), np.arange(20) % 2
    data = _save(make_pipeline(StandardScaler(), bayesnb.GaussianNB()).fit(X, y))

    def zero(meta, arrays):
        name = meta["pipeline"]["steps"][0][1]["transform"]["attributes"]["scale_"]["array"]
        arrays[name] = arrays[name].copy()
        arrays[name][1] = 0.0

    with pytest.raises(ModelFileError, match=r"'standardscaler' \(StandardScaler\)\.scale_ holds values <= 0"):
        _load(_crafted(data, zero))


def test_an_earlier_reader_refuses_a_pipeline_file(tfidf_file, monkeypatch):
    monkeypatch.setattr(persistence, "FORMAT_VERSION", 2)
    with pytest.raises(ModelFileError, match=r"format_version 3, newer than this bayesnb reads \(up to 2\)"):
        _load(tfidf_file)


def test_a_numpy_scalar_comes_back_as_that_scalar():
    """StandardScaler.n_samples_seen_ is a numpy scalar: stored 0-d, it loads as the scalar
    (np.ascontiguousarray had made it a 1-element array); a file that stored a scalar as a
    1-element array, as earlier versions wrote it, still loads it as the scalar."""
    enc = persistence._Encoder()
    node = enc.value(np.int64(7), "n")
    assert enc.arrays[node["scalar"]].shape == ()
    assert repr(persistence._Decoder(enc.arrays).value(node)) == "np.int64(7)"
    old = {node["scalar"]: np.array([7], dtype=np.int64)}
    assert repr(persistence._Decoder(old).value(node)) == "np.int64(7)"
    with pytest.raises(ModelFileError, match=r"scalar .* is an array of shape \(2,\)"):
        persistence._Decoder({node["scalar"]: np.array([7, 8])}).value(node)
