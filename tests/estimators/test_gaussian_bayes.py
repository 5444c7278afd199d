"""GaussianBayesClassifier (full / shared covariance, Normal-Inverse-Wishart prior).

Oracles, none of which shares code with :mod:`bayesnb.core.families.gaussian_mv`:

* numpyro's ``MultivariateStudentT`` (predictive), ``InverseWishart`` and
  ``MultivariateNormal`` (joint NIW density for the MAP), all in float64;
* Monte Carlo averages of a numpy Gaussian density over exact posterior draws, within
  five Monte Carlo standard errors computed from the draws;
* the chain rule of predictives, :math:`\\log p(D) = \\sum_i \\log p(x_i, y_i \\mid D_{<i})`,
  for the log evidence (each term from an estimator ``partial_fit`` on the rows before);
* scikit-learn's ``LinearDiscriminantAnalysis(solver="lsqr")`` for the shared-covariance
  MLE, and ``scipy.stats.multivariate_normal`` with ``np.cov(bias=True)`` for the full MLE;
* Kolmogorov-Smirnov tests against the chi-square laws of quadratic forms of
  (inverse-)Wishart matrices for the Bartlett sampler;
* numpy/scipy hand formulas (seed 002's boundaries, finite differences, least squares).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats as sps
from scipy.special import logsumexp
from sklearn.datasets import load_iris
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.model_selection import train_test_split
from sklearn.utils.estimator_checks import parametrize_with_checks

from bayesnb.core._x64 import enable_x64
from bayesnb.core.families import gaussian_mv
from bayesnb.core.priors import NormalInverseGamma, NormalInverseWishart
from bayesnb.core.stats import GaussianStats, ScatterStats, merge, scatter_stats
from bayesnb.estimators.gaussian import GaussianNB
from bayesnb.estimators.gaussian_bayes import GaussianBayesClassifier

COVARIANCES = ("full", "shared")  # the NIW models of this module
ALL_COVARIANCES = COVARIANCES + ("diag",)  # "diag" is delegated to the NIG family
ESTIMATES = ("mle", "map", "mean", "predictive")


# ----------------------------------------------------------------------------- sklearn checks


# The defaults (GaussianBayesClassifier(), covariance="full") are checked with every registered family's estimator in
# tests/estimators/test_estimators.py (the registry's list).
@parametrize_with_checks(
    [GaussianBayesClassifier(covariance=c) for c in ALL_COVARIANCES if c != "full"],
    xfail_strict=True,
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


# ----------------------------------------------------------------------------- data


def _data(n_per_class=(14, 18, 22), n_features=3, seed=0, shift=1.2):
    """Overlapping Gaussian classes with different covariances, and test rows."""
    rng = np.random.default_rng(seed)
    C = len(n_per_class)
    y = np.repeat(np.arange(C), n_per_class)
    X = np.empty((y.size, n_features))
    for c in range(C):
        A = rng.normal(size=(n_features, n_features)) * 0.5 + np.eye(n_features)
        X[y == c] = rng.normal(size=((y == c).sum(), n_features)) @ A.T + shift * c
    perm = rng.permutation(y.size)
    X_test = rng.normal(size=(12, n_features)) * 2 + shift
    return X[perm], y[perm], X_test


def _prior(C, F, shared, seed=1, covariance=None):
    """An explicit, non-trivial prior fixed before seeing data (NIW; NIG for "diag")."""
    rng = np.random.default_rng(seed)
    if covariance == "diag":
        return NormalInverseGamma(rng.normal(size=(C, F)), rng.uniform(0.5, 2, (C, F)), rng.uniform(1.5, 3, (C, F)), rng.uniform(0.5, 2, (C, F)))
    M = rng.normal(size=(F, F))
    scale = M @ M.T + F * np.eye(F)
    loc = rng.normal(size=(C, F))
    kappa = rng.uniform(0.5, 2.0, C)
    if shared:
        return NormalInverseWishart(loc, kappa, np.asarray(F + 1.5), scale)
    return NormalInverseWishart(loc, kappa, F + rng.uniform(0.5, 3.0, C), np.stack([scale * (1 + 0.3 * c) for c in range(C)]))


def _gauss_logpdf(X, loc, cov):
    """Gaussian log density by numpy (Cholesky + generic solve), shape (..., n)."""
    L = np.linalg.cholesky(cov)
    diff = X - loc[..., None, :]
    z = np.linalg.solve(L[..., None, :, :], diff[..., None])[..., 0]
    F = X.shape[-1]
    half_logdet = np.log(np.diagonal(L, axis1=-2, axis2=-1)).sum(-1)
    return -0.5 * (z**2).sum(-1) - half_logdet[..., None] - 0.5 * F * np.log(2 * np.pi)


# ----------------------------------------------------------------------------- statistics


def test_scatter_stats_match_numpy_and_merge_is_chans_update():
    X, y, _ = _data()
    X = X + 1e6  # centred statistics keep their digits far from the origin
    rng = np.random.default_rng(3)
    w = rng.uniform(0.2, 2.0, y.size)
    s = scatter_stats(X, y, 4, w)
    assert_array_equal(s.class_count[3], 0.0)
    assert_array_equal(s.scatter[3], 0.0)
    for c in range(3):
        r = y == c
        m = np.average(X[r], axis=0, weights=w[r])
        d = X[r] - m
        assert_allclose(s.class_count[c], w[r].sum(), rtol=1e-14)
        assert_allclose(s.mean[c], m, rtol=1e-14)
        assert_allclose(s.scatter[c], (d * w[r, None]).T @ d, rtol=1e-10)
    assert_array_equal(s.scatter, np.swapaxes(s.scatter, -1, -2))
    parts = np.array_split(np.arange(y.size), 4)
    shards = [scatter_stats(X[p], y[p], 4, w[p]) for p in parts]
    merged = merge(*shards)
    assert isinstance(merged, ScatterStats)
    for a, b in zip(merged, s):
        assert_allclose(a, b, rtol=1e-9, atol=1e-9 * np.abs(b).max())
    # a shard with an empty class does not move that class's mean
    one = scatter_stats(X[y == 0], y[y == 0], 4)
    assert_allclose(merge(one, scatter_stats(X[y == 1], y[y == 1], 4)).mean[0], X[y == 0].mean(0), rtol=1e-15)


# ----------------------------------------------------------------------------- predictive


@pytest.mark.parametrize("covariance", COVARIANCES)
@pytest.mark.parametrize("explicit", [False, True])
def test_predictive_equals_numpyro_multivariate_student_t(covariance, explicit):
    X, y, X_test = _data()
    shared = covariance == "shared"
    prior = _prior(3, 3, shared) if explicit else None
    clf = GaussianBayesClassifier(covariance=covariance, prior=prior).fit(X, y)
    post = clf.posterior_
    F = X.shape[1]
    ours = clf.predict_joint_log_proba(X_test) - clf.class_log_prior_
    with enable_x64():
        for c in range(3):
            df = float(post.df) if shared else post.df[c]
            psi = post.scale if shared else post.scale[c]
            d = df - F + 1
            shape = psi * (post.kappa[c] + 1) / (post.kappa[c] * d)
            t = dist.MultivariateStudentT(d, jnp.asarray(post.loc[c]), jnp.linalg.cholesky(jnp.asarray(shape)))
            ref = np.asarray(t.log_prob(jnp.asarray(X_test)))
            assert_allclose(ours[:, c], ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("covariance", COVARIANCES)
def test_predictive_equals_monte_carlo_average_of_gaussian_over_posterior_draws(covariance):
    X, y, _ = _data(n_per_class=(10, 12, 14))
    clf = GaussianBayesClassifier(covariance=covariance, prior=_prior(3, 3, covariance == "shared")).fit(X, y)
    n = 20000
    draws = gaussian_mv.sample(jax.random.key(0), clf.posterior_, n)
    loc, cov = draws.loc, gaussian_mv.covariance(draws)
    if covariance == "shared":
        assert cov.shape == (n, 3, 3)
        cov = np.broadcast_to(cov[:, None], (n, 3, 3, 3))
    else:
        assert cov.shape == (n, 3, 3, 3)
    # Points where each class has density worth estimating: its own rows and beyond.
    for c in range(3):
        x = np.vstack([X[y == c][:3], X[y == c].mean(0) + 1.5])
        log_terms = _gauss_logpdf(x, loc[:, c], cov[:, c])  # (n, m)
        exact = clf.predict_joint_log_proba(x)[:, c] - clf.class_log_prior_[c]
        shift = log_terms.max(axis=0)
        w = np.exp(log_terms - shift)
        mean, se = w.mean(0), w.std(0, ddof=1) / np.sqrt(n)
        assert np.all(se <= 0.02 * mean), "Monte Carlo error too large for a meaningful check"
        assert np.all(np.abs(np.exp(exact - shift) - mean) <= 5 * se)
        # The plug-in of the posterior mean is a different (lighter-tailed) density:
        # the check has the power to tell them apart.
        plug = gaussian_mv.log_likelihood(gaussian_mv.point(clf.prior_, clf.stats_, "mean"), x)[:, c]
        assert np.any(np.abs(np.exp(plug - shift) - mean) > 10 * se)


# ----------------------------------------------------------------------------- sampler


@pytest.mark.parametrize("shared", [False, True])
def test_inverse_wishart_draws_have_the_chi_square_quadratic_forms(shared):
    """Bartlett draws against two exact laws, for fixed directions a (Kolmogorov-Smirnov).

    Sigma^-1 ~ W(Psi^-1, nu) gives a' Sigma^-1 a / a' Psi^-1 a ~ chi2(nu); and for a
    Wishart A ~ W(V, nu), a' V^-1 a / a' A^-1 a ~ chi2(nu - F + 1) (Muirhead 1982,
    Thm 3.2.12), i.e. a' Psi a / a' Sigma a ~ chi2(nu - F + 1).
    """
    C, F = 2, 4
    prior = gaussian_mv.check_prior(_prior(C, F, shared, seed=5), C, F, shared)
    draws = gaussian_mv.sample(jax.random.key(11), prior, 6000)
    L = np.asarray(draws.scale_tril)
    psi = prior.scale if shared else prior.scale[1]
    nu = float(prior.df) if shared else prior.df[1]
    Ls = L if shared else L[:, 1]
    assert_allclose(np.triu(Ls, 1), 0.0)
    assert np.all(np.diagonal(Ls, axis1=-2, axis2=-1) > 0)
    rng = np.random.default_rng(2)
    for a in rng.normal(size=(2, F)):
        # Sigma^-1 ~ W(Psi^-1, nu):  a' Sigma^-1 a / (a' Psi^-1 a) ~ chi2(nu)
        z = np.linalg.solve(Ls, np.broadcast_to(a, Ls.shape[:-1])[..., None])[..., 0]
        q_prec = (z**2).sum(-1) / (a @ np.linalg.solve(psi, a))
        assert sps.kstest(q_prec, sps.chi2(nu).cdf).pvalue > 1e-3
        # Sigma ~ IW(Psi, nu):  a' Psi a / (a' Sigma a) ~ chi2(nu - F + 1)
        sigma = Ls @ np.swapaxes(Ls, -1, -2)
        q_cov = (a @ psi @ a) / np.einsum("i,nij,j->n", a, sigma, a)
        assert sps.kstest(q_cov, sps.chi2(nu - F + 1).cdf).pvalue > 1e-3
    # The wrong degrees of freedom would be rejected: the test has power.
    assert sps.kstest(q_cov, sps.chi2(nu - F + 2).cdf).pvalue < 1e-3


@pytest.mark.parametrize("covariance", COVARIANCES)
def test_posterior_mean_estimate_equals_average_of_draws(covariance):
    X, y, _ = _data()
    clf = GaussianBayesClassifier(covariance=covariance, estimate="mean").fit(X, y)
    draws = gaussian_mv.sample(jax.random.key(1), clf.posterior_, 20000)
    for d, exact in ((draws.loc, clf.means_), (gaussian_mv.covariance(draws), clf.covariance_)):
        mean, se = d.mean(0), d.std(0, ddof=1) / np.sqrt(d.shape[0])
        assert np.all(np.abs(mean - exact) <= 5 * se + 1e-12)


# ----------------------------------------------------------------------------- evidence


@pytest.mark.parametrize("covariance", COVARIANCES)
def test_log_evidence_equals_chain_rule_of_predictives(covariance):
    X, y, _ = _data(n_per_class=(5, 7, 6))
    prior = _prior(3, 3, covariance == "shared")
    beta = np.array([1.0, 2.0, 0.5])
    full = GaussianBayesClassifier(covariance=covariance, prior=prior, class_alpha=beta).fit(X, y)
    # First row: the prior predictive (features) and beta_c / sum(beta) (label).
    terms = [gaussian_mv.log_predictive(full.prior_, X[:1])[0, y[0]] + np.log(beta[y[0]] / beta.sum())]
    for i in range(1, y.size):
        clf = GaussianBayesClassifier(covariance=covariance, prior=prior, class_alpha=beta)
        clf.partial_fit(X[:i], y[:i], classes=[0, 1, 2])
        terms.append(clf.predict_joint_log_proba(X[i : i + 1])[0, y[i]])
    assert_allclose(full.log_evidence(), np.sum(terms), rtol=0, atol=1e-9)


@pytest.mark.parametrize("covariance", COVARIANCES)
def test_log_evidence_does_not_depend_on_row_order(covariance):
    X, y, _ = _data(n_per_class=(5, 7, 6))
    prior = _prior(3, 3, covariance == "shared")
    ev = GaussianBayesClassifier(covariance=covariance, prior=prior).fit(X, y).log_evidence()
    perm = np.random.default_rng(0).permutation(y.size)
    again = GaussianBayesClassifier(covariance=covariance, prior=prior).fit(X[perm], y[perm])
    assert_allclose(again.log_evidence(), ev, rtol=1e-12)


# ----------------------------------------------------------------------------- MLE oracles


def _direct_mle_joint(X, y, X_test):
    """Per-class mean, biased covariance and scipy's multivariate_normal, plus log(N_c/N)."""
    classes = np.unique(y)
    out = np.empty((X_test.shape[0], classes.size))
    for k, c in enumerate(classes):
        Xc = X[y == c]
        cov = np.cov(Xc, rowvar=False, bias=True)
        out[:, k] = sps.multivariate_normal(Xc.mean(0), cov).logpdf(X_test) + np.log(Xc.shape[0] / y.size)
    return out


