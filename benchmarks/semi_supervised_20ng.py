r"""Semi-supervised naive Bayes on 20 Newsgroups: labelled-only vs EM vs VB.

Nigam et al. (2000)'s setting: a few labelled documents per class, the rest of the
training set unlabelled (``y = -1``), scored on the bydate test set. Every repeat draws
a new labelled subset (stratified, ``--per-class`` documents of each group) and fits

* labelled only: ``MultinomialNB(alpha)`` (Dir(alpha) prior, exact posterior predictive);
* EM: ``SemiSupervisedNB(MultinomialNB(alpha), method="em")`` (Laplace smoothing: the
  MAP under Dir(alpha + 1), i.e. the posterior mean under Dir(alpha); lambda = 1, and
  with ``--lam`` another weight of the unlabelled documents);
* VB: ``SemiSupervisedNB(MultinomialNB(alpha), method="vb")`` (predictive under q).
* scikit-learn, for reference, in the same run: its ``MultinomialNB(alpha)`` on the
  labelled rows (the posterior-mean plug-in with the empirical class proportions) and
  ``SelfTrainingClassifier(MultinomialNB(alpha))`` (its only semi-supervised wrapper).

``alpha`` defaults to 0.1: with a 26,000-word vocabulary and 20 documents per class,
Dir(1) (Nigam's add-one rule) outweighs the data (labelled-only accuracy about 0.22
against 0.56 with 0.1); with 0.01 VB's expected log probabilities
:math:`\psi(a) - \psi(A)` of words unseen in a class fall near -100 and VB does worse
than the labelled-only model (see docs/guide/semi_supervised.md).

It prints test accuracy and log loss (mean and standard deviation over the repeats,
min and max) and the fit times. Word counts from scikit-learn's ``CountVectorizer`` with
``min_df`` (default 5) over the training texts; ``--n-unlabelled`` keeps a random subset
of the unlabelled documents (default: all of them).

Learning-curve mode (``--curve 5,10,20,50,100``): for each number of labelled documents
per class, ``--repeats`` random labelled subsets (repeat ``r`` draws with seed ``r``; the
rest of the training set unlabelled), and only labelled-only, EM and VB (lambda = 1); it
ends with a Markdown table of test accuracy and log loss per size and method (mean ±
sd over the repeats, [min, max]), the number of repeats where EM / VB beat the
labelled-only model, and the load average (``os.getloadavg()``) at the start and end.

Run ``python benchmarks/semi_supervised_20ng.py [--repeats 5] [--quick] [--curve SIZES]``; the archive is
read in place from ``../shared/data/20newsgroups_bydate/20news-bydate.tar.gz`` (relative
to the repository root) or ``--data``; without it the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's bayesnb, not an installed one
DEFAULT = ROOT.parent / "shared" / "data" / "20newsgroups_bydate" / "20news-bydate.tar.gz"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(DEFAULT), help="20news-bydate.tar.gz")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--per-class", type=int, default=20, help="labelled documents per class")
    p.add_argument("--n-unlabelled", type=int, default=None, help="random subset of the unlabelled documents")
    p.add_argument("--min-df", type=int, default=5)
    p.add_argument("--alpha", type=float, default=0.1, help="MultinomialNB's Dirichlet concentration")
    p.add_argument("--lam", type=float, default=None, help="a second EM run with this unlabelled weight")
    p.add_argument("--max-iter", type=int, default=100)
    p.add_argument("--tol", type=float, default=1e-6)
    p.add_argument("--quick", action="store_true", help="4 groups, 2 repeats")
    p.add_argument(
        "--curve",
        type=_sizes,
        default=None,
        metavar="SIZES",
        help="learning curve: comma-separated labelled documents per class (labelled-only, EM, VB)",
    )
    return p.parse_args(argv)


def _sizes(text):
    try:
        sizes = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"sizes must be integers >= 1, got {text!r}")
    return sorted(set(sizes))


def _labelled_subset(rng, y_train, classes, per_class):
    """``per_class`` random training rows of each class (without replacement)."""
    return np.concatenate([rng.choice(np.flatnonzero(y_train == c), per_class, replace=False) for c in classes])


def _cell(values, digits):
    values = np.asarray(values, dtype=float)
    sd = values.std(ddof=1) if values.size > 1 else 0.0
    return f"{values.mean():.{digits}f} ± {sd:.{digits}f} [{values.min():.{digits}f}, {values.max():.{digits}f}]"


def run_curve(args, X_train, y_train, X_test, y_test, classes, repeats):
    """Accuracy and log loss against labelled documents per class: labelled only, EM, VB.

    Returns ``{(per_class, method): {"acc": [...], "loss": [...], "iter": [...], "time": [...]}}``.
    """
    from sklearn.metrics import accuracy_score, log_loss

    from bayesnb import MultinomialNB, SemiSupervisedNB

    smallest = min(int(np.sum(y_train == c)) for c in classes)
    sizes = [k for k in args.curve if k < smallest]
    if len(sizes) < len(args.curve):
        print(f"  (sizes >= {smallest}, the smallest class's training documents, left out)")
    methods = ("labelled only", "EM", "VB")
    results = {}
    for k in sizes:
        for r in range(repeats):
            rng = np.random.default_rng(r)
            labelled = _labelled_subset(rng, y_train, classes, k)
            rest = np.setdiff1d(np.arange(y_train.size), labelled)
            if args.n_unlabelled is not None and args.n_unlabelled < rest.size:
                rest = np.sort(rng.choice(rest, args.n_unlabelled, replace=False))
            X = X_train[np.concatenate([labelled, rest])]
            y = np.concatenate([y_train[labelled], np.full(rest.size, -1, dtype=object)]).astype(object)
            for name in methods:
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    if name == "labelled only":
                        clf = MultinomialNB(alpha=args.alpha).fit(X_train[labelled], y_train[labelled])
                        n_iter = 0
                    else:
                        clf = SemiSupervisedNB(
                            MultinomialNB(alpha=args.alpha), method=name.lower(), max_iter=args.max_iter, tol=args.tol,
                            unlabelled_weight=1.0,  # the documented curve is plain EM / VB (the default is "auto")
                        ).fit(X, y)
                        n_iter = clf.n_iter_
                    elapsed = time.perf_counter() - start
                    proba = clf.predict_proba(X_test)
                res = results.setdefault((k, name), {"acc": [], "loss": [], "iter": [], "time": []})
                res["acc"].append(accuracy_score(y_test, clf.classes_[np.argmax(proba, axis=1)]))
                res["loss"].append(log_loss(y_test, np.clip(proba, 1e-300, 1.0), labels=clf.classes_))
                res["iter"].append(n_iter)
                res["time"].append(elapsed)
                print(
                    f"  {k:>4} per class, repeat {r}: {name:<13} accuracy {res['acc'][-1]:.4f}  "
                    f"log loss {res['loss'][-1]:.4f}  ({n_iter} iterations, {elapsed:.1f} s)",
                    flush=True,
                )
    return sizes, methods, results


def curve_table(sizes, methods, results, n_classes):
    """The learning curve as a Markdown table (one row per size and method)."""
    lines = [
        "| labelled per class (total) | method | accuracy | log loss | EM/VB beats labelled-only (accuracy) | iterations (median) | fit s (median) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for k in sizes:
        base = np.asarray(results[(k, "labelled only")]["acc"])
        for name in methods:
            res = results[(k, name)]
            if name == "labelled only":
                wins = iters = "–"
            else:
                wins = f"{int(np.sum(np.asarray(res['acc']) > base))}/{base.size}"
                iters = f"{np.median(res['iter']):.0f}"
            lines.append(
                f"| {k} ({k * n_classes}) | {name} | {_cell(res['acc'], 3)} | {_cell(res['loss'], 2)} | {wins} | "
                f"{iters} | {np.median(res['time']):.1f} |"
            )
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    path = Path(args.data)
    if not path.exists():
        print(f"20 Newsgroups archive not found at {path}; nothing to do.")
        return 0
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.metrics import accuracy_score, log_loss

    from bayesnb import MultinomialNB, SemiSupervisedNB
    from bayesnb.io.datasets import read_20newsgroups_bydate

    categories = ["alt.atheism", "comp.graphics", "sci.space", "talk.religion.misc"] if args.quick else None
    repeats = 2 if args.quick else args.repeats
    train_text, y_train = read_20newsgroups_bydate(path, "train", categories)
    test_text, y_test = read_20newsgroups_bydate(path, "test", categories)
    vec = CountVectorizer(min_df=args.min_df)
    X_train = vec.fit_transform(train_text).tocsr()
    X_test = vec.transform(test_text).tocsr()
    classes = np.unique(y_train)
    print(
        f"20 Newsgroups bydate: {X_train.shape[0]} train / {X_test.shape[0]} test documents, "
        f"{X_train.shape[1]} words (min_df={args.min_df}), {classes.size} groups; "
        + (f"{args.per_class} labelled per group, " if args.curve is None else "")
        + f"{repeats} repeats; MultinomialNB(alpha={args.alpha:g})"
    )

    if args.curve is not None:
        print(f"load average at start (1, 5, 15 min): {', '.join(f'{v:.2f}' for v in os.getloadavg())}; "
              f"{os.cpu_count()} CPUs", flush=True)
        print(f"learning curve: {args.curve} labelled per class, {repeats} repeats, all other training documents "
              f"unlabelled" + ("" if args.n_unlabelled is None else f" (a random {args.n_unlabelled} of them)"))
        sizes, names, results = run_curve(args, X_train, y_train, X_test, y_test, classes, repeats)
        print()
        print(f"command: python benchmarks/semi_supervised_20ng.py {' '.join(argv if argv is not None else sys.argv[1:])}")
        print(f"load average at end (1, 5, 15 min): {', '.join(f'{v:.2f}' for v in os.getloadavg())}")
        print()
        print(curve_table(sizes, names, results, classes.size))
        return 0

    from sklearn.naive_bayes import MultinomialNB as SkMultinomialNB
    from sklearn.semi_supervised import SelfTrainingClassifier

    methods = {
        "sklearn NB, labelled only": "sklearn",
        "sklearn self-training": "self-training",
        "labelled only": None,
        "EM (lambda=1)": dict(method="em", unlabelled_weight=1.0),
        "VB (lambda=1)": dict(method="vb", unlabelled_weight=1.0),
    }
    if args.lam is not None:
        methods[f"EM (lambda={args.lam:g})"] = dict(method="em", unlabelled_weight=args.lam)
    results = {name: {"acc": [], "loss": [], "time": [], "iter": []} for name in methods}
    width = max(map(len, methods))
    for r in range(repeats):
        rng = np.random.default_rng(r)
        labelled = np.concatenate(
            [rng.choice(np.flatnonzero(y_train == c), args.per_class, replace=False) for c in classes]
        )
        rest = np.setdiff1d(np.arange(y_train.size), labelled)
        if args.n_unlabelled is not None and args.n_unlabelled < rest.size:
            rest = np.sort(rng.choice(rest, args.n_unlabelled, replace=False))
        rows = np.concatenate([labelled, rest])
        X = X_train[rows]
        y = np.concatenate([y_train[labelled], np.full(rest.size, -1, dtype=object)]).astype(object)
        for name, params in methods.items():
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if params == "sklearn":
                    clf = SkMultinomialNB(alpha=args.alpha).fit(X_train[labelled], y_train[labelled])
                    n_iter = 0
                elif params == "self-training":
                    # scikit-learn's only semi-supervised wrapper: -1 marks unlabelled rows
                    # there too (string labels in an object array).
                    clf = SelfTrainingClassifier(SkMultinomialNB(alpha=args.alpha), max_iter=args.max_iter).fit(X, y)
                    n_iter = clf.n_iter_
                elif params is None:
                    clf = MultinomialNB(alpha=args.alpha).fit(X_train[labelled], y_train[labelled])
                    n_iter = 0
                else:
                    clf = SemiSupervisedNB(MultinomialNB(alpha=args.alpha), max_iter=args.max_iter, tol=args.tol, **params).fit(X, y)
                    n_iter = clf.n_iter_
                elapsed = time.perf_counter() - start
                proba = clf.predict_proba(X_test)
            pred = clf.classes_[np.argmax(proba, axis=1)]
            res = results[name]
            res["acc"].append(accuracy_score(y_test, pred))
            res["loss"].append(log_loss(y_test, np.clip(proba, 1e-300, 1.0), labels=clf.classes_))
            res["time"].append(elapsed)
            res["iter"].append(n_iter)
            print(
                f"  repeat {r}: {name:<{width}} accuracy {res['acc'][-1]:.4f}  log loss {res['loss'][-1]:.4f}  "
                f"({n_iter} iterations, {elapsed:.1f} s)",
                flush=True,
            )

    print()
    print(f"{'method':<{width}} {'accuracy mean ± sd [min, max]':<34} {'log loss mean ± sd [min, max]':<36} {'iter':>5} {'fit s':>7}")
    for name, res in results.items():
        acc, loss = np.array(res["acc"]), np.array(res["loss"])
        print(
            f"{name:<{width}} {acc.mean():.4f} ± {acc.std(ddof=1) if acc.size > 1 else 0:.4f} "
            f"[{acc.min():.4f}, {acc.max():.4f}]   {loss.mean():7.4f} ± {loss.std(ddof=1) if loss.size > 1 else 0:.4f} "
            f"[{loss.min():.4f}, {loss.max():.4f}] {np.median(res['iter']):5.0f} {np.median(res['time']):7.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
