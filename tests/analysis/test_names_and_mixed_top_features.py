"""Issue 15, names: top_features for a MixedNB (through its public estimators_ blocks), with
the estimator's feature names and category labels, in the table and the plot.

Oracle: SciPy's Beta and Dirichlet distributions sampled from the blocks' public
``posterior_`` (the log-odds terms of a Bernoulli feature are differences of logits of
independent Beta draws; of a categorical value, differences of log Dirichlet components).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bayesnb import GaussianNB, MixedNB
from bayesnb.analysis.uncertainty import feature_log_odds_draws, top_features


@pytest.fixture(scope="module")
def mixed():
    rng = np.random.default_rng(0)
    n = 80
    y = np.array(["ham", "spam"])[rng.integers(0, 2, n)]
    spam = y == "spam"
    X = pd.DataFrame(
        {
            "length": rng.normal(size=n) + spam,
            "has_link": rng.random(n) < np.where(spam, 0.8, 0.2),
            "sender": pd.Categorical(np.where(rng.random(n) < np.where(spam, 0.7, 0.2), "unknown", "contact")),
        }
    )
    return MixedNB().fit(X, y), X, y


def test_mixed_terms_are_its_blocks_terms_named_by_column_and_category(mixed):
    clf, X, y = mixed
    assert [name for name, _, _ in clf.estimators_] == ["gaussian", "bernoulli", "categorical"]
    odds = feature_log_odds_draws(clf, "spam", n_draws=20_000, random_state=0)
    # The Gaussian column has no per-term contribution: left out, and said so by the unit.
    assert odds.name.tolist() == ["has_link", "sender=contact", "sender=unknown"]
    assert odds.feature.tolist() == [1, 2, 2] and odds.category.tolist() == [-1, 0, 1]
    assert "bernoulli: " in odds.unit and "categorical: " in odds.unit and "gaussian" not in odds.unit
    # Oracle: the same quantities from SciPy draws of the blocks' public posteriors.
    rng = np.random.default_rng(1)
    bern = clf.named_estimators_["bernoulli"].posterior_
    a, b = np.asarray(bern.concentration1)[:, 0], np.asarray(bern.concentration0)[:, 0]
    theta = stats.beta.rvs(a, b, size=(20_000, 2), random_state=rng)
    logit = np.log(theta) - np.log1p(-theta)
    expected = [np.median(logit[:, 1] - logit[:, 0])]
    cat = clf.named_estimators_["categorical"].posterior_
    conc = np.asarray(cat.concentration)[:, 0, :2]
    spam_draws = stats.dirichlet.rvs(conc[1], size=20_000, random_state=rng)
    ham_draws = stats.dirichlet.rvs(conc[0], size=20_000, random_state=rng)
    expected += list(np.median(np.log(spam_draws) - np.log(ham_draws), axis=0))
    got = np.median(odds.draws, axis=0)
    # Medians of 20,000 draws: Monte Carlo sd about 1.25 sd / sqrt(n) < 0.01 here.
    np.testing.assert_allclose(got, expected, atol=0.03)
    assert clf.classes_.tolist() == ["ham", "spam"]


def test_top_features_of_a_mixed_model_ranks_its_terms(mixed):
    clf, X, y = mixed
    top = top_features(clf, "spam", n=2, n_draws=2000, random_state=0)
    assert top.name.tolist() == ["has_link", "sender=unknown"]
    assert np.all(top.lower < top.median) and np.all(top.median < top.upper)
    assert top.median[0] > top.median[1] > 0


def test_top_features_plot_labels_are_names_and_category_labels(mixed):
    import matplotlib

    matplotlib.use("Agg")
    from bayesnb.analysis.plots import top_features as plot_top

    clf, X, y = mixed
    ax = plot_top(clf, "spam", 3, n_draws=500, random_state=0)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["has_link", "sender=unknown", "sender=contact"]


def test_a_model_without_per_term_contributions_is_refused_by_name():
    X = np.array([[0.1, 1.0], [0.3, 0.8], [2.0, 0.1], [2.2, 0.3]])
    clf = GaussianNB().fit(X, [0, 0, 1, 1])
    with pytest.raises(TypeError, match="got GaussianNB"):
        top_features(clf, 1)
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1]})
    with pytest.raises(TypeError, match="got MixedNB with blocks gaussian"):
        top_features(MixedNB().fit(frame, [0, 0, 1, 1]), 1)


def test_a_vectorizers_vocabulary_reaches_the_arviz_coordinates():
    from sklearn.feature_extraction.text import CountVectorizer

    from bayesnb import MultinomialNB

    texts = ["free lunch today", "free free prize", "meeting today", "lunch meeting notes"]
    vec = CountVectorizer()
    X = vec.fit_transform(texts)
    clf = MultinomialNB().fit(X, ["spam", "spam", "ham", "ham"])
    words = vec.get_feature_names_out()
    idata = clf.to_inference_data(50, random_state=0, feature_names=words)
    assert idata.posterior["feature_probs"].coords["feature"].values.tolist() == words.tolist()
    # The draws are those of the default coordinates, only named.
    plain = clf.to_inference_data(50, random_state=0)
    assert plain.posterior["feature_probs"].coords["feature"].values.tolist()[:2] == ["x0", "x1"]
    np.testing.assert_array_equal(idata.posterior["feature_probs"].values, plain.posterior["feature_probs"].values)
    j = words.tolist().index("free")
    np.testing.assert_array_equal(
        idata.posterior["feature_probs"].sel(feature="free").values, plain.posterior["feature_probs"].values[..., j]
    )
    assert len(words) == 6
    with pytest.raises(ValueError, match="feature_names has 2 names but the estimator was fitted on 6 features"):
        clf.to_inference_data(10, feature_names=["a", "b"])
    with pytest.raises(ValueError, match="distinct"):
        clf.to_inference_data(10, feature_names=["a"] * 6)
