"""The ``bayesnb`` command: ``bayesnb demo`` on the bundled digits and on labelled text.

The demo's terminal table gained Brier, ECE and macro-F1 columns (between log loss and the
zero-likelihood count) and the demo now writes a report directory: the parsing below reads
the new columns by name, and every demo run writes into a temporary directory. The
fit/predict/compare subcommands are tested in tests/cli/test_cli_userdata.py.
"""

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
from typing import NamedTuple
from unittest import mock

import numpy as np
import pytest

from bayesnb import BernoulliNB, MultinomialNB, ZeroLikelihoodWarning, __version__
from bayesnb.cli.command import main
from bayesnb.estimators import BaseNB

ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = ROOT.parent / "shared" / "data"
SMS = SHARED_DATA / "sms_spam_collection" / "SMSSpamCollection"

FAMILIES = ("multinomial", "bernoulli", "categorical")
ESTIMATES = ("mle", "map", "mean", "predictive")
ROW = re.compile(r"^(multinomial|bernoulli|categorical)\s+(mle|map|mean|predictive)\s+(.*)$")
EVIDENCE = re.compile(r"^\s+(multinomial|bernoulli|categorical)\s+(-?\d+\.\d+)$")


class Row(NamedTuple):
    accuracy: float
    log_loss: float
    brier: float
    ece: float
    macro_f1: float
    zero: int


def parse_table(out):
    """``{(family, estimate): Row or "n/a (...)"}`` from the demo's terminal table."""
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
            *metrics, zero = rest.split()
            table[family, estimate] = Row(*map(float, metrics), int(zero))
    return table


def parse_evidence(out):
    return {m.group(1): float(m.group(2)) for m in map(EVIDENCE.match, out.splitlines()) if m}


