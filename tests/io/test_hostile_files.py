"""Hostile files, careless commands and odd inputs (issue 19): no lost data, no silent
wrong answer, bounded memory.

Every case was reproduced against the previous code and is built here from scratch
(``tmp_path``): careless ``bayesnb`` commands (run as the command, in a subprocess, where
the case is about what happens to files), malformed CSV/TSV files, crafted model files
(zip bomb, padded metadata, huge declared shapes, deep nesting, recomputed checksums
over bad statistics) and crafted column layouts. Each must end in a clear error (exit
status 1 with a one-line message, or ``ModelFileError``) and leave every file as it was.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import shlex
import subprocess
import sys
import time
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest

import bayesnb
from bayesnb import MultinomialNB
from bayesnb.cli.command import main
from bayesnb.exceptions import ModelFileError
from bayesnb.io import persistence
from bayesnb.io._atomic import UnsafeOutputError, atomic_write, check_output, staged_files
from bayesnb.io.datasets import read_table

REPO = Path(bayesnb.__file__).resolve().parent.parent


def run(argv):
    """The command in this process (for cases about parsing, where a subprocess adds nothing)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def command(*argv, cwd, file_size_kib=None):
    """``bayesnb ARGV`` as a separate process (``python -m bayesnb`` of this checkout),
    under ``ulimit -f file_size_kib`` when given (the shell's limit on the size of the files
    the command writes)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), JAX_PLATFORMS="cpu")
    line = " ".join(shlex.quote(str(a)) for a in (sys.executable, "-m", "bayesnb", *argv))
    if file_size_kib is not None:
        line = f"ulimit -f {int(file_size_kib)} && exec {line}"
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def snapshot(folder):
    """Every file under ``folder`` with its bytes (temporary files included)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def one_line_error(err):
    return err.startswith("bayesnb: error: ") and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def write_numeric(path, n=40, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat(["a", "b"], n // 2)
    X = rng.normal(size=(n, 2)) + (y == "b")[:, None] * 2.0
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["label", "x1", "x2"])
        for row, label in zip(X, y):
            w.writerow([label, repr(float(row[0])), repr(float(row[1]))])
    return X, y


@pytest.fixture
def fitted(tmp_path):
    """g.csv and the model m.npz (with its layout) fitted on it."""
    data = tmp_path / "g.csv"
    X, y = write_numeric(data)
    model = tmp_path / "m.npz"
    code, _, err = run(["fit", data, "--model", model])
    assert code == 0, err
    return data, model, X, y


# ------------------------------------------------------------------------ data loss
@pytest.mark.parametrize(
    "argv, message",
    [
        (["predict", "g.csv", "--model", "m.npz", "--out", "m.npz"], "is the input file m.npz"),
        (["predict", "g.csv", "--model", "m.npz", "--out", "g.csv"], "is the input file g.csv"),
        (["predict", "g.csv", "--model", "m.npz", "--out", "sub/../g.csv"], "is the input file g.csv"),
        (["predict", "g.csv", "--model", "m.npz", "--out", "link.csv"], "is the input file g.csv"),
        (["predict", "g.csv", "--model", "m.npz", "--out", "m.npz.cli.json"], "is the input file"),
        (["predict", "g.csv", "--model", "m.npz", "--out", "notes.txt"], "is not a predictions file"),
        (["fit", "g.csv", "--model", "g.csv"], "is the input file g.csv"),
        (["fit", "g.csv", "--model", "g.csv", "--force"], "is the input file g.csv"),
        (["fit", "g.csv", "--model", "notes.txt"], "is not a bayesnb model file"),
        (["fit", "g.csv", "--model", "other.npz"], "column layout other.npz.cli.json exists and is not"),
        (["compare", "g.csv", "--out", "g.csv", "--bootstrap", "0"], "is the input file g.csv"),
    ],
    ids=["out-is-model", "out-is-data", "out-is-data-dotdot", "out-is-data-symlink", "out-is-layout",
         "out-is-foreign", "model-is-data", "model-is-data-forced", "model-is-foreign", "layout-is-foreign",
         "table-is-data"],
)
def test_careless_command_is_refused_and_touches_nothing(fitted, tmp_path, monkeypatch, argv, message):
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.csv").symlink_to(tmp_path / "g.csv")
    (tmp_path / "notes.txt").write_text("my notes, not a bayesnb output\n")
    (tmp_path / "other.npz.cli.json").write_text('{"mine": true}\n')
    before = snapshot(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, out, err = run(argv)
    assert code == 1, (out, err)
    assert one_line_error(err) and message in err, err
    assert snapshot(tmp_path) == before


def test_the_issue_cases_through_the_command(fitted, tmp_path):
    """The reported commands, as a user runs them (a separate ``bayesnb`` process)."""
    before = snapshot(tmp_path)
    result = command("predict", "g.csv", "--model", "m.npz", "--out", "m.npz", cwd=tmp_path)
    assert result.returncode == 1 and one_line_error(result.stderr), result.stderr
    assert "--out m.npz is the input file m.npz" in result.stderr
    assert snapshot(tmp_path) == before


def test_force_replaces_a_foreign_file_and_own_outputs_are_replaced(fitted, tmp_path):
    data, model, X, y = fitted
    notes = tmp_path / "notes.txt"
    notes.write_text("scratch\n")
    code, out, err = run(["predict", data, "--model", model, "--out", notes, "--force"])
    assert code == 0, err
    assert notes.read_text().startswith("line,label,predicted,")
    # A predictions file, a model and its layout are the commands' own outputs: replaced.
    code, _, err = run(["predict", data, "--model", model, "--out", notes, "--estimate", "mean"])
    assert code == 0, err
    code, _, err = run(["fit", data, "--model", model, "--alpha", "2"])
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.csv", "m.npz", "m.npz.cli.json", "notes.txt"]


@pytest.mark.skipif(sys.platform == "win32", reason="ulimit -f is POSIX")
def test_a_write_cut_by_a_file_size_limit_leaves_the_old_file(fitted, tmp_path):
    """``ulimit -f``: the write fails, exit 1, and the previous output is intact (no partial file)."""
    data, model, X, y = fitted
    big = tmp_path / "big.csv"
    write_numeric(big, n=4000, seed=1)
    out = tmp_path / "p.csv"
    code, _, err = run(["predict", data, "--model", model, "--out", out])
    assert code == 0, err
    before = snapshot(tmp_path)
    limit = 64  # KiB, on what the command writes: less than the predictions of big.csv
    result = command("predict", big, "--model", model, "--out", out, cwd=tmp_path, file_size_kib=limit)
    assert result.returncode == 1 and one_line_error(result.stderr), result.stderr
    assert "cannot write" in result.stderr
    assert snapshot(tmp_path) == before  # p.csv as it was, no temporary file left
    # fit --model under the same limit: the model and its layout stay the old pair.
    wide = tmp_path / "wide.csv"
    rng = np.random.default_rng(2)
    with wide.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["label", "text"])
        for i in range(2000):  # a vocabulary of ~40,000 words: a layout of ~500 kB
            w.writerow(["ab"[i % 2], " ".join(f"w{k}" for k in rng.integers(0, 10**6, 20))])
    before = snapshot(tmp_path)
    result = command("fit", wide, "--text", "text", "--model", model, cwd=tmp_path, file_size_kib=limit)
    assert result.returncode == 1 and one_line_error(result.stderr), result.stderr
    assert snapshot(tmp_path) == before
    code, out_text, err = run(["predict", data, "--model", model])
    assert code == 0, err


def test_demo_does_not_write_into_a_folder_of_other_files(tmp_path):
    folder = tmp_path / "photos"
    folder.mkdir()
    (folder / "uncertainty.png").write_bytes(b"\x89PNG not from bayesnb")
    before = snapshot(tmp_path)
    code, _, err = run(["demo", "--out", folder])
    assert code == 1 and one_line_error(err) and "no bayesnb demo report" in err, err
    assert snapshot(tmp_path) == before


def test_atomic_helpers_leave_the_target_whole(tmp_path):
    target = tmp_path / "t.bin"
    target.write_bytes(b"old")
    os.chmod(target, 0o600)
    with pytest.raises(RuntimeError):
        with atomic_write(target) as fh:
            fh.write(b"new, half")
            raise RuntimeError("interrupted")
    assert target.read_bytes() == b"old" and sorted(os.listdir(tmp_path)) == ["t.bin"]
    with atomic_write(target) as fh:
        fh.write(b"new")
    assert target.read_bytes() == b"new" and (os.stat(target).st_mode & 0o777) == 0o600
    # Two targets: both or neither.
    other = tmp_path / "u.txt"
    with pytest.raises(OSError):
        with staged_files(target, other) as (a, b):
            a.write_bytes(b"A")
            raise OSError("disk full")
    assert target.read_bytes() == b"new" and not other.exists()
    with pytest.raises(UnsafeOutputError, match="is a directory"):
        check_output(tmp_path, option="--out", kind="x")
    with pytest.raises(UnsafeOutputError, match="does not exist"):
        check_output(tmp_path / "no" / "x", option="--out", kind="x")
    hard = tmp_path / "hard.bin"
    os.link(target, hard)
    with pytest.raises(UnsafeOutputError, match="is the input file"):
        check_output(hard, option="--out", kind="x", inputs=[target], force=True)


# ------------------------------------------------------------------ input parsing
@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85", "\x0c", "\x1e", "\x1c", "\x0b"])
def test_unicode_line_separators_inside_a_field_are_text(tmp_path, separator):
    path = tmp_path / "t.tsv"
    texts = ["win cash", f"see{separator}you later", "free prize", "lunch at home"]
    path.write_text("label\ttext\n" + "".join(f"{l}\t{t}\n" for l, t in zip("abab", texts)), encoding="utf-8")
    table = read_table(path)
    assert table.n_rows == 4 and table.lines.tolist() == [2, 3, 4, 5]
    assert table.named("text").tolist()[1] == f"see{separator}you later".strip()
    code, out, err = run(["fit", path, "--text", "text", "--model", tmp_path / "m.npz"])
    assert code == 0 and "on 4 rows" in out, err


def test_quoted_newlines_and_crlf_still_split_as_csv(tmp_path):
    path = tmp_path / "q.csv"
    path.write_bytes(b'label,text\r\na,"two\r\nlines"\r\nb,plain\r\n')
    table = read_table(path)
    assert table.named("text").tolist() == ["two\r\nlines", "plain"] and table.lines.tolist() == [3, 4]


def test_columns_are_matched_by_name_never_by_position(tmp_path):
    """Fit on header y,0,1, predict a file y,a,b: refused (it was read by position, accuracy 0.5)."""
    rng = np.random.default_rng(3)
    fit_file, other = tmp_path / "fit.csv", tmp_path / "other.csv"
    rows = [(c, *(rng.normal(size=2) + 3 * (c == "p"))) for c in "pq" * 20]
    fit_file.write_text("y,0,1\n" + "".join(f"{c},{u},{v}\n" for c, u, v in rows))
    other.write_text("y,a,b\n" + "".join(f"{c},{u},{v}\n" for c, u, v in rows))
    model = tmp_path / "m.npz"
    assert run(["fit", fit_file, "--model", model])[0] == 0
    code, _, err = run(["predict", other, "--model", model])
    assert code == 1 and one_line_error(err), err
    assert "no column named '0'" in err and "missing: '0', '1'" in err and "unexpected: 'a', 'b'" in err
    # The same columns in another order are found by name: same predictions.
    swapped = tmp_path / "swapped.csv"
    swapped.write_text("1,y,0\n" + "".join(f"{v},{c},{u}\n" for c, u, v in rows))
    a, b = run(["predict", fit_file, "--model", model]), run(["predict", swapped, "--model", model])
    assert a[0] == b[0] == 0
    assert [r[2:] for r in csv.reader(io.StringIO(a[1]))] == [r[2:] for r in csv.reader(io.StringIO(b[1]))]


def test_byte_order_mark_is_not_part_of_the_first_name(tmp_path):
    path = tmp_path / "bom.csv"
    X, y = write_numeric(tmp_path / "plain.csv")
    path.write_bytes(b"\xef\xbb\xbf" + (tmp_path / "plain.csv").read_bytes())
    assert read_table(path).columns == ["label", "x1", "x2"]
    code, out, err = run(["fit", path, "--model", tmp_path / "m.npz"])
    assert code == 0 and "GaussianNB" in out, err
    assert bayesnb.load(tmp_path / "m.npz").classes_.tolist() == ["a", "b"]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e309", "NaN"])
def test_a_non_finite_number_is_refused_not_turned_categorical(tmp_path, value):
    path = tmp_path / "n.csv"
    path.write_text("label,x\n" + "".join(f"{'ab'[i % 2]},{i * 0.5}\n" for i in range(9)) + f"b,{value}\n")
    code, out, err = run(["fit", path, "--model", tmp_path / "m.npz"])
    assert code == 1 and one_line_error(err), (out, err)
    assert f"line 11: column 'x' holds '{value}', not a finite number" in err
    # Asked for, the values are categories (a string like "nan" is a category name).
    code, out, err = run(["fit", path, "--family", "categorical", "--model", tmp_path / "m.npz"])
    assert code == 0 and "CategoricalNB" in out, err


@pytest.mark.parametrize(
    "content, message",
    [
        (",,,\n", "holds no rows"),
        (",,,\n,,,\n", "holds no rows"),
        ("\n\n  \n", "is empty"),
        ("label,x\n,,\n", "holds a header but no rows"),
        ("label,x\n\n", "holds a header but no rows"),
        (",x\na,1\nb,2\n", "line 1: the header has an empty column name (column 0)"),
    ],
    ids=["separators-only", "two-lines-of-separators", "blank", "empty-row", "header-only", "empty-name"],
)
def test_degenerate_files_give_one_line_errors(tmp_path, content, message):
    path = tmp_path / "d.csv"
    path.write_text(content)
    code, out, err = run(["fit", path, "--model", tmp_path / "m.npz"])
    assert code == 1 and one_line_error(err) and message in err, (out, err)


def test_rows_of_empty_fields_are_skipped_and_lines_still_counted(tmp_path):
    path = tmp_path / "e.csv"
    path.write_text("label,x\n,\na,1\n , \n\nb,2\n,,\n")
    table = read_table(path)
    assert table.named("label").tolist() == ["a", "b"] and table.lines.tolist() == [3, 6]


def test_long_quoted_field_is_read_and_the_field_limit_is_named(tmp_path):
    long_text = "word " * 60_000  # 300,000 characters: over the csv module's default 131,072
    path = tmp_path / "long.csv"
    path.write_text(f'label,text\na,"{long_text}"\nb,"short text"\n')
    table = read_table(path)
    assert table.named("text")[0] == long_text.strip()
    assert run(["fit", path, "--text", "text", "--model", tmp_path / "m.npz"])[0] == 0
    with pytest.raises(ValueError, match=r"line 2: a field longer than 1,000 characters.*max_field_chars"):
        read_table(path, max_field_chars=1000)
    import csv as csv_module

    assert csv_module.field_size_limit() == 131072  # the process-wide limit is restored


def test_wide_files_are_linear_and_bounded(tmp_path):
    n = 100_000
    path = tmp_path / "wide.csv"
    path.write_text(",".join(f"c{j}" for j in range(n)) + "\n" + ",".join("1" for _ in range(n)) + "\n")
    start = time.perf_counter()
    table = read_table(path)
    elapsed = time.perf_counter() - start
    assert len(table.columns) == n and table.index(f"c{n - 1}") == n - 1
    # The quadratic reader took 13 s for 40,000 columns, so about 80 s for these 100,000.
    assert elapsed < 10, elapsed
    wider = tmp_path / "wider.csv"
    wider.write_text(",".join(f"c{j}" for j in range(n + 1)) + "\n")
    with pytest.raises(ValueError, match=r"100,001 columns, more than the limit of 100,000 \(read_table's max_columns\)"):
        read_table(wider)
    dupes = tmp_path / "dupes.csv"
    dupes.write_text(",".join(f"c{j % 1000}" for j in range(2000)) + "\n" + ",".join("1" * 2000) + "\n")
    with pytest.raises(ValueError, match="duplicate column names"):
        read_table(dupes)


# --------------------------------------------------------------- crafted model files
def _saved():
    clf = MultinomialNB().fit([[3, 0, 1], [0, 2, 2], [4, 1, 0], [1, 3, 3]], ["ham", "spam", "ham", "spam"])
    buffer = io.BytesIO()
    clf.save(buffer)
    return buffer.getvalue()


def _unpack(data):
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        meta = json.loads(zf.read("metadata.json"))
        arrays = {n[:-4]: np.lib.format.read_array(io.BytesIO(zf.read(n))) for n in zf.namelist() if n.endswith(".npy")}
    return meta, arrays


def _pack(meta, arrays, *, fix_checksum=True, metadata_text=None):
    meta = dict(meta)
    meta["arrays"] = {n: {"dtype": a.dtype.str, "shape": list(a.shape)} for n, a in arrays.items()}
    if fix_checksum:  # as an attacker would: the checksum is integrity, not authenticity
        meta["checksum"] = persistence._checksum(meta, arrays)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("metadata.json", metadata_text if metadata_text is not None else json.dumps(meta))
        for name, arr in arrays.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, arr)
            zf.writestr(f"{name}.npy", buffer.getvalue())
    return out.getvalue()


