"""ExponentialNB and the exponential family: durations with Gamma priors on the rates.

Oracles: ``scipy.stats.lomax`` / ``expon`` / ``gamma`` densities, numerical integration
of prior x likelihood (``scipy.integrate.quad``), the chain rule of the evidence,
``mpmath`` at high precision, finite differences for the gradient, Monte Carlo moments
within 5 Monte Carlo standard errors, ``numpyro.infer.util.log_density`` for the
numpyro pieces, and scikit-learn's estimator checks.
"""

from __future__ import annotations

import jax
import mpmath
import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import integrate, stats
from scipy.special import logsumexp
from sklearn.utils.estimator_checks import parametrize_with_checks

import bayesnb
from bayesnb import ExponentialNB, GaussianNB, MixedNB
from bayesnb.core import families
from bayesnb.core._x64 import enable_x64
from bayesnb.core.families import exponential
from bayesnb.core.priors import Gamma
from bayesnb.core.stats import CountStats

RATES = np.array([[1.0, 3.0, 0.2], [4.0, 0.5, 0.2]])


def _data(n=80, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n)
    X = rng.exponential(1.0 / RATES[y])
    return X, y


def _lomax_logpdf(x, a, b):
    return stats.lomax.logpdf(x, c=a, scale=b)


# ----------------------------------------------------------------------------- the family


def test_family_is_registered_with_its_protocol_fields():
    fam = families.get("exponential")
    assert fam is exponential.family and "exponential" in families.names()
    assert fam.prior_type is Gamma and fam.support == "positive"
    assert fam.hyperparameters == ("concentration", "rate")
    X, y = _data()
    s = fam.stats(X, y, 2)
    assert isinstance(s, CountStats)
    assert type(fam.posterior(fam.default_prior(s), s)) is Gamma


def test_stats_are_weighted_counts_and_totals():
    X, y = _data(20)
    w = np.random.default_rng(1).uniform(0.5, 2.0, size=20)
    s = exponential.family.stats(X, y, 2, w)
    for c in range(2):
        assert s.class_count[c] == pytest.approx(w[y == c].sum(), rel=1e-14)
        assert_allclose(s.feature_count[c], (w[y == c, None] * X[y == c]).sum(axis=0), rtol=1e-13)


def test_predictive_equals_scipy_lomax():
    X, y = _data()
    prior = Gamma(np.array([[0.7, 2.0, 1.0], [1.5, 0.3, 4.0]]), np.array([[0.2, 5.0, 1.0], [3.0, 0.1, 2.0]]))
    post = exponential.posterior(prior, exponential.family.stats(X, y, 2))
    X_new = np.array([[0.0, 0.0, 0.0], [0.3, 7.0, 1e-9], [50.0, 1e-3, 2.0]])
    out = exponential.log_predictive(post, X_new)
    for c in range(2):
        expected = _lomax_logpdf(X_new, post.concentration[c], post.rate[c]).sum(axis=1)
        assert_allclose(out[:, c], expected, rtol=1e-12)


def test_posterior_equals_quadrature_of_prior_times_likelihood():
    x = np.array([0.4, 2.5, 0.0, 1.1])
    w = np.array([1.0, 2.0, 0.5, 1.0])
    a0, b0 = 1.3, 0.7
    post = exponential.posterior(
        Gamma(np.array([[a0]]), np.array([[b0]])), CountStats(np.array([w.sum()]), np.array([[w @ x]]))
    )
    a, b = post.concentration[0, 0], post.rate[0, 0]

    def log_unnorm(lam):
        # Weighted likelihood: each row's density raised to its weight.
        return stats.gamma.logpdf(lam, a0, scale=1 / b0) + np.sum(w * stats.expon.logpdf(x, scale=1 / lam))

    mode = (a - 1) / b
    shift = log_unnorm(mode)
    norm, _ = integrate.quad(lambda t: np.exp(log_unnorm(t) - shift), 0, 40 * mode, points=[mode], limit=200, epsrel=1e-12)
    for lam in (0.1, mode, 1.0, 3.0):
        density = np.exp(log_unnorm(lam) - shift) / norm
        assert density == pytest.approx(stats.gamma.pdf(lam, a, scale=1 / b), rel=1e-9)


