"""The ``bayesnb`` command.

Subcommands:

* ``bayesnb demo [--out DIR] [--data PATH]``: fit each naive Bayes family once on a
  stratified training split, compare every ``estimate`` (MLE, MAP, posterior mean, exact
  posterior predictive) of that one posterior on the test split, and write a report
  directory (Markdown report and PNG plots: reliability diagrams, learning curve,
  predictive uncertainty, top features with credible intervals). Without ``--data`` it
  runs on scikit-learn's bundled digits (no download); with ``--data PATH`` on a
  ``label<TAB>text`` file such as the SMS Spam Collection, or an ARFF file of documents
  (a ``string`` attribute and a label).
* ``bayesnb fit DATA --model FILE``: fit a model on a CSV/TSV file (a text column, or
  tabular columns) and save it.
* ``bayesnb predict DATA --model FILE``: predict classes, probabilities and credible
  intervals for the rows of a CSV/TSV file.
* ``bayesnb compare DATA``: compare the four estimates on a user's data (hold-out,
  cross-validation or learning curve).
* ``bayesnb crosscheck [DATA]``: check the closed-form posterior against NUTS on the
  model's numpyro program (:func:`bayesnb.ppl.mcmc.crosscheck`) on the bundled digits or a
  user's CSV/TSV file; exit status 1 when they disagree.

Exit status: 0 on success, 2 on a usage error (argparse), 1 on a missing or malformed
file or unusable data (a one-line ``bayesnb: error: ...`` message, no traceback), and
for ``crosscheck`` also when the closed form and NUTS disagree.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import textwrap
import time
import warnings
from pathlib import Path

from bayesnb._version import __version__
from bayesnb.cli import report as _report
from bayesnb.cli import userdata as _userdata
from bayesnb.cli.report import DIGITS_BINARIZE_THRESHOLD, DIGITS_N_CATEGORIES
from bayesnb.cli.userdata import DataError
from bayesnb.io import _atomic

# Parsing the arguments imports nothing heavy (no NumPy, JAX or scikit-learn): `bayesnb
# --help` and `bayesnb COMMAND --help` answer at once; a command imports what it runs.

__all__ = ["main", "build_parser"]

PROG = "bayesnb"


#: ``predict --estimate`` values: ``bayesnb.core._validation.ESTIMATES`` (checked equal by
#: tests/test_lazy_import.py; that module imports NumPy and SciPy).
ESTIMATES = ("mle", "map", "mean", "predictive")
#: Bounds of a user's data file: those of ``bayesnb.io.datasets`` (which imports NumPy;
#: checked equal by tests/test_lazy_import.py).
MAX_ROWS = 1_000_000
MAX_BYTES = 256 * 2**20
#: ``crosscheck`` defaults: ``bayesnb.ppl.mcmc.NUM_CHAINS`` and ``FALSE_ALARM`` (that module
#: imports numpyro; checked equal by tests/test_lazy_import.py).
NUM_CHAINS = 4
FALSE_ALARM = 0.01


def _family(text):
    """A ``--family`` value: auto, mixed, a registered family or an alias (read on use)."""
    choices = _userdata.family_choices()
    if text not in choices:
        raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from {', '.join(choices)})")
    return text


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


def _na_values(text):
    # "?,NA," -> ("?", "NA", ""): fields are compared stripped, as read_table strips them.
    return tuple(dict.fromkeys(v.strip() for v in text.split(",")))


def _add_limit_options(p):
    # A user's file is untrusted input held in memory as text: bounded by default, with
    # the bounds named in the error and raised here for a trusted large file.
    p.add_argument(
        "--max-rows",
        type=_count(1),
        default=MAX_ROWS,
        metavar="N",
        help="refuse a data file of more than N rows (default: %(default)s)",
    )
    p.add_argument(
        "--max-size",
        type=_count(1),
        default=MAX_BYTES // 2**20,
        metavar="MB",
        help="refuse a data file larger than MB mebibytes, before reading it (default: %(default)s)",
    )


def _read(args, path, sep, header):
    """``read_data`` of a user's file under the ``--max-rows`` / ``--max-size`` bounds."""
    return _userdata.read_data(path, sep, header, max_rows=args.max_rows, max_bytes=args.max_size * 2**20)


