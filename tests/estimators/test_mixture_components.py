"""SemiSupervisedNB(n_components=...): several conjugate mixture components per class.

Oracles: today's one-component fit (the mixture path forced with one component per
class must equal it), the plain estimator (supervised, one component), an independent
NumPy EM for the multinomial written here from the model's equations (same initial
responsibilities, same parameters to 1e-8), and the monotonicity of EM's log posterior
and VB's ELBO, which planted errors (responsibilities not normalised, a component's
statistics dropped) break.
"""

from __future__ import annotations

import warnings

import jax
import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.exceptions import ConvergenceWarning

from bayesnb import GaussianNB, MultinomialNB, SemiSupervisedNB
from bayesnb.estimators import semi_supervised as ss


def _multinomial(seed, n=80, d=6, length=25):
    """Two classes, each a union of two sub-topics (4 word distributions)."""
    rng = np.random.default_rng(seed)
    sub = rng.integers(0, 4, n)
    sub[:4] = np.arange(4)
    centres = rng.dirichlet(np.full(d, 0.4), 4)
    X = np.vstack([rng.multinomial(length, centres[s]) for s in sub])
    return X, sub


def _gaussian(seed, n=80, d=2):
    """Two classes, each two well separated blobs."""
    rng = np.random.default_rng(seed)
    sub = rng.integers(0, 4, n)
    sub[:4] = np.arange(4)
    centres = np.array([[0.0, 0.0], [6.0, 6.0], [0.0, 6.0], [6.0, 0.0]])
    return rng.normal(centres[sub], 1.0), sub


def _hide(y, seed, n_hidden=48):
    # A fixed number of hidden rows: every seed has the same array shapes, so JAX compiles
    # the family's functions once for all of them (the tests stay fast).
    rng = np.random.default_rng(seed + 100)
    out = y.copy()
    out[4 + rng.permutation(y.size - 4)[:n_hidden]] = -1
    return out


CASES = {
    "multinomial": (_multinomial, MultinomialNB, {}),
    "gaussian": (_gaussian, GaussianNB, {"em": {"smoothing": "none"}}),
}


def _trace(clf):
    return clf.log_posterior_ if clf.method == "em" else clf.elbo_


def _monotone(trace):
    return bool(np.all(np.diff(trace) >= -1e-9 * np.abs(trace[1:])))


