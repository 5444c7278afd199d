"""bayesnb.ppc: posterior predictive checks, tested on both sides.

Oracles: closed-form moments of the replicated statistics (a Normal-Inverse-Gamma
posterior's Student-t mean and inverse-gamma variance, so that replicates sharing one
posterior draw are told apart from replicates with one draw per row), p-values counted
by hand from the replicates, data simulated from the model with known parameters (the
p-values must not fall below 0.05 more often than 5%: Meng 1994), and planted misfits
of three kinds (Dirichlet-multinomial counts under the multinomial, class variances a
shared covariance cannot produce, a variance pinned by a strong prior), plus the real
SMS corpus. The Pólya family's per-row draws (``local_draws``) are checked against the
exact Dirichlet moments in units of their Monte Carlo standard error, on several keys,
with planted errors of mean and of spread that the same check must reject.
"""

import numpy as np
import pytest

import bayesnb
from bayesnb.analysis.ppc import STATISTICS, p_values
from bayesnb.core.priors import NormalInverseGamma


def _z(res, name):
    rep = res.replicated[name]
    return (res.observed[name] - rep.mean(axis=0)) / rep.std(axis=0, ddof=1)


# ----------------------------------------------------------------------------- the machinery


def test_p_values_count_the_replicates_by_hand():
    rep = np.arange(10.0)[:, None] * np.array([1.0, -1.0])
    obs = np.array([7.0, 0.0])
    p, upper = p_values(obs, rep)
    # entry 0: 3 of 10 replicates >= 7, 8 <= 7; entry 1: 10 >= 0... all <= 0 too
    np.testing.assert_allclose(upper, [0.3, 0.1])
    np.testing.assert_allclose(p, [0.6, 0.2])
    p, _ = p_values(np.array([np.nan]), np.zeros((4, 1)))
    assert np.isnan(p).all()


def test_replicates_share_one_posterior_draw():
    # The class means of a replicate vary as Var(mu | D) + E[sigma^2] / n_c (one draw of
    # (mu, sigma^2) for the whole replicate); one draw per row would give about
    # (Var(mu | D) + E[sigma^2]) / n_c, far less when the posterior is wide.
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 6)
    X = rng.normal(size=(12, 1)) * 2.0 + y[:, None]
    prior = NormalInverseGamma(np.zeros((2, 1)), np.full((2, 1), 0.5), np.full((2, 1), 2.0), np.full((2, 1), 2.0))
    est = bayesnb.GaussianNB(prior=prior).fit(X, y)

    def means(X, y):
        return np.array([X[y == c, 0].mean() for c in (0, 1)])

    res = bayesnb.ppc(est, X, y, statistics={"means": means}, n_draws=1500, random_state=1)
    post = est.posterior_
    a, b, k, m = (np.asarray(f)[:, 0] for f in (post.concentration, post.rate, post.kappa, post.loc))
    e_sigma2 = b / (a - 1)
    want_sd = np.sqrt(e_sigma2 / k + e_sigma2 / 6)
    rep = res.replicated["means"]
    assert np.all(np.abs(rep.mean(axis=0) - m) < 4 * want_sd / np.sqrt(1500))
    np.testing.assert_allclose(rep.std(axis=0), want_sd, rtol=0.08)
    # Planted error (one draw per row) would be this much smaller: the test can tell.
    assert np.all(np.sqrt((e_sigma2 / k + e_sigma2) / 6) < 0.8 * want_sd)
    # The p-value is that of the replicates, counted by hand.
    obs = means(X, y)
    upper = (rep >= obs).mean(axis=0)
    np.testing.assert_allclose(res.p_upper["means"], upper)
    np.testing.assert_allclose(res.p_value["means"], np.minimum(1, 2 * np.minimum(upper, (rep <= obs).mean(axis=0))))


def test_replicated_variance_has_the_posterior_expectation():
    # E[s^2_rep] = E[sigma^2 | D] = b_n / (a_n - 1) for each class and feature.
    rng = np.random.default_rng(2)
    y = np.repeat([0, 1], 15)
    X = rng.normal(size=(30, 2)) * np.array([1.0, 3.0]) + y[:, None]
    est = bayesnb.GaussianNB().fit(X, y)
    res = bayesnb.ppc(est, X, y, statistics="variance", n_draws=3000, random_state=0)
    want = np.asarray(est.posterior_.rate) / (np.asarray(est.posterior_.concentration) - 1)
    rep = res.replicated["variance"]
    np.testing.assert_allclose(rep.mean(axis=0), want, rtol=0.05)