def _peak_mb(fn):
    tracemalloc.start()
    try:
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak / 2**20


def test_zip_bomb_is_refused_with_bounded_memory():
    """A small file whose deflated array inflates to 256 MiB: refused by its checksum while
    streaming (peak memory a few MB, not the array), and by ``max_bytes`` before inflating."""
    meta, arrays = _unpack(_saved())
    n = 2**28 // 8
    meta["arrays"]["zz_bomb"] = {"dtype": "<f8", "shape": [n]}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        zf.writestr("metadata.json", json.dumps(meta))
        for name, arr in arrays.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, arr)
            zf.writestr(f"{name}.npy", buffer.getvalue())
        with zf.open("zz_bomb.npy", "w", force_zip64=True) as member:
            np.lib.format.write_array_header_1_0(member, {"descr": "<f8", "fortran_order": False, "shape": (n,)})
            zeros = bytes(2**22)
            for _ in range(2**28 // 2**22):
                member.write(zeros)
    data = out.getvalue()
    assert len(data) < 2 * 2**20  # over 200 times smaller than what it inflates to

    def load(**kw):
        with pytest.raises(ModelFileError, match=kw.pop("match")):
            persistence.load(io.BytesIO(data), **kw)

    assert _peak_mb(lambda: load(match="checksum mismatch")) < 200
    assert _peak_mb(lambda: load(match=r"more than max_bytes=1,048,576", max_bytes=2**20)) < 10


def test_padded_metadata_and_huge_shapes_are_refused_before_reading():
    meta, arrays = _unpack(_saved())
    padded = json.dumps(meta) + " " * (persistence.MAX_METADATA_BYTES + 1)
    data = _pack(meta, arrays, metadata_text=padded)

    def load_padded():
        with pytest.raises(ModelFileError, match=r"declares [\d,]+ bytes, more than the limit.*MAX_METADATA_BYTES"):
            persistence.load(io.BytesIO(data))

    assert _peak_mb(load_padded) < 200
    # A member declaring shape (10**12,) in its .npy header and in the metadata.
    name = sorted(arrays)[-1]
    member = io.BytesIO()
    np.lib.format.write_array_header_1_0(member, {"descr": "<f8", "fortran_order": False, "shape": (10**12,)})
    member.write(b"\0" * 64)
    meta["arrays"] = {n: {"dtype": a.dtype.str, "shape": list(a.shape)} for n, a in arrays.items()}
    meta["arrays"][name] = {"dtype": "<f8", "shape": [10**12]}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("metadata.json", json.dumps(meta))
        for n, arr in arrays.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, arr)
            zf.writestr(f"{n}.npy", member.getvalue() if n == name else buffer.getvalue())
    with pytest.raises(ModelFileError, match=r"declares shape \[1000000000000\] .* but its member holds 64 bytes"):
        persistence.load(io.BytesIO(out.getvalue()))


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda m: m["estimator"]["params"].__setitem__("alpha", {"dict": [[[1], 2]]}), "dict key in the metadata is not hashable"),
        (lambda m: m["estimator"]["params"].__setitem__("alpha", {"dict": [[1]]}), r"not a list of \[key, value\] pairs"),
        (lambda m: m["estimator"].__setitem__("params", [1, 2]), "metadata is malformed"),
        (lambda m: m.__setitem__("deep", json.loads("[" * 100 + "]" * 100)), "nested deeper than 64 levels"),
    ],
    ids=["unhashable-key", "bad-pair", "params-list", "deep-100"],
)
def test_malformed_metadata_is_a_model_file_error(edit, match):
    meta, arrays = _unpack(_saved())
    edit(meta)
    with pytest.raises(ModelFileError, match=match):
        persistence.load(io.BytesIO(_pack(meta, arrays)))