def test_log_evidence_equals_quadrature_tiny_case():
    x = np.array([0.3, 1.7, 0.05])
    a0, b0 = 2.2, 0.9
    clf = ExponentialNB(alpha=a0, beta=b0).fit(x[:, None], np.zeros(3, int))

    def log_integrand(lam):
        return stats.expon.logpdf(x, scale=1 / lam).sum() + stats.gamma.logpdf(lam, a0, scale=1.0 / b0)

    mode = (a0 + x.size - 1) / (b0 + x.sum())
    shift = log_integrand(mode)
    hi = 40 * mode
    value, _ = integrate.quad(lambda t: np.exp(log_integrand(t) - shift), 0.0, hi, points=[mode], limit=200, epsrel=1e-13)
    assert stats.gamma.sf(hi, a0 + x.size, scale=1 / (b0 + x.sum())) < 1e-25
    # One class: the label part of the evidence is zero.
    assert clf.log_evidence() == pytest.approx(np.log(value) + shift, rel=1e-11)


def test_log_evidence_equals_chain_rule_of_lomax_predictives():
    X, y = _data(15, seed=3)
    X[4, 1] = 0.0
    X[6, 0] = 1e6
    prior = Gamma(np.array([[0.7, 2.0, 1.0], [1.5, 0.3, 4.0]]), np.array([[0.2, 5.0, 1.0], [3.0, 0.1, 2.0]]))
    total = 0.0
    for i in range(X.shape[0]):
        seen = CountStats(*(np.asarray(v) for v in exponential.family.stats(X[:i], y[:i], 2)))
        post = exponential.posterior(prior, seen)
        a, b = post.concentration[y[i]], post.rate[y[i]]
        total += _lomax_logpdf(X[i], a, b).sum()  # the oracle is scipy's Lomax, not our predictive
    full = exponential.log_evidence(prior, exponential.family.stats(X, y, 2))
    assert full == pytest.approx(total, rel=1e-11)


def test_estimator_log_evidence_is_the_chain_rule_of_joint_predictives():
    X, y = _data(12, seed=5)
    kw = dict(alpha=1.5, beta=2.0)
    est = ExponentialNB(**kw)
    # First row under the prior: class predictive 1/2 and Lomax(alpha, beta) per feature.
    total = np.log(0.5) + _lomax_logpdf(X[0], 1.5, 2.0).sum()
    for i in range(1, X.shape[0]):
        est.partial_fit(X[i - 1 : i], y[i - 1 : i], classes=[0, 1])
        total += est.predict_joint_log_proba(X[i : i + 1])[0, y[i]]
    assert ExponentialNB(**kw).fit(X, y).log_evidence() == pytest.approx(total, rel=1e-10)


def test_log_evidence_is_stable_against_mpmath():
    # Large N and T: the naive a*log(b) differences lose every digit in float64.
    a0, b0, n, t = 0.5, 1e-3, 3e6, 7.5e9
    mpmath.mp.dps = 50
    a = mpmath.mpf(a0) + n
    b = mpmath.mpf(b0) + t
    exact = a0 * mpmath.log(b0) - a * mpmath.log(b) + mpmath.loggamma(a) - mpmath.loggamma(a0)
    got = exponential.log_evidence(Gamma(np.array([[a0]]), np.array([[b0]])), CountStats(np.array([n]), np.array([[t]])))
    assert got == pytest.approx(float(exact), rel=1e-13)


def test_log_evidence_is_jittable_and_its_gradient_matches_finite_differences():
    X, y = _data(30, seed=2)
    s = exponential.family.stats(X, y, 2)
    n = np.broadcast_to(s.class_count[:, None], s.feature_count.shape)
    a0 = np.full((2, 3), 1.3)
    b0 = np.full((2, 3), 0.8)
    # Traced by the caller's jit and grad, in the library's float64 scope.
    with enable_x64():
        f = jax.jit(exponential.log_evidence_jax)
        assert float(f(a0, b0, n, s.feature_count)) == pytest.approx(
            exponential.log_evidence(Gamma(a0, b0), s), rel=1e-13
        )
        grad_a, grad_b = jax.grad(lambda a, b: exponential.log_evidence_jax(a, b, n, s.feature_count), argnums=(0, 1))(
            jax.numpy.asarray(a0), jax.numpy.asarray(b0)
        )
    h = 1e-6
    for (i, j) in [(0, 0), (1, 2)]:
        for grad, which in ((grad_a, 0), (grad_b, 1)):
            up, down = [a0.copy(), b0.copy()], [a0.copy(), b0.copy()]
            up[which][i, j] += h
            down[which][i, j] -= h
            fd = (exponential.log_evidence(Gamma(*up), s) - exponential.log_evidence(Gamma(*down), s)) / (2 * h)
            assert float(grad[i, j]) == pytest.approx(fd, rel=1e-6)


