"""MixedNB(missing="ignore") on the UCI mushroom corpus, held out, under every estimate (issue 15).

The corpus (``../shared/data/uci_mushroom``) writes a missing ``stalk-root`` as ``?``
(2,480 of 8,124 rows). Read as missing, each feature's categorical is fitted on the rows
where it is observed and a held-out row's likelihood skips what it lacks. Oracle: the
same model counted by hand with NumPy (Dirichlet(1) per class and feature over the
categories seen in training), feature by feature on the observed rows; and for the
posterior mean, scikit-learn's ``CategoricalNB(alpha=1)`` fitted on each feature's
observed rows alone.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import CategoricalNB as SkCategoricalNB
from sklearn.preprocessing import OrdinalEncoder

import bayesnb
from bayesnb.io.datasets import read_categorical_table

ESTIMATES = ["mle", "map", "mean", "predictive"]


@pytest.fixture(scope="module")
def mushroom(shared_data):
    X, y = read_categorical_table(shared_data / "uci_mushroom" / "agaricus-lepiota.data", label_column=0)
    names = [f"attribute_{j + 1}" for j in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=names).replace("?", np.nan)
    assert int(frame.isna().sum().sum()) == 2480  # the corpus README's count of '?'
    return train_test_split(frame, y, random_state=0)


def _counted_feature_part(train, y_train, test, classes, estimate):
    """log p(x_test | class) summed over each row's observed features, by counting."""
    out = np.zeros((len(test), classes.size))
    y_index = np.searchsorted(classes, y_train)
    for name in train.columns:
        seen = train[name].notna().to_numpy()
        cats = np.unique(train[name][seen].to_numpy())
        codes = np.searchsorted(cats, train[name][seen].to_numpy())
        counts = np.zeros((classes.size, cats.size))
        np.add.at(counts, (y_index[seen], codes), 1.0)
        if estimate in ("mean", "predictive"):  # one held-out value: predictive = mean
            theta = (counts + 1.0) / (counts.sum(axis=1, keepdims=True) + cats.size)
        else:  # Dirichlet(1): the mode is the relative frequency
            theta = counts / counts.sum(axis=1, keepdims=True)
        rows = test[name].notna().to_numpy()
        test_codes = np.searchsorted(cats, test[name][rows].to_numpy())
        with np.errstate(divide="ignore"):
            out[rows] += np.log(theta[:, test_codes]).T
    return out


@pytest.mark.parametrize("estimate", ESTIMATES)
def test_held_out_predictions_equal_the_counted_model(mushroom, estimate):
    X_train, X_test, y_train, y_test = mushroom
    est = bayesnb.MixedNB(missing="ignore", estimate=estimate).fit(X_train, y_train)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bayesnb.ZeroLikelihoodWarning)
        joint = est.predict_joint_log_proba(X_test)
        proba = est.predict_proba(X_test)
    expected = _counted_feature_part(X_train, y_train, X_test, est.classes_, estimate)
    got = joint - est.class_log_prior_
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(np.isfinite(got), finite)  # zero likelihoods where counting has them
    assert_allclose(got[finite], expected[finite], rtol=1e-11, atol=1e-11)
    # Every held-out row gets a distribution (at least one class is possible) and the
    # rows with stalk-root missing are among them.
    assert np.all(np.isfinite(proba))
    assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    missing = X_test.isna().any(axis=1).to_numpy()
    assert missing.sum() > 500
    accuracy = np.mean(est.classes_[proba.argmax(axis=1)] == y_test)
    accuracy_missing = np.mean(est.classes_[proba[missing].argmax(axis=1)] == y_test[missing])
    assert accuracy > 0.95 and accuracy_missing > 0.95, (accuracy, accuracy_missing)


def test_posterior_mean_equals_scikit_learn_per_feature_on_observed_rows(mushroom):
    X_train, X_test, y_train, _ = mushroom
    est = bayesnb.MixedNB(missing="ignore", estimate="mean").fit(X_train, y_train)
    expected = np.zeros((len(X_test), est.classes_.size))
    for name in X_train.columns:
        seen, rows = X_train[name].notna().to_numpy(), X_test[name].notna().to_numpy()
        enc = OrdinalEncoder().fit(X_train[[name]][seen])
        sk = SkCategoricalNB(alpha=1.0).fit(enc.transform(X_train[[name]][seen]), y_train[seen])
        np.testing.assert_array_equal(sk.classes_, est.classes_)
        expected[rows] += sk.predict_joint_log_proba(enc.transform(X_test[[name]][rows])) - sk.class_log_prior_
    assert_allclose(est.predict_joint_log_proba(X_test) - est.class_log_prior_, expected, rtol=1e-11, atol=1e-11)


def test_missing_values_are_refused_by_default_naming_the_column(mushroom):
    X_train, _, y_train, _ = mushroom
    with pytest.raises(ValueError, match="attribute_11"):
        bayesnb.MixedNB().fit(X_train, y_train)
