"""The exact Dirichlet-multinomial predictive on long documents (counts in the thousands):
the tabled small counts, the direct large-count path and the document-length term agree
with an mpmath oracle to 1e-10 relative, and with scipy's ``gammaln`` differences where
those are accurate (issue 14).
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import gammaln

from bayesnb.core.families import multinomial
from bayesnb.core.priors import Dirichlet


def _long_documents(seed, n=6, n_features=40):
    rng = np.random.default_rng(seed)
    # Zipf-like: a few words repeat thousands of times, most once or twice.
    dense = np.zeros((n, n_features))
    for i in range(n):
        length = rng.integers(2_000, 9_000)
        p = 1.0 / np.arange(1, n_features + 1) ** 1.3
        dense[i] = rng.multinomial(length, p / p.sum())
    dense[1, 5] = 0.5  # a fractional value (direct path)
    dense[2, :] = 0.0  # an empty document
    X = sp.csr_matrix(dense)
    assert X.max() > 1_000
    return X


def _mpmath_dm(a, X):
    mpmath.mp.dps = 40
    X = X.toarray()
    out = np.empty((X.shape[0], a.shape[0]))
    for c in range(a.shape[0]):
        total = mpmath.fsum(mpmath.mpf(float(v)) for v in a[c])
        for i, x in enumerate(X):
            s = mpmath.mpf(0)
            for j in np.flatnonzero(x):
                aj = mpmath.mpf(float(a[c, j]))
                s += mpmath.loggamma(aj + float(x[j])) - mpmath.loggamma(aj)
            n = mpmath.mpf(float(x.sum()))
            out[i, c] = float(s - (mpmath.loggamma(total + n) - mpmath.loggamma(total)))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_long_documents_match_mpmath(seed):
    X = _long_documents(seed)
    rng = np.random.default_rng(10 + seed)
    # Concentrations from sparse classes (0.02) to large posteriors (1e4).
    a = np.exp(rng.uniform(np.log(0.02), np.log(1e4), size=(2, X.shape[1])))
    got = multinomial.log_predictive(Dirichlet(a), X)
    want = _mpmath_dm(a, X)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-9)
    # The oracle can tell a wrong answer: one count off by one moves the result.
    off = X.copy()
    off.data[np.argmax(off.data)] += 1.0
    assert np.max(np.abs(multinomial.log_predictive(Dirichlet(a), off) - want)) > 1e-3


def test_long_documents_match_gammaln_differences_where_they_are_accurate():
    # With concentrations below ~100, lgamma(a + x) - lgamma(a) loses nothing to
    # cancellation, so scipy's gammaln is an independent oracle at 1e-10 too.
    X = _long_documents(5, n=40, n_features=300)
    rng = np.random.default_rng(7)
    a = rng.uniform(0.05, 80.0, size=(3, X.shape[1]))
    dense = X.toarray()
    per_entry = gammaln(a[None, :, :] + dense[:, None, :]) - gammaln(a[None, :, :])
    want = per_entry.sum(-1) - (gammaln(a.sum(1)[None, :] + dense.sum(1)[:, None]) - gammaln(a.sum(1)[None, :]))
    got = multinomial.log_predictive(Dirichlet(a), X)
    np.testing.assert_allclose(got, want, rtol=1e-10)
    # Unsorted column indices within rows (CountVectorizer's output) give the same numbers.
    perm = X.copy()
    for i in range(perm.shape[0]):
        s, e = perm.indptr[i], perm.indptr[i + 1]
        order = rng.permutation(e - s)
        perm.indices[s:e] = perm.indices[s:e][order]
        perm.data[s:e] = perm.data[s:e][order]
    perm.has_sorted_indices = False
    np.testing.assert_allclose(multinomial.log_predictive(Dirichlet(a), perm), got, rtol=1e-13)


@pytest.mark.parametrize(
    "values",
    [
        np.random.default_rng(0).integers(0, 300, 1000).astype(np.float64),  # integer lengths
        np.array([0.5, 3.0, 3.0, 1e9, 0.5]),  # fractional and huge: the sorting fallback
        np.array([7.0, 7.0, 2.0, 0.0]),
        np.zeros(0),
    ],
)
def test_distinct_document_lengths_equal_numpy_unique(values):
    got, inverse = multinomial._distinct(values)
    want, want_inverse = np.unique(values, return_inverse=True)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(inverse, want_inverse)
    assert got.dtype == want.dtype
