"""Issue 40: a text layout rewritten with its checksum recomputed cannot permute the vocabulary.

``bayesnb fit --text COL`` saves the model with its vocabulary in column order as
``feature_names_in_`` (``bayesnb.cli.userdata.save_model``), so ``bayesnb predict``
refuses a layout whose words were swapped (which would count "free" in the column of
"call"), naming the column and both words. The expected probabilities of an honest
layout are the exact Dirichlet-multinomial predictive counted from the TSV text by the
test itself (:func:`_oracle`, ``scipy.special.gammaln``), not by bayesnb.
"""

import json
import warnings
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import gammaln, logsumexp

from _cli import run

TRAIN = [
    ("ham", "hello friend see you at home"),
    ("spam", "free cash call now free"),
    ("ham", "call me at home friend"),
    ("spam", "win free prize call now"),
    ("ham", "lunch at home today"),
    ("spam", "claim your free cash prize"),
    ("ham", "see you at lunch"),
]
# Repeated words, so the exact predictive differs from the plug-in (mean) estimate.
NEW = ["free free cash now", "home home friend lunch", "call me now", "zebra call"]


def one_line_error(err):
    return err.startswith("bayesnb: error: ") and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def _words(text):
    # CountVectorizer's default analyser on these lower-case ASCII words.
    return [w for w in text.split() if len(w) >= 2]


def _oracle(new_texts, alpha=1.0, class_alpha=1.0):
    """p(class | text), the exact predictive, counted from the training text by hand.

    Over the training vocabulary V (a word not in it is not counted): with a_cw = alpha +
    n_cw and A_c = sum_w a_cw, log p(x | c) = lgamma(A_c) - lgamma(A_c + n) + sum_w
    [lgamma(a_cw + x_w) - lgamma(a_cw)] (the multinomial coefficient is the same for
    every class), and p(c) = (N_c + class_alpha) / (N + C class_alpha).
    """
    vocab = sorted({w for _, t in TRAIN for w in _words(t)})
    classes = sorted({c for c, _ in TRAIN})
    counts = {c: Counter() for c in classes}
    for c, t in TRAIN:
        counts[c].update(_words(t))
    n_docs = Counter(c for c, _ in TRAIN)
    out = []
    for text in new_texts:
        x = Counter(w for w in _words(text) if w in vocab)
        n = sum(x.values())
        joint = []
        for c in classes:
            a = {w: alpha + counts[c][w] for w in vocab}
            total = sum(a.values())
            lp = gammaln(total) - gammaln(total + n) + sum(gammaln(a[w] + k) - gammaln(a[w]) for w, k in x.items())
            lp += np.log((n_docs[c] + class_alpha) / (len(TRAIN) + len(classes) * class_alpha))
            joint.append(lp)
        joint = np.array(joint)
        out.append(np.exp(joint - logsumexp(joint)))
    return np.array(out)


def _predicted(out):
    rows = [line.split(",") for line in out.strip().splitlines()]
    cols = [rows[0].index("p(ham)"), rows[0].index("p(spam)")]
    return np.array([[float(r[c]) for c in cols] for r in rows[1:]])


@pytest.fixture
def model(tmp_path):
    train, new = tmp_path / "train.tsv", tmp_path / "new.tsv"
    train.write_text("label\ttext\n" + "".join(f"{c}\t{t}\n" for c, t in TRAIN))
    new.write_text("text\n" + "".join(f"{t}\n" for t in NEW))
    path = tmp_path / "m.npz"
    code, out, err = run(["fit", train, "--text", "text", "--model", path])
    assert code == 0, err
    assert "MultinomialNB" in out
    return train, new, path


def _layout(path):
    return Path(str(path) + ".cli.json")


def _rewrite(path, edit):
    from bayesnb.cli.userdata import _spec_checksum

    spec = json.loads(_layout(path).read_text())
    edit(spec)
    spec["checksum"] = _spec_checksum(spec)  # a tamperer who recomputes the checksum
    _layout(path).write_text(json.dumps(spec))


