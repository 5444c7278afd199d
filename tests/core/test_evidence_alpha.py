"""Empirical Bayes: ``alpha="evidence"`` and siblings maximise the log evidence.

Oracles: the estimators' own ``log_evidence()`` on a fine grid of hyperparameters (the
optimum must be the grid's argmax to the grid's resolution, and a finite-difference
derivative of ``log_evidence()`` must vanish there); scipy's L-BFGS-B on the same
function for the per-class / per-feature scopes; ``jax.hessian`` for the structured
curvature; and the additivity of the statistics (``partial_fit`` = ``fit``, weights =
duplicated rows, sparse = dense).
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose
from scipy import optimize
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from bayesnb import BernoulliNB, CategoricalNB, GaussianNB, MultinomialNB
from bayesnb.core import empirical_bayes as eb
from bayesnb.core._x64 import enable_x64
from bayesnb.core.families import _dirichlet
from bayesnb.core.families import gaussian as gaussian_family
from bayesnb.core.priors import Beta, Dirichlet, NormalInverseGamma
from bayesnb.exceptions import EvidenceWarning

C, F = 3, 12


def _data(family, seed=0, n=120):
    """Three classes, 12 features; for each family a few features depend on the class."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, C, n)
    y[:C] = np.arange(C)
    if family == "multinomial":
        theta = rng.dirichlet(np.full(F, 0.6), size=C)
        X = np.stack([rng.multinomial(rng.integers(5, 40), theta[c]) for c in y])
    elif family == "bernoulli":
        p = rng.beta(0.6, 1.5, size=(C, F))
        X = (rng.random((n, F)) < p[y]).astype(np.int64)
    elif family == "categorical":
        k = np.array([2, 3, 4, 5] * 3)
        X = np.column_stack([rng.choice(kj, size=n, p=rng.dirichlet(np.full(kj, 0.8))) for kj in k])
        X[:, :4] = (X[:, :4] + y[:, None]) % k[:4]
    elif family == "gaussian":
        # Class means 0, 1, 3 times a per-feature offset: no class sits at the pooled mean.
        shift = np.array([0.0, 1.0, 3.0])[y][:, None]
        X = rng.normal(size=(n, 4)) * np.array([1.0, 3.0, 0.5, 10.0]) + np.array([0.5, 1.0, 0.3, 5.0]) * shift
    else:
        raise AssertionError(family)
    return X, y


_MAKE = {"multinomial": MultinomialNB, "bernoulli": BernoulliNB, "categorical": CategoricalNB}


def _make(family, **kw):
    if family == "categorical":
        kw.setdefault("min_categories", np.array([2, 3, 4, 5] * 3))
    return _MAKE[family](**kw)


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        return fn(*args, **kw)


def _fd_stationary(L, u):
    """(first, second) central differences of ``L`` in ``u = log alpha``, step 1e-3."""
    h = 1e-3
    lp, l0, lm = L(u + h), L(u), L(u - h)
    return (lp - lm) / (2 * h), (lp - 2 * l0 + lm) / h**2


# ----------------------------------------------------------------------------- the grid oracle

GRID = np.geomspace(1e-2, 1e2, 401)  # 100 points per decade: log step 0.023
LOG_STEP = np.log(GRID[1] / GRID[0])


