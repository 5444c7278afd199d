"""Small labelled data sets, one per family, for the probabilistic-programming tests.

Shared by test_models, test_mcmc, test_export, test_sbc and test_sampling. Each case is
tiny (a few dozen rows, two or three features) so that the posterior is wide, every
prior pseudo-count matters, and NUTS compiles and runs quickly.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from bayesnb import (
    BernoulliNB,
    CategoricalNB,
    GaussianBayesClassifier,
    GaussianNB,
    MixedNB,
    MultinomialNB,
    PoissonNB,
)
from bayesnb.core.priors import Gamma, NormalInverseGamma

# The families (and covariance structures) of the numpyro models.
NAMES = ("multinomial", "bernoulli", "categorical", "poisson", "gaussian", "gaussian_full", "gaussian_shared",
         "gaussian_diag", "mixed", "evidence_missing")


class Case(NamedTuple):
    name: str
    estimator: object
    X: object
    y: np.ndarray
    sample_weight: np.ndarray | None = None


def _labels(rng, n, classes=("ham", "spam")):
    y = np.array(classes)[rng.integers(0, len(classes), n)]
    y[: len(classes)] = classes  # every class present
    return y


def make(name, seed=0):
    """The case ``name`` (unfitted estimator, X, y[, sample_weight])."""
    rng = np.random.default_rng(seed)
    if name == "multinomial":
        y = _labels(rng, 24)
        rates = np.where((y == "spam")[:, None], [3.0, 1.0, 2.0], [1.0, 2.5, 1.5])
        return Case(name, MultinomialNB(alpha=1.0), rng.poisson(rates), y)
    if name == "bernoulli":
        y = _labels(rng, 24)
        p = np.where((y == "spam")[:, None], [0.8, 0.3, 0.5], [0.2, 0.6, 0.5])
        return Case(name, BernoulliNB(alpha=(1.5, 2.0), binarize=None), (rng.random(p.shape) < p).astype(int), y)
    if name == "categorical":
        y = _labels(rng, 24)
        X = np.column_stack([rng.integers(0, 2, 24), rng.integers(0, 3, 24)])
        return Case(name, CategoricalNB(alpha=1.0), X, y)
    if name == "poisson":
        y = _labels(rng, 20)
        rates = np.where((y == "spam")[:, None], [4.0, 1.0], [1.0, 3.0])
        w = rng.choice([0.5, 1.0, 2.0], size=20)
        return Case(name, PoissonNB(prior=Gamma(2.0, 0.5)), rng.poisson(rates), y, w)
    if name == "gaussian":
        y = _labels(rng, 24)
        X = rng.normal(np.where((y == "spam")[:, None], [1.0, -1.0], [0.0, 0.5]), [1.0, 0.7])
        return Case(name, GaussianNB(prior=NormalInverseGamma(0.0, 0.5, 3.0, 2.0)), X, y)
    if name in ("gaussian_full", "gaussian_shared", "gaussian_diag"):
        y = _labels(rng, 24, ("a", "b", "c")) if name == "gaussian_full" else _labels(rng, 24)
        shift = {"a": 0.0, "b": 1.5, "c": -1.0, "ham": 0.0, "spam": 1.5}
        mean = np.array([[shift[v], -shift[v]] for v in y])
        X = mean + rng.normal(size=(24, 2)) @ np.array([[1.0, 0.4], [0.0, 0.8]])
        covariance = name.split("_")[1]
        if covariance == "diag":  # fixed class proportions, weighted rows
            w = rng.choice([0.5, 1.0, 3.0], size=24)
            return Case(name, GaussianBayesClassifier(covariance="diag", class_prior=[0.4, 0.6]), X, y, w)
        return Case(name, GaussianBayesClassifier(covariance=covariance), X, y)
    if name == "mixed":
        import pandas as pd

        y = _labels(rng, 24)
        spam = y == "spam"
        X = pd.DataFrame(
            {
                "length": rng.normal(np.where(spam, 1.0, -0.5), 1.0),
                "urgent": rng.random(24) < np.where(spam, 0.7, 0.2),
                "sender": pd.Categorical(np.array(["bank", "friend", "shop"])[rng.integers(0, 3, 24)]),
            }
        )
        return Case(name, MixedNB(), X, y)
    if name == "evidence_missing":
        return Case(name, *_evidence_missing(rng))
    if name == "all":
        return Case(name, *_all_families(rng))
    raise KeyError(name)


def all_families_blocks(multinomial=MultinomialNB, bernoulli=BernoulliNB):
    """MixedNB blocks of every family, two columns each (the first two block classes replaceable)."""
    return [
        ("multinomial", multinomial(alpha=1.0), [0, 1]),
        ("bernoulli", bernoulli(alpha=(1.5, 2.0), binarize=None), [2, 3]),
        ("categorical", CategoricalNB(alpha=1.0), [4, 5]),
        ("poisson", PoissonNB(prior=Gamma(2.0, 0.5)), [6, 7]),
        ("gaussian", GaussianNB(prior=NormalInverseGamma(0.0, 0.5, 3.0, 2.0)), [8, 9]),
        ("full", GaussianBayesClassifier(covariance="full"), [10, 11]),
        ("shared", GaussianBayesClassifier(covariance="shared"), [12, 13]),
    ]


def _all_families(rng, n=30):
    """One data set with two columns of every family, for one MCMC run over all of them."""
    y = _labels(rng, n)
    spam = (y == "spam")[:, None]
    counts = rng.poisson(np.where(spam, [3.0, 1.0], [1.0, 2.5]))
    binary = (rng.random((n, 2)) < np.where(spam, [0.8, 0.3], [0.2, 0.6])).astype(float)
    codes = np.column_stack([rng.integers(0, 2, n), rng.integers(0, 3, n)])
    poisson_counts = rng.poisson(np.where(spam, [4.0, 1.0], [1.0, 3.0]))
    real = rng.normal(np.where(spam, 1.0, 0.0), 1.0, (n, 6)) @ np.kron(np.eye(3), [[1.0, 0.4], [0.0, 0.8]])
    X = np.column_stack([counts, binary, codes, poisson_counts, real]).astype(float)
    return MixedNB(all_families_blocks()), X, y


def _evidence_missing(rng, n=30):
    """Hyperparameters learned from the evidence and NaN entries left out (missing="ignore").

    A MixedNB of the four families whose features are separate factors (the ones
    missing="ignore" can fit on): Gaussian prior="evidence", Bernoulli and categorical
    alpha="evidence", class_alpha="evidence"; 15% of the entries missing, weighted rows.
    Unbalanced classes and class-dependent codes keep every learned value finite (about
    3-5 at seed 0), far enough from the defaults for a model with the defaults to differ.
    """
    y = np.where(rng.random(n) < 0.3, "spam", "ham")
    y[:2] = ["ham", "spam"]
    spam = (y == "spam")[:, None]
    real = rng.normal(np.where(spam, [1.0, -1.0], [0.0, 0.5]), [1.0, 0.7])
    binary = (rng.random((n, 2)) < np.where(spam, [0.8, 0.3], [0.2, 0.6])).astype(float)
    u = rng.random((n, 2))
    codes = np.column_stack(
        [u[:, 0] < np.where(spam[:, 0], 0.8, 0.3), np.where(spam[:, 0], u[:, 1] * 3, u[:, 1] ** 2 * 3).astype(int)]
    ).astype(float)
    counts = rng.poisson(np.where(spam, [4.0, 1.0], [1.0, 3.0])).astype(float)
    X = np.column_stack([real, binary, codes, counts])
    X[rng.random(X.shape) < 0.15] = np.nan
    w = rng.choice([0.5, 1.0, 2.0], size=n)
    blocks = [
        ("gaussian", GaussianNB(prior="evidence"), [0, 1]),
        ("bernoulli", BernoulliNB(alpha="evidence", binarize=None), [2, 3]),
        ("categorical", CategoricalNB(alpha="evidence"), [4, 5]),
        ("poisson", PoissonNB(prior=Gamma(2.0, 0.5)), [6, 7]),
    ]
    return MixedNB(blocks, missing="ignore", class_alpha="evidence"), X, y, w


def fitted(name, seed=0):
    case = make(name, seed)
    case.estimator.fit(case.X, case.y, sample_weight=case.sample_weight)
    return case
