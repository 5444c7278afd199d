"""log_normalize on draws (n_draws, n_samples, n_classes): the 2-d column-wise path over all
rows, with each dead row given its own draw's fallback, equals the textbook formula."""

from __future__ import annotations

import numpy as np
import pytest
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


def _draws_with_dead_rows(seed, shape=(6, 301, 4)):
    rng = np.random.default_rng(seed)
    joint = rng.normal(size=shape) * 80.0
    joint[2, 7] = -np.inf  # dead in draw 2 only
    joint[4, 11] = -np.inf  # dead in draw 4, whose fallback has a zero class
    joint[3, 9, 1] = -np.inf  # one impossible class: not dead
    fallback = np.log(rng.dirichlet(np.ones(shape[-1]), size=shape[0]))[:, None, :]
    fallback[4, 0, 2] = -np.inf
    return joint, fallback


def test_normalize_proba_is_exp_of_the_log_form():
    """Probabilities without the logarithm: exp(log_normalize) to rounding, on draws
    (contiguous, in place, and written into a strided block of a larger array), on 2-d
    rows, with each dead row given its own draw's proportions."""
    from bayesnb.core._normalize import normalize_proba

    joint, fallback = _draws_with_dead_rows(7)
    want_log, want_dead = _textbook(joint, fallback)
    want = np.exp(want_log)
    got, dead = normalize_proba(joint, fallback)
    assert_array_equal(dead, want_dead)
    # The textbook form rounds log p to about eps |log p| (|log p| reaches ~300 here)
    # before exponentiating: 1e-13 relative on probabilities down to 1e-130.
    assert_allclose(got, want, rtol=1e-13, atol=1e-300)
    assert_allclose(got.sum(axis=-1), 1.0, rtol=1e-14)
    assert got[4, 11, 2] == 0.0  # the dead row's zero-probability class stays exactly 0
    # In place, and into rows 100:250 of every draw of a larger array (a strided view).
    inplace = joint.copy()
    assert normalize_proba(inplace, fallback, out=inplace)[0] is inplace
    assert_array_equal(inplace, got)
    big = np.full((6, 400, 4), np.nan)
    view = big[:, 100:250]
    normalize_proba(joint[:, 100:250], fallback, out=view)
    assert_array_equal(big[:, 100:250], got[:, 100:250])
    assert np.isnan(big[:, :100]).all() and np.isnan(big[:, 250:]).all()
    # 2-d rows with one fallback.
    rows, rows_dead = normalize_proba(joint[2], fallback[2])
    assert_array_equal(rows, got[2])
    assert rows_dead.tolist() == want_dead[2].tolist()


def test_normalize_proba_sees_a_wrong_fallback():
    """A dead row gets its own draw's proportions, which differ from the other dead
    row's draw (a mix-up of draws would be seen)."""
    from bayesnb.core._normalize import normalize_proba

    joint, fallback = _draws_with_dead_rows(8)
    got, _ = normalize_proba(joint, fallback)
    assert_allclose(got[2, 7], np.exp(fallback[2, 0]) / np.exp(fallback[2, 0]).sum(), rtol=1e-14)
    assert not np.allclose(got[2, 7], np.exp(fallback[4, 0]) / np.exp(fallback[4, 0]).sum(), rtol=1e-6)


def test_normalize_proba_entropies_match_entr_with_impossible_classes():
    """The entropies written during the normalisation equal -sum p log p of the
    probabilities (scipy's entr), also for rows with an impossible class (0 log 0 = 0,
    not NaN) and for dead rows (their own draw's fallback entropy)."""
    from scipy.special import entr

    from bayesnb.core._normalize import normalize_proba

    joint, fallback = _draws_with_dead_rows(9)
    joint[1, 3, :2] = -np.inf
    for out_view in (False, True):
        h = np.full(joint.shape[:-1], np.nan)
        if out_view:  # strided blocks of rows, one 2-d pass per draw
            big = np.empty((6, 301, 4))
            p, _ = normalize_proba(joint[:, 50:250], fallback, out=big[:, 50:250], entropy=h[:, 50:250])
            h, joint_used = h[:, 50:250], joint[:, 50:250]
        else:
            p, _ = normalize_proba(joint, fallback, entropy=h)
            joint_used = joint
        want = entr(p).sum(axis=-1)
        assert np.isfinite(h).all()
        assert_allclose(h, want, rtol=1e-12, atol=1e-13)
        assert_allclose(p, normalize_proba(joint_used, fallback)[0], rtol=0, atol=0)
    # The dead row has its own draw's fallback entropy (not another draw's).
    h = np.empty(joint.shape[:-1])
    p, _ = normalize_proba(joint, fallback, entropy=h)
    assert_allclose(h[2, 7], entr(np.exp(fallback[2, 0]) / np.exp(fallback[2, 0]).sum()).sum(), rtol=1e-12)
    assert not np.isclose(h[2, 7], entr(np.exp(fallback[3, 0]) / np.exp(fallback[3, 0]).sum()).sum(), rtol=1e-6)


def test_entropies_are_refused_with_the_log_form():
    from bayesnb.core._normalize import _log_normalize_rows

    with pytest.raises(ValueError, match="probabilities only"):
        _log_normalize_rows(np.zeros((3, 2)), np.zeros(2), entropy=np.empty(3))
