"""The closed-form math of the discrete families against independent oracles.

Oracles used here, none of which shares code with bayesnb's formulas:

* ``mpmath.loggamma`` at 50 significant digits for the log rising factorial;
* numpyro's own ``DirichletMultinomial`` and a direct ``scipy.special.gammaln`` formula
  for the Dirichlet-multinomial predictive;
* Monte Carlo averages of the likelihood over exact posterior draws, compared within five
  Monte Carlo standard errors computed from the draws themselves;
* the chain rule of probability, :math:`\\log p(D) = \\sum_i \\log p(x_i, y_i \\mid D_{<i})`,
  for the log evidence;
* hand formulas written with numpy/scipy for point estimates and the long-document /
  wide-row numerics.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import numpyro.distributions as dist
import pytest
import scipy.sparse as sp
from scipy.special import gammaln, logsumexp

from bayesnb import BernoulliNB, CategoricalNB, MultinomialNB, ZeroLikelihoodWarning
from bayesnb.core._special import log_rising_factorial
from bayesnb.core.families import multinomial
from bayesnb.core.priors import Dirichlet

# --------------------------------------------------------------------------- helpers


def _mp_log_rising(a, x):
    """log Γ(a + x) − log Γ(a) at 50 digits, from the exact binary values of a and x."""
    with mpmath.workdps(50):
        a_mp, x_mp = mpmath.mpf(float(a)), mpmath.mpf(float(x))
        return float(mpmath.loggamma(a_mp + x_mp) - mpmath.loggamma(a_mp))


def _dm_sequence_logpmf(a, X):
    """Dirichlet-multinomial sequence log-pmf by the textbook gammaln formula, (n, C)."""
    X = np.asarray(X, dtype=np.float64)
    a = np.asarray(a, dtype=np.float64)
    n = X.sum(axis=1)
    A = a.sum(axis=1)
    per_coord = (gammaln(a[None, :, :] + X[:, None, :]) - gammaln(a[None, :, :])).sum(-1)
    return per_coord - (gammaln(A[None, :] + n[:, None]) - gammaln(A[None, :]))


def _mc_check(log_terms, exact_log, n_se=5.0, max_rel_se=0.05):
    """Check that ``exp(exact_log)`` equals ``mean(exp(log_terms))`` within ``n_se`` standard errors.

    ``log_terms`` has the draws on axis 0. Works in a shifted scale so nothing underflows;
    also asserts the Monte Carlo estimate is precise enough for the check to have power.
    Returns (shifted mean, shifted standard error, shift) for further checks.
    """
    log_terms = np.asarray(log_terms, dtype=np.float64)
    shift = log_terms.max(axis=0)
    w = np.exp(log_terms - shift)
    mean = w.mean(axis=0)
    se = w.std(axis=0, ddof=1) / np.sqrt(w.shape[0])
    assert np.all(se <= max_rel_se * mean), "Monte Carlo error too large for a meaningful check"
    target = np.exp(np.asarray(exact_log) - shift)
    assert np.all(np.abs(target - mean) <= n_se * se), (target, mean, se)
    return mean, se, shift


# ------------------------------------------------------------ 1. log rising factorial

_A_GRID = np.array(
    [1e-3, 0.0173, 0.5, 0.999, 1.0, 1.37, 2.0, 7.5, 29.99, 30.0, 30.01, 123.4, 10000.3, 1e6, 3.3e7, 1e8]
)
_X_GRID = np.array([0.0, 1e-9, 1e-3, 0.25, 1.0, 2.5, 7.3, 31.7, 100.0, 1234.5, 100000.3, 1e6])


def test_log_rising_factorial_matches_mpmath_on_a_wide_grid():
    a, x = np.meshgrid(_A_GRID, _X_GRID, indexing="ij")
    got = np.asarray(log_rising_factorial(a, x))
    assert got.dtype == np.float64
    ref = np.vectorize(_mp_log_rising)(a, x)
    err = np.abs(got - ref)
    tiny = np.abs(ref) < 1e-2
    # Relative 1e-13 where the result is not tiny; absolute 1e-12 where it is.
    bad_rel = ~tiny & (err > 1e-13 * np.abs(ref))
    bad_abs = tiny & (err > 1e-12)
    assert not bad_rel.any(), list(zip(a[bad_rel], x[bad_rel], got[bad_rel], ref[bad_rel]))
    assert not bad_abs.any(), list(zip(a[bad_abs], x[bad_abs], got[bad_abs], ref[bad_abs]))
    # x = 0 is exactly zero.
    assert np.all(got[:, 0] == 0.0)


def test_log_rising_factorial_broadcasts_in_float64_without_touching_the_global_flag():
    a = np.array([[1e6], [2.5]])
    x = np.array([1.0, 3.0])
    flag = bool(jax.config.jax_enable_x64)
    got = np.asarray(log_rising_factorial(a, x))
    # float64 is scoped to the library: the user's global flag is left as it was.
    assert bool(jax.config.jax_enable_x64) == flag
    assert got.shape == (2, 2) and got.dtype == np.float64
    ref = np.array([[_mp_log_rising(ai, xi) for xi in x] for ai in a[:, 0]])
    np.testing.assert_allclose(got, ref, rtol=1e-13, atol=0)



_SMALL = [0, 1, 2, 3, 7, 100, 255]
_LOG_FACTORIAL_VALUES = {
    np.float64: _SMALL + [1023, 1024, 5000, 2**32 + 3, 2**40 + 3, 0.5, 2.5, 1e300],
    np.float32: _SMALL + [1023, 1024, 5000, 2**32, 2**40, 0.5, 2.5, 3e38],
    np.int64: _SMALL + [1023, 1024, 5000, 2**32 + 3, 2**40 + 3],
    np.int32: _SMALL + [1023, 1024, 5000, 2**31 - 1],
    np.uint64: _SMALL + [1023, 1024, 2**32 + 3, 2**64 - 1],
    np.uint8: _SMALL,
    np.bool_: [True, False],
}


@pytest.mark.parametrize("dtype", list(_LOG_FACTORIAL_VALUES))
def test_log_factorial_is_gammaln_bit_for_bit_in_every_dtype(dtype):
    """log x! by table below 1024 and gammaln above, for the values as they come: equal
    to scipy's gammaln(x + 1) of their float64 value; fractions, 1024 and values past
    int32 (whose cast can wrap into the table's range: 2**32 + 3 to 3) are not read
    from the table."""
    from bayesnb.core._special import log_factorial_np

    x = np.array(_LOG_FACTORIAL_VALUES[dtype], dtype=dtype)
    got = log_factorial_np(x)
    assert got.dtype == np.float64 and got.shape == x.shape
    np.testing.assert_array_equal(got, gammaln(x.astype(np.float64) + 1.0))
    grid = np.resize(x, (4, 6))
    np.testing.assert_array_equal(log_factorial_np(grid), gammaln(grid.astype(np.float64) + 1.0))
    for v in x[-2:]:  # 0-d, in and (for most dtypes) past the table
        np.testing.assert_array_equal(log_factorial_np(np.asarray(v)), gammaln(np.float64(v) + 1.0))


_SMALL_COUNTS_VALUES = {
    "f8": [0, 1, 2, 200, 201, 255, -1, -0.5, 0.5, 2.5, 2**31, 2**32 + 3, 1e300, np.nan, np.inf, -np.inf],
    "f4": [0, 1, 2, 200, 201, -1, 0.5, 2**31, 2**32, 3e38, np.nan],
    "i8": [0, 1, 2, 200, 201, -1, -(2**63), 2**31, 2**32 + 3, 2**63 - 1],
    "i4": [0, 1, 200, 201, -1, -(2**31), 2**31 - 1],
    "i1": [0, 1, 100, 101, 127, -1, -100, -128],
    "i2": [0, 1, 100, 101, 200, 201, 1023, 1024, -1, -(2**15)],
    ">u4": [0, 1, 100, 101, 200, 201, 1023, 1024, 2**31, 2**32 - 1],
    "f2": [0, 1, 2, 100, 101, 200, 201, 1023, 1024, -1, 0.5, 2.5, 65504, np.nan, np.inf],
    "u8": [0, 1, 200, 201, 2**32 + 3, 2**63, 2**64 - 1],
    "u4": [0, 1, 200, 201, 2**31, 2**32 - 1],
    "u1": [0, 1, 200, 201, 255],
    ">i8": [0, 1, 200, 201, -1, 2**32 + 3],
    ">f8": [0, 1, 200, 201, -1, 0.5, 2**32 + 3],
    "?": [True, False],
}


def _whole_up_to(v, top):
    v = float(v)
    return bool(np.isfinite(v) and v == int(v) and 0 <= int(v) <= top)


@pytest.mark.parametrize("dtype", list(_SMALL_COUNTS_VALUES))
@pytest.mark.parametrize("strided", [False, True])
@pytest.mark.parametrize("top", [100, 200, 1023])
def test_small_counts_finds_exactly_the_whole_counts_up_to_top(dtype, strided, top):
    """_special.small_counts against Python's own arithmetic: ``ok`` where the value is a
    whole number from 0 to ``top`` (whatever its dtype, byte order or strides), and there
    the cast is the count. Negatives, fractions, NaN, inf, values past the cast's range
    (which wrap or saturate into it) and past ``top`` are not ok. ``top`` 100 takes the
    integer path for int8 too (its negatives read as unsigned are past 127), 200 and 1023
    do not."""
    from bayesnb.core._special import small_counts

    x = np.array(_SMALL_COUNTS_VALUES[dtype], dtype=dtype)
    if strided:  # every other value of a twice-as-long array: a non-contiguous view
        x = np.repeat(x, 2)[::2]
    for out_dtype in (np.int32, np.int64):
        counts, ok = small_counts(x, top, out_dtype)
        assert counts.dtype == out_dtype and ok.dtype == np.bool_ and ok.shape == x.shape
        expect = np.array([_whole_up_to(v, top) for v in x.tolist()])
        np.testing.assert_array_equal(ok, expect)
        np.testing.assert_array_equal(counts[ok], np.array([int(v) for v in x[ok].tolist()], dtype=out_dtype))
        for v in x[:: max(1, x.size // 3)]:  # 0-d
            c0, ok0 = small_counts(np.asarray(v), top, out_dtype)
            assert c0.shape == () and bool(ok0) == _whole_up_to(v, top)
            if ok0:
                assert int(c0) == int(v)


def test_naive_gammaln_difference_fails_the_bound_at_large_a():
    """Why log_rising_factorial exists: lgamma(a + x) − lgamma(a) cancels catastrophically."""
    import jax.scipy.special as jsp

    cases = [(1e6, 1.0), (1e6, 0.5), (1234567.89, 1.0), (1e7, 1.0)]
    for a, x in cases:
        ref = _mp_log_rising(a, x)
        good = float(log_rising_factorial(a, x))
        assert abs(good - ref) <= 1e-13 * abs(ref)
    assert _mp_log_rising(1e6, 1.0) == pytest.approx(np.log(1e6), rel=1e-15)  # the oracle
    # JAX's own float64 gammaln (what the library would otherwise use) and scipy's fail it
    # at non-round points of that scale: 5e-11 to 9e-10 relative. At the round point
    # a = 1e6, x = 1 whether the two roundings cancel is luck: JAX's difference is 1.3e-10
    # off at XLA's default optimisation level (-O3) and 1.2e-14 at -O0 (measured with
    # XLA_FLAGS=--xla_backend_optimization_level=0), so that point proves nothing.
    for a, x in [(1e6, 0.5), (1234567.89, 1.0), (1e7, 1.0)]:
        ref = _mp_log_rising(a, x)
        with jax.enable_x64(True):
            naive_jax = float(jsp.gammaln(jnp.float64(a + x)) - jsp.gammaln(jnp.float64(a)))
        assert abs(naive_jax - ref) > 1e-13 * abs(ref), (a, x)
        naive_scipy = gammaln(a + x) - gammaln(a)
        assert abs(naive_scipy - ref) > 1e-13 * abs(ref), (a, x)


# ------------------------------------------------ 2. Dirichlet-multinomial predictive


def _numpyro_dm_sequence(a, X):
    """numpyro DirichletMultinomial log-pmf minus the multinomial coefficient, (n, C)."""
    X = np.asarray(X, dtype=np.float64)
    n = X.sum(axis=1)
    with jax.enable_x64(True):
        d = dist.DirichletMultinomial(
            jnp.asarray(a, dtype=jnp.float64)[None, :, :],
            total_count=jnp.asarray(n)[:, None],
            validate_args=True,
        )
        lp = np.asarray(d.log_prob(jnp.asarray(X)[:, None, :]), dtype=np.float64)
    coef = gammaln(n + 1) - gammaln(X + 1).sum(axis=1)
    return lp - coef[:, None]


@pytest.fixture(scope="module")
def dm_case():
    rng = np.random.default_rng(20240601)
    n_classes, n_features = 3, 7
    a = rng.uniform(0.05, 40.0, size=(n_classes, n_features))
    a[1] *= 25.0  # one class with large concentrations
    X = rng.integers(0, 6, size=(9, n_features)).astype(np.float64)
    X[0] = 0.0  # empty document: log predictive 0
    X[1, 2] = 33.0  # just past the table
    X[2, 0] = 57.0
    X[3, 5] = 250.0
    X[4] = 0.0
    X[4, 3] = 1.0  # single token
    X[5, :] = 1.0  # 0/1 document
    X[6, 1] = 32.0  # last tabled level
    return a, X


@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_dirichlet_multinomial_predictive_matches_numpyro(dm_case, fmt):
    a, X = dm_case
    Xin = sp.csr_matrix(X) if fmt == "csr" else X
    got = multinomial.log_predictive(Dirichlet(a), Xin)
    ref = _numpyro_dm_sequence(a, X)
    assert got.shape == (X.shape[0], a.shape[0])
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-10)
    np.testing.assert_array_equal(got[0], 0.0)


@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_dirichlet_multinomial_predictive_non_integer_counts_match_gammaln_formula(dm_case, fmt):
    a, _ = dm_case
    rng = np.random.default_rng(7)
    X = rng.uniform(0.0, 5.0, size=(6, a.shape[1]))
    X[rng.random(X.shape) < 0.4] = 0.0
    X[0, 0] = 40.25  # fractional and past the table
    X[1, 1] = 2.0  # integers mixed with fractions in one row
    X[2, 3] = 1e-7
    Xin = sp.csr_matrix(X) if fmt == "csr" else X
    got = multinomial.log_predictive(Dirichlet(a), Xin)
    np.testing.assert_allclose(got, _dm_sequence_logpmf(a, X), rtol=0, atol=1e-10)


def test_dirichlet_multinomial_predictive_large_concentration_matches_mpmath():
    """Concentrations ~1e7 (where gammaln differences lose digits) against 50-digit arithmetic."""
    a = np.array([[3.0e7, 1.0e7 + 0.5, 2.5], [0.75, 4.0e6, 6.0e7]])
    X = np.array([[3.0, 1.0, 0.0], [1.0, 40.0, 2.0], [0.0, 0.0, 1.0], [2.5, 0.0, 7.0]])
    got = multinomial.log_predictive(Dirichlet(a), X)
    with mpmath.workdps(50):
        ref = np.empty_like(got)
        for i, x in enumerate(X):
            for c in range(a.shape[0]):
                s = mpmath.mpf(0)
                for j in range(a.shape[1]):
                    aj = mpmath.mpf(float(a[c, j]))
                    s += mpmath.loggamma(aj + mpmath.mpf(float(x[j]))) - mpmath.loggamma(aj)
                A = mpmath.fsum(mpmath.mpf(float(v)) for v in a[c])
                s -= mpmath.loggamma(A + mpmath.mpf(float(x.sum()))) - mpmath.loggamma(A)
                ref[i, c] = float(s)
    np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-12)


def test_dirichlet_multinomial_predictive_equals_monte_carlo_over_posterior_draws():
    rng = np.random.default_rng(3)
    a = rng.uniform(0.6, 6.0, size=(2, 5))
    X = np.array(
        [
            [3.0, 0.0, 0.0, 0.0, 0.0],  # one word three times
            [1.0, 1.0, 0.0, 1.0, 0.0],  # distinct words
            [2.0, 0.0, 1.0, 0.0, 2.0],
            [0.0, 0.0, 0.0, 0.0, 1.0],
        ]
    )
    post = Dirichlet(a)
    n_draws = 40000
    log_theta = np.asarray(multinomial.sample(jax.random.key(11), post, n_draws).log_probs)
    assert log_theta.shape == (n_draws, 2, 5)
    # Draws are on the simplex.
    np.testing.assert_allclose(np.exp(log_theta).sum(-1), 1.0, atol=1e-12)
    # log p(x | θ_d) for the token sequence: Σ_j x_j log θ_dj, shape (draws, rows, classes).
    log_lik = np.einsum("nf,dcf->dnc", X, log_theta)
    exact = multinomial.log_predictive(post, X)
    mean, se, shift = _mc_check(log_lik, exact)
    # Power: the plug-in of the posterior mean, wrong for repeated words, is rejected.
    plug = X @ np.log(a / a.sum(1, keepdims=True)).T
    assert np.abs(np.exp(plug[0] - shift[0]) - mean[0]).min() > 5 * se[0].max()


# ----------------------------------------------- 3. estimator: predictive vs mean plug-in


def _fit_equal_totals():
    # Class totals T_c = 10 for both classes; alpha = 1 gives A_c = 13 for both.
    X = np.array([[4, 1, 1], [2, 1, 1], [1, 3, 2], [0, 2, 2]], dtype=float)
    y = np.array([0, 0, 1, 1])
    return X, y


def test_multinomial_predictive_differs_from_mean_on_repeated_words_with_the_right_sign():
    X, y = _fit_equal_totals()
    pred = MultinomialNB(estimate="predictive").fit(X, y)
    mean = MultinomialNB(estimate="mean").fit(X, y)
    a = pred.posterior_.concentration
    np.testing.assert_array_equal(a, [[7, 3, 3], [2, 6, 5]])
    doc = np.array([[4.0, 0.0, 0.0]])  # word 0 four times; class 0 saw it far more
    jp, jm = pred.predict_joint_log_proba(doc)[0], mean.predict_joint_log_proba(doc)[0]
    # Same class part (the class predictive is the posterior mean).
    np.testing.assert_allclose(pred.class_log_prior_, mean.class_log_prior_, rtol=0, atol=1e-15)
    # Per class, repeats raise the predictive above the plug-in by
    # Σ_{m<k} [log(1 + m/a_c0) − log(1 + m/A_c)] > 0 (each occurrence makes the next likelier).
    m = np.arange(4)
    lift = np.log1p(m[None, :] / a[:, [0]]).sum(1) - np.log1p(m[None, :] / a.sum(1, keepdims=True)).sum(1)
    assert np.all(lift > 0)
    np.testing.assert_allclose(jp - jm, lift, rtol=1e-12, atol=1e-14)
    # The lift is largest for the class with the smaller concentration on the repeated
    # word (burstiness): the predictive pulls the class posterior *away* from the class
    # that saw the word, relative to the plug-in, though both still favour it.
    assert lift[1] > lift[0]
    pp, pm = pred.predict_proba(doc)[0], mean.predict_proba(doc)[0]
    assert pp[0] < pm[0] and pp[0] > 0.5 and pm[0] > 0.5
    np.testing.assert_allclose(np.log(pm[0] / pm[1]), 4 * np.log(7 / 2), rtol=1e-12)
    np.testing.assert_allclose(np.log(pp[0] / pp[1]), np.log((7 * 8 * 9 * 10) / (2 * 3 * 4 * 5)), rtol=1e-12)


def test_multinomial_predictive_equals_mean_exactly_for_single_token_documents():
    rng = np.random.default_rng(5)
    X = rng.integers(0, 5, size=(12, 6)).astype(float)
    y = rng.integers(0, 3, size=12)
    kw = dict(alpha=rng.uniform(0.2, 3.0, size=6), class_alpha=[0.5, 1.0, 2.5])
    pred = MultinomialNB(estimate="predictive", **kw).fit(X, y)
    mean = MultinomialNB(estimate="mean", **kw).fit(X, y)
    ones = np.eye(6)  # n = 1 documents: Γ(a+1)/Γ(a) / (Γ(A+1)/Γ(A)) = a / A
    np.testing.assert_allclose(pred.predict_joint_log_proba(ones), mean.predict_joint_log_proba(ones), rtol=0, atol=1e-13)
    np.testing.assert_allclose(pred.predict_proba(ones), mean.predict_proba(ones), rtol=0, atol=1e-13)
    # Empty documents: both give the class predictive.
    zero = np.zeros((1, 6))
    np.testing.assert_allclose(pred.predict_proba(zero)[0], np.exp(pred.class_log_prior_), atol=1e-14)


def test_multinomial_binary_documents_with_several_tokens_differ_per_class():
    """0/1 documents with n ≥ 2 tokens: the denominator Γ(A+n)/Γ(A) ≠ A^n, so the joint differs.

    The difference −Σ_{m<n} log(1 + m/A_c) depends on the class only through A_c, so the
    class posteriors still coincide when every class has the same A_c, and differ otherwise.
    """
    X, y = _fit_equal_totals()
    doc = np.array([[1.0, 1.0, 1.0]])
    pred = MultinomialNB(estimate="predictive").fit(X, y)
    mean = MultinomialNB(estimate="mean").fit(X, y)
    diff = pred.predict_joint_log_proba(doc)[0] - mean.predict_joint_log_proba(doc)[0]
    expected = -np.log1p(np.arange(3) / 13.0).sum()
    np.testing.assert_allclose(diff, [expected, expected], rtol=1e-12)
    np.testing.assert_allclose(pred.predict_proba(doc), mean.predict_proba(doc), rtol=0, atol=1e-13)
    # Unequal totals: the posteriors differ for the same 0/1 document.
    X2 = np.vstack([X, [[9.0, 9.0, 9.0]]])
    y2 = np.append(y, 1)
    pred2 = MultinomialNB(estimate="predictive").fit(X2, y2)
    mean2 = MultinomialNB(estimate="mean").fit(X2, y2)
    assert np.abs(pred2.predict_proba(doc) - mean2.predict_proba(doc)).max() > 1e-3


# ------------------------------------- 4. Bernoulli and categorical: exact = mean plug-in


def _bernoulli_case():
    rng = np.random.default_rng(8)
    X = (rng.random((14, 6)) < 0.4).astype(float)
    y = rng.integers(0, 2, size=14)
    y[:2] = [0, 1]
    alpha = (rng.uniform(0.3, 3.0, size=6), rng.uniform(0.3, 3.0, size=(2, 6)))
    return X, y, alpha


def test_bernoulli_predictive_is_the_posterior_mean_plug_in_by_hand():
    X, y, (a, b) = _bernoulli_case()
    clf = BernoulliNB(alpha=(a, b), binarize=None, class_alpha=[0.7, 1.9]).fit(X, y)
    Xt = np.array([[1, 0, 1, 0, 0, 1], [0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1]], dtype=float)
    N = np.array([(y == c).sum() for c in (0, 1)], dtype=float)
    T = np.array([X[y == c].sum(0) for c in (0, 1)])
    pbar = (a + T) / (a + b + N[:, None])
    log_lik = Xt @ np.log(pbar).T + (1 - Xt) @ np.log1p(-pbar).T
    log_class = np.log((N + [0.7, 1.9]) / (N.sum() + 2.6))
    np.testing.assert_allclose(clf.predict_joint_log_proba(Xt), log_lik + log_class, rtol=1e-13)
    ref = log_lik + log_class
    np.testing.assert_allclose(clf.predict_log_proba(Xt), ref - logsumexp(ref, axis=1, keepdims=True), atol=1e-13)
    mean = BernoulliNB(alpha=(a, b), binarize=None, class_alpha=[0.7, 1.9], estimate="mean").fit(X, y)
    np.testing.assert_allclose(mean.predict_joint_log_proba(Xt), clf.predict_joint_log_proba(Xt), rtol=0, atol=1e-14)


def test_bernoulli_predictive_equals_monte_carlo_over_posterior_draws():
    # Draws from the conjugate posterior Beta(a + T, b + N − T) made with numpy, so the
    # check covers the update and the predictive together, independently of bayesnb.
    X, y, (a, b) = _bernoulli_case()
    clf = BernoulliNB(alpha=(a, b), binarize=None, class_alpha=[0.7, 1.9]).fit(X, y)
    Xt = np.array([[1, 0, 1, 0, 0, 1], [0, 1, 0, 0, 1, 0]], dtype=float)
    N = np.array([(y == c).sum() for c in (0, 1)], dtype=float)
    T = np.array([X[y == c].sum(0) for c in (0, 1)])
    rng = np.random.default_rng(21)
    theta = rng.beta(a + T, b + N[:, None] - T, size=(20000, 2, 6))
    log_lik = np.einsum("nf,dcf->dnc", Xt, np.log(theta)) + np.einsum("nf,dcf->dnc", 1 - Xt, np.log1p(-theta))
    exact = clf.predict_joint_log_proba(Xt) - clf.class_log_prior_
    mean, _, shift = _mc_check(log_lik, exact)
    # Class predictive = posterior mean of π ~ Dir(β + N).
    pi = rng.dirichlet(N + [0.7, 1.9], size=20000)
    se = pi.std(0, ddof=1) / np.sqrt(pi.shape[0])
    assert np.all(np.abs(pi.mean(0) - np.exp(clf.class_log_prior_)) <= 5 * se)
    # Class posterior from the Monte Carlo class-conditionals and class predictive.
    joint = np.log(mean) + shift + np.log(pi.mean(0))
    mc_proba = np.exp(joint - logsumexp(joint, axis=1, keepdims=True))
    np.testing.assert_allclose(mc_proba, clf.predict_proba(Xt), atol=0.02)


def _categorical_case():
    rng = np.random.default_rng(9)
    n_cat = np.array([3, 2, 4])
    X = np.column_stack([rng.integers(0, k, size=15) for k in n_cat])
    y = rng.integers(0, 2, size=15)
    y[:2] = [0, 1]
    return X, y, n_cat


def test_categorical_predictive_is_the_posterior_mean_plug_in_by_hand():
    X, y, n_cat = _categorical_case()
    alpha = np.array([[0.4, 1.0, 2.2], [1.5, 0.8, 0.3]])
    clf = CategoricalNB(alpha=alpha, class_alpha=[1.2, 0.6]).fit(X, y)
    Xt = np.array([[0, 1, 3], [2, 0, 0], [1, 1, 2], [3, 0, 1], [0, 2, 5]])  # last two: unseen codes
    N = np.array([(y == c).sum() for c in (0, 1)], dtype=float)
    ref = np.zeros((len(Xt), 2))
    for i, x in enumerate(Xt):
        for c in (0, 1):
            lp = np.log((N[c] + [1.2, 0.6][c]) / (N.sum() + 1.8))
            for j, k in enumerate(x):
                al = alpha[c, j]
                if k < n_cat[j]:
                    cnt = np.sum((y == c) & (X[:, j] == k))
                    lp += np.log((cnt + al) / (N[c] + n_cat[j] * al))
                else:  # documented share of one extra, unobserved category
                    lp += np.log(al / (N[c] + (n_cat[j] + 1) * al))
            ref[i, c] = lp
    np.testing.assert_allclose(clf.predict_joint_log_proba(Xt), ref, rtol=1e-13)
    mean = CategoricalNB(alpha=alpha, class_alpha=[1.2, 0.6], estimate="mean").fit(X, y)
    np.testing.assert_allclose(mean.predict_joint_log_proba(Xt), ref, rtol=1e-13)


def test_categorical_predictive_equals_monte_carlo_over_posterior_draws():
    X, y, n_cat = _categorical_case()
    clf = CategoricalNB(alpha=0.8).fit(X, y)
    Xt = np.array([[0, 1, 3], [2, 0, 0], [1, 1, 2]])
    rng = np.random.default_rng(5)
    n_draws = 20000
    log_lik = np.zeros((n_draws, len(Xt), 2))
    for c in (0, 1):
        for j, k in enumerate(n_cat):
            counts = np.bincount(X[y == c, j], minlength=k)
            theta = rng.dirichlet(0.8 + counts, size=n_draws)  # posterior Dir(α + counts)
            log_lik[:, :, c] += np.log(theta[:, Xt[:, j]])
    exact = clf.predict_joint_log_proba(Xt) - clf.class_log_prior_
    _mc_check(log_lik, exact)


# ------------------------------------------------------------ 5. evidence = chain rule


def chain_rule_log_evidence(make, X, y, classes, first_term, row_term=None):
    """The chain rule :math:`\\log p(D) = \\sum_i \\log p(x_i, y_i \\mid D_{<i})`, row by row.

    ``first_term`` is :math:`\\log p(x_0, y_0)` under the prior (by hand); every later
    row is scored by ``predict_joint_log_proba`` of an estimator from ``make()`` updated
    with ``partial_fit`` on the rows before it, plus ``row_term(est, i)`` when given (a
    part of the row's probability outside the estimator, e.g. a length model).

    Returns
    -------
    total : float
    est : the chained estimator, fitted on every row but the last
    """
    total = first_term
    est = make()
    for i in range(1, X.shape[0]):
        est.partial_fit(X[i - 1 : i], y[i - 1 : i], classes=classes)
        total += est.predict_joint_log_proba(X[i : i + 1])[0, np.searchsorted(classes, y[i])]
        if row_term is not None:
            total += row_term(est, i)
    return total, est


def _first_term(family, x, c, alpha, class_kw, n_classes, n_cat=None):
    """log p(x_0, y_0) under the prior, by hand (scipy/numpy), for the first row."""
    if "class_prior" in class_kw:
        log_pc = np.log(np.asarray(class_kw["class_prior"])[c])
    elif class_kw.get("fit_prior", True) is False:
        log_pc = -np.log(n_classes)
    else:
        beta = np.broadcast_to(np.asarray(class_kw.get("class_alpha", 1.0), float), (n_classes,))
        log_pc = np.log(beta[c] / beta.sum())
    n_features = x.shape[0]
    if family == "multinomial":
        al = np.broadcast_to(np.asarray(alpha, float), (n_classes, n_features))[c]
        return log_pc + (gammaln(al + x) - gammaln(al)).sum() - (gammaln(al.sum() + x.sum()) - gammaln(al.sum()))
    if family == "bernoulli":
        if isinstance(alpha, tuple):
            a, b = alpha
        else:
            a = b = alpha
        a = np.broadcast_to(np.asarray(a, float), (n_classes, n_features))[c]
        b = np.broadcast_to(np.asarray(b, float), (n_classes, n_features))[c]
        return log_pc + np.sum(x * np.log(a / (a + b)) + (1 - x) * np.log(b / (a + b)))
    if family == "categorical":
        # Symmetric Dirichlet per cell: every category has prior predictive 1 / K_j.
        return log_pc - np.log(n_cat).sum()
    raise AssertionError(family)


def _data(family, rng):
    n, F, C = 11, 4, 3
    y = rng.integers(0, C, size=n)
    y[2:5] = [2, 0, 1]  # every class present
    if family == "multinomial":
        X = rng.integers(0, 4, size=(n, F)).astype(float)
        X[3] = 0.0  # an empty document
        X[5, 1] = 9.0  # a repeated word
        return X, y, None
    if family == "bernoulli":
        return (rng.random((n, F)) < 0.5).astype(float), y, None
    n_cat = np.array([2, 3, 4, 5])
    X = np.column_stack([rng.integers(0, k, size=n) for k in n_cat])
    X[-1, 3] = 4  # the largest code turns up last
    return X, y, n_cat


_ALPHAS = {
    "multinomial": [1.0, 0.37, "array_f", "array_cf"],
    "bernoulli": [1.0, 0.6, (0.4, 2.5), "pair_arrays", "array_cf"],
    "categorical": [1.0, 0.45, "array_cf"],
}
_CLASS_SETTINGS = {
    "dirichlet": dict(class_alpha=1.0),
    "dirichlet_array": dict(class_alpha=np.array([0.7, 2.3, 1.4])),
    "fixed": dict(class_prior=np.array([0.2, 0.5, 0.3])),
    "uniform": dict(fit_prior=False),
}
_CASES = [(fam, i) for fam, alphas in _ALPHAS.items() for i in range(len(alphas))]


def _resolve_alpha(family, spec, rng, F=4, C=3):
    if spec == "array_f":
        return rng.uniform(0.2, 3.0, size=F)
    if spec == "array_cf":
        return rng.uniform(0.2, 3.0, size=(C, F))
    if spec == "pair_arrays":
        return (rng.uniform(0.2, 3.0, size=F), rng.uniform(0.2, 3.0, size=(C, F)))
    return spec


@pytest.mark.parametrize("class_setting", list(_CLASS_SETTINGS))
@pytest.mark.parametrize("family,alpha_index", _CASES)
def test_log_evidence_equals_chain_rule(family, alpha_index, class_setting):
    rng = np.random.default_rng(1000 + 17 * alpha_index + len(family))
    X, y, n_cat = _data(family, rng)
    alpha = _resolve_alpha(family, _ALPHAS[family][alpha_index], rng)
    class_kw = _CLASS_SETTINGS[class_setting]
    classes = np.arange(3)

    def make():
        if family == "multinomial":
            return MultinomialNB(alpha=alpha, **class_kw)
        if family == "bernoulli":
            return BernoulliNB(alpha=alpha, binarize=None, **class_kw)
        # The category sets must be those of the full data at every step: a code not yet
        # seen is otherwise scored as a "new" category with a different share.
        return CategoricalNB(alpha=alpha, min_categories=n_cat, **class_kw)

    total, est = chain_rule_log_evidence(make, X, y, classes, _first_term(family, X[0], y[0], alpha, class_kw, 3, n_cat))
    full = make().fit(X, y)
    assert np.array_equal(full.classes_, classes)
    assert full.log_evidence() == pytest.approx(total, rel=1e-9, abs=1e-9)
    # The chained estimator reports the same evidence once it has seen every row.
    est.partial_fit(X[-1:], y[-1:])
    assert est.log_evidence() == pytest.approx(total, rel=1e-9, abs=1e-9)


def test_multinomial_evidence_is_of_the_token_sequence():
    """For one document and one class: log B(α + x) − log B(α), no multinomial coefficient."""
    x = np.array([[3.0, 0.0, 2.0, 1.0]])
    clf = MultinomialNB(alpha=0.5, fit_prior=False).fit(x, [0])
    a = np.full(4, 0.5)
    seq = (gammaln(a + x[0]) - gammaln(a)).sum() - (gammaln(2.0 + 6.0) - gammaln(2.0))
    # One class with fixed proportion 1: the label part is 0.
    assert clf.log_evidence() == pytest.approx(seq, rel=1e-13)
    coef = gammaln(7.0) - gammaln(x[0] + 1).sum()
    assert abs(clf.log_evidence() - (seq + coef)) > 1.0


# ------------------------------------------------------------------ 7. no underflow


def _multinomial_direct(a, X, log_class, kind):
    X = np.asarray(X, dtype=np.float64)
    if kind == "mean":
        lik = X @ np.log(a / a.sum(1, keepdims=True)).T
    else:
        lik = _dm_sequence_logpmf(a, X)
    joint = lik + log_class
    return joint - logsumexp(joint, axis=1, keepdims=True)


def _multinomial_joint(clf, doc, kind):
    """Joint log-probability of one document by hand, class proportions (N_c + 1)/(N + C)."""
    a = clf.posterior_.concentration
    N = clf.class_count_
    log_class = np.log((N + 1.0) / (N.sum() + N.size))
    if kind == "mean":
        return (doc @ np.log(a / a.sum(1, keepdims=True)).T)[0] + log_class
    return _dm_sequence_logpmf(a, doc)[0] + log_class


@pytest.mark.parametrize("kind", ["mean", "predictive"])
@pytest.mark.parametrize("n_features", [40, 20000])
def test_multinomial_100k_token_document_does_not_underflow(kind, n_features):
    rng = np.random.default_rng(n_features)
    base = rng.poisson(30.0, size=n_features).astype(float)
    other = base.copy()
    other[: n_features // 2] += 1.0
    X_train = np.vstack([base, other, rng.poisson(30.0, size=n_features)])
    y_train = [0, 1, 2]
    p = rng.dirichlet(np.full(n_features, 5.0))
    doc = rng.multinomial(100_000, p).astype(float)[None, :]
    assert doc.sum() == 100_000
    clf = MultinomialNB(estimate=kind).fit(X_train, y_train)
    for Xin in (doc, sp.csr_matrix(doc)):
        joint = clf.predict_joint_log_proba(Xin)
        assert np.all(np.isfinite(joint)) and joint.max() < -1e4  # far below exp's range
        proba = clf.predict_proba(Xin)
        assert np.all(np.isfinite(proba))
        assert proba.sum() == pytest.approx(1.0, abs=1e-12)
        direct = _multinomial_direct(clf.posterior_.concentration, doc, clf.class_log_prior_, kind)
        # Log probabilities stay finite even where exp() of them underflows to 0.
        log_proba = clf.predict_log_proba(Xin)
        assert np.all(np.isfinite(log_proba))
        # A log probability is a difference of joints of size ~1e5-1e6, each a sum of up
        # to 2e4 terms: float64 resolves them to a relative 1e-13-ish (~1e-8 absolute,
        # which varies with the BLAS summation order), so that is the absolute bound.
        np.testing.assert_allclose(log_proba, direct, rtol=0, atol=1e-12 * np.abs(joint).max())
        np.testing.assert_allclose(joint[0], _multinomial_joint(clf, doc, kind), rtol=1e-12)


@pytest.mark.parametrize("kind", ["mean", "predictive"])
def test_bernoulli_100k_feature_row_does_not_underflow(kind):
    rng = np.random.default_rng(123)
    F = 100_000
    X_train = (rng.random((6, F)) < 0.3).astype(float)
    y_train = [0, 0, 0, 1, 1, 1]
    row = (rng.random((1, F)) < 0.3).astype(float)
    clf = BernoulliNB(estimate=kind, binarize=None).fit(X_train, y_train)
    N = np.array([3.0, 3.0])
    T = np.vstack([X_train[:3].sum(0), X_train[3:].sum(0)])
    pbar = (1.0 + T) / (2.0 + N[:, None])
    joint = row @ np.log(pbar).T + (1 - row) @ np.log1p(-pbar).T + np.log([0.5, 0.5])
    direct = joint - logsumexp(joint, axis=1, keepdims=True)
    for Xin in (row, sp.csr_matrix(row)):
        j = clf.predict_joint_log_proba(Xin)
        assert np.all(np.isfinite(j)) and j.max() < -1e4
        np.testing.assert_allclose(j, joint, rtol=1e-12)
        proba = clf.predict_proba(Xin)
        assert np.all(np.isfinite(proba)) and proba.sum() == pytest.approx(1.0, abs=1e-12)
        np.testing.assert_allclose(clf.predict_log_proba(Xin), direct, rtol=0, atol=1e-12 * np.abs(joint).max())


# ----------------------------------------------------------------- 9. MAP and MLE


@pytest.mark.parametrize(
    "make,X,attribute",
    [
        (lambda: MultinomialNB(alpha=0.5, estimate="map"), np.array([[2, 0, 1], [0, 3, 1]]), "feature_log_prob_"),
        (lambda: BernoulliNB(alpha=0.5, estimate="map"), np.array([[1, 0, 1], [0, 1, 1]]), "feature_log_prob_"),
        (lambda: CategoricalNB(alpha=0.5, estimate="map"), np.array([[0, 1, 2], [1, 0, 2]]), "feature_log_prob_"),
        # Feature prior fine, class prior below one on a class of total weight 0.5.
        (
            lambda: MultinomialNB(alpha=2.0, class_alpha=0.3, estimate="map"),
            np.array([[2, 1, 1], [1, 3, 1]]),
            "class_log_prior_",
        ),
    ],
)
def test_map_with_concentration_below_one_raises_saying_the_mode_is_undefined(make, X, attribute):
    clf = make().fit(X, [0, 1], sample_weight=[1.0, 0.5])
    with pytest.raises(ValueError, match=r"undefined.*no mode") as info:
        clf.predict_proba(X)
    assert "< 1" in str(info.value)
    with pytest.raises(ValueError, match="undefined"):
        getattr(clf, attribute)
    # The same posterior serves the other estimates.
    for kind in ("mean", "predictive"):
        clf.set_params(estimate=kind)
        assert np.all(np.isfinite(clf.predict_proba(X)))


def test_multinomial_map_with_alpha_two_is_add_one_over_tokens():
    X = np.array([[2, 0, 1, 0], [3, 1, 0, 0], [0, 4, 1, 2]], dtype=float)
    y = [0, 0, 1]
    clf = MultinomialNB(alpha=2.0, estimate="map").fit(X, y)
    T = np.array([X[:2].sum(0), X[2]])
    hand = (T + 1) / (T.sum(1, keepdims=True) + X.shape[1])
    np.testing.assert_allclose(np.exp(clf.feature_log_prob_), hand, rtol=1e-13)
    doc = np.array([[1.0, 2.0, 0.0, 1.0]])
    joint = doc @ np.log(hand).T + np.log([1.0 * 2 / 3, 1.0 / 3])  # class MAP under β=1 is the MLE
    np.testing.assert_allclose(clf.predict_joint_log_proba(doc), joint, rtol=1e-13)


@pytest.mark.parametrize("family", ["multinomial", "bernoulli", "categorical"])
def test_mle_row_with_unseen_feature_gives_class_proportions_and_warns(family):
    y = np.array([0, 0, 1, 1, 1])
    if family == "multinomial":
        X = np.array([[2, 0, 0], [1, 1, 0], [0, 3, 0], [1, 2, 0], [0, 1, 0]], dtype=float)
        clf = MultinomialNB(estimate="mle").fit(X, y)
        Xt = np.array([[1.0, 0.0, 2.0], [1.0, 1.0, 0.0]])
    elif family == "bernoulli":
        X = np.array([[1, 0, 0], [1, 1, 0], [0, 1, 0], [1, 1, 0], [0, 1, 0]], dtype=float)
        clf = BernoulliNB(estimate="mle", binarize=None).fit(X, y)
        Xt = np.array([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    else:
        X = np.array([[0, 1], [1, 0], [0, 0], [1, 1], [0, 0]])
        clf = CategoricalNB(estimate="mle", min_categories=[2, 3]).fit(X, y)
        Xt = np.array([[0, 2], [0, 1]])  # category 2 of feature 1 never observed
    joint = clf.predict_joint_log_proba(Xt)
    assert np.all(np.isneginf(joint[0]))
    with pytest.warns(ZeroLikelihoodWarning):
        proba = clf.predict_proba(Xt)
    assert not np.isnan(proba).any()
    np.testing.assert_allclose(proba[0], [2 / 5, 3 / 5], rtol=1e-13)
    assert np.all(np.isfinite(joint[1]))
    np.testing.assert_allclose(proba[1].sum(), 1.0, rtol=1e-13)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf.predict_proba(Xt[1:])  # a possible row does not warn
