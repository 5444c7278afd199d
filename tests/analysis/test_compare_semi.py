"""bayesnb.compare on SemiSupervisedNB (issue 37): unlabelled rows train, never score.

Oracle: the same folds rebuilt by hand (the splitter compare seeds from ``random_state``,
over the labelled rows), each fold's model fitted by hand on the fold's labelled rows
plus every unlabelled row, and scikit-learn's ``log_loss`` / ``accuracy_score`` of the
pooled out-of-fold predictions, to 1e-9.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import StratifiedKFold

from bayesnb import MultinomialNB, SemiSupervisedNB, compare

RNG = np.random.default_rng(3)
N = 48
X = np.vstack([RNG.poisson([4, 1, 1, 2], (N // 2, 4)), RNG.poisson([1, 1, 4, 2], (N // 2, 4))])
Y = np.repeat([0, 1], N // 2)
YU = Y.copy()
YU[RNG.random(N) < 0.5] = -1
LAB, UNL = np.flatnonzero(YU != -1), np.flatnonzero(YU == -1)


def _semi(**kw):
    return SemiSupervisedNB(MultinomialNB(), unlabelled_weight=1, **kw)


def _folds(random_state, k):
    # compare's splitter: StratifiedKFold seeded by the first integer of its generator.
    seed = int(np.random.default_rng(random_state).integers(2**31 - 1))
    return list(StratifiedKFold(k, shuffle=True, random_state=seed).split(np.zeros((LAB.size, 1)), YU[LAB]))


def _by_hand(model, semi_supervised, k=3, random_state=0, drop_unlabelled=False):
    oof = np.zeros((LAB.size, 2))
    for train, test in _folds(random_state, k):
        rows = LAB[train]
        if semi_supervised and not drop_unlabelled:
            rows = np.sort(np.concatenate([rows, UNL]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted = clone(model).fit(X[rows], YU[rows])
        oof[test] = fitted.predict_proba(X[LAB[test]])
    return oof


@pytest.mark.parametrize("method", ["em", "vb"])
def test_cv_scores_labelled_rows_out_of_fold_with_every_unlabelled_row_in_training(method):
    semi = _semi(method=method)
    table = compare({"semi": semi, "supervised": MultinomialNB()}, X, YU, cv=3, n_bootstrap=0, as_frame=False)
    assert table.attrs["n_test"] == LAB.size and table.attrs["n_unlabelled"] == UNL.size
    own = semi.fit(X, YU).estimator_.estimate  # EM (Laplace): "mean"; VB: "predictive"
    oof = _by_hand(semi, True)
    row = table.row("semi", own)
    assert row["log_loss"] == pytest.approx(log_loss(YU[LAB], oof), abs=1e-9)
    assert row["accuracy"] == pytest.approx(accuracy_score(YU[LAB], oof.argmax(1)), abs=1e-9)
    assert row["log_evidence"] is None and "unlabelled_weight_=1" in row["hyperparameters"]
    # the supervised model of the same table: the same folds' labelled rows alone
    sup = _by_hand(MultinomialNB(), False)
    assert table.row("supervised", "predictive")["log_loss"] == pytest.approx(log_loss(YU[LAB], sup), abs=1e-9)
    # Planted error: a fold fitted without its unlabelled rows scores differently, so
    # the comparison above can fail.
    dropped = _by_hand(semi, True, drop_unlabelled=True)
    assert abs(log_loss(YU[LAB], dropped) - row["log_loss"]) > 1e-4


def test_other_estimates_are_of_the_same_fitted_posterior():
    semi = _semi(method="vb")
    table = compare(semi, X, YU, cv=3, n_bootstrap=0, as_frame=False)
    oof = np.zeros((LAB.size, 2))
    for train, test in _folds(0, 3):
        rows = np.sort(np.concatenate([LAB[train], UNL]))
        fitted = clone(semi).fit(X[rows], YU[rows])
        inner = fitted.estimator_.set_params(estimate="mean")
        oof[test] = inner.predict_proba(X[LAB[test]])
    assert table.row("mean")["log_loss"] == pytest.approx(log_loss(YU[LAB], oof), abs=1e-9)


def test_holdout_and_refit_false_with_components():
    semi = _semi(n_components=2)
    X_test, y_test = X[LAB[:10]] + 1, YU[LAB[:10]]
    table = compare(semi, X, YU, X_test, y_test, n_bootstrap=0, as_frame=False)
    fitted = clone(semi).fit(X, YU)
    want = log_loss(y_test, fitted.predict_proba(X_test), labels=[0, 1])
    assert table.row("mean")["log_loss"] == pytest.approx(want, abs=1e-9)
    again = compare(fitted, None, None, X_test, y_test, refit=False, n_bootstrap=0, as_frame=False)
    assert again.row("mean")["log_loss"] == pytest.approx(want, abs=1e-9)


def test_learning_curve_sizes_count_labelled_rows():
    table = compare(_semi(), X, YU, X[LAB], YU[LAB], train_sizes=[8, LAB.size], n_repeats=2, n_bootstrap=0,
                    as_frame=False)
    assert table.attrs["train_sizes"] == [8, LAB.size]
    with pytest.raises(ValueError, match=f"the training set has {LAB.size}"):
        compare(_semi(), X, YU, X[LAB], YU[LAB], train_sizes=[LAB.size + 1], n_bootstrap=0, as_frame=False)


def test_refusals_name_the_reason():
    with pytest.raises(ValueError, match="calibrate='loo'"):
        compare(_semi(), X, YU, cv=3, calibrated=True, n_bootstrap=0, as_frame=False)
    with pytest.raises(ValueError, match="y_test holds unlabelled rows"):
        compare(_semi(), X, YU, X[:5], YU[:5] * 0 - 1, n_bootstrap=0, as_frame=False)


def test_without_a_semi_supervised_model_minus_one_is_a_label():
    table = compare(MultinomialNB(), X, YU, cv=3, n_bootstrap=0, as_frame=False)
    assert table.attrs["n_test"] == N and "n_unlabelled" not in table.attrs
