"""The estimate='map' refusal names what the user wrote (issue 38, item 9).

"a posterior concentration is 0.5 < 1 (at index (0, 0, 2))" named the hidden slot a
categorical feature keeps for categories not seen at fit. The refusal now names the
class label, the feature (its column name when there is one) and the category label, or
says it is the unseen-category slot, and what to do.
"""

import numpy as np
import pandas as pd
import pytest

from bayesnb import BernoulliNB, CategoricalNB, MultinomialNB


def _binary_frame(n_per_cell=40):
    # Every (class, feature, category) cell observed at least n_per_cell times.
    smoker = np.tile(np.repeat(["no", "yes"], n_per_cell), 2)
    y = np.repeat(["healthy", "sick"], 2 * n_per_cell)
    return pd.DataFrame({"smoker": smoker}), y


def test_the_unseen_category_slot_is_named_in_words():
    X, y = _binary_frame()
    with pytest.raises(ValueError) as info:
        CategoricalNB(alpha=0.5, estimate="map").fit(X, y).predict(X)
    msg = str(info.value)
    assert "at index" not in msg
    for words in ("'healthy'", "feature 'smoker'", "category not seen at fit", "0.5 < 1", "alpha >= 1", "estimate='mean'"):
        assert words in msg, (words, msg)


def test_an_observed_category_is_named_by_its_label():
    # "red" never occurs in class "b": with alpha 0.5 its concentration is 0.5 < 1, and
    # alpha is 2 for the other feature (per-feature alpha), so that cell comes first.
    X = pd.DataFrame({"colour": ["red", "blue", "blue", "blue"], "shape": ["o", "x", "o", "x"]})
    y = ["a", "b", "a", "b"]
    counts = pd.crosstab(pd.Series(y, name="y"), X["colour"])
    assert counts.loc["b", "red"] == 0  # the cell the message must name (independent count)
    with pytest.raises(ValueError) as info:
        CategoricalNB(alpha=[0.5, 2.0], estimate="map").fit(X, y).predict(X)
    msg = str(info.value)
    assert "in class 'b', feature 'colour', category 'red'" in msg
    assert "alpha 0.5 plus 0 weighted counts" in msg


def test_a_table_cell_shows_the_value_first():
    # The demo and compare tables show the first clause of a refusal (short_reason).
    from bayesnb.analysis.comparison import short_reason

    X, y = _binary_frame()
    with pytest.raises(ValueError) as info:
        CategoricalNB(alpha=0.5, estimate="map").fit(X, y).predict(X)
    assert "0.5 < 1 (in class 'healthy'" in short_reason(str(info.value))


def test_without_column_names_the_feature_is_named_by_position():
    X = np.array([[0, 1], [1, 0], [0, 0], [1, 1]])
    with pytest.raises(ValueError, match=r"in class 7, feature 1 \(column 1 of X\), the share kept for a category not seen"):
        CategoricalNB(alpha=[2.0, 0.5], estimate="map").fit(X, [7, 7, 8, 8]).predict(X)


def test_bernoulli_and_class_refusals_name_class_and_feature():
    X = np.array([[0, 1], [0, 0], [0, 1], [0, 0]])
    with pytest.raises(ValueError, match=r"in class 'x', the probability that feature 0 \(column 0 of X\) is present"):
        BernoulliNB(alpha=0.5, estimate="map").fit(X, ["x", "x", "z", "z"]).predict(X)
    with pytest.raises(ValueError, match=r"0\.5 < 1 \(the proportion of class 2: class_alpha 0\.5 plus 0 weighted rows.*class_alpha >= 1"):
        MultinomialNB(class_alpha=0.5, estimate="map").partial_fit(X, [0, 0, 1, 1], classes=[0, 1, 2]).predict(X)


def _empty_class_fit(estimator):
    # Class "c" is declared but has no rows: its posterior concentration is class_alpha.
    # Positive integers: every family's support (counts, positive reals, reals).
    X = np.array([[1, 2], [2, 3], [4, 1], [3, 5]])
    return estimator.partial_fit(X, ["a", "a", "b", "b"], classes=["a", "b", "c"]), X


