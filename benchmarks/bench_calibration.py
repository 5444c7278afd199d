"""Calibration of naive Bayes on real data: scikit-learn, CalibratedClassifierCV, logistic regression, every bayesnb estimate, tempered, calibrated, Pólya.

5-fold stratified cross-validation (seed 0, the same folds for every model) on the SMS
Spam Collection and 20 Newsgroups (word counts, from ``../shared/data``; 20NG subsampled
with ``--n-20ng``), scikit-learn's ``load_wine`` and ``load_breast_cancer`` (Gaussian
features) and ``load_digits`` (pixel values 0..16 as counts), and the UCI mushroom and
car evaluation tables (categorical). For every model: accuracy, log loss with the
probabilities clipped at 1e-15 for all models alike, the Brier score (mean over rows of
the sum over classes of :math:`(p_c - 1[y = c])^2`), the expected calibration error (15
equal-width bins of the top-class probability), and the median over folds of the fit
and of the fit + predict seconds. The rows:

* scikit-learn's naive Bayes of the matching kind (the baseline of the ratios);
* ``CalibratedClassifierCV`` of it (``method="sigmoid"`` and ``"isotonic"``, ``cv=5``);
* ``LogisticRegression`` as a reference (tf-idf + C=10 on word counts, standardised
  features on real values and digits, one-hot codes on categories);
* bayesnb's estimates mle / map / mean / predictive, ``temperature="loo"``,
  ``calibrate="loo"`` (predictive; also ``estimate="mean"`` on counts), and on counts
  ``alpha="evidence"`` and ``PolyaNB``.

After each table a verdict block checks the targets of the calibration issue (MET /
MISSED, with the numbers) and sets the fit time of ``calibrate="loo"`` beside that of
``CalibratedClassifierCV`` from the same run. ``--plots DIR`` writes a reliability
diagram per data set (10 equal-width bins of the top-class probability, out-of-fold
predictions pooled over the folds). Full tracebacks of models that fail go to stderr.

On a shared, loaded machine pass ``--blas-threads 1``: with two OpenBLAS threads a dot
product of a few thousand entries can wait milliseconds for the second thread, and
the fit of ``calibrate="loo"`` (an L-BFGS over ~1,000 such products) then took 40 s
instead of 1 s on digits (results/bench_calibration-2026-12-01.md). The limit applies
to every model alike and is printed in the header with the machine and the git commit.

Run: ``python benchmarks/bench_calibration.py [--n-20ng 4000] [--quick] [--only SMS,car] [--plots DIR] [--blas-threads 1]``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import time
import traceback
import warnings
from pathlib import Path

import numpy as np
from sklearn import naive_bayes as sknb
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.feature_extraction.text import TfidfTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import bayesnb

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
if not DATA.exists():  # a worktree beside the repository
    DATA = Path("/work/shared/data")
EPS = 1e-15
FOLDS = 5
SEED = 0

# Labels of the rows the verdicts read.
SK, SIG, ISO = "sklearn NB", "CCV sigmoid", "CCV isotonic"
PRED, CAL, CAL_MEAN = "bayesnb predictive", "bayesnb predictive, calibrate=loo", "bayesnb mean, calibrate=loo"


def log_loss(y_index, proba):
    p = np.clip(proba[np.arange(y_index.size), y_index], EPS, 1.0)
    return float(-np.mean(np.log(p)))


def brier(y_index, proba):
    onehot = np.zeros_like(proba)
    onehot[np.arange(y_index.size), y_index] = 1.0
    return float(np.mean(np.sum((proba - onehot) ** 2, axis=1)))


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


def _codes(path, label_column):
    """A categorical table as integer codes 0..K_j-1, the levels of each column numbered over the whole table."""
    from bayesnb.io.datasets import read_categorical_table

    X, y = read_categorical_table(path, label_column=label_column)
    codes = np.stack([np.unique(col, return_inverse=True)[1] for col in X.T], axis=1)
    return codes, y


def load_mushroom():
    return _codes(DATA / "uci_mushroom" / "agaricus-lepiota.data", 0)


def load_car():
    return _codes(DATA / "uci_car_evaluation" / "car.data", -1)


def load_sklearn(name):
    from sklearn import datasets

    data = getattr(datasets, name)()
    return data.data, data.target


def load_digits():
    from bayesnb.io.datasets import load_digits_counts

    return load_digits_counts()


def logistic(kind, text, n_levels):
    """The logistic-regression reference row of a data set: (label, estimator)."""
    lr = LogisticRegression(max_iter=2000)
    if kind == "counts" and text:
        return "LogisticRegression (tf-idf, C=10)", make_pipeline(TfidfTransformer(), LogisticRegression(C=10, max_iter=2000))
    if kind == "codes":
        # Every level of the whole table is a column, so a level missing from a training
        # fold is a known column with no weight rather than an unknown one.
        enc = OneHotEncoder(categories=[np.arange(k) for k in n_levels], handle_unknown="ignore")
        return "LogisticRegression (one-hot, C=1)", make_pipeline(enc, lr)
    return "LogisticRegression (standardised, C=1)", make_pipeline(StandardScaler(), lr)


def models(kind, text=False, n_levels=None):
    """(label, estimator) pairs: scikit-learn's naive Bayes first (the baseline), then the others."""
    if kind == "counts":
        sk, ours, extra = sknb.MultinomialNB(), bayesnb.MultinomialNB, [("predictive, alpha=evidence", dict(alpha="evidence"))]
        common = {}
    elif kind == "real":
        sk, ours, extra = sknb.GaussianNB(), bayesnb.GaussianNB, []
        common = {}
    else:
        # The number of levels of each column over the whole table, for every model alike.
        sk, ours, extra = sknb.CategoricalNB(min_categories=n_levels), bayesnb.CategoricalNB, []
        common = dict(min_categories=n_levels)
    out = [(SK, sk)]
    out.append((SIG, CalibratedClassifierCV(clone(sk), method="sigmoid", cv=5)))
    out.append((ISO, CalibratedClassifierCV(clone(sk), method="isotonic", cv=5)))
    out.append(logistic(kind, text, n_levels))
    for est in ("mle", "map", "mean", "predictive"):
        out.append((f"bayesnb {est}", ours(estimate=est, **common)))
    for label, kw in extra:
        out.append((f"bayesnb {label}", ours(**kw, **common)))
    out.append(("bayesnb predictive, temperature=loo", ours(temperature="loo", **common)))
    out.append((CAL, ours(calibrate="loo", **common)))
    if kind == "counts":
        out.append((CAL_MEAN, ours(estimate="mean", calibrate="loo")))
        out.append(("bayesnb predictive, alpha=evidence, temperature=loo", ours(alpha="evidence", temperature="loo")))
        out.append(("bayesnb PolyaNB", bayesnb.PolyaNB()))
        out.append(("bayesnb PolyaNB, temperature=loo", bayesnb.PolyaNB(temperature="loo")))
    return out


