"""The ``bayesnb`` command at the edges of its input files (issue 40, "not yet exercised").

ARFF edge cases (TAB-separated header words, escaped quotes in names, ``name{a,b}``,
sparse rows, dates, duplicate names), the column layout beside a model rewritten with
its checksum recomputed, CRLF / byte-order-mark / Latin-1 files, a file of one enormous
line, and ``predict`` cut by a full disk or Ctrl-C mid-write. Each case ends in a correct
reading (checked against the same data written plainly) or a one-line error naming the
problem and the line, and no case leaves a partial file or touches an input.

Which cases failed on the code before issue 40's fix (commit message names them): TAB
after ``@attribute``, an escaped quote in a quoted name and ``name{a,b}`` (refused or
misread), a Latin-1 byte (an error naming a position inside the decoder's block, not
the line), a duplicate CSV header (no line), the long-line bound (the line was read
whole) and every layout rewritten with a recomputed checksum. Sparse rows, dates,
ARFF duplicate names, CRLF + BOM, the 2 GB file under the default size bound and the
full-disk / Ctrl-C paths of ``predict`` were already right and are pinned here.
"""

from __future__ import annotations

import errno
import json
import os
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import bayesnb
from _cli import run
from bayesnb.io import _atomic, datasets

ARFF = """% weather, 12 rows
@relation weather
@attribute outlook {sunny, overcast, rainy}
@attribute temperature numeric
@attribute 'wind speed' real
@attribute class {yes, no}
@data
sunny,85,5,no
sunny,80,9,no
overcast,83,4,yes
rainy,70,6,yes
rainy,68,8,yes
rainy,65,7,no
overcast,64,9,yes
sunny,72,3,no
sunny,69,5,yes
rainy,75,6,yes
sunny,75,9,yes
overcast,72,2,yes
"""


def one_line_error(err):
    return err.startswith("bayesnb: error: ") and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def snapshot(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def predictions(path, model):
    code, out, err = run(["predict", path, "--model", model])
    assert code == 0, err
    return out


@pytest.fixture
def plain(tmp_path):
    """The weather ARFF written plainly, and the predictions of a model fitted on it."""
    path = tmp_path / "plain.arff"
    path.write_text(ARFF)
    model = tmp_path / "plain.npz"
    assert run(["fit", path, "--model", model])[0] == 0
    return path, model, predictions(path, model)


# ----------------------------------------------------------------------------- ARFF
@pytest.mark.parametrize(
    "edit",
    [
        lambda t: t.replace("@attribute temperature numeric", "@attribute\ttemperature\tnumeric"),
        lambda t: t.replace("@attribute outlook {", "@ATTRIBUTE outlook{"),
        lambda t: t.replace("'wind speed'", "\"wind speed\""),
    ],
    ids=["tab-separated", "name-brace", "double-quoted"],
)
def test_arff_header_spellings_read_as_the_plain_file(plain, tmp_path, edit):
    path, _, expected = plain
    other = tmp_path / "other.arff"
    other.write_text(edit(ARFF))
    model = tmp_path / "other.npz"
    code, _, err = run(["fit", other, "--model", model])
    assert code == 0, err
    # Same columns, same model: the same predictions of the plain file.
    assert predictions(path, model) == expected
    table = datasets.read_arff(other)
    assert table.columns == ["outlook", "temperature", "wind speed", "class"]


def test_arff_quoted_name_with_an_escaped_quote(tmp_path):
    path = tmp_path / "q.arff"
    path.write_text(ARFF.replace("'wind speed'", r"'wind\'s speed'"))
    table = datasets.read_arff(path)
    assert table.columns[2] == "wind's speed" and table.types["wind's speed"] == "numeric"
    code, out, err = run(["fit", path, "--model", tmp_path / "m.npz"])
    assert code == 0 and "1 categorical" in out, err


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda t: t.replace("rainy,70,6,yes", "{0 rainy, 1 70, 3 yes}"), "line 11: sparse ARFF rows are not supported"),
        (lambda t: t.replace("temperature numeric", 'temperature date "yyyy-MM-dd"'),
         "line 4: attribute 'temperature' has type 'date \"yyyy-MM-dd\"'"),
        (lambda t: t.replace("'wind speed' real", "'temperature' real"), "line 5: attribute 'temperature' declared twice"),
        (lambda t: t.replace("'wind speed' real", "'' real"), "line 5: an attribute with an empty name"),
        (lambda t: t.replace("'wind speed' real", "'wind speed real"), "line 5: unbalanced quote in an attribute name"),
    ],
    ids=["sparse-row", "date", "duplicate-quoted", "empty-name", "unbalanced"],
)
def test_arff_cases_it_cannot_read_are_refused_naming_the_line(tmp_path, edit, message):
    path = tmp_path / "bad.arff"
    path.write_text(edit(ARFF))
    before = snapshot(tmp_path)
    code, _, err = run(["fit", path, "--model", tmp_path / "m.npz"])
    assert code == 1 and one_line_error(err) and message in err, err
    assert snapshot(tmp_path) == before