def run_main(argv):
    """Run ``main`` in-process; return (exit code, stdout, stderr, fits per class, warnings).

    ``fits`` counts ``fit`` calls (the demo's one fit per family on the training split);
    the learning curve refits on subsets through ``partial_fit``, counted in ``run_main.partial``.
    """
    fits, partial = [], []
    original_fit, original_partial = BaseNB.fit, BaseNB.partial_fit

    def counting_fit(self, *args, **kwargs):
        fits.append(type(self).__name__)
        return original_fit(self, *args, **kwargs)

    def counting_partial(self, *args, **kwargs):
        partial.append(type(self).__name__)
        return original_partial(self, *args, **kwargs)

    out, err = io.StringIO(), io.StringIO()
    with (
        mock.patch.object(BaseNB, "fit", counting_fit),
        mock.patch.object(BaseNB, "partial_fit", counting_partial),
        warnings.catch_warnings(record=True) as caught,
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        warnings.simplefilter("always")
        code = main(argv)
    run_main.partial = partial
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
def report_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("demo") / "report"


@pytest.fixture(scope="module")
def digits_run(report_dir):
    result = run_main(["demo", "--out", str(report_dir)])
    return (*result, list(run_main.partial))


@pytest.fixture
def corpus(tmp_path):
    return write_corpus(tmp_path / "corpus.tsv")


# ---------------------------------------------------------------- bundled digits
def test_demo_digits_table_has_every_family_and_estimate(digits_run):
    code, out, err, _, _, _ = digits_run
    assert code == 0, err
    table = parse_table(out)
    assert set(table) == {(f, e) for f in FAMILIES for e in ESTIMATES}
    for (family, estimate), cell in table.items():
        # alpha = 1: every estimate, MAP included, is defined
        assert isinstance(cell, Row), f"{family} {estimate}: {cell}"
        assert 0.0 <= cell.accuracy <= 1.0 and 0.0 <= cell.macro_f1 <= 1.0
        # Issue 15: rows impossible under every class make the log loss infinite.
        assert cell.log_loss >= 0.0 and math.isfinite(cell.log_loss) == (cell.zero == 0)
        assert 0.0 <= cell.brier <= 2.0 and 0.0 <= cell.ece <= 1.0
        assert 0 <= cell.zero <= 450  # the test split of 1797 rows at test size 0.25
    assert "1347 train / 450 test" in out
    assert "digits" in out and err == ""


def test_demo_digits_numbers_make_sense(digits_run):
    _, out, _, _, _, _ = digits_run
    table = parse_table(out)
    assert table["multinomial", "predictive"].accuracy > 0.8
    assert table["categorical", "predictive"].accuracy > 0.8
    assert table["bernoulli", "predictive"].accuracy > 0.8
    for family in FAMILIES:
        # the Bayesian estimates never have impossible rows; alpha = 1 makes MAP == MLE
        assert table[family, "predictive"].zero == 0
        assert table[family, "mean"].zero == 0
        assert table[family, "map"] == table[family, "mle"]
        # smoothing helps: the posterior mean beats the MLE in log loss
        assert table[family, "mean"].log_loss < table[family, "mle"].log_loss
    # Bernoulli and categorical predictives are the posterior-mean plug-in (exact)
    for family in ("bernoulli", "categorical"):
        assert table[family, "predictive"] == table[family, "mean"]
    # 17 intensities as categories: many test rows hold an intensity a pixel never showed in training
    assert table["categorical", "mle"].zero > 10


def test_demo_digits_fits_each_family_once(digits_run):
    _, _, _, fits, _, partial = digits_run
    # Every estimate of a family in the table comes from one fit on the training split.
    assert sorted(fits) == ["BernoulliNB", "CategoricalNB", "MultinomialNB"]
    # The calibrated row is a second model of each family (calibrate="loo", fitted once
    # on the same split); the learning curve refits the multinomial on subsets: 5 per
    # size, 1 at the full size.
    from bayesnb.cli.report import curve_sizes

    sizes = curve_sizes(1347, 10)
    assert partial == ["MultinomialNB", "BernoulliNB", "CategoricalNB"] + ["MultinomialNB"] * (5 * (len(sizes) - 1) + 1)


def test_demo_digits_counts_zero_likelihood_rows_instead_of_warning(digits_run):
    _, out, err, _, caught, _ = digits_run
    assert not [w for w in caught if issubclass(w.category, ZeroLikelihoodWarning)]
    assert "ZeroLikelihoodWarning" not in err
    assert "zero-lik rows" in out


def test_demo_digits_prints_each_family_log_evidence(digits_run):
    _, out, _, _, _, _ = digits_run
    evidence = parse_evidence(out)
    assert set(evidence) == set(FAMILIES)
    assert all(math.isfinite(v) and v < 0 for v in evidence.values())


def test_demo_digits_log_evidence_matches_the_library(digits_run):
    from sklearn.model_selection import train_test_split

    from bayesnb.io.datasets import load_digits_counts

    _, out, _, _, _, _ = digits_run
    X, y = load_digits_counts()
    X_train, _, y_train, _ = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    expected = BernoulliNB(binarize=0.0).fit(X_train, y_train).log_evidence()
    assert parse_evidence(out)["bernoulli"] == pytest.approx(expected, abs=0.006)


def find_console_script():
    candidate = Path(sys.executable).with_name("bayesnb")
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate)
    return shutil.which("bayesnb")


