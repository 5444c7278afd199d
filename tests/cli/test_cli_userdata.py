"""``bayesnb fit`` / ``predict`` / ``compare`` on a user's CSV/TSV files.

The command's numbers are checked against the library called directly on the same
columns: a saved model predicts what the estimator fitted in Python predicts, and the
saved file is an ordinary bayesnb model file (``bayesnb.load``).
"""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from numpy.testing import assert_allclose

import bayesnb
from bayesnb import CategoricalNB, GaussianNB, MixedNB, MultinomialNB
from _cli import run


def read_csv(text, delimiter=","):
    rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    return rows[0], rows[1:]


@pytest.fixture
def numeric_csv(tmp_path):
    rng = np.random.default_rng(0)
    y = np.repeat(["low", "high"], 25)
    X = rng.normal(size=(50, 3)) + (y == "high")[:, None] * np.array([2.0, -1.0, 0.5])
    path = tmp_path / "numbers.csv"
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["width", "height", "class", "depth"])  # the label in the middle
        for row, label in zip(X, y):
            w.writerow([repr(float(row[0])), repr(float(row[1])), label, repr(float(row[2]))])
    return path, X, y


@pytest.fixture
def text_csv(tmp_path):
    rng = np.random.default_rng(1)
    spam, ham = ["win", "cash", "prize", "free", "claim"], ["lunch", "see", "you", "home", "later"]
    rows = []
    for label, vocab in (("spam", spam), ("ham", ham)) * 15:
        rows.append((label, " ".join(rng.choice(vocab, 4)) + ", ok"))  # a comma inside the quoted text
    path = tmp_path / "messages.csv"
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "message", "label"])
        for i, (label, text) in enumerate(rows):
            w.writerow([i, text, label])
    return path, rows


def test_fit_predict_numeric_columns_is_gaussian_nb(numeric_csv, tmp_path):
    path, X, y = numeric_csv
    model = tmp_path / "model.npz"
    code, out, err = run(["fit", path, "--model", model])
    assert code == 0, err
    assert "GaussianNB (gaussian) on 50 rows" in out and "3 feature columns (3 numeric)" in out
    assert model.is_file() and (tmp_path / "model.npz.cli.json").is_file()
    layout = json.loads((tmp_path / "model.npz.cli.json").read_text())
    assert layout["label"] == "class" and layout["features"] == ["width", "height", "depth"]

    code, out, err = run(["predict", path, "--model", model])
    assert code == 0, err
    header, rows = read_csv(out)
    assert header == ["line", "label", "predicted", "p(high)", "p(low)"]
    ref = GaussianNB().fit(X, y)
    proba = np.array([[float(v) for v in r[3:5]] for r in rows])
    assert_allclose(proba, ref.predict_proba(X), rtol=1e-5, atol=1e-12)
    assert [r[2] for r in rows] == ref.predict(X).tolist()
    assert [int(r[0]) for r in rows] == list(range(2, 52))  # line numbers of the file
    acc = float(np.mean(ref.predict(X) == y))
    assert f"50 labelled rows: accuracy {acc:.4f}" in err
    # The model file is an ordinary bayesnb model.
    loaded = bayesnb.load(model)
    assert_allclose(loaded.predict_proba(X), ref.predict_proba(X), rtol=1e-12)


def test_predict_intervals_are_the_library_intervals(numeric_csv, tmp_path):
    path, X, y = numeric_csv
    model = tmp_path / "m.npz"
    assert run(["fit", path, "--model", model, "--family", "gaussian-full"])[0] == 0
    out_file = tmp_path / "pred.tsv"
    code, out, err = run(
        ["predict", path, "--model", model, "--interval", "0.8", "--draws", "50", "--seed", "3",
         "--estimate", "mean", "--out", out_file]
    )
    assert code == 0 and out == "", err
    header, rows = read_csv(out_file.read_text(), delimiter="\t")
    assert header[-6:] == ["median(high)", "median(low)", "lower(high)", "lower(low)", "upper(high)", "upper(low)"]
    from bayesnb import GaussianBayesClassifier

    ref = GaussianBayesClassifier(covariance="full", estimate="mean").fit(X, y)
    lo, hi, med = ref.predict_proba_interval(X, 0.8, n_draws=50, random_state=3, return_median=True)
    got = np.array([[float(v) for v in r[-6:]] for r in rows])
    assert_allclose(got[:, :2], med, rtol=1e-5, atol=1e-12)
    assert_allclose(got[:, 2:4], lo, rtol=1e-5, atol=1e-12)
    assert_allclose(got[:, 4:], hi, rtol=1e-5, atol=1e-12)
    # The median printed is that of the interval's draws: always inside it (as printed).
    assert np.all((got[:, 2:4] <= got[:, :2]) & (got[:, :2] <= got[:, 4:]))
    # p(k) stays the probability of --estimate.
    assert_allclose(np.array([[float(v) for v in r[3:5]] for r in rows]), ref.predict_proba(X), rtol=1e-5)