@pytest.mark.parametrize("family", ["multinomial", "bernoulli", "categorical"])
def test_evidence_alpha_is_the_argmax_of_a_fine_grid_and_the_gradient_vanishes_there(family):
    X, y = _data(family)
    est = _make(family, alpha="evidence").fit(X, y)
    a_hat = est.alpha_
    assert isinstance(a_hat, float) and GRID[0] < a_hat < GRID[-1]
    grid = np.array([_make(family, alpha=a).fit(X, y).log_evidence() for a in GRID])
    best = int(np.argmax(grid))
    assert 0 < best < GRID.size - 1, "the grid must bracket the optimum"
    assert abs(np.log(a_hat) - np.log(GRID[best])) <= LOG_STEP
    assert est.log_evidence() >= grid.max() - 1e-9 * abs(grid.max())

    def L(u):
        return _make(family, alpha=float(np.exp(u))).fit(X, y).log_evidence()

    d1, d2 = _fd_stationary(L, np.log(a_hat))
    assert d2 < 0
    # The derivative's zero lies within 1e-4 (in log alpha) of the optimum found.
    assert abs(d1 / d2) < 1e-4
    trace = est.evidence_trace_["alpha"]
    assert trace.converged and not trace.at_bound.any()
    assert trace.n_iter <= 8
    assert trace.grad_norm[-1] <= 1e-8 * (1 + abs(trace.log_evidence[-1]))
    # The trace reports the feature part of the evidence: log_evidence() minus the labels'.
    label_part = est.log_evidence() - float(est.family_.log_evidence(est.prior_, est.stats_))
    assert trace.log_evidence[-1] == pytest.approx(est.log_evidence() - label_part, rel=1e-12)
    assert np.all(np.diff(trace.log_evidence) >= -1e-9)


def test_class_alpha_evidence_is_the_argmax_of_a_fine_grid():
    X, y = _data("multinomial")
    y = np.repeat([0, 1, 2], [10, 80, 30])  # uneven: the optimum is interior
    est = MultinomialNB(class_alpha="evidence").fit(X, y)
    beta = est.class_alpha_
    grid = np.array([MultinomialNB(class_alpha=b).fit(X, y).log_evidence() for b in GRID])
    best = int(np.argmax(grid))
    assert 0 < best < GRID.size - 1
    assert abs(np.log(beta) - np.log(GRID[best])) <= LOG_STEP
    d1, d2 = _fd_stationary(lambda u: MultinomialNB(class_alpha=float(np.exp(u))).fit(X, y).log_evidence(), np.log(beta))
    assert d2 < 0 and abs(d1 / d2) < 1e-4
    assert est.evidence_trace_["class_alpha"].n_iter <= 8
    assert est.alpha_ == 1.0 and list(est.evidence_trace_) == ["class_alpha"]


def _grid2(a_axis, b_axis, fn):
    return np.array([[fn(a, b) for b in b_axis] for a in a_axis])


def test_bernoulli_pair_is_the_argmax_of_a_2d_grid():
    X, y = _data("bernoulli")
    est = BernoulliNB(alpha=("evidence", "evidence")).fit(X, y)
    a_hat, b_hat = est.alpha_
    axis = np.geomspace(1e-2, 1e2, 121)
    step = np.log(axis[1] / axis[0])
    # The same function as the estimator's log_evidence, vectorised over the grid.
    on = est.stats_.feature_count
    counts = np.stack([on, est.stats_.class_count[:, None] - on], -1)
    conc = np.stack(np.broadcast_arrays(axis[:, None], axis[None, :]), -1)[:, :, None, None, :]
    grid = np.asarray(_dirichlet.log_evidence_cells(conc, counts)).sum(axis=(2, 3))
    i, j = np.unravel_index(np.argmax(grid), grid.shape)
    assert 0 < i < axis.size - 1 and 0 < j < axis.size - 1
    assert abs(np.log(a_hat) - np.log(axis[i])) <= step and abs(np.log(b_hat) - np.log(axis[j])) <= step
    at_hat = BernoulliNB(alpha=(a_hat, b_hat), fit_prior=False).fit(X, y).log_evidence() + y.size * np.log(C)
    assert at_hat >= grid.max() - 1e-9 * abs(grid.max())
    trace = est.evidence_trace_["alpha"]
    assert trace.names == ("a", "b") and trace.converged and trace.n_iter <= 10
    assert a_hat < b_hat  # rare features: the prior mean a / (a + b) is below one half


