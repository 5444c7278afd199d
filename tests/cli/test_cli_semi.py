"""``bayesnb demo --data`` on a file with unlabelled documents: the semi-supervised section.

An unlabelled line is ``<TAB>text`` (empty label field) or, with ``--unlabelled LABEL``,
a line with that label. The oracle for every figure is the library called directly:
scikit-learn's stratified ``train_test_split`` of the labelled lines (in file order),
``CountVectorizer`` fitted on the labelled training and the unlabelled texts, and
``MultinomialNB`` / ``SemiSupervisedNB`` fitted on them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import train_test_split

from bayesnb import MultinomialNB, SemiSupervisedNB

from test_cli import parse_evidence, parse_table, run_main

ROOT = Path(__file__).resolve().parents[2]
CLASSES = ("politics", "sport")
SECTION = "semi-supervised, multinomial"


def write_semi_corpus(path, n_labelled=40, n_total=200, marker="", seed=0):
    """Two classes with their own words; the first ``n_labelled`` lines labelled, the rest ``marker``."""
    rng = np.random.default_rng(seed)
    vocab = {
        "sport": ["goal", "match", "team", "score", "coach", "league"],
        "politics": ["vote", "party", "law", "senate", "policy", "election"],
    }
    shared = ["the", "today", "news", "week"]
    lines, truth = [], []
    for i in range(n_total):
        c = CLASSES[i % 2]
        other = vocab["politics" if c == "sport" else "sport"]
        words = list(rng.choice(vocab[c], 3)) + list(rng.choice(shared, 3)) + list(rng.choice(other, 1))
        lines.append(f"{c if i < n_labelled else marker}\t{' '.join(words)}")
        truth.append(c)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def oracle(path, alpha=1.0, test_size=0.25, seed=0, marker=""):
    """The section's figures computed with the library directly."""
    rows = [line.split("\t", 1) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    labels = np.array([label.strip() for label, _ in rows], dtype=object)
    docs = np.array([text for _, text in rows], dtype=object)
    unl = labels == marker
    d_train, d_test, y_train, y_test = train_test_split(
        docs[~unl], labels[~unl], test_size=test_size, random_state=seed, stratify=labels[~unl]
    )
    vec = CountVectorizer().fit(np.concatenate([d_train, docs[unl]]))
    X_train, X_test, X_unl = vec.transform(d_train), vec.transform(d_test), vec.transform(docs[unl])

    def score(clf):
        proba = clf.predict_proba(X_test)
        return accuracy_score(y_test, clf.classes_[proba.argmax(1)]), log_loss(y_test, proba, labels=clf.classes_)

    def fit_all(Xl, yl):
        out = {"labelled only": (*score(MultinomialNB(alpha=alpha).fit(Xl, yl)), None, None)}
        X = sp.vstack([Xl, X_unl]).tocsr()
        y = np.concatenate([np.asarray(yl, dtype=object), np.full(X_unl.shape[0], -1, dtype=object)])
        for name in ("EM", "VB"):
            clf = SemiSupervisedNB(MultinomialNB(alpha=alpha), method=name.lower()).fit(X, y)
            assigned = clf.transduction_[len(yl):]
            out[name] = (*score(clf), {c: int(np.sum(assigned == c)) for c in clf.classes_}, clf.unlabelled_weight_)
        return out

    holdout = fit_all(X_train, y_train)
    # The learning curve's smallest point: 1 labelled document per class, repeat r drawn
    # with default_rng(seed + r), classes in sorted order.
    curve1 = {m: [] for m in ("labelled only", "EM", "VB")}
    for r in range(5):
        rng = np.random.default_rng(seed + r)
        pick = np.concatenate([rng.choice(np.flatnonzero(y_train == c), 1, replace=False) for c in np.unique(y_train)])
        for m, (acc, _, _, _) in fit_all(X_train[pick], y_train[pick]).items():
            curve1[m].append(acc)
    return holdout, curve1, len(vec.vocabulary_), int(unl.sum())


SEMI_ROW = re.compile(r"^  (labelled only|EM|VB)\s+(\d\.\d{4})\s+(\d+\.\d{4})\s+(\S+)")


def parse_semi(out):
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(SECTION))
    rows = {}
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        m = SEMI_ROW.match(line)
        if m:
            rows[m.group(1)] = (float(m.group(2)), float(m.group(3)), m.group(4))
    return rows, "\n".join(lines[start : lines.index("", start)])


