"""The ``bayesnb`` command.

Subcommands:

* ``bayesnb demo [--out DIR] [--data PATH]``: fit each naive Bayes family once on a
  stratified training split, compare every ``estimate`` (MLE, MAP, posterior mean, exact
  posterior predictive) of that one posterior on the test split, and write a report
  directory (Markdown report and PNG plots: reliability diagrams, learning curve,
  predictive uncertainty, top features with credible intervals). Without ``--data`` it
  runs on scikit-learn's bundled digits (no download); with ``--data PATH`` on a
  ``label<TAB>text`` file such as the SMS Spam Collection.
* ``bayesnb fit DATA --model FILE``: fit a model on a CSV/TSV file (a text column, or
  tabular columns) and save it.
* ``bayesnb predict DATA --model FILE``: predict classes, probabilities and credible
  intervals for the rows of a CSV/TSV file.
* ``bayesnb compare DATA``: compare the four estimates on a user's data (hold-out,
  cross-validation or learning curve).

Exit status: 0 on success, 2 on a usage error (argparse), 1 on a missing or malformed
file or unusable data (a one-line ``bayesnb: error: ...`` message, no traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import os
import sys
import textwrap
import time
import warnings
from pathlib import Path

from . import __version__
from ._validation import ESTIMATES

__all__ = ["main", "build_parser"]

PROG = "bayesnb"

# Pixels above this intensity (0..16) are "on" for the Bernoulli family.
DIGITS_BINARIZE_THRESHOLD = 0.0
DIGITS_N_CATEGORIES = 17

#: Families ``bayesnb fit`` / ``compare`` can use.
FAMILIES = (
    "auto",
    "multinomial",
    "bernoulli",
    "poisson",
    "categorical",
    "gaussian",
    "gaussian-shared",
    "gaussian-full",
    "mixed",
)
_TEXT_FAMILIES = ("multinomial", "bernoulli", "poisson")
_SPEC_FORMAT = "bayesnb-cli-model"
_SPEC_VERSION = 1


class DataError(Exception):
    """A file or data set the command cannot use (reported with exit status 1)."""


# ------------------------------------------------------------------ argument parsing
def _positive_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def _fraction(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be strictly between 0 and 1, got {text!r}")
    return value


def _seed(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"must be in [0, 2**32), got {text!r}")
    return value


def _count(minimum):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {text!r}")
        return value

    return parse


def _sizes(text):
    sizes = []
    for part in text.split(","):
        try:
            value = float(part) if "." in part else int(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated sizes, got {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"sizes must be > 0, got {part!r}")
        sizes.append(value)
    return sizes


def _separator(text):
    named = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";"}
    sep = named.get(text.lower(), text)
    if len(sep) != 1:
        raise argparse.ArgumentTypeError(f"expected one character (or tab, comma, semicolon), got {text!r}")
    return sep


def _add_table_options(p, *, label_required=False):
    p.add_argument("data", metavar="DATA", help="CSV/TSV file, one row per example")
    p.add_argument(
        "--label",
        metavar="COL",
        help="label column, by name or 0-based position (default: the column named label, class, "
        "target or y)" + ("" if not label_required else ""),
    )
    p.add_argument("--text", metavar="COL", help="text column: model its word counts (bag of words)")
    p.add_argument(
        "--features",
        metavar="COLS",
        help="comma-separated feature columns (default: every column but the label)",
    )
    p.add_argument("--sep", type=_separator, help="field separator (default: TAB for .tsv, comma for .csv)")
    p.add_argument("--no-header", action="store_true", help="the file has no header line: name columns 0, 1, ...")


def _add_model_options(p):
    p.add_argument(
        "--family",
        choices=FAMILIES,
        default="auto",
        help="naive Bayes family (default: auto = multinomial for text; gaussian for numeric "
        "columns, categorical for non-numeric ones, mixed for both)",
    )
    p.add_argument(
        "--alpha",
        type=_positive_float,
        default=1.0,
        help="prior concentration of the discrete families (> 0; default: %(default)s)",
    )


def build_parser():
    """The ``bayesnb`` argument parser (subcommands: demo, fit, predict, compare)."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Bayesian naive Bayes with conjugate priors: closed-form posteriors, "
        "exact posterior predictives, log evidences and posterior uncertainty.",
        epilog="Run 'bayesnb COMMAND --help' for a command's options. Exit status: 0 ok, "
        "1 unusable file or data, 2 usage error.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    demo = sub.add_parser(
        "demo",
        help="compare MLE / MAP / posterior mean / posterior predictive and write a report",
        description=textwrap.dedent(
            f"""\
            Fit the multinomial, Bernoulli and categorical naive Bayes families ONCE each on
            a stratified training split, then score every estimate of the same posterior
            (mle, map, mean, predictive; switched with set_params) on the test split:
            accuracy, log loss, Brier score, expected calibration error, macro-F1 (with 95%
            paired bootstrap intervals in the report) and the number of test rows with zero
            likelihood under every class; plus each family's log evidence
            log p(X_train, y_train). A learning curve over training-set sizes shows where
            full Bayes matters (little data); posterior draws give the uncertainty of each
            prediction and credible intervals of the features' log-odds contributions.

            The summary table goes to the terminal; the report (report.md and PNG plots)
            to a new directory (--out).

            Default data (no download): scikit-learn's bundled 8x8 digits (1797 images, 10
            classes). Multinomial: pixel intensities 0..16 as counts. Bernoulli: a pixel is
            "on" when its intensity is > {DIGITS_BINARIZE_THRESHOLD:g}. Categorical: each intensity 0..16 is a
            category (min_categories={DIGITS_N_CATEGORIES}).

            With --data PATH: a UTF-8 text file of 'label<TAB>text' lines (e.g. the SMS Spam
            Collection). Texts are vectorised with scikit-learn's CountVectorizer fitted on
            the training split: word counts for the multinomial, word presence for
            Bernoulli. The categorical family is skipped for text."""
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    demo.add_argument(
        "--data",
        metavar="PATH",
        help="labelled text file, one 'label<TAB>text' per line (default: bundled digits)",
    )
    demo.add_argument(
        "--out",
        metavar="DIR",
        help="report directory (default: a new bayesnb-report-YYYYmmdd-HHMMSS in the working directory)",
    )
    demo.add_argument(
        "--alpha",
        type=_positive_float,
        default=1.0,
        help="prior concentration of every feature distribution (> 0; default: %(default)s). "
        "Below 1 the MAP is undefined and shown as n/a",
    )
    demo.add_argument(
        "--test-size",
        type=_fraction,
        default=0.25,
        metavar="FRACTION",
        help="fraction of rows held out for testing, in (0, 1) (default: %(default)s)",
    )
    demo.add_argument(
        "--seed", type=_seed, default=0, help="random seed of the split, subsets and draws (default: %(default)s)"
    )
    demo.add_argument(
        "--draws",
        type=_count(10),
        default=200,
        metavar="N",
        help="posterior draws for the uncertainty and the feature intervals (>= 10; default: %(default)s)",
    )
    _add_progress(demo)
    demo.set_defaults(handler=_run_demo)

    fit = sub.add_parser(
        "fit",
        help="fit a model on a CSV/TSV file and save it",
        description="Fit a naive Bayes model on labelled rows of a CSV/TSV file and save it to "
        "--model (a bayesnb model file, readable with bayesnb.load) plus MODEL.cli.json, the "
        "column layout and encodings that 'bayesnb predict' applies to new files. With --text "
        "the model is of the word counts of that column; otherwise of the feature columns "
        "(numbers: Gaussian; other values: categorical).",
    )
    _add_table_options(fit)
    _add_model_options(fit)
    fit.add_argument("--model", metavar="FILE", required=True, help="where to save the model (e.g. model.npz)")
    fit.set_defaults(handler=_run_fit)

    predict = sub.add_parser(
        "predict",
        help="predict the classes of the rows of a CSV/TSV file with a saved model",
        description="Predict every row of DATA with a model saved by 'bayesnb fit'. Writes a CSV "
        "(or TSV for a .tsv --out) with the line number, the predicted class and the class "
        "probabilities, and with --interval the credible interval of each probability over the "
        "posterior. When DATA holds the label column, accuracy and log loss go to stderr.",
    )
    predict.add_argument("data", metavar="DATA", help="CSV/TSV file with the columns used at fit")
    predict.add_argument("--model", metavar="FILE", required=True, help="model file written by 'bayesnb fit'")
    predict.add_argument("--out", metavar="FILE", help="output file (default: standard output)")
    predict.add_argument(
        "--estimate", choices=ESTIMATES, default="predictive", help="estimate used (default: %(default)s)"
    )
    predict.add_argument(
        "--interval",
        type=_fraction,
        metavar="LEVEL",
        help="add equal-tailed credible intervals of the class probabilities at LEVEL (e.g. 0.9)",
    )
    predict.add_argument(
        "--draws", type=_count(10), default=1000, metavar="N", help="posterior draws for --interval (default: %(default)s)"
    )
    predict.add_argument("--seed", type=_seed, default=0, help="random seed of the draws (default: %(default)s)")
    predict.add_argument("--sep", type=_separator, help="field separator of DATA (default: as at fit)")
    predict.add_argument("--no-header", action="store_true", help="DATA has no header line")
    predict.set_defaults(handler=_run_predict)

    comp = sub.add_parser(
        "compare",
        help="compare MLE / MAP / posterior mean / posterior predictive on a CSV/TSV file",
        description="Fit a model on a user's data and score every estimate of its posterior: "
        "accuracy, log loss, Brier, ECE, macro-F1 with bootstrap intervals, paired differences from "
        "the posterior predictive, and the log evidence. Hold-out (--test-data or --test-size), "
        "cross-validation (--cv K) or a learning curve (--train-sizes).",
    )
    _add_table_options(comp)
    _add_model_options(comp)
    how = comp.add_mutually_exclusive_group()
    how.add_argument("--test-data", metavar="PATH", help="separate test file with the same columns")
    how.add_argument("--cv", type=_count(2), metavar="K", help="K-fold cross-validation instead of a test split")
    comp.add_argument(
        "--test-size", type=_fraction, default=0.25, metavar="FRACTION", help="test fraction of a split (default: %(default)s)"
    )
    comp.add_argument(
        "--train-sizes",
        type=_sizes,
        metavar="SIZES",
        help="learning curve: comma-separated training-set sizes (row counts, or fractions like 0.1)",
    )
    comp.add_argument("--repeats", type=_count(1), default=5, help="training subsets per size (default: %(default)s)")
    comp.add_argument("--bootstrap", type=_count(0), default=1000, metavar="N", help="bootstrap resamples (default: %(default)s)")
    comp.add_argument("--seed", type=_seed, default=0, help="random seed (default: %(default)s)")
    comp.add_argument("--out", metavar="FILE", help="also write the table: .csv, .tsv or .md")
    _add_progress(comp)
    comp.set_defaults(handler=_run_compare)
    return parser


def _add_progress(p):
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress on stderr for long steps (default: when stderr is a terminal)",
    )


