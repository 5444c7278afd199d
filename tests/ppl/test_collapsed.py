"""The collapsed model (bayesnb.ppl.collapsed) against independent oracles.

* The embedding of hyperparameters into prior pytrees equals the builder itself at new
  values (pairs, per-feature vectors, repetition over categories), and refuses a builder
  that scales a hyperparameter.
* The collapsed log density equals SciPy's gammaln / logpdf formula.
* NUTS on the collapsed model agrees with NUTS on the *un*collapsed numpyro model (theta,
  pi and alpha all sampled) for the multinomial and the Normal-Inverse-Gamma families:
  MCSE-based z scores of alpha's (kappa's) mean, sd and quantiles, two seeds each; a
  collapsed density with the evidence's prior shifted and one with a wrong hyperprior
  scale are caught by the same rule.
* Simulation-based calibration of the hierarchical model (alpha from its hyperprior,
  theta from Dir(alpha), documents from theta): ranks of alpha under the collapsed
  posterior (exact on a grid) are uniform, and not with a wrong hyperprior or a shifted
  evidence.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.infer import MCMC, NUTS
from scipy import stats
from scipy.special import gammaln

from bayesnb import CategoricalNB, GaussianNB, MultinomialNB
from bayesnb.core._x64 import enable_x64
from bayesnb.core.priors import Beta, Dirichlet, NormalInverseGamma
from bayesnb.ppl import collapsed
from bayesnb.ppl.sbc import rank_uniformity


Z_MAX = 4.0  # |z| bound of agreement: 5 statistics per run, a false alarm about 3e-4 per run


# ----------------------------------------------------------------------------- embedding
def test_embedding_reproduces_the_builder_at_new_values():
    rng = np.random.default_rng(0)

    def build(v):
        a = np.broadcast_to(v["a"], (2, 3)).copy()
        return (Beta(a, np.broadcast_to(v["b"], (2, 3)).copy()), np.full(2, v["c"]))

    hypers = [collapsed.Hyper("a", ("a",), dist.Gamma(2.0, 1.0).expand((3,))),
              collapsed.Hyper("b", ("b",), dist.Gamma(2.0, 1.0)),
              collapsed.Hyper("c", ("c",), dist.Exponential(1.0))]
    emb = collapsed.embedding(build, hypers)
    with enable_x64():
        for _ in range(3):
            values = {"a": rng.gamma(2.0, 1.0, 3), "b": rng.gamma(2.0), "c": rng.exponential()}
            got = collapsed.embed(emb, values)
            want = build(values)
            for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
                np.testing.assert_array_equal(np.asarray(g), w)


def test_embedding_through_an_estimator_with_categories():
    X = np.array([[0, 1], [1, 2], [2, 0], [0, 0]])
    y = np.array([0, 0, 1, 1])
    hypers = [collapsed.Hyper("alpha", ("alpha",), dist.Gamma(2.0, 1.0).expand((2,)))]

    def build(v):
        return CategoricalNB(alpha=v["alpha"]).fit(X, y).prior_

    emb = collapsed.embedding(build, hypers)
    with enable_x64():
        got = collapsed.embed(emb, {"alpha": np.array([0.3, 2.5])})
    want = build({"alpha": np.array([0.3, 2.5])})
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_embedding_refuses_a_scaled_hyperparameter():
    hypers = [collapsed.Hyper("a", ("a",), dist.Gamma(2.0, 1.0))]
    with pytest.raises(ValueError, match="other than as a copy"):
        collapsed.embedding(lambda v: Dirichlet(np.full(3, 2.0 * v["a"])), hypers)
    with pytest.raises(ValueError, match="does not enter"):
        collapsed.embedding(lambda v: Dirichlet(np.ones(3)), hypers)


def test_find_and_substitute_paths():
    prior = NormalInverseGamma(0.0, dist.LogNormal(0.0, 1.0), 1.0, 1.0)
    params = {"alpha": (dist.Gamma(2.0, 1.0), 1.0), "prior": prior, "class_alpha": dist.Exponential(1.0), "x": 3}
    found = collapsed.find_hyperpriors(params)
    assert [h.name for h in found] == ["alpha[0]", "prior.kappa", "class_alpha"]
    out = collapsed.substitute(params, {h.path: 0.5 for h in found})
    assert out["alpha"] == (0.5, 1.0) and out["prior"] == NormalInverseGamma(0.0, 0.5, 1.0, 1.0)
    assert out["class_alpha"] == 0.5 and "x" not in out


# ----------------------------------------------------------------------------- density
def _scipy_density(a, T, N, beta=1.0):
    f = T.shape[1]
    feat = np.sum(gammaln(a + T) - gammaln(a)) + np.sum(gammaln(f * a) - gammaln(f * a + T.sum(1)))
    cls = np.sum(gammaln(beta + N) - gammaln(beta)) + gammaln(beta * N.size) - gammaln(beta * N.size + N.sum())
    return feat + cls + stats.gamma(2.0).logpdf(a)


def _multinomial_pieces(X, y, hyperprior):
    est = MultinomialNB().fit(X, y)
    hypers = [collapsed.Hyper("alpha", ("alpha",), hyperprior)]

    def build(v):
        fitted = MultinomialNB(alpha=float(v["alpha"])).fit(X, y)
        return fitted.prior_, np.asarray(fitted.class_dirichlet_.concentration)

    emb = collapsed.embedding(build, hypers)
    return est, hypers, collapsed.log_evidence_fn(est.family_, est.stats_, est.stats_.class_count, emb)


def test_log_density_equals_scipy():
    X, y = _counts(0)
    est, hypers, log_evidence = _multinomial_pieces(X, y, dist.Gamma(2.0, 1.0))
    density = collapsed.log_density_fn(log_evidence, hypers)
    T, N = est.feature_count_, est.class_count_
    with enable_x64():
        for a in (0.05, 0.7, 3.0, 40.0):
            assert float(density({"alpha": jnp.asarray(a)})) == pytest.approx(_scipy_density(a, T, N), rel=1e-12)


# --------------------------------------------------------------- tied evidence
TIED = [name for name in __import__("bayesnb").families.names()
        if __import__("bayesnb").families.get(name).tied_log_evidence is not None]


def test_some_family_has_a_tied_evidence():
    assert "multinomial" in TIED


@pytest.mark.parametrize("name", TIED)
def test_the_tied_evidence_is_the_evidence_of_every_tied_prior(name):
    from bayesnb import families

    fam = families.get(name)
    rng = np.random.default_rng(3)
    X, y = rng.poisson(0.6, (60, 40)), np.arange(60) % 3
    X[:, 5] = 0  # a word never seen
    stats = fam.stats(X, y, 3, weight=rng.uniform(0.2, 2.0, 60))  # fractional counts too
    prior = fam.default_prior(stats)
    tied = fam.tied_log_evidence(stats)
    tied_jit = jax.jit(tied)  # compiled once: both priors below have the same shapes
    with enable_x64():
        for per_class in (np.array([0.02, 0.02, 0.02]), np.array([0.3, 1.7, 40.0])):
            tied_prior = jax.tree.map(
                lambda leaf: np.broadcast_to(per_class.reshape((3,) + (1,) * (np.ndim(leaf) - 1)), np.shape(leaf)), prior
            )
            assert float(tied(tied_prior)) == pytest.approx(float(fam.log_evidence(tied_prior, stats)), rel=1e-12, abs=1e-9)
            jitted = tied_jit(tied_prior)
            assert float(jitted) == pytest.approx(float(fam.log_evidence(tied_prior, stats)), rel=1e-12, abs=1e-9)

            def grow(scale, evidence):
                return evidence(jax.tree.map(lambda leaf: leaf * scale, tied_prior))

            assert float(jax.grad(lambda t: grow(t, tied))(1.0)) == pytest.approx(
                float(jax.grad(lambda t: grow(t, lambda p: fam.log_evidence(p, stats)))(1.0)), rel=1e-9
            )
        # Untied (varying along the features) it is not the evidence: the tie is the caller's to check.
        untied = jax.tree.map(lambda leaf: np.asarray(leaf) * rng.uniform(0.5, 2.0, np.shape(leaf)), prior)
        assert abs(float(tied(untied)) - float(fam.log_evidence(untied, stats))) > 1e-3


def _spy_family(family, calls):
    def tied_log_evidence(stats):
        calls.append(stats)
        return family.tied_log_evidence(stats)

    return family._replace(tied_log_evidence=tied_log_evidence)


@pytest.mark.parametrize("alpha_shape, tied", [((), True), ((5,), False)])
def test_the_collapsed_density_takes_the_tied_evidence_only_where_the_prior_is_tied(alpha_shape, tied):
    X, y = _counts(0)
    hyperprior = dist.Gamma(2.0, 1.0) if alpha_shape == () else dist.Gamma(2.0, 1.0).expand(alpha_shape)
    est = MultinomialNB().fit(X, y)
    hypers = [collapsed.Hyper("alpha", ("alpha",), hyperprior)]

    def build(v):
        fitted = MultinomialNB(alpha=np.asarray(v["alpha"], dtype=float)).fit(X, y)
        return fitted.prior_, np.asarray(fitted.class_dirichlet_.concentration)

    calls = []
    log_evidence = collapsed.log_evidence_fn(_spy_family(est.family_, calls), est.stats_, est.stats_.class_count,
                                             collapsed.embedding(build, hypers))
    assert bool(calls) is tied
    T, N = est.feature_count_, est.class_count_
    rng = np.random.default_rng(1)
    with enable_x64():
        for _ in range(3):
            a = rng.gamma(2.0, 1.0, alpha_shape)
            full = np.broadcast_to(a, T.shape)
            # SciPy: the Dirichlet-multinomial evidence of each class plus that of the labels.
            want = np.sum(gammaln(full + T) - gammaln(full)) + np.sum(
                gammaln(full.sum(1)) - gammaln(full.sum(1) + T.sum(1))
            ) + _scipy_density(1.0, np.zeros((1, 1)), N) - stats.gamma(2.0).logpdf(1.0)
            assert float(log_evidence({"alpha": jnp.asarray(a)})) == pytest.approx(want, rel=1e-12)


# --------------------------------------------------------------- collapsed vs uncollapsed
def _counts(seed, n_classes=4, n_features=5, n_rows=24):
    rng = np.random.default_rng(seed)
    theta = rng.dirichlet(np.full(n_features, 1.5), n_classes)
    y = np.arange(n_rows) % n_classes
    X = np.stack([rng.multinomial(15, theta[c]) for c in y])
    return X, y


def _z_scores(a, b):
    """z of the difference of mean, sd and 5/50/95% quantiles of two (chain, draw) arrays, by arviz MCSE."""
    import arviz as az

    out = []
    da, db = az.convert_to_dataset({"x": a}), az.convert_to_dataset({"x": b})
    pairs = [(np.mean, dict(method="mean")), (lambda v: np.std(v, ddof=1), dict(method="sd"))]
    pairs += [(lambda v, q=q: np.quantile(v, q), dict(method="quantile", prob=q)) for q in (0.05, 0.5, 0.95)]
    for stat, mc in pairs:
        se = np.hypot(float(az.mcse(da, **mc)["x"]), float(az.mcse(db, **mc)["x"]))
        out.append((stat(a.ravel()) - stat(b.ravel())) / se)
    return np.array(out)


#: One sampler per uncollapsed model, compiled with the data as arguments (jit_model_args):
#: the model's runs on other data of the same shapes (the other seed, the planted
#: hyperprior scale) reuse its compiled program instead of compiling NUTS again.
_SAMPLERS = {}


def _run(model, key, **kwargs):
    with enable_x64():
        mcmc = _SAMPLERS.get(model)
        if mcmc is None:
            mcmc = _SAMPLERS[model] = MCMC(NUTS(model), num_warmup=400, num_samples=600, num_chains=2,
                                           chain_method="vectorized", progress_bar=False, jit_model_args=True)
        mcmc.run(key, **kwargs)
        return {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}


def _uncollapsed_multinomial(T, N):
    alpha = numpyro.sample("alpha", dist.Gamma(2.0, 1.0))
    pi = numpyro.sample("pi", dist.Dirichlet(jnp.ones(N.shape[0])))
    theta = numpyro.sample("theta", dist.Dirichlet(jnp.broadcast_to(alpha, T.shape)))
    numpyro.factor("x", jnp.sum(T * jnp.log(theta)))
    numpyro.factor("y", jnp.sum(N * jnp.log(pi)))


@pytest.fixture(scope="module")
def multinomial_runs():
    runs = []
    for seed in (0, 1):
        X, y = _counts(seed)
        est, hypers, log_evidence = _multinomial_pieces(X, y, dist.Gamma(2.0, 1.0))
        key_c, key_u = jax.random.split(jax.random.PRNGKey(seed))
        run = collapsed.run_nuts(key_c, log_evidence, hypers, num_warmup=400, num_samples=600)
        full = _run(_uncollapsed_multinomial, key_u, T=np.asarray(est.feature_count_, np.float64),
                    N=np.asarray(est.class_count_, np.float64))
        runs.append((X, y, run, full))
    return runs


def test_collapsed_agrees_with_uncollapsed_multinomial(multinomial_runs):
    for X, y, run, full in multinomial_runs:
        assert run.divergences == 0 and float(run.r_hat["alpha"]) < 1.02
        z = _z_scores(run.draws["alpha"], full["alpha"])
        assert np.abs(z).max() < Z_MAX, z


def test_planted_errors_in_the_collapsed_multinomial_are_caught(multinomial_runs):
    X, y, _, full = multinomial_runs[0]
    _, hypers, log_evidence = _multinomial_pieces(X, y, dist.Gamma(2.0, 1.0))
    # The evidence's prior shifted by 0.5.
    shifted = collapsed.run_nuts(jax.random.PRNGKey(5), lambda v: log_evidence({"alpha": v["alpha"] + 0.5}), hypers,
                                 num_warmup=400, num_samples=600)
    assert np.abs(_z_scores(shifted.draws["alpha"], full["alpha"])).max() > 2 * Z_MAX
    # A wrong hyperprior scale (rate 4 for 1).
    _, wrong, log_evidence = _multinomial_pieces(X, y, dist.Gamma(2.0, 4.0))
    scaled = collapsed.run_nuts(jax.random.PRNGKey(6), log_evidence, wrong, num_warmup=400, num_samples=600)
    assert np.abs(_z_scores(scaled.draws["alpha"], full["alpha"])).max() > 2 * Z_MAX


def _gaussian(seed):
    rng = np.random.default_rng(seed)
    y = np.arange(16) % 2
    X = rng.normal(0.0, 1.0, (16, 2)) * 1.3 + np.array([[0.5, -1.0], [1.5, 0.5]])[y]
    return X, y


def _uncollapsed_nig(X, y, scale):
    kappa = numpyro.sample("prior.kappa", dist.LogNormal(0.0, scale))
    var = numpyro.sample("var", dist.InverseGamma(2.0, 2.0).expand((2, X.shape[1])))
    mu = numpyro.sample("mu", dist.Normal(0.0, jnp.sqrt(var / kappa)))
    numpyro.sample("x", dist.Normal(mu[y], jnp.sqrt(var[y])), obs=X)


@pytest.mark.parametrize("seed", [0, 1])
def test_collapsed_agrees_with_uncollapsed_nig(seed):
    X, y = _gaussian(seed)
    prior = NormalInverseGamma(0.0, dist.LogNormal(0.0, 1.0), 2.0, 2.0)
    est = GaussianNB(prior=prior, class_alpha=1.0, random_state=seed, hyper_warmup=400, hyper_draws=600,
                     hyper_predict_draws=1).fit(X, y)
    draws = est.hyper_posterior_["prior.kappa"].reshape(2, 600)
    full = _run(_uncollapsed_nig, jax.random.PRNGKey(100 + seed), X=jnp.asarray(X), y=jnp.asarray(y), scale=1.0)
    z = _z_scores(draws, full["prior.kappa"])
    assert np.abs(z).max() < Z_MAX, z
    if seed == 0:
        # Planted: the uncollapsed model under a narrower hyperprior (LogNormal(0, 0.3)).
        wrong = _run(_uncollapsed_nig, jax.random.PRNGKey(7), X=jnp.asarray(X), y=jnp.asarray(y), scale=0.3)
        assert np.abs(_z_scores(draws, wrong["prior.kappa"])).max() > 2 * Z_MAX


# ----------------------------------------------------------------------------- SBC
def test_sbc_of_the_hierarchical_multinomial():
    n_sim, n_draws, n_classes, n_features = 240, 99, 3, 4
    X0, y0 = _counts(0, n_classes, n_features, n_rows=6)
    hypers = [collapsed.Hyper("alpha", ("alpha",), dist.Gamma(2.0, 1.0))]
    emb = collapsed.embedding(lambda v: MultinomialNB(alpha=float(v["alpha"])).fit(X0, y0).prior_, hypers)
    template = MultinomialNB().fit(X0, y0)
    family, stats0 = template.family_, template.stats_
    grid = np.linspace(-7.0, 4.5, 3000)  # log alpha

    with enable_x64():
        @jax.jit
        def grid_log_evidence(T, shift):
            def one(log_a):
                prior = collapsed.embed(emb, {"alpha": jnp.exp(log_a) + shift})
                return family.log_evidence(prior, stats0._replace(feature_count=T))
            return jax.vmap(one)(jnp.asarray(grid))

    def ranks(rate, shift, seed):
        rng = np.random.default_rng(seed)
        out = np.empty((n_sim, 1), dtype=np.int64)
        for s in range(n_sim):
            alpha = rng.gamma(2.0, 1.0)
            theta = rng.dirichlet(np.full(n_features, alpha), n_classes)
            theta = np.maximum(theta, 1e-300)
            theta /= theta.sum(1, keepdims=True)
            T = np.stack([rng.multinomial(10, theta[c]) * 1.0 for c in range(n_classes)])
            with enable_x64():
                log_ev = np.asarray(grid_log_evidence(jnp.asarray(T), shift))
            # p(log a | D) on the grid: evidence + Gamma(2, rate) log density + log Jacobian.
            log_post = log_ev + stats.gamma(2.0, scale=1.0 / rate).logpdf(np.exp(grid)) + grid
            w = np.exp(log_post - log_post.max())
            cdf = np.cumsum(w) / w.sum()
            u = rng.random(n_draws)
            draws = np.exp(grid[np.minimum(np.searchsorted(cdf, u), grid.size - 1)])
            out[s, 0] = int(np.sum(draws < alpha))
        return out

    _, _, p_ok = rank_uniformity(ranks(1.0, 0.0, 0), n_draws)
    assert float(p_ok[0]) > 1e-3
    for rate, shift in ((3.0, 0.0), (1.0, 0.7)):  # wrong hyperprior scale; the evidence's prior shifted
        _, _, p_bad = rank_uniformity(ranks(rate, shift, 1), n_draws)
        assert float(p_bad[0]) < 1e-4
