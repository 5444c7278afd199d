"""Contract: every registered family's closed-form evidence is JAX-traceable.

For each family in :func:`bayesnb.core.families.names` (a family registered later is covered
without editing this file): ``jax.jit(family.log_evidence)`` gives the eager value, and
``jax.grad`` in every field of ``family.hyperparameters`` equals a central finite
difference of the eager evidence in float64, along a random direction (symmetric for a
matrix field, so that it stays a covariance scale).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayesnb.core import families
from bayesnb.core._x64 import enable_x64

N_SAMPLES, N_FEATURES, N_CLASSES = 40, 3, 2


# One generator per kind of feature value (Family.support), not per family.
def _counts(rng, shape):
    return rng.poisson(3.0, shape).astype(np.float64)


def _binary(rng, shape):
    return rng.integers(0, 2, shape).astype(np.float64)


def _codes(rng, shape):
    X = rng.integers(0, 3, shape)
    X[0] = 2  # every feature sees its top category: three categories each
    return X


def _real(rng, shape):
    return rng.normal(0.0, 1.0, shape) * np.array([1.0, 3.0, 0.5]) + np.array([0.0, 5.0, -2.0])


def _positive(rng, shape):
    return rng.gamma(2.0, 1.5, shape)


GENERATORS = {"counts": _counts, "binary": _binary, "codes": _codes, "real": _real, "positive": _positive}


def _is_symmetric_matrices(a):
    return a.ndim >= 2 and a.shape[-1] == a.shape[-2] and np.allclose(a, np.swapaxes(a, -1, -2))


def _random_direction(name, value, rng):
    """A perturbation direction of the size of the field (relative for positive fields)."""
    if _is_symmetric_matrices(value):
        b = rng.normal(size=value.shape)
        sym = 0.5 * (b + np.swapaxes(b, -1, -2))
        # Scaled by the diagonal so that the step is relative to each matrix's size.
        d = np.sqrt(np.abs(np.diagonal(value, axis1=-2, axis2=-1)))
        return sym * d[..., :, None] * d[..., None, :] * 0.3
    if name == "loc":  # the only real-valued (unconstrained) hyperparameter name
        return rng.normal(size=value.shape) * (np.abs(value).mean() + 1.0)
    return rng.uniform(-1.0, 1.0, size=value.shape) * value


def _perturbed_prior(family, stats, rng):
    """The family's default prior moved to non-default values (still valid)."""
    prior = family.default_prior(stats)
    moved = {}
    for name in family.hyperparameters:
        value = np.asarray(getattr(prior, name), dtype=np.float64)
        if _is_symmetric_matrices(value):
            b = rng.normal(size=value.shape)
            d = np.sqrt(np.abs(np.diagonal(value, axis1=-2, axis2=-1)))
            # Ψ + 0.5 D B Bᵀ D stays symmetric positive definite.
            moved[name] = value + 0.5 * (d[..., :, None] * (b @ np.swapaxes(b, -1, -2)) * d[..., None, :]) / value.shape[-1]
        elif name == "loc":
            moved[name] = value + rng.normal(size=value.shape) * (np.abs(value).mean() + 1.0) * 0.3
        else:
            # Positive fields: multiplied by a factor in [1.1, 2] (up: a degrees-of-freedom
            # field stays above its lower limit).
            moved[name] = value * rng.uniform(1.1, 2.0, size=value.shape)
    return prior._replace(**moved)


def _setup(name):
    family = families.get(name)
    rng = np.random.default_rng(sum(map(ord, name)))
    X = GENERATORS[family.support](rng, (N_SAMPLES, N_FEATURES))
    y = np.arange(N_SAMPLES) % N_CLASSES
    weight = rng.uniform(0.5, 2.0, N_SAMPLES)
    stats = family.stats(X, y, N_CLASSES, weight)
    return family, stats, _perturbed_prior(family, stats, rng), rng


@pytest.mark.parametrize("name", families.names())
def test_log_evidence_compiles_to_the_eager_value(name):
    family, stats, prior, _ = _setup(name)
    with enable_x64():
        eager = float(family.log_evidence(prior, stats))
        jitted = jax.jit(family.log_evidence)(prior, stats)
        assert jitted.dtype == jnp.float64 and jitted.shape == ()
    assert np.isfinite(eager)
    assert float(jitted) == pytest.approx(eager, rel=1e-12)


@pytest.mark.parametrize("name", families.names())
def test_log_evidence_gradient_matches_finite_differences(name):
    family, stats, prior, rng = _setup(name)
    assert family.hyperparameters, f"{name} lists no continuous hyperparameter"
    for field in family.hyperparameters:
        value = np.asarray(getattr(prior, field), dtype=np.float64)
        direction = _random_direction(field, value, rng)

        def f(v, field=field):
            return family.log_evidence(prior._replace(**{field: v}), stats)

        with enable_x64():
            grad = np.asarray(jax.jit(jax.grad(f))(jnp.asarray(value)))
            assert grad.shape == value.shape
            analytic = float(np.sum(grad * direction))
            h = 1e-5
            numeric = (float(f(value + h * direction)) - float(f(value - h * direction))) / (2.0 * h)
            at = float(f(value))
        assert np.isfinite(analytic) and abs(analytic) > 1e-6 * abs(at), field  # a direction that moves it
        assert analytic == pytest.approx(numeric, rel=1e-5), field
