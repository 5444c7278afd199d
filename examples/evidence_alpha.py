"""Choose the smoothing of a multinomial naive Bayes by its evidence instead of cross-validation.

On 20 Newsgroups ("bydate" split, read in place from ``../shared/data``), word counts
from ``CountVectorizer``:

* ``MultinomialNB(alpha="evidence")``: one fit; alpha maximises the log marginal
  likelihood of the training documents (Newton steps, a handful of iterations);
* ``MultinomialNB(alpha="evidence", alpha_scope="feature")``: one alpha per word (the
  Dirichlet's base measure and precision);
* ``GridSearchCV(MultinomialNB(), {"alpha": grid}, scoring="neg_log_loss")``: k-fold
  cross-validation over a grid of alphas, then a refit.

For each: the chosen alpha, the wall-clock time to choose it and fit, and the test
accuracy and log loss. ``--out DIR`` also saves ``DIR/evidence_curve.png``: the log
evidence against alpha with the test log loss on a twin axis (:func:`bayesnb.analysis.evidence.plot_evidence_curve`).

Run::

    python examples/evidence_alpha.py            # all 20 groups (a few minutes)
    python examples/evidence_alpha.py --quick    # 4 groups, a subset of rows (~30 s)
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
QUICK_CATEGORIES = ("alt.atheism", "comp.graphics", "sci.space", "talk.religion.misc")


def _parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="4 groups and a subset of rows (about 30 s)")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=REPO.parent / "shared" / "data",
        help="folder holding 20newsgroups_bydate/20news-bydate.tar.gz (default: ../shared/data)",
    )
    parser.add_argument("--out", metavar="DIR", type=Path, default=None, help="write the evidence/log-loss curve here (PNG)")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def _load(path, quick, seed):
    from bayesnb.io.datasets import read_20newsgroups_bydate

    categories = QUICK_CATEGORIES if quick else None
    train = read_20newsgroups_bydate(path, "train", categories=categories)
    test = read_20newsgroups_bydate(path, "test", categories=categories)
    if quick:
        rng = np.random.default_rng(seed)
        train, test = (_subset(part, n, rng) for part, n in ((train, 800), (test, 500)))
    return train, test


def _subset(part, n, rng):
    texts, labels = part
    keep = np.sort(rng.choice(len(texts), size=min(n, len(texts)), replace=False))
    return [texts[i] for i in keep], labels[keep]


def _timed(make, X, y, repeat):
    """Fit ``make()`` ``repeat`` times; the fitted estimator and each wall-clock time."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        clf = make().fit(X, y)
        times.append(time.perf_counter() - start)
    return clf, times


def _row(name, alpha, times, clf, X_test, y_test):
    from sklearn.metrics import accuracy_score, log_loss

    proba = clf.predict_proba(X_test)
    acc = accuracy_score(y_test, clf.classes_[np.argmax(proba, axis=1)])
    loss = log_loss(y_test, proba, labels=clf.classes_)
    seconds = " / ".join(f"{t:.2f}" for t in times)
    print(f"{name:<28} {alpha:>14} {seconds:>13} {acc:>9.4f} {loss:>9.4f}")
    return acc, loss


def main(argv=None):
    args = _parse(argv)
    path = args.data_dir / "20newsgroups_bydate" / "20news-bydate.tar.gz"
    if not path.is_file():
        print(f"skipped: {path} not found (the 20 Newsgroups corpus lives in ../shared/data)")
        return 0

    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.model_selection import GridSearchCV, StratifiedKFold

    from bayesnb import MultinomialNB
    from bayesnb.exceptions import EvidenceWarning

    (train_texts, y_train), (test_texts, y_test) = _load(path, args.quick, args.seed)
    vec = CountVectorizer()
    X_train = vec.fit_transform(train_texts)
    X_test = vec.transform(test_texts)
    print(
        f"20 Newsgroups bydate{' (quick)' if args.quick else ''}: {len(np.unique(y_train))} groups, "
        f"{X_train.shape[0]} training / {X_test.shape[0]} test documents, {X_train.shape[1]} words"
    )
    print(f"{'method':<28} {'alpha':>14} {'time (s)':>13} {'accuracy':>9} {'log loss':>9}")

    # The first fit with alpha="evidence" includes compiling the JAX gradient for this
    # shape (seconds, once per process and size); the second shows the fit itself.
    shared, times = _timed(lambda: MultinomialNB(alpha="evidence"), X_train, y_train, 2)
    trace = shared.evidence_trace_["alpha"]
    _row("evidence (shared alpha)", f"{shared.alpha_:.4g}", times, shared, X_test, y_test)

    with warnings.catch_warnings():
        # Words seen in no training document send their own alpha to the lower bound.
        warnings.simplefilter("ignore", EvidenceWarning)
        per_word, times = _timed(lambda: MultinomialNB(alpha="evidence", alpha_scope="feature"), X_train, y_train, 2)
    a = per_word.alpha_
    _row("evidence (alpha per word)", f"median {np.median(a):.3g}", times, per_word, X_test, y_test)

    grid = np.geomspace(1e-3, 10.0, 9 if args.quick else 13)
    folds = StratifiedKFold(n_splits=3 if args.quick else 5, shuffle=True, random_state=args.seed)
    search, times = _timed(
        lambda: GridSearchCV(MultinomialNB(), {"alpha": grid}, cv=folds, scoring="neg_log_loss"), X_train, y_train, 1
    )
    best = search.best_params_["alpha"]
    _row(f"{folds.get_n_splits()}-fold CV, {grid.size} alphas", f"{best:.4g}", times, search.best_estimator_, X_test, y_test)
    print("(time: first fit including JAX compilation / a second fit)")

    print(
        f"\nevidence: alpha = {shared.alpha_:.4g} found in {trace.n_iter} Newton iterations "
        f"(log evidence {shared.log_evidence():.1f}); CV chose {best:.4g} "
        f"(log evidence {MultinomialNB(alpha=best).fit(X_train, y_train).log_evidence():.1f})"
    )

    if args.out is not None:
        from bayesnb.analysis.evidence import plot_evidence_curve

        alphas = np.geomspace(1e-3, 10.0, 25 if args.quick else 41)
        ax = plot_evidence_curve(MultinomialNB(), X_train, y_train, X_test, y_test, alphas=alphas)
        ax.axvline(best, color="0.3", ls="-.", lw=1, label=f"cross-validated: α = {best:.3g}")
        ax.legend(*_all_handles(ax), loc="best", fontsize="small")
        args.out.mkdir(parents=True, exist_ok=True)
        path = args.out / "evidence_curve.png"
        ax.figure.savefig(path, dpi=120)
        print(f"plot saved to {path}")
    return 0


def _all_handles(ax):
    handles, labels = ax.get_legend_handles_labels()
    if ax.right_ax is not None:
        h, lab = ax.right_ax.get_legend_handles_labels()
        handles, labels = handles + h, labels + lab
    return handles, labels


if __name__ == "__main__":
    sys.exit(main())
