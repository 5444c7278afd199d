"""The on-disk cache of XLA programs the test processes share is locked (tests/conftest.py).

Two xdist workers and their subprocesses read and write one folder; JAX writes an entry
in place, so without its file lock a process could read an entry the other is still
writing (a warning, and an error in the tests that turn warnings into errors).
"""

from __future__ import annotations

import os
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest


def test_the_program_cache_the_test_processes_share_is_locked():
    folder = os.environ.get("JAX_COMPILATION_CACHE_DIR")
    if folder is None or not Path(folder).name.startswith("bayesnb-tests-xla-"):
        pytest.skip("this run has no cache of conftest's (the caller set the folder, or filelock is not installed)")
    assert int(os.environ["JAX_COMPILATION_CACHE_MAX_SIZE"]) > 0  # a limit is what makes JAX lock

    # A program no other test compiles: its lookup in the cache takes the lock.
    jax.jit(lambda x: jnp.cumsum(jnp.sin(x) * 3.25)[::-1])(jnp.arange(37.0)).block_until_ready()
    assert (Path(folder) / ".lockfile").exists()
