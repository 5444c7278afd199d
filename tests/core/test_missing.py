"""``missing="ignore"``: a NaN is an unobserved feature, left out of statistics and likelihood.

Oracles:

* feature-wise families (Bernoulli, categorical, Poisson, Gaussian diagonal): the model
  fitted with NaNs equals, feature by feature, a one-feature model fitted on the rows
  that observe that feature (posterior, every estimate's likelihood, evidence);
* multinomial prediction: a model fitted on the observed columns only (the
  Dirichlet's aggregation property makes the two equal);
* full/shared Gaussian prediction: scipy's multivariate normal / t of the marginal on
  the observed coordinates, and a model fitted on those coordinates with the marginal
  prior;
* ``missing="ignore"`` on data without NaN is bit-identical to ``missing="error"``.
"""

from __future__ import annotations

import io
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose
from scipy import stats as sps
from sklearn.base import clone

import bayesnb
from bayesnb import (
    BernoulliNB,
    CategoricalNB,
    GaussianBayesClassifier,
    GaussianNB,
    MixedNB,
    MultinomialNB,
    PoissonNB,
)
from bayesnb.core.priors import NormalInverseGamma, NormalInverseWishart
from bayesnb.core.stats import MaskedGaussianStats, is_masked

ESTIMATES = ("mle", "map", "mean", "predictive")
RNG = np.random.default_rng(11)
N, F = 40, 3
Y = RNG.integers(0, 3, N)
Y[:3] = [0, 1, 2]
W = RNG.uniform(0.3, 2.5, N)


def _data(kind, rows=N, labels=Y):
    shift = labels[:, None]
    if kind == "real":
        return RNG.normal(shift * 0.8, 1.0 + 0.3 * shift, (rows, F))
    if kind == "counts":
        return RNG.poisson(1.0 + shift + np.arange(F), (rows, F)).astype(float)
    if kind == "binary":
        return (RNG.random((rows, F)) < 0.25 + 0.25 * shift).astype(float)
    return RNG.integers(0, 3, (rows, F)).astype(float)


def _nan(X, frac=0.25, seed=0):
    X = np.array(X, dtype=float)
    mask = np.random.default_rng(seed).random(X.shape) < frac
    mask[0] = False  # a complete row
    mask[1, :] = True  # a row with nothing observed
    mask[2:6, 0] = True
    X[mask] = np.nan
    return X


# name -> (constructor, data kind); alpha >= 1 / a0 > 1 so that every estimate exists.
# GaussianNB's "mle" variance floor is var_smoothing times the largest variance of *all*
# features (scikit-learn's definition), so a one-feature model has another floor: 0 here,
# the floor is checked on its own below.
FEATURE_WISE = {
    "bernoulli": (lambda **kw: BernoulliNB(binarize=None, alpha=2.0, **kw), "binary"),
    "bernoulli-threshold": (lambda **kw: BernoulliNB(binarize=1.5, alpha=(2.0, 3.0), **kw), "counts"),
    "categorical": (lambda **kw: CategoricalNB(alpha=1.5, min_categories=3, **kw), "codes"),
    "poisson": (lambda **kw: PoissonNB(alpha=1.5, beta=0.5, **kw), "counts"),
    "gaussian-default": (lambda **kw: GaussianNB(var_smoothing=0.0, **kw), "real"),
    "gaussian-prior": (
        lambda **kw: GaussianNB(prior=NormalInverseGamma(0.5, 0.2, 2.0, np.array([1.0, 2.0, 0.5])), var_smoothing=0.0, **kw),
        "real",
    ),
    "gbc-diag": (lambda **kw: GaussianBayesClassifier(covariance="diag", **kw), "real"),
}
DATA = {kind: _data(kind) for kind in ("real", "counts", "binary", "codes")}
TEST = {kind: _data(kind, 12, RNG.integers(0, 3, 12)) for kind in DATA}


def _slice_prior(est, j):
    """The estimator's constructor parameters for feature ``j`` alone."""
    params = est.get_params()
    prior = params.get("prior")
    if isinstance(prior, NormalInverseGamma):
        params["prior"] = NormalInverseGamma(*(np.asarray(v)[..., j] if np.ndim(v) else v for v in prior))
    return params