def test_builtin_statistics_follow_the_support_and_the_blocks():
    rng = np.random.default_rng(3)
    y = np.repeat([0, 1], 10)
    counts = rng.poisson(3.0, (20, 3))
    real = rng.normal(size=(20, 2))
    mixed = bayesnb.MixedNB([("g", bayesnb.GaussianNB(), [0, 1]), ("w", bayesnb.MultinomialNB(), [2, 3, 4])])
    X = np.hstack([real, counts])
    res = bayesnb.ppc(mixed.fit(X, y), X, y, n_draws=20, random_state=0)
    assert set(res.observed) == {"g__variance"} | {f"w__{k}" for k in STATISTICS["counts"]}
    assert res.observed["w__feature_totals"].shape == (2, 3)
    np.testing.assert_allclose(res.observed["w__feature_totals"], [counts[:10].sum(0), counts[10:].sum(0)])
    np.testing.assert_allclose(res.observed["g__variance"], [real[:10].var(0, ddof=1), real[10:].var(0, ddof=1)])
    # Replicated rows keep the columns of the blocks: counts stay non-negative integers.
    rep = res.X_replicated
    assert rep.shape == (20, 20, 5) and np.all(rep[..., 2:] == np.round(rep[..., 2:])) and rep[..., 2:].min() >= 0
    codes = rng.integers(0, 3, (20, 2))
    res = bayesnb.ppc(bayesnb.CategoricalNB().fit(codes, y), codes, y, n_draws=10, random_state=0)
    assert res.observed["category_frequency"].shape == (2, 2, 3)
    np.testing.assert_allclose(res.observed["category_frequency"].sum(-1), 1.0)
    binary = (counts > 2).astype(int)
    res = bayesnb.ppc(bayesnb.BernoulliNB().fit(binary, y), binary, y, n_draws=10, random_state=0)
    np.testing.assert_allclose(res.observed["frequency"], [binary[:10].mean(0), binary[10:].mean(0)])


def test_bad_input_is_refused():
    rng = np.random.default_rng(4)
    y = np.repeat([0, 1], 5)
    X = rng.poisson(2.0, (10, 3))
    est = bayesnb.PoissonNB().fit(X, y)
    with pytest.raises(ValueError, match="unknown statistic"):
        bayesnb.ppc(est, X, y, statistics="variance")
    with pytest.raises(TypeError, match="callable"):
        bayesnb.ppc(est, X, y, statistics={"x": 3})
    with pytest.raises(ValueError, match="one label per row"):
        bayesnb.ppc(est, X, y[:-1])
    with pytest.raises(ValueError, match="not in classes_"):
        bayesnb.ppc(est, X, np.repeat([0, 2], 5))
    with pytest.raises(ValueError, match="shape"):
        bayesnb.ppc(est, X, y, statistics={"odd": lambda X, y: np.zeros(int(X.sum()) % 3 + 1)}, n_draws=20, random_state=0)
    res = bayesnb.ppc(est, X, y, n_draws=5, keep_replicates=False, random_state=0)
    with pytest.raises(ValueError, match="keep_replicates"):
        res.to_inference_data()
    with pytest.raises(ValueError, match="unknown statistic"):
        res.plot("variance")


def test_plot_and_arviz_plot_ppc():
    pytest.importorskip("matplotlib")
    az = pytest.importorskip("arviz")
    import matplotlib

    matplotlib.use("Agg")
    rng = np.random.default_rng(5)
    y = np.repeat([0, 1], 10)
    X = rng.poisson(3.0, (20, 4))
    res = bayesnb.ppc(bayesnb.MultinomialNB().fit(X, y), X, y, n_draws=30, random_state=0)
    ax = res.plot("zero_share", (1,))
    assert ax.lines[0].get_xdata()[0] == pytest.approx(res.observed["zero_share"][1])
    assert sum(p.get_height() for p in ax.patches) == 30
    idata = res.to_inference_data()
    np.testing.assert_array_equal(idata.observed_data["X"].values, X)
    assert idata.posterior_predictive["X"].shape == (1, 30, 20, 4)
    import matplotlib.pyplot as plt

    from bayesnb.analysis import _arviz

    if _arviz.major() >= 1:  # arviz-plots
        az.plot_ppc_dist(idata, num_samples=10, backend="matplotlib")
        assert len(plt.gcf().axes) >= 1
    else:
        axes = az.plot_ppc(idata, num_pp_samples=10, random_seed=0)
        assert np.size(axes) >= 1
    plt.close("all")