def _estimators():
    import bayesnb

    yield from (getattr(bayesnb, name)(class_alpha=0.5, estimate="map")
                for name in ("GaussianNB", "PoissonNB", "ExponentialNB", "MultinomialNB", "PolyaNB"))
    yield bayesnb.GaussianBayesClassifier(covariance="diag", class_alpha=0.5, estimate="map")
    yield bayesnb.MixedNB([("g", bayesnb.GaussianNB(), [0]), ("p", bayesnb.PoissonNB(), [1])], class_alpha=0.5,
                          estimate="map")


@pytest.mark.parametrize("estimator", list(_estimators()), ids=lambda e: type(e).__name__)
def test_every_estimator_names_the_class_whose_proportion_has_no_mode(estimator):
    # The wording used to live in the discrete estimators and MixedNB only: GaussianNB
    # raised "at index (2,)". Labels from a pandas Series (object dtype) and a class with
    # a quarter of a weighted row: class_alpha 0.5 + 0.25 = 0.75 < 1.
    X = np.array([[1, 2], [2, 3], [4, 1], [3, 5], [2, 2]])
    y = pd.Series(["a", "a", "b", "b", "c"], dtype=object)
    est = estimator.fit(X, y, sample_weight=[1.0, 1.0, 1.0, 1.0, 0.25])
    assert est.classes_.dtype == object
    with pytest.raises(ValueError) as info:
        est.predict(X)
    msg = str(info.value)
    assert "0.75 < 1 (the proportion of class 'c': class_alpha 0.5 plus 0.25 weighted rows of that class)" in msg, msg
    assert "at index" not in msg and "class_alpha >= 1" in msg


def test_the_fitted_model_pytree_words_the_refusal_as_its_estimator():
    from bayesnb import GaussianNB
    from bayesnb.core import _fitted

    est, X = _empty_class_fit(GaussianNB(class_alpha=0.5, estimate="map"))
    with pytest.raises(ValueError) as by_estimator:
        est.class_log_prior_
    with pytest.raises(ValueError) as by_pytree:
        _fitted.class_log_prior(est.fitted_model(), "map")
    assert str(by_pytree.value) == str(by_estimator.value)
    assert "the proportion of class 'c'" in str(by_pytree.value)


def test_leave_one_out_names_the_class_and_the_row_left_out():
    # Class "v" has one row (row 3) of weight 0.5: on all rows its concentration is
    # class_alpha 0.5 + 0.5 = 1 (a mode), with row 3 left out 0.5 alone, below 1. Every
    # other row leaves row 3 in.
    from bayesnb import loo

    X = np.array([[0, 1], [0, 2], [1, 1], [2, 0]])
    y, w = ["u", "u", "u", "v"], [1.0, 1.0, 1.0, 0.5]
    est = MultinomialNB(class_alpha=0.5, estimate="map").fit(X, y, sample_weight=w)
    est.predict(X)  # no refusal on all the rows
    with pytest.raises(ValueError, match=r"0\.5 < 1 \(the proportion of class 'v' with training row 3 left out: class_alpha 0\.5 plus 0 weighted rows") as info:
        loo(est, X, y, sample_weight=w)
    assert "at index" not in str(info.value)
    # With class_alpha 1 every left-out posterior has a mode, (N_c - w_i [y_i = c]) / (N - w_i):
    # no refusal, and row 3's class "v" gets proportion 0.
    refit = est.set_params(class_alpha=1.0).fit(X, y, sample_weight=w)
    with np.errstate(divide="ignore"):
        expected = np.log([[2 / 2.5, 0.5 / 2.5]] * 3 + [[1.0, 0.0]])
    np.testing.assert_allclose(refit.loo_terms(X, y, sample_weight=w).class_log, expected, rtol=1e-12)


