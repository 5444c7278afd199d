"""BLAS threads against one thread for the small L-BFGS-B solves (bayesnb/core/_threads.py).

Times ``scipy.optimize.minimize(method="L-BFGS-B")`` on an 11-parameter problem, the size
of a 10-class calibration map, with the process's default BLAS threads and inside
``bayesnb.core._threads.one_blas_thread``. Run it beside a busy process to see what a
shared machine does (``yes > /dev/null &`` once per core); on an idle machine the two
are close. Prints the median over ``--repeat`` rounds of 100 solves, and the ratio.

Run ``python benchmarks/blas_threads.py [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def solve_many(n=100):
    from scipy.optimize import minimize

    A = np.diag(np.arange(1, 12.0))

    def f(x):
        return 0.5 * x @ A @ x - x.sum(), A @ x - 1.0

    start = time.perf_counter()
    for _ in range(n):
        res = minimize(f, np.zeros(11), jac=True, method="L-BFGS-B", bounds=[(-5, 5)] * 11,
                       options={"ftol": 1e-13, "gtol": 1e-9})
    return (time.perf_counter() - start) / n, res.x


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    from threadpoolctl import threadpool_info

    from bayesnb.core._threads import one_blas_thread

    solve_many(5)  # load the libraries before reading their thread counts
    print("BLAS libraries:", ", ".join(f"{i['internal_api']} ({i['num_threads']} threads)" for i in threadpool_info()
                                       if i["user_api"] == "blas"))
    default, single = [], []
    for _ in range(args.repeat):
        t, x_default = solve_many()
        default.append(t)
        with one_blas_thread():
            t, x_single = solve_many()
        single.append(t)
    assert np.allclose(x_default, x_single, rtol=0, atol=1e-12)
    d, s = statistics.median(default), statistics.median(single)
    print(f"L-BFGS-B, 11 parameters: default threads {d * 1e3:.2f} ms, one thread {s * 1e3:.2f} ms, ratio {d / s:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
