"""MkDocs hooks of the bayesnb site (see ``hooks:`` in mkdocs.yml).

Executed pages (markdown-exec blocks) import :mod:`bayesnb_docs` from this folder and
draw with matplotlib's non-interactive backend; both are set up once, before any page
is rendered. Pages that take more than a second to render (their blocks run then) are
logged with their time, so a slow tutorial shows up in the CI log.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
log = logging.getLogger("mkdocs.hooks.bayesnb")
_started = {}


def on_startup(**kwargs):
    os.environ.setdefault("MPLBACKEND", "Agg")
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))


def on_page_markdown(markdown, page, **kwargs):
    _started[page.file.src_uri] = time.perf_counter()
    return markdown


def on_page_content(html, page, **kwargs):
    seconds = time.perf_counter() - _started.pop(page.file.src_uri, time.perf_counter())
    if seconds > 1.0:
        log.info("rendered %s in %.1f s", page.file.src_uri, seconds)
    return html
