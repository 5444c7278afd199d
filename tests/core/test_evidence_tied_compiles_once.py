"""A tied Dirichlet evidence compiles one program for every number of features (issue 41, item 9).

``learn_prior`` maximises the multinomial's ``tied_log_evidence`` (a function of the
distinct counts, padded to a power of two) where the learned concentration is tied. The
prior is handed to the objective cut to length 1 along the feature axis (a tied prior says
all of itself there), so the compiled objective's shapes are the classes and the padded
distinct counts, not the vocabulary: a second fit on another number of words compiles
nothing. Before, every vocabulary size compiled the evidence and its gradient again
(about 1.5 s per shape on these cores; 310 compilations in the suite's evidence files).

Oracles: the count of JAX compilations (``tests/_compiles.py``, checked here to see a
planted compilation), and the maximiser against scipy's bounded scalar minimisation of the
untied ``log_evidence`` on the full prior, so cutting the prior cannot change the optimum.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _compiles import count_compiles
from numpy.testing import assert_allclose
from scipy import optimize

from bayesnb.core import empirical_bayes as eb
from bayesnb.core._x64 import enable_x64
from bayesnb.core.families import get as get_family


def _counts(rng, n_features, n_classes=3):
    # Documents with their own word proportions (Dirichlet(0.5) per row), so that the
    # evidence has an interior maximum in alpha; short, so that every vocabulary below has
    # the same padded number of distinct (class, count) pairs (64, the smallest size).
    X = np.stack([rng.multinomial(12, rng.dirichlet(np.full(n_features, 0.5))) for _ in range(40)])
    y = np.arange(40) % n_classes
    return X, y


def _learn(X, y, scope):
    fam = get_family("multinomial")
    stats = fam.stats(X, y, int(y.max()) + 1)
    return eb.learn_prior(fam, fam.default_prior(stats), stats, ["concentration"], scope)


@pytest.mark.parametrize("scope", ["shared", "class"])
def test_a_second_vocabulary_size_compiles_nothing(scope):
    rng = np.random.default_rng(7)
    X, y = _counts(rng, 5)
    _learn(X, y, scope)  # compiles the objective for three classes
    for n_features in (9, 23):
        X, y = _counts(rng, n_features)
        assert count_compiles(lambda X=X, y=y: _learn(X, y, scope)) == 0, n_features


def test_the_counter_sees_a_compilation():
    # Without this, a counter that never counts would pass the test above.
    planted = jax.jit(lambda x: jnp.sin(x) * 3.0 + 0.25)
    assert count_compiles(lambda: planted(np.arange(11.0)).block_until_ready()) >= 1


@pytest.mark.parametrize("scope", ["shared", "class"])
@pytest.mark.parametrize("n_features", [4, 17])
def test_the_cut_prior_reaches_the_untied_evidence_maximum(scope, n_features):
    rng = np.random.default_rng(n_features)
    X, y = _counts(rng, n_features)
    fam = get_family("multinomial")
    stats = fam.stats(X, y, 3)
    prior, trace = _learn(X, y, scope)
    assert trace.converged
    start = np.asarray(fam.default_prior(stats).concentration)

    def negative(log_alpha, rows):
        conc = start.copy()
        conc[rows] = np.exp(log_alpha)
        with enable_x64():
            return -float(fam.log_evidence(fam.default_prior(stats)._replace(concentration=jnp.asarray(conc)), stats))

    blocks = [slice(None)] if scope == "shared" else [c for c in range(3)]
    learned = np.asarray(prior.concentration)
    for rows in blocks:
        # With one class's concentration varied at a time, the others held at the
        # learned values (the evidence is a sum over classes, so each is its own problem).
        if scope == "class":
            start = learned.copy()
        best = optimize.minimize_scalar(negative, bounds=(np.log(eb.LOWER), np.log(eb.UPPER)), args=(rows,),
                                        method="bounded", options={"xatol": 1e-10})
        assert_allclose(np.log(learned[rows]).ravel(), best.x, atol=1e-5)
    # The learned prior keeps the full shape, tied along the features.
    assert learned.shape == (3, n_features)
    assert np.all(learned == learned[:, :1])
