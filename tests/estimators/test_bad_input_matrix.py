"""The bad-input matrix for every estimator (and the ``bayesnb demo --data`` command).

``tests/estimators/test_bad_input.py`` holds the matrix of the three discrete estimators. This file
extends it, without repeating its entries, to GaussianNB, GaussianBayesClassifier (each
covariance), PoissonNB and MixedNB, adds the entries that file lacks for every
estimator (missing or mixed-type labels, malformed ``classes``, non-numeric weights),
and checks the inputs that must work: one class only, counts of 1e9 and documents of
1e6 tokens, fractional counts for the multinomial, values far from the origin.

Every bad input gets a ``ValueError``/``TypeError`` (``NotFittedError`` before fit)
whose message names the problem; every valid one a finite, normalised answer that
agrees with an independent computation.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose
from scipy import stats
from scipy.special import gammaln, logsumexp
from _registered import family_estimators
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from bayesnb import (
    BernoulliNB,
    CategoricalNB,
    GaussianBayesClassifier,
    GaussianNB,
    MixedNB,
    MultinomialNB,
    PoissonNB,
)
from bayesnb.cli.command import main as cli_main
from bayesnb.core.priors import Dirichlet, Gamma, NormalInverseGamma, NormalInverseWishart

ESTIMATES = ("mle", "map", "mean", "predictive")
Y = np.array([0, 0, 0, 1, 1, 1])
COUNTS = np.array([[3, 1, 2], [2, 0, 1], [4, 1, 0], [0, 2, 3], [1, 3, 2], [0, 4, 1]])
REAL = COUNTS + np.random.default_rng(0).normal(0.0, 0.3, COUNTS.shape)
MIXED = np.column_stack([REAL[:, 0], COUNTS[:, 1:]])


def _mixed(**kw):
    return MixedNB([("real", GaussianNB(), [0]), ("counts", PoissonNB(), [1, 2])], **kw)


#: Valid X for a family's support, and its column of counts (or None), for the registry's
#: estimators (a registered family of a new support needs a line here).
DATA_FOR_SUPPORT = {
    "counts": (COUNTS, 0),
    "binary": ((COUNTS > 1).astype(int), None),
    "codes": (np.minimum(COUNTS, 2), None),
    "real": (REAL, None),
    "positive": (np.exp(REAL), None),
}


def _from_registry(est):
    return lambda **kw: clone(est).set_params(**kw)


def registered_specs():
    """name -> (constructor taking the common parameters, valid X, the column holding counts
    or None) for every registered family's estimator (tests/_registered.py), by class name."""
    return {type(est).__name__: (_from_registry(est), *DATA_FOR_SUPPORT[support]) for _, support, est in family_estimators()}


# Every registered family's estimator, and configurations beyond the registry's defaults.
SPECS = {
    **registered_specs(),
    "GBC-shared": (lambda **kw: GaussianBayesClassifier(covariance="shared", **kw), REAL, None),
    "GBC-diag": (lambda **kw: GaussianBayesClassifier(covariance="diag", **kw), REAL, None),
    "MixedNB": (_mixed, MIXED, 1),
}
# The discrete estimators have the entries of tests/estimators/test_bad_input.py there;
# here they take the entries over EVERY.
DISCRETE = ("MultinomialNB", "BernoulliNB", "CategoricalNB")
NEW = tuple(n for n in SPECS if n not in DISCRETE)
GAUSS = ("GaussianNB", "GaussianBayesClassifier", "GBC-shared", "GBC-diag")
GBC = ("GaussianBayesClassifier", "GBC-shared", "GBC-diag")
COUNTING = ("PoissonNB", "MixedNB")
EVERY = tuple(SPECS)


def _make(name, **kw):
    return SPECS[name][0](**kw)


def _X(name):
    return np.array(SPECS[name][1], dtype=float)


def _fitted(name, **kw):
    return _make(name, **kw).fit(_X(name), Y)


def _with(name, value, row=0, col=None):
    """Valid X with one entry replaced (in the count column where there is one)."""
    X = _X(name)
    X[row, SPECS[name][2] or 0 if col is None else col] = value
    return X


def _strings(name):
    X = _X(name).astype(object)
    X[1, 2] = "a"
    return X


