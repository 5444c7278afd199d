"""Issue 38: MixedNB's MAP refusal names the DataFrame column and category label (item 9,
as CategoricalNB's does), and CategoricalNB.sample() returns labels for a model fitted on
label columns (codes stay codes for a model fitted on codes).

Oracles: the zero-count cell found by pandas' crosstab; for sampling, the same model fitted
on integer codes made independently (sorted distinct labels, the dtype's category order)
with the same random_state, whose codes mapped through those labels must be the labels.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayesnb import CategoricalNB, GaussianNB, MixedNB


def _frame(n=40):
    rng = np.random.default_rng(0)
    y = np.repeat(["healthy", "sick"], 2 * n)
    colour = np.tile(["red", "blue", "blue", "green"], n).astype(object)
    colour[y == "sick"] = np.where(rng.random((y == "sick").sum()) < 0.5, "blue", "red")  # no green when sick
    X = pd.DataFrame({
        "age": rng.normal(50, 10, 4 * n),
        "smoker": np.tile(np.repeat(["no", "yes"], n), 2),
        "colour": colour,
    })
    return X, y


def _refusal(model, X, y):
    with pytest.raises(ValueError) as info:
        model.fit(X, y).predict(X)
    return str(info.value)


def test_mixed_refusal_names_the_column_and_category_label():
    X, y = _frame()
    counts = pd.crosstab(pd.Series(y, name="y"), X["colour"])
    assert counts.loc["sick", "green"] == 0 and (counts.drop(columns="green") > 0).all().all()
    blocks = [("num", GaussianNB(), ["age"]), ("cats", CategoricalNB(alpha=[2.0, 0.5]), ["smoker", "colour"])]
    msg = _refusal(MixedNB(blocks=blocks, estimate="map"), X, y)
    assert "at index" not in msg
    assert "in class 'sick', feature 'colour' (block 'cats'), category 'green'" in msg, msg
    assert "alpha 0.5 plus 0 weighted counts" in msg and "0.5 < 1" in msg and "alpha >= 1" in msg


def test_mixed_refusal_names_the_unseen_category_slot_in_words():
    X, y = _frame()
    # Every observed (class, smoker) cell has 40 rows: only the unseen-category slot stays at 0.5.
    blocks = [("num", GaussianNB(), ["age"]), ("cats", CategoricalNB(alpha=0.5), ["smoker"])]
    msg = _refusal(MixedNB(blocks=blocks, estimate="map", remainder="drop"), X, y)
    assert "at index" not in msg
    assert "in class 'healthy', feature 'smoker' (block 'cats'), the share kept for a category not seen at fit" in msg


def test_mixed_refusal_of_an_integer_code_column_and_of_a_class_proportion():
    X, y = _frame()
    X = X.assign(grade=np.where(y == "sick", 0, np.tile([0, 1], 80)))  # code 1 never when sick
    blocks = [("num", GaussianNB(), ["age"]), ("codes", CategoricalNB(alpha=0.5), ["grade"])]
    msg = _refusal(MixedNB(blocks=blocks, estimate="map", remainder="drop"), X, y)
    assert "feature 'grade' (block 'codes'), category code 1" in msg and "in class 'sick'" in msg, msg
    Z = X[["age", "smoker"]]
    with pytest.raises(ValueError, match=r"0\.5 < 1 \(the proportion of class 'x': class_alpha 0\.5 plus 0 weighted rows"):
        MixedNB(class_alpha=0.5, estimate="map").partial_fit(Z, y, classes=["healthy", "sick", "x"]).predict(Z)


def _labelled():
    rng = np.random.default_rng(3)
    n = 60
    y = rng.choice(["a", "b"], n)
    return pd.DataFrame({
        "colour": rng.choice(["red", "blue", "green"], n).astype(object),
        "size": pd.Categorical(rng.choice(["s", "l"], n), categories=["s", "m", "l"]),  # "m" never observed
        "ok": rng.random(n) < 0.3,
        "grade": rng.integers(0, 4, n),
    }), y


def test_categorical_sample_returns_the_labels_of_the_same_model_fitted_on_codes():
    X, y = _labelled()
    labels = {
        "colour": sorted(set(X["colour"])),  # strings: sorted distinct values
        "size": ["s", "m", "l"],  # category: the dtype's order
        "ok": [False, True],
    }
    codes = np.column_stack([
        [labels["colour"].index(v) for v in X["colour"]],
        [labels["size"].index(v) for v in X["size"]],
        X["ok"].astype(int),
        X["grade"],
    ])
    on_labels = CategoricalNB(alpha=0.7).fit(X, y)
    on_codes = CategoricalNB(alpha=0.7).fit(codes, y)
    np.testing.assert_array_equal(on_labels.n_categories_, on_codes.n_categories_)
    for sample in ("sample", "sample_prior"):
        S, yl = getattr(on_labels, sample)(400, random_state=5)
        C, yc = getattr(on_codes, sample)(400, random_state=5)
        assert isinstance(C, np.ndarray) and C.dtype == np.int64  # a model fitted on codes: codes
        np.testing.assert_array_equal(yl, yc)
        assert isinstance(S, pd.DataFrame) and list(S.columns) == list(X.columns)
        assert S["colour"].tolist() == [labels["colour"][k] for k in C[:, 0]]
        assert S["size"].tolist() == [labels["size"][k] for k in C[:, 1]]
        assert S["ok"].dtype == bool and S["ok"].tolist() == [bool(k) for k in C[:, 2]]
        assert S["grade"].dtype == np.int64 and S["grade"].tolist() == C[:, 3].tolist()
        assert isinstance(S["size"].dtype, pd.CategoricalDtype) and list(S["size"].cat.categories) == ["s", "m", "l"]
    # In the user's terms: the rows can be scored and fitted again as they are.
    assert on_labels.predict(S).shape == (400,)
    assert CategoricalNB().fit(S, yl).categories_[0].tolist() == labels["colour"]


def test_mixed_categorical_block_samples_labels():
    X, y = _labelled()
    S, _ = MixedNB().fit(X[["colour", "size", "grade"]], y).sample(50, random_state=0)
    assert set(S["colour"].astype(object)) <= {"red", "blue", "green"}
    assert isinstance(S["colour"].dtype, pd.CategoricalDtype) and list(S["size"].cat.categories) == ["s", "m", "l"]
