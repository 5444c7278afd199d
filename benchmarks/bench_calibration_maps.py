"""Which calibration map, fitted to exact leave-one-out scores, could reach CalibratedClassifierCV on small data?

``bench_calibration.py`` compares whole estimators; this script opens up the one verdict it
misses (issue 36 (a), wine: ``calibrate="loo"`` 0.1004 against ``CalibratedClassifierCV``
isotonic 0.0577). On the same outer folds (5-fold ``StratifiedKFold``, shuffled, seed 0)
it fits, to the training rows' exact leave-one-out class log-probabilities
(``estimator.loo_terms`` then :func:`bayesnb.analysis.loo.log_proba`):

* every family of :mod:`bayesnb.analysis.calibration` forced (``identity``, ``affine``,
  ``asinh``), and the one ``choose`` picks (what ``calibrate="loo"`` does);
* two maps outside the library, to see whether another family would do: a *floor*
  (:math:`(1-\\varepsilon)\\,p + \\varepsilon / C`, :math:`\\varepsilon` minimising the
  leave-one-out log loss: it never changes a decision and caps a confident mistake) and
  one-vs-rest *isotonic* regression of each class's probability, normalised (one fit, as
  one member of ``CalibratedClassifierCV``'s ensemble);

and prints the mean test log loss of each (probabilities clipped at 1e-15, as everywhere),
beside scikit-learn's naive Bayes and ``CalibratedClassifierCV(method="isotonic", cv=5)``,
and the share of the gap carried by the two test rows the model as written scores worst.

Run ``python benchmarks/bench_calibration_maps.py [--data wine,breast_cancer,digits]``.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

# The data, the folds and the clip of bench_calibration.py, so that its verdicts and
# these figures are on the same footing by construction.
from bench_calibration import EPS, FOLDS, SEED, load_digits, load_sklearn


def _data(name):
    import bayesnb

    if name == "digits":
        X, y = load_digits()
        return X, y, bayesnb.MultinomialNB, "MultinomialNB"
    X, y = load_sklearn(f"load_{name}")
    return X, y, bayesnb.GaussianNB, "GaussianNB"


def _row_loss(log_proba, y_index):
    """Each row's log loss, clipped like ``bench_calibration.log_loss`` (which gives their mean)."""
    return -np.maximum(log_proba[np.arange(y_index.size), y_index], np.log(EPS))


def _floor(loo_log_proba, y_index):
    from scipy.optimize import minimize_scalar

    n_classes = loo_log_proba.shape[1]

    def mapped(eps, lp):
        return np.logaddexp(np.log1p(-eps) + lp, np.log(eps / n_classes))

    eps = minimize_scalar(lambda e: _row_loss(mapped(e, loo_log_proba), y_index).mean(), bounds=(1e-12, 0.5),
                          method="bounded", options={"xatol": 1e-10}).x
    return lambda lp: mapped(eps, lp)


def _isotonic(loo_log_proba, y_index):
    from sklearn.isotonic import IsotonicRegression

    n_classes = loo_log_proba.shape[1]
    fits = [IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(np.exp(loo_log_proba[:, c]), y_index == c)
            for c in range(n_classes)]

    def mapped(lp):
        p = np.stack([fits[c].predict(np.exp(lp[:, c])) for c in range(n_classes)], axis=1)
        total = p.sum(axis=1, keepdims=True)
        p = np.where(total > 0, p / np.where(total > 0, total, 1.0), 1.0 / n_classes)
        with np.errstate(divide="ignore"):
            return np.log(p)

    return mapped


def run(name):
    from sklearn import naive_bayes as sknb
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.model_selection import StratifiedKFold

    from bayesnb.analysis import calibration as cal
    from bayesnb.analysis import loo as _loo

    X, y, Est, sk_name = _data(name)
    losses = {}
    for train, test in StratifiedKFold(FOLDS, shuffle=True, random_state=SEED).split(X, y):
        est = Est().fit(X[train], y[train])
        y_train = np.searchsorted(est.classes_, y[train])
        y_test = np.searchsorted(est.classes_, y[test])
        loo = _loo.log_proba(est.loo_terms(X[train], y[train]))
        lp = np.log(est.predict_proba(X[test]))
        maps = {f"{fam} (forced)": (lambda c: (lambda q: cal.apply(c, q)))(cal.fit_map(loo, y_train, fam))
                for fam in cal.FAMILIES}
        chosen = cal.choose(loo, y_train)
        maps[f"choose -> {chosen.family}"] = lambda q, c=chosen: cal.apply(c, q)
        maps["floor (not in the library)"] = _floor(loo, y_train)
        maps["isotonic, one fit (not in the library)"] = _isotonic(loo, y_train)
        sk = getattr(sknb, sk_name)()
        losses.setdefault(f"sklearn {sk_name}", []).append(_row_loss(np.log(sk.fit(X[train], y[train]).predict_proba(X[test])), y_test))
        ccv = CalibratedClassifierCV(getattr(sknb, sk_name)(), method="isotonic", cv=5).fit(X[train], y[train])
        with np.errstate(divide="ignore"):
            losses.setdefault("CCV isotonic", []).append(_row_loss(np.log(ccv.predict_proba(X[test])), y_test))
        for label, mapped in maps.items():
            key = "choose (calibrate='loo')" if label.startswith("choose") else label
            losses.setdefault(key, []).append(_row_loss(mapped(lp), y_test))
            if label.startswith("choose"):
                losses.setdefault("_picked", []).append(chosen.family)
    picked = losses.pop("_picked")
    print(f"\n## {name}: {X.shape[0]} rows, {X.shape[1]} features, {np.unique(y).size} classes; bayesnb.{Est.__name__}()")
    print(f"calibrate='loo' picked per fold: {picked}\n")
    print("| map fitted to the exact leave-one-out scores | mean test log loss | per fold |")
    print("| --- | --- | --- |")
    for label, folds in losses.items():
        per_fold = ", ".join(f"{f.mean():.3f}" for f in folds)
        print(f"| {label} | {np.mean([f.mean() for f in folds]):.4f} | {per_fold} |")
    identity = np.concatenate(losses["identity (forced)"])
    iso = np.concatenate(losses["CCV isotonic"])
    worst = np.argsort(-identity)[:2]
    print(f"\nTotal test loss (nats, all rows): model as written {identity.sum():.2f}, CCV isotonic {iso.sum():.2f}; "
          f"its two worst rows: {identity[worst].round(2).tolist()} nats as written, {iso[worst].round(2).tolist()} "
          f"under CCV isotonic ({(identity[worst] - iso[worst]).sum():.2f} of the {identity.sum() - iso.sum():.2f} nats "
          "between them).")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="wine,breast_cancer,digits", help="comma-separated: wine, breast_cancer, digits")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    for name in args.data.split(","):
        run(name.strip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