@pytest.fixture(scope="module")
def semi_run(tmp_path_factory):
    """``python -m bayesnb demo --data FILE --out DIR`` in a subprocess, on this checkout."""
    tmp = tmp_path_factory.mktemp("semi")
    data = write_semi_corpus(tmp / "news.tsv")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "bayesnb", "demo", "--data", str(data), "--out", str(tmp / "report"), "--draws", "50"],
        capture_output=True, text=True, timeout=600, cwd=tmp, env=env,
    )
    return proc, data, tmp / "report" / "report.md"


@pytest.fixture(scope="module")
def blank_demo(tmp_path_factory):
    """``(path, exit status, stdout, stderr)`` of ``bayesnb demo --data FILE --no-report``, in
    process, on the default corpus (unlabelled lines with an empty label field): run once
    for the two tests that read it."""
    path = write_semi_corpus(tmp_path_factory.mktemp("blank") / "blank.tsv")
    code, out, err, _, _ = run_main(["demo", "--data", str(path), "--no-report"])
    return path, code, out, err


def test_semi_section_matches_the_library(semi_run):
    proc, data, _ = semi_run
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    holdout, _, n_words, n_unl = oracle(data)
    rows, section = parse_semi(proc.stdout)
    assert set(rows) == {"labelled only", "EM", "VB"}
    for method, (acc, loss, assigned, weight) in holdout.items():
        assert rows[method][0] == pytest.approx(acc, abs=5e-5), method
        assert rows[method][1] == pytest.approx(loss, abs=5e-5), method
        if assigned is not None:
            counts = ", ".join(f"{c} {n}" for c, n in assigned.items())
            assert f"unlabelled documents by class, {method}: {counts}" in " ".join(section.split())
            assert sum(assigned.values()) == n_unl == 160
            # the default unlabelled_weight="auto": the weight chosen, and the curve it was chosen from
            assert f"unlabelled weight, {method}: {weight:g}, chosen by the accuracy of a 3-fold cross-validation" in (
                " ".join(section.split())
            )
    flat = " ".join(section.split())
    assert f"{n_unl} unlabelled documents (an empty label field)" in flat
    assert "labelled training documents: politics 15, sport 15" in flat
    assert "held-out labelled documents: politics 5, sport 5" in flat
    assert f"vocabulary: {n_words} words" in flat
    # the header counts every line: nothing silently dropped
    assert "200 documents (40 labelled, 160 unlabelled: an empty label field), 2 classes (politics 20, sport 20)" in proc.stdout


def test_semi_report_has_the_holdout_and_the_learning_curve(semi_run):
    proc, data, report = semi_run
    assert proc.returncode == 0, proc.stderr
    md = report.read_text(encoding="utf-8")
    assert "## Unlabelled documents: semi-supervised naive Bayes" in md
    holdout, curve1, _, _ = oracle(data)
    for method, (acc, loss, _, weight) in holdout.items():
        assert re.search(rf"^\| {method} \| {acc:.4f} \| {loss:.4f} \|", md, re.M), method
        if weight is not None:
            assert re.search(rf"^\| {method} \| {acc:.4f} \| {loss:.4f} \| [^|]+ \| {weight:g} \|", md, re.M), method
    assert "### Learning curve" in md
    # points k = 1, 2, 5, 10 (k below the 15 training documents of each class), 5 repeats each
    sizes = sorted({int(m) for m in re.findall(r"^\| (\d+) \| (?:labelled only|EM|VB) \|", md, re.M)})
    assert sizes == [1, 2, 5, 10]
    for method, accs in curve1.items():
        accs = np.asarray(accs)
        cell = f"{accs.mean():.3f} ± {accs.std(ddof=1):.3f} [{accs.min():.3f}, {accs.max():.3f}]"
        assert f"| 1 | {method} | {cell} |" in md, (method, cell)


