"""Issue 14: the Gaussian plug-in log-likelihood recomputes only the untrusted (row, class) pairs.

Under posterior draws stacked as classes (the draw engine of
:mod:`bayesnb.analysis.uncertainty`), a row of digits is flagged by the cancellation check
for a few draw-classes out of hundreds (a pixel nearly constant within a class gets a tiny
sampled variance). Those pairs are recomputed one by one in NumPy instead of the whole
row by the compiled row kernel. These tests check, on such draws, that the pairs path,
the compiled row path and an independent direct evaluation agree to ~1e-12, and that the
comparison catches a planted error.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from _gaussian_spy import direct_kernel_rows
from sklearn.datasets import load_digits

import bayesnb
from bayesnb.core import _fitted
from bayesnb.core.families import gaussian

X_DIGITS, Y_DIGITS = load_digits(return_X_y=True)
ROWS = X_DIGITS[:300]


@pytest.fixture(scope="module")
def stacked_draws():
    """16 posterior draws of a GaussianNB fitted on digits, stacked as 160 classes, two of them planted."""
    est = bayesnb.GaussianNB().fit(X_DIGITS, Y_DIGITS)
    params = _fitted.feature_draws(jax.random.key(3), est.fitted_model(), 16)
    n_features = X_DIGITS.shape[1]
    loc = np.asarray(params.loc).reshape(-1, n_features).copy()
    var = np.asarray(params.var).reshape(-1, n_features).copy()
    # Two draw-classes whose pixel 20 is constant, at 0 and at 16, with a variance of
    # 1e-12 (a pixel constant in a class, taken to the extreme): no centre suits both, so
    # for the rows where that pixel is 0 or 16 the expansion's terms are ~1e13 for a
    # result of ~1e2 and those pairs must be recomputed.
    loc[0, 20], var[0, 20] = 0.0, 1e-12
    loc[1, 20], var[1, 20] = 16.0, 1e-12
    return gaussian.GaussianParams(loc, var)


def _direct(params, X):
    """-(x - mu)^2 / (2 sigma^2) - log(2 pi sigma^2) / 2, summed over features, pair by pair."""
    out = np.empty((X.shape[0], params.loc.shape[0]))
    for c in range(params.loc.shape[0]):
        dev = X - params.loc[c]
        out[:, c] = -0.5 * np.sum(dev * dev / params.var[c] + np.log(2.0 * np.pi * params.var[c]), axis=1)
    return out


def _close(a, b, n_features):
    """Within 1e-12 (|L| + F), ten times the accuracy that the expansion with its recomputation promises."""
    return bool(np.all(np.abs(a - b) <= 1e-12 * (np.abs(b) + n_features)))


def _flagged_pairs(params, X):
    out = gaussian._map_rows(
        gaussian._expansion_kernel,
        X,
        params.loc.shape[0],
        _expansion_args(params),
        X.shape[1],
        gaussian._PLUGIN_CHUNK_ENTRIES,
    )
    return np.isnan(out)


def _expansion_args(params):
    loc, var = params
    centre = gaussian._centre(loc, var)
    inv_var, shift = 1.0 / var, loc - centre
    centred_norm = (shift * shift * inv_var).sum(axis=1)
    const = -0.5 * np.log(2.0 * np.pi * var).sum(axis=1) - 0.5 * centred_norm
    return centre, inv_var.T, (shift * inv_var).T, const, centred_norm


def test_precision_weighted_centre_leaves_digits_draws_to_the_expansion():
    """Centred at the midpoint of the class means, 3% of these pairs (38% of the rows)
    failed the cancellation check; at the precision-weighted mean, none does."""
    est = bayesnb.GaussianNB().fit(X_DIGITS, Y_DIGITS)
    params = _fitted.feature_draws(jax.random.key(0), est.fitted_model(), 16)
    n_features = X_DIGITS.shape[1]
    draws = gaussian.GaussianParams(
        np.asarray(params.loc).reshape(-1, n_features), np.asarray(params.var).reshape(-1, n_features)
    )
    assert not _flagged_pairs(draws, X_DIGITS).any()
    assert _close(gaussian.log_likelihood(draws, ROWS), _direct(draws, ROWS), n_features)


def test_draws_of_digits_take_the_pairs_path(stacked_draws, monkeypatch):
    flagged = _flagged_pairs(stacked_draws, ROWS)
    rows_flagged = flagged.any(axis=1).sum()
    # The case of the issue: some pairs are flagged, a small share of their rows' pairs.
    assert flagged.sum() > 0
    assert flagged.sum() * gaussian._PAIRWISE_REDO_SHARE <= rows_flagged * flagged.shape[1]
    row_kernel_calls = direct_kernel_rows(monkeypatch)
    got = gaussian.log_likelihood(stacked_draws, ROWS)
    assert row_kernel_calls == []
    assert _close(got, _direct(stacked_draws, ROWS), ROWS.shape[1])


def test_pairs_path_equals_the_compiled_row_path(stacked_draws, monkeypatch):
    host = gaussian.log_likelihood(stacked_draws, ROWS)
    # Whole flagged rows, through the compiled row kernel (chunks of 64 rows, compiled
    # from the first full chunk on).
    monkeypatch.setattr(gaussian, "_PAIRWISE_REDO_SHARE", 10**12)
    monkeypatch.setattr(gaussian, "_COMPILE_MIN_CHUNKS", 1)
    compiled_rows = []
    map_rows = gaussian._map_rows

    def spy(kernel, X, n_out, args, per_row, target):
        if kernel is gaussian._direct_kernel:
            chunk = max(1 << max(0, (target // max(per_row, 1)).bit_length() - 1), gaussian._MIN_CHUNK)
            compiled_rows.append((X.shape[0] // chunk) * chunk)
        return map_rows(kernel, X, n_out, args, per_row, target)

    monkeypatch.setattr(gaussian, "_map_rows", spy)
    compiled = gaussian.log_likelihood(stacked_draws, ROWS)
    assert len(compiled_rows) == 1 and compiled_rows[0] > 0  # the compiled kernel did run
    assert _close(host, compiled, ROWS.shape[1])
    assert np.max(np.abs(host - compiled)) <= 1e-12 * np.max(np.abs(compiled))


def test_a_planted_error_in_the_pairs_is_caught(stacked_draws, monkeypatch):
    reference = _direct(stacked_draws, ROWS)
    n_features = ROWS.shape[1]
    # Without the recomputation the expansion is off on the planted draw-classes: the check
    # has teeth.
    monkeypatch.setattr(gaussian, "_CANCELLATION_LIMIT", np.inf)
    assert not _close(gaussian.log_likelihood(stacked_draws, ROWS), reference, n_features)
    monkeypatch.undo()

    # A pairs path that takes each pair's parameters from the neighbouring class.
    redo = gaussian._direct_redo

    def shifted(out, flagged, X, loc, inv_var, log_norm):
        roll = lambda a: np.roll(a, 1, axis=0)  # noqa: E731
        return redo(out, flagged, X, roll(loc), roll(inv_var), roll(log_norm))

    monkeypatch.setattr(gaussian, "_direct_redo", shifted)
    assert not _close(gaussian.log_likelihood(stacked_draws, ROWS), reference, n_features)


def test_expansion_kernel_numpy_and_compiled_forms_agree(stacked_draws):
    """The in-place NumPy end of the expansion kernel and its jax.numpy form (compiled for
    large data) flag the same pairs and give the same values."""
    from bayesnb.core._x64 import enable_x64

    args = _expansion_args(stacked_draws)
    host = gaussian._expansion_kernel(ROWS, *args, np)
    with enable_x64():
        compiled = np.asarray(gaussian._compiled(gaussian._expansion_kernel)(ROWS, *args))
    assert np.isnan(host).any()  # the planted draw-classes are flagged
    assert np.array_equal(np.isnan(host), np.isnan(compiled))
    ok = ~np.isnan(host)
    assert np.all(np.abs(host[ok] - compiled[ok]) <= 1e-12 * (np.abs(compiled[ok]) + ROWS.shape[1]))
