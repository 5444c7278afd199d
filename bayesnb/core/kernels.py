r"""Products of data with log-parameter matrices, on dense or CSR data.

Naive Bayes log-likelihoods are linear in (a transform of) the data:
:math:`\log p(x \mid c) = \sum_j x_j \log\theta_{cj}`. Two details make the product
delicate and are handled once here for every family:

* a zero probability gives :math:`\log\theta = -\infty`, and a dense product then
  evaluates :math:`0 \cdot (-\infty) = \mathrm{NaN}`. The convention of probability
  (:math:`0 \log 0 = 0`) is applied instead: only features actually present make a row
  impossible;
* sparse data is never densified.

The data product runs on numpy/scipy (BLAS and scipy's sparse kernels), which on CPU
are faster than a JAX scatter/gather; the parameter matrices come from the JAX core.

Under ``jax.jit`` / ``jax.grad`` / ``jax.vmap`` the parameters (or the data) arrive as
tracers, which NumPy cannot read. :func:`is_traced` tells the two cases apart, and
:func:`matmul` and :func:`log_linear` then take a ``jax.numpy`` path with the same
formulas (dense data only): concrete inputs keep the CPU path, its speed and its numbers.
The families use :func:`namespace` (``numpy`` or ``jax.numpy``) and :func:`host` for
their parameter arithmetic in the same way.
"""

from __future__ import annotations

import gc
import itertools
import os
import threading
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp
from jax.extend.core import get_opaque_trace_state

from bayesnb.core import _private_api

__all__ = ["is_traced", "namespace", "host", "dense_jax", "sum_log_rising_jax", "summed", "repeated_entries", "repeated_entries_checkable", "matmul", "csr_rows_product", "csr_rows_transposed_product", "gemm", "log_linear", "row_sums", "csr_row_sums", "row_counts", "num_threads", "map_threads", "row_ranges", "entry_blocks", "ParamCache", "frozen", "check_sparse_structure"]

# The trace state at top level (no jax.jit / grad / vmap active), read through JAX's public
# extension API when this module is imported (bayesnb is imported outside any JAX
# transformation): see is_traced.
_TOP_TRACE_STATE = get_opaque_trace_state()


def is_traced(*values):
    """Whether JAX is tracing: a leaf of the pytrees ``values`` is a tracer, or the call
    runs inside ``jax.jit`` / ``jax.grad`` / ``jax.vmap`` at all.

    Inside a trace every ``jax.numpy`` operation is staged out and returns a tracer, even
    on concrete NumPy inputs, so a path that reads a JAX result back into NumPy fails
    there whatever its arguments; such calls take the ``jax.numpy`` path too.

    Examples
    --------
    >>> import jax, numpy as np
    >>> is_traced(np.ones(2), None)
    False
    >>> jax.jit(lambda x: np.float64(is_traced(x)))(1.0).item()
    1.0
    """
    # A tracer exists only while its trace is active: comparing the current trace state
    # with the top-level one needs no walk over the pytrees (O(1) on the CPU path).
    return get_opaque_trace_state() != _TOP_TRACE_STATE


def namespace(*values):
    """``jax.numpy`` where some leaf of ``values`` is traced (:func:`is_traced`), else ``numpy``.

    The closed forms written ``xp.log(...)`` with ``xp = namespace(prior, stats)`` run
    unchanged (same NumPy calls, same numbers) on concrete inputs and trace under JAX.
    """
    return jnp if is_traced(*values) else np


def host(value, dtype=None):
    """``np.asarray(value, dtype)``, or ``value`` itself (as a JAX array) where it is traced."""
    if is_traced(value):
        return value if dtype is None else jnp.asarray(value, dtype=dtype)
    return np.asarray(value, dtype=dtype)


# Sparse products with at least this many stored entries are split across threads. Measured
# on the 2-core benchmark machine (gc.collect() before each call, 2 classes): 556 long
# documents, 495 k float64 entries, 1.8 ms on one thread, 1.5 on two; one SMS copy, 70 k
# int64 entries, 0.37 ms on one, 0.75-0.80 on two (cut at 2^16).
_PARALLEL_MIN_NNZ = 1 << 18
_SLICES_PER_THREAD = 4
_POOL = None
_POOL_LOCK = threading.Lock()
_POOL_PREFIX = "bayesnb"


