"""The numpyro generative models (bayesnb.ppl.models).

Oracles: the per-row model and the sufficient-statistics model must be the same model
(equal differences of log density between two parameter points); the model's density
must be the prior of the closed form (scipy's distributions, which share no code with
numpyro or bayesnb); NUTS run on the model's prior alone must reproduce the closed-form
Normal-Inverse-Wishart prior (moments within Monte Carlo error).
"""

from __future__ import annotations

import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _ppl_cases import NAMES, fitted, make
from numpy.testing import assert_allclose
from numpyro import handlers
from numpyro.distributions.transforms import biject_to
from numpyro.infer import Predictive
from numpyro.infer.util import constrain_fn, log_density, potential_energy
from scipy import stats as sps
from scipy.special import digamma

from bayesnb import GaussianBayesClassifier
from bayesnb.core._x64 import enable_x64
from bayesnb.core.priors import Dirichlet, NormalInverseWishart
from bayesnb.ppl import models

# Evaluating numpyro models op by op (or drawing from their priors with jax.random's
# rejection samplers) compiles dozens of XLA programs; the helpers below compile one
# program per model: parameter points are random points of the unconstrained space, whose
# shapes come from an abstract (compile-free) trace of the model.


def _latent_sites(model, kwargs):
    """Shapes of every latent site (constrained and unconstrained), without running anything."""

    def inner():
        trace = handlers.trace(handlers.seed(model, 0)).get_trace(**kwargs)
        latent = {k: v for k, v in trace.items() if v["type"] == "sample" and not v["is_observed"]}
        return {k: (v["value"], biject_to(v["fn"].support).inv(v["value"])) for k, v in latent.items()}

    with enable_x64():
        return jax.eval_shape(inner)


def _unconstrained_points(model, kwargs, seeds=(1, 2), spread=0.7):
    sites = _latent_sites(model, kwargs)
    points = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        points.append({k: spread * rng.standard_normal(u.shape) for k, (_, u) in sites.items()})
    return points


def _abstract_trace(model, kwargs):
    """Site name -> (value shape, plate names) of sample and deterministic sites, compile-free."""
    out = {}

    def inner():
        trace = handlers.trace(handlers.seed(model, 0)).get_trace(**kwargs)
        for k, v in trace.items():
            if v["type"] in ("sample", "deterministic"):
                out[k] = (tuple(np.shape(v["value"])), [f.name for f in v.get("cond_indep_stack", [])])

    with enable_x64():
        jax.eval_shape(inner)
    return out


def _potentials(model, kwargs, points):
    """Potential energy (minus log density plus the same log-Jacobian for every form) at each point."""
    with enable_x64():
        fn = jax.jit(lambda u: potential_energy(model, (), kwargs, u))
        return np.array([float(fn(u)) for u in points])


def _constrained_and_prior_density(model, kwargs, point):
    """The constrained latent values at ``point`` and the log density of the latent sites alone."""

    def fn(u):
        values = constrain_fn(model, (), kwargs, u)
        total, trace = log_density(model, (), kwargs, values)
        observed = sum(jnp.sum(s["fn"].log_prob(s["value"])) for s in trace.values()
                       if s["type"] == "sample" and s["is_observed"])
        return values, total - observed

    with enable_x64():
        values, density = jax.jit(fn)(point)
    return {k: np.asarray(v) for k, v in values.items()}, float(density)


@pytest.mark.parametrize("name", [n for n in NAMES if n != "gaussian_diag"])  # diag: the gaussian spec
def test_rows_and_stats_forms_are_the_same_model(name):
    case = fitted(name)
    est = case.estimator
    rows, rows_kw = models.model_from_estimator(est, case.X, case.y, sample_weight=case.sample_weight)
    stats, stats_kw = models.model_from_estimator(est, case.X, case.y, form="stats", sample_weight=case.sample_weight)
    points = _unconstrained_points(rows, rows_kw)
    # Both forms have the same latent sites, hence the same log-Jacobian at each point.
    diff_rows = np.diff(_potentials(rows, rows_kw, points))
    diff_stats = np.diff(_potentials(stats, stats_kw, points))
    assert np.all(np.isfinite(diff_rows)) and np.all(np.abs(diff_rows) > 1e-3)  # the points differ
    assert_allclose(diff_stats, diff_rows, rtol=1e-10, atol=1e-9)


