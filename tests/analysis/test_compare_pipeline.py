"""``compare`` and ``save`` with a scikit-learn ``Pipeline`` ending in a bayesnb estimator (issue 38 item 12).

* ``compare(Pipeline)`` cross-validates the whole pipeline for every estimate: the
  transforms are refitted on each training fold. Oracle: scikit-learn's own
  ``cross_val_predict`` of ``CountVectorizer`` + ``sklearn.naive_bayes.MultinomialNB``
  on the same folds equals the ``"mean"`` row of ``CountVectorizer`` +
  ``bayesnb.sklearn.MultinomialNB`` to 1e-10 (a vectoriser fitted on all the rows gives
  other numbers: the folds hold words of their own); the hold-out ``"predictive"`` row
  equals the fitted pipeline's ``predict_proba``.
* ``save`` refuses a pipeline holding a transform outside bayesnb's table (here a
  ``FunctionTransformer``, whose function only pickle could store) with a message that
  says why and how to save the final step, and that route works. Pipelines of table
  transforms are saved whole: tests/io/test_save_pipeline.py.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
import sklearn.naive_bayes as sknb
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

import bayesnb
import bayesnb.sklearn as bsk
from bayesnb.analysis.comparison import metric_values
from bayesnb.io import persistence

ATOL = 1e-10


@pytest.fixture(scope="module")
def docs():
    rng = np.random.default_rng(0)
    spam = ["win", "cash", "prize", "free", "offer", "click"]
    ham = ["meeting", "lunch", "report", "call", "team", "notes"]
    texts, labels = [], []
    for i in range(48):
        label = "spam" if i % 2 else "ham"
        # Documents of different lengths, so that the classes' word totals differ (with
        # equal totals a vocabulary leak cancels out of MultinomialNB's probabilities).
        n_words = int(rng.integers(2, 9))
        words = list(rng.choice(spam if i % 2 else ham, size=n_words)) + list(rng.choice(spam + ham, size=2))
        words.append(f"rare{i}")  # a word of this document only: it is in one fold's vocabulary
        texts.append(" ".join(words))
        labels.append(label)
    return texts, np.array(labels)


def test_cv_refits_the_transforms_on_each_fold_as_scikit_learn(docs):
    texts, y = docs
    cv = StratifiedKFold(4, shuffle=True, random_state=0)
    table = bayesnb.compare(
        make_pipeline(CountVectorizer(), bsk.MultinomialNB(alpha=0.5)), texts, y, cv=cv, n_bootstrap=0,
        as_frame=False,
    )
    assert table["estimate"] == ["mle", "map", "mean", "predictive"]
    oof = cross_val_predict(make_pipeline(CountVectorizer(), sknb.MultinomialNB(alpha=0.5)), texts, y, cv=cv,
                            method="predict_proba")
    want = metric_values(y, oof, np.unique(y))
    for metric, value in want.items():
        assert table.row("mean")[metric] == pytest.approx(value, abs=ATOL), metric
    # The vectoriser fitted on all the rows (a leak of the held-out words) gives other numbers.
    leaked = CountVectorizer().fit(texts).transform(texts)
    oof_leaked = cross_val_predict(sknb.MultinomialNB(alpha=0.5), leaked, y, cv=cv, method="predict_proba")
    # (a difference a thousand times the tolerance above, so the check sees the leak)
    assert abs(metric_values(y, oof_leaked, np.unique(y))["log_loss"] - want["log_loss"]) > 1e3 * ATOL
    # Every estimate is scored (the MAP is undefined under alpha = 0.5 < 1, and says so), and
    # the log evidence is the final step's on all the rows.
    assert table["available"] == [True, False, True, True]
    assert "alpha" in table.row("map")["reason"]
    full = make_pipeline(CountVectorizer(), bsk.MultinomialNB(alpha=0.5)).fit(texts, y)
    assert table.row("predictive")["log_evidence"] == pytest.approx(float(full[-1].log_evidence()), abs=1e-9)


def test_holdout_pipeline_rows_equal_the_fitted_pipeline(docs):
    texts, y = docs
    train, test = slice(0, 32), slice(32, None)
    pipe = make_pipeline(CountVectorizer(), bayesnb.MultinomialNB(estimate="predictive"))
    table = bayesnb.compare(pipe, texts[train], y[train], texts[test], y[test], n_bootstrap=20, as_frame=False)
    fitted = make_pipeline(CountVectorizer(), bayesnb.MultinomialNB(estimate="predictive")).fit(texts[train], y[train])
    want = metric_values(y[test], fitted.predict_proba(texts[test]), fitted.classes_)
    assert table.row("predictive")["log_loss"] == pytest.approx(want["log_loss"], abs=ATOL)
    assert table.row("predictive")["log_loss_lo"] is not None
    # The template is not fitted by compare.
    assert not hasattr(pipe[-1], "stats_")
    # refit=False scores the fitted pipeline itself, with the same numbers.
    again = bayesnb.compare(fitted, None, None, texts[test], y[test], refit=False, n_bootstrap=0, as_frame=False)
    assert again.row("predictive")["log_loss"] == pytest.approx(want["log_loss"], abs=ATOL)
    assert fitted[-1].estimate == "predictive"


def test_a_pipeline_not_ending_in_a_bayesnb_estimator_is_refused(docs):
    texts, y = docs
    with pytest.raises(TypeError, match=r"ends in a bayesnb estimator.*LogisticRegression.*baselines="):
        bayesnb.compare(make_pipeline(CountVectorizer(), LogisticRegression()), texts, y, cv=3)


def test_saving_a_pipeline_with_an_unsupported_step_is_refused_with_the_way_to_save_its_final_step(docs):
    texts, y = docs
    pipe = make_pipeline(CountVectorizer(), FunctionTransformer(np.sqrt), bayesnb.MultinomialNB()).fit(texts, y)
    with pytest.raises(
        TypeError,
        match=r"step 'functiontransformer'.*FunctionTransformer.*CountVectorizer.*pickle.*"
        r"named_steps\['multinomialnb'\]\.save\(path\)",
    ):
        persistence.save(pipe, io.BytesIO())
    buffer = io.BytesIO()
    pipe.named_steps["multinomialnb"].save(buffer)
    buffer.seek(0)
    loaded = bayesnb.load(buffer)
    np.testing.assert_array_equal(loaded.predict_proba(pipe[:-1].transform(texts)), pipe.predict_proba(texts))
