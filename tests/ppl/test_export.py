"""arviz export of the closed-form posterior (bayesnb.ppl.export, estimator.to_inference_data).

Oracles: arviz itself (summary, loo, waic, plots must run on the result), scipy's
densities for the pointwise log-likelihood and the class probabilities of new rows, and
the closed-form posterior moments for the iid draws (within 5 Monte Carlo standard
errors).
"""

from __future__ import annotations

import arviz as az
import matplotlib
import numpy as np
import pandas as pd
import pytest
from _ppl_cases import NAMES, fitted
from numpy.testing import assert_allclose
from scipy import stats as sps
from scipy.special import logsumexp

from bayesnb.analysis import _arviz
from bayesnb.analysis.elpd import elpd_values
from bayesnb.ppl import export, models

matplotlib.use("Agg")


@pytest.mark.parametrize("name", NAMES)
def test_inference_data_groups_dims_coords_and_arviz(name):
    case = fitted(name)
    est = case.estimator
    X = case.X
    X_new = X.iloc[:3] if hasattr(X, "iloc") else X[:3]
    idata = est.to_inference_data(100, random_state=0, X_new=X_new, X=X, y=case.y, n_chains=2)
    groups = set(export.group_names(idata))
    assert {"posterior", "prior", "observed_data", "log_likelihood", "posterior_predictive", "predictions"} <= groups
    post = idata.posterior
    assert dict(post.sizes)["chain"] == 2 and dict(post.sizes)["draw"] == 100
    assert list(post.coords["class"].values) == list(est.classes_)
    for var, dims in export.exported_dims(est).items():
        if var == "class_probs" and est.class_dirichlet_ is None:
            assert var not in post and "class_probs" in idata.constant_data
            continue
        assert post[var].dims == ("chain", "draw") + dims
        # The exported layout holds no padding: every draw of every parameter is a number.
        assert np.all(np.isfinite(post[var].values)) and np.all(np.isfinite(idata.prior[var].values)), var
    # arviz runs on it: summary (every free scalar), PSIS-LOO and WAIC.
    summary = az.summary(idata, kind="stats")
    assert np.isfinite(summary["mean"]).sum() > 0
    loo = elpd_values(az.loo(idata, pointwise=True, var_name="xy"))
    assert np.isfinite(loo.elpd) and loo.pointwise.shape == (len(case.y),)
    if hasattr(az, "waic"):  # arviz 0.x only: arviz 1.x has no WAIC
        assert np.isfinite(elpd_values(az.waic(idata, var_name="xy")).elpd)
    pred = idata.predictions["class_proba"]
    assert pred.dims == ("chain", "draw", "new_data", "class")
    assert_allclose(pred.sum("class"), 1.0, rtol=1e-12)
    assert idata.log_likelihood["xy"].dims == ("chain", "draw", "data")
    # Labels are integer codes into the class coordinate (arviz's numeric plots take no strings).
    assert idata.posterior_predictive["y"].dtype.kind == "i"
    assert set(np.unique(idata.posterior_predictive["y"])) <= set(range(est.classes_.size))
    codes = idata.observed_data["y"].values
    assert codes.dtype.kind == "i"
    assert list(est.classes_[codes]) == list(np.asarray(case.y))
    assert list(idata.observed_data["label"].values) == [str(v) for v in np.asarray(case.y)]
    # What is predicted is observed; what it is conditioned on is constant (arviz's conventions).
    assert set(idata.observed_data.data_vars) == set(idata.posterior_predictive.data_vars) == {"y"}


def test_feature_names_from_a_dataframe_and_block_dims():
    case = fitted("mixed")
    idata = case.estimator.to_inference_data(50, random_state=1)
    post = idata.posterior
    assert post["gaussian__loc"].dims == ("chain", "draw", "class", "gaussian__feature")
    assert list(post.coords["gaussian__feature"].values) == ["length"]
    assert list(post.coords["bernoulli__feature"].values) == ["urgent"]
    assert list(idata.constant_data["categorical__cell_feature"].values) == ["sender"] * 3
    assert post["categorical__feature_probs"].dims == ("chain", "draw", "class", "categorical__cell")
    assert list(post.coords["categorical__cell"].values) == ["sender=bank", "sender=friend", "sender=shop"]


def test_feature_names_of_a_plain_estimator():
    case = fitted("gaussian")
    frame = pd.DataFrame(case.X, columns=["height", "weight"])
    est = case.estimator.fit(frame, case.y)
    idata = est.to_inference_data(20, random_state=0)
    assert list(idata.posterior.coords["feature"].values) == ["height", "weight"]
    est.fit(case.X, case.y)
    assert list(est.to_inference_data(20, random_state=0).posterior.coords["feature"].values) == ["x0", "x1"]


def test_categorical_cells_are_those_that_exist():
    # Features with 2 and 3 categories: 5 cells, none of them padding.
    case = fitted("categorical")
    idata = case.estimator.to_inference_data(30, random_state=0)
    probs = idata.posterior["feature_probs"]
    assert probs.dims[-1] == "cell" and probs.sizes["cell"] == 2 + 3
    assert probs.coords["cell"].values.tolist() == ["x0=0", "x0=1", "x1=0", "x1=1", "x1=2"]
    assert not np.any(np.isnan(probs.values))
    assert_allclose(probs.groupby(idata.constant_data["cell_feature"]).sum(), 1.0, rtol=1e-12)


