"""Smaller things of a first CLI session (issue 38, item 12).

* ``bayesnb demo --data file.arff`` reads documents from an ARFF file (one string
  attribute, a label) as every other command reads ARFF; the oracle is the demo on the
  same documents written as ``label<TAB>text`` lines.
* ``bayesnb compare`` prints the footer that describes the comparison once.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

import pytest

from bayesnb.cli.command import main

ROOT = Path(__file__).resolve().parents[2]
SMS = ROOT.parent / "shared" / "data" / "sms_spam_collection" / "SMSSpamCollection"
CAR = ROOT.parent / "shared" / "data" / "uci_car_evaluation" / "car.data"


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _documents(n=160):
    """``(label, text)`` pairs of the SMS corpus; every 40th label is missing (unlabelled)."""
    if not SMS.exists():
        pytest.skip(f"shared data set not found: {SMS}")
    pairs = [line.split("\t", 1) for line in SMS.read_text(encoding="utf-8").splitlines()[:n]]
    # Texts without quotes or backslashes, so that both files hold exactly the same text.
    return [("" if i % 40 == 0 else label, text.replace("'", " ").replace("\\", " ")) for i, (label, text) in enumerate(pairs)]


def test_demo_reads_an_arff_file_like_the_same_documents_as_tab_lines(tmp_path):
    docs = _documents()
    tsv, arff = tmp_path / "sms.tsv", tmp_path / "sms.arff"
    tsv.write_text("".join(f"{label}\t{text}\n" for label, text in docs), encoding="utf-8")
    arff.write_text(
        "% the same documents\n@relation sms\n@attribute message string\n@attribute class {ham,spam}\n@data\n"
        + "".join(f"'{text}',{label or '?'}\n" for label, text in docs),
        encoding="utf-8",
    )
    code_t, out_t, _ = _run(["demo", "--data", str(tsv), "--no-report", "--seed", "3"])
    code_a, out_a, _ = _run(["demo", "--data", str(arff), "--no-report", "--seed", "3"])
    assert code_t == code_a == 0
    assert "multinomial" in out_a and "unlabelled" in out_a
    assert out_a.replace(str(arff), "DATA") == out_t.replace(str(tsv), "DATA")


def test_demo_refuses_an_arff_file_without_one_text_attribute(tmp_path):
    arff = tmp_path / "table.arff"
    arff.write_text("@relation t\n@attribute a {x,y}\n@attribute class {p,q}\n@data\nx,p\ny,q\n", encoding="utf-8")
    code, _, err = _run(["demo", "--data", str(arff), "--no-report"])
    assert code == 1
    assert "no string attribute" in err and "bayesnb compare" in err


def test_compare_prints_its_footer_once(tmp_path):
    if not CAR.exists():
        pytest.skip(f"shared data set not found: {CAR}")
    data = tmp_path / "car.csv"
    rows = CAR.read_text().splitlines()[::5]  # every class occurs
    data.write_text("buying,maint,doors,persons,lug_boot,safety,class\n" + "\n".join(rows) + "\n")
    code, out, _ = _run(["compare", str(data), "--label", "class", "--bootstrap", "0", "--seed", "0"])
    assert code == 0
    assert out.count("hold-out:") == 1
    assert out.rstrip().splitlines()[-1].startswith("hold-out:")  # after both tables
    assert out.count("Δ accuracy") == 1