# (id, estimator names, action(name), exception types, message pattern)
CASES = [
    # --- what X contains
    ("negative-count-fit", COUNTING, lambda n: _make(n).fit(_with(n, -1), Y), ValueError,
     r"Negative values in data passed to PoissonNB: counts must be >= 0"),
    ("negative-count-predict", COUNTING, lambda n: _fitted(n).predict(_with(n, -2)), ValueError,
     r"Negative values in data passed to PoissonNB"),
    ("negative-count-sparse", ("PoissonNB",), lambda n: _make(n).fit(sp.csr_matrix(_with(n, -1)), Y), ValueError,
     r"Negative values"),
    ("non-integer-count-fit", COUNTING, lambda n: _make(n).fit(_with(n, 1.5), Y), ValueError,
     r"PoissonNB needs integer counts .*found non-integer value .*1\.5"),
    ("non-integer-count-predict", COUNTING, lambda n: _fitted(n).predict_proba(_with(n, 0.25)), ValueError,
     r"needs integer counts .*0\.25"),
    ("nan-fit", NEW, lambda n: _make(n).fit(_with(n, np.nan, col=0), Y), ValueError, r"NaN"),
    ("nan-predict", NEW, lambda n: _fitted(n).predict(_with(n, np.nan, col=0)), ValueError, r"NaN"),
    ("nan-count-column", ("MixedNB",), lambda n: _make(n).fit(_with(n, np.nan), Y), ValueError,
     r"column 1 of block 'counts' contains NaN"),
    ("nan-predict-proba-draws", NEW, lambda n: _fitted(n).predict_proba_draws(_with(n, np.nan, col=0), 5),
     ValueError, r"NaN"),
    ("inf-fit", NEW, lambda n: _make(n).fit(_with(n, np.inf, col=0), Y), ValueError, r"infinity"),
    ("minus-inf-fit", NEW, lambda n: _make(n).fit(_with(n, -np.inf, col=0), Y), ValueError, r"infinity"),
    ("inf-predict", NEW, lambda n: _fitted(n).predict_proba(_with(n, np.inf, col=0)), ValueError, r"infinity"),
    ("strings-fit", NEW, lambda n: _make(n).fit(_strings(n), Y), ValueError, r"could not convert string"),
    ("strings-predict", NEW, lambda n: _fitted(n).predict(_strings(n)), ValueError, r"could not convert string"),
    ("strings-unicode", NEW, lambda n: _make(n).fit(np.array([["a", "b", "c"]] * 6), Y), ValueError,
     r"could not convert string"),
    ("complex", NEW, lambda n: _make(n).fit(_X(n) + 1j, Y), ValueError, r"Complex data not supported"),
    ("empty-X", NEW, lambda n: _make(n).fit(np.empty((0, 3)), []), ValueError, r"0 sample"),
    ("empty-X-predict", NEW, lambda n: _fitted(n).predict(np.empty((0, 3))), ValueError, r"0 sample"),
    ("no-features", NEW, lambda n: _make(n).fit(np.empty((6, 0)), Y), ValueError, r"0 feature"),
    ("1d-X", NEW, lambda n: _make(n).fit(_X(n)[:, 0], Y), ValueError, r"Expected 2D array"),
    ("3d-X", NEW, lambda n: _make(n).fit(np.ones((6, 3, 2)), Y), ValueError, r"dim 3"),
    ("ragged-X", NEW, lambda n: _make(n).fit([[1.0, 2.0, 3.0], [1.0]] * 3, Y), ValueError, r"inhomogeneous"),
    ("sparse-dense-only", GAUSS, lambda n: _make(n).fit(sp.csr_matrix(_X(n)), Y), TypeError,
     r"(?i)dense .*sparse|sparse .*dense"),
    ("overflowing-spread", GAUSS, lambda n: _make(n).fit(_X(n) * 1e200, Y), ValueError,
     r"sums of squared deviations overflow float64 .*rescale the features"),
    # --- labels
    ("y-length", NEW, lambda n: _make(n).fit(_X(n), Y[:-1]), ValueError, r"6 rows but y has 5 labels"),
    ("y-nan", NEW, lambda n: _make(n).fit(_X(n), np.where(Y == 1, np.nan, 0.0)), ValueError,
     r"y contains NaN at position 3"),
    ("y-continuous", NEW, lambda n: _make(n).fit(_X(n), np.linspace(0, 1, 6)), ValueError,
     r"Unknown label type: continuous"),
    ("y-2d", NEW, lambda n: _make(n).fit(_X(n), np.eye(6)[:, :2]), ValueError, r"1d array"),
    ("y-none-label", EVERY, lambda n: _make(n).fit(_X(n), np.array(["a", "b", None, "a", "b", "a"], dtype=object)),
     ValueError, r"y contains a missing label \(None\) at position 2"),
    ("y-nan-label", EVERY, lambda n: _make(n).fit(_X(n), np.array(["a", "b", np.nan, "a", "b", "a"], dtype=object)),
     ValueError, r"y contains a missing label \(nan\) at position 2"),
    ("y-mixed-types", EVERY, lambda n: _make(n).fit(_X(n), np.array(["a", 1, "a", 1, "a", 1], dtype=object)),
     TypeError, r"y mixes string and non-string labels \('a' and 1 at position 1\)"),
    ("y-partial-fit-nan", EVERY,
     lambda n: _make(n).partial_fit(_X(n), np.where(Y == 1, np.nan, 0.0), classes=[0.0, 1.0]), ValueError,
     r"y contains NaN"),
    # --- number of features at predict time
    ("n-features-predict", NEW, lambda n: _fitted(n).predict(_X(n)[:, :2]), ValueError,
     r"X has 2 features, but \w+ is expecting 3 features"),
    ("n-features-predict-proba", NEW, lambda n: _fitted(n).predict_proba(np.hstack([_X(n), _X(n)])), ValueError,
     r"X has 6 features, but \w+ is expecting 3 features"),
    ("n-features-joint", NEW, lambda n: _fitted(n).predict_joint_log_proba(_X(n)[:, :1]), ValueError,
     r"X has 1 features"),
    ("n-features-draws", NEW, lambda n: _fitted(n).predict_proba_draws(_X(n)[:, :1], 5), ValueError,
     r"X has 1 features"),
    ("n-features-partial-fit", NEW,
     lambda n: _make(n).partial_fit(_X(n), Y, classes=[0, 1]).partial_fit(_X(n)[:, :2], Y), ValueError,
     r"X has 2 features, but \w+ is expecting 3 features"),
    # --- estimate
    ("estimate-fit", NEW, lambda n: _make(n, estimate="bayes").fit(_X(n), Y), ValueError,
     r"unknown estimate 'bayes'; expected one of 'mle', 'map', 'mean', 'predictive'"),
    ("estimate-none", NEW, lambda n: _make(n, estimate=None).fit(_X(n), Y), ValueError, r"unknown estimate None"),
    ("estimate-partial-fit", NEW, lambda n: _make(n, estimate="mode").partial_fit(_X(n), Y, classes=[0, 1]),
     ValueError, r"unknown estimate 'mode'"),
    *[
        (f"estimate-set-params-{method}", NEW,
         (lambda m: lambda n: getattr(_fitted(n).set_params(estimate="posterior"), m)(_X(n)))(method),
         ValueError, r"unknown estimate 'posterior'")
        for method in ("predict", "predict_proba", "predict_log_proba", "predict_joint_log_proba")
    ],
    ("estimate-set-params-class-log-prior", NEW, lambda n: _fitted(n).set_params(estimate="x").class_log_prior_,
     ValueError, r"unknown estimate 'x'"),
    # --- priors: negative, zero, wrong shape, wrong type
    ("class-alpha-negative", EVERY, lambda n: _make(n, class_alpha=-0.5).fit(_X(n), Y), ValueError,
     r"class_alpha must be > 0"),
    ("class-alpha-shape", NEW, lambda n: _make(n, class_alpha=[1.0, 1.0, 1.0]).fit(_X(n), Y), ValueError,
     r"class_alpha has shape \(3,\), which does not broadcast to \(2,\)"),
    ("class-alpha-string", NEW, lambda n: _make(n, class_alpha="flat").fit(_X(n), Y), TypeError,
     r"class_alpha must be a positive number or array, got 'flat'"),
    ("nig-kappa-negative", ("GaussianNB", "GBC-diag"),
     lambda n: _make(n, prior=NormalInverseGamma(0.0, -1.0, 1.0, 1.0)).fit(_X(n), Y), ValueError,
     r"prior.kappa must be > 0"),
    ("nig-rate-zero", ("GaussianNB", "GBC-diag"),
     lambda n: _make(n, prior=NormalInverseGamma(0.0, 1.0, 1.0, 0.0)).fit(_X(n), Y), ValueError,
     r"prior.rate must be > 0"),
    ("nig-concentration-nan", ("GaussianNB",),
     lambda n: _make(n, prior=NormalInverseGamma(0.0, 1.0, np.nan, 1.0)).fit(_X(n), Y), ValueError,
     r"prior.concentration must be finite"),
    ("nig-shape", ("GaussianNB", "GBC-diag"),
     lambda n: _make(n, prior=NormalInverseGamma(np.zeros(4), 1.0, 1.0, 1.0)).fit(_X(n), Y), ValueError,
     r"prior.loc has shape \(4,\), which does not broadcast to \(2, 3\)"),
    ("nig-type", ("GaussianNB", "GBC-diag"), lambda n: _make(n, prior=(0.0, 1.0, 1.0, 1.0)).fit(_X(n), Y),
     TypeError, r"prior must be a bayesnb.core.priors.NormalInverseGamma.* got tuple"),
    ("var-smoothing-negative", ("GaussianNB",), lambda n: _make(n, var_smoothing=-1e-9).fit(_X(n), Y), ValueError,
     r"var_smoothing must be a finite number >= 0"),
    ("niw-type", ("GaussianBayesClassifier", "GBC-shared"),
     lambda n: _make(n, prior=NormalInverseGamma(0.0, 1.0, 1.0, 1.0)).fit(_X(n), Y), TypeError,
     r"prior must be a bayesnb.core.priors.NormalInverseWishart or None, got NormalInverseGamma"),
    ("niw-df-too-small", ("GaussianBayesClassifier", "GBC-shared"),
     lambda n: _make(n, prior=NormalInverseWishart(0.0, 1.0, 1.0, np.eye(3))).fit(_X(n), Y), ValueError,
     r"prior.df must be > n_features - 1 = 2"),
    ("niw-kappa-negative", ("GaussianBayesClassifier", "GBC-shared"),
     lambda n: _make(n, prior=NormalInverseWishart(0.0, -1.0, 5.0, np.eye(3))).fit(_X(n), Y), ValueError,
     r"prior.kappa must be > 0"),
    ("niw-scale-negative-definite", ("GaussianBayesClassifier", "GBC-shared"),
     lambda n: _make(n, prior=NormalInverseWishart(0.0, 1.0, 5.0, -np.eye(3))).fit(_X(n), Y), ValueError,
     r"prior.scale .*not positive definite"),
    ("niw-scale-shape", ("GaussianBayesClassifier", "GBC-shared"),
     lambda n: _make(n, prior=NormalInverseWishart(0.0, 1.0, 5.0, np.eye(2))).fit(_X(n), Y), ValueError,
     r"prior.scale has shape \(2, 2\)"),
    ("niw-per-class-scale-shared", ("GBC-shared",),
     lambda n: _make(n, prior=NormalInverseWishart(0.0, 1.0, 5.0, np.stack([np.eye(3)] * 2))).fit(_X(n), Y),
     ValueError, r"covariance='shared' needs one \(3, 3\) matrix"),
    ("covariance-unknown", ("GaussianBayesClassifier",),
     lambda n: GaussianBayesClassifier(covariance="spherical").fit(_X(n), Y), ValueError,
     r"covariance must be one of 'full', 'shared', 'diag'; got 'spherical'"),
    ("gamma-alpha-negative", ("PoissonNB",), lambda n: _make(n, alpha=-1.0).fit(_X(n), Y), ValueError,
     r"alpha \(Gamma concentration\) must be > 0"),
    ("gamma-beta-zero", ("PoissonNB",), lambda n: _make(n, beta=0.0).fit(_X(n), Y), ValueError,
     r"beta \(Gamma rate\) must be > 0"),
    ("gamma-alpha-shape", ("PoissonNB",), lambda n: _make(n, alpha=np.ones(4)).fit(_X(n), Y), ValueError,
     r"alpha \(Gamma concentration\) has shape \(4,\), which does not broadcast to \(2, 3\)"),
    ("gamma-prior-type", ("PoissonNB",), lambda n: _make(n, prior=Dirichlet(1.0)).fit(_X(n), Y), TypeError,
     r"prior must be a bayesnb.core.priors.Gamma or None, got Dirichlet"),
    ("gamma-prior-rate-negative", ("PoissonNB",), lambda n: _make(n, prior=Gamma(1.0, -1.0)).fit(_X(n), Y),
     ValueError, r"prior.rate \(Gamma rate\) must be > 0"),
    ("block-prior-negative", ("MixedNB",),
     lambda n: MixedNB([("real", GaussianNB(prior=NormalInverseGamma(0.0, -1.0, 1.0, 1.0)), [0]),
                        ("counts", PoissonNB(), [1, 2])]).fit(_X(n), Y),
     ValueError, r"block 'real': prior.kappa must be > 0"),
    # --- class_prior, fit_prior
    ("class-prior-length", NEW, lambda n: _make(n, class_prior=[0.2, 0.3, 0.5]).fit(_X(n), Y), ValueError,
     r"class_prior has shape \(3,\); the number of classes is 2"),
    ("class-prior-sum", NEW, lambda n: _make(n, class_prior=[0.2, 0.3]).fit(_X(n), Y), ValueError,
     r"class_prior must sum to one, sums to 0\.5"),
    ("class-prior-negative", NEW, lambda n: _make(n, class_prior=[-0.5, 1.5]).fit(_X(n), Y), ValueError,
     r"class_prior must be finite and non-negative"),
    ("class-prior-nan", NEW, lambda n: _make(n, class_prior=[np.nan, 1.0]).fit(_X(n), Y), ValueError,
     r"class_prior must be finite"),
    ("fit-prior-string", NEW, lambda n: _make(n, fit_prior="no").fit(_X(n), Y), TypeError,
     r"fit_prior must be True or False"),
    # --- sample_weight
    ("sample-weight-negative", NEW, lambda n: _make(n).fit(_X(n), Y, sample_weight=[1, 1, -1, 1, 1, 1]),
     ValueError, r"Negative values in sample_weight"),
    ("sample-weight-length", NEW, lambda n: _make(n).fit(_X(n), Y, sample_weight=np.ones(5)), ValueError,
     r"sample_weight has shape \(5,\), expected \(6,\)"),
    ("sample-weight-nan", NEW, lambda n: _make(n).fit(_X(n), Y, sample_weight=[1, np.nan, 1, 1, 1, 1]),
     ValueError, r"sample_weight contains NaN"),
    ("sample-weight-all-zero", NEW, lambda n: _make(n).fit(_X(n), Y, sample_weight=np.zeros(6)), ValueError,
     r"sample_weight is zero for every row"),
    ("sample-weight-partial-fit", NEW,
     lambda n: _make(n).partial_fit(_X(n), Y, classes=[0, 1], sample_weight=-np.ones(6)), ValueError,
     r"Negative values in sample_weight"),
    ("sample-weight-strings", EVERY, lambda n: _make(n).fit(_X(n), Y, sample_weight=["heavy"] * 6), TypeError,
     r"sample_weight must be numeric"),
    # --- partial_fit and classes
    ("partial-fit-no-classes", NEW, lambda n: _make(n).partial_fit(_X(n), Y), ValueError,
     r"classes must be passed on the first call to partial_fit"),
    ("partial-fit-unseen-label", NEW, lambda n: _make(n).partial_fit(_X(n), Y + 1, classes=[0, 1]), ValueError,
     r"y contains label .*2.* not in classes"),
    ("partial-fit-unseen-label-later", NEW,
     lambda n: _make(n).partial_fit(_X(n), Y, classes=[0, 1]).partial_fit(_X(n), np.full(6, 7)), ValueError,
     r"y contains label .*7.* not in classes"),
    ("partial-fit-different-classes", NEW,
     lambda n: _make(n).partial_fit(_X(n), Y, classes=[0, 1]).partial_fit(_X(n), Y, classes=[0, 1, 2]),
     ValueError, r"classes=.*differs from the classes of the first call"),
    ("partial-fit-classes-2d", EVERY, lambda n: _make(n).partial_fit(_X(n), Y, classes=[[0, 1]]), ValueError,
     r"classes must be a 1-d array of class labels, got shape \(1, 2\)"),
    ("partial-fit-classes-empty", EVERY, lambda n: _make(n).partial_fit(_X(n), Y, classes=[]), ValueError,
     r"classes is empty"),
    ("partial-fit-classes-nan", EVERY, lambda n: _make(n).partial_fit(_X(n), Y, classes=[0.0, 1.0, np.nan]),
     ValueError, r"classes contains NaN at position 2"),
    ("partial-fit-classes-none", EVERY,
     lambda n: _make(n).partial_fit(_X(n), np.where(Y, "b", "a"), classes=np.array(["a", "b", None], dtype=object)),
     ValueError, r"classes contains a missing label \(None\)"),
    # --- Bayesian methods
    ("n-draws-zero", NEW, lambda n: _fitted(n).predict_proba_draws(_X(n), n_draws=0), ValueError,
     r"n_draws must be a positive integer, got 0"),
    ("sample-posterior-float", NEW, lambda n: _fitted(n).sample_posterior(2.5), ValueError,
     r"n must be a positive integer, got 2\.5"),
    ("interval-level", NEW, lambda n: _fitted(n).predict_proba_interval(_X(n), 1.5), ValueError,
     r"level must be in \(0, 1\)"),
    # --- undefined estimates say why
    ("mle-singular-covariance", ("GaussianBayesClassifier",), lambda n: _fitted(n, estimate="mle").predict(_X(n)), ValueError,
     r"estimate='mle' is undefined: the maximum-likelihood covariance of class index 0 is singular"),
    ("mle-empty-class", ("GaussianNB",),
     lambda n: _make(n, estimate="mle").partial_fit(_X(n), Y, classes=[0, 1, 2]).predict(_X(n)), ValueError,
     r"estimate='mle' is undefined: class index 2 has no training rows"),
    ("map-undefined-poisson", ("PoissonNB",),
     lambda n: _make(n, alpha=0.5, estimate="map").fit(np.zeros((6, 3)), Y).predict(_X(n)), ValueError,
     r"estimate='map' is undefined.*Gamma shape is 0\.5 < 1"),
    # --- MixedNB blocks
    ("blocks-not-a-list", ("MixedNB",), lambda n: MixedNB("gaussian").fit(_X(n), Y), TypeError,
     r"blocks must be a non-empty list of \(name, estimator, columns\) triples"),
    ("block-unknown-estimator", ("MixedNB",), lambda n: MixedNB([("g", object(), [0])]).fit(_X(n), Y), TypeError,
     r"block 'g': unknown estimator type object"),
    ("block-column-twice", ("MixedNB",),
     lambda n: MixedNB([("a", GaussianNB(), [0, 1]), ("b", PoissonNB(), [1, 2])]).fit(_X(n), Y), ValueError,
     r"column 1 is in blocks 'a' and 'b'"),
    ("block-columns-left-over", ("MixedNB",), lambda n: MixedNB([("a", GaussianNB(), [0])]).fit(_X(n), Y),
     ValueError, r"column\(s\) \[1, 2\] are in no block"),
    ("block-column-out-of-range", ("MixedNB",), lambda n: MixedNB([("a", GaussianNB(), [0, 5])]).fit(_X(n), Y),
     ValueError, r"block 'a': column index out of range"),
    ("block-non-binary", ("MixedNB",),
     lambda n: MixedNB([("g", GaussianNB(), [0]), ("b", BernoulliNB(binarize=None), [1, 2])]).fit(_X(n), Y),
     ValueError, r"block 'b': BernoulliNB with binarize=None needs binary \(0/1\) data; found value .*2"),
    ("frame-strings-in-gaussian-block", ("MixedNB",),
     lambda n: MixedNB([("g", GaussianNB(), ["a"])]).fit(pd.DataFrame({"a": list("abcdef")}), Y), ValueError,
     r"block 'g': could not convert string to float: 'a'"),
    ("frame-missing-category", ("MixedNB",),
     lambda n: MixedNB().fit(pd.DataFrame({"c": ["x", "y", None, "x", "y", "x"]}), Y), ValueError,
     r"column 'c' \(position 0\) contains NaN/missing values"),
    ("frame-unsupported-dtype", ("MixedNB",),
     lambda n: MixedNB().fit(pd.DataFrame({"t": pd.date_range("2020", periods=6)}), Y), TypeError,
     r"cannot infer a family for column 't' of dtype datetime64"),
]