class Result:
    """Per-model results of one data set: per-fold metrics and times, pooled out-of-fold probabilities."""

    def __init__(self, n, n_classes):
        self.n, self.n_classes = n, n_classes
        self.metrics, self.fit_s, self.total_s = {}, {}, {}
        self.temps, self.maps, self.warned, self.failed = {}, {}, {}, {}
        self.oof = {}

    def add(self, label, test, yt, full, fit_s, total_s):
        self.metrics.setdefault(label, []).append(
            ((full.argmax(axis=1) == yt).mean(), log_loss(yt, full), brier(yt, full), ece(yt, full))
        )
        self.fit_s.setdefault(label, []).append(fit_s)
        self.total_s.setdefault(label, []).append(total_s)
        self.oof.setdefault(label, np.full((self.n, self.n_classes), np.nan))[test] = full

    def fail(self, label, err):
        self.metrics.setdefault(label, []).append((np.nan,) * 4)
        self.fit_s.setdefault(label, []).append(np.nan)
        self.total_s.setdefault(label, []).append(np.nan)
        self.failed.setdefault(label, []).append(f"{type(err).__name__}: {err}")

    def mean(self, label):
        return np.mean(self.metrics[label], axis=0)

    def median_s(self, label, which="total"):
        v = np.asarray((self.total_s if which == "total" else self.fit_s)[label], dtype=float)
        return float(np.nanmedian(v)) if np.isfinite(v).any() else np.nan


