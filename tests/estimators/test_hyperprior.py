"""Hyperparameters given as numpyro distributions: integrated out at ``fit`` by NUTS.

Oracles: the plain estimators fitted at each draw of the hyperparameters (the integrated
predictive must be their class-normalised logsumexp to 1e-8, and not the average of their
class probabilities); SciPy's ``gammaln`` and ``gamma.logpdf`` for an independent
collapsed density whose maximiser (``scipy.optimize``) the estimator's mode must match;
the closed-form conditional posterior means averaged over the draws for the mixture
draws (Monte Carlo bounds); ``alpha="evidence"`` on the SMS corpus for the mode.
"""

from __future__ import annotations

import numpy as np
import numpyro.distributions as dist
import pytest
from scipy import optimize, stats
from scipy.special import gammaln, logsumexp
from sklearn.base import clone

from bayesnb import BernoulliNB, GaussianNB, MultinomialNB
from bayesnb.core.priors import NormalInverseGamma

NUTS = dict(hyper_warmup=250, hyper_draws=250, hyper_chains=2)


def _counts(seed, n=45, f=6, c=3):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % c
    rates = rng.gamma(1.0, 2.0, (c, f))
    return rng.poisson(rates[y]), y


def _normalised(joint):
    return np.exp(joint - logsumexp(joint, axis=1, keepdims=True))


@pytest.fixture(scope="module")
def multinomial_fit():
    X, y = _counts(0)
    est = MultinomialNB(
        alpha=dist.Gamma(2.0, 1.0), class_alpha=dist.Exponential(1.0), random_state=0, hyper_predict_draws=40, **NUTS
    ).fit(X, y)
    return est, X, y


def test_predictive_is_logsumexp_of_plain_joint_predictives(multinomial_fit):
    est, X, y = multinomial_fit
    X_new = _counts(1, n=12)[0]
    joints = []
    for m in est.hyper_predict_index_:
        plain = MultinomialNB(alpha=float(est.hyper_posterior_["alpha"][m]),
                              class_alpha=float(est.hyper_posterior_["class_alpha"][m])).fit(X, y)
        joints.append(plain.predict_joint_log_proba(X_new))
    joints = np.stack(joints)
    expected = _normalised(logsumexp(joints, axis=0) - np.log(len(joints)))
    got = est.predict_proba(X_new)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-8)
    np.testing.assert_allclose(est.hyper_joint_log_proba_draws(X_new), joints, rtol=1e-12, atol=1e-9)
    # Not the average of per-draw class probabilities (the check can tell them apart).
    averaged = np.mean([_normalised(j) for j in joints], axis=0)
    assert np.abs(averaged - got).max() > 1e-6


def test_predictive_with_fixed_class_prior_and_bernoulli_pair():
    X, y = _counts(2, n=40, f=5, c=2)
    B = (X > 1).astype(int)
    est = BernoulliNB(alpha=(dist.Gamma(2.0, 1.0), dist.Gamma(2.0, 2.0)), class_prior=[0.3, 0.7], random_state=1,
                      hyper_predict_draws=15, **NUTS).fit(B, y)
    assert set(est.hyper_posterior_) == {"alpha[0]", "alpha[1]"}
    joints = np.stack([
        BernoulliNB(alpha=(float(est.hyper_posterior_["alpha[0]"][m]), float(est.hyper_posterior_["alpha[1]"][m])),
                    class_prior=[0.3, 0.7]).fit(B, y).predict_joint_log_proba(B)
        for m in est.hyper_predict_index_
    ])
    np.testing.assert_allclose(est.predict_proba(B), _normalised(logsumexp(joints, axis=0)), rtol=0, atol=1e-8)


def test_gaussian_prior_field_and_its_predictive():
    rng = np.random.default_rng(3)
    y = np.arange(30) % 2
    X = rng.normal(0.0, 1.0, (30, 2)) + 2.0 * y[:, None]
    prior = NormalInverseGamma(0.0, dist.LogNormal(0.0, 1.0), 2.0, 2.0)
    est = GaussianNB(prior=prior, random_state=0, hyper_predict_draws=10, **NUTS).fit(X, y)
    draws = est.hyper_posterior_["prior.kappa"]
    assert draws.shape == (500,) and np.all(draws > 0)
    assert est.hyper_diagnostics_["r_hat"]["prior.kappa"] < 1.05
    joints = np.stack([
        GaussianNB(prior=NormalInverseGamma(0.0, float(draws[m]), 2.0, 2.0)).fit(X, y).predict_joint_log_proba(X)
        for m in est.hyper_predict_index_
    ])
    np.testing.assert_allclose(est.predict_proba(X), _normalised(logsumexp(joints, axis=0)), rtol=0, atol=1e-8)
    # The plug-ins are those of the prior at the mode; the parameter keeps its distribution.
    assert est.prior_.kappa[0, 0] == pytest.approx(float(est.hyper_mode_["prior.kappa"]))
    assert isinstance(est.get_params()["prior"].kappa, dist.LogNormal)


