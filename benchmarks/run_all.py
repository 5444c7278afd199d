"""Run the whole benchmark suite and print one table of ratios against scikit-learn.

Usage, from the repository root with bayesnb installed (``pip install -e ".[test]"``)::

    python benchmarks/run_all.py            # full sizes (about 14 minutes on 2 idle cores)
    python benchmarks/run_all.py --quick    # small sizes, a smoke run (about 2 minutes)
    python benchmarks/run_all.py --only discrete,categorical --repeat 7
    python benchmarks/run_all.py --list

Every number in the table is measured in this run, scikit-learn, bayesnb and a plain
NumPy/SciPy implementation of the same computation interleaved call by call, so the
ratios (``sk/bn``: scikit-learn time / bayesnb time, ``plain/bn`` likewise; > 1 means
bayesnb is faster) stay fair on a loaded machine. ``bn 1st s`` is bayesnb's first call
(JAX compilation for a new shape bucket, per-model caches); ``1st/steady`` its ratio to
the steady-state median. Memory: ``tracemalloc`` peak of one call, MiB. The header says
which device JAX computes on; nothing here needs a GPU, and the suite runs unchanged
where JAX sees one.

Sections are registered in ``sections.py`` (see ``suite.py`` to add one); the existing
``bench_discrete.py`` and ``bench_gaussian.py`` are reused as the discrete and Gaussian
sections and still run on their own.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import suite  # noqa: E402

# Modules whose import registers sections, in the order they run.
SECTION_MODULES = ["sections", "sections_bayes", "real_corpora", "draws_memory"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    parser.add_argument("--only", default=None, help="comma-separated section names (see --list)")
    parser.add_argument("--repeat", type=int, default=None, help="timed calls after the first (default 5; 2 with --quick)")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory measurements (faster)")
    parser.add_argument("--list", action="store_true", help="list the sections and exit")
    args = parser.parse_args(argv)
    for name in SECTION_MODULES:
        importlib.import_module(name)
    if args.list:
        for s in suite.SECTIONS.values():
            print(f"{s.name:<16} {s.description}")
        return 0
    chosen = list(suite.SECTIONS) if args.only is None else [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in suite.SECTIONS]
    if unknown:
        parser.error(f"unknown section(s) {unknown}; choose from {', '.join(suite.SECTIONS)}")
    repeat = args.repeat if args.repeat is not None else (2 if args.quick else 5)
    ctx = suite.Context(quick=args.quick, repeat=repeat, memory=not args.no_memory)

    import bench_discrete

    bench_discrete.describe_machine()
    print(f"repeats: {repeat} timed calls after one first call, interleaved; sections: {', '.join(chosen)}")
    rows = []
    started = time.perf_counter()
    for name in chosen:
        print(f"\n=== {name}: {suite.SECTIONS[name].description}", flush=True)
        t = time.perf_counter()
        rows.extend(suite.SECTIONS[name].fn(ctx))
        print(f"  ({time.perf_counter() - t:.0f}s)", flush=True)
    load = os.getloadavg() if hasattr(os, "getloadavg") else ()
    print(f"\nSummary ({time.perf_counter() - started:.0f}s; load average now {tuple(round(x, 2) for x in load)}):")
    print("ratios: sk/bn = scikit-learn time / bayesnb time, plain/bn = plain NumPy/SciPy time / bayesnb time (> 1: bayesnb faster);")
    print("seconds are medians of the repeats; MiB = tracemalloc peak of one call\n")
    suite.print_table(rows)
    for r in rows:
        if r.note:
            print(f"note ({r.section}, {r.data}, {r.estimator}, {r.operation}): {r.note}")
    for note in ctx.notes:
        print(f"note: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
