"""The product family (MixedNB's ``family_``): the family contract over blocks of columns.

The oracles are the block families themselves, used one at a time (chain rule of the
product's predictives, Monte Carlo over the product's draws, SBC of its simulations), and a
MixedNB's public block estimators.
"""

from __future__ import annotations

import jax
import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from bayesnb import MixedNB
from bayesnb.core import families
from bayesnb.core.families.product import Block, BlockRows, product
from bayesnb.core.stats import ProductStats

N_CLASSES = 2
# Columns 0-1 Gaussian, 2 Bernoulli, 3-4 categorical, 5 Poisson; column 6 in no block.
BLOCKS = (
    Block("g", families.get("gaussian"), np.array([0, 1])),
    Block("b", families.get("bernoulli"), np.array([2])),
    Block("c", families.get("categorical"), np.array([3, 4]), {"n_categories": np.array([3, 3])}),
    Block("p", families.get("poisson"), np.array([5])),
)
N_FEATURES = 7
FAM = product(BLOCKS, N_FEATURES)


def _data(n, seed):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % N_CLASSES
    X = np.full((n, N_FEATURES), np.nan)
    X[:, :2] = rng.normal(y[:, None] * 1.5, 1.0 + 0.5 * y[:, None], (n, 2))
    X[:, 2] = rng.random(n) < 0.3 + 0.4 * y
    X[:, 3:5] = rng.integers(0, 3, (n, 2))
    X[:3, 3] = np.arange(3)
    X[:, 5] = rng.poisson(2.0 + 3.0 * y)
    return X, y


def _rows(X):
    parts = []
    for b in BLOCKS:
        part = X[:, b.columns]
        parts.append(part.astype(np.int64) if b.family.support in ("codes", "binary", "counts") else part)
    return BlockRows(parts, X.shape)


def _close(a, b, tol=1e-12):
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    assert len(la) == len(lb)
    for u, v in zip(la, lb):
        np.testing.assert_allclose(np.asarray(u, np.float64), np.asarray(v, np.float64), rtol=tol, atol=tol)


def test_members_compose_the_blocks():
    assert FAM.blocks == BLOCKS and FAM.prior_type is dict
    # Optional members exist where every block's family has them.
    assert FAM.feature_log_odds is None  # the Gaussian block has no per-term contributions
    assert product(BLOCKS[1:], N_FEATURES).feature_log_odds is not None
    with pytest.raises(ValueError, match="distinct"):
        product([BLOCKS[0], BLOCKS[0]], N_FEATURES)


def test_statistics_are_the_blocks_and_merge_to_the_whole():
    X, y = _data(30, 0)
    whole = FAM.stats(_rows(X), y, N_CLASSES)
    assert isinstance(whole, ProductStats)
    np.testing.assert_array_equal(whole.class_count, np.bincount(y, minlength=N_CLASSES))
    for b in BLOCKS:
        own = b.family.stats(_rows(X).parts[BLOCKS.index(b)], y, N_CLASSES, **b.stats_options)
        _close(whole.blocks[b.name], own)
    merged = FAM.merge(FAM.stats(_rows(X[:11]), y[:11], N_CLASSES), FAM.stats(_rows(X[11:]), y[11:], N_CLASSES))
    _close(merged, whole)


def test_log_evidence_is_the_chain_rule_of_the_product_predictives():
    X, y = _data(12, 1)
    rows = _rows(X)
    prior = FAM.default_prior(FAM.stats(rows, y, N_CLASSES))
    total = float(FAM.log_evidence(prior, FAM.stats(rows, y, N_CLASSES)))
    steps = 0.0
    for i in range(X.shape[0]):
        before = FAM.stats(rows, y, N_CLASSES, (np.arange(X.shape[0]) < i).astype(np.float64))
        steps += float(np.asarray(FAM.log_predictive(FAM.posterior(prior, before), rows.rows(i, i + 1)))[0, y[i]])
    assert np.isfinite(total) and total == pytest.approx(steps, rel=1e-9, abs=1e-9)


def test_predictive_is_the_posterior_mean_of_the_product_likelihood():
    X, y = _data(14, 2)
    rows = _rows(X)
    stats = FAM.stats(rows, y, N_CLASSES)
    prior = FAM.default_prior(stats)
    post = FAM.posterior(prior, stats)
    new = _rows(_data(3, 3)[0])
    exact = np.exp(np.asarray(FAM.log_predictive(post, new), np.float64))
    S = 4000
    draws = FAM.sample(jax.random.key(5), post, S)
    lik = np.stack([np.exp(np.asarray(FAM.log_likelihood(jax.tree.map(lambda a: np.asarray(a)[s], draws), new, prior)))
                    for s in range(S)])
    mean, se = lik.mean(axis=0), lik.std(axis=0, ddof=1) / np.sqrt(S)
    assert np.all(np.abs(mean - exact) <= 5 * se + 1e-12 * exact), (mean, exact, se)


