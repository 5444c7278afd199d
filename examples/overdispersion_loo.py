"""Is the multinomial right for text? A posterior predictive check, and exact LOO against PSIS-LOO.

On four groups of 20 Newsgroups ("bydate" train split, read in place from
``../shared/data``), word counts from ``CountVectorizer``:

1. **Posterior predictive check** (:func:`bayesnb.ppc`) of ``MultinomialNB`` and of
   ``PolyaNB`` (the Dirichlet-multinomial): replicated corpora given the observed labels,
   and three discrepancies per class: ``count_dispersion`` (Pearson dispersion of the
   word counts given each document's length: about 1 for multinomial counts, larger for
   bursty words), ``zero_share`` and ``length_dispersion`` (neither model describes
   document lengths; the replicates draw them Poisson).
2. **Exact leave-one-out** (:func:`bayesnb.loo`, a downdate of the sufficient statistics)
   against **PSIS-LOO** (``arviz.loo`` on posterior draws: of the class probabilities
   for the conditional log score, and of the arviz export ``to_inference_data(X=X,
   y=y)`` for the joint one): the ELPD both ways, the rows
   whose Pareto k flags the importance sampling, and how far PSIS is from the exact
   value there; then ``arviz.compare`` of two smoothings of the multinomial by their
   exact LOO. (PolyaNB is left out of that comparison: its whole model is its
   concentration, learned from every row, which ``bayesnb.loo`` holds fixed at
   ``prior_``; its leave-one-out would leave the row out of the class proportions
   only.)

``--out DIR`` saves ``DIR/ppc_dispersion.png`` (the check of each model) and
``DIR/loo_vs_psis.png`` (PSIS error against Pareto k).

Run::

    python examples/overdispersion_loo.py            # 4 groups, all ~2,000 training posts, 3,000 words (several minutes)
    python examples/overdispersion_loo.py --quick    # 600 posts, 1,000 words (~1 min)
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
CATEGORIES = ("alt.atheism", "comp.graphics", "sci.space", "talk.religion.misc")


def _parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="600 posts, 1,000 words, fewer draws (about a minute)")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=REPO.parent / "shared" / "data",
        help="folder holding 20newsgroups_bydate/20news-bydate.tar.gz (default: ../shared/data)",
    )
    parser.add_argument("--out", metavar="DIR", type=Path, default=None, help="write the figures here (PNG)")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def _load(path, quick, seed):
    from sklearn.feature_extraction.text import CountVectorizer

    from bayesnb.io.datasets import read_20newsgroups_bydate

    texts, labels = read_20newsgroups_bydate(path, "train", categories=CATEGORIES)
    labels = np.asarray(labels)
    if quick:
        keep = np.sort(np.random.default_rng(seed).choice(len(texts), 600, replace=False))
        texts, labels = [texts[i] for i in keep], labels[keep]
    X = CountVectorizer(max_features=1000 if quick else 3000).fit_transform(texts)
    rows = np.asarray(X.sum(axis=1)).ravel() > 0  # a post with none of the words says nothing
    return X[rows], labels[rows]


def _ppc_table(results, classes):
    lines = [f"{'model':<14}{'statistic':<19}{'class':<20}{'observed':>9}{'replicated':>18}{'p':>7}"]
    for model, res in results.items():
        for stat in ("count_dispersion", "zero_share", "length_dispersion"):
            obs, rep, p = res.observed[stat], res.replicated[stat], res.p_value[stat]
            for c, name in enumerate(classes):
                lines.append(
                    f"{model:<14}{stat:<19}{name:<20}{obs[c]:9.3f}{rep[:, c].mean():10.3f} ± {rep[:, c].std(ddof=1):5.3f}{p[c]:7.3f}"
                )
    return "\n".join(lines)


def _psis_conditional(est, X, y, n_draws, seed):
    """PSIS-LOO of log p(y_i | x_i, theta) from exact posterior draws (arviz.loo).

    Returns the pointwise PSIS values, their Pareto k and arviz's threshold ``good_k``.
    A row whose p(y_i | x_i, theta) is 1 to double precision in every draw (a long post
    classified with certainty) has equal importance weights: its PSIS value is the plain
    mean, log 1 = 0, with no tail to fit (arviz 1.x refuses such a row: "All tail values
    are the same"), so only the other rows go to ``arviz.loo``; the flat ones get k = NaN.
    """
    import arviz as az

    from bayesnb.analysis.elpd import elpd_values

    proba = est.predict_proba_draws(X, n_draws=n_draws, random_state=seed)  # (draw, row, class)
    col = np.searchsorted(est.classes_, y)
    with np.errstate(divide="ignore"):
        loglik = np.log(proba[:, np.arange(len(y)), col])
    flat = np.ptp(loglik, axis=0) == 0
    groups = {"posterior": {"dummy": np.zeros((1, n_draws))}, "log_likelihood": {"y": loglik[None][:, :, ~flat]}}
    if int(az.__version__.split(".")[0]) >= 1:
        idata = az.from_dict(groups)  # arviz 1.x: one dict of groups, a DataTree
    else:
        idata = az.from_dict(**groups)  # arviz 0.x: one keyword per group, an InferenceData
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        psis = az.loo(idata, pointwise=True)
    # elpd_values reads an ELPDData of either arviz line (pointwise: 0.x loo_i, 1.x elpd_i);
    # "pareto_k" and "good_k" are entries under the same names on both.
    pointwise, k = loglik[0].copy(), np.full(len(y), np.nan)
    pointwise[~flat] = elpd_values(psis).pointwise.values
    k[~flat] = psis["pareto_k"].values
    return pointwise, k, float(psis["good_k"])


def main(argv=None):
    args = _parse(argv)
    corpus = args.data_dir / "20newsgroups_bydate" / "20news-bydate.tar.gz"
    if not corpus.is_file():
        print(f"skipped: the 20 Newsgroups corpus was not found at {corpus}")
        return 0
    import arviz as az

    import bayesnb
    from bayesnb.analysis.elpd import elpd_values

    X, y = _load(corpus, args.quick, args.seed)
    n_draws = 100
    print(f"20 Newsgroups, {len(CATEGORIES)} groups: {X.shape[0]} posts x {X.shape[1]} words, {int(X.sum())} tokens\n")

    # ---- 1. posterior predictive check
    models = {"MultinomialNB": bayesnb.MultinomialNB(), "PolyaNB": bayesnb.PolyaNB()}
    results = {}
    for name, est in models.items():
        est.fit(X, y)
        t = time.perf_counter()
        results[name] = bayesnb.ppc(
            est, X, y, statistics=["count_dispersion", "zero_share", "length_dispersion"],
            n_draws=n_draws, random_state=args.seed, keep_replicates=False,
        )
        print(f"{name}: {n_draws} replicated corpora in {time.perf_counter() - t:.1f} s")
    print("\nPosterior predictive check (replicated: mean ± sd over the replicates; p two-sided)")
    print(_ppc_table(results, models["MultinomialNB"].classes_))
    print(f"PolyaNB precisions s_c: {np.array2string(models['PolyaNB'].precision_, precision=1)}")

    # ---- 2. exact LOO against PSIS-LOO
    est = models["MultinomialNB"]
    t = time.perf_counter()
    exact = bayesnb.loo(est, X, y)
    t_exact = time.perf_counter() - t
    t = time.perf_counter()
    psis, k, good_k = _psis_conditional(est, X, y, 1000, args.seed)
    t_psis = time.perf_counter() - t
    psis_se = np.sqrt(len(psis) * np.var(psis))  # arviz's standard error of a sum of pointwise values
    # elpd_values reads an ELPDData of either arviz line (0.x: elpd_loo / p_loo / loo_i,
    # 1.x: elpd / p / elpd_i).
    ex = elpd_values(exact)
    diff = np.abs(psis - ex.pointwise.values)
    bad = k > good_k
    print(f"\nLeave-one-out log p(y_i | x_i, D_-i), MultinomialNB, {len(y)} posts")
    print(f"  exact (downdate):        elpd_loo = {ex.elpd:10.2f}  (se {ex.se:.2f}, p_loo {ex.p:.1f}), {t_exact:.2f} s")
    print(f"  PSIS (1,000 exact draws): elpd_loo = {psis.sum():10.2f}  (se {psis_se:.2f}), {t_psis:.2f} s")
    print(f"  rows with p(y_i | x_i, theta) = 1 in every draw (no tail to fit, PSIS = log 1): {np.isnan(k).sum()}")
    print(f"  rows with Pareto k > {good_k:.2f}: {bad.sum()} of {len(y)} (k > 1: {(k > 1).sum()})")
    for label, rows in (("flagged rows", bad), ("other rows", ~bad)):
        if rows.any():
            print(f"  |PSIS - exact| on {label:<12}: median {np.median(diff[rows]):.3g}, max {diff[rows].max():.3g} nats")
    if bad.any():
        print(f"  sum of the error on the flagged rows: {np.sum(psis[bad] - ex.pointwise.values[bad]):+.2f} nats")

    # The joint log p(x_i, y_i | D_-i) from the arviz export (its log_likelihood "xy").
    t = time.perf_counter()
    idata = est.to_inference_data(n_draws=500, n_chains=2, random_state=args.seed, X=X, y=y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        psis_joint = az.loo(idata, pointwise=True, var_name="xy")
    t_psis = time.perf_counter() - t
    exact_joint = elpd_values(bayesnb.loo(est, X, y, kind="joint"))
    kj = psis_joint["pareto_k"].values
    dj = elpd_values(psis_joint).pointwise.values - exact_joint.pointwise.values
    badj = kj > psis_joint["good_k"]
    print(f"\nLeave-one-out log p(x_i, y_i | D_-i) (joint), PSIS from to_inference_data(X=X, y=y), 1,000 draws ({t_psis:.1f} s)")
    print(f"  exact elpd_loo = {exact_joint.elpd:.1f}, PSIS elpd_loo = {elpd_values(psis_joint).elpd:.1f}")
    print(f"  rows with Pareto k > {psis_joint['good_k']:.2f}: {badj.sum()} of {len(y)}; "
          f"PSIS - exact on them: median {np.median(dj[badj]) if badj.any() else 0:+.2f}, "
          f"max |.| {np.abs(dj[badj]).max() if badj.any() else 0:.2f} nats; on the others max |.| "
          f"{np.abs(dj[~badj]).max() if (~badj).any() else 0:.3f}")

    rough = bayesnb.loo(bayesnb.MultinomialNB(alpha=0.1).fit(X, y), X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # arviz 1.x rounds the table to the standard errors' digits unless told not to (0.x does not round).
        raw = {"round_to": "none"} if int(az.__version__.split(".")[0]) >= 1 else {}
        table = az.compare({"alpha=1": exact, "alpha=0.1": rough}, **raw)
    print("\naz.compare of MultinomialNB smoothings by exact LOO (conditional log score):")
    # The columns are elpd_loo / p_loo on arviz 0.x, elpd / p on arviz 1.x (whose elpd_diff
    # is the model minus the best, so negative; 0.x gives the best minus the model).
    columns = [c for c in ("rank", "elpd_loo", "elpd", "p_loo", "p", "elpd_diff", "dse", "weight") if c in table]
    print(table[columns].round(2).to_string())

    if args.out is not None:
        from matplotlib.figure import Figure

        args.out.mkdir(parents=True, exist_ok=True)
        fig = Figure(figsize=(9, 3.4), layout="constrained")
        axes = fig.subplots(1, 2)
        for ax, (name, res) in zip(axes, results.items()):
            c = int(np.nanargmax(res.observed["count_dispersion"] - res.replicated["count_dispersion"].mean(axis=0)))
            res.plot("count_dispersion", (c,), ax=ax)
            ax.set_title(f"{name}: {models[name].classes_[c]}")
        fig.savefig(args.out / "ppc_dispersion.png", dpi=110)
        fig = Figure(figsize=(5.5, 3.6), layout="constrained")
        ax = fig.add_subplot()
        ax.scatter(k, np.maximum(diff, 1e-8), s=8, alpha=0.6)
        ax.axvline(good_k, color="#d62728", ls="--", label=f"k = {good_k:.2f}")
        ax.set_yscale("log")
        ax.set_xlabel("Pareto k (PSIS)")
        ax.set_ylabel("|PSIS - exact| log p(y_i | x_i, D_-i)")
        ax.legend(frameon=False)
        fig.savefig(args.out / "loo_vs_psis.png", dpi=110)
        print(f"\nfigures written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