NOT_FITTED_CALLS = {
    "predict": lambda est, X: est.predict(X),
    "predict_proba": lambda est, X: est.predict_proba(X),
    "predict_log_proba": lambda est, X: est.predict_log_proba(X),
    "predict_joint_log_proba": lambda est, X: est.predict_joint_log_proba(X),
    "score": lambda est, X: est.score(X, Y),
    "class_log_prior_": lambda est, X: est.class_log_prior_,
    "log_evidence": lambda est, X: est.log_evidence(),
    "sample_posterior": lambda est, X: est.sample_posterior(5),
    "predict_proba_draws": lambda est, X: est.predict_proba_draws(X, 5),
    "predict_proba_interval": lambda est, X: est.predict_proba_interval(X, 0.9),
}


def _matrix():
    for case_id, names, action, exc, match in CASES:
        for name in names:
            yield pytest.param(name, action, exc, match, id=f"{name}-{case_id}")


@pytest.mark.parametrize(("name", "action", "exc", "match"), list(_matrix()))
def test_bad_input_is_rejected_with_a_clear_message(name, action, exc, match):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning is not an answer
        with pytest.raises(exc, match=match) as info:
            action(name)
    assert type(info.value) in (exc if isinstance(exc, tuple) else (exc,))  # not a subclass by accident


