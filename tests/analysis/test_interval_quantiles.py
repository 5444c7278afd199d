"""The equal-tailed interval partitions only at the four order statistics it needs, and
gives exactly the values of ``np.quantile`` (its default "linear" method)."""

from __future__ import annotations

import numpy as np
import pytest

from bayesnb.analysis.uncertainty import credible_interval


@pytest.mark.parametrize("shape", [(1, 3), (2, 4), (7, 5), (300, 40, 10), (417, 11, 3), (1000, 9)])
@pytest.mark.parametrize("level", [0.01, 0.5, 0.9, 0.95, 0.999, 1.0 - 2.0**-53])
def test_equal_tailed_is_np_quantile_bit_for_bit(shape, level):
    rng = np.random.default_rng(sum(shape))
    draws = rng.normal(size=shape) ** 3  # heavy tails: interpolation between distant values
    draws[0] = draws[-1]  # ties
    want = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2], axis=0)
    lower, upper = credible_interval(draws, level)
    assert np.array_equal(lower, want[0]) and np.array_equal(upper, want[1])


def test_the_comparison_sees_an_interpolation_error():
    """Planted: the lower neighbour alone (no interpolation) is told apart from np.quantile."""
    rng = np.random.default_rng(1)
    draws = rng.normal(size=(300, 50))
    want = np.quantile(draws, (1 - 0.9) / 2, axis=0)
    lower, _ = credible_interval(draws, 0.9)
    nearest_below = np.sort(draws, axis=0)[int(np.floor(299 * (1 - 0.9) / 2))]
    assert np.array_equal(lower, want)
    assert not np.array_equal(nearest_below, want)


@pytest.mark.parametrize("method", ["equal-tailed", "hdi"])
def test_threaded_lanes_give_the_same_bits(monkeypatch, method):
    """Large blocks are partitioned (sorted) in slices of rows on threads: each lane is
    ordered alone, so the interval is bit-for-bit the one-piece result, and for the
    equal-tailed interval still np.quantile's."""
    from bayesnb.analysis import uncertainty

    rng = np.random.default_rng(3)
    draws = rng.normal(size=(300, 37, 5)) ** 3
    draws[:, 4] = 0.5  # a lane of ties
    monkeypatch.setenv("BAYESNB_NUM_THREADS", "3")
    calls = []
    original = uncertainty._by_lanes

    def spy(block, fn):
        calls.append(block.size)
        return original(block, fn)

    monkeypatch.setattr(uncertainty, "_by_lanes", spy)
    monkeypatch.setattr(uncertainty, "_THREADED_LANES_MIN", 1)
    threaded = credible_interval(draws, 0.9, method)
    monkeypatch.setattr(uncertainty, "_THREADED_LANES_MIN", 1 << 62)
    whole = credible_interval(draws, 0.9, method)
    assert calls == [draws.size, draws.size]
    for a, b in zip(threaded, whole):
        assert np.array_equal(a, b)
    if method == "equal-tailed":
        want = np.quantile(draws, [(1 - 0.9) / 2, (1 + 0.9) / 2], axis=0)
        assert np.array_equal(threaded[0], want[0]) and np.array_equal(threaded[1], want[1])