# ----------------------------------------------------------------------------- correct models


def _simulate_counts(rng, theta, y, length=40):
    n = rng.poisson(length, y.size)
    return np.stack([rng.multinomial(k, theta[c]) for k, c in zip(n, y)])


def test_p_values_are_conservative_on_data_from_the_model():
    # Across data sets drawn from the model (known parameters), p < 0.05 happens at most
    # 5% of the time up to the Monte Carlo error of the data sets: posterior predictive
    # p-values are conservative, uniform at most for (nearly) pivotal statistics such
    # as the dispersions, and never above Meng's (1994) bound 2 * 0.05. Those of the
    # statistics that are not sufficient are not stuck at 1 either (a check that could
    # never fail); binary frequencies are sufficient statistics, whose p-values are
    # near 1 unless the prior dominates.
    rng = np.random.default_rng(6)
    ps = {"counts": [], "real": [], "binary": []}
    y = np.repeat([0, 1], 15)
    for r in range(16):
        theta = rng.dirichlet(np.ones(5), 2)
        X = _simulate_counts(rng, theta, y)
        res = bayesnb.ppc(bayesnb.MultinomialNB().fit(X, y), X, y, n_draws=50, random_state=r,
                          statistics=["length_dispersion", "count_dispersion", "zero_share"])
        ps["counts"] += [v.ravel() for v in res.p_value.values()]
        mu, sd = rng.normal(size=(2, 3)), rng.uniform(0.5, 2.0, (2, 3))
        Xr = mu[y] + sd[y] * rng.normal(size=(30, 3))
        res = bayesnb.ppc(bayesnb.GaussianNB().fit(Xr, y), Xr, y, n_draws=50, random_state=r)
        ps["real"] += [v.ravel() for v in res.p_value.values()]
        Xb = (rng.random((30, 4)) < rng.uniform(0.1, 0.9, (2, 4))[y]).astype(int)
        res = bayesnb.ppc(bayesnb.BernoulliNB().fit(Xb, y), Xb, y, n_draws=50, random_state=r)
        ps["binary"] += [v.ravel() for v in res.p_value.values()]
    for support, values in ps.items():
        p = np.concatenate(values)
        p = p[~np.isnan(p)]
        se = np.sqrt(0.05 * 0.95 / p.size)
        assert np.mean(p < 0.05) <= min(0.05 + 3 * se, 0.10), (support, np.mean(p < 0.05), p.size)
        if support != "binary":
            assert 0.25 < np.mean(p) < 0.95, (support, np.mean(p))


# ----------------------------------------------------------------------------- planted misfits


def test_overdispersed_counts_fail_the_multinomial_and_not_the_polya():
    # Dirichlet-multinomial documents (each its own theta_d, precision 20): bursty words.
    rng = np.random.default_rng(7)
    y = np.repeat([0, 1], 60)
    mean = rng.dirichlet(np.full(30, 2.0), 2)
    lengths = rng.poisson(80, y.size)
    X = np.stack([rng.multinomial(n, rng.dirichlet(20.0 * mean[c])) for n, c in zip(lengths, y)])
    multi = bayesnb.ppc(bayesnb.MultinomialNB().fit(X, y), X, y, statistics="count_dispersion", n_draws=200, random_state=0)
    polya = bayesnb.ppc(bayesnb.PolyaNB().fit(X, y), X, y, statistics="count_dispersion", n_draws=200, random_state=0)
    assert np.all(multi.p_value["count_dispersion"] < 0.01)
    assert np.all(_z(multi, "count_dispersion") > 10)
    assert np.all(polya.p_value["count_dispersion"] > 0.05)
    # The same check on multinomial documents of the same lengths passes.
    X0 = np.stack([rng.multinomial(n, mean[c]) for n, c in zip(lengths, y)])
    ok = bayesnb.ppc(bayesnb.MultinomialNB().fit(X0, y), X0, y, statistics="count_dispersion", n_draws=200, random_state=0)
    assert np.all(ok.p_value["count_dispersion"] > 0.05)