@pytest.mark.parametrize("method", sorted(NOT_FITTED_CALLS))
@pytest.mark.parametrize("name", NEW)
def test_use_before_fit_raises_not_fitted(name, method):
    est = _make(name)
    with pytest.raises(NotFittedError, match=rf"This {type(est).__name__} instance is not fitted yet"):
        NOT_FITTED_CALLS[method](est, _X(name))


@pytest.mark.parametrize("name", NEW)
def test_failed_refit_leaves_no_half_fitted_estimator(name):
    est = _fitted(name)
    with pytest.raises(ValueError):
        est.fit(_X(name), Y, sample_weight=-np.ones(6))
    with pytest.raises(NotFittedError):
        est.predict(_X(name))


@pytest.mark.parametrize("name", NEW)
def test_failed_partial_fit_does_not_commit_its_batch(name):
    est = _make(name).partial_fit(_X(name), Y, classes=[0, 1])
    before = est.predict_joint_log_proba(_X(name))
    with pytest.raises(ValueError, match=r"Negative values in sample_weight"):
        est.partial_fit(_X(name), Y, sample_weight=[1, 1, 1, 1, 1, -1])
    assert_allclose(est.class_count_, [3, 3])
    assert np.array_equal(est.predict_joint_log_proba(_X(name)), before)


