"""bayesnb on both arviz lines: 0.x (InferenceData, Python 3.11) and 1.x (DataTree, Python >= 3.12).

The same tests run on either line (CI runs this file on both, see ``.ci/run``):

* the adapter (:mod:`bayesnb.analysis._arviz`) returns the installed arviz's native
  objects, ``InferenceData`` / ``DataTree`` and ``ELPDData``, with the same groups,
  names, dims and coords;
* a single family (``PoissonNB``) and a ``MixedNB`` fitted on a DataFrame with string
  categories and string labels: ``to_inference_data`` -> ``az.summary``, the posterior
  predictive check on arviz's defaults (``az.plot_ppc`` on 0.x, ``plot_ppc_dist`` on
  1.x), a forest plot of the closed form beside NUTS converted by the same code,
  ``az.loo`` / ``az.compare`` on exports and on :func:`bayesnb.loo` results; the names
  survive as coordinates;
* the numbers do not depend on the arviz line. Oracles independent of arviz on both
  sides: scipy's Poisson density of the exported draws for the pointwise
  log-likelihood, brute-force refits for :func:`bayesnb.loo`; and
  ``tests/ppl/data/arviz_reference.json``, written on Python 3.11 with arviz 0.2x by
  ``python tests/ppl/test_arviz_versions.py --write`` (the same seed), which every line
  must reproduce to 1e-10: posterior means, pointwise log-likelihoods, PSIS-LOO values
  of the export and the exact LOO values.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import arviz as az
import matplotlib
import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from scipy import stats as sps

import bayesnb
from bayesnb.analysis import _arviz
from bayesnb.analysis.elpd import elpd_values
from bayesnb.ppl import export

matplotlib.use("Agg")

REFERENCE = Path(__file__).with_name("data") / "arviz_reference.json"
N_DRAWS = 100  # per chain, 2 chains


def _poisson():
    rng = np.random.default_rng(0)
    y = np.array(["low", "high"] * 12)
    X = rng.poisson(np.where(y[:, None] == "high", [4.0, 1.0, 2.0], [1.0, 3.0, 2.0]))
    return bayesnb.PoissonNB().fit(X, y), X, y


def _mixed():
    rng = np.random.default_rng(1)
    n = 30
    y = np.where(rng.random(n) < 0.5, "yes", "no")
    y[:2] = ["yes", "no"]
    df = pd.DataFrame(
        {
            "colour": np.where(y == "yes", rng.choice(["red", "green", "blue"], n, p=[0.6, 0.2, 0.2]),
                               rng.choice(["red", "green", "blue"], n, p=[0.2, 0.4, 0.4])),
            "size": rng.choice(["S", "M", "L"], n),
            "weight": rng.normal(size=n) + (y == "yes"),
        }
    )
    return bayesnb.MixedNB().fit(df, y), df, y


CASES = {"poisson": _poisson, "mixed": _mixed}


def _export(name):
    est, X, y = CASES[name]()
    return est, X, y, est.to_inference_data(N_DRAWS, random_state=0, X=X, y=y)


def _reference_values():
    """The numbers every arviz line must reproduce: name -> list of floats."""
    out = {}
    for name in CASES:
        est, X, y, idata = _export(name)
        for var in sorted(idata.posterior.data_vars):
            out[f"{name}/posterior_mean/{var}"] = idata.posterior[var].mean(("chain", "draw")).values.ravel().tolist()
        for var in ("xy", "y"):
            ll = idata.log_likelihood[var].values
            out[f"{name}/log_likelihood/{var}/first_draw"] = ll[0, 0].tolist()
            out[f"{name}/log_likelihood/{var}/row_mean"] = ll.mean(axis=(0, 1)).tolist()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # arviz's Pareto-k warnings on a small data set
            psis = elpd_values(az.loo(idata, pointwise=True, var_name="y"))
        out[f"{name}/psis_loo/y"] = psis.pointwise.values.tolist()
        for kind in ("conditional", "joint"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", bayesnb.ApproximateLOOWarning)  # MixedNB's data-scaled Gaussian prior
                out[f"{name}/bayesnb_loo/{kind}"] = elpd_values(bayesnb.loo(est, X, y, kind=kind)).pointwise.values.tolist()
    return out


# ---------------------------------------------------------------------------- the adapter


def test_from_dict_is_the_installed_arvizs_native_object():
    rng = np.random.default_rng(0)
    groups = {
        "posterior": {"loc": rng.normal(size=(2, 5, 3))},
        "observed_data": {"y": np.array([0, 1, 1, 0])},
        "predictions": {"p": rng.random((2, 5, 4, 2))},
    }
    dims = {"loc": ["feature"], "y": ["data"], "p": ["new_data", "class"]}
    coords = {"feature": ["a", "b", "c"], "class": ["no", "yes"], "data": list(range(4)), "new_data": list(range(4))}
    data = _arviz.from_dict(groups, dims=dims, coords=coords, attrs={"inference_library": "bayesnb"})
    if _arviz.major() >= 1:
        import xarray as xr

        assert isinstance(data, xr.DataTree)
    else:
        assert isinstance(data, az.InferenceData)
    assert sorted(_arviz.group_names(data)) == ["observed_data", "posterior", "predictions"]
    assert data.posterior["loc"].dims == ("chain", "draw", "feature")
    assert data.posterior["loc"].coords["feature"].values.tolist() == ["a", "b", "c"]
    # predictions take the same dims and coords on both lines (arviz 1.x reads pred_dims).
    assert data.predictions["p"].dims == ("chain", "draw", "new_data", "class")
    assert data.predictions["p"].coords["class"].values.tolist() == ["no", "yes"]
    assert data.observed_data["y"].dims == ("data",)
    assert data.attrs["inference_library"] == "bayesnb"
    # set_group / get_group round-trip.
    ds = _arviz.get_group(data, "observed_data").assign(z=("data", np.arange(4.0)))
    _arviz.set_group(data, "observed_data", ds)
    assert data.observed_data["z"].values.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_elpd_data_is_native_and_read_by_one_accessor():
    res = bayesnb.analysis.elpd.elpd_data([-0.5, -1.0, -0.25], p_loo=0.3, approximate=["a reason"])
    assert isinstance(res, az.ELPDData)
    # The installed arviz's own names, and elpd_values' neutral ones.
    native = ("elpd", "elpd_i", "p") if _arviz.major() >= 1 else ("elpd_loo", "loo_i", "p_loo")
    assert res[native[0]] == pytest.approx(-1.75) and res[native[1]].values.tolist() == [-0.5, -1.0, -0.25]
    assert res[native[2]] == pytest.approx(0.3)
    v = elpd_values(res)
    assert v.elpd == pytest.approx(-1.75) and v.p == pytest.approx(0.3) and v.n_data_points == 3
    assert v.se == pytest.approx(np.sqrt(3 * np.var([-0.5, -1.0, -0.25])))
    assert v.warning and v.approximate and v.approximate_reason == "a reason" and v.scale == "log"
    assert "a reason" in str(res["approximate_reason"])


# ---------------------------------------------------------------------------- end to end


@pytest.mark.parametrize("name", sorted(CASES))
def test_export_summary_ppc_and_loo_run_with_names_as_coords(name, tmp_path):
    import matplotlib.pyplot as plt

    est, X, y, idata = _export(name)
    assert set(export.group_names(idata)) >= {
        "posterior", "prior", "observed_data", "constant_data", "log_likelihood", "posterior_predictive",
    }
    # Names survive as coordinates: classes, features, cells (string categories).
    post = idata.posterior
    assert post.coords["class"].values.tolist() == [str(c) for c in est.classes_]
    if name == "mixed":
        assert post.coords["gaussian__feature"].values.tolist() == ["weight"]
        cells = post.coords["categorical__cell"].values.tolist()
        assert cells == ["colour=blue", "colour=green", "colour=red", "size=L", "size=M", "size=S"]
        assert idata.constant_data["categorical__category_label"].values.tolist() == [c.split("=")[1] for c in cells]
    else:
        assert post.coords["feature"].values.tolist() == ["x0", "x1", "x2"]
    # Labels: integer codes, the names as a coordinate.
    assert idata.observed_data["y"].dtype.kind == "i" and idata.posterior_predictive["y"].dtype.kind == "i"
    assert idata.observed_data["label"].values.tolist() == list(y)

    summary = az.summary(idata, kind="stats")
    assert len(summary) > 0 and np.isfinite(np.asarray(summary["mean"], dtype=float)).all()
    assert any("yes" in str(label) or "high" in str(label) for label in summary.index)

    # The posterior predictive check on arviz's defaults (issue 38 item 4).
    if _arviz.major() >= 1:
        az.plot_ppc_dist(idata, backend="matplotlib")
    else:
        az.plot_ppc(idata)
    plt.savefig(tmp_path / "ppc.png")
    plt.close("all")
    assert (tmp_path / "ppc.png").stat().st_size > 0

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Pareto-k warnings of a small data set
        psis = az.loo(idata, pointwise=True, var_name="y")
        exact = bayesnb.loo(est, X, y)
        other = bayesnb.loo(type(est)().fit(X, y) if name == "poisson" else bayesnb.MixedNB(class_alpha=5.0).fit(X, y),
                            X, y)
        table = az.compare({"psis": psis, "exact": exact, "other": other})
    assert isinstance(psis, az.ELPDData) and isinstance(exact, az.ELPDData)
    assert set(table.index) == {"psis", "exact", "other"}
    # PSIS on the exact draws approximates the exact leave-one-out.
    assert abs(elpd_values(psis).elpd - elpd_values(exact).elpd) < 0.1 * abs(elpd_values(exact).elpd) + 1.0
    # az.compare ranks by the elpd it reads: the first row is the largest.
    best = max(("psis", psis), ("exact", exact), ("other", other), key=lambda kv: elpd_values(kv[1]).elpd)[0]
    assert table.index[0] == best


def test_forest_plot_of_the_closed_form_beside_nuts():
    """The cross-check's NUTS run (ESS, R-hat, MCSE, Pareto k through the adapter) beside the closed form."""
    import matplotlib.pyplot as plt

    from bayesnb.ppl.mcmc import crosscheck

    est, X, y = _poisson()
    report = crosscheck(est, X, y, num_warmup=300, num_samples=300, num_chains=2, random_state=0, form="stats")
    assert report.agrees, report
    mcmc, closed = report.mcmc_inference_data, report.closed_form_inference_data
    assert type(mcmc) is type(closed)
    assert mcmc.posterior["rate"].dims == closed.posterior["rate"].dims
    assert mcmc.posterior.coords["class"].values.tolist() == ["high", "low"]
    assert float(np.abs(mcmc.posterior["rate"].mean(("chain", "draw")) - closed.posterior["rate"].mean(("chain", "draw"))).max()) < 0.5
    if _arviz.major() >= 1:
        az.plot_forest({"closed form": closed, "NUTS": mcmc}, var_names=["rate"], combined=True, backend="matplotlib")
        labels = [t.get_text() for ax in plt.gcf().axes for t in ax.texts]
    else:
        axes = az.plot_forest([closed, mcmc], model_names=["closed form", "NUTS"], var_names=["rate"], combined=True)
        labels = [t.get_text() for t in np.ravel(axes)[0].get_yticklabels()]
    assert any("high" in label for label in labels)
    plt.close("all")