def _add_table_options(p, *, label_required=False, data_help="CSV/TSV file, one row per example", data_optional=False):
    if data_optional:
        p.add_argument("data", metavar="DATA", nargs="?", help=data_help)
    else:
        p.add_argument("data", metavar="DATA", help=data_help)
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
    p.add_argument(
        "--missing",
        choices=("error", "ignore"),
        default="error",
        help="a missing value in a feature column: error (default; the message names the column) or "
        "ignore (left out of the row's likelihood, the estimator's missing='ignore')",
    )
    p.add_argument(
        "--na-values",
        type=_na_values,
        default=_userdata.DEFAULT_NA_VALUES,
        metavar="LIST",
        help="comma-separated values that mean missing (default: '?,NA,' = ?, NA and an empty field; "
        "an ARFF file's unquoted ? always is)",
    )
    _add_limit_options(p)


def _add_model_options(p):
    p.add_argument(
        "--family",
        type=_family,
        default="auto",
        metavar="FAMILY",
        help="naive Bayes family: a registered family (multinomial, bernoulli, categorical, poisson, "
        "gaussian, ...; a wrong name lists them all), an alias, mixed, or auto (default: multinomial "
        "for text; gaussian for numeric columns, categorical for non-numeric ones, mixed for both)",
    )
    p.add_argument(
        "--alpha",
        type=_positive_float,
        default=1.0,
        help="prior concentration of the discrete families (> 0; default: %(default)s)",
    )