def test_gaussian_kappa_and_rate_are_the_argmax_of_a_2d_grid():
    X, y = _data("gaussian")
    est = GaussianNB(prior="evidence").fit(X, y)
    trace = est.evidence_trace_["prior"]
    kappa, scale = trace.values[-1, 0]
    base = gaussian_family.default_prior(est.stats_)
    assert_allclose(est.prior_.kappa, kappa, rtol=1e-15)
    assert_allclose(est.prior_.rate, scale * base.rate, rtol=1e-15)
    k_axis, s_axis = np.geomspace(1e-3, 1e3, 121), np.geomspace(1e-2, 1e4, 121)
    step_k, step_s = np.log(k_axis[1] / k_axis[0]), np.log(s_axis[1] / s_axis[0])
    n = est.stats_.class_count[:, None]
    dev = gaussian_family._deviation(est.stats_, base.loc)
    grid = gaussian_family.log_evidence_cells(
        n, k_axis[:, None, None, None], base.concentration, s_axis[None, :, None, None] * base.rate, est.stats_.m2, dev
    ).sum(axis=(2, 3))
    i, j = np.unravel_index(np.argmax(grid), grid.shape)
    assert 0 < i < k_axis.size - 1 and 0 < j < s_axis.size - 1
    assert abs(np.log(kappa) - np.log(k_axis[i])) <= step_k
    assert abs(np.log(scale) - np.log(s_axis[j])) <= step_s
    fixed = GaussianNB(prior=est.prior_).fit(X, y)
    assert fixed.log_evidence() == pytest.approx(est.log_evidence(), rel=1e-12)
    assert fixed.log_evidence() >= GaussianNB().fit(X, y).log_evidence()
    assert trace.converged and trace.n_iter <= 10


# ----------------------------------------------------------------------------- other scopes


def _scipy_optimum(L, n_params, x0):
    res = optimize.minimize(lambda u: -L(u), x0, method="L-BFGS-B", options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 2000})
    return res.x, -res.fun


_SCOPE_CASES = [
    ("multinomial", "class"),
    ("multinomial", "feature"),
    ("bernoulli", "class"),
    ("bernoulli", "feature"),
    ("categorical", "class"),
    ("categorical", "feature"),
]


@pytest.mark.parametrize("family,scope", _SCOPE_CASES)
def test_class_and_feature_scopes_match_an_independent_optimiser(family, scope):
    X, y = _data(family)
    est = _make(family, alpha="evidence", alpha_scope=scope).fit(X, y)
    alpha = np.asarray(est.alpha_)
    assert alpha.shape == ((C, 1) if scope == "class" else (F,))
    n = C if scope == "class" else F
    layout = (C, 1) if scope == "class" else (F,)

    def L(u):
        return _make(family, alpha=np.exp(u).reshape(layout), fit_prior=False).fit(X, y).log_evidence()

    u_ref, best_ref = _scipy_optimum(L, n, np.zeros(n))
    ours = L(np.log(alpha).ravel())
    assert ours >= best_ref - 1e-9 * abs(best_ref)
    assert_allclose(np.log(alpha).ravel(), u_ref, atol=2e-3)
    trace = est.evidence_trace_["alpha"]
    assert trace.converged and trace.n_iter <= 12
    assert trace.values.shape == (trace.n_iter + 1, n, 1)


@pytest.mark.parametrize("scope", ["class", "feature"])
def test_gaussian_scopes_match_an_independent_optimiser(scope):
    X, y = _data("gaussian")
    est = GaussianNB(prior="evidence", prior_scope=scope).fit(X, y)
    base = gaussian_family.default_prior(est.stats_)
    n = C if scope == "class" else X.shape[1]
    layout = (C, 1) if scope == "class" else (1, X.shape[1])

    def L(u):
        k, s = np.exp(u[:n]).reshape(layout), np.exp(u[n:]).reshape(layout)
        prior = base._replace(kappa=np.broadcast_to(k, base.rate.shape), rate=s * base.rate)
        return GaussianNB(prior=prior).fit(X, y).log_evidence()

    x0 = np.concatenate([np.full(n, np.log(0.01)), np.zeros(n)])
    u_ref, best_ref = _scipy_optimum(L, 2 * n, x0)
    trace = est.evidence_trace_["prior"]
    u_ours = np.log(trace.values[-1]).T.ravel()
    assert est.log_evidence() >= best_ref - 1e-9 * abs(best_ref)
    assert_allclose(u_ours, u_ref, atol=5e-3)
    assert trace.converged and trace.n_iter <= 12