@pytest.mark.parametrize("n_classes", [2, 3])
def test_shared_mle_equals_sklearn_lda_lsqr(n_classes):
    X, y, X_test = _data(n_per_class=(30, 25, 35)[:n_classes], n_features=4, seed=2, shift=0.4)
    lda = LinearDiscriminantAnalysis(solver="lsqr").fit(X, y)
    clf = GaussianBayesClassifier(covariance="shared", estimate="mle").fit(X, y)
    proba = lda.predict_proba(X_test)
    assert proba.min() > 1e-4  # overlapping classes: the comparison is not of saturated 0/1
    assert_allclose(clf.predict_proba(X_test), proba, rtol=0, atol=1e-10)
    assert_allclose(clf.predict_proba(X), lda.predict_proba(X), rtol=0, atol=1e-10)
    assert_allclose(clf.covariance_, lda.covariance_, rtol=1e-12)
    assert_allclose(clf.coef_, lda.coef_, rtol=1e-9, atol=1e-10)
    assert_allclose(clf.intercept_, lda.intercept_, rtol=1e-9, atol=1e-10)
    assert_allclose(clf.decision_function(X_test), lda.decision_function(X_test), rtol=1e-9, atol=1e-9)
    assert_array_equal(clf.predict(X_test), lda.predict(X_test))


