"""PolyaNB / the "polya" family against independent oracles.

* the likelihood against ``numpyro.distributions.DirichletMultinomial`` (and SciPy's);
* the evidence-learned precisions against an independent optimiser (scipy.optimize on
  SciPy's Dirichlet-multinomial log pmf summed over the documents);
* the multinomial limit (precision -> infinity) against MultinomialNB's mean plug-in;
* fit = chained partial_fit = duplicated rows as weights; sparse = dense;
* calibration on data simulated from the model (Spiegelhalter's z), with the
  multinomial model of the same bursty data as the planted error;
* NUTS cross-check on its numpyro model.
The contract suite (tests/core/test_family_contract.py) covers the family by registration.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats as st
from scipy.optimize import minimize_scalar
from scipy.special import gammaln

import bayesnb
from bayesnb import PolyaNB
from bayesnb.core import families
from bayesnb.core.families import polya


def _dcm_data(seed, n=300, n_features=25, length=40, shape=0.3, spread=None):
    """Bursty documents: theta_d ~ Dir(alpha_c), x_d ~ Mult(n_d, theta_d).

    With ``spread``, class 1's concentrations are class 0's times lognormal factors of
    that spread (overlapping classes); otherwise the classes are drawn independently.
    """
    rng = np.random.default_rng(seed)
    alpha = rng.gamma(shape, 1.0, (2, n_features)) + 1e-3
    if spread is not None:
        alpha[1] = alpha[0] * np.exp(rng.normal(0.0, spread, n_features))
    y = rng.integers(0, 2, n)
    y[:2] = [0, 1]
    lengths = rng.poisson(length, n) + 1
    X = np.stack([rng.multinomial(m, rng.dirichlet(alpha[c])) for m, c in zip(lengths, y)])
    return X, y, alpha


def _coefficient(X):
    X = np.asarray(X, dtype=np.float64)
    return gammaln(X.sum(1) + 1) - gammaln(X + 1).sum(1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_likelihood_is_numpyros_dirichlet_multinomial(seed):
    import jax.numpy as jnp
    from numpyro.distributions import DirichletMultinomial

    from bayesnb.core._x64 import enable_x64

    X, y, alpha = _dcm_data(seed, n=40)
    prior = polya.Polya(alpha)
    ours = np.asarray(polya.family.log_predictive(prior, X)) + _coefficient(X)[:, None]
    with enable_x64():
        theirs = np.stack(
            [np.asarray(DirichletMultinomial(jnp.asarray(alpha[c]), total_count=jnp.asarray(X.sum(1))).log_prob(jnp.asarray(X)))
             for c in range(2)],
            axis=1,
        )
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-9)
    sparse = np.asarray(polya.family.log_predictive(prior, sp.csr_matrix(X))) + _coefficient(X)[:, None]
    np.testing.assert_allclose(sparse, ours, rtol=1e-12, atol=1e-10)
    # The evidence is the sum of the rows' own log probabilities (sequence form).
    stats = polya.family.stats(X, y, 2)
    evidence = float(polya.family.log_evidence(prior, stats))
    np.testing.assert_allclose(evidence, (theirs[np.arange(40), y] - _coefficient(X)).sum(), rtol=1e-11)
    # Planted error: the multinomial with the same mean is a different likelihood.
    multinomial = np.asarray(families.get("multinomial").log_likelihood(polya.point(prior, stats, "mean"), X))
    assert np.max(np.abs(multinomial + _coefficient(X)[:, None] - theirs)) > 1.0


def _scipy_precision(X, y, mean, c):
    rows = X[y == c]

    def negative(log_s):
        a = np.exp(log_s) * mean[c]
        return -sum(st.dirichlet_multinomial.logpmf(x, a, int(x.sum())) for x in rows)

    res = minimize_scalar(negative, bounds=(-8.0, 12.0), method="bounded", options={"xatol": 1e-10})
    return float(np.exp(res.x)), -res.fun


@pytest.mark.parametrize("seed", [0, 3])
def test_evidence_precision_is_scipys_optimum(seed):
    X, y, alpha = _dcm_data(seed, n=120)
    clf = PolyaNB(alpha=0.5).fit(X, y)
    assert clf.evidence_trace_["precision"].converged
    mean = polya.smoothed_mean(clf.stats_, 0.5)
    for c in range(2):
        s, best = _scipy_precision(X, y, mean, c)
        assert clf.precision_[c] == pytest.approx(s, rel=1e-5)
    # Planted errors: a precision off by a factor 2 either way has a lower evidence.
    learned = clf.log_evidence()
    for factor in (0.5, 2.0):
        assert PolyaNB(alpha=0.5, precision=clf.precision_ * factor).fit(X, y).log_evidence() < learned - 1e-3


def test_large_precision_is_multinomialnb_with_the_mean_plug_in():
    X, y, _ = _dcm_data(4, n=80)
    pol = PolyaNB(alpha=1.0, precision=1e12).fit(X, y)
    mult = bayesnb.MultinomialNB(alpha=1.0, estimate="mean").fit(X, y)
    np.testing.assert_allclose(pol.predict_proba(X), mult.predict_proba(X), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(pol.feature_log_prob_, mult.feature_log_prob_, rtol=1e-12)


def test_fit_partial_fit_weights_and_sparse_agree():
    X, y, _ = _dcm_data(5, n=60)
    whole = PolyaNB().fit(X, y)
    chained = PolyaNB().partial_fit(X[:25], y[:25], classes=[0, 1]).partial_fit(X[25:], y[25:])
    np.testing.assert_allclose(chained.precision_, whole.precision_, rtol=1e-10)
    np.testing.assert_allclose(chained.predict_proba(X), whole.predict_proba(X), rtol=1e-10)
    twice = PolyaNB().fit(np.vstack([X, X[:10]]), np.concatenate([y, y[:10]]))
    weighted = PolyaNB().fit(X, y, sample_weight=np.where(np.arange(60) < 10, 2.0, 1.0))
    np.testing.assert_allclose(weighted.precision_, twice.precision_, rtol=1e-10)
    sparse = PolyaNB().fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(sparse.predict_proba(sp.csr_matrix(X)), whole.predict_proba(X), rtol=1e-10)


def _spiegelhalter_z(p, y):
    # Calibration test of probabilities p of the events y (Spiegelhalter 1986).
    num = np.sum((y - p) * (1 - 2 * p))
    den = np.sqrt(np.sum((1 - 2 * p) ** 2 * p * (1 - p)))
    return num / den


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_probabilities_are_calibrated_on_data_from_the_model_and_the_multinomial_is_not(seed):
    X, y, _ = _dcm_data(seed, n=1400, length=60, spread=0.5)
    train, test = slice(0, 700), slice(700, None)
    pol = PolyaNB().fit(X[train], y[train])
    p = pol.predict_proba(X[test])[:, 1]
    # |z| < 4: a two-sided test at about 1e-4 (the precision and the mean are estimated).
    assert abs(_spiegelhalter_z(p, y[test])) < 4.0
    # Planted error: the multinomial of the same bursty documents is overconfident.
    q = bayesnb.MultinomialNB().fit(X[train], y[train]).predict_proba(X[test])[:, 1]
    assert abs(_spiegelhalter_z(np.clip(q, 1e-12, 1 - 1e-12), y[test])) > 10.0
    loss = lambda pr: -np.mean(np.log(np.clip(np.where(y[test] == 1, pr, 1 - pr), 1e-15, 1)))  # noqa: E731
    assert loss(p) < loss(q)


def test_bad_parameters_and_masked_fitting_are_refused():
    X, y, _ = _dcm_data(6, n=20)
    with pytest.raises(ValueError, match="precision"):
        PolyaNB(precision=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="precision"):
        PolyaNB(precision=[1.0, 2.0, 3.0]).fit(X, y)
    with pytest.raises(ValueError, match="alpha"):
        PolyaNB(alpha=0.0).fit(X, y)
    with pytest.raises(ValueError, match="Negative values"):
        PolyaNB().fit(-X, y)
    Xn = X.astype(float)
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="PolyaNB cannot be fitted on rows with missing"):
        PolyaNB(missing="ignore").fit(Xn, y)


def test_nuts_crosscheck_on_the_numpyro_model():
    from bayesnb.ppl.mcmc import crosscheck

    # Concentrations of a few units: a Dirichlet NUTS samples without divergences.
    X, y, _ = _dcm_data(7, n=30, n_features=3, length=10, shape=5.0)
    clf = PolyaNB(precision=20.0).fit(X, y)
    kw = dict(num_warmup=200, num_samples=300, num_chains=2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = crosscheck(clf, X, y, **kw)
        assert report.agrees, report
        # Planted error: the closed-form side with each class's words in reverse order, against
        # the same NUTS run (the model and data are unchanged: sampling again with the same
        # random_state would repeat the same draws).
        clf.posterior_ = polya.Polya(np.asarray(clf.posterior_.concentration)[:, ::-1].copy())
        assert not crosscheck(clf, X, y, nuts=report.nuts, random_state=0).agrees


@pytest.mark.parametrize("seed", [0, 1])
def test_loo_leaves_each_row_out_of_its_class_mean(seed):
    """Leave-one-out terms against true refits without each row (mean and precision re-learned)."""
    from bayesnb.analysis import loo

    X, y, _ = _dcm_data(seed, n=24, n_features=6, length=15)
    clf = PolyaNB().fit(X, y)
    got = clf.loo_terms(sp.csr_matrix(X), y)
    brute = np.zeros(got.feature_log.shape)
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        refit = PolyaNB().fit(X[keep], y[keep])
        a = np.asarray(refit.prior_.concentration)
        # SciPy's Dirichlet-multinomial pmf without its multinomial coefficient.
        brute[i] = [st.dirichlet_multinomial.logpmf(X[i], a[c], X[i].sum()) - _coefficient(X[i : i + 1])[0] for c in (0, 1)]
    idx = np.arange(len(y)), y
    np.testing.assert_allclose(got.feature_log[idx], brute[idx], rtol=1e-10, atol=1e-10)
    # The other class does not contain the row: its full-data predictive.
    full = np.asarray(clf.family_.log_predictive(clf.posterior_, X.astype(float)))
    other = np.arange(len(y)), 1 - y
    np.testing.assert_allclose(got.feature_log[other], full[other], rtol=1e-10, atol=1e-10)
    # Planted error: holding the mean fixed (the row's own words in it) is not leave-one-out.
    assert np.abs(full[idx] - brute[idx]).max() > 1e-3
    # temperature="loo" is the minimiser of the brute-force leave-one-out log loss.
    want = loo.choose_temperature(loo.LooTerms(got.class_log, np.where(np.eye(2, dtype=bool)[y], brute, full), got.y_index))
    assert PolyaNB(temperature="loo").fit(X, y).temperature_ == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("scale", [1e2, 7.5e6, 1e12])
def test_log_evidence_is_exact_at_large_concentrations(scale):
    """lgamma(a + x) - lgamma(a) as a difference loses ~eps * a log a: at a = 7.5e6 about
    1e-8 per term, which put the SBC chain rule of a nearly multinomial PolyaNB within a
    factor 1.3 of its tolerance. Oracle: each term as an exactly rounded sum of logs,
    sum_{i < x} log(a + i), for integer counts."""
    import math

    from bayesnb.core.families import polya
    from bayesnb.core.priors import Dirichlet

    rng = np.random.default_rng(3)
    X = rng.poisson(rng.gamma(0.5, 4.0, size=(30, 12))).astype(np.float64)
    y = rng.integers(0, 2, 30)
    stats = polya.polya_stats(sp.csr_matrix(X), y, 2)
    alpha = scale * rng.dirichlet(np.ones(12), size=2)
    got = float(polya.log_evidence(Dirichlet(alpha), stats))
    terms = []
    for d in range(30):
        a = alpha[y[d]]
        for j in range(12):
            terms += [math.log(a[j] + i) for i in range(int(X[d, j]))]
        terms += [-math.log(a.sum() + i) for i in range(int(X[d].sum()))]
    expected = math.fsum(terms)
    assert got == pytest.approx(expected, rel=1e-13, abs=1e-9)
