"""Issue 40, cause 2 through ``partial_fit``: the Gaussian spread check judges every row seen.

``fit`` refuses a feature whose values spread over less than 2**-500 (their squared
deviations lose their digits in float64; iris at 1e-160 gave uniform probabilities).
The check looked at each batch alone, and a batch of one row (or of one value) has no
spread: iris at 1e-160 fed to ``partial_fit`` one row at a time was accepted and
predicted ``[1/3, 1/3, 1/3]``. The oracle is ``fit`` on the same rows: ``partial_fit``
must refuse what it refuses and accept (with the same posterior) what it accepts.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.datasets import load_iris

from bayesnb import GaussianNB

X_IRIS, Y_IRIS = load_iris(return_X_y=True)
ORDER = np.random.default_rng(0).permutation(len(Y_IRIS))[:60]


def _one_row_at_a_time(clf, X, y):
    for i in range(len(y)):
        clf.partial_fit(X[i : i + 1], y[i : i + 1], classes=[0, 1, 2])
    return clf


@pytest.mark.parametrize("scale", [1e-160, 1e-300])
def test_partial_fit_one_row_at_a_time_refuses_what_fit_refuses(scale):
    X, y = X_IRIS[ORDER] * scale, Y_IRIS[ORDER]
    with pytest.raises(ValueError, match=r"feature 0 \(0-based\) spreads over .* only"):
        GaussianNB().fit(X, y)
    clf = GaussianNB()
    with pytest.raises(ValueError, match=r"spreads over .* only \(max - min\)"):
        _one_row_at_a_time(clf, X, y)
    # The refused row is not committed: what was fitted before it stays, and predicts.
    assert clf.class_count_.sum() == 1.0


def test_batches_of_one_value_each_are_judged_together():
    """Each batch constant (spread 0); the union spreads over 1e-160: refused."""
    clf = GaussianNB().partial_fit(np.full((3, 1), 1e-160), [0, 1, 0], classes=[0, 1])
    with pytest.raises(ValueError, match="feature 0 .* spreads over 1e-160 only"):
        clf.partial_fit(np.full((3, 1), 2e-160), [1, 0, 1])
    # A refit forgets the earlier batches: a constant feature alone is left to the prior.
    assert GaussianNB().fit(np.full((3, 1), 2e-160), [1, 0, 1]).class_count_.tolist() == [1.0, 2.0]


def test_partial_fit_accepts_what_fit_accepts_with_the_same_posterior():
    """Batches of one value each whose union spreads normally: accepted, equal to fit."""
    X, y = X_IRIS[ORDER], Y_IRIS[ORDER]
    ref = GaussianNB().fit(X, y)
    clf = _one_row_at_a_time(GaussianNB(), X, y)
    assert_allclose(clf.predict_proba(X), ref.predict_proba(X), rtol=1e-9, atol=1e-12)
    assert_allclose(clf.posterior_.rate, ref.posterior_.rate, rtol=1e-9)
    # Features at 1e-150 (spread about 1e-150, above the bound): accepted by both, and the
    # probabilities of the scaled rows are those at scale 1 (scikit-learn's oracle is the
    # scale-1 fit; the model is scale-free).
    small = GaussianNB()
    for lo in range(0, 60, 20):
        small.partial_fit(X[lo : lo + 20] * 1e-150, y[lo : lo + 20], classes=[0, 1, 2])
    assert_allclose(small.predict_proba(X * 1e-150), ref.predict_proba(X), rtol=1e-6, atol=1e-12)