@pytest.mark.parametrize("temperature", [1.0, 2.5])
@pytest.mark.parametrize("estimate", ["mle", "map", "mean"])
def test_shared_class_probabilities_are_the_normalised_joint(estimate, temperature):
    # predict_proba scores the class contrast (the row's quadratic term left out), the
    # joint keeps it: normalised over classes they agree, at every plug-in estimate,
    # tempered or not, on rows near the classes and far from them.
    X, y, X_test = _data(n_per_class=(30, 25, 35), n_features=4, seed=5, shift=0.8)
    X_test = np.vstack([X_test, X_test[:3] * 1e4])
    clf = GaussianBayesClassifier(covariance="shared", estimate=estimate, temperature=temperature).fit(X, y)
    joint = clf.predict_joint_log_proba(X_test)
    log_proba = joint - logsumexp(joint, axis=1, keepdims=True)
    assert_allclose(clf.predict_log_proba(X_test), log_proba, rtol=1e-12, atol=1e-12)
    assert_allclose(clf.predict_proba(X_test), np.exp(log_proba), rtol=1e-12, atol=1e-14)
    assert_array_equal(clf.predict(X_test), clf.classes_[np.argmax(joint, axis=1)])
    # The joint itself is not shifted by the contrast: scipy's density plus the log prior.
    point = clf._point(estimate)
    cov = gaussian_mv.covariance(point)
    direct = np.stack(
        [sps.multivariate_normal(point.loc[c], cov).logpdf(X_test[:12]) for c in range(3)], axis=1
    ) / temperature + clf._class_log_prob(estimate)
    assert_allclose(joint[:12], direct, rtol=1e-10)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_full_mle_equals_direct_multivariate_normal(n_classes):
    X, y, X_test = _data(n_per_class=(30, 25, 35)[:n_classes], n_features=4, seed=2, shift=0.4)
    clf = GaussianBayesClassifier(covariance="full", estimate="mle").fit(X, y)
    joint = _direct_mle_joint(X, y, X_test)
    assert_allclose(clf.predict_joint_log_proba(X_test), joint, rtol=1e-11, atol=1e-11)
    assert_allclose(clf.predict_proba(X_test), np.exp(joint - logsumexp(joint, axis=1, keepdims=True)), atol=1e-10)