# ----------------------------------------------------------------------------- valid input that must work


def _check_probabilities(est, X):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning, no ZeroLikelihoodWarning
        proba = est.predict_proba(X)
        log_proba = est.predict_log_proba(X)
        joint = est.predict_joint_log_proba(X)
    assert np.all(np.isfinite(proba)) and np.all(np.isfinite(log_proba)) and np.all(np.isfinite(joint))
    assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert_allclose(logsumexp(log_proba, axis=1), 0.0, atol=1e-12)
    return proba, joint


def _one_class_data(name):
    """Rows of class 0 only (for GBC-full enough rows for a non-singular MLE)."""
    X = _X(name)
    rows = X[Y == 0]
    rng = np.random.default_rng(3)
    extra = rows[rng.integers(0, 3, 5)]
    if SPECS[name][2] is None and not np.array_equal(X, np.round(X)):  # real values: jitter the repeats
        noise = rng.normal(0.0, 0.5, extra.shape)
        extra = extra * np.exp(noise) if np.all(X > 0) else extra + noise  # positive data stay positive
    return np.vstack([rows, extra])


# Priors that do not depend on the number of classes (the default Gaussian priors are
# scaled to the data and, for the NIW, to the number of classes), with a0 = 2 so that
# the posterior mean of a variance exists for a class without rows.
_FIXED_PRIORS = {
    "GaussianNB": {"prior": NormalInverseGamma(0.0, 0.01, 2.0, 1.0)},
    "GBC-diag": {"prior": NormalInverseGamma(0.0, 0.01, 2.0, 1.0)},
    "GaussianBayesClassifier": {"prior": NormalInverseWishart(0.0, 0.01, 5.0, np.eye(3))},
    "GBC-shared": {"prior": NormalInverseWishart(0.0, 0.01, 5.0, np.eye(3))},
    "PoissonNB": {},
    "MultinomialNB": {"alpha": 2.0},
    "BernoulliNB": {"alpha": 2.0},
    "CategoricalNB": {"alpha": 2.0},
}


