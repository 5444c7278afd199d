"""MkDocs hooks of the bayesnb site (see ``hooks:`` in mkdocs.yml).

Executed pages (markdown-exec blocks) import :mod:`bayesnb_docs` from this folder and
draw with matplotlib's non-interactive backend; both are set up once, before any page
is rendered.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def on_startup(**kwargs):
    os.environ.setdefault("MPLBACKEND", "Agg")
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