def test_weights_count_like_copies_in_the_rows_model():
    case = fitted("poisson")
    est, X, y, w = case.estimator, case.X, case.y, np.array([2.0] * 5 + [1.0] * 15)
    repeated = np.r_[np.arange(5), np.arange(20)]
    weighted, kw_w = models.model_from_estimator(est, X, y, sample_weight=w)
    copied, kw_c = models.model_from_estimator(est, X[repeated], y[repeated])
    points = _unconstrained_points(weighted, kw_w)
    assert_allclose(np.diff(_potentials(weighted, kw_w, points)), np.diff(_potentials(copied, kw_c, points)), rtol=1e-12)


@pytest.mark.parametrize("covariance", ["full", "shared"])
def test_niw_model_density_is_scipys_normal_inverse_wishart(covariance):
    """The model's prior density of (L, mu), Sigma = L L^T, is scipy's invwishart (with the
    Cholesky map's Jacobian) times the normal, exactly."""
    rng = np.random.default_rng(3)
    F = 3
    A = rng.normal(size=(F, F))
    scale = A @ A.T + F * np.eye(F)
    m0 = rng.normal(size=(2, F))
    kappa = np.array([0.7, 2.0])
    if covariance == "full":
        prior = NormalInverseWishart(m0, kappa, np.array([5.5, 7.0]), np.stack([scale, 2 * scale]))
    else:
        prior = NormalInverseWishart(m0, kappa, np.asarray(6.0), scale)
    X = rng.normal(size=(4, F))
    y = np.array([0, 1, 0, 1])
    kwargs = {"X": X, "y": y, "prior": prior, "class_prior": Dirichlet(np.ones(2))}
    for u in _unconstrained_points(models.gaussian_mv_model, kwargs, seeds=(5, 6, 7)):
        point, density = _constrained_and_prior_density(models.gaussian_mv_model, kwargs, u)
        tril = np.asarray(point["covariance_tril"]).reshape(-1, F, F)  # (1 or 2, F, F)
        cov = tril @ np.swapaxes(tril, -1, -2)
        loc = np.asarray(point["loc"]).reshape(2, F)
        covs = np.broadcast_to(cov, (2, F, F))
        dfs = np.broadcast_to(prior.df, (2,))
        scales = np.broadcast_to(prior.scale, (2, F, F))
        expected = sps.dirichlet.logpdf(np.asarray(point["class_probs"]), np.ones(2))
        n_cov = 1 if covariance == "shared" else 2
        trils = np.broadcast_to(tril, (2, F, F))
        for c in range(n_cov):
            # The latent site is L with Sigma = L L^T: scipy's density of Sigma times the
            # Jacobian |dSigma/dL| = 2^F prod_i L_ii^(F - i + 1) (i = 1..F).
            log_jacobian = F * np.log(2) + np.sum((F - np.arange(F)) * np.log(np.diag(trils[c])))
            expected += sps.invwishart.logpdf(covs[c], df=dfs[c], scale=scales[c]) + log_jacobian
        for c in range(2):
            expected += sps.multivariate_normal.logpdf(loc[c], m0[c], covs[c] / kappa[c])
        assert_allclose(density, expected, rtol=1e-10)


def test_nig_and_dirichlet_model_densities_are_scipys():
    case = fitted("gaussian")
    est = case.estimator
    p = est.prior_
    model, kw = models.model_from_estimator(est, case.X, case.y)
    point, density = _constrained_and_prior_density(model, kw, _unconstrained_points(model, kw, seeds=(4,))[0])
    var, loc = np.asarray(point["var"]), np.asarray(point["loc"])
    expected = sps.dirichlet.logpdf(np.asarray(point["class_probs"]), est.class_dirichlet_.concentration)
    expected += sps.invgamma.logpdf(var, p.concentration, scale=p.rate).sum()
    expected += sps.norm.logpdf(loc, p.loc, np.sqrt(var / p.kappa)).sum()
    assert_allclose(density, expected, rtol=1e-10)