# --------------------------------------------------------------------------- progress
class _Progress:
    """Progress lines on stderr: a timed step, or a bar for a loop of fits."""

    def __init__(self, enabled):
        self.enabled = sys.stderr.isatty() if enabled is None else bool(enabled)
        self._tty = sys.stderr.isatty()

    @contextlib.contextmanager
    def step(self, message):
        if not self.enabled:
            yield
            return
        print(f"{PROG}: {message} ...", file=sys.stderr, end="" if self._tty else "\n", flush=True)
        start = time.perf_counter()
        yield
        elapsed = time.perf_counter() - start
        if self._tty:
            print(f" done ({elapsed:.1f} s)", file=sys.stderr, flush=True)
        else:
            print(f"{PROG}: {message}: done ({elapsed:.1f} s)", file=sys.stderr, flush=True)

    def bar(self, label):
        """A ``progress(done, total, message)`` callback drawing a bar."""
        if not self.enabled:
            return None

        def update(done, total, message):
            width = 24
            filled = int(width * done / max(total, 1))
            text = f"{PROG}: {label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} {message}"
            if self._tty:
                print("\r" + text[:110].ljust(110), file=sys.stderr, end="\n" if done == total else "", flush=True)
            elif done == total or done == 1:
                print(text, file=sys.stderr, flush=True)

        return update


