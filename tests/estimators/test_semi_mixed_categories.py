"""SemiSupervisedNB over MixedNB: the labels and tables of categories are learned from every row.

The categorical counterpart of ``test_semi_categories.py`` for a product model: a string
label or an integer category code seen only in unlabelled rows is data of the same model,
so the wrapped ``MixedNB``'s ``categories_`` and its categorical block's ``n_categories_``
must be those a plain ``MixedNB`` learns from all the rows, labelled or not. Before the
fix they came from the labelled rows alone: VB failed in the categorical family
(``broadcast (2,2,2) vs (2,2,3)``), EM found the unlabelled rows of "zero likelihood", and
a code past one feature's table could be counted in another's padding silently.

Oracles: ``MixedNB(...).fit(X_all, any labels)`` for ``categories_`` and the tables; an
independent NumPy sum of the fitted responsibilities (``label_distributions_``, or
``component_responsibilities_`` with several components) times one-hot codes for the
categorical block's final counts (over the padded width, so a count hidden in padding
shows); a plain ``MixedNB`` conditioned on the same statistics (``with_stats``) for
predictions, a label and a code seen in no training row included.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import ConvergenceWarning

import bayesnb
from bayesnb import CategoricalNB, GaussianNB, MixedNB, SemiSupervisedNB
from bayesnb.core.priors import NormalInverseGamma

# "z" (colour) and code 2 (k) only in unlabelled rows; k is the wider feature, so that a
# count of its code 2 could hide in a padded table if colour's were learned alone.
FRAME = pd.DataFrame({
    "g": [0.1, 1.2, 0.3, 1.1, 0.2, 1.0, 0.4, 0.9, 0.5, 0.7, 0.6],
    "colour": ["a", "b", "a", "b", "b", "a", "a", "b", "z", "z", "a"],
    "k": [0, 1, 0, 1, 0, 1, 1, 0, 2, 1, 2],
})
Y_ONE = np.array([0, 1, 0, 1, 0, 1, 0, 1, -1, -1, -1])  # also two labelled rows per class per component
COLUMNS = ["colour", "k"]


def _explicit(**kw):
    # A fixed Gaussian prior (not scaled to the rows it is fitted on), so that a plain
    # MixedNB fitted on other rows has the same one; alpha=2, so that EM's MAP gives a
    # category unobserved in a class positive probability (alpha=1 gives it zero).
    gauss = GaussianNB(prior=NormalInverseGamma(loc=0.5, kappa=0.1, concentration=2.0, rate=0.5))
    return MixedNB([("gaussian", gauss, ["g"]), ("categorical", CategoricalNB(alpha=2.0), COLUMNS)], **kw)


def _inferred(**kw):
    return MixedNB(integer_columns="categorical", **kw)


def _fit(model, X, y, method, n_components, **kw):
    # EM: tol=0 and a few iterations, so that it runs to max_iter and ends on an M-step
    # (see test_semi_categories._fit): the stored responsibilities are then those behind
    # the final statistics. The Gaussian block has no concentrations: smoothing="none".
    opts = {"tol": 0.0, "max_iter": 6, "smoothing": "none"} if method == "em" else {}
    opts.update(kw)
    semi = SemiSupervisedNB(model, unlabelled_weight=1, method=method, n_components=n_components,
                            random_state=0, **opts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return semi.fit(X, y)


@pytest.fixture(scope="module", autouse=True)
def _compiled():
    # The first VB/EM fits of a process compile their JAX kernels (seconds); done once
    # here so that each test times its own work. Every label and code is labelled here,
    # so that the warm-up does not depend on the fix.
    y = np.where(np.arange(11) == 8, 0, np.where(np.arange(11) >= 9, 1, Y_ONE))
    for method in ("vb", "em"):
        for k in (1, 2):
            _fit(_explicit(), FRAME, y, method, k)


def _codes(X, plain):
    """Each categorical column's codes under ``plain``'s labels (a numeric column: its values)."""
    out = []
    for name in COLUMNS:
        j = list(X.columns).index(name)
        col = X[name]
        if j in plain.categories_:
            codes = np.searchsorted(plain.categories_[j].astype(str), col.to_numpy(dtype=str)).astype(np.float64)
            codes[col.isna().to_numpy()] = np.nan
        else:
            codes = col.to_numpy(dtype=np.float64)
        out.append(codes)
    return np.column_stack(out)


def _weighted_counts(codes, R, width, row_weight):
    """Independent oracle: sum_i w_i R[i, c] [codes_ij == k] for k < width, one (n_cols, width) table per feature."""
    onehot = (codes[:, :, None] == np.arange(width)[None, None, :]).astype(np.float64)  # NaN: no category
    return np.einsum("ic,ijk->cjk", R * row_weight[:, None], onehot)


def _responsibilities(semi):
    return semi.component_responsibilities_ if semi._has_components() else semi.label_distributions_


def _check_tables_and_counts(semi, model, X, y):
    est = semi.estimator_
    plain = model.fit(X, np.where(y == -1, 0, y))
    assert {j: v.tolist() for j, v in est.categories_.items()} == {j: v.tolist() for j, v in plain.categories_.items()}
    block, twin = est.named_estimators_["categorical"], plain.named_estimators_["categorical"]
    np.testing.assert_array_equal(block.n_categories_, twin.n_categories_)
    if semi.method == "em":
        # See _fit; a settled objective here is a fixed point.
        assert not semi.converged_ or semi.log_posterior_[-1] == semi.log_posterior_[-2]
    R = _responsibilities(semi)
    np.testing.assert_allclose(R.sum(axis=1), 1.0, atol=1e-12)
    # The final statistics are the product's (the blocks may hold the labelled fit's).
    counts = np.asarray(est.stats_.blocks["categorical"].category_count)
    assert counts.shape[:2] == (R.shape[1], len(COLUMNS))
    expected = _weighted_counts(_codes(X, plain), R, counts.shape[2], np.ones(len(y)))
    np.testing.assert_allclose(counts, expected, rtol=0, atol=1e-10)
    # The unlabelled-only label and code carry weight: the bug had no slot for them.
    assert counts[:, 0, 2].sum() > 0 and counts[:, 1, 2].sum() > 0
    return est


@pytest.mark.parametrize("n_components", [1, 2])
@pytest.mark.parametrize("method", ["em", "vb"])
def test_the_tables_hold_every_row_and_the_counts_are_the_responsibilities(method, n_components):
    semi = _fit(_explicit(), FRAME, Y_ONE, method, n_components)
    est = _check_tables_and_counts(semi, _explicit(), FRAME, Y_ONE)
    np.testing.assert_array_equal(est.named_estimators_["categorical"].n_categories_, [3, 3])


@pytest.mark.parametrize("n_components", [1, 2])
def test_inferred_blocks_with_integer_columns_categorical(n_components):
    # blocks=None: g Gaussian, colour and k (integer_columns="categorical") categorical.
    # VB only: EM's MAP under the inferred block's alpha=1 gives "z" zero probability in
    # every class, which EM refuses (rightly) as a zero likelihood.
    semi = _fit(_inferred(), FRAME, Y_ONE, "vb", n_components)
    assert semi.estimator_.feature_blocks_ == {"g": "gaussian", "colour": "categorical", "k": "categorical"}
    _check_tables_and_counts(semi, _inferred(), FRAME, Y_ONE)


@pytest.mark.parametrize("method", ["em", "vb"])
def test_missing_values_are_left_out(method):
    X = FRAME.assign(colour=FRAME["colour"].where(np.arange(11) != 2),  # a labelled NaN
                     k=FRAME["k"].astype(np.float64).where(np.arange(11) != 10))  # an unlabelled NaN
    semi = _fit(_explicit(missing="ignore"), X, Y_ONE, method, 1)
    _check_tables_and_counts(semi, _explicit(missing="ignore"), X, Y_ONE)


@pytest.mark.parametrize("method", ["em", "vb"])
@pytest.mark.parametrize("n_components", [1, 2])
def test_the_model_saves_and_loads(method, n_components, tmp_path):
    semi = _fit(_explicit(), FRAME, Y_ONE, method, n_components)
    path = tmp_path / "semi.bnb"
    semi.save(path)
    loaded = bayesnb.load(path)
    X_new = pd.concat([FRAME, pd.DataFrame({"g": [0.5, 2.0], "colour": ["purple", "z"], "k": [7, 2]})],
                      ignore_index=True)
    np.testing.assert_array_equal(loaded.predict_proba(X_new), semi.predict_proba(X_new))
    assert {j: v.tolist() for j, v in loaded.estimator_.categories_.items()} == {1: ["a", "b", "z"]}


@pytest.mark.parametrize("method", ["em", "vb"])
def test_a_label_unseen_everywhere_predicts_as_in_plain_mixed(method):
    semi = _fit(_explicit(), FRAME, Y_ONE, method, 1)
    est = semi.estimator_
    # A plain MixedNB with the same labels, tables, priors, estimate and statistics.
    twin = _explicit(estimate=est.estimate).fit(FRAME, np.where(Y_ONE == -1, 0, Y_ONE)).with_stats(est.stats_)
    X_new = pd.DataFrame({"g": [0.5, 0.1, 1.3, 0.8], "colour": ["purple", "z", "a", "grey"], "k": [0, 9, 2, 5]})
    got = semi.predict_proba(X_new)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, twin.predict_proba(X_new), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("method", ["em", "vb"])
def test_a_wider_labelled_feature_hides_no_count_in_its_padding(method):
    # k's code 2 now in a labelled row: the block's padded width is 3 from the labelled
    # rows alone, so a "z" (colour code 2) counted past colour's table would not fail
    # in the family but sit, uncounted by the model, in colour's padding.
    X = FRAME.assign(k=np.where(np.arange(11) == 0, 2, FRAME["k"]))
    semi = _fit(_explicit(), X, Y_ONE, method, 1)
    _check_tables_and_counts(semi, _explicit(), X, Y_ONE)