@pytest.mark.slow
def test_nuts_on_the_niw_prior_is_the_closed_form_niw():
    """NUTS on the model with no data samples exactly the NIW prior of the closed form.

    The model conditioned on empty statistics has the prior as its posterior; NUTS draws
    of every entry of Sigma and mu, and of log|Sigma|, must match the closed-form moments
    (inverse-Wishart mean, mean of mu, and E log|Sigma| = log|Psi| - F log 2 - sum_j
    digamma((nu - j)/2)) within 4.5 Monte Carlo standard errors.
    """
    import arviz as az
    from numpyro.infer import MCMC, NUTS

    from bayesnb.core.stats import ScatterStats

    F = 2
    scale = np.array([[2.0, 0.6], [0.6, 1.0]])
    df = np.array([7.5, 9.0])  # nu > F + 3: every entry has a finite variance
    prior = NormalInverseWishart(np.array([[0.5, -1.0], [2.0, 0.0]]), np.array([1.5, 0.5]), df, np.stack([scale, 2 * scale]))
    empty = ScatterStats(np.zeros(2), np.zeros((2, F)), np.zeros((2, F, F)))
    with enable_x64():
        mcmc = MCMC(NUTS(models.gaussian_mv_stats_model), num_warmup=500, num_samples=1500, num_chains=2,
                    chain_method="vectorized", progress_bar=False)
        mcmc.run(jax.random.key(0), empty, prior=prior, class_prior=np.array([0.5, 0.5]))
        draws = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}
    # Per-class sites carry a singleton axis for the feature plate's dim.
    cov, loc = draws["covariance"][..., 0, :, :], draws["loc"][..., 0, :]
    cov_mean, _ = models.inverse_wishart_moments(df, prior.scale)
    j = np.arange(F)
    expected_logdet = np.array(
        [np.linalg.slogdet(prior.scale[c])[1] - F * np.log(2) - digamma((df[c] - j) / 2).sum() for c in range(2)]
    )
    logdet = np.linalg.slogdet(cov)[1]
    checks = [(cov[..., i, k], cov_mean[:, i, k]) for i in range(F) for k in range(i, F)]
    checks += [(loc[..., i], prior.loc[:, i]) for i in range(F)]
    checks += [(logdet, expected_logdet)]
    for sample, expected in checks:
        for c in range(2):
            x = sample[..., c]
            mcse = float(az.mcse(x, method="mean"))
            assert abs(x.mean() - expected[c]) < 4.5 * mcse, (x.mean(), expected[c], mcse)
    # Sigma_00 has the inverse-gamma marginal IG((nu - F + 1)/2, Psi_00 / 2): its median too.
    median = sps.invgamma.median((df - F + 1) / 2, scale=prior.scale[:, 0, 0] / 2)
    for c in range(2):
        below = (cov[..., c, 0, 0] < median[c]).astype(float)
        assert abs(below.mean() - 0.5) < 4.5 * float(az.mcse(below, method="mean"))


@pytest.mark.parametrize("name", ["multinomial", "mixed"])
def test_models_generate_data(name):
    """With X=None and y=None the per-row model is the generative story: it makes labelled rows."""
    case = fitted(name)
    model, kwargs = models.model_from_estimator(case.estimator, n_rows=7)
    if name == "multinomial":
        kwargs["n_tokens"] = 5
    with enable_x64():
        out = jax.jit(lambda key: Predictive(model, num_samples=3)(key, **kwargs))(jax.random.key(0))
    assert out["y"].shape[:2] == (3, 7)  # (samples, rows, 1): "data" is the plate at dim -2
    x_sites = [k for k in out if k == "x" or k.endswith("__x")]
    assert x_sites
    for k in x_sites:
        assert out[k].shape[:2] == (3, 7)
    if name == "multinomial":
        assert np.all(np.asarray(out["x"]).sum(axis=-1) == 5)
    else:
        codes = np.asarray(out["categorical__x"])
        assert np.all(codes < case.estimator.named_estimators_["categorical"].n_categories_)
        assert set(np.unique(np.asarray(out["bernoulli__x"]))) <= {0, 1}


