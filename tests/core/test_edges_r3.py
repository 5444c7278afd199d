"""Edge cases of issue 40: huge counts, tiny Gaussian scales, dates, corrupt CSR, huge
category codes and tuple labels. Each case is checked against an independent oracle
(mpmath at 360 digits, scikit-learn, the unscaled computation) or must raise a clear error."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

import bayesnb

# ---------------------------------------------------------------- 1. huge counts

X_COUNTS = np.array([[2, 0, 1], [0, 3, 1], [1, 1, 0], [0, 2, 2]])
Y_COUNTS = np.array([0, 1, 0, 1])
# Rows whose class posteriors the float64 sequence form got wrong from about 1e12 on
# (NaN or [0.5, 0.5] from 1e20): one feature dominant, and near-balanced rows.
HUGE = [2.0**22, 123456789.0, 1e12, 1e15, 2.0**53, 1e17, 1e20, 1e100, 1e300]


def _mp_normalise(logs):
    top = max(logs)
    w = [mp.e ** (v - top) for v in logs]
    s = sum(w)
    return np.array([float(v / s) for v in w])


def _dm_oracle(a, row, log_class, joint=False):
    """Class posteriors of the Dirichlet-multinomial predictive (``joint``: the joint
    log-probabilities of the token sequence), at 360 digits."""
    with mp.workdps(360):
        n = sum(mp.mpf(float(v)) for v in row)
        logs = []
        for c in range(a.shape[0]):
            A = sum(mp.mpf(float(v)) for v in a[c])
            t = log_class[c] - (mp.loggamma(A + n) - mp.loggamma(A))
            for j, x in enumerate(row):
                x = mp.mpf(float(x))
                t += mp.loggamma(mp.mpf(float(a[c, j])) + x) - mp.loggamma(mp.mpf(float(a[c, j])))
            logs.append(t)
        return np.array([float(v) for v in logs]) if joint else _mp_normalise(logs)


def _nb_oracle(a, b, row, log_class):
    """Class posteriors of the negative-binomial (Poisson-Gamma) predictive, at 360 digits."""
    with mp.workdps(360):
        logs = []
        for c in range(a.shape[0]):
            t = mp.mpf(log_class[c])
            for j, x in enumerate(row):
                x = mp.mpf(float(x))
                ac, bc = mp.mpf(float(a[c, j])), mp.mpf(float(b[c, j]))
                t += mp.loggamma(ac + x) - mp.loggamma(ac) - ac * mp.log(1 + 1 / bc) - x * mp.log(1 + bc)
            logs.append(t)
        return _mp_normalise(logs)


def _rows(v):
    h = np.floor(v / 2)
    return np.array([[v - 1, 0, 1], [h, h - 1, 1], [h, np.floor(v / 4), 7]], dtype=np.float64)


@pytest.mark.parametrize("v", HUGE)
def test_multinomial_predictive_huge_counts_match_mpmath(v):
    clf = bayesnb.MultinomialNB().fit(X_COUNTS, Y_COUNTS)
    a = np.asarray(clf.posterior_.concentration, dtype=np.float64)
    log_class = [mp.log(p) for p in clf.predict_proba(np.zeros((1, 3)))[0]]
    rows = _rows(v)
    got = clf.predict_proba(rows)
    for row, p in zip(rows, got):
        want = _dm_oracle(a, row, log_class)
        np.testing.assert_allclose(p, want, rtol=1e-9, atol=1e-300)
    joint = clf.predict_joint_log_proba(rows)
    for row, j in zip(rows, joint):
        np.testing.assert_allclose(j, _dm_oracle(a, row, log_class, joint=True), rtol=1e-12)


@pytest.mark.parametrize("v", HUGE)
def test_poisson_predictive_huge_counts_match_mpmath(v):
    clf = bayesnb.PoissonNB().fit(X_COUNTS, Y_COUNTS)
    a = np.asarray(clf.posterior_.concentration, dtype=np.float64)
    b = np.asarray(clf.posterior_.rate, dtype=np.float64)
    # The class term, from the all-zero row less its own (zero-count) predictive.
    with mp.workdps(50):
        log_class = [
            mp.log(p) + sum(mp.mpf(float(ac)) * mp.log(1 + 1 / mp.mpf(float(bc))) for ac, bc in zip(a[c], b[c]))
            for c, p in enumerate(clf.predict_proba(np.zeros((1, 3)))[0])
        ]
    rows = _rows(v)
    got = clf.predict_proba(rows)
    for row, p in zip(rows, got):
        np.testing.assert_allclose(p, _nb_oracle(a, b, row, log_class), rtol=1e-9, atol=1e-300)
    assert np.all(np.isfinite(clf.predict_joint_log_proba(rows)))


@pytest.mark.parametrize("estimator", [bayesnb.MultinomialNB, bayesnb.PoissonNB])
def test_counts_past_the_float64_range_are_refused(estimator):
    clf = estimator().fit(X_COUNTS, Y_COUNTS)
    for method in (clf.predict_proba, clf.predict_joint_log_proba, clf.predict):
        with pytest.raises(ValueError, match="beyond the float64 range"):
            method([[1.0, 2.0, 3.0], [1e308, 1e308, 1.0]])


# ---------------------------------------------------------------- 3. dates

DATES = np.array(["2020-01-01", "2021-03-01", "2020-05-01", "2022-01-01"], dtype="datetime64[ns]").reshape(-1, 1)
NUMERIC_ESTIMATORS = [
    bayesnb.GaussianNB,
    bayesnb.MultinomialNB,
    bayesnb.PoissonNB,
    bayesnb.BernoulliNB,
    lambda: bayesnb.GaussianBayesClassifier(covariance="diag"),
    lambda: bayesnb.GaussianBayesClassifier(covariance="full"),
]


@pytest.mark.parametrize("make", NUMERIC_ESTIMATORS)
@pytest.mark.parametrize("X", [DATES, DATES - DATES[0, 0]], ids=["datetime64", "timedelta64"])
def test_dates_and_durations_are_refused(make, X):
    with pytest.raises(TypeError, match="dates or durations"):
        make().fit(X, [0, 1, 0, 1])
    fitted = make().fit(np.arange(4.0).reshape(-1, 1), [0, 1, 0, 1])
    with pytest.raises(TypeError, match="dates or durations"):
        fitted.predict_proba(X)


def test_date_column_of_a_frame_is_named():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "when": DATES[:, 0]})
    with pytest.raises(TypeError, match="'when'"):
        bayesnb.GaussianNB().fit(frame, [0, 1, 0, 1])


# ---------------------------------------------------------------- 4. corrupt CSR

def _corrupt(kind):
    import scipy.sparse as sp

    C = sp.csr_matrix(X_COUNTS.astype(np.float64))
    if kind == "negative index":
        C.indices[0] = -1
    elif kind == "indptr past the data":
        C.indptr[-1] += 1000
    elif kind == "decreasing indptr":
        C.indptr[1], C.indptr[2] = C.indptr[2] + 1, C.indptr[1]
    elif kind == "indptr not from 0":
        C.indptr[0] = 1
    return C


CORRUPT = {
    "negative index": "column index of -1",
    "indptr past the data": "indptr ends at",
    "decreasing indptr": "indptr decreases at row 1",
    "indptr not from 0": "must start at 0",
}


def test_corrupt_csr_is_refused_in_a_subprocess():
    # In a child process: before the check, "indptr past the data" killed the process
    # with SIGSEGV, which must fail this test rather than the whole run.
    import pathlib
    import subprocess
    import sys

    code = """