def build_parser():
    """The ``bayesnb`` argument parser (subcommands: demo, fit, predict, compare, crosscheck)."""
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
            Bernoulli. The categorical family is skipped for text.

            Unlabelled documents: a line '<TAB>text' (empty label field), or a line whose
            label is the one --unlabelled names. They are never a class: the families are
            fitted on the labelled lines only, and a semi-supervised section compares, on
            the held-out labelled lines, the multinomial model on the labelled training
            lines with SemiSupervisedNB by EM and by VB on those plus every unlabelled line
            (and, in the report, a learning curve over labelled lines per class)."""
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    demo.add_argument(
        "--data",
        metavar="PATH",
        help="labelled text file, one 'label<TAB>text' per line, or an ARFF file with one string "
        "attribute (the text) and a label (default: bundled digits); a line '<TAB>text' (empty label, "
        "'?' in ARFF) is an unlabelled document, used by the semi-supervised section",
    )
    demo.add_argument(
        "--unlabelled",
        metavar="LABEL",
        help="with --data: lines with this label are unlabelled documents too (e.g. --unlabelled=-1, "
        "scikit-learn's convention); by default only an empty label field marks one",
    )
    demo.add_argument(
        "--n-components",
        metavar="K",
        type=_semi_n_components,
        default=1,
        help="with unlabelled documents: mixture components per class of the semi-supervised EM and VB "
        "(an int, or 'auto': chosen per class by held-out labelled likelihood; default 1)",
    )
    _add_limit_options(demo)
    demo.add_argument(
        "--out",
        metavar="DIR",
        help="report directory (default: a new bayesnb-report-YYYYmmdd-HHMMSS in the working directory)",
    )
    demo.add_argument(
        "--no-report",
        action="store_true",
        help="print the summary table only: no report directory, plots, learning curve or posterior draws",
    )
    _add_force(demo)
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
        "column layout and encodings that 'bayesnb predict' applies to new files (bound to the model by "
        "its SHA-256). Both are written whole or not at all; an existing file is replaced only if it is a "
        "bayesnb model (or layout), never if it is DATA, and otherwise only with --force. With --text "
        "the model is of the word counts of that column; otherwise of the feature columns "
        "(numbers: Gaussian; other values: categorical).",
    )
    _add_table_options(fit)
    _add_model_options(fit)
    fit.add_argument(
        "--calibrate",
        choices=("none", "loo"),
        default="none",
        help="'loo': fit a monotone calibration map of the class probabilities to the exact "
        "leave-one-out scores of the training rows (kept only where it beats the model as written "
        "by cross-validation; saved with the model, applied by 'bayesnb predict' for the estimate "
        "fitted); 'none': the model as written (default: %(default)s)",
    )
    fit.add_argument("--model", metavar="FILE", required=True, help="where to save the model (e.g. model.npz)")
    _add_force(fit)
    fit.set_defaults(handler=_run_fit)

    predict = sub.add_parser(
        "predict",
        help="predict the classes of the rows of a CSV/TSV file with a saved model",
        description="Predict every row of DATA with a model saved by 'bayesnb fit'. Writes a CSV "
        "(or TSV for a .tsv --out) with the line number, the predicted class and the class "
        "probabilities p(k) of --estimate, and with --interval the posterior median median(k) and the "
        "credible interval lower(k), upper(k) of each probability p(k | x, theta, pi) over the posterior "
        "draws. p(k) is not a summary of those draws and may lie outside the interval: a point "
        "estimate plugs in one value of the parameters, and the exact predictive is the mean over the "
        "posterior updated by the row itself (--interval-posterior updated, columns median_updated(k), "
        "lower_updated(k), upper_updated(k)). When DATA holds the label column, accuracy and log loss "
        "go to stderr.",
    )
    predict.add_argument("data", metavar="DATA", help="CSV/TSV file with the columns used at fit")
    predict.add_argument("--model", metavar="FILE", required=True, help="model file written by 'bayesnb fit'")
    predict.add_argument("--out", metavar="FILE", help="output file (default: standard output)")
    _add_force(predict)
    predict.add_argument(
        "--estimate", choices=ESTIMATES, default="predictive", help="estimate used (default: %(default)s)"
    )
    predict.add_argument(
        "--interval",
        type=_fraction,
        metavar="LEVEL",
        help="add the median and equal-tailed credible interval of each class probability at LEVEL "
        "(e.g. 0.9): columns median(k), lower(k), upper(k), all three from the same posterior draws",
    )
    predict.add_argument(
        "--interval-posterior",
        choices=("fitted", "updated", "both"),
        default="fitted",
        help="posterior of --interval: 'fitted' p(theta, pi | D), shared by all rows (columns median(k), "
        "lower(k), upper(k)); 'updated' p(theta, pi | D, x), updated by each row itself, whose mean is the "
        "exact predictive (columns median_updated(k), lower_updated(k), upper_updated(k); costs a full set of "
        "posterior draws per row); 'both' (default: %(default)s)",
    )
    predict.add_argument(
        "--draws", type=_count(10), default=1000, metavar="N", help="posterior draws for --interval (default: %(default)s)"
    )
    predict.add_argument("--seed", type=_seed, default=0, help="random seed of the draws (default: %(default)s)")
    predict.add_argument("--sep", type=_separator, help="field separator of DATA (default: as at fit)")
    predict.add_argument("--no-header", action="store_true", help="DATA has no header line")
    _add_limit_options(predict)
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
    comp.add_argument(
        "--calibrated",
        action="store_true",
        help="add the row 'calibrated (loo)': the model refitted on the same rows with a calibration map "
        "chosen from its exact leave-one-out scores (bayesnb.compare(calibrated=True))",
    )
    comp.add_argument("--out", metavar="FILE", help="also write the table: .csv, .tsv or .md")
    _add_force(comp)
    _add_progress(comp)
    comp.set_defaults(handler=_run_compare)
    _add_crosscheck_parser(sub)
    return parser


def _add_crosscheck_parser(sub):
    check = sub.add_parser(
        "crosscheck",
        help="check the closed-form posterior against NUTS on the model's numpyro program",
        description=textwrap.dedent(
            f"""\
            Fit a naive Bayes model, then run numpyro's NUTS on the same model written as a
            numpyro program (bayesnb.ppl.models: the estimator's prior, conditioned on the same
            rows) and compare, for every parameter, the closed-form posterior mean and sd with
            the MCMC mean, its Monte Carlo standard error (MCSE) and z = (MCMC mean - closed
            mean) / MCSE, plus r_hat, bulk ESS and the posterior predictive class
            probabilities of the first rows (bayesnb.ppl.mcmc.crosscheck).

            The standard deviations and the 0.05, 0.5 and 0.95 quantiles are compared too
            (an error of spread leaves the means alone). They agree when every |z| is below
            its critical value (default: Bonferroni over the z-scores compared, so that a
            correct model disagrees by chance with probability --false-alarm), every bulk
            and tail r_hat is below its critical value (default: from the number of chains
            and the parameter's within-chain ESS, at the same --false-alarm over all
            parameters), every bulk ESS >= --min-ess and no NUTS transition diverged.
            --z-max and --rhat-max set fixed thresholds instead. A predictive probability
            whose MCMC estimate is carried by too few draws (Pareto k >= 0.5, typically a
            class of probability 1e-50 or less) is listed but not compared.

            Default data (no download): {_CROSSCHECK_ROWS_DEFAULT} rows (stratified) of
            scikit-learn's bundled 8x8 digits, 10 classes, the pixel intensities summed over
            2x2 blocks: 16 counts per image, named block(r,c) (a model of 10 x 16 + 10
            parameters; about a minute on two CPU cores). --family multinomial (the default for them),
            poisson, bernoulli (a block is on when it has ink) or gaussian.

            With DATA: a CSV/TSV file read as by 'bayesnb fit' (--label, --text, --features,
            --family as there).

            Prints the report (the parameters and predictive probabilities with the largest
            |z| first). Exit status 0 when they agree, 1 when they do not (or the data are
            unusable), 2 on a usage error."""
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_table_options(
        check,
        data_optional=True,
        data_help="CSV/TSV file, one row per example (default: the bundled digits, see above)",
    )
    _add_model_options(check)
    check.add_argument(
        "--rows",
        type=_count(0),
        default=_CROSSCHECK_ROWS_DEFAULT,
        metavar="N",
        help="use at most N rows, a stratified random subset when there are more (0: all; default: %(default)s)",
    )
    check.add_argument("--warmup", type=_count(1), default=1000, metavar="N", help="NUTS warm-up iterations per chain (default: %(default)s)")
    check.add_argument("--samples", type=_count(10), default=1000, metavar="N", help="NUTS draws kept per chain (default: %(default)s)")
    check.add_argument(
        "--chains",
        type=_count(2),
        default=NUM_CHAINS,
        metavar="N",
        help="NUTS chains, run vectorised (>= 2: r_hat compares chains; default: %(default)s)",
    )
    check.add_argument(
        "--form",
        choices=("rows", "stats"),
        default="rows",
        help="the numpyro model observes every row (rows, default), or is conditioned on the sufficient "
        "statistics (stats: a cost independent of the number of rows)",
    )
    check.add_argument(
        "--predictive-rows",
        type=_count(0),
        default=5,
        metavar="N",
        help="rows whose predictive class probabilities are compared (default: %(default)s)",
    )
    check.add_argument(
        "--z-max",
        type=_positive_float,
        default=None,
        help="a fixed largest |z| that agrees (default: the Bonferroni critical value at --false-alarm)",
    )
    check.add_argument(
        "--rhat-max",
        type=_positive_float,
        default=None,
        help="a fixed largest r_hat that agrees (default: each parameter's critical value at --false-alarm)",
    )
    check.add_argument(
        "--false-alarm",
        type=_fraction,
        default=FALSE_ALARM,
        metavar="P",
        help="chance that a correct, well-mixed run is reported as disagreeing (default: %(default)s)",
    )
    check.add_argument("--min-ess", type=_count(1), default=100, metavar="N", help="smallest bulk ESS that agrees (default: %(default)s)")
    check.add_argument(
        "--max-parameters",
        type=_count(1),
        default=2000,
        metavar="N",
        help="refuse models with more scalar parameters (NUTS on thousands of them takes long; default: %(default)s)",
    )
    check.add_argument(
        "--show", type=_count(0), default=12, metavar="N", help="rows of each table printed, largest |z| first (0: all; default: %(default)s)"
    )
    check.add_argument("--seed", type=_seed, default=0, help="random seed of the subset and of NUTS (default: %(default)s)")
    check.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="numpyro's progress bar on stderr (default: when stderr is a terminal, never with CI set)",
    )
    check.set_defaults(handler=_run_crosscheck)


_CROSSCHECK_ROWS_DEFAULT = 300


def _add_force(p):
    p.add_argument(
        "--force",
        action="store_true",
        help="replace an existing output file that is not of the kind this command writes (never an input)",
    )


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


# ------------------------------------------------------------------------- demo
def _run_demo(args):
    import numpy as np

    from bayesnb.analysis.comparison import compare
    from bayesnb.exceptions import ZeroLikelihoodWarning

    if args.unlabelled is not None and args.data is None:
        raise DataError("--unlabelled describes the lines of a --data file; none was given (the default data is the digits)")
    progress = _Progress(args.progress)
    with progress.step("loading the data"):
        problem = _report.digits_problem(args) if args.data is None else _report.text_problem(args)
    if args.no_report and args.out is not None:
        raise DataError("--out and --no-report contradict each other")
    out_dir = None if args.no_report else _report.report_dir(args.out, force=args.force)
    y_train, y_test = problem.y_train, problem.y_test
    results, evidences, tables, reliability = {}, {}, {}, {}
    first = None
    # Taken off the problem one at a time: after its scores and its reliability diagram a
    # family's fitted model is let go, except the first one's (the learning curve, the
    # posterior uncertainty and the top features read it), rather than every family's
    # parameters staying alive to the end (issue 38: the demo's peak memory).
    while problem.families:
        name, clf, X_train, X_test = problem.families.pop(0)
        with progress.step(
            f"fitting {name} on {len(y_train)} rows: 4 estimates, calibrate='loo' and scikit-learn's baselines"
        ):
            clf.fit(X_train, y_train)
            if first is None:
                first = (name, clf, X_train, X_test)
            evidences[name] = float(clf.log_evidence())
            # The estimates of the model as written, its calibrated form and what a user
            # would do instead (scikit-learn's naive Bayes, calibrated by 5-fold CV), on
            # the same split.
            table = compare(
                clf, X_train, y_train, X_test, y_test, refit=False, random_state=args.seed, as_frame=False,
                calibrated=True, baselines=_report.baselines(clf),
            )
        tables[name] = table
        results[name] = table.records
        if out_dir is not None:
            with progress.step(f"drawing the reliability diagram of {name}"):
                reliability[name] = _report_files(out_dir, _report.reliability_image, out_dir, name, clf, X_test, y_test)
        del clf, table

    semi_lines = semi_records = semi_curve = None
    if problem.semi is not None:
        from bayesnb.cli import semi as _semi

        problem.semi.n_components = args.n_components

        with progress.step(f"semi-supervised: labelled only, EM and VB ({problem.semi.n_unlabelled} unlabelled documents)"):
            semi_records = _semi.holdout(problem.semi, args.alpha)
        semi_lines = _semi.summary_lines(problem.semi, semi_records, args.alpha)
    if out_dir is None:
        print(_report.demo_summary(args, problem, results, evidences, len(y_train), len(y_test), None, semi_lines))
        return 0
    if problem.semi is not None:
        semi_curve = _semi.curve(problem.semi, args.alpha, args.seed, progress.bar("semi-supervised learning curve"))
    first, clf, X_train, X_test = first
    sizes = _report.curve_sizes(len(y_train), len(np.unique(y_train)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ZeroLikelihoodWarning)
        curve = compare(
            clf,  # cloned and refitted on each training subset
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
    semi_md = None if problem.semi is None else _semi.report_lines(problem.semi, semi_records, semi_curve, args.alpha, args.seed)
    report = _report_files(
        out_dir, _report.write_report, args, problem, out_dir, (first, clf, X_train, X_test), reliability, tables,
        evidences, curve, progress, semi_md,
    )
    print(_report.demo_summary(args, problem, results, evidences, len(y_train), len(y_test), report, semi_lines))
    return 0


def _report_files(out_dir, write, *args):
    """``write(*args)``, a step that writes files of the report in ``out_dir``; an OSError is the user's DataError."""
    try:
        return write(*args)
    except OSError as exc:
        raise DataError(f"cannot write the report in {out_dir}: {exc.strerror or exc}") from None


