"""Posterior uncertainty of predictions: credible intervals from draws."""

from __future__ import annotations

import numpy as np

from ._validation import check_level

__all__ = ["credible_interval", "check_interval_args"]

_METHODS = ("equal-tailed", "hdi")


def check_interval_args(level, method):
    """Validate a credible ``level`` in (0, 1) and an interval ``method``."""
    check_level(level)
    if method not in _METHODS:
        raise ValueError(f"unknown interval method {method!r}; expected 'equal-tailed' or 'hdi'")


def credible_interval(draws, level=0.9, method="equal-tailed"):
    """Credible interval of each quantity over the leading (draw) axis.

    Parameters
    ----------
    draws : array_like of shape (n_draws, ...)
        Posterior draws, e.g. of :math:`p(y \\mid x, \\theta)` with shape
        (n_draws, n_samples, n_classes).
    level : float in (0, 1)
        Posterior mass inside the interval.
    method : {"equal-tailed", "hdi"}
        ``"equal-tailed"``: the ``(1 - level)/2`` and ``(1 + level)/2`` quantiles.
        ``"hdi"``: the shortest interval holding ``ceil(level * n_draws)`` draws
        (the highest-density interval of a unimodal marginal).

    Returns
    -------
    lower, upper : ndarray of shape (...)

    Examples
    --------
    >>> import numpy as np
    >>> lo, hi = credible_interval(np.linspace(0, 1, 101)[:, None], level=0.5)
    >>> float(lo[0]), float(hi[0])
    (0.25, 0.75)
    """
    check_interval_args(level, method)
    level = float(level)
    draws = np.asarray(draws, dtype=np.float64)
    if draws.ndim == 0 or draws.shape[0] == 0:
        raise ValueError(f"credible_interval needs at least one draw along axis 0, got shape {draws.shape}")
    if np.isnan(draws).any():
        raise ValueError("credible_interval: the draws contain NaN")
    if method == "equal-tailed":
        lower, upper = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2], axis=0)
        return lower, upper
    else:  # "hdi"
        n = draws.shape[0]
        k = max(1, int(np.ceil(level * n)))
        s = np.sort(draws, axis=0)
        widths = s[k - 1 :] - s[: n - k + 1]
        start = np.argmin(widths, axis=0)[None]
        return (
            np.take_along_axis(s, start, axis=0)[0],
            np.take_along_axis(s, start + k - 1, axis=0)[0],
        )