def test_iris_full_mle_misclassifications_equal_the_direct_computation():
    X, y = load_iris(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.5, random_state=0)
    clf = GaussianBayesClassifier(covariance="full", estimate="mle").fit(X_train, y_train)
    direct = np.argmax(_direct_mle_joint(X_train, y_train, X_test), axis=1)
    ours = clf.predict(X_test)
    assert_array_equal(ours, direct)
    n_wrong = int((ours != y_test).sum())
    assert n_wrong == int((direct != y_test).sum())
    assert n_wrong == 3  # 72/75 correct on this split (the number reported for this model)


# ----------------------------------------------------------------------------- boundaries


def _grid(center, h=0.37, k=4):
    t = h * np.arange(-k, k + 1)
    return np.array([[center[0] + a, center[1] + b] for a in t for b in t])


@pytest.mark.parametrize("estimate", ["mle", "map", "mean"])
def test_shared_boundary_is_affine_and_is_seed_002s_hyperplane(estimate):
    X, y, _ = _data(n_per_class=(20, 25), n_features=2, seed=7)
    clf = GaussianBayesClassifier(covariance="shared", estimate=estimate).fit(X, y)
    G = _grid(X.mean(0))
    dec = clf.decision_function(G)
    design = np.column_stack([G, np.ones(len(G))])
    fit, *_ = np.linalg.lstsq(design, dec, rcond=None)
    assert_allclose(design @ fit, dec, rtol=0, atol=1e-10 * np.abs(dec).max())
    # Seed 002: w = Sigma^-1 (mu_1 - mu_0), b = -1/2 (mu_1' S^-1 mu_1 - mu_0' S^-1 mu_0) + log pi_1/pi_0.
    mu, S = clf.means_, clf.covariance_
    lp = clf.class_log_prior_
    w = np.linalg.solve(S, mu[1] - mu[0])
    b = -0.5 * (mu[1] @ np.linalg.solve(S, mu[1]) - mu[0] @ np.linalg.solve(S, mu[0])) + lp[1] - lp[0]
    assert_allclose(clf.coef_, w[None, :], rtol=1e-10)
    assert_allclose(clf.intercept_, [b], rtol=1e-10)
    assert_allclose(fit, np.r_[w, b], rtol=1e-8, atol=1e-10)
    # The decision function gives the same probabilities as the joint: sigmoid of it.
    assert_allclose(clf.predict_proba(G)[:, 1], 1 / (1 + np.exp(-dec)), rtol=1e-12, atol=1e-14)
    assert_array_equal(clf.predict(G), clf.classes_[(dec > 0).astype(int)])


def test_shared_multiclass_scores_are_affine_one_row_per_class():
    X, y, _ = _data(n_per_class=(20, 25, 15), n_features=2, seed=7)
    clf = GaussianBayesClassifier(covariance="shared", estimate="map").fit(X, y)
    assert clf.coef_.shape == (3, 2) and clf.intercept_.shape == (3,)
    G = _grid(X.mean(0))
    dec = clf.decision_function(G)
    assert_allclose(dec, G @ clf.coef_.T + clf.intercept_, rtol=1e-13)
    # Scores differ from the joint log-probability by a per-row constant only.
    diff = clf.predict_joint_log_proba(G) - dec
    assert_allclose(diff - diff[:, :1], 0.0, atol=1e-10)


def _differences(f, center, h, order, direction):
    e = np.asarray(direction, float) * h
    coef = {2: [1, -2, 1], 3: [-1, 3, -3, 1]}[order]
    pts = np.array([center + (k - order / 2) * e for k in range(order + 1)])
    return np.dot(coef, f(pts))


