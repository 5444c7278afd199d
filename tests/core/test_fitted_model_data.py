"""What a fitted-model pytree computes from its own data (issue 41, item 7).

The log evidence, the log class proportions of an estimate and the list of the
leave-one-out's approximations are read off the pytree's data
(:func:`bayesnb.core._fitted.log_evidence`, :func:`~bayesnb.core._fitted.class_log_prior`,
:func:`~bayesnb.core._fitted.loo_approximations`), not asked of an estimator. They are
checked here against formulas written out by hand (the Dirichlet-multinomial evidence
with ``scipy.special.gammaln``, the point estimates of the class proportions), against
the chain rule of the exact predictives and refits on all the rows for a model
conditioned on new statistics, and against the estimator's own methods for every
registered family (``class_log_prior_`` of each estimate, which the estimators compute
with their own refusals, and ``loo_approximations``). The estimator's ``log_evidence()``
is this pytree's (one computation).
"""

from __future__ import annotations

import gc
import weakref

import jax
import numpy as np
import pytest
from _registered import family_estimators, rows_in_support
from scipy.special import gammaln
from sklearn.base import clone

from bayesnb import GaussianNB, MixedNB, MultinomialNB
from bayesnb.analysis.calibration import fitted_proba
from bayesnb.analysis.uncertainty import predict_proba_draws
from bayesnb.core import _fitted
from bayesnb.core import class_prior as _class_prior
from bayesnb.core.priors import Dirichlet
from bayesnb.exceptions import ZeroLikelihoodWarning

KINDS = ("mle", "map", "mean", "predictive")
CASES = [(name, support, est) for name, support, est in family_estimators()] + [("mixed", "mixed", MixedNB())]


def _fit(case, n=24, seed=0):
    name, support, est = case
    X, y = rows_in_support(support, np.random.default_rng(seed), n)
    return clone(est).fit(X, y), X, y


def _take(X, idx):
    return X.iloc[idx] if hasattr(X, "iloc") else X[idx]


def _unbalanced(support, seed=0):
    """Rows in ``support`` with 12 labels "a" and 5 labels "b", so that the estimates of the class proportions differ."""
    X, y = rows_in_support(support, np.random.default_rng(seed), 24)
    idx = np.r_[0:12, 12:17]
    return _take(X, idx), y[idx]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_the_pytrees_class_proportions_and_loo_approximations_are_the_estimators(case):
    X, y = _unbalanced(case[1])
    est = clone(case[2]).set_params(class_alpha=2.5).fit(X, y)
    fitted = est.fitted_model()
    by_kind = {}
    for kind in KINDS:
        by_kind[kind] = np.asarray(clone(est).set_params(estimate=kind).fit(X, y).class_log_prior_)
    # The four estimates differ here (12 and 5 rows, class_alpha 2.5): "predictive" is
    # the mean (N_c + 2.5) / (N + 5), "map" (N_c + 1.5) / (N + 3), "mle" N_c / N.
    np.testing.assert_allclose(by_kind["predictive"], np.log([14.5 / 22, 7.5 / 22]), rtol=1e-13)
    np.testing.assert_allclose(by_kind["map"], np.log([13.5 / 20, 6.5 / 20]), rtol=1e-13)
    np.testing.assert_allclose(by_kind["mle"], np.log([12 / 17, 5 / 17]), rtol=1e-13)
    reasons = {kind: est.loo_approximations(kind) for kind in ("conditional", "joint")}
    gone = weakref.ref(est)
    del est
    gc.collect()
    assert gone() is None
    for kind in KINDS:
        np.testing.assert_allclose(_fitted.class_log_prior(fitted, kind), by_kind[kind], rtol=1e-12)
    # Without a kind: the estimator's own estimate (the default, "predictive").
    assert fitted.estimate == "predictive"
    np.testing.assert_allclose(_fitted.class_log_prior(fitted), by_kind["predictive"], rtol=1e-12)
    for kind, value in reasons.items():
        assert _fitted.loo_approximations(fitted, kind) == value


