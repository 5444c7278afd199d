"""``scatter_stats`` a block of rows at a time: the same statistics, in bounded memory.

Oracle: the weighted scatter :math:`\\sum_i w_i (x_i - \\bar x_c)(x_i - \\bar x_c)^\\top`
written out with ``np.einsum`` over each class's rows (no blocks, no rank-k updates).
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from bayesnb.core import stats


def _direct(X, y, C, w):
    count = np.bincount(y, weights=w, minlength=C)
    mean = np.stack([(w[y == c, None] * X[y == c]).sum(0) / count[c] for c in range(C)])
    d = X - mean[y]
    scatter = np.stack([np.einsum("n,nf,ng->fg", w[y == c], d[y == c], d[y == c]) for c in range(C)])
    return count, mean, scatter


@pytest.mark.parametrize("weights", ["none", "positive", "with-downdates"])
def test_blocks_give_the_scatter_of_the_whole(monkeypatch, weights):
    rng = np.random.default_rng(0)
    n, F, C = 1003, 6, 3
    y = rng.integers(0, C, n)
    X = rng.normal(size=(n, F)) * rng.uniform(0.5, 3.0, F) + 1e3 * y[:, None]
    w = {"none": np.ones(n), "positive": rng.uniform(0.1, 3.0, n), "with-downdates": rng.uniform(0.5, 3.0, n)}[weights]
    if weights == "with-downdates":
        w[::7] *= -0.2  # rows taken back out (as leave-one-out does), the class weight stays positive
    sample_weight = None if weights == "none" else w
    whole = stats.scatter_stats(X, y, C, sample_weight)
    # Blocks of 5 rows: every class spans many blocks, none a multiple of 5.
    monkeypatch.setattr(stats, "_BLOCK_ENTRIES", 5 * F)
    monkeypatch.setattr(stats, "_SCATTER_MIN_ROWS", 1)
    blocked = stats.scatter_stats(X, y, C, sample_weight)
    count, mean, scatter = _direct(X, y, C, w)
    for got in (whole, blocked):
        np.testing.assert_allclose(got.class_count, count, rtol=1e-14)
        np.testing.assert_allclose(got.mean, mean, rtol=1e-13)
        np.testing.assert_allclose(got.scatter, scatter, rtol=1e-11, atol=1e-9 * np.abs(scatter).max())
        np.testing.assert_array_equal(got.scatter, np.swapaxes(got.scatter, 1, 2))  # exactly symmetric


def test_the_peak_memory_is_a_block_not_a_copy_of_the_data():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(100_000, 20))  # 15.3 MiB
    y = rng.integers(0, 4, X.shape[0])
    tracemalloc.start()
    try:
        stats.scatter_stats(X, y, 4)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # The row order and class weights (a few arrays of n entries: 0.8 MiB each) and one
    # block; centring X as a whole would take two copies of it (30 MiB).
    assert peak <= 0.5 * X.nbytes, peak / 2**20