def test_duplicate_csv_header_names_the_line(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("\nlabel,x,x\na,1,2\nb,2,3\n")  # the header on line 2, after a blank line
    code, _, err = run(["fit", path, "--model", tmp_path / "m.npz"])
    assert code == 1 and one_line_error(err) and "line 2: duplicate column names in the header: ['x']" in err, err


# ------------------------------------------------------------------ CRLF, BOM, Latin-1
def test_crlf_and_byte_order_mark_read_as_the_plain_file(plain, tmp_path):
    path, _, expected = plain
    windows = tmp_path / "windows.arff"
    windows.write_bytes(b"\xef\xbb\xbf" + ARFF.replace("\n", "\r\n").encode())
    model = tmp_path / "w.npz"
    assert run(["fit", windows, "--model", model])[0] == 0
    assert predictions(path, model) == expected
    # Predicting the CRLF file gives the same lines and numbers as the plain one.
    assert predictions(windows, model) == expected
    # A CSV whose first column is the label: the BOM is not part of its name.
    csv_path = tmp_path / "w.csv"
    rows = ["label,x"] + [f"{'ab'[i % 2]},{i % 5 + 0.5 * (i % 2)}" for i in range(12)]
    csv_path.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(rows).encode() + b"\r\n")
    model = tmp_path / "c.npz"
    code, out, err = run(["fit", csv_path, "--model", model])
    assert code == 0, err
    layout = json.loads(Path(str(model) + ".cli.json").read_text())
    assert layout["label"] == "label" and layout["columns"] == ["label", "x"]
    assert bayesnb.load(model).classes_.tolist() == ["a", "b"]


@pytest.mark.parametrize("suffix", [".csv", ".arff", ".tsv"])
def test_latin1_bytes_are_refused_naming_the_line(tmp_path, suffix):
    path = tmp_path / f"latin{suffix}"
    if suffix == ".arff":
        text = ARFF.replace("overcast,72,2,yes", "overcast,72,2,yes\n% caf\u00e9\n")
        line = 20
    else:
        sep = "," if suffix == ".csv" else "\t"
        rows = [f"label{sep}x"] + [f"{'ab'[i % 2]}{sep}v{i % 7}" for i in range(5000)] + [f"a{sep}caf\u00e9"]
        text = "\r\n".join(rows) + "\r\n"
        line = 5002
    path.write_bytes(text.encode("latin-1"))
    code, _, err = run(["fit", path, "--model", tmp_path / "m.npz"])
    assert code == 1 and one_line_error(err), err
    assert f"line {line}: not UTF-8 text (byte 0xe9" in err and "iconv" in err, err