def test_metadata_nested_100000_deep_is_a_model_file_error():
    meta, arrays = _unpack(_saved())
    text = json.dumps(meta)[:-1] + ', "deep": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(ModelFileError, match="nested deeper"):
        persistence.load(io.BytesIO(_pack(meta, arrays, fix_checksum=False, metadata_text=text)))


def _field(arrays, suffix):
    return next(n for n in arrays if n.endswith(suffix))


@pytest.mark.parametrize(
    "suffix, value, match",
    [
        ("stats_.feature_count", np.nan, "feature_count holds NaN or infinite values"),
        ("stats_.feature_count", np.inf, "feature_count holds NaN or infinite values"),
        ("stats_.feature_count", -5.0, "feature_count holds negative values"),
        ("stats_.class_count", -1.0, "class_count holds negative values"),
    ],
    ids=["nan", "inf", "negative-count", "negative-class-count"],
)
def test_recomputed_checksum_over_bad_statistics_is_refused(suffix, value, match):
    meta, arrays = _unpack(_saved())
    name = _field(arrays, suffix)
    arrays[name] = arrays[name].copy()
    arrays[name].flat[0] = value
    with pytest.raises(ModelFileError, match=match):
        persistence.load(io.BytesIO(_pack(meta, arrays)))


def test_swapped_classes_are_refused():
    meta, arrays = _unpack(_saved())
    name = _field(arrays, "classes_")
    arrays[name] = arrays[name][::-1].copy()
    with pytest.raises(ModelFileError, match="classes_ must be sorted and distinct"):
        persistence.load(io.BytesIO(_pack(meta, arrays)))
    arrays[name] = np.array(["ham", "ham"])
    with pytest.raises(ModelFileError, match="classes_ must be sorted and distinct"):
        persistence.load(io.BytesIO(_pack(meta, arrays)))