def evaluate(name, X, y, kind, text=False, n_levels=None, folds=FOLDS, seed=SEED):
    classes, y_index = np.unique(y, return_inverse=True)
    res = Result(len(y_index), classes.size)
    res.unseen = []
    for train, test in StratifiedKFold(folds, shuffle=True, random_state=seed).split(np.zeros(len(y)), y_index):
        if kind == "codes":
            # Test rows holding a level that no training row of the fold has.
            seen = [np.unique(X[train, j]) for j in range(X.shape[1])]
            res.unseen.append(int(np.any([~np.isin(X[test, j], s) for j, s in enumerate(seen)], axis=0).sum()))
        for label, est in models(kind, text, n_levels):
            est = clone(est)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    t0 = time.perf_counter()
                    est.fit(X[train], y_index[train])
                    t1 = time.perf_counter()
                    proba = np.asarray(est.predict_proba(X[test]))
                    t2 = time.perf_counter()
                except Exception as err:  # reported, never hidden: one line here, the traceback on stderr
                    res.fail(label, err)
                    print(f"  {name} {label}: {type(err).__name__}: {err}")
                    print(f"--- {name} / {label}:", file=sys.stderr)
                    traceback.print_exc(file=sys.stderr)
                    continue
            for w in caught:
                res.warned.setdefault(label, set()).add(f"{w.category.__name__}: {str(w.message).splitlines()[0][:120]}")
            # Columns by class index (a fold may miss a class only in degenerate data).
            full = np.zeros((len(test), classes.size))
            full[:, np.asarray(est.classes_, dtype=int)] = proba
            res.add(label, test, y_index[test], full, t1 - t0, t2 - t0)
            if hasattr(est, "temperature_") and est.temperature != 1.0:
                res.temps.setdefault(label, []).append(est.temperature_)
            if getattr(est, "calibrate", None) == "loo":
                res.maps.setdefault(label, []).append(est.calibration_)
    res.y_index = y_index
    return res


def _map_summary(maps):
    fams = [m.family for m in maps]
    counts = ", ".join(f"{f} x{fams.count(f)}" for f in ("identity", "affine", "asinh") if f in fams)
    scales = [m.scale for m in maps if m.family != "identity"]
    sig = [m.compression for m in maps if m.family == "asinh"]
    extra = f"; a {np.median(scales):.3g}" if scales else ""
    extra += f", sigma {np.median(sig):.3g}" if sig else ""
    return counts + extra