def test_point_estimates_by_hand():
    X, y = _data()
    s = exponential.family.stats(X, y, 2)
    prior = Gamma(np.full((2, 3), 2.0), np.full((2, 3), 0.5))
    a = 2.0 + s.class_count[:, None]
    b = 0.5 + s.feature_count
    assert_allclose(np.exp(exponential.point(prior, s, "mean").log_rate), a / b, rtol=1e-13)
    assert_allclose(np.exp(exponential.point(prior, s, "map").log_rate), (a - 1) / b, rtol=1e-13)
    assert_allclose(np.exp(exponential.point(prior, s, "mle").log_rate), s.class_count[:, None] / s.feature_count, rtol=1e-13)
    # The MAP is where the posterior Gamma density peaks.
    mode = np.exp(exponential.point(prior, s, "map").log_rate)[0, 0]
    assert stats.gamma.pdf(mode, a[0, 0], scale=1 / b[0, 0]) > stats.gamma.pdf(mode * (1 + 1e-4), a[0, 0], scale=1 / b[0, 0])
    assert stats.gamma.pdf(mode, a[0, 0], scale=1 / b[0, 0]) > stats.gamma.pdf(mode * (1 - 1e-4), a[0, 0], scale=1 / b[0, 0])
    with pytest.raises(ValueError, match="unknown point estimate"):
        exponential.point(prior, s, "median")


def test_map_needs_shape_at_least_one_and_mle_of_an_empty_class_is_the_prior_mean():
    X, y = _data(10)
    est = ExponentialNB(alpha=0.5, beta=2.0, estimate="map").partial_fit(X, np.zeros(10, int), classes=[0, 1])
    with pytest.raises(ValueError, match="estimate='map' is undefined.*0.5 < 1"):
        est.predict(X)
    est.set_params(estimate="mle")
    assert_allclose(est.rate_[1], 0.5 / 2.0, rtol=1e-14)
    assert_allclose(est.rate_[0], 10 / X.sum(axis=0), rtol=1e-13)


def test_mle_with_a_zero_total_is_refused():
    X = np.array([[0.0, 1.0], [0.0, 2.0], [1.0, 1.0]])
    est = ExponentialNB(estimate="mle").fit(X, [0, 0, 1])
    with pytest.raises(ValueError, match="every training value of class/feature index \\(0, 0\\) is 0"):
        est.predict_proba(X)
    # The posterior is proper (a > 0, b > 0 from the prior) and the predictive is finite.
    est.set_params(estimate="predictive")
    assert np.isfinite(est.predict_log_proba(X)).all()


def test_sample_moments_match_the_gamma_posterior():
    post = Gamma(np.array([[0.3, 4.0]]), np.array([[2.0, 0.05]]))
    n = 40_000
    lam = np.exp(np.asarray(exponential.sample(jax.random.key(0), post, n).log_rate))
    assert lam.shape == (n, 1, 2)
    a, b = post.concentration, post.rate
    mean, var = a / b, a / b**2
    mcse = np.sqrt(var / n)
    assert np.all(np.abs(lam.mean(axis=0) - mean) < 5 * mcse)
    # The sample variance has standard error var * sqrt((excess kurtosis + 2) / n); a
    # Gamma's excess kurtosis is 6 / a.
    kurt_excess = 6.0 / a
    var_se = var * np.sqrt((kurt_excess + 2) / n)
    assert np.all(np.abs(lam.var(axis=0) - var) < 5 * var_se)
    # Small shapes do not underflow to a zero rate.
    tiny = exponential.sample(jax.random.key(1), Gamma(np.array([[0.01]]), np.array([[1.0]])), 1000).log_rate
    assert np.isfinite(np.asarray(tiny)).all()


def test_simulate_draws_exponential_rows():
    log_rate = np.log(np.array([[0.5, 4.0], [2.0, 1.0]]))
    y = np.repeat([0, 1], 5000)
    X = exponential.simulate(jax.random.key(3), exponential.ExponentialParams(log_rate), y)
    assert X.shape == (10_000, 2) and X.dtype == np.float64 and (X >= 0).all()
    for c in range(2):
        for j in range(2):
            assert stats.kstest(X[y == c, j], stats.expon(scale=np.exp(-log_rate[c, j])).cdf).pvalue > 1e-3