# ---------------------------------------------------------------------------- same numbers


def test_pointwise_log_likelihood_is_scipys_density_of_the_exported_draws():
    est, X, y, idata = _export("poisson")
    rate = idata.posterior["rate"].values  # (chain, draw, class, feature)
    log_pi = np.log(idata.posterior["class_probs"].values)  # (chain, draw, class)
    codes = idata.observed_data["y"].values
    assert est.classes_[codes].tolist() == list(y)
    joint = log_pi[:, :, None, :] + sps.poisson.logpmf(X[None, None, :, None, :], rate[:, :, None]).sum(-1)
    rows = np.arange(len(y))
    assert_allclose(idata.log_likelihood["xy"].values, joint[:, :, rows, codes], rtol=1e-10)
    cond = joint - np.logaddexp.reduce(joint, axis=-1, keepdims=True)
    assert_allclose(idata.log_likelihood["y"].values, cond[:, :, rows, codes], rtol=1e-10, atol=1e-12)


def _pinned(est):
    """An unfitted copy of fitted ``est`` whose prior is its fitted ``prior_`` (so refits keep it)."""
    params = est.get_params(deep=False)
    if "prior" in params:
        params["prior"] = est.prior_
    if isinstance(est, bayesnb.CategoricalNB):
        params["min_categories"] = est.n_categories_
    if isinstance(est, bayesnb.MixedNB):
        params["blocks"] = [(name, _pinned(block), cols) for name, block, cols in est.estimators_]
    return type(est)(**params)


