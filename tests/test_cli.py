"""The ``bayesnb`` command: ``bayesnb demo`` on the bundled digits and on labelled text."""

from __future__ import annotations

import contextlib
import io
import math
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

from bayesnb import BernoulliNB, MultinomialNB, ZeroLikelihoodWarning, __version__
from bayesnb.cli import main
from bayesnb.estimators import BaseNB

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
SMS = SHARED_DATA / "sms_spam_collection" / "SMSSpamCollection"

FAMILIES = ("multinomial", "bernoulli", "categorical")
ESTIMATES = ("mle", "map", "mean", "predictive")
ROW = re.compile(r"^(multinomial|bernoulli|categorical)\s+(mle|map|mean|predictive)\s+(.*)$")
EVIDENCE = re.compile(r"^\s+(multinomial|bernoulli|categorical)\s+(-?\d+\.\d+)$")


def parse_table(out):
    """``{(family, estimate): (accuracy, log_loss, zero_rows) or "n/a (...)"}``."""
    table = {}
    for line in out.splitlines():
        m = ROW.match(line)
        if not m:
            continue
        family, estimate, rest = m.groups()
        assert (family, estimate) not in table, f"duplicate row {line!r}"
        if rest.startswith("n/a"):
            table[family, estimate] = rest
        else:
            acc, loss, zero = rest.split()
            table[family, estimate] = (float(acc), float(loss), int(zero))
    return table


def parse_evidence(out):
    return {m.group(1): float(m.group(2)) for m in map(EVIDENCE.match, out.splitlines()) if m}


