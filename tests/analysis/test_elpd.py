"""bayesnb.loo (exact leave-one-out as an arviz ELPDData) against brute-force refits.

Oracles: N refits of the estimator itself on the data without each row, with its prior
pinned at the fitted ``prior_`` (``prior=est.prior_``; the data-free Dirichlet/Beta
priors by their ``alpha``; CategoricalNB's number of categories by ``min_categories``;
MixedNB block by block), read through the refit's own ``predict_log_proba`` /
``predict_joint_log_proba``; for PolyaNB, whose concentration cannot be pinned through
its constructor, numpyro's ``DirichletMultinomial`` and the class proportions by hand;
scikit-learn's LogisticRegression refitted N times as a third model for ``az.compare``.
"""

import warnings

import numpy as np
import pytest
from scipy.special import gammaln, logsumexp

import bayesnb
from bayesnb.analysis import _arviz
from bayesnb.analysis.elpd import elpd_data, elpd_values

az = pytest.importorskip("arviz")


def _data(seed, n=14, n_classes=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    y[:n_classes] = np.arange(n_classes)
    counts = rng.poisson(2.0, (n, 4)) + (np.arange(4)[None, :] == y[:, None] % 4) * rng.poisson(3.0, (n, 4))
    real = rng.normal(size=(n, 3)) + y[:, None] * np.array([1.0, -0.5, 0.3])
    return counts, real, y


def _pinned(est):
    """An unfitted copy of fitted ``est`` whose prior is the fitted ``prior_``."""
    params = est.get_params(deep=False)
    if "prior" in params:
        params["prior"] = est.prior_
    if isinstance(est, bayesnb.CategoricalNB):
        params["min_categories"] = est.n_categories_
    if isinstance(est, bayesnb.MixedNB):
        params["blocks"] = [(name, _pinned(block), cols) for name, block, cols in est.estimators_]
    return type(est)(**params)


def _cases(seed):
    counts, real, y = _data(seed)
    mixed = bayesnb.MixedNB(
        [("g", bayesnb.GaussianNB(), [0, 1, 2]), ("p", bayesnb.PoissonNB(), [3, 4, 5, 6])]
    )
    return [
        (bayesnb.MultinomialNB(alpha=0.7), counts, y),
        (bayesnb.BernoulliNB(), (counts > 2).astype(int), y),
        (bayesnb.CategoricalNB(), counts % 3, y),
        (bayesnb.PoissonNB(), counts, y),
        (bayesnb.ExponentialNB(), np.exp(real), y),
        (bayesnb.GaussianNB(), real, y),
        (bayesnb.GaussianBayesClassifier(), real, y),
        (bayesnb.GaussianBayesClassifier(covariance="shared"), real, y),
        (mixed, np.hstack([real, counts]), y),
    ]


def _brute(est, X, y, kind, w=None):
    out = np.empty(len(y))
    col = np.searchsorted(est.classes_, y)
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        refit = _pinned(est).fit(X[keep], y[keep], **({} if w is None else {"sample_weight": w[keep]}))
        score = refit.predict_log_proba if kind == "conditional" else refit.predict_joint_log_proba
        out[i] = score(X[i : i + 1])[0, col[i]]
    return out


def test_every_family_covered():
    # A family added to the registry without a case here fails this test.
    # (MixedNB's family is the product of its blocks', not a registered one.)
    covered = {est.family_.name for est, X, y in ((e.fit(X, y), X, y) for e, X, y in _cases(0)) if est.family_.blocks is None}
    assert covered | {"polya"} == set(bayesnb.families.names())


@pytest.mark.parametrize("kind", ["conditional", "joint"])
@pytest.mark.parametrize("seed", [0, 1])
def test_loo_equals_refits_with_the_prior_pinned(kind, seed):
    for est, X, y in _cases(seed):
        est.fit(X, y)
        res = bayesnb.loo(est, X, y, kind=kind)
        want = _brute(est, X, y, kind)
        name = type(est).__name__ + ("" if est._family is None else f"({est.family_.name})")
        np.testing.assert_allclose(elpd_values(res).pointwise.values, want, rtol=1e-10, atol=1e-10, err_msg=name)
        assert elpd_values(res).elpd == pytest.approx(want.sum(), rel=1e-12, abs=1e-10)
        assert res["se"] == pytest.approx(np.sqrt(len(y) * np.var(want)), rel=1e-9)
        assert res["n_data_points"] == len(y) and res["scale"] == "log"
        # Pinned refits are the oracle here; where the fitted prior came from the rows (the
        # data-scaled defaults) bayesnb.loo says it is approximate, and only then warns
        # (tests/analysis/test_loo_exact_refits.py compares with true refits).
        assert res["warning"] == res["approximate"] == bool(est.loo_approximations(kind)), name


@pytest.mark.parametrize("kind", ["conditional", "joint"])
def test_loo_with_sample_weights_leaves_the_whole_row_out(kind):
    for est, X, y in _cases(2):
        w = np.linspace(0.5, 3.0, len(y))
        est.fit(X, y, sample_weight=w)
        got = elpd_values(bayesnb.loo(est, X, y, kind=kind, sample_weight=w)).pointwise.values
        np.testing.assert_allclose(got, _brute(est, X, y, kind, w), rtol=1e-10, atol=1e-10, err_msg=type(est).__name__)
        # Planted error: the wrong weights would leave out only half of each row; the
        # statistics they give are not the model's, so loo refuses them.
        with pytest.raises(ValueError, match="was not fitted on these data"):
            bayesnb.loo(est, X, y, kind=kind, sample_weight=w / 2)


def test_polya_loo_against_numpyro_dirichlet_multinomial():
    from numpyro.distributions import DirichletMultinomial

    from bayesnb.core._x64 import enable_x64

    counts, _, y = _data(3)
    # Moderate precisions: with the evidence's (here ~1e8) numpyro's lgamma(A + n) - lgamma(A)
    # cancels to ~1e-7, the oracle's error, not ours (tests/core/test_dm_large_count_predictive.py).
    est = bayesnb.PolyaNB(precision=[4.0, 9.0, 2.5]).fit(counts, y)
    # PolyaNB's concentration is alpha_c = s_c m_c, its mean m_c smoothed from the class's
    # word totals (which hold the row): leaving row i out takes its words out of its own
    # class's mean, with the learned precision s_c held (bayesnb.core.families.polya.
    # loo_log_predictive); the other classes keep prior_'s concentration.
    alpha = np.asarray(est.prior_.concentration)
    totals, a, s = np.asarray(est.feature_count_), float(est.alpha_), np.asarray(est.precision_)
    n_tokens = counts.sum(axis=1)
    coef = gammaln(n_tokens + 1) - gammaln(counts + 1).sum(axis=1)  # bayesnb scores token sequences
    with enable_x64():  # the learned precisions are large: float32 would lose the terms
        feat = np.stack(
            [np.asarray(DirichletMultinomial(alpha[c], total_count=n_tokens).log_prob(counts)) - coef for c in range(3)],
            axis=1,
        )
        for i, c in enumerate(y):
            mean = (totals[c] - counts[i] + a) / (totals[c].sum() - n_tokens[i] + a * counts.shape[1])
            own = DirichletMultinomial(s[c] * mean, total_count=n_tokens[i]).log_prob(counts[i])
            feat[i, c] = float(own) - coef[i]
    beta = np.asarray(est.class_dirichlet_.concentration)
    N = np.bincount(y, minlength=3).astype(float)
    down = N[None, :] - np.eye(3)[y]
    cls = np.log((down + beta) / (down.sum(axis=1, keepdims=True) + beta.sum()))
    joint = cls + feat
    rows = np.arange(len(y))
    np.testing.assert_allclose(elpd_values(bayesnb.loo(est, counts, y, kind="joint")).pointwise.values, joint[rows, y], rtol=1e-10)
    cond = joint[rows, y] - logsumexp(joint, axis=1)
    np.testing.assert_allclose(elpd_values(bayesnb.loo(est, counts, y)).pointwise.values, cond, rtol=1e-10, atol=1e-12)


def test_p_loo_is_in_sample_minus_loo_and_temperature_tempers_only_the_conditional():
    counts, _, y = _data(4)
    est = bayesnb.MultinomialNB(temperature=2.5).fit(counts, y)
    cond = bayesnb.loo(est, counts, y)
    np.testing.assert_allclose(elpd_values(cond).pointwise.values, _brute(est, counts, y, "conditional"), rtol=1e-10)
    insample = est.predict_log_proba(counts)[np.arange(len(y)), y].sum()
    assert elpd_values(cond).p == pytest.approx(insample - elpd_values(cond).elpd, rel=1e-10)
    assert elpd_values(cond).p > 0  # the in-sample score is optimistic
    # The joint is the model as written: the untempered refit's joint.
    plain = bayesnb.MultinomialNB().fit(counts, y)
    joint = bayesnb.loo(est, counts, y, kind="joint")
    np.testing.assert_allclose(elpd_values(joint).pointwise.values, _brute(plain, counts, y, "joint"), rtol=1e-10)
    insample_joint = plain.predict_joint_log_proba(counts)[np.arange(len(y)), y].sum()
    assert elpd_values(joint).p == pytest.approx(insample_joint - elpd_values(joint).elpd, rel=1e-9)


def test_impossible_rows_are_minus_infinity_with_a_warning():
    X = np.array([[3, 0, 0], [2, 0, 0], [0, 3, 0], [0, 2, 1], [1, 0, 0], [0, 4, 0]])
    y = np.array([0, 0, 1, 1, 0, 1])
    est = bayesnb.MultinomialNB(estimate="mle").fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = bayesnb.loo(est, X, y)
    # Row 3 is the only one with word 2: without it the MLE gives that word probability 0
    # in every class, so the row is impossible (not "the class proportions").
    assert np.isneginf(elpd_values(res).pointwise.values[3]) and res["warning"] and np.isnan(res["se"])
    assert np.isfinite(np.delete(elpd_values(res).pointwise.values, 3)).all()
    ok = bayesnb.loo(bayesnb.MultinomialNB().fit(X, y), X, y)
    assert not ok["warning"] and np.isfinite(elpd_values(ok).pointwise.values).all()


def _sklearn_loo(make, X, y):
    """Brute-force LOO log p(y_i | x_i) of a scikit-learn classifier, as an ELPDData."""
    out = np.empty(len(y))
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        clf = make().fit(X[keep], y[keep])
        out[i] = clf.predict_log_proba(X[i : i + 1])[0, np.searchsorted(clf.classes_, y[i])]
    return elpd_data(out)


@pytest.mark.parametrize("seed", [0, 1])
def test_az_compare_ranks_bayesnb_models_with_a_sklearn_baseline(seed):
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(seed)
    n = 40
    y = np.repeat([0, 1], n // 2)
    # Strongly correlated features: the full covariance sees what the diagonal cannot.
    z = rng.normal(size=(n, 1))
    X = np.hstack([z, z + 0.15 * rng.normal(size=(n, 1))]) + np.outer(y, [0.0, 0.6])
    models = {
        "full": bayesnb.loo(bayesnb.GaussianBayesClassifier(covariance="full").fit(X, y), X, y),
        "diag": bayesnb.loo(bayesnb.GaussianNB().fit(X, y), X, y),
        "logreg": _sklearn_loo(lambda: LogisticRegression(C=1.0), X, y),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # arviz 1.x rounds the table unless told not to; 0.x has no round_to.
        table = az.compare(models, **({"round_to": "none"} if _arviz.major() >= 1 else {}))
    order = sorted(models, key=lambda k: -elpd_values(models[k]).elpd)
    assert list(table.index) == order and list(table["rank"]) == [0, 1, 2]
    # The numbers are ours, and the differences are those of the pointwise sums.
    for name in models:
        assert table.loc[name, "elpd" if _arviz.major() >= 1 else "elpd_loo"] == pytest.approx(elpd_values(models[name]).elpd)
        diff = (elpd_values(models[order[0]]).pointwise.values - elpd_values(models[name]).pointwise.values)
        # arviz 1.x reports elpd_diff as model minus best (<= 0), 0.x as best minus model.
        sign = -1.0 if _arviz.major() >= 1 else 1.0
        assert table.loc[name, "elpd_diff"] == pytest.approx(sign * diff.sum(), abs=1e-9)
        assert table.loc[name, "dse"] == pytest.approx(np.sqrt(n * np.var(diff)), abs=1e-9)
    # The correlated-feature model must beat the diagonal one by a margin the data show.
    assert elpd_values(models["full"]).elpd > elpd_values(models["diag"]).elpd + 2.0


def test_elpd_data_prints_and_rejects_bad_input():
    res = elpd_data([-0.5, -1.0, -0.2], p_loo=1.5)
    assert "elpd_loo" in str(res) and elpd_values(res).p == 1.5 and res["n_samples"] == 0
    with pytest.raises(ValueError, match="1-d"):
        elpd_data(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="row 1"):
        elpd_data([-1.0, np.nan])
    counts, _, y = _data(0)
    est = bayesnb.MultinomialNB().fit(counts, y)
    with pytest.raises(ValueError, match="kind"):
        bayesnb.loo(est, counts, y, kind="marginal")
    from sklearn.naive_bayes import MultinomialNB

    with pytest.raises(TypeError, match="loo_terms"):
        bayesnb.loo(MultinomialNB().fit(counts, y), counts, y)
    with pytest.raises(ValueError):
        bayesnb.loo(est, counts, y[:-1])


def test_loo_is_exported_and_the_module_stays_importable():
    import importlib

    assert "loo" in bayesnb.__all__ and callable(bayesnb.loo)
    mod = importlib.import_module("bayesnb.analysis.loo")
    assert hasattr(mod, "LooTerms") and bayesnb.loo.__module__ == "bayesnb.analysis.elpd"


def test_loo_refuses_rows_the_model_was_not_fitted_on():
    """Exact leave-one-out leaves each given row out of the statistics the model holds:
    other rows, a part of them, other labels or other weights give no leave-one-out of
    anything, and are refused (they returned a number before)."""
    from bayesnb import GaussianNB, MultinomialNB
    from bayesnb.core.priors import NormalInverseGamma

    rng = np.random.default_rng(0)
    X = rng.poisson(2.0, (20, 4))
    y = np.repeat([0, 1], 10)
    est = MultinomialNB().fit(X, y)
    refusal = "bayesnb.loo: this MultinomialNB was not fitted on these data"
    for X_other, y_other, w in [
        (rng.poisson(2.0, (20, 4)), y, None),  # other rows
        (X[:10], y[:10], None),  # a part of them
        (X, y[::-1], None),  # other labels
        (X, y, np.full(20, 2.0)),  # other weights
    ]:
        with pytest.raises(ValueError, match=refusal):
            bayesnb.loo(est, X_other, y_other, sample_weight=w)
    # The same rows in another order, or a model fitted in batches (its statistics summed
    # in another order): the same terms, row for row.
    order = rng.permutation(20)
    batches = MultinomialNB()
    for rows in np.array_split(order, 3):
        batches.partial_fit(X[rows], y[rows], classes=[0, 1])
    expected = elpd_values(bayesnb.loo(est, X, y)).pointwise.to_numpy()
    np.testing.assert_allclose(elpd_values(bayesnb.loo(est, X[order], y[order])).pointwise, expected[order], rtol=1e-12)
    np.testing.assert_allclose(elpd_values(bayesnb.loo(batches, X, y)).pointwise, expected, rtol=1e-10)
    # A Gaussian's statistics (means and squared deviations) and the pytree's entry point.
    Xg = rng.normal(size=(20, 3))
    gauss = GaussianNB(prior=NormalInverseGamma(0.0, 1.0, 2.0, 1.0)).fit(Xg, y)
    with pytest.raises(ValueError, match="this GaussianNB was not fitted on these data"):
        bayesnb.loo(gauss.fitted_model(), Xg + 1.0, y)
