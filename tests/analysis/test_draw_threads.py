"""The draw engine's blocks of draws and their groups: the same values whatever the threads and grouping.

The engine runs its blocks of draws one after the other; the kernels inside a block (the
sparse products, ``BAYESNB_NUM_THREADS``) may run on threads, and a large posterior's
sampled blocks are scored in groups. Neither may change a value: every block is computed
alone from its own key. The oracle is the single-threaded run; a planted engine whose
blocks all draw from one key (the same parameters in every block) must differ. On
sparse counts grouped and ungrouped scoring give the same bits, and a group that repeats
a block is told apart.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.datasets import load_digits

from bayesnb import GaussianNB, MultinomialNB
from bayesnb.analysis import uncertainty as U


@pytest.fixture(scope="module")
def digits():
    return load_digits(return_X_y=True)


def _run(est, X, threads, monkeypatch, chunk=None):
    monkeypatch.setenv("BAYESNB_NUM_THREADS", str(threads))
    draws = U.predict_proba_draws(est, X, n_draws=150, random_state=3, chunk_entries=chunk)
    lower, upper = U.predict_proba_interval(est, X, 0.8, n_draws=150, random_state=3, chunk_entries=chunk)
    dec = U.decompose_uncertainty(est, X, n_draws=150, random_state=3, chunk_entries=chunk)
    return draws, lower, upper, dec.total, dec.aleatoric, dec.epistemic


@pytest.mark.parametrize("cls", [GaussianNB, MultinomialNB])
@pytest.mark.parametrize("chunk", [None, 20_000])  # default bound; small blocks, rows cut finely
def test_threads_do_not_change_a_value(digits, cls, chunk, monkeypatch):
    X, y = digits
    est = cls().fit(X, y)
    X = X[:400]
    one = _run(est, X, 1, monkeypatch, chunk)
    for threads in (2, 3, 5):
        for a, b in zip(one, _run(est, X, threads, monkeypatch, chunk)):
            assert_array_equal(a, b)
    # Decomposition from the draws themselves (same draws): the engine's sums are theirs.
    want = U.entropy_decomposition(one[0])
    np.testing.assert_allclose(one[5], want.epistemic, rtol=1e-10, atol=1e-13)


def test_a_planted_shared_key_is_told_apart(digits, monkeypatch):
    X, y = digits
    est = GaussianNB().fit(X, y)
    X = X[:300]
    reference = _run(est, X, 2, monkeypatch, 20_000)
    real = U._ParamBlocks.get
    monkeypatch.setattr(U._ParamBlocks, "get", lambda self, b: real(self, 0))
    planted = _run(est, X, 2, monkeypatch, 20_000)
    assert not np.array_equal(reference[0], planted[0])
    assert not np.array_equal(reference[5], planted[5])


def test_groups_of_sampled_blocks_score_the_same_draws(monkeypatch):
    # A large posterior is sampled one draw per block (its draws exceed the sampler's
    # bound) and scored a group of blocks per product. On sparse counts the product of
    # each column is computed alone (SciPy's CSR kernel), so grouped and ungrouped scoring
    # give the same bits; the draws are the sampled blocks' (those of sample_posterior).
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    X = sp.random(300, 40_000, density=0.002, random_state=1, format="csr", data_rvs=lambda k: rng.integers(1, 4, k))
    y = np.arange(300) % 2
    est = MultinomialNB().fit(X, y)
    source = U.draw_source(est, X[:50], 13, 5)
    blocks = U._ParamBlocks(source, U.CHUNK_ENTRIES)
    assert blocks.sampled == 1 and blocks.group > 1  # the case this test is about
    grouped = U.proba_draws(source)
    monkeypatch.setattr(U, "_MAX_SCORED", 1)
    assert U._ParamBlocks(source, U.CHUNK_ENTRIES).group == 1
    assert_array_equal(U.proba_draws(source), grouped)
    theta = est.sample_posterior(13, random_state=5)["feature_probs"]
    np.testing.assert_allclose(np.exp(blocks.get(0).log_probs[: blocks.group]), theta[: blocks.group], rtol=1e-12)
    # Planted: a group that repeats its first sampled block instead of drawing the next.
    real = U._ParamBlocks.get
    monkeypatch.setattr(U, "_MAX_SCORED", 64)
    monkeypatch.setattr(U._ParamBlocks, "get", lambda self, b: jax.tree.map(
        lambda a: np.repeat(a[:1], len(a), axis=0), real(self, b)))
    assert not np.array_equal(U.proba_draws(source), grouped)
