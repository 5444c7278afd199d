"""Which number belongs beside a credible interval, on the SMS Spam Collection.

A multinomial naive Bayes gives, for each message, several numbers called "the
probability of spam": the plug-in MAP and posterior-mean estimates, the exact posterior
predictive p(spam | x, D), and the posterior draws of p(spam | x, theta, pi) with their
median and 90% interval. This script shows, on real messages:

* how often the exact predictive lies outside the 90% interval of the fitted posterior
  p(theta, pi | D) (the interval ``predict_proba_interval`` gives by default), and that
  the median of the same draws never does;
* that the exact predictive is the mean of p(spam | x, theta, pi) under the posterior
  updated by the message itself, p(theta, pi | D, x) (``posterior="updated"``), and that a
  mean of a skewed distribution may still lie outside that distribution's own interval.

Run ``python examples/interval_points.py [--quick] [--out DIR] [--data-dir DIR]``. The
corpus is read in place from ``../shared/data`` unless ``--data-dir`` says otherwise;
without it the script says so and exits 0. With ``--out`` it writes
``interval_points.png``: the two posteriors' draws for the longest test message.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = ROOT.parent / "shared" / "data"


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small run (under a minute)")
    parser.add_argument("--out", metavar="DIR", help="write the figure here (PNG)")
    parser.add_argument("--data-dir", metavar="DIR", default=str(DEFAULT_DATA_DIR), help="the shared corpora")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def _fmt(lo, med, hi):
    return f"{med:9.3g} [{lo:9.3g}, {hi:9.3g}]"


def main(argv=None):
    args = parse_args(argv)
    path = Path(args.data_dir) / "sms_spam_collection" / "SMSSpamCollection"
    if not path.is_file():
        print(f"skipped: {path} not found (pass --data-dir to the folder holding sms_spam_collection/)")
        return 0

    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.model_selection import train_test_split

    from bayesnb import MultinomialNB
    from bayesnb.io.datasets import read_labelled_text

    texts, labels = read_labelled_text(path)
    docs = np.asarray(texts, dtype=object)
    train_size = 300 if args.quick else 1000
    d_train, d_test, y_train, _ = train_test_split(
        docs, labels, train_size=train_size, test_size=1000, stratify=labels, random_state=args.seed
    )
    vectorizer = CountVectorizer()
    X_train = vectorizer.fit_transform(d_train)
    X_test = vectorizer.transform(d_test)
    n_draws = 300 if args.quick else 1000
    clf = MultinomialNB(alpha=1.0).fit(X_train, y_train)
    spam = list(clf.classes_).index("spam")
    print(
        f"SMS Spam Collection: MultinomialNB(alpha=1) on {len(y_train)} messages, {X_train.shape[1]} words; "
        f"{X_test.shape[0]} test messages, {n_draws} posterior draws"
    )

    exact = clf.set_params(estimate="predictive").predict_proba(X_test)[:, spam]
    lo, hi, med = clf.predict_proba_interval(X_test, 0.9, n_draws=n_draws, random_state=args.seed, return_median=True)
    lo, hi, med = lo[:, spam], hi[:, spam], med[:, spam]
    outside = (exact < lo) | (exact > hi)
    print(
        f"exact predictive p(spam | x, D) outside the fitted posterior's 90% interval: {int(outside.sum())} of "
        f"{outside.size} messages; the median of the same draws: {int(((med < lo) | (med > hi)).sum())}"
    )

    # The updated posterior costs a full set of draws per message: the longest messages,
    # where the message itself moves the parameters most, and the most outside.
    length = np.asarray(X_test.sum(axis=1)).ravel()
    chosen = np.argsort(-length, kind="stable")[: 3 if args.quick else 6]
    ulo, uhi, umed = clf.predict_proba_interval(
        X_test[chosen], 0.9, n_draws=n_draws, random_state=args.seed, posterior="updated", return_median=True
    )
    import warnings

    from bayesnb.exceptions import ZeroLikelihoodWarning

    with warnings.catch_warnings():
        # MAP at alpha = 1 is the MLE: a word never seen in a class makes the message
        # impossible there (p = 0), which is the point of showing it.
        warnings.simplefilter("ignore", ZeroLikelihoodWarning)
        point = {e: clf.set_params(estimate=e).predict_proba(X_test[chosen])[:, spam] for e in ("map", "mean")}
    clf.set_params(estimate="predictive")
    print()
    print(f"{'words':>5}  {'MAP':>9}  {'mean':>9}  {'predictive':>10}  {'fitted: median [90% interval]':>33}  "
          f"{'updated: median [90% interval]':>33}")
    for j, i in enumerate(chosen):
        print(
            f"{int(length[i]):5d}  {point['map'][j]:9.3g}  {point['mean'][j]:9.3g}  {exact[i]:10.3g}  "
            f"{_fmt(lo[i], med[i], hi[i]):>33}  {_fmt(ulo[j, spam], umed[j, spam], uhi[j, spam]):>33}"
        )
    print()
    print(
        "The predictive is the mean of the updated posterior's draws; the fitted posterior's median and interval "
        "describe p(spam | x, theta, pi) before the message is seen."
    )

    if args.out:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        row = X_test[chosen[:1]]
        fitted = clf.predict_proba_draws(row, n_draws, random_state=args.seed)[:, 0, spam]
        updated = clf.predict_proba_draws(row, n_draws, random_state=args.seed, posterior="updated")[:, 0, spam]
        tiny = np.finfo(float).tiny
        fig, ax = plt.subplots(figsize=(8, 4), layout="constrained")
        logs = [np.log10(np.maximum(d, tiny)) for d in (fitted, updated)]
        bins = np.linspace(min(v.min() for v in logs), max(v.max() for v in logs), 50)
        for values, name, color in zip(logs, ("fitted p(θ, π | D)", "updated p(θ, π | D, x)"), ("C0", "C1")):
            ax.hist(values, bins=bins, alpha=0.5, color=color, label=f"draws under the {name}")
            q = np.quantile(values, [0.05, 0.5, 0.95])
            ax.axvspan(q[0], q[2], color=color, alpha=0.08)
            ax.axvline(q[1], color=color, linestyle="--", linewidth=1)
        for name, value, style in (("exact predictive", exact[chosen[0]], "-"), ("posterior-mean plug-in", point["mean"][0], ":")):
            ax.axvline(np.log10(max(value, tiny)), color="k", linestyle=style, label=f"{name} {value:.2g}")
        ax.set_xlabel("log10 p(spam | x, θ, π)")
        ax.set_ylabel("draws")
        ax.set_title(f"the longest test message ({int(length[chosen[0]])} words): shaded 90% intervals, dashed medians")
        ax.legend(fontsize=8)
        target = out / "interval_points.png"
        fig.savefig(target, dpi=110)
        plt.close(fig)
        print(f"figure: {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
