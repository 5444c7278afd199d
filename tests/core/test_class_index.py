"""class_index: the one check that labels belong to a fitted model's classes, for every layer."""

import numpy as np
import pytest

from bayesnb.core._validation import class_index


@pytest.mark.parametrize(
    "labels",
    [np.array(["spam", "ham", "ham", "spam"]), np.array([3, 7, 3, 11, 7]), np.array([True, False, True])],
    ids=["str", "int", "bool"],
)
def test_positions_are_those_of_np_unique(labels):
    classes, inverse = np.unique(labels, return_inverse=True)
    np.testing.assert_array_equal(class_index(labels, classes), inverse)
    np.testing.assert_array_equal(class_index(list(labels), classes, n_rows=len(labels)), inverse)
    # A subset of the labels, in any order, against all the classes.
    np.testing.assert_array_equal(class_index(labels[::-1][:2], classes), inverse[::-1][:2])


def test_labels_outside_the_classes_are_named():
    classes = np.array(["ham", "spam"])
    # Before, between and after the sorted classes: searchsorted's three cases.
    for stranger in ("aardvark", "eggs", "zzz"):
        with pytest.raises(ValueError, match=rf"^y_test contains label '{stranger}' not in classes_ \['ham', 'spam'\]$"):
            class_index(np.array(["ham", stranger, "spam"]), classes, "y_test")


def test_a_long_list_of_classes_is_elided_and_the_caller_names_it():
    classes = np.arange(100)
    with pytest.raises(ValueError, match=r"^y contains label 100 not in classes \[0, 1, 2, .*, 9, \.\.\., 98, 99\] \(100 classes\)$"):
        class_index(np.array([3, 100]), classes, classes_name="classes")


def test_shape_and_row_count_are_checked():
    classes = np.array([0, 1])
    with pytest.raises(ValueError, match=r"y must be 1-d, got shape \(2, 1\)"):
        class_index(np.array([[0], [1]]), classes)
    with pytest.raises(ValueError, match=r"one label per row of X \(3\), got shape \(2,\)"):
        class_index(np.array([0, 1]), classes, n_rows=3)
    assert class_index(np.array([], dtype=int), classes).shape == (0,)
