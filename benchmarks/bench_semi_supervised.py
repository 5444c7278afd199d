r"""Unlabelled data that never hurts: labelled-only vs EM (lambda = 1) vs ``unlabelled_weight="auto"``.

Issue 37's table. For each task, each labelled fraction and each random labelled subset,
the training pool is split into labelled rows (a stratified random subset) and
unlabelled rows (**all** the rest, ``y = -1``), and three fits of
``SemiSupervisedNB(MultinomialNB(alpha), method=...)`` with the same estimator and
estimate are scored on the task's test rows:

* ``labelled only``: ``unlabelled_weight=0`` (equal to the labelled-only fit, tested);
* ``EM lambda=1``: ``unlabelled_weight=1`` (plain EM / VB, the old default);
* ``auto``: the default, the weight chosen by cross-validation of the labelled rows
  (``weight_criterion``: ``--criterion``, default the estimator's default, accuracy);
  its line also prints each weight's cross-validated gain over 0 in accuracy and in
  mean log p(y|x), with standard errors, whichever criterion decided.

Tasks (read in place from ``--data``, the shared data folder):

* ``sms``: the SMS Spam Collection (5,574 messages, ham / spam), one stratified 70 / 30
  train / test split (seed 0); word counts from ``CountVectorizer(min_df=2)`` fitted on
  the training pool.
* ``20ng2``: 20 Newsgroups bydate, two classes made of related groups:
  ``comp.sys.ibm.pc.hardware`` + ``comp.sys.mac.hardware`` ("comp") against
  ``rec.autos`` + ``rec.motorcycles`` ("rec"); train / test as distributed.
* ``20ng20``: 20 Newsgroups bydate, all 20 groups.

For 20 Newsgroups, word counts from ``CountVectorizer(min_df=5)`` on the training pool.
The model is ``MultinomialNB(alpha)``, ``alpha`` 1 (the library's default, as a new user
would fit it) on SMS and 0.1 on 20 Newsgroups (the docs' setting: with 26,000 words
Dir(1) outweighs a few labelled documents), or ``--alpha``.
The labelled subset at fraction ``f`` holds ``max(2, round(f * n_c))`` rows of each class
``c`` (2 at least so that every class can be held out in cross-validation), drawn with
``numpy.random.default_rng(1000 * task_index + subset)``; ``--n-unlabelled`` and
``--n-test`` cap the unlabelled pool and the test set (random subsets, seed 0) to keep
a run small. Subset ``r`` uses the same labelled rows for the three methods.

It prints one line per fit, then a Markdown table: per task, fraction and method, mean
± sd over the subsets of test accuracy and log loss (scikit-learn's ``log_loss``), the
median fit time, the weights ``auto`` chose, and for ``auto`` whether the issue's bound
holds (mean accuracy >= labelled-only - 0.005 and mean log loss <= labelled-only +
max(0.01, 2%)) and the median over subsets of its fit time over EM lambda=1's.

``python benchmarks/bench_semi_supervised.py --tasks sms --fractions 0.01,0.05,0.2 --subsets 5``
(see ``--help``); without the data it says so and exits 0.
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
DATA = ROOT.parent / "shared" / "data"
TASKS = ("sms", "20ng2", "20ng20")
METHODS = {"labelled only": 0.0, "EM lambda=1": 1.0, "auto": "auto"}
PAIR = {
    "comp.sys.ibm.pc.hardware": "comp",
    "comp.sys.mac.hardware": "comp",
    "rec.autos": "rec",
    "rec.motorcycles": "rec",
}


def _list(kind):
    def parse(text):
        try:
            return [kind(part) for part in text.split(",") if part]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated values, got {text!r}") from None

    return parse


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(DATA), help="the shared data folder")
    p.add_argument("--tasks", type=_list(str), default=list(TASKS), help=f"comma-separated, of {', '.join(TASKS)}")
    p.add_argument("--fractions", type=_list(float), default=[0.01, 0.05, 0.2], help="labelled fractions of the pool")
    p.add_argument("--subsets", type=int, default=5, help="random labelled subsets per fraction")
    p.add_argument("--method", choices=("em", "vb"), default="em")
    p.add_argument(
        "--alpha", type=float, default=None,
        help="MultinomialNB's Dirichlet concentration (default: 1, the library's, for sms; 0.1 for 20 Newsgroups)",
    )
    p.add_argument("--n-unlabelled", type=int, default=None, help="cap on the unlabelled rows (random subset)")
    p.add_argument("--n-test", type=int, default=None, help="cap on the test rows (random subset)")
    p.add_argument(
        "--calibrate", action="store_true",
        help="wrap MultinomialNB(calibrate='loo') for every method alike (the map fitted to the labelled rows)",
    )
    p.add_argument(
        "--criterion", choices=("accuracy", "log_score"), default="accuracy",
        help="SemiSupervisedNB's weight_criterion for the auto rows",
    )
    p.add_argument("--max-iter", type=int, default=100)
    p.add_argument("--tol", type=float, default=1e-6)
    args = p.parse_args(argv)
    unknown = set(args.tasks) - set(TASKS)
    if unknown:
        p.error(f"unknown task(s) {sorted(unknown)}; choose from {TASKS}")
    return args


def load(task, data):
    """Training texts and labels, test texts and labels, the vectorizer's ``min_df`` and the default alpha; None without the data."""
    from bayesnb.io.datasets import read_20newsgroups_bydate, read_labelled_text

    if task == "sms":
        from sklearn.model_selection import train_test_split

        path = Path(data) / "sms_spam_collection" / "SMSSpamCollection"
        if not path.exists():
            return None
        texts, labels = read_labelled_text(path)
        texts, labels = np.asarray(texts, dtype=object), np.asarray(labels)
        a, b, ya, yb = train_test_split(texts, labels, test_size=0.3, random_state=0, stratify=labels)
        return list(a), ya, list(b), yb, 2, 1.0
    path = Path(data) / "20newsgroups_bydate" / "20news-bydate.tar.gz"
    if not path.exists():
        return None
    groups = sorted(PAIR) if task == "20ng2" else None
    a, ya = read_20newsgroups_bydate(path, "train", groups)
    b, yb = read_20newsgroups_bydate(path, "test", groups)
    if task == "20ng2":
        ya, yb = np.array([PAIR[g] for g in ya]), np.array([PAIR[g] for g in yb])
    return list(a), np.asarray(ya), list(b), np.asarray(yb), 5, 0.1


