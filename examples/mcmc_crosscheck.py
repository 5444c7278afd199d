"""Closed form versus MCMC: check a fitted bayesnb model against NUTS on its numpyro model.

Every bayesnb estimator is the conjugate closed form of a generative model that
``bayesnb.ppl.models`` also writes as a numpyro program (class proportions, per-class
parameters in plates ``class`` and ``feature``, rows in plate ``data``).
``bayesnb.ppl.mcmc.crosscheck`` runs numpyro's NUTS on that program with the estimator's own
prior, on the same data, and compares every parameter's closed-form posterior mean and
standard deviation with the MCMC mean, its Monte Carlo standard error and the z-score,
plus r_hat, ESS and the posterior predictive class probabilities of a few rows.

This script does it for a Bayesian QDA (``GaussianBayesClassifier``, Normal-Inverse-
Wishart prior) on two standardised features of scikit-learn's bundled wine data and,
without ``--quick``, for a ``MultinomialNB`` on pixel counts of the bundled digits. It
prints the reports and writes to ``--out`` (default ``./mcmc_crosscheck_out``):

* ``<model>_forest.png``: arviz forest plot of the closed-form draws next to NUTS;
* ``<model>_posterior.png``: arviz posterior plot of the closed-form draws (``plot_posterior``
  on arviz 0.x, ``plot_dist`` on arviz 1.x);
* ``<model>_plate.gv``: the model's plate diagram (Graphviz source, from
  ``numpyro.render_model``; also ``.png`` when the Graphviz ``dot`` program is installed).

Run ``python examples/mcmc_crosscheck.py [--quick] [--out DIR]``.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import numpy as np


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small data and short chains (about 30 s)")
    parser.add_argument("--out", metavar="DIR", default="mcmc_crosscheck_out", help="folder for the figures")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def wine(n_rows, seed):
    """Alcohol and flavanoids of the bundled wine data, standardised; a random subset of rows."""
    from sklearn.datasets import load_wine

    d = load_wine()
    cols = [list(d.feature_names).index(name) for name in ("alcohol", "flavanoids")]
    X = d.data[:, cols]
    X = (X - X.mean(0)) / X.std(0)
    keep = np.random.default_rng(seed).permutation(len(X))[:n_rows]
    import pandas as pd

    return pd.DataFrame(X[keep], columns=["alcohol", "flavanoids"]), d.target_names[d.target][keep]


def digits(n_rows, seed):
    """Pixel intensities (0..16, read as counts) of three digits, pooled into 4 x 4 blocks."""
    from sklearn.datasets import load_digits

    d = load_digits()
    keep = np.flatnonzero(np.isin(d.target, [0, 1, 7]))
    keep = np.random.default_rng(seed).permutation(keep)[:n_rows]
    images = d.images[keep].reshape(-1, 2, 4, 2, 4).sum(axis=(2, 4)).reshape(len(keep), -1)
    return images.astype(np.int64), d.target[keep]


def plate_diagram(estimator, X, y, out, name):
    """Write the model's plate diagram: Graphviz source always, PNG when ``dot`` exists."""
    try:
        import graphviz  # noqa: F401
    except ImportError:
        print("  plate diagram: skipped (pip install graphviz, bayesnb's 'graphviz' extra)")
        return
    import numpyro

    from bayesnb.core._x64 import enable_x64
    from bayesnb.ppl import models

    model, kwargs = models.model_from_estimator(estimator, X, y)
    with enable_x64():
        graph = numpyro.render_model(model, model_kwargs=kwargs)
    (out / f"{name}_plate.gv").write_text(graph.source)
    written = [f"{name}_plate.gv"]
    if shutil.which("dot"):
        (out / f"{name}_plate.png").write_bytes(graph.pipe(format="png"))
        written.append(f"{name}_plate.png")
    print("  plate diagram:", ", ".join(written))


def check(name, estimator, X, y, out, nuts_args):
    import arviz as az
    import matplotlib.pyplot as plt

    from bayesnb.ppl.mcmc import crosscheck

    estimator.fit(X, y)
    print(f"\n== {name}: {type(estimator).__name__}, {len(y)} rows x {X.shape[1]} features")
    report = crosscheck(estimator, X, y, **nuts_args)
    print(report.to_string(max_rows=12))
    closed, mcmc = report.closed_form_inference_data, report.mcmc_inference_data
    var_names = list(mcmc.posterior.data_vars)[:2]
    figsize = (7, 0.25 * len(report.parameters) + 1.5)
    if int(az.__version__.split(".")[0]) >= 1:
        # arviz 1.x (arviz-plots): several models are a dict {name: DataTree}, and the
        # plots return a PlotCollection; the posterior plot is plot_dist.
        forest = az.plot_forest({"closed form": closed, "NUTS": mcmc}, var_names=var_names, combined=True,
                                figure_kwargs={"figsize": figsize})
        forest.add_legend("model")
        forest.savefig(out / f"{name}_forest.png", dpi=90, bbox_inches="tight")
        az.plot_dist(closed, var_names=var_names[:1]).savefig(out / f"{name}_posterior.png", dpi=90,
                                                               bbox_inches="tight")
    else:  # arviz 0.x: a list of InferenceData with model_names; plot_posterior
        az.plot_forest([closed, mcmc], model_names=["closed form", "NUTS"], var_names=var_names, combined=True,
                       figsize=figsize)
        plt.savefig(out / f"{name}_forest.png", dpi=90, bbox_inches="tight")
        plt.close("all")
        az.plot_posterior(closed, var_names=var_names[:1])
        plt.savefig(out / f"{name}_posterior.png", dpi=90, bbox_inches="tight")
    plt.close("all")
    print(f"  wrote {name}_forest.png, {name}_posterior.png")
    plate_diagram(estimator, X, y, out, name)
    return report


def main(argv=None):
    args = parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    from bayesnb import GaussianBayesClassifier, MultinomialNB

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    nuts_args = {"num_warmup": 200, "num_samples": 400, "num_chains": 2, "random_state": args.seed}
    if not args.quick:
        nuts_args.update(num_warmup=1000, num_samples=2000)
    X, y = wine(40 if args.quick else 178, args.seed)
    reports = [check("wine_qda", GaussianBayesClassifier(covariance="full"), X, y, out, nuts_args)]
    if not args.quick:
        X, y = digits(150, args.seed)
        reports.append(check("digits_multinomial", MultinomialNB(alpha=1.0), X, y, out, nuts_args))
    verdicts = ", ".join("agrees" if r.agrees else "DISAGREES" for r in reports)
    print(f"\ncross-check: {verdicts}; figures in {out.resolve()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