def _feature_part(est, X):
    return est.predict_joint_log_proba(X) - est.class_log_prior_


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("name", FEATURE_WISE)
def test_feature_wise_families_equal_per_feature_fits_on_observed_rows(name, weighted):
    make, kind = FEATURE_WISE[name]
    X, X_test = _nan(DATA[kind]), _nan(TEST[kind], seed=1)
    w = W if weighted else None
    est = make(missing="ignore").fit(X, Y, sample_weight=w)
    assert is_masked(est.stats_) or isinstance(est, CategoricalNB)
    # The class part counts every row, observed or not.
    assert_allclose(est.class_count_, np.bincount(Y, weights=w, minlength=3), rtol=1e-14)

    singles = []
    for j in range(F):
        rows = ~np.isnan(X[:, j])
        single = type(est)(**_slice_prior(est, j)).set_params(missing="error")
        single.partial_fit(X[rows][:, [j]], Y[rows], classes=[0, 1, 2], sample_weight=None if w is None else w[rows])
        singles.append(single)
        for a, b in zip(est.posterior_, single.posterior_):
            a, b = np.asarray(a), np.asarray(b)
            if a.ndim >= 2:  # (class, feature[, category]) arrays
                assert_allclose(a[:, j], b[:, 0], rtol=1e-12, atol=1e-12)

    # Evidence: the labels of every row plus each feature's evidence on its observed rows.
    labels_only = est.log_evidence() - float(est.family_.log_evidence(est.prior_, est.stats_))
    assert est.log_evidence() == pytest.approx(
        labels_only + sum(float(s.family_.log_evidence(s.prior_, s.stats_)) for s in singles), rel=1e-12
    )
    for estimate in ESTIMATES:
        est.set_params(estimate=estimate)
        expected = np.zeros((X_test.shape[0], 3))
        for j, single in enumerate(singles):
            single.set_params(estimate=estimate)
            rows = ~np.isnan(X_test[:, j])
            expected[rows] += _feature_part(single, X_test[rows][:, [j]])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", bayesnb.ZeroLikelihoodWarning)
            got = _feature_part(est, X_test)
            proba = est.predict_proba(X_test)
        assert_allclose(got, expected, rtol=1e-11, atol=1e-11)
        assert np.all(np.isfinite(proba))
        assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
        # The row with nothing observed gets the class proportions.
        assert_allclose(got[1], 0.0, atol=0)


def test_gaussian_mle_variance_floor_uses_the_observed_values():
    X = _nan(DATA["real"])
    est = GaussianNB(missing="ignore", estimate="mle", var_smoothing=1e-3).fit(X, Y)
    observed_var = [np.var(X[~np.isnan(X[:, j]), j]) for j in range(F)]
    assert est.epsilon_ == pytest.approx(1e-3 * max(observed_var), rel=1e-12)
    cell_var = np.array([[np.nanvar(X[Y == c, j]) for j in range(F)] for c in range(3)])
    assert_allclose(est.var_, cell_var + est.epsilon_, rtol=1e-12)
    assert_allclose(est.theta_, [[np.nanmean(X[Y == c, j]) for j in range(F)] for c in range(3)], rtol=1e-12)


@pytest.mark.parametrize("name", FEATURE_WISE)
def test_partial_fit_with_and_without_nans_equals_one_fit(name):
    make, kind = FEATURE_WISE[name]
    X = _nan(DATA[kind])
    X[20:30] = DATA[kind][20:30]  # a chunk without NaN between chunks with NaN
    chained = make(missing="ignore")
    for rows in (slice(20, 30), slice(0, 20), slice(30, N)):
        chained.partial_fit(X[rows], Y[rows], classes=[0, 1, 2], sample_weight=W[rows])
    full = make(missing="ignore").fit(X, Y, sample_weight=W)
    for estimate in ESTIMATES:
        full.set_params(estimate=estimate)
        chained.set_params(estimate=estimate)
        assert_allclose(chained.predict_joint_log_proba(_nan(TEST[kind], seed=2)),
                        full.predict_joint_log_proba(_nan(TEST[kind], seed=2)), rtol=1e-10, atol=1e-10)
    assert chained.log_evidence() == pytest.approx(full.log_evidence(), rel=1e-10)


@pytest.mark.parametrize("name", ["bernoulli-threshold", "poisson"])
def test_sparse_input_with_nans_equals_dense(name):
    make, kind = FEATURE_WISE[name]
    X, X_test = _nan(DATA[kind]), _nan(TEST[kind], seed=3)
    dense = make(missing="ignore").fit(X, Y)
    csr = make(missing="ignore").fit(sp.csr_matrix(X), Y)
    for estimate in ESTIMATES:
        dense.set_params(estimate=estimate)
        csr.set_params(estimate=estimate)
        assert_allclose(csr.predict_joint_log_proba(sp.csr_matrix(X_test)), dense.predict_joint_log_proba(X_test),
                        rtol=1e-12, atol=1e-12)


