"""Equality of the same values computed on blocks of different shapes.

Where two paths score the same draws on the same rows but cut the rows (or the draws)
into blocks of different shapes, XLA compiles one kernel per block shape and may
vectorise a different number of rows together. The terms are the same; the order in
which a row's feature log-likelihoods are summed can change. A sum of ``F`` terms of
magnitude at most ``M`` then moves by at most about ``F * eps * M`` (``eps`` = 2.2e-16),
and a probability ``exp(l - logsumexp(l))`` by that much relatively. For the test models
here (at most a few hundred features, terms of tens of nats) that is below 1e-11; the
observed differences are about 2e-14 relative (issue 41 item 8: 64 of 43,200 values on
a loaded machine). Bit equality is asserted only where the arithmetic is the same by
construction.
"""

from __future__ import annotations

from numpy.testing import assert_allclose

#: F * eps * M for F <= 500 features and terms of at most 100 nats, rounded up.
BLOCK_SHAPE_RTOL = 1e-11


def assert_equal_up_to_block_shape(got, want, err_msg=""):
    """Assert ``got`` equals ``want`` up to the summation order of a block shape."""
    assert_allclose(got, want, rtol=BLOCK_SHAPE_RTOL, atol=0, err_msg=err_msg)