def _one_class_model(name, estimate):
    if name == "MixedNB":
        blocks = [("real", GaussianNB(**_FIXED_PRIORS["GaussianNB"]), [0]), ("counts", PoissonNB(), [1, 2])]
        return MixedNB(blocks, estimate=estimate)
    # A family not listed takes its default prior (the test fails if that depends on the classes).
    return _make(name, estimate=estimate, **_FIXED_PRIORS.get(name, {}))


@pytest.mark.parametrize("estimate", ESTIMATES)
@pytest.mark.parametrize("name", EVERY)
def test_one_class_is_fitted_like_scikit_learn(name, estimate):
    """One class is accepted (as in scikit-learn): every row gets that class with
    probability one, and the feature part is the posterior of that class's rows, the
    same as in a two-class model whose second class has no rows (where that model's
    estimate exists: a class without rows has no maximum-likelihood Gaussian, and the
    joint mode of the shared-covariance model depends on the number of class means)."""
    X = _one_class_data(name)
    labels = np.full(X.shape[0], "only")
    est = _one_class_model(name, estimate).fit(X, labels)
    assert est.classes_.tolist() == ["only"]
    proba, joint = _check_probabilities(est, X)
    assert proba.shape == (X.shape[0], 1) and np.all(proba == 1.0)
    assert est.predict(X).tolist() == labels.tolist()
    assert np.isfinite(est.log_evidence())
    gaussian = name in GAUSS or name == "MixedNB"
    if (estimate == "mle" and gaussian) or (estimate == "map" and name == "GBC-shared"):
        return
    two = _one_class_model(name, estimate).partial_fit(X, labels, classes=["only", "zz-unseen"])
    assert_allclose(
        joint - est.class_log_prior_, two.predict_joint_log_proba(X)[:, :1] - two.class_log_prior_[0],
        rtol=1e-12, atol=1e-12,
    )