def test_site_names_plates_and_dims():
    case = fitted("mixed")
    model, kwargs = models.model_from_estimator(case.estimator, case.X, case.y)
    sites = _abstract_trace(model, kwargs)
    assert {"class_probs", "y", "gaussian__loc", "gaussian__var", "bernoulli__feature_probs",
            "categorical__feature_probs", "gaussian__x", "bernoulli__x", "categorical__x"} <= set(sites)
    plates = {plate for v in sites.values() for plate in v[1]}
    assert {"class", "data", "gaussian__feature", "bernoulli__feature", "categorical__feature"} <= plates
    dims = models.variable_dims(case.estimator)
    assert dims["gaussian__loc"] == ("class", "gaussian__feature")
    assert dims["categorical__feature_probs"] == ("class", "categorical__feature", "categorical__category")


def test_categorical_padding_is_an_exact_dirichlet_over_the_valid_categories():
    """Renormalised valid coordinates of the padded Dirichlet are Dir(alpha) over K_j categories."""
    case = fitted("categorical")
    est = case.estimator
    model, kwargs = models.model_from_estimator(est, n_rows=1)
    with enable_x64():
        draws = jax.jit(lambda key: Predictive(model, num_samples=4000)(key, **kwargs)["feature_probs"])(jax.random.key(1))
    probs = np.asarray(draws)  # (draws, class, feature, category)
    assert np.all(probs[:, :, 0, 2:] == 0)  # feature 0 has 2 categories: padding is never used
    assert_allclose(probs.sum(axis=-1), 1.0, rtol=1e-12)
    # Beta(1, 2) marginal of a coordinate of Dir(1, 1, 1) and Beta(1, 1) for Dir(1, 1).
    assert sps.kstest(probs[:, 0, 1, 0], sps.beta(1, 2).cdf).pvalue > 1e-3
    assert sps.kstest(probs[:, 1, 0, 0], sps.beta(1, 1).cdf).pvalue > 1e-3


def test_model_from_estimator_errors():
    case = fitted("categorical")
    est = case.estimator
    with pytest.raises(ValueError, match="category code 5"):
        models.model_from_estimator(est, np.array([[0, 5]]), ["ham"])
    with pytest.raises(ValueError, match="not in classes_"):
        models.model_from_estimator(est, case.X, np.array(["eggs"] * len(case.y)))
    with pytest.raises(ValueError, match="form must be"):
        models.model_from_estimator(est, case.X, case.y, form="rowz")
    with pytest.raises(ValueError, match="needs both X and y"):
        models.model_from_estimator(est, case.X, form="stats")
    with pytest.raises(ValueError, match="rows but y has"):
        models.model_from_estimator(est, case.X, case.y[:-1])
    with pytest.raises(ValueError, match="n_tokens"):
        model, kwargs = models.model_from_estimator(fitted("multinomial").estimator, n_rows=3)
        _abstract_trace(model, kwargs)


def test_closed_form_moments_against_scipy():
    """Inverse-Wishart and Dirichlet moment formulas against scipy / exact draws."""
    rng = np.random.default_rng(0)
    psi = np.array([[2.0, 0.5, 0.1], [0.5, 1.0, -0.3], [0.1, -0.3, 1.5]])
    nu = 9.0
    mean, sd = models.inverse_wishart_moments(nu, psi)
    assert_allclose(mean, sps.invwishart.mean(df=nu, scale=psi), rtol=1e-12)
    draws = sps.invwishart.rvs(df=nu, scale=psi, size=200_000, random_state=rng)
    assert_allclose(draws.std(axis=0), sd, rtol=0.03)
    a = np.array([0.5, 2.0, 3.5])
    m, s = models.dirichlet_moments(a)
    assert_allclose(m, sps.dirichlet.mean(a), rtol=1e-12)
    assert_allclose(s**2, sps.dirichlet.var(a), rtol=1e-12)
    m, s = models.dirichlet_moments(a, mask=np.array([True, True, False]))
    assert_allclose(m[:2], [0.2, 0.8]) and np.isnan(m[2]) and np.isnan(s[2])