# ------------------------------------------------------------------------- data
def _split(X, y, test_size, seed):
    from sklearn.model_selection import train_test_split

    classes = sorted(set(y.tolist()))
    if len(classes) < 2:
        raise DataError(f"need at least 2 classes to classify, found {len(classes)} ({classes})")
    try:
        return train_test_split(X, y, test_size=test_size, random_state=seed, stratify=y)
    except ValueError as exc:
        raise DataError(f"cannot make a stratified train/test split: {exc}") from None


class _Problem:
    """One demo data set: families to fit, rows, labels and how to name things."""

    def __init__(self, header, families, y_train, y_test, notes, feature_names, describe_row, name):
        self.header = header
        self.families = families  # [(name, estimator, X_train, X_test)]
        self.y_train = y_train
        self.y_test = y_test
        self.notes = notes
        self.feature_names = feature_names  # {family: [names]}
        self.describe_row = describe_row  # test row index -> short text
        self.name = name


def _digits_problem(args):
    """Bundled digits: one design matrix per family."""
    import numpy as np

    from .datasets import load_digits_counts
    from .estimators import BernoulliNB, CategoricalNB, MultinomialNB

    X, y = load_digits_counts()
    index = np.arange(X.shape[0])
    X_train, X_test, y_train, y_test = _split(X, y, args.test_size, args.seed)
    # The same split of the row numbers (same seed, same stratification), to name test rows.
    _, idx_test = _split(index, y, args.test_size, args.seed)[:2]
    families = [
        ("multinomial", MultinomialNB(alpha=args.alpha), X_train, X_test),
        ("bernoulli", BernoulliNB(alpha=args.alpha, binarize=DIGITS_BINARIZE_THRESHOLD), X_train, X_test),
        ("categorical", CategoricalNB(alpha=args.alpha, min_categories=DIGITS_N_CATEGORIES), X_train, X_test),
    ]
    header = [
        f"data: scikit-learn digits (bundled), {X.shape[0]} images x {X.shape[1]} pixels, "
        f"{len(set(y.tolist()))} classes",
        "  multinomial: pixel intensities 0..16 as counts",
        f"  bernoulli: a pixel is on if its intensity is > {DIGITS_BINARIZE_THRESHOLD:g}",
        f"  categorical: each intensity is one of {DIGITS_N_CATEGORIES} categories",
    ]
    pixels = [f"pixel({j // 8},{j % 8})" for j in range(64)]

    def describe(i):
        return f"image #{int(idx_test[i])} (label {y_test[i]})"

    names = {"multinomial": pixels, "bernoulli": pixels, "categorical": pixels}
    return _Problem(header, families, y_train, y_test, [], names, describe, "scikit-learn digits")


def _text_problem(args):
    """A user's labelled text file: word counts / word presence."""
    import numpy as np
    from sklearn.feature_extraction.text import CountVectorizer

    from .datasets import read_labelled_text
    from .estimators import BernoulliNB, MultinomialNB

    try:
        texts, labels = read_labelled_text(args.data)
    except (OSError, ValueError) as exc:
        raise DataError(str(exc) if str(exc) else f"cannot read {args.data}") from None

    docs = np.asarray(texts, dtype=object)
    docs_train, docs_test, y_train, y_test = _split(docs, labels, args.test_size, args.seed)
    vectorizer = CountVectorizer()
    try:
        X_train = vectorizer.fit_transform(docs_train)
    except ValueError as exc:  # e.g. "empty vocabulary"
        raise DataError(f"{args.data}: cannot build a vocabulary from the training texts: {exc}") from None
    X_test = vectorizer.transform(docs_test)
    families = [
        ("multinomial", MultinomialNB(alpha=args.alpha), X_train, X_test),
        ("bernoulli", BernoulliNB(alpha=args.alpha, binarize=0.0), X_train, X_test),
    ]
    names, counts = np.unique(labels, return_counts=True)
    shown = ", ".join(f"{n} {c}" for n, c in zip(names[:8], counts[:8]))
    more = f", ... ({names.size} in all)" if names.size > 8 else ""
    header = [
        f"data: {args.data}, {len(texts)} documents, {names.size} classes ({shown}{more})",
        f"  vocabulary: {X_train.shape[1]} words (CountVectorizer fitted on the training split)",
        "  multinomial: word counts; bernoulli: word presence",
    ]
    notes = [
        "categorical: skipped for text (a bag of words is sparse counts, not categorical codes).",
    ]
    words = [str(w) for w in vectorizer.get_feature_names_out()]

    def describe(i):
        text = " ".join(str(docs_test[i]).split())
        return f"[{y_test[i]}] {text[:90]}{'...' if len(text) > 90 else ''}"

    return _Problem(
        header, families, y_train, y_test, notes, {"multinomial": words, "bernoulli": words}, describe, str(args.data)
    )