import bayesnb
from tests.core.test_edges_r3 import _corrupt, CORRUPT, X_COUNTS, Y_COUNTS
for kind in sorted(CORRUPT):
    bad = _corrupt(kind)
    for make in (bayesnb.MultinomialNB, bayesnb.PoissonNB, bayesnb.BernoulliNB):
        est = make()
        for call in (lambda: est.fit(bad, Y_COUNTS), lambda: est.fit(X_COUNTS, Y_COUNTS).predict_proba(bad)):
            try:
                call()
            except ValueError as err:
                print(kind, "|REFUSED", err, flush=True)
            else:
                print(kind, "|ACCEPTED", flush=True)
"""
    root = pathlib.Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    lines = [ln for ln in done.stdout.splitlines() if "|" in ln]
    assert len(lines) == 6 * len(CORRUPT), done.stdout
    for ln in lines:
        kind, verdict = ln.split("|", 1)
        assert verdict.startswith("REFUSED") and CORRUPT[kind.strip()] in verdict, ln


def test_csr_with_spare_storage_reads_as_its_entries():
    import scipy.sparse as sp

    C = sp.csr_matrix(X_COUNTS.astype(np.float64))
    # Spare storage past indptr[-1] (as SciPy may leave): holds garbage that is no entry.
    spare = sp.csr_matrix(
        (np.r_[C.data, -5.0, 7.0], np.r_[C.indices, -3, 99].astype(C.indices.dtype), C.indptr.copy()), shape=C.shape
    )
    want = bayesnb.MultinomialNB().fit(C, Y_COUNTS).predict_proba(C)
    np.testing.assert_array_equal(bayesnb.MultinomialNB().fit(spare, Y_COUNTS).predict_proba(spare), want)


# ---------------------------------------------------------------- 2. tiny Gaussian scales

GAUSSIANS = [
    bayesnb.GaussianNB,
    lambda: bayesnb.GaussianBayesClassifier(covariance="diag"),
    lambda: bayesnb.GaussianBayesClassifier(covariance="full"),
]


def _iris():
    from sklearn.datasets import load_iris

    return load_iris(return_X_y=True)


@pytest.mark.parametrize("make", GAUSSIANS)
@pytest.mark.parametrize("scale", [1e-150, 1e-100, 1e150])
def test_gaussian_scaled_answer_equals_unscaled(make, scale):
    # The oracle: the unscaled computation. Class posteriors are scale-free; the
    # evidence (a density of n * d coordinates) shifts by -n d log(scale).
    X, y = _iris()
    ref = make().fit(X, y)
    got = make().fit(X * scale, y)
    np.testing.assert_allclose(got.predict_proba(X[::7] * scale), ref.predict_proba(X[::7]), atol=1e-10)
    np.testing.assert_allclose(got.log_evidence(), ref.log_evidence() - X.size * np.log(scale), rtol=1e-9)


@pytest.mark.parametrize("make", GAUSSIANS)
@pytest.mark.parametrize("scale", [1e-160, 1e-300])
def test_gaussian_spread_float64_cannot_square_is_refused_naming_the_feature(make, scale):
    X, y = _iris()
    X = X.copy()
    X[:, 2] *= scale
    with pytest.raises(ValueError, match=r"feature 2 \(0-based\) spreads over"):
        make().fit(X, y)


def test_constant_tiny_gaussian_feature_is_still_fitted():
    X, y = _iris()
    X = np.c_[X, np.full(len(y), 1e-300)]
    proba = bayesnb.GaussianNB().fit(X, y).predict_proba(X[::7])
    np.testing.assert_allclose(proba, bayesnb.GaussianNB().fit(X[:, :4], y).predict_proba(X[::7, :4]), atol=1e-6)


# ---------------------------------------------------------------- 5. huge category codes


@pytest.mark.parametrize(
    "code",
    [2.0**60, 2.0**63, 1e19, 1e308, np.uint64(2**63 + 5), np.int64(2**63 - 1)],
    ids=["2**60", "2**63", "1e19", "1e308", "uint64", "int64-max"],
)
def test_huge_category_codes_are_unseen_at_predict_and_refused_at_fit(code):
    X = np.array([[0], [1], [2], [1]])
    y = [0, 1, 0, 1]
    clf = bayesnb.CategoricalNB().fit(X, y)
    row = np.array([[code]])
    # The oracle: a code never seen in fit (3) has the same class posteriors.
    np.testing.assert_allclose(clf.predict_proba(row), clf.predict_proba(np.array([[3]])), rtol=1e-12)
    with pytest.raises(ValueError, match="too large to fit"):
        bayesnb.CategoricalNB().fit(np.r_[np.zeros((1, 1), dtype=row.dtype), row], [0, 1])


# ---------------------------------------------------------------- 7. tuple labels


@pytest.mark.parametrize(
    "labels",
    [[(1, 2), (3, 4), (1, 2), (3, 4)], [(1, 2), (3,), (1, 2), (3,)], "series"],
    ids=["equal-length", "ragged", "series"],
)
def test_tuple_labels_get_an_error_naming_the_labels(labels):
    if labels == "series":
        pd = pytest.importorskip("pandas")
        labels = pd.Series([(1, 2), (3, 4), (1, 2), (3, 4)])
    for make in (bayesnb.GaussianNB, bayesnb.MultinomialNB):
        with pytest.raises(TypeError, match=r"y holds a tuple as a label \(\(1, 2\) at position 0\)"):
            make().fit(np.arange(4.0).reshape(-1, 1), labels)


def test_column_vector_labels_stay_accepted():
    with pytest.warns(Warning):
        clf = bayesnb.GaussianNB().fit(np.arange(4.0).reshape(-1, 1), [[0], [1], [0], [1]])
    assert clf.classes_.tolist() == [0, 1]


def test_small_rows_with_invalid_concentrations_are_not_blamed_on_their_counts():
    # A downdate of the wrong class (a planted error of the LOO tests) leaves negative
    # concentrations: the values are NaN, as before, and no "beyond the float64 range"
    # refusal names a row of a dozen counts.
    import warnings

    import bayesnb
    from bayesnb.analysis import loo

    X = np.array([[3, 0, 1], [0, 4, 2], [1, 1, 5], [2, 2, 0], [0, 5, 1], [4, 1, 1]])
    y = np.array([0, 1, 2, 0, 1, 2])
    clf = bayesnb.MultinomialNB().fit(X, y)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        wrong = loo.feature_log_loo(clf.family_, clf.prior_, clf.stats_, X, (y + 1) % 3)
    assert wrong.shape == (6, 3)
