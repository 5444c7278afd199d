"""ARFF ``string`` attributes and free-text CSV columns in the ``bayesnb`` command (issue 38, item 2).

A string attribute is free text, one document per row. As categories every test
document is a category never seen in training, every row gets the class prior and the
accuracy is the majority class's, silently. The command models the file's only string
feature as text (a bag of words, as ``--text`` does, saying so), refuses a string
attribute beside other columns (naming it and ``--text``), models it as categories only
when ``--features`` names it (with a note), and notes a CSV column that looks like free
text. Oracle: the same file fitted with ``--text``, and ``MultinomialNB`` on
``CountVectorizer`` counts.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose

from bayesnb import MultinomialNB
from _cli import run

TOPICS = {
    "econ": "market stocks trade bank rates growth inflation".split(),
    "sport": "game team score win player match goal".split(),
}


def _documents(n, seed):
    rng = np.random.default_rng(seed)
    labels = np.where(np.arange(n) % 3 == 0, "sport", "econ")  # econ the majority
    docs = [" ".join(rng.choice(TOPICS[c], 6)) + f" doc{seed}x{i}" for i, c in enumerate(labels)]
    return docs, labels


def _arff(path, docs, labels, extra=None):
    lines = ["% newswire, one document per row", "@relation news", "@attribute Text string"]
    if extra is not None:
        lines.append(f"@attribute {extra} numeric")
    lines += ["@attribute class {econ, sport}", "@data"]
    for i, (d, c) in enumerate(zip(docs, labels)):
        lines.append(f"'{d}'," + (f"{i}," if extra is not None else "") + c)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def news(tmp_path):
    docs, labels = _documents(45, 0)
    test_docs, test_labels = _documents(15, 1)
    return (
        _arff(tmp_path / "train.arff", docs, labels),
        _arff(tmp_path / "test.arff", test_docs, test_labels),
        (docs, labels, test_docs, test_labels),
    )


def _predictions(out):
    rows = list(csv.reader(io.StringIO(out)))
    return rows[0], rows[1:]


def test_the_only_string_attribute_is_modelled_as_text_and_said_so(news, tmp_path):
    train, test, (docs, labels, test_docs, test_labels) = news
    model = tmp_path / "auto.npz"
    code, out, err = run(["fit", train, "--model", model])
    assert code == 0, err
    assert "MultinomialNB (multinomial)" in out and "text column 'Text'" in out
    assert "column 'Text' is an ARFF string attribute" in err and "--text Text" in err
    layout = json.loads(Path(str(model) + ".cli.json").read_text())
    assert layout["kind"] == "text" and layout["text"] == "Text"
    code, out, err = run(["predict", test, "--model", model])
    assert code == 0, err
    header, rows = _predictions(out)
    # The same as asking for it with --text.
    explicit = tmp_path / "explicit.npz"
    assert run(["fit", train, "--text", "Text", "--model", explicit])[0] == 0
    code, out2, _ = run(["predict", test, "--model", explicit])
    assert code == 0 and out2 == out
    # ... which is the bag of words: far better than the majority class.
    from sklearn.feature_extraction.text import CountVectorizer

    vec = CountVectorizer()
    ref = MultinomialNB().fit(vec.fit_transform(docs), labels)
    proba = np.array([[float(v) for v in r[3:]] for r in rows])
    assert header[:3] == ["line", "label", "predicted"]
    assert_allclose(proba, ref.predict_proba(vec.transform(test_docs)), rtol=1e-5)
    accuracy = np.mean([r[2] for r in rows] == test_labels)
    assert accuracy == 1.0 > np.mean(test_labels == "econ")


def test_a_string_attribute_beside_other_columns_is_refused_naming_it(tmp_path):
    docs, labels = _documents(30, 0)
    path = _arff(tmp_path / "news.arff", docs, labels, extra="length")
    code, out, err = run(["fit", path, "--model", tmp_path / "m.npz"])
    assert code == 1 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "column 'Text' is an ARFF string attribute" in err
    assert "--text Text" in err and "--features" in err
    assert not (tmp_path / "m.npz").exists()
    # compare reads its data the same way.
    code, _, err = run(["compare", path, "--cv", "3"])
    assert code == 1 and "ARFF string attribute" in err
    # Said what to do, it does it.
    assert run(["fit", path, "--text", "Text", "--model", tmp_path / "t.npz"])[0] == 0
    code, out, err = run(["fit", path, "--features", "length", "--model", tmp_path / "l.npz"])
    assert code == 0 and "GaussianNB (gaussian)" in out and err == ""


def test_a_string_attribute_named_in_features_is_categories_with_a_note(tmp_path):
    docs, labels = _documents(30, 0)
    path = _arff(tmp_path / "news.arff", docs, labels)
    code, out, err = run(["fit", path, "--features", "Text", "--model", tmp_path / "m.npz"])
    assert code == 0, err
    assert "CategoricalNB (categorical)" in out
    assert "column 'Text' is an ARFF string attribute (free text) modelled as categories" in err
    assert "--text Text" in err


def test_a_family_that_cannot_model_text_is_refused_not_turned_into_categories(news, tmp_path):
    train, _, _ = news
    code, _, err = run(["fit", train, "--family", "categorical", "--model", tmp_path / "m.npz"])
    assert code == 1 and "ARFF string attribute" in err and "--text Text" in err
    # A text family is the text model.
    code, out, err = run(["fit", train, "--family", "bernoulli", "--model", tmp_path / "b.npz"])
    assert code == 0 and "BernoulliNB (bernoulli)" in out and "text column 'Text'" in out, err


def test_several_string_attributes_are_refused(tmp_path):
    path = tmp_path / "two.arff"
    path.write_text(
        "@relation r\n@attribute title string\n@attribute body string\n@attribute class {a, b}\n@data\n"
        + "".join(f"'t {i}','b {i} words',{'ab'[i % 2]}\n" for i in range(12))
    )
    code, _, err = run(["fit", path, "--model", tmp_path / "m.npz"])
    assert code == 1 and "columns 'title', 'body' are ARFF string attributes" in err
    assert run(["fit", path, "--text", "body", "--model", tmp_path / "b.npz"])[0] == 0


def test_a_csv_column_of_free_text_gets_a_note_naming_text(tmp_path):
    docs, labels = _documents(30, 0)
    path = tmp_path / "news.csv"
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["review", "colour", "label"])
        for i, (d, c) in enumerate(zip(docs, labels)):
            w.writerow([d, ["red", "green"][i % 2], c])
    code, out, err = run(["fit", path, "--model", tmp_path / "m.npz"])
    assert code == 0, err
    assert "CategoricalNB (categorical)" in out
    assert "column 'review' looks like free text" in err and "--text review" in err
    # A column of a few repeated values, with spaces or not, is categories: no note.
    assert "'colour'" not in err
    code, _, err = run(["fit", path, "--features", "colour", "--model", tmp_path / "c.npz"])
    assert code == 0 and err == ""
    short = tmp_path / "short.csv"
    cities = ["New York", "Los Angeles", "Paris"] * 8
    short.write_text("city,label\n" + "".join(f"{c},{lab}\n" for c, lab in zip(cities, "ab" * 12)))
    code, _, err = run(["fit", short, "--model", tmp_path / "s.npz"])
    assert code == 0 and err == ""
