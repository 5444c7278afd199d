"""``estimator.shard(X, y, classes=...)`` takes the labels as any sequence, as scikit-learn's ``partial_fit(classes=...)`` does.

A plain list raised ``AttributeError: 'list' object has no attribute 'size'``. The oracle
is the shard of the same rows over the same labels given as a NumPy array, and the fit on
all rows.
"""

from __future__ import annotations

import numpy as np
import pytest

from bayesnb import MultinomialNB


def test_classes_as_a_list_are_those_as_an_array():
    X = np.array([[1, 0, 2], [0, 2, 1], [3, 1, 0], [1, 1, 1]])
    y = np.array([0, 1, 1, 0])
    listed = MultinomialNB().shard(X[:2], y[:2], classes=[0, 1, 2])
    arrayed = MultinomialNB().shard(X[:2], y[:2], classes=np.array([0, 1, 2]))
    for a, b in zip(listed.stats, arrayed.stats):
        np.testing.assert_array_equal(a, b)
    merged = listed.merge(MultinomialNB().shard(X[2:], y[2:], classes=[0, 1, 2]))
    fitted = MultinomialNB().fit_shard(merged)
    np.testing.assert_allclose(fitted.feature_count_[:2], MultinomialNB().fit(X, y).feature_count_, rtol=1e-15)


@pytest.mark.parametrize("classes", [[1, 0], [0, 0, 1], [[0, 1]], []])
def test_unsorted_repeated_or_shapeless_classes_are_refused(classes):
    with pytest.raises(ValueError, match="classes must"):
        MultinomialNB().shard(np.array([[1, 0]]), np.array([0]), classes=classes)
