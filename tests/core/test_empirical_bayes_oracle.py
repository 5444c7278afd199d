"""One empirical Bayes for every family: ``learn_prior`` against an independent optimiser.

Every prior learned from the evidence (``alpha="evidence"`` of the multinomial, Bernoulli
and categorical estimators, ``prior="evidence"`` of the diagonal Gaussian) goes through
:func:`bayesnb.core.empirical_bayes.learn_prior`, which maximises the family's own
``log_evidence`` through the protocol. The oracle here shares no code with it: the
closed-form log evidence written in NumPy/SciPy (``gammaln``, with its ``digamma``
gradient for the Dirichlet families), maximised by SciPy's L-BFGS-B from a point on a
coarse grid. The learned value must reach the oracle's maximum of that closed form (to
1e-10 relative) and agree with its argmax.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import optimize
from scipy.special import digamma, gammaln

from bayesnb import BernoulliNB, CategoricalNB, GaussianNB, MultinomialNB
from bayesnb.exceptions import EvidenceWarning

SCOPES = ("shared", "class", "feature")


def _data(kind, n_classes, seed):
    rng = np.random.default_rng(seed)
    n, F = 30 * n_classes, 7
    y = rng.integers(0, n_classes, n)
    y[:n_classes] = np.arange(n_classes)
    if kind == "multinomial":
        theta = rng.dirichlet(np.full(F, 0.7), size=n_classes)
        X = np.stack([rng.multinomial(rng.integers(5, 40), theta[c]) for c in y])
    elif kind == "bernoulli":
        p = rng.beta(0.7, 1.5, size=(n_classes, F))
        X = (rng.random((n, F)) < p[y]).astype(np.int64)
    elif kind == "categorical":
        k = np.array([2, 3, 4, 3, 2, 4, 3])
        X = np.column_stack([rng.choice(kj, size=n, p=rng.dirichlet(np.full(kj, 0.8))) for kj in k])
        X[:, :3] = (X[:, :3] + y[:, None]) % k[:3]
    else:
        X = rng.normal(size=(n, 4)) * np.array([1.0, 3.0, 0.5, 10.0]) + np.arange(n_classes)[y][:, None] * 0.8
    return X, y


def _one_hot(y, n_classes):
    return np.eye(n_classes)[y]


# ----------------------------------------------------------------------------- closed forms (NumPy)


def _dirichlet_cells(a, T, valid):
    """log B(a + T) - log B(a) over the last axis (valid coordinates only), and d/da."""
    a = np.where(valid, a, 1.0)
    T = np.where(valid, T, 0.0)
    A, N = (a * valid).sum(-1), T.sum(-1)
    value = (np.where(valid, gammaln(a + T) - gammaln(a), 0.0)).sum(-1) - (gammaln(A + N) - gammaln(A))
    grad = np.where(valid, digamma(a + T) - digamma(a) - (digamma(A + N) - digamma(A))[..., None], 0.0)
    return value.sum(), grad


def _tie(scope, C, F):
    return {"shared": (1, 1), "class": (C, 1), "feature": (1, F)}[scope]


def _maximise(negative, u0):
    res = optimize.minimize(negative, u0, jac=True, method="L-BFGS-B",
                            bounds=[(np.log(1e-8), np.log(1e8))] * u0.size,
                            options={"ftol": 1e-16, "gtol": 1e-11, "maxiter": 5000, "maxcor": 30})
    return res.x, -res.fun


def _dirichlet_problem(T, valid, tie, columns):
    """The negative log evidence of Dirichlet cells ``T`` (A, B, K) and its gradient in ``u``.

    ``u`` holds, per learned value, one log concentration per block of ``tie`` (a shape
    over the three axes, 1 where tied); ``columns`` lists, per learned value, the
    coordinates of the last axis it sets (Beta a: [1], b: [0], a = b: [0, 1]).
    """
    n_blocks = int(np.prod(tie))
    tied_axes = tuple(i for i, t in enumerate(tie) if t == 1)

    def fill(u):
        a = np.ones(T.shape)
        for i, coords in enumerate(columns):
            full = np.broadcast_to(np.exp(u[i * n_blocks : (i + 1) * n_blocks]).reshape(tie), T.shape)
            a[..., coords] = full[..., coords]
        return a

    def negative(u):
        a = fill(u)
        value, grad = _dirichlet_cells(a, T, valid)
        g = []
        for coords in columns:
            part = np.zeros(T.shape)
            part[..., coords] = (grad * a)[..., coords]
            g.append(part.sum(axis=tied_axes, keepdims=True).reshape(-1))
        return -value, -np.concatenate(g)

    return negative, n_blocks * len(columns)


def _fit(make, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        return make().fit(X, y)


@pytest.mark.parametrize("scope", SCOPES)
@pytest.mark.parametrize("kind", ["multinomial", "bernoulli", "bernoulli_pair", "categorical"])
def test_dirichlet_families_reach_the_closed_form_maximum(kind, scope):
    n_classes = 5 if scope == "class" else 2
    family = "bernoulli" if kind == "bernoulli_pair" else kind
    X, y = _data(family, n_classes, seed=n_classes)
    Y = _one_hot(y, n_classes)
    C, F = n_classes, X.shape[1]
    if family == "multinomial":
        # One Dirichlet per class over the F words: cells (C, 1), the simplex the words;
        # a per-word alpha is one value per coordinate of the simplex.
        T = (Y.T @ X).astype(float)[:, None, :]
        valid = np.ones(T.shape, bool)
        tie = {"shared": (1, 1, 1), "class": (C, 1, 1), "feature": (1, 1, F)}[scope]
        columns = [list(range(F))]
        est = _fit(lambda: MultinomialNB(alpha="evidence", alpha_scope=scope), X, y)
        learned = [est.alpha_]
    elif family == "bernoulli":
        on = Y.T @ X
        T = np.stack([Y.sum(0)[:, None] - on, on], -1).astype(float)  # (C, F, [x=0, x=1])
        valid = np.ones(T.shape, bool)
        tie = _tie(scope, C, F) + (1,)
        pair = kind == "bernoulli_pair"
        columns = [[1], [0]] if pair else [[0, 1]]
        est = _fit(lambda: BernoulliNB(alpha=("evidence", "evidence") if pair else "evidence", alpha_scope=scope), X, y)
        learned = list(est.alpha_) if pair else [est.alpha_]
    else:
        k = X.max(axis=0) + 1
        K = int(k.max())
        T = np.stack([Y.T @ (X[:, j][:, None] == np.arange(K)[None, :]) for j in range(F)], axis=1).astype(float)
        valid = np.broadcast_to((np.arange(K)[None, :] < k[:, None])[None], T.shape)
        tie = _tie(scope, C, F) + (1,)
        columns = [list(range(K))]
        est = _fit(lambda: CategoricalNB(alpha="evidence", alpha_scope=scope), X, y)
        learned = [est.alpha_]
    negative, size = _dirichlet_problem(T, valid, tie, columns)
    ours = np.concatenate([np.log(np.broadcast_to(np.asarray(v, float).reshape(-1), (int(np.prod(tie)),))) for v in learned])
    value = -negative(ours)[0]
    # The oracle from the best common value of a coarse grid ...
    starts = np.linspace(-4, 6, 21)
    u0 = np.full(size, starts[int(np.argmin([negative(np.full(size, s))[0] for s in starts]))])
    u_ref, best = _maximise(negative, u0)
    # ... is not above the learned prior's evidence, nor can it climb from the learned prior.
    assert value >= best - 1e-10 * abs(best)
    u_polished, polished = _maximise(negative, ours)
    # Where a concentration heads for the bound 1e-8 (the supremum at 0), the Newton
    # iteration stops once its steps gain less than round-off allows it to accept
    # (it then sits at ~1e-7, as the former per-family solver did); what is left there
    # is below 1e-8 of the evidence. Elsewhere the oracle cannot climb at all (1e-10).
    at_bound = np.any(ours < np.log(1e-6)) or np.any(ours > np.log(1e7))
    assert polished <= value + (1e-8 if at_bound else 1e-10) * abs(value)
    # Same point where the maximum is interior. With a and b both learned the evidence
    # is nearly flat along a ridge of (a, b) and L-BFGS-B from the grid stops ~1e-3 short
    # along it (at an evidence below ours): there the point is the oracle's own maximum
    # reached from ours.
    reference = u_polished if kind == "bernoulli_pair" else u_ref
    interior = (np.abs(reference) < np.log(1e5)) & (np.abs(ours) < np.log(1e5))
    assert_allclose(ours[interior], reference[interior], atol=1e-4)


def _nig_evidence(n, xbar, m2, m0, kappa, a0, b0):
    """Log evidence of the rows of each (class, feature) cell under NIG(m0, kappa, a0, b0)."""
    kn, an = kappa + n, a0 + n / 2
    bn = b0 + m2 / 2 + kappa * n * (xbar - m0) ** 2 / (2 * kn)
    return (gammaln(an) - gammaln(a0) + a0 * np.log(b0) - an * np.log(bn) + 0.5 * (np.log(kappa) - np.log(kn)) - n / 2 * np.log(2 * np.pi)).sum()


@pytest.mark.parametrize("scope", SCOPES)
def test_gaussian_reaches_the_closed_form_maximum(scope):
    n_classes = 5 if scope == "class" else 2
    X, y = _data("gaussian", n_classes, seed=10 + n_classes)
    C, F = n_classes, X.shape[1]
    Y = _one_hot(y, C)
    n = Y.sum(0)[:, None]
    xbar = (Y.T @ X) / n
    m2 = np.stack([((X[y == c] - xbar[c]) ** 2).sum(0) for c in range(C)])  # centred, exact
    # The default prior (the docs of GaussianNB): pooled mean, a0 = 1, b0 = 2% of the pooled variance.
    m0 = np.broadcast_to(X.mean(0), (C, F))
    b0 = np.broadcast_to(0.02 * X.var(0), (C, F))
    tie = _tie(scope, C, F)
    nb = int(np.prod(tie))

    def L(u):
        # Within the solver's bounds [1e-8, 1e8] (Nelder-Mead has none of its own).
        u = np.clip(u, np.log(1e-8), np.log(1e8))
        kappa = np.broadcast_to(np.exp(u[:nb]).reshape(tie), (C, F))
        s = np.exp(u[nb:]).reshape(tie)
        return _nig_evidence(n, xbar, m2, m0, kappa, 1.0, s * b0)

    grid = [(a, b) for a in np.linspace(-8, 4, 13) for b in np.linspace(-4, 6, 11)]
    a, b = grid[int(np.argmax([L(np.r_[np.full(nb, a), np.full(nb, b)]) for a, b in grid]))]
    res = optimize.minimize(lambda u: -L(u), np.r_[np.full(nb, a), np.full(nb, b)], method="L-BFGS-B",
                            bounds=[(np.log(1e-8), np.log(1e8))] * (2 * nb),
                            options={"ftol": 1e-16, "gtol": 1e-10, "maxiter": 5000})
    res = optimize.minimize(lambda u: -L(u), res.x, method="Nelder-Mead",
                            options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 20000, "maxfev": 40000})
    best = -res.fun
    est = _fit(lambda: GaussianNB(prior="evidence", prior_scope=scope), X, y)
    assert_allclose(est.prior_.loc, m0, rtol=1e-12)
    assert_allclose(est.prior_.concentration, 1.0)
    s = est.prior_.rate / b0
    block = tuple(slice(0, t) for t in tie)
    ours = np.r_[np.log(est.prior_.kappa)[block].ravel(), np.log(s)[block].ravel()]
    value = L(ours)
    assert value == pytest.approx(_nig_evidence(n, xbar, m2, m0, est.prior_.kappa, 1.0, est.prior_.rate), rel=1e-12)
    assert value >= best - 1e-10 * abs(best)
    polished = optimize.minimize(lambda u: -L(u), ours, method="Nelder-Mead",
                                 options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 20000, "maxfev": 40000})
    assert -polished.fun <= value + 1e-10 * abs(value)
    interior = (np.abs(res.x) < np.log(1e5)) & (np.abs(ours) < np.log(1e5))
    assert_allclose(ours[interior], res.x[interior], atol=1e-3)