def test_numpyro_model_has_the_exact_log_density():
    from numpyro import handlers
    from numpyro.infer.util import log_density

    prior = Gamma(np.array([[1.5, 0.7], [2.0, 3.0]]), np.array([[0.5, 2.0], [1.0, 0.3]]))
    # Strictly positive: numpyro's Exponential has support x > 0, and with validation on
    # it scores an exact 0 as out of support (-inf); the closed forms accept 0.
    X = np.array([[0.3, 2.0], [1.5, 1e-3], [0.2, 0.9]])
    y = np.array([0, 1, 1])
    w = np.array([1.0, 2.0, 0.5])
    rate = np.array([[0.8, 1.2], [2.5, 0.4]])

    spec = exponential.family.model(prior)

    def model():
        values = spec.sample_params(2, "feature")
        spec.observe(values, jax.numpy.asarray(X), y, "feature", 3, w)

    with enable_x64():
        logp, trace = log_density(handlers.substitute(model, {"rate": rate}), (), {}, {})
        expected = stats.gamma.logpdf(rate, prior.concentration, scale=1 / prior.rate).sum() + np.sum(
            w[:, None] * stats.expon.logpdf(X, scale=1 / rate[y])
        )
        assert float(logp) == pytest.approx(expected, rel=1e-12)
        assert [f.name for f in trace["rate"]["cond_indep_stack"]] == ["feature", "class"]
        # The statistics form is the same likelihood (no base measure to drop).
        s = exponential.family.stats(X, y, 2, w)
        ll_stats = float(spec.log_likelihood_stats({"rate": jax.numpy.asarray(rate)}, s))
        assert ll_stats == pytest.approx(np.sum(w[:, None] * stats.expon.logpdf(X, scale=1 / rate[y])), rel=1e-12)
    mean, sd = spec.moments(prior)["rate"]
    assert_allclose(mean, stats.gamma.mean(prior.concentration, scale=1 / prior.rate), rtol=1e-14)
    assert_allclose(sd, stats.gamma.std(prior.concentration, scale=1 / prior.rate), rtol=1e-14)
    assert_allclose(spec.values(exponential.ExponentialParams(np.log(rate)))["rate"], rate, rtol=1e-14)


# ----------------------------------------------------------------------------- the estimator