def test_a_valid_file_still_loads_bit_for_bit():
    data = _saved()
    meta, arrays = _unpack(data)
    clf = persistence.load(io.BytesIO(_pack(meta, arrays)))
    X = np.array([[1, 0, 2], [0, 3, 1]])
    ref = MultinomialNB().fit([[3, 0, 1], [0, 2, 2], [4, 1, 0], [1, 3, 3]], ["ham", "spam", "ham", "spam"])
    assert np.array_equal(clf.predict_proba(X), ref.predict_proba(X))


# -------------------------------------------------------------- the column layout
@pytest.fixture
def text_model(tmp_path):
    path = tmp_path / "sms.csv"
    rows = [("spam", "win cash prize now"), ("ham", "see you at lunch"), ("spam", "free cash claim"),
            ("ham", "home later see you"), ("spam", "claim your prize"), ("ham", "lunch at home")]
    path.write_text("label,text\n" + "".join(f"{l},{t}\n" for l, t in rows))
    model = tmp_path / "m.npz"
    assert run(["fit", path, "--text", "text", "--model", model])[0] == 0
    return path, model


def _rewrite_layout(model, edit, *, fix_checksum=True):
    from bayesnb.cli.userdata import _spec_checksum

    layout = Path(str(model) + ".cli.json")
    spec = json.loads(layout.read_text())
    edit(spec)
    if fix_checksum:
        spec["checksum"] = _spec_checksum(spec)
    layout.write_text(json.dumps(spec))


