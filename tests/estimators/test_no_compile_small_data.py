"""Issue 14: fitting and predicting point estimates of concrete data compiles nothing.

A first JAX compilation in a process costs a few hundred milliseconds, more than the
whole fit and prediction of a small data set: the plain paths run in NumPy/SciPy and
JAX compiles only where something is traced. Compilations are observed through JAX's
own log (``jax.log_compiles``), so the test fails if any plain path compiles.
"""

from __future__ import annotations

import logging

import jax
import numpy as np
import pytest
from sklearn.datasets import load_digits

import bayesnb

X, Y = load_digits(return_X_y=True)


def _compilations(fn, caplog):
    caplog.clear()
    with caplog.at_level(logging.WARNING), jax.log_compiles(True):
        fn()
    return [r.getMessage() for r in caplog.records if "Compiling" in r.getMessage()]


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("MultinomialNB", X),
        ("BernoulliNB", (X > 4).astype(float)),
        ("CategoricalNB", (X // 4).astype(int)),
        ("PoissonNB", X),
        ("GaussianNB", X),
    ],
)
@pytest.mark.parametrize("estimate", ["mle", "mean", "predictive"])
def test_fit_and_predict_compile_nothing(name, data, estimate, caplog):
    # A shape never seen before in this process (odd row count): nothing may be cached.
    rows = 1000 + {"mle": 1, "mean": 3, "predictive": 5}[estimate]
    data, Y_ = data[:rows], Y[:rows]

    def run_rows():
        est = getattr(bayesnb, name)(estimate=estimate).fit(data, Y_)
        est.predict_proba(data)
        est.predict(data[:7])

    assert _compilations(run_rows, caplog) == []


def test_the_observer_sees_a_compilation(caplog):
    """The planted case: a traced call compiles, and the same observer reports it."""
    seen = _compilations(lambda: jax.jit(lambda v: v * 3.0 + 1.0)(np.arange(11.0)), caplog)
    assert seen, "jax.log_compiles did not report a compilation: the test above could not fail"
