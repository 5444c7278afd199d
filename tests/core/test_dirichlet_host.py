"""The host (NumPy) form of the Dirichlet point estimates against the traced (JAX) form.

``mean_log`` / ``mle_log`` run NumPy on concrete input, in blocks of whole simplices, and
``jax.numpy`` under a trace: the same expressions, so the same numbers to rounding,
whatever the block size, with masks and empty cells.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from bayesnb.core._x64 import enable_x64
from bayesnb.core.families import _dirichlet


def _cases():
    rng = np.random.default_rng(0)
    a = rng.gamma(0.3, 2.0, size=(5, 7, 9)) + 1e-3
    t = np.floor(rng.gamma(0.5, 3.0, size=(5, 7, 9)))
    t[1, 2] = 0.0  # an empty cell: the MLE's uniform limit
    mask = rng.random((7, 9)) < 0.8
    mask[:, 0] = True
    return a, t, mask


@pytest.mark.parametrize("block", [1, 9, 50, 1 << 16])
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("name", ["mean_log", "mle_log"])
def test_host_blocks_equal_traced(monkeypatch, block, masked, name):
    a, t, mask = _cases()
    value = a if name == "mean_log" else t
    m = mask if masked else None
    monkeypatch.setattr(_dirichlet, "_HOST_BLOCK", block)
    host = getattr(_dirichlet, name)(value, m)
    assert isinstance(host, np.ndarray)
    with enable_x64():
        traced = np.asarray(jax.jit(lambda v: getattr(_dirichlet, name)(v, m))(value))
    np.testing.assert_allclose(host, traced, rtol=1e-14, atol=0)
    assert np.array_equal(np.isneginf(host), np.isneginf(traced))
    # Each simplex is normalised (the masked coordinates carry no mass).
    total = np.exp(host).sum(axis=-1)
    np.testing.assert_allclose(total, 1.0, rtol=1e-13)


def test_two_dimensional_result_is_laid_out_for_the_sparse_product(monkeypatch):
    """A (classes, features) estimate is column-major, so its transpose needs no copy."""
    monkeypatch.setattr(_dirichlet, "_HOST_BLOCK", 8)
    a = np.random.default_rng(1).gamma(1.0, 1.0, size=(3, 40)) + 0.1
    out = _dirichlet.mean_log(a)
    assert out.T.flags["C_CONTIGUOUS"]
    np.testing.assert_allclose(out, np.log(a / a.sum(axis=1, keepdims=True)), rtol=1e-14)