# The defaults (ExponentialNB()) are checked with every registered family's estimator in
# tests/estimators/test_estimators.py (the registry's list).
@parametrize_with_checks(
    [ExponentialNB(missing="ignore"), ExponentialNB(estimate="map", beta=1.0)],
    xfail_strict=True,
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


@pytest.mark.parametrize("estimate", ["predictive", "mean", "map", "mle"])
def test_predict_proba_equals_a_hand_computation_with_scipy(estimate):
    X, y = _data()
    X_new = np.array([[0.5, 0.5, 3.0], [0.1, 4.0, 0.0], [9.0, 0.01, 1.0]])
    clf = ExponentialNB(estimate=estimate).fit(X, y)
    n = np.bincount(y, minlength=2).astype(float)
    pooled = X.mean(axis=0)
    a0, b0 = 1.0, pooled  # the documented default prior: one observation of the pooled mean
    joint = np.zeros((3, 2))
    for c in range(2):
        a = a0 + n[c]
        b = b0 + X[y == c].sum(axis=0)
        if estimate == "predictive":
            joint[:, c] = _lomax_logpdf(X_new, a, b).sum(axis=1)
        else:
            lam = {"mean": a / b, "map": (a - 1) / b, "mle": n[c] / X[y == c].sum(axis=0)}[estimate]
            joint[:, c] = stats.expon.logpdf(X_new, scale=1 / lam).sum(axis=1)
        # Class proportions: Dir(1) posterior mean, its mode, or the MLE.
        pi = {"predictive": (n + 1) / (n.sum() + 2), "mean": (n + 1) / (n.sum() + 2), "map": n / n.sum(), "mle": n / n.sum()}
        joint[:, c] += np.log(pi[estimate][c])
    expected = np.exp(joint - logsumexp(joint, axis=1, keepdims=True))
    assert_allclose(clf.predict_proba(X_new), expected, rtol=1e-10)


def test_default_prior_makes_predictions_invariant_to_the_unit_of_time():
    X, y = _data()
    X_new = _data(10, seed=9)[0]
    p = ExponentialNB().fit(X, y).predict_proba(X_new)
    p_ms = ExponentialNB().fit(1000 * X, y).predict_proba(1000 * X_new)
    assert_allclose(p_ms, p, rtol=1e-10)
    # A fixed beta is not (it is in the unit of X): the invariance is the default's doing.
    q = ExponentialNB(beta=1.0).fit(X, y).predict_proba(X_new)
    q_ms = ExponentialNB(beta=1.0).fit(1000 * X, y).predict_proba(1000 * X_new)
    assert np.abs(q_ms - q).max() > 1e-3


@pytest.mark.parametrize("beta", [None, 0.5])
def test_fit_equals_chained_partial_fit(beta):
    X, y = _data()
    X_new = _data(10, seed=9)[0]
    full = ExponentialNB(beta=beta).fit(X, y)
    part = ExponentialNB(beta=beta)
    for chunk in np.array_split(np.arange(len(y)), 4):
        part.partial_fit(X[chunk], y[chunk], classes=[0, 1])
    assert_allclose(part.posterior_.concentration, full.posterior_.concentration, rtol=1e-13)
    assert_allclose(part.posterior_.rate, full.posterior_.rate, rtol=1e-13)
    assert_allclose(part.predict_proba(X_new), full.predict_proba(X_new), rtol=1e-12)
    assert part.log_evidence() == pytest.approx(full.log_evidence(), rel=1e-12)


def test_sample_weight_equals_duplicated_rows():
    X, y = _data(30)
    w = np.random.default_rng(0).integers(0, 4, size=30)
    weighted = ExponentialNB().fit(X, y, sample_weight=w)
    dup = ExponentialNB().fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    assert_allclose(weighted.feature_total_, dup.feature_total_, rtol=1e-13)
    assert_allclose(weighted.predict_proba(X), dup.predict_proba(X), rtol=1e-11)
    assert weighted.log_evidence() == pytest.approx(dup.log_evidence(), rel=1e-12)


@pytest.mark.parametrize(
    "bad, match",
    [
        (-0.5, "Negative values in data passed to ExponentialNB"),
        (np.nan, "NaN"),
        (np.inf, "infinity"),
    ],
)
def test_bad_values_raise(bad, match):
    X, y = _data(10)
    X_bad = X.copy()
    X_bad[3, 1] = bad
    with pytest.raises(ValueError, match=match):
        ExponentialNB().fit(X_bad, y)
    clf = ExponentialNB().fit(X, y)
    with pytest.raises(ValueError, match=match):
        clf.predict(X_bad)


def test_zero_is_a_valid_duration():
    X, y = _data(10)
    X[0, 0] = 0.0
    clf = ExponentialNB().fit(X, y)
    assert np.isfinite(clf.predict_log_proba(X)).all()


def test_bad_parameters_and_shapes_raise():
    X, y = _data(10)
    clf = ExponentialNB().fit(X, y)
    with pytest.raises(ValueError, match="3 features"):
        clf.predict(X[:, :2])
    with pytest.raises(ValueError, match="alpha"):
        ExponentialNB(alpha=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="beta"):
        ExponentialNB(beta=0.0).fit(X, y)
    with pytest.raises(TypeError, match="prior must be a bayesnb.core.priors.Gamma"):
        ExponentialNB(prior=(1.0, 1.0)).fit(X, y)
    # (Learned from the evidence since the Gamma-rate estimators share GammaRateNB.)
    assert "prior" in ExponentialNB(beta="evidence").fit(X, y).evidence_trace_


def test_prior_instance_equals_alpha_beta():
    X, y = _data()
    a = ExponentialNB(alpha=2.0, beta=0.3).fit(X, y)
    b = ExponentialNB(prior=Gamma(2.0, 0.3)).fit(X, y)
    assert_allclose(a.predict_proba(X), b.predict_proba(X), rtol=1e-14)
    assert a.log_evidence() == b.log_evidence()


def test_sample_posterior_and_predict_proba_draws_use_the_same_draws():
    X, y = _data()
    clf = ExponentialNB().fit(X, y)
    draws = clf.sample_posterior(4000, random_state=1)
    assert draws["rate"].shape == (4000, 2, 3) and draws["class_probs"].shape == (4000, 2)
    post = clf.posterior_
    mcse = np.sqrt(post.concentration / post.rate**2 / 4000)
    assert np.all(np.abs(draws["rate"].mean(axis=0) - post.concentration / post.rate) < 5 * mcse)
    X_new = X[:5]
    P = clf.predict_proba_draws(X_new, 50, random_state=1)
    small = clf.sample_posterior(50, random_state=1)
    joint = np.log(small["class_probs"])[:, None, :] + np.stack(
        [stats.expon.logpdf(X_new[:, None, :], scale=1 / small["rate"][d][None]).sum(-1) for d in range(50)]
    )
    assert_allclose(P, np.exp(joint - logsumexp(joint, axis=-1, keepdims=True)), rtol=1e-8, atol=1e-12)


def test_generated_rows_follow_the_lomax_predictive():
    X, y = _data(400)
    clf = ExponentialNB().fit(X, y)
    Xg, yg = clf.sample(6000, random_state=0)
    assert Xg.shape == (6000, 3) and (Xg >= 0).all() and set(np.unique(yg)) <= {0, 1}
    post = clf.posterior_
    for c in range(2):
        for j in range(3):
            cdf = stats.lomax(c=post.concentration[c, j], scale=post.rate[c, j]).cdf
            assert stats.kstest(Xg[yg == c, j], cdf).pvalue > 1e-3


def test_save_load_round_trip(tmp_path):
    X, y = _data()
    clf = ExponentialNB(alpha=2.0).fit(X, y)
    path = tmp_path / "exp.npz"
    clf.save(path)
    back = bayesnb.load(path)
    assert type(back) is ExponentialNB and back.get_params() == clf.get_params()
    assert_allclose(back.predict_proba(X), clf.predict_proba(X), rtol=0)
    assert back.log_evidence() == clf.log_evidence()


# ----------------------------------------------------------------------------- other layers


def test_mixed_nb_with_an_exponential_block_sums_the_blocks():
    X, y = _data()
    mixed = MixedNB([("durations", ExponentialNB(), [0, 1]), ("g", GaussianNB(), [2])]).fit(X, y)
    e = ExponentialNB().fit(X[:, :2], y)
    g = GaussianNB().fit(X[:, 2:], y)
    joint = e.predict_joint_log_proba(X[:, :2]) + g.predict_joint_log_proba(X[:, 2:]) - e.class_log_prior_
    assert_allclose(mixed.predict_joint_log_proba(X), joint, rtol=1e-12)
    class_part = e.log_evidence() - exponential.log_evidence(e.prior_, e.stats_)
    expected = e.log_evidence() + g.log_evidence() - class_part
    assert mixed.log_evidence() == pytest.approx(expected, rel=1e-12)
    Xg, _ = mixed.sample(20, random_state=0)
    assert Xg.shape == (20, 3) and (Xg[:, :2] >= 0).all()


def test_missing_ignore_equals_each_feature_fitted_on_its_observed_rows():
    X, y = _data(200)
    rng = np.random.default_rng(4)
    Xn = X.copy()
    Xn[rng.random(X.shape) < 0.1] = np.nan
    clf = ExponentialNB(alpha=1.0, beta=0.5, missing="ignore").fit(Xn, y)
    for j in range(3):
        obs = ~np.isnan(Xn[:, j])
        one = ExponentialNB(alpha=1.0, beta=0.5).fit(Xn[obs][:, [j]], y[obs])
        assert_allclose(clf.posterior_.concentration[:, j], one.posterior_.concentration[:, 0], rtol=1e-14)
        assert_allclose(clf.posterior_.rate[:, j], one.posterior_.rate[:, 0], rtol=1e-13)
    # Prediction: the sum of the observed features' Lomax terms.
    X_new = np.array([[0.5, np.nan, 2.0], [np.nan, np.nan, np.nan], [3.0, 0.2, np.nan]])
    post = clf.posterior_
    joint = np.log((np.bincount(y, minlength=2) + 1) / (len(y) + 2))[None, :].repeat(3, axis=0)
    for c in range(2):
        terms = _lomax_logpdf(X_new, post.concentration[c], post.rate[c])
        joint[:, c] += np.where(np.isnan(X_new), 0.0, terms).sum(axis=1)
    assert_allclose(clf.predict_log_proba(X_new), joint - logsumexp(joint, axis=1, keepdims=True), rtol=1e-10)
    # The evidence: the labels' part plus each feature's evidence on its observed rows.
    complete = ExponentialNB(alpha=1.0, beta=0.5).fit(X, y)
    labels_part = complete.log_evidence() - exponential.log_evidence(complete.prior_, complete.stats_)
    features_part = 0.0
    for j in range(3):
        obs = ~np.isnan(Xn[:, j])
        s = exponential.family.stats(Xn[obs][:, [j]], y[obs], 2)
        features_part += exponential.log_evidence(Gamma(np.ones((2, 1)), np.full((2, 1), 0.5)), s)
    assert clf.log_evidence() == pytest.approx(labels_part + features_part, rel=1e-12)
    # The default prior is scaled to each feature's observed values.
    default = ExponentialNB(missing="ignore").fit(Xn, y)
    assert_allclose(default.prior_.rate, np.broadcast_to(np.nanmean(Xn, axis=0), (2, 3)), rtol=1e-13)


def test_compare_scores_each_estimate():
    from sklearn.metrics import log_loss

    X, y = _data(120)
    X_test, y_test = _data(60, seed=8)
    table = bayesnb.compare(ExponentialNB(), X, y, X_test, y_test)
    clf = ExponentialNB().fit(X, y)
    for estimate in ("predictive", "mean"):
        clf.set_params(estimate=estimate)
        assert table.loc[estimate, "log_loss"] == pytest.approx(log_loss(y_test, clf.predict_proba(X_test)), rel=1e-9)


def test_to_inference_data():
    X, y = _data()
    idata = ExponentialNB().fit(X, y).to_inference_data(200, random_state=0, X=X, y=y)
    post = idata.posterior["rate"].values.reshape(-1, 2, 3)
    clf = ExponentialNB().fit(X, y)
    mcse = np.sqrt(clf.posterior_.concentration / clf.posterior_.rate**2 / 200)
    assert np.all(np.abs(post.mean(axis=0) - clf.posterior_.concentration / clf.posterior_.rate) < 5 * mcse)


def test_mcmc_crosscheck_agrees():
    from bayesnb.ppl.mcmc import crosscheck

    X, y = _data(40)
    clf = ExponentialNB(beta=1.0).fit(X, y)
    report = crosscheck(clf, X, y, num_warmup=500, num_samples=1000, random_state=0)
    assert report.agrees


def test_simulation_based_calibration():
    from bayesnb.ppl.sbc import simulation_based_calibration

    X, y = _data(20)
    result = simulation_based_calibration(
        ExponentialNB(alpha=2.0, beta=1.0).fit(X, y), 10, n_simulations=100, n_draws=99, random_state=0
    )
    assert result.passed


def test_cli_family_exponential(tmp_path, capsys):
    from bayesnb.cli.command import main

    X, y = _data(40)
    path = tmp_path / "d.csv"
    rows = ["a,b,c,label"] + [f"{r[0]},{r[1]},{r[2]},{lab}" for r, lab in zip(X, y)]
    path.write_text("\n".join(rows) + "\n")
    code = main(["fit", str(path), "--label", "label", "--family", "exponential", "--model", str(tmp_path / "m")])
    assert code in (0, None)
    assert "ExponentialNB" in capsys.readouterr().out


def test_nuts_on_a_mixed_block_agrees_and_catches_a_wrong_posterior():
    """NUTS on the numpyro model of a one-block MixedNB with weighted rows matches the
    closed-form posterior; a posterior with the roles of N and T swapped does not."""
    from bayesnb.ppl.mcmc import crosscheck

    X, y = _data(30, seed=4)
    w = np.random.default_rng(2).uniform(0.5, 2.0, size=30)

    def fitted():
        # A one-block MixedNB: its model is mixed_model (a one-family estimator's model is
        # looked up by family name at bayesnb/ppl/models.py:991, not through the spec).
        return MixedNB([("e", ExponentialNB(alpha=2.0, beta=1.0), slice(None))]).fit(X, y, sample_weight=w)

    clf = fitted()
    report = crosscheck(clf, X, y, sample_weight=w, num_warmup=500, num_samples=1000, random_state=0)
    assert report.agrees, report
    # Power: a posterior with the roles of N and T swapped (the Poisson update) disagrees.
    wrong = fitted()
    block = wrong.named_estimators_["e"]
    n = np.broadcast_to(block.stats_.class_count[:, None], (2, 3))
    block.posterior_ = Gamma(2.0 + block.stats_.feature_count, 1.0 + n)
    wrong.posterior_ = {"e": block.posterior_}
    assert not crosscheck(wrong, X, y, sample_weight=w, nuts=report.nuts, random_state=0).agrees


def test_log_bayes_factor_against_a_gaussian_model_of_the_same_values():
    from bayesnb.analysis.evidence import log_bayes_factor

    X, y = _data(60)
    e = ExponentialNB(beta=1.0).fit(X, y)
    g = GaussianNB().fit(X, y)
    assert log_bayes_factor(e, g, X, y) == pytest.approx(e.log_evidence() - g.log_evidence(), rel=1e-10)


# ----------------------------------------------------------------------------- empirical Bayes


def _neg_log_evidence(u, n, t):
    """Minus the closed-form evidence of one shared Gamma(a, b) prior, from raw per-cell N, T."""
    from scipy.special import gammaln

    a, b = np.exp(u)
    return -np.sum(a * np.log(b) - (a + n) * np.log(b + t) + gammaln(a + n) - gammaln(a))


@pytest.mark.parametrize("learn", [{"prior": "evidence"}, {"alpha": "evidence", "beta": 2.0}])
def test_prior_by_evidence_reaches_the_maximum_of_the_closed_form(learn):
    from scipy.optimize import minimize

    X, y = _data(60, seed=3)
    clf = ExponentialNB(**learn).fit(X, y)
    n = np.stack([np.full(X.shape[1], np.sum(y == c)) for c in (0, 1)]).astype(float)
    t = np.stack([X[y == c].sum(axis=0) for c in (0, 1)])
    a, b = float(clf.prior_.concentration[0, 0]), float(clf.prior_.rate[0, 0])
    assert np.all(clf.prior_.concentration == a) and np.all(clf.prior_.rate == b)
    if "prior" in learn:
        res = minimize(_neg_log_evidence, [0.0, 0.0], args=(n, t), method="Nelder-Mead",
                       options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 5000})
        assert a == pytest.approx(np.exp(res.x[0]), rel=1e-5) and b == pytest.approx(np.exp(res.x[1]), rel=1e-5)
    else:
        assert b == 2.0
        grid = np.exp(np.log(a) + np.linspace(-0.05, 0.05, 41))
        values = [-_neg_log_evidence(np.log([g, b]), n, t) for g in grid]
        assert np.argmax(values) == 20  # the learned shape is the best on a fine grid around it
    assert clf.evidence_trace_["prior"].converged
    # No prior of the same (shared) form has a higher evidence.
    for other in ({"beta": 2.0}, {"alpha": 3.0, "beta": 2.0}) if "beta" in learn else ({"beta": 1.0}, {"alpha": 3.0, "beta": 0.5}):
        assert clf.log_evidence() >= ExponentialNB(**other).fit(X, y).log_evidence()
    with pytest.raises(ValueError, match="prior= replaces"):
        ExponentialNB(alpha="evidence", prior=Gamma(1.0, 1.0)).fit(X, y)