# ------------------------------------------------------------- user data: fit / predict
def _run_fit(args):
    import numpy as np

    # Refused before any work: a model path that is the data, or a file of another kind.
    _userdata.check_model_outputs(args.model, inputs=[args.data], force=args.force)
    table = _read(args, args.data, args.sep, not args.no_header)
    spec = _userdata.spec_from_args(args, table)
    y = _userdata.labels(spec, table)
    if np.unique(y).size < 2:
        raise DataError(f"{table.path}: need at least 2 classes to classify, found {np.unique(y).tolist()}")
    X = _userdata.model_input(spec, table, fit=True)
    clf = _userdata.make_estimator(spec, args.alpha)
    if args.calibrate == "loo":
        clf.set_params(calibrate="loo")
    with _userdata.user_errors(f"cannot fit {type(clf).__name__} on {table.path}"):
        clf.fit(X, y)
    spec["alpha"] = args.alpha
    _userdata.save_model(clf, spec, args.model, inputs=[args.data], force=args.force)
    names, counts = np.unique(y, return_counts=True)
    if spec["kind"] == "text":
        what = f"text column {spec['text']!r}, {X.shape[1]} words"
    else:
        kinds = list(spec["types"].values())
        parts = [f"{kinds.count(k)} {k}" for k in ("numeric", "categorical") if kinds.count(k)]
        what = f"{len(kinds)} feature columns ({', '.join(parts)})"
    print(f"fitted {type(clf).__name__} ({spec['family']}) on {len(y)} rows of {table.path}: {what}")
    print(f"classes: {', '.join(f'{n} ({c})' for n, c in zip(names, counts))}")
    print(f"log evidence log p(X, y): {clf.log_evidence():.2f} nats")
    if args.calibrate == "loo":
        print(f"calibration (chosen by leave-one-out): {clf.calibration_}")
    print(f"model: {args.model} (column layout: {_userdata.spec_path(args.model)})")
    return 0


