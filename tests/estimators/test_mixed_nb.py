"""MixedNB: one naive Bayes model over blocks of columns of different families.

Oracles: each block fitted on its own as a standalone estimator (its feature part is its
``predict_joint_log_proba`` minus its ``class_log_prior_``, its evidence minus its label
part); the label part of the evidence written with ``scipy.special.gammaln``; the chain
rule of predictives for the evidence, with the first row's prior predictive written with
scipy distributions; scikit-learn's ``OrdinalEncoder`` for the category codes; and
scikit-learn's estimator checks.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from scipy import stats
from scipy.special import gammaln
from sklearn.base import clone
from sklearn.naive_bayes import GaussianNB as SkGaussianNB
from sklearn.preprocessing import OrdinalEncoder
from sklearn.utils.estimator_checks import parametrize_with_checks

from bayesnb.core.priors import NormalInverseGamma
from bayesnb.estimators.discrete import BernoulliNB, CategoricalNB
from bayesnb.estimators.gaussian import GaussianNB
from bayesnb.estimators.mixed import MixedNB
from bayesnb.estimators.poisson import PoissonNB
from bayesnb.exceptions import ZeroLikelihoodWarning

ESTIMATES = ("mle", "map", "mean", "predictive")
# The int64 column "count" holds counts: the inferred blocks model it as such only on
# request (an integer column is Gaussian by default, tests/estimators/test_mixed_integer_columns.py).
COUNTS = "poisson"
CAT_ORDER = ["lo", "mid", "hi"]


def _frame(n, seed):
    rng = np.random.default_rng(seed)
    y = rng.choice(np.array(["a", "b", "c"]), n)
    shift = (y == "b") * 1.5 - (y == "c") * 1.0
    X = pd.DataFrame(
        {
            "x1": rng.normal(size=n) + shift,
            "x2": rng.normal(size=n) * 2.0 - shift,
            "flag": rng.random(n) < np.where(y == "a", 0.7, 0.3),
            "grade": pd.Categorical(rng.choice(CAT_ORDER, n), categories=CAT_ORDER),
            "colour": rng.choice(np.array(["red", "green", "blue", "cyan"]), n).astype(object),
            "count": rng.poisson(np.where(y == "c", 4.0, 1.5)).astype(np.int64),
        }
    )
    return X, y


@pytest.fixture(scope="module")
def data():
    X, y = _frame(60, 0)
    X_test, _ = _frame(15, 1)
    X_test.loc[3, "colour"] = "purple"  # never seen in training
    return X, y, X_test


def _codes(X_train, X):
    """Category codes of the two categorical columns, from scikit-learn's OrdinalEncoder."""
    enc = OrdinalEncoder(
        categories=[CAT_ORDER, sorted(set(X_train["colour"]))],
        handle_unknown="use_encoded_value",
        unknown_value=-1,
    ).fit(X_train[["grade", "colour"]].astype(object))
    codes = enc.transform(X[["grade", "colour"]].astype(object)).astype(np.int64)
    # An unseen value is a code past the table: CategoricalNB's new-category share.
    codes[codes[:, 1] == -1, 1] = len(enc.categories_[1])
    return codes


def _standalone(X, y, X_test, **kw):
    """Each block fitted on its own columns: (estimator, train part, test part) per block."""
    parts = [
        (GaussianNB(**kw), X[["x1", "x2"]], X_test[["x1", "x2"]]),
        (BernoulliNB(binarize=None, **kw), X[["flag"]], X_test[["flag"]]),
        (CategoricalNB(**kw), _codes(X, X), _codes(X, X_test)),
        (PoissonNB(**kw), X[["count"]], X_test[["count"]]),
    ]
    return [(est.fit(Xtr, y), Xtr, Xte) for est, Xtr, Xte in parts]


def _label_log_evidence(y, class_alpha=1.0):
    n = np.array([np.sum(y == c) for c in np.unique(y)], dtype=float)
    beta = np.full(n.size, class_alpha)
    return gammaln(beta.sum()) - gammaln(beta.sum() + n.sum()) + np.sum(gammaln(beta + n) - gammaln(beta))


# ------------------------------------------------------------ the sum of the blocks