# ---------------------------------------------------------------------- output
def _format_table(header, rows, align):
    """Plain-text table; ``rows`` items are lists of cells, or a (key..., text) tuple."""
    widths = [len(h) for h in header]
    for row in rows:
        if isinstance(row, list):
            widths = [max(w, len(c)) for w, c in zip(widths, row)]

    def line(cells):
        out = []
        for cell, w, a in zip(cells, widths, align):
            out.append(cell.rjust(w) if a == ">" else cell.ljust(w))
        return "  ".join(out).rstrip()

    lines = [line(header), line(["-" * w for w in widths])]
    for row in rows:
        if isinstance(row, list):
            lines.append(line(row))
        else:
            *keys, text = row
            lead = "  ".join(k.ljust(w) for k, w in zip(keys, widths))
            lines.append(f"{lead}  {text}")
    return lines


_METRIC_HEADER = ["accuracy", "log loss", "Brier", "ECE", "macro-F1"]


def _summary_rows(results):
    """Terminal rows ``family estimate metrics... zero-lik`` from {family: compare records}."""
    from .comparison import METRICS, short_reason

    rows = []
    for family, records in results.items():
        for rec in records:
            if not rec["available"]:
                rows.append((family, rec["estimate"], f"n/a ({short_reason(rec['reason'])})"))
            else:
                cells = [f"{rec[m]:.4f}" for m in METRICS]
                rows.append([family, rec["estimate"], *cells, str(int(rec["zero_likelihood_rows"]))])
    return rows


def _demo_summary(args, problem, results, evidences, n_train, n_test, report_path):
    out = [f"bayesnb {__version__} demo", *problem.header]
    out.append(
        f"split: {n_train} train / {n_test} test rows (stratified, test size {args.test_size:g}, "
        f"seed {args.seed}); prior alpha = {args.alpha:g}, class_alpha = 1"
    )
    out.append("")
    out += _format_table(
        ["family", "estimate", *_METRIC_HEADER, "zero-lik rows"],
        _summary_rows(results),
        ["<", "<", ">", ">", ">", ">", ">", ">"],
    )
    out.append("")
    out.append("log evidence log p(X_train, y_train), nats:")
    ev_rows = [[name, f"{value:.2f}"] for name, value in evidences.items()]
    out += ["  " + s for s in _format_table(["family", "log evidence"], ev_rows, ["<", ">"])]
    out.append("")
    out.append("notes:")
    bullets = list(problem.notes) + [
        "every estimate of a family comes from one fit (one posterior), switched with set_params(estimate=...).",
        "zero-lik rows: test rows impossible under every class for that estimate (a feature value "
        "never seen in training); they get the class proportions as probabilities "
        "(bayesnb.ZeroLikelihoodWarning, counted here instead of printed).",
        "log loss clips probabilities at machine epsilon (scikit-learn), so a zero probability on "
        "the true class costs about 36 nats instead of infinity. Brier: sum over classes (0..2). "
        "ECE: 15 equal-width confidence bins.",
        "the families model different representations of the data, so their log evidences are "
        "not comparable with each other.",
    ]
    if args.alpha == 1.0:
        bullets.append("with alpha = 1 and class_alpha = 1 the MAP (posterior mode) equals the MLE.")
    for family, records in results.items():
        for rec in records:
            if not rec["available"]:
                bullets.append(f"{family} {rec['estimate']}: {rec['reason']}")
    for bullet in bullets:
        out += textwrap.wrap(bullet, width=100, initial_indent="  - ", subsequent_indent="    ")
    out.append("")
    out.append(f"report: {report_path} (95% bootstrap intervals, learning curve, uncertainty, plots)")
    return "\n".join(out)


def _report_dir(requested):
    if requested is not None:
        path = Path(requested)
        if path.exists() and not path.is_dir():
            raise DataError(f"--out {path}: exists and is not a directory")
    else:
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        path = Path.cwd() / f"bayesnb-report-{stamp}"
        k = 1
        while path.exists():
            path = Path.cwd() / f"bayesnb-report-{stamp}-{k}"
            k += 1
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"cannot create the report directory {path}: {exc.strerror or exc}") from None
    return path


def _save(ax, path):
    ax.figure.savefig(path, dpi=110)
    return path.name


