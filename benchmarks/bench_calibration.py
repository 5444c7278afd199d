"""Calibration of naive Bayes on real data: scikit-learn, every bayesnb estimate, tempered, Pólya.

5-fold stratified cross-validation (the same folds for every model) on the SMS Spam
Collection and 20 Newsgroups (word counts, from ``../shared/data``; 20NG subsampled with
``--n-20ng``), scikit-learn's ``load_wine`` and ``load_breast_cancer`` (Gaussian
features) and the UCI mushroom table (categorical). For every model: accuracy, log loss
with the probabilities clipped at 1e-15 for all models alike, and the expected
calibration error (15 equal-width bins of the top-class probability). Prints a Markdown
table and the ratio of each model's log loss to scikit-learn's naive Bayes measured in
the same run, and the chosen temperatures (median over folds).

Run: ``python benchmarks/bench_calibration.py [--n-20ng 4000] [--quick]``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn import naive_bayes as sknb
from sklearn.base import clone
from sklearn.model_selection import StratifiedKFold

import bayesnb

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
if not DATA.exists():  # a worktree beside the repository
    DATA = Path("/work/shared/data")
EPS = 1e-15


def log_loss(y_index, proba):
    p = np.clip(proba[np.arange(y_index.size), y_index], EPS, 1.0)
    return float(-np.mean(np.log(p)))


def ece(y_index, proba, bins=15):
    conf = proba.max(axis=1)
    correct = proba.argmax(axis=1) == y_index
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.digitize(conf, edges[1:-1]), 0, bins - 1)
    total = 0.0
    for b in range(bins):
        sel = which == b
        if sel.any():
            total += sel.mean() * abs(correct[sel].mean() - conf[sel].mean())
    return float(total)


def text_counts(texts, min_df=2):
    from sklearn.feature_extraction.text import CountVectorizer

    return CountVectorizer(min_df=min_df).fit_transform(texts).tocsr()


def load_sms():
    from bayesnb.io.datasets import read_labelled_text

    texts, labels = read_labelled_text(DATA / "sms_spam_collection" / "SMSSpamCollection")
    return text_counts(texts), np.asarray(labels)


def load_20ng(n, seed=0):
    from bayesnb.io.datasets import read_20newsgroups_bydate

    path = DATA / "20newsgroups_bydate" / "20news-bydate.tar.gz"
    a, ya = read_20newsgroups_bydate(path, subset="train")
    b, yb = read_20newsgroups_bydate(path, subset="test")
    texts, y = list(a) + list(b), np.concatenate([ya, yb])
    if n and n < len(texts):
        keep = np.sort(np.random.default_rng(seed).choice(len(texts), n, replace=False))
        texts, y = [texts[i] for i in keep], y[keep]
    return text_counts(texts), y


def load_mushroom():
    from bayesnb.io.datasets import read_categorical_table

    X, y = read_categorical_table(DATA / "uci_mushroom" / "agaricus-lepiota.data", label_column=0)
    codes = np.stack([np.unique(col, return_inverse=True)[1] for col in X.T], axis=1)
    return codes, y


def load_sklearn(name):
    from sklearn import datasets

    data = getattr(datasets, name)()
    return data.data, data.target


def models(kind):
    """(label, estimator) pairs: scikit-learn's naive Bayes first, then bayesnb's."""
    if kind == "counts":
        sk, ours, extra = sknb.MultinomialNB(), bayesnb.MultinomialNB, [("predictive, alpha=evidence", dict(alpha="evidence"))]
    elif kind == "real":
        sk, ours, extra = sknb.GaussianNB(), bayesnb.GaussianNB, []
    else:
        sk, ours, extra = sknb.CategoricalNB(), bayesnb.CategoricalNB, []
    out = [(f"sklearn {type(sk).__name__}", sk)]
    for est in ("mle", "map", "mean", "predictive"):
        out.append((f"bayesnb {est}", ours(estimate=est)))
    for label, kw in extra:
        out.append((f"bayesnb {label}", ours(**kw)))
    out.append(("bayesnb predictive, temperature=loo", ours(temperature="loo")))
    if kind == "counts":
        out.append(("bayesnb predictive, alpha=evidence, temperature=loo", ours(alpha="evidence", temperature="loo")))
        out.append(("bayesnb PolyaNB", bayesnb.PolyaNB()))
        out.append(("bayesnb PolyaNB, temperature=loo", bayesnb.PolyaNB(temperature="loo")))
    return out


def evaluate(name, X, y, kind, folds=5, seed=0):
    classes, y_index = np.unique(y, return_inverse=True)
    rows = {}
    temps = {}
    times = {}
    for train, test in StratifiedKFold(folds, shuffle=True, random_state=seed).split(np.zeros(len(y)), y_index):
        for label, est in models(kind):
            est = clone(est)
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    est.fit(X[train], y_index[train])
                    proba = np.asarray(est.predict_proba(X[test]))
                except ValueError as err:  # e.g. MAP undefined below concentration 1
                    rows.setdefault(label, []).append((np.nan, np.nan, np.nan))
                    times.setdefault(label, []).append(np.nan)
                    print(f"  {name} {label}: {err}")
                    continue
            times.setdefault(label, []).append(time.perf_counter() - t0)
            # Columns by class index (a fold may miss a class only in degenerate data).
            full = np.zeros((len(test), classes.size))
            full[:, np.asarray(est.classes_, dtype=int)] = proba
            yt = y_index[test]
            rows.setdefault(label, []).append(
                ((full.argmax(axis=1) == yt).mean(), log_loss(yt, full), ece(yt, full))
            )
            if hasattr(est, "temperature_") and est.temperature != 1.0:
                temps.setdefault(label, []).append(est.temperature_)
    return {
        label: (np.mean(v, axis=0), np.median(temps.get(label, [1.0])), np.nanmedian(times[label]))
        for label, v in rows.items()
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-20ng", type=int, default=4000, help="documents of 20 Newsgroups (0: all 18,846)")
    parser.add_argument("--quick", action="store_true", help="Gaussian and categorical data sets only")
    parser.add_argument("--only", default=None, help="comma-separated data set names")
    args = parser.parse_args(argv)
    sets = [
        ("wine", lambda: load_sklearn("load_wine"), "real"),
        ("breast cancer", lambda: load_sklearn("load_breast_cancer"), "real"),
        ("mushroom", load_mushroom, "codes"),
    ]
    if not args.quick:
        sets = [("SMS", load_sms, "counts"), (f"20NG ({args.n_20ng or 'all'} docs)", lambda: load_20ng(args.n_20ng), "counts")] + sets
    if args.only:
        wanted = {s.strip() for s in args.only.split(",")}
        sets = [s for s in sets if s[0].split(" ")[0] in wanted]
    for name, load, kind in sets:
        X, y = load()
        print(f"\n### {name}: {X.shape[0]} rows, {X.shape[1]} features, {np.unique(y).size} classes\n")
        res = evaluate(name, X, y, kind)
        base = next(iter(res.values()))[0][1]
        print("| model | accuracy | log loss | ratio to sklearn | ECE | T (median) | fit+predict s (median) |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for label, ((acc, ll, e), t, sec) in res.items():
            print(f"| {label} | {acc:.4f} | {ll:.4f} | {ll / base:.3f} | {e:.4f} | {t:.3g} | {sec:.2f} |")


if __name__ == "__main__":
    main()
