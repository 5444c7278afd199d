"""Where the test suite's time goes: per test, its wall time and JAX's trace, lowering and XLA compile time.

A pytest plugin (issue 41, item 9). JAX reports each stage of building a program as a
monitoring event (``jaxpr_trace_duration``, ``jaxpr_to_mlir_module_duration``,
``backend_compile_duration``); the plugin adds them up per test (setup, call and
teardown together) and, per compiled program, records its cache key (whose prefix is the
jitted function's name) and compile seconds. One JSON-lines file per xdist worker in
``BAYESNB_XLA_PROFILE`` (default ``./xla_profile``); then ``report`` sums them by test
file and by jitted function, and counts the programs compiled by both workers or twice
by one.

    BAYESNB_XLA_PROFILE=/tmp/xp PYTHONPATH=benchmarks python -m pytest -p suite_xla_profile
    python benchmarks/suite_xla_profile.py report /tmp/xp [--top 40]

The examples and command-line tests run in subprocesses, which the plugin does not see:
their time counts as the test's wall time with no compile time.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import time
from pathlib import Path

_state = {"test": None, "acc": None, "key": None, "installed": False}
_files = {}


def _folder():
    return Path(os.environ.get("BAYESNB_XLA_PROFILE", "xla_profile"))


def _on_duration(event, duration, **kwargs):
    acc = _state["acc"]
    if acc is None:
        return
    if event.endswith("backend_compile_duration"):
        acc["compile"] += duration
        acc["programs"] += 1
        if _state["key"] is not None:
            _files["keys"].write(json.dumps({"key": _state["key"], "s": duration, "test": _state["test"]}) + "\n")
            _state["key"] = None
    elif event.endswith("jaxpr_trace_duration"):
        acc["trace"] += duration
    elif event.endswith("jaxpr_to_mlir_module_duration"):
        acc["lower"] += duration


def _install():
    # After the test process's conftest has configured JAX (its on-disk cache folder).
    import jax
    from jax._src import compilation_cache

    jax.monitoring.register_event_duration_secs_listener(_on_duration)
    original = compilation_cache.get_cache_key

    def keyed(*args, **kwargs):
        # The key of the program about to be compiled: its backend compile event follows.
        key = original(*args, **kwargs)
        _state["key"] = key
        return key

    compilation_cache.get_cache_key = keyed
    _state["installed"] = True


def pytest_configure(config):
    folder = _folder()
    folder.mkdir(parents=True, exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    _files["tests"] = open(folder / f"tests_{worker}.jsonl", "a", buffering=1)
    _files["keys"] = open(folder / f"keys_{worker}.jsonl", "a", buffering=1)


def _hookwrapper(fn):
    import pytest

    return pytest.hookimpl(hookwrapper=True)(fn)


@_hookwrapper
def pytest_runtest_protocol(item, nextitem):
    if not _state["installed"]:
        _install()
    _state["test"] = item.nodeid
    _state["acc"] = {"compile": 0.0, "trace": 0.0, "lower": 0.0, "programs": 0}
    start = time.perf_counter()
    yield
    acc = dict(_state["acc"], wall=time.perf_counter() - start, test=item.nodeid)
    _files["tests"].write(json.dumps(acc) + "\n")
    _state["acc"] = None


def report(folder, top=40):
    """Print the sums by test file and by jitted function, and the programs compiled twice."""
    folder = Path(folder)
    rows = [json.loads(line) for f in sorted(folder.glob("tests_*.jsonl")) for line in open(f)]
    wall = sum(r["wall"] for r in rows)
    compiled = sum(r["compile"] for r in rows)
    print(f"{len(rows)} tests, {wall:.0f} s of test time over the workers; XLA compiling {compiled:.0f} s "
          f"({compiled / max(wall, 1e-9):.0%}), tracing {sum(r['trace'] for r in rows):.0f} s, lowering "
          f"{sum(r['lower'] for r in rows):.0f} s, {sum(r['programs'] for r in rows)} programs")
    by_file = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0, 0])
    for r in rows:
        b = by_file[r["test"].split("::")[0]]
        b[0] += r["wall"]
        b[1] += r["compile"]
        b[2] += r["trace"] + r["lower"]
        b[3] += 1
        b[4] += r["programs"]
    print("\nby test file: wall s, XLA compile s, trace + lower s, tests, programs")
    for name, b in sorted(by_file.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"{b[0]:8.1f} {b[1]:8.1f} {b[2]:8.1f} {b[3]:6d} {b[4]:6d}  {name}")
    by_function = collections.defaultdict(lambda: [0, 0.0])
    by_key = collections.defaultdict(lambda: collections.defaultdict(list))
    for f in sorted(folder.glob("keys_*.jsonl")):
        worker = f.stem.split("_", 1)[1]
        for line in open(f):
            k = json.loads(line)
            name = re.sub(r"-[0-9a-f]{20,}$", "", k["key"])
            by_function[name][0] += 1
            by_function[name][1] += k["s"]
            by_key[k["key"]][worker].append(k["s"])
    print("\nby jitted function: compile s, programs")
    for name, (n, s) in sorted(by_function.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"{s:8.1f} {n:6d}  {name}")
    both = [w for w in by_key.values() if len(w) > 1]
    again = [w for w in by_key.values() if any(len(v) > 1 for v in w.values())]
    print(f"\n{len(by_key)} distinct programs; {len(both)} compiled by more than one worker "
          f"({sum(min(sum(v) for v in w.values()) for w in both):.0f} s that one worker could have saved); "
          f"{len(again)} compiled again by the same worker ({sum(sum(sum(v[1:]) for v in w.values()) for w in again):.0f} s)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="sum a profile folder")
    rep.add_argument("folder")
    rep.add_argument("--top", type=int, default=40)
    args = parser.parse_args(argv)
    report(args.folder, args.top)


if __name__ == "__main__":
    main()
