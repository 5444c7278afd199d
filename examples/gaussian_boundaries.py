"""Gaussian Bayes classifiers in two dimensions: linear (LDA) and quadratic (QDA) boundaries.

With a Gaussian class-conditional density the log-odds of two classes is a quadratic
function of x; when every class shares one covariance the quadratic terms cancel and the
boundary is a straight line (course notes, seed 002). ``GaussianBayesClassifier`` puts a
Normal-Inverse-Wishart prior on the means and covariances:

* ``covariance="shared"`` (Bayesian LDA): with a plug-in estimate the boundary is the line
  of ``coef_``/``intercept_``; ``estimate="mle"`` with the empirical class proportions is
  scikit-learn's ``LinearDiscriminantAnalysis(solver="lsqr")`` (checked below);
* ``covariance="full"`` (Bayesian QDA): conics (``quadratic_``);
* ``covariance="diag"``: Gaussian naive Bayes, axis-aligned conics;
* ``estimate="predictive"``: the exact posterior predictive, a multivariate Student-t per
  class, whose boundaries are close to but not exactly lines or conics, and whose
  probabilities are less extreme far from the data.

Run ``python examples/gaussian_boundaries.py [--quick] [--out DIR]``: prints the test
accuracy and log loss of each model and estimate, and with ``--out`` draws the boundaries.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small run (a few seconds)")
    parser.add_argument("--out", metavar="DIR", help="write the figures here (PNG)")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def three_gaussians(rng, n):
    """Three classes with different covariances: a case for QDA."""
    X = np.vstack(
        [
            rng.multivariate_normal([0.0, 0.0], [[1.0, 0.7], [0.7, 1.0]], n),
            rng.multivariate_normal([2.5, 1.0], [[0.3, 0.0], [0.0, 2.0]], n),
            rng.multivariate_normal([0.0, 3.0], [[1.5, -0.4], [-0.4, 0.3]], n),
        ]
    )
    return X, np.repeat(["a", "b", "c"], n)


def wine_two_features():
    """scikit-learn's bundled wine data, alcohol and flavanoids (standardised)."""
    from sklearn.datasets import load_wine

    d = load_wine()
    cols = [list(d.feature_names).index("alcohol"), list(d.feature_names).index("flavanoids")]
    X = d.data[:, cols]
    return (X - X.mean(0)) / X.std(0), d.target_names[d.target]


def main(argv=None):
    args = parse_args(argv)
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.metrics import accuracy_score, log_loss
    from sklearn.model_selection import train_test_split

    from bayesnb import GaussianBayesClassifier

    rng = np.random.default_rng(args.seed)
    data = {"three gaussians": three_gaussians(rng, 60 if args.quick else 200), "wine": wine_two_features()}
    out = Path(args.out) if args.out else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    for name, (X, y) in data.items():
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, stratify=y, random_state=args.seed)
        print(f"== {name}: {len(y_train)} training / {len(y_test)} test points, 2 features")
        fitted = {}
        for covariance in ("shared", "full", "diag"):
            clf = GaussianBayesClassifier(covariance=covariance).fit(X_train, y_train)
            fitted[covariance] = clf
            for estimate in ("mle", "mean", "predictive"):
                proba = clf.set_params(estimate=estimate).predict_proba(X_test)
                acc = accuracy_score(y_test, clf.classes_[proba.argmax(1)])
                print(f"  covariance={covariance:<6} estimate={estimate:<10} accuracy {acc:.3f}  "
                      f"log loss {log_loss(y_test, proba, labels=clf.classes_):.3f}")
        # The plug-in MLE of the shared model with empirical class proportions is scikit-learn's LDA.
        counts = np.unique(y_train, return_counts=True)[1]
        ours = GaussianBayesClassifier(covariance="shared", estimate="mle", class_prior=counts / counts.sum())
        ours.fit(X_train, y_train)
        lda = LinearDiscriminantAnalysis(solver="lsqr").fit(X_train, y_train)
        gap = np.abs(ours.predict_proba(X_test) - lda.predict_proba(X_test)).max()
        print(f"  shared + mle vs scikit-learn LDA(solver='lsqr'): max |difference in probability| {gap:.1e}")
        if out is not None:
            from matplotlib.figure import Figure

            from bayesnb.analysis import plots

            fig = Figure(figsize=(12, 10), layout="constrained")
            axes = fig.subplots(2, 2)
            cells = [("shared", "mean"), ("full", "mean"), ("shared", "predictive"), ("full", "predictive")]
            for ax, (covariance, estimate) in zip(axes.ravel(), cells):
                clf = fitted[covariance].set_params(estimate=estimate)
                plots.decision_boundary(clf, X, y, ax=ax, resolution=150 if args.quick else 300)
            slug = name.replace(" ", "_")
            fig.savefig(out / f"boundaries_{slug}.png", dpi=100)
            ax = plots.decision_boundary(fitted["diag"].set_params(estimate="mean"), X, y)
            ax.figure.savefig(out / f"boundaries_{slug}_diag.png", dpi=100)
            print(f"  figures: {out}/boundaries_{slug}.png, boundaries_{slug}_diag.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
