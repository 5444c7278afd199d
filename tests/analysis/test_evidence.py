"""Bayes factors, per-feature relevance, the feature selector and the evidence curve.

Oracles: the chain rule :math:`\\log p(D) = \\sum_i \\log p(x_i, y_i \\mid D_{<i})` for the
models compared (the helper of ``test_math_oracles``, with the first row's probability
by hand); per-feature evidences of single-column estimators for the relevance Bayes
factor; antisymmetry and row-order invariance; known relevant features on synthetic data.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose
from scipy.special import gammaln
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from test_math_oracles import _first_term, chain_rule_log_evidence

from bayesnb import BernoulliNB, CategoricalNB, GaussianNB, MixedNB, MultinomialNB, PoissonNB
from bayesnb.analysis.evidence import (
    BayesFactorSelector,
    evidence_curve,
    log_bayes_factor,
    log_marginal_likelihood,
    plot_evidence_curve,
    relevance_log_bayes_factor,
)
from bayesnb.core.priors import Gamma, NormalInverseGamma
from bayesnb.exceptions import EvidenceWarning

C = 3
CLASSES = np.arange(C)


def _binary_docs(seed=0, n=60, F=10):
    """0/1 documents from a Bernoulli model; every class present in the first rows."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, C, n)
    y[:C] = CLASSES
    p = rng.beta(0.7, 2.0, size=(C, F))
    return (rng.random((n, F)) < p[y]).astype(np.int64), y


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        return fn(*args, **kw)


# ----------------------------------------------------------------------------- chain rule


def _negbin_log_pmf(n, a, b):
    """log p(n) for n ~ Poisson(λ), λ ~ Gamma(a, rate b)."""
    return gammaln(a + n) - gammaln(a) - gammaln(n + 1) + a * np.log(b / (b + 1)) - n * np.log(b + 1)


@pytest.mark.parametrize("alpha", [0.7, "evidence"])
def test_chain_rule_holds_for_the_multinomial_count_model_compared(alpha):
    """log p(X, y) of the multinomial as a count model = Σ_i log p(x_i, y_i | earlier rows).

    Row i: label predictive and Dirichlet-multinomial sequence predictive (the chained
    MultinomialNB), negative-binomial predictive of its length (a chained PoissonNB on the
    lengths) and the multinomial coefficient. With alpha="evidence" the prior learned on
    all rows is held fixed along the chain (the chain rule is a statement about one prior).
    """
    X, y = _binary_docs()
    X[5, 2] = 3  # one repeated word: counts, not only presence
    length_prior = Gamma(2.0, 0.5)
    model = _quiet(MultinomialNB(alpha=alpha).fit, X, y)
    a = model.alpha_
    lengths = X.sum(axis=1)
    first = _first_term("multinomial", X[0], y[0], a, {}, C)
    total, _ = chain_rule_log_evidence(lambda: MultinomialNB(alpha=a), X, y, CLASSES, first)
    first_len = _negbin_log_pmf(lengths[0], 2.0, 0.5)
    len_total, _ = chain_rule_log_evidence(
        lambda: PoissonNB(prior=Gamma(2.0, 0.5), fit_prior=False), lengths[:, None], y, CLASSES, first_len
    )
    len_total += (X.shape[0] - 1) * np.log(C)  # remove the uniform class term of the length chain
    coefficient = np.sum(gammaln(lengths + 1)) - np.sum(gammaln(X + 1))
    expected = total + len_total + coefficient
    got = log_marginal_likelihood(model, X, y, length_prior=length_prior)
    assert got == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("alpha", [(0.6, 1.7), ("evidence", "evidence")])
def test_chain_rule_holds_for_the_bernoulli_model_compared(alpha):
    X, y = _binary_docs()
    model = _quiet(BernoulliNB(alpha=alpha).fit, X, y)
    a = model.alpha_
    first = _first_term("bernoulli", X[0], y[0], tuple(a), {}, C)
    expected, _ = chain_rule_log_evidence(lambda: BernoulliNB(alpha=a), X, y, CLASSES, first)
    assert log_marginal_likelihood(model, X, y) == pytest.approx(expected, rel=1e-10)


# ----------------------------------------------------------------------------- Bayes factors