def run_main(argv):
    """Run ``main`` in-process; return (exit code, stdout, stderr, fits per class, warnings)."""
    fits = []
    original_fit = BaseNB.fit

    def counting_fit(self, *args, **kwargs):
        fits.append(type(self).__name__)
        return original_fit(self, *args, **kwargs)

    out, err = io.StringIO(), io.StringIO()
    with (
        mock.patch.object(BaseNB, "fit", counting_fit),
        warnings.catch_warnings(record=True) as caught,
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        warnings.simplefilter("always")
        code = main(argv)
    return code, out.getvalue(), err.getvalue(), fits, caught


def write_corpus(path, n_per_class=30, seed=0):
    """A small, learnable two-class ``label<TAB>text`` file."""
    rng = np.random.default_rng(seed)
    spam = ["win", "cash", "prize", "free", "claim", "urgent", "offer", "call"]
    ham = ["lunch", "meeting", "tomorrow", "thanks", "home", "dinner", "see", "later"]
    shared = ["you", "now", "the", "today"]
    lines = []
    for label, vocab in (("spam", spam), ("ham", ham)):
        for _ in range(n_per_class):
            words = list(rng.choice(vocab, size=5)) + list(rng.choice(shared, size=2))
            if rng.random() < 0.15:  # some noise: a word of the other class
                words.append(rng.choice(ham if label == "spam" else spam))
            lines.append(f"{label}\t{' '.join(words)}")
    order = rng.permutation(len(lines))
    path.write_text("\n".join(lines[i] for i in order) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def digits_run():
    return run_main(["demo"])


@pytest.fixture
def corpus(tmp_path):
    return write_corpus(tmp_path / "corpus.tsv")


# ---------------------------------------------------------------- bundled digits
def test_demo_digits_table_has_every_family_and_estimate(digits_run):
    code, out, err, _, _ = digits_run
    assert code == 0, err
    table = parse_table(out)
    assert set(table) == {(f, e) for f in FAMILIES for e in ESTIMATES}
    for (family, estimate), cell in table.items():
        # alpha = 1: every estimate, MAP included, is defined
        assert isinstance(cell, tuple), f"{family} {estimate}: {cell}"
        acc, loss, zero = cell
        assert 0.0 <= acc <= 1.0
        assert loss >= 0.0 and math.isfinite(loss)
        assert 0 <= zero <= 450  # the test split of 1797 rows at test size 0.25
    assert "1347 train / 450 test" in out
    assert "digits" in out and err == ""


def test_demo_digits_numbers_make_sense(digits_run):
    _, out, _, _, _ = digits_run
    table = parse_table(out)
    assert table["multinomial", "predictive"][0] > 0.8
    assert table["categorical", "predictive"][0] > 0.8
    assert table["bernoulli", "predictive"][0] > 0.8
    for family in FAMILIES:
        # the Bayesian estimates never have impossible rows; alpha = 1 makes MAP == MLE
        assert table[family, "predictive"][2] == 0
        assert table[family, "mean"][2] == 0
        assert table[family, "map"] == table[family, "mle"]
        # smoothing helps: the posterior mean beats the MLE in log loss
        assert table[family, "mean"][1] < table[family, "mle"][1]
    # Bernoulli and categorical predictives are the posterior-mean plug-in (exact)
    for family in ("bernoulli", "categorical"):
        assert table[family, "predictive"] == table[family, "mean"]
    # 17 intensities as categories: many test rows hold an intensity a pixel never showed in training
    assert table["categorical", "mle"][2] > 10


def test_demo_digits_fits_each_family_once(digits_run):
    _, _, _, fits, _ = digits_run
    assert sorted(fits) == ["BernoulliNB", "CategoricalNB", "MultinomialNB"]


def test_demo_digits_counts_zero_likelihood_rows_instead_of_warning(digits_run):
    _, out, err, _, caught = digits_run
    assert not [w for w in caught if issubclass(w.category, ZeroLikelihoodWarning)]
    assert "ZeroLikelihoodWarning" not in err
    assert "zero-lik rows" in out


def test_demo_digits_prints_each_family_log_evidence(digits_run):
    _, out, _, _, _ = digits_run
    evidence = parse_evidence(out)
    assert set(evidence) == set(FAMILIES)
    assert all(math.isfinite(v) and v < 0 for v in evidence.values())


def test_demo_digits_log_evidence_matches_the_library(digits_run):
    from sklearn.model_selection import train_test_split

    from bayesnb.datasets import load_digits_counts

    _, out, _, _, _ = digits_run
    X, y = load_digits_counts()
    X_train, _, y_train, _ = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    expected = BernoulliNB(binarize=0.0).fit(X_train, y_train).log_evidence()
    assert parse_evidence(out)["bernoulli"] == pytest.approx(expected, abs=0.006)


def find_console_script():
    candidate = Path(sys.executable).with_name("bayesnb")
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate)
    return shutil.which("bayesnb")


def test_console_script_bayesnb_demo():
    script = find_console_script()
    if script is None:
        pytest.skip("the 'bayesnb' console script is not installed (pip install -e .)")
    proc = subprocess.run([script, "demo"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    table = parse_table(proc.stdout)
    assert set(table) == {(f, e) for f in FAMILIES for e in ESTIMATES}
    assert table["multinomial", "predictive"][0] > 0.8
    assert "Traceback" not in proc.stderr
    assert "ZeroLikelihoodWarning" not in proc.stderr


def test_python_dash_m_bayesnb_version():
    proc = subprocess.run([sys.executable, "-m", "bayesnb", "--version"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"bayesnb {__version__}"


# ----------------------------------------------------------------- labelled text
def expected_text_scores(path, alpha=1.0, test_size=0.25, seed=0):
    """The demo's numbers recomputed directly with the library."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.metrics import accuracy_score, log_loss
    from sklearn.model_selection import train_test_split

    from bayesnb.datasets import read_labelled_text

    texts, labels = read_labelled_text(path)
    d_train, d_test, y_train, y_test = train_test_split(
        np.asarray(texts, dtype=object), labels, test_size=test_size, random_state=seed, stratify=labels
    )
    vec = CountVectorizer()
    X_train, X_test = vec.fit_transform(d_train), vec.transform(d_test)
    result = {}
    for family, clf in (("multinomial", MultinomialNB(alpha=alpha)), ("bernoulli", BernoulliNB(alpha=alpha))):
        clf.fit(X_train, y_train)
        for estimate in ("mean", "predictive"):
            proba = clf.set_params(estimate=estimate).predict_proba(X_test)
            acc = accuracy_score(y_test, clf.classes_[proba.argmax(axis=1)])
            result[family, estimate] = (acc, log_loss(y_test, proba, labels=clf.classes_))
        result[family, "evidence"] = clf.log_evidence()
    return result


def test_demo_on_a_labelled_text_file(corpus):
    code, out, err, fits, caught = run_main(["demo", "--data", str(corpus)])
    assert code == 0, err
    table = parse_table(out)
    assert set(table) == {(f, e) for f in ("multinomial", "bernoulli") for e in ESTIMATES}
    assert sorted(fits) == ["BernoulliNB", "MultinomialNB"]
    assert not [w for w in caught if issubclass(w.category, ZeroLikelihoodWarning)]
    # the categorical family is skipped, with a one-line reason
    skip = [line for line in out.splitlines() if "categorical" in line and "skipped" in line]
    assert len(skip) == 1 and "text" in skip[0]
    assert "45 train / 15 test" in out
    expected = expected_text_scores(corpus)
    evidence = parse_evidence(out)
    for family in ("multinomial", "bernoulli"):
        for estimate in ("mean", "predictive"):
            acc, loss, zero = table[family, estimate]
            assert acc == pytest.approx(expected[family, estimate][0], abs=5e-5)
            assert loss == pytest.approx(expected[family, estimate][1], abs=5e-5)
            assert zero == 0
        assert table[family, "predictive"][0] >= 0.8  # the corpus is easy
        assert evidence[family] == pytest.approx(expected[family, "evidence"], abs=0.006)


def test_demo_text_alpha_below_one_reports_map_as_not_available(corpus):
    code, out, err, _, _ = run_main(["demo", "--data", str(corpus), "--alpha", "0.5"])
    assert code == 0, err
    table = parse_table(out)
    for family in ("multinomial", "bernoulli"):
        cell = table[family, "map"]
        assert isinstance(cell, str) and cell.startswith("n/a (") and cell.endswith(")")
        assert "< 1" in cell
        for estimate in ("mle", "mean", "predictive"):
            assert isinstance(table[family, estimate], tuple)
    assert "alpha = 0.5" in out
    expected = expected_text_scores(corpus, alpha=0.5)
    assert table["multinomial", "predictive"][1] == pytest.approx(expected["multinomial", "predictive"][1], abs=5e-5)


def test_demo_seed_and_test_size_change_the_split(corpus):
    _, first, _, _, _ = run_main(["demo", "--data", str(corpus)])
    _, again, _, _, _ = run_main(["demo", "--data", str(corpus)])
    assert first == again  # deterministic
    code, other, _, _, _ = run_main(["demo", "--data", str(corpus), "--seed", "3", "--test-size", "0.5"])
    assert code == 0
    assert "30 train / 30 test" in other and "seed 3" in other
    expected = expected_text_scores(corpus, test_size=0.5, seed=3)
    assert parse_table(other)["bernoulli", "mean"][0] == pytest.approx(expected["bernoulli", "mean"][0], abs=5e-5)


@pytest.mark.skipif(
    not SMS.parent.is_dir(), reason=f"{SMS.parent} not found: the shared corpora live beside the repository"
)
def test_demo_on_the_sms_spam_collection():
    code, out, err, _, caught = run_main(["demo", "--data", str(SMS)])
    assert code == 0, err
    table = parse_table(out)
    assert set(table) == {(f, e) for f in ("multinomial", "bernoulli") for e in ESTIMATES}
    assert table["multinomial", "predictive"][0] > 0.97
    assert table["multinomial", "mean"][0] > 0.97
    assert table["bernoulli", "predictive"][0] > 0.95
    # unseen-in-a-class words make some MLE rows impossible under both classes
    assert table["multinomial", "mle"][2] > 0
    assert not [w for w in caught if issubclass(w.category, ZeroLikelihoodWarning)]
    assert "5574 documents, 2 classes (ham 4827, spam 747)" in out


# ------------------------------------------------------------------------ errors
def test_missing_data_file_exits_1_with_one_line_message(tmp_path):
    missing = tmp_path / "nope.tsv"
    code, out, err, _, _ = run_main(["demo", "--data", str(missing)])
    assert code == 1
    assert err.strip() == f"bayesnb: error: no such file: {missing}"
    assert out == ""


def test_malformed_data_file_exits_1_naming_the_line(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("ham\thello there\nspam\tWIN cash\nthis line has no tab\n", encoding="utf-8")
    code, out, err, _, _ = run_main(["demo", "--data", str(bad)])
    assert code == 1
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("bayesnb: error: ")
    assert "line 3" in err and "this line has no tab" in err
    assert "Traceback" not in err and out == ""


def test_data_errors_in_a_subprocess_print_no_traceback(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("no tab here\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "bayesnb", "demo", "--data", str(bad)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert proc.stderr.startswith("bayesnb: error: ") and "line 1" in proc.stderr


@pytest.mark.parametrize(
    "content, message",
    [
        ("", "no labelled lines"),
        ("ham\thello\nham\tthere\nham\tagain\nham\tmore\n", "at least 2 classes"),
        ("ham\ta\nspam\tb\nham\tc\nspam\td\nham\te\nspam\tf\nham\tg\nspam\th\n", "vocabulary"),
        ("ham\thello there\nspam\twin cash\nham\tsee you\n", "stratified"),
    ],
    ids=["empty", "one-class", "empty-vocabulary", "too-few-to-stratify"],
)
def test_unusable_data_exits_1(tmp_path, content, message):
    path = tmp_path / "data.tsv"
    path.write_text(content, encoding="utf-8")
    code, out, err, _, _ = run_main(["demo", "--data", str(path)])
    assert code == 1
    assert err.startswith("bayesnb: error: ") and message in err
    assert len(err.strip().splitlines()) == 1


def test_directory_as_data_exits_1(tmp_path):
    code, _, err, _, _ = run_main(["demo", "--data", str(tmp_path)])
    assert code == 1 and "not a regular file" in err


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["frobnicate"],
        ["demo", "--bogus"],
        ["demo", "--alpha", "0"],
        ["demo", "--alpha", "-1"],
        ["demo", "--alpha", "abc"],
        ["demo", "--test-size", "0"],
        ["demo", "--test-size", "1.5"],
        ["demo", "--seed", "x"],
        ["demo", "--data"],
    ],
)
def test_usage_errors_exit_2(argv):
    code, out, err, fits, _ = run_main(argv)
    assert code == 2
    assert "usage: bayesnb" in err and "error:" in err
    assert fits == [] and out == ""


def test_help_and_version():
    code, out, _, _, _ = run_main(["--help"])
    assert code == 0 and "demo" in out and "--version" in out
    code, out, _, _, _ = run_main(["demo", "--help"])
    assert code == 0
    for option in ("--data", "--alpha", "--test-size", "--seed"):
        assert option in out
    assert "> 0" in out and "min_categories=17" in out  # the digits encodings are documented
    code, out, _, _, _ = run_main(["--version"])
    assert code == 0 and out.strip() == f"bayesnb {__version__}"
