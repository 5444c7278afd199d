"""``bayesnb`` on ARFF files and on files with missing values (issue 15, "CLI and files").

An ARFF file (built here) is read with its declared types and nominal values; an
unquoted ``?`` is missing. ``--missing error`` (default) refuses a missing value naming
the column and the line and suggesting ``--missing ignore``; ``--missing ignore`` fits
the estimator with ``missing="ignore"``; ``--na-values`` says which CSV values are
missing, and a numeric column with missing values stays numeric. Oracle: the library's
MixedNB fitted in Python on the values parsed by hand from the same text.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose

import bayesnb
from bayesnb import CategoricalNB, GaussianNB, MixedNB
from _cli import run

REPO = Path(bayesnb.__file__).resolve().parent.parent

ARFF = """% The weather data, with missing values and quoted names
@RELATION weather

@ATTRIBUTE outlook {sunny, overcast, 'light rain'}
@ATTRIBUTE temperature NUMERIC
@attribute 'relative humidity' real
@attribute windy {TRUE, FALSE}
@attribute class {yes, no}

@data
sunny,85,85,FALSE,no
sunny,80,90,TRUE,no
overcast,83,?,FALSE,yes
'light rain',70,96,FALSE,yes
'light rain',68,80,?,yes
% a comment between rows
'light rain',65,70,TRUE,no
overcast,64,65,TRUE,yes
sunny,72,95,FALSE,no
sunny,69,70,FALSE,yes
'light rain',75,80,FALSE,yes
sunny,?,70,TRUE,yes
overcast,72,90,TRUE,yes
"""
# The same rows parsed by hand: outlook and windy as codes in the declared order.
OUTLOOK = [0, 0, 1, 2, 2, 2, 1, 0, 0, 2, 0, 1]
TEMP = [85, 80, 83, 70, 68, 65, 64, 72, 69, 75, np.nan, 72]
HUMID = [85, 90, np.nan, 96, 80, 70, 65, 95, 70, 80, 70, 90]
WINDY = [1, 0, 1, 1, np.nan, 0, 0, 1, 1, 1, 0, 0]
LABEL = ["no", "no", "yes", "yes", "yes", "no", "yes", "no", "yes", "yes", "yes", "yes"]


def _probabilities(text):
    rows = list(csv.reader(io.StringIO(text)))
    return rows[0], np.array([[float(v) for v in r[3:]] for r in rows[1:]])


@pytest.fixture
def arff(tmp_path):
    path = tmp_path / "weather.arff"
    path.write_text(ARFF, encoding="utf-8")
    return path


def test_arff_with_missing_values_is_refused_by_default_naming_the_column(arff, tmp_path):
    code, _, err = run(["fit", arff, "--model", tmp_path / "m.npz"])
    assert code == 1
    # The first feature column (in file order) holding one: temperature, line 22.
    assert "line 22: column 'temperature' holds a missing value ('?', 1 in all)" in err
    assert "--missing ignore" in err
    assert not (tmp_path / "m.npz").exists()


@pytest.mark.parametrize("estimate", ["predictive", "mean", "map", "mle"])
def test_arff_fit_and_predict_with_missing_ignore_equal_the_library(arff, tmp_path, estimate):
    model = tmp_path / "m.npz"
    code, out, err = run(["fit", arff, "--model", model, "--missing", "ignore"])
    assert code == 0, err
    assert "2 numeric, 2 categorical" in out
    layout = json.loads(Path(str(model) + ".cli.json").read_text())
    assert layout["types"] == {"outlook": "categorical", "temperature": "numeric",
                               "relative humidity": "numeric", "windy": "categorical"}
    # The declared values, in the declared order (not the sorted values seen).
    assert layout["categories"] == {"outlook": ["sunny", "overcast", "light rain"], "windy": ["TRUE", "FALSE"]}
    code, out, err = run(["predict", arff, "--model", model, "--estimate", estimate])
    assert code == 0, err
    header, got = _probabilities(out)
    assert header[3:] == ["p(no)", "p(yes)"]
    X = np.column_stack([TEMP, HUMID, OUTLOOK, WINDY]).astype(float)
    ref = MixedNB(
        [("gaussian", GaussianNB(), [0, 1]), ("categorical", CategoricalNB(min_categories=[3, 2]), [2, 3])],
        missing="ignore",
        estimate=estimate,
    ).fit(X, LABEL)
    assert_allclose(got, ref.predict_proba(X), rtol=1e-5, atol=1e-6)  # the CSV has 6 significant digits


def test_numeric_csv_column_with_missing_markers_stays_numeric(tmp_path):
    rows = ["label,x,colour"]
    xs = ["1.5", "?", "2.5", "NA", "0.5", "", "3.0", "1.0"]
    colours = ["red", "blue", "red", "blue", "red", "blue", "?", "red"]
    labels = ["a", "b", "a", "b", "a", "b", "a", "b"]
    rows += [f"{l},{x},{c}" for l, x, c in zip(labels, xs, colours)]
    path = tmp_path / "d.csv"
    path.write_text("\n".join(rows) + "\n")
    model = tmp_path / "m.npz"
    code, _, err = run(["fit", path, "--model", model])
    assert code == 1 and "column 'x' holds a missing value ('?', 3 in all)" in err and "--missing ignore" in err
    code, _, err = run(["fit", path, "--model", model, "--missing", "ignore"])
    assert code == 0, err
    layout = json.loads(Path(str(model) + ".cli.json").read_text())
    assert layout["types"] == {"x": "numeric", "colour": "categorical"}
    assert layout["categories"]["colour"] == ["blue", "red"]  # '?' is not a category
    code, out, err = run(["predict", path, "--model", model])
    assert code == 0, err
    _, got = _probabilities(out)
    x = np.array([1.5, np.nan, 2.5, np.nan, 0.5, np.nan, 3.0, 1.0])
    c = np.array([1, 0, 1, 0, 1, 0, np.nan, 1])
    ref = MixedNB(
        [("gaussian", GaussianNB(), [0]), ("categorical", CategoricalNB(min_categories=[2]), [1])], missing="ignore"
    ).fit(np.column_stack([x, c]), labels)
    assert_allclose(got, ref.predict_proba(np.column_stack([x, c])), rtol=1e-5, atol=1e-6)


def test_na_values_option_decides_what_is_missing(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("label,x,colour\na,1,?\nb,-,red\na,2,red\nb,3,?\na,1.5,red\nb,-,?\n")
    model = tmp_path / "m.npz"
    # Only '-' is missing: '?' is an ordinary category, and x is numeric.
    code, _, err = run(["fit", path, "--model", model, "--na-values", "-", "--missing", "ignore"])
    assert code == 0, err
    layout = json.loads(Path(str(model) + ".cli.json").read_text())
    assert layout["na_values"] == ["-"] and layout["categories"]["colour"] == ["?", "red"]
    assert layout["types"]["x"] == "numeric"
    # Without '-' among the missing values, x is not a number column: categorical.
    code, _, err = run(["fit", path, "--model", model, "--na-values", "NA"])
    assert code == 0, err
    assert json.loads(Path(str(model) + ".cli.json").read_text())["types"]["x"] == "categorical"


def test_predicting_missing_values_with_a_model_fitted_without_ignore_is_refused(tmp_path, arff):
    complete = tmp_path / "complete.arff"
    text = "\n".join(line for line in ARFF.splitlines() if "?" not in line)
    complete.write_text(text + "\n")
    model = tmp_path / "m.npz"
    assert run(["fit", complete, "--model", model])[0] == 0
    code, _, err = run(["predict", arff, "--model", model])
    assert code == 1 and "holds a missing value" in err and "fit it with --missing ignore" in err


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace("overcast,64,65", "cloudy,64,65"), r"'cloudy' is not a declared value of attribute 'outlook'"),
        (lambda t: t.replace("sunny,72,95,FALSE,no", "sunny,72,95,no"), "4 values, expected 5"),
        (lambda t: t.replace("sunny,80,90", "sunny,hot,90"), "attribute 'temperature' is numeric, got 'hot'"),
        (lambda t: t.replace("NUMERIC", "DATE 'yyyy-MM-dd'"), "has type \"DATE 'yyyy-MM-dd'\""),
        (lambda t: t.replace("sunny,69,70,FALSE,yes", "{0 sunny, 1 69}"), "sparse ARFF rows are not supported"),
        (lambda t: t.replace("@data", "@daata"), "expected @relation, @attribute or @data"),
        (lambda t: t.replace("sunny,85,85,FALSE,no", "sunny,85,85,FALSE,?"), "missing label"),
    ],
)
def test_malformed_arff_is_refused_with_the_line(tmp_path, edit, message):
    import re

    path = tmp_path / "bad.arff"
    path.write_text(edit(ARFF))
    code, _, err = run(["fit", path, "--model", tmp_path / "m.npz", "--missing", "ignore"])
    assert code == 1 and re.search(message, err), err
    assert "Traceback" not in err


def test_arff_errors_in_a_subprocess_exit_1_without_traceback(tmp_path):
    path = tmp_path / "bad.arff"
    path.write_text(ARFF.replace("overcast,64,65", "cloudy,64,65"))
    env = dict(os.environ, PYTHONPATH=str(REPO), JAX_PLATFORMS="cpu")
    line = " ".join(shlex.quote(str(a)) for a in (sys.executable, "-m", "bayesnb", "fit", path, "--model", tmp_path / "m.npz"))
    proc = subprocess.run(["bash", "-c", line], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "line 18: 'cloudy' is not a declared value" in proc.stderr