def test_bayes_factor_is_antisymmetric_and_invariant_to_row_order():
    X, y = _binary_docs(seed=1, n=80)
    w = np.random.default_rng(2).integers(1, 4, y.size).astype(float)
    bern = BernoulliNB().fit(X, y, sample_weight=w)
    mult = MultinomialNB(alpha=0.5).fit(X, y, sample_weight=w)
    bf = log_bayes_factor(bern, mult, X, y, sample_weight=w)
    assert np.isfinite(bf)
    assert log_bayes_factor(mult, bern, X, y, sample_weight=w) == pytest.approx(-bf, rel=1e-14)
    perm = np.random.default_rng(3).permutation(y.size)
    bern_p = BernoulliNB().fit(X[perm], y[perm], sample_weight=w[perm])
    mult_p = MultinomialNB(alpha=0.5).fit(X[perm], y[perm], sample_weight=w[perm])
    assert log_bayes_factor(bern_p, mult_p, X[perm], y[perm], sample_weight=w[perm]) == pytest.approx(bf, rel=1e-10)
    # Weights count as copies.
    keep = np.repeat(np.arange(y.size), w.astype(int))
    rep = log_bayes_factor(BernoulliNB().fit(X[keep], y[keep]), MultinomialNB(alpha=0.5).fit(X[keep], y[keep]), X[keep], y[keep])
    assert rep == pytest.approx(bf, rel=1e-10)
    # Sparse input: the same documents, the same answer.
    Xs = sp.csr_matrix(X)
    bf_sparse = log_bayes_factor(
        BernoulliNB().fit(Xs, y, sample_weight=w), MultinomialNB(alpha=0.5).fit(Xs, y, sample_weight=w), Xs, y, sample_weight=w
    )
    assert bf_sparse == pytest.approx(bf, rel=1e-12)


def test_bernoulli_data_favour_the_bernoulli_event_model():
    X, y = _binary_docs(seed=4, n=300, F=20)
    bern = _quiet(BernoulliNB(alpha=("evidence", "evidence")).fit, X, y)
    mult = _quiet(MultinomialNB(alpha="evidence").fit, X, y)
    assert log_bayes_factor(bern, mult, X, y) > 20


def test_same_family_factor_is_the_difference_of_log_evidences():
    X, y = _binary_docs(seed=5)
    X = X + np.random.default_rng(5).poisson(1.0, X.shape)
    tuned = _quiet(MultinomialNB(alpha="evidence").fit, X, y)
    fixed = MultinomialNB(alpha=1.0).fit(X, y)
    bf = log_bayes_factor(tuned, fixed, X, y)
    assert bf == pytest.approx(tuned.log_evidence() - fixed.log_evidence(), rel=1e-12)
    assert bf >= 0  # the evidence-chosen alpha has the largest evidence
    # Multinomial against Poisson on counts: both probabilities of the count vectors.
    pois = PoissonNB().fit(X, y)
    assert log_bayes_factor(tuned, pois, X, y) == pytest.approx(
        log_marginal_likelihood(tuned, X, y) - pois.log_evidence(), rel=1e-12
    )


def test_bernoulli_against_multinomial_on_counts_is_refused():
    X, y = _binary_docs()
    X[4, 1] = 2
    with pytest.raises(ValueError, match=r"no common footing: BernoulliNB and MultinomialNB see different values in 1 entries.*\(X > 0\)"):
        log_bayes_factor(BernoulliNB().fit(X, y), MultinomialNB().fit(X, y), X, y)
    # On presence both are fine.
    B = (X > 0).astype(int)
    assert np.isfinite(log_bayes_factor(BernoulliNB().fit(B, y), MultinomialNB().fit(B, y), B, y))


def test_bayes_factor_refusals():
    X, y = _binary_docs()
    mult = MultinomialNB().fit(X, y)
    with pytest.raises(ValueError, match=r"no common footing: GaussianNB models real vectors .* MultinomialNB models count"):
        log_bayes_factor(GaussianNB().fit(X.astype(float), y), mult, X, y)
    with pytest.raises(ValueError, match="model_2 was not fitted on these data"):
        log_bayes_factor(BernoulliNB().fit(X, y), MultinomialNB().fit(X[:-1], y[:-1]), X, y)
    # A label the model has never seen is blamed on the data it was fitted on; a y of the
    # wrong length is reported as such.
    with pytest.raises(ValueError, match=r"^model was not fitted on these data: y contains label 7 not in classes_"):
        log_marginal_likelihood(mult, X, np.where(np.arange(len(y)) == 0, 7, y))
    with pytest.raises(ValueError, match=r"^y must be 1-d with one label per row of X \(\d+\), got shape") as err:
        log_marginal_likelihood(mult, X, y[:-1])
    assert "not fitted" not in str(err.value)
    with pytest.raises(ValueError, match="different classes"):
        log_bayes_factor(BernoulliNB().fit(X, y % 2), mult, X, y)
    with pytest.raises(TypeError, match="model_1 must be a fitted"):
        log_bayes_factor(MixedNB(blocks=[("a", BernoulliNB(), [0, 1])]), mult, X, y)
    Xf = X + 0.5
    with pytest.raises(ValueError, match="only for integer counts"):
        log_marginal_likelihood(MultinomialNB().fit(Xf, y), Xf, y)
    with pytest.raises(TypeError, match="length_prior must be a bayesnb.core.priors.Gamma"):
        log_marginal_likelihood(mult, X, y, length_prior=(1.0, 1.0))


