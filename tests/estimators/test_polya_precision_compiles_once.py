"""PolyaNB's precision from the evidence compiles one program for every vocabulary size (issue 41, item 9).

The objective of ``precision="evidence"`` (``polya.precision_objective``) takes the class
mean only at the stored (class, word) pairs and through its per-class totals, padded like
the pairs, so no argument has the vocabulary's shape: a fit on another number of words
with the same padded numbers of pairs and lengths compiles nothing. Before, every
vocabulary size compiled the objective, its gradient and the polishing step again (55
compilations, 131 s of the suite's XLA time).

Oracles: the count of JAX compilations (``tests/_compiles.py``; a planted ``jax.jit``
shows it counts), and the learned precision against scipy's bounded minimisation of the
family's own ``log_evidence`` on the full (classes x words) concentration.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _compiles import count_compiles
from numpy.testing import assert_allclose
from scipy import optimize

from bayesnb import PolyaNB
from bayesnb.core import empirical_bayes as eb
from bayesnb.core._x64 import enable_x64
from bayesnb.core.families import polya


def _documents(rng, n_features, n_docs=24):
    # Bursty documents (each its own Dirichlet(0.3) word proportions) with few distinct
    # (class, word, count) triples, so that every vocabulary below pads to the same sizes.
    X = np.stack([rng.multinomial(6, rng.dirichlet(np.full(n_features, 0.3))) for _ in range(n_docs)])
    return X, np.arange(n_docs) % 2


def test_a_second_vocabulary_size_compiles_nothing():
    rng = np.random.default_rng(3)
    PolyaNB(precision="evidence").fit(*_documents(rng, 6))
    for n_features in (11, 19):
        X, y = _documents(rng, n_features)
        assert count_compiles(lambda X=X, y=y: PolyaNB(precision="evidence").fit(X, y)) == 0, n_features


def test_the_counter_sees_a_compilation():
    planted = jax.jit(lambda x: jnp.cos(x) * 2.0 - 0.5)
    assert count_compiles(lambda: planted(np.arange(13.0)).block_until_ready()) >= 1


@pytest.mark.parametrize("n_features", [5, 19])
def test_the_precision_is_the_evidence_maximum_of_the_full_concentration(n_features):
    rng = np.random.default_rng(n_features)
    X, y = _documents(rng, n_features)
    clf = PolyaNB(precision="evidence").fit(X, y)
    mean = polya.smoothed_mean(clf.stats_, clf.alpha_)
    for c in range(2):
        def negative(log_s, c=c):
            s = np.asarray(clf.precision_, dtype=np.float64).copy()
            s[c] = np.exp(log_s)
            with enable_x64():
                prior = polya.Polya(jnp.asarray(s[:, None] * mean))
                return -float(polya.log_evidence(prior, clf.stats_))

        best = optimize.minimize_scalar(negative, bounds=(np.log(eb.LOWER), np.log(eb.UPPER)), method="bounded",
                                        options={"xatol": 1e-10})
        assert_allclose(np.log(clf.precision_[c]), best.x, atol=1e-5)


def test_small_data_of_any_size_share_one_program_per_number_of_classes():
    # The smallest buckets are wide (1,024 pairs, 512 lengths): 12 documents of 3 words
    # and 300 documents of 40 words (tens and hundreds of stored triples and lengths,
    # buckets 16 and 1,024 before) compile one program between them. scikit-learn's estimator checks fit
    # PolyaNB on 18 such sizes (31 s of compiling in check_estimator, 10 s now).
    rng = np.random.default_rng(5)
    small = _documents(rng, 3, n_docs=12)
    large = (np.stack([rng.multinomial(rng.integers(5, 80), rng.dirichlet(np.full(40, 0.3))) for _ in range(300)]),
             np.arange(300) % 2)
    sizes = [(np.size(s.pair_weight), np.size(s.length_weight))
             for s in (PolyaNB(precision=1.0).fit(*d).stats_ for d in (small, large))]
    assert sizes[0][0] < 64 and sizes[1][0] > 512 and sizes[1][1] > 64, sizes  # 4 buckets apart before
    PolyaNB(precision="evidence").fit(*small)
    assert count_compiles(lambda: PolyaNB(precision="evidence").fit(*large)) == 0
