"""The five errata of ``shared/seeds/ERRATA.md``: bayesnb implements the correct formula.

Each test computes the seed's (wrong) formula and the correct one by hand, asserts that
bayesnb matches the correct one, and that the seed's formula would not have matched.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats
from scipy.optimize import minimize
from scipy.special import gammaln
from sklearn.naive_bayes import BernoulliNB as SkBernoulliNB
from sklearn.naive_bayes import MultinomialNB as SkMultinomialNB

from bayesnb import BernoulliNB, CategoricalNB, MultinomialNB

# ------------------------------------------------- 1. class predictive p(y = c | D)


def test_erratum_1_class_predictive_example_from_the_errata():
    # N = (10, 0), β = (1, 1). An empty document has predictive 1 under every class, so
    # its class posterior *is* the class predictive.
    X = np.array([[1.0, 2.0, 0.0]] * 10)
    clf = MultinomialNB(class_alpha=1.0).partial_fit(X, np.zeros(10, int), classes=[0, 1])
    np.testing.assert_array_equal(clf.class_count_, [10, 0])
    correct = np.array([11 / 12, 1 / 12])
    seed = 1 - 1 / (np.array([10.0, 0.0]) + 1 + 1)  # 1 − 1/(N_c + β_c + 1)
    np.testing.assert_allclose(seed, [0.9166666, 0.5], atol=1e-6)
    assert seed.sum() != pytest.approx(1.0, abs=0.1)
    proba = clf.predict_proba(np.zeros((1, 3)))[0]
    np.testing.assert_allclose(proba, correct, rtol=1e-14)
    np.testing.assert_allclose(np.exp(clf.class_log_prior_), correct, rtol=1e-14)
    assert not np.allclose(proba, seed, atol=0.1)


@pytest.mark.parametrize("estimator", [MultinomialNB, BernoulliNB, CategoricalNB])
def test_erratum_1_class_predictive_general(estimator):
    rng = np.random.default_rng(1)
    y = np.repeat([0, 1, 2, 3], [7, 2, 0, 4])
    beta = np.array([0.3, 2.5, 1.7, 0.9])
    X = rng.integers(0, 2, size=(y.size, 3))
    clf = estimator(class_alpha=beta).partial_fit(X, y, classes=[0, 1, 2, 3])
    N = np.array([7, 2, 0, 4], float)
    correct = (N + beta) / (N.sum() + beta.sum())
    seed = 1 - 1 / (N + beta + 1)
    np.testing.assert_allclose(np.exp(clf.class_log_prior_), correct, rtol=1e-14)
    assert np.exp(clf.class_log_prior_).sum() == pytest.approx(1.0, abs=1e-14)
    assert np.abs(seed - correct).max() > 0.1
    # Independent oracle: the posterior mean of π ~ Dir(β + N) (scipy).
    np.testing.assert_allclose(correct, scipy.stats.dirichlet(N + beta).mean(), rtol=1e-14)


# --------------------------------------------------- 2. posterior mean of θ (Bernoulli)


def _bernoulli_data():
    X = np.array(
        [[1, 0, 1, 1], [1, 0, 0, 1], [0, 0, 1, 1], [1, 1, 0, 1], [0, 1, 1, 0], [0, 1, 0, 0], [1, 1, 1, 0]],
        dtype=float,
    )
    y = np.array([0, 0, 0, 0, 1, 1, 1])
    return X, y


def test_erratum_2_bernoulli_posterior_mean_uses_n_c_in_the_denominator():
    X, y = _bernoulli_data()
    a, b = 0.5, 2.0
    clf = BernoulliNB(alpha=(a, b), binarize=None, estimate="mean").fit(X, y)
    N = np.array([4.0, 3.0])
    T = np.array([X[y == 0].sum(0), X[y == 1].sum(0)])
    correct_on = (T + a) / (N[:, None] + a + b)
    correct_off = (N[:, None] - T + b) / (N[:, None] + a + b)
    seed_on = (T + a) / (T + a + b)
    seed_off = b / (T + a + b)
    # Oracle: the mean of Beta(T + a, N − T + b).
    np.testing.assert_allclose(correct_on, scipy.stats.beta(T + a, N[:, None] - T + b).mean(), rtol=1e-14)
    got_on = np.exp(clf.feature_log_prob_)
    np.testing.assert_allclose(got_on, correct_on, rtol=1e-13)
    assert np.abs(got_on - seed_on).max() > 0.05
    # E[1 − θ]: the probability of "off", read from a row with every feature off.
    off_row = np.zeros((1, 4))
    got_off = clf.predict_joint_log_proba(off_row)[0] - clf.class_log_prior_
    np.testing.assert_allclose(got_off, np.log(correct_off).sum(1), rtol=1e-13)
    assert np.abs(got_off - np.log(seed_off).sum(1)).max() > 0.5


# ------------------------------------------------------------------ 3. MAP of π


def test_erratum_3_map_of_class_proportions():
    rng = np.random.default_rng(3)
    N = np.array([4, 1, 7])
    y = np.repeat([0, 1, 2], N)
    X = rng.integers(0, 3, size=(y.size, 3)).astype(float)
    beta = np.array([2.0, 3.5, 1.5])
    clf = MultinomialNB(alpha=2.0, class_alpha=beta, estimate="map").fit(X, y)
    C, n = 3, N.sum()
    correct = (N + beta - 1) / (n + beta.sum() - C)
    seed = (N + beta - 1) / (n + beta.sum() - n)  # "N + Σβ − N_D" with N = N_D
    got = np.exp(clf.class_log_prior_)
    np.testing.assert_allclose(got, correct, rtol=1e-14)
    assert got.sum() == pytest.approx(1.0, abs=1e-14)
    assert seed.sum() > 1.5  # not even on the simplex
    # Oracle: numerically maximise the Dir(β + N) density over the simplex.
    conc = N + beta

    def neg_log_density(z):
        p = np.exp(np.append(z, 0.0))
        p /= p.sum()
        return -scipy.stats.dirichlet(conc).logpdf(p)

    res = minimize(neg_log_density, np.zeros(2), method="Nelder-Mead", options=dict(xatol=1e-10, fatol=1e-12))
    mode = np.exp(np.append(res.x, 0.0))
    mode /= mode.sum()
    np.testing.assert_allclose(mode, correct, atol=1e-6)


def test_erratum_3_map_with_beta_below_one_on_an_empty_class_is_undefined():
    X = np.array([[1.0, 2.0], [2.0, 1.0], [0.0, 3.0]])
    clf = MultinomialNB(alpha=2.0, class_alpha=0.5, estimate="map").partial_fit(X, [0, 0, 1], classes=[0, 1, 2])
    with pytest.raises(ValueError, match="undefined"):
        clf.predict_proba(X)


# -------------------------------------------------- 4. exponents of the final predictive


def test_erratum_4_predictive_exponents_are_the_new_rows_features():
    X, y = _bernoulli_data()
    a, b = 1.0, 1.0
    clf = BernoulliNB(alpha=(a, b), binarize=None).fit(X, y)  # estimate="predictive"
    N = np.array([4.0, 3.0])
    T = np.array([X[y == 0].sum(0), X[y == 1].sum(0)])
    p_on = (T + a) / (N[:, None] + a + b)
    rows = np.array([[1, 0, 0, 1], [0, 1, 1, 0]], dtype=float)
    correct = rows @ np.log(p_on).T + (1 - rows) @ np.log1p(-p_on).T
    # Seed: training counts N_j1 (rows with feature j on) and N_j0 as the exponents.
    N_j1 = X.sum(0)
    N_j0 = X.shape[0] - N_j1
    seed = (N_j1 * np.log(p_on) + N_j0 * np.log1p(-p_on)).sum(1)
    got = clf.predict_joint_log_proba(rows) - clf.class_log_prior_
    np.testing.assert_allclose(got, correct, rtol=1e-13)
    # The seed's value does not even depend on the new row.
    assert np.abs(got - seed[None, :]).min() > 1.0
    assert np.abs(got[0] - got[1]).max() > 0.5
    # Exact: Π_j B(x_j + T + a, 1 − x_j + N − T + b) / B(T + a, N − T + b), integrated by hand.
    def log_beta(u, v):
        return gammaln(u) + gammaln(v) - gammaln(u + v)

    exact = np.array(
        [
            [
                np.sum(log_beta(x + T[c] + a, 1 - x + N[c] - T[c] + b) - log_beta(T[c] + a, N[c] - T[c] + b))
                for c in (0, 1)
            ]
            for x in rows
        ]
    )
    np.testing.assert_allclose(got, exact, rtol=1e-13)


def test_erratum_4_multinomial_plug_in_is_not_the_predictive_for_repeated_words():
    X = np.array([[3, 1, 0], [2, 0, 1], [0, 2, 2]], dtype=float)
    y = [0, 0, 1]
    clf = MultinomialNB(alpha=1.0).fit(X, y)
    doc = np.array([[3.0, 0.0, 1.0]])
    a = np.array([[6.0, 2.0, 2.0], [1.0, 3.0, 3.0]])
    np.testing.assert_array_equal(clf.posterior_.concentration, a)
    plug = doc @ np.log(a / a.sum(1, keepdims=True)).T
    dm = (gammaln(a + doc) - gammaln(a)).sum(1) - (gammaln(a.sum(1) + 4) - gammaln(a.sum(1)))
    got = clf.predict_joint_log_proba(doc)[0] - clf.class_log_prior_
    np.testing.assert_allclose(got, dm, rtol=1e-13)
    assert np.abs(got - plug[0]).min() > 0.05


# ------------------------------------- 5. Laplace smoothing: which estimate, which event model


def test_erratum_5_bernoulli_laplace_is_mean_under_beta_1_1_and_map_under_beta_2_2():
    X, y = _bernoulli_data()
    V = X.shape[1]  # 4 != 2, so "+|V|" and "+2" differ
    N = np.array([4.0, 3.0])
    Njc = np.array([X[y == 0].sum(0), X[y == 1].sum(0)])
    laplace = (Njc + 1) / (N[:, None] + 2)
    seed = (Njc + 1) / (N[:, None] + V)  # the seed's "+|V|" for document counts
    mle = Njc / N[:, None]

    def probs(alpha, estimate):
        clf = BernoulliNB(alpha=alpha, binarize=None, estimate=estimate).fit(X, y)
        return np.exp(clf.feature_log_prob_)

    np.testing.assert_allclose(probs(1.0, "mean"), laplace, rtol=1e-13)
    np.testing.assert_allclose(probs(1.0, "predictive"), laplace, rtol=1e-13)
    np.testing.assert_allclose(probs(2.0, "map"), laplace, rtol=1e-13)
    # MAP under the uniform prior Beta(1, 1) is the MLE, not add-one.
    np.testing.assert_allclose(probs(1.0, "map"), mle, rtol=1e-13, atol=0)
    np.testing.assert_allclose(probs(1.0, "mle"), mle, rtol=1e-13, atol=0)
    assert np.abs(probs(1.0, "map") - laplace).max() > 0.05
    assert np.abs(laplace - seed).max() > 0.05
    # scikit-learn's add-one BernoulliNB is the same Laplace estimate.
    sk = SkBernoulliNB(alpha=1.0, binarize=None, force_alpha=True).fit(X, y)
    np.testing.assert_allclose(np.exp(sk.feature_log_prob_), laplace, rtol=1e-13)


def test_erratum_5_multinomial_laplace_counts_tokens_over_total_plus_vocabulary():
    X = np.array([[3, 0, 1, 0, 2], [1, 1, 0, 0, 4], [0, 2, 2, 1, 0], [0, 5, 1, 1, 1]], dtype=float)
    y = np.array([0, 0, 1, 1])
    V = X.shape[1]
    T = np.array([X[y == 0].sum(0), X[y == 1].sum(0)])
    laplace = (T + 1) / (T.sum(1, keepdims=True) + V)  # tokens
    docs_with_word = np.array([(X[y == c] > 0).sum(0) for c in (0, 1)])
    seed = (docs_with_word + 1) / (np.array([[2.0], [2.0]]) + V)  # the seed's document counts
    mle = T / T.sum(1, keepdims=True)

    def probs(alpha, estimate):
        return np.exp(MultinomialNB(alpha=alpha, estimate=estimate).fit(X, y).feature_log_prob_)

    np.testing.assert_allclose(probs(1.0, "mean"), laplace, rtol=1e-13)
    np.testing.assert_allclose(probs(2.0, "map"), laplace, rtol=1e-13)
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(np.log(probs(1.0, "map")), np.log(mle), rtol=1e-13)  # zeros stay −inf
    np.testing.assert_allclose(probs(1.0, "mle"), mle, rtol=1e-13, atol=0)
    assert np.abs(laplace - seed).max() > 0.05
    assert np.abs(probs(1.0, "map") - laplace).max() > 0.05
    sk = SkMultinomialNB(alpha=1.0, force_alpha=True).fit(X, y)
    np.testing.assert_allclose(np.exp(sk.feature_log_prob_), laplace, rtol=1e-13)
