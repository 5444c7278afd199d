"""Griffe extension: the reStructuredText subset of bayesnb's numpydoc docstrings, as Markdown.

bayesnb's docstrings follow numpydoc and write math and cross-references the way Sphinx
reads them (``:math:`...```, ``.. math::`` blocks, ``:class:`...```, ``:func:`...``` and
friends). mkdocstrings renders docstring text as Markdown, so before parsing, this
extension rewrites exactly that subset:

* ``:math:`x``` becomes inline arithmatex ``\\(x\\)``; a ``.. math::`` directive and its
  indented body become a ``$$ ... $$`` block (rendered by MathJax in the browser);
* bullet items continued with RST's two-space hanging indent are re-indented by two
  more spaces, so that Python-Markdown (which wants four) keeps an indented paragraph or
  math block inside its item;
* a parameter typed as a set of choices, ``kind : {"mle", "map", "mean"}``, whose
  signature has no default, is typed ``one of {...}``: numpydoc reads the first choice
  of a brace set as the default, which would be shown as one;
* ``:class:``, ``:func:``, ``:meth:``, ``:attr:``, ``:mod:``, ``:data:``, ``:exc:`` and
  ``:obj:`` targets that name a public bayesnb object become autorefs links
  (``[name][bayesnb.full.path]``), resolved like Sphinx resolves them: absolute, or
  relative to the object, its class and its module. ``mkdocs build --strict`` then fails
  on a link whose target is not rendered anywhere in the site, as Sphinx's nitpicky mode
  would. Targets that are private (a ``_name`` component) or outside bayesnb
  (``ValueError``) become code spans: they are not part of the documented API;
* types (after ``name : `` and the type lines of Returns/Yields) are shown as plain
  text, so there roles become bare names and double backticks are dropped.

A class whose docstring is assembled at import time (``__doc__ = "..." + _COMMON_PARAMS``,
as the discrete estimators share their common parameters) has no docstring for static
analysis; its runtime ``__doc__`` is used instead, so the reference shows what ``help()``
shows.

The docstrings themselves stay as they are (``help()`` and numpydoc read them unchanged).
"""

from __future__ import annotations

import re

import griffe

_ROLE = re.compile(r":(?:py:)?(class|func|meth|attr|mod|data|exc|obj):`(~?)([^`<]+?)`")
_MATH_ROLE = re.compile(r":math:`([^`]*)`")
# A numpydoc "name : type" line (Parameters, Returns, Attributes sections).
_TYPED_LINE = re.compile(r"^([ \t]*[\w*][\w*, ]* : )(.*)$", re.M)
# A parameter typed as a brace set of choices and nothing else.
_CHOICE_LINE = re.compile(r"^([ \t]*)(\w+) : (\{[^}]*\})[ \t]*$", re.M)
_UNDERLINE = re.compile(r"^[ \t]*-{3,}[ \t]*$")
_BULLET = re.compile(r"^[ \t]*[*-] \S")
_MATH_DIRECTIVE = re.compile(r"^(?P<indent>[ \t]*)\.\. math::[ \t]*(?P<first>.*)$")


def _is_private(path):
    return any(part.startswith("_") and not part.startswith("__") for part in path.split("."))


def _scopes(obj):
    """Paths a relative target may hang from, innermost first (object, class, module)."""
    scopes = []
    current = obj
    while current is not None:
        scopes.append(current.path)
        current = current.parent
    return scopes


def _lookup(collection, path):
    try:
        return collection[path]
    except (KeyError, ValueError, AttributeError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None


def _resolve(target, obj, collection):
    """The documented path of ``target`` seen from ``obj``, or None."""
    target = target.strip().rstrip("()")
    candidates = [target] if target.startswith("bayesnb") else []
    candidates += [f"{scope}.{target}" for scope in _scopes(obj)]
    for path in candidates:
        found = _lookup(collection, path)
        if found is not None:
            return path
    return None


def _math_blocks(text):
    """``.. math::`` directives (first line and indented body) as ``$$`` blocks."""
    lines = text.split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = _MATH_DIRECTIVE.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        indent = m.group("indent")
        body = [m.group("first")] if m.group("first").strip() else []
        i += 1
        block = []
        while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > len(indent)):
            block.append(lines[i])
            i += 1
        while block and not block[-1].strip():
            i -= 1  # give trailing blank lines back to the text
            block.pop()
        stripped = [line.strip() for line in body + block if line.strip()]
        if out and out[-1].strip():
            out.append("")
        out += [f"{indent}$$"] + [f"{indent}{line}" for line in stripped] + [f"{indent}$$"]
        if i < len(lines) and lines[i].strip():
            out.append("")
    return "\n".join(out)