@pytest.mark.parametrize("name", sorted(CASES))
def test_exact_loo_equals_brute_force_refits(name):
    est, X, y = CASES[name]()
    pinned = _pinned(est).fit(X, y)
    got = elpd_values(bayesnb.loo(pinned, X, y)).pointwise.values
    want = []
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        Xi, row = (X.iloc[keep], X.iloc[i : i + 1]) if hasattr(X, "iloc") else (X[keep], X[i : i + 1])
        refit = _pinned(est).fit(Xi, y[keep])
        want.append(refit.predict_log_proba(row)[0, list(refit.classes_).index(y[i])])
    assert_allclose(got, want, rtol=1e-8, atol=1e-10)


def test_numbers_equal_the_arviz_0x_reference_to_1e_10():
    """Posterior means, log-likelihoods, PSIS-LOO and exact LOO of the 0.x run (Python 3.11), same seed."""
    reference = json.loads(REFERENCE.read_text())
    got = _reference_values()
    assert sorted(got) == sorted(reference)
    for key, want in reference.items():
        assert_allclose(got[key], want, rtol=1e-10, atol=1e-10, err_msg=key)


if __name__ == "__main__" and "--write" in sys.argv:
    if _arviz.major() != 0:
        sys.exit("write the reference on the arviz 0.x line (Python 3.11)")
    REFERENCE.parent.mkdir(exist_ok=True)
    REFERENCE.write_text(json.dumps(_reference_values(), indent=1) + "\n")
    print(f"wrote {REFERENCE}")
