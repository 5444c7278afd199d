"""Run one example script the way the documentation shows it (used by bayesnb_docs.run).

Usage: ``python run_example.py SCRIPT FIGURE_DIR ARGV_JSON``. Loads ``SCRIPT``, calls its
``main(argv)``, and saves every matplotlib figure still open afterwards into
``FIGURE_DIR``. The exit status is the script's: ``main``'s return value (``None`` is
0), the code of a ``SystemExit``, or 1 with the traceback on stderr for an exception.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
from pathlib import Path


def main():
    script, figdir, argv = sys.argv[1], Path(sys.argv[2]), json.loads(sys.argv[3])
    os.environ.setdefault("MPLBACKEND", "Agg")
    namespace = runpy.run_path(script, run_name="__bayesnb_docs__")
    if "main" not in namespace:
        sys.exit(f"{script} has no main(argv) function (the examples/ contract)")
    sys.argv = [script] + argv
    try:
        status = namespace["main"](argv)
    except SystemExit as exc:
        status = exc.code
    sys.stdout.flush()
    if "matplotlib.pyplot" in sys.modules:
        plt = sys.modules["matplotlib.pyplot"]
        for i, num in enumerate(plt.get_fignums(), start=1):
            plt.figure(num).savefig(figdir / f"figure-{i}.png", dpi=96, bbox_inches="tight")
    if isinstance(status, str):
        sys.exit(status)
    sys.exit(int(status or 0))


if __name__ == "__main__":
    main()
