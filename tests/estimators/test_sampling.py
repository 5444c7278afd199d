"""Generating data from a fitted model: estimator.sample / sample_prior and the families' simulate.

The rows of ``sample`` are iid from the posterior predictive, so maximum-likelihood
refits on 100,000 of them converge to the predictive's moments, known in closed form:
the posterior means of the probabilities and rates, the Student-t mean and variance
(Gaussian), the multivariate-t mean and covariance (NIW). Each refitted number must be
within 5 Monte Carlo standard errors, estimated from the generated rows themselves.
"""

from __future__ import annotations

import jax
import numpy as np
import pandas as pd
import pytest
from _ppl_cases import NAMES, fitted
from numpy.testing import assert_allclose
from sklearn.exceptions import NotFittedError

from bayesnb import (
    BernoulliNB,
    CategoricalNB,
    GaussianBayesClassifier,
    GaussianNB,
    MixedNB,
    MultinomialNB,
    PoissonNB,
)
from bayesnb.core.families import categorical, gaussian_mv, multinomial
from bayesnb.core.families.gaussian_mv import GaussianParams
from bayesnb.core.families.multinomial import MultinomialParams

N = 100_000


def _assert_z(estimate, expected, se, what):
    estimate, expected, se = (np.asarray(a, dtype=float) for a in (estimate, expected, se))
    z = (estimate - expected) / se
    assert np.all(np.abs(z) < 5), f"{what}: z = {np.round(z, 2)}"


def _predictive_class_probs(est):
    if est.class_posterior_ is None:
        return np.asarray(est.class_prior_)
    a = np.asarray(est.class_posterior_.concentration)
    return a / a.sum()


def _mean_se(values):
    return values.mean(axis=0), values.std(axis=0) / np.sqrt(values.shape[0])


def _check_gaussian_diag(post, Xc, c, what):
    """Per-feature Student-t: mean m_n, variance b_n (kappa_n + 1) / (kappa_n (a_n - 1))."""
    a, b, k, m = (np.asarray(f)[c] for f in (post.concentration, post.rate, post.kappa, post.loc))
    mean, se = _mean_se(Xc)
    _assert_z(mean, m, se, f"{what} mean")
    sq = (Xc - mean) ** 2
    _assert_z(sq.mean(axis=0), b * (k + 1) / (k * (a - 1)), sq.std(axis=0) / np.sqrt(len(Xc)), f"{what} variance")


