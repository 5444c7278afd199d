"""The best log loss any single temperature could reach on SMS: a diagnostic, not a model.

For each model, the 5-fold CV log loss (clipped at 1e-15, the folds of
``bench_calibration.py``) of the fitted model tempered by each ``T`` of a grid, read on
the *test* folds. The minimum over the grid is a lower bound for every choice of one
temperature made inside the training folds (``temperature="loo"`` included): if it is
above half scikit-learn's log loss, no choice of ``T`` meets that target. Also prints the
share of the log loss that comes from the misclassified messages, and two wider oracle
bounds fitted on the pooled test-fold log-odds themselves: Platt's ``a * log-odds + b``
(a temperature and a class-prior shift) and isotonic regression (any monotone
recalibration of the log-odds; optimistic, as it is fitted on the points it scores).

Run: ``python benchmarks/bench_temperature_ceiling.py``.
"""

from __future__ import annotations

import warnings

import numpy as np
from bench_calibration import load_sms, log_loss
from sklearn import naive_bayes as sknb
from sklearn.model_selection import StratifiedKFold

import bayesnb

GRID = (1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 7.0, 10.0)
MODELS = {
    "predictive": lambda: bayesnb.MultinomialNB(),
    "predictive, alpha=evidence": lambda: bayesnb.MultinomialNB(alpha="evidence"),
    "PolyaNB": lambda: bayesnb.PolyaNB(),
}


def main():
    X, y = load_sms()
    _, y = np.unique(y, return_inverse=True)
    folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(np.zeros(len(y)), y))
    base = np.mean([log_loss(y[te], sknb.MultinomialNB().fit(X[tr], y[tr]).predict_proba(X[te])) for tr, te in folds])
    print(f"sklearn MultinomialNB log loss {base:.4f}; target 0.5x = {base / 2:.4f}\n")
    print("| model | T | accuracy | log loss | ratio to sklearn | share of loss from errors |")
    print("| --- | --- | --- | --- | --- | --- |")
    oracles = {}
    for label, make in MODELS.items():
        out = np.zeros((len(GRID), 3))
        for tr, te in folds:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est = make().fit(X[tr], y[tr])
                for k, t in enumerate(GRID):
                    proba = np.asarray(est.update_prior(temperature=t).predict_proba(X[te]))
                    p = np.clip(proba[np.arange(te.size), y[te]], 1e-15, 1.0)
                    wrong = proba.argmax(axis=1) != y[te]
                    out[k] += (1 - wrong.mean(), log_loss(y[te], proba), np.log(p[wrong]).sum() / np.log(p).sum())
        out /= len(folds)
        for t, (acc, ll, share) in zip(GRID, out):
            print(f"| {label} | {t:g} | {acc:.4f} | {ll:.4f} | {ll / base:.3f} | {share:.2f} |")
        oracles[label] = recalibration_bounds(make, X, y, folds)
    print("\n| model | oracle recalibration of the log-odds | accuracy | log loss | ratio to sklearn |")
    print("| --- | --- | --- | --- | --- |")
    for label, bounds in oracles.items():
        for kind, (acc, ll) in bounds.items():
            print(f"| {label} | {kind} | {acc:.4f} | {ll:.4f} | {ll / base:.3f} |")


def recalibration_bounds(make, X, y, folds):
    """(accuracy, log loss) of Platt and isotonic maps fitted on the pooled test-fold log-odds."""
    from sklearn.isotonic import IsotonicRegression
    from sklearn.linear_model import LogisticRegression

    scores, labels = [], []
    for tr, te in folds:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            joint = np.asarray(make().fit(X[tr], y[tr]).predict_joint_log_proba(X[te]))
        scores.append(joint[:, 1] - joint[:, 0])
        labels.append(y[te])
    s, t = np.concatenate(scores), np.concatenate(labels)
    q_platt = LogisticRegression(C=1e6).fit(s[:, None], t).predict_proba(s[:, None])[:, 1]
    q_iso = IsotonicRegression(out_of_bounds="clip").fit(s, t).predict(s)
    return {
        kind: (float(((q > 0.5) == t).mean()), log_loss(t, np.column_stack([1 - q, q])))
        for kind, q in (("Platt (oracle)", q_platt), ("isotonic (oracle)", q_iso))
    }


if __name__ == "__main__":
    main()
