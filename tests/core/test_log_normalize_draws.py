"""log_normalize on draws (n_draws, n_samples, n_classes): the 2-d column-wise path over all
rows, with each dead row given its own draw's fallback, equals the textbook formula."""

from __future__ import annotations

import numpy as np
from numpy.testing import assert_allclose, assert_array_equal

from bayesnb.core._normalize import log_normalize


def _textbook(joint, fallback):
    top = joint.max(axis=-1)
    dead = np.isneginf(top)
    joint = np.where(dead[..., None], np.broadcast_to(fallback, joint.shape), joint)
    shifted = joint - joint.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True)), dead


def test_draws_match_the_textbook_formula_with_dead_rows():
    rng = np.random.default_rng(5)
    joint = rng.normal(size=(6, 301, 4)) * 80.0
    joint[2, 7] = -np.inf  # dead in draw 2 only
    joint[4, 11] = -np.inf  # dead in draw 4, whose fallback has a zero class
    joint[3, 9, 1] = -np.inf  # one impossible class: not dead
    fallback = np.log(rng.dirichlet(np.ones(4), size=6))[:, None, :]
    fallback[4, 0, 2] = -np.inf
    got, dead = log_normalize(joint, fallback)
    want, want_dead = _textbook(joint, fallback)
    assert_array_equal(dead, want_dead)
    assert dead.sum() == 2
    assert_allclose(got, want, rtol=1e-14, atol=1e-13)
    # Each dead row took its own draw's proportions (a planted mix-up would show here).
    assert_allclose(got[2, 7], fallback[2, 0] - np.log(np.exp(fallback[2, 0]).sum()), rtol=1e-14)
    assert not np.allclose(got[2, 7], got[4, 11])


def test_four_dimensional_draws_and_a_shared_fallback():
    rng = np.random.default_rng(6)
    joint = rng.normal(size=(2, 3, 50, 5)) * 30.0
    joint[1, 2, 40] = -np.inf
    fallback = np.log(np.full((1, 5), 0.2))
    got, dead = log_normalize(joint, fallback)
    want, want_dead = _textbook(joint, fallback)
    assert_array_equal(dead, want_dead)
    assert_allclose(got, want, rtol=1e-14, atol=1e-13)
