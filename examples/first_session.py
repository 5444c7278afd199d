"""A new user's first session, scripted: UCI mushroom and car data as pandas DataFrames.

What someone who knows pandas, scikit-learn and arviz would try first, on two public
tables with string categories (mushroom also has missing values, ``?`` in stalk-root):

1. read the file with pandas, fit ``MixedNB()`` on the DataFrame (column types
   inferred, the inference printed; missing entries left out of the likelihood);
2. ``compare`` the estimates by 5-fold cross-validation beside scikit-learn's
   ``CategoricalNB``, in ``CalibratedClassifierCV`` and a ``LogisticRegression``;
3. credible intervals of the class probabilities of a few rows, with the median of the
   same draws, as DataFrames indexed like the input (``X.loc`` on the ranked rows);
4. the features that most raise a class's log-odds, by name, with 90% intervals;
5. ``to_inference_data`` -> ``az.summary``, ``az.plot_ppc`` (``az.plot_ppc_rootogram`` on
   arviz 1.x), ``az.loo``, beside
   bayesnb's exact leave-one-out (``bayesnb.loo``);
6. ``save`` / ``load``, and the loaded model's probabilities equal the fitted one's.

Run ``python examples/first_session.py [--quick] [--out DIR] [--data-dir DIR]``. The
tables are read in place from ``../shared/data`` unless ``--data-dir`` says otherwise;
without them the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = ROOT.parent / "shared" / "data"

# Column names from each data set's .names file (the .data files have no header).
MUSHROOM = (
    "uci_mushroom/agaricus-lepiota.data",
    ["class", "cap-shape", "cap-surface", "cap-color", "bruises", "odor", "gill-attachment", "gill-spacing",
     "gill-size", "gill-color", "stalk-shape", "stalk-root", "stalk-surface-above-ring",
     "stalk-surface-below-ring", "stalk-color-above-ring", "stalk-color-below-ring", "veil-type",
     "veil-color", "ring-number", "ring-type", "spore-print-color", "population", "habitat"],
    "class",
)
CAR = (
    "uci_car_evaluation/car.data",
    ["buying", "maint", "doors", "persons", "lug_boot", "safety", "class"],
    "class",
)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small run (a stratified sample, fewer draws)")
    parser.add_argument("--out", metavar="DIR", help="write the figures and the saved model here")
    parser.add_argument("--data-dir", metavar="DIR", default=str(DEFAULT_DATA_DIR), help="the shared corpora")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def session(name, path, columns, target, args, out):
    import arviz as az
    import pandas as pd
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.naive_bayes import CategoricalNB as SkCategoricalNB
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder

    import bayesnb
    from bayesnb import MixedNB, compare
    from bayesnb.analysis.comparison import format_comparison
    from bayesnb.analysis.uncertainty import rank_by_epistemic, top_features

    # 1. pandas reads the file: strings stay strings, '?' becomes NaN.
    frame = pd.read_csv(path, header=None, names=columns, na_values="?", dtype=str)
    if args.quick:
        frame, _ = train_test_split(frame, train_size=min(600, len(frame) - 1), stratify=frame[target],
                                    random_state=args.seed)
    X, y = frame.drop(columns=target), frame[target].to_numpy()
    missing = int(X.isna().to_numpy().sum())
    print(f"== {name}: {len(X)} rows, {X.shape[1]} string columns, {missing} missing entries, "
          f"classes {dict(zip(*(a.tolist() for a in np.unique(y, return_counts=True))))}")
    clf = MixedNB(missing="ignore").fit(X, y)
    print(f"inferred column blocks: {clf.feature_blocks_}")

    # 2. The estimates side by side, beside what a scikit-learn user would do instead
    #    (scikit-learn's CategoricalNB needs integer codes and no NaN: an encoder does both).
    sk_nb = make_pipeline(
        OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1, encoded_missing_value=-1),
        _Shift(), SkCategoricalNB(min_categories=64),
    )
    baselines = {
        "sklearn CategoricalNB": sk_nb,
        "CategoricalNB + CalibratedClassifierCV": CalibratedClassifierCV(sk_nb, method="sigmoid", cv=3),
        "LogisticRegression (one-hot)": make_pipeline(
            OneHotEncoder(handle_unknown="ignore"), LogisticRegression(max_iter=2000)
        ),
    }
    table = compare(MixedNB(missing="ignore"), X, y, cv=3 if args.quick else 5, n_bootstrap=0,
                    baselines=baselines, as_frame=False)
    print(format_comparison(table, metrics=("accuracy", "log_loss", "brier", "ece")))

    # 3. Intervals with the median of the same draws, indexed like the DataFrame: the
    #    rows the model is least sure about, selected back by their labels.
    n_draws = 200 if args.quick else 1000
    ranked = rank_by_epistemic(clf, X, top=3, n_draws=n_draws, random_state=args.seed)
    lower, upper, median = clf.predict_proba_interval(
        X.loc[ranked.index], 0.9, n_draws=n_draws, random_state=args.seed, return_median=True
    )
    print(f"least certain rows (index labels {ranked.index.tolist()}): median [90% interval] of p(class | x, θ, π)")
    for label in ranked.index:
        cells = [f"{c}: {median.loc[label, c]:.3f} [{lower.loc[label, c]:.3f}, {upper.loc[label, c]:.3f}]"
                 for c in clf.classes_]
        print(f"  row {label}: " + "; ".join(cells))

    # 4. What drives one class, by name. A mixed model's features are its column blocks'
    #    columns; the names come from the DataFrame.
    target_class = clf.classes_[-1]
    top = top_features(clf, target_class, 5, level=0.9, n_draws=n_draws, random_state=args.seed)
    print(f"features raising the log-odds of {target_class!r} most (posterior median, 90% interval):")
    for row in zip(*[getattr(top, f) for f in ("name", "median", "lower", "upper")]):
        print(f"  {row[0]}: {row[1]:+.2f} [{row[2]:+.2f}, {row[3]:+.2f}]")

    # 5. arviz: summary of the posterior, the posterior predictive check, PSIS-LOO.
    idata = clf.to_inference_data(n_draws=n_draws, random_state=args.seed, X=X, y=y)
    summary = az.summary(idata, var_names=["class_probs"], kind="stats")
    print(summary.to_string(max_rows=6))
    n_replicates = 50 if args.quick else 200
    if int(az.__version__.split(".")[0]) >= 1:
        # arviz 1.x (arviz-plots): the labels are discrete, so the rootogram (observed
        # counts of each class against the replicates', at 0.x's figure size); a
        # PlotCollection saves itself.
        save_ppc = az.plot_ppc_rootogram(idata, var_names=["y"], figure_kwargs={"figsize": (6.4, 4.8)}).savefig
    else:  # arviz 0.x: plot_ppc, returning matplotlib axes
        save_ppc = np.ravel(az.plot_ppc(idata, num_pp_samples=n_replicates))[0].figure.savefig
    # The export holds two pointwise log-likelihoods: "y" (log p(y | x, θ, π), the
    # classifier's) and "xy" (log p(x, y | θ, π), the generative model's); az.loo asks which.
    print(az.loo(idata, var_name="y"))
    # bayesnb's exact leave-one-out of the same quantity: no importance sampling, so no
    # Pareto k to worry about (the conjugate posterior is downdated row by row).
    exact = bayesnb.loo(clf, X, y)
    print(f"exact leave-one-out (bayesnb.loo): {exact}")
    if out is not None:
        save_ppc(out / f"first_session_ppc_{name}.png", dpi=100)
    import matplotlib.pyplot as plt

    plt.close("all")

    # 6. Save and load: the same probabilities.
    folder = out if out is not None else Path(tempfile.mkdtemp())
    model = folder / f"first_session_{name}.npz"
    clf.save(model)
    again = bayesnb.load(model)
    assert np.array_equal(again.predict_proba(X.iloc[:50]), clf.predict_proba(X.iloc[:50]))
    print(f"saved and loaded {model.name}: identical probabilities on 50 rows")
    print()


class _Shift:
    """Codes + 1, so that scikit-learn's CategoricalNB sees the encoder's -1 (unknown or missing) as a category."""

    def fit(self, X, y=None):
        return self

    def transform(self, X):
        return np.asarray(X) + 1

    def fit_transform(self, X, y=None):
        return self.transform(X)

    def get_params(self, deep=True):
        return {}

    def set_params(self, **params):
        return self


def main(argv=None):
    args = parse_args(argv)
    data_dir = Path(args.data_dir)
    paths = [data_dir / spec[0] for spec in (MUSHROOM, CAR)]
    if not all(p.is_file() for p in paths):
        missing = [str(p) for p in paths if not p.is_file()]
        print(f"skipped: {', '.join(missing)} not found (pass --data-dir to the folder holding uci_mushroom/, "
              "uci_car_evaluation/)")
        return 0
    import matplotlib

    matplotlib.use("Agg")
    out = None
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
    for name, spec in (("mushroom", MUSHROOM), ("car", CAR)):
        session(name, data_dir / spec[0], spec[1], spec[2], args, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