def _poisson_oracle(est, X, estimate):
    """log p(x | y=c) of count rows by scipy: Poisson plug-in or negative-binomial predictive."""
    post = est.posterior_
    if estimate == "predictive":
        a, b = np.asarray(post.concentration), np.asarray(post.rate)
        return np.stack([stats.nbinom.logpmf(X, a[c], b[c] / (b[c] + 1.0)).sum(1) for c in range(a.shape[0])], 1)
    rate = est.rate_
    return np.stack([stats.poisson.logpmf(X, rate[c]).sum(1) for c in range(rate.shape[0])], 1)


@pytest.mark.parametrize("estimate", ESTIMATES)
def test_poisson_huge_counts_and_million_token_rows(estimate):
    y = np.repeat([0, 1], 4)
    X = np.array([[5, 1, 3], [4, 2, 3], [6, 1, 2], [1e9, 1, 4], [1, 4, 2], [2, 5, 3], [1, 6, 2], [0, 4, 1e9]])
    est = PoissonNB(estimate=estimate).fit(X, y)
    rows = np.array([[1e6, 0, 0], [0, 1e6, 0], [3e5, 3e5, 4e5], [1e9, 1, 1e9], [2, 3, 2]])
    proba, joint = _check_probabilities(est, rows)
    assert_allclose(_check_probabilities(est, sp.csr_matrix(rows))[0], proba, rtol=0, atol=1e-12)
    expected = _poisson_oracle(est, rows, estimate) + est.class_log_prior_
    # log pmf terms of size x log(rate) ~ 1e6 * 20 cancel to the result: a few ulps of them.
    scale = np.abs(rows) @ np.abs(np.log(est.rate_)).T + gammaln(rows + 1).sum(1)[:, None] + 1e9
    assert np.all(np.abs(joint - expected) <= 64 * np.finfo(float).eps * scale)
    assert proba[1, 1] > 1 - 1e-9  # a million of feature 1, the class-1 word, decides class 1


@pytest.mark.parametrize("estimate", ESTIMATES)
def test_mixed_huge_counts_are_the_sum_of_its_blocks(estimate):
    y = np.repeat([0, 1], 4)
    rng = np.random.default_rng(2)
    X = np.column_stack([rng.poisson(3, (8, 2)) + 1, rng.poisson(2, 8), rng.normal(y, 1.0)]).astype(float)
    X[0, 0] = 1e9
    est = MixedNB(
        [("words", MultinomialNB(alpha=2.0), [0, 1]), ("visits", PoissonNB(alpha=2.0), [2]), ("g", GaussianNB(), [3])],
        estimate=estimate,
    ).fit(X, y)
    rows = np.array([[1e6, 0, 1e6, 0.5], [0, 1e6, 0, -0.5], [1e9, 1e9, 1e9, 1e9]])
    _, joint = _check_probabilities(est, rows)
    parts = est.class_log_prior_.copy()
    for _, block, idx in est.estimators_:
        block.set_params(estimate=estimate)
        parts = parts + block.predict_joint_log_proba(rows[:, idx]) - block.class_log_prior_
    assert_allclose(joint, parts, rtol=1e-12)


