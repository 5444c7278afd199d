"""The shape of the package, checked from its source with ``ast``.

* The import graph of ``bayesnb`` (every ``import`` statement, at module level or inside
  a function, except under ``if TYPE_CHECKING:``) is acyclic.
* No module outside ``bayesnb/core/families/`` switches on a family's identity: no comparison
  (``is``, ``==``, ``in``, …) against a family module, a registered ``Family`` value or a
  registered family's name, and no table keyed by them. Layers reach families through
  the protocol and the registry (``bayesnb.core.families.get``).

Both checks are tested on planted violations too, so that they cannot pass vacuously.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from bayesnb.core import families

PACKAGE = Path(__file__).resolve().parents[1] / "bayesnb"


# ----------------------------------------------------------------------------- import graph


def _modules(root):
    """``{dotted name: (path, is_package)}`` of every module under ``root``."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        out[".".join(parts)] = (path, is_pkg)
    return out


def _type_checking_nodes(tree):
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for n in ast.walk(node))
    return skip


def import_graph(root):
    """Edges ``module -> modules it imports`` inside the package at ``root``."""
    modules = _modules(root)
    top = root.name
    edges = {m: set() for m in modules}
    for name, (path, is_pkg) in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_checking_nodes(tree)
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            targets = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    package = name.split(".") if is_pkg else name.split(".")[:-1]
                    package = package[: len(package) - (node.level - 1)]
                    base = ".".join(package + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                # "from pkg import mod" names the submodule; "from mod import obj" the module.
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for target in targets:
                if target.split(".")[0] == top and target in modules and target != name:
                    edges[name].add(target)
    return edges


def find_cycle(edges):
    """One cycle of the graph as a list of nodes (first repeated at the end), or None."""
    colour = {}
    stack = []

    def visit(node):
        colour[node] = "grey"
        stack.append(node)
        for nxt in sorted(edges[node]):
            if colour.get(nxt) == "grey":
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in colour:
                found = visit(nxt)
                if found:
                    return found
        colour[node] = "black"
        stack.pop()
        return None

    for node in sorted(edges):
        if node not in colour:
            found = visit(node)
            if found:
                return found
    return None


def test_the_import_graph_is_acyclic():
    cycle = find_cycle(import_graph(PACKAGE))
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def _write(root, files):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_cycle_finder_sees_lazy_imports_and_ignores_type_checking(tmp_path):
    pkg = tmp_path / "pkg"
    _write(
        pkg,
        {
            "__init__.py": "",
            "a.py": "from . import b\n",
            "b.py": "def f():\n    from .sub import c\n",
            "sub/__init__.py": "",
            "sub/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..a import x\n",
        },
    )
    assert find_cycle(import_graph(pkg)) is None
    (pkg / "sub" / "c.py").write_text("def g():\n    from .. import a\n")
    assert find_cycle(import_graph(pkg)) == ["pkg.a", "pkg.b", "pkg.sub.c", "pkg.a"]


# ----------------------------------------------------------------------------- family switches


def _family_module_names(tree):
    """Local names bound to a particular family module or its ``family`` value."""
    bound = set()
    registered = set(families.names())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[-1] == "families":
            bound.update(a.asname or a.name for a in node.names if a.name in registered)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[-1] in registered:
            bound.update(a.asname or a.name for a in node.names if a.name == "family")
    return bound


def _is_identity(node, bound, registered):
    """Whether ``node`` denotes a family: its module, its Family value or its name."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value in registered
    if isinstance(node, ast.Name):
        return node.id in bound
    if isinstance(node, ast.Attribute):
        # ``module.family`` is the family itself; other attributes (``module.family.name``,
        # ``module.DEFAULT_KAPPA``) are values, not the family's identity.
        return node.attr == "family" and isinstance(node.value, ast.Name) and node.value.id in bound
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_identity(e, bound, registered) for e in node.elts)
    return False


def family_switches(path):
    """``[(line, source)]`` of the comparisons and tables keyed by a family in ``path``."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    bound = _family_module_names(tree)
    registered = set(families.names())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_is_identity(o, bound, registered) for o in operands):
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Dict):
            if any(k is not None and _is_identity(k, bound, registered) for k in node.keys):
                found.append((node.lineno, ast.unparse(node)[:120]))
        elif isinstance(node, ast.Match):
            for case in node.cases:
                if any(
                    isinstance(p, ast.MatchValue) and _is_identity(p.value, bound, registered)
                    for p in ast.walk(case.pattern)
                ):
                    found.append((node.lineno, ast.unparse(node.subject)))
    return found


def test_no_module_outside_the_families_switches_on_a_family():
    outside = [p for p in sorted(PACKAGE.rglob("*.py")) if "families" not in p.relative_to(PACKAGE).parts]
    assert outside
    switches = {
        str(p.relative_to(PACKAGE.parent)): hits for p in outside if (hits := family_switches(p))
    }
    assert not switches, "family switches outside bayesnb/families: " + repr(switches)


@pytest.mark.parametrize(
    "source",
    [
        "from .families import multinomial\ndef f(est):\n    return est._family is multinomial\n",
        "from .families import gaussian\ndef f(est):\n    return est._family is gaussian.family\n",
        "from .families.poisson import family as pf\ndef f(fam):\n    return fam in (pf,)\n",
        "def f(args):\n    return args.family == 'gaussian'\n",
        "def f(name):\n    return name in ('multinomial', 'bernoulli')\n",
        "TABLE = {'categorical': 1}\n",
        "from .families import bernoulli\nSPECS = {bernoulli.family: 1}\n",
        "def f(name):\n    match name:\n        case 'poisson':\n            return 1\n",
    ],
)
def test_the_switch_finder_catches_planted_switches(tmp_path, source):
    path = tmp_path / "planted.py"
    path.write_text(source)
    assert family_switches(path)


def test_the_switch_finder_allows_the_protocol(tmp_path):
    path = tmp_path / "clean.py"
    path.write_text(
        "from . import families\n"
        "def f(est, X):\n"
        "    fam = families.get(est.family_.name)\n"
        "    return fam.support == 'real', fam.log_predictive(est.posterior_, X)\n"
    )
    assert family_switches(path) == []


# ----------------------------------------------------------------------------- import cost


def test_import_bayesnb_leaves_heavy_modules_to_first_use():
    import subprocess
    import sys

    code = (
        "import sys, bayesnb\n"
        "heavy = ('sklearn.feature_selection', 'numpyro.infer', 'arviz', 'matplotlib', 'dask')\n"
        "loaded = [m for m in heavy if m in sys.modules]\n"
        "assert not loaded, loaded\n"
        "from bayesnb import BayesFactorSelector\n"
        "assert 'sklearn.feature_selection' in sys.modules\n"
        "assert BayesFactorSelector.__module__ == 'bayesnb.analysis.evidence'\n"
        "print('ok')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent, timeout=300
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
