"""The ``bayesnb`` command.

``bayesnb demo`` fits the discrete families once each and compares every ``estimate``
(MLE, MAP, posterior mean, exact posterior predictive) on a held-out split, with each
model's log evidence. Without ``--data`` it runs on scikit-learn's bundled digits (no
download); with ``--data PATH`` on a user's ``label<TAB>text`` file.

Exit status: 0 on success, 2 on a usage error (argparse), 1 on a missing or malformed
data file (a one-line ``bayesnb: error: ...`` message, no traceback).
"""

from __future__ import annotations

import argparse
import sys
import textwrap
import warnings

from . import __version__
from ._validation import ESTIMATES

__all__ = ["main"]

PROG = "bayesnb"

# Pixels above this intensity (0..16) are "on" for the Bernoulli family.
DIGITS_BINARIZE_THRESHOLD = 0.0
DIGITS_N_CATEGORIES = 17


class DataError(Exception):
    """A data file or data set the demo cannot use (reported with exit status 1)."""


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


def build_parser():
    """The ``bayesnb`` argument parser (subcommands: ``demo``)."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Bayesian naive Bayes with conjugate priors: closed-form posteriors, "
        "exact posterior predictives and log evidences.",
        epilog="Run 'bayesnb demo --help' for the demo's options.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    demo = sub.add_parser(
        "demo",
        help="compare MLE / MAP / posterior mean / posterior predictive on held-out data",
        description=textwrap.dedent(
            f"""\
            Fit the multinomial, Bernoulli and categorical naive Bayes families ONCE each on
            a stratified training split, then score every estimate of the same posterior
            (mle, map, mean, predictive; switched with set_params) on the test split:
            accuracy, log loss, and the number of test rows with zero likelihood under
            every class. Also prints each family's log evidence log p(X_train, y_train).

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
        "--seed", type=_seed, default=0, help="random seed of the train/test split (default: %(default)s)"
    )
    demo.set_defaults(handler=_run_demo)
    return parser


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


def _digits_problem(args):
    """Bundled digits: one design matrix per family."""
    from .datasets import load_digits_counts
    from .estimators import BernoulliNB, CategoricalNB, MultinomialNB

    X, y = load_digits_counts()
    X_train, X_test, y_train, y_test = _split(X, y, args.test_size, args.seed)
    families = [
        ("multinomial", MultinomialNB(alpha=args.alpha), X_train, X_test),
        (
            "bernoulli",
            BernoulliNB(alpha=args.alpha, binarize=DIGITS_BINARIZE_THRESHOLD),
            X_train,
            X_test,
        ),
        (
            "categorical",
            CategoricalNB(alpha=args.alpha, min_categories=DIGITS_N_CATEGORIES),
            X_train,
            X_test,
        ),
    ]
    header = [
        f"data: scikit-learn digits (bundled), {X.shape[0]} images x {X.shape[1]} pixels, "
        f"{len(set(y.tolist()))} classes",
        "  multinomial: pixel intensities 0..16 as counts",
        f"  bernoulli: a pixel is on if its intensity is > {DIGITS_BINARIZE_THRESHOLD:g}",
        f"  categorical: each intensity is one of {DIGITS_N_CATEGORIES} categories",
    ]
    return header, families, y_train, y_test, []


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
    return header, families, y_train, y_test, notes


# ---------------------------------------------------------------------- scoring
def _score(clf, X_test, y_test):
    """Accuracy, log loss and zero-likelihood row count under the current estimate."""
    import numpy as np
    from sklearn.metrics import accuracy_score, log_loss

    from .exceptions import ZeroLikelihoodWarning

    # Count the rows the library would warn about, then silence the per-call warning:
    # the count is reported in the table instead of on stderr.
    joint = clf.predict_joint_log_proba(X_test)
    zero_rows = int(np.isneginf(np.max(joint, axis=1)).sum())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ZeroLikelihoodWarning)
        proba = clf.predict_proba(X_test)
    y_pred = clf.classes_[np.argmax(proba, axis=1)]
    return (
        float(accuracy_score(y_test, y_pred)),
        float(log_loss(y_test, proba, labels=clf.classes_)),
        zero_rows,
    )


