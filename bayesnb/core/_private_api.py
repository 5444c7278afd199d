"""The private names of SciPy that bayesnb uses, quarantined with their public equivalents.

A SciPy or JAX minor release may remove a private name, so each is imported here and
nowhere else (``tests/core/test_private_api.py`` finds no other), falls back to a public
path that gives the same numbers (``tests/core/test_private_api.py``: equal to 1e-12),
and stays only where a benchmark row on a real corpus shows it earns more than 20% (in
time or in peak memory).

Measured with ``nice -n 10 python benchmarks/private_api.py --rounds 5`` (medians of 5
interleaved rounds on a loaded 2-core machine; peak = ``tracemalloc``'s):

* ``scipy.sparse._sparsetools.csr_matvecs``, SciPy's CSR x dense kernel, called on the
  index arrays of a slice of rows as they are. The public product builds a
  ``csr_matrix`` on the slices first, and SciPy's constructor copies a view of a much
  larger array (to free memory): a copy of every slice's entries. On 20 Newsgroups by
  date (11,314 x 130,107 training counts, 7,532 test rows), ``predict_proba`` of the
  posterior mean peaks at 3.3 MiB with it and 4.7 MiB on the public path (+43%); the
  time is the same within the noise (-6% to +6%; a first run had ``fit`` +43% on the
  public path, not reproduced).
* ``scipy.sparse._sparsetools.csc_matvecs``, its CSC x dense kernel, which reads CSR
  rows as the columns of a transpose, for the class totals of a fit. Same reason: the
  class totals (``bayesnb.core.stats.count_stats``) of the SMS Spam Collection (5,574 x
  4,213 counts, ``CountVectorizer(min_df=2)``) take 0.9 ms and 0.45 MiB with it, 1.5 ms
  (+64%) and 0.65 MiB (+44%) on the public path; the scratch bound of
  ``tests/core/test_fit_memory_blocks.py`` holds only with it.

Dropped, for their public paths: ``csr_matmat_maxnnz`` (the check for an entry stored
twice; on 20 Newsgroups +10% in ``fit``, +1% in the exact predictive, measured before it
went), ``jax._src.core.trace_state_clean`` (``is_traced`` asks
``jax.extend.core.get_opaque_trace_state``) and ``jax._src.lib._jax.collect_garbage``
(``gc.collect(0)`` runs JAX's own garbage-collection callback, which calls it).
"""

from __future__ import annotations

import scipy.sparse as sp

try:
    from scipy.sparse._sparsetools import csc_matvecs as _csc_matvecs
    from scipy.sparse._sparsetools import csr_matvecs as _csr_matvecs
except ImportError:  # pragma: no cover - every SciPy in the supported range has them; the public paths then
    _csr_matvecs = _csc_matvecs = None

__all__ = ["HAS_KERNELS", "csr_rows_product", "csr_rows_transposed_product"]

#: Whether this SciPy has the private kernels (else both functions take the public path).
HAS_KERNELS = _csr_matvecs is not None and _csc_matvecs is not None


def csr_rows_product(indptr, indices, data, W, out, accumulate=False, *, public=False):
    """``out = A @ W`` (``out += A @ W`` with ``accumulate``) for the CSR rows ``(indptr, indices, data)``.

    ``indptr`` starts at 0 (``len(out) + 1`` entries), ``data`` and ``W`` are float64, ``W``
    and ``out`` C-contiguous. SciPy's private kernel reads the arrays as they are; the
    public path (``public=True``, or a SciPy without the kernel) builds a ``csr_matrix``
    on them and runs the same kernel through ``@``.

    Parameters
    ----------
    indptr, indices : int ndarray
    data : float64 ndarray
    W : float64 ndarray of shape (n_features, k)
    out : float64 ndarray of shape (n_rows, k)
    accumulate : bool
        Add to ``out`` instead of overwriting it.
    public : bool
        Take the public path even where the private kernel exists (for tests).

    Returns
    -------
    ndarray
        ``out``.
    """
    n = out.shape[0]
    if public or _csr_matvecs is None:
        product = sp.csr_matrix((data, indices, indptr), shape=(n, W.shape[0]), copy=False) @ W
        if accumulate:
            out += product
        else:
            out[...] = product
        return out
    import numpy as np

    idx = np.result_type(indptr.dtype, indices.dtype)
    if not accumulate:
        out.fill(0.0)  # the kernel accumulates
    _csr_matvecs(n, W.shape[0], W.shape[1], indptr.astype(idx, copy=False), indices.astype(idx, copy=False), data, W.ravel(), out.reshape(-1))
    return out


def csr_rows_transposed_product(indptr, indices, data, Y, out, *, public=False):
    """``out += A.T @ Y`` for the CSR rows ``A`` given by ``(indptr, indices, data)``, in place.

    ``indptr`` starts at 0 (``len(Y) + 1`` entries); ``data``, ``Y`` and ``out`` (shape
    ``(n_features, Y.shape[1])``) are float64, ``Y`` and ``out`` C-contiguous. The rows of
    ``A`` are the columns of ``A.T`` in compressed-column form: SciPy's private
    column-major kernel reads the arrays as they are; the public path (``public=True``,
    or a SciPy without the kernel) builds a ``csr_matrix`` on them (a copy of the slices)
    and runs the same kernel through ``.T @``.

    Returns
    -------
    ndarray
        ``out``.
    """
    if public or _csc_matvecs is None:
        out += sp.csr_matrix((data, indices, indptr), shape=(Y.shape[0], out.shape[0]), copy=False).T @ Y
        return out
    import numpy as np

    idx = np.result_type(indptr.dtype, indices.dtype)
    _csc_matvecs(out.shape[0], Y.shape[0], Y.shape[1], indptr.astype(idx, copy=False), indices.astype(idx, copy=False), data, Y.ravel(), out.reshape(-1))
    return out
