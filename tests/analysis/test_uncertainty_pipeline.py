"""The uncertainty functions take a scikit-learn Pipeline ending in a bayesnb estimator
(issue 38, item 12): ``make_pipeline(CountVectorizer(), MultinomialNB())`` is how a text
classifier is written. Oracle: the same functions on the final step with the transformed
rows; the names of top_features are the vectoriser's words."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from bayesnb import MultinomialNB
from bayesnb.analysis import uncertainty as U

DOCS = [
    "win cash now", "claim your prize now", "free cash prize", "win a free prize today",
    "see you at lunch", "home later tonight", "lunch at home", "see you later",
]
LABELS = ["spam"] * 4 + ["ham"] * 4
NEW = ["free lunch now", "cash prize tonight", "see you at home"]


@pytest.fixture(scope="module")
def fitted():
    pipe = make_pipeline(CountVectorizer(), MultinomialNB()).fit(DOCS, LABELS)
    vec, clf = pipe[0], pipe[-1]
    return pipe, clf, vec.transform(NEW), list(vec.get_feature_names_out())


def test_intervals_draws_and_decomposition_of_a_pipeline_are_those_of_its_last_step(fitted):
    pipe, clf, Xt, _ = fitted
    assert_array_equal(U.predict_proba_draws(pipe, NEW, 50, 0), U.predict_proba_draws(clf, Xt, 50, 0))
    for got, want in zip(
        U.predict_proba_interval(pipe, NEW, 0.9, n_draws=80, random_state=1, return_median=True),
        U.predict_proba_interval(clf, Xt, 0.9, n_draws=80, random_state=1, return_median=True),
    ):
        assert_array_equal(got, want)
    got = U.decompose_uncertainty(pipe, NEW, n_draws=60, random_state=2)
    want = U.decompose_uncertainty(clf, Xt, n_draws=60, random_state=2)
    assert_array_equal(got.epistemic, want.epistemic)
    ranked = U.rank_by_epistemic(pipe, NEW, n_draws=60, random_state=2)
    assert_array_equal(ranked.position, U.rank_by_epistemic(clf, Xt, n_draws=60, random_state=2).position)
    updated = U.predict_proba_draws(pipe, NEW, 40, 3, posterior="updated")
    assert_array_equal(updated, U.predict_proba_draws(clf, Xt, 40, 3, posterior="updated"))


def test_top_features_of_a_pipeline_are_named_by_its_vectoriser(fitted):
    pipe, clf, _, words = fitted
    got = U.top_features(pipe, "spam", n=3, n_draws=200, random_state=0)
    want = U.top_features(clf, "spam", n=3, n_draws=200, random_state=0, feature_names=words)
    assert list(got.name) == list(want.name) and set(got.name) <= set(words)
    assert_allclose(got.median, want.median, rtol=0, atol=0)


def test_a_pipeline_not_ending_in_a_bayesnb_estimator_is_refused():
    from sklearn.linear_model import LogisticRegression

    pipe = make_pipeline(StandardScaler(), LogisticRegression()).fit(np.eye(4), [0, 0, 1, 1])
    with pytest.raises(TypeError, match="is LogisticRegression, not a bayesnb estimator"):
        U.predict_proba_interval(pipe, np.eye(4))