def _row(X, i):
    return X.iloc[[i]] if hasattr(X, "iloc") else X[[i]]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_the_pytrees_evidence_is_the_chain_of_its_exact_predictives(case):
    r"""The chain rule, :math:`\log p(D_{<n}) - \log p(D_{<k}) = \sum_{k \le i < n} \log p(x_i, y_i \mid D_{<i})`:
    the evidence computed from the pytree (conditioned on the first rows) against the
    estimator's exact predictive joint (``estimate="predictive"``, the family's
    ``log_predictive``), another computation. Held at the pytree's prior."""
    est, X, y = _fit(case, n=12, seed=2)
    fitted = est.fitted_model()
    del est
    y_index = np.searchsorted(fitted.classes, y)
    Xv = fitted.validate(X)

    def first(k):
        return fitted.condition(fitted.validated_stats(_fitted.take_rows(fitted, Xv, 0, k), y_index[:k]))

    chain = _fitted.log_evidence(first(4))
    for i in range(4, 12):
        chain += float(first(i).joint_log_proba(_row(X, i))[0, y_index[i]])
    assert chain == pytest.approx(_fitted.log_evidence(first(12)), rel=1e-9)


#: Cases whose prior a refit on more rows keeps: not learned from the rows, or given as
#: ``prior=`` (the half fit's). PolyaNB learns its precision and mean from the rows and
#: MixedNB its blocks' default priors, with no parameter to hold them: the chain rule
#: above covers them.
REFIT_CASES = [c for c in CASES if c[0] not in ("polya", "mixed")]


