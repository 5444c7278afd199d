"""A hyperprior refit on other data of the same shapes compiles nothing (issue 41 item 9).

``fit`` with a hyperprior runs three compiled programs on the collapsed model: NUTS
(``bayesnb.ppl._nuts``), the log density at every draw (``collapsed.log_densities``) and
the optimiser's objective and gradient (``collapsed.posterior_mode``). Each takes the
sufficient statistics as arguments and is kept per model and shapes, so a second fit on
other data of the same shapes (another fold, a bootstrap resample) compiles none of them.

A stale program (the first data set's statistics compiled in, or a cache keyed without
them) would silently give the second fit the first one's posterior, so the tests check
the numbers as well as the count of compilations:

* oracle for the density and the mode: SciPy's ``gammaln`` and ``gamma`` / ``expon``
  log densities of the collapsed multinomial model (evidence of the counts and of the
  labels plus the log hyperpriors), and SciPy's optimiser on it;
* oracle for the whole fit: the same fit after every cache was cleared (a fresh process's
  computation: the programs compiled again from this data).

Compilations are counted with JAX's own monitoring events (``tests/_compiles.py``).
"""

from __future__ import annotations

import jax
import numpy as np
import numpyro.distributions as dist
import pytest
from _compiles import count_compiles
from scipy import optimize, stats
from scipy.special import gammaln

from bayesnb import GaussianNB, MultinomialNB
from bayesnb.core.priors import NormalInverseGamma
from bayesnb.ppl import _nuts, collapsed

# The settings of test_hyperprior.py's multinomial fit: in one process the two files
# share the NUTS program.
NUTS = dict(hyper_warmup=250, hyper_draws=250, hyper_chains=2)


def _counts(seed, n=45, f=6, c=3):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % c
    rates = rng.gamma(1.0, 2.0, (c, f))
    return rng.poisson(rates[y]), y


def _multinomial(**kwargs):
    return MultinomialNB(alpha=dist.Gamma(2.0, 1.0), class_alpha=dist.Exponential(1.0), random_state=0,
                         hyper_predict_draws=20, **NUTS, **kwargs)


def _scipy_log_density(a, beta, X, y):
    """The collapsed density of (alpha, class_alpha): SciPy's gammaln and gamma/expon logpdf."""
    T = np.stack([X[y == c].sum(0) for c in np.unique(y)]).astype(float)
    N = np.bincount(y).astype(float)
    f = T.shape[1]
    feat = np.sum(gammaln(a + T) - gammaln(a)) + np.sum(gammaln(f * a) - gammaln(f * a + T.sum(1)))
    cls = np.sum(gammaln(beta + N) - gammaln(beta)) + gammaln(beta * N.size) - gammaln(beta * N.size + N.sum())
    return feat + cls + stats.gamma(2.0).logpdf(a) + stats.expon.logpdf(beta)


def _scipy_mode(X, y):
    res = optimize.minimize(lambda u: -_scipy_log_density(np.exp(u[0]), np.exp(u[1]), X, y), x0=[0.0, 0.0],
                            method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 4000})
    return np.exp(res.x)


def _densities(est):
    """The collapsed log density at the fit's draws, by the (cached) program of ``fit``."""
    hypers, emb = est.hyper_embedding()
    log_evidence = collapsed.log_evidence_fn(est.family_, est.stats_, est.stats_.class_count, emb)
    return collapsed.log_densities(collapsed.log_density_fn(log_evidence, hypers), est.hyper_posterior_)


@pytest.fixture(scope="module")
def first():
    """A fit on data set A, every program compiled for its shapes."""
    _nuts.clear_nuts_cache()
    collapsed.clear_collapsed_cache()
    XA, yA = _counts(0)
    return _multinomial().fit(XA, yA), XA, yA


@pytest.fixture(scope="module")
def second(first):
    """A fit on data set B (the shapes of A, other counts), and how many programs it compiled."""
    XB, yB = _counts(11)
    assert XB.shape == first[1].shape and not np.array_equal(XB, first[1])
    out = {}
    n = count_compiles(lambda: out.update(est=_multinomial().fit(XB, yB)))
    return out["est"], XB, yB, n


def test_a_refit_on_data_of_the_same_shapes_compiles_nothing(second):
    assert count_compiles(lambda: jax.jit(lambda v: v * 3.0)(np.arange(4.0))) > 0  # the counter sees one
    est, XB, _, n = second
    assert n == 0
    # Nor does the integrated predictive, nor the densities again.
    assert count_compiles(lambda: (est.predict_proba(XB), est.hyper_joint_log_proba_draws(XB), _densities(est))) == 0