@pytest.mark.parametrize("name", GAUSS)
def test_gaussian_far_from_the_origin(name):
    """The default prior is scaled to the data: shifting every feature by 1e9 changes the
    class probabilities only by the rounding of the shifted data (~eps * 1e9 / spread)."""
    X, shift = _X(name), 1e9
    near = _make(name).fit(X, Y)
    far = _make(name).fit(X + shift, Y)
    test = X + np.random.default_rng(1).normal(0.0, 0.5, X.shape)
    proba_far, _ = _check_probabilities(far, test + shift)
    tolerance = 1e3 * np.finfo(float).eps * shift / X.std()
    assert_allclose(proba_far, near.predict_proba(test), rtol=0, atol=tolerance)


def test_multinomial_fractional_counts_are_scored_exactly():
    """Fractional counts (e.g. tf-idf) are allowed by the multinomial family, as in
    scikit-learn; the Dirichlet-multinomial predictive is then evaluated with gamma
    functions of real arguments (not a silent rounding)."""
    X = COUNTS * 0.75 + 0.1
    est = MultinomialNB(alpha=0.5).fit(X, Y)
    rows = np.array([[0.3, 2.5, 0.0], [4.25, 0.0, 1.5]])
    _, joint = _check_probabilities(est, rows)
    a = np.asarray(est.posterior_.concentration)
    expected = np.stack(
        [(gammaln(a[c] + rows) - gammaln(a[c])).sum(1) - (gammaln(a[c].sum() + rows.sum(1)) - gammaln(a[c].sum()))
         for c in range(2)], 1)
    assert_allclose(joint - est.class_log_prior_, expected, rtol=1e-12)


# ----------------------------------------------------------------------------- the demo command


def _demo(tmp_path, content, capsys):
    path = tmp_path / "data.tsv"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    # --no-report: the table is what these checks read; no report folder in the working directory.
    code = cli_main(["demo", "--data", str(path), "--no-report"])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        # Issue 40: the message names the line and the byte (and how to convert the file).
        (b"\xff\xfe\x00binary\x00", r"line 1: not UTF-8 text \(byte 0xff, byte 1 of the line\)"),
        # '<TAB>text' is an unlabelled document (the semi-supervised section), no longer an
        # error; a line without the separator still is one, and so is a file of only
        # unlabelled lines.
        ("hello\nspam\tx\n", r"line 1: expected 'label'\\t'text', got 'hello'"),
        ("\thello\n\tworld\n", r"holds no labelled lines"),
        ("   \n\n  \t \n", r"holds no labelled lines"),
        ("ham\t\nspam\t\nham\t\nspam\t\nham\t\nspam\t\nham\t\nspam\t\n", r"cannot build a vocabulary"),
        ("ham\t1 2\nham\t3 4\n", r"need at least 2 classes"),
    ],
    ids=["not-utf8", "no-separator", "only-unlabelled", "whitespace-only", "labels-without-text", "one-class"],
)
def test_demo_data_errors_exit_1_with_one_line(tmp_path, capsys, content, message):
    code, out, err = _demo(tmp_path, content, capsys)
    assert code == 1 and out == ""
    assert err.startswith("bayesnb: error: ") and len(err.strip().splitlines()) == 1
    assert pytest.importorskip("re").search(message, err), err


def test_demo_data_with_a_million_token_document_works(tmp_path, capsys):
    rng = np.random.default_rng(0)
    spam, ham = ["win", "cash", "prize", "now"], ["lunch", "noon", "see", "you"]
    lines = [f"{lab}\t{' '.join(rng.choice(spam if lab == 'spam' else ham, 6))}" for lab in ["spam", "ham"] * 12]
    lines += ["spam\t" + " ".join(["cash"] * 1_000_000), "ham\t" + " ".join(["lunch"] * 1_000_000)]
    code, out, err = _demo(tmp_path, "\n".join(lines) + "\n", capsys)
    assert code == 0 and err == ""
    rows = [line.split() for line in out.splitlines() if line.startswith(("multinomial ", "bernoulli "))]
    # Four estimates per family, then the calibrated row and scikit-learn's baselines.
    table = [row for row in rows if row[1] in ("mle", "map", "mean", "predictive")]
    assert len(table) == 8
    assert sum(row[1] == "calibrated" for row in rows) == 2
    # Accuracy is always a number; the log loss is finite unless the estimate makes a test row
    # impossible under every class (the last column counts them), when it is inf (issue 15).
    assert all(np.isfinite(float(row[2])) for row in table)
    assert all(np.isfinite(float(row[3])) == (int(row[-1]) == 0) for row in table)
    assert all(float(row[3]) == np.inf for row in table if int(row[-1]) > 0)
    assert any(int(row[-1]) == 0 for row in table)