def labelled_subset(rng, y, fraction):
    """Row indices of a stratified random subset: ``max(2, round(fraction * n_c))`` of each class."""
    picks = []
    for c in np.unique(y):
        rows = np.flatnonzero(y == c)
        picks.append(rng.choice(rows, min(rows.size, max(2, round(fraction * rows.size))), replace=False))
    return np.sort(np.concatenate(picks))


def run_task(index, task, args):
    import scipy.sparse as sp
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.metrics import accuracy_score, log_loss

    from bayesnb import MultinomialNB, SemiSupervisedNB

    loaded = load(task, args.data)
    if loaded is None:
        print(f"{task}: data not found under {args.data}; skipped")
        return {}
    train_text, y_train, test_text, y_test, min_df, alpha = loaded
    alpha = alpha if args.alpha is None else args.alpha
    vec = CountVectorizer(min_df=min_df)
    X_pool = vec.fit_transform(train_text).tocsr()
    X_test = vec.transform(test_text).tocsr()
    if args.n_test is not None and args.n_test < X_test.shape[0]:
        keep = np.sort(np.random.default_rng(0).choice(X_test.shape[0], args.n_test, replace=False))
        X_test, y_test = X_test[keep], y_test[keep]
    classes = np.unique(y_train)
    print(f"{task}: pool {X_pool.shape[0]} rows, test {X_test.shape[0]} rows, {X_pool.shape[1]} words "
          f"(min_df={min_df}), {classes.size} classes; MultinomialNB(alpha={alpha:g}"
          f"{', calibrate=loo' if args.calibrate else ''})", flush=True)
    out = {}
    for fraction in args.fractions:
        for r in range(args.subsets):
            rng = np.random.default_rng(1000 * index + r)
            lab = labelled_subset(rng, y_train, fraction)
            unl = np.setdiff1d(np.arange(X_pool.shape[0]), lab)
            if args.n_unlabelled is not None and args.n_unlabelled < unl.size:
                unl = np.sort(np.random.default_rng(0).choice(unl, args.n_unlabelled, replace=False))
            X = sp.vstack([X_pool[lab], X_pool[unl]]).tocsr()
            y = np.concatenate([y_train[lab].astype(object), np.full(unl.size, -1, dtype=object)])
            for name, weight in METHODS.items():
                clf = SemiSupervisedNB(
                    MultinomialNB(alpha=alpha, calibrate="loo" if args.calibrate else None), method=args.method,
                    unlabelled_weight=weight, weight_criterion=args.criterion,
                    max_iter=args.max_iter, tol=args.tol,
                )
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # max_iter notes: the iteration count is printed
                    clf.fit(X, y)
                seconds = time.perf_counter() - start
                proba = clf.predict_proba(X_test)
                rec = {
                    "accuracy": accuracy_score(y_test, clf.classes_[proba.argmax(1)]),
                    "log_loss": log_loss(y_test, proba, labels=clf.classes_),
                    "seconds": seconds,
                    "weight": clf.unlabelled_weight_,
                    "n_iter": clf.n_iter_,
                }
                out.setdefault((task, fraction, name), []).append(rec)
                print(f"  {task} {fraction:g} subset {r} ({lab.size} labelled, {unl.size} unlabelled) {name}: "
                      f"accuracy {rec['accuracy']:.4f}, log loss {rec['log_loss']:.4f}, weight {rec['weight']:g}, "
                      f"{rec['n_iter']} iterations, {seconds:.1f} s", flush=True)
                curve = getattr(clf, "weight_curve_", None)
                if weight == "auto" and curve is not None:
                    print("    cross-validated gain over weight 0 (accuracy; mean log p(y|x)): " + "; ".join(
                        f"{lam:g}: {ag:+.3f} ± {ase:.3f}; {g:+.3f} ± {se:.3f}" for lam, ag, ase, g, se in zip(
                            curve["grid"], curve["accuracy_gain"], curve["accuracy_gain_se"], curve["gain"],
                            curve["gain_se"]) if lam > 0), flush=True)
    return out