def _run_predict(args):
    import numpy as np

    if args.out:
        _check_out(args.out, "a predictions file", [args.data, args.model, _userdata.spec_path(args.model)],
                   _is_predictions_file, args.force)
    clf, spec = _userdata.load_model(args.model)
    sep = args.sep if args.sep is not None else spec.get("sep")
    header = spec.get("header", True) and not args.no_header
    table = _read(args, args.data, sep, header)
    X = _userdata.model_input(spec, table, fit=False)
    clf.set_params(estimate=args.estimate)
    from bayesnb.exceptions import ZeroLikelihoodWarning

    with _userdata.user_errors(f"cannot predict the rows of {table.path}"), warnings.catch_warnings():
        warnings.simplefilter("ignore", ZeroLikelihoodWarning)
        proba = clf.predict_proba(X)
        # (column suffix, (lower, upper, median)) per posterior asked for.
        summaries = []
        if args.interval is not None:
            kinds = ("fitted", "updated") if args.interval_posterior == "both" else (args.interval_posterior,)
            for kind in kinds:
                bounds = clf.predict_proba_interval(
                    X, args.interval, n_draws=args.draws, random_state=args.seed, posterior=kind, return_median=True
                )
                # Arrays, as printed (a DataFrame's rows give labelled frames).
                summaries.append(("" if kind == "fitted" else "_updated", tuple(np.asarray(b) for b in bounds)))
    classes = [str(c) for c in clf.classes_]
    predicted = clf.classes_[np.argmax(proba, axis=1)]
    y = _userdata.labels(spec, table, required=False)
    out_sep = "\t" if args.out and str(args.out).lower().endswith(".tsv") else ","
    header_row = ["line"] + (["label"] if y is not None else []) + ["predicted"] + [f"p({c})" for c in classes]
    for suffix, _ in summaries:
        header_row += [f"{what}{suffix}({c})" for what in ("median", "lower", "upper") for c in classes]
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=out_sep, lineterminator="\n")
    writer.writerow(header_row)
    for i in range(len(predicted)):
        row = [str(int(table.lines[i]))] + ([str(y[i])] if y is not None else []) + [str(predicted[i])]
        row += [f"{p:.6g}" for p in proba[i]]
        for _, (lo, hi, med) in summaries:
            row += [f"{v:.6g}" for part in (med, lo, hi) for v in part[i]]
        writer.writerow(row)
    if args.out:
        _write_text(args.out, buffer.getvalue())
    else:
        sys.stdout.write(buffer.getvalue())
    if y is not None:
        from bayesnb.analysis.comparison import metric_values

        known = np.isin(y, clf.classes_)
        if known.any():
            # A row impossible under every class holds predict's fallback (the class
            # proportions): scored as compare scores it (infinite log loss, the worst
            # Brier and ECE of a row), never as an answer the estimate gave.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ZeroLikelihoodWarning)
                impossible = np.isneginf(clf.predict_joint_log_proba(X)).all(axis=1)
            m = metric_values(y[known], proba[known], clf.classes_, impossible=impossible[known])
            dead = int(impossible[known].sum())
            print(
                f"{PROG}: {int(known.sum())} labelled rows: accuracy {m['accuracy']:.4f}, log loss "
                f"{m['log_loss']:.4f} (estimate={args.estimate!r})"
                + (f"; {dead} of them impossible under every class" if dead else ""),
                file=sys.stderr,
            )
    return 0


