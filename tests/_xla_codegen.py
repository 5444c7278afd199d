"""Which XLA:CPU code generator the test suite compiles with (used by ``tests/conftest.py`` and ``.ci/run``).

Why: in a profile of the whole suite (2026-12-04, jax 0.10.2, two workers, JAX's
monitoring events), XLA's backend compile was 774 of the 1,975 worker-seconds, most of it
NUTS programs (3-10 s each) and the evidence's gradients and Hessians, compiled once per
model and data shape. XLA:CPU's MLIR fusion emitters, the default, take about twice as
long to compile those programs as its older emitters (``--xla_cpu_use_fusion_emitters=false``);
the programs, the HLO XLA compiles, are the same. Four NUTS- and evidence-heavy files took
143 s instead of 186 s with the flag; the whole suite 864 s instead of 1,008 s
(1,610 worker-seconds instead of 1,895), on the same machine the same evening.

What it does not change: every check and its tolerance; which operations run (the flag
selects how XLA lowers a fusion to machine code). Results may differ from the default
code generator in the last bits of a sum, which every test already allows for (issue 41
item 8: no bit-for-bit assertion across paths whose summation order can change); a NUTS
run's draws then differ as draws of another seed would.

Where it is not used: when the caller set ``XLA_FLAGS`` with this option; when
``BAYESNB_TESTS_DEFAULT_XLA_CODEGEN`` is set (XLA's default code generator, for a run that
must see exactly what users run: CI's second run, Python 3.12+ with arviz 1.x, does);
when JAX was imported first (XLA has read its flags); and when the installed jaxlib does
not know the option (XLA aborts a process on an unknown flag, so a fresh interpreter tries
it first). XLA has retired them: jaxlib 0.12 (Python 3.12 and later; CI's second run)
aborts on the option, so there the suite compiles with the default code generator and
takes the time it took before. Python 3.11's newest jax is 0.10.2, which has them.

Run as a script, it prints the ``XLA_FLAGS`` value this choice gives (``.ci/run`` exports
it, so that the documentation build runs the examples in the test run's environment and
finds their results in ``BAYESNB_DOCS_CACHE``, whose key includes the ``XLA_*`` variables).
"""

from __future__ import annotations

import os
import subprocess
import sys

#: XLA:CPU's older fusion emitters: the same HLO programs, compiled in about half the time.
FAST_COMPILE_FLAG = "--xla_cpu_use_fusion_emitters=false"
#: Set (to anything but "0") to run the suite with XLA's default code generator.
DEFAULT_CODEGEN_VARIABLE = "BAYESNB_TESTS_DEFAULT_XLA_CODEGEN"
#: Set once the flag has been tried, whatever the answer: xdist's workers and the examples'
#: subprocesses inherit it and do not try again.
PROBED_VARIABLE = "BAYESNB_TESTS_XLA_PROBED"

_PROBE = "import jax.numpy as jnp; jnp.ones(3).sum().block_until_ready()"


def _jaxlib_takes(flags):
    """Whether a fresh interpreter starts JAX's CPU backend with ``XLA_FLAGS=flags``."""
    try:
        return subprocess.run([sys.executable, "-c", _PROBE], env={**os.environ, "XLA_FLAGS": flags},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def fast_cpu_compiles():
    """Add :data:`FAST_COMPILE_FLAG` to ``os.environ["XLA_FLAGS"]`` where this module's docstring allows.

    Returns
    -------
    bool
        Whether the flag is in ``XLA_FLAGS`` now.
    """
    flags = os.environ.get("XLA_FLAGS", "")
    if ("jax" in sys.modules or os.environ.get(DEFAULT_CODEGEN_VARIABLE, "0") != "0"
            or "xla_cpu_use_fusion_emitters" in flags or os.environ.get(PROBED_VARIABLE)):
        # Too late, asked not to, the caller's choice, or the controller's (already tried).
        return FAST_COMPILE_FLAG in flags.split()
    os.environ[PROBED_VARIABLE] = "1"
    candidate = f"{flags} {FAST_COMPILE_FLAG}".strip()
    if not _jaxlib_takes(candidate):
        return False
    os.environ["XLA_FLAGS"] = candidate
    return True


if __name__ == "__main__":
    fast_cpu_compiles()
    print(os.environ.get("XLA_FLAGS", ""))