def _short_reason(message, width=60):
    """The first clause of an error message (outside parentheses), for a table cell."""
    message = message.strip().splitlines()[0] if message.strip() else "error"
    _, colon, rest = message.partition(": ")
    text = rest if colon and rest else message
    depth = 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and (text.startswith(", ", i) or text.startswith(". ", i) or text.startswith("; ", i)):
            text = text[:i]
            break
    if len(text) > width:
        text = text[: width - 3].rstrip() + "..."
    return text


def _evaluate(families, y_train, y_test):
    """Fit each family once; score every estimate of the one posterior."""
    rows, evidences, failures = [], [], []
    for name, clf, X_train, X_test in families:
        clf.fit(X_train, y_train)
        evidences.append((name, float(clf.log_evidence())))
        for estimate in ESTIMATES:
            clf.set_params(estimate=estimate)
            try:
                acc, loss, zero = _score(clf, X_test, y_test)
            except ValueError as exc:
                rows.append((name, estimate, None, _short_reason(str(exc))))
                failures.append((name, estimate, str(exc)))
                continue
            rows.append((name, estimate, (acc, loss, zero), None))
        clf.set_params(estimate="predictive")
    return rows, evidences, failures


# ---------------------------------------------------------------------- output
def _format_table(header, rows, align):
    """Plain-text table; ``rows`` items are lists of cells, or a str spanning from col 2."""
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
            family, estimate, text = row
            lead = "  ".join([family.ljust(widths[0]), estimate.ljust(widths[1])])
            lines.append(f"{lead}  {text}")
    return lines


def _report(args, header, rows, evidences, failures, n_train, n_test, notes):
    out = [f"bayesnb {__version__} demo", *header]
    out.append(
        f"split: {n_train} train / {n_test} test rows (stratified, test size {args.test_size:g}, "
        f"seed {args.seed}); prior alpha = {args.alpha:g}, class_alpha = 1"
    )
    out.append("")
    table_rows = []
    for family, estimate, result, reason in rows:
        if result is None:
            table_rows.append((family, estimate, f"n/a ({reason})"))
        else:
            acc, loss, zero = result
            table_rows.append([family, estimate, f"{acc:.4f}", f"{loss:.4f}", str(zero)])
    out += _format_table(
        ["family", "estimate", "accuracy", "log loss", "zero-lik rows"], table_rows, ["<", "<", ">", ">", ">"]
    )
    out.append("")
    out.append("log evidence log p(X_train, y_train), nats:")
    ev_rows = [[name, f"{value:.2f}"] for name, value in evidences]
    out += ["  " + s for s in _format_table(["family", "log evidence"], ev_rows, ["<", ">"])]
    out.append("")
    out.append("notes:")
    bullets = list(notes) + [
        "every estimate of a family comes from one fit (one posterior), switched with set_params(estimate=...).",
        "zero-lik rows: test rows impossible under every class for that estimate (a feature value "
        "never seen in training); they get the class proportions as probabilities "
        "(bayesnb.ZeroLikelihoodWarning, counted here instead of printed).",
        "log loss clips probabilities at machine epsilon (scikit-learn), so a zero probability on "
        "the true class costs about 36 nats instead of infinity.",
        "the families model different representations of the data, so their log evidences are "
        "not comparable with each other.",
    ]
    if args.alpha == 1.0:
        bullets.append("with alpha = 1 and class_alpha = 1 the MAP (posterior mode) equals the MLE.")
    for family, estimate, message in failures:
        bullets.append(f"{family} {estimate}: {message}")
    for bullet in bullets:
        out += textwrap.wrap(bullet, width=100, initial_indent="  - ", subsequent_indent="    ")
    return "\n".join(out)


def _run_demo(args):
    if args.data is None:
        header, families, y_train, y_test, notes = _digits_problem(args)
    else:
        header, families, y_train, y_test, notes = _text_problem(args)
    rows, evidences, failures = _evaluate(families, y_train, y_test)
    print(_report(args, header, rows, evidences, failures, len(y_train), len(y_test), notes))
    return 0


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
        Exit status: 0 on success, 1 on a data error, 2 on a usage error.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version (0) and usage errors (2)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    try:
        return args.handler(args)
    except DataError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