def test_gaussian_bayes_classifier_integrates_a_class_alpha_hyperprior():
    """GaussianBayesClassifier read its covariance structure off prior_ before its first
    prior existed, so any hyperprior failed at fit with an AttributeError. Its predictive
    is the mixture of the plain classifiers at the draws of class_alpha."""
    from bayesnb import GaussianBayesClassifier

    rng = np.random.default_rng(5)
    y = np.arange(36) % 3
    X = rng.normal(0.0, 1.0, (36, 2)) + y[:, None]
    est = GaussianBayesClassifier(covariance="full", class_alpha=dist.Gamma(2.0, 1.0), random_state=0,
                                  hyper_predict_draws=10, **NUTS).fit(X, y)
    a = est.hyper_posterior_["class_alpha"]
    assert a.shape == (500,) and np.all(a > 0)
    joints = np.stack([
        GaussianBayesClassifier(covariance="full", class_alpha=float(a[m])).fit(X, y).predict_joint_log_proba(X)
        for m in est.hyper_predict_index_
    ])
    np.testing.assert_allclose(est.predict_proba(X), _normalised(logsumexp(joints, axis=0)), rtol=0, atol=1e-8)


def _scipy_log_density(log_a, X, y, b):
    """Independent collapsed density of (alpha, beta): SciPy's gammaln and gamma/expon logpdf."""
    a, beta = np.exp(log_a), b
    T = np.stack([X[y == c].sum(0) for c in np.unique(y)]).astype(float)
    N = np.bincount(y).astype(float)
    f = T.shape[1]
    feat = np.sum(gammaln(a + T) - gammaln(a)) + np.sum(gammaln(f * a) - gammaln(f * a + T.sum(1)))
    cls = np.sum(gammaln(beta + N) - gammaln(beta)) + gammaln(beta * N.size) - gammaln(beta * N.size + N.sum())
    return feat + cls + stats.gamma(2.0, scale=1.0).logpdf(a) + stats.expon.logpdf(beta)


def test_mode_and_plugins_at_the_mode(multinomial_fit):
    est, X, y = multinomial_fit
    # The mode of the density of (alpha, beta) themselves (no Jacobian), by SciPy.
    res = optimize.minimize(lambda u: -_scipy_log_density(u[0], X, y, np.exp(u[1])), x0=[0.0, 0.0], method="Nelder-Mead",
                            options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 4000})
    assert float(est.hyper_mode_["alpha"]) == pytest.approx(np.exp(res.x[0]), rel=1e-4)
    assert float(est.hyper_mode_["class_alpha"]) == pytest.approx(np.exp(res.x[1]), rel=1e-4)
    # A planted slip (the mode of the unconstrained density, with the log Jacobian) is told apart.
    res_j = optimize.minimize(lambda u: -_scipy_log_density(u[0], X, y, np.exp(u[1])) - u[0] - u[1], x0=[0.0, 0.0],
                              method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 4000})
    assert abs(float(est.hyper_mode_["alpha"]) - np.exp(res_j.x[0])) > 1e-3
    X_new = _counts(5, n=10)[0]
    for kind in ("mean", "map", "mle"):
        plain = MultinomialNB(alpha=float(est.hyper_mode_["alpha"]), class_alpha=float(est.hyper_mode_["class_alpha"]),
                              estimate=kind).fit(X, y)
        est.set_params(estimate=kind)
        try:
            try:
                want = plain.predict_proba(X_new)
            except ValueError as err:  # "map" without a mode (a concentration below 1): refused alike
                with pytest.raises(ValueError, match=str(err).split(":")[0]):
                    est.predict_proba(X_new)
                continue
            np.testing.assert_allclose(est.predict_proba(X_new), want, rtol=1e-12, atol=1e-14)
        finally:
            est.set_params(estimate="predictive")
    assert est.alpha_ == pytest.approx(float(est.hyper_mode_["alpha"]))