def test_simplex_curvature_equals_the_closed_form_hessian():
    """The per-word multinomial curvature (diag + rank one, from two gradient differences).

    Oracle: Minka's closed form with scipy's digamma and trigamma. In alpha,
    H = diag(sum_c psi1(a_j + T_cj) - psi1(a_j)) - (sum_c psi1(A + N_c) - psi1(A)) 11^T and
    g_j = sum_c psi(a_j + T_cj) - psi(a_j) - (sum_c psi(A + N_c) - psi(A)); in u = log alpha
    the Hessian is diag(a) H diag(a) + diag(a g).
    """
    from scipy.special import polygamma, psi

    X, y = _data("multinomial")
    T = MultinomialNB().fit(X, y).stats_.feature_count
    N = T.sum(axis=1)
    rng = np.random.default_rng(3)
    u = rng.normal(scale=0.7, size=(F, 1))
    a = np.exp(u[:, 0])
    A = a.sum()
    q = (polygamma(1, a + T) - polygamma(1, a)).sum(axis=0)
    z = -(polygamma(1, A + N) - polygamma(1, A)).sum()
    g = (psi(a + T) - psi(a)).sum(axis=0) - (psi(A + N) - psi(A)).sum()
    expected = np.outer(a, a) * (np.diag(q) + z) + np.diag(a * g)
    # The objective learn_prior maximises for a per-word alpha: the family's own evidence.
    est = MultinomialNB().fit(X, y)
    family = est._family
    layout = (family, ((("concentration",), "log"),), (1, F), False)
    with enable_x64():
        data = (family.default_prior(est.stats_), est.stats_)

        def grad_at(v):
            return np.asarray(eb._grad(jnp.asarray(v), data, eb._protocol_objective, layout))

        assert_allclose(grad_at(u)[:, 0], a * g, rtol=1e-10, atol=1e-10)
        d, zz, theta = eb._curvature(grad_at, u, grad_at(u), np.ones((F, 1), bool), "simplex")
    got = np.diag(d) + zz * np.outer(theta, theta)
    # Forward differences with step h = 1e-6 in log alpha: relative error ~ h.
    assert_allclose(got, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


# ----------------------------------------------------------------------------- additivity


@pytest.mark.parametrize("family", ["multinomial", "bernoulli", "categorical"])
def test_partial_fit_reoptimises_from_the_accumulated_statistics(family):
    X, y = _data(family)
    full = _quiet(_make(family, alpha="evidence", class_alpha="evidence").fit, X, y)
    chained = _make(family, alpha="evidence", class_alpha="evidence")
    for rows in np.array_split(np.arange(y.size), 3):
        _quiet(chained.partial_fit, X[rows], y[rows], classes=np.arange(C))
    assert chained.alpha_ == pytest.approx(full.alpha_, rel=1e-8)
    assert chained.class_alpha_ == pytest.approx(full.class_alpha_, rel=1e-8)
    assert chained.log_evidence() == pytest.approx(full.log_evidence(), rel=1e-12)
    assert_allclose(chained.predict_proba(X[:10]), full.predict_proba(X[:10]), rtol=1e-8)
    # After the first batch alone the optimum was another one: it was re-learned.
    first = _make(family, alpha="evidence").partial_fit(X[:40], y[:40], classes=np.arange(C))
    assert first.alpha_ != pytest.approx(full.alpha_, rel=1e-3)


@pytest.mark.parametrize("family", ["multinomial", "bernoulli", "categorical"])
def test_integer_weights_equal_duplicated_rows(family):
    X, y = _data(family)
    w = np.random.default_rng(5).integers(0, 4, y.size)
    w[:C] = 1
    weighted = _make(family, alpha="evidence", alpha_scope="feature").fit(X, y, sample_weight=w)
    keep = np.repeat(np.arange(y.size), w)
    repeated = _make(family, alpha="evidence", alpha_scope="feature").fit(X[keep], y[keep])
    assert_allclose(weighted.alpha_, repeated.alpha_, rtol=1e-7)
    assert weighted.log_evidence() == pytest.approx(repeated.log_evidence(), rel=1e-12)


@pytest.mark.parametrize("family", ["multinomial", "bernoulli"])
def test_sparse_input_gives_the_dense_answer(family):
    X, y = _data(family)
    dense = _make(family, alpha="evidence", alpha_scope="class").fit(X, y)
    sparse = _make(family, alpha="evidence", alpha_scope="class").fit(sp.csr_matrix(X), y)
    assert_allclose(sparse.alpha_, dense.alpha_, rtol=1e-10)


@pytest.mark.parametrize("family,scope", [("multinomial", "shared"), ("multinomial", "feature"), ("bernoulli", "class"), ("categorical", "feature")])
def test_alpha_underscore_fed_back_as_alpha_gives_the_same_model(family, scope):
    X, y = _data(family)
    alpha = ("evidence", "evidence") if family == "bernoulli" else "evidence"
    learned = _make(family, alpha=alpha, alpha_scope=scope).fit(X, y)
    fixed = _make(family, alpha=learned.alpha_).fit(X, y)
    assert fixed.alpha_ is learned.alpha_
    assert fixed.log_evidence() == pytest.approx(learned.log_evidence(), rel=1e-13)
    assert_allclose(fixed.predict_proba(X), learned.predict_proba(X), rtol=1e-12)
    assert fixed.evidence_trace_ == {}


# ----------------------------------------------------------------------------- bounds, errors


def test_even_classes_send_class_alpha_to_the_upper_bound_with_a_warning():
    X, _ = _data("multinomial", n=90)
    y = np.repeat([0, 1, 2], 30)
    with pytest.warns(EvidenceWarning, match=r"increases above the bounds .* class_alpha"):
        est = MultinomialNB(class_alpha="evidence").fit(X, y)
    assert est.class_alpha_ == pytest.approx(eb.UPPER)
    trace = est.evidence_trace_["class_alpha"]
    assert trace.at_bound.all() and trace.converged
    # Uniform proportions are the limit: the evidence of the labels is N log(1/3).
    label_part = est.log_evidence() - float(est.family_.log_evidence(est.prior_, est.stats_))
    assert label_part == pytest.approx(90 * np.log(1 / 3), rel=1e-6)


def test_feature_never_on_gets_a_vanishing_prior_mean_and_the_rest_is_unaffected():
    X, y = _data("bernoulli")
    X = X.copy()
    X[:, 3] = 0
    est = _quiet(BernoulliNB(alpha=("evidence", "evidence"), alpha_scope="feature").fit, X, y)
    a, b = est.alpha_
    # Never on: the evidence of the column tends to its supremum 0 as the prior mean
    # a / (a + b) -> 0 (the optimiser stops when the gain is below round-off or at a bound).
    assert a[3] / (a[3] + b[3]) < 1e-6
    assert np.isfinite(est.predict_log_proba(X)).all()
    # Per-feature (a, b) are separable: the other features get what they get without it.
    rest = _quiet(BernoulliNB(alpha=("evidence", "evidence"), alpha_scope="feature").fit, np.delete(X, 3, axis=1), y)
    a, b = np.delete(a, 3), np.delete(b, 3)
    ra, rb = rest.alpha_
    # A feature whose supremum is at infinite precision (same rate in every class) runs
    # along a flat ridge a + b -> inf where only the evidence is sharp: compare that.
    interior = np.maximum(a + b, ra + rb) < 1e6
    assert interior.sum() >= 9
    assert_allclose(a[interior], ra[interior], rtol=1e-6)
    assert_allclose(b[interior], rb[interior], rtol=1e-6)

    def per_feature(model, a, b):
        on = model.stats_.feature_count
        counts = np.stack([on, model.stats_.class_count[:, None] - on], -1)
        return np.asarray(_dirichlet.log_evidence_cells(np.stack([a, b], -1), counts)).sum(axis=0)

    assert_allclose(
        np.delete(per_feature(est, *est.alpha_), 3), per_feature(rest, ra, rb), rtol=1e-9
    )


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: MultinomialNB(alpha=1.0, alpha_scope="feature"), "alpha_scope='feature' says which"),
        (lambda: MultinomialNB(alpha="evidence", alpha_scope="word"), "alpha_scope must be one of"),
        (lambda: BernoulliNB(alpha=("evidence", 1.0)), r"learn both a and b with \('evidence', 'evidence'\)"),
        (lambda: GaussianNB(prior=None, prior_scope="class"), "prior_scope='class' says which"),
    ],
)
def test_bad_evidence_settings_are_refused(make, match):
    X, y = _data("gaussian") if "Gaussian" in repr(make()) else _data("bernoulli")
    with pytest.raises(ValueError, match=match):
        make().fit(X, y)