@pytest.mark.parametrize("seed", [7, 8, 9])
def test_mixed_nb_with_an_exponential_block_and_ten_percent_nan_agrees_with_nuts(seed):
    """An exponential block beside a Gaussian one, 10% of entries missing: the mixed model
    is the sum of its blocks fitted alone, NUTS on its numpyro model (unobserved entries
    integrated out) agrees with the closed-form posterior on every seed, and a planted
    shift of the exponential block's posterior (rates pulled down by a third) disagrees."""
    from bayesnb.ppl.mcmc import crosscheck

    rng = np.random.default_rng(seed)
    X, y = _data(60, seed=seed)
    X = np.column_stack([X, rng.normal(y[:, None], 1.0, (60, 2))])
    X[rng.random(X.shape) < 0.1] = np.nan
    assert 0.05 < np.isnan(X).mean() < 0.15

    def blocks():
        return [("e", ExponentialNB(beta=1.0, missing="ignore"), [0, 1, 2]), ("g", GaussianNB(missing="ignore"), [3, 4])]

    mixed = MixedNB(blocks(), missing="ignore").fit(X, y)
    e = ExponentialNB(beta=1.0, missing="ignore").fit(X[:, :3], y)
    g = GaussianNB(missing="ignore").fit(X[:, 3:], y)
    joint = e.predict_joint_log_proba(X[:, :3]) + g.predict_joint_log_proba(X[:, 3:]) - e.class_log_prior_
    assert_allclose(mixed.predict_joint_log_proba(X), joint, rtol=1e-12)
    class_part = e.log_evidence() - float(e.family_.log_evidence(e.prior_, e.stats_))
    assert mixed.log_evidence() == pytest.approx(e.log_evidence() + g.log_evidence() - class_part, rel=1e-12)
    report = crosscheck(mixed, X, y, num_warmup=500, num_samples=1000, random_state=0)
    assert report.agrees, report
    block = mixed.named_estimators_["e"]
    block.posterior_ = block.posterior_._replace(rate=np.asarray(block.posterior_.rate) * 1.5)
    mixed.posterior_ = {**mixed.posterior_, "e": block.posterior_}
    assert not crosscheck(mixed, X, y, nuts=report.nuts, random_state=0).agrees
