"""``kernels.map_threads``: the calling thread and the pool's threads share one queue of items.

Results come back in item order whatever thread computed them; the caller computes
items itself (so a pool thread that is slow to start holds nothing up); the first
failing item's exception is raised, after the items already started have finished;
calls from inside an item (nested) run without deadlock.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from bayesnb.core import kernels


@pytest.fixture
def two_threads(monkeypatch):
    monkeypatch.setenv("BAYESNB_NUM_THREADS", "2")


def test_results_in_item_order(two_threads):
    rng = np.random.default_rng(0)
    delays = rng.random(40) * 2e-3

    def fn(i):
        time.sleep(delays[i])
        return i * i

    assert kernels.map_threads(fn, range(40)) == [i * i for i in range(40)]


def test_the_caller_takes_items_and_the_pool_helps(two_threads):
    seen = []

    def fn(i):
        seen.append(threading.current_thread().name)
        time.sleep(2e-3)  # both threads get a share
        return i

    kernels.map_threads(fn, range(30))
    main = threading.current_thread().name
    assert main in seen
    assert any(name.startswith(kernels._POOL_PREFIX) for name in seen)


def test_a_stalled_pool_thread_holds_nothing_up(two_threads):
    """Planted stall: the pool's only thread is busy for 0.5 s; the caller does every
    item itself and returns long before, without waiting for the stalled thread."""
    pool = kernels._pool(2)
    gate = threading.Event()
    blockers = [pool.submit(gate.wait, 5.0) for _ in range(pool._max_workers)]
    try:
        start = time.perf_counter()
        names = kernels.map_threads(lambda i: threading.current_thread().name, range(8))
        took = time.perf_counter() - start
    finally:
        gate.set()
        for b in blockers:
            b.result()
    assert set(names) == {threading.current_thread().name}
    assert took < 0.25


def test_the_earliest_failing_item_is_raised_after_started_items_finish(two_threads):
    finished = []

    def fn(i):
        if i in (3, 7):
            time.sleep(5e-3 if i == 3 else 0.0)
            raise ValueError(f"item {i}")
        time.sleep(1e-3)
        finished.append(i)
        return i

    with pytest.raises(ValueError, match="item 3|item 7"):
        kernels.map_threads(fn, range(50))
    # The queue stops after a failure: not every item ran.
    assert len(finished) < 48


def test_a_single_failure_is_the_one_raised(two_threads):
    def fn(i):
        if i == 11:
            raise KeyError("eleven")
        return i

    with pytest.raises(KeyError, match="eleven"):
        kernels.map_threads(fn, range(20))


def test_nested_calls_complete(two_threads):
    def inner(j):
        return j + 1

    def outer(i):
        return sum(kernels.map_threads(inner, range(i)))

    assert kernels.map_threads(outer, range(12)) == [sum(range(1, i + 1)) for i in range(12)]


def test_one_thread_runs_in_the_caller(monkeypatch):
    monkeypatch.setenv("BAYESNB_NUM_THREADS", "1")
    names = kernels.map_threads(lambda i: threading.current_thread().name, range(5))
    assert set(names) == {threading.current_thread().name}


def test_entry_blocks_cover_every_row_once_in_runs_of_about_step_entries():
    import scipy.sparse as sp

    from bayesnb.core.kernels import entry_blocks

    lengths = np.array([3, 0, 0, 7, 1, 1, 20, 0, 2, 2, 2, 0])
    indptr = np.r_[0, np.cumsum(lengths)]
    for step in (1, 4, 10, 1000):
        blocks = entry_blocks(indptr, step)
        assert blocks[0][0] == 0 and blocks[-1][1] == lengths.size
        assert all(b0[1] == b1[0] for b0, b1 in zip(blocks[:-1], blocks[1:]))
        assert all(r1 > r0 for r0, r1 in blocks)
        # the runs start at the rows holding the entries step, 2 step, ...
        row_of_entry = np.repeat(np.arange(lengths.size), lengths)
        starts = {int(r) for r in row_of_entry[np.arange(step, indptr[-1], step)]} - {0}
        assert {r0 for r0, _ in blocks[1:]} == starts
    assert entry_blocks(indptr, 1000) == [(0, lengths.size)]
    assert entry_blocks(sp.csr_matrix((0, 4)).indptr, 5) == []
    assert entry_blocks(sp.csr_matrix((3, 4)).indptr, 5) == [(0, 3)]