def test_the_refit_has_its_own_data_densities_and_mode(first, second):
    estA, XA, yA = first
    est, XB, yB, _ = second
    # Densities at B's draws by the cached program against SciPy's on B's counts. The
    # float64 sums of a few dozen gammaln terms of size up to 1e3 carry rounding near
    # 1e-13 relative; 1e-10 is far below what A's statistics would change (A's and B's
    # densities differ by tens of nats at every draw, asserted below).
    draws = est.hyper_posterior_
    want = np.array([_scipy_log_density(a, b, XB, yB) for a, b in zip(draws["alpha"], draws["class_alpha"])])
    got = _densities(est)
    np.testing.assert_allclose(got, want, rtol=1e-10)
    stale = np.array([_scipy_log_density(a, b, XA, yA) for a, b in zip(draws["alpha"], draws["class_alpha"])])
    assert np.min(np.abs(stale - want)) > 1.0
    # The mode: SciPy's maximiser of B's density (Nelder-Mead to 1e-10 in log space; the
    # estimator's L-BFGS to a gradient of 1e-10), far from A's mode.
    mode = np.array([float(est.hyper_mode_["alpha"]), float(est.hyper_mode_["class_alpha"])])
    np.testing.assert_allclose(mode, _scipy_mode(XB, yB), rtol=1e-5)
    modeA = np.array([float(estA.hyper_mode_["alpha"]), float(estA.hyper_mode_["class_alpha"])])
    assert np.max(np.abs(mode / modeA - 1.0)) > 1e-2


def test_the_refit_equals_a_fit_with_its_programs_compiled_afresh(second):
    est, XB, yB, _ = second
    # The densities' and the optimiser's programs compiled again from B (the NUTS program
    # is kept: its reuse is tests/ppl/test_nuts_reuse.py's, and its draws are the inputs
    # of both fits alike).
    collapsed.clear_collapsed_cache()
    fresh = _multinomial().fit(XB, yB)
    # The same programs, compiled again, on the same inputs: equal to rounding (1e-12
    # relative leaves room for nothing but a compiler's reassociation).
    for name in ("alpha", "class_alpha"):
        np.testing.assert_allclose(est.hyper_posterior_[name], fresh.hyper_posterior_[name], rtol=1e-12)
        np.testing.assert_allclose(est.hyper_mode_[name], fresh.hyper_mode_[name], rtol=1e-12)
    np.testing.assert_allclose(_densities(est), _densities(fresh), rtol=1e-12)
    np.testing.assert_allclose(est.predict_proba(XB), fresh.predict_proba(XB), rtol=1e-12, atol=1e-15)


def test_a_prior_field_hyperprior_refit_compiles_nothing():
    # GaussianNB's Normal-Inverse-Gamma prior, kappa integrated: the evidence is not the
    # tied form, the embedding fills one field of a named tuple.
    def data(seed, shift):
        rng = np.random.default_rng(seed)
        y = np.arange(30) % 2
        return rng.normal(shift * y[:, None], 1.0, (30, 2)), y

    def make():
        prior = NormalInverseGamma(0.0, dist.LogNormal(0.0, 1.0), 2.0, 2.0)
        return GaussianNB(prior=prior, random_state=0, hyper_warmup=100, hyper_draws=100, hyper_chains=2,
                          hyper_predict_draws=10)

    XA, yA = data(3, 2.0)
    XB, yB = data(4, -1.0)
    make().fit(XA, yA)
    out = {}
    assert count_compiles(lambda: out.update(est=make().fit(XB, yB))) == 0
    collapsed.clear_collapsed_cache()
    fresh = make().fit(XB, yB)
    np.testing.assert_allclose(out["est"].hyper_mode_["prior.kappa"], fresh.hyper_mode_["prior.kappa"], rtol=1e-12)
    np.testing.assert_allclose(_densities(out["est"]), _densities(fresh), rtol=1e-12)


def test_the_cache_tells_hyperpriors_apart_by_value(first):
    # Equal statistics, another hyperprior: another program (a cache keyed without the
    # hyperprior's parameters would give Gamma(2, 1)'s density). One draw's density
    # against SciPy's under each hyperprior.
    est, X, y = first
    hypers, emb = est.hyper_embedding()
    log_evidence = collapsed.log_evidence_fn(est.family_, est.stats_, est.stats_.class_count, emb)
    values = {"alpha": np.array([0.7]), "class_alpha": np.array([1.3])}
    for a_shape in (2.0, 5.0):
        other = [h._replace(distribution=dist.Gamma(a_shape, 1.0)) if h.name == "alpha" else h for h in hypers]
        got = collapsed.log_densities(collapsed.log_density_fn(log_evidence, other), values)
        want = _scipy_log_density(0.7, 1.3, X, y) - stats.gamma(2.0).logpdf(0.7) + stats.gamma(a_shape).logpdf(0.7)
        np.testing.assert_allclose(got, [want], rtol=1e-12)


def test_the_cache_is_bounded(first, monkeypatch):
    est, _, _ = first
    hypers, emb = est.hyper_embedding()
    log_evidence = collapsed.log_evidence_fn(est.family_, est.stats_, est.stats_.class_count, emb)
    density = collapsed.log_density_fn(log_evidence, hypers)
    monkeypatch.setattr(collapsed, "COLLAPSED_CACHE_SIZE", 2)
    # Points of three shapes, one program each: the oldest goes.
    for n in (1, 2, 3):
        collapsed.log_densities(density, {"alpha": np.full(n, 0.7), "class_alpha": np.full(n, 1.3)})
    assert len(collapsed._PROGRAMS) == 2
    assert count_compiles(lambda: collapsed.log_densities(density, {"alpha": np.full(3, 0.7),
                                                                    "class_alpha": np.full(3, 1.3)})) == 0
