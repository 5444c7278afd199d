"""Property-based tests (hypothesis) of every family over random shapes, weights, priors and classes.

For random data, sample weights, feature priors (scalars or per-feature arrays, or the
data-scaled defaults), class priors (Dirichlet concentrations, fixed proportions or
uniform) and each ``estimate``:

* probabilities are finite and normalised (or the estimate says it is undefined);
* permuting the training rows, the features, or the class labels changes nothing but
  the order of the output;
* ``fit`` equals chained ``partial_fit`` on chunks equals the merge of the chunks'
  statistics;
* multiplying the sample weights by an integer ``k`` equals repeating every row ``k``
  times;
* the log evidence obeys the chain rule,
  :math:`\\log p(D) = \\log p(x_1, y_1) + \\sum_{i>1} \\log p(x_i, y_i \\mid D_{<i})`.

The discrete families' additivity and chain rule are also checked, with more examples,
in ``test_additivity.py`` and ``test_math_oracles.py``; here every family runs the same
properties. Shapes come from small sets (JAX compiles once per shape) and examples are
few, so the module stays fast.
"""

from __future__ import annotations

import warnings

import hypothesis.strategies as st
import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from numpy.testing import assert_allclose

from bayesnb import (
    BernoulliNB,
    CategoricalNB,
    GaussianBayesClassifier,
    GaussianNB,
    MixedNB,
    MultinomialNB,
    PoissonNB,
    ZeroLikelihoodWarning,
)
from bayesnb.core.priors import NormalInverseGamma, NormalInverseWishart
from bayesnb.core.stats import merge

ESTIMATES = ("mle", "map", "mean", "predictive")
FAMILIES = ("multinomial", "bernoulli", "categorical", "gaussian", "gbc-full", "gbc-shared", "gbc-diag", "poisson",
            "mixed")
TOL = dict(rtol=1e-8, atol=1e-8)