def _run_compare(args):
    import numpy as np

    from bayesnb.analysis.comparison import compare, format_comparison

    if args.out:
        _check_out(args.out, "a comparison table", [args.data, args.test_data], _is_comparison_table, args.force)
    table = _read(args, args.data, args.sep, not args.no_header)
    spec = _userdata.spec_from_args(args, table)
    y = _userdata.labels(spec, table)
    X = _userdata.design(spec, table, fit=True)
    if args.test_data is not None:
        test = _read(args, args.test_data, args.sep, not args.no_header)
        X_test, y_test = _userdata.design(spec, test, fit=False), _userdata.labels(spec, test)
        X_train, y_train = X, y
        unknown = sorted(set(y_test.tolist()) - set(y_train.tolist()))
        if unknown:
            raise DataError(f"{test.path}: labels {unknown[:5]} do not occur in {table.path}")
    elif args.cv is None:
        X_train, X_test, y_train, y_test = _userdata.split(X, y, args.test_size, args.seed)
    else:
        X_train, y_train, X_test, y_test = X, y, None, None
    if np.unique(y_train).size < 2:
        raise DataError(f"{table.path}: need at least 2 classes to classify")
    clf = _userdata.make_estimator(spec, args.alpha)
    progress = _Progress(args.progress)
    with _userdata.user_errors(f"cannot compare {type(clf).__name__} on {table.path}"), warnings.catch_warnings():
        from bayesnb.exceptions import ZeroLikelihoodWarning

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
            calibrated=args.calibrated,
        )
    print(f"{type(clf).__name__} ({spec['family']}) on {table.path}")
    # The two tables describe one comparison: its footer (split, bootstrap, reference) once, at the end.
    print(format_comparison(result, intervals=args.bootstrap > 0, footer=False))
    print()
    print(format_comparison(result, differences=True, values=False, metrics=("accuracy", "log_loss", "brier")))
    if args.out:
        _write_table(result, args.out)
        print(f"table: {args.out}")
    return 0