def _cell(values, digits):
    values = np.asarray(values, dtype=float)
    sd = values.std(ddof=1) if values.size > 1 else 0.0
    return f"{values.mean():.{digits}f} ± {sd:.{digits}f}"


def table(results):
    """The Markdown table of the results (see the module docstring)."""
    lines = [
        "| task | labelled | method | accuracy | log loss | fit s (median) | weights chosen | within the bound |"
        " fit time / EM lambda=1 |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    keys = sorted({(t, f) for t, f, _ in results}, key=lambda k: (TASKS.index(k[0]), k[1]))
    for task, fraction in keys:
        base = results[task, fraction, "labelled only"]
        acc0 = np.mean([r["accuracy"] for r in base])
        ll0 = np.mean([r["log_loss"] for r in base])
        em_seconds = [r["seconds"] for r in results[task, fraction, "EM lambda=1"]]
        for name in METHODS:
            recs = results[task, fraction, name]
            acc = [r["accuracy"] for r in recs]
            ll = [r["log_loss"] for r in recs]
            weights = ", ".join(f"{r['weight']:g}" for r in recs) if name == "auto" else "–"
            bound = ratio = "–"
            if name == "auto":
                # per subset, then the median: the same labelled rows, the same machine load
                ratio = f"{np.median([r['seconds'] / e for r, e in zip(recs, em_seconds)]):.1f}"
                ok = np.mean(acc) >= acc0 - 0.005 and np.mean(ll) <= ll0 + max(0.01, 0.02 * ll0)
                bound = "yes" if ok else "**no**"
            seconds = np.median([r["seconds"] for r in recs])
            lines.append(f"| {task} | {fraction:g} | {name} | {_cell(acc, 3)} | {_cell(ll, 3)} | {seconds:.1f} | "
                         f"{weights} | {bound} | {ratio} |")
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    command = "python benchmarks/bench_semi_supervised.py " + " ".join(argv if argv is not None else sys.argv[1:])
    print(f"load average at start (1, 5, 15 min): {', '.join(f'{v:.2f}' for v in os.getloadavg())}; "
          f"{os.cpu_count()} CPUs", flush=True)
    start = time.perf_counter()
    results = {}
    for task in args.tasks:
        results.update(run_task(TASKS.index(task), task, args))
    print()
    print(f"command: {command}")
    print(f"method={args.method}, weight_criterion={args.criterion}, {args.subsets} subsets, "
          f"total {time.perf_counter() - start:.0f} s; load average at end: "
          f"{', '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print()
    if results:
        print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