def num_threads():
    """Threads used for large sparse products: ``BAYESNB_NUM_THREADS``, default ``"auto"``.

    scipy's sparse kernels release the GIL, so slices of rows multiply in parallel with
    bit-identical results. ``"auto"`` (the default, like numpy's BLAS) uses every CPU this
    process may run on, at most 8; set ``BAYESNB_NUM_THREADS=1`` on a machine whose cores
    are already busy, where extra threads only add contention. Measured on an idle 2-core
    machine (benchmarks/bench_discrete.py, Zipf corpus): "mean" predict_proba 1.40x
    scikit-learn with one thread, 2.14x with two.
    """
    env = os.environ.get("BAYESNB_NUM_THREADS", "").strip() or "auto"
    if env == "auto":
        try:
            cpus = len(os.sched_getaffinity(0))
        except AttributeError:  # pragma: no cover - not Linux
            cpus = os.cpu_count() or 1
        return max(1, min(cpus, 8))
    try:
        return max(1, int(env))
    except ValueError:
        raise ValueError(f"BAYESNB_NUM_THREADS must be a positive integer or 'auto', got {env!r}") from None


def _forget_pool():
    # A forked child inherits the pool object but not its threads: it must make its own.
    global _POOL
    _POOL = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _pool(workers):
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL._max_workers < workers:
            from concurrent.futures import ThreadPoolExecutor

            _POOL = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=_POOL_PREFIX)
        return _POOL


def map_threads(fn, items, x64=False):
    """``[fn(item) for item in items]``, on :func:`num_threads` threads when there are several.

    For kernels that release the GIL (scipy's sparse products, compiled JAX functions).
    The results come back in the order of ``items``. With ``x64=True`` each call runs
    inside the library's scoped float64 (JAX's configuration contexts are per thread, so
    a caller's ``enable_x64`` does not reach the pool's threads).

    The calling thread takes items too, from one shared queue with ``num_threads() - 1``
    of the pool's threads: a pool thread that is slow to start (a core woken from idle:
    measured 4-6 ms on the 2-core benchmark machine after a 50 ms pause) then takes fewer
    items instead of holding up the call. An exception is raised after every item
    started has finished; with several, the one of the earliest item.
    """
    items = list(items)
    if x64:
        from bayesnb.core._x64 import x64 as _scoped

        fn = _scoped(fn)
    # Called from one of the pool's own threads (a kernel inside a block that is already
    # on a thread): run here, as the pool's threads waiting on their own tasks would deadlock.
    workers = 1 if threading.current_thread().name.startswith(_POOL_PREFIX) else min(num_threads(), len(items))
    if workers <= 1:
        return [fn(item) for item in items]
    n = len(items)
    results = [None] * n
    errors = {}
    claim = itertools.count()  # next() is atomic under the GIL

    def work():
        while not errors:
            i = next(claim)
            if i >= n:
                return
            try:
                results[i] = fn(items[i])
            except BaseException as err:  # re-raised in the caller below
                errors[i] = err
                return

    helpers = [_pool(workers).submit(work) for _ in range(workers - 1)]
    work()
    for job in helpers:
        # A helper that has not started yet (its thread busy elsewhere) has nothing left.
        if not job.cancel():
            job.result()
    if errors:
        raise errors[min(errors)]
    return results


def release_host_arguments():
    """Let go of the NumPy arrays that finished JAX computations still reference.

    A NumPy argument of a compiled call may be used in place (no copy); the reference
    the runtime then holds is dropped on its own thread and queued for the interpreter,
    which drains the queue at the next JAX dispatch or garbage collection. Until then
    the array, and the base it is a view of, stays alive: a fit's validated copy of the
    data would outlive the statistics computed from it by as much as the rest of the fit
    (measured: the 7.6 MiB float copy of a MixedNB's Gaussian block, held through every
    later block). Call this once the results are read back (they are then complete). It
    drains the queue through JAX's garbage collection callback (a collection of the
    youngest generation runs it), the public way to reach JAX's own hook for it.
    """
    gc.collect(0)  # the youngest generation only: a few microseconds


# Fewer rows than this are not worth a thread of their own in the row-blocked loops.
_PARALLEL_MIN_ROWS = 1 << 16


def entry_blocks(indptr, step):
    """``(start, stop)`` runs of whole CSR rows (``indptr``, from 0) holding about ``step``
    stored entries each: a cut falls at the row where each multiple of ``step`` entries
    is reached (a longer row is a run of its own), empty runs left out.

    Parameters
    ----------
    indptr : int ndarray of shape (n_rows + 1,)
    step : int, >= 1

    Returns
    -------
    list of (int, int)
    """
    n, nnz = indptr.shape[0] - 1, int(indptr[-1])
    cuts = np.searchsorted(indptr, np.arange(step, nnz, step), side="right") - 1
    bounds = np.unique(np.concatenate([[0], cuts, [n]]))
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


