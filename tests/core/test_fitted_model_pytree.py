"""The estimator is read once, at the front (issue 41, item 7).

``estimator.fitted_model()`` builds one immutable pytree
(:class:`bayesnb.core._fitted.FittedModel`); the analysis and ppl entry points take it
where they take the estimator. Here, for a small model of every registered family (read
off the registry, ``tests/_registered.py``) and a :class:`~bayesnb.MixedNB`: the results
of every entry point are computed from the estimator, the estimator is deleted (and
checked to be gone: the pytree holds no reference to it), and the same entry points,
given the pytree and the same ``random_state``, give the same results (to 1e-12: the
same arithmetic in the same order, so a few ulps at most).

The oracle is the estimator's own path, itself checked against independent oracles
(scikit-learn, numpyro, Monte Carlo) by the tests of each entry point.
"""

from __future__ import annotations

import gc
import weakref

import jax
import numpy as np
import pandas as pd
import pytest
from _registered import family_estimators, rows_in_support
from sklearn.base import clone

from bayesnb import MixedNB
from bayesnb.analysis import _arviz, plots
from bayesnb.analysis.elpd import elpd_values, loo
from bayesnb.analysis.evidence import log_marginal_likelihood, relevance_log_bayes_factor
from bayesnb.analysis.ppc import ppc
from bayesnb.analysis.uncertainty import (
    decompose_uncertainty,
    feature_log_odds_draws,
    predict_proba_draws,
    predict_proba_interval,
    rank_by_epistemic,
    top_features,
)
from bayesnb.core._fitted import FittedModel
from bayesnb.ppl.export import to_inference_data
from bayesnb.ppl.models import model_from_estimator
from bayesnb.ppl.sbc import simulation_based_calibration

CASES = [(name, support, est) for name, support, est in family_estimators()] + [("mixed", "mixed", MixedNB())]


def _rows(X, idx):
    return X.iloc[idx] if isinstance(X, pd.DataFrame) else X[idx]


class Raised(tuple):
    """What an entry point raised: (type name, message)."""


def _outcome(call):
    """``call()``'s value, or the type and message of what it raised (the same refusal either way)."""
    try:
        return call()
    except (TypeError, ValueError) as exc:
        return Raised((type(exc).__name__, str(exc)))


def _model(model, kwargs):
    """A numpyro model and its arguments: the same function with the same leaves is the same model."""
    leaves, treedef = jax.tree.flatten(kwargs, is_leaf=lambda v: v is None)
    return model, str(treedef), [np.asarray(v) if isinstance(v, (np.ndarray, jax.Array)) else v for v in leaves]


def _groups(idata):
    return {
        f"{group}/{var}": np.asarray(ds[var].values)
        for group in _arviz.group_names(idata)
        for ds in [_arviz.get_group(idata, group)]
        for var in ds.data_vars
    }


def _results(model, X, y, X_new):
    """Every analysis and ppl entry point on ``model`` (an estimator or its pytree), same seeds."""
    return {
        "predict_proba_draws": _outcome(lambda: predict_proba_draws(model, X_new, 4, random_state=1)),
        "predict_proba_interval": _outcome(
            lambda: predict_proba_interval(model, X_new, 0.8, n_draws=4, random_state=2, return_median=True)
        ),
        "predict_proba_draws_updated": _outcome(
            lambda: predict_proba_draws(model, X_new, 4, random_state=8, posterior="updated")
        ),
        "predict_proba_interval_updated": _outcome(
            lambda: predict_proba_interval(
                model, X_new, 0.8, n_draws=4, random_state=9, posterior="updated", return_median=True
            )
        ),
        "decompose_uncertainty": _outcome(lambda: tuple(decompose_uncertainty(model, X_new, n_draws=4, random_state=3))),
        "rank_by_epistemic": _outcome(lambda: tuple(rank_by_epistemic(model, X_new, n_draws=4, random_state=3))),
        "feature_log_odds_draws": _outcome(
            lambda: tuple(feature_log_odds_draws(model, "b", n_draws=4, random_state=4))
        ),
        "top_features": _outcome(lambda: tuple(top_features(model, "b", 3, n_draws=4, random_state=4))),
        "to_inference_data": _outcome(
            lambda: _groups(to_inference_data(model, 4, random_state=5, X_new=X_new, X=X, y=y))
        ),
        "model_from_estimator": _outcome(lambda: _model(*model_from_estimator(model, X, y))),
        "model_from_estimator_stats": _outcome(lambda: _model(*model_from_estimator(model, X, y, form="stats"))),
        "ppc": _outcome(lambda: (lambda r: (r.observed, r.p_value))(ppc(model, X, y, n_draws=8, random_state=6))),
        "simulation_based_calibration": _outcome(lambda: _sbc(model)),
        "loo": _outcome(lambda: _loo(model, X, y, "conditional")),
        "loo_joint": _outcome(lambda: _loo(model, X, y, "joint")),
        "log_marginal_likelihood": _outcome(lambda: log_marginal_likelihood(model, X, y)),
        "relevance_log_bayes_factor": _outcome(lambda: relevance_log_bayes_factor(model)),
        "plots.top_features": _outcome(lambda: _axes(plots.top_features(model, "b", 3, n_draws=4, random_state=4))),
        "plots.uncertainty_histogram": _outcome(
            lambda: _axes(plots.uncertainty_histogram(model, X_new, n_draws=4, random_state=3))
        ),
    }


