"""The numpyro model and the log-odds terms are members of every family (Family.model, Family.feature_log_odds).

Oracles: SciPy's densities of the same rows under the parameters the numpyro model
sampled; the family's own plug-in log-likelihood for the log-odds terms (a double
difference over rows and classes, in which every term that depends on neither the
row nor the class cancels).
"""

from __future__ import annotations

import ast
from pathlib import Path

import jax
import numpy as np
import pytest
from scipy import stats as st

from bayesnb.core import families
from bayesnb.core._x64 import enable_x64
from bayesnb.ppl import models

numpyro = pytest.importorskip("numpyro")

N_ROWS, N_FEATURES, N_CLASSES = 9, 3, 2


def _rows(support, rng):
    """Rows of the kind of values the family's ``support`` names."""
    make = {
        "counts": lambda: rng.poisson(2.0, (N_ROWS, N_FEATURES)),
        "binary": lambda: rng.integers(0, 2, (N_ROWS, N_FEATURES)),
        "codes": lambda: np.column_stack([rng.integers(0, k, N_ROWS) for k in (2, 3, 4)]),
        "real": lambda: rng.normal(1.0, 2.0, (N_ROWS, N_FEATURES)),
        "positive": lambda: rng.exponential(1.5, (N_ROWS, N_FEATURES)),
    }
    return make[support]()


def _data(family, seed=0):
    rng = np.random.default_rng(seed)
    X = _rows(family.support, rng)
    y = np.arange(N_ROWS) % N_CLASSES
    stats = family.stats(X, y, N_CLASSES)
    return X, y, family.default_prior(stats), stats


def _onehot_logpmf(x, p):
    # log p[x] as SciPy's multinomial with one trial.
    return st.multinomial.logpmf(np.eye(p.shape[-1])[x], 1, p)


# SciPy log density of the rows (X, class indices y) under the canonical parameters,
# keyed by the family's support and its canonical variables.
_SCIPY = {
    ("counts", ("feature_probs",)): lambda X, y, v, prior: sum(
        st.multinomial.logpmf(x, x.sum(), v["feature_probs"][c]) for x, c in zip(X, y)
    ),
    ("binary", ("feature_probs",)): lambda X, y, v, prior: st.bernoulli.logpmf(X, v["feature_probs"][y]).sum(),
    ("codes", ("feature_probs",)): lambda X, y, v, prior: sum(
        _onehot_logpmf(X[i, j], v["feature_probs"][y[i], j, : int(prior.n_categories[j])])
        for i in range(X.shape[0])
        for j in range(X.shape[1])
    ),
    ("counts", ("rate",)): lambda X, y, v, prior: st.poisson.logpmf(X, v["rate"][y]).sum(),
    # The Pólya rows: a document's theta integrated out (it does not enter the rows' density).
    ("counts", ("document_probs",)): lambda X, y, v, prior: sum(
        st.dirichlet_multinomial.logpmf(x, np.asarray(prior.concentration)[c], int(x.sum())) for x, c in zip(np.asarray(X), y)
    ),
    ("positive", ("rate",)): lambda X, y, v, prior: st.expon.logpdf(X, scale=1.0 / v["rate"][y]).sum(),
    ("real", ("loc", "var")): lambda X, y, v, prior: st.norm.logpdf(X, v["loc"][y], np.sqrt(v["var"][y])).sum(),
    ("real", ("covariance", "loc")): lambda X, y, v, prior: sum(
        st.multivariate_normal.logpdf(x, v["loc"][c], v["covariance"] if v["covariance"].ndim == 2 else v["covariance"][c])
        for x, c in zip(X, y)
    ),
}


def test_every_registered_family_has_a_numpyro_model():
    missing = [name for name in families.names() if families.get(name).model is None]
    assert not missing, f"families without a numpyro model (Family.model): {missing}"