@pytest.mark.parametrize("case", REFIT_CASES, ids=[c[0] for c in REFIT_CASES])
def test_a_conditioned_pytrees_evidence_is_that_of_a_fit_on_those_rows(case):
    """``condition`` on the statistics of all the rows, from a model fitted on half of them:
    the evidence computed from the conditioned pytree is that of a fit on all the rows
    under the same prior (an independent path through ``fit``)."""
    est, X, y = _fit(case, n=32, seed=1)
    half_rows = np.r_[0:8, 16:24]  # both classes
    half = clone(case[2]).fit(_take(X, half_rows), y[half_rows])
    # A default prior scaled to the data is the half fit's, given to the refit.
    full = clone(case[2]).set_params(prior=half.prior_) if "prior" in case[2].get_params() else clone(case[2])
    full.fit(X, y)
    for a, b in zip(jax.tree.leaves(half.prior_), jax.tree.leaves(full.prior_), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    fitted = half.fitted_model()
    y_index = np.searchsorted(fitted.classes, y)
    conditioned = fitted.condition(fitted.validated_stats(fitted.validate(X), y_index))
    assert _fitted.log_evidence(conditioned) == pytest.approx(full.log_evidence(), rel=1e-10)
    assert _fitted.log_evidence(conditioned) != pytest.approx(_fitted.log_evidence(fitted), rel=1e-3)


def _log_beta(a):
    return np.sum(gammaln(a)) - gammaln(np.sum(a))


def test_the_label_evidence_against_the_dirichlet_multinomial_written_out():
    beta = np.array([0.5, 1.0, 2.5])
    counts = np.array([3.0, 0.0, 7.5])
    expected = _log_beta(beta + counts) - _log_beta(beta)
    assert _class_prior.labels_log_evidence(Dirichlet(beta), None, counts) == pytest.approx(expected, rel=1e-13)
    # Fixed proportions: sum_c N_c log pi_c; a class with no rows adds nothing, also where
    # its proportion is 0 (0 * log 0 is no NaN here).
    pi = np.array([0.25, 0.0, 0.75])
    assert _class_prior.labels_log_evidence(None, pi, counts) == pytest.approx(
        3.0 * np.log(0.25) + 7.5 * np.log(0.75), rel=1e-13
    )
    # A class with rows and proportion 0: the labels are impossible.
    assert _class_prior.labels_log_evidence(None, pi, np.array([1.0, 2.0, 0.0])) == -np.inf


def test_the_class_proportions_of_each_estimate_against_their_formulas():
    beta = np.array([1.5, 2.0, 3.0])
    counts = np.array([4.0, 0.0, 6.0])
    n, c = counts.sum(), counts.size
    expected = {
        "mle": np.log(counts / n, where=counts > 0, out=np.full(c, -np.inf)),
        "map": np.log((counts + beta - 1.0) / (n + beta.sum() - c)),
        "mean": np.log((counts + beta) / (n + beta.sum())),
        "predictive": np.log((counts + beta) / (n + beta.sum())),
    }
    for kind, value in expected.items():
        np.testing.assert_allclose(_class_prior.estimate_log(Dirichlet(beta), None, counts, kind), value, rtol=1e-13)
    fixed = np.array([0.2, 0.0, 0.8])
    for kind in expected:
        got = _class_prior.estimate_log(None, fixed, counts, kind)
        np.testing.assert_allclose(got[[0, 2]], np.log(fixed[[0, 2]]), rtol=1e-13)
        assert got[1] == -np.inf


def test_fixed_class_proportions_reach_the_pytree():
    X, y = rows_in_support("counts", np.random.default_rng(4), 20)
    y = np.where(np.arange(20) < 5, "a", "b")  # 5 against 15 rows
    est = MultinomialNB(class_prior=[0.3, 0.7]).fit(X, y)
    fitted = est.fitted_model()
    assert fitted.class_posterior is None
    for kind in KINDS:
        np.testing.assert_allclose(_fitted.class_log_prior(fitted, kind), np.log([0.3, 0.7]), rtol=1e-13)
    labels = 5 * np.log(0.3) + 15 * np.log(0.7)
    features = float(fitted.family.log_evidence(fitted.prior, fitted.stats))
    assert _fitted.log_evidence(fitted) == pytest.approx(labels + features, rel=1e-13)


def test_an_estimate_set_after_fit_is_the_pytrees_and_a_bad_one_is_refused_where_it_is_used():
    X, y = _unbalanced("counts", seed=5)
    est = MultinomialNB().fit(X, y)
    np.testing.assert_allclose(_fitted.class_log_prior(est.fitted_model()), np.log([13 / 19, 6 / 19]), rtol=1e-13)
    est.set_params(estimate="mle")
    np.testing.assert_allclose(_fitted.class_log_prior(est.fitted_model()), np.log([12 / 17, 5 / 17]), rtol=1e-13)
    est.set_params(estimate="posterior mode")
    fitted = est.fitted_model()  # the draws do not read the estimate
    assert predict_proba_draws(fitted, X, 3, random_state=0).shape == (3, 17, 2)
    with pytest.raises(ValueError, match="unknown estimate 'posterior mode'"):
        _fitted.class_log_prior(fitted)
    with pytest.raises(ValueError, match="unknown estimate 'posterior mode'"):
        est.class_log_prior_


def test_the_loo_approximations_are_data_and_an_unavailable_list_raises_where_it_is_read():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(30, 2))
    y = np.repeat([0, 1], 15)
    est = GaussianNB(temperature="loo").fit(X, y)
    fitted = est.fitted_model()
    # Data: (kind, reasons) pairs, immutable and hashable like the rest of the static part.
    assert dict(fitted.loo_approximations).keys() == {"conditional", "joint"}
    hash(fitted.loo_approximations)
    conditional = _fitted.loo_approximations(fitted, "conditional")
    assert conditional[0].startswith("prior=None") and conditional[-1].startswith("temperature='loo'")
    assert _fitted.loo_approximations(fitted, "joint") == conditional[:-1]
    for kind in ("both", ["joint"]):
        with pytest.raises(ValueError, match="kind must be 'conditional' or 'joint', got"):
            _fitted.loo_approximations(fitted, kind)
    # temperature="loo" set after a fit without it: temperature_ raises, and so does
    # the list (it names the chosen temperature); the pytree is built, and what does
    # not read them still works.
    est = GaussianNB().fit(X, y).set_params(temperature="loo")
    with pytest.raises(ValueError) as own:
        est.loo_approximations("conditional")
    fitted = est.fitted_model()
    with pytest.raises(ValueError) as from_pytree:
        _fitted.loo_approximations(fitted, "conditional")
    assert str(from_pytree.value) == str(own.value) and "set after fit" in str(own.value)
    log_class, params = _fitted.draws(fitted, 3, 0)
    assert np.asarray(log_class).shape == (3, 2) and all(np.all(np.isfinite(p)) for p in jax.tree.leaves(params))