def test_posterior_draws_are_the_mixture_over_hyperparameters(multinomial_fit):
    est, X, y = multinomial_fit
    n = 4000
    draws = est.sample_posterior(n, random_state=7)
    theta = draws["feature_probs"]
    assert theta.shape == (n, 3, 6) and draws["class_probs"].shape == (n, 3)
    # E[theta | D] = E_a[(a + T) / (F a + L)]: the conditional means averaged over the draws of a.
    a = est.hyper_posterior_["alpha"]
    T = est.feature_count_
    cond = (a[:, None, None] + T[None]) / (T.shape[1] * a[:, None, None] + T.sum(1)[None, :, None])
    expected = cond.mean(0)
    se = theta.std(0) / np.sqrt(n)
    assert np.abs((theta.mean(0) - expected) / se).max() < 4.5
    # The plain posterior at the mode has a smaller spread than the mixture where a matters:
    # the mixture's variance is the plain one plus the variance of the conditional means.
    plain_var = MultinomialNB(alpha=float(est.hyper_mode_["alpha"]), class_alpha=1.0).fit(X, y).sample_posterior(
        n, random_state=7)["feature_probs"].var(0)
    assert np.mean(theta.var(0) > plain_var) > 0.5
    proba = est.predict_proba_draws(X[:4], 50, random_state=0)
    assert proba.shape == (50, 4, 3)
    np.testing.assert_allclose(proba.sum(-1), 1.0)
    lo, hi = est.predict_proba_interval(X[:4], 0.9, n_draws=200, random_state=0)
    assert np.all(lo <= hi)
    idata = est.to_inference_data(n_draws=100, random_state=0)
    assert "alpha" in idata.posterior and "class_alpha" in idata.posterior
    assert idata.posterior["feature_probs"].shape[:2] == idata.posterior["alpha"].shape[:2]


def test_prior_draws_are_those_of_plain_priors_at_draws_from_the_hyperpriors(multinomial_fit):
    """The pytree's prior draws, hyperpriors included (core._fitted.hyper_prior_draws,
    computed from the pytree's embedding): draw i is the prior draw of a plain estimator
    whose alpha and class_alpha are set by hand to the i-th values drawn (in float64)
    from the hyperpriors (from the first half of the key, one key per hyperprior in the
    order of the parameters), made from fold_in of the second half by i. The oracle
    builds its prior through the estimator's own constructor, not through the embedding."""
    import jax

    from bayesnb.core import _fitted

    est, X, y = multinomial_fit
    n, key = 5, jax.random.PRNGKey(11)
    fitted = est.fitted_model()
    log_class, params = _fitted.hyper_prior_draws(fitted, n, key)
    assert [h.name for h in fitted.hyper_embedding[0]] == ["alpha", "class_alpha"]
    key_values, key_draws = jax.random.split(key)
    k_alpha, k_class = jax.random.split(key_values, 2)
    with jax.enable_x64(True):  # the hyperparameters are drawn in float64
        alpha = np.asarray(dist.Gamma(2.0, 1.0).sample(k_alpha, (n,)))
        class_alpha = np.asarray(dist.Exponential(1.0).sample(k_class, (n,)))
    assert alpha.dtype == class_alpha.dtype == np.float64
    assert np.unique(alpha).size == n and np.unique(class_alpha).size == n
    for i in range(n):
        plain = MultinomialNB(alpha=float(alpha[i]), class_alpha=float(class_alpha[i])).fit(X, y)
        expected_class, expected = _fitted.draws(plain.fitted_model(), 1, jax.random.fold_in(key_draws, i), prior=True)
        np.testing.assert_allclose(log_class[i], expected_class[0], rtol=1e-12)
        np.testing.assert_allclose(params.log_probs[i], expected.log_probs[0], rtol=1e-12)


def test_prior_draws_of_a_hyperprior_with_mass_near_zero_are_distributions():
    """Gamma(0.05, 1) puts about 1% of its draws below the smallest float32: drawn in
    float32 they were exact zeros, which the estimator refused ("alpha must be > 0") or,
    rebuilt into the prior, made NaN draws. In float64 every draw is a prior: every
    class's feature probabilities sum to 1, and none is NaN."""
    X, y = _counts(0, n=30, f=4)
    est = MultinomialNB(alpha=dist.Gamma(0.05, 1.0), hyper_warmup=50, hyper_draws=50, random_state=0).fit(X, y)
    log_class, params = est.hyper_prior_draws(2000, random_state=1)
    assert not np.isnan(params.log_probs).any() and not np.isnan(log_class).any()
    np.testing.assert_allclose(logsumexp(params.log_probs, axis=-1), 0.0, atol=1e-9)
    np.testing.assert_allclose(logsumexp(log_class, axis=-1), 0.0, atol=1e-9)
    # Some draws are that extreme: the near-zero mass of the hyperprior is drawn, not cut.
    assert (params.log_probs.min(axis=(1, 2)) < -1e3).mean() > 0.05


def test_seeded_clone_and_params(multinomial_fit):
    est, X, y = multinomial_fit
    twin = clone(est)
    # clone copies the distributions (deepcopy of non-estimator parameters), same parameters.
    assert isinstance(twin.alpha, dist.Gamma) and isinstance(twin.get_params()["class_alpha"], dist.Exponential)
    assert float(twin.alpha.concentration) == 2.0 and float(twin.alpha.rate) == 1.0
    twin.fit(X, y)
    for name in est.hyper_posterior_:
        np.testing.assert_array_equal(twin.hyper_posterior_[name], est.hyper_posterior_[name])
    other = clone(est).set_params(random_state=1).fit(X, y)
    assert not np.array_equal(other.hyper_posterior_["alpha"], est.hyper_posterior_["alpha"])
    repr(est)


