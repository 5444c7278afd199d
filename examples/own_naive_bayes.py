"""Write your own naive Bayes in numpyro: three models compiled to closed form and cross-checked.

``bayesnb.compile_model(model, X, y, **model_kwargs)`` reads a numpyro model of the
naive-Bayes shape (class proportions, per-class parameters in plates, labels ``y`` in a
data plate, observed features given the label), recognises each (prior, likelihood)
pair as a registered conjugate family and returns an unfitted estimator that *is* the
model's closed form. This script writes three models by hand:

1. the textbook multinomial naive Bayes (Dirichlet class proportions, a Dirichlet word
   distribution per class, multinomial documents);
2. Bernoulli features with a Gamma hyperprior on the Beta concentrations: compiled to
   ``BernoulliNB(alpha=dist.Gamma(2, 1))``, whose hyperparameter is integrated by NUTS
   on the collapsed model; this needs the estimators' integrated-hyperparameter API,
   and where that is absent ``compile_model`` says so (the refusal is printed);
3. a mixed Gaussian (Normal-Inverse-Gamma) + Poisson + categorical model with a fixed
   class prior, its blocks observing interleaved columns.

Each compiled estimator is fitted, cross-checked against NUTS on the *same model as
written* (``bayesnb.ppl.compile.crosscheck_model``: the rule of
``bayesnb.ppl.mcmc.crosscheck``), and exported to arviz (``to_inference_data``). Figures
in ``--out`` (default ``./own_naive_bayes_out``): ``<model>_forest.png``, the closed
form's exact draws next to the NUTS draws of the model.

Run ``python examples/own_naive_bayes.py [--quick] [--out DIR]``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short chains (about a minute)")
    parser.add_argument("--out", metavar="DIR", default="own_naive_bayes_out", help="folder for the figures")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


# ----------------------------------------------------------------------------- the models
# Written as a user would: any site names and plates, jax.numpy on sampled values.


def textbook_multinomial(X, y, n_classes=2, alpha=1.0, beta=1.0):
    """pi ~ Dir(beta); theta_c ~ Dir(alpha) per class; y ~ Cat(pi); a document's counts ~ Multinomial(theta_y)."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    pi = numpyro.sample("pi", dist.Dirichlet(jnp.full(n_classes, beta)))
    with numpyro.plate("class", n_classes, dim=-1):
        theta = numpyro.sample("word_probs", dist.Dirichlet(jnp.full(X.shape[1], alpha)))
    with numpyro.plate("docs", X.shape[0], dim=-1):
        y = numpyro.sample("y", dist.Categorical(pi), obs=y)
        numpyro.sample("words", dist.Multinomial(X.sum(-1), theta[y]), obs=X)


def bernoulli_hyperprior(X, y, n_classes=2):
    """alpha ~ Gamma(2, 1); theta_cj ~ Beta(alpha, alpha); y ~ Cat(pi); x_ij ~ Bernoulli(theta_{y_i j})."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    alpha = numpyro.sample("alpha", dist.Gamma(2.0, 1.0))
    pi = numpyro.sample("pi", dist.Dirichlet(jnp.ones(n_classes)))
    with numpyro.plate("class", n_classes, dim=-2), numpyro.plate("feature", X.shape[1], dim=-1):
        theta = numpyro.sample("theta", dist.Beta(alpha, alpha))
    with numpyro.plate("data", X.shape[0], dim=-2):
        y = numpyro.sample("y", dist.Categorical(pi), obs=y[:, None])[:, 0]
        with numpyro.plate("columns", X.shape[1], dim=-1):
            numpyro.sample("x", dist.Bernoulli(theta[y]), obs=X)


GAUSS, COUNT, CODES = [0, 3], [1], [2, 4]  # interleaved columns of the mixed model


def mixed_fixed_prior(X, y, class_probs=(0.4, 0.6)):
    """Fixed class proportions; heights Normal-Inverse-Gamma, visits Gamma-Poisson, colours Dirichlet-categorical."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    n_classes = len(class_probs)
    with numpyro.plate("class", n_classes, dim=-2):
        with numpyro.plate("g", len(GAUSS), dim=-1):
            var = numpyro.sample("var", dist.InverseGamma(3.0, 2.0))
            mu = numpyro.sample("mu", dist.Normal(0.0, jnp.sqrt(var / 0.5)))
        with numpyro.plate("p", len(COUNT), dim=-1):
            lam = numpyro.sample("lam", dist.Gamma(2.0, 0.5))
        with numpyro.plate("k", len(CODES), dim=-1):
            phi = numpyro.sample("phi", dist.Dirichlet(jnp.full(3, 1.5)))
    with numpyro.plate("data", X.shape[0], dim=-2):
        y = numpyro.sample("y", dist.Categorical(jnp.asarray(class_probs)), obs=y[:, None])[:, 0]
        with numpyro.plate("g_cols", len(GAUSS), dim=-1):
            numpyro.sample("height", dist.Normal(mu[y], jnp.sqrt(var[y])), obs=X[:, GAUSS])
        with numpyro.plate("p_cols", len(COUNT), dim=-1):
            numpyro.sample("visits", dist.Poisson(lam[y]), obs=X[:, COUNT])
        with numpyro.plate("k_cols", len(CODES), dim=-1):
            numpyro.sample("colour", dist.Categorical(phi[y]), obs=X[:, CODES].astype(np.int32))


