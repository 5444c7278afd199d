"""SemiSupervisedNB: MAP-EM and mean-field VB over unlabelled rows (y = -1).

Oracles: the ordinary fit (every row labelled; responsibilities as explicit weighted
copies of the rows), SciPy's densities (the EM log posterior), the exact log marginal
likelihood by enumerating every labelling of a few unlabelled rows (the ELBO is a lower
bound on it), and simulation from the model with known parameters (VB's posterior
means recover them).
"""

from __future__ import annotations

import itertools
import warnings

import jax
import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats as st
from scipy.special import logsumexp

import bayesnb
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
    SemiSupervisedNB,
)


def _data(cls, seed, n=60, d=5, k=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    y[:k] = np.arange(k)
    on = (y[:, None] == np.arange(d) % k).astype(float)
    if cls in (MultinomialNB, PoissonNB):
        X = rng.poisson(1.0 + 2.0 * on)
    elif cls is BernoulliNB:
        X = (rng.random((n, d)) < 0.25 + 0.5 * on).astype(int)
    elif cls is CategoricalNB:
        X = np.where(rng.random((n, d)) < 0.5, y[:, None], rng.integers(0, 3, (n, d)))
    elif cls is ExponentialNB:
        X = rng.exponential(1.0 + 2.0 * on)
    else:
        X = rng.normal(1.5 * on, 1.0)
    return X, y


def _hide(y, seed, share=0.7):
    rng = np.random.default_rng(seed + 100)
    out = y.copy()
    out[rng.random(y.size) < share] = -1
    out[: len(np.unique(y))] = y[: len(np.unique(y))]  # every class keeps a labelled row
    return out


FAMILIES = [MultinomialNB, BernoulliNB, CategoricalNB, PoissonNB, ExponentialNB, GaussianNB, GaussianBayesClassifier]


def _options(cls, method):
    # The Normal-Inverse-Gamma / -Wishart have no concentration for Laplace smoothing to raise.
    return {"smoothing": "none"} if (cls in (GaussianNB, GaussianBayesClassifier) and method == "em") else {}


@pytest.mark.parametrize("cls", FAMILIES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("method", ["em", "vb"])
def test_the_objective_never_decreases(cls, method):
    for seed in range(3):
        X, y = _data(cls, seed)
        for lam in (1.0, 0.3):
            clf = SemiSupervisedNB(cls(), method=method, unlabelled_weight=lam, **_options(cls, method))
            clf.fit(X, _hide(y, seed))
            trace = clf.log_posterior_ if method == "em" else clf.elbo_
            assert trace.size == clf.n_iter_ >= 2
            assert np.all(np.isfinite(trace))
            assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[1:])), (seed, lam, np.diff(trace).min())


def _leaves(tree):
    return [np.asarray(a, dtype=np.float64) for a in jax.tree.leaves(tree)]


