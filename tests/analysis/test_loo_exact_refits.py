"""bayesnb.loo against true brute-force refits: exact where not labelled approximate (issue 36).

Oracle: for every row i, ``sklearn.base.clone(est).fit`` on the other rows (with their
weights), nothing pinned, then the refit's own ``predict_log_proba`` /
``predict_joint_log_proba`` of row i. Every family estimator exported by bayesnb
(GaussianBayesClassifier in its three covariances, MixedNB over three blocks), every
estimate where it is defined, both kinds, with and without ``sample_weight``, on small
random data (n = 24) built so that the things a refit re-learns do change: PolyaNB's
precision (learned by evidence) and mean, CategoricalNB's table of categories (a code
alone at the top of its column, with a gap below it), GaussianNB's "mle" variance floor
(scaled to the pooled variances), and balanced classes for the shared covariance (where
a check of the vectorised downdate could pass by coincidence). What is learned from all
the rows and not re-learned (data-scaled default priors, evidence hyperparameters,
``class_alpha="evidence"``, ``temperature="loo"``) must be labelled approximate: the
ELPDData's ``approximate`` / ``warning`` and an ``ApproximateLOOWarning`` naming it.

Planted errors each of these tests catches (checked by hand when they were written):
PolyaNB's precision held at ``precision_`` instead of re-learned (predictive, map),
CategoricalNB's table kept at ``n_categories_``, GaussianNB's "mle" floor kept at the
full data's, the shared-covariance check without its probe rows, MixedNB summing the
product family's downdate instead of its blocks' own, and the labels turned off.
"""

import warnings

import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.base import clone

import bayesnb
from bayesnb.core.priors import NormalInverseGamma, NormalInverseWishart

pytest.importorskip("arviz")

N, C = 24, 3
ESTIMATES = ("predictive", "mean", "map", "mle")
KINDS = ("conditional", "joint")
TOL = 1e-8