@pytest.mark.parametrize("estimate", ["mle", "map", "mean"])
def test_full_boundary_is_quadratic_and_is_seed_002s_quadric(estimate):
    X, y, _ = _data(n_per_class=(20, 25), n_features=2, seed=7)
    clf = GaussianBayesClassifier(covariance="full", estimate=estimate).fit(X, y)
    f = clf.decision_function
    rng = np.random.default_rng(0)
    second = []
    for _ in range(5):
        c, d = X.mean(0) + rng.normal(size=2), rng.normal(size=2)
        third = _differences(f, c, 0.5, 3, d)
        assert abs(third) <= 1e-9 * np.abs(f(c[None]))[0] + 1e-9
        second.append(_differences(f, c, 0.5, 2, d))
    assert np.max(np.abs(second)) > 1e-3  # genuinely quadratic, not affine
    # Seed 002: x'(S_1^-1 - S_0^-1)x ... as quadratic_; check against numpy inverses.
    A, b, c0 = clf.quadratic_
    S, mu, lp = clf.covariance_, clf.means_, clf.class_log_prior_
    for k in range(2):
        P = np.linalg.inv(S[k])
        assert_allclose(A[k], -0.5 * P, rtol=1e-10)
        assert_allclose(b[k], P @ mu[k], rtol=1e-10)
        _, logdet = np.linalg.slogdet(2 * np.pi * S[k])
        assert_allclose(c0[k], -0.5 * mu[k] @ P @ mu[k] - 0.5 * logdet + lp[k], rtol=1e-10)
    G = _grid(X.mean(0))
    quad = np.einsum("ni,cij,nj->nc", G, A, G) + G @ b.T + c0
    assert_allclose(clf.predict_joint_log_proba(G), quad, rtol=1e-10, atol=1e-10)
    assert_allclose(f(G), quad[:, 1] - quad[:, 0], rtol=1e-9, atol=1e-9)
    with pytest.raises(AttributeError, match="quadratic"):
        clf.coef_


def test_predictive_boundary_is_not_affine_and_has_no_coef():
    X, y, _ = _data(n_per_class=(4, 5), n_features=2, seed=7)
    clf = GaussianBayesClassifier(covariance="shared").fit(X, y)
    G = _grid(X.mean(0), h=1.0)
    dec = clf.decision_function(G)
    design = np.column_stack([G, np.ones(len(G))])
    fit, *_ = np.linalg.lstsq(design, dec, rcond=None)
    assert np.abs(design @ fit - dec).max() > 1e-4  # Student-t scores: not exactly linear
    assert not hasattr(clf, "coef_") and not hasattr(clf, "quadratic_")
    with pytest.raises(AttributeError, match="Student-t"):
        clf.intercept_
    assert_allclose(dec, np.diff(clf.predict_joint_log_proba(G), axis=1)[:, 0], rtol=1e-13)


# ----------------------------------------------------------------------------- point estimates


@pytest.mark.parametrize("covariance", COVARIANCES)
def test_map_is_the_joint_mode_of_the_niw_posterior(covariance):
    """scipy's joint density log IW(Sigma) + sum_c log N(mu_c | m_c, Sigma/kappa_c) is
    maximal at the "map" estimate, not at the mode of the marginal of Sigma."""
    X, y, _ = _data(n_per_class=(5, 6, 7))
    clf = GaussianBayesClassifier(covariance=covariance, estimate="map").fit(X, y)
    post, shared = clf.posterior_, covariance == "shared"
    mu, S = clf.means_, clf.covariance_

    def log_joint(mu, S):
        if shared:
            lp = sps.invwishart(df=float(post.df), scale=post.scale).logpdf(S)
            return lp + sum(sps.multivariate_normal(post.loc[c], S / post.kappa[c]).logpdf(mu[c]) for c in range(3))
        return sum(
            sps.invwishart(df=post.df[c], scale=post.scale[c]).logpdf(S[c])
            + sps.multivariate_normal(post.loc[c], S[c] / post.kappa[c]).logpdf(mu[c])
            for c in range(3)
        )

    best = log_joint(mu, S)
    rng = np.random.default_rng(0)
    for _ in range(6):
        D = rng.normal(size=S.shape)
        D = 1e-3 * (D + np.swapaxes(D, -1, -2)) * np.abs(S).max()
        assert log_joint(mu, S + D) < best and log_joint(mu, S - D) < best
        assert log_joint(mu + 1e-3 * rng.normal(size=mu.shape), S) < best
    # the marginal mode Psi / (nu + F + 1) is a different point with a lower joint density
    F = X.shape[1]
    df = np.asarray(post.df)
    marginal = post.scale / np.reshape(df + F + 1, np.shape(df) + (1, 1))
    assert log_joint(mu, marginal) < best - 1e-6


