"""kernels.ParamCache: derived arrays are reused only while their sources are unchanged.

Writeable sources are recognised by a checksum of their bits (a value changed in place is
a miss); read-only owners (kernels.frozen, an estimator's point estimates) are trusted
without reading them, and cannot be changed in place.
"""

from __future__ import annotations

import numpy as np
import pytest

import bayesnb
from bayesnb.core.kernels import ParamCache, frozen


def _counting_cache():
    cache, calls = ParamCache(size=4), []

    def get(a):
        return cache.get((a,), "t", lambda: calls.append(1) or a.sum())

    return get, calls


def test_writeable_source_changed_in_place_is_a_miss():
    get, calls = _counting_cache()
    a = np.arange(12.0).reshape(3, 4)
    assert get(a) == a.sum() and get(a) == a.sum() and len(calls) == 1
    a[1, 2] += 1.0  # same object, same address: only the checksum tells
    assert get(a) == a.sum() and len(calls) == 2


def test_frozen_source_is_trusted_and_refuses_changes():
    get, calls = _counting_cache()
    a = frozen(np.arange(12.0).reshape(3, 4).copy())
    assert not a.flags.writeable
    get(a), get(a)
    assert len(calls) == 1
    with pytest.raises(ValueError, match="read-only"):
        a[0, 0] = 5.0
    # A read-only view of a writeable owner is still checksummed.
    b = np.arange(6.0)
    v = b[::2]
    v.setflags(write=False)
    get(v)
    b[2] = 100.0
    assert get(v) == v.sum() and len(calls) == 3


def test_frozen_leaves_views_alone():
    owner = np.zeros(4)
    tree = {"own": np.ones(3), "view": owner[1:]}
    frozen(tree)
    assert not tree["own"].flags.writeable and tree["view"].flags.writeable and owner.flags.writeable


def test_estimator_point_estimates_are_read_only_and_refits_are_fresh():
    """Predictions after a refit (new arrays, possibly at a freed address) use the new
    parameters: the cache holds owners by weak reference."""
    rng = np.random.default_rng(0)
    X = rng.integers(0, 5, size=(60, 8))
    y = rng.integers(0, 3, size=60)
    est = bayesnb.MultinomialNB(estimate="mean").fit(X, y)
    first = est.predict_joint_log_proba(X)
    with pytest.raises(ValueError, match="read-only"):
        est.feature_log_prob_[0, 0] = 0.0
    for alpha in (0.1, 2.0, 0.1):
        est.set_params(alpha=alpha).fit(X, y)
        ref = bayesnb.MultinomialNB(estimate="mean", alpha=alpha).fit(X, y).predict_joint_log_proba(X)
        np.testing.assert_array_equal(est.predict_joint_log_proba(X), ref)
    est.set_params(alpha=1.0).fit(X, y)
    np.testing.assert_array_equal(est.predict_joint_log_proba(X), first)


def test_value_is_released_when_its_source_dies():
    """A derived array goes with its source, not at the next call: a posterior draw's
    transposed copy (8 MiB at 20 classes x 50,000 words) must not stay alive while the
    next draw is sampled, nor after the last draw."""
    import gc
    import weakref

    cache = ParamCache(size=2)
    a = np.arange(12.0).reshape(3, 4)
    value = cache.get((a,), "t", lambda: np.ascontiguousarray(a.T))
    released = weakref.ref(value)
    del value
    assert released() is not None  # the cache holds it while the source lives
    b = np.ones(5)
    kept = cache.get((b,), "t", lambda: b * 2.0)  # a live entry beside it
    del a
    gc.collect()
    assert released() is None
    assert cache.get((b,), "t", lambda: pytest.fail("the live entry was dropped")) is kept


def test_hit_moves_to_the_end_and_the_oldest_goes():
    cache, made = ParamCache(size=2), []

    def get(x):
        return cache.get((x,), "t", lambda: made.append(id(x)) or x.sum())

    a, b, c = np.ones(2), np.ones(3), np.ones(4)
    get(a), get(b), get(a)  # a is now the most recent
    get(c)  # b, the least recent, goes
    get(a)
    get(b)
    assert made == [id(a), id(b), id(c), id(b)]
