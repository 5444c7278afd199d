"""Feature log-odds draws come block of draws by block (the demo's top features on 20
Newsgroups held every draw of every class's parameters: 15 GB). Oracle: the posterior's
own draws from ``sample_posterior`` with the same seed, contrasted by hand; the blocks
must give exactly those values, and top_features the quantiles of them."""

from __future__ import annotations

import numpy as np
from numpy.testing import assert_allclose, assert_array_equal

from bayesnb import BernoulliNB, MultinomialNB
from bayesnb.analysis import uncertainty as U


def _data(f=3000, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(60) % 3
    X = rng.poisson(0.3 + 0.4 * (np.arange(f)[None, :] % 3 == y[:, None]), size=(60, f))
    return X, y


def test_blocked_draws_are_the_posteriors_own_draws():
    X, y = _data()
    clf = MultinomialNB().fit(X, y)
    n = 150  # 3 classes x 3,000 words: several blocks of draws
    odds = U.feature_log_odds_draws(clf, 1, n_draws=n, random_state=4)
    log_theta = np.log(clf.sample_posterior(n, random_state=4)["feature_probs"])
    want = log_theta[:, 1] - np.delete(log_theta, 1, axis=1).mean(axis=1)
    assert_allclose(odds.draws, want, rtol=1e-12, atol=1e-12)
    versus = U.feature_log_odds_draws(clf, 1, versus=2, n_draws=n, random_state=4)
    assert_allclose(versus.draws, log_theta[:, 1] - log_theta[:, 2], rtol=1e-12, atol=1e-12)


def test_top_features_are_the_quantiles_of_the_same_draws():
    X, y = _data(f=800, seed=1)
    clf = BernoulliNB().fit(X > 0, y)
    odds = U.feature_log_odds_draws(clf, 0, n_draws=120, random_state=2)
    top = U.top_features(clf, 0, n=7, level=0.8, n_draws=120, random_state=2)
    median = np.median(odds.draws, axis=0)
    order = np.argsort(-median, kind="stable")[:7]
    assert_array_equal(top.feature, odds.feature[order])
    assert_allclose(top.median, median[order], rtol=1e-14, atol=0)
    assert_allclose(top.lower, np.quantile(odds.draws[:, order], 0.1, axis=0), rtol=1e-14, atol=0)
    assert_allclose(top.upper, np.quantile(odds.draws[:, order], 0.9, axis=0), rtol=1e-14, atol=0)


def test_top_features_spill_path_equals_the_in_memory_path(monkeypatch):
    # A bound smaller than the draws forces the temporary file of contrasts.
    X, y = _data(f=900, seed=3)
    clf = MultinomialNB().fit(X, y)
    whole = U.top_features(clf, 2, n=10, n_draws=100, random_state=5)
    monkeypatch.setattr(U, "CHUNK_ENTRIES", 5_000)
    spilled = U.top_features(clf, 2, n=10, n_draws=100, random_state=5)
    for a, b in zip(whole[:5], spilled[:5]):
        assert_array_equal(a, b)
