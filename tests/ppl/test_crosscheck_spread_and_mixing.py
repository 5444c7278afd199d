"""The cross-check's verdict on both sides: spread errors are seen, and the mixing rule is sound.

Issue 15: a planted error that changes a posterior's spread without moving its mean
passed (only means were z-scored), and the fixed r_hat < 1.01 reported DISAGREES on
correct models with many parameters. Oracles: arviz's own R-hat and the exact
effective sample size and null distribution of autoregressive chains (fast tests); NUTS
on the numpyro model of the README's example (GaussianBayesClassifier(covariance="full")
on iris) and of MultinomialNB on SMS spam (slow tests).
"""

from __future__ import annotations

import numpy as np
import pytest

from bayesnb.ppl.mcmc import (
    _rhat_of,
    _split_z_scale,
    crosscheck,
    mixing,
    rhat_critical,
    within_chain_ess,
)


def ar1(seed, n_chains, n_draws, k, phi):
    """Stationary AR(1) chains (unit variance): exact ESS n (1 - phi) / (1 + phi)."""
    rng = np.random.default_rng(seed)
    x = np.empty((n_chains, n_draws, k))
    x[:, 0] = rng.normal(size=(n_chains, k))
    noise = rng.normal(size=(n_chains, n_draws, k)) * np.sqrt(1 - phi**2)
    for t in range(1, n_draws):
        x[:, t] = phi * x[:, t - 1] + noise[:, t]
    return x


def not_mixed(draws, n_tests=None, false_alarm=0.01):
    n_tests = 2 * draws.shape[-1] if n_tests is None else n_tests
    m = mixing(draws, n_tests, false_alarm)
    return (m["r_hat_bulk"] >= m["r_hat_bulk_crit"]) | (m["r_hat_tail"] >= m["r_hat_tail_crit"])


# --------------------------------------------------------------------------- mixing rule
def test_rhat_is_arvizs_rank_normalised_split_rhat():
    import arviz as az

    x = ar1(0, 3, 401, 6, 0.6)  # an odd number of draws: the middle one is dropped, as arviz does
    m = mixing(x, 12, 0.01)
    expected = [float(az.rhat(x[:, :, j], method="rank")) for j in range(6)]
    np.testing.assert_allclose(m["r_hat"], expected, rtol=1e-12)
    np.testing.assert_allclose(m["r_hat_bulk"], [float(az.rhat(x[:, :, j], method="z_scale")) for j in range(6)],
                               rtol=1e-12)


@pytest.mark.parametrize("phi", [0.8, 0.3, -0.3])
def test_within_chain_ess_is_the_ar1_ess(phi):
    x = ar1(1, 4, 2000, 40, phi)
    ess = within_chain_ess(x)
    exact = x.shape[0] * x.shape[1] * (1 - phi) / (1 + phi)
    # Geyer's estimator is consistent; 40 columns average its noise down to a few percent.
    assert abs(ess.mean() / exact - 1) < 0.06
    # Chains that disagree do not lower it (arviz's ESS collapses): it is the yardstick.
    y = x.copy()
    y[0] += 3.0
    np.testing.assert_allclose(within_chain_ess(y), ess, rtol=1e-10)


@pytest.mark.parametrize("n_chains, phi", [(2, 0.5), (4, 0.8)])
def test_rhat_critical_value_is_exceeded_at_its_nominal_rate_by_well_mixed_chains(n_chains, phi):
    """Monte Carlo oracle: over 3000 stationary columns, the bulk split R-hat exceeds the
    critical value at level 0.05 in about 5% of them (binomial sd 0.4%)."""
    x = ar1(2, n_chains, 1000, 3000, phi)
    bulk, _ = _split_z_scale(x)
    crit = rhat_critical(within_chain_ess(bulk), n_chains, 1000, 1, 0.05)
    rate = np.mean(_rhat_of(bulk) >= crit)
    assert abs(rate - 0.05) < 0.02, rate


def test_fixed_1_01_fails_well_mixed_chains_the_critical_value_does_not():
    """100 parameters, 2 chains x 1000 draws, well mixed (the MultinomialNB-on-spam case)."""
    fixed, sound = [], []
    for seed in range(5):
        x = ar1(seed, 2, 1000, 100, 0.5)
        fixed.append(bool(np.any(mixing(x, 200, 0.01)["r_hat"] >= 1.01)))
        sound.append(bool(np.any(not_mixed(x))))
    assert sum(fixed) >= 2  # the old rule: DISAGREES on correct chains
    assert not any(sound)


@pytest.mark.parametrize("plant", ["offset", "wider", "trend"])
def test_a_chain_that_has_not_mixed_is_flagged(plant):
    x = ar1(3, 4, 1000, 100, 0.5)
    assert not np.any(not_mixed(x))
    y = x.copy()
    if plant == "offset":  # one chain stuck in another region (one sd away)
        y[1, :, 7] += 1.0
    elif plant == "wider":  # one chain explores a wider region (same centre): the tail R-hat
        y[1, :, 7] *= 1.5
    else:  # a chain that drifts (not stationary): split R-hat compares its halves
        y[1, :, 7] = np.sort(y[1, :, 7])
    flagged = not_mixed(y)
    assert flagged[7] and flagged.sum() == 1


