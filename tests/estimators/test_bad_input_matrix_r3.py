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


# ------------------------------------------------------------ CategoricalNB padding
def _sklearn_categorical_proba(X, y, Xt):
    from sklearn.naive_bayes import CategoricalNB as SkCategoricalNB

    return SkCategoricalNB(alpha=1.0).fit(X, y).predict_proba(Xt)


def test_categorical_identifier_codes_padding_every_feature_are_refused_before_allocating():
    import tracemalloc

    # One code of 2**20 - 1 in one of 40 features: the padded table would hold
    # 2 x 40 x 2**20 cells (640 MiB a copy; 6.2 GB at fit before). Refused, naming the
    # feature, the code, the number of rows and the re-encoding, before any table exists.
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, size=(200, 40))
    X[7, 5] = 2**20 - 1
    y = rng.integers(0, 2, 200)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"feature 5 has category code 1048575 but the data has only 200 rows.*OrdinalEncoder"):
            CategoricalNB().fit(X, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20
    # The same through partial_fit: a later batch introducing the code.
    est = CategoricalNB().partial_fit(X[100:], y[100:], classes=[0, 1])
    with pytest.raises(ValueError, match="feature 5 has category code 1048575"):
        est.partial_fit(X[:100], y[:100])
    assert est.n_categories_.max() == 3  # the refused batch is not committed
    # A MixedNB categorical block is the same estimator.
    with pytest.raises(ValueError, match="category code 1048575"):
        MixedNB([("cat", CategoricalNB(), list(range(40)))]).fit(X, y)


@pytest.mark.parametrize("code", [2**20 - 1, 5000])
def test_categorical_large_code_where_the_table_is_small_still_fits(code):
    # The refusal is about the padded table, not the code: one wide feature (2 x 2 x 2**20
    # cells), or 40 features of 5,001 categories (2 x 40 x 5001), fit and agree with
    # scikit-learn's CategoricalNB (estimate="mean", empirical class prior).
    rng = np.random.default_rng(1)
    n_features = 2 if code > 10**5 else 40
    X = rng.integers(0, 3, size=(60, n_features))
    X[3, 1] = code
    y = rng.integers(0, 2, 60)
    prior = np.bincount(y) / y.size
    est = CategoricalNB(estimate="mean", class_prior=prior).fit(X, y)
    assert est.n_categories_[1] == code + 1
    assert_allclose(est.predict_proba(X[:10]), _sklearn_categorical_proba(X, y, X[:10]), rtol=1e-10)


# ------------------------------------------------------------ CSR with duplicate entries
def _csr_with_duplicates(seed):
    """A CSR matrix storing some (row, column) entries twice, its dense meaning, labels."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    n, d = 30, 6
    rows, cols, vals = [], [], []
    for i in range(n):
        for j in rng.choice(d, size=3, replace=False):
            copies = 1 + int(rng.random() < 0.3)  # stored once or twice
            for _ in range(copies):
                rows.append(i)
                cols.append(int(j))
                vals.append(1.0)
    order = rng.permutation(len(rows))  # unsorted within rows, duplicates not adjacent
    rows, cols, vals = (np.asarray(a)[order] for a in (rows, cols, vals))
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n))])
    sort = np.argsort(rows, kind="stable")
    X = sp.csr_matrix((vals[sort], cols[sort], indptr), shape=(n, d))
    assert not X.has_canonical_format and X.nnz > np.count_nonzero(X.toarray())
    return X, X.toarray(), rng.integers(0, 2, n)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("binarize", [0.0, 0.5, 1.5])
def test_bernoulli_csr_duplicates_are_summed_like_dense(seed, binarize):
    from sklearn.naive_bayes import BernoulliNB as SkBernoulliNB

    X, dense, y = _csr_with_duplicates(seed)
    data_before = X.data.copy()
    est = BernoulliNB(binarize=binarize).fit(X, y)
    ref = BernoulliNB(binarize=binarize).fit(dense, y)
    assert_allclose(est.posterior_.concentration1, ref.posterior_.concentration1, rtol=0, atol=0)
    assert_allclose(est.predict_proba(X), ref.predict_proba(dense), rtol=1e-12)
    assert_allclose(est.log_evidence(), ref.log_evidence(), rtol=1e-12)
    # Oracle: scikit-learn on the dense matrix (estimate="mean", empirical class prior).
    prior = np.bincount(y) / y.size
    ours = BernoulliNB(binarize=binarize, estimate="mean", class_prior=prior).fit(X, y)
    theirs = SkBernoulliNB(alpha=1.0, binarize=binarize).fit(dense, y)
    assert_allclose(ours.predict_proba(X), theirs.predict_proba(dense), rtol=1e-10)
    # The caller's matrix is untouched.
    assert X.nnz == data_before.size and np.array_equal(X.data, data_before)


def test_bernoulli_csr_duplicate_ones_are_a_two_and_refused_without_threshold():
    X, dense, y = _csr_with_duplicates(0)
    with pytest.raises(ValueError, match=r"binarize=None needs binary \(0/1\) data; found value .*2\.0"):
        BernoulliNB(binarize=None).fit(dense, y)
    with pytest.raises(ValueError, match=r"binarize=None needs binary \(0/1\) data; found value .*2\.0"):
        BernoulliNB(binarize=None).fit(X, y)
    fitted = BernoulliNB(binarize=None).fit((dense > 0).astype(float), y)
    with pytest.raises(ValueError, match="needs binary"):
        fitted.predict_proba(X)


@pytest.mark.parametrize("make", [MultinomialNB, PoissonNB, PolyaNB], ids=lambda c: c.__name__)
def test_count_estimators_on_csr_duplicates_equal_dense(make):
    X, dense, y = _csr_with_duplicates(2)
    for dtype in (np.float64, np.int64, np.float32):
        Xt = X.astype(dtype)
        Xt.has_canonical_format = False  # astype may keep or drop the flag; be explicit
        est, ref = make().fit(Xt, y), make().fit(dense, y)
        assert_allclose(est.predict_joint_log_proba(Xt), ref.predict_joint_log_proba(dense), rtol=1e-12)
        assert_allclose(est.log_evidence(), ref.log_evidence(), rtol=1e-12)
        # predict_proba scores a class contrast where the family has one (PoissonNB: no
        # log x!), the duplicates read as they are stored
        for estimate in ("mean", "predictive"):
            est.set_params(estimate=estimate)
            ref.set_params(estimate=estimate)
            assert_allclose(est.predict_proba(Xt), ref.predict_proba(dense), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("make", [MultinomialNB, PoissonNB], ids=lambda c: c.__name__)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.bool_])
def test_narrow_and_boolean_csr_duplicates_are_summed_as_the_products_read_them(make, dtype):
    """Two stored 100s of int8 (uint8: 200 and 100; bool: two Trues) are 200 (300; 2)
    everywhere: the products and totals read each stored value as a number, and the
    non-linear terms (log x!, the rising factorials) sum them in int64, not in the
    values' own type (SciPy: wrapped around, or OR). The joint equals the dense int64
    matrix's, predict_proba the softmax of the joint; a negative int8 pair is refused by
    its sum."""
    import scipy.sparse as sp

    vals = {np.int8: [100, 100, 3, 1], np.uint8: [200, 100, 3, 1], np.bool_: [True, True, True, True]}[dtype]
    X = sp.csr_matrix((np.array(vals, dtype=dtype), np.array([0, 0, 1, 0]), np.array([0, 2, 3, 4])), shape=(3, 2))
    X.has_canonical_format = False
    dense = np.zeros((3, 2), dtype=np.int64)
    for v, j, i in zip(vals, [0, 0, 1, 0], [0, 0, 1, 2]):
        dense[i, j] += int(v)
    y = np.array([0, 1, 1])
    for estimate in ("mean", "predictive"):
        est, ref = make(estimate=estimate).fit(X, y), make(estimate=estimate).fit(dense, y)
        joint = est.predict_joint_log_proba(X)
        assert np.isfinite(joint).all()
        assert_allclose(joint, ref.predict_joint_log_proba(dense), rtol=1e-12)
        assert_allclose(est.predict_proba(X), np.exp(joint - np.logaddexp.reduce(joint, axis=1, keepdims=True)), rtol=1e-12)
        assert_allclose(est.log_evidence(), ref.log_evidence(), rtol=1e-12)
    if dtype is np.int8:
        negative = sp.csr_matrix((np.array([-100, -100, 3, 1], dtype=np.int8), X.indices, X.indptr), shape=X.shape)
        with pytest.raises(ValueError, match="Negative"):
            make().fit(negative, y)


@pytest.mark.parametrize("estimate", ["mle", "map", "mean", "predictive"])
def test_multinomial_leaves_csr_duplicates_to_its_nonlinear_consumers(estimate):
    # MultinomialNB's validation does not search for duplicate entries (its counts and
    # plug-in products are linear in them); every estimate, exact LOO and the count-vector
    # evidence (multinomial coefficients: not linear) must still see what the dense matrix holds.
    from bayesnb import loo
    from bayesnb.analysis.evidence import log_marginal_likelihood

    X, dense, y = _csr_with_duplicates(3)
    X = X.astype(np.int64)
    X.has_canonical_format = False
    indices_before = X.indices.copy()
    est, ref = MultinomialNB(estimate=estimate).fit(X, y), MultinomialNB(estimate=estimate).fit(dense, y)
    assert_allclose(est.predict_proba(X), ref.predict_proba(dense), rtol=1e-12)
    assert_allclose(
        log_marginal_likelihood(est, X, y), log_marginal_likelihood(ref, dense, y), rtol=1e-12
    )
    if estimate == "predictive":
        assert_allclose(loo(est, X, y).elpd_loo, loo(ref, dense, y).elpd_loo, rtol=1e-12)
    assert np.array_equal(X.indices, indices_before)  # the caller's matrix is untouched


def test_multinomial_judges_a_negative_stored_value_by_its_sum():
    import scipy.sparse as sp

    # Row 0 stores column 1 as -1 and +3 (it holds a 2); in the refused matrix row 1 stores
    # column 0 as -2 and +1 (it holds a -1).
    indptr, indices = np.array([0, 3, 5, 6]), np.array([1, 0, 1, 2, 0, 2])
    ok = sp.csr_matrix((np.array([-1.0, 1.0, 3.0, 1.0, 2.0, 4.0]), indices, indptr), shape=(3, 3))
    y = np.array([0, 1, 1])
    assert_allclose(
        MultinomialNB().fit(ok, y).predict_joint_log_proba(ok),
        MultinomialNB().fit(ok.toarray(), y).predict_joint_log_proba(ok.toarray()),
        rtol=1e-12,
    )
    bad = sp.csr_matrix((np.array([-1.0, 1.0, 3.0, -2.0, 1.0, 1.0]), np.array([1, 0, 1, 0, 0, 2]), indptr), shape=(3, 3))
    assert bad.toarray().min() == -1.0
    with pytest.raises(ValueError, match=r"Negative values in data passed to MultinomialNB.*min -1"):
        MultinomialNB().fit(bad, y)


# ------------------------------------------------------------ huge sample weights
_rng = np.random.default_rng(5)
_Y12 = np.tile([0, 1], 6)
_C12 = _rng.poisson(2.0, (12, 3)).astype(float)
_R12 = _rng.normal(size=(12, 3)) + np.array([0.0, 1.0, -1.0]) * _Y12[:, None]
WEIGHTED = {
    "MultinomialNB": (MultinomialNB, _C12),
    "PoissonNB": (PoissonNB, _C12),
    "PolyaNB": (PolyaNB, _C12),
    "BernoulliNB": (BernoulliNB, (_C12 > 1).astype(float)),
    "CategoricalNB": (CategoricalNB, np.minimum(_C12, 3)),
    "GaussianNB": (GaussianNB, _R12),
    "ExponentialNB": (ExponentialNB, np.abs(_R12) + 0.1),
    "GBC-full": (lambda **kw: GaussianBayesClassifier(covariance="full", **kw), _R12),
    "GBC-shared": (lambda **kw: GaussianBayesClassifier(covariance="shared", **kw), _R12),
    "GBC-diag": (lambda **kw: GaussianBayesClassifier(covariance="diag", **kw), _R12),
}


@pytest.mark.parametrize("weight", [1e300, 1e200, 1e149])
@pytest.mark.parametrize("name", sorted(WEIGHTED))
def test_weights_whose_sum_overflows_the_posterior_are_refused(name, weight):
    # 1e300 gave NaN probabilities and evidences with only RuntimeWarnings; the
    # predictives multiply two parameters of the order of the total weight.
    make, X = WEIGHTED[name]
    with pytest.raises(ValueError, match=r"sample_weight sums to 1\.2e\+\d+, above the 1e\+150 .*rescale"):
        make().fit(X, _Y12, sample_weight=np.full(12, weight))
    est = make().partial_fit(X, _Y12, classes=[0, 1])
    before = est.predict_proba(X)
    with pytest.raises(ValueError, match="sample_weight sums to"):
        est.partial_fit(X, _Y12, sample_weight=np.full(12, weight))
    assert_allclose(est.predict_proba(X), before, rtol=0, atol=0)


@pytest.mark.parametrize("name", sorted(WEIGHTED))
def test_largest_accepted_weights_give_finite_answers_without_warnings(name):
    import warnings

    make, X = WEIGHTED[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for estimate in ("predictive", "mean", "map", "mle"):
            if name == "PolyaNB" and estimate == "map":
                continue  # undefined for concentrations < 1 (refused with its own message)
            est = make(estimate=estimate).fit(X, _Y12, sample_weight=np.full(12, 8e148))
            proba = est.predict_proba(X)
            assert np.all(np.isfinite(proba)) and np.all(np.isfinite(est.log_evidence()))
            assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)


def test_gaussian_huge_weights_and_scale_give_the_plug_in_limit():
    # Weights of 1e100 on features of scale 1e100: the Student-t predictive has 1e101
    # degrees of freedom and the prior weighs nothing, so it is the Normal plug-in of the
    # weighted MLE, i.e. scikit-learn's GaussianNB on the unscaled rows (class
    # probabilities do not change when every feature is scaled alike). Before, the scale
    # k / (2 b (k + 1)) overflowed to 0 and every row got the same probabilities.
    import warnings

    from sklearn.naive_bayes import GaussianNB as SkGaussianNB

    want = SkGaussianNB(var_smoothing=0.0).fit(_R12, _Y12).predict_proba(_R12)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for make in (GaussianNB, lambda **kw: GaussianBayesClassifier(covariance="diag", **kw)):
            est = make().fit(_R12 * 1e100, _Y12, sample_weight=np.full(12, 1e100))
            assert_allclose(est.predict_proba(_R12 * 1e100), want, rtol=1e-9)


def test_multinomial_huge_weights_give_the_plug_in_limit():
    # Posterior concentrations of ~1e149: the Dirichlet-multinomial predictive is the
    # multinomial of the weighted MLE proportions (scikit-learn with alpha -> 0).
    import warnings

    from sklearn.naive_bayes import MultinomialNB as SkMultinomialNB

    want = SkMultinomialNB(alpha=1e-12, force_alpha=True).fit(_C12, _Y12).predict_proba(_C12)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = MultinomialNB().fit(_C12, _Y12, sample_weight=np.full(12, 8e148)).predict_proba(_C12)
    assert_allclose(got, want, rtol=1e-9)
    # Counts of 1e100 with weights of 1e60 (concentrations ~1e160: the Stirling tail of
    # the log rising factorial squared them and overflowed, with a RuntimeWarning).
    big = _C12 * 1e100
    want = SkMultinomialNB(alpha=1e-12, force_alpha=True).fit(big, _Y12).predict_proba(big)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = MultinomialNB().fit(big, _Y12, sample_weight=np.full(12, 1e60)).predict_proba(big)
        poisson = PoissonNB().fit(big, _Y12, sample_weight=np.full(12, 1e60)).predict_proba(big)
    assert_allclose(got, want, rtol=1e-9)
    assert np.all(np.isfinite(poisson))