# ----------------------------------------------------------------------------- relevance


def _relevance_data(family, seed=0, n=150):
    """The first three features depend on the class, the other five do not."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, C, n)
    F, k = 8, 3
    if family == "bernoulli":
        p = np.tile(rng.uniform(0.2, 0.8, F), (C, 1))
        p[:, :k] = [[0.15, 0.8, 0.3], [0.6, 0.2, 0.85], [0.85, 0.5, 0.1]]
        return (rng.random((n, F)) < p[y]).astype(int), y
    if family == "multinomial":
        rates = np.tile(rng.uniform(1.0, 3.0, F), (C, 1))
        rates[:, :k] = [[0.3, 4.0, 1.0], [3.0, 0.5, 4.0], [6.0, 2.0, 0.2]]
        return rng.poisson(rates[y] * rng.uniform(0.5, 1.5, (n, 1))), y
    if family == "categorical":
        X = rng.integers(0, 4, size=(n, F))
        X[:, :k] = np.where(rng.random((n, k)) < 0.6, (y[:, None] + np.arange(k)) % 4, X[:, :k])
        return X, y
    X = rng.normal(size=(n, F)) * rng.uniform(0.5, 2.0, F)
    X[:, :k] += np.array([[0.0, 1.0, -1.0], [1.0, -1.0, 0.0], [-1.0, 0.0, 1.0]])[y]
    return X, y


_RELEVANCE_MODELS = {
    "bernoulli": lambda: BernoulliNB(),
    "multinomial": lambda: MultinomialNB(alpha=0.5),
    "categorical": lambda: CategoricalNB(),
    "gaussian": lambda: GaussianNB(prior=NormalInverseGamma(0.0, 0.1, 1.0, 1.0)),
}


@pytest.mark.parametrize("family", list(_RELEVANCE_MODELS))
def test_relevance_bayes_factor_ranks_the_relevant_features_first(family):
    X, y = _relevance_data(family)
    bf = relevance_log_bayes_factor(_RELEVANCE_MODELS[family]().fit(X, y))
    assert bf.shape == (8,)
    assert set(np.argsort(bf)[-3:]) == {0, 1, 2}
    assert np.all(bf[:3] > 5) and np.all(bf[3:] < 0)


def _single_column_factor(family, model, X, y, j):
    """log BF_j from the evidences of single-column estimators: class-specific vs one class."""
    n = y.size
    if family == "multinomial":
        alpha = np.asarray(model.prior_.concentration)[0]
        col = np.column_stack([X[:, j], X.sum(axis=1) - X[:, j]])
        make = lambda: MultinomialNB(alpha=[alpha[j], alpha.sum() - alpha[j]], fit_prior=False)  # noqa: E731
    elif family == "gaussian":
        make = lambda: GaussianNB(prior=NormalInverseGamma(0.0, 0.1, 1.0, 1.0), fit_prior=False)  # noqa: E731
        col = X[:, [j]]
    else:
        make = lambda: type(model)(fit_prior=False)  # noqa: E731
        col = X[:, [j]]
    separate = make().fit(col, y).log_evidence() + n * np.log(C)  # remove the uniform labels' part
    shared = make().fit(col, np.zeros(n, int)).log_evidence()  # one class: labels' part 0
    return separate - shared


@pytest.mark.parametrize("family", list(_RELEVANCE_MODELS))
def test_relevance_bayes_factor_equals_single_column_evidences(family):
    X, y = _relevance_data(family, seed=1, n=60)
    model = _RELEVANCE_MODELS[family]().fit(X, y)
    bf = relevance_log_bayes_factor(model)
    expected = [_single_column_factor(family, model, X, y, j) for j in range(X.shape[1])]
    assert_allclose(bf, expected, rtol=1e-10, atol=1e-10)


def test_relevance_with_learned_priors_and_refusal_of_class_specific_priors():
    X, y = _relevance_data("bernoulli")
    learned = _quiet(BernoulliNB(alpha=("evidence", "evidence"), alpha_scope="feature").fit, X, y)
    bf = relevance_log_bayes_factor(learned)
    assert set(np.argsort(bf)[-3:]) == {0, 1, 2}
    with pytest.raises(ValueError, match="one prior per feature shared by the classes"):
        relevance_log_bayes_factor(_quiet(BernoulliNB(alpha="evidence", alpha_scope="class").fit, X, y))
    with pytest.raises(TypeError, match="model must be a fitted"):
        relevance_log_bayes_factor(PoissonNB().fit(X, y))


# ----------------------------------------------------------------------------- selector


def test_selector_in_a_pipeline_keeps_the_relevant_features():
    X, y = _relevance_data("bernoulli", n=200)
    pipe = make_pipeline(BayesFactorSelector(k=3), BernoulliNB()).fit(X, y)
    selector = pipe[0]
    assert selector.get_support(indices=True).tolist() == [0, 1, 2]
    assert selector.transform(X).shape == (200, 3)
    assert_allclose(selector.scores_, relevance_log_bayes_factor(BernoulliNB().fit(X, y)))
    positive = BayesFactorSelector(k="all", threshold=0.0).fit(X, y)
    assert positive.get_support(indices=True).tolist() == [0, 1, 2]
    sparse = BayesFactorSelector(k=3).fit(sp.csr_matrix(X), y)
    assert sparse.get_support(indices=True).tolist() == [0, 1, 2]
    assert sp.issparse(sparse.transform(sp.csr_matrix(X)))
    search = GridSearchCV(make_pipeline(BayesFactorSelector(), BernoulliNB()), {"bayesfactorselector__k": [1, 3, 8]}, cv=3)
    search.fit(X, y)
    assert search.best_params_["bayesfactorselector__k"] in (3, 8)


def test_selector_with_a_multinomial_scorer_and_bad_parameters():
    X, y = _relevance_data("multinomial")
    sel = BayesFactorSelector(estimator=MultinomialNB(alpha="evidence"), k=3)
    _quiet(sel.fit, X, y)
    assert sel.get_support(indices=True).tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="k must be a non-negative int or 'all'"):
        BayesFactorSelector(k=-1).fit(X, y)
    with pytest.raises(TypeError, match="estimator must be one of"):
        BayesFactorSelector(estimator=PoissonNB()).fit(X, y)
    with pytest.warns(UserWarning, match="k=20 is greater than n_features=8"):
        assert BayesFactorSelector(k=20).fit(X, y).get_support().all()


# ----------------------------------------------------------------------------- curve, plot


def test_evidence_curve_peaks_at_the_evidence_alpha_and_plots_headless(tmp_path):
    X, y = _relevance_data("multinomial", n=200)
    X_val, y_val = _relevance_data("multinomial", seed=9, n=100)
    curve = evidence_curve(MultinomialNB(), X, y, X_val, y_val)
    assert curve.log_evidence_at_optimum >= curve.log_evidence.max() - 1e-9 * abs(curve.log_evidence.max())
    best = curve.alphas[np.argmax(curve.log_evidence)]
    assert abs(np.log(best / curve.alpha_evidence)) <= np.log(curve.alphas[1] / curve.alphas[0])
    assert np.all(np.isfinite(curve.log_loss)) and curve.log_loss.shape == curve.alphas.shape
    ax = plot_evidence_curve(MultinomialNB(), X, y, X_val, y_val, alphas=np.geomspace(0.01, 100, 25))
    assert ax.get_xscale() == "log" and ax.right_ax is not None
    assert len(ax.right_ax.get_lines()) == 2 and len(ax.get_lines()) == 3
    path = tmp_path / "evidence.png"
    ax.figure.savefig(path)
    assert path.stat().st_size > 1000
    no_val = plot_evidence_curve(BernoulliNB(), X > 0, y, alphas=[0.1, 1.0, 10.0])
    assert no_val.right_ax is None


def test_importing_evidence_does_not_import_matplotlib():
    code = "import sys, bayesnb.analysis.evidence; assert 'matplotlib' not in sys.modules, 'matplotlib imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