def test_a_layout_from_another_fit_is_refused(text_model, tmp_path):
    path, model = text_model
    other = tmp_path / "other.npz"
    assert run(["fit", path, "--text", "text", "--alpha", "5", "--model", other])[0] == 0
    Path(str(model) + ".cli.json").write_bytes(Path(str(other) + ".cli.json").read_bytes())
    code, _, err = run(["predict", path, "--model", model])
    assert code == 1 and one_line_error(err) and "belongs to another model" in err, err


@pytest.mark.parametrize(
    "edit, fix, message",
    [
        (lambda s: s["vocabulary"].reverse(), False, "checksum mismatch"),
        (lambda s: s.pop("kind"), True, "no 'kind' entry"),
        (lambda s: s.__setitem__("vocabulary", 5), True, "'vocabulary' must be a list of distinct words"),
        (lambda s: s["vocabulary"].__setitem__(1, s["vocabulary"][0]), True, "distinct words"),
        (lambda s: s["vocabulary"].append("extra"), True, "words for a model of"),
        (lambda s: s.__setitem__("format_version", 1), True, "written by an older bayesnb"),
    ],
    ids=["reversed", "missing-key", "not-a-list", "duplicate-word", "one-word-more", "old"],
)
def test_an_edited_layout_is_refused(text_model, edit, fix, message):
    path, model = text_model
    _rewrite_layout(model, edit, fix_checksum=fix)
    code, out, err = run(["predict", path, "--model", model])
    assert code == 1 and one_line_error(err) and message in err, err


