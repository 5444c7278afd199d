"""check_class_targets: scikit-learn's target check, skipped only where its answer is certain."""

import numpy as np
import pytest
from sklearn.utils.multiclass import check_classification_targets, type_of_target

import bayesnb
from bayesnb.core._validation import check_class_targets

CASES = {
    "int": np.array([0, 1, 2, 1]),
    "int-binary": np.array([3, 7, 3]),
    "uint": np.array([1, 2], dtype=np.uint8),
    "bool": np.array([True, False, True]),
    "str": np.array(["spam", "ham", "ham"]),
    "bytes": np.array([b"a", b"b"]),
    "one-class": np.array(["a", "a"]),
    "float-integral": np.array([0.0, 1.0, 2.0]),
    "float-continuous": np.array([0.1, 0.7, 0.2]),
    "object-str": np.array(["a", "b"], dtype=object),
    "object-int": np.array([1, 2, 1], dtype=object),
    "column-2d": np.array([[0], [1]]),
    "multioutput": np.array([[0, 1], [1, 0]]),
    "multilabel": np.array([[0, 1], [1, 1]]),
}


def _outcome(check, y):
    try:
        check(y)
    except Exception as e:  # noqa: BLE001 - the outcome compared is the exception itself
        return type(e), str(e)
    return None


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_verdict_and_message_as_scikit_learn(name):
    y = CASES[name]
    assert _outcome(check_class_targets, y) == _outcome(check_classification_targets, y)


@pytest.mark.parametrize("name", ["int", "int-binary", "uint", "bool", "str", "one-class"])
def test_the_skipped_dtypes_are_the_ones_scikit_learn_always_accepts(name):
    assert type_of_target(CASES[name]) in ("binary", "multiclass")


def test_fit_still_refuses_a_continuous_target_with_scikit_learns_message():
    X = np.ones((3, 2))
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        bayesnb.MultinomialNB().fit(X, np.array([0.1, 0.5, 0.9]))