# -------------------------------------------------------------------- NUTS, iris example
def _iris():
    from sklearn.datasets import load_iris

    from bayesnb import GaussianBayesClassifier

    X, y = load_iris(return_X_y=True)
    return GaussianBayesClassifier(covariance="full").fit(X, y), X, y


@pytest.fixture(scope="module")
def iris_seed0():
    est, X, y = _iris()
    return est, X, y, crosscheck(est, X, y, random_state=0)


@pytest.mark.slow
def test_iris_full_covariance_agrees_with_default_draws_seed0(iris_seed0):
    est, X, y, report = iris_seed0
    assert report.nuts.diverging.shape == (4, 1000)  # the default: 4 chains, as the CLI
    assert report.agrees, str(report)
    p = report.parameters
    assert np.isfinite(p[["z", "z_sd", "z_q05", "z_q50", "z_q95"]].to_numpy()).all()
    # The closed-form sd is what the exact draws show (sd of a Student-t / inverse-Wishart entry).
    assert len(p) == 3 * (4 + 10) + 3


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_iris_full_covariance_agrees_on_other_seeds(seed):
    est, X, y = _iris()
    report = crosscheck(est, X, y, random_state=seed)
    assert report.agrees, str(report)


def _planted(est, what):
    import copy

    bad = copy.deepcopy(est)
    post = bad.posterior_
    if what == "kappa":  # NIW kappa of one class / 4: its mean's spread doubles, its centre stays
        kappa = np.array(post.kappa, dtype=np.float64)
        kappa[0] /= 4
        bad.posterior_ = post._replace(kappa=kappa)
    elif what == "loc":  # one class's mean moved by a quarter of its posterior sd
        loc = np.array(post.loc, dtype=np.float64)
        sd = np.sqrt(np.diag(np.asarray(post.scale)[0]) / (float(np.asarray(post.kappa)[0]) * (float(np.asarray(post.df)[0]) - 5)))
        loc[0] += 0.25 * sd
        bad.posterior_ = post._replace(loc=loc)
    else:  # the class proportions' Dirichlet concentration x 4: the same mean, half the sd
        dist = bad.class_posterior_
        bad.class_posterior_ = type(dist)(np.asarray(dist.concentration) * 4.0)
    return bad


@pytest.mark.slow
@pytest.mark.parametrize(
    "what, failing, prefix",
    [("kappa", {"z_sd", "z_q05", "z_q95"}, "loc[0"), ("class", {"z_sd"}, "class_probs"), ("loc", {"z"}, "loc[0")],
)
def test_planted_errors_of_spread_and_of_mean_are_caught(iris_seed0, what, failing, prefix):
    est, X, y, report = iris_seed0
    bad = crosscheck(_planted(est, what), X, y, nuts=report.nuts, random_state=0)
    assert not bad.agrees
    p = bad.parameters
    crit = bad.z_max
    for column in failing:
        worst = p.iloc[int(np.nanargmax(np.abs(p[column].to_numpy())))]
        assert abs(worst[column]) >= crit and worst["parameter"].startswith(prefix), (column, worst)
    if what != "loc":
        # A spread-only error: no mean disagrees (the old rule, means only, said AGREES).
        assert np.all(np.abs(p["z"]) < crit), p.loc[np.abs(p["z"]) >= crit]
    # Only the planted parameters disagree.
    flagged = p.loc[(np.abs(p[["z", "z_sd", "z_q05", "z_q50", "z_q95"]]) >= crit).any(axis=1), "parameter"]
    assert len(flagged) and all(label.startswith(prefix) for label in flagged), flagged.tolist()


@pytest.mark.slow
def test_a_drifting_chain_in_a_real_run_is_flagged(iris_seed0):
    est, X, y, report = iris_seed0
    samples = {k: v.copy() for k, v in report.nuts.samples.items()}
    samples["loc"][2, :, 1, 3] = np.sort(samples["loc"][2, :, 1, 3])
    bad = crosscheck(est, X, y, nuts=report.nuts._replace(samples=samples), random_state=0)
    assert not bad.agrees
    assert any("r_hat above its critical value, worst loc[1, x3]" in f for f in bad.failures), bad.failures


# ------------------------------------------------------------ NUTS, MultinomialNB on spam
@pytest.fixture(scope="module")
def spam_200_x_50(sms_counts):
    from bayesnb import MultinomialNB

    X = sms_counts.X_train[:200]
    top = np.argsort(-np.asarray(X.sum(axis=0)).ravel(), kind="stable")[:50]
    X = X[:, np.sort(top)].toarray()
    y = np.asarray(sms_counts.y_train[:200])
    return MultinomialNB().fit(X, y), X, y


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_multinomial_on_200_spam_documents_x_50_words_agrees(spam_200_x_50, seed):
    """The reported case: r_hat 1.0113 (ESS 5,258) made the fixed rule say DISAGREES."""
    est, X, y = spam_200_x_50
    report = crosscheck(est, X, y, random_state=seed)
    assert report.agrees, str(report)
    assert len(report.parameters) == 2 * 50 + 2
    # The z-scores of a correct model are about standard normal: their MCSEs are honest.
    z = report.parameters[["z", "z_sd", "z_q05", "z_q50", "z_q95"]].to_numpy()
    assert 0.8 < np.nanstd(z) < 1.2
