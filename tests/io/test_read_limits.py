"""Bounds on what a user's CSV/TSV file may make the reader hold in memory (issue 19).

``read_table`` (and ``read_labelled_text``, the demo's reader) refuse a file over
``max_bytes`` before reading it and one of more than ``max_rows`` rows while reading it
(stopping there), and keep a column whose longest value dwarfs the others as ``str``
objects instead of a fixed-width array of ``rows x longest`` characters (a 2 MB file
with one long text asked NumPy for 149 GiB). ``bayesnb`` exposes the bounds as
``--max-rows`` / ``--max-size``.
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import bayesnb
from bayesnb.cli.command import main
from bayesnb.io.datasets import MAX_BYTES, MAX_ROWS, read_labelled_text, read_table

REPO = Path(bayesnb.__file__).resolve().parent.parent


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def _rows_file(path, n, long_text=0):
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("label\ttext\n")
        for i in range(n):
            fh.write(f"{'ab'[i % 2]}\tword{i % 7} other{i % 3}\n")
        if long_text:
            fh.write("a\t" + "word1 " * long_text + "\n")
    return path


def test_defaults_are_documented_bounds():
    assert MAX_ROWS == 1_000_000 and MAX_BYTES == 256 * 2**20
    assert "max_rows : int, default 1,000,000" in read_table.__doc__
    assert "max_bytes : int, default 256 MiB" in read_table.__doc__


def test_row_cap_counts_data_rows_not_the_header(tmp_path):
    path = _rows_file(tmp_path / "d.tsv", 10)
    assert read_table(path, max_rows=10).n_rows == 10
    with pytest.raises(ValueError, match=r"line 11: more than 9 rows, the limit \(read_table's max_rows\)"):
        read_table(path, max_rows=9)
    assert read_table(path, header=False, max_rows=11).n_rows == 11
    with pytest.raises(ValueError, match="more than 10 rows"):
        read_table(path, header=False, max_rows=10)
    texts, labels = read_labelled_text(path, max_rows=11)
    assert len(texts) == 11
    with pytest.raises(ValueError, match="more than 5 rows"):
        read_labelled_text(path, max_rows=5)


def test_size_cap_is_checked_before_reading(tmp_path):
    path = _rows_file(tmp_path / "d.tsv", 1000)
    size = path.stat().st_size
    assert read_table(path, max_bytes=size).n_rows == 1000
    # A file that is not even text is refused by its size alone: nothing is decoded.
    path.write_bytes(b"\xff" * (size + 1))
    for reader in (read_table, read_labelled_text):
        with pytest.raises(ValueError, match=rf"{size + 1:,} bytes, more than the limit of {size:,}"):
            reader(path, max_bytes=size)


def test_a_long_field_among_short_ones_costs_memory_in_proportion_to_the_text(tmp_path):
    # 20,000 short rows and one text of 2.4 million characters: a fixed-width array would
    # be 20,001 x 2.4e6 x 4 bytes = 179 GiB; as str objects it is about the file's size.
    path = _rows_file(tmp_path / "long.tsv", 20_000, long_text=400_000)
    size = path.stat().st_size
    tracemalloc.start()
    try:
        table = read_table(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 40 * size
    text = table.column("text")
    assert text.dtype == object and len(text[-1]) == len("word1 " * 400_000) - 1
    assert text[0] == "word0 other0" and isinstance(text[0], str)
    # The short label column keeps its fixed-width str dtype.
    assert table.column("label").dtype.kind == "U"
    texts, labels = read_labelled_text(path)
    assert labels.dtype.kind == "U" and len(texts) == 20_002


def test_cli_fit_and_predict_a_file_with_one_long_text(tmp_path):
    path = _rows_file(tmp_path / "long.tsv", 2_000, long_text=400_000)
    model = tmp_path / "m.npz"
    code, out, err = run(["fit", path, "--text", "text", "--model", model])
    assert code == 0, err
    code, out, err = run(["predict", path, "--model", model])
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 1 + 2_001
    # Rows word0 ... of class a/b: the prediction equals the library's own.
    from bayesnb import MultinomialNB
    from sklearn.feature_extraction.text import CountVectorizer

    table = read_table(path)
    X = CountVectorizer().fit_transform(table.column("text").tolist())
    proba = MultinomialNB().fit(X, table.column("label")).predict_proba(X)
    got = np.array([[float(v) for v in line.split(",")[3:]] for line in lines[1:]])
    np.testing.assert_allclose(got, proba, rtol=1e-5)


def _command(*argv, cwd):
    env = dict(os.environ, PYTHONPATH=str(REPO), JAX_PLATFORMS="cpu")
    line = " ".join(shlex.quote(str(a)) for a in (sys.executable, "-m", "bayesnb", *argv))
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_cli_refuses_over_the_bounds_with_exit_1_and_names_the_option(tmp_path):
    path = _rows_file(tmp_path / "d.tsv", 50)
    model = tmp_path / "m.npz"
    proc = _command("fit", path, "--text", "text", "--model", model, "--max-rows", "40", cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "more than 40 rows, the limit (raise it with --max-rows)" in proc.stderr
    assert not model.exists()
    big = tmp_path / "big.tsv"
    _rows_file(big, 200_000)
    assert big.stat().st_size > 2**20
    proc = _command("fit", big, "--text", "text", "--model", model, "--max-size", "1", cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "more than the limit of 1,048,576 (raise it with --max-size MB" in proc.stderr
    # Raising the bound lets the same command work; predict and demo have the options too.
    assert run(["fit", path, "--text", "text", "--model", model, "--max-rows", "50"])[0] == 0
    code, _, err = run(["predict", path, "--model", model, "--max-rows", "10"])
    assert code == 1 and "more than 10 rows" in err
    code, _, err = run(["compare", path, "--text", "text", "--max-rows", "10"])
    assert code == 1 and "more than 10 rows" in err
    code, _, err = run(["demo", "--data", big, "--max-size", "1", "--out", tmp_path / "r.md"])
    assert code == 1 and "raise it with --max-size MB" in err
    assert not (tmp_path / "r.md").exists()
