"""The categorical arviz export has no padding and names its cells (issue 15).

A categorical ``feature_probs`` is exported over one flat dim ``cell`` (``<block>__cell``
in a MixedNB) of the (feature, category) cells that exist, named ``"<feature>=<label>"``,
with the variables ``cell_feature``, ``category_label`` and ``category_code`` along it
in ``constant_data`` (not coordinates of the parameters: arviz 1.x's ``summary``
refuses a coordinate that only some variables of a group carry). The padded (class, feature, category) layout it replaces was
mostly NaN on data with one wide feature, and arviz showed the NaN cells as empty rows.

Oracles: the Dirichlet posterior of each cell computed here by counting the rows of the
data (mean :math:`(N_{cjk} + \\alpha) / (N_{cj} + K_j \\alpha)` and its sd), against the
iid draws within 5 Monte Carlo standard errors, looked up by the cell's name, so that a
name attached to the wrong cell fails; arviz itself (``az.summary`` rows, forest plots).
"""

from __future__ import annotations

import arviz as az
import matplotlib
import numpy as np
import pandas as pd
from numpy.testing import assert_allclose

from bayesnb import CategoricalNB, GaussianNB, MixedNB
from bayesnb.analysis import _arviz
from bayesnb.ppl import export

matplotlib.use("Agg")

N_DRAWS = 2000  # per chain, 2 chains: 4000 iid draws


def _dirichlet_cell(codes, k, n_categories, alpha):
    """Mean and sd of theta_k under the posterior Dir(alpha + counts) of one (class, feature)."""
    total = len(codes) + n_categories * alpha
    mean = (np.sum(np.asarray(codes) == k) + alpha) / total
    return mean, np.sqrt(mean * (1.0 - mean) / (total + 1.0))


def _assert_no_nan(idata):
    for group in ("posterior", "prior"):
        for name, var in getattr(idata, group).data_vars.items():
            assert np.all(np.isfinite(var.values)), (group, name)


