"""Issue 40: a column layout rewritten with its checksum recomputed cannot relabel a column.

The model is fitted on the file's named columns and on the category labels of its
categorical columns (``bayesnb.cli.userdata.model_input``), so the model file records the
column names and each categorical column's labels in code order; ``bayesnb predict``
refuses a layout that permutes a column's labels (same count) or the columns, naming the
column. The expected probabilities are counted from the CSV text by the test itself
(:func:`_oracle`), so a fit on labels is checked to give the numbers of the model.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from _cli import run

TRAIN = """colour,shape,label
red,round,a
blue,square,b
red,round,a
green,square,b
blue,round,b
red,square,a
green,round,a
blue,square,b
red,round,a
"""
NEW = """colour,shape
red,round
blue,square
green,square
purple,round
"""


def one_line_error(err):
    return err.startswith("bayesnb: error: ") and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def _rows(text):
    lines = text.strip().splitlines()
    return [line.split(",") for line in lines[1:]]


def _predicted(out):
    """{line: [p(a), p(b)]} from predict's CSV output."""
    rows = [line.split(",") for line in out.strip().splitlines()]
    header = rows[0]
    cols = [header.index("p(a)"), header.index("p(b)")]
    return np.array([[float(r[c]) for c in cols] for r in rows[1:]])


@pytest.fixture
def model(tmp_path):
    train, new = tmp_path / "train.csv", tmp_path / "new.csv"
    train.write_text(TRAIN)
    new.write_text(NEW)
    path = tmp_path / "m.npz"
    code, _, err = run(["fit", train, "--model", path, "--family", "categorical"])
    assert code == 0, err
    return train, new, path


def _rewrite(path, edit):
    from bayesnb.cli.userdata import _spec_checksum

    layout = Path(str(path) + ".cli.json")
    spec = json.loads(layout.read_text())
    edit(spec)
    spec["checksum"] = _spec_checksum(spec)  # a tamperer who recomputes the checksum
    layout.write_text(json.dumps(spec))


def _oracle(new_rows):
    """Class probabilities counted from the CSV text (alpha = class_alpha = 1, "predictive").

    p(c) = (N_c + 1) / (N + C); a seen label k of feature j: (n_cjk + 1) / (N_c + K_j);
    a label not seen at fit: 1 / (N_c + K_j + 1), the share of one extra category
    (bayesnb.core.families.categorical).
    """
    train = _rows(TRAIN)
    classes = sorted({r[2] for r in train})
    cats = [sorted({r[j] for r in train}) for j in range(2)]
    out = []
    for row in new_rows:
        p = []
        for c in classes:
            n_c = sum(r[2] == c for r in train)
            v = (n_c + 1) / (len(train) + len(classes))
            for j in range(2):
                k = len(cats[j])
                if row[j] in cats[j]:
                    v *= (sum(r[2] == c and r[j] == row[j] for r in train) + 1) / (n_c + k)
                else:
                    v *= 1 / (n_c + k + 1)
            p.append(v)
        out.append(np.array(p) / sum(p))
    return np.array(out)


def test_predict_matches_an_independent_categorical_model(model):
    train, new, path = model
    code, out, err = run(["predict", new, "--model", path])
    assert code == 0, err
    np.testing.assert_allclose(_predicted(out), _oracle(_rows(NEW)), rtol=1e-5, atol=1e-6)


def test_the_model_file_records_the_labels_and_column_names(model):
    import bayesnb

    _, _, path = model
    clf = bayesnb.load(path)
    assert list(clf.feature_names_in_) == ["colour", "shape"]
    assert {j: list(v) for j, v in clf.categories_.items()} == {0: ["blue", "green", "red"], 1: ["round", "square"]}


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda s: s["categories"].__setitem__("colour", ["red", "green", "blue"]),
            "column 'colour' lists its categories as 'red', 'green', 'blue', but the model learned "
            "'blue', 'green', 'red' in code order",
        ),
        (
            lambda s: s["categories"].__setitem__("shape", ["square", "round"]),
            "column 'shape' lists its categories as 'square', 'round', but the model learned 'round', 'square'",
        ),
        (
            lambda s: s.__setitem__("features", ["shape", "colour"]),
            "feature columns 'shape', 'colour', but the model was fitted on 'colour', 'shape'",
        ),
    ],
    ids=["colour-permuted", "shape-swapped", "columns-swapped"],
)
def test_a_permuted_layout_is_refused_naming_the_column(model, edit, message):
    _, new, path = model
    _rewrite(path, edit)
    code, out, err = run(["predict", new, "--model", path])
    assert code == 1 and one_line_error(err) and "invalid column layout" in err and message in err, err
    assert out == ""


def test_a_relabelled_mixed_model_is_refused(tmp_path):
    # Numbers beside categories: a MixedNB, whose categories_ are keyed by column position.
    train = tmp_path / "train.csv"
    train.write_text(
        "colour,size,label\nred,1.5,a\nblue,2.5,b\nred,1.7,a\ngreen,2.9,b\nblue,2.2,b\nred,1.1,a\ngreen,2.0,a\n"
    )
    path = tmp_path / "m.npz"
    code, out, err = run(["fit", train, "--model", path])
    assert code == 0 and "MixedNB" in out, err
    good = run(["predict", train, "--model", path])
    assert good[0] == 0, good[2]
    original = Path(str(path) + ".cli.json").read_bytes()
    _rewrite(path, lambda s: s["categories"].__setitem__("colour", ["green", "blue", "red"]))
    code, out, err = run(["predict", train, "--model", path])
    assert code == 1 and one_line_error(err) and "column 'colour' lists its categories as 'green', 'blue', 'red'" in err, err
    Path(str(path) + ".cli.json").write_bytes(original)
    assert run(["predict", train, "--model", path]) == good


def test_a_layout_of_an_older_format_is_refused(model):
    _, new, path = model
    _rewrite(path, lambda s: s.__setitem__("format_version", 2))
    code, _, err = run(["predict", new, "--model", path])
    assert code == 1 and one_line_error(err) and "written by an older bayesnb" in err, err