def test_tabular_layout_schema(fitted):
    data, model, X, y = fitted
    cases = [
        (lambda s: s.__setitem__("features", 5), "'features' must be a non-empty list"),
        (lambda s: s.__setitem__("types", {"x1": "numeric"}), "'types' must give"),
        (lambda s: s.__setitem__("features", ["x1", "x1"]), "'features' must be a non-empty list of distinct"),
        (lambda s: s.__setitem__("header", "yes"), "'header' must be a bool"),
    ]
    original = Path(str(model) + ".cli.json").read_text()
    for edit, message in cases:
        _rewrite_layout(model, edit)
        code, _, err = run(["predict", data, "--model", model])
        assert code == 1 and one_line_error(err) and message in err, (message, err)
        Path(str(model) + ".cli.json").write_text(original)
    assert run(["predict", data, "--model", model])[0] == 0


# ------------------------------------------------ scaled fits with missing="ignore"
@pytest.mark.parametrize("name", ["GaussianNB", "PoissonNB", "BernoulliNB"])
def test_streaming_and_dask_fit_with_missing_ignore_equal_fit(name):
    """fit_stream / distributed.fit raised TypeError / AttributeError on 'MaskedX'."""
    from bayesnb.scale import distributed, streaming

    dask_array = pytest.importorskip("dask.array")
    rng = np.random.default_rng(4)
    X = rng.poisson(3, (40, 3)).astype(float)
    if name == "BernoulliNB":
        X = (X > 2).astype(float)
    X[10:][rng.random((30, 3)) < 0.15] = np.nan  # the first chunk has none: both forms merge
    y = np.repeat([0, 1], 20)
    cls = getattr(bayesnb, name)
    ref = cls(missing="ignore").fit(X, y)
    streamed = streaming.fit_stream(
        cls(missing="ignore"), ((X[i : i + 10], y[i : i + 10]) for i in range(0, 40, 10)), classes=[0, 1]
    )
    dasked = distributed.fit(
        cls(missing="ignore"), dask_array.from_array(X, chunks=(10, 3)), dask_array.from_array(y, chunks=10)
    )
    for est in (streamed, dasked):
        assert type(est.stats_) is type(ref.stats_)
        for a, b in zip(est.stats_, ref.stats_):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(est.predict_proba(X), ref.predict_proba(X), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(est.log_evidence(), ref.log_evidence(), rtol=1e-12)


def test_labelled_text_lines_split_only_on_newlines(tmp_path):
    from bayesnb.io.datasets import read_labelled_text

    path = tmp_path / "sms.txt"
    path.write_bytes("\ufeffham\tsee\u2028you\x0clater\nspam\twin\x85cash\r\nham\tok\x1e\rspam\tfree\n".encode())
    texts, labels = read_labelled_text(path)
    assert labels.tolist() == ["ham", "spam", "ham", "spam"]
    assert texts == ["see\u2028you\x0clater", "win\x85cash", "ok\x1e", "free"]