def _fit(name, method, seed, sub_topics_as_classes=False, **kwargs):
    """A fit on two classes, each two sub-topics (or, for one component per class, the four sub-topics as classes:
    the same array shapes as two components for each of two classes, so JAX compiles once)."""
    make, cls, options = CASES[name]
    X, sub = make(seed)
    y = sub if sub_topics_as_classes else sub // 2
    clf = SemiSupervisedNB(cls(), method=method, unlabelled_weight=kwargs.pop("lam", 1.0), max_iter=30,
                           **options.get(method, {}), **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return clf.fit(X, _hide(y, seed)), X, y


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("method", ["em", "vb"])
def test_the_objective_never_decreases_with_several_components(name, method):
    for seed, k in ((0, 2), (1, 2), (2, [1, 3])):
        clf, X, _ = _fit(name, method, seed, n_components=k, lam=0.5 if seed == 2 else 1.0)
        trace = _trace(clf)
        assert trace.size >= 3 and np.all(np.isfinite(trace))
        assert _monotone(trace), (seed, np.diff(trace).min())
        # Responsibilities: a labelled row's over its own class's components only.
        R = clf.component_responsibilities_
        np.testing.assert_allclose(R.sum(axis=1), 1.0, rtol=1e-12)
        np.testing.assert_allclose(clf.label_distributions_.sum(axis=1), 1.0, rtol=1e-12)
        assert clf.component_weights_.shape == (int(np.sum(clf.n_components_)),)
        np.testing.assert_allclose(clf.predict_proba(X).sum(axis=1), 1.0, rtol=1e-12)


@pytest.mark.parametrize(
    "name", ["BernoulliNB", "CategoricalNB", "PoissonNB", "ExponentialNB", "gaussian+bernoulli+poisson"]
)
def test_every_family_through_the_protocol(name):
    # The same machinery for the other families and a MixedNB product (EM; the VB runs of
    # these families were measured monotone too, but pay a JAX compilation each).
    import test_semi_supervised as ts

    if "+" in name:
        X, y = ts._mixed_data(0)
        est, options = ts._mixed(name), ts.MIXES[name][1]
    else:
        cls = getattr(ts, name)
        X, y = ts._data(cls, 0)
        est, options = cls(), {}
    clf = SemiSupervisedNB(est, unlabelled_weight=1.0, n_components=2, max_iter=30, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, ts._hide(y, 0))
    assert clf.n_iter_ >= 3 and _monotone(clf.log_posterior_)
    assert clf.estimator_.classes_.size == 6 and clf.n_components_.tolist() == [2, 2, 2]
    np.testing.assert_allclose(clf.predict_proba(X).sum(axis=1), 1.0, rtol=1e-12)


def _leaves(tree):
    return [np.asarray(a, dtype=np.float64) for a in jax.tree.leaves(tree)]


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("method", ["em", "vb"])
def test_one_component_through_the_mixture_path_is_todays_fit(name, method, monkeypatch):
    today, X, _ = _fit(name, method, 0, sub_topics_as_classes=True)
    monkeypatch.setattr(SemiSupervisedNB, "_uses_components", lambda self, counts: True)
    forced, _, _ = _fit(name, method, 0, sub_topics_as_classes=True)
    assert forced._has_components() and not today._has_components()
    assert forced.n_iter_ == today.n_iter_
    np.testing.assert_allclose(_trace(forced), _trace(today), rtol=1e-10)
    np.testing.assert_allclose(forced.predict_proba(X), today.predict_proba(X), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(forced.label_distributions_, today.label_distributions_, rtol=1e-10, atol=1e-10)
    for a, b in zip(_leaves(forced.posterior_), _leaves(today.posterior_)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("method", ["em", "vb"])
def test_supervised_one_component_is_the_plain_estimator(name, method, monkeypatch):
    make, cls, options = CASES[name]
    X, y = make(3)  # four classes
    monkeypatch.setattr(SemiSupervisedNB, "_uses_components", lambda self, counts: True)
    clf = SemiSupervisedNB(cls(), method=method, **options.get(method, {})).fit(X, y)  # no row has y == -1
    estimate = {"em": "map" if options.get(method) else "mean", "vb": "predictive"}[method]
    ref = cls(estimate=estimate).fit(X, y)
    assert clf._has_components() and clf.n_iter_ == 1
    np.testing.assert_allclose(clf.predict_proba(X), ref.predict_proba(X), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(clf.predict_joint_log_proba(X), ref.predict_joint_log_proba(X), rtol=1e-10)
    if method == "vb":
        np.testing.assert_allclose(clf.elbo_[-1], ref.log_evidence(), rtol=1e-10)


def _numpy_em(X, y_lab, lab, unl, lam, R0, comp_class, n_steps, alpha=1.0, beta=1.0):
    """MAP-EM with Laplace smoothing for a multinomial mixture, several components per class."""
    XL, XU = X[lab], X[unl]
    allowed = comp_class[None, :] == y_lab[:, None]
    RL, RU = R0, np.zeros((XU.shape[0], comp_class.size))
    for _ in range(n_steps + 1):
        T = RL.T @ XL + lam * RU.T @ XU  # expected word counts per component
        N = RL.sum(0) + lam * RU.sum(0)
        log_theta = np.log(alpha + T) - np.log((alpha + T).sum(1, keepdims=True))
        log_pi = np.log(beta + N) - np.log((beta + N).sum())
        if _ == n_steps:
            return log_theta, log_pi
        jl = np.where(allowed, XL @ log_theta.T + log_pi, -np.inf)
        ju = XU @ log_theta.T + log_pi
        RL = np.exp(jl - logsumexp(jl, 1, keepdims=True))
        RU = np.exp(ju - logsumexp(ju, 1, keepdims=True))


def _matches_numpy_em(clf, X, y_hidden):
    lab, unl = np.flatnonzero(y_hidden != -1), np.flatnonzero(y_hidden == -1)
    log_theta, log_pi = _numpy_em(
        X.astype(float), y_hidden[lab], lab, unl, clf.unlabelled_weight_, clf.initial_responsibilities_,
        clf.component_class_, clf.n_iter_ - 1,
    )
    est = clf.estimator_
    return np.allclose(est.feature_log_prob_, log_theta, rtol=1e-8, atol=1e-8) and np.allclose(
        est.class_log_prior_, log_pi, rtol=1e-8, atol=1e-8
    )


def test_em_equals_an_independent_numpy_em_from_the_same_start():
    for seed, k in ((0, 2), (1, [3, 1])):
        clf, X, y = _fit("multinomial", "em", seed, n_components=k, lam=0.7, tol=0.0)
        assert clf.n_iter_ >= 4
        assert _matches_numpy_em(clf, X, _hide(y, seed))


def _planted(monkeypatch, which):
    original = ss.SemiSupervisedNB._soft_stats

    def soft_stats(self, est, XU, R, wU):
        if which == "not normalised":
            R = R * (1.0 + np.arange(R.shape[1]))  # column k scaled by k + 1: rows no longer sum to 1
        else:  # "component dropped": the statistics of component 0 are left out
            R = R.copy()
            R[:, 0] = 0.0
        return original(self, est, XU, R, wU)

    monkeypatch.setattr(ss.SemiSupervisedNB, "_soft_stats", soft_stats)


@pytest.mark.parametrize("which", ["not normalised", "component dropped"])
def test_planted_errors_fail_the_checks(which, monkeypatch):
    # The correct fit passes both checks ...
    clf, X, y = _fit("multinomial", "em", 0, n_components=2, tol=0.0)
    assert _monotone(clf.log_posterior_) and _matches_numpy_em(clf, X, _hide(y, 0))
    vb, _, _ = _fit("multinomial", "vb", 0, n_components=2, tol=0.0)
    assert _monotone(vb.elbo_)
    # ... the planted error fails them: EM's parameters leave the oracle's, and the
    # monotonicity checks catch it (measured: a not-normalised E-step makes both
    # objectives decrease; dropping a component's statistics makes the ELBO decrease,
    # while EM's objective may still happen to rise).
    _planted(monkeypatch, which)
    bad, _, _ = _fit("multinomial", "em", 0, n_components=2, tol=0.0)
    assert not _matches_numpy_em(bad, X, _hide(y, 0))
    bad_vb, _, _ = _fit("multinomial", "vb", 0, n_components=2, tol=0.0)
    assert not (_monotone(bad.log_posterior_) and _monotone(bad_vb.elbo_))
    if which == "not normalised":
        assert not _monotone(bad.log_posterior_)


def test_the_initial_split_is_seeded_and_documented():
    a, X, _ = _fit("multinomial", "em", 0, n_components=2, random_state=5)
    b, _, _ = _fit("multinomial", "em", 0, n_components=2, random_state=5)
    c, _, _ = _fit("multinomial", "em", 0, n_components=2, random_state=6)
    np.testing.assert_array_equal(a.initial_responsibilities_, b.initial_responsibilities_)
    assert not np.array_equal(a.initial_responsibilities_, c.initial_responsibilities_)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    # Each class's labelled rows split evenly (sizes differ by at most one).
    sizes = a.initial_responsibilities_.sum(axis=0)
    for cls in range(2):
        part = sizes[a.component_class_ == cls]
        assert part.max() - part.min() <= 1


def test_bad_n_components_get_clear_errors():
    X, sub = _multinomial(0)
    y = sub // 2
    with pytest.raises(ValueError, match="int >= 1"):
        SemiSupervisedNB(n_components=0).fit(X, y)
    with pytest.raises(ValueError, match="2 classes"):
        SemiSupervisedNB(n_components=[2, 2, 2]).fit(X, y)
    with pytest.raises(ValueError, match="not a class"):
        SemiSupervisedNB(n_components={7: 2}).fit(X, y)
    with pytest.raises(ValueError, match="leave-one-out"):
        SemiSupervisedNB(MultinomialNB(temperature="loo"), n_components=2).fit(X, y)
    clf = SemiSupervisedNB(n_components={1: 3}, unlabelled_weight=0.0).fit(X, y)
    assert clf.n_components_.tolist() == [1, 3]


def test_draws_and_intervals_sum_the_components_of_each_class():
    clf, X, _ = _fit("multinomial", "vb", 0, n_components=2)
    draws = clf.predict_proba_draws(X[:5], n_draws=40, random_state=1)
    per_component = clf.estimator_.predict_proba_draws(X[:5], n_draws=40, random_state=1)
    assert draws.shape == (40, 5, 2)
    np.testing.assert_allclose(draws[..., 0], per_component[..., :2].sum(-1), rtol=1e-12)
    np.testing.assert_allclose(draws[..., 1], per_component[..., 2:].sum(-1), rtol=1e-12)
    np.testing.assert_allclose(draws.sum(-1), 1.0, rtol=1e-12)
    lower, upper, median = clf.predict_proba_interval(X[:5], 0.8, n_draws=40, random_state=1, return_median=True)
    np.testing.assert_allclose(lower, np.quantile(draws, 0.1, axis=0), rtol=1e-12)
    assert np.all(lower <= median) and np.all(median <= upper)


def test_auto_components_equal_a_brute_force_search_of_the_same_criterion():
    from sklearn.model_selection import StratifiedKFold

    clf, X, y = _fit("multinomial", "em", 0, n_components="auto", component_grid=(3, 1, 2))
    curve = clf.components_curve_
    assert curve["grid"].tolist() == [1, 2, 3] and curve["n_splits"] == 3
    hidden = _hide(y, 0)
    lab = np.flatnonzero(hidden != -1)
    X_lab, y_lab = X[lab], hidden[lab]
    # Brute force: every fold refitted with k components per class on its labelled rows,
    # each held-out row's class-conditional log likelihood summed from the components'
    # joints and weights.
    folds = list(StratifiedKFold(3, shuffle=True, random_state=0).split(np.zeros(lab.size), y_lab))
    brute = np.zeros((2, 3))
    for g, k in enumerate((1, 2, 3)):
        for train, test in folds:
            sub = SemiSupervisedNB(MultinomialNB(), n_components=k, unlabelled_weight=0.0, max_iter=30)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                sub.fit(X_lab[train], y_lab[train])
            joint = sub.estimator_.predict_joint_log_proba(X_lab[test])  # per component
            log_w = sub.estimator_.class_log_prior_
            for c in (0, 1):
                mine, rows = sub.component_class_ == c, y_lab[test] == c
                brute[c, g] += (logsumexp(joint[rows][:, mine], axis=1) - logsumexp(log_w[mine])).sum()
    brute /= np.bincount(y_lab)[:, None]
    np.testing.assert_allclose(curve["mean"], brute, rtol=1e-10)
    assert clf.n_components_.tolist() == np.argmax(brute, axis=1).__add__(1).tolist()
    assert clf.n_components_.tolist() == [2, 2]  # the truth: two sub-topics per class


def test_the_cli_semi_section_fits_the_components_it_is_given(capsys):
    # The demo's semi-supervised section (bayesnb demo --data FILE --n-components K) on a
    # small problem, against the library called directly.
    import argparse

    import scipy.sparse as sp

    from bayesnb.cli import semi
    from bayesnb.cli.command import main

    assert semi.parse_n_components("3") == 3 and semi.parse_n_components("auto") == "auto"
    for bad in ("0", "two", "-1"):
        with pytest.raises(argparse.ArgumentTypeError, match="int >= 1 or 'auto'"):
            semi.parse_n_components(bad)
    assert main(["demo", "--n-components", "0"]) == 2
    assert "argument --n-components: expected an int >= 1 or 'auto', got '0'" in capsys.readouterr().err
    X, sub = _multinomial(0)
    docs = np.array([" ".join(f"w{j}" for j in np.repeat(np.arange(X.shape[1]), row)) for row in X], dtype=object)
    labels = np.array(["a", "b"], dtype=object)[sub // 2]
    problem = semi.SemiProblem(docs[:30], labels[:30], docs[30:50], labels[30:50], docs[50:], "an empty label field")
    problem.n_components = 2
    rec = semi._fit_score("EM", problem.X_train, problem.y_train, problem, 1.0)
    assert rec["components"] == {"a": 2, "b": 2}
    assert semi.components_sentence(rec) == "mixture components per class, EM: a 2, b 2"
    X_all = sp.vstack([problem.X_train, problem.X_unlabelled]).tocsr()
    y_all = np.concatenate([problem.y_train, np.full(problem.n_unlabelled, -1, dtype=object)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref = SemiSupervisedNB(  # at the weight the section's "auto" chose (its curve: the weight's own tests)
            MultinomialNB(alpha=1.0), n_components={"a": 2, "b": 2}, unlabelled_weight=rec["weight"]
        ).fit(X_all, y_all)
    proba = ref.predict_proba(problem.X_test)
    assert rec["accuracy"] == pytest.approx(np.mean(ref.classes_[proba.argmax(1)] == problem.y_test), abs=1e-12)
    assert rec["log_loss"] == pytest.approx(-np.mean(np.log(proba[np.arange(20), (problem.y_test == "b").astype(int)])),
                                            rel=1e-10)


def test_the_unlabelled_weight_is_a_sample_weight_on_the_unlabelled_rows():
    X, sub = _multinomial(4)
    hidden = _hide(sub // 2, 4)
    kw = dict(n_components=2, max_iter=30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = SemiSupervisedNB(MultinomialNB(), unlabelled_weight=0.4, **kw).fit(X, hidden)
        b = SemiSupervisedNB(MultinomialNB(), unlabelled_weight=1.0, **kw).fit(
            X, hidden, sample_weight=np.where(hidden == -1, 0.4, 1.0)
        )
    np.testing.assert_allclose(a.log_posterior_, b.log_posterior_, rtol=1e-10)
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(a.component_responsibilities_, b.component_responsibilities_, rtol=1e-10, atol=1e-12)
