r"""A hyperprior on the multinomial's alpha, integrated out by NUTS, on 20 Newsgroups.

``MultinomialNB(alpha=dist.Gamma(2, 1))`` on the bydate training set (20 groups, word
counts from scikit-learn's ``CountVectorizer(min_df=5)``): NUTS on the collapsed model
(the closed-form evidence of the training set as the likelihood of alpha, plus the
Gamma(2, 1) log density) and the integrated predictive on the bydate test set. Printed:

* the NUTS time (the whole ``fit``: statistics once, then NUTS over alpha, then the mode)
  and that of ``alpha="evidence"`` (type-II maximum likelihood) in the same run;
* r_hat, bulk ESS and divergences of alpha;
* alpha's posterior mean and sd, its posterior mode, and the evidence maximum;
* test accuracy, log loss and expected calibration error (15 bins) of scikit-learn's
  ``MultinomialNB(alpha=<evidence maximum>)`` (posterior-mean plug-in, empirical class
  proportions), bayesnb's predictive at the evidence maximum, and the integrated
  predictive, with the predict times.

Run ``python benchmarks/hyperprior_20ng.py [--warmup 300 --draws 300 --chains 2]``; the
archive is read in place from ``../shared/data/20newsgroups_bydate/20news-bydate.tar.gz``
(relative to the repository root) or ``--data``; without it the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's bayesnb, not an installed one
DEFAULT = ROOT.parent / "shared" / "data" / "20newsgroups_bydate" / "20news-bydate.tar.gz"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(DEFAULT), help="20news-bydate.tar.gz")
    p.add_argument("--min-df", type=int, default=5)
    p.add_argument("--chains", type=int, default=2)
    p.add_argument("--warmup", type=int, default=300)
    p.add_argument("--draws", type=int, default=300)
    p.add_argument("--predict-draws", type=int, default=20, help="draws of alpha the integrated predictive averages")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    path = Path(args.data)
    if not path.exists():
        print(f"20 Newsgroups archive not found at {path}; nothing to do.")
        return 0
    import numpyro.distributions as dist
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.metrics import accuracy_score, log_loss
    from sklearn.naive_bayes import MultinomialNB as SkMultinomialNB

    from bayesnb import MultinomialNB
    from bayesnb.analysis.comparison import metric_values
    from bayesnb.io.datasets import read_20newsgroups_bydate

    train_text, y_train = read_20newsgroups_bydate(path, "train")
    test_text, y_test = read_20newsgroups_bydate(path, "test")
    vec = CountVectorizer(min_df=args.min_df)
    X_train = vec.fit_transform(train_text).tocsr()
    X_test = vec.transform(test_text).tocsr()
    print(f"20 Newsgroups bydate: {X_train.shape[0]} training and {X_test.shape[0]} test documents, "
          f"{X_train.shape[1]} words (min_df={args.min_df}), {np.unique(y_train).size} classes")

    t = time.perf_counter()
    eb = MultinomialNB(alpha="evidence").fit(X_train, y_train)
    t_eb = time.perf_counter() - t
    t = time.perf_counter()
    hyper = MultinomialNB(
        alpha=dist.Gamma(2.0, 1.0),
        hyper_chains=args.chains,
        hyper_warmup=args.warmup,
        hyper_draws=args.draws,
        hyper_predict_draws=args.predict_draws,
        random_state=args.seed,
    ).fit(X_train, y_train)
    t_nuts = time.perf_counter() - t
    a = hyper.hyper_posterior_["alpha"]
    diag = hyper.hyper_diagnostics_
    print(f"\nfit with alpha ~ Gamma(2, 1) (NUTS: {args.chains} chains x ({args.warmup} warm-up + {args.draws} draws)): "
          f"{t_nuts:.1f} s; alpha='evidence': {t_eb:.2f} s  (ratio {t_nuts / t_eb:.1f})")
    print(f"r_hat {float(diag['r_hat']['alpha']):.4f}, ESS {float(diag['ess']['alpha']):.0f}, "
          f"divergences {diag['divergences']}")
    print(f"alpha posterior mean {a.mean():.5f}, sd {a.std(ddof=1):.5f}, 90% interval "
          f"[{np.quantile(a, 0.05):.5f}, {np.quantile(a, 0.95):.5f}]; posterior mode {float(hyper.hyper_mode_['alpha']):.5f}; "
          f"evidence maximum {eb.alpha_:.5f} (z = {(eb.alpha_ - a.mean()) / a.std(ddof=1):+.2f} posterior sd)")

    rows = []
    classes = eb.classes_
    counts = np.bincount(np.searchsorted(classes, y_train), minlength=classes.size)
    sk = SkMultinomialNB(alpha=eb.alpha_, class_prior=counts / counts.sum()).fit(X_train, y_train)
    for name, model in [
        (f"scikit-learn MultinomialNB(alpha={eb.alpha_:.4f})", sk),
        ("bayesnb predictive at the evidence maximum", eb),
        (f"bayesnb predictive, alpha integrated ({hyper.hyper_predict_index_.size} draws)", hyper),
    ]:
        t = time.perf_counter()
        proba = model.predict_proba(X_test)
        elapsed = time.perf_counter() - t
        metrics = metric_values(y_test, proba, classes)
        rows.append((name, accuracy_score(y_test, classes[proba.argmax(1)]),
                     log_loss(y_test, proba, labels=classes), metrics["ece"], elapsed))
    print(f"\n{'model':<62} {'accuracy':>9} {'log loss':>9} {'ECE':>7} {'predict s':>10}")
    for name, acc, ll, ece, el in rows:
        print(f"{name:<62} {acc:9.4f} {ll:9.4f} {ece:7.4f} {el:10.2f}")
    print(f"(predict time ratio integrated / scikit-learn: {rows[2][4] / rows[0][4]:.0f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
