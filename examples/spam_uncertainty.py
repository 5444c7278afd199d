"""Spam filtering with posterior uncertainty, on the SMS Spam Collection.

Fits a multinomial naive Bayes (Dirichlet prior on the word probabilities) to word counts
of the SMS corpus and asks what a point-estimate classifier cannot answer:

* how sure is the model of each prediction, and how much of that doubt would more data
  remove (epistemic) rather than being in the message itself (aleatoric)?
* which messages would a human look at first (highest epistemic uncertainty)?
* which words most raise p(spam), and how well does the posterior pin their weight down
  (credible intervals of each word's log-odds contribution)?

Run ``python examples/spam_uncertainty.py [--quick] [--out DIR] [--data-dir DIR]``. The
corpus is read in place from ``../shared/data`` (relative to the repository root) unless
``--data-dir`` says otherwise; without it the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = ROOT.parent / "shared" / "data"


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small run (about half a minute)")
    parser.add_argument("--out", metavar="DIR", help="write the figures here (PNG)")
    parser.add_argument("--data-dir", metavar="DIR", default=str(DEFAULT_DATA_DIR), help="the shared corpora")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    path = Path(args.data_dir) / "sms_spam_collection" / "SMSSpamCollection"
    if not path.is_file():
        print(f"skipped: {path} not found (pass --data-dir to the folder holding sms_spam_collection/)")
        return 0

    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.model_selection import train_test_split

    from bayesnb import MultinomialNB, compare
    from bayesnb.analysis.comparison import format_comparison
    from bayesnb.analysis.uncertainty import decompose_uncertainty, rank_by_epistemic, top_features
    from bayesnb.io.datasets import read_labelled_text

    texts, labels = read_labelled_text(path)
    docs = np.asarray(texts, dtype=object)
    if args.quick:  # a stratified sample of the corpus, and fewer posterior draws
        docs, _, labels, _ = train_test_split(docs, labels, train_size=1500, stratify=labels, random_state=args.seed)
    n_draws = 100 if args.quick else 1000
    d_train, d_test, y_train, y_test = train_test_split(
        docs, labels, test_size=0.3, stratify=labels, random_state=args.seed
    )
    # Words seen in at least two training messages: the vocabulary the posterior can learn.
    vectorizer = CountVectorizer(min_df=2)
    X_train = vectorizer.fit_transform(d_train)
    X_test = vectorizer.transform(d_test)
    words = vectorizer.get_feature_names_out()
    print(f"SMS Spam Collection: {len(y_train)} training / {len(y_test)} test messages, {len(words)} words")

    clf = MultinomialNB(alpha=1.0).fit(X_train, y_train)
    table = compare(clf, None, None, X_test, y_test, refit=False, n_bootstrap=200 if args.quick else 1000, as_frame=False)
    print(format_comparison(table, metrics=("accuracy", "log_loss", "brier", "ece")))
    print()

    # Uncertainty of each test prediction, from exact posterior draws.
    u = decompose_uncertainty(clf, X_test, n_draws=n_draws, random_state=args.seed)
    print(
        f"uncertainty per test message (nats, mean over {len(y_test)}): total {u.total.mean():.4f} = "
        f"aleatoric {u.aleatoric.mean():.4f} + epistemic {u.epistemic.mean():.4f}"
    )
    ranking = rank_by_epistemic(clf, X_test, top=5, n_draws=n_draws, random_state=args.seed)
    lo, hi = clf.predict_proba_interval(X_test[ranking.index], 0.9, n_draws=n_draws, random_state=args.seed)
    spam = list(clf.classes_).index("spam")
    print("messages whose prediction more data would change most (90% interval of p(spam)):")
    for rank, i in enumerate(ranking.index):
        text = " ".join(str(d_test[i]).split())[:70]
        print(
            f"  {ranking.epistemic[rank]:.3f}  [{lo[rank, spam]:.2f}, {hi[rank, spam]:.2f}]  "
            f"({y_test[i]}) {text}"
        )
    print()

    top = top_features(clf, "spam", 15, level=0.9, n_draws=n_draws, random_state=args.seed, feature_names=words)
    print(f"words that most raise p(spam): log-odds per occurrence, median [90% interval] ({n_draws} draws)")
    for word, m, a, b in zip(top.name, top.median, top.lower, top.upper):
        print(f"  {word:<12} {m:6.2f}  [{a:5.2f}, {b:5.2f}]")
    above = int(np.sum(top.lower > 0))
    print(f"{above} of these {len(top.feature)} words raise p(spam) with posterior probability > 95% (interval above 0)")

    if args.out:
        from bayesnb.analysis import plots

        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        ax = plots.top_features(clf, "spam", 15, feature_names=words, n_draws=n_draws, random_state=args.seed)
        ax.figure.savefig(out / "spam_top_words.png", dpi=110)
        ax = plots.uncertainty_histogram(decomposition=u)
        ax.figure.savefig(out / "spam_uncertainty.png", dpi=110)
        ax = plots.reliability_diagram(clf, X_test, y_test)
        ax.figure.savefig(out / "spam_reliability.png", dpi=110)
        print(f"figures: {out}/spam_top_words.png, spam_uncertainty.png, spam_reliability.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