def test_latin1_in_a_labelled_text_file_names_the_line(tmp_path):
    path = tmp_path / "sms.tsv"
    path.write_bytes(b"ham\thello\rspam\twin\r\nham\tna\xefve\n")
    with pytest.raises(ValueError, match=r"line 3: not UTF-8 text \(byte 0xef, byte 7 of the line\)"):
        datasets.read_labelled_text(path)


# ------------------------------------------------------------------ one enormous line
def test_a_2gb_file_is_refused_before_reading(tmp_path):
    """A sparse file of 2 GiB without a line break: refused by its size, nothing read."""
    path = tmp_path / "huge.csv"
    with path.open("wb") as fh:
        fh.write(b"label,x\na,")
        fh.truncate(2**31)  # a hole: no disk used, no byte read back
    tracemalloc.start()
    try:
        code, _, err = run(["fit", path, "--model", tmp_path / "m.npz"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert code == 1 and one_line_error(err), err
    assert "2,147,483,648 bytes, more than the limit" in err and "--max-size" in err
    assert peak < 8 * 2**20, peak


@pytest.mark.parametrize("reader", ["table", "arff", "labelled"])
def test_a_line_past_the_bound_is_refused_without_reading_it_whole(tmp_path, monkeypatch, reader):
    """A line of 8 MB against a bound of 100,000 characters: refused, with memory of the bound."""
    monkeypatch.setattr(datasets, "MAX_LINE_CHARS", 100_000)
    path = tmp_path / "long.txt"
    head = {"table": "label,x\n", "arff": "@relation r\n@attribute x string\n@data\n", "labelled": "ham\thi\n"}[reader]
    with path.open("w") as fh:
        fh.write(head + "a" * 8_000_000 + "\n")
    read = {
        "table": lambda: datasets.read_table(path, max_line_chars=datasets.MAX_LINE_CHARS),
        "arff": lambda: datasets.read_arff(path, max_line_chars=datasets.MAX_LINE_CHARS),
        "labelled": lambda: datasets.read_labelled_text(path),
    }[reader]
    line = head.count("\n") + 1
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=rf"line {line}: longer than 100,000 characters"):
            read()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 * 2**20, peak  # the line is 8 MB: it was never held whole


def test_the_line_bound_is_a_reader_option_named_in_the_error(tmp_path):
    assert datasets.MAX_LINE_CHARS == 2**26
    path = tmp_path / "one_line.csv"
    path.write_text("label,x\na," + "1" * 200 + "\n")
    assert datasets.read_table(path, max_line_chars=300).n_rows == 1
    with pytest.raises(ValueError, match=r"line 2: longer than 150 characters.*max_line_chars"):
        datasets.read_table(path, max_line_chars=150)


# --------------------------------------------------------------- the column layout
@pytest.fixture
def categorical_model(tmp_path):
    path = tmp_path / "w.arff"
    path.write_text(ARFF)
    model = tmp_path / "m.npz"
    assert run(["fit", path, "--model", model, "--missing", "ignore"])[0] == 0
    return path, model


def _rewrite(model, edit):
    from bayesnb.cli.userdata import _spec_checksum

    layout = Path(str(model) + ".cli.json")
    spec = json.loads(layout.read_text())
    edit(spec)
    spec["checksum"] = _spec_checksum(spec)  # a tamperer who recomputes the checksum
    layout.write_text(json.dumps(spec))


def _drop_category(spec):
    spec["categories"]["outlook"].pop()


def _as_numeric(spec):
    spec["types"]["outlook"] = "numeric"
    del spec["categories"]["outlook"]


def _all_categorical(spec):
    spec["types"]["temperature"] = "categorical"
    spec["categories"]["temperature"] = ["64", "65"]


@pytest.mark.parametrize(
    "edit, message",
    [
        (_drop_category, "column 'outlook' has 2 categories, the model's feature 0 3"),
        (_as_numeric, "column 'outlook' is numeric, but the model's feature 0 is categorical"),
        (_all_categorical, "column 'temperature' is categorical, but the model's feature 1 is numeric"),
        (lambda s: s.__setitem__("family", "categorical"), "family 'categorical', but the model is of family 'product'"),
        (lambda s: s.__setitem__("missing", "error"), "missing='error', but the model was fitted with missing='ignore'"),
    ],
    ids=["category-dropped", "codes-as-numbers", "numbers-as-codes", "family", "missing"],
)
def test_a_layout_rewritten_with_its_checksum_is_refused(categorical_model, edit, message):
    path, model = categorical_model
    good = predictions(path, model)
    original = Path(str(model) + ".cli.json").read_bytes()
    _rewrite(model, edit)
    before = snapshot(model.parent)
    code, out, err = run(["predict", path, "--model", model])
    assert code == 1 and one_line_error(err) and "invalid column layout" in err and message in err, err
    assert out == "" and snapshot(model.parent) == before
    Path(str(model) + ".cli.json").write_bytes(original)
    assert predictions(path, model) == good


def test_an_edited_layout_without_a_new_checksum_is_refused(categorical_model):
    path, model = categorical_model
    layout = Path(str(model) + ".cli.json")
    layout.write_text(layout.read_text().replace('"rainy"', '"rain"'))
    code, _, err = run(["predict", path, "--model", model])
    assert code == 1 and one_line_error(err) and "checksum mismatch" in err, err


# ------------------------------------------------ predict: full disk, Ctrl-C mid-write
class _FailingFile:
    """A file object that writes half of what it is given, then fails."""

    def __init__(self, fh, error):
        self.fh, self.error = fh, error

    def write(self, text):
        self.fh.write(text[: len(text) // 2])
        self.fh.flush()
        raise self.error

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.fh.close()
        return False


@pytest.mark.parametrize(
    "error, code_expected, message",
    [
        (OSError(errno.ENOSPC, "No space left on device"), 1, "bayesnb: error: cannot write"),
        (KeyboardInterrupt(), 130, "bayesnb: interrupted"),
    ],
    ids=["disk-full", "ctrl-c"],
)
def test_predict_cut_mid_write_leaves_inputs_and_the_earlier_output(plain, tmp_path, monkeypatch, error,
                                                                    code_expected, message):
    path, model, _ = plain
    out = tmp_path / "p.csv"
    assert run(["predict", path, "--model", model, "--out", out, "--estimate", "mean"])[0] == 0
    before = snapshot(tmp_path)
    real_open = open

    def failing_open(file, mode="r", *args, **kwargs):
        fh = real_open(file, mode, *args, **kwargs)
        return _FailingFile(fh, error) if "w" in mode and Path(file).name.startswith(".p.csv.") else fh

    monkeypatch.setattr(_atomic, "open", failing_open, raising=False)
    code, stdout, err = run(["predict", path, "--model", model, "--out", out])
    assert code == code_expected and message in err, err
    # The earlier predictions, the data, the model and its layout as they were; no temporary file.
    assert snapshot(tmp_path) == before
    assert sorted(os.listdir(tmp_path)) == sorted(before)


def test_predict_disk_full_at_the_final_flush_leaves_the_earlier_output(plain, tmp_path, monkeypatch):
    """A full disk reported by fsync (delayed allocation): the rename never happens."""
    path, model, _ = plain
    out = tmp_path / "p.csv"
    assert run(["predict", path, "--model", model, "--out", out, "--estimate", "mean"])[0] == 0
    before = snapshot(tmp_path)

    def no_space(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_atomic.os, "fsync", no_space)
    code, _, err = run(["predict", path, "--model", model, "--out", out])
    assert code == 1 and one_line_error(err) and "No space left on device" in err, err
    assert snapshot(tmp_path) == before
    assert np.all([not name.endswith(".tmp") for name in os.listdir(tmp_path)])