ALL = {
    **{k: v for k, v in FEATURE_WISE.items()},
    "multinomial": (lambda **kw: MultinomialNB(alpha=2.0, **kw), "counts"),
    "gbc-full": (lambda **kw: GaussianBayesClassifier(covariance="full", **kw), "real"),
    "gbc-shared": (lambda **kw: GaussianBayesClassifier(covariance="shared", **kw), "real"),
    "mixed": (lambda **kw: MixedNB([("g", GaussianNB(), [0]), ("p", PoissonNB(), [1, 2])], **kw), "counts"),
}


@pytest.mark.parametrize("name", ALL)
def test_ignore_without_nans_is_bit_identical_to_error(name):
    make, kind = ALL[name]
    X, X_test = DATA[kind], TEST[kind]
    a = make(missing="error").fit(X, Y, sample_weight=W)
    b = make(missing="ignore").fit(X, Y, sample_weight=W)
    assert type(a.stats_) is type(b.stats_)
    for estimate in ESTIMATES:
        a.set_params(estimate=estimate)
        b.set_params(estimate=estimate)
        try:
            expected = a.predict_joint_log_proba(X_test)
        except ValueError as err:
            with pytest.raises(ValueError, match=str(err)[:30]):
                b.predict_joint_log_proba(X_test)
            continue
        assert expected.tobytes() == b.predict_joint_log_proba(X_test).tobytes()
    assert a.log_evidence() == b.log_evidence()


@pytest.mark.parametrize("name", ALL)
def test_missing_parameter_is_validated_and_nans_refused_by_default(name):
    make, kind = ALL[name]
    with pytest.raises(ValueError, match=r"missing must be 'error' or 'ignore', got 'drop'"):
        make(missing="drop").fit(DATA[kind], Y)
    with pytest.raises(ValueError, match=r"NaN"):
        make().fit(_nan(DATA[kind]), Y)
    with pytest.raises(ValueError, match=r"infinity"):  # NaN is missing; infinity is not
        X = _nan(DATA[kind])
        X[3, 2] = np.inf
        make(missing="ignore").fit(X, Y)
    assert clone(make(missing="ignore")).get_params()["missing"] == "ignore"


def test_multinomial_predicts_conditionally_on_the_observed_words_and_refuses_to_fit():
    X = DATA["counts"]
    alpha = np.array([1.5, 2.0, 3.0])
    est = MultinomialNB(alpha=alpha, missing="ignore").fit(X, Y)
    with pytest.raises(ValueError, match=r"MultinomialNB cannot be fitted on rows with missing \(NaN\) counts.*"
                                         r"no longer a Dirichlet"):
        MultinomialNB(missing="ignore").fit(_nan(X), Y)
    X_test = _nan(TEST["counts"], seed=4)
    for estimate in ESTIMATES:
        est.set_params(estimate=estimate)
        got = _feature_part(est, X_test)
        for i, row in enumerate(X_test):
            keep = ~np.isnan(row)
            if not keep.any():
                assert_allclose(got[i], 0.0)
                continue
            # The model of the observed columns alone: Dir(alpha_O + T_O), the aggregation
            # of the full posterior onto the observed sub-vocabulary.
            sub = MultinomialNB(alpha=alpha[keep], estimate=estimate).fit(X[:, keep], Y)
            assert_allclose(got[i], _feature_part(sub, row[None, keep])[0], rtol=1e-12, atol=1e-12)