@pytest.mark.parametrize("covariance", COVARIANCES)
def test_point_estimate_formulas(covariance):
    X, y, _ = _data()
    shared = covariance == "shared"
    clf = GaussianBayesClassifier(covariance=covariance).fit(X, y)
    post, F, C = clf.posterior_, 3, 3
    clf.set_params(estimate="mean")
    df = np.asarray(post.df)
    assert_allclose(clf.covariance_, post.scale / np.reshape(df - F - 1, df.shape + (1, 1)), rtol=1e-12)
    assert_allclose(clf.means_, post.loc, rtol=1e-14)
    clf.set_params(estimate="map")
    denom = df + F + 1 + C if shared else df + F + 2
    assert_allclose(clf.covariance_, post.scale / np.reshape(denom, df.shape + (1, 1)), rtol=1e-12)
    clf.set_params(estimate="mle")
    Sc = [np.cov(X[y == c], rowvar=False, bias=True) for c in range(3)]
    expected = sum(Sc[c] * (y == c).sum() for c in range(3)) / y.size if shared else np.stack(Sc)
    assert_allclose(clf.covariance_, expected, rtol=1e-12)
    assert_allclose(clf.means_, [X[y == c].mean(0) for c in range(3)], rtol=1e-13)
    # the posterior itself: NIW update written out for class 0 (full) by hand
    k0, m0 = clf.prior_.kappa[0], clf.prior_.loc[0]
    n0, xb = (y == 0).sum(), X[y == 0].mean(0)
    assert_allclose(post.kappa[0], k0 + n0)
    assert_allclose(post.loc[0], (k0 * m0 + n0 * xb) / (k0 + n0), rtol=1e-13)
    if not shared:
        d = xb - m0
        assert_allclose(post.scale[0], clf.prior_.scale[0] + Sc[0] * n0 + k0 * n0 / (k0 + n0) * np.outer(d, d), rtol=1e-12)
        assert_allclose(post.df[0], clf.prior_.df[0] + n0)
    else:
        assert_allclose(post.df, clf.prior_.df + y.size)


def test_default_prior_is_the_documented_data_scaled_niw():
    X, y, _ = _data()
    clf = GaussianBayesClassifier(covariance="full").fit(X, y)
    p, F, C = clf.prior_, 3, 3
    v = X.var(0)
    assert_allclose(p.loc, np.broadcast_to(X.mean(0), (C, F)), rtol=1e-13)
    assert_allclose(p.kappa, 0.01)
    assert_allclose(p.df, F + 2)
    assert_allclose(p.scale, np.broadcast_to(np.diag(v / C ** (2 / F) + 1e-9 * v.max()), (C, F, F)), rtol=1e-12)
    shared = GaussianBayesClassifier(covariance="shared").fit(X, y).prior_
    assert shared.scale.shape == (F, F) and np.ndim(shared.df) == 0


# ----------------------------------------------------------------------------- additivity


@pytest.mark.parametrize("covariance", ALL_COVARIANCES)
@pytest.mark.parametrize("explicit", [False, True])
def test_fit_equals_chained_partial_fit_equals_merged_stats(covariance, explicit):
    X, y, X_test = _data()
    w = np.random.default_rng(5).uniform(0.1, 3.0, y.size)
    prior = _prior(3, 3, covariance == "shared", covariance=covariance) if explicit else None
    full = GaussianBayesClassifier(covariance=covariance, prior=prior).fit(X, y, w)
    chained = GaussianBayesClassifier(covariance=covariance, prior=prior)
    parts = np.array_split(np.arange(y.size), 5)
    for p in parts:
        chained.partial_fit(X[p], y[p], classes=[0, 1, 2], sample_weight=w[p])
    for a, b in zip(full.stats_, chained.stats_):
        assert_allclose(a, b, rtol=1e-11, atol=1e-12)
    if covariance != "diag":
        merged = merge(*(scatter_stats(X[p], y[p], 3, w[p]) for p in parts))
        for a, c in zip(full.stats_, merged):
            assert_allclose(a, c, rtol=1e-11, atol=1e-12)
    else:
        assert isinstance(full.stats_, GaussianStats)
    for estimate in ESTIMATES:
        full.set_params(estimate=estimate)
        chained.set_params(estimate=estimate)
        assert_allclose(full.predict_joint_log_proba(X_test), chained.predict_joint_log_proba(X_test), rtol=1e-10)
    assert_allclose(full.log_evidence(), chained.log_evidence(), rtol=1e-11)


@pytest.mark.parametrize("covariance", ALL_COVARIANCES)
def test_duplicated_rows_equal_sample_weight_two(covariance):
    X, y, X_test = _data()
    dup = np.arange(0, y.size, 3)
    w = np.ones(y.size)
    w[dup] = 2.0
    Xd, yd = np.vstack([X, X[dup]]), np.concatenate([y, y[dup]])
    for prior in (None, _prior(3, 3, covariance == "shared", covariance=covariance)):
        a = GaussianBayesClassifier(covariance=covariance, prior=prior).fit(X, y, sample_weight=w)
        b = GaussianBayesClassifier(covariance=covariance, prior=prior).fit(Xd, yd)
        for estimate in ESTIMATES:
            a.set_params(estimate=estimate)
            b.set_params(estimate=estimate)
            assert_allclose(a.predict_joint_log_proba(X_test), b.predict_joint_log_proba(X_test), rtol=1e-10)
        assert_allclose(a.log_evidence(), b.log_evidence(), rtol=1e-11)


def test_changing_covariance_between_partial_fit_calls_is_a_clear_error():
    X, y, _ = _data()
    clf = GaussianBayesClassifier(covariance="diag").partial_fit(X[:20], y[:20], classes=[0, 1, 2])
    with pytest.raises(ValueError, match="covariance='full' differs from the covariance of the earlier partial_fit"):
        clf.set_params(covariance="full").partial_fit(X[20:], y[20:])
    # fit starts again with the new structure
    assert clf.fit(X, y).posterior_.scale.shape == (3, 3, 3)


# ----------------------------------------------------------------------------- diag (delegated)