def test_console_script_bayesnb_demo(tmp_path):
    # Without --out, the report goes to a new bayesnb-report-* folder of the working directory.
    script = find_console_script()
    if script is None:
        pytest.skip("the 'bayesnb' console script is not installed (pip install -e .)")
    proc = subprocess.run([script, "demo"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    table = parse_table(proc.stdout)
    assert set(table) == {(f, e) for f in FAMILIES for e in ESTIMATES}
    assert table["multinomial", "predictive"].accuracy > 0.8
    assert "Traceback" not in proc.stderr
    assert "ZeroLikelihoodWarning" not in proc.stderr
    assert proc.stderr == ""  # no progress lines when stderr is not a terminal
    (folder,) = tmp_path.iterdir()
    assert re.fullmatch(r"bayesnb-report-\d{8}-\d{6}", folder.name)
    assert (folder / "report.md").is_file()
    assert f"report: {folder / 'report.md'}" in proc.stdout


# ----------------------------------------------------------------------- report
PLOTS = (
    "reliability_multinomial.png",
    "reliability_bernoulli.png",
    "reliability_categorical.png",
    "learning_curve.png",
    "learning_curve_accuracy.png",
    "uncertainty.png",
    "top_features.png",
)


def assert_real_png(path, min_bytes=15_000):
    """A PNG that decodes, of a plausible size, with enough distinct colours to be a plot."""
    from matplotlib.image import imread

    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    assert len(data) > min_bytes, f"{path.name}: only {len(data)} bytes"
    image = imread(path)
    assert image.ndim == 3 and image.shape[0] >= 300 and image.shape[1] >= 400
    pixels = image[..., :3].reshape(-1, 3)
    # Axes, text and data lines in several colours, not an empty canvas.
    assert np.unique(np.round(pixels, 2), axis=0).shape[0] > 50
    assert (pixels.std(axis=0) > 0.05).all()


def test_demo_writes_the_report_with_real_plots(digits_run, report_dir):
    code, out, _, _, _, _ = digits_run
    assert code == 0
    report = report_dir / "report.md"
    assert f"report: {report}" in out
    text = report.read_text(encoding="utf-8")
    for name in PLOTS:
        assert f"]({name})" in text, f"report.md does not show {name}"
        assert_real_png(report_dir / name)
    # Every family's table, its paired differences, the learning curve and the uncertainty sections.
    for heading in ("### multinomial", "### bernoulli", "### categorical", "## Log evidence",
                    "## Where full Bayes matters", "## Posterior uncertainty", "## Features that most raise"):
        assert heading in text
    # The report's numbers are the terminal table's (same fit, same estimates).
    table = parse_table(out)
    row = next(line for line in text.splitlines() if line.startswith("| predictive |"))
    assert f"{table['multinomial', 'predictive'].accuracy:.4f} [" in row
    # Bootstrap intervals bracket the point values.
    for line in text.splitlines():
        for value, lo, hi in re.findall(r"(-?\d+\.\d{4}) \[(-?\d+\.\d{4}), (-?\d+\.\d{4})\]", line):
            if not line.startswith("| 1") and "Δ" not in line:
                assert float(lo) <= float(value) + 1e-4 and float(value) <= float(hi) + 1e-4, line


def test_demo_report_learning_curve_shows_where_full_bayes_matters(report_dir):
    text = (report_dir / "report.md").read_text(encoding="utf-8")
    verdict = next(line for line in text.splitlines() if line.startswith("Paired 95% intervals of Δ log loss"))
    # With 10 training images (one per class) the exact predictive beats the plug-in.
    assert "lower log loss than the posterior-mean plug-in at 10," in verdict


def test_demo_out_must_not_be_a_file(tmp_path):
    target = tmp_path / "report"
    target.write_text("not a directory")
    code, out, err, _, _ = run_main(["demo", "--out", str(target)])
    assert code == 1 and err.startswith("bayesnb: error: --out") and "not a directory" in err
    assert len(err.strip().splitlines()) == 1


def test_demo_progress_on_request(tmp_path, corpus):
    code, out, err, _, _ = run_main(["demo", "--data", str(corpus), "--no-report", "--progress"])
    assert code == 0
    assert "bayesnb: fitting multinomial on 45 rows: 4 estimates, calibrate='loo' and scikit-learn's baselines: done (" in err
    code, _, err, _, _ = run_main(["demo", "--data", str(corpus), "--no-report"])
    assert code == 0 and err == ""


def test_demo_no_report_writes_nothing(tmp_path, corpus, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err, _, _ = run_main(["demo", "--data", str(corpus), "--no-report"])
    assert code == 0 and "report:" not in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.tsv"]
    code, _, err, _, _ = run_main(["demo", "--no-report", "--out", str(tmp_path / "r")])
    assert code == 1 and "contradict" in err


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

    from bayesnb.io.datasets import read_labelled_text

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
    code, out, err, fits, caught = run_main(["demo", "--data", str(corpus), "--no-report"])
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
            row = table[family, estimate]
            assert row.accuracy == pytest.approx(expected[family, estimate][0], abs=5e-5)
            assert row.log_loss == pytest.approx(expected[family, estimate][1], abs=5e-5)
            assert row.zero == 0
        assert table[family, "predictive"].accuracy >= 0.8  # the corpus is easy
        assert evidence[family] == pytest.approx(expected[family, "evidence"], abs=0.006)


def test_demo_text_alpha_below_one_reports_map_as_not_available(corpus):
    code, out, err, _, _ = run_main(["demo", "--data", str(corpus), "--alpha", "0.5", "--no-report"])
    assert code == 0, err
    table = parse_table(out)
    for family in ("multinomial", "bernoulli"):
        cell = table[family, "map"]
        assert isinstance(cell, str) and cell.startswith("n/a (") and cell.endswith(")")
        assert "< 1" in cell
        for estimate in ("mle", "mean", "predictive"):
            assert isinstance(table[family, estimate], Row)
    assert "alpha = 0.5" in out
    expected = expected_text_scores(corpus, alpha=0.5)
    assert table["multinomial", "predictive"].log_loss == pytest.approx(
        expected["multinomial", "predictive"][1], abs=5e-5
    )


def test_demo_seed_and_test_size_change_the_split(corpus):
    _, first, _, _, _ = run_main(["demo", "--data", str(corpus), "--no-report"])
    _, again, _, _, _ = run_main(["demo", "--data", str(corpus), "--no-report"])
    assert first == again  # deterministic
    code, other, _, _, _ = run_main(
        ["demo", "--data", str(corpus), "--seed", "3", "--test-size", "0.5", "--no-report"]
    )
    assert code == 0
    assert "30 train / 30 test" in other and "seed 3" in other
    expected = expected_text_scores(corpus, test_size=0.5, seed=3)
    assert parse_table(other)["bernoulli", "mean"].accuracy == pytest.approx(
        expected["bernoulli", "mean"][0], abs=5e-5
    )


@pytest.mark.slow
@pytest.mark.skipif(
    not SMS.parent.is_dir(), reason=f"{SMS.parent} not found: the shared corpora live beside the repository"
)
def test_demo_on_the_sms_spam_collection(tmp_path):
    code, out, err, _, caught = run_main(["demo", "--data", str(SMS), "--out", str(tmp_path), "--draws", "100"])
    assert code == 0, err
    table = parse_table(out)
    assert set(table) == {(f, e) for f in ("multinomial", "bernoulli") for e in ESTIMATES}
    assert table["multinomial", "predictive"].accuracy > 0.97
    assert table["multinomial", "mean"].accuracy > 0.97
    assert table["bernoulli", "predictive"].accuracy > 0.95
    # unseen-in-a-class words make some MLE rows impossible under both classes
    assert table["multinomial", "mle"].zero > 0
    assert not [w for w in caught if issubclass(w.category, ZeroLikelihoodWarning)]
    assert "5574 documents, 2 classes (ham 4827, spam 747)" in out
    # The report names the words that most raise p(spam), each with its 90% interval above 0.
    text = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "## Features that most raise p(spam)" in text
    rows = re.findall(r"^\| (\w+) \| (-?\d+\.\d+) \| \[(-?\d+\.\d+), (-?\d+\.\d+)\] \|$", text, re.M)
    words = [w for w, *_ in rows]
    assert len(words) == 15 and {"claim", "prize"} & set(words), words
    assert all(float(lo) > 0 for _, _, lo, _ in rows)
    for name in ("reliability_multinomial.png", "reliability_bernoulli.png", "top_features.png", "uncertainty.png"):
        assert_real_png(tmp_path / name)


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
        ["demo", "--draws", "5"],
        ["demo", "--out"],
        ["fit"],
        ["fit", "data.csv"],
        ["fit", "data.csv", "--model", "m.npz", "--family", "gamma"],
        ["predict", "data.csv"],
        ["predict", "data.csv", "--model", "m.npz", "--interval", "1.5"],
        ["predict", "data.csv", "--model", "m.npz", "--estimate", "median"],
        ["compare", "data.csv", "--cv", "1"],
        ["compare", "data.csv", "--cv", "3", "--test-data", "t.csv"],
        ["compare", "data.csv", "--train-sizes", "a,b"],
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
    for command in ("demo", "fit", "predict", "compare"):
        assert command in out
    assert "Exit status" in out
    code, out, _, _, _ = run_main(["demo", "--help"])
    assert code == 0
    for option in ("--data", "--out", "--alpha", "--test-size", "--seed", "--draws", "--progress", "--no-report"):
        assert option in out
    assert "> 0" in out and "min_categories=17" in out  # the digits encodings are documented
    code, out, _, _, _ = run_main(["--version"])
    assert code == 0 and out.strip() == f"bayesnb {__version__}"
