"""SemiSupervisedNB in the analysis layers: its fitted-model pytree (one component per class).

Oracle: the entropy decomposition of the estimator's own posterior draws (same key), and
the refusal with several components, whose classes the layers would misread.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

import bayesnb
from bayesnb.analysis import uncertainty as U


def _data():
    rng = np.random.default_rng(0)
    y = np.arange(40) % 2
    X = rng.poisson(np.where(y[:, None] == 0, [3, 1, 1, 2], [1, 3, 2, 1]))
    return X, np.where(np.arange(40) < 16, y, -1)


def test_decomposition_of_a_semi_supervised_fit_is_that_of_its_draws():
    X, y = _data()
    semi = bayesnb.SemiSupervisedNB(bayesnb.MultinomialNB()).fit(X, y)
    got = U.decompose_uncertainty(semi, X[:6], n_draws=50, random_state=3)
    want = U.entropy_decomposition(semi.predict_proba_draws(X[:6], 50, 3))
    assert_allclose(got.epistemic, want.epistemic, rtol=1e-10, atol=1e-13)
    assert_allclose(got.total, want.total, rtol=1e-10, atol=1e-13)


def test_several_components_are_refused_by_the_layers():
    X, y = _data()
    semi = bayesnb.SemiSupervisedNB(bayesnb.MultinomialNB(), n_components=2, max_iter=5).fit(X, y)
    with pytest.raises(ValueError, match="one component per class"):
        U.decompose_uncertainty(semi, X[:3], n_draws=10, random_state=0)
