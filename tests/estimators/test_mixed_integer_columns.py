"""MixedNB's integer DataFrame columns (issue 38, item 1).

A table read with pandas makes its integer columns (an age, a duration, an amount) int64:
``MixedNB()`` models them as numbers, like float columns and like the ``bayesnb`` command
on the same file; counts (Poisson) or category codes only when ``integer_columns`` asks.
Oracles: the same columns cast to float64; explicit blocks of the standalone estimators;
the command itself, fitted on the CSV file that pandas reads.
"""

from __future__ import annotations

import contextlib
import csv
import io

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from sklearn.base import clone

from bayesnb import CategoricalNB, GaussianNB, MixedNB, PoissonNB
from bayesnb.cli.command import main
from bayesnb.estimators.mixed import infer_blocks

ESTIMATES = ("mle", "map", "mean", "predictive")


def _credit(n=120, seed=0):
    """A small credit-like table: int64 duration/amount/age, a float rate, a string purpose."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.3, "bad", "good")
    bad = y == "bad"
    X = pd.DataFrame(
        {
            "duration": rng.integers(6, 48, n) + 12 * bad,
            "amount": rng.integers(500, 15_000, n) + 3_000 * bad,
            "rate": rng.normal(3.0, 1.0, n) + bad,
            "purpose": rng.choice(np.array(["car", "tv", "business"]), n).astype(object),
            "age": rng.integers(19, 75, n),
        }
    )
    assert (X.dtypes[["duration", "amount", "age"]] == np.int64).all()
    return X, y


@pytest.fixture(scope="module")
def credit():
    X, y = _credit()
    X_test, _ = _credit(30, 1)
    return X, y, X_test


def _as_float(X):
    return X.astype({c: np.float64 for c in ("duration", "amount", "age")})


def test_integer_columns_are_gaussian_by_default_and_equal_the_float_columns(credit):
    X, y, X_test = credit
    ints = MixedNB().fit(X, y)
    floats = MixedNB().fit(_as_float(X), y)
    assert [name for name, _, _ in ints.estimators_] == ["gaussian", "categorical"]
    assert ints.feature_blocks_ == {
        "duration": "gaussian", "amount": "gaussian", "rate": "gaussian", "purpose": "categorical", "age": "gaussian",
    }
    assert ints.feature_blocks_ == floats.feature_blocks_
    np.testing.assert_array_equal(ints.named_estimators_["gaussian"].n_features_in_, 4)
    for estimate in ESTIMATES:
        ints.set_params(estimate=estimate)
        floats.set_params(estimate=estimate)
        assert_allclose(
            ints.predict_joint_log_proba(X_test), floats.predict_joint_log_proba(_as_float(X_test)), rtol=1e-12
        )
    assert ints.log_evidence() == pytest.approx(floats.log_evidence(), rel=1e-12)
    # The same as one explicit Gaussian block over the numeric columns.
    explicit = MixedNB(
        [
            ("gaussian", GaussianNB(), ["duration", "amount", "rate", "age"]),
            ("categorical", CategoricalNB(), ["purpose"]),
        ]
    ).fit(X, y)
    assert_allclose(explicit.predict_proba(X_test), ints.predict_proba(X_test), rtol=1e-12)


def test_poisson_only_on_request(credit):
    X, y, X_test = credit
    counts = MixedNB(integer_columns="poisson").fit(X, y)
    assert [name for name, _, _ in counts.estimators_] == ["gaussian", "categorical", "poisson"]
    assert counts.feature_blocks_ == {
        "duration": "poisson", "amount": "poisson", "rate": "gaussian", "purpose": "categorical", "age": "poisson",
    }
    explicit = MixedNB(
        [
            ("gaussian", GaussianNB(), ["rate"]),
            ("categorical", CategoricalNB(), ["purpose"]),
            ("poisson", PoissonNB(), ["duration", "amount", "age"]),
        ]
    ).fit(X, y)
    assert_allclose(counts.predict_joint_log_proba(X_test), explicit.predict_joint_log_proba(X_test), rtol=1e-12)
    assert counts.log_evidence() == pytest.approx(explicit.log_evidence(), rel=1e-12)
    # ... and it is another model than the default one.
    assert not np.allclose(counts.predict_proba(X_test), MixedNB().fit(X, y).predict_proba(X_test))
    # Counts are non-negative: a negative integer is refused once counts are asked for.
    with pytest.raises(ValueError, match="Negative values"):
        MixedNB(integer_columns="poisson").fit(X.assign(age=-X["age"]), y)
    MixedNB().fit(X.assign(age=-X["age"]), y)  # a number like any other


def test_integer_columns_as_category_codes(credit):
    X, y, X_test = credit
    X = X.assign(rooms=np.arange(len(y)) % 4)
    X_test = X_test.assign(rooms=np.arange(len(X_test)) % 4)
    codes = MixedNB(integer_columns="categorical").fit(X[["purpose", "rooms", "rate"]], y)
    assert codes.feature_blocks_ == {"purpose": "categorical", "rooms": "categorical", "rate": "gaussian"}
    purpose = np.searchsorted(np.array(["business", "car", "tv"]), X["purpose"])
    purpose_test = np.searchsorted(np.array(["business", "car", "tv"]), X_test["purpose"])
    explicit = MixedNB(
        [("gaussian", GaussianNB(), [2]), ("categorical", CategoricalNB(min_categories=[3, 1]), [0, 1])]
    ).fit(np.column_stack([purpose, X["rooms"], X["rate"]]), y)
    assert_allclose(
        codes.predict_joint_log_proba(X_test[["purpose", "rooms", "rate"]]),
        explicit.predict_joint_log_proba(np.column_stack([purpose_test, X_test["rooms"], X_test["rate"]])),
        rtol=1e-12,
    )


@pytest.mark.parametrize("bad", ["counts", "Poisson", "bernoulli", None, 1])
def test_unknown_integer_columns_is_refused_naming_the_choices(credit, bad):
    X, y, _ = credit
    with pytest.raises(ValueError, match=r"integer_columns must be one of 'gaussian', 'poisson', 'categorical'"):
        MixedNB(integer_columns=bad).fit(X, y)
    # Checked with explicit blocks too (where it is not used), as every parameter is.
    with pytest.raises(ValueError, match="integer_columns must be one of"):
        MixedNB([("g", GaussianNB(), ["rate"])], remainder="drop", integer_columns=bad).fit(X, y)


def test_integer_columns_is_a_parameter(credit):
    X, y, X_test = credit
    est = MixedNB(integer_columns="poisson")
    assert est.get_params()["integer_columns"] == "poisson"
    assert clone(est).integer_columns == "poisson"
    assert MixedNB().set_params(integer_columns="poisson").fit(X, y).feature_blocks_["age"] == "poisson"


def test_feature_blocks_by_position_and_for_dropped_columns():
    X = np.column_stack([np.arange(8.0), np.arange(8) % 2, np.arange(8) % 3])
    y = np.arange(8) % 2
    est = MixedNB([("p", PoissonNB(), [2]), ("g", GaussianNB(), [0])], remainder="drop").fit(X, y)
    assert est.feature_blocks_ == {0: "g", 1: None, 2: "p"}


def test_the_rule_orders_and_groups_blocks_by_family():
    def names(kinds, **kw):
        return [(name, type(est).__name__, cols.tolist()) for name, est, cols in infer_blocks(kinds, **kw)]

    assert names(["int", "nominal", "float", "bool"]) == [
        ("gaussian", "GaussianNB", [0, 2]), ("bernoulli", "BernoulliNB", [3]), ("categorical", "CategoricalNB", [1]),
    ]
    assert names(["int"]) == [("gaussian", "GaussianNB", [0])]
    assert names(["int", "float"], integer_columns="poisson") == [
        ("gaussian", "GaussianNB", [1]), ("poisson", "PoissonNB", [0]),
    ]
    assert names(["nominal", "int"], integer_columns="categorical") == [("categorical", "CategoricalNB", [0, 1])]
    with pytest.raises(ValueError, match="unknown column kind 'date'"):
        infer_blocks(["date"])
    # A new estimator each call: blocks are never shared between models.
    assert infer_blocks(["float"])[0][1] is not infer_blocks(["float"])[0][1]


def test_the_command_models_the_file_as_mixednb_models_its_dataframe(credit, tmp_path):
    X, y, X_test = credit
    path = tmp_path / "credit.csv"
    X.assign(label=y).to_csv(path, index=False)
    frame = pd.read_csv(path)
    assert (frame.dtypes[["duration", "amount", "age"]] == np.int64).all()
    ref = MixedNB().fit(frame.drop(columns="label"), frame["label"].to_numpy())
    new = tmp_path / "new.csv"
    X_test.to_csv(new, index=False)
    model = tmp_path / "credit.npz"
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(["fit", str(path), "--model", str(model)]) == 0, err.getvalue()
    assert "MixedNB (mixed)" in out.getvalue()
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(["predict", str(new), "--model", str(model)]) == 0, err.getvalue()
    rows = list(csv.reader(io.StringIO(out.getvalue())))
    assert rows[0] == ["line", "predicted", "p(bad)", "p(good)"]
    proba = np.array([[float(v) for v in r[2:]] for r in rows[1:]])
    assert_allclose(proba, ref.predict_proba(pd.read_csv(new)), rtol=1e-5)
