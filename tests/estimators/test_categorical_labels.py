"""CategoricalNB on pandas label columns (issue 38, item 7).

The oracle is the same model fitted on integer codes made independently of bayesnb
(scikit-learn's OrdinalEncoder, whose codes are the sorted labels): a DataFrame of labels
must give exactly the probabilities of its integer-coded version, an unseen label those
of an unseen code, and a missing label with ``missing="ignore"`` those of the coded
missing path.
"""

import numpy as np
import pandas as pd
import pytest
from sklearn.preprocessing import OrdinalEncoder

from bayesnb import CategoricalNB, MixedNB

ESTIMATES = ["predictive", "mean", "mle", "map"]


@pytest.fixture
def frame():
    rng = np.random.default_rng(3)
    n = 80
    X = pd.DataFrame(
        {
            "colour": rng.choice(["red", "green", "blue"], n).astype(object),
            "cap": pd.Series(rng.choice(["flat", "bell", "knob"], n), dtype="string"),
            "ok": rng.random(n) < 0.4,
        }
    )
    y = np.where(rng.random(n) < 0.5, "edible", "poisonous")
    return X, y


def _codes(X, encoder=None):
    """Integer codes of the label columns, independently of bayesnb (sorted labels)."""
    values = X.astype(object).to_numpy()
    encoder = encoder or OrdinalEncoder(dtype=np.float64).fit(values)
    return encoder.transform(values).astype(np.int64), encoder


@pytest.mark.parametrize("estimate", ESTIMATES)
def test_labels_give_exactly_the_probabilities_of_their_codes(frame, estimate):
    X, y = frame
    codes, _ = _codes(X)
    by_labels = CategoricalNB(estimate=estimate, alpha=1.5).fit(X, y)
    by_codes = CategoricalNB(estimate=estimate, alpha=1.5).fit(codes, y)
    np.testing.assert_array_equal(by_labels.predict_proba(X), by_codes.predict_proba(codes))
    np.testing.assert_array_equal(by_labels.predict(X), by_codes.predict(codes))
    assert by_labels.log_evidence() == by_codes.log_evidence()
    assert list(by_labels.feature_names_in_) == ["colour", "cap", "ok"]
    assert [c.tolist() for c in by_labels.categories_.values()] == [
        ["blue", "green", "red"],
        ["bell", "flat", "knob"],
        [False, True],
    ]


def test_an_unseen_label_is_scored_like_an_unseen_code(frame):
    X, y = frame
    codes, encoder = _codes(X)
    by_labels = CategoricalNB().fit(X, y)
    by_codes = CategoricalNB().fit(codes, y)
    new = pd.DataFrame({"colour": ["purple", "red"], "cap": pd.Series(["bell", "conical"], dtype="string"), "ok": [True, False]})
    # The codes an unseen value gets in the coded model: any code past the fitted table.
    new_codes = np.array([[3, 0, 1], [2, 7, 0]])
    np.testing.assert_array_equal(by_labels.predict_proba(new), by_codes.predict_proba(new_codes))


def test_a_category_dtype_keeps_its_order_and_its_unobserved_categories(frame):
    X, y = frame
    order = ["small", "medium", "large", "huge"]  # "huge" is never observed
    rng = np.random.default_rng(0)
    X = X.assign(size=pd.Categorical(rng.choice(order[:3], len(X)), categories=order))
    clf = CategoricalNB().fit(X, y)
    assert clf.categories_[3].tolist() == order
    assert clf.n_categories_[3] == 4
    codes = np.column_stack([_codes(X.iloc[:, :3])[0], X["size"].cat.codes.to_numpy()])
    ref = CategoricalNB(min_categories=[3, 3, 2, 4]).fit(codes, y)
    np.testing.assert_array_equal(clf.predict_proba(X), ref.predict_proba(codes))


def test_a_missing_label_with_missing_ignore_is_the_coded_missing_path(frame):
    X, y = frame
    codes, _ = _codes(X)
    X = X.astype({"ok": "boolean"})
    holes = [(2, "colour"), (5, "cap"), (5, "ok"), (11, "colour")]
    coded = pd.DataFrame(codes.astype(np.float64), columns=X.columns)
    for i, col in holes:
        X.loc[i, col] = None
        coded.loc[i, col] = np.nan
    by_labels = CategoricalNB(missing="ignore").fit(X, y)
    by_codes = CategoricalNB(missing="ignore").fit(coded, y)
    np.testing.assert_array_equal(by_labels.predict_proba(X), by_codes.predict_proba(coded))
    assert by_labels.log_evidence() == by_codes.log_evidence()
    with pytest.raises(ValueError, match="missing='ignore'"):
        CategoricalNB().fit(X, y)


def test_partial_fit_appends_new_labels_and_keeps_old_codes(frame):
    X, y = frame
    first, second = X.iloc[:40], X.iloc[40:].copy()
    second.loc[second.index[:3], "colour"] = "purple"  # new in the second batch
    clf = CategoricalNB().partial_fit(first, y[:40], classes=np.unique(y)).partial_fit(second, y[40:])
    assert clf.categories_[0].tolist() == ["blue", "green", "red", "purple"]
    full = pd.concat([first, second])
    mapping = {v: k for k, v in enumerate(clf.categories_[0].tolist())}
    codes = np.column_stack([full["colour"].map(mapping), _codes(full[["cap", "ok"]])[0]])
    ref = CategoricalNB().fit(codes, y)
    np.testing.assert_array_equal(clf.predict_proba(full), ref.predict_proba(codes))


def test_refused_numbers_name_mixednb():
    X = pd.DataFrame({"colour": ["a", "b", "a"], "weight": [1.5, 2.25, 3.0]})
    with pytest.raises(ValueError, match="non-integer value.*use MixedNB"):
        CategoricalNB().fit(X, [0, 1, 0])
    # MixedNB takes the same frame (the weight column as a Gaussian).
    assert MixedNB().fit(X, [0, 1, 0]).predict(X).shape == (3,)


def test_mixednb_categories_are_unchanged_by_the_shared_mechanism(frame):
    X, y = frame
    X = X.drop(columns="ok")
    mixed = MixedNB().fit(X, y)
    alone = CategoricalNB().fit(X, y)
    assert {j: c.tolist() for j, c in mixed.categories_.items()} == {j: c.tolist() for j, c in alone.categories_.items()}
    np.testing.assert_allclose(mixed.predict_proba(X), alone.predict_proba(X), rtol=1e-12)


def test_learned_labels_survive_save_and_load(frame, tmp_path):
    import bayesnb

    X, y = frame
    clf = CategoricalNB().fit(X, y)
    clf.save(tmp_path / "model.bnb")
    back = bayesnb.load(tmp_path / "model.bnb")
    assert {j: c.tolist() for j, c in back.categories_.items()} == {j: c.tolist() for j, c in clf.categories_.items()}
    new = pd.DataFrame({"colour": ["purple", "red"], "cap": pd.Series(["bell", None], dtype="string"), "ok": [True, False]})
    new = new.fillna({"cap": "flat"})
    np.testing.assert_array_equal(back.predict_proba(new), clf.predict_proba(new))
