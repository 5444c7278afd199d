"""More of the bad-input matrix (issue 19): nullable pandas dtypes, duplicate CSR entries,
huge sample weights.

Each case is built here; each input either works (and then agrees with an independent
computation: the same data in its plain NumPy form, scikit-learn, closed forms) or is
refused with a message naming the problem.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

from bayesnb import (
    BernoulliNB,
    CategoricalNB,
    ExponentialNB,
    GaussianBayesClassifier,
    GaussianNB,
    MixedNB,
    MultinomialNB,
    PoissonNB,
    PolyaNB,
)

Y = np.array([0, 1, 0, 1, 0, 1, 0, 1])

# ------------------------------------------------------------ pandas nullable dtypes
# name -> (constructor, plain float data with NaN at the missing entries, nullable dtype)
_INT = np.array([[1, 0], [2, 1], [np.nan, 1], [0, 2], [1, 0], [3, np.nan], [2, 2], [0, 1]])
_BOOL = np.array([[1, 0], [1, 1], [np.nan, 1], [0, 0], [1, 0], [0, np.nan], [1, 1], [0, 1]])
_REAL = np.array([[1.5, 0.2], [2.1, 1.0], [np.nan, 1.1], [0.3, 2.4], [1.2, 0.1], [3.3, np.nan], [2.0, 2.2], [0.4, 1.3]])
NULLABLE = {
    "PoissonNB/Int64": (PoissonNB, _INT, "Int64"),
    "CategoricalNB/Int64": (CategoricalNB, _INT, "Int64"),
    "BernoulliNB/boolean": (BernoulliNB, _BOOL, "boolean"),
    "CategoricalNB/boolean": (CategoricalNB, _BOOL, "boolean"),
    "GaussianNB/Float64": (GaussianNB, _REAL, "Float64"),
    "ExponentialNB/Float64": (ExponentialNB, _REAL, "Float64"),
    "GaussianNB/Int64": (GaussianNB, _INT, "Int64"),
}
# Estimators whose fit refuses missing values whatever the policy (the message says why).
NO_MISSING_FIT = {
    "MultinomialNB/Int64": (MultinomialNB, _INT, "Int64"),
    "PolyaNB/Int64": (PolyaNB, _INT, "Int64"),
    "GBC-full/Float64": (lambda **kw: GaussianBayesClassifier(covariance="full", **kw), _REAL, "Float64"),
}


def _frame(values, dtype):
    cols = {}
    for j, name in enumerate(["first", "second"]):
        col = values[:, j]
        if dtype == "boolean":
            data = [pd.NA if np.isnan(v) else bool(v) for v in col]
        elif dtype == "Int64":
            data = [pd.NA if np.isnan(v) else int(v) for v in col]
        else:
            data = [pd.NA if np.isnan(v) else float(v) for v in col]
        cols[name] = pd.array(data, dtype=dtype)
    return pd.DataFrame(cols)


@pytest.mark.parametrize("case", sorted(NULLABLE))
def test_nullable_na_is_a_missing_value_under_ignore(case):
    # Oracle: the same values as a float64 array with NaN where pd.NA is, the path of
    # missing="ignore" tested against per-feature fits in tests/core.
    make, values, dtype = NULLABLE[case]
    frame = _frame(values, dtype)
    assert frame.isna().to_numpy().sum() == 2
    est = make(missing="ignore").fit(frame, Y)
    ref = make(missing="ignore").fit(values, Y)
    for method in ("predict_proba", "predict_log_proba"):
        got = getattr(est, method)(frame)
        assert np.all(np.isfinite(got)), method
        assert_allclose(got, getattr(ref, method)(values), rtol=1e-12, atol=1e-12)
    assert_allclose(est.log_evidence(), ref.log_evidence(), rtol=1e-12)
    # The caller's frame keeps its pd.NA (no in-place filling).
    assert frame.isna().to_numpy().sum() == 2


@pytest.mark.parametrize("case", sorted(NULLABLE) + sorted(NO_MISSING_FIT))
def test_nullable_na_under_error_names_the_column(case):
    make, values, dtype = {**NULLABLE, **NO_MISSING_FIT}[case]
    frame = _frame(values, dtype)
    with pytest.raises(ValueError, match=r"missing values \(NaN or pd\.NA\) in columns 'first' \(1 row\), 'second' \(1 row\)"):
        make().fit(frame, Y)
    # At prediction too: a model fitted on complete rows meets pd.NA.
    complete = frame.dropna()
    est = make().fit(complete, Y[complete.index])
    with pytest.raises(ValueError, match=r"in columns 'first' \(1 row\), 'second'"):
        est.predict_proba(frame)


@pytest.mark.parametrize("case", sorted(NO_MISSING_FIT))
def test_nullable_na_where_fit_cannot_leave_it_out_is_refused(case):
    make, values, dtype = NO_MISSING_FIT[case]
    with pytest.raises(ValueError, match="cannot be fitted on rows with missing"):
        make(missing="ignore").fit(_frame(values, dtype), Y)


def test_nullable_complete_frame_equals_the_plain_array():
    # Nullable dtypes without pd.NA are ordinary numbers: no coercion to categories etc.
    frame = _frame(np.nan_to_num(_INT), "Int64")
    for make in (PoissonNB, CategoricalNB, GaussianNB):
        got = make().fit(frame, Y).predict_proba(frame)
        ref = make().fit(np.nan_to_num(_INT), Y).predict_proba(np.nan_to_num(_INT))
        assert_allclose(got, ref, rtol=1e-12)


def test_mixed_nullable_columns_under_ignore_are_the_sum_of_blocks():
    frame = pd.concat([_frame(_REAL, "Float64")[["first"]], _frame(_INT, "Int64")[["second"]]], axis=1)
    mixed = MixedNB([("real", GaussianNB(), [0]), ("counts", PoissonNB(), [1])], missing="ignore").fit(frame, Y)
    ref = MixedNB([("real", GaussianNB(), [0]), ("counts", PoissonNB(), [1])], missing="ignore")
    plain = np.column_stack([_REAL[:, 0], _INT[:, 1]])
    ref.fit(plain, Y)
    assert_allclose(mixed.predict_proba(frame), ref.predict_proba(plain), rtol=1e-12)
    with pytest.raises(ValueError, match="column 'first' of block 'real' contains NaN"):
        MixedNB([("real", GaussianNB(), [0]), ("counts", PoissonNB(), [1])]).fit(frame, Y)