@pytest.mark.parametrize("cls", FAMILIES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("method", ["em", "vb"])
def test_with_every_row_labelled_both_are_the_ordinary_fit(cls, method):
    X, y = _data(cls, 0)
    clf = SemiSupervisedNB(cls(), method=method, **_options(cls, method), unlabelled_weight=1.0).fit(X, y)
    # EM's classifier is the M-step's point estimate: the posterior mean under Laplace
    # smoothing, the MAP without; VB's is the exact posterior predictive.
    estimate = {"em": "map" if _options(cls, method) else "mean", "vb": "predictive"}[method]
    ref = cls(estimate=estimate).fit(X, y)
    np.testing.assert_allclose(clf.predict_proba(X), ref.predict_proba(X), rtol=1e-12, atol=1e-12)
    for a, b in zip(_leaves(clf.posterior_), _leaves(ref.posterior_)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(clf.class_posterior_.concentration, ref.class_posterior_.concentration, rtol=1e-12)
    assert clf.n_iter_ == 1 and clf.converged_
    if method == "vb":
        np.testing.assert_allclose(clf.elbo_[-1], ref.log_evidence(), rtol=1e-12)


@pytest.mark.parametrize("method", ["em", "vb"])
def test_responsibilities_are_weighted_copies_of_the_rows(method):
    # The fitted model is the ordinary fit on the labelled rows plus one copy of every
    # unlabelled row per class, weighted by lambda times its responsibility. The final
    # statistics hold the responsibilities of the E-step before the last; the
    # label_distributions_ are those of the last (under the final parameters): run to a
    # fixed point, they differ by EM's linear convergence, far below 1e-6.
    X, y = _data(MultinomialNB, 1, n=50)
    yu = _hide(y, 1)
    lam = 0.6
    clf = SemiSupervisedNB(MultinomialNB(), method=method, unlabelled_weight=lam, tol=0, max_iter=400).fit(X, yu)
    unl = yu == -1
    R = clf.label_distributions_[unl]
    K = R.shape[1]
    Xd = np.vstack([X[~unl]] + [X[unl]] * K)
    yd = np.concatenate([yu[~unl]] + [np.full(unl.sum(), c) for c in clf.classes_])
    wd = np.concatenate([np.ones((~unl).sum())] + [lam * R[:, c] for c in range(K)])
    ref = MultinomialNB(estimate="mean" if method == "em" else "predictive").fit(Xd, yd, sample_weight=wd)
    np.testing.assert_allclose(clf.predict_proba(X), ref.predict_proba(X), rtol=1e-6, atol=1e-9)
    assert np.all(clf.transduction_[~unl] == yu[~unl])


def test_unlabelled_weight_zero_is_the_labelled_fit_and_scales_like_sample_weight():
    X, y = _data(BernoulliNB, 2)
    yu = _hide(y, 2)
    lab = yu != -1
    none = SemiSupervisedNB(BernoulliNB(), method="vb", unlabelled_weight=0.0).fit(X, yu)
    np.testing.assert_allclose(none.predict_proba(X), BernoulliNB().fit(X[lab], yu[lab]).predict_proba(X), rtol=1e-12)
    half = SemiSupervisedNB(BernoulliNB(), method="vb", unlabelled_weight=0.5).fit(X, yu)
    weighted = SemiSupervisedNB(BernoulliNB(), method="vb", unlabelled_weight=1.0).fit(X, yu, sample_weight=np.where(lab, 1.0, 0.5))
    np.testing.assert_allclose(half.elbo_, weighted.elbo_, rtol=1e-10)
    np.testing.assert_allclose(half.predict_proba(X), weighted.predict_proba(X), rtol=1e-10, atol=1e-12)


def test_em_log_posterior_is_scipys():
    X, y = _data(MultinomialNB, 3, n=40)
    yu = _hide(y, 3)
    clf = SemiSupervisedNB(MultinomialNB(alpha=0.5, class_alpha=2.0), method="em", unlabelled_weight=1.0).fit(X, yu)
    # The final parameters: the M-step of the final statistics (Laplace: posterior mean).
    theta = np.exp(clf.family_.point(clf.prior_, clf.stats_, "mean").log_probs)
    pi = np.exp(clf.estimator_.class_log_prior_)
    log_prior = sum(st.dirichlet.logpdf(theta[c], np.full(X.shape[1], 0.5 + 1.0)) for c in range(3))
    log_prior += st.dirichlet.logpdf(pi, np.full(3, 2.0 + 1.0))
    joint = X @ np.log(theta).T + np.log(pi)  # token sequences: the coefficient is a constant
    lab = yu != -1
    index = np.searchsorted(clf.classes_, yu[lab].astype(int))
    expected = log_prior + joint[lab][np.arange(lab.sum()), index].sum() + logsumexp(joint[~lab], axis=1).sum()
    np.testing.assert_allclose(clf.log_posterior_[-1], expected, rtol=1e-10)


@pytest.mark.parametrize("cls", [MultinomialNB, BernoulliNB, PoissonNB], ids=lambda c: c.__name__)
def test_the_elbo_bounds_the_exact_marginal_likelihood(cls):
    # log p(X_L, y_L, X_U) = log sum over every labelling of the unlabelled rows of the
    # evidence of the fully labelled data (2^6 labellings).
    X, y = _data(cls, 4, n=14, d=4, k=2)
    yu = y.copy()
    yu[8:] = -1
    unl = np.flatnonzero(yu == -1)
    logs = []
    for labels in itertools.product([0, 1], repeat=unl.size):
        full = yu.copy()
        full[unl] = labels
        logs.append(cls().fit(X, full).log_evidence())
    exact = logsumexp(logs)
    clf = SemiSupervisedNB(cls(), method="vb", tol=0, max_iter=200, unlabelled_weight=1.0).fit(X, yu)
    assert clf.elbo_[-1] <= exact + 1e-9
    assert clf.elbo_[-1] >= exact - 1.0  # a bound, not a vacuous one
    assert clf.elbo_[0] < clf.elbo_[-1]


def _simulate(n, rng, theta, pi):
    y = rng.choice(pi.size, size=n, p=pi)
    return np.array([rng.multinomial(40, theta[c]) for c in y]).reshape(n, theta.shape[1]), y


def test_vb_posterior_means_recover_the_parameters_as_unlabelled_rows_grow():
    rng = np.random.default_rng(5)
    theta = np.array([[0.4, 0.3, 0.1, 0.1, 0.1], [0.1, 0.1, 0.2, 0.3, 0.3]])
    pi = np.array([0.3, 0.7])
    X_lab, y_lab = _simulate(6, rng, theta, pi)
    y_lab[:2] = [0, 1]
    X_lab[:2] = [rng.multinomial(40, theta[0]), rng.multinomial(40, theta[1])]
    errors = []
    for n_unl in (0, 100, 3000):
        X_unl, _ = _simulate(n_unl, rng, theta, pi)
        X = np.vstack([X_lab, X_unl])
        y = np.concatenate([y_lab, np.full(n_unl, -1)])
        clf = SemiSupervisedNB(MultinomialNB(), method="vb", unlabelled_weight=1.0).fit(X, y)
        conc = np.asarray(clf.posterior_.concentration)
        theta_mean = conc / conc.sum(axis=1, keepdims=True)
        class_conc = np.asarray(clf.class_posterior_.concentration)
        errors.append(max(np.abs(theta_mean - theta).max(), np.abs(class_conc / class_conc.sum() - pi).max()))
    assert errors[0] > errors[1] > errors[2], errors
    assert errors[2] < 0.02, errors


def test_string_labels_mark_unlabelled_rows_by_minus_one_in_an_object_array():
    X, y = _data(MultinomialNB, 6)
    names = np.array(["ham", "spam", "eggs"])[y].astype(object)
    yu = _hide(y, 6)
    names[yu == -1] = -1
    clf = SemiSupervisedNB(MultinomialNB(), method="vb", unlabelled_weight=1.0).fit(X, names)
    ref = SemiSupervisedNB(MultinomialNB(), method="vb", unlabelled_weight=1.0).fit(X, yu)
    assert list(clf.classes_) == ["eggs", "ham", "spam"]
    order = np.argsort(np.array(["ham", "spam", "eggs"]))
    np.testing.assert_allclose(clf.predict_proba(X), ref.predict_proba(X)[:, order], rtol=1e-12)
    assert set(clf.transduction_) <= {"ham", "spam", "eggs"}
    assert clf.score(X, np.array(["ham", "spam", "eggs"])[y]) > 0.5


def test_sparse_input_and_missing_values():
    X, y = _data(MultinomialNB, 7)
    yu = _hide(y, 7)
    for method in ("em", "vb"):
        dense = SemiSupervisedNB(MultinomialNB(), method=method, unlabelled_weight=1.0).fit(X, yu)
        sparse = SemiSupervisedNB(MultinomialNB(), method=method, unlabelled_weight=1.0).fit(sp.csr_matrix(X), yu)
        np.testing.assert_allclose(dense.predict_proba(X), sparse.predict_proba(sp.csr_matrix(X)), rtol=1e-10)
    Xb, yb = _data(BernoulliNB, 7)
    Xn = Xb.astype(float)
    Xn[np.random.default_rng(0).random(Xn.shape) < 0.1] = np.nan
    clf = SemiSupervisedNB(BernoulliNB(missing="ignore"), method="vb", unlabelled_weight=1.0).fit(Xn, _hide(yb, 7))
    assert np.all(np.diff(clf.elbo_) >= -1e-9 * np.abs(clf.elbo_[1:]))
    assert np.all(np.isfinite(clf.predict_proba(Xn)))


def test_the_vb_posterior_is_behind_draws_and_intervals():
    X, y = _data(BernoulliNB, 8)
    clf = SemiSupervisedNB(BernoulliNB(), method="vb", unlabelled_weight=1.0).fit(X, _hide(y, 8))
    draws = clf.predict_proba_draws(X[:4], n_draws=400, random_state=0)
    assert draws.shape == (400, 4, 3)
    lower, upper = clf.predict_proba_interval(X[:4], 0.99, n_draws=400, random_state=0)
    proba = clf.predict_proba(X[:4])
    assert np.all((lower <= proba + 1e-9) & (proba <= upper + 1e-9))
    # The draws are of q: their mean is the variational predictive (the Beta means' plug-in).
    np.testing.assert_allclose(draws.mean(0), proba, atol=0.05)


def test_bad_input_gets_a_clear_error():
    X, y = _data(MultinomialNB, 9)
    with pytest.raises(ValueError, match="every row is unlabelled"):
        SemiSupervisedNB().fit(X, np.full(y.size, -1))
    with pytest.raises(ValueError, match="method must be one of"):
        SemiSupervisedNB(method="gibbs").fit(X, y)
    with pytest.raises(ValueError, match="smoothing must be one of"):
        SemiSupervisedNB(smoothing="add-one").fit(X, y)
    with pytest.raises(ValueError, match="unlabelled_weight"):
        SemiSupervisedNB(unlabelled_weight=-1.0).fit(X, y)
    with pytest.raises(TypeError, match="bayesnb naive Bayes estimator"):
        SemiSupervisedNB(estimator=object()).fit(X, y)
    Xg, yg = _data(GaussianNB, 9)
    with pytest.raises(ValueError, match="Laplace smoothing"):
        SemiSupervisedNB(GaussianNB(), unlabelled_weight=1.0).fit(Xg, _hide(yg, 9))
    for method, why in (("vb", "no conjugate prior in alpha"), ("em", "maximises no fixed objective")):
        with pytest.raises(ValueError, match=f"cannot fit PolyaNB: .*{why}"):
            SemiSupervisedNB(PolyaNB(), method=method, unlabelled_weight=1.0).fit(X, _hide(y, 9))
    with pytest.raises(ValueError, match="zero likelihood"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # Dir(1) with no smoothing: the MAP is the MLE, a word unseen in every class kills a row.
        Xz = np.vstack([X, np.eye(X.shape[1] + 1)[-1:, :-1] * 0 + 0])
        Xz = np.hstack([Xz, np.zeros((Xz.shape[0], 1), int)])
        Xz[-1, -1] = 3
        SemiSupervisedNB(MultinomialNB(), smoothing="none", unlabelled_weight=1.0).fit(Xz, np.concatenate([_hide(y, 9), [-1]]))


def test_stopping_before_convergence_warns():
    from sklearn.exceptions import ConvergenceWarning

    X, y = _data(MultinomialNB, 10)
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        clf = SemiSupervisedNB(MultinomialNB(), max_iter=2, unlabelled_weight=1.0).fit(X, _hide(y, 10))
    assert clf.n_iter_ == 2 and not clf.converged_


def test_it_is_exported():
    assert "SemiSupervisedNB" in bayesnb.__all__
    assert bayesnb.SemiSupervisedNB is SemiSupervisedNB


# ---------------------------------------------------------------- multivariate Gaussian, mixed blocks


def _mixed_data(seed, n=60, k=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    y[:k] = np.arange(k)
    on = (y[:, None] == np.arange(6) % k).astype(float)
    X = np.hstack([
        rng.normal(1.5 * on[:, :2], 1.0),
        (rng.random((n, 2)) < 0.25 + 0.5 * on[:, 2:4]).astype(float),
        rng.poisson(1.0 + 2.0 * on[:, 4:6]).astype(float),
    ])
    return X, y


MIXES = {
    # (blocks, EM options): Laplace smoothing where every block has concentrations.
    "bernoulli+poisson": (lambda: [("b", BernoulliNB(binarize=None), [2, 3]), ("p", PoissonNB(), [4, 5])], {}),
    "gaussian+bernoulli+poisson": (
        lambda: [("g", GaussianNB(), [0, 1]), ("b", BernoulliNB(binarize=None), [2, 3]), ("p", PoissonNB(), [4, 5])],
        {"smoothing": "none"},
    ),
    "full-covariance+bernoulli": (
        lambda: [("g", GaussianBayesClassifier(covariance="full"), [0, 1]), ("b", BernoulliNB(binarize=None), [2, 3])],
        {"smoothing": "none"},
    ),
}


def _mixed(name, **kwargs):
    blocks, _ = MIXES[name]
    return MixedNB(blocks(), remainder="drop", **kwargs)


@pytest.mark.parametrize("name", list(MIXES))
@pytest.mark.parametrize("method", ["em", "vb"])
def test_mixed_objective_never_decreases_and_every_row_labelled_is_the_ordinary_fit(name, method):
    options = MIXES[name][1] if method == "em" else {}
    for seed in range(3):
        X, y = _mixed_data(seed)
        clf = SemiSupervisedNB(_mixed(name), method=method, **options, unlabelled_weight=1.0).fit(X, _hide(y, seed))
        trace = clf.log_posterior_ if method == "em" else clf.elbo_
        assert trace.size >= 2 and np.all(np.isfinite(trace))
        assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[1:])), (seed, np.diff(trace).min())
    X, y = _mixed_data(0)
    clf = SemiSupervisedNB(_mixed(name), method=method, **options, unlabelled_weight=1.0).fit(X, y)
    estimate = {"em": "map" if options else "mean", "vb": "predictive"}[method]
    ref = _mixed(name, estimate=estimate).fit(X, y)
    np.testing.assert_allclose(clf.predict_proba(X), ref.predict_proba(X), rtol=1e-12, atol=1e-12)
    for a, b in zip(_leaves(clf.posterior_), _leaves(ref.posterior_)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    if method == "vb":
        np.testing.assert_allclose(clf.elbo_[-1], ref.log_evidence(), rtol=1e-12)


@pytest.mark.parametrize("method", ["em", "vb"])
def test_mixed_blocks_see_the_responsibility_weighted_rows(method):
    # The oracle of test_responsibilities_are_weighted_copies_of_the_rows, for a mixed
    # model: every block (not only the class counts) is conditioned on the copies.
    X, y = _mixed_data(4, n=50)
    yu = _hide(y, 4)
    name = "gaussian+bernoulli+poisson"
    options = MIXES[name][1] if method == "em" else {}
    clf = SemiSupervisedNB(_mixed(name), method=method, tol=0, max_iter=400, **options, unlabelled_weight=1.0).fit(X, yu)
    unl = yu == -1
    R = clf.label_distributions_[unl]
    K = R.shape[1]
    Xd = np.vstack([X[~unl]] + [X[unl]] * K)
    yd = np.concatenate([yu[~unl]] + [np.full(unl.sum(), c) for c in clf.classes_])
    wd = np.concatenate([np.ones((~unl).sum())] + [R[:, c] for c in range(K)])
    # The blocks' data-scaled default priors are those of the labelled rows, held fixed.
    blocks = [
        (b, est.set_params(prior=clf.prior_[b]) if "prior" in est.get_params() else est, cols)
        for b, est, cols in MIXES[name][0]()
    ]
    ref = MixedNB(blocks, remainder="drop", estimate="map" if method == "em" else "predictive")
    ref.fit(Xd, yd, sample_weight=wd)
    np.testing.assert_allclose(clf.predict_proba(X), ref.predict_proba(X), rtol=1e-6, atol=1e-9)
    labelled_only = _mixed(name, estimate="map" if method == "em" else "predictive").fit(X[~unl], yu[~unl])
    assert np.abs(clf.predict_proba(X) - labelled_only.predict_proba(X)).max() > 1e-3


@pytest.mark.parametrize("method", ["em", "vb"])
def test_shared_covariance_objective_never_decreases_and_reduces_to_the_ordinary_fit(method):
    options = {"smoothing": "none"} if method == "em" else {}
    for seed in range(3):
        X, y = _data(GaussianBayesClassifier, seed)
        clf = SemiSupervisedNB(GaussianBayesClassifier(covariance="shared"), method=method, **options, unlabelled_weight=1.0)
        clf.fit(X, _hide(y, seed))
        trace = clf.log_posterior_ if method == "em" else clf.elbo_
        assert trace.size >= 2 and np.all(np.diff(trace) >= -1e-9 * np.abs(trace[1:]))
    X, y = _data(GaussianBayesClassifier, 0)
    clf = SemiSupervisedNB(GaussianBayesClassifier(covariance="shared"), method=method, **options, unlabelled_weight=1.0).fit(X, y)
    ref = GaussianBayesClassifier(covariance="shared", estimate="map" if method == "em" else "predictive").fit(X, y)
    np.testing.assert_allclose(clf.predict_proba(X), ref.predict_proba(X), rtol=1e-12, atol=1e-12)
    for a, b in zip(_leaves(clf.posterior_), _leaves(ref.posterior_)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_full_covariance_elbo_bounds_the_exact_marginal_likelihood():
    # As for the discrete families: enumerate every labelling of 6 unlabelled rows.
    X, y = _data(GaussianBayesClassifier, 4, n=14, d=2, k=2)
    yu = y.copy()
    yu[8:] = -1
    unl = np.flatnonzero(yu == -1)
    prior = GaussianBayesClassifier().fit(X[yu != -1], yu[yu != -1]).prior_  # held fixed, as SemiSupervisedNB does
    logs = []
    for labels in itertools.product([0, 1], repeat=unl.size):
        full = yu.copy()
        full[unl] = labels
        logs.append(GaussianBayesClassifier(prior=prior).fit(X, full).log_evidence())
    exact = logsumexp(logs)
    clf = SemiSupervisedNB(GaussianBayesClassifier(), method="vb", tol=0, max_iter=200, unlabelled_weight=1.0).fit(X, yu)
    assert clf.elbo_[-1] <= exact + 1e-9
    assert clf.elbo_[-1] >= exact - 1.0


# ---------------------------------------------------------------- batches


@pytest.mark.parametrize("method", ["em", "vb"])
@pytest.mark.parametrize("cls", [MultinomialNB, GaussianBayesClassifier], ids=lambda c: c.__name__)
def test_batched_e_steps_equal_the_in_memory_fit(cls, method):
    # Statistics of responsibilities add over rows: the E-step over batches of 7 rows
    # (the last one shorter), sparse for the counts, is the E-step over all rows.
    X, y = _data(cls, 11, n=80)
    yu = _hide(y, 11)
    if cls is MultinomialNB:
        X = sp.csr_matrix(X)
    options = _options(cls, method)
    # max_iter=12 stops both before the increments reach rounding (where tol=0 would let
    # rounding decide the stopping iteration).
    whole = SemiSupervisedNB(cls(), method=method, tol=0, max_iter=12, **options, unlabelled_weight=1.0)
    batched = SemiSupervisedNB(cls(), method=method, tol=0, max_iter=12, batch_size=7, **options, unlabelled_weight=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # both stop at max_iter
        whole.fit(X, yu)
        batched.fit(X, yu)
    trace = "log_posterior_" if method == "em" else "elbo_"
    np.testing.assert_allclose(getattr(batched, trace), getattr(whole, trace), rtol=1e-10)
    np.testing.assert_allclose(batched.label_distributions_, whole.label_distributions_, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(batched.predict_proba(X), whole.predict_proba(X), rtol=1e-10, atol=1e-12)
    for a, b in zip(_leaves(batched.posterior_), _leaves(whole.posterior_)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_batch_size_must_be_a_positive_int():
    X, y = _data(MultinomialNB, 12)
    for bad in (0, -3, 2.5, True, "10"):
        with pytest.raises(ValueError, match="batch_size must be None or an int >= 1"):
            SemiSupervisedNB(batch_size=bad).fit(X, _hide(y, 12))


def test_verbose_prints_progress_to_stderr_and_is_quiet_otherwise(capsys):
    X, y = _data(MultinomialNB, 13)
    yu = _hide(y, 13)
    SemiSupervisedNB(method="vb", unlabelled_weight=1.0).fit(X, yu)
    assert capsys.readouterr() == ("", "")
    clf = SemiSupervisedNB(method="vb", verbose=True, unlabelled_weight=1.0).fit(X, yu)
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == clf.n_iter_
    for i, (line, value) in enumerate(zip(lines, clf.elbo_)):
        assert line.startswith(f"SemiSupervisedNB[vb] iteration {i + 1}/100: ELBO ")
        assert float(line.split("ELBO ")[1].split()[0]) == pytest.approx(value, rel=1e-9)
    assert "change" in lines[1] and "change" not in lines[0]
    n_unl = int((yu == -1).sum())
    clf = SemiSupervisedNB(method="em", verbose=2, batch_size=10, unlabelled_weight=1.0).fit(X, yu)
    err = capsys.readouterr().err
    n_batches = -(-n_unl // 10)
    # One in-place batch line per E-step, ending at the last batch; one line per iteration.
    assert err.count(f"\r  E-step: batch {n_batches}/{n_batches}\n") == clf.n_iter_
    assert err.count("SemiSupervisedNB[em] iteration ") == clf.n_iter_


@pytest.mark.parametrize("method", ["em", "vb"])
def test_a_dask_array_equals_the_in_memory_fit(method):
    da = pytest.importorskip("dask.array")
    import dask

    X, y = _data(PoissonNB, 14, n=90)
    yu = _hide(y, 14)
    whole = SemiSupervisedNB(PoissonNB(), method=method, tol=0, max_iter=12, unlabelled_weight=1.0)
    lazy = SemiSupervisedNB(PoissonNB(), method=method, tol=0, max_iter=12, unlabelled_weight=1.0)
    with warnings.catch_warnings(), dask.config.set(scheduler="synchronous"):
        warnings.simplefilter("ignore")  # both stop at max_iter
        whole.fit(X, yu)
        lazy.fit(da.from_array(X, chunks=(13, 5)), yu)
    trace = "log_posterior_" if method == "em" else "elbo_"
    np.testing.assert_allclose(getattr(lazy, trace), getattr(whole, trace), rtol=1e-10)
    np.testing.assert_allclose(lazy.label_distributions_, whole.label_distributions_, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(lazy.predict_proba(X), whole.predict_proba(X), rtol=1e-10, atol=1e-12)
    for a, b in zip(_leaves(lazy.posterior_), _leaves(whole.posterior_)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
