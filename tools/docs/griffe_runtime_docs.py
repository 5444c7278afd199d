"""Griffe extension: functions whose docstring is assembled at import time get it.

bayesnb.ppl.models writes the docstrings of its per-row and statistics models from one
template per form (``fn.__doc__ = ...`` in a decorator), so that the twelve functions
share their parameter descriptions without copies. Static analysis sees no docstring
there; this extension takes the runtime ``__doc__`` of every public function that has
none, so the reference shows what ``help()`` shows. It runs before
``griffe_rst.py:RstToMarkdown`` (listed first in mkdocs.yml), which then converts the
text like any other docstring.
"""

from __future__ import annotations

import griffe


class RuntimeFunctionDocstrings(griffe.Extension):
    """Fill the docstring of each docstring-less public function from the imported object."""

    def on_package(self, *, pkg, loader, **kwargs):
        seen = set()

        def walk(obj):
            if id(obj) in seen or obj.is_alias:
                return
            seen.add(id(obj))
            if obj.is_function and obj.docstring is None and not obj.name.startswith("_"):
                try:
                    doc = griffe.dynamic_import(obj.path).__doc__
                except ImportError:
                    doc = None
                if doc:
                    obj.docstring = griffe.Docstring(
                        doc, parent=obj, parser=loader.docstring_parser, parser_options=loader.docstring_options
                    )
            for member in obj.members.values():
                if not member.is_alias:
                    walk(member)

        walk(pkg)