def test_other_strings_are_still_refused_by_name():
    X, y = _data("multinomial")
    with pytest.raises(TypeError, match="alpha must be a positive number or array, got 'evidenc'"):
        MultinomialNB(alpha="evidenc").fit(X, y)
    with pytest.raises(TypeError, match="class_alpha must be a positive number or array, got 'Evidence'"):
        MultinomialNB(class_alpha="Evidence").fit(X, y)


# ----------------------------------------------------------------------------- sklearn front


def test_params_keep_the_string_and_the_learned_value_goes_to_alpha_underscore():
    X, y = _data("multinomial")
    est = MultinomialNB(alpha="evidence", alpha_scope="class", class_alpha="evidence")
    params = est.get_params()
    assert params["alpha"] == "evidence" and params["alpha_scope"] == "class" and params["class_alpha"] == "evidence"
    _quiet(est.fit, X, y)
    assert est.alpha == "evidence" and est.get_params()["alpha"] == "evidence"
    assert est.alpha_.shape == (C, 1)
    twin = clone(est)
    assert twin.get_params() == params and not hasattr(twin, "alpha_")
    _quiet(est.set_params(alpha=0.5, alpha_scope="shared").fit, X, y)
    assert est.alpha_ == 0.5 and list(est.evidence_trace_) == ["class_alpha"]