def test_predict_interval_over_the_updated_posterior(numeric_csv, tmp_path):
    # --interval-posterior both: the fitted posterior's columns and the updated
    # posterior's (whose mean is the exact predictive), each labelled, each median
    # inside its own interval, p(k) the predictive probability.
    path, X, y = numeric_csv
    model = tmp_path / "m.npz"
    assert run(["fit", path, "--model", model, "--family", "gaussian"])[0] == 0
    code, out, err = run(
        ["predict", path, "--model", model, "--interval", "0.9", "--draws", "40", "--interval-posterior", "both"]
    )
    assert code == 0, err
    header, rows = read_csv(out)
    names = ["high", "low"]
    want = [f"{w}{s}({c})" for s in ("", "_updated") for w in ("median", "lower", "upper") for c in names]
    assert header[-12:] == want
    got = np.array([[float(v) for v in r[-12:]] for r in rows])
    for part in (got[:, :6], got[:, 6:]):
        med, lo, hi = part[:, :2], part[:, 2:4], part[:, 4:]
        assert np.all((lo <= med) & (med <= hi))
    from bayesnb import GaussianNB

    ref = GaussianNB().fit(X, y)
    lo, hi, med = ref.predict_proba_interval(X, 0.9, n_draws=40, random_state=0, posterior="updated", return_median=True)
    assert_allclose(got[:, 6:8], med, rtol=1e-5, atol=1e-12)
    assert_allclose(np.array([[float(v) for v in r[3:5]] for r in rows]), ref.predict_proba(X), rtol=1e-5)


def test_text_column_is_a_bag_of_words(text_csv, tmp_path):
    path, rows = text_csv
    model = tmp_path / "text.npz"
    code, out, err = run(["fit", path, "--text", "message", "--model", model, "--alpha", "0.5"])
    assert code == 0, err
    assert "MultinomialNB (multinomial)" in out and "text column 'message'" in out
    new = tmp_path / "new.csv"
    new.write_text('message\n"win cash, claim now"\n"see you at home"\n"zebra"\n', encoding="utf-8")
    code, out, err = run(["predict", new, "--model", model])
    assert code == 0, err
    header, pred = read_csv(out)
    assert header == ["line", "predicted", "p(ham)", "p(spam)"]  # no label column in new.csv
    assert [r[1] for r in pred] == ["spam", "ham", pred[2][1]]
    from sklearn.feature_extraction.text import CountVectorizer

    vec = CountVectorizer()
    Xt = vec.fit_transform([t for _, t in rows])
    ref = MultinomialNB(alpha=0.5).fit(Xt, [lab for lab, _ in rows])
    expected = ref.predict_proba(vec.transform(["win cash, claim now", "see you at home", "zebra"]))
    assert_allclose(np.array([[float(v) for v in r[2:]] for r in pred]), expected, rtol=1e-5)


def test_categorical_and_mixed_columns(tmp_path):
    rng = np.random.default_rng(2)
    colours = np.array(["red", "green", "blue"])
    y = np.repeat(["apple", "lime"], 30)
    colour = np.where(y == "apple", rng.choice(colours[[0, 0, 1]], 60), rng.choice(colours[[1, 1, 2]], 60))
    size = np.round(rng.normal(np.where(y == "apple", 7.0, 4.0), 1.0), 3)
    path = tmp_path / "fruit.tsv"
    path.write_text("colour\tsize\tlabel\n" + "".join(f"{c}\t{s}\t{lab}\n" for c, s, lab in zip(colour, size, y)))
    model = tmp_path / "fruit.npz"
    code, out, err = run(["fit", path, "--model", model])
    assert code == 0, err
    assert "MixedNB (mixed)" in out and "(1 numeric, 1 categorical)" in out
    codes = np.searchsorted(np.array(["blue", "green", "red"]), colour)
    ref = MixedNB(
        blocks=[("gaussian", GaussianNB(), [1]), ("categorical", CategoricalNB(min_categories=[3]), [0])]
    ).fit(np.column_stack([codes, size]).astype(float), y)
    new = tmp_path / "new.tsv"
    new.write_text("colour\tsize\nred\t6.5\npurple\t4.2\n")  # purple: never seen at fit
    code, out, err = run(["predict", new, "--model", model])
    assert code == 0, err
    _, pred = read_csv(out)
    expected = ref.predict_proba(np.array([[2.0, 6.5], [3.0, 4.2]]))
    assert_allclose(np.array([[float(v) for v in r[2:]] for r in pred]), expected, rtol=1e-5)
    # Only the categories: CategoricalNB.
    code, out, err = run(["fit", path, "--features", "colour", "--model", tmp_path / "c.npz"])
    assert code == 0 and "CategoricalNB (categorical)" in out, err


