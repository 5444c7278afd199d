"""Which rows GaussianNB's likelihood sends to its direct (non-expanded) row kernel.

``gaussian.log_likelihood`` answers most (row, class) pairs by the quadratic expansion and
recomputes the untrusted ones; whole rows go to the direct row kernel through
``gaussian._map_rows``. Tests that assert how often that happens share this spy.
"""

from __future__ import annotations

from bayesnb.core.families import gaussian


def direct_kernel_rows(monkeypatch):
    """Spy on ``gaussian._map_rows``: returns the list that receives the number of rows of
    every call made with the direct row kernel (empty while none is made).

    Parameters
    ----------
    monkeypatch : pytest.MonkeyPatch

    Returns
    -------
    list of int
    """
    rows = []
    map_rows = gaussian._map_rows

    def spy(kernel, X, *args):
        if kernel is gaussian._direct_kernel:
            rows.append(X.shape[0])
        return map_rows(kernel, X, *args)

    monkeypatch.setattr(gaussian, "_map_rows", spy)
    return rows