@pytest.mark.parametrize("name", families.names())
def test_rows_model_log_density_is_scipys(name):
    family = families.get(name)
    X, y, prior, _ = _data(family)
    rows_model, _ = models.family_models(family)
    kwargs = dict(X=X, y=y, prior=prior, class_prior=np.array([0.4, 0.6]))
    with enable_x64():
        trace = numpyro.handlers.trace(numpyro.handlers.seed(rows_model, 3)).get_trace(**kwargs)
        site = trace["x"]
        log_density = float(np.sum(site["fn"].log_prob(site["value"])))
    spec = family.model(prior)
    values = spec.canonical({k: np.asarray(v["value"]) for k, v in trace.items() if k in spec.variables})
    oracle = _SCIPY.get((family.support, tuple(sorted(spec.variables))))
    assert oracle is not None, f"add a SciPy oracle for the {name} family to this test"
    expected = float(oracle(np.asarray(X), y, {k: np.asarray(v, dtype=np.float64) for k, v in values.items()}, prior))
    assert np.isfinite(expected)
    np.testing.assert_allclose(log_density, expected, rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize("name", families.names())
def test_module_functions_are_the_factorys(name):
    family = families.get(name)
    rows, stats = models.family_models(family)
    assert getattr(models, f"{name}_model") is rows and getattr(models, f"{name}_stats_model") is stats
    assert {f"{name}_model", f"{name}_stats_model"} <= set(models.__all__)
    assert rows.__name__ == f"{name}_model" and family.prior_type.__name__ in rows.__doc__


def test_a_family_without_a_model_is_refused():
    fam = families.get("poisson")._replace(name="no_model_here", model=None)
    with pytest.raises(TypeError, match="no numpyro model for family 'no_model_here'"):
        models.family_models(fam)


@pytest.mark.parametrize("name", [n for n in families.names() if families.get(n).feature_log_odds is not None])
def test_log_odds_terms_are_the_row_dependent_part_of_the_log_likelihood(name):
    family = families.get(name)
    X, _, prior, stats = _data(family, seed=1)
    params = family.sample(jax.random.key(0), family.posterior(prior, stats), 4)
    terms, feature, category, unit = family.feature_log_odds(params, prior)
    terms = np.asarray(terms)
    assert isinstance(unit, str) and unit
    assert terms.shape[:2] == (4, N_CLASSES) and terms.shape[2] == feature.shape[0]
    Xd = np.asarray(X)
    counts = Xd[:, feature] if category is None else (Xd[:, feature] == category).astype(np.float64)
    for d in range(4):
        one = jax.tree.map(lambda a: np.asarray(a)[d], params)
        ll = np.asarray(family.log_likelihood(one, X, prior), dtype=np.float64)
        # log p(x | c) - log p(x | k) - sum_t n_t(x) (term_ct - term_kt) is the same for every row.
        rest = (ll[:, 0] - ll[:, 1]) - counts @ (terms[d, 0] - terms[d, 1])
        np.testing.assert_allclose(rest, rest[0], rtol=0, atol=1e-9)


_LAYERS = (
    "bayesnb.ppl.models",
    "bayesnb.ppl.export",
    "bayesnb.ppl.sbc",
    "bayesnb.ppl.mcmc",
    "bayesnb.analysis.uncertainty",
    "bayesnb.core._fitted",
)


@pytest.mark.parametrize("module", _LAYERS)
def test_ppl_and_analysis_layers_do_not_import_the_estimators(module):
    import importlib

    tree = ast.parse(Path(importlib.import_module(module).__file__).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            imported.add(("." * node.level) + (node.module or ""))
            imported.update(f"{'.' * node.level}{node.module or ''}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            imported.update(a.name for a in node.names)
    assert not [m for m in imported if "estimators" in m.split(".")], imported


# The layers' reading of a fitted estimator (bayesnb.core._fitted) against the estimator's own
# methods: the same draws from the same random_state (the key splitting the docs promise),
# the same generated rows, the same posterior draws of the class probabilities.
_CASES = ("multinomial", "categorical", "gaussian_shared", "mixed", "evidence_missing")


@pytest.mark.parametrize("name", _CASES)
@pytest.mark.parametrize("prior", [False, True])
def test_draws_are_the_estimators_own(name, prior):
    from _ppl_cases import fitted

    from bayesnb.core import _fitted

    est = fitted(name).estimator
    log_class, params = _fitted.draws(est.fitted_model(), 6, 11, prior=prior)
    ref_class, ref_params = est._draw(6, 11, prior=prior)
    np.testing.assert_array_equal(log_class, ref_class)
    for got, want in zip(jax.tree.leaves(params), jax.tree.leaves(ref_params)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", _CASES)
def test_generated_rows_and_probability_draws_are_the_estimators_own(name):
    from _ppl_cases import fitted

    from bayesnb.analysis import uncertainty as U
    from bayesnb.core import _fitted

    case = fitted(name)
    est = case.estimator
    _, params = _fitted.draws(est.fitted_model(), 1, 2)
    one = jax.tree.map(lambda a: np.asarray(a)[0], params)
    y_index = np.arange(5) % est.classes_.size
    key = jax.random.key(4)
    np.testing.assert_array_equal(_fitted.simulate(key, est.fitted_model(), one, y_index), est._simulate_features(key, one, y_index))
    X = case.X[:5] if not hasattr(case.X, "iloc") else case.X.iloc[:5]
    got = U.proba_draws(U.draw_source(est, X, 7, 1))
    np.testing.assert_allclose(got, est.predict_proba_draws(X, 7, 1), rtol=1e-12, atol=1e-15)