def row_ranges(n, block):
    """``(start, stop)`` runs of whole ``block``-row blocks covering ``range(n)``: one run
    per thread of :func:`num_threads` for large ``n``, a single run otherwise."""
    parts = min(num_threads(), max(1, n // _PARALLEL_MIN_ROWS))
    cuts = [min(n, -(-(n * k // parts) // block) * block) for k in range(parts + 1)]
    return [(a, b) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]


# Dense products go to BLAS in pieces of at most this many multiply-adds: OpenBLAS runs
# a product of m x n x k <= 2^18 in the calling thread (interface/gemm.c:
# SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD), while larger ones wake its own thread
# pool, which on a loaded machine stalls a call for tens of milliseconds at random
# (measured on a 2-core machine at load 6: 200,000 x 20 rows in blocks of 2^17 entries
# took 0.3-2 s, in single-threaded pieces 0.03-0.05 s).
GEMM_MULADDS = 1 << 18
_GEMM_MIN_ROWS = 16


def gemm(a, b, out=None):
    """``a @ b`` (2-d float64 NumPy arrays) in pieces of rows that BLAS runs on the
    calling thread (see ``GEMM_MULADDS``); the callers thread over blocks of rows
    themselves (:func:`map_threads`). Written into ``out`` (C-contiguous rows) when given."""
    if out is None:
        out = np.empty((a.shape[0], b.shape[1]), dtype=np.result_type(a.dtype, b.dtype, np.float64))
    step = max(_GEMM_MIN_ROWS, GEMM_MULADDS // max(1, b.shape[0] * b.shape[1]))
    for start in range(0, a.shape[0], step):
        np.matmul(a[start : start + step], b, out=out[start : start + step])
    return out


def csr_rows_product(indptr, indices, data, W, out, accumulate=False):
    """``out = A @ W`` (or ``out += A @ W`` with ``accumulate``) for the CSR rows ``A``
    given by ``(indptr, indices, data)``, in place.

    ``indptr`` starts at 0 (``len(out) + 1`` entries), ``data`` and ``W`` are float64, ``W``
    and ``out`` C-contiguous. SciPy's own kernel is called on the arrays as they are: a
    ``csr_matrix`` built on slices of a larger matrix would copy them (SciPy's
    constructor copies a view of a much larger array, to free memory), an extra pass
    over the entries of every slice and its memory (+43% peak in ``predict_proba`` on 20
    Newsgroups: :mod:`bayesnb.core._private_api`, the one place that names the private
    kernel). Where SciPy lacks it, the public product.
    """
    return _private_api.csr_rows_product(indptr, indices, data, W, out, accumulate)


def csr_rows_transposed_product(indptr, indices, data, Y, out):
    """``out += A.T @ Y`` for the CSR rows ``A`` given by ``(indptr, indices, data)``, in place.

    ``indptr`` starts at 0 (``len(Y) + 1`` entries); ``data``, ``Y`` and ``out`` (shape
    ``(n_features, Y.shape[1])``) are float64, ``Y`` and ``out`` C-contiguous. The rows of
    ``A`` are the columns of ``A.T`` in compressed-column form: SciPy's column-major kernel
    reads the arrays as they are, in one pass over the entries (no transpose is built, and
    no copy of the slices: :mod:`bayesnb.core._private_api`).
    """
    return _private_api.csr_rows_transposed_product(indptr, indices, data, Y, out)


# Non-float64 values (integer counts) are converted for the product this many at a time.
_CONVERT_BLOCK = 1 << 20


def summed(X):
    r"""A CSR matrix with each (row, column) stored once: ``X`` itself where it already is.

    Terms that are not additive in a count (:math:`\log x!`, the rising factorial of the
    Dirichlet-multinomial, Pólya statistics) need each :math:`x_{ij}` whole, so duplicate
    entries of a non-canonical matrix are summed first, on a copy (the caller's matrix is
    never altered). Whether there are any is found without sorting, in one pass over
    the indices (:func:`_repeated_entries`): unsorted indices are common (a sparse
    product's output; ``CountVectorizer``'s rows, in order of first occurrence). Dense
    input is returned as it is. Booleans and values narrower than 64 bits are summed as
    int64 (float64 for floats), as the products read them.

    Parameters
    ----------
    X : ndarray or scipy sparse matrix of shape (n_samples, n_features)

    Returns
    -------
    ndarray or CSR matrix of shape (n_samples, n_features)
    """
    if not sp.issparse(X):
        return X
    X = X.tocsr()
    if X.has_sorted_indices and X.has_canonical_format:
        return X
    if not _repeated_entries(X):
        return X
    data = X.data
    if data.dtype.kind == "b" or data.dtype.itemsize < 8:
        # Summed in a type that holds the sums, as the products and totals read them
        # (each stored value a number: two stored Trues are 2, two int8 100s are 200);
        # SciPy sums in the values' own type (booleans by OR, narrow integers wrapping).
        data = data.astype(np.float64 if data.dtype.kind == "f" else np.int64)
    else:
        data = data.copy()
    X = sp.csr_matrix((data, X.indices.copy(), X.indptr.copy()), shape=X.shape)
    X.sum_duplicates()
    return X


def _repeated_entries(X):
    """Whether a CSR matrix stores some (row, column) more than once, without sorting it.

    Sorted rows: two equal neighbours. Otherwise the column-major form
    (:func:`repeated_entries`).
    """
    if X.has_sorted_indices:
        return _repeats(X.indices, X.indptr)
    if repeated_entries_checkable(X):
        return repeated_entries(X)
    _check_index_range(X.indices, X.shape[1])
    C = sp.csr_matrix((np.ones(X.nnz, dtype=np.bool_), X.indices, X.indptr), shape=X.shape, copy=False).tocsc()
    return _repeats(C.indices, C.indptr)


# check_sparse_structure reads the index arrays in blocks of this many entries: a block's
# minimum and maximum (or its neighbour comparison) are taken while it is in cache, so the
# arrays are read from memory once, with temporaries of a block.
_STRUCTURE_BLOCK = 1 << 16


def check_sparse_structure(X):
    """Refuse a sparse matrix whose index arrays contradict each other, before any kernel reads them.

    SciPy checks the structure only on request, and its C++ routines (products,
    conversions) trust it: a negative column index is read as another column (a wrong
    answer), an ``indptr`` past the stored entries reads out of bounds (SIGSEGV), a
    decreasing one fails deep inside (``RuntimeError``). For CSR and CSC: ``indptr`` of
    ``n_major + 1`` integers, starting at 0, never decreasing, ending at most at the
    number of stored entries; every index of an entry in ``0 .. n_minor - 1``. For COO:
    every row and column in range. Other formats (LIL, DOK, DIA, BSR) are built by SciPy
    from checked Python structures, or converted by it, and pass as they are.

    One pass over ``indptr`` and the stored indices, block by block: no copy.

    Parameters
    ----------
    X : any
        Only sparse matrices and arrays are read.

    Returns
    -------
    X, or where ``indptr`` ends before the last stored entry (SciPy's own operations may
    leave spare storage) a matrix of views without that spare tail.

    Raises
    ------
    ValueError
        Naming the inconsistency.
    """
    if not sp.issparse(X):
        return X
    fmt = X.format
    if fmt == "coo":
        for name, idx, bound in (("row", X.row, X.shape[0]), ("column", X.col, X.shape[1])):
            if idx.shape != X.data.shape:
                raise ValueError(f"corrupt sparse COO matrix: {idx.size} {name} indices for {X.data.size} values")
            _check_block_range(idx, bound, f"{name} index", "COO")
        return X
    if fmt not in ("csr", "csc"):
        return X
    major_name, minor_name = ("row", "column") if fmt == "csr" else ("column", "row")
    n_major, n_minor = X.shape if fmt == "csr" else X.shape[::-1]
    indptr, indices, data = X.indptr, X.indices, X.data
    label = fmt.upper()
    if indptr.ndim != 1 or indptr.shape[0] != n_major + 1 or indptr.dtype.kind not in "iu":
        raise ValueError(
            f"corrupt sparse {label} matrix of shape {X.shape}: indptr must hold {n_major + 1} integers "
            f"(one per {major_name}, plus one), it holds {indptr.size} of dtype {indptr.dtype}"
        )
    if indices.ndim != 1 or indices.dtype.kind not in "iu" or data.ndim != 1 or indices.shape[0] != data.shape[0]:
        raise ValueError(
            f"corrupt sparse {label} matrix: {indices.size} indices (dtype {indices.dtype}) for {data.size} stored values"
        )
    start, end = int(indptr[0]), int(indptr[-1])
    if start != 0:
        raise ValueError(f"corrupt sparse {label} matrix: indptr must start at 0, it starts at {start}")
    if not 0 <= end <= indices.shape[0]:
        raise ValueError(
            f"corrupt sparse {label} matrix: indptr ends at {end}, but the matrix stores {indices.shape[0]} entries"
        )
    for s in range(0, n_major, _STRUCTURE_BLOCK):
        block = indptr[s : s + _STRUCTURE_BLOCK + 1]
        down = block[1:] < block[:-1]
        if down.any():
            k = s + int(np.argmax(down))
            raise ValueError(
                f"corrupt sparse {label} matrix: indptr decreases at {major_name} {k} "
                f"({int(indptr[k])} then {int(indptr[k + 1])}); it must never decrease"
            )
    _check_block_range(indices[:end], n_minor, f"{minor_name} index", label)
    if end < indices.shape[0]:
        X = type(X)((data[:end], indices[:end], indptr), shape=X.shape, copy=False)
    return X


def _check_block_range(idx, bound, what, label):
    """Raise unless every value of the 1-d integer array ``idx`` is in ``0 .. bound - 1`` (block by block)."""
    if idx.dtype.kind not in "iu":
        raise ValueError(f"corrupt sparse {label} matrix: {what} of dtype {idx.dtype}, not integers")
    for s in range(0, idx.shape[0], _STRUCTURE_BLOCK):
        block = idx[s : s + _STRUCTURE_BLOCK]
        lo, hi = block.min(), block.max()
        if lo < 0 or hi >= bound:
            bad = int(lo) if lo < 0 else int(hi)
            raise ValueError(
                f"corrupt sparse {label} matrix: a {what} of {bad} is outside 0..{bound - 1}"
            )


def _check_index_range(indices, n_columns):
    # SciPy checks index ranges only on request; the counters index arrays by them.
    if indices.size and not (0 <= int(indices.min()) and int(indices.max()) < n_columns):
        raise ValueError(f"sparse matrix has a column index outside 0..{n_columns - 1} (corrupt indices)")


def repeated_entries_checkable(X):
    """Whether :func:`repeated_entries` can read the CSR matrix ``X`` as it is, blocks of
    rows on threads (its two index arrays share a dtype: nothing is converted)."""
    return X.indptr.dtype == X.indices.dtype


def repeated_entries(X, r0=0, r1=None):
    """Whether rows ``r0:r1`` of the CSR matrix ``X`` store some (row, column) more than
    once, without sorting them.

    The rows' positions in column-major form (SciPy's public ``tocsc`` of a one-byte-valued
    matrix on views of the rows' index arrays: a counting sort that moves a byte per entry
    instead of the values), in which the rows of each column come in order, so a repeated
    entry is two equal neighbours. Blocks of rows can be checked on threads; the scratch
    is the block's entries. A column index out of range is refused (``ValueError``), and
    so are index arrays of two dtypes (each block would convert them): needs
    :func:`repeated_entries_checkable`.
    (SciPy's private product counter did this 10% faster in ``MultinomialNB().fit`` on 20
    Newsgroups and 1% in its exact predictive, short of the 20% that would earn a private
    name: :mod:`bayesnb.core._private_api`.)
    """
    if not repeated_entries_checkable(X):
        raise ValueError("repeated_entries needs index arrays of one dtype (see repeated_entries_checkable)")
    r1 = X.shape[0] if r1 is None else r1
    s, e = int(X.indptr[r0]), int(X.indptr[r1])
    n_columns = X.shape[1]
    _check_index_range(X.indices[s:e], n_columns)
    if e - s < 2:
        return False
    indptr = X.indptr[r0 : r1 + 1] - s if s else X.indptr[r0 : r1 + 1]
    C = sp.csr_matrix((np.ones(e - s, dtype=np.bool_), X.indices[s:e], indptr), shape=(r1 - r0, n_columns), copy=False).tocsc()
    return _repeats(C.indices, C.indptr)


def _repeats(minor, indptr):
    """Whether two neighbours within one slice ``indptr[k]:indptr[k+1]`` of ``minor`` are equal."""
    same = minor[1:] == minor[:-1]
    if not same.any():
        return False
    starts = indptr[1:-1]
    same[starts[(starts > 0) & (starts < minor.size)] - 1] = False
    return bool(same.any())


def matmul(X, W):
    """``X @ W`` as a dense float64 ndarray, for dense or sparse ``X`` and dense ``W``.

    For a CSR ``X`` with integer (or other non-float64) values, scipy would convert all
    of them to a float64 copy first; here slices of rows are converted and multiplied
    one after the other, so the scratch stays at ``_CONVERT_BLOCK`` values. With
    :func:`num_threads` > 1 a large CSR ``X`` is cut into slices of rows multiplied on
    that many threads (scipy's kernel releases the GIL). Each output row is computed
    exactly as in the one-piece product (same entries, same order): bit-identical.

    Where ``X`` or ``W`` is traced (:func:`is_traced`) the product is ``jax.numpy``'s
    (dense ``X`` only: a scipy sparse matrix cannot meet a tracer).
    """
    if is_traced(X, W):
        return jnp.matmul(dense_jax(X), jnp.asarray(W, dtype=jnp.float64))
    if not (sp.issparse(X) and X.format == "csr" and np.ndim(W) == 2):
        return np.asarray(X @ W, dtype=np.float64)
    workers = num_threads() if X.nnz >= _PARALLEL_MIN_NNZ else 1
    convert = X.dtype != np.float64
    if workers == 1 and (not convert or X.nnz <= _CONVERT_BLOCK):
        return np.asarray(X @ W, dtype=np.float64)
    W = np.ascontiguousarray(W, dtype=np.float64)
    n = X.shape[0]
    # Slices with about equal numbers of entries: a few per thread (a thread slowed
    # down by other processes then takes fewer), and at most _CONVERT_BLOCK if converted.
    slices = max(workers * _SLICES_PER_THREAD if workers > 1 else 1, -(-X.nnz // _CONVERT_BLOCK) if convert else 1)
    blocks = entry_blocks(X.indptr, max(1, -(-X.nnz // slices)))
    out = np.empty((n, W.shape[1]), dtype=np.float64)

    def part(r0, r1):
        s, e = X.indptr[r0], X.indptr[r1]
        data = X.data[s:e].astype(np.float64, copy=False)
        csr_rows_product(X.indptr[r0 : r1 + 1] - s, X.indices[s:e], data, W, out[r0:r1])

    if workers == 1:
        for r0, r1 in blocks:
            part(r0, r1)
        return out
    map_threads(lambda rb: part(*rb), blocks)
    return out


def row_counts(mask, indptr):
    """Number of ``True`` entries of ``mask`` in each CSR row delimited by ``indptr``.

    One ``reduceat`` over the stored entries; no per-entry row index or cumulative sum
    (either would be an extra ``nnz``-long integer array).
    """
    n = indptr.shape[0] - 1
    counts = np.zeros(n, dtype=np.intp)
    lengths = np.diff(indptr)
    nonempty = lengths > 0
    if nonempty.any():
        # reduceat reads a repeated start as one element, not as an empty segment: only
        # the starts of non-empty rows are given (each then runs to the next one).
        counts[nonempty] = np.add.reduceat(mask, indptr[:-1][nonempty], dtype=np.intp)
    return counts


def row_sums(X):
    """Row totals of dense or sparse ``X`` as a 1-d float64 array."""
    if sp.issparse(X) and X.format == "csr":
        return csr_row_sums(X.indptr, X.data, np.empty(X.shape[0]))
    return np.asarray(X.sum(axis=1), dtype=np.float64).ravel()


def csr_row_sums(indptr, data, out):
    """Totals of the CSR rows given by ``indptr`` (offsets into ``data``, from any start)
    written into ``out`` (float64, ``len(indptr) - 1``)."""
    lengths = np.diff(indptr)
    nonempty = lengths > 0
    out[~nonempty] = 0.0
    if nonempty.any():
        # A vectorised segment sum over the stored values (scipy's ``sum(axis=1)`` is a
        # sparse mat-vec product with a vector of ones: slower, same numbers). reduceat
        # reads a repeated start as one element: only non-empty rows are given.
        s = indptr[0]
        # A total past the float64 range is inf, which the predictives refuse by name.
        with np.errstate(over="ignore"):
            out[nonempty] = np.add.reduceat(data[s : indptr[-1]], indptr[:-1][nonempty] - s)
    return out


def frozen(tree):
    """``tree`` with each NumPy leaf that owns its memory made read-only, in place.

    For parameters the library derived and keeps (an estimator's point estimates): an
    attempt to modify one in place then raises instead of going unnoticed, and
    :class:`ParamCache` need not checksum them on every call. Leaves that are views of
    other arrays (whose owners may be shared) are left as they are, and checksummed.
    """
    for leaf in jax.tree_util.tree_leaves(tree):
        if isinstance(leaf, np.ndarray) and leaf.base is None:
            leaf.setflags(write=False)
    return tree


class ParamCache:
    """Arrays derived from parameter matrices, reused while those matrices are unchanged.

    Predictions call the pure functions of this package with the same parameter arrays
    again and again (an estimator keeps its posterior and point estimates); deriving the
    layout or the transform a sparse product needs (a transposed copy, ``log a``, ...) on
    every call costs as much as the product itself for a batch of a few thousand rows.

    A source array is recognised by the object owning its memory (held by a weak
    reference, so the cache never keeps parameters alive), its address, shape, strides
    and a checksum of its bits (so an array modified in place is never served a stale
    value), except where that owner is read-only (:func:`frozen`): its bits cannot
    change. Holds the ``size`` most recently used entries.
    """

    def __init__(self, size=2):
        self._size = size
        self._entries = []  # [(owner weakref, signature, value)], most recent last
        self._lock = threading.Lock()

    @staticmethod
    def _signature(arr):
        arr = np.asarray(arr)
        owner = arr
        while isinstance(owner, np.ndarray) and owner.base is not None:
            owner = owner.base
        unsigned = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}.get(arr.dtype.itemsize)
        if unsigned is None or arr.dtype.hasobject:
            raise TypeError("no checksum for this dtype")
        # The sum of the bits (wrapping): any change of a single value changes it, NaN
        # and infinities included. Memory whose owning array is read-only cannot change
        # (short of making it writeable again: see frozen()), so it is not read again:
        # the checksum is a pass over the parameters, 3 ms for BernoulliNB's on 20
        # Newsgroups, a tenth of the prediction.
        if isinstance(owner, np.ndarray) and not owner.flags.writeable and not arr.flags.writeable:
            checksum = -1
        else:
            checksum = int(np.sum(arr.view(unsigned), dtype=np.uint64)) if arr.size else 0
        interface = arr.__array_interface__
        return owner, (interface["data"][0], arr.shape, interface["strides"], arr.dtype.str, checksum)

    def _forget(self, _ref):
        # Called when the owner of a cached source dies: its entries go at once, not at the
        # next get. A posterior draw's derived arrays (8 MiB of transposed log-probabilities
        # at 20 classes x 50,000 words) would otherwise stay alive while the next draw is
        # sampled, and after the last draw for as long as the process lives. No lock: this
        # may run inside get (a garbage collection under the lock); rebinding the list is
        # atomic, and an entry a concurrent get keeps is dropped by its next call.
        self._entries = [e for e in self._entries if all(r is None or r() is not None for r in e[0])]

    def get(self, sources, tag, make):
        """``make()``'s value for these ``sources`` (a tuple of arrays or None) and ``tag``."""
        try:
            sigs = [None if a is None else self._signature(a) for a in sources]
            owners = [None if sig is None else weakref.ref(sig[0], self._forget) for sig in sigs]
        except (TypeError, ValueError):  # no weak reference to the owner, or no checksum
            return make()
        key = (tag, tuple(None if sig is None else sig[1] for sig in sigs))
        alive = tuple(None if sig is None else sig[0] for sig in sigs)
        with self._lock:
            # A snapshot: _forget may rebind the list meanwhile (see there); the hit is
            # moved to the end of a new list, never by an index into a list that changed.
            entries = self._entries
            for entry in entries:
                refs, k, value = entry
                if k == key and all(o is None if r is None else r() is o for r, o in zip(refs, alive)):
                    self._entries = [e for e in entries if e is not entry] + [entry]
                    return value
        # Entries whose parameters are gone are let go before the new value is made, not
        # after: a posterior draw replaced by the next one (blocks of draws, scored one
        # after the other) would otherwise keep its derived arrays alive while the next
        # draw's are made, one more draw's worth of memory at the peak.
        with self._lock:
            self._entries = [e for e in self._entries if all(r is None or r() is not None for r in e[0])]
        value = make()
        with self._lock:
            self._entries = [e for e in self._entries if all(r is None or r() is not None for r in e[0])]
            self._entries.append((owners, key, value))
            del self._entries[: -self._size]
        return value


_PREPARED = ParamCache(size=2)


def _split(log_w):
    """Finite part and 0/1 indicator of the ``-inf`` entries (None when there are none)."""
    log_w = np.asarray(log_w, dtype=np.float64)
    # One reduction settles the common case, no zero probability at all; the masked copy
    # and the indicator matrix (and a second product with it) are then skipped.
    if log_w.size == 0 or log_w.min() > -np.inf:
        return log_w, None
    impossible = np.isneginf(log_w)
    return np.where(impossible, 0.0, log_w), impossible.astype(np.float64)


def _prepare(log_w, log_w_off):
    """The weights of :func:`log_linear` in the (features, classes) layout of its products."""
    fin, inf = _split(log_w)
    offset = hit_offset = None
    if log_w_off is not None:
        fin_off, inf_off = _split(log_w_off)
        fin = fin - fin_off
        offset = fin_off.sum(axis=1)
        if inf_off is not None:
            hit_offset = inf_off.sum(axis=1)
            inf = -inf_off if inf is None else inf - inf_off
    if inf is not None and not inf.any():
        inf = None
    # C-contiguous (features, classes): what scipy's sparse product reads, which would
    # otherwise copy a transposed view on every call.
    fin_t = np.ascontiguousarray(fin.T)
    inf_t = None if inf is None else np.ascontiguousarray(inf.T)
    return fin_t, offset, inf_t, hit_offset


def dense_jax(X):
    """Dense ``X`` as a float64 JAX array, for the traced paths (sparse ``X`` is refused).

    Raises
    ------
    TypeError
        If ``X`` is a scipy sparse matrix.
    """
    if sp.issparse(X):
        raise TypeError(
            "sparse X has no traced (jax.jit / jax.grad / jax.vmap) path: pass a dense "
            "array, or call with concrete parameters (the CPU path takes sparse X)"
        )
    return jnp.asarray(X, dtype=jnp.float64)


def _split_jax(log_w):
    """:func:`_split` in ``jax.numpy``: finite part and 0/1 indicator of the ``-inf`` entries."""
    log_w = jnp.asarray(log_w, dtype=jnp.float64)
    impossible = jnp.isneginf(log_w)
    return jnp.where(impossible, 0.0, log_w), impossible.astype(jnp.float64)


def _log_linear_jax(X, log_w, bias, log_w_off):
    """:func:`log_linear` traced: the CPU path's formula, with ``jax.numpy``, on dense ``X``."""
    X = dense_jax(X)
    fin, inf = _split_jax(log_w)
    if log_w_off is None:
        out = X @ fin.T
        hits = X @ inf.T
    else:
        fin_off, inf_off = _split_jax(log_w_off)
        out = X @ (fin - fin_off).T + fin_off.sum(axis=1)
        hits = X @ (inf - inf_off).T + inf_off.sum(axis=1)
    out = jnp.where(hits > 0, -jnp.inf, out)
    if bias is not None:
        out = out + jnp.asarray(bias, dtype=jnp.float64)
    return out


def sum_log_rising_jax(a, X):
    r""":math:`\sum_j \log\Gamma(a_{cj} + x_{ij}) - \log\Gamma(a_{cj})`, shape (n_samples, n_classes), in ``jax.numpy``.

    The traced (``jax.jit`` / ``jax.grad``) path of the Dirichlet-multinomial and
    negative-binomial predictives, over dense ``X`` (a (rows, classes, features) sum;
    the CPU path, ``_rising.sum_log_rising``, works on the non-zeros of sparse data).

    Parameters
    ----------
    a : array of shape (n_classes, n_features)
        Positive.
    X : dense array of shape (n_samples, n_features)
        Non-negative.
    """
    from bayesnb.core._special import log_rising_factorial

    a = jnp.asarray(a, dtype=jnp.float64)
    return jnp.sum(log_rising_factorial(a[None, :, :], dense_jax(X)[:, None, :]), axis=-1)


def log_linear(X, log_w, bias=None, log_w_off=None):
    r"""Compute :math:`X \log W^\top + b` with :math:`0 \cdot (-\infty) := 0`.

    With ``log_w_off`` the data are binary and the product is the Bernoulli form
    :math:`\sum_j x_j \log W_{cj} + (1 - x_j) \log W^{\mathrm{off}}_{cj}`, computed as
    :math:`X (\log W - \log W^{\mathrm{off}})^\top + \sum_j \log W^{\mathrm{off}}_{cj}`
    so that sparse data stay sparse.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        Non-negative values (0/1 when ``log_w_off`` is given).
    log_w : ndarray of shape (n_classes, n_features)
        Log weights, possibly ``-inf``.
    bias : ndarray of shape (n_classes,), optional
    log_w_off : ndarray of shape (n_classes, n_features), optional
        Log weights of the absent value of binary features.

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
        ``-inf`` exactly where a row has a feature value of probability zero.
        A JAX array where an argument is traced (:func:`is_traced`; dense ``X`` only).
    """
    if is_traced(X, log_w, bias, log_w_off):
        return _log_linear_jax(X, log_w, bias, log_w_off)
    prepared = _PREPARED.get((log_w, log_w_off), "log_linear", lambda: _prepare(log_w, log_w_off))
    fin_t, offset, inf_t, hit_offset = prepared
    out = matmul(X, fin_t)
    if offset is not None:
        out += offset
    if inf_t is not None:
        hits = matmul(X, inf_t)
        if hit_offset is not None:
            hits += hit_offset
        out[hits > 0] = -np.inf
    elif hit_offset is not None and hit_offset.any():
        out[:, hit_offset > 0] = -np.inf
    if bias is not None:
        out += np.asarray(bias, dtype=np.float64)
    return out
