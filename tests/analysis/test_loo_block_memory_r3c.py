"""Issue 38 item 12: the exact leave-one-out of a wide model (calibrate="loo" in ``bayesnb
demo --data``) scores blocks of rows sized to the model, not 64 rows whatever the vocabulary.

On a 52,000-word newsgroup vocabulary BernoulliNB(calibrate="loo") peaked 367 MiB above the
fitted model with 64-row blocks, 116 MiB with blocks sized to ~2^20 values. Oracles: the
same leave-one-out with the old fixed 64-row blocks (identical numbers: blocks only split
the rows), and a refit without each row for a few rows.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

import bayesnb.analysis.loo as loo
from bayesnb import BernoulliNB, MultinomialNB


def _wide(n=150, n_features=20000, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = sp.random(n, n_features, density=0.002, random_state=seed, format="csr", data_rvs=lambda k: rng.integers(1, 4, k))
    X = X.astype(np.int64).tolil()
    X[np.arange(n), y] = 5  # a word per class, so that the classes differ
    return X.tocsr(), y


def test_block_rows_follow_the_size_of_one_class():
    assert loo._block_rows({"a": np.zeros((3, 10))}, 3) == loo._BLOCK  # narrow: 64 rows as before
    wide = loo._block_rows({"a": np.zeros((3, 50000)), "b": np.zeros((3, 50000))}, 3)
    assert wide == loo._BLOCK_ENTRIES // 100000 and wide * 100000 <= loo._BLOCK_ENTRIES
    assert loo._block_rows({"a": np.zeros((2, 10**7))}, 2) == loo._MIN_BLOCK


@pytest.mark.parametrize("cls", [BernoulliNB, MultinomialNB])
def test_smaller_blocks_give_the_same_scores_in_less_memory(cls, monkeypatch):
    X, y = _wide()
    clf = cls(alpha=0.5).fit(X, y)
    Xv = clf.validate_input(X)
    args = (clf.family_, clf.prior_, clf.stats_, Xv, y)

    def run():
        tracemalloc.start()
        out = loo.feature_log_loo(*args)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return out, peak

    # 20,000 features: about 2^20 values per block is 52 rows; a smaller budget (8 rows)
    # shows the temporaries follow the budget (the 64-row blocks of before: ~110 MiB here).
    assert 40 <= loo._block_rows(clf.stats_, 3) < loo._BLOCK
    monkeypatch.setattr(loo, "_BLOCK_ENTRIES", 1 << 17)
    assert loo._block_rows(clf.stats_, 3) == loo._MIN_BLOCK
    small, small_peak = run()
    monkeypatch.setattr(loo, "_BLOCK_ENTRIES", 1 << 40)  # the old rule: 64 rows whatever the width
    old, old_peak = run()
    np.testing.assert_allclose(small, old, rtol=1e-12, atol=0)
    assert small_peak < 0.4 * old_peak, (small_peak / 2**20, old_peak / 2**20)
    # The held-out class column is the refit without the row (a few rows).
    for i in (0, 77, 149):
        keep = np.arange(X.shape[0]) != i
        refit = cls(alpha=0.5).partial_fit(X[keep], y[keep], classes=[0, 1, 2])
        joint = refit.predict_joint_log_proba(X[i]) - refit.class_log_prior_
        assert small[i, y[i]] == pytest.approx(joint[0, y[i]], rel=1e-9)