def test_grid_search_over_alpha_including_evidence():
    X, y = _data("multinomial", n=150)
    search = GridSearchCV(
        MultinomialNB(), {"alpha": [0.01, 1.0, "evidence"], "alpha_scope": ["shared"]}, cv=3, scoring="neg_log_loss"
    )
    _quiet(search.fit, X, y)
    assert search.cv_results_["params"][2]["alpha"] == "evidence"
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert search.best_estimator_.get_params()["alpha"] in (0.01, 1.0, "evidence")
    scoped = GridSearchCV(MultinomialNB(alpha="evidence"), {"alpha_scope": ["shared", "class", "feature"]}, cv=3)
    _quiet(scoped.fit, X, y)
    assert np.all(np.isfinite(scoped.cv_results_["mean_test_score"]))


def test_class_alpha_evidence_is_shared_by_every_estimator():
    """The label part depends on the class counts only: every family learns the same beta."""
    from bayesnb import GaussianBayesClassifier, PoissonNB

    X, _ = _data("multinomial")
    y = np.repeat([0, 1, 2], [10, 80, 30])
    ref = MultinomialNB(class_alpha="evidence").fit(X, y).class_alpha_
    for est in (PoissonNB(class_alpha="evidence"), GaussianBayesClassifier(class_alpha="evidence")):
        est.fit(X.astype(float) if isinstance(est, GaussianBayesClassifier) else X, y)
        assert est.class_alpha_ == pytest.approx(ref, rel=1e-10)
        assert list(est.evidence_trace_) == ["class_alpha"]
    fixed = MultinomialNB(class_alpha="evidence", class_prior=[0.2, 0.3, 0.5]).fit(X, y)
    assert fixed.class_alpha_ is None and fixed.evidence_trace_ == {}