def _loo(model, X, y, kind):
    """The pointwise leave-one-out values, the elpd's effective number of parameters and its flags."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an approximate leave-one-out warns, from either side
        values = elpd_values(loo(model, X, y, kind=kind))
    return np.asarray(values.pointwise), float(values.p), values.warning, values.approximate_reason


def _axes(ax):
    """What a plot shows: its tick labels and the data of its lines and bars."""
    import matplotlib.pyplot as plt

    shown = (
        [t.get_text() for t in ax.get_yticklabels()],
        [np.asarray(line.get_xydata()) for line in ax.get_lines()],
        [np.asarray(p.get_path().vertices) for p in ax.patches],
    )
    plt.close(ax.figure)
    return shown


def _sbc(model):
    """What simulation-based calibration computes (two small simulations: the arithmetic, not a verdict)."""
    r = simulation_based_calibration(model, 3, n_simulations=2, n_draws=9, n_bins=2, random_state=7)
    return r.names, r.ranks, r.predictive_ranks, np.asarray(r.evidence_deviation), np.asarray(r.sharpness)


def _assert_same(actual, expected, where):
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and sorted(actual) == sorted(expected), where
        for k in expected:
            _assert_same(actual[k], expected[k], f"{where}/{k}")
    elif isinstance(expected, Raised):
        assert isinstance(actual, Raised) and actual == expected, (where, actual, expected)
    elif isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)) and len(actual) == len(expected), where
        for i, (a, e) in enumerate(zip(actual, expected)):
            _assert_same(a, e, f"{where}[{i}]")
    elif isinstance(expected, (pd.DataFrame, pd.Series)):
        pd.testing.assert_index_equal(actual.index, expected.index)
        _assert_same(actual.to_numpy(), expected.to_numpy(), where)
    elif isinstance(expected, np.ndarray) and expected.dtype.kind in "fc":
        np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-12, err_msg=where)
    elif isinstance(expected, np.ndarray):
        np.testing.assert_array_equal(actual, expected, err_msg=where)
    elif isinstance(expected, float):
        np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-12, err_msg=where)
    else:
        assert actual == expected, where


@pytest.fixture(scope="module", params=CASES, ids=[name for name, _, _ in CASES])
def case(request):
    """(pytree, weak reference to the deleted estimator, X, y, X_new, the estimator's results)."""
    name, support, unfitted = request.param
    X, y = rows_in_support(support, np.random.default_rng(7), 16)
    X_new = _rows(X, [0, 5, 9, 14])
    # Hyperparameters learned from the evidence by default (Polya's precision) are fixed:
    # what is checked here is the reading of a fitted model, not the learning, and the
    # learning takes seconds.
    est = clone(unfitted)
    est.set_params(**{k: 1.0 for k, v in est.get_params(deep=False).items() if isinstance(v, str) and v == "evidence"})
    est.fit(X, y)
    expected = _results(est, X, y, X_new)
    fitted = est.fitted_model()
    gone = weakref.ref(est)
    del est
    gc.collect()
    return fitted, gone, X, y, X_new, expected


def test_the_pytree_outlives_the_estimator_and_holds_no_reference_to_it(case):
    fitted, gone, *_ = case
    assert gone() is None
    assert isinstance(fitted, FittedModel)
    # A pytree: its arrays are leaves, tree_map rebuilds a FittedModel with the same static part.
    leaves = jax.tree.leaves(fitted)
    assert leaves and all(hasattr(leaf, "shape") or np.isscalar(leaf) for leaf in leaves)
    again = jax.tree.map(lambda a: a, fitted)
    assert isinstance(again, FittedModel) and again.family is fitted.family
    with pytest.raises(AttributeError):
        fitted.posterior = None  # frozen


def test_every_entry_point_gives_the_estimators_results_from_the_pytree(case):
    fitted, gone, X, y, X_new, expected = case
    assert gone() is None
    actual = _results(fitted, X, y, X_new)
    # Most entry points apply to every family; the refusals (e.g. log-odds of a Gaussian)
    # are the same from the pytree.
    applied = [k for k, v in expected.items() if not isinstance(v, Raised)]
    assert {"predict_proba_draws", "predict_proba_interval", "predict_proba_draws_updated",
            "predict_proba_interval_updated", "decompose_uncertainty", "rank_by_epistemic",
            "to_inference_data", "model_from_estimator", "simulation_based_calibration", "loo", "loo_joint",
            "plots.uncertainty_histogram"} <= set(applied)
    for key in expected:
        _assert_same(actual[key], expected[key], key)


def test_the_scikit_learn_namespace_builds_its_pytree_through_the_base():
    import bayesnb.sklearn as sk

    X, y = rows_in_support("counts", np.random.default_rng(2), 8)
    est = sk.MultinomialNB().fit(X, y)
    fitted = est.fitted_model()
    assert isinstance(fitted, FittedModel) and fitted.name == "MultinomialNB"
    np.testing.assert_allclose(fitted.posterior.concentration, est.posterior_.concentration, rtol=1e-12)
    # Its own class prior (scikit-learn's, not the Dirichlet posterior of bayesnb's MultinomialNB).
    if est.class_posterior_ is None:
        np.testing.assert_allclose(fitted.class_prior, est.class_prior_, rtol=1e-12)
    np.testing.assert_allclose(
        predict_proba_draws(fitted, X, 4, random_state=0), est.predict_proba_draws(X, 4, random_state=0), rtol=1e-12
    )


def test_the_crosscheck_runs_from_the_pytree_after_the_estimator_is_gone():
    """crosscheck's closed side (moments, exact draws, the predictive) from the pytree alone, against the same NUTS run."""
    from bayesnb import BernoulliNB
    from bayesnb.ppl.mcmc import crosscheck, run_nuts

    X, y = rows_in_support("binary", np.random.default_rng(3), 24)
    est = BernoulliNB().fit(X, y)
    nuts = run_nuts(est, X, y, num_warmup=100, num_samples=100, num_chains=2, random_state=0)
    expected = crosscheck(est, X, y, nuts=nuts, random_state=1)
    expected_idata = _groups(expected.closed_form_inference_data)
    # The estimator's own exact predictive (its default estimate), asked directly: the
    # closed side of the rows compared.
    assert est.estimate == "predictive"
    direct = est.predict_proba(X[:5])
    fitted = est.fitted_model()
    gone = weakref.ref(est)
    del est
    gc.collect()
    assert gone() is None
    actual = crosscheck(fitted, X, y, nuts=nuts, random_state=1)
    assert len(expected.parameters) > 0
    for name in ("parameters", "predictive"):
        pd.testing.assert_frame_equal(getattr(actual, name), getattr(expected, name), check_exact=False, rtol=1e-12)
    assert actual.agrees == expected.agrees
    np.testing.assert_allclose(actual.predictive["closed"].to_numpy().reshape(5, 2), direct, rtol=1e-12)
    _assert_same(_groups(actual.closed_form_inference_data), expected_idata, "closed_form_inference_data")


def test_the_hyperparameters_mixture_is_read_from_the_pytree_after_the_estimator_is_gone():
    """The closed side with integrated hyperparameters (the mixture's moments and stratified
    draws, the per-draw joints of its predictive) from the pytree alone. The estimator is
    test_closed_form_mixture's, whose oracles check that mixture itself."""
    import numpyro.distributions as dist

    from bayesnb import BernoulliNB
    from bayesnb.ppl.mcmc import closed_form

    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 40)
    X = (rng.random((40, 3)) < np.where(y[:, None] == 1, 0.7, 0.3)).astype(int)
    est = BernoulliNB(alpha=dist.Gamma(2.0, 1.0), hyper_warmup=200, hyper_draws=200, random_state=0).fit(X, y)
    expected = closed_form(est, 1000, 0)
    joints = est.hyper_joint_log_proba_draws(X[:5])
    chains = est.hyper_diagnostics_["num_chains"]
    fitted = est.fitted_model()
    gone = weakref.ref(est)
    del est
    gc.collect()
    assert gone() is None
    actual = closed_form(fitted, 1000, 0)
    assert fitted.hyper_chains == chains >= 2
    _assert_same(actual.moments, expected.moments, "moments")
    _assert_same(actual.draws, expected.draws, "draws")
    assert actual.strata == expected.strata and actual.strata["alpha"][0] == chains
    np.testing.assert_allclose(fitted.hyper_joint_draws(X[:5]), joints, rtol=1e-12)