def _outcome(call):
    try:
        return call()
    except Exception as err:  # noqa: BLE001 - the same refusal either way
        return (type(err).__name__, str(err))


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_the_pytrees_class_probabilities_at_every_estimate_are_the_estimators(case):
    """``fitted_proba(fitted, X, kind)`` is ``predict_proba`` with ``estimate=kind`` (or its refusal)."""
    X, y = _unbalanced(case[1], seed=7)
    est = clone(case[2]).fit(X, y)
    X_new, _ = rows_in_support(case[1], np.random.default_rng(8), 6)
    expected = {kind: _outcome(lambda k=kind: clone(est).set_params(estimate=k).fit(X, y).predict_proba(X_new))
                for kind in KINDS}
    fitted = est.fitted_model()
    del est
    gc.collect()
    for kind in KINDS:
        got = _outcome(lambda k=kind: fitted_proba(fitted, X_new, k))
        if isinstance(expected[kind], tuple):
            assert got == expected[kind]
        else:
            np.testing.assert_allclose(got, expected[kind], rtol=1e-12, atol=1e-300)
            np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=1e-12)
    assert not isinstance(expected["predictive"], tuple)


def test_a_calibration_map_applies_at_its_estimate_and_is_refused_at_another():
    # One signal in six near-copies: naive Bayes counts it six times and is far too sure,
    # so the leave-one-out choice is a map that is not the identity.
    rng = np.random.default_rng(9)
    y = np.repeat([0, 1], 60)
    z = rng.normal(np.where(y == 1, 0.8, 0.0), 1.0)
    X = np.column_stack([z + 0.05 * rng.normal(size=120) for _ in range(6)])
    est = GaussianNB(calibrate="loo").fit(X, y)
    assert est.calibration_.family != "identity"
    plain = GaussianNB().fit(X, y).predict_proba(X[:5])
    fitted = est.fitted_model()
    got = fitted_proba(fitted, X[:5])
    np.testing.assert_allclose(got, est.predict_proba(X[:5]), rtol=1e-12)
    assert np.abs(got - plain).max() > 1e-3  # the map changed them
    with pytest.raises(ValueError) as own:
        clone(est).fit(X, y).set_params(estimate="mean").predict_proba(X[:5])
    with pytest.raises(ValueError) as from_pytree:
        fitted_proba(fitted, X[:5], "mean")
    assert str(from_pytree.value) == str(own.value) and "estimate='predictive'" in str(own.value)


def test_rows_impossible_under_every_class_warn_where_the_pytree_is_asked():
    X = np.array([[3, 0, 0], [2, 1, 0], [0, 3, 0], [1, 2, 0]])
    y = [0, 0, 1, 1]
    fitted = MultinomialNB(estimate="mle").fit(X, y).fitted_model()
    with pytest.warns(ZeroLikelihoodWarning, match=r"1 row\(s\) have zero likelihood .*estimate='mle'") as caught:
        proba = fitted_proba(fitted, np.array([[0, 0, 2], [1, 1, 0]]))
    assert caught[0].filename == __file__  # attributed to the caller
    np.testing.assert_allclose(proba[0], [0.5, 0.5], rtol=1e-13)  # the class proportions