def table(res):
    base = res.mean(SK)[1]
    print("| model | accuracy | log loss | ratio to sklearn | Brier | ECE | T / map (folds) | fit s | fit+predict s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for label in res.metrics:
        acc, ll, br, e = res.mean(label)
        if label in res.maps:
            note = _map_summary(res.maps[label])
        elif label in res.temps:
            note = f"T {np.median(res.temps[label]):.3g}"
        else:
            note = ""
        shown = label if label != SK else f"sklearn {type(models_of(res)[0][1]).__name__}"
        print(
            f"| {shown} | {acc:.4f} | {ll:.4f} | {ll / base:.3f} | {br:.4f} | {e:.4f} | {note} | "
            f"{res.median_s(label, 'fit'):.3f} | {res.median_s(label):.3f} |"
        )


def models_of(res):
    return models(res.kind, res.text, res.n_levels)


def _status(ok):
    return "**MET**" if ok else "**MISSED**"


def verdicts(res):
    """The issue's targets on this data set, each MET or MISSED with its numbers."""
    fold_rows = res.n / FOLDS
    one_row = 1.0 / fold_rows
    acc_sk, ll_sk = res.mean(SK)[:2]
    ll_sig, ll_iso = res.mean(SIG)[1], res.mean(ISO)[1]
    acc_pred, ll_pred = res.mean(PRED)[:2]
    print(
        f"\nVerdicts (one test row per fold = 1/{fold_rows:.0f} = {one_row:.4f} of accuracy; "
        f"sklearn NB: accuracy {acc_sk:.4f}, log loss {ll_sk:.4f}):\n"
    )
    cal_rows = [CAL] + ([CAL_MEAN] if CAL_MEAN in res.metrics else [])
    for label in cal_rows:
        acc_c, ll_c = res.mean(label)[:2]
        who = 'calibrate="loo"' if label == CAL else 'estimate="mean", calibrate="loo"'
        best = min(ll_sig, ll_iso)
        tol = max(0.005, one_row)
        print(f"* ({'a' if label == CAL else 'a′'}) {who} log loss {ll_c:.4f} ≤ min(CCV sigmoid {ll_sig:.4f}, "
              f"CCV isotonic {ll_iso:.4f}) = {best:.4f}: {_status(ll_c <= best)}")
        print(f"* ({'b' if label == CAL else 'b′'}) {who} accuracy {acc_c:.4f} ≥ sklearn NB {acc_sk:.4f} − "
              f"max(0.005, {one_row:.4f}) = {acc_sk - tol:.4f}: {_status(acc_c >= acc_sk - tol)}")
        print(f"* ({'c' if label == CAL else 'c′'}) {who} log loss {ll_c:.4f} ≤ sklearn NB {ll_sk:.4f}: "
              f"{_status(ll_c <= ll_sk)}")
    ok_ll, ok_acc = ll_pred <= ll_sk + 0.01, acc_pred >= acc_sk - one_row
    print(f"* (d) bayesnb default (predictive, no calibration) log loss {ll_pred:.4f} ≤ {ll_sk:.4f} + 0.01 = "
          f"{ll_sk + 0.01:.4f}: {_status(ok_ll)}; accuracy {acc_pred:.4f} ≥ {acc_sk:.4f} − {one_row:.4f} = "
          f"{acc_sk - one_row:.4f}: {_status(ok_acc)}")
    f_cal, f_sig, f_iso = res.median_s(CAL, "fit"), res.median_s(SIG, "fit"), res.median_s(ISO, "fit")
    f_pred, f_sk = res.median_s(PRED, "fit"), res.median_s(SK, "fit")
    print(
        f"\nFit time (median over folds, same run): calibrate=\"loo\" {f_cal:.3f} s; CCV sigmoid {f_sig:.3f} s "
        f"(calibrate/CCV {f_cal / f_sig:.2f}); CCV isotonic {f_iso:.3f} s (calibrate/CCV {f_cal / f_iso:.2f}); "
        f"bayesnb predictive without calibration {f_pred:.3f} s; sklearn NB {f_sk:.3f} s."
    )
    if CAL_MEAN in res.metrics:
        f_m = res.median_s(CAL_MEAN, "fit")
        print(f"estimate=\"mean\", calibrate=\"loo\": {f_m:.3f} s (calibrate/CCV sigmoid {f_m / f_sig:.2f}).")


def notes(res):
    if res.kind == "codes":
        print(
            f"\nCategory codes: the levels of each column are numbered over the whole table and every model is "
            f"given their number (scikit-learn's and bayesnb's `CategoricalNB(min_categories=...)`, "
            f"`OneHotEncoder(categories=...)`), so a level absent from a training fold is a category with no "
            f"training count (smoothed by the prior / pseudo-count; a one-hot column with no weight for the "
            f"logistic regression), the same for every model. Test rows holding such a level, per fold: "
            f"{res.unseen} (without `min_categories` scikit-learn's CategoricalNB raises IndexError on them; "
            f"bayesnb's gives an unseen code the posterior share of one new category)."
        )
    if res.failed:
        print("\nFailures (the tracebacks are on stderr):\n")
        for label, errs in res.failed.items():
            print(f"* {label}: {len(errs)} of {FOLDS} folds: {errs[0]}")
    if res.warned:
        print("\nWarnings raised during fit / predict (first line, each kind once):\n")
        for label, msgs in res.warned.items():
            for m in sorted(msgs)[:3]:
                print(f"* {label}: {m}")


def reliability(res, name, directory, bins=10):
    """A reliability diagram of four models' pooled out-of-fold predictions, written as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    best_ccv = SIG if res.mean(SIG)[1] <= res.mean(ISO)[1] else ISO
    shown = [(SK, "sklearn NB"), (best_ccv, f"{best_ccv} (best CCV)"), (PRED, "bayesnb predictive"),
             (CAL, 'bayesnb calibrate="loo"')]
    edges = np.linspace(0.0, 1.0, bins + 1)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(5.2, 6.4), sharex=True, gridspec_kw={"height_ratios": [3, 1.2]})
    top.plot([0, 1], [0, 1], color="0.6", lw=1, ls="--")
    width = (edges[1] - edges[0]) / (len(shown) + 1)
    for k, (label, legend) in enumerate(shown):
        p = res.oof.get(label)
        if p is None or np.isnan(p).any():
            continue
        conf, correct = p.max(axis=1), p.argmax(axis=1) == res.y_index
        which = np.clip(np.digitize(conf, edges[1:-1]), 0, bins - 1)
        n_bin = np.bincount(which, minlength=bins)
        filled = n_bin > 0
        mean_conf = np.bincount(which, weights=conf, minlength=bins)[filled] / n_bin[filled]
        acc = np.bincount(which, weights=correct, minlength=bins)[filled] / n_bin[filled]
        ll = res.mean(label)[1]
        top.plot(mean_conf, acc, marker="o", ms=4, lw=1.3, label=f"{legend} (log loss {ll:.3f})")
        bottom.bar(edges[:-1] + (k + 0.5) * width, n_bin, width=width, align="edge")
    top.set_ylabel("accuracy in bin")
    top.set_xlim(0, 1)
    top.set_ylim(0, 1.02)
    top.set_title(f"{name}: reliability, 5-fold out-of-fold", fontsize=10)
    top.legend(fontsize=7, loc="upper left")
    bottom.set_yscale("log")
    bottom.set_xlabel("top-class probability (10 equal-width bins)")
    bottom.set_ylabel("rows")
    fig.tight_layout()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"reliability_{name.split(' ')[0].lower()}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def header(args):
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass

    def git(*a):
        try:
            return subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return "?"

    dirty = git("status", "--porcelain", "--untracked-files=no")
    import sklearn

    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print("# bench_calibration\n")
    print(f"* run: {datetime.datetime.now().isoformat(timespec='seconds')}, `python benchmarks/bench_calibration.py "
          f"{' '.join(sys.argv[1:])}`")
    print(f"* machine: {platform.platform()}, CPU {cpu}, {os.cpu_count()} cores ({usable} usable), "
          f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())} at the start")
    print(f"* code: git {git('rev-parse', '--short', 'HEAD')}" + (" with uncommitted changes (dirty tree)" if dirty else "")
          + f"; bayesnb {bayesnb.__version__}, scikit-learn {sklearn.__version__}, numpy {np.__version__}, "
          f"python {platform.python_version()}")
    from threadpoolctl import threadpool_info

    pools = ", ".join(sorted({f"{p['internal_api']} {p['num_threads']}" for p in threadpool_info()}))
    print(f"* thread pools: {pools}" + (f" (limited by --blas-threads {args.blas_threads})" if args.blas_threads is not None
                                         else " (as the environment sets them)"))
    print(f"* protocol: {FOLDS}-fold StratifiedKFold(shuffle=True, random_state={SEED}), the same folds for every "
          "model; log loss with probabilities clipped at 1e-15 for all models; Brier = mean over rows of "
          "sum over classes (p_c − 1[y=c])²; ECE: 15 equal-width bins of the top-class probability; accuracy, "
          "log loss, Brier and ECE are means over the folds; times are medians over the folds (fit, and fit + "
          "predict_proba of the test fold). CCV = `CalibratedClassifierCV(<the sklearn NB>, method, cv=5)` "
          "(ensemble=True). Word counts: `CountVectorizer(min_df=2)` on the whole corpus.")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-20ng", type=int, default=4000, help="documents of 20 Newsgroups (0: all 18,846)")
    parser.add_argument("--quick", action="store_true", help="the small data sets only (no SMS, no 20NG)")
    parser.add_argument("--only", default=None, help="comma-separated data set names (first word: SMS, 20NG, wine, ...)")
    parser.add_argument("--plots", default=None, type=Path, help="folder for one reliability diagram PNG per data set")
    parser.add_argument(
        "--blas-threads", type=int, default=None,
        help="limit the BLAS / OpenMP thread pools (threadpoolctl) for every model alike; default: as the environment sets them",
    )
    args = parser.parse_args(argv)
    if args.blas_threads is not None:
        from threadpoolctl import threadpool_limits

        threadpool_limits(args.blas_threads)
    started = time.perf_counter()
    sets = [
        ("wine", lambda: load_sklearn("load_wine"), "real", False),
        ("breast cancer", lambda: load_sklearn("load_breast_cancer"), "real", False),
        ("digits", load_digits, "counts", False),
        ("mushroom", load_mushroom, "codes", False),
        ("car evaluation", load_car, "codes", False),
    ]
    if not args.quick:
        sets = [("SMS", load_sms, "counts", True),
                (f"20NG ({args.n_20ng or 'all'} docs)", lambda: load_20ng(args.n_20ng), "counts", True)] + sets
    if args.only:
        wanted = {s.strip().lower() for s in args.only.split(",")}
        sets = [s for s in sets if s[0].split(" ")[0].lower() in wanted]
    header(args)
    for name, load, kind, text in sets:
        t0 = time.perf_counter()
        X, y = load()
        n_levels = (X.max(axis=0) + 1).astype(int).tolist() if kind == "codes" else None
        what = {"counts": "word counts" if text else "pixel counts 0..16", "real": "real-valued features",
                "codes": "categorical features"}[kind]
        print(f"\n## {name}: {X.shape[0]} rows, {X.shape[1]} features ({what}), {np.unique(y).size} classes\n", flush=True)
        res = evaluate(name, X, y, kind, text, n_levels)
        res.kind, res.text, res.n_levels = kind, text, n_levels
        table(res)
        verdicts(res)
        notes(res)
        if args.plots is not None:
            path = reliability(res, name, args.plots)
            print(f"\nReliability diagram: `{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}`")
        print(f"\n({name}: {time.perf_counter() - t0:.0f} s wall)", flush=True)
    print(f"\nTotal: {time.perf_counter() - started:.0f} s wall; load average at the end "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}.")


if __name__ == "__main__":
    main()