def test_unlabelled_lines_do_not_change_the_ordinary_demo(tmp_path, blank_demo):
    """The families' table and evidences equal those of the file without its unlabelled lines."""
    with_unl, code_a, out_a, err_a = blank_demo
    labelled_only = tmp_path / "without.tsv"
    labelled_only.write_text(
        "".join(line + "\n" for line in with_unl.read_text().splitlines() if not line.startswith("\t")), encoding="utf-8"
    )
    code_b, out_b, err_b, _, _ = run_main(["demo", "--data", str(labelled_only), "--no-report"])
    assert code_a == code_b == 0, (err_a, err_b)
    assert parse_table(out_a) == parse_table(out_b) and len(parse_table(out_b)) == 8
    assert parse_evidence(out_a) == parse_evidence(out_b)
    assert "split: 30 train / 10 test rows" in out_a and "split: 30 train / 10 test rows" in out_b
    # a fully labelled file: no semi-supervised section, no mention of unlabelled documents
    assert SECTION not in out_b and "unlabelled" not in out_b.replace(str(tmp_path), "")
    assert "data: " + str(labelled_only) + ", 40 documents, 2 classes (politics 20, sport 20)" in out_b
    # the file with unlabelled lines differs only by the header count, the section and one note
    assert SECTION in out_a
    assert "the 160 unlabelled documents are not in the fits above" in " ".join(out_a.split())
    # the unlabelled lines are no class: still the two classes, with their 20 lines each
    assert "160 unlabelled: an empty label field), 2 classes (politics 20, sport 20)" in out_a


def test_label_minus_one_is_a_class_unless_named_unlabelled(tmp_path, blank_demo):
    minus = write_semi_corpus(tmp_path / "minus.tsv", marker="-1")
    code, out, err, _, _ = run_main(["demo", "--data", str(minus), "--no-report"])
    assert code == 0, err
    # not silent: the note says -1 is a class and how to mark it unlabelled
    flat = " ".join(out.split())
    assert "the label -1 is a class here (160 documents)" in flat and "--unlabelled=-1" in flat
    assert SECTION not in out
    code, out_m, err, _, _ = run_main(["demo", "--data", str(minus), "--no-report", "--unlabelled=-1"])
    assert code == 0, err
    _, code_b, out_b, err_b = blank_demo
    assert code_b == 0, err_b
    assert parse_semi(out_m)[0] == parse_semi(out_b)[0]
    assert "160 unlabelled: the label '-1'" in out_m
    assert parse_table(out_m) == parse_table(out_b)


def test_unlabelled_needs_data_and_some_labelled_lines(tmp_path):
    code, _, err, _, _ = run_main(["demo", "--unlabelled=-1", "--no-report"])
    assert code == 1 and "--unlabelled" in err and "Traceback" not in err
    none = tmp_path / "none.tsv"
    none.write_text("\tfirst text\n\tsecond text\n", encoding="utf-8")
    code, _, err, _, _ = run_main(["demo", "--data", str(none), "--no-report"])
    assert code == 1 and "no labelled lines" in err and "Traceback" not in err


def test_components_are_capped_by_distinct_documents():
    """Copies of a labelled document start in one component, so they count once toward a class's cap."""
    from bayesnb.cli.semi import _distinct_documents

    rows = np.array([[1, 0, 2], [1, 0, 2], [0, 3, 0], [0, 1, 1], [0, 1, 1], [2, 2, 2]])
    X = sp.csr_matrix(rows)
    # the same first document written with an explicit zero and its entries out of order
    X2 = sp.csr_matrix((np.array([2, 0, 1]), np.array([2, 1, 0]), np.array([0, 3])), shape=(1, 3))
    X = sp.vstack([X, X2]).tocsr()
    y = ["a", "a", "a", "b", "b", "b", "a"]
    assert _distinct_documents(X, y) == {"a": 2, "b": 2}