def _check_niw(post, Xc, c, what):
    """Multivariate t: mean m_n, covariance Psi_n (kappa_n + 1) / (kappa_n (nu_n - F - 1))."""
    F = Xc.shape[1]
    df = np.broadcast_to(post.df, np.shape(post.kappa))[c]
    scale = np.asarray(post.scale) if np.ndim(post.scale) == 2 else np.asarray(post.scale)[c]
    kappa, loc = np.asarray(post.kappa)[c], np.asarray(post.loc)[c]
    mean, se = _mean_se(Xc)
    _assert_z(mean, loc, se, f"{what} mean")
    d = Xc - mean
    products = d[:, :, None] * d[:, None, :]
    expected = scale * (kappa + 1) / (kappa * (df - F - 1))
    _assert_z(products.mean(axis=0), expected, products.std(axis=0) / np.sqrt(len(Xc)), f"{what} covariance")


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in NAMES if n != "evidence_missing"])  # its blocks: "mixed" and the rest
def test_refit_on_generated_rows_recovers_the_fitted_model(name):
    case = fitted(name)
    est = case.estimator
    X, y = est.sample(N, random_state=0)
    assert len(y) == N
    classes = est.classes_
    # Class proportions: the refit MLE is the frequency, the predictive is E[pi | D].
    p = _predictive_class_probs(est)
    freq = np.array([(y == c).mean() for c in classes])
    _assert_z(freq, p, np.sqrt(p * (1 - p) / N), "class proportions")

    if name == "multinomial":
        refit = MultinomialNB(estimate="mle").fit(X, y)
        a = np.asarray(est.posterior_.concentration)
        for c, label in enumerate(classes):
            Xc = X[y == label]
            share = np.exp(refit.feature_log_prob_[c])
            n_tok = Xc.sum(axis=1, keepdims=True)
            # Delta method for the ratio sum_i x_ij / sum_i n_i.
            u = (Xc - share * n_tok) / n_tok.mean()
            _assert_z(share, a[c] / a[c].sum(), u.std(axis=0) / np.sqrt(len(Xc)), f"theta[{label}]")
    elif name == "bernoulli":
        refit = BernoulliNB(binarize=None, estimate="mle").fit(X, y)
        a1, a0 = np.asarray(est.posterior_.concentration1), np.asarray(est.posterior_.concentration0)
        mean = a1 / (a1 + a0)
        n_c = refit.class_count_[:, None]
        _assert_z(np.exp(refit.feature_log_prob_), mean, np.sqrt(mean * (1 - mean) / n_c), "theta")
    elif name == "categorical":
        refit = CategoricalNB(estimate="mle", min_categories=est.n_categories_).fit(X, y)
        conc = np.asarray(est.posterior_.concentration)
        for j, k in enumerate(est.n_categories_):
            mean = conc[:, j, :k] / conc[:, j, :k].sum(axis=1, keepdims=True)
            n_c = refit.class_count_[:, None]
            _assert_z(np.exp(refit.feature_log_prob_[j]), mean, np.sqrt(mean * (1 - mean) / n_c), f"theta[{j}]")
    elif name == "poisson":
        refit = PoissonNB(estimate="mle").fit(X, y)
        a, b = np.asarray(est.posterior_.concentration), np.asarray(est.posterior_.rate)
        for c, label in enumerate(classes):
            mean, se = _mean_se(X[y == label])
            _assert_z(refit.rate_[c], a[c] / b[c], se, f"rate[{label}]")
            assert_allclose(refit.rate_[c], mean, rtol=1e-12)
    elif name in ("gaussian", "gaussian_diag"):
        refit = GaussianNB(estimate="mle", var_smoothing=0.0).fit(X, y)
        for c, label in enumerate(classes):
            Xc = X[y == label]
            assert_allclose(refit.theta_[c], Xc.mean(axis=0), rtol=1e-10, atol=1e-12)
            assert_allclose(refit.var_[c], Xc.var(axis=0), rtol=1e-9)
            _check_gaussian_diag(est.posterior_, Xc, c, label)
    elif name in ("gaussian_full", "gaussian_shared"):
        refit = GaussianBayesClassifier(covariance="full", estimate="mle").fit(X, y)
        for c, label in enumerate(classes):
            Xc = X[y == label]
            assert_allclose(refit.covariance_[c], np.cov(Xc.T, bias=True), rtol=1e-9)
            _check_niw(est.posterior_, Xc, c, label)
    elif name == "mixed":
        assert isinstance(X, pd.DataFrame) and list(X.columns) == ["length", "urgent", "sender"]
        assert X["urgent"].dtype == bool and isinstance(X["sender"].dtype, pd.CategoricalDtype)
        assert list(X["sender"].cat.categories) == ["bank", "friend", "shop"]
        refit = MixedNB(estimate="mle").fit(X, y)
        assert [b for b, _, _ in refit.estimators_] == ["gaussian", "bernoulli", "categorical"]
        blocks = est.named_estimators_
        for c, label in enumerate(classes):
            rows = (y == label)
            _check_gaussian_diag(blocks["gaussian"].posterior_, X.loc[rows, ["length"]].to_numpy(), c, label)
            on = X.loc[rows, "urgent"].to_numpy().mean()
            post = blocks["bernoulli"].posterior_
            a1, a0 = np.asarray(post.concentration1)[c, 0], np.asarray(post.concentration0)[c, 0]
            _assert_z(on, a1 / (a1 + a0), np.sqrt(on * (1 - on) / rows.sum()), "urgent")
            shares = X.loc[rows, "sender"].value_counts(normalize=True).sort_index().to_numpy()
            conc = np.asarray(blocks["categorical"].posterior_.concentration)[c, 0]
            _assert_z(shares, conc / conc.sum(), np.sqrt(shares * (1 - shares) / rows.sum()), "sender")
    else:  # pragma: no cover
        raise AssertionError(name)


@pytest.mark.parametrize("name", NAMES)
def test_sample_shapes_labels_reproducibility(name):
    case = fitted(name)
    est = case.estimator
    X1, y1 = est.sample(9, random_state=4)
    X2, y2 = est.sample(9, random_state=4)
    assert X1.shape == (9, est.n_features_in_) and y1.shape == (9,)
    assert set(y1) <= set(est.classes_)
    if isinstance(X1, pd.DataFrame):
        pd.testing.assert_frame_equal(X1, X2)
    else:
        np.testing.assert_array_equal(X1, X2)
        kind = "f" if name.startswith("gaussian") or isinstance(est, MixedNB) else "i"
        assert X1.dtype.kind == kind
    np.testing.assert_array_equal(y1, y2)
    # The model generates every entry (pd.isna: a DataFrame may hold category labels).
    assert not pd.isna(pd.DataFrame(X1)).to_numpy().any()
    Xp, yp = est.sample_prior(6, random_state=0)
    assert Xp.shape == (6, est.n_features_in_) and set(yp) <= set(est.classes_)
    # The generated rows are valid input of the estimator.
    est.predict(X1)


def test_sample_prior_moments():
    """Prior predictive of a Bernoulli model: P(x_j = 1 | c) = a / (a + b), P(c) = beta_c / sum beta."""
    est = BernoulliNB(alpha=(1.0, 3.0), class_alpha=[1.0, 3.0]).fit([[1, 0], [0, 1], [1, 1], [0, 0]], [0, 0, 1, 1])
    X, y = est.sample_prior(20_000, random_state=0)
    _assert_z((y == 1).mean(), 0.75, np.sqrt(0.75 * 0.25 / 20_000), "class")
    on = X.mean(axis=0)
    _assert_z(on, 0.25, np.sqrt(0.25 * 0.75 / 20_000), "features")