@pytest.mark.parametrize("explicit", [False, True])
def test_diag_is_gaussian_nb_and_its_mle_is_sklearn_gaussian_nb(explicit):
    """covariance="diag" delegates to the NIG family: same numbers as GaussianNB (the
    wiring), and its MLE is scikit-learn's GaussianNB without variance floor (the model)."""
    from sklearn.naive_bayes import GaussianNB as SkGaussianNB

    X, y, X_test = _data(shift=0.5)
    prior = _prior(3, 3, False, covariance="diag") if explicit else None
    ours = GaussianBayesClassifier(covariance="diag", prior=prior).fit(X, y)
    ref = GaussianNB(prior=prior, var_smoothing=0.0).fit(X, y)
    for estimate in ESTIMATES:
        ours.set_params(estimate=estimate)
        ref.set_params(estimate=estimate)
        assert_allclose(ours.predict_joint_log_proba(X_test), ref.predict_joint_log_proba(X_test), rtol=1e-13)
        assert_allclose(ours.means_, ref.theta_, rtol=1e-14)
        if estimate != "predictive":
            assert_allclose(ours.covariance_, np.stack([np.diag(v) for v in ref.var_]), rtol=1e-14)
    assert_allclose(ours.log_evidence(), ref.log_evidence(), rtol=1e-13)
    sk = SkGaussianNB(var_smoothing=0.0).fit(X, y)
    ours.set_params(estimate="mle")
    assert np.mean(sk.predict_proba(X_test).min(axis=1) > 1e-3) > 0.5  # mostly unsaturated rows
    assert_allclose(ours.predict_proba(X_test), sk.predict_proba(X_test), rtol=0, atol=1e-10)
    # The boundary is quadratic with axis-aligned (diagonal) quadratic forms.
    A, b, c = ours.quadratic_
    assert_allclose(A, np.stack([np.diag(-0.5 / v) for v in sk.var_]), rtol=1e-10)
    G = X_test
    quad = np.einsum("ni,cij,nj->nc", G, A, G) + G @ b.T + c
    assert_allclose(ours.decision_function(G), quad, rtol=1e-10, atol=1e-10)
    with pytest.raises(AttributeError, match="quadratic"):
        ours.coef_
    # The diagonal model's draws are named as its family's (GaussianNB's and the export's).
    draws = ours.sample_posterior(5, random_state=0)
    assert "covariance" not in draws
    assert draws["var"].shape == (5, 3, 3) and np.all(draws["var"] > 0)
    with pytest.raises(TypeError, match="NormalInverseGamma"):
        GaussianBayesClassifier(covariance="diag", prior=_prior(3, 3, False)).fit(X, y)


# ----------------------------------------------------------------------------- robustness


@pytest.mark.parametrize("covariance", ALL_COVARIANCES)
@pytest.mark.parametrize("estimate", ESTIMATES)
def test_every_estimate_gives_finite_normalised_probabilities(covariance, estimate):
    X, y, X_test = _data()
    clf = GaussianBayesClassifier(covariance=covariance, estimate=estimate).fit(X, y)
    far = np.vstack([X_test, [[1e6, -1e6, 3e5]], [[1e-300, 0, 0]], X_test * 1e3])
    proba = clf.predict_proba(far)
    assert np.all(np.isfinite(proba)) and np.all(proba >= 0)
    assert_allclose(proba.sum(1), 1.0, atol=1e-12)
    assert np.all(np.isfinite(clf.predict_log_proba(far)))
    assert np.all(np.isfinite(clf.predict_joint_log_proba(far)))
    if estimate == "predictive" and covariance != "diag":
        # The Student-t decays polynomially: finite even where |x - m|^2 overflows.
        assert np.all(np.isfinite(clf.predict_joint_log_proba([[1e200, -1e200, 1e200]])))
    draws = clf.predict_proba_draws(X_test[:3], n_draws=5, random_state=0)
    assert draws.shape == (5, 3, 3) and np.all(np.isfinite(draws))
    assert_allclose(draws.sum(-1), 1.0, atol=1e-12)


@pytest.mark.parametrize("covariance", COVARIANCES)
def test_singular_mle_covariance_is_a_clear_error_and_the_prior_regularises_it(covariance):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    X[:, 2] = X[:, 0] - 2 * X[:, 1]  # collinear features: every covariance is singular
    y = np.repeat([0, 1, 2], 10)
    clf = GaussianBayesClassifier(covariance=covariance, estimate="mle").fit(X, y)
    with pytest.raises(ValueError, match="estimate='mle' is undefined.*singular"):
        clf.predict_proba(X)
    for estimate in ("map", "mean", "predictive"):
        proba = clf.set_params(estimate=estimate).predict_proba(X)
        assert np.all(np.isfinite(proba))
    if covariance == "full":
        # fewer rows than features in one class: singular for that class only
        X2 = rng.normal(size=(23, 3))
        y2 = np.r_[np.zeros(20, int), np.ones(3, int)]
        X2[20:, 2] = 1.0
        clf2 = GaussianBayesClassifier(estimate="mle").fit(X2[:22], y2[:22])
        with pytest.raises(ValueError, match="class index 1 is singular"):
            clf2.predict(X2)
    with pytest.raises(ValueError, match="constant / collinear"):
        GaussianBayesClassifier(covariance=covariance, estimate="mle").fit(np.c_[X[:, :2], np.ones(30)], y).predict(X)


