"""MLE vs MAP vs posterior mean vs full Bayes on small training sets (a learning curve).

The four ``estimate`` settings of one bayesnb model come from the same posterior; they
differ in how they turn it into predictions. With plenty of data they agree. With little
data they do not: the MLE gives zero probability to every feature value it has not seen
(such rows fall back to the class proportions), the MAP equals the MLE under a uniform
prior (alpha = 1), the posterior mean smooths but is overconfident, and the exact
posterior predictive accounts for the uncertainty of the parameters. This script refits
each model on random stratified training subsets of growing size and scores every
estimate on the same test rows, with paired bootstrap intervals of the differences from
the exact predictive: it shows at which sizes full Bayes matters and where it stops
mattering.

Data: scikit-learn's bundled digits (multinomial counts and Bernoulli pixels), and, when
``../shared/data`` holds it, the SMS Spam Collection (word counts).

Run ``python examples/small_data_estimates.py [--quick] [--out DIR] [--data-dir DIR]``.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = ROOT.parent / "shared" / "data"


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small run (about half a minute)")
    parser.add_argument("--out", metavar="DIR", help="write the learning-curve figures here (PNG)")
    parser.add_argument("--data-dir", metavar="DIR", default=str(DEFAULT_DATA_DIR), help="the shared corpora")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def problems(args):
    """(name, estimator, X_train, y_train, X_test, y_test, sizes) of each data set."""
    from sklearn.model_selection import train_test_split

    from bayesnb import BernoulliNB, MultinomialNB
    from bayesnb.io.datasets import load_digits_counts

    X, y = load_digits_counts()
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, stratify=y, random_state=args.seed)
    sizes = [10, 30, 100, 1347] if args.quick else [10, 20, 50, 100, 200, 500, 1347]
    yield "digits, multinomial (pixel counts)", MultinomialNB(), X_train, y_train, X_test, y_test, sizes
    if not args.quick:
        yield "digits, Bernoulli (pixels on/off)", BernoulliNB(), X_train, y_train, X_test, y_test, sizes

    path = Path(args.data_dir) / "sms_spam_collection" / "SMSSpamCollection"
    if not path.is_file():
        print(f"(SMS part skipped: {path} not found)")
        return
    from sklearn.feature_extraction.text import CountVectorizer

    from bayesnb.io.datasets import read_labelled_text

    texts, labels = read_labelled_text(path)
    d_train, d_test, y_train, y_test = train_test_split(
        np.asarray(texts, dtype=object), labels, test_size=0.3, stratify=labels, random_state=args.seed
    )
    if args.quick:
        d_test, y_test = d_test[:600], y_test[:600]
    vectorizer = CountVectorizer()
    X_train = vectorizer.fit_transform(d_train)
    sizes = [20, 100, 500] if args.quick else [20, 50, 100, 300, 1000, len(y_train)]
    yield "SMS spam, multinomial (word counts)", MultinomialNB(), X_train, y_train, vectorizer.transform(d_test), y_test, sizes


def main(argv=None):
    args = parse_args(argv)
    from bayesnb import ZeroLikelihoodWarning, compare
    from bayesnb.analysis.comparison import format_comparison

    out = Path(args.out) if args.out else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    for k, (name, estimator, X_train, y_train, X_test, y_test, sizes) in enumerate(problems(args)):
        with warnings.catch_warnings():
            # MLE rows with an unseen feature value fall back to the class proportions:
            # counted in the table's zero-lik column instead of warned about.
            warnings.simplefilter("ignore", ZeroLikelihoodWarning)
            result = compare(
                estimator,
                X_train,
                y_train,
                X_test,
                y_test,
                train_sizes=sizes,
                n_repeats=2 if args.quick else 5,
                n_bootstrap=200 if args.quick else 1000,
                random_state=args.seed,
                as_frame=False,
            )
        print(f"== {name}: {len(y_test)} test rows")
        print(format_comparison(result, metrics=("accuracy", "log_loss", "brier")))
        print(format_comparison(result, differences=True, values=False, metrics=("accuracy", "log_loss")))
        verdict = []
        for size in sizes:
            rec = result.row(size, "mean")
            lo, hi = rec["log_loss_diff_lo"], rec["log_loss_diff_hi"]
            verdict.append(f"{size}: {'predictive better' if lo > 0 else 'mean better' if hi < 0 else 'no resolved difference'}")
        print("log loss, posterior mean vs exact predictive (95% paired interval) at each size:")
        print("  " + "; ".join(verdict))
        print()
        if out is not None:
            from bayesnb.analysis import plots

            for metric in ("log_loss", "accuracy"):
                ax = plots.learning_curve(result, metric)
                ax.set_title(f"{name}\n{ax.get_title()}", fontsize="medium")
                ax.figure.savefig(out / f"learning_curve_{k}_{metric}.png", dpi=110)
    if out is not None:
        print(f"figures: {out}/learning_curve_*.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