def test_simulated_rows_put_each_block_in_its_columns():
    X, y = _data(10, 4)
    stats = FAM.stats(_rows(X), y, N_CLASSES)
    params = jax.tree.map(lambda a: np.asarray(a)[0], FAM.sample(jax.random.key(0), FAM.default_prior(stats), 1))
    sim = FAM.simulate(jax.random.key(1), params, y, stats)
    assert sim.shape == (10, N_FEATURES)
    assert np.all(np.isnan(sim[:, 6])) and np.all(np.isfinite(sim[:, :6]))
    assert set(np.unique(sim[:, 2])) <= {0.0, 1.0} and set(np.unique(sim[:, 3:5])) <= {0.0, 1.0, 2.0}


def test_small_simulation_based_calibration_of_the_product():
    X0, y0 = _data(20, 6)
    template = FAM.stats(_rows(X0), y0, N_CLASSES)
    prior = FAM.default_prior(template)
    n_sims, n_draws = 120, 19
    key = jax.random.key(13)
    ranks = {b.name: [] for b in BLOCKS}
    for s in range(n_sims):
        k_true, k_x, k_post = jax.random.split(jax.random.fold_in(key, s), 3)
        truth = jax.tree.map(lambda a: np.asarray(a)[0], FAM.sample(k_true, prior, 1))
        X = FAM.simulate(k_x, truth, y0, template)
        post = FAM.posterior(prior, FAM.stats(_rows(X), y0, N_CLASSES))
        draws = FAM.sample(k_post, post, n_draws)
        for b in BLOCKS:
            first = np.asarray(jax.tree.leaves(draws[b.name])[0]).reshape(n_draws, -1)[:, 0]
            ranks[b.name].append(int(np.sum(first < np.ravel(np.asarray(jax.tree.leaves(truth[b.name])[0]))[0])))
    for name, r in ranks.items():
        assert st.chisquare(np.bincount(r, minlength=n_draws + 1)).pvalue > 1e-3, (name, r)


def _frame(n, seed):
    rng = np.random.default_rng(seed)
    y = np.where(np.arange(n) % 2, "b", "a")
    X = pd.DataFrame({
        "size": rng.normal(np.where(y == "b", 2.0, 0.0), 1.0),
        "red": rng.random(n) < np.where(y == "b", 0.8, 0.2),
        "shape": pd.Categorical(rng.choice(["round", "long", "flat"], n)),
        "count": rng.poisson(np.where(y == "b", 4, 1)).astype(np.int64),
    })
    return X, y


# The int64 column "count" is modelled as counts (a Poisson block) on request only.
COUNTS = "poisson"


def test_mixednb_family_is_the_product_of_its_blocks():
    X, y = _frame(40, 0)
    clf = MixedNB(integer_columns=COUNTS).fit(X, y)
    fam = clf.family_
    assert fam.blocks is not None and [b.name for b in fam.blocks] == [n for n, _, _ in clf.estimators_]
    assert isinstance(clf.stats_, ProductStats)
    for name, est, _ in clf.estimators_:
        assert clf.stats_.blocks[name] is est.stats_
        _close(clf.posterior_[name], est.posterior_)
    # The evidence read through the protocol is the blocks' feature evidences added.
    blocks_sum = sum(float(est.family_.log_evidence(est.prior_, est.stats_)) for _, est, _ in clf.estimators_)
    assert float(fam.log_evidence(clf.prior_, clf.stats_)) == pytest.approx(blocks_sum, rel=1e-12)


def test_mixednb_statistics_of_new_rows_give_the_blocks_posteriors():
    # validated_stats / posterior_from_stats of a MixedNB now carry every block (the
    # statistics of the class counts alone used to leave the blocks' posteriors unchanged).
    X, y = _frame(40, 1)
    X2, y2 = _frame(25, 2)
    clf = MixedNB(integer_columns=COUNTS).fit(X, y)
    stats, Xv, y_index, w = clf.sufficient_stats(X2, y2)
    assert isinstance(stats, ProductStats)
    post = clf.posterior_from_stats(stats)
    for (name, est, _), part in zip(clf.estimators_, Xv.parts):
        own = est.posterior_from_stats(est.validated_stats(part, y_index))
        _close(post[name], own)
    # ... and differ from the fitted posterior (the blocks' statistics are really used).
    assert not np.allclose(np.asarray(post["gaussian"].loc), np.asarray(clf.posterior_["gaussian"].loc))


def test_partial_fit_batches_add_up_to_fit_in_every_block():
    X, y = _frame(50, 3)
    whole = MixedNB(integer_columns=COUNTS).fit(X, y)
    parts = MixedNB(integer_columns=COUNTS).partial_fit(X.iloc[:20], y[:20], classes=["a", "b"]).partial_fit(X.iloc[20:], y[20:])
    _close(parts.stats_, whole.stats_, tol=1e-10)
    for name, est, _ in parts.estimators_:
        assert parts.stats_.blocks[name] is est.stats_
    np.testing.assert_allclose(parts.predict_proba(X), whole.predict_proba(X), rtol=1e-10, atol=1e-12)