def _data(seed, sizes=(N // C,) * C):
    rng = np.random.default_rng(seed)
    # Balanced classes (8 each) by default, shuffled.
    y = rng.permutation(np.repeat(np.arange(C), sizes))
    # Bursty counts (each document its own word distribution): PolyaNB's precisions are
    # then learned inside their bounds, where leaving a row out moves them.
    base = 1.0 + 3.0 * (np.arange(4)[None, :] == y[:, None])
    theta = np.array([rng.dirichlet(8.0 * b / b.sum()) for b in base])
    counts = np.array([rng.multinomial(n, t) for n, t in zip(6 + rng.poisson(8.0, N), theta)])
    # Four features for three classes: no parameter of the shared covariance's prior has
    # a leading axis that looks like the class axis.
    real = rng.normal(size=(N, 4)) + y[:, None] * np.array([1.0, -0.5, 0.3, 0.0])
    real[:, 1] += 0.6 * real[:, 0]  # correlated features for the full covariance
    codes = rng.integers(0, 3, (N, 3))
    # A code alone at the top of its column with a gap below it: a refit without its row
    # learns a shorter table of categories (and reads the code as a new category) ...
    codes[5, 0] = 4
    # ... and one alone at the top with no gap (the table shrinks by one; same scores).
    codes[:, 1] = np.minimum(codes[:, 1], 1)
    codes[7, 1] = 2
    durations = rng.exponential(1.0 + y[:, None] * np.array([0.5, 2.0]), (N, 2))
    return {"counts": counts, "binary": (counts > 2).astype(int), "codes": codes, "real": real,
            "durations": durations, "mixed": np.hstack([real, counts, codes]).astype(float)}, y


def _nig():
    return NormalInverseGamma(0.0, 0.5, 2.0, 1.5)


def _niw(shared):
    F = 4
    if shared:
        return NormalInverseWishart(np.zeros((C, F)), np.full(C, 0.5), np.asarray(F + 2.0), np.eye(F))
    return NormalInverseWishart(np.zeros((C, F)), np.full(C, 0.5), np.full(C, F + 2.0), np.stack([np.eye(F)] * C))


def _mixed():
    return bayesnb.MixedNB([
        ("g", bayesnb.GaussianNB(prior=_nig(), var_smoothing=0.05), [0, 1, 2, 3]),
        ("p", bayesnb.PolyaNB(alpha=20.0), [4, 5, 6, 7]),
        ("c", bayesnb.CategoricalNB(alpha=1.5), [8, 9, 10]),
    ])


# Explicit, data-free priors (concentrations >= 1 where "map" needs them). PolyaNB keeps
# precision="evidence": its leave-one-out re-learns the precision, so it is exact too.
CASES = {
    "multinomial": (lambda: bayesnb.MultinomialNB(alpha=1.5), "counts"),
    "bernoulli": (lambda: bayesnb.BernoulliNB(alpha=1.5), "binary"),
    "categorical": (lambda: bayesnb.CategoricalNB(alpha=1.5), "codes"),
    "gaussian": (lambda: bayesnb.GaussianNB(prior=_nig(), var_smoothing=0.05), "real"),
    "gbc-diag": (lambda: bayesnb.GaussianBayesClassifier(covariance="diag", prior=_nig()), "real"),
    "gbc-shared": (lambda: bayesnb.GaussianBayesClassifier(covariance="shared", prior=_niw(True)), "real"),
    "gbc-full": (lambda: bayesnb.GaussianBayesClassifier(covariance="full", prior=_niw(False)), "real"),
    "poisson": (lambda: bayesnb.PoissonNB(alpha=1.5, beta=0.5), "counts"),
    "exponential": (lambda: bayesnb.ExponentialNB(alpha=1.5, beta=2.0), "durations"),
    "polya": (lambda: bayesnb.PolyaNB(), "counts"),
    "polya-map": (lambda: bayesnb.PolyaNB(alpha=20.0), "counts"),
    "mixed": (_mixed, "mixed"),
}


def _refits(est, X, y, w=None):
    """Both kinds of row i's score by a true refit on the other rows, for every row."""
    cond, joint = np.empty(len(y)), np.empty(len(y))
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        refit = clone(est).fit(X[keep], y[keep], **({} if w is None else {"sample_weight": w[keep]}))
        col = int(np.searchsorted(refit.classes_, y[i]))
        scores = refit.predict_joint_log_proba(X[i : i + 1])[0]
        joint[i] = scores[col]
        # bayesnb.loo scores a row impossible under every class -inf (predict falls back
        # to the class proportions); otherwise the refit's own class probabilities.
        if np.isneginf(scores).all():
            cond[i] = -np.inf
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cond[i] = refit.predict_log_proba(X[i : i + 1])[0, col]
    return {"conditional": cond, "joint": joint}


def _assert_same(got, want, label):
    inf = np.isneginf(want)
    assert np.array_equal(np.isneginf(got), inf), f"{label}: -inf rows differ"
    err = np.max(np.abs(got[~inf] - want[~inf]), initial=0.0)
    assert err <= TOL, f"{label}: max |loo - refit| = {err:.3g}"


def _loo(est, X, y, kind, w=None):
    with warnings.catch_warnings():
        warnings.simplefilter("error", bayesnb.ApproximateLOOWarning)
        res = bayesnb.loo(est, X, y, kind=kind, sample_weight=w)
    return res


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("name", list(CASES))
def test_loo_equals_true_refits_for_every_estimate_and_kind(name, weighted):
    make, data = CASES[name]
    Xs, y = _data(0)
    X = Xs[data]
    w = np.linspace(0.5, 3.0, N) if weighted else None
    checked = 0
    for estimate in ESTIMATES:
        est = make().set_params(estimate=estimate)
        est.fit(X, y, sample_weight=w)
        try:
            want = _refits(est, X, y, w)
        except ValueError as err:
            # Only "map" may be undefined (a concentration below 1), and then the closed
            # form refuses too.
            assert estimate == "map", f"{name} {estimate}: {err}"
            with pytest.raises(ValueError):
                bayesnb.loo(est, X, y, sample_weight=w)
            continue
        for kind in KINDS:
            res = _loo(est, X, y, kind, w)
            assert not res["approximate"] and res["approximate_reason"] == ""
            assert est.loo_approximations(kind) == ()
            _assert_same(res["loo_i"].values, want[kind], f"{name} estimate={estimate} kind={kind}")
            assert res["warning"] == (not np.isfinite(want[kind]).all())
            checked += 1
    assert checked >= 6, f"{name}: too few estimates defined on the test data"


def test_every_exported_family_estimator_is_covered():
    from bayesnb.estimators._base import BaseNB

    covered = {type(make()) for make, _ in CASES.values()}
    exported = {
        obj for obj in (getattr(bayesnb, n) for n in bayesnb.__all__ if n != "BayesFactorSelector")
        if isinstance(obj, type) and issubclass(obj, BaseNB)
    }
    assert exported == covered, exported ^ covered
    # Every registered family is among the cases.
    Xs, y = _data(0)
    names = set()
    for make, data in CASES.values():
        est = make().fit(Xs[data], y)
        names |= {b.family.name for b in est.family_.blocks} if est.family_.blocks else {est.family_.name}
    assert names == set(bayesnb.families.names())


def test_the_test_data_exercise_what_a_refit_relearns():
    # Without these, the exactness above would be vacuous for the re-learned parts.
    Xs, y = _data(0)
    polya = bayesnb.PolyaNB().fit(Xs["counts"], y)
    precisions = {
        clone(polya).fit(np.delete(Xs["counts"], i, 0), np.delete(y, i)).precision_[y[i]] for i in range(4)
    }
    assert np.isfinite(list(precisions)).all() and len(precisions) == 4
    assert np.ptp(np.log(list(precisions))) > 1e-3
    cat = bayesnb.CategoricalNB().fit(Xs["codes"], y)
    shorter = bayesnb.CategoricalNB().fit(np.delete(Xs["codes"], 5, 0), np.delete(y, 5))
    assert cat.n_categories_[0] == 5 and shorter.n_categories_[0] == 3
    g = bayesnb.GaussianNB(estimate="mle", var_smoothing=0.05).fit(Xs["real"], y)
    g1 = clone(g).fit(Xs["real"][1:], y[1:])
    assert abs(g.epsilon_ - g1.epsilon_) > 1e-6


def test_polya_precision_relearned_per_row_equals_the_refits():
    Xs, y = _data(1)
    X = Xs["counts"]
    est = bayesnb.PolyaNB().fit(X, y)
    Xv, y_index = est.validate_input(X), np.searchsorted(est.classes_, y)
    got = est._loo_precision(Xv, y_index, np.ones(N))
    want = np.array([clone(est).fit(np.delete(X, i, 0), np.delete(y, i)).precision_[y_index[i]] for i in range(N)])
    np.testing.assert_allclose(got, want, rtol=1e-8)
    # Holding the precision learned from all rows is not the same thing.
    assert np.max(np.abs(np.log(want / est.precision_[y_index]))) > 1e-3
    # The fallback for a row whose Newton search does not converge: the fit's own
    # optimiser on the statistics without the row.
    from bayesnb.core.families import polya

    _, converged = polya.loo_precision(est.stats_, est.alpha_, est.precision_, Xv, y_index, np.ones(N), max_iter=0)
    assert not converged.any()
    for i in (0, 7):
        assert est._refit_precision(Xv[i : i + 1], y_index[i], 1.0) == pytest.approx(want[i], rel=1e-8)


def test_polya_loo_with_large_and_fractional_counts():
    # Counts past the summed range of the derivatives (> 64: digamma differences) and
    # fractional counts, in documents long enough for the precision to be learned.
    rng = np.random.default_rng(6)
    y = np.repeat([0, 1], 8)
    theta = np.array([rng.dirichlet(np.full(5, 0.8) + 2.0 * (np.arange(5) == c)) for c in y])
    X = np.array([rng.multinomial(n, t) for n, t in zip(rng.integers(60, 300, y.size), theta)]).astype(float)
    X[3, 1] += 0.5
    assert X.max() > 64
    est = bayesnb.PolyaNB().fit(X, y)
    want = _refits(est, X, y)
    for kind in KINDS:
        _assert_same(_loo(est, X, y, kind)["loo_i"].values, want[kind], f"large counts {kind}")


def test_polya_loo_is_exact_on_sms_messages(shared_data):
    from sklearn.feature_extraction.text import CountVectorizer

    from bayesnb.io.datasets import read_labelled_text

    texts, labels = read_labelled_text(shared_data / "sms_spam_collection" / "SMSSpamCollection")
    X = CountVectorizer().fit_transform(texts[:40]).tocsr()
    y = np.asarray(labels[:40])
    est = bayesnb.PolyaNB().fit(X, y)
    want = _refits(est, X, y)
    for kind in KINDS:
        _assert_same(_loo(est, X, y, kind)["loo_i"].values, want[kind], f"SMS {kind}")


@pytest.mark.parametrize("estimate", ["predictive", "mle"])
def test_loo_with_missing_values_equals_true_refits(estimate):
    # missing="ignore": per-cell statistics (GaussianNB's "mle" floor then takes the
    # downdate of all the statistics, row by row) and category codes with NaNs.
    Xs, y = _data(5)
    rng = np.random.default_rng(5)
    real = Xs["real"].copy()
    real[rng.random(real.shape) < 0.15] = np.nan
    codes = Xs["codes"].astype(float)
    codes[rng.random(codes.shape) < 0.15] = np.nan
    codes[5, 0] = 4  # still alone at the top of its column, above a gap
    for est, X in (
        (bayesnb.GaussianNB(prior=_nig(), var_smoothing=0.05, missing="ignore", estimate=estimate), real),
        (bayesnb.CategoricalNB(alpha=1.5, missing="ignore", estimate=estimate), codes),
    ):
        est.fit(X, y)
        want = _refits(est, X, y)
        for kind in KINDS:
            _assert_same(_loo(est, X, y, kind)["loo_i"].values, want[kind], f"{type(est).__name__} {estimate} {kind}")


# ----------------------------------------------------------------- approximate cases
APPROXIMATE = {
    "gaussian-default": (lambda: bayesnb.GaussianNB(), "real", "prior=None"),
    "gaussian-evidence": (lambda: bayesnb.GaussianNB(prior="evidence"), "real", "prior='evidence'"),
    "gbc-full-default": (lambda: bayesnb.GaussianBayesClassifier(covariance="full"), "real", "prior=None"),
    "gbc-shared-default": (lambda: bayesnb.GaussianBayesClassifier(covariance="shared"), "real", "prior=None"),
    "exponential-default": (lambda: bayesnb.ExponentialNB(), "durations", "beta=None"),
    "multinomial-evidence": (lambda: bayesnb.MultinomialNB(alpha="evidence"), "counts", "alpha='evidence'"),
    "poisson-evidence": (lambda: bayesnb.PoissonNB(prior="evidence"), "counts", "prior='evidence'"),
    "class-alpha-evidence": (lambda: bayesnb.BernoulliNB(class_alpha="evidence"), "binary", "class_alpha='evidence'"),
    "mixed-default-block": (
        lambda: bayesnb.MixedNB([("g", bayesnb.GaussianNB(), [0, 1, 2, 3]), ("p", bayesnb.PoissonNB(), [4, 5, 6, 7])]),
        "mixed", "block 'g': prior=None",
    ),
}


@pytest.mark.parametrize("name", list(APPROXIMATE))
def test_priors_learned_from_the_rows_are_labelled_approximate(name):
    make, data, cause = APPROXIMATE[name]
    # Classes of unequal sizes (class_alpha="evidence" is at its upper bound, like every
    # refit's, where they are more even than multinomial sampling makes them).
    Xs, y = _data(2, sizes=(3, 5, 16) if name == "class-alpha-evidence" else (6, 8, 10))
    X = Xs[data][:, :8] if data == "mixed" else Xs[data]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bayesnb.EvidenceWarning)
        est = make().fit(X, y)
        want = _refits(est, X, y)
    for kind in KINDS:
        with pytest.warns(bayesnb.ApproximateLOOWarning, match=cause.replace("(", r"\(")) as record:
            res = bayesnb.loo(est, X, y, kind=kind)
        assert len([r for r in record if r.category is bayesnb.ApproximateLOOWarning]) == 1
        assert res["approximate"] and res["warning"] and cause in res["approximate_reason"]
        assert any(cause in r for r in est.loo_approximations(kind))
        # The label is warranted: the closed form is not the refits.
        assert np.max(np.abs(res["loo_i"].values - want[kind])) > 1e-6, name
    # The maximum-likelihood estimate reads no prior: exact and unlabelled.
    mle = clone(est).set_params(estimate="mle")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bayesnb.EvidenceWarning)
        mle.fit(X, y)
        want = _refits(mle, X, y)
    for kind in KINDS:
        res = _loo(mle, X, y, kind)
        assert not res["approximate"]
        _assert_same(res["loo_i"].values, want[kind], f"{name} mle {kind}")