# ------------------------------------------------------------------------- demo
def _run_demo(args):
    import numpy as np

    from .comparison import compare
    from .exceptions import ZeroLikelihoodWarning

    progress = _Progress(args.progress)
    with progress.step("loading the data"):
        problem = _digits_problem(args) if args.data is None else _text_problem(args)
    out_dir = _report_dir(args.out)
    y_train, y_test = problem.y_train, problem.y_test
    results, evidences, tables, fitted = {}, {}, {}, {}
    for name, clf, X_train, X_test in problem.families:
        with progress.step(f"fitting {name} on {len(y_train)} rows and scoring 4 estimates"):
            clf.fit(X_train, y_train)
            fitted[name] = (clf, X_train, X_test)
            evidences[name] = float(clf.log_evidence())
            table = compare(clf, None, None, X_test, y_test, refit=False, random_state=args.seed, as_frame=False)
        tables[name] = table
        results[name] = table.records

    first, (clf, X_train, X_test) = next(iter(fitted.items()))
    sizes = _curve_sizes(len(y_train), len(np.unique(y_train)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ZeroLikelihoodWarning)
        curve = compare(
            type(clf)(**clf.get_params()),
            X_train,
            y_train,
            X_test,
            y_test,
            train_sizes=sizes,
            n_repeats=5,
            n_bootstrap=300,
            random_state=args.seed,
            as_frame=False,
            progress=progress.bar(f"learning curve ({first})"),
        )
    report = _write_report(args, problem, out_dir, fitted, tables, evidences, curve, progress)
    print(_demo_summary(args, problem, results, evidences, len(y_train), len(y_test), report))
    return 0


def _curve_sizes(n_train, n_classes):
    base = [n_classes * k for k in (1, 2, 5, 10, 25)] + [n_train // 4, n_train // 2, n_train]
    return sorted({s for s in base if 1 <= s <= n_train})


def _write_report(args, problem, out_dir, fitted, tables, evidences, curve, progress):
    import numpy as np

    from . import plots
    from .comparison import format_comparison
    from .uncertainty import decompose_uncertainty, top_features

    y_test = problem.y_test
    first, (clf, X_train, X_test) = next(iter(fitted.items()))
    images = {}
    with progress.step("drawing reliability diagrams and the learning curve"):
        for name, (est, _, X_te) in fitted.items():
            images[f"reliability_{name}"] = _save(
                plots.reliability_diagram(est, X_te, y_test), out_dir / f"reliability_{name}.png"
            )
        images["learning_curve"] = _save(plots.learning_curve(curve, "log_loss"), out_dir / "learning_curve.png")
        images["learning_curve_accuracy"] = _save(
            plots.learning_curve(curve, "accuracy"), out_dir / "learning_curve_accuracy.png"
        )
    with progress.step(f"posterior uncertainty of {len(y_test)} test predictions ({args.draws} draws)"):
        decomposition = decompose_uncertainty(clf, X_test, n_draws=args.draws, random_state=args.seed)
        images["uncertainty"] = _save(
            plots.uncertainty_histogram(decomposition=decomposition), out_dir / "uncertainty.png"
        )
        labels, counts = np.unique(problem.y_train, return_counts=True)
        target = labels[np.argmin(counts)] if args.data is not None else clf.classes_[0]
        names = problem.feature_names[first]
        top = top_features(clf, target, 15, level=0.9, n_draws=args.draws, random_state=args.seed)
        images["top_features"] = _save(
            plots.top_features(clf, target, 15, feature_names=names, n_draws=args.draws, random_state=args.seed),
            out_dir / "top_features.png",
        )
    order = np.argsort(-decomposition.epistemic, kind="stable")[:8]
    predicted = clf.classes_[np.argmax(decomposition.mean_proba, axis=1)]

    md = [f"# bayesnb {__version__} demo report", ""]
    md.append(f"Generated {_dt.datetime.now().isoformat(timespec='seconds')} by `bayesnb demo`.")
    md.append("")
    md += [line.strip() if not line.startswith("  ") else f"- {line.strip()}" for line in problem.header]
    md.append("")
    md.append(
        f"Split: {len(problem.y_train)} training / {len(y_test)} test rows (stratified, test size "
        f"{args.test_size:g}, seed {args.seed}); prior alpha = {args.alpha:g}, class_alpha = 1. "
        "Each family is fitted once; its four estimates come from that one posterior."
    )
    md.append("")
    md.append("## Estimates compared on the test split")
    md.append("")
    md.append(
        "Point values with 95% percentile bootstrap intervals over the test rows (1000 resamples). "
        "Log loss in nats (probabilities clipped at machine epsilon, as scikit-learn); Brier summed "
        "over classes (0 to 2); ECE with 15 equal-width confidence bins; zero-lik rows: test rows "
        "impossible under every class (given the class proportions)."
    )
    for name, table in tables.items():
        md += ["", f"### {name}", "", format_comparison(table, style="markdown", intervals=True), ""]
        md.append(
            "Paired differences from the exact posterior predictive (estimate minus predictive; an "
            "interval excluding 0 is a difference the test set resolves):"
        )
        md += ["", format_comparison(
            table, style="markdown", differences=True, values=False, metrics=("accuracy", "log_loss", "brier")
        ), ""]
        md.append(f"![reliability diagram, {name}]({images[f'reliability_{name}']})")
    md += ["", "## Log evidence", "", "| family | log p(X_train, y_train) (nats) |", "|---|---|"]
    md += [f"| {k} | {v:.2f} |" for k, v in evidences.items()]
    md += [
        "",
        "The families model different representations of the data, so their evidences are not "
        "comparable with each other; within a family they compare priors.",
        "",
        "## Where full Bayes matters: learning curve",
        "",
        f"{type(clf).__name__} ({first}) refitted on random stratified training subsets "
        f"(5 per size), scored on the same {len(y_test)} test rows; bands are 95% bootstrap "
        "intervals over the test rows.",
        "",
        f"![log loss by training size]({images['learning_curve']})",
        f"![accuracy by training size]({images['learning_curve_accuracy']})",
        "",
        format_comparison(curve, style="markdown", metrics=("accuracy", "log_loss")),
        "",
        "Paired differences from the exact posterior predictive (estimate minus predictive):",
        "",
        format_comparison(curve, style="markdown", differences=True, values=False, metrics=("accuracy", "log_loss")),
        "",
        _curve_verdict(curve),
        "",
        "## Posterior uncertainty of the predictions",
        "",
        f"From {args.draws} exact posterior draws of the {first} model: per test row, total "
        "uncertainty (entropy of the mean class probabilities) = aleatoric (mean entropy of each "
        "draw's probabilities) + epistemic (mutual information between the label and the "
        "parameters: what more training data would remove).",
        "",
        f"![uncertainty histogram]({images['uncertainty']})",
        "",
        "Test rows with the highest epistemic uncertainty:",
        "",
        "| row | predicted | epistemic | aleatoric | total |",
        "|---|---|---|---|---|",
    ]
    for i in order:
        md.append(
            f"| {_md_escape(problem.describe_row(int(i)))} | {predicted[i]} | {decomposition.epistemic[i]:.4f} | "
            f"{decomposition.aleatoric[i]:.4f} | {decomposition.total[i]:.4f} |"
        )
    names = problem.feature_names[first]
    md += [
        "",
        f"## Features that most raise p({target})",
        "",
        f"Posterior median and 90% credible interval of each feature's contribution to the "
        f"log-odds of {target} ({top.unit}), from {args.draws} posterior draws.",
        "",
        f"![top features]({images['top_features']})",
        "",
        "| feature | median | 90% interval |",
        "|---|---|---|",
    ]
    for f, m, lo, hi in zip(top.feature, top.median, top.lower, top.upper):
        md.append(f"| {_md_escape(names[f])} | {m:.3f} | [{lo:.3f}, {hi:.3f}] |")
    md.append("")
    path = out_dir / "report.md"
    path.write_text("\n".join(md), encoding="utf-8")
    return path


def _md_escape(text):
    return str(text).replace("|", "\\|")


def _curve_verdict(curve):
    """One sentence: at which sizes the predictive beats the posterior-mean plug-in in log loss."""
    recs = [r for r in curve.records if r["estimate"] == "mean" and r["available"] and r.get("log_loss_diff_lo") is not None]
    if not recs:
        return ""
    better = [r["train_size"] for r in recs if r["log_loss_diff_lo"] > 0]  # mean worse than predictive
    same = [r["train_size"] for r in recs if r["log_loss_diff_lo"] <= 0 <= r["log_loss_diff_hi"]]
    worse = [r["train_size"] for r in recs if r["log_loss_diff_hi"] < 0]
    parts = []
    if better:
        parts.append(f"the exact predictive has a lower log loss than the posterior-mean plug-in at {_sizes_text(better)} training rows")
    if same:
        parts.append(f"the difference is not resolved at {_sizes_text(same)}")
    if worse:
        parts.append(f"the plug-in is better at {_sizes_text(worse)}")
    return "Paired 95% intervals of Δ log loss (mean − predictive): " + "; ".join(parts) + "."


def _sizes_text(sizes):
    return ", ".join(str(s) for s in sizes)


# ------------------------------------------------------------- user data: fit / predict
def _read_table(path, sep, header):
    from .datasets import read_table

    try:
        return read_table(path, sep=sep, header=header)
    except (OSError, ValueError) as exc:
        raise DataError(str(exc) or f"cannot read {path}") from None


_LABEL_NAMES = ("label", "class", "target", "y", "category")


def _label_column(table, requested):
    if requested is not None:
        try:
            return table.index(requested)
        except ValueError as exc:
            raise DataError(str(exc)) from None
    lowered = [c.lower() for c in table.columns]
    for name in _LABEL_NAMES:
        if name in lowered:
            return lowered.index(name)
    raise DataError(
        f"{table.path}: no label column found (none named {', '.join(_LABEL_NAMES)}); name it with --label"
    )


def _spec_from_args(args, table):
    """Which columns hold the label, the text or the features, and their types."""
    import numpy as np

    label = _label_column(table, args.label)
    spec = {
        "format": _SPEC_FORMAT,
        "format_version": _SPEC_VERSION,
        "bayesnb_version": __version__,
        "sep": args.sep,
        "header": not args.no_header,
        "label": table.columns[label],
    }
    if args.text is not None:
        if args.features is not None:
            raise DataError("--text and --features are exclusive: a model of a text column uses no other column")
        try:
            text = table.index(args.text)
        except ValueError as exc:
            raise DataError(str(exc)) from None
        if text == label:
            raise DataError("--text names the label column")
        family = "multinomial" if args.family == "auto" else args.family
        if family not in _TEXT_FAMILIES:
            raise DataError(f"--family {family} cannot model a text column; use one of {', '.join(_TEXT_FAMILIES)}")
        spec.update(kind="text", text=table.columns[text], family=family)
        return spec
    if args.features is not None:
        try:
            cols = [table.index(c.strip()) for c in args.features.split(",") if c.strip()]
        except ValueError as exc:
            raise DataError(str(exc)) from None
        if label in cols:
            raise DataError("--features includes the label column")
        if not cols:
            raise DataError("--features names no column")
    else:
        cols = [j for j in range(len(table.columns)) if j != label]
    if not cols:
        raise DataError(f"{table.path}: no feature columns besides the label")
    types = {}
    for j in cols:
        numeric = _as_numbers(table.values[j]) is not None
        types[table.columns[j]] = "numeric" if numeric else "categorical"
    family = args.family
    if family == "auto":
        kinds = set(types.values())
        family = "gaussian" if kinds == {"numeric"} else "categorical" if kinds == {"categorical"} else "mixed"
    if family in ("multinomial", "bernoulli", "poisson", "gaussian", "gaussian-shared", "gaussian-full"):
        bad = [c for c, t in types.items() if t != "numeric"]
        if bad:
            column = bad[0]
            values = table.column(column)
            example = next(v for v in values.tolist() if _as_numbers(np.asarray([v])) is None)
            raise DataError(f"--family {family} needs numeric columns; column {column!r} holds {example!r}")
    if family == "categorical":
        types = dict.fromkeys(types, "categorical")
    spec.update(kind="tabular", features=[table.columns[j] for j in cols], types=types, family=family)
    return spec


def _as_numbers(values):
    import numpy as np

    try:
        out = np.asarray(values, dtype=np.float64)
    except ValueError:
        return None
    return out if np.all(np.isfinite(out)) else None


def _design(spec, table, *, fit):
    """The feature matrix of ``table`` under ``spec`` (learning vocabulary/categories if ``fit``)."""
    import numpy as np

    if spec["kind"] == "text":
        from sklearn.feature_extraction.text import CountVectorizer

        try:
            texts = table.column(spec["text"])
        except ValueError as exc:
            raise DataError(str(exc)) from None
        if fit:
            vectorizer = CountVectorizer()
            try:
                X = vectorizer.fit_transform(texts.tolist())
            except ValueError as exc:
                raise DataError(f"{table.path}: cannot build a vocabulary from column {spec['text']!r}: {exc}") from None
            spec["vocabulary"] = [str(w) for w in vectorizer.get_feature_names_out()]
            return X
        return CountVectorizer(vocabulary=spec["vocabulary"]).transform(texts.tolist())
    columns = []
    if fit:
        spec["categories"] = {}
    for name in spec["features"]:
        try:
            values = table.column(name)
        except ValueError as exc:
            raise DataError(str(exc)) from None
        if spec["types"][name] == "numeric":
            numbers = _as_numbers(values)
            if numbers is None:
                bad = next(
                    (i for i, v in enumerate(values.tolist()) if _as_numbers(np.asarray([v])) is None), 0
                )
                raise DataError(
                    f"{table.path}, line {int(table.lines[bad])}: column {name!r} must be a finite number, "
                    f"got {values[bad]!r}"
                )
            columns.append(numbers)
        else:
            if fit:
                spec["categories"][name] = sorted(set(values.tolist()))
            cats = spec["categories"][name]
            lookup = {v: k for k, v in enumerate(cats)}
            # A value not seen at fit gets the code after the fitted ones: CategoricalNB's
            # share of a new category.
            columns.append(np.array([lookup.get(v, len(cats)) for v in values.tolist()], dtype=np.float64))
    X = np.column_stack(columns)
    if spec["family"] == "categorical":
        X = X.astype(np.int64)
    return X


def _make_estimator(spec, alpha):
    import numpy as np

    from . import estimators as E

    family = spec["family"]
    if family == "multinomial":
        return E.MultinomialNB(alpha=alpha)
    if family == "bernoulli":
        return E.BernoulliNB(alpha=alpha)
    if family == "poisson":
        return E.PoissonNB(alpha=alpha)
    if family == "gaussian":
        return E.GaussianNB()
    if family in ("gaussian-shared", "gaussian-full"):
        return E.GaussianBayesClassifier(covariance=family.split("-")[1])
    if family == "categorical":
        k = [len(spec["categories"][c]) for c in spec["features"]]
        return E.CategoricalNB(alpha=alpha, min_categories=np.asarray(k, dtype=np.int64))
    # mixed: one Gaussian block of the numeric columns, one categorical block of the others
    numeric = [j for j, c in enumerate(spec["features"]) if spec["types"][c] == "numeric"]
    categorical = [j for j, c in enumerate(spec["features"]) if spec["types"][c] == "categorical"]
    blocks = []
    if numeric:
        blocks.append(("gaussian", E.GaussianNB(), numeric))
    if categorical:
        k = [len(spec["categories"][spec["features"][j]]) for j in categorical]
        blocks.append(("categorical", E.CategoricalNB(alpha=alpha, min_categories=np.asarray(k, dtype=np.int64)), categorical))
    return E.MixedNB(blocks=blocks)


def _labels(spec, table, required=True):
    import numpy as np

    name = spec["label"]
    if name not in table.columns:
        if required:
            raise DataError(f"{table.path}: no label column {name!r}")
        return None
    y = table.column(name)
    empty = np.flatnonzero(y == "")
    if empty.size:
        raise DataError(f"{table.path}, line {int(table.lines[empty[0]])}: empty label")
    return y


@contextlib.contextmanager
def _user_errors(what):
    """Errors that the user's data causes (ValueError/TypeError) become one-line DataErrors."""
    try:
        yield
    except DataError:
        raise
    except (ValueError, TypeError) as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        raise DataError(f"{what}: {message}") from None


def _spec_path(model_path):
    return Path(str(model_path) + ".cli.json")


def _save_model(clf, spec, path):
    path = Path(path)
    if path.is_dir():
        raise DataError(f"--model {path} is a directory")
    if not hasattr(clf, "save"):
        raise DataError(
            "saving a model needs bayesnb.persistence (estimator.save / bayesnb.load), which this "
            "installation does not have"
        )
    try:
        clf.save(path)
        _spec_path(path).write_text(json.dumps(spec, indent=1, ensure_ascii=False), encoding="utf-8")
    except OSError as exc:
        raise DataError(f"cannot write {path}: {exc.strerror or exc}") from None


def _load_model(path):
    import bayesnb

    path = Path(path)
    if not path.exists():
        raise DataError(f"no such file: {path}")
    if not path.is_file():
        raise DataError(f"not a regular file: {path}")
    spec_path = _spec_path(path)
    if not spec_path.is_file():
        raise DataError(f"{spec_path} not found: the column layout saved next to the model by 'bayesnb fit'")
    try:
        spec = json.loads(spec_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{spec_path}: not a bayesnb column layout ({exc})") from None
    if not isinstance(spec, dict) or spec.get("format") != _SPEC_FORMAT:
        raise DataError(f"{spec_path}: not a bayesnb column layout")
    if spec.get("format_version", 0) > _SPEC_VERSION:
        raise DataError(f"{spec_path}: written by a newer bayesnb (format {spec.get('format_version')})")
    load = getattr(bayesnb, "load", None)
    if load is None:
        raise DataError("loading a model needs bayesnb.load (bayesnb.persistence), which this installation does not have")
    try:
        clf = load(path)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise DataError(f"{path}: cannot load the model: {' '.join(str(exc).split())}") from None
    return clf, spec


def _run_fit(args):
    import numpy as np

    table = _read_table(args.data, args.sep, not args.no_header)
    spec = _spec_from_args(args, table)
    y = _labels(spec, table)
    if np.unique(y).size < 2:
        raise DataError(f"{table.path}: need at least 2 classes to classify, found {np.unique(y).tolist()}")
    X = _design(spec, table, fit=True)
    clf = _make_estimator(spec, args.alpha)
    with _user_errors(f"cannot fit {type(clf).__name__} on {table.path}"):
        clf.fit(X, y)
    spec["alpha"] = args.alpha
    _save_model(clf, spec, args.model)
    names, counts = np.unique(y, return_counts=True)
    what = f"text column {spec['text']!r}, {X.shape[1]} words" if spec["kind"] == "text" else (
        f"{len(spec['features'])} columns ({', '.join(f'{c}: {t}' for c, t in spec['types'].items())[:200]})"
    )
    print(f"fitted {type(clf).__name__} ({spec['family']}) on {len(y)} rows of {table.path}: {what}")
    print(f"classes: {', '.join(f'{n} ({c})' for n, c in zip(names, counts))}")
    print(f"log evidence log p(X, y): {clf.log_evidence():.2f} nats")
    print(f"model: {args.model} (column layout: {_spec_path(args.model)})")
    return 0


def _run_predict(args):
    import numpy as np

    clf, spec = _load_model(args.model)
    sep = args.sep if args.sep is not None else spec.get("sep")
    header = spec.get("header", True) and not args.no_header
    table = _read_table(args.data, sep, header)
    X = _design(spec, table, fit=False)
    clf.set_params(estimate=args.estimate)
    from .exceptions import ZeroLikelihoodWarning

    with _user_errors(f"cannot predict the rows of {table.path}"), warnings.catch_warnings():
        warnings.simplefilter("ignore", ZeroLikelihoodWarning)
        proba = clf.predict_proba(X)
        lo = hi = None
        if args.interval is not None:
            lo, hi = clf.predict_proba_interval(X, args.interval, n_draws=args.draws, random_state=args.seed)
    classes = [str(c) for c in clf.classes_]
    predicted = clf.classes_[np.argmax(proba, axis=1)]
    y = _labels(spec, table, required=False)
    out_sep = "\t" if args.out and str(args.out).lower().endswith(".tsv") else ","
    header_row = ["line"] + (["label"] if y is not None else []) + ["predicted"] + [f"p({c})" for c in classes]
    if lo is not None:
        header_row += [f"lower({c})" for c in classes] + [f"upper({c})" for c in classes]
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=out_sep, lineterminator="\n")
    writer.writerow(header_row)
    for i in range(len(predicted)):
        row = [str(int(table.lines[i]))] + ([str(y[i])] if y is not None else []) + [str(predicted[i])]
        row += [f"{p:.6g}" for p in proba[i]]
        if lo is not None:
            row += [f"{v:.6g}" for v in lo[i]] + [f"{v:.6g}" for v in hi[i]]
        writer.writerow(row)
    if args.out:
        try:
            Path(args.out).write_text(buffer.getvalue(), encoding="utf-8")
        except OSError as exc:
            raise DataError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    else:
        sys.stdout.write(buffer.getvalue())
    if y is not None:
        from .comparison import metric_values

        known = np.isin(y, clf.classes_)
        if known.any():
            m = metric_values(y[known], proba[known], clf.classes_)
            print(
                f"{PROG}: {int(known.sum())} labelled rows: accuracy {m['accuracy']:.4f}, log loss "
                f"{m['log_loss']:.4f} (estimate={args.estimate!r})",
                file=sys.stderr,
            )
    return 0


def _run_compare(args):
    import numpy as np

    from .comparison import compare, format_comparison

    table = _read_table(args.data, args.sep, not args.no_header)
    spec = _spec_from_args(args, table)
    y = _labels(spec, table)
    X = _design(spec, table, fit=True)
    if args.test_data is not None:
        test = _read_table(args.test_data, args.sep, not args.no_header)
        X_test, y_test = _design(spec, test, fit=False), _labels(spec, test)
        X_train, y_train = X, y
        unknown = sorted(set(y_test.tolist()) - set(y_train.tolist()))
        if unknown:
            raise DataError(f"{test.path}: labels {unknown[:5]} do not occur in {table.path}")
    elif args.cv is None:
        X_train, X_test, y_train, y_test = _split(X, y, args.test_size, args.seed)
    else:
        X_train, y_train, X_test, y_test = X, y, None, None
    if np.unique(y_train).size < 2:
        raise DataError(f"{table.path}: need at least 2 classes to classify")
    clf = _make_estimator(spec, args.alpha)
    progress = _Progress(args.progress)
    with _user_errors(f"cannot compare {type(clf).__name__} on {table.path}"), warnings.catch_warnings():
        from .exceptions import ZeroLikelihoodWarning

        warnings.simplefilter("ignore", ZeroLikelihoodWarning)
        result = compare(
            clf,
            X_train,
            y_train,
            X_test,
            y_test,
            cv=args.cv,
            train_sizes=args.train_sizes,
            n_repeats=args.repeats,
            n_bootstrap=args.bootstrap,
            random_state=args.seed,
            as_frame=False,
            progress=progress.bar("fitting"),
        )
    print(f"{type(clf).__name__} ({spec['family']}) on {table.path}")
    print(format_comparison(result, intervals=args.bootstrap > 0))
    print()
    print(format_comparison(result, differences=True, values=False, metrics=("accuracy", "log_loss", "brier")))
    if args.out:
        _write_table(result, args.out)
        print(f"table: {args.out}")
    return 0


def _write_table(result, path):
    import csv
    import io

    from .comparison import format_comparison

    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".md":
        text = format_comparison(result, style="markdown", intervals=True) + "\n"
    elif suffix in (".csv", ".tsv"):
        buffer = io.StringIO()
        writer = csv.writer(buffer, delimiter="\t" if suffix == ".tsv" else ",", lineterminator="\n")
        columns = result.index_names + result.columns
        writer.writerow(columns)
        for rec in result.records:
            writer.writerow(["" if rec[c] is None else rec[c] for c in columns])
        text = buffer.getvalue()
    else:
        raise DataError(f"--out {path}: use a .csv, .tsv or .md file name")
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise DataError(f"cannot write {path}: {exc.strerror or exc}") from None


# -------------------------------------------------------------------------- main
def main(argv=None) -> int:
    """Run the ``bayesnb`` command.

    Parameters
    ----------
    argv : list of str, optional
        Arguments without the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status: 0 on success, 1 on a data or file error, 2 on a usage error.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version (0) and usage errors (2)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    # Plots are drawn on figures without pyplot; Agg keeps any accidental pyplot use headless.
    os.environ.setdefault("MPLBACKEND", "Agg")
    try:
        return args.handler(args)
    except DataError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
