"""SemiSupervisedNB over CategoricalNB: the table of categories is learned from every row.

A category code (or DataFrame label) seen only in unlabelled rows is data of the same
model: its responsibility-weighted counts are legitimate, so the wrapped estimator's
``n_categories_`` (and ``categories_``) must be those a plain ``CategoricalNB`` learns
from all the rows, labelled or not. Before the fix the table came from the labelled rows
alone: one feature crashed in the family's ``posterior`` (a broadcast error), several
features could count codes past ``n_categories_`` silently (a model ``bayesnb.load``
refuses).

Oracles: ``CategoricalNB().fit(X_all, any labels)`` for the table; an independent NumPy
sum of the fitted responsibilities (``label_distributions_``, or
``component_responsibilities_`` with several components) times one-hot codes for the
final counts; a plain ``CategoricalNB`` conditioned on the same statistics
(``with_stats``) for predictions, a code unseen everywhere included.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import ConvergenceWarning

import bayesnb
from bayesnb import CategoricalNB, SemiSupervisedNB

Y = np.array([0, 1, 0, 1, -1, -1])
X_ONE = np.array([[0], [1], [0], [1], [2], [2]])
# Feature 0: code 2 only in unlabelled rows; feature 1: code 3 only in unlabelled rows,
# wider than feature 0 (the padded table held the extra count silently before the fix).
X_SEVERAL = np.array([[0, 0], [1, 1], [0, 2], [1, 1], [2, 3], [2, 0]])
# Two labelled rows per class, so that every class can start two components.
Y_TWO = np.array([0, 1, 0, 1, 0, 1, 0, 1, -1, -1, -1])
X_TWO = np.array([[0, 0], [1, 1], [0, 2], [1, 1], [0, 0], [1, 2], [0, 1], [1, 0], [2, 3], [2, 0], [2, 3]])

CASES = {
    "one-feature": (X_ONE, Y, 1),
    "several-features": (X_SEVERAL, Y, 1),
    # Two distinct labelled rows per class (rows 4 and 5), so that every class can start
    # two components: copies of a row start in one component.
    "one-feature-two-components": (
        np.array([[0], [1], [0], [1], [1], [0], [0], [1], [2], [2], [1]]), Y_TWO, 2),
    "several-features-two-components": (X_TWO, Y_TWO, 2),
}


def _fit(X, y, method, n_components, **kw):
    # EM: tol=0 and a few iterations, so that it runs to max_iter. EM stops on a settled
    # objective after an E-step (the model returned is conditioned on the previous
    # responsibilities, which are not kept); running out of iterations ends on an M-step,
    # so that the stored responsibilities are those behind the final statistics.
    opts = {"tol": 0.0, "max_iter": 6} if method == "em" else {}
    opts.update(kw)
    semi = SemiSupervisedNB(CategoricalNB(), unlabelled_weight=1, method=method, n_components=n_components,
                            random_state=0, **opts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return semi.fit(X, y)


@pytest.fixture(scope="module", autouse=True)
def _compiled():
    # The first categorical VB fit of a process compiles its JAX kernels (seconds); done
    # once here so that each test times its own work.
    # Every code labelled here, so that the warm-up does not depend on the fix.
    _fit(X_ONE, np.array([0, 1, 0, 1, 0, -1]), "vb", 1)
    _fit(X_TWO, np.where(np.arange(11) == 8, 0, np.where(np.arange(11) == 9, 1, Y_TWO)), "vb", 2)


def _responsibilities(semi):
    return semi.component_responsibilities_ if semi._has_components() else semi.label_distributions_


def _weighted_counts(X, R, n_categories, row_weight):
    """Independent oracle: sum_i row_weight_i R[i, c] [X_ij == k], one (n_cols, K_j) table per feature."""
    out = []
    for j, K in enumerate(n_categories):
        onehot = (X[:, j][:, None] == np.arange(K)[None, :]).astype(np.float64)
        out.append((R * row_weight[:, None]).T @ onehot)
    return out


@pytest.mark.parametrize("method", ["em", "vb"])
@pytest.mark.parametrize("case", list(CASES))
def test_the_table_holds_every_row_and_the_counts_are_the_responsibilities(case, method):
    X, y, k = CASES[case]
    semi = _fit(X, y, method, k)
    est = semi.estimator_
    plain = CategoricalNB().fit(X, np.where(y == -1, 0, y))
    np.testing.assert_array_equal(est.n_categories_, plain.n_categories_)
    if method == "em":
        # See _fit; a settled objective here is a fixed point (the one-feature rows are
        # symmetric: the responsibilities are 1/2 from the first E-step on).
        assert not semi.converged_ or semi.log_posterior_[-1] == semi.log_posterior_[-2]
    R = _responsibilities(semi)
    np.testing.assert_allclose(R.sum(axis=1), 1.0, atol=1e-12)
    expected = _weighted_counts(X, R, plain.n_categories_, np.ones(len(y)))
    assert len(est.category_count_) == X.shape[1]
    for got, want in zip(est.category_count_, expected):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-10)
    # The unlabelled-only code carries weight: the silent bug counted it past the table.
    assert all(c[:, -1].sum() > 0 for c in est.category_count_)


@pytest.mark.parametrize("method", ["em", "vb"])
@pytest.mark.parametrize("case", ["several-features", "several-features-two-components"])
def test_the_model_saves_and_loads(case, method, tmp_path):
    X, y, k = CASES[case]
    semi = _fit(X, y, method, k)
    path = tmp_path / "semi.bnb"
    semi.save(path)
    loaded = bayesnb.load(path)
    X_new = np.vstack([X, [[2, 3], [0, 0]]])
    np.testing.assert_array_equal(loaded.predict_proba(X_new), semi.predict_proba(X_new))
    np.testing.assert_array_equal(loaded.estimator_.n_categories_, semi.estimator_.n_categories_)


@pytest.mark.parametrize("method", ["em", "vb"])
def test_a_code_unseen_everywhere_predicts_as_in_plain_categorical(method):
    semi = _fit(X_SEVERAL, Y, method, 1)
    est = semi.estimator_
    # A plain CategoricalNB with the same table, prior, estimate and statistics.
    plain = CategoricalNB(estimate=est.estimate).fit(X_SEVERAL, np.where(Y == -1, 0, Y))
    plain = plain.with_stats(est.stats_)
    X_new = np.array([[5, 0], [0, 7], [2, 3], [9, 9]])  # codes 5, 7, 9 in no training row
    got = semi.predict_proba(X_new)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, plain.predict_proba(X_new), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("method", ["em", "vb"])
def test_labels_seen_only_in_unlabelled_rows_are_learned(method):
    frame = pd.DataFrame({"colour": ["red", "blue", "red", "blue", "green", "green"],
                          "size": ["s", "l", "l", "s", "m", "s"]})
    semi = _fit(frame, Y, method, 1)
    est = semi.estimator_
    plain = CategoricalNB().fit(frame, np.where(Y == -1, 0, Y))
    assert {j: v.tolist() for j, v in est.categories_.items()} == {j: v.tolist() for j, v in plain.categories_.items()}
    np.testing.assert_array_equal(est.n_categories_, plain.n_categories_)
    codes = np.column_stack([np.searchsorted(plain.categories_[j], frame.iloc[:, j].to_numpy(dtype=object))
                             for j in range(2)])
    expected = _weighted_counts(codes, semi.label_distributions_, plain.n_categories_, np.ones(6))
    for got, want in zip(est.category_count_, expected):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-10)
    # A label in no training row: the share of a new category, as CategoricalNB's own.
    new = pd.DataFrame({"colour": ["purple", "green"], "size": ["xl", "m"]})
    twin = CategoricalNB(estimate=est.estimate).fit(frame, np.where(Y == -1, 0, Y)).with_stats(est.stats_)
    np.testing.assert_allclose(semi.predict_proba(new), twin.predict_proba(new), rtol=1e-12, atol=1e-14)


def test_min_categories_and_sample_weight_are_kept():
    w = np.array([1.0, 2.0, 1.0, 0.5, 3.0, 1.5])
    semi = SemiSupervisedNB(CategoricalNB(min_categories=[4, 2]), unlabelled_weight=0.5, method="vb")
    semi.fit(X_SEVERAL, Y, sample_weight=w)
    est = semi.estimator_
    plain = CategoricalNB(min_categories=[4, 2]).fit(X_SEVERAL, np.where(Y == -1, 0, Y))
    np.testing.assert_array_equal(est.n_categories_, plain.n_categories_)
    np.testing.assert_array_equal(est.n_categories_, [4, 4])
    row_weight = np.where(Y == -1, 0.5, 1.0) * w
    expected = _weighted_counts(X_SEVERAL, semi.label_distributions_, plain.n_categories_, row_weight)
    for got, want in zip(est.category_count_, expected):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-10)