def _ragged(seed=0, n=90):
    """Codes of features with 2, 3 and 7 categories (each code present), string labels."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.4, "spam", "ham")
    X = np.column_stack([rng.integers(0, 2, n), rng.integers(0, 3, n), rng.integers(0, 7, n)])
    # Class-dependent codes in the wide feature, so that the two classes' cells differ.
    X[:, 2] = np.where(y == "spam", np.minimum(X[:, 2], 3), X[:, 2])
    X[:3] = [[1, 2, 6], [0, 0, 5], [1, 1, 4]]
    return X, y


def test_ragged_categorical_export_is_flat_without_nan_and_matches_counting():
    X, y = _ragged()
    alpha = 0.5
    est = CategoricalNB(alpha=alpha).fit(X, y)
    assert est.n_categories_.tolist() == [2, 3, 7]
    idata = est.to_inference_data(N_DRAWS, random_state=0)
    _assert_no_nan(idata)
    cells = [(j, k) for j, K in enumerate([2, 3, 7]) for k in range(K)]
    table = idata.constant_data
    assert table["cell"].values.tolist() == [f"x{j}={k}" for j, k in cells]
    assert table["cell_feature"].values.tolist() == [f"x{j}" for j, _ in cells]
    assert table["category_label"].values.tolist() == [str(k) for _, k in cells]
    assert table["category_code"].values.tolist() == [k for _, k in cells]
    for group in (idata.posterior, idata.prior):
        probs = group["feature_probs"]
        assert probs.dims == ("chain", "draw", "class", "cell")
        assert probs.coords["cell"].values.tolist() == [f"x{j}={k}" for j, k in cells]
        # Each (class, feature) is a simplex over its own cells.
        assert_allclose(probs.groupby(table["cell_feature"]).sum(), 1.0, rtol=1e-12)
    # The whole posterior summarises (class_probs beside the cells).
    assert len(az.summary(idata, kind="stats")) == 2 + sum([2, 3, 7]) * 2

    # arviz: one row per (class, cell), none of them NaN, named by class and cell.
    summary = az.summary(idata, var_names=["feature_probs"])
    assert len(summary) == sum([2, 3, 7]) * 2
    assert not summary.isna().any().any()
    assert summary.index.tolist() == [f"feature_probs[{c}, x{j}={k}]" for c in ("ham", "spam") for j, k in cells]

    n = 2 * N_DRAWS
    post = idata.posterior["feature_probs"].values.reshape(n, 2, -1)
    prior = idata.prior["feature_probs"].values.reshape(n, 2, -1)
    for i, cls in enumerate(("ham", "spam")):
        for c, (j, k) in enumerate(cells):
            K = est.n_categories_[j]
            mean, sd = _dirichlet_cell(X[y == cls, j], k, K, alpha)
            assert abs(post[:, i, c].mean() - mean) < 5 * sd / np.sqrt(n), (cls, j, k)
            mean, sd = _dirichlet_cell([], k, K, alpha)  # the prior: no rows
            assert abs(prior[:, i, c].mean() - mean) < 5 * sd / np.sqrt(n), (cls, j, k)


def _frame(seed=0, n=80):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "colour": rng.choice(["red", "green", "blue"], n),
            "size": rng.choice(["S", "M", "L", "XL"], n),
            "weight": rng.normal(size=n),
        }
    )
    y = np.where((df.colour == "red") | (df.weight > 0.8), "yes", "no")
    return df, y


def test_mixed_cells_are_named_by_column_and_category_string():
    df, y = _frame()
    model = MixedNB().fit(df, y)
    idata = model.to_inference_data(N_DRAWS, random_state=0, X=df, y=y)
    _assert_no_nan(idata)
    probs = idata.posterior["categorical__feature_probs"]
    assert probs.dims == ("chain", "draw", "class", "categorical__cell")
    names = probs.coords["categorical__cell"].values.tolist()
    assert names == ["colour=blue", "colour=green", "colour=red", "size=L", "size=M", "size=S", "size=XL"]
    table = idata.constant_data
    assert table["categorical__cell_feature"].values.tolist() == ["colour"] * 3 + ["size"] * 4
    assert table["categorical__category_label"].values.tolist() == ["blue", "green", "red", "L", "M", "S", "XL"]
    assert table["categorical__category_code"].values.tolist() == [0, 1, 2, 0, 1, 2, 3]

    summary = az.summary(idata, var_names=["categorical__feature_probs"])
    assert len(summary) == (3 + 4) * 2 and not summary.isna().any().any()

    n = 2 * N_DRAWS
    for cell in names:
        # The coordinates, not the position, say which column and category the cell is.
        sel = probs.sel({"categorical__cell": cell})
        row = table.sel({"categorical__cell": cell})
        feature = str(row["categorical__cell_feature"].values)
        label = str(row["categorical__category_label"].values)
        assert cell == f"{feature}={label}"
        for cls in ("no", "yes"):
            # Oracle: the Dirichlet(1, ..., 1) posterior of the label, by counting the frame.
            mean, sd = _dirichlet_cell(df[feature][y == cls], label, df[feature].nunique(), 1.0)
            draws = sel.sel({"class": cls}).values
            assert abs(draws.mean() - mean) < 5 * sd / np.sqrt(n), (cell, cls, draws.mean(), mean)
    # The cell names are the coordinate of every group holding the dim; the table is not a coordinate.
    assert idata.prior["categorical__feature_probs"].coords["categorical__cell"].values.tolist() == names
    assert "categorical__cell" not in idata.log_likelihood.dims
    assert "categorical__category_label" not in idata.posterior.coords


def test_equal_numbers_of_categories_have_the_same_layout():
    # Users' code must not change with the data: equal K_j are flat over cells too.
    rng = np.random.default_rng(2)
    X = rng.integers(0, 3, (40, 2))
    y = rng.integers(0, 2, 40)
    idata = CategoricalNB().fit(X, y).to_inference_data(50, random_state=0)
    probs = idata.posterior["feature_probs"]
    assert probs.dims == ("chain", "draw", "class", "cell")
    assert probs.coords["cell"].values.tolist() == ["x0=0", "x0=1", "x0=2", "x1=0", "x1=1", "x1=2"]
    assert set(export.exported_dims(CategoricalNB().fit(X, y))["feature_probs"]) == {"class", "cell"}


def test_compiled_categorical_model_exports_the_same_layout():
    import bayesnb
    from bayesnb.core import priors
    from bayesnb.ppl import models

    rng = np.random.default_rng(4)
    X = rng.integers(0, 3, (60, 2))
    y = rng.integers(0, 2, 60)
    alpha = 0.7
    prior = priors.categorical_dirichlet_from_alpha(np.full((2, 2), alpha), 2, [3, 3])
    est = bayesnb.compile_model(models.categorical_model, X, y, prior=prior, class_prior=priors.Dirichlet(np.ones(2)))
    est.fit(X, y)
    idata = est.to_inference_data(N_DRAWS, random_state=1)
    _assert_no_nan(idata)
    probs = idata.posterior["feature_probs"]
    assert probs.dims == ("chain", "draw", "class", "cell")
    n = 2 * N_DRAWS
    table = idata.constant_data
    for cell in probs.coords["cell"].values.tolist():
        sel = probs.sel(cell=cell)
        j = int(str(table["cell_feature"].sel(cell=cell).values)[1:])
        k = int(table["category_code"].sel(cell=cell).values)
        for cls in (0, 1):
            mean, sd = _dirichlet_cell(X[y == cls, j], k, 3, alpha)
            assert abs(sel.sel({"class": cls}).values.mean() - mean) < 5 * sd / np.sqrt(n), (cell, cls)


def test_nuts_inference_data_sits_beside_the_closed_form_in_a_forest_plot():
    import matplotlib.pyplot as plt

    from bayesnb.ppl.mcmc import run_nuts

    X, y = _ragged(n=40)
    est = CategoricalNB().fit(X, y)
    run = run_nuts(est, X, y, num_warmup=150, num_samples=150, num_chains=2, random_state=0, form="stats")
    mcmc = run.inference_data
    closed = est.to_inference_data(150, random_state=0)
    # The MCMC's canonical samples stay padded (the cross-check compares them scalar by
    # scalar); its arviz posterior is flat like the closed form's.
    assert np.isnan(run.samples["feature_probs"]).any()
    for data in (closed, mcmc):
        probs = data.posterior["feature_probs"]
        assert probs.dims == ("chain", "draw", "class", "cell") and probs.sizes["cell"] == 12
        assert not np.isnan(probs.values).any()
    assert mcmc.posterior.coords["cell"].values.tolist() == closed.posterior.coords["cell"].values.tolist()
    for name in ("cell_feature", "category_label", "category_code"):
        assert mcmc.constant_data[name].values.tolist() == closed.constant_data[name].values.tolist()
    # The NUTS draws are of the same cells: per cell, within 0.2 of the closed form's mean.
    diff = mcmc.posterior["feature_probs"].mean(("chain", "draw")) - closed.posterior["feature_probs"].mean(
        ("chain", "draw")
    )
    assert float(np.abs(diff).max()) < 0.2
    if _arviz.major() >= 1:  # arviz-plots: models as a dict, the labels are text artists
        az.plot_forest({"closed form": closed, "NUTS": mcmc}, var_names=["feature_probs"], combined=True,
                       backend="matplotlib")
        labels = [t.get_text() for ax in plt.gcf().axes for t in ax.texts]
    else:
        axes = az.plot_forest([closed, mcmc], model_names=["closed form", "NUTS"], var_names=["feature_probs"],
                              combined=True)
        labels = [t.get_text() for t in np.ravel(axes)[0].get_yticklabels()]
    assert any("x2=6" in label for label in labels) and not any("nan" in label.lower() for label in labels)
    plt.close("all")


def test_cell_names_stay_distinct_when_they_would_print_alike():
    # Column "a=b" with category "c" and column "a" with category "b=c" both print "a=b=c".
    df = pd.DataFrame({"a=b": ["c", "d", "c", "d"], "a": ["b=c", "e", "e", "b=c"]})
    coords = export.cell_coords(MixedNB().fit(df, [0, 0, 1, 1]))
    names = coords["categorical__cell"][1].tolist()
    assert len(set(names)) == len(names) == 4
    assert names == ["[0,0] a=b=c", "[0,1] a=b=d", "[1,0] a=b=c", "[1,1] a=e"]
    assert coords["categorical__cell_feature"][1].tolist() == ["a=b", "a=b", "a", "a"]
    assert coords["categorical__category_label"][1].tolist() == ["c", "d", "b=c", "e"]


def test_no_cell_coordinate_without_a_categorical_block():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(20, 2))
    y = np.repeat([0, 1], 10)
    idata = GaussianNB().fit(X, y).to_inference_data(20, random_state=0)
    assert not any(str(c).endswith(("cell", "category_label")) for c in idata.posterior.coords)
    mixed = MixedNB([("g", GaussianNB(), [0, 1])]).fit(X, y).to_inference_data(20, random_state=0)
    assert not any(str(c).endswith(("cell", "category_label")) for c in mixed.posterior.coords)
    assert export.cell_coords(GaussianNB().fit(X, y)) == {}


def test_a_per_feature_hyperparameter_keeps_its_feature_names_beside_the_cells():
    # Why the cells' feature coordinate is cell_feature and not feature: a per-feature
    # hyperparameter puts a feature dim in the same group, named by the columns.
    import numpyro.distributions as dist

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.integers(0, 2, 40), "b": rng.integers(0, 4, 40)})
    y = rng.integers(0, 2, 40)
    est = CategoricalNB(alpha=dist.Gamma(2.0, 1.0).expand((2,)), hyper_warmup=100, hyper_draws=100,
                        random_state=0).fit(X, y)
    idata = est.to_inference_data(random_state=0)
    post = idata.posterior
    assert post["alpha"].dims == ("chain", "draw", "feature")
    assert post.coords["feature"].values.tolist() == ["a", "b"]
    assert post["feature_probs"].dims == ("chain", "draw", "class", "cell")
    assert idata.constant_data["cell_feature"].values.tolist() == ["a", "a", "b", "b", "b", "b"]
    assert np.all(np.isfinite(post["alpha"].values)) and np.all(np.isfinite(post["feature_probs"].values))
