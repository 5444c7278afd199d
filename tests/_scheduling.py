"""How pytest-xdist deals the tests to its two workers (``--dist loadgroup``; see conftest.py).

Two ways of dealing were measured on a clean clone, and each wastes something:

* test by test (``--dist load``, 29-35 min): a file whose tests share one expensive
  computation (a module-scoped NUTS fixture, 40-80 s) has it computed on both workers;
* file by file (``--dist loadfile``, about 5 min more): xdist deals the files with the
  most tests first, so the few-test NUTS files come last and one worker runs them while
  the other idles.

:class:`SharedWorkScheduling` keeps each file that shares work between its tests on one
worker, deals those files first (most tests first), and then every other test on its own,
so the end of the run is made of single tests that balance the two workers. Among the
single tests, those marked ``slow`` are dealt first: collection order had put the
examples' runs (``tests/test_examples.py``, up to 36 s each) last, where one worker ran
them while the other had finished.

A file "shares work" when a fixture in it has a scope wider than the test (``module``,
``class``, ``package`` or ``session``), or a function in it is memoised
(``functools.cache`` / ``lru_cache``): read from the file's syntax tree, so a new file of
that kind is grouped without an edit here. pytest-xdist's own ``loadgroup`` would have
grouped by the ``xdist_group`` mark, but under pytest 9.2 its rewrite of the node id
(``_nodeid``) is lost (``Node.nodeid`` reads ``_id``), so the mark does nothing; this
scheduler replaces it where the option is given.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

_SHARED_SCOPES = frozenset({"module", "class", "package", "session"})
_MEMOISERS = frozenset({"cache", "lru_cache"})


def _name(node):
    """The last name of a decorator expression (``pytest.fixture(...)`` -> ``fixture``)."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def _shared_fixture(decorator):
    if not (isinstance(decorator, ast.Call) and _name(decorator) == "fixture"):
        return False
    for keyword in decorator.keywords:
        if keyword.arg == "scope":
            value = keyword.value
            # A scope computed at run time may be wide: counted as shared.
            return not isinstance(value, ast.Constant) or value.value in _SHARED_SCOPES
    return False


def source_shares_work(source):
    """Whether Python ``source`` defines a fixture wider than a test or a memoised function.

    Parameters
    ----------
    source : str

    Returns
    -------
    bool
    """
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                if _shared_fixture(decorator) or _name(decorator) in _MEMOISERS:
                    return True
    return False


@lru_cache(maxsize=None)
def _file_source(path):
    """The text of the Python file at ``path`` if it parses, else None (not Python, unreadable)."""
    path = Path(path)
    if path.suffix != ".py":
        return None
    try:
        source = path.read_text(encoding="utf-8")
        ast.parse(source)
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    return source


@lru_cache(maxsize=None)
def file_shares_work(path):
    """:func:`source_shares_work` of the file at ``path``; False for a file that is not Python or not readable."""
    source = _file_source(path)
    return source is not None and source_shares_work(source)


def scope_of(nodeid, root):
    """The unit of work of a test: its file where the file shares work, else the test itself.

    Parameters
    ----------
    nodeid : str
        pytest's node id, ``path/relative/to/root.py::test[params]``.
    root : path-like
        pytest's ``rootpath``.

    Returns
    -------
    str
    """
    file = nodeid.split("::", 1)[0]
    return file if file_shares_work(Path(root) / file) else nodeid


def _is_slow_mark(node):
    """Whether a decorator or ``pytestmark`` expression is ``pytest.mark.slow`` (or ``mark.slow``, called or not)."""
    if isinstance(node, ast.Call):
        node = node.func
    if not (isinstance(node, ast.Attribute) and node.attr == "slow"):
        return False
    owner = node.value
    return (isinstance(owner, ast.Attribute) and owner.attr == "mark") or (isinstance(owner, ast.Name) and owner.id == "mark")


def _marks_slow(value):
    """Whether a ``pytestmark = ...`` value (a mark or a list of marks) holds ``slow``."""
    items = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
    return any(_is_slow_mark(item) for item in items)


def slow_test_names(source):
    """Names of the tests that ``source`` marks ``slow``: ``"*"`` where the whole module is.

    Parameters
    ----------
    source : str

    Returns
    -------
    frozenset of str
        Test functions (and methods, by name) decorated with ``pytest.mark.slow`` or in a
        class so decorated; ``{"*"}`` when a module-level ``pytestmark`` holds it.
    """
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            if _marks_slow(node.value):
                return frozenset({"*"})
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(map(_is_slow_mark, node.decorator_list)):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            whole = any(map(_is_slow_mark, node.decorator_list))
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                        whole or any(map(_is_slow_mark, item.decorator_list))):
                    names.add(item.name)
    return frozenset(names)


@lru_cache(maxsize=None)
def _file_slow_tests(path):
    source = _file_source(path)
    return frozenset() if source is None else slow_test_names(source)


def is_slow(nodeid, root):
    """Whether the test ``nodeid`` (``file.py::[Class::]test[params]``) is marked ``slow`` in its file."""
    file, _, rest = nodeid.partition("::")
    names = _file_slow_tests(Path(root) / file)
    return "*" in names or rest.split("::")[-1].split("[", 1)[0] in names


def deal_order(units, root):
    """The units of work in the order they are dealt: files first, then slow tests, then the rest.

    Parameters
    ----------
    units : iterable of (scope, tests)
        xdist's work queue after its own ordering (files that share work, most tests
        first, then single tests in collection order).
    root : path-like
        pytest's ``rootpath``.

    Returns
    -------
    list of (scope, tests)
        The same units, stable within each of the three kinds.
    """
    def kind(unit):
        scope = unit[0]
        if "::" not in scope:
            return 0  # a file that shares work
        return 1 if is_slow(scope, root) else 2

    return sorted(units, key=kind)


def make_scheduler(config, log):
    """An xdist scheduler dealing the units of :func:`scope_of` (see the module's docstring)."""
    from xdist.scheduler import LoadScopeScheduling

    class SharedWorkScheduling(LoadScopeScheduling):
        # LoadScopeScheduling deals units of work, the largest first (``--loadscope-reorder``,
        # xdist's default): the grouped files, then single tests in collection order;
        # ``schedule`` then puts the slow single tests before the others (deal_order).
        def _split_scope(self, nodeid):
            return scope_of(nodeid, config.rootpath)

        def schedule(self):
            first = self.collection is None
            super().schedule()  # deals each worker its first unit
            if first and self.workqueue:
                ordered = deal_order(self.workqueue.items(), config.rootpath)
                self.workqueue.clear()
                self.workqueue.update(ordered)

    return SharedWorkScheduling(config, log)