# ----------------------------------------------------------------------------- data


def documents(rng, n):
    y = np.arange(n) % 2
    probs = np.where(y[:, None] == 1, [0.35, 0.05, 0.2, 0.1, 0.2, 0.1], [0.05, 0.3, 0.1, 0.25, 0.1, 0.2])
    return np.stack([rng.multinomial(rng.integers(5, 15), p) for p in probs]), y


def binary(rng, n):
    y = np.arange(n) % 2
    p = np.where(y[:, None] == 1, [0.8, 0.3, 0.5, 0.6], [0.2, 0.6, 0.5, 0.4])
    return (rng.random(p.shape) < p).astype(np.int64), y


def mixed(rng, n):
    y = np.arange(n) % 2
    X = np.zeros((n, 5))
    X[:, GAUSS] = rng.normal(1.5 * y[:, None], 1.0, (n, len(GAUSS)))
    X[:, COUNT] = rng.poisson(2.0 + 3.0 * y[:, None], (n, len(COUNT)))
    X[:, CODES] = rng.integers(0, 3, (n, len(CODES)))
    return X, y


# ----------------------------------------------------------------------------- compile, check, export


def run(name, model, X, y, out, nuts):
    import arviz as az
    import matplotlib.pyplot as plt

    import bayesnb
    from bayesnb.ppl.compile import crosscheck_model

    print(f"\n== {name}: {model.__doc__.splitlines()[0]}")
    try:
        estimator = bayesnb.compile_model(model, X, y)
    except bayesnb.ModelCompileError as err:
        print(f"  not compiled here: {err.reason}")
        print("  (the integrated-hyperparameter API turns this into BernoulliNB(alpha=dist.Gamma(2, 1)))")
        return None
    print("  compiled to:", " ".join(repr(estimator).split()))
    estimator.fit(X, y)
    report = crosscheck_model(model, estimator, X, y, random_state=0, nuts_options=nuts)
    print(f"  cross-check against NUTS on the model as written: {'agrees' if report.agrees else 'DISAGREES'} "
          f"(largest |z| {report.max_abs_z:.2f}, max r_hat {report.max_rhat:.3f}, {len(report.parameters)} scalars)")
    idata = estimator.to_inference_data(n_draws=500, random_state=0)
    # Iterating over the export gives its group names on both arviz lines (InferenceData
    # on 0.x, DataTree on 1.x, where ``groups`` is a property holding paths).
    print(f"  arviz export: groups {list(idata)}, variables {list(idata.posterior.data_vars)}")
    closed, mcmc = report.closed_form_inference_data, report.mcmc_inference_data
    var_names = list(mcmc.posterior.data_vars)[:2]
    figsize = (7, 0.25 * min(len(report.parameters), 24) + 1.5)
    if int(az.__version__.split(".")[0]) >= 1:
        # arviz 1.x (arviz-plots): several models are a dict {name: DataTree}; the plot
        # returns a PlotCollection, which saves itself.
        forest = az.plot_forest({"closed form": closed, "NUTS": mcmc}, var_names=var_names, combined=True,
                                figure_kwargs={"figsize": figsize})
        forest.add_legend("model")
        forest.savefig(out / f"{name}_forest.png", dpi=80, bbox_inches="tight")
    else:  # arviz 0.x: a list of InferenceData with model_names
        az.plot_forest([closed, mcmc], model_names=["closed form", "NUTS"], var_names=var_names, combined=True,
                       figsize=figsize)
        plt.savefig(out / f"{name}_forest.png", dpi=80, bbox_inches="tight")
    plt.close("all")
    print(f"  wrote {name}_forest.png")
    return report


def main(argv=None):
    args = parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    nuts = {"num_warmup": 300, "num_samples": 500, "num_chains": 2}
    if not args.quick:
        nuts.update(num_warmup=1000, num_samples=2000, num_chains=4)
    n = 40 if args.quick else 120
    reports = [
        run("multinomial", textbook_multinomial, *documents(rng, n), out, nuts),
        run("bernoulli_hyperprior", bernoulli_hyperprior, *binary(rng, n), out, nuts),
        run("mixed", mixed_fixed_prior, *mixed(rng, n), out, nuts),
    ]
    verdicts = ", ".join("not compiled" if r is None else ("agrees" if r.agrees else "DISAGREES") for r in reports)
    print(f"\ncross-checks: {verdicts}; figures in {out.resolve()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