def _list_items(text):
    """Re-indent the continuation lines of RST bullet items from two spaces to four."""
    out = []
    item = None  # indentation of the bullet whose continuation lines follow
    in_math = False
    for line in text.split("\n"):
        indent = len(line) - len(line.lstrip())
        fence = line.strip() == "$$"
        bullet = not in_math and _BULLET.match(line)
        if bullet:
            if item is not None and out and out[-1].strip():
                # Python-Markdown ends an item's indented paragraph only at a blank line.
                out.append("")
            item = indent
        elif item is not None and line.strip():
            if indent >= item + 2:
                line = "  " + line
            else:
                item = None
        if fence:
            in_math = not in_math
        out.append(line)
    return "\n".join(out)


def _choice_types(text, obj):
    """``name : {a, b}`` becomes ``name : one of {a, b}`` where ``name`` has no default."""
    try:
        parameters = obj.parameters
    except (AttributeError, TypeError):
        return text

    def retype(match):
        lead, name, choices = match.groups()
        try:
            default = parameters[name].default
        except (KeyError, TypeError):
            return match.group(0)
        return match.group(0) if default is not None else f"{lead}{name} : one of {choices}"

    return _CHOICE_LINE.sub(retype, text)


def to_markdown(text, obj=None, collection=None):
    """Rewrite the RST subset of one docstring (see the module docstring)."""

    def role(match):
        kind, short, target = match.groups()
        shown = target.strip().split(".")[-1] if short else target.strip()
        if kind in ("func", "meth") and not shown.endswith("()"):
            shown += "()"
        path = None
        if collection is not None and not _is_private(target):
            path = _resolve(target, obj, collection)
        if path is None or _is_private(path):
            return f"`{shown}`"
        return f"[`{shown}`][{path}]"

    def plain(match):
        kind, short, target = match.groups()
        return target.strip().split(".")[-1] if short else target.strip()

    def typed_line(match):
        # The type after "name : " is shown as plain text, not Markdown: no links or
        # literal markup there.
        return match.group(1) + _ROLE.sub(plain, match.group(2)).replace("``", "")

    if obj is not None:
        text = _choice_types(text, obj)
    text = _list_items(_math_blocks(text))
    text = _MATH_ROLE.sub(lambda m: f"\\({m.group(1)}\\)", text)
    text = _TYPED_LINE.sub(typed_line, text)
    text = _return_types(text, lambda t: _ROLE.sub(plain, t).replace("``", ""))
    return _ROLE.sub(role, text)


def _return_types(text, clean):
    """Apply ``clean`` to the type lines of Returns/Yields sections (shown as plain text)."""
    lines = text.split("\n")
    section, indent = None, 0
    for i, line in enumerate(lines):
        if i + 1 < len(lines) and _UNDERLINE.match(lines[i + 1]) and line.strip():
            section, indent = line.strip(), len(line) - len(line.lstrip())
            continue
        if section in ("Returns", "Yields") and line.strip() and not _UNDERLINE.match(line):
            if len(line) - len(line.lstrip()) == indent:
                lines[i] = clean(line)
    return "\n".join(lines)


def _use_runtime_docstring(cls, loader):
    runtime = griffe.dynamic_import(cls.path)
    if runtime.__doc__:
        cls.docstring = griffe.Docstring(
            runtime.__doc__,
            parent=cls,
            parser=loader.docstring_parser,
            parser_options=loader.docstring_options,
        )
    del cls.members["__doc__"]


class RstToMarkdown(griffe.Extension):
    """Rewrite every docstring once the package is loaded (all targets are known then)."""

    def on_package(self, *, pkg, loader, **kwargs):
        collection = loader.modules_collection
        seen = set()

        def walk(obj):
            if id(obj) in seen or obj.is_alias:
                return
            seen.add(id(obj))
            if obj.is_class and "__doc__" in obj.members:
                _use_runtime_docstring(obj, loader)
            if obj.docstring is not None:
                obj.docstring.value = to_markdown(obj.docstring.value, obj, collection)
            for member in obj.members.values():
                if not member.is_alias:
                    walk(member)

        walk(pkg)
