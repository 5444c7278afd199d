"""Counting JAX compilations in a test: one helper for the tests that assert none happen.

JAX reports every backend compilation as a ``.../backend_compile_duration`` monitoring
event, whichever thread compiles, and every program loaded from the on-disk compilation
cache instead (which ``tests/conftest.py`` turns on) as a
``.../cache_retrieval_time_sec`` event: both are a program the path had to build again,
so both are counted. Tests that assert a path compiles nothing first check,
with a planted ``jax.jit``, that the counter sees a compilation (else they could not fail).
"""

from __future__ import annotations

import jax


def count_compiles(fn):
    """Run ``fn()`` and return the number of JAX programs it compiled or loaded from disk.

    Parameters
    ----------
    fn : callable
        Called with no arguments.

    Returns
    -------
    int
    """
    events = []

    def listen(name, duration, **kwargs):
        if name.endswith(("backend_compile_duration", "cache_retrieval_time_sec")):
            events.append(name)

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        fn()
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    return len(events)