def test_render_model_draws_the_plate_diagram(tmp_path):
    graphviz = pytest.importorskip("graphviz", reason="numpyro.render_model needs the optional 'graphviz' package")
    import numpyro

    case = fitted("gaussian_full")
    model, kwargs = models.model_from_estimator(case.estimator, case.X, case.y)
    with enable_x64():
        graph = numpyro.render_model(model, model_kwargs=kwargs)
    assert isinstance(graph, graphviz.Digraph)
    source = graph.source
    for plate in ("cluster_class", "cluster_data"):
        assert plate in source
    for site in ("covariance_tril", "loc", "class_probs", "y", "x"):
        assert site in source
    assert "covariance_tril -> loc" in source and "y -> x" in source and "class_probs -> y" in source
    if shutil.which("dot") is None:
        pytest.skip("the Graphviz 'dot' program is not installed: the diagram was built but not rendered")
    with enable_x64():
        numpyro.render_model(model, model_kwargs=kwargs, filename=str(tmp_path / "model.png"))
    assert (tmp_path / "model.png").stat().st_size > 0


def test_model_of_a_shared_covariance_estimator_uses_one_inverse_wishart():
    est = GaussianBayesClassifier(covariance="shared").fit(*make("gaussian_shared")[2:4])
    model, kwargs = models.model_from_estimator(est, n_rows=2)
    trace = _abstract_trace(model, kwargs)
    assert trace["covariance"][0] == (2, 2) and trace["loc"][0] == (2, 1, 2)


def test_model_has_the_hyperparameters_learned_from_the_evidence():
    """alpha/prior/class_alpha="evidence": the model's priors are the learned ones, not the defaults."""
    case = fitted("evidence_missing")
    est = case.estimator
    model, kwargs = models.model_from_estimator(est, case.X, case.y, sample_weight=case.sample_weight)
    assert model is models.mixed_model
    assert_allclose(kwargs["class_prior"].concentration, np.full(2, est.class_alpha_), rtol=1e-12)
    assert not np.isclose(est.class_alpha_, 1.0)
    priors = {name: prior for name, _, prior in kwargs["blocks"]}
    blocks = est.named_estimators_
    assert_allclose(priors["bernoulli"].concentration1, np.full((2, 2), blocks["bernoulli"].alpha_), rtol=1e-12)
    assert_allclose(priors["categorical"].concentration[:, 0, :2], blocks["categorical"].alpha_, rtol=1e-12)
    for name in ("gaussian", "poisson"):
        for ours, theirs in zip(priors[name], blocks[name].prior_):
            assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=0)
    # The rows with NaN entries are conditioned on their observed entries only.
    observed = kwargs["observed"]
    assert set(observed) == {"gaussian", "bernoulli", "categorical", "poisson"}
    assert_allclose(np.concatenate([observed[b] for b in ("gaussian", "bernoulli", "categorical", "poisson")], axis=1),
                    ~np.isnan(case.X))


def test_missing_entries_are_integrated_out_of_the_rows_model():
    """The masked rows model's log-likelihood is the sum over the observed entries only (scipy)."""
    from numpyro.infer.util import log_likelihood

    case = fitted("gaussian")
    X = case.X.copy()
    X[:6, 1] = np.nan
    X[7, 0] = np.nan
    est = type(case.estimator)(**{**case.estimator.get_params(), "missing": "ignore"}).fit(X, case.y)
    model, kwargs = models.model_from_estimator(est, X, case.y)
    rng = np.random.default_rng(0)
    point = {"loc": rng.normal(size=(2, 2)), "var": rng.uniform(0.5, 2.0, (2, 2)), "class_probs": np.array([0.3, 0.7])}
    with enable_x64():
        sites = log_likelihood(model, {k: v[None] for k, v in point.items()}, **kwargs)
    total = sum(float(np.asarray(v).sum()) for v in sites.values())  # numpy's sum: float64 outside the x64 scope
    y_index = np.searchsorted(est.classes_, case.y)
    observed = ~np.isnan(X)
    entries = sps.norm.logpdf(np.nan_to_num(X), point["loc"][y_index], np.sqrt(point["var"][y_index]))
    expected = np.log(point["class_probs"][y_index]).sum() + entries[observed].sum()
    assert_allclose(total, expected, rtol=1e-12)


@pytest.mark.parametrize("name", ["multinomial", "gaussian_full"])
def test_rows_with_missing_entries_are_refused_where_features_are_not_separate_factors(name):
    case = fitted(name)
    est = case.estimator.set_params(missing="ignore").fit(case.X, case.y)
    X = np.asarray(case.X, dtype=float).copy()
    X[0, 0] = np.nan
    with pytest.raises(ValueError, match="no per-row form for rows with missing"):
        models.model_from_estimator(est, X, case.y)