# ----------------------------------------------------------------------- crosscheck
def _crosscheck_digits(args):
    """The bundled digits, 2x2 blocks of pixels summed: 16 counts per image."""
    import numpy as np
    import pandas as pd

    from bayesnb import estimators as E
    from bayesnb.io.datasets import load_digits_counts

    X, y = load_digits_counts()
    X = X.reshape(-1, 4, 2, 4, 2).sum(axis=(2, 4)).reshape(len(X), 16)
    # block(r,c): pixels 2r..2r+1 (rows) x 2c..2c+1 (columns) of the 8x8 image.
    X = pd.DataFrame(X, columns=[f"block({r},{c})" for r in range(4) for c in range(4)])
    family = "multinomial" if args.family == "auto" else args.family
    # Pixel counts are counts, presence (thresholded) or numbers, never category codes.
    from bayesnb.core import families

    offered = [n for n in families.names() if families.get(n).support != "codes"]
    if family not in offered:
        raise DataError(
            f"--family {family} is not offered on the default data (pixel counts); use one of "
            f"{', '.join(offered)}, or pass a DATA file"
        )
    fam = families.get(family)
    clf = E.estimator_for(fam.name, alpha=args.alpha, binarize=DIGITS_BINARIZE_THRESHOLD)
    what = (
        f"scikit-learn digits (bundled), 2x2 blocks of pixels summed: {X.shape[1]} counts per image, "
        f"{np.unique(y).size} classes"
    )
    return X.astype(np.float64) if fam.support in ("real", "positive") else X, y, clf, family, what


def _named_columns(X, spec):
    """The design as a DataFrame with the file's column names (or the words of a text column).

    The estimator then records them (``feature_names_in_``) and the report names every
    parameter by them.
    """
    import pandas as pd
    import scipy.sparse as sp

    names = [str(v) for v in (spec["vocabulary"] if spec["kind"] == "text" else spec["features"])]
    if sp.issparse(X):
        return pd.DataFrame.sparse.from_spmatrix(X, columns=names)
    return pd.DataFrame(X, columns=names)


def _subset(X, y, n, seed):
    """At most ``n`` rows (0: all), a stratified random subset when there are more."""
    if n == 0 or n >= len(y):
        return X, y
    from sklearn.model_selection import train_test_split

    try:
        X_sub, _, y_sub, _ = train_test_split(X, y, train_size=n, random_state=seed, stratify=y)
    except ValueError as exc:
        raise DataError(f"cannot draw a stratified subset of {n} rows (--rows): {exc}") from None
    return X_sub, y_sub