def test_sample_uses_one_posterior_draw_per_row():
    """Documents are Dirichlet-multinomial given their length (overdispersed), not multinomial."""
    est = MultinomialNB(alpha=1.0).fit([[2, 1, 0], [1, 2, 1]], [0, 0])
    X, _ = est.sample(40_000, random_state=1)
    n = X.sum(axis=1)
    rows = X[n == 6]  # a common length under Poisson(5)
    a = np.asarray(est.posterior_.concentration)[0]
    A, p = a.sum(), a / a.sum()
    # Var(x_j | n) = n p (1 - p) (n + A) / (1 + A) for the Dirichlet-multinomial.
    expected = 6 * p * (1 - p) * (6 + A) / (1 + A)
    var = rows.var(axis=0)
    # The variance of a sample variance: (m4 - var^2) / n.
    m4 = ((rows - rows.mean(axis=0)) ** 4).mean(axis=0)
    _assert_z(var, expected, np.sqrt((m4 - var**2) / len(rows)), "Dirichlet-multinomial variance")


def test_simulate_functions():
    key = jax.random.key(0)
    # Multinomial: every row has its length; per-row and shared parameters.
    log_probs = np.log(np.array([[0.5, 0.5, 0.0], [0.1, 0.2, 0.7]]))
    counts = multinomial.simulate(key, MultinomialParams(log_probs), np.array([0, 1, 1, 0]), np.array([3, 0, 5, 2]))
    assert counts.sum(axis=1).tolist() == [3, 0, 5, 2] and counts[[0, 3], 2].sum() == 0
    per_row = MultinomialParams(np.broadcast_to(log_probs, (4, 2, 3)))
    np.testing.assert_array_equal(multinomial.simulate(key, per_row, np.array([0, 1, 1, 0]), 4).sum(axis=1), 4)
    with pytest.raises(ValueError, match="per-row parameters"):
        multinomial.simulate(key, per_row, np.array([0, 1]), 4)
    # Categorical: padding is never drawn.
    lp = np.log(np.array([[[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]]]))
    codes = categorical.simulate(key, categorical.CategoricalParams(lp, np.zeros((1, 2))), np.zeros(5000, int))
    assert codes[:, 0].max() == 1 and codes[:, 1].max() == 2
    # Shared covariance: one Cholesky factor for every class.
    params = GaussianParams(np.array([[0.0, 0.0], [10.0, 10.0]]), np.array([[1.0, 0.0], [0.5, 0.5]]))
    rows = gaussian_mv.simulate(key, params, np.r_[np.zeros(20000, int), np.ones(20000, int)])
    assert_allclose(np.cov(rows[20000:].T), [[1.0, 0.5], [0.5, 0.5]], atol=0.03)
    assert_allclose(rows[:20000].mean(axis=0), 0.0, atol=0.03)


def test_sample_errors():
    with pytest.raises(NotFittedError):
        PoissonNB().sample(3)
    est = fitted("poisson").estimator
    with pytest.raises(ValueError, match="n"):
        est.sample(0)
    with pytest.raises(ValueError, match="n"):
        est.sample_prior(-2)


def test_prior_draws_and_sample_prior_use_the_hyperparameters_learned_from_the_evidence():
    """alpha="evidence": the prior is Beta(alpha_, alpha_) with the learned alpha_ (and the
    class Dirichlet has the learned class_alpha_), seen in the spread of the prior draws."""
    X = np.array([[1, 1], [1, 1], [1, 0], [1, 1], [0, 0], [0, 0], [0, 1], [0, 0], [0, 0], [0, 0], [0, 0], [0, 1]])
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1])
    est = BernoulliNB(alpha="evidence", class_alpha="evidence").fit(X, y)
    assert 0.3 < est.alpha_ < 0.6 and 10 < est.class_alpha_ < 25  # learned, far from the default 1
    Xp, yp = est.sample_prior(20_000, random_state=0)
    # Each row has its own draw of theta, so rows are iid: P(x_j = 1) = E[theta] = 1/2
    # whatever alpha_; the class proportions are E[pi] = 1/2 under the symmetric Dirichlet.
    _assert_z(Xp.mean(axis=0), 0.5, np.sqrt(0.25 / 20_000), "features")
    _assert_z((yp == 1).mean(), 0.5, np.sqrt(0.25 / 20_000), "class")
    # The prior's draws themselves have the learned spread: Var theta = 1 / (4 (2 alpha_ + 1)).
    log_class, params = est._draw(20_000, 0, prior=True)
    for draws, a, what in [(np.exp(np.asarray(params.log_probs)[..., 1]), est.alpha_, "theta"),
                           (np.exp(log_class[:, 0]), est.class_alpha_, "pi")]:
        sq = (draws.ravel() - 0.5) ** 2
        _assert_z(sq.mean(), 1 / (4 * (2 * a + 1)), sq.std() / np.sqrt(sq.size), f"Var {what}")