@pytest.mark.parametrize("estimate", ESTIMATES)
def test_joint_is_class_prior_plus_sum_of_standalone_blocks(data, estimate):
    X, y, X_test = data
    mixed = MixedNB(estimate=estimate, integer_columns=COUNTS).fit(X, y)
    assert [(name, type(est).__name__) for name, est, _ in mixed.estimators_] == [
        ("gaussian", "GaussianNB"),
        ("bernoulli", "BernoulliNB"),
        ("categorical", "CategoricalNB"),
        ("poisson", "PoissonNB"),
    ]
    blocks = _standalone(X, y, X_test, estimate=estimate)
    feature = sum(est.predict_joint_log_proba(Xte) - est.class_log_prior_ for est, _, Xte in blocks)
    n = np.array([np.sum(y == c) for c in np.unique(y)], float)
    if estimate == "mle":
        class_log = np.log(n / n.sum())
    elif estimate == "map":
        class_log = np.log(n / n.sum())  # Dir(1): (N_c + 1 - 1) / (N + C - C)
    else:
        class_log = np.log((n + 1) / (n.sum() + 3))
    joint = mixed.predict_joint_log_proba(X_test)
    finite = np.ones(len(X_test), bool)
    if estimate in ("mle", "map"):
        # The unseen colour has probability zero in every class under the maximum
        # likelihood and under the mode of Dir(1 + counts) (its concentration is 1).
        finite[3] = False
        assert np.all(np.isneginf(joint[3]))
    assert np.all(np.isfinite(joint[finite]))
    assert_allclose(mixed.class_log_prior_, class_log, rtol=1e-12)
    assert_allclose(joint, class_log + feature, rtol=1e-10, atol=1e-10)
    # Changing the estimate after fit gives the same as fitting with it.
    other = MixedNB(integer_columns=COUNTS).fit(X, y).set_params(estimate=estimate)
    assert_allclose(other.predict_joint_log_proba(X_test), joint, rtol=1e-12, atol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore" if estimate in ("mle", "map") else "error", ZeroLikelihoodWarning)
        proba = mixed.predict_proba(X_test)
    assert np.all(np.isfinite(proba)) and np.all(proba >= 0)
    assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    assert_allclose(
        np.log(proba[finite]), joint[finite] - np.logaddexp.reduce(joint[finite], axis=1, keepdims=True), atol=1e-10
    )


@pytest.mark.parametrize(
    "class_kw",
    [{}, {"class_alpha": 2.5}, {"class_prior": [0.2, 0.3, 0.5]}, {"fit_prior": False}],
    ids=["dirichlet", "class_alpha", "class_prior", "uniform"],
)
def test_log_evidence_is_label_part_plus_standalone_feature_parts(data, class_kw):
    X, y, _ = data
    mixed = MixedNB(**class_kw, integer_columns=COUNTS).fit(X, y)
    n = np.array([np.sum(y == c) for c in np.unique(y)], float)
    if "class_prior" in class_kw:
        label = np.sum(n * np.log(class_kw["class_prior"]))
    elif class_kw.get("fit_prior", True) is False:
        label = n.sum() * np.log(1 / 3)
    else:
        label = _label_log_evidence(y, class_kw.get("class_alpha", 1.0))
    # Standalone blocks with the default Dir(1) on the classes: subtract that label part.
    blocks = _standalone(X, y, X)
    feature = sum(est.log_evidence() - _label_log_evidence(y) for est, _, _ in blocks)
    assert_allclose(mixed.log_evidence(), label + feature, rtol=1e-10)


def test_log_evidence_is_chain_rule_of_predictives():
    X, y = _frame(10, 3)
    # A fixed Gaussian prior (the default is refitted to the data, so it is not a prior).
    nig = NormalInverseGamma(loc=0.5, kappa=0.3, concentration=2.0, rate=1.5)
    blocks = [
        ("num", GaussianNB(prior=nig), ["x1", "x2"]),
        ("flag", BernoulliNB(binarize=None, alpha=(2.0, 1.0)), ["flag"]),
        ("cat", CategoricalNB(alpha=0.7), ["grade"]),
        ("cnt", PoissonNB(alpha=2.0, beta=0.5), ["count"]),
    ]
    model = MixedNB(blocks, remainder="drop", class_alpha=1.5)
    classes = np.unique(y)
    full = clone(model).fit(X, y)
    # First row: prior predictive written by hand with scipy.
    x0, c0 = X.iloc[0], int(np.searchsorted(classes, y[0]))
    t_scale = np.sqrt(1.5 * (0.3 + 1) / (2.0 * 0.3))
    total = (
        np.log(1.5 / 4.5)
        + stats.t.logpdf([x0["x1"], x0["x2"]], df=4.0, loc=0.5, scale=t_scale).sum()
        + np.log(2.0 / 3.0 if x0["flag"] else 1.0 / 3.0)
        + np.log(1 / 3)  # symmetric Dirichlet over the 3 declared grades
        + stats.nbinom.logpmf(x0["count"], 2.0, 0.5 / 1.5)
    )
    for i in range(1, len(y)):
        est = clone(model).partial_fit(X.iloc[:i], y[:i], classes=classes)
        joint = est.predict_joint_log_proba(X.iloc[[i]])
        total += joint[0, np.searchsorted(classes, y[i])]
    assert_allclose(full.log_evidence(), total, rtol=1e-10)


def test_explicit_blocks_on_numpy_equal_dataframe_inference(data):
    X, y, X_test = data

    def as_numpy(frame):
        return np.column_stack(
            [frame[["x1", "x2"]].to_numpy(), frame["flag"].to_numpy(float), _codes(X, frame), frame["count"]]
        )

    blocks = [
        ("gaussian", GaussianNB(), [0, 1]),
        ("bernoulli", BernoulliNB(binarize=None), np.array([False, False, True, False, False, False])),
        ("categorical", CategoricalNB(), slice(3, 5)),
        ("poisson", PoissonNB(), [-1]),
    ]
    inferred = MixedNB(integer_columns=COUNTS).fit(X, y)
    explicit = MixedNB(blocks).fit(as_numpy(X), y)
    for estimate in ESTIMATES:
        inferred.set_params(estimate=estimate)
        explicit.set_params(estimate=estimate)
        assert_allclose(
            explicit.predict_joint_log_proba(as_numpy(X_test)), inferred.predict_joint_log_proba(X_test), rtol=1e-12
        )
    assert_allclose(explicit.log_evidence(), inferred.log_evidence(), rtol=1e-12)
    # Named columns on the DataFrame select the same.
    named = MixedNB(
        [
            ("gaussian", GaussianNB(), ["x1", "x2"]),
            ("bernoulli", BernoulliNB(binarize=None), "flag"),
            ("categorical", CategoricalNB(), ["grade", "colour"]),
            ("poisson", PoissonNB(), ["count"]),
        ]
    ).fit(X, y)
    assert_allclose(named.predict_joint_log_proba(X_test), inferred.predict_joint_log_proba(X_test), rtol=1e-12)


def test_fit_equals_chained_partial_fit(data):
    X, y, X_test = data
    fitted = MixedNB(integer_columns=COUNTS).fit(X, y)
    chained = MixedNB(integer_columns=COUNTS)
    for rows in np.array_split(np.arange(len(y)), 3):
        chained.partial_fit(X.iloc[rows], y[rows], classes=np.unique(y))
    for estimate in ESTIMATES:
        fitted.set_params(estimate=estimate)
        chained.set_params(estimate=estimate)
        assert_allclose(
            chained.predict_joint_log_proba(X_test), fitted.predict_joint_log_proba(X_test), rtol=1e-10, atol=1e-10
        )
    assert_allclose(chained.log_evidence(), fitted.log_evidence(), rtol=1e-10)
    assert_allclose(chained.class_count_, fitted.class_count_)


def test_sample_weight_equals_duplicated_rows(data):
    X, y, X_test = data
    w = np.arange(len(y)) % 3
    keep = w > 0
    weighted = MixedNB(integer_columns=COUNTS).fit(X[keep], y[keep], sample_weight=w[keep])
    rows = np.repeat(np.flatnonzero(keep), w[keep])
    duplicated = MixedNB(integer_columns=COUNTS).fit(X.iloc[rows], y[rows])
    assert_allclose(weighted.predict_joint_log_proba(X_test), duplicated.predict_joint_log_proba(X_test), rtol=1e-10)
    assert_allclose(weighted.log_evidence(), duplicated.log_evidence(), rtol=1e-10)


def test_remainder_drop_equals_model_without_the_column(data):
    X, y, X_test = data
    blocks = [("g", GaussianNB(), ["x1", "x2"]), ("p", PoissonNB(), ["count"])]
    dropped = MixedNB(blocks, remainder="drop").fit(X, y)
    direct = MixedNB(integer_columns=COUNTS).fit(X[["x1", "x2", "count"]], y)
    expected = direct.predict_joint_log_proba(X_test[["x1", "x2", "count"]])
    assert_allclose(dropped.predict_joint_log_proba(X_test), expected, rtol=1e-12)


# -------------------------------------------------------------------------- draws


def test_sample_posterior_keys_and_shapes(data):
    X, y, X_test = data
    mixed = MixedNB(integer_columns=COUNTS).fit(X, y)
    draws = mixed.sample_posterior(7, random_state=0)
    assert {k: v.shape for k, v in draws.items()} == {
        "class_probs": (7, 3),
        "gaussian__loc": (7, 3, 2),
        "gaussian__var": (7, 3, 2),
        "bernoulli__feature_probs": (7, 3, 1),
        "categorical__feature_probs": (7, 3, 2, 4),
        "poisson__rate": (7, 3, 1),
    }
    assert_allclose(draws["class_probs"].sum(axis=1), 1.0, rtol=1e-12)
    again = mixed.sample_posterior(7, random_state=0)
    for key in draws:
        np.testing.assert_array_equal(draws[key], again[key])
    # Blocks draw with their own keys: the two Gaussian columns are not copies of another block.
    assert not np.allclose(draws["gaussian__loc"][:, :, 0], draws["gaussian__loc"][:, :, 1])


def test_predict_proba_draws_average_over_many_draws(data):
    X, y, X_test = data
    mixed = MixedNB(estimate="mean", integer_columns=COUNTS).fit(X, y)
    draws = mixed.predict_proba_draws(X_test, n_draws=400, random_state=1)
    assert draws.shape == (400, len(X_test), 3)
    assert np.all(np.isfinite(draws))
    assert_allclose(draws.sum(axis=2), 1.0, rtol=1e-12)
    # One draw scores every block with parameters from the posterior: with 60 rows the
    # draws scatter around the posterior-mean answer, not around something else.
    mean = draws.mean(axis=0)
    sem = draws.std(axis=0) / np.sqrt(400)
    assert np.all(np.abs(mean - mixed.predict_proba(X_test)) < 5 * sem + 0.08)
    lower, upper = mixed.predict_proba_interval(X_test, 0.9, n_draws=200, random_state=2)
    assert np.all(lower <= upper)


# ---------------------------------------------------------------------- bad input


def test_bad_inputs_raise_clear_errors(data):
    X, y, X_test = data
    with pytest.raises(TypeError, match="unknown estimator type GaussianNB"):
        MixedNB([("g", SkGaussianNB(), ["x1"])], remainder="drop").fit(X, y)
    with pytest.raises(ValueError, match="'x2' is in blocks 'a' and 'b'"):
        MixedNB([("a", GaussianNB(), ["x1", "x2"]), ("b", GaussianNB(), ["x2"])], remainder="drop").fit(X, y)
    with pytest.raises(ValueError, match=r"in no block.*remainder='drop'"):
        MixedNB([("a", GaussianNB(), ["x1", "x2"])]).fit(X, y)
    with pytest.raises(ValueError, match="block name 'a' is used twice"):
        MixedNB([("a", GaussianNB(), ["x1"]), ("a", GaussianNB(), ["x2"])], remainder="drop").fit(X, y)
    with pytest.raises(ValueError, match=r"\['nope'\] not in the DataFrame"):
        MixedNB([("a", GaussianNB(), ["nope"])], remainder="drop").fit(X, y)
    with pytest.raises(ValueError, match="selects no column"):
        MixedNB([("a", GaussianNB(), [])], remainder="drop").fit(X, y)
    with pytest.raises(ValueError, match="remainder must be"):
        MixedNB([("a", GaussianNB(), ["x1"])], remainder="keep").fit(X, y)
    with pytest.raises(TypeError, match="infers the blocks from a pandas DataFrame"):
        MixedNB().fit(X[["x1", "x2"]].to_numpy(), y)
    with pytest.raises(TypeError, match="cannot infer a family for column 'when'"):
        MixedNB().fit(X.assign(when=pd.Timestamp("2020-01-01")), y)
    with pytest.raises(ValueError, match="unknown estimate"):
        MixedNB(estimate="median").fit(X, y)
    # NaN, named by column and block.
    with pytest.raises(ValueError, match="column 'x2' of block 'gaussian' contains NaN"):
        MixedNB(integer_columns=COUNTS).fit(X.assign(x2=np.where(np.arange(len(y)) == 4, np.nan, X["x2"])), y)
    colour = X["colour"].copy()
    colour[2] = None
    with pytest.raises(ValueError, match="column 'colour' .* contains NaN/missing"):
        MixedNB(integer_columns=COUNTS).fit(X.assign(colour=colour), y)
    with pytest.raises(ValueError, match="Negative values in data passed to PoissonNB"):
        MixedNB(integer_columns=COUNTS).fit(X.assign(count=-X["count"] - 1), y)

    fitted = MixedNB(integer_columns=COUNTS).fit(X, y)
    with pytest.raises(ValueError, match="contains NaN"):
        fitted.predict(X_test.assign(x1=np.nan))
    with pytest.raises(ValueError, match="feature names"):
        fitted.predict(X_test.drop(columns="count"))
    numeric = MixedNB([("g", GaussianNB(), slice(None))]).fit(X[["x1", "x2"]].to_numpy(), y)
    with pytest.raises(ValueError, match="X has 3 features, but MixedNB is expecting 2"):
        numeric.predict(np.ones((2, 3)))
    with pytest.raises(ValueError, match="column 0 of block 'g' contains NaN"):
        numeric.predict(np.array([[np.nan, 1.0]]))


def test_failed_partial_fit_leaves_model_unchanged(data):
    X, y, X_test = data
    model = MixedNB(integer_columns=COUNTS).partial_fit(X.iloc[:30], y[:30], classes=np.unique(y))
    before = model.predict_joint_log_proba(X_test)
    bad = X.iloc[30:].assign(count=-1)  # the last block fails after the others updated
    with pytest.raises(ValueError, match="Negative values"):
        model.partial_fit(bad, y[30:])
    assert_allclose(model.predict_joint_log_proba(X_test), before, rtol=0, atol=0)
    model.partial_fit(X.iloc[30:], y[30:])
    assert_allclose(
        model.predict_joint_log_proba(X_test),
        MixedNB(integer_columns=COUNTS).fit(X, y).predict_joint_log_proba(X_test),
        rtol=1e-10,
    )


# --------------------------------------------------------------------- sklearn checks


@parametrize_with_checks([MixedNB([("gaussian", GaussianNB(), slice(None))])])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_sparse_blocks_equal_dense_blocks():
    from scipy import sparse

    from bayesnb.estimators.discrete import MultinomialNB

    rng = np.random.default_rng(5)
    y = rng.choice([0, 1], 40)
    X = np.column_stack([rng.poisson(1 + 2 * y[:, None], (40, 4)), rng.random((40, 2)) < 0.5]).astype(float)
    X_test = np.column_stack([rng.poisson(2, (6, 4)), rng.random((6, 2)) < 0.5]).astype(float)
    blocks = [("words", MultinomialNB(alpha=0.5), slice(0, 4)), ("flags", BernoulliNB(binarize=None), [4, 5])]
    dense = MixedNB(blocks).fit(X, y)
    csr = MixedNB(blocks).fit(sparse.csr_matrix(X), y)
    assert isinstance(csr.estimators_[0][1].stats_, type(dense.estimators_[0][1].stats_))
    for estimate in ESTIMATES:
        dense.set_params(estimate=estimate)
        csr.set_params(estimate=estimate)
        assert_allclose(
            csr.predict_joint_log_proba(sparse.csr_matrix(X_test)), dense.predict_joint_log_proba(X_test), rtol=1e-12
        )
    # The multinomial block alone, standalone: the same feature part.
    words = MultinomialNB(alpha=0.5, estimate="predictive").fit(X[:, :4], y)
    flags = BernoulliNB(binarize=None, estimate="predictive").fit(X[:, 4:], y)
    expected = sum(
        m.predict_joint_log_proba(Xp) - m.class_log_prior_ for m, Xp in [(words, X_test[:, :4]), (flags, X_test[:, 4:])]
    )
    assert_allclose(dense.predict_joint_log_proba(X_test), dense.class_log_prior_ + expected, rtol=1e-10)