def test_joint_gaussians_marginalise_missing_coordinates_and_refuse_to_fit():
    X, X_test = DATA["real"], _nan(TEST["real"], seed=5)
    m0, k0, df0, psi0 = np.array([0.2, -0.1, 0.3]), 0.5, 6.0, np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 1.5]])
    for covariance in ("full", "shared"):
        prior = NormalInverseWishart(m0, k0, df0, psi0)
        est = GaussianBayesClassifier(covariance=covariance, prior=prior, missing="ignore").fit(X, Y)
        with pytest.raises(ValueError, match=rf"covariance='{covariance}'\) cannot be fitted on rows with missing"):
            clone(est).fit(_nan(X), Y)
        for estimate in ESTIMATES:
            est.set_params(estimate=estimate)
            got = _feature_part(est, X_test)
            for i, row in enumerate(X_test):
                keep = ~np.isnan(row)
                if not keep.any():
                    assert_allclose(got[i], 0.0)
                    continue
                o = np.flatnonzero(keep)
                if estimate == "predictive":
                    # The model of the observed coordinates with the marginal prior.
                    marginal = NormalInverseWishart(m0[o], k0, df0 - (F - o.size), psi0[np.ix_(o, o)])
                    sub = GaussianBayesClassifier(covariance=covariance, prior=marginal).fit(X[:, o], Y)
                    assert_allclose(got[i], _feature_part(sub, row[None, o])[0], rtol=1e-10)
                    continue
                cov = est.covariance_
                cov = np.broadcast_to(cov, (3, F, F))
                expected = [sps.multivariate_normal(est.means_[c, o], cov[c][np.ix_(o, o)]).logpdf(row[o])
                            for c in range(3)]
                assert_allclose(got[i], expected, rtol=1e-10)
        # The Student-t predictive of the marginal, by scipy.
        est.set_params(estimate="predictive")
        post = est.posterior_
        row = X_test[np.flatnonzero(np.isnan(X_test).sum(1) == 1)[0]]
        o = np.flatnonzero(~np.isnan(row))
        d = np.broadcast_to(post.df, (3,)) - F + 1
        scale = np.broadcast_to(post.scale, (3, F, F))
        expected = [
            sps.multivariate_t(post.loc[c, o], scale[c][np.ix_(o, o)] * (post.kappa[c] + 1) / (post.kappa[c] * d[c]),
                               df=d[c]).logpdf(row[o])
            for c in range(3)
        ]
        assert_allclose(_feature_part(est, row[None])[0], expected, rtol=1e-10)


def test_mixed_dataframe_with_missing_values_is_the_sum_of_its_blocks():
    rng = np.random.default_rng(4)
    n = 30
    y = rng.integers(0, 2, n)
    frame = pd.DataFrame(
        {
            "size": np.where(rng.random(n) < 0.2, np.nan, rng.normal(y, 1.0)),
            "colour": pd.Series(rng.choice(["red", "blue", None], n), dtype=object),
            "visits": rng.poisson(1 + y).astype(float),
            "flag": rng.random(n) < 0.5,
        }
    )
    frame.loc[3, "visits"] = np.nan
    with pytest.raises(ValueError, match=r"column 'colour' \(position 1\) contains NaN/missing values; pass missing='ignore'"):
        MixedNB().fit(frame, y)
    est = MixedNB(missing="ignore").fit(frame, y)
    assert all(block.missing == "ignore" for _, block, _ in est.estimators_)
    colour = est.named_estimators_["categorical"]
    assert_allclose(colour.category_count_[0].sum(1),
                    [np.sum((y == c) & frame["colour"].notna().to_numpy()) for c in (0, 1)])
    for estimate in ESTIMATES:
        est.set_params(estimate=estimate)
        total = est.class_log_prior_.copy()
        for _, block, idx in est.estimators_:
            block.set_params(estimate=estimate)
            part = frame.iloc[:, idx]
            if isinstance(block, CategoricalNB):
                codes = {v: k for k, v in enumerate(est.categories_[int(idx[0])].tolist())}
                part = np.array([[np.nan if v is None else codes[v]] for v in frame["colour"]])
            total = total + _feature_part(block, part)
        assert_allclose(est.predict_joint_log_proba(frame), total, rtol=1e-12)


@pytest.mark.parametrize("name", ["gaussian-default", "poisson", "bernoulli", "gbc-diag"])
def test_masked_statistics_survive_save_and_load(name, tmp_path):
    make, kind = FEATURE_WISE[name]
    X, X_test = _nan(DATA[kind]), _nan(TEST[kind], seed=6)
    est = make(missing="ignore").fit(X[:30], Y[:30])
    buf = io.BytesIO()
    est.save(buf)
    buf.seek(0)
    loaded = bayesnb.load(buf)
    assert type(loaded.stats_) is type(est.stats_)
    assert est.predict_joint_log_proba(X_test).tobytes() == loaded.predict_joint_log_proba(X_test).tobytes()
    est.partial_fit(X[30:], Y[30:])
    loaded.partial_fit(X[30:], Y[30:])
    assert est.predict_joint_log_proba(X_test).tobytes() == loaded.predict_joint_log_proba(X_test).tobytes()


def test_masked_gaussian_merge_is_chans_update_per_cell():
    X = _nan(DATA["real"])
    a = GaussianNB(missing="ignore").fit(X[:25], Y[:25]).stats_
    b = GaussianNB(missing="ignore").fit(X[25:], Y[25:]).stats_
    merged = a.merge(b)
    assert isinstance(merged, MaskedGaussianStats)
    full = GaussianNB(missing="ignore").fit(X, Y).stats_
    for x, z in zip(merged, full):
        assert_allclose(np.asarray(x), np.asarray(z), rtol=1e-12, atol=1e-12)