@pytest.mark.parametrize("name", ["multinomial", "gaussian_full", "poisson"])
def test_posterior_draws_have_the_closed_form_moments(name):
    case = fitted(name)
    est = case.estimator
    n = 4000
    post = est.to_inference_data(n // 2, random_state=2).posterior  # the default 2 chains
    assert dict(post.sizes)["chain"] == 2
    for var, (mean, sd) in models.posterior_moments(est).items():
        draws = post[var].values.reshape((n,) + mean.shape)
        finite = np.isfinite(mean) & np.isfinite(sd) & (sd > 0)
        z = (draws.mean(axis=0)[finite] - mean[finite]) / (sd[finite] / np.sqrt(n))
        assert np.all(np.abs(z) < 5), (var, z)
        assert_allclose(draws.std(axis=0)[finite], sd[finite], rtol=0.1)


def test_log_likelihood_and_predictions_against_scipy():
    """xy[d, i] = log pi_{y_i} + sum_j log N(x_ij; mu, sigma^2) under draw d, by scipy."""
    case = fitted("gaussian")
    est, X, y = case.estimator, case.X, case.y
    X_new = X[:4] + 0.3
    idata = est.to_inference_data(40, random_state=3, X=X, y=y, X_new=X_new)
    post = idata.posterior
    y_index = np.searchsorted(est.classes_, y)
    for d in (0, 17, 39):
        loc = post["loc"].values[0, d]
        var = post["var"].values[0, d]
        log_pi = np.log(post["class_probs"].values[0, d])
        joint = lambda rows: log_pi + sps.norm.logpdf(rows[:, None, :], loc, np.sqrt(var)).sum(axis=-1)  # noqa: E731
        train = joint(X)
        assert_allclose(idata.log_likelihood["xy"].values[0, d], train[np.arange(len(y)), y_index], rtol=1e-10)
        new = joint(X_new)
        assert_allclose(
            idata.predictions["class_proba"].values[0, d], np.exp(new - logsumexp(new, axis=1, keepdims=True)), rtol=1e-9
        )
    assert list(est.classes_[idata.observed_data["y"].values]) == list(y)
    assert_allclose(idata.constant_data["X"].values, X)
    assert_allclose(idata.predictions_constant_data["X_new"].values, X_new)


def test_loo_of_the_exact_draws_is_close_to_the_exact_leave_one_out():
    """PSIS-LOO on the iid draws against the exact leave-one-out predictive of the closed form."""
    case = fitted("bernoulli")
    est, X, y = case.estimator, case.X, case.y
    loo = elpd_values(az.loo(est.to_inference_data(4000, random_state=0, X=X, y=y), pointwise=True, var_name="xy"))
    exact = []
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        other = type(est)(**est.get_params()).fit(X[keep], y[keep])
        joint = other.predict_joint_log_proba(X[i : i + 1])[0]
        exact.append(joint[np.searchsorted(est.classes_, y[i])])
    assert_allclose(loo.pointwise.values, exact, atol=0.05)


def test_plots_run(tmp_path):
    import matplotlib.pyplot as plt

    case = fitted("poisson")
    idata = case.estimator.to_inference_data(200, random_state=0)
    if _arviz.major() >= 1:  # arviz-plots: plot_dist is 0.x's plot_posterior
        az.plot_dist(idata, var_names=["rate"], backend="matplotlib")
        az.plot_forest(idata, var_names=["rate"], combined=True, backend="matplotlib")
    else:
        az.plot_posterior(idata, var_names=["rate"])
        az.plot_forest(idata, var_names=["rate"], combined=True)
    plt.savefig(tmp_path / "forest.png")
    plt.close("all")
    assert (tmp_path / "forest.png").stat().st_size > 0


def test_export_errors():
    case = fitted("poisson")
    with pytest.raises(ValueError, match="both X and y"):
        case.estimator.to_inference_data(10, X=case.X)
    with pytest.raises(ValueError, match="n_draws"):
        case.estimator.to_inference_data(0)
    with pytest.raises(ValueError, match="not in classes_"):
        case.estimator.to_inference_data(10, X=case.X, y=np.array(["x"] * len(case.y)))


def test_unobserved_entries_are_nan_in_the_data_and_left_out_of_the_likelihood():
    """missing="ignore": xy[d, i] = log pi_{y_i} + sum over the observed j of log N(x_ij), by scipy."""
    case = fitted("gaussian")
    X = case.X.copy()
    X[:5, 1] = np.nan
    X[9, 0] = np.nan
    est = type(case.estimator)(**{**case.estimator.get_params(), "missing": "ignore"}).fit(X, case.y)
    X_new = np.array([[0.3, np.nan], [np.nan, np.nan], [1.0, -0.5]])
    idata = est.to_inference_data(30, random_state=1, X=X, y=case.y, X_new=X_new)
    observed = ~np.isnan(X)
    assert_allclose(idata.constant_data["X"].values, X)  # NaN where unobserved (assert_allclose: NaN == NaN)
    post = idata.posterior
    y_index = np.searchsorted(est.classes_, case.y)
    for d in (0, 29):
        loc, var = post["loc"].values[0, d], post["var"].values[0, d]
        log_pi = np.log(post["class_probs"].values[0, d])

        def joint(rows):
            entries = sps.norm.logpdf(np.nan_to_num(rows)[:, None, :], loc, np.sqrt(var))
            return log_pi + np.where(np.isnan(rows)[:, None, :], 0.0, entries).sum(axis=-1)

        train = joint(X)
        assert_allclose(idata.log_likelihood["xy"].values[0, d], train[np.arange(len(y_index)), y_index], rtol=1e-10)
        new = joint(X_new)
        assert_allclose(idata.predictions["class_proba"].values[0, d], np.exp(new - logsumexp(new, axis=1, keepdims=True)),
                        rtol=1e-9)
    # A row with nothing observed gets the class proportions of the draw.
    assert_allclose(idata.predictions["class_proba"].values[0, :, 1], post["class_probs"].values[0], rtol=1e-12)
    assert np.isfinite(elpd_values(az.loo(idata, var_name="xy")).elpd) and observed.sum() < X.size