def test_save_refuses_hyperpriors(multinomial_fit, tmp_path):
    est = multinomial_fit[0]
    with pytest.raises(ValueError, match="hyperprior"):
        est.save(tmp_path / "m.npz")


def test_per_feature_alpha_vector_of_1000_features():
    rng = np.random.default_rng(4)
    f = 1000
    y = np.arange(60) % 2
    X = rng.poisson(rng.gamma(0.5, 2.0, (2, f))[y])
    est = MultinomialNB(alpha=dist.Gamma(2.0, 1.0).expand((f,)), random_state=0, hyper_warmup=150, hyper_draws=100,
                        hyper_predict_draws=4).fit(X, y)
    draws = est.hyper_posterior_["alpha"]
    assert draws.shape == (200, f) and np.all(draws > 0)
    assert est.hyper_diagnostics_["divergences"] == 0
    assert np.nanmax(est.hyper_diagnostics_["r_hat"]["alpha"]) < 1.1
    joints = np.stack([MultinomialNB(alpha=draws[m]).fit(X, y).predict_joint_log_proba(X[:5])
                       for m in est.hyper_predict_index_])
    np.testing.assert_allclose(est.predict_proba(X[:5]), _normalised(logsumexp(joints, axis=0)), rtol=0, atol=1e-8)


def test_mode_near_the_evidence_maximum_on_a_corpus(sms_counts):
    X, y = sms_counts.X_train, sms_counts.y_train
    eb = MultinomialNB(alpha="evidence").fit(X, y)
    est = MultinomialNB(alpha=dist.Gamma(2.0, 1.0), random_state=0, hyper_predict_draws=2, **NUTS).fit(X, y)
    a = est.hyper_posterior_["alpha"]
    sd = a.std(ddof=1)
    assert est.hyper_diagnostics_["r_hat"]["alpha"] < 1.01
    # Gamma(2, 1) adds log(a) - a to the evidence: on 1,672 documents that moves the mode by
    # a small fraction of the posterior sd.
    assert abs(float(est.hyper_mode_["alpha"]) - eb.alpha_) < 0.25 * sd
    assert abs(a.mean() - eb.alpha_) < 3.0 * sd
    # Planted: a hyperprior that pins alpha far from the data's value moves the mode away.
    pinned = MultinomialNB(alpha=dist.Gamma(2000.0, 1000.0), random_state=0, hyper_predict_draws=2, **NUTS).fit(X, y)
    assert abs(float(pinned.hyper_mode_["alpha"]) - eb.alpha_) > 10 * sd


@pytest.mark.parametrize(
    "params, match",
    [
        (dict(alpha=dist.Normal(0.0, 1.0)), "alpha=Normal.*support.*cannot take"),
        (dict(alpha=dist.Uniform(-1.0, 2.0)), "alpha=Uniform.*cannot take"),
        (dict(class_alpha=dist.Normal(1.0, 1.0)), "class_alpha=Normal.*cannot take"),
        (dict(class_alpha=dist.Exponential(1.0), class_prior=[0.5, 0.5]), "class proportions are fixed"),
        (dict(alpha=dist.Dirichlet(np.ones(6))), "event shape"),
        (dict(alpha=dist.Gamma(2.0, 1.0).expand((4,))), "does not broadcast"),
    ],
)
def test_bad_hyperpriors_are_refused(params, match):
    X, y = _counts(0, n=20, c=2)
    with pytest.raises(ValueError, match=match):
        MultinomialNB(**params).fit(X, y)


def test_compare_shows_evidence_and_integrated_hyperparameters(multinomial_fit):
    from bayesnb.analysis.comparison import compare, format_comparison

    est, X, y = multinomial_fit
    eb = MultinomialNB(alpha="evidence", class_alpha="evidence").fit(X, y)
    X_test, y_test = _counts(9, n=30)
    table = compare({"evidence": eb, "integrated": est}, None, None, X_test, y_test, refit=False, n_bootstrap=0,
                    as_frame=False)
    text = format_comparison(table)
    a = est.hyper_posterior_["alpha"]
    assert f"hyperparameters of evidence: alpha={eb.alpha_:.4g} (evidence max)" in text
    assert f"alpha={a.mean():.4g} ± {a.std(ddof=1):.2g} (integrated, mode {float(est.hyper_mode_['alpha']):.4g})" in text
    rows = {(r["model"], r["estimate"]): r for r in table.records}
    assert "class_alpha" in rows["integrated", "predictive"]["hyperparameters"]