# Pólya local draws: each row's own theta_d ~ Dir(alpha_{y_d}). The marginals of a
# Dirichlet are Beta(a_j, A - a_j), whose mean, variance and kurtosis scipy gives exactly,
# so the sample mean and variance of the draws are judged in units of their own Monte
# Carlo standard error, not by a relative tolerance that holds for most keys only.
LOCAL_CONC = np.array([[0.05, 0.3, 2.0], [4.0, 1.0, 0.01]])  # tiny to large concentrations
LOCAL_N = 100_000  # rows per class
LOCAL_Z = 5.0  # a false alarm is a 5-sigma event: 12 z-scores a key, ~1e-5 per key
LOCAL_KEYS = range(5)


def _local_draws(seed, conc):
    """theta of shape (2 * LOCAL_N, 2, 3) drawn by ``polya.local_draws`` for LOCAL_N rows of each class."""
    import jax

    from bayesnb.core.families import polya

    y = np.repeat([0, 1], LOCAL_N)
    log_probs = polya.local_draws(jax.random.key(seed), polya.Polya(conc), y).log_probs
    assert log_probs.shape == (y.size, 2, 3)
    return y, np.exp(np.asarray(log_probs))


def _dirichlet_z(y, theta):
    r"""z-scores of each row's own-class draw against the exact moments of Dir(LOCAL_CONC).

    Returns
    -------
    z_mean, z_var : ndarray of shape (n_classes, n_features)
        :math:`(\bar\theta - m)/\sqrt{\sigma^2/n}` and
        :math:`(s^2 - \sigma^2)/\sqrt{(\mu_4 - \sigma^4)/n}`, with
        :math:`\mu_4 = (\kappa + 3)\sigma^4` from the Beta marginal's excess kurtosis
        :math:`\kappa` (the large-n variance of the sample variance).
    """
    import scipy.stats as st

    z_mean, z_var = [], []
    for c, a in enumerate(LOCAL_CONC):
        t = theta[y == c, c]
        mean, var, kurt = (np.asarray(v) for v in st.beta.stats(a, a.sum() - a, moments="mvk"))
        n = t.shape[0]
        z_mean.append((t.mean(axis=0) - mean) / np.sqrt(var / n))
        z_var.append((t.var(axis=0, ddof=1) - var) / np.sqrt((kurt + 2.0) * var**2 / n))
    return np.array(z_mean), np.array(z_var)


@pytest.mark.parametrize("seed", LOCAL_KEYS)
def test_polya_local_draws_have_the_dirichlet_moments(seed):
    # Every key must pass (over 200 other keys the largest |z| was 3.7). Power: the
    # planted errors below are rejected at |z| >= 40 on every one of 20 keys.
    y, theta = _local_draws(seed, LOCAL_CONC)
    np.testing.assert_allclose(theta.sum(axis=-1), 1.0, rtol=1e-12)
    z_mean, z_var = _dirichlet_z(y, theta)
    assert np.all(np.abs(z_mean) < LOCAL_Z), z_mean
    assert np.all(np.abs(z_var) < LOCAL_Z), z_var


def test_polya_local_draws_are_the_shared_sampler_on_host_and_under_jit():
    # No sampler of its own: on concrete input the draws are _dirichlet.sample_log's
    # (NumPy, seeded from the key), under jax.jit jax.random.loggamma's with the same key.
    import jax
    from jax.scipy.special import logsumexp

    from bayesnb.core._x64 import enable_x64
    from bayesnb.core.families import _dirichlet, polya

    key, y = jax.random.key(3), np.array([0, 1, 1, 0, 1])
    a = LOCAL_CONC[y]
    host = polya.local_draws(key, polya.Polya(LOCAL_CONC), y).log_probs
    assert isinstance(host, np.ndarray) and host.shape == (5, 2, 3)
    np.testing.assert_array_equal(host[:, 0], _dirichlet.sample_log(key, a, 1)[0])
    np.testing.assert_array_equal(host[:, 0], host[:, 1])  # every class index reads the row's theta
    with enable_x64():
        traced = jax.jit(lambda k, c, y: polya.local_draws(k, polya.Polya(c), y).log_probs)(key, LOCAL_CONC, y)
        g = jax.random.loggamma(key, a, (1, 5, 3), dtype=np.float64)[0]
        np.testing.assert_allclose(traced[:, 0], g - logsumexp(g, axis=-1, keepdims=True), rtol=1e-12)
    assert traced.shape == (5, 2, 3)


