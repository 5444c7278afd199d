"""Generic empirical Bayes (bayesnb.core.empirical_bayes.maximize_evidence) and the priors it learns.

Oracles: the closed-form evidences written out here from the raw rows in NumPy/SciPy
(``scipy.special.multigammaln``, ``numpy.linalg.slogdet``, ``scipy.special.gammaln``),
maximised by ``scipy.optimize.minimize(method="Nelder-Mead")`` (derivative-free, not
the library's solver), and a fine grid along each coordinate around the optimum.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import gammaln, multigammaln
from sklearn.datasets import load_digits, load_iris, load_wine

from bayesnb import GaussianBayesClassifier, GaussianNB, PoissonNB
from bayesnb.core import families
from bayesnb.core.empirical_bayes import EvidenceTrace, maximize_evidence
from bayesnb.core.families import gaussian_mv, poisson
from bayesnb.core.priors import Gamma

# ----------------------------------------------------------------------------- oracles


def niw_log_evidence(X, y, m0, kappa, df, scale, shared):
    """log p(X | y) under NIW(m0_c, kappa, df, scale) from the raw rows (numpy/scipy)."""
    F = X.shape[1]
    total, scatter_sum, n_all = 0.0, np.zeros((F, F)), 0
    for c in np.unique(y):
        Xc = X[y == c]
        n = Xc.shape[0]
        xbar = Xc.mean(axis=0)
        S = (Xc - xbar).T @ (Xc - xbar)
        d = xbar - m0[c]
        B = S + kappa * n / (kappa + n) * np.outer(d, d)
        total += -0.5 * n * F * np.log(np.pi) + 0.5 * F * (np.log(kappa) - np.log(kappa + n))
        if shared:
            scatter_sum += B
            n_all += n
        else:
            total += 0.5 * df * np.linalg.slogdet(scale)[1] - 0.5 * (df + n) * np.linalg.slogdet(scale + B)[1]
            total += multigammaln(0.5 * (df + n), F) - multigammaln(0.5 * df, F)
    if shared:
        total += 0.5 * df * np.linalg.slogdet(scale)[1] - 0.5 * (df + n_all) * np.linalg.slogdet(scale + scatter_sum)[1]
        total += multigammaln(0.5 * (df + n_all), F) - multigammaln(0.5 * df, F)
    return total


def poisson_log_evidence(X, y):
    """``(a, b) -> log p(X | y)`` under iid Gamma(a, b) rates per (class, feature), from the raw rows.

    What does not depend on (a, b) (the log factorials, each class's rows and totals) is
    read from the rows once, not at every one of the optimiser's and the grid's evaluations.
    """
    constant = -np.sum(gammaln(X + 1.0))
    cells = []
    for c in np.unique(y):
        Xc = X[y == c]
        cells.append((Xc.shape[0], Xc.sum(axis=0)))

    def log_evidence(a, b):
        total = constant
        for n, t in cells:
            total += np.sum(a * np.log(b) - (a + t) * np.log(b + n) + gammaln(a + t) - gammaln(a))
        return total

    return log_evidence


def nelder_mead(f, x0):
    res = minimize(
        lambda v: -f(v), x0, method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 40000, "maxfev": 40000}
    )
    return res.x


def assert_grid_maximum(f, opt, half_width=0.05, n=40):
    """No point of a fine grid along each coordinate (in log space) beats ``opt``."""
    best = f(opt)
    for i in range(opt.size):
        for delta in np.linspace(-half_width, half_width, n + 1):
            if delta == 0.0:
                continue
            moved = opt.copy()
            moved[i] += delta
            assert f(moved) <= best + 1e-10 * abs(best), (i, delta, f(moved) - best)


# ----------------------------------------------------------------------------- Gaussian NIW


@pytest.mark.parametrize(
    "covariance, loader", [("full", load_wine), ("shared", load_wine), ("full", load_iris), ("shared", load_iris)]
)
def test_gaussian_bayes_evidence_prior_is_the_evidence_maximum(covariance, loader):
    X, y = loader(return_X_y=True)
    F = X.shape[1]
    shared = covariance == "shared"
    est = GaussianBayesClassifier(covariance=covariance, prior="evidence").fit(X, y)
    default = GaussianBayesClassifier(covariance=covariance).fit(X, y)
    start = default.prior_
    # Learned: kappa0 (one for every class), nu0, a multiplier of Psi0; m0 unchanged.
    kappa, df = float(est.prior_.kappa[0]), float(np.ravel(est.prior_.df)[0])
    s = float(np.ravel(np.asarray(est.prior_.scale)[..., 0, 0] / np.asarray(start.scale)[..., 0, 0])[0])
    np.testing.assert_allclose(est.prior_.kappa, kappa, rtol=0)
    np.testing.assert_allclose(est.prior_.df, df, rtol=0)
    np.testing.assert_allclose(est.prior_.scale, s * np.asarray(start.scale), rtol=1e-12)
    np.testing.assert_array_equal(est.prior_.loc, start.loc)
    assert df > F - 1

    base_scale = np.asarray(start.scale)[0] if not shared else np.asarray(start.scale)
    m0 = np.asarray(start.loc)

    def oracle(theta):  # theta = (log kappa, log(nu - F + 1), log s)
        return niw_log_evidence(X, y, m0, np.exp(theta[0]), F - 1 + np.exp(theta[1]), np.exp(theta[2]) * base_scale, shared)

    learned = np.log([kappa, df - F + 1, s])
    # The library's value is the oracle's at the learned prior.
    assert float(gaussian_mv.log_evidence(est.prior_, est.stats_)) == pytest.approx(oracle(learned), rel=1e-10)
    # Nelder-Mead on the numpy closed form, from the default prior, finds the same optimum.
    reference = nelder_mead(oracle, np.log([0.01, 3.0, 1.0]))
    np.testing.assert_allclose(learned, reference, atol=2e-4)
    assert oracle(learned) >= oracle(reference) - 1e-9 * abs(oracle(reference))
    assert_grid_maximum(oracle, learned)

    trace = est.evidence_trace_["prior"]
    assert isinstance(trace, EvidenceTrace) and trace.converged
    assert trace.names == ("kappa", "df", "scale_multiplier")
    np.testing.assert_allclose(trace.values[-1, 0], [kappa, df, s], rtol=1e-12)
    assert trace.log_evidence[-1] == pytest.approx(oracle(learned), rel=1e-10)
    assert trace.log_evidence[-1] >= trace.log_evidence.max() - 1e-9
    assert est.log_evidence() >= default.log_evidence()


def test_gaussian_bayes_diag_evidence_is_gaussian_nb_evidence():
    X, y = load_iris(return_X_y=True)
    diag = GaussianBayesClassifier(covariance="diag", prior="evidence").fit(X, y)
    nb = GaussianNB(prior="evidence").fit(X, y)
    for a, b in zip(diag.prior_, nb.prior_):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    assert diag.evidence_trace_["prior"].names == ("kappa", "rate_scale")
    assert diag.log_evidence() == pytest.approx(nb.log_evidence(), rel=1e-12)


def test_gaussian_bayes_evidence_prior_is_relearned_from_all_statistics():
    X, y = load_wine(return_X_y=True)
    full = GaussianBayesClassifier(covariance="shared", prior="evidence").fit(X, y)
    chained = GaussianBayesClassifier(covariance="shared", prior="evidence")
    for part in np.array_split(np.random.default_rng(0).permutation(len(y)), 3):
        chained.partial_fit(X[part], y[part], classes=np.unique(y))
    for a, b in zip(full.prior_, chained.prior_):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def nig_log_evidence(X, y, m0, kappa, a0, b0):
    """log p(X | y) under NIG(m0, kappa, a0, b0) per (class, feature), from the raw rows."""
    total = 0.0
    for c in np.unique(y):
        Xc = X[y == c]
        n = Xc.shape[0]
        xbar = Xc.mean(axis=0)
        m2 = ((Xc - xbar) ** 2).sum(axis=0)
        kn, an = kappa + n, a0 + 0.5 * n
        bn = b0 + 0.5 * m2 + kappa * n * (xbar - m0) ** 2 / (2.0 * kn)
        total += np.sum(
            -0.5 * n * np.log(2 * np.pi) + 0.5 * np.log(kappa / kn) + a0 * np.log(b0) - an * np.log(bn)
            + gammaln(an) - gammaln(a0)
        )
    return total


def test_the_gaussian_prior_can_also_learn_the_shape_and_a_shift_of_the_mean():
    """maximize_evidence from GaussianNB's default prior over ("loc", "kappa", "concentration",
    "rate"): m0 shifted, kappa0, a0 and the multiplier of b0, each one scalar for every cell."""
    from bayesnb.core.families import gaussian
    from bayesnb.estimators.gaussian import evidence_prior

    X, y = load_iris(return_X_y=True)
    stats = GaussianNB().fit(X, y).stats_
    base = gaussian.default_prior(stats)
    prior, trace = maximize_evidence(
        gaussian.family, base, stats, ("loc", "kappa", "concentration", "rate"), transforms={"rate": "log_multiplier"}
    )
    two, _ = evidence_prior(stats)
    assert trace.converged and trace.names == ("loc_shift", "kappa", "concentration", "rate_multiplier")
    shift, kappa, a0, mult = trace.values[-1, 0]
    np.testing.assert_allclose(prior.loc, base.loc + shift, rtol=1e-12)
    np.testing.assert_allclose(prior.rate, base.rate * mult, rtol=1e-12)

    m0, b0 = np.asarray(base.loc)[0], np.asarray(base.rate)[0]

    def oracle(theta):
        return nig_log_evidence(X, y, m0 + theta[0], np.exp(theta[1]), np.exp(theta[2]), np.exp(theta[3]) * b0)

    learned = np.array([shift, np.log(kappa), np.log(a0), np.log(mult)])
    assert float(gaussian.log_evidence(prior, stats)) == pytest.approx(oracle(learned), rel=1e-10)
    reference = nelder_mead(oracle, np.array([0.0, np.log(0.01), 0.0, 0.0]))
    np.testing.assert_allclose(learned, reference, atol=2e-4)
    assert_grid_maximum(oracle, learned)
    # More freedom, no less evidence than the default fields (kappa0, b0 multiplier).
    assert float(gaussian.log_evidence(prior, stats)) >= float(gaussian.log_evidence(two, stats))


# ----------------------------------------------------------------------------- Poisson Gamma


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X, y


def test_poisson_evidence_prior_is_the_evidence_maximum(digits):
    X, y = digits
    est = PoissonNB(prior="evidence").fit(X, y)
    default = PoissonNB().fit(X, y)
    a, b = float(est.prior_.concentration[0, 0]), float(est.prior_.rate[0, 0])
    np.testing.assert_array_equal(est.prior_.concentration, a)
    np.testing.assert_array_equal(est.prior_.rate, b)

    evidence = poisson_log_evidence(X, y)

    def oracle(theta):
        return evidence(np.exp(theta[0]), np.exp(theta[1]))

    learned = np.log([a, b])
    assert float(poisson.log_evidence(est.prior_, est.stats_)) == pytest.approx(oracle(learned), rel=1e-11)
    reference = nelder_mead(oracle, np.log([1.0, 0.01]))
    np.testing.assert_allclose(learned, reference, atol=1e-4)
    assert_grid_maximum(oracle, learned)
    trace = est.evidence_trace_["prior"]
    assert trace.converged and trace.names == ("concentration", "rate")
    assert est.log_evidence() >= default.log_evidence()


@pytest.mark.parametrize("learn", ["alpha", "beta"])
def test_poisson_alpha_or_beta_evidence_learns_that_one_only(digits, learn):
    X, y = digits
    X, y = X[:600], y[:600]
    fixed = {"alpha": 2.0, "beta": 0.5}
    kwargs = dict(fixed, **{learn: "evidence"})
    est = PoissonNB(**kwargs).fit(X, y)
    other = "beta" if learn == "alpha" else "alpha"
    field = {"alpha": "concentration", "beta": "rate"}
    np.testing.assert_array_equal(getattr(est.prior_, field[other]), fixed[other])
    value = float(np.ravel(getattr(est.prior_, field[learn]))[0])

    evidence = poisson_log_evidence(X, y)

    def oracle(theta):
        ab = dict(fixed, **{learn: np.exp(theta[0])})
        return evidence(ab["alpha"], ab["beta"])

    reference = nelder_mead(oracle, np.log([fixed[learn]]))
    assert np.log(value) == pytest.approx(reference[0], abs=1e-4)
    assert_grid_maximum(oracle, np.log([value]))
    assert est.evidence_trace_["prior"].names == (field[learn],)
    assert est.log_evidence() >= PoissonNB(**fixed).fit(X, y).log_evidence()


def test_poisson_evidence_with_an_explicit_prior_is_refused(digits):
    X, y = digits
    with pytest.raises(ValueError, match="prior='evidence'"):
        PoissonNB(alpha="evidence", prior=Gamma(1.0, 1.0)).fit(X[:50], y[:50])


# ----------------------------------------------------------------------------- every family


def _data(support, rng, n):
    """Three features whose parameters differ (a finite evidence maximum), by kind of value."""
    return {
        "counts": lambda: rng.poisson([1.0, 4.0, 10.0], (n, 3)).astype(float),
        "binary": lambda: (rng.uniform(size=(n, 3)) < [0.1, 0.5, 0.85]).astype(float),
        "codes": lambda: np.stack([rng.choice(3, n, p=p) for p in ([0.8, 0.1, 0.1], [0.3, 0.4, 0.3], [0.1, 0.1, 0.8])], 1),
        "real": lambda: rng.normal([0.0, 1.0, 2.0], [1.0, 0.5, 2.0], (n, 3)),
        "positive": lambda: rng.gamma(2.0, [0.5, 1.5, 4.0], (n, 3)),
    }[support]()


@pytest.mark.parametrize("name", families.names())
def test_maximize_evidence_finds_a_stationary_maximum_in_every_family(name):
    """Every registered family: the evidence at the result beats the start and every
    single-coordinate move of 1e-3 (the maximum is interior), checked on the eager evidence."""
    family = families.get(name)
    rng = np.random.default_rng(3)
    y = np.repeat([0, 1], 30)
    X = _data(family.support, rng, 60)
    X[y == 1] = X[y == 1][:, [1, 2, 0]]  # classes differ
    stats = family.stats(X, y, 2)
    start = family.default_prior(stats)
    # Fields bounded below by something other than 0 (the Wishart df) are left out here.
    fields = [f for f in family.hyperparameters if f != "df"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no bound reached, no failure to converge
        prior, trace = maximize_evidence(family, start, stats, fields)
    assert trace.converged
    best = float(family.log_evidence(prior, stats))
    assert best >= float(family.log_evidence(start, stats))
    assert trace.log_evidence[-1] == pytest.approx(best, rel=1e-12)
    for field in fields:
        value = np.asarray(getattr(prior, field), dtype=np.float64)
        for factor in (1e-3, -1e-3):
            if field == "loc":
                moved = value + factor * (np.abs(value).mean() + 1.0)
            else:
                moved = value * np.exp(factor)
            assert float(family.log_evidence(prior._replace(**{field: moved}), stats)) <= best, (field, factor)


def test_maximize_evidence_refuses_unknown_fields_and_transforms(digits):
    X, y = digits
    stats = poisson.family.stats(X[:50], y[:50], 10)
    start = poisson.family.default_prior(stats)
    with pytest.raises(ValueError, match="not a hyperparameter of the poisson family"):
        maximize_evidence(poisson.family, start, stats, ["loc"])
    with pytest.raises(ValueError, match="transform of 'rate'"):
        maximize_evidence(poisson.family, start, stats, ["rate"], transforms={"rate": "exp"})