def test_temperature_chosen_by_loo_labels_the_conditional_only():
    Xs, y = _data(3)
    X = Xs["counts"]
    est = bayesnb.MultinomialNB(temperature="loo").fit(X, y)
    with pytest.warns(bayesnb.ApproximateLOOWarning, match="temperature='loo'"):
        cond = bayesnb.loo(est, X, y)
    assert cond["approximate"] and cond["warning"]
    joint = _loo(est, X, y, "joint")  # the model as written: untempered, exact
    assert not joint["approximate"]
    _assert_same(joint["loo_i"].values, _refits(bayesnb.MultinomialNB(), X, y)["joint"], "joint")


def test_az_compare_shows_the_approximate_model_in_its_warning_column():
    import arviz as az

    Xs, y = _data(4)
    X = Xs["real"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bayesnb.ApproximateLOOWarning)
        models = {
            "explicit": bayesnb.loo(bayesnb.GaussianNB(prior=_nig()).fit(X, y), X, y),
            "default": bayesnb.loo(bayesnb.GaussianNB().fit(X, y), X, y),
        }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = az.compare(models)
    assert bool(table.loc["default", "warning"]) and not bool(table.loc["explicit", "warning"])


def test_elpd_data_of_refits_from_elsewhere_is_exact_unless_told():
    from bayesnb.analysis.elpd import elpd_data

    res = elpd_data([-0.5, -1.0])
    assert not res["approximate"] and res["approximate_reason"] == "" and not res["warning"]
    res = elpd_data([-0.5, -1.0], approximate=["a", "b"])
    assert res["approximate"] and res["warning"] and res["approximate_reason"] == "a; b"


def test_loo_approximations_checks_its_kind():
    Xs, y = _data(0)
    est = bayesnb.MultinomialNB().fit(Xs["counts"], y)
    assert est.loo_approximations() == est.loo_approximations("joint") == ()
    with pytest.raises(ValueError, match="kind"):
        est.loo_approximations("marginal")


def test_joint_and_conditional_agree_with_each_other():
    # The conditional is the joint normalised over the classes of the same downdated
    # model (a check of the test's own oracle on one case).
    Xs, y = _data(0)
    est = bayesnb.PolyaNB().fit(Xs["counts"], y)
    terms = est.loo_terms(Xs["counts"], y)
    joint = terms.class_log + terms.feature_log
    rows = np.arange(N)
    np.testing.assert_allclose(
        _loo(est, Xs["counts"], y, "conditional")["loo_i"].values,
        joint[rows, terms.y_index] - logsumexp(joint, axis=1), rtol=1e-12,
    )