def _shared_theta_per_class(seed, conc):
    # One theta per class for all its rows (a population draw where each row needs its
    # own): the right mean, no spread across rows.
    import jax

    from bayesnb.core.families import polya

    y = np.repeat([0, 1], LOCAL_N)
    theta = np.exp(np.asarray(polya.sample(jax.random.key(seed), polya.Polya(conc), 1).log_probs))
    return y, np.broadcast_to(theta, (y.size, 2, 3))


# (which moment must flag it, draws): a shifted mean is caught by the means, a wrong
# spread around the right mean by the variances.
_PLANTED = {
    "another class's alpha": ("mean", lambda seed: _local_draws(seed, LOCAL_CONC[::-1])),
    "alpha x1.25 on one entry": (
        "mean",
        lambda seed: _local_draws(seed, LOCAL_CONC * np.array([[1.0, 1.0, 1.25], [1.0, 1.0, 1.0]])),
    ),
    "concentration x2": ("var", lambda seed: _local_draws(seed, 2.0 * LOCAL_CONC)),
    "concentration x0.5": ("var", lambda seed: _local_draws(seed, 0.5 * LOCAL_CONC)),
    "one theta per class": ("var", lambda seed: _shared_theta_per_class(seed, LOCAL_CONC)),
}


@pytest.mark.parametrize("planted", list(_PLANTED))
@pytest.mark.parametrize("seed", LOCAL_KEYS[:2])
def test_polya_local_draws_moment_check_rejects_planted_errors(planted, seed):
    moment, draw = _PLANTED[planted]
    z_mean, z_var = _dirichlet_z(*draw(seed))
    assert np.max(np.abs(z_mean if moment == "mean" else z_var)) >= LOCAL_Z


def test_a_spread_the_model_cannot_produce_is_flagged():
    rng = np.random.default_rng(8)
    y = np.repeat([0, 1], 60)
    X = rng.normal(size=(120, 2)) * np.array([0.3, 3.0])[y][:, None]
    # One covariance for both classes: their variances (0.09 and 9) are pulled together.
    shared = bayesnb.ppc(
        bayesnb.GaussianBayesClassifier(covariance="shared").fit(X, y), X, y, statistics="variance", n_draws=200, random_state=0
    )
    assert np.all(shared.p_value["variance"] < 0.01)
    assert np.all(_z(shared, "variance")[0] < -3) and np.all(_z(shared, "variance")[1] > 3)
    # A variance pinned near 1 by a strong prior (a0 = b0 = 2000) on data with variances 0.09 and 9.
    strong = NormalInverseGamma(np.zeros((2, 2)), np.ones((2, 2)), np.full((2, 2), 2000.0), np.full((2, 2), 2000.0))
    pinned = bayesnb.ppc(bayesnb.GaussianNB(prior=strong).fit(X, y), X, y, statistics="variance", n_draws=200, random_state=0)
    assert np.all(pinned.p_value["variance"] < 0.01)
    # The model with a variance per class fits.
    free = bayesnb.ppc(bayesnb.GaussianNB().fit(X, y), X, y, statistics="variance", n_draws=200, random_state=0)
    assert np.all(free.p_value["variance"] > 0.05)


def test_sms_corpus_is_overdispersed_for_the_multinomial(shared_data):
    from sklearn.feature_extraction.text import CountVectorizer

    from bayesnb.io.datasets import read_labelled_text

    texts, labels = read_labelled_text(shared_data / "sms_spam_collection" / "SMSSpamCollection")
    X = CountVectorizer(max_features=300).fit_transform(texts[:1000])
    y = np.asarray(labels[:1000])
    keep = np.asarray(X.sum(axis=1)).ravel() > 0
    X, y = X[keep], y[keep]
    kw = dict(statistics="count_dispersion", n_draws=100, random_state=0, keep_replicates=False)
    multi = bayesnb.ppc(bayesnb.MultinomialNB().fit(X, y), X, y, **kw)
    polya = bayesnb.ppc(bayesnb.PolyaNB().fit(X, y), X, y, **kw)
    ham = list(multi.classes).index("ham")
    assert multi.p_value["count_dispersion"][ham] < 0.01 and _z(multi, "count_dispersion")[ham] > 8
    assert abs(_z(polya, "count_dispersion")[ham]) < _z(multi, "count_dispersion")[ham] / 3