def test_honest_layout_predicts_the_counted_probabilities(model):
    _, new, path = model
    expected = _oracle(NEW)
    code, out, err = run(["predict", new, "--model", path])
    assert code == 0, err
    assert_allclose(_predicted(out), expected, rtol=1e-5)  # printed to 6 significant digits
    # At full precision, through the command's own loading and input path, with every
    # warning an error (the CSR input has no column names: no "valid feature names" warning).
    import bayesnb
    from bayesnb.cli import userdata

    vocabulary = json.loads(_layout(path).read_text())["vocabulary"]
    assert bayesnb.load(path).feature_names_in_.tolist() == vocabulary  # the file records the words
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf, spec = userdata.load_model(path)
        X = userdata.model_input(spec, userdata.read_data(new, None, True), fit=False)
        got = clf.predict_proba(X)
    assert not hasattr(clf, "feature_names_in_")
    assert_allclose(got, expected, rtol=1e-10, atol=1e-14)


def test_swapped_words_are_refused_naming_them(model):
    _, new, path = model
    vocabulary = json.loads(_layout(path).read_text())["vocabulary"]
    i, j = vocabulary.index("call"), vocabulary.index("free")

    def swap(spec):
        v = spec["vocabulary"]
        v[i], v[j] = v[j], v[i]

    _rewrite(path, swap)
    code, out, err = run(["predict", new, "--model", path])
    assert code == 1 and out == "" and one_line_error(err), err
    assert f"puts the word 'free' in column {i}" in err and f"model's column {i} counts the word 'call'" in err


def test_renamed_word_is_refused(model):
    _, new, path = model
    _rewrite(path, lambda s: s["vocabulary"].__setitem__(-1, "zebra"))  # same size, one word replaced
    code, _, err = run(["predict", new, "--model", path])
    assert code == 1 and one_line_error(err) and "'zebra'" in err and "'your'" in err, err


def test_model_without_its_vocabulary_is_refused(model, tmp_path):
    """A text model file that does not record its words (saved directly, hash rewritten)."""
    _, new, path = model
    import bayesnb
    from bayesnb.cli.userdata import _file_sha256

    clf = bayesnb.load(path)
    del clf.feature_names_in_
    path.unlink()
    clf.save(path)
    _rewrite(path, lambda s: s.__setitem__("model_sha256", _file_sha256(path)))
    code, _, err = run(["predict", new, "--model", path])
    assert code == 1 and one_line_error(err) and "does not record its vocabulary" in err, err


def test_vocabulary_sizes_are_checked():
    from bayesnb.cli.userdata import _check_vocabulary_fits_model

    def bad(what):
        raise ValueError(what)

    clf = SimpleNamespace(feature_names_in_=np.array(["a", "b", "c"], dtype=object), n_features_in_=2)
    with pytest.raises(ValueError, match="3 words for 2 features"):
        _check_vocabulary_fits_model(["a", "b"], clf, bad)
    clf.n_features_in_ = 3
    with pytest.raises(ValueError, match="2 words, but the model's vocabulary has 3"):
        _check_vocabulary_fits_model(["a", "b"], clf, bad)
    _check_vocabulary_fits_model(["a", "b", "c"], clf, bad)  # the same words in the same order


def test_format_3_text_layout_is_refused(model):
    _, new, path = model
    _rewrite(path, lambda s: s.__setitem__("format_version", 3))
    code, _, err = run(["predict", new, "--model", path])
    assert code == 1 and one_line_error(err) and "written by an older bayesnb" in err and "vocabulary" in err, err


def test_a_vocabulary_too_wide_to_store_is_refused_before_the_fit():
    from bayesnb.cli.userdata import DataError, _check_vocabulary_storage

    # 4 bytes x 70,000 characters x 1,001 words = 280 MB of fixed-width strings > 256 MiB.
    words = ["w%d" % k for k in range(1000)] + ["x" * 70_000]
    with pytest.raises(DataError, match=r"1,001 distinct words, the longest of 70,000 characters"):
        _check_vocabulary_storage(words, "text", "f.tsv")
    _check_vocabulary_storage(words[:-1] + ["x" * 60_000], "text", "f.tsv")  # 240 MB: stored
