"""One BLAS thread for the small optimisations (L-BFGS-B on a handful of parameters).

SciPy's L-BFGS-B calls BLAS level-1 routines on vectors of a few to a few thousand
entries, thousands of times per fit. On a machine whose cores are busy (a test run, a
grid search, a cluster node shared with other jobs) OpenBLAS hands each such call to its
thread pool and waits for threads that are not scheduled: measured on 2 busy cores, one
11-parameter minimisation took 19-200 ms with OpenBLAS's default threads and 1.8-2.4 ms
with one, the same iterates either way (``python benchmarks/blas_threads.py``).
Nothing in these problems is large enough for a second thread to help, so the solvers
run under :func:`one_blas_thread`, which limits BLAS (not XLA, not the user's other
libraries) for the duration of the call and restores the user's setting after it.
"""

from __future__ import annotations

import contextlib
import functools


@contextlib.contextmanager
def one_blas_thread():
    """Limit the BLAS libraries loaded in this process to one thread inside the block.

    Uses ``threadpoolctl`` (a scikit-learn dependency), which sets and restores the
    limit through each library's own API; where it cannot (a BLAS it does not know)
    the block runs unchanged.

    Yields
    ------
    None
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


def with_one_blas_thread(func):
    """Decorator form of :func:`one_blas_thread`."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with one_blas_thread():
            return func(*args, **kwargs)

    return wrapper