PROPERTY = settings(
    max_examples=6,
    deadline=None,
    database=None,  # nothing written into the repository
    derandomize=True,  # the same examples on every run
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# The mixed model's columns: a real column, two counts, one 0/1 flag.
_MIXED_BLOCKS = (("real", [0]), ("counts", [1, 2]), ("flag", [3]))


# ----------------------------------------------------------------------------- problems


@st.composite
def problems(draw, family, n_range=(6, 16)):
    """A random problem: training/test data, labels and constructor parameters."""
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    # Two (classes, features) shapes: one feature, and several; JAX compiles per shape.
    n_classes, n_features = draw(st.sampled_from([(2, 1), (3, 3)]))
    n_features = 4 if family == "mixed" else n_features
    n = draw(st.integers(*n_range))
    y = rng.integers(0, n_classes, n)
    y[:n_classes] = np.arange(n_classes)  # every class has a row
    n_test = 5

    def data(rows, labels):
        shift = labels[:, None].astype(float)
        if family in ("multinomial", "poisson"):
            return rng.poisson(1.0 + shift + np.arange(n_features), (rows, n_features)).astype(float)
        if family == "bernoulli":
            return (rng.random((rows, n_features)) < 0.3 + 0.2 * shift).astype(float)
        if family == "categorical":
            return np.column_stack([rng.integers(0, k, rows) for k in categories])
        if family == "mixed":
            return np.column_stack(
                [rng.normal(shift[:, 0], 1.0), rng.poisson(1.0 + shift, (rows, 2)), rng.random(rows) < 0.5]
            ).astype(float)
        return rng.normal(shift, 1.0 + 0.5 * shift, (rows, n_features))

    categories = np.array([3, 2, 3])[:n_features]
    X = data(n, y)
    X_test = data(n_test, rng.integers(0, n_classes, n_test))

    params = {}
    choice = draw(st.sampled_from(["scalar", "array", "default"]))
    if family in ("multinomial", "poisson", "categorical"):
        params["alpha"] = rng.uniform(1.0, 3.0, n_features) if choice == "array" else float(rng.uniform(1.0, 3.0))
        if family == "poisson":
            params["beta"] = float(rng.uniform(0.05, 2.0))
        if family == "categorical":
            params["min_categories"] = categories
    elif family == "bernoulli":
        params["binarize"] = None
        params["alpha"] = (
            (rng.uniform(1.0, 3.0, n_features), rng.uniform(1.0, 3.0, n_features))
            if choice == "array"
            else float(rng.uniform(1.0, 3.0))
        )
    elif family in ("gaussian", "gbc-diag") and choice != "default":
        params["prior"] = NormalInverseGamma(
            rng.normal(0.0, 1.0, n_features) if choice == "array" else 0.0,
            float(rng.uniform(0.05, 2.0)),
            float(rng.uniform(1.5, 3.0)),
            rng.uniform(0.2, 2.0, n_features) if choice == "array" else 1.0,
        )
    elif family in ("gbc-full", "gbc-shared") and choice != "default":
        # A scale proportional to the identity: permuting features leaves it unchanged.
        params["prior"] = NormalInverseWishart(
            float(rng.normal()), float(rng.uniform(0.05, 2.0)), n_features + 1.0 + float(rng.uniform(0.5, 3.0)),
            float(rng.uniform(0.5, 2.0)) * np.eye(n_features),
        )
    if family == "mixed" and choice != "default":
        params["prior"] = NormalInverseGamma(0.0, float(rng.uniform(0.05, 2.0)), 2.0, 1.0)

    class_choice = draw(st.sampled_from(["dirichlet", "dirichlet-array", "fixed", "uniform"]))
    if class_choice == "dirichlet":
        params["class_alpha"] = float(rng.uniform(1.0, 3.0))
    elif class_choice == "dirichlet-array":
        params["class_alpha"] = rng.uniform(1.0, 3.0, n_classes)
    elif class_choice == "fixed":
        params["class_prior"] = rng.dirichlet(np.full(n_classes, 2.0))
    else:
        params["fit_prior"] = False
    return {"X": X, "y": y, "X_test": X_test, "params": params, "n_classes": n_classes, "rng": rng}


def make(family, params, estimate="predictive", columns=None):
    """An estimator of ``family``; ``columns`` relocates the mixed model's blocks."""
    p = dict(params)
    if family == "multinomial":
        return MultinomialNB(estimate=estimate, **p)
    if family == "bernoulli":
        return BernoulliNB(estimate=estimate, **p)
    if family == "categorical":
        return CategoricalNB(estimate=estimate, **p)
    if family == "poisson":
        return PoissonNB(estimate=estimate, **p)
    if family == "gaussian":
        return GaussianNB(estimate=estimate, **p)
    if family.startswith("gbc-"):
        return GaussianBayesClassifier(covariance=family[4:], estimate=estimate, **p)
    prior = p.pop("prior", None)
    columns = columns or {name: cols for name, cols in _MIXED_BLOCKS}
    blocks = [
        ("real", GaussianNB(prior=prior), columns["real"]),
        ("counts", PoissonNB(alpha=2.0), columns["counts"]),
        ("flag", BernoulliNB(binarize=None, alpha=2.0), columns["flag"]),
    ]
    return MixedNB(blocks, estimate=estimate, **p)


def outputs(est, X):
    """The joint log probabilities, or the error of an undefined estimate."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ZeroLikelihoodWarning)
            return est.predict_joint_log_proba(X), est.predict_proba(X)
    except ValueError as err:
        assert str(err).startswith("estimate="), err  # an estimate that does not exist here
        return str(err).split(":")[0]


def assert_same(a, b, order=None, columns=None, what=""):
    """Equal outputs, up to a permutation of rows (``order``) and columns (``columns``)."""
    if isinstance(a, str) or isinstance(b, str):
        assert a == b, what
        return
    for x, z in zip(a, b):
        x = x if order is None else x[order]
        x = x if columns is None else x[:, columns]
        assert_allclose(z, x, err_msg=what, **TOL)


# ----------------------------------------------------------------------------- properties


@pytest.mark.parametrize("family", FAMILIES)
@PROPERTY
@given(data=st.data())
def test_probabilities_are_finite_and_normalised(family, data):
    p = data.draw(problems(family))
    est = make(family, p["params"]).fit(p["X"], p["y"])
    assert np.isfinite(est.log_evidence())
    for estimate in ESTIMATES:
        est.set_params(estimate=estimate)
        out = outputs(est, np.vstack([p["X_test"], p["X"]]))
        if isinstance(out, str):
            continue  # the estimate is undefined here, and said so
        joint, proba = out
        assert np.all(np.isfinite(proba)) and np.all((proba >= 0) & (proba <= 1))
        assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
        assert not np.any(np.isnan(joint)) and np.all(joint < np.inf)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ZeroLikelihoodWarning)  # a row impossible under "mle"
            log_proba = est.predict_log_proba(p["X_test"])
        assert_allclose(np.exp(log_proba), proba[: p["X_test"].shape[0]], rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("family", FAMILIES)
@PROPERTY
@given(data=st.data(), estimate=st.sampled_from(ESTIMATES))
def test_permutations_change_only_the_order(family, data, estimate):
    p = data.draw(problems(family))
    X, y, X_test, rng, C = p["X"], p["y"], p["X_test"], p["rng"], p["n_classes"]
    base = outputs(make(family, p["params"], estimate).fit(X, y), X_test)

    # Training rows in another order: the same model.
    rows = rng.permutation(X.shape[0])
    assert_same(base, outputs(make(family, p["params"], estimate).fit(X[rows], y[rows]), X_test), what="rows")
    # Test rows in another order: the same rows of output, reordered.
    order = rng.permutation(X_test.shape[0])
    assert_same(base, outputs(make(family, p["params"], estimate).fit(X, y), X_test[order]), order=order,
                what="test rows")

    # Features in another order (with their per-feature priors): the same model.
    feats = rng.permutation(X.shape[1])
    params = {
        k: v if k in ("class_alpha", "class_prior") else _permute_features(v, feats, X.shape[1])
        for k, v in p["params"].items()
    }
    columns = None
    if family == "mixed":
        where = np.argsort(feats)  # original column j is now at position where[j]
        columns = {name: sorted(where[cols].tolist()) for name, cols in _MIXED_BLOCKS}
    permuted = make(family, params, estimate, columns).fit(X[:, feats], y)
    assert_same(base, outputs(permuted, X_test[:, feats]), what="features")

    # Class labels renamed by a permutation sigma: column sigma(c) of the new model is
    # column c of the old one (class parameters follow their class).
    sigma = rng.permutation(C)
    params = dict(p["params"])
    for key in ("class_alpha", "class_prior"):
        if np.ndim(params.get(key)) == 1:
            moved = np.empty(C)
            moved[sigma] = params[key]
            params[key] = moved
    relabelled = outputs(make(family, params, estimate).fit(X, sigma[y]), X_test)
    assert_same(base, relabelled, columns=np.argsort(sigma), what="class labels")


def _permute_features(value, perm, n_features):
    """Per-feature arrays (and those inside prior pytrees and pairs) follow their feature."""
    if isinstance(value, NormalInverseGamma):
        return NormalInverseGamma(*(_permute_features(v, perm, n_features) for v in value))
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(_permute_features(v, perm, n_features) for v in value)
    if isinstance(value, np.ndarray) and value.ndim == 1 and value.shape[0] == n_features:
        return value[perm]
    return value


@pytest.mark.parametrize("family", FAMILIES)
@PROPERTY
@given(data=st.data(), n_chunks=st.integers(2, 4), weighted=st.booleans())
def test_fit_equals_partial_fit_equals_merged_statistics(family, data, n_chunks, weighted):
    p = data.draw(problems(family))
    X, y, rng = p["X"], p["y"], p["rng"]
    w = rng.uniform(0.2, 3.0, X.shape[0]) if weighted else None
    classes = np.arange(p["n_classes"])
    cuts = np.sort(rng.choice(np.arange(1, X.shape[0]), n_chunks - 1, replace=False))
    chunks = np.split(np.arange(X.shape[0]), cuts)

    full = make(family, p["params"]).fit(X, y, sample_weight=w)
    chained = make(family, p["params"])
    shards = []
    for idx in chunks:
        wi = None if w is None else w[idx]
        chained.partial_fit(X[idx], y[idx], classes=classes, sample_weight=wi)
        shards.append(make(family, p["params"]).partial_fit(X[idx], y[idx], classes=classes, sample_weight=wi))
    for estimate in ESTIMATES:
        full.set_params(estimate=estimate)
        chained.set_params(estimate=estimate)
        assert_same(outputs(full, p["X_test"]), outputs(chained, p["X_test"]))
    assert chained.log_evidence() == pytest.approx(full.log_evidence(), rel=1e-9, abs=1e-9)

    # The shards' statistics, merged, are the statistics of all rows, and the family's
    # pure posterior of them is the fitted posterior.
    pairs = [(full, [s for s in shards])]
    if family == "mixed":
        pairs = [(est, [dict((n, e) for n, e, _ in s.estimators_)[name] for s in shards])
                 for name, est, _ in full.estimators_]
    for est, parts in pairs:
        merged = merge(*(part.stats_ for part in parts))
        assert type(merged) is type(est.stats_)
        for a, b in zip(jax.tree.leaves(merged), jax.tree.leaves(est.stats_)):
            assert_allclose(np.asarray(a), np.asarray(b), **TOL)
        posterior = est._family.posterior(est.prior_, merged)
        for a, b in zip(jax.tree.leaves(posterior), jax.tree.leaves(est.posterior_)):
            assert_allclose(np.asarray(a), np.asarray(b), **TOL)


@pytest.mark.parametrize("family", FAMILIES)
@PROPERTY
@given(data=st.data(), k=st.integers(2, 3), weighted=st.booleans())
def test_weights_times_k_equal_rows_repeated_k_times(family, data, k, weighted):
    p = data.draw(problems(family, n_range=(4, 9)))
    X, y, rng = p["X"], p["y"], p["rng"]
    w = rng.uniform(0.2, 3.0, X.shape[0]) if weighted else np.ones(X.shape[0])
    scaled = make(family, p["params"]).fit(X, y, sample_weight=k * w)
    repeated = make(family, p["params"]).fit(np.tile(X, (k, 1)), np.tile(y, k), sample_weight=np.tile(w, k))
    assert_allclose(scaled.class_count_, repeated.class_count_, **TOL)
    for estimate in ESTIMATES:
        scaled.set_params(estimate=estimate)
        repeated.set_params(estimate=estimate)
        assert_same(outputs(scaled, p["X_test"]), outputs(repeated, p["X_test"]))
    assert scaled.log_evidence() == pytest.approx(repeated.log_evidence(), rel=1e-9, abs=1e-9)


# The default Gaussian priors are scaled to the data seen so far (empirical Bayes), so
# the chain rule holds for a prior fixed in advance: the problem's explicit prior.
def _fixed_prior(family, params):
    return family not in ("gaussian", "gbc-diag", "gbc-full", "gbc-shared", "mixed") or "prior" in params


@pytest.mark.parametrize("family", FAMILIES)
@PROPERTY
@given(data=st.data())
def test_log_evidence_obeys_the_chain_rule(family, data):
    p = data.draw(problems(family, n_range=(4, 8)))
    if not _fixed_prior(family, p["params"]):
        p["params"]["prior"] = (
            NormalInverseWishart(0.0, 0.5, p["X"].shape[1] + 2.0, np.eye(p["X"].shape[1]))
            if family in ("gbc-full", "gbc-shared")
            else NormalInverseGamma(0.0, 0.5, 2.0, 1.0)
        )
    X, y = p["X"], p["y"]
    classes = np.arange(p["n_classes"])
    est = make(family, p["params"]).partial_fit(X[:1], y[:1], classes=classes)
    first = est.log_evidence()  # log p(x_1, y_1)
    total = first
    for i in range(1, X.shape[0]):
        total += est.predict_joint_log_proba(X[i : i + 1])[0, y[i]]  # log p(x_i, y_i | D_<i)
        est.partial_fit(X[i : i + 1], y[i : i + 1])
    full = make(family, p["params"]).fit(X, y)
    assert np.isfinite(first)
    assert full.log_evidence() == pytest.approx(total, rel=1e-9, abs=1e-8)