def _run_crosscheck(args):
    import numpy as np

    from bayesnb.ppl import models
    from bayesnb.ppl.mcmc import crosscheck

    if args.data is None:
        for option in ("label", "text", "features", "sep"):
            if getattr(args, option) is not None:
                raise DataError(f"--{option} describes a DATA file; none was given (the default data is the digits)")
        X, y, clf, family, what = _crosscheck_digits(args)
    else:
        table = _read(args, args.data, args.sep, not args.no_header)
        spec = _userdata.spec_from_args(args, table)
        y = _userdata.labels(spec, table)
        X = _named_columns(_userdata.design(spec, table, fit=True), spec)
        clf = _userdata.make_estimator(spec, args.alpha)
        family = spec["family"]
        what = str(table.path)
    n_all = len(y)
    X, y = _subset(X, y, args.rows, args.seed)
    if np.unique(y).size < 2:
        raise DataError(f"need at least 2 classes to classify, found {np.unique(y).tolist()}")
    with _userdata.user_errors(f"cannot fit {type(clf).__name__}"), warnings.catch_warnings():
        from bayesnb.exceptions import ZeroLikelihoodWarning

        warnings.simplefilter("ignore", ZeroLikelihoodWarning)
        clf.fit(X, y)
    n_params = int(sum(np.size(mean) for mean, _ in models.posterior_moments(clf).values()))
    if n_params > args.max_parameters:
        raise DataError(
            f"the model has {n_params} parameters (more than --max-parameters {args.max_parameters}): NUTS "
            "on that many takes long; select fewer columns (--features), fewer rows do not help, or raise "
            "--max-parameters"
        )
    print(f"data: {what}")
    print(
        f"model: {type(clf).__name__} ({family}), {len(y)} of {n_all} rows, {X.shape[1]} features, "
        f"{np.unique(y).size} classes, {n_params} parameters"
    )
    print(
        f"NUTS: {args.chains} chain(s) x ({args.warmup} warm-up + {args.samples} draws), "
        f"form={args.form!r}, seed {args.seed}"
    )
    print()
    with _userdata.user_errors("cannot run the cross-check"):
        report = crosscheck(
            clf,
            X,
            y,
            num_warmup=args.warmup,
            num_samples=args.samples,
            num_chains=args.chains,
            random_state=args.seed,
            form=args.form,
            n_rows=args.predictive_rows,
            z_max=args.z_max,
            rhat_max=args.rhat_max,
            min_ess=args.min_ess,
            false_alarm=args.false_alarm,
            progress_bar=args.progress,
        )
    print(report.to_string(max_rows=None if args.show == 0 else args.show))
    if report.agrees:
        return 0
    print(
        f"{PROG}: the closed-form posterior and NUTS disagree: {'; '.join(report.failures)}",
        file=sys.stderr,
    )
    return 1


def _write_table(result, path):
    import csv
    import io

    from bayesnb.analysis.comparison import format_comparison

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
    _write_text(path, text)


# ------------------------------------------------------------------ output files
def _first_line(path):
    return _atomic.read_head(path, 4096).split(b"\n", 1)[0].decode("utf-8", "replace")


def _is_predictions_file(path):
    """A CSV/TSV written by ``bayesnb predict``: its header starts with ``line`` and names ``predicted``."""
    first = _first_line(path)
    return first.startswith(("line,", "line\t")) and "predicted" in first


def _is_comparison_table(path):
    """A table written by ``bayesnb compare --out`` (CSV, TSV or Markdown with an ``estimate`` column)."""
    cells = [c.strip() for c in _first_line(path).replace("|", ",").replace("\t", ",").split(",")]
    return "estimate" in cells


def _check_out(path, kind, inputs, is_own, force):
    _atomic.check_output(path, option="--out", kind=kind, inputs=inputs, is_own=is_own, force=force)


def _write_text(path, text):
    """Write ``text`` to ``path`` whole or not at all (a temporary file renamed over it)."""
    try:
        with _atomic.atomic_write(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise DataError(f"cannot write {path}: {exc.strerror or exc}") from None


def _semi_n_components(text):
    """``--n-components`` (parsed by :func:`bayesnb.cli.semi.parse_n_components`)."""
    from bayesnb.cli.semi import parse_n_components

    return parse_n_components(text)


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
    except (DataError, _atomic.UnsafeOutputError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
