"""MkDocs hooks of the bayesnb site (see ``hooks:`` in mkdocs.yml).

Executed pages (markdown-exec blocks) import :mod:`bayesnb_docs` from this folder and
draw with matplotlib's non-interactive backend; both are set up once, before any page
is rendered. The example scripts those pages run are started together before the first
page is rendered (``bayesnb_docs.start_runs``: one per core), so the build waits for the
longest of them rather than for their sum. Pages that take more than a second to render
(their blocks run then, or wait for their example) are logged with their time, so a slow
tutorial shows up in the CI log.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
log = logging.getLogger("mkdocs.hooks.bayesnb")
_page_started = {}
_dirty = False


def on_startup(command=None, dirty=False, **kwargs):
    global _dirty
    # `mkdocs serve --dirty` renders only the pages changed since the last build: the
    # examples of the others are not needed, so none is started ahead of its page.
    _dirty = bool(dirty)
    os.environ.setdefault("MPLBACKEND", "Agg")
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))


def on_files(files, config, **kwargs):
    import bayesnb_docs

    if _dirty:
        return files
    calls = []
    for file in files.documentation_pages():
        calls += bayesnb_docs.example_calls(Path(file.abs_src_path).read_text(encoding="utf-8"))
    started = bayesnb_docs.start_runs(calls)
    if started:
        log.info("started %d example runs in the background", started)
    return files


def on_post_build(config, **kwargs):
    import bayesnb_docs

    bayesnb_docs.stop_runs()


def on_build_error(error, **kwargs):
    import bayesnb_docs

    bayesnb_docs.stop_runs()


def on_shutdown(**kwargs):
    # Also after an interrupted build (MkDocs calls it from a finally clause).
    import bayesnb_docs

    bayesnb_docs.stop_runs()


def on_page_markdown(markdown, page, **kwargs):
    _page_started[page.file.src_uri] = time.perf_counter()
    return markdown


def on_page_content(html, page, **kwargs):
    seconds = time.perf_counter() - _page_started.pop(page.file.src_uri, time.perf_counter())
    if seconds > 1.0:
        log.info("rendered %s in %.1f s", page.file.src_uri, seconds)
    return html
