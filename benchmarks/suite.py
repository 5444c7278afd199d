"""The benchmark suite's registry of sections, its result rows and its summary table.

A *section* is a function ``fn(ctx)`` registered with :func:`section`; it measures
something and returns a list of :class:`Row`. ``run_all.py`` imports the modules listed
in its ``SECTION_MODULES`` (each registers its sections on import) and runs every
section, or those named with ``--only``. To add a section (e.g. evidence optimisation or
the MCMC cross-check), write in any such module::

    from suite import Row, section, timed

    @section("evidence", "alpha by evidence maximisation vs a grid search")
    def evidence(ctx):
        t = timed(lambda: ..., lambda: ..., ctx.repeat)          # sklearn-side, bayesnb
        return [Row("evidence", "20ng", "MultinomialNB", "optimise alpha", t)]

and, for a new module, add its name to ``SECTION_MODULES`` in ``run_all.py``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_discrete import measure_memory, time_pair  # noqa: E402

__all__ = ["Row", "Context", "SECTIONS", "section", "timed", "memory", "print_table"]


@dataclass
class Context:
    """What every section gets: the run's options."""

    quick: bool
    repeat: int
    memory: bool = True
    notes: list = field(default_factory=list)


@dataclass
class Row:
    """One measured operation.

    ``timing`` is what :func:`timed` returns (``sk``, ``bn``, ``floor`` medians in
    seconds, ``bn_first`` the first bayesnb call); ``sk``/``floor`` may be None where
    there is no scikit-learn counterpart or no plain version. ``memory`` is
    ``((sk_peak, sk_rss), (bn_peak, bn_rss))`` in MiB, or None.
    """

    section: str
    data: str
    estimator: str
    operation: str
    timing: dict
    memory: tuple | None = None
    note: str = ""


@dataclass
class Section:
    name: str
    description: str
    fn: Callable


SECTIONS: dict[str, Section] = {}


def section(name, description):
    """Register ``fn(ctx) -> list[Row]`` as a section of the suite."""

    def register(fn):
        if name in SECTIONS:
            raise ValueError(f"benchmark section {name!r} registered twice")
        SECTIONS[name] = Section(name, description, fn)
        return fn

    return register


def timed(sk_fn, bn_fn, repeat, floor_fn=None):
    """Interleaved medians of scikit-learn (or None), bayesnb and the plain version (or None)."""
    if sk_fn is None:
        t = time_pair(lambda: None, bn_fn, repeat, floor_fn)
        t["sk"] = t["sk_first"] = None
        return t
    return time_pair(sk_fn, bn_fn, repeat, floor_fn)


def memory(ctx, sk_fn, bn_fn):
    """Peak memory of one call of each (see bench_discrete.measure_memory), if asked for."""
    if not ctx.memory:
        return None
    sk = measure_memory(sk_fn) if sk_fn is not None else (None, None)
    return sk, measure_memory(bn_fn)


def _f(v, fmt, width):
    return f"{'-':>{width}}" if v is None else format(v, fmt).rjust(width)


def print_table(rows, out=sys.stdout):
    """The summary table (markdown): ratios first, then seconds and memory."""
    cols = [
        ("section", 12), ("data", 12), ("estimator", 23), ("operation", 30), ("sk/bn", 6), ("plain/bn", 8),
        ("sklearn s", 9), ("bayesnb s", 9), ("plain s", 8), ("bn 1st s", 8), ("1st/steady", 10),
        ("sk MiB", 7), ("bn MiB", 7),
    ]
    print("| " + " | ".join(f"{name:<{w}}" for name, w in cols) + " |", file=out)
    print("|" + "|".join("-" * (w + 2) for _, w in cols) + "|", file=out)
    for r in rows:
        t = r.timing
        sk, bn, fl = t.get("sk"), t["bn"], t.get("floor")
        (sk_mem, _), (bn_mem, _) = r.memory if r.memory else ((None, None), (None, None))
        cells = [
            f"{r.section:<12}", f"{r.data:<12}", f"{r.estimator:<23}", f"{r.operation:<30}",
            _f(None if sk is None else sk / bn, ".2f", 6), _f(None if fl is None else fl / bn, ".2f", 8),
            _f(sk, ".3f", 9), _f(bn, ".3f", 9), _f(fl, ".3f", 8), _f(t["bn_first"], ".3f", 8),
            _f(t["bn_first"] / bn if bn > 0 else None, ".1f", 10), _f(sk_mem, ".1f", 7), _f(bn_mem, ".1f", 7),
        ]
        print("| " + " | ".join(cells) + " |", file=out)