def test_leave_one_out_refuses_a_class_without_a_mode_on_all_rows_as_such():
    # Class "c" has no rows: no row is to blame, and none is named.
    from bayesnb import loo

    est, X = _empty_class_fit(MultinomialNB(class_alpha=0.5, estimate="map"))
    with pytest.raises(ValueError, match=r"0\.5 < 1 \(the proportion of class 'c': class_alpha 0\.5 plus 0 weighted rows") as info:
        loo(est, X, ["a", "a", "b", "b"])
    assert "left out" not in str(info.value)


def _one_present_row():
    # In class 'u', feature 0 is present in row 0 only: on all the rows its Beta has
    # concentration 0.5 + 1 (a mode); with row 0 left out 0.5 alone, below 1.
    X = pd.DataFrame({"b0": [1, 0, 1, 0], "b1": [0, 1, 1, 0]})
    return X, ["u", "u", "v", "v"], [1.0, 1.0, 0.5, 1.0]


def test_leave_one_out_names_the_feature_cell_and_the_row_left_out():
    # bayesnb.loo raised the raw "at index (0, 0, 1)" of the family's downdate.
    from bayesnb import loo

    X, y, w = _one_present_row()
    assert X["b0"][np.asarray(y) == "u"].tolist() == [1, 0]  # the cell the message must name
    est = BernoulliNB(alpha=0.5, binarize=None, estimate="map").fit(X, y, sample_weight=w)
    est.predict(X)  # no refusal on all the rows
    with pytest.raises(ValueError) as info:
        loo(est, X, y, sample_weight=w)
    msg = str(info.value)
    assert "at index" not in msg
    assert (
        "in class 'u', the probability that feature 'b0' is present (1) with training row 0 left out: "
        "its prior concentration 0.5 plus 0 weighted rows with the feature present (1)"
    ) in msg, msg


def test_leave_one_out_names_the_block_of_a_mixed_model():
    from bayesnb import GaussianNB, MixedNB, loo

    X, y, w = _one_present_row()
    X = X.assign(x=[1.0, 2.0, 0.5, 1.5])
    blocks = [("g", GaussianNB(), ["x"]), ("b", BernoulliNB(alpha=0.5, binarize=None), ["b0", "b1"])]
    est = MixedNB(blocks, estimate="map").fit(X, y, sample_weight=w)
    est.predict(X)
    with pytest.raises(ValueError) as info:
        loo(est, X, y, sample_weight=w)
    assert "feature 'b0' (block 'b') is present (1) with training row 0 left out" in str(info.value)


def test_the_product_family_downdate_says_which_block_and_row():
    # The layer below raises the family's error, located; the estimator words it.
    from bayesnb import GaussianNB, MixedNB
    from bayesnb.analysis.loo import feature_log_loo
    from bayesnb.core.families._dirichlet import UndefinedModeError

    X, y, w = _one_present_row()
    X = X.assign(x=[1.0, 2.0, 0.5, 1.5])
    blocks = [("g", GaussianNB(), ["x"]), ("b", BernoulliNB(alpha=0.5, binarize=None), ["b0", "b1"])]
    est = MixedNB(blocks, estimate="map").fit(X, y, sample_weight=w)
    with pytest.raises(UndefinedModeError) as info:
        feature_log_loo(
            est.family_, est.prior_, est.stats_, est.validate_input(X), np.searchsorted(est.classes_, y),
            np.asarray(w), kind="map",
        )
    assert (info.value.row, info.value.block, info.value.index[:2]) == (0, "b", (0, 0))
    assert "in class 'u'" in str(est._feature_map_refusal("map", info.value))


def test_leave_one_out_without_a_mode_on_all_rows_is_the_fit_refusal():
    # No row to blame: the same words as predict's.
    from bayesnb import loo

    X = np.array([[0, 3], [0, 2], [1, 1], [0, 4]])
    y = ["u", "u", "v", "v"]
    est = MultinomialNB(alpha=0.5, estimate="map").fit(X, y)
    with pytest.raises(ValueError) as by_predict:
        est.predict(X)
    with pytest.raises(ValueError) as by_loo:
        loo(est, X, y)
    assert str(by_loo.value) == str(by_predict.value)
    assert "in class 'u', feature 0 (column 0 of X): alpha 0.5 plus 0 weighted counts" in str(by_loo.value)