def test_headerless_file_by_position(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("".join(f"{'a' if i % 2 else 'b'},{i % 2 + 0.1 * i},{(i * 7) % 5}\n" for i in range(20)))
    model = tmp_path / "m.npz"
    code, out, err = run(["fit", path, "--no-header", "--label", "0", "--model", model])
    assert code == 0, err
    code, out, err = run(["predict", path, "--model", model])
    assert code == 0, err
    header, rows = read_csv(out)
    assert header[:3] == ["line", "label", "predicted"] and len(rows) == 20


def test_compare_command_modes_and_output(numeric_csv, tmp_path):
    path, X, y = numeric_csv
    code, out, err = run(["compare", path, "--cv", "3", "--bootstrap", "100"])
    assert code == 0, err
    assert "3-fold cross-validation" in out and "Δ log loss" in out
    for estimate in ("mle", "map", "mean", "predictive"):
        assert any(line.startswith(estimate) for line in out.splitlines())
    table = tmp_path / "table.csv"
    code, out, err = run(["compare", path, "--train-sizes", "10,0.5", "--repeats", "2", "--bootstrap", "50",
                          "--out", table])
    assert code == 0, err
    header, rows = read_csv(table.read_text())
    assert header[:3] == ["train_size", "estimate", "accuracy"]
    assert {r[0] for r in rows} == {"10", "18"}  # half of the 37 training rows of the split
    code, out, err = run(["compare", path, "--test-data", path, "--bootstrap", "0", "--out", tmp_path / "t.md"])
    assert code == 0, err
    assert (tmp_path / "t.md").read_text().startswith("| estimate |")
    code, out, err = run(["compare", path, "--out", tmp_path / "t.txt"])
    assert code == 1 and ".csv, .tsv or .md" in err


@pytest.mark.parametrize(
    "content, argv, message",
    [
        ("a,b\n1,2\n3,4\n", [], "no label column found"),
        ("x,label\n1,a\n2\n", [], "line 3: 1 fields, expected 2"),
        ("x,label\nred,a\nblue,b\n", ["--family", "gaussian"], "needs numeric columns; column 'x' holds 'red'"),
        ("x,label\n-1,a\n2,b\n", ["--family", "multinomial"], "Negative values"),
        ("x,label\n1,a\n2,a\n", [], "at least 2 classes"),
        ("x,t,label\n1,hi,a\n2,yo,b\n", ["--text", "t", "--features", "x"], "exclusive"),
        ("x,t,label\n1,hi,a\n2,yo,b\n", ["--text", "t", "--family", "gaussian"], "cannot model a text column"),
        ("x,label\n1,a\n2,b\n", ["--label", "nope"], "no column named 'nope'"),
        ("x,label\n1,a\n2,\n", [], "line 3: empty label"),
        ("x,label\n1,a\nnan,b\n", ["--family", "gaussian"], "needs numeric columns"),
    ],
    ids=["no-label", "ragged", "not-numeric", "negative-counts", "one-class", "text-and-features",
         "text-family", "unknown-column", "empty-label", "nan"],
)
def test_fit_data_errors_exit_1_with_one_line(tmp_path, content, argv, message):
    path = tmp_path / "data.csv"
    path.write_text(content)
    code, out, err = run(["fit", path, "--model", tmp_path / "m.npz", *argv])
    assert code == 1, (out, err)
    assert err.startswith("bayesnb: error: ") and len(err.strip().splitlines()) == 1
    assert message in err, err
    assert "Traceback" not in err and not (tmp_path / "m.npz").exists()


def test_predict_file_errors_exit_1(numeric_csv, tmp_path):
    path, X, y = numeric_csv
    model = tmp_path / "m.npz"
    assert run(["fit", path, "--model", model])[0] == 0
    missing_column = tmp_path / "a.csv"
    missing_column.write_text("width,height\n1,2\n")
    bad_number = tmp_path / "b.csv"
    bad_number.write_text("width,height,depth\n1,2,3\n1,two,3\n")
    cases = [
        (["predict", tmp_path / "none.csv", "--model", model], "no such file"),
        (["predict", missing_column, "--model", model], "no column named 'depth'"),
        (["predict", bad_number, "--model", model], "line 3: column 'height' must be a finite number, got 'two'"),
        (["predict", path, "--model", tmp_path / "nothing.npz"], "no such file"),
    ]
    for argv, message in cases:
        code, out, err = run(argv)
        assert code == 1 and message in err and len(err.strip().splitlines()) == 1, (argv, err)
    # A model without its column layout, and a damaged model file.
    (tmp_path / "m.npz.cli.json").rename(tmp_path / "elsewhere.json")
    code, _, err = run(["predict", path, "--model", model])
    assert code == 1 and "column layout" in err
    (tmp_path / "elsewhere.json").rename(tmp_path / "m.npz.cli.json")
    model.write_bytes(model.read_bytes()[:200])
    code, _, err = run(["predict", path, "--model", model])
    assert code == 1 and "cannot load the model" in err and len(err.strip().splitlines()) == 1