def test_mle_of_a_class_without_rows_and_undefined_mean_are_errors():
    X, y, _ = _data()
    clf = GaussianBayesClassifier(estimate="mle").partial_fit(X, y, classes=[0, 1, 2, 3])
    with pytest.raises(ValueError, match="class index 3 has no training rows"):
        clf.predict(X)
    assert np.all(np.isfinite(clf.set_params(estimate="predictive").predict_proba(X)))
    F = 3
    prior = NormalInverseWishart(np.zeros(F), 1.0, F - 0.9, np.eye(F))
    few = GaussianBayesClassifier(prior=prior, estimate="mean").fit(X[:3], [0, 1, 1])
    with pytest.raises(ValueError, match="estimate='mean' is undefined.*df > n_features \\+ 1"):
        few.predict(X)
    assert np.all(np.isfinite(few.set_params(estimate="map").predict_proba(X)))


@pytest.mark.parametrize(
    "prior, error, match",
    [
        ("not a prior", TypeError, "NormalInverseWishart"),
        (NormalInverseWishart(np.zeros(3), 0.0, 5.0, np.eye(3)), ValueError, "kappa must be > 0"),
        (NormalInverseWishart(np.zeros(3), 1.0, 2.0, np.eye(3)), ValueError, "df must be > n_features - 1 = 2"),
        (NormalInverseWishart(np.zeros(3), 1.0, 5.0, -np.eye(3)), ValueError, "not positive definite"),
        (NormalInverseWishart(np.zeros(3), 1.0, 5.0, np.diag([1.0, 1.0, 0.0])), ValueError, "not positive definite"),
        (NormalInverseWishart(np.zeros(3), 1.0, 5.0, np.triu(np.ones((3, 3)))), ValueError, "not symmetric"),
        (NormalInverseWishart(np.zeros(4), 1.0, 5.0, np.eye(3)), ValueError, "loc has shape"),
        (NormalInverseWishart(np.zeros(3), 1.0, 5.0, np.eye(4)), ValueError, "scale has shape"),
        (NormalInverseWishart(np.zeros(3), [1.0, 2.0], 5.0, np.eye(3)), ValueError, "kappa has shape"),
        (NormalInverseWishart(np.full(3, np.nan), 1.0, 5.0, np.eye(3)), ValueError, "loc must be finite"),
        (NormalInverseWishart(np.zeros(3), 1.0, "five", np.eye(3)), TypeError, "df must be a number"),
    ],
)
@pytest.mark.parametrize("covariance", COVARIANCES)
def test_invalid_prior_is_a_clear_error(prior, error, match, covariance):
    X, y, _ = _data()
    with pytest.raises(error, match=match):
        GaussianBayesClassifier(covariance=covariance, prior=prior).fit(X, y)


def test_shared_prior_shapes_are_checked_and_per_class_priors_accepted():
    X, y, X_test = _data()
    F = 3
    with pytest.raises(ValueError, match="'shared' needs one \\(3, 3\\) matrix"):
        GaussianBayesClassifier(covariance="shared", prior=NormalInverseWishart(0.0, 1.0, 5.0, np.stack([np.eye(F)] * 3))).fit(X, y)
    with pytest.raises(ValueError, match="df must be a scalar"):
        GaussianBayesClassifier(covariance="shared", prior=NormalInverseWishart(0.0, 1.0, [5.0, 5.0, 5.0], np.eye(F))).fit(X, y)
    scales = np.stack([np.eye(F) * (c + 1) for c in range(3)])
    clf = GaussianBayesClassifier(prior=NormalInverseWishart(0.0, 1.0, [4.0, 5.0, 6.0], scales)).fit(X, y)
    assert_allclose(clf.prior_.scale, scales)
    assert np.all(np.isfinite(clf.predict_proba(X_test)))


def test_bad_input_is_a_clear_error():
    X, y, _ = _data()
    with pytest.raises(ValueError, match="covariance must be one of 'full', 'shared', 'diag'; got 'spherical'"):
        GaussianBayesClassifier(covariance="spherical").fit(X, y)
    with pytest.raises(ValueError, match="unknown estimate"):
        GaussianBayesClassifier(estimate="median").fit(X, y)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        GaussianBayesClassifier().fit(Xn, y)
    clf = GaussianBayesClassifier().fit(X, y)
    with pytest.raises(ValueError, match="features"):
        clf.predict(X[:, :2])
    with pytest.raises(ValueError, match="infinity"):
        clf.predict(np.where(X > 1, np.inf, X))
    import scipy.sparse as sp

    with pytest.raises(TypeError, match="dense"):
        GaussianBayesClassifier().fit(sp.csr_matrix(X), y)


def test_posterior_draws_shapes_and_default_attributes():
    X, y, X_test = _data()
    # n = 5 draws throughout the file: the Dirichlet sampler of the class proportions
    # compiles once per number of draws.
    for covariance, cov_shape in (("full", (5, 3, 3, 3)), ("shared", (5, 3, 3)), ("diag", (5, 3, 3, 3))):
        clf = GaussianBayesClassifier(covariance=covariance).fit(X, y)
        d = clf.sample_posterior(5, random_state=0)
        if covariance == "diag":
            # Named as its family's draws (the export's "var"): the covariances they make.
            d["covariance"] = d["var"][..., None] * np.eye(3)
        assert d["loc"].shape == (5, 3, 3) and d["covariance"].shape == cov_shape
        assert d["class_probs"].shape == (5, 3)
        assert_allclose(d["covariance"], np.swapaxes(d["covariance"], -1, -2))
        assert np.all(np.linalg.eigvalsh(d["covariance"]) > 0)
        # reproducible from random_state
        assert_array_equal(d["loc"], clf.sample_posterior(5, random_state=0)["loc"])
        lo, hi = clf.predict_proba_interval(X_test, n_draws=5, random_state=0)
        assert np.all(lo <= hi)
