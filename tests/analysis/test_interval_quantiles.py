"""The equal-tailed interval selects only the four order statistics it needs (by a
partition, or a sort of the lanes up to ``_SORT_MAX_DRAWS`` draws), and gives exactly
the values of ``np.quantile`` (its default "linear" method) either way."""

from __future__ import annotations

import numpy as np
import pytest

from bayesnb.analysis import uncertainty
from bayesnb.analysis.uncertainty import credible_interval


@pytest.mark.parametrize("shape", [(1, 3), (2, 4), (7, 5), (300, 40, 10), (417, 11, 3), (1000, 9), (1500, 7)])
@pytest.mark.parametrize("level", [0.01, 0.5, 0.9, 0.95, 0.999, 1.0 - 2.0**-53])
@pytest.mark.parametrize("select", ["sort", "partition"])
def test_equal_tailed_is_np_quantile_bit_for_bit(monkeypatch, shape, level, select):
    monkeypatch.setattr(uncertainty, "_SORT_MAX_DRAWS", 1 << 30 if select == "sort" else 0)
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
